/* CPU backend thread pool: persistent C11 worker threads that share one
 * parallel_for job at a time.  The caller takes part in every job, so a pool of
 * size 1 has no workers and no synchronization at all. */
#include "cpu_internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <threads.h>

typedef struct cputh_job {
    dk_cpu_task_fn fn;
    void *arg;
    int64_t n;
    int64_t chunk;
    atomic_llong next;     /* next unclaimed index */
} cputh_job;

struct dk_cpu_pool {
    int32_t size;          /* workers + the caller */
    int32_t started;       /* workers actually running */
    thrd_t *workers;
    mtx_t lock;
    cnd_t wake;            /* a new job (or shutdown) */
    cnd_t done;            /* a worker finished its part */
    uint64_t job_serial;   /* bumped per job so workers join each job once */
    int32_t busy;          /* workers still inside the current job */
    int shutdown;
    cputh_job job;
};

/* Set while a thread runs inside a job: nested parallel_for runs serially. */
static _Thread_local int cputh_inside_job;

static void cputh_work(cputh_job *job) {
    for (;;) {
        int64_t begin = (int64_t)atomic_fetch_add(&job->next, (long long)job->chunk);
        int64_t end, i;
        if (begin >= job->n) break;
        end = begin + job->chunk < job->n ? begin + job->chunk : job->n;
        for (i = begin; i < end; i++) job->fn(job->arg, i);
    }
}

static int cputh_worker_main(void *p) {
    dk_cpu_pool *pool = (dk_cpu_pool *)p;
    uint64_t seen = 0;
    cputh_inside_job = 1;
    mtx_lock(&pool->lock);
    for (;;) {
        while (!pool->shutdown && pool->job_serial == seen) cnd_wait(&pool->wake, &pool->lock);
        if (pool->shutdown) break;
        seen = pool->job_serial;
        mtx_unlock(&pool->lock);
        cputh_work(&pool->job);
        mtx_lock(&pool->lock);
        if (--pool->busy == 0) cnd_signal(&pool->done);
    }
    mtx_unlock(&pool->lock);
    return 0;
}

dk_status dk__cpu_pool_create(dk_context *ctx, int32_t num_threads, dk_cpu_pool **out) {
    dk_cpu_pool *p;
    int32_t i;
    *out = NULL;
    if (num_threads < 1) num_threads = 1;
    p = (dk_cpu_pool *)calloc(1, sizeof *p);
    if (!p) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "cpu backend: cannot allocate the thread pool");
    p->size = 1;
    if (num_threads > 1) {
        p->workers = (thrd_t *)calloc((size_t)num_threads - 1, sizeof *p->workers);
        if (!p->workers || mtx_init(&p->lock, mtx_plain) != thrd_success) {
            free(p->workers);
            free(p);
            return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "cpu backend: cannot allocate the thread pool");
        }
        if (cnd_init(&p->wake) != thrd_success || cnd_init(&p->done) != thrd_success) {
            mtx_destroy(&p->lock);
            free(p->workers);
            free(p);
            return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "cpu backend: cannot create condition variables");
        }
        /* A worker that cannot start just leaves the pool smaller. */
        for (i = 0; i < num_threads - 1; i++) {
            if (thrd_create(&p->workers[i], cputh_worker_main, p) != thrd_success) break;
            p->started++;
        }
        p->size = p->started + 1;
    }
    *out = p;
    return DK_OK;
}

void dk__cpu_pool_destroy(dk_cpu_pool *pool) {
    int32_t i;
    if (!pool) return;
    if (pool->workers) {
        mtx_lock(&pool->lock);
        pool->shutdown = 1;
        cnd_broadcast(&pool->wake);
        mtx_unlock(&pool->lock);
        for (i = 0; i < pool->started; i++) thrd_join(pool->workers[i], NULL);
        cnd_destroy(&pool->wake);
        cnd_destroy(&pool->done);
        mtx_destroy(&pool->lock);
        free(pool->workers);
    }
    free(pool);
}

int32_t dk__cpu_pool_size(const dk_cpu_pool *pool) { return pool ? pool->size : 1; }

void dk__cpu_parallel_for(dk_context *ctx, int64_t n, dk_cpu_task_fn fn, void *arg) {
    dk_cpu_pool *pool = dk__cpu_state(ctx)->pool;
    int64_t i, chunk;
    if (n <= 0) return;
    if (!pool || pool->started == 0 || n == 1 || cputh_inside_job) {
        for (i = 0; i < n; i++) fn(arg, i);
        return;
    }
    /* About 4 chunks per thread: balance without much contention. */
    chunk = n / ((int64_t)pool->size * 4);
    if (chunk < 1) chunk = 1;
    mtx_lock(&pool->lock);
    pool->job.fn = fn;
    pool->job.arg = arg;
    pool->job.n = n;
    pool->job.chunk = chunk;
    atomic_store(&pool->job.next, 0);
    pool->busy = pool->started;
    pool->job_serial++;
    cnd_broadcast(&pool->wake);
    mtx_unlock(&pool->lock);

    cputh_inside_job = 1;
    cputh_work(&pool->job);
    cputh_inside_job = 0;

    mtx_lock(&pool->lock);
    while (pool->busy > 0) cnd_wait(&pool->done, &pool->lock);
    mtx_unlock(&pool->lock);
}
