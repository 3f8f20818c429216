/* CPU backend: conv2d and conv_transpose2d as implicit GEMMs on the shared core
 * (cpu_gemm.c), plus the prepared-weight cache for both.
 *
 * Both ops reduce to the same "phase" description: along each axis, output
 * positions o = out_start + i * out_step read input position
 * p = i * in_step + off0 + t * off_step for kernel taps k = k0 + t * k_step.
 *   conv2d:            one phase, o = i, p = i * stride - pad + t * dilation
 *                      (p indexes the upsampled input; the source row is p / upsample).
 *   conv_transpose2d:  stride_h * stride_w phases (stride-phase decomposition):
 *                      phase r holds outputs o = r + i * stride, whose contributing
 *                      taps are exactly those with (r + pad - k * dilation) divisible
 *                      by stride; each phase is a dense conv with no zero insertion.
 * GEMM: rows = output channels of a group, columns = the phase's output pixels,
 * reduction = (input channel of the group, tap_h, tap_w). */
#include "cpu_internal.h"

#include <string.h>

typedef struct cpuconv_axis {
    int64_t out_count, out_start, out_step;
    int64_t in_step, off0, off_step, in_size;
    int64_t taps, k0, k_step;
    int64_t upsample;
} cpuconv_axis;

typedef struct cpuconv_phase {
    cpuconv_axis h, w;
} cpuconv_phase;

/* Repacked weights of one conv / conv_transpose weight, all groups and phases. */
typedef struct cpuconv_packed {
    int32_t transposed, groups;
    int64_t params[8];       /* transposed: stride, dilation, pad mod stride, phases (h, w): identity */
    int64_t rows;            /* output channels per group */
    int64_t nphases;
    cpuconv_phase *phases;   /* nphases, geometry up to the output/input sizes */
    int64_t *phase_k;        /* reduction length per phase */
    int64_t *offset;         /* [phase * groups + g]: start of that packed A */
    float *data;
} cpuconv_packed;

/* The taps of transposed-conv phase r along one axis (k: kernel size), from
 * the shared phase geometry (src/conv_plan.c). */
static void cpuconv_transposed_taps(cpuconv_axis *ax, int64_t r, int64_t stride, int64_t pad,
                                    int64_t dilation, int64_t k) {
    dk_phase_taps t;
    dk__transposed_taps(r, stride, pad, dilation, k, &t);
    ax->taps = t.taps;
    ax->k0 = t.k0;
    ax->k_step = t.k_step;
    ax->off0 = t.off0;
    ax->off_step = t.off_step;
}

static void cpuconv_free_packed(dk_context *ctx, void *p) {
    (void)ctx;
    free(p);
}

/* Weight value for (group g, output row r, input channel ci, kernel kh, kw). */
static float cpuconv_weight(const dk_tensor *w, int transposed, int64_t g, int64_t rows,
                            int64_t cin_g, int64_t r, int64_t ci, int64_t kh, int64_t kw) {
    const void *base = dk__cpu_base(w);
    int64_t i0 = transposed ? g * cin_g + ci : g * rows + r;
    int64_t i1 = transposed ? r : ci;
    return dk__cpu_load(base, w->dtype, dk__offset4(w, i0, i1, kh, kw));
}

/* Builds the packed weights.  groups and the transposed geometry (stride,
 * dilation, pad) decide the packing.  nphase: transposed phases kept per axis,
 * min(stride, output size): phases past the output hold no pixel, and a huge
 * stride on a 1-pixel axis is valid, so their count must not follow the stride. */
static cpuconv_packed *cpuconv_pack(const dk_tensor *w, int transposed, int64_t groups,
                                    const int64_t stride[2], const int64_t pad[2],
                                    const int64_t dilation[2], const int64_t nphase[2]) {
    int64_t rows = transposed ? w->shape[1] : w->shape[0] / groups;
    int64_t cin_g = transposed ? w->shape[0] / groups : w->shape[1];
    int64_t kh_size = w->shape[2], kw_size = w->shape[3];
    int64_t nph = transposed ? nphase[0] * nphase[1] : 1;
    int64_t ph, g, total = 0, header;
    cpuconv_packed *pk;
    unsigned char *mem;
    cpuconv_phase *phases = (cpuconv_phase *)calloc((size_t)nph, sizeof *phases);
    if (!phases) return NULL;
    for (ph = 0; ph < nph; ph++) {
        cpuconv_phase *P = &phases[ph];
        if (transposed) {
            cpuconv_transposed_taps(&P->h, ph / nphase[1], stride[0], pad[0] % stride[0], dilation[0], kh_size);
            cpuconv_transposed_taps(&P->w, ph % nphase[1], stride[1], pad[1] % stride[1], dilation[1], kw_size);
        } else {
            P->h.taps = kh_size; P->h.k0 = 0; P->h.k_step = 1;
            P->w.taps = kw_size; P->w.k0 = 0; P->w.k_step = 1;
        }
        total += groups * dk__cpu_packed_a_size(rows, cin_g * P->h.taps * P->w.taps);
    }
    header = (int64_t)sizeof(cpuconv_packed) + nph * (int64_t)(sizeof(cpuconv_phase) + sizeof(int64_t)) +
             nph * groups * (int64_t)sizeof(int64_t);
    header = (header + 63) / 64 * 64;
    mem = (unsigned char *)malloc((size_t)(header + total * (int64_t)sizeof(float)));
    if (!mem) {
        free(phases);
        return NULL;
    }
    pk = (cpuconv_packed *)mem;
    memset(pk, 0, sizeof *pk);
    pk->transposed = transposed;
    pk->groups = (int32_t)groups;
    if (transposed) {
        pk->params[0] = stride[0]; pk->params[1] = stride[1];
        pk->params[2] = dilation[0]; pk->params[3] = dilation[1];
        pk->params[4] = pad[0] % stride[0]; pk->params[5] = pad[1] % stride[1];
        pk->params[6] = nphase[0]; pk->params[7] = nphase[1];
    }
    pk->rows = rows;
    pk->nphases = nph;
    pk->phases = (cpuconv_phase *)(mem + sizeof(cpuconv_packed));
    pk->phase_k = (int64_t *)(pk->phases + nph);
    pk->offset = pk->phase_k + nph;
    pk->data = (float *)(mem + header);
    memcpy(pk->phases, phases, (size_t)nph * sizeof *phases);
    free(phases);

    total = 0;
    for (ph = 0; ph < nph; ph++) {
        const cpuconv_phase *P = &pk->phases[ph];
        int64_t taps = P->h.taps * P->w.taps, k = cin_g * taps;
        pk->phase_k[ph] = k;
        for (g = 0; g < groups; g++) {
            float *dst = pk->data + total;
            int64_t r, kk, panel_rows = (rows + DK_CPU_MR - 1) / DK_CPU_MR * DK_CPU_MR;
            pk->offset[ph * groups + g] = total;
            for (r = 0; r < panel_rows; r++) {
                float *d = dst + (r / DK_CPU_MR) * k * DK_CPU_MR + r % DK_CPU_MR;
                for (kk = 0; kk < k; kk++) {
                    int64_t ci = kk / taps, t = kk % taps;
                    int64_t kh = P->h.k0 + (t / P->w.taps) * P->h.k_step;
                    int64_t kw = P->w.k0 + (t % P->w.taps) * P->w.k_step;
                    d[kk * DK_CPU_MR] = r < rows ? cpuconv_weight(w, transposed, g, rows, cin_g, r, ci, kh, kw) : 0.0f;
                }
            }
            total += dk__cpu_packed_a_size(rows, k);
        }
    }
    return pk;
}

static int cpuconv_packed_matches(const cpuconv_packed *pk, int64_t groups, const int64_t params[8]) {
    int i;
    if (pk->groups != groups) return 0;
    for (i = 0; i < 8; i++)
        if (pk->params[i] != params[i]) return 0;
    return 1;
}

/* The cached packing of w, made now if absent.  The cache variant is a hash of
 * what decides the packing; *owned is set in the (unlikely) event of a hash
 * collision, when the result is not cached and the caller frees it. */
static dk_status cpuconv_get_packed(dk_context *ctx, const char *op, const dk_tensor *w, int transposed,
                                    int64_t groups, const int64_t stride[2], const int64_t pad[2],
                                    const int64_t dilation[2], const int64_t nphase[2], cpuconv_packed **out,
                                    int *owned) {
    dk_weight_key key;
    cpuconv_packed *pk;
    int64_t params[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    uint32_t hash = 2166136261u;
    int i;
    *owned = 0;
    if (transposed) {
        params[0] = stride[0]; params[1] = stride[1];
        params[2] = dilation[0]; params[3] = dilation[1];
        params[4] = pad[0] % stride[0]; params[5] = pad[1] % stride[1];
        params[6] = nphase[0]; params[7] = nphase[1];
    }
    hash = (hash ^ (uint32_t)groups) * 16777619u;
    for (i = 0; i < 8; i++) hash = (hash ^ (uint32_t)params[i]) * 16777619u;
    dk__weight_key(&key, w, transposed ? DK_WEIGHT_CONV_TRANSPOSE2D : DK_WEIGHT_CONV2D, (int32_t)(hash & 0x7fffffff));
    pk = (cpuconv_packed *)dk__weight_find(ctx, &key);
    if (pk && cpuconv_packed_matches(pk, groups, params)) {
        *out = pk;
        return DK_OK;
    }
    pk = cpuconv_pack(w, transposed, groups, stride, pad, dilation, nphase);
    if (!pk) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "%s (cpu): cannot allocate packed weights", op);
    *out = pk;
    if (dk__weight_find(ctx, &key)) {
        *owned = 1;
        return DK_OK;
    }
    return dk__weight_insert(ctx, &key, pk, 0, cpuconv_free_packed);
}

/* ---- the implicit GEMM ---- */

typedef struct cpuconv_job {
    const dk_tensor *x, *bias, *residual, *y;
    const cpuconv_packed *pk;
    cpuconv_phase *phases;        /* with output/input extents filled in */
    int64_t cin_g;
    dk_activation act, post_act;
    float out_scale, res_scale;
    int64_t ntasks;
    int64_t *task_start;          /* [phase]: first task index of the phase */
    int64_t *blocks;              /* [phase]: column blocks per (image, group) */
    atomic_int failed;
} cpuconv_job;

typedef struct cpuconv_task {
    const cpuconv_job *job;
    const cpuconv_phase *P;
    int64_t n, g;
} cpuconv_task;

/* Packs B in runs of columns that share one output row.  Along such a run
 * the input column advances by in_step, so the in-bounds columns of each
 * reduction row (a channel and a tap) form one interval found with two
 * divisions: no per-element bounds tests, and with unit stride, no upsample
 * and unit element stride (NCHW) the copy is a contiguous, vectorizable load.
 * One loop per dtype keeps the dtype switch out of the inner loop. */
#define CPUCONV_RUN(TYPE, DECODE)                                                                \
    do {                                                                                        \
        const TYPE *row = (const TYPE *)xb + chan + (yy >> ush) * sh;                           \
        if (unit) {                                                                             \
            for (j = lo; j < hi; j++) d[j] = DECODE(row[x0 + j]);                               \
        } else {                                                                                \
            for (j = lo; j < hi; j++) d[j] = DECODE(row[((x0 + j * istep) >> usw) * sw]);       \
        }                                                                                       \
    } while (0)
#define CPUCONV_F32(v) (v)

/* Smallest i >= 0 with x0 + i * s >= 0 (s > 0). */
static int64_t cpuconv_first_inside(int64_t x0, int64_t s) {
    return x0 >= 0 ? 0 : (-x0 + s - 1) / s;
}

static void cpuconv_pack_b(const void *user, int64_t k0, int64_t kc, int64_t c0, int64_t nc, float *dst) {
    const cpuconv_task *t = (const cpuconv_task *)user;
    const dk_tensor *x = t->job->x;
    const cpuconv_axis *ah = &t->P->h, *aw = &t->P->w;
    const void *xb = dk__cpu_base(x);
    int64_t taps = ah->taps * aw->taps, ncp = (nc + DK_CPU_NR - 1) / DK_CPU_NR * DK_CPU_NR;
    int64_t sh = x->strides[2], sw = x->strides[3], istep = aw->in_step;
    int ush = ah->upsample == 2, usw = aw->upsample == 2; /* upsample is 1 or 2: a shift */
    int unit = istep == 1 && !usw && sw == 1;
    int64_t jp;
    for (jp = 0; jp < ncp; jp += DK_CPU_NR) {
        float *panel = dst + jp * kc;
        int64_t seg = 0, kk;
        if (nc - jp < DK_CPU_NR) /* padding columns of the last panel */
            for (kk = 0; kk < kc; kk++)
                memset(panel + kk * DK_CPU_NR + (nc - jp), 0, (size_t)(DK_CPU_NR - (nc - jp)) * sizeof(float));
        while (seg < DK_CPU_NR && jp + seg < nc) {
            int64_t c = c0 + jp + seg, orow = c / aw->out_count, ocol = c % aw->out_count;
            int64_t len = aw->out_count - ocol; /* columns left in this output row */
            int64_t ph0 = orow * ah->in_step + ah->off0, pw0 = ocol * istep + aw->off0;
            if (len > DK_CPU_NR - seg) len = DK_CPU_NR - seg;
            if (len > nc - jp - seg) len = nc - jp - seg;
            for (kk = 0; kk < kc; kk++) {
                int64_t k = k0 + kk, ci = k / taps, tap = k % taps;
                int64_t yy = ph0 + (tap / aw->taps) * ah->off_step;
                int64_t x0 = pw0 + (tap % aw->taps) * aw->off_step, lo, hi, j;
                int64_t chan = dk__offset4(x, t->n, t->g * t->job->cin_g + ci, 0, 0);
                float *d = panel + kk * DK_CPU_NR + seg;
                if (yy < 0 || yy >= ah->in_size || x0 >= aw->in_size) {
                    lo = hi = 0;
                } else {
                    lo = cpuconv_first_inside(x0, istep);
                    hi = (aw->in_size - 1 - x0) / istep + 1;
                    if (lo > len) lo = len;
                    if (hi > len) hi = len;
                    if (hi < lo) hi = lo;
                }
                for (j = 0; j < lo; j++) d[j] = 0.0f;
                for (j = hi; j < len; j++) d[j] = 0.0f;
                if (hi > lo) {
                    switch (x->dtype) {
                    case DK_F32: CPUCONV_RUN(float, CPUCONV_F32); break;
                    case DK_F16: CPUCONV_RUN(uint16_t, dk__f16_to_f32); break;
                    case DK_BF16: CPUCONV_RUN(uint16_t, dk__bf16_to_f32); break;
                    }
                }
            }
            seg += len;
        }
    }
}
#undef CPUCONV_RUN
#undef CPUCONV_F32

/* Loads n values at base[off + idx[j]] (idx NULL: contiguous) as floats. */
static void cpuconv_load_row(const void *base, dk_dtype t, int64_t off, const int64_t *idx, int64_t n, float *v) {
    int64_t j;
    switch (t) {
    case DK_F32: {
        const float *p = (const float *)base + off;
        if (idx) for (j = 0; j < n; j++) v[j] = p[idx[j]];
        else for (j = 0; j < n; j++) v[j] = p[j];
        break;
    }
    case DK_F16: {
        const uint16_t *p = (const uint16_t *)base + off;
        for (j = 0; j < n; j++) v[j] = dk__f16_to_f32(p[idx ? idx[j] : j]);
        break;
    }
    case DK_BF16: {
        const uint16_t *p = (const uint16_t *)base + off;
        if (idx) for (j = 0; j < n; j++) v[j] = dk__bf16_to_f32(p[idx[j]]);
        else for (j = 0; j < n; j++) v[j] = dk__bf16_to_f32(p[j]);
        break;
    }
    }
}

/* dk_f32_to_bf16's rounding (nearest even, NaN stays NaN), inline so that the
 * bf16 store loop vectorizes instead of calling out per element. */
static inline uint16_t cpuconv_to_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* Stores n floats to base[off + idx[j]] (idx NULL: contiguous). */
static void cpuconv_store_row(void *base, dk_dtype t, int64_t off, const int64_t *idx, int64_t n, const float *v) {
    int64_t j;
    switch (t) {
    case DK_F32: {
        float *p = (float *)base + off;
        if (idx) for (j = 0; j < n; j++) p[idx[j]] = v[j];
        else for (j = 0; j < n; j++) p[j] = v[j];
        break;
    }
    case DK_F16: {
        uint16_t *p = (uint16_t *)base + off;
        for (j = 0; j < n; j++) p[idx ? idx[j] : j] = dk_f32_to_f16(v[j]);
        break;
    }
    case DK_BF16: {
        uint16_t *p = (uint16_t *)base + off;
        if (idx) for (j = 0; j < n; j++) p[idx[j]] = cpuconv_to_bf16(v[j]);
        else for (j = 0; j < n; j++) p[j] = cpuconv_to_bf16(v[j]);
        break;
    }
    }
}

/* The epilogue, one output row (channel) at a time with the activation and
 * dtype switches outside the loops; with small reductions (1x1 convs) the
 * per-element version took a fifth of the time.  When the block's outputs are
 * consecutive in memory (dense NCHW) the loads and stores are contiguous. */
static void cpuconv_store(const void *user, int64_t c0, int64_t nc, const float *c, int64_t ldc) {
    const cpuconv_task *t = (const cpuconv_task *)user;
    const cpuconv_job *job = t->job;
    const dk_tensor *y = job->y, *res = job->residual, *bias = job->bias;
    const cpuconv_axis *ah = &t->P->h, *aw = &t->P->w;
    void *yb = dk__cpu_base(y);
    int64_t yoff[DK_CPU_NC], roff[DK_CPU_NC];
    float v[DK_CPU_NC], rv[DK_CPU_NC];
    int ycontig = 1, rcontig = 1;
    int64_t j, r;
    for (j = 0; j < nc; j++) {
        int64_t col = c0 + j;
        int64_t oh = ah->out_start + (col / aw->out_count) * ah->out_step;
        int64_t ow = aw->out_start + (col % aw->out_count) * aw->out_step;
        yoff[j] = oh * y->strides[2] + ow * y->strides[3];
        roff[j] = res ? oh * res->strides[2] + ow * res->strides[3] : 0;
        ycontig &= yoff[j] == yoff[0] + j;
        rcontig &= roff[j] == roff[0] + j;
    }
    for (r = 0; r < job->pk->rows; r++) {
        int64_t co = t->g * job->pk->rows + r;
        float b = bias ? dk__cpu_load(dk__cpu_base(bias), bias->dtype, co * bias->strides[0]) : 0.0f;
        const float *cr = c + r * ldc;
        for (j = 0; j < nc; j++) v[j] = cr[j] + b;
        if (job->act != DK_ACT_NONE)
            for (j = 0; j < nc; j++) v[j] = dk__act_f32(job->act, v[j]);
        if (res) { /* the row's residual is read whole before its store: it may be y's own view */
            int64_t rbase = t->n * res->strides[0] + co * res->strides[1];
            cpuconv_load_row(dk__cpu_base(res), res->dtype, rbase + (rcontig ? roff[0] : 0), rcontig ? NULL : roff, nc, rv);
            for (j = 0; j < nc; j++) v[j] = job->out_scale * v[j] + job->res_scale * rv[j];
        } else if (job->out_scale != 1.0f) {
            for (j = 0; j < nc; j++) v[j] *= job->out_scale;
        }
        if (job->post_act != DK_ACT_NONE)
            for (j = 0; j < nc; j++) v[j] = dk__act_f32(job->post_act, v[j]);
        cpuconv_store_row(yb, y->dtype, t->n * y->strides[0] + co * y->strides[1] + (ycontig ? yoff[0] : 0),
                          ycontig ? NULL : yoff, nc, v);
    }
}

static void cpuconv_task_run(void *arg, int64_t index) {
    cpuconv_job *job = (cpuconv_job *)arg;
    int64_t ph = 0, groups = job->pk->groups, local, blk;
    cpuconv_task t;
    dk_cpu_gemm g;
    while (ph + 1 < job->pk->nphases && index >= job->task_start[ph + 1]) ph++;
    local = index - job->task_start[ph];
    blk = local % job->blocks[ph];
    t.job = job;
    t.P = &job->phases[ph];
    t.g = (local / job->blocks[ph]) % groups;
    t.n = local / job->blocks[ph] / groups;
    g.rows = job->pk->rows;
    g.cols = t.P->h.out_count * t.P->w.out_count;
    g.k = job->pk->phase_k[ph];
    g.apack = job->pk->data + job->pk->offset[ph * groups + t.g];
    g.pack_b = cpuconv_pack_b;
    g.store = cpuconv_store;
    g.user = &t;
    {
        int64_t c0 = blk * DK_CPU_NC, nc = g.cols - c0 < DK_CPU_NC ? g.cols - c0 : DK_CPU_NC;
        if (dk__cpu_gemm_columns(&g, c0, nc) != 0) atomic_store(&job->failed, 1);
    }
}

/* Runs a conv or conv_transpose whose phases have their taps (from the
 * packing) and whose extents the caller fills in through fill_extents. */
static dk_status cpuconv_run(dk_context *ctx, const char *op, const dk_tensor *x, const dk_tensor *w,
                             const dk_tensor *bias, const dk_tensor *residual, const dk_tensor *y,
                             int transposed, int64_t groups, const int64_t stride[2], const int64_t pad[2],
                             const int64_t dilation[2], int64_t upsample, dk_activation act,
                             dk_activation post_act, float out_scale, float res_scale) {
    cpuconv_packed *pk;
    cpuconv_job job;
    int owned, ax;
    int64_t ph, ntasks = 0, nphase[2];
    dk_status st;
    nphase[0] = stride[0] < y->shape[2] ? stride[0] : y->shape[2];
    nphase[1] = stride[1] < y->shape[3] ? stride[1] : y->shape[3];
    st = cpuconv_get_packed(ctx, op, w, transposed, groups, stride, pad, dilation, nphase, &pk, &owned);
    if (st != DK_OK) return st;
    memset(&job, 0, sizeof job);
    job.phases = (cpuconv_phase *)malloc((size_t)pk->nphases * sizeof *job.phases);
    job.task_start = (int64_t *)malloc((size_t)pk->nphases * 2 * sizeof(int64_t));
    if (!job.phases || !job.task_start) {
        free(job.phases);
        free(job.task_start);
        if (owned) free(pk);
        return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "%s (cpu): out of host memory", op);
    }
    job.blocks = job.task_start + pk->nphases;
    for (ph = 0; ph < pk->nphases; ph++) {
        cpuconv_phase *P = &job.phases[ph];
        *P = pk->phases[ph];
        for (ax = 0; ax < 2; ax++) {
            cpuconv_axis *a = ax == 0 ? &P->h : &P->w;
            int64_t out_size = y->shape[2 + ax], in_size = x->shape[2 + ax];
            if (transposed) {
                int64_t r = ax == 0 ? ph / nphase[1] : ph % nphase[1];
                a->out_start = r;
                a->out_step = stride[ax];
                a->out_count = r < out_size ? (out_size - r + stride[ax] - 1) / stride[ax] : 0;
                a->in_step = 1;
                a->in_size = in_size;
                a->upsample = 1;
                /* off0 / off_step come from the packing (pad % stride there); shift by the
                 * whole strides of pad it left out. */
                a->off0 += (pad[ax] - pad[ax] % stride[ax]) / stride[ax];
            } else {
                a->out_start = 0;
                a->out_step = 1;
                a->out_count = out_size;
                a->in_step = stride[ax];
                a->off0 = -pad[ax];
                a->off_step = dilation[ax];
                a->in_size = in_size * upsample;
                a->upsample = upsample;
            }
        }
        job.task_start[ph] = ntasks;
        job.blocks[ph] = (P->h.out_count * P->w.out_count + DK_CPU_NC - 1) / DK_CPU_NC;
        ntasks += y->shape[0] * groups * job.blocks[ph];
    }
    job.x = x; job.bias = bias; job.residual = residual; job.y = y; job.pk = pk;
    job.cin_g = transposed ? w->shape[0] / groups : w->shape[1];
    job.act = act; job.post_act = post_act; job.out_scale = out_scale; job.res_scale = res_scale;
    job.ntasks = ntasks;
    atomic_init(&job.failed, 0);
    dk__cpu_parallel_for(ctx, ntasks, cpuconv_task_run, &job);
    free(job.phases);
    free(job.task_start);
    if (owned) free(pk);
    if (atomic_load(&job.failed)) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "%s (cpu): out of host memory for GEMM scratch", op);
    return DK_OK;
}

dk_status dk__cpu_conv2d(dk_context *ctx, const dk_conv2d_desc *d, const dk_tensor *x,
                         const dk_tensor *w, const dk_tensor *bias, const dk_tensor *residual,
                         const dk_tensor *y) {
    int64_t stride[2], pad[2], dil[2];
    stride[0] = d->stride_h; stride[1] = d->stride_w;
    pad[0] = d->pad_h; pad[1] = d->pad_w;
    dil[0] = d->dilation_h; dil[1] = d->dilation_w;
    return cpuconv_run(ctx, "dk_conv2d", x, w, bias, residual, y, 0, d->groups, stride, pad, dil,
                       d->upsample, d->activation, d->post_activation, d->output_scale, d->residual_scale);
}

dk_status dk__cpu_conv_transpose2d(dk_context *ctx, const dk_conv_transpose2d_desc *d,
                                   const dk_tensor *x, const dk_tensor *w, const dk_tensor *bias,
                                   const dk_tensor *residual, const dk_tensor *y) {
    int64_t stride[2], pad[2], dil[2];
    stride[0] = d->stride_h; stride[1] = d->stride_w;
    pad[0] = d->pad_h; pad[1] = d->pad_w;
    dil[0] = d->dilation_h; dil[1] = d->dilation_w;
    return cpuconv_run(ctx, "dk_conv_transpose2d", x, w, bias, residual, y, 1, d->groups, stride, pad,
                       dil, 1, d->activation, d->post_activation, d->output_scale, d->residual_scale);
}

/* Explicit preparation packs for groups = 1 (the op packs other group counts on
 * first use) and, for transposed weights, stride 2 / pad 1 / dilation 1, the
 * decoder upsampler's geometry; other geometries pack on first use. */
dk_status dk__cpu_prepare_weight(dk_context *ctx, dk_weight_use use, const dk_tensor *w) {
    int64_t one[2] = {1, 1}, two[2] = {2, 2}, zero[2] = {0, 0};
    cpuconv_packed *pk;
    int owned = 0;
    dk_status st;
    switch (use) {
    case DK_WEIGHT_CONV2D:
        st = cpuconv_get_packed(ctx, "dk_prepare_weight", w, 0, 1, one, zero, one, one, &pk, &owned);
        break;
    case DK_WEIGHT_CONV_TRANSPOSE2D:
        st = cpuconv_get_packed(ctx, "dk_prepare_weight", w, 1, 1, two, one, one, two, &pk, &owned);
        break;
    case DK_WEIGHT_MATMUL_B:
        return dk__cpu_matmul_prepare(ctx, w);
    default:
        return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "dk_prepare_weight: unknown use %d", (int)use);
    }
    if (st == DK_OK && owned) free(pk);
    return st;
}
