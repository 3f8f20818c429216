/* TAESD family weights and configuration: the layer program and parameter
 * table of each direction, the key namings, detection of the member from the
 * weights, loading (file, memory, seeded random) into one device buffer, and
 * the object's life cycle. */
#include "taesd_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parameters start at multiples of 128 elements (>= 256 bytes in any dtype). */
#define TAEW_ALIGN 128

static const char *const taew_namings[3] = {"sequential", "comfyui", "diffusers"};

const char *dk_taesd_model_name(dk_taesd_model model) {
    switch (model) {
    case DK_TAESD_AUTO: return "auto";
    case DK_TAESD_SD: return "taesd";
    case DK_TAESD_SDXL: return "taesdxl";
    case DK_TAESD_SD3: return "taesd3";
    case DK_TAESD_FLUX1: return "taef1";
    case DK_TAESD_FLUX2: return "taef2";
    }
    return "?";
}

/* Latent channels and pool branches of a named member; 0 for AUTO or unknown. */
static int32_t taew_model_config(dk_taesd_model m, int32_t *pool) {
    *pool = m == DK_TAESD_FLUX2;
    switch (m) {
    case DK_TAESD_SD: case DK_TAESD_SDXL: return 4;
    case DK_TAESD_SD3: case DK_TAESD_FLUX1: return 16;
    case DK_TAESD_FLUX2: return 32;
    default: return 0;
    }
}

void dk_taesd_options_init(dk_taesd_options *options) {
    if (!options) return;
    memset(options, 0, sizeof *options);
    options->dtype = DK_F32;
    options->model = DK_TAESD_AUTO;
}

/* ------------------------------------------------------------ program */

static int32_t taew_add(dk__taesd_net *n, int32_t layer, const char *suffix, int32_t flags, int32_t ndim,
                        int64_t s0, int64_t s1, int64_t s2, int64_t s3) {
    dk__taesd_param *p = &n->p[n->np];
    int32_t i;
    memset(p, 0, sizeof *p);
    p->layer = layer;
    dk__strlcpy(p->suffix, suffix, sizeof p->suffix);
    p->ndim = ndim;
    p->shape[0] = s0; p->shape[1] = s1; p->shape[2] = s2; p->shape[3] = s3;
    p->numel = 1;
    for (i = 0; i < ndim; i++) p->numel *= p->shape[i];
    p->flags = flags;
    return n->np++;
}

/* A 3x3 conv's weight (+ bias) under "<pre>weight" / "<pre>bias". */
static int32_t taew_conv3(dk__taesd_net *n, int32_t layer, const char *pre, int32_t cout, int32_t cin, int bias,
                          int32_t wflags, int32_t *b) {
    char s[2 * DK__TAESD_SUFFIX]; /* room for any pre, so that GCC's truncation check stays quiet */
    int32_t w;
    snprintf(s, sizeof s, "%sweight", pre);
    w = taew_add(n, layer, s, wflags, 4, cout, cin, 3, 3);
    *b = -1;
    if (bias) {
        snprintf(s, sizeof s, "%sbias", pre);
        *b = taew_add(n, layer, s, 0, 1, cout, 1, 1, 1);
    }
    return w;
}

static void taew_layer_conv(dk__taesd_net *n, int32_t index, int32_t cin, int32_t cout, int32_t stride,
                            int32_t upsample, int bias, int32_t relu, int32_t wflags) {
    dk__taesd_layer *L = &n->layers[n->nlayers++];
    memset(L, 0, sizeof *L);
    L->kind = DK__TAESD_L_CONV;
    L->index = index;
    L->cin = cin;
    L->cout = cout;
    L->stride = stride;
    L->upsample = upsample;
    L->relu = relu;
    L->w = taew_conv3(n, index, "", cout, cin, bias, wflags, &L->b);
}

static void taew_layer_block(dk__taesd_net *n, int32_t index, int32_t pool) {
    dk__taesd_layer *L = &n->layers[n->nlayers++];
    char pre[DK__TAESD_SUFFIX];
    int32_t i;
    memset(L, 0, sizeof *L);
    L->kind = DK__TAESD_L_BLOCK;
    L->index = index;
    L->cin = L->cout = DK__TAESD_CH;
    L->stride = L->upsample = 1;
    L->w = L->b = -1;
    for (i = 0; i < 3; i++) {
        snprintf(pre, sizeof pre, "conv.%d.", (int)(2 * i));
        L->cw[i] = taew_conv3(n, index, pre, DK__TAESD_CH, DK__TAESD_CH, 1, i == 2 ? DK__TAESD_P_RESID_OUT : 0,
                              &L->cb[i]);
    }
    L->pool = pool;
    L->pw0 = L->pg = L->pb = L->pw3 = -1;
    if (pool) {
        L->pw0 = taew_add(n, index, "pool.0.weight", 0, 4, DK__TAESD_POOL_CH, DK__TAESD_CH, 1, 1);
        L->pg = taew_add(n, index, "pool.1.weight", DK__TAESD_P_GAMMA, 1, DK__TAESD_POOL_CH, 1, 1, 1);
        L->pb = taew_add(n, index, "pool.1.bias", 0, 1, DK__TAESD_POOL_CH, 1, 1, 1);
        L->pw3 = taew_add(n, index, "pool.3.weight", DK__TAESD_P_RESID_OUT, 4, DK__TAESD_CH, DK__TAESD_POOL_CH,
                          1, 1);
    }
}

void dk__taesd_net_build(dk__taesd_net *net, int32_t dir, int32_t c, int32_t pool) {
    int32_t s, j;
    char naming[sizeof net->naming];
    memcpy(naming, net->naming, sizeof naming);
    memset(net, 0, sizeof *net);
    memcpy(net->naming, naming, sizeof naming);
    net->present = 1;
    if (dir == DK__TAESD_ENC) {
        /* 0 conv, 1 Block, then [stride-2 conv, 3 Blocks] at 2, 6, 10, then 14 conv. */
        taew_layer_conv(net, 0, 3, DK__TAESD_CH, 1, 1, 1, 0, 0);
        taew_layer_block(net, 1, 0);
        for (s = 0; s < 3; s++) {
            taew_layer_conv(net, 2 + 4 * s, DK__TAESD_CH, DK__TAESD_CH, 2, 1, 0, 0, 0);
            for (j = 0; j < 3; j++) taew_layer_block(net, 3 + 4 * s + j, pool && s == 2);
        }
        taew_layer_conv(net, 14, DK__TAESD_CH, c, 1, 1, 1, 0, 0);
    } else {
        /* 0 clamp, 1 conv, 2 ReLU, then [3 Blocks, upsample, conv] at 3, 8, 13, then 18 Block, 19 conv. */
        taew_layer_conv(net, 1, c, DK__TAESD_CH, 1, 1, 1, 1, 0);
        for (s = 0; s < 3; s++) {
            for (j = 0; j < 3; j++) taew_layer_block(net, 3 + 5 * s + j, pool && s == 0);
            taew_layer_conv(net, 7 + 5 * s, DK__TAESD_CH, DK__TAESD_CH, 1, 2, 0, 0, 0);
        }
        taew_layer_block(net, 18, 0);
        taew_layer_conv(net, 19, DK__TAESD_CH, 3, 1, 1, 1, 0, 0);
    }
}

void dk__taesd_key(char *dst, size_t cap, int32_t dir, const char *naming, const dk__taesd_param *p) {
    if (!strcmp(naming, "comfyui"))
        snprintf(dst, cap, "%s.%d.%s", dir == DK__TAESD_ENC ? "taesd_encoder" : "taesd_decoder", (int)p->layer,
                 p->suffix);
    else if (!strcmp(naming, "diffusers")) /* no layer for the decoder's clamp: indices shift by one */
        snprintf(dst, cap, "%s.layers.%d.%s", dir == DK__TAESD_ENC ? "encoder" : "decoder",
                 (int)(dir == DK__TAESD_ENC ? p->layer : p->layer - 1), p->suffix);
    else
        snprintf(dst, cap, "%d.%s", (int)p->layer, p->suffix);
}

dk_tensor dk__taesd_weight(const dk_taesd *t, int32_t dir, int32_t i) {
    const dk__taesd_param *p = &t->net[dir].p[i];
    return dk_tensor_contiguous(t->weights, (uint64_t)p->elem_offset * dk_dtype_size(t->opt.dtype), t->opt.dtype,
                                p->ndim, p->shape);
}

/* ------------------------------------------------------------ detection */

static const char *taew_dir_name(int32_t dir) { return dir == DK__TAESD_ENC ? "encoder" : "decoder"; }

static void taew_shape_str(char *dst, size_t cap, int32_t ndim, const int64_t *shape) {
    size_t len;
    int32_t i;
    snprintf(dst, cap, "[");
    for (i = 0; i < ndim; i++) {
        len = strlen(dst);
        snprintf(dst + len, cap - len, "%s%lld", i ? ", " : "", (long long)shape[i]);
    }
    len = strlen(dst);
    snprintf(dst + len, cap - len, "]");
}

/* 1: found (usable), 0: absent, -1: present with an unusable dtype or rank. */
static int taew_find(dk_safetensors *f, const char *name, dk_st_tensor *out) {
    dk_status st = dk_safetensors_find(f, name, out);
    if (st == DK_OK) return 1;
    return st == DK_ERR_UNSUPPORTED ? -1 : 0;
}

/* The naming of direction dir in file f (its first conv's key), with the latent
 * channels and pool branches it implies.  Returns 0 when f has no such direction. */
static int taew_detect(dk_taesd *t, dk_safetensors *f, int32_t dir, int32_t *c, int32_t *pool,
                       dk_status *st, const char *label) {
    dk__taesd_param first, last, pool0;
    dk_st_tensor s;
    char key[128], got[96];
    int32_t k, found = -1;
    memset(&first, 0, sizeof first);
    first.layer = dir == DK__TAESD_ENC ? 0 : 1;
    dk__strlcpy(first.suffix, "weight", sizeof first.suffix);
    last = first;
    last.layer = dir == DK__TAESD_ENC ? 14 : 19;
    pool0 = first;
    pool0.layer = dir == DK__TAESD_ENC ? 11 : 3;
    dk__strlcpy(pool0.suffix, "pool.0.weight", sizeof pool0.suffix);
    *st = DK_OK;
    for (k = 0; k < 3 && found < 0; k++) {
        dk__taesd_key(key, sizeof key, dir, taew_namings[k], &first);
        if (taew_find(f, key, &s) != 0) found = k;
    }
    if (found < 0) return 0;
    dk__strlcpy(t->net[dir].naming, taew_namings[found], sizeof t->net[dir].naming);
    if (taew_find(f, key, &s) < 0) {
        *st = dk__fail(t->ctx, DK_ERR_FORMAT, "taesd: %s: tensor '%s' has a dtype other than F32, F16, BF16", label,
                       key);
        return 1;
    }
    taew_shape_str(got, sizeof got, s.ndim, s.shape);
    if (dir == DK__TAESD_ENC) {
        if (s.ndim != 4 || s.shape[0] != DK__TAESD_CH || s.shape[1] != 3 || s.shape[2] != 3 || s.shape[3] != 3) {
            *st = dk__fail(t->ctx, DK_ERR_FORMAT, "taesd: %s: tensor '%s' has shape %s, expected [64, 3, 3, 3]",
                           label, key, got);
            return 1;
        }
        /* The latent channels come from the last conv. */
        dk__taesd_key(key, sizeof key, dir, taew_namings[found], &last);
        if (taew_find(f, key, &s) != 1) {
            *st = dk__fail(t->ctx, DK_ERR_FORMAT,
                           "taesd: %s: tensor '%s' (%s naming, the encoder's last conv, expected shape "
                           "[latent channels, 64, 3, 3]) is missing or not F32/F16/BF16",
                           label, key, taew_namings[found]);
            return 1;
        }
        taew_shape_str(got, sizeof got, s.ndim, s.shape);
        if (s.ndim != 4 || s.shape[0] < 1 || s.shape[0] > DK__TAESD_CH || s.shape[1] != DK__TAESD_CH ||
            s.shape[2] != 3 || s.shape[3] != 3) {
            *st = dk__fail(t->ctx, DK_ERR_FORMAT,
                           "taesd: %s: tensor '%s' has shape %s, expected [latent channels (1..64), 64, 3, 3]", label,
                           key, got);
            return 1;
        }
        *c = (int32_t)s.shape[0];
    } else {
        if (s.ndim != 4 || s.shape[0] != DK__TAESD_CH || s.shape[1] < 1 || s.shape[1] > DK__TAESD_CH ||
            s.shape[2] != 3 || s.shape[3] != 3) {
            *st = dk__fail(t->ctx, DK_ERR_FORMAT,
                           "taesd: %s: tensor '%s' has shape %s, expected [64, latent channels (1..64), 3, 3]", label,
                           key, got);
            return 1;
        }
        *c = (int32_t)s.shape[1];
    }
    dk__taesd_key(key, sizeof key, dir, taew_namings[found], &pool0);
    *pool = taew_find(f, key, &s) != 0;
    return 1;
}

/* The member for (c, pool), checked against options->model. */
static dk_status taew_resolve(dk_taesd *t, int32_t c, int32_t pool, const char *what) {
    int32_t want_pool, want_c = taew_model_config(t->opt.model, &want_pool);
    if (t->opt.model != DK_TAESD_AUTO) {
        if (want_c == 0)
            return dk__fail(t->ctx, DK_ERR_INVALID_ARGUMENT, "taesd: options.model %d is not a dk_taesd_model",
                            (int)t->opt.model);
        if (c != want_c || pool != want_pool)
            return dk__fail(t->ctx, DK_ERR_FORMAT,
                            "taesd: %s: %d latent channels %s pool branches, but options.model %s has %d channels %s",
                            what, (int)c, pool ? "with" : "without", dk_taesd_model_name(t->opt.model), (int)want_c,
                            want_pool ? "with pool branches" : "and no pool branches");
        t->model = t->opt.model;
    } else if (c == 4 && !pool) {
        t->model = DK_TAESD_SD;
    } else if (c == 16 && !pool) {
        t->model = DK_TAESD_SD3;
    } else if (c == 32 && pool) {
        t->model = DK_TAESD_FLUX2;
    } else {
        return dk__fail(t->ctx, DK_ERR_FORMAT,
                        "taesd: %s: %d latent channels %s pool branches is no TAESD-family member (taesd/taesdxl: 4, "
                        "taesd3/taef1: 16, no pool; taef2: 32 with pool)",
                        what, (int)c, pool ? "with" : "without");
    }
    t->latent_channels = c;
    t->pool = pool;
    return DK_OK;
}

/* ------------------------------------------------------------ upload */

static void taew_store(dk_dtype dt, void *base, int64_t at, float v) {
    if (dt == DK_F32) ((float *)base)[at] = v;
    else if (dt == DK_F16) ((uint16_t *)base)[at] = dk_f32_to_f16(v);
    else ((uint16_t *)base)[at] = dk_f32_to_bf16(v);
}

/* Places every parameter of the present directions and allocates the host image. */
static dk_status taew_layout(dk_taesd *t, void **host) {
    int64_t total = 0;
    int32_t d, i;
    for (d = 0; d < 2; d++) {
        if (!t->net[d].present) continue;
        for (i = 0; i < t->net[d].np; i++) {
            t->net[d].p[i].elem_offset = total;
            total += (t->net[d].p[i].numel + TAEW_ALIGN - 1) / TAEW_ALIGN * TAEW_ALIGN;
        }
    }
    t->weight_bytes = (uint64_t)total * dk_dtype_size(t->opt.dtype);
    *host = calloc(1, (size_t)t->weight_bytes);
    if (!*host) return dk__fail(t->ctx, DK_ERR_OUT_OF_MEMORY, "taesd: out of host memory");
    return DK_OK;
}

static dk_status taew_upload(dk_taesd *t, const void *host) {
    dk_status st = dk_buffer_create(t->ctx, t->weight_bytes, &t->weights);
    if (st == DK_OK) st = dk_buffer_upload(t->ctx, t->weights, 0, host, t->weight_bytes);
    return st;
}

/* Every parameter of direction dir from file f into host (the dtype image). */
static dk_status taew_load_dir(dk_taesd *t, int32_t dir, dk_safetensors *f, const char *label, void *host,
                               float *vals) {
    dk__taesd_net *n = &t->net[dir];
    int32_t i, j;
    for (i = 0; i < n->np; i++) {
        const dk__taesd_param *p = &n->p[i];
        char key[128], want[96], got[96];
        dk_st_tensor s;
        int found, ok;
        int64_t k;
        dk_status st;
        dk__taesd_key(key, sizeof key, dir, n->naming, p);
        taew_shape_str(want, sizeof want, p->ndim, p->shape);
        found = taew_find(f, key, &s);
        if (found == 0)
            return dk__fail(t->ctx, DK_ERR_FORMAT, "taesd: %s: tensor '%s' (%s %s, %s naming, expected shape %s) is "
                            "missing", label, key, dk_taesd_model_name(t->model), taew_dir_name(dir), n->naming, want);
        if (found < 0)
            return dk__fail(t->ctx, DK_ERR_FORMAT, "taesd: %s: tensor '%s' has a dtype other than F32, F16, BF16",
                            label, key);
        ok = s.ndim == p->ndim;
        for (j = 0; ok && j < p->ndim; j++) ok = s.shape[j] == p->shape[j];
        if (!ok) {
            taew_shape_str(got, sizeof got, s.ndim, s.shape);
            return dk__fail(t->ctx, DK_ERR_FORMAT, "taesd: %s: tensor '%s' has shape %s, expected %s", label, key,
                            got, want);
        }
        st = dk_st_tensor_copy(&s, DK_F32, vals, (uint64_t)p->numel * sizeof(float));
        if (st != DK_OK)
            return dk__fail(t->ctx, st, "taesd: %s: tensor '%s': %s", label, key, dk_last_error(NULL));
        for (k = 0; k < p->numel; k++)
            taew_store(t->opt.dtype, host, p->elem_offset + k, vals[k]);
    }
    return DK_OK;
}

/* ------------------------------------------------------------ life cycle */

static dk_status taew_new(dk_context *ctx, const dk_taesd_options *options, dk_taesd **out) {
    dk_taesd *t;
    dk_taesd_options o;
    if (out) *out = NULL;
    if (!ctx) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "taesd: ctx is NULL");
    if (!out) return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "taesd: out is NULL");
    if (options) o = *options;
    else dk_taesd_options_init(&o);
    if (o.dtype != DK_F32 && o.dtype != DK_F16 && o.dtype != DK_BF16)
        return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "taesd: options.dtype %d is not DK_F32, DK_F16 or DK_BF16",
                        (int)o.dtype);
    if ((int)o.model < (int)DK_TAESD_AUTO || (int)o.model > (int)DK_TAESD_FLUX2)
        return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "taesd: options.model %d is not a dk_taesd_model",
                        (int)o.model);
    t = (dk_taesd *)calloc(1, sizeof *t);
    if (!t) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "taesd: out of host memory");
    t->ctx = ctx;
    t->opt = o;
    *out = t;
    return DK_OK;
}

void dk_taesd_destroy(dk_taesd *tae) {
    if (!tae) return;
    dk_taesd_release_buffers(tae);
    if (tae->weights) dk_buffer_destroy(tae->ctx, tae->weights);
    free(tae);
}

/* Builds, loads and uploads from the files of each direction (fe / fd may be
 * NULL; need_enc / need_dec: the caller named that file for it). */
static dk_status taew_from_sources(dk_taesd *t, dk_safetensors *fe, const char *le, int need_enc,
                                   dk_safetensors *fd, const char *ld, int need_dec) {
    int32_t ce = 0, pe = 0, cd = 0, pd = 0, has_e = 0, has_d = 0;
    dk_status st = DK_OK;
    void *host = NULL;
    float *vals = NULL;
    if (fe) has_e = taew_detect(t, fe, DK__TAESD_ENC, &ce, &pe, &st, le);
    if (st != DK_OK) return st;
    if (fd) has_d = taew_detect(t, fd, DK__TAESD_DEC, &cd, &pd, &st, ld);
    if (st != DK_OK) return st;
    if (need_enc && !has_e)
        return dk__fail(t->ctx, DK_ERR_FORMAT,
                        "taesd: %s holds no TAESD encoder: none of '0.weight' (sequential), 'taesd_encoder.0.weight' "
                        "(comfyui), 'encoder.layers.0.weight' (diffusers)", le);
    if (need_dec && !has_d)
        return dk__fail(t->ctx, DK_ERR_FORMAT,
                        "taesd: %s holds no TAESD decoder: none of '1.weight' (sequential), 'taesd_decoder.1.weight' "
                        "(comfyui), 'decoder.layers.0.weight' (diffusers)", ld);
    if (!has_e && !has_d)
        return dk__fail(t->ctx, DK_ERR_FORMAT,
                        "taesd: %s holds no TAESD encoder or decoder: none of '0.weight' / '1.weight' (sequential), "
                        "'taesd_encoder.0.weight' / 'taesd_decoder.1.weight' (comfyui), 'encoder.layers.0.weight' / "
                        "'decoder.layers.0.weight' (diffusers)", le ? le : ld);
    if (has_e && has_d && (ce != cd || pe != pd))
        return dk__fail(t->ctx, DK_ERR_FORMAT,
                        "taesd: the encoder (%s) has %d latent channels %s pool branches, the decoder (%s) %d %s", le,
                        (int)ce, pe ? "with" : "without", ld, (int)cd, pd ? "with" : "without");
    st = taew_resolve(t, has_e ? ce : cd, has_e ? pe : pd, has_e ? le : ld);
    if (st != DK_OK) return st;
    if (has_e) dk__taesd_net_build(&t->net[DK__TAESD_ENC], DK__TAESD_ENC, t->latent_channels, t->pool);
    if (has_d) dk__taesd_net_build(&t->net[DK__TAESD_DEC], DK__TAESD_DEC, t->latent_channels, t->pool);
    st = taew_layout(t, &host);
    if (st == DK_OK) {
        /* the largest tensor: a 64x64x3x3 conv or a 256x64 pool conv */
        vals = (float *)malloc(DK__TAESD_POOL_CH * DK__TAESD_CH * 9 * sizeof(float));
        if (!vals) st = dk__fail(t->ctx, DK_ERR_OUT_OF_MEMORY, "taesd: out of host memory");
    }
    if (st == DK_OK && has_e) st = taew_load_dir(t, DK__TAESD_ENC, fe, le, host, vals);
    if (st == DK_OK && has_d) st = taew_load_dir(t, DK__TAESD_DEC, fd, ld, host, vals);
    if (st == DK_OK) st = taew_upload(t, host);
    free(vals);
    free(host);
    return st;
}

static dk_status taew_open(dk_context *ctx, const char *path, dk_safetensors **f) {
    dk_status st = dk_safetensors_open(path, f);
    if (st != DK_OK) return dk__fail(ctx, st, "taesd: %s", dk_last_error(NULL));
    return DK_OK;
}

dk_status dk_taesd_create_from_files(dk_context *ctx, const char *encoder_path, const char *decoder_path,
                                     const dk_taesd_options *options, dk_taesd **out) {
    dk_safetensors *fe = NULL, *fd = NULL;
    dk_taesd *t = NULL;
    dk_status st = taew_new(ctx, options, &t);
    if (st != DK_OK) return st;
    if (!encoder_path && !decoder_path)
        st = dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "taesd: encoder_path and decoder_path are both NULL");
    if (st == DK_OK && encoder_path) st = taew_open(ctx, encoder_path, &fe);
    if (st == DK_OK && decoder_path) st = taew_open(ctx, decoder_path, &fd);
    if (st == DK_OK) st = taew_from_sources(t, fe, encoder_path, fe != NULL, fd, decoder_path, fd != NULL);
    dk_safetensors_close(fe);
    dk_safetensors_close(fd);
    if (st != DK_OK) dk_taesd_destroy(t);
    else *out = t;
    return st;
}

dk_status dk_taesd_create_from_file(dk_context *ctx, const char *path, const dk_taesd_options *options,
                                    dk_taesd **out) {
    dk_safetensors *f = NULL;
    dk_taesd *t = NULL;
    dk_status st = taew_new(ctx, options, &t);
    if (st != DK_OK) return st;
    if (!path) st = dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "taesd: path is NULL");
    if (st == DK_OK) st = taew_open(ctx, path, &f);
    if (st == DK_OK) st = taew_from_sources(t, f, path, 0, f, path, 0);
    dk_safetensors_close(f);
    if (st != DK_OK) dk_taesd_destroy(t);
    else *out = t;
    return st;
}

dk_status dk_taesd_create_from_memory(dk_context *ctx, const void *encoder_data, uint64_t encoder_size,
                                      const void *decoder_data, uint64_t decoder_size,
                                      const dk_taesd_options *options, dk_taesd **out) {
    dk_safetensors *fe = NULL, *fd = NULL;
    dk_taesd *t = NULL;
    dk_status st = taew_new(ctx, options, &t);
    if (st != DK_OK) return st;
    if (!encoder_data && !decoder_data)
        st = dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "taesd: encoder_data and decoder_data are both NULL");
    if (st == DK_OK && encoder_data && dk_safetensors_open_memory(encoder_data, encoder_size, &fe) != DK_OK)
        st = dk__fail(ctx, DK_ERR_FORMAT, "taesd: encoder_data: %s", dk_last_error(NULL));
    if (st == DK_OK && decoder_data && dk_safetensors_open_memory(decoder_data, decoder_size, &fd) != DK_OK)
        st = dk__fail(ctx, DK_ERR_FORMAT, "taesd: decoder_data: %s", dk_last_error(NULL));
    if (st == DK_OK) st = taew_from_sources(t, fe, "encoder_data", fe != NULL, fd, "decoder_data", fd != NULL);
    dk_safetensors_close(fe);
    dk_safetensors_close(fd);
    if (st != DK_OK) dk_taesd_destroy(t);
    else *out = t;
    return st;
}

/* ------------------------------------------------------------ random weights */

static uint64_t taew_next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1). */
static float taew_uniform(uint64_t *s) {
    return (float)((double)(taew_next(s) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

dk_status dk_taesd_create_random(dk_context *ctx, uint64_t seed, const dk_taesd_options *options, dk_taesd **out) {
    dk_taesd *t = NULL;
    void *host = NULL;
    int32_t c, pool, d, i;
    dk_status st = taew_new(ctx, options, &t);
    if (st != DK_OK) return st;
    c = taew_model_config(t->opt.model, &pool);
    if (c == 0) {
        dk_taesd_destroy(t);
        return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "taesd: create_random needs options.model (not DK_TAESD_AUTO)");
    }
    t->model = t->opt.model;
    t->latent_channels = c;
    t->pool = pool;
    for (d = 0; d < 2; d++) {
        dk__strlcpy(t->net[d].naming, "random", sizeof t->net[d].naming);
        dk__taesd_net_build(&t->net[d], d, c, pool);
    }
    st = taew_layout(t, &host);
    for (d = 0; d < 2 && st == DK_OK; d++) {
        for (i = 0; i < t->net[d].np; i++) {
            const dk__taesd_param *p = &t->net[d].p[i];
            /* one stream per tensor */
            uint64_t rs = seed * 0x100000001b3ull + (uint64_t)(d * DK__TAESD_MAX_PARAMS + i) * 0x9e3779b97f4a7c15ull;
            float b = 0.05f, base = (p->flags & DK__TAESD_P_GAMMA) ? 1.0f : 0.0f;
            int64_t k;
            if (p->ndim == 4) {
                /* He: variance 2 / fan_in; uniform(-b, b) has variance b^2 / 3. */
                b = (float)sqrt(6.0 / (double)(p->numel / p->shape[0]));
                if (p->flags & DK__TAESD_P_RESID_OUT) b *= 0.25f;
            }
            for (k = 0; k < p->numel; k++)
                taew_store(t->opt.dtype, host, p->elem_offset + k, base + b * taew_uniform(&rs));
        }
    }
    if (st == DK_OK) st = taew_upload(t, host);
    free(host);
    if (st != DK_OK) dk_taesd_destroy(t);
    else *out = t;
    return st;
}

dk_status dk_taesd_properties_get(const dk_taesd *tae, dk_taesd_properties *out) {
    if (!tae || !out) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "taesd: properties_get: %s is NULL",
                                      tae ? "out" : "tae");
    memset(out, 0, sizeof *out);
    out->model = tae->model;
    out->latent_channels = tae->latent_channels;
    out->pool_branches = tae->pool;
    out->has_encoder = tae->net[DK__TAESD_ENC].present;
    out->has_decoder = tae->net[DK__TAESD_DEC].present;
    out->encoder_naming = out->has_encoder ? tae->net[DK__TAESD_ENC].naming : NULL;
    out->decoder_naming = out->has_decoder ? tae->net[DK__TAESD_DEC].naming : NULL;
    out->dtype = tae->opt.dtype;
    out->weight_device_bytes = tae->weight_bytes;
    out->activation_device_bytes = tae->act_bytes + tae->io_bytes;
    return DK_OK;
}

#undef TAEW_ALIGN
