/* Norm planning shared by the GPU backends (declared in plan.h): GroupNorm's
 * vector mode, the RMS norm's kernel shape and position walk. */
#include "plan.h"

#include <string.h>

int dk__gn_vector_mode(int aligned, const int64_t shape[4], const int64_t strides[4], int64_t vw,
                       int64_t max_pixel_vectors) {
    const int64_t c = shape[1], h = shape[2], w = shape[3];
    const int64_t nchw[4] = {c * h * w, h * w, w, 1}, nhwc[4] = {h * w * c, 1, w * c, c};
    int nchw_ok = (h * w) % vw == 0, nhwc_ok = c % vw == 0 && c / vw <= max_pixel_vectors, i;
    if (!aligned) return 0;
    for (i = 0; i < 4; i++) {
        if (shape[i] == 1) continue;
        nchw_ok = nchw_ok && strides[i] == nchw[i];
        nhwc_ok = nhwc_ok && strides[i] == nhwc[i];
    }
    return nchw_ok ? 1 : nhwc_ok ? 2 : 0;
}

/* hw pixels in about `runs` runs (1..4096) of whole steps of `rows` pixels. */
static void gn_pixel_runs(int64_t hw, int64_t rows, int64_t runs, int64_t *n_out, int64_t *run_out) {
    int64_t run;
    if (runs > 4096) runs = 4096;
    if (runs < 1) runs = 1;
    run = (hw + runs - 1) / runs;
    run = (run + rows - 1) / rows * rows;
    *run_out = run;
    *n_out = (hw + run - 1) / run;
}

void dk__gn_split(int mode, const int64_t shape[4], int32_t groups, int64_t vw, int64_t threads, dk_gn_split *s) {
    const int64_t c = shape[1], hw = shape[2] * shape[3], len = c / groups * hw;
    memset(s, 0, sizeof *s);
    if (mode == 2) {
        /* Statistics: each workgroup ends with a merge of its partials in shared
         * memory and a write, paid per chunk, and the merge pass reads one
         * partial per chunk.  So chunks of up to 128 K elements, as long as at
         * least 512 workgroups remain to fill the GPU (docs/group-norm.md).
         * The normalize pass keeps 32 K-element chunks: it streams at the copy
         * bandwidth. */
        const int64_t rows = threads / (c / vw), elems = hw * c;
        const int64_t small = (elems + 32767) / 32768, big = (elems + 131071) / 131072;
        gn_pixel_runs(hw, rows, small <= 512 ? small : big > 512 ? big : 512, &s->chunks, &s->chunk);
        gn_pixel_runs(hw, rows, small, &s->apply_chunks, &s->apply_chunk);
    } else {
        /* About 8 K elements per statistics workgroup, at most 4096 per group;
         * small tensors in chunks down to 256 units while that keeps fewer
         * than 512 workgroups (the VAEs' NaN/Inf tests of 4-channel latents
         * would otherwise run in 8 workgroups). */
        const int64_t units = mode == 1 ? len / vw : len, ng = shape[0] * groups;
        int64_t chunks = (len + 8191) / 8192;
        if (chunks * ng < 512) {
            const int64_t want = (512 + ng - 1) / ng, most = (units + 255) / 256;
            chunks = want < most ? want : most;
            if (chunks < 1) chunks = 1;
        }
        if (chunks > 4096) chunks = 4096;
        s->chunk = (units + chunks - 1) / chunks;
        s->chunks = (units + s->chunk - 1) / s->chunk;
    }
}

/* ---- RMS norm ---- */

static int64_t rms_abs(int64_t v) { return v < 0 ? -v : v; }

/* Whether position slots [0, slots) step whole vectors of vw in x and y (where they have extent). */
static int rms_slots_whole(const dk_rms_plan *p, int32_t slots, int64_t vw) {
    int32_t i;
    for (i = 0; i < slots; i++)
        if (p->pshape[i] > 1 && (p->ps[0][i] % vw != 0 || p->ps[1][i] % vw != 0)) return 0;
    return 1;
}

/* The smallest power of two l <= max_lanes with l * keep >= units (max_lanes if none). */
static int rms_lanes(int64_t units, int64_t keep, int64_t max_lanes) {
    int64_t lanes;
    for (lanes = 1; lanes < max_lanes && lanes * keep < units; lanes *= 2) {}
    return (int)lanes;
}

void dk__rms_plan(const dk_tensor *x, const dk_tensor *y, uint64_t x_addr, uint64_t y_addr, const dk_rms_kernel_limits *lim,
                  dk_rms_plan *p) {
    int32_t d, n = 0, i;
    int64_t units, keep;
    memset(p, 0, sizeof *p);
    p->channels = x->shape[1];
    p->cs[0] = x->strides[1];
    p->cs[1] = y->strides[1];
    /* the position dims in their order (N, then dims 2..), extent-1 dims dropped */
    for (d = 0; d < x->ndim; d++) {
        if (d == 1 || x->shape[d] == 1) continue;
        p->pshape[n] = x->shape[d];
        p->ps[0][n] = x->strides[d];
        p->ps[1][n] = y->strides[d];
        n++;
    }
    /* adjacent position dims that both views lay out as one run become one */
    for (i = n - 2; i >= 0; i--) {
        if (p->ps[0][i] == p->ps[0][i + 1] * p->pshape[i + 1] && p->ps[1][i] == p->ps[1][i + 1] * p->pshape[i + 1]) {
            int32_t k;
            p->pshape[i] *= p->pshape[i + 1];
            p->ps[0][i] = p->ps[0][i + 1];
            p->ps[1][i] = p->ps[1][i + 1];
            for (k = i + 1; k + 1 < n; k++) {
                p->pshape[k] = p->pshape[k + 1];
                p->ps[0][k] = p->ps[0][k + 1];
                p->ps[1][k] = p->ps[1][k + 1];
            }
            n--;
        }
    }
    /* right-aligned into four slots: the innermost position dim is slot 3 */
    for (i = 3; i >= 0; i--) {
        int32_t src = i - (4 - n);
        p->pshape[i] = src >= 0 ? p->pshape[src] : 1;
        p->ps[0][i] = src >= 0 ? p->ps[0][src] : 0;
        p->ps[1][i] = src >= 0 ? p->ps[1][src] : 0;
    }
    p->pdims = n;
    p->positions = p->pshape[0] * p->pshape[1] * p->pshape[2] * p->pshape[3];

    /* Channel-strided (NCHW-like): the innermost position steps less than a
     * channel, so lanes on adjacent positions read adjacent addresses. */
    if (p->channels > 1 && n > 0 && rms_abs(p->ps[0][3]) < rms_abs(p->cs[0])) {
        p->kernel = DK__RMS_COLUMNS;
        /* in vectors of vw adjacent positions: the innermost position dim unit-stride
         * in x and y and whole vectors long, every other stride whole vectors */
        p->vec = (lim->column_vec_keep > 0 || lim->column_tile_bytes > 0) && lim->vw > 1 && p->ps[0][3] == 1 && p->ps[1][3] == 1 &&
                 p->pshape[3] % lim->vw == 0 && p->cs[0] % lim->vw == 0 && p->cs[1] % lim->vw == 0 &&
                 x_addr % 16u == 0 && y_addr % 16u == 0 && rms_slots_whole(p, 3, lim->vw);
        if (p->vec && lim->column_tile_bytes > 0) {
            int64_t es = 16 / lim->vw, t = 1;
            while (t * 2 <= lim->max_tile && t * 2 * p->channels * es <= lim->column_tile_bytes) t *= 2;
            /* whole 32-byte sectors of each channel run, whole vectors */
            if (t * es >= 32 && t >= lim->vw && t * p->channels * es <= lim->column_tile_bytes) {
                p->tile = t;
                p->lanes = 1;
                p->in_regs = 1;
                return;
            }
        }
        p->vec = p->vec && lim->column_vec_keep > 0; /* the backend may have the tile alone */
        if (p->vec) {
            p->lanes = rms_lanes(p->channels, lim->column_vec_keep, lim->max_column_vec_lanes);
            p->in_regs = p->lanes * lim->column_vec_keep >= p->channels;
            return;
        }
        p->lanes = rms_lanes(p->channels, lim->keep_scalars, lim->max_column_lanes);
        p->in_regs = p->lanes * lim->keep_scalars >= p->channels;
        return;
    }
    p->kernel = DK__RMS_ROWS;
    p->vec = lim->vw > 1 && p->cs[0] == 1 && p->cs[1] == 1 && p->channels % lim->vw == 0 && x_addr % 16u == 0 &&
             y_addr % 16u == 0 && rms_slots_whole(p, 4, lim->vw);
    units = p->vec ? p->channels / lim->vw : p->channels;
    keep = p->vec ? lim->keep_vectors : lim->keep_scalars;
    /* the fewest lanes that hold the row (fewer lanes per position: more
     * positions per workgroup, shorter reductions) */
    p->lanes = rms_lanes(units, keep, lim->max_row_lanes);
    p->in_regs = p->lanes * keep >= units;
}

static int rms_affine_vec1(const dk_tensor *t, dk_dtype x_dtype, uint64_t addr) {
    return !t || (t->dtype == x_dtype && t->strides[0] == 1 && addr % 16u == 0);
}

int dk__rms_affine_vec(const dk_rms_plan *p, const dk_tensor *x, const dk_tensor *gamma, uint64_t gamma_addr,
                       const dk_tensor *beta, uint64_t beta_addr) {
    return p->kernel == DK__RMS_ROWS && p->vec && rms_affine_vec1(gamma, x->dtype, gamma_addr) &&
           rms_affine_vec1(beta, x->dtype, beta_addr);
}
