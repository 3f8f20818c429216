/* difkern: kernels for diffusion-model inference behind one C API.
 *
 * Use it either way:
 *   - link: `pkg-config --cflags --libs difkern` and include this header;
 *   - header-only: in exactly one C11 file write
 *         #define DIFKERN_IMPLEMENTATION
 *         #include <difkern.h>
 *     (optionally #define DIFKERN_VULKAN / DIFKERN_HIP first to compile those
 *     backends in) and build with -pthread -lm.  The implementation part must be
 *     compiled as C11; the declarations below also compile as C++.
 *
 * Conventions (they hold for every call):
 *   - Every call returns dk_status.  On failure dk_last_error(ctx) names the
 *     argument and the rule it broke; nothing is queued and nothing is lost.
 *     No call aborts, asserts or prints.
 *   - Ops are queued on the context and may run asynchronously; dk_sync waits.
 *     dk_buffer_download waits for the work queued before it.
 *   - A tensor is a strided view of a buffer: logical shape plus element strides.
 *     4-D image tensors always have the logical shape [N, C, H, W]; NCHW and NHWC
 *     differ only in their strides (see dk_tensor_nchw / dk_tensor_nhwc).  5-D
 *     video tensors have the logical shape [N, C, T, H, W] (NCDHW and NDHWC:
 *     dk_tensor_ncdhw / dk_tensor_ndhwc).
 *   - Descriptors are initialized with their dk_*_desc_init function, then the
 *     fields of interest are set.
 *   - A buffer belongs to the context that created (or wrapped) it.  Passing it
 *     to another context (an op's tensor, a transfer, dk_buffer_destroy) is
 *     DK_ERR_INVALID_ARGUMENT with a message, and changes nothing.  Tensors,
 *     descriptors and options are plain values: copy them freely.
 *
 * Threads:
 *   - Separate contexts are independent: threads may each use their own context
 *     at the same time (any mix of backends).
 *   - One context may also be shared by threads: every call that takes it holds
 *     the context's lock while it runs, so the calls run one at a time, in the
 *     order they take the lock.  Ops queued by one thread may run before or
 *     after another thread's: order work that depends on another thread's
 *     results yourself (e.g. the producer calls dk_sync before it hands a buffer
 *     over).  dk_sync and dk_buffer_download wait for all queued work, any thread's.
 *   - dk_last_error(ctx) gives the calling thread's own last failure on ctx (or,
 *     if it has none since its last successful op on ctx, the context's last
 *     message).  The string stays valid until the thread's next difkern call.
 *   - dk_context_destroy and dk_buffer_destroy must not race with other calls
 *     that use the same context or buffer (as with free).
 *   - The library keeps no other mutable global state; the Vulkan backend
 *     creates and destroys contexts one at a time internally (the loader's
 *     global entry points).
 */
#ifndef DIFKERN_H
#define DIFKERN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DK_VERSION_MAJOR 0
#define DK_VERSION_MINOR 2
#define DK_VERSION_PATCH 0

#ifndef DK_API
#define DK_API
#endif

/* ------------------------------------------------------------------ status */

typedef enum dk_status {
    DK_OK = 0,
    DK_ERR_INVALID_ARGUMENT = 1,  /* an argument breaks a rule: see dk_last_error */
    DK_ERR_UNSUPPORTED = 2,       /* valid, but this backend/device cannot do it */
    DK_ERR_OUT_OF_MEMORY = 3,     /* host or device allocation failed */
    DK_ERR_BACKEND_UNAVAILABLE = 4, /* the requested backend/driver/device is absent */
    DK_ERR_DEVICE_LOST = 5,       /* the GPU was lost; destroy the context */
    DK_ERR_IO = 6,                /* a file could not be opened/read/written */
    DK_ERR_FORMAT = 7,            /* a file or blob is malformed */
    DK_ERR_INTERNAL = 8,          /* a bug in difkern: please report */
    DK_ERR_NON_FINITE = 9         /* inputs or results hold NaN or Inf (see the call's docs) */
} dk_status;

/* A static English name such as "DK_ERR_INVALID_ARGUMENT". */
DK_API const char *dk_status_name(dk_status status);

/* ----------------------------------------------------------------- context */

typedef enum dk_backend_kind {
    DK_BACKEND_AUTO = 0,   /* HIP if the device has code objects, else Vulkan, else CPU */
    DK_BACKEND_CPU = 1,
    DK_BACKEND_VULKAN = 2,
    DK_BACKEND_HIP = 3     /* AMD through libamdhip64, NVIDIA through libcuda */
} dk_backend_kind;

typedef struct dk_context dk_context;

/* The most CPU worker threads a context takes (options->num_threads, DIFKERN_THREADS). */
#define DK_MAX_THREADS 1024

typedef struct dk_context_options {
    dk_backend_kind backend;  /* AUTO by default; env DIFKERN_BACKEND=cpu|vulkan|hip overrides AUTO,
                               * and so does DIFKERN_VULKAN_DEVICE / DIFKERN_HIP_DEVICE: set, AUTO takes
                               * that backend and device or fails (docs/environment.md) */
    int32_t device_index;     /* -1: the backend's default (DIFKERN_VULKAN_DEVICE etc. apply) */
    int32_t num_threads;      /* CPU backend worker threads, and Vulkan pipeline compile threads
                                 (at most 16), 0..DK_MAX_THREADS; 0: all cores (or env DIFKERN_THREADS) */
    const char *pipeline_cache_path; /* Vulkan pipeline cache file; NULL: default location */
    /* Interop: run on a runtime's own device and stream instead of creating ours.
     * HIP/CUDA: external_stream is a hipStream_t / CUstream (the current context is used).
     * Vulkan: the five handles below (VkInstance, VkPhysicalDevice, VkDevice, VkQueue
     * as pointers, plus the queue family index).  All zero: difkern creates its own. */
    void *external_stream;
    void *vk_instance;
    void *vk_physical_device;
    void *vk_device;
    void *vk_queue;
    uint32_t vk_queue_family;
    /* Settings as "NAME=VALUE;NAME=VALUE" with the names of the environment
     * variables (e.g. "DIFKERN_VULKAN_COOPMAT=khr;DIFKERN_THREADS=8"); each
     * wins over the same variable in the environment.  NULL or "": none.
     * Read only during dk_context_create.  An unknown name, a bad value or a
     * benchmark setting in a build without them (docs/environment.md) fails
     * dk_context_create with DK_ERR_INVALID_ARGUMENT naming it, as a bad value
     * in the environment does. */
    const char *settings;
} dk_context_options;

DK_API void dk_context_options_init(dk_context_options *options);

/* options may be NULL (all defaults).  On failure *out is NULL and
 * dk_last_error(NULL) returns the reason (per thread). */
DK_API dk_status dk_context_create(const dk_context_options *options, dk_context **out);
DK_API void dk_context_destroy(dk_context *ctx); /* NULL is fine; waits for queued work */

/* The last error message of ctx (the calling thread's own, see Threads above),
 * or of the calling thread's last context-less failure when ctx is NULL.  Never
 * NULL; "" when there was none. */
DK_API const char *dk_last_error(const dk_context *ctx);

DK_API dk_backend_kind dk_context_backend(const dk_context *ctx);
DK_API const char *dk_backend_name(dk_backend_kind kind);       /* "cpu", "vulkan", ... */
DK_API const char *dk_context_device_name(const dk_context *ctx); /* e.g. "NVIDIA H100 80GB HBM3" */
/* A one-line summary of the backend, device and chosen kernel families. */
DK_API const char *dk_context_describe(const dk_context *ctx);
/* The value of setting `name` (an environment variable name of
 * docs/environment.md, e.g. "DIFKERN_VULKAN_COOPMAT") that ctx runs with, or,
 * with ctx NULL, the value a context created now without options.settings
 * would take from the environment.  Written to value (cap bytes) as text: a
 * boolean "0" or "1", an integer in decimal, a word of the setting's list, or
 * the string; "" where the setting is unset and the library decides (e.g.
 * DIFKERN_VULKAN_COOPMAT unset: either spelling).  DK_ERR_INVALID_ARGUMENT for
 * an unknown name, a bad value in the environment (ctx NULL) or a value that
 * does not fit in cap bytes. */
DK_API dk_status dk_setting_value(const dk_context *ctx, const char *name, char *value, size_t cap);
/* Is this backend compiled into the library (not: present on this machine)? */
DK_API int dk_backend_compiled(dk_backend_kind kind);

DK_API const char *dk_version_string(void); /* "0.2.0" */
DK_API uint32_t dk_version(void);           /* (major << 16) | (minor << 8) | patch */

/* Wait until every queued op has finished; reports asynchronous failures. */
DK_API dk_status dk_sync(dk_context *ctx);

/* Bytes of device memory held by difkern buffers and the backends' scratch
 * (current, peak since the last reset).  Wrapped buffers do not count. */
DK_API dk_status dk_memory_usage(const dk_context *ctx, uint64_t *current_bytes, uint64_t *peak_bytes);
DK_API void dk_memory_reset_peak(dk_context *ctx);

/* Waits for the queued work, then frees the backends' scratch memory: GroupNorm
 * partial statistics, attention split-KV partials, the channels-last copies of
 * conv operands that are not channels-last (NCHW convs), dk_conv3d's staged
 * input frames.  Scratch grows to the largest size an op has needed and is
 * otherwise kept for the context's life; ops allocate it again when they need
 * it.  Prepacked weights stay cached. */
DK_API dk_status dk_release_scratch(dk_context *ctx);

/* Device-side timing of a region of queued work: begin, queue ops, end.
 * dk_timer_end waits and returns the elapsed milliseconds (device timestamps
 * where the backend has them, the host clock otherwise). */
/* dk_timer_end without a dk_timer_begin before it (or a second dk_timer_end) is
 * DK_ERR_INVALID_ARGUMENT with *elapsed_ms = 0; a second dk_timer_begin restarts. */
DK_API dk_status dk_timer_begin(dk_context *ctx);
DK_API dk_status dk_timer_end(dk_context *ctx, double *elapsed_ms);

/* ----------------------------------------------------------------- buffers */

typedef struct dk_buffer dk_buffer;

DK_API dk_status dk_buffer_create(dk_context *ctx, uint64_t size_bytes, dk_buffer **out);
/* NULL is fine.  A buffer of another context is left alone (dk_last_error(ctx) says so). */
DK_API void dk_buffer_destroy(dk_context *ctx, dk_buffer *buffer);
DK_API uint64_t dk_buffer_size(const dk_buffer *buffer);
DK_API dk_status dk_buffer_upload(dk_context *ctx, dk_buffer *buffer, uint64_t offset,
                                  const void *src, uint64_t size);
DK_API dk_status dk_buffer_download(dk_context *ctx, const dk_buffer *buffer, uint64_t offset,
                                    void *dst, uint64_t size);
/* Fill size bytes at offset with a repeated 32-bit pattern (size multiple of 4). */
DK_API dk_status dk_buffer_fill(dk_context *ctx, dk_buffer *buffer, uint64_t offset,
                                uint64_t size, uint32_t pattern);

/* Host memory for large transfers: page-locked ("pinned") where the backend
 * has it (HIP: hipHostMalloc / cuMemAllocHost; Vulkan: mapped host-visible
 * memory of the device; from 8 MiB on, difkern's own huge-page memory that the
 * runtime registers or the Vulkan device imports, several times faster to
 * pin), so that dk_buffer_upload and dk_buffer_download from
 * or into any range of it go by DMA, without a staging copy: several times
 * faster for large transfers on discrete GPUs.  Uploads and downloads keep
 * their meaning (the source may be reused, the destination read, as soon as
 * they return).  The CPU backend, and a runtime without pinned memory, give
 * ordinary memory.  At least 64-byte aligned.  Pinned memory is taken from the
 * system's RAM and cannot be swapped: use it for large, reused transfer
 * buffers.  dk_host_free: NULL is fine; anything not from dk_host_alloc of
 * this context is DK_ERR_INVALID_ARGUMENT.  dk_context_destroy frees what is
 * left. */
DK_API dk_status dk_host_alloc(dk_context *ctx, uint64_t size_bytes, void **out);
DK_API dk_status dk_host_free(dk_context *ctx, void *ptr);

typedef enum dk_external_kind {
    DK_EXTERNAL_HOST_POINTER = 1,  /* CPU backend: host memory */
    DK_EXTERNAL_DEVICE_POINTER = 2,/* HIP/CUDA backend: hipDeviceptr / CUdeviceptr */
    DK_EXTERNAL_VK_BUFFER = 3      /* Vulkan backend: VkBuffer of the context's VkDevice */
} dk_external_kind;

typedef struct dk_external_memory {
    dk_external_kind kind;
    void *pointer;        /* HOST_POINTER / DEVICE_POINTER */
    uint64_t vk_buffer;   /* VK_BUFFER: the VkBuffer handle */
    uint64_t offset;      /* VK_BUFFER: byte offset of the region in vk_buffer */
    uint64_t size;        /* bytes of the region */
} dk_external_memory;

/* Wrap memory owned by the caller (no copy).  dk_buffer_destroy releases only the
 * wrapper.  If the caller changes the memory behind difkern's back, call
 * dk_buffer_invalidate so that weights prepared from it are prepared again. */
DK_API dk_status dk_buffer_wrap(dk_context *ctx, const dk_external_memory *memory, dk_buffer **out);
DK_API dk_status dk_buffer_invalidate(dk_context *ctx, dk_buffer *buffer);

/* ----------------------------------------------------------------- tensors */

typedef enum dk_dtype { DK_F32 = 1, DK_F16 = 2, DK_BF16 = 3 } dk_dtype;

#define DK_MAX_DIMS 5

typedef struct dk_tensor {
    dk_buffer *buffer;
    uint64_t offset;               /* bytes from the start of buffer */
    dk_dtype dtype;
    int32_t ndim;                  /* 1 .. DK_MAX_DIMS */
    int64_t shape[DK_MAX_DIMS];    /* logical sizes, each >= 1 */
    int64_t strides[DK_MAX_DIMS];  /* in elements, each >= 0 */
} dk_tensor;

static inline size_t dk_dtype_size(dk_dtype t) { return t == DK_F32 ? 4u : 2u; }
DK_API const char *dk_dtype_name(dk_dtype t); /* "f32", "f16", "bf16" */

/* The helpers below never overflow: sizes < 1, a NULL shape, or a shape whose
 * element count does not fit int64 give a view with ndim 0, which every op and
 * dk_prepare_weight reject with DK_ERR_INVALID_ARGUMENT. */

/* a * b into *r for a, b >= 1; 0 (and *r untouched) when it does not fit int64. */
static inline int dk_checked_mul(int64_t a, int64_t b, int64_t *r) {
    if (a < 1 || b < 1 || b > INT64_MAX / a) return 0;
    *r = a * b;
    return 1;
}

/* The invalid view the helpers return (ndim 0: rejected by every op). */
static inline dk_tensor dk__tensor_invalid(dk_buffer *b, uint64_t offset, dk_dtype t) {
    dk_tensor x;
    int32_t i;
    x.buffer = b; x.offset = offset; x.dtype = t; x.ndim = 0;
    for (i = 0; i < DK_MAX_DIMS; i++) { x.shape[i] = 0; x.strides[i] = 0; }
    return x;
}

/* Logical [N, C, H, W] with the given strides, after checking the element count. */
static inline dk_tensor dk__tensor_4d(dk_buffer *b, uint64_t offset, dk_dtype t, int64_t n, int64_t c,
                                      int64_t h, int64_t w, int channels_last) {
    dk_tensor x;
    int64_t hw, chw;
    if (!dk_checked_mul(h, w, &hw) || !dk_checked_mul(c, hw, &chw) || !dk_checked_mul(n, chw, &chw))
        return dk__tensor_invalid(b, offset, t);
    x.buffer = b; x.offset = offset; x.dtype = t; x.ndim = 4;
    x.shape[0] = n; x.shape[1] = c; x.shape[2] = h; x.shape[3] = w;
    if (channels_last) {
        x.strides[1] = 1; x.strides[3] = c; x.strides[2] = w * c; x.strides[0] = hw * c;
    } else {
        x.strides[3] = 1; x.strides[2] = w; x.strides[1] = hw; x.strides[0] = c * hw;
    }
    return x;
}

/* Logical [N, C, H, W], stored NCHW (W fastest). */
static inline dk_tensor dk_tensor_nchw(dk_buffer *b, uint64_t offset, dk_dtype t,
                                       int64_t n, int64_t c, int64_t h, int64_t w) {
    return dk__tensor_4d(b, offset, t, n, c, h, w, 0);
}
/* Logical [N, C, H, W], stored NHWC (C fastest). */
static inline dk_tensor dk_tensor_nhwc(dk_buffer *b, uint64_t offset, dk_dtype t,
                                       int64_t n, int64_t c, int64_t h, int64_t w) {
    return dk__tensor_4d(b, offset, t, n, c, h, w, 1);
}
/* Logical [N, C, T, H, W] with the given strides, after checking the element count. */
static inline dk_tensor dk__tensor_5d(dk_buffer *b, uint64_t offset, dk_dtype t, int64_t n, int64_t c,
                                      int64_t d, int64_t h, int64_t w, int channels_last) {
    dk_tensor x;
    int64_t hw, dhw, cdhw;
    if (!dk_checked_mul(h, w, &hw) || !dk_checked_mul(d, hw, &dhw) || !dk_checked_mul(c, dhw, &cdhw) ||
        !dk_checked_mul(n, cdhw, &cdhw))
        return dk__tensor_invalid(b, offset, t);
    x.buffer = b; x.offset = offset; x.dtype = t; x.ndim = 5;
    x.shape[0] = n; x.shape[1] = c; x.shape[2] = d; x.shape[3] = h; x.shape[4] = w;
    if (channels_last) {
        x.strides[1] = 1; x.strides[4] = c; x.strides[3] = w * c; x.strides[2] = hw * c; x.strides[0] = dhw * c;
    } else {
        x.strides[4] = 1; x.strides[3] = w; x.strides[2] = hw; x.strides[1] = dhw; x.strides[0] = c * dhw;
    }
    return x;
}

/* Logical [N, C, T, H, W] (T: frames), stored NCDHW (W fastest). */
static inline dk_tensor dk_tensor_ncdhw(dk_buffer *b, uint64_t offset, dk_dtype t, int64_t n, int64_t c,
                                        int64_t d, int64_t h, int64_t w) {
    return dk__tensor_5d(b, offset, t, n, c, d, h, w, 0);
}
/* Logical [N, C, T, H, W], stored NDHWC (C fastest; PyTorch's channels_last_3d). */
static inline dk_tensor dk_tensor_ndhwc(dk_buffer *b, uint64_t offset, dk_dtype t, int64_t n, int64_t c,
                                        int64_t d, int64_t h, int64_t w) {
    return dk__tensor_5d(b, offset, t, n, c, d, h, w, 1);
}
/* Row-major contiguous tensor of ndim dims (1..5). */
static inline dk_tensor dk_tensor_contiguous(dk_buffer *b, uint64_t offset, dk_dtype t,
                                             int32_t ndim, const int64_t *shape) {
    dk_tensor x;
    int64_t s = 1;
    int32_t i;
    if (!shape || ndim < 1 || ndim > DK_MAX_DIMS) return dk__tensor_invalid(b, offset, t);
    x.buffer = b; x.offset = offset; x.dtype = t; x.ndim = ndim;
    for (i = 0; i < DK_MAX_DIMS; i++) { x.shape[i] = 1; x.strides[i] = 0; }
    for (i = ndim - 1; i >= 0; i--) {
        x.shape[i] = shape[i];
        x.strides[i] = s;
        if (!dk_checked_mul(s, shape[i], &s)) return dk__tensor_invalid(b, offset, t);
    }
    return x;
}
/* Number of elements; -1 when the view is malformed (ndim outside 1..5, a size
 * < 1) or the count does not fit int64. */
static inline int64_t dk_tensor_numel(const dk_tensor *x) {
    int64_t n = 1;
    int32_t i;
    if (!x || x->ndim < 1 || x->ndim > DK_MAX_DIMS) return -1;
    for (i = 0; i < x->ndim; i++)
        if (!dk_checked_mul(n, x->shape[i], &n)) return -1;
    return n;
}

/* ---------------------------------------------------------------- epilogue */

typedef enum dk_activation {
    DK_ACT_NONE = 0,
    DK_ACT_RELU = 1,
    DK_ACT_SILU = 2,      /* x * sigmoid(x) */
    DK_ACT_GELU = 3,      /* exact: 0.5 x (1 + erf(x / sqrt 2)) */
    DK_ACT_GELU_TANH = 4, /* tanh approximation */
    DK_ACT_TANH = 5
} dk_activation;

DK_API const char *dk_activation_name(dk_activation a);

/* Ops with an epilogue (conv2d, conv_transpose2d, matmul) compute, per output element,
 *     out = post_act(output_scale * act(acc + bias[c]) + residual_scale * residual)
 * where bias and residual are optional tensors (NULL: the term is absent), act is
 * desc->activation and post_act desc->post_activation (DK_ACT_NONE by default;
 * applied with or without a residual: relu(conv(x) + x) is activation NONE,
 * post_activation RELU).  The residual has the output's logical shape.  It may be
 * the output itself when the two views are exactly identical (same buffer,
 * offset, dtype, shape and strides): each output element then reads its own
 * residual value before it is written.  Any other overlap of the residual with
 * the output is DK_ERR_INVALID_ARGUMENT.  The residual has the activations'
 * dtype; the bias has it too, or is f32 (with f16/bf16 activations: it is then
 * added in fp32 as it is, without rounding to 16 bits). */

/* ------------------------------------------------------------------ conv2d */

typedef struct dk_conv2d_desc {
    int32_t stride_h, stride_w;       /* >= 1 */
    int32_t pad_h, pad_w;             /* >= 0, zero padding on both sides (see pad_top below) */
    int32_t dilation_h, dilation_w;   /* >= 1 */
    int32_t groups;                   /* >= 1, divides Cin and Cout */
    int32_t upsample;                 /* 1, or 2: the input is nearest-2x upsampled first (fused) */
    dk_activation activation;         /* before the residual */
    float output_scale;               /* 1 */
    float residual_scale;             /* 1 */
    /* Zero padding per side, of the (upsampled) input.  init: all -1, meaning
     * "from pad_h / pad_w" (top = bottom = pad_h, left = right = pad_w).  When any
     * of the four is >= 0, all four must be >= 0, and pad_h must be 0 or equal
     * pad_top, pad_w 0 or equal pad_left (so a caller that sets both agrees with
     * itself).  E.g. the VAE encoder's downsampler: pad_top 0, pad_bottom 1,
     * pad_left 0, pad_right 1, stride 2, a 3x3 kernel. */
    int32_t pad_top, pad_bottom, pad_left, pad_right;
    dk_activation post_activation;    /* after the residual (init: DK_ACT_NONE) */
} dk_conv2d_desc;

DK_API void dk_conv2d_desc_init(dk_conv2d_desc *desc);

/* x: [N, Cin, H, W];  w: [Cout, Cin/groups, KH, KW];  bias: [Cout] or NULL;
 * residual: [N, Cout, OH, OW] or NULL;  y: [N, Cout, OH, OW] with
 * OH = (H*upsample + pad_top + pad_bottom - dilation_h*(KH-1) - 1) / stride_h + 1
 * OW = (W*upsample + pad_left + pad_right - dilation_w*(KW-1) - 1) / stride_w + 1
 * (with the per-side fields unset: pad_top = pad_bottom = pad_h, pad_left =
 * pad_right = pad_w). */
DK_API dk_status dk_conv2d(dk_context *ctx, const dk_conv2d_desc *desc,
                           const dk_tensor *x, const dk_tensor *w, const dk_tensor *bias,
                           const dk_tensor *residual, const dk_tensor *y);

/* -------------------------------------------------------- conv_transpose2d */

typedef struct dk_conv_transpose2d_desc {
    int32_t stride_h, stride_w;                 /* >= 1 */
    int32_t pad_h, pad_w;                       /* >= 0 */
    int32_t output_padding_h, output_padding_w; /* >= 0, < max(stride, dilation) */
    int32_t dilation_h, dilation_w;             /* >= 1 */
    int32_t groups;                             /* >= 1 */
    dk_activation activation;
    float output_scale;
    float residual_scale;
    dk_activation post_activation;              /* after the residual (init: DK_ACT_NONE) */
} dk_conv_transpose2d_desc;

DK_API void dk_conv_transpose2d_desc_init(dk_conv_transpose2d_desc *desc);

/* x: [N, Cin, H, W];  w: [Cin, Cout/groups, KH, KW] (PyTorch's layout);
 * y: [N, Cout, OH, OW] with
 * OH = (H-1)*stride_h - 2*pad_h + dilation_h*(KH-1) + output_padding_h + 1. */
DK_API dk_status dk_conv_transpose2d(dk_context *ctx, const dk_conv_transpose2d_desc *desc,
                                     const dk_tensor *x, const dk_tensor *w, const dk_tensor *bias,
                                     const dk_tensor *residual, const dk_tensor *y);

/* ------------------------------------------------------------------ conv3d */

typedef struct dk_conv3d_desc {
    int32_t stride_t, stride_h, stride_w;       /* >= 1 */
    int32_t dilation_t, dilation_h, dilation_w; /* >= 1 */
    int32_t pad_front, pad_back;                /* >= 0, zero frames before / after (causal: KT-1, 0) */
    int32_t pad_top, pad_bottom, pad_left, pad_right; /* >= 0 */
    int32_t groups;                             /* >= 1, divides Cin and Cout */
    dk_activation activation;                   /* before the residual */
    float output_scale;                         /* 1 */
    float residual_scale;                       /* 1 */
    dk_activation post_activation;              /* after the residual */
} dk_conv3d_desc;

/* strides, dilations and groups 1, pads 0, scales 1, activations DK_ACT_NONE. */
DK_API void dk_conv3d_desc_init(dk_conv3d_desc *desc);

/* x: [N, Cin, T, H, W];  w: [Cout, Cin/groups, KT, KH, KW];  bias: [Cout] or
 * NULL;  residual and y: [N, Cout, OT, OH, OW] with
 * OT = (T + pad_front + pad_back - dilation_t*(KT-1) - 1) / stride_t + 1
 * OH = (H + pad_top + pad_bottom - dilation_h*(KH-1) - 1) / stride_h + 1
 * OW = (W + pad_left + pad_right - dilation_w*(KW-1) - 1) / stride_w + 1.
 * The epilogue, dtypes and aliasing rules are conv2d's (bias f32 allowed, the
 * residual may be y's very view).  Runs as conv2d calls of the backend: a
 * general KT x KH x KW kernel stages its input frames in scratch memory the
 * context keeps (at most 512 MiB, or one output frame's input if larger; freed
 * by dk_release_scratch; docs/conv.md), except where the backend's conv
 * kernels read the frames in place (HIP: f16/bf16 channels-last x and cache,
 * groups 1, Cin a multiple of 32, on Hopper of 64; Vulkan with cooperative
 * matrices: the same for KT x 1 x 1 kernels with a cache and at most
 * 65,536 output pixels per image). */
DK_API dk_status dk_conv3d(dk_context *ctx, const dk_conv3d_desc *desc,
                           const dk_tensor *x, const dk_tensor *w, const dk_tensor *bias,
                           const dk_tensor *residual, const dk_tensor *y);

/* Chunked causal decoding.  cache: [N, Cin, Tc, H, W] (x's dtype; NULL means
 * Tc = 0), the last Tc <= pad_front input frames of the previous chunk.  The conv
 * sees pad_front - Tc zero frames, the cache's frames, x's frames and pad_back
 * zero frames: exactly dk_conv3d on the concatenation, without the caller
 * copying x.  OT counts Tc + T frames: OT = (T + pad_front + pad_back -
 * dilation_t*(KT-1) - 1) / stride_t + 1, whatever Tc.  The next chunk's cache
 * is the last frames of that concatenation (cache then x): when T >= Tc' it is
 * the view of x's last Tc' frames, copied with dk_convert into a cache buffer
 * (a 5-D view [N, Cin, Tc', H, W] starting at frame T - Tc'); when T < Tc',
 * the kept cache frames first, then all of x (two dk_convert calls; the
 * cache's old frames must not be overwritten before they are read, so copy
 * into a second cache buffer).  The cache must not overlap y. */
DK_API dk_status dk_conv3d_chunk(dk_context *ctx, const dk_conv3d_desc *desc, const dk_tensor *cache,
                                 const dk_tensor *x, const dk_tensor *w, const dk_tensor *bias,
                                 const dk_tensor *residual, const dk_tensor *y);

/* ------------------------------------------------------------------ matmul */

typedef struct dk_matmul_desc {
    dk_activation activation;
    float output_scale;
    float residual_scale;
    dk_activation post_activation; /* after the residual (init: DK_ACT_NONE) */
} dk_matmul_desc;

DK_API void dk_matmul_desc_init(dk_matmul_desc *desc);

/* Batched product with arbitrary strides (transposes are strides):
 * a: [M, K] or [B, M, K];  b: [K, N] or [B, K, N];  bias: [N] or NULL;
 * residual and y: [M, N] or [B, M, N].  A 2-D operand is shared by every batch. */
DK_API dk_status dk_matmul(dk_context *ctx, const dk_matmul_desc *desc,
                           const dk_tensor *a, const dk_tensor *b, const dk_tensor *bias,
                           const dk_tensor *residual, const dk_tensor *y);

/* Linear layer y = x W^T + bias with PyTorch's weight layout: x: [M, K] or [B, M, K],
 * weight: [N, K] (any strides).  A thin wrapper over dk_matmul. */
DK_API dk_status dk_linear(dk_context *ctx, const dk_matmul_desc *desc,
                           const dk_tensor *x, const dk_tensor *weight, const dk_tensor *bias,
                           const dk_tensor *residual, const dk_tensor *y);

/* -------------------------------------------------------------- group_norm */

typedef struct dk_group_norm_desc {
    int32_t groups;           /* >= 1, divides C */
    float eps;                /* > 0 (init: 1e-5) */
    dk_activation activation; /* fused after the affine transform */
} dk_group_norm_desc;

DK_API void dk_group_norm_desc_init(dk_group_norm_desc *desc);

/* x, y: [N, C, H, W] (any strides, may be the same view: in place), or a video
 * [N, C, T, H, W] whose statistics span the group's channels and all of T, H and
 * W (T must merge with H, or H with W, in x's and y's strides: any dense NCDHW
 * or NDHWC view does; others are DK_ERR_UNSUPPORTED); gamma, beta: [C] or both
 * NULL (no affine), in x's dtype or (with f16/bf16 x) both f32.  Statistics in
 * fp32 or wider.  The split form below takes 5-D x and y the same way. */
DK_API dk_status dk_group_norm(dk_context *ctx, const dk_group_norm_desc *desc,
                               const dk_tensor *x, const dk_tensor *gamma, const dk_tensor *beta,
                               const dk_tensor *y);

/* Split GroupNorm, for a tensor handled in pieces (bands of rows of an image
 * too large for the device, tiles): the statistics of each piece, merged on the
 * host, then each piece normalized with the statistics of the whole.  The
 * result equals dk_group_norm of the whole tensor (up to fp32 rounding).
 *
 * dk_group_norm_stats: stats is an f32 tensor [N, groups, 2], dense row-major,
 * that receives per image and group the mean and the population (biased)
 * variance of x's values.  Uses desc->groups; eps and activation are ignored.
 * stats may not overlap x. */
DK_API dk_status dk_group_norm_stats(dk_context *ctx, const dk_group_norm_desc *desc, const dk_tensor *x,
                                     const dk_tensor *stats);

/* Host helper: a (the statistics of count_a values per group) becomes the
 * statistics of the union with b (count_b values per group), for ng = N * groups
 * (mean, variance) pairs each (Chan's formula in double).  count_a may be 0
 * (a is then overwritten by b). */
DK_API void dk_group_norm_stats_merge(float *a, double count_a, const float *b, double count_b, int64_t ng);

/* y = act(gamma * (x - mean) / sqrt(var + eps) + beta) with (mean, var) per
 * image and group read from stats (f32 [N, groups, 2], dense row-major, as
 * dk_group_norm_stats writes it).  x, y, gamma, beta as in dk_group_norm. */
DK_API dk_status dk_group_norm_apply(dk_context *ctx, const dk_group_norm_desc *desc, const dk_tensor *x,
                                     const dk_tensor *stats, const dk_tensor *gamma, const dk_tensor *beta,
                                     const dk_tensor *y);

/* -------------------------------------------------------------- layer_norm */

typedef struct dk_layer_norm_desc {
    float eps;                /* > 0 (init: 1e-5) */
    dk_activation activation;
} dk_layer_norm_desc;

DK_API void dk_layer_norm_desc_init(dk_layer_norm_desc *desc);

/* Normalizes over the last dimension D.  x, y: [..., D] (1-5 dims, same shape,
 * may be the same view); gamma, beta: [D] or NULL (each independently). */
DK_API dk_status dk_layer_norm(dk_context *ctx, const dk_layer_norm_desc *desc,
                               const dk_tensor *x, const dk_tensor *gamma, const dk_tensor *beta,
                               const dk_tensor *y);

/* ---------------------------------------------------------------- rms_norm */

typedef enum dk_rms_norm_form {
    /* y = act(x / sqrt(mean_c(x^2) + eps) * gamma[c] + beta[c]) */
    DK_RMS_NORM_MEAN_SQUARE = 0,
    /* y = act(x / max(sqrt(sum_c x^2), eps) * sqrt(C) * gamma[c] + beta[c]):
     * PyTorch F.normalize(x, dim=1) * C**0.5 * gamma + beta, the Wan VAE's RMS_norm */
    DK_RMS_NORM_L2 = 1
} dk_rms_norm_form;

typedef struct dk_rms_norm_desc {
    dk_rms_norm_form form;     /* init: DK_RMS_NORM_MEAN_SQUARE */
    float eps;                 /* > 0, finite (init 1e-6; the Wan VAE: DK_RMS_NORM_L2 with 1e-12) */
    dk_activation activation;  /* fused after the affine transform (init NONE) */
} dk_rms_norm_desc;

DK_API void dk_rms_norm_desc_init(dk_rms_norm_desc *desc);

/* Normalizes over the channel axis (dim 1), per position (every index of the
 * other dims), with the formula of desc->form above (mean_c and sum_c over
 * the C channels of one position; gamma and beta absent: 1 and 0).
 * x, y: [N, C, ...] with 2 to 5 dims, the channel axis is dim 1 ([N, C], [N, C, L], [N, C, H, W],
 * [N, C, T, H, W]); any strides; y may be x's very view (in place); same dtype and shape.
 * gamma, beta: [C] or NULL (each independently), x's dtype or, with f16/bf16 x, f32 (both
 * given: the same dtype).  Sums in fp32 or wider. */
DK_API dk_status dk_rms_norm(dk_context *ctx, const dk_rms_norm_desc *desc, const dk_tensor *x,
                             const dk_tensor *gamma, const dk_tensor *beta, const dk_tensor *y);

/* --------------------------------------------------------------- attention */

typedef struct dk_attention_desc {
    float scale;  /* 0: 1/sqrt(D) */
} dk_attention_desc;

DK_API void dk_attention_desc_init(dk_attention_desc *desc);

/* softmax(scale * Q K^T) V per batch and head, fp32 accumulation, online softmax.
 * q: [B, H, Nq, D];  k: [B, H, Nkv, D];  v: [B, H, Nkv, Dv];  out: [B, H, Nq, Dv].
 * Any strides, so [B, N, H, D] storage is a view.  D, Dv <= 512.  With two batch
 * dims all four are 5-D, [B, B2, H, N, D]: e.g. per-frame attention over a
 * channels-last video [N, C, T, H, W] is q = [N, T, 1, H*W, C] as a view. */
DK_API dk_status dk_attention(dk_context *ctx, const dk_attention_desc *desc,
                              const dk_tensor *q, const dk_tensor *k, const dk_tensor *v,
                              const dk_tensor *out);

/* -------------------------------------------------------------- elementwise */

/* y = act(x).  x and y: same logical shape (1-5 dims); may be the same view. */
DK_API dk_status dk_activation_forward(dk_context *ctx, dk_activation act,
                                       const dk_tensor *x, const dk_tensor *y);

/* y = out_scale * act(in_scale * x), in fp32, rounded once to y's dtype; e.g.
 * TAESD's clamp 3*tanh(x/3) is (1/3, DK_ACT_TANH, 3).  Same rules as
 * dk_activation_forward (same shape and dtype, y may be x's very view); the
 * scales must be finite (DK_ERR_INVALID_ARGUMENT otherwise). */
DK_API dk_status dk_activation_scaled(dk_context *ctx, float in_scale, dk_activation act,
                                      float out_scale, const dk_tensor *x, const dk_tensor *y);

/* y = act(alpha * a + beta * b).  Same logical shapes (1-5 dims); y may be the same view as a or b. */
DK_API dk_status dk_add(dk_context *ctx, float alpha, const dk_tensor *a, float beta,
                        const dk_tensor *b, dk_activation act, const dk_tensor *y);

/* Nearest-neighbour resize of [N, C, H, W] to y's [N, C, OH, OW]:
 * y[n,c,i,j] = x[n,c, floor(i*H/OH), floor(j*W/OW)] (exact integer arithmetic).
 * Videos [N, C, T, H, W] to [N, C, OT, OH, OW] likewise on all three axes: a
 * per-frame 2x is OT = T, a time 2x OT = 2T with OH = H, OW = W. */
DK_API dk_status dk_upsample_nearest(dk_context *ctx, const dk_tensor *x, const dk_tensor *y);

/* y = x with y's dtype and strides: layout conversion (NCHW <-> NHWC, NCDHW <->
 * NDHWC or any strides, 1-5 dims) and dtype conversion (round to nearest even,
 * NaN stays NaN). */
DK_API dk_status dk_convert(dk_context *ctx, const dk_tensor *x, const dk_tensor *y);

/* -------------------------------------------------------- prepared weights */

typedef enum dk_weight_use {
    DK_WEIGHT_CONV2D = 1,           /* w of dk_conv2d */
    DK_WEIGHT_CONV_TRANSPOSE2D = 2, /* w of dk_conv_transpose2d */
    DK_WEIGHT_MATMUL_B = 3          /* b of dk_matmul (or weight of dk_linear) */
} dk_weight_use;

/* Repack a weight now into the layout this backend's fast kernel wants and keep
 * it, keyed by buffer identity, offset, view and contents generation.  Ops also
 * do this on first use, so calling it is optional: it moves the cost out of the
 * first call.  The cache entry is dropped when the buffer is written (upload,
 * fill, used as an op output, dk_buffer_invalidate) or destroyed. */
DK_API dk_status dk_prepare_weight(dk_context *ctx, dk_weight_use use, const dk_tensor *w);

/* ------------------------------------------------------------ half helpers */

DK_API uint16_t dk_f32_to_f16(float x);
DK_API float dk_f16_to_f32(uint16_t h);
DK_API uint16_t dk_f32_to_bf16(float x);
DK_API float dk_bf16_to_f32(uint16_t h);

#ifdef __cplusplus
}
#endif

#endif /* DIFKERN_H */

#if defined(DIFKERN_IMPLEMENTATION) && !defined(DIFKERN_IMPLEMENTATION_INCLUDED)
#define DIFKERN_IMPLEMENTATION_INCLUDED
/* Generated by the build (tools/amalgamate.py) and installed beside this header. */
#include "difkern/difkern_impl.h"
#endif
