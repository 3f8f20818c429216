/* Fast flash attention for f16 / bf16 with D == Dv in {64, 128, 256, 512}, on the
 * tile abstraction's register fragments.  Taken when q, k, v have a contiguous
 * last dimension and 16-byte aligned rows (hip_attention.c); everything else runs
 * dkk_attention_* (dk_attention.hip).
 *
 * Block: BQ query rows of one (batch, head), 256 threads.  The Q tile stays in
 * shared memory for the whole kernel; K and V stream through a ring of ST
 * shared-memory stages in slices of about 16 KB: per tile of BKV keys, NKS
 * slices of K (BKV keys x KC columns of D), then NVS slices of V (VK keys x Dv).
 * One barrier per slice; on NVIDIA the ring is filled by cp.async ST-1 slices
 * ahead (across tile boundaries), elsewhere by plain 16-byte copies.
 *   S = Q K^T: the waves tile S [BQ x BKV] as SR x SC; each accumulates its
 *     piece over all of D (fp32 accumulators).
 *   online softmax (fp32, base 2): row maxima of a wave's piece by lane
 *     shuffles, across the SC waves of a row through shared memory; P =
 *     exp2(s - m) is rounded to the storage type into shared memory, the row's
 *     rescale factor too; running row sums stay per thread (reduced at the end).
 *   O += P V: the waves tile O [BQ x Dv] as OR x OC (Dv split across waves:
 *     a 64-column slab of all 64 rows per wave for Dv = 512); O *= alpha before.
 *     NVIDIA: P by ldmatrix, V by ldmatrix.trans; elsewhere the strided gather.
 * Rows of every shared array are padded by 8 elements (16 bytes), so 8-row
 * fragment reads hit 8 different 16-byte bank groups.  Ragged tails: rows of Q,
 * K, V past the end are zero-filled, scores of keys past Nkv masked.
 *
 * Sizes: NVIDIA (and the host simulators) BQ 64, BKV 64, ST 4 in dynamic shared
 * memory (up to ~148 KB for D 512, opted in by hip_backend.c); AMD fits 64 KB of
 * LDS with BQ 16 and a 2-stage ring (BKV 128 on wave32 so S has 8 wave tiles). */
#include "dk_tile.h"
#include "../hip_kargs.h"

#if defined(DKP_AMD)
#define DKAF_BQ DKH_ATTENTION_MMA_BQ_AMD
#define DKAF_ST 2
#if DKP_WAVE == 64
#define DKAF_BKV 64
#else
#define DKAF_BKV 128
#endif
#else
#define DKAF_BQ DKH_ATTENTION_MMA_BQ
#define DKAF_BKV DKH_ATTENTION_MMA_BKV
#define DKAF_ST DKH_ATTENTION_MMA_ST
#endif
#define DKAF_NEG (-1.0e30f)

#if defined(DKP_NVIDIA)
typedef uint4 dkaf_v4;
#elif defined(DKP_AMD)
typedef dkp_u32 dkaf_v4 __attribute__((ext_vector_type(4)));
#else
struct alignas(16) dkaf_v4 {
    dkp_u32 x, y, z, w;
};
#endif

#define DKAF_MIN(a, b) ((a) < (b) ? (a) : (b))
#define DKAF_MAX(a, b) ((a) > (b) ? (a) : (b))

/* The block's geometry for one family and (D, Dv). */
template <int FAM, int D, int DV> struct dkaf_cfg {
    typedef dkt_tile<FAM> F;
    static const int NT = DKH_THREADS, NW = NT / F::WAVE, BQ = DKAF_BQ, BKV = DKAF_BKV, ST = DKAF_ST;
    /* slices: KC columns of K per slice, VK keys of V per slice */
    static const int KC = DKAF_MIN(DKH_ATTENTION_MMA_SLICE / BKV, D), VK = DKAF_MAX(DKAF_MIN(DKH_ATTENTION_MMA_SLICE / DV, BKV), 16);
    static const int NKS = D / KC, NVS = BKV / VK, NS = NKS + NVS;
    static const int LDQ = D + 8, LDK = KC + 8, LDV = DV + 8, LDP = BKV + 8;
    static const int STAGE = DKAF_MAX(BKV * LDK, VK * LDV);
    /* S wave grid SR x SC (all waves) */
    static const int SC0 = DKAF_MIN(NW, BKV / 16), SR = DKAF_MIN(NW / SC0, BQ / F::M), SC = DKAF_MIN(NW / SR, BKV / F::N);
    static const int SM = BQ / SR, SN = BKV / SC, SFM = SM / F::M, SFN = SN / F::N;
    /* O wave grid OR x OC (waves >= OR*OC idle in P V: small Dv on wave32 AMD) */
    static const int OC0 = DKAF_MIN(NW, DKAF_MAX(DV / 32, 1)), OR = DKAF_MIN(NW / OC0, BQ / F::M);
    static const int OC = DKAF_MIN(NW / OR, DV / F::N), OM = BQ / OR, ON = DV / OC, OFM = OM / F::M, OFN = ON / F::N;
    /* shared memory: 16-bit region (Q, ring, P), then floats (row maxima and sums
     * per S column wave (room for 8), row rescale factors) */
    static const int RING = BQ * LDQ, PS = RING + ST * STAGE, U16 = PS + BQ * LDP;
    static const int BYTES = 2 * U16 + 4 * (2 * 8 * BQ + BQ);
    static_assert(SR * SC == NW && SM % F::M == 0 && SN % F::N == 0, "attention_mma: S wave grid");
    static_assert(OM % F::M == 0 && ON % F::N == 0 && OR * OC <= NW, "attention_mma: O wave grid");
    static_assert(D % KC == 0 && KC % 16 == 0 && BKV % VK == 0 && VK % 16 == 0 && DV % 8 == 0, "attention_mma: slices");
};

/* Lanes of a wave that hold the same row of a C fragment: lane % COLLANES is the
 * column lane (mma.sync: 4 lanes of 2 columns; MFMA 16x16 / WMMA: 16 lanes). */
template <int FAM> struct dkaf_rows { static const int COLLANES = FAM == DKT_MMA16816 ? 4 : 16; };

#if defined(DKP_HOSTSIM)
/* Host simulation: a shuffle through shared memory (every thread of the block
 * calls it at the same point, like a barrier). */
static float dkaf_sim_xchg[DKH_THREADS];
#endif
DKP_DEV float dkaf_shfl_xor(float v, int mask, int lane) {
#if defined(DKP_NVIDIA)
    (void)lane;
    return __shfl_xor_sync(0xffffffffu, v, mask);
#elif defined(DKP_AMD)
    return __builtin_bit_cast(float, __builtin_amdgcn_ds_bpermute((lane ^ mask) << 2, __builtin_bit_cast(int, v)));
#else
    (void)lane;
    dkaf_sim_xchg[dkp_tid()] = v;
    dkp_sync();
    float r = dkaf_sim_xchg[dkp_tid() ^ mask];
    dkp_sync();
    return r;
#endif
}

/* NVIDIA: the flush-to-zero form is one MUFU.EX2; exp2f adds a range fix-up for
 * subnormal results (a probability below 2^-126 is zero in f16 and bf16 anyway). */
DKP_DEV float dkaf_exp2(float x) {
#if defined(DKP_NVIDIA)
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
#elif defined(DKP_AMD)
    return __builtin_exp2f(x);
#else
    return exp2f(x);
#endif
}

/* 16 bytes global -> shared (zeros where !ok).  NVIDIA: cp.async, completed by
 * dkaf_wait; elsewhere a synchronous copy. */
DKP_DEV void dkaf_copy16(dkp_u16 *dst, const dkp_u16 *src, bool ok) {
#if defined(DKP_NVIDIA)
    unsigned sa = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(sa), "l"(src), "r"(ok ? 16 : 0) : "memory");
#else
    dkaf_v4 z = {0u, 0u, 0u, 0u};
    *(dkaf_v4 *)dst = ok ? *(const dkaf_v4 *)src : z;
#endif
}
DKP_DEV void dkaf_commit(void) {
#if defined(DKP_NVIDIA)
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
template <int N> DKP_DEV void dkaf_wait(void) {
#if defined(DKP_NVIDIA)
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

/* rows x cols (cols a multiple of 8) from src (row stride ss elements, rows
 * >= valid and columns >= vcols, a multiple of 8, zero-filled) into dst (row
 * stride ld). */
template <int ROWS, int COLS>
DKP_DEV void dkaf_load_tile(dkp_u16 *dst, int ld, const dkp_u16 *src, dkh_i64 ss, dkh_i64 valid, int tid,
                            dkh_i64 vcols = COLS) {
    const int CH = COLS / 8;
    for (int c = tid; c < ROWS * CH; c += DKH_THREADS) {
        const int r = c / CH, cc = (c % CH) * 8;
        const bool ok = r < valid && cc < vcols;
        dkaf_copy16(dst + r * ld + cc, ok ? src + r * ss + cc : src, ok);
    }
}

/* Slice s of the stream (tile s / NS: K slices, then V slices) into a stage. */
template <class C>
DKP_DEV void dkaf_issue(dkp_u16 *stage, int s, const dkp_u16 *K, const dkp_u16 *V, const dkh_attn_args &p, dkh_i64 nkv,
                        int tid) {
    const int t = s / C::NS, j = s % C::NS;
    const dkh_i64 kv0 = (dkh_i64)t * C::BKV;
    if (j < C::NKS)
        dkaf_load_tile<C::BKV, C::KC>(stage, C::LDK, K + kv0 * p.k_s[2] + j * C::KC, p.k_s[2], nkv - kv0, tid);
    else {
        const dkh_i64 k0 = kv0 + (dkh_i64)(j - C::NKS) * C::VK;
        dkaf_load_tile<C::VK, C::LDV - 8>(stage, C::LDV, V + k0 * p.v_s[2], p.v_s[2], nkv - k0, tid);
    }
}

#if defined(DKP_NVIDIA)
/* B fragments of two adjacent 8-column tiles of V (V(k, n) = V[k*ldv + n], keys
 * k of one 16-step) by ldmatrix.trans: matrix m = lane/8 is keys 8*(m%2).., columns
 * 8*(m/2)..; thread t receives column t/4, keys 2(t%4), 2(t%4)+1 of each. */
DKP_DEV void dkaf_load_vt(dkt_pairs<4> &b0, dkt_pairs<4> &b1, const dkp_u16 *V, int ldv, int lane) {
    const int m = lane >> 3;
    unsigned sa = (unsigned)__cvta_generic_to_shared(V + ((m & 1) * 8 + (lane & 7)) * ldv + (m >> 1) * 8);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(b0.r[0]), "=r"(b0.r[1]), "=r"(b1.r[0]), "=r"(b1.r[1])
                 : "r"(sa));
}
#endif

/* max of two floats in one instruction (the ?: form compiles to compare + select) */
DKP_DEV float dkaf_fmax(float a, float b) {
#if defined(DKP_NVIDIA)
    return fmaxf(a, b);
#else
    return __builtin_fmaxf(a, b);
#endif
}

/* Same-row slots of a lane summed (SUM) or max'd, then across the column lanes. */
template <int FAM, bool SUM>
DKP_DEV float dkaf_row_reduce(const float *v, int slot, int lane) {
    typedef dkt_tile<FAM> F;
    int r0, c0;
    dkt_c_map(FAM, lane, slot, &r0, &c0);
    float x = v[slot];
#pragma unroll
    for (int i = 0; i < F::CR; i++) {
        int r, c;
        dkt_c_map(FAM, lane, i, &r, &c);
        if (i != slot && r == r0) x = SUM ? x + v[i] : dkaf_fmax(x, v[i]);
    }
#pragma unroll
    for (int m = 1; m < dkaf_rows<FAM>::COLLANES; m *= 2) {
        float y = dkaf_shfl_xor(x, m, lane);
        x = SUM ? x + y : dkaf_fmax(x, y);
    }
    return x;
}

template <int FAM, int DT, int D, int DV>
DKP_DEV void dkaf_attention(const dkh_attn_args &p) {
    typedef dkaf_cfg<FAM, D, DV> C;
    typedef dkt_tile<FAM> F;
    const int BQ = C::BQ, BKV = C::BKV, ST = C::ST, CR = F::CR, COLL = dkaf_rows<FAM>::COLLANES;
#if defined(DKP_NVIDIA)
    extern __shared__ __align__(128) unsigned char dkaf_dyn[];
    dkp_u16 *sm = (dkp_u16 *)dkaf_dyn;
    {
        unsigned dyn;
        asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
        if (dyn < (unsigned)C::BYTES) __trap(); /* host and kernel disagree on the layout */
    }
#else
    DKP_SHARED dkp_u16 sm[C::BYTES / 2] __attribute__((aligned(16)));
#endif
    dkp_u16 *Qs = sm, *ring = sm + C::RING, *Ps = sm + C::PS;
    float *red_m = (float *)(sm + C::U16), *red_l = red_m + 8 * BQ, *alpha_s = red_l + 8 * BQ;
    const int tid = dkp_tid(), lane = tid % F::WAVE, wave = tid / F::WAVE;
    const int sr = wave / C::SC, sc = wave % C::SC, orow = wave / C::OC, ocol = wave % C::OC;
    const bool o_on = wave < C::OR * C::OC;
    /* split-KV (p.splits > 1): this block's keys are [kvb, kvb + nkv) */
    const dkh_i64 qblk = p.splits > 1 ? dkp_bid_x() % p.nqb : dkp_bid_x();
    const dkh_i64 kvb = p.splits > 1 ? dkp_bid_x() / p.nqb * p.kv_chunk : 0;
    const dkh_i64 nkv = p.splits > 1 ? DKAF_MIN(p.kv_chunk, p.nkv - kvb) : p.nkv;
    const dkh_i64 q0 = qblk * BQ, h = dkp_bid_y(), b = dkp_bid_z();
    const dkp_u16 *Q = (const dkp_u16 *)p.q + b * p.q_s[0] + h * p.q_s[1];
    const dkp_u16 *K = (const dkp_u16 *)p.k + b * p.k_s[0] + h * p.k_s[1] + kvb * p.k_s[2];
    const dkp_u16 *V = (const dkp_u16 *)p.v + b * p.v_s[0] + h * p.v_s[1] + kvb * p.v_s[2];
    const float sl2 = p.scale * 1.4426950408889634f; /* scores in base 2 */
    const int total = (int)((nkv + BKV - 1) / BKV) * C::NS;
    F tile;
    float oacc[C::OFM][C::OFN][CR], sacc[C::SFM][C::SFN][CR], mrow[C::SFM][CR], lrow[C::SFM][CR];

#pragma unroll
    for (int i = 0; i < C::OFM; i++)
#pragma unroll
        for (int n = 0; n < C::OFN; n++)
#pragma unroll
            for (int r = 0; r < CR; r++) oacc[i][n][r] = 0.0f;
#pragma unroll
    for (int i = 0; i < C::SFM; i++)
#pragma unroll
        for (int r = 0; r < CR; r++) {
            mrow[i][r] = DKAF_NEG;
            lrow[i][r] = 0.0f;
        }

    dkaf_load_tile<BQ, D>(Qs, C::LDQ, Q + q0 * p.q_s[2], p.q_s[2], p.nq - q0, tid);
    dkaf_commit();
    for (int sl = 0; sl < total + ST - 1; sl++) {
        if (sl >= ST - 1) {
            dkaf_wait<ST - 2>(); /* slice sl - (ST-1) (and Q) have landed */
            dkp_sync();
        }
        if (sl < total) dkaf_issue<C>(ring + (sl % ST) * C::STAGE, sl, K, V, p, nkv, tid);
        dkaf_commit();
        if (sl < ST - 1) continue;
        const int c = sl - (ST - 1), j = c % C::NS;
        const dkh_i64 kv0 = (dkh_i64)(c / C::NS) * BKV;
        const dkp_u16 *buf = ring + (c % ST) * C::STAGE;
        if (j < C::NKS) {
            /* S += Q[:, j*KC..] K_slice^T */
            if (j == 0) {
#pragma unroll
                for (int i = 0; i < C::SFM; i++)
#pragma unroll
                    for (int n = 0; n < C::SFN; n++)
#pragma unroll
                        for (int r = 0; r < CR; r++) sacc[i][n][r] = 0.0f;
            }
#pragma unroll
            for (int kk = 0; kk < C::KC; kk += F::K) {
                typename F::FA fa[C::SFM];
                typename F::FB fb[C::SFN];
#pragma unroll
                for (int i = 0; i < C::SFM; i++)
                    tile.load_a(fa[i], Qs + (sr * C::SM + i * F::M) * C::LDQ + j * C::KC + kk, C::LDQ, lane);
#pragma unroll
                for (int n = 0; n < C::SFN; n++) tile.load_b(fb[n], buf + (sc * C::SN + n * F::N) * C::LDK + kk, C::LDK, lane);
#pragma unroll
                for (int i = 0; i < C::SFM; i++)
#pragma unroll
                    for (int n = 0; n < C::SFN; n++) tile.template mma_rr<DT>(sacc[i][n], fa[i], fb[n], lane);
            }
            if (j == C::NKS - 1) {
                /* online softmax: scale and mask, row maxima of this wave's piece */
                float mx[C::SFM][CR];
#pragma unroll
                for (int i = 0; i < C::SFM; i++)
#pragma unroll
                    for (int r = 0; r < CR; r++) {
                        int rr, cc;
                        dkt_c_map(FAM, lane, r, &rr, &cc);
                        float m = DKAF_NEG;
#pragma unroll
                        for (int n = 0; n < C::SFN; n++) {
                            const float s = kv0 + sc * C::SN + n * F::N + cc < nkv ? sacc[i][n][r] * sl2 : DKAF_NEG;
                            sacc[i][n][r] = s;
                            m = DKAF_MAX(m, s);
                        }
                        mx[i][r] = m;
                    }
#pragma unroll
                for (int i = 0; i < C::SFM; i++)
#pragma unroll
                    for (int r = 0; r < CR; r++) {
                        int rr, cc;
                        dkt_c_map(FAM, lane, r, &rr, &cc);
                        const float m = dkaf_row_reduce<FAM, false>(mx[i], r, lane);
                        if (lane % COLL == 0) red_m[sc * BQ + sr * C::SM + i * F::M + rr] = m;
                    }
                dkp_sync();
                /* the row's new maximum, P = exp2(s - m) into shared memory, alpha */
#pragma unroll
                for (int i = 0; i < C::SFM; i++)
#pragma unroll
                    for (int r = 0; r < CR; r++) {
                        int rr, cc;
                        dkt_c_map(FAM, lane, r, &rr, &cc);
                        const int row = sr * C::SM + i * F::M + rr;
                        float m = mrow[i][r], sum = 0.0f;
                        for (int w = 0; w < C::SC; w++) m = DKAF_MAX(m, red_m[w * BQ + row]);
                        const float alpha = dkaf_exp2(mrow[i][r] - m);
                        mrow[i][r] = m;
#pragma unroll
                        for (int n = 0; n < C::SFN; n++) {
                            const float pv = dkaf_exp2(sacc[i][n][r] - m);
                            sum += pv;
                            Ps[row * C::LDP + sc * C::SN + n * F::N + cc] = dkp_conv<DT>::from(pv);
                        }
                        lrow[i][r] = lrow[i][r] * alpha + sum;
                        if (sc == 0) alpha_s[row] = alpha;
                    }
                dkp_sync();
            }
        } else if (o_on) {
            /* O = O * alpha + P V over this slice's VK keys */
            const int vj = j - C::NKS;
            if (vj == 0) {
#pragma unroll
                for (int i = 0; i < C::OFM; i++)
#pragma unroll
                    for (int r = 0; r < CR; r++) {
                        int rr, cc;
                        dkt_c_map(FAM, lane, r, &rr, &cc);
                        const float a = alpha_s[orow * C::OM + i * F::M + rr];
#pragma unroll
                        for (int n = 0; n < C::OFN; n++) oacc[i][n][r] *= a;
                    }
            }
#pragma unroll
            for (int kk = 0; kk < C::VK; kk += F::K) {
                const dkp_u16 *Pk = Ps + (orow * C::OM) * C::LDP + vj * C::VK + kk;
                const dkp_u16 *Vk = buf + kk * C::LDV + ocol * C::ON;
#if defined(DKP_NVIDIA)
                typename F::FA fa[C::OFM];
#pragma unroll
                for (int i = 0; i < C::OFM; i++) tile.load_a(fa[i], Pk + i * F::M * C::LDP, C::LDP, lane);
#pragma unroll
                for (int n = 0; n < C::OFN; n += 2) {
                    typename F::FB b0, b1;
                    dkaf_load_vt(b0, b1, Vk + n * F::N, C::LDV, lane);
#pragma unroll
                    for (int i = 0; i < C::OFM; i++) {
                        tile.template mma_rr<DT>(oacc[i][n], fa[i], b0, lane);
                        tile.template mma_rr<DT>(oacc[i][n + 1], fa[i], b1, lane);
                    }
                }
#else
#pragma unroll
                for (int i = 0; i < C::OFM; i++)
#pragma unroll
                    for (int n = 0; n < C::OFN; n++)
                        tile.template mma<DT>(oacc[i][n], Pk + i * F::M * C::LDP, C::LDP, 1, Vk + n * F::N, C::LDV, 1,
                                              lane);
#endif
            }
        }
    }
    dkaf_wait<0>();

    /* row sums: same-row slots, column lanes, then the SC waves of the row */
#pragma unroll
    for (int i = 0; i < C::SFM; i++)
#pragma unroll
        for (int r = 0; r < CR; r++) {
            int rr, cc;
            dkt_c_map(FAM, lane, r, &rr, &cc);
            const float l = dkaf_row_reduce<FAM, true>(lrow[i], r, lane);
            if (lane % COLL == 0) red_l[sc * BQ + sr * C::SM + i * F::M + rr] = l;
            /* the row's final maximum for split partials (red_m is free now) */
            if (lane % COLL == 0 && sc == 0) red_m[sr * C::SM + i * F::M + rr] = mrow[i][r];
        }
    dkp_sync();
    if (o_on) {
        dkp_u16 *O = (dkp_u16 *)p.o + b * p.o_s[0] + h * p.o_s[1];
#pragma unroll
        for (int i = 0; i < C::OFM; i++)
#pragma unroll
            for (int r = 0; r < CR; r++) {
                int rr, cc;
                dkt_c_map(FAM, lane, r, &rr, &cc);
                const int row = orow * C::OM + i * F::M + rr;
                const dkh_i64 qi = q0 + row;
                float l = 0.0f;
                for (int w = 0; w < C::SC; w++) l += red_l[w * BQ + row];
                if (qi >= p.nq) continue;
                if (p.splits > 1) {
                    const dkh_i64 sp = dkp_bid_x() / p.nqb; /* recomputed: not live across the loop */
                    float *P = (float *)p.part + (((sp * p.nb + b) * p.nh + h) * p.nq + qi) * (DV + 2);
#pragma unroll
                    for (int n = 0; n < C::OFN; n++) P[ocol * C::ON + n * F::N + cc] = oacc[i][n][r];
                    if (ocol == 0 && cc == 0) {
                        P[DV] = red_m[row];
                        P[DV + 1] = l;
                    }
                    continue;
                }
                const float inv = 1.0f / l;
#pragma unroll
                for (int n = 0; n < C::OFN; n++) {
                    const dkh_i64 col = ocol * C::ON + n * F::N + cc;
                    O[qi * p.o_s[2] + col * p.o_s[3]] = dkp_conv<DT>::from(oacc[i][n][r] * inv);
                }
            }
    }
}

/* NVIDIA: Dv 64 two blocks per multiprocessor (<= 128 registers); Dv 128, 256, 512
 * one (the O accumulators of a 64-row block take half the register file). */
#if defined(DKP_NVIDIA)
#define DKAF_KERNEL(MINB) extern "C" __global__ void __launch_bounds__(DKH_THREADS, MINB)
#else
#define DKAF_KERNEL(MINB) DKP_KERNEL(DKH_THREADS)
#endif
#define DKAF_KERNELS(DD, MINB)                                                                                          \
    DKAF_KERNEL(MINB) dkk_attention_mma_f16_d##DD(dkh_attn_args p) { dkaf_attention<DKT_ATTN_F16, 2, DD, DD>(p); }             \
    DKAF_KERNEL(MINB) dkk_attention_mma_bf16_d##DD(dkh_attn_args p) { dkaf_attention<DKT_ATTN_BF16, 3, DD, DD>(p); }
DKAF_KERNELS(64, 2)
DKAF_KERNELS(128, 1) /* spills at 128 registers; D 128 runs dkk_attention_mma_rows_* unless DIFKERN_HIP_ATTN_ROWS=0 */
DKAF_KERNELS(256, 1)
DKAF_KERNELS(512, 1)

/* Split-KV merge: o[b][h][q][c] = sum_s e_s O_s[c] / sum_s e_s l_s with
 * e_s = exp2(m_s - max_s m_s), one thread per output element. */
template <int DT> DKP_DEV void dkaf_combine(const dkh_attn_args &p) {
    const dkh_i64 h = dkp_bid_y(), b = dkp_bid_z(), e = dkp_bid_x() * DKH_THREADS + dkp_tid();
    if (e >= p.nq * p.dv) return;
    const dkh_i64 q = e / p.dv, c = e % p.dv, row = p.dv + 2, slab = p.nb * p.nh * p.nq * row;
    const float *P = (const float *)p.part + ((b * p.nh + h) * p.nq + q) * row;
    float m = DKAF_NEG, o = 0.0f, l = 0.0f;
    for (int s = 0; s < p.splits; s++) m = DKAF_MAX(m, P[s * slab + p.dv]);
    for (int s = 0; s < p.splits; s++) {
        const float w = dkaf_exp2(P[s * slab + p.dv] - m);
        o += w * P[s * slab + c];
        l += w * P[s * slab + p.dv + 1];
    }
    dkp_u16 *O = (dkp_u16 *)p.o + b * p.o_s[0] + h * p.o_s[1];
    O[q * p.o_s[2] + c * p.o_s[3]] = dkp_conv<DT>::from(o / l);
}
DKP_KERNEL(DKH_THREADS) dkk_attention_combine_f16(dkh_attn_args p) { dkaf_combine<2>(p); }
DKP_KERNEL(DKH_THREADS) dkk_attention_combine_bf16(dkh_attn_args p) { dkaf_combine<3>(p); }

#undef DKAF_KERNELS
#undef DKAF_KERNEL
#undef DKAF_MIN
#undef DKAF_MAX
#undef DKAF_NEG
#undef DKAF_BQ
#undef DKAF_BKV
#undef DKAF_ST
