/* CPU backend: the cache-blocked fp32 GEMM core shared by conv2d,
 * conv_transpose2d, matmul/linear and attention.
 *
 * Blocking (GotoBLAS style): a task owns NC output columns; for each KC slice
 * of the reduction it packs B (KC x NC, ~128 KiB, stays in L2), then sweeps
 * every MR-row panel of the pre-packed A through an MR x NR register tile.
 * The micro-kernel is plain C that compilers vectorize; on x86-64 GCC/Clang
 * also build an AVX-512 variant (x86-64-v4) and AVX2+FMA (x86-64-v3) clones,
 * picked at run time from the CPU's features. */
#include "cpu_internal.h"

#include <string.h>

#define CPUGEMM_MR DK_CPU_MR
#define CPUGEMM_NR DK_CPU_NR

int64_t dk__cpu_packed_a_size(int64_t rows, int64_t k) {
    return (rows + CPUGEMM_MR - 1) / CPUGEMM_MR * CPUGEMM_MR * k;
}

void dk__cpu_pack_a_f32(float *dst, const float *src, int64_t rows, int64_t k, int64_t rs, int64_t ks) {
    int64_t panels = (rows + CPUGEMM_MR - 1) / CPUGEMM_MR, p, kk, i;
    for (p = 0; p < panels; p++) {
        float *d = dst + p * k * CPUGEMM_MR;
        for (kk = 0; kk < k; kk++)
            for (i = 0; i < CPUGEMM_MR; i++) {
                int64_t r = p * CPUGEMM_MR + i;
                d[kk * CPUGEMM_MR + i] = r < rows ? src[r * rs + kk * ks] : 0.0f;
            }
    }
}

/* The register tile is MR x NR = 6 x 32 on every ISA, so the packing never
 * depends on the CPU.  FMA latency (4 cycles) times two FMA ports needs at
 * least 8 independent accumulators: with AVX-512's 32 registers the whole tile
 * (12 zmm accumulators) stays in registers; with AVX2's 16 ymm (and the plain
 * fallback) it runs as two 6 x 16 halves (12 ymm accumulators each). */
#if defined(__GNUC__)
typedef float cpugemm_v16 __attribute__((vector_size(64)));
/* ISO C mode turns off FMA contraction in GCC; the micro-kernels opt back in. */
#if !defined(__clang__)
#define CPUGEMM_CONTRACT __attribute__((optimize("fp-contract=fast")))
#else
#define CPUGEMM_CONTRACT
#endif
/* The loops over the MR rows must be unrolled whole so that the accumulators
 * live in registers: GCC does that by itself at -O3 (the library's build) but
 * not at -O2, where the rolled loop kept them in memory (2 FMAs per AVX-512 loop
 * body instead of 12) and made an -O2 build's 3x3 conv 1.27x slower
 * (docs/cpu-backend.md). */
#define CPUGEMM_ROWS _Pragma("GCC unroll 6")
#if defined(__x86_64__) && !defined(DIFKERN_NO_TARGET_CLONES)
#define CPUGEMM_HAVE_WIDE 1
#define CPUGEMM_WIDE_TARGET __attribute__((target("arch=x86-64-v4")))
#define CPUGEMM_NARROW_TARGET __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define CPUGEMM_HAVE_WIDE 0
#define CPUGEMM_NARROW_TARGET
#endif

/* c[MR x NR] (+)= a[kc x MR]^T b[kc x NR] as two 6 x 16 passes. */
CPUGEMM_NARROW_TARGET CPUGEMM_CONTRACT
static void cpugemm_kernel_narrow(int64_t kc, const float *restrict a, const float *restrict b,
                                  float *restrict c, int64_t ldc, int accumulate) {
    int half;
    for (half = 0; half < CPUGEMM_NR; half += 16) {
        cpugemm_v16 acc[CPUGEMM_MR];
        int64_t kk;
        int i;
        CPUGEMM_ROWS
        for (i = 0; i < CPUGEMM_MR; i++) {
            if (accumulate) memcpy(&acc[i], c + i * ldc + half, sizeof acc[i]);
            else memset(&acc[i], 0, sizeof acc[i]);
        }
        for (kk = 0; kk < kc; kk++) {
            cpugemm_v16 bk;
            const float *ak = a + kk * CPUGEMM_MR;
            memcpy(&bk, b + kk * CPUGEMM_NR + half, sizeof bk);
            CPUGEMM_ROWS
            for (i = 0; i < CPUGEMM_MR; i++) acc[i] += ak[i] * bk;
        }
        CPUGEMM_ROWS
        for (i = 0; i < CPUGEMM_MR; i++) memcpy(c + i * ldc + half, &acc[i], sizeof acc[i]);
    }
}

#if CPUGEMM_HAVE_WIDE
/* The whole 6 x 32 tile in 12 zmm accumulators (AVX-512 only). */
CPUGEMM_WIDE_TARGET CPUGEMM_CONTRACT
static void cpugemm_kernel_wide(int64_t kc, const float *restrict a, const float *restrict b,
                                float *restrict c, int64_t ldc, int accumulate) {
    cpugemm_v16 lo[CPUGEMM_MR], hi[CPUGEMM_MR];
    int64_t kk;
    int i;
    CPUGEMM_ROWS
    for (i = 0; i < CPUGEMM_MR; i++) {
        if (accumulate) {
            memcpy(&lo[i], c + i * ldc, sizeof lo[i]);
            memcpy(&hi[i], c + i * ldc + 16, sizeof hi[i]);
        } else {
            memset(&lo[i], 0, sizeof lo[i]);
            memset(&hi[i], 0, sizeof hi[i]);
        }
    }
    for (kk = 0; kk < kc; kk++) {
        cpugemm_v16 b0, b1;
        const float *ak = a + kk * CPUGEMM_MR;
        memcpy(&b0, b + kk * CPUGEMM_NR, sizeof b0);
        memcpy(&b1, b + kk * CPUGEMM_NR + 16, sizeof b1);
        CPUGEMM_ROWS
        for (i = 0; i < CPUGEMM_MR; i++) {
            lo[i] += ak[i] * b0;
            hi[i] += ak[i] * b1;
        }
    }
    CPUGEMM_ROWS
    for (i = 0; i < CPUGEMM_MR; i++) {
        memcpy(c + i * ldc, &lo[i], sizeof lo[i]);
        memcpy(c + i * ldc + 16, &hi[i], sizeof hi[i]);
    }
}
#endif

typedef void (*cpugemm_kernel_fn)(int64_t, const float *restrict, const float *restrict, float *restrict,
                                  int64_t, int);

/* Chosen per call (cheap: the CPU features are read once by the runtime). */
static cpugemm_kernel_fn cpugemm_pick_kernel(void) {
#if CPUGEMM_HAVE_WIDE
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
        return cpugemm_kernel_wide;
#endif
    return cpugemm_kernel_narrow;
}
#undef CPUGEMM_CONTRACT
#undef CPUGEMM_ROWS
#undef CPUGEMM_HAVE_WIDE
#undef CPUGEMM_WIDE_TARGET
#undef CPUGEMM_NARROW_TARGET
#else
static void cpugemm_kernel_plain(int64_t kc, const float *restrict a, const float *restrict b,
                                 float *restrict c, int64_t ldc, int accumulate) {
    float acc[CPUGEMM_MR][CPUGEMM_NR];
    int64_t kk;
    int i, j;
    for (i = 0; i < CPUGEMM_MR; i++)
        for (j = 0; j < CPUGEMM_NR; j++) acc[i][j] = accumulate ? c[i * ldc + j] : 0.0f;
    for (kk = 0; kk < kc; kk++)
        for (i = 0; i < CPUGEMM_MR; i++)
            for (j = 0; j < CPUGEMM_NR; j++) acc[i][j] += a[kk * CPUGEMM_MR + i] * b[kk * CPUGEMM_NR + j];
    for (i = 0; i < CPUGEMM_MR; i++)
        for (j = 0; j < CPUGEMM_NR; j++) c[i * ldc + j] = acc[i][j];
}
typedef void (*cpugemm_kernel_fn)(int64_t, const float *restrict, const float *restrict, float *restrict,
                                  int64_t, int);
static cpugemm_kernel_fn cpugemm_pick_kernel(void) { return cpugemm_kernel_plain; }
#endif

int dk__cpu_gemm_columns(const dk_cpu_gemm *g, int64_t c0, int64_t nc) {
    int64_t ncp = (nc + CPUGEMM_NR - 1) / CPUGEMM_NR * CPUGEMM_NR;
    int64_t panels = (g->rows + CPUGEMM_MR - 1) / CPUGEMM_MR;
    int64_t kcmax = g->k < DK_CPU_KC ? g->k : DK_CPU_KC;
    float *cbuf = (float *)malloc((size_t)(panels * CPUGEMM_MR * ncp) * sizeof(float));
    float *bbuf = (float *)malloc((size_t)((kcmax > 0 ? kcmax : 1) * ncp) * sizeof(float));
    cpugemm_kernel_fn kernel = cpugemm_pick_kernel();
    int64_t k0, p, j;
    if (!cbuf || !bbuf) {
        free(cbuf);
        free(bbuf);
        return -1;
    }
    if (g->k == 0) memset(cbuf, 0, (size_t)(panels * CPUGEMM_MR * ncp) * sizeof(float));
    for (k0 = 0; k0 < g->k; k0 += DK_CPU_KC) {
        int64_t kc = g->k - k0 < DK_CPU_KC ? g->k - k0 : DK_CPU_KC;
        g->pack_b(g->user, k0, kc, c0, nc, bbuf);
        for (p = 0; p < panels; p++) {
            const float *a = g->apack + p * g->k * CPUGEMM_MR + k0 * CPUGEMM_MR;
            for (j = 0; j < ncp; j += CPUGEMM_NR)
                kernel(kc, a, bbuf + j * kc, cbuf + p * CPUGEMM_MR * ncp + j, ncp, k0 > 0);
        }
    }
    g->store(g->user, c0, nc, cbuf, ncp);
    free(cbuf);
    free(bbuf);
    return 0;
}

#undef CPUGEMM_MR
#undef CPUGEMM_NR
