"""Generates the AutoencoderKL family test files into OUTDIR (test_vae_kl.c):
seeded random weights of the 4-channel (quant convs) and the 16-channel
(no quant convs) architecture, stored in f16, in several namings and splits,
inputs, and the PyTorch oracle's outputs (autoencoder_kl_ref.py, float32, from
the f16-rounded weights) for every model of the table.

  kl4_diffusers.safetensors   4 channels, decoder + encoder + quant convs, diffusers naming
  kl4_original.safetensors    the same weights, first_stage_model. prefix, plus unrelated tensors
  kl16_dec.safetensors        16 channels, decoder only, diffusers naming
  kl16_enc.safetensors        16 channels, encoder only, original naming without prefix
  kl_latent4.npy, kl_latent16.npy   [2, C, 4, 3] latents as a diffusion model gives them
  kl_image.npy                [2, 3, 32, 24] in [-1, 1]
  kl_dec_<model>.npy          decode of kl_latent<C>.npy with the model's scaling and shift
  kl_enc_<model>.npy          encode (posterior mean) of kl_image.npy
  kl_sample_<model>.npy       encode with a sample, seed SEED (dk_vae_noise)
"""
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import autoencoder_kl_ref as kl  # noqa: E402
import sdxl_ref  # noqa: E402
import st_write  # noqa: E402

SEED = 42
LAT = (4, 3)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    t0 = time.time()
    torch.manual_seed(0)
    rng = np.random.default_rng(11)
    coarse = torch.from_numpy(rng.uniform(-1, 1, (2, 3, 8, 6)).astype(np.float32))
    image = F.interpolate(coarse, size=(8 * LAT[0], 8 * LAT[1]), mode="bilinear", align_corners=False)
    image = (image + 0.1 * torch.from_numpy(rng.standard_normal(image.shape).astype(np.float32))).clamp(-1, 1)
    np.save(os.path.join(out, "kl_image.npy"), image.numpy())
    for lc, quant, seed in ((4, True, 401), (16, False, 1601)):
        model = kl.AutoencoderKL(lc, quant)
        sdxl_ref.randomize(model, seed)
        state = {k: v.detach().half() for k, v in model.state_dict().items()}
        with torch.no_grad():
            model.load_state_dict({k: v.float() for k, v in state.items()})
        lat = rng.standard_normal((2, lc) + LAT).astype(np.float32)
        np.save(os.path.join(out, "kl_latent%d.npy" % lc), lat)
        if lc == 4:
            st_write.write(os.path.join(out, "kl4_diffusers.safetensors"), list(state.items()))
            extra = [("model.diffusion_model.input_blocks.0.0.weight", torch.randn(320, 4, 3, 3).half())]
            orig = [("first_stage_model." + n, t) for n, t in (kl.to_original(k, v) for k, v in state.items())]
            st_write.write(os.path.join(out, "kl4_original.safetensors"), extra + orig[::-1])
        else:
            st_write.write(os.path.join(out, "kl16_dec.safetensors"),
                           [(k, v) for k, v in state.items() if not k.startswith("encoder.")
                            and not k.startswith("quant_conv.")])
            st_write.write(os.path.join(out, "kl16_enc.safetensors"),
                           [kl.to_original(k, v) for k, v in state.items() if k.startswith("encoder.")])
        n = 2 * lc * LAT[0] * LAT[1]
        nz = kl.noise(SEED, n).to(torch.float32).reshape((2, lc) + LAT)
        for name, (mlc, _, sc, sh) in kl.MODELS.items():
            if mlc != lc:
                continue
            with torch.no_grad():
                dec = model.decode(torch.from_numpy(lat), sc, sh)
                enc = model.encode(image, sc, sh)
                smp = model.encode(image, sc, sh, nz)
            np.save(os.path.join(out, "kl_dec_%s.npy" % name), dec.numpy())
            np.save(os.path.join(out, "kl_enc_%s.npy" % name), enc.numpy())
            np.save(os.path.join(out, "kl_sample_%s.npy" % name), smp.numpy())
    print("gen_kl: %s in %.1f s" % (out, time.time() - t0))


if __name__ == "__main__":
    main()
