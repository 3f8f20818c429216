#version 450
#extension GL_GOOGLE_include_directive : require
// Convolution as implicit GEMM (no im2col buffer): rows m = (n, oh, ow) of one
// output sub-grid, columns = output channels of group gl_WorkGroupID.z,
// k = (tap_h, tap_w, ci) with ci fastest.  One shader serves conv2d (the grid is
// the whole output) and each stride phase of conv_transpose2d (a dense
// sub-convolution on the outputs oh = OH0 + OSTH*t).  Input coordinate of tap th:
// ihu = ohs*STRH + OFFH + th*DILH in the (optionally 2x-upsampled) input.
// Epilogue: out = oscale * act(acc + bias) + rscale * residual.
#include "dk_common.glsl"

DK_IO(0, X, DT)
DK_IO(1, Wt, DT)
DK_IO(2, Bias, DT)
DK_IO(3, Res, DT)
DK_IO(4, Y, DT)

int cv_n[4], cv_ih0[4], cv_iw0[4];
int cv_g;

void gemm_row_setup(int slot, int m) {
    int ows = P(DK_VKP_CV_OWS), ohs = P(DK_VKP_CV_OHS);
    int q = m / ows;
    int ow = m - q * ows;
    int n = q / ohs;
    int oh = q - n * ohs;
    cv_n[slot] = n;
    cv_ih0[slot] = oh * P(DK_VKP_CV_STRH) + P(DK_VKP_CV_OFFH);
    cv_iw0[slot] = ow * P(DK_VKP_CV_STRW) + P(DK_VKP_CV_OFFW);
}

float gemm_load_a(int slot, int m, int k) {
    int cing = P(DK_VKP_CV_CING), tw_n = P(DK_VKP_CV_TW), ups = P(DK_VKP_CV_UPS);
    int q = k / cing;
    int ci = k - q * cing;
    int th = q / tw_n;
    int tw = q - th * tw_n;
    int ihu = cv_ih0[slot] + th * P(DK_VKP_CV_DILH);
    int iwu = cv_iw0[slot] + tw * P(DK_VKP_CV_DILW);
    if (ihu < 0 || iwu < 0 || ihu >= P(DK_VKP_CV_H) * ups || iwu >= P(DK_VKP_CV_W) * ups) return 0.0;
    int ih = ihu / ups, iw = iwu / ups;
    uint idx = PU(DK_VKP_CV_XS + 4) + uint(cv_n[slot]) * PU(DK_VKP_CV_XS) +
               uint(cv_g * cing + ci) * PU(DK_VKP_CV_XS + 1) + uint(ih) * PU(DK_VKP_CV_XS + 2) +
               uint(iw) * PU(DK_VKP_CV_XS + 3);
    return X_ld(idx);
}

float gemm_load_b(int k, int n) {
    // FLAGS bit 3: pre-packed conv2d weights, dense [k][n] with row stride WGS+2.
    if ((FLAGS & 8) != 0) return Wt_ld(uint(k) * PU(DK_VKP_CV_WGS + 2) + uint(n));
    int cing = P(DK_VKP_CV_CING), tw_n = P(DK_VKP_CV_TW);
    int q = k / cing;
    int ci = k - q * cing;
    int th = q / tw_n;
    int tw = q - th * tw_n;
    int kh = P(DK_VKP_CV_KH0) + th * P(DK_VKP_CV_KSTH);
    int kw = P(DK_VKP_CV_KW0) + tw * P(DK_VKP_CV_KSTW);
    uint idx = PU(DK_VKP_CV_WGS + 5) + uint(cv_g) * PU(DK_VKP_CV_WGS) + uint(n) * PU(DK_VKP_CV_WGS + 1) +
               uint(ci) * PU(DK_VKP_CV_WGS + 2) + uint(kh) * PU(DK_VKP_CV_WGS + 3) +
               uint(kw) * PU(DK_VKP_CV_WGS + 4);
    return Wt_ld(idx);
}

void gemm_store(int m, int n, float acc) {
    int ows = P(DK_VKP_CV_OWS), ohs = P(DK_VKP_CV_OHS);
    int q = m / ows;
    int ows_i = m - q * ows;
    int nb = q / ohs;
    int ohs_i = q - nb * ohs;
    uint oh = uint(P(DK_VKP_CV_OH0) + ohs_i * P(DK_VKP_CV_OSTH));
    uint ow = uint(P(DK_VKP_CV_OW0) + ows_i * P(DK_VKP_CV_OSTW));
    uint co = uint(cv_g * P(DK_VKP_CV_NC) + n);
    float v = acc;
    if ((FLAGS & 1) != 0) v += Bias_ld(PU(DK_VKP_CV_BS + 1) + co * PU(DK_VKP_CV_BS));
    v = PF(DK_VKP_CV_OSCALE) * dk_act(v);
    if ((FLAGS & 2) != 0)
        v += PF(DK_VKP_CV_RSCALE) * Res_ld(PU(DK_VKP_CV_RS + 4) + uint(nb) * PU(DK_VKP_CV_RS) + co * PU(DK_VKP_CV_RS + 1) +
                                           oh * PU(DK_VKP_CV_RS + 2) + ow * PU(DK_VKP_CV_RS + 3));
    Y_st(PU(DK_VKP_CV_YS + 4) + uint(nb) * PU(DK_VKP_CV_YS) + co * PU(DK_VKP_CV_YS + 1) + oh * PU(DK_VKP_CV_YS + 2) +
             ow * PU(DK_VKP_CV_YS + 3),
         v);
}

#include "dk_gemm_tile.glsl"

void main() {
    cv_g = int(gl_WorkGroupID.z);
    gemm_run(P(DK_VKP_CV_M), P(DK_VKP_CV_NC), P(DK_VKP_CV_K), int(group_x()) * GEMM_BM,
             int(gl_WorkGroupID.y) * GEMM_BN);
}
