#version 450
#extension GL_GOOGLE_include_directive : require
// GroupNorm pass 3: y = act((x - mean) * rstd * gamma[c] + beta[c]), any strides,
// in place allowed (each element is read and written by the same invocation).
#include "dk_common.glsl"

layout(local_size_x = 256) in;

DK_IO(0, X, DT)
DK_IO(1, Gamma, DT)
DK_IO(2, Beta, DT)
DK_IO(4, Y, DT)
layout(std430, set = 0, binding = 5) buffer GnScr { float v[]; } scr;

void main() {
    uint C = PU(DK_VKP_GN_C), H = PU(DK_VKP_GN_H), W = PU(DK_VKP_GN_W), G = PU(DK_VKP_GN_G);
    uint total = PU(DK_VKP_GN_TOTAL), cg = C / G;
    bool cfast = P(DK_VKP_GN_CFAST) != 0;
    uint step = gl_NumWorkGroups.x * 256u;
    for (uint i = group_x() * 256u + gl_LocalInvocationID.x; i < total; i += step) {
        uint r = i, c, h, w;
        if (cfast) { c = r % C; r /= C; w = r % W; r /= W; h = r % H; r /= H; }
        else { w = r % W; r /= W; h = r % H; r /= H; c = r % C; r /= C; }
        uint n = r;
        uint s = PU(DK_VKP_GN_STATS) + (n * G + c / cg) * 2u;
        float x = X_ld(PU(DK_VKP_GN_XS + 4) + n * PU(DK_VKP_GN_XS) + c * PU(DK_VKP_GN_XS + 1) + h * PU(DK_VKP_GN_XS + 2) +
                       w * PU(DK_VKP_GN_XS + 3));
        float v = (x - scr.v[s]) * scr.v[s + 1u];
        if ((FLAGS & 1) != 0) v *= Gamma_ld(PU(DK_VKP_GN_GAMMA + 1) + c * PU(DK_VKP_GN_GAMMA));
        if ((FLAGS & 2) != 0) v += Beta_ld(PU(DK_VKP_GN_BETA + 1) + c * PU(DK_VKP_GN_BETA));
        Y_st(PU(DK_VKP_GN_YS + 4) + n * PU(DK_VKP_GN_YS) + c * PU(DK_VKP_GN_YS + 1) + h * PU(DK_VKP_GN_YS + 2) +
                 w * PU(DK_VKP_GN_YS + 3), dk_act(v));
    }
}
