/* The internal backend interface: one table of function pointers per backend.
 *
 * The core (src/) validates every argument before it calls a table entry, so an
 * entry may assume: tensors are in bounds, shapes agree with the op's rules,
 * dtypes are valid, outputs do not overlap inputs (except the in-place cases an
 * op allows: for conv2d, conv_transpose2d and matmul, the residual may be the
 * very view of y, so each output element must read its residual before that
 * element is written), descriptors hold valid values.  conv2d gets its
 * descriptor resolved (src/validate.c): pad_top, pad_bottom, pad_left and
 * pad_right all set, pad_h = pad_top and pad_w = pad_left; y's shape carries the
 * bottom and right padding.  An entry that cannot do a valid
 * request returns DK_ERR_UNSUPPORTED through dk__fail with a message, never a
 * wrong answer.  Adding a backend means filling this table; nothing else changes.
 */
#ifndef DK_BACKEND_H
#define DK_BACKEND_H

#include "../src/dk_internal.h"

/* The entries' function types: the one declaration of each signature.  A
 * backend declares its entries with them (dk_backend_conv2d_fn dk__cpu_conv2d;)
 * and the table holds pointers to them. */

/* Sets ctx->backend, ctx->device_name, ctx->description.  Returns
 * DK_ERR_BACKEND_UNAVAILABLE (with a message) when the machine lacks it. */
typedef dk_status dk_backend_create_fn(dk_context *ctx, const dk_context_options *options);
typedef void dk_backend_destroy_fn(dk_context *ctx);
typedef dk_status dk_backend_sync_fn(dk_context *ctx);

/* buffer->size is set; the entry sets buffer->impl. */
typedef dk_status dk_backend_buffer_create_fn(dk_context *ctx, dk_buffer *buffer);
typedef dk_status dk_backend_buffer_wrap_fn(dk_context *ctx, dk_buffer *buffer, const dk_external_memory *memory);
typedef void dk_backend_buffer_destroy_fn(dk_context *ctx, dk_buffer *buffer);
typedef dk_status dk_backend_buffer_upload_fn(dk_context *ctx, dk_buffer *buffer, uint64_t offset, const void *src,
                                              uint64_t size);
typedef dk_status dk_backend_buffer_download_fn(dk_context *ctx, const dk_buffer *buffer, uint64_t offset, void *dst,
                                                uint64_t size);
typedef dk_status dk_backend_buffer_fill_fn(dk_context *ctx, dk_buffer *buffer, uint64_t offset, uint64_t size,
                                            uint32_t pattern);

typedef dk_status dk_backend_timer_begin_fn(dk_context *ctx);
typedef dk_status dk_backend_timer_end_fn(dk_context *ctx, double *elapsed_ms);

typedef dk_status dk_backend_prepare_weight_fn(dk_context *ctx, dk_weight_use use, const dk_tensor *w);

typedef dk_status dk_backend_conv2d_fn(dk_context *ctx, const dk_conv2d_desc *desc, const dk_tensor *x,
                                       const dk_tensor *w, const dk_tensor *bias, const dk_tensor *residual,
                                       const dk_tensor *y);
typedef dk_status dk_backend_conv_transpose2d_fn(dk_context *ctx, const dk_conv_transpose2d_desc *desc,
                                                 const dk_tensor *x, const dk_tensor *w, const dk_tensor *bias,
                                                 const dk_tensor *residual, const dk_tensor *y);
typedef dk_status dk_backend_matmul_fn(dk_context *ctx, const dk_matmul_desc *desc, const dk_tensor *a,
                                       const dk_tensor *b, const dk_tensor *bias, const dk_tensor *residual,
                                       const dk_tensor *y);
/* mode DK__GN_FULL: y = GroupNorm(x) (stats NULL); DK__GN_STATS: stats =
 * (mean, variance) of x per (image, group) (gamma, beta, y NULL); DK__GN_APPLY:
 * y from x and the given stats.  stats: f32 [N, groups, 2], dense. */
typedef dk_status dk_backend_group_norm_fn(dk_context *ctx, const dk_group_norm_desc *desc, int mode,
                                           const dk_tensor *x, const dk_tensor *stats, const dk_tensor *gamma,
                                           const dk_tensor *beta, const dk_tensor *y);
typedef dk_status dk_backend_layer_norm_fn(dk_context *ctx, const dk_layer_norm_desc *desc, const dk_tensor *x,
                                           const dk_tensor *gamma, const dk_tensor *beta, const dk_tensor *y);
/* x, y: 2-5 dims (not lowered to 4: the entry walks them with dk__rms_plan). */
typedef dk_status dk_backend_rms_norm_fn(dk_context *ctx, const dk_rms_norm_desc *desc, const dk_tensor *x,
                                         const dk_tensor *gamma, const dk_tensor *beta, const dk_tensor *y);
typedef dk_status dk_backend_attention_fn(dk_context *ctx, const dk_attention_desc *desc, const dk_tensor *q,
                                          const dk_tensor *k, const dk_tensor *v, const dk_tensor *out);
/* y = out_scale * act(alpha * a + beta * b); b may be NULL (beta is then
 * unused): y = out_scale * act(alpha * a).  dk_add, dk_activation_forward and
 * dk_activation_scaled all come here, so the elementwise family is one entry. */
typedef dk_status dk_backend_add_fn(dk_context *ctx, float alpha, const dk_tensor *a, float beta,
                                    const dk_tensor *b, dk_activation act, float out_scale, const dk_tensor *y);
typedef dk_status dk_backend_upsample_nearest_fn(dk_context *ctx, const dk_tensor *x, const dk_tensor *y);
typedef dk_status dk_backend_convert_fn(dk_context *ctx, const dk_tensor *x, const dk_tensor *y);

/* Pinned host memory of at least size bytes (*ptr) and the backend's handle
 * for it; returns DK_ERR_UNSUPPORTED where the runtime has none (dk_host_alloc
 * then falls back to malloc).  host_free gets both back. */
typedef dk_status dk_backend_host_alloc_fn(dk_context *ctx, uint64_t size, void **ptr, void **handle);
typedef void dk_backend_host_free_fn(dk_context *ctx, void *ptr, void *handle);

/* Waits for the queued work, then frees the scratch memory the ops grew
 * (dk_release_scratch). */
typedef dk_status dk_backend_release_scratch_fn(dk_context *ctx);

/* The input-channel multiple at which conv2d takes its fastest kernel for
 * dtype, where that is more than its plain fast path needs (HIP on Hopper: 64
 * for wgmma), else 0.  A caller that copies x anyway (dk_conv3d's staged
 * frames) pads its channels to it. */
typedef int64_t dk_backend_conv_channel_multiple_fn(dk_context *ctx, dk_dtype dtype);

/* A validated dk_conv3d_chunk (cache may be NULL) whose taps the backend's
 * conv kernels read where they are, x's frames, the cache's and the zero
 * frames around them, with no staged copy.  Returns 0 where it cannot take the
 * call (nothing run, no error set), else 1 with *st its status. */
typedef int dk_backend_conv3d_in_place_fn(dk_context *ctx, const dk_conv3d_desc *desc, const dk_tensor *cache,
                                          const dk_tensor *x, const dk_tensor *w, const dk_tensor *bias,
                                          const dk_tensor *residual, const dk_tensor *y, dk_status *st);

typedef struct dk_backend_ops {
    dk_backend_kind kind;
    const char *name;

    dk_backend_create_fn *create;
    dk_backend_destroy_fn *destroy;
    dk_backend_sync_fn *sync;

    dk_backend_buffer_create_fn *buffer_create;
    dk_backend_buffer_wrap_fn *buffer_wrap;
    dk_backend_buffer_destroy_fn *buffer_destroy;
    dk_backend_buffer_upload_fn *buffer_upload;
    dk_backend_buffer_download_fn *buffer_download;
    dk_backend_buffer_fill_fn *buffer_fill;

    dk_backend_timer_begin_fn *timer_begin;
    dk_backend_timer_end_fn *timer_end;

    dk_backend_prepare_weight_fn *prepare_weight; /* optional: NULL, nothing to prepare */

    dk_backend_conv2d_fn *conv2d;
    dk_backend_conv_transpose2d_fn *conv_transpose2d;
    dk_backend_matmul_fn *matmul;
    dk_backend_group_norm_fn *group_norm;
    dk_backend_layer_norm_fn *layer_norm;
    dk_backend_rms_norm_fn *rms_norm;
    dk_backend_attention_fn *attention;
    dk_backend_add_fn *add;
    dk_backend_upsample_nearest_fn *upsample_nearest;
    dk_backend_convert_fn *convert;

    /* Optional entries: */
    dk_backend_host_alloc_fn *host_alloc;           /* NULL: dk_host_alloc gives malloc'd memory */
    dk_backend_host_free_fn *host_free;
    dk_backend_release_scratch_fn *release_scratch; /* NULL: the backend keeps no scratch */
    dk_backend_conv_channel_multiple_fn *conv_channel_multiple; /* NULL: none */
    dk_backend_conv3d_in_place_fn *conv3d_in_place; /* NULL: src/conv3d.c stages the frames */
} dk_backend_ops;

/* Each backend defines one table; the list in src/core.c (core_backends) holds those compiled in. */
extern const dk_backend_ops dk__cpu_backend;
#ifdef DIFKERN_VULKAN
extern const dk_backend_ops dk__vulkan_backend;
#endif
#ifdef DIFKERN_HIP
extern const dk_backend_ops dk__hip_backend;
#endif

#endif /* DK_BACKEND_H */
