/* sdxl_decode: decode SDXL latents (.npy or .safetensors) to PNG images, or
 * run the self-contained demo (--demo).  The decode is difkern-vae's
 * AutoencoderKL decode with the SDXL model (kl_cli.c); this file holds the
 * command's help and the helpers both commands use (latents in, PNGs out). */
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
        "sdxl_decode is kept for one release as an alias of `difkern-vae decode --model sdxl`\n"
        "(same flags; --demo and --size are sdxl_decode's own).\n"
        "\n"
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
        "  --device         latents and image in device memory (dk_vae_decode_tensor, as a runtime\n"
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
        sdxl_err(
                "a %lldx%lld image is %llu bytes of PNG rows; the PNG writer (stb_image_write, int "
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
        sdxl_err(
                "a %lldx%lld image needs about %llu bytes (%.1f MiB) of host memory while it is "
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
        sdxl_err("cannot write %s: a %dx%d image is over the PNG writer's limit\n", path,
                (int)w, (int)h);
        return 0;
    }
    rgb = (unsigned char *)malloc((size_t)hw * 3);
    if (!rgb) {
        sdxl_err("cannot write %s: out of memory (%llu bytes of RGB)\n", path,
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
        sdxl_err("cannot write %s: PNG encoding failed (out of memory)\n", path);
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
        sdxl_err("%s: latents must be [%d, h, w] or [N, %d, h, w]; the file's are %d-D [%s]\n",
                path, (int)channels, (int)channels, (int)ndim, dims);
        return 0;
    }
    if (big) {
        sdxl_err("%s: the latents [%s] have a dimension over 2^31-1\n", path, dims);
        return 0;
    }
    if (zero) {
        sdxl_err("%s: the latents [%s] have a dimension of size 0: nothing to decode\n", path, dims);
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
            sdxl_err("%s\n", dk_last_error(NULL));
            return 0;
        }
        count = dk_safetensors_count(f);
        if (count == 0) {
            sdxl_err("%s: the file holds no tensor\n", path);
            dk_safetensors_close(f);
            return 0;
        }
        st = count == 1 ? dk_safetensors_at(f, 0, &t) : dk_safetensors_find(f, "latents", &t);
        if (st != DK_OK) {
            if (count > 1 && st == DK_ERR_INVALID_ARGUMENT)
                sdxl_err("%s: %lld tensors and none named 'latents'\n", path, (long long)count);
            else
                sdxl_err("%s: %s\n", path, dk_last_error(NULL));
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
            sdxl_err("%s: cannot allocate %llu bytes for the latents\n", path,
                    (unsigned long long)numel * sizeof(float));
            dk_safetensors_close(f);
            return 0;
        }
        if (dk_st_tensor_copy(&t, DK_F32, d, numel * sizeof(float)) != DK_OK) {
            sdxl_err("%s: %s\n", path, dk_last_error(NULL));
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
            sdxl_err("%s\n", dk_last_error(NULL));
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
            sdxl_err("%s: cannot allocate %llu bytes for the latents\n", path,
                    (unsigned long long)numel * sizeof(float));
            return 0;
        }
        *data = own;
        return 1;
    }
}

int sdxl_decode_main(int argc, char **argv) {
    sdxl_args a;
    setvbuf(stdout, NULL, _IOLBF, 0); /* keep stdout in order with the progress on stderr */
    if (!sdxl_parse_args(argc, argv, 1, 0, usage, &a)) return 2;
    if (a.demo) return sdxl_demo(&a);
    if (!a.plan && ((!a.vae && !a.random_weights) || !a.latent || !a.out)) {
        sdxl_err("--vae, --latent and -o are required (or --demo); see --help\n");
        return 2;
    }
    return vae_kl_run(&a);
}
