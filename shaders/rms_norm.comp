#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// RMS norm over the channels of each position (dk_rms_norm; the plan and the
// kernel shapes: src/norm_plan.c, dk__rms_plan):
//   MODE ROWS / ROWS_VEC (channel-contiguous): `lanes` invocations per
//   position, 256 / lanes positions per workgroup; ROWS_VEC reads and writes
//   16-byte vectors and keeps up to RMS_KEEP of them per invocation between
//   the sum and the scaling (x read once when the row fits);
//   MODE COLUMNS (channel-strided, NCHW / NCDHW): an invocation per position,
//   looping over C, so neighbouring invocations read neighbouring addresses.
// In place is allowed: every element is read and written by one invocation,
// and it reads all of its elements before the barrier (ROWS) or before its
// first store (COLUMNS).  Sums of squares in fp32.
#define DK_PARAMS dk_vk_rms_norm_params
#include "dk_common.glsl"

layout(local_size_x = 256) in;

#define RMS_KEEP 4

DK_IO(0, X, DT)
DK_IO(1, Gamma, DT2)
DK_IO(2, Beta, DT2)
DK_IO(4, Y, DT)
layout(std430, set = 0, binding = 0) readonly buffer XVec { uvec4 v[]; } xv;
layout(std430, set = 0, binding = 4) buffer YVec { uvec4 v[]; } yv;

shared float sh_sum[256];

// Element offsets of position p in x and y.
void rms_offsets(uint p, out uint xo, out uint yo) {
    xo = uint(dkp.p.x_offset);
    yo = uint(dkp.p.y_offset);
    [[unroll]] for (int k = 3; k >= 0; k--) {
        uint e = uint(dkp.p.pshape[k]), i = p % e;
        p /= e;
        xo += i * uint(dkp.p.x_ps[k]);
        yo += i * uint(dkp.p.y_ps[k]);
    }
}

float rms_scale(float sum) {
    if (dkp.p.form == 1) return dkp.p.sqrt_c / max(sqrt(sum), dkp.p.eps); // F.normalize * sqrt(C)
    return inversesqrt(sum / float(dkp.p.channels) + dkp.p.eps);
}

float rms_out(float x, float s, uint c) {
    float v = x * s;
    if ((FLAGS & DK_VK_FLAG_GAMMA) != 0) v *= Gamma_ld(uint(dkp.p.gamma.offset) + c * uint(dkp.p.gamma.stride));
    if ((FLAGS & DK_VK_FLAG_BETA) != 0) v += Beta_ld(uint(dkp.p.beta.offset) + c * uint(dkp.p.beta.stride));
    return dk_act(v);
}

float rms_sq16(uvec4 u) {
    float s = 0.0;
    [[unroll]] for (int j = 0; j < DK_VW; j++) {
        float v = dk_v16_get(u, j);
        s += v * v;
    }
    return s;
}

uvec4 rms_out16(uvec4 u, float s, uint c0) {
    [[unroll]] for (int j = 0; j < DK_VW; j++) dk_v16_set(u, j, rms_out(dk_v16_get(u, j), s, c0 + uint(j)));
    return u;
}

void main() {
    uint C = uint(dkp.p.channels), P = uint(dkp.p.positions), t = gl_LocalInvocationID.x;
    uint xcs = uint(dkp.p.x_cs), ycs = uint(dkp.p.y_cs);
    if (MODE == DK_VK_RMS_MODE_COLUMNS) {
        uint p = group_x() * 256u + t, xo, yo;
        if (p >= P) return;
        rms_offsets(p, xo, yo);
        float sum = 0.0;
        for (uint c = 0u; c < C; c++) {
            float v = X_ld(xo + c * xcs);
            sum += v * v;
        }
        float s = rms_scale(sum);
        for (uint c = 0u; c < C; c++) Y_st(yo + c * ycs, rms_out(X_ld(xo + c * xcs), s, c));
        return;
    }
    uint L = uint(dkp.p.lanes), lane = t % L, slot = t / L;
    uint p = group_x() * (256u / L) + slot, xo = 0u, yo = 0u;
    bool valid = p < P;
    if (valid) rms_offsets(p, xo, yo);
    float sum = 0.0;
    if (MODE == DK_VK_RMS_MODE_ROWS_VEC) {
        uint vw = uint(DK_VW), units = C / vw, xv0 = xo / vw, yv0 = yo / vw;
        uvec4 keep[RMS_KEEP];
        [[unroll]] for (int j = 0; j < RMS_KEEP; j++) {
            uint u = lane + uint(j) * L;
            keep[j] = uvec4(0u);
            if (valid && u < units) {
                keep[j] = xv.v[xv0 + u];
                sum += rms_sq16(keep[j]);
            }
        }
        for (uint u = lane + RMS_KEEP * L; valid && u < units; u += L) sum += rms_sq16(xv.v[xv0 + u]);
        sh_sum[t] = sum;
        barrier();
        float tot = 0.0;
        for (uint i = 0u; i < L; i++) tot += sh_sum[slot * L + i];
        float s = rms_scale(tot);
        [[unroll]] for (int j = 0; j < RMS_KEEP; j++) {
            uint u = lane + uint(j) * L;
            if (valid && u < units) yv.v[yv0 + u] = rms_out16(keep[j], s, u * vw);
        }
        for (uint u = lane + RMS_KEEP * L; valid && u < units; u += L) yv.v[yv0 + u] = rms_out16(xv.v[xv0 + u], s, u * vw);
        return;
    }
    for (uint c = lane; valid && c < C; c += L) {
        float v = X_ld(xo + c * xcs);
        sum += v * v;
    }
    sh_sum[t] = sum;
    barrier();
    float tot = 0.0;
    for (uint i = 0u; i < L; i++) tot += sh_sum[slot * L + i];
    float s = rms_scale(tot);
    for (uint c = lane; valid && c < C; c += L) Y_st(yo + c * ycs, rms_out(X_ld(xo + c * xcs), s, c));
}
