/* Host-side tensors for the harness: device buffers ("stores") holding one or
 * more strided views, the host image of every store, random dtype-rounded
 * data, and byte-exact checks that nothing outside an output view changed.
 */
#ifndef HT_TENSOR_H
#define HT_TENSOR_H

#include <difkern.h>

#define HT_MAX_STORES 6
#define HT_MAX_TENSORS 8
#define HT_POISON 0x7fc07fc0u   /* NaN in f32, f16 and bf16 alike */
#define HT_GUARD_ELEMS 16       /* poisoned elements before and after every store's views */

typedef struct ht_rng { uint64_t s; } ht_rng;

void ht_rng_seed(ht_rng *r, uint64_t seed, const char *name);
double ht_rng_uniform(ht_rng *r); /* in [-1, 1) */

/* Value v rounded to dtype, and its encoding / decoding. */
double ht_round(dk_dtype t, double v);
void ht_encode(dk_dtype t, double v, unsigned char *dst);
double ht_decode(dk_dtype t, const unsigned char *src);

typedef struct ht_tensor {
    int used;
    int store;            /* index into the set's stores */
    int is_output;        /* written by the op (its store is poisoned, not uploaded) */
    dk_tensor t;          /* .buffer set by ht_set_create */
    int64_t elem_offset;  /* elements after the store's leading guard */
    double scale, shift;  /* inputs: values are shift + scale * U(-1, 1), dtype-rounded */
    double grid;          /* > 0: values are first rounded to multiples of grid */
    double row_ramp;      /* 4-D inputs: + row_ramp * h / H (rows differ in mean) */
    double *val;          /* logical dense values (inputs: generated; outputs: downloaded) */
    int64_t numel;
} ht_tensor;

typedef struct ht_store {
    int used;
    int output;           /* holds an output view: poisoned with dk_buffer_fill */
    uint64_t size;
    dk_buffer *buf;
    unsigned char *image; /* what the store must hold outside the output view */
} ht_store;

typedef struct ht_set {
    ht_store stores[HT_MAX_STORES];
    ht_tensor t[HT_MAX_TENSORS];
} ht_set;

/* Declares tensor slot i: a view of store s (ndim, shape, strides in elements,
 * elem_offset), dtype t.  Inputs get values shift + scale * U(-1, 1). */
void ht_define(ht_set *set, int i, int s, dk_dtype t, int32_t ndim, const int64_t *shape,
               const int64_t *strides, int64_t elem_offset, double scale, double shift);
void ht_define_output(ht_set *set, int i, int s, dk_dtype t, int32_t ndim, const int64_t *shape,
                      const int64_t *strides, int64_t elem_offset);

/* Strides of a logical [n, c, h, w] image in layout (HC_NCHW 1 / HC_NHWC 2 of
 * cases.h), with `gap` extra elements after every row (NCHW) or pixel (NHWC). */
void ht_image_strides(int layout, int64_t gap, const int64_t shape[4], int64_t strides[4]);
/* Strides of a logical [n, c, t, h, w] video in layout (HC_NCDHW 3 / HC_NDHWC 4),
 * with `gap` extra elements after every row (NCDHW) or pixel (NDHWC). */
void ht_video_strides(int layout, int64_t gap, const int64_t shape[5], int64_t strides[5]);
/* Row-major strides with `gap` extra elements after every innermost row. */
void ht_rowmajor_strides(int32_t ndim, const int64_t *shape, int64_t gap, int64_t *strides);

/* Gives every size-1 dim of every declared tensor the stride INT64_MAX: a
 * stride no element address uses, so any value is valid and the op's result
 * must not change (dk_test_runner --size1-strides). */
void ht_set_size1_strides_max(ht_set *set);
/* Moves every declared view one element further into its store: a view
 * that started on 16 bytes no longer does (the listed cases mostly do), so
 * vector paths must see it and step aside (dk_test_runner --misaligned).
 * Views of one store move together. */
void ht_set_misalign(ht_set *set);
/* Generates the inputs' values and writes them into the store images. */
void ht_set_generate(ht_set *set, ht_rng *rng);
/* Regenerates one input tensor's values (e.g. a new weight) into its image. */
void ht_regenerate(ht_set *set, int i, ht_rng *rng);

/* Creates the buffers and uploads inputs / poisons outputs.  Returns the first
 * failing status; *what names the failed call. */
dk_status ht_set_create(dk_context *ctx, ht_set *set, const char **what);
dk_status ht_set_upload(dk_context *ctx, ht_set *set, const char **what);

/* Downloads every store: decodes the output slot's values into its val, and
 * checks that every byte outside that output view equals the store's image.
 * Returns DK_OK and sets *bad_bytes (count of changed bytes; *bad_store the
 * first such store), or a failing status from download. */
dk_status ht_set_check(dk_context *ctx, ht_set *set, int out_slot, int64_t *bad_bytes,
                       int *bad_store);

void ht_set_destroy(dk_context *ctx, ht_set *set);

#endif /* HT_TENSOR_H */
