/* Flash-style attention on the tile abstraction: one block per 16 query rows of
 * one (batch, head); keys in steps of 16 with an online softmax, so the score
 * matrix never leaves the block.  Per key step:
 *   1. S = Q K^T over D in chunks of 64 staged in shared memory, the chunk's
 *      K steps spread over the waves (partial S per wave, summed after);
 *   2. online softmax per row in fp32 (running max m, running sum l); P is
 *      rounded to the storage dtype for the matrix cores;
 *   3. O = O * exp(m_old - m_new) + P V, V staged in chunks of 64 columns; each
 *      wave owns every NW-th 16 (or 8) columns of O in registers.
 * D (the Q/K width) is unbounded; DMAX bounds Dv (the O accumulators). */
#include "dk_tile.h"
#include "../hip_kargs.h"

#define DKA_LD (DKH_ATTN_DC + 2)
#define DKA_LDP (DKH_ATTN_BKV + 2)
#define DKA_NEG (-1.0e30f)

template <int FAM, int DT, int DMAX>
DKP_DEV void dka_attention(const dkh_attn_args &p) {
    typedef typename dkp_store<DT>::T S;
    typedef dkt_tile<FAM> F;
    const int BQ = DKH_ATTN_BQ, BKV = DKH_ATTN_BKV, DC = DKH_ATTN_DC, NT = DKH_THREADS;
    const int NW = NT / F::WAVE, SNF = BKV / F::N, OF = (DMAX / F::N + NW - 1) / NW;
    static_assert(F::M == BQ, "attention tiles are 16 query rows");
    DKP_SHARED S Qc[BQ * DKA_LD];
    DKP_SHARED S KVc[BKV * DKA_LD];
    DKP_SHARED float Sp[NW * BQ * BKV];
    DKP_SHARED S Ps[BQ * DKA_LDP];
    DKP_SHARED float row_m[BQ], row_l[BQ], row_a[BQ];
    const int tid = dkp_tid(), lane = tid % F::WAVE, wave = tid / F::WAVE;
    const dkh_i64 q0 = dkp_bid_x() * BQ, h = dkp_bid_y(), b = dkp_bid_z();
    const S *Q = (const S *)p.q + b * p.q_s[0] + h * p.q_s[1];
    const S *K = (const S *)p.k + b * p.k_s[0] + h * p.k_s[1];
    const S *V = (const S *)p.v + b * p.v_s[0] + h * p.v_s[1];
    float acc[OF][F::CR];
    F tile;
#pragma unroll
    for (int f = 0; f < OF; f++)
#pragma unroll
        for (int i = 0; i < F::CR; i++) acc[f][i] = 0.0f;
    if (tid < BQ) {
        row_m[tid] = DKA_NEG;
        row_l[tid] = 0.0f;
    }

    for (dkh_i64 kv0 = 0; kv0 < p.nkv; kv0 += BKV) {
        float sacc[SNF][F::CR];
#pragma unroll
        for (int f = 0; f < SNF; f++)
#pragma unroll
            for (int i = 0; i < F::CR; i++) sacc[f][i] = 0.0f;
        /* 1. partial S per wave over its K steps of each D chunk */
        for (dkh_i64 dc = 0; dc < p.d; dc += DC) {
#pragma unroll
            for (int j = 0; j < BQ * DC / NT; j++) {
                int e = tid + j * NT, r = e / DC, c = e % DC;
                dkh_i64 qi = q0 + r, ki = kv0 + r, d = dc + c;
                Qc[r * DKA_LD + c] = qi < p.nq && d < p.d ? Q[qi * p.q_s[2] + d * p.q_s[3]] : (S)0;
                KVc[r * DKA_LD + c] = ki < p.nkv && d < p.d ? K[ki * p.k_s[2] + d * p.k_s[3]] : (S)0;
            }
            dkp_sync();
            for (int s = wave; s < DC / F::K; s += NW)
#pragma unroll
                for (int f = 0; f < SNF; f++)
                    tile.template mma<DT>(sacc[f], Qc + s * F::K, DKA_LD, 1, KVc + f * F::N * DKA_LD + s * F::K, 1,
                                          DKA_LD, lane);
            dkp_sync();
        }
#pragma unroll
        for (int f = 0; f < SNF; f++)
#pragma unroll
            for (int i = 0; i < F::CR; i++) {
                int r, c;
                dkt_c_map(FAM, lane, i, &r, &c);
                Sp[wave * BQ * BKV + r * BKV + f * F::N + c] = sacc[f][i];
            }
        dkp_sync();
        /* 2. sum the partials, scale, mask; then the online softmax per row */
        if (tid < BQ * BKV) {
            float s = 0.0f;
            for (int w = 0; w < NW; w++) s += Sp[w * BQ * BKV + tid];
            Sp[tid] = kv0 + tid % BKV < p.nkv ? s * p.scale : DKA_NEG;
        }
        dkp_sync();
        if (tid < BQ) {
            float mx = row_m[tid], m_new, alpha, sum = 0.0f;
            for (int c = 0; c < BKV; c++) mx = Sp[tid * BKV + c] > mx ? Sp[tid * BKV + c] : mx;
            m_new = mx;
            alpha = dkp_exp(row_m[tid] - m_new);
            for (int c = 0; c < BKV; c++) {
                float pv = kv0 + c < p.nkv ? dkp_exp(Sp[tid * BKV + c] - m_new) : 0.0f;
                S ps = dkp_conv<DT>::from(pv);
                Ps[tid * DKA_LDP + c] = ps;
                sum += pv;
            }
            row_l[tid] = row_l[tid] * alpha + sum;
            row_m[tid] = m_new;
            row_a[tid] = alpha;
        }
        dkp_sync();
        /* 3. O = O * alpha + P V */
#pragma unroll
        for (int f = 0; f < OF; f++)
#pragma unroll
            for (int i = 0; i < F::CR; i++) {
                int r, c;
                dkt_c_map(FAM, lane, i, &r, &c);
                acc[f][i] *= row_a[r];
            }
        for (dkh_i64 vc = 0; vc < p.dv; vc += DC) {
#pragma unroll
            for (int j = 0; j < BKV * DC / NT; j++) {
                int e = tid + j * NT, r = e / DC, c = e % DC;
                dkh_i64 ki = kv0 + r, d = vc + c;
                KVc[r * DKA_LD + c] = ki < p.nkv && d < p.dv ? V[ki * p.v_s[2] + d * p.v_s[3]] : (S)0;
            }
            dkp_sync();
#pragma unroll
            for (int f = 0; f < OF; f++) {
                dkh_i64 col0 = (dkh_i64)(f * NW + wave) * F::N;
                if (col0 >= vc && col0 < vc + DC && col0 < p.dv)
#pragma unroll
                    for (int kk = 0; kk < BKV; kk += F::K)
                        tile.template mma<DT>(acc[f], Ps + kk, DKA_LDP, 1, KVc + kk * DKA_LD + (col0 - vc), DKA_LD, 1,
                                              lane);
            }
            dkp_sync();
        }
    }
    {
        S *O = (S *)p.o + b * p.o_s[0] + h * p.o_s[1];
#pragma unroll
        for (int f = 0; f < OF; f++)
#pragma unroll
            for (int i = 0; i < F::CR; i++) {
                int r, c;
                dkh_i64 col, qi;
                dkt_c_map(FAM, lane, i, &r, &c);
                col = (dkh_i64)(f * NW + wave) * F::N + c;
                qi = q0 + r;
                if (qi < p.nq && col < p.dv)
                    O[qi * p.o_s[2] + col * p.o_s[3]] = dkp_conv<DT>::from(acc[f][i] / row_l[r]);
            }
    }
}

#define DKA_KERNELS(DMAX)                                                                                  \
    DKP_KERNEL(DKH_THREADS) dkk_attention_f32_d##DMAX(dkh_attn_args p) { dka_attention<DKT_FMA_FAM, 1, DMAX>(p); } \
    DKP_KERNEL(DKH_THREADS) dkk_attention_f16_d##DMAX(dkh_attn_args p) { dka_attention<DKT_ATTN_F16, 2, DMAX>(p); } \
    DKP_KERNEL(DKH_THREADS) dkk_attention_bf16_d##DMAX(dkh_attn_args p) { dka_attention<DKT_ATTN_BF16, 3, DMAX>(p); }
DKA_KERNELS(64)
DKA_KERNELS(128)
DKA_KERNELS(256)
DKA_KERNELS(512)

#undef DKA_KERNELS
#undef DKA_LD
#undef DKA_LDP
#undef DKA_NEG
