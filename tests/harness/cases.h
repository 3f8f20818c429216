/* The shared case list: every op, shape, parameter set, dtype and layout that
 * every backend is checked on (tests/harness/dk_test_runner.c runs it).
 *
 * A small base list of shapes is expanded combinatorially over the dtypes
 * (f32, f16, bf16) and, where an op takes 4-D images, over NCHW and NHWC.
 * Each expanded case has a stable readable name "op/shape/dtype[/layout]",
 * e.g. "conv2d/3x3_s2_p1/f16/nhwc".
 */
#ifndef HC_CASES_H
#define HC_CASES_H

#include <difkern.h>

typedef enum hc_op {
    HC_CONV2D,
    HC_CONV_TRANSPOSE2D,
    HC_MATMUL,
    HC_LINEAR,
    HC_GROUP_NORM,
    HC_LAYER_NORM,
    HC_RMS_NORM,
    HC_ATTENTION,
    HC_ADD,
    HC_ACTIVATION,
    HC_ACTIVATION_SCALED,
    HC_UPSAMPLE_NEAREST,
    HC_CONVERT,
    HC_CONV3D,
    HC_OP_COUNT
} hc_op;

/* Images [N, C, H, W] stored NCHW or NHWC; videos [N, C, T, H, W] stored NCDHW or NDHWC. */
typedef enum hc_layout { HC_LAYOUT_NONE = 0, HC_NCHW = 1, HC_NHWC = 2, HC_NCDHW = 3, HC_NDHWC = 4 } hc_layout;

/* conv2d and conv_transpose2d.  All fields are final (no zero defaults). */
typedef struct hc_conv {
    int64_t n, cin, h, w, cout, kh, kw;
    int32_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
    int32_t groups, upsample;                  /* upsample: conv2d only */
    int32_t output_padding_h, output_padding_w; /* conv_transpose2d only */
    dk_activation act;
    float output_scale, residual_scale;
    int bias, residual;
    /* conv2d only: sides 1 sets the per-side padding below (pad_h / pad_w then 0) */
    int sides;
    int32_t pad_top, pad_bottom, pad_left, pad_right;
    dk_activation post_act;    /* after the residual */
    int res_inplace;           /* the residual is y's own view (needs residual) */
    int f32_bias;              /* the bias in f32 whatever the case dtype */
} hc_conv;

/* conv3d (dk_conv3d, or dk_conv3d_chunk with a cache of tc frames).  All fields are final. */
typedef struct hc_conv3d {
    int64_t n, cin, t, h, w, cout, kt, kh, kw;
    int32_t stride_t, stride_h, stride_w, dilation_t, dilation_h, dilation_w;
    int32_t pad_front, pad_back, pad_top, pad_bottom, pad_left, pad_right;
    int32_t groups;
    int64_t tc;                /* > 0: dk_conv3d_chunk with a cache [n, cin, tc, h, w] (tc <= pad_front) */
    dk_activation act, post_act;
    float output_scale, residual_scale;
    int bias, f32_bias, residual, res_inplace;
} hc_conv3d;

/* matmul and linear.  batch 0: 2-D operands; otherwise a/b may still be 2-D
 * (shared by every batch).  a_t / b_t: the operand is stored transposed (its
 * view has swapped strides).  For linear, b is the [N, K] weight and b_t means
 * it is stored [K, N]. */
typedef struct hc_matmul {
    int64_t batch, m, k, n;
    int a_shared, b_shared, a_t, b_t;
    dk_activation act;
    float output_scale, residual_scale;
    int bias, residual;
    dk_activation post_act;    /* after the residual */
    int res_inplace;           /* the residual is y's own view (needs residual) */
    int f32_bias;              /* the bias in f32 whatever the case dtype */
} hc_matmul;

typedef struct hc_norm {
    /* group_norm: [n, c, h, w] or (ndim 5) [n, c, t, h, w]; layer_norm: ndim dims of shape (last = D);
     * rms_norm: ndim dims of shape [n, c, ...] (4: an image, 5: a video in the case layout; 2, 3: row-major). */
    int32_t ndim;
    int64_t shape[5];
    int32_t groups;
    float eps;
    int gamma, beta;       /* group_norm: both or neither */
    dk_activation act;
    int inplace;
    float mean;            /* input values are mean + 2 * U(-1, 1); 0: 0.5 */
    int f32_affine;        /* group_norm, rms_norm: gamma and beta in f32 whatever the case dtype */
    int form;              /* rms_norm: dk_rms_norm_form */
    int split;             /* group_norm: split GroupNorm over two bands of rows
                            * (dk_group_norm_stats per band, merged on the host,
                            * dk_group_norm_apply per band); the result is the whole one */
} hc_norm;

/* Storage of q/k/v/out for attention. */
typedef enum hc_attn_storage {
    HC_BHND = 0,      /* each tensor contiguous [B, H, N, D] */
    HC_BNHD = 1,      /* each tensor stored [B, N, H, D]: a strided view */
    HC_QKV_PACKED = 2, /* q, k, v are views of one [B, N, 3, H, D] buffer; out [B, N, H, D] */
    HC_VIDEO_NCDHW = 3 /* heads 1, b2 frames: each tensor a view [B, T, 1, N, D] of an NCDHW
                        * video [B, D, T, N] (N: the pixels of a frame, D: the channels) */
} hc_attn_storage;

typedef struct hc_attention {
    int64_t b, heads, nq, nkv, d, dv;
    int64_t b2;            /* > 0: 5-D views [b, b2, heads, n, d] (two batch dims) */
    float scale;           /* 0: 1/sqrt(D) */
    float q_range;         /* q values are q_range * U(-1, 1); 0: 6 (logits std ~2).  Set:
                            * large logits, made exact in fp32 (q integers, k multiples
                            * of 1/8), so the case tests softmax range, not conditioning */
    hc_attn_storage storage;
} hc_attention;

/* add, activation, activation_scaled, upsample_nearest, convert on [n, c, h, w] images,
 * or (t > 0) on [n, c, t, h, w] videos. */
typedef struct hc_elementwise {
    int64_t n, c, h, w;
    int64_t t, ot;         /* frames (0: an image case); upsample_nearest: ot output frames */
    int64_t oh, ow;        /* upsample_nearest output size */
    dk_activation act;
    float alpha, beta;     /* add */
    float in_scale, out_scale; /* activation_scaled: y = out_scale * act(in_scale * x) */
    int inplace;           /* add: 1 y is a, 2 y is b; activation(_scaled): 1 y is x */
    int other_layout;      /* activation_scaled: x in the other image layout (a layout change) */
    int misalign;          /* add: b, activation and upsample: y starts one element past a 16-byte
                            * boundary (dense, but off the backends' vector paths) */
    dk_dtype src_dtype;    /* convert: the input's dtype (output: the case dtype) */
    hc_layout src_layout;  /* convert: the input's layout (output: the case layout) */
} hc_elementwise;

typedef struct hc_case {
    char name[128];
    hc_op op;
    dk_dtype dtype;
    hc_layout layout;      /* NONE where the op has no image layout */
    int quick;             /* part of the --quick subset */
    int prepare;           /* call dk_prepare_weight first, then re-upload and rerun */
    int out_gap;           /* the output view has a gap after every row / pixel (strided output) */
    int in_gap;            /* likewise the activation inputs (x, a, residual; not weights) */
    hc_conv conv;
    hc_conv3d c3;
    hc_matmul mm;
    hc_norm norm;
    hc_attention attn;
    hc_elementwise ew;
} hc_case;

/* Builds the full expanded list (static storage, built once).  Returns the
 * number of cases; *out points at them.  Returns -1 if two cases share a name
 * (a harness bug). */
int hc_cases(const hc_case **out);

const char *hc_op_name(hc_op op);
const char *hc_layout_name(hc_layout layout);

#endif /* HC_CASES_H */
