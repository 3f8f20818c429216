/* difkern TAESD family: the tiny autoencoders (encoder and decoder) of
 * madebyollin/taesd, built on difkern's public op API (include/difkern.h).
 *
 *   dk_taesd *tae;
 *   dk_taesd_create_from_files(ctx, "taef2_encoder.safetensors", "taef2_decoder.safetensors", NULL, &tae);
 *   dk_taesd_encode_f32(tae, image, 1, 512, 512, latents);    // image [1,3,512,512] in [0,1]
 *   dk_taesd_decode_f32(tae, latents, 1, 64, 64, out);        // out [1,3,512,512], about [0,1]
 *   dk_taesd_destroy(tae);
 *
 * Members (the same network; they differ in latent channels, the pool branches
 * and the trained weights):
 *
 *   model            latents of       latent channels   pool branches
 *   TAESD            SD 1.x / 2.x           4               no
 *   TAESDXL          SDXL                   4               no
 *   TAESD3           SD3 / SD3.5           16               no
 *   TAEF1            FLUX.1                16               no
 *   TAEF2            FLUX.2                32               yes (GroupNorm)
 *
 * TAESD and TAESDXL (likewise TAESD3 and TAEF1) have identical shapes: the
 * weights cannot tell them apart, so detection names the first of each pair;
 * options.model names the other (the result is the same computation).
 *
 * Architecture (every conv 3x3 with padding 1 and a bias unless noted; 64
 * channels throughout):
 *   Block(x):   [pool branch first, TAEF2 only:
 *                x = x + conv1x1_256->64(relu(GroupNorm(4 groups, 256, eps 1e-5)(conv1x1_64->256(x))))
 *                with bias-free 1x1 convs]
 *               y = relu(conv(relu(conv(relu(conv(x))))) + x)
 *   Encoder:    conv 3->64, Block, 3 x [conv stride 2 without bias, 3 Blocks], conv 64->C.
 *               TAEF2: the last three Blocks have the pool branch.  Output: the raw
 *               latent [N, C, ceil(H/8), ceil(W/8)] (any H, W >= 1, as PyTorch's
 *               stride-2 convs give).
 *   Decoder:    x = 3 * tanh(x / 3), conv C->64, ReLU, 3 x [3 Blocks, nearest 2x
 *               upsample, conv without bias], Block, conv 64->3.  TAEF2: the first
 *               three Blocks have the pool branch.  Output [N, 3, 8h, 8w], about
 *               [0, 1] (not clamped: clamp to [0, 1] for an image).
 *   Images are RGB in [0, 1], as the family expects (diffusers' AutoencoderTiny
 *   maps [-1, 1] to [0, 1] and back around the same layers; difkern does not).
 *   Latents are the decoder's input and the encoder's output as they are: no
 *   scaling or shift is applied (a pipeline's own latent scaling is the caller's).
 *
 * Weights (.safetensors, F32/F16/BF16, converted to the options' dtype on
 * upload; other tensors in a file are ignored):
 *   "sequential"  the original checkpoints' nn.Sequential keys, one direction per
 *                 file: encoder "0.weight", "1.conv.0.weight", "2.weight",
 *                 "11.pool.0.weight", ...; decoder "1.weight", "3.conv.4.bias",
 *                 "3.pool.1.weight", "7.weight", ..., "19.bias";
 *   "comfyui"     the same keys under "taesd_encoder." / "taesd_decoder.";
 *   "diffusers"   AutoencoderTiny: "encoder.layers.N..." (the encoder's N as
 *                 above) and "decoder.layers.N..." (the decoder's index minus one:
 *                 diffusers has no layer for the tanh clamp), usually both in one file.
 * The naming, the direction, the latent channels (first/last conv shapes) and
 * the pool branches are detected per file.  A missing or misshapen tensor is
 * DK_ERR_FORMAT naming the tensor and the expected shape.
 *
 * Execution: activations NHWC in the options' dtype (f32, f16 or bf16; fp32
 * accumulation in every op), weights uploaded once into one device buffer.
 * Intermediates live in one activation buffer of three 64-channel slots at the
 * largest resolution plus a 256-channel slot for the pool branch, grown to the
 * largest call and kept until dk_taesd_destroy: per call, nothing is allocated
 * unless the batch or image is larger than before.  Each Block is three
 * dk_conv2d calls with fused bias + ReLU (the last one adding the residual) and
 * a ReLU pass after the residual; the pool branch is a 1x1 conv, a fused
 * GroupNorm + ReLU and a 1x1 conv adding the residual; upsample + conv is one
 * conv with the fused nearest-2x upsample.  The clamp is one dk_add
 * (tanh(x/6 + x/6), exactly x * (1/3) in float and saturating to +-1 for +-Inf)
 * with the factor 3 folded into the first decoder conv's weights (scaled in
 * fp32 before rounding to the dtype).
 * Device memory for a decode of N latents h x w (image H = 8h, W = 8w):
 * weights (1.34 M parameters per direction) + 3 * N * 64 * H * W + N * 256 * h * w
 * elements + an f32 staging buffer for host arrays of max(input, output) size.
 * TAEF2 decode of one 128x128x32 latent (a 1024x1024 image, ~565 GFLOP) on the
 * 2-core CI machine's CPU backend, release build, f32: 8.4 s of process CPU
 * time (about 4.2 s wall on two idle cores; measured 18.7 s wall while the
 * machine was shared); details and accuracy in docs/taesd.md.
 *
 * Threads: a dk_taesd is used by one thread at a time (it owns buffers that
 * every call reuses); separate objects on separate contexts are independent.
 */
#ifndef DIFKERN_TAESD_H
#define DIFKERN_TAESD_H

#include "../difkern.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dk_taesd dk_taesd;

typedef enum dk_taesd_model {
    DK_TAESD_AUTO = 0,  /* detect from the weights (create_random: invalid) */
    DK_TAESD_SD = 1,    /* TAESD: 4 latent channels */
    DK_TAESD_SDXL = 2,  /* TAESDXL: 4 */
    DK_TAESD_SD3 = 3,   /* TAESD3: 16 */
    DK_TAESD_FLUX1 = 4, /* TAEF1: 16 */
    DK_TAESD_FLUX2 = 5  /* TAEF2: 32, pool branches */
} dk_taesd_model;

/* "taesd", "taesdxl", "taesd3", "taef1", "taef2" ("auto" for DK_TAESD_AUTO, "?" otherwise). */
DK_API const char *dk_taesd_model_name(dk_taesd_model model);

typedef struct dk_taesd_options {
    dk_dtype dtype;       /* activations and weights on the device; init DK_F32 */
    dk_taesd_model model; /* init DK_TAESD_AUTO; a named model must match the weights' shapes */
} dk_taesd_options;

DK_API void dk_taesd_options_init(dk_taesd_options *options);

/* Weights of one or both directions from one file (a diffusers AutoencoderTiny
 * file holds both; an original checkpoint one).  options may be NULL. */
DK_API dk_status dk_taesd_create_from_file(dk_context *ctx, const char *path, const dk_taesd_options *options,
                                           dk_taesd **out);

/* The encoder from encoder_path and the decoder from decoder_path; either may
 * be NULL (that direction is then absent), not both; they may be the same file. */
DK_API dk_status dk_taesd_create_from_files(dk_context *ctx, const char *encoder_path, const char *decoder_path,
                                            const dk_taesd_options *options, dk_taesd **out);

/* The same from safetensors files in memory (each the whole file's bytes;
 * only read during the call).  Either may be NULL (size 0), not both; a file
 * holding both directions may be passed twice. */
DK_API dk_status dk_taesd_create_from_memory(dk_context *ctx, const void *encoder_data, uint64_t encoder_size,
                                             const void *decoder_data, uint64_t decoder_size,
                                             const dk_taesd_options *options, dk_taesd **out);

/* Seeded random weights of options->model (not AUTO), both directions: conv
 * weights uniform with He variance 2/fan_in (each residual branch's last conv,
 * conv.4 and pool.3, scaled by 1/4), biases and GroupNorm beta uniform in
 * +-0.05, gamma 1 +- 0.05.  The same seed gives the same weights everywhere. */
DK_API dk_status dk_taesd_create_random(dk_context *ctx, uint64_t seed, const dk_taesd_options *options,
                                        dk_taesd **out);

DK_API void dk_taesd_destroy(dk_taesd *tae); /* NULL is fine */

typedef struct dk_taesd_properties {
    dk_taesd_model model;
    int32_t latent_channels;
    int32_t pool_branches;         /* 1: TAEF2's GroupNorm pool branches */
    int32_t has_encoder, has_decoder;
    const char *encoder_naming;    /* "sequential", "comfyui", "diffusers", "random"; NULL if absent */
    const char *decoder_naming;
    dk_dtype dtype;
    uint64_t weight_device_bytes;
    uint64_t activation_device_bytes; /* activation + staging buffers held now */
} dk_taesd_properties;

DK_API dk_status dk_taesd_properties_get(const dk_taesd *tae, dk_taesd_properties *out);

/* Decode latents [batch, C, h, w] (host floats, NCHW) to out [batch, 3, 8h, 8w]
 * (host floats, NCHW, about [0, 1], not clamped).  NaN propagates; the clamp
 * maps +-Inf to +-3 as PyTorch does (checked on the CPU and Vulkan backends). */
DK_API dk_status dk_taesd_decode_f32(dk_taesd *tae, const float *latents, int32_t batch, int32_t h, int32_t w,
                                     float *out);

/* Encode images [batch, 3, H, W] (host floats, NCHW, RGB in [0, 1]) to latents
 * [batch, C, ceil(H/8), ceil(W/8)] (host floats, NCHW). */
DK_API dk_status dk_taesd_encode_f32(dk_taesd *tae, const float *images, int32_t batch, int32_t height,
                                     int32_t width, float *latents);

/* The same on device tensors of the object's context: any dtype (f32, f16,
 * bf16) and any strides; the input is converted to the object's NHWC
 * activations by the first op and the output written by the last, so out may
 * even overlap the input.
 * decode: latents [N, C, h, w] -> out [N, 3, 8h, 8w];
 * encode: images [N, 3, H, W] -> latents [N, C, ceil(H/8), ceil(W/8)].
 * Nothing passes through the host; the call queues the work and returns
 * (dk_sync or a download waits for it). */
DK_API dk_status dk_taesd_decode_tensor(dk_taesd *tae, const dk_tensor *latents, const dk_tensor *out);
DK_API dk_status dk_taesd_encode_tensor(dk_taesd *tae, const dk_tensor *images, const dk_tensor *latents);

/* Frees the activation and staging buffers (the next call allocates them again). */
DK_API void dk_taesd_release_buffers(dk_taesd *tae);

#ifdef __cplusplus
}
#endif

#endif /* DIFKERN_TAESD_H */
