/* Internal definitions shared by the core (src/) and the backends.
 *
 * Every .c file of the library is also concatenated into one translation unit
 * for header-only use (tools/amalgamate.py), so file-local names (static
 * functions, types, macros) carry a prefix of their file (e.g. cpuconv_) and
 * macros are #undef'd at the end of the file that defines them.
 */
#ifndef DK_INTERNAL_H
#define DK_INTERNAL_H

#include "../include/difkern.h"
#include "knobs.h"

#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <threads.h>

struct dk_backend_ops;
struct dk_weight_entry;

/* The three modes of the group_norm backend entry (backends/backend.h). */
enum { DK__GN_FULL = 0, DK__GN_STATS = 1, DK__GN_APPLY = 2 };

struct dk_buffer {
    uint64_t size;        /* bytes */
    uint64_t id;          /* unique in the process, never reused (cache keys) */
    dk_context *owner;    /* the context that made it: using it with another is an error */
    uint64_t generation;  /* bumped whenever difkern writes the buffer */
    int wrapped;          /* memory owned by the caller */
    void *impl;           /* the backend's handle */
};

struct dk_context {
    const struct dk_backend_ops *ops;
    void *backend;                 /* the backend's state */
    /* Every public call on the context holds this recursive lock, so one context may
     * be shared by threads: their calls run one at a time (include/difkern.h). */
    mtx_t lock;
    uint64_t serial;               /* unique in the process: tells contexts apart in
                                      a thread's error slot, also after address reuse */
    int timer_running;             /* dk_timer_begin seen, dk_timer_end not yet */
    char error[1024];
    char device_name[256];
    char description[512];
    uint64_t mem_current, mem_peak;
    struct dk_weight_entry *weights; /* prepared-weight cache (src/weights.c) */
    uint64_t weights_bytes;
    struct dk_host_block *host;      /* live dk_host_alloc blocks (src/core.c) */
    uint32_t nhost, caphost;
    dk_knobs knobs;                  /* environment and options.settings, parsed at creation */
    dk_buffer *conv3d_scratch;       /* dk_conv3d's staged frames (src/conv3d.c), grown only */
};

/* Large host blocks for a runtime to pin (src/host_pages.c): 2 MiB-aligned,
 * huge pages where Linux gives them, already faulted in.  NULL when out of memory. */
void *dk__host_pages_alloc(uint64_t size);
void dk__host_pages_free(void *p);

/* A dk_host_alloc block: handle is the backend's (pinned) or NULL (malloc). */
typedef struct dk_host_block {
    void *ptr, *handle;
    uint64_t size;
    int pinned;
} dk_host_block;

/* The pinned block that holds [p, p + size), if any: its handle and the
 * offset of p in it (for backends that copy from or into it directly). */
int dk__host_find(const dk_context *ctx, const void *p, uint64_t size, void **handle, uint64_t *offset);

/* Record an error message (printf-style) on ctx, or in the thread's
 * context-less slot when ctx is NULL; returns status so callers can
 * `return dk__fail(ctx, DK_ERR_..., "...")`. */
dk_status dk__fail(dk_context *ctx, dk_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void dk__clear_error(dk_context *ctx);

/* The context's lock (recursive): every public entry point that takes a context
 * holds it while it runs (src/core.c, src/ops.c). */
void dk__lock(dk_context *ctx);
void dk__unlock(dk_context *ctx);
/* Unlocks ctx and returns st: `return dk__unlock_ret(ctx, st);`. */
dk_status dk__unlock_ret(dk_context *ctx, dk_status st);

/* DK_OK when buffer belongs to ctx, else DK_ERR_INVALID_ARGUMENT through
 * dk__fail naming fn and what (e.g. "x.buffer"). */
dk_status dk__check_owner(dk_context *ctx, const char *fn, const char *what, const dk_buffer *buffer);

/* Bounded string copy that always terminates. */
void dk__strlcpy(char *dst, const char *src, size_t cap);
/* Online cores; 1 where the platform gives no answer. */
int32_t dk__core_count(void);
/* The host clock (TIME_UTC) in milliseconds. */
double dk__now_ms(void);

/* Device bytes a backend took or gave back outside dk_buffer (scratch), so that
 * dk_memory_usage counts them. */
void dk__mem_account(dk_context *ctx, int64_t delta);

/* ---- prepared-weight cache (src/weights.c) ----
 * A backend keeps repacked weights here; an entry is found again only while the
 * buffer's generation is unchanged, and is freed when the buffer is written or
 * destroyed, or the context is destroyed. */
typedef struct dk_weight_key {
    uint64_t buffer_id, generation, offset;
    int32_t dtype, ndim, use, variant; /* variant: the backend's packing kind */
    int64_t shape[DK_MAX_DIMS], strides[DK_MAX_DIMS];
} dk_weight_key;

typedef void (*dk_weight_free_fn)(dk_context *ctx, void *data);

void dk__weight_key(dk_weight_key *key, const dk_tensor *w, int32_t use, int32_t variant);
void *dk__weight_find(dk_context *ctx, const dk_weight_key *key);
/* Takes ownership of data (freed with free_fn, also on failure). */
dk_status dk__weight_insert(dk_context *ctx, const dk_weight_key *key, void *data,
                            uint64_t bytes, dk_weight_free_fn free_fn);
void dk__weight_drop_buffer(dk_context *ctx, const dk_buffer *buffer);
void dk__weight_drop_all(dk_context *ctx);

/* Nearest-2x upsample + stride-1, dilation-1 conv2d as four phase convs on the
 * original input (src/conv_up2.c).  Output row 2i + a reads input rows
 * i + off0[a] + t, t < taps[a], with the summed kernel rows of virtual row
 * a * tmax + t (likewise along w). */
typedef struct dk_up2_axis {
    int64_t off0[2], taps[2], tmax;
} dk_up2_axis;
void dk__up2_axis(int64_t k, int64_t pad, dk_up2_axis *ax);
/* The summed weights of w [Cout, Cin/g, KH, KW] as a [Cout, Cin/g, 2*tmax_h,
 * 2*tmax_w] array at out (element strides os, w's dtype; taps a phase lacks
 * are 0), from a host copy of w. */
dk_status dk__up2_weights(dk_context *ctx, const dk_tensor *w, int64_t pad_h, int64_t pad_w, void *out,
                          const int64_t os[4]);

/* A new buffer id, unique in the process (dk_buffer.id). */
uint64_t dk__next_buffer_id(void);

/* Mark a buffer as written by difkern (bumps generation, drops prepared weights). */
void dk__buffer_written(dk_context *ctx, dk_buffer *buffer);

/* ---- numeric helpers shared by backends ---- */
float dk__act_f32(dk_activation act, float x);
double dk__act_f64(dk_activation act, double x);

/* Half-precision decoding, inline for kernels' inner loops (the public
 * dk_f16_to_f32 / dk_bf16_to_f32 call these). */
static inline float dk__bits_to_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline float dk__bf16_to_f32(uint16_t h) { return dk__bits_to_f32((uint32_t)h << 16); }
static inline float dk__f16_to_f32(uint16_t h) {
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16, e = ((uint32_t)h >> 10) & 0x1fu, m = (uint32_t)h & 0x3ffu;
    if (e == 0) {
        float v = (float)m * (1.0f / 16777216.0f); /* zero and subnormals: m * 2^-24 */
        return sign ? -v : v;
    }
    if (e == 31) return dk__bits_to_f32(sign | 0x7f800000u | (m << 13));
    return dk__bits_to_f32(sign | ((e - 15u + 127u) << 23) | (m << 13));
}

/* Element address arithmetic for strided views. */
/* A matrix [R, C] or batch [B, R, C] t as the channels-last image [B, C, 1, R] of a
 * 1x1 conv (R pixels of C channels; batch stride 0 when 2-D): how the GPU backends
 * run dk_matmul on their conv GEMMs. */
static inline dk_tensor dk__rows_as_image(const dk_tensor *t) {
    dk_tensor v = *t;
    int32_t o = t->ndim - 2;
    v.ndim = 4;
    v.shape[0] = t->ndim == 3 ? t->shape[0] : 1;
    v.strides[0] = t->ndim == 3 ? t->strides[0] : 0;
    v.shape[1] = t->shape[o + 1];
    v.strides[1] = t->strides[o + 1];
    v.shape[2] = 1;
    v.strides[2] = 0;
    v.shape[3] = t->shape[o];
    v.strides[3] = t->strides[o];
    return v;
}

/* dk_matmul as a 1x1 conv on a GPU backend's conv GEMM: a's rows are the pixels
 * (K channels) of one 1 x M image per batch, b's last two dimensions [K, N] (one b
 * for the whole batch; the caller checks) the weight [Cout = N, Cin = K, 1, 1];
 * y and the residual are images like a. */
typedef struct dk__matmul_conv {
    dk_tensor x, w, y, r;
    dk_conv2d_desc desc;
} dk__matmul_conv;

static inline void dk__matmul_as_conv(const dk_matmul_desc *d, const dk_tensor *a, const dk_tensor *b,
                                      const dk_tensor *residual, const dk_tensor *y, dk__matmul_conv *c) {
    int32_t o = b->ndim - 2;
    c->x = dk__rows_as_image(a);
    c->w = *b;
    c->w.ndim = 4;
    c->w.shape[0] = b->shape[o + 1];
    c->w.strides[0] = b->strides[o + 1];
    c->w.shape[1] = b->shape[o];
    c->w.strides[1] = b->strides[o];
    c->w.shape[2] = c->w.shape[3] = 1;
    c->w.strides[2] = c->w.strides[3] = 0;
    c->y = dk__rows_as_image(y);
    c->r = residual ? dk__rows_as_image(residual) : c->y;
    dk_conv2d_desc_init(&c->desc);
    c->desc.pad_top = c->desc.pad_bottom = c->desc.pad_left = c->desc.pad_right = 0; /* resolved, as validated */
    c->desc.activation = d->activation;
    c->desc.post_activation = d->post_activation;
    c->desc.output_scale = d->output_scale;
    c->desc.residual_scale = d->residual_scale;
}

static inline int64_t dk__offset4(const dk_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return i0 * t->strides[0] + i1 * t->strides[1] + i2 * t->strides[2] + i3 * t->strides[3];
}

/* The dimension order in which an elementwise kernel walks y's 4-D logical index
 * space, outermost first: dimensions by decreasing |stride| of y (size-1 ones
 * first, ties in logical order), so that consecutive threads touch consecutive
 * elements of y in any layout (in logical order an NHWC add ran ~80x slower than
 * NCHW on the H100).  Backends permute shape and strides by it. */
static inline void dk__elt_order(const int64_t shape[4], const int64_t strides[4], int32_t order[4]) {
    int32_t i, j;
    for (i = 0; i < 4; i++) order[i] = i;
    for (i = 1; i < 4; i++)
        for (j = i; j > 0; j--) {
            int32_t a = order[j - 1], b = order[j], t;
            int64_t ka = shape[a] == 1 ? INT64_MAX : (strides[a] < 0 ? -strides[a] : strides[a]);
            int64_t kb = shape[b] == 1 ? INT64_MAX : (strides[b] < 0 ? -strides[b] : strides[b]);
            if (ka >= kb) break;
            t = order[j - 1];
            order[j - 1] = order[j];
            order[j] = t;
        }
}

/* v[i] = old v[order[i]] for a 4-vector. */
static inline void dk__permute4(int64_t v[4], const int32_t order[4]) {
    int64_t t[4];
    int32_t i;
    for (i = 0; i < 4; i++) t[i] = v[order[i]];
    for (i = 0; i < 4; i++) v[i] = t[i];
}

/* Launch planning shared by the backends. */
#include "plan.h"

#endif /* DK_INTERNAL_H */
