"""Generates the TAESD-family test files into OUTDIR (argv[1]) from the PyTorch
oracle taesd_ref.py; argv[2] is the directory of the real TAEF2 weights.
References are computed in float32 (oneDNN; float64 takes ~15x longer on the
2-core CI machine) from the same weights.

  <m>_encoder.safetensors, <m>_decoder.safetensors   sequential naming, F32,
                                      seeded random weights, every member m
  taesd_diffusers.safetensors, taef2_diffusers.safetensors
                                      both directions, AutoencoderTiny naming, F32
  taesd3_comfyui.safetensors          both directions, taesd_encoder./taesd_decoder.
  image64.npy [2,3,64,64], image32.npy [1,3,32,32], image_odd.npy [1,3,36,44]
                                      smooth random images in [0, 1]
  latent<c>_8.npy [2,c,8,8], latent<c>_4.npy [1,c,4,4]  N(0, 2^2) latents
  <m>_enc64.npy, <m>_enc32.npy, <m>_dec8.npy, <m>_dec4.npy, taesd_enc_odd.npy
  real_lat8.npy, real_lat4.npy        the real TAEF2 encoder's latents of image64/32
  real_enc64.npy, real_enc32.npy, real_dec8.npy, real_dec4.npy
                                      the real TAEF2 weights (F16 file) on those
"""
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_write  # noqa: E402
import taesd_ref  # noqa: E402

SEEDS = {"taesd": 11, "taesdxl": 12, "taesd3": 13, "taef1": 14, "taef2": 15}


def smooth_image(rng, n, h, w):
    lo = torch.from_numpy(rng.random((n, 3, max(h // 8, 2), max(w // 8, 2)))).float()
    im = F.interpolate(lo, size=(h, w), mode="bilinear", align_corners=False)
    im = im + 0.05 * torch.from_numpy(rng.standard_normal((n, 3, h, w))).float()
    return im.clamp(0, 1).numpy().astype(np.float32)


def run(model, x):
    with torch.no_grad():
        return model.float()(torch.from_numpy(x)).numpy()


def read_safetensors(path):
    import json
    import struct
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    dts = {"F16": np.float16, "F32": np.float32}
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        b, e = v["data_offsets"]
        arr = np.frombuffer(data[8 + n + b:8 + n + e], dtype=dts[v["dtype"]]).reshape(v["shape"])
        out[k] = torch.from_numpy(arr.astype(np.float32))
    return out


def main():
    out, real_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    t0 = time.time()
    torch.manual_seed(0)
    rng = np.random.default_rng(5)
    images = {"64": smooth_image(rng, 2, 64, 64), "32": smooth_image(rng, 1, 32, 32),
              "_odd": smooth_image(rng, 1, 36, 44)}
    for k, v in images.items():
        np.save(os.path.join(out, "image%s.npy" % k), v)
    latents = {}
    for c in (4, 16, 32):
        latents[(c, 8)] = (2.0 * rng.standard_normal((2, c, 8, 8))).astype(np.float32)
        latents[(c, 4)] = (2.0 * rng.standard_normal((1, c, 4, 4))).astype(np.float32)
        np.save(os.path.join(out, "latent%d_8.npy" % c), latents[(c, 8)])
        np.save(os.path.join(out, "latent%d_4.npy" % c), latents[(c, 4)])

    for m, (c, pool) in taesd_ref.MEMBERS.items():
        enc, dec = taesd_ref.encoder(c, pool), taesd_ref.decoder(c, pool)
        taesd_ref.randomize(enc, SEEDS[m])
        taesd_ref.randomize(dec, SEEDS[m] + 100)
        es = [(k, v.detach().float().contiguous()) for k, v in enc.state_dict().items()]
        ds = [(k, v.detach().float().contiguous()) for k, v in dec.state_dict().items()]
        st_write.write(os.path.join(out, "%s_encoder.safetensors" % m), es, {"format": "pt"})
        st_write.write(os.path.join(out, "%s_decoder.safetensors" % m), ds, {"format": "pt"})
        for naming, members in (("diffusers", ("taesd", "taef2")), ("comfyui", ("taesd3",))):
            if m in members:
                both = [(taesd_ref.rename(k, "encoder", naming), v) for k, v in es]
                both += [(taesd_ref.rename(k, "decoder", naming), v) for k, v in ds]
                st_write.write(os.path.join(out, "%s_%s.safetensors" % (m, naming)), both[::-1])
        np.save(os.path.join(out, "%s_enc64.npy" % m), run(enc, images["64"]))
        np.save(os.path.join(out, "%s_enc32.npy" % m), run(enc, images["32"]))
        np.save(os.path.join(out, "%s_dec8.npy" % m), run(dec, latents[(c, 8)]))
        np.save(os.path.join(out, "%s_dec4.npy" % m), run(dec, latents[(c, 4)]))
        if m == "taesd":
            np.save(os.path.join(out, "taesd_enc_odd.npy"), run(enc, images["_odd"]))

    enc, dec = taesd_ref.encoder(32, True), taesd_ref.decoder(32, True)
    enc.load_state_dict(read_safetensors(os.path.join(real_dir, "taef2_encoder.safetensors")))
    dec.load_state_dict(read_safetensors(os.path.join(real_dir, "taef2_decoder.safetensors")))
    for size, lat in (("64", "8"), ("32", "4")):
        z = run(enc, images[size])
        np.save(os.path.join(out, "real_enc%s.npy" % size), z)
        np.save(os.path.join(out, "real_lat%s.npy" % lat), z)
        np.save(os.path.join(out, "real_dec%s.npy" % lat), run(dec, z))
    print("gen_taesd: %s in %.1f s" % (out, time.time() - t0))


if __name__ == "__main__":
    main()
