#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// GroupNorm pass 3: y = act((x - mean) * (rstd * gamma[c]) + beta[c]) with the
// per-(n, c) coefficients of pass 2.  MODE 0: one element per step, any strides;
// MODE 1 / 2 (x and y dense in the same layout): 16-byte vectors; MODE 2 runs
// on a grid of (pixel chunk, n) with chunks of its own (apply_chunks).
// In place is allowed: each element is read and written by the same invocation.
// MODE 1 and 2 walk the tensor backwards: pass 1 read it forwards, so its last
// tens of MB are still in the L2 when this pass starts.
#define DK_PARAMS dk_vk_group_norm_params
#include "dk_common.glsl"

layout(local_size_x = 256) in;

DK_IO(0, X, DT)
DK_IO(4, Y, DT)
layout(std430, set = 0, binding = 0) readonly buffer XVec { uvec4 v[]; } xv;
layout(std430, set = 0, binding = 4) buffer YVec { uvec4 v[]; } yv;
layout(std430, set = 0, binding = 5) readonly buffer GnCoef { vec4 v[]; } coef;

float gn_apply(float x, vec4 k) { return dk_act((x - k.x) * k.y + k.z); }

// 16-bit dtypes a pair of elements (one word) at a time: dk_v16_get/set's
// per-element read-modify-write made this pass ALU-bound.  f16 goes through
// the hardware conversions
// (unpack/packHalf2x16): the result may differ from round-to-nearest-even by
// one f16 ulp on drivers that pack with round-toward-zero; normalized outputs
// never overflow.  bf16 unpacks by shifts and rounds exactly (dk_f2h).
uint gn_pair(uint w, vec4 ka, vec4 kb) {
    if (DT == 3) {
        float a = gn_apply(uintBitsToFloat(w << 16), ka), b = gn_apply(uintBitsToFloat(w & 0xffff0000u), kb);
        return dk_f2h(a, 3) | (dk_f2h(b, 3) << 16);
    }
    vec2 h = unpackHalf2x16(w);
    return packHalf2x16(vec2(gn_apply(h.x, ka), gn_apply(h.y, kb)));
}

void main() {
    uint C = uint(dkp.p.c), H = uint(dkp.p.h), W = uint(dkp.p.w);
    uint total = uint(dkp.p.total), cbase = uint(dkp.p.coef_offset) / 4u, vw = uint(DK_VW);
    uint step = gl_NumWorkGroups.x * 256u;
    uint xb = uint(dkp.p.x.offset) / vw, yb = uint(dkp.p.y.offset) / vw;
    if (MODE == DK_VK_GN_MODE_NCHW) {   // grid-stride over vectors, one channel each: i = (n*C + c) * hwv + s
        uint hwv = H * W / vw;
        for (uint ir = group_x() * 256u + gl_LocalInvocationID.x; ir < total; ir += step) {
            uint i = total - 1u - ir;
            uvec4 u = xv.v[xb + i];
            vec4 k = coef.v[cbase + i / hwv];
            if (DT != 1)
                for (int j = 0; j < 4; j++) u[j] = gn_pair(u[j], k, k);
            else
                for (int j = 0; j < DK_VW; j++) dk_v16_set(u, j, gn_apply(dk_v16_get(u, j), k));
            yv.v[yb + i] = u;
        }
        return;
    }
    if (MODE == DK_VK_GN_MODE_NHWC) {   // workgroup (pixel chunk, n), chunks of its own (dk__gn_split): an
                       // invocation keeps one channel vector and its coefficients over the chunk's pixels
        uint cv = C / vw, rows = 256u / cv, t = gl_LocalInvocationID.x, col = t % cv, row = t / cv;
        uint n = uint(dkp.p.n) - 1u - gl_WorkGroupID.y, hw = H * W, chunk = uint(dkp.p.apply_chunk);
        uint p0 = (uint(dkp.p.apply_chunks) - 1u - group_x()) * chunk, p1 = min(hw, p0 + chunk);
        if (row >= rows) return;
        vec4 k[8];
        for (int j = 0; j < DK_VW; j++) k[j] = coef.v[cbase + n * C + col * vw + uint(j)];
        uint xo = xb + n * hw * cv + col, yo = yb + n * hw * cv + col, q = p0 + row;
        // four pixels per step: their loads in flight together
        for (; q + 3u * rows < p1; q += 4u * rows) {
            uvec4 u[4];
            [[unroll]] for (uint r = 0u; r < 4u; r++) u[r] = xv.v[xo + (q + r * rows) * cv];
            [[unroll]] for (uint r = 0u; r < 4u; r++) {
                if (DT != 1) {
                    [[unroll]] for (int j = 0; j < 4; j++) u[r][j] = gn_pair(u[r][j], k[2 * j], k[2 * j + 1]);
                } else {
                    [[unroll]] for (int j = 0; j < DK_VW; j++) dk_v16_set(u[r], j, gn_apply(dk_v16_get(u[r], j), k[j]));
                }
                yv.v[yo + (q + r * rows) * cv] = u[r];
            }
        }
        for (; q < p1; q += rows) {
            uvec4 u = xv.v[xo + q * cv];
            if (DT != 1) {
                [[unroll]] for (int j = 0; j < 4; j++) u[j] = gn_pair(u[j], k[2 * j], k[2 * j + 1]);
            } else {
                [[unroll]] for (int j = 0; j < DK_VW; j++) dk_v16_set(u, j, gn_apply(dk_v16_get(u, j), k[j]));
            }
            yv.v[yo + q * cv] = u;
        }
        return;
    }
    bool cfast = dkp.p.channels_fastest != 0;
    for (uint i = group_x() * 256u + gl_LocalInvocationID.x; i < total; i += step) {
        uint r = i, c, h, w;
        if (cfast) { c = r % C; r /= C; w = r % W; r /= W; h = r % H; r /= H; }
        else { w = r % W; r /= W; h = r % H; r /= H; c = r % C; r /= C; }
        uint n = r;
        float x = X_ld(uint(dkp.p.x.offset) + n * uint(dkp.p.x.stride[0]) + c * uint(dkp.p.x.stride[1]) + h * uint(dkp.p.x.stride[2]) +
                       w * uint(dkp.p.x.stride[3]));
        Y_st(uint(dkp.p.y.offset) + n * uint(dkp.p.y.stride[0]) + c * uint(dkp.p.y.stride[1]) + h * uint(dkp.p.y.stride[2]) +
                 w * uint(dkp.p.y.stride[3]), gn_apply(x, coef.v[cbase + n * C + c]));
    }
}
