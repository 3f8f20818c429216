/* HIP backend: the driver API loaded at run time (no link-time dependency).
 * libamdhip64 (AMD) and libcuda (NVIDIA driver API) expose the same operations
 * under different names; one table (dk_hip_api) holds whichever was found. */
#include "hip_internal.h"

#include <stdio.h>
#include <stdlib.h>

#if defined(__unix__) || defined(__APPLE__)
#include <dlfcn.h>
#define HIPAPI_HAVE_DL 1
#endif

typedef struct hipapi_entry {
    size_t offset;        /* of the function pointer in dk_hip_api */
    const char *names[2]; /* preferred name, fallback (or NULL) */
    int required;
} hipapi_entry;

#define HIPAPI_AT(field) offsetof(dk_hip_api, field)

static const hipapi_entry hipapi_hip[] = {
    {HIPAPI_AT(init), {"hipInit", NULL}, 1},
    {HIPAPI_AT(device_count), {"hipGetDeviceCount", NULL}, 1},
    {HIPAPI_AT(device_get), {"hipDeviceGet", NULL}, 1},
    {HIPAPI_AT(device_name), {"hipDeviceGetName", NULL}, 1},
    {HIPAPI_AT(device_attribute), {"hipDeviceGetAttribute", NULL}, 1},
    {HIPAPI_AT(module_load_data), {"hipModuleLoadData", NULL}, 1},
    {HIPAPI_AT(module_unload), {"hipModuleUnload", NULL}, 1},
    {HIPAPI_AT(module_get_function), {"hipModuleGetFunction", NULL}, 1},
    {HIPAPI_AT(launch), {"hipModuleLaunchKernel", NULL}, 1},
    {HIPAPI_AT(mem_alloc), {"hipMalloc", NULL}, 1},
    {HIPAPI_AT(mem_free), {"hipFree", NULL}, 1},
    {HIPAPI_AT(memcpy_htod_async), {"hipMemcpyHtoDAsync", NULL}, 1},
    {HIPAPI_AT(memcpy_dtoh_async), {"hipMemcpyDtoHAsync", NULL}, 1},
    {HIPAPI_AT(memset_d32_async), {"hipMemsetD32Async", NULL}, 1},
    {HIPAPI_AT(stream_create), {"hipStreamCreateWithFlags", NULL}, 1},
    {HIPAPI_AT(stream_destroy), {"hipStreamDestroy", NULL}, 1},
    {HIPAPI_AT(stream_sync), {"hipStreamSynchronize", NULL}, 1},
    {HIPAPI_AT(event_create), {"hipEventCreateWithFlags", NULL}, 1},
    {HIPAPI_AT(event_destroy), {"hipEventDestroy", NULL}, 1},
    {HIPAPI_AT(event_record), {"hipEventRecord", NULL}, 1},
    {HIPAPI_AT(event_sync), {"hipEventSynchronize", NULL}, 1},
    {HIPAPI_AT(event_elapsed), {"hipEventElapsedTime", NULL}, 1},
    {HIPAPI_AT(hip_set_device), {"hipSetDevice", NULL}, 1},
    {HIPAPI_AT(hip_get_device), {"hipGetDevice", NULL}, 1},
    /* ROCm 6 renamed the struct-returning call; the scan in hip_backend.c does not
     * depend on the struct's layout. */
    {HIPAPI_AT(hip_get_properties), {"hipGetDevicePropertiesR0600", "hipGetDeviceProperties"}, 1},
    {HIPAPI_AT(hip_error_string), {"hipGetErrorString", NULL}, 0},
    {HIPAPI_AT(hip_host_malloc), {"hipHostMalloc", NULL}, 0},
    {HIPAPI_AT(host_free), {"hipHostFree", NULL}, 0},
    {HIPAPI_AT(host_register), {"hipHostRegister", NULL}, 0},
    {HIPAPI_AT(host_unregister), {"hipHostUnregister", NULL}, 0},
};

static const hipapi_entry hipapi_cuda[] = {
    {HIPAPI_AT(init), {"cuInit", NULL}, 1},
    {HIPAPI_AT(device_count), {"cuDeviceGetCount", NULL}, 1},
    {HIPAPI_AT(device_get), {"cuDeviceGet", NULL}, 1},
    {HIPAPI_AT(device_name), {"cuDeviceGetName", NULL}, 1},
    {HIPAPI_AT(device_attribute), {"cuDeviceGetAttribute", NULL}, 1},
    {HIPAPI_AT(module_load_data), {"cuModuleLoadData", NULL}, 1},
    {HIPAPI_AT(module_unload), {"cuModuleUnload", NULL}, 1},
    {HIPAPI_AT(module_get_function), {"cuModuleGetFunction", NULL}, 1},
    {HIPAPI_AT(launch), {"cuLaunchKernel", NULL}, 1},
    {HIPAPI_AT(mem_alloc), {"cuMemAlloc_v2", NULL}, 1},
    {HIPAPI_AT(mem_free), {"cuMemFree_v2", NULL}, 1},
    {HIPAPI_AT(memcpy_htod_async), {"cuMemcpyHtoDAsync_v2", NULL}, 1},
    {HIPAPI_AT(memcpy_dtoh_async), {"cuMemcpyDtoHAsync_v2", NULL}, 1},
    {HIPAPI_AT(memset_d32_async), {"cuMemsetD32Async", NULL}, 1},
    {HIPAPI_AT(stream_create), {"cuStreamCreate", NULL}, 1},
    {HIPAPI_AT(stream_destroy), {"cuStreamDestroy_v2", NULL}, 1},
    {HIPAPI_AT(stream_sync), {"cuStreamSynchronize", NULL}, 1},
    {HIPAPI_AT(event_create), {"cuEventCreate", NULL}, 1},
    {HIPAPI_AT(event_destroy), {"cuEventDestroy_v2", NULL}, 1},
    {HIPAPI_AT(event_record), {"cuEventRecord", NULL}, 1},
    {HIPAPI_AT(event_sync), {"cuEventSynchronize", NULL}, 1},
    {HIPAPI_AT(event_elapsed), {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, 1},
    {HIPAPI_AT(cu_primary_retain), {"cuDevicePrimaryCtxRetain", NULL}, 1},
    {HIPAPI_AT(cu_primary_release), {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}, 1},
    {HIPAPI_AT(cu_ctx_set_current), {"cuCtxSetCurrent", NULL}, 1},
    {HIPAPI_AT(cu_ctx_get_current), {"cuCtxGetCurrent", NULL}, 1},
    {HIPAPI_AT(cu_ctx_get_device), {"cuCtxGetDevice", NULL}, 1},
    {HIPAPI_AT(cu_error_string), {"cuGetErrorString", NULL}, 0},
    {HIPAPI_AT(cu_func_set_attribute), {"cuFuncSetAttribute", NULL}, 0},
    {HIPAPI_AT(cu_tensor_map_encode_tiled), {"cuTensorMapEncodeTiled", NULL}, 0},
    {HIPAPI_AT(cu_mem_alloc_host), {"cuMemAllocHost_v2", NULL}, 0},
    {HIPAPI_AT(host_free), {"cuMemFreeHost", NULL}, 0},
    {HIPAPI_AT(host_register), {"cuMemHostRegister_v2", "cuMemHostRegister"}, 0},
    {HIPAPI_AT(host_unregister), {"cuMemHostUnregister", NULL}, 0},
};

#ifdef HIPAPI_HAVE_DL
/* Fills the table from lib; returns the first required name missing, or NULL. */
static const char *hipapi_fill(dk_hip_api *api, const hipapi_entry *e, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) {
        void *sym = dlsym(api->lib, e[i].names[0]);
        if (!sym && e[i].names[1]) sym = dlsym(api->lib, e[i].names[1]);
        if (!sym && e[i].required) return e[i].names[0];
        /* object pointer -> function pointer without a cast ISO C forbids */
        memcpy((char *)api + e[i].offset, &sym, sizeof sym);
    }
    return NULL;
}

static int hipapi_try(dk_hip_api *api, const char *const *libs, const hipapi_entry *e, size_t n, int is_cuda,
                      char *why, size_t cap) {
    size_t i;
    for (i = 0; libs[i]; i++) {
        const char *missing;
        void *lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
        size_t used = strlen(why);
        if (!lib) {
            snprintf(why + used, cap - used, "%s%s not found", used ? "; " : "", libs[i]);
            continue;
        }
        memset(api, 0, sizeof *api);
        api->lib = lib;
        api->is_cuda = is_cuda;
        missing = hipapi_fill(api, e, n);
        if (!missing) return 1;
        snprintf(why + used, cap - used, "%s%s lacks %s", used ? "; " : "", libs[i], missing);
        dlclose(lib);
        memset(api, 0, sizeof *api);
    }
    return 0;
}
#endif

dk_status dk__hip_api_load(dk_context *ctx, dk_hip_api *api, int cuda, char *why, size_t cap) {
#ifdef HIPAPI_HAVE_DL
    static const char *const hip_libs[] = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5", NULL};
    static const char *const cuda_libs[] = {"libcuda.so.1", "libcuda.so", NULL};
    int ok = cuda ? hipapi_try(api, cuda_libs, hipapi_cuda, sizeof hipapi_cuda / sizeof hipapi_cuda[0], 1, why, cap)
                  : hipapi_try(api, hip_libs, hipapi_hip, sizeof hipapi_hip / sizeof hipapi_hip[0], 0, why, cap);
    (void)ctx;
    return ok ? DK_OK : DK_ERR_BACKEND_UNAVAILABLE;
#else
    size_t used = strlen(why);
    (void)ctx;
    (void)api;
    (void)cuda;
    snprintf(why + used, cap - used, "%srun-time loading is not available on this platform", used ? "; " : "");
    return DK_ERR_BACKEND_UNAVAILABLE;
#endif
}

/* The GPU runtime stays mapped: libamdhip64 / libcuda keep process-wide state
 * (threads, atexit handlers, allocations they still point to) that dlclose
 * would unmap from under them; the process exit reclaims it. */
void dk__hip_api_unload(dk_hip_api *api) {
    memset(api, 0, sizeof *api);
}

const char *dk__hip_api_error(const dk_hip_api *api, int status) {
    const char *s = NULL;
    if (api->is_cuda && api->cu_error_string) {
        if (api->cu_error_string(status, &s) != 0) s = NULL;
    } else if (!api->is_cuda && api->hip_error_string) {
        s = api->hip_error_string(status);
    }
    return s ? s : "unknown error";
}

#undef HIPAPI_AT
#undef HIPAPI_HAVE_DL
