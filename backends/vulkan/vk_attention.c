/* Vulkan attention: the tensor-core flash kernels (attention_cm*.comp) where
 * the shapes allow, else the portable flash shader (attention.comp). */
#include "vk_ops_common.h"

#include <math.h>
#include <stdlib.h>

/* ------------------------------------------------------------ attention */

/* The tensor-core shaders load 16-byte vectors straight from the bound
 * tensors: f16 or bf16, each head dimension contiguous, every other stride and
 * each view's start a multiple of 8 elements inside a 16-byte aligned binding.
 * shaders/attention_cm_rows.comp (rows: D, Dv <= 128) stages everything with
 * zeros past the tensors: D and Dv multiples of 8, any Nq and Nkv, 47616 bytes
 * of shared memory.  shaders/attention_cm.comp (larger heads): the same with CG
 * 8, 48896 bytes; CG 2 and 4 (forced, for benchmarks) load fragments in place
 * and need Nq, Nkv, D and Dv multiples of 16 (the caller's check).
 * params: the four tensors' strides and offsets. */
static int vkop_attention_cm_ok(const dk_vk_state *s, const dk_tensor *q, const dk_tensor *k, const dk_tensor *v,
                                const dk_tensor *out, const dk_vk_attention_params *params, const dk_vk_binding *bind,
                                int rows) {
    const dk_vk_view4 *inputs[3];
    int i, j;
    inputs[0] = &params->q;
    inputs[1] = &params->k;
    inputs[2] = &params->v;
    if (!dk__vk_cm_dtype(s, q->dtype) || s->props.limits.maxComputeSharedMemorySize < (rows ? 47616u : 48896u) ||
        k->dtype != q->dtype || v->dtype != q->dtype || out->dtype != q->dtype)
        return 0;
    if (q->shape[3] % 8 || v->shape[3] % 8) return 0;
    for (i = 0; i < 3; i++) {
        const dk_vk_view4 *t = inputs[i];
        if (t->stride[3] != 1 || bind[i].offset % 16) return 0;
        for (j = 0; j < 3; j++)
            if (t->stride[j] % 8) return 0;
        if (t->offset % 8) return 0;
    }
    return 1;
}

dk_status dk__vk_attention(dk_context *ctx, const dk_attention_desc *d, const dk_tensor *q, const dk_tensor *k,
                           const dk_tensor *v, const dk_tensor *out) {
    const char *op = "dk_attention";
    dk_vk_binding bind[DK_VK_BINDINGS];
    dk_vk_attention_params params;
    uint32_t spec[DK_VK_SPEC];
    int64_t dd = q->shape[3];
    float scale = d->scale != 0.0f ? d->scale : (float)(1.0 / sqrt((double)dd));
    dk_status st;
    if (q->shape[3] > 512 || v->shape[3] > 512)
        return dk__fail(ctx, DK_ERR_UNSUPPORTED, "dk_attention: head dims (D=%lld, Dv=%lld) above 512",
                        (long long)q->shape[3], (long long)v->shape[3]);
    if (q->shape[1] > 65535 || q->shape[0] > 65535) return dk__vkop_too_big(ctx, op, "B or H", 65536);
    memset(bind, 0, sizeof bind);
    memset(&params, 0, sizeof params);
    st = dk__vkop_bind(ctx, op, "q", q, 0, &bind[0], &params.q);
    if (st == DK_OK) st = dk__vkop_bind(ctx, op, "k", k, 0, &bind[1], &params.k);
    if (st == DK_OK) st = dk__vkop_bind(ctx, op, "v", v, 0, &bind[2], &params.v);
    if (st == DK_OK) st = dk__vkop_bind(ctx, op, "out", out, 1, &bind[4], &params.o);
    if (st != DK_OK) return st;
    params.heads = (int32_t)q->shape[1];
    params.nq = (int32_t)q->shape[2];
    params.nkv = (int32_t)k->shape[2];
    params.d = (int32_t)dd;
    params.dv = (int32_t)v->shape[3];
    params.scale = scale;
    {
        /* D, Dv <= 128: 16 query rows per subgroup, 128 per workgroup, keys 32 at
         * a time (shaders/attention_cm_rows.comp, 64 or 128 wide; it replaced the
         * column-group path, which lost at these sizes).  Larger heads
         * (attention_cm.comp): column groups (64 output columns each) of the 8
         * subgroups: the workgroup owns 256 / cg query rows and streams keys
         * 16 * cg at a time; cg 8 (keys 128 at a time, K and Q staged) even where
         * D < 512 leaves column groups idle in P V, because it measured fastest
         * (docs/attention.md).  DIFKERN_VULKAN_ATTN_CG (2, 4 or 8) forces
         * attention_cm.comp where a head dimension exceeds 64 (benchmarks). */
        int64_t dm = dd > v->shape[3] ? dd : v->shape[3];
        /* forced: DIFKERN_VULKAN_ATTN_CG names a split whose column groups cover the head */
        const int forced = ctx->knobs.vulkan_attn_cg > 0 && ctx->knobs.vulkan_attn_cg * 64 >= dm;
        uint32_t cg = forced ? (uint32_t)ctx->knobs.vulkan_attn_cg : 8;
        uint64_t br;
        if (cg != 8 && (q->shape[2] % 16 || k->shape[2] % 16 || dd % 16 || v->shape[3] % 16)) cg = 8;
        if (dm <= 128 && !(forced && dm > 64) && vkop_attention_cm_ok(dk__vk(ctx), q, k, v, out, &params, bind, 1)) {
            dk__vkop_spec(spec, &params.epilogue, q->dtype, DK_ACT_NONE, 0, q->dtype,
                          dm > 64 ? DK_VK_ATROWS_MODE_WIDE : 0u);
            return dk__vk_dispatch(ctx, dk__vk_cm_shader(dk__vk(ctx), DK_VK_SH_ATTENTION_CM_ROWS, q->dtype), spec,
                                   bind, &params, sizeof params, ((uint64_t)q->shape[2] + 127) / 128,
                                   (uint32_t)q->shape[1], (uint32_t)q->shape[0]);
        }
        if (vkop_attention_cm_ok(dk__vk(ctx), q, k, v, out, &params, bind, 0)) {
            /* DK_VK_ATCM_MODE_R64 (cg 8): 64 query rows per workgroup, keys 64 at a time (1.5x fewer
             * bytes per product; attention_cm.comp) where that grid still fills a large GPU
             * (72 workgroups and more: with fewer, half the SMs idle where cg 8's 128-row
             * grid still fills them; the measurements are in docs/attention.md).
             * DIFKERN_VULKAN_ATTN_R64=0|1 forces it, for benchmarks and tests. */
            const uint64_t groups64 = ((uint64_t)q->shape[2] + 63) / 64 * (uint64_t)q->shape[1] * (uint64_t)q->shape[0];
            const int r64 = cg == 8 && (ctx->knobs.vulkan_attn_r64 >= 0 ? ctx->knobs.vulkan_attn_r64 == 1 : groups64 >= 72);
            /* DK_VK_ATCM_MODE_MASKED: Nq, Nkv, D or Dv not a multiple of 16 (the masks by key and column) */
            const int anyn = q->shape[2] % 16 || k->shape[2] % 16 || dd % 16 || v->shape[3] % 16;
            br = r64 ? 64 : 256 / cg;
            /* D / 8 compiled in (aligned shapes only: the masked ones measured slower) */
            dk__vkop_spec(spec, &params.epilogue, q->dtype, DK_ACT_NONE, 0, q->dtype,
                          cg | (r64 ? DK_VK_ATCM_MODE_R64 : 0u) |
                              (anyn ? DK_VK_ATCM_MODE_MASKED : (uint32_t)(dd / 8) << DK_VK_ATCM_MODE_D8_SHIFT));
            return dk__vk_dispatch(ctx, dk__vk_cm_shader(dk__vk(ctx), DK_VK_SH_ATTENTION_CM, q->dtype), spec, bind, &params,
                                   sizeof params, ((uint64_t)q->shape[2] + br - 1) / br, (uint32_t)q->shape[1],
                                   (uint32_t)q->shape[0]);
        }
    }
    {
        /* Portable flash attention (shaders/attention.comp): 64 queries per
         * workgroup (32 where Dv > 128).  Dv above 256 runs as 256-column
         * chunks of V and O, one dispatch each (S is recomputed per chunk: 1.5x
         * the FLOPs at D = Dv = 512, but the one-dispatch variant with a wider
         * O tile ran 7x slower per FLOP on the H100, measured before the
         * shader's epilogue went through shared memory: worth re-measuring).  MODE: 16-byte
         * loads of Q, K, V (DK_VK_AT_MODE_VEC_*: head dimension contiguous, a
         * multiple of 8, every other stride and the start whole 16-byte
         * vectors); the O register tile by Dv; DK_VK_AT_MODE_BIG_SLICES where
         * the device has the shared memory (40,192 bytes). */
        const dk_vk_view4 *inputs[3];
        int32_t vw = q->dtype == DK_F32 ? 4 : 8, v_offset0 = params.v.offset, o_offset0 = params.o.offset;
        int64_t dvt = v->shape[3], dv0, dvc, bq;
        for (dv0 = 0; dv0 < dvt; dv0 += 256) {
            uint32_t mode = 0;
            int i;
            dvc = dvt - dv0 < 256 ? dvt - dv0 : 256;
            params.dv = (int32_t)dvc;
            params.v.offset = v_offset0 + (int32_t)dv0 * params.v.stride[3];
            params.o.offset = o_offset0 + (int32_t)dv0 * params.o.stride[3];
            inputs[0] = &params.q;
            inputs[1] = &params.k;
            inputs[2] = &params.v;
            for (i = 0; i < 3; i++)
                if ((i < 2 ? dd : dvc) % 8 == 0 && bind[i].offset % 16 == 0 && dk__vkop_vec_view(inputs[i], 3, vw))
                    mode |= (uint32_t)DK_VK_AT_MODE_VEC_Q << i;
            mode |= (dvc <= 64 ? 0u : dvc <= 128 ? 1u : 2u) << DK_VK_AT_MODE_OTILE_SHIFT;
            if (dk__vk(ctx)->props.limits.maxComputeSharedMemorySize >= 40192) mode |= DK_VK_AT_MODE_BIG_SLICES;
            dk__vkop_spec(spec, &params.epilogue, q->dtype, DK_ACT_NONE, 0, q->dtype, mode);
            bq = dvc <= 128 ? 64 : 32;
            st = dk__vk_dispatch(ctx, DK_VK_SH_ATTENTION, spec, bind, &params, sizeof params,
                                 (uint64_t)(q->shape[2] + bq - 1) / bq, (uint32_t)q->shape[1], (uint32_t)q->shape[0]);
            if (st != DK_OK) return st;
        }
        return DK_OK;
    }
}
