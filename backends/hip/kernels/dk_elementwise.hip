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

DKP_KERNEL(DKH_THREADS) dkk_elementwise(dkh_elt_args p) {
    for (dkh_i64 i = dkp_bid_x() * DKH_THREADS + dkp_tid(); i < p.total; i += p.nblocks * DKH_THREADS) {
        dkh_i64 i3 = i % p.shape[3], r = i / p.shape[3];
        dkh_i64 i2 = r % p.shape[2], i1 = (r / p.shape[2]) % p.shape[1], i0 = r / p.shape[2] / p.shape[1];
        dkh_i64 yo = i0 * p.y_s[0] + i1 * p.y_s[1] + i2 * p.y_s[2] + i3 * p.y_s[3];
        float v;
        if (p.op == DKH_ELT_UPSAMPLE) {
            dkh_i64 sh = i2 * p.a_h / p.shape[2], sw = i3 * p.a_w / p.shape[3];
            v = dkp_load(p.a, p.dt_a, i0 * p.a_s[0] + i1 * p.a_s[1] + sh * p.a_s[2] + sw * p.a_s[3]);
        } else {
            v = dkp_load(p.a, p.dt_a, i0 * p.a_s[0] + i1 * p.a_s[1] + i2 * p.a_s[2] + i3 * p.a_s[3]);
            if (p.op == DKH_ELT_ADD) {
                float w = dkp_load(p.b, p.dt_b, i0 * p.b_s[0] + i1 * p.b_s[1] + i2 * p.b_s[2] + i3 * p.b_s[3]);
                v = dkp_act(p.act, p.alpha * v + p.beta * w);
            } else if (p.op == DKH_ELT_ACT) {
                v = dkp_act(p.act, v);
            }
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
