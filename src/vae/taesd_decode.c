/* TAESD family decoder: latents [N, C, h, w] -> images [N, 3, 8h, 8w], from
 * host floats or device tensors. */
#include "taesd_internal.h"

#include <string.h>

dk_status dk__taesd_decode_run(dk_taesd *t, const dk_tensor *x, const dk_tensor *y) {
    int64_t n = x->shape[0], h = x->shape[2], w = x->shape[3], oh, ow;
    int32_t out;
    dk_tensor in, res;
    dk_status st = dk__taesd_reserve(t, n, 8 * h, 8 * w, h, w, 0);
    if (st != DK_OK) return st;
    in = dk__taesd_slot(t, 1, n, t->latent_channels, h, w);
    st = dk_convert(t->ctx, x, &in);
    if (st != DK_OK) return dk__taesd_where(t, st, DK__TAESD_DEC, 0, "latents to NHWC");
    /* The clamp 3 * tanh(x / 3), in place (+-Inf gives +-3). */
    st = dk_activation_scaled(t->ctx, 1.0f / 3.0f, DK_ACT_TANH, 3.0f, &in, &in);
    if (st != DK_OK) return dk__taesd_where(t, st, DK__TAESD_DEC, 0, "clamp");
    st = dk__taesd_forward(t, DK__TAESD_DEC, n, h, w, &out, &oh, &ow);
    if (st != DK_OK) return st;
    res = dk__taesd_slot(t, out, n, 3, oh, ow);
    st = dk_convert(t->ctx, &res, y);
    if (st != DK_OK) return dk__taesd_where(t, st, DK__TAESD_DEC, 19, "image to the output tensor");
    return DK_OK;
}

static dk_status taed_ready(dk_taesd *t, const char *fn) {
    if (!t) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "taesd: %s: tae is NULL", fn);
    if (!t->net[DK__TAESD_DEC].present)
        return dk__fail(t->ctx, DK_ERR_INVALID_ARGUMENT, "taesd: %s: no decoder weights were loaded", fn);
    return DK_OK;
}

dk_status dk_taesd_decode_f32(dk_taesd *tae, const float *latents, int32_t batch, int32_t h, int32_t w,
                              float *out) {
    dk_status st = taed_ready(tae, "decode_f32");
    int64_t c, in_n, out_n;
    dk_tensor x, y;
    if (st != DK_OK) return st;
    c = tae->latent_channels;
    if (!latents || !out)
        return dk__fail(tae->ctx, DK_ERR_INVALID_ARGUMENT, "taesd: decode_f32: %s is NULL", latents ? "out" : "latents");
    if (batch < 1 || h < 1 || w < 1 || h > INT32_MAX / 8 || w > INT32_MAX / 8)
        return dk__fail(tae->ctx, DK_ERR_INVALID_ARGUMENT,
                        "taesd: decode_f32: batch %d, h %d, w %d: each must be >= 1 and 8h, 8w must fit int32",
                        (int)batch, (int)h, (int)w);
    if (dk__taesd_bytes(batch, c, h, w, 4) == 0 || dk__taesd_bytes(batch, 3, 8 * (int64_t)h, 8 * (int64_t)w, 4) == 0)
        return dk__fail(tae->ctx, DK_ERR_INVALID_ARGUMENT, "taesd: decode_f32: sizes overflow");
    in_n = (int64_t)batch * c * h * w;
    out_n = (int64_t)batch * 3 * 64 * h * w;
    st = dk__taesd_reserve(tae, batch, 8 * (int64_t)h, 8 * (int64_t)w, h, w, in_n > out_n ? in_n : out_n);
    if (st != DK_OK) return st;
    /* Both views share the staging buffer: the input is consumed by the
     * first op, the output written by the last (ops run in order). */
    x = dk_tensor_nchw(tae->io, 0, DK_F32, batch, c, h, w);
    y = dk_tensor_nchw(tae->io, 0, DK_F32, batch, 3, 8 * (int64_t)h, 8 * (int64_t)w);
    st = dk_buffer_upload(tae->ctx, tae->io, 0, latents, (uint64_t)in_n * sizeof(float));
    if (st == DK_OK) st = dk__taesd_decode_run(tae, &x, &y);
    if (st == DK_OK) st = dk_buffer_download(tae->ctx, tae->io, 0, out, (uint64_t)out_n * sizeof(float));
    return st;
}

dk_status dk_taesd_decode_tensor(dk_taesd *tae, const dk_tensor *latents, const dk_tensor *out) {
    dk_status st = taed_ready(tae, "decode_tensor");
    if (st != DK_OK) return st;
    st = dk__taesd_check_tensor(tae, "decode_tensor", "latents", latents, -1, tae->latent_channels, -1, -1);
    if (st != DK_OK) return st;
    if (latents->shape[2] > INT64_MAX / 8 || latents->shape[3] > INT64_MAX / 8)
        return dk__fail(tae->ctx, DK_ERR_INVALID_ARGUMENT, "taesd: decode_tensor: latents are too large");
    st = dk__taesd_check_tensor(tae, "decode_tensor", "out", out, latents->shape[0], 3, 8 * latents->shape[2],
                                8 * latents->shape[3]);
    if (st != DK_OK) return st;
    return dk__taesd_decode_run(tae, latents, out);
}
