/* The matrix-core tile abstraction: one fragment multiply-accumulate per
 * instruction family, operands read from shared memory through the layout
 * functions of dk_tile_layout.h.
 *
 *   dkt_tile<FAM>::mma<DT>(acc, A, a_sr, a_sk, B, b_sk, b_sn, lane)
 *       acc[c_regs] += A[M x K] * B[K x N], where A(r, k) = A[r*a_sr + k*a_sk]
 *       and B(k, n) = B[k*b_sk + n*b_sn] hold raw storage values of dtype DT
 *       (float for f32, 16-bit patterns for f16 / bf16).
 *
 * Which family a target uses is chosen once (DKT_GEMM_FAM / DKT_ATTN_FAM per
 * dtype, below); f32 always takes the FMA family of the target's wave size. */
#ifndef DK_TILE_H
#define DK_TILE_H

#include "dk_hip_port.h"
#include "dk_tile_layout.h"

#if defined(DKP_AMD)
typedef _Float16 dkt_h4 __attribute__((ext_vector_type(4)));
typedef _Float16 dkt_h8 __attribute__((ext_vector_type(8)));
typedef _Float16 dkt_h16 __attribute__((ext_vector_type(16)));
typedef short dkt_s2 __attribute__((ext_vector_type(2)));
typedef short dkt_s4 __attribute__((ext_vector_type(4)));
typedef short dkt_s8 __attribute__((ext_vector_type(8)));
typedef short dkt_s16 __attribute__((ext_vector_type(16)));
typedef float dkt_f4 __attribute__((ext_vector_type(4)));
typedef float dkt_f8 __attribute__((ext_vector_type(8)));
typedef float dkt_f16 __attribute__((ext_vector_type(16)));
#endif

/* A fragment product computed lane by lane straight from the C layout: the
 * FMA families (fp32 path) on the GPU, and every family in the host simulation
 * (tests/hip/sim), where the instruction's operand layouts are covered by the
 * emulation test instead. */
template <int FAM, int M_, int N_, int K_, int W_> struct dkt_lanewise {
    static const int M = M_, N = N_, K = K_, WAVE = W_, CR = M_ * N_ / W_;
    template <int DT, class S>
    DKP_DEV void mma(float *acc, const S *A, int a_sr, int a_sk, const S *B, int b_sk, int b_sn, int lane) {
#pragma unroll
        for (int i = 0; i < CR; i++) {
            int r, c;
            dkt_c_map(FAM, lane, i, &r, &c);
            float s = acc[i];
#pragma unroll
            for (int k = 0; k < K; k++)
                s += dkp_to_f32(A[r * a_sr + k * a_sk], DT) * dkp_to_f32(B[k * b_sk + c * b_sn], DT);
            acc[i] = s;
        }
    }
};

template <int FAM> struct dkt_tile : dkt_lanewise<FAM, 16, 16, 16, FAM == DKT_FMA64 ? 64 : 32> {};

#if defined(DKP_HOSTSIM)
template <> struct dkt_tile<DKT_MFMA32> : dkt_lanewise<DKT_MFMA32, 32, 32, 8, 64> {};
template <> struct dkt_tile<DKT_MFMA16> : dkt_lanewise<DKT_MFMA16, 16, 16, 16, 64> {};
template <> struct dkt_tile<DKT_MFMA32_BF16> : dkt_lanewise<DKT_MFMA32_BF16, 32, 32, 4, 64> {};
template <> struct dkt_tile<DKT_MFMA16_BF16> : dkt_lanewise<DKT_MFMA16_BF16, 16, 16, 8, 64> {};
template <> struct dkt_tile<DKT_MMA16816> : dkt_lanewise<DKT_MMA16816, 16, 8, 16, 32> {};
#endif

/* Gathers a family's A and B slots of lane into arrays of raw 16-bit values. */
template <int FAM, int AR, int BR>
DKP_DEV void dkt_gather(dkp_u16 *a, dkp_u16 *b, const dkp_u16 *A, int a_sr, int a_sk, const dkp_u16 *B,
                        int b_sk, int b_sn, int lane) {
#pragma unroll
    for (int i = 0; i < AR; i++) {
        int r, k;
        dkt_a_map(FAM, lane, i, &r, &k);
        a[i] = A[r * a_sr + k * a_sk];
    }
#pragma unroll
    for (int i = 0; i < BR; i++) {
        int k, c;
        dkt_b_map(FAM, lane, i, &k, &c);
        b[i] = B[k * b_sk + c * b_sn];
    }
}

#if defined(DKP_AMD) && defined(__GFX9__)
/* CDNA MFMA, wave64.  DT 2 = f16, 3 = bf16 (bf16_1k forms, gfx90a and later). */
#define DKT_MFMA_BODY(NAME, AR, CR, VH, VS, VF, BF16_NAME)                                       \
    static const int WAVE = 64;                                                                    \
    template <int DT>                                                                              \
    DKP_DEV void mma(float *acc, const dkp_u16 *A, int a_sr, int a_sk, const dkp_u16 *B, int b_sk, \
                     int b_sn, int lane) {                                                         \
        dkp_u16 a[AR], b[AR];                                                                      \
        VF c;                                                                                      \
        dkt_gather<FAM_ID, AR, AR>(a, b, A, a_sr, a_sk, B, b_sk, b_sn, lane);                      \
        for (int i = 0; i < CR; i++) c[i] = acc[i];                                                \
        if constexpr (DT == 2) {                                                                   \
            VH va, vb;                                                                             \
            for (int i = 0; i < AR; i++) { va[i] = __builtin_bit_cast(_Float16, a[i]); vb[i] = __builtin_bit_cast(_Float16, b[i]); } \
            c = NAME(va, vb, c, 0, 0, 0);                                                          \
        } else {                                                                                   \
            VS va, vb;                                                                             \
            for (int i = 0; i < AR; i++) { va[i] = (short)a[i]; vb[i] = (short)b[i]; }             \
            c = BF16_NAME(va, vb, c, 0, 0, 0);                                                     \
        }                                                                                          \
        for (int i = 0; i < CR; i++) acc[i] = c[i];                                                \
    }

#if defined(__gfx908__)
/* gfx908 has no bf16_1k: its bf16 families are DKT_MFMA32_BF16 / DKT_MFMA16_BF16,
 * so the bf16 branch below is never instantiated there (it only has to parse). */
#define DKT_BF16_32 __builtin_amdgcn_mfma_f32_32x32x8f16
#define DKT_BF16_16 __builtin_amdgcn_mfma_f32_16x16x16f16
#define DKT_MFMA_VS dkt_h4
#else
#define DKT_MFMA_VS dkt_s4
#define DKT_BF16_32 __builtin_amdgcn_mfma_f32_32x32x8bf16_1k
#define DKT_BF16_16 __builtin_amdgcn_mfma_f32_16x16x16bf16_1k
#endif

template <> struct dkt_tile<DKT_MFMA32> {
    static const int M = 32, N = 32, K = 8, CR = 16, FAM_ID = DKT_MFMA32;
    DKT_MFMA_BODY(__builtin_amdgcn_mfma_f32_32x32x8f16, 4, 16, dkt_h4, DKT_MFMA_VS, dkt_f16, DKT_BF16_32)
};
template <> struct dkt_tile<DKT_MFMA16> {
    static const int M = 16, N = 16, K = 16, CR = 4, FAM_ID = DKT_MFMA16;
    DKT_MFMA_BODY(__builtin_amdgcn_mfma_f32_16x16x16f16, 4, 4, dkt_h4, DKT_MFMA_VS, dkt_f4, DKT_BF16_16)
};
/* gfx908 bf16: two bf16 per lane per instruction. */
template <> struct dkt_tile<DKT_MFMA32_BF16> {
    static const int M = 32, N = 32, K = 4, CR = 16, WAVE = 64;
    template <int DT>
    DKP_DEV void mma(float *acc, const dkp_u16 *A, int a_sr, int a_sk, const dkp_u16 *B, int b_sk, int b_sn, int lane) {
        dkp_u16 a[2], b[2];
        dkt_s2 va, vb;
        dkt_f16 c;
        dkt_gather<DKT_MFMA32_BF16, 2, 2>(a, b, A, a_sr, a_sk, B, b_sk, b_sn, lane);
        for (int i = 0; i < 2; i++) { va[i] = (short)a[i]; vb[i] = (short)b[i]; }
        for (int i = 0; i < 16; i++) c[i] = acc[i];
        c = __builtin_amdgcn_mfma_f32_32x32x4bf16(va, vb, c, 0, 0, 0);
        for (int i = 0; i < 16; i++) acc[i] = c[i];
    }
};
template <> struct dkt_tile<DKT_MFMA16_BF16> {
    static const int M = 16, N = 16, K = 8, CR = 4, WAVE = 64;
    template <int DT>
    DKP_DEV void mma(float *acc, const dkp_u16 *A, int a_sr, int a_sk, const dkp_u16 *B, int b_sk, int b_sn, int lane) {
        dkp_u16 a[2], b[2];
        dkt_s2 va, vb;
        dkt_f4 c;
        dkt_gather<DKT_MFMA16_BF16, 2, 2>(a, b, A, a_sr, a_sk, B, b_sk, b_sn, lane);
        for (int i = 0; i < 2; i++) { va[i] = (short)a[i]; vb[i] = (short)b[i]; }
        for (int i = 0; i < 4; i++) c[i] = acc[i];
        c = __builtin_amdgcn_mfma_f32_16x16x8bf16(va, vb, c, 0, 0, 0);
        for (int i = 0; i < 4; i++) acc[i] = c[i];
    }
};
#endif /* CDNA */

#if defined(DKP_AMD) && (defined(__GFX11__) || defined(__GFX12__))
/* RDNA WMMA, wave32.  gfx11 wants the A/B halves of lanes 0-15 repeated in lanes
 * 16-31 (the layout functions give both halves the same rows/columns); gfx12
 * splits K across the two halves instead. */
#if defined(__GFX11__)
#define DKT_WMMA_FAM DKT_WMMA11
#define DKT_WMMA_AR 16
#define DKT_WMMA_H dkt_h16
#define DKT_WMMA_S dkt_s16
#define DKT_WMMA_F16(a, b, c) __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(a, b, c)
#define DKT_WMMA_BF16(a, b, c) __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(a, b, c)
#else
#define DKT_WMMA_FAM DKT_WMMA12
#define DKT_WMMA_AR 8
#define DKT_WMMA_H dkt_h8
#define DKT_WMMA_S dkt_s8
#define DKT_WMMA_F16(a, b, c) __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(a, b, c)
#define DKT_WMMA_BF16(a, b, c) __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32_gfx12(a, b, c)
#endif
template <> struct dkt_tile<DKT_WMMA_FAM> {
    static const int M = 16, N = 16, K = 16, CR = 8, WAVE = 32;
    template <int DT>
    DKP_DEV void mma(float *acc, const dkp_u16 *A, int a_sr, int a_sk, const dkp_u16 *B, int b_sk, int b_sn, int lane) {
        dkp_u16 a[DKT_WMMA_AR], b[DKT_WMMA_AR];
        dkt_f8 c;
        dkt_gather<DKT_WMMA_FAM, DKT_WMMA_AR, DKT_WMMA_AR>(a, b, A, a_sr, a_sk, B, b_sk, b_sn, lane);
        for (int i = 0; i < 8; i++) c[i] = acc[i];
        if constexpr (DT == 2) {
            DKT_WMMA_H va, vb;
            for (int i = 0; i < DKT_WMMA_AR; i++) { va[i] = __builtin_bit_cast(_Float16, a[i]); vb[i] = __builtin_bit_cast(_Float16, b[i]); }
            c = DKT_WMMA_F16(va, vb, c);
        } else {
            DKT_WMMA_S va, vb;
            for (int i = 0; i < DKT_WMMA_AR; i++) { va[i] = (short)a[i]; vb[i] = (short)b[i]; }
            c = DKT_WMMA_BF16(va, vb, c);
        }
        for (int i = 0; i < 8; i++) acc[i] = c[i];
    }
};
#endif /* RDNA */

#if defined(DKP_NVIDIA)
/* NVIDIA mma.sync m16n8k16 (sm_80+): A in four, B in two 32-bit registers of
 * two 16-bit values each (slot 2j in the low half of register j). */
template <> struct dkt_tile<DKT_MMA16816> {
    static const int M = 16, N = 8, K = 16, CR = 4, WAVE = 32;
    template <int DT>
    DKP_DEV void mma(float *acc, const dkp_u16 *A, int a_sr, int a_sk, const dkp_u16 *B, int b_sk, int b_sn, int lane) {
        dkp_u16 a[8], b[4];
        dkp_u32 ra[4], rb[2];
        dkt_gather<DKT_MMA16816, 8, 4>(a, b, A, a_sr, a_sk, B, b_sk, b_sn, lane);
        for (int j = 0; j < 4; j++) ra[j] = (dkp_u32)a[2 * j] | ((dkp_u32)a[2 * j + 1] << 16);
        for (int j = 0; j < 2; j++) rb[j] = (dkp_u32)b[2 * j] | ((dkp_u32)b[2 * j + 1] << 16);
        if constexpr (DT == 2)
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                         : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                         : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
        else
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                         : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                         : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
    }
};
#endif

/* Family choice per target and dtype: GEMM (conv, linear) and attention. */
#if defined(DKP_HOSTSIM) && defined(DKP_SIM_CDNA)
#define DKT_FMA_FAM DKT_FMA64
#define DKT_GEMM_F16 DKT_MFMA32
#define DKT_GEMM_BF16 DKT_MFMA32_BF16
#define DKT_ATTN_F16 DKT_MFMA16
#define DKT_ATTN_BF16 DKT_MFMA16_BF16
#elif defined(DKP_NVIDIA) || defined(DKP_HOSTSIM)
#define DKT_FMA_FAM DKT_FMA32
#define DKT_GEMM_F16 DKT_MMA16816
#define DKT_GEMM_BF16 DKT_MMA16816
#define DKT_ATTN_F16 DKT_MMA16816
#define DKT_ATTN_BF16 DKT_MMA16816
#elif defined(__gfx908__)
#define DKT_FMA_FAM DKT_FMA64
#define DKT_GEMM_F16 DKT_MFMA32
#define DKT_GEMM_BF16 DKT_MFMA32_BF16
#define DKT_ATTN_F16 DKT_MFMA16
#define DKT_ATTN_BF16 DKT_MFMA16_BF16
#elif defined(__GFX9__)
#define DKT_FMA_FAM DKT_FMA64
#define DKT_GEMM_F16 DKT_MFMA32
#define DKT_GEMM_BF16 DKT_MFMA32
#define DKT_ATTN_F16 DKT_MFMA16
#define DKT_ATTN_BF16 DKT_MFMA16
#elif defined(__GFX11__) || defined(__GFX12__)
#define DKT_FMA_FAM DKT_FMA32
#define DKT_GEMM_F16 DKT_WMMA_FAM
#define DKT_GEMM_BF16 DKT_WMMA_FAM
#define DKT_ATTN_F16 DKT_WMMA_FAM
#define DKT_ATTN_BF16 DKT_WMMA_FAM
#else
#error "dk_tile.h: no matrix-core family for this target"
#endif

#endif /* DK_TILE_H */
