/* Vulkan conv2d, conv_transpose2d and matmul: prepared (packed) weights, the
 * portable GEMM shaders, the direct narrow conv, the tensor-core conv
 * (conv2d_nhwc_cm.comp) with its halo, fixed-tap and zero-padded-Cin modes,
 * the fused 2x upsample as phase convs, channels-last staging of other
 * layouts, and matmul as a 1 x M conv on the tensor cores. */
#include "vk_ops_common.h"

#include <math.h>
#include <stdlib.h>

/* ---------------------------------------------------------------- conv */

/* Prepared conv weights (groups == 1): repacked once on the device to
 * [KH][KW][Cin][Cout] with Cout fastest, so that the GEMM's B-tile loads
 * (neighbouring invocations = neighbouring output channels) are coalesced.
 * Kept in the context's weight cache, keyed by the weight's buffer identity,
 * generation and view. */
typedef struct vkop_packed {
    dk_vk_buf buf;
    int32_t s_co, s_ci, s_kh, s_kw; /* element strides of the packed layout */
} vkop_packed;

/* The packed order of (cout, cin, kh, kw), innermost first: Cout, Cin, KW, KH. */
static const int vkop_pack_order[4] = {0, 1, 3, 2};

static void vkop_packed_free(dk_context *ctx, void *data) {
    vkop_packed *pk = (vkop_packed *)data;
    dk__vk_release(ctx, &pk->buf);
    free(pk);
}

/* w: conv2d [Cout, Cin, KH, KW] or conv_transpose2d [Cin, Cout, KH, KW].
 * pad16: Cout padded to 16 with zeros (the tensor-core conv's narrow tile,
 * conv2d only); pad32: Cin padded to a multiple of 32 with zeros (the
 * tensor-core conv of a padded input, vkop_padded_cin_ok); each cached apart. */
static dk_status vkop_packed_weight_as(dk_context *ctx, dk_weight_use use, const dk_tensor *w, int pad16, int pad32,
                                       vkop_packed **out) {
    dk_weight_key key;
    vkop_packed *pk;
    dk_buffer shadow;
    dk_tensor dst;
    int transposed = use == DK_WEIGHT_CONV_TRANSPOSE2D;
    int64_t cout = transposed ? w->shape[1] : w->shape[0], cin = transposed ? w->shape[0] : w->shape[1];
    int64_t coutp = pad16 && cout < 16 ? 16 : cout;
    int64_t cinp = pad32 ? (cin + 31) / 32 * 32 : cin;
    dk_pack_plan plan;
    uint64_t bytes;
    dk_status st;
    dk__weight_pack_plan(w, transposed, coutp, cinp, vkop_pack_order, &plan);
    bytes = plan.elements * dk_dtype_size(w->dtype);
    dk__weight_key(&key, w, (int32_t)use, (pad16 ? 4 : 1) + (pad32 ? 8 : 0));
    pk = (vkop_packed *)dk__weight_find(ctx, &key);
    if (pk) {
        *out = pk;
        return DK_OK;
    }
    if (plan.elements > 0x7fffffffu)
        return dk__vkop_too_big(ctx, "dk_prepare_weight", "weight elements", bytes);
    pk = (vkop_packed *)calloc(1, sizeof *pk);
    if (!pk) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "vulkan backend: out of host memory");
    st = dk__vk_alloc(ctx, &pk->buf, bytes);
    if (st != DK_OK) {
        free(pk);
        return st;
    }
    pk->s_co = (int32_t)plan.s[0];
    pk->s_ci = (int32_t)plan.s[1];
    pk->s_kw = (int32_t)plan.s[3];
    pk->s_kh = (int32_t)plan.s[2];
    /* The repack is a strided copy: the packed buffer seen with w's logical shape
     * (the padding zeroed first). */
    memset(&shadow, 0, sizeof shadow);
    shadow.size = bytes;
    shadow.impl = &pk->buf;
    if (plan.padded) {
        st = dk__vk_fill(ctx, &shadow, 0, bytes, 0u);
        if (st != DK_OK) {
            vkop_packed_free(ctx, pk);
            return st;
        }
    }
    dst = *w;
    dst.buffer = &shadow;
    dst.offset = 0;
    dst.strides[0] = transposed ? pk->s_ci : pk->s_co;
    dst.strides[1] = transposed ? pk->s_co : pk->s_ci;
    dst.strides[2] = pk->s_kh;
    dst.strides[3] = pk->s_kw;
    st = dk__vkop_eltwise(ctx, "dk_prepare_weight", DK_VK_EW_MODE_UNARY, DK_ACT_NONE, 1.0f, w, 0.0f, NULL, 1.0f, &dst);
    if (st != DK_OK) {
        vkop_packed_free(ctx, pk);
        return st;
    }
    st = dk__weight_insert(ctx, &key, pk, bytes, vkop_packed_free);
    if (st != DK_OK) return st; /* the cache freed pk */
    *out = pk;
    return DK_OK;
}

static dk_status vkop_packed_weight(dk_context *ctx, dk_weight_use use, const dk_tensor *w, vkop_packed **out) {
    return vkop_packed_weight_as(ctx, use, w, 0, 0, out);
}

dk_status dk__vk_prepare_weight(dk_context *ctx, dk_weight_use use, const dk_tensor *w) {
    vkop_packed *pk;
    if (use == DK_WEIGHT_MATMUL_B) return DK_OK; /* matmul reads b in place */
    return vkop_packed_weight(ctx, use, w, &pk);
}

/* Point the conv's weight binding and strides at a packed copy. */
static void vkop_bind_packed(vkop_packed *pk, dk_vk_binding *b, dk_vk_conv_params *params) {
    b->buf = &pk->buf;
    b->offset = pk->buf.base;
    b->range = pk->buf.size;
    b->write = 0;
    params->weight.group_stride = 0;
    params->weight.view.stride[0] = pk->s_co;
    params->weight.view.stride[1] = pk->s_ci;
    params->weight.view.stride[2] = pk->s_kh;
    params->weight.view.stride[3] = pk->s_kw;
    params->weight.view.offset = 0;
}

/* ... at the packed copy of w (groups == 1). */
static dk_status vkop_use_packed(dk_context *ctx, dk_weight_use use, const dk_tensor *w, dk_vk_binding *b,
                                 dk_vk_conv_params *params) {
    vkop_packed *pk;
    dk_status st = vkop_packed_weight(ctx, use, w, &pk);
    if (st != DK_OK) return st;
    vkop_bind_packed(pk, b, params);
    return DK_OK;
}

/* Shared by conv2d and conv_transpose2d: binds and fills the parts of the conv
 * parameters that do not depend on the sub-grid. */
typedef struct vkop_conv {
    dk_vk_binding bind[DK_VK_BINDINGS];
    dk_vk_conv_params params;
    uint32_t spec[DK_VK_SPEC];
} vkop_conv;

static dk_status vkop_conv_common(dk_context *ctx, const char *op, vkop_conv *c, const dk_tensor *x,
                                  const dk_tensor *w, const dk_tensor *bias, const dk_tensor *residual,
                                  const dk_tensor *y, dk_activation act, dk_activation post, float oscale,
                                  float rscale) {
    dk_vk_view4 weight_view;
    dk_status st;
    uint32_t flags = 0;
    memset(c, 0, sizeof *c);
    st = dk__vkop_bind(ctx, op, "x", x, 0, &c->bind[0], &c->params.x);
    if (st == DK_OK) st = dk__vkop_bind(ctx, op, "w", w, 0, &c->bind[1], &weight_view);
    if (st == DK_OK && residual) st = dk__vkop_bind(ctx, op, "residual", residual, 0, &c->bind[3], &c->params.residual);
    if (st == DK_OK) st = dk__vkop_bind(ctx, op, "y", y, 1, &c->bind[4], &c->params.y);
    if (st != DK_OK) return st;
    if (bias) {
        dk_vk_view4 bias_view;
        st = dk__vkop_bind(ctx, op, "bias", bias, 0, &c->bind[2], &bias_view);
        if (st != DK_OK) return st;
        c->params.bias = dk__vkop_view1(&bias_view);
        flags |= DK_VK_FLAG_BIAS;
    }
    if (residual) flags |= DK_VK_FLAG_RESIDUAL;
    /* K-fast A loads when the input is channels-last (C stride below W stride). */
    if (x->shape[1] > 1 && (x->shape[3] == 1 || x->strides[1] < x->strides[3])) flags |= DK_VK_FLAG_A_KFAST;
    c->params.weight.view = weight_view; /* caller re-maps for transposed weights */
    c->params.out_scale = oscale;
    c->params.residual_scale = rscale;
    /* DT2: the bias's dtype (f32 with 16-bit activations, or theirs) */
    dk__vkop_spec(c->spec, &c->params.epilogue, y->dtype, dk__vkop_epilogue_act(act, post), flags,
                  bias ? bias->dtype : y->dtype, 0);
    return DK_OK;
}

static dk_status vkop_conv_run(dk_context *ctx, const char *op, vkop_conv *c, uint64_t m, uint64_t nc, uint64_t k,
                               uint32_t groups) {
    int32_t v = c->spec[DK_VKS_DT] == DK_F32 ? 4 : 8, cing = c->params.cin_per_group;
    if (m > 0x7fffffff) return dk__vkop_too_big(ctx, op, "N*OH*OW", m);
    if (k > 0x7fffffff) return dk__vkop_too_big(ctx, op, "Cin/groups*KH*KW", k);
    c->params.m = (int32_t)m;
    c->params.n = (int32_t)nc;
    c->params.k = (int32_t)k;
    /* 128x128 output tiles (shaders/dk_gemm_tile.glsl); the epilogue walks
     * rows (pixels) fastest when y's channel stride is the larger one. */
    c->params.epilogue.flags &= ~DK_VK_FLAG_ROWS_FASTEST;
    if (c->params.y.stride[1] > c->params.y.stride[3]) c->params.epilogue.flags |= DK_VK_FLAG_ROWS_FASTEST;
    /* 16-byte fetches of 8 input channels (channels-last input) and of 8
     * output channels of the weights (packed: [tap][ci][co], co fastest). */
    c->spec[DK_VKS_MODE] = c->params.upsample == 2 ? DK_VK_CONV_MODE_UPSAMPLE2 : 0;
    if (cing % 8 == 0 && dk__vkop_vec_view(&c->params.x, 1, v)) c->spec[DK_VKS_MODE] |= DK_VK_GEMM_MODE_VEC_A;
    if (nc % 8 == 0 && c->params.weight.group_stride % v == 0 && dk__vkop_vec_view(&c->params.weight.view, 0, v))
        c->spec[DK_VKS_MODE] |= DK_VK_GEMM_MODE_VEC_B_N;
    return dk__vk_dispatch(ctx, DK_VK_SH_CONV2D, c->spec, c->bind, &c->params, sizeof c->params, (m + 127) / 128,
                           (uint32_t)((nc + 127) / 128), groups);
}

/* Narrow outputs (Cout/groups <= 8: depthwise, and the SDXL VAE's conv_out
 * 128 -> 3 where the tensor-core narrow tile cannot take it: f32, groups,
 * Cin % 32 != 0, no cooperative matrices): DK_VK_CONV_MODE_NARROW of shaders/conv2d.comp,
 * a direct convolution with one
 * output pixel per invocation, instead of 128-wide GEMM tiles that would waste
 * 15/16 of their work or more; any dtype, layout and groups.  NARROW4: at most 4
 * channels; VEC_A and UPSAMPLE2 as in the GEMM path (16-byte channel loads, fused
 * upsample); LANES with VEC_A: 16 invocations per pixel (shaders/conv2d.comp). */
static int vkop_narrow_lanes(const dk_context *ctx) { return ctx->knobs.vulkan_narrow_lanes != 0; }

static dk_status vkop_conv_narrow_run(dk_context *ctx, const char *op, vkop_conv *c, uint64_t m, uint64_t nc,
                                      uint32_t groups) {
    int32_t v = c->spec[DK_VKS_DT] == DK_F32 ? 4 : 8, cing = c->params.cin_per_group;
    if (m > 0x7fffffff) return dk__vkop_too_big(ctx, op, "N*OH*OW", m);
    c->params.m = (int32_t)m;
    c->params.n = (int32_t)nc;
    c->spec[DK_VKS_MODE] = DK_VK_CONV_MODE_NARROW | (nc <= 4 ? DK_VK_CONV_MODE_NARROW4 : 0) |
                           (c->params.upsample == 2 ? DK_VK_CONV_MODE_UPSAMPLE2 : 0);
    if (cing % 8 == 0 && dk__vkop_vec_view(&c->params.x, 1, v)) {
        /* lane groups (16 invocations per pixel, 64 pixels per
         * workgroup); DIFKERN_VULKAN_NARROW_LANES=0 keeps one pixel per
         * invocation, for benchmarks */
        int lanes = vkop_narrow_lanes(ctx);
        c->spec[DK_VKS_MODE] |= DK_VK_GEMM_MODE_VEC_A | (lanes ? DK_VK_CONV_MODE_LANES : 0);
        if (lanes)
            return dk__vk_dispatch(ctx, DK_VK_SH_CONV2D, c->spec, c->bind, &c->params, sizeof c->params,
                                   (m + 63) / 64, 1, groups);
    }
    return dk__vk_dispatch(ctx, DK_VK_SH_CONV2D, c->spec, c->bind, &c->params, sizeof c->params, (m + 255) / 256, 1,
                           groups);
}

/* The tensor-core conv's narrow module (CMG_NARROW_TILE in
 * shaders/dk_gemm_coopmat.glsl: 128 x 16 tiles, weights packed with Cout
 * padded to 16) for conv2d with at most 8 output channels, instead of the
 * direct narrow conv (vkop_conv_narrow_run), which it beats on conv_out
 * (docs/conv.md).  Without halo staging, which serializes a 16-wide tile's
 * work.  DIFKERN_VULKAN_CM_NARROW=0: off, for benchmarks. */
static int vkop_cm_narrow(const dk_context *ctx, int64_t coutg) {
    return coutg <= 8 && ctx->knobs.vulkan_cm_narrow;
}


/* The tensor-core conv (shaders/conv2d_nhwc_cm.comp) takes f16 data whose
 * channels are contiguous and 16-byte aligned (8 elements), Cin a multiple of
 * its 32-deep K slice and Cout a multiple of 8; params holds the bound views'
 * strides and offsets.  Its weights are packed by us (vkop_packed_weight), so
 * their strides are whole vectors. */
static int vkop_conv_tensor_cores(dk_context *ctx, const dk_tensor *x, const dk_tensor *y,
                                  const dk_vk_conv_params *params, int64_t cing, int64_t coutg) {
    dk_vk_state *s = dk__vk(ctx);
    int i;
    if (!dk__vk_cm_dtype(s, x->dtype) || y->dtype != x->dtype || cing % 32 != 0) return 0;
    if (coutg % 8 != 0 && !vkop_cm_narrow(ctx, coutg)) return 0;
    if (s->props.limits.maxComputeSharedMemorySize < VKOP_CM_SHARED) return 0;
    if (params->x.stride[1] != 1 || params->x.offset % 8 != 0) return 0;
    for (i = 0; i < 4; i++)
        if (i != 1 && params->x.stride[i] % 8 != 0) return 0;
    return 1;
}

/* A 4-D view whose channels are contiguous and whose pixels start on 16-byte
 * vectors (f16). */
static int vkop_cm_vec_view(const dk_vk_view4 *view) {
    int i;
    if (view->stride[1] != 1 || view->offset % 8 != 0) return 0;
    for (i = 0; i < 4; i++)
        if (i != 1 && view->stride[i] % 8 != 0) return 0;
    return 1;
}

/* One tensor-core GEMM (conv2d, or one stride phase of conv_transpose2d):
 * M = N*OHs*OWs rows, coutg columns, K = Cin*taps.  Tile shape (MODE of
 * shaders/dk_gemm_coopmat.glsl): 128x128 with 32-deep K slices in workgroups
 * of 128 invocations (four 64x64 subgroups), the fastest tile measured on
 * either module (docs/conv.md).  It compiles to 241 registers, two workgroups
 * per SM, 32 KB of loads in flight per SM. */
static dk_status vkop_conv_cm_run(dk_context *ctx, const char *op, vkop_conv *c, dk_vk_conv_params *params, uint64_t m,
                                  int64_t coutg, int64_t k, int has_residual) {
    uint32_t spec[DK_VK_SPEC];
    /* benchmarks: DIFKERN_VULKAN_CM_INV=256 (eight subgroups) and DIFKERN_VULKAN_CM_TILE, another valid MODE
     * (0 or 4 with 128 invocations; 0, 4, 5 or 6 with 256) */
    const int64_t tile = ctx->knobs.vulkan_cm_tile; /* -1: by shape */
    const int khr = dk__vk(ctx)->coopmat_khr || c->spec[DK_VKS_DT] == DK_BF16, narrow = coutg <= 8;
    const uint32_t inv = !narrow && ctx->knobs.vulkan_cm_inv == 256 ? 256u : 128u;
    const uint32_t mode = narrow                                         ? 0u
                          : tile == 0 || tile == 4 || (inv == 256 && tile > 0) ? (uint32_t)tile
                          : inv == 128 || !khr                           ? 0u
                                                                         : DK_VK_CM_MODE_BK16;
    const uint32_t bm = 128u << ((mode >> DK_VK_CM_MODE_BM256_SHIFT) & 1),
                   bn = narrow ? 16u : 128u << ((mode >> DK_VK_CM_MODE_BN256_SHIFT) & 1);
    const int th = params->taps_h, tw = params->taps_w, from0 = params->tap_start_h == 0 && params->tap_start_w == 0;
    /* KT x 1 taps: the time convs of conv3d ([N, C, T, H*W], time as the rows) */
    const int kx1 = tw == 1 && (th == 3 || th == 2);
    const int fixed = ctx->knobs.vulkan_cm_fixed && params->dilation_h == 1 && params->dilation_w == 1 &&
                      params->upsample == 1 && params->tap_step_h == 1 && params->tap_step_w == 1 &&
                      ((th == tw && (th == 2 || ((th == 3 || th == 1) && from0))) || (kx1 && from0));
    if (m > 0x7fffffff) return dk__vkop_too_big(ctx, op, "N*OH*OW", m);
    if (k > 0x7fffffff) return dk__vkop_too_big(ctx, op, "Cin*KH*KW", (uint64_t)k);
    params->m = (int32_t)m;
    params->n = (int32_t)coutg;
    params->k = (int32_t)k;
    /* 16-byte epilogue vectors (y and the residual channels-last, aligned) */
    params->epilogue.flags &= ~DK_VK_FLAG_VEC_EPILOGUE;
    if (coutg % 8 == 0 && vkop_cm_vec_view(&params->y) && (!has_residual || vkop_cm_vec_view(&params->residual)))
        params->epilogue.flags |= DK_VK_FLAG_VEC_EPILOGUE;
    memcpy(spec, c->spec, sizeof spec);
    spec[DK_VKS_MODE] = mode;
    /* Halo staging: 128-pixel tiles inside one sub-grid row, input step 1 along w,
     * 2-3 taps each way and 6 or more in all (shaders/conv2d_nhwc_cm.comp).
     * DIFKERN_VULKAN_CM_HALO=0: off. */
    if (!narrow && inv == 128 && mode == 0 && ctx->knobs.vulkan_cm_halo && params->stride_w == 1 &&
        (params->dilation_w == 1 || params->dilation_w == -1) && params->taps_h >= 2 && params->taps_h <= 3 &&
        params->taps_w >= 2 && params->taps_w <= 3 && params->taps_h * params->taps_w >= 6 &&
        params->rows_w % 128 == 0 && dk__vk(ctx)->props.limits.maxComputeSharedMemorySize >= VKOP_CM_HALO_SHARED)
        spec[DK_VKS_MODE] |= DK_VK_CM_MODE_HALO;
    /* The tap grid compiled in, 3x3, 1x1, 3x1 or 2x1 at kernel offset 0 or 2x2,
     * step 1, dilation 1, no upsample.  DIFKERN_VULKAN_CM_FIXED=0: off. */
    if (fixed)
        spec[DK_VKS_MODE] |= DK_VK_CM_MODE_FIXED | (kx1 ? DK_VK_CM_MODE_FIXED_KX1 : 0u) |
                             (th == 3 ? 0u : th == 2 ? DK_VK_CM_MODE_FIXED_2X2 : DK_VK_CM_MODE_FIXED_1X1);
    /* the vector epilogue and the residual compiled in */
    if (params->epilogue.flags & DK_VK_FLAG_VEC_EPILOGUE) spec[DK_VKS_MODE] |= DK_VK_CM_MODE_VEC_OUT;
    if (params->epilogue.flags & DK_VK_FLAG_RESIDUAL) spec[DK_VKS_MODE] |= DK_VK_CM_MODE_RESIDUAL;
    /* the rows above x from the cache (dk__vk_conv3d_in_place; never with the fixed or halo loops: its taps are KT x 1) */
    if (params->cache_rows > 0) spec[DK_VKS_MODE] |= DK_VK_CM_MODE_CACHE;
    /* a pixel tile's channel tiles launched together (conv2d_nhwc_cm.comp) */
    if (ctx->knobs.vulkan_cm_channels_fast && (uint64_t)coutg > bn) spec[DK_VKS_MODE] |= DK_VK_CM_MODE_CH_FAST;
    return dk__vk_dispatch(ctx,
                           dk__vk_cm_shader(dk__vk(ctx),
                                            narrow       ? DK_VK_SH_CONV2D_NHWC_CM_NARROW
                                            : inv == 128 ? DK_VK_SH_CONV2D_NHWC_CM128
                                                         : DK_VK_SH_CONV2D_NHWC_CM,
                                            (dk_dtype)spec[DK_VKS_DT]),
                           spec,
                           c->bind, params, sizeof *params, (m + bm - 1) / bm,
                           (uint32_t)(((uint64_t)coutg + bn - 1) / bn), 1);
}

/* Fused nearest-2x upsample where the conv has stride 1, dilation 1, one group
 * and more than 8 output channels: four phase convs on the original input with
 * summed taps (src/conv_up2.c), run as conv_transpose2d's phases are.
 * DIFKERN_VULKAN_UP2=0 keeps the upsample in the input indexing instead. */
static int vkop_up2_ok(const dk_context *ctx, const dk_conv2d_desc *d, int64_t coutg) {
    return ctx->knobs.vulkan_up2 && dk__conv_up2_fits(d) && d->groups == 1 && coutg > 8;
}

/* The summed weights (src/conv_up2.c) packed as vkop_packed_weight packs
 * ([tap h][tap w][ci][co]), cached per weight and padding. */
static dk_status vkop_up2_weight(dk_context *ctx, const dk_tensor *w, const dk_conv2d_desc *d, vkop_packed **out) {
    dk_weight_key key;
    vkop_packed *pk;
    dk_buffer shadow;
    int64_t os[4];
    uint64_t elems, bytes;
    void *host;
    dk_status st;
    dk__up2_weight_key(&key, w, d);
    *out = (vkop_packed *)dk__weight_find(ctx, &key);
    if (*out) return DK_OK;
    elems = dk__up2_weight_layout(w, d, vkop_pack_order, os);
    bytes = elems * dk_dtype_size(w->dtype);
    if (elems > 0x7fffffffu) return dk__vkop_too_big(ctx, "dk_conv2d", "weight elements", bytes);
    pk = (vkop_packed *)calloc(1, sizeof *pk);
    if (!pk) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "vulkan backend: out of host memory");
    pk->s_co = (int32_t)os[0];
    pk->s_ci = (int32_t)os[1];
    pk->s_kw = (int32_t)os[3];
    pk->s_kh = (int32_t)os[2];
    host = dk__up2_weights_host(ctx, w, d, os, bytes, &st);
    if (host) {
        st = dk__vk_alloc(ctx, &pk->buf, bytes);
        if (st != DK_OK) {
            free(pk);
            free(host);
            return st;
        }
        memset(&shadow, 0, sizeof shadow);
        shadow.size = bytes;
        shadow.impl = &pk->buf;
        st = dk__vk_upload(ctx, &shadow, 0, host, bytes);
    }
    free(host);
    if (st != DK_OK) {
        if (pk->buf.size) vkop_packed_free(ctx, pk);
        else free(pk);
        return st;
    }
    st = dk__weight_insert(ctx, &key, pk, bytes, vkop_packed_free);
    if (st != DK_OK) return st; /* the cache freed pk */
    *out = pk;
    return DK_OK;
}

/* Output rows of parity a read input rows t + off0[a] + j with the summed kernel
 * rows a * tmax + j (likewise along w); every phase writes its own outputs. */
static dk_status vkop_conv2d_up2(dk_context *ctx, const dk_conv2d_desc *d, const dk_tensor *x, const dk_tensor *w,
                                 const dk_tensor *y, int has_residual, vkop_conv *c, int64_t cing, int64_t coutg) {
    dk_up2_axis ah, aw;
    vkop_packed *pk;
    dk_vk_conv_params *params = &c->params;
    int tc = vkop_conv_tensor_cores(ctx, x, y, params, cing, coutg), a, b;
    dk_status st;
    dk__up2_axis(w->shape[2], d->pad_h, &ah);
    dk__up2_axis(w->shape[3], d->pad_w, &aw);
    st = vkop_up2_weight(ctx, w, d, &pk);
    if (st != DK_OK) return st;
    vkop_bind_packed(pk, &c->bind[1], params);
    params->upsample = 1;
    params->out_step_h = 2;
    params->out_step_w = 2;
    params->tap_step_h = 1;
    params->tap_step_w = 1;
    params->dilation_h = 1;
    params->dilation_w = 1;
    for (a = 0; a < 2; a++)
        for (b = 0; b < 2; b++) {
            const int64_t ohs = (y->shape[2] - a + 1) / 2, ows = (y->shape[3] - b + 1) / 2;
            const int64_t k = cing * ah.taps[a] * aw.taps[b];
            if (ohs <= 0 || ows <= 0) continue;
            params->out_start_h = a;
            params->out_start_w = b;
            params->tap_start_h = (int32_t)(a * ah.tmax);
            params->tap_start_w = (int32_t)(b * aw.tmax);
            params->taps_h = (int32_t)ah.taps[a];
            params->taps_w = (int32_t)aw.taps[b];
            params->input_offset_h = (int32_t)ah.off0[a];
            params->input_offset_w = (int32_t)aw.off0[b];
            params->rows_h = (int32_t)ohs;
            params->rows_w = (int32_t)ows;
            st = tc ? vkop_conv_cm_run(ctx, "dk_conv2d", c, params, (uint64_t)(y->shape[0] * ohs * ows), coutg, k,
                                       has_residual)
                    : vkop_conv_run(ctx, "dk_conv2d", c, (uint64_t)(y->shape[0] * ohs * ows), (uint64_t)coutg,
                                    (uint64_t)k, 1);
            if (st != DK_OK) return st;
            c->bind[4].write = 2;
        }
    return DK_OK;
}

/* Channels-last copies of conv operands.  The tensor-core conv reads and
 * writes channels-last tensors in 16-byte vectors, and the portable conv
 * fetches 16-byte vectors of input channels only from a channels-last x; an
 * NCHW x would send the conv to per-element loads (on the H100: the portable
 * shader instead of the tensor cores, ~10x).  So each operand that is not
 * channels-last goes through its own staging buffer (s->stage[0..2]: x, y,
 * residual) by the layout-changing convert (a tiled transpose): x and the
 * residual copied in before the conv, y copied out after it.  On the portable
 * path only x: its epilogue walks NCHW outputs pixel-fastest already.  The
 * buffers stay for the context's life at the largest size used.
 * DIFKERN_VULKAN_STAGE_NHWC=0 turns the copies off. */
typedef struct vkop_stage {
    dk_buffer buf[3];
    dk_tensor t[3];         /* x, y, residual as the conv sees them */
    int staged[3];
} vkop_stage;

/* Channels-last with every pixel on a 16-byte vector: as vkop_conv_tensor_cores,
 * vkop_cm_vec_view and the portable conv's vector fetches (dk__vkop_vec_view) want it. */
static int vkop_channels_last16(const dk_tensor *t) { return dk__channels_last16(t, t->offset, 0); }

/* Returns 0 where nothing is staged (no operand needs it or gains from it, or
 * staging memory cannot be had); else 1, with sg's tensors to run the conv on
 * and *st the status of the copies in.  Narrow convs (Cout <= 8, one group)
 * stage x alone, for the lane-group shader's vector loads: they store y and
 * read the residual per element in any layout. */
static int vkop_stage_in(dk_context *ctx, const dk_tensor *x, const dk_tensor *residual, const dk_tensor *y,
                         int64_t groups, int64_t cing, int64_t coutg, vkop_stage *sg, dk_status *st) {
    dk_vk_state *s = dk__vk(ctx);
    const int64_t es = (int64_t)dk_dtype_size(x->dtype);
    const int tc = dk__vk_cm_dtype(s, x->dtype) && cing % 32 == 0 &&
                   s->props.limits.maxComputeSharedMemorySize >= VKOP_CM_SHARED;
    const dk_tensor *src[3];
    dk_stage_plan plan;
    int i, want[3];
    src[0] = x;
    src[1] = y;
    src[2] = residual;
    const int narrow = coutg <= 8 && vkop_narrow_lanes(ctx);
    if (!ctx->knobs.vulkan_stage_nhwc || groups != 1 || y->dtype != x->dtype ||
        (!narrow && (coutg % 8 != 0 || coutg <= 8)) || cing % (narrow ? 8 : 16 / es) != 0 ||
        (residual && residual->dtype != y->dtype))
        return 0;
    /* y and the residual only for the tensor-core conv (not narrow); the channel
     * counts are whole vectors (checked above); each copy has its own buffer */
    for (i = 0; i < 3; i++) want[i] = src[i] && !vkop_channels_last16(src[i]) && (i == 0 || (tc && !narrow));
    if (!dk__conv_stage_plan(src, want, 0, 0, 1, &plan)) return 0;
    memset(sg, 0, sizeof *sg);
    for (i = 0; i < 3; i++) {
        const dk_tensor *t = src[i];
        if (!t) continue;
        sg->t[i] = *t;
        if (!plan.staged[i]) continue;
        if (dk__vkop_grow(ctx, &s->stage[i], plan.bytes[i]) != DK_OK) {
            dk__clear_error(ctx); /* the shaders take the operands where they are */
            return 0;
        }
        sg->buf[i].size = plan.bytes[i];
        sg->buf[i].wrapped = 1;
        sg->buf[i].impl = &s->stage[i];
        /* dense channels-last with C % (16 / es) == 0 (checked above): vkop_channels_last16 holds */
        sg->t[i] = dk_tensor_nhwc(&sg->buf[i], 0, t->dtype, t->shape[0], t->shape[1], t->shape[2], t->shape[3]);
        sg->staged[i] = 1;
    }
    *st = dk__conv_stage_copy_in(ctx, x, residual, sg->staged, sg->t, 0);
    return 1;
}

/* After the conv on sg's tensors (status st): y copied out where it was staged. */
static dk_status vkop_stage_out(dk_context *ctx, vkop_stage *sg, const dk_tensor *y, dk_status st) {
    return dk__conv_stage_copy_out(ctx, sg->staged, sg->t, y, st);
}

/* Cin not a multiple of 32 (a network's first conv: 3 or 4 channels) on the
 * tensor cores, with the channels zero-padded to the next multiple of 32: x
 * copied into a zeroed channels-last staging buffer (s->stage[0]) and the
 * weights packed with zero rows, instead of the portable conv: the padding
 * multiplies the products by 32/Cin at most, and the tensor cores are more
 * than that faster per product, without the portable path's per-element
 * loads.  One group, no
 * fused upsample (its phase weights are packed apart).
 * DIFKERN_VULKAN_CM_PAD_CIN=0: off, for benchmarks. */
static int vkop_padded_cin_ok(dk_context *ctx, const dk_conv2d_desc *d, const dk_tensor *x, const dk_tensor *y,
                          int64_t cing, int64_t coutg) {
    dk_vk_state *s = dk__vk(ctx);
    const int64_t cpad = dk__conv_cin_pad(d, x, y, cing, 32); /* the 32-deep K slice */
    const uint64_t padded = (uint64_t)(x->shape[0] * x->shape[2] * x->shape[3]) * (uint64_t)cpad;
    return ctx->knobs.vulkan_cm_pad_cin && cpad && dk__vk_cm_dtype(s, x->dtype) && ((coutg > 8 && coutg % 8 == 0) || vkop_cm_narrow(ctx, coutg)) &&
           s->props.limits.maxComputeSharedMemorySize >= VKOP_CM_SHARED && padded <= VKOP_MAX_INDEX;
}

static dk_status vkop_conv2d_run(dk_context *ctx, const dk_conv2d_desc *d, const dk_tensor *x, const dk_tensor *w,
                                 const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y, int padded_cin);

/* The padded copy of x (vkop_padded_cin_ok), then the conv on it. */
static dk_status vkop_conv2d_padded_cin(dk_context *ctx, const dk_conv2d_desc *d, const dk_tensor *x, const dk_tensor *w,
                                    const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y) {
    dk_vk_state *s = dk__vk(ctx);
    const dk_tensor *ops[3] = {x, NULL, NULL};
    const int want[3] = {0, 0, 0}, staged[3] = {1, 0, 0};
    dk_stage_plan plan;
    dk_buffer b;
    dk_tensor t[3];
    dk_status st;
    const int64_t cp = dk__conv_cin_pad(d, x, y, x->shape[1], 32);
    dk__conv_stage_plan(ops, want, cp, 0, 1, &plan);
    st = dk__vkop_grow(ctx, &s->stage[0], plan.bytes[0]);
    if (st != DK_OK) return st;
    memset(&b, 0, sizeof b);
    memset(t, 0, sizeof t);
    b.size = plan.bytes[0];
    b.wrapped = 1;
    b.impl = &s->stage[0];
    t[0] = dk_tensor_nhwc(&b, 0, x->dtype, x->shape[0], cp, x->shape[2], x->shape[3]);
    st = dk__conv_stage_copy_in(ctx, x, NULL, staged, t, cp);
    if (st == DK_OK) st = vkop_conv2d_run(ctx, d, &t[0], w, bias, residual, y, 1);
    return st;
}

dk_status dk__vk_conv2d(dk_context *ctx, const dk_conv2d_desc *d, const dk_tensor *x, const dk_tensor *w,
                        const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y) {
    if (vkop_padded_cin_ok(ctx, d, x, y, x->shape[1] / d->groups, y->shape[1] / d->groups))
        return vkop_conv2d_padded_cin(ctx, d, x, w, bias, residual, y);
    return vkop_conv2d_run(ctx, d, x, w, bias, residual, y, 0);
}

/* padded_cin: x has w's Cin rounded up to a multiple of 32 (zeros past it). */
static dk_status vkop_conv2d_run(dk_context *ctx, const dk_conv2d_desc *d, const dk_tensor *x, const dk_tensor *w,
                                 const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y, int padded_cin) {
    vkop_conv c;
    vkop_stage sg;
    int64_t cing = x->shape[1] / d->groups, coutg = y->shape[1] / d->groups;
    dk_status st;
    if (vkop_stage_in(ctx, x, residual, y, d->groups, cing, coutg, &sg, &st)) {
        if (st == DK_OK) st = vkop_conv2d_run(ctx, d, &sg.t[0], w, bias, residual ? &sg.t[2] : NULL, &sg.t[1], padded_cin);
        return vkop_stage_out(ctx, &sg, y, st);
    }
    st = vkop_conv_common(ctx, "dk_conv2d", &c, x, w, bias, residual, y, d->activation, d->post_activation,
                          d->output_scale, d->residual_scale);
    if (st != DK_OK) return st;
    c.params.weight.group_stride = (int32_t)(coutg * c.params.weight.view.stride[0]);
    c.params.cin_per_group = (int32_t)cing;
    c.params.in_h = (int32_t)x->shape[2];
    c.params.in_w = (int32_t)x->shape[3];
    c.params.rows_h = (int32_t)y->shape[2];
    c.params.rows_w = (int32_t)y->shape[3];
    c.params.taps_h = (int32_t)w->shape[2];
    c.params.taps_w = (int32_t)w->shape[3];
    c.params.stride_h = d->stride_h;
    c.params.stride_w = d->stride_w;
    c.params.input_offset_h = -d->pad_h;
    c.params.input_offset_w = -d->pad_w;
    c.params.dilation_h = d->dilation_h;
    c.params.dilation_w = d->dilation_w;
    c.params.upsample = d->upsample;
    c.params.tap_step_h = 1;
    c.params.tap_step_w = 1;
    c.params.out_step_h = 1;
    c.params.out_step_w = 1;
    if (vkop_up2_ok(ctx, d, coutg)) return vkop_conv2d_up2(ctx, d, x, w, y, residual != NULL, &c, cing, coutg);
    if (d->groups == 1) {
        int tc = (coutg > 8 || vkop_cm_narrow(ctx, coutg)) && vkop_conv_tensor_cores(ctx, x, y, &c.params, cing, coutg);
        vkop_packed *pk;
        /* the narrow tile (coutg <= 8) reads 16 packed output channels per tap row */
        st = vkop_packed_weight_as(ctx, DK_WEIGHT_CONV2D, w, tc && coutg <= 8, padded_cin, &pk);
        if (st != DK_OK) return st;
        vkop_bind_packed(pk, &c.bind[1], &c.params);
        c.params.epilogue.flags |= DK_VK_FLAG_PACKED_WEIGHT; /* every tap in order */
        if (tc)
            return vkop_conv_cm_run(ctx, "dk_conv2d", &c, &c.params, (uint64_t)(y->shape[0] * y->shape[2] * y->shape[3]),
                                    coutg, cing * w->shape[2] * w->shape[3], residual != NULL);
    }
    if (coutg <= 8)
        return vkop_conv_narrow_run(ctx, "dk_conv2d", &c, (uint64_t)(y->shape[0] * y->shape[2] * y->shape[3]),
                                    (uint64_t)coutg, (uint32_t)d->groups);
    return vkop_conv_run(ctx, "dk_conv2d", &c, (uint64_t)(y->shape[0] * y->shape[2] * y->shape[3]), (uint64_t)coutg,
                         (uint64_t)(cing * w->shape[2] * w->shape[3]), (uint32_t)d->groups);
}

/* Output rows (frames x H x W per image) up to which the time convs read
 * their cache in place.  In place runs the (KT, 1) conv with its tap grid
 * compiled in (DK_VK_CM_MODE_FIXED_KX1); the staged copy's conv runs the 1x1
 * loop compiled in over KT*Cin channels, a longer K per tile, so once the
 * copies weigh little it is the faster.  Wan 3x1x1 384 -> 768 with 2 cached
 * frames, bf16, H200, staged -> in place: 6,240 rows 0.135 -> 0.105 ms,
 * 14,400 0.198 -> 0.166, 24,960 0.288 -> 0.259, 57,600 0.555 -> 0.532 and
 * 0.571 -> 0.524; 230,400 1.82 -> 1.92 (docs/conv.md). */
#define VKOP_C3D_IN_PLACE_ROWS 65536

/* backend.h's conv3d_in_place, for the causal time convs (3x1x1, the Wan
 * decoder's upsamplers) with a cache and at most VKOP_C3D_IN_PLACE_ROWS
 * output rows: src/conv3d.c's TIME lowering, a (KT, 1) conv2d over
 * [1, C, T, H*W] with time as the rows, on the tensor-core conv with the
 * cache's frames as the rows above x (DK_VK_CM_MODE_CACHE) instead of the
 * staged copy of the frames whose taps reach the cache.  One dispatch per
 * image.  Taken where that conv runs in place: f16/bf16 with cooperative
 * matrices, groups 1, Cin a multiple of 32, Cout a multiple of 8 above 8, x,
 * the cache, y and the residual channels-last on 16-byte vectors, the cache
 * with x's pixel stride.  Other convs (3x3x3 among them) stage. */
int dk__vk_conv3d_in_place(dk_context *ctx, const dk_conv3d_desc *d, const dk_tensor *cache, const dk_tensor *x,
                           const dk_tensor *w, const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y,
                           dk_status *st) {
    const char *op = "dk_conv3d";
    const int64_t cin = x->shape[1], cout = y->shape[1], t = x->shape[2], ot = y->shape[2], kt = w->shape[2];
    const dk_tensor wv = dk__drop_dim(w, 4, 0); /* [Cout, Cin, KT, 1] */
    vkop_conv c;
    vkop_packed *pk;
    int64_t n;
    dk_status s = DK_OK;
    const int64_t images = x->shape[0], tc = cache ? cache->shape[2] : 0;
    if (!cache || d->groups != 1 || kt < 2 || cout <= 8 || !dk__conv3d_is_time(d, cache, x, w, y, residual) ||
        ot * y->shape[3] * y->shape[4] > VKOP_C3D_IN_PLACE_ROWS)
        return 0;
    { /* every image's views (the whole batch's strides and offsets) */
        const dk_tensor xa = dk__conv3d_time_view(x, 0, images, 0, t), ca = dk__conv3d_time_view(cache, 0, images, 0, tc);
        const dk_tensor ya = dk__conv3d_time_view(y, 0, images, 0, ot);
        const dk_tensor ra = residual ? dk__conv3d_time_view(residual, 0, images, 0, ot) : ya;
        if (!vkop_channels_last16(&xa) || !vkop_channels_last16(&ca) || !vkop_channels_last16(&ya) ||
            !vkop_channels_last16(&ra) || ca.strides[3] != xa.strides[3])
            return 0;
    }
    for (n = 0; n < images && s == DK_OK; n++) {
        const dk_tensor xv = dk__conv3d_time_view(x, n, 1, 0, t), cv = dk__conv3d_time_view(cache, n, 1, 0, tc);
        const dk_tensor yv = dk__conv3d_time_view(y, n, 1, 0, ot);
        dk_tensor rv;
        dk_vk_view4 cview;
        if (residual) rv = dk__conv3d_time_view(residual, n, 1, 0, ot);
        s = vkop_conv_common(ctx, op, &c, &xv, &wv, bias, residual ? &rv : NULL, &yv, d->activation,
                             d->post_activation, d->output_scale, d->residual_scale);
        if (s != DK_OK) break;
        if (n == 0) { /* the last check; then the packed weight, one for every image */
            if (!vkop_conv_tensor_cores(ctx, &xv, &yv, &c.params, cin, cout)) return 0;
            s = vkop_packed_weight_as(ctx, DK_WEIGHT_CONV2D, &wv, 0, 0, &pk);
            if (s != DK_OK) break;
        }
        s = dk__vkop_bind(ctx, op, "cache", &cv, 0, &c.bind[5], &cview);
        if (s != DK_OK) break;
        c.params.cache_offset = cview.offset;
        c.params.cache_rows = (int32_t)tc;
        c.params.cache_stride_h = cview.stride[2];
        c.params.cin_per_group = (int32_t)cin;
        c.params.in_h = (int32_t)t;
        c.params.in_w = (int32_t)xv.shape[3];
        c.params.rows_h = (int32_t)ot;
        c.params.rows_w = (int32_t)yv.shape[3];
        c.params.taps_h = (int32_t)kt;
        c.params.taps_w = 1;
        c.params.stride_h = d->stride_t;
        c.params.stride_w = 1;
        c.params.input_offset_h = -d->pad_front;
        c.params.input_offset_w = 0;
        c.params.dilation_h = d->dilation_t;
        c.params.dilation_w = 1;
        c.params.upsample = 1;
        c.params.tap_step_h = c.params.tap_step_w = 1;
        c.params.out_step_h = c.params.out_step_w = 1;
        vkop_bind_packed(pk, &c.bind[1], &c.params);
        c.params.epilogue.flags |= DK_VK_FLAG_PACKED_WEIGHT;
        s = vkop_conv_cm_run(ctx, op, &c, &c.params, (uint64_t)(ot * yv.shape[3]), cout, cin * kt, residual != NULL);
    }
    *st = s;
    return 1;
}

/* One output phase of a transposed conv along one axis, the outputs o with
 * (o + pad) % s == r from the first o >= 0 on (the taps: src/conv_plan.c):
 * outputs o = o0 + s*t use the taps k = k0 + j*kstep, reading input
 * i = off + t + j*idil.  Returns the number of outputs (0: none). */
static int64_t vkop_phase(int32_t r, int32_t s, int32_t pad, int32_t dil, int64_t ksize, int64_t osize, int32_t *o0,
                          int32_t *k0, int32_t *kstep, int32_t *taps, int32_t *off, int32_t *idil) {
    const int32_t first = ((r - pad) % s + s) % s;
    dk_phase_taps t;
    dk__transposed_taps(first, s, pad, dil, ksize, &t);
    *o0 = first;
    *kstep = (int32_t)t.k_step;
    *idil = (int32_t)t.off_step;
    *taps = (int32_t)t.taps;
    *k0 = (int32_t)t.k0;
    *off = (int32_t)t.off0;
    return dk__phase_outputs(first, s, osize);
}

dk_status dk__vk_conv_transpose2d(dk_context *ctx, const dk_conv_transpose2d_desc *d, const dk_tensor *x,
                                  const dk_tensor *w, const dk_tensor *bias, const dk_tensor *residual,
                                  const dk_tensor *y) {
    vkop_conv c;
    vkop_stage sg;
    int64_t cing = x->shape[1] / d->groups, coutg = y->shape[1] / d->groups;
    int32_t rh, rw, ws_ci, ws_co;
    int tc;
    dk_status st;
    if (vkop_stage_in(ctx, x, residual, y, d->groups, cing, coutg, &sg, &st)) {
        if (st == DK_OK)
            st = dk__vk_conv_transpose2d(ctx, d, &sg.t[0], w, bias, residual ? &sg.t[2] : NULL, &sg.t[1]);
        return vkop_stage_out(ctx, &sg, y, st);
    }
    st = vkop_conv_common(ctx, "dk_conv_transpose2d", &c, x, w, bias, residual, y, d->activation,
                          d->post_activation, d->output_scale, d->residual_scale);
    if (st != DK_OK) return st;
    /* w is [Cin, Cout/groups, KH, KW]: the GEMM's n is w's dim 1, k's ci is dim 0. */
    ws_ci = c.params.weight.view.stride[0];
    ws_co = c.params.weight.view.stride[1];
    c.params.weight.group_stride = (int32_t)(cing * ws_ci);
    c.params.weight.view.stride[0] = ws_co;
    c.params.weight.view.stride[1] = ws_ci;
    c.params.cin_per_group = (int32_t)cing;
    c.params.in_h = (int32_t)x->shape[2];
    c.params.in_w = (int32_t)x->shape[3];
    c.params.stride_h = 1;
    c.params.stride_w = 1;
    c.params.upsample = 1;
    c.params.out_step_h = d->stride_h;
    c.params.out_step_w = d->stride_w;
    tc = d->groups == 1 && coutg > 8 && vkop_conv_tensor_cores(ctx, x, y, &c.params, cing, coutg);
    if (d->groups == 1) {
        st = vkop_use_packed(ctx, DK_WEIGHT_CONV_TRANSPOSE2D, w, &c.bind[1], &c.params);
        if (st != DK_OK) return st;
    }
    /* Every phase writes its own outputs: no barrier between the phases. */
    for (rh = 0; rh < d->stride_h; rh++) {
        for (rw = 0; rw < d->stride_w; rw++) {
            dk_vk_conv_params *params = &c.params;
            int64_t ohs = vkop_phase(rh, d->stride_h, d->pad_h, d->dilation_h, w->shape[2], y->shape[2],
                                     &params->out_start_h, &params->tap_start_h, &params->tap_step_h, &params->taps_h,
                                     &params->input_offset_h, &params->dilation_h);
            int64_t ows = vkop_phase(rw, d->stride_w, d->pad_w, d->dilation_w, w->shape[3], y->shape[3],
                                     &params->out_start_w, &params->tap_start_w, &params->tap_step_w, &params->taps_w,
                                     &params->input_offset_w, &params->dilation_w);
            if (ohs == 0 || ows == 0) continue;
            params->rows_h = (int32_t)ohs;
            params->rows_w = (int32_t)ows;
            if (tc) {
                st = vkop_conv_cm_run(ctx, "dk_conv_transpose2d", &c, params, (uint64_t)(y->shape[0] * ohs * ows), coutg,
                                      cing * params->taps_h * params->taps_w, residual != NULL);
                if (st != DK_OK) return st;
                c.bind[4].write = 2;
                continue;
            }
            if (coutg <= 8)
                st = vkop_conv_narrow_run(ctx, "dk_conv_transpose2d", &c, (uint64_t)(y->shape[0] * ohs * ows),
                                          (uint64_t)coutg, (uint32_t)d->groups);
            else
                st = vkop_conv_run(ctx, "dk_conv_transpose2d", &c, (uint64_t)(y->shape[0] * ohs * ows),
                                   (uint64_t)coutg, (uint64_t)(cing * params->taps_h * params->taps_w),
                                   (uint32_t)d->groups);
            if (st != DK_OK) return st;
            c.bind[4].write = 2;
        }
    }
    return DK_OK;
}

/* -------------------------------------------------------------- matmul */

/* dk_matmul on the tensor-core conv GEMM, as a 1x1 conv whose pixels are a's rows
 * (K channels) and whose weights are b ([Cout = N, Cin = K, 1, 1] as a view),
 * one image per batch: f16/bf16 where the device has the tensor cores, b shared
 * by the batches, K % 32 == 0, N % 8 == 0 and N > 8, a's k contiguous and its
 * rows 16-byte aligned (the conv's conditions, shaders/conv2d_nhwc_cm.comp).
 * The portable matmul is an order of magnitude slower on such shapes (the
 * VAE's attention projections).  Sets *taken. */
static dk_status vkop_matmul_tc(dk_context *ctx, const dk_matmul_desc *d, const dk_tensor *a, const dk_tensor *b,
                                const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y, int *taken) {
    dk__matmul_conv c;
    dk_vk_binding bind;
    dk_vk_view4 bound;
    int64_t bs[4], bst[4], k = a->shape[a->ndim - 1], n = y->shape[y->ndim - 1];
    int i;
    *taken = 0;
    dk__vkop_view4(b, bs, bst);
    if (!dk__vk_cm_dtype(dk__vk(ctx), y->dtype) || a->dtype != y->dtype || b->dtype != y->dtype || bs[1] != 1 ||
        k % 32 != 0 || n % 8 != 0 || n <= 8)
        return DK_OK;
    dk__matmul_as_conv(d, a, b, residual, y, &c);
    /* a failed bind: the matmul path reports it */
    if (dk__vkop_bind(ctx, "dk_matmul", "a", &c.x, 0, &bind, &bound) != DK_OK) return DK_OK;
    if (bound.stride[1] != 1 || bound.offset % 8 != 0) return DK_OK;
    for (i = 0; i < 4; i++)
        if (i != 1 && bound.stride[i] % 8 != 0) return DK_OK;
    *taken = 1;
    return dk__vk_conv2d(ctx, &c.desc, &c.x, &c.w, bias, residual ? &c.r : NULL, &c.y);
}

dk_status dk__vk_matmul(dk_context *ctx, const dk_matmul_desc *d, const dk_tensor *a, const dk_tensor *b,
                        const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y) {
    const char *op = "dk_matmul";
    dk_vk_binding bind[DK_VK_BINDINGS];
    dk_vk_matmul_params params;
    dk_vk_view4 bound;
    uint32_t spec[DK_VK_SPEC], flags = 0, mode = 0;
    int64_t shape[4], strides[4];
    int64_t batch, m, n, k;
    int taken;
    dk_status st = vkop_matmul_tc(ctx, d, a, b, bias, residual, y, &taken);
    if (taken) return st;
    memset(bind, 0, sizeof bind);
    memset(&params, 0, sizeof params);
    dk__vkop_view4(y, shape, strides);
    batch = shape[1];
    m = shape[2];
    n = shape[3];
    k = a->shape[a->ndim - 1];
    /* 4-D views are right-aligned [1, B, rows, cols]: slots 1..3 are batch, row, col. */
    st = dk__vkop_bind(ctx, op, "a", a, 0, &bind[0], &bound);
    if (st != DK_OK) return st;
    params.a = dk__vkop_view3(&bound);
    st = dk__vkop_bind(ctx, op, "b", b, 0, &bind[1], &bound);
    if (st != DK_OK) return st;
    params.b = dk__vkop_view3(&bound);
    if (bias) {
        st = dk__vkop_bind(ctx, op, "bias", bias, 0, &bind[2], &bound);
        if (st != DK_OK) return st;
        params.bias = dk__vkop_view1(&bound);
        flags |= DK_VK_FLAG_BIAS;
    }
    if (residual) {
        st = dk__vkop_bind(ctx, op, "residual", residual, 0, &bind[3], &bound);
        if (st != DK_OK) return st;
        params.residual = dk__vkop_view3(&bound);
        flags |= DK_VK_FLAG_RESIDUAL;
    }
    st = dk__vkop_bind(ctx, op, "y", y, 1, &bind[4], &bound);
    if (st != DK_OK) return st;
    params.y = dk__vkop_view3(&bound);
    if (m > 0x7fffffff || n > 0x7fffffff || k > 0x7fffffff) return dk__vkop_too_big(ctx, op, "M, N or K", 0x80000000u);
    params.m = (int32_t)m;
    params.n = (int32_t)n;
    params.k = (int32_t)k;
    params.out_scale = d->output_scale;
    params.residual_scale = d->residual_scale;
    /* K-fast fetches where k has the smaller stride: coalesced loads. */
    if (k > 1 && (m == 1 || params.a.stride[2] < params.a.stride[1])) flags |= DK_VK_FLAG_A_KFAST;
    if (k > 1 && (n == 1 || params.b.stride[1] < params.b.stride[2])) flags |= DK_VK_FLAG_B_KFAST;
    if (n > 1 && m > 1 && params.y.stride[1] < params.y.stride[2]) flags |= DK_VK_FLAG_ROWS_FASTEST;
    {   /* 16-byte fetches of 8 k of a row of a, of 8 columns of a row of b, or of
         * 8 k of a column of b (linear's W^T): the checks see each operand as a
         * 4-D view (batch, rows, unused, the candidate unit-stride dim) */
        int32_t v = y->dtype == DK_F32 ? 4 : 8;
        dk_vk_view4 a_view, b_view;
        a_view.stride[0] = params.a.stride[0], a_view.stride[1] = params.a.stride[1], a_view.stride[2] = 0;
        a_view.stride[3] = params.a.stride[2], a_view.offset = params.a.offset;
        b_view.stride[0] = params.b.stride[0], b_view.stride[1] = params.b.stride[1], b_view.stride[2] = 0;
        b_view.stride[3] = params.b.stride[2], b_view.offset = params.b.offset;
        if (k % 8 == 0 && dk__vkop_vec_view(&a_view, 3, v)) mode |= DK_VK_GEMM_MODE_VEC_A;
        if (n % 8 == 0 && dk__vkop_vec_view(&b_view, 3, v)) mode |= DK_VK_GEMM_MODE_VEC_B_N;
        b_view.stride[1] = params.b.stride[2], b_view.stride[3] = params.b.stride[1]; /* k now unit-stride candidate */
        if (!(mode & DK_VK_GEMM_MODE_VEC_B_N) && k % 8 == 0 && dk__vkop_vec_view(&b_view, 3, v))
            mode |= DK_VK_GEMM_MODE_VEC_B_K;
    }
    dk__vkop_spec(spec, &params.epilogue, y->dtype, dk__vkop_epilogue_act(d->activation, d->post_activation), flags,
                  bias ? bias->dtype : y->dtype, mode); /* DT2: the bias's dtype */
    /* 128x128 output tiles (shaders/dk_gemm_tile.glsl) */
    return dk__vk_dispatch(ctx, DK_VK_SH_MATMUL, spec, bind, &params, sizeof params, (uint64_t)(m + 127) / 128,
                           (uint32_t)((n + 127) / 128), (uint32_t)batch);
}

/* ---------------------------------------------------------- elementwise */

#undef VKOP_C3D_IN_PLACE_ROWS
