/* AutoencoderKL executor: runs the decoder's and the encoder's primitives
 * (GroupNorm+SiLU -> conv with residual, the encoder's downsampler, mid-block
 * attention) untiled on device buffers from a memory plan, or in bands of rows
 * with host-resident activations (see vae_internal.h). */
#include "vae_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define VAEX_GROUPS 32
#define VAEX_EPS 1e-6f

static dk_status vaex_fail_oom(dk__vae_exec *e, const char *what, uint64_t bytes) {
    e->st = dk__fail(e->vae->ctx, DK_ERR_OUT_OF_MEMORY, "vae: out of host memory for %s (%llu bytes)", what,
                     (unsigned long long)bytes);
    return e->st;
}

void dk__vae_exec_init(dk__vae_exec *e, dk_vae *vae, const dk__vae_weights *ws, int32_t dry, int32_t banded,
                       int32_t band_rows, int32_t lat_h) {
    memset(e, 0, sizeof *e);
    e->vae = vae;
    e->ws = ws;
    e->dtype = ws->dtype;
    e->s = ws->act_scale;
    e->dry = dry;
    e->banded = banded;
    e->band_rows = band_rows;
    e->lat_h = lat_h;
    e->st = DK_OK;
    e->profile = (int)vae->ctx->knobs.vae_profile;
    e->pin = banded && !dry && dk_context_backend(vae->ctx) != DK_BACKEND_CPU && vae->ctx->knobs.vae_pinned;
}

/* ------------------------------------------------------------ profile */

static void vaex_prof_begin(dk__vae_exec *e) {
    if (!e->profile || e->dry || e->st != DK_OK) return;
    e->st = dk_sync(e->vae->ctx);
    e->prof_t0 = dk__now_ms();
}

/* The time since vaex_prof_begin, added to the row of this label. */
static void vaex_prof_end(dk__vae_exec *e, const char *fmt, ...) {
    char label[sizeof e->prof[0].label];
    double ms;
    int32_t i;
    va_list ap;
    if (!e->profile || e->dry || e->st != DK_OK) return;
    e->st = dk_sync(e->vae->ctx);
    ms = dk__now_ms() - e->prof_t0;
    va_start(ap, fmt);
    vsnprintf(label, sizeof label, fmt, ap);
    va_end(ap);
    for (i = 0; i < e->nprof && strcmp(e->prof[i].label, label); i++) {
    }
    if (i == e->nprof) {
        if (i == (int32_t)(sizeof e->prof / sizeof e->prof[0])) return;
        memcpy(e->prof[i].label, label, sizeof label);
        e->prof[i].count = 0;
        e->prof[i].ms = 0.0;
        e->nprof++;
    }
    e->prof[i].count++;
    e->prof[i].ms += ms;
}

static void vaex_prof_print(dk__vae_exec *e) {
    double total = 0.0;
    int32_t i, j;
    for (i = 0; i < e->nprof; i++) total += e->prof[i].ms;
    if (e->nprof) fprintf(stderr, "vae profile (%s, each op synced):\n", e->banded ? "banded" : "untiled");
    for (i = 0; i < e->nprof; i++) { /* largest first */
        int32_t best = i;
        for (j = i + 1; j < e->nprof; j++)
            if (e->prof[j].ms > e->prof[best].ms) best = j;
        if (best != i) {
            char tmp[sizeof e->prof[0]];
            memcpy(tmp, &e->prof[i], sizeof tmp);
            memcpy(&e->prof[i], &e->prof[best], sizeof tmp);
            memcpy(&e->prof[best], tmp, sizeof tmp);
        }
        fprintf(stderr, "  %9.3f ms %5.1f%% %3dx  %s\n", e->prof[i].ms, 100.0 * e->prof[i].ms / total,
                (int)e->prof[i].count, e->prof[i].label);
    }
    if (e->nprof)
        fprintf(stderr, "  host blocks allocated since the decoder was made: %d (%.1f MiB)\n", (int)e->vae->hostmem.allocs,
                (double)e->vae->hostmem.alloc_bytes / 1048576.0);
    e->nprof = 0;
}

void dk__vae_stage(dk__vae_exec *e, const dk__vae_run *r, int32_t stage) {
    const dk_vae_options *o = &r->vae->opt;
    if (!o->progress || e->dry || e->st != DK_OK) return;
    e->st = dk_sync(r->vae->ctx);
    if (e->st == DK_OK) o->progress(o->progress_user, stage, r->stage_names[stage], dk__now_ms() - r->t0);
}

/* The plan: activations sorted by size, largest first; each goes to the lowest
 * offset that overlaps no placed activation alive at the same time.  An
 * activation with a successor (act_next) is placed together with it, the
 * successor starting where it ends. */
static uint64_t vaex_rounded(const dk__vae_exec *e, int32_t id) { return (e->act_bytes[id] + 255) / 256 * 256; }

/* Whether [off, off + size) over id's lifetime collides with a placed activation; *end: that one's end. */
static int vaex_collides(const dk__vae_exec *e, const unsigned char *placed, int32_t id, uint64_t off,
                         uint64_t *end) {
    uint64_t size = vaex_rounded(e, id);
    int32_t o;
    for (o = 0; o < e->nacts; o++)
        if (placed[o] && e->act_start[id] < e->act_end[o] && e->act_start[o] < e->act_end[id] &&
            off < e->act_off[o] + vaex_rounded(e, o) && e->act_off[o] < off + size) {
            *end = e->act_off[o] + vaex_rounded(e, o);
            return 1;
        }
    return 0;
}

static void vaex_assign(dk__vae_exec *e) {
    int32_t order[DK__VAE_MAX_ACTS], lead[DK__VAE_MAX_ACTS], i, j;
    unsigned char placed[DK__VAE_MAX_ACTS];
    for (i = 0; i < e->nacts; i++) {
        int32_t id = i;
        for (j = i; j > 0 && e->act_bytes[order[j - 1]] < e->act_bytes[id]; j--) order[j] = order[j - 1];
        order[j] = id;
        placed[i] = 0;
        lead[i] = i;
    }
    for (i = 0; i < e->nacts; i++)
        if (e->act_next[i] >= 0) lead[e->act_next[i]] = i;
    e->arena_bytes = 0;
    for (i = 0; i < e->nacts; i++) {
        int32_t id = lead[order[i]], nx;
        uint64_t off = 0, end, size;
        if (placed[id]) continue;
        nx = e->act_next[id];
        size = vaex_rounded(e, id);
        for (;;) {
            if (vaex_collides(e, placed, id, off, &end)) off = end;
            else if (nx >= 0 && vaex_collides(e, placed, nx, off + size, &end)) off = end - size;
            else break;
        }
        e->act_off[id] = off;
        placed[id] = 1;
        if (off + size > e->arena_bytes) e->arena_bytes = off + size;
        if (nx >= 0) {
            e->act_off[nx] = off + size;
            placed[nx] = 1;
            if (off + size + vaex_rounded(e, nx) > e->arena_bytes) e->arena_bytes = off + size + vaex_rounded(e, nx);
        }
    }
    e->planned = 1;
    e->nplanned = e->nacts;
}

void dk__vae_exec_realize(dk__vae_exec *e) {
    dk_vae *vae = e->vae;
    uint64_t need = dk__vae_exec_plan_bytes(e);
    if (e->st == DK_OK && (!vae->arena || dk_buffer_size(vae->arena) < need ||
                           (vae->opt.max_device_bytes && dk_buffer_size(vae->arena) > need))) {
        dk_buffer_destroy(vae->ctx, vae->arena);
        vae->arena = NULL;
        e->st = dk_buffer_create(vae->ctx, need ? need : 256, &vae->arena);
    }
    if (!e->planned) vaex_assign(e);
    e->arena = vae->arena;
    e->nacts = 0;
    e->events = 0;
    e->dry = 0;
}

void dk__vae_exec_free(dk__vae_exec *e) {
    int32_t i;
    vaex_prof_print(e);
    for (i = 0; i < 3; i++) dk_buffer_destroy(e->vae->ctx, e->band[i]);
    dk_buffer_destroy(e->vae->ctx, e->gn_stats);
    e->gn_stats = NULL;
    free(e->act_stats);
    e->act_stats = NULL;
    for (i = 0; i < e->nacts; i++) dk__vae_host_put(e->vae, e->act_host[i], e->act_bytes[i]);
    dk__vae_host_put(e->vae, e->stage, e->stage_bytes);
    e->arena = NULL;
    memset(e->band, 0, sizeof e->band);
    memset(e->act_host, 0, sizeof e->act_host);
    e->stage = NULL;
}

uint64_t dk__vae_exec_plan_bytes(dk__vae_exec *e) {
    if (e->banded) return e->band_bytes[0] + e->band_bytes[1] + e->band_bytes[2] + e->attn_bytes + e->gn_stats_bytes;
    if (!e->planned) vaex_assign(e);
    return e->arena_bytes;
}

uint64_t dk__vae_exec_budget_bytes(dk__vae_exec *e) {
    uint64_t n = dk__vae_exec_plan_bytes(e);
    return n > UINT64_MAX - e->scratch_reserve ? UINT64_MAX : n + e->scratch_reserve;
}

/* ------------------------------------------------------------ activations */

static uint64_t vaex_bytes(const dk__vae_exec *e, int64_t c, int64_t h, int64_t w) {
    return (uint64_t)(c * h * w) * dk_dtype_size(e->dtype);
}

/* An activation with bytes of storage, its tensor at byte view from the storage's
 * start (negative: in the storage of the activation placed before it). */
static dk__vae_act vaex_alloc_sized(dk__vae_exec *e, int32_t c, int32_t h, int32_t w, uint64_t bytes, int64_t view) {
    dk__vae_act a;
    int32_t id;
    a.c = c; a.h = h; a.w = w; a.id = -1;
    if (e->st != DK_OK) return a;
    if (e->nacts >= DK__VAE_MAX_ACTS) {
        e->st = dk__fail(e->vae->ctx, DK_ERR_INTERNAL, "vae: more than %d activations", DK__VAE_MAX_ACTS);
        return a;
    }
    id = e->nacts++;
    if (!e->planned) e->act_bytes[id] = bytes;
    e->act_count[id] = 0.0;
    e->act_view[id] = view;
    e->act_next[id] = -1;
    if (e->banded) {
        if (!e->dry) {
            vaex_prof_begin(e);
            e->act_host[id] = dk__vae_host_get(e->vae, bytes, e->pin);
            vaex_prof_end(e, "host activation blocks");
            if (!e->act_host[id]) {
                vaex_fail_oom(e, "an activation", bytes);
                return a;
            }
        }
    } else if (!e->planned) {
        e->act_start[id] = e->events++;
        e->act_end[id] = INT32_MAX;
    } else if (id >= e->nplanned || e->act_bytes[id] != bytes) {
        e->st = dk__fail(e->vae->ctx, DK_ERR_INTERNAL, "vae: memory plan does not match the decode");
        return a;
    }
    a.id = id;
    return a;
}

static dk__vae_act vaex_alloc(dk__vae_exec *e, int32_t c, int32_t h, int32_t w) {
    return vaex_alloc_sized(e, c, h, w, vaex_bytes(e, c, h, w), 0);
}

void dk__vae_free_act(dk__vae_exec *e, dk__vae_act a) {
    if (a.id < 0) return;
    if (e->banded) {
        dk__vae_host_put(e->vae, e->act_host[a.id], e->act_bytes[a.id]);
        e->act_host[a.id] = NULL;
    } else if (!e->planned) {
        e->act_end[a.id] = e->events++;
    }
}

static dk_tensor vaex_t(const dk__vae_exec *e, dk__vae_act a) {
    return dk_tensor_nhwc(e->arena, (uint64_t)((int64_t)e->act_off[a.id] + e->act_view[a.id]), e->dtype, 1, a.c, a.h,
                          a.w);
}

/* [N, C] matrix view of an NHWC activation at b + off: one row per pixel (token). */
static dk_tensor vaex_tokens(dk_buffer *b, uint64_t off, dk_dtype t, int64_t n, int64_t c) {
    int64_t shape[2];
    shape[0] = n; shape[1] = c;
    return dk_tensor_contiguous(b, off, t, 2, shape);
}

/* The same as [B=1, heads=1, N, C] for dk_attention. */
static dk_tensor vaex_heads(const dk_tensor *tokens) {
    int64_t shape[4];
    shape[0] = 1; shape[1] = 1; shape[2] = tokens->shape[0]; shape[3] = tokens->shape[1];
    return dk_tensor_contiguous(tokens->buffer, tokens->offset, tokens->dtype, 4, shape);
}

/* ------------------------------------------------------------ host elements */

static void vaex_store(void *p, dk_dtype t, int64_t i, float v) {
    if (t == DK_F32) ((float *)p)[i] = v;
    else ((uint16_t *)p)[i] = t == DK_F16 ? dk_f32_to_f16(v) : dk_f32_to_bf16(v);
}

static void *vaex_stage(dk__vae_exec *e, uint64_t bytes) {
    if (e->stage_bytes < bytes) {
        dk__vae_host_put(e->vae, e->stage, e->stage_bytes);
        e->stage = dk__vae_host_get(e->vae, bytes, e->pin);
        e->stage_bytes = e->stage ? bytes : 0;
        if (!e->stage) {
            vaex_fail_oom(e, "a band", bytes);
            return NULL;
        }
    }
    return e->stage;
}

dk__vae_act dk__vae_input(dk__vae_exec *e, const float *x, int32_t c, int32_t h, int32_t w, float mul, float add) {
    dk__vae_act a = vaex_alloc(e, c, h, w);
    void *dst;
    int64_t i, j, hw = (int64_t)h * w;
    if (e->st != DK_OK || e->dry) return a;
    dst = e->banded ? e->act_host[a.id] : vaex_stage(e, e->act_bytes[a.id]);
    if (!dst) return a;
    for (i = 0; i < hw; i++)
        for (j = 0; j < c; j++) vaex_store(dst, e->dtype, i * c + j, x[j * hw + i] * mul + add);
    if (!e->banded) e->st = dk_buffer_upload(e->vae->ctx, e->arena, e->act_off[a.id], dst, e->act_bytes[a.id]);
    return a;
}

/* The CPU context of the host-side work (the banded mode's GroupNorms, the output
 * conversion): vae->ctx itself when it is a CPU context, else one of its own
 * (threaded over all cores), made once. */
static dk_context *vaex_host_ctx(dk__vae_exec *e) {
    dk_vae *vae = e->vae;
    dk_context_options o;
    dk_status st;
    if (dk_context_backend(vae->ctx) == DK_BACKEND_CPU) return vae->ctx;
    if (vae->host_ctx) return vae->host_ctx;
    dk_context_options_init(&o);
    o.backend = DK_BACKEND_CPU;
    st = dk_context_create(&o, &vae->host_ctx);
    if (st != DK_OK)
        e->st = dk__fail(vae->ctx, st, "vae: cannot create the host-side CPU context: %s",
                         dk_last_error(NULL));
    return vae->host_ctx;
}

/* out (float, NCHW) = the host tensor src (a's shape, NHWC, the decode dtype),
 * through dk_convert on the host CPU context: threaded and vectorized, where a
 * per-element loop is a visible part of a decode. */
static void vaex_host_to_nchw_f32(dk__vae_exec *e, dk__vae_act a, const void *src, float *out) {
    dk_context *hc = vaex_host_ctx(e);
    dk_external_memory m;
    dk_buffer *bx = NULL, *by = NULL;
    dk_status st;
    if (e->st != DK_OK || !hc) return;
    memset(&m, 0, sizeof m);
    m.kind = DK_EXTERNAL_HOST_POINTER;
    m.size = e->act_bytes[a.id];
    m.pointer = (void *)src;
    st = dk_buffer_wrap(hc, &m, &bx);
    m.size = (uint64_t)a.c * a.h * a.w * sizeof(float);
    m.pointer = out;
    if (st == DK_OK) st = dk_buffer_wrap(hc, &m, &by);
    if (st == DK_OK) {
        dk_tensor x = dk_tensor_nhwc(bx, 0, e->dtype, 1, a.c, a.h, a.w);
        int64_t shape[4] = {1, a.c, a.h, a.w};
        dk_tensor y = dk_tensor_contiguous(by, 0, DK_F32, 4, shape);
        st = dk_convert(hc, &x, &y);
        if (st == DK_OK) st = dk_sync(hc);
    }
    if (st != DK_OK) e->st = dk__fail(e->vae->ctx, st, "vae: output conversion on the host: %s", dk_last_error(hc));
    dk_buffer_destroy(hc, by);
    dk_buffer_destroy(hc, bx);
}

/* Whether n elements of type t hold a NaN or an infinity (all-ones exponent). */
static int vaex_nonfinite_host(const void *p, int64_t n, dk_dtype t) {
    int64_t i;
    int bad = 0;
    if (t == DK_F32) {
        const float *f = (const float *)p;
        for (i = 0; i < n; i++) bad |= !isfinite(f[i]);
    } else {
        const uint16_t *u = (const uint16_t *)p, mask = t == DK_F16 ? 0x7c00u : 0x7f80u;
        for (i = 0; i < n; i++) bad |= (u[i] & mask) == mask;
    }
    return bad;
}

/* Whether the dense NHWC tensor x holds a NaN or an infinity, read back in
 * pieces of 1 MiB: exact, for when the statistics test cannot tell. */
static int vaex_nonfinite_readback(dk__vae_exec *e, const dk_tensor *x) {
    const uint64_t es = dk_dtype_size(x->dtype), piece = (uint64_t)1 << 20;
    const uint64_t total = (uint64_t)(x->shape[0] * x->shape[1] * x->shape[2] * x->shape[3]) * es;
    uint64_t off;
    int bad = 0;
    void *tmp = malloc((size_t)piece);
    if (!tmp) {
        e->st = dk__fail(e->vae->ctx, DK_ERR_OUT_OF_MEMORY, "vae: out of host memory (the output's finiteness test)");
        return 1;
    }
    for (off = 0; off < total && !bad && e->st == DK_OK; off += piece) {
        uint64_t n = total - off < piece ? total - off : piece;
        e->st = dk_buffer_download(e->vae->ctx, x->buffer, x->offset + off, tmp, n);
        if (e->st == DK_OK) bad = vaex_nonfinite_host(tmp, (int64_t)(n / es), x->dtype);
    }
    free(tmp);
    return bad;
}

int dk__vae_stats_nonfinite(dk_vae *vae, const dk_tensor *x, int32_t groups, dk_status *st) {
    const int64_t ng = x->shape[0] * groups, shape[3] = {x->shape[0], groups, 2};
    float s[2 * 32];
    dk_group_norm_desc d;
    dk_tensor ts;
    int64_t i;
    int bad = 0;
    if (ng > 32) {
        *st = dk__fail(vae->ctx, DK_ERR_INTERNAL, "vae: a finiteness test of %lld groups", (long long)ng);
        return 1;
    }
    if (!vae->check) *st = dk_buffer_create(vae->ctx, sizeof s, &vae->check);
    if (*st != DK_OK) return 1;
    dk_group_norm_desc_init(&d);
    d.groups = groups;
    ts = dk_tensor_contiguous(vae->check, 0, DK_F32, 3, shape);
    *st = dk_group_norm_stats(vae->ctx, &d, x, &ts);
    if (*st == DK_OK) *st = dk_buffer_download(vae->ctx, vae->check, 0, s, (uint64_t)(2 * ng) * sizeof(float));
    for (i = 0; i < 2 * ng && *st == DK_OK; i++) bad |= !isfinite(s[i]);
    return bad;
}

/* Whether the untiled output activation x (3 channels, dense NHWC) holds a NaN
 * or an infinity: dk__vae_stats_nonfinite per channel, so 24 bytes come back
 * instead of the image (whose read-back is a visible part of a decode); a
 * non-finite fp32 result is confirmed by reading the tensor back. */
static int vaex_nonfinite_dev(dk__vae_exec *e, const dk_tensor *x) {
    int bad = dk__vae_stats_nonfinite(e->vae, x, (int32_t)x->shape[1], &e->st);
    if (bad && e->st == DK_OK && x->dtype == DK_F32) bad = vaex_nonfinite_readback(e, x);
    return bad;
}

static dk_buffer *vaex_band(dk__vae_exec *e, int32_t i, uint64_t bytes);

/* Banded: the device tensor x into the host activation a, converted on the
 * device in chunks of one full-resolution band of rows through the input band
 * buffer (no device memory beyond the banded plan); *bad: the converted values
 * hold NaN/Inf, as the untiled test sees them. */
static void vaex_input_dev_bands(dk__vae_exec *e, const dk_tensor *x, dk__vae_act a, int *bad) {
    dk_context *ctx = e->vae->ctx;
    int64_t rows = (int64_t)e->band_rows * (a.h / e->lat_h), r0, r1, es = (int64_t)dk_dtype_size(x->dtype);
    uint64_t row = vaex_bytes(e, a.c, 1, a.w);
    dk_buffer *b;
    if (rows < 1) rows = 1;
    if (rows > a.h) rows = a.h;
    b = vaex_band(e, 0, (uint64_t)rows * row);
    if (e->st != DK_OK || e->dry) return;
    vaex_prof_begin(e);
    for (r0 = 0; r0 < a.h && e->st == DK_OK; r0 = r1) {
        dk_tensor xs = *x, y;
        r1 = r0 + rows < a.h ? r0 + rows : a.h;
        xs.shape[2] = r1 - r0;
        xs.offset += (uint64_t)(r0 * xs.strides[2] * es);
        y = dk_tensor_nhwc(b, 0, e->dtype, 1, a.c, r1 - r0, a.w);
        e->st = dk_convert(ctx, &xs, &y);
        if (e->st == DK_OK)
            e->st = dk_buffer_download(ctx, b, 0, (unsigned char *)e->act_host[a.id] + (uint64_t)r0 * row,
                                       (uint64_t)(r1 - r0) * row);
    }
    if (e->st == DK_OK && bad) *bad = vaex_nonfinite_host(e->act_host[a.id], (int64_t)a.c * a.h * a.w, e->dtype);
    vaex_prof_end(e, "input from the device tensor (bands)");
}

dk__vae_act dk__vae_input_dev(dk__vae_exec *e, const dk_tensor *x, int32_t c, int32_t h, int32_t w, int *bad) {
    dk__vae_act a = vaex_alloc(e, c, h, w);
    if (bad) *bad = 0;
    if (e->banded) {
        vaex_input_dev_bands(e, x, a, bad);
        return a;
    }
    if (e->st != DK_OK || e->dry) return a;
    {
        dk_tensor y = vaex_t(e, a);
        vaex_prof_begin(e);
        e->st = dk_convert(e->vae->ctx, x, &y);
        if (e->st == DK_OK && bad) *bad = vaex_nonfinite_dev(e, &y);
        vaex_prof_end(e, "input from the device tensor");
    }
    return a;
}

/* The output into the device tensor e->out_dev (the sample's view): converted
 * from the activation on the device (banded: uploaded from the host first). */
static void vaex_output_dev(dk__vae_exec *e, dk__vae_act a) {
    dk_context *ctx = e->vae->ctx;
    uint64_t bytes = e->act_bytes[a.id];
    int64_t n = (int64_t)a.c * a.h * a.w;
    if (e->st != DK_OK || e->dry) return;
    vaex_prof_begin(e);
    if (!e->banded) {
        dk_tensor x = vaex_t(e, a);
        e->st = dk_convert(ctx, &x, e->out_dev);
        if (e->st == DK_OK && e->check_out) e->out_bad = vaex_nonfinite_dev(e, &x);
    } else {
        /* In chunks of rows through the input band buffer: no device memory
         * beyond the banded plan. */
        uint64_t row = bytes / (uint64_t)a.h, rows = e->band[0] ? dk_buffer_size(e->band[0]) / row : 0;
        int64_t r0, r1, es = (int64_t)dk_dtype_size(e->out_dev->dtype);
        if (e->check_out) e->out_bad = vaex_nonfinite_host(e->act_host[a.id], n, e->dtype);
        if (rows == 0) e->st = dk__fail(ctx, DK_ERR_INTERNAL, "vae: no band buffer for the output");
        for (r0 = 0; r0 < a.h && e->st == DK_OK; r0 = r1) {
            dk_tensor x, y = *e->out_dev;
            r1 = r0 + (int64_t)rows < a.h ? r0 + (int64_t)rows : a.h;
            e->st = dk_buffer_upload(ctx, e->band[0], 0, (const unsigned char *)e->act_host[a.id] + (uint64_t)r0 * row,
                                     (uint64_t)(r1 - r0) * row);
            x = dk_tensor_nhwc(e->band[0], 0, e->dtype, 1, a.c, r1 - r0, a.w);
            y.shape[2] = r1 - r0;
            y.offset += (uint64_t)(r0 * y.strides[2] * es);
            if (e->st == DK_OK) e->st = dk_convert(ctx, &x, &y);
            if (e->st == DK_OK) e->st = dk_sync(ctx); /* the band buffer is refilled next */
        }
    }
    vaex_prof_end(e, "output to the device tensor");
}

void dk__vae_output(dk__vae_exec *e, dk__vae_act a, float *out) {
    if (e->out_dev) {
        vaex_output_dev(e, a);
    } else if (!e->banded) {
        /* On the device: NHWC in the decode dtype -> NCHW float in a planned
         * buffer (as many 16-bit channels as the floats need), one download
         * straight into out (converting on the host after downloading the
         * 16-bit tensor took several times the download; vae-memory-plan.md). */
        dk__vae_act f = vaex_alloc(e, a.c * (int32_t)(sizeof(float) / dk_dtype_size(e->dtype)), a.h, a.w);
        if (e->st == DK_OK && !e->dry) {
            int64_t shape[4];
            dk_tensor x = vaex_t(e, a), y;
            shape[0] = 1; shape[1] = a.c; shape[2] = a.h; shape[3] = a.w;
            y = dk_tensor_contiguous(e->arena, e->act_off[f.id], DK_F32, 4, shape);
            vaex_prof_begin(e);
            /* (24 bytes back instead of scanning the downloaded floats on one
             * host core; after the conversion, so that one wait covers both) */
            if (e->st == DK_OK) e->st = dk_convert(e->vae->ctx, &x, &y);
            if (e->st == DK_OK && e->check_out) e->out_bad = vaex_nonfinite_dev(e, &x);
            vaex_prof_end(e, "output to float NCHW");
            vaex_prof_begin(e);
            if (e->st == DK_OK)
                e->st = dk_buffer_download(e->vae->ctx, e->arena, e->act_off[f.id], out,
                                           (uint64_t)a.c * a.h * a.w * sizeof(float));
            vaex_prof_end(e, "download the output");
        }
        dk__vae_free_act(e, f);
    } else if (e->st == DK_OK && !e->dry) {
        vaex_prof_begin(e);
        vaex_host_to_nchw_f32(e, a, e->act_host[a.id], out);
        vaex_prof_end(e, "output to float NCHW (host)");
    }
    dk__vae_free_act(e, a);
}

/* ------------------------------------------------------------ untiled (device) */

static dk_group_norm_desc vaex_gn_desc(const dk__vae_exec *e, dk_activation act) {
    dk_group_norm_desc d;
    dk_group_norm_desc_init(&d);
    d.groups = VAEX_GROUPS;
    d.eps = VAEX_EPS * e->s * e->s; /* GroupNorm of s*x equals that of x with eps scaled by s^2 */
    d.activation = act;
    return d;
}

static void vaex_group_norm(dk__vae_exec *e, dk__vae_act x, int32_t gamma, int32_t beta, dk_activation act,
                            dk__vae_act y) {
    dk_group_norm_desc d = vaex_gn_desc(e, act);
    dk_tensor tx, ty, tg, tb;
    if (e->st != DK_OK || e->dry) return;
    tx = vaex_t(e, x);
    ty = vaex_t(e, y);
    tg = dk__vae_weight(e->ws, &e->vae->arch, gamma);
    tb = dk__vae_weight(e->ws, &e->vae->arch, beta);
    vaex_prof_begin(e);
    if (e->st == DK_OK) e->st = dk_group_norm(e->vae->ctx, &d, &tx, &tg, &tb, &ty);
    vaex_prof_end(e, "group_norm%s C%d %dx%d", act == DK_ACT_SILU ? "+silu" : "", (int)x.c, (int)x.h, (int)x.w);
}

/* pad_h: the rows of zero padding on both sides; for the encoder's downsampler
 * (zero padding of 0 rows/columns on the top/left, 1 on the bottom/right, then
 * a 3x3 stride-2 conv) the bottom padding, the top one being 0. */
static void vaex_conv_run(dk__vae_exec *e, const dk__vae_conv_args *a, const dk_tensor *x, const dk_tensor *r,
                          int32_t pad_h, const dk_tensor *y) {
    dk_conv2d_desc d;
    dk_tensor tw = dk__vae_weight(e->ws, &e->vae->arch, a->w), tb;
    const dk_tensor *bias = NULL;
    int32_t st = a->down ? 2 : 1;
    if (a->cout > 0) tw.shape[0] = a->cout; /* the first rows: a view */
    if (a->bias_t) {
        bias = a->bias_t;
    } else if (a->b >= 0) {
        tb = dk__vae_weight(e->ws, &e->vae->arch, a->b);
        if (a->cout > 0) tb.shape[0] = a->cout;
        bias = &tb;
    }
    dk_conv2d_desc_init(&d);
    if (a->down) {
        d.stride_h = d.stride_w = 2;
        d.pad_h = d.pad_w = 0;
        d.pad_top = d.pad_left = 0;
        d.pad_bottom = pad_h;
        d.pad_right = 1;
    } else {
        d.pad_h = pad_h;
        d.pad_w = a->k / 2;
    }
    d.upsample = a->upsample;
    d.output_scale = a->out_scale;
    vaex_prof_begin(e);
    if (e->st == DK_OK) e->st = dk_conv2d(e->vae->ctx, &d, x, &tw, bias, r, y);
    vaex_prof_end(e, "conv%dx%d%s%s %d->%d %dx%d%s%s", (int)a->k, (int)a->k, a->upsample > 1 ? " up2" : "",
                  a->down ? " s2" : "", (int)a->in.c, (int)y->shape[1], (int)(a->in.h * a->upsample / st),
                  (int)(a->in.w * a->upsample / st), r ? " +res" : "", e->banded ? " (bands, device)" : "");
}

static void vaex_dev_conv(dk__vae_exec *e, const dk__vae_conv_args *a, dk__vae_act out) {
    dk__vae_act g = a->in;
    if (a->gn_gamma >= 0) {
        if (!a->consume) g = vaex_alloc(e, a->in.c, a->in.h, a->in.w);
        vaex_group_norm(e, a->in, a->gn_gamma, a->gn_beta, DK_ACT_SILU, g);
    }
    if (e->st == DK_OK && !e->dry) {
        dk_tensor tx = vaex_t(e, g), ty = vaex_t(e, out), tr;
        if (a->resid.id >= 0) tr = vaex_t(e, a->resid);
        vaex_conv_run(e, a, &tx, a->resid.id >= 0 ? &tr : NULL, a->k / 2, &ty);
    }
    if (a->gn_gamma >= 0 && !a->consume) dk__vae_free_act(e, g);
}

/* ------------------------------------------------------------ banded */

/* The device buffer of the split GroupNorm's statistics: at least bytes. */
static dk_buffer *vaex_gn_stats_buf(dk__vae_exec *e, uint64_t bytes) {
    if (bytes > e->gn_stats_bytes) e->gn_stats_bytes = bytes;
    if (e->dry) return NULL;
    if (!e->act_stats) {
        e->act_stats = (float *)malloc((size_t)DK__VAE_MAX_ACTS * DK__VAE_GN_FLOATS * sizeof(float));
        if (!e->act_stats) {
            vaex_fail_oom(e, "GroupNorm statistics", (uint64_t)DK__VAE_MAX_ACTS * DK__VAE_GN_FLOATS * sizeof(float));
            return NULL;
        }
    }
    if (!e->gn_stats || dk_buffer_size(e->gn_stats) < bytes) {
        dk_buffer_destroy(e->vae->ctx, e->gn_stats);
        e->gn_stats = NULL;
        e->st = dk_buffer_create(e->vae->ctx, e->gn_stats_bytes, &e->gn_stats);
    }
    return e->st == DK_OK ? e->gn_stats : NULL;
}

/* Statistics slot i of the device buffer as the [1, 32, 2] f32 tensor of the API. */
static dk_tensor vaex_gn_slot(dk__vae_exec *e, int64_t i) {
    const int64_t shape[3] = {1, VAEX_GROUPS, 2};
    return dk_tensor_contiguous(e->gn_stats, (uint64_t)i * DK__VAE_GN_FLOATS * sizeof(float), DK_F32, 3, shape);
}

/* Upload rows [r0, r1) of the host tensor src (x's shape) to buffer b at 0:
 * the rows inside the tensor straight from src (NHWC rows are contiguous), the
 * halo rows outside it as zeros. */
static void vaex_upload_rows(dk__vae_exec *e, dk__vae_act x, const void *src, int64_t r0, int64_t r1, dk_buffer *b) {
    uint64_t row = (uint64_t)x.w * x.c * dk_dtype_size(e->dtype);
    int64_t a = r0 < 0 ? 0 : r0, z = r1 > x.h ? x.h : r1, r;
    for (r = r0; r < r1 && e->st == DK_OK; r++) {
        if (r >= 0 && r < x.h) continue;
        void *zero = vaex_stage(e, row);
        if (!zero) return;
        memset(zero, 0, (size_t)row);
        e->st = dk_buffer_upload(e->vae->ctx, b, (uint64_t)(r - r0) * row, zero, row);
    }
    if (e->st == DK_OK && z > a)
        e->st = dk_buffer_upload(e->vae->ctx, b, (uint64_t)(a - r0) * row, (const unsigned char *)src + (size_t)a * row,
                                 (uint64_t)(z - a) * row);
}

/* Make band buffer i hold at least bytes (PLAN: just record the size). */
static dk_buffer *vaex_band(dk__vae_exec *e, int32_t i, uint64_t bytes) {
    if (e->dry) {
        if (bytes > e->band_bytes[i]) e->band_bytes[i] = bytes;
        return NULL;
    }
    if (!e->band[i] || dk_buffer_size(e->band[i]) < bytes) {
        dk_buffer_destroy(e->vae->ctx, e->band[i]);
        e->band[i] = NULL;
        if (bytes > e->band_bytes[i]) e->band_bytes[i] = bytes;
        e->st = dk_buffer_create(e->vae->ctx, e->band_bytes[i], &e->band[i]);
    }
    return e->band[i];
}

static int64_t vaex_floordiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/* The rows [r0, r1) of a band buffer b that holds rows [b0, ...) of an NHWC
 * activation with c channels and width w. */
static dk_tensor vaex_band_rows(const dk__vae_exec *e, dk_buffer *b, int64_t b0, int64_t r0, int64_t r1, int64_t c,
                                int64_t w) {
    uint64_t row = (uint64_t)(w * c) * dk_dtype_size(e->dtype);
    return dk_tensor_nhwc(b, (uint64_t)(r0 - b0) * row, e->dtype, 1, c, r1 - r0, w);
}

/* GroupNorm+SiLU of the input rows [r0, r1) in band buffer bi (rows from i0), in
 * place, with the input's merged statistics (statistics slot 0); the zero halo
 * rows outside the tensor stay zero, as the conv's padding. */
static void vaex_band_gn(dk__vae_exec *e, const dk__vae_conv_args *a, dk_buffer *bi, int64_t i0, int64_t r0,
                         int64_t r1) {
    dk_group_norm_desc d = vaex_gn_desc(e, DK_ACT_SILU);
    dk_tensor v = vaex_band_rows(e, bi, i0, r0, r1, a->in.c, a->in.w), st = vaex_gn_slot(e, 0);
    dk_tensor tg = dk__vae_weight(e->ws, &e->vae->arch, a->gn_gamma), tb = dk__vae_weight(e->ws, &e->vae->arch, a->gn_beta);
    vaex_prof_begin(e);
    if (e->st == DK_OK) e->st = dk_group_norm_apply(e->vae->ctx, &d, &v, &st, &tg, &tb, &v);
    vaex_prof_end(e, "group_norm+silu C%d (bands, device)", (int)a->in.c);
}

/* The statistics of the output's bands (slots 1..nb) downloaded and merged into
 * the activation's host statistics. */
static void vaex_band_stats_merge(dk__vae_exec *e, dk__vae_act out, int64_t band, int64_t nb) {
    float *host = (float *)malloc((size_t)nb * DK__VAE_GN_FLOATS * sizeof(float)), *acc;
    int64_t b;
    if (!host) {
        vaex_fail_oom(e, "GroupNorm statistics", (uint64_t)nb * DK__VAE_GN_FLOATS * sizeof(float));
        return;
    }
    e->st = dk_buffer_download(e->vae->ctx, e->gn_stats, DK__VAE_GN_FLOATS * sizeof(float), host,
                               (uint64_t)nb * DK__VAE_GN_FLOATS * sizeof(float));
    acc = e->act_stats + (size_t)out.id * DK__VAE_GN_FLOATS;
    e->act_count[out.id] = 0.0;
    for (b = 0; b < nb && e->st == DK_OK; b++) {
        int64_t rows = out.h - b * band < band ? out.h - b * band : band;
        double count = (double)(out.c / VAEX_GROUPS) * (double)rows * (double)out.w;
        dk_group_norm_stats_merge(acc, e->act_count[out.id], host + b * DK__VAE_GN_FLOATS, count, VAEX_GROUPS);
        e->act_count[out.id] += count;
    }
    free(host);
}

/* A conv in bands of output rows: each band's input rows (with the halo) are
 * uploaded from the host activation, normalized on the device with the whole
 * tensor's statistics when the conv has a GroupNorm, convolved, and the band's
 * rows downloaded, their statistics taken for the next GroupNorm (32 groups). */
static void vaex_band_conv(dk__vae_exec *e, const dk__vae_conv_args *a, dk__vae_act out) {
    dk__vae_act x = a->in;
    int64_t u = a->upsample, p = a->k / 2, ow = out.w, band, o0, nb, b;
    size_t ds = dk_dtype_size(e->dtype);
    uint64_t orow = (uint64_t)ow * out.c * ds, slot = DK__VAE_GN_FLOATS * sizeof(float);
    int gn = a->gn_gamma >= 0, want = out.c % VAEX_GROUPS == 0;
    if (e->st != DK_OK) return;
    /* Bands scale with the resolution: band_rows latent rows. */
    band = (int64_t)e->band_rows * (out.h / e->lat_h);
    if (band < 1) band = 1;
    nb = (out.h + band - 1) / band;
    if (gn || want) vaex_gn_stats_buf(e, (uint64_t)(nb + 1) * slot);
    if (gn && !e->dry && e->st == DK_OK) {
        if (e->act_count[x.id] <= 0.0) {
            e->st = dk__fail(e->vae->ctx, DK_ERR_INTERNAL, "vae: no GroupNorm statistics for a banded input");
            return;
        }
        e->st = dk_buffer_upload(e->vae->ctx, e->gn_stats, 0, e->act_stats + (size_t)x.id * DK__VAE_GN_FLOATS, slot);
    }
    for (o0 = 0, b = 0; o0 < out.h && e->st == DK_OK; o0 += band, b++) {
        int64_t o1 = o0 + band < out.h ? o0 + band : out.h;
        /* Input rows whose (upsampled) rows cover output rows [o0-p, o1+p). */
        int64_t i0 = vaex_floordiv(o0 - p, u), i1 = vaex_floordiv(o1 + p + u - 1, u);
        int64_t ob0 = u * i0 + p, ob1 = u * i1 - p; /* rows the band's conv produces */
        if (a->down) { /* output row o reads input rows 2o .. 2o+2 (row x.h: the zero bottom padding) */
            i0 = 2 * o0;
            i1 = 2 * o1 + 1;
            ob0 = o0;
            ob1 = o1;
        }
        uint64_t in_bytes = vaex_bytes(e, x.c, i1 - i0, x.w), out_bytes = (uint64_t)(ob1 - ob0) * orow;
        dk_buffer *bi = vaex_band(e, 0, in_bytes), *br = NULL, *bo;
        if (a->resid.id >= 0) br = vaex_band(e, 1, out_bytes);
        bo = vaex_band(e, 2, out_bytes);
        if (e->dry || e->st != DK_OK) continue;
        vaex_prof_begin(e);
        vaex_upload_rows(e, x, e->act_host[x.id], i0, i1, bi);
        if (e->st == DK_OK && br) vaex_upload_rows(e, a->resid, e->act_host[a->resid.id], ob0, ob1, br);
        vaex_prof_end(e, "band uploads");
        if (gn) vaex_band_gn(e, a, bi, i0, i0 > 0 ? i0 : 0, i1 < x.h ? i1 : x.h);
        if (e->st == DK_OK) {
            dk_tensor tx = dk_tensor_nhwc(bi, 0, e->dtype, 1, x.c, i1 - i0, x.w);
            dk_tensor ty = dk_tensor_nhwc(bo, 0, e->dtype, 1, out.c, ob1 - ob0, ow);
            dk_tensor tr;
            if (br) tr = dk_tensor_nhwc(br, 0, e->dtype, 1, out.c, ob1 - ob0, ow);
            vaex_conv_run(e, a, &tx, br ? &tr : NULL, 0, &ty);
        }
        if (want && e->st == DK_OK) {
            dk_group_norm_desc d = vaex_gn_desc(e, DK_ACT_NONE);
            dk_tensor v = vaex_band_rows(e, bo, ob0, o0, o1, out.c, ow), st = vaex_gn_slot(e, 1 + b);
            vaex_prof_begin(e);
            if (e->st == DK_OK) e->st = dk_group_norm_stats(e->vae->ctx, &d, &v, &st);
            vaex_prof_end(e, "group_norm statistics (bands, device)");
        }
        vaex_prof_begin(e);
        if (e->st == DK_OK)
            e->st = dk_buffer_download(e->vae->ctx, bo, (uint64_t)(o0 - ob0) * orow,
                                       (unsigned char *)e->act_host[out.id] + (size_t)o0 * orow,
                                       (uint64_t)(o1 - o0) * orow);
        vaex_prof_end(e, "band downloads");
    }
    if (want && !e->dry && e->st == DK_OK) {
        vaex_prof_begin(e);
        vaex_band_stats_merge(e, out, band, nb);
        vaex_prof_end(e, "group_norm statistics download and merge");
    }
}

/* ------------------------------------------------------------ primitives */

static dk__vae_act vaex_conv_shrink(dk__vae_exec *e, const dk__vae_conv_args *a, int32_t oid);
static int32_t vaex_room_of(const dk__vae_exec *e, dk__vae_act x);

/* The output channels of conv a. */
static int32_t vaex_conv_cout(const dk__vae_exec *e, const dk__vae_conv_args *a) {
    return a->cout > 0 ? a->cout : (int32_t)e->vae->arch.p[a->w].shape[0];
}

dk__vae_act dk__vae_conv(dk__vae_exec *e, const dk__vae_conv_args *a) {
    const int32_t cout = vaex_conv_cout(e, a);
    int32_t room = vaex_room_of(e, a->in);
    dk__vae_act out;
    if (room >= 0 && a->consume) return vaex_conv_shrink(e, a, room);
    if (a->down) out = vaex_alloc(e, cout, (a->in.h + 1 - 3) / 2 + 1, (a->in.w + 1 - 3) / 2 + 1);
    else out = vaex_alloc(e, cout, a->in.h * a->upsample, a->in.w * a->upsample);
    if (e->banded) vaex_band_conv(e, a, out);
    else vaex_dev_conv(e, a, out);
    if (a->consume) dk__vae_free_act(e, a->in);
    return out;
}

/* Bands of the conv that shrinks its input in place: eight keep the extra room
 * to an eighth of its output's bytes, for seven more barriers. */
#define VAEX_SHRINK_BANDS 8

/* The storage of a roomy activation x and of the output of the conv that will
 * consume it: that output's rows first, then (from byte D = b * orow, b the band
 * rows, orow <= xrow the row bytes) a zero row, x's rows and a zero row.  The
 * output is the activation placed first (act_next: x). */
static uint64_t vaex_room_gap(int32_t h, uint64_t orow) {
    return (uint64_t)((h + VAEX_SHRINK_BANDS - 1) / VAEX_SHRINK_BANDS) * orow;
}

dk__vae_act dk__vae_conv_roomy(dk__vae_exec *e, const dk__vae_conv_args *a, int32_t next_c) {
    int32_t cx = vaex_conv_cout(e, a), h = a->in.h * a->upsample, wd = a->in.w * a->upsample;
    uint64_t xrow = vaex_bytes(e, cx, 1, wd), orow = vaex_bytes(e, next_c, 1, wd), d = vaex_room_gap(h, orow);
    uint64_t obytes = ((uint64_t)h * orow + 255) / 256 * 256; /* where the planner puts x's storage */
    dk__vae_act x, out;
    if (e->banded || next_c > cx || d + (uint64_t)(h + 2) * xrow <= obytes || !e->vae->ctx->knobs.vae_shrink)
        return dk__vae_conv(e, a);
    out = vaex_alloc(e, next_c, h, wd);
    x = vaex_alloc_sized(e, cx, h, wd, d + (uint64_t)(h + 2) * xrow - obytes, (int64_t)(d + xrow) - (int64_t)obytes);
    if (e->st != DK_OK) return x;
    e->act_next[out.id] = x.id;
    if (!e->dry) {
        uint64_t base = e->act_off[out.id];
        vaex_prof_begin(e);
        e->st = dk_buffer_fill(e->vae->ctx, e->arena, base + d, xrow, 0u);
        if (e->st == DK_OK)
            e->st = dk_buffer_fill(e->vae->ctx, e->arena, base + d + (uint64_t)(h + 1) * xrow, xrow, 0u);
        vaex_prof_end(e, "zero rows");
        vaex_dev_conv(e, a, x);
    }
    if (a->consume) dk__vae_free_act(e, a->in);
    return x;
}

/* The activation whose storage precedes roomy x's (its consumer's output), or -1. */
static int32_t vaex_room_of(const dk__vae_exec *e, dk__vae_act x) {
    int32_t i;
    if (x.id < 0) return -1;
    for (i = 0; i < e->nacts; i++)
        if (e->act_next[i] == x.id) return i;
    return -1;
}

/* The consumer of a roomy input: GroupNorm+SiLU in place, then the conv in bands
 * top-down as convs with pad_h 0 on row views.  Band [r0, r1) reads x's rows r0 -
 * 1 .. r1 (storage bytes from D + r0 * xrow on) and writes the output's bytes
 * below r1 * orow <= D + r0 * xrow: past no row that this band or a later one
 * reads (the barrier between bands orders the earlier band's reads). */
static dk__vae_act vaex_conv_shrink(dk__vae_exec *e, const dk__vae_conv_args *a, int32_t oid) {
    dk__vae_act x = a->in, out;
    uint64_t xrow = vaex_bytes(e, x.c, 1, x.w), orow, d, base;
    int32_t b, r0, r1;
    out.c = vaex_conv_cout(e, a);
    out.h = x.h;
    out.w = x.w;
    out.id = oid;
    if (a->gn_gamma < 0 || !a->consume || a->k != 3 || a->upsample != 1 || a->resid.id >= 0 ||
        vaex_bytes(e, out.c, out.h, out.w) != e->act_bytes[oid]) {
        e->st = dk__fail(e->vae->ctx, DK_ERR_INTERNAL,
                         "vae: a roomy activation's consumer is not the planned conv");
        return out;
    }
    orow = vaex_bytes(e, out.c, 1, x.w);
    d = vaex_room_gap(x.h, orow);
    b = (x.h + VAEX_SHRINK_BANDS - 1) / VAEX_SHRINK_BANDS;
    if (!e->dry) {
        base = e->act_off[oid];
        vaex_group_norm(e, x, a->gn_gamma, a->gn_beta, DK_ACT_SILU, x);
        for (r0 = 0; r0 < x.h && e->st == DK_OK; r0 = r1) {
            dk_tensor tx, ty;
            r1 = r0 + b < x.h ? r0 + b : x.h;
            tx = dk_tensor_nhwc(e->arena, base + d + (uint64_t)r0 * xrow, e->dtype, 1, x.c, r1 - r0 + 2, x.w);
            ty = dk_tensor_nhwc(e->arena, base + (uint64_t)r0 * orow, e->dtype, 1, out.c, r1 - r0, x.w);
            vaex_conv_run(e, a, &tx, NULL, 0, &ty);
        }
    }
    dk__vae_free_act(e, x);
    return out;
}

#undef VAEX_SHRINK_BANDS

/* Linear y = x W^T + b (+ residual) over token matrices. */
static void vaex_linear(dk__vae_exec *e, int32_t w, int32_t b, const dk_tensor *x, const dk_tensor *r, float scale,
                        const dk_tensor *y) {
    dk_matmul_desc d;
    dk_tensor tw = dk__vae_weight(e->ws, &e->vae->arch, w), tb = dk__vae_weight(e->ws, &e->vae->arch, b);
    if (e->st != DK_OK) return;
    dk_matmul_desc_init(&d);
    d.output_scale = scale;
    vaex_prof_begin(e);
    if (e->st == DK_OK) e->st = dk_linear(e->vae->ctx, &d, x, &tw, &tb, r, y);
    vaex_prof_end(e, "linear %d->%d n%lld%s", (int)x->shape[1], (int)y->shape[1], (long long)x->shape[0],
                  r ? " +res" : "");
}

/* The attention on token matrices: t[0] n (normalized x), t[1..3] q, k, v,
 * t[4] the attention output, t[5] x, t[6] out. */
static void vaex_attn_ops(dk__vae_exec *e, const dk_tensor *t, const dk__vae_attn *p) {
    dk_tensor hq = vaex_heads(&t[1]), hk = vaex_heads(&t[2]), hv = vaex_heads(&t[3]), ha = vaex_heads(&t[4]);
    dk_attention_desc d;
    vaex_linear(e, p->qw, p->qb, &t[0], NULL, 1.0f, &t[1]);
    vaex_linear(e, p->kw, p->kb, &t[0], NULL, 1.0f, &t[2]);
    vaex_linear(e, p->vw, p->vb, &t[0], NULL, 1.0f, &t[3]);
    dk_attention_desc_init(&d);
    vaex_prof_begin(e);
    if (e->st == DK_OK) e->st = dk_attention(e->vae->ctx, &d, &hq, &hk, &hv, &ha);
    vaex_prof_end(e, "attention n%lld d%lld", (long long)hq.shape[2], (long long)hq.shape[3]);
    /* x is at activation scale s, the attention output is not. */
    vaex_linear(e, p->ow, p->ob, &t[4], &t[5], e->s, &t[6]);
}

dk__vae_act dk__vae_attention(dk__vae_exec *e, dk__vae_act x, const dk__vae_attn *t) {
    int64_t n = (int64_t)x.h * x.w;
    dk__vae_act out;
    /* a backend may need one more tokens x C matrix for the attention (HIP's
     * wgmma kernel: V transposed), outside the plan */
    if (vaex_bytes(e, x.c, x.h, x.w) > e->scratch_reserve) e->scratch_reserve = vaex_bytes(e, x.c, x.h, x.w);
    if (!e->banded) {
        /* Untiled: buffers from the plan; a reuses n's entry once q, k, v exist. */
        dk__vae_act an = vaex_alloc(e, x.c, x.h, x.w), aq, ak, av, aa;
        vaex_group_norm(e, x, t->ng, t->nb, DK_ACT_NONE, an);
        aq = vaex_alloc(e, x.c, x.h, x.w);
        ak = vaex_alloc(e, x.c, x.h, x.w);
        av = vaex_alloc(e, x.c, x.h, x.w);
        aa = vaex_alloc(e, x.c, x.h, x.w);
        out = vaex_alloc(e, x.c, x.h, x.w);
        if (e->st == DK_OK && !e->dry) {
            const dk__vae_act acts[7] = {an, aq, ak, av, aa, x, out};
            dk_tensor tok[7];
            int32_t i;
            for (i = 0; i < 7; i++) tok[i] = vaex_tokens(e->arena, e->act_off[acts[i].id], e->dtype, n, x.c);
            vaex_attn_ops(e, tok, t);
        }
        dk__vae_free_act(e, an);
        dk__vae_free_act(e, aq);
        dk__vae_free_act(e, ak);
        dk__vae_free_act(e, av);
        dk__vae_free_act(e, aa);
        dk__vae_free_act(e, x);
        return out;
    }
    /* Banded: the attention is global, so it runs whole at latent resolution in
     * five device buffers (n/a share one, q/out share one), its GroupNorm too;
     * the output's statistics are kept for the next (banded) GroupNorm. */
    out = vaex_alloc(e, x.c, x.h, x.w);
    {
        uint64_t bytes = vaex_bytes(e, x.c, x.h, x.w);
        dk_buffer *b[5] = {NULL, NULL, NULL, NULL, NULL};
        int32_t i;
        if (5 * bytes > e->attn_bytes) e->attn_bytes = 5 * bytes;
        vaex_gn_stats_buf(e, DK__VAE_GN_FLOATS * sizeof(float));
        if (e->st == DK_OK && !e->dry) {
            for (i = 0; i < 5 && e->st == DK_OK; i++) e->st = dk_buffer_create(e->vae->ctx, bytes, &b[i]);
            if (e->st == DK_OK) e->st = dk_buffer_upload(e->vae->ctx, b[4], 0, e->act_host[x.id], bytes);
            if (e->st == DK_OK) {
                dk_group_norm_desc d = vaex_gn_desc(e, DK_ACT_NONE);
                dk_tensor tx = dk_tensor_nhwc(b[4], 0, e->dtype, 1, x.c, x.h, x.w);
                dk_tensor tn = dk_tensor_nhwc(b[0], 0, e->dtype, 1, x.c, x.h, x.w);
                dk_tensor tg = dk__vae_weight(e->ws, &e->vae->arch, t->ng), tb = dk__vae_weight(e->ws, &e->vae->arch, t->nb);
                e->st = dk_group_norm(e->vae->ctx, &d, &tx, &tg, &tb, &tn);
            }
            if (e->st == DK_OK) {
                const int32_t which[7] = {0, 1, 2, 3, 0, 4, 1}; /* n/a share b[0], q/out b[1] */
                dk_tensor tok[7];
                for (i = 0; i < 7; i++) tok[i] = vaex_tokens(b[which[i]], 0, e->dtype, n, x.c);
                vaex_attn_ops(e, tok, t);
            }
            if (e->st == DK_OK && x.c % VAEX_GROUPS == 0) {
                dk_group_norm_desc d = vaex_gn_desc(e, DK_ACT_NONE);
                dk_tensor to = dk_tensor_nhwc(b[1], 0, e->dtype, 1, x.c, x.h, x.w), st = vaex_gn_slot(e, 0);
                e->st = dk_group_norm_stats(e->vae->ctx, &d, &to, &st);
                if (e->st == DK_OK)
                    e->st = dk_buffer_download(e->vae->ctx, e->gn_stats, 0, e->act_stats + (size_t)out.id * DK__VAE_GN_FLOATS,
                                               DK__VAE_GN_FLOATS * sizeof(float));
                e->act_count[out.id] = (double)(x.c / VAEX_GROUPS) * (double)n;
            }
            if (e->st == DK_OK) e->st = dk_buffer_download(e->vae->ctx, b[1], 0, e->act_host[out.id], bytes);
            for (i = 0; i < 5; i++) dk_buffer_destroy(e->vae->ctx, b[i]);
        }
    }
    dk__vae_free_act(e, x);
    return out;
}

#undef VAEX_GROUPS
#undef VAEX_EPS
