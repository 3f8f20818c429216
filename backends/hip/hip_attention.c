/* HIP attention: the fast flash kernels (D == Dv in 64..512, Hopper wgmma for
 * 512 and <= 128), the small-head row kernel, split-KV with its merge, and
 * the generic kernel. */
#include "hip_ops_common.h"

#include <math.h>
#include <stdlib.h>

/* -------------------------------------------------------------- attention */

/* Dynamic shared memory of dkk_attention_mma_* for D == Dv == d on NVIDIA: the layout of
 * dkaf_cfg (dk_attention_fast.hip): Q tile, ring stages, P (16-bit elements with
 * rows padded by 8), then the row statistics (floats).  The kernel traps if the
 * size it gets is smaller than its own. */
unsigned dk__hip_attention_mma_smem(int64_t d) {
    const int64_t bq = DKH_ATTENTION_MMA_BQ, bkv = DKH_ATTENTION_MMA_BKV, sl = DKH_ATTENTION_MMA_SLICE;
    int64_t kc = sl / bkv < d ? sl / bkv : d, vk = sl / d < bkv ? sl / d : bkv, stage;
    if (vk < 16) vk = 16;
    stage = bkv * (kc + 8) > vk * (d + 8) ? bkv * (kc + 8) : vk * (d + 8);
    return (unsigned)(2 * (bq * (d + 8) + DKH_ATTENTION_MMA_ST * stage + bq * (bkv + 8)) + 4 * (2 * 8 * bq + bq));
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
 * ([split][b][h][nq][Dv + 2] floats, merged by dkk_attention_combine_*). */
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

/* The small-head kernel's variant (dkk_attention_mma_rows_*: 0 computes at D 64, 1 at 128)
 * for these tensors, or -1: f16/bf16, D and Dv multiples of 8 up to 128 (zero-
 * padded in the kernel), 16-byte aligned rows (hipops_attn_rows16).
 * DIFKERN_HIP_ATTN_ROWS=0 turns it off (A/B timing against dkk_attention_mma_* where
 * D == Dv is 64 or 128). */
static int hipops_attention_mma_rows_variant(dk_context *ctx, const dk_tensor *q, const dk_tensor *k, const dk_tensor *v) {
    dk_hip_state *st = dk__hip_state(ctx);
    int64_t dm = q->shape[3] > v->shape[3] ? q->shape[3] : v->shape[3];
    int variant = dm <= 64 ? 0 : 1;
    if (!ctx->knobs.hip_attn_rows || (q->dtype != DK_F16 && q->dtype != DK_BF16)) return -1;
    if (q->shape[3] % 8 || v->shape[3] % 8 || dm > 128 || !st->k.attention_mma_rows[q->dtype][variant]) return -1;
    return hipops_attn_rows16(q, k, v) ? variant : -1;
}

/* Dynamic shared memory of dkk_attention_mma_rows_* on NVIDIA (dkar_cfg in
 * dk_attention_rows.hip): the Q tile of BQ rows, then ST stages of
 * K and V (rows padded by 8 elements). */
unsigned dk__hip_attention_mma_rows_smem(int64_t d) {
    return (unsigned)(2 * (d + 8) * (DKH_ATTENTION_MMA_ROWS_BQ + DKH_ATTENTION_MMA_ROWS_ST * 2 * DKH_ATTENTION_MMA_ROWS_BKV(d)));
}

/* The fast kernel's variant for these tensors, or -1: f16/bf16, D == Dv in {64,
 * 128, 256, 512}, 16-byte aligned rows (hipops_attn_rows16).
 * DIFKERN_HIP_FAST_ATTN=0 (or DIFKERN_HIP_FAST=0) turns it off (A/B timing). */
static int hipops_attention_mma_variant(dk_context *ctx, const dk_tensor *q, const dk_tensor *k, const dk_tensor *v) {
    dk_hip_state *st = dk__hip_state(ctx);
    int variant;
    if (!ctx->knobs.hip_fast_attn || !ctx->knobs.hip_fast) return -1;
    if (q->dtype != DK_F16 && q->dtype != DK_BF16) return -1;
    if (q->shape[3] != v->shape[3]) return -1;
    for (variant = 0; variant < DK_HIP_ATTN_VARIANTS && q->shape[3] != (64 << variant); variant++) {
    }
    if (variant == DK_HIP_ATTN_VARIANTS || !st->k.attention_mma[q->dtype][variant]) return -1;
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
    s = dk__hip_launch_block(ctx, "dk_attention", st->k.attention_v_transpose, (uint64_t)p->vt_ld / 32u, (uint64_t)vt_rows / 32u, bh, 256u,
                             0u, p);
    if (s == DK_OK)
        s = dk__hip_launch_block2(ctx, "dk_attention", fn, nqb * (uint64_t)(p->splits > 1 ? p->splits : 1),
                                  (uint64_t)p->nh, (uint64_t)p->nb, threads, smem, p, tm);
    if (s != DK_OK || p->splits <= 1) return s;
    return dk__hip_launch(ctx, "dk_attention", st->k.attention_combine[q->dtype], hipops_blocks(p->nq * p->dv, DKH_THREADS),
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
    if (p.dv == p.d && p.d % 8 == 0 && p.d <= 128 && st->k.attention_wgmma_small[q->dtype][p.d > 64] && hipops_attn_wgmma_on(ctx, q) &&
        hipops_attn_rows16(q, k, v)) {
        /* Hopper, D == Dv <= 128: the warp-specialized wgmma kernel (TMA loads), at D 64 or 128 */
        const int dp = p.d > 64 ? 128 : 64;
        dkh_attn_tmaps tm;
        if (hipops_attn_tmap(&st->api, tm.q, q, DKH_ATTENTION_WGMMA_SMALL_BQ) && hipops_attn_tmap(&st->api, tm.k, k, DKH_ATTENTION_WGMMA_SMALL_BKV(dp)))
            return hipops_attn_wgmma(ctx, &p, q, st->k.attention_wgmma_small[q->dtype][p.d > 64], DKH_ATTENTION_WGMMA_SMALL_BQ, 128, DKH_ATTENTION_WGMMA_SMALL_THREADS,
                                     DKH_ATTENTION_WGMMA_SMALL_SMEM(dp), &tm);
    }
    variant = hipops_attention_mma_rows_variant(ctx, q, k, v);
    if (variant >= 0) {
        /* D, Dv <= 128: whole query rows per wave */
        return dk__hip_launch_shared(ctx, "dk_attention", st->k.attention_mma_rows[q->dtype][variant], hipops_blocks(p.nq, DKH_ATTENTION_MMA_ROWS_BQ),
                                     (uint64_t)q->shape[1], (uint64_t)q->shape[0],
                                     st->api.is_cuda ? dk__hip_attention_mma_rows_smem(64 << variant) : 0u, &p);
    }
    variant = hipops_attention_mma_variant(ctx, q, k, v);
    if (variant == 3 && st->k.attention_wgmma[q->dtype] && hipops_attn_wgmma_on(ctx, q))
        return hipops_attn_wgmma(ctx, &p, q, st->k.attention_wgmma[q->dtype], 64, 64, DKH_ATTENTION_WGMMA_THREADS, DKH_ATTENTION_WGMMA_SMEM, NULL);
    if (variant >= 0) {
        const int64_t bq = st->api.is_cuda ? DKH_ATTENTION_MMA_BQ : DKH_ATTENTION_MMA_BQ_AMD;
        const unsigned smem = st->api.is_cuda ? dk__hip_attention_mma_smem(p.d) : 0u;
        const uint64_t nqb = hipops_blocks(p.nq, bq);
        int splits = hipops_attn_splits(ctx, nqb * (uint64_t)q->shape[1] * (uint64_t)q->shape[0], p.nkv);
        if (splits > 1) {
            /* split-KV: partials in scratch, then the merge kernel */
            uint64_t part;
            dk_status s = dk__hip_scratch(ctx, hipops_attn_split_plan(&p, splits, nqb, q->shape[0], q->shape[1]), &part);
            if (s != DK_OK) return s;
            p.part = part;
            s = dk__hip_launch_shared(ctx, "dk_attention", st->k.attention_mma[q->dtype][variant], nqb * (uint64_t)p.splits,
                                      (uint64_t)p.nh, (uint64_t)p.nb, smem, &p);
            if (s != DK_OK) return s;
            return dk__hip_launch(ctx, "dk_attention", st->k.attention_combine[q->dtype],
                                  hipops_blocks(p.nq * p.dv, DKH_THREADS), (uint64_t)p.nh, (uint64_t)p.nb, &p);
        }
        return dk__hip_launch_shared(ctx, "dk_attention", st->k.attention_mma[q->dtype][variant], nqb, (uint64_t)q->shape[1],
                                     (uint64_t)q->shape[0], smem, &p);
    }
    variant = 0;
    while (variant < DK_HIP_ATTN_VARIANTS - 1 && p.dv > (64 << variant)) variant++;
    if (p.dv > (64 << variant))
        return dk__fail(ctx, DK_ERR_UNSUPPORTED, "dk_attention (hip): Dv (=%lld) must be <= 512", (long long)p.dv);
    return dk__hip_launch(ctx, "dk_attention", st->k.attention[q->dtype][variant], hipops_blocks(p.nq, DKH_ATTN_BQ),
                          (uint64_t)q->shape[1], (uint64_t)q->shape[0], &p);
}
