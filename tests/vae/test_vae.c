/* SDXL VAE decoder tests (tests/vae/meson.build runs each mode):
 *   e2e DIR        files from gen_files.py in both namings and 3 dtypes, decoded
 *                  in f32 and compared with the PyTorch reference
 *   precision DIR  f16 and bf16 decodes vs the reference (fp16/bf16 vs fp32)
 *   overflow DIR   weights scaled past the fp16 range: the f16 decode stays finite
 *   tiled          banded == untiled with every conv stage split (random weights);
 *                  the in-place banded conv of the untiled plan against the plain one;
 *                  device tensors in and out against host floats
 *   shrink HxW     that last check alone at an HxW latent
 *   errors DIR     missing tensor, wrong shape, truncated file, not a VAE, bad args
 * Backend: CPU, or the one DIFKERN_BACKEND names.
 * Prints every measured error; exits 1 on the first failed check. */
#include <difkern.h>
#include <difkern/safetensors.h>
#include <difkern/sdxl_vae.h>

#include "vae_test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct latents {
    float *z;
    int64_t shape[DK_MAX_DIMS];
    int32_t n, h, w;
    int64_t out_numel;
} latents;

static latents load_latents(const char *dir) {
    latents l;
    int64_t numel;
    l.z = read_npy(dir, "latent.npy", &numel, l.shape);
    l.n = (int32_t)l.shape[0];
    l.h = (int32_t)l.shape[2];
    l.w = (int32_t)l.shape[3];
    l.out_numel = (int64_t)l.n * 3 * 64 * l.h * l.w;
    return l;
}

static float *poisoned(int64_t n) {
    float *p = (float *)malloc((size_t)n * sizeof(float));
    int64_t i;
    for (i = 0; i < n; i++) p[i] = NAN;
    return p;
}

/* Decode file with dtype and options; compare with ref (npy); returns the error. */
static double decode_file(const char *dir, const char *file, const char *ref_name, dk_dtype dtype,
                          const dk_sdxl_vae_options *o, const char *naming, dk_sdxl_vae_info *info, double tol) {
    char path[1024];
    dk_sdxl_vae *vae = NULL;
    latents l = load_latents(dir);
    int64_t rn, rshape[DK_MAX_DIMS];
    float *ref = read_npy(dir, ref_name, &rn, rshape), *out = poisoned(l.out_numel);
    double err = INFINITY, maxd = 0.0;
    dk_status st;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    st = dk_sdxl_vae_create_from_file(ctx, path, dtype, o, &vae);
    CHECK(st == DK_OK, "%s: create: %s", file, dk_last_error(ctx));
    if (st == DK_OK) {
        CHECK(!naming || !strcmp(dk_sdxl_vae_naming(vae), naming), "%s: naming %s, expected %s", file,
              dk_sdxl_vae_naming(vae), naming);
        CHECK(rn == l.out_numel, "%s: reference has %lld values, expected %lld", ref_name, (long long)rn,
              (long long)l.out_numel);
        st = dk_sdxl_vae_decode_f32(vae, l.z, l.n, l.h, l.w, out, info);
        CHECK(st == DK_OK, "%s: decode: %s", file, dk_last_error(ctx));
        if (st == DK_OK && rn == l.out_numel) err = rel_err(out, ref, rn, &maxd);
        printf("  %-28s %-4s -> %-16s rel L2 %.3g, max |diff| %.3g (tol %.0e)%s\n", file, dk_dtype_name(dtype),
               dk_sdxl_vae_naming(vae), err, maxd, tol, info && info->fp16_fallback ? " [fp32 fallback]" : "");
        CHECK(err <= tol, "%s in %s: rel L2 %.3g > %.3g", file, dk_dtype_name(dtype), err, tol);
    }
    dk_sdxl_vae_destroy(vae);
    dk_npy_free(l.z);
    dk_npy_free(ref);
    free(out);
    return err;
}

/* create_from_memory + decode_rgb8: bytes within 1 of the reference mapped
 * by clamp((x + 1) / 2, 0, 1) * 255. */
static void test_memory_rgb8(const char *dir) {
    char path[1024];
    latents l = load_latents(dir);
    int64_t rn, rshape[DK_MAX_DIMS], i, off = 0;
    float *ref = read_npy(dir, "ref_f16w.npy", &rn, rshape);
    int64_t hw = (int64_t)64 * l.h * l.w, b, c;
    uint8_t *rgb = (uint8_t *)malloc((size_t)rn);
    dk_sdxl_vae *vae = NULL;
    FILE *f;
    long size;
    void *bytes;
    snprintf(path, sizeof path, "%s/original_f16.safetensors", dir);
    f = fopen(path, "rb");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f) exit(1);
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fseek(f, 0, SEEK_SET);
    bytes = malloc((size_t)size);
    CHECK(fread(bytes, 1, (size_t)size, f) == (size_t)size, "short read");
    fclose(f);
    CHECK(dk_sdxl_vae_create_from_memory(ctx, bytes, (uint64_t)size, DK_F32, NULL, &vae) == DK_OK, "%s",
          dk_last_error(ctx));
    free(bytes); /* the bytes are only read during creation */
    memset(rgb, 0xAB, (size_t)rn);
    CHECK(dk_sdxl_vae_decode_rgb8(vae, l.z, l.n, l.h, l.w, rgb, NULL) == DK_OK, "%s", dk_last_error(ctx));
    for (b = 0; b < l.n; b++)
        for (i = 0; i < hw; i++)
            for (c = 0; c < 3; c++) {
                double v = ((double)ref[(b * 3 + c) * hw + i] + 1.0) * 0.5;
                double want = (v < 0 ? 0 : v > 1 ? 1 : v) * 255.0;
                if (fabs(rgb[(b * hw + i) * 3 + c] - want) > 1.0) off++;
            }
    printf("  create_from_memory + decode_rgb8: %lld of %lld bytes off by more than 1\n", (long long)off,
           (long long)rn);
    CHECK(off == 0, "rgb8 output differs from the reference");
    dk_sdxl_vae_destroy(vae);
    dk_npy_free(l.z);
    dk_npy_free(ref);
    free(rgb);
}

static void test_e2e(const char *dir) {
    dk_sdxl_vae_info info;
    puts("e2e: f32 decode of random weights in both namings vs PyTorch (float32 reference)");
    decode_file(dir, "diffusers_f32.safetensors", "ref_f32.npy", DK_F32, NULL, "diffusers", &info, 1e-4);
    decode_file(dir, "original_f16.safetensors", "ref_f16w.npy", DK_F32, NULL, "original+prefix", &info, 1e-4);
    decode_file(dir, "original_bf16.safetensors", "ref_bf16w.npy", DK_F32, NULL, "original", &info, 1e-4);
    decode_file(dir, "diffusers_legacy_f16.safetensors", "ref_f16w.npy", DK_F32, NULL, "diffusers", &info, 1e-4);
    test_memory_rgb8(dir);
}

static void test_precision(const char *dir) {
    dk_sdxl_vae_info info;
    puts("precision: f16 and bf16 decodes vs the fp32 PyTorch reference");
    decode_file(dir, "original_f16.safetensors", "ref_f16w.npy", DK_F16, NULL, NULL, &info, 1e-2);
    CHECK(!info.fp16_fallback, "f16 decode of ordinary weights needed the fp32 fallback");
    decode_file(dir, "original_bf16.safetensors", "ref_bf16w.npy", DK_BF16, NULL, NULL, &info, 5e-2);
}

/* Host floats to a new device buffer (f32). */
static dk_buffer *to_device(const float *x, int64_t n) {
    dk_buffer *b = NULL;
    CHECK(dk_buffer_create(ctx, (uint64_t)n * sizeof(float), &b) == DK_OK, "%s", dk_last_error(ctx));
    if (b) CHECK(dk_buffer_upload(ctx, b, 0, x, (uint64_t)n * sizeof(float)) == DK_OK, "%s", dk_last_error(ctx));
    return b;
}

/* Decodes latents z (host) through dk_sdxl_vae_decode_tensor into an out tensor of
 * dtype t (NCHW, or NHWC when nhwc), poisoned first; returns the images as host
 * floats [n, 3, 8h, 8w] NCHW (malloc'd). */
static float *decode_on_device(dk_sdxl_vae *vae, const float *z, int32_t n, int32_t h, int32_t w, dk_dtype t,
                               int nhwc, dk_sdxl_vae_info *info) {
    int64_t numel = (int64_t)n * 3 * 64 * h * w, i;
    uint64_t bytes = (uint64_t)numel * dk_dtype_size(t);
    dk_buffer *bz = to_device(z, (int64_t)n * 4 * h * w), *bo = NULL;
    dk_tensor lat = dk_tensor_nchw(bz, 0, DK_F32, n, 4, h, w), out;
    float *res = (float *)malloc((size_t)numel * sizeof(float));
    uint16_t *raw = (uint16_t *)malloc((size_t)bytes);
    CHECK(dk_buffer_create(ctx, bytes, &bo) == DK_OK, "%s", dk_last_error(ctx));
    if (bo) CHECK(dk_buffer_fill(ctx, bo, 0, bytes, t == DK_F32 ? 0x7fc00000u : 0x7e007e00u) == DK_OK, "fill");
    out = nhwc ? dk_tensor_nhwc(bo, 0, t, n, 3, 8 * h, 8 * w) : dk_tensor_nchw(bo, 0, t, n, 3, 8 * h, 8 * w);
    CHECK(dk_sdxl_vae_decode_tensor(vae, &lat, &out, info) == DK_OK, "%s", dk_last_error(ctx));
    CHECK(dk_buffer_download(ctx, bo, 0, t == DK_F32 ? (void *)res : (void *)raw, bytes) == DK_OK, "%s",
          dk_last_error(ctx));
    if (t != DK_F32 || nhwc) { /* to f32 NCHW */
        int64_t hw = (int64_t)64 * h * w, k, c, p;
        float *f32 = t == DK_F32 ? (float *)malloc((size_t)numel * sizeof(float)) : NULL;
        if (f32) memcpy(f32, res, (size_t)numel * sizeof(float));
        for (k = 0; k < n; k++)
            for (c = 0; c < 3; c++)
                for (p = 0; p < hw; p++) {
                    int64_t src = nhwc ? (k * hw + p) * 3 + c : (k * 3 + c) * hw + p;
                    res[(k * 3 + c) * hw + p] = t == DK_F32 ? f32[src]
                                                : t == DK_F16 ? dk_f16_to_f32(raw[src]) : dk_bf16_to_f32(raw[src]);
                }
        free(f32);
    }
    for (i = 0; i < numel && isfinite(res[i]); i++) {
    }
    CHECK(i == numel, "dk_sdxl_vae_decode_tensor left output %lld unwritten or non-finite", (long long)i);
    free(raw);
    dk_buffer_destroy(ctx, bz);
    dk_buffer_destroy(ctx, bo);
    return res;
}

static void test_overflow(const char *dir) {
    dk_sdxl_vae_options o;
    dk_sdxl_vae_info info;
    char path[1024];
    dk_sdxl_vae *vae = NULL;
    latents l = load_latents(dir);
    float *out = poisoned(l.out_numel);
    int64_t i, bad = 0;
    puts("overflow: conv_in scaled by 3e4 (activations ~1e6 > fp16 max 65504)");
    /* 1. No protection at all: the fp16 result is not finite (the case is real). */
    dk_sdxl_vae_options_init(&o);
    o.fp16_activation_scale = 1.0f;
    o.fp16_fallback = 0;
    snprintf(path, sizeof path, "%s/overflow_f16.safetensors", dir);
    CHECK(dk_sdxl_vae_create_from_file(ctx, path, DK_F16, &o, &vae) == DK_OK, "%s", dk_last_error(ctx));
    /* A non-finite result is DK_ERR_NON_FINITE (never DK_OK with a black image),
     * with the decoded values in out. */
    CHECK(dk_sdxl_vae_decode_f32(vae, l.z, l.n, l.h, l.w, out, &info) == DK_ERR_NON_FINITE &&
              strstr(dk_last_error(ctx), "NaN or Inf"),
          "unprotected fp16: %s", dk_last_error(ctx));
    for (i = 0; i < l.out_numel; i++) bad += !isfinite(out[i]);
    printf("  unprotected fp16 (scale 1, no fallback): %lld of %lld outputs NaN/Inf\n", (long long)bad,
           (long long)l.out_numel);
    CHECK(bad > 0, "the overflow case does not overflow fp16: the test proves nothing");
    dk_sdxl_vae_destroy(vae);
    /* 2. Default: activations kept at 2^-8 scale; finite and accurate, no fallback. */
    decode_file(dir, "overflow_f16.safetensors", "ref_overflow.npy", DK_F16, NULL, NULL, &info, 1e-2);
    CHECK(!info.fp16_fallback, "the default activation scale should suffice here");
    /* 3. Scale 1 with the fallback: detected and redone in fp32. */
    o.fp16_fallback = 1;
    decode_file(dir, "overflow_f16.safetensors", "ref_overflow.npy", DK_F16, &o, NULL, &info, 1e-4);
    CHECK(info.fp16_fallback, "the fallback did not report itself");
    /* 4. The same through dk_sdxl_vae_decode_tensor: detected on the device path too. */
    {
        float *d;
        double err, maxd;
        CHECK(dk_sdxl_vae_create_from_file(ctx, path, DK_F16, &o, &vae) == DK_OK, "%s", dk_last_error(ctx));
        CHECK(dk_sdxl_vae_decode_f32(vae, l.z, l.n, l.h, l.w, out, &info) == DK_OK, "%s", dk_last_error(ctx));
        d = decode_on_device(vae, l.z, l.n, l.h, l.w, DK_F32, 0, &info);
        err = rel_err(d, out, l.out_numel, &maxd);
        printf("  device tensors, scale 1 with the fallback: fallback %d, rel L2 %.3g vs the host call\n",
               info.fp16_fallback, err);
        CHECK(info.fp16_fallback && err <= 1e-6, "device path: fallback %d, rel L2 %.3g", info.fp16_fallback, err);
        free(d);
        dk_sdxl_vae_destroy(vae);
    }
    dk_npy_free(l.z);
    free(out);
}

/* Banded decode equals untiled; every conv stage runs in >= 4 bands. */
/* n latent values uniform in [-2, 2) from the generator state *s (an LCG). */
static void fill_latents(float *z, int64_t n, uint64_t *s) {
    int64_t i;
    for (i = 0; i < n; i++) {
        *s = *s * 6364136223846793005ull + 1442695040888963407ull;
        z[i] = (float)((double)(*s >> 11) / 9007199254740992.0 * 4.0 - 2.0);
    }
}

/* The untiled plan's in-place conv (up_blocks.3.resnets.0.conv1 writes its
 * output over the dead rows of its input, in bands: src/vae/vae_exec.c) against
 * the same decode with it off (DIFKERN_VAE_SHRINK=0, through the settings of a
 * second context on the same backend, the same seed): the same kernels on the
 * same values, so the outputs agree to rounding, where a wrong band, halo or
 * zero row moves whole image rows.  And the plan is smaller with it.  ndtypes:
 * f32 first, then f16, bf16. */
static void test_shrink(int32_t h, int32_t w, int ndtypes) {
    static const dk_dtype types[3] = {DK_F32, DK_F16, DK_BF16};
    static const double tols[3] = {1e-6, 1e-4, 1e-3};
    int64_t numel = (int64_t)3 * 64 * h * w, i;
    float *z = (float *)malloc((size_t)(4 * h * w) * sizeof(float));
    float *a = poisoned(numel), *b = poisoned(numel);
    uint64_t s = 7;
    int t;
    dk_context_options co;
    dk_context *off = NULL;
    dk_context_options_init(&co);
    co.backend = dk_context_backend(ctx);
    co.settings = "DIFKERN_VAE_SHRINK=0";
    CHECK(dk_context_create(&co, &off) == DK_OK, "context with DIFKERN_VAE_SHRINK=0: %s", dk_last_error(NULL));
    if (!off) return;
    printf("in-place conv of the untiled plan vs DIFKERN_VAE_SHRINK=0, %dx%d latent, random weights\n", (int)h,
           (int)w);
    fill_latents(z, 4 * h * w, &s);
    for (t = 0; t < ndtypes; t++) {
        dk_sdxl_vae *vae = NULL, *vae_off = NULL;
        dk_sdxl_vae_info ia, ib;
        double err, maxd;
        CHECK(dk_sdxl_vae_create_random(ctx, 8, types[t], NULL, &vae) == DK_OK, "%s", dk_last_error(ctx));
        CHECK(dk_sdxl_vae_create_random(off, 8, types[t], NULL, &vae_off) == DK_OK, "%s", dk_last_error(off));
        for (i = 0; i < numel; i++) a[i] = b[i] = NAN;
        CHECK(dk_sdxl_vae_decode_f32(vae, z, 1, h, w, a, &ia) == DK_OK, "%s", dk_last_error(ctx));
        CHECK(dk_sdxl_vae_decode_f32(vae_off, z, 1, h, w, b, &ib) == DK_OK, "%s", dk_last_error(off));
        dk_sdxl_vae_destroy(vae_off);
        err = rel_err(a, b, numel, &maxd);
        printf("  %-4s rel L2 %.3g, max |diff| %.3g (tol %.0e); plan %.2f MiB (off: %.2f MiB)\n",
               dk_dtype_name(types[t]), err, maxd, tols[t], ia.plan_device_bytes / 1048576.0,
               ib.plan_device_bytes / 1048576.0);
        CHECK(err <= tols[t], "in place vs plain rel L2 %.3g > %.3g", err, tols[t]);
        CHECK(ia.plan_device_bytes < ib.plan_device_bytes, "the in-place conv did not shrink the plan (%llu >= %llu)",
              (unsigned long long)ia.plan_device_bytes, (unsigned long long)ib.plan_device_bytes);
        if (types[t] != DK_F32) { /* the promised bound: <= 1 GB at 1024x1024, scratch included */
            dk_sdxl_vae_info ip;
            uint64_t all;
            CHECK(dk_sdxl_vae_plan(vae, 128, 128, &ip) == DK_OK, "%s", dk_last_error(ctx));
            all = ip.plan_device_bytes + ip.weight_device_bytes + ip.scratch_reserve_bytes;
            printf("  %-4s 1024x1024 plan: %.1f MiB = %.3f GB with the scratch reserve\n", dk_dtype_name(types[t]),
                   all / 1048576.0, all * 1e-9);
            CHECK(!ip.banded && all <= 1000000000u, "1024x1024 plan %llu bytes (banded %d)", (unsigned long long)all,
                  ip.banded);
        }
        dk_sdxl_vae_destroy(vae);
    }
    dk_context_destroy(off);
    free(z);
    free(a);
    free(b);
}

/* dk_sdxl_vae_decode_tensor against dk_sdxl_vae_decode_f32 (a batch of 2, fp16
 * decode), untiled and banded, and its argument errors. */
static void test_device_io(void) {
    const int32_t n = 2, h = 3, w = 2;
    int64_t numel = (int64_t)n * 3 * 64 * h * w;
    float z[2 * 4 * 3 * 2], *a = poisoned(numel), *d;
    dk_sdxl_vae *vae = NULL;
    dk_sdxl_vae_options o;
    dk_sdxl_vae_info ia, id;
    double err, maxd;
    uint64_t s = 11;
    int pass;
    puts("device tensors in and out (dk_sdxl_vae_decode_tensor) vs host floats, f16 decode, batch 2");
    fill_latents(z, n * 4 * h * w, &s);
    dk_sdxl_vae_options_init(&o);
    CHECK(dk_sdxl_vae_create_random(ctx, 9, DK_F16, &o, &vae) == DK_OK, "%s", dk_last_error(ctx));
    CHECK(dk_sdxl_vae_decode_f32(vae, z, n, h, w, a, &ia) == DK_OK, "%s", dk_last_error(ctx));
    /* Untiled: f32 NCHW identical to the host call, f16 NHWC the same values
     * (the decode is fp16); banded (one-row bands): f16 NHWC against the untiled
     * host call, within the banded decode's own tolerance (test_tiled). */
    for (pass = 0; pass < 3; pass++) {
        const dk_dtype t = pass == 0 ? DK_F32 : DK_F16;
        const double tol = pass < 2 ? 1e-6 : 3e-3;
        o.tile_rows = pass == 2;
        CHECK(dk_sdxl_vae_set_options(vae, &o) == DK_OK, "%s", dk_last_error(ctx));
        d = decode_on_device(vae, z, n, h, w, t, pass > 0, &id);
        err = rel_err(d, a, numel, &maxd);
        printf("  %s %s out: rel L2 %.3g, max |diff| %.3g (tol %.0e)\n", pass == 2 ? "banded " : "untiled",
               pass ? "f16 NHWC" : "f32 NCHW", err, maxd, tol);
        CHECK(err <= tol && id.banded == (pass == 2), "%s out: rel L2 %.3g, banded %d", dk_dtype_name(t), err,
              id.banded);
        free(d);
    }
    /* Errors: a wrong output shape, overlapping tensors, NULL. */
    {
        dk_buffer *b = NULL;
        dk_tensor lat, out;
        CHECK(dk_buffer_create(ctx, (uint64_t)(numel + n * 4 * h * w) * 4 + 256, &b) == DK_OK, "%s",
              dk_last_error(ctx));
        lat = dk_tensor_nchw(b, 0, DK_F32, n, 4, h, w);
        out = dk_tensor_nchw(b, (uint64_t)n * 4 * h * w * 4, DK_F32, n, 3, 8 * h, 8 * w - 1);
        CHECK(dk_sdxl_vae_decode_tensor(vae, &lat, &out, NULL) == DK_ERR_INVALID_ARGUMENT &&
                  strstr(dk_last_error(ctx), "8h, 8w"), "wrong out shape: %s", dk_last_error(ctx));
        out = dk_tensor_nchw(b, 64, DK_F32, n, 3, 8 * h, 8 * w);
        CHECK(dk_sdxl_vae_decode_tensor(vae, &lat, &out, NULL) == DK_ERR_INVALID_ARGUMENT &&
                  strstr(dk_last_error(ctx), "overlaps"), "overlap: %s", dk_last_error(ctx));
        CHECK(dk_sdxl_vae_decode_tensor(vae, NULL, &out, NULL) == DK_ERR_INVALID_ARGUMENT &&
                  strstr(dk_last_error(ctx), "latents"), "NULL latents: %s", dk_last_error(ctx));
        printf("  errors: wrong shape, overlap, NULL: %s\n", dk_last_error(ctx));
        dk_buffer_destroy(ctx, b);
    }
    dk_sdxl_vae_destroy(vae);
    free(a);
}

/* dtypes first..last of f32, f16, bf16; odd_bands: also bands that do not
 * divide the height (host planning, the same on every backend). */
static void test_tiled(int first, int last, int odd_bands) {
    static const dk_dtype types[3] = {DK_F32, DK_F16, DK_BF16};
    static const double tols[3] = {1e-5, 3e-3, 1e-2};
    const int32_t h = 4, w = 3, n = 1;
    int64_t numel = (int64_t)n * 3 * 64 * h * w, i;
    float *z = (float *)malloc((size_t)(n * 4 * h * w) * sizeof(float));
    float *a = poisoned(numel), *b = poisoned(numel);
    uint64_t s = 99;
    int t;
    puts("tiled: bands of 1 latent row (4 bands at every resolution) vs untiled, random weights");
    fill_latents(z, n * 4 * h * w, &s);
    for (t = first; t <= last; t++) {
        dk_sdxl_vae *vae = NULL;
        dk_sdxl_vae_options o;
        dk_sdxl_vae_info iu, ib, ip;
        double err, maxd;
        uint64_t budget;
        dk_sdxl_vae_options_init(&o);
        CHECK(dk_sdxl_vae_create_random(ctx, 5, types[t], &o, &vae) == DK_OK, "%s", dk_last_error(ctx));
        CHECK(dk_sdxl_vae_decode_f32(vae, z, n, h, w, a, &iu) == DK_OK, "%s", dk_last_error(ctx));
        CHECK(!iu.banded, "untiled decode reports banded");
        o.tile_rows = 1;
        CHECK(dk_sdxl_vae_set_options(vae, &o) == DK_OK, "%s", dk_last_error(ctx));
        for (i = 0; i < numel; i++) b[i] = NAN;
        CHECK(dk_sdxl_vae_decode_f32(vae, z, n, h, w, b, &ib) == DK_OK, "%s", dk_last_error(ctx));
        CHECK(ib.banded && ib.band_rows == 1, "banded %d, band_rows %d", ib.banded, ib.band_rows);
        err = rel_err(b, a, numel, &maxd);
        printf("  %-4s bands of 1 row: rel L2 %.3g, max |diff| %.3g (tol %.0e); device peak untiled %.1f MiB, "
               "banded %.1f MiB\n", dk_dtype_name(types[t]), err, maxd, tols[t], iu.peak_device_bytes / 1048576.0,
               ib.peak_device_bytes / 1048576.0);
        CHECK(err <= tols[t], "tiled vs untiled rel L2 %.3g > %.3g", err, tols[t]);
        CHECK(ib.plan_device_bytes < iu.plan_device_bytes, "bands did not reduce the plan (%llu >= %llu)",
              (unsigned long long)ib.plan_device_bytes, (unsigned long long)iu.plan_device_bytes);
        /* A budget between the banded and the untiled need: the decoder picks bands
         * by itself, and the measured device peak stays inside the budget. */
        o.tile_rows = 0;
        budget = iu.weight_device_bytes + (ib.plan_device_bytes + iu.plan_device_bytes) / 2;
        o.max_device_bytes = budget;
        CHECK(dk_sdxl_vae_set_options(vae, &o) == DK_OK, "%s", dk_last_error(ctx));
        CHECK(dk_sdxl_vae_plan(vae, h, w, &ip) == DK_OK, "%s", dk_last_error(ctx));
        for (i = 0; i < numel; i++) b[i] = NAN;
        CHECK(dk_sdxl_vae_decode_f32(vae, z, n, h, w, b, &ib) == DK_OK, "%s", dk_last_error(ctx));
        err = rel_err(b, a, numel, &maxd);
        printf("  %-4s budget %.1f MiB: bands of %d rows, peak %.1f MiB, rel L2 %.3g\n", dk_dtype_name(types[t]),
               budget / 1048576.0, ib.band_rows, ib.peak_device_bytes / 1048576.0, err);
        CHECK(ib.banded && ib.band_rows == ip.band_rows, "budget decode: banded %d rows %d (plan %d)", ib.banded,
              ib.band_rows, ip.band_rows);
        CHECK(ib.peak_device_bytes <= budget, "peak %llu > budget %llu", (unsigned long long)ib.peak_device_bytes,
              (unsigned long long)budget);
        CHECK(err <= tols[t], "budget decode rel L2 %.3g > %.3g", err, tols[t]);
        /* Below what one-row bands need: a clear error. */
        o.max_device_bytes = iu.weight_device_bytes + 1;
        CHECK(dk_sdxl_vae_set_options(vae, &o) == DK_OK, "%s", dk_last_error(ctx));
        CHECK(dk_sdxl_vae_decode_f32(vae, z, n, h, w, b, &ib) == DK_ERR_OUT_OF_MEMORY &&
                  strstr(dk_last_error(ctx), "max_device_bytes"),
              "too small a budget: %s", dk_last_error(ctx));
        dk_sdxl_vae_destroy(vae);
    }
    free(z);
    free(a);
    free(b);
    /* Bands that do not divide the height (5 rows in bands of 2), odd width. */
    if (odd_bands) {
        const int32_t h2 = 5, w2 = 3;
        int64_t n2 = (int64_t)3 * 64 * h2 * w2;
        float *z2 = (float *)malloc((size_t)(4 * h2 * w2) * sizeof(float)), *u = poisoned(n2), *v = poisoned(n2);
        dk_sdxl_vae *vae = NULL;
        dk_sdxl_vae_options o;
        dk_sdxl_vae_info info;
        double err, maxd;
        fill_latents(z2, 4 * h2 * w2, &s);
        dk_sdxl_vae_options_init(&o);
        CHECK(dk_sdxl_vae_create_random(ctx, 6, DK_F32, &o, &vae) == DK_OK, "%s", dk_last_error(ctx));
        CHECK(dk_sdxl_vae_decode_f32(vae, z2, 1, h2, w2, u, &info) == DK_OK, "%s", dk_last_error(ctx));
        o.tile_rows = 2;
        CHECK(dk_sdxl_vae_set_options(vae, &o) == DK_OK, "%s", dk_last_error(ctx));
        CHECK(dk_sdxl_vae_decode_f32(vae, z2, 1, h2, w2, v, &info) == DK_OK, "%s", dk_last_error(ctx));
        err = rel_err(v, u, n2, &maxd);
        printf("  f32  5x3 latent, bands of 2 rows: rel L2 %.3g, max |diff| %.3g (tol 1e-05)\n", err, maxd);
        CHECK(info.banded && info.band_rows == 2 && err <= 1e-5, "5x3 in bands of 2: rel L2 %.3g", err);
        dk_sdxl_vae_destroy(vae);
        free(z2);
        free(u);
        free(v);
    }
}

/* ------------------------------------------------------------ errors */

static void expect_create(const char *path, dk_status want, const char *msg1, const char *msg2) {
    dk_sdxl_vae *vae = (dk_sdxl_vae *)&vae;
    dk_status st = dk_sdxl_vae_create_from_file(ctx, path, DK_F32, NULL, &vae);
    const char *m = dk_last_error(ctx);
    printf("  %-40s -> %s: %s\n", strrchr(path, '/') + 1, dk_status_name(st), m);
    CHECK(st == want, "%s: status %s, expected %s", path, dk_status_name(st), dk_status_name(want));
    CHECK(!vae, "%s: *out not NULL on failure", path);
    CHECK(strstr(m, msg1) && (!msg2 || strstr(m, msg2)), "%s: message '%s' lacks '%s' / '%s'", path, m, msg1,
          msg2 ? msg2 : "");
}

/* Copies src's tensors to dst, dropping `drop` and giving `reshape` 2 dims. */
static void rewrite(const char *src, const char *dst, const char *drop, const char *reshape) {
    dk_safetensors *f = NULL;
    int64_t n, i, k = 0;
    dk_st_tensor *ts;
    CHECK(dk_safetensors_open(src, &f) == DK_OK, "%s", dk_last_error(NULL));
    if (!f) exit(1);
    n = dk_safetensors_count(f);
    ts = (dk_st_tensor *)calloc((size_t)n, sizeof *ts);
    for (i = 0; i < n; i++) {
        CHECK(dk_safetensors_at(f, i, &ts[k]) == DK_OK, "%s", dk_last_error(NULL));
        if (drop && !strcmp(ts[k].name, drop)) continue;
        if (reshape && !strcmp(ts[k].name, reshape)) {
            ts[k].shape[1] *= ts[k].shape[2] * ts[k].shape[3];
            ts[k].ndim = 2;
        }
        k++;
    }
    CHECK(dk_safetensors_write(dst, ts, k) == DK_OK, "%s", dk_last_error(NULL));
    free(ts);
    dk_safetensors_close(f);
}

static void test_errors(const char *dir) {
    char src[1024], path[1024];
    const char *q = "first_stage_model.decoder.mid.attn_1.q.weight";
    const char *sc = "first_stage_model.decoder.up.1.block.0.nin_shortcut.weight";
    dk_sdxl_vae *vae = NULL;
    float z[4 * 2 * 2], out[3 * 16 * 16];
    FILE *in, *o;
    char *buf;
    long size;
    puts("errors:");
    snprintf(src, sizeof src, "%s/original_f16.safetensors", dir);
    snprintf(path, sizeof path, "%s/err_missing.safetensors", dir);
    rewrite(src, path, q, NULL);
    expect_create(path, DK_ERR_FORMAT, q, "missing");
    snprintf(path, sizeof path, "%s/err_shape.safetensors", dir);
    rewrite(src, path, NULL, sc);
    expect_create(path, DK_ERR_FORMAT, sc, "expected [256, 512, 1, 1]");
    snprintf(path, sizeof path, "%s/err_notvae.safetensors", dir);
    rewrite(src, path, "first_stage_model.decoder.up.3.block.0.conv1.weight", NULL);
    expect_create(path, DK_ERR_FORMAT, "not an SDXL VAE", NULL);
    /* Truncated: the first 60% of a valid file. */
    in = fopen(src, "rb");
    CHECK(in != NULL, "cannot open %s", src);
    if (!in) return;
    fseek(in, 0, SEEK_END);
    size = ftell(in);
    fseek(in, 0, SEEK_SET);
    size = size * 6 / 10;
    buf = (char *)malloc((size_t)size);
    CHECK(fread(buf, 1, (size_t)size, in) == (size_t)size, "short read");
    fclose(in);
    snprintf(path, sizeof path, "%s/err_truncated.safetensors", dir);
    o = fopen(path, "wb");
    CHECK(o && fwrite(buf, 1, (size_t)size, o) == (size_t)size, "cannot write %s", path);
    if (o) fclose(o);
    free(buf);
    expect_create(path, DK_ERR_FORMAT, "dk_sdxl_vae_create_from_file", NULL);
    snprintf(path, sizeof path, "%s/does_not_exist.safetensors", dir);
    expect_create(path, DK_ERR_IO, "does_not_exist", NULL);
    /* Bad arguments. */
    memset(z, 0, sizeof z);
    CHECK(dk_sdxl_vae_create_random(ctx, 1, (dk_dtype)9, NULL, &vae) == DK_ERR_INVALID_ARGUMENT &&
              strstr(dk_last_error(ctx), "dtype"), "bad dtype: %s", dk_last_error(ctx));
    {
        dk_sdxl_vae_options o2;
        dk_sdxl_vae_options_init(&o2);
        o2.fp16_activation_scale = 0.3f;
        CHECK(dk_sdxl_vae_create_random(ctx, 1, DK_F16, &o2, &vae) == DK_ERR_INVALID_ARGUMENT &&
                  strstr(dk_last_error(ctx), "fp16_activation_scale"), "bad scale: %s", dk_last_error(ctx));
    }
    CHECK(dk_sdxl_vae_create_random(ctx, 1, DK_F32, NULL, &vae) == DK_OK, "%s", dk_last_error(ctx));
    CHECK(dk_sdxl_vae_decode_f32(vae, z, 1, 0, 2, out, NULL) == DK_ERR_INVALID_ARGUMENT &&
              strstr(dk_last_error(ctx), "h 0"), "h = 0: %s", dk_last_error(ctx));
    CHECK(dk_sdxl_vae_decode_f32(vae, NULL, 1, 2, 2, out, NULL) == DK_ERR_INVALID_ARGUMENT &&
              strstr(dk_last_error(ctx), "latents"), "NULL latents: %s", dk_last_error(ctx));
    dk_sdxl_vae_destroy(vae);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    const char *dir = argc > 2 ? argv[2] : ".";
    dk_context_options co;
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress lines reach the test log */
    dk_context_options_init(&co);
    /* The CPU reference backend unless DIFKERN_BACKEND picks one (AUTO obeys it). */
    co.backend = getenv("DIFKERN_BACKEND") ? DK_BACKEND_AUTO : DK_BACKEND_CPU;
    if (dk_context_create(&co, &ctx) != DK_OK) {
        printf("no context: %s\n", dk_last_error(NULL));
        return 1;
    }
    printf("backend: %s\n", dk_context_describe(ctx));
    if (!strcmp(mode, "e2e")) test_e2e(dir);
    else if (!strcmp(mode, "precision")) test_precision(dir);
    else if (!strcmp(mode, "overflow")) test_overflow(dir);
    else if (!strcmp(mode, "tiled")) {
        /* 40 rows at full resolution: bands of 5.  On a GPU backend (lavapipe in
         * CI: minutes per dtype) the in-place conv in f32 and the bands in f16,
         * the decoder's own dtype; the CPU run and `shrink` take all three (the
         * band logic is one for every dtype and backend; the dtypes' kernels are
         * the case list's), and the CPU run the bands that do not divide the height. */
        const int cpu = dk_context_backend(ctx) == DK_BACKEND_CPU;
        test_shrink(5, 3, cpu ? 3 : 1);
        test_device_io();
        test_tiled(cpu ? 0 : 1, cpu ? 2 : 1, cpu);
    } else if (!strcmp(mode, "shrink")) { /* shrink HxW: a size of one's own (device runs) */
        int hh = 0, ww = 0;
        if (sscanf(dir, "%dx%d", &hh, &ww) == 2 && hh > 0 && ww > 0 && hh <= 512 && ww <= 512)
            test_shrink(hh, ww, 3);
        else {
            printf("shrink needs HxW (latent rows x columns, 1..512)\n");
            failures = 1;
        }
    }
    else if (!strcmp(mode, "errors")) test_errors(dir);
    else {
        printf("usage: test_vae e2e|precision|overflow|errors DIR | tiled | shrink HxW\n");
        failures = 1;
    }
    dk_context_destroy(ctx);
    printf("%s\n", failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
}
