/* Vulkan backend: a frame's commands, kept on the host while the frame records
 * and written into its command buffer when it goes (vk_submit.c).  A dispatch
 * names its pipeline, which may still be building on a compile thread
 * (vk_compile.c): recording runs ahead and finds the next pipelines to build
 * while the first build, and only the frame's writing waits for them. */
#include "vk_internal.h"

#include <stdlib.h>

/* A new command at the end of the current frame's list; NULL (and the frame
 * marked failed) when host memory runs out. */
static dk_vk_cmd *vkcmd_add(dk_vk_state *s, dk_vk_cmd_kind kind) {
    dk_vk_frame *f = &s->frames[s->cur];
    dk_vk_cmd *c;
    if (f->ncmds == f->capcmds) {
        uint32_t cap = f->capcmds ? f->capcmds * 2 : 256;
        dk_vk_cmd *n = (dk_vk_cmd *)realloc(f->cmds, (size_t)cap * sizeof *n);
        if (!n) {
            f->no_memory = 1;
            return NULL;
        }
        f->cmds = n;
        f->capcmds = cap;
    }
    c = &f->cmds[f->ncmds++];
    c->kind = kind;
    return c;
}

void dk__vk_cmd_barrier(dk_vk_state *s, VkPipelineStageFlags src_stages, VkPipelineStageFlags dst_stages,
                        VkAccessFlags src_access, VkAccessFlags dst_access) {
    dk_vk_cmd *c = vkcmd_add(s, DK_VKC_BARRIER);
    if (!c) return;
    c->u.barrier.src_stages = src_stages;
    c->u.barrier.dst_stages = dst_stages;
    c->u.barrier.src_access = src_access;
    c->u.barrier.dst_access = dst_access;
}

void dk__vk_cmd_buffer_barriers(dk_vk_state *s, const VkBufferMemoryBarrier *b, uint32_t n) {
    dk_vk_frame *f = &s->frames[s->cur];
    dk_vk_cmd *c;
    if (f->nbarriers + n > f->capbarriers) {
        uint32_t cap = f->capbarriers ? f->capbarriers : 64;
        VkBufferMemoryBarrier *nb;
        while (cap < f->nbarriers + n) cap *= 2;
        nb = (VkBufferMemoryBarrier *)realloc(f->barriers, (size_t)cap * sizeof *nb);
        if (!nb) {
            f->no_memory = 1;
            return;
        }
        f->barriers = nb;
        f->capbarriers = cap;
    }
    c = vkcmd_add(s, DK_VKC_BUFFER_BARRIERS);
    if (!c) return;
    if (n) memcpy(&f->barriers[f->nbarriers], b, (size_t)n * sizeof *b);
    c->u.buffer_barriers.first = f->nbarriers;
    c->u.buffer_barriers.count = n;
    f->nbarriers += n;
}

void dk__vk_cmd_dispatch(dk_vk_state *s, dk_vk_pipeline *p, const VkDescriptorBufferInfo *info, uint64_t gx,
                         uint32_t gy, uint32_t gz) {
    dk_vk_cmd *c = vkcmd_add(s, DK_VKC_DISPATCH);
    if (!c) return;
    c->u.dispatch.pipeline = p;
    memcpy(c->u.dispatch.info, info, sizeof c->u.dispatch.info);
    c->u.dispatch.gx = gx;
    c->u.dispatch.gy = gy;
    c->u.dispatch.gz = gz;
}

void dk__vk_cmd_copy(dk_vk_state *s, VkBuffer src, VkBuffer dst, const VkBufferCopy *region) {
    dk_vk_cmd *c = vkcmd_add(s, DK_VKC_COPY);
    if (!c) return;
    c->u.copy.src = src;
    c->u.copy.dst = dst;
    c->u.copy.region = *region;
}

void dk__vk_cmd_fill(dk_vk_state *s, VkBuffer buffer, VkDeviceSize offset, VkDeviceSize size, uint32_t data) {
    dk_vk_cmd *c = vkcmd_add(s, DK_VKC_FILL);
    if (!c) return;
    c->u.fill.buffer = buffer;
    c->u.fill.offset = offset;
    c->u.fill.size = size;
    c->u.fill.data = data;
}

void dk__vk_cmd_timestamp(dk_vk_state *s, VkPipelineStageFlagBits stage, VkQueryPool pool, uint32_t query) {
    dk_vk_cmd *c = vkcmd_add(s, DK_VKC_TIMESTAMP);
    if (!c) return;
    c->u.timestamp.stage = stage;
    c->u.timestamp.pool = pool;
    c->u.timestamp.query = query;
}

void dk__vk_cmd_reset_queries(dk_vk_state *s, VkQueryPool pool, uint32_t first, uint32_t count) {
    dk_vk_cmd *c = vkcmd_add(s, DK_VKC_RESET_QUERIES);
    if (!c) return;
    c->u.reset.pool = pool;
    c->u.reset.first = first;
    c->u.reset.count = count;
}

/* Ready pipelines stay ready: first_unready only moves forward. */
int dk__vk_cmds_ready(dk_vk_state *s, dk_vk_frame *f) {
    for (; f->first_unready < f->ncmds; f->first_unready++) {
        const dk_vk_cmd *c = &f->cmds[f->first_unready];
        if (c->kind == DK_VKC_DISPATCH && !dk__vk_compile_ready(s, c->u.dispatch.pipeline)) return 0;
    }
    return 1;
}

/* Record f's commands into f->cmd (begun and ended here), each dispatch once
 * its pipeline is built. */
dk_status dk__vk_cmds_write(dk_context *ctx, dk_vk_frame *f) {
    dk_vk_state *s = dk__vk(ctx);
    const uint32_t maxx = s->props.limits.maxComputeWorkGroupCount[0];
    VkCommandBufferBeginInfo bi;
    VkPipeline bound = VK_NULL_HANDLE;
    VkResult r;
    dk_status st = DK_OK;
    uint32_t i, k;
    if (f->no_memory) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "vulkan backend: out of host memory for commands");
    r = s->vk.vkResetCommandBuffer(f->cmd, 0);
    if (r != VK_SUCCESS) return dk__vk_result(ctx, r, "vkResetCommandBuffer");
    memset(&bi, 0, sizeof bi);
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    r = s->vk.vkBeginCommandBuffer(f->cmd, &bi);
    if (r != VK_SUCCESS) return dk__vk_result(ctx, r, "vkBeginCommandBuffer");
    for (i = 0; i < f->ncmds && st == DK_OK; i++) {
        const dk_vk_cmd *c = &f->cmds[i];
        switch (c->kind) {
        case DK_VKC_BARRIER: {
            VkMemoryBarrier mb;
            memset(&mb, 0, sizeof mb);
            mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
            mb.srcAccessMask = c->u.barrier.src_access;
            mb.dstAccessMask = c->u.barrier.dst_access;
            s->vk.vkCmdPipelineBarrier(f->cmd, c->u.barrier.src_stages, c->u.barrier.dst_stages, 0, 1, &mb, 0, NULL,
                                       0, NULL);
            break;
        }
        case DK_VKC_BUFFER_BARRIERS: /* dk__vk_access's, between the compute and transfer stages */
            s->vk.vkCmdPipelineBarrier(f->cmd, DK_VK_DEP_STAGES, DK_VK_DEP_STAGES, 0, 0, NULL, c->u.buffer_barriers.count,
                                       f->barriers + c->u.buffer_barriers.first, 0, NULL);
            break;
        case DK_VKC_DISPATCH: {
            VkWriteDescriptorSet wr[DK_VK_BINDINGS];
            VkPipeline pipe = VK_NULL_HANDLE;
            uint64_t x0;
            st = dk__vk_compile_wait(ctx, c->u.dispatch.pipeline, &pipe);
            if (st != DK_OK) break;
            if (pipe != bound) {
                s->vk.vkCmdBindPipeline(f->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
                bound = pipe;
            }
            for (k = 0; k < DK_VK_BINDINGS; k++) {
                memset(&wr[k], 0, sizeof wr[k]);
                wr[k].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
                wr[k].dstBinding = k;
                wr[k].descriptorCount = 1;
                wr[k].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
                wr[k].pBufferInfo = &c->u.dispatch.info[k];
            }
            s->vk.vkCmdPushDescriptorSetKHR(f->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, s->pipeline_layout, 0,
                                            DK_VK_BINDINGS, wr);
            /* Grids wider than the device allows run as several dispatches,
             * each told its first workgroup by the push constant. */
            for (x0 = 0; x0 < c->u.dispatch.gx; x0 += maxx) {
                uint32_t base = (uint32_t)x0;
                uint64_t cnt = c->u.dispatch.gx - x0 < maxx ? c->u.dispatch.gx - x0 : maxx;
                s->vk.vkCmdPushConstants(f->cmd, s->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 4, &base);
                s->vk.vkCmdDispatch(f->cmd, (uint32_t)cnt, c->u.dispatch.gy, c->u.dispatch.gz);
            }
            break;
        }
        case DK_VKC_COPY: s->vk.vkCmdCopyBuffer(f->cmd, c->u.copy.src, c->u.copy.dst, 1, &c->u.copy.region); break;
        case DK_VKC_FILL:
            s->vk.vkCmdFillBuffer(f->cmd, c->u.fill.buffer, c->u.fill.offset, c->u.fill.size, c->u.fill.data);
            break;
        case DK_VKC_TIMESTAMP:
            s->vk.vkCmdWriteTimestamp(f->cmd, c->u.timestamp.stage, c->u.timestamp.pool, c->u.timestamp.query);
            break;
        case DK_VKC_RESET_QUERIES:
            s->vk.vkCmdResetQueryPool(f->cmd, c->u.reset.pool, c->u.reset.first, c->u.reset.count);
            break;
        }
    }
    r = s->vk.vkEndCommandBuffer(f->cmd);
    if (st != DK_OK) return st;
    if (r != VK_SUCCESS) return dk__vk_result(ctx, r, "vkEndCommandBuffer");
    return DK_OK;
}

void dk__vk_cmds_clear(dk_vk_frame *f) {
    f->ncmds = 0;
    f->nbarriers = 0;
    f->first_unready = 0;
    f->no_memory = 0;
}

void dk__vk_cmds_free(dk_vk_frame *f) {
    free(f->cmds);
    free(f->barriers);
    f->cmds = NULL;
    f->barriers = NULL;
    f->capcmds = f->capbarriers = 0;
    dk__vk_cmds_clear(f);
}
