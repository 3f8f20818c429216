/* Implicit GEMM for conv2d, conv_transpose2d (one launch per stride phase) and
 * matmul/linear, on the tile abstraction.  Block: 64 x 64 outputs, 256 threads;
 * each K step of 16 gathers A and B into shared memory (raw storage values, zero
 * outside the problem: padding, phase edges, partial tiles), then every wave
 * multiplies its fragments.  The epilogue (bias, activation, scales, residual)
 * is applied on the accumulators before the only store of y. */
#include "dk_tile.h"
#include "../hip_kargs.h"

#define DKG_LDA (DKH_GEMM_BK + 2)
#define DKG_LDB (DKH_GEMM_BN + 2)

/* A(m, k) of batch z, as a raw element (0 outside). */
template <class S>
DKP_DEV S dkg_load_a(const dkh_gemm_args &p, dkh_i64 z, dkh_i64 m, dkh_i64 k) {
    const S *a = (const S *)p.a;
    if (m >= p.M || k >= p.K) return (S)0;
    if (p.mode == DKH_GEMM_MATMUL) return a[z * p.a_s[0] + m * p.a_s[1] + k * p.a_s[2]];
    {
        /* 32-bit index arithmetic (every per-dimension index fits), 64-bit offsets */
        int g = (int)(z % p.groups), wt = (int)p.w.taps, taps = (int)p.h.taps * wt, kk = (int)k;
        int ci = kk / taps, t = kk - ci * taps, th = t / wt, tw = t - th * wt;
        dkh_i64 kh = p.h.k0 + th * p.h.k_step, kw = p.w.k0 + tw * p.w.k_step;
        dkh_i64 i0 = p.transposed ? g * p.cin_g + ci : g * p.M + m;
        dkh_i64 i1 = p.transposed ? m : ci;
        return a[i0 * p.a_s[0] + i1 * p.a_s[1] + kh * p.a_s[2] + kw * p.a_s[3]];
    }
}

/* B(k, n) of batch z: the matmul operand or the implicit im2col of the phase. */
template <class S>
DKP_DEV S dkg_load_b(const dkh_gemm_args &p, dkh_i64 z, dkh_i64 k, dkh_i64 n) {
    const S *b = (const S *)p.b;
    if (k >= p.K || n >= p.N) return (S)0;
    if (p.mode == DKH_GEMM_MATMUL) return b[z * p.b_s[0] + k * p.b_s[1] + n * p.b_s[2]];
    {
        int g = (int)(z % p.groups), img = (int)(z / p.groups), wt = (int)p.w.taps, taps = (int)p.h.taps * wt;
        int kk = (int)k, ci = kk / taps, t = kk - ci * taps, th = t / wt, tw = t - th * wt;
        int oc = (int)p.w.out_count, nn = (int)n, ih = nn / oc, iw = nn - ih * oc;
        dkh_i64 y = ih * p.h.in_step + p.h.off0 + th * p.h.off_step;
        dkh_i64 x = iw * p.w.in_step + p.w.off0 + tw * p.w.off_step;
        if (y < 0 || y >= p.h.in_size || x < 0 || x >= p.w.in_size) return (S)0;
        if (p.ups != 1) {
            y /= p.ups;
            x /= p.ups;
        }
        return b[img * p.b_s[0] + (g * p.cin_g + ci) * p.b_s[1] + y * p.b_s[2] + x * p.b_s[3]];
    }
}

template <int DT>
DKP_DEV void dkg_store(const dkh_gemm_args &p, dkh_i64 z, dkh_i64 m, dkh_i64 n, float acc) {
    dkh_i64 yo, ro, bo;
    if (m >= p.M || n >= p.N) return;
    if (p.mode == DKH_GEMM_MATMUL) {
        yo = z * p.y_s[0] + m * p.y_s[1] + n * p.y_s[2];
        ro = z * p.r_s[0] + m * p.r_s[1] + n * p.r_s[2];
        bo = n * p.bias_s;
    } else {
        dkh_i64 g = z % p.groups, img = z / p.groups, co = g * p.M + m;
        dkh_i64 oh = p.h.out_start + (n / p.w.out_count) * p.h.out_step;
        dkh_i64 ow = p.w.out_start + (n % p.w.out_count) * p.w.out_step;
        yo = img * p.y_s[0] + co * p.y_s[1] + oh * p.y_s[2] + ow * p.y_s[3];
        ro = img * p.r_s[0] + co * p.r_s[1] + oh * p.r_s[2] + ow * p.r_s[3];
        bo = co * p.bias_s;
    }
    {
        float v = acc + (p.has_bias ? dkp_load(p.bias, p.bias_dt, bo) : 0.0f);
        v = p.out_scale * dkp_act(p.act, v);
        if (p.has_res) v += p.res_scale * dkp_load(p.res, DT, ro);
        v = dkp_act(p.post_act, v);
        ((typename dkp_store<DT>::T *)p.y)[yo] = dkp_conv<DT>::from(v);
    }
}

template <int FAM, int DT>
DKP_DEV void dkg_gemm(const dkh_gemm_args &p) {
    typedef typename dkp_store<DT>::T S;
    typedef dkt_tile<FAM> F;
    const int BM = DKH_GEMM_BM, BN = DKH_GEMM_BN, BK = DKH_GEMM_BK, NT = DKH_THREADS;
    const int NW = NT / F::WAVE, FN_PER_ROW = BN / F::N, NF = (BM / F::M) * (BN / F::N) / NW;
    DKP_SHARED S As[BM * DKG_LDA];
    DKP_SHARED S Bs[BK * DKG_LDB];
    const int tid = dkp_tid(), lane = tid % F::WAVE, wave = tid / F::WAVE;
    const dkh_i64 n0 = dkp_bid_x() * BN, m0 = dkp_bid_y() * BM, z = dkp_bid_z();
    float acc[NF][F::CR];
    F tile;
#pragma unroll
    for (int f = 0; f < NF; f++)
#pragma unroll
        for (int i = 0; i < F::CR; i++) acc[f][i] = 0.0f;

    for (dkh_i64 k0 = 0; k0 < p.K; k0 += BK) {
#pragma unroll
        for (int j = 0; j < BM * BK / NT; j++) {
            int e = tid + j * NT, m = e / BK, k = e % BK;
            As[m * DKG_LDA + k] = dkg_load_a<S>(p, z, m0 + m, k0 + k);
        }
#pragma unroll
        for (int j = 0; j < BK * BN / NT; j++) {
            int e = tid + j * NT, k = e / BN, n = e % BN;
            Bs[k * DKG_LDB + n] = dkg_load_b<S>(p, z, k0 + k, n0 + n);
        }
        dkp_sync();
#pragma unroll
        for (int kk = 0; kk < BK; kk += F::K)
#pragma unroll
            for (int f = 0; f < NF; f++) {
                int idx = wave + f * NW, fm = (idx / FN_PER_ROW) * F::M, fn = (idx % FN_PER_ROW) * F::N;
                tile.template mma<DT>(acc[f], As + fm * DKG_LDA + kk, DKG_LDA, 1, Bs + kk * DKG_LDB + fn, DKG_LDB, 1,
                                      lane);
            }
        dkp_sync();
    }
#pragma unroll
    for (int f = 0; f < NF; f++) {
        int idx = wave + f * NW, fm = (idx / FN_PER_ROW) * F::M, fn = (idx % FN_PER_ROW) * F::N;
#pragma unroll
        for (int i = 0; i < F::CR; i++) {
            int r, c;
            dkt_c_map(FAM, lane, i, &r, &c);
            dkg_store<DT>(p, z, m0 + fm + r, n0 + fn + c, acc[f][i]);
        }
    }
}

DKP_KERNEL(DKH_THREADS) dkk_gemm_f32(dkh_gemm_args p) { dkg_gemm<DKT_FMA_FAM, 1>(p); }
DKP_KERNEL(DKH_THREADS) dkk_gemm_f16(dkh_gemm_args p) { dkg_gemm<DKT_GEMM_F16, 2>(p); }
DKP_KERNEL(DKH_THREADS) dkk_gemm_bf16(dkh_gemm_args p) { dkg_gemm<DKT_GEMM_BF16, 3>(p); }

#undef DKG_LDA
#undef DKG_LDB
