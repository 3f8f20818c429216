#!/usr/bin/env python3
"""SDXL VAE decode: difkern's sdxl_decode next to a plain-PyTorch decoder with the
same (seeded random) weights, in the same run, on the same GPU.

    vae_bench.py --decode BUILD/examples/sdxl_decode/sdxl_decode [--size 128]
                 [--backends vulkan,hip] [--dtypes f16,bf16] [--tile-size 256 --tile 32]
                 [--no-untiled] [--compile] [--workdir DIR]

Writes the weights (diffusers naming) and a latent [1,4,S,S] (latent.npy;
latentT.npy for the tiled side T) to a temporary folder or DIR (kept, e.g. for
DIFKERN_VAE_PROFILE=1 sdxl_decode --vae DIR/vae.safetensors --latent DIR/latent.npy), times PyTorch eager (median of 5 after warm-up, CUDA events, peak from
torch.cuda.max_memory_allocated) and each difkern backend/dtype (the time and
peak device memory that sdxl_decode prints, the best of decodes 2-3: decode 1
builds pipelines), both from host latent to host float pixels and with latent and
image as device tensors (sdxl_decode --device: what PyTorch eager's time covers),
and prints a markdown table.  --compile adds torch.compile (default mode, the
model and latent channels_last), with its compile time.
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
import sdxl_ref  # noqa: E402
import st_write  # noqa: E402

DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def torch_decode(model, z, dtype, iters=5):
    m = model.to("cuda", DT[dtype])
    x = torch.from_numpy(z).to("cuda", DT[dtype])
    with torch.no_grad():
        m(x)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        times = []
        for _ in range(iters):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            out = m(x)
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e))
        peak = torch.cuda.max_memory_allocated()
        # What sdxl_decode's time covers: the latent from host memory to float32
        # NCHW pixels in host memory (upload, decode, conversion, download).
        host = []
        for _ in range(iters):
            t0 = time.perf_counter()
            pixels = m(torch.from_numpy(z).to("cuda", DT[dtype])).float().cpu()
            host.append((time.perf_counter() - t0) * 1e3)
        del pixels
    finite = bool(torch.isfinite(out).all())
    return statistics.median(times), peak / 2**20, (peak - base) / 2**20, finite, statistics.median(host)


def torch_compiled_decode(model, z, dtype, iters=5):
    """torch.compile (default mode) of the channels_last model: (compile + first
    call seconds, median ms of iters calls after a second warm-up call, peak MiB)."""
    m = model.to("cuda", DT[dtype]).to(memory_format=torch.channels_last)
    x = torch.from_numpy(z).to("cuda", DT[dtype]).contiguous(memory_format=torch.channels_last)
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
        times = []
        for _ in range(iters):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            cm(x)
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e))
    return compile_s, statistics.median(times), torch.cuda.max_memory_allocated() / 2**20


def difkern_decode(exe, wpath, lpath, backend, dtype, extra, out):
    cmd = [exe, "--vae", wpath, "--latent", lpath, "-o", out, "--backend", backend, "--dtype", dtype,
           "--repeat", "3"] + extra
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    text = r.stdout
    ms = re.findall(r"decode \d+: ([0-9.]+) ms", text)
    mem = re.findall(r"peak device memory: ([0-9.]+) MiB", text)
    if r.returncode != 0 or not ms:
        return None, None, text.strip().splitlines()[-1] if text.strip() else f"exit {r.returncode}"
    return min(float(v) for v in ms), float(mem[-1]) if mem else None, stage_times(text)


def stage_times(text):
    """Per-stage milliseconds of the last decode, from sdxl_decode's progress lines
    ('[k/7] name  elapsed ms', elapsed since the decode began)."""
    last = re.split(r"decode \d+: [0-9.]+ ms", text)[-2] if re.search(r"decode \d+:", text) else text
    stages = re.findall(r"\[\d+/\d+\] (\S+)\s+([0-9.]+) ms", last)
    out, prev = [], 0.0
    for name, t in stages:
        out.append(f"{name} {float(t) - prev:.1f}")
        prev = float(t)
    return "stages ms: " + ", ".join(out) if out else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decode", required=True)
    ap.add_argument("--size", type=int, default=128, help="latent side (128: 1024x1024 image)")
    ap.add_argument("--backends", default="vulkan")
    ap.add_argument("--dtypes", default="f16,bf16")
    ap.add_argument("--tile-size", type=int, default=0, help="also a tiled decode at this latent side")
    ap.add_argument("--tile", type=int, default=32)
    ap.add_argument("--no-untiled", action="store_true", help="only the tiled decode")
    ap.add_argument("--compile", action="store_true", help="also time torch.compile (default mode, channels_last)")
    ap.add_argument("--workdir", help="write the weights and latents here and keep them (default: a temporary folder)")
    a = ap.parse_args()
    tmp = a.workdir or tempfile.mkdtemp()
    os.makedirs(tmp, exist_ok=True)
    model = sdxl_ref.SDXLVAEDecoder().eval()
    sdxl_ref.randomize(model, 1)
    wpath, lpath = os.path.join(tmp, "vae.safetensors"), os.path.join(tmp, "latent.npy")
    st_write.write(wpath, [(k, v.detach().to(torch.float16)) for k, v in model.state_dict().items()])
    rng = np.random.default_rng(1)
    z = (rng.standard_normal((1, 4, a.size, a.size)) * 0.13025 * 4).astype(np.float32)
    np.save(lpath, z)
    print(f"# torch {torch.__version__} on {torch.cuda.get_device_name()}; latent {a.size}x{a.size} "
          f"-> image {8 * a.size}x{8 * a.size}", flush=True)
    rows = ["| decoder | dtype | time ms | peak device MiB | note |", "|---|---|---|---|---|"]
    for dt in [] if a.no_untiled else a.dtypes.split(","):
        ms, peak, peak_act, finite, host_ms = torch_decode(model, z, dt)
        rows.append(f"| PyTorch eager | {dt} | {ms:.2f} | {peak:.0f} (activations {peak_act:.0f}) | "
                    f"{'finite' if finite else 'NaN/Inf in output'} |")
        rows.append(f"| PyTorch eager, host latent to host float32 pixels (what difkern's time covers) | {dt} | "
                    f"{host_ms:.2f} | | |")
        print("\n".join(rows[-2:]), flush=True)
        if a.compile:
            cs, cms, cpeak = torch_compiled_decode(model, z, dt)
            rows.append(f"| PyTorch torch.compile (default mode, channels_last) | {dt} | {cms:.2f} | {cpeak:.0f} | "
                        f"compile + first call {cs:.1f} s |")
            print(rows[-1], flush=True)
        for be in a.backends.split(","):
            ms2, mem, err = difkern_decode(a.decode, wpath, lpath, be, dt, [], os.path.join(tmp, "o.png"))
            rows.append(f"| difkern {be} | {dt} | {ms2 if ms2 is None else f'{ms2:.2f}'} | "
                        f"{mem if mem is None else f'{mem:.0f}'} | {err} |")
            print(rows[-1], flush=True)
            # latent and image as device tensors (sdxl_decode --device): what PyTorch eager's time covers
            ms3, mem3, err3 = difkern_decode(a.decode, wpath, lpath, be, dt, ["--device"], os.path.join(tmp, "d.png"))
            rows.append(f"| difkern {be}, device latent to device image (as PyTorch eager's time) | {dt} | "
                        f"{ms3 if ms3 is None else f'{ms3:.2f}'} | {mem3 if mem3 is None else f'{mem3:.0f}'} | {err3} |")
            print(rows[-1], flush=True)
    if a.tile_size:
        zt = (rng.standard_normal((1, 4, a.tile_size, a.tile_size)) * 0.5).astype(np.float32)
        lpath = os.path.join(tmp, f"latent{a.tile_size}.npy")
        np.save(lpath, zt)
        for dt in a.dtypes.split(","):
            ms, peak, peak_act, finite, _ = torch_decode(model, zt, dt, iters=3)
            rows.append(f"| PyTorch eager untiled {8 * a.tile_size}px | {dt} | {ms:.2f} | {peak:.0f} "
                        f"(activations {peak_act:.0f}) | {'finite' if finite else 'NaN/Inf in output'} |")
            print(rows[-1], flush=True)
        for be in a.backends.split(","):
            for dt in a.dtypes.split(","):
                ms2, mem, err = difkern_decode(a.decode, wpath, lpath, be, dt, ["--tile", str(a.tile)],
                                               os.path.join(tmp, "t.png"))
                rows.append(f"| difkern {be} tiled {8 * a.tile_size}px, bands of {a.tile} | {dt} | "
                            f"{ms2 if ms2 is None else f'{ms2:.2f}'} | {mem if mem is None else f'{mem:.0f}'} | {err} |")
                print(rows[-1], flush=True)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
