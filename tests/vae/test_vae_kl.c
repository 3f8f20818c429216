/* AutoencoderKL family tests (include/difkern/vae.h; tests/vae/meson.build runs each mode):
 *   oracle DIR DTYPE [quick]  files from gen_kl.py: every model (SD 1.x, SDXL, SD3,
 *                  FLUX.1), decode, encode (mean) and encode with a seeded sample
 *                  vs the PyTorch oracle (autoencoder_kl_ref.py), diffusers and
 *                  original namings, decoder-only and encoder-only files, model
 *                  detection, device-tensor decode and encode (mean and sample); DTYPE f32 or f16; quick: the
 *                  16-channel files and SDXL only (slow devices)
 *   banded         a 16-channel (FLUX.1) decoder, random weights: bands of one
 *                  latent row equal untiled; the 1024x1024 encode plan
 *   banded_encode  a 4-channel (SDXL) encoder, random weights: bands of 1, 2
 *                  (not dividing the height), 3, 5 and 7 (clamped) latent rows,
 *                  bands chosen by max_device_bytes and a device-tensor encode
 *                  in bands equal untiled; a budget below bands of one row;
 *                  the 1024x1024 encode plans, untiled and banded
 *   errors DIR     wrong model for the weights, missing parts, bad arguments, NaN/Inf
 *                  latents (host floats and device tensors)
 * Backend: CPU, or the one DIFKERN_BACKEND names.  Exits 1 on a failed check. */
#include <difkern.h>
#include <difkern/safetensors.h>
#include <difkern/vae.h>

#include "vae_test_util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float *poisoned(int64_t n) {
    float *p = (float *)malloc((size_t)n * sizeof(float));
    int64_t i;
    for (i = 0; i < n; i++) p[i] = NAN;
    return p;
}

static dk_vae *open_vae(const char *dir, const char *file, dk_dtype t, dk_vae_model m) {
    char path[1024];
    dk_vae_options o;
    dk_vae *vae = NULL;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    dk_vae_options_init(&o);
    o.model = m;
    CHECK(dk_vae_create_from_file(ctx, path, t, &o, &vae) == DK_OK, "%s: %s", file, dk_last_error(ctx));
    return vae;
}

/* Compares got with the reference file ref; prints and checks the error. */
static void compare(const char *what, const float *got, const char *dir, const char *ref_name, int64_t n, double tol) {
    int64_t rn, shape[DK_MAX_DIMS];
    float *ref = read_npy(dir, ref_name, &rn, shape);
    double maxd = 0.0, err = rn == n ? rel_err(got, ref, n, &maxd) : INFINITY;
    printf("  %-44s rel L2 %.3g, max |diff| %.3g (tol %.0e)\n", what, err, maxd, tol);
    CHECK(rn == n && err <= tol, "%s vs %s: rel L2 %.3g > %.3g (%lld values, reference %lld)", what, ref_name, err, tol,
          (long long)n, (long long)rn);
    dk_npy_free(ref);
}

/* Encodes the image through dk_vae_encode_tensor (f32 NCHW in, out dtype t NHWC). */
static float *encode_on_device(dk_vae *vae, const float *img, int32_t n, int32_t hh, int32_t ww, int sample,
                               uint64_t seed) {
    int32_t lc = dk_vae_latent_channels(vae), h = hh / 8, w = ww / 8;
    int64_t ni = (int64_t)n * 3 * hh * ww, nl = (int64_t)n * lc * h * w, k, c, p;
    dk_buffer *bi = NULL, *bl = NULL;
    uint16_t *raw = (uint16_t *)malloc((size_t)nl * 2);
    float *res = poisoned(nl);
    dk_tensor ti, tl;
    CHECK(dk_buffer_create(ctx, (uint64_t)ni * 4, &bi) == DK_OK, "%s", dk_last_error(ctx));
    CHECK(dk_buffer_upload(ctx, bi, 0, img, (uint64_t)ni * 4) == DK_OK, "%s", dk_last_error(ctx));
    CHECK(dk_buffer_create(ctx, (uint64_t)nl * 2, &bl) == DK_OK, "%s", dk_last_error(ctx));
    ti = dk_tensor_nchw(bi, 0, DK_F32, n, 3, hh, ww);
    tl = dk_tensor_nhwc(bl, 0, DK_F16, n, lc, h, w);
    if (n == 1) ti.strides[0] = tl.strides[0] = INT64_MAX; /* a size-1 dim's stride is never used */
    CHECK(dk_vae_encode_tensor(vae, &ti, &tl, sample, seed, NULL) == DK_OK, "%s", dk_last_error(ctx));
    CHECK(dk_buffer_download(ctx, bl, 0, raw, (uint64_t)nl * 2) == DK_OK, "%s", dk_last_error(ctx));
    for (k = 0; k < n; k++)
        for (c = 0; c < lc; c++)
            for (p = 0; p < h * w; p++) res[(k * lc + c) * h * w + p] = dk_f16_to_f32(raw[(k * h * w + p) * lc + c]);
    dk_buffer_destroy(ctx, bi);
    dk_buffer_destroy(ctx, bl);
    free(raw);
    return res;
}

/* Decodes the latents z (host floats [n, lc, h, w]) through dk_vae_decode_tensor
 * from an f32 NHWC device tensor (a strided conversion, and the scale and shift
 * applied on the device) into f32 NCHW output, poisoned first. */
static float *decode_on_device(dk_vae *vae, const float *z, int32_t n, int32_t h, int32_t w) {
    int32_t lc = dk_vae_latent_channels(vae);
    int64_t nl = (int64_t)n * lc * h * w, no = (int64_t)n * 3 * 64 * h * w, k, c, p;
    float *zt = (float *)malloc((size_t)nl * sizeof(float)), *res = poisoned(no);
    dk_buffer *bl = NULL, *bo = NULL;
    dk_tensor tl, to;
    for (k = 0; k < n; k++) /* NCHW -> NHWC */
        for (c = 0; c < lc; c++)
            for (p = 0; p < (int64_t)h * w; p++) zt[(k * h * w + p) * lc + c] = z[(k * lc + c) * h * w + p];
    CHECK(dk_buffer_create(ctx, (uint64_t)nl * 4, &bl) == DK_OK, "%s", dk_last_error(ctx));
    CHECK(dk_buffer_upload(ctx, bl, 0, zt, (uint64_t)nl * 4) == DK_OK, "%s", dk_last_error(ctx));
    CHECK(dk_buffer_create(ctx, (uint64_t)no * 4, &bo) == DK_OK, "%s", dk_last_error(ctx));
    CHECK(dk_buffer_upload(ctx, bo, 0, res, (uint64_t)no * 4) == DK_OK, "%s", dk_last_error(ctx));
    tl = dk_tensor_nhwc(bl, 0, DK_F32, n, lc, h, w);
    to = dk_tensor_nchw(bo, 0, DK_F32, n, 3, 8 * h, 8 * w);
    if (n == 1) tl.strides[0] = to.strides[0] = INT64_MAX; /* a size-1 dim's stride is never used */
    CHECK(dk_vae_decode_tensor(vae, &tl, &to, NULL) == DK_OK, "%s", dk_last_error(ctx));
    CHECK(dk_buffer_download(ctx, bo, 0, res, (uint64_t)no * 4) == DK_OK, "%s", dk_last_error(ctx));
    dk_buffer_destroy(ctx, bl);
    dk_buffer_destroy(ctx, bo);
    free(zt);
    return res;
}

/* One model on one file: what the file holds is tested (dec/enc). */
static int quick_mode = 0; /* slow devices: no host-side sample encode (the device one covers it) */

static void check_model(const char *dir, const char *file, dk_vae_model m, dk_dtype t, int dec, int enc,
                        const char *naming, double tol) {
    char what[160], ref[64];
    const char *mn = dk_vae_model_name(m);
    dk_vae *vae = open_vae(dir, file, t, m);
    int64_t ln, lshape[DK_MAX_DIMS], in, ishape[DK_MAX_DIMS];
    float *img = read_npy(dir, "kl_image.npy", &in, ishape), *lat, *out;
    int32_t n, lc, hh, ww;
    if (!vae) return;
    lc = dk_vae_latent_channels(vae);
    n = (int32_t)ishape[0];
    hh = (int32_t)ishape[2];
    ww = (int32_t)ishape[3];
    CHECK(dk_vae_get_model(vae) == m && !strcmp(dk_vae_naming(vae), naming) && dk_vae_has_decoder(vae) == dec &&
              dk_vae_has_encoder(vae) == enc,
          "%s as %s: model %s, naming %s (expected %s), decoder %d, encoder %d", file, mn,
          dk_vae_model_name(dk_vae_get_model(vae)), dk_vae_naming(vae), naming, dk_vae_has_decoder(vae),
          dk_vae_has_encoder(vae));
    if (dec) {
        lat = read_npy(dir, lc == 4 ? "kl_latent4.npy" : "kl_latent16.npy", &ln, lshape);
        out = poisoned((int64_t)lshape[0] * 3 * 64 * lshape[2] * lshape[3]);
        CHECK(dk_vae_decode_f32(vae, lat, (int32_t)lshape[0], (int32_t)lshape[2], (int32_t)lshape[3], out, NULL) == DK_OK,
              "%s", dk_last_error(ctx));
        snprintf(what, sizeof what, "%s %s decode %s", mn, dk_dtype_name(t), file);
        snprintf(ref, sizeof ref, "kl_dec_%s.npy", mn);
        compare(what, out, dir, ref, (int64_t)lshape[0] * 3 * 64 * lshape[2] * lshape[3], tol);
        free(out);
        out = decode_on_device(vae, lat, (int32_t)lshape[0], (int32_t)lshape[2], (int32_t)lshape[3]);
        snprintf(what, sizeof what, "%s %s decode_tensor (f32 NHWC in)", mn, dk_dtype_name(t));
        compare(what, out, dir, ref, (int64_t)lshape[0] * 3 * 64 * lshape[2] * lshape[3], tol);
        free(out);
        dk_npy_free(lat);
    } else {
        float z[16];
        dk_status st = dk_vae_decode_f32(vae, z, 1, 1, 1, z, NULL);
        CHECK(st == DK_ERR_UNSUPPORTED && strstr(dk_last_error(ctx), "no decoder"), "decode without a decoder: %s",
              dk_last_error(ctx));
    }
    if (enc) {
        int64_t nl = (int64_t)n * lc * (hh / 8) * (ww / 8);
        out = poisoned(nl);
        CHECK(dk_vae_encode_f32(vae, img, n, hh, ww, out, NULL) == DK_OK, "%s", dk_last_error(ctx));
        snprintf(what, sizeof what, "%s %s encode %s", mn, dk_dtype_name(t), file);
        snprintf(ref, sizeof ref, "kl_enc_%s.npy", mn);
        compare(what, out, dir, ref, nl, tol);
        snprintf(ref, sizeof ref, "kl_sample_%s.npy", mn);
        if (!quick_mode) {
            CHECK(dk_vae_encode_sample_f32(vae, img, n, hh, ww, 42, out, NULL) == DK_OK, "%s", dk_last_error(ctx));
            snprintf(what, sizeof what, "%s %s encode sample %s", mn, dk_dtype_name(t), file);
            compare(what, out, dir, ref, nl, tol);
        }
        free(out);
        out = encode_on_device(vae, img, n, hh, ww, 1, 42);
        snprintf(what, sizeof what, "%s %s encode_tensor sample (f16 NHWC out)", mn, dk_dtype_name(t));
        compare(what, out, dir, ref, nl, tol > 2e-3 ? tol : 2e-3);
        free(out);
        /* the mean on the device: (mean - shift) * scaling from the last conv's epilogue */
        out = encode_on_device(vae, img, n, hh, ww, 0, 0);
        snprintf(what, sizeof what, "%s %s encode_tensor (f16 NHWC out)", mn, dk_dtype_name(t));
        snprintf(ref, sizeof ref, "kl_enc_%s.npy", mn);
        compare(what, out, dir, ref, nl, tol > 2e-3 ? tol : 2e-3);
        free(out);
    } else {
        float z[8 * 8 * 3];
        dk_status st = dk_vae_encode_f32(vae, z, 1, 8, 8, z, NULL);
        CHECK(st == DK_ERR_UNSUPPORTED && strstr(dk_last_error(ctx), "no encoder"), "encode without an encoder: %s",
              dk_last_error(ctx));
    }
    dk_npy_free(img);
    dk_vae_destroy(vae);
}

static void test_oracle(const char *dir, dk_dtype t, int quick) {
    double tol = t == DK_F32 ? 1e-4 : 1e-2;
    dk_vae *vae;
    quick_mode = quick;
    printf("oracle: every model vs PyTorch (f16-rounded weights, float32 reference), %s\n", dk_dtype_name(t));
    /* AUTO detection: 4 channels -> SDXL, 16 -> FLUX.1. */
    vae = open_vae(dir, "kl4_diffusers.safetensors", t, DK_VAE_AUTO);
    CHECK(vae && dk_vae_get_model(vae) == DK_VAE_SDXL && dk_vae_latent_channels(vae) == 4 &&
              fabsf(dk_vae_scaling_factor(vae) - 0.13025f) < 1e-7f && dk_vae_shift_factor(vae) == 0.0f,
          "kl4 AUTO: model %s", dk_vae_model_name(dk_vae_get_model(vae)));
    dk_vae_destroy(vae);
    vae = open_vae(dir, "kl16_dec.safetensors", t, DK_VAE_AUTO);
    CHECK(vae && dk_vae_get_model(vae) == DK_VAE_FLUX1 && dk_vae_latent_channels(vae) == 16 &&
              fabsf(dk_vae_shift_factor(vae) - 0.1159f) < 1e-7f,
          "kl16 AUTO: model %s", dk_vae_model_name(dk_vae_get_model(vae)));
    dk_vae_destroy(vae);
    check_model(dir, "kl4_diffusers.safetensors", DK_VAE_SDXL, t, 1, 1, "diffusers", tol);
    check_model(dir, "kl16_dec.safetensors", DK_VAE_FLUX1, t, 1, 0, "diffusers", tol);
    check_model(dir, "kl16_enc.safetensors", DK_VAE_FLUX1, t, 0, 1, "original", tol);
    if (quick) return;
    check_model(dir, "kl4_original.safetensors", DK_VAE_SD15, t, 1, 1, "original+prefix", tol);
    check_model(dir, "kl16_dec.safetensors", DK_VAE_SD3, t, 1, 0, "diffusers", tol);
    check_model(dir, "kl16_enc.safetensors", DK_VAE_SD3, t, 0, 1, "original", tol);
}

static void fill(float *z, int64_t n, uint64_t *s) {
    int64_t i;
    for (i = 0; i < n; i++) {
        *s = *s * 6364136223846793005ull + 1442695040888963407ull;
        z[i] = (float)((double)(*s >> 11) / 9007199254740992.0 * 4.0 - 2.0);
    }
}

static void test_banded(void) {
    const int32_t h = 4, w = 3;
    int64_t n = (int64_t)3 * 64 * h * w;
    float z[16 * 4 * 3], *a = poisoned(n), *b = poisoned(n);
    dk_vae_options o;
    dk_vae_info iu, ib, ip;
    dk_vae *vae = NULL;
    double err, maxd;
    uint64_t s = 5, all;
    puts("banded: FLUX.1 (16 channels) decoder in bands of 1 latent row vs untiled, random weights, f32");
    fill(z, 16 * h * w, &s);
    dk_vae_options_init(&o);
    o.model = DK_VAE_FLUX1;
    CHECK(dk_vae_create_random(ctx, 3, DK_F32, &o, &vae) == DK_OK, "%s", dk_last_error(ctx));
    CHECK(dk_vae_decode_f32(vae, z, 1, h, w, a, &iu) == DK_OK && !iu.banded, "%s", dk_last_error(ctx));
    o.tile_rows = 1;
    CHECK(dk_vae_set_options(vae, &o) == DK_OK, "%s", dk_last_error(ctx));
    CHECK(dk_vae_decode_f32(vae, z, 1, h, w, b, &ib) == DK_OK && ib.banded && ib.band_rows == 1, "%s",
          dk_last_error(ctx));
    err = rel_err(b, a, n, &maxd);
    printf("  bands of 1 row: rel L2 %.3g, max |diff| %.3g (tol 1e-05)\n", err, maxd);
    CHECK(err <= 1e-5, "banded vs untiled rel L2 %.3g", err);
    dk_vae_destroy(vae);
    /* The plans at 1024x1024 (f16): decode and encode, each model's weights. */
    o.tile_rows = 0;
    o.model = DK_VAE_FLUX1;
    CHECK(dk_vae_create_random(ctx, 3, DK_F16, &o, &vae) == DK_OK, "%s", dk_last_error(ctx));
    CHECK(dk_vae_plan_encode(vae, 1024, 1024, &ip) == DK_OK, "%s", dk_last_error(ctx));
    all = ip.plan_device_bytes + ip.weight_device_bytes + ip.scratch_reserve_bytes;
    printf("  f16 1024x1024 encode plan: %.1f MiB activations + %.1f MiB weights (both directions) + %.1f MiB "
           "scratch reserve = %.1f MiB\n", ip.plan_device_bytes / 1048576.0, ip.weight_device_bytes / 1048576.0,
           ip.scratch_reserve_bytes / 1048576.0, all / 1048576.0);
    CHECK(all <= (uint64_t)1100 << 20, "1024x1024 encode plan %llu bytes", (unsigned long long)all);
    CHECK(dk_vae_plan(vae, 128, 128, &ip) == DK_OK, "%s", dk_last_error(ctx));
    printf("  f16 1024x1024 decode plan: %.1f MiB activations + %.1f MiB weights\n", ip.plan_device_bytes / 1048576.0,
           ip.weight_device_bytes / 1048576.0);
    dk_vae_destroy(vae);
    free(a);
    free(b);
}

/* The encode of img with tile_rows t (0: untiled) into a fresh buffer. */
static float *encode_rows(dk_vae *vae, dk_vae_options *o, int32_t t, const float *img, int32_t hh, int32_t ww,
                          dk_vae_info *info) {
    float *z = poisoned((int64_t)dk_vae_latent_channels(vae) * (hh / 8) * (ww / 8));
    o->tile_rows = t;
    CHECK(dk_vae_set_options(vae, o) == DK_OK, "%s", dk_last_error(ctx));
    CHECK(dk_vae_encode_f32(vae, img, 1, hh, ww, z, info) == DK_OK, "tile_rows %d: %s", (int)t, dk_last_error(ctx));
    return z;
}

static void check_same(const char *what, const float *got, const float *ref, int64_t n, double tol) {
    double maxd, err = rel_err(got, ref, n, &maxd);
    printf("  %-44s rel L2 %.3g, max |diff| %.3g (tol %.0e)\n", what, err, maxd, tol);
    CHECK(err <= tol, "%s vs untiled: rel L2 %.3g > %.3g", what, err, tol);
}

static void test_banded_encode(void) {
    /* 40x24: a 5x3 latent, so that bands of 2 and 3 latent rows leave a short last band */
    const int32_t hh = 40, ww = 24, rows[5] = {1, 2, 3, 5, 7};
    const int64_t ni = (int64_t)3 * hh * ww, nl = (int64_t)4 * (hh / 8) * (ww / 8);
    float *img = (float *)malloc((size_t)ni * sizeof(float)), *ref, *got;
    char what[96], msg[64];
    dk_vae_options o;
    dk_vae_info iu, ib, ip;
    dk_vae *vae = NULL;
    uint64_t s = 11, need;
    int32_t i;
    puts("banded_encode: SDXL (4 channels) encoder in bands vs untiled, random weights, f32");
    fill(img, ni, &s);
    dk_vae_options_init(&o);
    o.model = DK_VAE_SDXL;
    CHECK(dk_vae_create_random(ctx, 7, DK_F32, &o, &vae) == DK_OK, "%s", dk_last_error(ctx));
    ref = encode_rows(vae, &o, 0, img, hh, ww, &iu);
    CHECK(!iu.banded && iu.band_rows == hh / 8, "untiled encode: banded %d, band_rows %d", iu.banded, iu.band_rows);
    for (i = 0; i < 5; i++) {
        got = encode_rows(vae, &o, rows[i], img, hh, ww, &ib);
        CHECK(ib.banded && ib.band_rows == (rows[i] < hh / 8 ? rows[i] : hh / 8), "tile_rows %d: banded %d, band_rows %d",
              (int)rows[i], ib.banded, ib.band_rows);
        snprintf(what, sizeof what, "tile_rows %d (bands of %d latent rows)", (int)rows[i], (int)ib.band_rows);
        check_same(what, got, ref, nl, 1e-5);
        free(got);
    }
    /* max_device_bytes one byte below the untiled plan: the largest bands that fit. */
    o.tile_rows = 0;
    CHECK(dk_vae_set_options(vae, &o) == DK_OK && dk_vae_plan_encode(vae, hh, ww, &ip) == DK_OK, "%s",
          dk_last_error(ctx));
    o.max_device_bytes = ip.plan_device_bytes + ip.weight_device_bytes + ip.scratch_reserve_bytes - 1;
    got = encode_rows(vae, &o, 0, img, hh, ww, &ib);
    CHECK(ib.banded &&
              ib.plan_device_bytes + ib.weight_device_bytes + ib.scratch_reserve_bytes <= o.max_device_bytes,
          "max_device_bytes %llu: banded %d, band_rows %d", (unsigned long long)o.max_device_bytes, ib.banded,
          ib.band_rows);
    snprintf(what, sizeof what, "max_device_bytes: bands of %d latent rows", (int)ib.band_rows);
    check_same(what, got, ref, nl, 1e-5);
    free(got);
    /* The device-tensor path in bands (f16 NHWC out, as the untiled one). */
    o.max_device_bytes = 0;
    free(ref);
    ref = encode_on_device(vae, img, 1, hh, ww, 0, 0);
    o.tile_rows = 2;
    CHECK(dk_vae_set_options(vae, &o) == DK_OK, "%s", dk_last_error(ctx));
    got = encode_on_device(vae, img, 1, hh, ww, 0, 0);
    check_same("encode_tensor, tile_rows 2 (f16 NHWC out)", got, ref, nl, 1e-3);
    free(got);
    /* A shift set after encodes on the device (its bias is cached): the latents move by
     * -0.25 * scaling. */
    {
        const float sc = dk_vae_scaling_factor(vae);
        int64_t k;
        o.tile_rows = 0;
        o.shift_factor = dk_vae_shift_factor(vae) + 0.25f;
        CHECK(dk_vae_set_options(vae, &o) == DK_OK, "%s", dk_last_error(ctx));
        got = encode_on_device(vae, img, 1, hh, ww, 0, 0);
        for (k = 0; k < nl; k++) ref[k] -= 0.25f * sc;
        check_same("encode_tensor, shift + 0.25 set afterwards", got, ref, nl, 1e-3);
        free(got);
        o.shift_factor = NAN;
    }
    /* A budget below bands of one latent row: the error names that minimum. */
    o.tile_rows = 1;
    CHECK(dk_vae_set_options(vae, &o) == DK_OK && dk_vae_plan_encode(vae, hh, ww, &ip) == DK_OK && ip.banded, "%s",
          dk_last_error(ctx));
    need = ip.plan_device_bytes + ip.weight_device_bytes + ip.scratch_reserve_bytes;
    o.tile_rows = 0;
    o.max_device_bytes = need - 1;
    CHECK(dk_vae_set_options(vae, &o) == DK_OK, "%s", dk_last_error(ctx));
    snprintf(msg, sizeof msg, "%llu bytes", (unsigned long long)need);
    CHECK(dk_vae_plan_encode(vae, hh, ww, &ip) == DK_ERR_OUT_OF_MEMORY && strstr(dk_last_error(ctx), msg),
          "max_device_bytes %llu (bands of one row need %llu): %s", (unsigned long long)(need - 1),
          (unsigned long long)need, dk_last_error(ctx));
    printf("  %s\n", dk_last_error(ctx));
    dk_vae_destroy(vae);
    free(ref);
    free(img);
    /* The plans at 1024x1024 (f16, FLUX.1 weights): untiled and in bands. */
    dk_vae_options_init(&o);
    o.model = DK_VAE_FLUX1;
    CHECK(dk_vae_create_random(ctx, 3, DK_F16, &o, &vae) == DK_OK, "%s", dk_last_error(ctx));
    CHECK(dk_vae_plan_encode(vae, 1024, 1024, &iu) == DK_OK && !iu.banded, "%s", dk_last_error(ctx));
    printf("  f16 1024x1024 encode plan, untiled: %.1f MiB activations + %.1f MiB scratch reserve\n",
           iu.plan_device_bytes / 1048576.0, iu.scratch_reserve_bytes / 1048576.0);
    for (i = 0; i < 3; i++) {
        o.tile_rows = i == 0 ? 1 : i == 1 ? 8 : 32;
        CHECK(dk_vae_set_options(vae, &o) == DK_OK && dk_vae_plan_encode(vae, 1024, 1024, &ib) == DK_OK && ib.banded &&
                  ib.band_rows == o.tile_rows, "%s", dk_last_error(ctx));
        printf("  f16 1024x1024 encode plan, bands of %2d latent rows: %.1f MiB activations + %.1f MiB scratch reserve\n",
               (int)ib.band_rows, ib.plan_device_bytes / 1048576.0, ib.scratch_reserve_bytes / 1048576.0);
        CHECK(ib.plan_device_bytes < iu.plan_device_bytes, "bands of %d rows plan %llu >= untiled %llu", (int)o.tile_rows,
              (unsigned long long)ib.plan_device_bytes, (unsigned long long)iu.plan_device_bytes);
    }
    dk_vae_destroy(vae);
}

/* NaN/Inf latents are refused before anything is decoded, with the first bad
 * value's place, from host floats and from a device tensor alike (there found
 * by the device-side test, then located on the host); finite latents too large
 * for that test's fp32 statistics (1e30) are not refused as latents. */
static void test_nonfinite_latents(dk_vae *vae) {
    const int32_t n = 2, h = 2, w = 3, lc = dk_vae_latent_channels(vae);
    const int64_t nl = (int64_t)n * lc * h * w, no = (int64_t)n * 3 * 64 * h * w;
    float *z = (float *)malloc((size_t)nl * sizeof(float)), *out = poisoned(no);
    dk_buffer *bl = NULL, *bo = NULL;
    dk_tensor tl, to;
    int64_t i;
    int pass;
    for (i = 0; i < nl; i++) z[i] = (float)((i * 7) % 11) * 0.1f - 0.5f;
    CHECK(dk_buffer_create(ctx, (uint64_t)nl * 4, &bl) == DK_OK, "%s", dk_last_error(ctx));
    CHECK(dk_buffer_create(ctx, (uint64_t)no * 4, &bo) == DK_OK, "%s", dk_last_error(ctx));
    tl = dk_tensor_nchw(bl, 0, DK_F32, n, lc, h, w);
    to = dk_tensor_nchw(bo, 0, DK_F32, n, 3, 8 * h, 8 * w);
    for (pass = 0; pass < 3; pass++) {
        /* sample 1, channel 2, row 1, column 2 */
        const int64_t at = ((int64_t)(1 * lc + 2) * h + 1) * w + 2;
        const float bad = pass == 0 ? NAN : pass == 1 ? -INFINITY : 1e30f;
        const char *where = "at [1, 2, 1, 2]";
        dk_status sh, sd;
        z[at] = bad;
        CHECK(dk_buffer_upload(ctx, bl, 0, z, (uint64_t)nl * 4) == DK_OK, "%s", dk_last_error(ctx));
        CHECK(dk_buffer_upload(ctx, bo, 0, out, (uint64_t)no * 4) == DK_OK, "%s", dk_last_error(ctx));
        sh = dk_vae_decode_f32(vae, z, n, h, w, out, NULL);
        if (pass < 2)
            CHECK(sh == DK_ERR_NON_FINITE && strstr(dk_last_error(ctx), "latents hold") &&
                      strstr(dk_last_error(ctx), where), "decode_f32, latent %g: %s", (double)bad, dk_last_error(ctx));
        else
            CHECK(!strstr(dk_last_error(ctx), "latents hold"), "decode_f32, latent 1e30: %s", dk_last_error(ctx));
        sd = dk_vae_decode_tensor(vae, &tl, &to, NULL);
        printf("  latent %g: host %s | device %s\n", (double)bad, dk_status_name(sh),
               sd == DK_OK ? "DK_OK" : dk_last_error(ctx));
        if (pass < 2) {
            float first = 0.0f;
            CHECK(sd == DK_ERR_NON_FINITE && strstr(dk_last_error(ctx), "latents hold") &&
                      strstr(dk_last_error(ctx), where), "decode_tensor, latent %g: %s", (double)bad, dk_last_error(ctx));
            /* nothing decoded: sample 0's output is still the poison */
            CHECK(dk_buffer_download(ctx, bo, 0, &first, sizeof first) == DK_OK && isnan(first),
                  "decode_tensor wrote its output before refusing the latents");
        } else {
            CHECK(sd == sh && (sd == DK_OK || !strstr(dk_last_error(ctx), "latents hold")),
                  "decode_tensor, latent 1e30: %s (host call: %s)", dk_last_error(ctx), dk_status_name(sh));
        }
        z[at] = 0.25f;
    }
    dk_buffer_destroy(ctx, bl);
    dk_buffer_destroy(ctx, bo);
    free(z);
    free(out);
    /* A batch past the device test's 32 samples per read-back: a NaN in the
     * last sample is found by its second round (refused before any decode). */
    {
        const int32_t nb = 34;
        const int64_t nlb = (int64_t)nb * lc * h * w, nob = (int64_t)nb * 3 * 64 * h * w;
        float *zb = (float *)malloc((size_t)nlb * sizeof(float));
        for (i = 0; i < nlb; i++) zb[i] = (float)((i * 5) % 13) * 0.1f - 0.6f;
        zb[nlb - 1] = NAN; /* sample 33, last channel, row 1, column 2 */
        CHECK(dk_buffer_create(ctx, (uint64_t)nlb * 4, &bl) == DK_OK, "%s", dk_last_error(ctx));
        CHECK(dk_buffer_create(ctx, (uint64_t)nob * 4, &bo) == DK_OK, "%s", dk_last_error(ctx));
        CHECK(dk_buffer_upload(ctx, bl, 0, zb, (uint64_t)nlb * 4) == DK_OK, "%s", dk_last_error(ctx));
        tl = dk_tensor_nchw(bl, 0, DK_F32, nb, lc, h, w);
        to = dk_tensor_nchw(bo, 0, DK_F32, nb, 3, 8 * h, 8 * w);
        CHECK(dk_vae_decode_tensor(vae, &tl, &to, NULL) == DK_ERR_NON_FINITE && strstr(dk_last_error(ctx), "latents hold") &&
                  strstr(dk_last_error(ctx), "at [33, 3, 1, 2]"),
              "decode_tensor, batch 34, NaN in the last sample: %s", dk_last_error(ctx));
        printf("  batch 34, NaN in the last sample: %s\n", dk_last_error(ctx));
        dk_buffer_destroy(ctx, bl);
        dk_buffer_destroy(ctx, bo);
        free(zb);
    }
}

static void test_errors(const char *dir) {
    char path[1024];
    dk_vae_options o;
    dk_vae *vae = NULL;
    float img[3 * 12 * 8], lat[4];
    puts("errors:");
    dk_vae_options_init(&o);
    o.model = DK_VAE_SD3;
    snprintf(path, sizeof path, "%s/kl4_diffusers.safetensors", dir);
    CHECK(dk_vae_create_from_file(ctx, path, DK_F32, &o, &vae) == DK_ERR_FORMAT && !vae &&
              strstr(dk_last_error(ctx), "sd3") && strstr(dk_last_error(ctx), "decoder.conv_in.weight"),
          "SD3 on 4-channel weights: %s", dk_last_error(ctx));
    printf("  %s\n", dk_last_error(ctx));
    o.model = DK_VAE_SDXL;
    snprintf(path, sizeof path, "%s/kl16_enc.safetensors", dir);
    CHECK(dk_vae_create_from_file(ctx, path, DK_F32, &o, &vae) == DK_ERR_FORMAT &&
              strstr(dk_last_error(ctx), "encoder.conv_out.weight"), "SDXL on 16-channel weights: %s", dk_last_error(ctx));
    printf("  %s\n", dk_last_error(ctx));
    o.model = (dk_vae_model)7;
    CHECK(dk_vae_create_random(ctx, 1, DK_F32, &o, &vae) == DK_ERR_INVALID_ARGUMENT && strstr(dk_last_error(ctx), "model"),
          "bad model: %s", dk_last_error(ctx));
    dk_vae_options_init(&o);
    o.model = DK_VAE_SD15;
    CHECK(dk_vae_create_random(ctx, 1, DK_F32, &o, &vae) == DK_OK, "%s", dk_last_error(ctx));
    memset(img, 0, sizeof img);
    CHECK(dk_vae_encode_f32(vae, img, 1, 12, 8, lat, NULL) == DK_ERR_INVALID_ARGUMENT &&
              strstr(dk_last_error(ctx), "multiples of 8"), "12x8 image: %s", dk_last_error(ctx));
    printf("  %s\n", dk_last_error(ctx));
    img[5] = NAN;
    CHECK(dk_vae_encode_f32(vae, img, 1, 8, 8, lat, NULL) == DK_ERR_NON_FINITE && strstr(dk_last_error(ctx), "NaN"),
          "NaN image: %s", dk_last_error(ctx));
    printf("  %s\n", dk_last_error(ctx));
    test_nonfinite_latents(vae);
    o.model = DK_VAE_FLUX1;
    CHECK(dk_vae_set_options(vae, &o) == DK_ERR_INVALID_ARGUMENT && strstr(dk_last_error(ctx), "flux1"),
          "set_options to another architecture: %s", dk_last_error(ctx));
    o.model = DK_VAE_SDXL;
    CHECK(dk_vae_set_options(vae, &o) == DK_OK && dk_vae_get_model(vae) == DK_VAE_SDXL &&
              fabsf(dk_vae_scaling_factor(vae) - 0.13025f) < 1e-7f, "set_options SD15 -> SDXL: %s", dk_last_error(ctx));
    o.scaling_factor = 0.5f;
    o.shift_factor = 0.25f;
    CHECK(dk_vae_set_options(vae, &o) == DK_OK && dk_vae_scaling_factor(vae) == 0.5f && dk_vae_shift_factor(vae) == 0.25f,
          "scaling/shift override: %s", dk_last_error(ctx));
    dk_vae_destroy(vae);
    /* options->parts: one direction of a full file; the asked part missing; a bad value. */
    {
        dk_vae *all = NULL, *dec = NULL, *enc = NULL;
        dk_vae_info ia, id, ie;
        dk_vae_options_init(&o);
        snprintf(path, sizeof path, "%s/kl4_diffusers.safetensors", dir);
        CHECK(dk_vae_create_from_file(ctx, path, DK_F32, &o, &all) == DK_OK, "%s", dk_last_error(ctx));
        o.parts = DK_VAE_PARTS_DECODER;
        CHECK(dk_vae_create_from_file(ctx, path, DK_F32, &o, &dec) == DK_OK, "%s", dk_last_error(ctx));
        o.parts = DK_VAE_PARTS_ENCODER;
        CHECK(dk_vae_create_from_file(ctx, path, DK_F32, &o, &enc) == DK_OK, "%s", dk_last_error(ctx));
        if (all && dec && enc) {
            CHECK(dk_vae_has_decoder(all) && dk_vae_has_encoder(all) && dk_vae_has_decoder(dec) &&
                      !dk_vae_has_encoder(dec) && !dk_vae_has_decoder(enc) && dk_vae_has_encoder(enc),
                  "parts: all %d/%d, decoder %d/%d, encoder %d/%d", dk_vae_has_decoder(all), dk_vae_has_encoder(all),
                  dk_vae_has_decoder(dec), dk_vae_has_encoder(dec), dk_vae_has_decoder(enc), dk_vae_has_encoder(enc));
            CHECK(dk_vae_plan(all, 4, 4, &ia) == DK_OK && dk_vae_plan(dec, 4, 4, &id) == DK_OK &&
                      dk_vae_plan_encode(enc, 32, 32, &ie) == DK_OK, "%s", dk_last_error(ctx));
            printf("  parts: weights all %.1f MiB = decoder %.1f + encoder %.1f\n", ia.weight_device_bytes / 1048576.0,
                   id.weight_device_bytes / 1048576.0, ie.weight_device_bytes / 1048576.0);
            CHECK(id.weight_device_bytes + ie.weight_device_bytes == ia.weight_device_bytes &&
                      id.weight_device_bytes < ia.weight_device_bytes && ie.weight_device_bytes < ia.weight_device_bytes,
                  "parts: weight bytes %llu + %llu != %llu", (unsigned long long)id.weight_device_bytes,
                  (unsigned long long)ie.weight_device_bytes, (unsigned long long)ia.weight_device_bytes);
            memset(img, 0, sizeof img);
            CHECK(dk_vae_encode_f32(dec, img, 1, 8, 8, lat, NULL) == DK_ERR_UNSUPPORTED &&
                      strstr(dk_last_error(ctx), "no encoder"), "encode with the decoder only: %s", dk_last_error(ctx));
        }
        dk_vae_destroy(all);
        dk_vae_destroy(dec);
        dk_vae_destroy(enc);
        snprintf(path, sizeof path, "%s/kl16_dec.safetensors", dir);
        CHECK(dk_vae_create_from_file(ctx, path, DK_F32, &o, &vae) == DK_ERR_FORMAT && !vae &&
                  strstr(dk_last_error(ctx), "holds no encoder"), "encoder of a decoder-only file: %s",
              dk_last_error(ctx));
        printf("  %s\n", dk_last_error(ctx));
        o.parts = (dk_vae_parts)3;
        CHECK(dk_vae_create_random(ctx, 1, DK_F32, &o, &vae) == DK_ERR_INVALID_ARGUMENT &&
                  strstr(dk_last_error(ctx), "parts"), "bad parts: %s", dk_last_error(ctx));
    }
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    const char *dir = argc > 2 ? argv[2] : ".";
    dk_context_options co;
    setvbuf(stdout, NULL, _IOLBF, 0);
    dk_context_options_init(&co);
    co.backend = getenv("DIFKERN_BACKEND") ? DK_BACKEND_AUTO : DK_BACKEND_CPU;
    if (dk_context_create(&co, &ctx) != DK_OK) {
        printf("no context: %s\n", dk_last_error(NULL));
        return 1;
    }
    printf("backend: %s\n", dk_context_describe(ctx));
    if (!strcmp(mode, "oracle") && argc > 3)
        test_oracle(dir, !strcmp(argv[3], "f16") ? DK_F16 : DK_F32, argc > 4 && !strcmp(argv[4], "quick"));
    else if (!strcmp(mode, "banded")) test_banded();
    else if (!strcmp(mode, "banded_encode")) test_banded_encode();
    else if (!strcmp(mode, "errors")) test_errors(dir);
    else {
        printf("usage: test_vae_kl oracle DIR f32|f16 [quick] | banded | banded_encode | errors DIR\n");
        failures = 1;
    }
    dk_context_destroy(ctx);
    printf("%s\n", failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
}
