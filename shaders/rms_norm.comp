#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// RMS norm over the channels of each position (dk_rms_norm; the plan and the
// kernel shapes: src/norm_plan.c, dk__rms_plan).  `lanes` invocations per
// position, 256 / lanes positions per workgroup; each keeps its channels (up
// to DK_VK_RMS_KEEP_* units) in registers between the sum of squares and the
// scaling, and the lanes add their partial sums through shared memory.
//   MODE ROWS / ROWS_VEC (channel-contiguous): a position's lanes are
//   adjacent invocations; ROWS_VEC moves 16-byte vectors;
//   MODE COLUMNS (channel-strided, NCHW / NCDHW): adjacent invocations take
//   adjacent positions, so a subgroup's loads of one channel are coalesced;
//   MODE COLUMNS_TILE (the same where 16-byte vectors hold adjacent
//   positions): a workgroup stages `tile` positions x C channels in shared
//   memory, so that x is read once in vectors of whole channel runs (one
//   scalar per invocation and channel left the copy bandwidth far behind).
// In place is allowed: every element is read and written by one invocation,
// after all of its reads (the tile: by one workgroup, which reads its whole
// tile before it writes).  Sums of squares in fp32.
#define DK_PARAMS dk_vk_rms_norm_params
#include "dk_common.glsl"

layout(local_size_x = 256) in;

DK_IO(0, X, DT)
DK_IO(1, Gamma, DT2)
DK_IO(2, Beta, DT2)
DK_IO(4, Y, DT)
layout(std430, set = 0, binding = 0) readonly buffer XVec { uvec4 v[]; } xv;
layout(std430, set = 0, binding = 4) buffer YVec { uvec4 v[]; } yv;
// DK_VK_FLAG_RMS_AFF_VEC: gamma and beta in x's dtype, unit stride, whole vectors
layout(std430, set = 0, binding = 1) readonly buffer GammaVec { uvec4 v[]; } gv;
layout(std430, set = 0, binding = 2) readonly buffer BetaVec { uvec4 v[]; } bv;

shared float sh_sum[256];
// COLUMNS_TILE: the vectors (c, v) at c * V + v (V = tile / DK_VW), so element
// (c, q) sits at c * tile + q; the first elements of each vector of positions
// in x and y (-1: past the last position)
shared uvec4 sh_tile[DK_VK_RMS_TILE_BYTES / 16];
shared int sh_offs[2 * 64]; // tile / DK_VW <= 256 / 4 vectors

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
    if (dkp.p.form == 1) { // F.normalize * sqrt(C): the norm clamped below at eps (NaN stays NaN)
        float n = sqrt(sum);
        return dkp.p.sqrt_c / (n < dkp.p.eps ? dkp.p.eps : n);
    }
    return inversesqrt(sum / float(dkp.p.channels) + dkp.p.eps);
}

// x * s through gamma g and beta b (each where present) and the activation.
float rms_apply(float x, float s, float g, float b) {
    float v = x * s;
    if ((FLAGS & DK_VK_FLAG_GAMMA) != 0) v *= g;
    if ((FLAGS & DK_VK_FLAG_BETA) != 0) v += b;
    return dk_act(v);
}

float rms_gamma(uint c) {
    return (FLAGS & DK_VK_FLAG_GAMMA) != 0 ? Gamma_ld(uint(dkp.p.gamma.offset) + c * uint(dkp.p.gamma.stride)) : 1.0;
}

float rms_beta(uint c) {
    return (FLAGS & DK_VK_FLAG_BETA) != 0 ? Beta_ld(uint(dkp.p.beta.offset) + c * uint(dkp.p.beta.stride)) : 0.0;
}

float rms_out(float x, float s, uint c) {
    return rms_apply(x, s, rms_gamma(c), rms_beta(c));
}

float rms_sq16(uvec4 u) {
    float s = 0.0;
    [[unroll]] for (int j = 0; j < DK_VW; j++) {
        float v = dk_v16_get(u, j);
        s += v * v;
    }
    return s;
}

// Element e of a 16-byte vector as rms_out makes it: a ROWS_VEC vector holds
// channels c0 + e of one position (scale s; gamma and beta as the vectors gq
// and bq where DK_VK_FLAG_RMS_AFF_VEC: a 2-byte load of each per element was
// 10% of the time), a COLUMNS_TILE vector channel c0 of DK_VW positions, whose
// scales start at sh_sum[s0].
float rms_out_at(float x, uint e, float s, uint s0, uint c0, uvec4 gq, uvec4 bq) {
    if (MODE == DK_VK_RMS_MODE_COLUMNS_TILE) return rms_out(x, sh_sum[s0 + e], c0);
    if ((FLAGS & DK_VK_FLAG_RMS_AFF_VEC) != 0) return rms_apply(x, s, dk_v16_get(gq, int(e)), dk_v16_get(bq, int(e)));
    return rms_out(x, s, c0 + e);
}

// A vector through rms_out_at.  16-bit dtypes a word (two elements) at a time:
// dk_v16_set's per-element read-modify-write costs more ALU than the element's
// memory traffic (as in gn_norm.comp).  f16 through unpack/packHalf2x16 (one
// f16 ulp from round-to-nearest-even on drivers that pack toward zero), bf16
// by shifts and dk_f2h (exact).
uvec4 rms_out16(uvec4 u, float s, uint s0, uint c0) {
    uvec4 gq = uvec4(0u), bq = uvec4(0u);
    if (MODE == DK_VK_RMS_MODE_ROWS_VEC && (FLAGS & DK_VK_FLAG_RMS_AFF_VEC) != 0) {
        uint vw = uint(DK_VW);
        if ((FLAGS & DK_VK_FLAG_GAMMA) != 0) gq = gv.v[(uint(dkp.p.gamma.offset) + c0) / vw];
        if ((FLAGS & DK_VK_FLAG_BETA) != 0) bq = bv.v[(uint(dkp.p.beta.offset) + c0) / vw];
    }
    if (DT == 1) {
        [[unroll]] for (int j = 0; j < 4; j++) u[j] = floatBitsToUint(rms_out_at(uintBitsToFloat(u[j]), uint(j), s, s0, c0, gq, bq));
        return u;
    }
    [[unroll]] for (int j = 0; j < 4; j++) {
        uint e = 2u * uint(j), w = u[j];
        if (DT == 3) {
            float a = rms_out_at(uintBitsToFloat(w << 16), e, s, s0, c0, gq, bq);
            float b = rms_out_at(uintBitsToFloat(w & 0xffff0000u), e + 1u, s, s0, c0, gq, bq);
            u[j] = dk_f2h(a, 3) | (dk_f2h(b, 3) << 16);
        } else {
            vec2 h = unpackHalf2x16(w);
            u[j] = packHalf2x16(vec2(rms_out_at(h.x, e, s, s0, c0, gq, bq), rms_out_at(h.y, e + 1u, s, s0, c0, gq, bq)));
        }
    }
    return u;
}

// Element (c, q) of the staged tile (T positions per channel).
float rms_tile_get(uint c, uint q, uint T) {
    uint e = c * T + q;
    uvec4 u = sh_tile[e / uint(DK_VW)];
    return dk_v16_get(u, int(e % uint(DK_VW)));
}

// COLUMNS_TILE: T = tile positions (a power of two, whole vectors: V = T / VW
// per channel), G = 256 / T invocations per position.  Between barriers: the
// offsets of the tile's vectors; the vectors in (adjacent invocations,
// adjacent vectors of a channel run); each position's partial sums of squares
// over every G-th channel; the totals' scales (sh_sum[q], read back only by
// the invocation that wrote it); the vectors out, scaled.
void rms_columns_tile() {
    uint VW = uint(DK_VW), T = uint(dkp.p.tile), V = T / VW, G = 256u / T;
    uint C = uint(dkp.p.channels), P = uint(dkp.p.positions), t = gl_LocalInvocationID.x, units = C * V;
    uint xcs = uint(dkp.p.x_cs), ycs = uint(dkp.p.y_cs), pos0 = group_x() * T;
    if (t < V) {
        uint pos = pos0 + t * VW, xo = 0u, yo = 0u;
        bool valid = pos < P;
        if (valid) rms_offsets(pos, xo, yo);
        sh_offs[2u * t] = valid ? int(xo) : -1;
        sh_offs[2u * t + 1u] = valid ? int(yo) : -1;
    }
    barrier();
    for (uint u = t; u < units; u += 256u) {
        uint c = u / V, v = u - c * V;
        int xo = sh_offs[2u * v];
        sh_tile[u] = xo >= 0 ? xv.v[(uint(xo) + c * xcs) / VW] : uvec4(0u);
    }
    barrier();
    {
        uint q = t % T, g = t / T;
        float sum = 0.0;
        for (uint c = g; c < C; c += G) {
            float v = rms_tile_get(c, q, T);
            sum += v * v;
        }
        sh_sum[t] = sum;
    }
    barrier();
    if (t < T) {
        float tot = 0.0;
        for (uint g = 0u; g < G; g++) tot += sh_sum[g * T + t];
        sh_sum[t] = rms_scale(tot);
    }
    barrier();
    for (uint u = t; u < units; u += 256u) {
        uint c = u / V, v = u - c * V;
        int yo = sh_offs[2u * v + 1u];
        if (yo >= 0) yv.v[(uint(yo) + c * ycs) / VW] = rms_out16(sh_tile[u], 0.0, v * VW, c);
    }
}

void main() {
    if (MODE == DK_VK_RMS_MODE_COLUMNS_TILE) {
        rms_columns_tile();
        return;
    }
    uint C = uint(dkp.p.channels), P = uint(dkp.p.positions), t = gl_LocalInvocationID.x;
    uint xcs = uint(dkp.p.x_cs), ycs = uint(dkp.p.y_cs);
    // ROWS: the lanes of a position are adjacent invocations; COLUMNS:
    // adjacent invocations take adjacent positions, lanes 256 / L apart
    uint L = uint(dkp.p.lanes), PB = 256u / L;
    uint lane = MODE == DK_VK_RMS_MODE_COLUMNS ? t / PB : t % L;
    uint slot = MODE == DK_VK_RMS_MODE_COLUMNS ? t % PB : t / L;
    uint p = group_x() * PB + slot, xo = 0u, yo = 0u;
    bool valid = p < P;
    if (valid) rms_offsets(p, xo, yo);
    float sum = 0.0;
    if (MODE == DK_VK_RMS_MODE_ROWS_VEC) {
        uint vw = uint(DK_VW), units = C / vw, xv0 = xo / vw, yv0 = yo / vw;
        uvec4 keep[DK_VK_RMS_KEEP_VECTORS];
        [[unroll]] for (int j = 0; j < DK_VK_RMS_KEEP_VECTORS; j++) {
            uint u = lane + uint(j) * L;
            keep[j] = uvec4(0u);
            if (valid && u < units) {
                keep[j] = xv.v[xv0 + u];
                sum += rms_sq16(keep[j]);
            }
        }
        for (uint u = lane + DK_VK_RMS_KEEP_VECTORS * L; valid && u < units; u += L) sum += rms_sq16(xv.v[xv0 + u]);
        sh_sum[slot * L + lane] = sum;
        barrier();
        float tot = 0.0;
        for (uint i = 0u; i < L; i++) tot += sh_sum[slot * L + i];
        float s = rms_scale(tot);
        [[unroll]] for (int j = 0; j < DK_VK_RMS_KEEP_VECTORS; j++) {
            uint u = lane + uint(j) * L;
            if (valid && u < C / vw) yv.v[yv0 + u] = rms_out16(keep[j], s, 0u, u * vw);
        }
        for (uint u = lane + DK_VK_RMS_KEEP_VECTORS * L; valid && u < units; u += L)
            yv.v[yv0 + u] = rms_out16(xv.v[xv0 + u], s, 0u, u * vw);
        return;
    }
    float keep[DK_VK_RMS_KEEP_SCALARS];
    [[unroll]] for (int j = 0; j < DK_VK_RMS_KEEP_SCALARS; j++) {
        uint c = lane + uint(j) * L;
        keep[j] = 0.0;
        if (valid && c < C) {
            keep[j] = X_ld(xo + c * xcs);
            sum += keep[j] * keep[j];
        }
    }
    for (uint c = lane + DK_VK_RMS_KEEP_SCALARS * L; valid && c < C; c += L) {
        float v = X_ld(xo + c * xcs);
        sum += v * v;
    }
    sh_sum[slot * L + lane] = sum;
    barrier();
    float tot = 0.0;
    for (uint i = 0u; i < L; i++) tot += sh_sum[slot * L + i];
    float s = rms_scale(tot);
    [[unroll]] for (int j = 0; j < DK_VK_RMS_KEEP_SCALARS; j++) {
        uint c = lane + uint(j) * L;
        if (valid && c < C) Y_st(yo + c * ycs, rms_out(keep[j], s, c));
    }
    for (uint c = lane + DK_VK_RMS_KEEP_SCALARS * L; valid && c < C; c += L) Y_st(yo + c * ycs, rms_out(X_ld(xo + c * xcs), s, c));
}
