/* Shallow-reduction direct convolution: conv2d with Cin/groups x taps <= 32
 * and Cout/groups > 8, the first conv of an image encoder (3 -> 128, 3x3: a
 * reduction of 27).  A GEMM tile reduces 32 or 64 channels per tap: at 3 real
 * channels it spends most of its time on zeros, the copy that pads them and an
 * epilogue that its few reduction steps cannot hide.  Here the products are
 * fp32 FMAs on the real channels only, and no copy is made.  Measurements
 * and what bounds it: docs/conv.md, "HIP thresholds".
 *
 * Block: `rg` groups of TH output rows (one after the other) x TW columns of
 * one image and group, and a block of CB output channels.  The input patch all
 * its rows read (every channel of the group, zero outside the image, fused
 * upsample resolved) is staged once as fp32 [channel][row][column] in shared
 * memory by element, so any view of x works; the block's weights as fp32
 * [k][CB] with k = (channel, tap_h, tap_w).  The row groups share both: the
 * staging, its latency and the patch's halo rows are paid once per block.
 * Thread: column `slot` of the tile, TH rows of a row group, 16 channels:
 * octets `quad` and `quad + 4` of the channel block, so the four lanes of a
 * column write 64 contiguous bytes of a channels-last pixel per store.  Per k:
 * TH patch reads, four 16-byte weight reads (shared by the column's lanes), 64
 * FMAs.  Epilogue as the GEMM kernels' (bias, activation, output scale,
 * residual, activation after the residual); 16-byte stores where y is
 * channels-last with aligned pixels (vec_out), else by element. */
#include "dk_hip_port.h"
#include "../hip_kargs.h"

#define DKS_TH DKH_SHALLOW_TH
#define DKS_TW DKH_SHALLOW_TW
#define DKS_CB DKH_SHALLOW_CB
#define DKS_CPT 16 /* channels per thread: two octets */
#define DKS_SLOT 9 /* the epilogue's floats per thread in shared memory: 8 values, a pad */
#define DKS_STAGE 8 /* patch elements a thread has in flight while staging */
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

/* The patch, [channel][row][column] of ph x pw (np elements), into shared
 * memory: DKS_STAGE loads of a thread in flight before their stores.  The
 * element's (channel, row, column) advances by the block's stride without a
 * division per element. */
template <int DT>
DKP_DEV void dks_stage_patch(const dkh_gemm_args &p, const typename dkp_store<DT>::T *xb, float *patch, int np,
                             int ph, int pw, int iy0, int ix0) {
    const int tid = dkp_tid(), plane = ph * pw, ups = (int)p.ups;
    const int hin = (int)p.h.in_size, win = (int)p.w.in_size;
    const int dc = DKH_THREADS / plane, dr = DKH_THREADS % plane / pw, dx = DKH_THREADS % pw;
    int c = tid / plane, r = tid % plane / pw, x = tid % pw;
    for (int e0 = 0; e0 < np; e0 += DKS_STAGE * DKH_THREADS) {
        float v[DKS_STAGE];
#pragma unroll
        for (int i = 0; i < DKS_STAGE; i++) {
            int yy = iy0 + r, xx = ix0 + x;
            v[i] = 0.0f;
            if (e0 + tid + i * DKH_THREADS < np && yy >= 0 && yy < hin && xx >= 0 && xx < win) {
                if (ups != 1) {
                    yy /= ups;
                    xx /= ups;
                }
                v[i] = dkp_to_f32(xb[(dkh_i64)c * p.b_s[1] + (dkh_i64)yy * p.b_s[2] + (dkh_i64)xx * p.b_s[3]], DT);
            }
            x += dx;
            r += dr;
            c += dc;
            if (x >= pw) {
                x -= pw;
                r++;
            }
            if (r >= ph) {
                r -= ph;
                c++;
            }
        }
#pragma unroll
        for (int i = 0; i < DKS_STAGE; i++) {
            const int e = e0 + tid + i * DKH_THREADS;
            if (e < np) patch[e] = v[i];
        }
    }
}

/* The products of row group gi into acc (which holds the bias): k = (channel,
 * tap_h, tap_w) with this thread's column in prow.  K3: a 3x3 tap grid of stride
 * and dilation 1 over a patch DKS_TW + 2 wide, unrolled with every shared-memory
 * offset a constant of the instruction (each tap column's TH + 2 patch rows
 * are read once for its three tap rows): the run-time loops' address
 * arithmetic and branches were most of the kernel's non-FMA instructions
 * (docs/conv.md). */
template <bool K3>
DKP_DEV void dks_products(const dkh_shallow_args &q, const float *prow, const dkp_f32x4 *wq, float *acc) {
    const dkh_gemm_args &p = q.c;
    const int cin = (int)p.cin_g, ph = q.patch_h;
    if constexpr (K3) {
        const int pw = DKS_TW + 2;
#pragma unroll 1
        for (int c = 0; c < cin; c++) {
            const float *pc = prow + c * ph * pw;
            const dkp_f32x4 *wc = wq + c * 9 * (DKS_CB / 4);
#pragma unroll
            for (int tw = 0; tw < 3; tw++) {
                float xr[DKS_TH + 2]; /* tap column tw of the TH + 2 patch rows the taps reach */
#pragma unroll
                for (int r = 0; r < DKS_TH + 2; r++) xr[r] = pc[r * pw + tw];
#pragma unroll
                for (int th = 0; th < 3; th++) {
                    const dkp_f32x4 *wk = wc + (th * 3 + tw) * (DKS_CB / 4);
                    const dkp_f32x4 w4[4] = {wk[0], wk[1], wk[8], wk[9]};
#pragma unroll
                    for (int j = 0; j < DKS_TH; j++)
#pragma unroll
                        for (int h = 0; h < 4; h++) {
                            acc[j * DKS_CPT + 4 * h + 0] += xr[j + th] * w4[h].x;
                            acc[j * DKS_CPT + 4 * h + 1] += xr[j + th] * w4[h].y;
                            acc[j * DKS_CPT + 4 * h + 2] += xr[j + th] * w4[h].z;
                            acc[j * DKS_CPT + 4 * h + 3] += xr[j + th] * w4[h].w;
                        }
                }
            }
        }
    } else {
        const int kh = (int)p.h.taps, kw = (int)p.w.taps, pw = q.patch_w;
        const int sh = (int)p.h.in_step, dh = (int)p.h.off_step, dw = (int)p.w.off_step;
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
}

template <int DT>
DKP_DEV void dks_conv(const dkh_shallow_args &q) {
    typedef typename dkp_store<DT>::T S;
    const dkh_gemm_args &p = q.c;
    DKP_SHARED float patch[DKH_SHALLOW_PATCH];
    DKP_SHARED float slots[DKH_THREADS * DKS_SLOT];
    DKP_SHARED dkp_f32x4 wsv[DKH_SHALLOW_K * DKS_CB / 4];
    DKP_SHARED dkp_f32x4 biasv[DKS_CB / 4];
    float *ws = (float *)wsv, *bias = (float *)biasv;
    const int tid = dkp_tid(), quad = tid % 4, slot = tid / 4;
    const dkh_i64 z = dkp_bid_z(), g = z % p.groups, img = z / p.groups, tile = dkp_bid_x();
    const int cb0 = (int)dkp_bid_y() * DKS_CB, M = (int)p.M, cin = (int)p.cin_g;
    const int kh = (int)p.h.taps, kw = (int)p.w.taps, K = cin * kh * kw;
    const int sh = (int)p.h.in_step, sw = (int)p.w.in_step;
    const int ph = q.patch_h, pw = q.patch_w, rg = q.rg;
    const int oy0 = (int)(tile / q.tiles_w) * DKS_TH * rg, ox0 = (int)(tile % q.tiles_w) * DKS_TW;
    const int iy0 = oy0 * sh + (int)p.h.off0, ix0 = ox0 * sw + (int)p.w.off0;
    const S *xb = (const S *)p.b + img * p.b_s[0] + g * p.cin_g * p.b_s[1];

    /* The channel block's weights (k fastest: w's [Cout][Cin][KH][KW] order)
     * and bias, their loads in flight while the patch is staged. */
    float wv[DKS_WEIGHT_PT];
    {
        const int nw = K * DKS_CB;
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
    }
    dks_stage_patch<DT>(p, xb, patch, cin * ph * pw, ph, pw, iy0, ix0);
#pragma unroll
    for (int i = 0; i < DKS_WEIGHT_PT; i++) {
        const int e = tid + i * DKH_THREADS;
        if (e < K * DKS_CB) ws[(e - e / K * K) * DKS_CB + e / K] = wv[i];
    }
    dkp_sync(); /* the last barrier: below, a thread reads shared memory others no longer write */

    const int ox = ox0 + slot;
    if (ox >= (int)p.w.out_count) return;
    const dkh_i64 ow = p.w.out_start + (dkh_i64)ox * p.w.out_step;
    const bool plain = !p.has_res && p.act == 0 && p.post_act == 0;
    float *mine = slots + tid * DKS_SLOT;
#pragma unroll 1
    for (int gi = 0; gi < rg; gi++) {
        const int oyg = oy0 + gi * DKS_TH;
        if (oyg >= (int)p.h.out_count) break;
        float acc[DKS_TH * DKS_CPT];
        /* this thread's 16 channels' bias (octets quad and quad + 4): the accumulators' start */
        const dkp_f32x4 b4[4] = {biasv[quad * 2], biasv[quad * 2 + 1], biasv[quad * 2 + 8], biasv[quad * 2 + 9]};
#pragma unroll
        for (int j = 0; j < DKS_TH; j++)
#pragma unroll
            for (int h = 0; h < 4; h++) {
                acc[j * DKS_CPT + 4 * h + 0] = b4[h].x;
                acc[j * DKS_CPT + 4 * h + 1] = b4[h].y;
                acc[j * DKS_CPT + 4 * h + 2] = b4[h].z;
                acc[j * DKS_CPT + 4 * h + 3] = b4[h].w;
            }
        {
            const float *prow = patch + gi * DKS_TH * sh * pw + slot * sw; /* this thread's column, the group's row 0 */
            const dkp_f32x4 *wq = wsv + quad * 2; /* its first octet; the second is 8 vectors on */
            if (q.k3) dks_products<true>(q, prow, wq, acc);
            else dks_products<false>(q, prow, wq, acc);
        }

        /* Epilogue, row j, octet o (channels cb0 + o * 32 + quad * 8 ..), the
         * bias already in acc.  Without a residual or activation: scaled and
         * stored from registers.  Else the activations run in loops over this
         * thread's slot of shared memory, not unrolled (they would multiply the
         * code), without indexing registers; the residuals are loaded before
         * them and added unrolled. */
#pragma unroll
        for (int j = 0; j < DKS_TH; j++) {
            const int oy = oyg + j;
            if (oy >= (int)p.h.out_count) break;
            const dkh_i64 oh = p.h.out_start + (dkh_i64)oy * p.h.out_step;
            const dkh_i64 pix = img * p.y_s[0] + oh * p.y_s[2] + ow * p.y_s[3];
#pragma unroll
            for (int o = 0; o < 2; o++) {
                const int cl = o * 32 + quad * 8, col = cb0 + cl, n = M - col < 8 ? M - col : 8;
                const dkh_i64 co = g * p.M + col;
                if (n <= 0) continue;
                float v[8];
                if (plain) {
#pragma unroll
                    for (int i = 0; i < 8; i++) v[i] = acc[j * DKS_CPT + o * 8 + i] * p.out_scale;
                } else {
                    const dkh_i64 r0 = img * p.r_s[0] + co * p.r_s[1] + oh * p.r_s[2] + ow * p.r_s[3];
                    float rv[8];
#pragma unroll
                    for (int i = 0; i < 8; i++) rv[i] = p.has_res && i < n ? dkp_load(p.res, DT, r0 + i * p.r_s[1]) : 0.0f;
#pragma unroll
                    for (int i = 0; i < 8; i++) mine[i] = acc[j * DKS_CPT + o * 8 + i];
#pragma unroll 1
                    for (int i = 0; i < n; i++) mine[i] = dkp_act(p.act, mine[i]);
#pragma unroll
                    for (int i = 0; i < 8; i++) mine[i] = p.out_scale * mine[i] + p.res_scale * rv[i];
#pragma unroll 1
                    for (int i = 0; i < n; i++) mine[i] = dkp_act(p.post_act, mine[i]);
#pragma unroll
                    for (int i = 0; i < 8; i++) v[i] = mine[i];
                }
                if (q.vec_out) { /* n == 8: M is a multiple of 8 */
                    dks_store8<DT>(p, pix + co, v);
                } else {
#pragma unroll
                    for (int i = 0; i < 8; i++)
                        if (i < n) ((S *)p.y)[pix + (co + i) * p.y_s[1]] = dkp_conv<DT>::from(v[i]);
                }
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
#undef DKS_STAGE
#undef DKS_WEIGHT_PT
