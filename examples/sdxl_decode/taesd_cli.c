/* difkern-vae with the TAESD family's tiny autoencoders (include/difkern/taesd.h):
 * decode, encode and roundtrip on host floats or (--device) device tensors. */
#define _POSIX_C_SOURCE 200809L /* PATH_MAX, fileno */

#include "file_write.h"
#include "image_io.h"
#include "sdxl_decode.h"
#include "vae_cli.h"

#include <difkern/taesd.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --device: x [4-D xs] uploaded into an f32 device tensor, run into an f32 device
 * tensor of shape ys, downloaded into y.  *ms: the call and the wait for it,
 * without the transfers (as a runtime holding device tensors sees it). */
static dk_status taesd_device(dk_context *ctx, dk_taesd *tae, int encode, const float *x, const int64_t *xs,
                              float *y, const int64_t *ys, double *ms) {
    const uint64_t xb = (uint64_t)(xs[0] * xs[1] * xs[2] * xs[3]) * sizeof(float),
                   yb = (uint64_t)(ys[0] * ys[1] * ys[2] * ys[3]) * sizeof(float);
    dk_buffer *bx = NULL, *by = NULL;
    dk_tensor tx, ty;
    double t0;
    dk_status st = dk_buffer_create(ctx, xb, &bx);
    if (st == DK_OK) st = dk_buffer_create(ctx, yb, &by);
    if (st == DK_OK) st = dk_buffer_upload(ctx, bx, 0, x, xb);
    if (st == DK_OK) st = dk_sync(ctx);
    if (st == DK_OK) {
        tx = dk_tensor_contiguous(bx, 0, DK_F32, 4, xs);
        ty = dk_tensor_contiguous(by, 0, DK_F32, 4, ys);
        t0 = sdxl_now_ms();
        st = encode ? dk_taesd_encode_tensor(tae, &tx, &ty) : dk_taesd_decode_tensor(tae, &tx, &ty);
        if (st == DK_OK) st = dk_sync(ctx);
        *ms = sdxl_now_ms() - t0;
    }
    if (st == DK_OK) st = dk_buffer_download(ctx, by, 0, y, yb);
    dk_buffer_destroy(ctx, bx);
    dk_buffer_destroy(ctx, by);
    return st;
}

int vae_taesd_run(const sdxl_args *a, dk_taesd_model model) {
    dk_context_options co;
    dk_context *ctx = NULL;
    dk_taesd_options to;
    dk_taesd *tae = NULL;
    dk_taesd_properties props;
    const char *inputs[3];
    float *in = NULL, *lat = NULL, *img = NULL;
    int32_t n = 0, h = 0, w = 0, lh, lw, b, r, repeats = a->repeat > 1 ? a->repeat : 1;
    uint64_t cur = 0, peak = 0;
    int rc = 1, decode = !strcmp(a->cmd, "decode"), encode = !strcmp(a->cmd, "encode");
    double t0;
    char path[PATH_MAX];

    if (a->tile_rows || a->max_bytes || a->sample || a->random_weights || a->plan || a->scale != 0.0f ||
        a->allow_nonfinite) {
        sdxl_err("%s: --tile, --max-memory, --sample, --random-weights, --plan, --scale and "
                 "--allow-nonfinite are for AutoencoderKL weights, not the TAESD family's\n", a->cmd);
        return 2;
    }
    inputs[0] = a->vae;
    inputs[1] = decode ? a->latent : a->image;
    inputs[2] = a->decoder ? a->decoder : a->vae;
    if (!sdxl_check_output(a->out, inputs, 3)) return 1;
    dk_context_options_init(&co);
    co.backend = a->backend;
    if (dk_context_create(&co, &ctx) != DK_OK) {
        sdxl_err("%s\n", dk_last_error(NULL));
        return 1;
    }
    dk_taesd_options_init(&to);
    to.model = model;
    to.dtype = a->dtype_set ? a->dtype : dk_context_backend(ctx) == DK_BACKEND_CPU ? DK_F32 : DK_F16;
    if (a->decoder ? dk_taesd_create_from_files(ctx, a->vae, a->decoder, &to, &tae) != DK_OK
                   : dk_taesd_create_from_file(ctx, a->vae, &to, &tae) != DK_OK) {
        sdxl_err("%s\n", dk_last_error(ctx));
        goto done;
    }
    dk_taesd_properties_get(tae, &props);
    printf("backend: %s\nmodel: %s (%d latent channels), %s, encoder %s, decoder %s\n", dk_context_describe(ctx),
           dk_taesd_model_name(props.model), (int)props.latent_channels, dk_dtype_name(props.dtype),
           props.encoder_naming ? props.encoder_naming : "absent", props.decoder_naming ? props.decoder_naming : "absent");
    if ((!decode && !props.has_encoder) || (!encode && !props.has_decoder)) {
        sdxl_err("%s: the weights hold no %s (give %s)\n", a->cmd,
                !props.has_encoder && !decode ? "encoder" : "decoder",
                !strcmp(a->cmd, "roundtrip") ? "--vae with both directions, or --decoder" : "the other file");
        goto done;
    }
    if (decode) {
        if (!sdxl_load_latents(a->latent, props.latent_channels, a->max_host_bytes, &lat, &n, &lh, &lw)) goto done;
        h = lh * 8;
        w = lw * 8;
    } else {
        in = dv_load_image(a->image, 0.0f, &n, &h, &w);
        if (!in) goto done;
        lh = (h + 7) / 8;
        lw = (w + 7) / 8;
        lat = (float *)malloc((size_t)n * props.latent_channels * lh * lw * sizeof(float));
        if (!lat) {
            sdxl_err("out of memory for the latents\n");
            goto done;
        }
    }
    /* The latents' channels come from the weights, so the batch's file names
     * are known only now: all of them are checked before anything runs. */
    for (b = 0; b < n && !encode && n > 1; b++)
        if (!sdxl_output_name(a->out, n, b, path, sizeof path) || !sdxl_check_output(path, inputs, 3)) {
            if (!sdxl_output_name(a->out, n, b, path, sizeof path))
                sdxl_err("-o %s: the name of image %d is too long\n", a->out, (int)b);
            goto done;
        }
    if (!encode) {
        if (!sdxl_check_image_size((int64_t)lh * 8, (int64_t)lw * 8, a->max_host_bytes)) goto done;
        img = (float *)malloc((size_t)n * 3 * ((size_t)lh * 8) * ((size_t)lw * 8) * sizeof(float));
        if (!img) {
            sdxl_err("out of memory for the image\n");
            goto done;
        }
    }
    dk_memory_reset_peak(ctx);
    for (r = 0; r < repeats; r++) {
        const int64_t is[4] = {n, 3, h, w}, ls[4] = {n, props.latent_channels, lh, lw},
                      os[4] = {n, 3, (int64_t)lh * 8, (int64_t)lw * 8};
        dk_status st = DK_OK;
        double ms = 0.0;
        if (!decode) {
            t0 = sdxl_now_ms();
            st = a->device ? taesd_device(ctx, tae, 1, in, is, lat, ls, &ms) : dk_taesd_encode_f32(tae, in, n, h, w, lat);
            if (st == DK_OK) printf("encode %d: %.2f ms\n", (int)r + 1, a->device ? ms : sdxl_now_ms() - t0);
        }
        if (st == DK_OK && !encode) {
            t0 = sdxl_now_ms();
            st = a->device ? taesd_device(ctx, tae, 0, lat, ls, img, os, &ms)
                           : dk_taesd_decode_f32(tae, lat, n, lh, lw, img);
            if (st == DK_OK) printf("decode %d: %.2f ms\n", (int)r + 1, a->device ? ms : sdxl_now_ms() - t0);
        }
        if (st != DK_OK) {
            sdxl_err("%s: %s\n", a->cmd, dk_last_error(ctx));
            goto done;
        }
    }
    if (dk_memory_usage(ctx, &cur, &peak) == DK_OK) printf("peak device memory: %.1f MiB\n", peak / 1048576.0);
    if (encode) {
        if (!dv_write_npy(a->out, lat, n, props.latent_channels, lh, lw)) goto done;
    } else {
        for (b = 0; b < n; b++) {
            const float *im = img + (size_t)b * 3 * ((size_t)lh * 8) * ((size_t)lw * 8);
            if (!sdxl_output_name(a->out, n, b, path, sizeof path)) {
                sdxl_err("-o %s: the name of image %d is too long\n", a->out, (int)b);
                goto done;
            }
            if (!decode && (lh * 8 != h || lw * 8 != w)) {
                sdxl_err("roundtrip: %dx%d is not a multiple of 8: compared on the decoded size\n",
                        (int)w, (int)h);
                goto done;
            }
            if (!decode)
                printf("round trip PSNR (image %d): %.2f dB\n", (int)b,
                       dv_psnr(im, in + (size_t)b * 3 * h * w, (int64_t)3 * h * w, 0.0f));
            if (!sdxl_write_image(path, im, lh * 8, lw * 8, 0.0f)) goto done;
        }
    }
    rc = 0;
done:
    free(in);
    free(lat);
    free(img);
    dk_taesd_destroy(tae);
    dk_context_destroy(ctx);
    return rc;
}

