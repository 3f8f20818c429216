"""difkern-vae with AutoencoderKL weights (vae_cli_test.py runs main()): the
random-weight files of tests/vae/gen_kl.py and its PyTorch oracle's outputs
(kl_dec_<model>.npy: decode of kl_latent<C>.npy; kl_enc_<model>.npy: encode of
kl_image.npy [2, 3, 32, 24] in [-1, 1]; kl_sample_<model>.npy: a posterior
sample with seed 42), CPU backend, f32.

Each heavy run loads ~100-300 MB of weights, so one run checks several things
(a model and the auto detection, the timing lines, --device)."""
import os
import re
import struct
import zlib

import numpy as np

CPU = ["--backend", "cpu", "--dtype", "f32"]


def read_png(path):
    """8-bit RGB PNG (what stb_image_write writes: any row filter) -> [h, w, 3] uint8."""
    with open(path, "rb") as f:
        data = f.read()
    pos, idat, w, h = 8, b"", 0, 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype == 2, "not 8-bit RGB"
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride = zlib.decompress(idat), 3 * w
    out = np.zeros((h, stride), np.int32)
    for y in range(h):
        ft = raw[y * (stride + 1)]
        row = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int32)
        up = out[y - 1] if y else np.zeros(stride, np.int32)
        cur = np.zeros(stride, np.int32)
        for x in range(stride):
            a = cur[x - 3] if x >= 3 else 0
            b, c = up[x], (up[x - 3] if x >= 3 else 0)
            if ft == 0:
                pred = 0
            elif ft == 1:
                pred = a
            elif ft == 2:
                pred = b
            elif ft == 3:
                pred = (a + b) // 2
            else:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[x] = (row[x] + pred) & 255
        out[y] = cur
    return out.reshape(h, w, 3).astype(np.uint8)


def to_rgb8(img):
    """[3, H, W] in [-1, 1] -> [H, W, 3] the way the CLI maps it."""
    return np.floor(np.clip((img.transpose(1, 2, 0) + 1) / 2, 0, 1) * 255 + 0.5).astype(np.int32)


def rel_err(a, b):
    return float(np.linalg.norm((a - b).ravel()) / max(np.linalg.norm(b.ravel()), 1e-30))


def main(run, check, png, work, kl, sdxl_decode):
    def f(name):
        return os.path.join(kl, name)

    def w(name):
        return os.path.join(work, name)

    def same_pngs(prefix, ref, what, r):
        """prefix_0.png, prefix_1.png against the oracle's [2, 3, H, W] (1 level for rounding)."""
        for b in range(ref.shape[0]):
            p = w("%s_%d.png" % (prefix, b))
            if not os.path.exists(p):
                check(False, "%s: %s missing" % (what, p), r)
                return
            got, want = read_png(p).astype(np.int32), to_rgb8(ref[b])
            check(got.shape == want.shape and np.abs(got - want).max() <= 1 and want.std() > 5,
                  "%s image %d vs the oracle (max diff %s)" % (what, b, np.abs(got - want).max()), r)

    def same_npy(path, ref, what, r, tol=1e-4):
        if not (r[0] == 0 and os.path.exists(path)):
            check(False, what, r)
            return None
        got = np.load(path)
        e = rel_err(got, ref) if got.shape == ref.shape else float("inf")
        check(e < tol and np.abs(ref).max() > 0.05, "%s vs the oracle (rel err %.3g)" % (what, e), r)
        return got

    lat4, lat16, image = f("kl_latent4.npy"), f("kl_latent16.npy"), f("kl_image.npy")

    # decode, 4 channels, --model sd15 (its scaling), twice: the timing lines, the plan, the peak
    r = run("decode", "--vae", f("kl4_diffusers.safetensors"), "--latent", lat4, "-o", "d15.png", "--model", "sd15",
            "--repeat", "2", *CPU)
    check(r[0] == 0, "decode sd15", r)
    same_pngs("d15", np.load(f("kl_dec_sd15.npy")), "decode --model sd15", r)
    lines = r[1].splitlines()
    check([l for l in lines if re.fullmatch(r"decode [12]: \d+\.\d+ ms", l)] and
          [l.split(":")[0] for l in lines if re.fullmatch(r"decode \d+: \d+\.\d+ ms", l)] == ["decode 1", "decode 2"],
          "decode --repeat 2: exactly the lines `decode 1: X ms`, `decode 2: X ms`", r)
    check(len([l for l in lines if re.fullmatch(r"first-call cost: -?\d+\.\d+ ms over the fastest later run .*", l)]) == 1,
          "decode --repeat 2: one `first-call cost: X ms ...` line", r)
    peak = [float(l.split()[3]) for l in lines if re.fullmatch(r"peak device memory: \d+\.\d MiB", l)]
    check(len(peak) == 1 and peak[0] > 100, "one `peak device memory: Y MiB` line above the weights' size", r)
    check("model: sd15, 4 latent channels, scaling 0.18215" in r[1], "the model line names sd15", r)
    check(len([l for l in lines if l.startswith("plan: decode of a 3x4 latent (24x32 image): untiled")]) == 1,
          "one plan line", r)

    # decode, 16 channels, auto (-> flux1), device tensors
    r = run("decode", "--vae", f("kl16_dec.safetensors"), "--latent", lat16, "-o", "df1.png", "--device", *CPU)
    check(r[0] == 0 and "model: flux1 (auto), 16 latent channels" in r[1], "decode auto 16 channels -> flux1", r)
    same_pngs("df1", np.load(f("kl_dec_flux1.npy")), "decode auto (flux1) --device", r)

    # encode: auto on the original naming (-> sdxl), the mean
    r = run("encode", "--vae", f("kl4_original.safetensors"), "--image", image, "-o", "exl.npy", *CPU)
    check("model: sdxl (auto)" in r[1] and "encode 1: " in r[1], "encode auto 4 channels -> sdxl", r)
    exl = same_npy(w("exl.npy"), np.load(f("kl_enc_sdxl.npy")), "encode auto (sdxl)", r)
    check(any(l.startswith("plan: encode of a 24x32 image: untiled") for l in r[1].splitlines()), "encode plan line", r)
    # a posterior sample, seed 42: 16 channels --model sd3 on the host, 4 channels sd15 on device tensors
    r = run("encode", "--vae", f("kl16_enc.safetensors"), "--image", image, "-o", "s3.npy", "--model", "sd3",
            "--sample", "--seed", "42", *CPU)
    s3 = same_npy(w("s3.npy"), np.load(f("kl_sample_sd3.npy")), "encode --model sd3 --sample --seed 42", r)
    check(s3 is None or rel_err(s3, np.load(f("kl_enc_sd3.npy"))) > 0.05, "the sample is not the mean")
    r = run("encode", "--vae", f("kl4_diffusers.safetensors"), "--image", image, "-o", "s15.npy", "--model", "sd15",
            "--sample", "--seed", "42", "--device", *CPU)
    same_npy(w("s15.npy"), np.load(f("kl_sample_sd15.npy")), "encode --model sd15 --sample --seed 42 --device", r)

    # roundtrip of a PNG == decode(encode(the same pixels as a .npy in [-1, 1]))
    rgb = ((np.load(image)[0].transpose(1, 2, 0) + 1) * 127.5).round().clip(0, 255).astype(np.uint8)
    png(w("kl_in.png"), rgb)
    np.save(w("kl_in.npy"), (rgb.transpose(2, 0, 1)[None].astype(np.float32) * (2.0 / 255.0) - 1.0))
    r = run("roundtrip", "--vae", f("kl4_diffusers.safetensors"), "--image", "kl_in.png", "-o", "rt.png", *CPU)
    check(r[0] == 0 and "round trip PSNR (image 0)" in r[1] and "encode 1: " in r[1] and "decode 1: " in r[1],
          "roundtrip", r)
    r2 = run("encode", "--vae", f("kl4_diffusers.safetensors"), "--image", "kl_in.npy", "-o", "rt_lat.npy", *CPU)
    r3 = run("decode", "--vae", f("kl4_diffusers.safetensors"), "--latent", "rt_lat.npy", "-o", "rt2.png", *CPU)
    check(r2[0] == 0 and r3[0] == 0, "encode + decode of the roundtrip's image", r3 if r2[0] == 0 else r2)
    if r[0] == 0 and r3[0] == 0:
        a, b = read_png(w("rt.png")).astype(int), read_png(w("rt2.png")).astype(int)
        check(a.shape == (32, 24, 3) and np.abs(a - b).max() <= 1 and a.std() > 5,
              "roundtrip == encode + decode (max diff %d)" % np.abs(a - b).max())

    # bad inputs: the wrong model names the tensor (encode loads only the encoder, so the
    # encoder's); a decoder-only file cannot encode; an image
    # not a multiple of 8 and the encode memory limit are refused with the reason, nothing written
    r = run("encode", "--vae", f("kl4_diffusers.safetensors"), "--image", image, "-o", "bad1.npy", "--model", "sd3",
            *CPU)
    check(r[0] == 1 and "not those of model sd3" in r[2] and "encoder.conv_out.weight is [8, 512, 3, 3]" in r[2] and
          not os.path.exists(w("bad1.npy")), "--model sd3 on 4-channel weights", r)
    r = run("encode", "--vae", f("kl16_dec.safetensors"), "--image", image, "-o", "bad2.npy", *CPU)
    check(r[0] == 1 and "holds no encoder" in r[2] and not os.path.exists(w("bad2.npy")), "decoder-only file", r)
    np.save(w("odd.npy"), np.zeros((1, 3, 30, 24), np.float32))
    r = run("encode", "--vae", f("kl16_enc.safetensors"), "--image", "odd.npy", "-o", "bad3.npy", *CPU)
    check(r[0] == 1 and "24x30" in r[2] and "multiples of 8" in r[2] and "weights:" not in r[1] and
          not os.path.exists(w("bad3.npy")), "30x24 image refused before the weights load", r)
    r = run("encode", "--vae", f("kl16_enc.safetensors"), "--image", image, "-o", "bad4.npy", "--max-memory", "10",
            *CPU)
    check(r[0] == 1 and "max_device_bytes 10485760 is below" in r[2] and not os.path.exists(w("bad4.npy")),
          "encode --max-memory below the plan", r)
    r = run("decode", "--vae", f("kl16_dec.safetensors"), "--latent", lat4, "-o", "bad5.png", *CPU)
    check(r[0] == 1 and "[16, h, w]" in r[2] and "weights:" not in r[1], "4-channel latents for 16-channel weights", r)

    # sdxl_decode (the alias) decodes the same file with the SDXL scaling, in bands of 2 latent rows
    r = run("--vae", f("kl4_diffusers.safetensors"), "--latent", lat4, "-o", "sx.png", "--tile", "2", *CPU,
            exe=sdxl_decode)
    check(r[0] == 0 and ", banded" in r[1], "sdxl_decode --tile 2", r)
    same_pngs("sx", np.load(f("kl_dec_sdxl.npy")), "sdxl_decode --tile 2", r)

    # --help says what auto picks for the weights that cannot tell their model
    r = run("--help")
    check(r[0] == 0 and "4-channel AutoencoderKL weights default to sdxl" in r[1] and "16-channel ones to flux1" in r[1],
          "--help: auto's defaults", r)
