/* CPU backend: group_norm and layer_norm.  Statistics in double (two passes
 * over the group: mean, then the centred sum of squares, so large means do not
 * cancel); the normalize pass applies the affine transform and the activation.
 * y may be the same view as x: every element is read before it is written. */
#include "cpu_internal.h"

#include <math.h>
#include <string.h>

typedef struct cpunorm_gn_job {
    const dk_tensor *x, *gamma, *beta, *y;
    const dk_group_norm_desc *desc;
    int64_t cpg; /* channels per group */
} cpunorm_gn_job;

/* Values are moved through a float buffer of at most CHUNK elements so that
 * the dtype switch sits outside the loops and the arithmetic vectorizes. */
#define CPUNORM_CHUNK 256
#define CPUNORM_LANES 16
#define CPUNORM_FLUSH 2048
/* The arithmetic loops also get AVX2 / AVX-512 clones on x86-64. */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(DIFKERN_NO_TARGET_CLONES)
#define CPUNORM_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CPUNORM_CLONES
#endif

/* v[j] = base[off + j * s], j < n (declared in cpu_internal.h; attention uses it too). */
void dk__cpu_load_strided(const void *base, dk_dtype t, int64_t off, int64_t s, int64_t n, float *v) {
    int64_t j;
    switch (t) {
    case DK_F32: {
        const float *p = (const float *)base + off;
        if (s == 1) for (j = 0; j < n; j++) v[j] = p[j];
        else for (j = 0; j < n; j++) v[j] = p[j * s];
        break;
    }
    case DK_F16:
        for (j = 0; j < n; j++) v[j] = dk__f16_to_f32(((const uint16_t *)base)[off + j * s]);
        break;
    case DK_BF16: {
        const uint16_t *p = (const uint16_t *)base + off;
        if (s == 1) for (j = 0; j < n; j++) v[j] = dk__bf16_to_f32(p[j]);
        else for (j = 0; j < n; j++) v[j] = dk__bf16_to_f32(p[j * s]);
        break;
    }
    }
}

/* dk_f32_to_bf16's rounding (nearest even, NaN stays NaN), inline so that the
 * store loop vectorizes. */
static inline uint16_t cpunorm_to_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* base[off + j * s] = v[j], j < n. */
static void cpunorm_store(void *base, dk_dtype t, int64_t off, int64_t s, int64_t n, const float *v) {
    int64_t j;
    switch (t) {
    case DK_F32: {
        float *p = (float *)base + off;
        if (s == 1) for (j = 0; j < n; j++) p[j] = v[j];
        else for (j = 0; j < n; j++) p[j * s] = v[j];
        break;
    }
    case DK_F16:
        for (j = 0; j < n; j++) ((uint16_t *)base)[off + j * s] = dk_f32_to_f16(v[j]);
        break;
    case DK_BF16: {
        uint16_t *p = (uint16_t *)base + off;
        if (s == 1) for (j = 0; j < n; j++) p[j] = cpunorm_to_bf16(v[j]);
        else for (j = 0; j < n; j++) p[j * s] = cpunorm_to_bf16(v[j]);
        break;
    }
    }
}

/* Running sums of (x - shift) and (x - shift)^2 over a group: lanes of float
 * partial sums keep the loop vectorizable (a double accumulator chain ran at
 * one add per 4 cycles); the lanes go to double every FLUSH values, so each
 * lane sums at most FLUSH / LANES + CHUNK values in float. */
typedef struct cpunorm_acc {
    float ls[CPUNORM_LANES], lq[CPUNORM_LANES];
    int64_t pending;
    double sum, sq;
} cpunorm_acc;

static void cpunorm_acc_flush(cpunorm_acc *acc) {
    int l;
    for (l = 0; l < CPUNORM_LANES; l++) {
        acc->sum += acc->ls[l];
        acc->sq += acc->lq[l];
        acc->ls[l] = acc->lq[l] = 0.0f;
    }
    acc->pending = 0;
}

CPUNORM_CLONES
static void cpunorm_accumulate(cpunorm_acc *acc, const float *v, int64_t n, float shift) {
    float ls[CPUNORM_LANES], lq[CPUNORM_LANES];
    int64_t j, l;
    for (l = 0; l < CPUNORM_LANES; l++) {
        ls[l] = acc->ls[l];
        lq[l] = acc->lq[l];
    }
    for (j = 0; j + CPUNORM_LANES <= n; j += CPUNORM_LANES)
        for (l = 0; l < CPUNORM_LANES; l++) {
            float d = v[j + l] - shift;
            ls[l] += d;
            lq[l] += d * d;
        }
    for (l = 0; j + l < n; l++) {
        float d = v[j + l] - shift;
        ls[l] += d;
        lq[l] += d * d;
    }
    for (l = 0; l < CPUNORM_LANES; l++) {
        acc->ls[l] = ls[l];
        acc->lq[l] = lq[l];
    }
    acc->pending += n;
    if (acc->pending >= CPUNORM_FLUSH) cpunorm_acc_flush(acc);
}

/* y = act(x * a + b) elementwise on a chunk; SiLU inline and vectorized. */
CPUNORM_CLONES DK_CPU_VECTORIZE
static void cpunorm_apply(float *v, int64_t n, const float *a, const float *b, dk_activation act) {
    int64_t j;
    for (j = 0; j < n; j++) v[j] = v[j] * a[j] + b[j];
    if (act == DK_ACT_SILU)
        for (j = 0; j < n; j++) v[j] = v[j] / (1.0f + dk__cpu_exp(-v[j]));
    else if (act != DK_ACT_NONE)
        for (j = 0; j < n; j++) v[j] = dk__act_f32(act, v[j]);
}

/* Loads (dst NULL) from src or stores to dst the block of np pixels from pixel
 * p0 and nch channels from channel c, pixel-major, to / from v.  Used along C
 * (NHWC), where a pixel holds only channels-per-group (often 8-16) contiguous
 * values: blocks of many pixels keep the arithmetic calls large. */
static void cpunorm_block(const dk_tensor *t, const void *src, void *dst, int64_t n, int64_t c, int64_t p0,
                          int64_t np, int64_t nch, float *v) {
    int64_t q, W = t->shape[3];
    for (q = 0; q < np; q++) {
        int64_t off = dk__offset4(t, n, c, (p0 + q) / W, (p0 + q) % W);
        if (dst) cpunorm_store(dst, t->dtype, off, t->strides[1], nch, v + q * nch);
        else dk__cpu_load_strided(src, t->dtype, off, t->strides[1], nch, v + q * nch);
    }
}

/* a[k] = gamma * rstd, b[k] = beta - mean * a[k] for channel c0 + k % nch, k < count. */
static void cpunorm_affine(const cpunorm_gn_job *job, int64_t c0, int64_t nch, int64_t count, float mean, float rstd,
                           float *a, float *b) {
    int64_t k;
    for (k = 0; k < count; k++) {
        int64_t c = c0 + k % nch;
        float ga = job->gamma ? dk__cpu_load(dk__cpu_base(job->gamma), job->gamma->dtype, c * job->gamma->strides[0]) : 1.0f;
        float be = job->beta ? dk__cpu_load(dk__cpu_base(job->beta), job->beta->dtype, c * job->beta->strides[0]) : 0.0f;
        a[k] = ga * rstd;
        b[k] = be - mean * a[k];
    }
}

/* One (image, group).  When W has the smaller stride (NCHW) the group is
 * walked as runs along W, one per (channel, row); otherwise (NHWC) as blocks
 * of pixels x channels of the group.  Statistics: a first pass for the mean,
 * then sums of (x - mean) and (x - mean)^2 (the first is ~0 and corrects the
 * rounding of the mean to float). */
static void cpunorm_gn_task(void *arg, int64_t index) {
    const cpunorm_gn_job *job = (const cpunorm_gn_job *)arg;
    const dk_tensor *x = job->x, *y = job->y;
    int64_t groups = job->desc->groups, n = index / groups, g = index % groups;
    int64_t H = x->shape[2], W = x->shape[3], cpg = job->cpg, c0 = g * cpg;
    int along_w = x->strides[3] <= x->strides[1];
    /* along C: channels per block (nch) and pixels per block (ppc) */
    int64_t nchmax = cpg < CPUNORM_CHUNK ? cpg : CPUNORM_CHUNK, ppc = CPUNORM_CHUNK / nchmax;
    const void *xb = dk__cpu_base(x);
    void *yb = dk__cpu_base(y);
    double count = (double)(cpg * H * W), var;
    cpunorm_acc acc[2]; /* pass 0: plain sums; pass 1: centred on pass 0's mean */
    float v[CPUNORM_CHUNK], a[CPUNORM_CHUNK], b[CPUNORM_CHUNK], mean, rstd;
    int64_t o, j0, len, pass, cj, nch, np;
    memset(acc, 0, sizeof acc);
    for (pass = 0; pass < 2; pass++) {
        float shift = pass == 0 ? 0.0f : (float)(acc[0].sum / count);
        if (along_w) {
            for (o = 0; o < cpg * H; o++) {
                int64_t xo = dk__offset4(x, n, c0 + o / H, o % H, 0);
                for (j0 = 0; j0 < W; j0 += CPUNORM_CHUNK) {
                    len = W - j0 < CPUNORM_CHUNK ? W - j0 : CPUNORM_CHUNK;
                    dk__cpu_load_strided(xb, x->dtype, xo + j0 * x->strides[3], x->strides[3], len, v);
                    cpunorm_accumulate(&acc[pass], v, len, shift);
                }
            }
        } else {
            for (cj = 0; cj < cpg; cj += nchmax)
                for (o = 0; o < H * W; o += ppc) {
                    nch = cpg - cj < nchmax ? cpg - cj : nchmax;
                    np = H * W - o < ppc ? H * W - o : ppc;
                    cpunorm_block(x, xb, NULL, n, c0 + cj, o, np, nch, v);
                    cpunorm_accumulate(&acc[pass], v, np * nch, shift);
                }
        }
        cpunorm_acc_flush(&acc[pass]);
    }
    mean = (float)(acc[0].sum / count);
    var = acc[1].sq / count - (acc[1].sum / count) * (acc[1].sum / count);
    mean = (float)((double)mean + acc[1].sum / count);
    rstd = (float)(1.0 / sqrt(var + (double)job->desc->eps));
    if (along_w) {
        int64_t c, i;
        for (c = c0; c < c0 + cpg; c++) {
            cpunorm_affine(job, c, 1, CPUNORM_CHUNK, mean, rstd, a, b);
            for (i = 0; i < H; i++) {
                int64_t xo = dk__offset4(x, n, c, i, 0), yo = dk__offset4(y, n, c, i, 0);
                for (j0 = 0; j0 < W; j0 += CPUNORM_CHUNK) {
                    len = W - j0 < CPUNORM_CHUNK ? W - j0 : CPUNORM_CHUNK;
                    dk__cpu_load_strided(xb, x->dtype, xo + j0 * x->strides[3], x->strides[3], len, v);
                    cpunorm_apply(v, len, a, b, job->desc->activation);
                    cpunorm_store(yb, y->dtype, yo + j0 * y->strides[3], y->strides[3], len, v);
                }
            }
        }
    } else {
        for (cj = 0; cj < cpg; cj += nchmax) {
            nch = cpg - cj < nchmax ? cpg - cj : nchmax;
            cpunorm_affine(job, c0 + cj, nch, ppc * nch, mean, rstd, a, b);
            for (o = 0; o < H * W; o += ppc) {
                np = H * W - o < ppc ? H * W - o : ppc;
                cpunorm_block(x, xb, NULL, n, c0 + cj, o, np, nch, v);
                cpunorm_apply(v, np * nch, a, b, job->desc->activation);
                cpunorm_block(y, NULL, yb, n, c0 + cj, o, np, nch, v);
            }
        }
    }
}

dk_status dk__cpu_group_norm(dk_context *ctx, const dk_group_norm_desc *desc, const dk_tensor *x,
                             const dk_tensor *gamma, const dk_tensor *beta, const dk_tensor *y) {
    cpunorm_gn_job job;
    job.x = x; job.gamma = gamma; job.beta = beta; job.y = y; job.desc = desc;
    job.cpg = x->shape[1] / desc->groups;
    dk__cpu_parallel_for(ctx, x->shape[0] * desc->groups, cpunorm_gn_task, &job);
    return DK_OK;
}

typedef struct cpunorm_ln_job {
    const dk_tensor *x, *gamma, *beta, *y;
    const dk_layer_norm_desc *desc;
    int64_t outer[3];   /* sizes of the leading dims, padded with 1 */
    int64_t xs[3], ys[3]; /* their strides */
} cpunorm_ln_job;

static void cpunorm_ln_task(void *arg, int64_t row) {
    const cpunorm_ln_job *job = (const cpunorm_ln_job *)arg;
    const dk_tensor *x = job->x, *y = job->y;
    int nd = x->ndim;
    int64_t D = x->shape[nd - 1], sx = x->strides[nd - 1], sy = y->strides[nd - 1];
    int64_t i2 = row % job->outer[2], i1 = row / job->outer[2] % job->outer[1], i0 = row / job->outer[2] / job->outer[1];
    int64_t xo = i0 * job->xs[0] + i1 * job->xs[1] + i2 * job->xs[2];
    int64_t yo = i0 * job->ys[0] + i1 * job->ys[1] + i2 * job->ys[2];
    const void *xb = dk__cpu_base(x);
    void *yb = dk__cpu_base(y);
    double sum = 0.0, sq = 0.0, mean;
    float rstd;
    int64_t d;
    for (d = 0; d < D; d++) sum += dk__cpu_load(xb, x->dtype, xo + d * sx);
    mean = sum / (double)D;
    for (d = 0; d < D; d++) {
        double t = dk__cpu_load(xb, x->dtype, xo + d * sx) - mean;
        sq += t * t;
    }
    rstd = (float)(1.0 / sqrt(sq / (double)D + (double)job->desc->eps));
    for (d = 0; d < D; d++) {
        float ga = job->gamma ? dk__cpu_load(dk__cpu_base(job->gamma), job->gamma->dtype, d * job->gamma->strides[0]) : 1.0f;
        float be = job->beta ? dk__cpu_load(dk__cpu_base(job->beta), job->beta->dtype, d * job->beta->strides[0]) : 0.0f;
        float v = (dk__cpu_load(xb, x->dtype, xo + d * sx) - (float)mean) * rstd;
        dk__cpu_store(yb, y->dtype, yo + d * sy, dk__act_f32(job->desc->activation, v * ga + be));
    }
}

dk_status dk__cpu_layer_norm(dk_context *ctx, const dk_layer_norm_desc *desc, const dk_tensor *x,
                             const dk_tensor *gamma, const dk_tensor *beta, const dk_tensor *y) {
    cpunorm_ln_job job;
    int i, nd = x->ndim;
    job.x = x; job.gamma = gamma; job.beta = beta; job.y = y; job.desc = desc;
    /* Leading dims right-aligned into 3 slots. */
    for (i = 0; i < 3; i++) {
        int src = nd - 4 + i;
        job.outer[i] = src >= 0 ? x->shape[src] : 1;
        job.xs[i] = src >= 0 ? x->strides[src] : 0;
        job.ys[i] = src >= 0 ? y->strides[src] : 0;
    }
    dk__cpu_parallel_for(ctx, job.outer[0] * job.outer[1] * job.outer[2], cpunorm_ln_task, &job);
    return DK_OK;
}

#undef CPUNORM_CHUNK
#undef CPUNORM_LANES
#undef CPUNORM_FLUSH
#undef CPUNORM_CLONES
