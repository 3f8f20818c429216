/* CPU backend: the table, host-memory buffers and the host-clock timer.
 * Ops run synchronously on the calling thread plus the context's worker pool,
 * so dk_sync has nothing to wait for. */
#include "cpu_internal.h"

#include <stdlib.h>
#include <stdio.h>

static dk_status cpubk_create(dk_context *ctx, const dk_context_options *o) {
    dk_cpu_state *s = (dk_cpu_state *)calloc(1, sizeof *s);
    int32_t threads = o->num_threads;
    dk_status st;
    if (!s) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "cpu backend: out of host memory");
    if (o->external_stream || o->vk_device)
        return free(s), dk__fail(ctx, DK_ERR_UNSUPPORTED,
                                 "cpu backend: options->external_stream / vk_device are for GPU backends");
    if (threads == 0) threads = (int32_t)ctx->knobs.threads; /* DIFKERN_THREADS, 0: unset */
    if (threads == 0) threads = dk__core_count();
    st = dk__cpu_pool_create(ctx, threads, &s->pool);
    if (st != DK_OK) {
        free(s);
        return st;
    }
    ctx->backend = s;
    dk__strlcpy(ctx->device_name, "host CPU", sizeof ctx->device_name);
    snprintf(ctx->description, sizeof ctx->description, "cpu backend: %d threads, fp32 blocked GEMM core",
             (int)dk__cpu_pool_size(s->pool));
    return DK_OK;
}

static void cpubk_destroy(dk_context *ctx) {
    dk_cpu_state *s = dk__cpu_state(ctx);
    if (!s) return;
    dk__cpu_pool_destroy(s->pool);
    free(s);
    ctx->backend = NULL;
}

static dk_status cpubk_sync(dk_context *ctx) {
    (void)ctx;
    return DK_OK;
}

/* 64-byte alignment: whole cache lines, and any vector width the compiler picks. */
static dk_status cpubk_buffer_create(dk_context *ctx, dk_buffer *b) {
    uint64_t padded = (b->size + 63u) & ~(uint64_t)63u;
    void *p;
    if (padded > (uint64_t)SIZE_MAX) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "cpu backend: buffer too large");
    p = aligned_alloc(64, (size_t)padded);
    if (!p)
        return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "dk_buffer_create: cannot allocate %llu bytes of host memory",
                        (unsigned long long)b->size);
    b->impl = p;
    return DK_OK;
}

static dk_status cpubk_buffer_wrap(dk_context *ctx, dk_buffer *b, const dk_external_memory *m) {
    if (m->kind != DK_EXTERNAL_HOST_POINTER)
        return dk__fail(ctx, DK_ERR_UNSUPPORTED,
                        "dk_buffer_wrap: the cpu backend wraps only DK_EXTERNAL_HOST_POINTER memory");
    b->impl = m->pointer;
    return DK_OK;
}

static void cpubk_buffer_destroy(dk_context *ctx, dk_buffer *b) {
    (void)ctx;
    if (!b->wrapped) free(b->impl);
    b->impl = NULL;
}

static dk_status cpubk_upload(dk_context *ctx, dk_buffer *b, uint64_t off, const void *src, uint64_t size) {
    (void)ctx;
    memmove(dk__cpu_ptr(b) + off, src, (size_t)size);
    return DK_OK;
}

static dk_status cpubk_download(dk_context *ctx, const dk_buffer *b, uint64_t off, void *dst, uint64_t size) {
    (void)ctx;
    memmove(dst, dk__cpu_ptr(b) + off, (size_t)size);
    return DK_OK;
}

static dk_status cpubk_fill(dk_context *ctx, dk_buffer *b, uint64_t off, uint64_t size, uint32_t pattern) {
    (void)ctx;
    unsigned char *p = dk__cpu_ptr(b) + off;
    uint64_t i;
    for (i = 0; i < size; i += 4) memcpy(p + i, &pattern, 4);
    return DK_OK;
}

static dk_status cpubk_timer_begin(dk_context *ctx) {
    dk__cpu_state(ctx)->timer_start_ms = dk__now_ms();
    return DK_OK;
}

static dk_status cpubk_timer_end(dk_context *ctx, double *ms) {
    *ms = dk__now_ms() - dk__cpu_state(ctx)->timer_start_ms;
    return DK_OK;
}

const dk_backend_ops dk__cpu_backend = {
    .kind = DK_BACKEND_CPU,
    .name = "cpu",
    .create = cpubk_create,
    .destroy = cpubk_destroy,
    .sync = cpubk_sync,
    .buffer_create = cpubk_buffer_create,
    .buffer_wrap = cpubk_buffer_wrap,
    .buffer_destroy = cpubk_buffer_destroy,
    .buffer_upload = cpubk_upload,
    .buffer_download = cpubk_download,
    .buffer_fill = cpubk_fill,
    .timer_begin = cpubk_timer_begin,
    .timer_end = cpubk_timer_end,
    .prepare_weight = dk__cpu_prepare_weight,
    .conv2d = dk__cpu_conv2d,
    .conv_transpose2d = dk__cpu_conv_transpose2d,
    .matmul = dk__cpu_matmul,
    .group_norm = dk__cpu_group_norm,
    .layer_norm = dk__cpu_layer_norm,
    .rms_norm = dk__cpu_rms_norm,
    .attention = dk__cpu_attention,
    .add = dk__cpu_add,
    .upsample_nearest = dk__cpu_upsample_nearest,
    .convert = dk__cpu_convert,
    /* .host_alloc, .host_free = NULL: host memory is plain malloc (dk_host_alloc) */
    /* .release_scratch = NULL: no scratch kept between ops */
    /* .conv_channel_multiple = NULL: every conv kernel takes any channel count */
    /* .conv3d_in_place = NULL: conv3d takes the staged lowering (src/conv3d.c) */
};
