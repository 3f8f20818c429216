/* Helpers shared by the HIP op files (hip_conv.c, hip_attention.c,
 * hip_norm.c, hip_elementwise.c): device addresses, grid sizes, 4-D views,
 * and the elementwise launch the convs copy and repack with. */
#ifndef DK_HIP_OPS_COMMON_H
#define DK_HIP_OPS_COMMON_H

#include "hip_internal.h"

static inline uint64_t hipops_addr(const dk_tensor *t) { return dk__hip_ptr(t->buffer) + t->offset; }

static inline uint64_t hipops_blocks(int64_t n, int64_t per) { return (uint64_t)((n + per - 1) / per); }

/* Shape and strides of t as 4-D, leading dims padded with size 1 / stride 0. */
static inline void hipops_pad4(const dk_tensor *t, int64_t shape[4], int64_t strides[4]) {
    int i, lead = 4 - t->ndim;
    for (i = 0; i < 4; i++) {
        shape[i] = i < lead ? 1 : t->shape[i - lead];
        strides[i] = i < lead ? 0 : t->strides[i - lead];
    }
}

/* y = oscale * act(alpha * a [+ beta * b]) (kind DKH_ELT_ADD / CONVERT), or
 * the nearest resize (DKH_ELT_UPSAMPLE): hip_elementwise.c. */
dk_status dk__hipops_elementwise(dk_context *ctx, const char *op, int kind, dk_activation act, float alpha,
                                 const dk_tensor *a, float beta, const dk_tensor *b, float oscale, const dk_tensor *y);

#endif
