/* AutoencoderKL parameters (decoder and encoder): the table of every tensor
 * (both namings, expected shapes), model detection, loading from a file source
 * or seeded random values, upload into one device buffer in the compute dtype. */
#include "vae_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Elements are placed at multiples of 128 (>= 256-byte aligned in any dtype). */
#define VAEP_ALIGN 128

static int32_t vaep_add(dk__vae_arch *a, const char *dname, const char *oname, int32_t flags,
                        int32_t ndim, int64_t s0, int64_t s1, int64_t s2, int64_t s3) {
    dk__vae_param *p = &a->p[a->np];
    int32_t i;
    memset(p, 0, sizeof *p);
    snprintf(p->diffusers, sizeof p->diffusers, "%s", dname);
    snprintf(p->original, sizeof p->original, "%s", oname);
    p->ndim = ndim;
    p->shape[0] = s0; p->shape[1] = s1; p->shape[2] = s2; p->shape[3] = s3;
    p->numel = 1;
    for (i = 0; i < ndim; i++) p->numel *= p->shape[i];
    p->flags = flags;
    p->elem_offset = a->total_elems;
    a->total_elems += (p->numel + VAEP_ALIGN - 1) / VAEP_ALIGN * VAEP_ALIGN;
    return a->np++;
}

/* conv weight + bias under "<d>.weight"/"<o>.weight"; returns the weight index. */
static int32_t vaep_conv(dk__vae_arch *a, const char *d, const char *o, int32_t cout, int32_t cin,
                         int32_t k, int32_t wflags, int32_t bflags, int32_t *bias) {
    char dn[DK__VAE_NAME], on[DK__VAE_NAME];
    int32_t wi;
    snprintf(dn, sizeof dn, "%s.weight", d);
    snprintf(on, sizeof on, "%s.weight", o);
    wi = vaep_add(a, dn, on, wflags, 4, cout, cin, k, k);
    snprintf(dn, sizeof dn, "%s.bias", d);
    snprintf(on, sizeof on, "%s.bias", o);
    *bias = vaep_add(a, dn, on, bflags, 1, cout, 1, 1, 1);
    return wi;
}

static int32_t vaep_linear(dk__vae_arch *a, const char *d, const char *o, int32_t c, int32_t bflags,
                           int32_t *bias) {
    char dn[DK__VAE_NAME], on[DK__VAE_NAME];
    int32_t wi;
    snprintf(dn, sizeof dn, "%s.weight", d);
    snprintf(on, sizeof on, "%s.weight", o);
    wi = vaep_add(a, dn, on, DK__VAE_P_LINEAR, 2, c, c, 1, 1);
    snprintf(dn, sizeof dn, "%s.bias", d);
    snprintf(on, sizeof on, "%s.bias", o);
    *bias = vaep_add(a, dn, on, bflags, 1, c, 1, 1, 1);
    return wi;
}

static int32_t vaep_norm(dk__vae_arch *a, const char *d, const char *o, int32_t c, int32_t *beta) {
    char dn[DK__VAE_NAME], on[DK__VAE_NAME];
    int32_t gi;
    snprintf(dn, sizeof dn, "%s.weight", d);
    snprintf(on, sizeof on, "%s.weight", o);
    gi = vaep_add(a, dn, on, 0, 1, c, 1, 1, 1);
    snprintf(dn, sizeof dn, "%s.bias", d);
    snprintf(on, sizeof on, "%s.bias", o);
    *beta = vaep_add(a, dn, on, 0, 1, c, 1, 1, 1);
    return gi;
}

static void vaep_resnet(dk__vae_arch *a, dk__vae_resnet *r, const char *d, const char *o, int32_t cin,
                        int32_t cout) {
    char dn[DK__VAE_NAME], on[DK__VAE_NAME];
    r->cin = cin;
    r->cout = cout;
#define VAEP_NAMES(sd, so) (snprintf(dn, sizeof dn, "%s.%s", d, sd), snprintf(on, sizeof on, "%s.%s", o, so))
    VAEP_NAMES("norm1", "norm1");
    r->n1g = vaep_norm(a, dn, on, cin, &r->n1b);
    VAEP_NAMES("conv1", "conv1");
    r->c1w = vaep_conv(a, dn, on, cout, cin, 3, 0, 0, &r->c1b);
    VAEP_NAMES("norm2", "norm2");
    r->n2g = vaep_norm(a, dn, on, cout, &r->n2b);
    VAEP_NAMES("conv2", "conv2");
    r->c2w = vaep_conv(a, dn, on, cout, cout, 3, DK__VAE_P_RESID_OUT, 0, &r->c2b);
    r->scw = r->scb = -1;
    if (cin != cout) {
        VAEP_NAMES("conv_shortcut", "nin_shortcut");
        r->scw = vaep_conv(a, dn, on, cout, cin, 1, 0, 0, &r->scb);
    }
#undef VAEP_NAMES
}

static void vaep_attn(dk__vae_arch *a, dk__vae_attn *t, const char *d, const char *o) {
    char dn[DK__VAE_NAME], on[DK__VAE_NAME];
#define VAEP_NAMES(sd, so) (snprintf(dn, sizeof dn, "%s.%s", d, sd), snprintf(on, sizeof on, "%s.%s", o, so))
    VAEP_NAMES("group_norm", "norm");
    t->ng = vaep_norm(a, dn, on, 512, &t->nb);
    VAEP_NAMES("to_q", "q");
    t->qw = vaep_linear(a, dn, on, 512, 0, &t->qb);
    VAEP_NAMES("to_k", "k");
    t->kw = vaep_linear(a, dn, on, 512, 0, &t->kb);
    VAEP_NAMES("to_v", "v");
    t->vw = vaep_linear(a, dn, on, 512, 0, &t->vb);
    VAEP_NAMES("to_out.0", "proj_out");
    t->ow = vaep_linear(a, dn, on, 512, 0, &t->ob);
#undef VAEP_NAMES
    a->p[t->ow].flags |= DK__VAE_P_RESID_OUT;
}

static void vaep_build_decoder(dk__vae_arch *a) {
    static const int32_t chans[4] = {512, 512, 256, 128}; /* up_blocks.0 .. 3 */
    char dn[DK__VAE_NAME], on[DK__VAE_NAME];
    int32_t i, j, prev = 512;
    if (a->quant) a->pq_w = vaep_conv(a, "post_quant_conv", "post_quant_conv", a->lc, a->lc, 1, 0, 0, &a->pq_b);
    a->in_w = vaep_conv(a, "decoder.conv_in", "decoder.conv_in", 512, a->lc, 3, 0, 0, &a->in_b);
    vaep_resnet(a, &a->mid[0], "decoder.mid_block.resnets.0", "decoder.mid.block_1", 512, 512);
    vaep_attn(a, &a->attn, "decoder.mid_block.attentions.0", "decoder.mid.attn_1");
    vaep_resnet(a, &a->mid[1], "decoder.mid_block.resnets.1", "decoder.mid.block_2", 512, 512);
    for (i = 0; i < 4; i++) {
        for (j = 0; j < 3; j++) {
            snprintf(dn, sizeof dn, "decoder.up_blocks.%d.resnets.%d", (int)i, (int)j);
            snprintf(on, sizeof on, "decoder.up.%d.block.%d", (int)(3 - i), (int)j);
            vaep_resnet(a, &a->up[i][j], dn, on, j == 0 ? prev : chans[i], chans[i]);
        }
        prev = chans[i];
        if (i < 3) {
            snprintf(dn, sizeof dn, "decoder.up_blocks.%d.upsamplers.0.conv", (int)i);
            snprintf(on, sizeof on, "decoder.up.%d.upsample.conv", (int)(3 - i));
            a->upc_w[i] = vaep_conv(a, dn, on, prev, prev, 3, 0, DK__VAE_P_BIAS_SCALED, &a->upc_b[i]);
        }
    }
    a->no_g = vaep_norm(a, "decoder.conv_norm_out", "decoder.norm_out", 128, &a->no_b);
    a->out_w = vaep_conv(a, "decoder.conv_out", "decoder.conv_out", 3, 128, 3, 0, 0, &a->out_b);
}

/* The original naming keeps the diffusers block order for the encoder
 * (encoder.down.0 is down_blocks.0), unlike the decoder's up blocks. */
static void vaep_build_encoder(dk__vae_arch *a) {
    static const int32_t chans[4] = {128, 256, 512, 512}; /* down_blocks.0 .. 3 */
    char dn[DK__VAE_NAME], on[DK__VAE_NAME];
    int32_t i, j, prev = 128;
    a->e_in_w = vaep_conv(a, "encoder.conv_in", "encoder.conv_in", 128, 3, 3, 0, 0, &a->e_in_b);
    for (i = 0; i < 4; i++) {
        for (j = 0; j < 2; j++) {
            snprintf(dn, sizeof dn, "encoder.down_blocks.%d.resnets.%d", (int)i, (int)j);
            snprintf(on, sizeof on, "encoder.down.%d.block.%d", (int)i, (int)j);
            vaep_resnet(a, &a->down[i][j], dn, on, j == 0 ? prev : chans[i], chans[i]);
        }
        prev = chans[i];
        if (i < 3) {
            snprintf(dn, sizeof dn, "encoder.down_blocks.%d.downsamplers.0.conv", (int)i);
            snprintf(on, sizeof on, "encoder.down.%d.downsample.conv", (int)i);
            a->dsc_w[i] = vaep_conv(a, dn, on, prev, prev, 3, 0, DK__VAE_P_BIAS_SCALED, &a->dsc_b[i]);
        }
    }
    vaep_resnet(a, &a->e_mid[0], "encoder.mid_block.resnets.0", "encoder.mid.block_1", 512, 512);
    vaep_attn(a, &a->e_attn, "encoder.mid_block.attentions.0", "encoder.mid.attn_1");
    vaep_resnet(a, &a->e_mid[1], "encoder.mid_block.resnets.1", "encoder.mid.block_2", 512, 512);
    a->e_no_g = vaep_norm(a, "encoder.conv_norm_out", "encoder.norm_out", 512, &a->e_no_b);
    a->e_out_w = vaep_conv(a, "encoder.conv_out", "encoder.conv_out", 2 * a->lc, 512, 3, 0, 0, &a->e_out_b);
    if (a->quant) a->q_w = vaep_conv(a, "quant_conv", "quant_conv", 2 * a->lc, 2 * a->lc, 1, 0, 0, &a->q_b);
}

void dk__vae_arch_build(dk__vae_arch *a, int32_t lc, int32_t quant, int32_t parts) {
    memset(a, 0, sizeof *a);
    a->lc = lc;
    a->quant = quant;
    a->parts = parts;
    a->pq_w = a->pq_b = a->in_w = a->e_in_w = a->q_w = a->q_b = -1;
    if (parts & DK__VAE_DEC) vaep_build_decoder(a);
    if (parts & DK__VAE_ENC) vaep_build_encoder(a);
}

/* Every resnet of the table (*n of them). */
static void vaep_resnets(dk__vae_arch *a, dk__vae_resnet **list, int32_t *n) {
    int32_t i;
    *n = 0;
    if (a->parts & DK__VAE_DEC) {
        for (i = 0; i < 12; i++) list[(*n)++] = &a->up[i / 3][i % 3];
        list[(*n)++] = &a->mid[0];
        list[(*n)++] = &a->mid[1];
    }
    if (a->parts & DK__VAE_ENC) {
        for (i = 0; i < 8; i++) list[(*n)++] = &a->down[i / 2][i % 2];
        list[(*n)++] = &a->e_mid[0];
        list[(*n)++] = &a->e_mid[1];
    }
}

void dk__vae_model_config(dk_vae_model m, int32_t *lc, int32_t *quant, float *scaling, float *shift) {
    *lc = m == DK_VAE_SD3 || m == DK_VAE_FLUX1 ? 16 : 4;
    *quant = *lc == 4;
    *scaling = m == DK_VAE_SD15 ? 0.18215f : m == DK_VAE_SD3 ? 1.5305f : m == DK_VAE_FLUX1 ? 0.3611f : 0.13025f;
    *shift = m == DK_VAE_SD3 ? 0.0609f : m == DK_VAE_FLUX1 ? 0.1159f : 0.0f;
}

void dk__vae_resolve_factors(dk_vae *vae) {
    int32_t lc, quant;
    float sc, sh;
    dk__vae_model_config(vae->model, &lc, &quant, &sc, &sh);
    vae->scaling = isnan(vae->opt.scaling_factor) ? sc : vae->opt.scaling_factor;
    vae->shift = isnan(vae->opt.shift_factor) ? sh : vae->opt.shift_factor;
}

void dk__vae_arch_free(dk__vae_arch *a) {
    int32_t i;
    for (i = 0; i < a->np; i++) {
        free(a->p[i].host);
        a->p[i].host = NULL;
    }
}

dk_tensor dk__vae_weight(const dk__vae_weights *ws, const dk__vae_arch *a, int32_t param) {
    const dk__vae_param *p = &a->p[param];
    return dk_tensor_contiguous(ws->buf, (uint64_t)p->elem_offset * dk_dtype_size(ws->dtype), ws->dtype,
                                p->ndim, p->shape);
}

/* ------------------------------------------------------------ upload */

/* Converts n floats to dtype into dst (host). */
static void vaep_convert(const float *src, int64_t n, dk_dtype t, void *dst) {
    int64_t i;
    if (t == DK_F32) {
        memcpy(dst, src, (size_t)n * 4);
        return;
    }
    for (i = 0; i < n; i++)
        ((uint16_t *)dst)[i] = t == DK_F16 ? dk_f32_to_f16(src[i]) : dk_f32_to_bf16(src[i]);
}

/* Upload values (host floats) of param i into ws, applying the activation scale
 * to scaled biases. */
static dk_status vaep_upload(dk_vae *vae, dk__vae_weights *ws, int32_t i, const float *values) {
    const dk__vae_param *p = &vae->arch.p[i];
    size_t ds = dk_dtype_size(ws->dtype);
    void *tmp = malloc((size_t)p->numel * (ds > 4 ? ds : 4));
    float *scaled = NULL;
    dk_status st;
    if (!tmp) return dk__fail(vae->ctx, DK_ERR_OUT_OF_MEMORY, "vae: out of host memory for %s", p->diffusers);
    if ((p->flags & DK__VAE_P_BIAS_SCALED) && ws->act_scale != 1.0f) {
        int64_t k;
        scaled = (float *)malloc((size_t)p->numel * sizeof(float));
        if (!scaled) {
            free(tmp);
            return dk__fail(vae->ctx, DK_ERR_OUT_OF_MEMORY, "vae: out of host memory");
        }
        for (k = 0; k < p->numel; k++) scaled[k] = values[k] * ws->act_scale;
        values = scaled;
    }
    vaep_convert(values, p->numel, ws->dtype, tmp);
    st = dk_buffer_upload(vae->ctx, ws->buf, (uint64_t)p->elem_offset * ds, tmp, (uint64_t)p->numel * ds);
    free(scaled);
    free(tmp);
    return st;
}

/* Keep host copies of 1-D params; fold conv_shortcut biases into conv2's bias
 * (the shortcut conv then runs without bias: conv2's epilogue adds both), and
 * upload every 1-D param. */
static dk_status vaep_finish_vectors(dk_vae *vae, dk__vae_weights *ws) {
    dk__vae_arch *a = &vae->arch;
    dk__vae_resnet *res[32];
    int32_t i, j, nres;
    dk_status st;
    vaep_resnets(a, res, &nres);
    for (i = 0; i < a->np; i++) {
        const float *v = a->p[i].host;
        float *sum = NULL;
        if (a->p[i].ndim != 1) continue;
        for (j = 0; j < nres; j++) {
            const dk__vae_resnet *r = res[j];
            if (r->scb >= 0 && r->c2b == i) {
                int64_t k;
                sum = (float *)malloc((size_t)a->p[i].numel * sizeof(float));
                if (!sum) return dk__fail(vae->ctx, DK_ERR_OUT_OF_MEMORY, "vae: out of host memory");
                for (k = 0; k < a->p[i].numel; k++) sum[k] = v[k] + a->p[r->scb].host[k];
                v = sum;
            }
        }
        st = vaep_upload(vae, ws, i, v);
        free(sum);
        if (st != DK_OK) return st;
    }
    return DK_OK;
}

static dk_status vaep_alloc(dk_vae *vae, dk__vae_weights *ws, dk_dtype t, float act_scale) {
    uint64_t bytes = (uint64_t)vae->arch.total_elems * dk_dtype_size(t);
    dk_status st;
    ws->dtype = t;
    ws->act_scale = act_scale;
    ws->buf = NULL;
    st = dk_buffer_create(vae->ctx, bytes, &ws->buf);
    /* Zero the alignment gaps so that whole-buffer conversions read defined values. */
    if (st == DK_OK) st = dk_buffer_fill(vae->ctx, ws->buf, 0, bytes, 0u);
    return st;
}

static float vaep_act_scale(const dk_vae *vae) {
    return vae->dtype == DK_F16 ? vae->opt.fp16_activation_scale : 1.0f;
}

void dk__vae_weights_free(dk_context *ctx, dk__vae_weights *ws) {
    dk_buffer_destroy(ctx, ws->buf);
    ws->buf = NULL;
}

/* The f32 copy of the weights for the fp16 fallback, converted on the device in
 * chunks of 16 M elements: the whole 189 MB would exceed what a Vulkan device
 * may bind at once (at least 128 MiB is guaranteed; lavapipe has just that). */
dk_status dk__vae_weights_widen(dk_vae *vae, dk__vae_weights *out) {
    const int64_t total = vae->arch.total_elems, chunk = (int64_t)1 << 24;
    int64_t i0;
    dk_status st = vaep_alloc(vae, out, DK_F32, 1.0f);
    if (st != DK_OK) return st;
    for (i0 = 0; i0 < total && st == DK_OK; i0 += chunk) {
        int64_t n = total - i0 < chunk ? total - i0 : chunk;
        dk_tensor src = dk_tensor_contiguous(vae->w.buf, (uint64_t)i0 * dk_dtype_size(vae->w.dtype), vae->w.dtype, 1, &n);
        dk_tensor dst = dk_tensor_contiguous(out->buf, (uint64_t)i0 * sizeof(float), DK_F32, 1, &n);
        st = dk_convert(vae->ctx, &src, &dst);
    }
    if (st == DK_OK) st = vaep_finish_vectors(vae, out);
    if (st != DK_OK) dk__vae_weights_free(vae->ctx, out);
    return st;
}

dk_status dk__vae_rescale(dk_vae *vae, float act_scale) {
    vae->w.act_scale = act_scale;
    return vaep_finish_vectors(vae, &vae->w);
}

/* ------------------------------------------------------------ file source */

static float vaep_elem(const dk__vae_src *s, int64_t i) {
    const unsigned char *b = (const unsigned char *)s->data;
    if (s->dtype == DK_F32) {
        uint32_t u = (uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 | (uint32_t)b[4 * i + 2] << 16 |
                     (uint32_t)b[4 * i + 3] << 24;
        float f;
        memcpy(&f, &u, 4);
        return f;
    } else {
        uint16_t h = (uint16_t)(b[2 * i] | b[2 * i + 1] << 8);
        return s->dtype == DK_F16 ? dk_f16_to_f32(h) : dk_bf16_to_f32(h);
    }
}

static void vaep_shape_str(char *dst, size_t cap, int32_t ndim, const int64_t *shape) {
    size_t n = 0;
    int32_t i;
    n += (size_t)snprintf(dst + n, cap - n, "[");
    for (i = 0; i < ndim && i < 4 && n < cap; i++)
        n += (size_t)snprintf(dst + n, cap - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (ndim > 4 && n < cap) n += (size_t)snprintf(dst + n, cap - n, ", ... (%d dims)", (int)ndim);
    if (n < cap) snprintf(dst + n, cap - n, "]");
}

/* Does the found shape match? Linear weights may be stored as 1x1 convs. */
static int vaep_shape_ok(const dk__vae_param *p, const dk__vae_src *s) {
    int32_t i;
    if (s->ndim == p->ndim) {
        for (i = 0; i < p->ndim; i++)
            if (s->shape[i] != p->shape[i]) return 0;
        return 1;
    }
    if ((p->flags & DK__VAE_P_LINEAR) && s->ndim == 4)
        return s->shape[0] == p->shape[0] && s->shape[1] == p->shape[1] && s->shape[2] == 1 && s->shape[3] == 1;
    return 0;
}

/* The shape of tensor name (the naming's prefix added) as text, or "absent". */
static void vaep_found_shape(dk__vae_lookup_fn lookup, void *user, const char *prefix, const char *name, char *dst,
                             size_t cap) {
    char full[DK__VAE_NAME + 32];
    dk__vae_src s;
    snprintf(full, sizeof full, "%s%s", prefix, name);
    if (lookup(user, full, &s) == 1) vaep_shape_str(dst, cap, s.ndim, s.shape);
    else snprintf(dst, cap, "absent");
}

dk_status dk__vae_load(dk_vae *vae, dk__vae_lookup_fn lookup, void *user, int32_t wanted, int sdxl) {
    static const char *const dprobe[3] = {"decoder.up_blocks.0.resnets.0.conv1.weight", "decoder.up.3.block.0.conv1.weight",
                                          "decoder.up.3.block.0.conv1.weight"};
    static const char *const eprobe[3] = {"encoder.down_blocks.0.resnets.0.conv1.weight",
                                          "encoder.down.0.block.0.conv1.weight", "encoder.down.0.block.0.conv1.weight"};
    static const char *const prefixes[3] = {"", "first_stage_model.", ""};
    static const char *const naming[3] = {"diffusers", "original+prefix", "original"};
    dk__vae_arch *a = &vae->arch;
    dk__vae_src s;
    char probe[DK__VAE_NAME + 32];
    float *vals = NULL;
    int64_t maxn = 0;
    int32_t i, kind = -1, parts = 0, lc = 0, quant, want_lc, want_quant;
    const char *pre;
    float sc, sh;
    dk_status st;

    for (i = 0; i < 3 && kind < 0; i++) {
        snprintf(probe, sizeof probe, "%s%s", prefixes[i], dprobe[i]);
        if ((wanted & DK__VAE_DEC) && lookup(user, probe, &s) != 0) parts |= DK__VAE_DEC;
        snprintf(probe, sizeof probe, "%s%s", prefixes[i], eprobe[i]);
        if ((wanted & DK__VAE_ENC) && lookup(user, probe, &s) != 0) parts |= DK__VAE_ENC;
        if (parts) kind = i;
    }
    if (kind < 0 && wanted != (DK__VAE_DEC | DK__VAE_ENC) && !sdxl)
        return dk__fail(vae->ctx, DK_ERR_FORMAT,
                        "vae: options->parts asks for the %s only, and the file holds no %s: none of '%s' (diffusers) "
                        "or '%s' (original naming, with or without 'first_stage_model.')",
                        wanted == DK__VAE_DEC ? "decoder" : "encoder", wanted == DK__VAE_DEC ? "decoder" : "encoder",
                        wanted == DK__VAE_DEC ? dprobe[0] : eprobe[0], wanted == DK__VAE_DEC ? dprobe[1] : eprobe[1]);
    if (kind < 0) {
        if (sdxl)
            return dk__fail(vae->ctx, DK_ERR_FORMAT,
                            "sdxl_vae: not an SDXL VAE: the file has none of '%s' (diffusers), 'first_stage_model.%s' "
                            "or '%s' (original naming)", dprobe[0], dprobe[1], dprobe[2]);
        return dk__fail(vae->ctx, DK_ERR_FORMAT,
                        "vae: not an AutoencoderKL VAE (SD 1.x/2.x, SDXL, SD3, FLUX.1): the file has none of '%s', "
                        "'%s' (diffusers), '%s', '%s' (original naming, with or without 'first_stage_model.')",
                        dprobe[0], eprobe[0], dprobe[1], eprobe[1]);
    }
    dk__strlcpy(vae->naming, naming[kind], sizeof vae->naming);
    pre = prefixes[kind];
    /* The latent channels from the decoder's conv_in [512, C, 3, 3], else the
     * encoder's conv_out [2C, 512, 3, 3]; the quant convs by presence. */
    snprintf(probe, sizeof probe, "%s%s", pre, parts & DK__VAE_DEC ? "decoder.conv_in.weight" : "encoder.conv_out.weight");
    if (lookup(user, probe, &s) == 1 && s.ndim == 4)
        lc = (int32_t)(parts & DK__VAE_DEC ? s.shape[1] : s.shape[0] / 2);
    snprintf(probe, sizeof probe, "%s%s", pre, parts & DK__VAE_DEC ? "post_quant_conv.weight" : "quant_conv.weight");
    quant = lookup(user, probe, &s) != 0;
    if (vae->opt.model == DK_VAE_AUTO) {
        if (lc == 16) vae->model = DK_VAE_FLUX1;
        else vae->model = DK_VAE_SDXL; /* also when conv_in is missing: its message comes below */
    } else {
        vae->model = vae->opt.model;
    }
    dk__vae_model_config(vae->model, &want_lc, &want_quant, &sc, &sh);
    if ((lc != 0 && lc != want_lc) || quant != want_quant) {
        char got[96];
        vaep_found_shape(lookup, user, pre, parts & DK__VAE_DEC ? "decoder.conv_in.weight" : "encoder.conv_out.weight",
                         got, sizeof got);
        return dk__fail(vae->ctx, DK_ERR_FORMAT,
                        "%s: the weights are not those of model %s (%d latent channels, %s): %s%s is %s and %s%s is %s%s",
                        sdxl ? "sdxl_vae" : "vae", dk_vae_model_name(vae->model), (int)want_lc,
                        want_quant ? "with quant convs" : "without quant convs", pre,
                        parts & DK__VAE_DEC ? "decoder.conv_in.weight" : "encoder.conv_out.weight", got, pre,
                        parts & DK__VAE_DEC ? "post_quant_conv.weight" : "quant_conv.weight",
                        quant ? "present" : "absent",
                        vae->opt.model == DK_VAE_AUTO ? " (the family has 4 channels with quant convs, 16 without)" : "");
    }
    dk__vae_resolve_factors(vae);
    dk__vae_arch_build(a, want_lc, want_quant, parts);
    for (i = 0; i < a->np; i++)
        if (a->p[i].numel > maxn) maxn = a->p[i].numel;
    vals = (float *)malloc((size_t)maxn * sizeof(float));
    if (!vals) return dk__fail(vae->ctx, DK_ERR_OUT_OF_MEMORY, "vae: out of host memory");
    st = vaep_alloc(vae, &vae->w, vae->dtype, vaep_act_scale(vae));
    for (i = 0; i < a->np && st == DK_OK; i++) {
        dk__vae_param *p = &a->p[i];
        char name[DK__VAE_NAME + 32];
        int found;
        int64_t k;
        if (kind == 0) snprintf(name, sizeof name, "%s", p->diffusers);
        else snprintf(name, sizeof name, "%s%s", pre, p->original);
        found = lookup(user, name, &s);
        if (found == 0 && kind == 0) {
            /* diffusers before 0.15 named the attention query/key/value/proj_attn. */
            static const char *const from[4] = {".to_q.", ".to_k.", ".to_v.", ".to_out.0."};
            static const char *const to[4] = {".query.", ".key.", ".value.", ".proj_attn."};
            char legacy[DK__VAE_NAME + 32];
            int32_t j;
            for (j = 0; j < 4; j++) {
                const char *at = strstr(name, from[j]);
                if (!at) continue;
                snprintf(legacy, sizeof legacy, "%.*s%s%s", (int)(at - name), name, to[j], at + strlen(from[j]));
                found = lookup(user, legacy, &s);
                if (found != 0) snprintf(name, sizeof name, "%s", legacy);
                break;
            }
        }
        if (found == 0) {
            char want[96];
            vaep_shape_str(want, sizeof want, p->ndim, p->shape);
            st = dk__fail(vae->ctx, DK_ERR_FORMAT, "%s: tensor '%s' (%s naming, expected shape %s) is missing",
                          sdxl ? "sdxl_vae" : "vae", name, vae->naming, want);
            break;
        }
        if (found < 0) {
            st = dk__fail(vae->ctx, DK_ERR_FORMAT, "vae: tensor '%s' has a dtype other than F32, F16, BF16",
                          name);
            break;
        }
        if (!vaep_shape_ok(p, &s)) {
            char want[96], got[96];
            vaep_shape_str(want, sizeof want, p->ndim, p->shape);
            vaep_shape_str(got, sizeof got, s.ndim, s.shape);
            st = dk__fail(vae->ctx, DK_ERR_FORMAT, "vae: tensor '%s' has shape %s, expected %s", name, got,
                          want);
            break;
        }
        for (k = 0; k < p->numel; k++) vals[k] = vaep_elem(&s, k);
        if (p->ndim == 1) {
            p->host = (float *)malloc((size_t)p->numel * sizeof(float));
            if (!p->host) {
                st = dk__fail(vae->ctx, DK_ERR_OUT_OF_MEMORY, "vae: out of host memory");
                break;
            }
            memcpy(p->host, vals, (size_t)p->numel * sizeof(float));
        } else {
            st = vaep_upload(vae, &vae->w, i, vals);
        }
    }
    free(vals);
    if (st == DK_OK) st = vaep_finish_vectors(vae, &vae->w);
    return st;
}

/* ------------------------------------------------------------ random weights */

static uint64_t vaep_next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1). */
static float vaep_uniform(uint64_t *s) { return (float)((double)(vaep_next(s) >> 11) * (2.0 / 9007199254740992.0) - 1.0); }

dk_status dk__vae_load_random(dk_vae *vae, uint64_t seed, int32_t parts) {
    dk__vae_arch *a = &vae->arch;
    float *vals = NULL;
    int64_t maxn = 0;
    int32_t i, lc, quant;
    float sc, sh;
    dk_status st;
    dk__strlcpy(vae->naming, "random", sizeof vae->naming);
    vae->model = vae->opt.model == DK_VAE_AUTO ? DK_VAE_SDXL : vae->opt.model;
    dk__vae_model_config(vae->model, &lc, &quant, &sc, &sh);
    dk__vae_resolve_factors(vae);
    dk__vae_arch_build(a, lc, quant, parts);
    for (i = 0; i < a->np; i++)
        if (a->p[i].numel > maxn) maxn = a->p[i].numel;
    vals = (float *)malloc((size_t)maxn * sizeof(float));
    if (!vals) return dk__fail(vae->ctx, DK_ERR_OUT_OF_MEMORY, "vae: out of host memory");
    st = vaep_alloc(vae, &vae->w, vae->dtype, vaep_act_scale(vae));
    for (i = 0; i < a->np && st == DK_OK; i++) {
        dk__vae_param *p = &a->p[i];
        uint64_t rs = seed * 0x100000001b3ull + (uint64_t)i * 0x9e3779b97f4a7c15ull; /* one stream per tensor */
        int64_t k;
        int is_gamma = p->ndim == 1 && strstr(p->diffusers, "norm") && strstr(p->diffusers, ".weight");
        if (p->ndim == 1) {
            for (k = 0; k < p->numel; k++) vals[k] = (is_gamma ? 1.0f : 0.0f) + 0.05f * vaep_uniform(&rs);
            p->host = (float *)malloc((size_t)p->numel * sizeof(float));
            if (!p->host) {
                st = dk__fail(vae->ctx, DK_ERR_OUT_OF_MEMORY, "vae: out of host memory");
                break;
            }
            memcpy(p->host, vals, (size_t)p->numel * sizeof(float));
        } else {
            int64_t fan_in = p->numel / p->shape[0];
            /* He: variance 2 / fan_in; uniform(-b, b) has variance b^2 / 3. */
            float b = (float)sqrt(6.0 / (double)fan_in);
            if (p->flags & DK__VAE_P_RESID_OUT) b *= 0.25f;
            for (k = 0; k < p->numel; k++) vals[k] = b * vaep_uniform(&rs);
            st = vaep_upload(vae, &vae->w, i, vals);
        }
    }
    free(vals);
    if (st == DK_OK) st = vaep_finish_vectors(vae, &vae->w);
    return st;
}

#undef VAEP_ALIGN
