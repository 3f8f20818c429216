/* Vulkan elementwise ops: add / activation (scaled), nearest upsample and
 * convert, through eltwise.comp (and transpose.comp for layout changes). */
#include "vk_ops_common.h"

#include <math.h>
#include <stdlib.h>

/* The four walk-order values at p[slot..slot+3], widened. */
static void vkop_walk4(const int32_t *p, int slot, int64_t v[4]) {
    int i;
    for (i = 0; i < 4; i++) v[i] = p[slot + i];
}

/* Whether the operand whose strides and element offset are at p[slot..slot+4] (in
 * the walk order of p[DK_VKP_EW_SHAPE..]) is one dense run whose first element
 * starts a 16-byte vector of binding b (eltwise.comp's FLAT path). */
static int vkop_dense_walk(const int32_t *p, int slot, const dk_vk_binding *b, dk_dtype dt) {
    int64_t shape[4], s[4];
    vkop_walk4(p, DK_VKP_EW_SHAPE, shape);
    vkop_walk4(p, slot, s);
    return dk__elt_dense_walk(shape, s, b->offset % 16 == 0 && ((uint64_t)p[slot + 4] * dk_dtype_size(dt)) % 16 == 0);
}

/* Whether a layout change (walk position k of a's unit stride) takes transpose.comp's
 * vector tiles: a copy (scales 1, no activation), a's dim k and y's dim 3
 * unit-stride and whole 16-byte vectors of their dtypes, every other stride a
 * whole number of vectors (where its size is not 1), 16-byte aligned starts.
 * Returns the MODE bits: 1 for one 16-bit dtype (raw bits), 2 for any other
 * pair (through floats), 0 for neither.  DIFKERN_VULKAN_TRANSPOSE16=0 keeps
 * the element tile (A/B timing). */
static int vkop_transpose16(const int32_t *p, int k, const dk_vk_binding *ba, const dk_vk_binding *by, dk_dtype at,
                            dk_dtype yt, dk_activation act, float alpha, float oscale) {
    const int32_t va = at == DK_F32 ? 4 : 8, vy = yt == DK_F32 ? 4 : 8;
    int64_t shape[4], as[4], ys[4];
    if (act != DK_ACT_NONE || alpha != 1.0f || oscale != 1.0f) return 0;
    vkop_walk4(p, DK_VKP_EW_SHAPE, shape);
    vkop_walk4(p, DK_VKP_EW_AS, as);
    vkop_walk4(p, DK_VKP_EW_YS, ys);
    return dk__elt_transpose16(shape, as, ys, k, at, yt,
                               ba->offset % 16 == 0 && by->offset % 16 == 0 && p[DK_VKP_EW_AS + 4] % va == 0 &&
                                   p[DK_VKP_EW_YS + 4] % vy == 0);
}

/* Whether an upsample takes eltwise.comp's vector path (p in the walk order, a's
 * H and W at p[DK_VKP_EW_SRCH/SRCW], ord the walk's dims): integer factors (at
 * most 64 output vectors per input vector), walk dim 3 unit-stride in a and y
 * with a's rows in whole 16-byte vectors of 8 elements, every other stride a
 * multiple of 8 elements (where its size is not 1), 16-byte aligned starts.
 * DIFKERN_VULKAN_UPSAMPLE_VEC=0 keeps the generic walk (A/B timing). */
static int vkop_upsample_vec(const int32_t *p, const int32_t ord[4], const dk_vk_binding *ba,
                             const dk_vk_binding *by, dk_dtype dt) {
    int64_t shape[4], a_ext[4], as[4], ys[4];
    int k;
    vkop_walk4(p, DK_VKP_EW_SHAPE, shape);
    vkop_walk4(p, DK_VKP_EW_AS, as);
    vkop_walk4(p, DK_VKP_EW_YS, ys);
    for (k = 0; k < 4; k++) a_ext[k] = ord[k] == 2 ? p[DK_VKP_EW_SRCH] : ord[k] == 3 ? p[DK_VKP_EW_SRCW] : shape[k];
    return dk__elt_upsample_vec(shape, a_ext, as, ys,
                                ba->offset % 16 == 0 && by->offset % 16 == 0 &&
                                    ((uint64_t)p[DK_VKP_EW_AS + 4] * dk_dtype_size(dt)) % 16 == 0 &&
                                    ((uint64_t)p[DK_VKP_EW_YS + 4] * dk_dtype_size(dt)) % 16 == 0,
                                NULL);
}

/* mode 0: y = oscale * act(alpha * a) (b NULL; also dk_convert), 1: y = oscale *
 * act(alpha * a + beta * b), 2: nearest resize (see eltwise.comp). */
dk_status dk__vkop_eltwise(dk_context *ctx, const char *op, uint32_t mode, dk_activation act, float alpha,
                           const dk_tensor *a, float beta, const dk_tensor *b, float oscale, const dk_tensor *y) {
    dk_vk_binding bind[DK_VK_BINDINGS];
    int32_t p[DK_VKP_SLOT_INTS];
    uint32_t spec[DK_VK_SPEC];
    int64_t shape[4], strides[4], ashape[4];
    uint64_t total, groups, tiles = 0;
    uint32_t spec_mode = mode, shader = DK_VK_SH_ELTWISE;
    int i;
    dk_status st;
    memset(bind, 0, sizeof bind);
    memset(p, 0, sizeof p);
    dk__vkop_view4(a, ashape, strides);
    dk__vkop_view4(y, shape, strides);
    total = (uint64_t)(shape[0] * shape[1] * shape[2] * shape[3]);
    if (total > VKOP_MAX_INDEX) return dk__vkop_too_big(ctx, op, "the element count", total);
    if (mode == 2 && ((uint64_t)shape[2] * (uint64_t)ashape[2] > VKOP_MAX_INDEX ||
                      (uint64_t)shape[3] * (uint64_t)ashape[3] > VKOP_MAX_INDEX))
        return dk__vkop_too_big(ctx, op, "OH*H or OW*W", (uint64_t)shape[2] * (uint64_t)ashape[2]);
    for (i = 0; i < 4; i++) p[DK_VKP_EW_SHAPE + i] = (int32_t)shape[i];
    st = dk__vkop_bind(ctx, op, "x", a, 0, &bind[0], &p[DK_VKP_EW_AS]);
    if (st == DK_OK && b) st = dk__vkop_bind(ctx, op, "b", b, 0, &bind[1], &p[DK_VKP_EW_BS]);
    if (st == DK_OK) st = dk__vkop_bind(ctx, op, "y", y, 1, &bind[4], &p[DK_VKP_EW_YS]);
    if (st != DK_OK) return st;
    p[DK_VKP_EW_ALPHA] = dk__vkop_fbits(alpha);
    p[DK_VKP_EW_BETA] = dk__vkop_fbits(beta);
    p[DK_VKP_EW_OSCALE] = dk__vkop_fbits(oscale);
    p[DK_VKP_EW_SRCH] = (int32_t)ashape[2];
    p[DK_VKP_EW_SRCW] = (int32_t)ashape[3];
    p[DK_VKP_EW_TOTAL] = (int32_t)(uint32_t)total;
    {
        /* walk y's index space in its memory order (shape and strides permuted alike) */
        int32_t ord[4], slots[4] = {DK_VKP_EW_SHAPE, DK_VKP_EW_AS, DK_VKP_EW_BS, DK_VKP_EW_YS}, k;
        int64_t v[4];
        dk__elt_order(shape, strides, ord);
        for (k = 0; k < 4; k++) {
            for (i = 0; i < 4; i++) v[i] = p[slots[k] + i];
            dk__permute4(v, ord);
            for (i = 0; i < 4; i++) p[slots[k] + i] = (int32_t)v[i];
        }
        /* upsample: the walk positions of H and W, specialized (eltwise.comp) */
        for (i = 0; mode == 2 && i < 4; i++) spec_mode |= (uint32_t)(ord[i] == 2 ? i << 2 : ord[i] == 3 ? i << 4 : 0);
        /* a layout change (a's unit-stride dim is not y's last), both dims at least a
         * tile wide: tiled transpose, transpose.comp (with fewer than 32 channels the
         * strided walk was as fast or faster on the H100) */
        for (i = 0; mode == 0 && p[DK_VKP_EW_SHAPE + 3] >= 32 && p[DK_VKP_EW_AS + 3] != 1 && i < 3; i++)
            if (p[DK_VKP_EW_SHAPE + i] >= 32 && p[DK_VKP_EW_AS + i] == 1) {
                const int vec = ctx->knobs.vulkan_transpose16 ? vkop_transpose16(p, i, &bind[0], &bind[4], a->dtype,
                                                                                 y->dtype, act, alpha, oscale) : 0;
                /* vec: transpose.comp's MODE bit 0 or 1 */
                const int32_t tw = vec ? 64 : 32;
                shader = DK_VK_SH_TRANSPOSE;
                spec_mode = (uint32_t)vec | (uint32_t)i << 2;
                tiles = (uint64_t)((p[DK_VKP_EW_SHAPE + 3] + tw - 1) / tw) *
                        (uint64_t)((p[DK_VKP_EW_SHAPE + i] + tw - 1) / tw) * (uint64_t)p[DK_VKP_EW_SHAPE + (i == 0 ? 1 : 0)] *
                        (uint64_t)p[DK_VKP_EW_SHAPE + (i == 2 ? 1 : 2)];
            }
        if (tiles) {
            /* transpose.comp: its MODE says everything */
        } else if (mode == 2) {
            p[DK_VKP_EW_FLAT] = ctx->knobs.vulkan_upsample_vec && vkop_upsample_vec(p, ord, &bind[0], &bind[4], a->dtype);
            /* an invocation per 8 input elements */
            if (p[DK_VKP_EW_FLAT])
                total = total / (uint64_t)(shape[2] / ashape[2] * (shape[3] / ashape[3])) / 8;
        } else {
            p[DK_VKP_EW_FLAT] = vkop_dense_walk(p, DK_VKP_EW_AS, &bind[0], a->dtype) &&
                                vkop_dense_walk(p, DK_VKP_EW_YS, &bind[4], y->dtype) &&
                                (!b || vkop_dense_walk(p, DK_VKP_EW_BS, &bind[1], b->dtype));
        }
    }
    dk__vkop_spec(spec, p, a->dtype, act, 0, y->dtype, spec_mode);
    /* The flat path takes eight elements per invocation; a grid-stride loop covers
     * what 65535 workgroups do not. */
    groups = tiles ? tiles : ((p[DK_VKP_EW_FLAT] && mode != 2 ? (total + 7) / 8 : total) + 255) / 256;
    return dk__vk_dispatch(ctx, shader, spec, bind, p, DK_VKP_SLOT_INTS, groups < 65535 ? groups : 65535,
                           1, 1);
}

dk_status dk__vk_add(dk_context *ctx, float alpha, const dk_tensor *a, float beta, const dk_tensor *b,
                     dk_activation act, float out_scale, const dk_tensor *y) {
    return dk__vkop_eltwise(ctx, b ? "dk_add" : "dk_activation_forward or dk_activation_scaled", b ? 1u : 0u, act,
                            alpha, a, beta, b, out_scale, y);
}

dk_status dk__vk_upsample_nearest(dk_context *ctx, const dk_tensor *x, const dk_tensor *y) {
    return dk__vkop_eltwise(ctx, "dk_upsample_nearest", 2, DK_ACT_NONE, 1.0f, x, 0.0f, NULL, 1.0f, y);
}

dk_status dk__vk_convert(dk_context *ctx, const dk_tensor *x, const dk_tensor *y) {
    return dk__vkop_eltwise(ctx, "dk_convert", 0, DK_ACT_NONE, 1.0f, x, 0.0f, NULL, 1.0f, y);
}
