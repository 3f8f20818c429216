/* CPU backend: the cache-blocked fp32 GEMM core shared by conv2d,
 * conv_transpose2d, matmul/linear and attention.
 *
 * Blocking (GotoBLAS style): a task owns NC output columns; for each KC slice
 * of the reduction it packs B (KC x NC, ~128 KiB, stays in L2), then sweeps
 * every MR-row panel of the pre-packed A through an MR x NR register tile.
 * The micro-kernel is plain C that compilers vectorize; on x86-64 GCC/Clang
 * also build x86-64-v3 (AVX2+FMA) and x86-64-v4 (AVX-512) clones of it, picked at load time. */
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

#if defined(__GNUC__) && defined(__x86_64__) && !defined(DIFKERN_NO_TARGET_CLONES)
#define CPUGEMM_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CPUGEMM_CLONES
#endif

#if defined(__GNUC__)
/* A row of the register tile as one generic vector: one zmm with AVX-512, two
 * ymm with AVX2, four xmm otherwise.  ISO C mode turns off FMA contraction in
 * GCC; the micro-kernel opts back in (fp32 accumulation either way). */
typedef float cpugemm_row __attribute__((vector_size(CPUGEMM_NR * 4)));
#if !defined(__clang__)
#define CPUGEMM_CONTRACT __attribute__((optimize("fp-contract=fast")))
#else
#define CPUGEMM_CONTRACT
#endif

/* c[MR x NR] (+)= a[kc x MR]^T b[kc x NR]; the accumulators live in registers. */
CPUGEMM_CLONES CPUGEMM_CONTRACT
static void cpugemm_kernel(int64_t kc, const float *restrict a, const float *restrict b,
                           float *restrict c, int64_t ldc, int accumulate) {
    cpugemm_row acc[CPUGEMM_MR];
    int64_t kk;
    int i;
    for (i = 0; i < CPUGEMM_MR; i++) {
        if (accumulate) memcpy(&acc[i], c + i * ldc, sizeof acc[i]);
        else memset(&acc[i], 0, sizeof acc[i]);
    }
    for (kk = 0; kk < kc; kk++) {
        cpugemm_row bk;
        const float *ak = a + kk * CPUGEMM_MR;
        memcpy(&bk, b + kk * CPUGEMM_NR, sizeof bk);
        for (i = 0; i < CPUGEMM_MR; i++) acc[i] += ak[i] * bk;
    }
    for (i = 0; i < CPUGEMM_MR; i++) memcpy(c + i * ldc, &acc[i], sizeof acc[i]);
}
#undef CPUGEMM_CONTRACT
#else
static void cpugemm_kernel(int64_t kc, const float *restrict a, const float *restrict b,
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
#endif

int dk__cpu_gemm_columns(const dk_cpu_gemm *g, int64_t c0, int64_t nc) {
    int64_t ncp = (nc + CPUGEMM_NR - 1) / CPUGEMM_NR * CPUGEMM_NR;
    int64_t panels = (g->rows + CPUGEMM_MR - 1) / CPUGEMM_MR;
    int64_t kcmax = g->k < DK_CPU_KC ? g->k : DK_CPU_KC;
    float *cbuf = (float *)malloc((size_t)(panels * CPUGEMM_MR * ncp) * sizeof(float));
    float *bbuf = (float *)malloc((size_t)((kcmax > 0 ? kcmax : 1) * ncp) * sizeof(float));
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
                cpugemm_kernel(kc, a, bbuf + j * kc, cbuf + p * CPUGEMM_MR * ncp + j, ncp, k0 > 0);
        }
    }
    g->store(g->user, c0, nc, cbuf, ncp);
    free(cbuf);
    free(bbuf);
    return 0;
}

#undef CPUGEMM_CLONES
#undef CPUGEMM_MR
#undef CPUGEMM_NR
