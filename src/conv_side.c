/* dk_conv2d_side on backends (or cases) without a fused kernel: two convs,
 * the second reading y as its residual (see backends/backend.h). */
#include "dk_internal.h"
#include "../backends/backend.h"

dk_status dk__conv2d_side_composed(dk_context *ctx, const dk_conv2d_desc *desc, const dk_tensor *x,
                                   const dk_tensor *w, const dk_tensor *side, const dk_tensor *side_w,
                                   const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y) {
    dk_conv2d_desc d1, d2;
    dk_status st;
    if (desc->activation != DK_ACT_NONE)
        return dk__fail(ctx, DK_ERR_UNSUPPORTED,
                        "dk_conv2d_side (%s): an activation (%s) needs the fused kernel, which this case does "
                        "not take (README: dk_conv2d_side)",
                        ctx->ops->name, dk_activation_name(desc->activation));
    /* y = output_scale * (side_w . side + bias) + residual_scale * residual */
    dk_conv2d_desc_init(&d1);
    d1.output_scale = desc->output_scale;
    d1.residual_scale = desc->residual_scale;
    st = ctx->ops->conv2d(ctx, &d1, side, side_w, NULL, NULL, bias, residual, y);
    if (st != DK_OK) return st;
    /* y += output_scale * conv2d(x, w) */
    d2 = *desc;
    d2.residual_scale = 1.0f;
    return ctx->ops->conv2d(ctx, &d2, x, w, NULL, NULL, NULL, y, y);
}
