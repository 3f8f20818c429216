/* Fuzz target: descriptor and tensor-view validation of every op.
 *
 * The input bytes are decoded into one op call: first a valid call built from
 * small dimensions (so real kernels run often), then 0..7 hostile mutations of
 * descriptor fields and tensor views (NULL/swapped buffers, huge or negative
 * shapes and strides, overflowing products, huge or unaligned offsets, wrong
 * ranks and dtypes, aliasing views).  Buffers are small real CPU buffers.
 * A call whose work could be large goes through validation only
 * (dk__validate_*), so every input is validated and nothing runs for long.
 * Nothing here may crash, hang or trip ASan/UBSan.
 *
 * Built as a libFuzzer target (tools/fuzz.sh) or with fuzz_main.c as a plain
 * regression test over corpus/validate/ (meson test fuzz_validate).
 */
#include <difkern.h>

#include "../../src/validate.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FZ_SLOTS 6 /* conv3d: x, w, bias, residual, y, cache */
#define FZ_MAX_WORK ((uint64_t)1 << 19) /* elements + multiply-adds allowed to actually run */
#define FZ_MAX_BUF ((uint64_t)1 << 20)  /* bytes of one real buffer */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ------------------------------------------------------------ the decoder */

typedef struct fz_in {
    const uint8_t *p;
    size_t n, i;
} fz_in;

static uint8_t fz_u8(fz_in *in) { return in->i < in->n ? in->p[in->i++] : 0; }

static uint64_t fz_u64(fz_in *in) {
    uint64_t v = 0;
    int i;
    for (i = 0; i < 8; i++) v = (v << 8) | fz_u8(in);
    return v;
}

/* 1..max */
static int64_t fz_small(fz_in *in, int max) { return 1 + fz_u8(in) % max; }

/* A hostile 64-bit value: edge cases, powers of two, raw bits. */
static int64_t fz_hostile(fz_in *in) {
    uint8_t m = fz_u8(in);
    int sh = fz_u8(in) % 64;
    switch (m % 12) {
    case 0: return 0;
    case 1: return -1;
    case 2: return -(int64_t)fz_small(in, 100);
    case 3: return fz_small(in, 16);
    case 4: return (int64_t)((uint64_t)1 << sh);
    case 5: return (int64_t)(((uint64_t)1 << sh) - 1u);
    case 6: return (int64_t)(((uint64_t)1 << sh) + 1u);
    case 7: return INT64_MAX;
    case 8: return INT64_MIN;
    case 9: return INT64_MAX / (int64_t)fz_small(in, 64);
    case 10: return (int64_t)fz_u8(in) * 4096;
    default: return (int64_t)fz_u64(in);
    }
}

static int32_t fz_hostile32(fz_in *in) {
    int64_t v = fz_hostile(in);
    if (v > INT32_MAX) return INT32_MAX;
    if (v < INT32_MIN) return INT32_MIN;
    return (int32_t)v;
}

static float fz_hostile_float(fz_in *in) {
    switch (fz_u8(in) % 8) {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return -INFINITY;
    case 3: return 0.0f;
    case 4: return -0.0f;
    case 5: return 3.4e38f;
    case 6: return 1e-45f;
    default: return (float)((int)fz_u8(in) - 128) / 16.0f;
    }
}

/* ---------------------------------------------------------- one op call */

typedef enum fz_op {
    FZ_CONV2D, FZ_CONVT, FZ_MATMUL, FZ_LINEAR, FZ_GN, FZ_LN, FZ_ATTN, FZ_ACT, FZ_ADD, FZ_UPS,
    FZ_CONVERT, FZ_PREP, FZ_RMS, FZ_CONV3D, FZ_NUM_OPS
} fz_op;

typedef struct fz_call {
    fz_op op;
    dk_context *ctx;
    dk_conv2d_desc conv;
    dk_conv_transpose2d_desc convt;
    dk_conv3d_desc c3;
    int chunk; /* dk_conv3d_chunk (cache in slot 5) */
    dk_matmul_desc mm;
    dk_group_norm_desc gn;
    int gn_mode; /* 0 dk_group_norm, 1 dk_group_norm_stats, 2 dk_group_norm_apply (stats in slot 4) */
    dk_layer_norm_desc ln;
    dk_rms_norm_desc rms;
    dk_attention_desc attn;
    dk_activation act;
    float alpha, beta;
    dk_weight_use use;
    int desc_null;
    dk_tensor t[FZ_SLOTS];
    int present[FZ_SLOTS];
    dk_buffer *bufs[FZ_SLOTS];
    dk_dtype dtype;
    int failed; /* a buffer could not be made: skip the input */
} fz_call;

/* A tensor of slot s with the given shape in a fresh buffer: row-major, or
 * with its last two dims swapped (layout 1), or NHWC / NDHWC (layout 2, 4-D / 5-D),
 * at a small aligned offset, with a little slack after it. */
static void fz_tensor(fz_call *c, fz_in *in, int s, dk_dtype dt, int32_t ndim, const int64_t *shape) {
    int layout = fz_u8(in) % 3;
    uint64_t esize = dk_dtype_size(dt);
    uint64_t offset = esize * (fz_u8(in) % 4);
    uint64_t bytes;
    dk_tensor *t = &c->t[s];
    *t = dk_tensor_contiguous(NULL, 0, dt, ndim, shape);
    if (layout == 1 && ndim >= 2) {
        int64_t a = t->shape[ndim - 1], b = t->shape[ndim - 2];
        t->strides[ndim - 1] = b;
        t->strides[ndim - 2] = 1;
        if (ndim >= 3) t->strides[ndim - 3] = a * b;
    } else if (layout == 2 && ndim == 4) {
        *t = dk_tensor_nhwc(NULL, 0, dt, shape[0], shape[1], shape[2], shape[3]);
    } else if (layout == 2 && ndim == 5) {
        *t = dk_tensor_ndhwc(NULL, 0, dt, shape[0], shape[1], shape[2], shape[3], shape[4]);
    }
    bytes = offset + (uint64_t)dk_tensor_numel(t) * esize + 4u * (fz_u8(in) % 3);
    bytes = (bytes + 3u) & ~(uint64_t)3u; /* whole 32-bit words: the fill covers it all */
    if (bytes > FZ_MAX_BUF || dk_buffer_create(c->ctx, bytes, &c->bufs[s]) != DK_OK) {
        c->failed = 1;
        return;
    }
    /* Values: a repeated pattern from the input (may be NaN/Inf: kernels must cope). */
    dk_buffer_fill(c->ctx, c->bufs[s], 0, bytes, (uint32_t)fz_u64(in));
    t->buffer = c->bufs[s];
    t->offset = offset;
    c->present[s] = 1;
}

static void fz_shape(int64_t *shape, int64_t a, int64_t b, int64_t c, int64_t d) {
    shape[0] = a; shape[1] = b; shape[2] = c; shape[3] = d; shape[4] = 1;
}

/* A 5-D shape: dims 2.. of a 4-D one move up to make room for the frames t. */
static void fz_video(int64_t *shape, int64_t t) {
    shape[4] = shape[3]; shape[3] = shape[2]; shape[2] = t;
}

/* The optional residual (slot 3) shaped sh: absent, its own tensor, or y's own
 * view (slot 4, already made: the in-place residual the epilogue allows). */
static void fz_residual(fz_call *c, fz_in *in, dk_dtype dt, int32_t ndim, const int64_t *sh) {
    switch (fz_u8(in) % 3) {
    case 1: fz_tensor(c, in, 3, dt, ndim, sh); break;
    case 2:
        if (c->present[4]) {
            c->t[3] = c->t[4];
            c->present[3] = 1;
        }
        break;
    default: break;
    }
}

/* The valid call of the op, from small dimensions read off the input. */
static void fz_build(fz_call *c, fz_in *in) {
    int64_t sh[5], g, n, cin, cout, h, w, kh, kw, oh, ow, m, k, nn, bt;
    int32_t nd;
    dk_dtype dt = c->dtype;
    switch (c->op) {
    case FZ_CONV2D:
        dk_conv2d_desc_init(&c->conv);
        g = fz_small(in, 3);
        n = fz_small(in, 2); cin = g * fz_small(in, 4); cout = g * fz_small(in, 4);
        h = 2 + fz_small(in, 6); w = 2 + fz_small(in, 6); kh = fz_small(in, 3); kw = fz_small(in, 3);
        c->conv.groups = (int32_t)g;
        c->conv.stride_h = (int32_t)fz_small(in, 3); c->conv.stride_w = (int32_t)fz_small(in, 3);
        c->conv.pad_h = fz_u8(in) % 3; c->conv.pad_w = fz_u8(in) % 3;
        if (fz_u8(in) & 1) { /* padding per side; pad_h / pad_w then 0 or the top / left */
            c->conv.pad_top = fz_u8(in) % 3; c->conv.pad_bottom = fz_u8(in) % 3;
            c->conv.pad_left = fz_u8(in) % 3; c->conv.pad_right = fz_u8(in) % 3;
            c->conv.pad_h = fz_u8(in) & 1 ? c->conv.pad_top : 0;
            c->conv.pad_w = fz_u8(in) & 1 ? c->conv.pad_left : 0;
        }
        c->conv.dilation_h = (int32_t)fz_small(in, 2); c->conv.dilation_w = (int32_t)fz_small(in, 2);
        c->conv.upsample = (int32_t)fz_small(in, 2);
        c->conv.activation = (dk_activation)(fz_u8(in) % 6);
        c->conv.post_activation = (dk_activation)(fz_u8(in) % 6);
        c->conv.output_scale = (float)fz_small(in, 4) / 2.0f;
        c->conv.residual_scale = (float)fz_small(in, 4) / 4.0f;
        {
            const int64_t pt = c->conv.pad_top >= 0 ? c->conv.pad_top : c->conv.pad_h;
            const int64_t pb = c->conv.pad_top >= 0 ? c->conv.pad_bottom : c->conv.pad_h;
            const int64_t pl = c->conv.pad_top >= 0 ? c->conv.pad_left : c->conv.pad_w;
            const int64_t pr = c->conv.pad_top >= 0 ? c->conv.pad_right : c->conv.pad_w;
            oh = (h * c->conv.upsample + pt + pb - c->conv.dilation_h * (kh - 1) - 1) / c->conv.stride_h + 1;
            ow = (w * c->conv.upsample + pl + pr - c->conv.dilation_w * (kw - 1) - 1) / c->conv.stride_w + 1;
        }
        fz_shape(sh, n, cin, h, w); fz_tensor(c, in, 0, dt, 4, sh);
        fz_shape(sh, cout, cin / g, kh, kw); fz_tensor(c, in, 1, dt, 4, sh);
        if (fz_u8(in) & 1) { fz_shape(sh, cout, 1, 1, 1); fz_tensor(c, in, 2, dt, 1, sh); }
        fz_shape(sh, n, cout, oh, ow);
        fz_tensor(c, in, 4, dt, 4, sh);
        fz_residual(c, in, dt, 4, sh);
        break;
    case FZ_CONVT:
        dk_conv_transpose2d_desc_init(&c->convt);
        g = fz_small(in, 3);
        n = fz_small(in, 2); cin = g * fz_small(in, 4); cout = g * fz_small(in, 4);
        h = fz_small(in, 6); w = fz_small(in, 6); kh = fz_small(in, 3); kw = fz_small(in, 3);
        c->convt.groups = (int32_t)g;
        c->convt.stride_h = (int32_t)fz_small(in, 3); c->convt.stride_w = (int32_t)fz_small(in, 3);
        c->convt.dilation_h = (int32_t)fz_small(in, 2); c->convt.dilation_w = (int32_t)fz_small(in, 2);
        c->convt.output_padding_h = fz_u8(in) % (c->convt.stride_h > c->convt.dilation_h ? c->convt.stride_h : c->convt.dilation_h);
        c->convt.output_padding_w = fz_u8(in) % (c->convt.stride_w > c->convt.dilation_w ? c->convt.stride_w : c->convt.dilation_w);
        c->convt.activation = (dk_activation)(fz_u8(in) % 6);
        c->convt.post_activation = (dk_activation)(fz_u8(in) % 6);
        oh = (h - 1) * c->convt.stride_h + c->convt.dilation_h * (kh - 1) + c->convt.output_padding_h + 1;
        ow = (w - 1) * c->convt.stride_w + c->convt.dilation_w * (kw - 1) + c->convt.output_padding_w + 1;
        c->convt.pad_h = (int32_t)(fz_u8(in) % 2 && oh > 2 ? 1 : 0); oh -= 2 * c->convt.pad_h;
        c->convt.pad_w = (int32_t)(fz_u8(in) % 2 && ow > 2 ? 1 : 0); ow -= 2 * c->convt.pad_w;
        fz_shape(sh, n, cin, h, w); fz_tensor(c, in, 0, dt, 4, sh);
        fz_shape(sh, cin, cout / g, kh, kw); fz_tensor(c, in, 1, dt, 4, sh);
        if (fz_u8(in) & 1) { fz_shape(sh, cout, 1, 1, 1); fz_tensor(c, in, 2, dt, 1, sh); }
        fz_shape(sh, n, cout, oh, ow);
        fz_tensor(c, in, 4, dt, 4, sh);
        fz_residual(c, in, dt, 4, sh);
        break;
    case FZ_CONV3D: {
        int64_t t, kt, ot, tc;
        dk_conv3d_desc *d = &c->c3;
        dk_conv3d_desc_init(d);
        g = fz_small(in, 2);
        n = fz_small(in, 2); cin = g * fz_small(in, 3); cout = g * fz_small(in, 3);
        t = fz_small(in, 4); h = fz_small(in, 5); w = fz_small(in, 5);
        kt = fz_small(in, 3); kh = fz_small(in, 3); kw = fz_small(in, 3);
        d->groups = (int32_t)g;
        d->stride_t = (int32_t)fz_small(in, 2); d->stride_h = (int32_t)fz_small(in, 2); d->stride_w = (int32_t)fz_small(in, 2);
        d->dilation_t = (int32_t)fz_small(in, 2); d->dilation_h = (int32_t)fz_small(in, 2); d->dilation_w = (int32_t)fz_small(in, 2);
        d->pad_front = (int32_t)(fz_u8(in) % 3); d->pad_back = (int32_t)(fz_u8(in) % 2);
        d->pad_top = (int32_t)(fz_u8(in) % 2); d->pad_bottom = (int32_t)(fz_u8(in) % 2);
        d->pad_left = (int32_t)(fz_u8(in) % 2); d->pad_right = (int32_t)(fz_u8(in) % 2);
        d->activation = (dk_activation)(fz_u8(in) % 6);
        d->post_activation = (dk_activation)(fz_u8(in) % 6);
        d->output_scale = (float)fz_small(in, 4) / 2.0f;
        d->residual_scale = (float)fz_small(in, 4) / 4.0f;
        /* a kernel too large for the padded input leaves sizes < 1: an invalid call, also fine */
        ot = (t + d->pad_front + d->pad_back - d->dilation_t * (kt - 1) - 1) / d->stride_t + 1;
        oh = (h + d->pad_top + d->pad_bottom - d->dilation_h * (kh - 1) - 1) / d->stride_h + 1;
        ow = (w + d->pad_left + d->pad_right - d->dilation_w * (kw - 1) - 1) / d->stride_w + 1;
        fz_shape(sh, n, cin, h, w); fz_video(sh, t); fz_tensor(c, in, 0, dt, 5, sh);
        fz_shape(sh, cout, cin / g, kh, kw); fz_video(sh, kt); fz_tensor(c, in, 1, dt, 5, sh);
        if (fz_u8(in) & 1) { fz_shape(sh, cout, 1, 1, 1); fz_tensor(c, in, 2, fz_u8(in) & 1 ? DK_F32 : dt, 1, sh); }
        fz_shape(sh, n, cout, oh < 1 ? 1 : oh, ow < 1 ? 1 : ow); fz_video(sh, ot < 1 ? 1 : ot);
        fz_tensor(c, in, 4, dt, 5, sh);
        fz_residual(c, in, dt, 5, sh);
        tc = fz_u8(in) % (d->pad_front + 1);
        c->chunk = tc > 0 || (fz_u8(in) & 1);
        if (tc > 0) { fz_shape(sh, n, cin, h, w); fz_video(sh, tc); fz_tensor(c, in, 5, dt, 5, sh); }
        break;
    }
    case FZ_MATMUL:
    case FZ_LINEAR:
        dk_matmul_desc_init(&c->mm);
        c->mm.activation = (dk_activation)(fz_u8(in) % 6);
        c->mm.post_activation = (dk_activation)(fz_u8(in) % 6);
        bt = fz_u8(in) % 3; /* 0: none batched, 1: a batched, 2: both (matmul) */
        nd = fz_small(in, 3) == 1 ? 2 : 3;
        m = fz_small(in, 8); k = fz_small(in, 8); nn = fz_small(in, 8); n = fz_small(in, 3);
        if (bt) { fz_shape(sh, n, m, k, 1); fz_tensor(c, in, 0, dt, 3, sh); }
        else { fz_shape(sh, m, k, 1, 1); fz_tensor(c, in, 0, dt, 2, sh); }
        if (c->op == FZ_LINEAR) { fz_shape(sh, nn, k, 1, 1); fz_tensor(c, in, 1, dt, 2, sh); }
        else if (bt == 2 || (!bt && nd == 3)) { fz_shape(sh, n, k, nn, 1); fz_tensor(c, in, 1, dt, 3, sh); bt = 1; }
        else { fz_shape(sh, k, nn, 1, 1); fz_tensor(c, in, 1, dt, 2, sh); }
        if (fz_u8(in) & 1) { fz_shape(sh, nn, 1, 1, 1); fz_tensor(c, in, 2, dt, 1, sh); }
        if (bt) fz_shape(sh, n, m, nn, 1); else fz_shape(sh, m, nn, 1, 1);
        fz_tensor(c, in, 4, dt, bt ? 3 : 2, sh);
        fz_residual(c, in, dt, bt ? 3 : 2, sh);
        break;
    case FZ_GN:
        dk_group_norm_desc_init(&c->gn);
        g = fz_small(in, 4);
        c->gn.groups = (int32_t)g;
        c->gn.activation = (dk_activation)(fz_u8(in) % 6);
        fz_shape(sh, fz_small(in, 2), g * fz_small(in, 3), fz_small(in, 6), fz_small(in, 6));
        nd = fz_u8(in) % 3 == 0 ? 5 : 4; /* a video [N, C, T, H, W] */
        if (nd == 5) fz_video(sh, fz_small(in, 3));
        fz_tensor(c, in, 0, dt, nd, sh);
        if (fz_u8(in) & 1) {
            int64_t cs[5];
            fz_shape(cs, sh[1], 1, 1, 1);
            fz_tensor(c, in, 1, dt, 1, cs);
            fz_tensor(c, in, 2, dt, 1, cs);
        }
        if (fz_u8(in) % 3 == 0) { c->t[3] = c->t[0]; c->present[3] = 1; } /* in place */
        else fz_tensor(c, in, 3, dt, nd, sh);
        c->gn_mode = fz_u8(in) % 3;
        if (c->gn_mode) {
            int64_t ss[5];
            fz_shape(ss, sh[0], g, 2, 1);
            fz_tensor(c, in, 4, DK_F32, 3, ss);
        }
        break;
    case FZ_LN:
        dk_layer_norm_desc_init(&c->ln);
        c->ln.activation = (dk_activation)(fz_u8(in) % 6);
        nd = (int32_t)fz_small(in, 5);
        fz_shape(sh, fz_small(in, 4), fz_small(in, 4), fz_small(in, 4), fz_small(in, 4));
        if (nd == 5) fz_video(sh, fz_small(in, 3));
        fz_tensor(c, in, 0, dt, nd, sh);
        {
            int64_t ds[5];
            fz_shape(ds, sh[nd - 1], 1, 1, 1);
            if (fz_u8(in) & 1) fz_tensor(c, in, 1, dt, 1, ds);
            if (fz_u8(in) & 1) fz_tensor(c, in, 2, dt, 1, ds);
        }
        if (fz_u8(in) % 3 == 0) { c->t[3] = c->t[0]; c->present[3] = 1; }
        else fz_tensor(c, in, 3, dt, nd, sh);
        break;
    case FZ_RMS: /* [N, C, ...] of 2-5 dims, gamma / beta [C] (x's dtype or f32) */
        dk_rms_norm_desc_init(&c->rms);
        c->rms.form = (dk_rms_norm_form)(fz_u8(in) % 2);
        c->rms.activation = (dk_activation)(fz_u8(in) % 6);
        nd = 2 + (int32_t)(fz_u8(in) % 4);
        fz_shape(sh, fz_small(in, 3), fz_small(in, 8), fz_small(in, 4), fz_small(in, 4));
        if (nd == 5) fz_video(sh, fz_small(in, 3));
        fz_tensor(c, in, 0, dt, nd, sh);
        {
            int64_t cs[5];
            dk_dtype at = fz_u8(in) & 1 ? DK_F32 : dt;
            fz_shape(cs, sh[1], 1, 1, 1);
            if (fz_u8(in) & 1) fz_tensor(c, in, 1, at, 1, cs);
            if (fz_u8(in) & 1) fz_tensor(c, in, 2, at, 1, cs);
        }
        if (fz_u8(in) % 3 == 0) { c->t[3] = c->t[0]; c->present[3] = 1; }
        else fz_tensor(c, in, 3, dt, nd, sh);
        break;
    case FZ_ATTN:
        dk_attention_desc_init(&c->attn);
        if (fz_u8(in) & 1) c->attn.scale = (float)fz_small(in, 8) / 8.0f;
        n = fz_small(in, 2); h = fz_small(in, 2); m = fz_small(in, 8); nn = fz_small(in, 8);
        k = fz_small(in, 16); w = fz_small(in, 16);
        nd = fz_u8(in) % 3 == 0 ? 5 : 4; /* two batch dims [n, b2, h, N, D] */
        bt = fz_small(in, 3);
        fz_shape(sh, n, h, m, k); if (nd == 5) fz_video(sh, h), sh[1] = bt; fz_tensor(c, in, 0, dt, nd, sh);
        fz_shape(sh, n, h, nn, k); if (nd == 5) fz_video(sh, h), sh[1] = bt; fz_tensor(c, in, 1, dt, nd, sh);
        fz_shape(sh, n, h, nn, w); if (nd == 5) fz_video(sh, h), sh[1] = bt; fz_tensor(c, in, 2, dt, nd, sh);
        fz_shape(sh, n, h, m, w); if (nd == 5) fz_video(sh, h), sh[1] = bt; fz_tensor(c, in, 3, dt, nd, sh);
        break;
    case FZ_ACT:
    case FZ_ADD:
    case FZ_CONVERT:
        c->act = (dk_activation)(fz_u8(in) % 6);
        c->alpha = (float)fz_small(in, 4) / 2.0f;
        c->beta = -(float)fz_small(in, 4) / 2.0f;
        nd = (int32_t)fz_small(in, 5);
        fz_shape(sh, fz_small(in, 5), fz_small(in, 5), fz_small(in, 5), fz_small(in, 5));
        if (nd == 5) fz_video(sh, fz_small(in, 3));
        fz_tensor(c, in, 0, dt, nd, sh);
        if (c->op == FZ_ADD) fz_tensor(c, in, 1, dt, nd, sh);
        if (c->op == FZ_CONVERT) {
            fz_tensor(c, in, 1, (dk_dtype)fz_small(in, 3), nd, sh);
        } else {
            int last = c->op == FZ_ADD ? 2 : 1, mode = fz_u8(in) % 4;
            if (mode < 2 && c->present[mode]) { c->t[last] = c->t[mode]; c->present[last] = 1; } /* in place */
            else fz_tensor(c, in, last, dt, nd, sh);
        }
        break;
    case FZ_UPS:
        fz_shape(sh, fz_small(in, 2), fz_small(in, 4), fz_small(in, 6), fz_small(in, 6));
        nd = fz_u8(in) % 3 == 0 ? 5 : 4;
        if (nd == 5) fz_video(sh, fz_small(in, 3));
        fz_tensor(c, in, 0, dt, nd, sh);
        if (nd == 5) sh[2] = fz_small(in, 6);
        sh[nd - 2] = fz_small(in, 16); sh[nd - 1] = fz_small(in, 16);
        fz_tensor(c, in, 1, dt, nd, sh);
        break;
    case FZ_PREP:
        c->use = (dk_weight_use)fz_small(in, 3);
        fz_shape(sh, fz_small(in, 6), fz_small(in, 6), fz_small(in, 3), fz_small(in, 3));
        fz_tensor(c, in, 0, dt, c->use == DK_WEIGHT_MATMUL_B ? 2 : 4, sh);
        break;
    case FZ_NUM_OPS:
        break;
    }
}

/* One hostile change to a descriptor field or a tensor view. */
static void fz_mutate(fz_call *c, fz_in *in) {
    int s = fz_u8(in) % (FZ_SLOTS + 1);
    int f = fz_u8(in);
    if (s == FZ_SLOTS) { /* descriptor / scalar arguments */
        int32_t *ints = NULL;
        float *floats = NULL;
        int ni = 0, nf = 0;
        switch (c->op) {
        case FZ_CONV2D: ints = &c->conv.stride_h; ni = 12; floats = &c->conv.output_scale; nf = 2; break;
        case FZ_CONVT: ints = &c->convt.stride_h; ni = 9; floats = &c->convt.output_scale; nf = 2; break;
        case FZ_CONV3D: ints = &c->c3.stride_t; ni = 13; floats = &c->c3.output_scale; nf = 2; break;
        case FZ_MATMUL: case FZ_LINEAR: floats = &c->mm.output_scale; nf = 2; break;
        case FZ_GN: ints = &c->gn.groups; ni = 1; floats = &c->gn.eps; nf = 1; break;
        case FZ_LN: floats = &c->ln.eps; nf = 1; break;
        case FZ_RMS: floats = &c->rms.eps; nf = 1; break;
        case FZ_ATTN: floats = &c->attn.scale; nf = 1; break;
        default: break;
        }
        switch (f % 8) {
        case 0: c->desc_null = 1; break;
        case 1: /* the activation of the op or its descriptor */
            switch (c->op) {
            case FZ_CONV2D:
                *(fz_u8(in) & 1 ? &c->conv.post_activation : &c->conv.activation) = (dk_activation)fz_hostile32(in);
                break;
            case FZ_CONVT:
                *(fz_u8(in) & 1 ? &c->convt.post_activation : &c->convt.activation) = (dk_activation)fz_hostile32(in);
                break;
            case FZ_CONV3D:
                *(fz_u8(in) & 1 ? &c->c3.post_activation : &c->c3.activation) = (dk_activation)fz_hostile32(in);
                break;
            case FZ_MATMUL: case FZ_LINEAR:
                *(fz_u8(in) & 1 ? &c->mm.post_activation : &c->mm.activation) = (dk_activation)fz_hostile32(in);
                break;
            case FZ_GN: c->gn.activation = (dk_activation)fz_hostile32(in); break;
            case FZ_LN: c->ln.activation = (dk_activation)fz_hostile32(in); break;
            case FZ_RMS: /* the activation or the form */
                if (fz_u8(in) & 1) c->rms.form = (dk_rms_norm_form)fz_hostile32(in);
                else c->rms.activation = (dk_activation)fz_hostile32(in);
                break;
            default: c->act = (dk_activation)fz_hostile32(in); break;
            }
            break;
        case 2: c->alpha = fz_hostile_float(in); break;
        case 3: c->beta = fz_hostile_float(in); break;
        case 4: c->use = (dk_weight_use)fz_hostile32(in); break;
        case 5: case 6: /* an int32 field of the descriptor (the fields are consecutive int32_t) */
            if (ni) {
                int i = fz_u8(in) % ni;
                if (c->op == FZ_CONV2D) {
                    int32_t *fields[12] = {&c->conv.stride_h, &c->conv.stride_w, &c->conv.pad_h, &c->conv.pad_w,
                                           &c->conv.dilation_h, &c->conv.dilation_w, &c->conv.groups,
                                           &c->conv.upsample, &c->conv.pad_top, &c->conv.pad_bottom,
                                           &c->conv.pad_left, &c->conv.pad_right};
                    /* the per-side pads also get small values: -1, 0..2 (mixed set / unset) */
                    *fields[i] = i >= 8 && (fz_u8(in) & 1) ? (int32_t)(fz_u8(in) % 4) - 1 : fz_hostile32(in);
                } else if (c->op == FZ_CONV3D) {
                    int32_t *fields[13] = {&c->c3.stride_t, &c->c3.stride_h, &c->c3.stride_w, &c->c3.dilation_t,
                                           &c->c3.dilation_h, &c->c3.dilation_w, &c->c3.pad_front, &c->c3.pad_back,
                                           &c->c3.pad_top, &c->c3.pad_bottom, &c->c3.pad_left, &c->c3.pad_right,
                                           &c->c3.groups};
                    /* the pads also get small values (a cache longer than pad_front) */
                    *fields[i] = i >= 6 && i < 12 && (fz_u8(in) & 1) ? (int32_t)(fz_u8(in) % 4) - 1 : fz_hostile32(in);
                } else if (c->op == FZ_CONVT) {
                    int32_t *fields[9] = {&c->convt.stride_h, &c->convt.stride_w, &c->convt.pad_h,
                                          &c->convt.pad_w, &c->convt.output_padding_h, &c->convt.output_padding_w,
                                          &c->convt.dilation_h, &c->convt.dilation_w, &c->convt.groups};
                    *fields[i] = fz_hostile32(in);
                } else {
                    *ints = fz_hostile32(in);
                }
            }
            break;
        default:
            if (nf) {
                int i = fz_u8(in) % nf;
                if (c->op == FZ_CONV2D) *(i ? &c->conv.residual_scale : &c->conv.output_scale) = fz_hostile_float(in);
                else if (c->op == FZ_CONVT) *(i ? &c->convt.residual_scale : &c->convt.output_scale) = fz_hostile_float(in);
                else if (c->op == FZ_CONV3D) *(i ? &c->c3.residual_scale : &c->c3.output_scale) = fz_hostile_float(in);
                else if (c->op == FZ_MATMUL || c->op == FZ_LINEAR) *(i ? &c->mm.residual_scale : &c->mm.output_scale) = fz_hostile_float(in);
                else *floats = fz_hostile_float(in);
            }
            break;
        }
        return;
    }
    {
        dk_tensor *t = &c->t[s];
        int d = fz_u8(in) % DK_MAX_DIMS;
        int other = fz_u8(in) % FZ_SLOTS;
        switch (f % 11) {
        case 0: c->present[s] = !c->present[s]; break;
        case 1: t->buffer = fz_u8(in) & 1 ? NULL : c->t[other].buffer; break;
        case 2: t->offset = (uint64_t)fz_hostile(in); break;
        case 3: t->offset += (uint64_t)(fz_u8(in) % 64); break;
        case 4: t->dtype = (dk_dtype)fz_hostile32(in); break;
        case 5: t->ndim = fz_u8(in) & 1 ? (int32_t)(fz_u8(in) % 7) - 1 : fz_hostile32(in); break;
        case 6: case 7: t->shape[d] = fz_hostile(in); break;
        case 8: t->strides[d] = fz_hostile(in); break;
        case 9: { /* the stride of a size-1 dim (never used: any value is valid), from d on */
            int k;
            for (k = 0; k < DK_MAX_DIMS; k++)
                if (t->shape[(d + k) % DK_MAX_DIMS] == 1) break;
            t->strides[(d + k) % DK_MAX_DIMS] = fz_hostile(in);
            break;
        }
        default: /* the same view as another slot: aliasing, in place */
            if (c->present[other]) { *t = c->t[other]; c->present[s] = 1; }
            break;
        }
    }
}

/* ------------------------------------------------------- the work bound */

/* Saturating product of non-negative factors, capped just above FZ_MAX_WORK. */
static uint64_t fz_mul(uint64_t a, int64_t b) {
    uint64_t ub = b < 1 ? 1 : (uint64_t)b;
    if (a == 0) return 0;
    if (ub > (FZ_MAX_WORK + 1) / a + 1) return FZ_MAX_WORK + 1;
    a *= ub;
    return a > FZ_MAX_WORK ? FZ_MAX_WORK + 1 : a;
}

static uint64_t fz_numel(const dk_tensor *t) {
    uint64_t n = 1;
    int32_t i, nd = t->ndim < 0 ? 0 : t->ndim > DK_MAX_DIMS ? DK_MAX_DIMS : t->ndim;
    for (i = 0; i < nd; i++) n = fz_mul(n, t->shape[i]);
    return n;
}

/* The last dim's size (ndim may be hostile). */
static int64_t fz_last_dim(const dk_tensor *t) {
    return t->ndim >= 1 && t->ndim <= DK_MAX_DIMS ? t->shape[t->ndim - 1] : 1;
}

/* An upper bound of the elements touched and multiply-adds done if the call is valid. */
static uint64_t fz_work(const fz_call *c) {
    uint64_t w = 0, x;
    int s;
    for (s = 0; s < FZ_SLOTS; s++)
        if (c->present[s]) {
            w += fz_numel(&c->t[s]);
            if (w > FZ_MAX_WORK) return FZ_MAX_WORK + 1;
        }
    switch (c->op) {
    case FZ_CONV2D:
        x = fz_mul(fz_mul(fz_mul(fz_numel(&c->t[4]), c->t[0].shape[1]), c->t[1].shape[2]), c->t[1].shape[3]);
        x = fz_mul(x, c->conv.upsample); /* a kernel may materialize the upsampled input */
        break;
    case FZ_CONVT:
        x = fz_mul(fz_mul(fz_mul(fz_numel(&c->t[4]), c->t[0].shape[1]), c->t[1].shape[2]), c->t[1].shape[3]);
        x += fz_mul(fz_mul(fz_mul(fz_numel(&c->t[0]), c->t[1].shape[1]), c->t[1].shape[2]), c->t[1].shape[3]);
        break;
    case FZ_CONV3D: /* the GEMM, and the staged frames (every output frame's KT input frames) */
        x = fz_mul(fz_mul(fz_mul(fz_mul(fz_numel(&c->t[4]), c->t[0].shape[1]), c->t[1].shape[2]), c->t[1].shape[3]),
                   c->t[1].shape[4]);
        x += fz_mul(fz_mul(fz_mul(fz_mul(fz_mul(c->t[4].shape[2], c->t[0].shape[3]), c->t[0].shape[4]),
                                  c->t[0].shape[1]), c->t[1].shape[2]), c->t[0].shape[0]);
        break;
    case FZ_MATMUL:
        x = fz_mul(fz_numel(&c->t[4]), fz_last_dim(&c->t[0]));
        break;
    case FZ_LINEAR:
        x = fz_mul(fz_numel(&c->t[4]), c->t[1].shape[1]);
        break;
    case FZ_ATTN: { /* keys: k's second-to-last dim (4-D or 5-D) */
        int64_t keys = c->t[1].ndim >= 2 && c->t[1].ndim <= DK_MAX_DIMS ? c->t[1].shape[c->t[1].ndim - 2] : 1;
        x = fz_mul(fz_mul(fz_numel(&c->t[0]), keys), 2);
        x += fz_mul(fz_mul(fz_numel(&c->t[3]), keys), 2);
        break;
    }
    default: x = 0; break;
    }
    return w + x;
}

/* --------------------------------------------------------------- running */

static const dk_tensor *fz_arg(const fz_call *c, int s) { return c->present[s] ? &c->t[s] : NULL; }

/* The public op (it validates, then runs). */
static dk_status fz_run(fz_call *c) {
    dk_context *ctx = c->ctx;
    const dk_tensor *a0 = fz_arg(c, 0), *a1 = fz_arg(c, 1), *a2 = fz_arg(c, 2), *a3 = fz_arg(c, 3),
                    *a4 = fz_arg(c, 4), *a5 = fz_arg(c, 5);
    switch (c->op) {
    case FZ_CONV3D:
        if (c->chunk) return dk_conv3d_chunk(ctx, c->desc_null ? NULL : &c->c3, a5, a0, a1, a2, a3, a4);
        return dk_conv3d(ctx, c->desc_null ? NULL : &c->c3, a0, a1, a2, a3, a4);
    case FZ_CONV2D: return dk_conv2d(ctx, c->desc_null ? NULL : &c->conv, a0, a1, a2, a3, a4);
    case FZ_CONVT: return dk_conv_transpose2d(ctx, c->desc_null ? NULL : &c->convt, a0, a1, a2, a3, a4);
    case FZ_MATMUL: return dk_matmul(ctx, c->desc_null ? NULL : &c->mm, a0, a1, a2, a3, a4);
    case FZ_LINEAR: return dk_linear(ctx, c->desc_null ? NULL : &c->mm, a0, a1, a2, a3, a4);
    case FZ_GN:
        if (c->gn_mode == 1) return dk_group_norm_stats(ctx, c->desc_null ? NULL : &c->gn, a0, a4);
        if (c->gn_mode == 2) return dk_group_norm_apply(ctx, c->desc_null ? NULL : &c->gn, a0, a4, a1, a2, a3);
        return dk_group_norm(ctx, c->desc_null ? NULL : &c->gn, a0, a1, a2, a3);
    case FZ_LN: return dk_layer_norm(ctx, c->desc_null ? NULL : &c->ln, a0, a1, a2, a3);
    case FZ_RMS: return dk_rms_norm(ctx, c->desc_null ? NULL : &c->rms, a0, a1, a2, a3);
    case FZ_ATTN: return dk_attention(ctx, c->desc_null ? NULL : &c->attn, a0, a1, a2, a3);
    case FZ_ACT: /* the scaled form (alpha, beta as the scales) covers the plain one's checks too */
        return dk_activation_scaled(ctx, c->alpha, c->act, c->beta, a0, a1);
    case FZ_ADD: return dk_add(ctx, c->alpha, a0, c->beta, a1, c->act, a2);
    case FZ_UPS: return dk_upsample_nearest(ctx, a0, a1);
    case FZ_CONVERT: return dk_convert(ctx, a0, a1);
    case FZ_PREP: return dk_prepare_weight(ctx, c->use, a0);
    case FZ_NUM_OPS: break;
    }
    return DK_ERR_INTERNAL;
}

/* Validation alone, for calls too big to run. */
static dk_status fz_validate_only(fz_call *c) {
    dk_context *ctx = c->ctx;
    const dk_tensor *a0 = fz_arg(c, 0), *a1 = fz_arg(c, 1), *a2 = fz_arg(c, 2), *a3 = fz_arg(c, 3),
                    *a4 = fz_arg(c, 4), *a5 = fz_arg(c, 5);
    switch (c->op) {
    case FZ_CONV3D:
        return dk__validate_conv3d(ctx, c->chunk ? "dk_conv3d_chunk" : "dk_conv3d", c->desc_null ? NULL : &c->c3,
                                   c->chunk ? a5 : NULL, a0, a1, a2, a3, a4);
    case FZ_CONV2D: return dk__validate_conv2d(ctx, c->desc_null ? NULL : &c->conv, a0, a1, a2, a3, a4, NULL);
    case FZ_CONVT: return dk__validate_conv_transpose2d(ctx, c->desc_null ? NULL : &c->convt, a0, a1, a2, a3, a4);
    case FZ_MATMUL: return dk__validate_matmul(ctx, "dk_matmul", c->desc_null ? NULL : &c->mm, a0, a1, a2, a3, a4);
    case FZ_LINEAR:
        if (a1 && a1->ndim == 2) { /* what dk_linear does: weight [N, K] seen as [K, N] */
            dk_tensor wt = *a1;
            wt.shape[0] = a1->shape[1]; wt.shape[1] = a1->shape[0];
            wt.strides[0] = a1->strides[1]; wt.strides[1] = a1->strides[0];
            return dk__validate_matmul(ctx, "dk_linear", c->desc_null ? NULL : &c->mm, a0, &wt, a2, a3, a4);
        }
        return fz_run(c); /* dk_linear rejects it before validation */
    case FZ_GN: {
        static const char *const names[3] = {"dk_group_norm", "dk_group_norm_stats", "dk_group_norm_apply"};
        return dk__validate_group_norm(ctx, names[c->gn_mode], c->gn_mode, c->desc_null ? NULL : &c->gn, a0,
                                       c->gn_mode ? a4 : NULL, c->gn_mode == 1 ? NULL : a1, c->gn_mode == 1 ? NULL : a2,
                                       c->gn_mode == 1 ? NULL : a3);
    }
    case FZ_LN: return dk__validate_layer_norm(ctx, c->desc_null ? NULL : &c->ln, a0, a1, a2, a3);
    case FZ_RMS: return dk__validate_rms_norm(ctx, c->desc_null ? NULL : &c->rms, a0, a1, a2, a3);
    case FZ_ATTN: return dk__validate_attention(ctx, c->desc_null ? NULL : &c->attn, a0, a1, a2, a3);
    case FZ_ACT: return dk__validate_activation(ctx, "dk_activation_scaled", c->alpha, c->act, c->beta, a0, a1);
    case FZ_ADD: return dk__validate_add(ctx, c->alpha, a0, c->beta, a1, c->act, a2);
    case FZ_UPS: return dk__validate_upsample_nearest(ctx, a0, a1);
    case FZ_CONVERT: return dk__validate_convert(ctx, a0, a1);
    case FZ_PREP: return dk__validate_prepare_weight(ctx, c->use, a0);
    case FZ_NUM_OPS: break;
    }
    return DK_ERR_INTERNAL;
}

static dk_context *fz_context(void) {
    static dk_context *ctx = NULL;
    if (!ctx) {
        dk_context_options o;
        dk_context_options_init(&o);
        o.backend = DK_BACKEND_CPU;
        o.num_threads = 1;
        if (dk_context_create(&o, &ctx) != DK_OK) ctx = NULL;
    }
    return ctx;
}

/* Every failure must come with a message (a finding otherwise). */
static void fz_check_message(dk_context *ctx, dk_status st) {
    if (st != DK_OK && dk_last_error(ctx)[0] == '\0') abort();
}

/* A rejected call must not have written any buffer: compare with a snapshot. */
static unsigned char *fz_snapshot(fz_call *c, int s) {
    uint64_t n = c->bufs[s] ? dk_buffer_size(c->bufs[s]) : 0;
    unsigned char *copy = n ? (unsigned char *)malloc((size_t)n) : NULL;
    if (copy && dk_buffer_download(c->ctx, c->bufs[s], 0, copy, n) != DK_OK) {
        free(copy);
        copy = NULL;
    }
    return copy;
}

static void fz_check_unchanged(fz_call *c, int s, const unsigned char *copy) {
    uint64_t n = dk_buffer_size(c->bufs[s]);
    unsigned char *now = (unsigned char *)malloc((size_t)n);
    if (now && dk_buffer_download(c->ctx, c->bufs[s], 0, now, n) == DK_OK && memcmp(now, copy, (size_t)n))
        abort(); /* a finding: a rejected call wrote memory */
    free(now);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_in in;
    fz_call c;
    int i, nmut;
    dk_status st;
    in.p = data; in.n = size; in.i = 0;
    memset(&c, 0, sizeof c);
    c.ctx = fz_context();
    if (!c.ctx) return 0;
    c.op = (fz_op)(fz_u8(&in) % FZ_NUM_OPS);
    c.dtype = (dk_dtype)fz_small(&in, 3);
    fz_build(&c, &in);
    if (!c.failed) {
        nmut = fz_u8(&in) % 8;
        for (i = 0; i < nmut; i++) fz_mutate(&c, &in);
        if (fz_work(&c) <= FZ_MAX_WORK) {
            unsigned char *snap[FZ_SLOTS];
            for (i = 0; i < FZ_SLOTS; i++) snap[i] = fz_snapshot(&c, i);
            st = fz_run(&c);
            for (i = 0; i < FZ_SLOTS; i++) {
                if (snap[i] && st == DK_ERR_INVALID_ARGUMENT) fz_check_unchanged(&c, i, snap[i]);
                free(snap[i]);
            }
        } else {
            st = fz_validate_only(&c);
        }
        fz_check_message(c.ctx, st);
        if (st == DK_OK) (void)dk_sync(c.ctx);
    }
    for (i = 0; i < FZ_SLOTS; i++) dk_buffer_destroy(c.ctx, c.bufs[i]);
    return 0;
}

#undef FZ_SLOTS
#undef FZ_MAX_WORK
#undef FZ_MAX_BUF
