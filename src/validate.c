/* Argument validation for every public op (see validate.h).
 *
 * Order inside each op: required pointers, descriptor values, each tensor on its
 * own (well-formed, inside its buffer), ranks, dtypes, the op's shape rules, and
 * last the aliasing rules.  All size arithmetic is 64-bit and overflow-checked
 * before it is done, so hostile shapes/strides/offsets cannot cause UB here or
 * in a backend that trusts these checks.
 */
#include "validate.h"

#include <math.h>
#include <stdio.h>

#define VAL_BAD DK_ERR_INVALID_ARGUMENT
#define VAL_TRY(expr)                               \
    do {                                            \
        dk_status val_st_ = (expr);                 \
        if (val_st_ != DK_OK) return val_st_;       \
    } while (0)
#define VAL_MAX_HEAD_DIM 512

/* ------------------------------------------------------ checked arithmetic */

/* a * b for a, b >= 0; 0 on overflow. */
static int val_mul(int64_t a, int64_t b, int64_t *r) {
    if (a < 0 || b < 0) return 0;
    if (a != 0 && b > INT64_MAX / a) return 0;
    *r = a * b;
    return 1;
}

/* a + b for a, b >= 0; 0 on overflow. */
static int val_add(int64_t a, int64_t b, int64_t *r) {
    if (a < 0 || b < 0) return 0;
    if (b > INT64_MAX - a) return 0;
    *r = a + b;
    return 1;
}

/* --------------------------------------------------------------- formatting */

static const char *val_shape_str(const dk_tensor *t, char *buf, size_t cap) {
    size_t used = 0;
    int32_t i;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, cap, "[");
    for (i = 0; i < t->ndim && i < DK_MAX_DIMS && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    if (used < cap) snprintf(buf + used, cap - used, "]");
    return buf;
}

/* ------------------------------------------------------------ simple rules */

static dk_status val_need(dk_context *ctx, const char *op, const char *name, const void *p) {
    if (!p) return dk__fail(ctx, VAL_BAD, "%s: %s must not be NULL", op, name);
    return DK_OK;
}

static dk_status val_min(dk_context *ctx, const char *op, const char *name, int32_t v, int32_t min) {
    if (v < min) return dk__fail(ctx, VAL_BAD, "%s: %s (=%d) must be >= %d", op, name, (int)v, (int)min);
    return DK_OK;
}

static dk_status val_finite(dk_context *ctx, const char *op, const char *name, float v) {
    if (!isfinite(v)) return dk__fail(ctx, VAL_BAD, "%s: %s (=%g) must be finite", op, name, (double)v);
    return DK_OK;
}

static dk_status val_eps(dk_context *ctx, const char *op, float eps) {
    if (!isfinite(eps) || !(eps > 0.0f))
        return dk__fail(ctx, VAL_BAD, "%s: desc->eps (=%g) must be finite and > 0", op, (double)eps);
    return DK_OK;
}

static dk_status val_act(dk_context *ctx, const char *op, const char *name, dk_activation a) {
    if ((int)a < (int)DK_ACT_NONE || (int)a > (int)DK_ACT_TANH)
        return dk__fail(ctx, VAL_BAD, "%s: %s (=%d) must be a dk_activation (%d..%d)", op, name, (int)a,
                        (int)DK_ACT_NONE, (int)DK_ACT_TANH);
    return DK_OK;
}

static dk_status val_ndim(dk_context *ctx, const char *op, const char *name, const dk_tensor *t,
                          int32_t ndim, const char *layout) {
    if (t->ndim != ndim)
        return dk__fail(ctx, VAL_BAD, "%s: %s.ndim (=%d) must be %d (%s)", op, name, (int)t->ndim, (int)ndim,
                        layout);
    return DK_OK;
}

/* An image [N, C, H, W] or a video [N, C, T, H, W]. */
static dk_status val_ndim45(dk_context *ctx, const char *op, const char *name, const dk_tensor *t,
                            const char *layout4, const char *layout5) {
    if (t->ndim != 4 && t->ndim != 5)
        return dk__fail(ctx, VAL_BAD, "%s: %s.ndim (=%d) must be 4 (%s) or 5 (%s)", op, name, (int)t->ndim, layout4,
                        layout5);
    return DK_OK;
}

static dk_status val_dim(dk_context *ctx, const char *op, const char *name, const dk_tensor *t, int dim,
                         const char *what, int64_t expected) {
    if (t->shape[dim] != expected)
        return dk__fail(ctx, VAL_BAD, "%s: %s.shape[%d] (=%lld) must equal %s (=%lld)", op, name, dim,
                        (long long)t->shape[dim], what, (long long)expected);
    return DK_OK;
}

static dk_status val_same_dtype(dk_context *ctx, const char *op, const char *name, const dk_tensor *t,
                                const char *ref_name, const dk_tensor *ref) {
    if (t && t->dtype != ref->dtype)
        return dk__fail(ctx, VAL_BAD, "%s: %s.dtype (=%s) must equal %s.dtype (=%s)", op, name,
                        dk_dtype_name(t->dtype), ref_name, dk_dtype_name(ref->dtype));
    return DK_OK;
}

static dk_status val_same_shape(dk_context *ctx, const char *op, const char *name, const dk_tensor *t,
                                const char *ref_name, const dk_tensor *ref) {
    char a[128], b[128];
    int32_t i;
    int same = t->ndim == ref->ndim;
    for (i = 0; same && i < t->ndim; i++) same = t->shape[i] == ref->shape[i];
    if (!same)
        return dk__fail(ctx, VAL_BAD, "%s: %s.shape (=%s) must equal %s.shape (=%s)", op, name,
                        val_shape_str(t, a, sizeof a), ref_name, val_shape_str(ref, b, sizeof b));
    return DK_OK;
}

/* ------------------------------------------------------------ one tensor */

dk_status dk__validate_tensor(dk_context *ctx, const char *op, const char *name, const dk_tensor *t) {
    int64_t numel = 1, last = 0, esize, bytes;
    uint64_t end;
    int32_t i;
    VAL_TRY(val_need(ctx, op, name, t));
    if (!t->buffer) return dk__fail(ctx, VAL_BAD, "%s: %s.buffer must not be NULL", op, name);
    if (t->buffer->owner != ctx) {
        char what[64];
        snprintf(what, sizeof what, "%s.buffer", name);
        return dk__check_owner(ctx, op, what, t->buffer);
    }
    if (t->dtype != DK_F32 && t->dtype != DK_F16 && t->dtype != DK_BF16)
        return dk__fail(ctx, VAL_BAD, "%s: %s.dtype (=%d) must be DK_F32, DK_F16 or DK_BF16", op, name,
                        (int)t->dtype);
    if (t->ndim < 1 || t->ndim > DK_MAX_DIMS)
        return dk__fail(ctx, VAL_BAD, "%s: %s.ndim (=%d) must be in 1..%d%s", op, name, (int)t->ndim, DK_MAX_DIMS,
                        t->ndim == 0 ? " (dk_tensor_nchw/nhwc/contiguous give ndim 0 for a size < 1, a NULL shape "
                                       "or an element count beyond int64)"
                                     : "");
    for (i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 1)
            return dk__fail(ctx, VAL_BAD, "%s: %s.shape[%d] (=%lld) must be >= 1", op, name, (int)i,
                            (long long)t->shape[i]);
        if (t->strides[i] < 0)
            return dk__fail(ctx, VAL_BAD, "%s: %s.strides[%d] (=%lld) must be >= 0", op, name, (int)i,
                            (long long)t->strides[i]);
    }
    for (i = 0; i < t->ndim; i++) {
        int64_t span;
        if (!val_mul(numel, t->shape[i], &numel))
            return dk__fail(ctx, VAL_BAD, "%s: %s's element count overflows 64 bits (shape[%d] = %lld)", op,
                            name, (int)i, (long long)t->shape[i]);
        if (!val_mul(t->shape[i] - 1, t->strides[i], &span) || !val_add(last, span, &last))
            return dk__fail(ctx, VAL_BAD,
                            "%s: %s's last element index overflows 64 bits (shape[%d] = %lld, strides[%d] = %lld)",
                            op, name, (int)i, (long long)t->shape[i], (int)i, (long long)t->strides[i]);
    }
    esize = (int64_t)dk_dtype_size(t->dtype);
    if (t->offset % (uint64_t)esize)
        return dk__fail(ctx, VAL_BAD, "%s: %s.offset (=%llu) must be a multiple of the %s size (=%d bytes)", op,
                        name, (unsigned long long)t->offset, dk_dtype_name(t->dtype), (int)esize);
    if (!val_add(last, 1, &bytes) || !val_mul(bytes, esize, &bytes) ||
        t->offset > UINT64_MAX - (uint64_t)bytes)
        return dk__fail(ctx, VAL_BAD, "%s: %s's byte extent overflows 64 bits (offset %llu, last index %lld)", op,
                        name, (unsigned long long)t->offset, (long long)last);
    end = t->offset + (uint64_t)bytes;
    if (end > t->buffer->size)
        return dk__fail(ctx, VAL_BAD,
                        "%s: %s's view ends at byte %llu (offset %llu + %lld bytes), beyond its buffer's size (=%llu)",
                        op, name, (unsigned long long)end, (unsigned long long)t->offset, (long long)bytes,
                        (unsigned long long)t->buffer->size);
    return DK_OK;
}

/* Optional tensor: NULL is fine. */
static dk_status val_opt_tensor(dk_context *ctx, const char *op, const char *name, const dk_tensor *t) {
    return t ? dk__validate_tensor(ctx, op, name, t) : DK_OK;
}

/* ------------------------------------------------------------------ aliasing */

/* First and last byte of a validated view. */
static void val_range(const dk_tensor *t, uint64_t *first, uint64_t *last) {
    uint64_t idx = 0;
    int32_t i;
    for (i = 0; i < t->ndim; i++) idx += (uint64_t)(t->shape[i] - 1) * (uint64_t)t->strides[i];
    *first = t->offset;
    *last = t->offset + (idx + 1) * dk_dtype_size(t->dtype) - 1;
}

static int val_overlap(const dk_tensor *a, const dk_tensor *b) {
    uint64_t a0, a1, b0, b1;
    if (a->buffer != b->buffer) return 0;
    val_range(a, &a0, &a1);
    val_range(b, &b0, &b1);
    return a0 <= b1 && b0 <= a1;
}

/* The same elements in the same order: in-place use. */
static int val_same_view(const dk_tensor *a, const dk_tensor *b) {
    int32_t i;
    if (a->buffer != b->buffer || a->offset != b->offset || a->dtype != b->dtype || a->ndim != b->ndim)
        return 0;
    for (i = 0; i < a->ndim; i++) {
        if (a->shape[i] != b->shape[i]) return 0;
        if (a->shape[i] > 1 && a->strides[i] != b->strides[i]) return 0;
    }
    return 1;
}

/* out must not share bytes with in; in_place: the identical view is allowed. */
static dk_status val_no_alias(dk_context *ctx, const char *op, const char *out_name, const dk_tensor *out,
                              const char *in_name, const dk_tensor *in, int in_place) {
    uint64_t o0, o1, i0, i1;
    if (!in || !val_overlap(out, in)) return DK_OK;
    if (in_place && val_same_view(out, in)) return DK_OK;
    val_range(out, &o0, &o1);
    val_range(in, &i0, &i1);
    return dk__fail(ctx, VAL_BAD,
                    "%s: %s (bytes %llu..%llu) overlaps %s (bytes %llu..%llu) in the same buffer; %s", op,
                    out_name, (unsigned long long)o0, (unsigned long long)o1, in_name, (unsigned long long)i0,
                    (unsigned long long)i1,
                    in_place ? "it must be either the exact same view (in place) or disjoint"
                             : "an output may not alias an input");
}

/* No two logical indices of an output may reach one element: taking the dims of
 * size > 1 by increasing stride, each stride must exceed the span of the faster
 * dims.  (Sufficient, and what every real layout satisfies.) */
static dk_status val_no_self_overlap(dk_context *ctx, const char *op, const char *name, const dk_tensor *t) {
    int32_t order[DK_MAX_DIMS], n = 0, i, j;
    int64_t span = 0; /* largest index reached by the faster dims */
    for (i = 0; i < t->ndim; i++)
        if (t->shape[i] > 1) order[n++] = i;
    for (i = 1; i < n; i++) /* insertion sort by stride */
        for (j = i; j > 0 && t->strides[order[j]] < t->strides[order[j - 1]]; j--) {
            int32_t tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    for (i = 0; i < n; i++) {
        int32_t d = order[i];
        if (t->strides[d] <= span)
            return dk__fail(ctx, VAL_BAD,
                            "%s: %s overlaps itself: strides[%d] (=%lld) must be > %lld (the largest index of "
                            "its faster dims) so that each element is written once",
                            op, name, (int)d, (long long)t->strides[d], (long long)span);
        span += (t->shape[d] - 1) * t->strides[d]; /* no overflow: validated extent */
    }
    return DK_OK;
}

/* ------------------------------------------------------------------ epilogue */

/* A parameter (bias, gamma, beta) of an op on 16-bit activations may be f32:
 * the kernels accumulate in fp32, so a parameter kept in fp32 is used as it is
 * (no rounding to the activation dtype). */
static dk_status val_param_dtype(dk_context *ctx, const char *op, const char *name, const dk_tensor *p,
                                 const char *ref_name, const dk_tensor *ref) {
    if (p->dtype == ref->dtype || (p->dtype == DK_F32 && ref->dtype != DK_F32)) return DK_OK;
    if (ref->dtype == DK_F32) return val_same_dtype(ctx, op, name, p, ref_name, ref);
    return dk__fail(ctx, VAL_BAD, "%s: %s.dtype (=%s) must equal %s.dtype (=%s) or be f32", op, name,
                    dk_dtype_name(p->dtype), ref_name, dk_dtype_name(ref->dtype));
}

/* bias [Cout] (x's dtype, or f32), residual shaped like y (x's dtype); both optional. */
static dk_status val_epilogue(dk_context *ctx, const char *op, const char *x_name, const dk_tensor *x,
                              const dk_tensor *bias, int64_t cout, const char *cout_what,
                              const dk_tensor *residual, const dk_tensor *y) {
    if (bias) {
        VAL_TRY(val_param_dtype(ctx, op, "bias", bias, x_name, x));
        VAL_TRY(val_ndim(ctx, op, "bias", bias, 1, "[Cout]"));
        VAL_TRY(val_dim(ctx, op, "bias", bias, 0, cout_what, cout));
    }
    if (residual) {
        VAL_TRY(val_same_dtype(ctx, op, "residual", residual, x_name, x));
        VAL_TRY(val_same_shape(ctx, op, "residual", residual, "y", y));
    }
    return DK_OK;
}

static dk_status val_scales(dk_context *ctx, const char *op, float output_scale, float residual_scale) {
    VAL_TRY(val_finite(ctx, op, "desc->output_scale", output_scale));
    return val_finite(ctx, op, "desc->residual_scale", residual_scale);
}

/* ------------------------------------------------------------------- conv2d */

/* Output size of a conv along one dim: (in*up + pad_lo + pad_hi - dil*(k-1) - 1) / stride + 1. */
static dk_status val_conv_out(dk_context *ctx, const char *op, const char *dim, int64_t in, int32_t up,
                              int32_t pad_lo, int32_t pad_hi, int32_t dil, int64_t k, int32_t stride, int64_t *out) {
    int64_t padded, reach;
    if (!val_mul(in, up, &padded) || !val_add(padded, (int64_t)pad_lo + (int64_t)pad_hi, &padded) ||
        !val_mul(k - 1, dil, &reach) || !val_add(reach, 1, &reach))
        return dk__fail(ctx, VAL_BAD, "%s: the output %s overflows 64 bits (input %lld, kernel %lld)", op, dim,
                        (long long)in, (long long)k);
    if (reach > padded)
        return dk__fail(ctx, VAL_BAD,
                        "%s: the dilated kernel %s (=dilation*(K-1)+1 = %lld) must be <= the padded input %s "
                        "(=%lld)", op, dim, (long long)reach, dim, (long long)padded);
    *out = (padded - reach) / stride + 1;
    return DK_OK;
}

/* The tensors of conv2d / conv_transpose2d on their own: well-formed, 4-D where
 * required, one dtype.  wlayout names w's dims in messages. */
static dk_status val_conv_tensors(dk_context *ctx, const char *op, const dk_tensor *x, const dk_tensor *w,
                                  const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y,
                                  const char *wlayout) {
    VAL_TRY(dk__validate_tensor(ctx, op, "x", x));
    VAL_TRY(dk__validate_tensor(ctx, op, "w", w));
    VAL_TRY(val_opt_tensor(ctx, op, "bias", bias));
    VAL_TRY(val_opt_tensor(ctx, op, "residual", residual));
    VAL_TRY(dk__validate_tensor(ctx, op, "y", y));
    VAL_TRY(val_ndim(ctx, op, "x", x, 4, "[N, Cin, H, W]"));
    VAL_TRY(val_ndim(ctx, op, "w", w, 4, wlayout));
    VAL_TRY(val_ndim(ctx, op, "y", y, 4, "[N, Cout, OH, OW]"));
    VAL_TRY(val_same_dtype(ctx, op, "w", w, "x", x));
    VAL_TRY(val_same_dtype(ctx, op, "y", y, "x", x));
    return DK_OK;
}

/* The per-side padding of a conv2d descriptor: all four -1 (from pad_h / pad_w)
 * or all four >= 0, with pad_h 0 or pad_top and pad_w 0 or pad_left.  r gets the
 * resolved descriptor: the four sides set, pad_h = pad_top, pad_w = pad_left, so
 * that code reading pad_h / pad_w as the top / left offset stays right. */
static dk_status val_conv_pads(dk_context *ctx, const char *op, const dk_conv2d_desc *d, dk_conv2d_desc *r) {
    const int32_t side[4] = {d->pad_top, d->pad_bottom, d->pad_left, d->pad_right};
    static const char *const names[4] = {"pad_top", "pad_bottom", "pad_left", "pad_right"};
    int i, set = 0, unset = 0;
    VAL_TRY(val_min(ctx, op, "desc->pad_h", d->pad_h, 0));
    VAL_TRY(val_min(ctx, op, "desc->pad_w", d->pad_w, 0));
    for (i = 0; i < 4; i++) {
        if (side[i] >= 0) set++;
        else if (side[i] == -1) unset++;
        else
            return dk__fail(ctx, VAL_BAD, "%s: desc->%s (=%d) must be -1 (from pad_h / pad_w) or >= 0", op, names[i],
                            (int)side[i]);
    }
    *r = *d;
    if (!set) {
        r->pad_top = r->pad_bottom = d->pad_h;
        r->pad_left = r->pad_right = d->pad_w;
        return DK_OK;
    }
    if (unset)
        return dk__fail(ctx, VAL_BAD,
                        "%s: desc->pad_top, pad_bottom, pad_left, pad_right (=%d, %d, %d, %d) must be all -1 (from "
                        "pad_h / pad_w) or all >= 0",
                        op, (int)side[0], (int)side[1], (int)side[2], (int)side[3]);
    if (d->pad_h != 0 && d->pad_h != d->pad_top)
        return dk__fail(ctx, VAL_BAD,
                        "%s: desc->pad_h (=%d) must be 0 or equal desc->pad_top (=%d) when the per-side pads are set",
                        op, (int)d->pad_h, (int)d->pad_top);
    if (d->pad_w != 0 && d->pad_w != d->pad_left)
        return dk__fail(ctx, VAL_BAD,
                        "%s: desc->pad_w (=%d) must be 0 or equal desc->pad_left (=%d) when the per-side pads are set",
                        op, (int)d->pad_w, (int)d->pad_left);
    r->pad_h = d->pad_top;
    r->pad_w = d->pad_left;
    return DK_OK;
}

dk_status dk__validate_conv2d(dk_context *ctx, const dk_conv2d_desc *d, const dk_tensor *x, const dk_tensor *w,
                              const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y,
                              dk_conv2d_desc *resolved) {
    static const char op[] = "dk_conv2d";
    int64_t cin, cout, oh, ow;
    dk_conv2d_desc r;
    VAL_TRY(val_need(ctx, op, "desc", d));
    VAL_TRY(val_need(ctx, op, "x", x));
    VAL_TRY(val_need(ctx, op, "w", w));
    VAL_TRY(val_need(ctx, op, "y", y));
    VAL_TRY(val_min(ctx, op, "desc->stride_h", d->stride_h, 1));
    VAL_TRY(val_min(ctx, op, "desc->stride_w", d->stride_w, 1));
    VAL_TRY(val_conv_pads(ctx, op, d, &r));
    VAL_TRY(val_min(ctx, op, "desc->dilation_h", d->dilation_h, 1));
    VAL_TRY(val_min(ctx, op, "desc->dilation_w", d->dilation_w, 1));
    VAL_TRY(val_min(ctx, op, "desc->groups", d->groups, 1));
    if (d->upsample != 1 && d->upsample != 2)
        return dk__fail(ctx, VAL_BAD, "%s: desc->upsample (=%d) must be 1 or 2", op, (int)d->upsample);
    VAL_TRY(val_act(ctx, op, "desc->activation", d->activation));
    VAL_TRY(val_act(ctx, op, "desc->post_activation", d->post_activation));
    VAL_TRY(val_scales(ctx, op, d->output_scale, d->residual_scale));

    VAL_TRY(val_conv_tensors(ctx, op, x, w, bias, residual, y, "[Cout, Cin/groups, KH, KW]"));

    cin = x->shape[1];
    cout = w->shape[0];
    if (cin % d->groups)
        return dk__fail(ctx, VAL_BAD, "%s: x.shape[1] (=%lld) must be divisible by desc->groups (=%d)", op,
                        (long long)cin, (int)d->groups);
    if (cout % d->groups)
        return dk__fail(ctx, VAL_BAD, "%s: w.shape[0] (=%lld) must be divisible by desc->groups (=%d)", op,
                        (long long)cout, (int)d->groups);
    VAL_TRY(val_dim(ctx, op, "w", w, 1, "x.shape[1] / groups", cin / d->groups));
    VAL_TRY(val_conv_out(ctx, op, "height", x->shape[2], d->upsample, r.pad_top, r.pad_bottom, d->dilation_h,
                         w->shape[2], d->stride_h, &oh));
    VAL_TRY(val_conv_out(ctx, op, "width", x->shape[3], d->upsample, r.pad_left, r.pad_right, d->dilation_w,
                         w->shape[3], d->stride_w, &ow));
    VAL_TRY(val_dim(ctx, op, "y", y, 0, "x.shape[0]", x->shape[0]));
    VAL_TRY(val_dim(ctx, op, "y", y, 1, "w.shape[0]", cout));
    VAL_TRY(val_dim(ctx, op, "y", y, 2,
                    "OH = (H*upsample + pad_top + pad_bottom - dilation_h*(KH-1) - 1) / stride_h + 1", oh));
    VAL_TRY(val_dim(ctx, op, "y", y, 3,
                    "OW = (W*upsample + pad_left + pad_right - dilation_w*(KW-1) - 1) / stride_w + 1", ow));
    VAL_TRY(val_epilogue(ctx, op, "x", x, bias, cout, "w.shape[0]", residual, y));

    VAL_TRY(val_no_self_overlap(ctx, op, "y", y));
    VAL_TRY(val_no_alias(ctx, op, "y", y, "x", x, 0));
    VAL_TRY(val_no_alias(ctx, op, "y", y, "w", w, 0));
    VAL_TRY(val_no_alias(ctx, op, "y", y, "bias", bias, 0));
    VAL_TRY(val_no_alias(ctx, op, "y", y, "residual", residual, 1));
    if (resolved) *resolved = r;
    return DK_OK;
}

/* --------------------------------------------------------- conv_transpose2d */

/* (in-1)*stride - 2*pad + dil*(k-1) + outpad + 1, which must be >= 1. */
static dk_status val_convt_out(dk_context *ctx, const char *op, const char *dim, int64_t in, int32_t stride,
                               int32_t pad, int32_t dil, int64_t k, int32_t outpad, int64_t *out) {
    int64_t a, b;
    if (!val_mul(in - 1, stride, &a) || !val_mul(k - 1, dil, &b) || !val_add(a, b, &a) ||
        !val_add(a, (int64_t)outpad + 1, &a))
        return dk__fail(ctx, VAL_BAD, "%s: the output %s overflows 64 bits (input %lld, kernel %lld)", op, dim,
                        (long long)in, (long long)k);
    if (a - 2 * (int64_t)pad < 1)
        return dk__fail(ctx, VAL_BAD,
                        "%s: the output %s (=(H-1)*stride - 2*pad + dilation*(K-1) + output_padding + 1 = %lld) "
                        "must be >= 1", op, dim, (long long)(a - 2 * (int64_t)pad));
    *out = a - 2 * (int64_t)pad;
    return DK_OK;
}

static dk_status val_outpad(dk_context *ctx, const char *op, const char *name, int32_t outpad, int32_t stride,
                            int32_t dil) {
    int32_t lim = stride > dil ? stride : dil;
    VAL_TRY(val_min(ctx, op, name, outpad, 0));
    if (outpad >= lim)
        return dk__fail(ctx, VAL_BAD, "%s: %s (=%d) must be < max(stride, dilation) (=%d)", op, name, (int)outpad,
                        (int)lim);
    return DK_OK;
}

dk_status dk__validate_conv_transpose2d(dk_context *ctx, const dk_conv_transpose2d_desc *d, const dk_tensor *x,
                                        const dk_tensor *w, const dk_tensor *bias, const dk_tensor *residual,
                                        const dk_tensor *y) {
    static const char op[] = "dk_conv_transpose2d";
    int64_t cin, cout, oh, ow;
    VAL_TRY(val_need(ctx, op, "desc", d));
    VAL_TRY(val_need(ctx, op, "x", x));
    VAL_TRY(val_need(ctx, op, "w", w));
    VAL_TRY(val_need(ctx, op, "y", y));
    VAL_TRY(val_min(ctx, op, "desc->stride_h", d->stride_h, 1));
    VAL_TRY(val_min(ctx, op, "desc->stride_w", d->stride_w, 1));
    VAL_TRY(val_min(ctx, op, "desc->pad_h", d->pad_h, 0));
    VAL_TRY(val_min(ctx, op, "desc->pad_w", d->pad_w, 0));
    VAL_TRY(val_min(ctx, op, "desc->dilation_h", d->dilation_h, 1));
    VAL_TRY(val_min(ctx, op, "desc->dilation_w", d->dilation_w, 1));
    VAL_TRY(val_outpad(ctx, op, "desc->output_padding_h", d->output_padding_h, d->stride_h, d->dilation_h));
    VAL_TRY(val_outpad(ctx, op, "desc->output_padding_w", d->output_padding_w, d->stride_w, d->dilation_w));
    VAL_TRY(val_min(ctx, op, "desc->groups", d->groups, 1));
    VAL_TRY(val_act(ctx, op, "desc->activation", d->activation));
    VAL_TRY(val_act(ctx, op, "desc->post_activation", d->post_activation));
    VAL_TRY(val_scales(ctx, op, d->output_scale, d->residual_scale));

    VAL_TRY(val_conv_tensors(ctx, op, x, w, bias, residual, y, "[Cin, Cout/groups, KH, KW]"));

    cin = x->shape[1];
    if (cin % d->groups)
        return dk__fail(ctx, VAL_BAD, "%s: x.shape[1] (=%lld) must be divisible by desc->groups (=%d)", op,
                        (long long)cin, (int)d->groups);
    VAL_TRY(val_dim(ctx, op, "w", w, 0, "x.shape[1]", cin));
    cout = w->shape[1] * d->groups; /* no overflow: groups <= Cin and Cin * w.shape[1] <= w's element count */
    VAL_TRY(val_convt_out(ctx, op, "height", x->shape[2], d->stride_h, d->pad_h, d->dilation_h, w->shape[2],
                          d->output_padding_h, &oh));
    VAL_TRY(val_convt_out(ctx, op, "width", x->shape[3], d->stride_w, d->pad_w, d->dilation_w, w->shape[3],
                          d->output_padding_w, &ow));
    VAL_TRY(val_dim(ctx, op, "y", y, 0, "x.shape[0]", x->shape[0]));
    VAL_TRY(val_dim(ctx, op, "y", y, 1, "w.shape[1] * groups", cout));
    VAL_TRY(val_dim(ctx, op, "y", y, 2,
                    "OH = (H-1)*stride_h - 2*pad_h + dilation_h*(KH-1) + output_padding_h + 1", oh));
    VAL_TRY(val_dim(ctx, op, "y", y, 3,
                    "OW = (W-1)*stride_w - 2*pad_w + dilation_w*(KW-1) + output_padding_w + 1", ow));
    VAL_TRY(val_epilogue(ctx, op, "x", x, bias, cout, "w.shape[1] * groups", residual, y));

    VAL_TRY(val_no_self_overlap(ctx, op, "y", y));
    VAL_TRY(val_no_alias(ctx, op, "y", y, "x", x, 0));
    VAL_TRY(val_no_alias(ctx, op, "y", y, "w", w, 0));
    VAL_TRY(val_no_alias(ctx, op, "y", y, "bias", bias, 0));
    return val_no_alias(ctx, op, "y", y, "residual", residual, 1);
}

/* ------------------------------------------------------------------- conv3d */

dk_status dk__validate_conv3d(dk_context *ctx, const char *op, const dk_conv3d_desc *d, const dk_tensor *cache,
                              const dk_tensor *x, const dk_tensor *w, const dk_tensor *bias,
                              const dk_tensor *residual, const dk_tensor *y) {
    int64_t cin, cout, ot, oh, ow;
    VAL_TRY(val_need(ctx, op, "desc", d));
    VAL_TRY(val_need(ctx, op, "x", x));
    VAL_TRY(val_need(ctx, op, "w", w));
    VAL_TRY(val_need(ctx, op, "y", y));
    VAL_TRY(val_min(ctx, op, "desc->stride_t", d->stride_t, 1));
    VAL_TRY(val_min(ctx, op, "desc->stride_h", d->stride_h, 1));
    VAL_TRY(val_min(ctx, op, "desc->stride_w", d->stride_w, 1));
    VAL_TRY(val_min(ctx, op, "desc->dilation_t", d->dilation_t, 1));
    VAL_TRY(val_min(ctx, op, "desc->dilation_h", d->dilation_h, 1));
    VAL_TRY(val_min(ctx, op, "desc->dilation_w", d->dilation_w, 1));
    VAL_TRY(val_min(ctx, op, "desc->pad_front", d->pad_front, 0));
    VAL_TRY(val_min(ctx, op, "desc->pad_back", d->pad_back, 0));
    VAL_TRY(val_min(ctx, op, "desc->pad_top", d->pad_top, 0));
    VAL_TRY(val_min(ctx, op, "desc->pad_bottom", d->pad_bottom, 0));
    VAL_TRY(val_min(ctx, op, "desc->pad_left", d->pad_left, 0));
    VAL_TRY(val_min(ctx, op, "desc->pad_right", d->pad_right, 0));
    VAL_TRY(val_min(ctx, op, "desc->groups", d->groups, 1));
    VAL_TRY(val_act(ctx, op, "desc->activation", d->activation));
    VAL_TRY(val_act(ctx, op, "desc->post_activation", d->post_activation));
    VAL_TRY(val_scales(ctx, op, d->output_scale, d->residual_scale));

    VAL_TRY(dk__validate_tensor(ctx, op, "x", x));
    VAL_TRY(dk__validate_tensor(ctx, op, "w", w));
    VAL_TRY(val_opt_tensor(ctx, op, "cache", cache));
    VAL_TRY(val_opt_tensor(ctx, op, "bias", bias));
    VAL_TRY(val_opt_tensor(ctx, op, "residual", residual));
    VAL_TRY(dk__validate_tensor(ctx, op, "y", y));
    VAL_TRY(val_ndim(ctx, op, "x", x, 5, "[N, Cin, T, H, W]"));
    VAL_TRY(val_ndim(ctx, op, "w", w, 5, "[Cout, Cin/groups, KT, KH, KW]"));
    VAL_TRY(val_ndim(ctx, op, "y", y, 5, "[N, Cout, OT, OH, OW]"));
    VAL_TRY(val_same_dtype(ctx, op, "w", w, "x", x));
    VAL_TRY(val_same_dtype(ctx, op, "y", y, "x", x));

    cin = x->shape[1];
    cout = w->shape[0];
    if (cin % d->groups)
        return dk__fail(ctx, VAL_BAD, "%s: x.shape[1] (=%lld) must be divisible by desc->groups (=%d)", op,
                        (long long)cin, (int)d->groups);
    if (cout % d->groups)
        return dk__fail(ctx, VAL_BAD, "%s: w.shape[0] (=%lld) must be divisible by desc->groups (=%d)", op,
                        (long long)cout, (int)d->groups);
    VAL_TRY(val_dim(ctx, op, "w", w, 1, "x.shape[1] / groups", cin / d->groups));
    if (cache) {
        VAL_TRY(val_ndim(ctx, op, "cache", cache, 5, "[N, Cin, Tc, H, W]"));
        VAL_TRY(val_same_dtype(ctx, op, "cache", cache, "x", x));
        VAL_TRY(val_dim(ctx, op, "cache", cache, 0, "x.shape[0]", x->shape[0]));
        VAL_TRY(val_dim(ctx, op, "cache", cache, 1, "x.shape[1]", cin));
        VAL_TRY(val_dim(ctx, op, "cache", cache, 3, "x.shape[3]", x->shape[3]));
        VAL_TRY(val_dim(ctx, op, "cache", cache, 4, "x.shape[4]", x->shape[4]));
        if (cache->shape[2] > d->pad_front)
            return dk__fail(ctx, VAL_BAD, "%s: cache.shape[2] (=%lld) must be <= desc->pad_front (=%d)", op,
                            (long long)cache->shape[2], (int)d->pad_front);
    }
    VAL_TRY(val_conv_out(ctx, op, "length", x->shape[2], 1, d->pad_front, d->pad_back, d->dilation_t, w->shape[2],
                         d->stride_t, &ot));
    VAL_TRY(val_conv_out(ctx, op, "height", x->shape[3], 1, d->pad_top, d->pad_bottom, d->dilation_h, w->shape[3],
                         d->stride_h, &oh));
    VAL_TRY(val_conv_out(ctx, op, "width", x->shape[4], 1, d->pad_left, d->pad_right, d->dilation_w, w->shape[4],
                         d->stride_w, &ow));
    VAL_TRY(val_dim(ctx, op, "y", y, 0, "x.shape[0]", x->shape[0]));
    VAL_TRY(val_dim(ctx, op, "y", y, 1, "w.shape[0]", cout));
    VAL_TRY(val_dim(ctx, op, "y", y, 2,
                    "OT = (T + pad_front + pad_back - dilation_t*(KT-1) - 1) / stride_t + 1", ot));
    VAL_TRY(val_dim(ctx, op, "y", y, 3,
                    "OH = (H + pad_top + pad_bottom - dilation_h*(KH-1) - 1) / stride_h + 1", oh));
    VAL_TRY(val_dim(ctx, op, "y", y, 4,
                    "OW = (W + pad_left + pad_right - dilation_w*(KW-1) - 1) / stride_w + 1", ow));
    VAL_TRY(val_epilogue(ctx, op, "x", x, bias, cout, "w.shape[0]", residual, y));

    VAL_TRY(val_no_self_overlap(ctx, op, "y", y));
    VAL_TRY(val_no_alias(ctx, op, "y", y, "x", x, 0));
    VAL_TRY(val_no_alias(ctx, op, "y", y, "cache", cache, 0));
    VAL_TRY(val_no_alias(ctx, op, "y", y, "w", w, 0));
    VAL_TRY(val_no_alias(ctx, op, "y", y, "bias", bias, 0));
    return val_no_alias(ctx, op, "y", y, "residual", residual, 1);
}

/* ------------------------------------------------------------------- matmul */

static dk_status val_ndim23(dk_context *ctx, const char *op, const char *name, const dk_tensor *t,
                            const char *layout) {
    if (t->ndim != 2 && t->ndim != 3)
        return dk__fail(ctx, VAL_BAD, "%s: %s.ndim (=%d) must be 2 or 3 (%s)", op, name, (int)t->ndim, layout);
    return DK_OK;
}

dk_status dk__validate_matmul(dk_context *ctx, const char *op, const dk_matmul_desc *d, const dk_tensor *a,
                              const dk_tensor *b, const dk_tensor *bias, const dk_tensor *residual,
                              const dk_tensor *y) {
    /* dk_linear passes x and weight^T ([K, N] view of weight [N, K]). */
    int linear = op && !strcmp(op, "dk_linear");
    const char *an = linear ? "x" : "a";
    const char *bn = linear ? "weight^T" : "b";
    int64_t m, k, n, batch = 0;
    int32_t ak, bk, ym;
    char what[64];
    if (!op) op = "dk_matmul";
    VAL_TRY(val_need(ctx, op, "desc", d));
    VAL_TRY(val_need(ctx, op, an, a));
    VAL_TRY(val_need(ctx, op, linear ? "weight" : "b", b));
    VAL_TRY(val_need(ctx, op, "y", y));
    VAL_TRY(val_act(ctx, op, "desc->activation", d->activation));
    VAL_TRY(val_act(ctx, op, "desc->post_activation", d->post_activation));
    VAL_TRY(val_scales(ctx, op, d->output_scale, d->residual_scale));

    VAL_TRY(dk__validate_tensor(ctx, op, an, a));
    VAL_TRY(dk__validate_tensor(ctx, op, bn, b));
    VAL_TRY(val_opt_tensor(ctx, op, "bias", bias));
    VAL_TRY(val_opt_tensor(ctx, op, "residual", residual));
    VAL_TRY(dk__validate_tensor(ctx, op, "y", y));
    VAL_TRY(val_ndim23(ctx, op, an, a, "[M, K] or [B, M, K]"));
    VAL_TRY(val_ndim23(ctx, op, bn, b, "[K, N] or [B, K, N]"));
    VAL_TRY(val_same_dtype(ctx, op, bn, b, an, a));
    VAL_TRY(val_same_dtype(ctx, op, "y", y, an, a));

    ak = a->ndim - 1; /* index of K in a */
    bk = b->ndim - 2; /* index of K in b */
    m = a->shape[ak - 1];
    k = a->shape[ak];
    n = b->shape[bk + 1];
    snprintf(what, sizeof what, "%s.shape[%d]", an, (int)ak);
    VAL_TRY(val_dim(ctx, op, bn, b, bk, what, k));
    if (a->ndim == 3 && b->ndim == 3) {
        snprintf(what, sizeof what, "%s.shape[0]", an);
        VAL_TRY(val_dim(ctx, op, bn, b, 0, what, a->shape[0]));
    }
    if (a->ndim == 3) batch = a->shape[0];
    else if (b->ndim == 3) batch = b->shape[0];
    if (y->ndim != (batch ? 3 : 2))
        return dk__fail(ctx, VAL_BAD, "%s: y.ndim (=%d) must be %d (%s)", op, (int)y->ndim, batch ? 3 : 2,
                        batch ? "[B, M, N]: an operand is batched" : "[M, N]: no operand is batched");
    ym = y->ndim - 2;
    if (batch) VAL_TRY(val_dim(ctx, op, "y", y, 0, "the batch size B", batch));
    snprintf(what, sizeof what, "M = %s.shape[%d]", an, (int)(ak - 1));
    VAL_TRY(val_dim(ctx, op, "y", y, ym, what, m));
    snprintf(what, sizeof what, "N = %s.shape[%d]", bn, (int)(bk + 1));
    VAL_TRY(val_dim(ctx, op, "y", y, ym + 1, what, n));
    VAL_TRY(val_epilogue(ctx, op, an, a, bias, n, "N", residual, y));

    VAL_TRY(val_no_self_overlap(ctx, op, "y", y));
    VAL_TRY(val_no_alias(ctx, op, "y", y, an, a, 0));
    VAL_TRY(val_no_alias(ctx, op, "y", y, linear ? "weight" : "b", b, 0));
    VAL_TRY(val_no_alias(ctx, op, "y", y, "bias", bias, 0));
    return val_no_alias(ctx, op, "y", y, "residual", residual, 1);
}

/* ------------------------------------------------------------------- norms */

/* gamma/beta: [len] when given, disjoint from y; x's dtype, or (f32_ok: GroupNorm)
 * f32 with 16-bit x. */
static dk_status val_affine(dk_context *ctx, const char *op, const char *name, const dk_tensor *p, int64_t len,
                            const char *what, const dk_tensor *x, int f32_ok) {
    if (!p) return DK_OK;
    VAL_TRY(f32_ok ? val_param_dtype(ctx, op, name, p, "x", x) : val_same_dtype(ctx, op, name, p, "x", x));
    VAL_TRY(val_ndim(ctx, op, name, p, 1, what));
    return val_dim(ctx, op, name, p, 0, what, len);
}

/* What the three norms check after x: gamma and beta (optional, [len] each;
 * f32 with f16 / bf16 x where f32_ok, and then of one dtype), and y of x's
 * dtype and shape, overlapping none of them (x only as its very view: in place). */
static dk_status val_norm_out(dk_context *ctx, const char *op, const dk_tensor *x, const dk_tensor *gamma,
                              const dk_tensor *beta, const dk_tensor *y, int64_t len, const char *len_what,
                              int f32_ok) {
    VAL_TRY(val_opt_tensor(ctx, op, "gamma", gamma));
    VAL_TRY(val_opt_tensor(ctx, op, "beta", beta));
    VAL_TRY(dk__validate_tensor(ctx, op, "y", y));
    VAL_TRY(val_same_dtype(ctx, op, "y", y, "x", x));
    VAL_TRY(val_same_shape(ctx, op, "y", y, "x", x));
    VAL_TRY(val_affine(ctx, op, "gamma", gamma, len, len_what, x, f32_ok));
    VAL_TRY(val_affine(ctx, op, "beta", beta, len, len_what, x, f32_ok));
    if (gamma && beta) VAL_TRY(val_same_dtype(ctx, op, "beta", beta, "gamma", gamma));

    VAL_TRY(val_no_self_overlap(ctx, op, "y", y));
    VAL_TRY(val_no_alias(ctx, op, "y", y, "x", x, 1));
    VAL_TRY(val_no_alias(ctx, op, "y", y, "gamma", gamma, 0));
    return val_no_alias(ctx, op, "y", y, "beta", beta, 0);
}

/* stats of the split GroupNorm: f32 [N, groups, 2], dense row-major. */
static dk_status val_gn_stats(dk_context *ctx, const char *op, const dk_tensor *stats, const dk_tensor *x,
                              int32_t groups) {
    VAL_TRY(dk__validate_tensor(ctx, op, "stats", stats));
    if (stats->dtype != DK_F32)
        return dk__fail(ctx, VAL_BAD, "%s: stats.dtype (=%s) must be f32", op, dk_dtype_name(stats->dtype));
    VAL_TRY(val_ndim(ctx, op, "stats", stats, 3, "[N, groups, 2]"));
    VAL_TRY(val_dim(ctx, op, "stats", stats, 0, "N = x.shape[0]", x->shape[0]));
    VAL_TRY(val_dim(ctx, op, "stats", stats, 1, "desc->groups", groups));
    VAL_TRY(val_dim(ctx, op, "stats", stats, 2, "2 (mean, variance)", 2));
    if (stats->strides[2] != 1 || stats->strides[1] != 2 || (stats->shape[0] > 1 && stats->strides[0] != 2 * groups))
        return dk__fail(ctx, VAL_BAD,
                        "%s: stats must be dense row-major (strides %lld, 2, 1); got strides (%lld, %lld, %lld)", op,
                        (long long)(2 * groups), (long long)stats->strides[0], (long long)stats->strides[1],
                        (long long)stats->strides[2]);
    return DK_OK;
}

dk_status dk__validate_group_norm(dk_context *ctx, const char *op, int mode, const dk_group_norm_desc *d,
                                  const dk_tensor *x, const dk_tensor *stats, const dk_tensor *gamma,
                                  const dk_tensor *beta, const dk_tensor *y) {
    VAL_TRY(val_need(ctx, op, "desc", d));
    VAL_TRY(val_need(ctx, op, "x", x));
    if (mode != DK__GN_FULL) VAL_TRY(val_need(ctx, op, "stats", stats));
    if (mode != DK__GN_STATS) VAL_TRY(val_need(ctx, op, "y", y));
    if (!gamma != !beta)
        return dk__fail(ctx, VAL_BAD, "%s: gamma and beta must both be given or both be NULL (gamma %s, beta %s)",
                        op, gamma ? "given" : "NULL", beta ? "given" : "NULL");
    VAL_TRY(val_min(ctx, op, "desc->groups", d->groups, 1));
    if (mode != DK__GN_STATS) {
        VAL_TRY(val_eps(ctx, op, d->eps));
        VAL_TRY(val_act(ctx, op, "desc->activation", d->activation));
    }

    VAL_TRY(dk__validate_tensor(ctx, op, "x", x));
    VAL_TRY(val_ndim45(ctx, op, "x", x, "[N, C, H, W]", "[N, C, T, H, W]"));
    if (x->shape[1] % d->groups)
        return dk__fail(ctx, VAL_BAD, "%s: x.shape[1] (=%lld) must be divisible by desc->groups (=%d)", op,
                        (long long)x->shape[1], (int)d->groups);
    if (mode != DK__GN_FULL) VAL_TRY(val_gn_stats(ctx, op, stats, x, d->groups));
    if (mode == DK__GN_STATS) {
        VAL_TRY(val_no_self_overlap(ctx, op, "stats", stats));
        return val_no_alias(ctx, op, "stats", stats, "x", x, 0);
    }
    VAL_TRY(val_norm_out(ctx, op, x, gamma, beta, y, x->shape[1], "C = x.shape[1]", 1));
    return val_no_alias(ctx, op, "y", y, "stats", stats, 0);
}

dk_status dk__validate_layer_norm(dk_context *ctx, const dk_layer_norm_desc *d, const dk_tensor *x,
                                  const dk_tensor *gamma, const dk_tensor *beta, const dk_tensor *y) {
    static const char op[] = "dk_layer_norm";
    VAL_TRY(val_need(ctx, op, "desc", d));
    VAL_TRY(val_need(ctx, op, "x", x));
    VAL_TRY(val_need(ctx, op, "y", y));
    VAL_TRY(val_eps(ctx, op, d->eps));
    VAL_TRY(val_act(ctx, op, "desc->activation", d->activation));

    VAL_TRY(dk__validate_tensor(ctx, op, "x", x));
    return val_norm_out(ctx, op, x, gamma, beta, y, x->shape[x->ndim - 1], "D = x.shape[ndim-1]", 0);
}

/* ----------------------------------------------------------------- rms_norm */

dk_status dk__validate_rms_norm(dk_context *ctx, const dk_rms_norm_desc *d, const dk_tensor *x,
                                const dk_tensor *gamma, const dk_tensor *beta, const dk_tensor *y) {
    static const char op[] = "dk_rms_norm";
    VAL_TRY(val_need(ctx, op, "desc", d));
    VAL_TRY(val_need(ctx, op, "x", x));
    VAL_TRY(val_need(ctx, op, "y", y));
    if ((int)d->form != (int)DK_RMS_NORM_MEAN_SQUARE && (int)d->form != (int)DK_RMS_NORM_L2)
        return dk__fail(ctx, VAL_BAD, "%s: desc->form (=%d) must be DK_RMS_NORM_MEAN_SQUARE (%d) or DK_RMS_NORM_L2 (%d)",
                        op, (int)d->form, (int)DK_RMS_NORM_MEAN_SQUARE, (int)DK_RMS_NORM_L2);
    VAL_TRY(val_eps(ctx, op, d->eps));
    VAL_TRY(val_act(ctx, op, "desc->activation", d->activation));

    VAL_TRY(dk__validate_tensor(ctx, op, "x", x));
    if (x->ndim < 2)
        return dk__fail(ctx, VAL_BAD, "%s: x.ndim (=%d) must be 2 to 5 ([N, C, ...], the channel axis is dim 1)", op,
                        (int)x->ndim);
    return val_norm_out(ctx, op, x, gamma, beta, y, x->shape[1], "C = x.shape[1]", 1);
}

/* ---------------------------------------------------------------- attention */

dk_status dk__validate_attention(dk_context *ctx, const dk_attention_desc *d, const dk_tensor *q,
                                 const dk_tensor *k, const dk_tensor *v, const dk_tensor *out) {
    static const char op[] = "dk_attention";
    int32_t o;
    VAL_TRY(val_need(ctx, op, "desc", d));
    VAL_TRY(val_need(ctx, op, "q", q));
    VAL_TRY(val_need(ctx, op, "k", k));
    VAL_TRY(val_need(ctx, op, "v", v));
    VAL_TRY(val_need(ctx, op, "out", out));
    VAL_TRY(val_finite(ctx, op, "desc->scale", d->scale));

    VAL_TRY(dk__validate_tensor(ctx, op, "q", q));
    VAL_TRY(dk__validate_tensor(ctx, op, "k", k));
    VAL_TRY(dk__validate_tensor(ctx, op, "v", v));
    VAL_TRY(dk__validate_tensor(ctx, op, "out", out));
    VAL_TRY(val_ndim45(ctx, op, "q", q, "[B, H, Nq, D]", "[B, B2, H, Nq, D]"));
    o = q->ndim - 4; /* a 5-D call has two batch dims: the rest moves up by one */
    VAL_TRY(val_ndim(ctx, op, "k", k, q->ndim, o ? "[B, B2, H, Nkv, D] like q" : "[B, H, Nkv, D]"));
    VAL_TRY(val_ndim(ctx, op, "v", v, q->ndim, o ? "[B, B2, H, Nkv, Dv] like q" : "[B, H, Nkv, Dv]"));
    VAL_TRY(val_ndim(ctx, op, "out", out, q->ndim, o ? "[B, B2, H, Nq, Dv] like q" : "[B, H, Nq, Dv]"));
    VAL_TRY(val_same_dtype(ctx, op, "k", k, "q", q));
    VAL_TRY(val_same_dtype(ctx, op, "v", v, "q", q));
    VAL_TRY(val_same_dtype(ctx, op, "out", out, "q", q));

    if (q->shape[3 + o] > VAL_MAX_HEAD_DIM)
        return dk__fail(ctx, VAL_BAD, "%s: q.shape[%d] (=D=%lld) must be <= %d", op, 3 + o,
                        (long long)q->shape[3 + o], VAL_MAX_HEAD_DIM);
    if (v->shape[3 + o] > VAL_MAX_HEAD_DIM)
        return dk__fail(ctx, VAL_BAD, "%s: v.shape[%d] (=Dv=%lld) must be <= %d", op, 3 + o,
                        (long long)v->shape[3 + o], VAL_MAX_HEAD_DIM);
    if (o) {
        VAL_TRY(val_dim(ctx, op, "k", k, 1, "B2 = q.shape[1]", q->shape[1]));
        VAL_TRY(val_dim(ctx, op, "v", v, 1, "B2 = q.shape[1]", q->shape[1]));
        VAL_TRY(val_dim(ctx, op, "out", out, 1, "B2 = q.shape[1]", q->shape[1]));
    }
    VAL_TRY(val_dim(ctx, op, "k", k, 0, "B = q.shape[0]", q->shape[0]));
    VAL_TRY(val_dim(ctx, op, "k", k, 1 + o, o ? "H = q.shape[2]" : "H = q.shape[1]", q->shape[1 + o]));
    VAL_TRY(val_dim(ctx, op, "k", k, 3 + o, o ? "D = q.shape[4]" : "D = q.shape[3]", q->shape[3 + o]));
    VAL_TRY(val_dim(ctx, op, "v", v, 0, "B = q.shape[0]", q->shape[0]));
    VAL_TRY(val_dim(ctx, op, "v", v, 1 + o, o ? "H = q.shape[2]" : "H = q.shape[1]", q->shape[1 + o]));
    VAL_TRY(val_dim(ctx, op, "v", v, 2 + o, o ? "Nkv = k.shape[3]" : "Nkv = k.shape[2]", k->shape[2 + o]));
    VAL_TRY(val_dim(ctx, op, "out", out, 0, "B = q.shape[0]", q->shape[0]));
    VAL_TRY(val_dim(ctx, op, "out", out, 1 + o, o ? "H = q.shape[2]" : "H = q.shape[1]", q->shape[1 + o]));
    VAL_TRY(val_dim(ctx, op, "out", out, 2 + o, o ? "Nq = q.shape[3]" : "Nq = q.shape[2]", q->shape[2 + o]));
    VAL_TRY(val_dim(ctx, op, "out", out, 3 + o, o ? "Dv = v.shape[4]" : "Dv = v.shape[3]", v->shape[3 + o]));

    VAL_TRY(val_no_self_overlap(ctx, op, "out", out));
    VAL_TRY(val_no_alias(ctx, op, "out", out, "q", q, 0));
    VAL_TRY(val_no_alias(ctx, op, "out", out, "k", k, 0));
    return val_no_alias(ctx, op, "out", out, "v", v, 0);
}

/* -------------------------------------------------------------- elementwise */

dk_status dk__validate_activation(dk_context *ctx, const char *op, float in_scale, dk_activation act,
                                  float out_scale, const dk_tensor *x, const dk_tensor *y) {
    VAL_TRY(val_need(ctx, op, "x", x));
    VAL_TRY(val_need(ctx, op, "y", y));
    VAL_TRY(val_finite(ctx, op, "in_scale", in_scale));
    VAL_TRY(val_finite(ctx, op, "out_scale", out_scale));
    VAL_TRY(val_act(ctx, op, "act", act));
    VAL_TRY(dk__validate_tensor(ctx, op, "x", x));
    VAL_TRY(dk__validate_tensor(ctx, op, "y", y));
    VAL_TRY(val_same_dtype(ctx, op, "y", y, "x", x));
    VAL_TRY(val_same_shape(ctx, op, "y", y, "x", x));
    VAL_TRY(val_no_self_overlap(ctx, op, "y", y));
    return val_no_alias(ctx, op, "y", y, "x", x, 1);
}

dk_status dk__validate_add(dk_context *ctx, float alpha, const dk_tensor *a, float beta, const dk_tensor *b,
                           dk_activation act, const dk_tensor *y) {
    static const char op[] = "dk_add";
    VAL_TRY(val_need(ctx, op, "a", a));
    VAL_TRY(val_need(ctx, op, "b", b));
    VAL_TRY(val_need(ctx, op, "y", y));
    VAL_TRY(val_finite(ctx, op, "alpha", alpha));
    VAL_TRY(val_finite(ctx, op, "beta", beta));
    VAL_TRY(val_act(ctx, op, "act", act));
    VAL_TRY(dk__validate_tensor(ctx, op, "a", a));
    VAL_TRY(dk__validate_tensor(ctx, op, "b", b));
    VAL_TRY(dk__validate_tensor(ctx, op, "y", y));
    VAL_TRY(val_same_dtype(ctx, op, "b", b, "a", a));
    VAL_TRY(val_same_dtype(ctx, op, "y", y, "a", a));
    VAL_TRY(val_same_shape(ctx, op, "b", b, "a", a));
    VAL_TRY(val_same_shape(ctx, op, "y", y, "a", a));
    VAL_TRY(val_no_self_overlap(ctx, op, "y", y));
    VAL_TRY(val_no_alias(ctx, op, "y", y, "a", a, 1));
    return val_no_alias(ctx, op, "y", y, "b", b, 1);
}

dk_status dk__validate_upsample_nearest(dk_context *ctx, const dk_tensor *x, const dk_tensor *y) {
    static const char op[] = "dk_upsample_nearest";
    int32_t i;
    VAL_TRY(val_need(ctx, op, "x", x));
    VAL_TRY(val_need(ctx, op, "y", y));
    VAL_TRY(dk__validate_tensor(ctx, op, "x", x));
    VAL_TRY(dk__validate_tensor(ctx, op, "y", y));
    VAL_TRY(val_ndim45(ctx, op, "x", x, "[N, C, H, W]", "[N, C, T, H, W]"));
    VAL_TRY(val_ndim(ctx, op, "y", y, x->ndim, x->ndim == 4 ? "[N, C, OH, OW]" : "[N, C, OT, OH, OW] like x"));
    VAL_TRY(val_same_dtype(ctx, op, "y", y, "x", x));
    VAL_TRY(val_dim(ctx, op, "y", y, 0, "x.shape[0]", x->shape[0]));
    VAL_TRY(val_dim(ctx, op, "y", y, 1, "x.shape[1]", x->shape[1]));
    for (i = 2; i < x->ndim; i++) { /* the source index i*H/OH is computed exactly in 64 bits */
        int64_t prod;
        if (!val_mul(x->shape[i], y->shape[i], &prod))
            return dk__fail(ctx, VAL_BAD, "%s: y.shape[%d] * x.shape[%d] (=%lld * %lld) overflows 64 bits", op,
                            (int)i, (int)i, (long long)y->shape[i], (long long)x->shape[i]);
    }
    VAL_TRY(val_no_self_overlap(ctx, op, "y", y));
    return val_no_alias(ctx, op, "y", y, "x", x, 0);
}

dk_status dk__validate_convert(dk_context *ctx, const dk_tensor *x, const dk_tensor *y) {
    static const char op[] = "dk_convert";
    VAL_TRY(val_need(ctx, op, "x", x));
    VAL_TRY(val_need(ctx, op, "y", y));
    VAL_TRY(dk__validate_tensor(ctx, op, "x", x));
    VAL_TRY(dk__validate_tensor(ctx, op, "y", y));
    VAL_TRY(val_same_shape(ctx, op, "y", y, "x", x));
    VAL_TRY(val_no_self_overlap(ctx, op, "y", y));
    return val_no_alias(ctx, op, "y", y, "x", x, 0);
}

dk_status dk__validate_prepare_weight(dk_context *ctx, dk_weight_use use, const dk_tensor *w) {
    static const char op[] = "dk_prepare_weight";
    VAL_TRY(val_need(ctx, op, "w", w));
    switch (use) {
    case DK_WEIGHT_CONV2D:
        VAL_TRY(dk__validate_tensor(ctx, op, "w", w));
        return val_ndim(ctx, op, "w", w, 4, "[Cout, Cin/groups, KH, KW] for DK_WEIGHT_CONV2D");
    case DK_WEIGHT_CONV_TRANSPOSE2D:
        VAL_TRY(dk__validate_tensor(ctx, op, "w", w));
        return val_ndim(ctx, op, "w", w, 4, "[Cin, Cout/groups, KH, KW] for DK_WEIGHT_CONV_TRANSPOSE2D");
    case DK_WEIGHT_MATMUL_B:
        VAL_TRY(dk__validate_tensor(ctx, op, "w", w));
        return val_ndim23(ctx, op, "w", w, "[K, N] or [B, K, N] for DK_WEIGHT_MATMUL_B");
    }
    return dk__fail(ctx, VAL_BAD, "%s: use (=%d) must be a dk_weight_use (%d..%d)", op, (int)use,
                    (int)DK_WEIGHT_CONV2D, (int)DK_WEIGHT_MATMUL_B);
}

#undef VAL_BAD
#undef VAL_TRY
#undef VAL_MAX_HEAD_DIM
