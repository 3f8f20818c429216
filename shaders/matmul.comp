#version 450
#extension GL_GOOGLE_include_directive : require
// Batched strided matmul y[b] = oscale * act(a[b] x b[b] + bias) + rscale * residual[b];
// batch = gl_WorkGroupID.z (a 2-D operand has batch stride 0).
#include "dk_common.glsl"

DK_IO(0, A, DT)
DK_IO(1, B, DT)
DK_IO(2, Bias, DT)
DK_IO(3, Res, DT)
DK_IO(4, Y, DT)

uint mm_b;

void gemm_row_setup(int slot, int m) {}

float gemm_load_a(int slot, int m, int k) {
    return A_ld(PU(DK_VKP_MM_AS + 3) + mm_b * PU(DK_VKP_MM_AS) + uint(m) * PU(DK_VKP_MM_AS + 1) +
                uint(k) * PU(DK_VKP_MM_AS + 2));
}

float gemm_load_b(int k, int n) {
    return B_ld(PU(DK_VKP_MM_BS + 3) + mm_b * PU(DK_VKP_MM_BS) + uint(k) * PU(DK_VKP_MM_BS + 1) +
                uint(n) * PU(DK_VKP_MM_BS + 2));
}

void gemm_store(int m, int n, float acc) {
    float v = acc;
    if ((FLAGS & 1) != 0) v += Bias_ld(PU(DK_VKP_MM_BIAS + 1) + uint(n) * PU(DK_VKP_MM_BIAS));
    v = PF(DK_VKP_MM_OSCALE) * dk_act(v);
    if ((FLAGS & 2) != 0)
        v += PF(DK_VKP_MM_RSCALE) * Res_ld(PU(DK_VKP_MM_RS + 3) + mm_b * PU(DK_VKP_MM_RS) + uint(m) * PU(DK_VKP_MM_RS + 1) +
                                           uint(n) * PU(DK_VKP_MM_RS + 2));
    Y_st(PU(DK_VKP_MM_YS + 3) + mm_b * PU(DK_VKP_MM_YS) + uint(m) * PU(DK_VKP_MM_YS + 1) + uint(n) * PU(DK_VKP_MM_YS + 2), v);
}

#include "dk_gemm_tile.glsl"

void main() {
    mm_b = gl_WorkGroupID.z;
    gemm_run(P(DK_VKP_MM_M), P(DK_VKP_MM_N), P(DK_VKP_MM_K), int(group_x()) * GEMM_BM, int(gl_WorkGroupID.y) * GEMM_BN);
}
