/* The one list of settings difkern reads from the environment (DIFKERN_*) or
 * from dk_context_options.settings, and the one parser of their values.
 *
 * Each entry of DK_KNOB_LIST is X(field, NAME, TYPE, default, min, max,
 * accepted, backend, CLASS, default text, doc): NAME without the DIFKERN_
 * prefix; TYPE BOOL (0/1), INT (min..max, or one of `accepted` where that is
 * "a|b|c"), ENUM (one of the words in `accepted`, stored as its index; -1
 * unset) or STRING; CLASS USER, DIAGNOSTIC or BENCHMARK (read only in builds
 * with DIFKERN_DEV_KNOBS, meson -Ddev_knobs=true).  docs/environment.md holds
 * the table tools/knobs_doc.c prints from this list; a test fails when they
 * differ.  The list is a macro rather than a re-included .def file because the
 * amalgamation (tools/amalgamate.py) inlines every project header once. */
#ifndef DK_KNOBS_H
#define DK_KNOBS_H

#include <stddef.h>
#include <stdint.h>

#include "../include/difkern.h"

#define DK_KNOB_STRING_MAX 256
#define DK_KNOB_GIB4 4294967296

/* clang-format off */
#define DK_KNOB_LIST(X) \
    X(backend, BACKEND, ENUM, -1, 0, 0, "cpu|vulkan|hip|auto", "all", USER, "auto", \
      "backend when `dk_context_options.backend` is AUTO") \
    X(threads, THREADS, INT, 0, 1, DK_MAX_THREADS, NULL, "cpu, vulkan", USER, "all cores", \
      "CPU backend worker threads, and the Vulkan backend's pipeline compile threads (at most 16), when " \
      "`options.num_threads` is 0") \
    X(io_no_mmap, IO_NO_MMAP, BOOL, 0, 0, 1, NULL, "io", USER, "0", \
      "1: read files with `fread` instead of mapping them (for files that may change under the reader)") \
    X(io_stream_limit, IO_STREAM_LIMIT, INT, DK_KNOB_GIB4, 1, INT64_C(1) << 60, NULL, "io", USER, "4 GiB", \
      "the most bytes read from a pipe or device (inputs of unknown size); regular files are read whole") \
    X(vulkan_device, VULKAN_DEVICE, STRING, 0, 0, 0, NULL, "vulkan", USER, "best usable device, discrete first", \
      "Vulkan device when `options.device_index` is -1: a decimal index, or text found (any case) in the device " \
      "or driver name (`lavapipe`: Mesa's CPU driver); set, AUTO takes the Vulkan backend") \
    X(vulkan_portable, VULKAN_PORTABLE, BOOL, 0, 0, 1, NULL, "vulkan", USER, "0", \
      "1: no tensor-core (cooperative-matrix) shaders, the portable family only") \
    X(vulkan_coopmat, VULKAN_COOPMAT, ENUM, -1, 0, 0, "nv|khr", "vulkan", USER, "either, KHR preferred", \
      "restrict the tensor-core family to one extension spelling; `nv` also drops bf16 tensor cores") \
    X(hip_runtime, HIP_RUNTIME, ENUM, -1, 0, 0, "hip|cuda", "hip", USER, "HIP, then CUDA", \
      "the runtime the HIP backend loads") \
    X(hip_device, HIP_DEVICE, INT, -1, 0, 1023, NULL, "hip", USER, "0", \
      "HIP device when `options.device_index` is -1 and no external stream is given; set, AUTO takes the HIP " \
      "backend") \
    X(vulkan_validation, VULKAN_VALIDATION, BOOL, 0, 0, 1, NULL, "vulkan", DIAGNOSTIC, "0", \
      "1: the Khronos validation layer where installed; `dk_sync` reports its warnings and errors as failures") \
    X(vulkan_checked_buffers, VULKAN_CHECKED_BUFFERS, BOOL, 0, 0, 1, NULL, "vulkan", DIAGNOSTIC, "0", \
      "1: keep the driver's storage-buffer bounds checks (otherwise off through `VK_EXT_pipeline_robustness`)") \
    X(vulkan_cm_wave32, VULKAN_CM_WAVE32, BOOL, 0, 0, 1, NULL, "vulkan", DIAGNOSTIC, "0", \
      "1: request 32-wide subgroups through subgroup size control even where native (the RDNA path on NVIDIA)") \
    X(vulkan_trace, VULKAN_TRACE, BOOL, 0, 0, 1, NULL, "vulkan", DIAGNOSTIC, "0", \
      "1: device timestamps around every dispatch (up to 8192), printed at context destruction (`tools/vk_trace.py`)") \
    X(vulkan_pipeline_stats, VULKAN_PIPELINE_STATS, BOOL, 0, 0, 1, NULL, "vulkan", DIAGNOSTIC, "0", \
      "1: print the driver's statistics (registers, shared memory) of every pipeline") \
    X(vae_profile, VAE_PROFILE, BOOL, 0, 0, 1, NULL, "vae", DIAGNOSTIC, "0", \
      "1: SDXL VAE syncs around every primitive and prints the wall time per kind to stderr (slow)") \
    X(vae_shrink, VAE_SHRINK, BOOL, 1, 0, 1, NULL, "vae", DIAGNOSTIC, "1", \
      "0: the VAE plan's conv after the upsampler no longer writes over its input's dead rows (vae-memory-plan.md)") \
    X(hip_gn_planes, HIP_GN_PLANES, INT, -1, 0, 0, "0|8", "hip", DIAGNOSTIC, "by size", \
      "NCHW GroupNorm apply by (n, c) planes, eight vectors per thread: 0 off, 8 forced (tests)") \
    X(conv3d_in_place, CONV3D_IN_PLACE, BOOL, 1, 0, 1, NULL, "hip", BENCHMARK, "1", \
      "0: `dk_conv3d` stages its input frames (time-im2col) even where the backend's conv kernels read them in place") \
    X(conv3d_pad_channels, CONV3D_PAD_CHANNELS, INT, -1, 0, 0, "0|8|16|32|64", "all", BENCHMARK, \
      "the backend's", \
      "channel multiple `dk_conv3d` pads its staged (time-im2col) input to, where that adds at most a quarter; " \
      "0 never") \
    X(vulkan_eager, VULKAN_EAGER, BOOL, 1, 0, 1, NULL, "vulkan", BENCHMARK, "1", \
      "0: submit a frame only when full or waited for (vulkan-submission.md)") \
    X(vulkan_host_import, VULKAN_HOST_IMPORT, BOOL, 1, 0, 1, NULL, "vulkan", BENCHMARK, "1", \
      "0: `dk_host_alloc` blocks of 8 MiB and more are not imported through `VK_EXT_external_memory_host`") \
    X(vulkan_stage_nhwc, VULKAN_STAGE_NHWC, BOOL, 1, 0, 1, NULL, "vulkan", BENCHMARK, "1", \
      "0: conv operands that are not channels-last are not copied to channels-last scratch") \
    X(vulkan_up2, VULKAN_UP2, BOOL, 1, 0, 1, NULL, "vulkan", BENCHMARK, "1", \
      "0: fused 2x upsample convs upsample in the input indexing instead of four phase convs") \
    X(vulkan_narrow_lanes, VULKAN_NARROW_LANES, BOOL, 1, 0, 1, NULL, "vulkan", BENCHMARK, "1", \
      "0: the direct narrow conv (Cout/groups <= 8) takes one invocation per pixel instead of 16") \
    X(vulkan_cm_narrow, VULKAN_CM_NARROW, BOOL, 1, 0, 1, NULL, "vulkan", BENCHMARK, "1", \
      "0: convs with at most 8 output channels take the direct narrow conv, not the tensor cores") \
    X(vulkan_cm_pad_cin, VULKAN_CM_PAD_CIN, BOOL, 1, 0, 1, NULL, "vulkan", BENCHMARK, "1", \
      "0: convs whose Cin is not a multiple of 32 take the portable conv, not zero-padded tensor cores") \
    X(vulkan_cm_halo, VULKAN_CM_HALO, BOOL, 1, 0, 1, NULL, "vulkan", BENCHMARK, "1", \
      "0: the tensor-core conv without halo staging") \
    X(vulkan_cm_fixed, VULKAN_CM_FIXED, BOOL, 1, 0, 1, NULL, "vulkan", BENCHMARK, "1", \
      "0: the tensor-core conv without the tap grid compiled into the pipeline") \
    X(vulkan_cm_channels_fast, VULKAN_CM_CHANNELS_FAST, BOOL, 1, 0, 1, NULL, "vulkan", BENCHMARK, "1", \
      "0: the tensor-core conv launches its pixel tiles first (not each pixel tile's channel tiles together)") \
    X(vulkan_cm_inv, VULKAN_CM_INV, INT, 128, 0, 0, "128|256", "vulkan", BENCHMARK, "128", \
      "invocations per tensor-core conv workgroup (256: eight subgroups)") \
    X(vulkan_cm_tile, VULKAN_CM_TILE, INT, -1, 0, 0, "0|4|5|6", "vulkan", BENCHMARK, "by shape", \
      "force a tensor-core conv tile MODE (0 or 4 with 128 invocations; 0, 4, 5 or 6 with 256)") \
    X(vulkan_transpose16, VULKAN_TRANSPOSE16, BOOL, 1, 0, 1, NULL, "vulkan", BENCHMARK, "1", \
      "0: layout-changing converts in the element tile instead of 16-byte-vector tiles") \
    X(vulkan_upsample_vec, VULKAN_UPSAMPLE_VEC, BOOL, 1, 0, 1, NULL, "vulkan", BENCHMARK, "1", \
      "0: nearest upsample and strided same-dtype converts by the element walk instead of 16-byte vectors") \
    X(vulkan_attn_cg, VULKAN_ATTN_CG, INT, -1, 0, 0, "2|4|8", "vulkan", BENCHMARK, "by shape", \
      "force the large-head attention shader with that column-group split for heads above 64") \
    X(vulkan_attn_r64, VULKAN_ATTN_R64, BOOL, -1, 0, 1, NULL, "vulkan", BENCHMARK, "from 72 workgroups", \
      "force 64 query rows per workgroup in the large-head attention off (0) or on (1)") \
    X(hip_host_register, HIP_HOST_REGISTER, BOOL, 1, 0, 1, NULL, "hip", BENCHMARK, "1", \
      "0: `dk_host_alloc` blocks of 8 MiB and more come from the runtime's pinned allocation") \
    X(hip_fast, HIP_FAST, BOOL, 1, 0, 1, NULL, "hip", BENCHMARK, "1", \
      "0: the fast conv GEMM (wgmma, TMA), the narrow and shallow convs and the fast attention kernel off") \
    X(hip_fast_attn, HIP_FAST_ATTN, BOOL, 1, 0, 1, NULL, "hip", BENCHMARK, "1", \
      "0: the fast (D == Dv in 64..512) attention kernel off") \
    X(hip_narrow, HIP_NARROW, BOOL, 1, 0, 1, NULL, "hip", BENCHMARK, "1", \
      "0: the direct narrow conv (Cout/groups <= 8) off") \
    X(hip_shallow, HIP_SHALLOW, BOOL, 1, 0, 1, NULL, "hip", BENCHMARK, "1", \
      "0: the direct conv for shallow reductions (Cin/groups x taps <= 32, e.g. 3 -> 128 3x3) off") \
    X(hip_narrow_tpb, HIP_NARROW_TPB, INT, -1, 1, 1024, NULL, "hip", BENCHMARK, "by shape, at most 8", \
      "tiles per block of the narrow conv") \
    X(hip_gemm_mma_4warp, HIP_GEMM_MMA_4WARP, BOOL, -1, 0, 1, NULL, "hip", BENCHMARK, "where K >= 2048", \
      "mma.sync fast GEMM: the 4-warp variant never (0) or always (1)") \
    X(hip_wgmma, HIP_WGMMA, INT, -1, 0, 0, "0|2|4", "hip", BENCHMARK, "by shape", \
      "Hopper wgmma conv GEMM off (0), or two / four warpgroups") \
    X(hip_tma, HIP_TMA, BOOL, 1, 0, 1, NULL, "hip", BENCHMARK, "1", \
      "0: Hopper TMA loads in the wgmma conv off (cp.async instead)") \
    X(hip_stage_nhwc, HIP_STAGE_NHWC, BOOL, 1, 0, 1, NULL, "hip", BENCHMARK, "1", \
      "0: f16/bf16 conv operands that are not channels-last are not copied to channels-last scratch") \
    X(hip_pad_cin, HIP_PAD_CIN, BOOL, 1, 0, 1, NULL, "hip", BENCHMARK, "1", \
      "0: f16/bf16 convs with few input channels (e.g. 3) take the generic kernel instead of the fast GEMM on " \
      "channels zero-padded to its reduction slice") \
    X(hip_up2, HIP_UP2, BOOL, 1, 0, 1, NULL, "hip", BENCHMARK, "1", \
      "0: fused 2x upsample convs upsample in the input indexing instead of four phase convs") \
    X(hip_transpose16, HIP_TRANSPOSE16, BOOL, 1, 0, 1, NULL, "hip", BENCHMARK, "1", \
      "0: layout-changing converts in the element tile instead of 16-byte-vector tiles") \
    X(hip_upsample_vec, HIP_UPSAMPLE_VEC, BOOL, 1, 0, 1, NULL, "hip", BENCHMARK, "1", \
      "0: nearest upsample and strided same-dtype converts by the element walk instead of 16-byte vectors") \
    X(hip_attn_split, HIP_ATTN_SPLIT, BOOL, 1, 0, 1, NULL, "hip", BENCHMARK, "1", \
      "0: split-KV attention (partials merged by a second kernel) off") \
    X(hip_attn_rows, HIP_ATTN_ROWS, BOOL, 1, 0, 1, NULL, "hip", BENCHMARK, "1", \
      "0: the small-head attention kernel (D, Dv <= 128) off") \
    X(hip_attn_wgmma, HIP_ATTN_WGMMA, BOOL, 1, 0, 1, NULL, "hip", BENCHMARK, "1", \
      "0: Hopper wgmma attention kernels off (the mma.sync kernels instead)") \
    X(vae_pinned, VAE_PINNED, BOOL, 1, 0, 1, NULL, "vae", BENCHMARK, "1", \
      "0: the banded VAE decode on a GPU keeps host activations in `malloc` memory, not pinned")
/* clang-format on */

typedef enum { DK_KNOB_BOOL, DK_KNOB_INT, DK_KNOB_ENUM, DK_KNOB_STRING } dk_knob_type;
typedef enum { DK_KNOB_USER, DK_KNOB_DIAGNOSTIC, DK_KNOB_BENCHMARK } dk_knob_class;

#define DK_KNOB_FIELD_BOOL(f) int64_t f;
#define DK_KNOB_FIELD_INT(f) int64_t f;
#define DK_KNOB_FIELD_ENUM(f) int64_t f;
#define DK_KNOB_FIELD_STRING(f) char f[DK_KNOB_STRING_MAX];
#define DK_KNOB_FIELD(f, N, T, d, lo, hi, acc, be, cl, dd, doc) DK_KNOB_FIELD_##T(f)

/* The values a context runs with: ctx->knobs.vulkan_coopmat etc. */
typedef struct dk_knobs {
    DK_KNOB_LIST(DK_KNOB_FIELD)
} dk_knobs;

#define DK_KNOB_ID(f, N, T, d, lo, hi, acc, be, cl, dd, doc) DK_KNOB_ID_##N,
typedef enum { DK_KNOB_LIST(DK_KNOB_ID) DK_KNOB_COUNT } dk_knob_id;

typedef struct dk_knob_info {
    const char *name; /* "DIFKERN_..." */
    const char *field;
    dk_knob_type type;
    int64_t def, lo, hi;
    const char *accepted; /* "a|b|c" or NULL */
    const char *backend;
    dk_knob_class cls;
    const char *def_text, *doc;
    size_t offset; /* in dk_knobs */
} dk_knob_info;

const dk_knob_info *dk__knob_info(int id); /* NULL outside 0..DK_KNOB_COUNT-1 */

/* Whether this build reads the BENCHMARK class (DIFKERN_DEV_KNOBS). */
int dk__knobs_dev(void);

/* Every knob: its value in `settings` ("NAME=VALUE;NAME=VALUE", may be NULL)
 * where named there (the environment variable is then not read), else in the
 * environment, else its default.  On a bad value, an unknown name or a
 * benchmark knob in settings of a build without them: DK_ERR_INVALID_ARGUMENT,
 * the reason in err. */
dk_status dk__knobs_load(dk_knobs *k, const char *settings, char *err, size_t cap);

/* One knob from the environment alone, for code that runs without a context
 * (the file readers): its default when unset. */
dk_status dk__knob_env(dk_knob_id id, dk_knobs *k, char *err, size_t cap);

/* Knob `name` ("DIFKERN_...") of k as text (see dk_setting_value). */
dk_status dk__knob_text(const dk_knobs *k, const char *name, char *value, size_t cap, char *err, size_t errcap);

#endif
