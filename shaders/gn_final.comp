#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// GroupNorm pass 2: workgroup ng = n*G + g merges the chunk partials of its group
// (Chan's formula, population variance) and writes, for each channel c of the
// group, the vec4 (mean, rstd * gamma[c], beta[c], 0) at COEF + (n*C + c)*4, so
// the normalize pass is one subtract and one fma per element.
#define DK_PARAMS dk_vk_group_norm_params
#include "dk_common.glsl"

layout(local_size_x = 256) in;

DK_IO(1, Gamma, DT2)   // gamma and beta: DT, or f32 (DT2, set by the host)
DK_IO(2, Beta, DT2)
layout(std430, set = 0, binding = 5) buffer GnScr { float v[]; } scr;
layout(std430, set = 0, binding = 3) buffer GnStats { float v[]; } stats; // split GroupNorm (DK_VK_FLAG_GN_STATS_OUT / _IN)

shared float sh_n[256], sh_mean[256], sh_m2[256];

void gn_merge(inout float na, inout float ma, inout float qa, float nb, float mb, float qb) {
    if (nb <= 0.0) return;
    float nn = na + nb, d = mb - ma;
    ma += d * (nb / nn);
    qa += qb + d * d * (na * nb / nn);
    na = nn;
}

void main() {
    uint t = gl_LocalInvocationID.x, ng = group_x(), chunks = uint(dkp.p.chunks);
    float cnt = 0.0, mean = 0.0, m2 = 0.0;
    if ((FLAGS & DK_VK_FLAG_GN_STATS_IN) != 0 && t == 0u) { // statistics given: (mean, variance)
        cnt = 1.0;
        mean = stats.v[uint(dkp.p.stats_offset) + ng * 2u];
        m2 = stats.v[uint(dkp.p.stats_offset) + ng * 2u + 1u];
    }
    if ((FLAGS & DK_VK_FLAG_GN_STATS_IN) != 0) chunks = 0u;
    // 256 invocations, four partials loaded per step so that their latencies
    // overlap: the statistics pass leaves up to 4096 per group, which 64
    // invocations would merge one dependent load at a time.
    uint i = t, base = uint(dkp.p.partials_offset) + ng * chunks * 3u;
    for (; i + 768u < chunks; i += 1024u) {
        float v[12];
        [[unroll]] for (uint u = 0u; u < 4u; u++) {
            uint o = base + (i + 256u * u) * 3u;
            v[3u * u] = scr.v[o];
            v[3u * u + 1u] = scr.v[o + 1u];
            v[3u * u + 2u] = scr.v[o + 2u];
        }
        [[unroll]] for (uint u = 0u; u < 4u; u++) gn_merge(cnt, mean, m2, v[3u * u], v[3u * u + 1u], v[3u * u + 2u]);
    }
    for (; i < chunks; i += 256u) {
        uint o = base + i * 3u;
        gn_merge(cnt, mean, m2, scr.v[o], scr.v[o + 1u], scr.v[o + 2u]);
    }
    sh_n[t] = cnt; sh_mean[t] = mean; sh_m2[t] = m2;
    barrier();
    for (uint s = 128u; s > 0u; s >>= 1) {
        if (t < s) {
            float na = sh_n[t], ma = sh_mean[t], qa = sh_m2[t];
            gn_merge(na, ma, qa, sh_n[t + s], sh_mean[t + s], sh_m2[t + s]);
            sh_n[t] = na; sh_mean[t] = ma; sh_m2[t] = qa;
        }
        barrier();
    }
    if ((FLAGS & DK_VK_FLAG_GN_STATS_OUT) != 0) {
        if (t == 0u) {
            stats.v[uint(dkp.p.stats_offset) + ng * 2u] = sh_mean[0];
            stats.v[uint(dkp.p.stats_offset) + ng * 2u + 1u] = sh_m2[0] / sh_n[0];
        }
        return;
    }
    uint C = uint(dkp.p.c), G = uint(dkp.p.groups), cg = C / G, n = ng / G, g = ng % G;
    float rstd = inversesqrt(max(sh_m2[0] / sh_n[0], 0.0) + dkp.p.eps);
    for (uint c = g * cg + t; c < g * cg + cg; c += 256u) {
        float a = rstd, b = 0.0;
        if ((FLAGS & DK_VK_FLAG_GAMMA) != 0) a *= Gamma_ld(uint(dkp.p.gamma.offset) + c * uint(dkp.p.gamma.stride));
        if ((FLAGS & DK_VK_FLAG_BETA) != 0) b = Beta_ld(uint(dkp.p.beta.offset) + c * uint(dkp.p.beta.stride));
        uint o = uint(dkp.p.coef_offset) + (n * C + c) * 4u;
        scr.v[o] = sh_mean[0]; scr.v[o + 1u] = a; scr.v[o + 2u] = b; scr.v[o + 3u] = 0.0;
    }
}
