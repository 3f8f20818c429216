/* Shallow-reduction direct convolution: conv2d with Cin/groups x taps <= 32
 * and Cout/groups > 8, the first conv of an image encoder (3 -> 128, 3x3: a
 * reduction of 27).  A GEMM tile reduces 32 or 64 channels per tap: at 3 real
 * channels it spends most of its time on zeros, the copy that pads them and an
 * epilogue that its few reduction steps cannot hide.  Here the products are
 * fp32 FMAs on the real channels only, and no copy is made.  Measurements
 * and what bounds it: docs/conv.md, "HIP thresholds".
 *
 * Block: an output tile of TH rows x TW columns of one image and group, and a
 * block of CB output channels.  The input patch the tile reads (every channel
 * of the group, zero outside the image, fused upsample resolved) is staged as
 * fp32 [channel][row][column] in shared memory by element, so any view of x
 * works; the tile's weights as fp32 [k][CB] with k = (channel, tap_h, tap_w).
 * Thread: column `slot` of the tile, its TH rows, 16 channels: octets `quad`
 * and `quad + 4` of the channel block, so the four lanes of a column write 64
 * contiguous bytes of a channels-last pixel per store.  Per k: TH patch reads,
 * four 16-byte weight reads (shared by the column's lanes), 64 FMAs.
 * Epilogue as the GEMM kernels' (bias, activation, output scale, residual,
 * activation after the residual); 16-byte stores where y is channels-last with
 * aligned pixels (vec_out), else by element. */
#include "dk_hip_port.h"
#include "../hip_kargs.h"

#define DKS_TH DKH_SHALLOW_TH
#define DKS_TW DKH_SHALLOW_TW
#define DKS_CB DKH_SHALLOW_CB
#define DKS_CPT 16 /* channels per thread: two octets */
#define DKS_SLOT 17 /* the epilogue's floats per thread in shared memory: 8 sums, 8 residuals, a pad */
#define DKS_PATCH_PT (DKH_SHALLOW_PATCH / DKH_THREADS) /* staged patch elements per thread */
#define DKS_WEIGHT_PT (DKH_SHALLOW_K * DKS_CB / DKH_THREADS) /* staged weights per thread */

/* Eight finished values of channels co .. co + 7 at element offset e of y
 * (channels contiguous, e 16-byte aligned): one or two 16-byte stores. */
template <int DT>
DKP_DEV void dks_store8(const dkh_gemm_args &p, dkh_i64 e, const float *v) {
    if (DT == 1) {
        dkp_f32x4 *d = (dkp_f32x4 *)((float *)p.y + e);
        dkp_f32x4 a, b;
        a.x = v[0]; a.y = v[1]; a.z = v[2]; a.w = v[3];
        b.x = v[4]; b.y = v[5]; b.z = v[6]; b.w = v[7];
        d[0] = a;
        d[1] = b;
    } else {
        dkp_u32 w[4];
#pragma unroll
        for (int i = 0; i < 4; i++)
            w[i] = (dkp_u32)dkp_conv<DT>::from(v[2 * i]) | (dkp_u32)dkp_conv<DT>::from(v[2 * i + 1]) << 16;
        dkp_u32x4 u;
        u.x = w[0]; u.y = w[1]; u.z = w[2]; u.w = w[3];
        *(dkp_u32x4 *)((dkp_u16 *)p.y + e) = u;
    }
}

template <int DT>
DKP_DEV void dks_conv(const dkh_shallow_args &q) {
    typedef typename dkp_store<DT>::T S;
    const dkh_gemm_args &p = q.c;
    DKP_SHARED float patch[DKH_SHALLOW_PATCH]; /* then the epilogue's slots */
    DKP_SHARED dkp_f32x4 wsv[DKH_SHALLOW_K * DKS_CB / 4];
    DKP_SHARED float bias[DKS_CB];
    float *ws = (float *)wsv;
    const int tid = dkp_tid(), quad = tid % 4, slot = tid / 4;
    const dkh_i64 z = dkp_bid_z(), g = z % p.groups, img = z / p.groups, tile = dkp_bid_x();
    const int cb0 = (int)dkp_bid_y() * DKS_CB, M = (int)p.M, cin = (int)p.cin_g;
    const int kh = (int)p.h.taps, kw = (int)p.w.taps, K = cin * kh * kw;
    const int sh = (int)p.h.in_step, sw = (int)p.w.in_step, dh = (int)p.h.off_step, dw = (int)p.w.off_step;
    const int ph = q.patch_h, pw = q.patch_w, ups = (int)p.ups;
    const int hin = (int)p.h.in_size, win = (int)p.w.in_size;
    const int oy0 = (int)(tile / q.tiles_w) * DKS_TH, ox0 = (int)(tile % q.tiles_w) * DKS_TW;
    const int iy0 = oy0 * sh + (int)p.h.off0, ix0 = ox0 * sw + (int)p.w.off0;
    const S *xb = (const S *)p.b + img * p.b_s[0] + g * p.cin_g * p.b_s[1];

    /* The input patch (column fastest: coalesced for NCHW, L1 lines for NHWC),
     * the channel block's weights (k fastest: w's [Cout][Cin][KH][KW] order)
     * and its bias.  Unrolled, every load of a thread in flight before the
     * first store: the staging's latency is paid once, not once per element. */
    {
        const int np = cin * ph * pw, nw = K * DKS_CB;
        float pv[DKS_PATCH_PT], wv[DKS_WEIGHT_PT];
#pragma unroll
        for (int i = 0; i < DKS_PATCH_PT; i++) {
            const int e = tid + i * DKH_THREADS;
            pv[i] = 0.0f;
            if (e < np) {
                const int c = e / (ph * pw), r = e - c * (ph * pw), pr = r / pw, pc = r - pr * pw;
                int yy = iy0 + pr, xx = ix0 + pc;
                if (yy >= 0 && yy < hin && xx >= 0 && xx < win) {
                    if (ups != 1) {
                        yy /= ups;
                        xx /= ups;
                    }
                    pv[i] = dkp_to_f32(xb[(dkh_i64)c * p.b_s[1] + (dkh_i64)yy * p.b_s[2] + (dkh_i64)xx * p.b_s[3]], DT);
                }
            }
        }
#pragma unroll
        for (int i = 0; i < DKS_WEIGHT_PT; i++) {
            const int e = tid + i * DKH_THREADS, col = e / K, co = cb0 + col;
            wv[i] = 0.0f;
            if (e < nw && co < M) {
                const int k = e - col * K, c = k / (kh * kw), t = k - c * (kh * kw), th = t / kw, tw = t - th * kw;
                wv[i] = dkp_load(p.a, DT, (g * p.M + co) * p.a_s[0] + (dkh_i64)c * p.a_s[1] + (dkh_i64)th * p.a_s[2] +
                                              (dkh_i64)tw * p.a_s[3]);
            }
        }
        if (tid < DKS_CB)
            bias[tid] = p.has_bias && cb0 + tid < M ? dkp_load(p.bias, p.bias_dt, (g * p.M + cb0 + tid) * p.bias_s) : 0.0f;
#pragma unroll
        for (int i = 0; i < DKS_PATCH_PT; i++)
            if (tid + i * DKH_THREADS < np) patch[tid + i * DKH_THREADS] = pv[i];
#pragma unroll
        for (int i = 0; i < DKS_WEIGHT_PT; i++) {
            const int e = tid + i * DKH_THREADS;
            if (e < nw) ws[(e - e / K * K) * DKS_CB + e / K] = wv[i];
        }
    }
    dkp_sync();

    float acc[DKS_TH * DKS_CPT];
#pragma unroll
    for (int i = 0; i < DKS_TH * DKS_CPT; i++) acc[i] = 0.0f;
    {
        const float *prow = patch + slot * sw; /* this thread's column, row 0 of the tile */
        const dkp_f32x4 *wq = wsv + quad * 2;  /* its first octet; the second is 8 vectors on */
        int k = 0;
#pragma unroll 1
        for (int c = 0; c < cin; c++)
#pragma unroll 1
            for (int th = 0; th < kh; th++) {
                const float *pt = prow + (c * ph + th * dh) * pw;
#pragma unroll 1
                for (int tw = 0; tw < kw; tw++, k++) {
                    float xv[DKS_TH];
#pragma unroll
                    for (int j = 0; j < DKS_TH; j++) xv[j] = pt[j * sh * pw + tw * dw];
                    const dkp_f32x4 *wk = wq + k * (DKS_CB / 4);
                    const dkp_f32x4 w4[4] = {wk[0], wk[1], wk[8], wk[9]};
#pragma unroll
                    for (int j = 0; j < DKS_TH; j++)
#pragma unroll
                        for (int h = 0; h < 4; h++) {
                            acc[j * DKS_CPT + 4 * h + 0] += xv[j] * w4[h].x;
                            acc[j * DKS_CPT + 4 * h + 1] += xv[j] * w4[h].y;
                            acc[j * DKS_CPT + 4 * h + 2] += xv[j] * w4[h].z;
                            acc[j * DKS_CPT + 4 * h + 3] += xv[j] * w4[h].w;
                        }
                }
            }
    }

    /* Epilogue, row j, octet o (channels cb0 + o * 32 + quad * 8 ..).  Bias and
     * output scale only (an image encoder's first conv): from the registers.
     * Else the eight sums and their residuals go through this thread's own
     * slot of shared memory (the patch's, free after the barrier), so the
     * epilogue runs as a loop, not unrolled (the activations would multiply the
     * code), without indexing registers; the residuals are loaded before it. */
    dkp_sync();
    float *mine = patch + tid * DKS_SLOT;
    const bool plain = !p.has_res && p.act == 0 && p.post_act == 0;
    const int ox = ox0 + slot;
    if (ox >= (int)p.w.out_count) return;
    const dkh_i64 ow = p.w.out_start + (dkh_i64)ox * p.w.out_step;
#pragma unroll
    for (int j = 0; j < DKS_TH; j++) {
        const int oy = oy0 + j;
        if (oy >= (int)p.h.out_count) break;
        const dkh_i64 oh = p.h.out_start + (dkh_i64)oy * p.h.out_step;
        const dkh_i64 pix = img * p.y_s[0] + oh * p.y_s[2] + ow * p.y_s[3];
#pragma unroll
        for (int o = 0; o < 2; o++) {
            const int cl = o * 32 + quad * 8, col = cb0 + cl, n = M - col < 8 ? M - col : 8;
            const dkh_i64 co = g * p.M + col;
            if (n <= 0) continue;
            if (plain) {
#pragma unroll
                for (int i = 0; i < 8; i++) mine[i] = p.out_scale * (acc[j * DKS_CPT + o * 8 + i] + bias[cl + i]);
            } else {
                const dkh_i64 r0 = img * p.r_s[0] + co * p.r_s[1] + oh * p.r_s[2] + ow * p.r_s[3];
                float rv[8];
#pragma unroll
                for (int i = 0; i < 8; i++) rv[i] = p.has_res && i < n ? dkp_load(p.res, DT, r0 + i * p.r_s[1]) : 0.0f;
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    mine[i] = acc[j * DKS_CPT + o * 8 + i];
                    mine[8 + i] = rv[i];
                }
#pragma unroll 1
                for (int i = 0; i < n; i++) {
                    const float v = p.out_scale * dkp_act(p.act, mine[i] + bias[cl + i]) + p.res_scale * mine[8 + i];
                    mine[i] = dkp_act(p.post_act, v);
                }
            }
            if (q.vec_out) { /* n == 8: M is a multiple of 8 */
                dks_store8<DT>(p, pix + co, mine);
            } else {
#pragma unroll 1
                for (int i = 0; i < n; i++) ((S *)p.y)[pix + (co + i) * p.y_s[1]] = dkp_conv<DT>::from(mine[i]);
            }
        }
    }
}

/* NVIDIA: two blocks per multiprocessor (<= 128 registers: 64 accumulators). */
#define DKS_KERNEL DKP_KERNEL_BLOCKS(DKH_THREADS, 2)
DKS_KERNEL dkk_shallow_f32(dkh_shallow_args p) { dks_conv<1>(p); }
DKS_KERNEL dkk_shallow_f16(dkh_shallow_args p) { dks_conv<2>(p); }
DKS_KERNEL dkk_shallow_bf16(dkh_shallow_args p) { dks_conv<3>(p); }
#undef DKS_KERNEL

#undef DKS_TH
#undef DKS_TW
#undef DKS_CB
#undef DKS_CPT
#undef DKS_SLOT
#undef DKS_PATCH_PT
#undef DKS_WEIGHT_PT
