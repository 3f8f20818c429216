#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
// Convolution as implicit GEMM (no im2col buffer): rows m = (n, oh, ow) of one
// output sub-grid, columns = output channels of group gl_WorkGroupID.z,
// k = (tap_h, tap_w, ci) with ci fastest.  One shader serves conv2d (the grid is
// the whole output) and each stride phase of conv_transpose2d (a dense
// sub-convolution on the outputs oh = out_start_h + out_step_h*t).  Input coordinate
// of tap th: ihu = ohs*stride_h + input_offset_h + th*dilation_h in the (optionally
// 2x-upsampled) input (dk_vk_conv_params).
// Epilogue: out = post_act(oscale * act(acc + bias) + rscale * residual); the
// residual element is read before the same invocation stores that element (it may be y).
// The GEMM core (dk_gemm_tile.glsl) fetches one k per invocation and slice for
// 8 rows / 8 columns: rows keep their pixel, the k cursors their (th, tw, ci),
// advanced without division.
#define DK_PARAMS dk_vk_conv_params
#include "dk_common.glsl"
#include "dk_gemm_tile.glsl"

DK_IO(0, X, DT)
DK_IO(1, Wt, DT)
DK_IO(2, Bias, DT2)   // the bias: DT, or f32 (DT2, set by the host)
DK_IO(3, Res, DT)
DK_IO(4, Y, DT)
// 16-byte views for the vector fetches (DK_VK_GEMM_MODE_VEC_A, DK_VK_GEMM_MODE_VEC_B_N).
layout(std430, set = 0, binding = 0) readonly buffer XV { uvec4 v[]; } xv;
layout(std430, set = 0, binding = 1) readonly buffer WV { uvec4 v[]; } wv;


// DK_VK_CONV_MODE_UPSAMPLE2: the input is 2x-upsampled (input coordinate = upsampled one / 2).
// Without it, a row's pixel offset and a tap's offset are folded into the row
// and cursor offsets, so a fetch is two adds, two compares and one add.
const bool CV_UP2 = (MODE & DK_VK_CONV_MODE_UPSAMPLE2) != 0;

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
    int cing = dkp.p.cin_per_group;
    int q = k / cing;
    c.ci = k - q * cing;
    c.th = q / dkp.p.taps_w;
    c.tw = q - c.th * dkp.p.taps_w;
}

void cv_kadv(inout cv_kcur c) {
    int cing = dkp.p.cin_per_group, tw_n = dkp.p.taps_w;
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
    cva_koff = uint(cvka.ci) * uint(dkp.p.x.stride[1]);
    cva_dh = cvka.th * dkp.p.dilation_h;
    cva_dw = cvka.tw * dkp.p.dilation_w;
    if (!CV_UP2) cva_koff += uint(cva_dh) * uint(dkp.p.x.stride[2]) + uint(cva_dw) * uint(dkp.p.x.stride[3]);
}

void cvb_derive() {
    cvb_koff = uint(cvkb.ci) * uint(dkp.p.weight.view.stride[1]) +
               uint(dkp.p.tap_start_h + cvkb.th * dkp.p.tap_step_h) * uint(dkp.p.weight.view.stride[2]) +
               uint(dkp.p.tap_start_w + cvkb.tw * dkp.p.tap_step_w) * uint(dkp.p.weight.view.stride[3]);
}

void gemm_a_row(int j, int m) {
    int ows = dkp.p.rows_w, ohs = dkp.p.rows_h;
    int q = m / ows;
    int ow = m - q * ows;
    int n = q / ohs;
    int oh = q - n * ohs;
    cva_base[j] = uint(dkp.p.x.offset) + uint(n) * uint(dkp.p.x.stride[0]) +
                  uint(cv_g * dkp.p.cin_per_group) * uint(dkp.p.x.stride[1]);
    cva_ih[j] = oh * dkp.p.stride_h + dkp.p.input_offset_h;
    cva_iw[j] = ow * dkp.p.stride_w + dkp.p.input_offset_w;
    if (!CV_UP2) cva_base[j] += uint(cva_ih[j]) * uint(dkp.p.x.stride[2]) + uint(cva_iw[j]) * uint(dkp.p.x.stride[3]);
}

// Element offset of row slot j at the A cursor; false where the tap lies in
// the padding.
bool cv_a_index(int j, out uint idx) {
    int ihu = cva_ih[j] + cva_dh, iwu = cva_iw[j] + cva_dw;
    if (!CV_UP2) {
        idx = cva_base[j] + cva_koff;
        return uint(ihu) < uint(dkp.p.in_h) && uint(iwu) < uint(dkp.p.in_w);
    }
    idx = cva_base[j] + cva_koff + uint(ihu >> 1) * uint(dkp.p.x.stride[2]) + uint(iwu >> 1) * uint(dkp.p.x.stride[3]);
    return uint(ihu) < uint(2 * dkp.p.in_h) && uint(iwu) < uint(2 * dkp.p.in_w);
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
    cvb_col[j] = uint(dkp.p.weight.view.offset) + uint(cv_g) * uint(dkp.p.weight.group_stride) + uint(n) * uint(dkp.p.weight.view.stride[0]);
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
    int ows = dkp.p.rows_w, ohs = dkp.p.rows_h;
    int q = m / ows;
    int ows_i = m - q * ows;
    int nb = q / ohs;
    int ohs_i = q - nb * ohs;
    uint oh = uint(dkp.p.out_start_h + ohs_i * dkp.p.out_step_h);
    uint ow = uint(dkp.p.out_start_w + ows_i * dkp.p.out_step_w);
    cvo_y = uint(dkp.p.y.offset) + uint(nb) * uint(dkp.p.y.stride[0]) + oh * uint(dkp.p.y.stride[2]) + ow * uint(dkp.p.y.stride[3]);
    cvo_r = uint(dkp.p.residual.offset) + uint(nb) * uint(dkp.p.residual.stride[0]) + oh * uint(dkp.p.residual.stride[2]) + ow * uint(dkp.p.residual.stride[3]);
}

void gemm_store(int m, int n, float acc) {
    uint co = uint(cv_g * dkp.p.n + n);
    float v = acc;
    if ((FLAGS & DK_VK_FLAG_BIAS) != 0) v += Bias_ld(uint(dkp.p.bias.offset) + co * uint(dkp.p.bias.stride));
    v = dkp.p.out_scale * dk_act(v);
    if ((FLAGS & DK_VK_FLAG_RESIDUAL) != 0) v += dkp.p.residual_scale * Res_ld(cvo_r + co * uint(dkp.p.residual.stride[1]));
    Y_st(cvo_y + co * uint(dkp.p.y.stride[1]), dk_act_post(v));
}

// DK_VK_CONV_MODE_NARROW (host: Cout/groups <= 8): direct convolution for narrow outputs
// (the SDXL VAE's conv_out, 128 -> 3; depthwise), where a 128-wide GEMM tile
// would waste 15/16 of its work or more.  One output pixel per invocation
// (256 per workgroup, grid x = rows / 256), all its channels in fp32 vec4
// registers (DK_VK_CONV_MODE_NARROW4: at most 4 channels, one vec4; else two).  Taps outside,
// input channels inside in chunks of CVN_CI: each chunk's weights [ci][co]
// are staged in shared memory (read back as broadcast vec4s), each input
// element is read once per tap (DK_VK_GEMM_MODE_VEC_A: 8 channels per 16-byte load).
const bool CV_NARROW = (MODE & DK_VK_CONV_MODE_NARROW) != 0;
const int CVN_NV = 2 - ((MODE >> DK_VK_CONV_MODE_NARROW4_SHIFT) & 1);
const int CVN_CI = 128;

void cv_narrow(int M, int N) {
    int t = int(gl_LocalInvocationIndex);
    int m = int(group_x()) * 256 + t;
    bool live = m < M;
    int cing = dkp.p.cin_per_group, th_n = dkp.p.taps_h, tw_n = dkp.p.taps_w;
    int ows = dkp.p.rows_w, ohs = dkp.p.rows_h;
    int mm = live ? m : 0;
    int q = mm / ows;
    int ow = mm - q * ows;
    int nb = q / ohs;
    int oh = q - nb * ohs;
    int ih0 = oh * dkp.p.stride_h + dkp.p.input_offset_h, iw0 = ow * dkp.p.stride_w + dkp.p.input_offset_w;
    int ush = CV_UP2 ? 1 : 0;
    int hu = dkp.p.in_h << ush, wu = dkp.p.in_w << ush;
    uint xbase = uint(dkp.p.x.offset) + uint(nb) * uint(dkp.p.x.stride[0]) + uint(cv_g * cing) * uint(dkp.p.x.stride[1]);
    uint xs_c = uint(dkp.p.x.stride[1]), xs_h = uint(dkp.p.x.stride[2]), xs_w = uint(dkp.p.x.stride[3]);
    uint wbase = uint(dkp.p.weight.view.offset) + uint(cv_g) * uint(dkp.p.weight.group_stride);
    uint ws_co = uint(dkp.p.weight.view.stride[0]), ws_ci = uint(dkp.p.weight.view.stride[1]);
    const int nch = 4 * CVN_NV;
    vec4 acc0 = vec4(0.0), acc1 = vec4(0.0);
    for (int th = 0; th < th_n; th++) {
        for (int tw = 0; tw < tw_n; tw++) {
            int ihu = ih0 + th * dkp.p.dilation_h, iwu = iw0 + tw * dkp.p.dilation_w;
            bool ok = live && ihu >= 0 && iwu >= 0 && ihu < hu && iwu < wu;
            uint xp = xbase + uint(ok ? ihu >> ush : 0) * xs_h + uint(ok ? iwu >> ush : 0) * xs_w;
            uint wt = wbase + uint(dkp.p.tap_start_h + th * dkp.p.tap_step_h) * uint(dkp.p.weight.view.stride[2]) +
                      uint(dkp.p.tap_start_w + tw * dkp.p.tap_step_w) * uint(dkp.p.weight.view.stride[3]);
            for (int c0 = 0; c0 < cing; c0 += CVN_CI) {
                barrier(); // the previous chunk's readers are done
                for (int e = t; e < CVN_CI * nch; e += 256) {
                    int ci = c0 + e / nch, co = e % nch;
                    gemm_sm[e >> 2][e & 3] =
                        ci < cing && co < N ? Wt_ld(wt + uint(ci) * ws_ci + uint(co) * ws_co) : 0.0;
                }
                barrier();
                if (!ok) continue;
                int cn = min(CVN_CI, cing - c0);
                if ((MODE & DK_VK_GEMM_MODE_VEC_A) != 0 && cn == CVN_CI) { // a whole chunk: all its loads in flight at once
                    [[unroll]] for (int c = 0; c < CVN_CI; c += 8) {
                        float v[8];
                        uint i = xp + uint(c0 + c);
                        GEMM_LOAD8(xv, i, v);
                        [[unroll]] for (int e = 0; e < 8; e++) {
                            acc0 += v[e] * gemm_sm[(c + e) * CVN_NV];
                            if (CVN_NV > 1) acc1 += v[e] * gemm_sm[(c + e) * CVN_NV + 1];
                        }
                    }
                } else if ((MODE & DK_VK_GEMM_MODE_VEC_A) != 0) { // channels contiguous, cing % 8 == 0, 16-byte aligned
                    for (int c = 0; c < cn; c += 8) {
                        float v[8];
                        uint i = xp + uint(c0 + c);
                        GEMM_LOAD8(xv, i, v);
                        [[unroll]] for (int e = 0; e < 8; e++) {
                            acc0 += v[e] * gemm_sm[(c + e) * CVN_NV];
                            if (CVN_NV > 1) acc1 += v[e] * gemm_sm[(c + e) * CVN_NV + 1];
                        }
                    }
                } else {
                    for (int c = 0; c < cn; c++) {
                        float v = X_ld(xp + uint(c0 + c) * xs_c);
                        acc0 += v * gemm_sm[c * CVN_NV];
                        if (CVN_NV > 1) acc1 += v * gemm_sm[c * CVN_NV + 1];
                    }
                }
            }
        }
    }
    if (!live) return;
    gemm_out_row(m);
    [[unroll]] for (int c = 0; c < 4; c++)
        if (c < N) gemm_store(m, c, acc0[c]);
    if (CVN_NV > 1) {
        [[unroll]] for (int c = 0; c < 4; c++)
            if (c + 4 < N) gemm_store(m, c + 4, acc1[c]);
    }
}

// DK_VK_CONV_MODE_LANES (with NARROW and VEC_A): lane groups for the channels-last narrow
// conv.  One pixel per invocation (above) has a subgroup's 16-byte load touch
// 32 pixels 256+ bytes apart, one cache line each: the L1 serves the loads a
// line at a time.  Here 16
// invocations share a pixel, each reading one 8-channel vector of the
// 128-channel chunk, so a subgroup's load covers whole pixels' contiguous
// channels; each invocation keeps CVL_PPT pixels' partial sums of its channels,
// and an output's 16 partial sums meet through shared memory at the end (no
// subgroup operations: any subgroup size).  The chunk's weights are staged as
// [channel % 8][channel / 8][co / 4] vec4s: a lane group reads 16 consecutive
// vec4s (no bank conflicts).
const bool CV_LANES = (MODE & DK_VK_CONV_MODE_LANES) != 0;
const int CVL_L = 16, CVL_PPT = 4, CVL_TILE = 256 / CVL_L * CVL_PPT; // 64 pixels per workgroup
const int CVL_RLD = CVL_TILE * 4 + 1; // partial-sum rows (one per lane), padded against bank conflicts

void cv_narrow_lanes(int M, int N) {
    int t = int(gl_LocalInvocationIndex), lane = t % CVL_L, slot = t / CVL_L;
    int m0 = int(group_x()) * CVL_TILE;
    int cing = dkp.p.cin_per_group, th_n = dkp.p.taps_h, tw_n = dkp.p.taps_w;
    int ows = dkp.p.rows_w, ohs = dkp.p.rows_h;
    int ush = CV_UP2 ? 1 : 0;
    int hu = dkp.p.in_h << ush, wu = dkp.p.in_w << ush;
    uint xs_h = uint(dkp.p.x.stride[2]), xs_w = uint(dkp.p.x.stride[3]);
    uint wbase = uint(dkp.p.weight.view.offset) + uint(cv_g) * uint(dkp.p.weight.group_stride);
    uint ws_co = uint(dkp.p.weight.view.stride[0]), ws_ci = uint(dkp.p.weight.view.stride[1]);
    const int nch = 4 * CVN_NV;
    int ih0[CVL_PPT], iw0[CVL_PPT];
    uint xb[CVL_PPT];
    vec4 acc0[CVL_PPT], acc1[CVL_PPT];
    [[unroll]] for (int j = 0; j < CVL_PPT; j++) {
        int m = m0 + slot * CVL_PPT + j;
        int mm = m < M ? m : 0;
        int q = mm / ows;
        int ow = mm - q * ows;
        int nb = q / ohs;
        int oh = q - nb * ohs;
        // rows past the end: an input row no tap reaches
        ih0[j] = m < M ? oh * dkp.p.stride_h + dkp.p.input_offset_h : -(1 << 29);
        iw0[j] = ow * dkp.p.stride_w + dkp.p.input_offset_w;
        xb[j] = uint(dkp.p.x.offset) + uint(nb) * uint(dkp.p.x.stride[0]) + uint(cv_g * cing) * uint(dkp.p.x.stride[1]);
        acc0[j] = vec4(0.0);
        acc1[j] = vec4(0.0);
    }
    for (int th = 0; th < th_n; th++) {
        for (int tw = 0; tw < tw_n; tw++) {
            bool ok[CVL_PPT];
            uint xp[CVL_PPT];
            [[unroll]] for (int j = 0; j < CVL_PPT; j++) {
                int ihu = ih0[j] + th * dkp.p.dilation_h, iwu = iw0[j] + tw * dkp.p.dilation_w;
                ok[j] = ihu >= 0 && iwu >= 0 && ihu < hu && iwu < wu;
                xp[j] = xb[j] + uint(ok[j] ? ihu >> ush : 0) * xs_h + uint(ok[j] ? iwu >> ush : 0) * xs_w;
            }
            uint wt = wbase + uint(dkp.p.tap_start_h + th * dkp.p.tap_step_h) * uint(dkp.p.weight.view.stride[2]) +
                      uint(dkp.p.tap_start_w + tw * dkp.p.tap_step_w) * uint(dkp.p.weight.view.stride[3]);
            for (int c0 = 0; c0 < cing; c0 += CVN_CI) {
                barrier(); // the previous chunk's readers are done
                for (int e = t; e < CVN_CI * nch; e += 256) {
                    int cl = e / nch, co = e % nch, f = (((cl & 7) * CVL_L + (cl >> 3)) * CVN_NV + (co >> 2)) * 4 + (co & 3);
                    gemm_sm[f >> 2][f & 3] = c0 + cl < cing && co < N ? Wt_ld(wt + uint(c0 + cl) * ws_ci + uint(co) * ws_co) : 0.0;
                }
                barrier();
                int c = c0 + lane * 8;
                if (c >= cing) continue; // past the last channel (cing % 8 == 0: whole vectors)
                float vx[CVL_PPT][8]; // all the pixels' loads in flight before the first use
                [[unroll]] for (int j = 0; j < CVL_PPT; j++) {
                    float v[8];
                    if (ok[j]) {
                        GEMM_LOAD8(xv, xp[j] + uint(c), v);
                    } else {
                        [[unroll]] for (int e = 0; e < 8; e++) v[e] = 0.0;
                    }
                    vx[j] = v;
                }
                [[unroll]] for (int e = 0; e < 8; e++) {
                    vec4 w0 = gemm_sm[(e * CVL_L + lane) * CVN_NV];
                    vec4 w1 = CVN_NV > 1 ? gemm_sm[(e * CVL_L + lane) * CVN_NV + 1] : vec4(0.0);
                    [[unroll]] for (int j = 0; j < CVL_PPT; j++) {
                        acc0[j] += vx[j][e] * w0;
                        if (CVN_NV > 1) acc1[j] += vx[j][e] * w1;
                    }
                }
            }
        }
    }
    // Partial sums [lane][pixel][co % 4] through shared memory, one half of
    // the channels at a time; invocation t finishes output (pixel t / 4, co).
    for (int h = 0; h < CVN_NV; h++) {
        barrier();
        [[unroll]] for (int j = 0; j < CVL_PPT; j++) {
            vec4 a = h == 0 ? acc0[j] : acc1[j];
            [[unroll]] for (int c = 0; c < 4; c++) {
                int f = lane * CVL_RLD + (slot * CVL_PPT + j) * 4 + c;
                gemm_sm[f >> 2][f & 3] = a[c];
            }
        }
        barrier();
        float s = 0.0;
        [[unroll]] for (int l = 0; l < CVL_L; l++) {
            int f = l * CVL_RLD + t;
            s += gemm_sm[f >> 2][f & 3];
        }
        int m = m0 + t / 4, co = 4 * h + t % 4;
        if (m < M && co < N) {
            gemm_out_row(m);
            gemm_store(m, co, s);
        }
    }
}

void main() {
    cv_g = int(gl_WorkGroupID.z);
    if (CV_LANES) {
        cv_narrow_lanes(dkp.p.m, dkp.p.n);
        return;
    }
    if (CV_NARROW) {
        cv_narrow(dkp.p.m, dkp.p.n);
        return;
    }
    gemm_run(dkp.p.m, dkp.p.n, dkp.p.k, int(group_x()) * GEMM_BM,
             int(gl_WorkGroupID.y) * GEMM_BN);
}
