#!/usr/bin/env python3
"""Checks shaders/coopmat_khr.py on the build's NV cooperative-matrix modules:
the KHR modules it wrote must carry no NV instruction, give every matrix type
the use its multiply-adds need, turn each load/store's column-major flag into
a layout constant, and (bf16) re-type exactly the A and B matrices.  Then bad
input: a module whose A and B share one type, a truncated module.  (No SPIR-V
validator in Debian 12 knows the KHR extension; the H100 runs the modules.)

usage: test_coopmat_khr.py COOPMAT_KHR_PY NV.spv KHR.spv KHR_BF16.spv [...]
"""
import importlib.util
import struct
import sys


def load_words(path):
    with open(path, "rb") as f:
        data = f.read()
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def index(insts):
    consts, types, floats = {}, {}, {}
    for op, ops in insts:
        if op == 43:
            consts[ops[1]] = ops[2]
        elif op == 22:
            floats[ops[0]] = ops[1:]
    return consts, floats


def check_pair(ck, nv_words, khr_words, bf16, name):
    _, nv = ck.parse(nv_words)
    _, khr = ck.parse(khr_words)
    fails = []
    ops_nv = [op for op, _ in nv]
    ops_khr = [op for op, _ in khr]
    if any(5358 <= op <= 5362 for op in ops_khr):
        fails.append("an NV cooperative-matrix instruction is left")
    for nv_op, khr_op in ((5358, 4456), (5359, 4457), (5360, 4458), (5361, 4459), (5362, 4460)):
        if ops_nv.count(nv_op) != ops_khr.count(khr_op):
            fails.append(f"opcode {nv_op}: {ops_nv.count(nv_op)} NV vs {ops_khr.count(khr_op)} KHR")
    caps = {ops[0] for op, ops in khr if op == 17}
    exts = {ck.decode_string(ops) for op, ops in khr if op == 10}
    if 6022 not in caps or 5357 in caps or "SPV_KHR_cooperative_matrix" not in exts:
        fails.append("capability/extension not switched to KHR")
    if bf16 != ({5116, 5118} <= caps and "SPV_KHR_bfloat16" in exts):
        fails.append("bf16 capabilities/extension wrong")
    consts, floats = index(khr)
    mtypes = {ops[0]: ops[1:] for op, ops in khr if op == 4456}
    values = {}
    for op, ops in khr:
        if op in (61, 4457, 4459, 55, 245):
            values[ops[1]] = ops[0]
    for op, ops in khr:
        if op == 4459:
            for v, want in ((ops[2], 0), (ops[3], 1), (ops[4], 2)):
                t = values.get(v)
                if t not in mtypes or consts.get(mtypes[t][4]) != want:
                    fails.append(f"multiply-add operand %{v}: type use is not {want}")
            if consts.get(mtypes[ops[0]][4]) != 2:
                fails.append("multiply-add result is not an accumulator")
        elif op == 4457 and consts.get(ops[3]) not in (0, 1):
            fails.append(f"load %{ops[1]}: layout operand is not the constant 0 or 1")
        elif op == 4458 and consts.get(ops[2]) not in (0, 1):
            fails.append("store: layout operand is not the constant 0 or 1")
    for t, (comp, _scope, _r, _c, use) in mtypes.items():
        enc = floats.get(comp)
        if consts.get(use) == 2:
            ok = enc == [32]
        else:
            ok = enc == ([16, 0] if bf16 else [16])
        if not ok:
            fails.append(f"matrix type %{t} (use {consts.get(use)}) has component {enc}")
    print(f"{name}: {'ok' if not fails else 'FAILED'} ({len(mtypes)} matrix types, "
          f"{ops_khr.count(4459)} multiply-adds, {ops_khr.count(4457)} loads)")
    for f in fails:
        print("   ", f)
    return not fails


def truncated(words):
    """The module cut inside its first multi-word instruction past the middle."""
    i = 5
    while i < len(words):
        n = words[i] >> 16
        if i > len(words) // 2 and n >= 3:
            return words[:i + 1]
        i += max(n, 1)
    raise SystemExit("no instruction to cut")


def expect_error(ck, words, what):
    try:
        ck.rewrite(words)
    except ck.RewriteError as e:
        print(f"{what}: rejected ({e})")
        return True
    print(f"{what}: FAILED (accepted)")
    return False


def main():
    spec = importlib.util.spec_from_file_location("coopmat_khr", sys.argv[1])
    ck = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ck)
    ok = True
    args = sys.argv[2:]
    if len(args) % 3 or not args:
        sys.exit("usage: test_coopmat_khr.py COOPMAT_KHR_PY NV.spv KHR.spv KHR_BF16.spv [...]")
    for i in range(0, len(args), 3):
        nv = load_words(args[i])
        ok &= check_pair(ck, nv, load_words(args[i + 1]), False, args[i + 1])
        ok &= check_pair(ck, nv, load_words(args[i + 2]), True, args[i + 2])
        # The rewrite is a function of the input: the build's output again.
        ok &= ck.rewrite(nv) == load_words(args[i + 1]) and ck.rewrite(nv, True) == load_words(args[i + 2])
        # A and B sharing one type: every reference to the B type becomes the A type.
        header, insts = ck.parse(nv)
        mats = [ops for op, ops in insts if op == 5358 and ops[1] != next(
            o[0] for p, o in insts if p == 22 and o[1] == 32)]
        if len(mats) == 2:
            a, b = mats[0][0], mats[1][0]
            merged = [[op, [a if (w == b and not (op == 5358 and j == 0)) else w for j, w in enumerate(ops)]]
                      for op, ops in insts if not (op == 5358 and ops[0] == b)]
            ok &= expect_error(ck, ck.emit(header, merged), "A and B of one type")
        else:
            print("expected two 16-bit matrix types in", args[i])
            ok = False
        ok &= expect_error(ck, truncated(nv), "truncated module")
        ok &= expect_error(ck, nv[:3], "header only")
    print("coopmat_khr:", "all checks passed" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
