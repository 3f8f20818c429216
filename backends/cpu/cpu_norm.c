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
/* The arithmetic loops also get AVX2 / AVX-512 clones on x86-64. */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(DIFKERN_NO_TARGET_CLONES)
#define CPUNORM_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CPUNORM_CLONES
#endif

/* v[j] = base[off + j * s], j < n. */
static void cpunorm_load(const void *base, dk_dtype t, int64_t off, int64_t s, int64_t n, float *v) {
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

/* Adds sum(v - shift) and sum((v - shift)^2) of n <= CHUNK values to the
 * double totals.  Lanes of float partial sums keep the loop vectorizable
 * (a double accumulator chain ran at one add per 4 cycles); each lane sums
 * at most CHUNK / LANES values before they go to double. */
CPUNORM_CLONES
static void cpunorm_accumulate(const float *v, int64_t n, float shift, double *sum, double *sq) {
    float ls[CPUNORM_LANES], lq[CPUNORM_LANES];
    int64_t j, l;
    for (l = 0; l < CPUNORM_LANES; l++) ls[l] = lq[l] = 0.0f;
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
        *sum += ls[l];
        *sq += lq[l];
    }
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

/* One (image, group).  The group is walked as runs of contiguous-ish
 * elements: along W for each (channel, row) when W has the smaller stride
 * (NCHW), else along the group's channels for each pixel (NHWC).
 * Statistics: a first pass for the mean, then sums of (x - mean) and
 * (x - mean)^2 (the first is ~0 and corrects the rounding of the mean). */
static void cpunorm_gn_task(void *arg, int64_t index) {
    const cpunorm_gn_job *job = (const cpunorm_gn_job *)arg;
    const dk_tensor *x = job->x, *y = job->y;
    int64_t groups = job->desc->groups, n = index / groups, g = index % groups;
    int64_t H = x->shape[2], W = x->shape[3], cpg = job->cpg, c0 = g * cpg;
    int along_w = x->strides[3] <= x->strides[1];
    int64_t run = along_w ? W : cpg, outer = along_w ? cpg * H : H * W;
    int64_t xs = along_w ? x->strides[3] : x->strides[1], ys = along_w ? y->strides[3] : y->strides[1];
    const void *xb = dk__cpu_base(x);
    void *yb = dk__cpu_base(y);
    double sum = 0.0, sq = 0.0, count = (double)(cpg * H * W), mean, dsum = 0.0;
    float v[CPUNORM_CHUNK], a[CPUNORM_CHUNK], b[CPUNORM_CHUNK], rstd;
    int64_t o, j0, len, pass, cc;
    for (pass = 0; pass < 2; pass++) {
        float shift = pass == 0 ? 0.0f : (float)(sum / count);
        double *ps = pass == 0 ? &sum : &dsum, unused = 0.0, *pq = pass == 0 ? &unused : &sq;
        for (o = 0; o < outer; o++) {
            /* along W: o = (channel, row); along C: o = (row, column) */
            int64_t xo = along_w ? dk__offset4(x, n, c0 + o / H, o % H, 0) : dk__offset4(x, n, c0, o / W, o % W);
            for (j0 = 0; j0 < run; j0 += CPUNORM_CHUNK) {
                len = run - j0 < CPUNORM_CHUNK ? run - j0 : CPUNORM_CHUNK;
                cpunorm_load(xb, x->dtype, xo + j0 * xs, xs, len, v);
                cpunorm_accumulate(v, len, shift, ps, pq);
            }
        }
    }
    mean = (double)(float)(sum / count) + dsum / count;
    rstd = (float)(1.0 / sqrt(sq / count - (dsum / count) * (dsum / count) + (double)job->desc->eps));
    /* Along C the chunk's channels change inside a run: a/b per element.
     * Along W each run is one channel: a/b constant. */
    for (j0 = 0; j0 < (along_w ? cpg : run); j0 += (along_w ? 1 : CPUNORM_CHUNK)) {
        int64_t nch = along_w ? 1 : (run - j0 < CPUNORM_CHUNK ? run - j0 : CPUNORM_CHUNK);
        for (cc = 0; cc < nch; cc++) {
            int64_t c = c0 + j0 + cc;
            float ga = job->gamma ? dk__cpu_load(dk__cpu_base(job->gamma), job->gamma->dtype, c * job->gamma->strides[0]) : 1.0f;
            float be = job->beta ? dk__cpu_load(dk__cpu_base(job->beta), job->beta->dtype, c * job->beta->strides[0]) : 0.0f;
            a[cc] = ga * rstd;
            b[cc] = be - (float)mean * a[cc];
        }
        if (along_w) {
            int64_t i, k;
            for (k = 1; k < CPUNORM_CHUNK; k++) {
                a[k] = a[0];
                b[k] = b[0];
            }
            for (i = 0; i < H; i++) {
                int64_t xo = dk__offset4(x, n, c0 + j0, i, 0), yo = dk__offset4(y, n, c0 + j0, i, 0), w0;
                for (w0 = 0; w0 < W; w0 += CPUNORM_CHUNK) {
                    len = W - w0 < CPUNORM_CHUNK ? W - w0 : CPUNORM_CHUNK;
                    cpunorm_load(xb, x->dtype, xo + w0 * xs, xs, len, v);
                    cpunorm_apply(v, len, a, b, job->desc->activation);
                    cpunorm_store(yb, y->dtype, yo + w0 * ys, ys, len, v);
                }
            }
        } else {
            for (o = 0; o < outer; o++) {
                int64_t xo = dk__offset4(x, n, c0 + j0, o / W, o % W), yo = dk__offset4(y, n, c0 + j0, o / W, o % W);
                cpunorm_load(xb, x->dtype, xo, xs, nch, v);
                cpunorm_apply(v, nch, a, b, job->desc->activation);
                cpunorm_store(yb, y->dtype, yo, ys, nch, v);
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
#undef CPUNORM_CLONES
