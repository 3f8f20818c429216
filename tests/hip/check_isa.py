#!/usr/bin/env python3
"""ISA and spill check of the HIP backend's code objects (no GPU needed).

The kernels come from backends/hip/hip_kernels.def (--table): which code objects
must hold each one (need column) and which must contain matrix instructions
(matrix column).  For every AMD code object: every REQUIRED kernel is present,
the MMA kernels (the f16 / bf16 GEMM and attention kernels that carry conv2d,
conv_transpose2d, linear/matmul and attention) contain v_mfma on gfx9 / CDNA or
v_wmma on gfx11 / RDNA3, and no kernel may use scratch: the compiler's resource
metadata (.private_segment_fixed_size, .vgpr_spill_count, .uses_dynamic_stack,
the numbers -Rpass-analysis=kernel-resource-usage reports) must be zero.
For NVIDIA: the PTX of the MMA kernels uses mma.sync m16n8k16, ptxas reports no
spills for any kernel, every cubin holds the REQUIRED and NVIDIA kernels; an
arch-specific target (sm_90a) also holds the SM90A* ones (Hopper GEMM and
attention), whose WGMMA kernels' PTX uses wgmma.mma_async.
Drift: a dkk_* kernel in a code object that the table does not list fails.

usage: check_isa.py --table hip_kernels.def --objdump X --readelf X [--ptxas X] TARGET:KIND:PATH ...
Exit 77 (meson: skipped) when there is nothing to check.
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys

ENTRY = re.compile(r"^DK_HIP_KERNEL\((\w+), *[^,]+, *(\w+), *(\w+), *(\w+), *.+\)\s*$")
NEEDS = {"REQUIRED", "NVIDIA", "SM90A", "SM90A_TMA", "SM90A_VT", "SM90A_VT_TMA"}
MATRIX = {"MMA", "WGMMA", "NONE"}


class Table:
    """backends/hip/hip_kernels.def: kernel -> (need, matrix)."""

    def __init__(self, path):
        self.kernels = {}
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.startswith("DK_HIP_KERNEL("):
                    continue
                m = ENTRY.match(line)
                if not m or m.group(3) not in NEEDS or m.group(4) not in MATRIX or m.group(1) in self.kernels:
                    raise SystemExit(f"{path}:{n}: malformed or repeated entry: {line.strip()}")
                self.kernels[m.group(1)] = (m.group(3), m.group(4))

    def amd(self):
        """The kernels every AMD code object holds."""
        return [k for k, (need, _) in self.kernels.items() if need == "REQUIRED"]

    def nvidia(self, target):
        """The kernels an NVIDIA cubin / PTX for target holds (sm_90a kernels: arch-specific targets only)."""
        return [k for k, (need, _) in self.kernels.items()
                if need in ("REQUIRED", "NVIDIA") or (need.startswith("SM90A") and target.endswith("a"))]

    def matrix(self, name, kind):
        return self.kernels.get(name, (None, None))[1] == kind

    def unknown(self, names):
        """dkk_* symbols of a code object that the table does not list (drift)."""
        return sorted(n for n in names if n.startswith("dkk_") and n not in self.kernels)


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


def check_amd(args, target, path, out):
    errors = []
    want = "v_mfma" if target.startswith("gfx9") else "v_wmma" if target.startswith("gfx1") else None
    meta = kernel_metadata(args.readelf, path)
    funcs = function_mnemonics(args.objdump, path)
    for k in args.table.amd():
        if k not in meta:
            errors.append(f"{target}: kernel {k} missing")
    for k in args.table.unknown(meta):
        errors.append(f"{target}: kernel {k} is not in {args.table_path}")
    for name, md in sorted(meta.items()):
        scratch = int(md.get("private_segment_fixed_size", "0"))
        vspill = int(md.get("vgpr_spill_count", "0"))
        dyn = md.get("uses_dynamic_stack", "false")
        if scratch or vspill or dyn != "false":
            errors.append(f"{target}: {name} uses scratch (private {scratch} B, {vspill} VGPR spills, dynamic stack {dyn})")
        if args.table.matrix(name, "MMA") and want:
            ops = funcs.get(name, set())
            mat = sorted(o for o in ops if o.startswith(want))
            if not mat:
                errors.append(f"{target}: {name} has no {want}* instruction")
            elif args.verbose:
                out.append(f"  {target}: {name}: {', '.join(mat)}; vgpr {md.get('vgpr_count')}, scratch 0")
    n_mat = sum(1 for n in meta if args.table.matrix(n, "MMA"))
    out.append(f"{'FAIL' if errors else 'ok  '} {target}: {len(meta)} kernels, scratch-free check, "
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


def check_ptx(args, target, path, out):
    errors = []
    with open(path, encoding="utf-8") as f:
        entries = ptx_entries(f.read())
    for k in args.table.nvidia(target):
        if k not in entries:
            errors.append(f"{target} ptx: kernel {k} missing")
        elif args.table.matrix(k, "WGMMA") and not any("wgmma.mma_async" in l for l in entries[k]):
            errors.append(f"{target} ptx: {k} has no wgmma.mma_async")
    for k in args.table.unknown(entries):
        errors.append(f"{target} ptx: kernel {k} is not in {args.table_path}")
    for name, body in entries.items():
        if args.table.matrix(name, "MMA") and not any("mma.sync.aligned.m16n8k16" in l for l in body):
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
    wg = ", wgmma in the WGMMA kernels" if target.endswith("a") else ""
    out.append(f"{'FAIL' if errors else 'ok  '} {target} ptx: {len(entries)} kernels, mma.sync in the f16/bf16 gemm and "
               f"attention kernels{wg}, {spills}")
    return errors


def check_cubin(args, target, path, out):
    with open(path, "rb") as f:
        data = f.read()
    errors = []
    if data[:4] != b"\x7fELF":
        errors.append(f"{target}: cubin is not an ELF file")
    kernels = args.table.nvidia(target)
    for k in kernels:
        if k.encode() + b"\0" not in data:
            errors.append(f"{target}: cubin lacks kernel {k}")
    # symbol and section names (".text.dkk_x", ".nv.info.dkk_x"): NUL-terminated, after a NUL or a dot
    names = {m.decode() for m in re.findall(rb"(?<=[\0.])(dkk_\w+)(?=\0)", data)}
    for k in args.table.unknown(names):
        errors.append(f"{target}: cubin kernel {k} is not in {args.table_path}")
    out.append(f"{'FAIL' if errors else 'ok  '} {target} cubin: {len(data)} bytes, all {len(kernels)} kernels present")
    return errors


def check_image(args, spec):
    """One TARGET:KIND:PATH: (report lines, errors)."""
    target, kind, path = spec.split(":", 2)
    out = []
    if kind == "co":
        if not (args.objdump and args.readelf):
            return [f"SKIP {target}: llvm-objdump / llvm-readelf not found"], []
        return out, check_amd(args, target, path, out)
    if kind == "ptx":
        return out, check_ptx(args, target, path, out)
    if kind == "cubin":
        return out, check_cubin(args, target, path, out)
    return out, [f"{spec}: unknown kind {kind}"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--objdump")
    ap.add_argument("--readelf")
    ap.add_argument("--ptxas")
    ap.add_argument("--table", dest="table_path", required=True, help="backends/hip/hip_kernels.def")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("images", nargs="*")
    args = ap.parse_args()
    args.table = Table(args.table_path)
    if not args.images:
        print("SKIP: no HIP code objects were built (no hipcc/clang/nvcc toolchain found)")
        return 77
    # One code object per worker, the PTX files first (ptxas takes 30-40 s on
    # each, an AMD code object's objdump a few seconds); the report keeps the
    # command line's order.
    slow_first = sorted(args.images, key=lambda spec: spec.split(":", 2)[1] != "ptx")
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as ex:
        done = {spec: ex.submit(check_image, args, spec) for spec in slow_first}
        results = [done[spec].result() for spec in args.images]
    errors = []
    for lines, errs in results:
        for line in lines:
            print(line)
        errors += errs
    for e in errors:
        print("error:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
