/* Fast implicit GEMM for f16 / bf16 conv2d, conv_transpose2d phases and
 * matmul/linear (as a 1 x M image), on the tile abstraction's register
 * fragments.  Taken when the input is channels-last (channel stride 1, 16-byte
 * aligned pixels), the channels of a group are a multiple of 32 and the weights
 * are K-contiguous (prepacked to [Cout][KH][KW][Cin], or a linear weight);
 * everything else runs dkk_gemm_* (dk_gemm.hip).
 *
 * Block: 128 output pixels (GEMM rows) x 128 output channels (columns), 256
 * threads.  The reduction runs in slices of 32 channels of one tap (tap_h,
 * tap_w, channel order), so a row of a slice is 64 contiguous bytes of the input
 * or the weight: each thread loads two 16-byte vectors per operand, with pixel
 * coordinates computed once per block and tap counters stepped per slice (no
 * divisions in the loop; on NVIDIA the row addresses are recomputed only when
 * the tap changes).  One barrier per slice.
 *   NVIDIA: a 3-stage ring filled by cp.async two slices ahead, unpadded rows with
 *           XOR-swizzled 16-byte chunks, ldmatrix fragment loads, 2 blocks/SM.
 *   AMD, host simulation: slice s+1 is loaded into registers before slice s is
 *           multiplied, then stored into the other of two buffers; rows padded to
 *           40 elements (80 bytes), so 32-bit fragment loads of 8 rows x 4 words
 *           hit 32 different banks.
 * The epilogue is applied on the accumulators before the only store of y.
 * Prepacked weights: hip_conv.c (hipops_packed_weight). */
#include "dk_tile.h"
#include "../hip_kargs.h"

#define DKGF_LD (DKH_GEMM_MMA_BK + 8)

#if defined(DKP_NVIDIA)
typedef uint4 dkgf_v4;
#elif defined(DKP_AMD)
typedef dkp_u32 dkgf_v4 __attribute__((ext_vector_type(4)));
#else
struct alignas(16) dkgf_v4 {
    dkp_u32 x, y, z, w;
};
#endif

/* Per-thread load state: R pixel rows (input) and R channel rows (weight),
 * R = 2 with 256 threads, 4 with 128. */
struct dkgf_rows {
    const dkp_u16 *x[4], *w[4];
    int y0[4], x0[4];
    bool pv[4], cv[4];
};

/* conv3d in place (dkh_gemm_args t_*): tap index th (over KT x KH) of output
 * frame z as its tap row *kh and the frame it reads, of x (*cache false) or
 * of the cache; frames outside x's [0, t_x) or the cache's [0, t_c) read as
 * zeros. */
DKP_DEV int dkgf_time_tap(const dkh_gemm_args &p, int z, int th, int *kh, bool *cache) {
    const int kt = th / (int)p.h.taps, f = z * p.t_step + kt * p.t_dil;
    *kh = th - kt * (int)p.h.taps;
    *cache = f < p.t_front && p.t_cache;
    return *cache ? f - p.t_zero : f - p.t_front;
}

/* Source addresses of slice (ci0, th, tw): src[0..R-1] the pixel rows,
 * src[R..R+RB-1] the channel rows of this thread's 16-byte chunk; ok = inside the problem.
 * T3: with conv3d's time taps (p.t_taps); a kernel without them never gets a
 * conv3d (hip_conv.c). */
template <int R, int RB = R, bool T3 = true>
DKP_DEV void dkgf_src(const dkh_gemm_args &p, const dkgf_rows &s, int ci0, int th, int tw, const dkp_u16 **src,
                      bool *ok) {
    int hin = (int)p.h.in_size;
    const int win = (int)p.w.in_size, ups = (int)p.ups;
    /* weight rows: th over (time tap, tap_h) walks the packed [KT*KH] rows as is */
    const dkh_i64 woff = ((dkh_i64)p.h.k0 + (dkh_i64)th * p.h.k_step) * p.a_s[2] +
                         ((dkh_i64)p.w.k0 + (dkh_i64)tw * p.w.k_step) * p.a_s[3] + ci0;
    dkh_i64 base = ci0;
    if (T3 && p.t_taps) {
        /* the block's output frame: z (one image, one group, no phases); the
         * cache's elements counted from x's element 0 */
        bool cache;
        const int t = dkgf_time_tap(p, (int)dkp_bid_z(), th, &th, &cache);
        if (cache) {
            base += (dkh_i64)(p.t_cache - p.b) / 2 + (dkh_i64)t * p.t_cs;
            if (t < 0 || t >= p.t_c) hin = 0; /* no row inside: zeros */
        } else {
            base += (dkh_i64)t * p.t_xs;
            if (t < 0 || t >= p.t_x) hin = 0;
        }
    }
    const int dy = th * (int)p.h.off_step, dx = tw * (int)p.w.off_step;
#pragma unroll
    for (int j = 0; j < R; j++) {
        int y = s.y0[j] + dy, x = s.x0[j] + dx;
        ok[j] = s.pv[j] && y >= 0 && y < hin && x >= 0 && x < win;
        if (ups != 1) {
            y /= ups;
            x /= ups;
        }
        src[j] = ok[j] ? s.x[j] + ((dkh_i64)y * p.b_s[2] + (dkh_i64)x * p.b_s[3] + base) : s.x[j];
    }
#pragma unroll
    for (int j = 0; j < RB; j++) {
        ok[R + j] = s.cv[j];
        src[R + j] = s.w[j] + woff;
    }
}

/* Slice -> shared memory.  NVIDIA: cp.async (16 bytes, zero-filled where !ok),
 * in flight while the previous slice is multiplied.  Elsewhere: registers
 * (dkgf_fetch before the multiply, dkgf_put after it). */
#if defined(DKP_NVIDIA)
DKP_DEV void dkgf_async(dkp_u16 *dst, const dkp_u16 *src, bool ok) {
    unsigned sa = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(sa), "l"(src), "r"(ok ? 16 : 0) : "memory");
}
#endif
DKP_DEV void dkgf_fetch(const dkp_u16 *const *src, const bool *ok, dkgf_v4 *v) {
#pragma unroll
    for (int j = 0; j < 4; j++) {
        dkgf_v4 z = {0u, 0u, 0u, 0u};
        v[j] = ok[j] ? *(const dkgf_v4 *)src[j] : z;
    }
}

/* The epilogue of one row's chunk of 8 channels m .. m + 7 (fp32 at src):
 * out = post_act(out_scale * act(acc + bias) + res_scale * residual), at
 * element yi of y (ri of the residual).  y and the residual move as 16-byte
 * vectors where vec (channels-last, aligned), else by element; each chunk's
 * residual is read before the same thread stores that chunk, so the residual
 * may be y itself.  ACT: 0 where both activations are none (template
 * constant), or -1 for p.act and p.post_act at run time (a jump per element). */
template <int DT, int ACT>
DKP_DEV void dkgf_row(const dkh_gemm_args &p, const float *src, const float *bias, dkh_i64 m, dkh_i64 yi, dkh_i64 ri,
                      bool vec) {
    float v[8];
#pragma unroll
    for (int e = 0; e < 8; e++) v[e] = p.out_scale * dkp_act(ACT < 0 ? p.act : ACT, src[e] + bias[e]);
    if (vec) {
        dkgf_v4 o;
        dkp_u32 w[4];
        if (p.has_res) {
            const dkgf_v4 rv = *(const dkgf_v4 *)(p.res + 2 * (dkp_u64)ri);
            w[0] = rv.x; w[1] = rv.y; w[2] = rv.z; w[3] = rv.w;
#pragma unroll
            for (int e = 0; e < 8; e++) v[e] += p.res_scale * dkp_to_f32((dkp_u16)(w[e / 2] >> (16 * (e % 2))), DT);
        }
        if (ACT < 0) {
#pragma unroll
            for (int e = 0; e < 8; e++) v[e] = dkp_act(p.post_act, v[e]);
        }
#pragma unroll
        for (int k = 0; k < 4; k++)
            w[k] = (dkp_u32)dkp_conv<DT>::from(v[2 * k]) | ((dkp_u32)dkp_conv<DT>::from(v[2 * k + 1]) << 16);
        o.x = w[0]; o.y = w[1]; o.z = w[2]; o.w = w[3];
        *(dkgf_v4 *)(p.y + 2 * (dkp_u64)yi) = o;
    } else {
#pragma unroll
        for (int e = 0; e < 8; e++) {
            if (m + e >= p.M) break;
            float x = v[e];
            if (p.has_res) x += p.res_scale * dkp_load(p.res, DT, ri + e * p.r_s[1]);
            if (ACT < 0) x = dkp_act(p.post_act, x);
            ((dkp_u16 *)p.y)[yi + e * p.y_s[1]] = dkp_conv<DT>::from(x);
        }
    }
}

/* The bias of channels m .. m + 7 (0 past M or without bias); a 16-byte vector
 * where it is in the activations' dtype, contiguous and aligned, else by element
 * (an f32 bias: once per chunk and thread, outside the row loop). */
template <int DT>
DKP_DEV void dkgf_bias(const dkh_gemm_args &p, dkh_i64 m, dkh_i64 co, float *bias) {
    if (p.has_bias && p.bias_dt == DT && p.bias_s == 1 && m + 8 <= p.M && ((p.bias + 2 * (dkp_u64)co) & 15) == 0) {
        const dkgf_v4 bv = *(const dkgf_v4 *)(p.bias + 2 * (dkp_u64)co);
        const dkp_u32 w[4] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
        for (int e = 0; e < 8; e++) bias[e] = dkp_to_f32((dkp_u16)(w[e / 2] >> (16 * (e % 2))), DT);
    } else {
#pragma unroll
        for (int e = 0; e < 8; e++)
            bias[e] = p.has_bias && m + e < p.M ? dkp_load(p.bias, p.bias_dt, (co + e) * p.bias_s) : 0.0f;
    }
}

/* Output element of row n (a pixel of the phase), channel co of image img. */
DKP_DEV dkh_i64 dkgf_pixel(const dkh_gemm_args &p, const dkh_i64 *s, dkh_i64 n, dkh_i64 img, dkh_i64 co) {
    const unsigned oc = (unsigned)p.w.out_count, py = (unsigned)n / oc, px = (unsigned)n - py * oc;
    const dkh_i64 oh = p.h.out_start + (dkh_i64)py * p.h.out_step, ow = p.w.out_start + (dkh_i64)px * p.w.out_step;
    return img * s[0] + oh * s[2] + ow * s[3] + co * s[1];
}

/* Epilogue of rows [nbase, nbase + PR) of a block's tile, staged in fp32 at
 * cstage (row pitch CLD floats, columns m0 .. m0 + BN - 1), by chunks of 8
 * channels (dkgf_row).  The mma.sync kernels stage their tiles in parts with
 * the accumulators live, so this walk keeps little in registers. */
template <int DT, int BN, int NT, int ACT>
DKP_DEV void dkgf_store_act(const dkh_gemm_args &p, const float *cstage, int CLD, int PR, dkh_i64 nbase, dkh_i64 m0,
                            dkh_i64 g, dkh_i64 img, int tid) {
    const int CH = BN / 8;
    for (int t = tid; t < PR * CH; t += NT) {
        const int row = t / CH, c8 = (t % CH) * 8;
        const dkh_i64 n = nbase + row, m = m0 + c8, co = g * p.M + m;
        if (n >= p.N || m >= p.M) continue;
        const dkh_i64 yi = dkgf_pixel(p, p.y_s, n, img, co), ri = dkgf_pixel(p, p.r_s, n, img, co);
        float bias[8];
        dkgf_bias<DT>(p, m, co, bias);
        const bool vec = m + 8 <= p.M && p.y_s[1] == 1 && ((p.y + 2 * (dkp_u64)yi) & 15) == 0 &&
                         (!p.has_res || (p.r_s[1] == 1 && ((p.res + 2 * (dkp_u64)ri) & 15) == 0));
        dkgf_row<DT, ACT>(p, cstage + row * CLD + c8, bias, m, yi, ri, vec);
    }
}
template <int DT, int BN, int NT>
DKP_DEV void dkgf_store(const dkh_gemm_args &p, const float *cstage, int CLD, int PR, dkh_i64 nbase, dkh_i64 m0,
                        dkh_i64 g, dkh_i64 img, int tid) {
    if (p.act == 0 && p.post_act == 0) dkgf_store_act<DT, BN, NT, 0>(p, cstage, CLD, PR, nbase, m0, g, img, tid);
    else dkgf_store_act<DT, BN, NT, -1>(p, cstage, CLD, PR, nbase, m0, g, img, tid);
}

/* The same for a whole staged tile whose accumulators are dead (the Hopper
 * kernels): a thread keeps one chunk of 8 channels in every row it stores (NT
 * is a multiple of the chunks per row), so its bias is loaded once, and the
 * activation is a template constant where it is none.  Per row and element,
 * the bias loads and the activation's jump table cost the seed
 * conv_transpose's epilogue ~1600 instructions per warp and tile (H100, ncu),
 * with the tensor cores idle. */
template <int DT, int BN, int NT, int ACT>
DKP_DEV void dkgf_store_tile_act(const dkh_gemm_args &p, const float *cstage, int CLD, int PR, dkh_i64 nbase,
                                 dkh_i64 m0, dkh_i64 g, dkh_i64 img, int tid) {
    const int CH = BN / 8, RS = NT / CH, c8 = (tid % CH) * 8;
    static_assert(NT % (BN / 8) == 0, "a thread's channel chunk is the same in every row");
    const dkh_i64 m = m0 + c8, co = g * p.M + m;
    if (m >= p.M) return;
    float bias[8];
    dkgf_bias<DT>(p, m, co, bias);
    const bool cvec = m + 8 <= p.M && p.y_s[1] == 1 && (!p.has_res || p.r_s[1] == 1);
#pragma unroll 2
    for (int row = tid / CH; row < PR; row += RS) {
        const dkh_i64 n = nbase + row;
        if (n >= p.N) break;
        const dkh_i64 yi = dkgf_pixel(p, p.y_s, n, img, co), ri = p.has_res ? dkgf_pixel(p, p.r_s, n, img, co) : 0;
        const bool vec = cvec && ((p.y + 2 * (dkp_u64)yi) & 15) == 0 &&
                         (!p.has_res || ((p.res + 2 * (dkp_u64)ri) & 15) == 0);
        dkgf_row<DT, ACT>(p, cstage + row * CLD + c8, bias, m, yi, ri, vec);
    }
}
template <int DT, int BN, int NT>
DKP_DEV void dkgf_store_tile(const dkh_gemm_args &p, const float *cstage, int CLD, int PR, dkh_i64 nbase, dkh_i64 m0,
                             dkh_i64 g, dkh_i64 img, int tid) {
    if (p.act == 0 && p.post_act == 0) dkgf_store_tile_act<DT, BN, NT, 0>(p, cstage, CLD, PR, nbase, m0, g, img, tid);
    else dkgf_store_tile_act<DT, BN, NT, -1>(p, cstage, CLD, PR, nbase, m0, g, img, tid);
}
/* A merged conv_transpose2d launch (nph > 1): the arguments of this block's
 * phase (its h, w, N, K) and its z without the phase. */
DKP_DEV dkh_gemm_args dkgf_phase(const dkh_gemm_args &p, dkh_i64 *z) {
    dkh_gemm_args q = p;
    *z = dkp_bid_z();
    if (p.nph > 1) {
        const int ph = (int)(*z % p.nph);
        *z /= p.nph;
#pragma unroll
        for (int i = 0; i < DKH_PHASES; i++)
            if (i == ph) {
                q.h = p.ph_h[i];
                q.w = p.ph_w[i];
                q.N = p.ph_n[i];
                q.K = p.ph_k[i];
            }
    }
    return q;
}

template <int FAM, int DT, int NT>
DKP_DEV void dkgf_gemm(const dkh_gemm_args &p, dkh_i64 z) {
    typedef dkt_tile<FAM> F;
    const int BM = DKH_GEMM_MMA_BM, BN = DKH_GEMM_MMA_BN, BK = DKH_GEMM_MMA_BK, LD = DKGF_LD;
    const int R = BM * 4 / NT, RS = NT / 4; /* rows per thread and operand, their spacing */
    /* warps: 2 along the pixels x NW/2 along the channels */
    const int NW = NT / F::WAVE, WTM = BM / 2, WTN = BN / (NW / 2), FM = WTM / F::M, FN = WTN / F::N;
    const int tid = dkp_tid(), lane = tid % F::WAVE, wave = tid / F::WAVE, wm = wave % 2, wn = wave / 2;
    const dkh_i64 g = z % p.groups, img = z / p.groups;
    /* channel tiles fastest (tiles_xy): the blocks of one pixel tile run together
     * and read its input rows from L2 once */
    const dkh_i64 n0 = (p.tiles_xy ? dkp_bid_y() : dkp_bid_x()) * BM;
    if (n0 >= p.N) return; /* merged phases: a smaller phase's grid is shorter */
    const dkh_i64 m0 = (p.tiles_xy ? dkp_bid_x() : dkp_bid_y()) * BN;
    const int chunk = tid % 4, lrow = tid / 4, cin = (int)p.cin_g, wtaps = (int)p.w.taps;
    const int slices = (int)(p.K / BK);
    dkgf_rows s;
    F tile;
    float acc[FM][FN][F::CR];
    float *cstage; /* the epilogue's staging: the A buffers, free after the main loop */

#pragma unroll
    for (int j = 0; j < R; j++) {
        const dkh_i64 n = n0 + lrow + RS * j, co = m0 + lrow + RS * j;
        const int oc = (int)p.w.out_count, nn = n < p.N ? (int)n : 0, py = nn / oc, px = nn - py * oc;
        s.pv[j] = n < p.N;
        s.cv[j] = co < p.M;
        s.y0[j] = py * (int)p.h.in_step + (int)p.h.off0;
        s.x0[j] = px * (int)p.w.in_step + (int)p.w.off0;
        s.x[j] = (const dkp_u16 *)p.b + img * p.b_s[0] + g * p.cin_g + chunk * 8;
        s.w[j] = (const dkp_u16 *)p.a + img * p.a_zs + g * p.a_gs + (s.cv[j] ? co : 0) * p.a_s[0] + chunk * 8;
    }
#pragma unroll
    for (int i = 0; i < FM; i++)
#pragma unroll
        for (int j = 0; j < FN; j++)
#pragma unroll
            for (int r = 0; r < F::CR; r++) acc[i][j][r] = 0.0f;

#if defined(DKP_NVIDIA)
    /* NVIDIA: a ring of 3 stages filled by cp.async two slices ahead; rows of 32
     * elements (64 bytes) with 16-byte chunks XOR-swizzled by (row / 2) % 4, so
     * cp.async's stores and ldmatrix's 8-row reads hit distinct banks without
     * padding and the ring fits the 48 KB of static shared memory. */
    {
        const int ST = 3, SA = BM * BK, SB = BN * BK;
        DKP_SHARED dkp_u16 As[ST * SA] __attribute__((aligned(128)));
        DKP_SHARED dkp_u16 Bs[ST * SB] __attribute__((aligned(128)));
        int ci0 = 0, th = 0, tw = 0; /* the next slice to issue */
        cstage = (float *)As;
        const dkp_u16 *src[2 * R];
        bool ok[2 * R];
        (void)LD;
        for (int sl = 0; sl < slices + ST - 1; sl++) {
            if (sl >= ST - 1) {
                /* slice sl - (ST-1) has landed (at most ST-2 groups still in flight) */
                asm volatile("cp.async.wait_group %0;" ::"n"(ST - 2) : "memory");
                dkp_sync();
            }
            if (sl < slices) {
                const int st = sl % ST;
                if (ci0 == 0) dkgf_src<R>(p, s, 0, th, tw, src, ok); /* a new tap: new rows */
#pragma unroll
                for (int j = 0; j < 2 * R; j++) {
                    const int row = lrow + RS * (j % R);
                    dkp_u16 *base = j < R ? As + st * SA : Bs + st * SB;
                    dkgf_async(base + tile.sw32(row, chunk * 8), src[j] + ci0, ok[j]);
                }
                ci0 += BK;
                if (ci0 == cin) {
                    ci0 = 0;
                    if (++tw == wtaps) {
                        tw = 0;
                        th++;
                    }
                }
            }
            asm volatile("cp.async.commit_group;" ::: "memory");
            if (sl >= ST - 1) {
                const int st = (sl - (ST - 1)) % ST;
                const dkp_u16 *Ac = As + st * SA, *Bc = Bs + st * SB;
#pragma unroll
                for (int kk = 0; kk < BK; kk += F::K) {
                    typename F::FA fa[FM];
                    typename F::FB fb[FN];
#pragma unroll
                    for (int i = 0; i < FM; i++) tile.load_a_sw(fa[i], Ac + (wm * WTM + i * F::M) * BK, kk, lane);
#pragma unroll
                    for (int j = 0; j < FN; j++) tile.load_b_sw(fb[j], Bc + (wn * WTN + j * F::N) * BK, kk, lane);
#pragma unroll
                    for (int i = 0; i < FM; i++)
#pragma unroll
                        for (int j = 0; j < FN; j++) tile.template mma_rr<DT>(acc[i][j], fa[i], fb[j], lane);
                }
            }
        }
        asm volatile("cp.async.wait_all;" ::: "memory");
    }
#else
    /* elsewhere: two padded buffers, slice s+1 fetched into registers before slice
     * s is multiplied and stored after it */
    {
        DKP_SHARED dkp_u16 As[2 * BM * LD] __attribute__((aligned(16)));
        DKP_SHARED dkp_u16 Bs[2 * BN * LD] __attribute__((aligned(16)));
        int ci0 = 0, th = 0, tw = 0;
        cstage = (float *)As;
        const dkp_u16 *src[4];
        bool ok[4];
        dkgf_v4 v[4];
        /* this thread's chunk in buffer b: rows lrow, lrow + 64 of A (pixels) and B (channels) */
#define DKGF_DST(b, j) ((j) < 2 ? As + (b) * BM * LD + (lrow + 64 * (j)) * LD + chunk * 8 \
                                : Bs + (b) * BN * LD + (lrow + 64 * ((j) - 2)) * LD + chunk * 8)
        if (slices > 0) {
            dkgf_src<2>(p, s, 0, 0, 0, src, ok);
            dkgf_fetch(src, ok, v);
#pragma unroll
            for (int j = 0; j < 4; j++) *(dkgf_v4 *)DKGF_DST(0, j) = v[j];
        }
        dkp_sync();
        for (int sl = 0; sl < slices; sl++) {
            const dkp_u16 *Ac = As + (sl & 1) * BM * LD, *Bc = Bs + (sl & 1) * BN * LD;
            const bool more = sl + 1 < slices;
            const int nb = (sl + 1) & 1;
            if (more) {
                /* next slice: channels, then tap_w, then tap_h */
                ci0 += BK;
                if (ci0 == cin) {
                    ci0 = 0;
                    if (++tw == wtaps) {
                        tw = 0;
                        th++;
                    }
                }
                dkgf_src<2>(p, s, ci0, th, tw, src, ok);
                dkgf_fetch(src, ok, v);
            }
#pragma unroll
            for (int kk = 0; kk < BK; kk += F::K) {
                typename F::FA fa[FM];
                typename F::FB fb[FN];
#pragma unroll
                for (int i = 0; i < FM; i++) tile.load_a(fa[i], Ac + (wm * WTM + i * F::M) * LD + kk, LD, lane);
#pragma unroll
                for (int j = 0; j < FN; j++) tile.load_b(fb[j], Bc + (wn * WTN + j * F::N) * LD + kk, LD, lane);
#pragma unroll
                for (int i = 0; i < FM; i++)
#pragma unroll
                    for (int j = 0; j < FN; j++) tile.template mma_rr<DT>(acc[i][j], fa[i], fb[j], lane);
            }
            if (more) {
#pragma unroll
                for (int j = 0; j < 4; j++) *(dkgf_v4 *)DKGF_DST(nb, j) = v[j];
            }
            dkp_sync();
        }
#undef DKGF_DST
    }
#endif

    /* epilogue: the accumulators pass through shared memory in fp32, 32 pixels
     * of the tile at a time (dkgf_store) */
    {
        const int CLD = BN + 4, PR = 32;
        for (int q = 0; q < BM / PR; q++) {
            dkp_sync();
#pragma unroll
            for (int i = 0; i < FM; i++)
#pragma unroll
                for (int r = 0; r < F::CR; r++) {
                    int rr, cc;
                    dkt_c_map(FAM, lane, r, &rr, &cc);
                    const int row = wm * WTM + i * F::M + rr - q * PR;
                    if (row < 0 || row >= PR) continue;
#pragma unroll
                    for (int j = 0; j < FN; j++) cstage[row * CLD + wn * WTN + j * F::N + cc] = acc[i][j][r];
                }
            dkp_sync();
            dkgf_store<DT, BN, NT>(p, cstage, CLD, PR, n0 + q * PR, m0, g, img, tid);
        }
    }
}

/* NVIDIA: two blocks per multiprocessor (<= 128 registers), so one block's
 * loads overlap the other's multiplies. */
#if defined(DKP_NVIDIA)
#define DKGF_KERNEL extern "C" __global__ void __launch_bounds__(DKH_THREADS, 2)
#else
#define DKGF_KERNEL DKP_KERNEL(DKH_THREADS)
#endif
/* kernel body: the block's phase q and z, then call (which reads them) */
#define DKGF_PHASE(call)                       \
    dkh_i64 z;                                 \
    const dkh_gemm_args q = dkgf_phase(p, &z); \
    call
DKGF_KERNEL dkk_gemm_mma_f16(dkh_gemm_args p) { DKGF_PHASE((dkgf_gemm<DKT_GEMM_F16, 2, DKH_THREADS>(q, z))); }
DKGF_KERNEL dkk_gemm_mma_bf16(dkh_gemm_args p) { DKGF_PHASE((dkgf_gemm<DKT_GEMM_BF16, 3, DKH_THREADS>(q, z))); }
#undef DKGF_KERNEL

/* NVIDIA: the same tile with 4 warps of 64x64 (2 blocks per multiprocessor,
 * <= 255 registers): 8 ldmatrix per 32 mma.sync instead of 6 per 16, so
 * shared-memory reads per FLOP drop by a third.  Launched with
 * DKH_GEMM_MMA_4WARP_THREADS threads where the code object has it (hip_conv.c). */
#if defined(DKP_NVIDIA)
extern "C" __global__ void __launch_bounds__(DKH_GEMM_MMA_4WARP_THREADS, 2) dkk_gemm_mma_4warp_f16(dkh_gemm_args p) {
    DKGF_PHASE((dkgf_gemm<DKT_GEMM_F16, 2, DKH_GEMM_MMA_4WARP_THREADS>(q, z)));
}
extern "C" __global__ void __launch_bounds__(DKH_GEMM_MMA_4WARP_THREADS, 2) dkk_gemm_mma_4warp_bf16(dkh_gemm_args p) {
    DKGF_PHASE((dkgf_gemm<DKT_GEMM_BF16, 3, DKH_GEMM_MMA_4WARP_THREADS>(q, z)));
}
#endif

#undef DKGF_LD
