/* HIP GroupNorm (whole, or split into stats / merge / apply), LayerNorm and RMS norm. */
#include "hip_ops_common.h"

#include <math.h>
#include <stdlib.h>

/* ------------------------------------------------------------------ norms */

/* Group-norm vector mode (dkh_gn_args): 1 dense NCHW, 2 dense NHWC, else 0, for
 * a tensor at addr with 4-D shape/strides, in 16-byte vectors of vw elements. */
static int hipops_gn_mode(uint64_t addr, const int64_t *shape, const int64_t *strides, int64_t vw) {
    return dk__gn_vector_mode(addr % 16 == 0, shape, strides, vw, DKH_THREADS); /* a block holds a pixel */
}

dk_status dk__hip_group_norm(dk_context *ctx, const dk_group_norm_desc *d, int gn_mode, const dk_tensor *x,
                             const dk_tensor *stats, const dk_tensor *gamma, const dk_tensor *beta,
                             const dk_tensor *y) {
    dk_hip_state *st = dk__hip_state(ctx);
    dkh_gn_args p;
    uint64_t scratch;
    int64_t n = x->shape[0], c = x->shape[1], hw = x->shape[2] * x->shape[3], vw = 16 / (int64_t)dk_dtype_size(x->dtype);
    int64_t ng = n * d->groups, total = n * c * hw;
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
    {
        dk_gn_split sp;
        dk__gn_split(p.mode, x->shape, d->groups, vw, DKH_THREADS, &sp);
        p.chunks = sp.chunks;
        p.chunk = sp.chunk;
        p.a_chunks = sp.apply_chunks;
        p.a_chunk = sp.apply_chunk;
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
        s = p.mode == 2 ? dk__hip_launch(ctx, "dk_group_norm", st->k.gn_apply, (uint64_t)p.a_chunks, (uint64_t)n, 1, &p)
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

/* The RMS norm's kernels (dk_rms_norm.hip) keep DKH_RMS_KEEP_VECTORS vectors or
 * DKH_RMS_KEEP_SCALARS scalars per thread (DKH_RMS_KEEP_COLUMN_VECTORS in the
 * column vector kernel); the lanes of a position add their sums through
 * shared memory, so any power of two up to a block works: 32 for rows, 16 for
 * columns (16 positions per block: two 32-byte sectors per warp load of one
 * channel), 32 for column vectors (8 vectors of positions per block). */
dk_status dk__hip_rms_norm(dk_context *ctx, const dk_rms_norm_desc *d, const dk_tensor *x, const dk_tensor *gamma,
                           const dk_tensor *beta, const dk_tensor *y) {
    dk_hip_state *st = dk__hip_state(ctx);
    dk_rms_kernel_limits lim;
    dk_rms_plan plan;
    dkh_rms_args a;
    void *fn;
    int i;
    memset(&a, 0, sizeof a);
    lim.vw = 16 / (int64_t)dk_dtype_size(x->dtype);
    lim.max_row_lanes = 32;
    lim.max_column_lanes = 16;
    lim.keep_vectors = DKH_RMS_KEEP_VECTORS;
    lim.keep_scalars = DKH_RMS_KEEP_SCALARS;
    lim.column_vec_keep = DKH_RMS_KEEP_COLUMN_VECTORS;
    lim.max_column_vec_lanes = 32;
    lim.column_tile_bytes = DKH_RMS_TILE_BYTES;
    lim.max_tile = DKH_THREADS;
    a.x = hipops_addr(x);
    a.y = hipops_addr(y);
    dk__rms_plan(x, y, a.x, a.y, &lim, &plan);
    for (i = 0; i < 4; i++) {
        a.pshape[i] = plan.pshape[i];
        a.x_ps[i] = plan.ps[0][i];
        a.y_ps[i] = plan.ps[1][i];
    }
    a.x_cs = plan.cs[0];
    a.y_cs = plan.cs[1];
    a.channels = plan.channels;
    a.positions = plan.positions;
    a.pdims = plan.pdims;
    a.lanes = plan.lanes;
    if (gamma) {
        a.gamma = hipops_addr(gamma);
        a.gamma_s = gamma->strides[0];
        a.has_gamma = 1;
    }
    if (beta) {
        a.beta = hipops_addr(beta);
        a.beta_s = beta->strides[0];
        a.has_beta = 1;
    }
    a.affine_dt = (int)(gamma ? gamma->dtype : beta ? beta->dtype : x->dtype);
    a.eps = d->eps;
    a.sqrt_c = (float)sqrt((double)plan.channels);
    a.form = (int)d->form;
    a.act = (int)d->activation;
    a.dt = (int)x->dtype;
    a.aff_vec = dk__rms_affine_vec(&plan, x, gamma, a.gamma, beta, a.beta);
    if (plan.tile > 0) { /* a block per tile of positions, staged in shared memory */
        a.tile = (int)plan.tile;
        return dk__hip_launch(ctx, "dk_rms_norm", st->k.rms_norm[4], hipops_blocks(plan.positions, plan.tile), 1, 1, &a);
    }
    if (plan.kernel == DK__RMS_COLUMNS && plan.vec) /* a thread per vw adjacent positions of its channels */
        return dk__hip_launch(ctx, "dk_rms_norm", st->k.rms_norm[3],
                              hipops_blocks(plan.positions / lim.vw, DKH_THREADS / plan.lanes), 1, 1, &a);
    fn = st->k.rms_norm[plan.kernel == DK__RMS_COLUMNS ? 1 : plan.vec ? 2 : 0];
    return dk__hip_launch(ctx, "dk_rms_norm", fn, hipops_blocks(plan.positions, DKH_THREADS / plan.lanes), 1, 1, &a);
}
