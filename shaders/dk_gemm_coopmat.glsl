// Tensor-core GEMM core shared by the cooperative-matrix shaders: the block tile
// shape, the double-buffered shared-memory K slices, the fragment products and
// the accumulator spill for the epilogue.  The including shader does the
// global loads (it knows the addressing: implicit GEMM for conv) and the
// epilogue; this file owns everything that touches cooperative matrices.
//
// C[m][n] = sum_k A[m][k] B[k][n], fp16 inputs, fp32 accumulators.  One
// CMG_BM x CMG_BN tile of C per workgroup of CMG_INV invocations (256 or 128:
// two modules) = subgroups of 32; each subgroup owns a CMG_WM x CMG_WN block
// of 16x16 fragments.  K runs in CMG_BK-deep slices staged in shared memory as
// 16-byte vectors (one store per vector; coopMatLoad offsets and strides then
// count vectors, which also tells the driver that every fragment row is
// 16-byte aligned).  Two slice buffers: the loads of slice s+1 are issued
// before slice s's products and stored to the other buffer after them, so one
// barrier per slice suffices.
//
// The tile shape is the MODE specialization constant (DK_VK_CM_MODE_*):
//   BM256: BM 256 (else 128)   BN256: BN 256 (else 128)   BK16: BK 16 (else 32)
// except in the narrow module (CMG_NARROW_TILE, conv2d_nhwc_cm_narrow, 128
// invocations): 128 x 16 x 32, the four subgroups stacked along M (32 x 16,
// two fragments each), for convs of at most 8 output channels (the host packs
// their weights with Cout padded to 16).  A module of its own so that the
// other modules' code is untouched by it.
// Valid with 256 invocations: 0 = 128x128x32 (subgroups 32x64), 4 =
// 128x128x16, 5 = 256x128x16 and 6 = 128x256x16 (subgroups 64x64); with 128:
// 0 and 4 (subgroups 64x64).  Shared memory stays under 48 KiB (NVIDIA's
// Vulkan limit).  The host uses 128 invocations, MODE 0, faster than every
// 256-invocation mode on the VAE's shapes (docs/conv.md).  Why: the kernels
// wait on global loads, and without asynchronous copies every byte in flight
// sits in registers until it is stored to shared memory.  MODE 4 at 256
// invocations (two workgroups per SM) keeps 16 KB in flight per SM; 128
// invocations at MODE 0 (two workgroups) keep 32 KB.
// Every loop over fragments is [[unroll]] and the sixteen accumulators are
// separate variables: the NVIDIA compiler otherwise keeps them in local memory
// (5x slower).
//
// Cooperative-matrix spelling (NV, KHR, bf16 A/B): dk_coopmat.glsl.
#include "dk_coopmat.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require

// 256 invocations, or CMG_INV 128 (a second module, conv2d_nhwc_cm128).
#ifndef CMG_INV
#define CMG_INV 256
#endif
layout(local_size_x = CMG_INV, local_size_y = 1, local_size_z = 1) in;
// Upper bound of CMG_LA and CMG_LB (the fetch arrays' size).
#if CMG_INV == 128
#define CMG_LMAX 4
#else
#define CMG_LMAX 2
#endif

// Tile shape from MODE (specialization-constant expressions).
#ifdef CMG_NARROW_TILE
const int CMG_BM = 128;
const int CMG_BN = 16;
const int CMG_BK = 32;
const int CMG_WARPS_N = 1;
#else
const int CMG_BM = 128 << ((MODE >> DK_VK_CM_MODE_BM256_SHIFT) & 1);
const int CMG_BN = 128 << ((MODE >> DK_VK_CM_MODE_BN256_SHIFT) & 1);
const int CMG_BK = 32 >> ((MODE >> DK_VK_CM_MODE_BK16_SHIFT) & 1);
const int CMG_WARPS_N = 2 << ((MODE >> DK_VK_CM_MODE_BN256_SHIFT) & 1);   // subgroups along N (2 or 4)
#endif
const int CMG_WARPS_M = CMG_INV / 32 / CMG_WARPS_N;
const int CMG_WM = CMG_BM / CMG_WARPS_M;             // 32 or 64
const int CMG_WN = CMG_BN / CMG_WARPS_N;             // 64
const int CMG_FM = CMG_WM / 16;                      // fragments per subgroup (<= 4)
const int CMG_FN = CMG_WN / 16;                      // 4, or 1 (narrow)
// Shared rows in 16-byte vectors, padded by one vector: fragment rows of
// neighbouring matrix rows start in different banks.
const int CMG_LDA = CMG_BK / 8 + 1;
const int CMG_LDB = CMG_BN / 8 + 1;
const int CMG_SA = CMG_BM * CMG_LDA;                 // vectors per A slice buffer
const int CMG_SB = CMG_BK * CMG_LDB;
// Global loads: each invocation moves CMG_LA vectors of A and CMG_LB of B per
// slice (1 to 4); vector v of the slice row r is loaded by one invocation.
const int CMG_VA = CMG_BK / 8;                       // vectors per A row
const int CMG_RA = CMG_INV / CMG_VA;                 // A rows per pass
const int CMG_LA = CMG_BM / CMG_RA;
const int CMG_VB = CMG_BN / 8;
const int CMG_RB = CMG_INV / CMG_VB;
#ifdef CMG_NARROW_TILE
const int CMG_LB = 1;   // 64 invocations load B's 32 rows x 2 vectors; t / 2 >= 32 load nothing
#else
const int CMG_LB = CMG_BK / CMG_RB;
#endif

// DK_VK_CM_MODE_HALO (conv2d_nhwc_cm.comp's halo staging, with MODE 0 at 128
// invocations): A holds up to three staged input rows of 130 pixels instead
// of two slice buffers.  As arithmetic (a specialization-constant expression).
const int CMG_HALO = (MODE >> DK_VK_CM_MODE_HALO_SHIFT) & 1;
const int CMG_HALO_ROWS = 130;
const int CMG_SA_ALLOC = 2 * CMG_SA + CMG_HALO * (3 * CMG_HALO_ROWS * CMG_LDA - 2 * CMG_SA);
shared uvec4 cmg_sa[CMG_SA_ALLOC];
shared uvec4 cmg_sb[2 * CMG_SB];

// Accumulators: sixteen separate variables (row i, column j), touched only
// where i and j are unrolled constants.  As arrays (even one per row) the
// NVIDIA compiler put all sixteen in local memory at 64x64 subgroup tiles.
CM_C cmg_c00, cmg_c01, cmg_c02, cmg_c03, cmg_c10, cmg_c11, cmg_c12, cmg_c13;
CM_C cmg_c20, cmg_c21, cmg_c22, cmg_c23, cmg_c30, cmg_c31, cmg_c32, cmg_c33;

void cmg_zero() {
    cmg_c00 = cmg_c01 = cmg_c02 = cmg_c03 = CM_C(0.0);
    cmg_c10 = cmg_c11 = cmg_c12 = cmg_c13 = CM_C(0.0);
    cmg_c20 = cmg_c21 = cmg_c22 = cmg_c23 = CM_C(0.0);
    cmg_c30 = cmg_c31 = cmg_c32 = cmg_c33 = CM_C(0.0);
}

// Invocation t's p-th A vector of a slice: row, vector within the row.
int cmg_a_row(int t, int p) { return t / CMG_VA + p * CMG_RA; }
int cmg_a_vec(int t) { return t % CMG_VA; }
int cmg_b_row(int t, int p) { return t / CMG_VB + p * CMG_RB; }
int cmg_b_vec(int t) { return t % CMG_VB; }

// The slice in flight: this invocation's A and B vectors p (p < CMG_LA,
// CMG_LB), loaded by the including shader into two pairs each (p 0-1, 2-3),
// stored to shared memory by cmg_stage.  Arrays of two, local to main and
// passed as parameters: NVIDIA's driver crashed (in its SPIR-V front end)
// building the KHR module with arrays of four, and with the vectors as
// globals.
#define CMG_SET(lo, hi, p, x) \
    {                         \
        if (p < 2)            \
            lo[p & 1] = x;    \
        else                  \
            hi[p & 1] = x;    \
    }
#define CMG_GET(lo, hi, p) ((p) < 2 ? lo[(p) & 1] : hi[(p) & 1])

void cmg_stage_b(int buf, int t, uvec4 rb[2], uvec4 rb2[2]) {
    int b = buf * CMG_SB + cmg_b_vec(t);
#ifdef CMG_NARROW_TILE
    if (cmg_b_row(t, 0) < CMG_BK) cmg_sb[b + cmg_b_row(t, 0) * CMG_LDB] = rb[0];
#else
    [[unroll]] for (int p = 0; p < CMG_LB; p++) cmg_sb[b + cmg_b_row(t, p) * CMG_LDB] = CMG_GET(rb, rb2, p);
#endif
}

void cmg_stage(int buf, int t, uvec4 ra[2], uvec4 ra2[2], uvec4 rb[2], uvec4 rb2[2]) {
    int a = buf * CMG_SA + cmg_a_vec(t);
    [[unroll]] for (int p = 0; p < CMG_LA; p++) cmg_sa[a + cmg_a_row(t, p) * CMG_LDA] = CMG_GET(ra, ra2, p);
    cmg_stage_b(buf, t, rb, rb2);
}

// Row i of the products: c_ij += a b_j for the four column fragments (one
// in the narrow module).
#ifdef CMG_NARROW_TILE
#define CMG_ROW(a, c0, c1, c2, c3) c0 = CM_MAD(a, b0, c0);
#else
#define CMG_ROW(a, c0, c1, c2, c3)   \
    c0 = CM_MAD(a, b0, c0);          \
    c1 = CM_MAD(a, b1, c1);          \
    c2 = CM_MAD(a, b2, c2);          \
    c3 = CM_MAD(a, b3, c3);
#endif

// The products of one staged slice: this subgroup's first A row starts at
// vector abase of cmg_sa, its first B column at vector bbase of cmg_sb's slice
// buffer.  CMG_FN is 4 (1 in the narrow module); CMG_FM is 2 or 4.
void cmg_compute_at(uint abase, uint bbase) {
    [[unroll]] for (int kk = 0; kk < CMG_BK; kk += 16) {
        CM_A a0, a1, a2, a3;
        CM_B b0, b1, b2, b3;
        uint ao = abase + uint(kk / 8), bo = bbase + uint(kk * CMG_LDB);
        CM_LOAD(a0, cmg_sa, ao, uint(CMG_LDA));
        CM_LOAD(a1, cmg_sa, ao + uint(16 * CMG_LDA), uint(CMG_LDA));
        if (CMG_FM > 2) {
            CM_LOAD(a2, cmg_sa, ao + uint(32 * CMG_LDA), uint(CMG_LDA));
            CM_LOAD(a3, cmg_sa, ao + uint(48 * CMG_LDA), uint(CMG_LDA));
        }
        CM_LOAD(b0, cmg_sb, bo, uint(CMG_LDB));
#ifndef CMG_NARROW_TILE
        CM_LOAD(b1, cmg_sb, bo + 2u, uint(CMG_LDB));
        CM_LOAD(b2, cmg_sb, bo + 4u, uint(CMG_LDB));
        CM_LOAD(b3, cmg_sb, bo + 6u, uint(CMG_LDB));
#endif
        CMG_ROW(a0, cmg_c00, cmg_c01, cmg_c02, cmg_c03)
        CMG_ROW(a1, cmg_c10, cmg_c11, cmg_c12, cmg_c13)
        if (CMG_FM > 2) {
            CMG_ROW(a2, cmg_c20, cmg_c21, cmg_c22, cmg_c23)
            CMG_ROW(a3, cmg_c30, cmg_c31, cmg_c32, cmg_c33)
        }
    }
}

// The products of slice buffer buf for subgroup (wm, wn) (element offsets in the tile).
void cmg_compute(int buf, int wm, int wn) {
    cmg_compute_at(uint(buf * CMG_SA + wm * CMG_LDA), uint(buf * CMG_SB + wn / 8));
}

// Spills accumulator (i, j) to subgroup sg's slot as a row-major 16x16 fp32
// block (4 vectors of 4 floats per row) and makes it visible to the subgroup.
// The slots reuse the A slice buffers: call after the K loop's last barrier.
#define CMG_SPILL1(ii, jj, c) \
    if (i == ii && j == jj) CM_STORE(c, cmg_sa, uint(sg * 64), 4u);
void cmg_spill(int sg, int i, int j) {
    subgroupMemoryBarrierShared();
    subgroupBarrier();   // the previous fragment's readers are done
    CMG_SPILL1(0, 0, cmg_c00) CMG_SPILL1(0, 1, cmg_c01) CMG_SPILL1(0, 2, cmg_c02) CMG_SPILL1(0, 3, cmg_c03)
    CMG_SPILL1(1, 0, cmg_c10) CMG_SPILL1(1, 1, cmg_c11) CMG_SPILL1(1, 2, cmg_c12) CMG_SPILL1(1, 3, cmg_c13)
    CMG_SPILL1(2, 0, cmg_c20) CMG_SPILL1(2, 1, cmg_c21) CMG_SPILL1(2, 2, cmg_c22) CMG_SPILL1(2, 3, cmg_c23)
    CMG_SPILL1(3, 0, cmg_c30) CMG_SPILL1(3, 1, cmg_c31) CMG_SPILL1(3, 2, cmg_c32) CMG_SPILL1(3, 3, cmg_c33)
    subgroupMemoryBarrierShared();
    subgroupBarrier();
}

// Row r (0..15), floats 4q .. 4q+3 of subgroup sg's spilled fragment.
vec4 cmg_spilled(int sg, int r, int q) { return uintBitsToFloat(cmg_sa[sg * 64 + r * 4 + q]); }
