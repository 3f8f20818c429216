/* Per-op glue of the harness (see harness_ops.h). */
#include "harness_ops.h"
#include "reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HO_GAP 3 /* extra elements per row / pixel of a gapped output view */

/* Slots per op family. */
enum { HO_X = 0, HO_W = 1, HO_BIAS = 2, HO_RES = 3, HO_Y = 4, HO_CACHE = 5 }; /* conv, matmul, linear, conv3d */
enum { HO_NX = 0, HO_GAMMA = 1, HO_BETA = 2, HO_NY = 3 };                /* norms */
enum { HO_Q = 0, HO_K = 1, HO_V = 2, HO_O = 3 };                         /* attention */
enum { HO_A = 0, HO_B = 1, HO_EY = 2 };                                  /* elementwise */

/* A 4-D image tensor [n, c, h, w] in the case's layout. */
static void ho_image_at(ht_set *s, int slot, dk_dtype t, int layout, int64_t n, int64_t c, int64_t h,
                        int64_t w, int64_t gap, int64_t elem_offset, int output, double scale, double shift) {
    int64_t shape[4], strides[4];
    shape[0] = n; shape[1] = c; shape[2] = h; shape[3] = w;
    ht_image_strides(layout, gap, shape, strides);
    if (output) ht_define_output(s, slot, slot, t, 4, shape, strides, elem_offset);
    else ht_define(s, slot, slot, t, 4, shape, strides, elem_offset, scale, shift);
}

static void ho_image(ht_set *s, int slot, dk_dtype t, int layout, int64_t n, int64_t c, int64_t h,
                     int64_t w, int64_t gap, int output, double scale, double shift) {
    ho_image_at(s, slot, t, layout, n, c, h, w, gap, 0, output, scale, shift);
}

/* A 5-D video tensor [n, c, f, h, w] in the case's layout (HC_NCDHW / HC_NDHWC). */
static void ho_video_at(ht_set *s, int slot, dk_dtype t, int layout, int64_t n, int64_t c, int64_t f, int64_t h,
                        int64_t w, int64_t gap, int64_t elem_offset, int output, double scale, double shift) {
    int64_t shape[5], strides[5];
    shape[0] = n; shape[1] = c; shape[2] = f; shape[3] = h; shape[4] = w;
    ht_video_strides(layout, gap, shape, strides);
    if (output) ht_define_output(s, slot, slot, t, 5, shape, strides, elem_offset);
    else ht_define(s, slot, slot, t, 5, shape, strides, elem_offset, scale, shift);
}

/* An elementwise operand: an image, or (f > 0, a video layout) a video of f frames. */
static void ho_frames_at(ht_set *s, int slot, dk_dtype t, int layout, int64_t n, int64_t c, int64_t f, int64_t h,
                         int64_t w, int64_t gap, int64_t elem_offset, int output, double scale, double shift) {
    if (f > 0) ho_video_at(s, slot, t, layout, n, c, f, h, w, gap, elem_offset, output, scale, shift);
    else ho_image_at(s, slot, t, layout, n, c, h, w, gap, elem_offset, output, scale, shift);
}

/* A row-major tensor, optionally with a row gap. */
static void ho_rowmajor(ht_set *s, int slot, dk_dtype t, int32_t ndim, const int64_t *shape,
                        int64_t gap, int output, double scale, double shift) {
    int64_t strides[DK_MAX_DIMS];
    ht_rowmajor_strides(ndim, shape, gap, strides);
    if (output) ht_define_output(s, slot, slot, t, ndim, shape, strides, 0);
    else ht_define(s, slot, slot, t, ndim, shape, strides, 0, scale, shift);
}

/* The output slot as the same view as input slot `in` (in place). */
static void ho_alias(ht_set *s, int slot, int in) {
    const ht_tensor *x = &s->t[in];
    ht_define_output(s, slot, x->store, x->t.dtype, x->t.ndim, x->t.shape, x->t.strides, x->elem_offset);
}

/* A matrix operand [batch?, rows, cols], stored transposed (last two dims
 * swapped in memory) when `transposed`, with `gap` extra elements per stored row. */
static void ho_matrix(ht_set *s, int slot, dk_dtype t, int64_t batch, int64_t rows, int64_t cols,
                      int transposed, int64_t gap, double scale) {
    int64_t shape[3], strides[3];
    int32_t nd = batch > 0 ? 3 : 2, o = nd - 2;
    shape[o] = rows;
    shape[o + 1] = cols;
    strides[o] = transposed ? 1 : cols + gap;
    strides[o + 1] = transposed ? rows + gap : 1;
    if (batch > 0) {
        shape[0] = batch;
        strides[0] = transposed ? cols * (rows + gap) : rows * (cols + gap);
    }
    ht_define(s, slot, slot, t, nd, shape, strides, 0, scale, 0.0);
}

/* ----------------------------------------------------------------- setup */

static void ho_setup_conv(const hc_case *c, ho_plan *p, int transposed) {
    const hc_conv *q = &c->conv;
    ht_set *s = &p->set;
    int64_t oh = hr_conv_out_h(q, transposed), ow = hr_conv_out_w(q, transposed);
    int64_t cin_g = q->cin / q->groups, cout_g = q->cout / q->groups;
    int64_t wshape[4], wstrides[4], fan;
    if (transposed) {
        wshape[0] = q->cin; wshape[1] = cout_g;
        fan = cin_g * ((q->kh + q->stride_h - 1) / q->stride_h) * ((q->kw + q->stride_w - 1) / q->stride_w);
    } else {
        wshape[0] = q->cout; wshape[1] = cin_g;
        fan = cin_g * q->kh * q->kw;
    }
    wshape[2] = q->kh; wshape[3] = q->kw;
    ho_image(s, HO_X, c->dtype, c->layout, q->n, q->cin, q->h, q->w, c->in_gap ? HO_GAP : 0, 0, 1.0, 0.0);
    /* the weight follows the case layout too: NHWC cases use [O, KH, KW, I] storage */
    ht_image_strides(c->layout, 0, wshape, wstrides);
    ht_define(s, HO_W, HO_W, c->dtype, 4, wshape, wstrides, 0, sqrt(3.0 / (double)(fan > 0 ? fan : 1)), 0.0);
    if (q->bias) {
        int64_t n = q->cout;
        ho_rowmajor(s, HO_BIAS, q->f32_bias ? DK_F32 : c->dtype, 1, &n, 0, 0, 0.5, 0.0);
    }
    if (q->residual && q->res_inplace) { /* the residual is y's own view, laid out as y */
        ho_image(s, HO_RES, c->dtype, c->layout, q->n, q->cout, oh, ow, c->out_gap ? HO_GAP : 0, 0, 1.0, 0.0);
        ho_alias(s, HO_Y, HO_RES);
    } else {
        if (q->residual)
            ho_image(s, HO_RES, c->dtype, c->layout, q->n, q->cout, oh, ow, c->in_gap ? HO_GAP : 0, 0, 1.0, 0.0);
        ho_image(s, HO_Y, c->dtype, c->layout, q->n, q->cout, oh, ow, c->out_gap ? HO_GAP : 0, 1, 0, 0);
    }
    p->out = HO_Y;
    p->weight = HO_W;
    p->weight_use = transposed ? DK_WEIGHT_CONV_TRANSPOSE2D : DK_WEIGHT_CONV2D;
    p->k = fan;
    /* a fused 2x upsample lets a backend sum the taps that read one input pixel
     * (src/conv_up2.c): one more rounding of every weight */
    p->weight_sums = !transposed && q->upsample == 2;
}

/* conv3d: x, cache, residual and y videos in the case layout; the weight
 * [Cout, Cin/g, KT, KH, KW] dense for NCDHW, stored [O, KT, KH, KW, I] for NDHWC. */
static void ho_setup_conv3d(const hc_case *c, ho_plan *p) {
    const hc_conv3d *q = &c->c3;
    ht_set *s = &p->set;
    int64_t ot = hr_conv3d_out(q->t, q->pad_front, q->pad_back, q->dilation_t, q->kt, q->stride_t);
    int64_t oh = hr_conv3d_out(q->h, q->pad_top, q->pad_bottom, q->dilation_h, q->kh, q->stride_h);
    int64_t ow = hr_conv3d_out(q->w, q->pad_left, q->pad_right, q->dilation_w, q->kw, q->stride_w);
    int64_t cin_g = q->cin / q->groups, fan = cin_g * q->kt * q->kh * q->kw;
    int64_t ig = c->in_gap ? HO_GAP : 0, og = c->out_gap ? HO_GAP : 0;
    int64_t wshape[5], wstrides[5];
    wshape[0] = q->cout; wshape[1] = cin_g; wshape[2] = q->kt; wshape[3] = q->kh; wshape[4] = q->kw;
    ht_video_strides(c->layout, 0, wshape, wstrides);
    ho_video_at(s, HO_X, c->dtype, c->layout, q->n, q->cin, q->t, q->h, q->w, ig, 0, 0, 1.0, 0.0);
    if (q->tc > 0) ho_video_at(s, HO_CACHE, c->dtype, c->layout, q->n, q->cin, q->tc, q->h, q->w, ig, 0, 0, 1.0, 0.0);
    ht_define(s, HO_W, HO_W, c->dtype, 5, wshape, wstrides, 0, sqrt(3.0 / (double)fan), 0.0);
    if (q->bias) {
        int64_t n = q->cout;
        ho_rowmajor(s, HO_BIAS, q->f32_bias ? DK_F32 : c->dtype, 1, &n, 0, 0, 0.5, 0.0);
    }
    if (q->residual && q->res_inplace) {
        ho_video_at(s, HO_RES, c->dtype, c->layout, q->n, q->cout, ot, oh, ow, og, 0, 0, 1.0, 0.0);
        ho_alias(s, HO_Y, HO_RES);
    } else {
        if (q->residual) ho_video_at(s, HO_RES, c->dtype, c->layout, q->n, q->cout, ot, oh, ow, ig, 0, 0, 1.0, 0.0);
        ho_video_at(s, HO_Y, c->dtype, c->layout, q->n, q->cout, ot, oh, ow, og, 0, 1, 0, 0);
    }
    p->out = HO_Y;
    p->weight = -1;
    p->k = fan;
}

static void ho_setup_matmul(const hc_case *c, ho_plan *p, int linear) {
    const hc_matmul *q = &c->mm;
    ht_set *s = &p->set;
    int64_t yshape[3];
    int32_t nd = q->batch > 0 ? 3 : 2;
    int64_t ig = c->in_gap ? HO_GAP : 0;
    double ws = sqrt(3.0 / (double)q->k);
    int b_is_weight = linear || q->b_shared || q->batch == 0;
    ho_matrix(s, HO_X, c->dtype, q->a_shared ? 0 : q->batch, q->m, q->k, q->a_t, ig, 1.0);
    if (linear) ho_matrix(s, HO_W, c->dtype, 0, q->n, q->k, q->b_t, 0, ws);
    else ho_matrix(s, HO_W, c->dtype, q->b_shared ? 0 : q->batch, q->k, q->n, q->b_t, b_is_weight ? 0 : ig, ws);
    if (q->bias) {
        int64_t n = q->n;
        ho_rowmajor(s, HO_BIAS, q->f32_bias ? DK_F32 : c->dtype, 1, &n, 0, 0, 0.5, 0.0);
    }
    yshape[0] = q->batch;
    yshape[nd - 2] = q->m;
    yshape[nd - 1] = q->n;
    if (q->residual && q->res_inplace) { /* the residual is y's own view, laid out as y */
        ho_rowmajor(s, HO_RES, c->dtype, nd, yshape, c->out_gap ? HO_GAP : 0, 0, 1.0, 0.0);
        ho_alias(s, HO_Y, HO_RES);
    } else {
        if (q->residual) ho_rowmajor(s, HO_RES, c->dtype, nd, yshape, ig, 0, 1.0, 0.0);
        ho_rowmajor(s, HO_Y, c->dtype, nd, yshape, c->out_gap ? HO_GAP : 0, 1, 0, 0);
    }
    p->out = HO_Y;
    /* only a 2-D b can be prepared (it is the shared weight) */
    p->weight = b_is_weight ? HO_W : -1;
    p->weight_use = DK_WEIGHT_MATMUL_B;
    p->k = q->k;
}

static void ho_setup_norm(const hc_case *c, ho_plan *p) {
    const hc_norm *q = &c->norm;
    ht_set *s = &p->set;
    /* group_norm and rms_norm: images / videos in the case layout, the channel axis dim 1 */
    int group = c->op == HC_GROUP_NORM || (c->op == HC_RMS_NORM && q->ndim >= 4);
    int64_t gap = c->out_gap ? HO_GAP : 0, ig = c->in_gap ? HO_GAP : 0;
    int64_t pc = group || c->op == HC_RMS_NORM ? q->shape[1] : q->shape[q->ndim - 1];
    /* inputs away from zero mean: statistics must not cancel catastrophically */
    double mean = q->mean != 0.0f ? (double)q->mean : 0.5;
    if (group && q->ndim == 5)
        ho_video_at(s, HO_NX, c->dtype, c->layout, q->shape[0], q->shape[1], q->shape[2], q->shape[3], q->shape[4],
                    ig, 0, 0, 2.0, mean);
    else if (group) ho_image(s, HO_NX, c->dtype, c->layout, q->shape[0], q->shape[1], q->shape[2], q->shape[3],
                             ig, 0, 2.0, mean);
    else ho_rowmajor(s, HO_NX, c->dtype, q->ndim, q->shape, ig, 0, 2.0, mean);
    /* split GroupNorm: bands of rows with different means, so a wrong merge shows */
    if (group && q->split) s->t[HO_NX].row_ramp = 6.0;
    if (q->gamma) ho_rowmajor(s, HO_GAMMA, q->f32_affine ? DK_F32 : c->dtype, 1, &pc, 0, 0, 0.5, 1.0);
    if (q->beta) ho_rowmajor(s, HO_BETA, q->f32_affine ? DK_F32 : c->dtype, 1, &pc, 0, 0, 0.5, 0.0);
    if (q->inplace) ho_alias(s, HO_NY, HO_NX);
    else if (group && q->ndim == 5)
        ho_video_at(s, HO_NY, c->dtype, c->layout, q->shape[0], q->shape[1], q->shape[2], q->shape[3], q->shape[4],
                    gap, 0, 1, 0, 0);
    else if (group) ho_image(s, HO_NY, c->dtype, c->layout, q->shape[0], q->shape[1], q->shape[2],
                             q->shape[3], gap, 1, 0, 0);
    else ho_rowmajor(s, HO_NY, c->dtype, q->ndim, q->shape, gap, 1, 0, 0);
    p->out = HO_NY;
    p->weight = -1;
    p->k = 1; /* statistics in fp32 or wider: error is the output rounding */
}

/* Attention tensors [b, heads, n, d] in one of the storages of hc_attn_storage;
 * with b2 > 0, [b, b2, heads, n, d] (b2 a second batch dim, stored inside b). */
static void ho_attn_tensor(ht_set *s, int slot, int store, dk_dtype t, const hc_attention *q,
                           int64_t n, int64_t d, int output, double scale) {
    int64_t shape[5], strides[5], off = 0, b = q->b * (q->b2 > 0 ? q->b2 : 1);
    shape[0] = b; shape[1] = q->heads; shape[2] = n; shape[3] = d;
    if (q->storage == HC_VIDEO_NCDHW) { /* [b, b2, 1, n, d] of an NCDHW video [b, d, b2, n] */
        shape[0] = q->b; shape[1] = q->b2; shape[2] = 1; shape[3] = n; shape[4] = d;
        strides[4] = q->b2 * n;
        strides[3] = 1;
        strides[2] = d * q->b2 * n;
        strides[1] = n;
        strides[0] = d * q->b2 * n;
        if (output) ht_define_output(s, slot, store, t, 5, shape, strides, 0);
        else ht_define(s, slot, store, t, 5, shape, strides, 0, scale, 0.0);
        return;
    }
    if (q->storage == HC_BHND) {
        ht_rowmajor_strides(4, shape, 0, strides);
    } else if (q->storage == HC_BNHD || output) { /* stored [b, n, heads, d] */
        strides[3] = 1;
        strides[1] = d;
        strides[2] = q->heads * d;
        strides[0] = n * q->heads * d;
    } else { /* packed [b, n, 3, heads, d]: slot 0/1/2 is q/k/v */
        strides[3] = 1;
        strides[1] = d;
        strides[2] = 3 * q->heads * d;
        strides[0] = n * 3 * q->heads * d;
        off = slot * q->heads * d;
    }
    if (q->b2 > 0) { /* split the batch dim: [b, b2, ...] */
        int i;
        for (i = 4; i >= 1; i--) {
            shape[i] = shape[i - 1];
            strides[i] = strides[i - 1];
        }
        shape[0] = q->b;
        shape[1] = q->b2;
        strides[0] = strides[1] * q->b2;
    }
    if (output) ht_define_output(s, slot, store, t, q->b2 > 0 ? 5 : 4, shape, strides, off);
    else ht_define(s, slot, store, t, q->b2 > 0 ? 5 : 4, shape, strides, off, scale, 0.0);
}

static void ho_setup_attention(const hc_case *c, ho_plan *p) {
    const hc_attention *q = &c->attn;
    ht_set *s = &p->set;
    int packed = q->storage == HC_QKV_PACKED;
    /* q scaled so that the logits spread (std ~2): softmax is not near-uniform */
    ho_attn_tensor(s, HO_Q, HO_Q, c->dtype, q, q->nq, q->d, 0, q->q_range != 0.0f ? (double)q->q_range : 6.0);
    ho_attn_tensor(s, HO_K, packed ? HO_Q : HO_K, c->dtype, q, q->nkv, q->d, 0, 1.0);
    ho_attn_tensor(s, HO_V, packed ? HO_Q : HO_V, c->dtype, q, q->nkv, q->dv, 0, 1.0);
    if (q->q_range != 0.0f) {
        s->t[HO_Q].grid = 1.0;
        s->t[HO_K].grid = 0.125;
    }
    ho_attn_tensor(s, HO_O, HO_O, c->dtype, q, q->nq, q->dv, 1, 0.0);
    p->out = HO_O;
    p->weight = -1;
    p->k = q->d > q->nkv ? q->d : q->nkv;
    /* Large logits: exp(x - max) turns each logit's rounding (|x| * eps) into a
     * relative error of the probabilities, so the bound grows with |x|^2 like K. */
    if (q->q_range > 8.0f) p->k *= (int64_t)((q->q_range / 8.0f) * (q->q_range / 8.0f));
}

/* The other storage of the same rank: NCHW <-> NHWC, NCDHW <-> NDHWC. */
static int ho_other_layout(int layout) {
    switch (layout) {
    case HC_NCHW: return HC_NHWC;
    case HC_NHWC: return HC_NCHW;
    case HC_NCDHW: return HC_NDHWC;
    default: return HC_NCDHW;
    }
}

static void ho_setup_elementwise(const hc_case *c, ho_plan *p) {
    const hc_elementwise *q = &c->ew;
    ht_set *s = &p->set;
    int64_t gap = c->out_gap ? HO_GAP : 0, ig = c->in_gap ? HO_GAP : 0;
    p->out = HO_EY;
    p->weight = -1;
    p->k = 1;
    switch (c->op) {
    case HC_ADD:
        ho_frames_at(s, HO_A, c->dtype, c->layout, q->n, q->c, q->t, q->h, q->w, ig, 0, 0, 3.0, 0.0);
        ho_frames_at(s, HO_B, c->dtype, c->layout, q->n, q->c, q->t, q->h, q->w, ig, q->misalign, 0, 3.0, 0.0);
        if (q->inplace) ho_alias(s, HO_EY, q->inplace == 1 ? HO_A : HO_B);
        else ho_frames_at(s, HO_EY, c->dtype, c->layout, q->n, q->c, q->t, q->h, q->w, gap, 0, 1, 0, 0);
        break;
    case HC_ACTIVATION:
    case HC_ACTIVATION_SCALED:
        ho_frames_at(s, HO_A, c->dtype, q->other_layout ? ho_other_layout((int)c->layout) : (int)c->layout, q->n, q->c, q->t,
                     q->h, q->w, ig, 0, 0, 3.0, 0.0);
        if (q->inplace) ho_alias(s, HO_EY, HO_A);
        else ho_frames_at(s, HO_EY, c->dtype, c->layout, q->n, q->c, q->t, q->h, q->w, gap, q->misalign, 1, 0, 0);
        break;
    case HC_UPSAMPLE_NEAREST:
        ho_frames_at(s, HO_A, c->dtype, c->layout, q->n, q->c, q->t, q->h, q->w, ig, 0, 0, 4.0, 0.0);
        ho_frames_at(s, HO_EY, c->dtype, c->layout, q->n, q->c, q->ot, q->oh, q->ow, gap, q->misalign, 1, 0, 0);
        p->exact = 1;
        break;
    default: /* HC_CONVERT */
        ho_frames_at(s, HO_A, q->src_dtype, q->src_layout, q->n, q->c, q->t, q->h, q->w, ig, 0, 0, 4.0, 0.0);
        ho_frames_at(s, HO_EY, c->dtype, c->layout, q->n, q->c, q->t, q->h, q->w, gap, 0, 1, 0, 0);
        p->exact = 1;
        break;
    }
}

void ho_setup(const hc_case *c, ho_plan *p) {
    memset(p, 0, sizeof *p);
    switch (c->op) {
    case HC_CONV2D: ho_setup_conv(c, p, 0); break;
    case HC_CONV_TRANSPOSE2D: ho_setup_conv(c, p, 1); break;
    case HC_MATMUL: ho_setup_matmul(c, p, 0); break;
    case HC_LINEAR: ho_setup_matmul(c, p, 1); break;
    case HC_GROUP_NORM:
    case HC_LAYER_NORM:
    case HC_RMS_NORM: ho_setup_norm(c, p); break;
    case HC_ATTENTION: ho_setup_attention(c, p); break;
    case HC_CONV3D: ho_setup_conv3d(c, p); break;
    default: ho_setup_elementwise(c, p); break;
    }
}

/* ------------------------------------------------------------------- run */

/* Rows [r0, r0 + rows) of a 4-D image view (frames of a 5-D video). */
static dk_tensor ho_rows(const dk_tensor *t, int64_t r0, int64_t rows) {
    dk_tensor b = *t;
    b.offset += (uint64_t)(r0 * t->strides[2]) * dk_dtype_size(t->dtype);
    b.shape[2] = rows;
    return b;
}

/* Split GroupNorm as a tiled runtime does it: statistics of two bands of rows
 * (into one buffer, the second at an offset), merged on the host, uploaded, and
 * each band normalized with them. */
static dk_status ho_split_group_norm(dk_context *ctx, const dk_group_norm_desc *d, const dk_tensor *x,
                                     const dk_tensor *gamma, const dk_tensor *beta, const dk_tensor *y) {
    int64_t ng = x->shape[0] * d->groups, h = x->shape[2], h1 = h / 3 > 0 ? h / 3 : 1;
    int64_t sshape[3] = {x->shape[0], d->groups, 2};
    uint64_t sbytes = (uint64_t)ng * 2 * sizeof(float);
    /* values per group in one row (image) or one frame (video) */
    double cpg_hw = (double)(x->shape[1] / d->groups) * (double)x->shape[3] * (x->ndim == 5 ? (double)x->shape[4] : 1.0);
    float *host = (float *)malloc((size_t)sbytes * 2);
    dk_buffer *b = NULL;
    dk_tensor s0, s1, x0 = ho_rows(x, 0, h1), x1 = ho_rows(x, h1, h - h1), y0 = ho_rows(y, 0, h1), y1 = ho_rows(y, h1, h - h1);
    dk_status st = host ? dk_buffer_create(ctx, 2 * sbytes + 64, &b) : DK_ERR_OUT_OF_MEMORY;
    s0 = dk_tensor_contiguous(b, 0, DK_F32, 3, sshape);
    s1 = dk_tensor_contiguous(b, sbytes + 64, DK_F32, 3, sshape);
    if (st == DK_OK) st = dk_group_norm_stats(ctx, d, &x0, &s0);
    if (st == DK_OK) st = dk_group_norm_stats(ctx, d, &x1, &s1);
    if (st == DK_OK) st = dk_buffer_download(ctx, b, 0, host, sbytes);
    if (st == DK_OK) st = dk_buffer_download(ctx, b, sbytes + 64, host + ng * 2, sbytes);
    if (st == DK_OK) {
        dk_group_norm_stats_merge(host, cpg_hw * (double)h1, host + ng * 2, cpg_hw * (double)(h - h1), ng);
        st = dk_buffer_upload(ctx, b, sbytes + 64, host, sbytes);
    }
    if (st == DK_OK) st = dk_group_norm_apply(ctx, d, &x0, &s1, gamma, beta, &y0);
    if (st == DK_OK) st = dk_group_norm_apply(ctx, d, &x1, &s1, gamma, beta, &y1);
    if (st == DK_OK) st = dk_sync(ctx);
    dk_buffer_destroy(ctx, b);
    free(host);
    return st;
}

static const dk_tensor *ho_opt(ho_plan *p, int slot) { return p->set.t[slot].used ? &p->set.t[slot].t : NULL; }

/* dk_linear's weight [N, K] seen as matmul's b [K, N]. */
static dk_tensor ho_transposed(const dk_tensor *w) {
    dk_tensor t = *w;
    t.shape[0] = w->shape[1];
    t.shape[1] = w->shape[0];
    t.strides[0] = w->strides[1];
    t.strides[1] = w->strides[0];
    return t;
}

dk_status ho_prepare(dk_context *ctx, const hc_case *c, ho_plan *p) {
    dk_tensor w;
    if (p->weight < 0) return DK_OK;
    w = p->set.t[p->weight].t;
    if (c->op == HC_LINEAR) w = ho_transposed(&w);
    return dk_prepare_weight(ctx, p->weight_use, &w);
}

dk_status ho_run(dk_context *ctx, const hc_case *c, ho_plan *p) {
    switch (c->op) {
    case HC_CONV2D: {
        dk_conv2d_desc d;
        dk_conv2d_desc_init(&d);
        d.stride_h = c->conv.stride_h; d.stride_w = c->conv.stride_w;
        d.pad_h = c->conv.pad_h; d.pad_w = c->conv.pad_w;
        if (c->conv.sides) {
            d.pad_top = c->conv.pad_top; d.pad_bottom = c->conv.pad_bottom;
            d.pad_left = c->conv.pad_left; d.pad_right = c->conv.pad_right;
        }
        d.dilation_h = c->conv.dilation_h; d.dilation_w = c->conv.dilation_w;
        d.groups = c->conv.groups;
        d.upsample = c->conv.upsample;
        d.activation = c->conv.act;
        d.post_activation = c->conv.post_act;
        d.output_scale = c->conv.output_scale;
        d.residual_scale = c->conv.residual_scale;
        return dk_conv2d(ctx, &d, ho_opt(p, HO_X), ho_opt(p, HO_W), ho_opt(p, HO_BIAS), ho_opt(p, HO_RES),
                         ho_opt(p, HO_Y));
    }
    case HC_CONV_TRANSPOSE2D: {
        dk_conv_transpose2d_desc d;
        dk_conv_transpose2d_desc_init(&d);
        d.stride_h = c->conv.stride_h; d.stride_w = c->conv.stride_w;
        d.pad_h = c->conv.pad_h; d.pad_w = c->conv.pad_w;
        d.output_padding_h = c->conv.output_padding_h; d.output_padding_w = c->conv.output_padding_w;
        d.dilation_h = c->conv.dilation_h; d.dilation_w = c->conv.dilation_w;
        d.groups = c->conv.groups;
        d.activation = c->conv.act;
        d.post_activation = c->conv.post_act;
        d.output_scale = c->conv.output_scale;
        d.residual_scale = c->conv.residual_scale;
        return dk_conv_transpose2d(ctx, &d, ho_opt(p, HO_X), ho_opt(p, HO_W), ho_opt(p, HO_BIAS),
                                   ho_opt(p, HO_RES), ho_opt(p, HO_Y));
    }
    case HC_MATMUL:
    case HC_LINEAR: {
        dk_matmul_desc d;
        dk_matmul_desc_init(&d);
        d.activation = c->mm.act;
        d.post_activation = c->mm.post_act;
        d.output_scale = c->mm.output_scale;
        d.residual_scale = c->mm.residual_scale;
        if (c->op == HC_LINEAR)
            return dk_linear(ctx, &d, ho_opt(p, HO_X), ho_opt(p, HO_W), ho_opt(p, HO_BIAS), ho_opt(p, HO_RES),
                             ho_opt(p, HO_Y));
        return dk_matmul(ctx, &d, ho_opt(p, HO_X), ho_opt(p, HO_W), ho_opt(p, HO_BIAS), ho_opt(p, HO_RES),
                         ho_opt(p, HO_Y));
    }
    case HC_GROUP_NORM: {
        dk_group_norm_desc d;
        dk_group_norm_desc_init(&d);
        d.groups = c->norm.groups;
        d.eps = c->norm.eps;
        d.activation = c->norm.act;
        if (c->norm.split)
            return ho_split_group_norm(ctx, &d, ho_opt(p, HO_NX), ho_opt(p, HO_GAMMA), ho_opt(p, HO_BETA),
                                       ho_opt(p, HO_NY));
        return dk_group_norm(ctx, &d, ho_opt(p, HO_NX), ho_opt(p, HO_GAMMA), ho_opt(p, HO_BETA), ho_opt(p, HO_NY));
    }
    case HC_LAYER_NORM: {
        dk_layer_norm_desc d;
        dk_layer_norm_desc_init(&d);
        d.eps = c->norm.eps;
        d.activation = c->norm.act;
        return dk_layer_norm(ctx, &d, ho_opt(p, HO_NX), ho_opt(p, HO_GAMMA), ho_opt(p, HO_BETA), ho_opt(p, HO_NY));
    }
    case HC_RMS_NORM: {
        dk_rms_norm_desc d;
        dk_rms_norm_desc_init(&d);
        d.form = (dk_rms_norm_form)c->norm.form;
        d.eps = c->norm.eps;
        d.activation = c->norm.act;
        return dk_rms_norm(ctx, &d, ho_opt(p, HO_NX), ho_opt(p, HO_GAMMA), ho_opt(p, HO_BETA), ho_opt(p, HO_NY));
    }
    case HC_ATTENTION: {
        dk_attention_desc d;
        dk_attention_desc_init(&d);
        d.scale = c->attn.scale;
        return dk_attention(ctx, &d, ho_opt(p, HO_Q), ho_opt(p, HO_K), ho_opt(p, HO_V), ho_opt(p, HO_O));
    }
    case HC_ADD:
        return dk_add(ctx, c->ew.alpha, ho_opt(p, HO_A), c->ew.beta, ho_opt(p, HO_B), c->ew.act, ho_opt(p, HO_EY));
    case HC_ACTIVATION:
        return dk_activation_forward(ctx, c->ew.act, ho_opt(p, HO_A), ho_opt(p, HO_EY));
    case HC_ACTIVATION_SCALED:
        return dk_activation_scaled(ctx, c->ew.in_scale, c->ew.act, c->ew.out_scale, ho_opt(p, HO_A),
                                    ho_opt(p, HO_EY));
    case HC_UPSAMPLE_NEAREST:
        return dk_upsample_nearest(ctx, ho_opt(p, HO_A), ho_opt(p, HO_EY));
    case HC_CONVERT:
        return dk_convert(ctx, ho_opt(p, HO_A), ho_opt(p, HO_EY));
    case HC_CONV3D: {
        const hc_conv3d *q = &c->c3;
        dk_conv3d_desc d;
        dk_conv3d_desc_init(&d);
        d.stride_t = q->stride_t; d.stride_h = q->stride_h; d.stride_w = q->stride_w;
        d.dilation_t = q->dilation_t; d.dilation_h = q->dilation_h; d.dilation_w = q->dilation_w;
        d.pad_front = q->pad_front; d.pad_back = q->pad_back;
        d.pad_top = q->pad_top; d.pad_bottom = q->pad_bottom; d.pad_left = q->pad_left; d.pad_right = q->pad_right;
        d.groups = q->groups;
        d.activation = q->act;
        d.post_activation = q->post_act;
        d.output_scale = q->output_scale;
        d.residual_scale = q->residual_scale;
        if (q->tc > 0)
            return dk_conv3d_chunk(ctx, &d, ho_opt(p, HO_CACHE), ho_opt(p, HO_X), ho_opt(p, HO_W), ho_opt(p, HO_BIAS),
                                   ho_opt(p, HO_RES), ho_opt(p, HO_Y));
        return dk_conv3d(ctx, &d, ho_opt(p, HO_X), ho_opt(p, HO_W), ho_opt(p, HO_BIAS), ho_opt(p, HO_RES),
                         ho_opt(p, HO_Y));
    }
    case HC_OP_COUNT: break;
    }
    return DK_ERR_INTERNAL;
}

/* ------------------------------------------------------------- reference */

static const double *ho_val(ho_plan *p, int slot) { return p->set.t[slot].used ? p->set.t[slot].val : NULL; }

int ho_reference(const hc_case *c, ho_plan *p) {
    int64_t n = p->set.t[p->out].numel, i;
    free(p->ref);
    p->ref = (double *)malloc((size_t)n * sizeof(double));
    if (!p->ref) return 0;
    switch (c->op) {
    case HC_CONV2D:
        hr_conv2d(&c->conv, ho_val(p, HO_X), ho_val(p, HO_W), ho_val(p, HO_BIAS), ho_val(p, HO_RES), p->ref);
        break;
    case HC_CONV_TRANSPOSE2D:
        hr_conv_transpose2d(&c->conv, ho_val(p, HO_X), ho_val(p, HO_W), ho_val(p, HO_BIAS), ho_val(p, HO_RES),
                            p->ref);
        break;
    case HC_MATMUL:
        hr_matmul(&c->mm, ho_val(p, HO_X), ho_val(p, HO_W), ho_val(p, HO_BIAS), ho_val(p, HO_RES), p->ref);
        break;
    case HC_LINEAR:
        hr_linear(&c->mm, ho_val(p, HO_X), ho_val(p, HO_W), ho_val(p, HO_BIAS), ho_val(p, HO_RES), p->ref);
        break;
    case HC_GROUP_NORM:
        hr_group_norm(&c->norm, ho_val(p, HO_NX), ho_val(p, HO_GAMMA), ho_val(p, HO_BETA), p->ref);
        break;
    case HC_LAYER_NORM:
        hr_layer_norm(&c->norm, ho_val(p, HO_NX), ho_val(p, HO_GAMMA), ho_val(p, HO_BETA), p->ref);
        break;
    case HC_RMS_NORM:
        hr_rms_norm(&c->norm, ho_val(p, HO_NX), ho_val(p, HO_GAMMA), ho_val(p, HO_BETA), p->ref);
        break;
    case HC_ATTENTION:
        for (i = 0; i < n; i++) p->ref[i] = NAN; /* stays NaN (and fails) if the reference cannot allocate */
        hr_attention(&c->attn, ho_val(p, HO_Q), ho_val(p, HO_K), ho_val(p, HO_V), p->ref);
        break;
    case HC_ADD:
        hr_add(n, c->ew.alpha, ho_val(p, HO_A), c->ew.beta, ho_val(p, HO_B), c->ew.act, p->ref);
        break;
    case HC_ACTIVATION:
        hr_activation(n, c->ew.act, ho_val(p, HO_A), p->ref);
        break;
    case HC_ACTIVATION_SCALED:
        for (i = 0; i < n; i++)
            p->ref[i] = (double)c->ew.out_scale * hr_act(c->ew.act, (double)c->ew.in_scale * ho_val(p, HO_A)[i]);
        break;
    case HC_UPSAMPLE_NEAREST:
        hr_upsample_nearest(&c->ew, ho_val(p, HO_A), p->ref);
        break;
    case HC_CONVERT: /* the value, rounded to the output dtype (round to nearest even) */
        for (i = 0; i < n; i++) p->ref[i] = ht_round(c->dtype, ho_val(p, HO_A)[i]);
        break;
    case HC_CONV3D:
        hr_conv3d(&c->c3, ho_val(p, HO_CACHE), ho_val(p, HO_X), ho_val(p, HO_W), ho_val(p, HO_BIAS),
                  ho_val(p, HO_RES), p->ref);
        break;
    case HC_OP_COUNT: break;
    }
    return 1;
}

void ho_free(ho_plan *p) {
    free(p->ref);
    p->ref = NULL;
}
