/* TAESD family encoder: images [N, 3, H, W] in [0, 1] -> latents
 * [N, C, ceil(H/8), ceil(W/8)], from host floats or device tensors. */
#include "taesd_internal.h"

#include <string.h>

/* The latent size of an image side: three stride-2 convs with padding 1. */
static int64_t taee_down(int64_t s) {
    int32_t i;
    for (i = 0; i < 3; i++) s = (s - 1) / 2 + 1;
    return s;
}

dk_status dk__taesd_encode_run(dk_taesd *t, const dk_tensor *x, const dk_tensor *y) {
    int64_t n = x->shape[0], h = x->shape[2], w = x->shape[3], oh, ow;
    int32_t out;
    dk_tensor in, res;
    dk_status st = dk__taesd_reserve(t, n, h, w, taee_down(h), taee_down(w), 0);
    if (st != DK_OK) return st;
    in = dk__taesd_slot(t, 1, n, 3, h, w);
    st = dk_convert(t->ctx, x, &in);
    if (st != DK_OK) return dk__taesd_where(t, st, DK__TAESD_ENC, 0, "image to NHWC");
    st = dk__taesd_forward(t, DK__TAESD_ENC, n, h, w, &out, &oh, &ow);
    if (st != DK_OK) return st;
    res = dk__taesd_slot(t, out, n, t->latent_channels, oh, ow);
    st = dk_convert(t->ctx, &res, y);
    if (st != DK_OK) return dk__taesd_where(t, st, DK__TAESD_ENC, 14, "latents to the output tensor");
    return DK_OK;
}

static dk_status taee_ready(dk_taesd *t, const char *fn) {
    if (!t) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "taesd: %s: tae is NULL", fn);
    if (!t->net[DK__TAESD_ENC].present)
        return dk__fail(t->ctx, DK_ERR_INVALID_ARGUMENT, "taesd: %s: no encoder weights were loaded", fn);
    return DK_OK;
}

dk_status dk_taesd_encode_f32(dk_taesd *tae, const float *images, int32_t batch, int32_t height, int32_t width,
                              float *latents) {
    dk_status st = taee_ready(tae, "encode_f32");
    int64_t c, lh, lw, in_n, out_n;
    dk_tensor x, y;
    if (st != DK_OK) return st;
    c = tae->latent_channels;
    if (!images || !latents)
        return dk__fail(tae->ctx, DK_ERR_INVALID_ARGUMENT, "taesd: encode_f32: %s is NULL",
                        images ? "latents" : "images");
    if (batch < 1 || height < 1 || width < 1)
        return dk__fail(tae->ctx, DK_ERR_INVALID_ARGUMENT,
                        "taesd: encode_f32: batch %d, height %d, width %d: each must be >= 1", (int)batch,
                        (int)height, (int)width);
    if (dk__taesd_bytes(batch, DK__TAESD_CH, height, width, 4) == 0)
        return dk__fail(tae->ctx, DK_ERR_INVALID_ARGUMENT, "taesd: encode_f32: sizes overflow");
    lh = taee_down(height);
    lw = taee_down(width);
    in_n = (int64_t)batch * 3 * height * width;
    out_n = (int64_t)batch * c * lh * lw;
    st = dk__taesd_reserve(tae, batch, height, width, lh, lw, in_n > out_n ? in_n : out_n);
    if (st != DK_OK) return st;
    /* Input and output share the staging buffer (see decode_f32). */
    x = dk_tensor_nchw(tae->io, 0, DK_F32, batch, 3, height, width);
    y = dk_tensor_nchw(tae->io, 0, DK_F32, batch, c, lh, lw);
    st = dk_buffer_upload(tae->ctx, tae->io, 0, images, (uint64_t)in_n * sizeof(float));
    if (st == DK_OK) st = dk__taesd_encode_run(tae, &x, &y);
    if (st == DK_OK) st = dk_buffer_download(tae->ctx, tae->io, 0, latents, (uint64_t)out_n * sizeof(float));
    return st;
}

dk_status dk_taesd_encode_tensor(dk_taesd *tae, const dk_tensor *images, const dk_tensor *latents) {
    dk_status st = taee_ready(tae, "encode_tensor");
    if (st != DK_OK) return st;
    st = dk__taesd_check_tensor(tae, "encode_tensor", "images", images, -1, 3, -1, -1);
    if (st != DK_OK) return st;
    st = dk__taesd_check_tensor(tae, "encode_tensor", "latents", latents, images->shape[0], tae->latent_channels,
                                taee_down(images->shape[2]), taee_down(images->shape[3]));
    if (st != DK_OK) return st;
    return dk__taesd_encode_run(tae, images, latents);
}
