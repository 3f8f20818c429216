/* Hopper (sm_90a) flash attention on wgmma for D == Dv == 512 (the SDXL VAE's
 * mid-block: one head, n = H*W tokens), f16 / bf16.  Only in the sm_90a code
 * object; hip_attention.c takes it where the query blocks fill the multiprocessors
 * (else the split-KV mma.sync kernel, dk_attention_fast.hip, is faster).
 *
 * Block: 64 query rows, two warpgroups (256 threads).  Warpgroup w owns the
 * output columns [256w, 256w + 256) (m64n256 accumulators, 128 per thread).
 * Per tile of 64 keys:
 *   S: warpgroup w multiplies the D range [256w, 256w + 256) (m64n64k16, Q and
 *      K from shared memory); warpgroup 0 stores its partial S into a shared
 *      fp32 tile, warpgroup 1 adds its own after a barrier (shared-memory float
 *      atomics instead made the kernel 1.6x slower);
 *   softmax: 4 threads per row (lane shuffles), fp32, base 2; P rounded to the
 *      storage type into shared memory, the rows' rescale factors too;
 *   O = alpha * O + P V: V comes transposed (dkk_attention_v_transpose, once per call, into
 *      scratch), so both operands are K-major like every other wgmma operand.
 * Q, the K tile, the V^T tile and P are stored in rows of 128 bytes with the
 * 128-byte swizzle (chunk c of row r at c ^ (r % 8)); D = 512 is 8 such
 * column blocks of 64.  V^T(t) loads during S(t) and the softmax, K(t+1)
 * during the softmax and P V(t): four barriers per tile. */
#if defined(DKP_NVIDIA) && defined(__CUDA_ARCH_FEAT_SM90_ALL)

#define DKAW_SP 72 /* row pitch (floats) of the shared S tile: 2-way bank conflicts at most */
#define DKAW_Q 0
#define DKAW_K (64 * 1024)
#define DKAW_V (128 * 1024)
#define DKAW_P (192 * 1024)
#define DKAW_S (200 * 1024)
#define DKAW_A (DKAW_S + 64 * DKAW_SP * 4)

template <int DT>
DKP_DEV void dkaw_mma64(float *d, dkp_u64 da, dkp_u64 db) {
    if constexpr (DT == 2)
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
            "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
            : "l"(da), "l"(db), "r"(1));
    else
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
            "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
            : "l"(da), "l"(db), "r"(1));
}

DKP_DEV void dkaw_wait32(float *d) {
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) : : "memory");
}

template <int DT>
DKP_DEV void dkaw_mma256(float *d, dkp_u64 da, dkp_u64 db) {
    if constexpr (DT == 2)
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
            "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, %128, %129, p, 1, 1, 0, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
            : "l"(da), "l"(db), "r"(1));
    else
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
            "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, %128, %129, p, 1, 1, 0, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
            : "l"(da), "l"(db), "r"(1));
}

DKP_DEV void dkaw_wait128(float *d) {
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127]) : : "memory");
}

/* 16-byte chunk (row, c) of a [rows x 512] operand stored as 8 blocks of 64 columns */
DKP_DEV unsigned dkaw_off512(int row, int c, int rows) {
    return (unsigned)((c >> 3) * rows * 128 + row * 128 + (((c & 7) ^ (row & 7)) << 4));
}

/* V [b, h, nkv, Dv] -> V^T [b*h][Dv rounded up to 64][ld] (keys nkv .. ld-1 and
 * rows Dv .. zero): 32 x 32 tiles (also for dk_attention_wgmma_small.hip) */
extern "C" __global__ void __launch_bounds__(256) dkk_attention_v_transpose(dkh_attn_args p) {
    __shared__ dkp_u16 t[32][34];
    const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
    const dkh_i64 key0 = (dkh_i64)blockIdx.x * 32, d0 = (dkh_i64)blockIdx.y * 32, bh = blockIdx.z;
    const dkh_i64 b = bh / p.nh, h = bh % p.nh;
    const dkp_u16 *v = (const dkp_u16 *)p.v + b * p.v_s[0] + h * p.v_s[1];
    dkp_u16 *vt = (dkp_u16 *)p.vt + bh * ((p.dv + 63) / 64 * 64) * p.vt_ld;
    for (int i = ty; i < 32; i += 8) {
        const dkh_i64 key = key0 + i;
        t[i][tx] = key < p.nkv && d0 + tx < p.dv ? v[key * p.v_s[2] + (d0 + tx) * p.v_s[3]] : (dkp_u16)0;
    }
    __syncthreads();
    for (int i = ty; i < 32; i += 8) vt[(d0 + i) * p.vt_ld + key0 + tx] = t[tx][i];
}

template <int DT>
DKP_DEV void dkaw_attn(const dkh_attn_args &p) {
    extern __shared__ __align__(1024) unsigned char dkaw_smem[];
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, wg = warp / 4, wl = warp % 4, NT = 256;
    /* split-KV (p.splits > 1, as for dkk_attention_mma_*): this block's keys are [kvb, kvb + nkv) */
    const dkh_i64 qblk = p.splits > 1 ? blockIdx.x % p.nqb : blockIdx.x;
    const dkh_i64 kvb = p.splits > 1 ? blockIdx.x / p.nqb * p.kv_chunk : 0;
    const dkh_i64 nkv = p.splits > 1 ? (p.kv_chunk < p.nkv - kvb ? p.kv_chunk : p.nkv - kvb) : p.nkv;
    const dkh_i64 q0 = qblk * 64, h = blockIdx.y, b = blockIdx.z;
    const int tiles = (int)((nkv + 63) / 64);
    const unsigned sraw = (unsigned)__cvta_generic_to_shared(dkaw_smem), sb = (sraw + 1023u) & ~1023u;
    unsigned char *const base = dkaw_smem + (sb - sraw);
    float *const S = (float *)(base + DKAW_S), *const alpha_s = (float *)(base + DKAW_A);
    const dkp_u16 *const qg = (const dkp_u16 *)p.q + b * p.q_s[0] + h * p.q_s[1];
    const dkp_u16 *const kg = (const dkp_u16 *)p.k + b * p.k_s[0] + h * p.k_s[1] + kvb * p.k_s[2];
    const dkp_u16 *const vg = (const dkp_u16 *)p.vt + (b * p.nh + h) * 512 * p.vt_ld + kvb;
    /* softmax role: row sr, keys sc .. sc + 15 */
    const int sr = tid / 4, sc = (tid % 4) * 16;
    const float sl2 = p.scale * 1.4426950408889634f;
    float m_run = -1.0e30f, l_run = 0.0f;
    float o[128];
#pragma unroll
    for (int i = 0; i < 128; i++) o[i] = 0.0f;

    /* Q and K(0): 16 chunks of each per thread */
#pragma unroll 1
    for (int i = 0; i < 16; i++) {
        const int c = tid + NT * i, row = c / 64, cc = c % 64;
        const bool okq = q0 + row < p.nq, okk = row < nkv;
        dkgf_async((dkp_u16 *)(base + DKAW_Q + dkaw_off512(row, cc, 64)), okq ? qg + (q0 + row) * p.q_s[2] + cc * 8 : qg, okq);
        dkgf_async((dkp_u16 *)(base + DKAW_K + dkaw_off512(row, cc, 64)), okk ? kg + row * p.k_s[2] + cc * 8 : kg, okk);
    }
    asm volatile("cp.async.commit_group;" ::: "memory");

    for (int t = 0; t < tiles; t++) {
        /* K(t) (and Q) landed; every warpgroup's P V(t-1) is complete */
        asm volatile("cp.async.wait_group 0;\nfence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        /* V^T(t): 512 rows of 64 keys */
#pragma unroll 1
        for (int i = 0; i < 16; i++) {
            const int c = tid + NT * i, row = c / 8, k = c % 8;
            dkgf_async((dkp_u16 *)(base + DKAW_V + row * 128 + ((k ^ (row & 7)) << 4)), vg + row * p.vt_ld + t * 64 + k * 8, true);
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
        /* partial S over this warpgroup's D range, added into the shared tile */
        {
            float s[32];
#pragma unroll
            for (int i = 0; i < 32; i++) s[i] = 0.0f;
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
            /* k16 steps 16 wg .. 16 wg + 15 over D: column block 4 wg + j / 4, +32 bytes per
             * step (descriptor addresses count 16 bytes) */
            const dkp_u64 dq = dkgw_desc(sb + DKAW_Q + wg * 4 * 8192), dk = dkgw_desc(sb + DKAW_K + wg * 4 * 8192);
#pragma unroll
            for (int j = 0; j < 16; j++) dkaw_mma64<DT>(s, dq + (j >> 2) * 512 + (j & 3) * 2, dk + (j >> 2) * 512 + (j & 3) * 2);
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            dkaw_wait32(s);
            /* accumulator j*4 + r: row lane/4 + 8 (r / 2), column 8j + 2 (lane % 4) + r % 2;
             * warpgroup 0 stores, then warpgroup 1 adds */
            float *const srow = S + (wl * 16 + lane / 4) * DKAW_SP + 2 * (lane % 4);
            if (wg == 0) {
#pragma unroll
                for (int j = 0; j < 8; j++)
#pragma unroll
                    for (int r = 0; r < 4; r += 2)
                        *(float2 *)(srow + (r / 2) * 8 * DKAW_SP + j * 8) = make_float2(s[j * 4 + r], s[j * 4 + r + 1]);
            }
            __syncthreads();
            if (wg == 1) {
#pragma unroll
                for (int j = 0; j < 8; j++)
#pragma unroll
                    for (int r = 0; r < 4; r += 2) {
                        float2 *const a = (float2 *)(srow + (r / 2) * 8 * DKAW_SP + j * 8), v = *a;
                        *a = make_float2(v.x + s[j * 4 + r], v.y + s[j * 4 + r + 1]);
                    }
            }
        }
        __syncthreads();
        /* K(t+1) into the K tile, free now */
        if (t + 1 < tiles) {
#pragma unroll 1
            for (int i = 0; i < 16; i++) {
                const int c = tid + NT * i, row = c / 64, cc = c % 64;
                const dkh_i64 key = (dkh_i64)(t + 1) * 64 + row;
                const bool ok = key < nkv;
                dkgf_async((dkp_u16 *)(base + DKAW_K + dkaw_off512(row, cc, 64)), ok ? kg + key * p.k_s[2] + cc * 8 : kg, ok);
            }
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
        /* online softmax of row sr, keys sc .. sc + 15 */
        {
            float x[16], mx = -1.0e30f, sum = 0.0f;
#pragma unroll
            for (int e = 0; e < 16; e += 4) {
                const float4 v = *(const float4 *)&S[sr * DKAW_SP + sc + e];
                x[e] = v.x;
                x[e + 1] = v.y;
                x[e + 2] = v.z;
                x[e + 3] = v.w;
            }
#pragma unroll
            for (int e = 0; e < 16; e++) {
                x[e] = (dkh_i64)t * 64 + sc + e < nkv ? x[e] * sl2 : -1.0e30f;
                mx = fmaxf(mx, x[e]);
            }
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float m_new = fmaxf(m_run, mx), alpha = exp2f(m_run - m_new);
            dkp_u32 w[8];
#pragma unroll
            for (int e = 0; e < 16; e += 2) {
                const dkp_u16 h0 = dkp_conv<DT>::from(exp2f(x[e] - m_new)), h1 = dkp_conv<DT>::from(exp2f(x[e + 1] - m_new));
                sum += dkp_to_f32(h0, DT) + dkp_to_f32(h1, DT); /* the sum of what P V multiplies */
                w[e / 2] = (dkp_u32)h0 | ((dkp_u32)h1 << 16);
            }
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            l_run = l_run * alpha + sum;
            m_run = m_new;
            const int k = sc / 8;
            *(uint4 *)(base + DKAW_P + sr * 128 + ((k ^ (sr & 7)) << 4)) = make_uint4(w[0], w[1], w[2], w[3]);
            *(uint4 *)(base + DKAW_P + sr * 128 + (((k + 1) ^ (sr & 7)) << 4)) = make_uint4(w[4], w[5], w[6], w[7]);
            if (tid % 4 == 0) alpha_s[sr] = alpha;
        }
        /* V^T(t) landed (K(t+1) may still be in flight); P visible to the MMAs */
        asm volatile("cp.async.wait_group 1;\nfence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        /* O = alpha O + P V^T(t)^T for this warpgroup's 256 columns */
        {
            const float a0 = alpha_s[wl * 16 + lane / 4], a1 = alpha_s[wl * 16 + lane / 4 + 8];
#pragma unroll
            for (int j = 0; j < 32; j++) {
                o[j * 4 + 0] *= a0;
                o[j * 4 + 1] *= a0;
                o[j * 4 + 2] *= a1;
                o[j * 4 + 3] *= a1;
            }
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
            const dkp_u64 dp = dkgw_desc(sb + DKAW_P), dv = dkgw_desc(sb + DKAW_V + wg * 256 * 128);
#pragma unroll
            for (int ks = 0; ks < 4; ks++) dkaw_mma256<DT>(o, dp + 2 * ks, dv + 2 * ks);
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            dkaw_wait128(o);
        }
    }
    asm volatile("cp.async.wait_all;" ::: "memory");
    __syncthreads();
    if (tid % 4 == 0) {
        alpha_s[sr] = l_run; /* the row sums and maxima, for the output */
        alpha_s[64 + sr] = m_run;
    }
    __syncthreads();
    if (p.splits > 1) {
        /* unnormalized O rows with their (max, sum), merged by dkk_attention_combine_* */
        const dkh_i64 sp = blockIdx.x / p.nqb;
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            const int row = wl * 16 + lane / 4 + 8 * hr;
            const dkh_i64 q = q0 + row;
            if (q >= p.nq) continue;
            float *const P = (float *)p.part + (((sp * p.nb + b) * p.nh + h) * p.nq + q) * (512 + 2);
#pragma unroll
            for (int j = 0; j < 32; j++)
                *(float2 *)(P + wg * 256 + j * 8 + 2 * (lane % 4)) = make_float2(o[j * 4 + 2 * hr], o[j * 4 + 2 * hr + 1]);
            if (wg == 0 && lane % 4 == 0) {
                P[512] = alpha_s[64 + row];
                P[513] = alpha_s[row];
            }
        }
        return;
    }
    {
        const int r0 = wl * 16 + lane / 4;
        const float inv0 = 1.0f / alpha_s[r0], inv1 = 1.0f / alpha_s[r0 + 8];
        dkp_u16 *const og = (dkp_u16 *)p.o + b * p.o_s[0] + h * p.o_s[1];
#pragma unroll
        for (int j = 0; j < 32; j++)
#pragma unroll
            for (int hr = 0; hr < 2; hr++) {
                const dkh_i64 q = q0 + r0 + 8 * hr;
                if (q >= p.nq) continue;
                const float inv = hr ? inv1 : inv0;
                const dkh_i64 col = wg * 256 + j * 8 + 2 * (lane % 4);
                const dkp_u16 v0 = dkp_conv<DT>::from(o[j * 4 + 2 * hr] * inv), v1 = dkp_conv<DT>::from(o[j * 4 + 2 * hr + 1] * inv);
                dkp_u16 *const dst = og + q * p.o_s[2] + col * p.o_s[3];
                if (p.o_s[3] == 1 && (((dkp_u64)dst) & 3) == 0) {
                    *(dkp_u32 *)dst = (dkp_u32)v0 | ((dkp_u32)v1 << 16);
                } else {
                    dst[0] = v0;
                    dst[p.o_s[3]] = v1;
                }
            }
    }
}

extern "C" __global__ void __launch_bounds__(DKH_ATTENTION_WGMMA_THREADS, 1) dkk_attention_wgmma_f16_d512(dkh_attn_args p) { dkaw_attn<2>(p); }
extern "C" __global__ void __launch_bounds__(DKH_ATTENTION_WGMMA_THREADS, 1) dkk_attention_wgmma_bf16_d512(dkh_attn_args p) { dkaw_attn<3>(p); }

#endif
