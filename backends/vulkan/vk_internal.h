/* Vulkan backend: state shared by its files (device, memory, submission,
 * pipelines, ops).  The loader comes in at run time through volk. */
#ifndef DK_VK_INTERNAL_H
#define DK_VK_INTERNAL_H

#include <volk.h>

#include "../backend.h"
#include "../../shaders/dk_vk_params.h"

#define DK_VK_FRAMES 2            /* command buffers in flight */
#define DK_VK_BINDINGS 7          /* 0..5 tensors/scratch, 6 parameters */
#define DK_VK_SPEC 4              /* specialization constants per pipeline (DK_VKS_*) */
#define DK_VK_BLOCK_SIZE ((uint64_t)256 << 20) /* device-local suballocation block */
#define DK_VK_STAGING_SIZE ((uint64_t)16 << 20) /* per frame */
#define DK_VK_PARAM_SLOTS 512     /* dispatches per frame before a submit */
#define DK_VK_EAGER_DISPATCHES 16 /* the first eager frame size while the device is busy (vk_submit.c) */
#define DK_VK_COMPILE_THREADS 16  /* the most pipeline compile threads (vk_compile.c) */
/* The dependencies between commands: every op runs in the compute or transfer
 * stage, so barriers order those stages' writes before their reads and writes. */
#define DK_VK_DEP_STAGES (VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT)
#define DK_VK_DEP_SRC_ACCESS (VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT)
#define DK_VK_DEP_DST_ACCESS                                                                              \
    (VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |               \
     VK_ACCESS_TRANSFER_WRITE_BIT)

/* VK_KHR_cooperative_matrix and VK_KHR_shader_bfloat16, for headers older than
 * them (Debian 12's are 1.3.239). */
#ifndef VK_KHR_cooperative_matrix
#define VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME "VK_KHR_cooperative_matrix"
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR ((VkStructureType)1000506000)
#define VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR ((VkStructureType)1000506001)
typedef struct VkPhysicalDeviceCooperativeMatrixFeaturesKHR {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrix;
    VkBool32 cooperativeMatrixRobustBufferAccess;
} VkPhysicalDeviceCooperativeMatrixFeaturesKHR;
typedef struct VkCooperativeMatrixPropertiesKHR {
    VkStructureType sType;
    void *pNext;
    uint32_t MSize, NSize, KSize;
    int32_t AType, BType, CType, ResultType; /* VkComponentTypeKHR */
    VkBool32 saturatingAccumulation;
    int32_t scope;                           /* VkScopeKHR */
} VkCooperativeMatrixPropertiesKHR;
typedef VkResult(VKAPI_PTR *PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)(VkPhysicalDevice, uint32_t *,
                                                                                    VkCooperativeMatrixPropertiesKHR *);
#endif
#ifndef VK_KHR_shader_bfloat16
#define VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME "VK_KHR_shader_bfloat16"
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR ((VkStructureType)1000141000)
typedef struct VkPhysicalDeviceShaderBfloat16FeaturesKHR {
    VkStructureType sType;
    void *pNext;
    VkBool32 shaderBFloat16Type;
    VkBool32 shaderBFloat16DotProduct;
    VkBool32 shaderBFloat16CooperativeMatrix;
} VkPhysicalDeviceShaderBfloat16FeaturesKHR;
#endif
#define DK_VK_COMPONENT_FLOAT16 0
#define DK_VK_COMPONENT_FLOAT32 1
#define DK_VK_COMPONENT_BFLOAT16 1000141000
#define DK_VK_SCOPE_SUBGROUP 3

/* enum dk_vk_shader (DK_VK_SH_*), DK_VK_SH_COUNT and DK_VK_SH_FIRST_COOPMAT,
 * generated from shaders/shaders.list, where every shader module is declared. */
#include "backends/vulkan/dk_vk_shaders.h"

typedef struct dk_vk_range { uint64_t offset, size; } dk_vk_range;

/* One VkDeviceMemory with one VkBuffer over all of it; dk buffers are ranges. */
typedef struct dk_vk_block {
    VkDeviceMemory memory;
    VkBuffer buffer;
    uint64_t size;
    void *mapped;                 /* host-visible blocks only */
    void *host_pages;             /* imported host memory (dk__host_pages_alloc), freed with the block */
    dk_vk_range *free;            /* sorted by offset, coalesced */
    uint32_t nfree, capfree;
    int dedicated;                /* one allocation only: freed when it is released */
    struct dk_vk_block *next;
} dk_vk_block;

/* A buffer as the backend sees it: dk buffers, wrapped VkBuffers and scratch. */
typedef struct dk_vk_buf {
    VkBuffer buffer;
    uint64_t base;                /* byte offset of the region inside buffer */
    uint64_t size;
    dk_vk_block *block;           /* NULL when wrapped */
    uint64_t alloc_offset, alloc_size;
    uint64_t write_epoch, read_epoch; /* last access, in barrier epochs */
    uint64_t last_serial;         /* submission serial of the last use */
    uint64_t write_serial;        /* ... and of the last write */
} dk_vk_buf;

typedef struct dk_vk_pending_free { dk_vk_block *block; uint64_t offset, size; } dk_vk_pending_free;

/* A pipeline: built by a compile thread (vk_compile.c) and used once built.
 * Entries are allocated one by one so that their addresses stay while the
 * table grows under the threads that fill them in. */
typedef enum dk_vk_pipeline_state {
    DK_VK_PIPE_QUEUED,            /* waiting for a compile thread */
    DK_VK_PIPE_BUILDING,
    DK_VK_PIPE_READY,
    DK_VK_PIPE_FAILED             /* result holds the VkResult */
} dk_vk_pipeline_state;

typedef struct dk_vk_pipeline {
    uint32_t shader;
    uint32_t spec[DK_VK_SPEC];
    VkShaderModule module;
    VkPipeline pipeline;          /* set before state becomes READY */
    VkResult result;
    dk_vk_pipeline_state state;   /* under compile.lock while compile threads run */
    struct dk_vk_pipeline *next;  /* the compile queue */
} dk_vk_pipeline;

/* A command of a frame, kept on the host until the frame goes (vk_commands.c):
 * recording never waits for a pipeline to build. */
typedef enum dk_vk_cmd_kind {
    DK_VKC_BARRIER,               /* a global memory barrier */
    DK_VKC_BUFFER_BARRIERS,       /* frame->barriers[first, first + count) */
    DK_VKC_DISPATCH,
    DK_VKC_COPY,
    DK_VKC_FILL,
    DK_VKC_TIMESTAMP,
    DK_VKC_RESET_QUERIES
} dk_vk_cmd_kind;

typedef struct dk_vk_cmd {
    dk_vk_cmd_kind kind;
    union {
        struct { VkPipelineStageFlags src_stages, dst_stages; VkAccessFlags src_access, dst_access; } barrier;
        struct { uint32_t first, count; } buffer_barriers;
        struct {
            dk_vk_pipeline *pipeline;
            VkDescriptorBufferInfo info[DK_VK_BINDINGS];
            uint64_t gx;
            uint32_t gy, gz;
        } dispatch;
        struct { VkBuffer src, dst; VkBufferCopy region; } copy;
        struct { VkBuffer buffer; VkDeviceSize offset, size; uint32_t data; } fill;
        struct { VkQueryPool pool; uint32_t query; VkPipelineStageFlagBits stage; } timestamp;
        struct { VkQueryPool pool; uint32_t first, count; } reset;
    } u;
} dk_vk_cmd;

typedef struct dk_vk_frame {
    VkCommandBuffer cmd;
    VkFence fence;
    int recording, submitted;     /* recording: commands are being added on the host */
    uint64_t serial;
    dk_vk_cmd *cmds;              /* the frame's commands, written into cmd when it goes */
    uint32_t ncmds, capcmds;
    VkBufferMemoryBarrier *barriers;
    uint32_t nbarriers, capbarriers;
    uint32_t first_unready;       /* commands before it use built pipelines only */
    int no_memory;                /* a command could not be kept: the frame fails when it goes */
    dk_vk_block *staging;         /* host-visible, mapped */
    uint64_t staging_used;
    dk_vk_block *params;          /* host-visible, mapped: parameter slots */
    uint32_t params_used;
    dk_vk_pending_free *frees;    /* released when this frame's fence signals */
    uint32_t nfrees, capfrees;
} dk_vk_frame;

/* One bound storage buffer of a dispatch. */
typedef struct dk_vk_binding {
    dk_vk_buf *buf;               /* NULL: unused slot */
    uint64_t offset, range;       /* descriptor offset/range in buf->buffer */
    int write;                    /* 1: written; 2: written where no other
                                   * dispatch of the same op writes (no WAW barrier) */
} dk_vk_binding;

typedef struct dk_vk_state {
    VkInstance instance;
    VkPhysicalDevice physical;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    int own_instance, own_device;
    struct VolkDeviceTable vk;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties memprops;
    uint32_t subgroup_size;
    uint32_t device_type_index, host_type_index;
    int host_coherent_device;     /* the device-local type is also host visible */

    dk_vk_block *blocks;          /* device-local blocks */
    VkCommandPool command_pool;
    dk_vk_frame frames[DK_VK_FRAMES];
    uint32_t cur;                 /* frame being recorded */
    uint64_t next_serial, done_serial;
    int lost;

    /* hazard tracking: a buffer written since the last barrier is "dirty". */
    uint64_t epoch;
    dk_vk_buf **dirty;
    uint32_t ndirty, capdirty;

    VkDescriptorSetLayout set_layout;
    VkPipelineLayout pipeline_layout;
    VkShaderModule modules[DK_VK_SH_COUNT];
    VkPipelineCache pipeline_cache;
    char cache_path[1024];
    dk_vk_pipeline **pipelines;
    uint32_t npipelines, cappipelines;
    /* Compile threads (vk_compile.c), started at the first pipeline to build. */
    struct dk_vk_compiler {
        mtx_t lock;
        cnd_t work, done;         /* a job queued / a job finished */
        thrd_t threads[DK_VK_COMPILE_THREADS];
        uint32_t nthreads;
        uint32_t want;            /* threads to start: options.num_threads, DIFKERN_THREADS or the cores */
        int sync_ok;              /* lock and conditions initialized (-1: could not be) */
        int stop;
        dk_vk_pipeline *head, *tail;
    } compile;

    VkQueryPool query_pool;
    int timer_device;             /* timestamps usable */
    int timer_running;            /* dk_timer_begin seen, dk_timer_end not yet */
    double timer_host_start;

    /* DIFKERN_VULKAN_TRACE=1: a timestamp before and after every dispatch,
     * printed to stderr when the context is destroyed (vk_submit.c). */
    VkQueryPool trace_pool;
    uint32_t trace_cap, trace_n;
    struct dk_vk_trace_rec {
        uint32_t shader, spec[DK_VK_SPEC];
        uint64_t groups;
        double host_ms; /* when the host recorded it */
    } *trace_rec;

    VkDebugUtilsMessengerEXT messenger;
    mtx_t msg_lock;               /* the messenger may run on compile threads */
    int msg_lock_ok;
    char validation_msg[512];
    int validation_errors;

    /* Read-backs of buffers that the frame being recorded does not write go
     * in a command buffer of their own (vk_memory.c), so that they wait for
     * neither that frame's pipelines nor its work. */
    VkCommandBuffer aside_cmd;
    VkFence aside_fence;
    dk_vk_block *aside_staging;   /* host-visible, DK_VK_STAGING_SIZE, made at the first use */

    dk_vk_buf scratch;            /* group_norm statistics */
    dk_vk_buf stage[3];           /* channels-last copies of conv operands (vk_conv.c) */
    int force_portable;
    int coopmat;                  /* f16 tensor cores: a 16x16x16 f16 -> f32 cooperative matrix */
    int coopmat_khr;              /* ... through VK_KHR_cooperative_matrix (else the NV extension) */
    int coopmat_bf16;             /* bf16 tensor cores: KHR + VK_KHR_shader_bfloat16 */
    int cm_wave32;                /* tensor-core pipelines ask for 32-wide subgroups */
    int pipeline_stats;           /* DIFKERN_VULKAN_PIPELINE_STATS: print each pipeline's statistics */
    int eager;                    /* submit frames early (DIFKERN_VULKAN_EAGER=0: only when full or waited for) */
    uint32_t eager_at;            /* dispatches that make a frame go while the device is busy */
    int unchecked_buffers;        /* pipelines without the driver's buffer bounds checks (vk_device.c) */
    uint64_t host_import_align;   /* VK_EXT_external_memory_host enabled: its pointer alignment; 0: off */
} dk_vk_state;

static inline dk_vk_state *dk__vk(dk_context *ctx) { return (dk_vk_state *)ctx->backend; }
static inline dk_vk_buf *dk__vk_buf(const dk_buffer *b) { return (dk_vk_buf *)b->impl; }

/* The tensor-core module for base (the NV module of a tensor-core shader) and
 * 16-bit dtype dt: NV or KHR spelling, f16 or bf16. */
static inline dk_vk_shader dk__vk_cm_shader(const dk_vk_state *s, dk_vk_shader base, dk_dtype dt) {
    if (dt == DK_BF16) return (dk_vk_shader)(base + 2);
    return s->coopmat_khr ? (dk_vk_shader)(base + 1) : base;
}

/* Whether the tensor-core shaders take 16-bit dtype dt on this device. */
static inline int dk__vk_cm_dtype(const dk_vk_state *s, dk_dtype dt) {
    return (dt == DK_F16 && s->coopmat) || (dt == DK_BF16 && s->coopmat_bf16);
}

/* vk_device.c */
extern const dk_backend_ops dk__vulkan_backend;
dk_status dk__vk_result(dk_context *ctx, VkResult r, const char *what);

/* vk_memory.c */
dk_status dk__vk_alloc(dk_context *ctx, dk_vk_buf *b, uint64_t size);
void dk__vk_release(dk_context *ctx, dk_vk_buf *b);
dk_status dk__vk_host_block(dk_context *ctx, uint64_t size, VkBufferUsageFlags usage, dk_vk_block **out);
void dk__vk_free_block(dk_vk_state *s, dk_vk_block *blk);
void dk__vk_free_range(dk_vk_state *s, dk_vk_block *blk, uint64_t offset, uint64_t size);
void dk__vk_memory_destroy(dk_vk_state *s);
dk_backend_buffer_create_fn dk__vk_buffer_create;
dk_backend_buffer_wrap_fn dk__vk_buffer_wrap;
dk_backend_buffer_destroy_fn dk__vk_buffer_destroy;
dk_backend_host_alloc_fn dk__vk_host_alloc;
dk_backend_host_free_fn dk__vk_host_free;
dk_backend_buffer_upload_fn dk__vk_upload;
dk_backend_buffer_download_fn dk__vk_download;
dk_backend_buffer_fill_fn dk__vk_fill;

/* vk_submit.c */
dk_status dk__vk_frames_create(dk_context *ctx);
void dk__vk_frames_destroy(dk_vk_state *s);
void dk__vk_trace_print(dk_vk_state *s);    /* after the queue is idle */
dk_status dk__vk_begin(dk_context *ctx);              /* make sure the current frame records */
dk_status dk__vk_flush(dk_context *ctx);              /* submit the current frame (no wait) */
dk_status dk__vk_wait_all(dk_context *ctx);           /* flush and wait for everything */
dk_status dk__vk_wait_serial(dk_context *ctx, uint64_t serial);
void dk__vk_access(dk_context *ctx, dk_vk_binding *b, uint32_t n); /* barriers + tracking */
void dk__vk_forget(dk_vk_state *s, dk_vk_buf *b);    /* drop from hazard tracking */
dk_status dk__vk_dispatch(dk_context *ctx, uint32_t shader, const uint32_t *spec,
                          dk_vk_binding *bind, const void *params, size_t param_bytes,
                          uint64_t gx, uint32_t gy, uint32_t gz);
dk_backend_sync_fn dk__vk_sync;
dk_backend_timer_begin_fn dk__vk_timer_begin;
dk_backend_timer_end_fn dk__vk_timer_end;

/* vk_commands.c: the current frame's commands (the frame must record:
 * dk__vk_begin); a command that cannot be kept fails the frame when it goes. */
void dk__vk_cmd_barrier(dk_vk_state *s, VkPipelineStageFlags src_stages, VkPipelineStageFlags dst_stages,
                        VkAccessFlags src_access, VkAccessFlags dst_access);
void dk__vk_cmd_buffer_barriers(dk_vk_state *s, const VkBufferMemoryBarrier *b, uint32_t n);
void dk__vk_cmd_dispatch(dk_vk_state *s, dk_vk_pipeline *p, const VkDescriptorBufferInfo *info, uint64_t gx,
                         uint32_t gy, uint32_t gz);
void dk__vk_cmd_copy(dk_vk_state *s, VkBuffer src, VkBuffer dst, const VkBufferCopy *region);
void dk__vk_cmd_fill(dk_vk_state *s, VkBuffer buffer, VkDeviceSize offset, VkDeviceSize size, uint32_t data);
void dk__vk_cmd_timestamp(dk_vk_state *s, VkPipelineStageFlagBits stage, VkQueryPool pool, uint32_t query);
void dk__vk_cmd_reset_queries(dk_vk_state *s, VkQueryPool pool, uint32_t first, uint32_t count);
int dk__vk_cmds_ready(dk_vk_state *s, dk_vk_frame *f);           /* every pipeline built (no wait) */
dk_status dk__vk_cmds_write(dk_context *ctx, dk_vk_frame *f);    /* into f->cmd, waiting for pipelines */
void dk__vk_cmds_clear(dk_vk_frame *f);
void dk__vk_cmds_free(dk_vk_frame *f);

/* vk_pipeline.c */
dk_status dk__vk_pipelines_create(dk_context *ctx, const char *cache_path);
void dk__vk_pipelines_destroy(dk_vk_state *s);
/* The pipeline of (shader, spec), its build started if it is new (it may still
 * be building: dk__vk_pipeline_wait). */
dk_status dk__vk_pipeline(dk_context *ctx, uint32_t shader, const uint32_t *spec, dk_vk_pipeline **out);
VkResult dk__vk_pipeline_build(dk_vk_state *s, dk_vk_pipeline *p); /* on the calling thread */

/* vk_compile.c: pipelines built by up to DK_VK_COMPILE_THREADS threads */
void dk__vk_compile_queue(dk_vk_state *s, dk_vk_pipeline *p);     /* or built now where no thread runs */
int dk__vk_compile_ready(dk_vk_state *s, const dk_vk_pipeline *p);  /* READY or FAILED */
dk_status dk__vk_compile_wait(dk_context *ctx, dk_vk_pipeline *p, VkPipeline *out);
void dk__vk_compile_stop(dk_vk_state *s);                         /* join the threads; queued jobs are dropped */

/* vk_conv.c, vk_elementwise.c, vk_norm.c, vk_attention.c */
dk_backend_prepare_weight_fn dk__vk_prepare_weight;
dk_backend_conv2d_fn dk__vk_conv2d;
dk_backend_conv_transpose2d_fn dk__vk_conv_transpose2d;
dk_backend_conv3d_in_place_fn dk__vk_conv3d_in_place;
dk_backend_matmul_fn dk__vk_matmul;
dk_backend_group_norm_fn dk__vk_group_norm;
dk_backend_rms_norm_fn dk__vk_rms_norm;
dk_backend_layer_norm_fn dk__vk_layer_norm;
dk_backend_attention_fn dk__vk_attention;
dk_backend_add_fn dk__vk_add;
dk_backend_upsample_nearest_fn dk__vk_upsample_nearest;
dk_backend_convert_fn dk__vk_convert;
dk_backend_release_scratch_fn dk__vk_release_scratch;

#endif /* DK_VK_INTERNAL_H */
