#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
// Batched strided matmul y[b] = post_act(oscale * act(a[b] x b[b] + bias) + rscale * residual[b]);
// batch = gl_WorkGroupID.z (a 2-D operand has batch stride 0).  Callbacks of
// the GEMM core (dk_gemm_tile.glsl): rows and columns keep their base offsets,
// the k cursors their element offsets.
#include "dk_common.glsl"
#include "dk_gemm_tile.glsl"

DK_IO(0, A, DT)
DK_IO(1, B, DT)
DK_IO(2, Bias, DT2)   // the bias: DT, or f32 (DT2, set by the host)
DK_IO(3, Res, DT)
DK_IO(4, Y, DT)
// 16-byte views for the vector fetches (MODE bits 0 and 1).
layout(std430, set = 0, binding = 0) readonly buffer AV { uvec4 v[]; } av;
layout(std430, set = 0, binding = 1) readonly buffer BV { uvec4 v[]; } bv;

uint mm_b;
uint mm_arow[8], mm_bcol[8];
uint mm_ak, mm_bk; // cursor offsets: k * k-stride
uint mm_yrow, mm_rrow;

void gemm_a_row(int j, int m) {
    mm_arow[j] = PU(DK_VKP_MM_AS + 3) + mm_b * PU(DK_VKP_MM_AS) + uint(m) * PU(DK_VKP_MM_AS + 1);
}
void gemm_a_kset(int k) { mm_ak = uint(k) * PU(DK_VKP_MM_AS + 2); }
void gemm_a_knext() { mm_ak += uint(GEMM_BK) * PU(DK_VKP_MM_AS + 2); }
float gemm_a_load(int j) { return A_ld(mm_arow[j] + mm_ak); }
void gemm_a_load8(out float v[8]) {
    uint i = mm_arow[0] + mm_ak;
    GEMM_LOAD8(av, i, v);
}

void gemm_b_col(int j, int n) {
    mm_bcol[j] = PU(DK_VKP_MM_BS + 3) + mm_b * PU(DK_VKP_MM_BS) + uint(n) * PU(DK_VKP_MM_BS + 2);
}
void gemm_b_kset(int k) { mm_bk = uint(k) * PU(DK_VKP_MM_BS + 1); }
void gemm_b_knext() { mm_bk += uint(GEMM_BK) * PU(DK_VKP_MM_BS + 1); }
float gemm_b_load(int j) { return B_ld(mm_bcol[j] + mm_bk); }
void gemm_b_load8(out float v[8]) {
    uint i = mm_bcol[0] + mm_bk;
    GEMM_LOAD8(bv, i, v);
}

void gemm_out_row(int m) {
    mm_yrow = PU(DK_VKP_MM_YS + 3) + mm_b * PU(DK_VKP_MM_YS) + uint(m) * PU(DK_VKP_MM_YS + 1);
    mm_rrow = PU(DK_VKP_MM_RS + 3) + mm_b * PU(DK_VKP_MM_RS) + uint(m) * PU(DK_VKP_MM_RS + 1);
}

void gemm_store(int m, int n, float acc) {
    float v = acc;
    if ((FLAGS & 1) != 0) v += Bias_ld(PU(DK_VKP_MM_BIAS + 1) + uint(n) * PU(DK_VKP_MM_BIAS));
    v = PF(DK_VKP_MM_OSCALE) * dk_act(v);
    if ((FLAGS & 2) != 0) v += PF(DK_VKP_MM_RSCALE) * Res_ld(mm_rrow + uint(n) * PU(DK_VKP_MM_RS + 2));
    Y_st(mm_yrow + uint(n) * PU(DK_VKP_MM_YS + 2), dk_act_post(v));
}

void main() {
    mm_b = gl_WorkGroupID.z;
    gemm_run(P(DK_VKP_MM_M), P(DK_VKP_MM_N), P(DK_VKP_MM_K), int(group_x()) * GEMM_BM, int(gl_WorkGroupID.y) * GEMM_BN);
}
