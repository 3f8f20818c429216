/* CPU backend: attention as two GEMMs per block of queries on the shared core.
 *
 * For each (batch, head): K and V^T are packed once as the GEMM's A operands.
 * A task takes a block of queries, computes the scores S = K (scale Q)^T for
 * all keys (rows = keys, columns = its queries), an exact softmax per query
 * over the whole row (max-subtracted, sums in double), then O^T = V^T P.
 * The score block is bounded (~2 MiB) by choosing the query block size. */
#include "cpu_internal.h"

#include <math.h>
#include <string.h>

typedef struct cpuattn_job {
    const dk_tensor *q, *k, *v, *out;
    int64_t heads, nq, nkv, d, dv, qblock, qblocks;
    float scale;
    float *kpack, *vpack;          /* per (batch, head) */
    int64_t kpack_size, vpack_size;
    atomic_int failed;
} cpuattn_job;

typedef struct cpuattn_task {
    const cpuattn_job *job;
    int64_t b, h, q0;
    float *scores;     /* [nkv][qblock] */
    double *inv_sum;   /* [qblock] */
} cpuattn_task;

/* Packs K (task 2 bh: rows = keys, reduction = D) or V^T (task 2 bh + 1:
 * rows = Dv, reduction = keys) of one (batch, head).  Both read whole rows
 * of K / V (contiguous along D in the usual layouts) and scatter them into
 * the MR-interleaved panels; per-element loads made packing a quarter of
 * the d=512 time. */
#define CPUATTN_ROW 128
static void cpuattn_pack_kv(void *arg, int64_t task) {
    cpuattn_job *job = (cpuattn_job *)arg;
    int64_t bh = task / 2, b = bh / job->heads, h = bh % job->heads, r, d0, j;
    int is_v = (int)(task % 2);
    const dk_tensor *t = is_v ? job->v : job->k;
    int64_t width = is_v ? job->dv : job->d;       /* values per row of K / V */
    int64_t prows = is_v ? job->dv : job->nkv;     /* rows of the packed A */
    int64_t red = is_v ? job->nkv : job->d;        /* its reduction length */
    float *dst = is_v ? job->vpack + bh * job->vpack_size : job->kpack + bh * job->kpack_size;
    float row[CPUATTN_ROW];
    int64_t last = (prows - 1) / DK_CPU_MR * DK_CPU_MR; /* first row of the last panel */
    /* rows past prows in the last panel are zero */
    if (prows % DK_CPU_MR) memset(dst + last * red, 0, (size_t)(red * DK_CPU_MR) * sizeof(float));
    for (r = 0; r < job->nkv; r++) {
        int64_t off = dk__offset4(t, b, h, r, 0);
        for (d0 = 0; d0 < width; d0 += CPUATTN_ROW) {
            int64_t n = width - d0 < CPUATTN_ROW ? width - d0 : CPUATTN_ROW;
            dk__cpu_load_strided(dk__cpu_base(t), t->dtype, off + d0 * t->strides[3], t->strides[3], n, row);
            if (is_v) { /* V row r = column r of V^T: packed row d0 + j, reduction index r */
                for (j = 0; j < n; j++) {
                    int64_t pr = d0 + j;
                    dst[(pr / DK_CPU_MR) * red * DK_CPU_MR + r * DK_CPU_MR + pr % DK_CPU_MR] = row[j];
                }
            } else { /* K row r: packed row r, reduction index d0 + j */
                float *p = dst + (r / DK_CPU_MR) * red * DK_CPU_MR + r % DK_CPU_MR;
                for (j = 0; j < n; j++) p[(d0 + j) * DK_CPU_MR] = row[j];
            }
        }
    }
}
#undef CPUATTN_ROW

/* B of the score GEMM: element (d, query c) = scale * q[b, h, c, d]. */
static void cpuattn_pack_q(const void *user, int64_t k0, int64_t kc, int64_t c0, int64_t nc, float *dst) {
    const cpuattn_task *t = (const cpuattn_task *)user;
    const dk_tensor *q = t->job->q;
    const void *qb = dk__cpu_base(q);
    int64_t ncp = (nc + DK_CPU_NR - 1) / DK_CPU_NR * DK_CPU_NR, j, kk;
    for (j = 0; j < ncp; j++) {
        float *d = dst + (j / DK_CPU_NR) * kc * DK_CPU_NR + j % DK_CPU_NR;
        for (kk = 0; kk < kc; kk++)
            d[kk * DK_CPU_NR] = j < nc ? t->job->scale * dk__cpu_load(qb, q->dtype, dk__offset4(q, t->b, t->h, c0 + j, k0 + kk)) : 0.0f;
    }
}

static void cpuattn_store_scores(const void *user, int64_t c0, int64_t nc, const float *c, int64_t ldc) {
    const cpuattn_task *t = (const cpuattn_task *)user;
    int64_t r, j, qb = t->job->qblock;
    (void)c0;
    for (r = 0; r < t->job->nkv; r++)
        for (j = 0; j < nc; j++) t->scores[r * qb + j] = c[r * ldc + j];
}

/* B of the output GEMM: element (key, query c) = unnormalized probability.
 * The score rows are already query-contiguous: one copy of NR values per
 * (key, panel); columns >= nc (uninitialized scores) are written as 0. */
static void cpuattn_pack_p(const void *user, int64_t k0, int64_t kc, int64_t c0, int64_t nc, float *dst) {
    const cpuattn_task *t = (const cpuattn_task *)user;
    int64_t ncp = (nc + DK_CPU_NR - 1) / DK_CPU_NR * DK_CPU_NR, jp, kk, qb = t->job->qblock;
    (void)c0;
    for (jp = 0; jp < ncp; jp += DK_CPU_NR) {
        int64_t w = nc - jp < DK_CPU_NR ? nc - jp : DK_CPU_NR;
        float *panel = dst + jp * kc;
        for (kk = 0; kk < kc; kk++) {
            memcpy(panel + kk * DK_CPU_NR, t->scores + (k0 + kk) * qb + jp, (size_t)w * sizeof(float));
            if (w < DK_CPU_NR) memset(panel + kk * DK_CPU_NR + w, 0, (size_t)(DK_CPU_NR - w) * sizeof(float));
        }
    }
}

static void cpuattn_store_out(const void *user, int64_t c0, int64_t nc, const float *c, int64_t ldc) {
    const cpuattn_task *t = (const cpuattn_task *)user;
    const dk_tensor *o = t->job->out;
    void *ob = dk__cpu_base(o);
    int64_t r, j;
    for (r = 0; r < t->job->dv; r++)
        for (j = 0; j < nc; j++)
            dk__cpu_store(ob, o->dtype, dk__offset4(o, t->b, t->h, c0 + j, r),
                          (float)(c[r * ldc + j] * t->inv_sum[j]));
}

/* On x86-64 the softmax loops get AVX2 / AVX-512 clones. */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(DIFKERN_NO_TARGET_CLONES)
#define CPUATTN_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CPUATTN_CLONES
#endif

/* Exact softmax of every query column over all keys, row by row so that the
 * inner loops run along contiguous query columns. */
CPUATTN_CLONES DK_CPU_VECTORIZE
static void cpuattn_softmax(cpuattn_task *t, int64_t nc) {
    int64_t r, j, qb = t->job->qblock, nkv = t->job->nkv;
    float mx[DK_CPU_NC];
    double sum[DK_CPU_NC];
    for (j = 0; j < nc; j++) {
        mx[j] = -INFINITY;
        sum[j] = 0.0;
    }
    for (r = 0; r < nkv; r++) {
        const float *s = t->scores + r * qb;
        for (j = 0; j < nc; j++) mx[j] = s[j] > mx[j] ? s[j] : mx[j];
    }
    for (r = 0; r < nkv; r++) {
        float *s = t->scores + r * qb;
        for (j = 0; j < nc; j++) {
            float e = dk__cpu_exp(s[j] - mx[j]);
            s[j] = e;
            sum[j] += e;
        }
    }
    for (j = 0; j < nc; j++) t->inv_sum[j] = 1.0 / sum[j];
}

#undef CPUATTN_CLONES

static void cpuattn_task_run(void *arg, int64_t index) {
    cpuattn_job *job = (cpuattn_job *)arg;
    int64_t bh = index / job->qblocks, nc;
    cpuattn_task t;
    dk_cpu_gemm g;
    t.job = job;
    t.b = bh / job->heads;
    t.h = bh % job->heads;
    t.q0 = (index % job->qblocks) * job->qblock;
    nc = job->nq - t.q0 < job->qblock ? job->nq - t.q0 : job->qblock;
    t.scores = (float *)malloc((size_t)(job->nkv * job->qblock) * sizeof(float));
    t.inv_sum = (double *)malloc((size_t)job->qblock * sizeof(double));
    if (!t.scores || !t.inv_sum) goto fail;

    g.rows = job->nkv; g.cols = job->nq; g.k = job->d;
    g.apack = job->kpack + bh * job->kpack_size;
    g.pack_b = cpuattn_pack_q; g.store = cpuattn_store_scores; g.user = &t;
    if (dk__cpu_gemm_columns(&g, t.q0, nc) != 0) goto fail;
    cpuattn_softmax(&t, nc);
    g.rows = job->dv; g.cols = job->nq; g.k = job->nkv;
    g.apack = job->vpack + bh * job->vpack_size;
    g.pack_b = cpuattn_pack_p; g.store = cpuattn_store_out;
    if (dk__cpu_gemm_columns(&g, t.q0, nc) != 0) goto fail;
    free(t.scores);
    free(t.inv_sum);
    return;
fail:
    atomic_store(&job->failed, 1);
    free(t.scores);
    free(t.inv_sum);
}

dk_status dk__cpu_attention(dk_context *ctx, const dk_attention_desc *desc, const dk_tensor *q,
                            const dk_tensor *k, const dk_tensor *v, const dk_tensor *out) {
    cpuattn_job job;
    int64_t bh, qb;
    memset(&job, 0, sizeof job);
    job.q = q; job.k = k; job.v = v; job.out = out;
    job.heads = q->shape[1];
    job.nq = q->shape[2];
    job.nkv = k->shape[2];
    job.d = q->shape[3];
    job.dv = v->shape[3];
    job.scale = desc->scale != 0.0f ? desc->scale : (float)(1.0 / sqrt((double)job.d));
    bh = q->shape[0] * job.heads;
    /* Query block: a multiple of NR, at most NC, scores within ~2 MiB. */
    qb = ((int64_t)1 << 19) / job.nkv / DK_CPU_NR * DK_CPU_NR;
    if (qb < DK_CPU_NR) qb = DK_CPU_NR;
    if (qb > DK_CPU_NC) qb = DK_CPU_NC;
    job.qblock = qb;
    job.qblocks = (job.nq + qb - 1) / qb;
    job.kpack_size = dk__cpu_packed_a_size(job.nkv, job.d);
    job.vpack_size = dk__cpu_packed_a_size(job.dv, job.nkv);
    job.kpack = (float *)malloc((size_t)(bh * job.kpack_size) * sizeof(float));
    job.vpack = (float *)malloc((size_t)(bh * job.vpack_size) * sizeof(float));
    if (!job.kpack || !job.vpack) {
        free(job.kpack);
        free(job.vpack);
        return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "dk_attention (cpu): out of host memory for packed K/V");
    }
    atomic_init(&job.failed, 0);
    dk__cpu_parallel_for(ctx, bh * 2, cpuattn_pack_kv, &job);
    dk__cpu_parallel_for(ctx, bh * job.qblocks, cpuattn_task_run, &job);
    free(job.kpack);
    free(job.vpack);
    if (atomic_load(&job.failed)) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "dk_attention (cpu): out of host memory for scores");
    return DK_OK;
}
