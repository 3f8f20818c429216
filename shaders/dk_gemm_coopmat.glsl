// Tensor-core GEMM core shared by the cooperative-matrix shaders: the block tile
// shape, the double-buffered shared-memory K slices, the fragment products and
// the accumulator spill for the epilogue.  The including shader does the
// global loads (it knows the addressing: implicit GEMM for conv) and the
// epilogue; this file owns everything that touches cooperative matrices.
//
// C[m][n] = sum_k A[m][k] B[k][n], fp16 inputs, fp32 accumulators.  One
// CMG_BM x CMG_BN tile of C per workgroup of 256 invocations = 8 subgroups of
// 32; each subgroup owns a CMG_WM x CMG_WN block of 16x16 fragments.  K runs in
// CMG_BK-deep slices staged in shared memory as 16-byte vectors (one store per
// vector; coopMatLoad offsets and strides then count vectors, which also tells
// the driver that every fragment row is 16-byte aligned).  Two slice buffers:
// the loads of slice s+1 are issued before slice s's products and stored to
// the other buffer after them, so one barrier per slice suffices.
//
// The tile shape is the MODE specialization constant (see DK_VKS_MODE):
//   bit 0: BM 256 (else 128)   bit 1: BN 256 (else 128)   bit 2: BK 16 (else 32)
// Valid: 0 = 128x128x32 (subgroups 32x64), 4 = 128x128x16, 5 = 256x128x16 and
// 6 = 128x256x16 (subgroups 64x64); shared memory stays under 48 KiB (NVIDIA's
// Vulkan limit).  Measured on the H100 (conv 3x3 512->512 @128, f16): NV
// module 0 148 TFLOP/s, 4 114; KHR module 0 174, 4 195; 5 and 6 ~30 in both
// (with 16 accumulator fragments per subgroup the driver's code runs 5x
// slower, as it does when these loops are not unrolled).  So the host uses 4
// with the KHR modules, 0 with the NV one.  Every loop over fragments is
// [[unroll]]: the NVIDIA compiler otherwise keeps the fragment arrays in local
// memory (5x slower).
//
// Cooperative-matrix spelling (NV, KHR, bf16 A/B): dk_coopmat.glsl.
#include "dk_coopmat.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

// Tile shape from MODE (specialization-constant expressions).
const int CMG_BM = 128 << (MODE & 1);
const int CMG_BN = 128 << ((MODE >> 1) & 1);
const int CMG_BK = 32 >> ((MODE >> 2) & 1);
const int CMG_WARPS_N = 2 << ((MODE >> 1) & 1);   // subgroups along N (2 or 4)
const int CMG_WARPS_M = 8 / CMG_WARPS_N;
const int CMG_WM = CMG_BM / CMG_WARPS_M;             // 32 or 64
const int CMG_WN = CMG_BN / CMG_WARPS_N;             // 64
const int CMG_FM = CMG_WM / 16;                      // fragments per subgroup (<= 4)
const int CMG_FN = CMG_WN / 16;
// Shared rows in 16-byte vectors, padded by one vector: fragment rows of
// neighbouring matrix rows start in different banks.
const int CMG_LDA = CMG_BK / 8 + 1;
const int CMG_LDB = CMG_BN / 8 + 1;
const int CMG_SA = CMG_BM * CMG_LDA;                 // vectors per A slice buffer
const int CMG_SB = CMG_BK * CMG_LDB;
// Global loads: each invocation moves CMG_LA vectors of A and CMG_LB of B per
// slice (1 or 2); vector v of the slice row r is loaded by one invocation.
const int CMG_VA = CMG_BK / 8;                       // vectors per A row
const int CMG_RA = 256 / CMG_VA;                     // A rows per pass
const int CMG_LA = CMG_BM / CMG_RA;
const int CMG_VB = CMG_BN / 8;
const int CMG_RB = 256 / CMG_VB;
const int CMG_LB = CMG_BK / CMG_RB;

shared uvec4 cmg_sa[2 * CMG_SA];
shared uvec4 cmg_sb[2 * CMG_SB];

// Accumulators: one array per fragment row, indexed only by unrolled constants.
CM_C cmg_acc0[4], cmg_acc1[4], cmg_acc2[4], cmg_acc3[4];

void cmg_zero() {
    [[unroll]] for (int j = 0; j < 4; j++) {
        cmg_acc0[j] = CM_C(0.0);
        cmg_acc1[j] = CM_C(0.0);
        cmg_acc2[j] = CM_C(0.0);
        cmg_acc3[j] = CM_C(0.0);
    }
}

// Invocation t's p-th A vector of a slice: row, vector within the row.
int cmg_a_row(int t, int p) { return t / CMG_VA + p * CMG_RA; }
int cmg_a_vec(int t) { return t % CMG_VA; }
int cmg_b_row(int t, int p) { return t / CMG_VB + p * CMG_RB; }
int cmg_b_vec(int t) { return t % CMG_VB; }

void cmg_stage(int buf, int t, uvec4 ra[2], uvec4 rb[2]) {
    [[unroll]] for (int p = 0; p < CMG_LA; p++) cmg_sa[buf * CMG_SA + cmg_a_row(t, p) * CMG_LDA + cmg_a_vec(t)] = ra[p];
    [[unroll]] for (int p = 0; p < CMG_LB; p++) cmg_sb[buf * CMG_SB + cmg_b_row(t, p) * CMG_LDB + cmg_b_vec(t)] = rb[p];
}

// The products of one staged slice for subgroup (wm, wn) (element offsets in the tile).
void cmg_compute(int buf, int wm, int wn) {
    [[unroll]] for (int kk = 0; kk < CMG_BK; kk += 16) {
        CM_A a[4];
        CM_B b[4];
        [[unroll]] for (int i = 0; i < CMG_FM; i++)
            CM_LOAD(a[i], cmg_sa, uint(buf * CMG_SA + (wm + 16 * i) * CMG_LDA + kk / 8), uint(CMG_LDA));
        [[unroll]] for (int j = 0; j < CMG_FN; j++)
            CM_LOAD(b[j], cmg_sb, uint(buf * CMG_SB + kk * CMG_LDB + (wn + 16 * j) / 8), uint(CMG_LDB));
        [[unroll]] for (int j = 0; j < CMG_FN; j++) {
            cmg_acc0[j] = CM_MAD(a[0], b[j], cmg_acc0[j]);
            if (CMG_FM > 1) cmg_acc1[j] = CM_MAD(a[1], b[j], cmg_acc1[j]);
            if (CMG_FM > 2) cmg_acc2[j] = CM_MAD(a[2], b[j], cmg_acc2[j]);
            if (CMG_FM > 3) cmg_acc3[j] = CM_MAD(a[3], b[j], cmg_acc3[j]);
        }
    }
}

// Spills accumulator (i, j) to subgroup sg's slot as a row-major 16x16 fp32
// block (4 vectors of 4 floats per row) and makes it visible to the subgroup.
// The slots reuse the A slice buffers: call after the K loop's last barrier.
void cmg_spill(int sg, int i, int j) {
    subgroupMemoryBarrierShared();
    subgroupBarrier();   // the previous fragment's readers are done
    if (i == 0) CM_STORE(cmg_acc0[j], cmg_sa, uint(sg * 64), 4u);
    if (i == 1) CM_STORE(cmg_acc1[j], cmg_sa, uint(sg * 64), 4u);
    if (i == 2) CM_STORE(cmg_acc2[j], cmg_sa, uint(sg * 64), 4u);
    if (i == 3) CM_STORE(cmg_acc3[j], cmg_sa, uint(sg * 64), 4u);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
}

// Row r (0..15), floats 4q .. 4q+3 of subgroup sg's spilled fragment.
vec4 cmg_spilled(int sg, int r, int q) { return uintBitsToFloat(cmg_sa[sg * 64 + r * 4 + q]); }
