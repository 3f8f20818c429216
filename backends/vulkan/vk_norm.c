/* Vulkan GroupNorm (whole, or split into stats / merge / apply) and LayerNorm,
 * and dk_release_scratch (the statistics scratch and the conv staging
 * buffers). */
#include "vk_ops_common.h"

#include <math.h>
#include <stdlib.h>

/* ----------------------------------------------------------- group_norm */

/* dk_release_scratch: the GroupNorm scratch and the conv staging buffers, freed
 * at once after the queued work (nothing submitted can use them any more). */
dk_status dk__vk_release_scratch(dk_context *ctx) {
    dk_vk_state *s = dk__vk(ctx);
    dk_vk_buf *bufs[4];
    dk_status st = dk__vk_wait_all(ctx);
    int i;
    if (st != DK_OK) return st;
    bufs[0] = &s->scratch;
    for (i = 0; i < 3; i++) bufs[i + 1] = &s->stage[i];
    for (i = 0; i < 4; i++) {
        if (!bufs[i]->block) continue;
        dk__mem_account(ctx, -(int64_t)bufs[i]->size);
        dk__vk_release(ctx, bufs[i]);
        bufs[i]->block = NULL;
    }
    return DK_OK;
}

/* The statistics scratch buffer. */
static dk_status vkop_scratch(dk_context *ctx, uint64_t bytes) {
    return dk__vkop_grow(ctx, &dk__vk(ctx)->scratch, bytes < 65536 ? 65536 : bytes);
}

/* GroupNorm vector mode (DK_VKP_GN_COEF): 1 when x or y (4-D strides ps, element
 * offset ps[4], binding b) is dense NCHW, 2 dense NHWC, in 16-byte vectors of vw
 * elements that never straddle a channel (NCHW) or an image (NHWC); else 0. */
static uint32_t vkop_gn_mode(const int32_t *ps, const dk_vk_binding *b, const int64_t *shape, int64_t vw) {
    int64_t strides[4];
    int i;
    for (i = 0; i < 4; i++) strides[i] = ps[i];
    /* a 256-invocation workgroup holds a pixel */
    return (uint32_t)dk__gn_vector_mode(b->offset % 16 == 0 && ps[4] % vw == 0, shape, strides, vw, 256);
}

dk_status dk__vk_group_norm(dk_context *ctx, const dk_group_norm_desc *d, int gn_mode, const dk_tensor *x,
                            const dk_tensor *stats, const dk_tensor *gamma, const dk_tensor *beta, const dk_tensor *y) {
    const char *op = gn_mode == DK__GN_STATS ? "dk_group_norm_stats" : gn_mode == DK__GN_APPLY ? "dk_group_norm_apply"
                                                                                              : "dk_group_norm";
    dk_vk_state *s = dk__vk(ctx);
    dk_vk_binding bind[DK_VK_BINDINGS];
    int32_t p[DK_VKP_SLOT_INTS], t[5];
    uint32_t spec[DK_VK_SPEC], flags = 0, mode;
    int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], w = x->shape[3], vw = 16 / (int64_t)dk_dtype_size(x->dtype);
    uint64_t len = (uint64_t)(c / d->groups * h * w), total = (uint64_t)(n * c * h * w), ng = (uint64_t)(n * d->groups);
    uint64_t chunks, chunk, rows, coef, scr_floats, work;
    dk_status st;
    if (total > VKOP_MAX_INDEX) return dk__vkop_too_big(ctx, op, "the element count", total);
    if (ng > 65535) return dk__vkop_too_big(ctx, op, "N*groups (grid rows)", ng);
    memset(bind, 0, sizeof bind);
    memset(p, 0, sizeof p);
    st = dk__vkop_bind(ctx, op, "x", x, 0, &bind[0], &p[DK_VKP_GN_XS]);
    if (st == DK_OK && gamma) st = dk__vkop_bind(ctx, op, "gamma", gamma, 0, &bind[1], t), p[DK_VKP_GN_GAMMA] = t[3],
                              p[DK_VKP_GN_GAMMA + 1] = t[4], flags |= 1;
    if (st == DK_OK && beta) st = dk__vkop_bind(ctx, op, "beta", beta, 0, &bind[2], t), p[DK_VKP_GN_BETA] = t[3],
                             p[DK_VKP_GN_BETA + 1] = t[4], flags |= 2;
    if (st == DK_OK && y) st = dk__vkop_bind(ctx, op, "y", y, 1, &bind[4], &p[DK_VKP_GN_YS]);
    if (st == DK_OK && stats) {
        /* split GroupNorm: the finalize pass writes (4) or reads (8) the statistics */
        st = dk__vkop_bind(ctx, op, "stats", stats, gn_mode == DK__GN_STATS, &bind[3], t);
        p[DK_VKP_GN_STATS] = t[4];
        flags |= gn_mode == DK__GN_STATS ? 4u : 8u;
    }
    if (st != DK_OK) return st;
    mode = vkop_gn_mode(&p[DK_VKP_GN_XS], &bind[0], x->shape, vw);
    if ((y && mode != vkop_gn_mode(&p[DK_VKP_GN_YS], &bind[4], y->shape, vw)) || (mode == 2 && n > 65535)) mode = 0;
    /* Chunks of about 8 K elements per stats workgroup (32 per invocation), at
     * most 4096 per group (mode 2: per image, all groups at once, whole pixels, of
     * 32 K elements: a workgroup's merge is paid per chunk). */
    if (mode == 2) {
        rows = 256 / (uint64_t)(c / vw);
        chunks = ((uint64_t)(h * w) * (uint64_t)c + 32767) / 32768;
        if (chunks > 4096) chunks = 4096;
        chunk = ((uint64_t)(h * w) + chunks - 1) / chunks;
        chunk = (chunk + rows - 1) / rows * rows;
        chunks = ((uint64_t)(h * w) + chunk - 1) / chunk;
    } else {
        uint64_t units = mode == 1 ? len / (uint64_t)vw : len;
        chunks = (len + 8191) / 8192;
        if (chunks > 4096) chunks = 4096;
        chunk = (units + chunks - 1) / chunks;
        chunks = (units + chunk - 1) / chunk;
    }
    coef = (ng * chunks * 3 + 3) / 4 * 4;
    scr_floats = coef + (uint64_t)(n * c) * 4;
    st = vkop_scratch(ctx, scr_floats * 4);
    if (st != DK_OK) return st;
    p[DK_VKP_GN_N] = (int32_t)n;
    p[DK_VKP_GN_C] = (int32_t)c;
    p[DK_VKP_GN_H] = (int32_t)h;
    p[DK_VKP_GN_W] = (int32_t)w;
    p[DK_VKP_GN_G] = d->groups;
    p[DK_VKP_GN_CHUNKS] = (int32_t)chunks;
    p[DK_VKP_GN_CHUNK] = (int32_t)chunk;
    p[DK_VKP_GN_EPS] = dk__vkop_fbits(d->eps);
    p[DK_VKP_GN_CFAST] = c > 1 && (w == 1 || x->strides[1] < x->strides[3]);
    p[DK_VKP_GN_SCR] = 0;
    p[DK_VKP_GN_COEF] = (int32_t)coef;
    work = mode == 0 ? total : total / (uint64_t)vw;
    p[DK_VKP_GN_TOTAL] = (int32_t)(uint32_t)work;
    /* DT2: gamma's and beta's dtype (f32 with 16-bit x, or x's) */
    dk__vkop_spec(spec, p, x->dtype, d->activation, flags, gamma ? gamma->dtype : beta ? beta->dtype : x->dtype, mode);
    {
        /* pass 1 reads x; pass 2 the partials, gamma and beta; pass 3 x and the coefficients. */
        dk_vk_binding b1[DK_VK_BINDINGS], b2[DK_VK_BINDINGS];
        memset(b1, 0, sizeof b1);
        b1[0] = bind[0];
        b1[5].buf = &s->scratch;
        b1[5].offset = s->scratch.base;
        b1[5].range = scr_floats * 4;
        b1[5].write = 1;
        memcpy(b2, bind, sizeof b2);
        b2[0].buf = NULL;
        b2[4].buf = NULL;
        b2[5] = b1[5];
        bind[5] = b1[5];
        bind[5].write = 0;
        bind[1].buf = bind[2].buf = bind[3].buf = NULL;
        if (gn_mode != DK__GN_APPLY)
            st = dk__vk_dispatch(ctx, DK_VK_SH_GN_STATS, spec, b1, p, DK_VKP_SLOT_INTS, chunks,
                                 (uint32_t)(mode == 2 ? (uint64_t)n : ng), 1);
        if (st == DK_OK) st = dk__vk_dispatch(ctx, DK_VK_SH_GN_FINAL, spec, b2, p, DK_VKP_SLOT_INTS, ng, 1, 1);
        if (st == DK_OK && gn_mode != DK__GN_STATS)
            st = mode == 2 ? dk__vk_dispatch(ctx, DK_VK_SH_GN_NORM, spec, bind, p, DK_VKP_SLOT_INTS, chunks, (uint32_t)n, 1)
                           : dk__vk_dispatch(ctx, DK_VK_SH_GN_NORM, spec, bind, p, DK_VKP_SLOT_INTS,
                                             (work + 255) / 256 < 65535 ? (work + 255) / 256 : 65535, 1, 1);
    }
    return st;
}

/* ----------------------------------------------------------- layer_norm */

dk_status dk__vk_layer_norm(dk_context *ctx, const dk_layer_norm_desc *d, const dk_tensor *x, const dk_tensor *gamma,
                            const dk_tensor *beta, const dk_tensor *y) {
    const char *op = "dk_layer_norm";
    dk_vk_binding bind[DK_VK_BINDINGS];
    int32_t p[DK_VKP_SLOT_INTS], t[5];
    uint32_t spec[DK_VK_SPEC], flags = 0;
    int64_t shape[4], strides[4];
    uint64_t rows;
    dk_status st;
    memset(bind, 0, sizeof bind);
    memset(p, 0, sizeof p);
    dk__vkop_view4(x, shape, strides);
    rows = (uint64_t)(shape[0] * shape[1] * shape[2]);
    if (rows > VKOP_MAX_INDEX) return dk__vkop_too_big(ctx, op, "the row count", rows);
    st = dk__vkop_bind(ctx, op, "x", x, 0, &bind[0], &p[DK_VKP_LN_XS]);
    if (st == DK_OK && gamma) st = dk__vkop_bind(ctx, op, "gamma", gamma, 0, &bind[1], t), p[DK_VKP_LN_GAMMA] = t[3],
                              p[DK_VKP_LN_GAMMA + 1] = t[4], flags |= 1;
    if (st == DK_OK && beta) st = dk__vkop_bind(ctx, op, "beta", beta, 0, &bind[2], t), p[DK_VKP_LN_BETA] = t[3],
                             p[DK_VKP_LN_BETA + 1] = t[4], flags |= 2;
    if (st == DK_OK) st = dk__vkop_bind(ctx, op, "y", y, 1, &bind[4], &p[DK_VKP_LN_YS]);
    if (st != DK_OK) return st;
    p[DK_VKP_LN_ROWS] = (int32_t)(uint32_t)rows;
    p[DK_VKP_LN_R1] = (int32_t)shape[1];
    p[DK_VKP_LN_R2] = (int32_t)shape[2];
    p[DK_VKP_LN_D] = (int32_t)shape[3];
    p[DK_VKP_LN_EPS] = dk__vkop_fbits(d->eps);
    dk__vkop_spec(spec, p, x->dtype, d->activation, flags, x->dtype, 0);
    return dk__vk_dispatch(ctx, DK_VK_SH_LAYER_NORM, spec, bind, p, DK_VKP_SLOT_INTS, rows, 1, 1);
}
