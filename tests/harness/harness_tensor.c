/* Host-side tensors for the harness (see harness_tensor.h). */
#include "harness_tensor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ random */

static uint64_t ht_splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Seeded by the run's seed and the case name, so a case draws the same data
 * whether it runs alone (--case) or in the whole list. */
void ht_rng_seed(ht_rng *r, uint64_t seed, const char *name) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *name; name++) h = (h ^ (unsigned char)*name) * 1099511628211ull;
    r->s = seed ^ h;
    (void)ht_splitmix(&r->s);
}

double ht_rng_uniform(ht_rng *r) {
    return (double)(ht_splitmix(&r->s) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* ------------------------------------------------------------------ dtypes */

double ht_round(dk_dtype t, double v) {
    switch (t) {
    case DK_F32: return (double)(float)v;
    case DK_F16: return (double)dk_f16_to_f32(dk_f32_to_f16((float)v));
    case DK_BF16: return (double)dk_bf16_to_f32(dk_f32_to_bf16((float)v));
    }
    return v;
}

void ht_encode(dk_dtype t, double v, unsigned char *dst) {
    if (t == DK_F32) {
        float f = (float)v;
        memcpy(dst, &f, 4);
    } else {
        uint16_t h = t == DK_F16 ? dk_f32_to_f16((float)v) : dk_f32_to_bf16((float)v);
        memcpy(dst, &h, 2);
    }
}

double ht_decode(dk_dtype t, const unsigned char *src) {
    uint16_t h;
    if (t == DK_F32) {
        float f;
        memcpy(&f, src, 4);
        return (double)f;
    }
    memcpy(&h, src, 2);
    return (double)(t == DK_F16 ? dk_f16_to_f32(h) : dk_bf16_to_f32(h));
}

/* ----------------------------------------------------------------- strides */

void ht_image_strides(int layout, int64_t gap, const int64_t shape[4], int64_t strides[4]) {
    int64_t c = shape[1], h = shape[2], w = shape[3];
    if (layout == 2) { /* NHWC: C fastest, pixel stride C + gap */
        strides[1] = 1;
        strides[3] = c + gap;
        strides[2] = w * strides[3];
        strides[0] = h * strides[2];
    } else { /* NCHW: W fastest, row stride W + gap */
        strides[3] = 1;
        strides[2] = w + gap;
        strides[1] = h * strides[2];
        strides[0] = c * strides[1];
    }
}

void ht_video_strides(int layout, int64_t gap, const int64_t shape[5], int64_t strides[5]) {
    int64_t c = shape[1], t = shape[2], h = shape[3], w = shape[4];
    if (layout == 4) { /* NDHWC: C fastest, pixel stride C + gap */
        strides[1] = 1;
        strides[4] = c + gap;
        strides[3] = w * strides[4];
        strides[2] = h * strides[3];
        strides[0] = t * strides[2];
    } else { /* NCDHW: W fastest, row stride W + gap */
        strides[4] = 1;
        strides[3] = w + gap;
        strides[2] = h * strides[3];
        strides[1] = t * strides[2];
        strides[0] = c * strides[1];
    }
}

void ht_rowmajor_strides(int32_t ndim, const int64_t *shape, int64_t gap, int64_t *strides) {
    int32_t i;
    int64_t s = 1;
    for (i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i];
        if (i == ndim - 1) s += ndim > 1 ? gap : 0;
    }
}

/* ----------------------------------------------------------------- defines */

static void ht_define_any(ht_set *set, int i, int s, dk_dtype t, int32_t ndim, const int64_t *shape,
                          const int64_t *strides, int64_t elem_offset, int is_output, double scale,
                          double shift) {
    ht_tensor *x = &set->t[i];
    int32_t d;
    memset(x, 0, sizeof *x);
    x->used = 1;
    x->store = s;
    x->is_output = is_output;
    x->t.dtype = t;
    x->t.ndim = ndim;
    x->numel = 1;
    for (d = 0; d < DK_MAX_DIMS; d++) {
        x->t.shape[d] = d < ndim ? shape[d] : 1;
        x->t.strides[d] = d < ndim ? strides[d] : 0;
        if (d < ndim) x->numel *= shape[d];
    }
    x->elem_offset = elem_offset;
    x->scale = scale;
    x->shift = shift;
    x->val = (double *)calloc((size_t)x->numel, sizeof(double));
    set->stores[s].used = 1;
}

void ht_define(ht_set *set, int i, int s, dk_dtype t, int32_t ndim, const int64_t *shape,
               const int64_t *strides, int64_t elem_offset, double scale, double shift) {
    ht_define_any(set, i, s, t, ndim, shape, strides, elem_offset, 0, scale, shift);
}

void ht_define_output(ht_set *set, int i, int s, dk_dtype t, int32_t ndim, const int64_t *shape,
                      const int64_t *strides, int64_t elem_offset) {
    ht_define_any(set, i, s, t, ndim, shape, strides, elem_offset, 1, 0.0, 0.0);
}

/* Byte offset (from the buffer start) of logical element `flat` of x. */
static uint64_t ht_byte_of(const ht_tensor *x, int64_t flat) {
    int64_t e = 0;
    int32_t d;
    for (d = x->t.ndim - 1; d >= 0; d--) {
        e += (flat % x->t.shape[d]) * x->t.strides[d];
        flat /= x->t.shape[d];
    }
    return x->t.offset + (uint64_t)e * dk_dtype_size(x->t.dtype);
}

/* ---------------------------------------------------------------- data */

static void ht_fill_values(ht_set *set, ht_tensor *x, ht_rng *rng) {
    unsigned char *img = set->stores[x->store].image;
    int64_t i;
    for (i = 0; i < x->numel; i++) {
        double v = x->shift + x->scale * ht_rng_uniform(rng);
        if (x->row_ramp != 0.0 && x->t.ndim == 4)
            v += x->row_ramp * (double)((i / x->t.shape[3]) % x->t.shape[2]) / (double)x->t.shape[2];
        if (x->grid > 0.0) v = floor(v / x->grid + 0.5) * x->grid;
        x->val[i] = ht_round(x->t.dtype, v);
        if (img) ht_encode(x->t.dtype, x->val[i], img + ht_byte_of(x, i));
    }
}

void ht_set_size1_strides_max(ht_set *set) {
    int i;
    int32_t d;
    for (i = 0; i < HT_MAX_TENSORS; i++)
        for (d = 0; set->t[i].used && d < set->t[i].t.ndim; d++)
            if (set->t[i].t.shape[d] == 1) set->t[i].t.strides[d] = INT64_MAX;
}

void ht_set_misalign(ht_set *set) {
    int i;
    for (i = 0; i < HT_MAX_TENSORS; i++)
        if (set->t[i].used) set->t[i].elem_offset += 1;
}

void ht_set_generate(ht_set *set, ht_rng *rng) {
    int i;
    for (i = 0; i < HT_MAX_TENSORS; i++)
        if (set->t[i].used && !set->t[i].is_output) ht_fill_values(set, &set->t[i], rng);
}

void ht_regenerate(ht_set *set, int i, ht_rng *rng) { ht_fill_values(set, &set->t[i], rng); }

/* -------------------------------------------------------------- buffers */

/* Records which call failed and passes its status on. */
static dk_status ht_failed(dk_status status, const char *call, const char **what) {
    *what = call;
    return status;
}

dk_status ht_set_create(dk_context *ctx, ht_set *set, const char **what) {
    int s, i;
    for (s = 0; s < HT_MAX_STORES; s++) {
        ht_store *st = &set->stores[s];
        uint64_t end = 0, b;
        int has_input = 0, has_output = 0;
        dk_status status;
        if (!st->used) continue;
        for (i = 0; i < HT_MAX_TENSORS; i++) {
            ht_tensor *x = &set->t[i];
            uint64_t esize, extent = 1, stop;
            int32_t d;
            if (!x->used || x->store != s) continue;
            if (!x->val) return ht_failed(DK_ERR_OUT_OF_MEMORY, "host calloc", what);
            esize = dk_dtype_size(x->t.dtype);
            x->t.offset = HT_GUARD_ELEMS * 4 + (uint64_t)x->elem_offset * esize;
            for (d = 0; d < x->t.ndim; d++) extent += (uint64_t)((x->t.shape[d] - 1) * x->t.strides[d]);
            stop = x->t.offset + extent * esize;
            if (stop > end) end = stop;
            if (x->is_output) has_output = 1;
            else has_input = 1;
        }
        st->output = has_output && !has_input;
        st->size = (end + HT_GUARD_ELEMS * 4 + 3) / 4 * 4;
        st->image = (unsigned char *)malloc((size_t)st->size);
        if (!st->image) return ht_failed(DK_ERR_OUT_OF_MEMORY, "host malloc", what);
        for (b = 0; b < st->size; b += 4) {
            uint32_t p = HT_POISON;
            memcpy(st->image + b, &p, 4);
        }
        status = dk_buffer_create(ctx, st->size, &st->buf);
        if (status != DK_OK) return ht_failed(status, "dk_buffer_create", what);
        for (i = 0; i < HT_MAX_TENSORS; i++)
            if (set->t[i].used && set->t[i].store == s) set->t[i].t.buffer = st->buf;
    }
    return DK_OK;
}

dk_status ht_set_upload(dk_context *ctx, ht_set *set, const char **what) {
    int s;
    for (s = 0; s < HT_MAX_STORES; s++) {
        ht_store *st = &set->stores[s];
        dk_status status;
        if (!st->used) continue;
        if (st->output) {
            status = dk_buffer_fill(ctx, st->buf, 0, st->size, HT_POISON);
            if (status != DK_OK) return ht_failed(status, "dk_buffer_fill", what);
        } else {
            status = dk_buffer_upload(ctx, st->buf, 0, st->image, st->size);
            if (status != DK_OK) return ht_failed(status, "dk_buffer_upload", what);
        }
    }
    return DK_OK;
}

dk_status ht_set_check(dk_context *ctx, ht_set *set, int out_slot, int64_t *bad_bytes,
                       int *bad_store) {
    ht_tensor *out = &set->t[out_slot];
    int s;
    *bad_bytes = 0;
    *bad_store = -1;
    for (s = 0; s < HT_MAX_STORES; s++) {
        ht_store *st = &set->stores[s];
        unsigned char *got, *mask;
        uint64_t b;
        int64_t i;
        dk_status status;
        if (!st->used) continue;
        got = (unsigned char *)malloc((size_t)st->size);
        mask = (unsigned char *)calloc((size_t)st->size, 1);
        if (!got || !mask) {
            free(got);
            free(mask);
            return DK_ERR_OUT_OF_MEMORY;
        }
        status = dk_buffer_download(ctx, st->buf, 0, got, st->size);
        if (status != DK_OK) {
            free(got);
            free(mask);
            return status;
        }
        if (out->store == s) {
            size_t esize = dk_dtype_size(out->t.dtype);
            for (i = 0; i < out->numel; i++) {
                uint64_t at = ht_byte_of(out, i);
                out->val[i] = ht_decode(out->t.dtype, got + at);
                memset(mask + at, 1, esize);
            }
        }
        for (b = 0; b < st->size; b++)
            if (!mask[b] && got[b] != st->image[b]) {
                if (*bad_store < 0) *bad_store = s;
                (*bad_bytes)++;
            }
        free(got);
        free(mask);
    }
    return DK_OK;
}

void ht_set_destroy(dk_context *ctx, ht_set *set) {
    int i;
    for (i = 0; i < HT_MAX_STORES; i++) {
        dk_buffer_destroy(ctx, set->stores[i].buf);
        free(set->stores[i].image);
    }
    for (i = 0; i < HT_MAX_TENSORS; i++) free(set->t[i].val);
    memset(set, 0, sizeof *set);
}
