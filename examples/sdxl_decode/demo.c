/* sdxl_decode --demo: the full SDXL VAE decoder with seeded random weights
 * decodes a seeded random latent on the default backend, is cross-checked
 * against every other backend present and against a banded (tiled) decode on
 * the CPU backend,
 * and writes the PNG.  The picture is noise-like: the weights are random. */
#include "sdxl_decode.h"
#include "file_write.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t demo_next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Standard normal latents (Box-Muller), like a diffusion model's output. */
static void demo_latent(uint64_t seed, float *x, int64_t n) {
    uint64_t s = seed ^ 0x5eed1a7e47ull;
    int64_t i;
    for (i = 0; i < n; i++) {
        double u1 = ((double)(demo_next(&s) >> 11) + 1.0) / 9007199254740993.0;
        double u2 = (double)(demo_next(&s) >> 11) / 9007199254740992.0;
        x[i] = (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
    }
}

/* Decodes with seeded random weights on ctx; returns 1 on success. */
static int demo_decode(dk_context *ctx, const sdxl_args *a, dk_dtype dtype, int32_t tile, const float *lat,
                       float *img, dk_sdxl_vae_info *info, int quiet) {
    dk_sdxl_vae *vae = NULL;
    dk_sdxl_vae_options o;
    int ok;
    sdxl_options(a, &o);
    o.tile_rows = tile;
    if (quiet) o.progress = NULL;
    if (dk_sdxl_vae_create_random(ctx, a->seed, dtype, &o, &vae) != DK_OK) {
        fprintf(stderr, "demo: %s\n", dk_last_error(ctx));
        return 0;
    }
    ok = dk_sdxl_vae_decode_f32(vae, lat, 1, a->demo_size, a->demo_size, img, info) == DK_OK;
    if (!ok) fprintf(stderr, "demo: %s\n", dk_last_error(ctx));
    dk_sdxl_vae_destroy(vae);
    return ok;
}

/* Prints max |a-b| and ||a-b|| / ||b||; returns 1 when within tol. */
static int demo_compare(const char *what, const float *x, const float *ref, int64_t n, double tol, double ms) {
    double maxd = 0.0, num = 0.0, den = 0.0, rel;
    int64_t i;
    for (i = 0; i < n; i++) {
        double d = fabs((double)x[i] - ref[i]);
        if (!(d <= maxd)) maxd = d; /* NaN sticks */
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    rel = sqrt(num / (den > 0.0 ? den : 1.0));
    printf("  %-30s max |diff| %.3g, rel L2 %.3g (tol %.0e) %8.1f ms  %s\n", what, maxd, rel, tol, ms,
           rel <= tol ? "OK" : "FAIL");
    return rel <= tol;
}

int sdxl_demo(const sdxl_args *a) {
    static const dk_backend_kind kinds[3] = {DK_BACKEND_CPU, DK_BACKEND_VULKAN, DK_BACKEND_HIP};
    dk_context_options co;
    dk_context *ctx = NULL;
    dk_sdxl_vae_info info;
    dk_dtype dtype;
    int32_t side = a->demo_size;
    int64_t nimg = (int64_t)3 * 64 * side * side;
    float *lat = (float *)malloc((size_t)(4 * side * side) * sizeof(float));
    float *img = (float *)malloc((size_t)nimg * sizeof(float));
    float *other = (float *)malloc((size_t)nimg * sizeof(float));
    const char *out = a->out ? a->out : "sdxl_demo.png";
    double t0, tol;
    int i, ok = 1;
    if (!lat || !img || !other || !sdxl_check_output(out, NULL, 0)) {
        if (!lat || !img || !other) fprintf(stderr, "demo: out of memory\n");
        free(lat);
        free(img);
        free(other);
        return 1;
    }
    dk_context_options_init(&co);
    co.backend = a->backend;
    t0 = sdxl_now_ms();
    if (dk_context_create(&co, &ctx) != DK_OK) {
        fprintf(stderr, "demo: %s\n", dk_last_error(NULL));
        return 1;
    }
    dtype = a->dtype_set ? a->dtype : dk_context_backend(ctx) == DK_BACKEND_CPU ? DK_F32 : DK_F16;
    tol = dtype == DK_F32 ? 1e-3 : 3e-2;
    printf("difkern %s SDXL VAE decoder demo\n", dk_version_string());
    printf("backend: %s\n", dk_context_describe(ctx));
    printf("the full SDXL decoder (49.5M parameters) with seeded random weights (seed %llu) decodes a\n"
           "random %dx%d latent to a %dx%d image in %s. NOT a real image: the real weights are\n"
           "sdxl_vae.safetensors from https://huggingface.co/stabilityai/sdxl-vae; decode real latents with\n"
           "sdxl_decode --vae sdxl_vae.safetensors --latent latent.npy -o out.png\n",
           (unsigned long long)a->seed, (int)side, (int)side, (int)side * 8, (int)side * 8, dk_dtype_name(dtype));
    demo_latent(a->seed, lat, (int64_t)4 * side * side);
    if (!demo_decode(ctx, a, dtype, 0, lat, img, &info, 0)) {
        ok = 0;
        goto done;
    }
    printf("decode: %.1f ms on %s, peak device memory %.1f MiB (weights %.1f MiB)%s\n", info.elapsed_ms,
           dk_backend_name(dk_context_backend(ctx)), info.peak_device_bytes / 1048576.0,
           info.weight_device_bytes / 1048576.0, info.fp16_fallback ? ", fp16 overflow: redone in fp32" : "");
    if (!sdxl_write_image(out, img, side * 8, side * 8, -1.0f)) ok = 0;
    printf("cross-checks against the %s result:\n", dk_backend_name(dk_context_backend(ctx)));
    fflush(stdout);
    {
        /* Banded (tiled) decode on the CPU backend: exact halos and whole-tensor
         * GroupNorm statistics make it match. */
        int32_t tile = side >= 4 ? side / 4 : 1;
        char what[64];
        dk_context *cpu = ctx;
        co.backend = DK_BACKEND_CPU;
        if (dk_context_backend(ctx) == DK_BACKEND_CPU || dk_context_create(&co, &cpu) == DK_OK) {
            snprintf(what, sizeof what, "cpu, tiled: bands of %d rows", (int)tile);
            if (demo_decode(cpu, a, dtype, tile, lat, other, &info, 1))
                ok &= demo_compare(what, other, img, nimg, tol, info.elapsed_ms);
            else
                ok = 0;
            if (cpu != ctx) dk_context_destroy(cpu);
        } else {
            printf("  tiled check skipped: %s\n", dk_last_error(NULL));
        }
    }
    for (i = 0; i < 3; i++) {
        dk_context *c2 = NULL;
        if (kinds[i] == dk_context_backend(ctx)) continue;
        if (!dk_backend_compiled(kinds[i])) {
            printf("  %-30s skipped: not compiled in\n", dk_backend_name(kinds[i]));
            continue;
        }
        co.backend = kinds[i];
        if (dk_context_create(&co, &c2) != DK_OK) {
            printf("  %-30s skipped: %s\n", dk_backend_name(kinds[i]), dk_last_error(NULL));
            continue;
        }
        if (demo_decode(c2, a, dtype, 0, lat, other, &info, 1))
            ok &= demo_compare(dk_backend_name(kinds[i]), other, img, nimg, tol, info.elapsed_ms);
        else
            ok = 0;
        dk_context_destroy(c2);
    }
    printf("total %.1f s: %s\n", (sdxl_now_ms() - t0) / 1e3, ok ? "OK" : "FAILED");
done:
    dk_context_destroy(ctx);
    free(lat);
    free(img);
    free(other);
    return ok ? 0 : 1;
}
