#!/usr/bin/env python3
"""Probe helper: turn every row-major OpCooperativeMatrixLoadKHR of a module into
tensor-addressed loads (SPV_NV_tensor_addressing + SPV_NV_cooperative_matrix2):
layout dims (matrix rows, stride), slice (0, rows, 0, cols) from the given pointer."""
import os, struct, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shaders"))
from coopmat_khr import parse, emit, string_words
KHR_TYPE, KHR_LOAD = 4456, 4457
OP_TYPE_INT, OP_CONSTANT, OP_FUNCTION, OP_CAPABILITY, OP_EXTENSION, OP_UNDEF = 21, 43, 54, 17, 10, 1
T_LAYOUT, CREATE, SETDIM, SLICE, LOADT = 5370, 5372, 5373, 5375, 5367
CAP_TA, CAP_CMTA = 5439, 5433
data = open(sys.argv[1], "rb").read()
header, insts = parse(list(struct.unpack(f"<{len(data)//4}I", data)))
bound = header[3]
def nid():
    global bound
    bound += 1
    return bound - 1
types = {ops[0]: ops[1:] for op, ops in insts if op == KHR_TYPE}
uint_t = next(ops[0] for op, ops in insts if op == OP_TYPE_INT and ops[1:] == [32, 0])
c0, c2, tl = nid(), nid(), nid()
undef = {t: nid() for t in types}
consts = {ops[1]: ops[2] for op, ops in insts if op == OP_CONSTANT and ops[0] == uint_t}
out, first_fn, n = [], True, 0
for op, ops in insts:
    if op == OP_FUNCTION and first_fn:
        first_fn = False
        out += [[OP_CONSTANT, [uint_t, c0, 0]], [OP_CONSTANT, [uint_t, c2, 2]], [T_LAYOUT, [tl, c2, c0]]]
        out += [[OP_UNDEF, [t, u]] for t, u in undef.items()]
    if op == OP_CAPABILITY and ops[0] == 6022:
        out.append([op, ops]); out += [[OP_CAPABILITY, [CAP_TA]], [OP_CAPABILITY, [CAP_CMTA]]]; continue
    if op == OP_EXTENSION and struct.pack(f"<{len(ops)}I", *ops).startswith(b"SPV_KHR_cooperative_matrix"):
        out.append([op, ops])
        out += [[OP_EXTENSION, string_words("SPV_NV_tensor_addressing")], [OP_EXTENSION, string_words("SPV_NV_cooperative_matrix2")]]
        continue
    if op == KHR_LOAD:
        rtype, res, ptr, layout, stride = ops[:5]
        assert consts.get(layout) == 0, "row-major loads only"
        comp, scope, rows, cols, use = types[rtype]
        a, b, c = nid(), nid(), nid()
        out += [[CREATE, [tl, a]], [SETDIM, [tl, b, a, rows, stride]], [SLICE, [tl, c, b, c0, rows, c0, cols]],
                [LOADT, [rtype, res, ptr, undef[rtype], c, 0, 0]]]
        n += 1
        continue
    out.append([op, ops])
header[3] = bound
w = emit(header, out)
open(sys.argv[2], "wb").write(struct.pack(f"<{len(w)}I", *w))
print(f"{n} loads tensor-addressed")
