// Host simulation of a CUDA device for the HIP backend's tests: a stand-in
// libcuda.so.1 that runs the backend's real kernels (backends/hip/kernels,
// compiled for the host with DKP_HOSTSIM) on the CPU.  The backend's host code
// loads it through dlopen exactly like the NVIDIA driver, so the shared test
// runner exercises the host side (device pick, code-object pick, buffers,
// launches, argument blocks) and every kernel's indexing, epilogue, online
// softmax and reductions against the CPU reference, on a machine with no GPU.
//
// A block's 256 threads are fibers (ucontext) on the calling thread; a barrier
// switches to the next fiber, so each round runs every thread up to its next
// barrier.  Matrix-core fragments are computed lane by lane from the family's
// C layout (dk_tile.h, dkt_lanewise); the operand layouts of the instructions are
// checked separately by tests/hip/test_tile_layouts.c.
//
// Build variants: default = the NVIDIA configuration (mma.sync m16n8k16 tiles,
// wave32); -DDKP_SIM_CDNA = the CDNA configuration (MFMA 32x32 / 16x16, wave64).
#include "../../../backends/hip/kernels/dk_kernels.hip"

#include <set>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

int dkp_sim_tid;
long long dkp_sim_bid[3];

float dkp_sim_h2f(dkp_u16 h) {
    unsigned sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        float v = (float)m * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    if (e == 31) return dkp_u2f(sign | 0x7f800000u | (m << 13));
    return dkp_u2f(sign | ((e - 15u + 127u) << 23) | (m << 13));
}

dkp_u16 dkp_sim_f2h(float x) {
    dkp_u32 u = dkp_f2u(x), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (dkp_u16)(sign | 0x7e00u);
    if (a >= 0x477ff000u) return (dkp_u16)(sign | 0x7c00u);
    if (a < 0x38800000u) return (dkp_u16)(sign | (dkp_u32)nearbyintf(dkp_u2f(a) * 16777216.0f));
    dkp_u32 r = a + 0x0fffu + ((a >> 13) & 1u);
    return (dkp_u16)(sign | ((((r >> 23) - 127u + 15u)) << 10) | ((r >> 13) & 0x3ffu));
}

namespace {

const int kThreads = DKH_THREADS;
const size_t kStack = 256 * 1024;

typedef void (*sim_entry)(void *args);

struct sim_kernel {
    const char *name;
    sim_entry entry;
};

// The kernels compiled for the host: the REQUIRED entries of hip_kernels.def (the
// NVIDIA-only and sm_90a ones are absent from DKP_HOSTSIM builds, as from AMD code
// objects, and the backend runs without them).
#define SIM_K(NAME, ARGS) {#NAME, [](void *a) { NAME(*(ARGS *)a); }},
#define SIM_NEED_REQUIRED(NAME, ARGS) SIM_K(NAME, ARGS)
#define SIM_NEED_NVIDIA(NAME, ARGS)
#define SIM_NEED_SM90A(NAME, ARGS)
#define SIM_NEED_SM90A_TMA(NAME, ARGS)
#define SIM_NEED_SM90A_VT(NAME, ARGS)
#define SIM_NEED_SM90A_VT_TMA(NAME, ARGS)
const sim_kernel kKernels[] = {
#define DK_HIP_KERNEL(symbol, slot, args, need, matrix, smem) SIM_NEED_##need(symbol, args)
#include "../../../backends/hip/hip_kernels.def"
#undef DK_HIP_KERNEL
};

ucontext_t g_sched;
ucontext_t g_fiber[kThreads];
char *g_stack[kThreads];
int g_state[kThreads];  // 0 runnable, 1 at a barrier, 2 finished
int g_cur;
sim_entry g_entry;
void *g_args;
int g_divergent;

void fiber_main() {
    g_entry(g_args);
    g_state[g_cur] = 2;
}

// Runs one block; returns nonzero if threads disagreed on a barrier.
int run_block() {
    for (int t = 0; t < kThreads; t++) {
        if (!g_stack[t]) g_stack[t] = (char *)malloc(kStack);
        getcontext(&g_fiber[t]);
        g_fiber[t].uc_stack.ss_sp = g_stack[t];
        g_fiber[t].uc_stack.ss_size = kStack;
        g_fiber[t].uc_link = &g_sched;
        makecontext(&g_fiber[t], fiber_main, 0);
        g_state[t] = 0;
    }
    for (;;) {
        int waiting = 0, done = 0;
        for (int t = 0; t < kThreads; t++) {
            if (g_state[t] == 2) continue;
            g_state[t] = 0;
            g_cur = t;
            dkp_sim_tid = t;
            swapcontext(&g_sched, &g_fiber[t]);
        }
        for (int t = 0; t < kThreads; t++) {
            waiting += g_state[t] == 1;
            done += g_state[t] == 2;
        }
        if (done == kThreads) return 0;
        if (done) return 1;  // some threads left while others wait at a barrier
        (void)waiting;
    }
}

double now_ms() {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

int g_ctx_dummy, g_module_dummy;
unsigned g_max_dynamic_shared = 227 * 1024;  // the H100's opt-in limit

}  // namespace

void dkp_sim_sync(void) {
    g_state[g_cur] = 1;
    swapcontext(&g_fiber[g_cur], &g_sched);
}

#define SIM_API extern "C" __attribute__((visibility("default")))

SIM_API int cuInit(unsigned) { return 0; }
SIM_API int cuDeviceGetCount(int *n) { *n = 1; return 0; }
SIM_API int cuDeviceGet(int *d, int i) { *d = i; return i == 0 ? 0 : 101; }
SIM_API int cuDeviceGetName(char *name, int len, int) {
    snprintf(name, (size_t)len, "difkern host simulator (%s tiles)",
#ifdef DKP_SIM_CDNA
             "MFMA-layout"
#else
             "mma.sync-layout"
#endif
    );
    return 0;
}
SIM_API int cuDeviceGetAttribute(int *v, int attr, int) {
    /* compute capability 9.0; multiprocessors (16): 8 here so that small attention
     * grids take the split-KV path, 1 in the CDNA build so that they do not */
#ifdef DKP_SIM_CDNA
    *v = attr == 75 ? 9 : attr == 16 ? 1 : 0;
#else
    *v = attr == 75 ? 9 : attr == 16 ? 8 : 0;
#endif
    return 0;
}
SIM_API int cuDevicePrimaryCtxRetain(void **c, int) { *c = &g_ctx_dummy; return 0; }
SIM_API int cuDevicePrimaryCtxRelease_v2(int) { return 0; }
SIM_API int cuCtxSetCurrent(void *) { return 0; }
SIM_API int cuCtxGetCurrent(void **c) { *c = &g_ctx_dummy; return 0; }
SIM_API int cuCtxGetDevice(int *d) { *d = 0; return 0; }
SIM_API int cuModuleLoadData(void **m, const void *image) { *m = &g_module_dummy; return image ? 0 : 1; }
SIM_API int cuModuleUnload(void *) { return 0; }
SIM_API int cuModuleGetFunction(void **f, void *, const char *name) {
    for (const sim_kernel &k : kKernels)
        if (!strcmp(k.name, name)) {
            *f = (void *)&k;
            return 0;
        }
    return 500;  // CUDA_ERROR_NOT_FOUND
}
SIM_API int cuFuncSetAttribute(void *, int attr, int value) {
    // 8: CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    return attr == 8 && value >= 0 && (unsigned)value <= g_max_dynamic_shared ? 0 : 1;
}
SIM_API int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                           unsigned shared, void *, void **params, void **) {
    const sim_kernel *k = (const sim_kernel *)f;
    // dynamic shared memory: the kernels' simulated shared arrays are static and
    // sized by the kernel; the request only has to respect the opt-in limit
    if (bx != (unsigned)kThreads || by != 1 || bz != 1 || shared > g_max_dynamic_shared) return 1;
    g_entry = k->entry;
    g_args = params[0];
    for (unsigned z = 0; z < gz; z++)
        for (unsigned y = 0; y < gy; y++)
            for (unsigned x = 0; x < gx; x++) {
                dkp_sim_bid[0] = x;
                dkp_sim_bid[1] = y;
                dkp_sim_bid[2] = z;
                if (run_block()) {
                    fprintf(stderr, "dk_sim: %s: threads of block (%u,%u,%u) diverged at a barrier\n", k->name, x, y, z);
                    g_divergent = 1;
                    return 719;  // CUDA_ERROR_LAUNCH_FAILED
                }
            }
    return 0;
}
SIM_API int cuMemAlloc_v2(uint64_t *p, size_t n) {
    void *m = aligned_alloc(256, (n + 255) / 256 * 256);
    *p = (uint64_t)(uintptr_t)m;
    return m ? 0 : 2;
}
SIM_API int cuMemFree_v2(uint64_t p) { free((void *)(uintptr_t)p); return 0; }
SIM_API int cuMemAllocHost_v2(void **p, size_t n) {
    *p = aligned_alloc(256, (n + 255) / 256 * 256);
    return *p ? 0 : 2;
}
SIM_API int cuMemFreeHost(void *p) { free(p); return 0; }
// Registering host memory: nothing to pin on the host; unregistering an
// address that was never registered is an error, as in the driver.
static std::set<void *> g_registered;
SIM_API int cuMemHostRegister_v2(void *p, size_t n, unsigned) {
    if (!p || !n || !g_registered.insert(p).second) return 1;  // CUDA_ERROR_INVALID_VALUE
    return 0;
}
SIM_API int cuMemHostUnregister(void *p) { return g_registered.erase(p) ? 0 : 713; }  // ..._NOT_REGISTERED
SIM_API int cuMemcpyHtoDAsync_v2(uint64_t d, const void *s, size_t n, void *) {
    memcpy((void *)(uintptr_t)d, s, n);
    return 0;
}
SIM_API int cuMemcpyDtoHAsync_v2(void *d, uint64_t s, size_t n, void *) {
    memcpy(d, (const void *)(uintptr_t)s, n);
    return 0;
}
SIM_API int cuMemsetD32Async(uint64_t d, unsigned v, size_t n, void *) {
    for (size_t i = 0; i < n; i++) memcpy((char *)(uintptr_t)d + 4 * i, &v, 4);
    return 0;
}
SIM_API int cuStreamCreate(void **s, unsigned) { *s = &g_ctx_dummy; return 0; }
SIM_API int cuStreamDestroy_v2(void *) { return 0; }
SIM_API int cuStreamSynchronize(void *) { return g_divergent ? 719 : 0; }
SIM_API int cuEventCreate(void **e, unsigned) { *e = calloc(1, sizeof(double)); return *e ? 0 : 2; }
SIM_API int cuEventDestroy_v2(void *e) { free(e); return 0; }
SIM_API int cuEventRecord(void *e, void *) { *(double *)e = now_ms(); return 0; }
SIM_API int cuEventSynchronize(void *) { return 0; }
SIM_API int cuEventElapsedTime(float *ms, void *a, void *b) { *ms = (float)(*(double *)b - *(double *)a); return 0; }
SIM_API int cuGetErrorString(int rc, const char **s) {
    *s = rc == 719 ? "simulated launch failure (barrier divergence)" : "simulated error";
    return 0;
}
