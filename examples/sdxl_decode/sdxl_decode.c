/* sdxl_decode: decode SDXL latents (.npy or .safetensors) to PNG images with
 * difkern's SDXL VAE decoder, or run the self-contained demo (--demo). */
#include "sdxl_decode.h"
#include "png_write.h"

#include <difkern/safetensors.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(FILE *f) {
    fprintf(f,
        "usage: sdxl_decode --vae FILE --latent FILE(.npy|.safetensors) -o out.png\n"
        "                   [--backend auto|cpu|vulkan|hip] [--dtype f32|f16|bf16]\n"
        "                   [--tile N | --max-memory MB] [--scale F]\n"
        "       sdxl_decode --demo [-o demo.png] [--size N] [--seed S] [--backend B] [--dtype D]\n"
        "       sdxl_decode [--vae FILE] --plan N [--dtype D] [--tile N | --max-memory MB]\n"
        "\n"
        "  --vae FILE       SDXL VAE weights (.safetensors) from https://huggingface.co/stabilityai/sdxl-vae:\n"
        "                   sdxl_vae.safetensors (original naming) or diffusion_pytorch_model.safetensors\n"
        "                   (diffusers naming); a full SDXL checkpoint works too (first_stage_model.*)\n"
        "  --latent FILE    latents [4,h,w] or [N,4,h,w], float32/float16: a .npy file, or a\n"
        "                   .safetensors file with one tensor (or one named 'latents')\n"
        "  -o FILE          output PNG; a batch of N writes FILE_0.png .. FILE_{N-1}.png\n"
        "  --backend B      default auto (DIFKERN_BACKEND overrides auto)\n"
        "  --dtype D        decode precision; default f32 on the CPU backend, f16 elsewhere\n"
        "  --tile N         decode in bands of N latent rows (bounded device memory,\n"
        "                   same result as untiled)\n"
        "  --max-memory MB  band the decode only when the untiled plan exceeds MB\n"
        "  --scale F        latent scaling factor (default 0.13025, SDXL)\n"
        "  --demo           no files: the full SDXL decoder with seeded random weights decodes\n"
        "                   a seeded random latent (NOT a real image), cross-checked against\n"
        "                   every other backend present and against a tiled decode\n"
        "  --size N         demo latent side (default 4: a 32x32 image; under a minute on 2 CPU cores\n"
        "                   where the Vulkan cross-check runs on lavapipe)\n"
        "  --seed S         demo seed (default 1)\n"
        "  --repeat N       decode N times and print each time (the first builds pipelines and\n"
        "                   reports its stages; the others run without the per-stage waits)\n"
        "  --device         latents and image in device memory (dk_sdxl_vae_decode_tensor, as a runtime\n"
        "                   with device latents calls it): the time is the decode's alone, as a GPU\n"
        "                   framework reports it; the PNG comes from a copy downloaded afterwards\n"
        "  --plan N         print the device memory plan for an N x N latent and exit\n"
        "                   (random weights when no --vae is given)\n");
}

double sdxl_now_ms(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void progress(void *user, int32_t stage, const char *name, double ms) {
    (void)user;
    fprintf(stderr, "  [%d/%d] %-12s %9.1f ms\n", (int)stage + 1, DK_SDXL_VAE_NUM_STAGES, name, ms);
}

void sdxl_options(const sdxl_args *a, dk_sdxl_vae_options *o) {
    dk_sdxl_vae_options_init(o);
    if (a->scale != 0.0f) o->scaling_factor = a->scale;
    o->tile_rows = a->tile_rows;
    o->max_device_bytes = a->max_bytes;
    o->progress = progress;
}

int sdxl_write_images(const char *out, const float *img, int32_t batch, int32_t h, int32_t w) {
    int64_t hw = (int64_t)h * w, i, c;
    unsigned char *rgb = (unsigned char *)malloc((size_t)(hw * 3));
    int32_t b;
    if (!rgb) {
        fprintf(stderr, "sdxl_decode: out of memory\n");
        return 0;
    }
    for (b = 0; b < batch; b++) {
        char path[4096];
        for (i = 0; i < hw; i++)
            for (c = 0; c < 3; c++) {
                float v = (img[(b * 3 + c) * hw + i] + 1.0f) * 0.5f;
                v = v > 0.0f ? (v < 1.0f ? v : 1.0f) : 0.0f;
                rgb[i * 3 + c] = (unsigned char)(v * 255.0f + 0.5f);
            }
        if (batch == 1) {
            snprintf(path, sizeof path, "%s", out);
        } else {
            const char *dot = strrchr(out, '.'), *slash = strrchr(out, '/');
            int stem = dot && (!slash || dot > slash) ? (int)(dot - out) : (int)strlen(out);
            snprintf(path, sizeof path, "%.*s_%d%s", stem, out, (int)b, out + stem);
        }
        if (!sdxl_write_png(path, (int)w, (int)h, rgb)) {
            fprintf(stderr, "sdxl_decode: cannot write %s\n", path);
            free(rgb);
            return 0;
        }
        printf("wrote %s (%dx%d)\n", path, (int)w, (int)h);
    }
    free(rgb);
    return 1;
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Latents as floats [N, 4, h, w]; returns 1 on success. */
static int load_latents(const char *path, float **data, int32_t *n, int32_t *h, int32_t *w) {
    int64_t shape[DK_MAX_DIMS];
    int32_t ndim = 0;
    if (ends_with(path, ".safetensors")) {
        dk_safetensors *f;
        dk_st_tensor t;
        int64_t i, numel = 1;
        if (dk_safetensors_open(path, &f) != DK_OK) {
            fprintf(stderr, "sdxl_decode: %s\n", dk_last_error(NULL));
            return 0;
        }
        if (dk_safetensors_count(f) == 1 ? dk_safetensors_at(f, 0, &t) != DK_OK
                                          : dk_safetensors_find(f, "latents", &t) != DK_OK) {
            fprintf(stderr, "sdxl_decode: %s: expected one tensor or one named 'latents' (F32/F16/BF16): %s\n", path,
                    dk_last_error(NULL));
            dk_safetensors_close(f);
            return 0;
        }
        ndim = t.ndim;
        for (i = 0; i < DK_MAX_DIMS; i++) shape[i] = i < ndim ? t.shape[i] : 1;
        for (i = 0; i < ndim && ndim <= DK_MAX_DIMS; i++) numel *= t.shape[i];
        *data = ndim <= DK_MAX_DIMS ? (float *)malloc((size_t)numel * sizeof(float)) : NULL;
        if (!*data || dk_st_tensor_copy(&t, DK_F32, *data, (uint64_t)numel * sizeof(float)) != DK_OK) {
            fprintf(stderr, "sdxl_decode: %s: cannot read tensor '%s' (%d dims)\n", path, t.name, (int)ndim);
            free(*data);
            dk_safetensors_close(f);
            return 0;
        }
        dk_safetensors_close(f);
    } else {
        float *d;
        if (dk_npy_read_f32(path, &d, &ndim, shape) != DK_OK) {
            fprintf(stderr, "sdxl_decode: %s\n", dk_last_error(NULL));
            return 0;
        }
        /* Own copy so that one free() fits both sources. */
        {
            int64_t i, numel = 1;
            for (i = 0; i < ndim; i++) numel *= shape[i];
            *data = (float *)malloc((size_t)(numel ? numel : 1) * sizeof(float));
            if (*data) memcpy(*data, d, (size_t)numel * sizeof(float));
            dk_npy_free(d);
            if (!*data) return 0;
        }
    }
    if (ndim == 3 && shape[0] == 4) {
        *n = 1; *h = (int32_t)shape[1]; *w = (int32_t)shape[2];
    } else if (ndim == 4 && shape[1] == 4 && shape[0] >= 1) {
        *n = (int32_t)shape[0]; *h = (int32_t)shape[2]; *w = (int32_t)shape[3];
    } else {
        fprintf(stderr, "sdxl_decode: %s: latents must be [4, h, w] or [N, 4, h, w]\n", path);
        free(*data);
        return 0;
    }
    return 1;
}

static int parse_backend(const char *s, dk_backend_kind *k) {
    if (!strcmp(s, "auto")) *k = DK_BACKEND_AUTO;
    else if (!strcmp(s, "cpu")) *k = DK_BACKEND_CPU;
    else if (!strcmp(s, "vulkan")) *k = DK_BACKEND_VULKAN;
    else if (!strcmp(s, "hip")) *k = DK_BACKEND_HIP;
    else return 0;
    return 1;
}

static int parse_dtype(const char *s, dk_dtype *t) {
    if (!strcmp(s, "f32")) *t = DK_F32;
    else if (!strcmp(s, "f16")) *t = DK_F16;
    else if (!strcmp(s, "bf16")) *t = DK_BF16;
    else return 0;
    return 1;
}

static int parse_args(int argc, char **argv, sdxl_args *a) {
    int i;
    memset(a, 0, sizeof *a);
    a->demo_size = 4;
    a->seed = 1;
    for (i = 1; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(s, "--demo")) {
            a->demo = 1;
            continue;
        } else if (!strcmp(s, "--device")) {
            a->device = 1;
            continue;
        }
        if (!strstr(" --vae --latent -o --output --backend --dtype --tile --max-memory --scale --size --seed --plan --repeat ",
                    s) || strchr(s, ' ') || s[0] != '-') {
            fprintf(stderr, "sdxl_decode: unknown option %s (see --help)\n", s);
            return 0;
        }
        if (!v) {
            fprintf(stderr, "sdxl_decode: %s needs a value\n", s);
            return 0;
        }
        i++;
        if (!strcmp(s, "--vae")) a->vae = v;
        else if (!strcmp(s, "--latent")) a->latent = v;
        else if (!strcmp(s, "-o") || !strcmp(s, "--output")) a->out = v;
        else if (!strcmp(s, "--backend")) {
            if (!parse_backend(v, &a->backend)) {
                fprintf(stderr, "sdxl_decode: --backend %s: expected auto, cpu, vulkan or hip\n", v);
                return 0;
            }
        } else if (!strcmp(s, "--dtype")) {
            if (!parse_dtype(v, &a->dtype)) {
                fprintf(stderr, "sdxl_decode: --dtype %s: expected f32, f16 or bf16\n", v);
                return 0;
            }
            a->dtype_set = 1;
        } else if (!strcmp(s, "--repeat")) {
            long r = strtol(v, &end, 10);
            if (*end || r < 1 || r > 1000) {
                fprintf(stderr, "sdxl_decode: --repeat %s: expected 1..1000\n", v);
                return 0;
            }
            a->repeat = (int32_t)r;
        } else if (!strcmp(s, "--tile")) {
            long t = strtol(v, &end, 10);
            if (*end || t < 1 || t > 1 << 20) {
                fprintf(stderr, "sdxl_decode: --tile %s: expected a positive number of latent rows\n", v);
                return 0;
            }
            a->tile_rows = (int32_t)t;
        } else if (!strcmp(s, "--max-memory")) {
            double mb = strtod(v, &end);
            if (*end || !(mb > 0.0 && mb < 1e9)) {
                fprintf(stderr, "sdxl_decode: --max-memory %s: expected megabytes > 0\n", v);
                return 0;
            }
            a->max_bytes = (uint64_t)(mb * 1048576.0);
        } else if (!strcmp(s, "--scale")) {
            a->scale = strtof(v, &end);
            if (*end || !(a->scale > 0.0f)) {
                fprintf(stderr, "sdxl_decode: --scale %s: expected a positive number\n", v);
                return 0;
            }
        } else if (!strcmp(s, "--size")) {
            long t = strtol(v, &end, 10);
            if (*end || t < 1 || t > 512) {
                fprintf(stderr, "sdxl_decode: --size %s: expected 1..512\n", v);
                return 0;
            }
            a->demo_size = (int32_t)t;
        } else if (!strcmp(s, "--seed")) {
            a->seed = strtoull(v, &end, 10);
            if (*end) {
                fprintf(stderr, "sdxl_decode: --seed %s: expected a number\n", v);
                return 0;
            }
        } else if (!strcmp(s, "--plan")) {
            long t = strtol(v, &end, 10);
            if (*end || t < 1 || t > 4096) {
                fprintf(stderr, "sdxl_decode: --plan %s: expected a latent side 1..4096\n", v);
                return 0;
            }
            a->plan = 1;
            a->plan_size = (int32_t)t;
        } else {
            fprintf(stderr, "sdxl_decode: unknown option %s (see --help)\n", s);
            return 0;
        }
    }
    if (a->tile_rows && a->max_bytes) {
        fprintf(stderr, "sdxl_decode: give --tile or --max-memory, not both\n");
        return 0;
    }
    if (!a->demo && !a->plan && (!a->vae || !a->latent || !a->out)) {
        fprintf(stderr, "sdxl_decode: --vae, --latent and -o are required (or --demo); see --help\n");
        return 0;
    }
    return 1;
}

/* --device: the latents uploaded into a device tensor, decoded into a device
 * image of the decode dtype (info's time covers only that call), then the image
 * converted to f32 on the device and downloaded into img for the PNG. */
static int decode_on_device(dk_context *ctx, dk_sdxl_vae *vae, const float *lat, int32_t n, int32_t h, int32_t w,
                            dk_dtype dtype, float *img, dk_sdxl_vae_info *info) {
    const int64_t ls[4] = {n, 4, h, w}, is[4] = {n, 3, 8 * (int64_t)h, 8 * (int64_t)w};
    const uint64_t lbytes = (uint64_t)(n * 4 * h * w) * sizeof(float), ibytes = (uint64_t)(is[0] * 3 * is[2] * is[3]);
    dk_buffer *bl = NULL, *bi = NULL, *bf = NULL;
    dk_tensor tl, ti, tf;
    int ok = dk_buffer_create(ctx, lbytes, &bl) == DK_OK && dk_buffer_create(ctx, ibytes * dk_dtype_size(dtype), &bi) == DK_OK &&
             dk_buffer_upload(ctx, bl, 0, lat, lbytes) == DK_OK && dk_sync(ctx) == DK_OK;
    if (ok) {
        tl = dk_tensor_contiguous(bl, 0, DK_F32, 4, ls);
        ti = dk_tensor_contiguous(bi, 0, dtype, 4, is);
        ok = dk_sdxl_vae_decode_tensor(vae, &tl, &ti, info) == DK_OK &&
             dk_buffer_create(ctx, ibytes * sizeof(float), &bf) == DK_OK;
    }
    if (ok) {
        tf = dk_tensor_contiguous(bf, 0, DK_F32, 4, is);
        ok = dk_convert(ctx, &ti, &tf) == DK_OK && dk_buffer_download(ctx, bf, 0, img, ibytes * sizeof(float)) == DK_OK;
    }
    dk_buffer_destroy(ctx, bl);
    dk_buffer_destroy(ctx, bi);
    dk_buffer_destroy(ctx, bf);
    return ok;
}

static int decode_files(const sdxl_args *a) {
    dk_context_options co;
    dk_context *ctx = NULL;
    dk_sdxl_vae *vae = NULL;
    dk_sdxl_vae_options o;
    dk_sdxl_vae_info info;
    dk_dtype dtype;
    float *lat = NULL, *img = NULL;
    void *pixels = NULL;
    int32_t n = 1, h = 0, w = 0;
    int ok = 0, r;
    double t0;
    dk_context_options_init(&co);
    co.backend = a->backend;
    if (dk_context_create(&co, &ctx) != DK_OK) {
        fprintf(stderr, "sdxl_decode: %s\n", dk_last_error(NULL));
        return 1;
    }
    dtype = a->dtype_set ? a->dtype : dk_context_backend(ctx) == DK_BACKEND_CPU ? DK_F32 : DK_F16;
    printf("backend: %s\n", dk_context_describe(ctx));
    sdxl_options(a, &o);
    t0 = sdxl_now_ms();
    if (a->vae ? dk_sdxl_vae_create_from_file(ctx, a->vae, dtype, &o, &vae) != DK_OK
               : dk_sdxl_vae_create_random(ctx, a->seed, dtype, &o, &vae) != DK_OK) {
        fprintf(stderr, "sdxl_decode: %s\n", dk_last_error(ctx));
        goto done;
    }
    printf("weights: %s (%s naming), %s, loaded in %.0f ms\n", a->vae ? a->vae : "seeded random",
           dk_sdxl_vae_naming(vae), dk_dtype_name(dtype), sdxl_now_ms() - t0);
    if (a->plan) {
        if (dk_sdxl_vae_plan(vae, a->plan_size, a->plan_size, &info) != DK_OK) {
            fprintf(stderr, "sdxl_decode: %s\n", dk_last_error(ctx));
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
    if (!load_latents(a->latent, &lat, &n, &h, &w)) goto done;
    /* pinned host memory where the backend has it: the device writes the pixels
     * straight into it (a faster download than into malloc'd memory) */
    if (dk_host_alloc(ctx, (uint64_t)n * 3 * 64 * (uint64_t)h * (uint64_t)w * sizeof(float), &pixels) != DK_OK)
        pixels = NULL;
    img = (float *)pixels;
    if (!img) {
        fprintf(stderr, "sdxl_decode: out of memory\n");
        goto done;
    }
    fprintf(stderr, "decoding %d latent(s) of %dx%d%s\n", (int)n, (int)h, (int)w,
            a->device ? " (device tensors)" : "");
    for (r = 0; r < (a->repeat > 1 ? a->repeat : 1); r++) {
        if (a->device ? !decode_on_device(ctx, vae, lat, n, h, w, dtype, img, &info)
                      : dk_sdxl_vae_decode_f32(vae, lat, n, h, w, img, &info) != DK_OK) {
            fprintf(stderr, "sdxl_decode: %s\n", dk_last_error(ctx));
            goto done;
        }
        if (a->repeat > 1) printf("decode %d: %.2f ms\n", (int)r + 1, info.elapsed_ms);
        if (r == 0 && a->repeat > 1) { /* the repeats without the per-stage waits of the progress */
            o.progress = NULL;
            if (dk_sdxl_vae_set_options(vae, &o) != DK_OK) {
                fprintf(stderr, "sdxl_decode: %s\n", dk_last_error(ctx));
                goto done;
            }
        }
    }
    printf("decoded %d image(s) %dx%d in %.1f ms on %s (%s)%s%s\n", (int)n, (int)w * 8, (int)h * 8, info.elapsed_ms,
           dk_backend_name(dk_context_backend(ctx)), dk_dtype_name(dtype), info.banded ? ", banded" : "",
           info.fp16_fallback ? ", fp16 overflow: redone in fp32" : "");
    printf("peak device memory: %.1f MiB (weights %.1f MiB, activations %.1f MiB)\n",
           info.peak_device_bytes / 1048576.0, info.weight_device_bytes / 1048576.0,
           info.plan_device_bytes / 1048576.0);
    ok = sdxl_write_images(a->out, img, n, h * 8, w * 8);
done:
    free(lat);
    dk_host_free(ctx, pixels);
    dk_sdxl_vae_destroy(vae);
    dk_context_destroy(ctx);
    return ok ? 0 : 1;
}

int main(int argc, char **argv) {
    sdxl_args a;
    setvbuf(stdout, NULL, _IOLBF, 0); /* keep stdout in order with the progress on stderr */
    if (!parse_args(argc, argv, &a)) return 2;
    return a.demo ? sdxl_demo(&a) : decode_files(&a);
}
