/* difkern-doctor: verify difkern on this machine and write a report.
 *
 * Files: main.c (the run, exit status), options.c (command line),
 * probe_vulkan.c / probe_hip.c (what the runtimes say about each device,
 * queried directly, not through difkern), families.c (which kernel family
 * each op gets and why), run_cases.c (the shared case list of tests/harness
 * against its fp64 reference), bench.c (the short benchmark), report_md.c /
 * report_json.c (the two reports), text.c (growing strings, atomic files). */
#ifndef DD_DOCTOR_H
#define DD_DOCTOR_H

#include <difkern.h>

#include <stddef.h>
#include <stdint.h>

#include "cases.h"

#define DD_TOOL_VERSION "1"
#define DD_MAX_VK_DEVICES 16
#define DD_MAX_HIP_DEVICES 16
#define DD_MAX_TARGETS 48
#define DD_MAX_FAILURES 32   /* kept per target in the report (all are counted) */
#define DD_NUM_BENCH 5

/* ------------------------------------------------------------ text.c */

typedef struct dd_text {
    char *s;
    size_t len, cap;
    int oom;
} dd_text;

void dd_text_printf(dd_text *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void dd_text_json_string(dd_text *t, const char *s); /* a quoted, escaped JSON string */
void dd_text_md_cell(dd_text *t, const char *s);     /* s with '|' and newlines made safe in a table */
void dd_text_free(dd_text *t);
/* Writes t to path through a temporary file beside it (written, flushed,
 * fsync'ed, renamed): a reader sees the old file or the whole new one.
 * Returns 0, or -1 with errno and a message in err. */
int dd_write_atomic(const char *path, const dd_text *t, char *err, size_t cap);
/* 0 when a file can be created in path's directory, else -1 with a message. */
int dd_check_writable(const char *path, char *err, size_t cap);
void dd_copy(char *dst, size_t cap, const char *src);
double dd_now_ms(void);

/* --------------------------------------------------------- options.c */

typedef struct dd_options {
    int want_cpu, want_vulkan, want_hip; /* backends to test */
    int backend_explicit;                /* --backend given: CPU-type Vulkan devices are tested too */
    int device;                          /* -1: every device */
    const char *op;                      /* hc_op name or NULL */
    const char *case_name;               /* exact name, else substring; NULL: all */
    int full;                            /* the whole case list, not the quick subset */
    int odd_views;                       /* cases on changed views (hk_views: size-1 strides, misaligned) */
    int quick_bench, no_bench, no_cases, all_families, verbose, list_cases;
    uint64_t seed;
    const char *out_prefix;
    char md_path[4096], json_path[4096];
    const char *inject;                  /* op name or case-name substring to perturb */
    char command_line[2048];
} dd_options;

/* 0: run; 1: done (help printed); 2: bad usage (message printed). */
int dd_parse_options(int argc, char **argv, dd_options *o);

/* ---------------------------------------------------- probe_vulkan.c */

typedef struct dd_vk_cm {
    uint32_t m, n, k;
    int32_t a, b, c, result, scope;
    int saturating;
} dd_vk_cm;

typedef struct dd_vk_device {
    uint32_t index;
    char name[256];
    uint32_t vendor_id, device_id, api_version, driver_version;
    int type;                        /* VkPhysicalDeviceType */
    int driver_id;
    char driver_name[256], driver_info[256], conformance[32];
    uint32_t subgroup_size, subgroup_min, subgroup_max, subgroup_ops, subgroup_stages;
    int subgroup_size_control, compute_full_subgroups, required_size_compute;
    int f16_arith, memory_model, storage16, push_descriptor;
    int khr_ext, khr_feature, n_khr;
    dd_vk_cm khr[64];
    int nv_ext, nv_feature, n_nv;
    dd_vk_cm nv[32];
    int bf16_ext, bf16_type, bf16_coopmat;
    int n_heaps;
    uint64_t heap_size[16];
    uint32_t heap_flags[16];
    const char *unusable;            /* the library's rule it breaks, NULL: usable */
} dd_vk_device;

typedef struct dd_vk_probe {
    int compiled;                    /* the doctor was built with the Vulkan headers */
    int loader;                      /* libvulkan.so.1 opened */
    uint32_t loader_version;
    char error[512];
    int ndev;
    dd_vk_device dev[DD_MAX_VK_DEVICES];
} dd_vk_probe;

void dd_probe_vulkan(dd_vk_probe *p);
const char *dd_vk_type_name(int type);
const char *dd_vk_component_name(int32_t type, char *buf, size_t cap);
void dd_vk_version(uint32_t v, char *buf, size_t cap);
void dd_vk_driver_version(const dd_vk_device *d, char *buf, size_t cap);

/* ------------------------------------------------------- probe_hip.c */

typedef struct dd_hip_runtime {
    const char *label;               /* "HIP (libamdhip64)" / "CUDA driver (libcuda)" */
    char lib[64];                    /* the soname that opened, "" none */
    int loaded, init_ok, count;
    int runtime_version, driver_version;
    char versions[96];               /* decoded, e.g. "runtime 6.1.40091, driver 6.1.40091" */
    char error[512];
    char name[DD_MAX_HIP_DEVICES][128];
    char arch[DD_MAX_HIP_DEVICES][32]; /* gfx target or sm_XY */
    uint64_t memory[DD_MAX_HIP_DEVICES];
} dd_hip_runtime;

typedef struct dd_hip_probe {
    dd_hip_runtime hip, cuda;
    char hsa_override[64];           /* HSA_OVERRIDE_GFX_VERSION, "" unset */
} dd_hip_probe;

void dd_probe_hip(dd_hip_probe *p);

/* ------------------------------------------------------- families.c */

typedef struct dd_family {
    char family[160];                /* the kernels this op gets */
    char why[400];                   /* why not a faster family ("" when it is the fastest) */
} dd_family;

struct dd_target;
/* Fills t->fam from the library's description and the probe. */
void dd_families(struct dd_target *t, const dd_vk_device *vk, const dd_hip_probe *hip);

/* -------------------------------------------------------------- run */

typedef struct dd_failure {
    char case_name[128];
    char message[1024];
    char reproducer[512];
} dd_failure;

typedef struct dd_bench {
    char name[48];                   /* "conv2d_3x3", ... */
    char spec[160];                  /* the shape that ran */
    int ran;                         /* 1 timed, 0 not run, -1 failed */
    char error[512];
    double ms, wall_ms, flops, bytes;
    uint64_t peak_bytes;             /* decode: device memory peak */
} dd_bench;

typedef struct dd_target {
    dk_backend_kind backend;
    int device_index;                /* passed to dk_context_options.device_index */
    const char *variant;             /* "" default, "nv", "portable" (Vulkan family overrides) */
    char label[192];                 /* e.g. "vulkan #0 (NVIDIA H100 80GB HBM3)" */
    int vk_probe;                    /* index into dd_vk_probe.dev, -1 */
    int cpu_type;                    /* a CPU implementation (CPU backend, lavapipe) */
    int skip;                        /* not tested (skip_why says why) */
    char skip_why[512];
    int created, context_failed;     /* context_failed: an error other than BACKEND_UNAVAILABLE */
    char create_error[1024];
    char describe[1024], device_name[256];
    dd_family fam[HC_OP_COUNT];
    int passed[HC_OP_COUNT], failed[HC_OP_COUNT], skipped[HC_OP_COUNT];
    int nfail;                       /* failures kept in fail[] */
    dd_failure fail[DD_MAX_FAILURES];
    char first_skip[512];            /* one UNSUPPORTED message, for the report */
    double cases_s;
    int bench_quick;
    dd_bench bench[DD_NUM_BENCH];
} dd_target;

typedef struct dd_report {
    dd_options *opt;
    char started[32];                /* UTC, ISO 8601 */
    char host[256];                  /* uname */
    char env[2048];                  /* DIFKERN_* and HSA_OVERRIDE_GFX_VERSION settings */
    int ncases;                      /* cases selected per target */
    dd_vk_probe vk;
    dd_hip_probe hip;
    int ntargets;
    dd_target targets[DD_MAX_TARGETS];
    int total_passed, total_failed, total_skipped, tested;
    double total_s;
    int exit_status;
} dd_report;

/* run_cases.c: runs the selected cases on t's context; returns the failures. */
int dd_run_cases(dk_context *ctx, dd_target *t, const dd_options *o, const hc_case *cases, int ncases);
int dd_case_selected(const dd_options *o, const hc_case *c, const hc_case *all, int ncases);
/* bench.c */
void dd_run_bench(dk_context *ctx, dd_target *t, const dd_options *o);
/* report_*.c */
void dd_report_markdown(const dd_report *r, dd_text *t);
void dd_report_json(const dd_report *r, dd_text *t);
/* What the doctor cannot know (shared by both reports). */
extern const char *const dd_unknowables[];
const char *dd_bench_unit(const dd_bench *b, char *buf, size_t cap);
/* "passed", "failed", "not available" (no context: the backend or device is
 * absent), "not tested" (skipped by the plan). */
const char *dd_target_status(const dd_target *t);
/* An op's result on a target: "passed", "failed", "unsupported", "not run". */
const char *dd_op_status(const dd_target *t, int op);

#endif /* DD_DOCTOR_H */
