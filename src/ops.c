/* Public op entry points: initialize descriptors, validate, mark outputs written,
 * dispatch to the context's backend table. */
#include "dk_internal.h"
#include "validate.h"
#include "plan.h"
#include "../backends/backend.h"

void dk_conv2d_desc_init(dk_conv2d_desc *d) {
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->stride_h = d->stride_w = 1;
    d->dilation_h = d->dilation_w = 1;
    d->groups = 1;
    d->upsample = 1;
    d->activation = DK_ACT_NONE;
    d->output_scale = 1.0f;
    d->residual_scale = 1.0f;
    d->pad_top = d->pad_bottom = d->pad_left = d->pad_right = -1;
    d->post_activation = DK_ACT_NONE;
}

void dk_conv_transpose2d_desc_init(dk_conv_transpose2d_desc *d) {
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->stride_h = d->stride_w = 1;
    d->dilation_h = d->dilation_w = 1;
    d->groups = 1;
    d->activation = DK_ACT_NONE;
    d->output_scale = 1.0f;
    d->residual_scale = 1.0f;
    d->post_activation = DK_ACT_NONE;
}

void dk_conv3d_desc_init(dk_conv3d_desc *d) {
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->stride_t = d->stride_h = d->stride_w = 1;
    d->dilation_t = d->dilation_h = d->dilation_w = 1;
    d->groups = 1;
    d->activation = DK_ACT_NONE;
    d->output_scale = 1.0f;
    d->residual_scale = 1.0f;
    d->post_activation = DK_ACT_NONE;
}

void dk_matmul_desc_init(dk_matmul_desc *d) {
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->activation = DK_ACT_NONE;
    d->output_scale = 1.0f;
    d->residual_scale = 1.0f;
    d->post_activation = DK_ACT_NONE;
}

void dk_group_norm_desc_init(dk_group_norm_desc *d) {
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->groups = 32;
    d->eps = 1e-5f;
    d->activation = DK_ACT_NONE;
}

void dk_layer_norm_desc_init(dk_layer_norm_desc *d) {
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->eps = 1e-5f;
    d->activation = DK_ACT_NONE;
}

void dk_rms_norm_desc_init(dk_rms_norm_desc *d) {
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->form = DK_RMS_NORM_MEAN_SQUARE;
    d->eps = 1e-6f;
    d->activation = DK_ACT_NONE;
}

void dk_attention_desc_init(dk_attention_desc *d) {
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->scale = 0.0f;
}

/* ---- 5-D views: the backends take at most 4 dims (src/dims.c) ----
 * Each helper passes views of up to 4 dims straight to the backend entry and
 * lowers 5-D views to 4-D ones (merged dims, or a loop of calls on sub-views). */

static dk_status ops_unsupported5(dk_context *ctx, const char *op, const char *why) {
    return dk__fail(ctx, DK_ERR_UNSUPPORTED, "%s: %s", op, why);
}

/* Elementwise (add, activation, convert): any dims merge. */
static dk_status ops_add(dk_context *ctx, const char *op, float alpha, const dk_tensor *a, float beta,
                         const dk_tensor *b, dk_activation act, float out_scale, const dk_tensor *y) {
    const dk_tensor *v[3];
    dk_fold f;
    int64_t j;
    dk_status st = DK_OK;
    if (y->ndim <= 4) return ctx->ops->add(ctx, alpha, a, beta, b, act, out_scale, y);
    v[0] = y; v[1] = a; v[2] = b;
    if (!dk__fold_views(b ? 3 : 2, v, 0u, 1, &f)) return ops_unsupported5(ctx, op, "these 5-D views cannot be walked as 4-D views");
    for (j = 0; j < f.loops && st == DK_OK; j++) {
        dk_tensor yy = dk__fold_view(&f, 0, j), aa = dk__fold_view(&f, 1, j), bb;
        if (b) bb = dk__fold_view(&f, 2, j);
        st = ctx->ops->add(ctx, alpha, &aa, beta, b ? &bb : NULL, act, out_scale, &yy);
    }
    return st;
}

static dk_status ops_convert(dk_context *ctx, const dk_tensor *x, const dk_tensor *y) {
    const dk_tensor *v[2];
    dk_fold f;
    int64_t j;
    dk_status st = DK_OK;
    if (y->ndim <= 4) return ctx->ops->convert(ctx, x, y);
    v[0] = y; v[1] = x;
    if (!dk__fold_views(2, v, 0u, 1, &f))
        return ops_unsupported5(ctx, "dk_convert", "these 5-D views cannot be walked as 4-D views");
    for (j = 0; j < f.loops && st == DK_OK; j++) {
        dk_tensor yy = dk__fold_view(&f, 0, j), xx = dk__fold_view(&f, 1, j);
        st = ctx->ops->convert(ctx, &xx, &yy);
    }
    return st;
}

/* LayerNorm: the last dim stays a dim of its own. */
static dk_status ops_layer_norm(dk_context *ctx, const dk_layer_norm_desc *d, const dk_tensor *x,
                                const dk_tensor *gamma, const dk_tensor *beta, const dk_tensor *y) {
    const dk_tensor *v[2];
    dk_fold f;
    int64_t j;
    dk_status st = DK_OK;
    if (x->ndim <= 4) return ctx->ops->layer_norm(ctx, d, x, gamma, beta, y);
    v[0] = y; v[1] = x;
    if (!dk__fold_views(2, v, 1u << (x->ndim - 2), 1, &f))
        return ops_unsupported5(ctx, "dk_layer_norm", "these 5-D views cannot be walked as 4-D views");
    for (j = 0; j < f.loops && st == DK_OK; j++) {
        dk_tensor yy = dk__fold_view(&f, 0, j), xx = dk__fold_view(&f, 1, j);
        st = ctx->ops->layer_norm(ctx, d, &xx, gamma, beta, &yy);
    }
    return st;
}

/* GroupNorm of [N, C, T, H, W]: the statistics span T, H and W, so two of them
 * must merge (T with H, or H with W: any dense NCDHW or NDHWC view does). */
static dk_status ops_group_norm(dk_context *ctx, const char *op, const dk_group_norm_desc *d, int mode,
                                const dk_tensor *x, const dk_tensor *stats, const dk_tensor *gamma,
                                const dk_tensor *beta, const dk_tensor *y) {
    const dk_tensor *v[2];
    dk_fold f;
    if (x->ndim <= 4) return ctx->ops->group_norm(ctx, d, mode, x, stats, gamma, beta, y);
    v[0] = x; v[1] = y ? y : x;
    if (!dk__fold_views(2, v, 3u, 0, &f))
        return ops_unsupported5(ctx, op,
                                "a 5-D x (and y) must let T merge with H, or H with W (x.strides[2] == "
                                "x.shape[3] * x.strides[3], or x.strides[3] == x.shape[4] * x.strides[4]), as "
                                "any dense NCDHW or NDHWC tensor does");
    return ctx->ops->group_norm(ctx, d, mode, &f.v[0], stats, gamma, beta, y ? &f.v[1] : NULL);
}

/* Nearest resize of [N, C, T, H, W]: frames kept (per-frame 2-D resize, one call
 * with the frames as images), H and W kept (a time resize: T and H*W as the
 * image's rows and columns), else one call per output frame. */
static dk_status ops_upsample(dk_context *ctx, const dk_tensor *x, const dk_tensor *y) {
    const dk_tensor *v[2];
    dk_fold f;
    dk_tensor xs, ys;
    int64_t j;
    dk_status st = DK_OK;
    if (x->ndim <= 4) return ctx->ops->upsample_nearest(ctx, x, y);
    if (x->shape[2] == y->shape[2]) { /* [N, T, C, H, W]: N and T merge or loop */
        xs = dk__swap_dims(x, 1, 2);
        ys = dk__swap_dims(y, 1, 2);
        v[0] = &ys; v[1] = &xs;
        if (dk__fold_views(2, v, 0xEu, 1, &f)) {
            for (j = 0; j < f.loops && st == DK_OK; j++) {
                dk_tensor yy = dk__fold_view(&f, 0, j), xx = dk__fold_view(&f, 1, j);
                st = ctx->ops->upsample_nearest(ctx, &xx, &yy);
            }
            return st;
        }
    }
    if (x->shape[3] == y->shape[3] && x->shape[4] == y->shape[4]) {
        v[0] = y; v[1] = x;
        if (dk__fold_views(2, v, 0x7u, 0, &f)) return ctx->ops->upsample_nearest(ctx, &f.v[1], &f.v[0]);
    }
    for (j = 0; j < y->shape[2] && st == DK_OK; j++) {
        dk_tensor yy = dk__drop_dim(y, 2, j), xx = dk__drop_dim(x, 2, j * x->shape[2] / y->shape[2]);
        st = ctx->ops->upsample_nearest(ctx, &xx, &yy);
    }
    return st;
}

/* Attention with two batch dims [B, B2, H, N, D]: the batch dims merge or loop. */
static dk_status ops_attention(dk_context *ctx, const dk_attention_desc *d, const dk_tensor *q, const dk_tensor *k,
                               const dk_tensor *v, const dk_tensor *out) {
    const dk_tensor *w[4];
    dk_fold f;
    int64_t j;
    dk_status st = DK_OK;
    if (q->ndim <= 4) return ctx->ops->attention(ctx, d, q, k, v, out);
    w[0] = out; w[1] = q; w[2] = k; w[3] = v;
    if (!dk__fold_views(4, w, 0xEu, 1, &f))
        return ops_unsupported5(ctx, "dk_attention", "these 5-D views cannot be walked as 4-D views");
    for (j = 0; j < f.loops && st == DK_OK; j++) {
        dk_tensor oo = dk__fold_view(&f, 0, j), qq = dk__fold_view(&f, 1, j), kk = dk__fold_view(&f, 2, j),
                  vv = dk__fold_view(&f, 3, j);
        st = ctx->ops->attention(ctx, d, &qq, &kk, &vv, &oo);
    }
    return st;
}

/* Every op: no ctx -> thread error; the context's lock for the whole call (calls
 * of threads sharing a context run one at a time); validation; output marked
 * written; backend. */
#define OPS_BEGIN(name)                                                                 \
    if (!ctx) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, name ": ctx must not be NULL"); \
    dk__lock(ctx);                                                                      \
    dk__clear_error(ctx)

#define OPS_CALL(validate_call, out, backend_call)          \
    do {                                                    \
        dk_status ops_st = (validate_call);                 \
        if (ops_st == DK_OK) {                              \
            dk__buffer_written(ctx, (out)->buffer);         \
            ops_st = (backend_call);                        \
        }                                                   \
        return dk__unlock_ret(ctx, ops_st);                 \
    } while (0)

dk_status dk_conv2d(dk_context *ctx, const dk_conv2d_desc *desc, const dk_tensor *x, const dk_tensor *w,
                    const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y) {
    dk_conv2d_desc resolved; /* per-side padding resolved: what the backends get */
    OPS_BEGIN("dk_conv2d");
    OPS_CALL(dk__validate_conv2d(ctx, desc, x, w, bias, residual, y, &resolved), y,
             ctx->ops->conv2d(ctx, &resolved, x, w, bias, residual, y));
}

dk_status dk_conv_transpose2d(dk_context *ctx, const dk_conv_transpose2d_desc *desc, const dk_tensor *x,
                              const dk_tensor *w, const dk_tensor *bias, const dk_tensor *residual,
                              const dk_tensor *y) {
    OPS_BEGIN("dk_conv_transpose2d");
    OPS_CALL(dk__validate_conv_transpose2d(ctx, desc, x, w, bias, residual, y), y,
             ctx->ops->conv_transpose2d(ctx, desc, x, w, bias, residual, y));
}

/* Lowered in src/conv3d.c onto the backend's conv2d, convert and buffer_fill. */
dk_status dk_conv3d(dk_context *ctx, const dk_conv3d_desc *desc, const dk_tensor *x, const dk_tensor *w,
                    const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y) {
    OPS_BEGIN("dk_conv3d");
    OPS_CALL(dk__validate_conv3d(ctx, "dk_conv3d", desc, NULL, x, w, bias, residual, y), y,
             dk__conv3d(ctx, "dk_conv3d", desc, NULL, x, w, bias, residual, y, -1));
}

dk_status dk_conv3d_chunk(dk_context *ctx, const dk_conv3d_desc *desc, const dk_tensor *cache, const dk_tensor *x,
                          const dk_tensor *w, const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y) {
    OPS_BEGIN("dk_conv3d_chunk");
    OPS_CALL(dk__validate_conv3d(ctx, "dk_conv3d_chunk", desc, cache, x, w, bias, residual, y), y,
             dk__conv3d(ctx, "dk_conv3d_chunk", desc, cache, x, w, bias, residual, y, -1));
}

dk_status dk_matmul(dk_context *ctx, const dk_matmul_desc *desc, const dk_tensor *a, const dk_tensor *b,
                    const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y) {
    OPS_BEGIN("dk_matmul");
    OPS_CALL(dk__validate_matmul(ctx, "dk_matmul", desc, a, b, bias, residual, y), y,
             ctx->ops->matmul(ctx, desc, a, b, bias, residual, y));
}

dk_status dk_linear(dk_context *ctx, const dk_matmul_desc *desc, const dk_tensor *x, const dk_tensor *weight,
                    const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y) {
    dk_tensor wt;
    OPS_BEGIN("dk_linear");
    if (!weight)
        return dk__unlock_ret(ctx, dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "dk_linear: weight must not be NULL"));
    if (weight->ndim != 2)
        return dk__unlock_ret(ctx, dk__fail(ctx, DK_ERR_INVALID_ARGUMENT,
                                            "dk_linear: weight.ndim (=%d) must be 2 ([N, K])", (int)weight->ndim));
    /* weight [N, K] seen as b = W^T [K, N]: swap shape and strides. */
    wt = *weight;
    wt.shape[0] = weight->shape[1];
    wt.shape[1] = weight->shape[0];
    wt.strides[0] = weight->strides[1];
    wt.strides[1] = weight->strides[0];
    OPS_CALL(dk__validate_matmul(ctx, "dk_linear", desc, x, &wt, bias, residual, y), y,
             ctx->ops->matmul(ctx, desc, x, &wt, bias, residual, y));
}

dk_status dk_group_norm(dk_context *ctx, const dk_group_norm_desc *desc, const dk_tensor *x,
                        const dk_tensor *gamma, const dk_tensor *beta, const dk_tensor *y) {
    OPS_BEGIN("dk_group_norm");
    OPS_CALL(dk__validate_group_norm(ctx, "dk_group_norm", DK__GN_FULL, desc, x, NULL, gamma, beta, y), y,
             ops_group_norm(ctx, "dk_group_norm", desc, DK__GN_FULL, x, NULL, gamma, beta, y));
}

dk_status dk_group_norm_stats(dk_context *ctx, const dk_group_norm_desc *desc, const dk_tensor *x,
                              const dk_tensor *stats) {
    OPS_BEGIN("dk_group_norm_stats");
    OPS_CALL(dk__validate_group_norm(ctx, "dk_group_norm_stats", DK__GN_STATS, desc, x, stats, NULL, NULL, NULL),
             stats, ops_group_norm(ctx, "dk_group_norm_stats", desc, DK__GN_STATS, x, stats, NULL, NULL, NULL));
}

dk_status dk_group_norm_apply(dk_context *ctx, const dk_group_norm_desc *desc, const dk_tensor *x,
                              const dk_tensor *stats, const dk_tensor *gamma, const dk_tensor *beta,
                              const dk_tensor *y) {
    OPS_BEGIN("dk_group_norm_apply");
    OPS_CALL(dk__validate_group_norm(ctx, "dk_group_norm_apply", DK__GN_APPLY, desc, x, stats, gamma, beta, y), y,
             ops_group_norm(ctx, "dk_group_norm_apply", desc, DK__GN_APPLY, x, stats, gamma, beta, y));
}

void dk_group_norm_stats_merge(float *a, double count_a, const float *b, double count_b, int64_t ng) {
    int64_t i;
    double tot = count_a + count_b;
    if (!a || !b || ng <= 0 || count_b <= 0.0) return;
    if (count_a <= 0.0) {
        memcpy(a, b, (size_t)ng * 2 * sizeof *a);
        return;
    }
    for (i = 0; i < ng; i++) {
        double ma = a[2 * i], mb = b[2 * i], d = mb - ma;
        double m2 = (double)a[2 * i + 1] * count_a + (double)b[2 * i + 1] * count_b + d * d * count_a * count_b / tot;
        a[2 * i] = (float)(ma + d * count_b / tot);
        a[2 * i + 1] = (float)(m2 / tot);
    }
}

dk_status dk_layer_norm(dk_context *ctx, const dk_layer_norm_desc *desc, const dk_tensor *x,
                        const dk_tensor *gamma, const dk_tensor *beta, const dk_tensor *y) {
    OPS_BEGIN("dk_layer_norm");
    OPS_CALL(dk__validate_layer_norm(ctx, desc, x, gamma, beta, y), y,
             ops_layer_norm(ctx, desc, x, gamma, beta, y));
}

/* No lowering here: the backends take 2-5 dims and walk them through the plan
 * of src/norm_plan.c (dk__rms_plan), which folds the position dims itself. */
dk_status dk_rms_norm(dk_context *ctx, const dk_rms_norm_desc *desc, const dk_tensor *x, const dk_tensor *gamma,
                      const dk_tensor *beta, const dk_tensor *y) {
    OPS_BEGIN("dk_rms_norm");
    OPS_CALL(dk__validate_rms_norm(ctx, desc, x, gamma, beta, y), y, ctx->ops->rms_norm(ctx, desc, x, gamma, beta, y));
}

dk_status dk_attention(dk_context *ctx, const dk_attention_desc *desc, const dk_tensor *q, const dk_tensor *k,
                       const dk_tensor *v, const dk_tensor *out) {
    OPS_BEGIN("dk_attention");
    OPS_CALL(dk__validate_attention(ctx, desc, q, k, v, out), out,
             ops_attention(ctx, desc, q, k, v, out));
}

dk_status dk_activation_forward(dk_context *ctx, dk_activation act, const dk_tensor *x, const dk_tensor *y) {
    OPS_BEGIN("dk_activation_forward");
    OPS_CALL(dk__validate_activation(ctx, "dk_activation_forward", 1.0f, act, 1.0f, x, y), y,
             ops_add(ctx, "dk_activation_forward", 1.0f, x, 0.0f, NULL, act, 1.0f, y));
}

dk_status dk_activation_scaled(dk_context *ctx, float in_scale, dk_activation act, float out_scale,
                               const dk_tensor *x, const dk_tensor *y) {
    OPS_BEGIN("dk_activation_scaled");
    OPS_CALL(dk__validate_activation(ctx, "dk_activation_scaled", in_scale, act, out_scale, x, y), y,
             ops_add(ctx, "dk_activation_scaled", in_scale, x, 0.0f, NULL, act, out_scale, y));
}

dk_status dk_add(dk_context *ctx, float alpha, const dk_tensor *a, float beta, const dk_tensor *b,
                 dk_activation act, const dk_tensor *y) {
    OPS_BEGIN("dk_add");
    OPS_CALL(dk__validate_add(ctx, alpha, a, beta, b, act, y), y,
             ops_add(ctx, "dk_add", alpha, a, beta, b, act, 1.0f, y));
}

dk_status dk_upsample_nearest(dk_context *ctx, const dk_tensor *x, const dk_tensor *y) {
    OPS_BEGIN("dk_upsample_nearest");
    OPS_CALL(dk__validate_upsample_nearest(ctx, x, y), y, ops_upsample(ctx, x, y));
}

dk_status dk_convert(dk_context *ctx, const dk_tensor *x, const dk_tensor *y) {
    OPS_BEGIN("dk_convert");
    OPS_CALL(dk__validate_convert(ctx, x, y), y, ops_convert(ctx, x, y));
}

dk_status dk_prepare_weight(dk_context *ctx, dk_weight_use use, const dk_tensor *w) {
    dk_status st;
    OPS_BEGIN("dk_prepare_weight");
    st = dk__validate_prepare_weight(ctx, use, w);
    if (st == DK_OK && ctx->ops->prepare_weight) st = ctx->ops->prepare_weight(ctx, use, w);
    return dk__unlock_ret(ctx, st);
}

#undef OPS_BEGIN
#undef OPS_CALL
