#!/usr/bin/python3
"""difkern-vae: encode, decode and roundtrip with the real TAEF2 weights on the CPU
backend (a 32x32 image as .npy, a 64x64 PNG written here), bad commands, and
with KL_DIR (tests/vae's gen_kl.py files: random-weight AutoencoderKL files and
the PyTorch oracle's outputs) the AutoencoderKL family on the dk_vae API:
decode and encode of 4- and 16-channel weights with --model and auto against
the oracle, a seeded posterior sample, .npy and PNG images, --device, the
timing lines, a roundtrip equal to encode + decode, bad inputs, and
SDXL_DECODE (the old command, now the same code) against the oracle.

    vae_cli_test.py DIFKERN_VAE REPO_ROOT WORKDIR [KL_DIR SDXL_DECODE]

Exit 0 when every check passes; each failure is printed.
"""
import os
import re
import subprocess
import sys
import zlib
import struct

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
EXE, ROOT, WORK = (os.path.abspath(a) for a in sys.argv[1:4])
KL_DIR, SDXL_DECODE = (os.path.abspath(a) for a in sys.argv[4:6]) if len(sys.argv) > 5 else (None, None)
os.makedirs(WORK, exist_ok=True)
ENC = os.path.join(ROOT, "models", "taef2", "taef2_encoder.safetensors")
DEC = os.path.join(ROOT, "models", "taef2", "taef2_decoder.safetensors")
FAILURES = []


def run(*args, exe=None):
    p = subprocess.run([exe or EXE] + list(args), capture_output=True, text=True, cwd=WORK, timeout=600)
    return p.returncode, p.stdout, p.stderr


def check(cond, what, res=None):
    if cond:
        return
    FAILURES.append(what)
    print("FAIL: " + what + ("" if res is None else "\n    rc %d\n    stdout: %s\n    stderr: %s" % res))


def png(path, rgb):
    """An 8-bit RGB PNG of rgb [h, w, 3] (zlib, filter 0), written by hand."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


cpu = ["--backend", "cpu", "--dtype", "f32"]
# encode a smooth 32x32 image (.npy in [0, 1]) -> latents [1, 32, 4, 4]
yy, xx = np.mgrid[0:32, 0:32] / 31.0
img = np.stack([yy, xx, 0.5 * (yy + xx)])[None].astype(np.float32)
np.save(os.path.join(WORK, "img.npy"), img)
r = run("encode", "--vae", ENC, "--image", "img.npy", "-o", "lat.npy", *cpu)
check(r[0] == 0 and "wrote lat.npy [1, 32, 4, 4] float32" in r[1], "encode .npy", r)
if r[0] == 0:
    lat = np.load(os.path.join(WORK, "lat.npy"))
    check(lat.shape == (1, 32, 4, 4) and np.isfinite(lat).all() and lat.std() > 0.05, "latents shape/values")
    # --device (dk_taesd_encode_tensor) gives the same latents; --repeat 2 prints exactly
    # `encode 1: X ms`, `encode 2: X ms` and one peak line
    r = run("encode", "--vae", ENC, "--image", "img.npy", "-o", "lat_dev.npy", "--device", "--repeat", "2", *cpu)
    times = [l.split(":")[0] for l in r[1].splitlines() if re.fullmatch(r"encode \d+: \d+\.\d+ ms", l)]
    check(r[0] == 0 and times == ["encode 1", "encode 2"] and
          len(re.findall(r"^peak device memory: \d+\.\d MiB$", r[1], re.M)) == 1, "encode --device --repeat 2", r)
    if r[0] == 0:
        dev = np.load(os.path.join(WORK, "lat_dev.npy"))
        check(np.abs(dev - lat).max() <= 1e-5 * np.abs(lat).max(), "--device latents == host latents")
    r = run("encode", "--vae", ENC, "--image", "img.npy", "-o", "lat_s.npy", "--sample", *cpu)
    check(r[0] == 2 and "are for AutoencoderKL weights" in r[2], "--sample refused for the TAESD family", r)
    # decode them -> a 32x32 PNG
    r = run("decode", "--vae", DEC, "--latent", "lat.npy", "-o", "dec.png", *cpu)
    check(r[0] == 0 and "wrote dec.png (32x32)" in r[1] and os.path.getsize(os.path.join(WORK, "dec.png")) > 100,
          "decode", r)
# roundtrip of a 64x64 PNG (a synthetic picture: a ramp, a square, stripes): PSNR printed and plausible
rgb = np.zeros((512, 512, 3), np.uint8)
rgb[:, :, 0] = (np.arange(512)[None, :] * 255 // 511).astype(np.uint8)
rgb[128:384, 128:384, 1] = 200
rgb[::64, :, 2] = 255
small = rgb.reshape(64, 8, 64, 8, 3).mean(axis=(1, 3)).round().astype(np.uint8)
png(os.path.join(WORK, "in.png"), small)
r = run("roundtrip", "--vae", ENC, "--decoder", DEC, "--image", "in.png", "-o", "rt.png", *cpu)
psnr = [float(l.split()[-2]) for l in r[1].splitlines() if l.startswith("round trip PSNR")]
check(r[0] == 0 and len(psnr) == 1 and 12.0 < psnr[0] < 60.0 and os.path.exists(os.path.join(WORK, "rt.png")),
      "roundtrip PSNR %s" % psnr, r)
# a batch of two whose second file name is a directory: refused before anything is written
if os.path.exists(os.path.join(WORK, "lat.npy")):
    lat1 = np.load(os.path.join(WORK, "lat.npy"))
    np.save(os.path.join(WORK, "lat2.npy"), np.concatenate([lat1, lat1]))
    os.makedirs(os.path.join(WORK, "b2_1.png"), exist_ok=True)
    r = run("decode", "--vae", DEC, "--latent", "lat2.npy", "-o", "b2.png", *cpu)
    check(r[0] == 1 and "b2_1.png: it is a directory" in r[2] and not os.path.exists(os.path.join(WORK, "b2_0.png")),
          "batch output names checked before the decode", r)
else:
    check(False, "lat.npy from the first encode")
# the encoder file alone cannot decode; the output may not be an input
r = run("decode", "--vae", ENC, "--latent", "lat.npy", "-o", "x.png", *cpu)
check(r[0] != 0 and "no decoder" in r[2], "decode with encoder weights", r)
r = run("encode", "--vae", ENC, "--image", "img.npy", "-o", "img.npy", *cpu)
check(r[0] != 0 and np.load(os.path.join(WORK, "img.npy")).shape == (1, 3, 32, 32), "-o naming the input", r)
# latents of the wrong channel count, an unreadable image, bad commands and options
np.save(os.path.join(WORK, "lat4.npy"), np.zeros((1, 4, 2, 2), np.float32) + 0.1)
r = run("decode", "--vae", DEC, "--latent", "lat4.npy", "-o", "y.png", *cpu)
check(r[0] != 0 and "[32, h, w]" in r[2], "4-channel latents for taef2", r)
with open(os.path.join(WORK, "bad.png"), "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\nnot really")
r = run("encode", "--vae", ENC, "--image", "bad.png", "-o", "z.npy", *cpu)
check(r[0] != 0 and "cannot decode the image" in r[2] and not os.path.exists(os.path.join(WORK, "z.npy")),
      "corrupt PNG", r)
r = run("frobnicate")
check(r[0] == 2 and "unknown command" in r[2], "unknown command", r)
r = run("encode", "--vae", ENC, "-o", "q.npy")
check(r[0] == 2 and "--image is required" in r[2], "missing --image", r)
r = run("decode", "--vae", DEC, "--latent", "lat.npy", "-o", "w.png", "--model", "nope")
check(r[0] == 2 and "--model nope" in r[2], "bad --model", r)
r = run("decode", "--vae", DEC, "--latent", "lat.npy", "-o", "w.png", "--model", "taesd", *cpu)
check(r[0] != 0, "--model taesd with taef2 weights", r)
if KL_DIR:
    import kl_cli_checks
    kl_cli_checks.main(run, check, png, WORK, KL_DIR, SDXL_DECODE)
else:
    print("no KL_DIR: the AutoencoderKL checks are not run (tests/vae's PyTorch files are not built)")

print("%d check(s) failed" % len(FAILURES) if FAILURES else "difkern-vae: all checks passed")
sys.exit(1 if FAILURES else 0)
