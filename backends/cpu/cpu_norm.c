/* CPU backend: group_norm and layer_norm.  Statistics in double (two passes
 * over the group: mean, then the centred sum of squares, so large means do not
 * cancel); the normalize pass applies the affine transform and the activation.
 * y may be the same view as x: every element is read before it is written. */
#include "cpu_internal.h"

#include <math.h>

typedef struct cpunorm_gn_job {
    const dk_tensor *x, *gamma, *beta, *y;
    const dk_group_norm_desc *desc;
    int64_t cpg; /* channels per group */
} cpunorm_gn_job;

static void cpunorm_gn_task(void *arg, int64_t index) {
    const cpunorm_gn_job *job = (const cpunorm_gn_job *)arg;
    const dk_tensor *x = job->x, *y = job->y;
    int64_t groups = job->desc->groups, n = index / groups, g = index % groups;
    int64_t H = x->shape[2], W = x->shape[3], c, i, j;
    const void *xb = dk__cpu_base(x);
    void *yb = dk__cpu_base(y);
    double sum = 0.0, sq = 0.0, mean, count = (double)(job->cpg * H * W);
    float rstd;
    for (c = g * job->cpg; c < (g + 1) * job->cpg; c++)
        for (i = 0; i < H; i++)
            for (j = 0; j < W; j++) sum += dk__cpu_load(xb, x->dtype, dk__offset4(x, n, c, i, j));
    mean = sum / count;
    for (c = g * job->cpg; c < (g + 1) * job->cpg; c++)
        for (i = 0; i < H; i++)
            for (j = 0; j < W; j++) {
                double d = dk__cpu_load(xb, x->dtype, dk__offset4(x, n, c, i, j)) - mean;
                sq += d * d;
            }
    rstd = (float)(1.0 / sqrt(sq / count + (double)job->desc->eps));
    for (c = g * job->cpg; c < (g + 1) * job->cpg; c++) {
        float ga = job->gamma ? dk__cpu_load(dk__cpu_base(job->gamma), job->gamma->dtype, c * job->gamma->strides[0]) : 1.0f;
        float be = job->beta ? dk__cpu_load(dk__cpu_base(job->beta), job->beta->dtype, c * job->beta->strides[0]) : 0.0f;
        float a = ga * rstd, b = be - (float)mean * a;
        for (i = 0; i < H; i++)
            for (j = 0; j < W; j++) {
                float v = dk__cpu_load(xb, x->dtype, dk__offset4(x, n, c, i, j));
                dk__cpu_store(yb, y->dtype, dk__offset4(y, n, c, i, j), dk__act_f32(job->desc->activation, v * a + b));
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
