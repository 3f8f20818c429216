/* Flash attention for small heads (f16 / bf16, D and Dv multiples of 8 up to
 * 128, computed at the kernel's D of 64 or 128 with Q, K and V zero-padded in
 * shared memory, so SD 1.5's D 40 runs here too), each wave
 * owning whole query rows: its rows' scores, softmax statistics and
 * output for the whole key loop, so the softmax needs no shared memory and no
 * block barrier (dk_attention_fast.hip splits a row's keys and D across waves:
 * right for D 512, where one wave cannot hold a row of O, but at D 64 its
 * cross-wave reductions and barriers cost more than the products).
 *
 * Block: DKH_THREADS threads, NW waves, BQ = DKH_ATTENTION_MMA_ROWS_BQ (128) query rows of
 * one (batch, head): RG = BQ / (16 NW) groups of 16 rows per wave (1 on wave32,
 * 2 on wave64).  Q is staged once and kept as A fragments (registers; in the
 * host simulation fragments point into shared memory, which stays).  K and V
 * stream through a ring of ST stages, BKV keys of both per stage, one barrier
 * per stage; on NVIDIA the ring is filled by cp.async ST-1 stages ahead.
 * Per stage and row group: S = Q K^T (16 x BKV, fp32), masked past Nkv (last
 * tile only); row maxima across the lanes of a row by shuffles; P = exp2((s - m)
 * * scale * log2 e) as one FMA per score;
 * O = O * alpha + P V.  P becomes the A operand of P V:
 *   NVIDIA (mma.sync): in registers, as two adjacent 16x8 C tiles are the
 *     halves of one 16x16 A fragment (dkt_c_map / dkt_a_map: C slots 0-3 of
 *     tiles 2k and 2k+1 are A slots 0-3 and 4-7);
 *   elsewhere: through a wave-private 16 RG x BKV shared-memory tile.
 * V's B fragments: ldmatrix.trans on NVIDIA, the strided gather elsewhere.
 *
 * Sizes: NVIDIA (and the simulators) BKV 128 for D 64 and 64 for D 128, ST 3,
 * dynamic shared memory (dk__hip_attention_mma_rows_smem): the widest key tile that fits,
 * since each key tile costs barriers and a rescale of O (capping registers
 * for two blocks per SM spilled and lost; docs/attention.md).  AMD 2 stages,
 * BKV the largest of 64, 32, 16 that fits
 * 64 KB of LDS (the fragments' rows padded by 8 elements as in
 * dk_attention_fast.hip, whose helpers this file uses). */

#if defined(DKP_NVIDIA) || defined(DKP_HOSTSIM)
#define DKAR_ST DKH_ATTENTION_MMA_ROWS_ST
#else
#define DKAR_ST 2
#endif
#define DKAR_NEG (-1.0e30f)

template <int FAM, int D, int BKVN> struct dkar_cfg {
    typedef dkt_tile<FAM> F;
    static const int NW = DKH_THREADS / F::WAVE, BQ = DKH_ATTENTION_MMA_ROWS_BQ, RG = BQ / (16 * NW), ST = DKAR_ST, LD = D + 8;
#if defined(DKP_NVIDIA)
    static const bool PREG = true; /* P stays in registers */
#else
    static const bool PREG = false;
#endif
    static constexpr int bytes(int bkv) {
        return 2 * (BQ * LD + ST * 2 * bkv * LD + (PREG ? 0 : BQ * (bkv + 8)));
    }
#if defined(DKP_AMD)
    static const int BKV = bytes(64) <= 65536 ? 64 : bytes(32) <= 65536 ? 32 : 16;
    static_assert(bytes(BKV) <= 65536, "attention_mma_rows: LDS");
#else
    static const int BKV = BKVN;
#endif
    static const int BYTES = bytes(BKV), LDP = BKV + 8;
    static const int KF = D / F::K, SN = BKV / F::N, ON = D / F::N; /* Q fragments, S and O tiles per wave */
    static_assert(F::M == 16 && RG * 16 * NW == BQ && D % F::K == 0 && BKV % F::N == 0 && D % F::N == 0, "attention_mma_rows: tiles");
    static_assert(!PREG || (F::N == 8 && F::K == 16 && SN % 2 == 0 && ON % 2 == 0), "attention_mma_rows: register P");
};

/* The wave's threads see each other's shared-memory writes (P tile). */
DKP_DEV void dkar_wave_sync(void) {
#if defined(DKP_NVIDIA)
    __syncwarp();
#elif defined(DKP_AMD)
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
#else
    dkp_sync(); /* simulation: every thread reaches it */
#endif
}

#if defined(DKP_NVIDIA)
/* B fragments of two adjacent 8-key tiles of K (B(k, n) = K[n*ld + k], one
 * 16-step of D) by one ldmatrix.x4: matrix m = lane/8 is keys 8*(m/2)..,
 * dims 8*(m%2)..; thread t receives key t/4, dims 2(t%4), 2(t%4)+1 of each. */
DKP_DEV void dkar_load_k2(dkt_pairs<4> &b0, dkt_pairs<4> &b1, const dkp_u16 *K, int ld, int lane) {
    const int m = lane >> 3;
    unsigned sa = (unsigned)__cvta_generic_to_shared(K + ((m >> 1) * 8 + (lane & 7)) * ld + (m & 1) * 8);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(b0.r[0]), "=r"(b0.r[1]), "=r"(b1.r[0]), "=r"(b1.r[1])
                 : "r"(sa));
}
#endif

/* Two 16-bit values in one 32-bit register (the first in the low half). */
template <int DT> DKP_DEV dkp_u32 dkar_pack(float lo, float hi) {
#if defined(DKP_NVIDIA)
    dkp_u32 r; /* one paired conversion (the first operand goes to the high half) */
    if constexpr (DT == 3)
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    else
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
#else
    return (dkp_u32)dkp_conv<DT>::from(lo) | ((dkp_u32)dkp_conv<DT>::from(hi) << 16);
#endif
}

template <int FAM, int DT, int D, int BKVN>
DKP_DEV void dkar_attention(const dkh_attn_args &p) {
    typedef dkar_cfg<FAM, D, BKVN> C;
    typedef dkt_tile<FAM> F;
    const int BQ = C::BQ, BKV = C::BKV, ST = C::ST, LD = C::LD, CR = F::CR, RG = C::RG;
#if defined(DKP_NVIDIA)
    extern __shared__ __align__(128) unsigned char dkar_dyn[];
    dkp_u16 *sm = (dkp_u16 *)dkar_dyn;
    {
        unsigned dyn;
        asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
        if (dyn < (unsigned)C::BYTES) __trap(); /* host and kernel disagree on the layout */
    }
#else
    DKP_SHARED dkp_u16 sm[C::BYTES / 2] __attribute__((aligned(16)));
#endif
    const int tid = dkp_tid(), lane = tid % F::WAVE, wave = tid / F::WAVE;
    dkp_u16 *Qs = sm, *ring = sm + BQ * LD, *Pw = ring + ST * 2 * BKV * LD + wave * RG * 16 * C::LDP;
    (void)Pw;
    const dkh_i64 q0 = dkp_bid_x() * BQ, h = dkp_bid_y(), b = dkp_bid_z();
    const dkp_u16 *Q = (const dkp_u16 *)p.q + b * p.q_s[0] + h * p.q_s[1];
    const dkp_u16 *K = (const dkp_u16 *)p.k + b * p.k_s[0] + h * p.k_s[1];
    const dkp_u16 *V = (const dkp_u16 *)p.v + b * p.v_s[0] + h * p.v_s[1];
    const bool sneg = p.scale < 0.0f;
    const float sl2 = (sneg ? -p.scale : p.scale) * 1.4426950408889634f; /* scores in base 2 */
    const int tiles = (int)((p.nkv + BKV - 1) / BKV);
    F tile;
    typename F::FA qf[RG][C::KF];
    float oacc[RG][C::ON][CR], sacc[RG][C::SN][CR], mrow[RG][CR], lrow[RG][CR];

#pragma unroll
    for (int g = 0; g < RG; g++) {
#pragma unroll
        for (int n = 0; n < C::ON; n++)
#pragma unroll
            for (int r = 0; r < CR; r++) oacc[g][n][r] = 0.0f;
#pragma unroll
        for (int r = 0; r < CR; r++) {
            mrow[g][r] = DKAR_NEG;
            lrow[g][r] = 0.0f;
        }
    }

    /* Q first, alone: its fragments are loaded once the tile has landed */
    dkaf_load_tile<BQ, D>(Qs, LD, Q + q0 * p.q_s[2], p.q_s[2], p.nq - q0, tid, p.d);
    dkaf_commit();
    dkaf_wait<0>();
    dkp_sync();
#pragma unroll
    for (int g = 0; g < RG; g++)
#pragma unroll
        for (int f = 0; f < C::KF; f++) tile.load_a(qf[g][f], Qs + (wave * RG + g) * 16 * LD + f * F::K, LD, lane);

    for (int it = 0; it < tiles + ST - 1; it++) {
        if (it >= ST - 1) {
            dkaf_wait<ST - 2>(); /* stage it - (ST-1) has landed */
            dkp_sync();          /* ... for every thread; the stage refilled below is free */
        }
        if (it < tiles) {
            dkp_u16 *st = ring + (it % ST) * 2 * BKV * LD;
            const dkh_i64 kv0 = (dkh_i64)it * BKV;
            dkaf_load_tile<BKV, D>(st, LD, K + kv0 * p.k_s[2], p.k_s[2], p.nkv - kv0, tid, p.d);
            dkaf_load_tile<BKV, D>(st + BKV * LD, LD, V + kv0 * p.v_s[2], p.v_s[2], p.nkv - kv0, tid, p.dv);
        }
        dkaf_commit();
        if (it < ST - 1) continue;
        const int c = it - (ST - 1);
        const dkh_i64 kv0 = (dkh_i64)c * BKV;
        const dkp_u16 *Ks = ring + (c % ST) * 2 * BKV * LD, *Vs = Ks + BKV * LD;

        /* S = Q K^T for this wave's rows (each K fragment serves every row group) */
#pragma unroll
        for (int g = 0; g < RG; g++)
#pragma unroll
            for (int n = 0; n < C::SN; n++)
#pragma unroll
                for (int r = 0; r < CR; r++) sacc[g][n][r] = 0.0f;
#pragma unroll
        for (int f = 0; f < C::KF; f++) {
#if defined(DKP_NVIDIA)
#pragma unroll
            for (int n = 0; n < C::SN; n += 2) {
                typename F::FB k0, k1;
                dkar_load_k2(k0, k1, Ks + n * F::N * LD + f * F::K, LD, lane);
#pragma unroll
                for (int g = 0; g < RG; g++) {
                    tile.template mma_rr<DT>(sacc[g][n], qf[g][f], k0, lane);
                    tile.template mma_rr<DT>(sacc[g][n + 1], qf[g][f], k1, lane);
                }
            }
#else
#pragma unroll
            for (int n = 0; n < C::SN; n++) {
                typename F::FB kb;
                tile.load_b(kb, Ks + n * F::N * LD + f * F::K, LD, lane);
#pragma unroll
                for (int g = 0; g < RG; g++) tile.template mma_rr<DT>(sacc[g][n], qf[g][f], kb, lane);
            }
#endif
        }

        /* online softmax over each row (this lane's slots, then its column lanes),
         * on unscaled scores: the scale folds into exp2's argument (one FMA), and
         * only the last key tile can have keys past Nkv to mask (a negative scale
         * flips the scores' sign first, so that the maxima stay maxima) */
        if (sneg) {
#pragma unroll
            for (int g = 0; g < RG; g++)
#pragma unroll
                for (int n = 0; n < C::SN; n++)
#pragma unroll
                    for (int r = 0; r < CR; r++) sacc[g][n][r] = -sacc[g][n][r];
        }
        if (kv0 + BKV > p.nkv) {
            const int valid = (int)(p.nkv - kv0);
#pragma unroll
            for (int g = 0; g < RG; g++)
#pragma unroll
                for (int r = 0; r < CR; r++) {
                    int rr, cc;
                    dkt_c_map(FAM, lane, r, &rr, &cc);
#pragma unroll
                    for (int n = 0; n < C::SN; n++)
                        if (n * F::N + cc >= valid) sacc[g][n][r] = DKAR_NEG;
                }
        }
#pragma unroll
        for (int g = 0; g < RG; g++) {
            float mx[CR];
#pragma unroll
            for (int r = 0; r < CR; r++) {
                float m = DKAR_NEG;
#pragma unroll
                for (int n = 0; n < C::SN; n++) m = dkaf_fmax(m, sacc[g][n][r]);
                mx[r] = m;
            }
#pragma unroll
            for (int r = 0; r < CR; r++) {
                const float m = dkaf_fmax(dkaf_row_reduce<FAM, false>(mx, r, lane), mrow[g][r]);
                const float alpha = dkaf_exp2((mrow[g][r] - m) * sl2), ms = m * sl2;
                float sum = 0.0f;
                mrow[g][r] = m;
#pragma unroll
                for (int n = 0; n < C::SN; n++) {
                    const float pv = dkaf_exp2(sacc[g][n][r] * sl2 - ms);
                    sacc[g][n][r] = pv;
                    sum += pv;
                }
                lrow[g][r] = lrow[g][r] * alpha + sum;
#pragma unroll
                for (int n = 0; n < C::ON; n++) oacc[g][n][r] *= alpha;
            }
        }

        /* O += P V */
#if defined(DKP_NVIDIA)
#pragma unroll
        for (int kk = 0; kk < BKV / 16; kk++) {
            typename F::FA pa[RG];
#pragma unroll
            for (int g = 0; g < RG; g++) {
                pa[g].r[0] = dkar_pack<DT>(sacc[g][2 * kk][0], sacc[g][2 * kk][1]);
                pa[g].r[1] = dkar_pack<DT>(sacc[g][2 * kk][2], sacc[g][2 * kk][3]);
                pa[g].r[2] = dkar_pack<DT>(sacc[g][2 * kk + 1][0], sacc[g][2 * kk + 1][1]);
                pa[g].r[3] = dkar_pack<DT>(sacc[g][2 * kk + 1][2], sacc[g][2 * kk + 1][3]);
            }
#pragma unroll
            for (int n = 0; n < C::ON; n += 2) {
                typename F::FB b0, b1;
                dkaf_load_vt(b0, b1, Vs + kk * 16 * LD + n * F::N, LD, lane);
#pragma unroll
                for (int g = 0; g < RG; g++) {
                    tile.template mma_rr<DT>(oacc[g][n], pa[g], b0, lane);
                    tile.template mma_rr<DT>(oacc[g][n + 1], pa[g], b1, lane);
                }
            }
        }
#else
#pragma unroll
        for (int g = 0; g < RG; g++)
#pragma unroll
            for (int r = 0; r < CR; r++) {
                int rr, cc;
                dkt_c_map(FAM, lane, r, &rr, &cc);
#pragma unroll
                for (int n = 0; n < C::SN; n++)
                    Pw[(g * 16 + rr) * C::LDP + n * F::N + cc] = dkp_conv<DT>::from(sacc[g][n][r]);
            }
        dkar_wave_sync();
#pragma unroll
        for (int kk = 0; kk < BKV; kk += F::K)
#pragma unroll
            for (int n = 0; n < C::ON; n++)
#pragma unroll
                for (int g = 0; g < RG; g++)
                    tile.template mma<DT>(oacc[g][n], Pw + g * 16 * C::LDP + kk, C::LDP, 1, Vs + kk * LD + n * F::N, LD, 1,
                                          lane);
        dkar_wave_sync(); /* the P tile is rewritten next stage */
#endif
    }
    dkaf_wait<0>();

    dkp_u16 *O = (dkp_u16 *)p.o + b * p.o_s[0] + h * p.o_s[1];
#pragma unroll
    for (int g = 0; g < RG; g++)
#pragma unroll
        for (int r = 0; r < CR; r++) {
            int rr, cc;
            dkt_c_map(FAM, lane, r, &rr, &cc);
            const float inv = 1.0f / dkaf_row_reduce<FAM, true>(lrow[g], r, lane);
            const dkh_i64 qi = q0 + (wave * RG + g) * 16 + rr;
            if (qi >= p.nq) continue;
#pragma unroll
            for (int n = 0; n < C::ON; n++)
                if (n * F::N + cc < p.dv)
                    O[qi * p.o_s[2] + (dkh_i64)(n * F::N + cc) * p.o_s[3]] = dkp_conv<DT>::from(oacc[g][n][r] * inv);
        }
}

/* NVIDIA: D 64 two blocks per multiprocessor (<= 128 registers); D 128 one. */
#if defined(DKP_NVIDIA)
#define DKAR_KERNEL(MINB) extern "C" __global__ void __launch_bounds__(DKH_THREADS, MINB)
#else
#define DKAR_KERNEL(MINB) DKP_KERNEL(DKH_THREADS)
#endif
#define DKAR_KERNELS(DD, MINB)                                                                                          \
    DKAR_KERNEL(MINB) dkk_attention_mma_rows_f16_d##DD(dkh_attn_args p) { dkar_attention<DKT_ATTN_F16, 2, DD, DKH_ATTENTION_MMA_ROWS_BKV(DD)>(p); }  \
    DKAR_KERNEL(MINB) dkk_attention_mma_rows_bf16_d##DD(dkh_attn_args p) { dkar_attention<DKT_ATTN_BF16, 3, DD, DKH_ATTENTION_MMA_ROWS_BKV(DD)>(p); }
DKAR_KERNELS(64, 1)
DKAR_KERNELS(128, 1)

#undef DKAR_KERNELS
#undef DKAR_KERNEL
#undef DKAR_NEG
#undef DKAR_ST
