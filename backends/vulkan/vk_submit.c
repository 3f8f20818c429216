/* Vulkan backend command recording: frames (command buffer + fence + staging +
 * parameter slots) in flight, hazard tracking with buffer barriers only where a
 * data dependency needs one, dispatch, sync and timestamps.  A frame's commands
 * are kept on the host (vk_commands.c) and written into its command buffer when
 * it goes, so that recording never waits for a pipeline to build. */
#include "vk_internal.h"

#include <stdio.h>
#include <stdlib.h>

#define VKSUB_MAX_BUFFER_BARRIERS 32

dk_status dk__vk_frames_create(dk_context *ctx) {
    dk_vk_state *s = dk__vk(ctx);
    VkCommandPoolCreateInfo pi;
    VkCommandBufferAllocateInfo ai;
    VkCommandBuffer cmds[DK_VK_FRAMES + 1];
    VkFenceCreateInfo fi;
    VkResult r;
    uint32_t i;
    memset(&pi, 0, sizeof pi);
    pi.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
    pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pi.queueFamilyIndex = s->queue_family;
    r = s->vk.vkCreateCommandPool(s->device, &pi, NULL, &s->command_pool);
    if (r != VK_SUCCESS) return dk__vk_result(ctx, r, "vkCreateCommandPool");
    memset(&ai, 0, sizeof ai);
    ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    ai.commandPool = s->command_pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = DK_VK_FRAMES + 1;
    r = s->vk.vkAllocateCommandBuffers(s->device, &ai, cmds);
    if (r != VK_SUCCESS) return dk__vk_result(ctx, r, "vkAllocateCommandBuffers");
    memset(&fi, 0, sizeof fi);
    fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    for (i = 0; i < DK_VK_FRAMES; i++) {
        s->frames[i].cmd = cmds[i];
        r = s->vk.vkCreateFence(s->device, &fi, NULL, &s->frames[i].fence);
        if (r != VK_SUCCESS) return dk__vk_result(ctx, r, "vkCreateFence");
    }
    s->aside_cmd = cmds[DK_VK_FRAMES];
    r = s->vk.vkCreateFence(s->device, &fi, NULL, &s->aside_fence);
    if (r != VK_SUCCESS) return dk__vk_result(ctx, r, "vkCreateFence");
    /* Device timestamps when the queue family has them. */
    {
        uint32_t n = 0;
        VkQueueFamilyProperties qp[32];
        vkGetPhysicalDeviceQueueFamilyProperties(s->physical, &n, NULL);
        if (n > 32) n = 32;
        vkGetPhysicalDeviceQueueFamilyProperties(s->physical, &n, qp);
        if (s->queue_family < n && qp[s->queue_family].timestampValidBits > 0 &&
            s->props.limits.timestampPeriod > 0.0f) {
            VkQueryPoolCreateInfo qi;
            memset(&qi, 0, sizeof qi);
            qi.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
            qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
            qi.queryCount = 2;
            if (s->vk.vkCreateQueryPool(s->device, &qi, NULL, &s->query_pool) == VK_SUCCESS) s->timer_device = 1;
            if (ctx->knobs.vulkan_trace) {
                s->trace_cap = 8192; /* dispatches */
                qi.queryCount = 2 * s->trace_cap;
                s->trace_rec = (struct dk_vk_trace_rec *)calloc(s->trace_cap, sizeof *s->trace_rec);
                if (!s->trace_rec || s->vk.vkCreateQueryPool(s->device, &qi, NULL, &s->trace_pool) != VK_SUCCESS)
                    s->trace_cap = 0;
            }
        }
    }
    return DK_OK;
}

static void vksub_release_frees(dk_vk_state *s, dk_vk_frame *f) {
    uint32_t i;
    for (i = 0; i < f->nfrees; i++) dk__vk_free_range(s, f->frees[i].block, f->frees[i].offset, f->frees[i].size);
    f->nfrees = 0;
}

void dk__vk_frames_destroy(dk_vk_state *s) {
    uint32_t i;
    for (i = 0; i < DK_VK_FRAMES; i++) {
        dk_vk_frame *f = &s->frames[i];
        vksub_release_frees(s, f);
        dk__vk_cmds_free(f);
        free(f->frees);
        dk__vk_free_block(s, f->staging);
        dk__vk_free_block(s, f->params);
        if (f->fence) s->vk.vkDestroyFence(s->device, f->fence, NULL);
    }
    dk__vk_free_block(s, s->aside_staging);
    if (s->aside_fence) s->vk.vkDestroyFence(s->device, s->aside_fence, NULL);
    if (s->command_pool) s->vk.vkDestroyCommandPool(s->device, s->command_pool, NULL);
    if (s->trace_pool) s->vk.vkDestroyQueryPool(s->device, s->trace_pool, NULL);
    free(s->trace_rec);
}

/* The trace: per dispatch its shader, specialization, workgroups, the device
 * times (us from the first) of the timestamps before (top of pipe, after any
 * barrier) and after (bottom of pipe) it, and when the host recorded it (us). */
void dk__vk_trace_print(dk_vk_state *s) {
    uint64_t *ts;
    uint32_t i;
    double us = (double)s->props.limits.timestampPeriod * 1e-3;
    if (!s->trace_n || s->lost) return;
    ts = (uint64_t *)malloc((size_t)s->trace_n * 2 * sizeof *ts);
    if (!ts) return;
    if (s->vk.vkGetQueryPoolResults(s->device, s->trace_pool, 0, 2 * s->trace_n, (size_t)s->trace_n * 2 * sizeof *ts,
                                    ts, sizeof *ts, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS)
        for (i = 0; i < s->trace_n; i++) {
            const struct dk_vk_trace_rec *r = &s->trace_rec[i];
            fprintf(stderr, "vktrace %u shader %u spec %u %u %u %u groups %llu %.3f %.3f host %.3f\n", i, r->shader,
                    r->spec[0], r->spec[1], r->spec[2], r->spec[3], (unsigned long long)r->groups,
                    (double)(ts[2 * i] - ts[0]) * us, (double)(ts[2 * i + 1] - ts[0]) * us,
                    (r->host_ms - s->trace_rec[0].host_ms) * 1e3);
        }
    free(ts);
}

/* Wait for a submitted frame and recycle what it held. */
static dk_status vksub_wait_frame(dk_context *ctx, dk_vk_frame *f) {
    dk_vk_state *s = dk__vk(ctx);
    VkResult r;
    if (!f->submitted) return DK_OK;
    r = s->vk.vkWaitForFences(s->device, 1, &f->fence, VK_TRUE, UINT64_MAX);
    if (r != VK_SUCCESS) return dk__vk_result(ctx, r, "vkWaitForFences");
    r = s->vk.vkResetFences(s->device, 1, &f->fence);
    if (r != VK_SUCCESS) return dk__vk_result(ctx, r, "vkResetFences");
    f->submitted = 0;
    if (f->serial > s->done_serial) s->done_serial = f->serial;
    vksub_release_frees(s, f);
    return DK_OK;
}

dk_status dk__vk_begin(dk_context *ctx) {
    dk_vk_state *s = dk__vk(ctx);
    dk_vk_frame *f = &s->frames[s->cur];
    dk_status st;
    if (s->lost) return dk__fail(ctx, DK_ERR_DEVICE_LOST, "vulkan backend: the device was lost; destroy the context");
    if (f->recording) return DK_OK;
    st = vksub_wait_frame(ctx, f);
    if (st != DK_OK) return st;
    dk__vk_cmds_clear(f);
    f->recording = 1;
    f->serial = ++s->next_serial;
    f->staging_used = 0;
    f->params_used = 0;
    /* The previous frame may still run: order everything after it. */
    dk__vk_cmd_barrier(s, DK_VK_DEP_STAGES, DK_VK_DEP_STAGES, DK_VK_DEP_SRC_ACCESS, DK_VK_DEP_DST_ACCESS);
    s->epoch++;
    s->ndirty = 0;
    return DK_OK;
}

/* Write the frame's commands (waiting for the pipelines they use) and submit.
 * A frame that cannot be written is dropped: its ops' outputs are undefined,
 * and the error says why. */
dk_status dk__vk_flush(dk_context *ctx) {
    dk_vk_state *s = dk__vk(ctx);
    dk_vk_frame *f = &s->frames[s->cur];
    VkSubmitInfo si;
    VkResult r;
    dk_status st;
    if (!f->recording) return DK_OK;
    f->recording = 0;
    st = dk__vk_cmds_write(ctx, f);
    dk__vk_cmds_clear(f);
    if (st != DK_OK) {
        vksub_release_frees(s, f);
        return st;
    }
    memset(&si, 0, sizeof si);
    si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    si.commandBufferCount = 1;
    si.pCommandBuffers = &f->cmd;
    r = s->vk.vkQueueSubmit(s->queue, 1, &si, f->fence);
    if (r != VK_SUCCESS) return dk__vk_result(ctx, r, "vkQueueSubmit");
    f->submitted = 1;
    s->cur = (s->cur + 1) % DK_VK_FRAMES;
    return DK_OK;
}

/* Wait until the work of submission serial (and everything before it) is done. */
dk_status dk__vk_wait_serial(dk_context *ctx, uint64_t serial) {
    dk_vk_state *s = dk__vk(ctx);
    dk_status st = DK_OK;
    uint32_t i;
    if (serial <= s->done_serial) return DK_OK;
    if (s->frames[s->cur].recording && s->frames[s->cur].serial <= serial) st = dk__vk_flush(ctx);
    /* Oldest first, so that done_serial only moves over finished work. */
    while (st == DK_OK) {
        dk_vk_frame *oldest = NULL;
        for (i = 0; i < DK_VK_FRAMES; i++) {
            dk_vk_frame *f = &s->frames[i];
            if (f->submitted && f->serial <= serial && (!oldest || f->serial < oldest->serial)) oldest = f;
        }
        if (!oldest) break;
        st = vksub_wait_frame(ctx, oldest);
    }
    return st;
}

dk_status dk__vk_wait_all(dk_context *ctx) {
    dk_vk_state *s = dk__vk(ctx);
    if (s->lost) return dk__fail(ctx, DK_ERR_DEVICE_LOST, "vulkan backend: the device was lost; destroy the context");
    return dk__vk_wait_serial(ctx, s->next_serial);
}

void dk__vk_forget(dk_vk_state *s, dk_vk_buf *b) {
    uint32_t i;
    for (i = 0; i < s->ndirty; i++)
        if (s->dirty[i] == b) s->dirty[i] = s->dirty[--s->ndirty];
}

/* Before a command touching bind[0..n): a barrier if it reads a buffer written
 * since the last barrier (RAW), or writes one read or written since then
 * (WAR/WAW).  The barrier makes every dirty buffer visible, so a new epoch starts. */
void dk__vk_access(dk_context *ctx, dk_vk_binding *bind, uint32_t n) {
    dk_vk_state *s = dk__vk(ctx);
    dk_vk_frame *f = &s->frames[s->cur];
    int need = 0;
    uint32_t i;
    for (i = 0; i < n; i++) {
        dk_vk_buf *b = bind[i].buf;
        if (!b) continue;
        if (b->write_epoch == s->epoch && bind[i].write != 2) need = 1;
        if (bind[i].write && b->read_epoch == s->epoch) need = 1;
    }
    if (need) {
        VkBufferMemoryBarrier bb[VKSUB_MAX_BUFFER_BARRIERS];
        uint32_t nb = 0;
        if (s->ndirty <= VKSUB_MAX_BUFFER_BARRIERS) {
            for (i = 0; i < s->ndirty; i++) {
                memset(&bb[nb], 0, sizeof bb[nb]);
                bb[nb].sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER;
                bb[nb].srcAccessMask = DK_VK_DEP_SRC_ACCESS;
                bb[nb].dstAccessMask = DK_VK_DEP_DST_ACCESS;
                bb[nb].srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
                bb[nb].dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
                bb[nb].buffer = s->dirty[i]->buffer;
                bb[nb].offset = s->dirty[i]->base;
                bb[nb].size = s->dirty[i]->size;
                nb++;
            }
            /* nb == 0: write-after-read only, an execution dependency suffices. */
            dk__vk_cmd_buffer_barriers(s, bb, nb);
        } else {
            dk__vk_cmd_barrier(s, DK_VK_DEP_STAGES, DK_VK_DEP_STAGES, DK_VK_DEP_SRC_ACCESS, DK_VK_DEP_DST_ACCESS);
        }
        s->epoch++;
        s->ndirty = 0;
    }
    for (i = 0; i < n; i++) {
        dk_vk_buf *b = bind[i].buf;
        if (!b) continue;
        b->last_serial = f->serial;
        if (bind[i].write) {
            b->write_serial = f->serial;
            if (b->write_epoch != s->epoch) {
                if (s->ndirty == s->capdirty) {
                    uint32_t cap = s->capdirty ? s->capdirty * 2 : 64;
                    dk_vk_buf **d = (dk_vk_buf **)realloc(s->dirty, cap * sizeof *d);
                    if (d) s->dirty = d, s->capdirty = cap;
                }
                /* Without room to track it, force a barrier before its next use. */
                if (s->ndirty < s->capdirty) s->dirty[s->ndirty++] = b;
                else s->epoch++;
            }
            b->write_epoch = s->epoch;
        } else {
            b->read_epoch = s->epoch;
        }
    }
}

/* After a dispatch: submit the frame being recorded at once where the device
 * has nothing else to run (every submitted frame done), or where it holds
 * s->eager_at dispatches (then it queues behind the running ones), so that
 * the device starts while the host records the rest.  eager_at starts at
 * DK_VK_EAGER_DISPATCHES when the device is found idle and doubles with each
 * submit while it is busy, up to a full frame: short frames while the device
 * would wait for the host, few frame boundaries (each a few us of device
 * time) once the host is ahead.  Submitting only full (512 dispatches) or
 * waited-for frames left the device idle while the host recorded a whole
 * sequence of ops (docs/vulkan-submission.md). */
static dk_status vksub_eager(dk_context *ctx) {
    dk_vk_state *s = dk__vk(ctx);
    dk_vk_frame *f = &s->frames[s->cur];
    int busy = 0;
    uint32_t i;
    /* (Not between dk_timer_begin and dk_timer_end: the device timestamps
     * would then also measure the host's recording between submits.) */
    if (!s->eager || !f->recording || (s->timer_running && s->timer_device)) return DK_OK;
    /* A frame waiting for a pipeline to build goes later: recording on finds
     * the next pipelines to build meanwhile. */
    if (!dk__vk_cmds_ready(s, f)) return DK_OK;
    for (i = 0; i < DK_VK_FRAMES && !busy; i++)
        busy = i != s->cur && s->frames[i].submitted &&
               s->vk.vkGetFenceStatus(s->device, s->frames[i].fence) == VK_NOT_READY;
    if (!busy) {
        s->eager_at = DK_VK_EAGER_DISPATCHES;
    } else {
        if (f->params_used < s->eager_at) return DK_OK;
        s->eager_at = s->eager_at * 2 < DK_VK_PARAM_SLOTS ? s->eager_at * 2 : DK_VK_PARAM_SLOTS;
    }
    return dk__vk_flush(ctx);
}

dk_status dk__vk_dispatch(dk_context *ctx, uint32_t shader, const uint32_t *spec, dk_vk_binding *bind,
                          const void *params, size_t param_bytes, uint64_t gx, uint32_t gy, uint32_t gz) {
    dk_vk_state *s = dk__vk(ctx);
    const uint32_t *maxc = s->props.limits.maxComputeWorkGroupCount;
    VkDescriptorBufferInfo info[DK_VK_BINDINGS];
    dk_vk_pipeline *pipe;
    dk_vk_frame *f;
    uint64_t slot_off;
    uint32_t i, tr;
    dk_status st;
    if (gx == 0 || gy == 0 || gz == 0) return DK_OK;
    if (gy > maxc[1] || gz > maxc[2])
        return dk__fail(ctx, DK_ERR_UNSUPPORTED, "vulkan backend: grid %ux%u (y, z) exceeds the device limit %ux%u", gy,
                        gz, maxc[1], maxc[2]);
    if (param_bytes > DK_VK_PARAM_BYTES) return dk__fail(ctx, DK_ERR_INTERNAL, "vulkan backend: too many parameters");
    st = dk__vk_pipeline(ctx, shader, spec, &pipe);
    if (st != DK_OK) return st;
    st = dk__vk_begin(ctx);
    if (st != DK_OK) return st;
    if (s->frames[s->cur].params_used == DK_VK_PARAM_SLOTS) {
        st = dk__vk_flush(ctx);
        if (st == DK_OK) st = dk__vk_begin(ctx);
        if (st != DK_OK) return st;
    }
    f = &s->frames[s->cur];
    if (!f->params) {
        st = dk__vk_host_block(ctx, (uint64_t)DK_VK_PARAM_SLOTS * DK_VK_PARAM_BYTES, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                               &f->params);
        if (st != DK_OK) return st;
    }
    slot_off = (uint64_t)f->params_used++ * DK_VK_PARAM_BYTES;
    memcpy((unsigned char *)f->params->mapped + slot_off, params, param_bytes);

    for (i = 0; i < DK_VK_BINDINGS; i++) {
        if (i < DK_VK_BINDINGS - 1 && bind[i].buf) {
            info[i].buffer = bind[i].buf->buffer;
            info[i].offset = bind[i].offset;
            info[i].range = bind[i].range;
        } else { /* the parameter slot; also stands in for unused bindings */
            info[i].buffer = f->params->buffer;
            info[i].offset = slot_off;
            info[i].range = DK_VK_PARAM_BYTES;
        }
    }
    dk__vk_access(ctx, bind, DK_VK_BINDINGS - 1);
    tr = s->trace_n < s->trace_cap ? s->trace_n++ : UINT32_MAX;
    if (tr != UINT32_MAX) {
        if (tr == 0) dk__vk_cmd_reset_queries(s, s->trace_pool, 0, 2 * s->trace_cap);
        dk__vk_cmd_timestamp(s, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, s->trace_pool, 2 * tr);
        s->trace_rec[tr].shader = shader;
        memcpy(s->trace_rec[tr].spec, spec, sizeof s->trace_rec[tr].spec);
        s->trace_rec[tr].groups = gx * gy * gz;
        s->trace_rec[tr].host_ms = dk__now_ms();
    }
    dk__vk_cmd_dispatch(s, pipe, info, gx, gy, gz);
    if (tr != UINT32_MAX) dk__vk_cmd_timestamp(s, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, s->trace_pool, 2 * tr + 1);
    return vksub_eager(ctx);
}

dk_status dk__vk_sync(dk_context *ctx) {
    dk_vk_state *s = dk__vk(ctx);
    dk_status st = dk__vk_wait_all(ctx);
    if (st != DK_OK) return st;
    {
        char msg[sizeof s->validation_msg];
        int n;
        if (s->msg_lock_ok) (void)mtx_lock(&s->msg_lock);
        n = s->validation_errors;
        s->validation_errors = 0;
        memcpy(msg, s->validation_msg, sizeof msg);
        if (s->msg_lock_ok) (void)mtx_unlock(&s->msg_lock);
        if (n) return dk__fail(ctx, DK_ERR_INTERNAL, "vulkan backend: %d validation message(s); first: %s", n, msg);
    }
    return DK_OK;
}

dk_status dk__vk_timer_begin(dk_context *ctx) {
    dk_vk_state *s = dk__vk(ctx);
    dk_status st;
    if (!s->timer_device) {
        st = dk__vk_wait_all(ctx);
        s->timer_host_start = dk__now_ms();
        s->timer_running = st == DK_OK;
        return st;
    }
    st = dk__vk_begin(ctx);
    if (st != DK_OK) return st;
    s->timer_running = 1;
    dk__vk_cmd_reset_queries(s, s->query_pool, 0, 2);
    dk__vk_cmd_timestamp(s, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, s->query_pool, 0);
    return DK_OK;
}

dk_status dk__vk_timer_end(dk_context *ctx, double *ms) {
    dk_vk_state *s = dk__vk(ctx);
    uint64_t ts[2];
    VkResult r;
    dk_status st;
    if (!s->timer_running) return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "dk_timer_end: no dk_timer_begin before it");
    s->timer_running = 0;
    if (!s->timer_device) {
        st = dk__vk_wait_all(ctx);
        *ms = dk__now_ms() - s->timer_host_start;
        return st;
    }
    st = dk__vk_begin(ctx);
    if (st != DK_OK) return st;
    dk__vk_cmd_timestamp(s, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, s->query_pool, 1);
    st = dk__vk_wait_all(ctx);
    if (st != DK_OK) return st;
    r = s->vk.vkGetQueryPoolResults(s->device, s->query_pool, 0, 2, sizeof ts, ts, sizeof ts[0],
                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (r != VK_SUCCESS) return dk__vk_result(ctx, r, "vkGetQueryPoolResults");
    *ms = (double)(ts[1] - ts[0]) * (double)s->props.limits.timestampPeriod * 1e-6;
    return DK_OK;
}

#undef VKSUB_MAX_BUFFER_BARRIERS
