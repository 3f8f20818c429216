/* Group norm at memory bandwidth, in three kernels (see dkh_gn_args):
 *   dkk_gn_partial  fp32 (count, mean, M2) of one chunk, merged in shared memory
 *   dkk_gn_final    merges a group's chunks; per-channel (mean, rstd*gamma, beta)
 *   dkk_gn_apply    y = act((x - mean) * a + b), in place allowed
 * Every mode accumulates sums of (x - K) and (x - K)^2 with K the thread's
 * first value: no division per element, and no cancellation when
 * |mean| >> std.  The dense modes move 16-byte vectors. */
#include "dk_hip_port.h"
#include "../hip_kargs.h"

struct alignas(16) dkn_v16 { dkp_u32 w[4]; };

template <int DT> struct dkn_vec { static const int VW = DT == 1 ? 4 : 8; };

template <int DT> DKP_DEV float dkn_get(const dkn_v16 &u, int j) {
    if (DT == 1) return dkp_u2f(u.w[j]);
    dkp_u32 w = u.w[j >> 1];
    return dkp_to_f32((dkp_u16)((j & 1) ? w >> 16 : w & 0xffffu), DT);
}
template <int DT> DKP_DEV void dkn_set(dkn_v16 &u, int j, float v) {
    if constexpr (DT == 1) {
        u.w[j] = dkp_f2u(v);
    } else {
        dkp_u32 h = dkp_conv<DT>::from(v), w = u.w[j >> 1];
        u.w[j >> 1] = (j & 1) ? (w & 0xffffu) | (h << 16) : (w & 0xffff0000u) | h;
    }
}

/* Chan: merge (nb, mb, qb) into (na, ma, qa). */
DKP_DEV void dkn_merge(float &na, float &ma, float &qa, float nb, float mb, float qb) {
    if (nb <= 0.0f) return;
    float nn = na + nb, d = mb - ma;
    ma += d * (nb / nn);
    qa += qb + d * d * (na * nb / nn);
    na = nn;
}

/* Shifted sums as (mean, M2). */
DKP_DEV void dkn_unshift(float cnt, float k, float s1, float s2, float &mean, float &m2) {
    mean = cnt > 0.0f ? k + s1 / cnt : 0.0f;
    m2 = cnt > 0.0f ? s2 - s1 * (s1 / cnt) : 0.0f;
    if (m2 < 0.0f) m2 = 0.0f;
}

DKP_DEV void dkn_write(const dkh_gn_args &p, dkh_i64 ng, float n, float mean, float m2) {
    float *o = (float *)p.scratch + (ng * p.chunks + dkp_bid_x()) * 3;
    o[0] = n;
    o[1] = mean;
    o[2] = m2;
}

/* Tree merge of slot 8*tid of sh (count, mean, M2 planes); thread 0 writes. */
DKP_DEV void dkn_reduce_write(const dkh_gn_args &p, float *sh, dkh_i64 ng) {
    int t = dkp_tid();
    const int P = 8 * DKH_THREADS;
    dkp_sync();
    for (int s = DKH_THREADS / 2; s > 0; s >>= 1) {
        if (t < s) {
            float na = sh[8 * t], ma = sh[P + 8 * t], qa = sh[2 * P + 8 * t];
            dkn_merge(na, ma, qa, sh[8 * (t + s)], sh[P + 8 * (t + s)], sh[2 * P + 8 * (t + s)]);
            sh[8 * t] = na;
            sh[P + 8 * t] = ma;
            sh[2 * P + 8 * t] = qa;
        }
        dkp_sync();
    }
    if (t == 0) dkn_write(p, ng, sh[0], sh[P], sh[2 * P]);
}

/* Any strides, element by element: shifted sums (no division per element) in
 * 32-bit coordinates where the group fits them (a 64-bit division costs
 * several times a 32-bit one; this pass tests the VAEs' 3- and 4-channel
 * images and latents for NaN/Inf), walking channels fastest where they are
 * the smallest stride (channels-last: adjacent threads read adjacent
 * elements). */
template <int DT, typename I> DKP_DEV void dkn_partial_any_walk(const dkh_gn_args &p, float *sh) {
    const int P = 8 * DKH_THREADS;
    const I cg = (I)(p.shape[1] / p.groups), W = (I)p.shape[3], hw = (I)p.shape[2] * W, len = cg * hw;
    const bool cfast = cg > 1 && (W == 1 || p.x_s[1] < p.x_s[3]);
    dkh_i64 ng = dkp_bid_y(), n = ng / p.groups, g = ng % p.groups;
    I e0 = (I)dkp_bid_x() * (I)p.chunk, e1 = e0 + (I)p.chunk < len ? e0 + (I)p.chunk : len;
    const dkh_i64 base = n * p.x_s[0] + g * (dkh_i64)cg * p.x_s[1];
    float cnt = 0.0f, k = 0.0f, s1 = 0.0f, s2 = 0.0f, mean, m2;
    for (I e = e0 + (I)dkp_tid(); e < e1; e += DKH_THREADS) {
        I c, s;
        if (cfast) {
            c = e % cg;
            s = e / cg;
        } else {
            c = e / hw;
            s = e % hw;
        }
        float x = dkp_load(p.x, DT, base + (dkh_i64)c * p.x_s[1] + (dkh_i64)(s / W) * p.x_s[2] +
                                        (dkh_i64)(s % W) * p.x_s[3]);
        if (cnt == 0.0f) k = x;
        float d = x - k;
        s1 += d;
        s2 += d * d;
        cnt += 1.0f;
    }
    dkn_unshift(cnt, k, s1, s2, mean, m2);
    sh[8 * dkp_tid()] = cnt;
    sh[P + 8 * dkp_tid()] = mean;
    sh[2 * P + 8 * dkp_tid()] = m2;
    dkn_reduce_write(p, sh, ng);
}

template <int DT> DKP_DEV void dkn_partial_any(const dkh_gn_args &p, float *sh) {
    const dkh_i64 len = p.shape[1] / p.groups * p.shape[2] * p.shape[3];
    if (len + DKH_THREADS < ((dkh_i64)1 << 31)) dkn_partial_any_walk<DT, int>(p, sh);
    else dkn_partial_any_walk<DT, dkh_i64>(p, sh);
}

template <int DT> DKP_DEV void dkn_partial_nchw(const dkh_gn_args &p, float *sh) {
    const int VW = dkn_vec<DT>::VW, P = 8 * DKH_THREADS;
    dkh_i64 glen = p.shape[1] / p.groups * p.shape[2] * p.shape[3] / VW, ng = dkp_bid_y();
    const dkn_v16 *x = (const dkn_v16 *)p.x + ng * glen;   /* a group is one run of vectors */
    dkh_i64 v0 = dkp_bid_x() * p.chunk, v1 = v0 + p.chunk < glen ? v0 + p.chunk : glen, v = v0 + dkp_tid();
    float cnt = 0.0f, k = 0.0f, s1 = 0.0f, s2 = 0.0f, mean, m2;
    if (v < v1) k = dkn_get<DT>(x[v], 0);
    for (; v < v1; v += DKH_THREADS) {
        dkn_v16 u = x[v];
#pragma unroll
        for (int j = 0; j < VW; j++) {
            float d = dkn_get<DT>(u, j) - k;
            s1 += d;
            s2 += d * d;
        }
        cnt += (float)VW;
    }
    dkn_unshift(cnt, k, s1, s2, mean, m2);
    sh[8 * dkp_tid()] = cnt;
    sh[P + 8 * dkp_tid()] = mean;
    sh[2 * P + 8 * dkp_tid()] = m2;
    dkn_reduce_write(p, sh, ng);
}

template <int DT> DKP_DEV void dkn_partial_nhwc(const dkh_gn_args &p, float *sh, float *part) {
    const int VW = dkn_vec<DT>::VW, P = 8 * DKH_THREADS;
    int C = (int)p.shape[1], cv = C / VW, rows = DKH_THREADS / cv, t = dkp_tid(), col = t % cv, row = t / cv;
    dkh_i64 hw = p.shape[2] * p.shape[3], n = dkp_bid_y();
    dkh_i64 p0 = dkp_bid_x() * p.chunk, p1 = p0 + p.chunk < hw ? p0 + p.chunk : hw;
    const dkn_v16 *x = (const dkn_v16 *)p.x + n * hw * cv + col;
    float k[8], s1[8], s2[8], cnt = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; j++) k[j] = s1[j] = s2[j] = 0.0f;
    if (row < rows) {
        dkh_i64 q = p0 + row;
        if (q < p1) {
            dkn_v16 u = x[q * cv];
#pragma unroll
            for (int j = 0; j < VW; j++) k[j] = dkn_get<DT>(u, j);
        }
        for (; q < p1; q += 4 * rows) {
            dkn_v16 u[4] = {};
#pragma unroll
            for (int r = 0; r < 4; r++)
                if (q + r * rows < p1) u[r] = x[(q + r * rows) * cv];
#pragma unroll
            for (int r = 0; r < 4; r++) {
                if (q + r * rows < p1) {
#pragma unroll
                    for (int j = 0; j < VW; j++) {
                        float d = dkn_get<DT>(u[r], j) - k[j];
                        s1[j] += d;
                        s2[j] += d * d;
                    }
                    cnt += 1.0f;
                }
            }
        }
    }
    /* Entry (thread t, channel j of its vector) at plane * P + j * DKH_THREADS + t:
     * conflict-free stores. */
#pragma unroll
    for (int j = 0; j < VW; j++) {
        float mean, m2;
        dkn_unshift(cnt, k[j], s1[j], s2[j], mean, m2);
        sh[j * DKH_THREADS + t] = cnt;
        sh[P + j * DKH_THREADS + t] = mean;
        sh[2 * P + j * DKH_THREADS + t] = m2;
    }
    dkp_sync();
    /* A group's rows x cg entries are summed by L threads as sums shifted by the
     * group's first entry's mean (additive, so the L partials add up; a long chain
     * of Chan steps would round the mean at every step), then one thread adds
     * the L partials.  With one thread per group this merge was most of the
     * block's time at 512 channels (ncu, 2026-11-25). */
    int cg = C / (int)p.groups, G = (int)p.groups, L = G >= DKH_THREADS ? 1 : DKH_THREADS / G, ne = rows * cg;
    for (int gi = t / L; gi < G; gi += DKH_THREADS / L) {
        int c0 = gi * cg;
        float kg = sh[P + (c0 % VW) * DKH_THREADS + c0 / VW], na = 0.0f, a1 = 0.0f, a2 = 0.0f;
        for (int e = t % L; e < ne; e += L) {
            int r = e % rows, c = c0 + e / rows, s = (c % VW) * DKH_THREADS + r * cv + c / VW;
            float d = sh[P + s] - kg;
            na += sh[s];
            a1 += sh[s] * d;
            a2 += sh[2 * P + s] + sh[s] * d * d;
        }
        if (L == 1) {
            float mean, m2;
            dkn_unshift(na, kg, a1, a2, mean, m2);
            dkn_write(p, n * p.groups + gi, na, mean, m2);
        } else {
            part[t] = na;
            part[DKH_THREADS + t] = a1;
            part[2 * DKH_THREADS + t] = a2;
        }
    }
    if (L == 1) return;
    dkp_sync();
    if (t < G) {
        int c0 = t * cg;
        float kg = sh[P + (c0 % VW) * DKH_THREADS + c0 / VW], na = 0.0f, a1 = 0.0f, a2 = 0.0f, mean, m2;
        for (int l = 0; l < L; l++) {
            na += part[t * L + l];
            a1 += part[DKH_THREADS + t * L + l];
            a2 += part[2 * DKH_THREADS + t * L + l];
        }
        dkn_unshift(na, kg, a1, a2, mean, m2);
        dkn_write(p, n * p.groups + t, na, mean, m2);
    }
}

template <int DT> DKP_DEV void dkn_partial(const dkh_gn_args &p, float *sh, float *part) {
    if (p.mode == 1) dkn_partial_nchw<DT>(p, sh);
    else if (p.mode == 2) dkn_partial_nhwc<DT>(p, sh, part);
    else dkn_partial_any<DT>(p, sh);
}

DKP_KERNEL(DKH_THREADS) dkk_gn_partial(dkh_gn_args p) {
    DKP_SHARED float sh[3 * 8 * DKH_THREADS]; /* one array for every dtype's body */
    DKP_SHARED float part[3 * DKH_THREADS];   /* the NHWC body's per-group partials */
    if (p.dt == 1) dkn_partial<1>(p, sh, part);
    else if (p.dt == 2) dkn_partial<2>(p, sh, part);
    else dkn_partial<3>(p, sh, part);
}

DKP_KERNEL(DKH_THREADS) dkk_gn_final(dkh_gn_args p) {
    DKP_SHARED float sh[3 * DKH_THREADS];
    int t = dkp_tid();
    dkh_i64 ng = dkp_bid_x(), n = ng / p.groups, g = ng % p.groups, C = p.shape[1], cg = C / p.groups;
    float cnt = 0.0f, mean = 0.0f, m2 = 0.0f;
    if (p.stats_mode == 2 && t == 0) { /* statistics given: (mean, variance) */
        const float *st = (const float *)p.stats + ng * 2;
        sh[0] = 1.0f;
        sh[DKH_THREADS] = st[0];
        sh[2 * DKH_THREADS] = st[1];
    }
    for (dkh_i64 i = t; i < p.chunks && p.stats_mode != 2; i += DKH_THREADS) {
        const float *o = (const float *)p.scratch + (ng * p.chunks + i) * 3;
        dkn_merge(cnt, mean, m2, o[0], o[1], o[2]);
    }
    if (p.stats_mode != 2) {
        sh[t] = cnt;
        sh[DKH_THREADS + t] = mean;
        sh[2 * DKH_THREADS + t] = m2;
    }
    dkp_sync();
    for (int s = DKH_THREADS / 2; s > 0 && p.stats_mode != 2; s >>= 1) {
        if (t < s) {
            float na = sh[t], ma = sh[DKH_THREADS + t], qa = sh[2 * DKH_THREADS + t];
            dkn_merge(na, ma, qa, sh[t + s], sh[DKH_THREADS + t + s], sh[2 * DKH_THREADS + t + s]);
            sh[t] = na;
            sh[DKH_THREADS + t] = ma;
            sh[2 * DKH_THREADS + t] = qa;
        }
        dkp_sync();
    }
    if (p.stats_mode == 1) {
        if (t == 0) {
            float *st = (float *)p.stats + ng * 2;
            st[0] = sh[DKH_THREADS];
            st[1] = sh[2 * DKH_THREADS] / sh[0];
        }
        return;
    }
    {
        float var = sh[2 * DKH_THREADS] / sh[0], rstd = 1.0f / dkp_sqrt((var > 0.0f ? var : 0.0f) + p.eps);
        for (dkh_i64 c = g * cg + t; c < g * cg + cg; c += DKH_THREADS) {
            float *o = (float *)p.scratch + p.coef + (n * C + c) * 4;
            o[0] = sh[DKH_THREADS];
            o[1] = p.has_gamma ? rstd * dkp_load(p.gamma, p.affine_dt, c * p.gamma_s) : rstd;
            o[2] = p.has_beta ? dkp_load(p.beta, p.affine_dt, c * p.beta_s) : 0.0f;
            o[3] = 0.0f;
        }
    }
}

/* ACT >= 0: the activation as a compile-time constant (the host's SiLU, the
 * common case); -1: p.act at run time.  As a run-time value it put a branch on
 * every element (the Vulkan shaders measured 4-31% from the same change). */
/* The vector paths walk the tensor backwards: the partial kernel read it
 * forwards, so its last tens of MB are still in the L2 when this one starts. */
template <int DT, int ACT> DKP_DEV void dkn_apply(const dkh_gn_args &p) {
    const int act = ACT >= 0 ? ACT : p.act;
    const int VW = dkn_vec<DT>::VW;
    const float *coef = (const float *)p.scratch + p.coef;
    dkh_i64 C = p.shape[1], H = p.shape[2], W = p.shape[3], step = p.nblocks * DKH_THREADS;
    dkh_i64 i = dkp_bid_x() * DKH_THREADS + dkp_tid();
    if (p.mode == 2) {
        /* grid (pixel chunk, n), chunks of its own (dk__gn_split): a thread keeps
         * one channel vector and its coefficients over the chunk's pixels */
        int cv = (int)C / VW, rows = DKH_THREADS / cv, t = dkp_tid(), col = t % cv, row = t / cv;
        /* chunks and images in reverse (see below) */
        dkh_i64 hw = H * W, n = p.shape[0] - 1 - dkp_bid_y(), p0 = (p.a_chunks - 1 - dkp_bid_x()) * p.a_chunk,
                p1 = p0 + p.a_chunk < hw ? p0 + p.a_chunk : hw;
        const dkn_v16 *x = (const dkn_v16 *)p.x + n * hw * cv + col;
        dkn_v16 *y = (dkn_v16 *)p.y + n * hw * cv + col;
        float m[8], a[8], b[8];
        if (row >= rows) return;
        /* (mean, a, b, 0) per channel as one 16-byte load: three scalar loads per
         * channel made the coefficients most of the L1 traffic at 512 channels */
#pragma unroll
        for (int j = 0; j < VW; j++) {
            const dkn_v16 k = ((const dkn_v16 *)coef)[n * C + col * VW + j];
            m[j] = dkp_u2f(k.w[0]);
            a[j] = dkp_u2f(k.w[1]);
            b[j] = dkp_u2f(k.w[2]);
        }
        /* four pixels per step: their loads are in flight together */
        for (dkh_i64 q = p0 + row; q < p1; q += 4 * rows) {
            dkn_v16 u[4] = {};
#pragma unroll
            for (int r = 0; r < 4; r++)
                if (q + r * rows < p1) u[r] = x[(q + r * rows) * cv];
#pragma unroll
            for (int r = 0; r < 4; r++) {
#pragma unroll
                for (int j = 0; j < VW; j++)
                    dkn_set<DT>(u[r], j, dkp_act_fast(act, (dkn_get<DT>(u[r], j) - m[j]) * a[j] + b[j]));
                if (q + r * rows < p1) y[(q + r * rows) * cv] = u[r];
            }
        }
        return;
    }
    if (p.mode == 1 && p.plane_vecs) {
        /* one (n, c) plane per grid row: the coefficients once per block, and no
         * division per vector to find its channel (the 64-bit division was about
         * a third of this kernel's time at 512 channels @ 512) */
        const int PV = 8; /* plane_vecs / DKH_THREADS */
        const dkh_i64 hwv = H * W / VW, nx = (hwv + p.plane_vecs - 1) / p.plane_vecs;
        const dkh_i64 plane = p.shape[0] * C - 1 - dkp_bid_y(), v0 = (nx - 1 - dkp_bid_x()) * p.plane_vecs + dkp_tid();
        const dkn_v16 *x = (const dkn_v16 *)p.x + plane * hwv;
        dkn_v16 *y = (dkn_v16 *)p.y + plane * hwv;
        const float *k = coef + plane * 4;
        const float m = k[0], a = k[1], b = k[2];
        dkn_v16 u[PV];
#pragma unroll
        for (int j = 0; j < PV; j++)
            if (v0 + j * DKH_THREADS < hwv) u[j] = x[v0 + j * DKH_THREADS];
#pragma unroll
        for (int j = 0; j < PV; j++)
            if (v0 + j * DKH_THREADS < hwv) {
#pragma unroll
                for (int e = 0; e < VW; e++) dkn_set<DT>(u[j], e, dkp_act_fast(act, (dkn_get<DT>(u[j], e) - m) * a + b));
                y[v0 + j * DKH_THREADS] = u[j];
            }
        return;
    }
    if (p.mode == 1) {
        const dkn_v16 *x = (const dkn_v16 *)p.x;
        dkn_v16 *y = (dkn_v16 *)p.y;
        dkh_i64 hwv = H * W / VW;
        for (; i < p.total; i += step) {
            const dkh_i64 iv = p.total - 1 - i;
            dkn_v16 u = x[iv];
            const float *k = coef + (iv / hwv) * 4; /* one channel per vector: iv = (n*C + c)*hwv + s */
            float m = k[0], a = k[1], b = k[2];
#pragma unroll
            for (int j = 0; j < VW; j++) dkn_set<DT>(u, j, dkp_act_fast(act, (dkn_get<DT>(u, j) - m) * a + b));
            y[iv] = u;
        }
        return;
    }
    for (; i < p.total; i += step) {
        dkh_i64 w = i % W, r = i / W, h = r % H, c = (r / H) % C, n = r / H / C;
        const float *k = coef + (n * C + c) * 4;
        float v = dkp_load(p.x, DT, n * p.x_s[0] + c * p.x_s[1] + h * p.x_s[2] + w * p.x_s[3]);
        dkp_store_f(p.y, DT, n * p.y_s[0] + c * p.y_s[1] + h * p.y_s[2] + w * p.y_s[3],
                    dkp_act(act, (v - k[0]) * k[1] + k[2]));
    }
}

template <int DT> DKP_DEV void dkn_apply_act(const dkh_gn_args &p) {
    if (p.act == 2) dkn_apply<DT, 2>(p);
    else dkn_apply<DT, -1>(p);
}

DKP_KERNEL(DKH_THREADS) dkk_gn_apply(dkh_gn_args p) {
    if (p.dt == 1) dkn_apply_act<1>(p);
    else if (p.dt == 2) dkn_apply_act<2>(p);
    else dkn_apply_act<3>(p);
}
