/* Helpers shared by the Vulkan op files (vk_conv.c, vk_elementwise.c,
 * vk_norm.c, vk_attention.c), defined in vk_ops_common.c and vk_elementwise.c:
 * views, bindings, parameter slots and specialization constants, scratch
 * growth, and the elementwise dispatch the convs stage their operands with.
 * Each definition says what it does. */
#ifndef DK_VK_OPS_COMMON_H
#define DK_VK_OPS_COMMON_H

#include "vk_internal.h"

/* Element offsets and strides the shaders index with are 32-bit. */
#define VKOP_MAX_INDEX 0xffffffffull

/* Shared memory (bytes) the tensor-core conv takes with its default tile (MODE
 * 0, 128 invocations) and with halo staging (DK_VK_CM_MODE_HALO), as NVIDIA's
 * driver reports them; the tensor-core attention asks for the first too. */
#define VKOP_CM_SHARED 38400u
#define VKOP_CM_HALO_SHARED 49120u

void dk__vkop_view4(const dk_tensor *t, int64_t shape[4], int64_t strides[4]);
dk_status dk__vkop_bind(dk_context *ctx, const char *op, const char *name, const dk_tensor *t, int write,
                        dk_vk_binding *b, dk_vk_view4 *view);
dk_vk_view1 dk__vkop_view1(const dk_vk_view4 *v);
dk_vk_view3 dk__vkop_view3(const dk_vk_view4 *v);
dk_status dk__vkop_grow(dk_context *ctx, dk_vk_buf *b, uint64_t bytes);
dk_status dk__vkop_too_big(dk_context *ctx, const char *op, const char *what, uint64_t v);
dk_activation dk__vkop_epilogue_act(dk_activation act, dk_activation post);
void dk__vkop_spec(uint32_t *spec, dk_vk_epilogue *epilogue, dk_dtype dt, dk_activation act, uint32_t flags,
                   dk_dtype dt2, uint32_t mode);
int dk__vkop_vec_view(const dk_vk_view4 *view, int unit, int32_t v);
dk_status dk__vkop_eltwise(dk_context *ctx, const char *op, uint32_t mode, dk_activation act, float alpha,
                           const dk_tensor *a, float beta, const dk_tensor *b, float oscale, const dk_tensor *y);

#endif
