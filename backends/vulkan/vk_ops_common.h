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

/* Shared memory of the tensor-core conv's default tile (MODE 0, 128 invocations) and of its
 * halo staging (MODE bit 3), as NVIDIA's driver reports them. */
/* Shared memory (bytes) the tensor-core conv takes without and with halo
 * staging; the tensor-core attention asks for the first too. */
#define VKOP_CM_SHARED 38400u
#define VKOP_CM_HALO_SHARED 49120u

void dk__vkop_view4(const dk_tensor *t, int64_t shape[4], int64_t strides[4]);
dk_status dk__vkop_bind(dk_context *ctx, const char *op, const char *name, const dk_tensor *t, int write,
                        dk_vk_binding *b, int32_t *p);
dk_status dk__vkop_grow(dk_context *ctx, dk_vk_buf *b, uint64_t bytes);
int32_t dk__vkop_fbits(float f);
dk_status dk__vkop_too_big(dk_context *ctx, const char *op, const char *what, uint64_t v);
dk_activation dk__vkop_epilogue_act(dk_activation act, dk_activation post);
void dk__vkop_spec(uint32_t *spec, int32_t *p, dk_dtype dt, dk_activation act, uint32_t flags, dk_dtype dt2,
                   uint32_t mode);
int dk__vkop_vec_view(const int32_t *p, int unit, int32_t v);
dk_status dk__vkop_eltwise(dk_context *ctx, const char *op, uint32_t mode, dk_activation act, float alpha,
                           const dk_tensor *a, float beta, const dk_tensor *b, float oscale, const dk_tensor *y);

#endif
