#version 450
#extension GL_GOOGLE_include_directive : require
// GroupNorm pass 2: combine the chunk partials of each (n, group) into mean and
// 1/sqrt(var + eps) (population variance), one invocation per (n, group).
#include "dk_common.glsl"

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 5) buffer GnScr { float v[]; } scr;

void main() {
    uint ng = group_x() * 64u + gl_LocalInvocationID.x;
    if (ng >= PU(DK_VKP_GN_N) * PU(DK_VKP_GN_G)) return;
    uint chunks = PU(DK_VKP_GN_CHUNKS);
    float cnt = 0.0, mean = 0.0, m2 = 0.0;
    for (uint i = 0u; i < chunks; i++) {
        uint o = PU(DK_VKP_GN_SCR) + (ng * chunks + i) * 3u;
        float nb = scr.v[o];
        if (nb > 0.0) {
            float nn = cnt + nb;
            float d = scr.v[o + 1u] - mean;
            mean += d * (nb / nn);
            m2 += scr.v[o + 2u] + d * d * (cnt * nb / nn);
            cnt = nn;
        }
    }
    uint s = PU(DK_VKP_GN_STATS) + ng * 2u;
    scr.v[s] = mean;
    scr.v[s + 1u] = inversesqrt(max(m2 / cnt, 0.0) + PF(DK_VKP_GN_EPS));
}
