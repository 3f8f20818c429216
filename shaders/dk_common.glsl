// Shared by every difkern compute shader: bindings, dtype load/store through
// 16-bit storage (no shaderFloat16 needed), activations, parameter access.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_GOOGLE_include_directive : require
#define DK_GLSL 1
#include "dk_vk_params.h"

layout(constant_id = DK_VKS_DT) const int DT = 1;
layout(constant_id = DK_VKS_DT2) const int DT2 = 1;
layout(constant_id = DK_VKS_MODE) const int MODE = 0;

// Binding 6: this dispatch's parameter slot, dkp.p, of the type the shader
// names in DK_PARAMS before including this file (dk_vk_params.h; restrict: no
// store of a shader reaches it, so its values need not be reloaded after each
// output store); push constant: first workgroup x (large grids are split into
// several dispatches).
#ifndef DK_PARAMS
#error "define DK_PARAMS (the parameter struct of dk_vk_params.h) before including dk_common.glsl"
#endif
layout(std430, set = 0, binding = 6) restrict readonly buffer DkParams { DK_PARAMS p; } dkp;
layout(push_constant) uniform DkPush { uint base_x; } dkpc;

uint group_x() { return gl_WorkGroupID.x + dkpc.base_x; }
// The activation, a specialization constant: only its case is compiled.  (As
// a parameter, every use held every case behind a branch: the tensor-core
// conv's unrolled epilogue 128 times.)  Bits 0-3: the activation (dk_act);
// bits 4-7: the conv/matmul epilogue's activation after the residual
// (dk_act_post; 0 in every other shader).
layout(constant_id = DK_VKS_ACT) const int ACT = 0;
const int ACT_PRE = ACT & 15;
const int ACT_POST = (ACT >> 4) & 15;
#define FLAGS dkp.p.epilogue.flags

float dk_h2f(uint u, int dt) {
    return dt == 2 ? unpackHalf2x16(u).x : uintBitsToFloat(u << 16);
}

// fp32 -> f16 / bf16 bits, round to nearest even, NaN stays NaN (as the CPU does).
uint dk_f2h(float x, int dt) {
    uint u = floatBitsToUint(x);
    if (dt == 3) {
        if ((u & 0x7fffffffu) > 0x7f800000u) return ((u >> 16) | 0x40u) & 0xffffu;
        return ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16) & 0xffffu;
    }
    uint sgn = (u >> 16) & 0x8000u;
    uint a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sgn | 0x7e00u;
    if (a >= 0x477ff000u) return sgn | 0x7c00u;
    if (a < 0x38800000u) return sgn | uint(roundEven(uintBitsToFloat(a) * 16777216.0));
    uint r = a + 0x0fffu + ((a >> 13) & 1u);
    return sgn | (((r >> 23) - 112u) << 10) | ((r >> 13) & 0x3ffu);
}

// A storage binding seen as f32 or as 16-bit words, with load/store in dtype dt.
#define DK_IO(b, nm, dt)                                                                  \
    layout(std430, set = 0, binding = b) buffer nm##_F32 { float v[]; } nm##_f;          \
    layout(std430, set = 0, binding = b) buffer nm##_U16 { uint16_t v[]; } nm##_h;       \
    float nm##_ld(uint i) {                                                               \
        if (dt == 1) return nm##_f.v[i];                                                  \
        return dk_h2f(uint(nm##_h.v[i]), dt);                                             \
    }                                                                                     \
    void nm##_st(uint i, float x) {                                                       \
        if (dt == 1) nm##_f.v[i] = x;                                                     \
        else nm##_h.v[i] = uint16_t(dk_f2h(x, dt));                                       \
    }

// erf by Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7): GLSL has no erf.
float dk_erf(float x) {
    float s = sign(x), a = abs(x);
    float t = 1.0 / (1.0 + 0.3275911 * a);
    float y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * exp(-a * a);
    return s * y;
}

// tanh with a clamped argument: some drivers compute it as a ratio of exps that overflows.
float dk_tanh(float x) { return tanh(clamp(x, -15.0, 15.0)); }

float dk_act_n(int a, float x) {
    if (a == 1) return x > 0.0 ? x : 0.0;
    if (a == 2) return x / (1.0 + exp(-x));
    if (a == 3) return 0.5 * x * (1.0 + dk_erf(x * 0.70710678118654752));
    if (a == 4) return 0.5 * x * (1.0 + dk_tanh(0.79788456080286536 * (x + 0.044715 * x * x * x)));
    if (a == 5) return dk_tanh(x);
    return x;
}
float dk_act(float x) { return dk_act_n(ACT_PRE, x); }
float dk_act_post(float x) { return dk_act_n(ACT_POST, x); }

// 16-byte vectors of dtype DT: DK_VW elements (4 f32 or 8 f16 / bf16).
#define DK_VW (DT == 1 ? 4 : 8)
float dk_v16_get(uvec4 u, int j) {
    if (DT == 1) return uintBitsToFloat(u[j]);
    uint w = u[j >> 1];
    return dk_h2f((j & 1) != 0 ? w >> 16 : w & 0xffffu, DT);
}
void dk_v16_set(inout uvec4 u, int j, float x) {
    if (DT == 1) { u[j] = floatBitsToUint(x); return; }
    uint h = dk_f2h(x, DT), w = u[j >> 1];
    u[j >> 1] = (j & 1) != 0 ? (w & 0xffffu) | (h << 16) : (w & 0xffff0000u) | h;
}
