#version 450
#extension GL_GOOGLE_include_directive : require
// Tensor-core implicit-GEMM convolution for the common fast case: f16 data,
// channels-last input (ci stride 1), Cin a multiple of 32, and weights pre-packed
// by the host to f16 [KH][KW][Cin][Cout] (co stride 1).  With k = (tap_h, tap_w,
// ci), ci fastest (the portable conv's k order), a 32-deep slice of k lies inside
// one tap, so each output pixel's slice is 64 contiguous bytes of the input and
// each weight row 2*Cout contiguous bytes: the loads are 16-byte vectors with one
// address computation per row and slice, not per element.
// Rows m = (n, oh, ow) of the output sub-grid, columns = output channels of group
// gl_WorkGroupID.z; the sub-grid and tap parameters are those of conv2d.comp, so
// each stride phase of conv_transpose2d runs here too.  Tile: 128x128 per workgroup of 8
// subgroups, each a 32x64 block of 16x16x16 fp16 fragments, fp32 accumulation.
#include "dk_common.glsl"
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#ifdef DK_COOPMAT_KHR
#extension GL_KHR_cooperative_matrix : require
#define CM_A coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA>
#define CM_B coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB>
#define CM_C coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
#define CM_LOAD(m, buf, off, ld) coopMatLoad(m, buf, off, ld, gl_CooperativeMatrixLayoutRowMajor)
#define CM_STORE(m, buf, off, ld) coopMatStore(m, buf, off, ld, gl_CooperativeMatrixLayoutRowMajor)
#define CM_MAD(a, b, c) coopMatMulAdd(a, b, c)
#else
#extension GL_NV_cooperative_matrix : require
#define CM_A fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define CM_B fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define CM_C fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define CM_LOAD(m, buf, off, ld) coopMatLoadNV(m, buf, off, ld, false)
#define CM_STORE(m, buf, off, ld) coopMatStoreNV(m, buf, off, ld, false)
#define CM_MAD(a, b, c) coopMatMulAddNV(a, b, c)
#endif

#define BM 128
#define BN 128
#define BK 32
#define LDA (BK + 8)
#define LDB (BN + 8)

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer XV { uvec4 v[]; } xv;       // f16 input, 8 per vector
layout(std430, set = 0, binding = 1) readonly buffer WV { uvec4 v[]; } wv;       // packed f16 weights
DK_IO(2, Bias, DT)
DK_IO(3, Res, DT)
DK_IO(4, Y, DT)

shared float16_t sa[BM * LDA];
shared float16_t sb[BK * LDB];
shared float sc[8 * 256];

void main() {
    int t = int(gl_LocalInvocationIndex);
    int warp = t >> 5, lane = t & 31;
    int wm = (warp & 3) * 32, wn = (warp >> 2) * 64;
    int g = int(gl_WorkGroupID.z);
    int M = P(DK_VKP_CV_M), N = P(DK_VKP_CV_NC), K = P(DK_VKP_CV_K), cing = P(DK_VKP_CV_CING);
    int m0 = int(group_x()) * BM, n0 = int(gl_WorkGroupID.y) * BN;
    int tw_n = P(DK_VKP_CV_TW), ups = P(DK_VKP_CV_UPS);
    int hu = P(DK_VKP_CV_H) * ups, wu = P(DK_VKP_CV_W) * ups;

    // A: this invocation stages half of row ar's 32-element slice (2 vectors).
    int ar = t >> 1, ahalf = (t & 1) * 2;
    int am = m0 + ar;
    int an = 0, aih0 = 0, aiw0 = 0;
    if (am < M) {
        int ows = P(DK_VKP_CV_OWS), ohs = P(DK_VKP_CV_OHS);
        int q = am / ows;
        int ow = am - q * ows;
        an = q / ohs;
        int oh = q - an * ohs;
        aih0 = oh * P(DK_VKP_CV_STRH) + P(DK_VKP_CV_OFFH);
        aiw0 = ow * P(DK_VKP_CV_STRW) + P(DK_VKP_CV_OFFW);
    }
    // Element offset (in f16) of channel g*cing of image an; vectors are 8 wide.
    uint abase = PU(DK_VKP_CV_XS + 4) + uint(an) * PU(DK_VKP_CV_XS) + uint(g * cing) * PU(DK_VKP_CV_XS + 1);
    // B: row br of the slice, vectors bc and bc+1 (16 output channels).
    int br = t >> 3, bc = (t & 7) * 2;
    uint wbase = PU(DK_VKP_CV_WGS + 5) + uint(g) * PU(DK_VKP_CV_WGS);   // packed, co stride 1

    CM_C acc[2][4];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = CM_C(0.0);

    uvec4 ra[2], rb[2];
    for (int k0 = -BK; k0 < K; k0 += BK) {
        int kn = k0 + BK;   // the slice fetched in this iteration
        if (kn < K) {
            int tap = kn / cing, ci0 = kn - tap * cing;
            int th = tap / tw_n, tw = tap - th * tw_n;
            int ihu = aih0 + th * P(DK_VKP_CV_DILH), iwu = aiw0 + tw * P(DK_VKP_CV_DILW);
            bool ok = am < M && ihu >= 0 && iwu >= 0 && ihu < hu && iwu < wu;
            uint e = abase + uint(ci0) + uint(ok ? ihu / ups : 0) * PU(DK_VKP_CV_XS + 2) +
                     uint(ok ? iwu / ups : 0) * PU(DK_VKP_CV_XS + 3);
            for (int j = 0; j < 2; j++) ra[j] = ok ? xv.v[(e >> 3) + uint(ahalf + j)] : uvec4(0);
            // This slice's weight rows: tap (kh, kw) of the kernel, channels ci0 + br.
            uint wrow = wbase + uint(P(DK_VKP_CV_KH0) + th * P(DK_VKP_CV_KSTH)) * PU(DK_VKP_CV_WGS + 3) +
                        uint(P(DK_VKP_CV_KW0) + tw * P(DK_VKP_CV_KSTW)) * PU(DK_VKP_CV_WGS + 4) +
                        uint(ci0 + br) * PU(DK_VKP_CV_WGS + 2);
            for (int j = 0; j < 2; j++) {
                int n = n0 + 8 * (bc + j);
                rb[j] = n < N ? wv.v[(wrow + uint(n)) >> 3] : uvec4(0);
            }
        }
        if (k0 >= 0) {
            for (int kk = 0; kk < BK; kk += 16) {
                CM_A a[2];
                CM_B b[4];
                for (int i = 0; i < 2; i++) CM_LOAD(a[i], sa, uint((wm + 16 * i) * LDA + kk), uint(LDA));
                for (int j = 0; j < 4; j++) CM_LOAD(b[j], sb, uint(kk * LDB + wn + 16 * j), uint(LDB));
                for (int i = 0; i < 2; i++)
                    for (int j = 0; j < 4; j++) acc[i][j] = CM_MAD(a[i], b[j], acc[i][j]);
            }
        }
        barrier();
        if (kn < K) {
            for (int j = 0; j < 2; j++) {
                int c = (ahalf + j) * 8;
                for (int w = 0; w < 4; w++) {
                    f16vec2 h = unpackFloat2x16(ra[j][w]);
                    sa[ar * LDA + c + 2 * w] = h.x;
                    sa[ar * LDA + c + 2 * w + 1] = h.y;
                }
                int cb = (bc + j) * 8;
                for (int w = 0; w < 4; w++) {
                    f16vec2 h = unpackFloat2x16(rb[j][w]);
                    sb[br * LDB + cb + 2 * w] = h.x;
                    sb[br * LDB + cb + 2 * w + 1] = h.y;
                }
            }
        }
        barrier();
    }

    // Epilogue per fragment: spill to this subgroup's shared slot, then each lane
    // applies bias, activation, scales and the residual to 8 elements.
    int ows = P(DK_VKP_CV_OWS), ohs = P(DK_VKP_CV_OHS);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) {
            CM_STORE(acc[i][j], sc, uint(warp * 256), 16u);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            for (int r = 0; r < 8; r++) {
                int e = lane + 32 * r;
                int m = m0 + wm + 16 * i + (e >> 4), n = n0 + wn + 16 * j + (e & 15);
                if (m >= M || n >= N) continue;
                int q = m / ows;
                int ows_i = m - q * ows;
                int nb = q / ohs;
                int ohs_i = q - nb * ohs;
                uint oh = uint(P(DK_VKP_CV_OH0) + ohs_i * P(DK_VKP_CV_OSTH));
                uint ow = uint(P(DK_VKP_CV_OW0) + ows_i * P(DK_VKP_CV_OSTW));
                uint co = uint(g * N + n);
                float v = sc[warp * 256 + e];
                if ((FLAGS & 1) != 0) v += Bias_ld(PU(DK_VKP_CV_BS + 1) + co * PU(DK_VKP_CV_BS));
                v = PF(DK_VKP_CV_OSCALE) * dk_act(v);
                if ((FLAGS & 2) != 0)
                    v += PF(DK_VKP_CV_RSCALE) * Res_ld(PU(DK_VKP_CV_RS + 4) + uint(nb) * PU(DK_VKP_CV_RS) +
                                                       co * PU(DK_VKP_CV_RS + 1) + oh * PU(DK_VKP_CV_RS + 2) +
                                                       ow * PU(DK_VKP_CV_RS + 3));
                Y_st(PU(DK_VKP_CV_YS + 4) + uint(nb) * PU(DK_VKP_CV_YS) + co * PU(DK_VKP_CV_YS + 1) +
                         oh * PU(DK_VKP_CV_YS + 2) + ow * PU(DK_VKP_CV_YS + 3),
                     v);
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();
        }
}
