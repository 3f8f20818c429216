#!/usr/bin/env python3
"""Time PyTorch on the shapes dk_bench times (same specs, FLOP and byte counts).

    torch_bench.py [--device cpu|cuda] [--dtype f32,f16,bf16] [--layout nchw,nhwc]
                   [--suite-file FILE | --spec "op k=v,..."] [--json OUT] [--iters N] [--compile]

conv3d runs as Wan 2.1's CausalConv3d does: torch.cat of the cached frames and
the chunk, F.pad of the causal front frames, F.conv3d (cuDNN); nchw is the
contiguous NCDHW input, nhwc channels_last_3d.  --compile times
torch.compile(default mode) of the same function instead of eager.

Specs come from `dk_bench --list --suite NAME` (one "op k=v,..." per line).  On
CUDA each run is timed with CUDA events; on the CPU with perf_counter.  The
median is reported, as dk_bench does.
"""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shapes  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
ACTS = {"none": lambda x: x, "relu": F.relu, "silu": F.silu, "gelu": F.gelu,
        "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "tanh": torch.tanh}


def image(shape, dt, layout, dev):
    x = torch.rand(shape, device=dev, dtype=torch.float32).mul_(2).sub_(1).to(dt)
    return x.contiguous(memory_format=torch.channels_last) if layout == "nhwc" else x


def video(shape, dt, layout, dev):
    x = torch.rand(shape, device=dev, dtype=torch.float32).mul_(2).sub_(1).to(dt)
    return x.contiguous(memory_format=torch.channels_last_3d) if layout == "nhwc" else x


def make(op, p, dt, layout, dev):
    """Returns a zero-argument callable that runs the op once."""
    r = lambda *s: torch.rand(s, device=dev, dtype=torch.float32).mul_(2).sub_(1).to(dt)  # noqa: E731
    act = ACTS[p.get("act", "none")]
    if op == "conv2d":
        x = image((p["n"], p["cin"], p["h"], p["w"]), dt, layout, dev)
        w = image((p["cout"], p["cin"] // p["g"], p["k"], p["k"]), dt, layout, dev)
        b = r(p["cout"]) if p["bias"] else None
        up = p["up"]

        def run():
            xi = F.interpolate(x, scale_factor=up, mode="nearest") if up > 1 else x
            return act(F.conv2d(xi, w, b, p["s"], p["p"], p["d"], p["g"]))
        return run
    if op == "conv3d":
        kt, k, tc = p["kt"], p["k"], p["tc"]
        x = video((p["n"], p["cin"], p["t"], p["h"], p["w"]), dt, layout, dev)
        cache = video((p["n"], p["cin"], tc, p["h"], p["w"]), dt, layout, dev) if tc else None
        w = video((p["cout"], p["cin"], kt, k, k), dt, layout, dev)
        b = r(p["cout"]) if p["bias"] else None

        def run():
            xi = torch.cat([cache, x], 2) if cache is not None else x
            xi = F.pad(xi, (k // 2, k // 2, k // 2, k // 2, kt - 1 - tc, 0))
            return act(F.conv3d(xi, w, b))
        return run
    if op == "conv_transpose2d":
        x = image((p["n"], p["cin"], p["h"], p["w"]), dt, layout, dev)
        w = image((p["cin"], p["cout"] // p["g"], p["k"], p["k"]), dt, layout, dev)
        b = r(p["cout"]) if p["bias"] else None
        return lambda: act(F.conv_transpose2d(x, w, b, p["s"], p["p"], p["op"], p["g"], p["d"]))
    if op == "matmul":
        a, bm = r(p["b"], p["m"], p["k"]), r(p["k"], p["n"])
        b = r(p["n"]) if p["bias"] else None
        return lambda: act(torch.matmul(a, bm) + b if b is not None else torch.matmul(a, bm))
    if op == "group_norm":
        x = image((p["n"], p["c"], p["h"], p["w"]), dt, layout, dev)
        g, b = r(p["c"]), r(p["c"])
        return lambda: act(F.group_norm(x, p["g"], g, b, 1e-5))
    if op == "layer_norm":
        x, g, b = r(p["rows"], p["d"]), r(p["d"]), r(p["d"])
        return lambda: act(F.layer_norm(x, (p["d"],), g, b))
    if op == "attention":
        q = r(p["b"], p["h"], p["n"], p["d"])
        k = r(p["b"], p["h"], p["nkv"], p["d"])
        v = r(p["b"], p["h"], p["nkv"], p["dv"])
        if hasattr(F, "scaled_dot_product_attention"):
            return lambda: F.scaled_dot_product_attention(q, k, v)
        scale = p["d"] ** -0.5
        return lambda: torch.softmax((q @ k.transpose(-1, -2)) * scale, -1) @ v
    if op == "add":
        a = image((p["n"], p["c"], p["h"], p["w"]), dt, layout, dev)
        b = image((p["n"], p["c"], p["h"], p["w"]), dt, layout, dev)
        return lambda: act(a + b)
    if op == "upsample":
        x = image((p["n"], p["c"], p["h"], p["w"]), dt, layout, dev)
        return lambda: F.interpolate(x, scale_factor=p["f"], mode="nearest")
    if op in shapes.VIDEO_OPS:  # rms_norm and a plain copy of the same video
        x = video((p["n"], p["c"], p["t"], p["h"], p["w"]), dt, layout, dev)
        if op == "copy":
            return lambda: x.clone()  # keeps the memory format
        c = p["c"]
        g, b = r(c).view(1, c, 1, 1, 1), r(c).view(1, c, 1, 1, 1)
        if p["form"] == "ms":
            return lambda: act(x * torch.rsqrt(x.pow(2).mean(1, keepdim=True) + 1e-6) * g + b)
        return lambda: act(F.normalize(x, dim=1) * c ** 0.5 * g + b)
    if op == "convert":
        x = image((p["n"], p["c"], p["h"], p["w"]), dt, layout, dev)
        fmt = torch.channels_last if p["tl"] == "nhwc" else torch.contiguous_format
        to = TORCH_DTYPES[p["to"]]
        return lambda: x.to(dtype=to, memory_format=fmt)
    raise ValueError(op)


def time_it(fn, dev, warmup, iters):
    with torch.no_grad():
        for _ in range(warmup):
            fn()
        times = []
        if dev == "cuda":
            torch.cuda.synchronize()
            for _ in range(iters):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                fn()
                e.record()
                e.synchronize()
                times.append(s.elapsed_time(e))
        else:
            for _ in range(iters):
                t0 = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", default="f32")
    ap.add_argument("--layout", default="nhwc")
    ap.add_argument("--suite-file")
    ap.add_argument("--spec", action="append", default=[])
    ap.add_argument("--json")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--compile", action="store_true", help="torch.compile (default mode) instead of eager")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.compile and not hasattr(torch, "compile"):
        sys.exit(f"torch_bench.py: --compile needs PyTorch 2 (this is {torch.__version__})")
    lines = list(a.spec)
    if a.suite_file:
        lines += [l.strip() for l in open(a.suite_file) if l.strip() and not l.startswith("#")]
    dev_name = torch.cuda.get_device_name() if a.device == "cuda" else f"cpu ({torch.get_num_threads()} threads)"
    print(f"# torch {torch.__version__} on {dev_name}")
    out = []
    for line in lines:
        op, text = shapes.parse_spec_line(line)
        for dtype in a.dtype.split(","):
            layouts = a.layout.split(",") if op in shapes.IMAGE_OPS else [shapes.default_layout(op)]
            for layout in layouts:
                p = shapes.parse(op, text, dtype, layout)
                spec = shapes.canonical(op, p)
                flops, nbytes = shapes.cost(op, p, dtype)
                try:
                    fn = make(op, p, TORCH_DTYPES[dtype], layout, a.device)
                    if a.compile:
                        fn = torch.compile(fn)
                    ms, mn = time_it(fn, a.device, a.warmup, a.iters)
                except RuntimeError as e:  # e.g. a dtype the CPU kernels lack
                    print(f"{op:18s} {spec:60s} {dtype:5s} {layout:5s} FAILED {str(e).splitlines()[0]}")
                    continue
                layout = shapes.layout_label(op, layout)
                print(f"{op:18s} {spec:60s} {dtype:5s} {layout:5s} {ms:10.4f} ms {flops / ms / 1e9:9.3f} TFLOP/s "
                      f"{nbytes / ms / 1e6:9.1f} GB/s", flush=True)
                out.append(dict(op=op, spec=spec, dtype=dtype, layout=layout,
                                backend="torch.compile" if a.compile else "torch", device=dev_name,
                                ms=ms, min_ms=mn, flops=flops, bytes=nbytes, tflops=flops / ms / 1e9,
                                gbps=nbytes / ms / 1e6))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
