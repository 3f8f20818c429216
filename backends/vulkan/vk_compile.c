/* Vulkan backend: pipelines built by worker threads.  Building a pipeline is
 * the driver compiling its shader (tens to hundreds of ms each on a machine
 * without a pipeline cache), and the ops of a call may need dozens.  The
 * calling thread queues each new pipeline and records on (commands wait on
 * the host until their frame goes: vk_commands.c), so the builds run side by
 * side while recording finds the next ones.  A VkPipelineCache without
 * EXTERNALLY_SYNCHRONIZED is internally synchronized, so the threads share it.
 *
 * As many threads as options.num_threads, else DIFKERN_THREADS, else online
 * cores say (at most DK_VK_COMPILE_THREADS), started at the first pipeline to
 * build, ended with the context.  Where none can be started the caller builds
 * each pipeline itself, as it is asked for. */
#include "vk_internal.h"

#include <stdio.h>

static int vkcomp_worker(void *arg) {
    dk_vk_state *s = (dk_vk_state *)arg;
    struct dk_vk_compiler *c = &s->compile;
    (void)mtx_lock(&c->lock);
    for (;;) {
        dk_vk_pipeline *p;
        while (!c->head && !c->stop) (void)cnd_wait(&c->work, &c->lock);
        if (c->stop) break;
        p = c->head;
        c->head = p->next;
        if (!c->head) c->tail = NULL;
        p->next = NULL;
        p->state = DK_VK_PIPE_BUILDING;
        (void)mtx_unlock(&c->lock);
        {
            VkResult r = dk__vk_pipeline_build(s, p);
            (void)mtx_lock(&c->lock);
            p->result = r;
            p->state = r == VK_SUCCESS ? DK_VK_PIPE_READY : DK_VK_PIPE_FAILED;
        }
        (void)cnd_broadcast(&c->done);
    }
    (void)mtx_unlock(&c->lock);
    return 0;
}

/* Lock, conditions and threads, once; 0 if there are none. */
static int vkcomp_start(dk_vk_state *s) {
    struct dk_vk_compiler *c = &s->compile;
    if (c->nthreads > 0) return 1;
    if (c->sync_ok < 0) return 0; /* tried before and failed */
    if (!c->sync_ok) {
        if (mtx_init(&c->lock, mtx_plain) != thrd_success) return c->sync_ok = -1, 0;
        if (cnd_init(&c->work) != thrd_success) {
            mtx_destroy(&c->lock);
            return c->sync_ok = -1, 0;
        }
        if (cnd_init(&c->done) != thrd_success) {
            cnd_destroy(&c->work);
            mtx_destroy(&c->lock);
            return c->sync_ok = -1, 0;
        }
        c->sync_ok = 1;
    }
    while (c->nthreads < c->want && thrd_create(&c->threads[c->nthreads], vkcomp_worker, s) == thrd_success)
        c->nthreads++;
    return c->nthreads > 0;
}

void dk__vk_compile_queue(dk_vk_state *s, dk_vk_pipeline *p) {
    struct dk_vk_compiler *c = &s->compile;
    if (!vkcomp_start(s)) { /* no compile threads: build it now */
        p->result = dk__vk_pipeline_build(s, p);
        p->state = p->result == VK_SUCCESS ? DK_VK_PIPE_READY : DK_VK_PIPE_FAILED;
        return;
    }
    p->state = DK_VK_PIPE_QUEUED;
    p->next = NULL;
    (void)mtx_lock(&c->lock);
    if (c->tail) c->tail->next = p;
    else c->head = p;
    c->tail = p;
    (void)cnd_signal(&c->work);
    (void)mtx_unlock(&c->lock);
}

int dk__vk_compile_ready(dk_vk_state *s, const dk_vk_pipeline *p) {
    struct dk_vk_compiler *c = &s->compile;
    int ready;
    if (c->nthreads == 0) return p->state == DK_VK_PIPE_READY || p->state == DK_VK_PIPE_FAILED;
    (void)mtx_lock(&c->lock);
    ready = p->state == DK_VK_PIPE_READY || p->state == DK_VK_PIPE_FAILED;
    (void)mtx_unlock(&c->lock);
    return ready;
}

dk_status dk__vk_compile_wait(dk_context *ctx, dk_vk_pipeline *p, VkPipeline *out) {
    dk_vk_state *s = dk__vk(ctx);
    struct dk_vk_compiler *c = &s->compile;
    dk_vk_pipeline_state state;
    VkResult r;
    if (c->nthreads > 0) {
        (void)mtx_lock(&c->lock);
        while (p->state == DK_VK_PIPE_QUEUED || p->state == DK_VK_PIPE_BUILDING) (void)cnd_wait(&c->done, &c->lock);
        (void)mtx_unlock(&c->lock);
    }
    state = p->state;
    r = p->result;
    if (state != DK_VK_PIPE_READY) {
        char what[128];
        snprintf(what, sizeof what, "vkCreateComputePipelines (shader %u, specialization %u %u %u %u)", p->shader,
                 p->spec[0], p->spec[1], p->spec[2], p->spec[3]);
        return dk__vk_result(ctx, r, what);
    }
    *out = p->pipeline;
    return DK_OK;
}

void dk__vk_compile_stop(dk_vk_state *s) {
    struct dk_vk_compiler *c = &s->compile;
    uint32_t i;
    if (c->sync_ok <= 0) return;
    (void)mtx_lock(&c->lock);
    c->stop = 1;
    (void)cnd_broadcast(&c->work);
    (void)mtx_unlock(&c->lock);
    for (i = 0; i < c->nthreads; i++) (void)thrd_join(c->threads[i], NULL);
    c->nthreads = 0;
    c->head = c->tail = NULL;
    cnd_destroy(&c->done);
    cnd_destroy(&c->work);
    mtx_destroy(&c->lock);
    c->sync_ok = 0;
}
