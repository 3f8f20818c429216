/* AutoencoderKL decoder: the public API of include/difkern/vae.h (creation,
 * options, decoding), the forward pass written once on the executor's
 * primitives (vae_exec.c), the choice between untiled and banded decoding, and
 * the fp16 overflow fallback.  The encoder is in vae_encode.c, the old SDXL
 * names in vae_sdxl.c. */
#include "vae_internal.h"
#include "../../include/difkern/safetensors.h"
#include "../validate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const vaed_stage_names[DK_VAE_NUM_STAGES] = {
    "conv_in", "mid_block", "up_blocks.0", "up_blocks.1", "up_blocks.2", "up_blocks.3", "conv_out"};

void dk_vae_options_init(dk_vae_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->model = DK_VAE_AUTO;
    o->scaling_factor = NAN;
    o->shift_factor = NAN;
    o->fp16_activation_scale = 1.0f / 256.0f;
    o->fp16_fallback = 1;
}

const char *dk_vae_model_name(dk_vae_model m) {
    switch (m) {
    case DK_VAE_AUTO: return "auto";
    case DK_VAE_SD15: return "sd15";
    case DK_VAE_SDXL: return "sdxl";
    case DK_VAE_SD3: return "sd3";
    case DK_VAE_FLUX1: return "flux1";
    }
    return "?";
}

static dk_status vaed_check_options(dk_context *ctx, const char *fn, const dk_vae_options *o) {
    int ex;
    if ((int)o->model < (int)DK_VAE_AUTO || (int)o->model > (int)DK_VAE_FLUX1)
        return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "%s: options->model is %d; it must be a dk_vae_model (0..4)", fn,
                        (int)o->model);
    if (!isnan(o->scaling_factor) && (!isfinite(o->scaling_factor) || o->scaling_factor == 0.0f))
        return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT,
                        "%s: options->scaling_factor is %g; it must be finite and non-zero (NaN: the model's)", fn,
                        (double)o->scaling_factor);
    if (!isnan(o->shift_factor) && !isfinite(o->shift_factor))
        return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "%s: options->shift_factor is %g; it must be finite (NaN: the model's)",
                        fn, (double)o->shift_factor);
    if (o->tile_rows < 0)
        return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "%s: options->tile_rows is %d; it must be >= 0", fn,
                        (int)o->tile_rows);
    if (!(o->fp16_activation_scale > 0.0f && o->fp16_activation_scale <= 1.0f) ||
        frexp(o->fp16_activation_scale, &ex) != 0.5)
        return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT,
                        "%s: options->fp16_activation_scale is %g; it must be a power of two in (0, 1]", fn,
                        (double)o->fp16_activation_scale);
    if ((int)o->parts < (int)DK_VAE_PARTS_ALL || (int)o->parts > (int)DK_VAE_PARTS_ENCODER)
        return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT,
                        "%s: options->parts is %d; it must be a dk_vae_parts (0 all, 1 decoder, 2 encoder)", fn,
                        (int)o->parts);
    return DK_OK;
}

/* The dk__vae_load part mask options->parts asks for (NULL: all). */
static int32_t vaed_wanted(const dk_vae_options *o) {
    if (o && o->parts == DK_VAE_PARTS_DECODER) return DK__VAE_DEC;
    if (o && o->parts == DK_VAE_PARTS_ENCODER) return DK__VAE_ENC;
    return DK__VAE_DEC | DK__VAE_ENC;
}

/* ------------------------------------------------------------ creation */

static dk_status vaed_new(dk_context *ctx, const char *fn, dk_dtype dtype, const dk_vae_options *options,
                          dk_vae **out) {
    dk_vae *vae;
    dk_vae_options def;
    dk_status st;
    if (!out) return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "%s: out must not be NULL", fn);
    *out = NULL;
    if (!ctx) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "%s: ctx must not be NULL", fn);
    if (dtype != DK_F32 && dtype != DK_F16 && dtype != DK_BF16)
        return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "%s: dtype %d is not DK_F32, DK_F16 or DK_BF16", fn, (int)dtype);
    if (!options) {
        dk_vae_options_init(&def);
        options = &def;
    }
    st = vaed_check_options(ctx, fn, options);
    if (st != DK_OK) return st;
    vae = (dk_vae *)calloc(1, sizeof *vae);
    if (!vae) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    vae->ctx = ctx;
    vae->dtype = dtype;
    vae->opt = *options;
    *out = vae;
    return DK_OK;
}

typedef struct vaed_st_user {
    const dk_safetensors *f;
} vaed_st_user;

static int vaed_st_lookup(void *user, const char *name, dk__vae_src *out) {
    const vaed_st_user *u = (const vaed_st_user *)user;
    dk_st_tensor t;
    dk_status st = dk_safetensors_find(u->f, name, &t);
    int32_t i;
    if (st == DK_ERR_INVALID_ARGUMENT) return 0;
    out->name = name;
    if (st != DK_OK || (t.dtype != DK_F32 && t.dtype != DK_F16 && t.dtype != DK_BF16)) return -1;
    out->dtype = t.dtype;
    out->ndim = t.ndim;
    for (i = 0; i < 4; i++) out->shape[i] = i < t.ndim ? t.shape[i] : 1;
    out->data = t.data;
    return 1;
}

static dk_status vaed_from_st(dk_context *ctx, const char *fn, dk_safetensors *f, dk_dtype dtype,
                              const dk_vae_options *options, int32_t want, int sdxl, dk_vae **out) {
    vaed_st_user u;
    dk_status st = vaed_new(ctx, fn, dtype, options, out);
    if (st != DK_OK) return st;
    u.f = f;
    st = dk__vae_load(*out, vaed_st_lookup, &u, want, sdxl);
    if (st != DK_OK) {
        dk_vae_destroy(*out);
        *out = NULL;
    }
    return st;
}

dk_status dk__vae_create(dk_context *ctx, const char *fn, const char *path, const void *data, uint64_t size,
                         dk_dtype dtype, const dk_vae_options *options, int32_t want, int sdxl, dk_vae **out) {
    dk_safetensors *f = NULL;
    dk_status st;
    if (out) *out = NULL;
    if (!ctx) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "%s: ctx must not be NULL", fn);
    if (!path && !data) return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "%s: %s must not be NULL", fn, size ? "data" : "path");
    st = path ? dk_safetensors_open(path, &f) : dk_safetensors_open_memory(data, size, &f);
    if (st != DK_OK) return dk__fail(ctx, st, "%s: %s", fn, dk_last_error(NULL));
    st = vaed_from_st(ctx, fn, f, dtype, options, want, sdxl, out);
    dk_safetensors_close(f);
    return st;
}

dk_status dk__vae_create_random(dk_context *ctx, const char *fn, uint64_t seed, dk_dtype dtype,
                                const dk_vae_options *options, int32_t parts, dk_vae **out) {
    dk_status st = vaed_new(ctx, fn, dtype, options, out);
    if (st != DK_OK) return st;
    st = dk__vae_load_random(*out, seed, parts);
    if (st != DK_OK) {
        dk_vae_destroy(*out);
        *out = NULL;
    }
    return st;
}

dk_status dk_vae_create_from_file(dk_context *ctx, const char *path, dk_dtype dtype, const dk_vae_options *options,
                                  dk_vae **out) {
    static const char fn[] = "dk_vae_create_from_file";
    if (out) *out = NULL;
    if (ctx && !path) return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "%s: path must not be NULL", fn);
    return dk__vae_create(ctx, fn, path, NULL, 0, dtype, options, vaed_wanted(options), 0, out);
}

dk_status dk_vae_create_from_memory(dk_context *ctx, const void *data, uint64_t size, dk_dtype dtype,
                                    const dk_vae_options *options, dk_vae **out) {
    static const char fn[] = "dk_vae_create_from_memory";
    if (out) *out = NULL;
    if (ctx && !data) return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "%s: data must not be NULL", fn);
    return dk__vae_create(ctx, fn, NULL, data, size, dtype, options, vaed_wanted(options), 0, out);
}

dk_status dk_vae_create_random(dk_context *ctx, uint64_t seed, dk_dtype dtype, const dk_vae_options *options,
                               dk_vae **out) {
    return dk__vae_create_random(ctx, "dk_vae_create_random", seed, dtype, options, vaed_wanted(options), out);
}

void dk_vae_destroy(dk_vae *vae) {
    if (!vae) return;
    dk_buffer_destroy(vae->ctx, vae->arena);
    dk_buffer_destroy(vae->ctx, vae->check);
    dk_buffer_destroy(vae->ctx, vae->mean_bias);
    dk__vae_host_release(vae);
    dk__vae_weights_free(vae->ctx, &vae->w);
    dk__vae_arch_free(&vae->arch);
    dk_context_destroy(vae->host_ctx);
    free(vae);
}

dk_status dk_vae_set_options(dk_vae *vae, const dk_vae_options *options) {
    static const char fn[] = "dk_vae_set_options";
    dk_status st;
    if (!vae) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "%s: vae must not be NULL", fn);
    if (!options) return dk__fail(vae->ctx, DK_ERR_INVALID_ARGUMENT, "%s: options must not be NULL", fn);
    st = vaed_check_options(vae->ctx, fn, options);
    if (st != DK_OK) return st;
    if (options->model != DK_VAE_AUTO && options->model != vae->model) {
        int32_t lc, quant;
        float sc, sh;
        dk__vae_model_config(options->model, &lc, &quant, &sc, &sh);
        if (lc != vae->arch.lc || quant != vae->arch.quant)
            return dk__fail(vae->ctx, DK_ERR_INVALID_ARGUMENT,
                            "%s: options->model %s has %d latent channels %s quant convs; the weights have %d %s",
                            fn, dk_vae_model_name(options->model), (int)lc, quant ? "with" : "without",
                            (int)vae->arch.lc, vae->arch.quant ? "with" : "without");
    }
    if (vae->dtype == DK_F16 && options->fp16_activation_scale != vae->w.act_scale) {
        st = dk__vae_rescale(vae, options->fp16_activation_scale);
        if (st != DK_OK) return st;
    }
    vae->opt = *options;
    if (options->model != DK_VAE_AUTO) vae->model = options->model;
    dk__vae_resolve_factors(vae);
    dk_buffer_destroy(vae->ctx, vae->mean_bias); /* made with the shift in use: made again */
    vae->mean_bias = NULL;
    return DK_OK;
}

const char *dk_vae_naming(const dk_vae *vae) { return vae ? vae->naming : ""; }
dk_dtype dk_vae_dtype(const dk_vae *vae) { return vae ? vae->dtype : DK_F32; }
dk_vae_model dk_vae_get_model(const dk_vae *vae) { return vae ? vae->model : DK_VAE_AUTO; }
int32_t dk_vae_latent_channels(const dk_vae *vae) { return vae ? vae->arch.lc : 0; }
float dk_vae_scaling_factor(const dk_vae *vae) { return vae ? vae->scaling : NAN; }
float dk_vae_shift_factor(const dk_vae *vae) { return vae ? vae->shift : NAN; }
int32_t dk_vae_has_decoder(const dk_vae *vae) { return vae && (vae->arch.parts & DK__VAE_DEC) ? 1 : 0; }
int32_t dk_vae_has_encoder(const dk_vae *vae) { return vae && (vae->arch.parts & DK__VAE_ENC) ? 1 : 0; }

/* ------------------------------------------------------------ forward */

dk__vae_conv_args dk__vae_conv_make(dk__vae_act in, int32_t gn_gamma, int32_t gn_beta, int32_t w, int32_t b,
                                   int32_t k, float out_scale, int32_t consume) {
    dk__vae_conv_args a;
    memset(&a, 0, sizeof a);
    a.in = in;
    a.gn_gamma = gn_gamma;
    a.gn_beta = gn_beta;
    a.w = w;
    a.b = b;
    a.k = k;
    a.upsample = 1;
    a.resid.id = -1;
    a.out_scale = out_scale;
    a.consume = consume;
    return a;
}

/* out = conv2(GN+SiLU(conv1(GN+SiLU(x)))) + shortcut(x); consumes x.  The
 * shortcut runs first so that x can be normalized in place afterwards; its
 * bias is folded into conv2's (vae_params.c). */
dk__vae_act dk__vae_resnet_fwd(dk__vae_exec *e, dk__vae_act x, const dk__vae_resnet *r) {
    dk__vae_act sc = x, h, out;
    dk__vae_conv_args a;
    int32_t has_sc = r->scw >= 0;
    if (has_sc) {
        a = dk__vae_conv_make(x, -1, -1, r->scw, -1, 1, 1.0f, 0);
        sc = dk__vae_conv(e, &a);
    }
    a = dk__vae_conv_make(x, r->n1g, r->n1b, r->c1w, r->c1b, 3, e->s, has_sc);
    h = dk__vae_conv(e, &a);
    a = dk__vae_conv_make(h, r->n2g, r->n2b, r->c2w, r->c2b, 3, e->s, 1);
    a.resid = sc;
    out = dk__vae_conv(e, &a);
    dk__vae_free_act(e, sc);
    return out;
}

/* Where a decode's latents come from: host floats [batch, C, h, w] as the
 * diffusion model produces them, or a device tensor of f32 [batch, C, h, w]
 * already scaled and shifted (dk__vae_decode_tensor). */
typedef struct vaed_in {
    const float *host;
    const dk_tensor *dev;
} vaed_in;

/* in: one sample's latents (host: [C, h, w] floats; dev: its [1, C, h, w]
 * view); out: [3, 8h, 8w] floats. */
static dk_status vaed_forward(dk__vae_exec *e, const dk__vae_run *r, const vaed_in *in, int32_t h, int32_t w,
                              float *out) {
    const dk__vae_arch *a = &r->vae->arch;
    dk__vae_conv_args c;
    dk__vae_act x;
    int32_t i, j;
    e->nacts = 0;
    if (in->dev) x = dk__vae_input_dev(e, in->dev, a->lc, h, w, NULL);
    else x = dk__vae_input(e, in->host, a->lc, h, w, 1.0f / r->vae->scaling, r->vae->shift);
    if (a->pq_w >= 0) {
        c = dk__vae_conv_make(x, -1, -1, a->pq_w, a->pq_b, 1, 1.0f, 1);
        x = dk__vae_conv(e, &c);
    }
    c = dk__vae_conv_make(x, -1, -1, a->in_w, a->in_b, 3, e->s, 1);
    x = dk__vae_conv(e, &c);
    dk__vae_stage(e, r, 0);
    x = dk__vae_resnet_fwd(e, x, &a->mid[0]);
    x = dk__vae_attention(e, x, &a->attn);
    x = dk__vae_resnet_fwd(e, x, &a->mid[1]);
    dk__vae_stage(e, r, 1);
    for (i = 0; i < 4; i++) {
        for (j = 0; j < 3; j++) x = dk__vae_resnet_fwd(e, x, &a->up[i][j]);
        if (i < 3) {
            /* Input and output at scale s: the bias is stored pre-scaled.  The
             * last upsampler's 256-channel full-resolution output is the
             * decode's largest tensor: it leaves room for up_blocks.3's first
             * conv1 to write its output over its dead rows (at 1024x1024 the
             * plan's peak is then 801 MiB instead of 1024). */
            c = dk__vae_conv_make(x, -1, -1, a->upc_w[i], a->upc_b[i], 3, 1.0f, 1);
            c.upsample = 2;
            x = i == 2 ? dk__vae_conv_roomy(e, &c, a->up[3][0].cout) : dk__vae_conv(e, &c);
        }
        dk__vae_stage(e, r, 2 + i);
    }
    c = dk__vae_conv_make(x, a->no_g, a->no_b, a->out_w, a->out_b, 3, 1.0f, 1);
    x = dk__vae_conv(e, &c);
    dk__vae_output(e, x, out);
    if (e->st == DK_OK && !e->dry) e->st = dk_sync(r->vae->ctx);
    dk__vae_stage(e, r, 6);
    return e->st;
}

/* ------------------------------------------------------------ planning */

/* The plan's bytes; *budget: what a budget must hold (plus backend scratch). */
static uint64_t vaed_dry(dk_vae *vae, int32_t banded, int32_t band, int32_t h, int32_t w, uint64_t *budget) {
    dk__vae_exec e;
    dk__vae_run r;
    uint64_t n;
    vaed_in none = {NULL, NULL};
    r.vae = vae;
    r.t0 = 0.0;
    r.stage_names = vaed_stage_names;
    dk__vae_exec_init(&e, vae, &vae->w, 1, banded, band, h);
    vaed_forward(&e, &r, &none, h, w, NULL);
    n = e.st == DK_OK ? dk__vae_exec_plan_bytes(&e) : UINT64_MAX;
    *budget = e.st == DK_OK ? dk__vae_exec_budget_bytes(&e) : UINT64_MAX;
    dk__vae_exec_free(&e);
    return n;
}

uint64_t dk__vae_weight_bytes(const dk_vae *vae) {
    return (uint64_t)vae->arch.total_elems * dk_dtype_size(vae->dtype);
}

/* a + b, saturating: a failed dry run reports its budget as UINT64_MAX, which
 * must not wrap round to a small total that seems to fit. */
static uint64_t vaed_sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

dk_status dk__vae_choose(dk_vae *vae, const char *fn, const char *what, int32_t h, int32_t w, dk__vae_dry_fn dry,
                         dk__vae_mode *m) {
    const dk_vae_options *o = &vae->opt;
    uint64_t wb = dk__vae_weight_bytes(vae);
    int32_t t;
    m->banded = 0;
    m->band_rows = h;
    m->plan_bytes = dry(vae, 0, h, h, w, &m->budget_bytes);
    if (o->tile_rows > 0) {
        m->banded = 1;
        m->band_rows = o->tile_rows < h ? o->tile_rows : h;
        m->plan_bytes = dry(vae, 1, m->band_rows, h, w, &m->budget_bytes);
        return DK_OK;
    }
    if (o->max_device_bytes == 0 || vaed_sat_add(m->budget_bytes, wb) <= o->max_device_bytes) return DK_OK;
    for (t = h;; t = (t + 1) / 2) { /* halve the band until it fits */
        uint64_t budget, n = dry(vae, 1, t, h, w, &budget);
        if (vaed_sat_add(budget, wb) <= o->max_device_bytes) {
            m->banded = 1;
            m->band_rows = t;
            m->plan_bytes = n;
            m->budget_bytes = budget;
            return DK_OK;
        }
        if (t == 1) break;
    }
    {
        uint64_t budget;
        (void)dry(vae, 1, 1, h, w, &budget);
        return dk__fail(vae->ctx, DK_ERR_OUT_OF_MEMORY,
                        "%s: options->max_device_bytes %llu is below what %s needs even in bands of one latent row: "
                        "%llu bytes (%llu of weights + %llu, backend scratch included)",
                        fn, (unsigned long long)o->max_device_bytes, what, (unsigned long long)vaed_sat_add(wb, budget),
                        (unsigned long long)wb, (unsigned long long)budget);
    }
}

static dk_status vaed_choose(dk_vae *vae, const char *fn, int32_t h, int32_t w, dk__vae_mode *m) {
    char what[48];
    snprintf(what, sizeof what, "a %dx%d latent", (int)h, (int)w);
    return dk__vae_choose(vae, fn, what, h, w, vaed_dry, m);
}

static dk_status vaed_check_decode(dk_vae *vae, const char *fn, const float *latents, int32_t batch,
                                   int32_t h, int32_t w, const void *out) {
    if (!vae) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "%s: vae must not be NULL", fn);
    if (!(vae->arch.parts & DK__VAE_DEC))
        return dk__fail(vae->ctx, DK_ERR_UNSUPPORTED,
                        "%s: the weights hold no decoder (no 'decoder.up_blocks.0.resnets.0.conv1.weight' or "
                        "'decoder.up.3.block.0.conv1.weight'): this VAE can only encode", fn);
    if (!latents) return dk__fail(vae->ctx, DK_ERR_INVALID_ARGUMENT, "%s: latents must not be NULL", fn);
    if (!out) return dk__fail(vae->ctx, DK_ERR_INVALID_ARGUMENT, "%s: the output pointer must not be NULL", fn);
    if (batch < 1 || h < 1 || w < 1)
        return dk__fail(vae->ctx, DK_ERR_INVALID_ARGUMENT, "%s: batch %d, h %d, w %d: each must be >= 1", fn,
                        (int)batch, (int)h, (int)w);
    /* The largest activation is 512 channels at 8h x 8w in one sample; keep
     * every size well inside 64 bits and host size_t. */
    if ((uint64_t)h * (uint64_t)w > (UINT64_C(1) << 24) ||
        (uint64_t)batch > (uint64_t)(SIZE_MAX / 2) / ((uint64_t)h * w * 64 * 3 * sizeof(float)))
        return dk__fail(vae->ctx, DK_ERR_INVALID_ARGUMENT, "%s: latent %dx%d (batch %d) is too large", fn, (int)h,
                        (int)w, (int)batch);
    return DK_OK;
}

/* Whether all n floats are finite: an exponent test OR-ed over blocks, which the
 * compiler vectorizes (an early-exit isfinite loop does not vectorize, and
 * the whole image is scanned in the common all-finite case). */
int dk__vae_finite(const float *p, int64_t n) {
    int64_t i = 0;
    while (i < n) {
        int64_t end = n - i > 4096 ? i + 4096 : n;
        uint32_t bad = 0, u;
        for (; i < end; i++) {
            memcpy(&u, p + i, sizeof u);
            bad |= (u & 0x7f800000u) == 0x7f800000u;
        }
        if (bad) return 0;
    }
    return 1;
}

/* Where a decode's images go: host floats, or a device tensor [batch, 3, 8h, 8w]. */
typedef struct vaed_out {
    float *host;
    const dk_tensor *dev;
} vaed_out;

/* Decode one sample (image b of o) with executor settings m and weights ws;
 * *bad: whether the fp16 result has NaN/Inf (checked when ws is fp16). */
static dk_status vaed_run_one(dk_vae *vae, const dk__vae_weights *ws, const dk__vae_mode *m, const vaed_in *in,
                              int32_t h, int32_t w, const vaed_out *o, int32_t b, int *bad, const dk__vae_run *r) {
    dk__vae_exec e;
    dk_status st;
    dk_tensor ob, lb;
    vaed_in one = {NULL, NULL}, none = {NULL, NULL};
    float *out = o->host ? o->host + (int64_t)b * 3 * 64 * h * w : NULL;
    if (in->dev) {
        lb = dk__vae_sample_view(in->dev, b);
        one.dev = &lb;
    } else {
        one.host = in->host + (int64_t)b * vae->arch.lc * h * w;
    }
    dk__vae_exec_init(&e, vae, ws, m->banded ? 0 : 1, m->banded, m->band_rows, h);
    /* The result's NaN/Inf test (fp16's overflow fallback, DK_ERR_NON_FINITE): on
     * the device where the output is (dk__vae_output), else on the host floats */
    e.check_out = 1;
    if (o->dev) {
        ob = dk__vae_sample_view(o->dev, b);
        e.out_dev = &ob;
    }
    if (!m->banded) {
        /* Plan, then run in the arena kept by vae. */
        vaed_forward(&e, r, &none, h, w, NULL);
        dk__vae_exec_realize(&e);
    }
    st = e.st == DK_OK ? vaed_forward(&e, r, &one, h, w, out) : e.st;
    *bad = st == DK_OK && (o->dev || !m->banded ? e.out_bad : !dk__vae_finite(out, (int64_t)3 * 64 * h * w));
    dk__vae_exec_free(&e);
    return st;
}

/* The first non-finite value of n floats, or -1. */
int64_t dk__vae_first_nonfinite(const float *p, int64_t n) {
    int64_t i, b;
    for (b = 0; b < n; b += 4096) {
        int64_t end = n - b > 4096 ? b + 4096 : n;
        if (dk__vae_finite(p + b, end - b)) continue;
        for (i = b; i < end; i++)
            if (!isfinite(p[i])) return i;
    }
    return -1;
}

/* NaN/Inf latents (host floats [batch, C, h, w]) would decode to NaN (a black
 * image): refused up front, unless options->allow_nonfinite. */
static dk_status vaed_refuse_nonfinite(dk_vae *vae, const char *fn, const float *latents, int32_t batch, int32_t h,
                                       int32_t w) {
    int64_t per_in = (int64_t)vae->arch.lc * h * w, first_bad, i;
    if (vae->opt.allow_nonfinite || (first_bad = dk__vae_first_nonfinite(latents, (int64_t)batch * per_in)) < 0)
        return DK_OK;
    i = first_bad % per_in;
    return dk__fail(vae->ctx, DK_ERR_NON_FINITE,
                    "%s: the latents hold NaN or Inf (first: %g at [%lld, %lld, %lld, %lld]); nothing was "
                    "decoded (options->allow_nonfinite decodes them anyway)",
                    fn, (double)latents[first_bad], (long long)(first_bad / per_in), (long long)(i / ((int64_t)h * w)),
                    (long long)(i / w % h), (long long)(i % w));
}

/* t0: when the API call began (elapsed_ms and the progress times count from it).
 * *decoded: whether out was written (also on DK_ERR_NON_FINITE for a result).
 * Host latents are tested for NaN/Inf here; device ones by the caller. */
static dk_status vaed_decode(dk_vae *vae, const char *fn, const vaed_in *in, int32_t batch, int32_t h,
                             int32_t w, const vaed_out *out, dk_vae_info *info, double t0, int *decoded) {
    dk__vae_mode m;
    dk__vae_run r;
    dk_vae_info inf;
    dk__vae_weights wide;
    int32_t b, nbad = 0, bad_first = -1;
    int bad = 0;
    dk_status st;
    uint64_t cur = 0;
    *decoded = 0;
    memset(&inf, 0, sizeof inf);
    memset(&wide, 0, sizeof wide);
    r.vae = vae;
    r.t0 = t0;
    r.stage_names = vaed_stage_names;
    if (in->host && (st = vaed_refuse_nonfinite(vae, fn, in->host, batch, h, w)) != DK_OK) return st;
    st = vaed_choose(vae, fn, h, w, &m);
    if (st != DK_OK) return st;
    if (m.banded) { /* bounded memory: drop the untiled arena of earlier decodes */
        dk_buffer_destroy(vae->ctx, vae->arena);
        vae->arena = NULL;
    }
    dk_memory_reset_peak(vae->ctx);
    for (b = 0; b < batch && st == DK_OK; b++) {
        st = vaed_run_one(vae, &vae->w, &m, in, h, w, out, b, &bad, &r);
        if (st == DK_OK && bad && vae->dtype == DK_F16 && vae->opt.fp16_fallback) {
            /* fp16 overflowed despite the activation scale: redo this sample in fp32. */
            if (!wide.buf) st = dk__vae_weights_widen(vae, &wide);
            if (st == DK_OK) st = vaed_run_one(vae, &wide, &m, in, h, w, out, b, &bad, &r);
            inf.fp16_fallback = 1;
        }
        if (st == DK_OK && bad) {
            if (bad_first < 0) bad_first = b;
            nbad++;
        }
    }
    dk__vae_weights_free(vae->ctx, &wide);
    if (st != DK_OK) return st;
    *decoded = 1;
    inf.banded = m.banded;
    inf.band_rows = m.band_rows;
    inf.plan_device_bytes = m.plan_bytes;
    inf.weight_device_bytes = dk__vae_weight_bytes(vae);
    inf.scratch_reserve_bytes = m.budget_bytes - m.plan_bytes;
    dk_memory_usage(vae->ctx, &cur, &inf.peak_device_bytes);
    inf.elapsed_ms = dk__now_ms() - r.t0;
    if (info) *info = inf;
    if (nbad > 0 && !vae->opt.allow_nonfinite)
        return dk__fail(vae->ctx, DK_ERR_NON_FINITE,
                        "%s: the decoded image of sample %d%s holds NaN or Inf (in %s; finite latents too large for "
                        "the decoder, or NaN/Inf weights)",
                        fn, (int)bad_first, nbad > 1 ? " (and others)" : "",
                        vae->dtype == DK_F16 && vae->opt.fp16_fallback ? "f16 and redone in f32"
                                                                       : dk_dtype_name(vae->dtype));
    return DK_OK;
}

dk_status dk__vae_decode_f32(dk_vae *vae, const char *fn, const float *latents, int32_t batch, int32_t h, int32_t w,
                                 float *out, dk_vae_info *info) {
    vaed_out o;
    vaed_in in = {latents, NULL};
    int decoded;
    dk_status st = vaed_check_decode(vae, fn, latents, batch, h, w, out);
    if (st != DK_OK) return st;
    o.host = out;
    o.dev = NULL;
    return vaed_decode(vae, fn, &in, batch, h, w, &o, info, dk__now_ms(), &decoded);
}

dk_status dk__vae_decode_rgb8(dk_vae *vae, const char *fn, const float *latents, int32_t batch, int32_t h, int32_t w,
                                  uint8_t *rgb8, dk_vae_info *info) {
    double t0 = dk__now_ms();
    int64_t hw = (int64_t)64 * h * w, b, i, c;
    float *f;
    int decoded = 0;
    dk_status st = vaed_check_decode(vae, fn, latents, batch, h, w, rgb8);
    if (st != DK_OK) return st;
    f = (float *)malloc((size_t)(batch * 3 * hw) * sizeof(float));
    if (!f) return dk__fail(vae->ctx, DK_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    {
        vaed_out o;
        vaed_in in = {latents, NULL};
        o.host = f;
        o.dev = NULL;
        st = vaed_decode(vae, fn, &in, batch, h, w, &o, info, t0, &decoded);
    }
    if (decoded) /* also for a non-finite result: the caller gets what was decoded */
        for (b = 0; b < batch; b++)
            for (i = 0; i < hw; i++)
                for (c = 0; c < 3; c++) {
                    float v = (f[(b * 3 + c) * hw + i] + 1.0f) * 0.5f;
                    v = v > 0.0f ? (v < 1.0f ? v : 1.0f) : 0.0f; /* NaN -> 0 */
                    rgb8[(b * hw + i) * 3 + c] = (uint8_t)(v * 255.0f + 0.5f);
                }
    if (decoded && info) info->elapsed_ms = dk__now_ms() - t0; /* the 8-bit conversion too */
    free(f);
    return st;
}

/* dk_vae_decode_tensor's tensors: 4-D views of the right shapes that do not overlap. */
static dk_status vaed_check_tensors(dk_vae *vae, const char *fn, const dk_tensor *lat, const dk_tensor *out) {
    uint64_t l0, l1, o0, o1;
    dk_status st = dk__validate_tensor(vae->ctx, fn, "latents", lat);
    if (st == DK_OK) st = dk__validate_tensor(vae->ctx, fn, "out", out);
    if (st != DK_OK) return st;
    if (lat->ndim != 4 || out->ndim != 4 || lat->shape[1] != vae->arch.lc || out->shape[0] != lat->shape[0] ||
        out->shape[1] != 3 || out->shape[2] != 8 * lat->shape[2] || out->shape[3] != 8 * lat->shape[3])
        return dk__fail(vae->ctx, DK_ERR_INVALID_ARGUMENT,
                        "%s: latents must be [batch, %d, h, w] and out [batch, 3, 8h, 8w] (got %d-D [%lld, %lld, ...] "
                        "and %d-D [%lld, %lld, %lld, %lld])",
                        fn, (int)vae->arch.lc, (int)lat->ndim, (long long)lat->shape[0], (long long)lat->shape[1], (int)out->ndim,
                        (long long)out->shape[0], (long long)out->shape[1], (long long)out->shape[2],
                        (long long)out->shape[3]);
    if (lat->shape[0] > INT32_MAX || lat->shape[2] > INT32_MAX || lat->shape[3] > INT32_MAX)
        return dk__fail(vae->ctx, DK_ERR_INVALID_ARGUMENT, "%s: latents [%lld, %d, %lld, %lld] is too large", fn,
                        (long long)lat->shape[0], (int)vae->arch.lc, (long long)lat->shape[2], (long long)lat->shape[3]);
    l0 = lat->offset;
    l1 = l0 + dk_dtype_size(lat->dtype) * (uint64_t)(1 + (lat->shape[0] - 1) * lat->strides[0] +
                                                     (lat->shape[1] - 1) * lat->strides[1] + (lat->shape[2] - 1) * lat->strides[2] +
                                                     (lat->shape[3] - 1) * lat->strides[3]);
    o0 = out->offset;
    o1 = o0 + dk_dtype_size(out->dtype) * (uint64_t)(1 + (out->shape[0] - 1) * out->strides[0] +
                                                     2 * out->strides[1] + (out->shape[2] - 1) * out->strides[2] +
                                                     (out->shape[3] - 1) * out->strides[3]);
    if (lat->buffer == out->buffer && l0 < o1 && o0 < l1)
        return dk__fail(vae->ctx, DK_ERR_INVALID_ARGUMENT,
                        "%s: out (bytes %llu..%llu) overlaps latents (bytes %llu..%llu)", fn, (unsigned long long)o0,
                        (unsigned long long)(o1 - 1), (unsigned long long)l0, (unsigned long long)(l1 - 1));
    return DK_OK;
}

/* z (dense f32 [batch, C, h, w]) NaN/Inf-free, tested on the device a group
 * per sample (dk__vae_stats_nonfinite, 32 samples a read-back); only a
 * non-finite answer (a NaN or Inf, or values too large for the fp32
 * statistics) reads z back, to find the first bad value and refuse it with the
 * message of the host entry points. */
static dk_status vaed_refuse_nonfinite_dev(dk_vae *vae, const char *fn, const dk_tensor *z) {
    const int64_t n = z->shape[0] * z->shape[1] * z->shape[2] * z->shape[3];
    int64_t b0;
    float *host;
    int bad = 0;
    dk_status st = DK_OK;
    if (vae->opt.allow_nonfinite) return DK_OK;
    for (b0 = 0; b0 < z->shape[0] && !bad; b0 += 32) {
        dk_tensor part = *z;
        part.shape[0] = z->shape[0] - b0 < 32 ? z->shape[0] - b0 : 32;
        part.offset += (uint64_t)(b0 * z->strides[0]) * sizeof(float);
        bad = dk__vae_stats_nonfinite(vae, &part, 1, &st);
    }
    if (!bad || st != DK_OK) return st;
    host = (float *)malloc((size_t)n * sizeof(float));
    if (!host) return dk__fail(vae->ctx, DK_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    st = dk_buffer_download(vae->ctx, z->buffer, z->offset, host, (uint64_t)n * sizeof(float));
    if (st == DK_OK)
        st = vaed_refuse_nonfinite(vae, fn, host, (int32_t)z->shape[0], (int32_t)z->shape[2], (int32_t)z->shape[3]);
    free(host);
    return st;
}

/* The latents stay on the device: converted to f32 NCHW in a buffer of their
 * own (exact from every dtype), tested for NaN/Inf there, scaled and shifted
 * in place (z = latents / scaling + shift, in fp32 like the host entry points,
 * so the activation dtype rounds once), and read by each sample's input
 * conversion.  The buffer lives through the decode: C * h * w * 4 bytes per
 * sample (1 MiB for 16 channels at 128x128). */
dk_status dk__vae_decode_tensor(dk_vae *vae, const char *fn, const dk_tensor *latents, const dk_tensor *out,
                                    dk_vae_info *info) {
    double t0 = dk__now_ms(); /* the latents' conversion and test count too */
    int32_t batch, h, w;
    int64_t n, shape[4];
    uint64_t aux;
    const float one = 1.0f;
    dk_buffer *tmp = NULL;
    dk_tensor z, ones;
    vaed_in in = {NULL, NULL};
    vaed_out o;
    int decoded;
    dk_status st;
    if (!vae) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "%s: vae must not be NULL", fn);
    st = vaed_check_tensors(vae, fn, latents, out);
    if (st != DK_OK) return st;
    batch = (int32_t)latents->shape[0];
    h = (int32_t)latents->shape[2];
    w = (int32_t)latents->shape[3];
    n = (int64_t)batch * vae->arch.lc * h * w;
    st = vaed_check_decode(vae, fn, &vae->opt.scaling_factor, batch, h, w, out);
    if (st != DK_OK) return st;
    /* tmp: z, then (256-byte aligned) the constant 1.0 that the shift is
     * added as (a view with zero strides: the add's b). */
    aux = ((uint64_t)n * sizeof(float) + 255) & ~(uint64_t)255;
    st = dk_buffer_create(vae->ctx, aux + sizeof one, &tmp);
    if (st != DK_OK) return st;
    shape[0] = batch; shape[1] = vae->arch.lc; shape[2] = h; shape[3] = w;
    z = dk_tensor_contiguous(tmp, 0, DK_F32, 4, shape);
    ones = dk_tensor_contiguous(tmp, aux, DK_F32, 4, shape);
    memset(ones.strides, 0, sizeof ones.strides);
    st = dk_convert(vae->ctx, latents, &z);
    if (st == DK_OK) st = vaed_refuse_nonfinite_dev(vae, fn, &z);
    if (st == DK_OK) st = dk_buffer_upload(vae->ctx, tmp, aux, &one, sizeof one);
    if (st == DK_OK) st = dk_add(vae->ctx, 1.0f / vae->scaling, &z, vae->shift, &ones, DK_ACT_NONE, &z);
    if (st == DK_OK) {
        in.dev = &z;
        o.host = NULL;
        o.dev = out;
        st = vaed_decode(vae, fn, &in, batch, h, w, &o, info, t0, &decoded);
    }
    dk_buffer_destroy(vae->ctx, tmp);
    return st;
}

dk_status dk__vae_plan(dk_vae *vae, const char *fn, int32_t h, int32_t w, dk_vae_info *info) {
    float dummy = 0.0f;
    dk__vae_mode m;
    dk_status st = vaed_check_decode(vae, fn, &dummy, 1, h, w, info);
    if (st != DK_OK) return st;
    st = vaed_choose(vae, fn, h, w, &m);
    if (st != DK_OK) return st;
    memset(info, 0, sizeof *info);
    info->banded = m.banded;
    info->band_rows = m.band_rows;
    info->plan_device_bytes = m.plan_bytes;
    info->weight_device_bytes = dk__vae_weight_bytes(vae);
    info->scratch_reserve_bytes = m.budget_bytes - m.plan_bytes;
    return DK_OK;
}

dk_status dk_vae_decode_f32(dk_vae *vae, const float *latents, int32_t batch, int32_t h, int32_t w,
                                 float *out, dk_vae_info *info) {
    static const char fn[] = "dk_vae_decode_f32";
    return dk__vae_decode_f32(vae, fn, latents, batch, h, w, out, info);
}

dk_status dk_vae_decode_rgb8(dk_vae *vae, const float *latents, int32_t batch, int32_t h, int32_t w,
                                  uint8_t *rgb8, dk_vae_info *info) {
    static const char fn[] = "dk_vae_decode_rgb8";
    return dk__vae_decode_rgb8(vae, fn, latents, batch, h, w, rgb8, info);
}

dk_status dk_vae_decode_tensor(dk_vae *vae, const dk_tensor *latents, const dk_tensor *out,
                                    dk_vae_info *info) {
    static const char fn[] = "dk_vae_decode_tensor";
    return dk__vae_decode_tensor(vae, fn, latents, out, info);
}

dk_status dk_vae_plan(dk_vae *vae, int32_t h, int32_t w, dk_vae_info *info) {
    static const char fn[] = "dk_vae_plan";
    return dk__vae_plan(vae, fn, h, w, info);
}
