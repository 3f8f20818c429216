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
 * tensor-core conv of a padded input, vkop_padcin_ok); each cached apart. */
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
    st = dk__vkop_eltwise(ctx, "dk_prepare_weight", 0, DK_ACT_NONE, 1.0f, w, 0.0f, NULL, 1.0f, &dst);
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
static void vkop_bind_packed(vkop_packed *pk, dk_vk_binding *b, int32_t *p) {
    b->buf = &pk->buf;
    b->offset = pk->buf.base;
    b->range = pk->buf.size;
    b->write = 0;
    p[DK_VKP_CV_WGS] = 0;
    p[DK_VKP_CV_WGS + 1] = pk->s_co;
    p[DK_VKP_CV_WGS + 2] = pk->s_ci;
    p[DK_VKP_CV_WGS + 3] = pk->s_kh;
    p[DK_VKP_CV_WGS + 4] = pk->s_kw;
    p[DK_VKP_CV_WGS + 5] = 0;
}

/* ... at the packed copy of w (groups == 1). */
static dk_status vkop_use_packed(dk_context *ctx, dk_weight_use use, const dk_tensor *w, dk_vk_binding *b, int32_t *p) {
    vkop_packed *pk;
    dk_status st = vkop_packed_weight(ctx, use, w, &pk);
    if (st != DK_OK) return st;
    vkop_bind_packed(pk, b, p);
    return DK_OK;
}

/* Shared by conv2d and conv_transpose2d: binds and fills the parts of the conv
 * parameters that do not depend on the sub-grid. */
typedef struct vkop_conv {
    dk_vk_binding bind[DK_VK_BINDINGS];
    int32_t p[DK_VKP_SLOT_INTS];
    uint32_t spec[DK_VK_SPEC];
} vkop_conv;

static dk_status vkop_conv_common(dk_context *ctx, const char *op, vkop_conv *c, const dk_tensor *x,
                                  const dk_tensor *w, const dk_tensor *bias, const dk_tensor *residual,
                                  const dk_tensor *y, dk_activation act, dk_activation post, float oscale,
                                  float rscale) {
    int32_t wp[5];
    dk_status st;
    uint32_t flags = 0;
    memset(c, 0, sizeof *c);
    st = dk__vkop_bind(ctx, op, "x", x, 0, &c->bind[0], &c->p[DK_VKP_CV_XS]);
    if (st == DK_OK) st = dk__vkop_bind(ctx, op, "w", w, 0, &c->bind[1], wp);
    if (st == DK_OK && residual) st = dk__vkop_bind(ctx, op, "residual", residual, 0, &c->bind[3], &c->p[DK_VKP_CV_RS]);
    if (st == DK_OK) st = dk__vkop_bind(ctx, op, "y", y, 1, &c->bind[4], &c->p[DK_VKP_CV_YS]);
    if (st != DK_OK) return st;
    /* bias [C]: its stride sits in slot 3 of the 4-D view; restore the pair. */
    if (bias) {
        int32_t bst[5];
        st = dk__vkop_bind(ctx, op, "bias", bias, 0, &c->bind[2], bst);
        if (st != DK_OK) return st;
        c->p[DK_VKP_CV_BS] = bst[3];
        c->p[DK_VKP_CV_BS + 1] = bst[4];
        flags |= 1;
    }
    if (residual) flags |= 2;
    /* K-fast A loads when the input is channels-last (C stride below W stride). */
    if (x->shape[1] > 1 && (x->shape[3] == 1 || x->strides[1] < x->strides[3])) flags |= 4;
    c->p[DK_VKP_CV_WGS + 1] = wp[0]; /* caller re-maps for transposed weights */
    c->p[DK_VKP_CV_WGS + 2] = wp[1];
    c->p[DK_VKP_CV_WGS + 3] = wp[2];
    c->p[DK_VKP_CV_WGS + 4] = wp[3];
    c->p[DK_VKP_CV_WGS + 5] = wp[4];
    c->p[DK_VKP_CV_OSCALE] = dk__vkop_fbits(oscale);
    c->p[DK_VKP_CV_RSCALE] = dk__vkop_fbits(rscale);
    /* DT2: the bias's dtype (f32 with 16-bit activations, or theirs) */
    dk__vkop_spec(c->spec, c->p, y->dtype, dk__vkop_epilogue_act(act, post), flags, bias ? bias->dtype : y->dtype, 0);
    return DK_OK;
}

static dk_status vkop_conv_run(dk_context *ctx, const char *op, vkop_conv *c, uint64_t m, uint64_t nc, uint64_t k,
                               uint32_t groups) {
    int32_t v = c->spec[DK_VKS_DT] == DK_F32 ? 4 : 8, cing = c->p[DK_VKP_CV_CING];
    if (m > 0x7fffffff) return dk__vkop_too_big(ctx, op, "N*OH*OW", m);
    if (k > 0x7fffffff) return dk__vkop_too_big(ctx, op, "Cin/groups*KH*KW", k);
    c->p[DK_VKP_CV_M] = (int32_t)m;
    c->p[DK_VKP_CV_NC] = (int32_t)nc;
    c->p[DK_VKP_CV_K] = (int32_t)k;
    /* 128x128 output tiles (shaders/dk_gemm_tile.glsl); bit 6: the epilogue
     * walks rows (pixels) fastest when y's channel stride is the larger one. */
    c->p[DK_VKP_FLAGS] &= ~64;
    if (c->p[DK_VKP_CV_YS + 1] > c->p[DK_VKP_CV_YS + 3]) c->p[DK_VKP_FLAGS] |= 64;
    /* MODE bits 0, 1: 16-byte fetches of 8 input channels (channels-last input)
     * and of 8 output channels of the weights (packed: [tap][ci][co], co fastest). */
    c->spec[DK_VKS_MODE] = c->p[DK_VKP_CV_UPS] == 2 ? 4 : 0; /* bit 2: fused 2x upsample */
    if (cing % 8 == 0 && dk__vkop_vec_view(&c->p[DK_VKP_CV_XS], 1, v)) c->spec[DK_VKS_MODE] |= 1;
    if (nc % 8 == 0 && c->p[DK_VKP_CV_WGS] % v == 0 && dk__vkop_vec_view(&c->p[DK_VKP_CV_WGS + 1], 0, v))
        c->spec[DK_VKS_MODE] |= 2;
    return dk__vk_dispatch(ctx, DK_VK_SH_CONV2D, c->spec, c->bind, c->p, DK_VKP_SLOT_INTS, (m + 127) / 128,
                           (uint32_t)((nc + 127) / 128), groups);
}

/* Narrow outputs (Cout/groups <= 8: depthwise, and the SDXL VAE's conv_out
 * 128 -> 3 where the tensor-core narrow tile cannot take it: f32, groups,
 * Cin % 32 != 0, no cooperative matrices): MODE bit 4 of shaders/conv2d.comp,
 * a direct convolution with one
 * output pixel per invocation, instead of 128-wide GEMM tiles that would waste
 * 15/16 of their work or more; any dtype, layout and groups.  Bit 5: at most 4
 * channels; bits 0 and 2 as in the GEMM path (16-byte channel loads, fused
 * upsample); bit 6 with bit 0: 16 invocations per pixel (shaders/conv2d.comp). */
static int vkop_narrow_lanes(const dk_context *ctx) { return ctx->knobs.vulkan_narrow_lanes != 0; }

static dk_status vkop_conv_narrow_run(dk_context *ctx, const char *op, vkop_conv *c, uint64_t m, uint64_t nc,
                                      uint32_t groups) {
    int32_t v = c->spec[DK_VKS_DT] == DK_F32 ? 4 : 8, cing = c->p[DK_VKP_CV_CING];
    if (m > 0x7fffffff) return dk__vkop_too_big(ctx, op, "N*OH*OW", m);
    c->p[DK_VKP_CV_M] = (int32_t)m;
    c->p[DK_VKP_CV_NC] = (int32_t)nc;
    c->spec[DK_VKS_MODE] = 16 | (nc <= 4 ? 32 : 0) | (c->p[DK_VKP_CV_UPS] == 2 ? 4 : 0);
    if (cing % 8 == 0 && dk__vkop_vec_view(&c->p[DK_VKP_CV_XS], 1, v)) {
        /* bit 6: lane groups (16 invocations per pixel, 64 pixels per
         * workgroup); DIFKERN_VULKAN_NARROW_LANES=0 keeps one pixel per
         * invocation, for benchmarks */
        int lanes = vkop_narrow_lanes(ctx);
        c->spec[DK_VKS_MODE] |= 1 | (lanes ? 64 : 0);
        if (lanes)
            return dk__vk_dispatch(ctx, DK_VK_SH_CONV2D, c->spec, c->bind, c->p, DK_VKP_SLOT_INTS, (m + 63) / 64, 1,
                                   groups);
    }
    return dk__vk_dispatch(ctx, DK_VK_SH_CONV2D, c->spec, c->bind, c->p, DK_VKP_SLOT_INTS, (m + 255) / 256, 1, groups);
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
 * its 32-deep K slice and Cout a multiple of 8; p holds the bound views'
 * strides and offsets.  Its weights are packed by us (vkop_packed_weight), so
 * their strides are whole vectors. */
static int vkop_conv_tensor_cores(dk_context *ctx, const dk_tensor *x, const dk_tensor *y, const int32_t *p,
                                  int64_t cing, int64_t coutg) {
    dk_vk_state *s = dk__vk(ctx);
    int i;
    if (!dk__vk_cm_dtype(s, x->dtype) || y->dtype != x->dtype || cing % 32 != 0) return 0;
    if (coutg % 8 != 0 && !vkop_cm_narrow(ctx, coutg)) return 0;
    if (s->props.limits.maxComputeSharedMemorySize < VKOP_CM_SHARED) return 0;
    if (p[DK_VKP_CV_XS + 1] != 1 || p[DK_VKP_CV_XS + 4] % 8 != 0) return 0;
    for (i = 0; i < 4; i++)
        if (i != 1 && p[DK_VKP_CV_XS + i] % 8 != 0) return 0;
    return 1;
}

/* A 4-D view (strides at p[base..base+3], offset at p[base+4]) whose channels
 * are contiguous and whose pixels start on 16-byte vectors (f16). */
static int vkop_cm_vec_view(const int32_t *p, int base) {
    int i;
    if (p[base + 1] != 1 || p[base + 4] % 8 != 0) return 0;
    for (i = 0; i < 4; i++)
        if (i != 1 && p[base + i] % 8 != 0) return 0;
    return 1;
}

/* One tensor-core GEMM (conv2d, or one stride phase of conv_transpose2d):
 * M = N*OHs*OWs rows, coutg columns, K = Cin*taps.  Tile shape (MODE of
 * shaders/dk_gemm_coopmat.glsl): 128x128 with 32-deep K slices in workgroups
 * of 128 invocations (four 64x64 subgroups), the fastest tile measured on
 * either module (docs/conv.md).  It compiles to 241 registers, two workgroups
 * per SM, 32 KB of loads in flight per SM. */
static dk_status vkop_conv_cm_run(dk_context *ctx, const char *op, vkop_conv *c, int32_t *p, uint64_t m,
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
                                                                         : 4u;
    const uint32_t bm = 128u << (mode & 1), bn = narrow ? 16u : 128u << ((mode >> 1) & 1);
    const int fixed = ctx->knobs.vulkan_cm_fixed && p[DK_VKP_CV_TH] == p[DK_VKP_CV_TW] &&
                      p[DK_VKP_CV_DILH] == 1 && p[DK_VKP_CV_DILW] == 1 && p[DK_VKP_CV_UPS] == 1 &&
                      p[DK_VKP_CV_KSTH] == 1 && p[DK_VKP_CV_KSTW] == 1 &&
                      (p[DK_VKP_CV_TH] == 2 ||
                       ((p[DK_VKP_CV_TH] == 3 || p[DK_VKP_CV_TH] == 1) && p[DK_VKP_CV_KH0] == 0 && p[DK_VKP_CV_KW0] == 0));
    if (m > 0x7fffffff) return dk__vkop_too_big(ctx, op, "N*OH*OW", m);
    if (k > 0x7fffffff) return dk__vkop_too_big(ctx, op, "Cin*KH*KW", (uint64_t)k);
    p[DK_VKP_CV_M] = (int32_t)m;
    p[DK_VKP_CV_NC] = (int32_t)coutg;
    p[DK_VKP_CV_K] = (int32_t)k;
    /* bit 4: 16-byte epilogue vectors (y and the residual channels-last, aligned) */
    p[DK_VKP_FLAGS] &= ~16;
    if (coutg % 8 == 0 && vkop_cm_vec_view(p, DK_VKP_CV_YS) && (!has_residual || vkop_cm_vec_view(p, DK_VKP_CV_RS)))
        p[DK_VKP_FLAGS] |= 16;
    memcpy(spec, c->spec, sizeof spec);
    spec[DK_VKS_MODE] = mode;
    /* MODE bit 3, halo staging: 128-pixel tiles inside one sub-grid row, input step 1 along w,
     * 2-3 taps each way and 6 or more in all (shaders/conv2d_nhwc_cm.comp).
     * DIFKERN_VULKAN_CM_HALO=0: off. */
    if (!narrow && inv == 128 && mode == 0 && ctx->knobs.vulkan_cm_halo && p[DK_VKP_CV_STRW] == 1 &&
        (p[DK_VKP_CV_DILW] == 1 || p[DK_VKP_CV_DILW] == -1) && p[DK_VKP_CV_TH] >= 2 && p[DK_VKP_CV_TH] <= 3 &&
        p[DK_VKP_CV_TW] >= 2 && p[DK_VKP_CV_TW] <= 3 && p[DK_VKP_CV_TH] * p[DK_VKP_CV_TW] >= 6 &&
        p[DK_VKP_CV_OWS] % 128 == 0 && dk__vk(ctx)->props.limits.maxComputeSharedMemorySize >= VKOP_CM_HALO_SHARED)
        spec[DK_VKS_MODE] |= 8u;
    /* MODE bit 4: the tap grid compiled in, 3x3 or 1x1 (bit 6) at kernel offset 0 or 2x2 (bit 5), step 1,
     * dilation 1, no upsample.  DIFKERN_VULKAN_CM_FIXED=0: off. */
    if (fixed) spec[DK_VKS_MODE] |= p[DK_VKP_CV_TH] == 3 ? 16u : p[DK_VKP_CV_TH] == 2 ? 48u : 80u;
    /* MODE bits 7, 8: the vector epilogue and the residual compiled in */
    if (p[DK_VKP_FLAGS] & 16) spec[DK_VKS_MODE] |= 128u;
    if (p[DK_VKP_FLAGS] & 2) spec[DK_VKS_MODE] |= 256u;
    return dk__vk_dispatch(ctx,
                           dk__vk_cm_shader(dk__vk(ctx),
                                            narrow       ? DK_VK_SH_CONV2D_NHWC_CM_NARROW
                                            : inv == 128 ? DK_VK_SH_CONV2D_NHWC_CM128
                                                         : DK_VK_SH_CONV2D_NHWC_CM,
                                            (dk_dtype)spec[DK_VKS_DT]),
                           spec,
                           c->bind, p, DK_VKP_SLOT_INTS, (m + bm - 1) / bm, (uint32_t)(((uint64_t)coutg + bn - 1) / bn),
                           1);
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
    int32_t *p = c->p;
    int tc = vkop_conv_tensor_cores(ctx, x, y, c->p, cing, coutg), a, b;
    dk_status st;
    dk__up2_axis(w->shape[2], d->pad_h, &ah);
    dk__up2_axis(w->shape[3], d->pad_w, &aw);
    st = vkop_up2_weight(ctx, w, d, &pk);
    if (st != DK_OK) return st;
    vkop_bind_packed(pk, &c->bind[1], p);
    p[DK_VKP_CV_UPS] = 1;
    p[DK_VKP_CV_OSTH] = 2;
    p[DK_VKP_CV_OSTW] = 2;
    p[DK_VKP_CV_KSTH] = 1;
    p[DK_VKP_CV_KSTW] = 1;
    p[DK_VKP_CV_DILH] = 1;
    p[DK_VKP_CV_DILW] = 1;
    for (a = 0; a < 2; a++)
        for (b = 0; b < 2; b++) {
            const int64_t ohs = (y->shape[2] - a + 1) / 2, ows = (y->shape[3] - b + 1) / 2;
            const int64_t k = cing * ah.taps[a] * aw.taps[b];
            if (ohs <= 0 || ows <= 0) continue;
            p[DK_VKP_CV_OH0] = a;
            p[DK_VKP_CV_OW0] = b;
            p[DK_VKP_CV_KH0] = (int32_t)(a * ah.tmax);
            p[DK_VKP_CV_KW0] = (int32_t)(b * aw.tmax);
            p[DK_VKP_CV_TH] = (int32_t)ah.taps[a];
            p[DK_VKP_CV_TW] = (int32_t)aw.taps[b];
            p[DK_VKP_CV_OFFH] = (int32_t)ah.off0[a];
            p[DK_VKP_CV_OFFW] = (int32_t)aw.off0[b];
            p[DK_VKP_CV_OHS] = (int32_t)ohs;
            p[DK_VKP_CV_OWS] = (int32_t)ows;
            st = tc ? vkop_conv_cm_run(ctx, "dk_conv2d", c, p, (uint64_t)(y->shape[0] * ohs * ows), coutg, k, has_residual)
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
static int vkop_cl16(const dk_tensor *t) { return dk__channels_last16(t, t->offset, 0); }

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
    for (i = 0; i < 3; i++) want[i] = src[i] && !vkop_cl16(src[i]) && (i == 0 || (tc && !narrow));
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
        /* dense channels-last with C % (16 / es) == 0 (checked above): vkop_cl16 holds */
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
 * DIFKERN_VULKAN_CM_PADCIN=0: off, for benchmarks. */
static int vkop_padcin_ok(dk_context *ctx, const dk_conv2d_desc *d, const dk_tensor *x, const dk_tensor *y,
                          int64_t cing, int64_t coutg) {
    dk_vk_state *s = dk__vk(ctx);
    const int64_t cpad = dk__conv_cin_pad(d, x, y, cing, 32); /* the 32-deep K slice */
    const uint64_t padded = (uint64_t)(x->shape[0] * x->shape[2] * x->shape[3]) * (uint64_t)cpad;
    return ctx->knobs.vulkan_cm_padcin && cpad && dk__vk_cm_dtype(s, x->dtype) && ((coutg > 8 && coutg % 8 == 0) || vkop_cm_narrow(ctx, coutg)) &&
           s->props.limits.maxComputeSharedMemorySize >= VKOP_CM_SHARED && padded <= VKOP_MAX_INDEX;
}

static dk_status vkop_conv2d_run(dk_context *ctx, const dk_conv2d_desc *d, const dk_tensor *x, const dk_tensor *w,
                                 const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y, int padcin);

/* The padded copy of x (vkop_padcin_ok), then the conv on it. */
static dk_status vkop_conv2d_padcin(dk_context *ctx, const dk_conv2d_desc *d, const dk_tensor *x, const dk_tensor *w,
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
    if (vkop_padcin_ok(ctx, d, x, y, x->shape[1] / d->groups, y->shape[1] / d->groups))
        return vkop_conv2d_padcin(ctx, d, x, w, bias, residual, y);
    return vkop_conv2d_run(ctx, d, x, w, bias, residual, y, 0);
}

/* padcin: x has w's Cin rounded up to a multiple of 32 (zeros past it). */
static dk_status vkop_conv2d_run(dk_context *ctx, const dk_conv2d_desc *d, const dk_tensor *x, const dk_tensor *w,
                                 const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y, int padcin) {
    vkop_conv c;
    vkop_stage sg;
    int64_t cing = x->shape[1] / d->groups, coutg = y->shape[1] / d->groups;
    dk_status st;
    if (vkop_stage_in(ctx, x, residual, y, d->groups, cing, coutg, &sg, &st)) {
        if (st == DK_OK) st = vkop_conv2d_run(ctx, d, &sg.t[0], w, bias, residual ? &sg.t[2] : NULL, &sg.t[1], padcin);
        return vkop_stage_out(ctx, &sg, y, st);
    }
    st = vkop_conv_common(ctx, "dk_conv2d", &c, x, w, bias, residual, y, d->activation, d->post_activation,
                          d->output_scale, d->residual_scale);
    if (st != DK_OK) return st;
    c.p[DK_VKP_CV_WGS] = (int32_t)(coutg * c.p[DK_VKP_CV_WGS + 1]);
    c.p[DK_VKP_CV_CING] = (int32_t)cing;
    c.p[DK_VKP_CV_H] = (int32_t)x->shape[2];
    c.p[DK_VKP_CV_W] = (int32_t)x->shape[3];
    c.p[DK_VKP_CV_OHS] = (int32_t)y->shape[2];
    c.p[DK_VKP_CV_OWS] = (int32_t)y->shape[3];
    c.p[DK_VKP_CV_TH] = (int32_t)w->shape[2];
    c.p[DK_VKP_CV_TW] = (int32_t)w->shape[3];
    c.p[DK_VKP_CV_STRH] = d->stride_h;
    c.p[DK_VKP_CV_STRW] = d->stride_w;
    c.p[DK_VKP_CV_OFFH] = -d->pad_h;
    c.p[DK_VKP_CV_OFFW] = -d->pad_w;
    c.p[DK_VKP_CV_DILH] = d->dilation_h;
    c.p[DK_VKP_CV_DILW] = d->dilation_w;
    c.p[DK_VKP_CV_UPS] = d->upsample;
    c.p[DK_VKP_CV_KSTH] = 1;
    c.p[DK_VKP_CV_KSTW] = 1;
    c.p[DK_VKP_CV_OSTH] = 1;
    c.p[DK_VKP_CV_OSTW] = 1;
    if (vkop_up2_ok(ctx, d, coutg)) return vkop_conv2d_up2(ctx, d, x, w, y, residual != NULL, &c, cing, coutg);
    if (d->groups == 1) {
        int tc = (coutg > 8 || vkop_cm_narrow(ctx, coutg)) && vkop_conv_tensor_cores(ctx, x, y, c.p, cing, coutg);
        vkop_packed *pk;
        /* the narrow tile (coutg <= 8) reads 16 packed output channels per tap row */
        st = vkop_packed_weight_as(ctx, DK_WEIGHT_CONV2D, w, tc && coutg <= 8, padcin, &pk);
        if (st != DK_OK) return st;
        vkop_bind_packed(pk, &c.bind[1], c.p);
        c.p[DK_VKP_FLAGS] |= 8; /* every tap in order: B is dense [K][Cout] */
        if (tc)
            return vkop_conv_cm_run(ctx, "dk_conv2d", &c, c.p, (uint64_t)(y->shape[0] * y->shape[2] * y->shape[3]),
                                    coutg, cing * w->shape[2] * w->shape[3], residual != NULL);
    }
    if (coutg <= 8)
        return vkop_conv_narrow_run(ctx, "dk_conv2d", &c, (uint64_t)(y->shape[0] * y->shape[2] * y->shape[3]),
                                    (uint64_t)coutg, (uint32_t)d->groups);
    return vkop_conv_run(ctx, "dk_conv2d", &c, (uint64_t)(y->shape[0] * y->shape[2] * y->shape[3]), (uint64_t)coutg,
                         (uint64_t)(cing * w->shape[2] * w->shape[3]), (uint32_t)d->groups);
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
    ws_ci = c.p[DK_VKP_CV_WGS + 1];
    ws_co = c.p[DK_VKP_CV_WGS + 2];
    c.p[DK_VKP_CV_WGS] = (int32_t)(cing * ws_ci);
    c.p[DK_VKP_CV_WGS + 1] = ws_co;
    c.p[DK_VKP_CV_WGS + 2] = ws_ci;
    c.p[DK_VKP_CV_CING] = (int32_t)cing;
    c.p[DK_VKP_CV_H] = (int32_t)x->shape[2];
    c.p[DK_VKP_CV_W] = (int32_t)x->shape[3];
    c.p[DK_VKP_CV_STRH] = 1;
    c.p[DK_VKP_CV_STRW] = 1;
    c.p[DK_VKP_CV_UPS] = 1;
    c.p[DK_VKP_CV_OSTH] = d->stride_h;
    c.p[DK_VKP_CV_OSTW] = d->stride_w;
    tc = d->groups == 1 && coutg > 8 && vkop_conv_tensor_cores(ctx, x, y, c.p, cing, coutg);
    if (d->groups == 1) {
        st = vkop_use_packed(ctx, DK_WEIGHT_CONV_TRANSPOSE2D, w, &c.bind[1], c.p);
        if (st != DK_OK) return st;
    }
    /* Every phase writes its own outputs: no barrier between the phases. */
    for (rh = 0; rh < d->stride_h; rh++) {
        for (rw = 0; rw < d->stride_w; rw++) {
            int32_t *p = c.p;
            int64_t ohs = vkop_phase(rh, d->stride_h, d->pad_h, d->dilation_h, w->shape[2], y->shape[2],
                                     &p[DK_VKP_CV_OH0], &p[DK_VKP_CV_KH0], &p[DK_VKP_CV_KSTH], &p[DK_VKP_CV_TH],
                                     &p[DK_VKP_CV_OFFH], &p[DK_VKP_CV_DILH]);
            int64_t ows = vkop_phase(rw, d->stride_w, d->pad_w, d->dilation_w, w->shape[3], y->shape[3],
                                     &p[DK_VKP_CV_OW0], &p[DK_VKP_CV_KW0], &p[DK_VKP_CV_KSTW], &p[DK_VKP_CV_TW],
                                     &p[DK_VKP_CV_OFFW], &p[DK_VKP_CV_DILW]);
            if (ohs == 0 || ows == 0) continue;
            p[DK_VKP_CV_OHS] = (int32_t)ohs;
            p[DK_VKP_CV_OWS] = (int32_t)ows;
            if (tc) {
                st = vkop_conv_cm_run(ctx, "dk_conv_transpose2d", &c, p, (uint64_t)(y->shape[0] * ohs * ows), coutg,
                                      cing * p[DK_VKP_CV_TH] * p[DK_VKP_CV_TW], residual != NULL);
                if (st != DK_OK) return st;
                c.bind[4].write = 2;
                continue;
            }
            if (coutg <= 8)
                st = vkop_conv_narrow_run(ctx, "dk_conv_transpose2d", &c, (uint64_t)(y->shape[0] * ohs * ows),
                                          (uint64_t)coutg, (uint32_t)d->groups);
            else
                st = vkop_conv_run(ctx, "dk_conv_transpose2d", &c, (uint64_t)(y->shape[0] * ohs * ows),
                                   (uint64_t)coutg, (uint64_t)(cing * p[DK_VKP_CV_TH] * p[DK_VKP_CV_TW]),
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
    int32_t t[5];
    int64_t bs[4], bst[4], k = a->shape[a->ndim - 1], n = y->shape[y->ndim - 1];
    int i;
    *taken = 0;
    dk__vkop_view4(b, bs, bst);
    if (!dk__vk_cm_dtype(dk__vk(ctx), y->dtype) || a->dtype != y->dtype || b->dtype != y->dtype || bs[1] != 1 ||
        k % 32 != 0 || n % 8 != 0 || n <= 8)
        return DK_OK;
    dk__matmul_as_conv(d, a, b, residual, y, &c);
    if (dk__vkop_bind(ctx, "dk_matmul", "a", &c.x, 0, &bind, t) != DK_OK) return DK_OK; /* the matmul path reports it */
    if (t[1] != 1 || t[4] % 8 != 0) return DK_OK;
    for (i = 0; i < 4; i++)
        if (i != 1 && t[i] % 8 != 0) return DK_OK;
    *taken = 1;
    return dk__vk_conv2d(ctx, &c.desc, &c.x, &c.w, bias, residual ? &c.r : NULL, &c.y);
}

dk_status dk__vk_matmul(dk_context *ctx, const dk_matmul_desc *d, const dk_tensor *a, const dk_tensor *b,
                        const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y) {
    const char *op = "dk_matmul";
    dk_vk_binding bind[DK_VK_BINDINGS];
    int32_t p[DK_VKP_SLOT_INTS], t[5];
    uint32_t spec[DK_VK_SPEC], flags = 0, mode = 0;
    int64_t shape[4], strides[4];
    int64_t batch, m, n, k;
    int taken;
    dk_status st = vkop_matmul_tc(ctx, d, a, b, bias, residual, y, &taken);
    if (taken) return st;
    memset(bind, 0, sizeof bind);
    memset(p, 0, sizeof p);
    dk__vkop_view4(y, shape, strides);
    batch = shape[1];
    m = shape[2];
    n = shape[3];
    k = a->shape[a->ndim - 1];
    /* 4-D views are right-aligned [1, B, rows, cols]: slots 1..3 are batch, row, col. */
    st = dk__vkop_bind(ctx, op, "a", a, 0, &bind[0], t);
    if (st != DK_OK) return st;
    p[DK_VKP_MM_AS] = t[1], p[DK_VKP_MM_AS + 1] = t[2], p[DK_VKP_MM_AS + 2] = t[3], p[DK_VKP_MM_AS + 3] = t[4];
    st = dk__vkop_bind(ctx, op, "b", b, 0, &bind[1], t);
    if (st != DK_OK) return st;
    p[DK_VKP_MM_BS] = t[1], p[DK_VKP_MM_BS + 1] = t[2], p[DK_VKP_MM_BS + 2] = t[3], p[DK_VKP_MM_BS + 3] = t[4];
    if (bias) {
        st = dk__vkop_bind(ctx, op, "bias", bias, 0, &bind[2], t);
        if (st != DK_OK) return st;
        p[DK_VKP_MM_BIAS] = t[3], p[DK_VKP_MM_BIAS + 1] = t[4];
        flags |= 1;
    }
    if (residual) {
        st = dk__vkop_bind(ctx, op, "residual", residual, 0, &bind[3], t);
        if (st != DK_OK) return st;
        p[DK_VKP_MM_RS] = t[1], p[DK_VKP_MM_RS + 1] = t[2], p[DK_VKP_MM_RS + 2] = t[3], p[DK_VKP_MM_RS + 3] = t[4];
        flags |= 2;
    }
    st = dk__vkop_bind(ctx, op, "y", y, 1, &bind[4], t);
    if (st != DK_OK) return st;
    p[DK_VKP_MM_YS] = t[1], p[DK_VKP_MM_YS + 1] = t[2], p[DK_VKP_MM_YS + 2] = t[3], p[DK_VKP_MM_YS + 3] = t[4];
    if (m > 0x7fffffff || n > 0x7fffffff || k > 0x7fffffff) return dk__vkop_too_big(ctx, op, "M, N or K", 0x80000000u);
    p[DK_VKP_MM_M] = (int32_t)m;
    p[DK_VKP_MM_N] = (int32_t)n;
    p[DK_VKP_MM_K] = (int32_t)k;
    p[DK_VKP_MM_OSCALE] = dk__vkop_fbits(d->output_scale);
    p[DK_VKP_MM_RSCALE] = dk__vkop_fbits(d->residual_scale);
    /* K-fast fetches (bit 2 for a, bit 5 for b) where k has the smaller stride: coalesced loads. */
    if (k > 1 && (m == 1 || p[DK_VKP_MM_AS + 2] < p[DK_VKP_MM_AS + 1])) flags |= 4;
    if (k > 1 && (n == 1 || p[DK_VKP_MM_BS + 1] < p[DK_VKP_MM_BS + 2])) flags |= 32;
    if (n > 1 && m > 1 && p[DK_VKP_MM_YS + 1] < p[DK_VKP_MM_YS + 2]) flags |= 64; /* epilogue rows fastest */
    {   /* MODE bits 0, 1, 3: 16-byte fetches of 8 k of a row of a, of 8 columns of a
         * row of b, or of 8 k of a column of b (linear's W^T) */
        int32_t v = y->dtype == DK_F32 ? 4 : 8, va[5], vb[5];
        va[0] = p[DK_VKP_MM_AS], va[1] = p[DK_VKP_MM_AS + 1], va[2] = 0, va[3] = p[DK_VKP_MM_AS + 2];
        va[4] = p[DK_VKP_MM_AS + 3];
        vb[0] = p[DK_VKP_MM_BS], vb[1] = p[DK_VKP_MM_BS + 1], vb[2] = 0, vb[3] = p[DK_VKP_MM_BS + 2];
        vb[4] = p[DK_VKP_MM_BS + 3];
        if (k % 8 == 0 && dk__vkop_vec_view(va, 3, v)) mode |= 1;
        if (n % 8 == 0 && dk__vkop_vec_view(vb, 3, v)) mode |= 2;
        vb[1] = p[DK_VKP_MM_BS + 2], vb[3] = p[DK_VKP_MM_BS + 1]; /* k now in slot 3 */
        if (!(mode & 2) && k % 8 == 0 && dk__vkop_vec_view(vb, 3, v)) mode |= 8;
    }
    dk__vkop_spec(spec, p, y->dtype, dk__vkop_epilogue_act(d->activation, d->post_activation), flags,
                  bias ? bias->dtype : y->dtype, mode); /* DT2: the bias's dtype */
    /* 128x128 output tiles (shaders/dk_gemm_tile.glsl) */
    return dk__vk_dispatch(ctx, DK_VK_SH_MATMUL, spec, bind, p, DK_VKP_SLOT_INTS, (uint64_t)(m + 127) / 128,
                           (uint32_t)((n + 127) / 128), (uint32_t)batch);
}

/* ---------------------------------------------------------- elementwise */
