/* difkern SDXL VAE decoder: the AutoencoderKL decoder of Stable Diffusion XL built
 * on difkern's public op API (include/difkern.h).
 *
 * Kept for one release: these names are thin wrappers over the family API of
 * include/difkern/vae.h (dk_vae_*: SD 1.x/2.x, SDXL, SD3, FLUX.1, decoder and
 * encoder); a dk_sdxl_vae is a dk_vae of model DK_VAE_SDXL that loads only the
 * decoder.  New code should use vae.h.
 *
 *   dk_sdxl_vae *vae;
 *   dk_sdxl_vae_create_from_file(ctx, "sdxl_vae.safetensors", DK_BF16, NULL, &vae);
 *   dk_sdxl_vae_decode_rgb8(vae, latents, batch, h, w, rgb, &info);  // rgb: batch*8h*8w*3 bytes
 *   dk_sdxl_vae_destroy(vae);
 *
 * Architecture (diffusers AutoencoderKL, SDXL config): post_quant_conv 1x1 4->4,
 * conv_in 3x3 4->512, mid block (resnet, single-head self-attention over the
 * h*w tokens, resnet), four up blocks of three resnets with 512, 512, 256, 128
 * channels (the first three end with nearest-2x upsample + 3x3 conv),
 * GroupNorm(32, eps 1e-6)+SiLU, conv_out 3x3 128->3.  Output is 8x the latent size.
 *
 * Weights: a .safetensors file in diffusers naming (decoder.up_blocks.0...;
 * the attention as to_q/to_k/to_v/to_out.0 or the older query/key/value/proj_attn),
 * in the original single-file naming (first_stage_model.decoder.up.3...), or the
 * latter without the first_stage_model. prefix; detected automatically.  f32, f16
 * or bf16 tensors, converted to the decode dtype on upload.  Other tensors in the
 * file (the encoder, a UNet) are ignored.
 *
 * Activations are NHWC in the decode dtype.  The decoder is written once on
 * the op API: GroupNorm+SiLU fused, conv epilogues add the residual (and the
 * 1x1 shortcut's bias is folded into conv2's), the upsample is fused into the
 * following conv.  A memory planner places every intermediate at an offset
 * of one device buffer (largest first, reusing memory whose tenant is dead;
 * src/vae/vae_exec.c), kept by the decoder between decodes and freed by
 * dk_sdxl_vae_destroy.  The decode's largest tensor, up_blocks.2's upsampler
 * output (256 channels at full resolution), is normalized in place, and the
 * conv1 of up_blocks.3.resnets.0 writes its 128-channel output over that
 * tensor's dead rows, in eight bands (DIFKERN_VAE_SHRINK=0 turns this off).
 * Untiled plan at 1024x1024 (128x128 latent) in f16/bf16: 801 MiB of
 * activations + 94 MiB of weights = 895 MiB (dk_sdxl_vae_plan, `sdxl_decode
 * --plan 128`; dk_memory_usage's peak equals the plan plus backend scratch:
 * the HIP backend's D-512 attention on Hopper takes 2 x tokens x 512 bytes, 16 MiB
 * here, 911 MiB in all); use max_device_bytes or tile_rows to stay below
 * another budget (max_device_bytes keeps room for that scratch: one more
 * tokens x 512 matrix).
 *
 * Precision: DK_F32, DK_F16, DK_BF16 (fp32 accumulation in every op).  The SDXL
 * VAE's residual stream exceeds the fp16 range (65504) on real weights, which
 * gives NaN/black images.  In DK_F16 the residual stream and every conv output
 * that feeds a GroupNorm are kept multiplied by fp16_activation_scale (a power
 * of two, default 2^-8: 256x headroom; exact, since powers of two only shift
 * the exponent): the convs get output_scale = s, the upsampler biases are
 * stored pre-scaled, and each GroupNorm, which is scale-invariant, runs with
 * eps * s^2.  GroupNorm outputs, q/k/v and the attention output are unscaled.
 * If the fp16 result still has a NaN/Inf, the sample is decoded again in fp32
 * with the fp16 weights widened exactly (info->fp16_fallback says so; it
 * needs device memory for the fp32 weights and activations on top of the
 * budget), so DK_F16 never returns NaN/Inf where fp32 is finite.
 *
 * Bounded memory (tiled decode): with tile_rows or max_device_bytes the
 * decoder runs layer by layer over bands of full-width rows: every full-size
 * activation lives in host memory, each conv uploads its band plus exact halo
 * rows (zero rows only at the image border).  GroupNorm uses the split API of
 * difkern.h: each conv takes the statistics of its output bands on the device
 * (dk_group_norm_stats), the decoder merges them on the host
 * (dk_group_norm_stats_merge), and the next conv normalizes each uploaded band
 * on the device with the whole tensor's statistics (dk_group_norm_apply, only
 * the rows inside the tensor: the zero halo stays the conv's padding), so the
 * result equals the untiled one within the dtype's rounding.  Device memory is
 * then the weights + three band buffers + the mid-block attention, which is
 * global and runs whole at latent resolution (5 buffers of 512*h*w elements).
 * This mode trades host<->device copies for memory: use it when the untiled
 * plan does not fit (H100, 2048x2048 in bands of 32 latent rows: 0.93 s on HIP,
 * 1.31 s on Vulkan, 739-803 MiB, against 0.37 s and 16.9 GB untiled in
 * PyTorch; difkern untiled there: 0.14 s on HIP with a 3.7 GB plan), bound by
 * the band copies.  On a GPU the host activations are pinned (dk_host_alloc:
 * the band copies go by DMA; DIFKERN_VAE_PINNED=0 uses malloc) and kept in the
 * decoder for the next decode until dk_sdxl_vae_destroy: pinning takes time,
 * so the first banded decode pays it (~6 GB at 2048x2048: 1.4 s on HIP, 1.9 s
 * on Vulkan in all for that decode); where pinning fails, ordinary memory is used.
 *
 * Profiling: with the environment variable DIFKERN_VAE_PROFILE=1 each decode
 * syncs around every primitive (conv, GroupNorm, linear, attention, band
 * transfers, statistics merges, host blocks, the output conversion) and prints
 * the summed wall time per kind to stderr.  The syncs make the decode slower.
 *
 * A CPU context (made on first use, freed with the decoder) converts the
 * decoded image to float NCHW on the host in both modes.
 */
#ifndef DIFKERN_SDXL_VAE_H
#define DIFKERN_SDXL_VAE_H

#include "../difkern.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dk_sdxl_vae dk_sdxl_vae;

/* Progress: called after each stage of each decode has finished on the device
 * (the decoder waits per stage when a callback is set).  Stages: 0 "conv_in"
 * (post_quant_conv + conv_in), 1 "mid_block", 2..5 "up_blocks.0" .. "up_blocks.3",
 * 6 "conv_out" (norm + SiLU + conv_out).  elapsed_ms: since the decode began. */
#define DK_SDXL_VAE_NUM_STAGES 7
typedef void (*dk_sdxl_vae_progress_fn)(void *user, int32_t stage, const char *stage_name,
                                        double elapsed_ms);

typedef struct dk_sdxl_vae_options {
    float scaling_factor;          /* latents are divided by it first; init 0.13025 (SDXL) */
    int32_t tile_rows;             /* > 0: decode in bands of this many latent rows; 0: none */
    uint64_t max_device_bytes;     /* > 0: band the decode when the untiled plan (weights +
                                      activations + room for the attention's backend scratch)
                                      exceeds it, with the largest bands that fit */
    float fp16_activation_scale;   /* DK_F16 only: power of two in (0, 1]; init 2^-8 */
    int32_t fp16_fallback;         /* DK_F16: redo a non-finite result in fp32 (init 1) */
    dk_sdxl_vae_progress_fn progress; /* may be NULL */
    void *progress_user;
    int32_t allow_nonfinite;       /* 1: decode NaN/Inf latents and return a NaN/Inf result
                                      as DK_OK (the caller checks); init 0: DK_ERR_NON_FINITE */
} dk_sdxl_vae_options;

DK_API void dk_sdxl_vae_options_init(dk_sdxl_vae_options *options);

/* What one decode did. */
typedef struct dk_sdxl_vae_info {
    int32_t banded;               /* 1: ran in row bands (bounded memory) */
    int32_t band_rows;            /* latent rows per band when banded, else h */
    int32_t fp16_fallback;        /* 1: the fp16 result had NaN/Inf and was redone in fp32 */
    uint64_t plan_device_bytes;   /* activation + band buffers the plan allocated */
    uint64_t weight_device_bytes; /* device bytes of the uploaded weights */
    uint64_t scratch_reserve_bytes; /* kept for backend scratch when max_device_bytes decides */
    uint64_t peak_device_bytes;   /* dk_memory_usage peak of ctx during the decode (the
                                     decode resets ctx's peak when it starts) */
    double elapsed_ms;            /* host wall time of the whole call (its latents' read-back,
                                     the 8-bit conversion of _rgb8 included) */
} dk_sdxl_vae_info;

/* Weights from a .safetensors file (path).  dtype: the decode dtype.
 * options may be NULL (defaults).  A missing or misshapen tensor is
 * DK_ERR_FORMAT with a message naming it and the expected shape. */
DK_API dk_status dk_sdxl_vae_create_from_file(dk_context *ctx, const char *path, dk_dtype dtype,
                                              const dk_sdxl_vae_options *options, dk_sdxl_vae **out);

/* Weights from an opened safetensors file in memory (the whole file's bytes;
 * e.g. mapped by the caller); the bytes are only read during the call. */
DK_API dk_status dk_sdxl_vae_create_from_memory(dk_context *ctx, const void *data, uint64_t size,
                                                dk_dtype dtype, const dk_sdxl_vae_options *options,
                                                dk_sdxl_vae **out);

/* Seeded random weights with the real shapes (for demos and tests): conv/linear
 * weights uniform with He variance 2/fan_in (residual-branch output convs
 * scaled by 1/4), biases and GroupNorm beta uniform in +-0.05, gamma 1 +- 0.05.
 * The same seed gives the same weights on every machine. */
DK_API dk_status dk_sdxl_vae_create_random(dk_context *ctx, uint64_t seed, dk_dtype dtype,
                                           const dk_sdxl_vae_options *options, dk_sdxl_vae **out);

DK_API void dk_sdxl_vae_destroy(dk_sdxl_vae *vae); /* NULL is fine */

/* Replace the options (e.g. another tile size) for later decodes. */
DK_API dk_status dk_sdxl_vae_set_options(dk_sdxl_vae *vae, const dk_sdxl_vae_options *options);

/* "diffusers", "original", "original+prefix" or "random". */
DK_API const char *dk_sdxl_vae_naming(const dk_sdxl_vae *vae);
DK_API dk_dtype dk_sdxl_vae_dtype(const dk_sdxl_vae *vae);

/* Non-finite values: latents holding NaN or Inf are refused with
 * DK_ERR_NON_FINITE before anything is decoded (the message names the first
 * one; out is not written).  A decoded image holding NaN or Inf (finite
 * latents too large for the decoder, or NaN/Inf weights; in DK_F16 only after
 * the fp32 fallback also gave NaN/Inf) is DK_ERR_NON_FINITE too, after every
 * sample was decoded: out then holds the decoded values (rgb8: NaN as 0) and
 * info is filled; the message names the first such sample.  Huge but finite
 * latents whose image is finite decode normally.  options->allow_nonfinite = 1
 * turns both checks off (the fp16 fallback still runs).  The result test costs
 * a GroupNorm statistics pass on the device and 24 bytes read back per sample
 * (an exact read-back where an fp32 result's statistics overflow), or a scan
 * of the host floats of a banded decode.
 *
 * Decode latents [batch, 4, h, w] (host float, NCHW, not yet divided by the
 * scaling factor) to images of 8h x 8w.
 * rgb8:  batch images, each 8h rows of 8w pixels of 3 bytes (R, G, B), from
 *        clamp((x + 1) / 2, 0, 1) * 255 rounded;
 * f32:   [batch, 3, 8h, 8w] host floats, NCHW, the decoder's raw output (~[-1, 1]).
 * info may be NULL. */
DK_API dk_status dk_sdxl_vae_decode_rgb8(dk_sdxl_vae *vae, const float *latents, int32_t batch,
                                         int32_t h, int32_t w, uint8_t *rgb8, dk_sdxl_vae_info *info);
DK_API dk_status dk_sdxl_vae_decode_f32(dk_sdxl_vae *vae, const float *latents, int32_t batch,
                                        int32_t h, int32_t w, float *out, dk_sdxl_vae_info *info);

/* The same on device tensors, for runtimes whose latents are already on the
 * device: latents [batch, 4, h, w] and out [batch, 3, 8h, 8w], tensors of the
 * decoder's context, f32, f16 or bf16 with any strides (out may not overlap
 * latents).  out receives what dk_sdxl_vae_decode_f32 gives, converted to its
 * dtype and layout on the device.  Neither passes through the host, except the
 * image in a banded decode (whose activations live in host memory).  NaN/Inf
 * latents or results: DK_ERR_NON_FINITE as above (both tested on the device;
 * the first bad latent is then located by reading the latents back).  info may
 * be NULL.  This is dk_vae_decode_tensor of an SDXL VAE. */
DK_API dk_status dk_sdxl_vae_decode_tensor(dk_sdxl_vae *vae, const dk_tensor *latents, const dk_tensor *out,
                                           dk_sdxl_vae_info *info);

/* The plan a decode of one h x w latent would use, without decoding: banded or
 * not, band rows, plan_device_bytes and weight_device_bytes (other fields 0). */
DK_API dk_status dk_sdxl_vae_plan(dk_sdxl_vae *vae, int32_t h, int32_t w, dk_sdxl_vae_info *info);

#ifdef __cplusplus
}
#endif

#endif /* DIFKERN_SDXL_VAE_H */
