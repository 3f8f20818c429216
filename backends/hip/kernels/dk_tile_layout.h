/* Matrix-core fragment layouts: which element of A (M x K), B (K x N) and
 * C/D (M x N) each lane holds in its i-th register slot, per instruction family.
 *
 * Written once, as plain index functions that compile in the kernels (device)
 * and in C on the host: the kernels load and store fragments through them, and
 * tests/hip/test_tile_layouts.c drives a host emulation of every instruction
 * (written from the vendors' ISA documents as element -> (lane, register)
 * tables, the opposite direction) through them.  The macros that a kernel needs
 * are the shapes; everything else is a function of (lane, slot).
 *
 * Sources for the layouts:
 *   MFMA  - AMD CDNA3 ISA guide, "Matrix fused multiply-add" / the AMD matrix
 *           instruction calculator: inputs lane = row + M * (k / K_L), slot k % K_L;
 *           output slot i of lane l: row = 8*(i/4) + 4*(l/32) + i%4 (32x32),
 *           row = 4*(l/16) + i (16x16); column = l % M.
 *   WMMA gfx11 (RDNA3 ISA guide, 7.9): wave32; lane l holds row (A) / column (B)
 *           l % 16 with all 16 K values; lanes 16-31 repeat lanes 0-15.
 *           D: slot i of lane l is row 2*i + l/16, column l % 16.
 *   WMMA gfx12 (RDNA4 ISA guide, 7.9): wave32; lane l holds row / column l % 16
 *           and K = 8*(l/16) + i (no duplication); D: row 8*(l/16) + i, column l % 16.
 *   mma.sync m16n8k16 (PTX ISA, "Matrix fragments for mma.m16n8k16"): g = l/4,
 *           t = l%4; A slot i: row g + 8*((i/2)%2), k 2t + i%2 + 8*(i/4);
 *           B slot i: k 2t + i%2 + 8*(i/2), column g; C slot i: row g + 8*(i/2),
 *           column 2t + i%2.
 */
#ifndef DK_TILE_LAYOUT_H
#define DK_TILE_LAYOUT_H

#if defined(__CUDACC__)
#define DKT_FN static __host__ __device__ inline
#elif defined(__HIP__)
#define DKT_FN static __attribute__((device)) inline
#else
#define DKT_FN static inline
#endif

/* Instruction families. */
enum {
    DKT_MFMA32 = 1,      /* v_mfma_f32_32x32x8{f16,bf16_1k}: wave64, 32x32x8 */
    DKT_MFMA16 = 2,      /* v_mfma_f32_16x16x16{f16,bf16_1k}: wave64, 16x16x16 */
    DKT_MFMA32_BF16 = 3, /* v_mfma_f32_32x32x4bf16 (gfx908 bf16): wave64, 32x32x4 */
    DKT_MFMA16_BF16 = 4, /* v_mfma_f32_16x16x8bf16 (gfx908 bf16): wave64, 16x16x8 */
    DKT_WMMA11 = 5,      /* v_wmma_f32_16x16x16_{f16,bf16} gfx11: wave32 */
    DKT_WMMA12 = 6,      /* v_wmma_f32_16x16x16_{f16,bf16} gfx12: wave32 */
    DKT_MMA16816 = 7,    /* mma.sync.aligned.m16n8k16 (sm_80+): warp of 32 */
    DKT_FMA32 = 8,       /* plain FMA, 16x16 tile on 32 lanes (fp32 path) */
    DKT_FMA64 = 9        /* plain FMA, 16x16 tile on 64 lanes (fp32 path) */
};

typedef struct dkt_shape {
    int m, n, k;       /* fragment shape */
    int wave;          /* lanes */
    int a_regs, b_regs, c_regs; /* slots per lane */
} dkt_shape;

DKT_FN dkt_shape dkt_shape_of(int fam) {
    dkt_shape s = {16, 16, 16, 32, 16, 16, 8};
    switch (fam) {
    case DKT_MFMA32: s.m = 32; s.n = 32; s.k = 8; s.wave = 64; s.a_regs = 4; s.b_regs = 4; s.c_regs = 16; break;
    case DKT_MFMA16: s.m = 16; s.n = 16; s.k = 16; s.wave = 64; s.a_regs = 4; s.b_regs = 4; s.c_regs = 4; break;
    case DKT_MFMA32_BF16: s.m = 32; s.n = 32; s.k = 4; s.wave = 64; s.a_regs = 2; s.b_regs = 2; s.c_regs = 16; break;
    case DKT_MFMA16_BF16: s.m = 16; s.n = 16; s.k = 8; s.wave = 64; s.a_regs = 2; s.b_regs = 2; s.c_regs = 4; break;
    case DKT_WMMA11: s.m = 16; s.n = 16; s.k = 16; s.wave = 32; s.a_regs = 16; s.b_regs = 16; s.c_regs = 8; break;
    case DKT_WMMA12: s.m = 16; s.n = 16; s.k = 16; s.wave = 32; s.a_regs = 8; s.b_regs = 8; s.c_regs = 8; break;
    case DKT_MMA16816: s.m = 16; s.n = 8; s.k = 16; s.wave = 32; s.a_regs = 8; s.b_regs = 4; s.c_regs = 4; break;
    case DKT_FMA32: s.m = 16; s.n = 16; s.k = 16; s.wave = 32; s.a_regs = 0; s.b_regs = 0; s.c_regs = 8; break;
    case DKT_FMA64: s.m = 16; s.n = 16; s.k = 16; s.wave = 64; s.a_regs = 0; s.b_regs = 0; s.c_regs = 4; break;
    default: break;
    }
    return s;
}

/* MFMA inputs: lane = row + M * (k / kl), slot = k % kl, with kl = slots per lane. */
DKT_FN void dkt_mfma_in(int m, int kl, int lane, int i, int *rc, int *k) {
    *rc = lane % m;
    *k = (lane / m) * kl + i;
}

/* A: slot i of lane -> (row, k). */
DKT_FN void dkt_a_map(int fam, int lane, int i, int *row, int *k) {
    switch (fam) {
    case DKT_MFMA32: dkt_mfma_in(32, 4, lane, i, row, k); break;
    case DKT_MFMA16: dkt_mfma_in(16, 4, lane, i, row, k); break;
    case DKT_MFMA32_BF16: dkt_mfma_in(32, 2, lane, i, row, k); break;
    case DKT_MFMA16_BF16: dkt_mfma_in(16, 2, lane, i, row, k); break;
    case DKT_WMMA11: *row = lane % 16; *k = i; break;
    case DKT_WMMA12: *row = lane % 16; *k = 8 * (lane / 16) + i; break;
    case DKT_MMA16816: *row = lane / 4 + 8 * ((i / 2) % 2); *k = 2 * (lane % 4) + i % 2 + 8 * (i / 4); break;
    default: *row = 0; *k = 0; break;
    }
}

/* B: slot i of lane -> (k, col). */
DKT_FN void dkt_b_map(int fam, int lane, int i, int *k, int *col) {
    switch (fam) {
    case DKT_MFMA32: dkt_mfma_in(32, 4, lane, i, col, k); break;
    case DKT_MFMA16: dkt_mfma_in(16, 4, lane, i, col, k); break;
    case DKT_MFMA32_BF16: dkt_mfma_in(32, 2, lane, i, col, k); break;
    case DKT_MFMA16_BF16: dkt_mfma_in(16, 2, lane, i, col, k); break;
    case DKT_WMMA11: *col = lane % 16; *k = i; break;
    case DKT_WMMA12: *col = lane % 16; *k = 8 * (lane / 16) + i; break;
    case DKT_MMA16816: *k = 2 * (lane % 4) + i % 2 + 8 * (i / 2); *col = lane / 4; break;
    default: *k = 0; *col = 0; break;
    }
}

/* C/D: slot i of lane -> (row, col). */
DKT_FN void dkt_c_map(int fam, int lane, int i, int *row, int *col) {
    switch (fam) {
    case DKT_MFMA32:
    case DKT_MFMA32_BF16: *row = 8 * (i / 4) + 4 * (lane / 32) + i % 4; *col = lane % 32; break;
    case DKT_MFMA16:
    case DKT_MFMA16_BF16: *row = 4 * (lane / 16) + i; *col = lane % 16; break;
    case DKT_WMMA11: *row = 2 * i + lane / 16; *col = lane % 16; break;
    case DKT_WMMA12: *row = 8 * (lane / 16) + i; *col = lane % 16; break;
    case DKT_MMA16816: *row = lane / 4 + 8 * (i / 2); *col = 2 * (lane % 4) + i % 2; break;
    case DKT_FMA32: *row = 2 * i + lane / 16; *col = lane % 16; break;
    case DKT_FMA64: *row = 4 * i + lane / 16; *col = lane % 16; break;
    default: *row = 0; *col = 0; break;
    }
}

#undef DKT_FN
#endif /* DK_TILE_LAYOUT_H */
