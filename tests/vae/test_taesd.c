/* TAESD family tests (tests/vae/meson.build runs each mode):
 *   oracle DIR SIZE MODELS  every member's configuration (seeded random weights from
 *                           gen_taesd.py) and the real TAEF2 weights (MODELS: models/taef2)
 *                           vs the PyTorch oracle, encode SIZExSIZE images and decode
 *                           SIZE/8 latents, in f32, f16 and bf16; with SIZE 64 also the
 *                           key namings (diffusers, comfyui), create_from_memory and an
 *                           odd image size; the device-tensor entry points at every SIZE
 *   errors DIR              missing tensor, wrong shape, wrong model, absent direction,
 *                           bad arguments: each a status with a message naming the culprit
 *   random                  create_random: deterministic, finite, every member
 *   roundtrip PNG SIZE MODELS MIN_DB MAX_DB  encode + decode of a photo downscaled to
 *                           SIZExSIZE with the real TAEF2 weights in f32 and f16: PSNR in
 *                           [MIN_DB, MAX_DB], f16 within 0.2 dB of f32
 *   time MODELS SIZE        TAEF2 decode of a SIZE/8 x SIZE/8 x 32 latent, f32 (prints ms)
 * Backend: CPU, or the one DIFKERN_BACKEND names.
 * Prints every measured error; exits 1 if a check failed. */
#define _POSIX_C_SOURCE 200809L
#include <difkern.h>
#include <difkern/safetensors.h>
#include <difkern/taesd.h>

#include "vae_test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <stb/stb_image.h>


static const char *const members[5] = {"taesd", "taesdxl", "taesd3", "taef1", "taef2"};
static const dk_taesd_model member_enum[5] = {DK_TAESD_SD, DK_TAESD_SDXL, DK_TAESD_SD3, DK_TAESD_FLUX1,
                                              DK_TAESD_FLUX2};
static const int member_channels[5] = {4, 4, 16, 16, 32};

typedef struct arr {
    float *d;
    int64_t n, shape[DK_MAX_DIMS];
} arr;

static arr load(const char *dir, const char *name) {
    char path[1024];
    arr a;
    int32_t nd = 0, i;
    memset(&a, 0, sizeof a);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (dk_npy_read_f32(path, &a.d, &nd, a.shape) != DK_OK) {
        printf("cannot read %s: %s\n", path, dk_last_error(NULL));
        exit(1);
    }
    a.n = 1;
    for (i = 0; i < nd; i++) a.n *= a.shape[i];
    return a;
}

static float *poisoned(int64_t n) {
    float *p = (float *)malloc((size_t)n * sizeof(float));
    int64_t i;
    for (i = 0; i < n; i++) p[i] = NAN;
    return p;
}

/* max |x - ref| / (max(ref) - min(ref)); +inf when x has NaN/Inf. */
static double range_err(const float *x, const float *ref, int64_t n) {
    double maxd = 0.0, lo = INFINITY, hi = -INFINITY;
    int64_t i;
    for (i = 0; i < n; i++) {
        double d = fabs((double)x[i] - ref[i]);
        if (!isfinite(x[i])) return INFINITY;
        if (d > maxd) maxd = d;
        if (ref[i] < lo) lo = ref[i];
        if (ref[i] > hi) hi = ref[i];
    }
    return maxd / (hi > lo ? hi - lo : 1.0);
}

static double tol_for(dk_dtype t) { return t == DK_F32 ? 1e-4 : t == DK_F16 ? 1e-2 : 4e-2; }

static void path_of(char *dst, size_t cap, const char *dir, const char *file) {
    snprintf(dst, cap, "%s/%s", dir, file);
}

/* Encode image (or decode latent) and compare with the reference; returns the error. */
static double check_dir(dk_taesd *tae, int encode, const arr *in, const arr *ref, const char *what, dk_dtype dt,
                        double tol) {
    float *out = poisoned(ref->n);
    double err = INFINITY;
    dk_status st;
    if (encode)
        st = dk_taesd_encode_f32(tae, in->d, (int32_t)in->shape[0], (int32_t)in->shape[2], (int32_t)in->shape[3], out);
    else
        st = dk_taesd_decode_f32(tae, in->d, (int32_t)in->shape[0], (int32_t)in->shape[2], (int32_t)in->shape[3], out);
    CHECK(st == DK_OK, "%s %s: %s", what, encode ? "encode" : "decode", dk_last_error(ctx));
    if (st == DK_OK) err = range_err(out, ref->d, ref->n);
    printf("  %-22s %-6s %-4s max err / range %.3g (tol %.0e)\n", what, encode ? "encode" : "decode",
           dk_dtype_name(dt), err, tol);
    CHECK(err <= tol, "%s %s %s: error %.3g > %.3g", what, encode ? "encode" : "decode", dk_dtype_name(dt), err, tol);
    free(out);
    return err;
}

static dk_taesd *create_files(const char *enc, const char *dec, dk_dtype dt, dk_taesd_model model) {
    dk_taesd_options o;
    dk_taesd *tae = NULL;
    dk_status st;
    dk_taesd_options_init(&o);
    o.dtype = dt;
    o.model = model;
    st = dk_taesd_create_from_files(ctx, enc, dec, &o, &tae);
    CHECK(st == DK_OK, "create %s %s: %s", enc ? enc : "-", dec ? dec : "-", dk_last_error(ctx));
    return tae;
}

static void check_props(dk_taesd *tae, const char *model, const char *naming) {
    dk_taesd_properties pr;
    if (!tae) return;
    CHECK(dk_taesd_properties_get(tae, &pr) == DK_OK, "properties");
    CHECK(!strcmp(dk_taesd_model_name(pr.model), model), "model %s, expected %s", dk_taesd_model_name(pr.model), model);
    CHECK(pr.has_encoder && pr.has_decoder, "directions");
    CHECK(!strcmp(pr.encoder_naming, naming) && !strcmp(pr.decoder_naming, naming), "naming %s/%s, expected %s",
          pr.encoder_naming, pr.decoder_naming, naming);
}

/* Decode and encode through the device-tensor entry points: latents NHWC f32
 * in, image NHWC f16 out; image NCHW f32 in, latents NHWC bf16 out. */
static void test_tensors(const char *dir, int size) {
    char pe[1024], pd[1024], name[64];
    arr lat, ref, img, zref;
    dk_taesd *tae;
    dk_buffer *bl = NULL, *bo = NULL, *bi = NULL, *bz = NULL;
    uint16_t *h16;
    float *host;
    int64_t n, c, h, w, i;
    double err;
    snprintf(name, sizeof name, "latent32_%d.npy", size / 8);
    lat = load(dir, name);
    snprintf(name, sizeof name, "taef2_dec%d.npy", size / 8);
    ref = load(dir, name);
    snprintf(name, sizeof name, "image%d.npy", size);
    img = load(dir, name);
    snprintf(name, sizeof name, "taef2_enc%d.npy", size);
    zref = load(dir, name);
    path_of(pe, sizeof pe, dir, "taef2_encoder.safetensors");
    path_of(pd, sizeof pd, dir, "taef2_decoder.safetensors");
    tae = create_files(pe, pd, DK_F32, DK_TAESD_AUTO);
    if (!tae) return;
    n = lat.shape[0]; c = lat.shape[1]; h = lat.shape[2]; w = lat.shape[3];
    host = (float *)malloc((size_t)lat.n * sizeof(float));
    for (i = 0; i < lat.n; i++) { /* NCHW -> NHWC */
        int64_t b = i / (c * h * w), r = i % (c * h * w), ch = r / (h * w), p = r % (h * w);
        host[(b * h * w + p) * c + ch] = lat.d[i];
    }
    CHECK(dk_buffer_create(ctx, (uint64_t)lat.n * 4, &bl) == DK_OK, "%s", dk_last_error(ctx));
    CHECK(dk_buffer_upload(ctx, bl, 0, host, (uint64_t)lat.n * 4) == DK_OK, "%s", dk_last_error(ctx));
    CHECK(dk_buffer_create(ctx, (uint64_t)ref.n * 2, &bo) == DK_OK, "%s", dk_last_error(ctx));
    free(host);
    {
        dk_tensor tl = dk_tensor_nhwc(bl, 0, DK_F32, n, c, h, w);
        dk_tensor to = dk_tensor_nhwc(bo, 0, DK_F16, n, 3, 8 * h, 8 * w);
        dk_status st = dk_taesd_decode_tensor(tae, &tl, &to);
        CHECK(st == DK_OK, "decode_tensor: %s", dk_last_error(ctx));
        h16 = (uint16_t *)malloc((size_t)ref.n * 2);
        host = (float *)malloc((size_t)ref.n * sizeof(float));
        CHECK(dk_buffer_download(ctx, bo, 0, h16, (uint64_t)ref.n * 2) == DK_OK, "%s", dk_last_error(ctx));
        for (i = 0; i < ref.n; i++) { /* NHWC f16 -> NCHW f32 */
            int64_t b = i / (3 * 64 * h * w), r = i % (3 * 64 * h * w), ch = r / (64 * h * w), p = r % (64 * h * w);
            host[i] = dk_f16_to_f32(h16[(b * 64 * h * w + p) * 3 + ch]);
        }
        err = range_err(host, ref.d, ref.n);
        printf("  decode_tensor: latents NHWC f32 -> image NHWC f16, f32 decoder: max err / range %.3g\n", err);
        CHECK(err <= 1e-3, "decode_tensor error %.3g", err);
        free(h16);
        free(host);
    }
    n = img.shape[0]; h = img.shape[2]; w = img.shape[3];
    CHECK(dk_buffer_create(ctx, (uint64_t)img.n * 4, &bi) == DK_OK, "%s", dk_last_error(ctx));
    CHECK(dk_buffer_upload(ctx, bi, 0, img.d, (uint64_t)img.n * 4) == DK_OK, "%s", dk_last_error(ctx));
    CHECK(dk_buffer_create(ctx, (uint64_t)zref.n * 4, &bz) == DK_OK, "%s", dk_last_error(ctx));
    {
        dk_tensor ti = dk_tensor_nchw(bi, 0, DK_F32, n, 3, h, w);
        dk_tensor tz = dk_tensor_nhwc(bz, 0, DK_F32, n, 32, h / 8, w / 8);
        dk_status st = dk_taesd_encode_tensor(tae, &ti, &tz);
        int64_t lh = h / 8, lw = w / 8;
        CHECK(st == DK_OK, "encode_tensor: %s", dk_last_error(ctx));
        host = (float *)malloc((size_t)zref.n * sizeof(float));
        float *nchw = (float *)malloc((size_t)zref.n * sizeof(float));
        CHECK(dk_buffer_download(ctx, bz, 0, host, (uint64_t)zref.n * 4) == DK_OK, "%s", dk_last_error(ctx));
        for (i = 0; i < zref.n; i++) {
            int64_t b = i / (32 * lh * lw), r = i % (32 * lh * lw), ch = r / (lh * lw), p = r % (lh * lw);
            nchw[i] = host[(b * lh * lw + p) * 32 + ch];
        }
        err = range_err(nchw, zref.d, zref.n);
        printf("  encode_tensor: image NCHW f32 -> latents NHWC f32: max err / range %.3g\n", err);
        CHECK(err <= 1e-4, "encode_tensor error %.3g", err);
        free(host);
        free(nchw);
    }
    dk_buffer_destroy(ctx, bl);
    dk_buffer_destroy(ctx, bo);
    dk_buffer_destroy(ctx, bi);
    dk_buffer_destroy(ctx, bz);
    dk_taesd_destroy(tae);
    dk_npy_free(lat.d); dk_npy_free(ref.d); dk_npy_free(img.d); dk_npy_free(zref.d);
}

static void *read_all(const char *path, uint64_t *size) {
    FILE *f = fopen(path, "rb");
    void *b;
    long n;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    b = malloc((size_t)n);
    if (fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); b = NULL; }
    fclose(f);
    *size = (uint64_t)n;
    return b;
}

static void test_oracle(const char *dir, int size, const char *models) {
    static const dk_dtype dts[3] = {DK_F32, DK_F16, DK_BF16};
    char pe[1024], pd[1024], name[64];
    int lat = size / 8, m, k;
    arr img;
    printf("oracle: every member, %dx%d images / %dx%d latents, f32 f16 bf16 vs PyTorch\n", size, size, lat, lat);
    snprintf(name, sizeof name, "image%d.npy", size);
    img = load(dir, name);
    for (m = 0; m < 5; m++) {
        arr z, zr, xr;
        /* taesdxl and taef1 share their shapes with taesd and taesd3: named explicitly */
        int named = m == 1 || m == 3;
        snprintf(name, sizeof name, "%s_encoder.safetensors", members[m]);
        path_of(pe, sizeof pe, dir, name);
        snprintf(name, sizeof name, "%s_decoder.safetensors", members[m]);
        path_of(pd, sizeof pd, dir, name);
        snprintf(name, sizeof name, "latent%d_%d.npy", member_channels[m], lat);
        z = load(dir, name);
        snprintf(name, sizeof name, "%s_enc%d.npy", members[m], size);
        zr = load(dir, name);
        snprintf(name, sizeof name, "%s_dec%d.npy", members[m], lat);
        xr = load(dir, name);
        for (k = 0; k < 3; k++) {
            dk_taesd *tae = create_files(pe, pd, dts[k], named ? member_enum[m] : DK_TAESD_AUTO);
            if (!tae) continue;
            if (k == 0) check_props(tae, members[m], "sequential");
            check_dir(tae, 1, &img, &zr, members[m], dts[k], tol_for(dts[k]));
            check_dir(tae, 0, &z, &xr, members[m], dts[k], tol_for(dts[k]));
            dk_taesd_destroy(tae);
        }
        dk_npy_free(z.d); dk_npy_free(zr.d); dk_npy_free(xr.d);
    }
    /* the real TAEF2 weights (F16 file) */
    {
        arr z, zr, xr;
        path_of(pe, sizeof pe, models, "taef2_encoder.safetensors");
        path_of(pd, sizeof pd, models, "taef2_decoder.safetensors");
        snprintf(name, sizeof name, "real_lat%d.npy", lat);
        z = load(dir, name);
        snprintf(name, sizeof name, "real_enc%d.npy", size);
        zr = load(dir, name);
        snprintf(name, sizeof name, "real_dec%d.npy", lat);
        xr = load(dir, name);
        for (k = 0; k < 3; k++) {
            dk_taesd *tae = create_files(pe, pd, dts[k], DK_TAESD_AUTO);
            if (!tae) continue;
            if (k == 0) check_props(tae, "taef2", "sequential");
            check_dir(tae, 1, &img, &zr, "taef2 (real weights)", dts[k], tol_for(dts[k]));
            check_dir(tae, 0, &z, &xr, "taef2 (real weights)", dts[k], tol_for(dts[k]));
            dk_taesd_destroy(tae);
        }
        if (size == 64) { /* the same from memory */
            uint64_t ne = 0, nd = 0;
            void *be = read_all(pe, &ne), *bd = read_all(pd, &nd);
            dk_taesd *tae = NULL;
            CHECK(be && bd, "cannot read the real weights");
            CHECK(dk_taesd_create_from_memory(ctx, be, ne, bd, nd, NULL, &tae) == DK_OK, "%s", dk_last_error(ctx));
            free(be);
            free(bd);
            if (tae) {
                check_dir(tae, 1, &img, &zr, "taef2 (from memory)", DK_F32, 1e-4);
                check_dir(tae, 0, &z, &xr, "taef2 (from memory)", DK_F32, 1e-4);
            }
            dk_taesd_destroy(tae);
        }
        dk_npy_free(z.d); dk_npy_free(zr.d); dk_npy_free(xr.d);
    }
    if (size == 64) {
        static const char *const files[3] = {"taesd_diffusers", "taef2_diffusers", "taesd3_comfyui"};
        static const int fm[3] = {0, 4, 2};
        int f;
        puts("namings: one file with both directions, f32");
        for (f = 0; f < 3; f++) {
            dk_taesd *tae = NULL;
            arr z, zr, xr;
            snprintf(name, sizeof name, "%s.safetensors", files[f]);
            path_of(pe, sizeof pe, dir, name);
            CHECK(dk_taesd_create_from_file(ctx, pe, NULL, &tae) == DK_OK, "%s: %s", name, dk_last_error(ctx));
            if (!tae) continue;
            check_props(tae, members[fm[f]], f == 2 ? "comfyui" : "diffusers");
            snprintf(name, sizeof name, "latent%d_8.npy", member_channels[fm[f]]);
            z = load(dir, name);
            snprintf(name, sizeof name, "%s_enc64.npy", members[fm[f]]);
            zr = load(dir, name);
            snprintf(name, sizeof name, "%s_dec8.npy", members[fm[f]]);
            xr = load(dir, name);
            check_dir(tae, 1, &img, &zr, files[f], DK_F32, 1e-4);
            check_dir(tae, 0, &z, &xr, files[f], DK_F32, 1e-4);
            dk_taesd_destroy(tae);
            dk_npy_free(z.d); dk_npy_free(zr.d); dk_npy_free(xr.d);
        }
        {
            dk_taesd *tae;
            arr odd = load(dir, "image_odd.npy"), oref = load(dir, "taesd_enc_odd.npy");
            puts("odd size: 36x44 image -> 5x6 latent");
            path_of(pe, sizeof pe, dir, "taesd_encoder.safetensors");
            tae = create_files(pe, NULL, DK_F32, DK_TAESD_AUTO);
            if (tae) check_dir(tae, 1, &odd, &oref, "taesd 36x44", DK_F32, 1e-4);
            dk_taesd_destroy(tae);
            dk_npy_free(odd.d); dk_npy_free(oref.d);
        }
    }
    test_tensors(dir, size);
    dk_npy_free(img.d);
}

/* ------------------------------------------------------------ errors */

/* Rewrites src into dst without tensor drop (NULL: none) and with tensor
 * reshape (NULL: none) given a shape [n] of zeros. */
static void rewrite(const char *src, const char *dst, const char *drop, const char *reshape, int64_t n) {
    dk_safetensors *f = NULL;
    dk_st_tensor *ts;
    int64_t count, i, k = 0;
    float *zeros = (float *)calloc((size_t)n + 1, sizeof(float));
    CHECK(dk_safetensors_open(src, &f) == DK_OK, "%s", dk_last_error(NULL));
    if (!f) exit(1);
    count = dk_safetensors_count(f);
    ts = (dk_st_tensor *)calloc((size_t)count, sizeof *ts);
    for (i = 0; i < count; i++) {
        dk_st_tensor t;
        CHECK(dk_safetensors_at(f, i, &t) == DK_OK, "at");
        if (drop && !strcmp(t.name, drop)) continue;
        if (reshape && !strcmp(t.name, reshape)) {
            t.dtype = DK_F32;
            t.ndim = 1;
            t.shape[0] = n;
            t.data = zeros;
            t.nbytes = (uint64_t)n * 4;
        }
        ts[k++] = t;
    }
    CHECK(dk_safetensors_write(dst, ts, k) == DK_OK, "write %s: %s", dst, dk_last_error(NULL));
    dk_safetensors_close(f);
    free(ts);
    free(zeros);
}

static void expect(dk_status st, dk_status want, const char *a, const char *b, const char *what) {
    const char *msg = dk_last_error(ctx);
    printf("  %-34s -> %s: %s\n", what, dk_status_name(st), msg);
    CHECK(st == want, "%s: status %s, expected %s", what, dk_status_name(st), dk_status_name(want));
    CHECK(!a || strstr(msg, a), "%s: message lacks '%s'", what, a);
    CHECK(!b || strstr(msg, b), "%s: message lacks '%s'", what, b);
}

static void test_errors(const char *dir) {
    char pe[1024], pd[1024], tmp[1024];
    dk_taesd *tae = NULL;
    dk_taesd_options o;
    float x[4 * 8 * 8] = {0}, y[3 * 64 * 64];
    dk_status st;
    puts("errors:");
    path_of(pe, sizeof pe, dir, "taef2_encoder.safetensors");
    path_of(pd, sizeof pd, dir, "taef2_decoder.safetensors");
    path_of(tmp, sizeof tmp, dir, "taesd_err_tmp.safetensors");

    rewrite(pd, tmp, "4.pool.1.bias", NULL, 0);
    st = dk_taesd_create_from_files(ctx, NULL, tmp, NULL, &tae);
    expect(st, DK_ERR_FORMAT, "'4.pool.1.bias'", "[256]", "missing decoder tensor");
    CHECK(tae == NULL, "out set on failure");

    rewrite(pe, tmp, NULL, "7.conv.2.weight", 10);
    st = dk_taesd_create_from_files(ctx, tmp, NULL, NULL, &tae);
    expect(st, DK_ERR_FORMAT, "'7.conv.2.weight' has shape [10]", "expected [64, 64, 3, 3]", "wrong encoder shape");

    rewrite(pd, tmp, NULL, "1.weight", 5);
    st = dk_taesd_create_from_files(ctx, NULL, tmp, NULL, &tae);
    expect(st, DK_ERR_FORMAT, "'1.weight'", "[64, latent channels", "wrong first conv shape");

    st = dk_taesd_create_from_files(ctx, pd, NULL, NULL, &tae);
    expect(st, DK_ERR_FORMAT, "holds no TAESD encoder", "'0.weight'", "decoder file as the encoder");

    dk_taesd_options_init(&o);
    o.model = DK_TAESD_SD3;
    st = dk_taesd_create_from_files(ctx, pe, pd, &o, &tae);
    expect(st, DK_ERR_FORMAT, "32 latent channels with pool", "taesd3", "named model vs weights");

    path_of(tmp, sizeof tmp, dir, "taesd_encoder.safetensors");
    st = dk_taesd_create_from_files(ctx, tmp, pd, NULL, &tae);
    expect(st, DK_ERR_FORMAT, "4 latent channels", "32", "encoder and decoder disagree");

    st = dk_taesd_create_from_file(ctx, "/nonexistent/taesd.safetensors", NULL, &tae);
    expect(st, DK_ERR_IO, "/nonexistent/taesd.safetensors", NULL, "no such file");

    o.model = DK_TAESD_AUTO;
    o.dtype = (dk_dtype)7;
    st = dk_taesd_create_from_files(ctx, pe, pd, &o, &tae);
    expect(st, DK_ERR_INVALID_ARGUMENT, "options.dtype", NULL, "bad dtype");

    dk_taesd_options_init(&o);
    st = dk_taesd_create_random(ctx, 1, &o, &tae);
    expect(st, DK_ERR_INVALID_ARGUMENT, "options.model", NULL, "random without a model");

    /* a decoder-only object asked to encode, and bad sizes */
    path_of(tmp, sizeof tmp, dir, "taesd_decoder.safetensors");
    CHECK(dk_taesd_create_from_files(ctx, NULL, tmp, NULL, &tae) == DK_OK, "%s", dk_last_error(ctx));
    if (tae) {
        dk_buffer *b = NULL;
        dk_tensor tl, to;
        st = dk_taesd_encode_f32(tae, y, 1, 64, 64, x);
        expect(st, DK_ERR_INVALID_ARGUMENT, "no encoder weights", NULL, "encode without an encoder");
        st = dk_taesd_decode_f32(tae, x, 1, 0, 8, y);
        expect(st, DK_ERR_INVALID_ARGUMENT, "h 0", NULL, "zero height");
        st = dk_taesd_decode_f32(tae, NULL, 1, 8, 8, y);
        expect(st, DK_ERR_INVALID_ARGUMENT, "latents is NULL", NULL, "NULL latents");
        CHECK(dk_buffer_create(ctx, 4 * 4 * 64 * 3 * 64, &b) == DK_OK, "%s", dk_last_error(ctx));
        tl = dk_tensor_nhwc(b, 0, DK_F32, 1, 16, 8, 8);
        to = dk_tensor_nhwc(b, 0, DK_F32, 1, 3, 64, 64);
        st = dk_taesd_decode_tensor(tae, &tl, &to);
        expect(st, DK_ERR_INVALID_ARGUMENT, "latents has shape [1, 16, 8, 8]", "expected [-1, 4, -1, -1]",
               "wrong latent channels");
        tl = dk_tensor_nhwc(b, 0, DK_F32, 1, 4, 8, 8);
        to = dk_tensor_nhwc(b, 0, DK_F32, 1, 3, 32, 64);
        st = dk_taesd_decode_tensor(tae, &tl, &to);
        expect(st, DK_ERR_INVALID_ARGUMENT, "out has shape [1, 3, 32, 64]", "expected [1, 3, 64, 64]",
               "wrong output size");
        dk_buffer_destroy(ctx, b);
        dk_taesd_destroy(tae);
    }
}

/* ------------------------------------------------------------ random */

static void test_random(void) {
    int m, d;
    puts("random: create_random, deterministic and finite, both directions");
    for (m = 0; m < 5; m++) {
        dk_taesd_options o;
        dk_taesd *a = NULL, *b = NULL;
        float img[2 * 3 * 32 * 32], za[2 * 32 * 16], zb[2 * 32 * 16], xa[2 * 3 * 32 * 32], xb[2 * 3 * 32 * 32];
        int64_t nz = 2 * member_channels[m] * 16, i, bad = 0;
        for (i = 0; i < 2 * 3 * 32 * 32; i++) img[i] = (float)((i * 37 % 101) / 100.0);
        dk_taesd_options_init(&o);
        o.model = member_enum[m];
        CHECK(dk_taesd_create_random(ctx, 42, &o, &a) == DK_OK, "%s", dk_last_error(ctx));
        CHECK(dk_taesd_create_random(ctx, 42, &o, &b) == DK_OK, "%s", dk_last_error(ctx));
        if (!a || !b) continue;
        for (d = 0; d < 2; d++) {
            dk_taesd *t = d ? b : a;
            CHECK(dk_taesd_encode_f32(t, img, 2, 32, 32, d ? zb : za) == DK_OK, "%s", dk_last_error(ctx));
            CHECK(dk_taesd_decode_f32(t, d ? zb : za, 2, 4, 4, d ? xb : xa) == DK_OK, "%s", dk_last_error(ctx));
        }
        for (i = 0; i < nz; i++) bad += !isfinite(za[i]) || za[i] != zb[i];
        for (i = 0; i < 2 * 3 * 32 * 32; i++) bad += !isfinite(xa[i]) || xa[i] != xb[i];
        printf("  %-8s %lld values differ or are not finite\n", members[m], (long long)bad);
        CHECK(bad == 0, "%s: random weights not deterministic/finite", members[m]);
        dk_taesd_destroy(a);
        dk_taesd_destroy(b);
    }
}

/* ------------------------------------------------------------ round trip */

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* PSNR of clamp(out, 0, 1) against img (n values in [0, 1]). */
static double psnr_of(const float *out, const float *img, int64_t n) {
    double se = 0.0;
    int64_t i;
    for (i = 0; i < n; i++) {
        double v = out[i] < 0 ? 0 : out[i] > 1 ? 1 : out[i], d = v - img[i];
        if (!isfinite(out[i])) d = 1.0;
        se += d * d;
    }
    return 10.0 * log10(1.0 / (se / (double)n));
}

static void test_roundtrip(const char *png, int size, const char *models, double lo, double hi) {
    static const dk_dtype dts[2] = {DK_F32, DK_F16};
    int w, h, ch, x, y, c, f, k;
    unsigned char *px = stbi_load(png, &w, &h, &ch, 3);
    char pe[1024], pd[1024];
    float *img, *lat, *out;
    double psnr[2] = {0, 0};
    int64_t n = (int64_t)3 * size * size;
    CHECK(px != NULL, "cannot read %s", png);
    if (!px) return;
    CHECK(size >= 8 && w % size == 0 && h % size == 0 && w / size == h / size, "%s is %dx%d, not a multiple of %d",
          png, w, h, size);
    f = w / size;
    img = (float *)malloc((size_t)n * sizeof(float));
    lat = (float *)malloc((size_t)32 * (size / 8) * (size / 8) * sizeof(float));
    /* box-filter downscale by f, to NCHW floats in [0, 1] */
    for (c = 0; c < 3; c++)
        for (y = 0; y < size; y++)
            for (x = 0; x < size; x++) {
                double s = 0;
                int a, b;
                for (a = 0; a < f; a++)
                    for (b = 0; b < f; b++) s += px[((size_t)(y * f + a) * w + (x * f + b)) * 3 + c];
                img[((int64_t)c * size + y) * size + x] = (float)(s / (f * f * 255.0));
            }
    stbi_image_free(px);
    path_of(pe, sizeof pe, models, "taef2_encoder.safetensors");
    path_of(pd, sizeof pd, models, "taef2_decoder.safetensors");
    for (k = 0; k < 2; k++) {
        dk_taesd *tae = create_files(pe, pd, dts[k], DK_TAESD_AUTO);
        double t0;
        if (!tae) continue;
        out = poisoned(n);
        t0 = now_ms();
        CHECK(dk_taesd_encode_f32(tae, img, 1, size, size, lat) == DK_OK, "%s", dk_last_error(ctx));
        CHECK(dk_taesd_decode_f32(tae, lat, 1, size / 8, size / 8, out) == DK_OK, "%s", dk_last_error(ctx));
        psnr[k] = psnr_of(out, img, n);
        printf("roundtrip: %s downscaled %dx to %dx%d, TAEF2 %s encode + decode in %.0f ms: PSNR %.2f dB "
               "(expected %.1f..%.1f)\n", png, f, size, size, dk_dtype_name(dts[k]), now_ms() - t0, psnr[k], lo, hi);
        CHECK(psnr[k] >= lo && psnr[k] <= hi, "%s round-trip PSNR %.2f dB outside [%.1f, %.1f]",
              dk_dtype_name(dts[k]), psnr[k], lo, hi);
        free(out);
        dk_taesd_destroy(tae);
    }
    CHECK(fabs(psnr[0] - psnr[1]) < 0.2, "f16 PSNR %.2f vs f32 %.2f", psnr[1], psnr[0]);
    free(img);
    free(lat);
}

static void test_time(const char *models, int size) {
    char pe[1024], pd[1024];
    int lat = size / 8, r;
    int64_t nz = (int64_t)32 * lat * lat, i;
    float *z = (float *)malloc((size_t)nz * sizeof(float)), *out = (float *)malloc((size_t)3 * size * size * 4);
    dk_taesd *tae;
    (void)pe;
    path_of(pd, sizeof pd, models, "taef2_decoder.safetensors");
    for (i = 0; i < nz; i++) z[i] = (float)sin((double)i * 0.37) * 2.0f;
    tae = create_files(NULL, pd, DK_F32, DK_TAESD_AUTO);
    if (tae) {
        for (r = 0; r < 2; r++) { /* the first run allocates the buffers */
            double t0 = now_ms();
            clock_t c0 = clock();
            CHECK(dk_taesd_decode_f32(tae, z, 1, lat, lat, out) == DK_OK, "%s", dk_last_error(ctx));
            printf("time: TAEF2 decode %dx%dx32 -> %dx%d, f32, %s: %.1f ms wall, %.1f s process CPU time%s\n", lat,
                   lat, size, size, dk_context_describe(ctx), now_ms() - t0, (double)(clock() - c0) / CLOCKS_PER_SEC,
                   r ? "" : " (first call: allocates)");
        }
        dk_taesd_destroy(tae);
    }
    free(z);
    free(out);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (dk_context_create(NULL, &ctx) != DK_OK) {
        printf("context: %s\n", dk_last_error(NULL));
        return 1;
    }
    printf("backend: %s\n", dk_context_describe(ctx));
    if (!strcmp(mode, "oracle") && argc > 4) test_oracle(argv[2], atoi(argv[3]), argv[4]);
    else if (!strcmp(mode, "errors") && argc > 2) test_errors(argv[2]);
    else if (!strcmp(mode, "random")) test_random();
    else if (!strcmp(mode, "roundtrip") && argc > 6)
        test_roundtrip(argv[2], atoi(argv[3]), argv[4], atof(argv[5]), atof(argv[6]));
    else if (!strcmp(mode, "time") && argc > 3) test_time(argv[2], atoi(argv[3]));
    else {
        printf("usage: test_taesd oracle DIR SIZE MODELS | errors DIR | random | roundtrip PNG SIZE MODELS MIN_DB MAX_DB | "
               "time MODELS SIZE\n");
        failures++;
    }
    dk_context_destroy(ctx);
    printf("%s\n", failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
}
