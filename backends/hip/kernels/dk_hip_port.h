/* Portability layer for the HIP backend's kernels: one source, two compilers.
 *
 *   AMD:    clang -x hip --cuda-device-only -nogpuinc -nogpulib (no HIP headers,
 *           no device libraries: amdgcn builtins only);
 *   NVIDIA: nvcc -cubin / -ptx (CUDA's own built-ins).
 *
 * Debian's HIP 5.2 headers do not compile against CUDA 13, and the AMD build
 * needs nothing from them, so the few spellings that differ live here: thread and
 * block ids, shared memory, barriers, launch bounds, bit casts, f16/bf16
 * conversions and the transcendental functions of the epilogues. */
#ifndef DK_HIP_PORT_H
#define DK_HIP_PORT_H

#if defined(__CUDACC__)
#define DKP_NVIDIA 1
#define DKP_WAVE 32
#define DKP_KERNEL(threads) extern "C" __global__ void __launch_bounds__(threads)
/* at least `blocks` resident blocks per SM: the compiler caps the registers */
#define DKP_KERNEL_BLOCKS(threads, blocks) extern "C" __global__ void __launch_bounds__(threads, blocks)
#define DKP_DEV static __device__ __forceinline__
#define DKP_SHARED __shared__
#elif defined(__HIP__) && defined(__AMDGCN__)
#define DKP_AMD 1
#define DKP_WAVE __AMDGCN_WAVEFRONT_SIZE
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define DKP_KERNEL(threads) \
    extern "C" __global__ void __attribute__((amdgpu_flat_work_group_size(threads, threads)))
#define DKP_KERNEL_BLOCKS(threads, blocks) DKP_KERNEL(threads) /* NVIDIA's register cap only */
#define DKP_DEV static __device__ inline __attribute__((always_inline))
#define DKP_SHARED __shared__
#elif defined(DKP_HOSTSIM)
/* Host simulation (tests/hip/sim): a block's threads are fibers on one CPU
 * thread and a barrier switches between them; see tests/hip/sim/dk_sim.cc. */
#include <math.h>
#define DKP_KERNEL(threads) extern "C" void
#define DKP_KERNEL_BLOCKS(threads, blocks) extern "C" void
#define DKP_DEV static inline
#define DKP_SHARED static
#else
#error "dk_hip_port.h: compile with nvcc or clang -x hip (device side)"
#endif

typedef unsigned short dkp_u16;
typedef unsigned int dkp_u32;
typedef long long dkp_i64;
typedef unsigned long long dkp_u64;

#if defined(DKP_NVIDIA)
DKP_DEV int dkp_tid(void) { return (int)threadIdx.x; }
DKP_DEV dkp_i64 dkp_bid_x(void) { return (dkp_i64)blockIdx.x; }
DKP_DEV dkp_i64 dkp_bid_y(void) { return (dkp_i64)blockIdx.y; }
DKP_DEV dkp_i64 dkp_bid_z(void) { return (dkp_i64)blockIdx.z; }
DKP_DEV dkp_i64 dkp_nblocks_x(void) { return (dkp_i64)gridDim.x; }
DKP_DEV void dkp_sync(void) { __syncthreads(); }
DKP_DEV float dkp_u2f(dkp_u32 u) { return __uint_as_float(u); }
DKP_DEV dkp_u32 dkp_f2u(float f) { return __float_as_uint(f); }
DKP_DEV float dkp_h2f(dkp_u16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
DKP_DEV dkp_u16 dkp_f2h(float f) {
    dkp_u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
DKP_DEV float dkp_exp(float x) { return expf(x); }
DKP_DEV float dkp_erf(float x) { return erff(x); }
DKP_DEV float dkp_tanh(float x) { return tanhf(x); }
DKP_DEV float dkp_sqrt(float x) { return sqrtf(x); }
#elif defined(DKP_HOSTSIM)
extern int dkp_sim_tid;
extern long long dkp_sim_bid[3];
void dkp_sim_sync(void);
DKP_DEV int dkp_tid(void) { return dkp_sim_tid; }
DKP_DEV dkp_i64 dkp_bid_x(void) { return dkp_sim_bid[0]; }
DKP_DEV dkp_i64 dkp_bid_y(void) { return dkp_sim_bid[1]; }
DKP_DEV dkp_i64 dkp_bid_z(void) { return dkp_sim_bid[2]; }
DKP_DEV void dkp_sync(void) { dkp_sim_sync(); }
DKP_DEV float dkp_u2f(dkp_u32 u) { float f; __builtin_memcpy(&f, &u, 4); return f; }
DKP_DEV dkp_u32 dkp_f2u(float f) { dkp_u32 u; __builtin_memcpy(&u, &f, 4); return u; }
float dkp_sim_h2f(dkp_u16 h);
dkp_u16 dkp_sim_f2h(float f);
DKP_DEV float dkp_h2f(dkp_u16 h) { return dkp_sim_h2f(h); }
DKP_DEV dkp_u16 dkp_f2h(float f) { return dkp_sim_f2h(f); }
DKP_DEV float dkp_exp(float x) { return expf(x); }
DKP_DEV float dkp_erf(float x) { return erff(x); }
DKP_DEV float dkp_tanh(float x) { return tanhf(x); }
DKP_DEV float dkp_sqrt(float x) { return sqrtf(x); }
#else
DKP_DEV int dkp_tid(void) { return (int)__builtin_amdgcn_workitem_id_x(); }
DKP_DEV dkp_i64 dkp_bid_x(void) { return (dkp_i64)__builtin_amdgcn_workgroup_id_x(); }
DKP_DEV dkp_i64 dkp_bid_y(void) { return (dkp_i64)__builtin_amdgcn_workgroup_id_y(); }
DKP_DEV dkp_i64 dkp_bid_z(void) { return (dkp_i64)__builtin_amdgcn_workgroup_id_z(); }
/* Without the device libraries there is no gridDim: kernels that need the grid
 * size get it as an argument. */
DKP_DEV void dkp_sync(void) {
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
DKP_DEV float dkp_u2f(dkp_u32 u) { return __builtin_bit_cast(float, u); }
DKP_DEV dkp_u32 dkp_f2u(float f) { return __builtin_bit_cast(dkp_u32, f); }
DKP_DEV float dkp_h2f(dkp_u16 h) { return (float)__builtin_bit_cast(_Float16, h); }
DKP_DEV dkp_u16 dkp_f2h(float f) { return __builtin_bit_cast(dkp_u16, (_Float16)f); }
DKP_DEV float dkp_exp(float x) { return __builtin_expf(x); }
DKP_DEV float dkp_sqrt(float x) { return __builtin_sqrtf(x); }
/* erf: Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7). */
DKP_DEV float dkp_erf(float x) {
    float a = __builtin_fabsf(x), t = 1.0f / (1.0f + 0.3275911f * a);
    float p = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
    float r = 1.0f - p * __builtin_expf(-a * a);
    return x < 0.0f ? -r : r;
}
/* tanh: odd series near 0 (no cancellation), exp form elsewhere. */
DKP_DEV float dkp_tanh(float x) {
    float a = __builtin_fabsf(x), r;
    if (a < 0.25f) {
        float x2 = x * x;
        return x * (1.0f + x2 * (-1.0f / 3.0f + x2 * (2.0f / 15.0f + x2 * (-17.0f / 315.0f + x2 * (62.0f / 2835.0f)))));
    }
    r = a > 20.0f ? 1.0f : 1.0f - 2.0f / (__builtin_expf(2.0f * a) + 1.0f);
    return x < 0.0f ? -r : r;
}
#endif

/* bf16 <-> f32 by bits: round to nearest even, NaN stays NaN (NVIDIA: the
 * sm_80+ conversion instruction, one instead of ~6 integer operations). */
DKP_DEV float dkp_b2f(dkp_u16 h) { return dkp_u2f((dkp_u32)h << 16); }
DKP_DEV dkp_u16 dkp_f2b(float f) {
#if defined(DKP_NVIDIA)
    dkp_u16 h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#else
    dkp_u32 u = dkp_f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (dkp_u16)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (dkp_u16)(u >> 16);
#endif
}

/* 16-byte vectors of four 32-bit values (vector loads and stores; .x .y .z .w). */
#if defined(DKP_NVIDIA)
typedef float4 dkp_f32x4;
typedef uint4 dkp_u32x4;
#elif defined(DKP_AMD)
typedef float dkp_f32x4 __attribute__((ext_vector_type(4)));
typedef dkp_u32 dkp_u32x4 __attribute__((ext_vector_type(4)));
#else
struct alignas(16) dkp_f32x4 {
    float x, y, z, w;
};
struct alignas(16) dkp_u32x4 {
    dkp_u32 x, y, z, w;
};
#endif

/* Storage types: DT 1 = f32, 2 = f16, 3 = bf16 (the values of dk_dtype). */
template <int DT> struct dkp_store { typedef dkp_u16 T; };
template <> struct dkp_store<1> { typedef float T; };

DKP_DEV float dkp_to_f32(float v, int) { return v; }
DKP_DEV float dkp_to_f32(dkp_u16 v, int dt) { return dt == 3 ? dkp_b2f(v) : dkp_h2f(v); }
template <int DT> struct dkp_conv { DKP_DEV dkp_u16 from(float v) { return DT == 3 ? dkp_f2b(v) : dkp_f2h(v); } };
template <> struct dkp_conv<1> { DKP_DEV float from(float v) { return v; } };


/* Untyped loads/stores by run-time dtype (element index, not bytes). */
DKP_DEV float dkp_load(dkp_u64 base, int dt, dkp_i64 i) {
    if (dt == 1) return ((const float *)base)[i];
    return dkp_to_f32(((const dkp_u16 *)base)[i], dt);
}
DKP_DEV void dkp_store_f(dkp_u64 base, int dt, dkp_i64 i, float v) {
    if (dt == 1) ((float *)base)[i] = v;
    else if (dt == 2) ((dkp_u16 *)base)[i] = dkp_f2h(v);
    else ((dkp_u16 *)base)[i] = dkp_f2b(v);
}

/* The activations of dk_activation (same numbering). */
DKP_DEV float dkp_act(int act, float x) {
    switch (act) {
    case 1: return x > 0.0f ? x : 0.0f;
    case 2: return x / (1.0f + dkp_exp(-x));
    case 3: return 0.5f * x * (1.0f + dkp_erf(x * 0.70710678118654752f));
    case 4: return 0.5f * x * (1.0f + dkp_tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case 5: return dkp_tanh(x);
    default: return x;
    }
}

/* The same with SiLU on the hardware exp2 and a fast division, for the
 * memory-bound kernels (GroupNorm+SiLU): the IEEE expf and division cost ~35
 * instructions per element there, about the time of the element's memory
 * traffic.  Relative error ~1e-6 (f32 tolerances are 1e-4 and wider). */
DKP_DEV float dkp_act_fast(int act, float x) {
    if (act != 2) return dkp_act(act, x);
#if defined(DKP_NVIDIA)
    return __fdividef(x, 1.0f + __expf(-x)); /* x / inf -> 0, as the IEEE form gives */
#elif defined(DKP_AMD)
    return x * __builtin_amdgcn_rcpf(1.0f + __builtin_exp2f(x * -1.4426950408889634f));
#else
    return x / (1.0f + expf(-x));
#endif
}

#endif /* DK_HIP_PORT_H */
