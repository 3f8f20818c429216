#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// dk_activation / dk_convert where a's unit-stride dim (walk position KPOS) is
// not y's (a layout change, e.g. NCHW <-> NHWC): tiles through shared memory so
// that the reads of a (along KPOS) and the writes of y (along walk dim 3) are
// both coalesced (walking y's order alone reads a with a stride of C).  Shape
// and strides come permuted into y's
// memory order as for eltwise.comp (same parameter slots).  Workgroups stride
// over the tiles.  A module of its own: its shared tile would otherwise be
// allocated in every elementwise pipeline.
// DK_VK_TR_MODE_VEC16: 16-bit copies in one dtype in 16-byte vectors (vec_main); DK_VK_TR_MODE_VEC_CVT:
// copies between any dtypes in 16-byte vectors through floats (cvt_main); both
// chosen by vkop_transpose16.  Else y = oscale * act(alpha * a) through a 32 x 32 tile
// of floats (element_main).  MODE bits 2-3 (DK_VK_TR_MODE_KPOS_SHIFT): KPOS.
#define DK_PARAMS dk_vk_eltwise_params
#include "dk_common.glsl"

#define VEC ((MODE & DK_VK_TR_MODE_VEC16) != 0)
#define CVT ((MODE & DK_VK_TR_MODE_VEC_CVT) != 0)
#define KPOS ((MODE >> DK_VK_TR_MODE_KPOS_SHIFT) & DK_VK_TR_MODE_KPOS_MASK)

layout(local_size_x = 256) in;

DK_IO(0, A, DT)
DK_IO(4, Y, DT2)
layout(std430, set = 0, binding = 0) readonly buffer AVec { uvec4 v[]; } av;
layout(std430, set = 0, binding = 4) buffer YVec { uvec4 v[]; } yv;

// 64 x 64 floats (cvt_main), 64 x 64 16-bit values (vec_main) or 32 x 33
// floats (element_main).
const uint TR_VECS = CVT ? 1024u : VEC ? 512u : 264u;
shared uvec4 tr_tile[TR_VECS];

void element_main() {
    int o0 = KPOS == 0 ? 1 : 0, o1 = KPOS == 2 ? 1 : 2;
    uint tx = gl_LocalInvocationID.x % 32u, ty = gl_LocalInvocationID.x / 32u;
    uint s3 = uint(dkp.p.shape[3]), sk = uint(dkp.p.shape[KPOS]), so1 = uint(dkp.p.shape[o1]);
    uint t3 = (s3 + 31u) / 32u, tk = (sk + 31u) / 32u, tiles = t3 * tk * uint(dkp.p.shape[o0]) * so1;
    uint ak = uint(dkp.p.a.stride[KPOS]), a3 = uint(dkp.p.a.stride[3]), yk = uint(dkp.p.y.stride[KPOS]), y3 = uint(dkp.p.y.stride[3]);
    float alpha = dkp.p.alpha, oscale = dkp.p.out_scale;
    for (uint t = group_x(); t < tiles; t += gl_NumWorkGroups.x) {
        uint r = t;
        uint b3 = (r % t3) * 32u;
        r /= t3;
        uint bk = (r % tk) * 32u;
        r /= tk;
        uint i1 = r % so1, i0 = r / so1;
        uint ba = uint(dkp.p.a.offset) + i0 * uint(dkp.p.a.stride[o0]) + i1 * uint(dkp.p.a.stride[o1]);
        uint by = uint(dkp.p.y.offset) + i0 * uint(dkp.p.y.stride[o0]) + i1 * uint(dkp.p.y.stride[o1]);
        for (uint rr = ty; rr < 32u; rr += 8u) {
            uint i = rr * 33u + tx;
            if (b3 + rr < s3 && bk + tx < sk)
                tr_tile[i >> 2][i & 3u] = floatBitsToUint(A_ld(ba + (bk + tx) * ak + (b3 + rr) * a3));
        }
        barrier();
        for (uint rr = ty; rr < 32u; rr += 8u) {
            uint i = tx * 33u + rr;
            float v = uintBitsToFloat(tr_tile[i >> 2][i & 3u]);
            if (alpha != 1.0) v *= alpha;
            v = dk_act(v);
            if (oscale != 1.0) v *= oscale;
            if (b3 + tx < s3 && bk + rr < sk) Y_st(by + (bk + rr) * yk + (b3 + tx) * y3, v);
        }
        barrier();
    }
}

// A 16-bit copy in one dtype (no scale, no activation) whose two unit-stride
// dims split into 16-byte vectors: 64 x 64 tiles, 16-byte loads along KPOS and
// 16-byte stores along walk dim 3, raw bits; what the NCHW <-> NHWC copies of
// the conv operands take.  Tile row r (walk dim 3) holds 8 chunks of 8 KPOS
// values, chunk c at slot c ^ (r / 8): the row stores fill whole rows, and a
// subgroup's column reads (rows 8j + e, j = 0..7, four neighbouring k) meet 16
// distinct banks, two invocations per word.
void vec_main() {
    int o0 = KPOS == 0 ? 1 : 0, o1 = KPOS == 2 ? 1 : 2;
    uint t = gl_LocalInvocationID.x;
    uint s3 = uint(dkp.p.shape[3]), sk = uint(dkp.p.shape[KPOS]), so1 = uint(dkp.p.shape[o1]);
    uint t3 = (s3 + 63u) / 64u, tk = (sk + 63u) / 64u, tiles = t3 * tk * uint(dkp.p.shape[o0]) * so1;
    uint a3 = uint(dkp.p.a.stride[3]), yk = uint(dkp.p.y.stride[KPOS]);
    for (uint ti = group_x(); ti < tiles; ti += gl_NumWorkGroups.x) {
        uint r = ti;
        uint b3 = (r % t3) * 64u;
        r /= t3;
        uint bk = (r % tk) * 64u;
        r /= tk;
        uint i1 = r % so1, i0 = r / so1;
        uint ba = uint(dkp.p.a.offset) + i0 * uint(dkp.p.a.stride[o0]) + i1 * uint(dkp.p.a.stride[o1]);
        uint by = uint(dkp.p.y.offset) + i0 * uint(dkp.p.y.stride[o0]) + i1 * uint(dkp.p.y.stride[o1]);
        [[unroll]] for (uint q = 0u; q < 2u; q++) {
            uint row = t / 8u + 32u * q, c = t % 8u;
            if (b3 + row < s3 && bk + 8u * c < sk)
                tr_tile[row * 8u + (c ^ (row / 8u))] = av.v[(ba + (b3 + row) * a3 + bk + 8u * c) / 8u];
        }
        barrier();
        [[unroll]] for (uint q = 0u; q < 2u; q++) {
            uint kk = t / 8u + 32u * q, j = t % 8u, slot = (kk / 8u) ^ j, wd = (kk % 8u) / 2u, sh = 16u * (kk & 1u);
            if (bk + kk < sk && b3 + 8u * j < s3) {
                uvec4 o;
                [[unroll]] for (uint e = 0u; e < 4u; e++) {
                    uint lo = (tr_tile[(8u * j + 2u * e) * 8u + slot][wd] >> sh) & 0xffffu;
                    uint hi = (tr_tile[(8u * j + 2u * e + 1u) * 8u + slot][wd] >> sh) & 0xffffu;
                    o[e] = lo | (hi << 16);
                }
                yv.v[(by + (bk + kk) * yk + b3 + 8u * j) / 8u] = o;
            }
        }
        barrier();
    }
}

// Between any dtypes (f32 / f16 / bf16, DT to DT2), a's unit dim (KPOS) and
// y's (walk dim 3) in whole 16-byte vectors of their dtypes: 64 x 64 tiles of
// floats; tile row r (walk dim 3) holds 16 chunks of 4 k-values, chunk c at
// slot c ^ sw(r), sw = (r / 8) % 8 for 16-bit y (an output vector is 8 rows
// of one k) and (r / 4) % 8 for f32 y (4 rows): a subgroup's column reads
// (8 row groups, four neighbouring k) then meet 32 distinct banks.
float cvt_get(uint r, uint kk, uint sw) { return uintBitsToFloat(tr_tile[r * 16u + ((kk / 4u) ^ sw)][kk % 4u]); }
void cvt_main() {
    int o0 = KPOS == 0 ? 1 : 0, o1 = KPOS == 2 ? 1 : 2;
    uint t = gl_LocalInvocationID.x;
    uint s3 = uint(dkp.p.shape[3]), sk = uint(dkp.p.shape[KPOS]), so1 = uint(dkp.p.shape[o1]);
    uint t3 = (s3 + 63u) / 64u, tk = (sk + 63u) / 64u, tiles = t3 * tk * uint(dkp.p.shape[o0]) * so1;
    uint a3 = uint(dkp.p.a.stride[3]), yk = uint(dkp.p.y.stride[KPOS]);
    for (uint ti = group_x(); ti < tiles; ti += gl_NumWorkGroups.x) {
        uint r = ti;
        uint b3 = (r % t3) * 64u;
        r /= t3;
        uint bk = (r % tk) * 64u;
        r /= tk;
        uint i1 = r % so1, i0 = r / so1;
        uint ba = uint(dkp.p.a.offset) + i0 * uint(dkp.p.a.stride[o0]) + i1 * uint(dkp.p.a.stride[o1]);
        uint by = uint(dkp.p.y.offset) + i0 * uint(dkp.p.y.stride[o0]) + i1 * uint(dkp.p.y.stride[o1]);
        if (DT == 1) {
            [[unroll]] for (uint q = 0u; q < 4u; q++) {
                uint row = t / 16u + 16u * q, c = t % 16u, sw = DT2 == 1 ? (row / 4u) % 8u : (row / 8u) % 8u;
                if (b3 + row < s3 && bk + 4u * c < sk)
                    tr_tile[row * 16u + (c ^ sw)] = av.v[(ba + (b3 + row) * a3 + bk + 4u * c) / 4u];
            }
        } else {
            [[unroll]] for (uint q = 0u; q < 2u; q++) {
                uint row = t / 8u + 32u * q, c = t % 8u, sw = DT2 == 1 ? (row / 4u) % 8u : (row / 8u) % 8u;
                if (b3 + row < s3 && bk + 8u * c < sk) {
                    uvec4 u = av.v[(ba + (b3 + row) * a3 + bk + 8u * c) / 8u];
                    uvec4 lo, hi;
                    [[unroll]] for (uint j = 0u; j < 4u; j++) {
                        lo[j] = floatBitsToUint(dk_h2f((u[j / 2u] >> (16u * (j % 2u))) & 0xffffu, DT));
                        hi[j] = floatBitsToUint(dk_h2f((u[2u + j / 2u] >> (16u * (j % 2u))) & 0xffffu, DT));
                    }
                    tr_tile[row * 16u + ((2u * c) ^ sw)] = lo;
                    tr_tile[row * 16u + ((2u * c + 1u) ^ sw)] = hi;
                }
            }
        }
        barrier();
        if (DT2 == 1) {
            [[unroll]] for (uint q = 0u; q < 4u; q++) {
                uint kk = t / 8u + 32u * (q / 2u), j = t % 8u + 8u * (q % 2u);
                if (bk + kk < sk && b3 + 4u * j < s3) {
                    uvec4 o;
                    [[unroll]] for (uint e = 0u; e < 4u; e++) o[e] = floatBitsToUint(cvt_get(4u * j + e, kk, j % 8u));
                    yv.v[(by + (bk + kk) * yk + b3 + 4u * j) / 4u] = o;
                }
            }
        } else {
            [[unroll]] for (uint q = 0u; q < 2u; q++) {
                uint kk = t / 8u + 32u * q, j = t % 8u;
                if (bk + kk < sk && b3 + 8u * j < s3) {
                    uvec4 o;
                    [[unroll]] for (uint e = 0u; e < 4u; e++)
                        o[e] = dk_f2h(cvt_get(8u * j + 2u * e, kk, j), DT2) | (dk_f2h(cvt_get(8u * j + 2u * e + 1u, kk, j), DT2) << 16);
                    yv.v[(by + (bk + kk) * yk + b3 + 8u * j) / 8u] = o;
                }
            }
        }
        barrier();
    }
}

void main() {
    if (CVT) cvt_main();
    else if (VEC) vec_main();
    else element_main();
}
