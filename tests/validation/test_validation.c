/* Every validation rule: a valid call of one op is built, exactly one rule is
 * broken, and the op must return the expected status with a message containing
 * the expected text, without having written its output (poisoned beforehand).
 * Valid variants (in place, broadcast inputs, dtype conversion) must pass
 * validation.  Also: a NULL ctx reports through dk_last_error(NULL), and a
 * valid call right after a failed one still works.
 *
 * The file is over 1,000 lines because the rule list is: tv_cases holds one
 * row per rule (about 380 rows) next to the small mutators the rows name; the
 * driver around them is short, and keeping rows and mutators together is what
 * makes a new rule one edit. */
#include <difkern.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TV_MAXT 5
#define TV_BUF_BYTES 16384u
#define TV_POISON 0x7fc00001u /* a quiet NaN in f32; two non-zero halves in 16-bit */

typedef enum tv_op {
    TV_CONV2D, TV_CONVT, TV_MATMUL, TV_LINEAR, TV_GN, TV_LN, TV_ATTN,
    TV_ACT, TV_ADD, TV_UPS, TV_CONVERT, TV_PREP, TV_GN_STATS, TV_GN_APPLY,
    TV_ACTS, /* dk_activation_scaled: alpha, beta are in_scale, out_scale */
    TV_RMS
} tv_op;

/* Argument slots per op (the order of the op's tensor arguments). */
enum { X = 0, W = 1, BIAS = 2, RES = 3, Y = 4 };        /* conv, conv_transpose, matmul, linear */
enum { GAMMA = 1, BETA = 2, NY = 3, STATS = 4 };       /* group_norm, layer_norm, rms_norm: x, gamma, beta, y; split: stats */
enum { Q = 0, K = 1, V = 2, O = 3 };                    /* attention */
enum { AY = 1 };                                        /* activation, upsample, convert: x, y */
enum { A = 0, B = 1, DY = 2 };                          /* add */

typedef struct tv_call {
    tv_op op;
    dk_context *ctx;
    int desc_null;
    dk_conv2d_desc conv;
    dk_conv_transpose2d_desc convt;
    dk_matmul_desc mm;
    dk_group_norm_desc gn;
    dk_layer_norm_desc ln;
    dk_rms_norm_desc rms;
    dk_attention_desc attn;
    dk_activation act;
    float alpha, beta;
    dk_weight_use use;
    dk_tensor t[TV_MAXT];
    int present[TV_MAXT];
    int out;                 /* slot of the output, -1: none */
    dk_buffer *bufs[TV_MAXT];
    int nbufs;
} tv_call;

static uint64_t tv_rng = 0x9e3779b97f4a7c15ull;
static float tv_randf(void) {
    tv_rng ^= tv_rng << 13;
    tv_rng ^= tv_rng >> 7;
    tv_rng ^= tv_rng << 17;
    return (float)((tv_rng >> 11) & 0xffffff) / 8388608.0f - 1.0f;
}

#include "../check.h"

/* A fresh buffer of random values holding a contiguous tensor of slot i. */
static void tv_tensor(tv_call *c, int i, dk_dtype dt, int32_t ndim, int64_t s0, int64_t s1, int64_t s2,
                      int64_t s3) {
    int64_t shape[4];
    static unsigned char data[TV_BUF_BYTES];
    size_t j;
    dk_buffer *buf = NULL;
    shape[0] = s0; shape[1] = s1; shape[2] = s2; shape[3] = s3;
    if (dk_buffer_create(c->ctx, TV_BUF_BYTES, &buf) != DK_OK) {
        printf("FAIL: dk_buffer_create: %s\n", dk_last_error(c->ctx));
        exit(1);
    }
    for (j = 0; j < TV_BUF_BYTES; j += 4) {
        float f = tv_randf();
        memcpy(data + j, &f, 4);
    }
    if (dt != DK_F32)
        for (j = 0; j < TV_BUF_BYTES; j += 2) {
            uint16_t h = dt == DK_F16 ? dk_f32_to_f16(tv_randf()) : dk_f32_to_bf16(tv_randf());
            memcpy(data + j, &h, 2);
        }
    dk_buffer_upload(c->ctx, buf, 0, data, TV_BUF_BYTES);
    c->bufs[c->nbufs++] = buf;
    c->t[i] = dk_tensor_contiguous(buf, 0, dt, ndim, shape);
    c->present[i] = 1;
}

/* Make slot i NHWC (it must be 4-D contiguous NCHW). */
static void tv_nhwc(tv_call *c, int i) {
    dk_tensor *t = &c->t[i];
    *t = dk_tensor_nhwc(t->buffer, t->offset, t->dtype, t->shape[0], t->shape[1], t->shape[2], t->shape[3]);
}

/* A valid call of op: small shapes, f32, random data. */
static void tv_base(tv_call *c, dk_context *ctx, tv_op op) {
    memset(c, 0, sizeof *c);
    c->op = op;
    c->ctx = ctx;
    c->out = -1;
    dk_conv2d_desc_init(&c->conv);
    dk_conv_transpose2d_desc_init(&c->convt);
    dk_matmul_desc_init(&c->mm);
    dk_group_norm_desc_init(&c->gn);
    dk_layer_norm_desc_init(&c->ln);
    dk_rms_norm_desc_init(&c->rms);
    dk_attention_desc_init(&c->attn);
    c->act = DK_ACT_SILU;
    c->alpha = 0.5f;
    c->beta = 2.0f;
    switch (op) {
    case TV_CONV2D: /* x [2,4,5,6], groups 2, 3x3, pad 1 -> y [2,6,5,6] (NHWC) */
        c->conv.pad_h = c->conv.pad_w = 1;
        c->conv.groups = 2;
        c->conv.activation = DK_ACT_SILU;
        tv_tensor(c, X, DK_F32, 4, 2, 4, 5, 6);
        tv_tensor(c, W, DK_F32, 4, 6, 2, 3, 3);
        tv_tensor(c, BIAS, DK_F32, 1, 6, 1, 1, 1);
        tv_tensor(c, RES, DK_F32, 4, 2, 6, 5, 6);
        tv_tensor(c, Y, DK_F32, 4, 2, 6, 5, 6);
        tv_nhwc(c, Y);
        c->out = Y;
        break;
    case TV_CONVT: /* x [1,4,3,3], w [4,3,3,3], stride 2, pad 1, output_padding 1 -> y [1,3,6,6] */
        c->convt.stride_h = c->convt.stride_w = 2;
        c->convt.pad_h = c->convt.pad_w = 1;
        c->convt.output_padding_h = c->convt.output_padding_w = 1;
        tv_tensor(c, X, DK_F32, 4, 1, 4, 3, 3);
        tv_tensor(c, W, DK_F32, 4, 4, 3, 3, 3);
        tv_tensor(c, BIAS, DK_F32, 1, 3, 1, 1, 1);
        tv_tensor(c, RES, DK_F32, 4, 1, 3, 6, 6);
        tv_tensor(c, Y, DK_F32, 4, 1, 3, 6, 6);
        c->out = Y;
        break;
    case TV_MATMUL: /* a [2,3,4] x b [4,5] -> y [2,3,5] */
        tv_tensor(c, X, DK_F32, 3, 2, 3, 4, 1);
        tv_tensor(c, W, DK_F32, 2, 4, 5, 1, 1);
        tv_tensor(c, BIAS, DK_F32, 1, 5, 1, 1, 1);
        tv_tensor(c, RES, DK_F32, 3, 2, 3, 5, 1);
        tv_tensor(c, Y, DK_F32, 3, 2, 3, 5, 1);
        c->out = Y;
        break;
    case TV_LINEAR: /* x [3,4], weight [5,4] -> y [3,5] */
        tv_tensor(c, X, DK_F32, 2, 3, 4, 1, 1);
        tv_tensor(c, W, DK_F32, 2, 5, 4, 1, 1);
        tv_tensor(c, BIAS, DK_F32, 1, 5, 1, 1, 1);
        tv_tensor(c, RES, DK_F32, 2, 3, 5, 1, 1);
        tv_tensor(c, Y, DK_F32, 2, 3, 5, 1, 1);
        c->out = Y;
        break;
    case TV_GN: /* x [2,4,3,3], 2 groups */
        c->gn.groups = 2;
        tv_tensor(c, X, DK_F32, 4, 2, 4, 3, 3);
        tv_tensor(c, GAMMA, DK_F32, 1, 4, 1, 1, 1);
        tv_tensor(c, BETA, DK_F32, 1, 4, 1, 1, 1);
        tv_tensor(c, NY, DK_F32, 4, 2, 4, 3, 3);
        c->out = NY;
        break;
    case TV_GN_STATS: /* x [2,4,3,3], 2 groups -> stats [2,2,2] */
    case TV_GN_APPLY: /* the same, normalized with given stats into y */
        c->gn.groups = 2;
        tv_tensor(c, X, DK_F32, 4, 2, 4, 3, 3);
        tv_tensor(c, STATS, DK_F32, 3, 2, 2, 2, 1);
        c->out = STATS;
        if (op == TV_GN_STATS) break;
        tv_tensor(c, GAMMA, DK_F32, 1, 4, 1, 1, 1);
        tv_tensor(c, BETA, DK_F32, 1, 4, 1, 1, 1);
        tv_tensor(c, NY, DK_F32, 4, 2, 4, 3, 3);
        c->out = NY;
        break;
    case TV_LN: /* x [2,3,8] over D = 8 */
        tv_tensor(c, X, DK_F32, 3, 2, 3, 8, 1);
        tv_tensor(c, GAMMA, DK_F32, 1, 8, 1, 1, 1);
        tv_tensor(c, BETA, DK_F32, 1, 8, 1, 1, 1);
        tv_tensor(c, NY, DK_F32, 3, 2, 3, 8, 1);
        c->out = NY;
        break;
    case TV_RMS: /* x [2,4,3,3] over C = 4 */
        tv_tensor(c, X, DK_F32, 4, 2, 4, 3, 3);
        tv_tensor(c, GAMMA, DK_F32, 1, 4, 1, 1, 1);
        tv_tensor(c, BETA, DK_F32, 1, 4, 1, 1, 1);
        tv_tensor(c, NY, DK_F32, 4, 2, 4, 3, 3);
        c->out = NY;
        break;
    case TV_ATTN: /* q [1,2,5,8], k [1,2,7,8], v [1,2,7,6] -> out [1,2,5,6] */
        tv_tensor(c, Q, DK_F32, 4, 1, 2, 5, 8);
        tv_tensor(c, K, DK_F32, 4, 1, 2, 7, 8);
        tv_tensor(c, V, DK_F32, 4, 1, 2, 7, 6);
        tv_tensor(c, O, DK_F32, 4, 1, 2, 5, 6);
        c->out = O;
        break;
    case TV_ACT:
    case TV_ACTS:
        tv_tensor(c, X, DK_F32, 3, 2, 3, 4, 1);
        tv_tensor(c, AY, DK_F32, 3, 2, 3, 4, 1);
        c->out = AY;
        break;
    case TV_ADD:
        tv_tensor(c, A, DK_F32, 3, 2, 3, 4, 1);
        tv_tensor(c, B, DK_F32, 3, 2, 3, 4, 1);
        tv_tensor(c, DY, DK_F32, 3, 2, 3, 4, 1);
        c->out = DY;
        break;
    case TV_UPS: /* [1,2,3,3] -> [1,2,6,6] */
        tv_tensor(c, X, DK_F32, 4, 1, 2, 3, 3);
        tv_tensor(c, AY, DK_F32, 4, 1, 2, 6, 6);
        c->out = AY;
        break;
    case TV_CONVERT: /* f32 NCHW -> f16 NHWC */
        tv_tensor(c, X, DK_F32, 4, 1, 2, 3, 4);
        tv_tensor(c, AY, DK_F16, 4, 1, 2, 3, 4);
        tv_nhwc(c, AY);
        c->out = AY;
        break;
    case TV_PREP:
        c->use = DK_WEIGHT_CONV2D;
        tv_tensor(c, X, DK_F32, 4, 6, 2, 3, 3);
        break;
    }
}

static void tv_free(tv_call *c) {
    int i;
    for (i = 0; i < c->nbufs; i++) dk_buffer_destroy(c->ctx, c->bufs[i]);
    c->nbufs = 0;
}

static const dk_tensor *tv_arg(const tv_call *c, int i) { return c->present[i] ? &c->t[i] : NULL; }

static dk_status tv_run(const tv_call *c, dk_context *ctx) {
    const dk_tensor *t0 = tv_arg(c, 0), *t1 = tv_arg(c, 1), *t2 = tv_arg(c, 2), *t3 = tv_arg(c, 3),
                    *t4 = tv_arg(c, 4);
    switch (c->op) {
    case TV_CONV2D: return dk_conv2d(ctx, c->desc_null ? NULL : &c->conv, t0, t1, t2, t3, t4);
    case TV_CONVT: return dk_conv_transpose2d(ctx, c->desc_null ? NULL : &c->convt, t0, t1, t2, t3, t4);
    case TV_MATMUL: return dk_matmul(ctx, c->desc_null ? NULL : &c->mm, t0, t1, t2, t3, t4);
    case TV_LINEAR: return dk_linear(ctx, c->desc_null ? NULL : &c->mm, t0, t1, t2, t3, t4);
    case TV_GN: return dk_group_norm(ctx, c->desc_null ? NULL : &c->gn, t0, t1, t2, t3);
    case TV_LN: return dk_layer_norm(ctx, c->desc_null ? NULL : &c->ln, t0, t1, t2, t3);
    case TV_RMS: return dk_rms_norm(ctx, c->desc_null ? NULL : &c->rms, t0, t1, t2, t3);
    case TV_ATTN: return dk_attention(ctx, c->desc_null ? NULL : &c->attn, t0, t1, t2, t3);
    case TV_ACT: return dk_activation_forward(ctx, c->act, t0, t1);
    case TV_ACTS: return dk_activation_scaled(ctx, c->alpha, c->act, c->beta, t0, t1);
    case TV_ADD: return dk_add(ctx, c->alpha, t0, c->beta, t1, c->act, t2);
    case TV_UPS: return dk_upsample_nearest(ctx, t0, t1);
    case TV_CONVERT: return dk_convert(ctx, t0, t1);
    case TV_PREP: return dk_prepare_weight(ctx, c->use, t0);
    case TV_GN_STATS: return dk_group_norm_stats(ctx, c->desc_null ? NULL : &c->gn, t0, t4);
    case TV_GN_APPLY: return dk_group_norm_apply(ctx, c->desc_null ? NULL : &c->gn, t0, t4, t1, t2, t3);
    }
    return DK_ERR_INTERNAL;
}

static const char *tv_op_name(tv_op op) {
    static const char *names[] = {"dk_conv2d", "dk_conv_transpose2d", "dk_matmul", "dk_linear",
                                  "dk_group_norm", "dk_layer_norm", "dk_attention", "dk_activation_forward",
                                  "dk_add", "dk_upsample_nearest", "dk_convert", "dk_prepare_weight",
                                  "dk_group_norm_stats", "dk_group_norm_apply", "dk_activation_scaled",
                                  "dk_rms_norm"};
    return names[op];
}

/* ------------------------------------------------------------- mutations */

typedef void (*tv_mutate_fn)(tv_call *c);
#define MUT(name, ...) static void name(tv_call *c) { __VA_ARGS__; }
#define BIG ((int64_t)1 << 40)

MUT(m_none, (void)c)
/* pointers */
MUT(m_desc_null, c->desc_null = 1)
MUT(m_x_null, c->present[X] = 0)
MUT(m_w_null, c->present[W] = 0)
MUT(m_y_null, c->present[Y] = 0)
MUT(m_slot1_null, c->present[1] = 0)
MUT(m_slot2_null, c->present[2] = 0)
MUT(m_slot3_null, c->present[3] = 0)
MUT(m_no_bias_res, c->present[BIAS] = 0; c->present[RES] = 0)
/* tensor well-formedness (on x unless named) */
MUT(m_x_buffer_null, c->t[X].buffer = NULL)
MUT(m_x_dtype_7, c->t[X].dtype = (dk_dtype)7)
MUT(m_x_dtype_0, c->t[X].dtype = (dk_dtype)0)
MUT(m_x_ndim_0, c->t[X].ndim = 0)
MUT(m_x_ndim_6, c->t[X].ndim = 6)
MUT(m_x_ndim_neg, c->t[X].ndim = -3)
MUT(m_x_shape_0, c->t[X].shape[2] = 0)
MUT(m_x_shape_neg, c->t[X].shape[0] = -2)
MUT(m_x_stride_neg, c->t[X].strides[1] = -1)
MUT(m_x_numel_ovf, c->t[X].shape[0] = BIG; c->t[X].shape[1] = BIG; c->t[X].strides[0] = 0; c->t[X].strides[1] = 0)
MUT(m_x_index_ovf, c->t[X].shape[0] = (int64_t)1 << 33; c->t[X].strides[0] = (int64_t)1 << 31)
MUT(m_x_bytes_ovf, c->t[X].strides[0] = (int64_t)1 << 62)
MUT(m_x_offset_ovf, c->t[X].offset = UINT64_MAX - 3)
MUT(m_x_offset_unaligned, c->t[X].offset = 2)
MUT(m_x_offset_past, c->t[X].offset = TV_BUF_BYTES - 4)
MUT(m_x_stride_past, c->t[X].strides[0] = 4096)
MUT(m_y_stride_past, c->t[c->out].strides[0] = 4096)
MUT(m_o_stride_past, c->t[O].strides[1] = 4096)
MUT(m_y_offset_unaligned16, c->t[c->out].offset = 1)
MUT(m_y_shape_0, c->t[c->out].shape[0] = 0)
/* conv2d descriptor */
MUT(m_cv_stride_h, c->conv.stride_h = 0)
MUT(m_cv_stride_w, c->conv.stride_w = -1)
MUT(m_cv_pad_h, c->conv.pad_h = -1)
MUT(m_cv_pad_w, c->conv.pad_w = -5)
MUT(m_cv_dil_h, c->conv.dilation_h = 0)
MUT(m_cv_dil_w, c->conv.dilation_w = -2)
MUT(m_cv_groups, c->conv.groups = 0)
MUT(m_cv_upsample3, c->conv.upsample = 3)
MUT(m_cv_upsample0, c->conv.upsample = 0)
MUT(m_cv_act, c->conv.activation = (dk_activation)6)
MUT(m_cv_act_neg, c->conv.activation = (dk_activation)-1)
MUT(m_cv_oscale, c->conv.output_scale = NAN)
MUT(m_cv_rscale, c->conv.residual_scale = INFINITY)
/* conv2d shapes */
MUT(m_cv_x_ndim3, c->t[X].ndim = 3)
MUT(m_cv_w_ndim3, c->t[W].ndim = 3)
MUT(m_cv_y_ndim2, c->t[Y].ndim = 2)
MUT(m_cv_w_f16, c->t[W].dtype = DK_F16)
MUT(m_cv_y_bf16, c->t[Y].dtype = DK_BF16)
MUT(m_cv_bias_f16, c->t[BIAS].dtype = DK_F16)
MUT(m_cv_res_f16, c->t[RES].dtype = DK_F16)
MUT(m_cv_cin_groups, c->t[X].shape[1] = 5)
MUT(m_cv_cout_groups, c->t[W].shape[0] = 5)
MUT(m_cv_w_cin, c->t[W].shape[1] = 3)
MUT(m_cv_kernel_big, c->t[W].shape[2] = 9; c->t[W].strides[2] = 0)
MUT(m_cv_kernel_ovf, c->t[W].shape[2] = BIG; c->t[W].strides[2] = 0; c->conv.dilation_h = 1 << 30)
MUT(m_cv_y_n, c->t[Y].shape[0] = 1)
MUT(m_cv_y_c, c->t[Y].shape[1] = 4)
MUT(m_cv_y_h, c->t[Y].shape[2] = 4)
MUT(m_cv_y_w, c->t[Y].shape[3] = 7)
MUT(m_cv_stride2, c->conv.stride_h = 2)
MUT(m_cv_up2, c->conv.upsample = 2)
MUT(m_cv_dil2, c->conv.dilation_w = 2)
MUT(m_cv_bias_ndim, c->t[BIAS].ndim = 2; c->t[BIAS].shape[1] = 1)
MUT(m_cv_bias_len, c->t[BIAS].shape[0] = 4)
MUT(m_cv_res_shape, c->t[RES].shape[3] = 5)
/* conv2d aliasing */
MUT(m_cv_y_on_x, c->t[Y].buffer = c->t[X].buffer; c->t[Y].offset = 64)
MUT(m_cv_y_on_w, c->t[Y].buffer = c->t[W].buffer)
MUT(m_cv_y_on_bias, c->t[Y].buffer = c->t[BIAS].buffer; c->t[Y].offset = 20)
MUT(m_cv_y_is_res, c->t[RES] = c->t[Y])
MUT(m_cv_y_after_x, c->t[Y].buffer = c->t[X].buffer; c->t[Y].offset = 2 * 4 * 5 * 6 * 4)
MUT(m_cv_y_self_n, c->t[Y].strides[0] = 0)
MUT(m_cv_y_self_cw, c->t[Y].strides[3] = 1)
MUT(m_cv_x_broadcast, c->t[X].strides[0] = 0)
MUT(m_cv_y_unit_dim_stride, c->t[Y].shape[0] = 1; c->t[Y].strides[0] = 0; c->t[X].shape[0] = 1;
    c->t[RES].shape[0] = 1)
MUT(m_cv_all_f16, c->t[X].dtype = DK_F16; c->t[W].dtype = DK_F16; c->t[BIAS].dtype = DK_F16;
    c->t[RES].dtype = DK_F16; c->t[Y].dtype = DK_F16)
/* conv2d padding per side, the activation after the residual, the residual in place */
#define TV_SIDES(t, b, l, r) (c->conv.pad_top = (t), c->conv.pad_bottom = (b), c->conv.pad_left = (l), c->conv.pad_right = (r))
MUT(m_cv_sides_same, TV_SIDES(1, 1, 1, 1))
MUT(m_cv_sides_asym, TV_SIDES(0, 1, 2, 0); c->conv.pad_h = c->conv.pad_w = 0; c->t[Y].shape[2] = 4;
    c->t[RES].shape[2] = 4)
MUT(m_cv_sides_pad_h_top, TV_SIDES(1, 0, 1, 1); c->t[Y].shape[2] = 4; c->t[RES].shape[2] = 4)
MUT(m_cv_sides_s2_encoder, TV_SIDES(0, 1, 0, 1); c->conv.pad_h = c->conv.pad_w = 0; c->conv.stride_h = 2;
    c->conv.stride_w = 2; c->t[Y].shape[2] = 2; c->t[Y].shape[3] = 3; c->t[RES].shape[2] = 2; c->t[RES].shape[3] = 3)
MUT(m_cv_sides_mixed, c->conv.pad_top = 1)
MUT(m_cv_sides_mixed2, TV_SIDES(0, 1, -1, 1))
MUT(m_cv_sides_neg, TV_SIDES(1, -2, 1, 1))
MUT(m_cv_sides_pad_h, TV_SIDES(0, 1, 1, 1))
MUT(m_cv_sides_pad_w, TV_SIDES(1, 1, 2, 0))
MUT(m_cv_sides_y_h, TV_SIDES(0, 1, 1, 1); c->conv.pad_h = 0)
MUT(m_cv_sides_y_w, TV_SIDES(1, 1, 0, 3); c->conv.pad_w = 0)
MUT(m_cv_sides_big, TV_SIDES(1, 1, 1, 0x7fffffff); c->conv.stride_w = 0x7fffffff)
MUT(m_cv_post_act, c->conv.post_activation = (dk_activation)7)
MUT(m_cv_post_act_neg, c->conv.post_activation = (dk_activation)-1)
MUT(m_cv_post_relu, c->conv.post_activation = DK_ACT_RELU)
MUT(m_cv_res_shifted, c->t[RES] = c->t[Y]; c->t[RES].offset += 4)
MUT(m_cv_res_other_strides, c->t[RES] = c->t[Y]; c->t[RES].strides[3] = 1; c->t[RES].strides[2] = 6;
    c->t[RES].strides[1] = 30; c->t[RES].strides[0] = 180)
MUT(m_cv_f16_f32bias, c->t[X].dtype = DK_F16; c->t[W].dtype = DK_F16; c->t[RES].dtype = DK_F16;
    c->t[Y].dtype = DK_F16)
MUT(m_cv_f16_bf16bias, c->t[X].dtype = DK_F16; c->t[W].dtype = DK_F16; c->t[RES].dtype = DK_F16;
    c->t[Y].dtype = DK_F16; c->t[BIAS].dtype = DK_BF16)
#undef TV_SIDES
/* conv_transpose2d */
MUT(m_ct_stride_h, c->convt.stride_h = 0)
MUT(m_ct_stride_w, c->convt.stride_w = 0)
MUT(m_ct_pad_h, c->convt.pad_h = -1)
MUT(m_ct_pad_w, c->convt.pad_w = -1)
MUT(m_ct_dil_h, c->convt.dilation_h = 0)
MUT(m_ct_dil_w, c->convt.dilation_w = 0)
MUT(m_ct_opad_neg, c->convt.output_padding_h = -1)
MUT(m_ct_opad_big, c->convt.output_padding_w = 2)
MUT(m_ct_opad_dil_ok, c->convt.stride_w = 1; c->convt.dilation_w = 3; c->convt.output_padding_w = 2;
    c->convt.pad_w = 0; c->t[Y].shape[3] = 11; c->t[RES].shape[3] = 11; c->t[Y].strides[2] = 11;
    c->t[Y].strides[1] = 66; c->t[Y].strides[0] = 198; c->present[RES] = 0)
MUT(m_ct_groups, c->convt.groups = -1)
MUT(m_ct_groups_div, c->convt.groups = 3)
MUT(m_ct_act, c->convt.activation = (dk_activation)99)
MUT(m_ct_oscale, c->convt.output_scale = -INFINITY)
MUT(m_ct_rscale, c->convt.residual_scale = NAN)
MUT(m_ct_w_cin, c->t[W].shape[0] = 3)
MUT(m_ct_w_ndim, c->t[W].ndim = 2)
MUT(m_ct_y_c, c->t[Y].shape[1] = 6)
MUT(m_ct_y_h, c->t[Y].shape[2] = 5)
MUT(m_ct_y_w, c->t[Y].shape[3] = 7)
MUT(m_ct_out_small, c->t[X].shape[2] = 1; c->t[W].shape[2] = 1; c->convt.pad_h = 2)
MUT(m_ct_ovf, c->t[X].shape[3] = BIG; c->t[X].strides[3] = 0; c->convt.stride_w = 1 << 30)
MUT(m_ct_bias_len, c->t[BIAS].shape[0] = 4)
MUT(m_ct_res_shape, c->t[RES].shape[2] = 5)
MUT(m_ct_y_on_w, c->t[Y].buffer = c->t[W].buffer; c->t[Y].offset = 400)
MUT(m_ct_y_self, c->t[Y].strides[2] = 3)
MUT(m_ct_x_dtype, c->t[X].dtype = DK_BF16)
MUT(m_ct_post_act, c->convt.post_activation = (dk_activation)6)
MUT(m_ct_post_tanh_in_place, c->convt.post_activation = DK_ACT_TANH; c->t[RES] = c->t[Y])
MUT(m_ct_res_shifted, c->t[RES] = c->t[Y]; c->t[RES].offset += 8)
/* matmul / linear */
MUT(m_mm_act, c->mm.activation = (dk_activation)6)
MUT(m_mm_oscale, c->mm.output_scale = NAN)
MUT(m_mm_rscale, c->mm.residual_scale = INFINITY)
MUT(m_mm_a_ndim1, c->t[X].ndim = 1)
MUT(m_mm_a_ndim4, c->t[X].ndim = 4; c->t[X].shape[3] = 1)
MUT(m_mm_b_ndim4, c->t[W].ndim = 4; c->t[W].shape[2] = 1; c->t[W].shape[3] = 1)
MUT(m_mm_k, c->t[W].shape[0] = 3)
MUT(m_mm_batch, c->t[W] = dk_tensor_contiguous(c->t[W].buffer, 0, DK_F32, 3, (const int64_t[]){3, 4, 5}))
MUT(m_mm_batch_ok, c->t[W] = dk_tensor_contiguous(c->t[W].buffer, 0, DK_F32, 3, (const int64_t[]){2, 4, 5}))
MUT(m_mm_b_batched_only, c->t[X] = dk_tensor_contiguous(c->t[X].buffer, 0, DK_F32, 2, (const int64_t[]){3, 4});
    c->t[W] = dk_tensor_contiguous(c->t[W].buffer, 0, DK_F32, 3, (const int64_t[]){2, 4, 5}))
MUT(m_mm_y_ndim2, c->t[Y].ndim = 2; c->t[Y].shape[0] = 3; c->t[Y].shape[1] = 5)
MUT(m_mm_y_ndim3_unbatched, c->t[X] = dk_tensor_contiguous(c->t[X].buffer, 0, DK_F32, 2, (const int64_t[]){3, 4});
    c->present[RES] = 0)
MUT(m_mm_y_b, c->t[Y].shape[0] = 1)
MUT(m_mm_y_m, c->t[Y].shape[1] = 4)
MUT(m_mm_y_n, c->t[Y].shape[2] = 6)
MUT(m_mm_bias_len, c->t[BIAS].shape[0] = 4)
MUT(m_mm_res_shape, c->t[RES].shape[1] = 2)
MUT(m_mm_b_f16, c->t[W].dtype = DK_F16)
MUT(m_mm_y_f16, c->t[Y].dtype = DK_F16)
MUT(m_mm_y_on_a, c->t[Y].buffer = c->t[X].buffer; c->t[Y].offset = 8)
MUT(m_mm_y_on_b, c->t[Y].buffer = c->t[W].buffer; c->t[Y].offset = 76)
MUT(m_mm_y_on_res, c->t[Y].buffer = c->t[RES].buffer; c->t[Y].offset = 4)
MUT(m_mm_y_self, c->t[Y].strides[1] = 2)
MUT(m_mm_transposed_b, c->t[W].strides[0] = 1; c->t[W].strides[1] = 4)
MUT(m_mm_post_act, c->mm.post_activation = (dk_activation)6)
MUT(m_mm_post_relu_in_place, c->mm.post_activation = DK_ACT_RELU; c->t[RES] = c->t[Y])
MUT(m_li_w_ndim, c->t[W].ndim = 3; c->t[W].shape[2] = 1)
MUT(m_li_k, c->t[W].shape[1] = 3)
MUT(m_li_y_n, c->t[Y].shape[1] = 4)
MUT(m_li_w_dtype, c->t[W].dtype = DK_BF16)
MUT(m_li_y_on_w, c->t[Y].buffer = c->t[W].buffer; c->t[Y].offset = 40)
MUT(m_li_w_past, c->t[W].strides[0] = 4000)
/* group_norm */
MUT(m_gn_groups0, c->gn.groups = 0)
MUT(m_gn_groups3, c->gn.groups = 3)
MUT(m_gn_eps0, c->gn.eps = 0.0f)
MUT(m_gn_eps_neg, c->gn.eps = -1e-5f)
MUT(m_gn_eps_nan, c->gn.eps = NAN)
MUT(m_gn_eps_inf, c->gn.eps = INFINITY)
MUT(m_gn_act, c->gn.activation = (dk_activation)12)
MUT(m_gn_no_affine, c->present[GAMMA] = 0; c->present[BETA] = 0)
MUT(m_gn_x_ndim, c->t[X].ndim = 3)
MUT(m_gn_y_shape, c->t[NY].shape[2] = 2)
MUT(m_gn_y_dtype, c->t[NY].dtype = DK_F16)
MUT(m_gn_gamma_len, c->t[GAMMA].shape[0] = 2)
MUT(m_gn_beta_ndim, c->t[BETA].ndim = 2; c->t[BETA].shape[1] = 1)
MUT(m_gn_gamma_dtype, c->t[GAMMA].dtype = DK_BF16)
MUT(m_gn_bf16_f32affine, c->t[X].dtype = DK_BF16; c->t[NY].dtype = DK_BF16)
MUT(m_gn_bf16_mixed_affine, c->t[X].dtype = DK_BF16; c->t[NY].dtype = DK_BF16; c->t[BETA].dtype = DK_BF16)
MUT(m_gn_f16_bf16_gamma, c->t[X].dtype = DK_F16; c->t[NY].dtype = DK_F16; c->t[GAMMA].dtype = DK_BF16)
MUT(m_gn_inplace, c->t[NY] = c->t[X])
MUT(m_gn_inplace_nhwc, tv_nhwc(c, X); c->t[NY] = c->t[X])
MUT(m_gn_partial, c->t[NY] = c->t[X]; c->t[NY].offset = 4)
MUT(m_gn_other_strides, c->t[NY] = c->t[X]; tv_nhwc(c, NY))
/* split group_norm: stats [N, groups, 2] f32, dense */
MUT(m_gs_null, c->present[STATS] = 0)
MUT(m_gs_dtype, c->t[STATS].dtype = DK_F16)
MUT(m_gs_ndim, c->t[STATS].ndim = 2)
MUT(m_gs_groups, c->t[STATS].shape[1] = 4)
MUT(m_gs_pair, c->t[STATS].shape[2] = 3)
MUT(m_gs_strided, c->t[STATS].strides[0] = 8)
MUT(m_gs_on_x, c->t[STATS].buffer = c->t[X].buffer)
MUT(m_gs_eps_ignored, c->gn.eps = 0.0f; c->gn.activation = (dk_activation)99)
MUT(m_gs_y_on_stats, c->t[NY].buffer = c->t[STATS].buffer)
MUT(m_gs_inplace, c->t[NY] = c->t[X])
MUT(m_gn_y_on_gamma, c->t[NY].buffer = c->t[GAMMA].buffer)
MUT(m_gn_y_self, c->t[NY].strides[1] = 0)
/* layer_norm */
MUT(m_ln_eps0, c->ln.eps = 0.0f)
MUT(m_ln_eps_nan, c->ln.eps = NAN)
MUT(m_ln_act, c->ln.activation = (dk_activation)-7)
MUT(m_ln_gamma_len, c->t[GAMMA].shape[0] = 3)
MUT(m_ln_beta_len, c->t[BETA].shape[0] = 16)
MUT(m_ln_gamma_ndim, c->t[GAMMA].ndim = 2; c->t[GAMMA].shape[1] = 8; c->t[GAMMA].shape[0] = 1)
MUT(m_ln_y_shape, c->t[NY].shape[2] = 7)
MUT(m_ln_y_ndim, c->t[NY].ndim = 2; c->t[NY].shape[1] = 24)
MUT(m_ln_gamma_only, c->present[BETA] = 0)
MUT(m_ln_1d, c->t[X].ndim = 1; c->t[X].shape[0] = 8; c->t[X].strides[0] = 1; c->t[NY].ndim = 1;
    c->t[NY].shape[0] = 8; c->t[NY].strides[0] = 1)
MUT(m_ln_inplace, c->t[NY] = c->t[X])
MUT(m_ln_partial, c->t[NY] = c->t[X]; c->t[NY].offset = 32)
MUT(m_ln_y_on_beta, c->t[NY].buffer = c->t[BETA].buffer; c->t[NY].offset = 28)
MUT(m_ln_beta_dtype, c->t[BETA].dtype = DK_F16)
MUT(m_ln_f16_f32gamma, c->t[X].dtype = DK_F16; c->t[NY].dtype = DK_F16; c->t[BETA].dtype = DK_F16)
/* rms_norm */
MUT(m_rms_l2, c->rms.form = DK_RMS_NORM_L2; c->rms.eps = 1e-12f)
MUT(m_rms_inplace, c->t[NY] = c->t[X])
MUT(m_rms_2d, c->t[X].ndim = 2; c->t[X].strides[1] = 1; c->t[X].strides[0] = 4; c->t[NY].ndim = 2;
    c->t[NY].strides[1] = 1; c->t[NY].strides[0] = 4)
MUT(m_rms_5d, c->t[X].ndim = 5; c->t[X].shape[4] = 1; c->t[X].strides[4] = 1; c->t[NY].ndim = 5;
    c->t[NY].shape[4] = 1; c->t[NY].strides[4] = 1)
MUT(m_rms_x_nhwc_y_nchw, tv_nhwc(c, X))
MUT(m_rms_no_affine, c->present[GAMMA] = 0; c->present[BETA] = 0)
MUT(m_rms_beta_only, c->present[GAMMA] = 0)
MUT(m_rms_f16_f32affine, c->t[X].dtype = DK_F16; c->t[NY].dtype = DK_F16)
MUT(m_rms_form, c->rms.form = (dk_rms_norm_form)2)
MUT(m_rms_form_neg, c->rms.form = (dk_rms_norm_form)-1)
MUT(m_rms_eps0, c->rms.eps = 0.0f)
MUT(m_rms_eps_inf, c->rms.eps = INFINITY)
MUT(m_rms_act, c->rms.activation = (dk_activation)9)
MUT(m_rms_1d, c->t[X].ndim = 1; c->t[NY].ndim = 1)
MUT(m_rms_gamma_len, c->t[GAMMA].shape[0] = 3)
MUT(m_rms_beta_ndim, c->t[BETA].ndim = 2; c->t[BETA].shape[1] = 4; c->t[BETA].shape[0] = 1)
MUT(m_rms_y_shape, c->t[NY].shape[1] = 3)
MUT(m_rms_y_dtype, c->t[NY].dtype = DK_BF16)
MUT(m_rms_f32x_f16beta, c->t[BETA].dtype = DK_F16)
MUT(m_rms_mixed_affine, c->t[X].dtype = DK_F16; c->t[NY].dtype = DK_F16; c->t[BETA].dtype = DK_F16)
MUT(m_rms_partial, c->t[NY] = c->t[X]; c->t[NY].offset = 16)
MUT(m_rms_y_on_gamma, c->t[NY].buffer = c->t[GAMMA].buffer)
MUT(m_rms_y_self, c->t[NY].strides[1] = 0)
/* attention */
MUT(m_at_scale_nan, c->attn.scale = NAN)
MUT(m_at_scale_inf, c->attn.scale = -INFINITY)
MUT(m_at_scale_set, c->attn.scale = 0.3f)
MUT(m_at_q_ndim, c->t[Q].ndim = 3)
MUT(m_at_k_ndim, c->t[K].ndim = 2)
MUT(m_at_v_ndim, c->t[V].ndim = 1)
MUT(m_at_o_ndim, c->t[O].ndim = 3)
MUT(m_at_d_big, c->t[Q].shape[3] = 513; c->t[K].shape[3] = 513; c->t[Q].strides[2] = 0;
    c->t[Q].strides[1] = 0; c->t[K].strides[2] = 0; c->t[K].strides[1] = 0)
MUT(m_at_d512, c->t[Q].shape[3] = 512; c->t[K].shape[3] = 512; c->t[Q].strides[2] = 0;
    c->t[Q].strides[1] = 0; c->t[K].strides[2] = 0; c->t[K].strides[1] = 0)
MUT(m_at_dv_big, c->t[V].shape[3] = 600; c->t[V].strides[2] = 0; c->t[V].strides[1] = 0)
MUT(m_at_k_b, c->t[K].shape[0] = 2; c->t[K].strides[0] = 0)
MUT(m_at_k_h, c->t[K].shape[1] = 1)
MUT(m_at_k_d, c->t[K].shape[3] = 4)
MUT(m_at_v_b, c->t[V].shape[0] = 3; c->t[V].strides[0] = 0)
MUT(m_at_v_h, c->t[V].shape[1] = 1)
MUT(m_at_v_n, c->t[V].shape[2] = 6)
MUT(m_at_o_b, c->t[O].shape[0] = 2)
MUT(m_at_o_h, c->t[O].shape[1] = 3)
MUT(m_at_o_n, c->t[O].shape[2] = 7)
MUT(m_at_o_d, c->t[O].shape[3] = 8)
MUT(m_at_k_dtype, c->t[K].dtype = DK_F16)
MUT(m_at_v_dtype, c->t[V].dtype = DK_BF16)
MUT(m_at_o_dtype, c->t[O].dtype = DK_F16)
MUT(m_at_o_on_q, c->t[O].buffer = c->t[Q].buffer; c->t[O].offset = 100)
MUT(m_at_o_on_k, c->t[O].buffer = c->t[K].buffer)
MUT(m_at_o_on_v, c->t[O].buffer = c->t[V].buffer; c->t[O].offset = 7 * 6 * 2 * 4 - 4)
MUT(m_at_o_self, c->t[O].strides[1] = 6)
MUT(m_at_bnhd, /* [B, N, H, D] storage seen as [B, H, N, D] */
    c->t[Q].strides[1] = 8; c->t[Q].strides[2] = 16; c->t[O].strides[1] = 6; c->t[O].strides[2] = 12)
/* activation */
MUT(m_ac_act, c->act = (dk_activation)6)
MUT(m_ac_act_neg, c->act = (dk_activation)-1)
MUT(m_ac_y_shape, c->t[AY].shape[1] = 4)
MUT(m_ac_y_ndim, c->t[AY].ndim = 2)
MUT(m_ac_y_dtype, c->t[AY].dtype = DK_F16)
MUT(m_ac_inplace, c->t[AY] = c->t[X])
MUT(m_ac_partial, c->t[AY] = c->t[X]; c->t[AY].offset = 4)
MUT(m_ac_transposed, c->t[AY] = c->t[X]; c->t[AY].strides[1] = 1; c->t[AY].strides[2] = 3)
MUT(m_ac_y_self, c->t[AY].strides[2] = 0)
MUT(m_ac_x_broadcast, c->t[X].strides[0] = 0; c->t[X].strides[1] = 0)
MUT(m_ac_bf16, c->t[X].dtype = DK_BF16; c->t[AY].dtype = DK_BF16)
/* add */
MUT(m_ad_alpha, c->alpha = NAN)
MUT(m_ad_beta, c->beta = INFINITY)
MUT(m_as_out_ninf, c->beta = -INFINITY)
MUT(m_ad_act, c->act = (dk_activation)100)
MUT(m_ad_b_shape, c->t[B].shape[2] = 3)
MUT(m_ad_y_shape, c->t[DY].shape[0] = 1)
MUT(m_ad_b_ndim, c->t[B].ndim = 4; c->t[B].shape[3] = 1)
MUT(m_ad_b_dtype, c->t[B].dtype = DK_F16)
MUT(m_ad_y_dtype, c->t[DY].dtype = DK_BF16)
MUT(m_ad_y_is_a, c->t[DY] = c->t[A])
MUT(m_ad_y_is_b, c->t[DY] = c->t[B])
MUT(m_ad_all_same, c->t[B] = c->t[A]; c->t[DY] = c->t[A])
MUT(m_ad_y_is_a_part_b, c->t[DY] = c->t[A]; c->t[B] = c->t[A]; c->t[B].offset = 8)
MUT(m_ad_y_part_a, c->t[DY] = c->t[A]; c->t[DY].offset = 44)
MUT(m_ad_y_self, c->t[DY].strides[0] = 4)
MUT(m_ad_b_broadcast, c->t[B].strides[0] = 0; c->t[B].strides[2] = 0)
/* upsample */
MUT(m_up_x_ndim, c->t[X].ndim = 3)
MUT(m_up_y_ndim, c->t[AY].ndim = 2)
MUT(m_up_n, c->t[AY].shape[0] = 2; c->t[AY].strides[0] = 72)
MUT(m_up_c, c->t[AY].shape[1] = 1)
MUT(m_up_odd, c->t[AY].shape[2] = 5; c->t[AY].shape[3] = 2; c->t[AY].strides[2] = 2; c->t[AY].strides[1] = 10;
    c->t[AY].strides[0] = 20)
MUT(m_up_ovf, c->t[X].shape[2] = (int64_t)1 << 62; c->t[X].strides[2] = 0; c->t[X].shape[1] = 1;
    c->t[X].shape[3] = 1; c->t[AY].shape[1] = 1)
MUT(m_up_dtype, c->t[AY].dtype = DK_F16)
MUT(m_up_y_on_x, c->t[AY].buffer = c->t[X].buffer; c->t[AY].offset = 68)
MUT(m_up_y_self, c->t[AY].strides[3] = 0)
/* convert */
MUT(m_cvt_shape, c->t[AY].shape[3] = 3)
MUT(m_cvt_ndim, c->t[AY].ndim = 3)
MUT(m_cvt_same_view, c->t[AY] = c->t[X])
MUT(m_cvt_y_on_x, c->t[AY].buffer = c->t[X].buffer; c->t[AY].offset = 90)
MUT(m_cvt_y_self, c->t[AY].strides[1] = 0)
MUT(m_cvt_bf16, c->t[AY].dtype = DK_BF16)
MUT(m_cvt_same_dtype, c->t[AY].dtype = DK_F32)
MUT(m_cvt_y_dtype, c->t[AY].dtype = (dk_dtype)4)
/* prepare_weight */
MUT(m_pw_use0, c->use = (dk_weight_use)0)
MUT(m_pw_use4, c->use = (dk_weight_use)4)
MUT(m_pw_conv_ndim, c->t[X].ndim = 3)
MUT(m_pw_convt_ndim, c->use = DK_WEIGHT_CONV_TRANSPOSE2D; c->t[X].ndim = 2)
MUT(m_pw_mm_ndim, c->use = DK_WEIGHT_MATMUL_B)
MUT(m_pw_mm_ok, c->use = DK_WEIGHT_MATMUL_B; c->t[X].ndim = 2)
MUT(m_pw_past, c->t[X].offset = TV_BUF_BYTES)
MUT(m_pw_null, c->present[X] = 0)

#define INV DK_ERR_INVALID_ARGUMENT
#define OK DK_OK /* valid: must pass validation (the backend may still say UNSUPPORTED) */

typedef struct tv_case {
    tv_op op;
    tv_mutate_fn mutate;
    dk_status status;
    const char *msg; /* substring of dk_last_error */
} tv_case;

static const tv_case tv_cases[] = {
    /* valid base calls and valid variants */
    {TV_CONV2D, m_none, OK, ""},
    {TV_CONV2D, m_no_bias_res, OK, ""},
    {TV_CONV2D, m_cv_x_broadcast, OK, ""},
    {TV_CONV2D, m_cv_y_unit_dim_stride, OK, ""},
    {TV_CONV2D, m_cv_y_after_x, OK, ""},
    {TV_CONV2D, m_cv_all_f16, OK, ""},
    {TV_CONV2D, m_cv_y_is_res, OK, ""},
    {TV_CONV2D, m_cv_sides_same, OK, ""},
    {TV_CONV2D, m_cv_sides_asym, OK, ""},
    {TV_CONV2D, m_cv_sides_pad_h_top, OK, ""},
    {TV_CONV2D, m_cv_sides_s2_encoder, OK, ""},
    {TV_CONV2D, m_cv_post_relu, OK, ""},
    {TV_CONV2D, m_cv_f16_f32bias, OK, ""},
    {TV_GN, m_gn_bf16_f32affine, OK, ""},
    {TV_CONVT, m_ct_post_tanh_in_place, OK, ""},
    {TV_MATMUL, m_mm_post_relu_in_place, OK, ""},
    {TV_CONVT, m_none, OK, ""},
    {TV_CONVT, m_ct_opad_dil_ok, OK, ""},
    {TV_MATMUL, m_none, OK, ""},
    {TV_MATMUL, m_mm_batch_ok, OK, ""},
    {TV_MATMUL, m_mm_b_batched_only, OK, ""},
    {TV_MATMUL, m_mm_transposed_b, OK, ""},
    {TV_LINEAR, m_none, OK, ""},
    {TV_GN, m_none, OK, ""},
    {TV_GN, m_gn_no_affine, OK, ""},
    {TV_GN, m_gn_inplace, OK, ""},
    {TV_GN, m_gn_inplace_nhwc, OK, ""},
    {TV_LN, m_none, OK, ""},
    {TV_LN, m_ln_gamma_only, OK, ""},
    {TV_LN, m_ln_1d, OK, ""},
    {TV_LN, m_ln_inplace, OK, ""},
    {TV_ATTN, m_none, OK, ""},
    {TV_ATTN, m_at_scale_set, OK, ""},
    {TV_ATTN, m_at_d512, OK, ""},
    {TV_ATTN, m_at_bnhd, OK, ""},
    {TV_ACT, m_none, OK, ""},
    {TV_ACT, m_ac_inplace, OK, ""},
    {TV_ACT, m_ac_x_broadcast, OK, ""},
    {TV_ACT, m_ac_bf16, OK, ""},
    {TV_ADD, m_none, OK, ""},
    {TV_ADD, m_ad_y_is_a, OK, ""},
    {TV_ADD, m_ad_y_is_b, OK, ""},
    {TV_ADD, m_ad_all_same, OK, ""},
    {TV_ADD, m_ad_b_broadcast, OK, ""},
    {TV_UPS, m_none, OK, ""},
    {TV_UPS, m_up_odd, OK, ""},
    {TV_CONVERT, m_none, OK, ""},
    {TV_CONVERT, m_cvt_bf16, OK, ""},
    {TV_CONVERT, m_cvt_same_dtype, OK, ""},
    {TV_PREP, m_none, OK, ""},
    {TV_PREP, m_pw_mm_ok, OK, ""},

    /* required pointers */
    {TV_CONV2D, m_desc_null, INV, "dk_conv2d: desc must not be NULL"},
    {TV_CONV2D, m_x_null, INV, "dk_conv2d: x must not be NULL"},
    {TV_CONV2D, m_w_null, INV, "dk_conv2d: w must not be NULL"},
    {TV_CONV2D, m_y_null, INV, "dk_conv2d: y must not be NULL"},
    {TV_CONVT, m_desc_null, INV, "dk_conv_transpose2d: desc must not be NULL"},
    {TV_CONVT, m_w_null, INV, "dk_conv_transpose2d: w must not be NULL"},
    {TV_MATMUL, m_desc_null, INV, "dk_matmul: desc must not be NULL"},
    {TV_MATMUL, m_x_null, INV, "dk_matmul: a must not be NULL"},
    {TV_MATMUL, m_w_null, INV, "dk_matmul: b must not be NULL"},
    {TV_MATMUL, m_y_null, INV, "dk_matmul: y must not be NULL"},
    {TV_LINEAR, m_x_null, INV, "dk_linear: x must not be NULL"},
    {TV_LINEAR, m_w_null, INV, "dk_linear: weight must not be NULL"},
    {TV_LINEAR, m_desc_null, INV, "dk_linear: desc must not be NULL"},
    {TV_GN, m_desc_null, INV, "dk_group_norm: desc must not be NULL"},
    {TV_GN, m_x_null, INV, "dk_group_norm: x must not be NULL"},
    {TV_GN, m_slot3_null, INV, "dk_group_norm: y must not be NULL"},
    {TV_LN, m_desc_null, INV, "dk_layer_norm: desc must not be NULL"},
    {TV_LN, m_slot3_null, INV, "dk_layer_norm: y must not be NULL"},
    {TV_ATTN, m_desc_null, INV, "dk_attention: desc must not be NULL"},
    {TV_ATTN, m_slot1_null, INV, "dk_attention: k must not be NULL"},
    {TV_ATTN, m_slot2_null, INV, "dk_attention: v must not be NULL"},
    {TV_ATTN, m_slot3_null, INV, "dk_attention: out must not be NULL"},
    {TV_ACT, m_x_null, INV, "dk_activation_forward: x must not be NULL"},
    {TV_ACT, m_slot1_null, INV, "dk_activation_forward: y must not be NULL"},
    {TV_ADD, m_slot1_null, INV, "dk_add: b must not be NULL"},
    {TV_ADD, m_slot2_null, INV, "dk_add: y must not be NULL"},
    {TV_UPS, m_x_null, INV, "dk_upsample_nearest: x must not be NULL"},
    {TV_CONVERT, m_slot1_null, INV, "dk_convert: y must not be NULL"},
    {TV_PREP, m_pw_null, INV, "dk_prepare_weight: w must not be NULL"},

    /* tensor well-formedness */
    {TV_CONV2D, m_x_buffer_null, INV, "dk_conv2d: x.buffer must not be NULL"},
    {TV_CONV2D, m_x_dtype_7, INV, "dk_conv2d: x.dtype (=7) must be DK_F32, DK_F16 or DK_BF16"},
    {TV_ADD, m_x_dtype_0, INV, "dk_add: a.dtype (=0) must be DK_F32, DK_F16 or DK_BF16"},
    {TV_CONV2D, m_x_ndim_0, INV, "dk_conv2d: x.ndim (=0) must be in 1..5"},
    {TV_CONV2D, m_x_ndim_6, INV, "dk_conv2d: x.ndim (=6) must be in 1..5"},
    {TV_ACT, m_x_ndim_neg, INV, "dk_activation_forward: x.ndim (=-3) must be in 1..5"},
    {TV_CONV2D, m_x_shape_0, INV, "dk_conv2d: x.shape[2] (=0) must be >= 1"},
    {TV_MATMUL, m_x_shape_neg, INV, "dk_matmul: a.shape[0] (=-2) must be >= 1"},
    {TV_CONV2D, m_x_stride_neg, INV, "dk_conv2d: x.strides[1] (=-1) must be >= 0"},
    {TV_CONV2D, m_x_numel_ovf, INV, "dk_conv2d: x's element count overflows 64 bits"},
    {TV_CONV2D, m_x_index_ovf, INV, "dk_conv2d: x's last element index overflows 64 bits"},
    {TV_CONV2D, m_x_bytes_ovf, INV, "dk_conv2d: x's byte extent overflows 64 bits"},
    {TV_GN, m_x_offset_ovf, INV, "dk_group_norm: x's byte extent overflows 64 bits"},
    {TV_CONV2D, m_x_offset_unaligned, INV, "dk_conv2d: x.offset (=2) must be a multiple of the f32 size (=4 bytes)"},
    {TV_CONVERT, m_y_offset_unaligned16, INV, "dk_convert: y.offset (=1) must be a multiple of the f16 size (=2 bytes)"},
    {TV_CONV2D, m_x_offset_past, INV, "dk_conv2d: x's view ends at byte 17340 (offset 16380 + 960 bytes), beyond its buffer's size (=16384)"},
    {TV_CONV2D, m_x_stride_past, INV, "dk_conv2d: x's view ends at byte 16864 (offset 0 + 16864 bytes)"},
    {TV_CONV2D, m_y_stride_past, INV, "dk_conv2d: y's view ends at byte"},
    {TV_ATTN, m_o_stride_past, INV, "dk_attention: out's view ends at byte"},
    {TV_LN, m_y_shape_0, INV, "dk_layer_norm: y.shape[0] (=0) must be >= 1"},
    {TV_PREP, m_pw_past, INV, "dk_prepare_weight: w's view ends at byte"},

    /* conv2d descriptor */
    {TV_CONV2D, m_cv_stride_h, INV, "dk_conv2d: desc->stride_h (=0) must be >= 1"},
    {TV_CONV2D, m_cv_stride_w, INV, "dk_conv2d: desc->stride_w (=-1) must be >= 1"},
    {TV_CONV2D, m_cv_pad_h, INV, "dk_conv2d: desc->pad_h (=-1) must be >= 0"},
    {TV_CONV2D, m_cv_pad_w, INV, "dk_conv2d: desc->pad_w (=-5) must be >= 0"},
    {TV_CONV2D, m_cv_dil_h, INV, "dk_conv2d: desc->dilation_h (=0) must be >= 1"},
    {TV_CONV2D, m_cv_dil_w, INV, "dk_conv2d: desc->dilation_w (=-2) must be >= 1"},
    {TV_CONV2D, m_cv_groups, INV, "dk_conv2d: desc->groups (=0) must be >= 1"},
    {TV_CONV2D, m_cv_upsample3, INV, "dk_conv2d: desc->upsample (=3) must be 1 or 2"},
    {TV_CONV2D, m_cv_upsample0, INV, "dk_conv2d: desc->upsample (=0) must be 1 or 2"},
    {TV_CONV2D, m_cv_act, INV, "dk_conv2d: desc->activation (=6) must be a dk_activation (0..5)"},
    {TV_CONV2D, m_cv_act_neg, INV, "dk_conv2d: desc->activation (=-1) must be a dk_activation (0..5)"},
    {TV_CONV2D, m_cv_oscale, INV, "dk_conv2d: desc->output_scale (=nan) must be finite"},
    {TV_CONV2D, m_cv_rscale, INV, "dk_conv2d: desc->residual_scale (=inf) must be finite"},
    /* conv2d shapes and dtypes */
    {TV_CONV2D, m_cv_x_ndim3, INV, "dk_conv2d: x.ndim (=3) must be 4 ([N, Cin, H, W])"},
    {TV_CONV2D, m_cv_w_ndim3, INV, "dk_conv2d: w.ndim (=3) must be 4 ([Cout, Cin/groups, KH, KW])"},
    {TV_CONV2D, m_cv_y_ndim2, INV, "dk_conv2d: y.ndim (=2) must be 4 ([N, Cout, OH, OW])"},
    {TV_CONV2D, m_cv_w_f16, INV, "dk_conv2d: w.dtype (=f16) must equal x.dtype (=f32)"},
    {TV_CONV2D, m_cv_y_bf16, INV, "dk_conv2d: y.dtype (=bf16) must equal x.dtype (=f32)"},
    {TV_CONV2D, m_cv_bias_f16, INV, "dk_conv2d: bias.dtype (=f16) must equal x.dtype (=f32)"},
    {TV_CONV2D, m_cv_f16_bf16bias, INV, "dk_conv2d: bias.dtype (=bf16) must equal x.dtype (=f16) or be f32"},
    {TV_CONV2D, m_cv_res_f16, INV, "dk_conv2d: residual.dtype (=f16) must equal x.dtype (=f32)"},
    {TV_CONV2D, m_cv_cin_groups, INV, "dk_conv2d: x.shape[1] (=5) must be divisible by desc->groups (=2)"},
    {TV_CONV2D, m_cv_cout_groups, INV, "dk_conv2d: w.shape[0] (=5) must be divisible by desc->groups (=2)"},
    {TV_CONV2D, m_cv_w_cin, INV, "dk_conv2d: w.shape[1] (=3) must equal x.shape[1] / groups (=2)"},
    {TV_CONV2D, m_cv_kernel_big, INV, "dk_conv2d: the dilated kernel height (=dilation*(K-1)+1 = 9) must be <= the padded input height (=7)"},
    {TV_CONV2D, m_cv_kernel_ovf, INV, "dk_conv2d: the output height overflows 64 bits"},
    {TV_CONV2D, m_cv_y_n, INV, "dk_conv2d: y.shape[0] (=1) must equal x.shape[0] (=2)"},
    {TV_CONV2D, m_cv_y_c, INV, "dk_conv2d: y.shape[1] (=4) must equal w.shape[0] (=6)"},
    {TV_CONV2D, m_cv_y_h, INV, "dk_conv2d: y.shape[2] (=4) must equal OH = (H*upsample + pad_top + pad_bottom - dilation_h*(KH-1) - 1) / stride_h + 1 (=5)"},
    {TV_CONV2D, m_cv_y_w, INV, "dk_conv2d: y.shape[3] (=7) must equal OW = (W*upsample + pad_left + pad_right - dilation_w*(KW-1) - 1) / stride_w + 1 (=6)"},
    {TV_CONV2D, m_cv_stride2, INV, "dk_conv2d: y.shape[2] (=5) must equal OH = (H*upsample + pad_top + pad_bottom - dilation_h*(KH-1) - 1) / stride_h + 1 (=3)"},
    {TV_CONV2D, m_cv_up2, INV, "dk_conv2d: y.shape[2] (=5) must equal OH = (H*upsample + pad_top + pad_bottom - dilation_h*(KH-1) - 1) / stride_h + 1 (=10)"},
    {TV_CONV2D, m_cv_dil2, INV, "dk_conv2d: y.shape[3] (=6) must equal OW = (W*upsample + pad_left + pad_right - dilation_w*(KW-1) - 1) / stride_w + 1 (=4)"},
    {TV_CONV2D, m_cv_bias_ndim, INV, "dk_conv2d: bias.ndim (=2) must be 1 ([Cout])"},
    {TV_CONV2D, m_cv_bias_len, INV, "dk_conv2d: bias.shape[0] (=4) must equal w.shape[0] (=6)"},
    {TV_CONV2D, m_cv_res_shape, INV, "dk_conv2d: residual.shape (=[2, 6, 5, 5]) must equal y.shape (=[2, 6, 5, 6])"},
    /* conv2d aliasing */
    {TV_CONV2D, m_cv_y_on_x, INV, "dk_conv2d: y (bytes 64..1503) overlaps x (bytes 0..959) in the same buffer; an output may not alias an input"},
    {TV_CONV2D, m_cv_y_on_w, INV, "dk_conv2d: y (bytes 0..1439) overlaps w"},
    {TV_CONV2D, m_cv_y_on_bias, INV, "dk_conv2d: y (bytes 20..1459) overlaps bias (bytes 0..23)"},
    {TV_CONV2D, m_cv_res_shifted, INV, "dk_conv2d: y (bytes 0..1439) overlaps residual (bytes 4..1443) in the same buffer; it must be either the exact same view (in place) or disjoint"},
    {TV_CONV2D, m_cv_res_other_strides, INV, "dk_conv2d: y (bytes 0..1439) overlaps residual (bytes 0..1439) in the same buffer; it must be either the exact same view (in place) or disjoint"},
    /* conv2d padding per side, post_activation */
    {TV_CONV2D, m_cv_sides_mixed, INV, "dk_conv2d: desc->pad_top, pad_bottom, pad_left, pad_right (=1, -1, -1, -1) must be all -1 (from pad_h / pad_w) or all >= 0"},
    {TV_CONV2D, m_cv_sides_mixed2, INV, "dk_conv2d: desc->pad_top, pad_bottom, pad_left, pad_right (=0, 1, -1, 1) must be all -1"},
    {TV_CONV2D, m_cv_sides_neg, INV, "dk_conv2d: desc->pad_bottom (=-2) must be -1 (from pad_h / pad_w) or >= 0"},
    {TV_CONV2D, m_cv_sides_pad_h, INV, "dk_conv2d: desc->pad_h (=1) must be 0 or equal desc->pad_top (=0) when the per-side pads are set"},
    {TV_CONV2D, m_cv_sides_pad_w, INV, "dk_conv2d: desc->pad_w (=1) must be 0 or equal desc->pad_left (=2) when the per-side pads are set"},
    {TV_CONV2D, m_cv_sides_y_h, INV, "dk_conv2d: y.shape[2] (=5) must equal OH = (H*upsample + pad_top + pad_bottom - dilation_h*(KH-1) - 1) / stride_h + 1 (=4)"},
    {TV_CONV2D, m_cv_sides_y_w, INV, "dk_conv2d: y.shape[3] (=6) must equal OW = (W*upsample + pad_left + pad_right - dilation_w*(KW-1) - 1) / stride_w + 1 (=7)"},
    {TV_CONV2D, m_cv_sides_big, INV, "dk_conv2d: y.shape[3] (=6) must equal OW"},
    {TV_CONV2D, m_cv_post_act, INV, "dk_conv2d: desc->post_activation (=7) must be a dk_activation (0..5)"},
    {TV_CONV2D, m_cv_post_act_neg, INV, "dk_conv2d: desc->post_activation (=-1) must be a dk_activation (0..5)"},
    {TV_CONV2D, m_cv_y_self_n, INV, "dk_conv2d: y overlaps itself: strides[0] (=0) must be > 0 (the largest index of its faster dims)"},
    {TV_CONV2D, m_cv_y_self_cw, INV, "dk_conv2d: y overlaps itself: strides[3] (=1) must be > 5"},

    /* conv_transpose2d */
    {TV_CONVT, m_ct_stride_h, INV, "dk_conv_transpose2d: desc->stride_h (=0) must be >= 1"},
    {TV_CONVT, m_ct_stride_w, INV, "dk_conv_transpose2d: desc->stride_w (=0) must be >= 1"},
    {TV_CONVT, m_ct_pad_h, INV, "dk_conv_transpose2d: desc->pad_h (=-1) must be >= 0"},
    {TV_CONVT, m_ct_pad_w, INV, "dk_conv_transpose2d: desc->pad_w (=-1) must be >= 0"},
    {TV_CONVT, m_ct_dil_h, INV, "dk_conv_transpose2d: desc->dilation_h (=0) must be >= 1"},
    {TV_CONVT, m_ct_dil_w, INV, "dk_conv_transpose2d: desc->dilation_w (=0) must be >= 1"},
    {TV_CONVT, m_ct_opad_neg, INV, "dk_conv_transpose2d: desc->output_padding_h (=-1) must be >= 0"},
    {TV_CONVT, m_ct_opad_big, INV, "dk_conv_transpose2d: desc->output_padding_w (=2) must be < max(stride, dilation) (=2)"},
    {TV_CONVT, m_ct_groups, INV, "dk_conv_transpose2d: desc->groups (=-1) must be >= 1"},
    {TV_CONVT, m_ct_groups_div, INV, "dk_conv_transpose2d: x.shape[1] (=4) must be divisible by desc->groups (=3)"},
    {TV_CONVT, m_ct_act, INV, "dk_conv_transpose2d: desc->activation (=99) must be a dk_activation (0..5)"},
    {TV_CONVT, m_ct_oscale, INV, "dk_conv_transpose2d: desc->output_scale (=-inf) must be finite"},
    {TV_CONVT, m_ct_rscale, INV, "dk_conv_transpose2d: desc->residual_scale (=nan) must be finite"},
    {TV_CONVT, m_ct_w_cin, INV, "dk_conv_transpose2d: w.shape[0] (=3) must equal x.shape[1] (=4)"},
    {TV_CONVT, m_ct_w_ndim, INV, "dk_conv_transpose2d: w.ndim (=2) must be 4 ([Cin, Cout/groups, KH, KW])"},
    {TV_CONVT, m_ct_y_c, INV, "dk_conv_transpose2d: y.shape[1] (=6) must equal w.shape[1] * groups (=3)"},
    {TV_CONVT, m_ct_y_h, INV, "dk_conv_transpose2d: y.shape[2] (=5) must equal OH = (H-1)*stride_h - 2*pad_h + dilation_h*(KH-1) + output_padding_h + 1 (=6)"},
    {TV_CONVT, m_ct_y_w, INV, "dk_conv_transpose2d: y.shape[3] (=7) must equal OW = (W-1)*stride_w - 2*pad_w + dilation_w*(KW-1) + output_padding_w + 1 (=6)"},
    {TV_CONVT, m_ct_out_small, INV, "dk_conv_transpose2d: the output height (=(H-1)*stride - 2*pad + dilation*(K-1) + output_padding + 1 = -2) must be >= 1"},
    {TV_CONVT, m_ct_ovf, INV, "dk_conv_transpose2d: the output width overflows 64 bits"},
    {TV_CONVT, m_ct_bias_len, INV, "dk_conv_transpose2d: bias.shape[0] (=4) must equal w.shape[1] * groups (=3)"},
    {TV_CONVT, m_ct_res_shape, INV, "dk_conv_transpose2d: residual.shape (=[1, 3, 5, 6]) must equal y.shape (=[1, 3, 6, 6])"},
    {TV_CONVT, m_ct_y_on_w, INV, "dk_conv_transpose2d: y (bytes 400..831) overlaps w (bytes 0..431)"},
    {TV_CONVT, m_ct_y_self, INV, "dk_conv_transpose2d: y overlaps itself: strides[2] (=3) must be > 5"},
    {TV_CONVT, m_ct_post_act, INV, "dk_conv_transpose2d: desc->post_activation (=6) must be a dk_activation (0..5)"},
    {TV_CONVT, m_ct_res_shifted, INV, "dk_conv_transpose2d: y (bytes 0..431) overlaps residual (bytes 8..439) in the same buffer; it must be either the exact same view (in place) or disjoint"},
    {TV_CONVT, m_ct_x_dtype, INV, "dk_conv_transpose2d: w.dtype (=f32) must equal x.dtype (=bf16)"},

    /* matmul */
    {TV_MATMUL, m_mm_act, INV, "dk_matmul: desc->activation (=6) must be a dk_activation"},
    {TV_MATMUL, m_mm_oscale, INV, "dk_matmul: desc->output_scale (=nan) must be finite"},
    {TV_MATMUL, m_mm_rscale, INV, "dk_matmul: desc->residual_scale (=inf) must be finite"},
    {TV_MATMUL, m_mm_a_ndim1, INV, "dk_matmul: a.ndim (=1) must be 2 or 3 ([M, K] or [B, M, K])"},
    {TV_MATMUL, m_mm_a_ndim4, INV, "dk_matmul: a.ndim (=4) must be 2 or 3 ([M, K] or [B, M, K])"},
    {TV_MATMUL, m_mm_b_ndim4, INV, "dk_matmul: b.ndim (=4) must be 2 or 3 ([K, N] or [B, K, N])"},
    {TV_MATMUL, m_mm_k, INV, "dk_matmul: b.shape[0] (=3) must equal a.shape[2] (=4)"},
    {TV_MATMUL, m_mm_batch, INV, "dk_matmul: b.shape[0] (=3) must equal a.shape[0] (=2)"},
    {TV_MATMUL, m_mm_y_ndim2, INV, "dk_matmul: y.ndim (=2) must be 3 ([B, M, N]: an operand is batched)"},
    {TV_MATMUL, m_mm_y_ndim3_unbatched, INV, "dk_matmul: y.ndim (=3) must be 2 ([M, N]: no operand is batched)"},
    {TV_MATMUL, m_mm_y_b, INV, "dk_matmul: y.shape[0] (=1) must equal the batch size B (=2)"},
    {TV_MATMUL, m_mm_y_m, INV, "dk_matmul: y.shape[1] (=4) must equal M = a.shape[1] (=3)"},
    {TV_MATMUL, m_mm_y_n, INV, "dk_matmul: y.shape[2] (=6) must equal N = b.shape[1] (=5)"},
    {TV_MATMUL, m_mm_bias_len, INV, "dk_matmul: bias.shape[0] (=4) must equal N (=5)"},
    {TV_MATMUL, m_mm_res_shape, INV, "dk_matmul: residual.shape (=[2, 2, 5]) must equal y.shape (=[2, 3, 5])"},
    {TV_MATMUL, m_mm_b_f16, INV, "dk_matmul: b.dtype (=f16) must equal a.dtype (=f32)"},
    {TV_MATMUL, m_mm_y_f16, INV, "dk_matmul: y.dtype (=f16) must equal a.dtype (=f32)"},
    {TV_MATMUL, m_mm_y_on_a, INV, "dk_matmul: y (bytes 8..127) overlaps a (bytes 0..95)"},
    {TV_MATMUL, m_mm_y_on_b, INV, "dk_matmul: y (bytes 76..195) overlaps b (bytes 0..79)"},
    {TV_MATMUL, m_mm_y_on_res, INV, "dk_matmul: y (bytes 4..123) overlaps residual (bytes 0..119) in the same buffer; it must be either the exact same view (in place) or disjoint"},
    {TV_MATMUL, m_mm_post_act, INV, "dk_matmul: desc->post_activation (=6) must be a dk_activation (0..5)"},
    {TV_MATMUL, m_mm_y_self, INV, "dk_matmul: y overlaps itself: strides[1] (=2) must be > 4"},
    /* linear */
    {TV_LINEAR, m_li_w_ndim, INV, "dk_linear: weight.ndim (=3) must be 2"},
    {TV_LINEAR, m_li_k, INV, "dk_linear: weight^T.shape[0] (=3) must equal x.shape[1] (=4)"},
    {TV_LINEAR, m_li_y_n, INV, "dk_linear: y.shape[1] (=4) must equal N = weight^T.shape[1] (=5)"},
    {TV_LINEAR, m_li_w_dtype, INV, "dk_linear: weight^T.dtype (=bf16) must equal x.dtype (=f32)"},
    {TV_LINEAR, m_li_y_on_w, INV, "dk_linear: y (bytes 40..99) overlaps weight (bytes 0..79)"},
    {TV_LINEAR, m_li_w_past, INV, "dk_linear: weight^T's view ends at byte"},
    {TV_LINEAR, m_mm_act, INV, "dk_linear: desc->activation (=6) must be a dk_activation"},

    /* group_norm */
    {TV_GN, m_gn_groups0, INV, "dk_group_norm: desc->groups (=0) must be >= 1"},
    {TV_GN, m_gn_groups3, INV, "dk_group_norm: x.shape[1] (=4) must be divisible by desc->groups (=3)"},
    {TV_GN, m_gn_eps0, INV, "dk_group_norm: desc->eps (=0) must be finite and > 0"},
    {TV_GN, m_gn_eps_neg, INV, "dk_group_norm: desc->eps (=-1e-05) must be finite and > 0"},
    {TV_GN, m_gn_eps_nan, INV, "dk_group_norm: desc->eps (=nan) must be finite and > 0"},
    {TV_GN, m_gn_eps_inf, INV, "dk_group_norm: desc->eps (=inf) must be finite and > 0"},
    {TV_GN, m_gn_act, INV, "dk_group_norm: desc->activation (=12) must be a dk_activation (0..5)"},
    {TV_GN, m_slot1_null, INV, "dk_group_norm: gamma and beta must both be given or both be NULL (gamma NULL, beta given)"},
    {TV_GN, m_slot2_null, INV, "dk_group_norm: gamma and beta must both be given or both be NULL (gamma given, beta NULL)"},
    {TV_GN, m_gn_x_ndim, INV, "dk_group_norm: x.ndim (=3) must be 4 ([N, C, H, W])"},
    {TV_GN, m_gn_y_shape, INV, "dk_group_norm: y.shape (=[2, 4, 2, 3]) must equal x.shape (=[2, 4, 3, 3])"},
    {TV_GN, m_gn_y_dtype, INV, "dk_group_norm: y.dtype (=f16) must equal x.dtype (=f32)"},
    {TV_GN, m_gn_gamma_len, INV, "dk_group_norm: gamma.shape[0] (=2) must equal C = x.shape[1] (=4)"},
    {TV_GN, m_gn_beta_ndim, INV, "dk_group_norm: beta.ndim (=2) must be 1 (C = x.shape[1])"},
    {TV_GN, m_gn_gamma_dtype, INV, "dk_group_norm: gamma.dtype (=bf16) must equal x.dtype (=f32)"},
    {TV_GN, m_gn_bf16_mixed_affine, INV, "dk_group_norm: beta.dtype (=bf16) must equal gamma.dtype (=f32)"},
    {TV_GN, m_gn_f16_bf16_gamma, INV, "dk_group_norm: gamma.dtype (=bf16) must equal x.dtype (=f16) or be f32"},
    {TV_GN, m_gn_partial, INV, "dk_group_norm: y (bytes 4..291) overlaps x (bytes 0..287) in the same buffer; it must be either the exact same view (in place) or disjoint"},
    {TV_GN, m_gn_other_strides, INV, "dk_group_norm: y (bytes 0..287) overlaps x (bytes 0..287) in the same buffer; it must be either the exact same view"},
    {TV_GN, m_gn_y_on_gamma, INV, "dk_group_norm: y (bytes 0..287) overlaps gamma (bytes 0..15)"},
    {TV_GN, m_gn_y_self, INV, "dk_group_norm: y overlaps itself: strides[1] (=0) must be > 0"},

    /* split group_norm */
    {TV_GN_STATS, m_none, OK, ""},
    {TV_GN_STATS, m_gs_eps_ignored, OK, ""},
    {TV_GN_STATS, m_desc_null, INV, "dk_group_norm_stats: desc must not be NULL"},
    {TV_GN_STATS, m_x_null, INV, "dk_group_norm_stats: x must not be NULL"},
    {TV_GN_STATS, m_gs_null, INV, "dk_group_norm_stats: stats must not be NULL"},
    {TV_GN_STATS, m_gn_groups3, INV, "dk_group_norm_stats: x.shape[1] (=4) must be divisible by desc->groups (=3)"},
    {TV_GN_STATS, m_gs_dtype, INV, "dk_group_norm_stats: stats.dtype (=f16) must be f32"},
    {TV_GN_STATS, m_gs_ndim, INV, "dk_group_norm_stats: stats.ndim (=2) must be 3 ([N, groups, 2])"},
    {TV_GN_STATS, m_gs_groups, INV, "dk_group_norm_stats: stats.shape[1] (=4) must equal desc->groups (=2)"},
    {TV_GN_STATS, m_gs_pair, INV, "dk_group_norm_stats: stats.shape[2] (=3) must equal 2 (mean, variance)"},
    {TV_GN_STATS, m_gs_strided, INV, "dk_group_norm_stats: stats must be dense row-major (strides 4, 2, 1); got strides (8, 2, 1)"},
    {TV_GN_STATS, m_gs_on_x, INV, "dk_group_norm_stats: stats (bytes 0..31) overlaps x (bytes 0..287)"},
    {TV_GN_APPLY, m_none, OK, ""},
    {TV_GN_APPLY, m_gs_inplace, OK, ""},
    {TV_GN_APPLY, m_gn_no_affine, OK, ""},
    {TV_GN_APPLY, m_gs_null, INV, "dk_group_norm_apply: stats must not be NULL"},
    {TV_GN_APPLY, m_slot3_null, INV, "dk_group_norm_apply: y must not be NULL"},
    {TV_GN_APPLY, m_gn_eps0, INV, "dk_group_norm_apply: desc->eps (=0) must be finite and > 0"},
    {TV_GN_APPLY, m_gs_dtype, INV, "dk_group_norm_apply: stats.dtype (=f16) must be f32"},
    {TV_GN_APPLY, m_gs_groups, INV, "dk_group_norm_apply: stats.shape[1] (=4) must equal desc->groups (=2)"},
    {TV_GN_APPLY, m_gs_y_on_stats, INV, "dk_group_norm_apply: y (bytes 0..287) overlaps stats (bytes 0..31)"},
    {TV_GN_APPLY, m_gn_partial, INV, "dk_group_norm_apply: y (bytes 4..291) overlaps x (bytes 0..287) in the same buffer"},
    {TV_GN_APPLY, m_gn_gamma_len, INV, "dk_group_norm_apply: gamma.shape[0] (=2) must equal C = x.shape[1] (=4)"},

    /* layer_norm */
    {TV_LN, m_ln_eps0, INV, "dk_layer_norm: desc->eps (=0) must be finite and > 0"},
    {TV_LN, m_ln_eps_nan, INV, "dk_layer_norm: desc->eps (=nan) must be finite and > 0"},
    {TV_LN, m_ln_act, INV, "dk_layer_norm: desc->activation (=-7) must be a dk_activation"},
    {TV_LN, m_ln_gamma_len, INV, "dk_layer_norm: gamma.shape[0] (=3) must equal D = x.shape[ndim-1] (=8)"},
    {TV_LN, m_ln_beta_len, INV, "dk_layer_norm: beta.shape[0] (=16) must equal D = x.shape[ndim-1] (=8)"},
    {TV_LN, m_ln_gamma_ndim, INV, "dk_layer_norm: gamma.ndim (=2) must be 1 (D = x.shape[ndim-1])"},
    {TV_LN, m_ln_y_shape, INV, "dk_layer_norm: y.shape (=[2, 3, 7]) must equal x.shape (=[2, 3, 8])"},
    {TV_LN, m_ln_y_ndim, INV, "dk_layer_norm: y.shape (=[2, 24]) must equal x.shape (=[2, 3, 8])"},
    {TV_LN, m_ln_partial, INV, "dk_layer_norm: y (bytes 32..223) overlaps x (bytes 0..191)"},
    {TV_LN, m_ln_y_on_beta, INV, "dk_layer_norm: y (bytes 28..219) overlaps beta (bytes 0..31)"},
    {TV_LN, m_ln_beta_dtype, INV, "dk_layer_norm: beta.dtype (=f16) must equal x.dtype (=f32)"},
    {TV_LN, m_ln_f16_f32gamma, INV, "dk_layer_norm: gamma.dtype (=f32) must equal x.dtype (=f16)"},

    /* rms_norm */
    {TV_RMS, m_none, OK, ""},
    {TV_RMS, m_rms_l2, OK, ""},
    {TV_RMS, m_rms_inplace, OK, ""},
    {TV_RMS, m_rms_2d, OK, ""},
    {TV_RMS, m_rms_5d, OK, ""},
    {TV_RMS, m_rms_x_nhwc_y_nchw, OK, ""},
    {TV_RMS, m_rms_no_affine, OK, ""},
    {TV_RMS, m_rms_beta_only, OK, ""},
    {TV_RMS, m_rms_f16_f32affine, OK, ""},
    {TV_RMS, m_desc_null, INV, "dk_rms_norm: desc must not be NULL"},
    {TV_RMS, m_slot3_null, INV, "dk_rms_norm: y must not be NULL"},
    {TV_RMS, m_rms_form, INV, "dk_rms_norm: desc->form (=2) must be DK_RMS_NORM_MEAN_SQUARE (0) or DK_RMS_NORM_L2 (1)"},
    {TV_RMS, m_rms_form_neg, INV, "dk_rms_norm: desc->form (=-1) must be DK_RMS_NORM_MEAN_SQUARE (0) or DK_RMS_NORM_L2 (1)"},
    {TV_RMS, m_rms_eps0, INV, "dk_rms_norm: desc->eps (=0) must be finite and > 0"},
    {TV_RMS, m_rms_eps_inf, INV, "dk_rms_norm: desc->eps (=inf) must be finite and > 0"},
    {TV_RMS, m_rms_act, INV, "dk_rms_norm: desc->activation (=9) must be a dk_activation"},
    {TV_RMS, m_rms_1d, INV, "dk_rms_norm: x.ndim (=1) must be 2 to 5 ([N, C, ...], the channel axis is dim 1)"},
    {TV_RMS, m_rms_gamma_len, INV, "dk_rms_norm: gamma.shape[0] (=3) must equal C = x.shape[1] (=4)"},
    {TV_RMS, m_rms_beta_ndim, INV, "dk_rms_norm: beta.ndim (=2) must be 1 (C = x.shape[1])"},
    {TV_RMS, m_rms_y_shape, INV, "dk_rms_norm: y.shape (=[2, 3, 3, 3]) must equal x.shape (=[2, 4, 3, 3])"},
    {TV_RMS, m_rms_y_dtype, INV, "dk_rms_norm: y.dtype (=bf16) must equal x.dtype (=f32)"},
    {TV_RMS, m_rms_f32x_f16beta, INV, "dk_rms_norm: beta.dtype (=f16) must equal x.dtype (=f32)"},
    {TV_RMS, m_rms_mixed_affine, INV, "dk_rms_norm: beta.dtype (=f16) must equal gamma.dtype (=f32)"},
    {TV_RMS, m_rms_partial, INV, "dk_rms_norm: y (bytes 16..303) overlaps x (bytes 0..287)"},
    {TV_RMS, m_rms_y_on_gamma, INV, "dk_rms_norm: y (bytes 0..287) overlaps gamma (bytes 0..15)"},
    {TV_RMS, m_rms_y_self, INV, "dk_rms_norm: y overlaps itself: strides[1] (=0) must be > 0"},

    /* attention */
    {TV_ATTN, m_at_scale_nan, INV, "dk_attention: desc->scale (=nan) must be finite"},
    {TV_ATTN, m_at_scale_inf, INV, "dk_attention: desc->scale (=-inf) must be finite"},
    {TV_ATTN, m_at_q_ndim, INV, "dk_attention: q.ndim (=3) must be 4 ([B, H, Nq, D])"},
    {TV_ATTN, m_at_k_ndim, INV, "dk_attention: k.ndim (=2) must be 4 ([B, H, Nkv, D])"},
    {TV_ATTN, m_at_v_ndim, INV, "dk_attention: v.ndim (=1) must be 4 ([B, H, Nkv, Dv])"},
    {TV_ATTN, m_at_o_ndim, INV, "dk_attention: out.ndim (=3) must be 4 ([B, H, Nq, Dv])"},
    {TV_ATTN, m_at_d_big, INV, "dk_attention: q.shape[3] (=D=513) must be <= 512"},
    {TV_ATTN, m_at_dv_big, INV, "dk_attention: v.shape[3] (=Dv=600) must be <= 512"},
    {TV_ATTN, m_at_k_b, INV, "dk_attention: k.shape[0] (=2) must equal B = q.shape[0] (=1)"},
    {TV_ATTN, m_at_k_h, INV, "dk_attention: k.shape[1] (=1) must equal H = q.shape[1] (=2)"},
    {TV_ATTN, m_at_k_d, INV, "dk_attention: k.shape[3] (=4) must equal D = q.shape[3] (=8)"},
    {TV_ATTN, m_at_v_b, INV, "dk_attention: v.shape[0] (=3) must equal B = q.shape[0] (=1)"},
    {TV_ATTN, m_at_v_h, INV, "dk_attention: v.shape[1] (=1) must equal H = q.shape[1] (=2)"},
    {TV_ATTN, m_at_v_n, INV, "dk_attention: v.shape[2] (=6) must equal Nkv = k.shape[2] (=7)"},
    {TV_ATTN, m_at_o_b, INV, "dk_attention: out.shape[0] (=2) must equal B = q.shape[0] (=1)"},
    {TV_ATTN, m_at_o_h, INV, "dk_attention: out.shape[1] (=3) must equal H = q.shape[1] (=2)"},
    {TV_ATTN, m_at_o_n, INV, "dk_attention: out.shape[2] (=7) must equal Nq = q.shape[2] (=5)"},
    {TV_ATTN, m_at_o_d, INV, "dk_attention: out.shape[3] (=8) must equal Dv = v.shape[3] (=6)"},
    {TV_ATTN, m_at_k_dtype, INV, "dk_attention: k.dtype (=f16) must equal q.dtype (=f32)"},
    {TV_ATTN, m_at_v_dtype, INV, "dk_attention: v.dtype (=bf16) must equal q.dtype (=f32)"},
    {TV_ATTN, m_at_o_dtype, INV, "dk_attention: out.dtype (=f16) must equal q.dtype (=f32)"},
    {TV_ATTN, m_at_o_on_q, INV, "dk_attention: out (bytes 100..339) overlaps q (bytes 0..319)"},
    {TV_ATTN, m_at_o_on_k, INV, "dk_attention: out (bytes 0..239) overlaps k (bytes 0..447)"},
    {TV_ATTN, m_at_o_on_v, INV, "dk_attention: out (bytes 332..571) overlaps v (bytes 0..335)"},
    {TV_ATTN, m_at_o_self, INV, "dk_attention: out overlaps itself: strides[2] (=6) must be > 11"},

    /* activation */
    {TV_ACT, m_ac_act, INV, "dk_activation_forward: act (=6) must be a dk_activation (0..5)"},
    {TV_ACT, m_ac_act_neg, INV, "dk_activation_forward: act (=-1) must be a dk_activation (0..5)"},
    {TV_ACT, m_ac_y_shape, INV, "dk_activation_forward: y.shape (=[2, 4, 4]) must equal x.shape (=[2, 3, 4])"},
    {TV_ACT, m_ac_y_ndim, INV, "dk_activation_forward: y.shape (=[2, 3]) must equal x.shape (=[2, 3, 4])"},
    {TV_ACT, m_ac_y_dtype, INV, "dk_activation_forward: y.dtype (=f16) must equal x.dtype (=f32)"},
    {TV_ACT, m_ac_partial, INV, "dk_activation_forward: y (bytes 4..99) overlaps x (bytes 0..95) in the same buffer; it must be either the exact same view (in place) or disjoint"},
    {TV_ACT, m_ac_transposed, INV, "dk_activation_forward: y (bytes 0..95) overlaps x (bytes 0..95)"},
    {TV_ACT, m_ac_y_self, INV, "dk_activation_forward: y overlaps itself: strides[2] (=0) must be > 0"},

    /* activation_scaled: the scales, then the rules it shares with activation */
    {TV_ACTS, m_none, OK, ""},
    {TV_ACTS, m_ac_inplace, OK, ""},
    {TV_ACTS, m_ac_bf16, OK, ""},
    {TV_ACTS, m_ad_alpha, INV, "dk_activation_scaled: in_scale (=nan) must be finite"},
    {TV_ACTS, m_ad_beta, INV, "dk_activation_scaled: out_scale (=inf) must be finite"},
    {TV_ACTS, m_as_out_ninf, INV, "dk_activation_scaled: out_scale (=-inf) must be finite"},
    {TV_ACTS, m_x_null, INV, "dk_activation_scaled: x must not be NULL"},
    {TV_ACTS, m_slot1_null, INV, "dk_activation_scaled: y must not be NULL"},
    {TV_ACTS, m_ac_act, INV, "dk_activation_scaled: act (=6) must be a dk_activation (0..5)"},
    {TV_ACTS, m_ac_y_shape, INV, "dk_activation_scaled: y.shape (=[2, 4, 4]) must equal x.shape (=[2, 3, 4])"},
    {TV_ACTS, m_ac_y_dtype, INV, "dk_activation_scaled: y.dtype (=f16) must equal x.dtype (=f32)"},
    {TV_ACTS, m_ac_partial, INV, "dk_activation_scaled: y (bytes 4..99) overlaps x (bytes 0..95) in the same buffer; it must be either the exact same view (in place) or disjoint"},
    {TV_ACTS, m_ac_y_self, INV, "dk_activation_scaled: y overlaps itself: strides[2] (=0) must be > 0"},

    /* add */
    {TV_ADD, m_ad_alpha, INV, "dk_add: alpha (=nan) must be finite"},
    {TV_ADD, m_ad_beta, INV, "dk_add: beta (=inf) must be finite"},
    {TV_ADD, m_ad_act, INV, "dk_add: act (=100) must be a dk_activation (0..5)"},
    {TV_ADD, m_ad_b_shape, INV, "dk_add: b.shape (=[2, 3, 3]) must equal a.shape (=[2, 3, 4])"},
    {TV_ADD, m_ad_y_shape, INV, "dk_add: y.shape (=[1, 3, 4]) must equal a.shape (=[2, 3, 4])"},
    {TV_ADD, m_ad_b_ndim, INV, "dk_add: b.shape (=[2, 3, 4, 1]) must equal a.shape (=[2, 3, 4])"},
    {TV_ADD, m_ad_b_dtype, INV, "dk_add: b.dtype (=f16) must equal a.dtype (=f32)"},
    {TV_ADD, m_ad_y_dtype, INV, "dk_add: y.dtype (=bf16) must equal a.dtype (=f32)"},
    {TV_ADD, m_ad_y_is_a_part_b, INV, "dk_add: y (bytes 0..95) overlaps b (bytes 8..103) in the same buffer; it must be either the exact same view"},
    {TV_ADD, m_ad_y_part_a, INV, "dk_add: y (bytes 44..139) overlaps a (bytes 0..95)"},
    {TV_ADD, m_ad_y_self, INV, "dk_add: y overlaps itself: strides[1] (=4) must be > 7"},

    /* upsample_nearest */
    {TV_UPS, m_up_x_ndim, INV, "dk_upsample_nearest: x.ndim (=3) must be 4 ([N, C, H, W])"},
    {TV_UPS, m_up_y_ndim, INV, "dk_upsample_nearest: y.ndim (=2) must be 4 ([N, C, OH, OW])"},
    {TV_UPS, m_up_n, INV, "dk_upsample_nearest: y.shape[0] (=2) must equal x.shape[0] (=1)"},
    {TV_UPS, m_up_c, INV, "dk_upsample_nearest: y.shape[1] (=1) must equal x.shape[1] (=2)"},
    {TV_UPS, m_up_ovf, INV, "dk_upsample_nearest: y.shape[2] * x.shape[2] (=6 * 4611686018427387904) overflows 64 bits"},
    {TV_UPS, m_up_dtype, INV, "dk_upsample_nearest: y.dtype (=f16) must equal x.dtype (=f32)"},
    {TV_UPS, m_up_y_on_x, INV, "dk_upsample_nearest: y (bytes 68..355) overlaps x (bytes 0..71)"},
    {TV_UPS, m_up_y_self, INV, "dk_upsample_nearest: y overlaps itself: strides[3] (=0) must be > 0"},

    /* convert */
    {TV_CONVERT, m_cvt_shape, INV, "dk_convert: y.shape (=[1, 2, 3, 3]) must equal x.shape (=[1, 2, 3, 4])"},
    {TV_CONVERT, m_cvt_ndim, INV, "dk_convert: y.shape (=[1, 2, 3]) must equal x.shape (=[1, 2, 3, 4])"},
    {TV_CONVERT, m_cvt_same_view, INV, "dk_convert: y (bytes 0..95) overlaps x (bytes 0..95) in the same buffer; an output may not alias an input"},
    {TV_CONVERT, m_cvt_y_on_x, INV, "dk_convert: y (bytes 90..137) overlaps x (bytes 0..95)"},
    {TV_CONVERT, m_cvt_y_self, INV, "dk_convert: y overlaps itself: strides[1] (=0) must be > 0"},
    {TV_CONVERT, m_cvt_y_dtype, INV, "dk_convert: y.dtype (=4) must be DK_F32, DK_F16 or DK_BF16"},

    /* prepare_weight */
    {TV_PREP, m_pw_use0, INV, "dk_prepare_weight: use (=0) must be a dk_weight_use (1..3)"},
    {TV_PREP, m_pw_use4, INV, "dk_prepare_weight: use (=4) must be a dk_weight_use (1..3)"},
    {TV_PREP, m_pw_conv_ndim, INV, "dk_prepare_weight: w.ndim (=3) must be 4 ([Cout, Cin/groups, KH, KW] for DK_WEIGHT_CONV2D)"},
    {TV_PREP, m_pw_convt_ndim, INV, "dk_prepare_weight: w.ndim (=2) must be 4 ([Cin, Cout/groups, KH, KW] for DK_WEIGHT_CONV_TRANSPOSE2D)"},
    {TV_PREP, m_pw_mm_ndim, INV, "dk_prepare_weight: w.ndim (=4) must be 2 or 3 ([K, N] or [B, K, N] for DK_WEIGHT_MATMUL_B)"},
};

/* ------------------------------------------------------------------ runner */

static int tv_output_poisoned(dk_context *ctx, dk_buffer *buf) {
    static uint32_t words[TV_BUF_BYTES / 4];
    size_t i;
    if (dk_buffer_download(ctx, buf, 0, words, TV_BUF_BYTES) != DK_OK) return 0;
    for (i = 0; i < TV_BUF_BYTES / 4; i++)
        if (words[i] != TV_POISON) return 0;
    return 1;
}

static void tv_run_case(dk_context *ctx, size_t idx) {
    const tv_case *tc = &tv_cases[idx];
    tv_call c;
    dk_buffer *outbuf;
    dk_status st;
    const char *err;
    tv_base(&c, ctx, tc->op);
    /* Poison the base output's buffer (for prepare_weight: the weight, which is never written). */
    outbuf = c.t[c.out >= 0 ? c.out : 0].buffer;
    dk_buffer_fill(ctx, outbuf, 0, TV_BUF_BYTES, TV_POISON);
    tc->mutate(&c);
    st = tv_run(&c, ctx);
    err = dk_last_error(ctx);
    if (tc->status == DK_OK) {
        CHECK(st == DK_OK || st == DK_ERR_UNSUPPORTED,
                 "case %zu (%s): a valid call failed validation: %s: %s", idx, tv_op_name(tc->op),
                 dk_status_name(st), err);
        if (st == DK_OK) CHECK(err[0] == '\0', "case %zu: DK_OK but error text '%s'", idx, err);
    } else {
        CHECK(st == tc->status, "case %zu (%s): status %s, expected %s (message: %s)", idx,
                 tv_op_name(tc->op), dk_status_name(st), dk_status_name(tc->status), err);
        CHECK(strstr(err, tc->msg) != NULL, "case %zu: message\n    '%s'\n  does not contain\n    '%s'", idx,
                 err, tc->msg);
        CHECK(tv_output_poisoned(ctx, outbuf), "case %zu (%s): the output was written by a rejected call",
                 idx, tc->msg);
    }
    tv_free(&c);
}

/* A NULL ctx: INVALID_ARGUMENT and the message in the thread's slot. */
static void tv_null_ctx(dk_context *ctx) {
    int op;
    for (op = TV_CONV2D; op <= TV_ACTS; op++) {
        tv_call c;
        char want[96];
        dk_status st;
        tv_base(&c, ctx, (tv_op)op);
        st = tv_run(&c, NULL);
        snprintf(want, sizeof want, "%s: ctx must not be NULL", tv_op_name((tv_op)op));
        CHECK(st == DK_ERR_INVALID_ARGUMENT, "NULL ctx for %s: status %s", tv_op_name((tv_op)op),
                 dk_status_name(st));
        CHECK(strstr(dk_last_error(NULL), want) != NULL, "NULL ctx: thread error '%s', expected '%s'",
                 dk_last_error(NULL), want);
        tv_free(&c);
    }
}

/* After a rejected call, a valid one on the same context and buffers works;
 * checked against a host computation when the backend runs the op. */
static void tv_valid_after_failure(dk_context *ctx) {
    tv_call c;
    float a[24], b[24], y[24];
    dk_status st;
    int i, bad = 0;
    tv_base(&c, ctx, TV_ADD);
    c.act = DK_ACT_NONE;
    dk_buffer_fill(ctx, c.t[DY].buffer, 0, TV_BUF_BYTES, TV_POISON);
    c.t[B].dtype = DK_F16; /* broken */
    st = tv_run(&c, ctx);
    CHECK(st == DK_ERR_INVALID_ARGUMENT, "broken dk_add: status %s", dk_status_name(st));
    c.t[B].dtype = DK_F32; /* fixed */
    st = tv_run(&c, ctx);
    CHECK(st == DK_OK || st == DK_ERR_UNSUPPORTED, "valid dk_add after a failed one: %s: %s",
             dk_status_name(st), dk_last_error(ctx));
    if (st == DK_OK) {
        CHECK(dk_last_error(ctx)[0] == '\0', "the old error text survived a valid call: '%s'",
                 dk_last_error(ctx));
        CHECK(dk_sync(ctx) == DK_OK, "dk_sync: %s", dk_last_error(ctx));
        dk_buffer_download(ctx, c.t[A].buffer, 0, a, sizeof a);
        dk_buffer_download(ctx, c.t[B].buffer, 0, b, sizeof b);
        dk_buffer_download(ctx, c.t[DY].buffer, 0, y, sizeof y);
        for (i = 0; i < 24; i++) {
            float want = c.alpha * a[i] + c.beta * b[i];
            if (!(fabsf(y[i] - want) <= 1e-5f * (1.0f + fabsf(want)))) bad++;
        }
        CHECK(bad == 0, "valid dk_add after a failed one: %d of 24 values wrong", bad);
    } else {
        printf("note: the backend does not run dk_add yet (%s); values not checked\n", dk_last_error(ctx));
    }
    tv_free(&c);
}

int main(void) {
    dk_context_options opt;
    dk_context *ctx = NULL;
    size_t i, n = sizeof tv_cases / sizeof tv_cases[0];
    dk_context_options_init(&opt);
    opt.backend = DK_BACKEND_CPU;
    opt.num_threads = 1;
    if (dk_context_create(&opt, &ctx) != DK_OK) {
        printf("FAIL: dk_context_create: %s\n", dk_last_error(NULL));
        return 1;
    }
    for (i = 0; i < n; i++) tv_run_case(ctx, i);
    tv_null_ctx(ctx);
    tv_valid_after_failure(ctx);
    dk_context_destroy(ctx);
    printf("%zu validation cases, %d failures\n", n, failures);
    return failures ? 1 : 0;
}
