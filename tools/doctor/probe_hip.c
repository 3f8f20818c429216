/* What libamdhip64 and libcuda say, asked directly (dlopen, as the library's
 * HIP backend does): versions, devices, gfx target or compute capability.
 * The libraries stay loaded (their process-wide state outlives dlclose). */
#define _POSIX_C_SOURCE 200809L
#include "doctor.h"
#include "hip_gfx_name.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__unix__) || defined(__APPLE__)
#include <dlfcn.h>
#define DD_HAVE_DL 1
#endif

typedef int (*dd_fn_u)(unsigned);
typedef int (*dd_fn_pi)(int *);
typedef int (*dd_fn_pi_i)(int *, int);
typedef int (*dd_fn_name)(char *, int, int);
typedef int (*dd_fn_mem)(size_t *, int);
typedef int (*dd_fn_attr)(int *, int, int);
typedef int (*dd_fn_props)(void *, int);

#ifdef DD_HAVE_DL
static void *dd_sym(void *lib, const char *name) {
    return lib ? dlsym(lib, name) : NULL;
}

/* object pointer -> function pointer without a cast ISO C forbids */
#define DD_LOAD(var, lib, name)                 \
    do {                                        \
        void *dd_p_ = dd_sym((lib), (name));    \
        memcpy(&(var), &dd_p_, sizeof dd_p_);   \
    } while (0)

static void *dd_open(dd_hip_runtime *r, const char *const *libs) {
    int i;
    size_t used = 0;
    for (i = 0; libs[i]; i++) {
        void *lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
        if (lib) {
            dd_copy(r->lib, sizeof r->lib, libs[i]);
            r->loaded = 1;
            return lib;
        }
        used += (size_t)snprintf(r->error + used, used < sizeof r->error ? sizeof r->error - used : 0, "%s%s not found",
                                 used ? "; " : "", libs[i]);
        if (used >= sizeof r->error) used = sizeof r->error - 1;
    }
    return NULL;
}

static void dd_probe_amd(dd_hip_runtime *r) {
    static const char *const libs[] = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5", NULL};
    void *lib = dd_open(r, libs);
    dd_fn_u init;
    dd_fn_pi runtime_version, driver_version, count;
    dd_fn_name name;
    dd_fn_mem mem;
    dd_fn_props props;
    int i, rc;
    if (!lib) return;
    r->error[0] = 0;
    DD_LOAD(init, lib, "hipInit");
    DD_LOAD(runtime_version, lib, "hipRuntimeGetVersion");
    DD_LOAD(driver_version, lib, "hipDriverGetVersion");
    DD_LOAD(count, lib, "hipGetDeviceCount");
    DD_LOAD(name, lib, "hipDeviceGetName");
    DD_LOAD(mem, lib, "hipDeviceTotalMem");
    DD_LOAD(props, lib, "hipGetDevicePropertiesR0600");
    if (!props) DD_LOAD(props, lib, "hipGetDeviceProperties");
    if (runtime_version) (void)runtime_version(&r->runtime_version);
    if (driver_version) (void)driver_version(&r->driver_version);
    /* HIP_VERSION encoding: major * 10^7 + minor * 10^5 + patch */
    snprintf(r->versions, sizeof r->versions, "runtime %d.%d.%d, driver %d.%d.%d", r->runtime_version / 10000000,
             r->runtime_version / 100000 % 100, r->runtime_version % 100000, r->driver_version / 10000000,
             r->driver_version / 100000 % 100, r->driver_version % 100000);
    if (!init || !count) {
        dd_copy(r->error, sizeof r->error, "the library lacks hipInit / hipGetDeviceCount");
        return;
    }
    rc = init(0);
    if (rc) {
        snprintf(r->error, sizeof r->error, "hipInit failed (error %d): no usable AMD GPU or driver", rc);
        return;
    }
    r->init_ok = 1;
    if (count(&r->count) || r->count < 0) r->count = 0;
    if (r->count > DD_MAX_HIP_DEVICES) r->count = DD_MAX_HIP_DEVICES;
    for (i = 0; i < r->count; i++) {
        size_t bytes = 0;
        if (name && name(r->name[i], (int)sizeof r->name[i], i)) r->name[i][0] = 0;
        if (mem && !mem(&bytes, i)) r->memory[i] = bytes;
        if (props) {
            unsigned char *buf = (unsigned char *)calloc(1, 16384);
            if (buf && !props(buf, i)) (void)dk_hip_scan_gfx(buf, 16384, r->arch[i], sizeof r->arch[i]);
            free(buf);
        }
    }
}

static void dd_probe_cuda(dd_hip_runtime *r) {
    static const char *const libs[] = {"libcuda.so.1", "libcuda.so", NULL};
    void *lib = dd_open(r, libs);
    dd_fn_u init;
    dd_fn_pi driver_version, count;
    dd_fn_pi_i get;
    dd_fn_name name;
    dd_fn_mem mem;
    dd_fn_attr attr;
    int i, rc;
    if (!lib) return;
    r->error[0] = 0;
    DD_LOAD(init, lib, "cuInit");
    DD_LOAD(driver_version, lib, "cuDriverGetVersion");
    DD_LOAD(count, lib, "cuDeviceGetCount");
    DD_LOAD(get, lib, "cuDeviceGet");
    DD_LOAD(name, lib, "cuDeviceGetName");
    DD_LOAD(mem, lib, "cuDeviceTotalMem_v2");
    DD_LOAD(attr, lib, "cuDeviceGetAttribute");
    if (driver_version) (void)driver_version(&r->driver_version);
    /* CUDA_VERSION encoding: major * 1000 + minor * 10 */
    snprintf(r->versions, sizeof r->versions, "driver API %d.%d", r->driver_version / 1000, r->driver_version % 1000 / 10);
    if (!init || !count || !get) {
        dd_copy(r->error, sizeof r->error, "the library lacks cuInit / cuDeviceGetCount / cuDeviceGet");
        return;
    }
    rc = init(0);
    if (rc) {
        snprintf(r->error, sizeof r->error, "cuInit failed (CUresult %d): no usable NVIDIA GPU or driver", rc);
        return;
    }
    r->init_ok = 1;
    if (count(&r->count) || r->count < 0) r->count = 0;
    if (r->count > DD_MAX_HIP_DEVICES) r->count = DD_MAX_HIP_DEVICES;
    for (i = 0; i < r->count; i++) {
        int dev = 0, major = 0, minor = 0;
        size_t bytes = 0;
        if (get(&dev, i)) continue;
        if (name && name(r->name[i], (int)sizeof r->name[i], dev)) r->name[i][0] = 0;
        if (mem && !mem(&bytes, dev)) r->memory[i] = bytes;
        /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / _MINOR */
        if (attr && !attr(&major, 75, dev) && !attr(&minor, 76, dev))
            snprintf(r->arch[i], sizeof r->arch[i], "sm_%d%d", major, minor);
    }
}
#endif

void dd_probe_hip(dd_hip_probe *p) {
    const char *ov = getenv("HSA_OVERRIDE_GFX_VERSION");
    memset(p, 0, sizeof *p);
    p->hip.label = "HIP runtime (libamdhip64)";
    p->cuda.label = "CUDA driver (libcuda)";
    dd_copy(p->hsa_override, sizeof p->hsa_override, ov);
#ifdef DD_HAVE_DL
    dd_probe_amd(&p->hip);
    dd_probe_cuda(&p->cuda);
#else
    dd_copy(p->hip.error, sizeof p->hip.error, "run-time loading is not available on this platform");
    dd_copy(p->cuda.error, sizeof p->cuda.error, "run-time loading is not available on this platform");
#endif
}
