/* CPU backend: activation, add, nearest upsample and dtype/layout conversion.
 * Every tensor is seen as 4-D (missing leading dims have size 1); work is split
 * over rows of the last dimension. */
#include "cpu_internal.h"

typedef enum cpuew_kind { CPUEW_ACT, CPUEW_ADD, CPUEW_UPSAMPLE, CPUEW_CONVERT } cpuew_kind;

typedef struct cpuew_view {
    const dk_tensor *t;
    int64_t shape[4], strides[4];
} cpuew_view;

typedef struct cpuew_job {
    cpuew_kind kind;
    cpuew_view x, b, y; /* b: second input of add */
    dk_activation act;
    float alpha, beta;
} cpuew_job;

static void cpuew_view_init(cpuew_view *v, const dk_tensor *t) {
    int i;
    v->t = t;
    if (!t) return;
    for (i = 0; i < 4; i++) {
        int src = t->ndim - 4 + i;
        v->shape[i] = src >= 0 ? t->shape[src] : 1;
        v->strides[i] = src >= 0 ? t->strides[src] : 0;
    }
}

static int64_t cpuew_at(const cpuew_view *v, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return i0 * v->strides[0] + i1 * v->strides[1] + i2 * v->strides[2] + i3 * v->strides[3];
}

static void cpuew_row(void *arg, int64_t row) {
    const cpuew_job *job = (const cpuew_job *)arg;
    const cpuew_view *y = &job->y, *x = &job->x;
    int64_t i2 = row % y->shape[2], i1 = row / y->shape[2] % y->shape[1], i0 = row / y->shape[2] / y->shape[1];
    const void *xb = dk__cpu_base(x->t);
    void *yb = dk__cpu_base(y->t);
    int64_t j;
    for (j = 0; j < y->shape[3]; j++) {
        float v;
        switch (job->kind) {
        case CPUEW_ACT:
            v = dk__act_f32(job->act, dk__cpu_load(xb, x->t->dtype, cpuew_at(x, i0, i1, i2, j)));
            break;
        case CPUEW_ADD:
            v = dk__act_f32(job->act, job->alpha * dk__cpu_load(xb, x->t->dtype, cpuew_at(x, i0, i1, i2, j)) +
                                          job->beta * dk__cpu_load(dk__cpu_base(job->b.t), job->b.t->dtype,
                                                                   cpuew_at(&job->b, i0, i1, i2, j)));
            break;
        case CPUEW_UPSAMPLE: {
            /* Exact integer nearest index: floor(i * in / out). */
            int64_t si = i2 * x->shape[2] / y->shape[2], sj = j * x->shape[3] / y->shape[3];
            v = dk__cpu_load(xb, x->t->dtype, cpuew_at(x, i0, i1, si, sj));
            break;
        }
        default:
            v = dk__cpu_load(xb, x->t->dtype, cpuew_at(x, i0, i1, i2, j));
            break;
        }
        dk__cpu_store(yb, y->t->dtype, cpuew_at(y, i0, i1, i2, j), v);
    }
}

/* Every entry point: fill the job, split over rows, run. */
static dk_status cpuew_launch(dk_context *ctx, cpuew_kind kind, dk_activation act, float alpha,
                              const dk_tensor *a, float beta, const dk_tensor *b, const dk_tensor *y) {
    cpuew_job job;
    job.kind = kind;
    job.act = act;
    job.alpha = alpha;
    job.beta = beta;
    cpuew_view_init(&job.x, a);
    cpuew_view_init(&job.b, b);
    cpuew_view_init(&job.y, y);
    dk__cpu_parallel_for(ctx, job.y.shape[0] * job.y.shape[1] * job.y.shape[2], cpuew_row, &job);
    return DK_OK;
}

dk_status dk__cpu_activation(dk_context *ctx, dk_activation act, const dk_tensor *x, const dk_tensor *y) {
    return cpuew_launch(ctx, CPUEW_ACT, act, 1.0f, x, 0.0f, NULL, y);
}

dk_status dk__cpu_add(dk_context *ctx, float alpha, const dk_tensor *a, float beta, const dk_tensor *b,
                      dk_activation act, const dk_tensor *y) {
    return cpuew_launch(ctx, CPUEW_ADD, act, alpha, a, beta, b, y);
}

dk_status dk__cpu_upsample_nearest(dk_context *ctx, const dk_tensor *x, const dk_tensor *y) {
    return cpuew_launch(ctx, CPUEW_UPSAMPLE, DK_ACT_NONE, 1.0f, x, 0.0f, NULL, y);
}

dk_status dk__cpu_convert(dk_context *ctx, const dk_tensor *x, const dk_tensor *y) {
    return cpuew_launch(ctx, CPUEW_CONVERT, DK_ACT_NONE, 1.0f, x, 0.0f, NULL, y);
}
