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
    int64_t cpg;  /* channels per group */
    int mode;     /* DK__GN_FULL / _STATS / _APPLY */
    float *stats; /* [N][groups][2] (mean, variance): written (STATS) or read (APPLY) */
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

/* m ? a : b with a mask (all ones or zero) instead of a branch: GCC does not
 * if-convert these selects next to float arithmetic, and then does not vectorize. */
static inline uint32_t cpunorm_sel(uint32_t m, uint32_t a, uint32_t b) { return (a & m) | (b & ~m); }
#define CPUNORM_MASK(c) (0u - (uint32_t)(c))

/* dk__f16_to_f32 without branches, so that loops over it vectorize. */
static inline float cpunorm_from_f16(uint16_t h) {
    uint32_t em = (uint32_t)h & 0x7fffu, u;
    float sub = (float)(int32_t)em * (1.0f / 16777216.0f); /* zero and subnormals (em < 0x400): m * 2^-24 */
    uint32_t subu;
    memcpy(&subu, &sub, sizeof subu);
    u = cpunorm_sel(CPUNORM_MASK(em >= 0x7c00u), (em << 13) | 0x7f800000u, (em << 13) + (112u << 23));
    u = cpunorm_sel(CPUNORM_MASK(em < 0x400u), subu, u);
    return dk__bits_to_f32((((uint32_t)h & 0x8000u) << 16) | u);
}

/* v[j] = base[off + j * s], j < n. */
CPUNORM_CLONES
static void cpunorm_load(const void *base, dk_dtype t, int64_t off, int64_t s, int64_t n, float *v) {
    int64_t j;
    switch (t) {
    case DK_F32: {
        const float *p = (const float *)base + off;
        if (s == 1) for (j = 0; j < n; j++) v[j] = p[j];
        else for (j = 0; j < n; j++) v[j] = p[j * s];
        break;
    }
    case DK_F16: {
        const uint16_t *p = (const uint16_t *)base + off;
        if (s == 1) for (j = 0; j < n; j++) v[j] = cpunorm_from_f16(p[j]);
        else for (j = 0; j < n; j++) v[j] = cpunorm_from_f16(p[j * s]);
        break;
    }
    case DK_BF16: {
        const uint16_t *p = (const uint16_t *)base + off;
        if (s == 1) for (j = 0; j < n; j++) v[j] = dk__bf16_to_f32(p[j]);
        else for (j = 0; j < n; j++) v[j] = dk__bf16_to_f32(p[j * s]);
        break;
    }
    }
}

/* Declared in cpu_internal.h (attention uses it too); not multiversioned
 * itself, since clang refuses clones of a function used before its definition
 * (the amalgamation puts attention first). */
void dk__cpu_load_strided(const void *base, dk_dtype t, int64_t off, int64_t s, int64_t n, float *v) {
    cpunorm_load(base, t, off, s, n, v);
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

/* dk_f32_to_f16's rounding (nearest even, overflow to inf, NaN to 0x7e00)
 * without branches, so that the store loop vectorizes. */
static inline uint16_t cpunorm_to_f16(float x) {
    uint32_t u, a, h, sub;
    float fs;
    memcpy(&u, &x, sizeof u);
    a = u & 0x7fffffffu;
    /* f16 subnormals: adding 0.5 puts a * 2^24, rounded to even, in the low mantissa bits */
    fs = dk__bits_to_f32(a) + 0.5f;
    memcpy(&sub, &fs, sizeof sub);
    h = (a + 0x0fffu + ((a >> 13) & 1u) - (112u << 23)) >> 13;
    h = cpunorm_sel(CPUNORM_MASK(a < 0x38800000u), sub - 0x3f000000u, h);
    h = cpunorm_sel(CPUNORM_MASK(a >= 0x477ff000u), 0x7c00u, h);
    h = cpunorm_sel(CPUNORM_MASK(a > 0x7f800000u), 0x7e00u, h);
    return (uint16_t)(((u >> 16) & 0x8000u) | h);
}

/* base[off + j * s] = v[j], j < n. */
CPUNORM_CLONES
static void cpunorm_store(void *base, dk_dtype t, int64_t off, int64_t s, int64_t n, const float *v) {
    int64_t j;
    switch (t) {
    case DK_F32: {
        float *p = (float *)base + off;
        if (s == 1) for (j = 0; j < n; j++) p[j] = v[j];
        else for (j = 0; j < n; j++) p[j * s] = v[j];
        break;
    }
    case DK_F16: {
        uint16_t *p = (uint16_t *)base + off;
        if (s == 1) for (j = 0; j < n; j++) p[j] = cpunorm_to_f16(v[j]);
        else for (j = 0; j < n; j++) p[j * s] = cpunorm_to_f16(v[j]);
        break;
    }
    case DK_BF16: {
        uint16_t *p = (uint16_t *)base + off;
        if (s == 1) for (j = 0; j < n; j++) p[j] = cpunorm_to_bf16(v[j]);
        else for (j = 0; j < n; j++) p[j * s] = cpunorm_to_bf16(v[j]);
        break;
    }
    }
}

/* Declared in cpu_internal.h (elementwise ops use it too); see dk__cpu_load_strided. */
void dk__cpu_store_strided(void *base, dk_dtype t, int64_t off, int64_t s, int64_t n, const float *v) {
    cpunorm_store(base, t, off, s, n, v);
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
        else cpunorm_load(src, t->dtype, off, t->strides[1], nch, v + q * nch);
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
    void *yb = y ? dk__cpu_base(y) : NULL;
    double count = (double)(cpg * H * W), var;
    cpunorm_acc acc[2]; /* pass 0: plain sums; pass 1: centred on pass 0's mean */
    float v[CPUNORM_CHUNK], a[CPUNORM_CHUNK], b[CPUNORM_CHUNK], mean, rstd;
    float *st = job->stats ? job->stats + index * 2 : NULL;
    int64_t o, j0, len, pass, cj, nch, np;
    memset(acc, 0, sizeof acc);
    for (pass = 0; pass < 2 && job->mode != DK__GN_APPLY; pass++) {
        float shift = pass == 0 ? 0.0f : (float)(acc[0].sum / count);
        if (along_w) {
            for (o = 0; o < cpg * H; o++) {
                int64_t xo = dk__offset4(x, n, c0 + o / H, o % H, 0);
                for (j0 = 0; j0 < W; j0 += CPUNORM_CHUNK) {
                    len = W - j0 < CPUNORM_CHUNK ? W - j0 : CPUNORM_CHUNK;
                    cpunorm_load(xb, x->dtype, xo + j0 * x->strides[3], x->strides[3], len, v);
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
    if (job->mode == DK__GN_APPLY) {
        mean = st[0];
        var = st[1];
    } else {
        mean = (float)(acc[0].sum / count);
        var = acc[1].sq / count - (acc[1].sum / count) * (acc[1].sum / count);
        mean = (float)((double)mean + acc[1].sum / count);
    }
    if (job->mode == DK__GN_STATS) {
        st[0] = mean;
        st[1] = (float)var;
        return;
    }
    rstd = (float)(1.0 / sqrt((var > 0.0 ? var : 0.0) + (double)job->desc->eps));
    if (along_w) {
        int64_t c, i;
        for (c = c0; c < c0 + cpg; c++) {
            cpunorm_affine(job, c, 1, CPUNORM_CHUNK, mean, rstd, a, b);
            for (i = 0; i < H; i++) {
                int64_t xo = dk__offset4(x, n, c, i, 0), yo = dk__offset4(y, n, c, i, 0);
                for (j0 = 0; j0 < W; j0 += CPUNORM_CHUNK) {
                    len = W - j0 < CPUNORM_CHUNK ? W - j0 : CPUNORM_CHUNK;
                    cpunorm_load(xb, x->dtype, xo + j0 * x->strides[3], x->strides[3], len, v);
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

/* ---------------------------------------------------- GroupNorm along C
 * When channels have the smaller stride (NHWC), the per-group walk above reads
 * only cpg values per pixel and sweeps the whole tensor three times per group
 * (about 100 sweeps at 32 groups; 2.7 s for 128x1024x1024 f16 on 2 cores).
 * Here a task owns a range of pixels with all their channels: statistics per
 * block of pixels held in cache (mean, then centred squares), merged across
 * blocks and tasks with Chan's formula in double; then a normalize pass over
 * the same ranges.  Two reads and one write of the tensor in all. */
#define CPUNORM_BLOCK_FLOATS 2048 /* a block: pixels x C floats (4 such arrays on the stack); C above it takes the per-group walk */
#define CPUNORM_TASK_PIXELS 2048

typedef struct cpunorm_rows_job {
    const cpunorm_gn_job *gn;
    int64_t ntasks;         /* tasks per image */
    double *part;           /* [N][ntasks][groups][3]: count, mean, M2 */
    float *mean, *a, *b;    /* [N][C]: the group's mean, gamma * rstd, beta */
} cpunorm_rows_job;

/* Welford/Chan merge of (count, mean, M2) triples: t += u. */
static void cpunorm_merge(double *t, double n, double mean, double m2) {
    double tot = t[0] + n, d = mean - t[1];
    if (n <= 0) return;
    t[1] += d * n / tot;
    t[2] += m2 + d * d * t[0] * n / tot;
    t[0] = tot;
}

/* sc[c] += v[q * C + c] over np pixels; with m: sc += v - m[c], qc += (v - m[c])^2. */
CPUNORM_CLONES
static void cpunorm_channel_sums(const float *v, int64_t np, int64_t C, const float *m, float *sc, float *qc) {
    int64_t q, c;
    for (q = 0; q < np; q++) {
        const float *r = v + q * C;
        if (!m)
            for (c = 0; c < C; c++) sc[c] += r[c];
        else
            for (c = 0; c < C; c++) {
                float d = r[c] - m[c];
                sc[c] += d;
                qc[c] += d * d;
            }
    }
}

/* v = act((v - m[c]) * a[c] + b[c]) over np pixels of C channels. */
CPUNORM_CLONES DK_CPU_VECTORIZE
static void cpunorm_apply_rows(float *v, int64_t np, int64_t C, const float *m, const float *a, const float *b,
                               dk_activation act) {
    int64_t q, c, n = np * C;
    for (q = 0; q < np; q++) {
        float *r = v + q * C;
        for (c = 0; c < C; c++) r[c] = (r[c] - m[c]) * a[c] + b[c];
    }
    if (act == DK_ACT_SILU)
        for (q = 0; q < n; q++) v[q] = v[q] / (1.0f + dk__cpu_exp(-v[q]));
    else if (act != DK_ACT_NONE)
        for (q = 0; q < n; q++) v[q] = dk__act_f32(act, v[q]);
}

/* Load (dst NULL) or store the np pixels from p0 of image n, all C channels. */
static void cpunorm_rows_io(const dk_tensor *t, const void *src, void *dst, int64_t n, int64_t p0, int64_t np, float *v) {
    int64_t q, W = t->shape[3], C = t->shape[1];
    for (q = 0; q < np; q++) {
        int64_t off = dk__offset4(t, n, 0, (p0 + q) / W, (p0 + q) % W);
        if (dst) cpunorm_store(dst, t->dtype, off, t->strides[1], C, v + q * C);
        else cpunorm_load(src, t->dtype, off, t->strides[1], C, v + q * C);
    }
}

static void cpunorm_rows_stats_task(void *arg, int64_t index) {
    const cpunorm_rows_job *job = (const cpunorm_rows_job *)arg;
    const dk_tensor *x = job->gn->x;
    int64_t C = x->shape[1], HW = x->shape[2] * x->shape[3], cpg = job->gn->cpg, G = C / cpg;
    int64_t n = index / job->ntasks, t = index % job->ntasks, bp = CPUNORM_BLOCK_FLOATS / C;
    int64_t p = t * CPUNORM_TASK_PIXELS, p1 = p + CPUNORM_TASK_PIXELS < HW ? p + CPUNORM_TASK_PIXELS : HW, g, c;
    double *part = job->part + (size_t)index * (size_t)G * 3;
    float v[CPUNORM_BLOCK_FLOATS], sc[CPUNORM_BLOCK_FLOATS], qc[CPUNORM_BLOCK_FLOATS], mc[CPUNORM_BLOCK_FLOATS];
    memset(part, 0, (size_t)G * 3 * sizeof *part);
    for (; p < p1; p += bp) {
        int64_t np = p1 - p < bp ? p1 - p : bp;
        double cnt = (double)(np * cpg);
        cpunorm_rows_io(x, dk__cpu_base(x), NULL, n, p, np, v);
        memset(sc, 0, (size_t)C * sizeof *sc);
        cpunorm_channel_sums(v, np, C, NULL, sc, NULL);
        for (g = 0; g < G; g++) {
            double m = 0.0;
            for (c = g * cpg; c < (g + 1) * cpg; c++) m += sc[c];
            for (c = g * cpg; c < (g + 1) * cpg; c++) mc[c] = (float)(m / cnt);
        }
        memset(sc, 0, (size_t)C * sizeof *sc);
        memset(qc, 0, (size_t)C * sizeof *qc);
        cpunorm_channel_sums(v, np, C, mc, sc, qc);
        for (g = 0; g < G; g++) {
            double s = 0.0, q = 0.0;
            for (c = g * cpg; c < (g + 1) * cpg; c++) {
                s += sc[c];
                q += qc[c];
            }
            /* the centred sum s is ~0; it corrects the rounding of mc to float */
            cpunorm_merge(part + g * 3, cnt, (double)mc[g * cpg] + s / cnt, q - s * s / cnt);
        }
    }
}

static void cpunorm_rows_norm_task(void *arg, int64_t index) {
    const cpunorm_rows_job *job = (const cpunorm_rows_job *)arg;
    const dk_tensor *x = job->gn->x, *y = job->gn->y;
    int64_t C = x->shape[1], HW = x->shape[2] * x->shape[3];
    int64_t n = index / job->ntasks, t = index % job->ntasks, bp = CPUNORM_BLOCK_FLOATS / C;
    int64_t p = t * CPUNORM_TASK_PIXELS, p1 = p + CPUNORM_TASK_PIXELS < HW ? p + CPUNORM_TASK_PIXELS : HW;
    float v[CPUNORM_BLOCK_FLOATS];
    for (; p < p1; p += bp) {
        int64_t np = p1 - p < bp ? p1 - p : bp;
        cpunorm_rows_io(x, dk__cpu_base(x), NULL, n, p, np, v);
        cpunorm_apply_rows(v, np, C, job->mean + n * C, job->a + n * C, job->b + n * C, job->gn->desc->activation);
        cpunorm_rows_io(y, NULL, dk__cpu_base(y), n, p, np, v);
    }
}

/* Returns 0 (nothing done) when out of host memory: the caller walks by group. */
static int cpunorm_gn_rows(dk_context *ctx, const cpunorm_gn_job *gn) {
    const dk_tensor *x = gn->x;
    int64_t N = x->shape[0], C = x->shape[1], HW = x->shape[2] * x->shape[3], G = gn->desc->groups;
    int64_t n, g, c, t;
    cpunorm_rows_job job;
    job.gn = gn;
    job.ntasks = (HW + CPUNORM_TASK_PIXELS - 1) / CPUNORM_TASK_PIXELS;
    job.part = (double *)malloc((size_t)(N * job.ntasks * G * 3) * sizeof *job.part);
    job.mean = (float *)malloc((size_t)(N * C * 3) * sizeof *job.mean);
    if (!job.part || !job.mean) {
        free(job.part);
        free(job.mean);
        return 0;
    }
    job.a = job.mean + N * C;
    job.b = job.a + N * C;
    if (gn->mode != DK__GN_APPLY) dk__cpu_parallel_for(ctx, N * job.ntasks, cpunorm_rows_stats_task, &job);
    for (n = 0; n < N; n++)
        for (g = 0; g < G; g++) {
            double tot[3] = {1.0, 0.0, 0.0};
            float rstd, *st = gn->stats ? gn->stats + (n * G + g) * 2 : NULL;
            if (gn->mode == DK__GN_APPLY) {
                tot[1] = st[0];
                tot[2] = st[1] > 0.0f ? st[1] : 0.0f;
            } else {
                tot[0] = 0.0;
                for (t = 0; t < job.ntasks; t++) {
                    const double *u = job.part + ((size_t)(n * job.ntasks + t) * (size_t)G + (size_t)g) * 3;
                    cpunorm_merge(tot, u[0], u[1], u[2]);
                }
            }
            if (gn->mode == DK__GN_STATS) {
                st[0] = (float)tot[1];
                st[1] = (float)(tot[2] / tot[0]);
                continue;
            }
            rstd = (float)(1.0 / sqrt(tot[2] / tot[0] + (double)gn->desc->eps));
            for (c = g * gn->cpg; c < (g + 1) * gn->cpg; c++) {
                float ga = gn->gamma ? dk__cpu_load(dk__cpu_base(gn->gamma), gn->gamma->dtype, c * gn->gamma->strides[0]) : 1.0f;
                float be = gn->beta ? dk__cpu_load(dk__cpu_base(gn->beta), gn->beta->dtype, c * gn->beta->strides[0]) : 0.0f;
                job.mean[n * C + c] = (float)tot[1];
                job.a[n * C + c] = ga * rstd;
                job.b[n * C + c] = be;
            }
        }
    if (gn->mode != DK__GN_STATS) dk__cpu_parallel_for(ctx, N * job.ntasks, cpunorm_rows_norm_task, &job);
    free(job.part);
    free(job.mean);
    return 1;
}

dk_status dk__cpu_group_norm(dk_context *ctx, const dk_group_norm_desc *desc, int mode, const dk_tensor *x,
                             const dk_tensor *stats, const dk_tensor *gamma, const dk_tensor *beta,
                             const dk_tensor *y) {
    cpunorm_gn_job job;
    job.x = x; job.gamma = gamma; job.beta = beta; job.y = y; job.desc = desc;
    job.cpg = x->shape[1] / desc->groups;
    job.mode = mode;
    job.stats = stats ? (float *)dk__cpu_base(stats) : NULL;
    if (x->strides[1] < x->strides[3] && x->shape[1] <= CPUNORM_BLOCK_FLOATS && cpunorm_gn_rows(ctx, &job)) return DK_OK;
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

/* RMS norm: a task per block of positions (the plan's folded position walk);
 * per position the sum of squares in double, then the scaling.  Every element
 * of a position is read before any of it is written (in place is safe). */
typedef struct cpunorm_rms_job {
    const dk_tensor *x, *gamma, *beta, *y;
    const dk_rms_norm_desc *desc;
    dk_rms_plan plan;
    int64_t block;
} cpunorm_rms_job;

static void cpunorm_rms_task(void *arg, int64_t task) {
    const cpunorm_rms_job *job = (const cpunorm_rms_job *)arg;
    const dk_rms_plan *p = &job->plan;
    const dk_tensor *x = job->x, *y = job->y;
    const void *xb = dk__cpu_base(x), *gb = job->gamma ? dk__cpu_base(job->gamma) : NULL;
    const void *bb = job->beta ? dk__cpu_base(job->beta) : NULL;
    void *yb = dk__cpu_base(y);
    const int64_t C = p->channels;
    int64_t pos, end = (task + 1) * job->block;
    if (end > p->positions) end = p->positions;
    for (pos = task * job->block; pos < end; pos++) {
        int64_t r = pos, xo = 0, yo = 0, c;
        int k;
        double sum = 0.0, scale;
        float s;
        for (k = 3; k >= 0; k--) {
            int64_t i = r % p->pshape[k];
            r /= p->pshape[k];
            xo += i * p->ps[0][k];
            yo += i * p->ps[1][k];
        }
        for (c = 0; c < C; c++) {
            double v = dk__cpu_load(xb, x->dtype, xo + c * p->cs[0]);
            sum += v * v;
        }
        if (job->desc->form == DK_RMS_NORM_L2) {
            double nrm = sqrt(sum);
            scale = sqrt((double)C) / (nrm < (double)job->desc->eps ? (double)job->desc->eps : nrm);
        } else {
            scale = 1.0 / sqrt(sum / (double)C + (double)job->desc->eps);
        }
        s = (float)scale;
        for (c = 0; c < C; c++) {
            float ga = gb ? dk__cpu_load(gb, job->gamma->dtype, c * job->gamma->strides[0]) : 1.0f;
            float be = bb ? dk__cpu_load(bb, job->beta->dtype, c * job->beta->strides[0]) : 0.0f;
            float v = dk__cpu_load(xb, x->dtype, xo + c * p->cs[0]) * s;
            dk__cpu_store(yb, y->dtype, yo + c * p->cs[1], dk__act_f32(job->desc->activation, v * ga + be));
        }
    }
}

dk_status dk__cpu_rms_norm(dk_context *ctx, const dk_rms_norm_desc *desc, const dk_tensor *x,
                           const dk_tensor *gamma, const dk_tensor *beta, const dk_tensor *y) {
    cpunorm_rms_job job;
    dk_rms_kernel_limits lim = {1, 1, 1, 1, 1, 0, 1, 0, 1}; /* only the position walk is used */
    job.x = x; job.gamma = gamma; job.beta = beta; job.y = y; job.desc = desc;
    dk__rms_plan(x, y, 0, 0, &lim, &job.plan);
    /* about 64 Ki elements per task */
    job.block = (int64_t)65536 / (job.plan.channels > 0 ? job.plan.channels : 1);
    if (job.block < 1) job.block = 1;
    dk__cpu_parallel_for(ctx, (job.plan.positions + job.block - 1) / job.block, cpunorm_rms_task, &job);
    return DK_OK;
}

#undef CPUNORM_CHUNK
#undef CPUNORM_LANES
#undef CPUNORM_FLUSH
#undef CPUNORM_BLOCK_FLOATS
#undef CPUNORM_TASK_PIXELS
#undef CPUNORM_CLONES
#undef CPUNORM_MASK
