#!/usr/bin/env python3
"""Rewrite a SPIR-V module from SPV_NV_cooperative_matrix to SPV_KHR_cooperative_matrix,
optionally with bf16 (SPV_KHR_bfloat16) A and B matrices.

Why: Debian 12's glslang 12 compiles GL_NV_cooperative_matrix only.  RADV
(RDNA3) implements only the KHR extension, and bf16 tensor-core math needs the
KHR types plus SPV_KHR_bfloat16, which no Debian glslang can emit.  The two
extensions describe the same operations; this script maps one onto the other:

  OpTypeCooperativeMatrixNV  T scope R C      -> OpTypeCooperativeMatrixKHR T scope R C use
  OpCooperativeMatrixLoadNV  ptr stride cm ma -> OpCooperativeMatrixLoadKHR ptr layout stride ma
  OpCooperativeMatrixStoreNV ptr obj stride cm ma -> OpCooperativeMatrixStoreKHR ptr obj layout stride ma
  OpCooperativeMatrixMulAddNV / LengthNV      -> the KHR opcodes, same operands
  capability, extension                       -> the KHR ones

KHR matrix types carry a use (A, B or accumulator) that NV types lack.  The use
of each type is read from the multiply-adds: the type of every A operand is
MatrixA, of every B operand MatrixB, of C and the result Accumulator; a type
seen in two roles is an error (the shaders give B matrices their own type by
declaring their row count through a specialization constant).  A float32
matrix type outside every multiply-add is an accumulator.

With --bf16, the A and B types' 16-bit float component becomes a bf16 type
(OpTypeFloat 16 BFloat16KHR).  The shaders stage A and B as raw 16-byte
vectors, so the same bits are then read as bf16; everything else in the module
(the epilogue's conversions follow the DT specialization constant) is
unchanged.

usage: coopmat_khr.py [--bf16] IN.spv OUT.spv
"""
import argparse
import struct
import sys

MAGIC = 0x07230203
OP_EXTENSION, OP_CAPABILITY = 10, 17
OP_TYPE_INT, OP_TYPE_FLOAT = 21, 22
OP_CONSTANT_TRUE, OP_CONSTANT_FALSE, OP_CONSTANT = 41, 42, 43
OP_SPEC_CONSTANT_TRUE, OP_SPEC_CONSTANT_FALSE = 48, 49
OP_CONSTANT_COMPOSITE, OP_COMPOSITE_CONSTRUCT = 44, 80
NV_TYPE, NV_LOAD, NV_STORE, NV_MULADD, NV_LENGTH = 5358, 5359, 5360, 5361, 5362
KHR_TYPE, KHR_LOAD, KHR_STORE, KHR_MULADD, KHR_LENGTH = 4456, 4457, 4458, 4459, 4460
CAP_COOPMAT_NV, CAP_COOPMAT_KHR = 5357, 6022
CAP_BF16_TYPE, CAP_BF16_COOPMAT = 5116, 5118
FP_ENCODING_BF16 = 0
USE_A, USE_B, USE_ACC = 0, 1, 2
LAYOUT_ROW, LAYOUT_COL = 0, 1
# Opcodes whose first two operands are (result type, result id): enough to
# know the type of every value a multiply-add can consume in these shaders.
TYPED_RESULT_OPS = {
    55,   # OpFunctionParameter
    57,   # OpFunctionCall
    61,   # OpLoad
    80,   # OpCompositeConstruct
    81,   # OpCompositeExtract
    82,   # OpCompositeInsert
    83,   # OpCopyObject
    115,  # OpFConvert
    127, 129, 131, 133, 136,  # OpFNegate OpFAdd OpFSub OpFMul OpFDiv
    143,  # OpMatrixTimesScalar
    169,  # OpSelect
    245,  # OpPhi
    NV_LOAD, NV_MULADD,
}


class RewriteError(Exception):
    pass


def string_words(s):
    b = s.encode() + b"\0"
    b += b"\0" * (-len(b) % 4)
    return list(struct.unpack(f"<{len(b) // 4}I", b))


def decode_string(words):
    b = struct.pack(f"<{len(words)}I", *words)
    return b[:b.index(b"\0")].decode()


def parse(words):
    if len(words) < 5 or words[0] != MAGIC:
        raise RewriteError("not a little-endian SPIR-V module")
    insts, i = [], 5
    while i < len(words):
        n, op = words[i] >> 16, words[i] & 0xFFFF
        if n == 0 or i + n > len(words):
            raise RewriteError(f"truncated instruction at word {i}")
        insts.append([op, list(words[i + 1:i + n])])
        i += n
    return list(words[:5]), insts


def emit(header, insts):
    out = list(header)
    for op, ops in insts:
        out.append(((len(ops) + 1) << 16) | op)
        out += ops
    return out


def rewrite(words, bf16=False):
    header, insts = parse(words)
    bound = header[3]

    def new_id():
        nonlocal bound
        bound += 1
        return bound - 1

    value_type, consts, bools = {}, {}, {}
    float_types, int_types, nv_types = {}, {}, {}
    for op, ops in insts:
        if op in TYPED_RESULT_OPS:
            value_type[ops[1]] = ops[0]
        elif op == OP_TYPE_FLOAT:
            float_types[ops[0]] = ops[1:]
        elif op == OP_TYPE_INT:
            int_types[ops[0]] = ops[1:]
        elif op == OP_CONSTANT:
            consts[ops[1]] = (ops[0], ops[2])
        elif op in (OP_CONSTANT_TRUE, OP_CONSTANT_FALSE):
            bools[ops[1]] = int(op == OP_CONSTANT_TRUE)
        elif op in (OP_SPEC_CONSTANT_TRUE, OP_SPEC_CONSTANT_FALSE):
            raise RewriteError("a matrix layout given by a specialization constant is not supported")
        elif op == NV_TYPE:
            nv_types[ops[0]] = ops[1:]
    if not nv_types:
        raise RewriteError("the module has no NV cooperative-matrix type")

    # The use of each matrix type, from the multiply-adds.
    use = {}

    def assign(t, u, what):
        if t not in nv_types:
            raise RewriteError(f"{what} operand %{t} of a multiply-add is not a cooperative matrix")
        if use.setdefault(t, u) != u:
            raise RewriteError(f"cooperative-matrix type %{t} is used both as {use[t]} and {u}: "
                               "give the shader's B matrices a type of their own")

    for op, ops in insts:
        if op == NV_MULADD:
            rtype, _, a, b, c = ops[:5]
            for v, name in ((a, "A"), (b, "B"), (c, "C")):
                if v not in value_type:
                    raise RewriteError(f"cannot tell the type of multiply-add operand {name} (%{v})")
            assign(value_type[a], USE_A, "A")
            assign(value_type[b], USE_B, "B")
            assign(value_type[c], USE_ACC, "C")
            assign(rtype, USE_ACC, "result")
    for t, (comp, _scope, _r, _c) in nv_types.items():
        if t not in use:
            if float_types.get(comp, [0])[0] != 32:
                raise RewriteError(f"cooperative-matrix type %{t} is in no multiply-add and not float32")
            use[t] = USE_ACC

    # 32-bit integer constants for the uses and layouts: existing ones where the
    # module has them, else new ones of the scope constant's type, inserted
    # right after that constant (before every matrix type).
    scope_id = next(iter(nv_types.values()))[1]
    if scope_id not in consts:
        raise RewriteError("the matrix scope is not a plain constant")
    int_type = consts[scope_id][0]
    wanted, added = {}, []
    for v in (0, 1, 2):
        for cid, (ty, val) in consts.items():
            if ty == int_type and val == v:
                wanted[v] = cid
                break
        else:
            wanted[v] = new_id()
            added.append([OP_CONSTANT, [int_type, wanted[v], v]])

    bf16_id = None
    if bf16:
        halves = [t for t, ops in float_types.items() if ops == [16]]
        if len(halves) != 1:
            raise RewriteError("--bf16: expected exactly one 16-bit float type")
        half = halves[0]
        bf16_id = new_id()
        ab = {t for t, u in use.items() if u != USE_ACC}
        for t in ab:
            if nv_types[t][0] != half:
                raise RewriteError(f"--bf16: A/B matrix type %{t} is not a 16-bit float matrix")
        for op, ops in insts:
            if op in (OP_CONSTANT_COMPOSITE, OP_COMPOSITE_CONSTRUCT) and ops[0] in ab:
                raise RewriteError("--bf16: an A/B matrix is built from f16 scalars")

    def layout_const(cm_id, what):
        if cm_id not in bools:
            raise RewriteError(f"{what}: the column-major operand is not a boolean constant")
        return wanted[LAYOUT_COL if bools[cm_id] else LAYOUT_ROW]

    out, saw_cap, saw_ext = [], False, False
    for op, ops in insts:
        if op == OP_CAPABILITY and ops[0] == CAP_COOPMAT_NV:
            out.append([OP_CAPABILITY, [CAP_COOPMAT_KHR]])
            if bf16:
                out.append([OP_CAPABILITY, [CAP_BF16_TYPE]])
                out.append([OP_CAPABILITY, [CAP_BF16_COOPMAT]])
            saw_cap = True
        elif op == OP_EXTENSION and decode_string(ops) == "SPV_NV_cooperative_matrix":
            out.append([OP_EXTENSION, string_words("SPV_KHR_cooperative_matrix")])
            if bf16:
                out.append([OP_EXTENSION, string_words("SPV_KHR_bfloat16")])
            saw_ext = True
        elif op == OP_CONSTANT and ops[1] == scope_id:
            out.append([op, ops])
            out += added
        elif op == OP_TYPE_FLOAT and bf16 and ops[0] == half:
            out.append([op, ops])
            out.append([OP_TYPE_FLOAT, [bf16_id, 16, FP_ENCODING_BF16]])
        elif op == NV_TYPE:
            t, comp, scope, rows, cols = ops
            if bf16 and use[t] != USE_ACC:
                comp = bf16_id
            out.append([KHR_TYPE, [t, comp, scope, rows, cols, wanted[use[t]]]])
        elif op == NV_LOAD:
            rtype, res, ptr, stride, cm = ops[:5]
            out.append([KHR_LOAD, [rtype, res, ptr, layout_const(cm, "load"), stride] + ops[5:]])
        elif op == NV_STORE:
            ptr, obj, stride, cm = ops[:4]
            out.append([KHR_STORE, [ptr, obj, layout_const(cm, "store"), stride] + ops[4:]])
        elif op == NV_MULADD:
            out.append([KHR_MULADD, ops])
        elif op == NV_LENGTH:
            out.append([KHR_LENGTH, ops])
        else:
            out.append([op, ops])
    if not saw_cap or not saw_ext:
        raise RewriteError("the module does not declare the NV cooperative-matrix capability and extension")
    header[3] = bound
    return emit(header, out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bf16", action="store_true", help="A and B matrices of bf16 (SPV_KHR_bfloat16)")
    ap.add_argument("input")
    ap.add_argument("output")
    args = ap.parse_args()
    with open(args.input, "rb") as f:
        data = f.read()
    if len(data) % 4:
        sys.exit(f"coopmat_khr: {args.input}: size is not a multiple of 4")
    try:
        words = rewrite(list(struct.unpack(f"<{len(data) // 4}I", data)), args.bf16)
    except RewriteError as e:
        sys.exit(f"coopmat_khr: {args.input}: {e}")
    with open(args.output, "wb") as f:
        f.write(struct.pack(f"<{len(words)}I", *words))


if __name__ == "__main__":
    main()
