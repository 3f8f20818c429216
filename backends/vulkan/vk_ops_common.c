/* Vulkan backend ops: turn validated op arguments into bindings, parameter
 * structs (shaders/dk_vk_params.h) and dispatches.  Each tensor is bound at its
 * own (aligned) offset with the range its view spans, so element offsets and
 * strides fit the shaders' 32-bit indices.  This file: the helpers every op
 * file uses (vk_ops_common.h). */
#include "vk_ops_common.h"

#include <math.h>
#include <stdlib.h>

/* Right-aligned 4-D view: dims missing on the left are size 1; a size-1 dim
 * gets stride 0 (its stride can never matter, and this keeps it 32-bit). */
void dk__vkop_view4(const dk_tensor *t, int64_t shape[4], int64_t strides[4]) {
    int32_t i, pad = 4 - t->ndim;
    for (i = 0; i < 4; i++) {
        shape[i] = 1;
        strides[i] = 0;
    }
    for (i = 0; i < t->ndim; i++) {
        shape[pad + i] = t->shape[i];
        strides[pad + i] = t->shape[i] == 1 ? 0 : t->strides[i];
    }
}

/* Bind tensor t in slot b; *view = its 4-D strides and its element offset. */
dk_status dk__vkop_bind(dk_context *ctx, const char *op, const char *name, const dk_tensor *t, int write,
                        dk_vk_binding *b, dk_vk_view4 *view) {
    dk_vk_state *s = dk__vk(ctx);
    dk_vk_buf *vb = dk__vk_buf(t->buffer);
    uint64_t es = dk_dtype_size(t->dtype), align = s->props.limits.minStorageBufferOffsetAlignment;
    uint64_t extent = 1, start, aligned, delta, range;
    int64_t shape[4], strides[4];
    int i;
    dk__vkop_view4(t, shape, strides);
    for (i = 0; i < 4; i++) extent += (uint64_t)(shape[i] - 1) * (uint64_t)strides[i];
    start = vb->base + t->offset;
    if (align == 0) align = 1;
    aligned = start - start % align;
    delta = start - aligned;
    if (delta % es)
        return dk__fail(ctx, DK_ERR_UNSUPPORTED, "%s: %s.offset (=%llu) must be a multiple of the element size (%llu) "
                        "on the vulkan backend", op, name, (unsigned long long)t->offset, (unsigned long long)es);
    range = delta + extent * es;
    if (range > s->props.limits.maxStorageBufferRange || delta / es + extent > VKOP_MAX_INDEX)
        return dk__fail(ctx, DK_ERR_UNSUPPORTED, "%s: %s spans %llu bytes, more than this device binds at once (%u)", op,
                        name, (unsigned long long)range, s->props.limits.maxStorageBufferRange);
    b->buf = vb;
    b->offset = aligned;
    b->range = range;
    b->write = write;
    for (i = 0; i < 4; i++) view->stride[i] = (int32_t)strides[i];
    view->offset = (int32_t)(delta / es);
    return DK_OK;
}

/* A bound per-channel vector ([C], right-aligned in the 4-D view): its last
 * stride and its offset. */
dk_vk_view1 dk__vkop_view1(const dk_vk_view4 *v) {
    dk_vk_view1 r;
    r.stride = v->stride[3];
    r.offset = v->offset;
    return r;
}

/* A bound 3-D matmul operand: the strides of its last three dims and its offset. */
dk_vk_view3 dk__vkop_view3(const dk_vk_view4 *v) {
    dk_vk_view3 r;
    int i;
    for (i = 0; i < 3; i++) r.stride[i] = v->stride[i + 1];
    r.offset = v->offset;
    return r;
}

/* A backend-owned buffer (scratch, staging) of at least bytes: a larger one
 * replaces it, the old memory freed once the work that used it is done. */
dk_status dk__vkop_grow(dk_context *ctx, dk_vk_buf *b, uint64_t bytes) {
    dk_status st;
    if (b->block && b->size >= bytes) return DK_OK;
    if (b->block) {
        dk__mem_account(ctx, -(int64_t)b->size);
        dk__vk_release(ctx, b);
        b->block = NULL;
    }
    st = dk__vk_alloc(ctx, b, bytes);
    if (st != DK_OK) {
        b->block = NULL;
        return st;
    }
    dk__mem_account(ctx, (int64_t)bytes);
    return DK_OK;
}

dk_status dk__vkop_too_big(dk_context *ctx, const char *op, const char *what, uint64_t v) {
    return dk__fail(ctx, DK_ERR_UNSUPPORTED, "%s: %s (=%llu) exceeds the vulkan backend's 32-bit index range", op, what,
                    (unsigned long long)v);
}

/* The ACT specialization constant of the conv / matmul epilogues: the
 * activation in bits 0-3, the one after the residual in bits 4-7
 * (shaders/dk_common.glsl). */
dk_activation dk__vkop_epilogue_act(dk_activation act, dk_activation post) {
    return (dk_activation)((int)act | ((int)post << 4));
}

/* Specialization constants, and the epilogue parameters (activation, flags). */
void dk__vkop_spec(uint32_t *spec, dk_vk_epilogue *epilogue, dk_dtype dt, dk_activation act, uint32_t flags,
                   dk_dtype dt2, uint32_t mode) {
    spec[DK_VKS_DT] = (uint32_t)dt;
    spec[DK_VKS_DT2] = (uint32_t)dt2;
    spec[DK_VKS_MODE] = mode;
    spec[DK_VKS_ACT] = (uint32_t)act;
    epilogue->act = (int32_t)act;
    epilogue->flags = (int32_t)flags;
}

/* Whether the 4-D view has stride 1 on dim `unit` and every other stride and
 * the offset a multiple of v elements (16 bytes): the portable GEMM core may
 * then fetch 8 elements along `unit` with 16-byte loads. */
int dk__vkop_vec_view(const dk_vk_view4 *view, int unit, int32_t v) {
    int i;
    if (view->stride[unit] != 1 || view->offset % v != 0) return 0;
    for (i = 0; i < 4; i++)
        if (i != unit && view->stride[i] % v != 0) return 0;
    return 1;
}
