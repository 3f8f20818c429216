/* AutoencoderKL weights (SD 1.x, SDXL, SD3, FLUX.1) on the dk_vae API
 * (include/difkern/vae.h): decode, encode and roundtrip, shared by
 * difkern-vae and sdxl_decode (which is `decode` with the SDXL model).
 *
 * Everything that can be checked before the weights load is checked first
 * (the latents' or the image's shape and size, every output path).  A batch is
 * decoded and written one image at a time, so host memory holds one image
 * whatever the batch size; it is encoded in one call, so that a posterior
 * sample's noise is that of the whole batch (dk_vae_encode_sample_f32). */
#define _POSIX_C_SOURCE 200809L

#include "file_write.h"
#include "image_io.h"
#include "sdxl_decode.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kl_run {
    const sdxl_args *a;
    dk_context *ctx;
    dk_vae *vae;
    dk_dtype dtype;
    int32_t c;     /* latent channels */
    uint64_t peak; /* the largest dk_memory_usage peak after a call */
} kl_run;

static void kl_progress(void *user, int32_t stage, const char *name, double ms) {
    (void)user;
    fprintf(stderr, "  [%d/%d] %-14s %9.1f ms\n", (int)stage + 1, DK_VAE_NUM_STAGES, name, ms);
}

/* Each call resets the context's peak when it starts: the run's peak is the
 * largest one seen after a call. */
static void kl_note_peak(kl_run *k) {
    uint64_t cur = 0, peak = 0;
    if (dk_memory_usage(k->ctx, &cur, &peak) == DK_OK && peak > k->peak) k->peak = peak;
}

/* --device decode: the latents uploaded into a device tensor, decoded into a
 * device image of the compute dtype (info's time covers only that call), then
 * the image converted to f32 on the device and downloaded into img. */
static dk_status kl_decode_device(kl_run *k, const float *lat, int32_t h, int32_t w, float *img, dk_vae_info *info) {
    const int64_t ls[4] = {1, k->c, h, w}, is[4] = {1, 3, 8 * (int64_t)h, 8 * (int64_t)w};
    const uint64_t lbytes = (uint64_t)k->c * (uint64_t)h * (uint64_t)w * sizeof(float),
                   ibytes = (uint64_t)(3 * is[2] * is[3]);
    dk_buffer *bl = NULL, *bi = NULL, *bf = NULL;
    dk_tensor tl, ti, tf;
    dk_status st = dk_buffer_create(k->ctx, lbytes, &bl);
    if (st == DK_OK) st = dk_buffer_create(k->ctx, ibytes * dk_dtype_size(k->dtype), &bi);
    if (st == DK_OK) st = dk_buffer_upload(k->ctx, bl, 0, lat, lbytes);
    if (st == DK_OK) st = dk_sync(k->ctx);
    if (st == DK_OK) {
        tl = dk_tensor_contiguous(bl, 0, DK_F32, 4, ls);
        ti = dk_tensor_contiguous(bi, 0, k->dtype, 4, is);
        st = dk_vae_decode_tensor(k->vae, &tl, &ti, info);
        kl_note_peak(k);
    }
    if (st == DK_OK) st = dk_buffer_create(k->ctx, ibytes * sizeof(float), &bf);
    if (st == DK_OK) {
        tf = dk_tensor_contiguous(bf, 0, DK_F32, 4, is);
        st = dk_convert(k->ctx, &ti, &tf);
    }
    if (st == DK_OK) st = dk_buffer_download(k->ctx, bf, 0, img, ibytes * sizeof(float));
    dk_buffer_destroy(k->ctx, bl);
    dk_buffer_destroy(k->ctx, bi);
    dk_buffer_destroy(k->ctx, bf);
    return st;
}

/* --device encode: the image [n, 3, hh, ww] uploaded as an f32 device tensor,
 * encoded into f32 device latents, downloaded into lat. */
static dk_status kl_encode_device(kl_run *k, const float *image, int32_t n, int32_t hh, int32_t ww, float *lat,
                                  dk_vae_info *info) {
    const int64_t is[4] = {n, 3, hh, ww}, ls[4] = {n, k->c, hh / 8, ww / 8};
    const uint64_t ibytes = (uint64_t)(is[0] * 3 * is[2] * is[3]) * sizeof(float),
                   lbytes = (uint64_t)(ls[0] * ls[1] * ls[2] * ls[3]) * sizeof(float);
    dk_buffer *bi = NULL, *bl = NULL;
    dk_tensor ti, tl;
    dk_status st = dk_buffer_create(k->ctx, ibytes, &bi);
    if (st == DK_OK) st = dk_buffer_create(k->ctx, lbytes, &bl);
    if (st == DK_OK) st = dk_buffer_upload(k->ctx, bi, 0, image, ibytes);
    if (st == DK_OK) st = dk_sync(k->ctx);
    if (st == DK_OK) {
        ti = dk_tensor_contiguous(bi, 0, DK_F32, 4, is);
        tl = dk_tensor_contiguous(bl, 0, DK_F32, 4, ls);
        st = dk_vae_encode_tensor(k->vae, &ti, &tl, k->a->sample, k->a->seed, info);
        kl_note_peak(k);
    }
    if (st == DK_OK) st = dk_buffer_download(k->ctx, bl, 0, lat, lbytes);
    dk_buffer_destroy(k->ctx, bi);
    dk_buffer_destroy(k->ctx, bl);
    return st;
}

static int has_nonfinite(const float *p, int64_t n) {
    int64_t i;
    for (i = 0; i < n; i++)
        if (!isfinite(p[i])) return 1;
    return 0;
}

/* Loads the weights (file or seeded random) and prints what they are. */
static int kl_load(kl_run *k, dk_vae_options *o) {
    const sdxl_args *a = k->a;
    double t0 = sdxl_now_ms();
    dk_vae_options_init(o);
    o->model = a->kl_model;
    if (a->scale != 0.0f) o->scaling_factor = a->scale;
    o->tile_rows = a->tile_rows;
    o->max_device_bytes = a->max_bytes;
    if (a->stages) o->progress = kl_progress;
    o->allow_nonfinite = a->allow_nonfinite;
    /* upload only the direction used: a full VAE file's other half would cost device memory */
    o->parts = !strcmp(a->cmd, "decode") ? DK_VAE_PARTS_DECODER
               : !strcmp(a->cmd, "encode") ? DK_VAE_PARTS_ENCODER : DK_VAE_PARTS_ALL;
    if (a->vae ? dk_vae_create_from_file(k->ctx, a->vae, k->dtype, o, &k->vae) != DK_OK
               : dk_vae_create_random(k->ctx, a->seed, k->dtype, o, &k->vae) != DK_OK) {
        sdxl_err("%s\n", dk_last_error(k->ctx));
        return 0;
    }
    printf("weights: %s (%s naming), %s, loaded in %.0f ms\n", a->vae ? a->vae : "seeded random",
           dk_vae_naming(k->vae), dk_dtype_name(k->dtype), sdxl_now_ms() - t0);
    printf("model: %s%s, %d latent channels, scaling %g, shift %g, decoder %s, encoder %s\n",
           dk_vae_model_name(dk_vae_get_model(k->vae)), a->kl_model == DK_VAE_AUTO ? " (auto)" : "",
           (int)dk_vae_latent_channels(k->vae), (double)dk_vae_scaling_factor(k->vae),
           (double)dk_vae_shift_factor(k->vae), dk_vae_has_decoder(k->vae) ? "yes" : "no",
           dk_vae_has_encoder(k->vae) ? "yes" : "no");
    if (strcmp(a->cmd, "encode") && !dk_vae_has_decoder(k->vae)) {
        sdxl_err("%s: %s holds no decoder (decoder.* tensors): it cannot decode\n", a->cmd, a->vae);
        return 0;
    }
    if (strcmp(a->cmd, "decode") && !dk_vae_has_encoder(k->vae)) {
        sdxl_err("%s: %s holds no encoder (encoder.* tensors; a decoder-only file): it cannot encode\n", a->cmd,
                 a->vae ? a->vae : "the weights");
        return 0;
    }
    k->c = dk_vae_latent_channels(k->vae);
    if (!strcmp(a->cmd, "decode") && !a->plan && k->c != a->kl_channels) {
        sdxl_err("%s: the latents have %d channels; %s takes %d\n", a->latent, (int)a->kl_channels,
                 dk_vae_model_name(dk_vae_get_model(k->vae)), (int)k->c);
        return 0;
    }
    return 1;
}

static void kl_print_plan(const char *what, const dk_vae_info *p) {
    printf("plan: %s: %s, activations %.1f MiB + weights %.1f MiB = %.1f MiB (--max-memory also keeps %.1f MiB "
           "for backend scratch)\n",
           what, p->banded ? "banded" : "untiled", p->plan_device_bytes / 1048576.0,
           p->weight_device_bytes / 1048576.0, (p->plan_device_bytes + p->weight_device_bytes) / 1048576.0,
           p->scratch_reserve_bytes / 1048576.0);
}

int vae_kl_run(const sdxl_args *a) {
    const int decode = !strcmp(a->cmd, "decode"), encode = !strcmp(a->cmd, "encode");
    kl_run k;
    dk_context_options co;
    dk_vae_options o;
    dk_vae_info info;
    float *lat = NULL, *in = NULL, *img = NULL;
    void *pixels = NULL;
    int32_t n = 1, h = 0, w = 0, hh = 0, ww = 0, b;
    int ok = 0, r, repeats = a->repeat > 1 ? a->repeat : 1, fallback = 0, banded = 0;
    double total_ms = 0.0, first_ms = 0.0, best_later = -1.0;
    char path[PATH_MAX], what[128];
    const char *inputs[2];

    memset(&k, 0, sizeof k);
    memset(&info, 0, sizeof info);
    k.a = a;
    if (a->decoder) {
        sdxl_err("%s: --decoder is for the TAESD family's separate files; AutoencoderKL weights hold both "
                 "directions in one file\n", a->cmd);
        return 2;
    }
    /* Everything that can fail cheaply first, before the weights load. */
    if (!a->plan) {
        int nin = 0;
        if (a->vae) inputs[nin++] = a->vae;
        inputs[nin++] = decode ? a->latent : a->image;
        if (decode) {
            if (!sdxl_load_latents(a->latent, a->kl_channels, a->max_host_bytes, &lat, &n, &h, &w)) return 1;
        } else {
            in = dv_load_image(a->image, -1.0f, &n, &hh, &ww);
            if (!in) return 1;
            if (hh % 8 || ww % 8) {
                sdxl_err("%s: %s: the image is %dx%d; AutoencoderKL takes a width and height that are multiples "
                         "of 8\n", a->cmd, a->image, (int)ww, (int)hh);
                goto done;
            }
            h = hh / 8;
            w = ww / 8;
            if (!encode && !sdxl_check_image_size(hh, ww, a->max_host_bytes)) goto done;
        }
        for (b = 0; b < (encode ? 1 : n); b++) {
            if (!sdxl_output_name(a->out, encode ? 1 : n, b, path, sizeof path)) {
                sdxl_err("-o %s: the name of image %d is %d bytes or longer\n", a->out, (int)b, PATH_MAX);
                goto done;
            }
            if (!sdxl_check_output(path, inputs, nin)) goto done;
        }
    }
    dk_context_options_init(&co);
    co.backend = a->backend;
    if (dk_context_create(&co, &k.ctx) != DK_OK) {
        sdxl_err("%s\n", dk_last_error(NULL));
        goto done;
    }
    k.dtype = a->dtype_set ? a->dtype : dk_context_backend(k.ctx) == DK_BACKEND_CPU ? DK_F32 : DK_F16;
    printf("backend: %s\n", dk_context_describe(k.ctx));
    if (!kl_load(&k, &o)) goto done;
    if (a->plan) {
        if (dk_vae_plan(k.vae, a->plan_size, a->plan_size, &info) != DK_OK) {
            sdxl_err("%s\n", dk_last_error(k.ctx));
            goto done;
        }
        printf("plan for a %dx%d latent (%dx%d image): %s, activations %.1f MiB + weights %.1f MiB = %.1f MiB "
               "(--max-memory also keeps %.1f MiB for backend scratch)\n",
               (int)a->plan_size, (int)a->plan_size, (int)a->plan_size * 8, (int)a->plan_size * 8,
               info.banded ? "banded" : "untiled", info.plan_device_bytes / 1048576.0,
               info.weight_device_bytes / 1048576.0,
               (info.plan_device_bytes + info.weight_device_bytes) / 1048576.0, info.scratch_reserve_bytes / 1048576.0);
        ok = 1;
        goto done;
    }
    if (!decode) {
        if (dk_vae_plan_encode(k.vae, hh, ww, &info) != DK_OK) {
            sdxl_err("%s\n", dk_last_error(k.ctx));
            goto done;
        }
        snprintf(what, sizeof what, "encode of a %dx%d image", (int)ww, (int)hh);
        kl_print_plan(what, &info);
        lat = (float *)malloc((size_t)n * (size_t)k.c * (size_t)h * (size_t)w * sizeof(float));
        if (!lat) {
            sdxl_err("out of memory for the latents\n");
            goto done;
        }
    }
    if (!encode) {
        if (dk_vae_plan(k.vae, h, w, &info) != DK_OK) {
            sdxl_err("%s\n", dk_last_error(k.ctx));
            goto done;
        }
        snprintf(what, sizeof what, "decode of a %dx%d latent (%dx%d image)", (int)w, (int)h, (int)w * 8, (int)h * 8);
        kl_print_plan(what, &info);
        /* One image's floats (the batch is streamed), in pinned host memory
         * where the backend has it: the device writes the pixels straight into
         * it.  Sizes were checked above. */
        if (dk_host_alloc(k.ctx, (uint64_t)3 * 64 * (uint64_t)h * (uint64_t)w * sizeof(float), &pixels) != DK_OK)
            pixels = NULL;
        img = (float *)pixels;
        if (!img) {
            sdxl_err("cannot allocate %llu bytes for one %dx%d image: %s\n",
                     (unsigned long long)3 * 64 * (uint64_t)h * (uint64_t)w * sizeof(float), (int)w * 8, (int)h * 8,
                     dk_last_error(k.ctx));
            goto done;
        }
    }
    fprintf(stderr, "%s %d %s of %dx%d%s\n", encode ? "encoding" : decode ? "decoding" : "encoding and decoding",
            (int)n, decode ? "latent(s)" : "image(s)", decode ? (int)w : (int)ww, decode ? (int)h : (int)hh,
            a->device ? " (device tensors)" : "");
    for (r = 0; r < repeats; r++) {
        double ms = 0.0, run_ms = 0.0; /* the decodes' time; the run's, encode included */
        dk_status st;
        if (!decode) {
            st = a->device ? kl_encode_device(&k, in, n, hh, ww, lat, &info)
                 : a->sample ? dk_vae_encode_sample_f32(k.vae, in, n, hh, ww, a->seed, lat, &info)
                             : dk_vae_encode_f32(k.vae, in, n, hh, ww, lat, &info);
            kl_note_peak(&k);
            if (st != DK_OK) {
                sdxl_err("%s: %s\n", a->cmd, dk_last_error(k.ctx));
                goto done;
            }
            fallback |= info.fp16_fallback;
            printf("encode %d: %.2f ms\n", (int)r + 1, info.elapsed_ms);
            run_ms = info.elapsed_ms;
        }
        for (b = 0; b < n && !encode; b++) {
            const float *lb = lat + (int64_t)b * k.c * h * w;
            st = a->device ? kl_decode_device(&k, lb, h, w, img, &info)
                           : dk_vae_decode_f32(k.vae, lb, 1, h, w, img, &info);
            kl_note_peak(&k);
            if (st != DK_OK) {
                sdxl_err("latent %d: %s\n", (int)b, dk_last_error(k.ctx));
                if (st == DK_ERR_NON_FINITE)
                    sdxl_err("no image written for it (--allow-nonfinite writes it anyway)\n");
                goto done;
            }
            ms += info.elapsed_ms;
            fallback |= info.fp16_fallback;
            banded |= info.banded;
            if (r + 1 < repeats) continue;
            if (!sdxl_output_name(a->out, n, b, path, sizeof path)) goto done; /* checked above */
            if (a->allow_nonfinite && has_nonfinite(img, (int64_t)3 * 64 * h * w))
                sdxl_err("warning: image %d holds NaN/Inf values (written as black pixels)\n", (int)b);
            if (!decode)
                printf("round trip PSNR (image %d): %.2f dB\n", (int)b,
                       dv_psnr(img, in + (size_t)b * 3 * hh * ww, (int64_t)3 * hh * ww, -1.0f));
            if (!sdxl_write_image(path, img, h * 8, w * 8, -1.0f)) goto done;
        }
        if (!encode) printf("decode %d: %.2f ms\n", (int)r + 1, ms);
        total_ms += ms;
        run_ms += ms;
        if (r == 0) first_ms = run_ms;
        else if (best_later < 0.0 || run_ms < best_later) best_later = run_ms;
        if (r == 0 && repeats > 1 && o.progress) { /* the repeats without the per-stage waits of --stages */
            o.progress = NULL;
            if (dk_vae_set_options(k.vae, &o) != DK_OK) {
                sdxl_err("%s\n", dk_last_error(k.ctx));
                goto done;
            }
        }
    }
    /* What the first call costs beyond the work (pipelines built, weights packed):
     * a runtime pays it once per process, or, with a pipeline cache, much less. */
    if (best_later >= 0.0)
        printf("first-call cost: %.2f ms over the fastest later run (GPU pipelines built, weights packed)\n",
               first_ms - best_later);
    if (encode) {
        if (a->allow_nonfinite && has_nonfinite(lat, (int64_t)n * k.c * h * w))
            sdxl_err("warning: the latents hold NaN/Inf values\n");
        if (!dv_write_npy(a->out, lat, n, k.c, h, w)) goto done;
    } else {
        printf("decoded %d image(s) %dx%d in %.1f ms on %s (%s)%s%s\n", (int)n, (int)w * 8, (int)h * 8,
               total_ms / repeats, dk_backend_name(dk_context_backend(k.ctx)), dk_dtype_name(k.dtype),
               banded ? ", banded" : "", fallback ? ", fp16 overflow: redone in fp32" : "");
    }
    printf("peak device memory: %.1f MiB\n", k.peak / 1048576.0);
    ok = 1;
done:
    free(lat);
    free(in);
    if (k.ctx) dk_host_free(k.ctx, pixels);
    dk_vae_destroy(k.vae);
    dk_context_destroy(k.ctx);
    return ok ? 0 : 1;
}
