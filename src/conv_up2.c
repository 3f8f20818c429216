/* Nearest-2x upsample fused into a stride-1, dilation-1 conv2d, as four phase
 * convs on the original input (see dk_internal.h, dk__up2_axis): the taps of
 * the original kernel that read the same input pixel for an output parity are
 * summed into one, so a 3x3 kernel becomes four 2x2 kernels (2.25x fewer
 * multiply-adds).  The summed weights are made here, on the host, in fp32 and
 * rounded once to the weight's dtype. */
#include "plan.h"
#include "../backends/backend.h"

#include <stdlib.h>

static int64_t up2_floor_half(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

void dk__up2_axis(int64_t k, int64_t pad, dk_up2_axis *ax) {
    int a;
    ax->tmax = 0;
    for (a = 0; a < 2; a++) {
        ax->off0[a] = up2_floor_half(a - pad);
        ax->taps[a] = up2_floor_half(a + k - 1 - pad) - ax->off0[a] + 1;
        if (ax->taps[a] > ax->tmax) ax->tmax = ax->taps[a];
    }
}

dk_status dk__up2_weights(dk_context *ctx, const dk_tensor *w, int64_t pad_h, int64_t pad_w, void *out,
                          const int64_t os[4]) {
    const int64_t cout = w->shape[0], cin = w->shape[1], kh = w->shape[2], kw = w->shape[3];
    const size_t es = dk_dtype_size(w->dtype);
    dk_up2_axis ah, aw;
    int64_t span = 0, i, co, ci, y, x, vh, vw, *vy[2], *vx[2];
    uint8_t *host;
    float *acc;
    dk_status st;
    dk__up2_axis(kh, pad_h, &ah);
    dk__up2_axis(kw, pad_w, &aw);
    vh = 2 * ah.tmax;
    vw = 2 * aw.tmax;
    for (i = 0; i < 4; i++) span += (w->shape[i] - 1) * w->strides[i];
    host = (uint8_t *)malloc((size_t)(span + 1) * es);
    acc = (float *)calloc((size_t)(vh * vw), sizeof *acc);
    vy[0] = (int64_t *)malloc((size_t)(2 * (kh + kw)) * sizeof(int64_t));
    if (!host || !acc || !vy[0]) {
        free(host);
        free(acc);
        free(vy[0]);
        return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "dk_conv2d: out of host memory for the upsample phase weights");
    }
    st = ctx->ops->buffer_download(ctx, w->buffer, w->offset, host, (uint64_t)(span + 1) * es);
    vy[1] = vy[0] + kh;
    vx[0] = vy[1] + kh;
    vx[1] = vx[0] + kw;
    /* virtual tap (a * tmax + t, b * tmax + u) sums the taps (y, x) with
     * floor((a + y - pad) / 2) == off0[a] + t, likewise along x */
    for (y = 0; y < kh; y++)
        for (i = 0; i < 2; i++) vy[i][y] = i * ah.tmax + up2_floor_half(i + y - pad_h) - ah.off0[i];
    for (x = 0; x < kw; x++)
        for (i = 0; i < 2; i++) vx[i][x] = i * aw.tmax + up2_floor_half(i + x - pad_w) - aw.off0[i];
    for (co = 0; st == DK_OK && co < cout; co++)
        for (ci = 0; ci < cin; ci++) {
            for (i = 0; i < vh * vw; i++) acc[i] = 0.0f;
            for (y = 0; y < kh; y++)
                for (x = 0; x < kw; x++) {
                    const int64_t e = co * w->strides[0] + ci * w->strides[1] + y * w->strides[2] + x * w->strides[3];
                    float v;
                    if (w->dtype == DK_F32)
                        memcpy(&v, host + e * 4, 4);
                    else {
                        uint16_t h;
                        memcpy(&h, host + e * 2, 2);
                        v = w->dtype == DK_F16 ? dk__f16_to_f32(h) : dk__bf16_to_f32(h);
                    }
                    acc[vy[0][y] * vw + vx[0][x]] += v;
                    acc[vy[0][y] * vw + vx[1][x]] += v;
                    acc[vy[1][y] * vw + vx[0][x]] += v;
                    acc[vy[1][y] * vw + vx[1][x]] += v;
                }
            for (y = 0; y < vh; y++)
                for (x = 0; x < vw; x++) {
                    uint8_t *d = (uint8_t *)out + (co * os[0] + ci * os[1] + y * os[2] + x * os[3]) * (int64_t)es;
                    const float v = acc[y * vw + x];
                    if (w->dtype == DK_F32)
                        memcpy(d, &v, 4);
                    else {
                        const uint16_t h = w->dtype == DK_F16 ? dk_f32_to_f16(v) : dk_f32_to_bf16(v);
                        memcpy(d, &h, 2);
                    }
                }
        }
    free(host);
    free(acc);
    free(vy[0]);
    return st;
}

void dk__up2_weight_key(dk_weight_key *key, const dk_tensor *w, const dk_conv2d_desc *d) {
    dk__weight_key(key, w, (int32_t)DK_WEIGHT_CONV2D, (int32_t)(2 | (d->pad_h << 8) | (d->pad_w << 20)));
}

uint64_t dk__up2_weight_layout(const dk_tensor *w, const dk_conv2d_desc *d, const int order[4], int64_t os[4]) {
    dk_up2_axis ah, aw;
    int64_t ext[4];
    dk__up2_axis(w->shape[2], d->pad_h, &ah);
    dk__up2_axis(w->shape[3], d->pad_w, &aw);
    ext[0] = w->shape[0];
    ext[1] = w->shape[1];
    ext[2] = 2 * ah.tmax;
    ext[3] = 2 * aw.tmax;
    dk__weight_pack_strides(ext, order, os);
    return (uint64_t)(ext[0] * ext[1] * ext[2] * ext[3]);
}

void *dk__up2_weights_host(dk_context *ctx, const dk_tensor *w, const dk_conv2d_desc *d, const int64_t os[4],
                           uint64_t bytes, dk_status *st) {
    void *host = malloc((size_t)bytes);
    if (!host) {
        *st = dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "dk_conv2d: out of host memory for the upsample phase weights");
        return NULL;
    }
    *st = dk__up2_weights(ctx, w, d->pad_h, d->pad_w, host, os);
    if (*st != DK_OK) {
        free(host);
        return NULL;
    }
    return host;
}
