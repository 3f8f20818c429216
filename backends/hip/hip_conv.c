/* HIP conv2d, conv_transpose2d and matmul: kernel argument blocks
 * (hip_kargs.h) from the validated tensors, launched on the context's stream.
 * The fast implicit GEMM (mma.sync / wgmma + TMA on NVIDIA, MFMA / WMMA on
 * AMD) with packed weights, the narrow and shallow direct convs, the generic kernel,
 * channels-last staging of other layouts and zero-padded small Cin, the
 * fused 2x upsample and conv_transpose2d as phase convs. */
#include "hip_ops_common.h"

#include <math.h>
#include <stdlib.h>

/* ------------------------------------------------------------ conv family */

/* Transposed-conv phase r along one axis (the taps: src/conv_plan.c) as the
 * GEMM kernels' axis: outputs r, r + stride, ... of out_size. */
static void hipops_transposed_axis(dkh_axis *a, int64_t r, int64_t stride, int64_t pad, int64_t dilation,
                                   int64_t ksize, int64_t in_size, int64_t out_size) {
    dk_phase_taps t;
    dk__transposed_taps(r, stride, pad, dilation, ksize, &t);
    memset(a, 0, sizeof *a);
    a->out_start = r;
    a->out_step = stride;
    a->out_count = dk__phase_outputs(r, stride, out_size);
    a->in_step = 1;
    a->in_size = in_size;
    a->k_step = t.k_step;
    a->off_step = t.off_step;
    a->k0 = t.k0;
    a->taps = t.taps;
    a->off0 = t.off0;
}

/* One axis of a plain conv: out outputs, input steps of stride from -pad,
 * taps dilation apart, kernel taps 0, 1, ... */
static void hipops_conv_axis(dkh_axis *a, int64_t out, int64_t stride, int64_t pad, int64_t dilation, int64_t taps,
                             int64_t in_size) {
    memset(a, 0, sizeof *a);
    a->out_count = out;
    a->out_step = 1;
    a->in_step = stride;
    a->off0 = -pad;
    a->off_step = dilation;
    a->taps = taps;
    a->k_step = 1;
    a->in_size = in_size;
}

static void hipops_conv_common(dkh_gemm_args *p, const dk_tensor *x, const dk_tensor *w, const dk_tensor *bias,
                               const dk_tensor *res, const dk_tensor *y, int64_t groups, dk_activation act,
                               dk_activation post_act, float out_scale, float res_scale) {
    int i;
    memset(p, 0, sizeof *p);
    p->mode = DKH_GEMM_CONV;
    p->a = hipops_addr(w);
    p->b = hipops_addr(x);
    p->y = hipops_addr(y);
    for (i = 0; i < 4; i++) {
        p->a_s[i] = w->strides[i];
        p->b_s[i] = x->strides[i];
        p->y_s[i] = y->strides[i];
        p->r_s[i] = res ? res->strides[i] : 0;
    }
    if (bias) {
        p->bias = hipops_addr(bias);
        p->bias_s = bias->strides[0];
        p->bias_dt = (int)bias->dtype;
        p->has_bias = 1;
    }
    if (res) {
        p->res = hipops_addr(res);
        p->has_res = 1;
    }
    p->groups = groups;
    p->ups = 1;
    p->act = (int)act;
    p->post_act = (int)post_act;
    p->out_scale = out_scale;
    p->res_scale = res_scale;
}

static dk_status hipops_gemm_launch(dk_context *ctx, const char *op, dk_dtype dt, dkh_gemm_args *p, int64_t batch) {
    return dk__hip_launch(ctx, op, dk__hip_state(ctx)->k.gemm[dt], hipops_blocks(p->N, DKH_GEMM_BN),
                          hipops_blocks(p->M, DKH_GEMM_BM), (uint64_t)batch, p);
}

/* Tensor map of x (or of a conv3d cache) as (C, W, H, images) over `count`
 * images `stride` elements apart, boxes of 64 channels x p->tma_box pixels of
 * one row; 0 where the driver refuses it. */
static int hipops_xmap(dk_hip_api *api, const dkh_gemm_args *p, dkh_u64 addr, int64_t count, int64_t stride,
                       unsigned char *map) {
    uint64_t dims[4], strides[3];
    uint32_t box[4] = {64, 1, 1, 1}, one[4] = {1, 1, 1, 1};
    int i;
    box[1] = (uint32_t)p->tma_box;
    dims[0] = (uint64_t)p->cin_g;
    dims[1] = (uint64_t)p->w.in_size;
    dims[2] = (uint64_t)p->h.in_size;
    dims[3] = (uint64_t)count;
    /* a dimension of extent 1 gets the dense stride (its own is never used) */
    strides[0] = (uint64_t)(dims[1] > 1 ? p->b_s[3] : p->cin_g) * 2;
    strides[1] = dims[2] > 1 ? (uint64_t)p->b_s[2] * 2 : strides[0] * dims[1];
    strides[2] = dims[3] > 1 ? (uint64_t)stride * 2 : strides[1] * dims[2];
    for (i = 0; i < 3; i++)
        if (strides[i] % 16 != 0) return 0;
    /* UINT16 elements (a copy: f16 and bf16 alike), no interleave, 128-byte
     * swizzle, 128-byte L2 promotion, zero fill */
    return addr % 16 == 0 &&
           api->cu_tensor_map_encode_tiled(map, 1, 4, (void *)(uintptr_t)addr, dims, strides, box, one, 0, 3, 2, 0) == 0;
}

/* Tensor maps of the TMA kernels (dk_gemm_wgmma.hip): x as (C, W, H, images)
 * with boxes of 64 channels x p->tma_box pixels of one row (the largest of 64,
 * 32, 16 that divides every output row), the packed weight as (row, Cout) with
 * boxes of 64 x 128; both 128-byte swizzled, zeros outside.  A conv3d read in
 * place (p->t_taps) maps x's frames and the cache's as the images, so that
 * frames before or after them come back as zeros.  0 (use the
 * cp.async kernels) where the problem does not fit: groups, fused upsample,
 * batched weights, steps along w, output rows not a multiple of 16 long, or
 * strides the driver refuses.  Boxes of 8 pixels measured slower than cp.async
 * (docs/conv.md, "HIP thresholds").  DIFKERN_HIP_TMA=0 turns it off. */
static int hipops_tmaps(dk_context *ctx, dkh_gemm_args *p, int64_t batch, dkh_tmaps *t) {
    dk_hip_api *api = &dk__hip_state(ctx)->api;
    int i, n = p->nph > 0 ? p->nph : 1, bw;
    uint64_t dims[2], strides[1];
    uint32_t box[2] = {64, DKH_GEMM_MMA_BN}, one[2] = {1, 1};
    if (!ctx->knobs.hip_tma || !api->cu_tensor_map_encode_tiled) return 0;
    if (p->groups != 1 || p->ups != 1 || p->a_zs != 0 || p->a % 16 != 0) return 0;
    for (bw = 64; bw >= 16; bw /= 2) {
        for (i = 0; i < n; i++) {
            const dkh_axis *w = p->nph > 0 ? &p->ph_w[i] : &p->w;
            if (w->in_step != 1 || w->out_count % bw != 0) break;
        }
        if (i == n) break;
    }
    if (bw < 16) return 0;
    p->tma_box = bw;
    if (!hipops_xmap(api, p, p->b, p->t_taps ? p->t_x : batch / n, p->t_taps ? p->t_xs : p->b_s[0], t->x)) return 0;
    if (p->t_cache) {
        if (!hipops_xmap(api, p, p->t_cache, p->t_c, p->t_cs, t->c)) return 0;
    } else {
        memcpy(t->c, t->x, sizeof t->c);
    }
    dims[0] = (uint64_t)p->a_s[0];
    dims[1] = (uint64_t)p->M;
    strides[0] = (uint64_t)p->a_s[0] * 2;
    if (strides[0] % 16 != 0) return 0;
    return api->cu_tensor_map_encode_tiled(t->w, 1, 2, (void *)(uintptr_t)p->a, dims, strides, box, one, 0, 3, 2, 0) == 0;
}

/* The fast kernel (dk_gemm_fast.hip): rows = pixels, columns = output channels. */
static dk_status hipops_gemm_mma_launch(dk_context *ctx, const char *op, dk_dtype dt, dkh_gemm_args *p, int64_t batch) {
    dk_hip_state *st = dk__hip_state(ctx);
    uint64_t pix = hipops_blocks(p->N, DKH_GEMM_MMA_BM), ch = hipops_blocks(p->M, DKH_GEMM_MMA_BN);
    /* channel tiles on x (fastest) where the pixel tiles fit grid y */
    void *f4 = st->k.gemm_mma_4warp[dt];
    /* The 4-warp variant where it wins: K >= 2048 (deep reductions keep its
     * fewer warps busy); below, the 8-warp kernel (docs/conv.md, "HIP
     * thresholds").  DIFKERN_HIP_GEMM_MMA_4WARP=0 / 1: never / always (A/B timing, tests). */
    const int64_t force4 = ctx->knobs.hip_gemm_mma_4warp, forcew = ctx->knobs.hip_wgmma; /* -1: by shape */
    int use4 = f4 && (force4 >= 0 ? force4 == 1 : p->K >= 2048);
    const int wgmma = p->cin_g % DKH_GEMM_WGMMA_BK == 0 && forcew != 0;
    p->tiles_xy = pix <= 65535u;
    /* Hopper: wgmma where the slices of 64 channels fit the groups.  With TMA
     * loads (hipops_tmaps) four warpgroups (256 pixels) on every measured
     * shape (H100, f16 3x3, ms: 512->512 @512 2.56 -> 2.23, 128->128 @1024 0.868
     * -> 0.834); with cp.async four where K >= 2048 (512->512 @512 2.82 -> 2.69,
     * 256->128 @1024 1.72 -> 1.62; 128->128 @1024 1.03 vs 1.05).
     * DIFKERN_HIP_WGMMA=0 / 2 / 4: off / two / four warpgroups (A/B timing, tests). */
    /* conv3d's time taps (p->t_taps) only on four warpgroups or TMA (dk_gemm_wgmma.hip) */
    if (wgmma && st->k.gemm_wgmma[dt] && (!p->t_taps || st->k.gemm_wgmma_4wg[dt])) {
        dkh_tmaps t;
        const int tma = st->k.gemm_wgmma_tma[dt] && st->k.gemm_wgmma_tma_4wg[dt] && hipops_tmaps(ctx, p, batch, &t);
        const int four = st->k.gemm_wgmma_4wg[dt] && (p->t_taps || (forcew > 0 ? forcew == 4 : tma || p->K >= 2048));
        const uint64_t bm = four ? DKH_GEMM_WGMMA_4WG_BM : DKH_GEMM_MMA_BM, pixw = hipops_blocks(p->N, bm);
        const unsigned smem = four ? DKH_GEMM_WGMMA_4WG_SMEM : DKH_GEMM_WGMMA_SMEM;
        p->tiles_xy = pixw <= 65535u;
        if (tma) {
            return dk__hip_launch_block2(ctx, op, four ? st->k.gemm_wgmma_tma_4wg[dt] : st->k.gemm_wgmma_tma[dt], p->tiles_xy ? ch : pixw,
                                         p->tiles_xy ? pixw : ch, (uint64_t)batch,
                                         four ? DKH_GEMM_WGMMA_TMA_4WG_THREADS : DKH_GEMM_WGMMA_TMA_THREADS, smem, p, &t);
        }
        return dk__hip_launch_block(ctx, op, four ? st->k.gemm_wgmma_4wg[dt] : st->k.gemm_wgmma[dt], p->tiles_xy ? ch : pixw,
                                    p->tiles_xy ? pixw : ch, (uint64_t)batch,
                                    four ? DKH_GEMM_WGMMA_4WG_THREADS : DKH_THREADS, smem, p);
    }
    if (use4)
        return dk__hip_launch_block(ctx, op, f4, p->tiles_xy ? ch : pix, p->tiles_xy ? pix : ch, (uint64_t)batch,
                                    DKH_GEMM_MMA_4WARP_THREADS, 0, p);
    return dk__hip_launch(ctx, op, st->k.gemm_mma[dt], p->tiles_xy ? ch : pix, p->tiles_xy ? pix : ch, (uint64_t)batch, p);
}

/* Whether the fast kernel can read x: f16/bf16, channels-last (channel stride 1),
 * 16-byte aligned pixels (every stride of a dimension > 1 a multiple of 8),
 * channels of a group a multiple of the reduction slice, coordinates in int.
 * DIFKERN_HIP_FAST=0 turns the fast path off (A/B timing). */
static int hipops_fast_ok(dk_context *ctx, const dk_tensor *x, int64_t cin_g, int64_t ups, int64_t pixels) {
    int i;
    if (!ctx->knobs.hip_fast) return 0;
    if ((x->dtype != DK_F16 && x->dtype != DK_BF16) || !dk__hip_state(ctx)->k.gemm_mma[x->dtype]) return 0;
    if (cin_g % DKH_GEMM_MMA_BK != 0 || x->strides[1] != 1 || hipops_addr(x) % 16 != 0) return 0;
    for (i = 0; i < 4; i++)
        if (i != 1 && x->shape[i] > 1 && x->strides[i] % 8 != 0) return 0;
    return x->shape[2] * ups < (1 << 30) && x->shape[3] * ups < (1 << 30) && pixels < ((int64_t)1 << 31);
}

/* Narrow outputs (Cout/groups <= 8, e.g. the SDXL VAE's conv_out 128 -> 3) take
 * the direct kernel (dk_conv_narrow.hip) in every dtype and view: a GEMM tile
 * 64 or 128 channels wide would waste 15/16 of its work or more.  Coordinates
 * must fit int.  Where the fast GEMM kernel can run (fast) and the weights do
 * not fit one staging (more than 128 channels per group or 9 taps: restaged
 * per 64-pixel tile), the GEMM is faster (docs/conv.md, "HIP thresholds").
 * DIFKERN_HIP_NARROW=0 (or DIFKERN_HIP_FAST=0)
 * turns it off. */
static int hipops_narrow_ok(dk_context *ctx, const dk_tensor *x, int64_t coutg, int64_t cin_g, int64_t taps,
                            int64_t ups, int64_t pixels, int fast) {
    if (!ctx->knobs.hip_narrow || !ctx->knobs.hip_fast) return 0;
    if (coutg > 8 || !dk__hip_state(ctx)->k.narrow[x->dtype][0][0]) return 0;
    if (fast && (cin_g > DKH_NARROW_CC || taps > DKH_NARROW_TB)) return 0;
    return x->shape[2] * ups < (1 << 30) && x->shape[3] * ups < (1 << 30) && pixels < ((int64_t)1 << 31) &&
           cin_g < (1 << 30);
}

/* One launch of the narrow kernel for p (the GEMM kernels' description, weight
 * in its own layout).  Vector kernels where x is channels-last with 16-byte
 * aligned pixels and Cin/groups a multiple of the 16-byte vector. */
static dk_status hipops_narrow_launch(dk_context *ctx, const char *op, const dk_tensor *x, const dkh_gemm_args *p,
                                      int64_t batch) {
    dkh_narrow_args q;
    int64_t vw = 16 / (int64_t)dk_dtype_size(x->dtype), tile, blocks;
    int vec = p->cin_g % vw == 0 && dk__channels_last16(x, hipops_addr(x), 1);
    /* vectors: 8 lanes per pixel where the channels are at most 8 vectors (half of
     * 16 lanes would idle), else 16 */
    if (vec && p->cin_g <= 8 * vw) vec = 2;
    q.c = *p;
    /* dkn_conv: 16 or 8 lanes per pixel and 4 pixels per thread, or 1 and 1 */
    tile = vec ? DKH_THREADS / (vec == 2 ? 8 : 16) * 4 : DKH_THREADS;
    q.tiles = (p->N + tile - 1) / tile;
    /* blocks walk consecutive tiles (their weights staged once) while >= 2048 blocks remain */
    q.tpb = q.tiles / 2048;
    if (q.tpb < 1) q.tpb = 1;
    if (q.tpb > 8) q.tpb = 8;
    if (ctx->knobs.hip_narrow_tpb > 0) q.tpb = (int)ctx->knobs.hip_narrow_tpb; /* tuning only */
    blocks = (q.tiles + q.tpb - 1) / q.tpb;
    return dk__hip_launch(ctx, op, dk__hip_state(ctx)->k.narrow[x->dtype][p->M > 4][vec], (uint64_t)blocks, 1,
                          (uint64_t)batch, &q);
}

/* Every input coordinate a tile along axis a reaches (rounded up to whole
 * tiles of `tile` outputs) fits int. */
static int hipops_shallow_axis_ok(const dkh_axis *a, int64_t tile) {
    const int64_t lim = (int64_t)1 << 30, outs = a->out_count + tile;
    if (a->in_size >= lim || a->out_count >= lim || a->in_step >= (1 << 16) || a->off_step >= (1 << 16)) return 0;
    if (a->off0 <= -lim || a->off0 >= lim) return 0;
    return outs * a->in_step + a->taps * a->off_step + (a->off0 < 0 ? -a->off0 : a->off0) < lim;
}

/* The input rows that rg row groups of the shallow kernel's tile read. */
static int64_t hipops_shallow_patch_h(const dkh_gemm_args *p, int rg) {
    return ((int64_t)rg * DKH_SHALLOW_TH - 1) * p->h.in_step + (p->h.taps - 1) * p->h.off_step + 1;
}

/* Shallow reductions (Cin/groups x taps <= DKH_SHALLOW_K, more than 8 output
 * channels per group), e.g. an image encoder's first conv, 3 -> 128 3x3: the
 * direct kernel (dk_conv_shallow.hip) in every dtype and view, where the fast
 * GEMM would need its channels zero-padded to a multiple of its 32-channel
 * slice (a channel count that is one runs there unpadded).  The tile's input
 * patch must fit the kernel's shared memory (large strides or dilations do
 * not) and coordinates int.  At a reduction of 36 (4 -> 512 3x3) the padded
 * GEMM was as fast, hence 32.  DIFKERN_HIP_SHALLOW=0 (or DIFKERN_HIP_FAST=0)
 * turns it off; the measurements behind it: docs/conv.md, "HIP thresholds". */
static int hipops_shallow_ok(dk_context *ctx, const dk_tensor *x, const dkh_gemm_args *p, int *patch_w) {
    const int64_t taps = p->h.taps * p->w.taps;
    int64_t pw;
    if (!ctx->knobs.hip_shallow || !ctx->knobs.hip_fast || !dk__hip_state(ctx)->k.shallow[x->dtype]) return 0;
    if (p->M <= 8 || p->cin_g % DKH_GEMM_MMA_BK == 0 || p->cin_g * taps > DKH_SHALLOW_K || p->transposed) return 0;
    if (!hipops_shallow_axis_ok(&p->h, DKH_SHALLOW_TH * DKH_SHALLOW_RG) ||
        !hipops_shallow_axis_ok(&p->w, DKH_SHALLOW_TW) || p->M >= (1 << 30))
        return 0;
    pw = (DKH_SHALLOW_TW - 1) * p->w.in_step + (p->w.taps - 1) * p->w.off_step + 1;
    if (p->cin_g * hipops_shallow_patch_h(p, 1) * pw > DKH_SHALLOW_PATCH) return 0;
    *patch_w = (int)pw;
    return 1;
}

/* As many row groups per block (at most DKH_SHALLOW_RG) as the patch fits and
 * the output has rows for: they share the block's staged weights and the
 * patch's halo rows. */
static dk_status hipops_shallow_launch(dk_context *ctx, const dk_tensor *x, const dk_tensor *y,
                                       const dkh_gemm_args *p, int patch_w, int64_t batch) {
    dkh_shallow_args q;
    int rg = DKH_SHALLOW_RG;
    while (rg > 1 && (p->cin_g * hipops_shallow_patch_h(p, rg) * patch_w > DKH_SHALLOW_PATCH ||
                      (rg / 2) * DKH_SHALLOW_TH >= p->h.out_count))
        rg /= 2;
    memset(&q, 0, sizeof q);
    q.c = *p;
    q.tiles_w = hipops_blocks(p->w.out_count, DKH_SHALLOW_TW);
    q.rg = rg;
    q.patch_h = (int)hipops_shallow_patch_h(p, rg);
    q.patch_w = patch_w;
    q.vec_out = dk__channels_last16(y, hipops_addr(y), 1) && p->M % 8 == 0;
    q.k3 = p->h.taps == 3 && p->w.taps == 3 && p->h.in_step == 1 && p->w.in_step == 1 && p->h.off_step == 1 &&
           p->w.off_step == 1 && patch_w == DKH_SHALLOW_TW + 2;
    return dk__hip_launch(ctx, "dk_conv2d", dk__hip_state(ctx)->k.shallow[x->dtype],
                          (uint64_t)q.tiles_w * hipops_blocks(p->h.out_count, DKH_SHALLOW_TH * rg),
                          hipops_blocks(p->M, DKH_SHALLOW_CB), (uint64_t)batch, &q);
}

/* Prepacked conv weights for the fast kernel: Cin fastest, then KW, KH, Cout
 * (conv2d w [Cout, Cin/g, KH, KW] -> [Cout][KH][KW][Cin/g]; conv_transpose2d
 * w [Cin, Cout/g, KH, KW] -> [Cout/g][KH][KW][Cin]).  A permutation of w that does
 * not depend on groups, made once on the device by a strided copy and kept in
 * the context's weight cache (keyed by the weight's buffer, generation, view).
 * A conv2d on zero-padded input channels (hipops_padded_cin) packs with cpad
 * channels, the ones past w's zero, as a separate cache entry. */
typedef struct hipops_packed {
    dk_buffer buf;
    int64_t s[4]; /* element strides of w's own dimensions in the packed copy */
} hipops_packed;

/* The packed order of (cout, cin, kh, kw), innermost first: Cin, KW, KH, Cout. */
static const int hipops_pack_order[4] = {1, 3, 2, 0};

static void hipops_packed_free(dk_context *ctx, void *data) {
    hipops_packed *pk = (hipops_packed *)data;
    ctx->ops->buffer_destroy(ctx, &pk->buf);
    free(pk);
}

static dk_status hipops_packed_weight(dk_context *ctx, dk_weight_use use, const dk_tensor *w, int64_t cpad,
                                      hipops_packed **out) {
    dk_weight_key key;
    hipops_packed *pk;
    dk_tensor dst;
    int tr = use == DK_WEIGHT_CONV_TRANSPOSE2D, i;
    dk_pack_plan plan;
    dk_status st;
    dk__weight_key(&key, w, (int32_t)use, (int32_t)(1 | cpad << 8));
    pk = (hipops_packed *)dk__weight_find(ctx, &key);
    if (pk) {
        *out = pk;
        return DK_OK;
    }
    pk = (hipops_packed *)calloc(1, sizeof *pk);
    if (!pk) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "dk_prepare_weight (hip): out of host memory");
    dk__weight_pack_plan(w, tr, tr ? w->shape[1] : w->shape[0], cpad ? cpad : tr ? w->shape[0] : w->shape[1],
                         hipops_pack_order, &plan);
    pk->buf.size = plan.elements * dk_dtype_size(w->dtype);
    st = ctx->ops->buffer_create(ctx, &pk->buf);
    if (st != DK_OK) {
        free(pk);
        return st;
    }
    /* the padded channels must read as zeros: x's padding is zero too, but
     * uninitialised memory may hold NaN, and 0 * NaN is NaN */
    if (plan.padded) st = ctx->ops->buffer_fill(ctx, &pk->buf, 0, pk->buf.size, 0);
    if (st != DK_OK) {
        hipops_packed_free(ctx, pk);
        return st;
    }
    for (i = 0; i < 4; i++) pk->s[i] = plan.w_s[i];
    dst = *w;
    dst.buffer = &pk->buf;
    dst.offset = 0;
    for (i = 0; i < 4; i++) dst.strides[i] = pk->s[i];
    st = dk__hipops_elementwise(ctx, "dk_prepare_weight", DKH_ELT_CONVERT, DK_ACT_NONE, 1.0f, w, 0.0f, NULL, 1.0f, &dst);
    if (st != DK_OK) {
        hipops_packed_free(ctx, pk);
        return st;
    }
    st = dk__weight_insert(ctx, &key, pk, pk->buf.size, hipops_packed_free);
    if (st != DK_OK) return st; /* the cache freed pk */
    *out = pk;
    return DK_OK;
}

dk_status dk__hip_prepare_weight(dk_context *ctx, dk_weight_use use, const dk_tensor *w) {
    hipops_packed *pk;
    /* matmul reads b in place; only f16/bf16 weights whose input channels can
     * be a multiple of the slice are used by the fast kernel */
    if (use == DK_WEIGHT_MATMUL_B || w->dtype == DK_F32) return DK_OK;
    if ((use == DK_WEIGHT_CONV2D ? w->shape[1] : w->shape[0]) % DKH_GEMM_MMA_BK != 0) return DK_OK;
    return hipops_packed_weight(ctx, use, w, 0, &pk);
}

/* Points p at the packed weight (cpad: with that many input channels, 0: w's
 * own): a_s = strides of (cout, cin, kh, kw). */
static dk_status hipops_use_packed(dk_context *ctx, dk_weight_use use, const dk_tensor *w, int64_t cpad,
                                   dkh_gemm_args *p) {
    hipops_packed *pk;
    int tr = use == DK_WEIGHT_CONV_TRANSPOSE2D;
    dk_status st = hipops_packed_weight(ctx, use, w, cpad, &pk);
    if (st != DK_OK) return st;
    p->a = dk__hip_ptr(&pk->buf);
    p->a_s[0] = pk->s[tr ? 1 : 0];
    p->a_s[1] = 1;
    p->a_s[2] = pk->s[2];
    p->a_s[3] = pk->s[3];
    p->a_zs = 0;
    p->a_gs = tr ? p->cin_g : p->M * p->a_s[0]; /* transposed: the group's first input channel */
    return DK_OK;
}

/* Fused nearest-2x upsample on the fast kernels: four phase convs with summed
 * taps (src/conv_up2.c) where the conv has stride 1 and dilation 1 (H100, f16
 * conv3x3 upsample 256 -> 256 to 1024x1024: see NOTES.md).  DIFKERN_HIP_UP2=0
 * keeps the upsample in the input indexing instead. */
static int hipops_up2_ok(const dk_context *ctx, const dk_conv2d_desc *d, const dk_tensor *x) {
    return ctx->knobs.hip_up2 && dk__conv_up2_fits(d) && x->shape[0] * d->groups * DKH_PHASES <= 65535;
}
static dk_status hipops_conv2d_up2(dk_context *ctx, const dk_conv2d_desc *d, const dk_tensor *x, const dk_tensor *w,
                                   dkh_gemm_args *p, const dk_tensor *y);

/* Channels-last copies of a conv's operands.  An f16/bf16 input that is not
 * channels-last (NCHW) still gets the fast kernels: copied to channels-last
 * scratch first by the layout-changing convert (a tiled transpose), since the
 * generic kernel is an order of magnitude slower on such convs.  An output (and
 * residual) that is not channels-last is staged the same way, so that the
 * epilogue stores 16-byte vectors (element stores to NCHW cost 2-5x on the
 * H100), and y is copied out after the conv.  One scratch region holds the
 * copies: x, then y, then the residual, each 256-byte aligned.
 * DIFKERN_HIP_STAGE_NHWC=0 turns it off (A/B timing). */
typedef struct hipops_stage {
    dk_buffer buf;
    dk_tensor t[3];      /* x, y, residual as the conv sees them */
    int staged[3];
} hipops_stage;

/* Channels-last with 16-byte aligned pixels: what the fast kernels load (x) and
 * what their epilogue stores in vectors (y, the residual). */
static int hipops_channels_last16(const dk_tensor *t) { return dk__channels_last16(t, hipops_addr(t), 1); }

/* Returns 0 (nothing done) where no operand needs a copy, the copies would not
 * make the conv fast-eligible, or their scratch cannot be had; else 1 with *st
 * the status of the copies in and sg's tensors to run the conv on.  narrow: the
 * conv takes the narrow kernel, which loads 16-byte vectors of input channels
 * from a channels-last x (any dtype) and stores y by element: only x is copied
 * (reading NCHW input by element was several times slower than the copy).
 * cpad > 0: x is copied, whatever its layout, to channels-last scratch of cpad
 * channels, those past its own zero (hipops_padded_cin); cin_g is then cpad. */
static int hipops_stage_in(dk_context *ctx, const dk_tensor *x, const dk_tensor *residual, const dk_tensor *y,
                           int64_t cin_g, int64_t ups, int64_t pixels, int narrow, int64_t cpad, hipops_stage *sg,
                           dk_status *st) {
    const dk_tensor *src[3];
    dk_stage_plan plan;
    uint64_t total, ptr;
    int i, want[3];
    src[0] = x;
    src[1] = y;
    src[2] = residual;
    if ((!ctx->knobs.hip_stage_nhwc && !cpad) || x->ndim != 4 || y->ndim != 4) return 0;
    if ((!narrow && x->dtype != DK_F16 && x->dtype != DK_BF16) || y->dtype != x->dtype) return 0;
    if (residual && (residual->ndim != 4 || residual->dtype != x->dtype)) return 0;
    /* the narrow kernel stores y and reads the residual by element: only x is
     * copied for it; the copies are 256-byte aligned in the scratch */
    for (i = 0; i < 3; i++)
        want[i] = src[i] && ctx->knobs.hip_stage_nhwc && !hipops_channels_last16(src[i]) && !(narrow && i > 0);
    if (!dk__conv_stage_plan(src, want, cpad, 1, 256, &plan)) return 0;
    memset(sg, 0, sizeof *sg);
    sg->buf.wrapped = 1;
    sg->buf.impl = (void *)(uintptr_t)256u; /* an aligned stand-in for the eligibility check */
    for (i = 0; i < 3; i++) {
        const dk_tensor *t = src[i];
        if (!t) continue;
        sg->t[i] = *t;
        sg->staged[i] = plan.staged[i];
        if (plan.staged[i])
            sg->t[i] = dk_tensor_nhwc(&sg->buf, plan.offset[i], t->dtype, t->shape[0], plan.channels[i], t->shape[2],
                                      t->shape[3]);
    }
    total = plan.total;
    if (narrow ? cin_g % (16 / (int64_t)dk_dtype_size(x->dtype)) != 0 : !hipops_fast_ok(ctx, &sg->t[0], cin_g, ups, pixels))
        return 0;
    if (dk__hip_scratch(ctx, total, &ptr) != DK_OK) {
        dk__clear_error(ctx); /* the kernels read and write the operands where they are */
        return 0;
    }
    sg->buf.size = total;
    sg->buf.impl = (void *)(uintptr_t)ptr;
    *st = dk__conv_stage_copy_in(ctx, x, residual, sg->staged, sg->t, cpad);
    return 1;
}

/* After the conv on sg's tensors (status st): y copied out where it was staged. */
static dk_status hipops_stage_out(dk_context *ctx, hipops_stage *sg, const dk_tensor *y, dk_status st) {
    return dk__conv_stage_copy_out(ctx, sg->staged, sg->t, y, st);
}

/* Input channels zero-padded to a multiple of the fast kernel's reduction slice
 * (x copied by hipops_stage_in, w packed with the same channels) for a conv
 * that would otherwise take the generic kernel, as a latent decoder's first
 * conv (4 -> 512; reductions up to 32 take the shallow kernel first).  The
 * padded channel count, or 0 where it does not pay.
 * The rule: the padded reduction (cpad * taps) at most 16x the real one, at
 * least 16 output channels and 1024 output pixels per image.  The generic
 * kernel does scalar FMAs with little operand reuse, far more than 16x below
 * the matrix-instruction rate of the fast kernels, so even 16x the FLOPs on
 * them cost less; the copy moves cin + 2 cpad elements per input pixel (read,
 * zero fill, write), small against the conv's 2 * Cout * cin * taps FLOPs per
 * pixel from 16 output channels up (fewer take the narrow kernel); on small
 * images the two extra launches (fill, copy) would weigh more than the work
 * they save.  groups 1 and no fused upsample only: the grouped and
 * phase-weight packs keep w's channels.  DIFKERN_HIP_PAD_CIN=0 turns it off
 * (A/B timing). */
static int64_t hipops_padded_cin(dk_context *ctx, const dk_conv2d_desc *d, const dk_tensor *x, const dk_tensor *w,
                             const dk_tensor *y, int64_t pixels) {
    const int64_t cin = w->shape[1], cpad = dk__conv_cin_pad(d, x, y, cin, DKH_GEMM_MMA_BK);
    if (!ctx->knobs.hip_pad_cin || !ctx->knobs.hip_fast || !cpad) return 0;
    if ((x->dtype != DK_F16 && x->dtype != DK_BF16) || x->ndim != 4) return 0;
    if (cin >= (1 << 16) || cpad > 16 * cin) return 0;
    return w->shape[0] >= 16 && pixels >= 1024 ? cpad : 0;
}

/* The conv on x as given, or (cpad > 0) on x the zero-padded copy of the
 * input hipops_stage_in made, with cpad channels of which w has the first. */
static dk_status hipops_conv2d(dk_context *ctx, const dk_conv2d_desc *d, const dk_tensor *x, const dk_tensor *w,
                               const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y, int64_t cpad) {
    dkh_gemm_args p;
    int fast, narrow;
    hipops_conv_common(&p, x, w, bias, residual, y, d->groups, d->activation, d->post_activation,
                       d->output_scale, d->residual_scale);
    p.ups = d->upsample;
    p.cin_g = w->shape[1];
    p.M = w->shape[0] / d->groups;
    hipops_conv_axis(&p.h, y->shape[2], d->stride_h, d->pad_h, d->dilation_h, w->shape[2], x->shape[2] * d->upsample);
    hipops_conv_axis(&p.w, y->shape[3], d->stride_w, d->pad_w, d->dilation_w, w->shape[3], x->shape[3] * d->upsample);
    p.N = p.h.out_count * p.w.out_count;
    /* on the padded copy the fast kernel reduces over all cpad channels; the
     * generic one (should the fast not take it) reads x's first cin_g */
    fast = hipops_fast_ok(ctx, x, cpad ? cpad : p.cin_g, d->upsample, p.N);
    if (fast && cpad) p.cin_g = cpad;
    p.K = p.cin_g * p.h.taps * p.w.taps;
    narrow = !cpad && hipops_narrow_ok(ctx, x, p.M, p.cin_g, p.h.taps * p.w.taps, d->upsample, p.N, fast);
    if (!cpad && !narrow && !fast) {
        int pw;
        if (hipops_shallow_ok(ctx, x, &p, &pw))
            return hipops_shallow_launch(ctx, x, y, &p, pw, x->shape[0] * d->groups);
    }
    if (!cpad) {
        hipops_stage sg;
        dk_status s;
        const int64_t pad = fast || narrow ? 0 : hipops_padded_cin(ctx, d, x, w, y, p.N);
        if (hipops_stage_in(ctx, x, residual, y, pad ? pad : p.cin_g, d->upsample, p.N, narrow, pad, &sg, &s)) {
            if (s == DK_OK) s = hipops_conv2d(ctx, d, &sg.t[0], w, bias, residual ? &sg.t[2] : NULL, &sg.t[1], pad);
            return hipops_stage_out(ctx, &sg, y, s);
        }
    }
    if (narrow) return hipops_narrow_launch(ctx, "dk_conv2d", x, &p, x->shape[0] * d->groups);
    if (fast && hipops_up2_ok(ctx, d, x))
        return hipops_conv2d_up2(ctx, d, x, w, &p, y);
    if (fast) {
        dk_status s = hipops_use_packed(ctx, DK_WEIGHT_CONV2D, w, cpad, &p);
        if (s != DK_OK) return s;
        return hipops_gemm_mma_launch(ctx, "dk_conv2d", y->dtype, &p, x->shape[0] * d->groups);
    }
    return hipops_gemm_launch(ctx, "dk_conv2d", y->dtype, &p, x->shape[0] * d->groups);
}

int64_t dk__hip_conv_channel_multiple(dk_context *ctx, dk_dtype dt) {
    if (!ctx->knobs.hip_fast || ctx->knobs.hip_wgmma == 0 || (dt != DK_F16 && dt != DK_BF16)) return 0;
    return dk__hip_state(ctx)->k.gemm_wgmma[dt] ? DKH_GEMM_WGMMA_BK : 0;
}

dk_status dk__hip_conv2d(dk_context *ctx, const dk_conv2d_desc *d, const dk_tensor *x, const dk_tensor *w,
                         const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y) {
    return hipops_conv2d(ctx, d, x, w, bias, residual, y, 0);
}

/* backend.h's conv3d_in_place: the fast kernels' reduction over (time tap,
 * tap_h, tap_w, channel) reading every tap's frame where it is (x, the cache
 * or zeros: dkh_gemm_args's t_* fields), one launch per image with the output
 * frames as the batch.  Taken where those kernels read x and the cache in
 * place: f16/bf16 channels-last frames (hipops_fast_ok), the cache with x's
 * pixel strides, groups 1, Cin a multiple of conv_channel_multiple (Hopper:
 * 64, the wgmma slice; below it the staged copy pads the channels up to it,
 * which measured faster than the mma.sync kernels in place), and a weight
 * whose KT and KH merge into one dimension, so that its packing is conv2d's
 * of [Cout, Cin, KT*KH, KW] (rows [kt][kh][kw][cin], cached per weight). */
int dk__hip_conv3d_in_place(dk_context *ctx, const dk_conv3d_desc *d, const dk_tensor *cache, const dk_tensor *x,
                            const dk_tensor *w, const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y,
                            dk_status *st) {
    const int64_t cin = x->shape[1], t = x->shape[2], tc = cache ? cache->shape[2] : 0, ot = y->shape[2];
    const int64_t kt = w->shape[2], kh = w->shape[3], kw = w->shape[4], mult = dk__hip_conv_channel_multiple(ctx, x->dtype);
    const int64_t lim = (int64_t)1 << 30;
    dk_tensor xv = dk__conv3d_frames(x, 0, 0, t, 1), yv = dk__conv3d_frames(y, 0, 0, ot, 1), rv, cv, wv;
    dkh_gemm_args p;
    int64_t n;
    dk_status s;
    if (d->groups != 1 || kt < 2 || cin % DKH_GEMM_MMA_BK != 0 || (mult > 0 && cin % mult != 0)) return 0;
    if (w->strides[2] != kh * w->strides[3] || ot > 65535 || t >= lim || d->pad_front >= lim ||
        (int64_t)d->stride_t * ot >= lim || (int64_t)d->dilation_t * kt >= lim)
        return 0;
    if (!hipops_fast_ok(ctx, &xv, cin, 1, y->shape[3] * y->shape[4])) return 0;
    if (cache) {
        cv = dk__conv3d_frames(cache, 0, 0, tc, 1);
        if (!hipops_fast_ok(ctx, &cv, cin, 1, y->shape[3] * y->shape[4]) || cache->strides[3] != x->strides[3] ||
            cache->strides[4] != x->strides[4])
            return 0;
    }
    if (residual) rv = dk__conv3d_frames(residual, 0, 0, ot, 1);
    wv = dk__merge_dims(w, 2); /* [Cout, Cin, KT*KH, KW]: the strides check above */
    /* image 0's arguments; each image moves the operands' addresses */
    hipops_conv_common(&p, &xv, &wv, bias, residual ? &rv : NULL, &yv, 1, d->activation, d->post_activation,
                       d->output_scale, d->residual_scale);
    p.cin_g = cin;
    p.M = w->shape[0];
    hipops_conv_axis(&p.h, y->shape[3], d->stride_h, d->pad_top, d->dilation_h, kh, x->shape[3]);
    hipops_conv_axis(&p.w, y->shape[4], d->stride_w, d->pad_left, d->dilation_w, kw, x->shape[4]);
    p.N = p.h.out_count * p.w.out_count;
    p.K = cin * kt * kh * kw;
    p.b_s[0] = 0;
    p.t_taps = (int)kt;
    p.t_step = d->stride_t;
    p.t_dil = d->dilation_t;
    p.t_front = d->pad_front;
    p.t_zero = (int)(d->pad_front - tc);
    p.t_x = (int)t;
    p.t_c = (int)tc;
    p.t_xs = x->strides[2];
    p.t_cs = cache ? cache->strides[2] : 0;
    s = hipops_use_packed(ctx, DK_WEIGHT_CONV2D, &wv, 0, &p);
    for (n = 0; n < x->shape[0] && s == DK_OK; n++) {
        const uint64_t es = dk_dtype_size(x->dtype);
        p.b = hipops_addr(x) + (uint64_t)(n * x->strides[0]) * es;
        p.y = hipops_addr(y) + (uint64_t)(n * y->strides[0]) * es;
        if (residual) p.res = hipops_addr(residual) + (uint64_t)(n * residual->strides[0]) * es;
        if (cache) p.t_cache = hipops_addr(cache) + (uint64_t)(n * cache->strides[0]) * es;
        s = hipops_gemm_mma_launch(ctx, "dk_conv3d", y->dtype, &p, ot);
    }
    *st = s;
    return 1;
}

/* The phase in p.h, p.w, p.N, p.K joins the pending launch (p.ph_*, p.nph),
 * kept in decreasing K: blocks run in z order, so the longest go first. */
static void hipops_phase_add(dkh_gemm_args *p) {
    int i = p->nph++;
    for (; i > 0 && p->ph_k[i - 1] < p->K; i--) {
        p->ph_h[i] = p->ph_h[i - 1];
        p->ph_w[i] = p->ph_w[i - 1];
        p->ph_n[i] = p->ph_n[i - 1];
        p->ph_k[i] = p->ph_k[i - 1];
    }
    p->ph_h[i] = p->h;
    p->ph_w[i] = p->w;
    p->ph_n[i] = p->N;
    p->ph_k[i] = p->K;
}

/* One launch of the pending phases: block z = batch index * nph + phase, the
 * grid as long as the largest phase (shorter ones' extra blocks return), the
 * kernel chosen for the longest reduction.  Empties the pending list. */
static dk_status hipops_phases_launch(dk_context *ctx, const char *op, dk_dtype dt, dkh_gemm_args *p, int64_t batch) {
    dk_status s;
    int i, n = p->nph;
    p->N = 0;
    for (i = 0; i < n; i++)
        if (p->ph_n[i] > p->N) p->N = p->ph_n[i];
    p->K = p->ph_k[0];
    if (n == 1) { /* a lone phase runs unmerged */
        p->h = p->ph_h[0];
        p->w = p->ph_w[0];
        p->nph = 0;
    }
    s = hipops_gemm_mma_launch(ctx, op, dt, p, batch * (n > 1 ? n : 1));
    p->nph = 0;
    return s;
}

/* The summed phase weights of an upsample conv (src/conv_up2.c), packed as the
 * fast kernels read them ([Cout][2 tmax_h][2 tmax_w][Cin/g]); cached per weight
 * and padding. */
static dk_status hipops_up2_weight(dk_context *ctx, const dk_tensor *w, const dk_conv2d_desc *d, hipops_packed **out) {
    dk_weight_key key;
    hipops_packed *pk;
    void *host;
    dk_status st;
    dk__up2_weight_key(&key, w, d);
    *out = (hipops_packed *)dk__weight_find(ctx, &key);
    if (*out) return DK_OK;
    pk = (hipops_packed *)calloc(1, sizeof *pk);
    if (!pk) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "dk_conv2d (hip): out of host memory");
    pk->buf.size = dk__up2_weight_layout(w, d, hipops_pack_order, pk->s) * dk_dtype_size(w->dtype);
    host = dk__up2_weights_host(ctx, w, d, pk->s, pk->buf.size, &st);
    if (host) {
        st = ctx->ops->buffer_create(ctx, &pk->buf);
        if (st != DK_OK) {
            free(host);
            free(pk);
            return st;
        }
        st = ctx->ops->buffer_upload(ctx, &pk->buf, 0, host, pk->buf.size);
    }
    free(host);
    if (st != DK_OK) {
        if (pk->buf.impl) ctx->ops->buffer_destroy(ctx, &pk->buf);
        free(pk);
        return st;
    }
    st = dk__weight_insert(ctx, &key, pk, pk->buf.size, hipops_packed_free);
    if (st != DK_OK) return st; /* the cache freed pk */
    *out = pk;
    return DK_OK;
}

/* Output rows of parity a read input rows i + off0[a] + t with the summed kernel
 * rows a * tmax + t: four phases of one launch, no upsampled coordinates. */
static dk_status hipops_conv2d_up2(dk_context *ctx, const dk_conv2d_desc *d, const dk_tensor *x, const dk_tensor *w,
                                   dkh_gemm_args *p, const dk_tensor *y) {
    dk_up2_axis ah, aw;
    hipops_packed *pk;
    dk_status st;
    int a, b;
    dk__up2_axis(w->shape[2], d->pad_h, &ah);
    dk__up2_axis(w->shape[3], d->pad_w, &aw);
    st = hipops_up2_weight(ctx, w, d, &pk);
    if (st != DK_OK) return st;
    p->a = dk__hip_ptr(&pk->buf);
    p->a_s[0] = pk->s[0];
    p->a_s[1] = 1;
    p->a_s[2] = pk->s[2];
    p->a_s[3] = pk->s[3];
    p->a_zs = 0;
    p->a_gs = p->M * p->a_s[0];
    p->ups = 1;
    p->nph = 0;
    for (a = 0; a < 2; a++)
        for (b = 0; b < 2; b++) {
            dkh_axis *h = &p->h, *v = &p->w;
            h->out_count = (y->shape[2] - a + 1) / 2;
            v->out_count = (y->shape[3] - b + 1) / 2;
            if (h->out_count <= 0 || v->out_count <= 0) continue;
            h->out_start = a; h->out_step = 2; h->in_step = 1; h->off0 = ah.off0[a]; h->off_step = 1;
            h->taps = ah.taps[a]; h->k0 = a * ah.tmax; h->k_step = 1; h->in_size = x->shape[2];
            v->out_start = b; v->out_step = 2; v->in_step = 1; v->off0 = aw.off0[b]; v->off_step = 1;
            v->taps = aw.taps[b]; v->k0 = b * aw.tmax; v->k_step = 1; v->in_size = x->shape[3];
            p->N = h->out_count * v->out_count;
            p->K = p->cin_g * h->taps * v->taps;
            hipops_phase_add(p);
        }
    return hipops_phases_launch(ctx, "dk_conv2d", y->dtype, p, x->shape[0] * d->groups);
}

/* Stride-phase decomposition: stride_h * stride_w dense GEMMs, no zero insertion;
 * on the fast kernels up to DKH_PHASES of them per launch. */
dk_status dk__hip_conv_transpose2d(dk_context *ctx, const dk_conv_transpose2d_desc *d, const dk_tensor *x,
                                   const dk_tensor *w, const dk_tensor *bias, const dk_tensor *residual,
                                   const dk_tensor *y) {
    dkh_gemm_args p;
    int64_t rh, rw;
    int fast, narrow;
    hipops_conv_common(&p, x, w, bias, residual, y, d->groups, d->activation, d->post_activation,
                       d->output_scale, d->residual_scale);
    p.transposed = 1;
    p.cin_g = w->shape[0] / d->groups;
    p.M = w->shape[1];
    fast = hipops_fast_ok(ctx, x, p.cin_g, 1, y->shape[2] * y->shape[3]);
    /* taps of the largest phase bounded by those of the kernel */
    narrow = hipops_narrow_ok(ctx, x, p.M, p.cin_g, w->shape[2] * w->shape[3], 1, y->shape[2] * y->shape[3], fast);
    {
        hipops_stage sg;
        dk_status s;
        if (hipops_stage_in(ctx, x, residual, y, p.cin_g, 1, y->shape[2] * y->shape[3], narrow, 0, &sg, &s)) {
            if (s == DK_OK)
                s = dk__hip_conv_transpose2d(ctx, d, &sg.t[0], w, bias, residual ? &sg.t[2] : NULL, &sg.t[1]);
            return hipops_stage_out(ctx, &sg, y, s);
        }
    }
    fast = fast && !narrow;
    if (fast) {
        dk_status s = hipops_use_packed(ctx, DK_WEIGHT_CONV_TRANSPOSE2D, w, 0, &p);
        if (s != DK_OK) return s;
    }
    for (rh = 0; rh < d->stride_h; rh++)
        for (rw = 0; rw < d->stride_w; rw++) {
            dk_status s;
            hipops_transposed_axis(&p.h, rh, d->stride_h, d->pad_h, d->dilation_h, w->shape[2], x->shape[2], y->shape[2]);
            hipops_transposed_axis(&p.w, rw, d->stride_w, d->pad_w, d->dilation_w, w->shape[3], x->shape[3], y->shape[3]);
            p.N = p.h.out_count * p.w.out_count;
            p.K = p.cin_g * p.h.taps * p.w.taps; /* 0: the phase gets the epilogue of a zero sum */
            if (fast && x->shape[0] * d->groups * DKH_PHASES <= 65535) {
                /* phases gathered into launches of up to DKH_PHASES */
                const int last = rh == d->stride_h - 1 && rw == d->stride_w - 1;
                hipops_phase_add(&p);
                if (p.nph < DKH_PHASES && !last) continue;
                s = hipops_phases_launch(ctx, "dk_conv_transpose2d", y->dtype, &p, x->shape[0] * d->groups);
                if (s != DK_OK) return s;
                continue;
            }
            if (narrow) {
                s = hipops_narrow_launch(ctx, "dk_conv_transpose2d", x, &p, x->shape[0] * d->groups);
                if (s != DK_OK) return s;
                continue;
            }
            s = (fast ? hipops_gemm_mma_launch : hipops_gemm_launch)(ctx, "dk_conv_transpose2d", y->dtype, &p,
                                                                  x->shape[0] * d->groups);
            if (s != DK_OK) return s;
        }
    return DK_OK;
}

/* A product with one weight for the whole batch (b 2-D, any strides: the conv
 * prepacks it) and enough rows runs as a 1x1 conv over a 1 x M image, so that
 * the fast kernel takes it when a is K-contiguous f16/bf16, for any layout of b
 * (the generic kernel is an order of magnitude slower on these shapes). */
static int hipops_matmul_as_conv(dk_context *ctx, const dk_matmul_desc *d, const dk_tensor *a, const dk_tensor *b,
                                 const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y, dk_status *st) {
    dk__matmul_conv c;
    if (b->ndim != 2 || a->shape[a->ndim - 2] < 128) return 0;
    dk__matmul_as_conv(d, a, b, residual, y, &c);
    if (!hipops_fast_ok(ctx, &c.x, c.x.shape[1], 1, c.x.shape[3])) return 0;
    *st = dk__hip_conv2d(ctx, &c.desc, &c.x, &c.w, bias, residual ? &c.r : NULL, &c.y);
    return 1;
}

dk_status dk__hip_matmul(dk_context *ctx, const dk_matmul_desc *d, const dk_tensor *a, const dk_tensor *b,
                         const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y) {
    dkh_gemm_args p;
    int ya = y->ndim - 2;
    dk_status st;
    if (hipops_matmul_as_conv(ctx, d, a, b, bias, residual, y, &st)) return st;
    memset(&p, 0, sizeof p);
    p.mode = DKH_GEMM_MATMUL;
    p.a = hipops_addr(a);
    p.b = hipops_addr(b);
    p.y = hipops_addr(y);
    p.M = y->shape[ya];
    p.N = y->shape[ya + 1];
    p.K = a->shape[a->ndim - 1];
    p.a_s[0] = a->ndim == 3 ? a->strides[0] : 0;
    p.a_s[1] = a->strides[a->ndim - 2];
    p.a_s[2] = a->strides[a->ndim - 1];
    p.b_s[0] = b->ndim == 3 ? b->strides[0] : 0;
    p.b_s[1] = b->strides[b->ndim - 2];
    p.b_s[2] = b->strides[b->ndim - 1];
    p.y_s[0] = y->ndim == 3 ? y->strides[0] : 0;
    p.y_s[1] = y->strides[ya];
    p.y_s[2] = y->strides[ya + 1];
    if (bias) {
        p.bias = hipops_addr(bias);
        p.bias_s = bias->strides[0];
        p.bias_dt = (int)bias->dtype;
        p.has_bias = 1;
    }
    if (residual) {
        int ra = residual->ndim - 2;
        p.res = hipops_addr(residual);
        p.r_s[0] = residual->ndim == 3 ? residual->strides[0] : 0;
        p.r_s[1] = residual->strides[ra];
        p.r_s[2] = residual->strides[ra + 1];
        p.has_res = 1;
    }
    p.act = (int)d->activation;
    p.post_act = (int)d->post_activation;
    p.out_scale = d->output_scale;
    p.res_scale = d->residual_scale;
    p.groups = 1;
    p.ups = 1;
    return hipops_gemm_launch(ctx, "dk_matmul", y->dtype, &p, y->ndim == 3 ? y->shape[0] : 1);
}
