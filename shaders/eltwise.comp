#version 450
#extension GL_GOOGLE_include_directive : require
// Elementwise over y's 4-D shape (any strides), grid-stride loop; shape and
// strides come permuted into y's memory order (dk__elt_order), the last fastest.
// Operation (MODE bits 0-1, DK_VK_EW_MODE_*):
// UNARY: y = oscale * act(alpha * a) (activation; dk_convert with DT2 = y's dtype)
// ADD: y = oscale * act(alpha * a + beta * b)
// RESIZE: nearest resize: y[n,c,h,w] = a[n,c,h*src_h/H,w*src_w/W]; with
//   vector_path set, integer factors in 16-byte vectors (up_vec_main)
// (UNARY with a layout change, a's unit-stride dim not y's: transpose.comp, so
// that these pipelines carry no shared memory: NVIDIA's driver allocates every
// declared shared array in every pipeline of a module, which cost add and
// convert occupancy.)
// MODE bits 2-3 / 4-5 (DK_VK_EW_MODE_HPOS_SHIFT / _WPOS_SHIFT): the walk positions of h and w (upsample),
// specialized so that the index math folds when the pipeline is built (as push
// constants the per-dimension selects made the NCHW upsample much slower)
#define DK_PARAMS dk_vk_eltwise_params
#include "dk_common.glsl"

#define OP (MODE & DK_VK_EW_MODE_OP_MASK)
#define HPOS ((MODE >> DK_VK_EW_MODE_HPOS_SHIFT) & DK_VK_EW_MODE_POS_MASK)
#define WPOS ((MODE >> DK_VK_EW_MODE_WPOS_SHIFT) & DK_VK_EW_MODE_POS_MASK)

layout(local_size_x = 256) in;

DK_IO(0, A, DT)
DK_IO(1, B, DT)
DK_IO(4, Y, DT2)
layout(std430, set = 0, binding = 0) readonly buffer AVec { uvec4 v[]; } av;
layout(std430, set = 0, binding = 1) readonly buffer BVec { uvec4 v[]; } bv;
layout(std430, set = 0, binding = 4) buffer YVec { uvec4 v[]; } yv;

// Eight elements of dtype dt from 16-byte vectors u0 (and u1 for f32).
void ew_get8(int dt, uvec4 u0, uvec4 u1, out float v[8]) {
    for (int j = 0; j < 8; j++) {
        if (dt == 1) v[j] = uintBitsToFloat(j < 4 ? u0[j] : u1[j - 4]);
        else v[j] = dk_h2f((u0[j >> 1] >> (16u * uint(j & 1))) & 0xffffu, dt);
    }
}

// The output scale (1 skips the multiply: exact either way).
float ew_out(float v) {
    float oscale = dkp.p.out_scale;
    return oscale != 1.0 ? v * oscale : v;
}

float ew_apply(float v, float w) {
    float alpha = dkp.p.alpha;
    if (alpha != 1.0) v *= alpha;
    if (OP == DK_VK_EW_MODE_ADD) v += dkp.p.beta * w;
    return ew_out(dk_act(v));
}

// vector_path: every operand dense in the walk order (element i at offset i) with 16-byte
// aligned starts: eight elements per step as 16-byte vectors, no index arithmetic.
void flat_main(uint total) {
    uint n8 = total / 8u, step = gl_NumWorkGroups.x * 256u, i0 = group_x() * 256u + gl_LocalInvocationID.x;
    uint ao = uint(dkp.p.a.offset), bo = uint(dkp.p.b.offset), yo = uint(dkp.p.y.offset);
    for (uint g = i0; g < n8; g += step) {
        float va[8], vb[8];
        if (DT == 1) ew_get8(DT, av.v[ao / 4u + 2u * g], av.v[ao / 4u + 2u * g + 1u], va);
        else ew_get8(DT, av.v[ao / 8u + g], uvec4(0u), va);
        if (OP == DK_VK_EW_MODE_ADD) {
            if (DT == 1) ew_get8(DT, bv.v[bo / 4u + 2u * g], bv.v[bo / 4u + 2u * g + 1u], vb);
            else ew_get8(DT, bv.v[bo / 8u + g], uvec4(0u), vb);
        }
        for (int j = 0; j < 8; j++) va[j] = ew_apply(va[j], OP == DK_VK_EW_MODE_ADD ? vb[j] : 0.0);
        if (DT2 == 1) {
            yv.v[yo / 4u + 2u * g] = floatBitsToUint(vec4(va[0], va[1], va[2], va[3]));
            yv.v[yo / 4u + 2u * g + 1u] = floatBitsToUint(vec4(va[4], va[5], va[6], va[7]));
        } else {
            uvec4 u;
            for (int j = 0; j < 4; j++) u[j] = dk_f2h(va[2 * j], DT2) | (dk_f2h(va[2 * j + 1], DT2) << 16);
            yv.v[yo / 8u + g] = u;
        }
    }
    for (uint e = n8 * 8u + i0; e < total; e += step)
        Y_st(yo + e, ew_apply(A_ld(ao + e), OP == DK_VK_EW_MODE_ADD ? B_ld(bo + e) : 0.0));
}

// Source index along walk dim k of an upsample.
uint up_src(int k, uint i, uint s) {
    if (k == HPOS) return i * uint(dkp.p.src_h) / s;
    if (k == WPOS) return i * uint(dkp.p.src_w) / s;
    return i;
}

uint up_fac(int k) {
    if (k == HPOS) return uint(dkp.p.shape[k]) / uint(dkp.p.src_h);
    if (k == WPOS) return uint(dkp.p.shape[k]) / uint(dkp.p.src_w);
    return 1u;
}

uint up_dup(uint h) { return h | (h << 16); }

// RESIZE with vector_path set (vkop_upsample_vec): integer factors, walk dim 3 unit-stride
// in a and y with a's rows in whole 16-byte vectors of 8 elements, every other
// stride a multiple of 8 elements.  An invocation loads 8 elements of a once and
// stores the f3 vectors they expand to (each element repeated f3 times) in each of
// the f0*f1*f2 output rows they repeat into; the generic walk spends most of its
// time in per-element index divisions.  Raw bits are copied.
void up_vec_main() {
    uint f0 = up_fac(0), f1 = up_fac(1), f2 = up_fac(2), f3 = up_fac(3);
    uint a1 = uint(dkp.p.shape[1]) / f1, a2 = uint(dkp.p.shape[2]) / f2, v3 = uint(dkp.p.shape[3]) / f3 / 8u;
    uint nv = uint(dkp.p.shape[0]) / f0 * a1 * a2 * v3, step = gl_NumWorkGroups.x * 256u;
    uint ys0 = uint(dkp.p.y.stride[0]), ys1 = uint(dkp.p.y.stride[1]), ys2 = uint(dkp.p.y.stride[2]), vw = DT == 1 ? 4u : 8u;
    for (uint g = group_x() * 256u + gl_LocalInvocationID.x; g < nv; g += step) {
        uint r = g;
        uint i3 = r % v3; r /= v3;
        uint i2 = r % a2; r /= a2;
        uint i1 = r % a1, i0 = r / a1;
        uint ao = uint(dkp.p.a.offset) + i0 * uint(dkp.p.a.stride[0]) + i1 * uint(dkp.p.a.stride[1]) + i2 * uint(dkp.p.a.stride[2]) + i3 * 8u;
        uint yb = uint(dkp.p.y.offset) + i0 * f0 * ys0 + i1 * f1 * ys1 + i2 * f2 * ys2 + i3 * 8u * f3;
        uvec4 u0 = av.v[ao / vw], u1 = DT == 1 ? av.v[ao / vw + 1u] : uvec4(0u);
        for (uint d0 = 0u; d0 < f0; d0++)
            for (uint d1 = 0u; d1 < f1; d1++)
                for (uint d2 = 0u; d2 < f2; d2++) {
                    uint yq = (yb + d0 * ys0 + d1 * ys1 + d2 * ys2) / vw;
                    if (f3 == 1u) {
                        yv.v[yq] = u0;
                        if (DT == 1) yv.v[yq + 1u] = u1;
                    } else if (f3 == 2u && DT == 1) {
                        yv.v[yq] = u0.xxyy;
                        yv.v[yq + 1u] = u0.zzww;
                        yv.v[yq + 2u] = u1.xxyy;
                        yv.v[yq + 3u] = u1.zzww;
                    } else if (f3 == 2u) {
                        yv.v[yq] = uvec4(up_dup(u0.x & 0xffffu), up_dup(u0.x >> 16), up_dup(u0.y & 0xffffu), up_dup(u0.y >> 16));
                        yv.v[yq + 1u] = uvec4(up_dup(u0.z & 0xffffu), up_dup(u0.z >> 16), up_dup(u0.w & 0xffffu), up_dup(u0.w >> 16));
                    } else {
                        // any other factor: each element stored f3 times one by
                        // one (rare; vectors built with run-time indices need
                        // local memory, a cost every path of the pipeline pays)
                        float v[8];
                        ew_get8(DT, u0, u1, v);
                        uint eo = yb + d0 * ys0 + d1 * ys1 + d2 * ys2;
                        for (int e = 0; e < 8; e++)
                            for (uint k = 0u; k < f3; k++) Y_st(eo + uint(e) * f3 + k, v[e]);
                    }
                }
    }
}

void main() {
    uint s1 = uint(dkp.p.shape[1]), s2 = uint(dkp.p.shape[2]), s3 = uint(dkp.p.shape[3]);
    uint total = uint(dkp.p.total);
    uint step = gl_NumWorkGroups.x * 256u;
    if (uint(dkp.p.vector_path) != 0u) {
        if (OP == DK_VK_EW_MODE_RESIZE) up_vec_main();
        else flat_main(total);
        return;
    }
    for (uint i = group_x() * 256u + gl_LocalInvocationID.x; i < total; i += step) {
        uint r = i;
        uint i3 = r % s3; r /= s3;
        uint i2 = r % s2; r /= s2;
        uint i1 = r % s1;
        uint i0 = r / s1;
        uint a0 = i0, a1 = i1, a2 = i2, a3 = i3;
        if (OP == DK_VK_EW_MODE_RESIZE) {   // h and w sit at walk positions HPOS, WPOS
            a0 = up_src(0, i0, uint(dkp.p.shape[0]));
            a1 = up_src(1, i1, s1);
            a2 = up_src(2, i2, s2);
            a3 = up_src(3, i3, s3);
        }
        float v = A_ld(uint(dkp.p.a.offset) + a0 * uint(dkp.p.a.stride[0]) + a1 * uint(dkp.p.a.stride[1]) + a2 * uint(dkp.p.a.stride[2]) +
                       a3 * uint(dkp.p.a.stride[3]));
        if (OP == DK_VK_EW_MODE_RESIZE) {
            Y_st(uint(dkp.p.y.offset) + i0 * uint(dkp.p.y.stride[0]) + i1 * uint(dkp.p.y.stride[1]) + i2 * uint(dkp.p.y.stride[2]) +
                     i3 * uint(dkp.p.y.stride[3]), v);
            continue;
        }
        float alpha = dkp.p.alpha;
        if (alpha != 1.0) v *= alpha;
        if (OP == DK_VK_EW_MODE_ADD)
            v += dkp.p.beta * B_ld(uint(dkp.p.b.offset) + i0 * uint(dkp.p.b.stride[0]) + i1 * uint(dkp.p.b.stride[1]) +
                                           i2 * uint(dkp.p.b.stride[2]) + i3 * uint(dkp.p.b.stride[3]));
        Y_st(uint(dkp.p.y.offset) + i0 * uint(dkp.p.y.stride[0]) + i1 * uint(dkp.p.y.stride[1]) + i2 * uint(dkp.p.y.stride[2]) +
                 i3 * uint(dkp.p.y.stride[3]), ew_out(dk_act(v)));
    }
}
