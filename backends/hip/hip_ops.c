/* HIP backend ops: each fills a kernel argument block (hip_kargs.h) from the
 * validated tensors and launches on the context's stream. */
#include "hip_internal.h"

#include <math.h>
#include <stdlib.h>

static uint64_t hipops_addr(const dk_tensor *t) { return dk__hip_ptr(t->buffer) + t->offset; }

static uint64_t hipops_blocks(int64_t n, int64_t per) { return (uint64_t)((n + per - 1) / per); }

/* Shape and strides of t as 4-D, leading dims padded with size 1 / stride 0. */
static void hipops_pad4(const dk_tensor *t, int64_t shape[4], int64_t strides[4]) {
    int i, lead = 4 - t->ndim;
    for (i = 0; i < 4; i++) {
        shape[i] = i < lead ? 1 : t->shape[i - lead];
        strides[i] = i < lead ? 0 : t->strides[i - lead];
    }
}

/* ------------------------------------------------------------ conv family */

/* Taps of transposed-conv phase r along one axis: output o = r + i*stride gets
 * input i + (r + pad - k*dilation)/stride for the k where that division is exact;
 * those k are k0, k0 + step, ... (step = stride / gcd(stride, dilation)). */
static void hipops_transposed_axis(dkh_axis *a, int64_t r, int64_t stride, int64_t pad, int64_t dilation,
                                   int64_t ksize, int64_t in_size, int64_t out_size) {
    int64_t g = stride, d = dilation, step, kk;
    while (d) {
        int64_t t = g % d;
        g = d;
        d = t;
    }
    step = stride / g;
    memset(a, 0, sizeof *a);
    a->out_start = r;
    a->out_step = stride;
    a->out_count = r < out_size ? (out_size - r + stride - 1) / stride : 0;
    a->in_step = 1;
    a->in_size = in_size;
    a->k_step = step;
    a->off_step = -(step * dilation) / stride;
    for (kk = 0; kk < step && kk < ksize; kk++) {
        int64_t num = r + pad - kk * dilation;
        if (num % stride == 0) {
            a->k0 = kk;
            a->taps = (ksize - kk + step - 1) / step;
            a->off0 = num / stride;
            break;
        }
    }
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

/* Tensor maps of the TMA kernels (dk_gemm_wgmma.hip): x as (C, W, H, images)
 * with boxes of 64 channels x p->tma_box pixels of one row (the largest of 64,
 * 32, 16 that divides every output row), the packed weight as (row, Cout) with
 * boxes of 64 x 128; both 128-byte swizzled, zeros outside.  0 (use the
 * cp.async kernels) where the problem does not fit: groups, fused upsample,
 * batched weights, steps along w, output rows not a multiple of 16 long, or
 * strides the driver refuses.  Boxes of 8 pixels measured slower than cp.async
 * (docs/conv.md, "HIP thresholds").  DIFKERN_HIP_TMA=0 turns it off. */
static int hipops_tmaps(dk_context *ctx, dkh_gemm_args *p, int64_t batch, dkh_tmaps *t) {
    dk_hip_api *api = &dk__hip_state(ctx)->api;
    int i, n = p->nph > 0 ? p->nph : 1, bw;
    uint64_t dims[4], strides[3];
    uint32_t box[4] = {64, 64, 1, 1}, one[4] = {1, 1, 1, 1};
    if (!ctx->knobs.hip_tma || !api->cu_tensor_map_encode_tiled) return 0;
    if (p->groups != 1 || p->ups != 1 || p->a_zs != 0 || p->a % 16 != 0 || p->b % 16 != 0) return 0;
    for (bw = 64; bw >= 16; bw /= 2) {
        for (i = 0; i < n; i++) {
            const dkh_axis *w = p->nph > 0 ? &p->ph_w[i] : &p->w;
            if (w->in_step != 1 || w->out_count % bw != 0) break;
        }
        if (i == n) break;
    }
    if (bw < 16) return 0;
    p->tma_box = bw;
    box[1] = (uint32_t)bw;
    dims[0] = (uint64_t)p->cin_g;
    dims[1] = (uint64_t)p->w.in_size;
    dims[2] = (uint64_t)p->h.in_size;
    dims[3] = (uint64_t)(batch / n);
    /* a dimension of extent 1 gets the dense stride (its own is never used) */
    strides[0] = (uint64_t)(dims[1] > 1 ? p->b_s[3] : p->cin_g) * 2;
    strides[1] = dims[2] > 1 ? (uint64_t)p->b_s[2] * 2 : strides[0] * dims[1];
    strides[2] = dims[3] > 1 ? (uint64_t)p->b_s[0] * 2 : strides[1] * dims[2];
    for (i = 0; i < 3; i++)
        if (strides[i] % 16 != 0) return 0;
    /* UINT16 elements (a copy: f16 and bf16 alike), no interleave, 128-byte
     * swizzle, 128-byte L2 promotion, zero fill */
    if (api->cu_tensor_map_encode_tiled(t->x, 1, 4, (void *)(uintptr_t)p->b, dims, strides, box, one, 0, 3, 2, 0))
        return 0;
    dims[0] = (uint64_t)p->a_s[0];
    dims[1] = (uint64_t)p->M;
    strides[0] = (uint64_t)p->a_s[0] * 2;
    box[1] = DKH_GEMMF_BN;
    if (strides[0] % 16 != 0) return 0;
    return api->cu_tensor_map_encode_tiled(t->w, 1, 2, (void *)(uintptr_t)p->a, dims, strides, box, one, 0, 3, 2, 0) == 0;
}

/* The fast kernel (dk_gemm_fast.hip): rows = pixels, columns = output channels. */
static dk_status hipops_gemmf_launch(dk_context *ctx, const char *op, dk_dtype dt, dkh_gemm_args *p, int64_t batch) {
    dk_hip_state *st = dk__hip_state(ctx);
    uint64_t pix = hipops_blocks(p->N, DKH_GEMMF_BM), ch = hipops_blocks(p->M, DKH_GEMMF_BN);
    /* channel tiles on x (fastest) where the pixel tiles fit grid y */
    void *f4 = st->k.gemmf4[dt];
    /* The 4-warp variant where it wins: K >= 2048 (deep reductions keep its
     * fewer warps busy); below, the 8-warp kernel (docs/conv.md, "HIP
     * thresholds").  DIFKERN_HIP_GEMMF4=0 / 1: never / always (A/B timing, tests). */
    const int64_t force4 = ctx->knobs.hip_gemmf4, forcew = ctx->knobs.hip_wgmma; /* -1: by shape */
    int use4 = f4 && (force4 >= 0 ? force4 == 1 : p->K >= 2048);
    const int wgmma = p->cin_g % DKH_GEMMW_BK == 0 && forcew != 0;
    p->tiles_xy = pix <= 65535u;
    /* Hopper: wgmma where the slices of 64 channels fit the groups.  With TMA
     * loads (hipops_tmaps) four warpgroups (256 pixels) on every measured
     * shape (H100, f16 3x3, ms: 512->512 @512 2.56 -> 2.23, 128->128 @1024 0.868
     * -> 0.834); with cp.async four where K >= 2048 (512->512 @512 2.82 -> 2.69,
     * 256->128 @1024 1.72 -> 1.62; 128->128 @1024 1.03 vs 1.05).
     * DIFKERN_HIP_WGMMA=0 / 2 / 4: off / two / four warpgroups (A/B timing, tests). */
    if (wgmma && st->k.gemmw[dt]) {
        dkh_tmaps t;
        const int tma = st->k.gemmwt[dt] && st->k.gemmwt4[dt] && hipops_tmaps(ctx, p, batch, &t);
        const int four = st->k.gemmw4[dt] && (forcew > 0 ? forcew == 4 : tma || p->K >= 2048);
        const uint64_t bm = four ? DKH_GEMMW4_BM : DKH_GEMMF_BM, pixw = hipops_blocks(p->N, bm);
        const unsigned smem = four ? DKH_GEMMW4_SMEM : DKH_GEMMW_SMEM;
        p->tiles_xy = pixw <= 65535u;
        if (tma) {
            return dk__hip_launch_block2(ctx, op, four ? st->k.gemmwt4[dt] : st->k.gemmwt[dt], p->tiles_xy ? ch : pixw,
                                         p->tiles_xy ? pixw : ch, (uint64_t)batch,
                                         four ? DKH_GEMMWT4_THREADS : DKH_GEMMWT_THREADS, smem, p, &t);
        }
        return dk__hip_launch_block(ctx, op, four ? st->k.gemmw4[dt] : st->k.gemmw[dt], p->tiles_xy ? ch : pixw,
                                    p->tiles_xy ? pixw : ch, (uint64_t)batch,
                                    four ? DKH_GEMMW4_THREADS : DKH_THREADS, smem, p);
    }
    if (use4)
        return dk__hip_launch_block(ctx, op, f4, p->tiles_xy ? ch : pix, p->tiles_xy ? pix : ch, (uint64_t)batch,
                                    DKH_GEMMF4_THREADS, 0, p);
    return dk__hip_launch(ctx, op, st->k.gemmf[dt], p->tiles_xy ? ch : pix, p->tiles_xy ? pix : ch, (uint64_t)batch, p);
}

/* Whether a layout-changing convert (e->tpos set) moves 16-byte vectors: both
 * unit-stride dims (a's k, y's 3) and every other stride in whole vectors of
 * the operand's dtype, 32-bit tile indices.  Returns 1 for one 16-bit dtype
 * (dkk_transpose16, raw bits), 2 for any other pair (dkk_transpose_cvt, through
 * floats), 0 for neither.  DIFKERN_HIP_TRANSPOSE16=0 keeps the element tile. */
static int hipops_transpose16(const dkh_elt_args *e) {
    const int k = e->tpos - 1;
    const int64_t va = e->dt_a == DK_F32 ? 4 : 8, vy = e->dt_y == DK_F32 ? 4 : 8;
    int i;
    if (e->op != DKH_ELT_CONVERT || e->a % 16 != 0 || e->y % 16 != 0) return 0;
    if (e->y_s[3] != 1 || e->shape[3] % vy != 0 || e->shape[k] % va != 0) return 0;
    for (i = 0; i < 4; i++) {
        if (e->shape[i] >= ((int64_t)1 << 31)) return 0;
        if (i != k && e->shape[i] > 1 && e->a_s[i] % va != 0) return 0;
        if (i != 3 && e->shape[i] > 1 && e->y_s[i] % vy != 0) return 0;
    }
    if ((e->shape[3] + 63) / 64 * ((e->shape[k] + 63) / 64) * e->shape[k == 0 ? 1 : 0] * e->shape[k == 2 ? 1 : 2] >=
        ((int64_t)1 << 31))
        return 0;
    return e->dt_a == e->dt_y && e->dt_a != DK_F32 ? 1 : 2;
}

static dk_status hipops_elementwise(dk_context *ctx, const char *op, int kind, dk_activation act, float alpha,
                                    const dk_tensor *a, float beta, const dk_tensor *b, float oscale,
                                    const dk_tensor *y);

/* Whether the fast kernel can read x: f16/bf16, channels-last (channel stride 1),
 * 16-byte aligned pixels (every stride of a dimension > 1 a multiple of 8),
 * channels of a group a multiple of the reduction slice, coordinates in int.
 * DIFKERN_HIP_FAST=0 turns the fast path off (A/B timing). */
static int hipops_fast_ok(dk_context *ctx, const dk_tensor *x, int64_t cin_g, int64_t ups, int64_t pixels) {
    int i;
    if (!ctx->knobs.hip_fast) return 0;
    if ((x->dtype != DK_F16 && x->dtype != DK_BF16) || !dk__hip_state(ctx)->k.gemmf[x->dtype]) return 0;
    if (cin_g % DKH_GEMMF_BK != 0 || x->strides[1] != 1 || hipops_addr(x) % 16 != 0) return 0;
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
    int vec = p->cin_g % vw == 0 && x->strides[1] == 1 && hipops_addr(x) % 16 == 0, i;
    for (i = 0; i < 4; i++)
        if (i != 1 && x->shape[i] > 1 && x->strides[i] % vw != 0) vec = 0;
    q.c = *p;
    tile = vec ? DKH_THREADS / 16 * 4 : DKH_THREADS; /* dkn_conv: 16 lanes per pixel and 4 pixels per thread, or 1 and 1 */
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

/* Prepacked conv weights for the fast kernel: Cin fastest, then KW, KH, Cout
 * (conv2d w [Cout, Cin/g, KH, KW] -> [Cout][KH][KW][Cin/g]; conv_transpose2d
 * w [Cin, Cout/g, KH, KW] -> [Cout/g][KH][KW][Cin]).  A permutation of w that does
 * not depend on groups, made once on the device by a strided copy and kept in
 * the context's weight cache (keyed by the weight's buffer, generation, view).
 * A conv2d on zero-padded input channels (hipops_cinpad) packs with cpad
 * channels, the ones past w's zero, as a separate cache entry. */
typedef struct hipops_packed {
    dk_buffer buf;
    int64_t s[4]; /* element strides of w's own dimensions in the packed copy */
} hipops_packed;

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
    int64_t cin = cpad ? cpad : tr ? w->shape[0] : w->shape[1], kh = w->shape[2], kw = w->shape[3];
    dk_status st;
    dk__weight_key(&key, w, (int32_t)use, (int32_t)(1 | cpad << 8));
    pk = (hipops_packed *)dk__weight_find(ctx, &key);
    if (pk) {
        *out = pk;
        return DK_OK;
    }
    pk = (hipops_packed *)calloc(1, sizeof *pk);
    if (!pk) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "dk_prepare_weight (hip): out of host memory");
    pk->buf.size = (uint64_t)(dk_tensor_numel(w) / (tr ? w->shape[0] : w->shape[1]) * cin) * dk_dtype_size(w->dtype);
    st = ctx->ops->buffer_create(ctx, &pk->buf);
    if (st != DK_OK) {
        free(pk);
        return st;
    }
    /* the padded channels must read as zeros: x's padding is zero too, but
     * uninitialised memory may hold NaN, and 0 * NaN is NaN */
    if (cpad) st = ctx->ops->buffer_fill(ctx, &pk->buf, 0, pk->buf.size, 0);
    if (st != DK_OK) {
        hipops_packed_free(ctx, pk);
        return st;
    }
    pk->s[tr ? 0 : 1] = 1;            /* cin */
    pk->s[tr ? 1 : 0] = kh * kw * cin; /* cout */
    pk->s[2] = kw * cin;
    pk->s[3] = cin;
    dst = *w;
    dst.buffer = &pk->buf;
    dst.offset = 0;
    for (i = 0; i < 4; i++) dst.strides[i] = pk->s[i];
    st = hipops_elementwise(ctx, "dk_prepare_weight", DKH_ELT_CONVERT, DK_ACT_NONE, 1.0f, w, 0.0f, NULL, 1.0f, &dst);
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
    if ((use == DK_WEIGHT_CONV2D ? w->shape[1] : w->shape[0]) % DKH_GEMMF_BK != 0) return DK_OK;
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
    return ctx->knobs.hip_up2 && d->upsample == 2 && d->stride_h == 1 && d->stride_w == 1 &&
           d->dilation_h == 1 && d->dilation_w == 1 && d->pad_h < 4096 && d->pad_w < 4096 &&
           x->shape[0] * d->groups * DKH_PHASES <= 65535;
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
static int hipops_cl16(const dk_tensor *t) {
    const int64_t v = 16 / (int64_t)dk_dtype_size(t->dtype);
    int i;
    if (t->ndim != 4 || t->strides[1] != 1 || hipops_addr(t) % 16 != 0) return 0;
    for (i = 0; i < 4; i++)
        if (i != 1 && t->shape[i] > 1 && t->strides[i] % v != 0) return 0;
    return 1;
}

/* Returns 0 (nothing done) where no operand needs a copy, the copies would not
 * make the conv fast-eligible, or their scratch cannot be had; else 1 with *st
 * the status of the copies in and sg's tensors to run the conv on.  narrow: the
 * conv takes the narrow kernel, which loads 16-byte vectors of input channels
 * from a channels-last x (any dtype) and stores y by element: only x is copied
 * (reading NCHW input by element was several times slower than the copy).
 * cpad > 0: x is copied, whatever its layout, to channels-last scratch of cpad
 * channels, those past its own zero (hipops_cinpad); cin_g is then cpad. */
static int hipops_stage_in(dk_context *ctx, const dk_tensor *x, const dk_tensor *residual, const dk_tensor *y,
                           int64_t cin_g, int64_t ups, int64_t pixels, int narrow, int64_t cpad, hipops_stage *sg,
                           dk_status *st) {
    const dk_tensor *src[3];
    uint64_t off[3], total = 0, ptr;
    int i, any = 0;
    src[0] = x;
    src[1] = y;
    src[2] = residual;
    if ((!ctx->knobs.hip_stage_nhwc && !cpad) || x->ndim != 4 || y->ndim != 4) return 0;
    if ((!narrow && x->dtype != DK_F16 && x->dtype != DK_BF16) || y->dtype != x->dtype) return 0;
    if (residual && (residual->ndim != 4 || residual->dtype != x->dtype)) return 0;
    memset(sg, 0, sizeof *sg);
    sg->buf.wrapped = 1;
    sg->buf.impl = (void *)(uintptr_t)256u; /* an aligned stand-in for the eligibility check */
    for (i = 0; i < 3; i++) {
        const dk_tensor *t = src[i];
        off[i] = total;
        if (!t) continue;
        sg->t[i] = *t;
        if (i == 0 && cpad) {
            sg->t[0] = dk_tensor_nhwc(&sg->buf, 0, t->dtype, t->shape[0], cpad, t->shape[2], t->shape[3]);
        } else {
            if (hipops_cl16(t) || (narrow && i > 0) || !ctx->knobs.hip_stage_nhwc) continue;
            sg->t[i] = dk_tensor_nhwc(&sg->buf, off[i], t->dtype, t->shape[0], t->shape[1], t->shape[2], t->shape[3]);
            if (!hipops_cl16(&sg->t[i])) { /* channels not in whole vectors: a copy gains nothing */
                sg->t[i] = *t;
                continue;
            }
        }
        any = 1;
        sg->staged[i] = 1;
        total += ((uint64_t)dk_tensor_numel(&sg->t[i]) * dk_dtype_size(t->dtype) + 255u) & ~(uint64_t)255u;
    }
    if (!any) return 0;
    if (narrow ? cin_g % (16 / (int64_t)dk_dtype_size(x->dtype)) != 0 : !hipops_fast_ok(ctx, &sg->t[0], cin_g, ups, pixels))
        return 0;
    if (dk__hip_scratch(ctx, total, &ptr) != DK_OK) {
        dk__clear_error(ctx); /* the kernels read and write the operands where they are */
        return 0;
    }
    sg->buf.size = total;
    sg->buf.impl = (void *)(uintptr_t)ptr;
    *st = DK_OK;
    if (sg->staged[0] && cpad) {
        /* zeros over the whole copy (one memset; the real channels are then
         * written twice, cin/cpad of it), then x into its first channels */
        const uint64_t bytes = (uint64_t)dk_tensor_numel(&sg->t[0]) * dk_dtype_size(x->dtype);
        dk_tensor v = sg->t[0];
        v.shape[1] = x->shape[1];
        *st = ctx->ops->buffer_fill(ctx, &sg->buf, 0, bytes, 0);
        if (*st == DK_OK) *st = dk__hip_convert(ctx, x, &v);
    } else if (sg->staged[0]) {
        *st = dk__hip_convert(ctx, x, &sg->t[0]);
    }
    if (*st == DK_OK && sg->staged[2]) *st = dk__hip_convert(ctx, residual, &sg->t[2]);
    return 1;
}

/* After the conv on sg's tensors (status st): y copied out where it was staged. */
static dk_status hipops_stage_out(dk_context *ctx, hipops_stage *sg, const dk_tensor *y, dk_status st) {
    if (st != DK_OK || !sg->staged[1]) return st;
    return dk__hip_convert(ctx, &sg->t[1], y);
}

/* Input channels zero-padded to a multiple of the fast kernel's reduction slice
 * (x copied by hipops_stage_in, w packed with the same channels) for a conv
 * that would otherwise take the generic kernel, as the first conv of an image
 * encoder (3 -> 128).  The padded channel count, or 0 where it does not pay.
 * The rule: the padded reduction (cpad * taps) at most 16x the real one, at
 * least 16 output channels and 1024 output pixels per image.  The generic
 * kernel does scalar FMAs with little operand reuse, far more than 16x below
 * the matrix-instruction rate of the fast kernels, so even 16x the FLOPs on
 * them cost less; the copy moves cin + 2 cpad elements per input pixel (read,
 * zero fill, write), small against the conv's 2 * Cout * cin * taps FLOPs per
 * pixel from 16 output channels up (fewer take the narrow kernel); on small
 * images the two extra launches (fill, copy) would weigh more than the work
 * they save.  groups 1 and no fused upsample only: the grouped and
 * phase-weight packs keep w's channels.  DIFKERN_HIP_CINPAD=0 turns it off
 * (A/B timing). */
static int64_t hipops_cinpad(dk_context *ctx, const dk_conv2d_desc *d, const dk_tensor *x, const dk_tensor *w,
                             const dk_tensor *y, int64_t pixels) {
    const int64_t cin = w->shape[1], cpad = (cin + DKH_GEMMF_BK - 1) / DKH_GEMMF_BK * DKH_GEMMF_BK;
    if (!ctx->knobs.hip_cinpad || !ctx->knobs.hip_fast || d->groups != 1 || d->upsample != 1) return 0;
    if ((x->dtype != DK_F16 && x->dtype != DK_BF16) || y->dtype != x->dtype || x->ndim != 4) return 0;
    if (cin % DKH_GEMMF_BK == 0 || cin >= (1 << 16) || cpad > 16 * cin) return 0;
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
    p.h.out_count = y->shape[2]; p.h.out_step = 1; p.h.in_step = d->stride_h; p.h.off0 = -d->pad_h;
    p.h.off_step = d->dilation_h; p.h.taps = w->shape[2]; p.h.k_step = 1; p.h.in_size = x->shape[2] * d->upsample;
    p.w.out_count = y->shape[3]; p.w.out_step = 1; p.w.in_step = d->stride_w; p.w.off0 = -d->pad_w;
    p.w.off_step = d->dilation_w; p.w.taps = w->shape[3]; p.w.k_step = 1; p.w.in_size = x->shape[3] * d->upsample;
    p.N = p.h.out_count * p.w.out_count;
    /* on the padded copy the fast kernel reduces over all cpad channels; the
     * generic one (should the fast not take it) reads x's first cin_g */
    fast = hipops_fast_ok(ctx, x, cpad ? cpad : p.cin_g, d->upsample, p.N);
    if (fast && cpad) p.cin_g = cpad;
    p.K = p.cin_g * p.h.taps * p.w.taps;
    narrow = !cpad && hipops_narrow_ok(ctx, x, p.M, p.cin_g, p.h.taps * p.w.taps, d->upsample, p.N, fast);
    if (!cpad) {
        hipops_stage sg;
        dk_status s;
        const int64_t pad = fast || narrow ? 0 : hipops_cinpad(ctx, d, x, w, y, p.N);
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
        return hipops_gemmf_launch(ctx, "dk_conv2d", y->dtype, &p, x->shape[0] * d->groups);
    }
    return hipops_gemm_launch(ctx, "dk_conv2d", y->dtype, &p, x->shape[0] * d->groups);
}

dk_status dk__hip_conv2d(dk_context *ctx, const dk_conv2d_desc *d, const dk_tensor *x, const dk_tensor *w,
                         const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y) {
    return hipops_conv2d(ctx, d, x, w, bias, residual, y, 0);
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
    s = hipops_gemmf_launch(ctx, op, dt, p, batch * (n > 1 ? n : 1));
    p->nph = 0;
    return s;
}

/* The summed phase weights of an upsample conv (dk__up2_weights), packed as the
 * fast kernels read them ([Cout][2 tmax_h][2 tmax_w][Cin/g]); cached per weight
 * and padding. */
static dk_status hipops_up2_weight(dk_context *ctx, const dk_tensor *w, const dk_conv2d_desc *d,
                                   const dk_up2_axis *ah, const dk_up2_axis *aw, hipops_packed **out) {
    dk_weight_key key;
    hipops_packed *pk;
    const int64_t cin = w->shape[1], vh = 2 * ah->tmax, vw = 2 * aw->tmax;
    void *host;
    dk_status st;
    dk__weight_key(&key, w, (int32_t)DK_WEIGHT_CONV2D, (int32_t)(2 | (d->pad_h << 8) | (d->pad_w << 20)));
    *out = (hipops_packed *)dk__weight_find(ctx, &key);
    if (*out) return DK_OK;
    pk = (hipops_packed *)calloc(1, sizeof *pk);
    if (!pk) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "dk_conv2d (hip): out of host memory");
    pk->s[1] = 1;
    pk->s[0] = vh * vw * cin;
    pk->s[2] = vw * cin;
    pk->s[3] = cin;
    pk->buf.size = (uint64_t)(w->shape[0] * pk->s[0]) * dk_dtype_size(w->dtype);
    host = malloc((size_t)pk->buf.size);
    if (!host) {
        free(pk);
        return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "dk_conv2d (hip): out of host memory");
    }
    st = dk__up2_weights(ctx, w, d->pad_h, d->pad_w, host, pk->s);
    if (st == DK_OK) {
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
    st = hipops_up2_weight(ctx, w, d, &ah, &aw, &pk);
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
            s = (fast ? hipops_gemmf_launch : hipops_gemm_launch)(ctx, "dk_conv_transpose2d", y->dtype, &p,
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

/* -------------------------------------------------------------- attention */

/* Dynamic shared memory of dkk_attnf_* for D == Dv == d on NVIDIA: the layout of
 * dkaf_cfg (dk_attention_fast.hip): Q tile, ring stages, P (16-bit elements with
 * rows padded by 8), then the row statistics (floats).  The kernel traps if the
 * size it gets is smaller than its own. */
unsigned dk__hip_attnf_smem(int64_t d) {
    const int64_t bq = DKH_ATTNF_BQ, bkv = DKH_ATTNF_BKV, sl = DKH_ATTNF_SLICE;
    int64_t kc = sl / bkv < d ? sl / bkv : d, vk = sl / d < bkv ? sl / d : bkv, stage;
    if (vk < 16) vk = 16;
    stage = bkv * (kc + 8) > vk * (d + 8) ? bkv * (kc + 8) : vk * (d + 8);
    return (unsigned)(2 * (bq * (d + 8) + DKH_ATTNF_ST * stage + bq * (bkv + 8)) + 4 * (2 * 8 * bq + bq));
}

/* Key splits for the fast kernel where its grid fills the multiprocessors
 * badly: the count s <= 8 (at least 128 keys each) that minimizes the time in
 * whole waves, ceil(blocks * s / SMs) / s (one block per SM assumed; ties go
 * to fewer splits), if that saves at least 10% over no split: the partials
 * cost scratch (s x Nq x Dv floats: at n 65536, d 512, five splits for a 2.5%
 * better wave count took 640 MB, the 2048x2048 VAE decode's largest buffer).
 * Measurements: docs/attention.md.  DIFKERN_HIP_ATTN_SPLIT=0 turns it off. */
static int hipops_attn_splits(dk_context *ctx, uint64_t blocks, int64_t nkv) {
    const dk_hip_state *st = dk__hip_state(ctx);
    const uint64_t sm = (uint64_t)st->sm_count;
    double best_cost;
    int s, best = 1;
    if (!ctx->knobs.hip_attn_split || st->sm_count <= 0 || blocks == 0) return 1;
    best_cost = (double)((blocks + sm - 1) / sm);
    for (s = 2; s <= 8 && s <= nkv / 128; s++) {
        double cost = (double)((blocks * (uint64_t)s + sm - 1) / sm) / s;
        if (cost < best_cost - 1e-9 && cost <= 0.9 * (double)((blocks + sm - 1) / sm)) {
            best_cost = cost;
            best = s;
        }
    }
    return best;
}

/* Split-KV ranges for splits > 1: whole 128-key granules (a multiple of every
 * kernel's BKV), at least one per split; returns the bytes of the partials
 * ([split][b][h][nq][Dv + 2] floats, merged by dkk_attn_combine_*). */
static uint64_t hipops_attn_split_plan(dkh_attn_args *p, int splits, uint64_t nqb, int64_t nb, int64_t nh) {
    const int64_t g = (p->nkv + 127) / 128, per = (g + splits - 1) / splits;
    p->splits = (int)((g + per - 1) / per);
    p->kv_chunk = per * 128;
    p->nqb = (int64_t)nqb;
    p->nb = nb;
    p->nh = nh;
    return (uint64_t)p->splits * (uint64_t)(nb * nh * p->nq * (p->dv + 2)) * 4u;
}

/* Whether q, k, v suit the matrix-core attention kernels' 16-byte row loads:
 * a contiguous last dimension, 16-byte aligned starts, every other stride of
 * a dimension > 1 a multiple of 8 elements, and Nq, Nkv below 2^31. */
static int hipops_attn_rows16(const dk_tensor *q, const dk_tensor *k, const dk_tensor *v) {
    const dk_tensor *t[3];
    int i, j;
    if (q->shape[2] >= ((int64_t)1 << 31) || k->shape[2] >= ((int64_t)1 << 31)) return 0;
    t[0] = q;
    t[1] = k;
    t[2] = v;
    for (i = 0; i < 3; i++) {
        if (t[i]->strides[3] != 1 || hipops_addr(t[i]) % 16 != 0) return 0;
        for (j = 0; j < 3; j++)
            if (t[i]->shape[j] > 1 && t[i]->strides[j] % 8 != 0) return 0;
    }
    return 1;
}

/* The small-head kernel's variant (dkk_attnr_*: 0 computes at D 64, 1 at 128)
 * for these tensors, or -1: f16/bf16, D and Dv multiples of 8 up to 128 (zero-
 * padded in the kernel), 16-byte aligned rows (hipops_attn_rows16).
 * DIFKERN_HIP_ATTN_ROWS=0 turns it off (A/B timing against dkk_attnf_* where
 * D == Dv is 64 or 128). */
static int hipops_attnr_variant(dk_context *ctx, const dk_tensor *q, const dk_tensor *k, const dk_tensor *v) {
    dk_hip_state *st = dk__hip_state(ctx);
    int64_t dm = q->shape[3] > v->shape[3] ? q->shape[3] : v->shape[3];
    int variant = dm <= 64 ? 0 : 1;
    if (!ctx->knobs.hip_attn_rows || (q->dtype != DK_F16 && q->dtype != DK_BF16)) return -1;
    if (q->shape[3] % 8 || v->shape[3] % 8 || dm > 128 || !st->k.attnr[q->dtype][variant]) return -1;
    return hipops_attn_rows16(q, k, v) ? variant : -1;
}

/* Dynamic shared memory of dkk_attnr_* on NVIDIA (dkar_cfg in
 * dk_attention_rows.hip): the Q tile of BQ rows, then ST stages of
 * K and V (rows padded by 8 elements). */
unsigned dk__hip_attnr_smem(int64_t d) {
    return (unsigned)(2 * (d + 8) * (DKH_ATTNR_BQ + DKH_ATTNR_ST * 2 * DKH_ATTNR_BKV(d)));
}

/* The fast kernel's variant for these tensors, or -1: f16/bf16, D == Dv in {64,
 * 128, 256, 512}, 16-byte aligned rows (hipops_attn_rows16).
 * DIFKERN_HIP_FAST_ATTN=0 (or DIFKERN_HIP_FAST=0) turns it off (A/B timing). */
static int hipops_attnf_variant(dk_context *ctx, const dk_tensor *q, const dk_tensor *k, const dk_tensor *v) {
    dk_hip_state *st = dk__hip_state(ctx);
    int variant;
    if (!ctx->knobs.hip_fast_attn || !ctx->knobs.hip_fast) return -1;
    if (q->dtype != DK_F16 && q->dtype != DK_BF16) return -1;
    if (q->shape[3] != v->shape[3]) return -1;
    for (variant = 0; variant < DK_HIP_ATTN_VARIANTS && q->shape[3] != (64 << variant); variant++) {
    }
    if (variant == DK_HIP_ATTN_VARIANTS || !st->k.attnf[q->dtype][variant]) return -1;
    return hipops_attn_rows16(q, k, v) ? variant : -1;
}

/* Tensor map of a 16-bit [b, h, n, d] view as (d, n, h, b), boxes of 64
 * columns x rows, 128-byte swizzled, zeros outside (dk_attention_wgmma_small.hip);
 * 0 where the driver refuses it.  A dimension of extent 1 gets the dense stride. */
static int hipops_attn_tmap(dk_hip_api *api, void *map, const dk_tensor *t, uint32_t rows) {
    uint64_t dims[4], strides[3];
    uint32_t box[4] = {64, 1, 1, 1}, one[4] = {1, 1, 1, 1};
    int i;
    box[1] = rows;
    for (i = 0; i < 4; i++) dims[i] = (uint64_t)t->shape[3 - i];
    for (i = 0; i < 3; i++) {
        strides[i] = dims[i + 1] > 1 ? (uint64_t)t->strides[2 - i] * 2u : (i ? strides[i - 1] * dims[i] : dims[0] * 2u);
        if ((dims[i + 1] > 1 && t->strides[2 - i] < 0) || strides[i] % 16 != 0 || strides[i] >= ((uint64_t)1 << 40))
            return 0;
    }
    return api->cu_tensor_map_encode_tiled(map, 1, 4, (void *)(uintptr_t)hipops_addr(t), dims, strides, box, one, 0, 3, 2,
                                           0) == 0;
}

/* Whether the Hopper wgmma attention kernels may run: batch * heads within one
 * grid dimension; DIFKERN_HIP_ATTN_WGMMA=0 turns them off (A/B, tests). */
static int hipops_attn_wgmma_on(const dk_context *ctx, const dk_tensor *q) {
    return ctx->knobs.hip_attn_wgmma && q->shape[0] * q->shape[1] <= 65535;
}

/* The Hopper wgmma attention kernels (dk_attention_wgmma*.hip, f16/bf16, D ==
 * Dv): V transposed into scratch ([b*h][Dv][keys rounded up to vt_round], the
 * rest zero) so that both operands of P V are K-major, then the kernel over
 * blocks of bq query rows, with split-KV where those blocks fill the
 * multiprocessors badly (partials after V^T in the scratch, then the merge).
 * tm (the small-head kernel's tensor maps; V^T's is added here) also limits
 * the split to what fills one wave: at D 64 the partials cost as much as the
 * blocks (docs/attention.md). */
static dk_status hipops_attn_wgmma(dk_context *ctx, dkh_attn_args *p, const dk_tensor *q, void *fn, int64_t bq,
                                   int64_t vt_round, unsigned threads, unsigned smem, dkh_attn_tmaps *tm) {
    dk_hip_state *st = dk__hip_state(ctx);
    const uint64_t nqb = hipops_blocks(p->nq, bq), bh = (uint64_t)(q->shape[0] * q->shape[1]);
    const uint64_t fill = st->sm_count > 0 ? (uint64_t)st->sm_count / (nqb * bh) : 1u;
    const int64_t vt_rows = (p->dv + 63) / 64 * 64; /* V^T's rows: Dv rounded up to 64, the rest zero */
    int splits = hipops_attn_splits(ctx, nqb * bh, p->nkv);
    uint64_t vt, vt_bytes, part_bytes = 0;
    dk_status s;
    p->nb = q->shape[0];
    p->nh = q->shape[1];
    if (tm && (uint64_t)splits > fill) splits = fill > 1 ? (int)fill : 1;
    p->vt_ld = (p->nkv + vt_round - 1) / vt_round * vt_round;
    vt_bytes = (bh * (uint64_t)vt_rows * (uint64_t)p->vt_ld * 2u + 255u) / 256u * 256u;
    if (splits > 1) part_bytes = hipops_attn_split_plan(p, splits, nqb, p->nb, p->nh);
    s = dk__hip_scratch(ctx, vt_bytes + part_bytes, &vt);
    if (s != DK_OK) return s;
    p->vt = vt;
    p->part = vt + vt_bytes;
    if (tm) {
        /* V^T as (keys, b*h*rows), boxes of 64 keys x rows */
        uint64_t dims[2], stride = (uint64_t)p->vt_ld * 2u;
        uint32_t box[2], one[2] = {1, 1};
        dims[0] = (uint64_t)p->vt_ld;
        dims[1] = bh * (uint64_t)vt_rows;
        box[0] = 64;
        box[1] = (uint32_t)vt_rows;
        if (st->api.cu_tensor_map_encode_tiled(tm->vt, 1, 2, (void *)(uintptr_t)vt, dims, &stride, box, one, 0, 3, 2, 0))
            return dk__fail(ctx, DK_ERR_UNSUPPORTED, "dk_attention (hip): the driver refused the V^T tensor map");
    }
    s = dk__hip_launch_block(ctx, "dk_attention", st->k.attn_vt, (uint64_t)p->vt_ld / 32u, (uint64_t)vt_rows / 32u, bh, 256u,
                             0u, p);
    if (s == DK_OK)
        s = dk__hip_launch_block2(ctx, "dk_attention", fn, nqb * (uint64_t)(p->splits > 1 ? p->splits : 1),
                                  (uint64_t)p->nh, (uint64_t)p->nb, threads, smem, p, tm);
    if (s != DK_OK || p->splits <= 1) return s;
    return dk__hip_launch(ctx, "dk_attention", st->k.attn_combine[q->dtype], hipops_blocks(p->nq * p->dv, DKH_THREADS),
                          (uint64_t)p->nh, (uint64_t)p->nb, p);
}

dk_status dk__hip_attention(dk_context *ctx, const dk_attention_desc *d, const dk_tensor *q, const dk_tensor *k,
                            const dk_tensor *v, const dk_tensor *out) {
    dk_hip_state *st = dk__hip_state(ctx);
    dkh_attn_args p;
    int i, variant = 0;
    memset(&p, 0, sizeof p);
    p.q = hipops_addr(q);
    p.k = hipops_addr(k);
    p.v = hipops_addr(v);
    p.o = hipops_addr(out);
    for (i = 0; i < 4; i++) {
        p.q_s[i] = q->strides[i];
        p.k_s[i] = k->strides[i];
        p.v_s[i] = v->strides[i];
        p.o_s[i] = out->strides[i];
    }
    p.nq = q->shape[2];
    p.nkv = k->shape[2];
    p.d = q->shape[3];
    p.dv = v->shape[3];
    p.scale = d->scale != 0.0f ? d->scale : (float)(1.0 / sqrt((double)p.d));
    if (p.dv == p.d && p.d % 8 == 0 && p.d <= 128 && st->k.attns[q->dtype][p.d > 64] && hipops_attn_wgmma_on(ctx, q) &&
        hipops_attn_rows16(q, k, v)) {
        /* Hopper, D == Dv <= 128: the warp-specialized wgmma kernel (TMA loads), at D 64 or 128 */
        const int dp = p.d > 64 ? 128 : 64;
        dkh_attn_tmaps tm;
        if (hipops_attn_tmap(&st->api, tm.q, q, DKH_ATTNS_BQ) && hipops_attn_tmap(&st->api, tm.k, k, DKH_ATTNS_BKV(dp)))
            return hipops_attn_wgmma(ctx, &p, q, st->k.attns[q->dtype][p.d > 64], DKH_ATTNS_BQ, 128, DKH_ATTNS_THREADS,
                                     DKH_ATTNS_SMEM(dp), &tm);
    }
    variant = hipops_attnr_variant(ctx, q, k, v);
    if (variant >= 0) {
        /* D, Dv <= 128: whole query rows per wave */
        return dk__hip_launch_shared(ctx, "dk_attention", st->k.attnr[q->dtype][variant], hipops_blocks(p.nq, DKH_ATTNR_BQ),
                                     (uint64_t)q->shape[1], (uint64_t)q->shape[0],
                                     st->api.is_cuda ? dk__hip_attnr_smem(64 << variant) : 0u, &p);
    }
    variant = hipops_attnf_variant(ctx, q, k, v);
    if (variant == 3 && st->k.attnw[q->dtype] && hipops_attn_wgmma_on(ctx, q))
        return hipops_attn_wgmma(ctx, &p, q, st->k.attnw[q->dtype], 64, 64, DKH_ATTNW_THREADS, DKH_ATTNW_SMEM, NULL);
    if (variant >= 0) {
        const int64_t bq = st->api.is_cuda ? DKH_ATTNF_BQ : DKH_ATTNF_BQ_AMD;
        const unsigned smem = st->api.is_cuda ? dk__hip_attnf_smem(p.d) : 0u;
        const uint64_t nqb = hipops_blocks(p.nq, bq);
        int splits = hipops_attn_splits(ctx, nqb * (uint64_t)q->shape[1] * (uint64_t)q->shape[0], p.nkv);
        if (splits > 1) {
            /* split-KV: partials in scratch, then the merge kernel */
            uint64_t part;
            dk_status s = dk__hip_scratch(ctx, hipops_attn_split_plan(&p, splits, nqb, q->shape[0], q->shape[1]), &part);
            if (s != DK_OK) return s;
            p.part = part;
            s = dk__hip_launch_shared(ctx, "dk_attention", st->k.attnf[q->dtype][variant], nqb * (uint64_t)p.splits,
                                      (uint64_t)p.nh, (uint64_t)p.nb, smem, &p);
            if (s != DK_OK) return s;
            return dk__hip_launch(ctx, "dk_attention", st->k.attn_combine[q->dtype],
                                  hipops_blocks(p.nq * p.dv, DKH_THREADS), (uint64_t)p.nh, (uint64_t)p.nb, &p);
        }
        return dk__hip_launch_shared(ctx, "dk_attention", st->k.attnf[q->dtype][variant], nqb, (uint64_t)q->shape[1],
                                     (uint64_t)q->shape[0], smem, &p);
    }
    variant = 0;
    while (variant < DK_HIP_ATTN_VARIANTS - 1 && p.dv > (64 << variant)) variant++;
    if (p.dv > (64 << variant))
        return dk__fail(ctx, DK_ERR_UNSUPPORTED, "dk_attention (hip): Dv (=%lld) must be <= 512", (long long)p.dv);
    return dk__hip_launch(ctx, "dk_attention", st->k.attention[q->dtype][variant], hipops_blocks(p.nq, DKH_ATTN_BQ),
                          (uint64_t)q->shape[1], (uint64_t)q->shape[0], &p);
}

/* ------------------------------------------------------------------ norms */

/* Group-norm vector mode (dkh_gn_args): 1 dense NCHW, 2 dense NHWC, else 0, for
 * a tensor at addr with 4-D shape/strides, in 16-byte vectors of vw elements. */
static int hipops_gn_mode(uint64_t addr, const int64_t *shape, const int64_t *strides, int64_t vw) {
    int64_t c = shape[1], h = shape[2], w = shape[3];
    const int64_t nchw[4] = {c * h * w, h * w, w, 1}, nhwc[4] = {h * w * c, 1, w * c, c};
    int nchw_ok = (h * w) % vw == 0, nhwc_ok = c % vw == 0 && c / vw <= DKH_THREADS, i;
    if (addr % 16 != 0) return 0;
    for (i = 0; i < 4; i++) {
        if (shape[i] == 1) continue;
        nchw_ok = nchw_ok && strides[i] == nchw[i];
        nhwc_ok = nhwc_ok && strides[i] == nhwc[i];
    }
    return nchw_ok ? 1 : nhwc_ok ? 2 : 0;
}

dk_status dk__hip_group_norm(dk_context *ctx, const dk_group_norm_desc *d, int gn_mode, const dk_tensor *x,
                             const dk_tensor *stats, const dk_tensor *gamma, const dk_tensor *beta,
                             const dk_tensor *y) {
    dk_hip_state *st = dk__hip_state(ctx);
    dkh_gn_args p;
    uint64_t scratch, rows;
    int64_t n = x->shape[0], c = x->shape[1], hw = x->shape[2] * x->shape[3], vw = 16 / (int64_t)dk_dtype_size(x->dtype);
    int64_t ng = n * d->groups, len = c / d->groups * hw, total = n * c * hw;
    int i;
    dk_status s;
    memset(&p, 0, sizeof p);
    if (!y) y = x; /* statistics only: the walk of x alone decides the mode */
    p.x = hipops_addr(x);
    p.y = hipops_addr(y);
    for (i = 0; i < 4; i++) {
        p.shape[i] = x->shape[i];
        p.x_s[i] = x->strides[i];
        p.y_s[i] = y->strides[i];
    }
    p.mode = hipops_gn_mode(p.x, x->shape, x->strides, vw);
    if (p.mode != hipops_gn_mode(p.y, y->shape, y->strides, vw)) p.mode = 0;
    p.stats_mode = gn_mode;
    if (stats) p.stats = hipops_addr(stats);
    /* Chunks of about 8 K elements per partial block (32 per thread), at most 4096
     * per group (mode 2: per image and all groups at once, in whole pixels, of
     * 32 K elements: a block's merge and coefficient loads are paid per chunk). */
    if (p.mode == 2) {
        rows = (uint64_t)(DKH_THREADS / (c / vw));
        p.chunks = (hw * c + 32767) / 32768;
        if (p.chunks > 4096) p.chunks = 4096;
        p.chunk = (int64_t)(((uint64_t)((hw + p.chunks - 1) / p.chunks) + rows - 1) / rows * rows);
        p.chunks = (hw + p.chunk - 1) / p.chunk;
    } else {
        int64_t units = p.mode == 1 ? len / vw : len;
        p.chunks = (len + 8191) / 8192;
        if (p.chunks > 4096) p.chunks = 4096;
        p.chunk = (units + p.chunks - 1) / p.chunks;
        p.chunks = (units + p.chunk - 1) / p.chunk;
    }
    p.coef = (ng * p.chunks * 3 + 3) / 4 * 4;
    s = dk__hip_scratch(ctx, (uint64_t)(p.coef + n * c * 4) * 4u, &scratch);
    if (s != DK_OK) return s;
    p.scratch = scratch;
    if (gamma) p.gamma = hipops_addr(gamma), p.gamma_s = gamma->strides[0], p.has_gamma = 1;
    if (beta) p.beta = hipops_addr(beta), p.beta_s = beta->strides[0], p.has_beta = 1;
    p.affine_dt = gamma ? (int)gamma->dtype : beta ? (int)beta->dtype : (int)x->dtype;
    p.groups = d->groups;
    p.eps = d->eps;
    p.act = (int)d->activation;
    p.dt = (int)x->dtype;
    /* NCHW apply by planes, 8 vectors per thread, where that still gives 8 blocks
     * per multiprocessor and the grid's rows fit: large planes gain, small
     * tensors that sit in the L2 lose (docs/group-norm.md).
     * DIFKERN_HIP_GN_PLANES: 0 off, 8 on. */
    {
        const int64_t slots = (int64_t)(st->sm_count > 0 ? st->sm_count : 64) * 8 * DKH_THREADS;
        const int64_t force = ctx->knobs.hip_gn_planes; /* -1: by size */
        if (p.mode == 1 && n * c <= 65535 && (force == 8 || (force != 0 && total / vw >= 8 * slots)))
            p.plane_vecs = 8 * DKH_THREADS;
    }
    p.total = p.mode == 0 ? total : total / vw;
    p.nblocks = (int64_t)hipops_blocks(p.total, DKH_THREADS);
    if (p.nblocks > (1 << 16)) p.nblocks = 1 << 16;
    s = DK_OK;
    if (gn_mode != DK__GN_APPLY)
        s = dk__hip_launch(ctx, "dk_group_norm", st->k.gn_partial, (uint64_t)p.chunks, (uint64_t)(p.mode == 2 ? n : ng),
                           1, &p);
    if (s == DK_OK) s = dk__hip_launch(ctx, "dk_group_norm", st->k.gn_final, (uint64_t)ng, 1, 1, &p);
    if (s == DK_OK && gn_mode != DK__GN_STATS)
        s = p.mode == 2 ? dk__hip_launch(ctx, "dk_group_norm", st->k.gn_apply, (uint64_t)p.chunks, (uint64_t)n, 1, &p)
            : p.plane_vecs
                ? dk__hip_launch(ctx, "dk_group_norm", st->k.gn_apply, (uint64_t)((hw / vw + p.plane_vecs - 1) / p.plane_vecs),
                                 (uint64_t)(n * c), 1, &p)
                : dk__hip_launch(ctx, "dk_group_norm", st->k.gn_apply, (uint64_t)p.nblocks, 1, 1, &p);
    return s;
}

dk_status dk__hip_layer_norm(dk_context *ctx, const dk_layer_norm_desc *d, const dk_tensor *x,
                             const dk_tensor *gamma, const dk_tensor *beta, const dk_tensor *y) {
    dk_hip_state *st = dk__hip_state(ctx);
    dkh_norm_args n;
    memset(&n, 0, sizeof n);
    n.x = hipops_addr(x);
    n.y = hipops_addr(y);
    hipops_pad4(x, n.shape, n.x_s);
    {
        int64_t shp[4];
        hipops_pad4(y, shp, n.y_s);
    }
    if (gamma) {
        n.gamma = hipops_addr(gamma);
        n.gamma_s = gamma->strides[0];
        n.has_gamma = 1;
    }
    if (beta) {
        n.beta = hipops_addr(beta);
        n.beta_s = beta->strides[0];
        n.has_beta = 1;
    }
    n.eps = d->eps;
    n.act = (int)d->activation;
    n.dt = (int)x->dtype;
    return dk__hip_launch(ctx, "dk_layer_norm", st->k.layer_norm, (uint64_t)(n.shape[0] * n.shape[1] * n.shape[2]), 1,
                          1, &n);
}

/* ------------------------------------------------------------ elementwise */

/* Whether strides s (in e's walk order) make the operand at addr one dense run,
 * element i at offset i, 16-byte aligned (the vector path of dkk_elementwise). */
static int hipops_dense_walk(const dkh_elt_args *e, const int64_t s[4], uint64_t addr) {
    int64_t expect = 1;
    int i;
    for (i = 3; i >= 0; i--) {
        if (e->shape[i] != 1 && s[i] != expect) return 0;
        expect *= e->shape[i];
    }
    return addr % 16 == 0;
}

/* Whether an upsample takes dke_upsample_vec (setting e->fac): integer factors
 * (at most 64 output vectors per input vector), walk dim 3 unit-stride in a and y
 * with a's rows in whole 16-byte vectors of 8 elements, every other stride a
 * multiple of 8 elements (where its size is not 1), fewer than 2^31 input
 * vectors.  DIFKERN_HIP_UPSAMPLE_VEC=0
 * keeps the generic walk (A/B timing). */
static int hipops_upsample_vec(dkh_elt_args *e, const int32_t ord[4]) {
    int64_t a3 = 0, prod = 1;
    int k;
    for (k = 0; k < 4; k++) {
        int64_t ak = ord[k] == 2 ? e->a_h : ord[k] == 3 ? e->a_w : e->shape[k];
        if (ak <= 0 || e->shape[k] % ak != 0) return 0;
        e->fac[k] = (int)(e->shape[k] / ak);
        prod *= e->fac[k];
        if (prod > 64) return 0;
        if (k < 3 && ((ak > 1 && e->a_s[k] % 8 != 0) || (e->shape[k] > 1 && e->y_s[k] % 8 != 0))) return 0;
        a3 = ak;
    }
    /* the kernel splits the vector index in 32 bits */
    if ((e->shape[0] * e->shape[1] * e->shape[2] * e->shape[3]) / prod / 8 >= ((int64_t)1 << 31)) return 0;
    return e->a_s[3] == 1 && e->y_s[3] == 1 && a3 % 8 == 0 && e->a % 16 == 0 && e->y % 16 == 0;
}

static dk_status hipops_elementwise(dk_context *ctx, const char *op, int kind, dk_activation act, float alpha,
                                    const dk_tensor *a, float beta, const dk_tensor *b, float oscale,
                                    const dk_tensor *y) {
    dkh_elt_args e;
    int64_t shp[4];
    memset(&e, 0, sizeof e);
    e.op = kind;
    e.act = (int)act;
    e.alpha = alpha;
    e.beta = beta;
    e.oscale = oscale;
    e.a = hipops_addr(a);
    e.y = hipops_addr(y);
    e.dt_a = (int)a->dtype;
    e.dt_y = (int)y->dtype;
    hipops_pad4(y, e.shape, e.y_s);
    hipops_pad4(a, shp, e.a_s);
    e.a_h = shp[2];
    e.a_w = shp[3];
    if (b) {
        e.b = hipops_addr(b);
        e.dt_b = (int)b->dtype;
        hipops_pad4(b, shp, e.b_s);
    }
    {
        int32_t ord[4];
        int i;
        dk__elt_order(e.shape, e.y_s, ord);
        dk__permute4(e.shape, ord);
        dk__permute4(e.y_s, ord);
        dk__permute4(e.a_s, ord);
        dk__permute4(e.b_s, ord);
        for (i = 0; i < 4; i++) e.hw_pos |= (ord[i] == 2 ? i : 0) | (ord[i] == 3 ? i << 2 : 0);
        e.up32 = kind == DKH_ELT_UPSAMPLE && e.a_h * (e.shape[e.hw_pos & 3] - 1) < ((int64_t)1 << 32) &&
                 e.a_w * (e.shape[e.hw_pos >> 2] - 1) < ((int64_t)1 << 32);
        /* a layout change with both dims at least a tile wide: tiled transpose (with
         * fewer than 32 channels the strided walk was as fast or faster on the H100) */
        for (i = 0; (kind == DKH_ELT_ACT || kind == DKH_ELT_CONVERT) && e.shape[3] >= 32 && e.a_s[3] != 1 && i < 3; i++)
            if (e.shape[i] >= 32 && e.a_s[i] == 1) e.tpos = i + 1;
        e.upv = kind == DKH_ELT_UPSAMPLE && ctx->knobs.hip_upsample_vec && hipops_upsample_vec(&e, ord);
        e.flat = kind != DKH_ELT_UPSAMPLE && hipops_dense_walk(&e, e.a_s, e.a) && hipops_dense_walk(&e, e.y_s, e.y) &&
                 (!b || hipops_dense_walk(&e, e.b_s, e.b));
    }
    e.total = e.shape[0] * e.shape[1] * e.shape[2] * e.shape[3];
    /* the flat path takes eight elements per thread, the transpose a tile per block */
    e.nblocks = (int64_t)hipops_blocks(e.flat ? (e.total + 7) / 8 : e.total, DKH_THREADS);
    if (e.upv) /* a thread per 8 input elements */
        e.nblocks = (int64_t)hipops_blocks(e.total / (e.fac[0] * e.fac[1] * e.fac[2] * e.fac[3]) / 8, DKH_THREADS);
    if (e.tpos) {
        int k = e.tpos - 1, tw;
        e.t16 = ctx->knobs.hip_transpose16 ? hipops_transpose16(&e) : 0;
        tw = e.t16 ? 64 : 32;
        e.nblocks = (int64_t)(hipops_blocks(e.shape[3], tw) * hipops_blocks(e.shape[k], tw)) * e.shape[k == 0 ? 1 : 0] *
                    e.shape[k == 2 ? 1 : 2];
    }
    if (e.nblocks > (1 << 20)) e.nblocks = 1 << 20;
    return dk__hip_launch(ctx, op,
                          e.upv   ? dk__hip_state(ctx)->k.upsample_vec
                          : e.t16 ? (e.t16 == 1 ? dk__hip_state(ctx)->k.transpose16 : dk__hip_state(ctx)->k.transpose_cvt)
                                  : dk__hip_state(ctx)->k.elementwise,
                          (uint64_t)e.nblocks, 1, 1, &e);
}

dk_status dk__hip_add(dk_context *ctx, float alpha, const dk_tensor *a, float beta, const dk_tensor *b,
                      dk_activation act, float out_scale, const dk_tensor *y) {
    return hipops_elementwise(ctx, b ? "dk_add" : "dk_activation_forward or dk_activation_scaled",
                              b ? DKH_ELT_ADD : DKH_ELT_ACT, act, alpha, a, beta, b, out_scale, y);
}

dk_status dk__hip_upsample_nearest(dk_context *ctx, const dk_tensor *x, const dk_tensor *y) {
    return hipops_elementwise(ctx, "dk_upsample_nearest", DKH_ELT_UPSAMPLE, DK_ACT_NONE, 1.0f, x, 0.0f, NULL, 1.0f, y);
}

dk_status dk__hip_convert(dk_context *ctx, const dk_tensor *x, const dk_tensor *y) {
    return hipops_elementwise(ctx, "dk_convert", DKH_ELT_CONVERT, DK_ACT_NONE, 1.0f, x, 0.0f, NULL, 1.0f, y);
}
