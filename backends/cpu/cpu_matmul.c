/* CPU backend: batched matmul / linear on the GEMM core.
 *
 * y[M, N] = a[M, K] b[K, N] is run transposed, y^T = b^T a^T, so that b (the
 * weight of a linear layer) is the pre-packed operand, cached when it is 2-D:
 * GEMM rows = N (bias is per row, as in conv), columns = M, reduction = K. */
#include "cpu_internal.h"

#include <string.h>

static void cpumm_free(dk_context *ctx, void *p) {
    (void)ctx;
    free(p);
}

/* Packs b^T of one batch (b: [..., K, N], any strides and dtype). */
static void cpumm_pack_bt(float *dst, const dk_tensor *b, int64_t batch) {
    int nd = b->ndim;
    int64_t k = b->shape[nd - 2], n = b->shape[nd - 1];
    int64_t sk = b->strides[nd - 2], sn = b->strides[nd - 1];
    int64_t base = nd == 3 ? batch * b->strides[0] : 0;
    int64_t panels = (n + DK_CPU_MR - 1) / DK_CPU_MR, p, kk, i;
    const void *src = dk__cpu_base(b);
    for (p = 0; p < panels; p++) {
        float *d = dst + p * k * DK_CPU_MR;
        for (kk = 0; kk < k; kk++)
            for (i = 0; i < DK_CPU_MR; i++) {
                int64_t r = p * DK_CPU_MR + i;
                d[kk * DK_CPU_MR + i] = r < n ? dk__cpu_load(src, b->dtype, base + kk * sk + r * sn) : 0.0f;
            }
    }
}

static float *cpumm_pack_all(const dk_tensor *b, int64_t batches) {
    int nd = b->ndim;
    int64_t per = dk__cpu_packed_a_size(b->shape[nd - 1], b->shape[nd - 2]), i;
    float *p = (float *)malloc((size_t)(per * batches > 0 ? per * batches : 1) * sizeof(float));
    if (!p) return NULL;
    for (i = 0; i < batches; i++) cpumm_pack_bt(p + i * per, b, i);
    return p;
}

dk_status dk__cpu_matmul_prepare(dk_context *ctx, const dk_tensor *b) {
    dk_weight_key key;
    float *p;
    if (b->ndim != 2) return DK_OK; /* batched operands are packed per call */
    dk__weight_key(&key, b, DK_WEIGHT_MATMUL_B, 0);
    if (dk__weight_find(ctx, &key)) return DK_OK;
    p = cpumm_pack_all(b, 1);
    if (!p) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "dk_matmul (cpu): cannot allocate packed weights");
    return dk__weight_insert(ctx, &key, p, 0, cpumm_free);
}

typedef struct cpumm_job {
    const dk_tensor *a, *bias, *residual, *y;
    const float *bpack;
    int64_t bpack_batch_stride; /* 0 when b is shared by every batch */
    int64_t m, n, k, blocks;
    dk_activation act, post_act;
    float out_scale, res_scale;
    atomic_int failed;
} cpumm_job;

typedef struct cpumm_task {
    const cpumm_job *job;
    int64_t batch;
} cpumm_task;

/* Element (k, column m) of the packed B is a[batch, m, k]. */
static void cpumm_pack_cols(const void *user, int64_t k0, int64_t kc, int64_t c0, int64_t nc, float *dst) {
    const cpumm_task *t = (const cpumm_task *)user;
    const dk_tensor *a = t->job->a;
    int nd = a->ndim;
    int64_t sm = a->strides[nd - 2], sk = a->strides[nd - 1];
    int64_t base = nd == 3 ? t->batch * a->strides[0] : 0;
    int64_t ncp = (nc + DK_CPU_NR - 1) / DK_CPU_NR * DK_CPU_NR, j, kk;
    const void *src = dk__cpu_base(a);
    for (j = 0; j < ncp; j++) {
        float *d = dst + (j / DK_CPU_NR) * kc * DK_CPU_NR + j % DK_CPU_NR;
        if (j >= nc) {
            for (kk = 0; kk < kc; kk++) d[kk * DK_CPU_NR] = 0.0f;
            continue;
        }
        for (kk = 0; kk < kc; kk++)
            d[kk * DK_CPU_NR] = dk__cpu_load(src, a->dtype, base + (c0 + j) * sm + (k0 + kk) * sk);
    }
}

static void cpumm_store(const void *user, int64_t c0, int64_t nc, const float *c, int64_t ldc) {
    const cpumm_task *t = (const cpumm_task *)user;
    const cpumm_job *job = t->job;
    const dk_tensor *y = job->y, *res = job->residual, *bias = job->bias;
    int nd = y->ndim;
    int64_t ybase = nd == 3 ? t->batch * y->strides[0] : 0, rbase = 0, r, j;
    void *yb = dk__cpu_base(y);
    if (res) rbase = res->ndim == 3 ? t->batch * res->strides[0] : 0;
    for (r = 0; r < job->n; r++) {
        float bv = bias ? dk__cpu_load(dk__cpu_base(bias), bias->dtype, r * bias->strides[0]) : 0.0f;
        for (j = 0; j < nc; j++) {
            int64_t m = c0 + j;
            float rv = res ? dk__cpu_load(dk__cpu_base(res), res->dtype,
                                          rbase + m * res->strides[res->ndim - 2] + r * res->strides[res->ndim - 1])
                           : 0.0f;
            dk__cpu_store(yb, y->dtype, ybase + m * y->strides[nd - 2] + r * y->strides[nd - 1],
                          dk__cpu_epilogue(c[r * ldc + j], bv, job->act, job->out_scale, job->res_scale, rv,
                                           job->post_act));
        }
    }
}

static void cpumm_task_run(void *arg, int64_t index) {
    cpumm_job *job = (cpumm_job *)arg;
    cpumm_task t;
    dk_cpu_gemm g;
    int64_t blk = index % job->blocks, c0, nc;
    t.job = job;
    t.batch = index / job->blocks;
    g.rows = job->n;
    g.cols = job->m;
    g.k = job->k;
    g.apack = job->bpack + t.batch * job->bpack_batch_stride;
    g.pack_b = cpumm_pack_cols;
    g.store = cpumm_store;
    g.user = &t;
    c0 = blk * DK_CPU_NC;
    nc = job->m - c0 < DK_CPU_NC ? job->m - c0 : DK_CPU_NC;
    if (dk__cpu_gemm_columns(&g, c0, nc) != 0) atomic_store(&job->failed, 1);
}

dk_status dk__cpu_matmul(dk_context *ctx, const dk_matmul_desc *desc, const dk_tensor *a,
                         const dk_tensor *b, const dk_tensor *bias, const dk_tensor *residual,
                         const dk_tensor *y) {
    cpumm_job job;
    float *owned = NULL;
    int64_t batches = y->ndim == 3 ? y->shape[0] : 1;
    dk_status st;
    memset(&job, 0, sizeof job);
    job.m = y->shape[y->ndim - 2];
    job.n = y->shape[y->ndim - 1];
    job.k = a->shape[a->ndim - 1];
    if (b->ndim == 2) {
        dk_weight_key key;
        st = dk__cpu_matmul_prepare(ctx, b);
        if (st != DK_OK) return st;
        dk__weight_key(&key, b, DK_WEIGHT_MATMUL_B, 0);
        job.bpack = (const float *)dk__weight_find(ctx, &key);
        job.bpack_batch_stride = 0;
    } else {
        owned = cpumm_pack_all(b, batches);
        if (!owned) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "dk_matmul (cpu): out of host memory");
        job.bpack = owned;
        job.bpack_batch_stride = dk__cpu_packed_a_size(job.n, job.k);
    }
    job.a = a; job.bias = bias; job.residual = residual; job.y = y;
    job.blocks = (job.m + DK_CPU_NC - 1) / DK_CPU_NC;
    job.act = desc->activation;
    job.post_act = desc->post_activation;
    job.out_scale = desc->output_scale;
    job.res_scale = desc->residual_scale;
    atomic_init(&job.failed, 0);
    dk__cpu_parallel_for(ctx, batches * job.blocks, cpumm_task_run, &job);
    free(owned);
    if (atomic_load(&job.failed)) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "dk_matmul (cpu): out of host memory for GEMM scratch");
    return DK_OK;
}
