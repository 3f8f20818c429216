/* Hopper (sm_90a) implicit GEMM on wgmma: the fast GEMM's problem (conv2d,
 * conv_transpose2d phases, linear as a 1 x M image; dk_gemm_fast.hip) for input
 * channels per group a multiple of 64.  Only in the sm_90a code object: on
 * Hopper wgmma (the warpgroup-wide asynchronous MMA that reads both operands
 * from shared memory) keeps the tensor cores busier than the mma.sync kernels
 * of the tile abstraction's NVIDIA family, whose operands pass through
 * registers (docs/conv.md has the numbers).
 *
 * Block: 64 * WGS output pixels x 128 output channels, WGS warpgroups of 128
 * threads, each 64 pixels x 128 channels (m64n128k16, 64 fp32 accumulators per
 * thread); WGS 2 (dkk_gemm_wgmma_*) or 4 (dkk_gemm_wgmma_4wg_*, for K >= 2048: hip_conv.c).
 * The reduction runs in slices of 64 channels of one tap: a row of a slice is
 * 128 contiguous bytes, stored with 16-byte chunk c of row r at chunk c ^ (r % 8)
 * (the 128-byte swizzle the wgmma descriptors name; stages 1024-byte aligned).
 * A ring of ST stages is filled by cp.async LA slices ahead; INF slices of MMAs
 * stay in flight while the next slice's are issued (LA + INF < ST), so a stage
 * is refilled only after the barrier that follows its MMAs' completion.
 * Where the problem allows, a warp-specialized variant (dkgwt_gemm below) loads
 * through the Tensor Memory Accelerator instead: +10-25% on the 3x3 convs.
 * conv3d's time taps (dkh_gemm_args t_*) run on the four-warpgroup and TMA
 * kernels: at two warpgroups the frame gather spilled (128 registers). */
#if defined(DKP_NVIDIA) && defined(__CUDA_ARCH_FEAT_SM90_ALL)

/* Shared-memory matrix descriptor: K-major operand, 128-byte swizzle, 8-row
 * groups 1024 bytes apart (SBO); the leading offset is unused in this mode. */
DKP_DEV dkp_u64 dkgw_desc(unsigned saddr) {
    return (dkp_u64)((saddr & 0x3FFFF) >> 4) | ((dkp_u64)1 << 16) | ((dkp_u64)(1024 >> 4) << 32) | ((dkp_u64)1 << 62);
}

template <int DT>
DKP_DEV void dkgw_mma(float *d, dkp_u64 da, dkp_u64 db) {
    if constexpr (DT == 2)
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
            "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
            : "l"(da), "l"(db), "r"(1));
    else
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
            "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
            : "l"(da), "l"(db), "r"(1));
}

/* Waits until at most N groups of this warpgroup's MMAs are in flight; the
 * accumulators are named so that no read of them moves above the wait. */
template <int N>
DKP_DEV void dkgw_wait(float *d) {
    asm volatile("wgmma.wait_group.sync.aligned %64;\n" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) : "n"(N) : "memory");
}

/* Epilogue of both Hopper kernels: NT threads (warpgroup wg of the consumers,
 * named barrier 1) stage the BM x BN accumulators in fp32 over the free ring
 * (BM x 132 floats), then apply the epilogue by rows (dkgf_store_tile). */
template <int DT, int BM, int NT>
DKP_DEV void dkgw_epilogue(const dkh_gemm_args &p, const float *d, float *cstage, int tid, dkh_i64 n0, dkh_i64 m0,
                           dkh_i64 g, dkh_i64 img) {
    const int BN = DKH_GEMM_MMA_BN, CLD = BN + 4, lane = tid % 32, warp = tid / 32, wg = warp / 4;
#pragma unroll
    for (int j = 0; j < BN / 8; j++)
#pragma unroll
        for (int r = 0; r < 4; r++) {
            int rr, cc;
            dkt_c_map(DKT_MMA16816, lane, r, &rr, &cc);
            cstage[(wg * 64 + (warp % 4) * 16 + rr) * CLD + j * 8 + cc] = d[j * 4 + r];
        }
    asm volatile("bar.sync 1, %0;" ::"n"(NT) : "memory");
    dkgf_store_tile<DT, BN, NT>(p, cstage, CLD, BM, n0, m0, g, img, tid);
}

template <int DT, int WGS, int ST, int LA, int INF>
DKP_DEV void dkgw_gemm(const dkh_gemm_args &p, dkh_i64 z) {
    const int BM = 64 * WGS, BN = DKH_GEMM_MMA_BN, BK = DKH_GEMM_WGMMA_BK, NT = 128 * WGS;
    const int RS = NT / 8, R = BM / RS, RB = BN / RS; /* pixel and channel rows per thread, their spacing */
    const int SA = BM * BK, SB = BN * BK; /* elements per stage and operand */
    extern __shared__ __align__(1024) unsigned char dkgw_smem[];
    const int tid = dkp_tid(), warp = tid / 32, wg = warp / 4;
    const dkh_i64 g = z % p.groups, img = z / p.groups;
    const dkh_i64 n0 = (p.tiles_xy ? dkp_bid_y() : dkp_bid_x()) * BM;
    if (n0 >= p.N) return; /* merged phases: a smaller phase's grid is shorter */
    const dkh_i64 m0 = (p.tiles_xy ? dkp_bid_x() : dkp_bid_y()) * BN;
    const int chunk = tid % 8, lrow = tid / 8, cin = (int)p.cin_g, wtaps = (int)p.w.taps;
    const int slices = (int)(p.K / BK);
    /* the ring at the first 1024-byte boundary of the dynamic shared memory */
    const unsigned sraw = (unsigned)__cvta_generic_to_shared(dkgw_smem), sbase = (sraw + 1023u) & ~1023u;
    dkp_u16 *const ring = (dkp_u16 *)(dkgw_smem + (sbase - sraw));
    dkgf_rows s;
    float d[64];

#pragma unroll
    for (int j = 0; j < R; j++) {
        const dkh_i64 n = n0 + lrow + RS * j;
        const int oc = (int)p.w.out_count, nn = n < p.N ? (int)n : 0, py = nn / oc, px = nn - py * oc;
        s.pv[j] = n < p.N;
        s.y0[j] = py * (int)p.h.in_step + (int)p.h.off0;
        s.x0[j] = px * (int)p.w.in_step + (int)p.w.off0;
        s.x[j] = (const dkp_u16 *)p.b + img * p.b_s[0] + g * p.cin_g + chunk * 8;
    }
#pragma unroll
    for (int j = 0; j < RB; j++) {
        const dkh_i64 co = m0 + lrow + RS * j;
        s.cv[j] = co < p.M;
        s.w[j] = (const dkp_u16 *)p.a + img * p.a_zs + g * p.a_gs + (s.cv[j] ? co : 0) * p.a_s[0] + chunk * 8;
    }
#pragma unroll
    for (int i = 0; i < 64; i++) d[i] = 0.0f;

    int ci0 = 0, th = 0, tw = 0; /* the next slice to issue */
    const dkp_u16 *src[R + RB];
    bool ok[R + RB];
    /* slice sl (if any) -> stage sl % ST; one cp.async group per call */
    auto issue = [&](int sl) {
        if (sl < slices) {
            dkp_u16 *const a = ring + (sl % ST) * (SA + SB), *const b = a + SA;
            if (ci0 == 0) dkgf_src<R, RB, WGS == 4>(p, s, 0, th, tw, src, ok); /* a new tap: new rows */
#pragma unroll
            for (int j = 0; j < R + RB; j++) {
                const int row = lrow + RS * (j < R ? j : j - R);
                dkgf_async((j < R ? a : b) + row * BK + ((chunk ^ (row & 7)) << 3), src[j] + ci0, ok[j]);
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
    };
#pragma unroll
    for (int i = 0; i < LA; i++) issue(i);
    for (int sl = 0; sl < slices; sl++) {
        /* slice sl has landed (LA-1 younger groups may be in flight); the fence
         * makes this thread's copies visible to the MMAs' (async) reads */
        asm volatile("cp.async.wait_group %0;\nfence.proxy.async.shared::cta;" ::"n"(LA - 1) : "memory");
        dkp_sync();
        /* stage (sl + LA) % ST last held slice sl + LA - ST <= sl - 1 - INF, whose
         * MMAs every warpgroup waited for before the barrier */
        issue(sl + LA);
        const unsigned sa = sbase + (unsigned)((sl % ST) * (SA + SB) * 2);
        const dkp_u64 da = dkgw_desc(sa + wg * 64 * BK * 2), db = dkgw_desc(sa + SA * 2);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int k = 0; k < BK / 16; k++) dkgw_mma<DT>(d, da + 2 * k, db + 2 * k); /* +32 bytes per k16 step */
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        dkgw_wait<INF>(d);
    }
    dkgw_wait<0>(d);
    asm volatile("cp.async.wait_all;" ::: "memory");
    dkp_sync();

    /* epilogue: all BM rows staged at once in the free ring */
    dkgw_epilogue<DT, BM, NT>(p, d, (float *)ring, tid, n0, m0, g, img);
}

/* mbarrier primitives (shared-memory addresses) for the warp-specialized kernel. */
DKP_DEV void dkgw_bar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
DKP_DEV void dkgw_bar_wait(unsigned bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{\n.reg .pred P;\nmbarrier.try_wait.parity.shared::cta.b64 P, [%1], %2;\nselp.u32 %0, 1, 0, P;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}
DKP_DEV void dkgw_bar_arrive(unsigned bar) {
    asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}
/* arrival that also expects bytes of asynchronous (TMA) writes on bar */
DKP_DEV void dkgw_bar_expect(unsigned bar, unsigned bytes) {
    asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n" ::"r"(bar), "r"(bytes)
                 : "memory");
}
/* TMA tile loads (tensor maps: hip_conv.c), completing on bar */
DKP_DEV void dkgw_tma4(unsigned dst, const void *map, int c0, int c1, int c2, int c3, unsigned bar) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, "
                 "%4, %5}], [%6];" ::"r"(dst),
                 "l"((dkp_u64)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
                 : "memory");
}
DKP_DEV void dkgw_tma2(unsigned dst, const void *map, int c0, int c1, unsigned bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
                 "%3}], [%4];" ::"r"(dst),
                 "l"((dkp_u64)map), "r"(c0), "r"(c1), "r"(bar)
                 : "memory");
}

/* Warp-specialized TMA variant: CWG consumer warpgroups (64 pixels x 128
 * channels each, as above) only wait and multiply; one producer warp loads
 * every slice with the Tensor Memory Accelerator (a box per lane): boxes of 64 channels x
 * tma_box input pixels of one row (the tap's shifted row segments; padding comes
 * back as zeros from outside the tensor), and a box of 64 reduction elements x
 * 128 weight rows, all 128-byte swizzled as the wgmma descriptors expect (a box
 * of 8 rows or more starts on a 1024-byte boundary, so the swizzle phase holds).  Stage s is handed over through two mbarriers: full[s]
 * (the producer's byte count) and empty[s] (one arrival per consumer warp once
 * its MMAs on s completed), so no block-wide barrier runs in the loop.  Host
 * conditions (hip_conv.c): one group, no fused upsample, input steps of 1 along
 * w, rows of output pixels a multiple of 16 long. */
template <int DT, int CWG, int ST, int INF>
DKP_DEV void dkgwt_gemm(const dkh_gemm_args &p, const dkh_tmaps &t, dkh_i64 z) {
    const int BM = 64 * CWG, BN = DKH_GEMM_MMA_BN, BK = DKH_GEMM_WGMMA_BK, NC = 128 * CWG;
    const int SA = BM * BK, SB = BN * BK;
    extern __shared__ __align__(1024) unsigned char dkgw_smem[];
    __shared__ __align__(8) dkp_u64 bars[2 * ST];
    const int tid = dkp_tid(), warp = tid / 32, lane = tid % 32;
    const dkh_i64 img = z; /* one group */
    const dkh_i64 n0 = (p.tiles_xy ? dkp_bid_y() : dkp_bid_x()) * BM;
    if (n0 >= p.N) return; /* merged phases: a smaller phase's grid is shorter */
    const dkh_i64 m0 = (p.tiles_xy ? dkp_bid_x() : dkp_bid_y()) * BN;
    const int slices = (int)(p.K / BK);
    const unsigned sraw = (unsigned)__cvta_generic_to_shared(dkgw_smem), sbase = (sraw + 1023u) & ~1023u;
    const unsigned full0 = (unsigned)__cvta_generic_to_shared(bars), empty0 = full0 + 8 * ST;
    if (tid == 0)
        for (int s = 0; s < ST; s++) {
            dkgw_bar_init(full0 + 8 * s, 1);
            dkgw_bar_init(empty0 + 8 * s, CWG * 4);
        }
    dkp_sync();

    if (warp == CWG * 4) { /* producer warp: lane j loads box j, lane 31 the weights */
        const int oc = (int)p.w.out_count, cin = (int)p.cin_g, wtaps = (int)p.w.taps, bw = p.tma_box;
        const bool mine = lane < BM / bw; /* a box never crosses an output row (bw divides oc) */
        int ys = 0, xs = 0;               /* input row and first column of box lane at tap (0, 0) */
        if (mine) {
            const int n = (int)n0 + lane * bw, py = n / oc, px = n - py * oc;
            ys = py * (int)p.h.in_step + (int)p.h.off0;
            xs = px + (int)p.w.off0;
        }
        int ci0 = 0, th = 0, tw = 0, dy = 0, dx = 0, wk = 0, frame = (int)img;
        const void *xmap = t.x;
        for (int sl = 0; sl < slices; sl++) {
            const int st = sl % ST;
            if (ci0 == 0) { /* a new tap */
                int kh = th;
                if (p.t_taps) { /* conv3d in place: out-of-range frames come back as zeros */
                    bool cache;
                    frame = dkgf_time_tap(p, (int)img, th, &kh, &cache);
                    xmap = cache ? (const void *)t.c : (const void *)t.x;
                }
                dy = kh * (int)p.h.off_step;
                dx = tw * (int)p.w.off_step;
                wk = (int)(((dkh_i64)p.h.k0 + (dkh_i64)th * p.h.k_step) * p.a_s[2] +
                           ((dkh_i64)p.w.k0 + (dkh_i64)tw * p.w.k_step) * p.a_s[3]);
            }
            if (sl >= ST) dkgw_bar_wait(empty0 + 8 * st, ((sl / ST) - 1) & 1);
            const unsigned a = sbase + (unsigned)(st * (SA + SB) * 2), bar = full0 + 8 * st;
            if (lane == 0) dkgw_bar_expect(bar, (unsigned)((SA + SB) * 2));
            __syncwarp(); /* the byte count is expected before any copy lands */
            if (mine) dkgw_tma4(a + lane * bw * BK * 2, xmap, ci0, xs + dx, ys + dy, frame, bar);
            if (lane == 31) dkgw_tma2(a + SA * 2, t.w, wk + ci0, (int)m0, bar);
            ci0 += BK;
            if (ci0 == cin) {
                ci0 = 0;
                if (++tw == wtaps) {
                    tw = 0;
                    th++;
                }
            }
        }
        return;
    }

    /* consumers */
    const int wg = warp / 4;
    float d[64];
#pragma unroll
    for (int i = 0; i < 64; i++) d[i] = 0.0f;
    for (int sl = 0; sl < slices; sl++) {
        const int st = sl % ST;
        dkgw_bar_wait(full0 + 8 * st, (sl / ST) & 1);
        const unsigned sa = sbase + (unsigned)(st * (SA + SB) * 2);
        const dkp_u64 da = dkgw_desc(sa + wg * 64 * BK * 2), db = dkgw_desc(sa + SA * 2);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int k = 0; k < BK / 16; k++) dkgw_mma<DT>(d, da + 2 * k, db + 2 * k);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        dkgw_wait<INF>(d);
        /* slice sl - INF's MMAs are complete: its stage may be refilled */
        if (sl >= INF && lane == 0) dkgw_bar_arrive(empty0 + 8 * ((sl - INF) % ST));
    }
    dkgw_wait<0>(d);
    /* epilogue, consumers only (named barrier 1): every warpgroup's MMAs are done
     * before the ring is overwritten with BM x 132 floats */
    asm volatile("bar.sync 1, %0;" ::"n"(NC) : "memory");
    dkgw_epilogue<DT, BM, NC>(p, d, (float *)(dkgw_smem + (sbase - sraw)), tid, n0, m0, 0, img);
}

/* Two warpgroups: 3 stages (97 KB) and 128 registers, so two blocks share a
 * multiprocessor; one slice loaded ahead, one slice of MMAs in flight.  On the
 * H100 (f16 3x3, TFLOP/s) this beat 4 stages at one block per SM (413-446 vs
 * 378-403), 6 stages (373-385) and two slices ahead with no MMAs in flight
 * (399-433). */
#define DKGW_KERNEL extern "C" __global__ void __launch_bounds__(DKH_THREADS, 2)
DKGW_KERNEL dkk_gemm_wgmma_f16(dkh_gemm_args p) { DKGF_PHASE((dkgw_gemm<2, 2, DKH_GEMM_WGMMA_ST, 1, 1>(q, z))); }
DKGW_KERNEL dkk_gemm_wgmma_bf16(dkh_gemm_args p) { DKGF_PHASE((dkgw_gemm<3, 2, DKH_GEMM_WGMMA_ST, 1, 1>(q, z))); }
#undef DKGW_KERNEL
/* Four warpgroups (256 pixels x 128 channels): 4 stages (193 KB), one block per
 * multiprocessor, two slices ahead; a third less operand traffic per FLOP. */
#define DKGW_KERNEL extern "C" __global__ void __launch_bounds__(DKH_GEMM_WGMMA_4WG_THREADS, 1)
DKGW_KERNEL dkk_gemm_wgmma_4wg_f16(dkh_gemm_args p) { DKGF_PHASE((dkgw_gemm<2, 4, DKH_GEMM_WGMMA_4WG_ST, 2, 1>(q, z))); }
DKGW_KERNEL dkk_gemm_wgmma_4wg_bf16(dkh_gemm_args p) { DKGF_PHASE((dkgw_gemm<3, 4, DKH_GEMM_WGMMA_4WG_ST, 2, 1>(q, z))); }
#undef DKGW_KERNEL

/* TMA variants: two consumer warpgroups and a producer warp, two blocks per
 * multiprocessor; four consumer warpgroups, one block. */
#define DKGWT_KERNEL(name, threads, blocks, DT, CWG, ST)                                                    \
    extern "C" __global__ void __launch_bounds__(threads, blocks)                                         \
        name(dkh_gemm_args p, const __grid_constant__ dkh_tmaps t) {                                      \
        DKGF_PHASE((dkgwt_gemm<DT, CWG, ST, 1>(q, t, z)));                                                \
    }
DKGWT_KERNEL(dkk_gemm_wgmma_tma_f16, DKH_GEMM_WGMMA_TMA_THREADS, 2, 2, 2, DKH_GEMM_WGMMA_ST)
DKGWT_KERNEL(dkk_gemm_wgmma_tma_bf16, DKH_GEMM_WGMMA_TMA_THREADS, 2, 3, 2, DKH_GEMM_WGMMA_ST)
DKGWT_KERNEL(dkk_gemm_wgmma_tma_4wg_f16, DKH_GEMM_WGMMA_TMA_4WG_THREADS, 1, 2, 4, DKH_GEMM_WGMMA_4WG_ST)
DKGWT_KERNEL(dkk_gemm_wgmma_tma_4wg_bf16, DKH_GEMM_WGMMA_TMA_4WG_THREADS, 1, 3, 4, DKH_GEMM_WGMMA_4WG_ST)
#undef DKGWT_KERNEL

#endif
