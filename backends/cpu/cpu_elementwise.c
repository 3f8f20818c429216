/* CPU backend: add and (scaled) activation, nearest upsample and dtype/layout conversion.
 * Every tensor is seen as 4-D (missing leading dims have size 1) and walked in
 * y's memory order (dk__elt_order), with the inner dims merged where every
 * operand steps through them as one run; a task is a chunk of the innermost
 * dim, loaded and stored through the vectorizable row helpers of cpu_norm.c
 * (the dtype switch outside the loops).  Walking NHWC tensors in logical order,
 * element by element, made add 1.7x and upsample 30x slower than in NCHW. */
#include "cpu_internal.h"

#define CPUEW_CHUNK 2048

typedef enum cpuew_kind { CPUEW_ACT, CPUEW_ADD, CPUEW_UPSAMPLE, CPUEW_CONVERT } cpuew_kind;

typedef struct cpuew_job {
    cpuew_kind kind;
    const dk_tensor *x, *b, *y; /* b: second input of add */
    int64_t shape[4], xshape[4]; /* y's and x's sizes in walk order (they differ for upsample) */
    int64_t xs[4], bs[4], ys[4]; /* strides in walk order */
    int64_t chunks;              /* tasks per row of the innermost dim */
    int tpos;                    /* >= 0: the walk dim where x is unit-stride (not 3): tiled transpose */
    int64_t tk, t3;              /* tiled transpose: tiles along dims tpos and 3 */
    dk_activation act;
    float alpha, beta, oscale; /* ACT, ADD: y = oscale * act(alpha * x [+ beta * b]) */
} cpuew_job;

static void cpuew_view(const dk_tensor *t, int64_t shape[4], int64_t strides[4]) {
    int i;
    for (i = 0; i < 4; i++) {
        int src = t ? t->ndim - 4 + i : -1;
        shape[i] = src >= 0 ? t->shape[src] : 1;
        strides[i] = src >= 0 ? t->strides[src] : 0;
    }
}

/* Whether walk dims 2 and 3 form one run in every operand (an upsample's
 * resized dims never do). */
static int cpuew_mergeable(const cpuew_job *j) {
    if (j->shape[2] == 1 && j->xshape[2] == 1) return 1;
    if (j->xshape[2] != j->shape[2] || j->xshape[3] != j->shape[3]) return 0;
    return j->ys[2] == j->ys[3] * j->shape[3] && j->xs[2] == j->xs[3] * j->shape[3] &&
           (!j->b || j->bs[2] == j->bs[3] * j->shape[3]);
}

/* Folds walk dim 2 into dim 3 (dims 0, 1 move in), while it can. */
static void cpuew_merge(cpuew_job *j) {
    int pass, k;
    for (pass = 0; pass < 3 && cpuew_mergeable(j); pass++) {
        j->shape[3] *= j->shape[2];
        j->xshape[3] *= j->xshape[2];
        for (k = 2; k > 0; k--) {
            j->shape[k] = j->shape[k - 1];
            j->xshape[k] = j->xshape[k - 1];
            j->xs[k] = j->xs[k - 1];
            j->bs[k] = j->bs[k - 1];
            j->ys[k] = j->ys[k - 1];
        }
        j->shape[0] = j->xshape[0] = 1;
        j->xs[0] = j->bs[0] = j->ys[0] = 0;
    }
}

/* v[j] = x[off + idx[j]] as floats (an upsample's resized innermost dim). */
static void cpuew_gather(const void *base, dk_dtype t, int64_t off, const int64_t *idx, int64_t n, float *v) {
    int64_t j;
    switch (t) {
    case DK_F32: for (j = 0; j < n; j++) v[j] = ((const float *)base)[off + idx[j]]; break;
    case DK_F16: for (j = 0; j < n; j++) v[j] = dk__f16_to_f32(((const uint16_t *)base)[off + idx[j]]); break;
    case DK_BF16: for (j = 0; j < n; j++) v[j] = dk__bf16_to_f32(((const uint16_t *)base)[off + idx[j]]); break;
    }
}

/* v[j] = oscale * act(v[j]) in place (ADD, and ACT after its input scale); a
 * unit scale skips its multiply (a multiply by 1 is exact: no result changes). */
static void cpuew_act_out(const cpuew_job *jb, float *v, int64_t n) {
    int64_t j;
    if (jb->act != DK_ACT_NONE)
        for (j = 0; j < n; j++) v[j] = dk__act_f32(jb->act, v[j]);
    if (jb->oscale != 1.0f)
        for (j = 0; j < n; j++) v[j] *= jb->oscale;
}

/* ACT: v[j] = oscale * act(alpha * v[j]) in place. */
static void cpuew_scale_act(const cpuew_job *jb, float *v, int64_t n) {
    int64_t j;
    if (jb->alpha != 1.0f)
        for (j = 0; j < n; j++) v[j] *= jb->alpha;
    cpuew_act_out(jb, v, n);
}

/* ACT / CONVERT where x's unit-stride dim is not y's (a layout change, e.g.
 * NCHW -> NHWC): reading x along y's order would stride through memory (by
 * H*W floats: every load in one cache set).  A task reads a tile of
 * CPUEW_TK x CPUEW_T3 elements of x in runs along its unit-stride dim, then
 * writes it in y's runs. */
#define CPUEW_TK 32
#define CPUEW_T3 64
static void cpuew_transpose_task(void *arg, int64_t task) {
    const cpuew_job *jb = (const cpuew_job *)arg;
    const int k = jb->tpos, o0 = k == 0 ? 1 : 0, o1 = k == 2 ? 1 : 2;
    const int64_t *s = jb->shape;
    int64_t c0 = task % jb->t3 * CPUEW_T3, r = task / jb->t3, k0 = r % jb->tk * CPUEW_TK, i1, i0, kk, c;
    int64_t nc = s[3] - c0 < CPUEW_T3 ? s[3] - c0 : CPUEW_T3, nk = s[k] - k0 < CPUEW_TK ? s[k] - k0 : CPUEW_TK;
    int64_t xo, yo;
    float tile[CPUEW_T3 * CPUEW_TK], v[CPUEW_T3];
    r /= jb->tk;
    i1 = r % s[o1];
    i0 = r / s[o1];
    xo = i0 * jb->xs[o0] + i1 * jb->xs[o1] + k0 * jb->xs[k] + c0 * jb->xs[3];
    yo = i0 * jb->ys[o0] + i1 * jb->ys[o1] + k0 * jb->ys[k] + c0 * jb->ys[3];
    for (c = 0; c < nc; c++)
        dk__cpu_load_strided(dk__cpu_base(jb->x), jb->x->dtype, xo + c * jb->xs[3], jb->xs[k], nk, tile + c * CPUEW_TK);
    for (kk = 0; kk < nk; kk++) {
        for (c = 0; c < nc; c++) v[c] = tile[c * CPUEW_TK + kk];
        if (jb->kind == CPUEW_ACT) cpuew_scale_act(jb, v, nc);
        dk__cpu_store_strided(dk__cpu_base(jb->y), jb->y->dtype, yo + kk * jb->ys[k], jb->ys[3], nc, v);
    }
}

static void cpuew_task(void *arg, int64_t task) {
    const cpuew_job *jb = (const cpuew_job *)arg;
    const int64_t *s = jb->shape;
    int64_t row = task / jb->chunks, j0 = task % jb->chunks * CPUEW_CHUNK, n = s[3] - j0, j;
    int64_t i2 = row % s[2], i1 = row / s[2] % s[1], i0 = row / s[2] / s[1];
    int64_t yo = i0 * jb->ys[0] + i1 * jb->ys[1] + i2 * jb->ys[2] + j0 * jb->ys[3];
    float v[CPUEW_CHUNK], w[CPUEW_CHUNK];
    if (n > CPUEW_CHUNK) n = CPUEW_CHUNK;
    if (jb->kind == CPUEW_UPSAMPLE) {
        /* exact integer nearest index along each dim: floor(i * in / out) */
        const int64_t *xh = jb->xshape;
        int64_t xo = i0 * xh[0] / s[0] * jb->xs[0] + i1 * xh[1] / s[1] * jb->xs[1] + i2 * xh[2] / s[2] * jb->xs[2];
        if (xh[3] == s[3]) {
            dk__cpu_load_strided(dk__cpu_base(jb->x), jb->x->dtype, xo + j0 * jb->xs[3], jb->xs[3], n, v);
        } else if (s[3] % xh[3] == 0) {
            /* an integer factor f: the source run once, each element repeated f times */
            int64_t f = s[3] / xh[3], a0 = j0 / f, m = (j0 + n - 1) / f - a0 + 1;
            dk__cpu_load_strided(dk__cpu_base(jb->x), jb->x->dtype, xo + a0 * jb->xs[3], jb->xs[3], m, w);
            if (f == 2 && j0 % 2 == 0) {
                for (j = 0; j < n / 2; j++) v[2 * j] = v[2 * j + 1] = w[j];
                if (n % 2) v[n - 1] = w[n / 2];
            } else {
                for (j = 0; j < n; j++) v[j] = w[(j0 + j) / f - a0];
            }
        } else {
            /* floor((j0 + j) * xh / s) stepped without a division per element */
            int64_t idx[CPUEW_CHUNK], q = j0 * xh[3] / s[3], r = j0 * xh[3] % s[3];
            for (j = 0; j < n; j++) {
                idx[j] = q * jb->xs[3];
                for (r += xh[3]; r >= s[3]; r -= s[3]) q++;
            }
            cpuew_gather(dk__cpu_base(jb->x), jb->x->dtype, xo, idx, n, v);
        }
    } else {
        dk__cpu_load_strided(dk__cpu_base(jb->x), jb->x->dtype,
                             i0 * jb->xs[0] + i1 * jb->xs[1] + i2 * jb->xs[2] + j0 * jb->xs[3], jb->xs[3], n, v);
        if (jb->kind == CPUEW_ADD) {
            dk__cpu_load_strided(dk__cpu_base(jb->b), jb->b->dtype,
                                 i0 * jb->bs[0] + i1 * jb->bs[1] + i2 * jb->bs[2] + j0 * jb->bs[3], jb->bs[3], n, w);
            for (j = 0; j < n; j++) v[j] = jb->alpha * v[j] + jb->beta * w[j];
            cpuew_act_out(jb, v, n);
        } else if (jb->kind == CPUEW_ACT) {
            cpuew_scale_act(jb, v, n);
        }
    }
    dk__cpu_store_strided(dk__cpu_base(jb->y), jb->y->dtype, yo, jb->ys[3], n, v);
}

/* Every entry point: fill the job, order and merge the walk, split it, run. */
static dk_status cpuew_launch(dk_context *ctx, cpuew_kind kind, dk_activation act, float alpha,
                              const dk_tensor *a, float beta, const dk_tensor *b, float oscale,
                              const dk_tensor *y) {
    cpuew_job job;
    int64_t bshape[4];
    int32_t ord[4];
    int k;
    job.kind = kind;
    job.act = act;
    job.alpha = alpha;
    job.beta = beta;
    job.oscale = oscale;
    job.x = a;
    job.b = b;
    job.y = y;
    cpuew_view(y, job.shape, job.ys);
    cpuew_view(a, job.xshape, job.xs);
    cpuew_view(b, bshape, job.bs); /* b has y's shape */
    dk__elt_order(job.shape, job.ys, ord);
    dk__permute4(job.shape, ord);
    dk__permute4(job.xshape, ord);
    dk__permute4(job.xs, ord);
    dk__permute4(job.bs, ord);
    dk__permute4(job.ys, ord);
    cpuew_merge(&job);
    job.chunks = (job.shape[3] + CPUEW_CHUNK - 1) / CPUEW_CHUNK;
    job.tpos = -1;
    for (k = 0; (kind == CPUEW_ACT || kind == CPUEW_CONVERT) && job.xs[3] != 1 && k < 3; k++)
        if (job.xs[k] == 1 && job.shape[k] >= 8 && job.shape[3] >= 8) job.tpos = k;
    if (job.tpos >= 0) {
        k = job.tpos;
        job.tk = (job.shape[k] + CPUEW_TK - 1) / CPUEW_TK;
        job.t3 = (job.shape[3] + CPUEW_T3 - 1) / CPUEW_T3;
        dk__cpu_parallel_for(ctx, job.shape[k == 0 ? 1 : 0] * job.shape[k == 2 ? 1 : 2] * job.tk * job.t3,
                             cpuew_transpose_task, &job);
        return DK_OK;
    }
    dk__cpu_parallel_for(ctx, job.shape[0] * job.shape[1] * job.shape[2] * job.chunks, cpuew_task, &job);
    return DK_OK;
}

dk_status dk__cpu_add(dk_context *ctx, float alpha, const dk_tensor *a, float beta, const dk_tensor *b,
                      dk_activation act, float out_scale, const dk_tensor *y) {
    return cpuew_launch(ctx, b ? CPUEW_ADD : CPUEW_ACT, act, alpha, a, beta, b, out_scale, y);
}

dk_status dk__cpu_upsample_nearest(dk_context *ctx, const dk_tensor *x, const dk_tensor *y) {
    return cpuew_launch(ctx, CPUEW_UPSAMPLE, DK_ACT_NONE, 1.0f, x, 0.0f, NULL, 1.0f, y);
}

dk_status dk__cpu_convert(dk_context *ctx, const dk_tensor *x, const dk_tensor *y) {
    return cpuew_launch(ctx, CPUEW_CONVERT, DK_ACT_NONE, 1.0f, x, 0.0f, NULL, 1.0f, y);
}

#undef CPUEW_CHUNK
#undef CPUEW_TK
#undef CPUEW_T3
