/* Memory-bound kernels: elementwise ops (activation, add, upsample, convert)
 * and layer norm (group norm: dk_group_norm.hip).  Any strides, dtype
 * chosen at run time (the branches are uniform); fp32 arithmetic, two-pass
 * statistics (mean, then the mean of squared deviations) for accuracy. */
#include "dk_hip_port.h"
#include "../hip_kargs.h"

/* Sum of v over the block (all threads get the result). */
DKP_DEV float dke_block_sum(float v, float *red) {
    int tid = dkp_tid();
    red[tid] = v;
    dkp_sync();
    for (int s = DKH_THREADS / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] += red[tid + s];
        dkp_sync();
    }
    v = red[0];
    dkp_sync();
    return v;
}

/* Source index of walk dim k of an upsample: H and W (at p.hw_pos) scaled. */
DKP_DEV dkh_i64 dke_src(const dkh_elt_args &p, int k, dkh_i64 i) {
    if (k != (p.hw_pos & 3) && k != (p.hw_pos >> 2)) return i;
    dkh_i64 num = k == (p.hw_pos & 3) ? p.a_h : p.a_w;
    if (p.up32) return (dkh_i64)((unsigned)i * (unsigned)num / (unsigned)p.shape[k]);
    return i * num / p.shape[k];
}

/* Index i of the walk -> (i0, i1, i2, i3), in 32-bit arithmetic where it fits
 * (a 64-bit division costs several times a 32-bit one). */
DKP_DEV void dke_split(const dkh_elt_args &p, dkh_i64 i, dkh_i64 *ix) {
    if (p.total < ((dkh_i64)1 << 31)) {
        unsigned r = (unsigned)i, s3 = (unsigned)p.shape[3], s2 = (unsigned)p.shape[2], s1 = (unsigned)p.shape[1];
        ix[3] = r % s3, r /= s3;
        ix[2] = r % s2, r /= s2;
        ix[1] = r % s1, ix[0] = r / s1;
    } else {
        dkh_i64 r = i / p.shape[3];
        ix[3] = i % p.shape[3];
        ix[2] = r % p.shape[2], r /= p.shape[2];
        ix[1] = r % p.shape[1], ix[0] = r / p.shape[1];
    }
}

/* Eight elements at element index i (a multiple of 8, base 16-byte aligned) as
 * one or two 16-byte vectors. */
struct alignas(16) dke_v16 { dkp_u32 w[4]; };
DKP_DEV void dke_load8(dkp_u64 base, int dt, dkh_i64 i, float *v) {
    const dke_v16 *q = (const dke_v16 *)base + (dt == 1 ? i / 4 : i / 8);
    if (dt == 1) {
        dke_v16 u0 = q[0], u1 = q[1];
        for (int j = 0; j < 4; j++) v[j] = dkp_u2f(u0.w[j]), v[4 + j] = dkp_u2f(u1.w[j]);
    } else {
        dke_v16 u = q[0];
        for (int j = 0; j < 8; j++) v[j] = dkp_to_f32((dkp_u16)(u.w[j / 2] >> (16 * (j % 2))), dt);
    }
}
DKP_DEV void dke_store8(dkp_u64 base, int dt, dkh_i64 i, const float *v) {
    dke_v16 *q = (dke_v16 *)base + (dt == 1 ? i / 4 : i / 8);
    if (dt == 1) {
        dke_v16 u0, u1;
        for (int j = 0; j < 4; j++) u0.w[j] = dkp_f2u(v[j]), u1.w[j] = dkp_f2u(v[4 + j]);
        q[0] = u0;
        q[1] = u1;
    } else {
        dke_v16 u;
        for (int j = 0; j < 4; j++) {
            dkp_u32 lo = dt == 2 ? dkp_f2h(v[2 * j]) : dkp_f2b(v[2 * j]);
            dkp_u32 hi = dt == 2 ? dkp_f2h(v[2 * j + 1]) : dkp_f2b(v[2 * j + 1]);
            u.w[j] = lo | hi << 16;
        }
        q[0] = u;
    }
}

/* ADD: oscale * act(alpha * v + beta * w); ACT: oscale * act(alpha * v) (a
 * multiply by 1 is exact, so the unit scales of plain calls change nothing). */
DKP_DEV float dke_apply(const dkh_elt_args &p, float v, float w) {
    if (p.op == DKH_ELT_ADD) return p.oscale * dkp_act(p.act, p.alpha * v + p.beta * w);
    if (p.op == DKH_ELT_ACT) return p.oscale * dkp_act(p.act, p.alpha * v);
    return v;
}

/* ACT / CONVERT where a's unit-stride dim (walk position tpos - 1) is not y's
 * (a layout change): 32 x 32 tiles over that dim and walk dim 3 through shared
 * memory, so that the reads of a and the writes of y are both coalesced (in y's
 * order alone a 256-channel 512x512 f16 NHWC -> f32 NCHW convert read a with a
 * stride of C: 0.99 ms on the H100).  Blocks stride over the tiles. */
DKP_DEV void dke_transpose(const dkh_elt_args &p) {
    DKP_SHARED float tile[32 * 33];
    const int k = p.tpos - 1, o0 = k == 0 ? 1 : 0, o1 = k == 2 ? 1 : 2, tx = dkp_tid() % 32, ty = dkp_tid() / 32;
    const dkh_i64 s3 = p.shape[3], sk = p.shape[k], t3 = (s3 + 31) / 32, tk = (sk + 31) / 32;
    const dkh_i64 tiles = t3 * tk * p.shape[o0] * p.shape[o1];
    for (dkh_i64 t = dkp_bid_x(); t < tiles; t += p.nblocks) {
        dkh_i64 r = t;
        const dkh_i64 b3 = (r % t3) * 32;
        r /= t3;
        const dkh_i64 bk = (r % tk) * 32;
        r /= tk;
        const dkh_i64 i1 = r % p.shape[o1], i0 = r / p.shape[o1];
        const dkh_i64 ba = i0 * p.a_s[o0] + i1 * p.a_s[o1], by = i0 * p.y_s[o0] + i1 * p.y_s[o1];
        for (int rr = ty; rr < 32; rr += DKH_THREADS / 32)
            if (b3 + rr < s3 && bk + tx < sk)
                tile[rr * 33 + tx] = dkp_load(p.a, p.dt_a, ba + (bk + tx) * p.a_s[k] + (b3 + rr) * p.a_s[3]);
        dkp_sync();
        for (int rr = ty; rr < 32; rr += DKH_THREADS / 32)
            if (b3 + tx < s3 && bk + rr < sk)
                dkp_store_f(p.y, p.dt_y, by + (bk + rr) * p.y_s[k] + (b3 + tx) * p.y_s[3],
                            dke_apply(p, tile[tx * 33 + rr], 0.0f));
        dkp_sync();
    }
}

/* CONVERT with a layout change (tpos as for dke_transpose) between 16-bit tensors
 * of one dtype whose two unit-stride dims split into 16-byte vectors
 * (hipops_transpose16): raw bits through 64 x 64 shared tiles, 16-byte loads
 * along a's unit dim (k) and 16-byte stores along y's (walk dim 3).  It is
 * what the NCHW <-> NHWC copies of the conv operands take; dke_transpose
 * moved them at ~1 TB/s on the H100 (2-byte accesses, run-time dtype, 64-bit
 * index math per tile).  Tile row r (walk dim 3) holds 8 chunks of 8 k-values;
 * chunk c sits at slot c ^ (r / 8): the row stores fill whole rows, and the
 * column reads of a warp (rows 8j + e, j = 0..7, four neighbouring k) meet 16
 * distinct banks, two lanes per word.  Blocks stride over the tiles; the host
 * keeps the tile count and every dim below 2^31. */
DKP_KERNEL(DKH_THREADS) dkk_transpose16(dkh_elt_args p) {
    DKP_SHARED dke_v16 tile[64 * 8];
    const int k = p.tpos - 1, o0 = k == 0 ? 1 : 0, o1 = k == 2 ? 1 : 2;
    const unsigned t = (unsigned)dkp_tid(), s3 = (unsigned)p.shape[3], sk = (unsigned)p.shape[k];
    const unsigned t3 = (s3 + 63) / 64, tk = (sk + 63) / 64, n1 = (unsigned)p.shape[o1];
    const dkh_i64 tiles = (dkh_i64)t3 * tk * p.shape[o0] * n1;
    const dkp_u16 *sh = (const dkp_u16 *)tile;
    for (dkh_i64 ti = dkp_bid_x(); ti < tiles; ti += p.nblocks) {
        unsigned r = (unsigned)ti;
        const unsigned b3 = (r % t3) * 64;
        r /= t3;
        const unsigned bk = (r % tk) * 64;
        r /= tk;
        const unsigned i1 = r % n1, i0 = r / n1;
        const dkh_i64 ba = i0 * p.a_s[o0] + i1 * p.a_s[o1], by = i0 * p.y_s[o0] + i1 * p.y_s[o1];
#pragma unroll
        for (int q = 0; q < 2; q++) {
            const unsigned row = t / 8 + 32 * q, c = t % 8;
            if (b3 + row < s3 && bk + 8 * c < sk)
                tile[row * 8 + (c ^ (row / 8))] =
                    *((const dke_v16 *)p.a + (ba + (dkh_i64)(b3 + row) * p.a_s[3] + bk + 8 * c) / 8);
        }
        dkp_sync();
#pragma unroll
        for (int q = 0; q < 2; q++) {
            const unsigned kk = t / 8 + 32 * q, j = t % 8, at = ((kk / 8) ^ j) * 8 + kk % 8;
            if (bk + kk < sk && b3 + 8 * j < s3) {
                dke_v16 o;
#pragma unroll
                for (int e = 0; e < 8; e += 2)
                    o.w[e / 2] = (dkp_u32)sh[(8 * j + e) * 64 + at] | (dkp_u32)sh[(8 * j + e + 1) * 64 + at] << 16;
                *((dke_v16 *)p.y + (by + (dkh_i64)(bk + kk) * p.y_s[k] + b3 + 8 * j) / 8) = o;
            }
        }
        dkp_sync();
    }
}

/* CONVERT with a layout change in 16-byte vectors where the dtypes differ or are
 * 32-bit (hipops_transpose16 returns 2): f32 / f16 / bf16 in and out, a's unit
 * dim (k) and y's (walk dim 3) in whole vectors (8 or 4 elements).  64 x 64
 * tiles of floats (16 KB): tile row r (walk dim 3) holds 16 chunks of 4 k-values,
 * chunk c at slot c ^ sw(r), sw = (r / 8) % 8 for 16-bit y (an output vector is
 * 8 rows of one k) and (r / 4) % 8 for f32 y (4 rows): a warp's column reads
 * (8 row groups, four neighbouring k) then meet 32 distinct banks. */
DKP_DEV float dket_tile_get(const float *tile, unsigned r, unsigned kk, unsigned sw) {
    return tile[(r * 16 + ((kk / 4) ^ sw)) * 4 + kk % 4];
}
DKP_KERNEL(DKH_THREADS) dkk_transpose_cvt(dkh_elt_args p) {
    DKP_SHARED dke_v16 tile[64 * 16];
    const int k = p.tpos - 1, o0 = k == 0 ? 1 : 0, o1 = k == 2 ? 1 : 2;
    const int a32 = p.dt_a == 1, y32 = p.dt_y == 1;
    const unsigned t = (unsigned)dkp_tid(), s3 = (unsigned)p.shape[3], sk = (unsigned)p.shape[k];
    const unsigned t3 = (s3 + 63) / 64, tk = (sk + 63) / 64, n1 = (unsigned)p.shape[o1];
    const dkh_i64 tiles = (dkh_i64)t3 * tk * p.shape[o0] * n1;
    const float *tf = (const float *)tile;
    for (dkh_i64 ti = dkp_bid_x(); ti < tiles; ti += p.nblocks) {
        unsigned r = (unsigned)ti;
        const unsigned b3 = (r % t3) * 64;
        r /= t3;
        const unsigned bk = (r % tk) * 64;
        r /= tk;
        const unsigned i1 = r % n1, i0 = r / n1;
        const dkh_i64 ba = i0 * p.a_s[o0] + i1 * p.a_s[o1], by = i0 * p.y_s[o0] + i1 * p.y_s[o1];
        if (a32) {
#pragma unroll
            for (int q = 0; q < 4; q++) {
                const unsigned row = t / 16 + 16 * q, c = t % 16, sw = y32 ? (row / 4) % 8 : (row / 8) % 8;
                if (b3 + row < s3 && bk + 4 * c < sk)
                    tile[row * 16 + (c ^ sw)] = *((const dke_v16 *)p.a + (ba + (dkh_i64)(b3 + row) * p.a_s[3] + bk + 4 * c) / 4);
            }
        } else {
#pragma unroll
            for (int q = 0; q < 2; q++) {
                const unsigned row = t / 8 + 32 * q, c = t % 8, sw = y32 ? (row / 4) % 8 : (row / 8) % 8;
                if (b3 + row < s3 && bk + 8 * c < sk) {
                    const dke_v16 u = *((const dke_v16 *)p.a + (ba + (dkh_i64)(b3 + row) * p.a_s[3] + bk + 8 * c) / 8);
                    dke_v16 lo, hi;
#pragma unroll
                    for (int j = 0; j < 4; j++) {
                        lo.w[j] = dkp_f2u(dkp_to_f32((dkp_u16)(u.w[j / 2] >> (16 * (j % 2))), p.dt_a));
                        hi.w[j] = dkp_f2u(dkp_to_f32((dkp_u16)(u.w[2 + j / 2] >> (16 * (j % 2))), p.dt_a));
                    }
                    tile[row * 16 + ((2 * c) ^ sw)] = lo;
                    tile[row * 16 + ((2 * c + 1) ^ sw)] = hi;
                }
            }
        }
        dkp_sync();
        if (y32) {
#pragma unroll
            for (int q = 0; q < 4; q++) {
                const unsigned kk = t / 8 + 32 * (q / 2), j = t % 8 + 8 * (q % 2);
                if (bk + kk < sk && b3 + 4 * j < s3) {
                    dke_v16 o;
#pragma unroll
                    for (int e = 0; e < 4; e++) o.w[e] = dkp_f2u(dket_tile_get(tf, 4 * j + e, kk, (4 * j + e) / 4 % 8));
                    *((dke_v16 *)p.y + (by + (dkh_i64)(bk + kk) * p.y_s[k] + b3 + 4 * j) / 4) = o;
                }
            }
        } else {
#pragma unroll
            for (int q = 0; q < 2; q++) {
                const unsigned kk = t / 8 + 32 * q, j = t % 8;
                if (bk + kk < sk && b3 + 8 * j < s3) {
                    dke_v16 o;
#pragma unroll
                    for (int e = 0; e < 8; e += 2) {
                        const float v0 = dket_tile_get(tf, 8 * j + e, kk, j), v1 = dket_tile_get(tf, 8 * j + e + 1, kk, j);
                        const dkp_u32 l = p.dt_y == 2 ? dkp_f2h(v0) : dkp_f2b(v0), h = p.dt_y == 2 ? dkp_f2h(v1) : dkp_f2b(v1);
                        o.w[e / 2] = l | h << 16;
                    }
                    *((dke_v16 *)p.y + (by + (dkh_i64)(bk + kk) * p.y_s[k] + b3 + 8 * j) / 8) = o;
                }
            }
        }
        dkp_sync();
    }
}

/* Raw bits of element e (0..7, a compile-time constant after unrolling: indexing
 * u with a run-time e puts it in local memory) of the 8 in u: f32 words, or
 * 16-bit halves. */
DKP_DEV dkp_u32 dke_raw(const dke_v16 *u, int f32, int e) {
    return f32 ? u[e / 4].w[e % 4] : (u[0].w[e / 2] >> (16 * (e % 2))) & 0xffffu;
}

/* The F output vectors that the 8 elements in u expand to along the unit-stride
 * dim, each element repeated F times: vector q holds elements (8q + j) / F. */
template <int F>
DKP_DEV void dke_up_row(dke_v16 *dst, const dke_v16 *u, int f32) {
    const int nw = f32 ? 2 : 1;
#pragma unroll
    for (int q = 0; q < F; q++) {
        dke_v16 o[2];
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const dkp_u32 v = dke_raw(u, f32, (8 * q + j) / F);
            if (f32) o[j / 4].w[j % 4] = v;
            else o[0].w[j / 2] = j % 2 ? o[0].w[j / 2] | v << 16 : v;
        }
        dst[nw * q] = o[0];
        if (f32) dst[nw * q + 1] = o[1];
    }
}

/* Any other factor f3: each element stored f3 times one by one (rare; vectors
 * built for a run-time f3 took the kernel from 55 to 76 registers). */
DKP_DEV void dke_up_row_any(dke_v16 *dst, const dke_v16 *u, int f32, int f3) {
#pragma unroll
    for (int e = 0; e < 8; e++) {
        const dkp_u32 v = dke_raw(u, f32, e);
        for (int k = 0; k < f3; k++) {
            if (f32) ((dkp_u32 *)dst)[e * f3 + k] = v;
            else ((unsigned short *)dst)[e * f3 + k] = (unsigned short)v;
        }
    }
}

/* UPSAMPLE by integer factors where walk dim 3 is unit-stride in a and y and a's
 * rows split into 16-byte vectors of 8 elements (hipops_upsample_vec): each
 * thread loads 8 elements of a once and stores fac[0]*fac[1]*fac[2] copies of the
 * fac[3] output vectors they expand to.  The generic walk spends most of its time
 * in per-element index divisions.  Raw bits are copied (no conversion).  A kernel
 * of its own: inside dkk_elementwise it raised that kernel from 40 to 64
 * registers (sm_90a), halving the occupancy of add and convert.  Keep it at 64 or
 * fewer (four blocks per SM): at 70 the NCHW factor-2 case ran 34% slower. */
DKP_KERNEL(DKH_THREADS) dkk_upsample_vec(dkh_elt_args p) {
    const int f0 = p.fac[0], f1 = p.fac[1], f2 = p.fac[2], f3 = p.fac[3], f32 = p.dt_a == 1, nw = f32 ? 2 : 1;
    const dkh_i64 a1 = p.shape[1] / f1, a2 = p.shape[2] / f2, v3 = p.shape[3] / f3 / 8;
    const dkh_i64 nv = p.shape[0] / f0 * a1 * a2 * v3, step = p.nblocks * DKH_THREADS;
    /* strides in 16-byte vectors (the host checked they are whole vectors) */
    const int epv = f32 ? 4 : 8;
    const dkh_i64 ys0 = p.y_s[0] / epv, ys1 = p.y_s[1] / epv, ys2 = p.y_s[2] / epv;
    for (dkh_i64 g = dkp_bid_x() * DKH_THREADS + dkp_tid(); g < nv; g += step) {
        /* 32-bit divisions: the host takes this kernel for fewer than 2^31 vectors */
        unsigned r = (unsigned)g;
        const unsigned i3 = r % (unsigned)v3;
        r /= (unsigned)v3;
        const unsigned i2 = r % (unsigned)a2;
        r /= (unsigned)a2;
        const unsigned i1 = r % (unsigned)a1, i0 = r / (unsigned)a1;
        const dke_v16 *src = (const dke_v16 *)p.a + (i0 * p.a_s[0] + i1 * p.a_s[1] + i2 * p.a_s[2]) / epv + i3 * nw;
        dke_v16 *y0 = (dke_v16 *)p.y + i0 * f0 * ys0 + i1 * f1 * ys1 + i2 * f2 * ys2 + i3 * f3 * nw;
        dke_v16 u[2];
        u[0] = src[0];
        if (f32) u[1] = src[1];
#pragma unroll 1
        for (int d0 = 0; d0 < f0; d0++, y0 += ys0) {
            dke_v16 *y1 = y0;
#pragma unroll 1
            for (int d1 = 0; d1 < f1; d1++, y1 += ys1) {
                dke_v16 *dst = y1;
#pragma unroll 1
                for (int d2 = 0; d2 < f2; d2++, dst += ys2) {
                    if (f3 == 1) {
                        dst[0] = u[0];
                        if (f32) dst[1] = u[1];
                    } else if (f3 == 2) {
                        dke_up_row<2>(dst, u, f32);
                    } else if (f3 == 4) {
                        dke_up_row<4>(dst, u, f32);
                    } else {
                        dke_up_row_any(dst, u, f32, f3);
                    }
                }
            }
        }
    }
}

DKP_KERNEL(DKH_THREADS) dkk_elementwise(dkh_elt_args p) {
    dkh_i64 i = dkp_bid_x() * DKH_THREADS + dkp_tid(), step = p.nblocks * DKH_THREADS;
    if (p.tpos) {
        dke_transpose(p);
        return;
    }
    if (p.flat) {
        /* every operand dense in the walk order: element i at offset i, eight per
         * thread and step in 16-byte vectors, no index arithmetic */
        dkh_i64 n8 = p.total / 8;
        for (dkh_i64 g = i; g < n8; g += step) {
            float va[8], vb[8];
            dke_load8(p.a, p.dt_a, g * 8, va);
            if (p.op == DKH_ELT_ADD) dke_load8(p.b, p.dt_b, g * 8, vb);
            for (int j = 0; j < 8; j++) va[j] = dke_apply(p, va[j], p.op == DKH_ELT_ADD ? vb[j] : 0.0f);
            dke_store8(p.y, p.dt_y, g * 8, va);
        }
        for (dkh_i64 e = n8 * 8 + i; e < p.total; e += step)
            dkp_store_f(p.y, p.dt_y, e,
                        dke_apply(p, dkp_load(p.a, p.dt_a, e), p.op == DKH_ELT_ADD ? dkp_load(p.b, p.dt_b, e) : 0.0f));
        return;
    }
    for (; i < p.total; i += step) {
        dkh_i64 ix[4];
        dke_split(p, i, ix);
        dkh_i64 i0 = ix[0], i1 = ix[1], i2 = ix[2], i3 = ix[3];
        dkh_i64 yo = i0 * p.y_s[0] + i1 * p.y_s[1] + i2 * p.y_s[2] + i3 * p.y_s[3];
        float v;
        if (p.op == DKH_ELT_UPSAMPLE) {
            v = dkp_load(p.a, p.dt_a, dke_src(p, 0, i0) * p.a_s[0] + dke_src(p, 1, i1) * p.a_s[1] +
                                          dke_src(p, 2, i2) * p.a_s[2] + dke_src(p, 3, i3) * p.a_s[3]);
        } else {
            v = dkp_load(p.a, p.dt_a, i0 * p.a_s[0] + i1 * p.a_s[1] + i2 * p.a_s[2] + i3 * p.a_s[3]);
            v = dke_apply(p, v,
                          p.op == DKH_ELT_ADD
                              ? dkp_load(p.b, p.dt_b, i0 * p.b_s[0] + i1 * p.b_s[1] + i2 * p.b_s[2] + i3 * p.b_s[3])
                              : 0.0f);
        }
        dkp_store_f(p.y, p.dt_y, yo, v);
    }
}

/* One block per row of the last dimension. */
DKP_KERNEL(DKH_THREADS) dkk_layer_norm(dkh_norm_args p) {
    DKP_SHARED float red[DKH_THREADS];
    dkh_i64 row = dkp_bid_x(), d = p.shape[3];
    dkh_i64 i2 = row % p.shape[2], i1 = (row / p.shape[2]) % p.shape[1], i0 = row / p.shape[2] / p.shape[1];
    dkh_i64 xo = i0 * p.x_s[0] + i1 * p.x_s[1] + i2 * p.x_s[2], yo = i0 * p.y_s[0] + i1 * p.y_s[1] + i2 * p.y_s[2];
    float s = 0.0f, mean, rstd;
    for (dkh_i64 e = dkp_tid(); e < d; e += DKH_THREADS) s += dkp_load(p.x, p.dt, xo + e * p.x_s[3]);
    mean = dke_block_sum(s, red) / (float)d;
    s = 0.0f;
    for (dkh_i64 e = dkp_tid(); e < d; e += DKH_THREADS) {
        float t = dkp_load(p.x, p.dt, xo + e * p.x_s[3]) - mean;
        s += t * t;
    }
    rstd = 1.0f / dkp_sqrt(dke_block_sum(s, red) / (float)d + p.eps);
    /* in place (y == x) is safe: each element is read and written by one thread, after all reads above */
    for (dkh_i64 e = dkp_tid(); e < d; e += DKH_THREADS) {
        float v = (dkp_load(p.x, p.dt, xo + e * p.x_s[3]) - mean) * rstd;
        if (p.has_gamma) v *= dkp_load(p.gamma, p.dt, e * p.gamma_s);
        if (p.has_beta) v += dkp_load(p.beta, p.dt, e * p.beta_s);
        dkp_store_f(p.y, p.dt, yo + e * p.y_s[3], dkp_act(p.act, v));
    }
}
