/* Public op entry points: initialize descriptors, validate, mark outputs written,
 * dispatch to the context's backend table. */
#include "dk_internal.h"
#include "validate.h"
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

void dk_attention_desc_init(dk_attention_desc *d) {
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->scale = 0.0f;
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
             ctx->ops->group_norm(ctx, desc, DK__GN_FULL, x, NULL, gamma, beta, y));
}

dk_status dk_group_norm_stats(dk_context *ctx, const dk_group_norm_desc *desc, const dk_tensor *x,
                              const dk_tensor *stats) {
    OPS_BEGIN("dk_group_norm_stats");
    OPS_CALL(dk__validate_group_norm(ctx, "dk_group_norm_stats", DK__GN_STATS, desc, x, stats, NULL, NULL, NULL),
             stats, ctx->ops->group_norm(ctx, desc, DK__GN_STATS, x, stats, NULL, NULL, NULL));
}

dk_status dk_group_norm_apply(dk_context *ctx, const dk_group_norm_desc *desc, const dk_tensor *x,
                              const dk_tensor *stats, const dk_tensor *gamma, const dk_tensor *beta,
                              const dk_tensor *y) {
    OPS_BEGIN("dk_group_norm_apply");
    OPS_CALL(dk__validate_group_norm(ctx, "dk_group_norm_apply", DK__GN_APPLY, desc, x, stats, gamma, beta, y), y,
             ctx->ops->group_norm(ctx, desc, DK__GN_APPLY, x, stats, gamma, beta, y));
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
             ctx->ops->layer_norm(ctx, desc, x, gamma, beta, y));
}

dk_status dk_attention(dk_context *ctx, const dk_attention_desc *desc, const dk_tensor *q, const dk_tensor *k,
                       const dk_tensor *v, const dk_tensor *out) {
    OPS_BEGIN("dk_attention");
    OPS_CALL(dk__validate_attention(ctx, desc, q, k, v, out), out,
             ctx->ops->attention(ctx, desc, q, k, v, out));
}

dk_status dk_activation_forward(dk_context *ctx, dk_activation act, const dk_tensor *x, const dk_tensor *y) {
    OPS_BEGIN("dk_activation_forward");
    OPS_CALL(dk__validate_activation(ctx, "dk_activation_forward", 1.0f, act, 1.0f, x, y), y,
             ctx->ops->add(ctx, 1.0f, x, 0.0f, NULL, act, 1.0f, y));
}

dk_status dk_activation_scaled(dk_context *ctx, float in_scale, dk_activation act, float out_scale,
                               const dk_tensor *x, const dk_tensor *y) {
    OPS_BEGIN("dk_activation_scaled");
    OPS_CALL(dk__validate_activation(ctx, "dk_activation_scaled", in_scale, act, out_scale, x, y), y,
             ctx->ops->add(ctx, in_scale, x, 0.0f, NULL, act, out_scale, y));
}

dk_status dk_add(dk_context *ctx, float alpha, const dk_tensor *a, float beta, const dk_tensor *b,
                 dk_activation act, const dk_tensor *y) {
    OPS_BEGIN("dk_add");
    OPS_CALL(dk__validate_add(ctx, alpha, a, beta, b, act, y), y,
             ctx->ops->add(ctx, alpha, a, beta, b, act, 1.0f, y));
}

dk_status dk_upsample_nearest(dk_context *ctx, const dk_tensor *x, const dk_tensor *y) {
    OPS_BEGIN("dk_upsample_nearest");
    OPS_CALL(dk__validate_upsample_nearest(ctx, x, y), y, ctx->ops->upsample_nearest(ctx, x, y));
}

dk_status dk_convert(dk_context *ctx, const dk_tensor *x, const dk_tensor *y) {
    OPS_BEGIN("dk_convert");
    OPS_CALL(dk__validate_convert(ctx, x, y), y, ctx->ops->convert(ctx, x, y));
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
