/* Dispatch parameters of the Vulkan backend, declared once for the host code
 * (backends/vulkan, C11) and the GLSL shaders (shaders/, through
 * dk_common.glsl, which defines DK_GLSL).  Each dispatch writes one of the
 * structs below into its 256-byte parameter ring slot; the shader reads it as
 * dkp.p (binding 6).  Every member is a 32-bit int or float, or a struct or
 * fixed array of them, so C and GLSL std430 lay them out alike (stride 4, no
 * padding); the C asserts at the end pin sizes and offsets.  Element offsets and
 * strides are in elements of the tensor's dtype, relative to its binding. */
#ifndef DK_VK_PARAMS_H
#define DK_VK_PARAMS_H

#define DK_VK_PARAM_BYTES 256 /* one parameter slot per dispatch */

/* C needs a typedef to name a struct without the struct keyword; GLSL names
 * it already. */
#ifdef DK_GLSL
#define DK_VK_TYPEDEF(name)
#else
#define DK_VK_TYPEDEF(name) typedef struct name name;
#endif

/* Specialization constant ids: only what changes the inner loops, so that few
 * pipelines get built (lavapipe takes seconds per GEMM pipeline). */
#define DK_VKS_DT 0     /* 1 f32, 2 f16, 3 bf16 */
#define DK_VKS_DT2 1    /* second dtype (dk_convert output, the bias / gamma / beta dtype) */
#define DK_VKS_MODE 2   /* the shader's MODE bits, below */
#define DK_VKS_ACT 3    /* activation (dk_activation) of the shaders that apply one */
#define DK_VKS_CM_KB 4  /* cooperative-matrix B row count: never set (16); see dk_coopmat.glsl */

/* ------------------------------------------------------------ FLAGS bits
 * The epilogue's flags parameter (dk_vk_epilogue.flags): what a dispatch reads
 * or how it walks, where that is data rather than compiled in. */
#define DK_VK_FLAG_BIAS 1            /* conv, matmul: add the bias */
#define DK_VK_FLAG_GAMMA 1           /* group_norm, layer_norm: scale by gamma */
#define DK_VK_FLAG_RESIDUAL 2        /* conv, matmul: add rscale * residual */
#define DK_VK_FLAG_BETA 2            /* group_norm, layer_norm: add beta */
#define DK_VK_FLAG_A_KFAST 4         /* GEMM core: neighbouring invocations fetch neighbouring k of A */
#define DK_VK_FLAG_PACKED_WEIGHT 8   /* conv: weights pre-packed dense [K][Cout] */
#define DK_VK_FLAG_VEC_EPILOGUE 16   /* tensor-core conv: y (and the residual) in 16-byte vectors */
#define DK_VK_FLAG_B_KFAST 32        /* GEMM core: the same for B */
#define DK_VK_FLAG_ROWS_FASTEST 64   /* GEMM core: the epilogue walks rows (pixels) fastest */
#define DK_VK_FLAG_GN_STATS_OUT 4    /* split group_norm: the finalize pass writes (mean, variance) */
#define DK_VK_FLAG_GN_STATS_IN 8     /* split group_norm: the finalize pass reads them */
#define DK_VK_FLAG_RMS_AFF_VEC 4     /* rms_norm ROWS_VEC: gamma and beta read as 16-byte vectors */

/* ------------------------------------------------------------- MODE bits
 * The MODE specialization constant, per shader.  Multi-bit fields have a
 * shift and a mask; single bits that shaders test by shifting have a _SHIFT. */

/* Portable GEMM core (dk_gemm_tile.glsl: conv2d.comp's GEMM path, matmul.comp):
 * 16-byte fetches of 8 k of A, of 8 columns of B, or of 8 k of B. */
#define DK_VK_GEMM_MODE_VEC_A 1
#define DK_VK_GEMM_MODE_VEC_B_N 2
#define DK_VK_GEMM_MODE_VEC_B_K 8

/* conv2d.comp: bits 0 and 1 as the GEMM core's (bit 0 also the narrow conv's
 * 8-channel input loads), and: */
#define DK_VK_CONV_MODE_UPSAMPLE2 4     /* the input is 2x nearest-upsampled */
#define DK_VK_CONV_MODE_NARROW 16       /* direct convolution, Cout/groups <= 8 */
#define DK_VK_CONV_MODE_NARROW4_SHIFT 5 /* with NARROW: at most 4 output channels */
#define DK_VK_CONV_MODE_NARROW4 (1 << DK_VK_CONV_MODE_NARROW4_SHIFT)
#define DK_VK_CONV_MODE_LANES 64        /* with NARROW and VEC_A: 16 invocations per pixel */

/* Tensor-core GEMM (dk_gemm_coopmat.glsl) and conv (conv2d_nhwc_cm.comp). */
#define DK_VK_CM_MODE_BM256_SHIFT 0     /* 256-row tiles (else 128) */
#define DK_VK_CM_MODE_BM256 (1 << DK_VK_CM_MODE_BM256_SHIFT)
#define DK_VK_CM_MODE_BN256_SHIFT 1     /* 256-column tiles (else 128) */
#define DK_VK_CM_MODE_BN256 (1 << DK_VK_CM_MODE_BN256_SHIFT)
#define DK_VK_CM_MODE_BK16_SHIFT 2      /* 16-deep K slices (else 32) */
#define DK_VK_CM_MODE_BK16 (1 << DK_VK_CM_MODE_BK16_SHIFT)
#define DK_VK_CM_MODE_HALO_SHIFT 3      /* halo staging of the input rows */
#define DK_VK_CM_MODE_HALO (1 << DK_VK_CM_MODE_HALO_SHIFT)
#define DK_VK_CM_MODE_FIXED_SHIFT 4     /* the tap grid compiled in: 3x3 ... */
#define DK_VK_CM_MODE_FIXED (1 << DK_VK_CM_MODE_FIXED_SHIFT)
#define DK_VK_CM_MODE_FIXED_2X2_SHIFT 5 /* ... or, with FIXED, 2x2 ... */
#define DK_VK_CM_MODE_FIXED_2X2 (1 << DK_VK_CM_MODE_FIXED_2X2_SHIFT)
#define DK_VK_CM_MODE_FIXED_1X1_SHIFT 6 /* ... or 1x1 */
#define DK_VK_CM_MODE_FIXED_1X1 (1 << DK_VK_CM_MODE_FIXED_1X1_SHIFT)
#define DK_VK_CM_MODE_VEC_OUT_SHIFT 7   /* the 16-byte vector epilogue (DK_VK_FLAG_VEC_EPILOGUE) */
#define DK_VK_CM_MODE_VEC_OUT (1 << DK_VK_CM_MODE_VEC_OUT_SHIFT)
#define DK_VK_CM_MODE_RESIDUAL_SHIFT 8  /* the residual (DK_VK_FLAG_RESIDUAL) */
#define DK_VK_CM_MODE_RESIDUAL (1 << DK_VK_CM_MODE_RESIDUAL_SHIFT)
#define DK_VK_CM_MODE_CH_FAST_SHIFT 9   /* output-channel tiles fastest in the launch order */
#define DK_VK_CM_MODE_CH_FAST (1 << DK_VK_CM_MODE_CH_FAST_SHIFT)
#define DK_VK_CM_MODE_CACHE_SHIFT 10    /* rows above the input from the cache binding (conv3d in place) */
#define DK_VK_CM_MODE_CACHE (1 << DK_VK_CM_MODE_CACHE_SHIFT)
#define DK_VK_CM_MODE_FIXED_KX1_SHIFT 11 /* with FIXED (3 or 2 taps along h): one tap along w */
#define DK_VK_CM_MODE_FIXED_KX1 (1 << DK_VK_CM_MODE_FIXED_KX1_SHIFT)

/* eltwise.comp: the operation in bits 0-1; nearest resize: the walk positions
 * of h and w in bits 2-3 and 4-5. */
#define DK_VK_EW_MODE_OP_MASK 3
#define DK_VK_EW_MODE_UNARY 0   /* y = oscale * act(alpha * a) (also dk_convert) */
#define DK_VK_EW_MODE_ADD 1     /* y = oscale * act(alpha * a + beta * b) */
#define DK_VK_EW_MODE_RESIZE 2  /* nearest resize */
#define DK_VK_EW_MODE_HPOS_SHIFT 2
#define DK_VK_EW_MODE_WPOS_SHIFT 4
#define DK_VK_EW_MODE_POS_MASK 3

/* transpose.comp (layout changes of the elementwise family) */
#define DK_VK_TR_MODE_VEC16 1   /* 16-bit copies of one dtype in 16-byte vectors */
#define DK_VK_TR_MODE_VEC_CVT 2 /* 16-byte vectors of any dtype pair, through floats */
#define DK_VK_TR_MODE_KPOS_SHIFT 2 /* bits 2-3: the walk position of a's unit-stride dim */
#define DK_VK_TR_MODE_KPOS_MASK 3

/* gn_stats / gn_final / gn_norm.comp: the layout (a value, not bits) */
#define DK_VK_GN_MODE_STRIDED 0 /* any strides, one element at a time */
#define DK_VK_GN_MODE_NCHW 1    /* dense NCHW, H*W a multiple of the vector width */
#define DK_VK_GN_MODE_NHWC 2    /* dense NHWC, C a multiple of it */

/* rms_norm.comp (the kernel shapes of dk__rms_plan) */
#define DK_VK_RMS_MODE_ROWS 0     /* channel-contiguous, any strides: lanes per position */
#define DK_VK_RMS_MODE_ROWS_VEC 1 /* the same in 16-byte vectors */
#define DK_VK_RMS_MODE_COLUMNS 2  /* channel-strided: adjacent invocations on adjacent positions */
#define DK_VK_RMS_MODE_COLUMNS_TILE 3 /* channel-strided, a tile of positions x C staged in shared memory */
/* the shared memory of rms_norm.comp's staged tile (with its 1.5 KiB of sums,
 * scales and offsets, within Vulkan's 16 KiB minimum of
 * maxComputeSharedMemorySize) */
#define DK_VK_RMS_TILE_BYTES 14336
/* rms_norm.comp's units kept in registers per invocation (the host's
 * dk_rms_kernel_limits): 16-byte vectors (ROWS_VEC), scalars (ROWS, COLUMNS) */
#define DK_VK_RMS_KEEP_VECTORS 4
#define DK_VK_RMS_KEEP_SCALARS 24

/* attention.comp (portable) */
#define DK_VK_AT_MODE_VEC_Q 1   /* bits 0-2: 16-byte loads of Q, K, V (bit i: input i) */
#define DK_VK_AT_MODE_VEC_K 2
#define DK_VK_AT_MODE_VEC_V 4
#define DK_VK_AT_MODE_OTILE_SHIFT 3 /* bits 3-4: the O register tile by Dv (0: <= 64, 1: <= 128, 2: <= 256) */
#define DK_VK_AT_MODE_OTILE_MASK 3
#define DK_VK_AT_MODE_BIG_SLICES 32 /* the device has the shared memory for the larger slices */

/* attention_cm.comp (tensor cores, large heads) */
#define DK_VK_ATCM_MODE_CG_MASK 15  /* bits 0-3: column groups (2, 4 or 8) */
#define DK_VK_ATCM_MODE_R64_SHIFT 5 /* with CG 8: 64 query rows, keys 64 at a time */
#define DK_VK_ATCM_MODE_R64 (1 << DK_VK_ATCM_MODE_R64_SHIFT)
#define DK_VK_ATCM_MODE_MASKED 64   /* Nq, Nkv, D or Dv not a multiple of 16 */
#define DK_VK_ATCM_MODE_D8_SHIFT 8  /* bits 8-14: D / 8 compiled in (0: from the parameters) */
#define DK_VK_ATCM_MODE_D8_MASK 127

/* attention_cm_rows.comp (tensor cores, D, Dv <= 128): a value */
#define DK_VK_ATROWS_MODE_WIDE 1    /* 128 wide (D or Dv above 64), else 64 */

/* ------------------------------------------------------------ the structs */

/* A tensor's 4-D view: strides (n, c, h, w or the op's own order) and the
 * element offset of its start. */
DK_VK_TYPEDEF(dk_vk_view4)
struct dk_vk_view4 {
    int stride[4];
    int offset;
};

/* matmul operands: batch, row and column strides, and the offset. */
DK_VK_TYPEDEF(dk_vk_view3)
struct dk_vk_view3 {
    int stride[3];
    int offset;
};

/* A per-channel vector (bias, gamma, beta): its stride and offset. */
DK_VK_TYPEDEF(dk_vk_view1)
struct dk_vk_view1 {
    int stride;
    int offset;
};

/* Conv weights: the stride between groups, then the view of one group
 * (co, ci, kh, kw strides, and the offset). */
DK_VK_TYPEDEF(dk_vk_conv_weight)
struct dk_vk_conv_weight {
    int group_stride;
    dk_vk_view4 view;
};

/* The tail of every parameter struct, at the same offset in each: the
 * activation (also a specialization constant) and the FLAGS bits. */
DK_VK_TYPEDEF(dk_vk_epilogue)
struct dk_vk_epilogue {
    int act;
    int flags;
};

/* conv2d and each stride phase of conv_transpose2d, as an implicit GEMM of
 * m rows (n, oh, ow of the sub-grid), n columns (output channels of one group)
 * and k = taps * input channels of the group.  Input coordinate of tap t of
 * output row o: o * stride + input_offset + t * dilation (in the upsampled
 * input); output coordinate out_start + o * out_step; kernel tap
 * tap_start + t * tap_step. */
DK_VK_TYPEDEF(dk_vk_conv_params)
struct dk_vk_conv_params {
    int m;
    int n;
    int k;
    int cin_per_group;
    int in_h;
    int in_w;
    int rows_h; /* output rows and columns of the (sub-)grid */
    int rows_w;
    int taps_h;
    int taps_w;
    int stride_h;
    int stride_w;
    int input_offset_h;
    int input_offset_w;
    int dilation_h;
    int dilation_w;
    int upsample; /* 1, or 2 (nearest) */
    int tap_start_h;
    int tap_start_w;
    int tap_step_h;
    int tap_step_w;
    int out_start_h;
    int out_start_w;
    int out_step_h;
    int out_step_w;
    dk_vk_view4 x;
    dk_vk_conv_weight weight;
    dk_vk_view1 bias;
    dk_vk_view4 residual;
    dk_vk_view4 y;
    float out_scale;
    float residual_scale;
    /* DK_VK_CM_MODE_CACHE: input rows ih in [-cache_rows, 0) come from the
     * cache binding, row ih + cache_rows, at element cache_offset +
     * row * cache_stride_h (+ x's column stride and channel) */
    int cache_offset;
    int cache_rows;
    int cache_stride_h;
    int unused[9];
    dk_vk_epilogue epilogue;
};

/* matmul: y[b][m][n] = sum_k a[b][m][k] * b[b][k][n] */
DK_VK_TYPEDEF(dk_vk_matmul_params)
struct dk_vk_matmul_params {
    int m;
    int n;
    int k;
    dk_vk_view3 a; /* batch, m, k */
    dk_vk_view3 b; /* batch, k, n */
    dk_vk_view1 bias;
    dk_vk_view3 residual; /* batch, m, n */
    dk_vk_view3 y;        /* batch, m, n */
    float out_scale;
    float residual_scale;
    int unused[39];
    dk_vk_epilogue epilogue;
};

/* eltwise.comp and transpose.comp: activation, add, convert, nearest resize.
 * Shape and strides in the walk order (dk__elt_order). */
DK_VK_TYPEDEF(dk_vk_eltwise_params)
struct dk_vk_eltwise_params {
    int shape[4]; /* y's */
    dk_vk_view4 a;
    dk_vk_view4 b;
    dk_vk_view4 y;
    float alpha;
    float beta;
    int src_h; /* resize: a's H and W */
    int src_w;
    int total;
    /* every operand dense in the walk order with 16-byte aligned starts (8
     * elements per invocation); resize: its vector path */
    int vector_path;
    float out_scale;
    int unused[36];
    dk_vk_epilogue epilogue;
};

/* group_norm: statistics, finalize, normalize (MODE: DK_VK_GN_MODE_*) */
DK_VK_TYPEDEF(dk_vk_group_norm_params)
struct dk_vk_group_norm_params {
    int n;
    int c;
    int h;
    int w;
    int groups;
    int chunks;
    int chunk;  /* chunk size: elements (MODE STRIDED), vectors (NCHW) or pixels (NHWC) */
    dk_vk_view4 x;
    dk_vk_view4 y;
    dk_vk_view1 gamma;
    dk_vk_view1 beta;
    float eps;
    int channels_fastest; /* 1: the channel is the fastest stride (NHWC) */
    int partials_offset;  /* element offset of the partials in the scratch binding */
    int coef_offset;      /* element offset of the per-(n, c) vec4 (mean, rstd*gamma, beta, 0) */
    int total;            /* elements (MODE STRIDED) or 16-byte vectors to normalize */
    int stats_offset;     /* split group_norm: element offset of (mean, variance) pairs in binding 3 */
    int apply_chunks;     /* NHWC normalize: pixel chunks per image (dk__gn_split) */
    int apply_chunk;      /* ... and pixels per chunk */
    int unused[33];
    dk_vk_epilogue epilogue;
};

/* layer_norm over the last dim of rows (dims 0-2 flattened) */
DK_VK_TYPEDEF(dk_vk_layer_norm_params)
struct dk_vk_layer_norm_params {
    int rows;
    int dim1; /* sizes of leading dims 1 and 2 (dim 0 implied) */
    int dim2;
    int d;
    dk_vk_view4 x; /* strides of the 3 leading dims, then of the last */
    dk_vk_view4 y;
    dk_vk_view1 gamma;
    dk_vk_view1 beta;
    float eps;
    int unused[43];
    dk_vk_epilogue epilogue;
};

/* rms_norm (the plan of src/norm_plan.c, dk__rms_plan): C channels of each of
 * `positions` positions; position p's coordinates in the four position slots
 * (pshape, slot 3 fastest) give its offsets through x_ps and y_ps.  MODE:
 * DK_VK_RMS_MODE_ROWS (lanes invocations per position, any strides),
 * DK_VK_RMS_MODE_ROWS_VEC (the same in 16-byte vectors: channel stride 1, C,
 * the position strides and the offsets multiples of the vector),
 * DK_VK_RMS_MODE_COLUMNS (adjacent invocations on adjacent positions),
 * DK_VK_RMS_MODE_COLUMNS_TILE (a workgroup per `tile` positions: 16-byte
 * vectors of whole channel runs staged in shared memory). */
DK_VK_TYPEDEF(dk_vk_rms_norm_params)
struct dk_vk_rms_norm_params {
    int channels;
    int positions;
    int lanes;      /* invocations per position (a power of two <= 32) */
    int form;       /* dk_rms_norm_form */
    float eps;
    float sqrt_c;   /* sqrt(C), DK_RMS_NORM_L2's factor */
    int x_cs;       /* channel strides */
    int y_cs;
    int pshape[4];
    int x_ps[4];
    int y_ps[4];
    int x_offset;
    int y_offset;
    dk_vk_view1 gamma;
    dk_vk_view1 beta;
    int tile;       /* COLUMNS_TILE: positions per workgroup (a power of two, whole vectors) */
    int unused[35];
    dk_vk_epilogue epilogue;
};

/* attention: q [b, h, nq, d], k [b, h, nkv, d], v [b, h, nkv, dv], output o [b, h, nq, dv] */
DK_VK_TYPEDEF(dk_vk_attention_params)
struct dk_vk_attention_params {
    int heads;
    int nq;
    int nkv;
    int d;
    int dv;
    float scale;
    dk_vk_view4 q;
    dk_vk_view4 k;
    dk_vk_view4 v;
    dk_vk_view4 o; /* the output ("out" is a GLSL keyword) */
    int unused[36];
    dk_vk_epilogue epilogue;
};

#ifndef DK_GLSL
#include <stddef.h>
/* The GLSL side (std430) packs 4-byte members with no padding; so must C. */
#define DK_VK_PARAMS_LAYOUT(type)                                                                      \
    _Static_assert(sizeof(type) == DK_VK_PARAM_BYTES, #type " fills one parameter slot");              \
    _Static_assert(offsetof(type, epilogue) == DK_VK_PARAM_BYTES - sizeof(dk_vk_epilogue),              \
                   #type ": the epilogue ends the slot")
_Static_assert(sizeof(int) == 4 && sizeof(float) == 4, "32-bit int and float parameters");
_Static_assert(sizeof(dk_vk_view4) == 20 && sizeof(dk_vk_view3) == 16 && sizeof(dk_vk_view1) == 8,
               "views are packed ints");
_Static_assert(sizeof(dk_vk_conv_weight) == 24 && sizeof(dk_vk_epilogue) == 8, "packed ints");
DK_VK_PARAMS_LAYOUT(dk_vk_conv_params);
DK_VK_PARAMS_LAYOUT(dk_vk_matmul_params);
DK_VK_PARAMS_LAYOUT(dk_vk_eltwise_params);
DK_VK_PARAMS_LAYOUT(dk_vk_group_norm_params);
DK_VK_PARAMS_LAYOUT(dk_vk_layer_norm_params);
DK_VK_PARAMS_LAYOUT(dk_vk_rms_norm_params);
DK_VK_PARAMS_LAYOUT(dk_vk_attention_params);
/* members after a nested struct sit where the packed layout puts them */
_Static_assert(offsetof(dk_vk_conv_params, x) == 25 * 4 && offsetof(dk_vk_conv_params, weight) == 30 * 4 &&
               offsetof(dk_vk_conv_params, bias) == 36 * 4 && offsetof(dk_vk_conv_params, residual) == 38 * 4 &&
               offsetof(dk_vk_conv_params, y) == 43 * 4 && offsetof(dk_vk_conv_params, out_scale) == 48 * 4,
               "conv parameter layout");
_Static_assert(offsetof(dk_vk_matmul_params, a) == 3 * 4 && offsetof(dk_vk_matmul_params, bias) == 11 * 4 &&
               offsetof(dk_vk_matmul_params, y) == 17 * 4 && offsetof(dk_vk_matmul_params, out_scale) == 21 * 4,
               "matmul parameter layout");
_Static_assert(offsetof(dk_vk_eltwise_params, a) == 4 * 4 && offsetof(dk_vk_eltwise_params, y) == 14 * 4 &&
               offsetof(dk_vk_eltwise_params, alpha) == 19 * 4 && offsetof(dk_vk_eltwise_params, out_scale) == 25 * 4,
               "eltwise parameter layout");
_Static_assert(offsetof(dk_vk_group_norm_params, x) == 7 * 4 && offsetof(dk_vk_group_norm_params, gamma) == 17 * 4 &&
               offsetof(dk_vk_group_norm_params, eps) == 21 * 4 &&
               offsetof(dk_vk_group_norm_params, stats_offset) == 26 * 4,
               "group_norm parameter layout");
_Static_assert(offsetof(dk_vk_layer_norm_params, x) == 4 * 4 && offsetof(dk_vk_layer_norm_params, gamma) == 14 * 4 &&
               offsetof(dk_vk_layer_norm_params, eps) == 18 * 4,
               "layer_norm parameter layout");
_Static_assert(offsetof(dk_vk_rms_norm_params, pshape) == 8 * 4 && offsetof(dk_vk_rms_norm_params, y_ps) == 16 * 4 &&
               offsetof(dk_vk_rms_norm_params, gamma) == 22 * 4 && offsetof(dk_vk_rms_norm_params, tile) == 26 * 4,
               "rms_norm parameter layout");
_Static_assert(offsetof(dk_vk_attention_params, q) == 6 * 4 && offsetof(dk_vk_attention_params, o) == 21 * 4,
               "attention parameter layout");
#undef DK_VK_PARAMS_LAYOUT
#endif

#endif /* DK_VK_PARAMS_H */
