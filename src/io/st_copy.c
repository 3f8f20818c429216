/* dk_st_tensor_copy: convert a file tensor's little-endian F32/F16/BF16 elements
 * into a caller buffer of any of those dtypes, byte by byte (no alignment or
 * host byte-order assumption). */
#include "io_internal.h"

#include <string.h>

static float stcopy_load(const unsigned char *p, dk_dtype t) {
    if (t == DK_F32) {
        uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    return t == DK_F16 ? dk_f16_to_f32((uint16_t)(p[0] | p[1] << 8))
                       : dk_bf16_to_f32((uint16_t)(p[0] | p[1] << 8));
}

static void stcopy_store(unsigned char *p, dk_dtype t, float f) {
    if (t == DK_F32) {
        memcpy(p, &f, 4); /* host order: dst is the caller's native array */
    } else {
        uint16_t h = t == DK_F16 ? dk_f32_to_f16(f) : dk_f32_to_bf16(f);
        memcpy(p, &h, 2);
    }
}

static int stcopy_host_le(void) {
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

dk_status dk_st_tensor_copy(const dk_st_tensor *t, dk_dtype dtype, void *dst, uint64_t dst_bytes) {
    uint64_t numel, i;
    size_t ss, ds;
    const unsigned char *src;
    unsigned char *out = (unsigned char *)dst;
    if (!t) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_st_tensor_copy: t must not be NULL");
    if (t->dtype != DK_F32 && t->dtype != DK_F16 && t->dtype != DK_BF16)
        return dk__fail(NULL, DK_ERR_UNSUPPORTED, "dk_st_tensor_copy: tensor '%.200s' has dtype %s; need F32, F16 or BF16",
                        t->name ? t->name : "?", t->dtype_name ? t->dtype_name : "?");
    if (dtype != DK_F32 && dtype != DK_F16 && dtype != DK_BF16)
        return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_st_tensor_copy: dtype %d is not DK_F32, DK_F16 or DK_BF16",
                        (int)dtype);
    ss = dk_dtype_size(t->dtype);
    ds = dk_dtype_size(dtype);
    if (t->nbytes % ss != 0)
        return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_st_tensor_copy: nbytes %llu is not a multiple of %zu",
                        (unsigned long long)t->nbytes, ss);
    numel = t->nbytes / ss;
    if (numel > UINT64_MAX / ds || dst_bytes < numel * ds)
        return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_st_tensor_copy: dst_bytes %llu < %llu elements * %zu bytes",
                        (unsigned long long)dst_bytes, (unsigned long long)numel, ds);
    if (numel > 0 && (!t->data || !dst))
        return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_st_tensor_copy: %s must not be NULL", !dst ? "dst" : "t->data");
    src = (const unsigned char *)t->data;
    if (dtype == t->dtype && stcopy_host_le()) {
        if (numel > 0) memcpy(dst, src, (size_t)(numel * ss));
        return DK_OK;
    }
    if (dtype == t->dtype) { /* big-endian host: swap bytes */
        for (i = 0; i < numel; i++) {
            size_t b;
            for (b = 0; b < ss; b++) out[i * ss + b] = src[i * ss + ss - 1 - b];
        }
        return DK_OK;
    }
    for (i = 0; i < numel; i++) stcopy_store(out + i * ds, dtype, stcopy_load(src + i * ss, t->dtype));
    return DK_OK;
}
