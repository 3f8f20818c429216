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
 * dtype, below); f32 always takes the FMA family of the target's wave size.
 *
 * Register fragments (the fast GEMM, f16 / bf16 families), from shared memory
 * whose rows are K-contiguous:
 *   F::FA fa; F::FB fb;
 *   tile.load_a(fa, A, lda, lane)    A(r, k) = A[r*lda + k]
 *   tile.load_b(fb, B, ldb, lane)    B(k, c) = B[c*ldb + k]
 *   tile.mma_rr<DT>(acc, fa, fb, lane)
 * A fragment is loaded once and used for every product of its row (column) of
 * fragments.  Every family's slot pair (2j, 2j+1) holds one row and two
 * consecutive k starting at an even k, so a pair is one 32-bit load (mma.sync:
 * one ldmatrix per fragment).  lda, ldb: multiples of 8; A, B 16-byte aligned. */
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

/* Register fragments: R 16-bit slots as R/2 words (slot 2j in the low half). */
template <int R> struct dkt_pairs {
    dkp_u32 r[R / 2];
};

template <int FAM, int R>
DKP_DEV void dkt_load_pairs_a(dkt_pairs<R> &f, const dkp_u16 *A, int lda, int lane) {
#pragma unroll
    for (int j = 0; j < R / 2; j++) {
        int r, k;
        dkt_a_map(FAM, lane, 2 * j, &r, &k);
        f.r[j] = *(const dkp_u32 *)(A + r * lda + k);
    }
}

template <int FAM, int R>
DKP_DEV void dkt_load_pairs_b(dkt_pairs<R> &f, const dkp_u16 *B, int ldb, int lane) {
#pragma unroll
    for (int j = 0; j < R / 2; j++) {
        int k, c;
        dkt_b_map(FAM, lane, 2 * j, &k, &c);
        f.r[j] = *(const dkp_u32 *)(B + c * ldb + k);
    }
}

/* The register-fragment interface of the families that go through the C layout
 * lane by lane (host simulation): a fragment is where it lies in shared memory. */
#define DKT_LANEWISE_RR                                                                                    \
    struct FA {                                                                                            \
        const dkp_u16 *p;                                                                                  \
        int ld;                                                                                            \
    };                                                                                                     \
    typedef FA FB;                                                                                         \
    DKP_DEV void load_a(FA &f, const dkp_u16 *A, int lda, int) { f.p = A; f.ld = lda; }                   \
    DKP_DEV void load_b(FB &f, const dkp_u16 *B, int ldb, int) { f.p = B; f.ld = ldb; }                   \
    template <int DT> DKP_DEV void mma_rr(float *acc, const FA &a, const FB &b, int lane) {              \
        mma<DT>(acc, a.p, a.ld, 1, b.p, 1, b.ld, lane);                                                   \
    }

#if defined(DKP_HOSTSIM)
template <> struct dkt_tile<DKT_MFMA32> : dkt_lanewise<DKT_MFMA32, 32, 32, 8, 64> { DKT_LANEWISE_RR };
template <> struct dkt_tile<DKT_MFMA16> : dkt_lanewise<DKT_MFMA16, 16, 16, 16, 64> { DKT_LANEWISE_RR };
template <> struct dkt_tile<DKT_MFMA32_BF16> : dkt_lanewise<DKT_MFMA32_BF16, 32, 32, 4, 64> { DKT_LANEWISE_RR };
template <> struct dkt_tile<DKT_MFMA16_BF16> : dkt_lanewise<DKT_MFMA16_BF16, 16, 16, 8, 64> { DKT_LANEWISE_RR };
template <> struct dkt_tile<DKT_MMA16816> : dkt_lanewise<DKT_MMA16816, 16, 8, 16, 32> { DKT_LANEWISE_RR };
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
    }                                                                                              \
    typedef dkt_pairs<AR> FA;                                                                      \
    typedef dkt_pairs<AR> FB;                                                                      \
    DKP_DEV void load_a(FA &f, const dkp_u16 *A, int lda, int lane) { dkt_load_pairs_a<FAM_ID, AR>(f, A, lda, lane); } \
    DKP_DEV void load_b(FB &f, const dkp_u16 *B, int ldb, int lane) { dkt_load_pairs_b<FAM_ID, AR>(f, B, ldb, lane); } \
    template <int DT>                                                                              \
    DKP_DEV void mma_rr(float *acc, const FA &a, const FB &b, int) {                               \
        VF c;                                                                                      \
        for (int i = 0; i < CR; i++) c[i] = acc[i];                                                \
        if constexpr (DT == 2)                                                                     \
            c = NAME(__builtin_bit_cast(VH, a), __builtin_bit_cast(VH, b), c, 0, 0, 0);            \
        else                                                                                       \
            c = BF16_NAME(__builtin_bit_cast(VS, a), __builtin_bit_cast(VS, b), c, 0, 0, 0);       \
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
    typedef dkt_pairs<2> FA;
    typedef dkt_pairs<2> FB;
    DKP_DEV void load_a(FA &f, const dkp_u16 *A, int lda, int lane) { dkt_load_pairs_a<DKT_MFMA32_BF16, 2>(f, A, lda, lane); }
    DKP_DEV void load_b(FB &f, const dkp_u16 *B, int ldb, int lane) { dkt_load_pairs_b<DKT_MFMA32_BF16, 2>(f, B, ldb, lane); }
    template <int DT>
    DKP_DEV void mma_rr(float *acc, const FA &a, const FB &b, int) {
        dkt_f16 c;
        for (int i = 0; i < 16; i++) c[i] = acc[i];
        c = __builtin_amdgcn_mfma_f32_32x32x4bf16(__builtin_bit_cast(dkt_s2, a), __builtin_bit_cast(dkt_s2, b), c, 0, 0, 0);
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
    typedef dkt_pairs<2> FA;
    typedef dkt_pairs<2> FB;
    DKP_DEV void load_a(FA &f, const dkp_u16 *A, int lda, int lane) { dkt_load_pairs_a<DKT_MFMA16_BF16, 2>(f, A, lda, lane); }
    DKP_DEV void load_b(FB &f, const dkp_u16 *B, int ldb, int lane) { dkt_load_pairs_b<DKT_MFMA16_BF16, 2>(f, B, ldb, lane); }
    template <int DT>
    DKP_DEV void mma_rr(float *acc, const FA &a, const FB &b, int) {
        dkt_f4 c;
        for (int i = 0; i < 4; i++) c[i] = acc[i];
        c = __builtin_amdgcn_mfma_f32_16x16x8bf16(__builtin_bit_cast(dkt_s2, a), __builtin_bit_cast(dkt_s2, b), c, 0, 0, 0);
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
    typedef dkt_pairs<DKT_WMMA_AR> FA;
    typedef dkt_pairs<DKT_WMMA_AR> FB;
    DKP_DEV void load_a(FA &f, const dkp_u16 *A, int lda, int lane) { dkt_load_pairs_a<DKT_WMMA_FAM, DKT_WMMA_AR>(f, A, lda, lane); }
    DKP_DEV void load_b(FB &f, const dkp_u16 *B, int ldb, int lane) { dkt_load_pairs_b<DKT_WMMA_FAM, DKT_WMMA_AR>(f, B, ldb, lane); }
    template <int DT>
    DKP_DEV void mma_rr(float *acc, const FA &a, const FB &b, int) {
        dkt_f8 c;
        for (int i = 0; i < 8; i++) c[i] = acc[i];
        if constexpr (DT == 2)
            c = DKT_WMMA_F16(__builtin_bit_cast(DKT_WMMA_H, a), __builtin_bit_cast(DKT_WMMA_H, b), c);
        else
            c = DKT_WMMA_BF16(__builtin_bit_cast(DKT_WMMA_S, a), __builtin_bit_cast(DKT_WMMA_S, b), c);
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
        mma_regs<DT>(acc, ra, rb);
    }
    typedef dkt_pairs<8> FA;
    typedef dkt_pairs<4> FB;
    /* ldmatrix: thread t receives row t/4, elements 2(t%4), 2(t%4)+1 of each 8x8
     * matrix j into register j, which is slot pair j of the family's layout when
     * lane l points at the row that lane 4(l%8) holds in slot 2(l/8) (from
     * dkt_a_map / dkt_b_map).  Needs lda, ldb multiples of 8 and 16-byte aligned A, B. */
    DKP_DEV void load_a(FA &f, const dkp_u16 *A, int lda, int lane) {
        int r, k;
        dkt_a_map(DKT_MMA16816, 4 * (lane % 8), 2 * (lane / 8), &r, &k);
        unsigned sa = (unsigned)__cvta_generic_to_shared(A + r * lda + k);
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(f.r[0]), "=r"(f.r[1]), "=r"(f.r[2]), "=r"(f.r[3])
                     : "r"(sa));
    }
    DKP_DEV void load_b(FB &f, const dkp_u16 *B, int ldb, int lane) {
        int k, c;
        dkt_b_map(DKT_MMA16816, 4 * (lane % 8), 2 * ((lane / 8) % 2), &k, &c);
        unsigned sa = (unsigned)__cvta_generic_to_shared(B + c * ldb + k);
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(f.r[0]), "=r"(f.r[1]) : "r"(sa));
    }
    /* The same from rows of 32 elements whose 16-byte chunks are XOR-swizzled by
     * (row / 2) % 4 (A, B at a row that is a multiple of 8; kk: first k). */
    DKP_DEV int sw32(int r, int k) { return r * 32 + ((((k >> 3) ^ (r >> 1)) & 3) << 3); }
    DKP_DEV void load_a_sw(FA &f, const dkp_u16 *A, int kk, int lane) {
        int r, k;
        dkt_a_map(DKT_MMA16816, 4 * (lane % 8), 2 * (lane / 8), &r, &k);
        unsigned sa = (unsigned)__cvta_generic_to_shared(A + sw32(r, kk + k));
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(f.r[0]), "=r"(f.r[1]), "=r"(f.r[2]), "=r"(f.r[3])
                     : "r"(sa));
    }
    DKP_DEV void load_b_sw(FB &f, const dkp_u16 *B, int kk, int lane) {
        int k, c;
        dkt_b_map(DKT_MMA16816, 4 * (lane % 8), 2 * ((lane / 8) % 2), &k, &c);
        unsigned sa = (unsigned)__cvta_generic_to_shared(B + sw32(c, kk + k));
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(f.r[0]), "=r"(f.r[1]) : "r"(sa));
    }
    template <int DT>
    DKP_DEV void mma_rr(float *acc, const FA &a, const FB &b, int) { mma_regs<DT>(acc, a.r, b.r); }
    template <int DT>
    DKP_DEV void mma_regs(float *acc, const dkp_u32 *ra, const dkp_u32 *rb) {
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
