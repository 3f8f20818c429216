/* Narrow-output direct convolution: conv2d and conv_transpose2d phases with
 * Cout/groups <= 8 (the SDXL VAE's conv_out, 128 -> 3), where the GEMM kernels'
 * 64- or 128-wide channel tiles would waste 15/16 of their work or more and
 * reread the input once per tile.  Every dtype and view; fused 2x upsample and
 * the GEMM kernels' epilogue (bias, activation, output scale, residual).
 *
 * Template: DT (1 f32, 2 f16, 3 bf16), CO (accumulators per pixel: 4 or 8, at
 * least Cout/groups), VEC:
 *   VEC 1 (channels-last input, 16-byte aligned pixels, Cin/groups a multiple
 *         of the vector): 16 lanes share a pixel, each reading 16-byte vectors
 *         of contiguous channels, so a lane group reads 256 contiguous bytes per
 *         tap; partial sums meet by a butterfly of lane shuffles (reduce-scatter:
 *         log2(16) steps, each lane ends with PPT*CO/16 finished outputs).
 *   VEC 2: the same with 8 lanes per pixel, for at most 8 vectors of input
 *         channels (64 in f16: TAESD's last conv, 64 -> 3), where half of 16
 *         lanes would have nothing to read.
 *   VEC 0 (any strides, e.g. NCHW): one thread per pixel, channels by scalar
 *         loads; neighbouring threads read neighbouring pixels.
 * VEC 1, 2: each thread owns 4 consecutive pixels, so one weight read from shared
 * memory feeds 4 pixels (VEC 0: 1 pixel, weight reads are broadcasts).  The
 * finished sums of a tile go through shared memory to an epilogue loop in
 * (pixel, channel) order (coalesced stores).  Input channels run in chunks of 128,
 * taps in batches of 9; a (chunk, batch)'s weights sit in shared memory as fp32
 * [tap][co/4][channel % VW][channel / VW] float4s (lanes of a group read
 * consecutive float4s: no bank conflicts).  With one chunk and one batch
 * (conv_out: 128 channels, 3x3) the weights are staged once per block and the
 * block walks tpb consecutive tiles.  Each input element is read once per tap;
 * the taps of a row hit L1/L2.  fp32 accumulation. */
#include "dk_hip_port.h"
#include "../hip_kargs.h"

#define DKN_PPT(VEC) ((VEC) ? 4 : 1) /* pixels per thread */
#define DKN_CC DKH_NARROW_CC /* input channels per chunk */
#define DKN_TB DKH_NARROW_TB /* taps per batch */
#define DKN_LANES(VEC) ((VEC) == 2 ? 8 : (VEC) ? 16 : 1) /* lanes per pixel */

#if defined(DKP_HOSTSIM)
/* Host simulation: a shuffle through shared memory (every thread of the block
 * calls it at the same point, like a barrier). */
static float dkn_sim_xchg[DKH_THREADS];
#endif
DKP_DEV float dkn_shfl_xor(float v, int mask) {
#if defined(DKP_NVIDIA)
    return __shfl_xor_sync(0xffffffffu, v, mask);
#elif defined(DKP_AMD)
    const int lane = dkp_tid() % DKP_WAVE;
    return __builtin_bit_cast(float, __builtin_amdgcn_ds_bpermute((lane ^ mask) << 2, __builtin_bit_cast(int, v)));
#else
    dkn_sim_xchg[dkp_tid()] = v;
    dkp_sync();
    float r = dkn_sim_xchg[dkp_tid() ^ mask];
    dkp_sync();
    return r;
#endif
}

/* Element e of 16 bytes of storage values, as float (converted where used, so
 * only the raw vectors stay live). */
template <int DT>
DKP_DEV float dkn_elem(const dkp_u32x4 &r, int e) {
    const dkp_u32 u = DT == 1 ? (e == 0 ? r.x : e == 1 ? r.y : e == 2 ? r.z : r.w)
                              : (e / 2 == 0 ? r.x : e / 2 == 1 ? r.y : e / 2 == 2 ? r.z : r.w);
    if (DT == 1) return dkp_u2f(u);
    if (DT == 2) return dkp_h2f((dkp_u16)(e % 2 ? u >> 16 : u & 0xffffu));
    return dkp_u2f(e % 2 ? u & 0xffff0000u : u << 16);
}

/* Stages the weights of channels [c0, c0 + cn) and taps [t0, t0 + tn) as fp32
 * (zero for co >= M and channels past cn), between two barriers. */
template <int DT, int CO>
DKP_DEV void dkn_stage(const dkh_gemm_args &p, dkp_f32x4 *ws, dkh_i64 g, int c0, int cn, int t0, int tn) {
    const int VW = DT == 1 ? 4 : 8, CV = DKN_CC / VW, NV4 = CO / 4, M = (int)p.M, wt = (int)p.w.taps;
    float *wf = (float *)ws;
    dkp_sync(); /* the previous batch's readers are done */
    for (int e = dkp_tid(); e < tn * DKN_CC * CO; e += DKH_THREADS) {
        /* tap fastest, then channel: dense [Cout][Cin][KH][KW] weights read in order */
        const int tl = e % tn, r = e / tn, c = r % DKN_CC, co = r / DKN_CC;
        float v = 0.0f;
        if (co < M && c < cn) {
            const int t = t0 + tl, th = t / wt, tw = t - th * wt;
            const dkh_i64 kh = p.h.k0 + (dkh_i64)th * p.h.k_step, kw = p.w.k0 + (dkh_i64)tw * p.w.k_step;
            const dkh_i64 i0 = p.transposed ? g * p.cin_g + c0 + c : g * p.M + co;
            const dkh_i64 i1 = p.transposed ? (dkh_i64)co : (dkh_i64)(c0 + c);
            v = dkp_load(p.a, DT, i0 * p.a_s[0] + i1 * p.a_s[1] + kh * p.a_s[2] + kw * p.a_s[3]);
        }
        wf[(((tl * NV4 + co / 4) * VW + c % VW) * CV + c / VW) * 4 + co % 4] = v;
    }
    dkp_sync();
}

/* out = post_act(out_scale * act(acc + bias) + res_scale * residual) at phase pixel n,
 * output channel co of group g (as dkg_store). */
template <int DT>
DKP_DEV void dkn_store(const dkh_gemm_args &p, dkh_i64 img, dkh_i64 g, dkh_i64 n, int co_l, float acc) {
    const dkh_i64 oc = p.w.out_count, py = n / oc, px = n - py * oc, co = g * p.M + co_l;
    const dkh_i64 oh = p.h.out_start + py * p.h.out_step, ow = p.w.out_start + px * p.w.out_step;
    float v = acc + (p.has_bias ? dkp_load(p.bias, p.bias_dt, co * p.bias_s) : 0.0f);
    v = p.out_scale * dkp_act(p.act, v);
    if (p.has_res) v += p.res_scale * dkp_load(p.res, DT, img * p.r_s[0] + co * p.r_s[1] + oh * p.r_s[2] + ow * p.r_s[3]);
    v = dkp_act(p.post_act, v);
    ((typename dkp_store<DT>::T *)p.y)[img * p.y_s[0] + co * p.y_s[1] + oh * p.y_s[2] + ow * p.y_s[3]] =
        dkp_conv<DT>::from(v);
}

/* acc[j*CO + co] += sum over the VW channels of vector v (chunk c0) of x(pixel j)
 * * w(channel, co); off[j]: pixel j's element offset (ok[j]: inside the input).
 * M3 (CO 4, Cout/groups 3: RGB): the fourth channel's products are skipped. */
template <int DT, int CO, int VEC, int M3>
DKP_DEV void dkn_vector(float *acc, const typename dkp_store<DT>::T *xb, const dkh_i64 *off, const bool *ok, int c0,
                        int v, int cin, dkh_i64 cs, const dkp_f32x4 *wtap) {
    const int VW = DT == 1 ? 4 : 8, CV = DKN_CC / VW, NV4 = CO / 4, PPT = DKN_PPT(VEC), c = c0 + v * VW;
    if (VEC) {
        /* all PPT loads in flight before the first use */
        dkp_u32x4 raw[PPT];
#pragma unroll
        for (int j = 0; j < PPT; j++) {
            const dkp_u32x4 zero = {0u, 0u, 0u, 0u};
            raw[j] = ok[j] ? *(const dkp_u32x4 *)(xb + off[j] + c) : zero;
        }
#pragma unroll
        for (int e = 0; e < VW; e++)
#pragma unroll
            for (int h = 0; h < NV4; h++) {
                const dkp_f32x4 w4 = wtap[(h * VW + e) * CV + v];
#pragma unroll
                for (int j = 0; j < PPT; j++) {
                    const float xe = dkn_elem<DT>(raw[j], e);
                    acc[j * CO + 4 * h + 0] += xe * w4.x;
                    acc[j * CO + 4 * h + 1] += xe * w4.y;
                    acc[j * CO + 4 * h + 2] += xe * w4.z;
                    if (!M3) acc[j * CO + 4 * h + 3] += xe * w4.w;
                }
            }
    } else {
        /* scalar loads, one channel at a time (PPT loads in flight) */
#pragma unroll 1
        for (int e = 0; e < VW && c + e < cin; e++) {
            const dkh_i64 ce = (dkh_i64)(c + e) * cs;
            float xe[PPT];
#pragma unroll
            for (int j = 0; j < PPT; j++) xe[j] = ok[j] ? dkp_to_f32(xb[off[j] + ce], DT) : 0.0f;
#pragma unroll
            for (int h = 0; h < NV4; h++) {
                const dkp_f32x4 w4 = wtap[(h * VW + e) * CV + v];
#pragma unroll
                for (int j = 0; j < PPT; j++) {
                    acc[j * CO + 4 * h + 0] += xe[j] * w4.x;
                    acc[j * CO + 4 * h + 1] += xe[j] * w4.y;
                    acc[j * CO + 4 * h + 2] += xe[j] * w4.z;
                    if (!M3) acc[j * CO + 4 * h + 3] += xe[j] * w4.w;
                }
            }
        }
    }
}

template <int DT, int CO, int VEC>
DKP_DEV void dkn_conv(const dkh_narrow_args &q) {
    typedef typename dkp_store<DT>::T S;
    const dkh_gemm_args &p = q.c;
    const int VW = DT == 1 ? 4 : 8, CV = DKN_CC / VW, NV4 = CO / 4, PPT = DKN_PPT(VEC);
    const int L = DKN_LANES(VEC), SL = DKH_THREADS / L, TILE = SL * PPT, VPL = VEC ? (CV + L - 1) / L : CV;
    DKP_SHARED dkp_f32x4 ws[DKN_TB * NV4 * DKN_CC];
    DKP_SHARED float ob[TILE * CO]; /* finished sums of a tile: [pixel][co] */
    const int tid = dkp_tid(), lane = tid % L, slot = tid / L;
    const dkh_i64 z = dkp_bid_z(), g = z % p.groups, img = z / p.groups;
    const int cin = (int)p.cin_g, wt = (int)p.w.taps, taps = (int)p.h.taps * wt;
    const int hin = (int)p.h.in_size, win = (int)p.w.in_size, ups = (int)p.ups, oc = (int)p.w.out_count;
    const int nchunk = (cin + DKN_CC - 1) / DKN_CC, nbatch = (taps + DKN_TB - 1) / DKN_TB;
    const bool single = nchunk == 1 && nbatch == 1;
    const bool m3 = CO == 4 && p.M == 3; /* uniform: the RGB conv_out skips a quarter of the products */
    const S *xb = (const S *)p.b + img * p.b_s[0] + g * p.cin_g * p.b_s[1];
    const dkh_i64 tile0 = dkp_bid_x() * q.tpb, tile1 = tile0 + q.tpb < q.tiles ? tile0 + q.tpb : q.tiles;

    if (single) dkn_stage<DT, CO>(p, ws, g, 0, cin, 0, taps);
    for (dkh_i64 tile = tile0; tile < tile1; tile++) {
        int y0[PPT], x0[PPT];
        float acc[PPT * CO];
#pragma unroll
        for (int j = 0; j < PPT; j++) {
            const dkh_i64 n = tile * TILE + (VEC ? slot * PPT + j : slot + SL * j);
            const int nn = n < p.N ? (int)n : 0, py = nn / oc, px = nn - py * oc;
            /* pixels past the end: a row no tap reaches (one flag register less) */
            y0[j] = n < p.N ? py * (int)p.h.in_step + (int)p.h.off0 : -(1 << 30);
            x0[j] = px * (int)p.w.in_step + (int)p.w.off0;
#pragma unroll
            for (int c = 0; c < CO; c++) acc[j * CO + c] = 0.0f;
        }
        for (int c0 = 0; c0 < cin; c0 += DKN_CC) {
            const int cn = cin - c0 < DKN_CC ? cin - c0 : DKN_CC, nvec = (cn + VW - 1) / VW;
            for (int t0 = 0; t0 < taps; t0 += DKN_TB) {
                const int tn = taps - t0 < DKN_TB ? taps - t0 : DKN_TB;
                if (!single) dkn_stage<DT, CO>(p, ws, g, c0, cn, t0, tn);
                for (int tl = 0; tl < tn; tl++) {
                    const int t = t0 + tl, th = t / wt, tw = t - th * wt;
                    const int dy = th * (int)p.h.off_step, dx = tw * (int)p.w.off_step;
                    const dkp_f32x4 *wtap = ws + tl * NV4 * DKN_CC;
                    dkh_i64 off[PPT];
                    bool ok[PPT];
#pragma unroll
                    for (int j = 0; j < PPT; j++) {
                        int yy = y0[j] + dy, xx = x0[j] + dx;
                        ok[j] = yy >= 0 && yy < hin && xx >= 0 && xx < win;
                        if (ups != 1) {
                            yy /= ups;
                            xx /= ups;
                        }
                        off[j] = ok[j] ? (dkh_i64)yy * p.b_s[2] + (dkh_i64)xx * p.b_s[3] : 0;
                    }
                    if (VEC) {
#pragma unroll
                        for (int k = 0; k < VPL; k++)
                            if (lane + k * L < nvec)
                                m3 ? dkn_vector<DT, CO, VEC, 1>(acc, xb, off, ok, c0, lane + k * L, cin, p.b_s[1], wtap)
                                   : dkn_vector<DT, CO, VEC, 0>(acc, xb, off, ok, c0, lane + k * L, cin, p.b_s[1], wtap);
                    } else {
                        /* one thread per pixel: not unrolled (scalar loads of 8 vectors
                         * in flight would need hundreds of registers) */
#pragma unroll 1
                        for (int v = 0; v < nvec; v++)
                            m3 ? dkn_vector<DT, CO, VEC, 1>(acc, xb, off, ok, c0, v, cin, p.b_s[1], wtap)
                               : dkn_vector<DT, CO, VEC, 0>(acc, xb, off, ok, c0, v, cin, p.b_s[1], wtap);
                    }
                }
            }
        }
        if (VEC) {
            /* reduce-scatter over the L lanes of a pixel group: at the step with
             * mask m a lane keeps the half of its values selected by its bit m and
             * adds the partner's copy of that half; lane l ends with the sums of
             * values l*R .. l*R + R-1 (value index j*CO + co). */
            const int NVAL = PPT * CO, R = NVAL / L;
            float *v = acc;
#pragma unroll
            for (int st = 1; st < L; st *= 2) {
                const int m = L / 2 / st;
                const bool up = (lane & m) != 0;
                const int n = R * m; /* values kept after this step */
#pragma unroll
                for (int i = 0; i < NVAL / 2; i++) {
                    if (i < n) {
                        /* values first, then select (a select of addresses would keep acc in memory) */
                        const float lo = v[i], hi = v[i + n], send = up ? lo : hi, keep = up ? hi : lo;
                        v[i] = keep + dkn_shfl_xor(send, m);
                    }
                }
            }
#pragma unroll
            for (int i = 0; i < R; i++) ob[slot * NVAL + lane * R + i] = v[i];
        } else {
#pragma unroll
            for (int j = 0; j < PPT; j++)
#pragma unroll
                for (int co = 0; co < CO; co++) ob[(slot + SL * j) * CO + co] = acc[j * CO + co];
        }
        /* the epilogue in (pixel, channel) order: consecutive threads write
         * consecutive elements of channels-last outputs; a loop, not unrolled, so
         * the activation does not multiply the registers */
        dkp_sync();
        {
            const int M = (int)p.M, np = p.N - tile * TILE < TILE ? (int)(p.N - tile * TILE) : TILE;
#pragma unroll 1
            for (int i = tid; i < np * M; i += DKH_THREADS) {
                const int px = i / M, co = i - px * M;
                dkn_store<DT>(p, img, g, tile * TILE + px, co, ob[px * CO + co]);
            }
        }
        dkp_sync(); /* ob is rewritten by the next tile */
    }
}

/* NVIDIA: at least 3 blocks per multiprocessor for f16/bf16 CO 4 (<= 80
 * registers), else 2 (f32 with CO 4 would spill at 80). */
#if defined(DKP_NVIDIA)
#define DKN_KERNEL(B) extern "C" __global__ void __launch_bounds__(DKH_THREADS, B)
#else
#define DKN_KERNEL(B) DKP_KERNEL(DKH_THREADS)
#endif
#define DKN_KERNELS(NAME, DT, B)                                                               \
    DKN_KERNEL(B) dkk_narrow_##NAME##_c4_s(dkh_narrow_args p) { dkn_conv<DT, 4, 0>(p); } \
    DKN_KERNEL(2) dkk_narrow_##NAME##_c8_s(dkh_narrow_args p) { dkn_conv<DT, 8, 0>(p); } \
    DKN_KERNEL(B) dkk_narrow_##NAME##_c4_v(dkh_narrow_args p) { dkn_conv<DT, 4, 1>(p); } \
    DKN_KERNEL(2) dkk_narrow_##NAME##_c8_v(dkh_narrow_args p) { dkn_conv<DT, 8, 1>(p); } \
    DKN_KERNEL(B) dkk_narrow_##NAME##_c4_v8(dkh_narrow_args p) { dkn_conv<DT, 4, 2>(p); } \
    DKN_KERNEL(2) dkk_narrow_##NAME##_c8_v8(dkh_narrow_args p) { dkn_conv<DT, 8, 2>(p); }
DKN_KERNELS(f32, 1, 2)
DKN_KERNELS(f16, 2, 3)
DKN_KERNELS(bf16, 3, 3)
#undef DKN_KERNELS
#undef DKN_KERNEL

#undef DKN_PPT
#undef DKN_CC
#undef DKN_TB
#undef DKN_LANES
