"""Generates the VAE test files into OUTDIR: random SDXL VAE weights in both key
namings and three dtypes, a batch of latents (.npy), and the reference outputs
of the PyTorch decoder (sdxl_ref.py) computed in float32 (oneDNN; float64
takes ~10 s per decode on 2 cores) from the same (dtype-rounded) weights.

  diffusers_f32.safetensors      diffusers naming, F32            ref_f32.npy
  original_f16.safetensors       first_stage_model. prefix, F16,  ref_f16w.npy
                                 plus unrelated tensors (encoder, UNet)
  diffusers_legacy_f16.safetensors  diffusers < 0.15 attention names
                                 (query/key/value/proj_attn), F16     ref_f16w.npy
  original_bf16.safetensors      original naming without prefix, BF16   ref_bf16w.npy
  overflow_f16.safetensors       diffusers naming, F16, conv_in scaled so the
                                 activations exceed the fp16 range     ref_overflow.npy
  latent.npy                     [2, 4, H, W] float32
"""
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sdxl_ref  # noqa: E402
import st_write  # noqa: E402

LAT_H, LAT_W, BATCH = 4, 5, 2
OVERFLOW_SCALE = 3.0e4


def reference(model, state, z):
    with torch.no_grad():
        model.load_state_dict({k: v.to(torch.float32) for k, v in state.items()})
        return model(torch.from_numpy(z)).numpy()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    t0 = time.time()
    torch.manual_seed(0)
    model = sdxl_ref.SDXLVAEDecoder()
    sdxl_ref.randomize(model, 1234)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    rng = np.random.default_rng(7)
    z = rng.standard_normal((BATCH, 4, LAT_H, LAT_W)).astype(np.float32)
    np.save(os.path.join(out, "latent.npy"), z)

    def rounded(dt):
        return {k: v.to(dt).to(torch.float32) for k, v in state.items()}

    st_write.write(os.path.join(out, "diffusers_f32.safetensors"), list(state.items()),
                   {"format": "pt"})
    np.save(os.path.join(out, "ref_f32.npy"), reference(model, state, z))

    extra = [("first_stage_model.encoder.conv_in.weight", torch.randn(128, 3, 3, 3).half()),
             ("model.diffusion_model.input_blocks.0.0.weight", torch.randn(320, 4, 3, 3).half())]
    orig = [("first_stage_model." + n, t.half()) for n, t in
            (sdxl_ref.to_original(k, v) for k, v in state.items())]
    st_write.write(os.path.join(out, "original_f16.safetensors"), extra + orig)
    np.save(os.path.join(out, "ref_f16w.npy"), reference(model, rounded(torch.float16), z))

    legacy = {"to_q": "query", "to_k": "key", "to_v": "value", "to_out.0": "proj_attn"}
    old = []
    for k, v in state.items():
        for a, b in legacy.items():
            k = k.replace(".attentions.0.%s." % a, ".attentions.0.%s." % b)
        old.append((k, v.half()))
    st_write.write(os.path.join(out, "diffusers_legacy_f16.safetensors"), old)

    orig = [sdxl_ref.to_original(k, v.to(torch.bfloat16)) for k, v in state.items()]
    st_write.write(os.path.join(out, "original_bf16.safetensors"), orig[::-1])
    np.save(os.path.join(out, "ref_bf16w.npy"), reference(model, rounded(torch.bfloat16), z))

    big = dict(state)
    big["decoder.conv_in.weight"] = state["decoder.conv_in.weight"] * OVERFLOW_SCALE
    big["decoder.conv_in.bias"] = state["decoder.conv_in.bias"] * OVERFLOW_SCALE
    big = {k: v.half() for k, v in big.items()}
    st_write.write(os.path.join(out, "overflow_f16.safetensors"), list(big.items()))
    ref = reference(model, {k: v.float() for k, v in big.items()}, z)
    with torch.no_grad():  # how large do the activations get? (fp16 max is 65504)
        x = model.decoder.conv_in(model.post_quant_conv(torch.from_numpy(z) / 0.13025))
    np.save(os.path.join(out, "ref_overflow.npy"), ref)
    print("gen_files: %s in %.1f s; overflow case: max |conv_in output| %.3g, output finite: %s"
          % (out, time.time() - t0, float(x.abs().max()), bool(np.isfinite(ref).all())))


if __name__ == "__main__":
    main()
