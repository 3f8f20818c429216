/* Hopper (sm_90a) flash attention on wgmma for small heads: D == Dv up to 128,
 * a multiple of 8 (the UNets' attention: SD 1.x's 40 / 80, SDXL's 64), f16 /
 * bf16, computed at D 64 or 128: the tensor maps fill Q and K's missing
 * columns with zeros, V^T's missing rows are zero (dkk_attention_v_transpose), and only Dv
 * output columns are stored.  Only in the sm_90a code object; hip_attention.c takes
 * it for those shapes (else the mma.sync small-head kernel,
 * dk_attention_rows.hip).
 *
 * Block: 128 query rows; two consumer warpgroups of 64 rows each and one
 * producer warp.  The producer loads Q once and the K and V^T tiles of BKV
 * keys (128 at D 64, 64 at D 128: DKH_ATTENTION_WGMMA_SMALL_BKV) into an ST-stage ring with the Tensor Memory Accelerator (tensor maps:
 * hip_attention.c), handing stages over through mbarriers (full: the bytes landed;
 * empty: all 8 consumer warps are done with it), as dkgwt_gemm does.  Per
 * tile, each consumer warpgroup:
 *   S = Q K^T   m64nBKVk16 over D, Q and K from shared memory (K-major);
 *   softmax     in registers: a thread holds 2 rows x BKV/4 scores (the
 *               accumulator layout: rows g, g + 8 of its warp's 16, columns
 *               8j + 2(lane % 4) + {0, 1}), the row maximum over the 4 lanes of
 *               a row by shuffles, fp32, base 2; the row sums stay per thread
 *               until the end;
 *   O = alpha O + P V   m64nDk16 with P from registers: the accumulators of
 *               S's 16-column pair (j = 2ks, 2ks + 1), rounded to the storage
 *               type, are exactly wgmma's A fragment for keys 16ks .. 16ks+15
 *               (rows g / g + 8, columns 2(lane % 4) + {0, 1} / + 8), and V
 *               comes transposed (dkk_attention_v_transpose into scratch, as for D 512) so
 *               that B is K-major too.
 * The two warpgroups take turns issuing their products (named barriers 1 and
 * 2; a turn passes once the products are issued, so the next queue behind
 * them): one warpgroup's products run while the other computes its softmax.
 * At D 128 (PIPE) each warpgroup also overlaps itself: one turn per tile
 * issues S(t+1) and P(t) V(t) together, and the softmax of t+1 runs while
 * P(t) V(t) does (P(t+1) kept as floats in S's registers until then).  Measured on the H100 (b2 h10 n4096,
 * f16, ms): D 128 0.40-0.41 -> 0.36-0.39; at D 64 it lost (0.239 -> 0.249 with
 * 64-key tiles, 0.258 with 128), so D <= 64 keeps two turns per tile.
 * Shared rows are 128 bytes (64 elements) with the 128-byte swizzle (chunk c
 * of row r at c ^ (r % 8)); wider rows are stored as blocks of 64 columns. */
#if defined(DKP_NVIDIA) && defined(__CUDA_ARCH_FEAT_SM90_ALL)

/* wgmma with A from registers (4 x 32 bits: rows g / g + 8, two column pairs) */
template <int DT>
DKP_DEV void dkas_mma64_rs(float *d, const dkp_u32 *a, dkp_u64 db) {
    if constexpr (DT == 2)
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
            "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
    else
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
            "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}

template <int DT>
DKP_DEV void dkas_mma128_rs(float *d, const dkp_u32 *a, dkp_u64 db) {
    if constexpr (DT == 2)
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
            "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %68, p, 1, 1, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
    else
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
            "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %68, p, 1, 1, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}

/* wgmma with A and B from shared memory; FIRST: D = A B (write-only
 * accumulators: nothing to zero), else D += A B */
template <int DT, bool FIRST>
DKP_DEV void dkas_mma64_ss(float *d, dkp_u64 da, dkp_u64 db) {
    if constexpr (FIRST) {
        if constexpr (DT == 2)
            asm volatile(
                "{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
                "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
                "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
                : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7]), "=f"(d[8]), "=f"(d[9]), "=f"(d[10]), "=f"(d[11]), "=f"(d[12]), "=f"(d[13]), "=f"(d[14]), "=f"(d[15]), "=f"(d[16]), "=f"(d[17]), "=f"(d[18]), "=f"(d[19]), "=f"(d[20]), "=f"(d[21]), "=f"(d[22]), "=f"(d[23]), "=f"(d[24]), "=f"(d[25]), "=f"(d[26]), "=f"(d[27]), "=f"(d[28]), "=f"(d[29]), "=f"(d[30]), "=f"(d[31])
                : "l"(da), "l"(db));
        else
            asm volatile(
                "{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
                "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
                "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
                : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7]), "=f"(d[8]), "=f"(d[9]), "=f"(d[10]), "=f"(d[11]), "=f"(d[12]), "=f"(d[13]), "=f"(d[14]), "=f"(d[15]), "=f"(d[16]), "=f"(d[17]), "=f"(d[18]), "=f"(d[19]), "=f"(d[20]), "=f"(d[21]), "=f"(d[22]), "=f"(d[23]), "=f"(d[24]), "=f"(d[25]), "=f"(d[26]), "=f"(d[27]), "=f"(d[28]), "=f"(d[29]), "=f"(d[30]), "=f"(d[31])
                : "l"(da), "l"(db));
    }
    if constexpr (!FIRST) {
        if constexpr (DT == 2)
            asm volatile(
                "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
                "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
                : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                : "l"(da), "l"(db));
        else
            asm volatile(
                "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
                "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
                : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                : "l"(da), "l"(db));
    }
}

template <int DT, bool FIRST>
DKP_DEV void dkas_mma128_ss(float *d, dkp_u64 da, dkp_u64 db) {
    if constexpr (FIRST) {
        if constexpr (DT == 2)
            asm volatile(
                "{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
                "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
                "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7]), "=f"(d[8]), "=f"(d[9]), "=f"(d[10]), "=f"(d[11]), "=f"(d[12]), "=f"(d[13]), "=f"(d[14]), "=f"(d[15]), "=f"(d[16]), "=f"(d[17]), "=f"(d[18]), "=f"(d[19]), "=f"(d[20]), "=f"(d[21]), "=f"(d[22]), "=f"(d[23]), "=f"(d[24]), "=f"(d[25]), "=f"(d[26]), "=f"(d[27]), "=f"(d[28]), "=f"(d[29]), "=f"(d[30]), "=f"(d[31]), "=f"(d[32]), "=f"(d[33]), "=f"(d[34]), "=f"(d[35]), "=f"(d[36]), "=f"(d[37]), "=f"(d[38]), "=f"(d[39]), "=f"(d[40]), "=f"(d[41]), "=f"(d[42]), "=f"(d[43]), "=f"(d[44]), "=f"(d[45]), "=f"(d[46]), "=f"(d[47]), "=f"(d[48]), "=f"(d[49]), "=f"(d[50]), "=f"(d[51]), "=f"(d[52]), "=f"(d[53]), "=f"(d[54]), "=f"(d[55]), "=f"(d[56]), "=f"(d[57]), "=f"(d[58]), "=f"(d[59]), "=f"(d[60]), "=f"(d[61]), "=f"(d[62]), "=f"(d[63])
                : "l"(da), "l"(db));
        else
            asm volatile(
                "{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
                "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
                "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7]), "=f"(d[8]), "=f"(d[9]), "=f"(d[10]), "=f"(d[11]), "=f"(d[12]), "=f"(d[13]), "=f"(d[14]), "=f"(d[15]), "=f"(d[16]), "=f"(d[17]), "=f"(d[18]), "=f"(d[19]), "=f"(d[20]), "=f"(d[21]), "=f"(d[22]), "=f"(d[23]), "=f"(d[24]), "=f"(d[25]), "=f"(d[26]), "=f"(d[27]), "=f"(d[28]), "=f"(d[29]), "=f"(d[30]), "=f"(d[31]), "=f"(d[32]), "=f"(d[33]), "=f"(d[34]), "=f"(d[35]), "=f"(d[36]), "=f"(d[37]), "=f"(d[38]), "=f"(d[39]), "=f"(d[40]), "=f"(d[41]), "=f"(d[42]), "=f"(d[43]), "=f"(d[44]), "=f"(d[45]), "=f"(d[46]), "=f"(d[47]), "=f"(d[48]), "=f"(d[49]), "=f"(d[50]), "=f"(d[51]), "=f"(d[52]), "=f"(d[53]), "=f"(d[54]), "=f"(d[55]), "=f"(d[56]), "=f"(d[57]), "=f"(d[58]), "=f"(d[59]), "=f"(d[60]), "=f"(d[61]), "=f"(d[62]), "=f"(d[63])
                : "l"(da), "l"(db));
    }
    if constexpr (!FIRST) {
        if constexpr (DT == 2)
            asm volatile(
                "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
                "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                : "l"(da), "l"(db));
        else
            asm volatile(
                "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
                "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                : "l"(da), "l"(db));
    }
}

/* Waits until at most N of this warpgroup's MMA groups are in flight, naming
 * the C accumulators (32 or 64) so that no read of them moves above the wait. */
template <int C, int N>
DKP_DEV void dkas_wait_s(float *d) {
    if constexpr (C == 64) {
        dkgw_wait<N>(d);
    } else {
        asm volatile("wgmma.wait_group.sync.aligned %32;\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                       "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                       "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                       "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "n"(N)
                     : "memory");
    }
}

/* Two floats -> the storage type's pair (a in the low half), one conversion */
template <int DT>
DKP_DEV dkp_u32 dkas_pack2(float a, float b) {
    dkp_u32 r;
    if constexpr (DT == 2)
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
    else
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
    return r;
}

/* The maximum (pos) or minimum of a row's BKV / 4 scores in this thread
 * (accumulators 4j, 4j + 1 from s) and the 3 other lanes of the row. */
template <int BKV>
DKP_DEV float dkas_extreme(const float *s, bool pos) {
    float m = s[0];
    if (pos) {
#pragma unroll
        for (int j = 0; j < BKV / 8; j++) m = fmaxf(m, fmaxf(s[j * 4], s[j * 4 + 1]));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
        return fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
    }
#pragma unroll
    for (int j = 0; j < BKV / 8; j++) m = fminf(m, fminf(s[j * 4], s[j * 4 + 1]));
    m = fminf(m, __shfl_xor_sync(0xffffffffu, m, 1));
    return fminf(m, __shfl_xor_sync(0xffffffffu, m, 2));
}

/* 16-byte chunk (row, c) of a [rows x 64*blocks] tile stored as blocks of 64 columns */
DKP_DEV unsigned dkas_off(int row, int c, int rows) {
    return (unsigned)((c >> 3) * rows * 128 + row * 128 + (((c & 7) ^ (row & 7)) << 4));
}

/* Named-barrier turn taking between the two consumer warpgroups (256 threads:
 * this warpgroup's 128 waiting plus the other's 128 arriving). */
DKP_DEV void dkas_turn_wait(int wg) { asm volatile("bar.sync %0, 256;" ::"r"(1 + wg) : "memory"); }
DKP_DEV void dkas_turn_pass(int wg) { asm volatile("bar.arrive %0, 256;" ::"r"(2 - wg) : "memory"); }

template <int DT, int D, int BKV, int ST, bool PIPE>
DKP_DEV void dkas_attn(const dkh_attn_args &p, const dkh_attn_tmaps &tm) {
    constexpr int BQ = DKH_ATTENTION_WGMMA_SMALL_BQ, NS = BKV / 2, NO = D / 2;
    constexpr int QB = BQ * D * 2, KB = BKV * D * 2, VB = D * BKV * 2; /* tile bytes */
    extern __shared__ __align__(1024) unsigned char dkas_smem[];
    __shared__ __align__(8) dkp_u64 bars[1 + 2 * ST];
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    /* split-KV (p.splits > 1, as for dkk_attention_mma_*): this block's keys are [kvb, kvb + nkv) */
    const dkh_i64 qblk = p.splits > 1 ? blockIdx.x % p.nqb : blockIdx.x;
    const dkh_i64 kvb = p.splits > 1 ? blockIdx.x / p.nqb * p.kv_chunk : 0;
    const dkh_i64 nkv = p.splits > 1 ? (p.kv_chunk < p.nkv - kvb ? p.kv_chunk : p.nkv - kvb) : p.nkv;
    const dkh_i64 q0 = qblk * BQ, h = blockIdx.y, b = blockIdx.z;
    const int tiles = (int)((nkv + BKV - 1) / BKV);
    const unsigned sraw = (unsigned)__cvta_generic_to_shared(dkas_smem), sb = (sraw + 1023u) & ~1023u;
    const unsigned sq = sb, sk = sb + QB; /* Q, then stage s: K at sk + s (KB + VB), V^T after it */
    const unsigned qfull = (unsigned)__cvta_generic_to_shared(bars), full0 = qfull + 8, empty0 = full0 + 8 * ST;
    if (tid == 0) {
        dkgw_bar_init(qfull, 1);
        for (int i = 0; i < ST; i++) {
            dkgw_bar_init(full0 + 8 * i, 1);
            dkgw_bar_init(empty0 + 8 * i, 8);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (warp == 8) { /* producer: one lane issues every copy */
        if (lane == 0) {
            const int vrow = (int)((b * p.nh + h) * D);
            dkgw_bar_expect(qfull, QB);
#pragma unroll
            for (int c = 0; c < D / 64; c++) dkgw_tma4(sq + c * BQ * 128, tm.q, c * 64, (int)q0, (int)h, (int)b, qfull);
            for (int t = 0; t < tiles; t++) {
                const int st = t % ST;
                const unsigned kd = sk + (unsigned)(st * (KB + VB)), full = full0 + 8 * st;
                if (t >= ST) dkgw_bar_wait(empty0 + 8 * st, ((t / ST) - 1) & 1);
                dkgw_bar_expect(full, KB + VB);
                const int key = (int)(kvb + (dkh_i64)t * BKV);
#pragma unroll
                for (int c = 0; c < D / 64; c++) dkgw_tma4(kd + c * BKV * 128, tm.k, c * 64, key, (int)h, (int)b, full);
#pragma unroll
                for (int c = 0; c < BKV / 64; c++) dkgw_tma2(kd + KB + c * D * 128, tm.vt, key + c * 64, vrow, full);
            }
        }
        return;
    }

    const int wg = warp / 4, wl = warp % 4, g = lane / 4, tq = lane % 4;
    const float sl2 = p.scale * 1.4426950408889634f;
    float m_run[2] = {-1.0e30f, -1.0e30f}, l_run[2] = {0.0f, 0.0f};
    float o[NO];
#pragma unroll
    for (int i = 0; i < NO; i++) o[i] = 0.0f;
    if (wg == 1) dkas_turn_pass(wg); /* warpgroup 0 multiplies first */
    dkgw_bar_wait(qfull, 0);

    /* S(t) = Q K(t)^T into sd (issued in the caller's turn, not waited for) */
    auto issue_s = [&](float *sd, int t) {
        const dkp_u64 dq = dkgw_desc(sq + wg * 64 * 128), dk = dkgw_desc(sk + (unsigned)((t % ST) * (KB + VB)));
        /* k16 step j over D: column block j / 4, +32 bytes per step */
#pragma unroll
        for (int j = 0; j < D / 16; j++) {
            const dkp_u64 da = dq + (j >> 2) * (BQ * 128 / 16) + (j & 3) * 2, db = dk + (j >> 2) * (BKV * 128 / 16) + (j & 3) * 2;
            if (j == 0) {
                if constexpr (BKV == 128)
                    dkas_mma128_ss<DT, true>(sd, da, db);
                else
                    dkas_mma64_ss<DT, true>(sd, da, db);
            } else {
                if constexpr (BKV == 128)
                    dkas_mma128_ss<DT, false>(sd, da, db);
                else
                    dkas_mma64_ss<DT, false>(sd, da, db);
            }
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    };
    /* O += P(t) V(t) (P from registers) */
    auto issue_pv = [&](const dkp_u32 *pa, int t) {
        const dkp_u64 dv = dkgw_desc(sk + (unsigned)((t % ST) * (KB + VB)) + KB);
        /* key step ks: V^T column block ks / 4, +32 bytes per step */
#pragma unroll
        for (int ks = 0; ks < BKV / 16; ks++) {
            const dkp_u64 db = dv + (ks >> 2) * (D * 128 / 16) + (ks & 3) * 2;
            if constexpr (D == 64)
                dkas_mma64_rs<DT>(o, pa + 4 * ks, db);
            else
                dkas_mma128_rs<DT>(o, pa + 4 * ks, db);
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    };
    /* online softmax of tile t's scores s into P (pa) and the rows' rescale
     * factors alpha: rows g (hr 0) and g + 8 (hr 1) of this warp's 16;
     * extremes of the raw scores (the maximum of the scaled ones whatever the
     * scale's sign), keys past Nkv (only in the last tile) set to the extreme
     * that loses, then P = 2^(s sl2 - m) as one FMA and MUFU.EX2 */
    auto softmax = [&](float *s, dkp_u32 *pa, int t, float *alpha, bool pack) {
        if ((dkh_i64)(t + 1) * BKV > nkv) {
            const dkh_i64 key0 = (dkh_i64)t * BKV + 2 * tq;
#pragma unroll
            for (int j = 0; j < BKV / 8; j++)
#pragma unroll
                for (int r = 0; r < 4; r++)
                    if (key0 + 8 * j + (r & 1) >= nkv) s[j * 4 + r] = sl2 >= 0.0f ? -INFINITY : INFINITY;
        }
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            const float m_new = fmaxf(m_run[hr], dkas_extreme<BKV>(s + 2 * hr, sl2 >= 0.0f) * sl2);
            alpha[hr] = dkaf_exp2(m_run[hr] - m_new);
            m_run[hr] = m_new;
            float sum = 0.0f;
#pragma unroll
            for (int j = 0; j < BKV / 8; j++) {
                const float p0 = dkaf_exp2(fmaf(s[j * 4 + 2 * hr], sl2, -m_new));
                const float p1 = dkaf_exp2(fmaf(s[j * 4 + 2 * hr + 1], sl2, -m_new));
                sum += p0 + p1;
                if (pack) {
                    /* A fragment of key step j / 2: (row g, pair 0), (g + 8, 0), (g, 1), (g + 8, 1) */
                    pa[(j / 2) * 4 + (j & 1) * 2 + hr] = dkas_pack2<DT>(p0, p1);
                } else {
                    s[j * 4 + 2 * hr] = p0; /* packed later by pack_p */
                    s[j * 4 + 2 * hr + 1] = p1;
                }
            }
            l_run[hr] = l_run[hr] * alpha[hr] + sum;
        }
    };

    float s[NS], alpha[2]; /* s: written by S's first step (scale-d 0) */
    dkp_u32 pa[NS / 2];
    auto pack_p = [&]() { /* P left in s as floats -> pa */
#pragma unroll
        for (int j = 0; j < BKV / 8; j++)
#pragma unroll
            for (int hr = 0; hr < 2; hr++) pa[(j / 2) * 4 + (j & 1) * 2 + hr] = dkas_pack2<DT>(s[j * 4 + 2 * hr], s[j * 4 + 2 * hr + 1]);
    };
    auto rescale = [&]() { /* O's rows, skipped where no row maximum of the warp moved */
        if (__any_sync(0xffffffffu, alpha[0] != 1.0f || alpha[1] != 1.0f)) {
#pragma unroll
            for (int j = 0; j < D / 8; j++) {
                o[j * 4 + 0] *= alpha[0];
                o[j * 4 + 1] *= alpha[0];
                o[j * 4 + 2] *= alpha[1];
                o[j * 4 + 3] *= alpha[1];
            }
        }
    };
    if constexpr (!PIPE) {
        /* two turns per tile: S(t), its softmax, then P(t) V(t) */
        for (int t = 0; t < tiles; t++) {
            dkgw_bar_wait(full0 + 8 * (t % ST), (t / ST) & 1);
            dkas_turn_wait(wg);
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
            issue_s(s, t);
            dkas_turn_pass(wg); /* the other warpgroup's products queue behind these */
            dkas_wait_s<NS, 0>(s);
            softmax(s, pa, t, alpha, true);
            rescale();
            dkas_turn_wait(wg);
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
            issue_pv(pa, t);
            if (wg == 0 || t + 1 < tiles) dkas_turn_pass(wg); /* none after warpgroup 1's last */
            dkas_wait_s<NO, 0>(o);
            /* stage t % ST is free once all 8 consumer warps are past it */
            if (lane == 0) dkgw_bar_arrive(empty0 + 8 * (t % ST));
        }
    } else {
        /* Software pipeline (one turn per tile: S(t+1) and P(t) V(t) issued together;
         * the softmax of t + 1 runs while P(t) V(t) does and leaves P(t+1) in s as
         * floats; O rescaled and P(t+1) packed into pa after P(t) V(t) is done). */
        dkgw_bar_wait(full0, 0);
        dkas_turn_wait(wg);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        issue_s(s, 0);
        dkas_turn_pass(wg);
        dkas_wait_s<NS, 0>(s);
        softmax(s, pa, 0, alpha, true);
        /* tiles with a tile after them; no branch around the products (ptxas
         * serializes wgmma behind compiler-inserted fences on divergent paths) */
        int t = 0;
        for (; t + 1 < tiles; t++) {
            dkgw_bar_wait(full0 + 8 * ((t + 1) % ST), ((t + 1) / ST) & 1);
            dkas_turn_wait(wg);
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
            issue_s(s, t + 1);
            issue_pv(pa, t);
            dkas_turn_pass(wg);
            dkas_wait_s<NS, 1>(s); /* S(t+1) done, P(t) V(t) may still run */
            softmax(s, pa, t + 1, alpha, false);
            dkas_wait_s<NO, 0>(o);
            /* stage t % ST is free once all 8 consumer warps are past it */
            if (lane == 0) dkgw_bar_arrive(empty0 + 8 * (t % ST));
            rescale(); /* for t + 1 */
            pack_p();
        }
        /* the last tile: P V only (warpgroup 1 passes no turn after it) */
        dkas_turn_wait(wg);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        issue_pv(pa, t);
        if (wg == 0) dkas_turn_pass(wg);
        dkas_wait_s<NO, 0>(o);
    }

    /* row sums over the 4 lanes of each row */
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        l_run[hr] += __shfl_xor_sync(0xffffffffu, l_run[hr], 1);
        l_run[hr] += __shfl_xor_sync(0xffffffffu, l_run[hr], 2);
    }
    const int r0 = wg * 64 + wl * 16 + g;
    if (p.splits > 1) {
        /* unnormalized O rows with their (max, sum), merged by dkk_attention_combine_* */
        const dkh_i64 sp = blockIdx.x / p.nqb;
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            const dkh_i64 q = q0 + r0 + 8 * hr;
            if (q >= p.nq) continue;
            float *const P = (float *)p.part + (((sp * p.nb + b) * p.nh + h) * p.nq + q) * (p.dv + 2);
#pragma unroll
            for (int j = 0; j < D / 8; j++)
                if (j * 8 < p.dv) *(float2 *)(P + j * 8 + 2 * tq) = make_float2(o[j * 4 + 2 * hr], o[j * 4 + 2 * hr + 1]);
            if (tq == 0) {
                P[p.dv] = m_run[hr];
                P[p.dv + 1] = l_run[hr];
            }
        }
        return;
    }
    dkp_u16 *const og = (dkp_u16 *)p.o + b * p.o_s[0] + h * p.o_s[1];
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        const dkh_i64 q = q0 + r0 + 8 * hr;
        if (q >= p.nq) continue;
        const float inv = 1.0f / l_run[hr];
#pragma unroll
        for (int j = 0; j < D / 8; j++) {
            const dkh_i64 col = j * 8 + 2 * tq;
            if (j * 8 >= p.dv) break; /* Dv % 8 == 0: whole column groups */
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

#define DKAS_KERNEL(name, DT, D)                                                                               \
    extern "C" __global__ void __launch_bounds__(DKH_ATTENTION_WGMMA_SMALL_THREADS, 1)                                         \
        name(dkh_attn_args p, const __grid_constant__ dkh_attn_tmaps t) {                                     \
        dkas_attn<DT, D, DKH_ATTENTION_WGMMA_SMALL_BKV(D), DKH_ATTENTION_WGMMA_SMALL_ST, (D > 64)>(p, t);                                                \
    }
DKAS_KERNEL(dkk_attention_wgmma_small_f16_d64, 2, 64)
DKAS_KERNEL(dkk_attention_wgmma_small_bf16_d64, 3, 64)
DKAS_KERNEL(dkk_attention_wgmma_small_f16_d128, 2, 128)
DKAS_KERNEL(dkk_attention_wgmma_small_bf16_d128, 3, 128)
#undef DKAS_KERNEL

#endif
