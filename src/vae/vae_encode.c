/* AutoencoderKL encoder: the forward pass on the executor's primitives
 * (vae_exec.c), untiled from a memory plan or banded as the decoder (the
 * choice is dk__vae_choose's); the posterior's mean or a seeded sample, scaled
 * for the diffusion model; the fp16 overflow fallback (include/difkern/vae.h). */
#include "vae_internal.h"
#include "../validate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const vaee_stage_names[DK_VAE_NUM_STAGES] = {
    "conv_in", "down_blocks.0", "down_blocks.1", "down_blocks.2", "down_blocks.3", "mid_block", "conv_out"};

static uint64_t vaee_mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

float dk_vae_noise(uint64_t seed, uint64_t i) {
    const uint64_t g = 0x9e3779b97f4a7c15ull;
    uint64_t a = vaee_mix(seed + (2 * i + 1) * g), b = vaee_mix(seed + (2 * i + 2) * g);
    double u1 = (double)((a >> 11) + 1) * (1.0 / 9007199254740992.0);
    double u2 = (double)(b >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* One sample: image [3, H, W] host floats (or the device tensor dev, the
 * sample's view) to the moments [2C, H/8, W/8] (host floats, unscaled), or,
 * where e->out_dev is set, to the latents there: the last conv computes the
 * mean's C channels only, with the bias minus the shift (vae->mean_bias) and
 * the scaling as its output scale, so (mean - shift) * scaling leaves the
 * conv's epilogue.  *in_bad: the device image holds NaN/Inf (tested when
 * test_in). */
static dk_status vaee_forward(dk__vae_exec *e, const dk__vae_run *r, const float *image, const dk_tensor *dev,
                              int32_t hh, int32_t ww, float *moments, int test_in, int *in_bad) {
    const dk__vae_arch *a = &r->vae->arch;
    dk__vae_conv_args c;
    dk__vae_act x;
    dk_tensor mean_bias;
    int32_t i, j;
    e->nacts = 0;
    if (dev) x = dk__vae_input_dev(e, dev, 3, hh, ww, test_in ? in_bad : NULL);
    else x = dk__vae_input(e, image, 3, hh, ww, 1.0f, 0.0f);
    if (dev && test_in && *in_bad && e->st == DK_OK)
        e->st = dk__fail(r->vae->ctx, DK_ERR_NON_FINITE, "the image holds NaN or Inf; nothing was encoded "
                                                         "(options->allow_nonfinite encodes it anyway)");
    c = dk__vae_conv_make(x, -1, -1, a->e_in_w, a->e_in_b, 3, e->s, 1);
    x = dk__vae_conv(e, &c);
    dk__vae_stage(e, r, 0);
    for (i = 0; i < 4; i++) {
        for (j = 0; j < 2; j++) x = dk__vae_resnet_fwd(e, x, &a->down[i][j]);
        if (i < 3) {
            /* Input and output at scale s: the bias is stored pre-scaled. */
            c = dk__vae_conv_make(x, -1, -1, a->dsc_w[i], a->dsc_b[i], 3, 1.0f, 1);
            c.down = 1;
            x = dk__vae_conv(e, &c);
        }
        dk__vae_stage(e, r, 1 + i);
    }
    x = dk__vae_resnet_fwd(e, x, &a->e_mid[0]);
    x = dk__vae_attention(e, x, &a->e_attn);
    x = dk__vae_resnet_fwd(e, x, &a->e_mid[1]);
    dk__vae_stage(e, r, 5);
    c = dk__vae_conv_make(x, a->e_no_g, a->e_no_b, a->e_out_w, a->e_out_b, 3, 1.0f, 1);
    if (a->q_w >= 0) {
        x = dk__vae_conv(e, &c);
        c = dk__vae_conv_make(x, -1, -1, a->q_w, a->q_b, 1, 1.0f, 1);
    }
    if (e->out_dev) {
        const int64_t lc = a->lc;
        mean_bias = dk_tensor_contiguous(r->vae->mean_bias, 0, DK_F32, 1, &lc);
        c.cout = a->lc;
        c.bias_t = &mean_bias;
        c.out_scale = r->vae->scaling;
    }
    x = dk__vae_conv(e, &c);
    dk__vae_output(e, x, moments);
    if (e->st == DK_OK && !e->dry) e->st = dk_sync(r->vae->ctx);
    dk__vae_stage(e, r, 6);
    return e->st;
}

/* A PLAN run of the encode of an 8h x 8w image (dk__vae_dry_fn). */
static uint64_t vaee_dry(dk_vae *vae, int32_t banded, int32_t band, int32_t h, int32_t w, uint64_t *budget) {
    dk__vae_exec e;
    dk__vae_run r;
    int bad = 0;
    uint64_t n;
    r.vae = vae;
    r.t0 = 0.0;
    r.stage_names = vaee_stage_names;
    dk__vae_exec_init(&e, vae, &vae->w, 1, banded, band, h);
    vaee_forward(&e, &r, NULL, NULL, 8 * h, 8 * w, NULL, 0, &bad);
    n = e.st == DK_OK ? dk__vae_exec_plan_bytes(&e) : UINT64_MAX;
    *budget = e.st == DK_OK ? dk__vae_exec_budget_bytes(&e) : UINT64_MAX;
    dk__vae_exec_free(&e);
    return n;
}

static dk_status vaee_choose(dk_vae *vae, const char *fn, int32_t hh, int32_t ww, dk__vae_mode *m) {
    char what[64];
    snprintf(what, sizeof what, "encoding a %dx%d image", (int)hh, (int)ww);
    return dk__vae_choose(vae, fn, what, hh / 8, ww / 8, vaee_dry, m);
}

static dk_status vaee_check(dk_vae *vae, const char *fn, const void *image, int32_t batch, int32_t hh, int32_t ww,
                            const void *out) {
    if (!vae) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "%s: vae must not be NULL", fn);
    if (!(vae->arch.parts & DK__VAE_ENC))
        return dk__fail(vae->ctx, DK_ERR_UNSUPPORTED,
                        "%s: the weights hold no encoder (no 'encoder.down_blocks.0.resnets.0.conv1.weight' or "
                        "'encoder.down.0.block.0.conv1.weight'): this VAE can only decode", fn);
    if (!image) return dk__fail(vae->ctx, DK_ERR_INVALID_ARGUMENT, "%s: image must not be NULL", fn);
    if (!out) return dk__fail(vae->ctx, DK_ERR_INVALID_ARGUMENT, "%s: the output pointer must not be NULL", fn);
    if (batch < 1 || hh < 8 || ww < 8 || hh % 8 || ww % 8)
        return dk__fail(vae->ctx, DK_ERR_INVALID_ARGUMENT,
                        "%s: batch %d, image %dx%d: the batch must be >= 1 and the image [batch, 3, H, W] have H and W "
                        "multiples of 8 (>= 8)", fn, (int)batch, (int)hh, (int)ww);
    if ((uint64_t)hh * (uint64_t)ww > (UINT64_C(1) << 30) ||
        (uint64_t)batch > (uint64_t)(SIZE_MAX / 2) / ((uint64_t)hh * ww * 3 * sizeof(float)))
        return dk__fail(vae->ctx, DK_ERR_INVALID_ARGUMENT, "%s: image %dx%d (batch %d) is too large", fn, (int)hh, (int)ww,
                        (int)batch);
    return DK_OK;
}

/* The moments of one sample with weights ws into m, or (out set: the sample's
 * view of the latents tensor) the latents into out; *bad: they hold NaN/Inf. */
static dk_status vaee_run_one(dk_vae *vae, const dk__vae_weights *ws, const dk__vae_mode *md, const float *image,
                              const dk_tensor *dev, int32_t hh, int32_t ww, float *m, const dk_tensor *out, int *bad,
                              const dk__vae_run *r) {
    dk__vae_exec e;
    int in_bad = 0;
    int test_in = dev && !vae->opt.allow_nonfinite;
    dk_status st;
    dk__vae_exec_init(&e, vae, ws, md->banded ? 0 : 1, md->banded, md->band_rows, hh / 8);
    if (out) { /* the latents' NaN/Inf test on the device (dk__vae_output) */
        e.out_dev = out;
        e.check_out = 1;
    }
    if (!md->banded) {
        /* Plan, then run in the arena kept by vae. */
        vaee_forward(&e, r, NULL, dev, hh, ww, NULL, test_in, &in_bad);
        dk__vae_exec_realize(&e);
    }
    st = e.st == DK_OK ? vaee_forward(&e, r, image, dev, hh, ww, m, test_in, &in_bad) : e.st;
    *bad = st == DK_OK && (out ? e.out_bad : !dk__vae_finite(m, (int64_t)2 * vae->arch.lc * (hh / 8) * (ww / 8)));
    dk__vae_exec_free(&e);
    return st;
}

/* vae->mean_bias: the bias of the encoder's last conv (quant_conv, else
 * conv_out), its first C (mean) channels minus the shift, as f32 (made once:
 * the bias converted on the device, C floats read back and written again). */
static dk_status vaee_mean_bias(dk_vae *vae) {
    const dk__vae_arch *a = &vae->arch;
    const int32_t b = a->q_w >= 0 ? a->q_b : a->e_out_b;
    const int64_t lc = a->lc;
    float v[64];
    dk_tensor t;
    int64_t i;
    dk_status st;
    if (vae->mean_bias) return DK_OK;
    if (lc > 64) return dk__fail(vae->ctx, DK_ERR_INTERNAL, "vae: %lld latent channels", (long long)lc);
    st = dk_buffer_create(vae->ctx, (uint64_t)lc * sizeof(float), &vae->mean_bias);
    if (st != DK_OK) return st;
    t = dk_tensor_contiguous(vae->mean_bias, 0, DK_F32, 1, &lc);
    for (i = 0; i < lc; i++) v[i] = 0.0f;
    if (b >= 0) {
        dk_tensor tb = dk__vae_weight(&vae->w, a, b);
        tb.shape[0] = lc;
        st = dk_convert(vae->ctx, &tb, &t);
        if (st == DK_OK) st = dk_buffer_download(vae->ctx, vae->mean_bias, 0, v, (uint64_t)lc * sizeof(float));
    }
    for (i = 0; i < lc; i++) v[i] -= vae->shift;
    if (st == DK_OK) st = dk_buffer_upload(vae->ctx, vae->mean_bias, 0, v, (uint64_t)lc * sizeof(float));
    if (st != DK_OK) {
        dk_buffer_destroy(vae->ctx, vae->mean_bias);
        vae->mean_bias = NULL;
    }
    return st;
}

/* Encodes batch images (host floats, or the device tensor dev) into latents
 * (host floats [batch, C, H/8, W/8]), or, the mean only (sample 0), into the
 * device tensor lat_dev (latents NULL). */
static dk_status vaee_encode(dk_vae *vae, const char *fn, const float *image, const dk_tensor *dev, int32_t batch,
                             int32_t hh, int32_t ww, int sample, uint64_t seed, float *latents,
                             const dk_tensor *lat_dev, dk_vae_info *info, double t0) {
    const int32_t lc = vae->arch.lc;
    const int64_t per_in = (int64_t)3 * hh * ww, hw = (int64_t)(hh / 8) * (ww / 8), per_out = lc * hw;
    dk__vae_weights wide;
    dk_vae_info inf;
    dk__vae_run r;
    dk__vae_mode md;
    uint64_t cur = 0;
    float *m;
    int32_t b, nbad = 0, bad_first = -1;
    int bad = 0;
    int64_t first_bad, k;
    dk_status st;
    memset(&inf, 0, sizeof inf);
    memset(&wide, 0, sizeof wide);
    r.vae = vae;
    r.t0 = t0;
    r.stage_names = vaee_stage_names;
    if (image && !vae->opt.allow_nonfinite && (first_bad = dk__vae_first_nonfinite(image, batch * per_in)) >= 0) {
        int64_t i = first_bad % per_in;
        return dk__fail(vae->ctx, DK_ERR_NON_FINITE,
                        "%s: the image holds NaN or Inf (first: %g at [%lld, %lld, %lld, %lld]); nothing was encoded "
                        "(options->allow_nonfinite encodes it anyway)",
                        fn, (double)image[first_bad], (long long)(first_bad / per_in), (long long)(i / ((int64_t)hh * ww)),
                        (long long)(i / ww % hh), (long long)(i % ww));
    }
    st = vaee_choose(vae, fn, hh, ww, &md);
    if (st != DK_OK) return st;
    if (md.banded) { /* bounded memory: drop the untiled arena of earlier runs */
        dk_buffer_destroy(vae->ctx, vae->arena);
        vae->arena = NULL;
    }
    if (lat_dev) {
        st = vaee_mean_bias(vae);
        if (st != DK_OK) return st;
        m = NULL;
    } else if (!(m = (float *)malloc((size_t)(2 * per_out) * sizeof(float)))) {
        return dk__fail(vae->ctx, DK_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    }
    dk_memory_reset_peak(vae->ctx);
    for (b = 0; b < batch && st == DK_OK; b++) {
        dk_tensor view, lview;
        const dk_tensor *dv = NULL, *lt = NULL;
        if (dev) { /* the sample's views */
            view = dk__vae_sample_view(dev, b);
            dv = &view;
        }
        if (lat_dev) {
            lview = dk__vae_sample_view(lat_dev, b);
            lt = &lview;
        }
        st = vaee_run_one(vae, &vae->w, &md, image ? image + b * per_in : NULL, dv, hh, ww, m, lt, &bad, &r);
        if (st == DK_OK && bad && vae->dtype == DK_F16 && vae->opt.fp16_fallback) {
            /* fp16 overflowed despite the activation scale: redo this sample in fp32. */
            if (!wide.buf) st = dk__vae_weights_widen(vae, &wide);
            if (st == DK_OK)
                st = vaee_run_one(vae, &wide, &md, image ? image + b * per_in : NULL, dv, hh, ww, m, lt, &bad, &r);
            inf.fp16_fallback = 1;
        }
        if (st == DK_OK && bad) {
            if (bad_first < 0) bad_first = b;
            nbad++;
        }
        for (k = 0; k < per_out && st == DK_OK && m; k++) {
            float v = m[k];
            if (sample) {
                float lv = m[per_out + k];
                lv = lv < -30.0f ? -30.0f : lv > 20.0f ? 20.0f : lv; /* NaN stays NaN */
                v += expf(0.5f * lv) * dk_vae_noise(seed, (uint64_t)(b * per_out + k));
            }
            latents[b * per_out + k] = (v - vae->shift) * vae->scaling;
        }
    }
    dk__vae_weights_free(vae->ctx, &wide);
    free(m);
    if (st != DK_OK) return st;
    inf.banded = md.banded;
    inf.band_rows = md.band_rows;
    inf.plan_device_bytes = md.plan_bytes;
    inf.weight_device_bytes = dk__vae_weight_bytes(vae);
    inf.scratch_reserve_bytes = md.budget_bytes - md.plan_bytes;
    dk_memory_usage(vae->ctx, &cur, &inf.peak_device_bytes);
    inf.elapsed_ms = dk__now_ms() - t0;
    if (info) *info = inf;
    if (nbad > 0 && !vae->opt.allow_nonfinite)
        return dk__fail(vae->ctx, DK_ERR_NON_FINITE,
                        "%s: the encoded latents of sample %d%s hold NaN or Inf (in %s; an image too large for the "
                        "encoder, or NaN/Inf weights)",
                        fn, (int)bad_first, nbad > 1 ? " (and others)" : "",
                        vae->dtype == DK_F16 && vae->opt.fp16_fallback ? "f16 and redone in f32"
                                                                       : dk_dtype_name(vae->dtype));
    return DK_OK;
}

dk_status dk_vae_encode_f32(dk_vae *vae, const float *image, int32_t batch, int32_t height, int32_t width,
                            float *latents, dk_vae_info *info) {
    static const char fn[] = "dk_vae_encode_f32";
    double t0 = dk__now_ms();
    dk_status st = vaee_check(vae, fn, image, batch, height, width, latents);
    if (st != DK_OK) return st;
    return vaee_encode(vae, fn, image, NULL, batch, height, width, 0, 0, latents, NULL, info, t0);
}

dk_status dk_vae_encode_sample_f32(dk_vae *vae, const float *image, int32_t batch, int32_t height, int32_t width,
                                   uint64_t seed, float *latents, dk_vae_info *info) {
    static const char fn[] = "dk_vae_encode_sample_f32";
    double t0 = dk__now_ms();
    dk_status st = vaee_check(vae, fn, image, batch, height, width, latents);
    if (st != DK_OK) return st;
    return vaee_encode(vae, fn, image, NULL, batch, height, width, 1, seed, latents, NULL, info, t0);
}

/* The byte range [*lo, *hi) a 4-D view covers. */
static void vaee_span(const dk_tensor *t, uint64_t *lo, uint64_t *hi) {
    int64_t last = 0;
    int32_t i;
    for (i = 0; i < 4; i++) last += (t->shape[i] - 1) * t->strides[i];
    *lo = t->offset;
    *hi = t->offset + (uint64_t)(last + 1) * dk_dtype_size(t->dtype);
}

dk_status dk_vae_encode_tensor(dk_vae *vae, const dk_tensor *image, const dk_tensor *latents, int32_t sample,
                               uint64_t seed, dk_vae_info *info) {
    static const char fn[] = "dk_vae_encode_tensor";
    double t0 = dk__now_ms();
    int32_t batch, hh, ww, lc;
    int64_t n;
    uint64_t i0, i1, l0, l1;
    float *z;
    dk_buffer *tmp = NULL;
    dk_status st;
    if (!vae) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "%s: vae must not be NULL", fn);
    st = dk__validate_tensor(vae->ctx, fn, "image", image);
    if (st == DK_OK) st = dk__validate_tensor(vae->ctx, fn, "latents", latents);
    if (st != DK_OK) return st;
    lc = vae->arch.lc;
    if (image->ndim != 4 || latents->ndim != 4 || image->shape[1] != 3 || latents->shape[0] != image->shape[0] ||
        latents->shape[1] != lc || image->shape[2] != 8 * latents->shape[2] || image->shape[3] != 8 * latents->shape[3] ||
        image->shape[0] > INT32_MAX || image->shape[2] > INT32_MAX || image->shape[3] > INT32_MAX)
        return dk__fail(vae->ctx, DK_ERR_INVALID_ARGUMENT,
                        "%s: image must be [batch, 3, H, W] and latents [batch, %d, H/8, W/8] (got %d-D [%lld, %lld, "
                        "%lld, %lld] and %d-D [%lld, %lld, %lld, %lld])",
                        fn, (int)lc, (int)image->ndim, (long long)image->shape[0], (long long)image->shape[1],
                        (long long)image->shape[2], (long long)image->shape[3], (int)latents->ndim,
                        (long long)latents->shape[0], (long long)latents->shape[1], (long long)latents->shape[2],
                        (long long)latents->shape[3]);
    vaee_span(image, &i0, &i1);
    vaee_span(latents, &l0, &l1);
    if (image->buffer == latents->buffer && i0 < l1 && l0 < i1)
        return dk__fail(vae->ctx, DK_ERR_INVALID_ARGUMENT, "%s: latents (bytes %llu..%llu) overlap image (bytes %llu..%llu)",
                        fn, (unsigned long long)l0, (unsigned long long)(l1 - 1), (unsigned long long)i0,
                        (unsigned long long)(i1 - 1));
    batch = (int32_t)image->shape[0];
    hh = (int32_t)image->shape[2];
    ww = (int32_t)image->shape[3];
    st = vaee_check(vae, fn, image, batch, hh, ww, latents);
    if (st != DK_OK) return st;
    if (!sample) /* the mean: (mean - shift) * scaling straight from the last conv into latents (each
                  * sample's forward pass ends with a dk_sync) */
        return vaee_encode(vae, fn, NULL, image, batch, hh, ww, 0, 0, NULL, latents, info, t0);
    /* a sample: the noise is drawn on the host (dk_vae_noise), as for host images */
    n = (int64_t)batch * lc * (hh / 8) * (ww / 8);
    z = (float *)malloc((size_t)n * sizeof(float));
    if (!z) return dk__fail(vae->ctx, DK_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    st = vaee_encode(vae, fn, NULL, image, batch, hh, ww, 1, seed, z, NULL, info, t0);
    if (st == DK_OK || st == DK_ERR_NON_FINITE) {
        dk_status s2 = dk_buffer_create(vae->ctx, (uint64_t)n * sizeof(float), &tmp);
        if (s2 == DK_OK) s2 = dk_buffer_upload(vae->ctx, tmp, 0, z, (uint64_t)n * sizeof(float));
        if (s2 == DK_OK) {
            dk_tensor zt = dk_tensor_nchw(tmp, 0, DK_F32, batch, lc, hh / 8, ww / 8);
            s2 = dk_convert(vae->ctx, &zt, latents);
        }
        if (s2 == DK_OK) s2 = dk_sync(vae->ctx);
        dk_buffer_destroy(vae->ctx, tmp);
        if (s2 != DK_OK) st = s2;
    }
    if (info && st == DK_OK) info->elapsed_ms = dk__now_ms() - t0;
    free(z);
    return st;
}

dk_status dk_vae_plan_encode(dk_vae *vae, int32_t height, int32_t width, dk_vae_info *info) {
    static const char fn[] = "dk_vae_plan_encode";
    float dummy = 0.0f;
    dk__vae_mode md;
    dk_status st = vaee_check(vae, fn, &dummy, 1, height, width, info);
    if (st != DK_OK) return st;
    st = vaee_choose(vae, fn, height, width, &md);
    if (st != DK_OK) return st;
    memset(info, 0, sizeof *info);
    info->banded = md.banded;
    info->band_rows = md.band_rows;
    info->plan_device_bytes = md.plan_bytes;
    info->weight_device_bytes = dk__vae_weight_bytes(vae);
    info->scratch_reserve_bytes = md.budget_bytes - md.plan_bytes;
    return DK_OK;
}
