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

/* The optional per-channel gamma and beta of a norm at bindings 1 and 2. */
static dk_status vkop_bind_affine(dk_context *ctx, const char *op, const dk_tensor *gamma, const dk_tensor *beta,
                                  dk_vk_binding *bind, dk_vk_view1 *g, dk_vk_view1 *b, uint32_t *flags) {
    dk_vk_view4 bound;
    dk_status st = DK_OK;
    if (gamma && (st = dk__vkop_bind(ctx, op, "gamma", gamma, 0, &bind[1], &bound)) == DK_OK) {
        *g = dk__vkop_view1(&bound);
        *flags |= DK_VK_FLAG_GAMMA;
    }
    if (st == DK_OK && beta && (st = dk__vkop_bind(ctx, op, "beta", beta, 0, &bind[2], &bound)) == DK_OK) {
        *b = dk__vkop_view1(&bound);
        *flags |= DK_VK_FLAG_BETA;
    }
    return st;
}

/* GroupNorm vector mode: DK_VK_GN_MODE_NCHW when x or y (view ps, binding b) is
 * dense NCHW, DK_VK_GN_MODE_NHWC dense NHWC, in 16-byte vectors of vw elements
 * that never straddle a channel (NCHW) or an image (NHWC); else
 * DK_VK_GN_MODE_STRIDED (the values dk__gn_vector_mode returns). */
static uint32_t vkop_gn_mode(const dk_vk_view4 *ps, const dk_vk_binding *b, const int64_t *shape, int64_t vw) {
    int64_t strides[4];
    int i;
    _Static_assert(DK_VK_GN_MODE_STRIDED == 0 && DK_VK_GN_MODE_NCHW == 1 && DK_VK_GN_MODE_NHWC == 2,
                   "dk__gn_vector_mode's return values");
    for (i = 0; i < 4; i++) strides[i] = ps->stride[i];
    /* a 256-invocation workgroup holds a pixel */
    return (uint32_t)dk__gn_vector_mode(b->offset % 16 == 0 && ps->offset % vw == 0, shape, strides, vw, 256);
}

dk_status dk__vk_group_norm(dk_context *ctx, const dk_group_norm_desc *d, int gn_mode, const dk_tensor *x,
                            const dk_tensor *stats, const dk_tensor *gamma, const dk_tensor *beta, const dk_tensor *y) {
    const char *op = gn_mode == DK__GN_STATS ? "dk_group_norm_stats" : gn_mode == DK__GN_APPLY ? "dk_group_norm_apply"
                                                                                              : "dk_group_norm";
    dk_vk_state *s = dk__vk(ctx);
    dk_vk_binding bind[DK_VK_BINDINGS];
    dk_vk_group_norm_params params;
    dk_vk_view4 bound;
    uint32_t spec[DK_VK_SPEC], flags = 0, mode;
    int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], w = x->shape[3], vw = 16 / (int64_t)dk_dtype_size(x->dtype);
    uint64_t total = (uint64_t)(n * c * h * w), ng = (uint64_t)(n * d->groups);
    uint64_t coef, scr_floats, work;
    dk_gn_split sp;
    dk_status st;
    if (total > VKOP_MAX_INDEX) return dk__vkop_too_big(ctx, op, "the element count", total);
    if (ng > 65535) return dk__vkop_too_big(ctx, op, "N*groups (grid rows)", ng);
    memset(bind, 0, sizeof bind);
    memset(&params, 0, sizeof params);
    st = dk__vkop_bind(ctx, op, "x", x, 0, &bind[0], &params.x);
    if (st == DK_OK) st = vkop_bind_affine(ctx, op, gamma, beta, bind, &params.gamma, &params.beta, &flags);
    if (st == DK_OK && y) st = dk__vkop_bind(ctx, op, "y", y, 1, &bind[4], &params.y);
    if (st == DK_OK && stats) {
        /* split GroupNorm: the finalize pass writes or reads the statistics */
        st = dk__vkop_bind(ctx, op, "stats", stats, gn_mode == DK__GN_STATS, &bind[3], &bound);
        params.stats_offset = bound.offset;
        flags |= gn_mode == DK__GN_STATS ? DK_VK_FLAG_GN_STATS_OUT : DK_VK_FLAG_GN_STATS_IN;
    }
    if (st != DK_OK) return st;
    mode = vkop_gn_mode(&params.x, &bind[0], x->shape, vw);
    if ((y && mode != vkop_gn_mode(&params.y, &bind[4], y->shape, vw)) || (mode == DK_VK_GN_MODE_NHWC && n > 65535))
        mode = DK_VK_GN_MODE_STRIDED;
    {
        const int64_t shape4[4] = {n, c, h, w};
        dk__gn_split((int)mode, shape4, d->groups, vw, 256, &sp);
    }
    coef = (ng * (uint64_t)sp.chunks * 3 + 3) / 4 * 4;
    scr_floats = coef + (uint64_t)(n * c) * 4;
    st = vkop_scratch(ctx, scr_floats * 4);
    if (st != DK_OK) return st;
    params.n = (int32_t)n;
    params.c = (int32_t)c;
    params.h = (int32_t)h;
    params.w = (int32_t)w;
    params.groups = d->groups;
    params.chunks = (int32_t)sp.chunks;
    params.chunk = (int32_t)sp.chunk;
    params.apply_chunks = (int32_t)sp.apply_chunks;
    params.apply_chunk = (int32_t)sp.apply_chunk;
    params.eps = d->eps;
    params.channels_fastest = c > 1 && (w == 1 || x->strides[1] < x->strides[3]);
    params.partials_offset = 0;
    params.coef_offset = (int32_t)coef;
    work = mode == DK_VK_GN_MODE_STRIDED ? total : total / (uint64_t)vw;
    params.total = (int32_t)(uint32_t)work;
    /* DT2: gamma's and beta's dtype (f32 with 16-bit x, or x's) */
    dk__vkop_spec(spec, &params.epilogue, x->dtype, d->activation, flags, gamma ? gamma->dtype : beta ? beta->dtype : x->dtype, mode);
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
            st = dk__vk_dispatch(ctx, DK_VK_SH_GN_STATS, spec, b1, &params, sizeof params, (uint64_t)sp.chunks,
                                 (uint32_t)(mode == DK_VK_GN_MODE_NHWC ? (uint64_t)n : ng), 1);
        if (st == DK_OK) st = dk__vk_dispatch(ctx, DK_VK_SH_GN_FINAL, spec, b2, &params, sizeof params, ng, 1, 1);
        if (st == DK_OK && gn_mode != DK__GN_STATS)
            st = mode == DK_VK_GN_MODE_NHWC ? dk__vk_dispatch(ctx, DK_VK_SH_GN_NORM, spec, bind, &params, sizeof params, (uint64_t)sp.apply_chunks, (uint32_t)n, 1)
                           : dk__vk_dispatch(ctx, DK_VK_SH_GN_NORM, spec, bind, &params, sizeof params,
                                             (work + 255) / 256 < 65535 ? (work + 255) / 256 : 65535, 1, 1);
    }
    return st;
}

/* ----------------------------------------------------------- layer_norm */

dk_status dk__vk_layer_norm(dk_context *ctx, const dk_layer_norm_desc *d, const dk_tensor *x, const dk_tensor *gamma,
                            const dk_tensor *beta, const dk_tensor *y) {
    const char *op = "dk_layer_norm";
    dk_vk_binding bind[DK_VK_BINDINGS];
    dk_vk_layer_norm_params params;
    uint32_t spec[DK_VK_SPEC], flags = 0;
    int64_t shape[4], strides[4];
    uint64_t rows;
    dk_status st;
    memset(bind, 0, sizeof bind);
    memset(&params, 0, sizeof params);
    dk__vkop_view4(x, shape, strides);
    rows = (uint64_t)(shape[0] * shape[1] * shape[2]);
    if (rows > VKOP_MAX_INDEX) return dk__vkop_too_big(ctx, op, "the row count", rows);
    st = dk__vkop_bind(ctx, op, "x", x, 0, &bind[0], &params.x);
    if (st == DK_OK) st = vkop_bind_affine(ctx, op, gamma, beta, bind, &params.gamma, &params.beta, &flags);
    if (st == DK_OK) st = dk__vkop_bind(ctx, op, "y", y, 1, &bind[4], &params.y);
    if (st != DK_OK) return st;
    params.rows = (int32_t)(uint32_t)rows;
    params.dim1 = (int32_t)shape[1];
    params.dim2 = (int32_t)shape[2];
    params.d = (int32_t)shape[3];
    params.eps = d->eps;
    dk__vkop_spec(spec, &params.epilogue, x->dtype, d->activation, flags, x->dtype, 0);
    return dk__vk_dispatch(ctx, DK_VK_SH_LAYER_NORM, spec, bind, &params, sizeof params, rows, 1, 1);
}

/* ------------------------------------------------------------- rms_norm */

/* t (2-5 dims, strides >= 0) bound as the 1-D span of elements it reaches:
 * *offset is its first element's offset in the binding. */
static dk_status vkop_bind_span(dk_context *ctx, const char *op, const char *name, const dk_tensor *t, int write,
                                dk_vk_binding *b, int32_t *offset) {
    dk_tensor span = *t;
    dk_vk_view4 view;
    int64_t extent = 1;
    int32_t i;
    dk_status st;
    for (i = 0; i < t->ndim; i++) extent += (t->shape[i] - 1) * t->strides[i];
    for (i = 0; i < DK_MAX_DIMS; i++) {
        span.shape[i] = 1;
        span.strides[i] = 0;
    }
    span.ndim = 1;
    span.shape[0] = extent;
    span.strides[0] = 1;
    st = dk__vkop_bind(ctx, op, name, &span, write, b, &view);
    *offset = view.offset;
    return st;
}

dk_status dk__vk_rms_norm(dk_context *ctx, const dk_rms_norm_desc *d, const dk_tensor *x, const dk_tensor *gamma,
                          const dk_tensor *beta, const dk_tensor *y) {
    const char *op = "dk_rms_norm";
    dk_vk_state *s = dk__vk(ctx);
    dk_vk_binding bind[DK_VK_BINDINGS];
    dk_vk_rms_norm_params params;
    dk_rms_plan plan;
    dk_rms_kernel_limits lim;
    uint32_t spec[DK_VK_SPEC], flags = 0, mode;
    uint64_t es = dk_dtype_size(x->dtype), groups, align = s->props.limits.minStorageBufferOffsetAlignment;
    int32_t xoff = 0, yoff = 0;
    int i;
    dk_status st;
    memset(bind, 0, sizeof bind);
    memset(&params, 0, sizeof params);
    st = vkop_bind_span(ctx, op, "x", x, 0, &bind[0], &xoff);
    if (st == DK_OK) st = vkop_bind_affine(ctx, op, gamma, beta, bind, &params.gamma, &params.beta, &flags);
    if (st == DK_OK) st = vkop_bind_span(ctx, op, "y", y, 1, &bind[4], &yoff);
    if (st != DK_OK) return st;
    /* the vectors index the bindings, whose starts are 16-byte aligned only
     * where the device's offset alignment is */
    lim.vw = align % 16u == 0 ? (int64_t)(16 / es) : 1;
    lim.max_row_lanes = 32;
    lim.max_column_lanes = 16;
    lim.keep_vectors = DK_VK_RMS_KEEP_VECTORS;
    lim.keep_scalars = DK_VK_RMS_KEEP_SCALARS;
    lim.column_vec_keep = 0; /* channel-strided vectors: the staged tile alone */
    lim.max_column_vec_lanes = 1;
    lim.column_tile_bytes = DK_VK_RMS_TILE_BYTES;
    lim.max_tile = 256; /* an invocation per position at least */
    dk__rms_plan(x, y, (uint64_t)xoff * es, (uint64_t)yoff * es, &lim, &plan);
    if ((uint64_t)plan.positions > VKOP_MAX_INDEX) return dk__vkop_too_big(ctx, op, "the position count", (uint64_t)plan.positions);
    params.channels = (int32_t)plan.channels;
    params.positions = (int32_t)(uint32_t)plan.positions;
    params.lanes = plan.lanes;
    params.form = (int32_t)d->form;
    params.eps = d->eps;
    params.sqrt_c = (float)sqrt((double)plan.channels);
    /* strides and offsets of bound views fit 32 bits (dk__vkop_bind checked the spans) */
    params.x_cs = (int32_t)plan.cs[0];
    params.y_cs = (int32_t)plan.cs[1];
    for (i = 0; i < 4; i++) {
        params.pshape[i] = (int32_t)plan.pshape[i];
        params.x_ps[i] = (int32_t)plan.ps[0][i];
        params.y_ps[i] = (int32_t)plan.ps[1][i];
    }
    params.x_offset = xoff;
    params.y_offset = yoff;
    params.tile = (int32_t)plan.tile;
    /* gamma and beta as vectors (their bindings' starts are 16-byte aligned where the plan took vectors) */
    if (dk__rms_affine_vec(&plan, x, gamma, (uint64_t)params.gamma.offset * es, beta, (uint64_t)params.beta.offset * es))
        flags |= DK_VK_FLAG_RMS_AFF_VEC;
    mode = plan.tile > 0                   ? DK_VK_RMS_MODE_COLUMNS_TILE
           : plan.kernel == DK__RMS_COLUMNS ? DK_VK_RMS_MODE_COLUMNS
           : plan.vec                      ? DK_VK_RMS_MODE_ROWS_VEC
                                           : DK_VK_RMS_MODE_ROWS;
    {
        /* positions per workgroup */
        uint64_t per = plan.tile > 0 ? (uint64_t)plan.tile : (uint64_t)(256 / plan.lanes);
        groups = ((uint64_t)plan.positions + per - 1u) / per;
    }
    dk__vkop_spec(spec, &params.epilogue, x->dtype, d->activation, flags,
                  gamma ? gamma->dtype : beta ? beta->dtype : x->dtype, mode);
    return dk__vk_dispatch(ctx, DK_VK_SH_RMS_NORM, spec, bind, &params, sizeof params, groups, 1, 1);
}
