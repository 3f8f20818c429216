/* Vulkan backend ops: turn validated op arguments into bindings, parameter
 * slots (shaders/dk_vk_params.h) and dispatches of the portable shader family.
 * Each tensor is bound at its own (aligned) offset with the range its view
 * spans, so element offsets and strides fit the shaders' 32-bit indices. */
#include "vk_internal.h"

#include <math.h>
#include <stdlib.h>

#define VKOP_MAX_INDEX 0xffffffffull

/* Right-aligned 4-D view: dims missing on the left are size 1; a size-1 dim
 * gets stride 0 (its stride can never matter, and this keeps it 32-bit). */
static void vkop_view4(const dk_tensor *t, int64_t shape[4], int64_t strides[4]) {
    int32_t i, pad = 4 - t->ndim;
    for (i = 0; i < 4; i++) {
        shape[i] = 1;
        strides[i] = 0;
    }
    for (i = 0; i < t->ndim; i++) {
        shape[pad + i] = t->shape[i];
        strides[pad + i] = t->shape[i] == 1 ? 0 : t->strides[i];
    }
}

/* Bind tensor t in slot b; p[0..3] = its 4-D strides, p[4] = its element offset. */
static dk_status vkop_bind(dk_context *ctx, const char *op, const char *name, const dk_tensor *t, int write,
                           dk_vk_binding *b, int32_t *p) {
    dk_vk_state *s = dk__vk(ctx);
    dk_vk_buf *vb = dk__vk_buf(t->buffer);
    uint64_t es = dk_dtype_size(t->dtype), align = s->props.limits.minStorageBufferOffsetAlignment;
    uint64_t extent = 1, start, aligned, delta, range;
    int64_t shape[4], strides[4];
    int i;
    vkop_view4(t, shape, strides);
    for (i = 0; i < 4; i++) extent += (uint64_t)(shape[i] - 1) * (uint64_t)strides[i];
    start = vb->base + t->offset;
    if (align == 0) align = 1;
    aligned = start - start % align;
    delta = start - aligned;
    if (delta % es)
        return dk__fail(ctx, DK_ERR_UNSUPPORTED, "%s: %s.offset (=%llu) must be a multiple of the element size (%llu) "
                        "on the vulkan backend", op, name, (unsigned long long)t->offset, (unsigned long long)es);
    range = delta + extent * es;
    if (range > s->props.limits.maxStorageBufferRange || delta / es + extent > VKOP_MAX_INDEX)
        return dk__fail(ctx, DK_ERR_UNSUPPORTED, "%s: %s spans %llu bytes, more than this device binds at once (%u)", op,
                        name, (unsigned long long)range, s->props.limits.maxStorageBufferRange);
    b->buf = vb;
    b->offset = aligned;
    b->range = range;
    b->write = write;
    for (i = 0; i < 4; i++) p[i] = (int32_t)strides[i];
    p[4] = (int32_t)(delta / es);
    return DK_OK;
}

/* A backend-owned buffer (scratch, staging) of at least bytes: a larger one
 * replaces it, the old memory freed once the work that used it is done. */
static dk_status vkop_grow(dk_context *ctx, dk_vk_buf *b, uint64_t bytes) {
    dk_status st;
    if (b->block && b->size >= bytes) return DK_OK;
    if (b->block) {
        dk__mem_account(ctx, -(int64_t)b->size);
        dk__vk_release(ctx, b);
        b->block = NULL;
    }
    st = dk__vk_alloc(ctx, b, bytes);
    if (st != DK_OK) {
        b->block = NULL;
        return st;
    }
    dk__mem_account(ctx, (int64_t)bytes);
    return DK_OK;
}

static int32_t vkop_fbits(float f) {
    int32_t i;
    memcpy(&i, &f, 4);
    return i;
}

static dk_status vkop_too_big(dk_context *ctx, const char *op, const char *what, uint64_t v) {
    return dk__fail(ctx, DK_ERR_UNSUPPORTED, "%s: %s (=%llu) exceeds the vulkan backend's 32-bit index range", op, what,
                    (unsigned long long)v);
}

/* The ACT specialization constant of the conv / matmul epilogues: the
 * activation in bits 0-3, the one after the residual in bits 4-7
 * (shaders/dk_common.glsl). */
static dk_activation vkop_epilogue_act(dk_activation act, dk_activation post) {
    return (dk_activation)((int)act | ((int)post << 4));
}

/* Specialization constants, and the activation + flags parameter slots. */
static void vkop_spec(uint32_t *spec, int32_t *p, dk_dtype dt, dk_activation act, uint32_t flags, dk_dtype dt2,
                      uint32_t mode) {
    spec[DK_VKS_DT] = (uint32_t)dt;
    spec[DK_VKS_DT2] = (uint32_t)dt2;
    spec[DK_VKS_MODE] = mode;
    spec[DK_VKS_ACT] = (uint32_t)act;
    p[DK_VKP_ACT] = (int32_t)act;
    p[DK_VKP_FLAGS] = (int32_t)flags;
}

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

static void vkop_packed_free(dk_context *ctx, void *data) {
    vkop_packed *pk = (vkop_packed *)data;
    dk__vk_release(ctx, &pk->buf);
    free(pk);
}

static dk_status vkop_eltwise(dk_context *ctx, const char *op, uint32_t mode, dk_activation act, float alpha,
                              const dk_tensor *a, float beta, const dk_tensor *b, float oscale, const dk_tensor *y);

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
    int64_t kh = w->shape[2], kw = w->shape[3], coutp = pad16 && cout < 16 ? 16 : cout;
    int64_t cinp = pad32 ? (cin + 31) / 32 * 32 : cin;
    uint64_t bytes = (uint64_t)(coutp * cinp * kh * kw) * dk_dtype_size(w->dtype);
    dk_status st;
    dk__weight_key(&key, w, (int32_t)use, (pad16 ? 4 : 1) + (pad32 ? 8 : 0));
    pk = (vkop_packed *)dk__weight_find(ctx, &key);
    if (pk) {
        *out = pk;
        return DK_OK;
    }
    if ((uint64_t)(coutp * cinp * kh * kw) > 0x7fffffffu)
        return vkop_too_big(ctx, "dk_prepare_weight", "weight elements", bytes);
    pk = (vkop_packed *)calloc(1, sizeof *pk);
    if (!pk) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "vulkan backend: out of host memory");
    st = dk__vk_alloc(ctx, &pk->buf, bytes);
    if (st != DK_OK) {
        free(pk);
        return st;
    }
    pk->s_co = 1;
    pk->s_ci = (int32_t)coutp;
    pk->s_kw = (int32_t)(cinp * coutp);
    pk->s_kh = (int32_t)(kw * cinp * coutp);
    /* The repack is a strided copy: the packed buffer seen with w's logical shape
     * (the padding zeroed first). */
    memset(&shadow, 0, sizeof shadow);
    shadow.size = bytes;
    shadow.impl = &pk->buf;
    if (coutp > cout || cinp > cin) {
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
    st = vkop_eltwise(ctx, "dk_prepare_weight", 0, DK_ACT_NONE, 1.0f, w, 0.0f, NULL, 1.0f, &dst);
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
    st = vkop_bind(ctx, op, "x", x, 0, &c->bind[0], &c->p[DK_VKP_CV_XS]);
    if (st == DK_OK) st = vkop_bind(ctx, op, "w", w, 0, &c->bind[1], wp);
    if (st == DK_OK && residual) st = vkop_bind(ctx, op, "residual", residual, 0, &c->bind[3], &c->p[DK_VKP_CV_RS]);
    if (st == DK_OK) st = vkop_bind(ctx, op, "y", y, 1, &c->bind[4], &c->p[DK_VKP_CV_YS]);
    if (st != DK_OK) return st;
    /* bias [C]: its stride sits in slot 3 of the 4-D view; restore the pair. */
    if (bias) {
        int32_t bst[5];
        st = vkop_bind(ctx, op, "bias", bias, 0, &c->bind[2], bst);
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
    c->p[DK_VKP_CV_OSCALE] = vkop_fbits(oscale);
    c->p[DK_VKP_CV_RSCALE] = vkop_fbits(rscale);
    /* DT2: the bias's dtype (f32 with 16-bit activations, or theirs) */
    vkop_spec(c->spec, c->p, y->dtype, vkop_epilogue_act(act, post), flags, bias ? bias->dtype : y->dtype, 0);
    return DK_OK;
}

/* Whether the 4-D view with strides p[0..3] and offset p[4] has stride 1 on
 * dim `unit` and every other stride and the offset a multiple of v elements
 * (16 bytes): the portable GEMM core may then fetch 8 elements along `unit`
 * with 16-byte loads. */
static int vkop_vec_view(const int32_t *p, int unit, int32_t v) {
    int i;
    if (p[unit] != 1 || p[4] % v != 0) return 0;
    for (i = 0; i < 4; i++)
        if (i != unit && p[i] % v != 0) return 0;
    return 1;
}

static dk_status vkop_conv_run(dk_context *ctx, const char *op, vkop_conv *c, uint64_t m, uint64_t nc, uint64_t k,
                               uint32_t groups) {
    int32_t v = c->spec[DK_VKS_DT] == DK_F32 ? 4 : 8, cing = c->p[DK_VKP_CV_CING];
    if (m > 0x7fffffff) return vkop_too_big(ctx, op, "N*OH*OW", m);
    if (k > 0x7fffffff) return vkop_too_big(ctx, op, "Cin/groups*KH*KW", k);
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
    if (cing % 8 == 0 && vkop_vec_view(&c->p[DK_VKP_CV_XS], 1, v)) c->spec[DK_VKS_MODE] |= 1;
    if (nc % 8 == 0 && c->p[DK_VKP_CV_WGS] % v == 0 && vkop_vec_view(&c->p[DK_VKP_CV_WGS + 1], 0, v))
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
    if (m > 0x7fffffff) return vkop_too_big(ctx, op, "N*OH*OW", m);
    c->p[DK_VKP_CV_M] = (int32_t)m;
    c->p[DK_VKP_CV_NC] = (int32_t)nc;
    c->spec[DK_VKS_MODE] = 16 | (nc <= 4 ? 32 : 0) | (c->p[DK_VKP_CV_UPS] == 2 ? 4 : 0);
    if (cing % 8 == 0 && vkop_vec_view(&c->p[DK_VKP_CV_XS], 1, v)) {
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

/* Shared memory of the tensor-core conv's default tile (MODE 0, 128 invocations) and of its
 * halo staging (MODE bit 3), as NVIDIA's driver reports them. */
#define VKOP_CM_SHARED 38400u
#define VKOP_CM_HALO_SHARED 49120u

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
    if (m > 0x7fffffff) return vkop_too_big(ctx, op, "N*OH*OW", m);
    if (k > 0x7fffffff) return vkop_too_big(ctx, op, "Cin*KH*KW", (uint64_t)k);
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
    return ctx->knobs.vulkan_up2 && d->upsample == 2 && d->groups == 1 && coutg > 8 && d->stride_h == 1 &&
           d->stride_w == 1 && d->dilation_h == 1 && d->dilation_w == 1 && d->pad_h < 4096 && d->pad_w < 4096;
}

/* The summed weights packed as vkop_packed_weight packs ([tap h][tap w][ci][co]),
 * cached per weight and padding. */
static dk_status vkop_up2_weight(dk_context *ctx, const dk_tensor *w, const dk_conv2d_desc *d, const dk_up2_axis *ah,
                                 const dk_up2_axis *aw, vkop_packed **out) {
    dk_weight_key key;
    vkop_packed *pk;
    dk_buffer shadow;
    const int64_t cout = w->shape[0], cin = w->shape[1], vh = 2 * ah->tmax, vw = 2 * aw->tmax;
    const uint64_t bytes = (uint64_t)(cout * cin * vh * vw) * dk_dtype_size(w->dtype);
    int64_t os[4];
    void *host;
    dk_status st;
    dk__weight_key(&key, w, (int32_t)DK_WEIGHT_CONV2D, (int32_t)(2 | (d->pad_h << 8) | (d->pad_w << 20)));
    *out = (vkop_packed *)dk__weight_find(ctx, &key);
    if (*out) return DK_OK;
    if ((uint64_t)(cout * cin * vh * vw) > 0x7fffffffu) return vkop_too_big(ctx, "dk_conv2d", "weight elements", bytes);
    pk = (vkop_packed *)calloc(1, sizeof *pk);
    host = malloc((size_t)bytes);
    if (!pk || !host) {
        free(pk);
        free(host);
        return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "vulkan backend: out of host memory");
    }
    pk->s_co = 1;
    pk->s_ci = (int32_t)cout;
    pk->s_kw = (int32_t)(cin * cout);
    pk->s_kh = (int32_t)(vw * cin * cout);
    os[0] = pk->s_co;
    os[1] = pk->s_ci;
    os[2] = pk->s_kh;
    os[3] = pk->s_kw;
    st = dk__up2_weights(ctx, w, d->pad_h, d->pad_w, host, os);
    if (st == DK_OK) {
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
    st = vkop_up2_weight(ctx, w, d, &ah, &aw, &pk);
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
 * vkop_cm_vec_view and the portable conv's vector fetches (vkop_vec_view) want it. */
static int vkop_cl16(const dk_tensor *t) {
    const int64_t v = 16 / (int64_t)dk_dtype_size(t->dtype);
    return t->strides[1] == 1 && t->strides[0] % v == 0 && t->strides[2] % v == 0 && t->strides[3] % v == 0 &&
           t->offset % 16 == 0;
}

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
    int i, any = 0;
    src[0] = x;
    src[1] = y;
    src[2] = residual;
    const int narrow = coutg <= 8 && vkop_narrow_lanes(ctx);
    if (!ctx->knobs.vulkan_stage_nhwc || groups != 1 || y->dtype != x->dtype ||
        (!narrow && (coutg % 8 != 0 || coutg <= 8)) || cing % (narrow ? 8 : 16 / es) != 0 ||
        (residual && residual->dtype != y->dtype))
        return 0;
    memset(sg, 0, sizeof *sg);
    for (i = 0; i < 3; i++) {
        const dk_tensor *t = src[i];
        uint64_t bytes;
        if (!t) continue;
        sg->t[i] = *t;
        if (vkop_cl16(t) || (i > 0 && (!tc || narrow))) continue;
        bytes = (uint64_t)(t->shape[0] * t->shape[1] * t->shape[2] * t->shape[3] * es);
        if (vkop_grow(ctx, &s->stage[i], bytes) != DK_OK) {
            dk__clear_error(ctx); /* the shaders take the operands where they are */
            return 0;
        }
        sg->buf[i].size = bytes;
        sg->buf[i].wrapped = 1;
        sg->buf[i].impl = &s->stage[i];
        /* dense channels-last with C % (16 / es) == 0 (checked above): vkop_cl16 holds */
        sg->t[i] = dk_tensor_nhwc(&sg->buf[i], 0, t->dtype, t->shape[0], t->shape[1], t->shape[2], t->shape[3]);
        sg->staged[i] = 1;
        any = 1;
    }
    if (!any) return 0;
    *st = DK_OK;
    if (sg->staged[0]) *st = dk__vk_convert(ctx, x, &sg->t[0]);
    if (*st == DK_OK && sg->staged[2]) *st = dk__vk_convert(ctx, residual, &sg->t[2]);
    return 1;
}

/* After the conv on sg's tensors (status st): y copied out where it was staged. */
static dk_status vkop_stage_out(dk_context *ctx, vkop_stage *sg, const dk_tensor *y, dk_status st) {
    if (st != DK_OK || !sg->staged[1]) return st;
    return dk__vk_convert(ctx, &sg->t[1], y);
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
    const uint64_t padded = (uint64_t)(x->shape[0] * x->shape[2] * x->shape[3]) * (uint64_t)((cing + 31) / 32 * 32);
    return ctx->knobs.vulkan_cm_padcin && d->groups == 1 && d->upsample == 1 && cing % 32 != 0 &&
           dk__vk_cm_dtype(s, x->dtype) && y->dtype == x->dtype && ((coutg > 8 && coutg % 8 == 0) || vkop_cm_narrow(ctx, coutg)) &&
           s->props.limits.maxComputeSharedMemorySize >= VKOP_CM_SHARED && padded <= VKOP_MAX_INDEX;
}

static dk_status vkop_conv2d_run(dk_context *ctx, const dk_conv2d_desc *d, const dk_tensor *x, const dk_tensor *w,
                                 const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y, int padcin);

/* The padded copy of x (vkop_padcin_ok), then the conv on it. */
static dk_status vkop_conv2d_padcin(dk_context *ctx, const dk_conv2d_desc *d, const dk_tensor *x, const dk_tensor *w,
                                    const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y) {
    dk_vk_state *s = dk__vk(ctx);
    const int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], wd = x->shape[3], cp = (c + 31) / 32 * 32;
    const uint64_t bytes = (uint64_t)(n * h * wd * cp) * dk_dtype_size(x->dtype);
    dk_buffer b;
    dk_tensor xs, xp;
    dk_status st = vkop_grow(ctx, &s->stage[0], bytes);
    if (st != DK_OK) return st;
    memset(&b, 0, sizeof b);
    b.size = bytes;
    b.wrapped = 1;
    b.impl = &s->stage[0];
    xp = dk_tensor_nhwc(&b, 0, x->dtype, n, cp, h, wd);
    xs = xp;   /* x's channels within the padded pixels */
    xs.shape[1] = c;
    st = dk__vk_fill(ctx, &b, 0, bytes, 0u);
    if (st == DK_OK) st = dk__vk_convert(ctx, x, &xs);
    if (st == DK_OK) st = vkop_conv2d_run(ctx, d, &xp, w, bias, residual, y, 1);
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

static int32_t vkop_gcd(int32_t a, int32_t b) {
    while (b) {
        int32_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* One output phase of a transposed conv along one axis: outputs o = o0 + s*t use
 * the taps k = k0 + j*kstep (those with k*dil = r mod s), reading input
 * i = off + t - j*(dil/g).  Returns the number of outputs (0: none). */
static int64_t vkop_phase(int32_t r, int32_t s, int32_t pad, int32_t dil, int64_t ksize, int64_t osize, int32_t *o0,
                          int32_t *k0, int32_t *kstep, int32_t *taps, int32_t *off, int32_t *idil) {
    int32_t g = vkop_gcd(dil, s), k;
    int32_t first = ((r - pad) % s + s) % s; /* smallest o >= 0 with (o + pad) % s == r */
    *o0 = first;
    *kstep = s / g;
    *idil = -(dil / g);
    *taps = 0;
    *k0 = 0;
    for (k = 0; k < *kstep && k < ksize; k++)
        if (((int64_t)k * dil) % s == r) break;
    if (k < *kstep && k < ksize) {
        *k0 = k;
        *taps = (int32_t)((ksize - 1 - k) / *kstep + 1);
    }
    *off = (int32_t)(((int64_t)first + pad - (int64_t)(*k0) * dil) / s);
    if (first >= osize) return 0;
    return (osize - first + s - 1) / s;
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
    vkop_view4(b, bs, bst);
    if (!dk__vk_cm_dtype(dk__vk(ctx), y->dtype) || a->dtype != y->dtype || b->dtype != y->dtype || bs[1] != 1 ||
        k % 32 != 0 || n % 8 != 0 || n <= 8)
        return DK_OK;
    dk__matmul_as_conv(d, a, b, residual, y, &c);
    if (vkop_bind(ctx, "dk_matmul", "a", &c.x, 0, &bind, t) != DK_OK) return DK_OK; /* the matmul path reports it */
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
    vkop_view4(y, shape, strides);
    batch = shape[1];
    m = shape[2];
    n = shape[3];
    k = a->shape[a->ndim - 1];
    /* 4-D views are right-aligned [1, B, rows, cols]: slots 1..3 are batch, row, col. */
    st = vkop_bind(ctx, op, "a", a, 0, &bind[0], t);
    if (st != DK_OK) return st;
    p[DK_VKP_MM_AS] = t[1], p[DK_VKP_MM_AS + 1] = t[2], p[DK_VKP_MM_AS + 2] = t[3], p[DK_VKP_MM_AS + 3] = t[4];
    st = vkop_bind(ctx, op, "b", b, 0, &bind[1], t);
    if (st != DK_OK) return st;
    p[DK_VKP_MM_BS] = t[1], p[DK_VKP_MM_BS + 1] = t[2], p[DK_VKP_MM_BS + 2] = t[3], p[DK_VKP_MM_BS + 3] = t[4];
    if (bias) {
        st = vkop_bind(ctx, op, "bias", bias, 0, &bind[2], t);
        if (st != DK_OK) return st;
        p[DK_VKP_MM_BIAS] = t[3], p[DK_VKP_MM_BIAS + 1] = t[4];
        flags |= 1;
    }
    if (residual) {
        st = vkop_bind(ctx, op, "residual", residual, 0, &bind[3], t);
        if (st != DK_OK) return st;
        p[DK_VKP_MM_RS] = t[1], p[DK_VKP_MM_RS + 1] = t[2], p[DK_VKP_MM_RS + 2] = t[3], p[DK_VKP_MM_RS + 3] = t[4];
        flags |= 2;
    }
    st = vkop_bind(ctx, op, "y", y, 1, &bind[4], t);
    if (st != DK_OK) return st;
    p[DK_VKP_MM_YS] = t[1], p[DK_VKP_MM_YS + 1] = t[2], p[DK_VKP_MM_YS + 2] = t[3], p[DK_VKP_MM_YS + 3] = t[4];
    if (m > 0x7fffffff || n > 0x7fffffff || k > 0x7fffffff) return vkop_too_big(ctx, op, "M, N or K", 0x80000000u);
    p[DK_VKP_MM_M] = (int32_t)m;
    p[DK_VKP_MM_N] = (int32_t)n;
    p[DK_VKP_MM_K] = (int32_t)k;
    p[DK_VKP_MM_OSCALE] = vkop_fbits(d->output_scale);
    p[DK_VKP_MM_RSCALE] = vkop_fbits(d->residual_scale);
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
        if (k % 8 == 0 && vkop_vec_view(va, 3, v)) mode |= 1;
        if (n % 8 == 0 && vkop_vec_view(vb, 3, v)) mode |= 2;
        vb[1] = p[DK_VKP_MM_BS + 2], vb[3] = p[DK_VKP_MM_BS + 1]; /* k now in slot 3 */
        if (!(mode & 2) && k % 8 == 0 && vkop_vec_view(vb, 3, v)) mode |= 8;
    }
    vkop_spec(spec, p, y->dtype, vkop_epilogue_act(d->activation, d->post_activation), flags,
              bias ? bias->dtype : y->dtype, mode); /* DT2: the bias's dtype */
    /* 128x128 output tiles (shaders/dk_gemm_tile.glsl) */
    return dk__vk_dispatch(ctx, DK_VK_SH_MATMUL, spec, bind, p, DK_VKP_SLOT_INTS, (uint64_t)(m + 127) / 128,
                           (uint32_t)((n + 127) / 128), (uint32_t)batch);
}

/* ---------------------------------------------------------- elementwise */

/* Whether the operand whose strides and element offset are at p[slot..slot+4] (in
 * the walk order of p[DK_VKP_EW_SHAPE..]) is one dense run whose first element
 * starts a 16-byte vector of binding b (eltwise.comp's FLAT path). */
static int vkop_dense_walk(const int32_t *p, int slot, const dk_vk_binding *b, dk_dtype dt) {
    int64_t expect = 1;
    int i;
    for (i = 3; i >= 0; i--) {
        if (p[DK_VKP_EW_SHAPE + i] != 1 && p[slot + i] != expect) return 0;
        expect *= p[DK_VKP_EW_SHAPE + i];
    }
    return b->offset % 16 == 0 && ((uint64_t)p[slot + 4] * dk_dtype_size(dt)) % 16 == 0;
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
    int i;
    if (act != DK_ACT_NONE || alpha != 1.0f || oscale != 1.0f) return 0;
    if (p[DK_VKP_EW_YS + 3] != 1 || p[DK_VKP_EW_SHAPE + 3] % vy != 0 || p[DK_VKP_EW_SHAPE + k] % va != 0) return 0;
    for (i = 0; i < 4; i++) {
        if (i != k && p[DK_VKP_EW_SHAPE + i] > 1 && p[DK_VKP_EW_AS + i] % va != 0) return 0;
        if (i != 3 && p[DK_VKP_EW_SHAPE + i] > 1 && p[DK_VKP_EW_YS + i] % vy != 0) return 0;
    }
    if (ba->offset % 16 != 0 || by->offset % 16 != 0 || p[DK_VKP_EW_AS + 4] % va != 0 || p[DK_VKP_EW_YS + 4] % vy != 0)
        return 0;
    return at == yt && at != DK_F32 ? 1 : 2;
}

/* Whether an upsample takes eltwise.comp's vector path (p in the walk order, a's
 * H and W at p[DK_VKP_EW_SRCH/SRCW], ord the walk's dims): integer factors (at
 * most 64 output vectors per input vector), walk dim 3 unit-stride in a and y
 * with a's rows in whole 16-byte vectors of 8 elements, every other stride a
 * multiple of 8 elements (where its size is not 1), 16-byte aligned starts.
 * DIFKERN_VULKAN_UPSAMPLE_VEC=0 keeps the generic walk (A/B timing). */
static int vkop_upsample_vec(const int32_t *p, const int32_t ord[4], const dk_vk_binding *ba,
                             const dk_vk_binding *by, dk_dtype dt) {
    int64_t prod = 1, ak = 1, f;
    int k;
    for (k = 0; k < 4; k++) {
        int64_t yk = p[DK_VKP_EW_SHAPE + k];
        ak = ord[k] == 2 ? p[DK_VKP_EW_SRCH] : ord[k] == 3 ? p[DK_VKP_EW_SRCW] : yk;
        if (ak <= 0 || yk % ak != 0) return 0;
        f = yk / ak;
        prod *= f;
        if (prod > 64) return 0;
        if (k < 3 && ((ak > 1 && p[DK_VKP_EW_AS + k] % 8 != 0) || (yk > 1 && p[DK_VKP_EW_YS + k] % 8 != 0))) return 0;
    }
    return p[DK_VKP_EW_AS + 3] == 1 && p[DK_VKP_EW_YS + 3] == 1 && ak % 8 == 0 && ba->offset % 16 == 0 &&
           by->offset % 16 == 0 && ((uint64_t)p[DK_VKP_EW_AS + 4] * dk_dtype_size(dt)) % 16 == 0 &&
           ((uint64_t)p[DK_VKP_EW_YS + 4] * dk_dtype_size(dt)) % 16 == 0;
}

/* mode 0: y = oscale * act(alpha * a) (b NULL; also dk_convert), 1: y = oscale *
 * act(alpha * a + beta * b), 2: nearest resize (see eltwise.comp). */
static dk_status vkop_eltwise(dk_context *ctx, const char *op, uint32_t mode, dk_activation act, float alpha,
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
    vkop_view4(a, ashape, strides);
    vkop_view4(y, shape, strides);
    total = (uint64_t)(shape[0] * shape[1] * shape[2] * shape[3]);
    if (total > VKOP_MAX_INDEX) return vkop_too_big(ctx, op, "the element count", total);
    if (mode == 2 && ((uint64_t)shape[2] * (uint64_t)ashape[2] > VKOP_MAX_INDEX ||
                      (uint64_t)shape[3] * (uint64_t)ashape[3] > VKOP_MAX_INDEX))
        return vkop_too_big(ctx, op, "OH*H or OW*W", (uint64_t)shape[2] * (uint64_t)ashape[2]);
    for (i = 0; i < 4; i++) p[DK_VKP_EW_SHAPE + i] = (int32_t)shape[i];
    st = vkop_bind(ctx, op, "x", a, 0, &bind[0], &p[DK_VKP_EW_AS]);
    if (st == DK_OK && b) st = vkop_bind(ctx, op, "b", b, 0, &bind[1], &p[DK_VKP_EW_BS]);
    if (st == DK_OK) st = vkop_bind(ctx, op, "y", y, 1, &bind[4], &p[DK_VKP_EW_YS]);
    if (st != DK_OK) return st;
    p[DK_VKP_EW_ALPHA] = vkop_fbits(alpha);
    p[DK_VKP_EW_BETA] = vkop_fbits(beta);
    p[DK_VKP_EW_OSCALE] = vkop_fbits(oscale);
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
    vkop_spec(spec, p, a->dtype, act, 0, y->dtype, spec_mode);
    /* The flat path takes eight elements per invocation; a grid-stride loop covers
     * what 65535 workgroups do not. */
    groups = tiles ? tiles : ((p[DK_VKP_EW_FLAT] && mode != 2 ? (total + 7) / 8 : total) + 255) / 256;
    return dk__vk_dispatch(ctx, shader, spec, bind, p, DK_VKP_SLOT_INTS, groups < 65535 ? groups : 65535,
                           1, 1);
}

dk_status dk__vk_add(dk_context *ctx, float alpha, const dk_tensor *a, float beta, const dk_tensor *b,
                     dk_activation act, float out_scale, const dk_tensor *y) {
    return vkop_eltwise(ctx, b ? "dk_add" : "dk_activation_forward or dk_activation_scaled", b ? 1u : 0u, act, alpha, a, beta, b, out_scale, y);
}

dk_status dk__vk_upsample_nearest(dk_context *ctx, const dk_tensor *x, const dk_tensor *y) {
    return vkop_eltwise(ctx, "dk_upsample_nearest", 2, DK_ACT_NONE, 1.0f, x, 0.0f, NULL, 1.0f, y);
}

dk_status dk__vk_convert(dk_context *ctx, const dk_tensor *x, const dk_tensor *y) {
    return vkop_eltwise(ctx, "dk_convert", 0, DK_ACT_NONE, 1.0f, x, 0.0f, NULL, 1.0f, y);
}

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
    return vkop_grow(ctx, &dk__vk(ctx)->scratch, bytes < 65536 ? 65536 : bytes);
}

/* GroupNorm vector mode (DK_VKP_GN_COEF): 1 when x or y (4-D strides ps, element
 * offset ps[4], binding b) is dense NCHW, 2 dense NHWC, in 16-byte vectors of vw
 * elements that never straddle a channel (NCHW) or an image (NHWC); else 0. */
static uint32_t vkop_gn_mode(const int32_t *ps, const dk_vk_binding *b, const int64_t *shape, int64_t vw) {
    int64_t c = shape[1], h = shape[2], w = shape[3];
    const int64_t nchw[4] = {c * h * w, h * w, w, 1}, nhwc[4] = {h * w * c, 1, w * c, c};
    int nchw_ok = (h * w) % vw == 0, nhwc_ok = c % vw == 0 && c / vw <= 256, i;
    if (b->offset % 16 != 0 || ps[4] % vw != 0) return 0;
    for (i = 0; i < 4; i++) {
        if (shape[i] == 1) continue;
        nchw_ok = nchw_ok && ps[i] == nchw[i];
        nhwc_ok = nhwc_ok && ps[i] == nhwc[i];
    }
    return nchw_ok ? 1 : nhwc_ok ? 2 : 0;
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
    if (total > VKOP_MAX_INDEX) return vkop_too_big(ctx, op, "the element count", total);
    if (ng > 65535) return vkop_too_big(ctx, op, "N*groups (grid rows)", ng);
    memset(bind, 0, sizeof bind);
    memset(p, 0, sizeof p);
    st = vkop_bind(ctx, op, "x", x, 0, &bind[0], &p[DK_VKP_GN_XS]);
    if (st == DK_OK && gamma) st = vkop_bind(ctx, op, "gamma", gamma, 0, &bind[1], t), p[DK_VKP_GN_GAMMA] = t[3],
                              p[DK_VKP_GN_GAMMA + 1] = t[4], flags |= 1;
    if (st == DK_OK && beta) st = vkop_bind(ctx, op, "beta", beta, 0, &bind[2], t), p[DK_VKP_GN_BETA] = t[3],
                             p[DK_VKP_GN_BETA + 1] = t[4], flags |= 2;
    if (st == DK_OK && y) st = vkop_bind(ctx, op, "y", y, 1, &bind[4], &p[DK_VKP_GN_YS]);
    if (st == DK_OK && stats) {
        /* split GroupNorm: the finalize pass writes (4) or reads (8) the statistics */
        st = vkop_bind(ctx, op, "stats", stats, gn_mode == DK__GN_STATS, &bind[3], t);
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
    p[DK_VKP_GN_EPS] = vkop_fbits(d->eps);
    p[DK_VKP_GN_CFAST] = c > 1 && (w == 1 || x->strides[1] < x->strides[3]);
    p[DK_VKP_GN_SCR] = 0;
    p[DK_VKP_GN_COEF] = (int32_t)coef;
    work = mode == 0 ? total : total / (uint64_t)vw;
    p[DK_VKP_GN_TOTAL] = (int32_t)(uint32_t)work;
    /* DT2: gamma's and beta's dtype (f32 with 16-bit x, or x's) */
    vkop_spec(spec, p, x->dtype, d->activation, flags, gamma ? gamma->dtype : beta ? beta->dtype : x->dtype, mode);
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
    vkop_view4(x, shape, strides);
    rows = (uint64_t)(shape[0] * shape[1] * shape[2]);
    if (rows > VKOP_MAX_INDEX) return vkop_too_big(ctx, op, "the row count", rows);
    st = vkop_bind(ctx, op, "x", x, 0, &bind[0], &p[DK_VKP_LN_XS]);
    if (st == DK_OK && gamma) st = vkop_bind(ctx, op, "gamma", gamma, 0, &bind[1], t), p[DK_VKP_LN_GAMMA] = t[3],
                              p[DK_VKP_LN_GAMMA + 1] = t[4], flags |= 1;
    if (st == DK_OK && beta) st = vkop_bind(ctx, op, "beta", beta, 0, &bind[2], t), p[DK_VKP_LN_BETA] = t[3],
                             p[DK_VKP_LN_BETA + 1] = t[4], flags |= 2;
    if (st == DK_OK) st = vkop_bind(ctx, op, "y", y, 1, &bind[4], &p[DK_VKP_LN_YS]);
    if (st != DK_OK) return st;
    p[DK_VKP_LN_ROWS] = (int32_t)(uint32_t)rows;
    p[DK_VKP_LN_R1] = (int32_t)shape[1];
    p[DK_VKP_LN_R2] = (int32_t)shape[2];
    p[DK_VKP_LN_D] = (int32_t)shape[3];
    p[DK_VKP_LN_EPS] = vkop_fbits(d->eps);
    vkop_spec(spec, p, x->dtype, d->activation, flags, x->dtype, 0);
    return dk__vk_dispatch(ctx, DK_VK_SH_LAYER_NORM, spec, bind, p, DK_VKP_SLOT_INTS, rows, 1, 1);
}

/* ------------------------------------------------------------ attention */

/* The tensor-core shaders load 16-byte vectors straight from the bound
 * tensors: f16 or bf16, each head dimension contiguous, every other stride and
 * each view's start a multiple of 8 elements inside a 16-byte aligned binding.
 * shaders/attention_cm_rows.comp (rows: D, Dv <= 128) stages everything with
 * zeros past the tensors: D and Dv multiples of 8, any Nq and Nkv, 47616 bytes
 * of shared memory.  shaders/attention_cm.comp (larger heads): the same with CG
 * 8, 48896 bytes; CG 2 and 4 (forced, for benchmarks) load fragments in place
 * and need Nq, Nkv, D and Dv multiples of 16 (the caller's check).
 * p: the parameter slot with the four tensors' strides and offsets. */
static int vkop_attention_cm_ok(const dk_vk_state *s, const dk_tensor *q, const dk_tensor *k, const dk_tensor *v,
                                const dk_tensor *out, const int32_t *p, const dk_vk_binding *bind, int rows) {
    static const int vkop_at_in[3] = {DK_VKP_AT_QS, DK_VKP_AT_KS, DK_VKP_AT_VS};
    int i, j;
    if (!dk__vk_cm_dtype(s, q->dtype) || s->props.limits.maxComputeSharedMemorySize < (rows ? 47616u : 48896u) ||
        k->dtype != q->dtype || v->dtype != q->dtype || out->dtype != q->dtype)
        return 0;
    if (q->shape[3] % 8 || v->shape[3] % 8) return 0;
    for (i = 0; i < 3; i++) {
        const int32_t *t = &p[vkop_at_in[i]];
        if (t[3] != 1 || bind[i].offset % 16) return 0;
        for (j = 0; j < 3; j++)
            if (t[j] % 8) return 0;
        if (t[4] % 8) return 0;
    }
    return 1;
}

dk_status dk__vk_attention(dk_context *ctx, const dk_attention_desc *d, const dk_tensor *q, const dk_tensor *k,
                           const dk_tensor *v, const dk_tensor *out) {
    const char *op = "dk_attention";
    dk_vk_binding bind[DK_VK_BINDINGS];
    int32_t p[DK_VKP_SLOT_INTS];
    uint32_t spec[DK_VK_SPEC];
    int64_t dd = q->shape[3];
    float scale = d->scale != 0.0f ? d->scale : (float)(1.0 / sqrt((double)dd));
    dk_status st;
    if (q->shape[3] > 512 || v->shape[3] > 512)
        return dk__fail(ctx, DK_ERR_UNSUPPORTED, "dk_attention: head dims (D=%lld, Dv=%lld) above 512",
                        (long long)q->shape[3], (long long)v->shape[3]);
    if (q->shape[1] > 65535 || q->shape[0] > 65535) return vkop_too_big(ctx, op, "B or H", 65536);
    memset(bind, 0, sizeof bind);
    memset(p, 0, sizeof p);
    st = vkop_bind(ctx, op, "q", q, 0, &bind[0], &p[DK_VKP_AT_QS]);
    if (st == DK_OK) st = vkop_bind(ctx, op, "k", k, 0, &bind[1], &p[DK_VKP_AT_KS]);
    if (st == DK_OK) st = vkop_bind(ctx, op, "v", v, 0, &bind[2], &p[DK_VKP_AT_VS]);
    if (st == DK_OK) st = vkop_bind(ctx, op, "out", out, 1, &bind[4], &p[DK_VKP_AT_OS]);
    if (st != DK_OK) return st;
    p[DK_VKP_AT_H] = (int32_t)q->shape[1];
    p[DK_VKP_AT_NQ] = (int32_t)q->shape[2];
    p[DK_VKP_AT_NKV] = (int32_t)k->shape[2];
    p[DK_VKP_AT_D] = (int32_t)dd;
    p[DK_VKP_AT_DV] = (int32_t)v->shape[3];
    p[DK_VKP_AT_SCALE] = vkop_fbits(scale);
    {
        /* D, Dv <= 128: 16 query rows per subgroup, 128 per workgroup, keys 32 at
         * a time (shaders/attention_cm_rows.comp, 64 or 128 wide; it replaced the
         * column-group path, which lost at these sizes).  Larger heads
         * (attention_cm.comp): column groups (64 output columns each) of the 8
         * subgroups: the workgroup owns 256 / cg query rows and streams keys
         * 16 * cg at a time; cg 8 (keys 128 at a time, K and Q staged) even where
         * D < 512 leaves column groups idle in P V, because it measured fastest
         * (docs/attention.md).  DIFKERN_VULKAN_ATTN_CG (2, 4 or 8) forces
         * attention_cm.comp where a head dimension exceeds 64 (benchmarks). */
        int64_t dm = dd > v->shape[3] ? dd : v->shape[3];
        /* forced: DIFKERN_VULKAN_ATTN_CG names a split whose column groups cover the head */
        const int forced = ctx->knobs.vulkan_attn_cg > 0 && ctx->knobs.vulkan_attn_cg * 64 >= dm;
        uint32_t cg = forced ? (uint32_t)ctx->knobs.vulkan_attn_cg : 8;
        uint64_t br;
        if (cg != 8 && (q->shape[2] % 16 || k->shape[2] % 16 || dd % 16 || v->shape[3] % 16)) cg = 8;
        if (dm <= 128 && !(forced && dm > 64) && vkop_attention_cm_ok(dk__vk(ctx), q, k, v, out, p, bind, 1)) {
            vkop_spec(spec, p, q->dtype, DK_ACT_NONE, 0, q->dtype, dm > 64 ? 1u : 0u);
            return dk__vk_dispatch(ctx, dk__vk_cm_shader(dk__vk(ctx), DK_VK_SH_ATTENTION_CM_ROWS, q->dtype), spec,
                                   bind, p, DK_VKP_SLOT_INTS, ((uint64_t)q->shape[2] + 127) / 128,
                                   (uint32_t)q->shape[1], (uint32_t)q->shape[0]);
        }
        if (vkop_attention_cm_ok(dk__vk(ctx), q, k, v, out, p, bind, 0)) {
            /* MODE bit 5 (cg 8): 64 query rows per workgroup, keys 64 at a time (1.5x fewer
             * bytes per product; attention_cm.comp) where that grid still fills a large GPU
             * (72 workgroups and more: with fewer, half the SMs idle where cg 8's 128-row
             * grid still fills them; the measurements are in docs/attention.md).
             * DIFKERN_VULKAN_ATTN_R64=0|1 forces it, for benchmarks and tests. */
            const uint64_t groups64 = ((uint64_t)q->shape[2] + 63) / 64 * (uint64_t)q->shape[1] * (uint64_t)q->shape[0];
            const int r64 = cg == 8 && (ctx->knobs.vulkan_attn_r64 >= 0 ? ctx->knobs.vulkan_attn_r64 == 1 : groups64 >= 72);
            /* MODE bit 6: Nq, Nkv, D or Dv not a multiple of 16 (the masks by key and column) */
            const int anyn = q->shape[2] % 16 || k->shape[2] % 16 || dd % 16 || v->shape[3] % 16;
            br = r64 ? 64 : 256 / cg;
            /* bits 8-14: D / 8 compiled in (aligned shapes only: the masked ones measured slower) */
            vkop_spec(spec, p, q->dtype, DK_ACT_NONE, 0, q->dtype,
                      cg | (r64 ? 32u : 0u) | (anyn ? 64u : (uint32_t)(dd / 8) << 8));
            return dk__vk_dispatch(ctx, dk__vk_cm_shader(dk__vk(ctx), DK_VK_SH_ATTENTION_CM, q->dtype), spec, bind, p,
                                   DK_VKP_SLOT_INTS, ((uint64_t)q->shape[2] + br - 1) / br, (uint32_t)q->shape[1],
                                   (uint32_t)q->shape[0]);
        }
    }
    {
        /* Portable flash attention (shaders/attention.comp): 64 queries per
         * workgroup (32 where Dv > 128).  Dv above 256 runs as 256-column
         * chunks of V and O, one dispatch each (S is recomputed per chunk: 1.5x
         * the FLOPs at D = Dv = 512, but the one-dispatch variant with a wider
         * O tile ran 7x slower per FLOP on the H100, measured before the
         * shader's epilogue went through shared memory: worth re-measuring).  MODE bits 0..2: 16-byte
         * loads of Q, K, V (head dimension contiguous, a multiple of 8, every
         * other stride and the start whole 16-byte vectors); bits 3..4 the O
         * register tile by Dv; bit 5 the larger slices where the device has
         * the shared memory (40,192 bytes). */
        static const int at_in[3] = {DK_VKP_AT_QS, DK_VKP_AT_KS, DK_VKP_AT_VS};
        int32_t vw = q->dtype == DK_F32 ? 4 : 8, voff = p[DK_VKP_AT_VS + 4], ooff = p[DK_VKP_AT_OS + 4];
        int64_t dvt = v->shape[3], dv0, dvc, bq;
        for (dv0 = 0; dv0 < dvt; dv0 += 256) {
            uint32_t mode = 0;
            int i;
            dvc = dvt - dv0 < 256 ? dvt - dv0 : 256;
            p[DK_VKP_AT_DV] = (int32_t)dvc;
            p[DK_VKP_AT_VS + 4] = voff + (int32_t)dv0 * p[DK_VKP_AT_VS + 3];
            p[DK_VKP_AT_OS + 4] = ooff + (int32_t)dv0 * p[DK_VKP_AT_OS + 3];
            for (i = 0; i < 3; i++)
                if ((i < 2 ? dd : dvc) % 8 == 0 && bind[i].offset % 16 == 0 && vkop_vec_view(&p[at_in[i]], 3, vw))
                    mode |= 1u << i;
            mode |= (dvc <= 64 ? 0u : dvc <= 128 ? 1u : 2u) << 3;
            if (dk__vk(ctx)->props.limits.maxComputeSharedMemorySize >= 40192) mode |= 32;
            vkop_spec(spec, p, q->dtype, DK_ACT_NONE, 0, q->dtype, mode);
            bq = dvc <= 128 ? 64 : 32;
            st = dk__vk_dispatch(ctx, DK_VK_SH_ATTENTION, spec, bind, p, DK_VKP_SLOT_INTS,
                                 (uint64_t)(q->shape[2] + bq - 1) / bq, (uint32_t)q->shape[1], (uint32_t)q->shape[0]);
            if (st != DK_OK) return st;
        }
        return DK_OK;
    }
}

#undef VKOP_MAX_INDEX
#undef VKOP_CM_SHARED
#undef VKOP_CM_HALO_SHARED
