/* difkern VAE: the diffusers AutoencoderKL family (decoder and encoder) built on
 * difkern's public op API (include/difkern.h).
 *
 *   dk_vae *vae;
 *   dk_vae_options o;
 *   dk_vae_options_init(&o);                       // o.model = DK_VAE_AUTO
 *   dk_vae_create_from_file(ctx, "ae.safetensors", DK_BF16, &o, &vae);
 *   dk_vae_decode_rgb8(vae, latents, batch, h, w, rgb, &info); // latents [batch, C, h, w]
 *   dk_vae_encode_f32(vae, image, batch, 8 * h, 8 * w, latents, NULL);
 *   dk_vae_destroy(vae);
 *
 * Models (one architecture, four configurations):
 *
 *   model         latent channels  scaling  shift   quant_conv / post_quant_conv
 *   DK_VAE_SD15   4                0.18215  0       yes   (SD 1.x and 2.x)
 *   DK_VAE_SDXL   4                0.13025  0       yes
 *   DK_VAE_SD3    16               1.5305   0.0609  no    (SD3 and SD3.5)
 *   DK_VAE_FLUX1  16               0.3611   0.1159  no
 *
 * DK_VAE_AUTO takes the latent channels from the weights (decoder.conv_in's
 * input channels, or half of encoder.conv_out's output channels) and the quant
 * convs' presence from the file.  The weights alone cannot tell SD 1.x from
 * SDXL, nor SD3 from FLUX.1 (each pair differs only in scaling and shift), so
 * AUTO picks DK_VAE_SDXL for 4 channels and DK_VAE_FLUX1 for 16: name the model
 * in the options for the other one.  A named model whose latent channels or
 * quant convs disagree with the weights is DK_ERR_FORMAT.
 *
 * Scaling and shift are applied inside: decode takes latents as the diffusion
 * model produces them and decodes z = latents / scaling + shift; encode returns
 * latents = (z - shift) * scaling, ready for the diffusion model.
 *
 * Architecture (diffusers AutoencoderKL; GroupNorm(32, eps 1e-6), SiLU):
 *   decoder: post_quant_conv 1x1 (where present), conv_in 3x3 C -> 512, mid
 *     block (resnet, single-head self-attention over the h*w tokens, resnet),
 *     four up blocks of three resnets with 512, 512, 256, 128 channels (the
 *     first three end with nearest-2x upsample + 3x3 conv), GroupNorm+SiLU,
 *     conv_out 3x3 128 -> 3.  The image is 8x the latent size.
 *   encoder: conv_in 3x3 3 -> 128, four down blocks of two resnets with 128,
 *     256, 512, 512 channels (the first three end with a downsampler: zero
 *     padding of 0 rows/columns on the top/left and 1 on the bottom/right, then
 *     a 3x3 stride-2 conv without padding), mid block as the decoder's,
 *     GroupNorm+SiLU, conv_out 3x3 512 -> 2C (mean, log-variance), quant_conv
 *     1x1 2C -> 2C where present.  The image is [-1, 1] RGB, its height and
 *     width multiples of 8.
 *
 * Weights: a .safetensors file in diffusers naming (decoder.up_blocks.0...,
 * encoder.down_blocks.0...; the attention as to_q/to_k/to_v/to_out.0 or the
 * older query/key/value/proj_attn), in the original single-file naming
 * (first_stage_model.decoder.up.3..., first_stage_model.encoder.down.0...),
 * or the latter without the first_stage_model. prefix; detected automatically.
 * f32, f16 or bf16 tensors, converted to the compute dtype on upload.  Other
 * tensors (a UNet, a text encoder) are ignored.  A file holding only the
 * decoder or only the encoder works for that direction (the other is
 * DK_ERR_UNSUPPORTED, naming what the file lacks).
 *
 * Everything else is as the SDXL decoder's documentation in sdxl_vae.h says,
 * for every model: NHWC activations in the compute dtype; a memory plan of
 * one device buffer (dk_vae_plan, dk_vae_plan_encode; docs/vae-memory-plan.md);
 * banded decoding and encoding with whole-tensor GroupNorm statistics when
 * tile_rows or max_device_bytes ask for it (the same result as untiled within
 * float rounding, bounded device memory); in DK_F16 the residual stream kept at
 * fp16_activation_scale with an fp32 redo of a sample whose result holds
 * NaN/Inf (decode and encode); NaN/Inf inputs or results reported as
 * DK_ERR_NON_FINITE; device-tensor entry points; progress callbacks;
 * DIFKERN_VAE_PROFILE=1.  A max_device_bytes below even bands of one latent
 * row (8 image rows) is DK_ERR_OUT_OF_MEMORY, naming that minimum.
 */
#ifndef DIFKERN_VAE_H
#define DIFKERN_VAE_H

#include "../difkern.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dk_vae dk_vae;

typedef enum dk_vae_model {
    DK_VAE_AUTO = 0,  /* from the weights: 4 channels SDXL, 16 channels FLUX1 */
    DK_VAE_SD15 = 1,  /* SD 1.x / 2.x */
    DK_VAE_SDXL = 2,
    DK_VAE_SD3 = 3,   /* SD3 / SD3.5 */
    DK_VAE_FLUX1 = 4
} dk_vae_model;

/* "auto", "sd15", "sdxl", "sd3", "flux1" ("?" for other values). */
DK_API const char *dk_vae_model_name(dk_vae_model model);

/* Progress: called after each stage of each decode or encode has finished on
 * the device (the call waits per stage when a callback is set).  Decode stages:
 * 0 "conv_in" (post_quant_conv + conv_in), 1 "mid_block", 2..5 "up_blocks.0" ..
 * "up_blocks.3", 6 "conv_out" (norm + SiLU + conv_out).  Encode stages: 0
 * "conv_in", 1..4 "down_blocks.0" .. "down_blocks.3", 5 "mid_block", 6
 * "conv_out" (norm + SiLU + conv_out + quant_conv).  elapsed_ms: since the
 * call began. */
#define DK_VAE_NUM_STAGES 7
typedef void (*dk_vae_progress_fn)(void *user, int32_t stage, const char *stage_name, double elapsed_ms);

/* Which parts of the weights a dk_vae_create_* call uploads. */
typedef enum dk_vae_parts {
    DK_VAE_PARTS_ALL = 0,     /* what the weights hold: decoder, encoder or both */
    DK_VAE_PARTS_DECODER = 1, /* the decoder only: no device memory for the encoder */
    DK_VAE_PARTS_ENCODER = 2  /* the encoder only */
} dk_vae_parts;

typedef struct dk_vae_options {
    dk_vae_model model;            /* init DK_VAE_AUTO */
    float scaling_factor;          /* init NAN: the model's (table above) */
    float shift_factor;            /* init NAN: the model's */
    int32_t tile_rows;             /* > 0: decode and encode in bands of this many latent
                                      rows (8x that at full resolution; the halos come on
                                      top, so 1 works; more than h: one band); 0: none */
    uint64_t max_device_bytes;     /* > 0: band a decode or encode whose untiled plan
                                      (weights + activations + room for backend scratch)
                                      exceeds it, with the largest bands that fit */
    float fp16_activation_scale;   /* DK_F16 only: power of two in (0, 1]; init 2^-8 */
    int32_t fp16_fallback;         /* DK_F16: redo a non-finite result in fp32 (init 1) */
    dk_vae_progress_fn progress;   /* may be NULL */
    void *progress_user;
    int32_t allow_nonfinite;       /* 1: NaN/Inf inputs are processed and a NaN/Inf result
                                      is DK_OK (the caller checks); init 0: DK_ERR_NON_FINITE */
    dk_vae_parts parts;            /* creation only (dk_vae_set_options ignores it): the parts
                                      to upload, init DK_VAE_PARTS_ALL.  A runtime that only
                                      decodes saves the encoder's weights (66 MiB in f16) and
                                      the reverse (94 MiB); weights without the asked part are
                                      DK_ERR_FORMAT, the other direction DK_ERR_UNSUPPORTED */
} dk_vae_options;

DK_API void dk_vae_options_init(dk_vae_options *options);

/* What one decode or encode did (or would do: dk_vae_plan*). */
typedef struct dk_vae_info {
    int32_t banded;               /* 1: ran in row bands (bounded memory) */
    int32_t band_rows;            /* latent rows per band when banded, else h */
    int32_t fp16_fallback;        /* 1: an fp16 result had NaN/Inf and was redone in fp32 */
    uint64_t plan_device_bytes;   /* activation + band buffers the plan allocated */
    uint64_t weight_device_bytes; /* device bytes of the uploaded weights (the parts loaded) */
    uint64_t scratch_reserve_bytes; /* kept for backend scratch when max_device_bytes decides */
    uint64_t peak_device_bytes;   /* dk_memory_usage peak of ctx during the call (the call
                                     resets ctx's peak when it starts) */
    double elapsed_ms;            /* host wall time of the whole call */
} dk_vae_info;

/* Weights from a .safetensors file (path).  dtype: the compute dtype.
 * options may be NULL (defaults).  A missing or misshapen tensor is
 * DK_ERR_FORMAT with a message naming it and the expected shape. */
DK_API dk_status dk_vae_create_from_file(dk_context *ctx, const char *path, dk_dtype dtype,
                                         const dk_vae_options *options, dk_vae **out);

/* Weights from a safetensors file in memory (the whole file's bytes); the
 * bytes are only read during the call. */
DK_API dk_status dk_vae_create_from_memory(dk_context *ctx, const void *data, uint64_t size, dk_dtype dtype,
                                           const dk_vae_options *options, dk_vae **out);

/* Seeded random weights with the real shapes of options->model (AUTO: SDXL),
 * decoder and encoder: conv/linear weights uniform with He variance 2/fan_in
 * (residual-branch output convs scaled by 1/4), biases and GroupNorm beta
 * uniform in +-0.05, gamma 1 +- 0.05.  The same seed and model give the same
 * weights on every machine; for SDXL the decoder's are those of
 * dk_sdxl_vae_create_random. */
DK_API dk_status dk_vae_create_random(dk_context *ctx, uint64_t seed, dk_dtype dtype,
                                      const dk_vae_options *options, dk_vae **out);

DK_API void dk_vae_destroy(dk_vae *vae); /* NULL is fine */

/* Replace the options for later calls.  options->model AUTO keeps the model;
 * another one must agree with the weights (as at creation). */
DK_API dk_status dk_vae_set_options(dk_vae *vae, const dk_vae_options *options);

/* The model, latent channels, the scaling and shift in use, whether the
 * weights hold a decoder / an encoder; the key naming: "diffusers",
 * "original", "original+prefix" or "random". */
DK_API dk_vae_model dk_vae_get_model(const dk_vae *vae);
DK_API int32_t dk_vae_latent_channels(const dk_vae *vae);
DK_API float dk_vae_scaling_factor(const dk_vae *vae);
DK_API float dk_vae_shift_factor(const dk_vae *vae);
DK_API int32_t dk_vae_has_decoder(const dk_vae *vae);
DK_API int32_t dk_vae_has_encoder(const dk_vae *vae);
DK_API const char *dk_vae_naming(const dk_vae *vae);
DK_API dk_dtype dk_vae_dtype(const dk_vae *vae);

/* Decode latents [batch, C, h, w] (host float, NCHW, as the diffusion model
 * produces them) to images of 8h x 8w.
 * rgb8:  batch images, each 8h rows of 8w pixels of 3 bytes (R, G, B), from
 *        clamp((x + 1) / 2, 0, 1) * 255 rounded;
 * f32:   [batch, 3, 8h, 8w] host floats, NCHW, the decoder's raw output (~[-1, 1]).
 * NaN/Inf: latents holding them are refused with DK_ERR_NON_FINITE before
 * anything runs; a result holding them is DK_ERR_NON_FINITE after every sample
 * ran (out holds the values; rgb8: NaN as 0); allow_nonfinite turns both off.
 * info may be NULL. */
DK_API dk_status dk_vae_decode_rgb8(dk_vae *vae, const float *latents, int32_t batch, int32_t h, int32_t w,
                                    uint8_t *rgb8, dk_vae_info *info);
DK_API dk_status dk_vae_decode_f32(dk_vae *vae, const float *latents, int32_t batch, int32_t h, int32_t w,
                                   float *out, dk_vae_info *info);

/* The same on device tensors of the VAE's context, f32, f16 or bf16 with any
 * strides (out may not overlap latents): latents [batch, C, h, w], out
 * [batch, 3, 8h, 8w].  Neither passes through the host, except the image in a
 * banded decode: the latents are converted to fp32 on the device (a buffer of
 * C * h * w * 4 bytes per sample, kept through the call), tested for NaN/Inf
 * there (the first bad value is then located by reading them back), scaled and
 * shifted there, and converted into each sample's input.  NaN/Inf as in
 * dk_vae_decode_f32. */
DK_API dk_status dk_vae_decode_tensor(dk_vae *vae, const dk_tensor *latents, const dk_tensor *out,
                                      dk_vae_info *info);

/* Encode images [batch, 3, H, W] (host float, NCHW, in [-1, 1]; H and W
 * multiples of 8) to latents [batch, C, H/8, W/8] (host float, NCHW):
 * (mean - shift) * scaling, the posterior's mean (mode). */
DK_API dk_status dk_vae_encode_f32(dk_vae *vae, const float *image, int32_t batch, int32_t height, int32_t width,
                                   float *latents, dk_vae_info *info);

/* The same with a sample of the posterior instead of its mean:
 *   latents = (mean + exp(0.5 * clamp(logvar, -30, 20)) * n - shift) * scaling
 * where n for the element at flat index i of the [batch, C, H/8, W/8] latents
 * (NCHW order, over the whole batch) is dk_vae_noise(seed, i).  The same seed
 * gives the same latents on every backend (the noise is made on the host). */
DK_API dk_status dk_vae_encode_sample_f32(dk_vae *vae, const float *image, int32_t batch, int32_t height,
                                          int32_t width, uint64_t seed, float *latents, dk_vae_info *info);

/* The standard normal noise of the sample: with
 *   mix(x) = splitmix64's finalizer: x ^= x >> 30; x *= 0xbf58476d1ce4e5b9;
 *            x ^= x >> 27; x *= 0x94d049bb133111eb; x ^= x >> 31
 *   a = mix(seed + (2i + 1) * 0x9e3779b97f4a7c15), b = mix(seed + (2i + 2) * 0x9e3779b97f4a7c15)
 *   u1 = ((a >> 11) + 1) * 2^-53 (in (0, 1]), u2 = (b >> 11) * 2^-53 (in [0, 1))
 * (unsigned 64-bit arithmetic, wrapping), Box-Muller in double:
 *   n = (float)(sqrt(-2 ln u1) * cos(2 pi u2)). */
DK_API float dk_vae_noise(uint64_t seed, uint64_t i);

/* Encode on device tensors of the VAE's context, any dtype and strides (out may
 * not overlap image): image [batch, 3, H, W], latents [batch, C, H/8, W/8].
 * sample 0: the mean as dk_vae_encode_f32; 1: a sample with seed as
 * dk_vae_encode_sample_f32.  The image is converted on the device; the mean
 * stays there ((mean - shift) * scaling is the last conv's epilogue, converted
 * into latents); a sample's latents pass through the host, where its noise is
 * drawn (a few KB per sample). */
DK_API dk_status dk_vae_encode_tensor(dk_vae *vae, const dk_tensor *image, const dk_tensor *latents,
                                      int32_t sample, uint64_t seed, dk_vae_info *info);

/* The plan a decode of one h x w latent would use, without decoding: banded
 * or not, band rows, plan_device_bytes, weight_device_bytes and
 * scratch_reserve_bytes (other fields 0). */
DK_API dk_status dk_vae_plan(dk_vae *vae, int32_t h, int32_t w, dk_vae_info *info);

/* The plan an encode of one height x width image would use, as dk_vae_plan
 * (band_rows in latent rows, of height / 8). */
DK_API dk_status dk_vae_plan_encode(dk_vae *vae, int32_t height, int32_t width, dk_vae_info *info);

#ifdef __cplusplus
}
#endif

#endif /* DIFKERN_VAE_H */
