/* sdxl_decode: decode SDXL latents (.npy or .safetensors) to PNG images with
 * difkern's SDXL VAE decoder, or run the self-contained demo (--demo).
 *
 * Everything that can be checked before the decode is (the latents' shape and
 * values' sizes, the output paths, the memory one image takes); the batch is
 * decoded and written one image at a time, so host memory holds one image
 * whatever the batch size. */
#define _POSIX_C_SOURCE 200809L

#include "sdxl_decode.h"
#include "file_write.h"
#include "png_write.h"

#include <difkern/safetensors.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
        "  --allow-nonfinite  write the image even when the latents or the decoded image hold\n"
        "                   NaN/Inf (a warning; NaN pixels come out black); without it that is an error\n"
        "  --max-host-memory MB  host memory one image may take while it is written (default:\n"
        "                   the machine's physical memory); the batch is decoded one image at a time\n"
        "  --random-weights decode --latent with seeded random weights (--seed) instead of --vae\n"
        "                   (tests; NOT a real image)\n"
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

int sdxl_output_name(const char *out, int32_t batch, int32_t b, char *path, size_t cap) {
    int n;
    if (batch == 1) {
        n = snprintf(path, cap, "%s", out);
    } else {
        const char *dot = strrchr(out, '.'), *slash = strrchr(out, '/');
        size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - out) : strlen(out);
        if (stem > (size_t)INT_MAX) return 0;
        n = snprintf(path, cap, "%.*s_%d%s", (int)stem, out, (int)b, out + stem);
    }
    return n >= 0 && (size_t)n < cap;
}

uint64_t sdxl_image_host_bytes(int64_t h, int64_t w) {
    /* 12 bytes/pixel of floats + 3 of RGB + the encoder's filtered rows (3) and
     * zlib output (up to ~3.4, in a buffer that doubles: 7) + the PNG (3.4) */
    return (uint64_t)h * (uint64_t)w * 29;
}

int sdxl_check_image_size(int64_t h, int64_t w, uint64_t max_host_bytes) {
    uint64_t png = sdxl_png_bytes((uint64_t)w, (uint64_t)h), host = sdxl_image_host_bytes(h, w);
    const char *what = "--max-host-memory";
    if (png > SDXL_PNG_MAX_BYTES) {
        fprintf(stderr,
                "sdxl_decode: a %lldx%lld image is %llu bytes of PNG rows; the PNG writer (stb_image_write, int "
                "sizes) takes at most %llu bytes (about %dx%d pixels)\n",
                (long long)w, (long long)h, (unsigned long long)png, (unsigned long long)SDXL_PNG_MAX_BYTES,
                (int)sqrt((double)SDXL_PNG_MAX_BYTES / 3.0), (int)sqrt((double)SDXL_PNG_MAX_BYTES / 3.0));
        return 0;
    }
    if (!max_host_bytes) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages <= 0 || page <= 0) return 1;
        max_host_bytes = (uint64_t)pages * (uint64_t)page;
        what = "the machine's physical memory";
    }
    if (host > max_host_bytes) {
        fprintf(stderr,
                "sdxl_decode: a %lldx%lld image needs about %llu bytes (%.1f MiB) of host memory while it is "
                "written; the limit is %llu bytes (%.1f MiB, %s)\n",
                (long long)w, (long long)h, (unsigned long long)host, host / 1048576.0,
                (unsigned long long)max_host_bytes, max_host_bytes / 1048576.0, what);
        return 0;
    }
    return 1;
}

int sdxl_write_image(const char *path, const float *img, int32_t h, int32_t w, float lo) {
    int64_t hw = (int64_t)h * w, i, c;
    unsigned char *rgb, *png;
    size_t len = 0;
    int ok;
    if (sdxl_png_bytes((uint64_t)w, (uint64_t)h) > SDXL_PNG_MAX_BYTES) {
        fprintf(stderr, "sdxl_decode: cannot write %s: a %dx%d image is over the PNG writer's limit\n", path,
                (int)w, (int)h);
        return 0;
    }
    rgb = (unsigned char *)malloc((size_t)hw * 3);
    if (!rgb) {
        fprintf(stderr, "sdxl_decode: cannot write %s: out of memory (%llu bytes of RGB)\n", path,
                (unsigned long long)hw * 3);
        return 0;
    }
    for (i = 0; i < hw; i++)
        for (c = 0; c < 3; c++) {
            float v = (img[c * hw + i] - lo) / (1.0f - lo);
            v = v > 0.0f ? (v < 1.0f ? v : 1.0f) : 0.0f; /* NaN -> 0 */
            rgb[i * 3 + c] = (unsigned char)(v * 255.0f + 0.5f);
        }
    png = sdxl_encode_png((int)w, (int)h, rgb, &len);
    free(rgb);
    if (!png) {
        fprintf(stderr, "sdxl_decode: cannot write %s: PNG encoding failed (out of memory)\n", path);
        return 0;
    }
    ok = sdxl_write_file(path, png, len);
    free(png);
    if (ok) printf("wrote %s (%dx%d)\n", path, (int)w, (int)h);
    return ok;
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* [C, h, w] or [N, C, h, w] (C = channels) with every dim in 1..2^31-1; prints why not. */
static int latent_shape(const char *path, int32_t channels, int32_t ndim, const int64_t *shape, int32_t *n, int32_t *h,
                        int32_t *w) {
    char dims[256];
    size_t len = 0;
    int32_t i;
    int zero = 0, big = 0;
    dims[0] = 0;
    for (i = 0; i < ndim && i < DK_ST_MAX_DIMS && len < sizeof dims - 32; i++) {
        int k = snprintf(dims + len, sizeof dims - len, "%s%lld", i ? ", " : "", (long long)shape[i]);
        if (k > 0) len += (size_t)k;
        zero |= shape[i] == 0;
        big |= shape[i] > INT32_MAX;
    }
    if (ndim > DK_ST_MAX_DIMS) snprintf(dims + len, sizeof dims - len, ", ...");
    if ((ndim != 3 && ndim != 4) || shape[ndim - 3] != channels) {
        fprintf(stderr, "sdxl_decode: %s: latents must be [%d, h, w] or [N, %d, h, w]; the file's are %d-D [%s]\n",
                path, (int)channels, (int)channels, (int)ndim, dims);
        return 0;
    }
    if (big) {
        fprintf(stderr, "sdxl_decode: %s: the latents [%s] have a dimension over 2^31-1\n", path, dims);
        return 0;
    }
    if (zero) {
        fprintf(stderr, "sdxl_decode: %s: the latents [%s] have a dimension of size 0: nothing to decode\n", path, dims);
        return 0;
    }
    *n = ndim == 4 ? (int32_t)shape[0] : 1;
    *h = (int32_t)shape[ndim - 2];
    *w = (int32_t)shape[ndim - 1];
    return 1;
}

int sdxl_load_latents(const char *path, int32_t channels, uint64_t max_host_bytes, float **data, int32_t *n,
                      int32_t *h, int32_t *w) {
    int64_t shape[DK_MAX_DIMS];
    int32_t ndim = 0;
    *data = NULL;
    if (ends_with(path, ".safetensors")) {
        dk_safetensors *f;
        dk_st_tensor t;
        int64_t count;
        uint64_t numel;
        float *d;
        dk_status st;
        if (dk_safetensors_open(path, &f) != DK_OK) {
            fprintf(stderr, "sdxl_decode: %s\n", dk_last_error(NULL));
            return 0;
        }
        count = dk_safetensors_count(f);
        if (count == 0) {
            fprintf(stderr, "sdxl_decode: %s: the file holds no tensor\n", path);
            dk_safetensors_close(f);
            return 0;
        }
        st = count == 1 ? dk_safetensors_at(f, 0, &t) : dk_safetensors_find(f, "latents", &t);
        if (st != DK_OK) {
            if (count > 1 && st == DK_ERR_INVALID_ARGUMENT)
                fprintf(stderr, "sdxl_decode: %s: %lld tensors and none named 'latents'\n", path, (long long)count);
            else
                fprintf(stderr, "sdxl_decode: %s: %s\n", path, dk_last_error(NULL));
            dk_safetensors_close(f);
            return 0;
        }
        /* The shape and the image size first: the elements are not touched yet. */
        if (!latent_shape(path, channels, t.ndim, t.shape, n, h, w) ||
            !sdxl_check_image_size((int64_t)*h * 8, (int64_t)*w * 8, max_host_bytes)) {
            dk_safetensors_close(f);
            return 0;
        }
        numel = (uint64_t)*n * (uint64_t)channels * (uint64_t)*h * (uint64_t)*w;
        d = numel <= SIZE_MAX / sizeof(float) ? (float *)malloc((size_t)numel * sizeof(float)) : NULL;
        if (!d) {
            fprintf(stderr, "sdxl_decode: %s: cannot allocate %llu bytes for the latents\n", path,
                    (unsigned long long)numel * sizeof(float));
            dk_safetensors_close(f);
            return 0;
        }
        if (dk_st_tensor_copy(&t, DK_F32, d, numel * sizeof(float)) != DK_OK) {
            fprintf(stderr, "sdxl_decode: %s: %s\n", path, dk_last_error(NULL));
            free(d);
            dk_safetensors_close(f);
            return 0;
        }
        dk_safetensors_close(f);
        *data = d;
        return 1;
    } else {
        float *d = NULL, *own;
        uint64_t numel;
        if (dk_npy_read_f32(path, &d, &ndim, shape) != DK_OK) {
            fprintf(stderr, "sdxl_decode: %s\n", dk_last_error(NULL));
            return 0;
        }
        if (!latent_shape(path, channels, ndim, shape, n, h, w) ||
            !sdxl_check_image_size((int64_t)*h * 8, (int64_t)*w * 8, max_host_bytes)) {
            dk_npy_free(d);
            return 0;
        }
        /* Own copy so that one free() fits both sources. */
        numel = (uint64_t)*n * (uint64_t)channels * (uint64_t)*h * (uint64_t)*w;
        own = (float *)malloc((size_t)numel * sizeof(float));
        if (own) memcpy(own, d, (size_t)numel * sizeof(float));
        dk_npy_free(d);
        if (!own) {
            fprintf(stderr, "sdxl_decode: %s: cannot allocate %llu bytes for the latents\n", path,
                    (unsigned long long)numel * sizeof(float));
            return 0;
        }
        *data = own;
        return 1;
    }
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
        } else if (!strcmp(s, "--allow-nonfinite")) {
            a->allow_nonfinite = 1;
            continue;
        } else if (!strcmp(s, "--random-weights")) {
            a->random_weights = 1;
            continue;
        }
        if (!strstr(" --vae --latent -o --output --backend --dtype --tile --max-memory --max-host-memory --scale --size --seed --plan --repeat ",
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
            if (a->max_bytes == 0) { /* 0 bytes would mean "no limit" to the decoder */
                fprintf(stderr, "sdxl_decode: --max-memory %s: that is less than one byte\n", v);
                return 0;
            }
        } else if (!strcmp(s, "--max-host-memory")) {
            double mb = strtod(v, &end);
            if (*end || !(mb > 0.0 && mb < 1e9) || (uint64_t)(mb * 1048576.0) == 0) {
                fprintf(stderr, "sdxl_decode: --max-host-memory %s: expected megabytes > 0 (at least one byte)\n", v);
                return 0;
            }
            a->max_host_bytes = (uint64_t)(mb * 1048576.0);
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
    if (!a->demo && !a->plan && ((!a->vae && !a->random_weights) || !a->latent || !a->out)) {
        fprintf(stderr, "sdxl_decode: --vae, --latent and -o are required (or --demo); see --help\n");
        return 0;
    }
    if (a->vae && a->random_weights) {
        fprintf(stderr, "sdxl_decode: give --vae or --random-weights, not both\n");
        return 0;
    }
    if (a->out && strlen(a->out) >= PATH_MAX) {
        fprintf(stderr, "sdxl_decode: -o: the path is %zu bytes long; the limit is %d\n", strlen(a->out),
                PATH_MAX - 1);
        return 0;
    }
    return 1;
}

/* --device: the latents uploaded into a device tensor, decoded into a device
 * image of the decode dtype (info's time covers only that call), then the image
 * converted to f32 on the device and downloaded into img for the PNG. */
static dk_status decode_on_device(dk_context *ctx, dk_sdxl_vae *vae, const float *lat, int32_t n, int32_t h,
                                  int32_t w, dk_dtype dtype, float *img, dk_sdxl_vae_info *info) {
    const int64_t ls[4] = {n, 4, h, w}, is[4] = {n, 3, 8 * (int64_t)h, 8 * (int64_t)w};
    const uint64_t lbytes = (uint64_t)n * 4 * (uint64_t)h * (uint64_t)w * sizeof(float),
                   ibytes = (uint64_t)(is[0] * 3 * is[2] * is[3]);
    dk_buffer *bl = NULL, *bi = NULL, *bf = NULL;
    dk_tensor tl, ti, tf;
    dk_status st = dk_buffer_create(ctx, lbytes, &bl);
    if (st == DK_OK) st = dk_buffer_create(ctx, ibytes * dk_dtype_size(dtype), &bi);
    if (st == DK_OK) st = dk_buffer_upload(ctx, bl, 0, lat, lbytes);
    if (st == DK_OK) st = dk_sync(ctx);
    if (st == DK_OK) {
        tl = dk_tensor_contiguous(bl, 0, DK_F32, 4, ls);
        ti = dk_tensor_contiguous(bi, 0, dtype, 4, is);
        st = dk_sdxl_vae_decode_tensor(vae, &tl, &ti, info);
    }
    if (st == DK_OK) st = dk_buffer_create(ctx, ibytes * sizeof(float), &bf);
    if (st == DK_OK) {
        tf = dk_tensor_contiguous(bf, 0, DK_F32, 4, is);
        st = dk_convert(ctx, &ti, &tf);
    }
    if (st == DK_OK) st = dk_buffer_download(ctx, bf, 0, img, ibytes * sizeof(float));
    dk_buffer_destroy(ctx, bl);
    dk_buffer_destroy(ctx, bi);
    dk_buffer_destroy(ctx, bf);
    return st;
}

/* Whether the n floats hold a NaN or an infinity. */
static int has_nonfinite(const float *p, int64_t n) {
    int64_t i;
    for (i = 0; i < n; i++)
        if (!isfinite(p[i])) return 1;
    return 0;
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
    int32_t n = 1, h = 0, w = 0, b;
    int ok = 0, r, repeats = a->repeat > 1 ? a->repeat : 1, fallback = 0;
    double t0, total_ms = 0.0;
    uint64_t peak = 0;
    char path[PATH_MAX];

    /* Everything that can fail cheaply first: the latents (shape, image size)
     * and every output path, before the weights are loaded and anything is decoded. */
    if (!a->plan) {
        const char *inputs[2];
        inputs[0] = a->vae;
        inputs[1] = a->latent;
        if (!sdxl_load_latents(a->latent, 4, a->max_host_bytes, &lat, &n, &h, &w)) return 1;
        for (b = 0; b < n; b++) {
            if (!sdxl_output_name(a->out, n, b, path, sizeof path)) {
                fprintf(stderr, "sdxl_decode: -o %s: the name of image %d is %d bytes or longer\n", a->out, (int)b,
                        PATH_MAX);
                goto done;
            }
            if (!sdxl_check_output(path, inputs, 2)) goto done;
        }
    }
    dk_context_options_init(&co);
    co.backend = a->backend;
    if (dk_context_create(&co, &ctx) != DK_OK) {
        fprintf(stderr, "sdxl_decode: %s\n", dk_last_error(NULL));
        goto done;
    }
    dtype = a->dtype_set ? a->dtype : dk_context_backend(ctx) == DK_BACKEND_CPU ? DK_F32 : DK_F16;
    printf("backend: %s\n", dk_context_describe(ctx));
    sdxl_options(a, &o);
    o.allow_nonfinite = a->allow_nonfinite;
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
    /* One image's floats (the batch is streamed), in pinned host memory where
     * the backend has it: the device writes the pixels straight into it (a
     * faster download than into malloc'd memory).  Sizes were checked above. */
    if (dk_host_alloc(ctx, (uint64_t)3 * 64 * (uint64_t)h * (uint64_t)w * sizeof(float), &pixels) != DK_OK)
        pixels = NULL;
    img = (float *)pixels;
    if (!img) {
        fprintf(stderr, "sdxl_decode: cannot allocate %llu bytes for one %dx%d image: %s\n",
                (unsigned long long)3 * 64 * (uint64_t)h * (uint64_t)w * sizeof(float), (int)w * 8, (int)h * 8,
                dk_last_error(ctx));
        goto done;
    }
    fprintf(stderr, "decoding %d latent(s) of %dx%d%s\n", (int)n, (int)h, (int)w,
            a->device ? " (device tensors)" : "");
    for (r = 0; r < repeats; r++) {
        double ms = 0.0;
        for (b = 0; b < n; b++) {
            const float *lb = lat + (int64_t)b * 4 * h * w;
            dk_status st;
            st = a->device ? decode_on_device(ctx, vae, lb, 1, h, w, dtype, img, &info)
                           : dk_sdxl_vae_decode_f32(vae, lb, 1, h, w, img, &info);
            if (st != DK_OK) {
                fprintf(stderr, "sdxl_decode: latent %d: %s\n", (int)b, dk_last_error(ctx));
                if (st == DK_ERR_NON_FINITE)
                    fprintf(stderr, "sdxl_decode: no image written for it (--allow-nonfinite writes it anyway)\n");
                goto done;
            }
            ms += info.elapsed_ms;
            fallback |= info.fp16_fallback;
            if (info.peak_device_bytes > peak) peak = info.peak_device_bytes;
            if (r + 1 < repeats) continue;
            if (!sdxl_output_name(a->out, n, b, path, sizeof path)) goto done; /* checked above */
            if (a->allow_nonfinite && has_nonfinite(img, (int64_t)3 * 64 * h * w))
                fprintf(stderr, "sdxl_decode: warning: image %d holds NaN/Inf values (written as black pixels)\n",
                        (int)b);
            if (!sdxl_write_image(path, img, h * 8, w * 8, -1.0f)) goto done;
        }
        total_ms += ms;
        if (repeats > 1) printf("decode %d: %.2f ms\n", (int)r + 1, ms);
        if (r == 0 && repeats > 1) { /* the repeats without the per-stage waits of the progress */
            o.progress = NULL;
            if (dk_sdxl_vae_set_options(vae, &o) != DK_OK) {
                fprintf(stderr, "sdxl_decode: %s\n", dk_last_error(ctx));
                goto done;
            }
        }
    }
    printf("decoded %d image(s) %dx%d in %.1f ms on %s (%s)%s%s\n", (int)n, (int)w * 8, (int)h * 8,
           total_ms / repeats, dk_backend_name(dk_context_backend(ctx)), dk_dtype_name(dtype),
           info.banded ? ", banded" : "", fallback ? ", fp16 overflow: redone in fp32" : "");
    printf("peak device memory: %.1f MiB (weights %.1f MiB, activations %.1f MiB)\n", peak / 1048576.0,
           info.weight_device_bytes / 1048576.0, info.plan_device_bytes / 1048576.0);
    ok = 1;
done:
    free(lat);
    if (ctx) dk_host_free(ctx, pixels);
    dk_sdxl_vae_destroy(vae);
    dk_context_destroy(ctx);
    return ok ? 0 : 1;
}

int sdxl_decode_main(int argc, char **argv) {
    sdxl_args a;
    setvbuf(stdout, NULL, _IOLBF, 0); /* keep stdout in order with the progress on stderr */
    if (!parse_args(argc, argv, &a)) return 2;
    return a.demo ? sdxl_demo(&a) : decode_files(&a);
}
