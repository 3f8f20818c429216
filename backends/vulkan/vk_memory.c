/* Vulkan backend memory: device-local blocks suballocated with a first-fit free
 * list, host-visible staging, and the buffer entries (create, wrap, destroy,
 * upload, download, fill). */
#include "vk_internal.h"

#include <stdlib.h>

static uint64_t vkmem_align(const dk_vk_state *s) {
    uint64_t a = s->props.limits.minStorageBufferOffsetAlignment;
    return a > 256 ? a : 256;
}

static dk_status vkmem_new_block(dk_context *ctx, uint64_t size, uint32_t type, VkBufferUsageFlags usage,
                                 int map, dk_vk_block **out) {
    dk_vk_state *s = dk__vk(ctx);
    uint32_t heap = s->memprops.memoryTypes[type].heapIndex;
    dk_vk_block *blk;
    VkBufferCreateInfo bi;
    VkMemoryRequirements req;
    VkMemoryAllocateInfo ai;
    VkResult r;
    if (size > s->memprops.memoryHeaps[heap].size)
        return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "vulkan backend: %llu bytes exceed the memory heap (%llu bytes)",
                        (unsigned long long)size, (unsigned long long)s->memprops.memoryHeaps[heap].size);
    blk = (dk_vk_block *)calloc(1, sizeof *blk);
    if (!blk) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "vulkan backend: out of host memory");
    memset(&bi, 0, sizeof bi);
    bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bi.size = size;
    bi.usage = usage;
    r = s->vk.vkCreateBuffer(s->device, &bi, NULL, &blk->buffer);
    if (r != VK_SUCCESS) {
        free(blk);
        return dk__vk_result(ctx, r, "vkCreateBuffer");
    }
    s->vk.vkGetBufferMemoryRequirements(s->device, blk->buffer, &req);
    memset(&ai, 0, sizeof ai);
    ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = type;
    r = s->vk.vkAllocateMemory(s->device, &ai, NULL, &blk->memory);
    if (r == VK_SUCCESS) r = s->vk.vkBindBufferMemory(s->device, blk->buffer, blk->memory, 0);
    if (r == VK_SUCCESS && map) r = s->vk.vkMapMemory(s->device, blk->memory, 0, VK_WHOLE_SIZE, 0, &blk->mapped);
    if (r != VK_SUCCESS) {
        dk__vk_free_block(s, blk);
        if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_MEMORY_MAP_FAILED)
            return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "vulkan backend: cannot allocate %llu bytes of %s memory",
                            (unsigned long long)size, map ? "host-visible" : "device");
        return dk__vk_result(ctx, r, "vkAllocateMemory");
    }
    blk->size = size;
    *out = blk;
    return DK_OK;
}

void dk__vk_free_block(dk_vk_state *s, dk_vk_block *blk) {
    if (!blk) return;
    if (blk->buffer) s->vk.vkDestroyBuffer(s->device, blk->buffer, NULL);
    if (blk->memory) s->vk.vkFreeMemory(s->device, blk->memory, NULL);
    dk__host_pages_free(blk->host_pages); /* after the memory that imported it */
    free(blk->free);
    free(blk);
}

/* A dk_host_alloc block of difkern's own host memory (huge pages, already
 * faulted in: src/host_pages.c) imported through VK_EXT_external_memory_host:
 * on the H100 (NVIDIA 580) allocating host-visible memory of the device pinned
 * at ~0.5 s per GiB, as cuMemAllocHost does.  NULL (nothing to report) when
 * the import is not possible; the caller then allocates device memory. */
static dk_vk_block *vkmem_import_block(dk_vk_state *s, uint64_t size) {
    const uint64_t page = (uint64_t)2 << 20, a = s->host_import_align;
    uint64_t n = (size + a - 1) / a * a;
    VkMemoryHostPointerPropertiesEXT hp;
    VkExternalMemoryBufferCreateInfo eb;
    VkImportMemoryHostPointerInfoEXT im;
    VkBufferCreateInfo bi;
    VkMemoryRequirements req;
    VkMemoryAllocateInfo ai;
    dk_vk_block *blk;
    uint32_t i, bits, type = UINT32_MAX;
    if (!a || page % a != 0 || !s->vk.vkGetMemoryHostPointerPropertiesEXT) return NULL;
    blk = (dk_vk_block *)calloc(1, sizeof *blk);
    if (!blk) return NULL;
    blk->host_pages = dk__host_pages_alloc(size); /* 2 MiB-aligned and -rounded: covers n */
    memset(&hp, 0, sizeof hp);
    hp.sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT;
    if (!blk->host_pages || s->vk.vkGetMemoryHostPointerPropertiesEXT(s->device,
            VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, blk->host_pages, &hp) != VK_SUCCESS) {
        dk__vk_free_block(s, blk);
        return NULL;
    }
    memset(&eb, 0, sizeof eb);
    eb.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO;
    eb.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    memset(&bi, 0, sizeof bi);
    bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bi.pNext = &eb;
    bi.size = n;
    bi.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    if (s->vk.vkCreateBuffer(s->device, &bi, NULL, &blk->buffer) != VK_SUCCESS) {
        blk->buffer = VK_NULL_HANDLE;
        dk__vk_free_block(s, blk);
        return NULL;
    }
    s->vk.vkGetBufferMemoryRequirements(s->device, blk->buffer, &req);
    /* host-coherent, as the staging type: copies are waited for, never flushed */
    bits = hp.memoryTypeBits & req.memoryTypeBits;
    for (i = 0; i < s->memprops.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = s->memprops.memoryTypes[i].propertyFlags;
        if (!(bits & (1u << i)) || !(f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)) continue;
        if (type == UINT32_MAX || (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT)) type = i;
    }
    if (type == UINT32_MAX || req.size > n) {
        dk__vk_free_block(s, blk);
        return NULL;
    }
    memset(&im, 0, sizeof im);
    im.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT;
    im.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    im.pHostPointer = blk->host_pages;
    memset(&ai, 0, sizeof ai);
    ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    ai.pNext = &im;
    ai.allocationSize = n;
    ai.memoryTypeIndex = type;
    if (s->vk.vkAllocateMemory(s->device, &ai, NULL, &blk->memory) != VK_SUCCESS) {
        blk->memory = VK_NULL_HANDLE;
        dk__vk_free_block(s, blk);
        return NULL;
    }
    if (s->vk.vkBindBufferMemory(s->device, blk->buffer, blk->memory, 0) != VK_SUCCESS) {
        dk__vk_free_block(s, blk);
        return NULL;
    }
    blk->mapped = blk->host_pages;
    blk->size = size;
    return blk;
}

dk_status dk__vk_host_block(dk_context *ctx, uint64_t size, VkBufferUsageFlags usage, dk_vk_block **out) {
    return vkmem_new_block(ctx, size, dk__vk(ctx)->host_type_index, usage, 1, out);
}

static int vkmem_insert_free(dk_vk_block *blk, uint32_t at, uint64_t offset, uint64_t size) {
    if (blk->nfree == blk->capfree) {
        uint32_t cap = blk->capfree ? blk->capfree * 2 : 16;
        dk_vk_range *f = (dk_vk_range *)realloc(blk->free, cap * sizeof *f);
        if (!f) return 0;
        blk->free = f;
        blk->capfree = cap;
    }
    memmove(blk->free + at + 1, blk->free + at, (blk->nfree - at) * sizeof *blk->free);
    blk->free[at].offset = offset;
    blk->free[at].size = size;
    blk->nfree++;
    return 1;
}

/* Return a range to its block, merging with its neighbours; a dedicated block
 * goes back to the driver. */
void dk__vk_free_range(dk_vk_state *s, dk_vk_block *blk, uint64_t offset, uint64_t size) {
    uint32_t i = 0;
    if (blk->dedicated) {
        dk_vk_block **pp = &s->blocks;
        while (*pp && *pp != blk) pp = &(*pp)->next;
        if (*pp) *pp = blk->next;
        dk__vk_free_block(s, blk);
        return;
    }
    while (i < blk->nfree && blk->free[i].offset < offset) i++;
    if (i > 0 && blk->free[i - 1].offset + blk->free[i - 1].size == offset) {
        blk->free[i - 1].size += size;
        if (i < blk->nfree && offset + size == blk->free[i].offset) {
            blk->free[i - 1].size += blk->free[i].size;
            memmove(blk->free + i, blk->free + i + 1, (blk->nfree - i - 1) * sizeof *blk->free);
            blk->nfree--;
        }
        return;
    }
    if (i < blk->nfree && offset + size == blk->free[i].offset) {
        blk->free[i].offset = offset;
        blk->free[i].size += size;
        return;
    }
    /* Out of host memory for the list: the range is lost until the context goes. */
    (void)vkmem_insert_free(blk, i, offset, size);
}

static const VkBufferUsageFlags vkmem_usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                              VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;

/* Suballocate size bytes (first fit); large requests get a dedicated block. */
dk_status dk__vk_alloc(dk_context *ctx, dk_vk_buf *b, uint64_t size) {
    dk_vk_state *s = dk__vk(ctx);
    uint64_t a = vkmem_align(s);
    uint64_t need = (size + a - 1) / a * a;
    dk_vk_block *blk;
    dk_status st;
    uint32_t i;
    if (need < size) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "vulkan backend: buffer size overflows");
    if (need <= DK_VK_BLOCK_SIZE / 2) {
        for (blk = s->blocks; blk; blk = blk->next) {
            if (blk->dedicated) continue;
            for (i = 0; i < blk->nfree; i++)
                if (blk->free[i].size >= need) break;
            if (i < blk->nfree) break;
        }
        if (!blk) {
            st = vkmem_new_block(ctx, DK_VK_BLOCK_SIZE, s->device_type_index, vkmem_usage, 0, &blk);
            if (st != DK_OK) return st;
            if (!vkmem_insert_free(blk, 0, 0, DK_VK_BLOCK_SIZE)) {
                dk__vk_free_block(s, blk);
                return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "vulkan backend: out of host memory");
            }
            blk->next = s->blocks;
            s->blocks = blk;
            i = 0;
        }
        b->block = blk;
        b->buffer = blk->buffer;
        b->alloc_offset = blk->free[i].offset;
        b->alloc_size = need;
        blk->free[i].offset += need;
        blk->free[i].size -= need;
        if (blk->free[i].size == 0) {
            memmove(blk->free + i, blk->free + i + 1, (blk->nfree - i - 1) * sizeof *blk->free);
            blk->nfree--;
        }
    } else {
        st = vkmem_new_block(ctx, need, s->device_type_index, vkmem_usage, 0, &blk);
        if (st != DK_OK) return st;
        blk->dedicated = 1;
        blk->next = s->blocks;
        s->blocks = blk;
        b->block = blk;
        b->buffer = blk->buffer;
        b->alloc_offset = 0;
        b->alloc_size = need;
    }
    b->base = b->alloc_offset;
    b->size = size;
    b->write_epoch = b->read_epoch = 0;
    b->last_serial = b->write_serial = 0;
    return DK_OK;
}

/* Give the memory back now if no submitted work can still use it, else when
 * the frame that used it last has finished. */
void dk__vk_release(dk_context *ctx, dk_vk_buf *b) {
    dk_vk_state *s = dk__vk(ctx);
    uint32_t i;
    dk__vk_forget(s, b);
    if (!b->block) return;
    if (b->last_serial > s->done_serial) {
        for (i = 0; i < DK_VK_FRAMES; i++) {
            dk_vk_frame *f = &s->frames[i];
            if ((f->recording || f->submitted) && f->serial == b->last_serial) {
                if (f->nfrees == f->capfrees) {
                    uint32_t cap = f->capfrees ? f->capfrees * 2 : 16;
                    dk_vk_pending_free *p = (dk_vk_pending_free *)realloc(f->frees, cap * sizeof *p);
                    if (!p) break;
                    f->frees = p;
                    f->capfrees = cap;
                }
                f->frees[f->nfrees].block = b->block;
                f->frees[f->nfrees].offset = b->alloc_offset;
                f->frees[f->nfrees].size = b->alloc_size;
                f->nfrees++;
                b->block = NULL;
                return;
            }
        }
        /* No frame to defer to (out of host memory): wait for the work instead. */
        (void)dk__vk_wait_serial(ctx, b->last_serial);
    }
    dk__vk_free_range(s, b->block, b->alloc_offset, b->alloc_size);
    b->block = NULL;
}

void dk__vk_memory_destroy(dk_vk_state *s) {
    while (s->blocks) {
        dk_vk_block *n = s->blocks->next;
        dk__vk_free_block(s, s->blocks);
        s->blocks = n;
    }
}

dk_status dk__vk_buffer_create(dk_context *ctx, dk_buffer *buffer) {
    dk_vk_buf *b = (dk_vk_buf *)calloc(1, sizeof *b);
    dk_status st;
    if (!b) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "vulkan backend: out of host memory");
    st = dk__vk_alloc(ctx, b, buffer->size);
    if (st != DK_OK) {
        free(b);
        return st;
    }
    buffer->impl = b;
    return DK_OK;
}

dk_status dk__vk_buffer_wrap(dk_context *ctx, dk_buffer *buffer, const dk_external_memory *m) {
    dk_vk_buf *b;
    if (m->kind != DK_EXTERNAL_VK_BUFFER)
        return dk__fail(ctx, DK_ERR_UNSUPPORTED,
                        "dk_buffer_wrap: the vulkan backend wraps only DK_EXTERNAL_VK_BUFFER memory (kind=%d)", (int)m->kind);
    if (m->offset > UINT64_MAX - m->size)
        return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "dk_buffer_wrap: memory->offset + memory->size overflows");
    b = (dk_vk_buf *)calloc(1, sizeof *b);
    if (!b) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "vulkan backend: out of host memory");
    b->buffer = (VkBuffer)(uintptr_t)m->vk_buffer;
    b->base = m->offset;
    b->size = m->size;
    buffer->impl = b;
    return DK_OK;
}

void dk__vk_buffer_destroy(dk_context *ctx, dk_buffer *buffer) {
    dk_vk_buf *b = dk__vk_buf(buffer);
    if (!b) return;
    dk__vk_release(ctx, b);
    free(b);
    buffer->impl = NULL;
}

/* Staging space in the current frame: at most want bytes (at least 1). */
static dk_status vkmem_staging(dk_context *ctx, uint64_t want, uint64_t *off, uint64_t *got) {
    dk_vk_state *s = dk__vk(ctx);
    dk_vk_frame *f;
    dk_status st = dk__vk_begin(ctx);
    if (st != DK_OK) return st;
    f = &s->frames[s->cur];
    if (f->staging_used >= DK_VK_STAGING_SIZE) {
        st = dk__vk_flush(ctx);
        if (st == DK_OK) st = dk__vk_begin(ctx);
        if (st != DK_OK) return st;
        f = &s->frames[s->cur];
    }
    if (!f->staging) {
        st = dk__vk_host_block(ctx, DK_VK_STAGING_SIZE,
                               VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT, &f->staging);
        if (st != DK_OK) return st;
    }
    *off = f->staging_used;
    *got = DK_VK_STAGING_SIZE - f->staging_used;
    if (*got > want) *got = want;
    f->staging_used += (*got + 15) & ~(uint64_t)15;
    return DK_OK;
}

/* dk_host_alloc: a mapped block of the staging memory type (host-visible,
 * coherent, cached where the device has it) that copies use directly; from
 * 8 MiB on, imported host memory where the device can (vkmem_import_block). */
dk_status dk__vk_host_alloc(dk_context *ctx, uint64_t size, void **ptr, void **handle) {
    dk_vk_block *blk = size >= ((uint64_t)8 << 20) ? vkmem_import_block(dk__vk(ctx), size) : NULL;
    dk_status st = DK_OK;
    if (!blk)
        st = vkmem_new_block(ctx, size, dk__vk(ctx)->host_type_index,
                             VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT, 1, &blk);
    if (st != DK_OK) return st;
    *ptr = blk->mapped;
    *handle = blk;
    return DK_OK;
}

void dk__vk_host_free(dk_context *ctx, void *ptr, void *handle) {
    (void)ptr;
    dk__vk_free_block(dk__vk(ctx), (dk_vk_block *)handle); /* the copies that used it were waited for */
}

/* A copy into host-visible memory, then the barrier that makes it visible to
 * host reads once the submission has completed. */
static void vkmem_copy_for_host(dk_vk_state *s, VkBuffer src, VkBuffer dst, const VkBufferCopy *region) {
    dk__vk_cmd_copy(s, src, dst, region);
    dk__vk_cmd_barrier(s, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                       VK_ACCESS_HOST_READ_BIT);
}

/* One copy between a device buffer and a dk_host_alloc block, submitted and
 * waited for (so that uploads and downloads keep their synchronous meaning). */
static dk_status vkmem_copy_host(dk_context *ctx, dk_vk_buf *b, uint64_t off, dk_vk_block *hb, uint64_t hoff,
                                 uint64_t size, int download) {
    dk_vk_state *s = dk__vk(ctx);
    dk_vk_frame *f;
    VkBufferCopy region;
    dk_vk_binding bind;
    uint64_t serial;
    dk_status st = dk__vk_begin(ctx);
    if (st != DK_OK) return st;
    f = &s->frames[s->cur];
    memset(&bind, 0, sizeof bind);
    bind.buf = b;
    bind.write = !download;
    dk__vk_access(ctx, &bind, 1);
    region.srcOffset = download ? b->base + off : hoff;
    region.dstOffset = download ? hoff : b->base + off;
    region.size = size;
    if (download) vkmem_copy_for_host(s, b->buffer, hb->buffer, &region);
    else dk__vk_cmd_copy(s, hb->buffer, b->buffer, &region);
    serial = f->serial;
    st = dk__vk_flush(ctx);
    return st != DK_OK ? st : dk__vk_wait_serial(ctx, serial);
}

dk_status dk__vk_upload(dk_context *ctx, dk_buffer *buffer, uint64_t off, const void *src, uint64_t size) {
    dk_vk_state *s = dk__vk(ctx);
    dk_vk_buf *b = dk__vk_buf(buffer);
    const unsigned char *p = (const unsigned char *)src;
    void *hb;
    uint64_t hoff;
    if (dk__host_find(ctx, src, size, &hb, &hoff)) return vkmem_copy_host(ctx, b, off, (dk_vk_block *)hb, hoff, size, 0);
    while (size > 0) {
        uint64_t soff, n;
        dk_vk_frame *f;
        VkBufferCopy region;
        dk_vk_binding bind;
        dk_status st = vkmem_staging(ctx, size, &soff, &n);
        if (st != DK_OK) return st;
        f = &s->frames[s->cur];
        memcpy((unsigned char *)f->staging->mapped + soff, p, (size_t)n);
        memset(&bind, 0, sizeof bind);
        bind.buf = b;
        bind.write = 1;
        dk__vk_access(ctx, &bind, 1);
        region.srcOffset = soff;
        region.dstOffset = b->base + off;
        region.size = n;
        dk__vk_cmd_copy(s, f->staging->buffer, b->buffer, &region);
        p += n;
        off += n;
        size -= n;
    }
    return DK_OK;
}

/* A read-back of b, whose writes are all submitted, beside the frame being
 * recorded: a command buffer of its own, submitted and waited for, through the
 * aside staging (or straight into hb, a dk_host_alloc block).  Queue order puts
 * it before that frame, whose first barrier orders the frame's commands after
 * it; waiting for b's last write alone leaves the frame's pipelines building
 * and its commands unsubmitted (conv_up2.c reads a weight back in the middle
 * of a network's first call). */
static dk_status vkmem_download_aside(dk_context *ctx, dk_vk_buf *b, uint64_t off, unsigned char *dst,
                                      dk_vk_block *hb, uint64_t hoff, uint64_t size) {
    dk_vk_state *s = dk__vk(ctx);
    dk_status st = dk__vk_wait_serial(ctx, b->write_serial);
    if (st != DK_OK) return st;
    if (!hb && !s->aside_staging) {
        st = dk__vk_host_block(ctx, DK_VK_STAGING_SIZE, VK_BUFFER_USAGE_TRANSFER_DST_BIT, &s->aside_staging);
        if (st != DK_OK) return st;
    }
    while (size > 0) {
        uint64_t n = hb ? size : size < DK_VK_STAGING_SIZE ? size : DK_VK_STAGING_SIZE;
        VkCommandBufferBeginInfo bi;
        VkBufferCopy region;
        VkMemoryBarrier mb;
        VkSubmitInfo si;
        VkResult r;
        memset(&bi, 0, sizeof bi);
        bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        r = s->vk.vkBeginCommandBuffer(s->aside_cmd, &bi);
        if (r != VK_SUCCESS) return dk__vk_result(ctx, r, "vkBeginCommandBuffer");
        region.srcOffset = b->base + off;
        region.dstOffset = hb ? hoff : 0;
        region.size = n;
        s->vk.vkCmdCopyBuffer(s->aside_cmd, b->buffer, hb ? hb->buffer : s->aside_staging->buffer, 1, &region);
        memset(&mb, 0, sizeof mb);
        mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
        mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
        mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
        s->vk.vkCmdPipelineBarrier(s->aside_cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb,
                                   0, NULL, 0, NULL);
        r = s->vk.vkEndCommandBuffer(s->aside_cmd);
        if (r != VK_SUCCESS) return dk__vk_result(ctx, r, "vkEndCommandBuffer");
        memset(&si, 0, sizeof si);
        si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
        si.commandBufferCount = 1;
        si.pCommandBuffers = &s->aside_cmd;
        r = s->vk.vkQueueSubmit(s->queue, 1, &si, s->aside_fence);
        if (r != VK_SUCCESS) return dk__vk_result(ctx, r, "vkQueueSubmit");
        r = s->vk.vkWaitForFences(s->device, 1, &s->aside_fence, VK_TRUE, UINT64_MAX);
        if (r == VK_SUCCESS) r = s->vk.vkResetFences(s->device, 1, &s->aside_fence);
        if (r != VK_SUCCESS) return dk__vk_result(ctx, r, "vkWaitForFences");
        if (!hb) memcpy(dst, s->aside_staging->mapped, (size_t)n);
        dst += n;
        hoff += n;
        off += n;
        size -= n;
    }
    return DK_OK;
}

/* Chunks through the frames' staging, one per frame, each submitted at once:
 * the CPU copies the oldest chunk out while the next one is in transit. */
dk_status dk__vk_download(dk_context *ctx, const dk_buffer *buffer, uint64_t off, void *dst, uint64_t size) {
    dk_vk_state *s = dk__vk(ctx);
    dk_vk_buf *b = dk__vk_buf(buffer);
    unsigned char *p = (unsigned char *)dst;
    struct {
        uint64_t serial, soff, n;
        unsigned char *dst;
        dk_vk_frame *f;
    } q[DK_VK_FRAMES];
    uint32_t head = 0, count = 0;
    void *hb = NULL;
    uint64_t hoff = 0;
    int pinned = dk__host_find(ctx, dst, size, &hb, &hoff);
    if (s->frames[s->cur].recording && b->write_serial < s->frames[s->cur].serial) {
        if (s->lost) return dk__fail(ctx, DK_ERR_DEVICE_LOST, "vulkan backend: the device was lost; destroy the context");
        return vkmem_download_aside(ctx, b, off, p, pinned ? (dk_vk_block *)hb : NULL, hoff, size);
    }
    if (pinned) return vkmem_copy_host(ctx, b, off, (dk_vk_block *)hb, hoff, size, 1);
    while (size > 0 || count > 0) {
        dk_status st;
        if (size > 0 && count < DK_VK_FRAMES) {
            uint64_t soff, n;
            dk_vk_frame *f;
            VkBufferCopy region;
            dk_vk_binding bind;
            uint32_t t = (head + count) % DK_VK_FRAMES;
            st = vkmem_staging(ctx, size, &soff, &n);
            if (st != DK_OK) return st;
            f = &s->frames[s->cur];
            memset(&bind, 0, sizeof bind);
            bind.buf = b;
            dk__vk_access(ctx, &bind, 1);
            region.srcOffset = b->base + off;
            region.dstOffset = soff;
            region.size = n;
            vkmem_copy_for_host(s, b->buffer, f->staging->buffer, &region);
            q[t].serial = f->serial;
            q[t].soff = soff;
            q[t].n = n;
            q[t].dst = p;
            q[t].f = f;
            count++;
            /* submit now; the next chunk goes to the other frame, whose staging
             * is reset only after its chunk was copied out (count < frames) */
            st = dk__vk_flush(ctx);
            if (st != DK_OK) return st;
            p += n;
            off += n;
            size -= n;
        } else {
            st = dk__vk_wait_serial(ctx, q[head].serial);
            if (st != DK_OK) return st;
            memcpy(q[head].dst, (unsigned char *)q[head].f->staging->mapped + q[head].soff, (size_t)q[head].n);
            head = (head + 1) % DK_VK_FRAMES;
            count--;
        }
    }
    return DK_OK;
}

dk_status dk__vk_fill(dk_context *ctx, dk_buffer *buffer, uint64_t off, uint64_t size, uint32_t pattern) {
    dk_vk_state *s = dk__vk(ctx);
    dk_vk_buf *b = dk__vk_buf(buffer);
    dk_vk_binding bind;
    dk_status st;
    if ((b->base + off) % 4)
        return dk__fail(ctx, DK_ERR_UNSUPPORTED,
                        "dk_buffer_fill: the wrapped VkBuffer region starts at offset %llu, not a multiple of 4",
                        (unsigned long long)b->base);
    st = dk__vk_begin(ctx);
    if (st != DK_OK) return st;
    memset(&bind, 0, sizeof bind);
    bind.buf = b;
    bind.write = 1;
    dk__vk_access(ctx, &bind, 1);
    dk__vk_cmd_fill(s, b->buffer, b->base + off, size, pattern);
    return DK_OK;
}
