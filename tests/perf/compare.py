#!/usr/bin/env python3
"""Side by side: dk_bench (each backend given) and PyTorch, same specs, same run.

    compare.py --bench BUILD/tests/perf/dk_bench --suite h100 --backend vulkan,hip
               --dtype f16,bf16 --layout nchw,nhwc [--device cuda] [--compile] [--out table.md]

Prints a markdown table: per spec and dtype, difkern's time per backend and
layout next to PyTorch's best layout, with the ratio torch_ms / difkern_ms
(> 1: difkern faster) and difkern's TFLOP/s or GB/s; with --compile also
torch.compile's best layout and its ratio.  (conv3d's nchw / nhwc are NCDHW /
NDHWC: PyTorch contiguous / channels_last_3d.)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import shapes  # noqa: E402


def run(cmd):
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    sys.stderr.write(r.stdout)
    return r.returncode


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--suite", default="cpu")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--dtype", default="f32")
    ap.add_argument("--layout", default="nchw,nhwc")
    ap.add_argument("--device", default=None, help="torch device (default: cuda if present)")
    ap.add_argument("--iters", default="10")
    ap.add_argument("--torch-python", default="python3")
    ap.add_argument("--op", help="only these ops of the suite (comma-separated)")
    ap.add_argument("--compile", action="store_true", help="also time torch.compile (default mode)")
    ap.add_argument("--out")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    suite_file = os.path.join(tmp, "suite.txt")
    suite = subprocess.run([a.bench, "--list", "--suite", a.suite], stdout=subprocess.PIPE,
                           text=True, check=True).stdout.splitlines()
    if a.op:
        suite = [line for line in suite if line.split()[0] in a.op.split(",")]
    with open(suite_file, "w") as f:
        f.write("".join(line + "\n" for line in suite))
    # One dk_bench call for the whole suite, or one per spec when filtered by --op.
    runs = [["--suite", a.suite]] if not a.op else [["--op"] + line.split() for line in suite]
    runs = [r[:2] + ["--shape"] + r[2:] if r[0] == "--op" else r for r in runs]
    rows = []
    for be in a.backend.split(","):
        for i, sel in enumerate(runs):
            js = os.path.join(tmp, f"dk_{be}_{i}.json")
            rc = run([a.bench, "--backend", be] + sel + ["--dtype", a.dtype, "--layout", a.layout,
                     "--iters", a.iters, "--json", js])
            if rc == 77 or not os.path.exists(js):
                print(f"backend {be}: skipped (not available)", file=sys.stderr)
                break
            rows += json.load(open(js))
    tj = os.path.join(tmp, "torch.json")
    cmd = [a.torch_python, os.path.join(here, "torch_bench.py"), "--suite-file", suite_file, "--dtype", a.dtype,
           "--layout", a.layout, "--iters", a.iters, "--json", tj]
    if a.device:
        cmd += ["--device", a.device]
    run(cmd)
    torch_rows = json.load(open(tj)) if os.path.exists(tj) else []
    compiled = []
    if a.compile:
        cj = os.path.join(tmp, "torch_compile.json")
        run([cj if x == tj else x for x in cmd] + ["--compile"])
        compiled = json.load(open(cj)) if os.path.exists(cj) else []

    def best_of(rows_):
        b_ = {}
        for t in rows_:
            k_ = (t["op"], t["spec"], t["dtype"])
            if k_ not in b_ or t["ms"] < b_[k_]["ms"]:
                b_[k_] = t
        return b_
    best, cbest = best_of(torch_rows), best_of(compiled)
    same = {(t["op"], t["spec"], t["dtype"], t["layout"]): t for t in torch_rows}
    lines = ["| op | shape | dtype | backend | layout | difkern ms | torch same-layout ms | torch best ms (layout) "
             "| best/difkern | difkern TFLOP/s | difkern GB/s |" + (" compile best ms (layout) | compile/difkern |"
                                                                  if a.compile else ""),
             "|" + "---|" * (13 if a.compile else 11)]
    for r in rows:
        k = (r["op"], r["spec"], r["dtype"])
        b = best.get(k)
        s = same.get(k + (r["layout"],))
        lines.append("| {} | {} | {} | {} | {} | {:.4f} | {} | {} | {} | {:.2f} | {:.0f} |".format(
            r["op"], r["spec"], r["dtype"], r["backend"], r["layout"], r["ms"],
            f"{s['ms']:.4f}" if s else "-", f"{b['ms']:.4f} ({b['layout']})" if b else "-",
            f"{b['ms'] / r['ms']:.2f}x" if b else "-", r["tflops"], r["gbps"]))
        if a.compile:
            cb = cbest.get(k)
            lines[-1] += " {} | {} |".format(f"{cb['ms']:.4f} ({cb['layout']})" if cb else "-",
                                             f"{cb['ms'] / r['ms']:.2f}x" if cb else "-")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
