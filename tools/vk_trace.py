#!/usr/bin/env python3
"""Summarize DIFKERN_VULKAN_TRACE=1 output (stderr lines "vktrace i shader S spec
a b c d groups G top_us bottom_us host host_us"): the dispatches split into runs at host gaps
over --split ms; per run its span, the dispatches' summed times (bottom - top)
and the gaps between them (top - previous bottom); for the last run, or --run N,
the same per shader and specialization."""
import argparse
import os
import re
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "shaders"))
import shader_list  # noqa: E402

LINE = re.compile(r"vktrace (\d+) shader (\d+) spec (\d+) (\d+) (\d+) (\d+) groups (\d+) ([-0-9.]+) ([-0-9.]+)(?: host ([-0-9.]+))?")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("file", nargs="?", default="-")
    ap.add_argument("--split", type=float, default=1.0, help="host gap (ms) that starts a new run")
    ap.add_argument("--run", type=int, default=-1, help="the run to break down (default: the last)")
    ap.add_argument("--list", default=shader_list.DEFAULT_LIST,
                    help="the shaders.list of the traced build (default: this checkout's)")
    a = ap.parse_args()
    # The trace's shader index is a dk_vk_shader: the list's modules in order.
    names = [m.trace for m in shader_list.modules(shader_list.parse(a.list))]
    text = sys.stdin.read() if a.file == "-" else open(a.file).read()
    recs = [m.groups() for m in LINE.finditer(text)]
    if not recs:
        sys.exit("no vktrace lines")
    runs, cur, prev_end = [], [], None
    for r in recs:
        sh, spec, groups, top, bot = int(r[1]), tuple(int(x) for x in r[2:6]), int(r[6]), float(r[7]), float(r[8])
        if prev_end is not None and (int(r[0]) == 0 or top - prev_end > a.split * 1e3):
            runs.append(cur)
            cur = []
        gap = 0.0 if not cur else max(top - prev_end, 0.0)
        cur.append((sh, spec, groups, top, bot, gap))
        prev_end = bot
    runs.append(cur)
    for i, run in enumerate(runs):
        span = (run[-1][4] - run[0][3]) / 1e3
        k = sum(x[4] - x[3] for x in run) / 1e3
        g = sum(x[5] for x in run) / 1e3
        print(f"run {i}: {len(run)} dispatches, span {span:.3f} ms = dispatches {k:.3f} + gaps {g:.3f}")
    run = runs[a.run]
    agg = defaultdict(lambda: [0, 0.0, 0.0])
    for sh, spec, groups, top, bot, gap in run:
        name = names[sh] if sh < len(names) else str(sh)
        e = agg[(name, spec, groups)]
        e[0] += 1
        e[1] += (bot - top) / 1e3
        e[2] += gap / 1e3
    print(f"run {a.run if a.run >= 0 else len(runs) - 1} by shader, spec, workgroups (ms):")
    for (name, spec, groups), (n, k, g) in sorted(agg.items(), key=lambda kv: -(kv[1][1] + kv[1][2])):
        print(f"  {k:8.3f} +gap {g:6.3f}  {n:3d}x  {name} spec {spec} groups {groups}")


if __name__ == "__main__":
    main()
