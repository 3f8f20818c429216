#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
// Convolution as implicit GEMM (no im2col buffer): rows m = (n, oh, ow) of one
// output sub-grid, columns = output channels of group gl_WorkGroupID.z,
// k = (tap_h, tap_w, ci) with ci fastest.  One shader serves conv2d (the grid is
// the whole output) and each stride phase of conv_transpose2d (a dense
// sub-convolution on the outputs oh = OH0 + OSTH*t).  Input coordinate of tap th:
// ihu = ohs*STRH + OFFH + th*DILH in the (optionally 2x-upsampled) input.
// Epilogue: out = oscale * act(acc + bias) + rscale * residual.
// The GEMM core (dk_gemm_tile.glsl) fetches one k per invocation and slice for
// 8 rows / 8 columns: rows keep their pixel, the k cursors their (th, tw, ci),
// advanced without division.
#include "dk_common.glsl"
#include "dk_gemm_tile.glsl"

DK_IO(0, X, DT)
DK_IO(1, Wt, DT)
DK_IO(2, Bias, DT)
DK_IO(3, Res, DT)
DK_IO(4, Y, DT)
// 16-byte views for the vector fetches (MODE bits 0 and 1).
layout(std430, set = 0, binding = 0) readonly buffer XV { uvec4 v[]; } xv;
layout(std430, set = 0, binding = 1) readonly buffer WV { uvec4 v[]; } wv;


// MODE bit 2: the input is 2x-upsampled (input coordinate = upsampled one / 2).
// Without it, a row's pixel offset and a tap's offset are folded into the row
// and cursor offsets, so a fetch is two adds, two compares and one add.
const bool CV_UP2 = (MODE & 4) != 0;

int cv_g;
// A rows: element offset of (n, group's channel 0) (plus, without CV_UP2, of
// the tap (0, 0) pixel, which may lie in the padding), and the upsampled-input
// coordinate of tap (0, 0).
uint cva_base[8];
int cva_ih[8], cva_iw[8];
// B columns: element offset of output channel n's weights (group included).
uint cvb_col[8];

// A k cursor = (th, tw, ci) with derived input offsets.
struct cv_kcur {
    int ci, tw, th;
};
cv_kcur cvka, cvkb;
uint cva_koff, cvb_koff;
int cva_dh, cva_dw;

void cv_kset(inout cv_kcur c, int k) {
    int cing = P(DK_VKP_CV_CING);
    int q = k / cing;
    c.ci = k - q * cing;
    c.th = q / P(DK_VKP_CV_TW);
    c.tw = q - c.th * P(DK_VKP_CV_TW);
}

void cv_kadv(inout cv_kcur c) {
    int cing = P(DK_VKP_CV_CING), tw_n = P(DK_VKP_CV_TW);
    c.ci += GEMM_BK;
    while (c.ci >= cing) {
        c.ci -= cing;
        if (++c.tw == tw_n) {
            c.tw = 0;
            c.th++;
        }
    }
}

void cva_derive() {
    cva_koff = uint(cvka.ci) * PU(DK_VKP_CV_XS + 1);
    cva_dh = cvka.th * P(DK_VKP_CV_DILH);
    cva_dw = cvka.tw * P(DK_VKP_CV_DILW);
    if (!CV_UP2) cva_koff += uint(cva_dh) * PU(DK_VKP_CV_XS + 2) + uint(cva_dw) * PU(DK_VKP_CV_XS + 3);
}

void cvb_derive() {
    cvb_koff = uint(cvkb.ci) * PU(DK_VKP_CV_WGS + 2) +
               uint(P(DK_VKP_CV_KH0) + cvkb.th * P(DK_VKP_CV_KSTH)) * PU(DK_VKP_CV_WGS + 3) +
               uint(P(DK_VKP_CV_KW0) + cvkb.tw * P(DK_VKP_CV_KSTW)) * PU(DK_VKP_CV_WGS + 4);
}

void gemm_a_row(int j, int m) {
    int ows = P(DK_VKP_CV_OWS), ohs = P(DK_VKP_CV_OHS);
    int q = m / ows;
    int ow = m - q * ows;
    int n = q / ohs;
    int oh = q - n * ohs;
    cva_base[j] = PU(DK_VKP_CV_XS + 4) + uint(n) * PU(DK_VKP_CV_XS) +
                  uint(cv_g * P(DK_VKP_CV_CING)) * PU(DK_VKP_CV_XS + 1);
    cva_ih[j] = oh * P(DK_VKP_CV_STRH) + P(DK_VKP_CV_OFFH);
    cva_iw[j] = ow * P(DK_VKP_CV_STRW) + P(DK_VKP_CV_OFFW);
    if (!CV_UP2) cva_base[j] += uint(cva_ih[j]) * PU(DK_VKP_CV_XS + 2) + uint(cva_iw[j]) * PU(DK_VKP_CV_XS + 3);
}

// Element offset of row slot j at the A cursor; false where the tap lies in
// the padding.
bool cv_a_index(int j, out uint idx) {
    int ihu = cva_ih[j] + cva_dh, iwu = cva_iw[j] + cva_dw;
    if (!CV_UP2) {
        idx = cva_base[j] + cva_koff;
        return uint(ihu) < uint(P(DK_VKP_CV_H)) && uint(iwu) < uint(P(DK_VKP_CV_W));
    }
    idx = cva_base[j] + cva_koff + uint(ihu >> 1) * PU(DK_VKP_CV_XS + 2) + uint(iwu >> 1) * PU(DK_VKP_CV_XS + 3);
    return uint(ihu) < uint(2 * P(DK_VKP_CV_H)) && uint(iwu) < uint(2 * P(DK_VKP_CV_W));
}

void gemm_a_kset(int k) {
    cv_kset(cvka, k);
    cva_derive();
}

void gemm_a_knext() {
    cv_kadv(cvka);
    cva_derive();
}

float gemm_a_load(int j) {
    uint i;
    return cv_a_index(j, i) ? X_ld(i) : 0.0;
}

// The 8 channels ci..ci+7 of row slot 0 at the cursor's tap (channels-last,
// Cin a multiple of 8: they never straddle a tap).
void gemm_a_load8(out float v[8]) {
    uint i;
    if (!cv_a_index(0, i)) {
        [[unroll]] for (int e = 0; e < 8; e++) v[e] = 0.0;
        return;
    }
    GEMM_LOAD8(xv, i, v);
}

void gemm_b_col(int j, int n) {
    cvb_col[j] = PU(DK_VKP_CV_WGS + 5) + uint(cv_g) * PU(DK_VKP_CV_WGS) + uint(n) * PU(DK_VKP_CV_WGS + 1);
}

void gemm_b_kset(int k) {
    cv_kset(cvkb, k);
    cvb_derive();
}

void gemm_b_knext() {
    cv_kadv(cvkb);
    cvb_derive();
}

float gemm_b_load(int j) { return Wt_ld(cvb_col[j] + cvb_koff); }

// Output channels n..n+7 of column slot 0 (packed weights, channels contiguous).
void gemm_b_load8(out float v[8]) {
    uint i = cvb_col[0] + cvb_koff;
    GEMM_LOAD8(wv, i, v);
}

uint cvo_y, cvo_r; // output row m: offsets of its pixel in y and the residual

void gemm_out_row(int m) {
    int ows = P(DK_VKP_CV_OWS), ohs = P(DK_VKP_CV_OHS);
    int q = m / ows;
    int ows_i = m - q * ows;
    int nb = q / ohs;
    int ohs_i = q - nb * ohs;
    uint oh = uint(P(DK_VKP_CV_OH0) + ohs_i * P(DK_VKP_CV_OSTH));
    uint ow = uint(P(DK_VKP_CV_OW0) + ows_i * P(DK_VKP_CV_OSTW));
    cvo_y = PU(DK_VKP_CV_YS + 4) + uint(nb) * PU(DK_VKP_CV_YS) + oh * PU(DK_VKP_CV_YS + 2) + ow * PU(DK_VKP_CV_YS + 3);
    cvo_r = PU(DK_VKP_CV_RS + 4) + uint(nb) * PU(DK_VKP_CV_RS) + oh * PU(DK_VKP_CV_RS + 2) + ow * PU(DK_VKP_CV_RS + 3);
}

void gemm_store(int m, int n, float acc) {
    uint co = uint(cv_g * P(DK_VKP_CV_NC) + n);
    float v = acc;
    if ((FLAGS & 1) != 0) v += Bias_ld(PU(DK_VKP_CV_BS + 1) + co * PU(DK_VKP_CV_BS));
    v = PF(DK_VKP_CV_OSCALE) * dk_act(v);
    if ((FLAGS & 2) != 0) v += PF(DK_VKP_CV_RSCALE) * Res_ld(cvo_r + co * PU(DK_VKP_CV_RS + 1));
    Y_st(cvo_y + co * PU(DK_VKP_CV_YS + 1), v);
}

void main() {
    cv_g = int(gl_WorkGroupID.z);
    gemm_run(P(DK_VKP_CV_M), P(DK_VKP_CV_NC), P(DK_VKP_CV_K), int(group_x()) * GEMM_BM,
             int(gl_WorkGroupID.y) * GEMM_BN);
}
