#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// GroupNorm pass 1: partial fp32 statistics (count, mean, M2) of one chunk,
// combined with Chan's formula in shared memory and written to the scratch
// binding 5 at ((n * G + g) * chunks + chunk) * 3.
//   MODE 0 (any strides): workgroup (chunk, n*G + g), element by element.
//   MODE 1 (dense NCHW): a group is one contiguous run of vectors; workgroup
//     (chunk, n*G + g) sums a slice of it.
//   MODE 2 (dense NHWC): workgroup (chunk, n) reads whole pixels (all C channels,
//     coalesced) and keeps per-channel sums, merged into groups at the end by
//     several invocations per group.
// Every mode accumulates sums of (x - K) and (x - K)^2 with K the invocation's
// first value (no division per element, and no cancellation when |mean| >> std).
#define DK_PARAMS dk_vk_group_norm_params
#include "dk_common.glsl"

layout(local_size_x = 256) in;

DK_IO(0, X, DT)
layout(std430, set = 0, binding = 0) readonly buffer XVec { uvec4 v[]; } xv;
layout(std430, set = 0, binding = 5) buffer GnScr { float v[]; } scr;

shared float sh_n[256 * 8], sh_mean[256 * 8], sh_m2[256 * 8];
shared float part_n[256], part_s1[256], part_s2[256];   // MODE 2: per-group partials

// Chan: merge (nb, mb, qb) into (na, ma, qa).
void gn_merge(inout float na, inout float ma, inout float qa, float nb, float mb, float qb) {
    if (nb <= 0.0) return;
    float nn = na + nb, d = mb - ma;
    ma += d * (nb / nn);
    qa += qb + d * d * (na * nb / nn);
    na = nn;
}

// Shifted sums (cnt, s1 = sum(x - K), s2 = sum((x - K)^2)) as (cnt, mean, M2).
void gn_unshift(float cnt, float k, float s1, float s2, out float mean, out float m2) {
    mean = cnt > 0.0 ? k + s1 / cnt : 0.0;
    m2 = cnt > 0.0 ? max(s2 - s1 * (s1 / cnt), 0.0) : 0.0;
}

void gn_write(uint ng, float cnt, float mean, float m2) {
    uint o = uint(dkp.p.partials_offset) + (ng * uint(dkp.p.chunks) + group_x()) * 3u;
    scr.v[o] = cnt; scr.v[o + 1u] = mean; scr.v[o + 2u] = m2;
}

// Tree reduction of slot 8*t of the shared arrays; thread 0 writes the result.
void gn_reduce_write(uint ng) {
    uint t = gl_LocalInvocationID.x;
    barrier();
    for (uint s = 128u; s > 0u; s >>= 1) {
        if (t < s) {
            float na = sh_n[8u * t], ma = sh_mean[8u * t], qa = sh_m2[8u * t];
            gn_merge(na, ma, qa, sh_n[8u * (t + s)], sh_mean[8u * (t + s)], sh_m2[8u * (t + s)]);
            sh_n[8u * t] = na; sh_mean[8u * t] = ma; sh_m2[8u * t] = qa;
        }
        barrier();
    }
    if (t == 0u) gn_write(ng, sh_n[0], sh_mean[0], sh_m2[0]);
}

void stats_any() {
    uint C = uint(dkp.p.c), H = uint(dkp.p.h), W = uint(dkp.p.w), G = uint(dkp.p.groups);
    uint cg = C / G, hw = H * W, len = cg * hw;
    uint ng = gl_WorkGroupID.y, n = ng / G, g = ng % G;
    uint chunk = uint(dkp.p.chunk);
    uint e0 = group_x() * chunk, e1 = min(len, e0 + chunk);
    bool cfast = dkp.p.channels_fastest != 0;
    uint base = uint(dkp.p.x.offset) + n * uint(dkp.p.x.stride[0]);
    float cnt = 0.0, k = 0.0, s1 = 0.0, s2 = 0.0;
    for (uint e = e0 + gl_LocalInvocationID.x; e < e1; e += 256u) {
        uint c, s;
        if (cfast) { c = e % cg; s = e / cg; } else { s = e % hw; c = e / hw; }
        uint h = s / W, w = s % W;
        float x = X_ld(base + (g * cg + c) * uint(dkp.p.x.stride[1]) + h * uint(dkp.p.x.stride[2]) + w * uint(dkp.p.x.stride[3]));
        if (cnt == 0.0) k = x;
        float d = x - k;
        s1 += d;
        s2 += d * d;
        cnt += 1.0;
    }
    uint t = gl_LocalInvocationID.x;
    float mean, m2;
    gn_unshift(cnt, k, s1, s2, mean, m2);
    sh_n[8u * t] = cnt; sh_mean[8u * t] = mean; sh_m2[8u * t] = m2;
    gn_reduce_write(ng);
}

void stats_nchw() {
    uint C = uint(dkp.p.c), G = uint(dkp.p.groups), vw = uint(DK_VW);
    uint glen = (C / G) * uint(dkp.p.h) * uint(dkp.p.w) / vw;   // vectors per group
    uint ng = gl_WorkGroupID.y, chunk = uint(dkp.p.chunk);
    uint base = uint(dkp.p.x.offset) / vw + ng * glen;                 // groups are consecutive runs
    uint v0 = group_x() * chunk, v1 = min(glen, v0 + chunk);
    float cnt = 0.0, k = 0.0, s1 = 0.0, s2 = 0.0;
    uint v = v0 + gl_LocalInvocationID.x;
    if (v < v1) k = dk_v16_get(xv.v[base + v], 0);
    for (; v < v1; v += 256u) {
        uvec4 u = xv.v[base + v];
        for (int j = 0; j < DK_VW; j++) {
            float d = dk_v16_get(u, j) - k;
            s1 += d;
            s2 += d * d;
        }
        cnt += float(DK_VW);
    }
    uint t = gl_LocalInvocationID.x;
    float mean, m2;
    gn_unshift(cnt, k, s1, s2, mean, m2);
    sh_n[8u * t] = cnt; sh_mean[8u * t] = mean; sh_m2[8u * t] = m2;
    gn_reduce_write(ng);
}

void stats_nhwc() {
    uint C = uint(dkp.p.c), G = uint(dkp.p.groups), vw = uint(DK_VW);
    uint hw = uint(dkp.p.h) * uint(dkp.p.w), cv = C / vw;          // vectors per pixel (<= 256)
    uint rows = 256u / cv, t = gl_LocalInvocationID.x, col = t % cv, row = t / cv;
    uint n = gl_WorkGroupID.y, chunk = uint(dkp.p.chunk);
    uint p0 = group_x() * chunk, p1 = min(hw, p0 + chunk);
    uint base = uint(dkp.p.x.offset) / vw + n * hw * cv + col;
    float k[8], s1[8], s2[8], cnt = 0.0;
    for (int j = 0; j < 8; j++) { k[j] = 0.0; s1[j] = 0.0; s2[j] = 0.0; }
    uint p = p0 + row;
    if (row < rows && p < p1) {
        uvec4 u = xv.v[base + p * cv];
        for (int j = 0; j < DK_VW; j++) k[j] = dk_v16_get(u, j);
    }
    if (row < rows) {
        // four pixels per step: their loads in flight together
        for (; p + 3u * rows < p1; p += 4u * rows) {
            uvec4 u[4];
            [[unroll]] for (uint r = 0u; r < 4u; r++) u[r] = xv.v[base + (p + r * rows) * cv];
            [[unroll]] for (int j = 0; j < DK_VW; j++) {
                [[unroll]] for (uint r = 0u; r < 4u; r++) {
                    float d = dk_v16_get(u[r], j) - k[j];
                    s1[j] += d;
                    s2[j] += d * d;
                }
            }
            cnt += 4.0;
        }
        for (; p < p1; p += rows) {
            uvec4 u = xv.v[base + p * cv];
            [[unroll]] for (int j = 0; j < DK_VW; j++) {
                float d = dk_v16_get(u, j) - k[j];
                s1[j] += d;
                s2[j] += d * d;
            }
            cnt += 1.0;
        }
    }
    // Entry (invocation t, channel j of its vector) at slot j*256 + t: conflict-free stores.
    for (int j = 0; j < DK_VW; j++) {
        float mean, m2;
        gn_unshift(cnt, k[j], s1[j], s2[j], mean, m2);
        uint s = uint(j) * 256u + t;
        sh_n[s] = cnt; sh_mean[s] = mean; sh_m2[s] = m2;
    }
    barrier();
    // A group's rows x cg entries are summed by L invocations as sums shifted by the
    // group's first entry's mean, sum n_b (m_b - K) and sum M2_b + n_b (m_b - K)^2
    // (additive, so the L partials add up; a long chain of Chan steps would round the
    // mean each step), then one invocation adds the L partials.  One invocation per
    // group made this merge most of the workgroup's time at 512 channels.
    uint cg = C / G, L = G >= 256u ? 1u : 256u / G, ne = rows * cg;
    for (uint gi = t / L; gi < G; gi += 256u / L) {
        uint c0 = gi * cg;
        float kg = sh_mean[(c0 % vw) * 256u + c0 / vw], na = 0.0, a1 = 0.0, a2 = 0.0;
        for (uint e = t % L; e < ne; e += L) {
            uint r = e % rows, c = c0 + e / rows, s = (c % vw) * 256u + r * cv + c / vw;
            float d = sh_mean[s] - kg;
            na += sh_n[s];
            a1 += sh_n[s] * d;
            a2 += sh_m2[s] + sh_n[s] * d * d;
        }
        if (L == 1u) {
            float mean, m2;
            gn_unshift(na, kg, a1, a2, mean, m2);
            gn_write(n * G + gi, na, mean, m2);
        } else {
            part_n[t] = na; part_s1[t] = a1; part_s2[t] = a2;
        }
    }
    if (L == 1u) return;
    barrier();
    if (t < G) {
        uint c0 = t * cg;
        float kg = sh_mean[(c0 % vw) * 256u + c0 / vw], na = 0.0, a1 = 0.0, a2 = 0.0, mean, m2;
        for (uint l = 0u; l < L; l++) {
            na += part_n[t * L + l];
            a1 += part_s1[t * L + l];
            a2 += part_s2[t * L + l];
        }
        gn_unshift(na, kg, a1, a2, mean, m2);
        gn_write(n * G + t, na, mean, m2);
    }
}

void main() {
    if (MODE == DK_VK_GN_MODE_NCHW) stats_nchw();
    else if (MODE == DK_VK_GN_MODE_NHWC) stats_nhwc();
    else stats_any();
}
