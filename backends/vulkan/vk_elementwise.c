/* Vulkan elementwise ops: add / activation (scaled), nearest upsample and
 * convert, through eltwise.comp (and transpose.comp for layout changes). */
#include "vk_ops_common.h"

#include <math.h>
#include <stdlib.h>

/* Four int32 walk-order values, widened. */
static void vkop_walk4(const int32_t *v32, int64_t v[4]) {
    int i;
    for (i = 0; i < 4; i++) v[i] = v32[i];
}

/* Whether the operand view (in the walk order of params->shape) is one dense run whose first element
 * starts a 16-byte vector of binding b (eltwise.comp's FLAT path). */
static int vkop_dense_walk(const dk_vk_eltwise_params *params, const dk_vk_view4 *view, const dk_vk_binding *b,
                           dk_dtype dt) {
    int64_t shape[4], s[4];
    vkop_walk4(params->shape, shape);
    vkop_walk4(view->stride, s);
    return dk__elt_dense_walk(shape, s, b->offset % 16 == 0 && ((uint64_t)view->offset * dk_dtype_size(dt)) % 16 == 0);
}

/* Whether a layout change (walk position k of a's unit stride) takes transpose.comp's
 * vector tiles: a copy (scales 1, no activation), a's dim k and y's dim 3
 * unit-stride and whole 16-byte vectors of their dtypes, every other stride a
 * whole number of vectors (where its size is not 1), 16-byte aligned starts.
 * Returns the MODE bits: DK_VK_TR_MODE_VEC16 for one 16-bit dtype (raw bits),
 * DK_VK_TR_MODE_VEC_CVT for any other pair (through floats), 0 for neither.  DIFKERN_VULKAN_TRANSPOSE16=0 keeps
 * the element tile (A/B timing). */
static int vkop_transpose16(const dk_vk_eltwise_params *params, int k, const dk_vk_binding *ba, const dk_vk_binding *by,
                            dk_dtype at, dk_dtype yt, dk_activation act, float alpha, float oscale) {
    const int32_t va = at == DK_F32 ? 4 : 8, vy = yt == DK_F32 ? 4 : 8;
    int64_t shape[4], as[4], ys[4];
    if (act != DK_ACT_NONE || alpha != 1.0f || oscale != 1.0f) return 0;
    vkop_walk4(params->shape, shape);
    vkop_walk4(params->a.stride, as);
    vkop_walk4(params->y.stride, ys);
    _Static_assert(DK_VK_TR_MODE_VEC16 == 1 && DK_VK_TR_MODE_VEC_CVT == 2, "dk__elt_transpose16's return values");
    return dk__elt_transpose16(shape, as, ys, k, at, yt,
                               ba->offset % 16 == 0 && by->offset % 16 == 0 && params->a.offset % va == 0 &&
                                   params->y.offset % vy == 0);
}

/* Whether an upsample takes eltwise.comp's vector path (params in the walk order, a's
 * H and W at params->src_h / src_w, ord the walk's dims): integer factors (at
 * most 64 output vectors per input vector), walk dim 3 unit-stride in a and y
 * with a's rows in whole 16-byte vectors of 8 elements, every other stride a
 * multiple of 8 elements (where its size is not 1), 16-byte aligned starts.
 * DIFKERN_VULKAN_UPSAMPLE_VEC=0 keeps the generic walk (A/B timing). */
static int vkop_upsample_vec(const dk_vk_eltwise_params *params, const int32_t ord[4], const dk_vk_binding *ba,
                             const dk_vk_binding *by, dk_dtype dt) {
    int64_t shape[4], a_ext[4], as[4], ys[4];
    int k;
    vkop_walk4(params->shape, shape);
    vkop_walk4(params->a.stride, as);
    vkop_walk4(params->y.stride, ys);
    for (k = 0; k < 4; k++) a_ext[k] = ord[k] == 2 ? params->src_h : ord[k] == 3 ? params->src_w : shape[k];
    return dk__elt_upsample_vec(shape, a_ext, as, ys,
                                ba->offset % 16 == 0 && by->offset % 16 == 0 &&
                                    ((uint64_t)params->a.offset * dk_dtype_size(dt)) % 16 == 0 &&
                                    ((uint64_t)params->y.offset * dk_dtype_size(dt)) % 16 == 0,
                                NULL);
}

/* mode 0: y = oscale * act(alpha * a) (b NULL; also dk_convert), 1: y = oscale *
 * act(alpha * a + beta * b), 2: nearest resize (see eltwise.comp). */
dk_status dk__vkop_eltwise(dk_context *ctx, const char *op, uint32_t mode, dk_activation act, float alpha,
                           const dk_tensor *a, float beta, const dk_tensor *b, float oscale, const dk_tensor *y) {
    dk_vk_binding bind[DK_VK_BINDINGS];
    dk_vk_eltwise_params params;
    uint32_t spec[DK_VK_SPEC];
    int64_t shape[4], strides[4], ashape[4];
    uint64_t total, groups, tiles = 0;
    uint32_t spec_mode = mode, shader = DK_VK_SH_ELTWISE;
    int i;
    dk_status st;
    memset(bind, 0, sizeof bind);
    memset(&params, 0, sizeof params);
    dk__vkop_view4(a, ashape, strides);
    dk__vkop_view4(y, shape, strides);
    total = (uint64_t)(shape[0] * shape[1] * shape[2] * shape[3]);
    if (total > VKOP_MAX_INDEX) return dk__vkop_too_big(ctx, op, "the element count", total);
    if (mode == DK_VK_EW_MODE_RESIZE && ((uint64_t)shape[2] * (uint64_t)ashape[2] > VKOP_MAX_INDEX ||
                      (uint64_t)shape[3] * (uint64_t)ashape[3] > VKOP_MAX_INDEX))
        return dk__vkop_too_big(ctx, op, "OH*H or OW*W", (uint64_t)shape[2] * (uint64_t)ashape[2]);
    for (i = 0; i < 4; i++) params.shape[i] = (int32_t)shape[i];
    st = dk__vkop_bind(ctx, op, "x", a, 0, &bind[0], &params.a);
    if (st == DK_OK && b) st = dk__vkop_bind(ctx, op, "b", b, 0, &bind[1], &params.b);
    if (st == DK_OK) st = dk__vkop_bind(ctx, op, "y", y, 1, &bind[4], &params.y);
    if (st != DK_OK) return st;
    params.alpha = alpha;
    params.beta = beta;
    params.out_scale = oscale;
    params.src_h = (int32_t)ashape[2];
    params.src_w = (int32_t)ashape[3];
    params.total = (int32_t)(uint32_t)total;
    {
        /* walk y's index space in its memory order (shape and strides permuted alike) */
        int32_t ord[4], *walked[4], k;
        uint32_t hw_pos = 0;
        int64_t v[4];
        walked[0] = params.shape;
        walked[1] = params.a.stride;
        walked[2] = params.b.stride;
        walked[3] = params.y.stride;
        dk__elt_order(shape, strides, ord);
        for (k = 0; k < 4; k++) {
            for (i = 0; i < 4; i++) v[i] = walked[k][i];
            dk__permute4(v, ord);
            for (i = 0; i < 4; i++) walked[k][i] = (int32_t)v[i];
        }
        /* the resize modes: the walk positions of H and W, specialized (eltwise.comp) */
        for (i = 0; i < 4; i++)
            hw_pos |= (uint32_t)(ord[i] == 2 ? i << DK_VK_EW_MODE_HPOS_SHIFT : ord[i] == 3 ? i << DK_VK_EW_MODE_WPOS_SHIFT : 0);
        if (mode == DK_VK_EW_MODE_RESIZE) spec_mode |= hw_pos;
        /* a layout change (a's unit-stride dim is not y's last), both dims at least a
         * tile wide: tiled transpose, transpose.comp (with fewer than 32 channels the
         * strided walk was as fast or faster on the H100) */
        for (i = 0; mode == DK_VK_EW_MODE_UNARY && params.shape[3] >= 32 && params.a.stride[3] != 1 && i < 3; i++)
            if (params.shape[i] >= 32 && params.a.stride[i] == 1) {
                const int vec = ctx->knobs.vulkan_transpose16 ? vkop_transpose16(&params, i, &bind[0], &bind[4], a->dtype,
                                                                                 y->dtype, act, alpha, oscale) : 0;
                /* vec: DK_VK_TR_MODE_VEC16 or DK_VK_TR_MODE_VEC_CVT */
                const int32_t tw = vec ? 64 : 32;
                shader = DK_VK_SH_TRANSPOSE;
                spec_mode = (uint32_t)vec | (uint32_t)i << DK_VK_TR_MODE_KPOS_SHIFT;
                tiles = (uint64_t)((params.shape[3] + tw - 1) / tw) *
                        (uint64_t)((params.shape[i] + tw - 1) / tw) * (uint64_t)params.shape[i == 0 ? 1 : 0] *
                        (uint64_t)params.shape[i == 2 ? 1 : 2];
            }
        if (tiles) {
            /* transpose.comp: its MODE says everything */
        } else if (mode == DK_VK_EW_MODE_RESIZE) {
            params.vector_path = ctx->knobs.vulkan_upsample_vec && vkop_upsample_vec(&params, ord, &bind[0], &bind[4], a->dtype);
            /* an invocation per 8 input elements */
            if (params.vector_path)
                total = total / (uint64_t)(shape[2] / ashape[2] * (shape[3] / ashape[3])) / 8;
        } else {
            params.vector_path = vkop_dense_walk(&params, &params.a, &bind[0], a->dtype) &&
                                 vkop_dense_walk(&params, &params.y, &bind[4], y->dtype) &&
                                 (!b || vkop_dense_walk(&params, &params.b, &bind[1], b->dtype));
            /* a same-dtype convert that is no dense run (a strided copy, as dk_conv3d's
             * staging of frames into every KT*Cin-channel pixel): the resize's vector
             * copy with all factors 1, where rows are whole vectors (raw bits) */
            if (!params.vector_path && mode == DK_VK_EW_MODE_UNARY && act == DK_ACT_NONE && alpha == 1.0f &&
                oscale == 1.0f && a->dtype == y->dtype && ctx->knobs.vulkan_upsample_vec &&
                vkop_upsample_vec(&params, ord, &bind[0], &bind[4], a->dtype)) {
                params.vector_path = 1;
                spec_mode = DK_VK_EW_MODE_RESIZE | hw_pos;
            }
        }
    }
    dk__vkop_spec(spec, &params.epilogue, a->dtype, act, 0, y->dtype, spec_mode);
    /* The flat path takes eight elements per invocation; a grid-stride loop covers
     * what 65535 workgroups do not. */
    groups = tiles ? tiles : ((params.vector_path && mode != DK_VK_EW_MODE_RESIZE ? (total + 7) / 8 : total) + 255) / 256;
    return dk__vk_dispatch(ctx, shader, spec, bind, &params, sizeof params, groups < 65535 ? groups : 65535,
                           1, 1);
}

dk_status dk__vk_add(dk_context *ctx, float alpha, const dk_tensor *a, float beta, const dk_tensor *b,
                     dk_activation act, float out_scale, const dk_tensor *y) {
    return dk__vkop_eltwise(ctx, b ? "dk_add" : "dk_activation_forward or dk_activation_scaled",
                            b ? DK_VK_EW_MODE_ADD : DK_VK_EW_MODE_UNARY, act, alpha, a, beta, b, out_scale, y);
}

dk_status dk__vk_upsample_nearest(dk_context *ctx, const dk_tensor *x, const dk_tensor *y) {
    return dk__vkop_eltwise(ctx, "dk_upsample_nearest", DK_VK_EW_MODE_RESIZE, DK_ACT_NONE, 1.0f, x, 0.0f, NULL, 1.0f, y);
}

dk_status dk__vk_convert(dk_context *ctx, const dk_tensor *x, const dk_tensor *y) {
    return dk__vkop_eltwise(ctx, "dk_convert", DK_VK_EW_MODE_UNARY, DK_ACT_NONE, 1.0f, x, 0.0f, NULL, 1.0f, y);
}
