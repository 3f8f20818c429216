#version 450
#extension GL_GOOGLE_include_directive : require
// LayerNorm over the last dimension: one workgroup per row, fp32 Welford per
// invocation combined in shared memory, then normalize + affine + activation.
#define DK_PARAMS dk_vk_layer_norm_params
#include "dk_common.glsl"

layout(local_size_x = 256) in;

DK_IO(0, X, DT)
DK_IO(1, Gamma, DT)
DK_IO(2, Beta, DT)
DK_IO(4, Y, DT)

shared float sh_n[256], sh_mean[256], sh_m2[256];

void main() {
    uint row = group_x();
    if (row >= uint(dkp.p.rows)) return;
    uint r1 = uint(dkp.p.dim1), r2 = uint(dkp.p.dim2), D = uint(dkp.p.d);
    uint i2 = row % r2, q = row / r2;
    uint i1 = q % r1, i0 = q / r1;
    uint xb = uint(dkp.p.x.offset) + i0 * uint(dkp.p.x.stride[0]) + i1 * uint(dkp.p.x.stride[1]) + i2 * uint(dkp.p.x.stride[2]);
    uint yb = uint(dkp.p.y.offset) + i0 * uint(dkp.p.y.stride[0]) + i1 * uint(dkp.p.y.stride[1]) + i2 * uint(dkp.p.y.stride[2]);
    uint xs = uint(dkp.p.x.stride[3]), ys = uint(dkp.p.y.stride[3]);
    uint t = gl_LocalInvocationID.x;
    float cnt = 0.0, mean = 0.0, m2 = 0.0;
    for (uint d = t; d < D; d += 256u) {
        float x = X_ld(xb + d * xs);
        cnt += 1.0;
        float dd = x - mean;
        mean += dd / cnt;
        m2 += dd * (x - mean);
    }
    sh_n[t] = cnt; sh_mean[t] = mean; sh_m2[t] = m2;
    barrier();
    for (uint s = 128u; s > 0u; s >>= 1) {
        if (t < s) {
            float na = sh_n[t], nb = sh_n[t + s];
            float nn = na + nb;
            if (nb > 0.0) {
                float dd = sh_mean[t + s] - sh_mean[t];
                sh_mean[t] = sh_mean[t] + dd * (nb / nn);
                sh_m2[t] = sh_m2[t] + sh_m2[t + s] + dd * dd * (na * nb / nn);
                sh_n[t] = nn;
            }
        }
        barrier();
    }
    float mu = sh_mean[0];
    float rstd = inversesqrt(max(sh_m2[0] / sh_n[0], 0.0) + dkp.p.eps);
    // Every invocation has read the statistics before any output is written
    // (the output may be the input: in place).
    barrier();
    for (uint d = t; d < D; d += 256u) {
        float v = (X_ld(xb + d * xs) - mu) * rstd;
        if ((FLAGS & DK_VK_FLAG_GAMMA) != 0) v *= Gamma_ld(uint(dkp.p.gamma.offset) + d * uint(dkp.p.gamma.stride));
        if ((FLAGS & DK_VK_FLAG_BETA) != 0) v += Beta_ld(uint(dkp.p.beta.offset) + d * uint(dkp.p.beta.stride));
        Y_st(yb + d * ys, dk_act(v));
    }
}
