/* The shared case list (see cases.h).
 *
 * Base cases below name a shape and its parameters; zero fields take the
 * defaults (n 1, stride 1, dilation 1, groups 1, upsample 1, scales 1).  Each
 * base case is expanded over f32/f16/bf16 and, for image ops, NCHW/NHWC.
 * Shapes are Stable Diffusion / SDXL VAE and UNet shapes with the channel and
 * spatial sizes scaled down so the whole list runs on a 2-core CPU in seconds.
 */
#include "cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HC_MAX_CASES 2048

/* Base-case flags. */
#define Q 1   /* quick */
#define G 2   /* strided output with a gap (name suffix _outgap) */
#define I 4   /* strided activation inputs with a gap (name suffix _ingap) */

typedef struct hcb_conv { const char *label; int flags; hc_conv p; } hcb_conv;
typedef struct hcb_mm { const char *label; int flags; hc_matmul p; } hcb_mm;
typedef struct hcb_norm { const char *label; int flags; hc_norm p; } hcb_norm;
typedef struct hcb_attn { const char *label; int flags; hc_attention p; } hcb_attn;
typedef struct hcb_ew { const char *label; int flags; hc_elementwise p; } hcb_ew;
typedef struct hcb_c3 { const char *label; int flags; hc_conv3d p; } hcb_c3;

/* ------------------------------------------------------------------ conv2d */

static const hcb_conv hcb_conv2d[] = {
    /* VAE decoder (channels 512/256/128 scaled to 64/32) */
    {"vae_conv_in_c4to64_12x12", Q, {.cin = 4, .h = 12, .w = 12, .cout = 64, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1}},
    {"vae_3x3_c64_16x16", Q, {.cin = 64, .h = 16, .w = 16, .cout = 64, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1}},
    {"vae_resnet_3x3_c64_residual", 0, {.cin = 64, .h = 12, .w = 12, .cout = 64, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .residual = 1}},
    {"vae_upsample2_3x3_c32_8x8", Q, {.cin = 32, .h = 8, .w = 8, .cout = 32, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .upsample = 2, .bias = 1}},
    {"vae_conv_out_c32to3_16x16", 0, {.cin = 32, .h = 16, .w = 16, .cout = 3, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1}},
    {"vae_shortcut_1x1_c64to32", 0, {.cin = 64, .h = 12, .w = 12, .cout = 32, .kh = 1, .kw = 1, .bias = 1}},
    /* UNet (320/640/1280 scaled to 40/80/160) */
    {"unet_3x3_c160_8x8", 0, {.cin = 160, .h = 8, .w = 8, .cout = 160, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1}},
    {"unet_conv_in_c4to40_9x9", 0, {.cin = 4, .h = 9, .w = 9, .cout = 40, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1}},
    {"3x3_s2_p1", Q, {.cin = 40, .h = 15, .w = 15, .cout = 40, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .bias = 1}},
    /* odd sizes */
    {"odd_7x5_3x3_c5to6", G | I, {.cin = 5, .h = 7, .w = 5, .cout = 6, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1}},
    {"input_1x1_3x3_p1", 0, {.cin = 8, .h = 1, .w = 1, .cout = 16, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1}},
    {"out_1x1_3x3_p0", 0, {.cin = 8, .h = 3, .w = 3, .cout = 8, .kh = 3, .kw = 3, .bias = 1}},
    {"1x1_s2_shortcut_9x8", 0, {.cin = 8, .h = 9, .w = 8, .cout = 12, .kh = 1, .kw = 1, .stride_h = 2, .stride_w = 2, .bias = 1}},
    {"1x1_c3to5_7x5", 0, {.cin = 3, .h = 7, .w = 5, .cout = 5, .kh = 1, .kw = 1}},
    {"rect_1x7_p0x3", 0, {.cin = 6, .h = 5, .w = 9, .cout = 7, .kh = 1, .kw = 7, .pad_w = 3, .bias = 1}},
    {"5x5_s3_p2_11x13", 0, {.cin = 6, .h = 11, .w = 13, .cout = 10, .kh = 5, .kw = 5, .stride_h = 3, .stride_w = 3, .pad_h = 2, .pad_w = 2, .bias = 1}},
    /* padding larger than kernel/2, dilation */
    {"3x3_p3", 0, {.cin = 6, .h = 6, .w = 6, .cout = 8, .kh = 3, .kw = 3, .pad_h = 3, .pad_w = 3, .bias = 1}},
    {"5x5_p4x1", 0, {.cin = 4, .h = 7, .w = 8, .cout = 5, .kh = 5, .kw = 5, .pad_h = 4, .pad_w = 1}},
    {"3x3_d2_p2", 0, {.cin = 8, .h = 10, .w = 10, .cout = 8, .kh = 3, .kw = 3, .pad_h = 2, .pad_w = 2, .dilation_h = 2, .dilation_w = 2, .bias = 1}},
    {"3x2_d3x1_s1x2_p1x0", 0, {.cin = 5, .h = 11, .w = 9, .cout = 4, .kh = 3, .kw = 2, .stride_w = 2, .pad_h = 1, .dilation_h = 3, .bias = 1}},
    /* groups */
    {"groups4_c16to32", 0, {.cin = 16, .h = 8, .w = 8, .cout = 32, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .groups = 4, .bias = 1}},
    {"depthwise_c24_9x9", 0, {.cin = 24, .h = 9, .w = 9, .cout = 24, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .groups = 24, .bias = 1}},
    {"depthwise_mult2_5x5", I, {.cin = 8, .h = 8, .w = 8, .cout = 16, .kh = 5, .kw = 5, .pad_h = 2, .pad_w = 2, .groups = 8}},
    /* every activation and the full epilogue */
    {"act_relu", 0, {.cin = 16, .h = 8, .w = 8, .cout = 16, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .act = DK_ACT_RELU}},
    {"act_silu", 0, {.cin = 16, .h = 8, .w = 8, .cout = 16, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .act = DK_ACT_SILU}},
    {"act_gelu", 0, {.cin = 16, .h = 8, .w = 8, .cout = 16, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .act = DK_ACT_GELU}},
    {"act_gelu_tanh", 0, {.cin = 16, .h = 8, .w = 8, .cout = 16, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .act = DK_ACT_GELU_TANH}},
    {"act_tanh", 0, {.cin = 16, .h = 8, .w = 8, .cout = 16, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .act = DK_ACT_TANH}},
    {"epilogue_silu_oscale0.5_rscale-0.75", Q, {.cin = 16, .h = 8, .w = 8, .cout = 24, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .residual = 1, .act = DK_ACT_SILU, .output_scale = 0.5f, .residual_scale = -0.75f}},
    {"upsample2_gelu_residual_7x5", G | I, {.cin = 8, .h = 7, .w = 5, .cout = 12, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .upsample = 2, .bias = 1, .residual = 1, .act = DK_ACT_GELU, .residual_scale = 0.5f}},
    {"upsample2_s2_d2_groups2", 0, {.cin = 8, .h = 6, .w = 5, .cout = 6, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 2, .pad_w = 1, .dilation_h = 2, .groups = 2, .upsample = 2, .bias = 1}},
    {"batch3_c16to8_6x6", 0, {.n = 3, .cin = 16, .h = 6, .w = 6, .cout = 8, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .residual = 1}},
    /* several GPU tiles in every GEMM dimension, none of them full */
    {"tiles_c48to192_20x20", 0, {.cin = 48, .h = 20, .w = 20, .cout = 192, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .residual = 1, .act = DK_ACT_SILU}},
    /* GPU tensor-core path (f16 NHWC, Cin % 32 == 0, Cout % 8 == 0): partial tiles, stride 2,
     * upsample, 1x1, residual; _outgap runs its element-wise epilogue */
    {"tc_s2_c96to136_b2_19x21_res", G, {.n = 2, .cin = 96, .h = 19, .w = 21, .cout = 136, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .bias = 1, .residual = 1, .act = DK_ACT_SILU}},
    {"tc_upsample2_c64to72_9x11_res", 0, {.cin = 64, .h = 9, .w = 11, .cout = 72, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .upsample = 2, .bias = 1, .residual = 1, .act = DK_ACT_GELU, .output_scale = 0.5f, .residual_scale = -1.5f}},
    {"tc_1x1_c256to264_13x7", 0, {.cin = 256, .h = 13, .w = 7, .cout = 264, .kh = 1, .kw = 1, .bias = 1}},
    /* HIP fast kernel (f16/bf16 NHWC, Cin per group % 32 == 0): groups, strided input */
    {"c32g_s2_groups2_c64to80_11x9", 0, {.cin = 64, .h = 11, .w = 9, .cout = 80, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .groups = 2, .bias = 1}},
    {"c32g_upsample2_c32to48_res_silu_9x7", G | I, {.cin = 32, .h = 9, .w = 7, .cout = 48, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .upsample = 2, .bias = 1, .residual = 1, .act = DK_ACT_SILU, .output_scale = 0.5f, .residual_scale = 0.75f}},
    /* Vulkan narrow-output direct conv (Cout/groups <= 8): several workgroups of 256
     * pixels, input-channel chunks of 128 (a partial last one), 4 and 8 channels */
    {"narrow_c136to3_19x23_res_silu", I, {.cin = 136, .h = 19, .w = 23, .cout = 3, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .residual = 1, .act = DK_ACT_SILU, .residual_scale = 0.5f}},
    {"narrow_up2_c128to3_res_silu_9x10", 0, {.cin = 128, .h = 9, .w = 10, .cout = 3, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .upsample = 2, .bias = 1, .residual = 1, .act = DK_ACT_SILU}},
    {"narrow_upsample2_c72to8_9x10", 0, {.cin = 72, .h = 9, .w = 10, .cout = 8, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .upsample = 2, .bias = 1}},
    /* HIP narrow kernel (dk_conv_narrow.hip; 16-byte channel vectors on channels-last input with
     * Cin/groups % 8 == 0, f32: % 4): Cout == 4 (one accumulator vector), taps in batches of 9
     * (5x5: three), several 64-pixel tiles and images, groups, 3 channel chunks of 128, Cout 1 */
    {"narrow_c64to4_tanh_10x9", Q, {.cin = 64, .h = 10, .w = 9, .cout = 4, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .act = DK_ACT_TANH}},
    {"narrow_5x5_c40to6_b2_12x70_res", I, {.n = 2, .cin = 40, .h = 12, .w = 70, .cout = 6, .kh = 5, .kw = 5, .pad_h = 2, .pad_w = 2, .bias = 1, .residual = 1, .act = DK_ACT_GELU, .output_scale = 0.5f, .residual_scale = -0.75f}},
    {"narrow_groups2_c32to6_s2_d2_15x17", 0, {.cin = 32, .h = 15, .w = 17, .cout = 6, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 2, .pad_w = 2, .dilation_h = 2, .dilation_w = 2, .groups = 2, .bias = 1, .act = DK_ACT_RELU}},
    {"narrow_1x1_c264to1_7x9", 0, {.cin = 264, .h = 7, .w = 9, .cout = 1, .kh = 1, .kw = 1, .bias = 1}},
    /* 3 taps along w over rows of a multiple of 4 pixels (the Vulkan lane groups' shared-column path):
     * two channel chunks (the second partial), 5-8 outputs, two images, dilation along h */
    {"narrow_c136to6_b2_9x12_res", 0, {.n = 2, .cin = 136, .h = 9, .w = 12, .cout = 6, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .residual = 1, .act = DK_ACT_SILU}},
    {"narrow_c128to3_d2x1_7x8", 0, {.cin = 128, .h = 7, .w = 8, .cout = 3, .kh = 3, .kw = 3, .pad_h = 2, .pad_w = 1, .dilation_h = 2, .bias = 1}},
    /* HIP Hopper TMA loads: pixel rows a multiple of 64 long, 64-channel slices
     * (padding from outside the tensor map, two images, a partial channel tile,
     * four warpgroups with a tail block, dilation, 1x1) */
    {"tma_b2_c64to72_10x64_res_silu", 0, {.n = 2, .cin = 64, .h = 10, .w = 64, .cout = 72, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .residual = 1, .act = DK_ACT_SILU}},
    {"tma4_c256to64_d2_3x128", 0, {.cin = 256, .h = 3, .w = 128, .cout = 64, .kh = 3, .kw = 3, .pad_h = 2, .pad_w = 2, .dilation_h = 2, .dilation_w = 2, .bias = 1}},
    {"tma_1x1_c128to136_5x64", 0, {.cin = 128, .h = 5, .w = 64, .cout = 136, .kh = 1, .kw = 1, .bias = 1}},
    /* boxes of 16 pixels (rows 80 and 48 long) */
    {"tma_box16_b2_c64to64_7x80_res", 0, {.n = 2, .cin = 64, .h = 7, .w = 80, .cout = 64, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .residual = 1}},
    {"tma_wide_c64to264_4x64_res", 0, {.cin = 64, .h = 4, .w = 64, .cout = 264, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .residual = 1}},
    {"tma_box16_c256to128_5x48", 0, {.cin = 256, .h = 5, .w = 48, .cout = 128, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .act = DK_ACT_SILU}},
    /* fused upsample as four phase convs with summed taps (HIP fast kernels):
     * phases with unequal tap counts and output extents, no padding, TMA loads */
    {"up2_phases_k4_p1_c32to40_res_6x7", 0, {.cin = 32, .h = 6, .w = 7, .cout = 40, .kh = 4, .kw = 4, .pad_h = 1, .pad_w = 1, .upsample = 2, .bias = 1, .residual = 1}},
    {"up2_phases_1x2_p0x1_c32to16_5x5", 0, {.cin = 32, .h = 5, .w = 5, .cout = 16, .kh = 1, .kw = 2, .pad_w = 1, .upsample = 2, .bias = 1, .act = DK_ACT_GELU}},
    {"up2_phases_k3_p0_c64to32_5x6", 0, {.cin = 64, .h = 5, .w = 6, .cout = 32, .kh = 3, .kw = 3, .upsample = 2, .bias = 1}},
    {"up2_groups2_c64to48_res_7x6", 0, {.cin = 64, .h = 7, .w = 6, .cout = 48, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .groups = 2, .upsample = 2, .bias = 1, .residual = 1}},
    /* phase rows of 128 pixels: the Vulkan conv's fixed 2x2 grid with halo staging where enabled */
    {"up2_halo_c32to32_res_3x128", 0, {.cin = 32, .h = 3, .w = 128, .cout = 32, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .upsample = 2, .bias = 1, .residual = 1}},
    {"up2_tma_b2_c64to64_res_silu_3x64", 0, {.n = 2, .cin = 64, .h = 3, .w = 64, .cout = 64, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .upsample = 2, .bias = 1, .residual = 1, .act = DK_ACT_SILU}},
    /* Vulkan halo staging (output rows a multiple of 128 long, 2-3 taps each way): two
     * images, two and three channel slices, stride 2 along h, 2-tap rows and columns,
     * both padded edges */
    {"halo_b2_c64to72_4x128_res_silu", 0, {.n = 2, .cin = 64, .h = 4, .w = 128, .cout = 72, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .residual = 1, .act = DK_ACT_SILU}},
    {"halo_s2x1_k3x2_c96to40_5x255", 0, {.cin = 96, .h = 5, .w = 255, .cout = 40, .kh = 3, .kw = 2, .stride_h = 2, .pad_h = 1, .pad_w = 1, .bias = 1}},
    {"halo_k2x3_c32to24_4x128", 0, {.cin = 32, .h = 4, .w = 128, .cout = 24, .kh = 2, .kw = 3, .pad_w = 1, .bias = 1}},
    /* KT x 1 kernels (the Vulkan tensor-core conv's tap grid compiled in, DK_VK_CM_MODE_FIXED_KX1,
     * which conv3d's time convs take): 3x1 padded along h with two images and a residual, 2x1 */
    {"taps_3x1_b2_c64to48_6x20_res", 0, {.n = 2, .cin = 64, .h = 6, .w = 20, .cout = 48, .kh = 3, .kw = 1, .pad_h = 1, .bias = 1, .residual = 1}},
    {"taps_2x1_c32to40_5x17_silu", 0, {.cin = 32, .h = 5, .w = 17, .cout = 40, .kh = 2, .kw = 1, .bias = 1, .act = DK_ACT_SILU}},
    /* the tensor-core conv's narrow tile (Vulkan: Cout <= 8, Cin % 32 == 0), on rows of 128 (where halo staging could apply) */
    {"narrow_tc_b2_c64to3_3x128_res_silu", 0, {.n = 2, .cin = 64, .h = 3, .w = 128, .cout = 3, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .residual = 1, .act = DK_ACT_SILU}},
    {"narrow_tc_c96to8_2x256", 0, {.cin = 96, .h = 2, .w = 256, .cout = 8, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1}},
    {"narrow_tc_k3x2_c32to5_4x129", 0, {.cin = 32, .h = 4, .w = 129, .cout = 5, .kh = 3, .kw = 2, .pad_h = 1, .bias = 1}},
    /* Cin % 32 != 0 on the tensor cores with the channels zero-padded (Vulkan): halo rows of
     * 128, two images with an input gap, the narrow tile, a stride */
    {"padded_cin_b2_c3to64_2x128_res_silu_ingap", I, {.n = 2, .cin = 3, .h = 2, .w = 128, .cout = 64, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .residual = 1, .act = DK_ACT_SILU}},
    {"padded_cin_narrow_c36to3_5x9", 0, {.cin = 36, .h = 5, .w = 9, .cout = 3, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1}},
    {"padded_cin_s2_c20to24_7x9", 0, {.cin = 20, .h = 7, .w = 9, .cout = 24, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1}},
    /* HIP: Cin % 32 != 0 on the fast GEMM from 1024 output pixels and 16 output channels on
     * (hipops_padded_cin): the input copied to channels-last scratch with its channels zero-padded
     * to 32 (40: 64, wgmma and TMA rows of 64 on Hopper), the weight packed the same way; the
     * epilogue's bias, residual (in place too), activations and scales unchanged */
    {"padded_cin_c3to128_40x40", Q, {.cin = 3, .h = 40, .w = 40, .cout = 128, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1}},
    {"padded_cin_c6to32_res_silu_40x40", I, {.cin = 6, .h = 40, .w = 40, .cout = 32, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .residual = 1, .act = DK_ACT_SILU, .output_scale = 0.5f, .residual_scale = -0.75f}},
    {"padded_cin_b2_c3to64_post_relu_res_inplace_32x36", G, {.n = 2, .cin = 3, .h = 32, .w = 36, .cout = 64, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .residual = 1, .res_inplace = 1, .act = DK_ACT_GELU, .post_act = DK_ACT_RELU}},
    {"padded_cin_c40to48_32x64", 0, {.cin = 40, .h = 32, .w = 64, .cout = 48, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1}},
    /* HIP: shallow reductions (Cin/groups x taps <= 32, Cout/groups > 8) on the direct kernel
     * (dk_conv_shallow.hip; the padded_cin cases of Cin 3 take it too): partial column, row and
     * channel tiles, Cout not a multiple of 8 (stores by element), fused upsample with dilation,
     * groups */
    {"shallow_c3to72_res_gelu_5x70", 0, {.cin = 3, .h = 5, .w = 70, .cout = 72, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .residual = 1, .act = DK_ACT_GELU}},
    {"shallow_up2_d2_c2to20_7x9", 0, {.cin = 2, .h = 7, .w = 9, .cout = 20, .kh = 3, .kw = 3, .pad_h = 2, .pad_w = 2, .dilation_h = 2, .dilation_w = 2, .upsample = 2, .bias = 1}},
    {"shallow_groups2_c6to32_21x7", 0, {.cin = 6, .h = 21, .w = 7, .cout = 32, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .groups = 2, .bias = 1}},
    /* padding per side (the VAE encoder's downsampler: 0 top/left, 1 bottom/right, 3x3 stride 2):
     * portable paths, top > bottom with a 4-wide kernel, pad_h given equal to pad_top, the GPU fast
     * paths (tensor cores / MFMA / wgmma with Cin % 64 == 0, TMA rows of 32, Vulkan halo rows of
     * 128), the fused upsample's phases, the narrow kernels and Vulkan's zero-padded Cin */
    {"pad_t0b1l0r1_s2_c8to12_9x8", Q, {.cin = 8, .h = 9, .w = 8, .cout = 12, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .sides = 1, .pad_bottom = 1, .pad_right = 1, .bias = 1}},
    {"pad_t2b1l0r3_k3x4_c6to5_7x6_res", G | I, {.cin = 6, .h = 7, .w = 6, .cout = 5, .kh = 3, .kw = 4, .sides = 1, .pad_top = 2, .pad_bottom = 1, .pad_right = 3, .bias = 1, .residual = 1}},
    {"pad_h1_t1b0l1r0_c8to8_6x5", 0, {.cin = 8, .h = 6, .w = 5, .cout = 8, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .sides = 1, .pad_top = 1, .pad_left = 1, .bias = 1}},
    {"tc_pad_t0b1l0r1_s2_c64to72_b2_11x10_res", 0, {.n = 2, .cin = 64, .h = 11, .w = 10, .cout = 72, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .sides = 1, .pad_bottom = 1, .pad_right = 1, .bias = 1, .residual = 1, .act = DK_ACT_SILU}},
    {"tma_pad_t1b0l0r2_c64to64_4x32", 0, {.cin = 64, .h = 4, .w = 32, .cout = 64, .kh = 3, .kw = 3, .sides = 1, .pad_top = 1, .pad_right = 2, .bias = 1}},
    {"halo_pad_t0b2l1r1_c32to16_3x128", 0, {.cin = 32, .h = 3, .w = 128, .cout = 16, .kh = 3, .kw = 3, .sides = 1, .pad_bottom = 2, .pad_left = 1, .pad_right = 1}},
    {"up2_pad_t1b0l0r2_c32to40_res_5x6", 0, {.cin = 32, .h = 5, .w = 6, .cout = 40, .kh = 3, .kw = 3, .upsample = 2, .sides = 1, .pad_top = 1, .pad_right = 2, .bias = 1, .residual = 1}},
    {"up2_pad_t0b1l2r0_c8to6_4x5", 0, {.cin = 8, .h = 4, .w = 5, .cout = 6, .kh = 3, .kw = 3, .upsample = 2, .sides = 1, .pad_bottom = 1, .pad_left = 2, .bias = 1}},
    {"narrow_pad_t0b1l0r1_s2_c64to4_9x9", 0, {.cin = 64, .h = 9, .w = 9, .cout = 4, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .sides = 1, .pad_bottom = 1, .pad_right = 1, .bias = 1}},
    {"padded_cin_pad_t0b1l0r1_s2_c3to32_8x8", 0, {.cin = 3, .h = 8, .w = 8, .cout = 32, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .sides = 1, .pad_bottom = 1, .pad_right = 1, .bias = 1}},
    /* the activation after the residual (TAESD's relu(conv(x) + x)) and the residual given as y's
     * own view (in place; _outgap: the element-wise epilogue), on each kernel family */
    {"post_relu_res_c16_8x8", Q, {.cin = 16, .h = 8, .w = 8, .cout = 16, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .residual = 1, .post_act = DK_ACT_RELU}},
    {"post_tanh_silu_res_inplace_c16to24_7x6", G, {.cin = 16, .h = 7, .w = 6, .cout = 24, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .residual = 1, .res_inplace = 1, .act = DK_ACT_SILU, .post_act = DK_ACT_TANH, .output_scale = 0.5f, .residual_scale = -0.75f}},
    {"tc_post_relu_res_inplace_c64_6x10", Q, {.cin = 64, .h = 6, .w = 10, .cout = 64, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .residual = 1, .res_inplace = 1, .post_act = DK_ACT_RELU}},
    {"tc_post_gelu_relu_c64to72_5x7", 0, {.cin = 64, .h = 5, .w = 7, .cout = 72, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .act = DK_ACT_RELU, .post_act = DK_ACT_GELU}},
    {"narrow_post_relu_res_inplace_c64to4_9x10", 0, {.cin = 64, .h = 9, .w = 10, .cout = 4, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .residual = 1, .res_inplace = 1, .post_act = DK_ACT_RELU}},
    {"up2_post_relu_res_inplace_c32to32_4x5", 0, {.cin = 32, .h = 4, .w = 5, .cout = 32, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .upsample = 2, .bias = 1, .residual = 1, .res_inplace = 1, .post_act = DK_ACT_RELU}},
    /* an f32 bias with 16-bit activations (any dtype's bias is f32 in the f32 cases): the
     * portable, fast / tensor-core (vector bias loads elsewhere), narrow and fused-upsample paths */
    {"f32bias_c8to12_7x6", 0, {.cin = 8, .h = 7, .w = 6, .cout = 12, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .f32_bias = 1, .act = DK_ACT_SILU}},
    {"tc_f32bias_c64to72_6x9_res", Q, {.cin = 64, .h = 6, .w = 9, .cout = 72, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .f32_bias = 1, .residual = 1}},
    {"narrow_f32bias_c64to4_7x8", 0, {.cin = 64, .h = 7, .w = 8, .cout = 4, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .f32_bias = 1}},
    {"up2_f32bias_c32to32_4x5", 0, {.cin = 32, .h = 4, .w = 5, .cout = 32, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .upsample = 2, .bias = 1, .f32_bias = 1}},
    {"tma_post_relu_res_inplace_c64to64_3x64", 0, {.cin = 64, .h = 3, .w = 64, .cout = 64, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1, .residual = 1, .res_inplace = 1, .post_act = DK_ACT_RELU}},
};

/* -------------------------------------------------------- conv_transpose2d */

static const hcb_conv hcb_convt[] = {
    /* the seed shape (Cin 512, Cout 256, k3, s2, p1, op1), spatially scaled down */
    {"seed_c512to256_k3_s2_p1_op1_4x4", Q, {.cin = 512, .h = 4, .w = 4, .cout = 256, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .output_padding_h = 1, .output_padding_w = 1, .bias = 1}},
    {"k3_s2_p1_op1_7x5", G | I, {.cin = 16, .h = 7, .w = 5, .cout = 8, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .output_padding_h = 1, .output_padding_w = 1, .bias = 1}},
    {"k4_s2_p1_6x6", 0, {.cin = 16, .h = 6, .w = 6, .cout = 16, .kh = 4, .kw = 4, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .bias = 1}},
    {"k3_s1_p1", 0, {.cin = 12, .h = 6, .w = 7, .cout = 10, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = 1}},
    {"k3_s3_p0_op2", 0, {.cin = 6, .h = 5, .w = 4, .cout = 7, .kh = 3, .kw = 3, .stride_h = 3, .stride_w = 3, .output_padding_h = 2, .output_padding_w = 2}},
    {"k3_s2_d2_p2_op1", 0, {.cin = 8, .h = 6, .w = 6, .cout = 8, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 2, .pad_w = 2, .dilation_h = 2, .dilation_w = 2, .output_padding_h = 1, .output_padding_w = 1, .bias = 1}},
    {"k5_s2_p3_pad_gt_half", 0, {.cin = 6, .h = 6, .w = 5, .cout = 6, .kh = 5, .kw = 5, .stride_h = 2, .stride_w = 2, .pad_h = 3, .pad_w = 3, .bias = 1}},
    {"groups2_k3_s2_p1_op1", 0, {.cin = 8, .h = 5, .w = 5, .cout = 12, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .output_padding_h = 1, .output_padding_w = 1, .groups = 2, .bias = 1}},
    {"depthwise_c8_k3_s2", 0, {.cin = 8, .h = 5, .w = 6, .cout = 8, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .output_padding_h = 1, .output_padding_w = 1, .groups = 8}},
    {"epilogue_silu_res_scales", Q, {.cin = 16, .h = 6, .w = 6, .cout = 8, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .output_padding_h = 1, .output_padding_w = 1, .bias = 1, .residual = 1, .act = DK_ACT_SILU, .output_scale = 1.5f, .residual_scale = 0.25f}},
    {"act_gelu_tanh_k2_s2", 0, {.cin = 8, .h = 5, .w = 5, .cout = 8, .kh = 2, .kw = 2, .stride_h = 2, .stride_w = 2, .bias = 1, .act = DK_ACT_GELU_TANH}},
    {"k2_s3_holes", 0, {.cin = 6, .h = 4, .w = 5, .cout = 5, .kh = 2, .kw = 2, .stride_h = 3, .stride_w = 3, .bias = 1}},
    /* 5x4 = 20 stride phases, some with no taps */
    {"k3x2_s5x4_p1_op2x1_holes", 0, {.cin = 32, .h = 3, .w = 4, .cout = 24, .kh = 3, .kw = 2, .stride_h = 5, .stride_w = 4, .pad_h = 1, .output_padding_h = 2, .output_padding_w = 1, .bias = 1}},
    {"k3_s2_p3", 0, {.cin = 6, .h = 6, .w = 7, .cout = 4, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 3, .pad_w = 3, .bias = 1}},
    {"input_1x1_k3_s2", 0, {.cin = 8, .h = 1, .w = 1, .cout = 4, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .bias = 1}},
    {"k2x3_s2x1_p0x1_op1x0", 0, {.cin = 6, .h = 5, .w = 7, .cout = 5, .kh = 2, .kw = 3, .stride_h = 2, .pad_w = 1, .output_padding_h = 1, .bias = 1}},
    {"batch2_k3_s2_p1_op1", 0, {.n = 2, .cin = 12, .h = 4, .w = 5, .cout = 6, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .output_padding_h = 1, .output_padding_w = 1, .bias = 1, .act = DK_ACT_RELU}},
    {"tc_c64to40_k3_s2_p1_op1_9x7_res", 0, {.cin = 64, .h = 9, .w = 7, .cout = 40, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .output_padding_h = 1, .output_padding_w = 1, .bias = 1, .residual = 1, .act = DK_ACT_RELU}},
    {"tiles_c96to160_k3_s2_p1_op1_13x11", 0, {.cin = 96, .h = 13, .w = 11, .cout = 160, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .output_padding_h = 1, .output_padding_w = 1, .bias = 1}},
    {"narrow_groups2_c48to10_k4_s2_p1_res_6x7", 0, {.cin = 48, .h = 6, .w = 7, .cout = 10, .kh = 4, .kw = 4, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .groups = 2, .bias = 1, .residual = 1, .act = DK_ACT_SILU, .residual_scale = 0.5f}},
    /* Vulkan halo staging with the input walked backwards (phases of 2x3 taps, 128 wide) */
    {"halo_c64to48_k3_s2x1_p1_op1x0_3x128", 0, {.cin = 64, .h = 3, .w = 128, .cout = 48, .kh = 3, .kw = 3, .stride_h = 2, .pad_h = 1, .pad_w = 1, .output_padding_h = 1, .bias = 1, .residual = 1}},
    {"narrow_c80to3_k3_s2_p1_op1_9x11", 0, {.cin = 80, .h = 9, .w = 11, .cout = 3, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .output_padding_h = 1, .output_padding_w = 1, .bias = 1}},
    /* fast kernels: 9 stride phases in launches of 4, 4 and 1, two images */
    {"phases9_b2_c64to32_k3_s3_p1_op2_5x6", 0, {.n = 2, .cin = 64, .h = 5, .w = 6, .cout = 32, .kh = 3, .kw = 3, .stride_h = 3, .stride_w = 3, .pad_h = 1, .pad_w = 1, .output_padding_h = 2, .output_padding_w = 2, .bias = 1, .residual = 1, .act = DK_ACT_SILU}},
    {"tma_wide_c64to256_k3_s2_p1_op1_2x32", 0, {.cin = 64, .h = 2, .w = 32, .cout = 256, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .output_padding_h = 1, .output_padding_w = 1, .bias = 1, .act = DK_ACT_SILU}},
    {"tma_box32_c64to72_k3_s2_p1_op1_4x32", 0, {.cin = 64, .h = 4, .w = 32, .cout = 72, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .output_padding_h = 1, .output_padding_w = 1, .bias = 1}},
    {"tma_b2_c64to48_k3_s2_p1_op1_res_3x64", 0, {.n = 2, .cin = 64, .h = 3, .w = 64, .cout = 48, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .output_padding_h = 1, .output_padding_w = 1, .bias = 1, .residual = 1}},
    /* the activation after the residual, the residual given as y's own view */
    {"post_relu_silu_res_inplace_k3_s2_p1_op1_5x6", G, {.cin = 16, .h = 5, .w = 6, .cout = 8, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .output_padding_h = 1, .output_padding_w = 1, .bias = 1, .residual = 1, .res_inplace = 1, .act = DK_ACT_SILU, .post_act = DK_ACT_RELU}},
    {"tc_post_tanh_res_inplace_c64to40_k3_s2_p1_op1_5x6", 0, {.cin = 64, .h = 5, .w = 6, .cout = 40, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .output_padding_h = 1, .output_padding_w = 1, .bias = 1, .residual = 1, .res_inplace = 1, .post_act = DK_ACT_TANH, .residual_scale = 0.5f}},
    {"tc_f32bias_c64to40_k3_s2_p1_op1_5x6", 0, {.cin = 64, .h = 5, .w = 6, .cout = 40, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .output_padding_h = 1, .output_padding_w = 1, .bias = 1, .f32_bias = 1}},
    {"c32g_groups2_c64to48_k3_s2_p1_op1_res_5x6", I, {.cin = 64, .h = 5, .w = 6, .cout = 48, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .output_padding_h = 1, .output_padding_w = 1, .groups = 2, .bias = 1, .residual = 1, .act = DK_ACT_GELU}},
};

/* ------------------------------------------------------------------ matmul */

static const hcb_mm hcb_matmul[] = {
    {"64x48x40_bias", Q, {.m = 64, .k = 48, .n = 40, .bias = 1}},
    {"b3_33x29x17_epilogue", G | I, {.batch = 3, .m = 33, .k = 29, .n = 17, .bias = 1, .residual = 1, .act = DK_ACT_GELU, .output_scale = 0.5f, .residual_scale = 2.0f}},
    {"b4_shared_b_at", Q, {.batch = 4, .m = 20, .k = 24, .n = 36, .b_shared = 1, .a_t = 1, .bias = 1}},
    {"b2_shared_a_bt", 0, {.batch = 2, .m = 15, .k = 40, .n = 22, .a_shared = 1, .b_t = 1}},
    {"at_bt_31x19x23", 0, {.m = 31, .k = 19, .n = 23, .a_t = 1, .b_t = 1, .act = DK_ACT_TANH}},
    {"b3_at_bt_relu", 0, {.batch = 3, .m = 9, .k = 33, .n = 14, .a_t = 1, .b_t = 1, .bias = 1, .act = DK_ACT_RELU}},
    {"1x1x1", 0, {.m = 1, .k = 1, .n = 1}},
    {"long_k_8x1024x8", 0, {.m = 8, .k = 1024, .n = 8}},
    {"vae_attn_proj_256x64x64", 0, {.m = 256, .k = 64, .n = 64, .bias = 1, .residual = 1}},
    {"tiles_300x260x200", 0, {.m = 300, .k = 260, .n = 200, .bias = 1}},
    /* one b for the batch and >= 128 rows: HIP runs it as a 1x1 conv (fast kernel), Vulkan
     * (K % 32, N % 8) on its tensor-core conv; b K-contiguous or stored [K, N] */
    {"bt_160x64x48_as_conv", 0, {.m = 160, .k = 64, .n = 48, .b_t = 1, .bias = 1, .act = DK_ACT_SILU}},
    {"post_relu_gelu_res_inplace_b2_33x29x17", G, {.batch = 2, .m = 33, .k = 29, .n = 17, .bias = 1, .residual = 1, .res_inplace = 1, .act = DK_ACT_GELU, .post_act = DK_ACT_RELU, .residual_scale = -1.0f}},
    {"as_conv_post_tanh_res_inplace_160x64x48", 0, {.m = 160, .k = 64, .n = 48, .b_t = 1, .bias = 1, .residual = 1, .res_inplace = 1, .post_act = DK_ACT_TANH}},
    {"f32bias_b2_17x24x20", 0, {.batch = 2, .m = 17, .k = 24, .n = 20, .bias = 1, .f32_bias = 1}},
    {"as_conv_f32bias_160x64x48", 0, {.m = 160, .k = 64, .n = 48, .bias = 1, .f32_bias = 1, .act = DK_ACT_GELU}},
    {"b2_kn_as_conv_160x96x40_res", 0, {.batch = 2, .m = 160, .k = 96, .n = 40, .b_shared = 1, .bias = 1, .residual = 1, .act = DK_ACT_GELU, .output_scale = 0.5f, .residual_scale = 1.5f}},
};

/* ------------------------------------------------------------------ linear */

static const hcb_mm hcb_linear[] = {
    {"64x80_to_40", Q | G, {.m = 64, .k = 80, .n = 40, .bias = 1}},
    {"b2_77x64_to_96_silu_res", 0, {.batch = 2, .m = 77, .k = 64, .n = 96, .bias = 1, .residual = 1, .act = DK_ACT_SILU}},
    {"weight_stored_kn", 0, {.m = 24, .k = 48, .n = 32, .b_t = 1, .bias = 1}},
    {"geglu_32x40_to_160_gelu_tanh", 0, {.m = 32, .k = 40, .n = 160, .bias = 1, .act = DK_ACT_GELU_TANH}},
    {"b3_x_shared_weight_no_bias", 0, {.batch = 3, .m = 5, .k = 7, .n = 9}},
    /* >= 128 rows, K a multiple of 32: HIP runs these as 1x1 convs (fast kernel) */
    {"b2_200x96_to_72_gelu_res_scaled", 0, {.batch = 2, .m = 200, .k = 96, .n = 72, .bias = 1, .residual = 1, .act = DK_ACT_GELU, .output_scale = 0.5f, .residual_scale = 2.0f}},
    {"post_relu_res_inplace_b2_200x96_to_72", 0, {.batch = 2, .m = 200, .k = 96, .n = 72, .bias = 1, .residual = 1, .res_inplace = 1, .post_act = DK_ACT_RELU}},
    {"vae_proj_384x64_to_64_res", Q, {.m = 384, .k = 64, .n = 64, .bias = 1, .residual = 1}},
};

/* -------------------------------------------------------------- group_norm */

static const hcb_norm hcb_group_norm[] = {
    {"vae_g32_c64_8x8", Q, {.shape = {1, 64, 8, 8}, .groups = 32, .eps = 1e-6f, .gamma = 1, .beta = 1}},
    {"vae_g32_c128_6x6_silu", 0, {.shape = {1, 128, 6, 6}, .groups = 32, .eps = 1e-6f, .gamma = 1, .beta = 1, .act = DK_ACT_SILU}},
    {"g4_no_affine", 0, {.shape = {1, 16, 5, 7}, .groups = 4, .eps = 1e-5f}},
    {"inplace_g8_silu", Q, {.shape = {1, 32, 6, 5}, .groups = 8, .eps = 1e-6f, .gamma = 1, .beta = 1, .act = DK_ACT_SILU, .inplace = 1}},
    {"inplace_no_affine", I, {.shape = {2, 12, 3, 5}, .groups = 3, .eps = 1e-5f, .inplace = 1}},
    {"g1_c6_7x5", 0, {.shape = {1, 6, 7, 5}, .groups = 1, .eps = 1e-5f, .gamma = 1, .beta = 1}},
    {"g_eq_c8_instance", 0, {.shape = {1, 8, 3, 3}, .groups = 8, .eps = 1e-5f, .gamma = 1, .beta = 1, .act = DK_ACT_GELU}},
    {"batch2_g4_c16_5x7", G | I, {.shape = {2, 16, 5, 7}, .groups = 4, .eps = 1e-5f, .gamma = 1, .beta = 1}},
    {"mean20_g4_c16_8x8", 0, {.shape = {1, 16, 8, 8}, .groups = 4, .eps = 1e-6f, .gamma = 1, .beta = 1, .mean = 20.0f}},
    {"1x1_g8_c32", 0, {.shape = {1, 32, 1, 1}, .groups = 8, .eps = 1e-5f, .gamma = 1, .beta = 1, .act = DK_ACT_TANH}},
    {"vae_g32_c128_32x32_silu", 0, {.shape = {1, 128, 32, 32}, .groups = 32, .eps = 1e-6f, .gamma = 1, .beta = 1, .act = DK_ACT_SILU}},
    /* several statistics chunks per group (GPU vector modes), mean far from 0 */
    {"chunks_b2_g32_c256_64x72_mean8", 0, {.shape = {2, 256, 64, 72}, .groups = 32, .eps = 1e-6f, .gamma = 1, .beta = 1, .act = DK_ACT_SILU, .mean = 8.0f}},
    /* the NHWC statistics merge: 512 channels (16 per group, several threads per
     * group), groups of 3 channels that straddle vectors, more groups than threads */
    {"c512_g32_24x20_mean4", 0, {.shape = {1, 512, 24, 20}, .groups = 32, .eps = 1e-6f, .gamma = 1, .beta = 1, .act = DK_ACT_SILU, .mean = 4.0f}},
    {"b2_c96_g32_9x11", 0, {.shape = {2, 96, 9, 11}, .groups = 32, .eps = 1e-6f, .gamma = 1, .beta = 1}},
    {"g_eq_c512_instance_6x5", 0, {.shape = {1, 512, 6, 5}, .groups = 512, .eps = 1e-5f, .gamma = 1, .beta = 1}},
    /* planes longer than one block's 2048 vectors (HIP's NCHW apply by planes, forced
     * by a test: several blocks per plane, walked in reverse) */
    {"planes_b2_g4_c8_136x136_mean3", 0, {.shape = {2, 8, 136, 136}, .groups = 4, .eps = 1e-6f, .gamma = 1, .beta = 1, .act = DK_ACT_SILU, .mean = 3.0f}},
    /* split GroupNorm (statistics per band of rows, merged, applied per band) */
    {"split_b2_g4_c16_9x7_silu", Q, {.shape = {2, 16, 9, 7}, .groups = 4, .eps = 1e-5f, .gamma = 1, .beta = 1, .act = DK_ACT_SILU, .split = 1}},
    /* gamma and beta in f32 with 16-bit x: whole and split */
    {"f32affine_g32_c64_6x5_silu", Q, {.shape = {1, 64, 6, 5}, .groups = 32, .eps = 1e-6f, .gamma = 1, .beta = 1, .act = DK_ACT_SILU, .f32_affine = 1}},
    {"split_f32affine_g4_c16_9x7", 0, {.shape = {2, 16, 9, 7}, .groups = 4, .eps = 1e-5f, .gamma = 1, .beta = 1, .f32_affine = 1, .split = 1}},
    {"split_no_affine_g3_c12_5x4", 0, {.shape = {1, 12, 5, 4}, .groups = 3, .eps = 1e-5f, .split = 1}},
    {"split_inplace_g32_c128_20x24_mean4", 0, {.shape = {1, 128, 20, 24}, .groups = 32, .eps = 1e-6f, .gamma = 1, .beta = 1, .act = DK_ACT_SILU, .mean = 4.0f, .inplace = 1, .split = 1}},
    {"split_chunks_g32_c256_64x72_mean8", 0, {.shape = {1, 256, 64, 72}, .groups = 32, .eps = 1e-6f, .gamma = 1, .beta = 1, .act = DK_ACT_SILU, .mean = 8.0f, .split = 1}},
    /* videos [N, C, T, H, W] (NCDHW, NDHWC): statistics over the frames too; split by
     * bands of frames, as a chunked video decoder does */
    {"video_g4_c8_3x4x5_silu", Q, {.ndim = 5, .shape = {1, 8, 3, 4, 5}, .groups = 4, .eps = 1e-6f, .gamma = 1, .beta = 1, .act = DK_ACT_SILU}},
    {"video_b2_g2_c4_2x3x3", G | I, {.ndim = 5, .shape = {2, 4, 2, 3, 3}, .groups = 2, .eps = 1e-5f, .gamma = 1, .beta = 1}},
    {"video_split_g4_c16_4x3x5_mean3", 0, {.ndim = 5, .shape = {1, 16, 4, 3, 5}, .groups = 4, .eps = 1e-6f, .gamma = 1, .beta = 1, .mean = 3.0f, .split = 1}},
};

/* -------------------------------------------------------------- layer_norm */

static const hcb_norm hcb_layer_norm[] = {
    {"2d_64x160", Q, {.ndim = 2, .shape = {64, 160}, .eps = 1e-5f, .gamma = 1, .beta = 1}},
    {"3d_b2_77x64", G | I, {.ndim = 3, .shape = {2, 77, 64}, .eps = 1e-5f, .gamma = 1, .beta = 1}},
    {"gamma_only", 0, {.ndim = 2, .shape = {9, 40}, .eps = 1e-5f, .gamma = 1}},
    {"beta_only", 0, {.ndim = 2, .shape = {9, 40}, .eps = 1e-5f, .beta = 1}},
    {"no_affine_1d", 0, {.ndim = 1, .shape = {80}, .eps = 1e-5f}},
    {"inplace_gelu", Q, {.ndim = 2, .shape = {16, 48}, .eps = 1e-5f, .gamma = 1, .beta = 1, .act = DK_ACT_GELU, .inplace = 1}},
    {"4d_2x3x5x40_silu", 0, {.ndim = 4, .shape = {2, 3, 5, 40}, .eps = 1e-6f, .gamma = 1, .beta = 1, .act = DK_ACT_SILU}},
    {"mean20_32x256", 0, {.ndim = 2, .shape = {32, 256}, .eps = 1e-5f, .gamma = 1, .beta = 1, .mean = 20.0f}},
    {"d3_odd", 0, {.ndim = 2, .shape = {7, 3}, .eps = 1e-5f, .gamma = 1, .beta = 1}},
    {"d512", 0, {.ndim = 2, .shape = {4, 512}, .eps = 1e-5f, .gamma = 1, .beta = 1}},
    {"rows300_d1280", 0, {.ndim = 2, .shape = {300, 1280}, .eps = 1e-5f, .gamma = 1, .beta = 1}},
    {"5d_2x2x3x2x40_silu", G, {.ndim = 5, .shape = {2, 2, 3, 2, 40}, .eps = 1e-5f, .gamma = 1, .beta = 1, .act = DK_ACT_SILU}},
};

/* ---------------------------------------------------------------- rms_norm */

#define MS DK_RMS_NORM_MEAN_SQUARE
#define L2 DK_RMS_NORM_L2
/* Inputs have a nonzero mean (0.5, or .mean), so a LayerNorm would differ. */
static const hcb_norm hcb_rms_norm[] = {
    {"ms_c16_5x7", Q, {.ndim = 4, .shape = {1, 16, 5, 7}, .form = MS, .eps = 1e-6f, .gamma = 1, .beta = 1}},
    {"l2_c24_6x5_silu", Q, {.ndim = 4, .shape = {1, 24, 6, 5}, .form = L2, .eps = 1e-12f, .gamma = 1, .act = DK_ACT_SILU}},
    {"ms_b2_c3_4x5_no_affine", G | I, {.ndim = 4, .shape = {2, 3, 4, 5}, .form = MS, .eps = 1e-5f}},
    {"l2_c13_beta_only_mean3", 0, {.ndim = 4, .shape = {1, 13, 3, 6}, .form = L2, .eps = 1e-12f, .beta = 1, .mean = 3.0f}},
    {"ms_inplace_c40_3x4_gelu", 0, {.ndim = 4, .shape = {1, 40, 3, 4}, .form = MS, .eps = 1e-6f, .gamma = 1, .beta = 1, .act = DK_ACT_GELU, .inplace = 1}},
    {"l2_f32affine_c32_4x4", Q, {.ndim = 4, .shape = {1, 32, 4, 4}, .form = L2, .eps = 1e-12f, .gamma = 1, .beta = 1, .f32_affine = 1}},
    {"l2_c384_3x3", 0, {.ndim = 4, .shape = {1, 384, 3, 3}, .form = L2, .eps = 1e-12f, .gamma = 1, .beta = 1}},
    {"ms_c200_2x5_tanh", 0, {.ndim = 4, .shape = {1, 200, 2, 5}, .form = MS, .eps = 1e-6f, .gamma = 1, .act = DK_ACT_TANH}},
    /* rows longer than the GPU kernels keep in registers (read twice): 16-byte
     * vectors (NHWC) and scalars (NCHW, and NHWC with C odd) */
    {"ms_c1040_1x2", 0, {.ndim = 4, .shape = {1, 1040, 1, 2}, .form = MS, .eps = 1e-6f, .gamma = 1, .beta = 1}},
    {"l2_c1041_2x1_inplace", 0, {.ndim = 4, .shape = {1, 1041, 2, 1}, .form = L2, .eps = 1e-12f, .gamma = 1, .inplace = 1}},
    /* 2-D [N, C] (channel-contiguous) and 3-D [N, C, L] (channel-strided) rows */
    {"2d_l2_b9_c40", 0, {.ndim = 2, .shape = {9, 40}, .form = L2, .eps = 1e-12f, .gamma = 1, .beta = 1}},
    {"3d_ms_b2_c12_l11", 0, {.ndim = 3, .shape = {2, 12, 11}, .form = MS, .eps = 1e-6f, .gamma = 1}},
    /* videos [N, C, T, H, W] (NCDHW, NDHWC): the Wan VAE's RMS_norm */
    {"video_l2_c16_3x4x5_silu", Q, {.ndim = 5, .shape = {1, 16, 3, 4, 5}, .form = L2, .eps = 1e-12f, .gamma = 1, .beta = 1, .act = DK_ACT_SILU}},
    {"video_ms_b2_c5_2x3x3", G | I, {.ndim = 5, .shape = {2, 5, 2, 3, 3}, .form = MS, .eps = 1e-6f, .gamma = 1, .beta = 1}},
    {"video_l2_inplace_c96_2x3x2", 0, {.ndim = 5, .shape = {1, 96, 2, 3, 2}, .form = L2, .eps = 1e-12f, .gamma = 1, .inplace = 1}},
    /* several tiles of positions x channels per batch in the GPU kernels'
     * staged column tile (NCDHW, whole vectors of positions) */
    {"video_ms_b2_c384_2x4x8_tiles", 0, {.ndim = 5, .shape = {2, 384, 2, 4, 8}, .form = MS, .eps = 1e-6f, .gamma = 1, .beta = 1, .act = DK_ACT_SILU}},
    {"video_l2_inplace_c48_3x2x8_tiles", 0, {.ndim = 5, .shape = {1, 48, 3, 2, 8}, .form = L2, .eps = 1e-12f, .gamma = 1, .inplace = 1}},
    {"video_l2_f32affine_c3_2x2x5_mean4", 0, {.ndim = 5, .shape = {1, 3, 2, 2, 5}, .form = L2, .eps = 1e-12f, .gamma = 1, .beta = 1, .f32_affine = 1, .mean = 4.0f}},
};
#undef MS
#undef L2

/* --------------------------------------------------------------- attention */

static const hcb_attn hcb_attention[] = {
    {"vae_mid_h1_d512_n64", Q, {.b = 1, .heads = 1, .nq = 64, .nkv = 64, .d = 512, .dv = 512}},
    {"sd15_h2_d40_n64_bnhd", 0, {.b = 1, .heads = 2, .nq = 64, .nkv = 64, .d = 40, .dv = 40, .storage = HC_BNHD}},
    {"sdxl_cross_d64_nq64_nkv77_bnhd", Q, {.b = 2, .heads = 2, .nq = 64, .nkv = 77, .d = 64, .dv = 64, .storage = HC_BNHD}},
    {"d80_nq33_nkv20", 0, {.b = 1, .heads = 3, .nq = 33, .nkv = 20, .d = 80, .dv = 80}},
    {"d128_nq17_nkv50", 0, {.b = 1, .heads = 2, .nq = 17, .nkv = 50, .d = 128, .dv = 128}},
    {"qkv_packed_d64_n48", 0, {.b = 2, .heads = 2, .nq = 48, .nkv = 48, .d = 64, .dv = 64, .storage = HC_QKV_PACKED}},
    {"dv40_ne_d64", 0, {.b = 1, .heads = 2, .nq = 24, .nkv = 31, .d = 64, .dv = 40}},
    {"dv512_ne_d64_bnhd", 0, {.b = 1, .heads = 1, .nq = 9, .nkv = 16, .d = 64, .dv = 512, .storage = HC_BNHD}},
    {"nq1_nkv100", 0, {.b = 2, .heads = 1, .nq = 1, .nkv = 100, .d = 64, .dv = 64}},
    {"nkv1", 0, {.b = 1, .heads = 2, .nq = 5, .nkv = 1, .d = 40, .dv = 40}},
    {"scale0.05_d64", 0, {.b = 1, .heads = 1, .nq = 16, .nkv = 16, .d = 64, .dv = 64, .scale = 0.05f}},
    /* a negative scale: kernels that take row maxima before scaling must flip signs */
    {"scale_neg_d64_nkv150", 0, {.b = 1, .heads = 2, .nq = 20, .nkv = 150, .d = 64, .dv = 64, .scale = -0.3f}},
    {"scale_neg_d128_nkv70", 0, {.b = 1, .heads = 1, .nq = 33, .nkv = 70, .d = 128, .dv = 128, .scale = -0.2f}},
    {"large_logits_std50_d64", 0, {.b = 1, .heads = 2, .nq = 16, .nkv = 40, .d = 64, .dv = 64, .q_range = 150.0f}},
    {"long_kv_300_d64", 0, {.b = 1, .heads = 1, .nq = 8, .nkv = 300, .d = 64, .dv = 64}},
    {"d512_bnhd_batch2", 0, {.b = 2, .heads = 2, .nq = 12, .nkv = 20, .d = 512, .dv = 512, .storage = HC_BNHD}},
    {"tiles_nq200_nkv333_d64", 0, {.b = 1, .heads = 2, .nq = 200, .nkv = 333, .d = 64, .dv = 64}},
    /* HIP split-KV (small grids): ranges of 128 keys, the last one ragged */
    {"splitkv_d256_nq40_nkv700", 0, {.b = 1, .heads = 1, .nq = 40, .nkv = 700, .d = 256, .dv = 256}},
    /* Vulkan tensor-core path (f16; Nq, Nkv, D, Dv multiples of 16): partial row and key
     * blocks of each column-group shape, strided views, Dv != D, large logits */
    {"tc_d64_b2_h3_nq96_nkv160_bnhd", 0, {.b = 2, .heads = 3, .nq = 96, .nkv = 160, .d = 64, .dv = 64, .storage = HC_BNHD}},
    {"tc_d128_nq48_nkv272", 0, {.b = 1, .heads = 2, .nq = 48, .nkv = 272, .d = 128, .dv = 128}},
    {"tc_d256_n80_qkv_packed", 0, {.b = 1, .heads = 2, .nq = 80, .nkv = 80, .d = 256, .dv = 256, .storage = HC_QKV_PACKED}},
    {"tc_d96_dv192_nq32_nkv144", 0, {.b = 2, .heads = 1, .nq = 32, .nkv = 144, .d = 96, .dv = 192}},
    {"tc_d512_b2_nq80_nkv176_logits", 0, {.b = 2, .heads = 1, .nq = 80, .nkv = 176, .d = 512, .dv = 512, .q_range = 150.0f}},
    {"tc_d512_nq256_nkv256_bnhd", 0, {.b = 1, .heads = 2, .nq = 256, .nkv = 256, .d = 512, .dv = 512, .storage = HC_BNHD}},
    /* ... with 64 query rows per workgroup (taken by default where that grid has >= 72 workgroups;
     * DIFKERN_VULKAN_ATTN_R64=1 forces it on every case above): partial row, key and dimension slices */
    {"tc_r64_b2_h64_nq80_nkv48_d144_dv160", 0, {.b = 2, .heads = 64, .nq = 80, .nkv = 48, .d = 144, .dv = 160}},
    /* ... with Nq and Nkv not multiples of 16 (CG 8 and R64 mask rows and keys one by one) and D,
     * Dv multiples of 8 only: a 17-vector head dimension (half of its last 16-dim step is zeros),
     * 8 output columns in the last fragment, fewer keys than one 16-key group */
    {"tc_any_b2_h64_nq70_nkv37_d136_dv152", 0, {.b = 2, .heads = 64, .nq = 70, .nkv = 37, .d = 136, .dv = 152, .q_range = 150.0f}},
    {"tc_any_nq33_nkv5_d264_dv200_bnhd", 0, {.b = 1, .heads = 2, .nq = 33, .nkv = 5, .d = 264, .dv = 200, .storage = HC_BNHD}},
    /* ... and its small-head shader (D, Dv <= 64 multiples of 8, any Nq and Nkv: 128 query rows
     * per workgroup, 32-key blocks): a workgroup with one busy subgroup, a half-valid last block,
     * D != Dv both ways, partial 16-row / 16-key / 16-dimension fragments (and the cases above
     * with D 40 or 64) */
    {"tc_rows_d32_dv48_nq144_nkv208_logits", 0, {.b = 1, .heads = 2, .nq = 144, .nkv = 208, .d = 32, .dv = 48, .q_range = 150.0f}},
    {"tc_rows_d48_dv16_b2_nq32_nkv96_bnhd", 0, {.b = 2, .heads = 1, .nq = 32, .nkv = 96, .d = 48, .dv = 16, .storage = HC_BNHD}},
    {"tc_rows_d40_nq150_nkv77_logits", 0, {.b = 1, .heads = 2, .nq = 150, .nkv = 77, .d = 40, .dv = 40, .q_range = 150.0f}},
    {"tc_rows_d8_dv24_nq20_nkv45", 0, {.b = 1, .heads = 1, .nq = 20, .nkv = 45, .d = 8, .dv = 24}},
    /* ... 128 wide (D or Dv in 65..128; single-buffered K/V, Q staged in two passes) */
    {"tc_rows_d72_dv128_nq130_nkv70", 0, {.b = 1, .heads = 2, .nq = 130, .nkv = 70, .d = 72, .dv = 128}},
    {"tc_rows_d128_dv56_b2_nq40_nkv100_logits_bnhd", 0, {.b = 2, .heads = 1, .nq = 40, .nkv = 100, .d = 128, .dv = 56, .q_range = 150.0f, .storage = HC_BNHD}},
    /* Vulkan portable flash attention (64 or 32 queries x 64 or 128 keys per block; O tile by
     * Dv <= 64/128/256, larger Dv in 256-column dispatches; 16-byte loads where the head
     * dimension is a multiple of 8, else scalar): partial query and key blocks, Dv != D,
     * scalar Q/K with vector V and the reverse, a Dv tail chunk */
    {"pf_d256_dv128_nq130_nkv200", 0, {.b = 1, .heads = 2, .nq = 130, .nkv = 200, .d = 256, .dv = 128}},
    {"pf_d512_nq70_nkv130_bnhd", 0, {.b = 1, .heads = 1, .nq = 70, .nkv = 130, .d = 512, .dv = 512, .storage = HC_BNHD}},
    {"pf_d36_dv200_nq65_nkv67", 0, {.b = 2, .heads = 1, .nq = 65, .nkv = 67, .d = 36, .dv = 200}},
    {"pf_d16_dv20_nq3_nkv129", 0, {.b = 1, .heads = 2, .nq = 3, .nkv = 129, .d = 16, .dv = 20}},
    {"pf_d8_dv300_n64_logits", 0, {.b = 1, .heads = 1, .nq = 64, .nkv = 64, .d = 8, .dv = 300, .q_range = 150.0f}},
    {"pf_d64_dv264_nq40_nkv70_bnhd", 0, {.b = 1, .heads = 2, .nq = 40, .nkv = 70, .d = 64, .dv = 264, .storage = HC_BNHD}},
    /* two batch dims [b, b2, heads, n, d] (5-D views): merged, and (per-frame attention
     * over NCDHW videos: the batch dims do not merge) one call per b */
    {"b2_3_d64_n40_bnhd", 0, {.b = 2, .b2 = 3, .heads = 2, .nq = 40, .nkv = 24, .d = 64, .dv = 64, .storage = HC_BNHD}},
    {"frames_ncdhw_b2_t3_c32_hw30", Q, {.b = 2, .b2 = 3, .heads = 1, .nq = 30, .nkv = 30, .d = 32, .dv = 32, .storage = HC_VIDEO_NCDHW}},
};

/* ------------------------------------------------------------- elementwise */

static const hcb_ew hcb_add[] = {
    {"1x32x9x7", Q | G | I, {.n = 1, .c = 32, .h = 9, .w = 7, .alpha = 1.0f, .beta = 1.0f}},
    {"scaled_0.5_-1.5_silu", 0, {.n = 2, .c = 6, .h = 5, .w = 3, .alpha = 0.5f, .beta = -1.5f, .act = DK_ACT_SILU}},
    {"inplace_a_gelu", 0, {.n = 1, .c = 8, .h = 4, .w = 6, .alpha = 1.0f, .beta = 0.7f, .act = DK_ACT_GELU, .inplace = 1}},
    {"inplace_b_relu", Q, {.n = 1, .c = 8, .h = 4, .w = 6, .alpha = -1.0f, .beta = 1.0f, .act = DK_ACT_RELU, .inplace = 2}},
    {"1x1x1x1", 0, {.n = 1, .c = 1, .h = 1, .w = 1, .alpha = 2.0f, .beta = 1.0f}},
    {"misaligned_b_2x6x5x3", 0, {.n = 2, .c = 6, .h = 5, .w = 3, .alpha = 1.0f, .beta = -1.0f, .misalign = 1}},
    {"video_2x6x3x4x5", Q, {.n = 2, .c = 6, .t = 3, .h = 4, .w = 5, .alpha = 1.0f, .beta = -0.5f}},
    {"video_inplace_silu_1x8x2x3x4", G | I, {.n = 1, .c = 8, .t = 2, .h = 3, .w = 4, .alpha = 1.0f, .beta = 1.0f, .act = DK_ACT_SILU, .inplace = 1}},
};

static const hcb_ew hcb_activation[] = {
    {"relu", 0, {.n = 2, .c = 13, .h = 5, .w = 3, .act = DK_ACT_RELU}},
    {"silu", Q, {.n = 2, .c = 13, .h = 5, .w = 3, .act = DK_ACT_SILU}},
    {"gelu", 0, {.n = 2, .c = 13, .h = 5, .w = 3, .act = DK_ACT_GELU}},
    {"gelu_tanh", 0, {.n = 2, .c = 13, .h = 5, .w = 3, .act = DK_ACT_GELU_TANH}},
    {"tanh", 0, {.n = 2, .c = 13, .h = 5, .w = 3, .act = DK_ACT_TANH}},
    {"none_copy", G | I, {.n = 1, .c = 7, .h = 6, .w = 5, .act = DK_ACT_NONE}},
    {"inplace_silu", Q, {.n = 1, .c = 16, .h = 4, .w = 4, .act = DK_ACT_SILU, .inplace = 1}},
    {"misaligned_y_silu", 0, {.n = 1, .c = 16, .h = 4, .w = 4, .act = DK_ACT_SILU, .misalign = 1}},
    {"video_silu_2x5x3x4x6", Q | G | I, {.n = 2, .c = 5, .t = 3, .h = 4, .w = 6, .act = DK_ACT_SILU}},
};

/* Every activation with scales other than 1 (TAESD's clamp 3*tanh(x/3) among them),
 * a negative and a tiny output scale, in place, strided views, a misaligned output
 * and layout changes (x NCHW, y NHWC and back): c32_w33 takes the backends'
 * tiled-transpose paths (both transposed dims >= 32 on the GPUs, >= 8 on the
 * CPU), the other the strided walk on the GPUs. */
static const hcb_ew hcb_activation_scaled[] = {
    {"none_2_-0.5", 0, {.n = 2, .c = 13, .h = 5, .w = 3, .act = DK_ACT_NONE, .in_scale = 2.0f, .out_scale = -0.5f}},
    {"relu_-1.5_0.25", 0, {.n = 2, .c = 13, .h = 5, .w = 3, .act = DK_ACT_RELU, .in_scale = -1.5f, .out_scale = 0.25f}},
    {"silu_0.5_3", Q, {.n = 2, .c = 13, .h = 5, .w = 3, .act = DK_ACT_SILU, .in_scale = 0.5f, .out_scale = 3.0f}},
    {"gelu_1.7_-2", 0, {.n = 2, .c = 13, .h = 5, .w = 3, .act = DK_ACT_GELU, .in_scale = 1.7f, .out_scale = -2.0f}},
    {"gelu_tanh_0.3_1e-3", 0,
     {.n = 2, .c = 13, .h = 5, .w = 3, .act = DK_ACT_GELU_TANH, .in_scale = 0.3f, .out_scale = 1e-3f}},
    {"tanh_clamp3", Q | G | I, {.n = 1, .c = 7, .h = 6, .w = 5, .act = DK_ACT_TANH, .in_scale = 1.0f / 3.0f, .out_scale = 3.0f}},
    {"inplace_tanh_clamp3", Q,
     {.n = 1, .c = 16, .h = 4, .w = 4, .act = DK_ACT_TANH, .in_scale = 1.0f / 3.0f, .out_scale = 3.0f, .inplace = 1}},
    {"inplace_gelu_2_0.5", 0,
     {.n = 2, .c = 5, .h = 3, .w = 7, .act = DK_ACT_GELU, .in_scale = 2.0f, .out_scale = 0.5f, .inplace = 1}},
    {"misaligned_y_silu_-1_2", 0,
     {.n = 1, .c = 16, .h = 4, .w = 4, .act = DK_ACT_SILU, .in_scale = -1.0f, .out_scale = 2.0f, .misalign = 1}},
    {"layout_change_tanh_clamp3_c32_w33", 0,
     {.n = 1, .c = 32, .h = 3, .w = 33, .act = DK_ACT_TANH, .in_scale = 1.0f / 3.0f, .out_scale = 3.0f, .other_layout = 1}},
    {"layout_change_relu_0.5_-3", 0,
     {.n = 2, .c = 36, .h = 4, .w = 9, .act = DK_ACT_RELU, .in_scale = 0.5f, .out_scale = -3.0f, .other_layout = 1}},
    {"video_layout_change_gelu_2_0.5", Q,
     {.n = 2, .c = 9, .t = 3, .h = 4, .w = 5, .act = DK_ACT_GELU, .in_scale = 2.0f, .out_scale = 0.5f, .other_layout = 1}},
};

static const hcb_ew hcb_upsample[] = {
    {"2x_c4_8x8", Q, {.n = 2, .c = 4, .h = 8, .w = 8, .oh = 16, .ow = 16}},
    {"2x_odd_7x5", G | I, {.n = 1, .c = 3, .h = 7, .w = 5, .oh = 14, .ow = 10}},
    {"ratio1.5_4x6_to_6x9", 0, {.n = 1, .c = 5, .h = 4, .w = 6, .oh = 6, .ow = 9}},
    {"ratio_7x5_to_10x12", 0, {.n = 1, .c = 2, .h = 7, .w = 5, .oh = 10, .ow = 12}},
    {"down_9x7_to_4x5", 0, {.n = 1, .c = 3, .h = 9, .w = 7, .oh = 4, .ow = 5}},
    {"1x1_to_3x5", 0, {.n = 1, .c = 6, .h = 1, .w = 1, .oh = 3, .ow = 5}},
    /* the GPU vector paths (integer factors, rows of whole 16-byte vectors along
     * the unit-stride dim): C in NHWC, W in NCHW (each element repeated f times),
     * the factors 2 and 4 specialized, others generic; a misaligned y takes the walk */
    {"2x_c16_5x3", Q, {.n = 2, .c = 16, .h = 5, .w = 3, .oh = 10, .ow = 6}},
    {"3x2_c8_3x16", 0, {.n = 1, .c = 8, .h = 3, .w = 16, .oh = 9, .ow = 32}},
    {"2x4_c8_3x8", 0, {.n = 1, .c = 8, .h = 3, .w = 8, .oh = 6, .ow = 32}},
    {"1x3_c24_2x8", 0, {.n = 2, .c = 24, .h = 2, .w = 8, .oh = 2, .ow = 24}},
    {"2x_misaligned_y_c16_4x8", 0, {.n = 1, .c = 16, .h = 4, .w = 8, .oh = 8, .ow = 16, .misalign = 1}},
    /* videos: per-frame 2x (frames as images), time 2x (T and H*W as an image), both
     * (one call per output frame), with gaps (other walks) */
    {"video_frames_2x_b2_c4_3x4x5", Q, {.n = 2, .c = 4, .t = 3, .h = 4, .w = 5, .ot = 3, .oh = 8, .ow = 10}},
    {"video_time_2x_c8_2x3x4", Q, {.n = 1, .c = 8, .t = 2, .h = 3, .w = 4, .ot = 4, .oh = 3, .ow = 4}},
    {"video_both_2x_c3_2x3x4", 0, {.n = 1, .c = 3, .t = 2, .h = 3, .w = 4, .ot = 4, .oh = 6, .ow = 8}},
    {"video_time_2x_b2_c4_3x2x3", G | I, {.n = 2, .c = 4, .t = 3, .h = 2, .w = 3, .ot = 6, .oh = 2, .ow = 3}},
};

/* ------------------------------------------------------------------ conv3d */

/* Video VAE convs (Wan 2.1, HunyuanVideo) scaled down: causal 3x3x3 (pad_front 2), the 3x1x1
 * time convs of the upsamplers, 1x1x1, strides, dilation, groups; a cache of 1 or 2 frames
 * (dk_conv3d_chunk).  The NDHWC cases store the weight [O, KT, KH, KW, I], which the staged
 * path copies (the NCDHW ones are a view); every path (frames, time, staged) and its border
 * frames are hit. */
static const hcb_c3 hcb_conv3d[] = {
    {"causal_3x3x3_c8to8_t4_5x6", Q, {.cin = 8, .t = 4, .h = 5, .w = 6, .cout = 8, .kt = 3, .kh = 3, .kw = 3, .pad_front = 2, .pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1, .bias = 1}},
    {"causal_3x3x3_cache2_c12to16_t3_4x5_silu", Q, {.cin = 12, .t = 3, .h = 4, .w = 5, .cout = 16, .kt = 3, .kh = 3, .kw = 3, .pad_front = 2, .pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1, .tc = 2, .bias = 1, .act = DK_ACT_SILU}},
    {"causal_3x3x3_cache1_c5to6_t1_4x4_res", 0, {.cin = 5, .t = 1, .h = 4, .w = 4, .cout = 6, .kt = 3, .kh = 3, .kw = 3, .pad_front = 2, .pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1, .tc = 1, .bias = 1, .residual = 1}},
    {"time_3x1x1_c8to16_t3_4x5", Q, {.cin = 8, .t = 3, .h = 4, .w = 5, .cout = 16, .kt = 3, .kh = 1, .kw = 1, .pad_front = 2, .bias = 1}},
    {"time_3x1x1_cache2_c6to12_t1_3x4", G | I, {.cin = 6, .t = 1, .h = 3, .w = 4, .cout = 12, .kt = 3, .kh = 1, .kw = 1, .pad_front = 2, .tc = 2, .bias = 1, .f32_bias = 1}},
    {"time_3x1x1_cache1_c8to8_t4_3x3_res_inplace", 0, {.cin = 8, .t = 4, .h = 3, .w = 3, .cout = 8, .kt = 3, .kh = 1, .kw = 1, .pad_front = 2, .tc = 1, .residual = 1, .res_inplace = 1, .post_act = DK_ACT_RELU}},
    {"point_1x1x1_c7to9_t3_4x4", Q, {.cin = 7, .t = 3, .h = 4, .w = 4, .cout = 9, .kt = 1, .kh = 1, .kw = 1, .bias = 1, .act = DK_ACT_GELU}},
    {"frames_1x3x3_s2_c8to4_b2_t3_5x5", 0, {.n = 2, .cin = 8, .t = 3, .h = 5, .w = 5, .cout = 4, .kt = 1, .kh = 3, .kw = 3, .stride_t = 2, .stride_h = 2, .stride_w = 2, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1, .bias = 1}},
    {"frames_1x3x3_padt1_c4to4_t2_4x4", G, {.cin = 4, .t = 2, .h = 4, .w = 4, .cout = 4, .kt = 1, .kh = 3, .kw = 3, .pad_front = 1, .pad_back = 1, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1, .bias = 1}},
    /* one frame through stride_t 2: the per-frame path's single-frame view (--size1-strides) */
    {"frames_1x3x3_st2_c8to6_t1_5x5", Q, {.cin = 8, .t = 1, .h = 5, .w = 5, .cout = 6, .kt = 1, .kh = 3, .kw = 3, .stride_t = 2, .pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1, .bias = 1}},
    {"s2_3x3x3_c6to8_t5_7x6", 0, {.cin = 6, .t = 5, .h = 7, .w = 6, .cout = 8, .kt = 3, .kh = 3, .kw = 3, .stride_t = 2, .stride_h = 2, .stride_w = 2, .pad_front = 1, .pad_back = 1, .pad_top = 1, .pad_left = 1, .bias = 1}},
    {"dil2_3x3x3_c4to6_t6_6x6_sides", 0, {.cin = 4, .t = 6, .h = 6, .w = 6, .cout = 6, .kt = 3, .kh = 3, .kw = 2, .dilation_t = 2, .dilation_h = 2, .pad_front = 3, .pad_back = 1, .pad_top = 2, .pad_bottom = 0, .pad_left = 0, .pad_right = 1, .residual = 1, .output_scale = 0.5f, .residual_scale = 1.5f}},
    {"groups2_2x3x3_c8to6_t3_4x5", G | I, {.cin = 8, .t = 3, .h = 4, .w = 5, .cout = 6, .kt = 2, .kh = 3, .kw = 3, .groups = 2, .pad_front = 1, .pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1, .bias = 1}},
    {"time_dil2_s2_3x1x1_groups2_c4to4_t7_2x3", 0, {.cin = 4, .t = 7, .h = 2, .w = 3, .cout = 4, .kt = 3, .kh = 1, .kw = 1, .stride_t = 2, .dilation_t = 2, .groups = 2, .pad_front = 2, .pad_back = 2, .bias = 1, .act = DK_ACT_TANH}},
    {"causal_3x3x3_res_inplace_f32bias_c8to8_t2_4x4", 0, {.cin = 8, .t = 2, .h = 4, .w = 4, .cout = 8, .kt = 3, .kh = 3, .kw = 3, .pad_front = 2, .pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1, .bias = 1, .f32_bias = 1, .residual = 1, .res_inplace = 1, .act = DK_ACT_SILU}},
    {"frames_1x3x3_cache1_c4to6_t2_4x4", 0, {.cin = 4, .t = 2, .h = 4, .w = 4, .cout = 6, .kt = 1, .kh = 3, .kw = 3, .pad_front = 1, .tc = 1, .pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1, .bias = 1}},
    {"time_s2_3x1x1_cache2_c4to8_t5_3x3", 0, {.cin = 4, .t = 5, .h = 3, .w = 3, .cout = 8, .kt = 3, .kh = 1, .kw = 1, .stride_t = 2, .pad_front = 2, .tc = 2, .bias = 1, .act = DK_ACT_SILU}},
    /* 64 channels: HIP reads these in place (every kernel family; on Hopper rows of 16 take the TMA
     * kernels), and Vulkan's tensor-core conv the 3x1x1 one with its cache */
    {"tc_causal_3x3x3_s2_c64to64_t5_3x16", Q, {.cin = 64, .t = 5, .h = 3, .w = 16, .cout = 64, .kt = 3, .kh = 3, .kw = 3, .stride_t = 2, .pad_front = 2, .pad_back = 1, .pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1, .bias = 1}},
    {"tc_causal_3x3x3_cache1_c64to48_t2_3x12_res", Q, {.cin = 64, .t = 2, .h = 3, .w = 12, .cout = 48, .kt = 3, .kh = 3, .kw = 3, .pad_front = 2, .tc = 1, .pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1, .bias = 1, .residual = 1, .act = DK_ACT_SILU}},
    {"tc_time_3x1x1_cache2_c64to48_t2_3x8_res", Q, {.cin = 64, .t = 2, .h = 3, .w = 8, .cout = 48, .kt = 3, .kh = 1, .kw = 1, .pad_front = 2, .tc = 2, .bias = 1, .residual = 1, .act = DK_ACT_SILU}},
    {"tc_causal_3x3x3_cache2_c32to32_t2_4x6", 0, {.cin = 32, .t = 2, .h = 4, .w = 6, .cout = 32, .kt = 3, .kh = 3, .kw = 3, .pad_front = 2, .pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1, .tc = 2, .bias = 1}},
};

/* ------------------------------------------------------------------ names */

const char *hc_op_name(hc_op op) {
    switch (op) {
    case HC_CONV2D: return "conv2d";
    case HC_CONV_TRANSPOSE2D: return "conv_transpose2d";
    case HC_MATMUL: return "matmul";
    case HC_LINEAR: return "linear";
    case HC_GROUP_NORM: return "group_norm";
    case HC_LAYER_NORM: return "layer_norm";
    case HC_RMS_NORM: return "rms_norm";
    case HC_ATTENTION: return "attention";
    case HC_ADD: return "add";
    case HC_ACTIVATION: return "activation";
    case HC_ACTIVATION_SCALED: return "activation_scaled";
    case HC_UPSAMPLE_NEAREST: return "upsample_nearest";
    case HC_CONVERT: return "convert";
    case HC_CONV3D: return "conv3d";
    case HC_OP_COUNT: break;
    }
    return "invalid";
}

const char *hc_layout_name(hc_layout layout) {
    switch (layout) {
    case HC_NCHW: return "nchw";
    case HC_NHWC: return "nhwc";
    case HC_NCDHW: return "ncdhw";
    case HC_NDHWC: return "ndhwc";
    case HC_LAYOUT_NONE: break;
    }
    return "";
}

/* ------------------------------------------------------------- expansion */

static hc_case hc_list[HC_MAX_CASES];
static int hc_count;

static const dk_dtype hc_dtypes[3] = {DK_F32, DK_F16, DK_BF16};
static const hc_layout hc_layouts[2] = {HC_NCHW, HC_NHWC};
static const hc_layout hc_video_layouts[2] = {HC_NCDHW, HC_NDHWC};

static int32_t hc_def32(int32_t v) { return v ? v : 1; }
static int64_t hc_def64(int64_t v) { return v ? v : 1; }
static float hc_deff(float v) { return v != 0.0f ? v : 1.0f; }

static hc_conv hc_norm_conv(hc_conv p) {
    p.n = hc_def64(p.n);
    p.stride_h = hc_def32(p.stride_h);
    p.stride_w = hc_def32(p.stride_w);
    p.dilation_h = hc_def32(p.dilation_h);
    p.dilation_w = hc_def32(p.dilation_w);
    p.groups = hc_def32(p.groups);
    p.upsample = hc_def32(p.upsample);
    p.output_scale = hc_deff(p.output_scale);
    p.residual_scale = hc_deff(p.residual_scale);
    return p;
}

static hc_conv3d hc_norm_c3(hc_conv3d p) {
    p.n = hc_def64(p.n);
    p.stride_t = hc_def32(p.stride_t);
    p.stride_h = hc_def32(p.stride_h);
    p.stride_w = hc_def32(p.stride_w);
    p.dilation_t = hc_def32(p.dilation_t);
    p.dilation_h = hc_def32(p.dilation_h);
    p.dilation_w = hc_def32(p.dilation_w);
    p.groups = hc_def32(p.groups);
    p.output_scale = hc_deff(p.output_scale);
    p.residual_scale = hc_deff(p.residual_scale);
    return p;
}

static hc_matmul hc_norm_mm(hc_matmul p) {
    p.output_scale = hc_deff(p.output_scale);
    p.residual_scale = hc_deff(p.residual_scale);
    return p;
}

/* Appends one expanded case (the caller sets the op's parameters).  has_layout:
 * 0 none, 1 an image layout, 2 a video layout (layout_i picks the storage). */
static hc_case *hc_push(hc_op op, const char *label, int flags, int base_index, int dtype_i,
                        int layout_i, int has_layout, int has_weight, const char *extra) {
    hc_case *c;
    if (hc_count >= HC_MAX_CASES) return NULL;
    c = &hc_list[hc_count++];
    memset(c, 0, sizeof *c);
    c->op = op;
    c->dtype = hc_dtypes[dtype_i];
    c->layout = has_layout == 2 ? hc_video_layouts[layout_i] : has_layout ? hc_layouts[layout_i] : HC_LAYOUT_NONE;
    c->quick = (flags & Q) && (dtype_i + layout_i) % 2 == 0;
    c->out_gap = (flags & G) != 0;
    c->in_gap = (flags & I) != 0;
    c->prepare = has_weight && (dtype_i + layout_i + base_index) % 2 == 1;
    snprintf(c->name, sizeof c->name, "%s/%s%s%s%s/%s%s%s%s", hc_op_name(op), label, c->in_gap ? "_ingap" : "",
             c->out_gap ? "_outgap" : "", extra ? extra : "", dk_dtype_name(c->dtype), has_layout ? "/" : "",
             hc_layout_name(c->layout), c->prepare ? "/prep" : "");
    return c;
}

#define HC_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void hc_expand_conv(hc_op op, const hcb_conv *base, int nbase) {
    int i, d, l;
    for (i = 0; i < nbase; i++)
        for (d = 0; d < 3; d++)
            for (l = 0; l < 2; l++) {
                hc_case *c = hc_push(op, base[i].label, base[i].flags, i, d, l, 1, 1, NULL);
                if (c) c->conv = hc_norm_conv(base[i].p);
            }
}

static void hc_expand_c3(const hcb_c3 *base, int nbase) {
    int i, d, l;
    for (i = 0; i < nbase; i++)
        for (d = 0; d < 3; d++)
            for (l = 0; l < 2; l++) {
                hc_case *c = hc_push(HC_CONV3D, base[i].label, base[i].flags, i, d, l, 2, 0, NULL);
                if (c) c->c3 = hc_norm_c3(base[i].p);
            }
}

static void hc_expand_mm(hc_op op, const hcb_mm *base, int nbase) {
    int i, d;
    for (i = 0; i < nbase; i++)
        for (d = 0; d < 3; d++) {
            /* only a 2-D b (a weight shared by every batch) is prepared */
            int has_weight = op == HC_LINEAR || base[i].p.batch == 0 || base[i].p.b_shared;
            hc_case *c = hc_push(op, base[i].label, base[i].flags, i, d, 0, 0, has_weight, NULL);
            if (c) c->mm = hc_norm_mm(base[i].p);
        }
}

static void hc_expand_norm(hc_op op, const hcb_norm *base, int nbase, int has_layout) {
    int i, d, l;
    for (i = 0; i < nbase; i++)
        for (d = 0; d < 3; d++)
            for (l = 0; l < (has_layout ? 2 : 1); l++) {
                int video = op == HC_GROUP_NORM && base[i].p.ndim == 5;
                int lay = has_layout + video;
                hc_case *c;
                /* rms_norm: images and videos in both layouts, 2-D and 3-D row-major */
                if (op == HC_RMS_NORM) lay = base[i].p.ndim == 5 ? 2 : base[i].p.ndim == 4 ? 1 : 0;
                if (!lay && l) continue;
                c = hc_push(op, base[i].label, base[i].flags, i, d, l, lay, 0, NULL);
                if (!c) continue;
                c->norm = base[i].p;
                if (op == HC_GROUP_NORM && !video) c->norm.ndim = 4;
            }
}

static void hc_expand_attn(const hcb_attn *base, int nbase) {
    int i, d;
    for (i = 0; i < nbase; i++)
        for (d = 0; d < 3; d++) {
            hc_case *c = hc_push(HC_ATTENTION, base[i].label, base[i].flags, i, d, 0, 0, 0, NULL);
            if (c) c->attn = base[i].p;
        }
}

static void hc_expand_ew(hc_op op, const hcb_ew *base, int nbase) {
    int i, d, l;
    for (i = 0; i < nbase; i++)
        for (d = 0; d < 3; d++)
            for (l = 0; l < 2; l++) {
                hc_case *c = hc_push(op, base[i].label, base[i].flags, i, d, l, base[i].p.t > 0 ? 2 : 1, 0, NULL);
                if (c) c->ew = base[i].p;
            }
}

/* convert: every (source dtype, source layout) x (dtype, layout) pair on one
 * odd shape, plus a larger one with an output gap (dtype and layout both change). */
static void hc_expand_convert(void) {
    int sd, sl, d, l;
    char extra[32];
    for (sd = 0; sd < 3; sd++)
        for (sl = 0; sl < 2; sl++)
            for (d = 0; d < 3; d++)
                for (l = 0; l < 2; l++) {
                    hc_case *c;
                    snprintf(extra, sizeof extra, "_from_%s_%s", dk_dtype_name(hc_dtypes[sd]),
                             hc_layout_name(hc_layouts[sl]));
                    c = hc_push(HC_CONVERT, "2x5x7x3", 0, 0, d, l, 1, 0, extra);
                    if (!c) continue;
                    c->quick = sd == d && sl != l && d != 2; /* the layout swaps */
                    c->ew.n = 2; c->ew.c = 5; c->ew.h = 7; c->ew.w = 3;
                    c->ew.src_dtype = hc_dtypes[sd];
                    c->ew.src_layout = hc_layouts[sl];
                }
    for (d = 0; d < 3; d++)
        for (l = 0; l < 2; l++) {
            hc_case *c;
            snprintf(extra, sizeof extra, "_from_%s_%s", dk_dtype_name(hc_dtypes[(d + 1) % 3]),
                     hc_layout_name(hc_layouts[1 - l]));
            c = hc_push(HC_CONVERT, "1x16x6x6", G | I, 0, d, l, 1, 0, extra);
            if (!c) continue;
            c->ew.n = 1; c->ew.c = 16; c->ew.h = 6; c->ew.w = 6;
            c->ew.src_dtype = hc_dtypes[(d + 1) % 3];
            c->ew.src_layout = hc_layouts[1 - l];
        }
    /* layout swaps over several partial 32 x 32 tiles of both dims (the GPU
     * backends' tiled transpose) */
    for (d = 0; d < 3; d++)
        for (l = 0; l < 2; l++) {
            hc_case *c;
            snprintf(extra, sizeof extra, "_from_%s_%s", dk_dtype_name(hc_dtypes[(d + 2) % 3]),
                     hc_layout_name(hc_layouts[1 - l]));
            c = hc_push(HC_CONVERT, "2x70x3x37", 0, 0, d, l, 1, 0, extra);
            if (!c) continue;
            c->ew.n = 2; c->ew.c = 70; c->ew.h = 3; c->ew.w = 37;
            c->ew.src_dtype = hc_dtypes[(d + 2) % 3];
            c->ew.src_layout = hc_layouts[1 - l];
        }
    /* layout swaps with C and W multiples of 8 over full and partial 64 x 64
     * tiles (the GPU backends' vector transposes, the conv staging): in one
     * dtype, and from the next dtype */
    for (sd = 0; sd < 2; sd++)
        for (d = 0; d < 3; d++)
            for (l = 0; l < 2; l++) {
                hc_case *c;
                const dk_dtype from = hc_dtypes[(d + sd) % 3];
                snprintf(extra, sizeof extra, "_from_%s_%s", dk_dtype_name(from), hc_layout_name(hc_layouts[1 - l]));
                c = hc_push(HC_CONVERT, "2x72x5x80", 0, 0, d, l, 1, 0, extra);
                if (!c) continue;
                c->ew.n = 2; c->ew.c = 72; c->ew.h = 5; c->ew.w = 80;
                c->ew.src_dtype = from;
                c->ew.src_layout = hc_layouts[1 - l];
            }
}

/* convert of videos: a dtype change with a layout swap (NCDHW <-> NDHWC), and with gaps */
static void hc_expand_convert_video(void) {
    int d, l;
    char extra[32];
    for (d = 0; d < 3; d++)
        for (l = 0; l < 2; l++) {
            hc_case *c;
            snprintf(extra, sizeof extra, "_from_%s_%s", dk_dtype_name(hc_dtypes[(d + 1) % 3]),
                     hc_layout_name(hc_video_layouts[1 - l]));
            c = hc_push(HC_CONVERT, "video_2x6x3x4x5", l == 0 ? G | I : 0, 0, d, l, 2, 0, extra);
            if (!c) continue;
            c->quick = d == 1;
            c->ew.n = 2; c->ew.c = 6; c->ew.t = 3; c->ew.h = 4; c->ew.w = 5;
            c->ew.src_dtype = hc_dtypes[(d + 1) % 3];
            c->ew.src_layout = hc_video_layouts[1 - l];
        }
}

static int hc_build(void) {
    int i, j;
    hc_count = 0;
    hc_expand_conv(HC_CONV2D, hcb_conv2d, HC_COUNT(hcb_conv2d));
    hc_expand_conv(HC_CONV_TRANSPOSE2D, hcb_convt, HC_COUNT(hcb_convt));
    hc_expand_mm(HC_MATMUL, hcb_matmul, HC_COUNT(hcb_matmul));
    hc_expand_mm(HC_LINEAR, hcb_linear, HC_COUNT(hcb_linear));
    hc_expand_norm(HC_GROUP_NORM, hcb_group_norm, HC_COUNT(hcb_group_norm), 1);
    hc_expand_norm(HC_LAYER_NORM, hcb_layer_norm, HC_COUNT(hcb_layer_norm), 0);
    hc_expand_norm(HC_RMS_NORM, hcb_rms_norm, HC_COUNT(hcb_rms_norm), 1);
    hc_expand_attn(hcb_attention, HC_COUNT(hcb_attention));
    hc_expand_ew(HC_ADD, hcb_add, HC_COUNT(hcb_add));
    hc_expand_ew(HC_ACTIVATION, hcb_activation, HC_COUNT(hcb_activation));
    hc_expand_ew(HC_ACTIVATION_SCALED, hcb_activation_scaled, HC_COUNT(hcb_activation_scaled));
    hc_expand_ew(HC_UPSAMPLE_NEAREST, hcb_upsample, HC_COUNT(hcb_upsample));
    hc_expand_convert();
    hc_expand_convert_video();
    hc_expand_c3(hcb_conv3d, HC_COUNT(hcb_conv3d));
    if (hc_count >= HC_MAX_CASES) {
        fprintf(stderr, "harness bug: more than %d cases (raise HC_MAX_CASES)\n", HC_MAX_CASES - 1);
        return -1;
    }
    for (i = 0; i < hc_count; i++)
        for (j = i + 1; j < hc_count; j++)
            if (strcmp(hc_list[i].name, hc_list[j].name) == 0) {
                fprintf(stderr, "harness bug: duplicate case name %s\n", hc_list[i].name);
                return -1;
            }
    return hc_count;
}

int hc_cases(const hc_case **out) {
    static int built = 0;
    *out = hc_list;
    if (!built) {
        built = hc_build() >= 0 ? 1 : -1;
    }
    return built > 0 ? hc_count : -1;
}
