#version 450
#extension GL_GOOGLE_include_directive : require
// GroupNorm pass 1: partial fp32 statistics (count, mean, M2) of one chunk of one
// (n, group), Welford per invocation, combined with Chan's formula in shared memory.
// Workgroup (chunk = x, n*G + g = y).  Partials go to the scratch binding 5 (f32).
#include "dk_common.glsl"

layout(local_size_x = 256) in;

DK_IO(0, X, DT)
layout(std430, set = 0, binding = 5) buffer GnScr { float v[]; } scr;

shared float sh_n[256], sh_mean[256], sh_m2[256];

void main() {
    uint C = PU(DK_VKP_GN_C), H = PU(DK_VKP_GN_H), W = PU(DK_VKP_GN_W), G = PU(DK_VKP_GN_G);
    uint cg = C / G, hw = H * W, len = cg * hw;
    uint ng = gl_WorkGroupID.y, n = ng / G, g = ng % G;
    uint chunk = PU(DK_VKP_GN_CHUNK);
    uint e0 = group_x() * chunk, e1 = min(len, e0 + chunk);
    bool cfast = P(DK_VKP_GN_CFAST) != 0;
    uint base = PU(DK_VKP_GN_XS + 4) + n * PU(DK_VKP_GN_XS);
    float cnt = 0.0, mean = 0.0, m2 = 0.0;
    for (uint e = e0 + gl_LocalInvocationID.x; e < e1; e += 256u) {
        uint c, s;
        if (cfast) { c = e % cg; s = e / cg; } else { s = e % hw; c = e / hw; }
        uint h = s / W, w = s % W;
        float x = X_ld(base + (g * cg + c) * PU(DK_VKP_GN_XS + 1) + h * PU(DK_VKP_GN_XS + 2) + w * PU(DK_VKP_GN_XS + 3));
        cnt += 1.0;
        float d = x - mean;
        mean += d / cnt;
        m2 += d * (x - mean);
    }
    uint t = gl_LocalInvocationID.x;
    sh_n[t] = cnt; sh_mean[t] = mean; sh_m2[t] = m2;
    barrier();
    for (uint s = 128u; s > 0u; s >>= 1) {
        if (t < s) {
            float na = sh_n[t], nb = sh_n[t + s];
            float nn = na + nb;
            if (nb > 0.0) {
                float d = sh_mean[t + s] - sh_mean[t];
                sh_mean[t] = sh_mean[t] + d * (nb / nn);
                sh_m2[t] = sh_m2[t] + sh_m2[t + s] + d * d * (na * nb / nn);
                sh_n[t] = nn;
            }
        }
        barrier();
    }
    if (t == 0u) {
        uint o = PU(DK_VKP_GN_SCR) + (ng * PU(DK_VKP_GN_CHUNKS) + group_x()) * 3u;
        scr.v[o] = sh_n[0]; scr.v[o + 1u] = sh_mean[0]; scr.v[o + 2u] = sh_m2[0];
    }
}
