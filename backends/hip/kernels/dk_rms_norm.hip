/* RMS norm over the channels of each position (dk_rms_norm), in the kernel
 * shapes of src/norm_plan.c (dk__rms_plan; arguments: dkh_rms_args):
 *   dkk_rms_norm_rows      channel-contiguous, any strides: a position's
 *                          `lanes` lanes are adjacent threads;
 *   dkk_rms_norm_rows_vec  the same in 16-byte vectors;
 *   dkk_rms_norm_columns   channel-strided (NCHW, NCDHW): adjacent threads
 *                          take adjacent positions (coalesced loads of one
 *                          channel), a position's lanes DKH_THREADS / lanes apart;
 *   dkk_rms_norm_columns_vec  the same with a thread per 16-byte vector of
 *                          adjacent positions (2-byte loads left the copy
 *                          bandwidth far behind: 20% of it on the H100);
 *   dkk_rms_norm_columns_tile  channel-strided in vectors, a block per tile
 *                          of p.tile positions x C channels staged in shared
 *                          memory: x read once, whole channel runs per load.
 * Each lane keeps up to DKH_RMS_KEEP_* (hip_kargs.h) of its units in registers between the sum
 * of squares (fp32) and the scaling; the lanes add their partial sums through
 * shared memory (one barrier).  In place is safe: each element is read and
 * written by one thread, after all of its reads. */
#include "dk_hip_port.h"
#include "../hip_kargs.h"

/* The rows vector kernel at 5 blocks of DKH_THREADS per SM on NVIDIA (48
 * registers, no spill with 3 kept vectors; 56 registers and 4 blocks
 * without the cap): docs/rms-norm.md. */
#define DKR_ROWS_VEC_BLOCKS 5

/* Element offsets of position pos in x and y (p.pdims position slots, slot 3
 * fastest).  Constant slot indices: a dynamically indexed argument array would
 * be copied to the stack.  32-bit division where the positions allow. */
template <typename I> DKP_DEV void dkr_walk(const dkh_rms_args &p, I pos, dkh_i64 &xo, dkh_i64 &yo) {
    xo = 0;
    yo = 0;
#pragma unroll
    for (int k = 3; k >= 0; k--) {
        if (k < 4 - p.pdims) break;
        I e = (I)p.pshape[k], i = k == 4 - p.pdims ? pos : pos % e;
        pos /= e;
        xo += (dkh_i64)i * p.x_ps[k];
        yo += (dkh_i64)i * p.y_ps[k];
    }
}

DKP_DEV void dkr_offsets(const dkh_rms_args &p, dkh_i64 pos, dkh_i64 &xo, dkh_i64 &yo) {
    if (p.positions <= 0xffffffffll) dkr_walk<dkp_u32>(p, (dkp_u32)pos, xo, yo);
    else dkr_walk<dkp_u64>(p, (dkp_u64)pos, xo, yo);
}

DKP_DEV float dkr_scale(const dkh_rms_args &p, float sum) {
    if (p.form == 1) { /* F.normalize(x, dim=1) * sqrt(C): the norm clamped below at eps (NaN stays NaN) */
        float n = dkp_sqrt(sum);
        return p.sqrt_c / (n < p.eps ? p.eps : n);
    }
    return 1.0f / dkp_sqrt(sum / (float)p.channels + p.eps);
}

/* The scaled value v through gamma g and beta b (where present) and the activation. */
DKP_DEV float dkr_affine(const dkh_rms_args &p, float v, float g, float b) {
    if (p.has_gamma) v *= g;
    if (p.has_beta) v += b;
    return dkp_act_fast(p.act, v);
}

DKP_DEV float dkr_out(const dkh_rms_args &p, float x, float s, dkh_i64 c) {
    float g = p.has_gamma ? dkp_load(p.gamma, p.affine_dt, c * p.gamma_s) : 1.0f;
    float b = p.has_beta ? dkp_load(p.beta, p.affine_dt, c * p.beta_s) : 0.0f;
    return dkr_affine(p, x * s, g, b);
}

/* The sum of the `lanes` partial sums of this thread's position (slot). */
DKP_DEV float dkr_total(float *sh, int slot, int lane, int lanes, float sum) {
    sh[slot * lanes + lane] = sum;
    dkp_sync();
    float tot = 0.0f;
    for (int i = 0; i < lanes; i++) tot += sh[slot * lanes + i];
    return tot;
}

/* Scalar lanes: COLUMNS picks the thread mapping. */
template <int DT, bool COLUMNS> DKP_DEV void dkr_scalar(const dkh_rms_args &p, float *sh) {
    typedef typename dkp_store<DT>::T T;
    const T *x = (const T *)p.x;
    T *y = (T *)p.y;
    int t = dkp_tid(), L = p.lanes, PB = DKH_THREADS / L;
    int lane = COLUMNS ? t / PB : t % L, slot = COLUMNS ? t % PB : t / L;
    dkh_i64 pos = dkp_bid_x() * PB + slot, xo = 0, yo = 0, C = p.channels;
    bool valid = pos < p.positions;
    float keep[DKH_RMS_KEEP_SCALARS], sum = 0.0f;
    if (valid) dkr_offsets(p, pos, xo, yo);
#pragma unroll
    for (int j = 0; j < DKH_RMS_KEEP_SCALARS; j++) {
        dkh_i64 c = lane + (dkh_i64)j * L;
        keep[j] = 0.0f;
        if (valid && c < C) {
            keep[j] = dkp_to_f32(x[xo + c * p.x_cs], DT);
            sum += keep[j] * keep[j];
        }
    }
    for (dkh_i64 c = lane + (dkh_i64)DKH_RMS_KEEP_SCALARS * L; valid && c < C; c += L) {
        float v = dkp_to_f32(x[xo + c * p.x_cs], DT);
        sum += v * v;
    }
    float s = dkr_scale(p, dkr_total(sh, slot, lane, L, sum));
    if (!valid) return;
#pragma unroll
    for (int j = 0; j < DKH_RMS_KEEP_SCALARS; j++) {
        dkh_i64 c = lane + (dkh_i64)j * L;
        if (c < C) y[yo + c * p.y_cs] = dkp_conv<DT>::from(dkr_out(p, keep[j], s, c));
    }
    for (dkh_i64 c = lane + (dkh_i64)DKH_RMS_KEEP_SCALARS * L; c < C; c += L)
        y[yo + c * p.y_cs] = dkp_conv<DT>::from(dkr_out(p, dkp_to_f32(x[xo + c * p.x_cs], DT), s, c));
}

struct alignas(16) dkr_v16 { dkp_u32 w[4]; };

template <int DT> DKP_DEV float dkr_get(const dkr_v16 &u, int j) {
    if (DT == 1) return dkp_u2f(u.w[j]);
    dkp_u32 w = u.w[j >> 1];
    return dkp_to_f32((dkp_u16)((j & 1) ? w >> 16 : w & 0xffffu), DT);
}

template <int DT> DKP_DEV float dkr_sq16(const dkr_v16 &u) {
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < (DT == 1 ? 4 : 8); j++) {
        float v = dkr_get<DT>(u, j);
        s += v * v;
    }
    return s;
}

/* VW floats as one vector of dtype DT. */
template <int DT> DKP_DEV dkr_v16 dkr_pack(const float *v) {
    dkr_v16 r;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        if constexpr (DT == 1) r.w[j] = dkp_f2u(v[j]);
        else r.w[j] = (dkp_u32)dkp_conv<DT>::from(v[2 * j]) | ((dkp_u32)dkp_conv<DT>::from(v[2 * j + 1]) << 16);
    }
    return r;
}

template <int DT> DKP_DEV dkr_v16 dkr_out16(const dkh_rms_args &p, const dkr_v16 &u, float s, dkh_i64 c0) {
    const int VW = DT == 1 ? 4 : 8;
    float v[8];
    if (p.aff_vec) {
        /* gamma / beta of these channels as one vector each (x's dtype, unit
         * stride): one load instead of one per element */
        dkr_v16 g, b;
        if (p.has_gamma) g = ((const dkr_v16 *)p.gamma)[c0 / VW];
        if (p.has_beta) b = ((const dkr_v16 *)p.beta)[c0 / VW];
#pragma unroll
        for (int j = 0; j < VW; j++)
            v[j] = dkr_affine(p, dkr_get<DT>(u, j) * s, p.has_gamma ? dkr_get<DT>(g, j) : 1.0f,
                              p.has_beta ? dkr_get<DT>(b, j) : 0.0f);
    } else {
#pragma unroll
        for (int j = 0; j < VW; j++) v[j] = dkr_out(p, dkr_get<DT>(u, j), s, c0 + j);
    }
    return dkr_pack<DT>(v);
}

template <int DT> DKP_DEV void dkr_rows_vec(const dkh_rms_args &p, float *sh) {
    const int VW = DT == 1 ? 4 : 8;
    int t = dkp_tid(), L = p.lanes, lane = t % L, slot = t / L;
    dkh_i64 pos = dkp_bid_x() * (DKH_THREADS / L) + slot, xo = 0, yo = 0, units = p.channels / VW;
    bool valid = pos < p.positions;
    dkr_v16 keep[DKH_RMS_KEEP_VECTORS];
    float sum = 0.0f;
    if (valid) dkr_offsets(p, pos, xo, yo);
    const dkr_v16 *xv = (const dkr_v16 *)p.x + xo / VW;
    dkr_v16 *yv = (dkr_v16 *)p.y + yo / VW;
#pragma unroll
    for (int j = 0; j < DKH_RMS_KEEP_VECTORS; j++) {
        dkh_i64 u = lane + (dkh_i64)j * L;
        if (valid && u < units) {
            keep[j] = xv[u];
            sum += dkr_sq16<DT>(keep[j]);
        }
    }
    for (dkh_i64 u = lane + (dkh_i64)DKH_RMS_KEEP_VECTORS * L; valid && u < units; u += L) sum += dkr_sq16<DT>(xv[u]);
    float s = dkr_scale(p, dkr_total(sh, slot, lane, L, sum));
    if (!valid) return;
#pragma unroll
    for (int j = 0; j < DKH_RMS_KEEP_VECTORS; j++) {
        dkh_i64 u = lane + (dkh_i64)j * L;
        if (u < units) yv[u] = dkr_out16<DT>(p, keep[j], s, u * VW);
    }
    for (dkh_i64 u = lane + (dkh_i64)DKH_RMS_KEEP_VECTORS * L; u < units; u += L) yv[u] = dkr_out16<DT>(p, xv[u], s, u * VW);
}

/* Channel c of VW adjacent positions (scales s) as dkr_out makes them. */
template <int DT> DKP_DEV dkr_v16 dkr_col_out(const dkh_rms_args &p, const dkr_v16 &u, const float *s, dkh_i64 c) {
    const int VW = DT == 1 ? 4 : 8;
    float g = p.has_gamma ? dkp_load(p.gamma, p.affine_dt, c * p.gamma_s) : 1.0f;
    float b = p.has_beta ? dkp_load(p.beta, p.affine_dt, c * p.beta_s) : 0.0f;
    float v[8];
#pragma unroll
    for (int e = 0; e < VW; e++) v[e] = dkr_affine(p, dkr_get<DT>(u, e) * s[e], g, b);
    return dkr_pack<DT>(v);
}

/* Columns in vectors: a thread takes VW adjacent positions (one 16-byte vector
 * per channel: the host checked the innermost position dim is unit-stride and
 * whole vectors long, every other stride whole vectors) and the channels
 * lane, lane + L, ...; adjacent threads take adjacent vectors.  The lanes add
 * their VW partial sums through shared memory. */
template <int DT> DKP_DEV void dkr_columns_vec(const dkh_rms_args &p, float *sh) {
    const int VW = DT == 1 ? 4 : 8;
    int t = dkp_tid(), L = p.lanes, S = DKH_THREADS / L, lane = t / S, slot = t % S;
    dkh_i64 pos = (dkp_bid_x() * (dkh_i64)S + slot) * VW, xo = 0, yo = 0, C = p.channels;
    bool valid = pos < p.positions;
    dkr_v16 keep[DKH_RMS_KEEP_COLUMN_VECTORS];
    float sum[8], s[8];
#pragma unroll
    for (int e = 0; e < 8; e++) sum[e] = 0.0f;
    if (valid) dkr_offsets(p, pos, xo, yo);
    const dkr_v16 *xv = (const dkr_v16 *)p.x;
    dkr_v16 *yv = (dkr_v16 *)p.y;
#pragma unroll
    for (int j = 0; j < DKH_RMS_KEEP_COLUMN_VECTORS; j++) {
        dkh_i64 c = lane + (dkh_i64)j * L;
        keep[j] = dkr_v16{};
        if (valid && c < C) {
            keep[j] = xv[(xo + c * p.x_cs) / VW];
#pragma unroll
            for (int e = 0; e < VW; e++) {
                float v = dkr_get<DT>(keep[j], e);
                sum[e] += v * v;
            }
        }
    }
    for (dkh_i64 c = lane + (dkh_i64)DKH_RMS_KEEP_COLUMN_VECTORS * L; valid && c < C; c += L) {
        dkr_v16 u = xv[(xo + c * p.x_cs) / VW];
#pragma unroll
        for (int e = 0; e < VW; e++) {
            float v = dkr_get<DT>(u, e);
            sum[e] += v * v;
        }
    }
#pragma unroll
    for (int e = 0; e < VW; e++) sh[(lane * S + slot) * VW + e] = sum[e];
    dkp_sync();
#pragma unroll
    for (int e = 0; e < VW; e++) {
        float tot = 0.0f;
        for (int l = 0; l < L; l++) tot += sh[(l * S + slot) * VW + e];
        s[e] = dkr_scale(p, tot);
    }
    if (!valid) return;
#pragma unroll
    for (int j = 0; j < DKH_RMS_KEEP_COLUMN_VECTORS; j++) {
        dkh_i64 c = lane + (dkh_i64)j * L;
        if (c < C) yv[(yo + c * p.y_cs) / VW] = dkr_col_out<DT>(p, keep[j], s, c);
    }
    for (dkh_i64 c = lane + (dkh_i64)DKH_RMS_KEEP_COLUMN_VECTORS * L; c < C; c += L)
        yv[(yo + c * p.y_cs) / VW] = dkr_col_out<DT>(p, xv[(xo + c * p.x_cs) / VW], s, c);
}

/* A tile of T = p.tile positions (a power of two, whole vectors: V = T / VW
 * per channel) x C channels, staged as vectors (c, v) at c * V + v, so
 * element (c, q) sits at c * T + q.  Three steps between barriers: the
 * vectors in (adjacent threads, adjacent vectors of a channel run); each
 * position's sum of squares by DKH_THREADS / T threads over a share of the
 * channels, added up by one thread per position; the vectors out, scaled.
 * Vectors past the last position are neither read nor written.  In place is
 * safe: the block reads its whole tile before it writes. */
template <int DT> DKP_DEV void dkr_columns_tile(const dkh_rms_args &p, dkr_v16 *tile, dkh_i64 *offs, float *red) {
    const int VW = DT == 1 ? 4 : 8, T = p.tile, V = T / VW, G = DKH_THREADS / T;
    const int t = dkp_tid(), units = (int)p.channels * V;
    const dkh_i64 pos0 = dkp_bid_x() * (dkh_i64)T;
    const dkr_v16 *xv = (const dkr_v16 *)p.x;
    dkr_v16 *yv = (dkr_v16 *)p.y;
    if (t < V) {
        dkh_i64 pos = pos0 + (dkh_i64)t * VW, xo = -1, yo = -1;
        if (pos < p.positions) dkr_offsets(p, pos, xo, yo);
        offs[2 * t] = xo;
        offs[2 * t + 1] = yo;
    }
    dkp_sync();
    for (int u = t; u < units; u += DKH_THREADS) {
        int c = u / V, v = u - c * V;
        dkh_i64 xo = offs[2 * v];
        if (xo >= 0) tile[u] = xv[(xo + (dkh_i64)c * p.x_cs) / VW];
        else tile[u] = dkr_v16{}; /* (as one select, the vector went through scratch on AMD) */
    }
    dkp_sync();
    {
        int q = t % T, g = t / T;
        float sum = 0.0f;
        for (int c = g; c < (int)p.channels; c += G) {
            float v = DT == 1 ? ((const float *)tile)[c * T + q] : dkp_to_f32(((const dkp_u16 *)tile)[c * T + q], DT);
            sum += v * v;
        }
        red[t] = sum;
    }
    dkp_sync();
    if (t < T) {
        float tot = 0.0f;
        for (int g = 0; g < G; g++) tot += red[g * T + t];
        red[DKH_THREADS + t] = dkr_scale(p, tot);
    }
    dkp_sync();
    for (int u = t; u < units; u += DKH_THREADS) {
        int c = u / V, v = u - c * V;
        dkh_i64 yo = offs[2 * v + 1];
        if (yo >= 0) yv[(yo + (dkh_i64)c * p.y_cs) / VW] = dkr_col_out<DT>(p, tile[u], red + DKH_THREADS + v * VW, c);
    }
}

DKP_KERNEL(DKH_THREADS) dkk_rms_norm_rows(dkh_rms_args p) {
    DKP_SHARED float sh[DKH_THREADS];
    if (p.dt == 1) dkr_scalar<1, false>(p, sh);
    else if (p.dt == 2) dkr_scalar<2, false>(p, sh);
    else dkr_scalar<3, false>(p, sh);
}

DKP_KERNEL(DKH_THREADS) dkk_rms_norm_columns(dkh_rms_args p) {
    DKP_SHARED float sh[DKH_THREADS];
    if (p.dt == 1) dkr_scalar<1, true>(p, sh);
    else if (p.dt == 2) dkr_scalar<2, true>(p, sh);
    else dkr_scalar<3, true>(p, sh);
}

DKP_KERNEL_BLOCKS(DKH_THREADS, DKR_ROWS_VEC_BLOCKS) dkk_rms_norm_rows_vec(dkh_rms_args p) {
    DKP_SHARED float sh[DKH_THREADS];
    if (p.dt == 1) dkr_rows_vec<1>(p, sh);
    else if (p.dt == 2) dkr_rows_vec<2>(p, sh);
    else dkr_rows_vec<3>(p, sh);
}

DKP_KERNEL(DKH_THREADS) dkk_rms_norm_columns_vec(dkh_rms_args p) {
    DKP_SHARED float sh[DKH_THREADS * 8];
    if (p.dt == 1) dkr_columns_vec<1>(p, sh);
    else if (p.dt == 2) dkr_columns_vec<2>(p, sh);
    else dkr_columns_vec<3>(p, sh);
}

DKP_KERNEL(DKH_THREADS) dkk_rms_norm_columns_tile(dkh_rms_args p) {
    DKP_SHARED dkr_v16 tile[DKH_RMS_TILE_BYTES / 16];
    DKP_SHARED dkh_i64 offs[2 * DKH_THREADS / 4];
    DKP_SHARED float red[2 * DKH_THREADS];
    if (p.dt == 1) dkr_columns_tile<1>(p, tile, offs, red);
    else if (p.dt == 2) dkr_columns_tile<2>(p, tile, offs, red);
    else dkr_columns_tile<3>(p, tile, offs, red);
}
