#!/usr/bin/env python3
"""AutoencoderKL decode and encode: difkern's difkern-vae next to a plain-PyTorch
model with the same (seeded random) weights, in the same run, on the same GPU.

    vae_bench.py --cli BUILD/examples/sdxl_decode/difkern-vae [--size 128]
                 [--models sdxl,flux1] [--directions decode,encode]
                 [--backends vulkan,hip] [--dtypes f16,bf16] [--compile]
                 [--tile-size 256 --tile 32] [--workdir DIR]

For each model (tests/vae/autoencoder_kl_ref.py's table: sd15, sdxl, sd3, flux1)
writes the weights (diffusers naming, f16), a latent [1,C,S,S] and an image
[1,3,8S,8S] in [-1, 1] to a temporary folder or DIR (kept), then per direction and
dtype times:
  - PyTorch eager (median of 5 after warm-up, CUDA events; peak from
    torch.cuda.max_memory_allocated), device tensors in and out;
  - with --compile, torch.compile (default mode, model and input channels_last)
    and its compile + first-call time;
  - difkern per backend: `difkern-vae decode|encode ... --repeat 3` from host to
    host (the best of runs 2-3: run 1 builds pipelines), and with --device (input
    and output as device tensors: what PyTorch's time covers), with the peak
    device memory difkern-vae prints.
Decode includes the scaling (latents / scaling + shift) and encode returns the
scaled posterior mean, on both sides.  Prints a markdown table.  --tile-size adds a
banded decode at that latent side (difkern-vae --tile) next to PyTorch eager untiled.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "vae"))
import autoencoder_kl_ref as kl  # noqa: E402
import sdxl_ref  # noqa: E402
import st_write  # noqa: E402

DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


class Direction(torch.nn.Module):
    """One direction of the model as a module (what torch.compile compiles)."""

    def __init__(self, model, direction, name):
        super().__init__()
        self.model, self.direction = model, direction
        _, _, self.scaling, self.shift = kl.MODELS[name]

    def forward(self, x):
        if self.direction == "decode":
            return self.model.decode(x, self.scaling, self.shift)
        return self.model.encode(x, self.scaling, self.shift)


def cuda_times(fn, x, iters):
    times = []
    for _ in range(iters):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        out = fn(x)
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times), out


def torch_eager(mod, inp, dtype, iters=5):
    m = mod.to("cuda", DT[dtype])
    x = torch.from_numpy(inp).to("cuda", DT[dtype])
    with torch.no_grad():
        m(x)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        ms, out = cuda_times(m, x, iters)
        peak = torch.cuda.max_memory_allocated()
    finite = bool(torch.isfinite(out).all())
    return ms, peak / 2**20, (peak - base) / 2**20, finite


def torch_compiled(mod, inp, dtype, iters=5):
    """(compile + first call seconds, median ms after a second warm-up call, peak MiB)."""
    m = mod.to("cuda", DT[dtype]).to(memory_format=torch.channels_last)
    x = torch.from_numpy(inp).to("cuda", DT[dtype]).contiguous(memory_format=torch.channels_last)
    cm = torch.compile(m)
    with torch.no_grad():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        cm(x)
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - t0
        cm(x)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        ms, _ = cuda_times(cm, x, iters)
    return compile_s, ms, torch.cuda.max_memory_allocated() / 2**20


def difkern(cli, direction, model, wpath, inpath, backend, dtype, extra, out):
    flag = "--latent" if direction == "decode" else "--image"
    cmd = [cli, direction, "--vae", wpath, flag, inpath, "-o", out, "--model", model, "--backend", backend,
           "--dtype", dtype, "--repeat", "3"] + extra
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    text = r.stdout
    ms = re.findall(direction + r" (\d+): ([0-9.]+) ms", text)
    mem = re.findall(r"peak device memory: ([0-9.]+) MiB", text)
    if r.returncode != 0 or not ms:
        return None, None, text.strip().splitlines()[-1] if text.strip() else f"exit {r.returncode}"
    later = [float(t) for k, t in ms if int(k) > 1] or [float(t) for _, t in ms]
    return min(later), float(mem[-1]) if mem else None, ""


def fmt(v, spec):
    return "failed" if v is None else format(v, spec)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True, help="difkern-vae")
    ap.add_argument("--size", type=int, default=128, help="latent side (128: 1024x1024 image)")
    ap.add_argument("--models", default="sdxl,flux1")
    ap.add_argument("--directions", default="decode,encode")
    ap.add_argument("--backends", default="vulkan")
    ap.add_argument("--dtypes", default="f16,bf16")
    ap.add_argument("--compile", action="store_true", help="also time torch.compile (default mode, channels_last)")
    ap.add_argument("--tile-size", type=int, default=0, help="also a banded decode at this latent side")
    ap.add_argument("--tile", type=int, default=32)
    ap.add_argument("--workdir", help="write the weights and inputs here and keep them (default: a temporary folder)")
    a = ap.parse_args()
    tmp = a.workdir or tempfile.mkdtemp()
    os.makedirs(tmp, exist_ok=True)
    s = a.size
    print(f"# torch {torch.__version__} on {torch.cuda.get_device_name()}; latent {s}x{s} "
          f"-> image {8 * s}x{8 * s}", flush=True)
    rows = ["| model | direction | implementation | dtype | time ms | peak device MiB | note |",
            "|---|---|---|---|---|---|---|"]

    def row(*cells):
        rows.append("| " + " | ".join(str(c) for c in cells) + " |")
        print(rows[-1], flush=True)

    rng = np.random.default_rng(1)
    coarse = torch.from_numpy(rng.uniform(-1, 1, (1, 3, 16, 16)).astype(np.float32))
    image = torch.nn.functional.interpolate(coarse, size=(8 * s, 8 * s), mode="bilinear", align_corners=False)
    image = (image + 0.05 * torch.randn(image.shape, generator=torch.Generator().manual_seed(2))).clamp(-1, 1)
    ipath = os.path.join(tmp, "image.npy")
    np.save(ipath, image.numpy())
    for name in a.models.split(","):
        lc, quant, scaling, _ = kl.MODELS[name]
        model = kl.AutoencoderKL(lc, quant).eval()
        sdxl_ref.randomize(model, 1)
        wpath = os.path.join(tmp, f"{name}.safetensors")
        st_write.write(wpath, [(k, v.detach().to(torch.float16)) for k, v in model.state_dict().items()])
        lpath = os.path.join(tmp, f"latent{lc}.npy")
        z = (rng.standard_normal((1, lc, s, s)) * scaling).astype(np.float32)
        np.save(lpath, z)
        for d in a.directions.split(","):
            inp, inpath = (z, lpath) if d == "decode" else (image.numpy(), ipath)
            out = os.path.join(tmp, "o.png" if d == "decode" else "o.npy")
            mod = Direction(model, d, name).eval()
            for dt in a.dtypes.split(","):
                ms, peak, act, finite = torch_eager(mod, inp, dt)
                row(name, d, "PyTorch eager", dt, f"{ms:.2f}", f"{peak:.0f} (activations {act:.0f})",
                    "finite" if finite else "NaN/Inf in output")
                if a.compile:
                    cs, cms, cpeak = torch_compiled(mod, inp, dt)
                    row(name, d, "PyTorch torch.compile (default, channels_last)", dt, f"{cms:.2f}", f"{cpeak:.0f}",
                        f"compile + first call {cs:.1f} s")
                    torch._dynamo.reset()
                for be in a.backends.split(","):
                    for extra, what in (([], "host to host"), (["--device"], "device tensors, as PyTorch's time")):
                        t, mem, err = difkern(a.cli, d, name, wpath, inpath, be, dt, extra, out)
                        row(name, d, f"difkern {be}, {what}", dt, fmt(t, ".2f"), fmt(mem, ".0f"), err)
            model.float()
        if a.tile_size and "decode" in a.directions:
            zt = (rng.standard_normal((1, lc, a.tile_size, a.tile_size)) * scaling).astype(np.float32)
            tpath = os.path.join(tmp, f"latent{lc}_{a.tile_size}.npy")
            np.save(tpath, zt)
            mod = Direction(model, "decode", name).eval()
            for dt in a.dtypes.split(","):
                ms, peak, act, finite = torch_eager(mod, zt, dt, iters=3)
                row(name, f"decode {8 * a.tile_size}px", "PyTorch eager untiled", dt, f"{ms:.2f}",
                    f"{peak:.0f} (activations {act:.0f})", "finite" if finite else "NaN/Inf in output")
                for be in a.backends.split(","):
                    t, mem, err = difkern(a.cli, "decode", name, wpath, tpath, be, dt, ["--tile", str(a.tile)],
                                          os.path.join(tmp, "t.png"))
                    row(name, f"decode {8 * a.tile_size}px", f"difkern {be}, bands of {a.tile} rows", dt,
                        fmt(t, ".2f"), fmt(mem, ".0f"), err)
            model.float()
    print("\n".join(rows))


if __name__ == "__main__":
    main()
