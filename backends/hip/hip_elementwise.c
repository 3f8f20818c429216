/* HIP elementwise ops: add / activation (scaled), nearest upsample and
 * convert (with the tiled transposes for layout changes). */
#include "hip_ops_common.h"

#include <math.h>
#include <stdlib.h>

/* ------------------------------------------------------------ elementwise */

/* Whether strides s (in e's walk order) make the operand at addr one dense run,
 * element i at offset i, 16-byte aligned (the vector path of dkk_elementwise). */
static int hipops_dense_walk(const dkh_elt_args *e, const int64_t s[4], uint64_t addr) {
    return dk__elt_dense_walk(e->shape, s, addr % 16 == 0);
}

/* Whether an upsample takes dke_upsample_vec (setting e->fac): integer factors
 * (at most 64 output vectors per input vector), walk dim 3 unit-stride in a and y
 * with a's rows in whole 16-byte vectors of 8 elements, every other stride a
 * multiple of 8 elements (where its size is not 1), fewer than 2^31 input
 * vectors.  DIFKERN_HIP_UPSAMPLE_VEC=0
 * keeps the generic walk (A/B timing). */
static int hipops_upsample_vec(dkh_elt_args *e, const int32_t ord[4]) {
    int64_t a_ext[4];
    int k;
    for (k = 0; k < 4; k++) a_ext[k] = ord[k] == 2 ? e->a_h : ord[k] == 3 ? e->a_w : e->shape[k];
    if (!dk__elt_upsample_vec(e->shape, a_ext, e->a_s, e->y_s, e->a % 16 == 0 && e->y % 16 == 0, e->fac)) return 0;
    /* the kernel splits the vector index in 32 bits */
    return (e->shape[0] * e->shape[1] * e->shape[2] * e->shape[3]) / (e->fac[0] * e->fac[1] * e->fac[2] * e->fac[3]) / 8 <
           ((int64_t)1 << 31);
}

/* Whether a layout-changing convert (e->tpos set) moves 16-byte vectors: both
 * unit-stride dims (a's k, y's 3) and every other stride in whole vectors of
 * the operand's dtype, 32-bit tile indices.  Returns 1 for one 16-bit dtype
 * (dkk_transpose16, raw bits), 2 for any other pair (dkk_transpose_cvt, through
 * floats), 0 for neither.  DIFKERN_HIP_TRANSPOSE16=0 keeps the element tile. */
static int hipops_transpose16(const dkh_elt_args *e) {
    const int k = e->tpos - 1;
    int i;
    if (e->op != DKH_ELT_CONVERT) return 0;
    for (i = 0; i < 4; i++)
        if (e->shape[i] >= ((int64_t)1 << 31)) return 0;
    if ((e->shape[3] + 63) / 64 * ((e->shape[k] + 63) / 64) * e->shape[k == 0 ? 1 : 0] * e->shape[k == 2 ? 1 : 2] >=
        ((int64_t)1 << 31))
        return 0;
    return dk__elt_transpose16(e->shape, e->a_s, e->y_s, k, (dk_dtype)e->dt_a, (dk_dtype)e->dt_y,
                               e->a % 16 == 0 && e->y % 16 == 0);
}

dk_status dk__hipops_elementwise(dk_context *ctx, const char *op, int kind, dk_activation act, float alpha,
                                 const dk_tensor *a, float beta, const dk_tensor *b, float oscale,
                                 const dk_tensor *y) {
    dkh_elt_args e;
    int64_t shp[4];
    memset(&e, 0, sizeof e);
    e.op = kind;
    e.act = (int)act;
    e.alpha = alpha;
    e.beta = beta;
    e.oscale = oscale;
    e.a = hipops_addr(a);
    e.y = hipops_addr(y);
    e.dt_a = (int)a->dtype;
    e.dt_y = (int)y->dtype;
    hipops_pad4(y, e.shape, e.y_s);
    hipops_pad4(a, shp, e.a_s);
    e.a_h = shp[2];
    e.a_w = shp[3];
    if (b) {
        e.b = hipops_addr(b);
        e.dt_b = (int)b->dtype;
        hipops_pad4(b, shp, e.b_s);
    }
    {
        int32_t ord[4];
        int i;
        dk__elt_order(e.shape, e.y_s, ord);
        dk__permute4(e.shape, ord);
        dk__permute4(e.y_s, ord);
        dk__permute4(e.a_s, ord);
        dk__permute4(e.b_s, ord);
        for (i = 0; i < 4; i++) e.hw_pos |= (ord[i] == 2 ? i : 0) | (ord[i] == 3 ? i << 2 : 0);
        e.up32 = kind == DKH_ELT_UPSAMPLE && e.a_h * (e.shape[e.hw_pos & 3] - 1) < ((int64_t)1 << 32) &&
                 e.a_w * (e.shape[e.hw_pos >> 2] - 1) < ((int64_t)1 << 32);
        /* a layout change with both dims at least a tile wide: tiled transpose (with
         * fewer than 32 channels the strided walk was as fast or faster on the H100) */
        for (i = 0; (kind == DKH_ELT_ACT || kind == DKH_ELT_CONVERT) && e.shape[3] >= 32 && e.a_s[3] != 1 && i < 3; i++)
            if (e.shape[i] >= 32 && e.a_s[i] == 1) e.tpos = i + 1;
        e.flat = kind != DKH_ELT_UPSAMPLE && hipops_dense_walk(&e, e.a_s, e.a) && hipops_dense_walk(&e, e.y_s, e.y) &&
                 (!b || hipops_dense_walk(&e, e.b_s, e.b));
        /* a same-dtype convert that is no dense run (a strided copy, as dk_conv3d's
         * staging of frames into every KT*Cin-channel pixel): the upsample's vector
         * copy with all factors 1, where rows are whole vectors */
        e.upv = (kind == DKH_ELT_UPSAMPLE || (kind == DKH_ELT_CONVERT && !e.flat && !e.tpos && e.dt_a == e.dt_y)) &&
                ctx->knobs.hip_upsample_vec && hipops_upsample_vec(&e, ord);
    }
    e.total = e.shape[0] * e.shape[1] * e.shape[2] * e.shape[3];
    /* the flat path takes eight elements per thread, the transpose a tile per block */
    e.nblocks = (int64_t)hipops_blocks(e.flat ? (e.total + 7) / 8 : e.total, DKH_THREADS);
    if (e.upv) /* a thread per 8 input elements */
        e.nblocks = (int64_t)hipops_blocks(e.total / (e.fac[0] * e.fac[1] * e.fac[2] * e.fac[3]) / 8, DKH_THREADS);
    if (e.tpos) {
        int k = e.tpos - 1, tw;
        e.t16 = ctx->knobs.hip_transpose16 ? hipops_transpose16(&e) : 0;
        tw = e.t16 ? 64 : 32;
        e.nblocks = (int64_t)(hipops_blocks(e.shape[3], tw) * hipops_blocks(e.shape[k], tw)) * e.shape[k == 0 ? 1 : 0] *
                    e.shape[k == 2 ? 1 : 2];
    }
    if (e.nblocks > (1 << 20)) e.nblocks = 1 << 20;
    return dk__hip_launch(ctx, op,
                          e.upv   ? dk__hip_state(ctx)->k.upsample_vec
                          : e.t16 ? (e.t16 == 1 ? dk__hip_state(ctx)->k.transpose16 : dk__hip_state(ctx)->k.transpose_cvt)
                                  : dk__hip_state(ctx)->k.elementwise,
                          (uint64_t)e.nblocks, 1, 1, &e);
}

dk_status dk__hip_add(dk_context *ctx, float alpha, const dk_tensor *a, float beta, const dk_tensor *b,
                      dk_activation act, float out_scale, const dk_tensor *y) {
    return dk__hipops_elementwise(ctx, b ? "dk_add" : "dk_activation_forward or dk_activation_scaled",
                                  b ? DKH_ELT_ADD : DKH_ELT_ACT, act, alpha, a, beta, b, out_scale, y);
}

dk_status dk__hip_upsample_nearest(dk_context *ctx, const dk_tensor *x, const dk_tensor *y) {
    return dk__hipops_elementwise(ctx, "dk_upsample_nearest", DKH_ELT_UPSAMPLE, DK_ACT_NONE, 1.0f, x, 0.0f, NULL, 1.0f, y);
}

dk_status dk__hip_convert(dk_context *ctx, const dk_tensor *x, const dk_tensor *y) {
    return dk__hipops_elementwise(ctx, "dk_convert", DKH_ELT_CONVERT, DK_ACT_NONE, 1.0f, x, 0.0f, NULL, 1.0f, y);
}
