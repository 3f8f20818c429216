/* Shared by the CPU backend's files: state, the thread pool, element access. */
#ifndef DK_CPU_INTERNAL_H
#define DK_CPU_INTERNAL_H

#include "../backend.h"

#include <stdatomic.h>
#include <stdlib.h>

/* A CPU buffer is host memory: buffer->impl points at its first byte. */
static inline unsigned char *dk__cpu_ptr(const dk_buffer *b) { return (unsigned char *)b->impl; }

/* Address of element 0 of a view. */
static inline void *dk__cpu_base(const dk_tensor *t) { return dk__cpu_ptr(t->buffer) + t->offset; }

/* ---- the thread pool (cpu_threads.c) ----
 * Runs fn(arg, i) for every i in [0, n) across the context's workers and the
 * calling thread; returns when all have finished.  Chunks are handed out
 * dynamically, so uneven work balances.  Nested calls run serially. */
typedef void (*dk_cpu_task_fn)(void *arg, int64_t index);
typedef struct dk_cpu_pool dk_cpu_pool;

dk_status dk__cpu_pool_create(dk_context *ctx, int32_t num_threads, dk_cpu_pool **out);
void dk__cpu_pool_destroy(dk_cpu_pool *pool);
int32_t dk__cpu_pool_size(const dk_cpu_pool *pool); /* workers + the caller */
void dk__cpu_parallel_for(dk_context *ctx, int64_t n, dk_cpu_task_fn fn, void *arg);

typedef struct dk_cpu_state {
    dk_cpu_pool *pool;
    double timer_start_ms;
} dk_cpu_state;

static inline dk_cpu_state *dk__cpu_state(dk_context *ctx) { return (dk_cpu_state *)ctx->backend; }

/* ---- element access for any dtype ---- */
static inline float dk__cpu_load(const void *base, dk_dtype t, int64_t i) {
    switch (t) {
    case DK_F32: return ((const float *)base)[i];
    case DK_F16: return dk__f16_to_f32(((const uint16_t *)base)[i]);
    case DK_BF16: return dk__bf16_to_f32(((const uint16_t *)base)[i]);
    }
    return 0.0f;
}

static inline void dk__cpu_store(void *base, dk_dtype t, int64_t i, float v) {
    switch (t) {
    case DK_F32: ((float *)base)[i] = v; break;
    case DK_F16: ((uint16_t *)base)[i] = dk_f32_to_f16(v); break;
    case DK_BF16: ((uint16_t *)base)[i] = dk_f32_to_bf16(v); break;
    }
}

/* v[j] = element off + j * stride of base (any dtype) as float, j < n; the
 * dtype switch sits outside the loop (cpu_norm.c). */
void dk__cpu_load_strided(const void *base, dk_dtype t, int64_t off, int64_t stride, int64_t n, float *v);
/* element off + j * stride of base = v[j] (rounded to nearest even), j < n. */
void dk__cpu_store_strided(void *base, dk_dtype t, int64_t off, int64_t stride, int64_t n, const float *v);

/* ---- vectorizable math for the row loops (softmax, SiLU) ----
 * GCC if-converts (and so vectorizes) the clamps in dk__cpu_exp only without
 * trapping-math; callers' loops carry the same option, or GCC would not inline it. */
#if defined(__GNUC__) && !defined(__clang__)
#define DK_CPU_VECTORIZE __attribute__((optimize("no-trapping-math")))
#else
#define DK_CPU_VECTORIZE
#endif

/* exp(x), branch-free so that loops over it vectorize (a libm expf call per
 * element cost more than both attention GEMMs at head_dim 64).  Cody-Waite
 * reduction x = n ln2 + r, |r| <= ln2/2, and Cephes' degree-6 polynomial:
 * ~1 ulp on [-87, 88]; below, ~1e-38 instead of 0; above, ~1.7e38 instead of inf. */
DK_CPU_VECTORIZE
static inline float dk__cpu_exp(float x) {
    union { int32_t i; float f; } scale;
    float n, r, p, xc;
    /* NaN clamps to -87 here (converting NaN to int would be undefined) and is
     * passed through at the end. */
    xc = !(x >= -87.0f) ? -87.0f : x;
    xc = xc > 88.0f ? 88.0f : xc;
    /* round to nearest: adding 1.5 * 2^23 leaves the integer part in the mantissa */
    n = (xc * 1.44269504089f + 12582912.0f) - 12582912.0f;
    r = xc - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    scale.i = ((int32_t)n + 127) * (1 << 23);
    return x == x ? p * scale.f : x;
}

/* ---- the GEMM core (cpu_gemm.c) ----
 * C[rows, cols] = A[rows, k] * B[k, cols] in fp32.  A is packed once into
 * panels of DK_CPU_MR rows (dk__cpu_pack_a); B is packed on the fly by the
 * op's pack_b callback, so convolutions never materialize im2col beyond one
 * KC x NC block.  Each op maps its own indexing onto these callbacks. */
#define DK_CPU_MR 6
#define DK_CPU_NR 32
#define DK_CPU_KC 256
#define DK_CPU_NC 128

typedef struct dk_cpu_gemm {
    int64_t rows, cols, k;
    const float *apack;  /* dk__cpu_packed_a_size(rows, k) floats */
    /* Write B[k0 + kk][c0 + j] to dst[(j / NR) * kc * NR + kk * NR + j % NR] for
     * kk < kc, j < round_up(nc, NR); columns >= cols must be written as 0. */
    void (*pack_b)(const void *user, int64_t k0, int64_t kc, int64_t c0, int64_t nc, float *dst);
    /* Consume the finished C block: c[r * ldc + j] = C[r][c0 + j], r < rows, j < nc. */
    void (*store)(const void *user, int64_t c0, int64_t nc, const float *c, int64_t ldc);
    const void *user;
} dk_cpu_gemm;

int64_t dk__cpu_packed_a_size(int64_t rows, int64_t k);
/* dst[p * k * MR + kk * MR + i] = A(p * MR + i, kk), zero past rows; A(r, kk) = src[r * rs + kk * ks]. */
void dk__cpu_pack_a_f32(float *dst, const float *src, int64_t rows, int64_t k, int64_t rs, int64_t ks);
/* Runs columns [c0, c0 + nc) of g (nc <= DK_CPU_NC) on the calling thread.
 * Returns 0, or -1 when its scratch memory cannot be allocated. */
int dk__cpu_gemm_columns(const dk_cpu_gemm *g, int64_t c0, int64_t nc);

/* The epilogue of conv / conv_transpose / matmul on one value. */
static inline float dk__cpu_epilogue(float acc, float bias, dk_activation act, float out_scale,
                                     float res_scale, float residual, dk_activation post_act) {
    return dk__act_f32(post_act, out_scale * dk__act_f32(act, acc + bias) + res_scale * residual);
}


/* ---- op entry points, one file per family ---- */
/* cpu_conv.c */
dk_backend_conv2d_fn dk__cpu_conv2d;
dk_backend_conv_transpose2d_fn dk__cpu_conv_transpose2d;
/* cpu_matmul.c */
dk_backend_matmul_fn dk__cpu_matmul;
/* cpu_attention.c */
dk_backend_attention_fn dk__cpu_attention;
/* cpu_conv.c: prepare_weight (repacks conv / conv_transpose weights; matmul's via cpu_matmul.c) */
dk_backend_prepare_weight_fn dk__cpu_prepare_weight;
dk_status dk__cpu_matmul_prepare(dk_context *ctx, const dk_tensor *b);
/* cpu_norm.c */
dk_backend_group_norm_fn dk__cpu_group_norm;
dk_backend_rms_norm_fn dk__cpu_rms_norm;
dk_backend_layer_norm_fn dk__cpu_layer_norm;
/* cpu_elementwise.c */
dk_backend_add_fn dk__cpu_add;
dk_backend_upsample_nearest_fn dk__cpu_upsample_nearest;
dk_backend_convert_fn dk__cpu_convert;

#endif /* DK_CPU_INTERNAL_H */
