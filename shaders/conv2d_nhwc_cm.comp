#version 450
#extension GL_GOOGLE_include_directive : require
// Tensor-core implicit-GEMM convolution for the common fast case: f16 data
// (or bf16 in the KHR bf16 module), channels-last input (ci stride 1), Cin a
// multiple of 32, and weights pre-packed by the host to the data's dtype,
// [KH][KW][Cin][Cout] (co stride 1; in the narrow module, for Cout <= 8,
// Cout padded to 16).  With k = (tap_h, tap_w,
// ci), ci fastest (the packed weights' order), a K slice (16 or 32 deep) lies
// inside one tap, so each output pixel's slice is contiguous in the input and
// each weight row contiguous in the packed weights: the loads are 16-byte
// vectors with one address computation per row and slice, not per element.
// Rows m = (n, oh, ow) of the output sub-grid, columns = output channels; the
// sub-grid and tap parameters are those of conv2d.comp, so each stride phase of
// conv_transpose2d runs here too.  Tiles, pipelining and fragments:
// dk_gemm_coopmat.glsl.  DK_VK_CM_MODE_VEC_OUT (set by the host when y, and the
// residual if any, have their channels contiguous and 16-byte aligned): the
// epilogue reads and writes 8 channels per 16-byte vector.
#define DK_PARAMS dk_vk_conv_params
#include "dk_common.glsl"
#include "dk_gemm_coopmat.glsl"

layout(std430, set = 0, binding = 0) readonly buffer XV { uvec4 v[]; } xv;   // 16-bit input, 8 per vector
layout(std430, set = 0, binding = 1) readonly buffer WV { uvec4 v[]; } wv;   // packed 16-bit weights
layout(std430, set = 0, binding = 3) readonly buffer RV { uvec4 v[]; } rv;   // residual as vectors
layout(std430, set = 0, binding = 4) writeonly buffer YV { uvec4 v[]; } yv;  // output as vectors
layout(std430, set = 0, binding = 5) readonly buffer CV { uvec4 v[]; } cv;   // DK_VK_CM_MODE_CACHE: the rows above x
DK_IO(2, Bias, DT2)   // the bias: DT, or f32 (DT2, set by the host)
DK_IO(3, Res, DT)
DK_IO(4, Y, DT)

// Output row m -> element offset of its pixel (channel 0) in a tensor with
// strides s[0..3] (n, c, h, w) and offset s[4], through the sub-grid mapping.
uint cv_pixel(int m, int ows, int ohs, dk_vk_view4 v) {
    int q = m / ows;
    int ow = m - q * ows;
    int nb = q / ohs;
    int oh = q - nb * ohs;
    uint ohy = uint(dkp.p.out_start_h + oh * dkp.p.out_step_h);
    uint owy = uint(dkp.p.out_start_w + ow * dkp.p.out_step_w);
    return uint(v.offset) + uint(nb) * uint(v.stride[0]) + ohy * uint(v.stride[2]) + owy * uint(v.stride[3]);
}

// Per-invocation fetch state, set up once in main(): the input pixel of tap
// (0, 0) of this invocation's A rows, the packed-weight column, the strides, and
// the slice to fetch next: tap (th, tw), channels ci0 .. ci0 + BK.
int cv_aih0[CMG_LMAX], cv_aiw0[CMG_LMAX];
uint cv_abase[CMG_LMAX];
bool cv_arow[CMG_LMAX];
bool cv_bcol;
uint cv_wbase, cv_ws_ci, cv_ws_kh, cv_ws_kw, cv_xs_h, cv_xs_w;
int cv_th_n, cv_tw_n, cv_ush, cv_hu, cv_wu, cv_dilh, cv_dilw, cv_kh0, cv_kw0, cv_ksth, cv_kstw, cv_t;
int cv_th = 0, cv_tw = 0, cv_ci0 = 0;

// The tile's bias values (0 without bias or past N), loaded before the K loop
// so that their latency hides behind it (loaded per fragment column in the
// epilogue, the latency was exposed and the epilogue a large part of the
// wide, shallow convs).
shared float cv_bias[CMG_BN];

// DK_VK_CM_MODE_FIXED (the host's conditions: vkop_conv_cm_run): the tap grid compiled
// in, 3x3, 2x2 (FIXED_2X2) or 1x1 (FIXED_1X1), or 3x1 and 2x1 (FIXED_KX1: the
// time convs of conv3d) at step 1 and dilation 1 without upsample, and the tap loop unrolled, so that tap offsets, the halo
// schedule's branches and the slice buffer's parity are static (the
// division, counters and branches per step were on the path from each barrier
// to the next products; docs/conv.md has the measurement).  3x3 and 1x1 taps start
// at kernel offset 0; 2x2 ones (the phases of a fused upsample) keep theirs.
// (The channel-slice count is not compiled in: it measured no faster.)
const bool CV_FIXED = ((MODE >> DK_VK_CM_MODE_FIXED_SHIFT) & 1) != 0;
const int CV_FT = 3 - ((MODE >> DK_VK_CM_MODE_FIXED_2X2_SHIFT) & 1) - 2 * ((MODE >> DK_VK_CM_MODE_FIXED_1X1_SHIFT) & 1);   // taps along h when CV_FIXED
// FIXED_KX1: one tap along w (the KT x 1 time convs of conv3d, time as the rows); else as many as along h
const int CV_FTW = ((MODE >> DK_VK_CM_MODE_FIXED_KX1_SHIFT) & 1) != 0 ? 1 : CV_FT;
// DK_VK_CM_MODE_VEC_OUT and _RESIDUAL (the host sets them from DK_VK_FLAG_VEC_EPILOGUE and _RESIDUAL): the
// epilogue's 16-byte vectors and the residual compiled in, so that each
// pipeline holds one epilogue: the driver's code generation pays for the
// alternatives it never runs (docs/vulkan-backend.md).
const bool CV_VEC = ((MODE >> DK_VK_CM_MODE_VEC_OUT_SHIFT) & 1) != 0;
const bool CV_RES = ((MODE >> DK_VK_CM_MODE_RESIDUAL_SHIFT) & 1) != 0;
// DK_VK_CM_MODE_CH_FAST (the host sets it for more than one channel tile): the
// workgroups of one pixel tile, all its output-channel tiles, are consecutive
// in the launch order, so that they read the tile's input rows from the L2
// once.  Launched pixel tiles first, a conv whose input outgrows the L2 read
// it from memory once per channel tile (a 1x1 conv, with a ninth of a 3x3's
// products per input byte, then waited on memory).  The grid stays
// (pixel tiles, channel tiles); launch index L = x + y * pixel tiles maps to
// pixel tile L / channel tiles, channel tile L % channel tiles: one-to-one on
// the grid, also when the host splits x over dispatches (group_x()).
const bool CV_CH_FAST = ((MODE >> DK_VK_CM_MODE_CH_FAST_SHIFT) & 1) != 0;
// DK_VK_CM_MODE_CACHE (dk__vk_conv3d_in_place: a causal time conv, time as
// the input's rows): input rows -cache_rows .. -1 are the cache's frames,
// read where they are instead of from a concatenated copy; rows above them
// and below x are zeros.  One image per dispatch, so the cache's element
// offset of a row is x's minus x's image offset plus the cache's.
const bool CV_CACHE = ((MODE >> DK_VK_CM_MODE_CACHE_SHIFT) & 1) != 0;

// Loads B (weights) of tap (th, tw), channels ci0 .. ci0 + BK into registers.
void cv_fetch_b_at(out uvec4 rb[2], out uvec4 rb2[2], int th, int tw, int ci0) {
    uint wrow = cv_wbase + uint(cv_kh0 + th * cv_ksth) * cv_ws_kh + uint(cv_kw0 + tw * cv_kstw) * cv_ws_kw +
                uint(ci0) * cv_ws_ci;
#ifdef CMG_NARROW_TILE
    rb[0] = cv_bcol && cmg_b_row(cv_t, 0) < CMG_BK ? wv.v[(wrow + uint(cmg_b_row(cv_t, 0)) * cv_ws_ci) >> 3] : uvec4(0);
#else
    [[unroll]] for (int p = 0; p < CMG_LB; p++)
        CMG_SET(rb, rb2, p, cv_bcol ? wv.v[(wrow + uint(cmg_b_row(cv_t, p)) * cv_ws_ci) >> 3] : uvec4(0))
#endif
}

// Loads A and B of tap (th, tw), channels ci0 .. ci0 + BK into registers
// (zeros outside the input).
void cv_fetch_at(out uvec4 ra[2], out uvec4 ra2[2], out uvec4 rb[2], out uvec4 rb2[2], int th, int tw, int ci0) {
    int ihu = th * cv_dilh, iwu = tw * cv_dilw;
    [[unroll]] for (int p = 0; p < CMG_LA; p++) {
        int ih = cv_aih0[p] + ihu, iw = cv_aiw0[p] + iwu;
        if (CV_CACHE) {
            bool okw = cv_arow[p] && iw >= 0 && iw < cv_wu;
            bool okx = okw && ih >= 0 && ih < cv_hu, okc = okw && ih < 0 && ih >= -dkp.p.cache_rows;
            uint col = uint(okw ? iw : 0) * cv_xs_w + uint(ci0) + cv_abase[p] - uint(dkp.p.x.offset);
            uint ex = uint(dkp.p.x.offset) + uint(okx ? ih : 0) * cv_xs_h + col;
            uint ec = uint(dkp.p.cache_offset) + uint(okc ? ih + dkp.p.cache_rows : 0) * uint(dkp.p.cache_stride_h) + col;
            CMG_SET(ra, ra2, p, okx ? xv.v[ex >> 3] : okc ? cv.v[ec >> 3] : uvec4(0))
        } else {
            bool ok = cv_arow[p] && ih >= 0 && iw >= 0 && ih < cv_hu && iw < cv_wu;
            uint e = cv_abase[p] + uint(ci0) + uint(ok ? ih >> cv_ush : 0) * cv_xs_h + uint(ok ? iw >> cv_ush : 0) * cv_xs_w;
            CMG_SET(ra, ra2, p, ok ? xv.v[e >> 3] : uvec4(0))
        }
    }
    cv_fetch_b_at(rb, rb2, th, tw, ci0);
}

// The fetch counters' next slice: taps inside, channel slices outside, so that
// consecutive slices read neighbouring pixels of the same channels (meant for
// L1 reuse; no measurable change on the H100).  The sum may go in any k order.
void cv_advance() {
    cv_tw++;
    if (cv_tw == cv_tw_n) {
        cv_tw = 0;
        cv_th++;
        if (cv_th == cv_th_n) {
            cv_th = 0;
            cv_ci0 += CMG_BK;
        }
    }
}

// Loads the next slice (A and B, or B only) into registers and advances.
void cv_fetch(out uvec4 ra[2], out uvec4 ra2[2], out uvec4 rb[2], out uvec4 rb2[2]) {
    cv_fetch_at(ra, ra2, rb, rb2, cv_th, cv_tw, cv_ci0);
    cv_advance();
}
void cv_fetch_b(out uvec4 rb[2], out uvec4 rb2[2]) {
    cv_fetch_b_at(rb, rb2, cv_th, cv_tw, cv_ci0);
    cv_advance();
}

// Halo staging (DK_VK_CM_MODE_HALO; the host's conditions: vkop_conv_cm_run in
// vk_conv.c): the tile's 128 rows are consecutive pixels of one sub-grid row,
// input step 1 along w, 2-3 taps each way and at least 6 in all (2x2 taps
// measured slower: every step then refills).  Each channel slice's input rows
// (one per tap row, 127 + TW pixels) are staged once for all its taps, not
// once per tap: at 3x3, 3x fewer A loads and shared stores (the staging
// stores and global loads, not the products, bound this tile: docs/conv.md).
// Tap row r lives in cmg_sa rows r * 130 ..;
// tap (th, tw) reads 128 rows from pixel tw * DILW - min(0, (TW - 1) * DILW).
// A tap row is refilled in two halves on two steps, as soon as its last tap
// of the previous slice is done (the schedule: main()).
int cv_h_n, cv_h_ih0, cv_h_iw0;   // staged pixels per tap row, input row of tap row 0, input column of pixel 0
uint cv_h_base;                   // element offset of this tile's image

// Half hf of tap row r of channel slice ci0 .. ci0 + 31 into registers:
// vector v = t + 128 p is pixel v / 4, channels (v % 4) * 8 .. + 8.
void cv_halo_fetch(out uvec4 ra[2], out uvec4 ra2[2], int r, int hf, int ci0) {
    int h0 = (cv_h_n + 1) / 2;
    int q0 = hf * h0, nv = (hf == 0 ? h0 : cv_h_n - h0) * CMG_VA;
    int ih = cv_h_ih0 + r * cv_dilh;
    [[unroll]] for (int p = 0; p < 3; p++) {
        int v = cv_t + p * CMG_INV;
        int iw = cv_h_iw0 + q0 + v / CMG_VA;
        bool ok = v < nv && ih >= 0 && iw >= 0 && ih < cv_hu && iw < cv_wu;
        uint e = cv_h_base + uint(ci0 + 8 * (v % CMG_VA)) + uint(ok ? ih >> cv_ush : 0) * cv_xs_h +
                 uint(ok ? iw >> cv_ush : 0) * cv_xs_w;
        CMG_SET(ra, ra2, p, ok ? xv.v[e >> 3] : uvec4(0))
    }
}

void cv_halo_stage(uvec4 ra[2], uvec4 ra2[2], int r, int hf) {
    int h0 = (cv_h_n + 1) / 2;
    int q0 = hf * h0, nv = (hf == 0 ? h0 : cv_h_n - h0) * CMG_VA;
    [[unroll]] for (int p = 0; p < 3; p++) {
        int v = cv_t + p * CMG_INV;
        if (v < nv) cmg_sa[(r * CMG_HALO_ROWS + q0 + v / CMG_VA) * CMG_LDA + v % CMG_VA] = CMG_GET(ra, ra2, p);
    }
}

// Step s of the halo loop: tap j of channel slice ci (nci slices, tap rows
// staged from column tmin; the schedule: main()).
void cv_halo_step(int s, int j, int ci, int slices, int nci, int tmin, int wm, int wn, inout uvec4 ra[2],
                  inout uvec4 ra2[2], inout uvec4 rb[2], inout uvec4 rb2[2]) {
    int th = j / cv_tw_n, tw = j - th * cv_tw_n;
    int rr = -1, hf = tw, cia = ci + 1;
    if (j < 2) {
        rr = cv_th_n - 1;
        hf = j;
        cia = ci;
    } else if (tw < 2 && ci + 1 < nci) {
        rr = th - 1;
    }
    if (s + 1 < slices) {
        if (CV_FIXED) {
            int jn = j + 1 == CV_FT * CV_FTW ? 0 : j + 1;
            cv_fetch_b_at(rb, rb2, jn / CV_FTW, jn % CV_FTW, (jn == 0 ? ci + 1 : ci) * CMG_BK);
        } else {
            cv_fetch_b(rb, rb2);
        }
    }
    if (rr >= 0) cv_halo_fetch(ra, ra2, rr, hf, cia * CMG_BK);
    cmg_compute_at(uint((th * CMG_HALO_ROWS + tw * cv_dilw - tmin + wm) * CMG_LDA), uint((s & 1) * CMG_SB + wn / 8));
    if (s + 1 < slices) cmg_stage_b((s + 1) & 1, cv_t, rb, rb2);
    if (rr >= 0) cv_halo_stage(ra, ra2, rr, hf);
    barrier();
}

void main() {
    int t = int(gl_LocalInvocationIndex);
    cv_t = t;
    int sg = int(gl_SubgroupID), lane = int(gl_SubgroupInvocationID);
    int wm = (sg % CMG_WARPS_M) * CMG_WM, wn = (sg / CMG_WARPS_M) * CMG_WN;
    int M = dkp.p.m, N = dkp.p.n, K = dkp.p.k;
    int m0 = int(group_x()) * CMG_BM, n0 = int(gl_WorkGroupID.y) * CMG_BN;
    if (CV_CH_FAST) {
        uint mt = (uint(M) + uint(CMG_BM - 1)) / uint(CMG_BM), nt = gl_NumWorkGroups.y;
        uint l = group_x() + gl_WorkGroupID.y * mt;
        m0 = int(l / nt) * CMG_BM;
        n0 = int(l % nt) * CMG_BN;
    }
    cv_th_n = CV_FIXED ? CV_FT : dkp.p.taps_h;
    cv_tw_n = CV_FIXED ? CV_FTW : dkp.p.taps_w;
    cv_ush = CV_FIXED ? 0 : dkp.p.upsample - 1;   // upsample 1 or 2: a shift
    cv_hu = dkp.p.in_h << cv_ush;
    cv_wu = dkp.p.in_w << cv_ush;
    cv_dilh = CV_FIXED ? 1 : dkp.p.dilation_h;
    cv_dilw = CV_FIXED ? 1 : dkp.p.dilation_w;
    cv_xs_h = uint(dkp.p.x.stride[2]);
    cv_xs_w = uint(dkp.p.x.stride[3]);
    int ows = dkp.p.rows_w, ohs = dkp.p.rows_h;
    [[unroll]] for (int p = 0; p < CMG_LA; p++) {
        int am = m0 + cmg_a_row(t, p);
        cv_arow[p] = am < M;
        int q = cv_arow[p] ? am / ows : 0;
        int ow = cv_arow[p] ? am - q * ows : 0;
        int an = q / ohs;
        int oh = q - an * ohs;
        cv_aih0[p] = oh * dkp.p.stride_h + dkp.p.input_offset_h;
        cv_aiw0[p] = ow * dkp.p.stride_w + dkp.p.input_offset_w;
        cv_abase[p] = uint(dkp.p.x.offset) + uint(an) * uint(dkp.p.x.stride[0]) + uint(8 * cmg_a_vec(t));
    }
    // B: packed weights, co stride 1; this invocation's column (8 channels).
    int bn = n0 + 8 * cmg_b_vec(t);
    cv_bcol = bn < N;
    cv_wbase = uint(dkp.p.weight.view.offset) + uint(bn);
    cv_ws_ci = uint(dkp.p.weight.view.stride[1]);
    cv_ws_kh = uint(dkp.p.weight.view.stride[2]);
    cv_ws_kw = uint(dkp.p.weight.view.stride[3]);
    cv_kh0 = CV_FIXED && CV_FT != 2 ? 0 : dkp.p.tap_start_h;
    cv_kw0 = CV_FIXED && CV_FT != 2 ? 0 : dkp.p.tap_start_w;
    cv_ksth = CV_FIXED ? 1 : dkp.p.tap_step_h;
    cv_kstw = CV_FIXED ? 1 : dkp.p.tap_step_w;

    if (t < CMG_BN) {   // (CMG_BN <= CMG_INV) visible after the K loop's barriers (at least one)
        int n = n0 + t;
        cv_bias[t] = (FLAGS & DK_VK_FLAG_BIAS) != 0 && n < N ? Bias_ld(uint(dkp.p.bias.offset) + uint(n) * uint(dkp.p.bias.stride)) : 0.0;
    }
    cmg_zero();
    int slices = K / CMG_BK;
    // Prefetch distance 1: slice s+1 is loaded into registers while slice s is
    // multiplied, then stored to the other slice buffer.  (Distance 2, with two
    // register sets, measured no faster on the H100.)
    uvec4 ra[2], ra2[2], rb[2], rb2[2];
    if (CMG_HALO == 0 && CV_FIXED) {
        // Slice 0, then step s = tap j of channel slice ci loads step s + 1.
        int taps = CV_FT * CV_FTW, nci = slices / taps;
        cv_fetch_at(ra, ra2, rb, rb2, 0, 0, 0);
        cmg_stage(0, t, ra, ra2, rb, rb2);
        barrier();
        for (int ci = 0; ci < nci; ci++) {
            [[unroll]] for (int j = 0; j < taps; j++) {
                int s = ci * taps + j, jn = j + 1 == taps ? 0 : j + 1;
                if (s + 1 < slices) cv_fetch_at(ra, ra2, rb, rb2, jn / CV_FTW, jn % CV_FTW, (j + 1 == taps ? ci + 1 : ci) * CMG_BK);
                cmg_compute(s & 1, wm, wn);
                if (s + 1 < slices) cmg_stage((s + 1) & 1, t, ra, ra2, rb, rb2);
                barrier();
            }
        }
    } else if (CMG_HALO == 0) {
        for (int s = -1; s < slices; s++) {
            if (s + 1 < slices) cv_fetch(ra, ra2, rb, rb2);
            if (s >= 0) cmg_compute(s & 1, wm, wn);
            if (s + 1 < slices) cmg_stage((s + 1) & 1, t, ra, ra2, rb, rb2);
            barrier();
        }
    } else {
        int q = m0 / ows;
        int nb = q / ohs;
        cv_h_n = 127 + cv_tw_n;
        cv_h_ih0 = (q - nb * ohs) * dkp.p.stride_h + dkp.p.input_offset_h;
        int tmin = min(0, (cv_tw_n - 1) * cv_dilw);
        cv_h_iw0 = (m0 - q * ows) + dkp.p.input_offset_w + tmin;
        cv_h_base = uint(dkp.p.x.offset) + uint(nb) * uint(dkp.p.x.stride[0]);
        int taps = cv_th_n * cv_tw_n, nci = slices / taps;
        // Tap rows 0 .. TH-2 of channel slice 0 (tap row TH-1 comes in steps 0 and 1)
        // and B of step 0.
        for (int r = 0; r < cv_th_n - 1; r++) {
            [[unroll]] for (int hf = 0; hf < 2; hf++) {
                cv_halo_fetch(ra, ra2, r, hf, 0);
                cv_halo_stage(ra, ra2, r, hf);
            }
        }
        cv_fetch_b(rb, rb2);
        cmg_stage_b(0, t, rb, rb2);
        barrier();
        // Step s = tap j of channel slice ci.  Refills: steps 0 and 1 stage
        // tap row TH-1 of this slice (first read at step (TH-1) TW >= 2);
        // steps (r+1) TW and (r+1) TW + 1 stage tap row r < TH-1 of the
        // next slice (its last read in this slice was step (r+1) TW - 1).
        // (B two steps ahead, in two register sets, with the loop unrolled by
        // two, measured slower.)
        if (CV_FIXED) {
            for (int ci = 0; ci < nci; ci++) {
                [[unroll]] for (int j = 0; j < CV_FT * CV_FTW; j++)
                    cv_halo_step(ci * CV_FT * CV_FTW + j, j, ci, slices, nci, tmin, wm, wn, ra, ra2, rb, rb2);
            }
        } else {
            int j = 0, ci = 0;
            for (int s = 0; s < slices; s++) {
                cv_halo_step(s, j, ci, slices, nci, tmin, wm, wn, ra, ra2, rb, rb2);
                if (++j == taps) {
                    j = 0;
                    ci++;
                }
            }
        }
    }

    // Epilogue: each fragment goes through this subgroup's shared slot; lane l
    // then owns row l / 2 and 8 channels (l % 2) * 8 of it.
    const bool vec = CV_VEC;
    int r = lane >> 1, c8 = (lane & 1) * 8;
    uint ypix[4], rpix[4];
    [[unroll]] for (int i = 0; i < CMG_FM; i++) {
        int m = min(m0 + wm + 16 * i + r, M - 1);
        ypix[i] = cv_pixel(m, ows, ohs, dkp.p.y);
        rpix[i] = CV_RES ? cv_pixel(m, ows, ohs, dkp.p.residual) : 0u;
    }
    float osc = dkp.p.out_scale, rsc = dkp.p.residual_scale;
    uint ys_c = uint(dkp.p.y.stride[1]), rs_c = uint(dkp.p.residual.stride[1]);
    // The residual vectors of all this lane's fragments, loaded at once before
    // the first spill so that their latencies overlap (one per fragment, each
    // before its spill's barriers, left most of each exposed).  16 vectors next to the
    // accumulators stay within the registers the K loop needs (242).  A lane
    // loads only the vectors it stores itself, each before its store: the
    // residual may be y's own view.
    uvec4 rws[16];
    if (vec && CV_RES) {
        [[unroll]] for (int j = 0; j < CMG_FN; j++) {
            int n = n0 + wn + 16 * j + c8;
            [[unroll]] for (int i = 0; i < CMG_FM; i++) {
                int m = m0 + wm + 16 * i + r;
                rws[j * 4 + i] = m < M && n < N ? rv.v[(rpix[i] + uint(n)) >> 3] : uvec4(0);
            }
        }
    }
    [[unroll]] for (int j = 0; j < CMG_FN; j++) {
        int n = n0 + wn + 16 * j + c8;   // N % 8 == 0: all 8 channels or none (narrow: N < 8, no vectors)
        float bias[8];
        [[unroll]] for (int c = 0; c < 8; c++) bias[c] = cv_bias[wn + 16 * j + c8 + c];
        [[unroll]] for (int i = 0; i < CMG_FM; i++) {
            int m = m0 + wm + 16 * i + r;
            cmg_spill(sg, i, j);
            if (m >= M || n >= N) continue;
            vec4 lo = cmg_spilled(sg, r, c8 >> 2), hi = cmg_spilled(sg, r, (c8 >> 2) + 1);
            float v[8] = float[8](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
            [[unroll]] for (int c = 0; c < 8; c++) v[c] = osc * dk_act(v[c] + bias[c]);
            if (vec) {
                if (CV_RES) {
                    [[unroll]] for (int c = 0; c < 4; c++) {
                        vec2 h = cm_unpack2(rws[j * 4 + i][c]);
                        v[2 * c] += rsc * h.x;
                        v[2 * c + 1] += rsc * h.y;
                    }
                }
                [[unroll]] for (int c = 0; c < 8; c++) v[c] = dk_act_post(v[c]);
                uvec4 o;
                [[unroll]] for (int c = 0; c < 4; c++) o[c] = cm_pack2(v[2 * c], v[2 * c + 1]);
                yv.v[(ypix[i] + uint(n)) >> 3] = o;
            } else {
                [[unroll]] for (int c = 0; c < 8; c++) {
#ifdef CMG_NARROW_TILE
                    if (n + c >= N) break;
#endif
                    float x = v[c];
                    if (CV_RES) x += rsc * Res_ld(rpix[i] + uint(n + c) * rs_c);
                    Y_st(ypix[i] + uint(n + c) * ys_c, dk_act_post(x));
                }
            }
        }
    }
}
