#version 450
#extension GL_GOOGLE_include_directive : require
// Elementwise over y's 4-D logical shape (any strides), grid-stride loop.
// MODE 0: y = act(alpha * a) (activation; dk_convert with DT2 = y's dtype)
// MODE 1: y = act(alpha * a + beta * b)
// MODE 2: nearest resize: y[i0,i1,i2,i3] = a[i0,i1,i2*SRCH/H,i3*SRCW/W]
#include "dk_common.glsl"

layout(local_size_x = 256) in;

DK_IO(0, A, DT)
DK_IO(1, B, DT)
DK_IO(4, Y, DT2)

void main() {
    uint s1 = PU(DK_VKP_EW_SHAPE + 1), s2 = PU(DK_VKP_EW_SHAPE + 2), s3 = PU(DK_VKP_EW_SHAPE + 3);
    uint total = PU(DK_VKP_EW_TOTAL);
    uint step = gl_NumWorkGroups.x * 256u;
    for (uint i = group_x() * 256u + gl_LocalInvocationID.x; i < total; i += step) {
        uint r = i;
        uint i3 = r % s3; r /= s3;
        uint i2 = r % s2; r /= s2;
        uint i1 = r % s1;
        uint i0 = r / s1;
        uint a2 = i2, a3 = i3;
        if (MODE == 2) {
            a2 = i2 * PU(DK_VKP_EW_SRCH) / s2;
            a3 = i3 * PU(DK_VKP_EW_SRCW) / s3;
        }
        float v = A_ld(PU(DK_VKP_EW_AS + 4) + i0 * PU(DK_VKP_EW_AS) + i1 * PU(DK_VKP_EW_AS + 1) + a2 * PU(DK_VKP_EW_AS + 2) +
                       a3 * PU(DK_VKP_EW_AS + 3));
        if (MODE == 2) {
            Y_st(PU(DK_VKP_EW_YS + 4) + i0 * PU(DK_VKP_EW_YS) + i1 * PU(DK_VKP_EW_YS + 1) + i2 * PU(DK_VKP_EW_YS + 2) +
                     i3 * PU(DK_VKP_EW_YS + 3), v);
            continue;
        }
        float alpha = PF(DK_VKP_EW_ALPHA);
        if (alpha != 1.0) v *= alpha;
        if (MODE == 1)
            v += PF(DK_VKP_EW_BETA) * B_ld(PU(DK_VKP_EW_BS + 4) + i0 * PU(DK_VKP_EW_BS) + i1 * PU(DK_VKP_EW_BS + 1) +
                                           i2 * PU(DK_VKP_EW_BS + 2) + i3 * PU(DK_VKP_EW_BS + 3));
        Y_st(PU(DK_VKP_EW_YS + 4) + i0 * PU(DK_VKP_EW_YS) + i1 * PU(DK_VKP_EW_YS + 1) + i2 * PU(DK_VKP_EW_YS + 2) +
                 i3 * PU(DK_VKP_EW_YS + 3), dk_act(v));
    }
}
