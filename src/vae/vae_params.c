/* SDXL VAE decoder parameters: the table of every tensor (both namings, expected
 * shapes), loading from a file source or seeded random values, upload into one
 * device buffer in the decode dtype. */
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

void dk__vae_arch_build(dk__vae_arch *a) {
    static const int32_t chans[4] = {512, 512, 256, 128}; /* up_blocks.0 .. 3 */
    char dn[DK__VAE_NAME], on[DK__VAE_NAME];
    int32_t i, j, prev = 512;
    dk__vae_attn *t = &a->attn;
    memset(a, 0, sizeof *a);
    a->pq_w = vaep_conv(a, "post_quant_conv", "post_quant_conv", 4, 4, 1, 0, 0, &a->pq_b);
    a->in_w = vaep_conv(a, "decoder.conv_in", "decoder.conv_in", 512, 4, 3, 0, 0, &a->in_b);
    vaep_resnet(a, &a->mid[0], "decoder.mid_block.resnets.0", "decoder.mid.block_1", 512, 512);
    t->ng = vaep_norm(a, "decoder.mid_block.attentions.0.group_norm", "decoder.mid.attn_1.norm", 512, &t->nb);
    t->qw = vaep_linear(a, "decoder.mid_block.attentions.0.to_q", "decoder.mid.attn_1.q", 512, 0, &t->qb);
    t->kw = vaep_linear(a, "decoder.mid_block.attentions.0.to_k", "decoder.mid.attn_1.k", 512, 0, &t->kb);
    t->vw = vaep_linear(a, "decoder.mid_block.attentions.0.to_v", "decoder.mid.attn_1.v", 512, 0, &t->vb);
    t->ow = vaep_linear(a, "decoder.mid_block.attentions.0.to_out.0", "decoder.mid.attn_1.proj_out", 512, 0,
                        &t->ob);
    a->p[t->ow].flags |= DK__VAE_P_RESID_OUT;
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
static dk_status vaep_upload(dk_sdxl_vae *vae, dk__vae_weights *ws, int32_t i, const float *values) {
    const dk__vae_param *p = &vae->arch.p[i];
    size_t ds = dk_dtype_size(ws->dtype);
    void *tmp = malloc((size_t)p->numel * (ds > 4 ? ds : 4));
    float *scaled = NULL;
    dk_status st;
    if (!tmp) return dk__fail(vae->ctx, DK_ERR_OUT_OF_MEMORY, "sdxl_vae: out of host memory for %s", p->diffusers);
    if ((p->flags & DK__VAE_P_BIAS_SCALED) && ws->act_scale != 1.0f) {
        int64_t k;
        scaled = (float *)malloc((size_t)p->numel * sizeof(float));
        if (!scaled) {
            free(tmp);
            return dk__fail(vae->ctx, DK_ERR_OUT_OF_MEMORY, "sdxl_vae: out of host memory");
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
static dk_status vaep_finish_vectors(dk_sdxl_vae *vae, dk__vae_weights *ws) {
    dk__vae_arch *a = &vae->arch;
    int32_t i, j;
    dk_status st;
    for (i = 0; i < a->np; i++) {
        const float *v = a->p[i].host;
        float *sum = NULL;
        if (a->p[i].ndim != 1) continue;
        for (j = 0; j < 4 * 3 + 2; j++) {
            const dk__vae_resnet *r = j < 12 ? &a->up[j / 3][j % 3] : &a->mid[j - 12];
            if (r->scb >= 0 && r->c2b == i) {
                int64_t k;
                sum = (float *)malloc((size_t)a->p[i].numel * sizeof(float));
                if (!sum) return dk__fail(vae->ctx, DK_ERR_OUT_OF_MEMORY, "sdxl_vae: out of host memory");
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

static dk_status vaep_alloc(dk_sdxl_vae *vae, dk__vae_weights *ws, dk_dtype t, float act_scale) {
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

static float vaep_act_scale(const dk_sdxl_vae *vae) {
    return vae->dtype == DK_F16 ? vae->opt.fp16_activation_scale : 1.0f;
}

void dk__vae_weights_free(dk_context *ctx, dk__vae_weights *ws) {
    dk_buffer_destroy(ctx, ws->buf);
    ws->buf = NULL;
}

/* The f32 copy of the weights for the fp16 fallback, converted on the device in
 * chunks of 16 M elements: the whole 189 MB would exceed what a Vulkan device
 * may bind at once (at least 128 MiB is guaranteed; lavapipe has just that). */
dk_status dk__vae_weights_widen(dk_sdxl_vae *vae, dk__vae_weights *out) {
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

dk_status dk__vae_rescale(dk_sdxl_vae *vae, float act_scale) {
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

dk_status dk__vae_load(dk_sdxl_vae *vae, dk__vae_lookup_fn lookup, void *user) {
    static const char *const probe[3] = {"decoder.up_blocks.0.resnets.0.conv1.weight",
                                         "first_stage_model.decoder.up.3.block.0.conv1.weight",
                                         "decoder.up.3.block.0.conv1.weight"};
    static const char *const naming[3] = {"diffusers", "original+prefix", "original"};
    dk__vae_arch *a = &vae->arch;
    dk__vae_src s;
    float *vals = NULL;
    int64_t maxn = 0;
    int32_t i, kind = -1;
    dk_status st;

    for (i = 0; i < 3 && kind < 0; i++)
        if (lookup(user, probe[i], &s) != 0) kind = i;
    if (kind < 0)
        return dk__fail(vae->ctx, DK_ERR_FORMAT,
                        "sdxl_vae: not an SDXL VAE: the file has none of '%s' (diffusers), '%s' or '%s' "
                        "(original naming)", probe[0], probe[1], probe[2]);
    dk__strlcpy(vae->naming, naming[kind], sizeof vae->naming);
    for (i = 0; i < a->np; i++)
        if (a->p[i].numel > maxn) maxn = a->p[i].numel;
    vals = (float *)malloc((size_t)maxn * sizeof(float));
    if (!vals) return dk__fail(vae->ctx, DK_ERR_OUT_OF_MEMORY, "sdxl_vae: out of host memory");
    st = vaep_alloc(vae, &vae->w, vae->dtype, vaep_act_scale(vae));
    for (i = 0; i < a->np && st == DK_OK; i++) {
        dk__vae_param *p = &a->p[i];
        char name[DK__VAE_NAME + 32];
        int found;
        int64_t k;
        if (kind == 0) snprintf(name, sizeof name, "%s", p->diffusers);
        else snprintf(name, sizeof name, "%s%s", kind == 1 ? "first_stage_model." : "", p->original);
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
            st = dk__fail(vae->ctx, DK_ERR_FORMAT, "sdxl_vae: tensor '%s' (%s naming, expected shape %s) is missing",
                          name, vae->naming, want);
            break;
        }
        if (found < 0) {
            st = dk__fail(vae->ctx, DK_ERR_FORMAT, "sdxl_vae: tensor '%s' has a dtype other than F32, F16, BF16",
                          name);
            break;
        }
        if (!vaep_shape_ok(p, &s)) {
            char want[96], got[96];
            vaep_shape_str(want, sizeof want, p->ndim, p->shape);
            vaep_shape_str(got, sizeof got, s.ndim, s.shape);
            st = dk__fail(vae->ctx, DK_ERR_FORMAT, "sdxl_vae: tensor '%s' has shape %s, expected %s", name, got,
                          want);
            break;
        }
        for (k = 0; k < p->numel; k++) vals[k] = vaep_elem(&s, k);
        if (p->ndim == 1) {
            p->host = (float *)malloc((size_t)p->numel * sizeof(float));
            if (!p->host) {
                st = dk__fail(vae->ctx, DK_ERR_OUT_OF_MEMORY, "sdxl_vae: out of host memory");
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

dk_status dk__vae_load_random(dk_sdxl_vae *vae, uint64_t seed) {
    dk__vae_arch *a = &vae->arch;
    float *vals = NULL;
    int64_t maxn = 0;
    int32_t i;
    dk_status st;
    dk__strlcpy(vae->naming, "random", sizeof vae->naming);
    for (i = 0; i < a->np; i++)
        if (a->p[i].numel > maxn) maxn = a->p[i].numel;
    vals = (float *)malloc((size_t)maxn * sizeof(float));
    if (!vals) return dk__fail(vae->ctx, DK_ERR_OUT_OF_MEMORY, "sdxl_vae: out of host memory");
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
                st = dk__fail(vae->ctx, DK_ERR_OUT_OF_MEMORY, "sdxl_vae: out of host memory");
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
