/* HIP backend internals: the run-time loaded driver API (HIP or CUDA) behind one
 * function table, the backend state, and the op entry points (hip_conv.c,
 * hip_attention.c, hip_norm.c, hip_elementwise.c). */
#ifndef DK_HIP_INTERNAL_H
#define DK_HIP_INTERNAL_H

#include "../backend.h"
#include "hip_kargs.h"

/* The calls difkern needs, with the signatures HIP and the CUDA driver API share
 * (status as int; modules, functions, streams, events, contexts as opaque
 * pointers; device memory as a 64-bit address, which is what hipDeviceptr_t and
 * CUdeviceptr are on the 64-bit platforms both runtimes support).  Entries
 * marked HIP or CUDA exist only for that runtime. */
typedef struct dk_hip_api {
    void *lib;
    int is_cuda;
    int (*init)(unsigned flags);
    int (*device_count)(int *count);
    int (*device_get)(int *device, int ordinal);
    int (*device_name)(char *name, int len, int device);
    int (*device_attribute)(int *value, int attribute, int device);
    int (*module_load_data)(void **module, const void *image);
    int (*module_unload)(void *module);
    int (*module_get_function)(void **function, void *module, const char *name);
    int (*launch)(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                  unsigned shared_bytes, void *stream, void **params, void **extra);
    int (*mem_alloc)(uint64_t *ptr, size_t size);
    int (*mem_free)(uint64_t ptr);
    int (*memcpy_htod_async)(uint64_t dst, const void *src, size_t size, void *stream);
    int (*memcpy_dtoh_async)(void *dst, uint64_t src, size_t size, void *stream);
    int (*memset_d32_async)(uint64_t dst, unsigned value, size_t count, void *stream);
    int (*host_free)(void *ptr); /* optional, with the allocation call below */
    int (*stream_create)(void **stream, unsigned flags);
    int (*stream_destroy)(void *stream);
    int (*stream_sync)(void *stream);
    int (*event_create)(void **event, unsigned flags);
    int (*event_destroy)(void *event);
    int (*event_record)(void *event, void *stream);
    int (*event_sync)(void *event);
    int (*event_elapsed)(float *ms, void *start, void *end);
    /* HIP */
    int (*hip_set_device)(int device);
    int (*hip_get_device)(int *device);
    int (*hip_get_properties)(void *props, int device);
    const char *(*hip_error_string)(int status);
    int (*hip_host_malloc)(void **ptr, size_t size, unsigned flags); /* optional */
    /* optional: pin (register) / unpin memory the caller allocated */
    int (*host_register)(void *ptr, size_t size, unsigned flags);
    int (*host_unregister)(void *ptr);
    /* CUDA */
    int (*cu_primary_retain)(void **context, int device);
    int (*cu_primary_release)(int device);
    int (*cu_ctx_set_current)(void *context);
    int (*cu_ctx_get_current)(void **context);
    int (*cu_ctx_get_device)(int *device);
    int (*cu_mem_alloc_host)(void **ptr, size_t size); /* optional */
    int (*cu_error_string)(int status, const char **text);
    int (*cu_func_set_attribute)(void *function, int attribute, int value); /* optional */
    /* cuTensorMapEncodeTiled (optional; CUDA 12+ drivers): enums passed as int */
    int (*cu_tensor_map_encode_tiled)(void *map, int dtype, unsigned rank, void *addr, const uint64_t *dims,
                                      const uint64_t *strides, const uint32_t *box, const uint32_t *elem_strides,
                                      int interleave, int swizzle, int l2_promotion, int oob_fill);
} dk_hip_api;

/* Loads libamdhip64 (cuda = 0) or libcuda (cuda = 1); on failure appends what
 * was tried to why (capacity cap) and returns DK_ERR_BACKEND_UNAVAILABLE. */
dk_status dk__hip_api_load(dk_context *ctx, dk_hip_api *api, int cuda, char *why, size_t cap);
void dk__hip_api_unload(dk_hip_api *api);
const char *dk__hip_api_error(const dk_hip_api *api, int status);

/* When a kernel of hip_kernels.def is looked up (its need column). */
typedef enum dk_hip_kernel_need {
    DK_HIP_NEED_REQUIRED,    /* always; missing: the backend is unavailable */
    DK_HIP_NEED_NVIDIA,      /* always; NULL where absent (only NVIDIA code objects hold it) */
    DK_HIP_NEED_SM90A,       /* always; NULL where absent (only sm_90a code objects hold it) */
    DK_HIP_NEED_SM90A_TMA,   /* with the tensor-map API (cuTensorMapEncodeTiled) */
    DK_HIP_NEED_SM90A_VT,    /* with the V transpose kernel loaded */
    DK_HIP_NEED_SM90A_VT_TMA /* with both */
} dk_hip_kernel_need;

/* Kernels looked up once per context, each listed in hip_kernels.def. */
enum { DK_HIP_ATTN_VARIANTS = 4 }; /* Dv bound 64, 128, 256, 512 */
typedef struct dk_hip_kernels {
    void *gemm[4];                                    /* by dk_dtype (1..3) */
    void *gemm_mma[4];                                /* matrix-core GEMM (mma.sync / MFMA / WMMA), f16/bf16 */
    void *gemm_mma_4warp[4];                          /* its 4-warp variant (NVIDIA code objects); NULL: none */
    void *gemm_wgmma[4];                              /* its wgmma variant (sm_90a code objects); NULL: none */
    void *gemm_wgmma_4wg[4];                          /* the same with four warpgroups */
    void *gemm_wgmma_tma[4], *gemm_wgmma_tma_4wg[4];  /* their warp-specialized TMA variants */
    void *attention[4][DK_HIP_ATTN_VARIANTS];         /* [dtype][variant] */
    void *attention_mma[4][DK_HIP_ATTN_VARIANTS];     /* fast attention, f16/bf16, D == Dv 64..512; NULL: unusable */
    void *attention_mma_rows[4][2];                   /* small-head attention, f16/bf16, D == Dv 64, 128; NULL: unusable */
    void *attention_wgmma[4];                         /* wgmma attention, D == Dv == 512 (sm_90a); NULL: none */
    void *attention_wgmma_small[4][2];                /* wgmma attention, D == Dv == 64 / 128 (sm_90a); NULL: none */
    void *attention_v_transpose;                      /* V transposed for the wgmma attention (sm_90a) */
    void *attention_combine[4];                       /* split-KV merge of dkk_attention_mma partials, f16/bf16 */
    void *narrow[4][2][3];                            /* narrow-output conv: [dtype][Cout/groups > 4][scalar, vectors: 16 or 8 lanes] */
    void *shallow[4];                                 /* shallow-reduction direct conv (Cin/groups x taps <= 32), by dtype */
    void *elementwise, *upsample_vec, *transpose16, *transpose_cvt, *gn_partial, *gn_final, *gn_apply, *layer_norm;
    void *rms_norm[5]; /* [DK__RMS_ROWS, DK__RMS_COLUMNS, rows in 16-byte vectors, columns in 16-byte vectors,
                        * columns staged in tiles] */
} dk_hip_kernels;

typedef struct dk_hip_state {
    dk_hip_api api;
    int device, own_stream, own_context;
    void *context;   /* CUDA: the primary context we retained */
    void *stream;
    void *module;
    void *timer_start, *timer_end;
    dk_hip_kernels k;
    uint64_t scratch;       /* device scratch (group-norm statistics) */
    uint64_t scratch_bytes;
    char arch[64];          /* "gfx90a" or "sm_90" */
    int sm_count;           /* multiprocessors / compute units (0: unknown) */
} dk_hip_state;

static inline dk_hip_state *dk__hip_state(dk_context *ctx) { return (dk_hip_state *)ctx->backend; }
static inline uint64_t dk__hip_ptr(const dk_buffer *b) { return (uint64_t)(uintptr_t)b->impl; }

/* Launch on the context's stream; a failure becomes a message naming op. */
dk_status dk__hip_launch(dk_context *ctx, const char *op, void *function, uint64_t gx, uint64_t gy, uint64_t gz,
                         void *args);
/* The same with threads per block and shared_bytes of dynamic shared memory. */
dk_status dk__hip_launch_block(dk_context *ctx, const char *op, void *function, uint64_t gx, uint64_t gy, uint64_t gz,
                               unsigned threads, unsigned shared_bytes, void *args);
/* The same with a second kernel parameter (args2; NULL: none). */
dk_status dk__hip_launch_block2(dk_context *ctx, const char *op, void *function, uint64_t gx, uint64_t gy, uint64_t gz,
                                unsigned threads, unsigned shared_bytes, void *args, void *args2);
/* The same with shared_bytes of dynamic shared memory. */
dk_status dk__hip_launch_shared(dk_context *ctx, const char *op, void *function, uint64_t gx, uint64_t gy, uint64_t gz,
                                unsigned shared_bytes, void *args);
/* Dynamic shared memory of the fast attention kernel for D == Dv == d (NVIDIA). */
unsigned dk__hip_attention_mma_smem(int64_t d);
unsigned dk__hip_attention_mma_rows_smem(int64_t d);
/* Device scratch of at least bytes (grown with a stream sync when too small). */
dk_status dk__hip_scratch(dk_context *ctx, uint64_t bytes, uint64_t *ptr);

dk_backend_prepare_weight_fn dk__hip_prepare_weight;
/* backend.h's conv_channel_multiple: 64 where the wgmma kernels are loaded for dt. */
dk_backend_conv_channel_multiple_fn dk__hip_conv_channel_multiple;
dk_backend_conv3d_in_place_fn dk__hip_conv3d_in_place;
dk_backend_conv2d_fn dk__hip_conv2d;
dk_backend_conv_transpose2d_fn dk__hip_conv_transpose2d;
dk_backend_matmul_fn dk__hip_matmul;
dk_backend_group_norm_fn dk__hip_group_norm;
dk_backend_rms_norm_fn dk__hip_rms_norm;
dk_backend_layer_norm_fn dk__hip_layer_norm;
dk_backend_attention_fn dk__hip_attention;
dk_backend_add_fn dk__hip_add;
dk_backend_upsample_nearest_fn dk__hip_upsample_nearest;
dk_backend_convert_fn dk__hip_convert;

#endif /* DK_HIP_INTERNAL_H */
