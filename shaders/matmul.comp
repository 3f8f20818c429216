#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
// Batched strided matmul y[b] = post_act(oscale * act(a[b] x b[b] + bias) + rscale * residual[b]);
// batch = gl_WorkGroupID.z (a 2-D operand has batch stride 0).  Callbacks of
// the GEMM core (dk_gemm_tile.glsl): rows and columns keep their base offsets,
// the k cursors their element offsets.
#define DK_PARAMS dk_vk_matmul_params
#include "dk_common.glsl"
#include "dk_gemm_tile.glsl"

DK_IO(0, A, DT)
DK_IO(1, B, DT)
DK_IO(2, Bias, DT2)   // the bias: DT, or f32 (DT2, set by the host)
DK_IO(3, Res, DT)
DK_IO(4, Y, DT)
// 16-byte views for the vector fetches (DK_VK_GEMM_MODE_VEC_A, DK_VK_GEMM_MODE_VEC_B_N).
layout(std430, set = 0, binding = 0) readonly buffer AV { uvec4 v[]; } av;
layout(std430, set = 0, binding = 1) readonly buffer BV { uvec4 v[]; } bv;

uint mm_b;
uint mm_arow[8], mm_bcol[8];
uint mm_ak, mm_bk; // cursor offsets: k * k-stride
uint mm_yrow, mm_rrow;

void gemm_a_row(int j, int m) {
    mm_arow[j] = uint(dkp.p.a.offset) + mm_b * uint(dkp.p.a.stride[0]) + uint(m) * uint(dkp.p.a.stride[1]);
}
void gemm_a_kset(int k) { mm_ak = uint(k) * uint(dkp.p.a.stride[2]); }
void gemm_a_knext() { mm_ak += uint(GEMM_BK) * uint(dkp.p.a.stride[2]); }
float gemm_a_load(int j) { return A_ld(mm_arow[j] + mm_ak); }
void gemm_a_load8(out float v[8]) {
    uint i = mm_arow[0] + mm_ak;
    GEMM_LOAD8(av, i, v);
}

void gemm_b_col(int j, int n) {
    mm_bcol[j] = uint(dkp.p.b.offset) + mm_b * uint(dkp.p.b.stride[0]) + uint(n) * uint(dkp.p.b.stride[2]);
}
void gemm_b_kset(int k) { mm_bk = uint(k) * uint(dkp.p.b.stride[1]); }
void gemm_b_knext() { mm_bk += uint(GEMM_BK) * uint(dkp.p.b.stride[1]); }
float gemm_b_load(int j) { return B_ld(mm_bcol[j] + mm_bk); }
void gemm_b_load8(out float v[8]) {
    uint i = mm_bcol[0] + mm_bk;
    GEMM_LOAD8(bv, i, v);
}

void gemm_out_row(int m) {
    mm_yrow = uint(dkp.p.y.offset) + mm_b * uint(dkp.p.y.stride[0]) + uint(m) * uint(dkp.p.y.stride[1]);
    mm_rrow = uint(dkp.p.residual.offset) + mm_b * uint(dkp.p.residual.stride[0]) + uint(m) * uint(dkp.p.residual.stride[1]);
}

void gemm_store(int m, int n, float acc) {
    float v = acc;
    if ((FLAGS & DK_VK_FLAG_BIAS) != 0) v += Bias_ld(uint(dkp.p.bias.offset) + uint(n) * uint(dkp.p.bias.stride));
    v = dkp.p.out_scale * dk_act(v);
    if ((FLAGS & DK_VK_FLAG_RESIDUAL) != 0) v += dkp.p.residual_scale * Res_ld(mm_rrow + uint(n) * uint(dkp.p.residual.stride[2]));
    Y_st(mm_yrow + uint(n) * uint(dkp.p.y.stride[2]), dk_act_post(v));
}

void main() {
    mm_b = gl_WorkGroupID.z;
    gemm_run(dkp.p.m, dkp.p.n, dkp.p.k, int(group_x()) * GEMM_BM, int(gl_WorkGroupID.y) * GEMM_BN);
}
