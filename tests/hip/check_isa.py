#!/usr/bin/env python3
"""ISA and spill check of the HIP backend's code objects (no GPU needed).

For every AMD code object: the kernels that carry conv2d, conv_transpose2d
(both run dkk_gemm_*), linear/matmul (dkk_gemm_*) and attention (dkk_attention_*, dkk_attnf_*)
must contain matrix instructions in f16 and bf16 (v_mfma on gfx9 / CDNA, v_wmma
on gfx11 / RDNA3), and no kernel may use scratch: the compiler's resource
metadata (.private_segment_fixed_size, .vgpr_spill_count, .uses_dynamic_stack,
the numbers -Rpass-analysis=kernel-resource-usage reports) must be zero.
For NVIDIA: the PTX must use mma.sync m16n8k16 in the same kernels, ptxas must
report no spills for every kernel, and every cubin must hold every kernel; an
arch-specific target (sm_90a) must also hold the Hopper GEMM (dkk_gemmw_*), whose
PTX must use wgmma.mma_async.

usage: check_isa.py --objdump X --readelf X [--ptxas X] TARGET:KIND:PATH ...
Exit 77 (meson: skipped) when there is nothing to check.
"""
import argparse
import re
import subprocess
import sys

MATRIX_KERNELS = re.compile(r"^dkk_(gemm|gemmf|attention|attnf|attnr)_(f16|bf16)(_d\d+)?$")
ALL_KERNELS = ["dkk_gemm_f32", "dkk_gemm_f16", "dkk_gemm_bf16", "dkk_gemmf_f16", "dkk_gemmf_bf16", "dkk_elementwise", "dkk_upsample_vec", "dkk_transpose16", "dkk_transpose_cvt",
               "dkk_gn_partial",
               "dkk_gn_final", "dkk_gn_apply", "dkk_layer_norm"] + [f"dkk_attention_{t}_d{d}" for t in ("f32", "f16", "bf16") for d in (64, 128, 256, 512)] \
    + [f"dkk_attnf_{t}_d{d}" for t in ("f16", "bf16") for d in (64, 128, 256, 512)] \
    + [f"dkk_attnr_{t}_d{d}" for t in ("f16", "bf16") for d in (64, 128)] \
    + [f"dkk_attn_combine_{t}" for t in ("f16", "bf16")] \
    + [f"dkk_narrow_{t}_c{c}_{m}" for t in ("f32", "f16", "bf16") for c in (4, 8) for m in "sv"]
WGMMA_KERNELS = ["dkk_gemmw_f16", "dkk_gemmw_bf16", "dkk_gemmw4_f16", "dkk_gemmw4_bf16",
                 "dkk_gemmwt_f16", "dkk_gemmwt_bf16", "dkk_gemmwt4_f16", "dkk_gemmwt4_bf16",
                 "dkk_attnw_f16_d512", "dkk_attnw_bf16_d512",
                 "dkk_attns_f16_d64", "dkk_attns_bf16_d64", "dkk_attns_f16_d128", "dkk_attns_bf16_d128"]  # sm_90a only
SM90A_KERNELS = WGMMA_KERNELS + ["dkk_attn_vt"]


def nvidia_kernels(target):
    return ALL_KERNELS + (SM90A_KERNELS if target.endswith("a") else [])


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def kernel_metadata(readelf, path):
    kernels, cur = {}, None
    for line in run([readelf, "--notes", path]).splitlines():
        if re.match(r"^  - \.", line):  # a new entry of amdhsa.kernels (args are deeper)
            cur = {}
        m = re.match(r"\s*(?:- )?\.(\w+):\s*(\S+)", line)
        if not m:
            continue
        key, val = m.groups()
        if cur is None:
            continue
        cur[key] = val
        if key == "name":
            kernels[val] = cur
    return kernels


def function_mnemonics(objdump, path):
    funcs, cur = {}, None
    for line in run([objdump, "-d", "--no-show-raw-insn", path]).splitlines():
        m = re.match(r"^[0-9a-f]+ <([^>]+)>:", line)
        if m:
            cur = funcs.setdefault(m.group(1), set())
            continue
        if cur is not None:
            m = re.match(r"^\s+(v_\w+|s_\w+|ds_\w+|global_\w+|buffer_\w+|scratch_\w+|flat_\w+)", line)
            if m:
                cur.add(m.group(1))
    return funcs


def check_amd(args, target, path):
    errors = []
    want = "v_mfma" if target.startswith("gfx9") else "v_wmma" if target.startswith("gfx1") else None
    meta = kernel_metadata(args.readelf, path)
    funcs = function_mnemonics(args.objdump, path)
    for k in ALL_KERNELS:
        if k not in meta:
            errors.append(f"{target}: kernel {k} missing")
    for name, md in sorted(meta.items()):
        scratch = int(md.get("private_segment_fixed_size", "0"))
        vspill = int(md.get("vgpr_spill_count", "0"))
        dyn = md.get("uses_dynamic_stack", "false")
        if scratch or vspill or dyn != "false":
            errors.append(f"{target}: {name} uses scratch (private {scratch} B, {vspill} VGPR spills, dynamic stack {dyn})")
        if MATRIX_KERNELS.match(name) and want:
            ops = funcs.get(name, set())
            mat = sorted(o for o in ops if o.startswith(want))
            if not mat:
                errors.append(f"{target}: {name} has no {want}* instruction")
            elif args.verbose:
                print(f"  {target}: {name}: {', '.join(mat)}; vgpr {md.get('vgpr_count')}, scratch 0")
    n_mat = sum(1 for n in meta if MATRIX_KERNELS.match(n))
    print(f"{'FAIL' if errors else 'ok  '} {target}: {len(meta)} kernels, scratch-free check, "
          f"{n_mat} matrix kernels with {want}")
    return errors


def ptx_entries(text):
    entries, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^\.visible \.entry (\w+)\(", line)
        if m:
            cur = entries.setdefault(m.group(1), [])
            continue
        if cur is not None:
            cur.append(line)
    return entries


def check_ptx(args, target, path):
    errors = []
    with open(path, encoding="utf-8") as f:
        entries = ptx_entries(f.read())
    for k in nvidia_kernels(target):
        if k not in entries:
            errors.append(f"{target} ptx: kernel {k} missing")
        elif k in WGMMA_KERNELS and not any("wgmma.mma_async" in l for l in entries[k]):
            errors.append(f"{target} ptx: {k} has no wgmma.mma_async")
    for name, body in entries.items():
        if MATRIX_KERNELS.match(name) and not any("mma.sync.aligned.m16n8k16" in l for l in body):
            errors.append(f"{target} ptx: {name} has no mma.sync.aligned.m16n8k16")
    spills = "not checked (no ptxas)"
    if args.ptxas:
        res = subprocess.run([args.ptxas, "-v", f"-arch={target}", path, "-o", "/dev/null"], capture_output=True,
                             text=True)
        if res.returncode:
            errors.append(f"{target}: ptxas failed: {res.stderr.strip()[:500]}")
        else:
            bad = [l for l in res.stderr.splitlines() if "spill" in l and not re.search(r"\b0 bytes spill stores, 0 bytes spill loads", l)]
            frames = [l for l in res.stderr.splitlines() if re.search(r"[1-9]\d* bytes stack frame", l)]
            if bad or frames:
                errors.append(f"{target}: ptxas reports spills / stack: {(bad + frames)[:3]}")
            # C7520: wgmma issued on a path ptxas cannot prove uniform gets serialized
            # (printed as "ptxas info"; serialized wgmma makes a pipelined kernel much slower)
            serial = [l for l in res.stderr.splitlines() if "C7520" in l or "are serialized" in l]
            if serial:
                errors.append(f"{target}: ptxas serializes wgmma: {serial[:2]}")
            spills = "ptxas: no spills, no stack, no serialized wgmma"
    wg = ", wgmma in dkk_gemmw*/dkk_attnw*/dkk_attns*" if target.endswith("a") else ""
    print(f"{'FAIL' if errors else 'ok  '} {target} ptx: {len(entries)} kernels, mma.sync in the f16/bf16 gemm and "
          f"attention kernels{wg}, {spills}")
    return errors


def check_cubin(target, path):
    with open(path, "rb") as f:
        data = f.read()
    errors = []
    if data[:4] != b"\x7fELF":
        errors.append(f"{target}: cubin is not an ELF file")
    kernels = nvidia_kernels(target)
    for k in kernels:
        if k.encode() + b"\0" not in data:
            errors.append(f"{target}: cubin lacks kernel {k}")
    print(f"{'FAIL' if errors else 'ok  '} {target} cubin: {len(data)} bytes, all {len(kernels)} kernels present")
    return errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--objdump")
    ap.add_argument("--readelf")
    ap.add_argument("--ptxas")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("images", nargs="*")
    args = ap.parse_args()
    if not args.images:
        print("SKIP: no HIP code objects were built (no hipcc/clang/nvcc toolchain found)")
        return 77
    errors = []
    for spec in args.images:
        target, kind, path = spec.split(":", 2)
        if kind == "co":
            if not (args.objdump and args.readelf):
                print(f"SKIP {target}: llvm-objdump / llvm-readelf not found")
                continue
            errors += check_amd(args, target, path)
        elif kind == "ptx":
            errors += check_ptx(args, target, path)
        elif kind == "cubin":
            errors += check_cubin(target, path)
    for e in errors:
        print("error:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
