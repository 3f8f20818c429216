#version 450
#extension GL_GOOGLE_include_directive : require
// Flash attention on tensor cores (cooperative matrix), f16 data, fp32 scores,
// softmax statistics and output accumulation.  The host uses it when D and Dv
// are multiples of 8 (with CG 8, any Nq and Nkv: DK_VK_ATCM_MODE_MASKED below; where CG 2
// or 4 is forced, Nq, Nkv, D and Dv multiples of 16), every head dimension is
// contiguous and every row start 16-byte aligned (attention.comp covers
// everything else).
//
// A workgroup = 8 subgroups of 32, arranged as RG row groups x CG column
// groups (CG = MODE: 2, 4 or 8, chosen by the host from max(D, Dv): 64
// output columns per subgroup; D, Dv <= 64 run in attention_cm_rows.comp).  Each row group owns 32 query rows, so a workgroup
// owns BR = 32 * RG rows and streams keys in blocks of BC = 16 * CG:
//   S = Q K^T: subgroup (rg, cg) computes rows rg*32 .. +32, keys cg*16 .. +16
//     of the block.  Where Q and K fragments come from depends on CG:
//     CG 2: both straight from global memory (Q re-read from L1 per block);
//     CG 4: K staged through shared memory (subgroup-private 16 x 64 slices,
//       16-byte loads), Q from global memory;
//     CG 8: K staged as for CG 4 and Q staged by the workgroup 64 dims at a
//       time, both prefetched into registers one slice ahead, the next
//       block's first slice during this block's softmax and P V;
//     CG 8 with DK_VK_ATCM_MODE_R64: 64 query rows, keys 64 at a time (below);
//   S goes to shared memory; 256 invocations, CG per row, do the online
//     softmax in fp32 (log2 domain) and write P as f16 to shared memory;
//   O (32 rows x 64 columns per subgroup, 8 fp32 accumulator fragments) stays
//     in registers across the loop: rescaled by exp2(m_old - m_new) per row,
//     then O += P V, with V fragments staged (CG >= 4, prefetched one key
//     step ahead) or straight from global memory.
// Q fragments are staged because loading them straight from global memory
// dominated the time; V is staged for CG >= 4 for the same reason.
// The per-row rescale needs the row of each accumulator element an invocation
// holds: an accumulator-typed "probe" matrix loaded from a table whose element
// (r, c) is r gives it (elements of equal matrix types map alike).
// Shared memory: S (BR x BC fp32) + P (BR x BC f16) + staging; CG 8 needs
// 48896 bytes (NVIDIA's Vulkan limit is 49152), R64 45584.
// Cooperative-matrix spelling (NV, KHR, bf16 A/B): dk_coopmat.glsl.
#define DK_PARAMS dk_vk_attention_params
#include "dk_common.glsl"
#include "dk_coopmat.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

const int CG = MODE & DK_VK_ATCM_MODE_CG_MASK;        // column groups (the field of MODE: 2, 4 or 8)
// DK_VK_ATCM_MODE_R64 (with CG 8; the host sets it where such a grid fills the GPU): 64
// query rows per workgroup, keys 64 at a time.  S: subgroup (sg / 4, sg % 4)
// computes rows 32 (sg / 4) .. +32, keys 16 (sg % 4) .. +16; P V: subgroup sg
// owns output columns 64 sg .. +64 of all 64 rows (16 accumulator fragments).
// Per 64 rows x 64 keys it reads K, V and Q once (192 KB at D 512), where CG 8
// reads 288 KB per 32 rows x 128 keys: 1.5x fewer bytes per product.  K and Q
// slices are staged side by side in at_st (their space is V's in P V).
// DK_VK_ATCM_MODE_MASKED (with CG 8; the host sets it where Nq, Nkv, D or Dv is not a
// multiple of 16): keys past Nkv read as the last key (CG 8) or zeros (V) and
// weigh nothing key by key, D and Dv multiples of 8 (the last 16-wide step
// half zeros), output fragments stored 8 columns at a time.  A constant, so
// aligned shapes keep the code without the masks (the masks cost them time:
// docs/attention.md).
const bool ANYN = (MODE & DK_VK_ATCM_MODE_MASKED) != 0;
// (Spec-constant selects in these shared-array sizes crash NVIDIA's SPIR-V
// front end, driver 580: hence the arithmetic.)
const int R64I = (MODE >> DK_VK_ATCM_MODE_R64_SHIFT) & 1;    // (the host sets it only with CG 8)
const bool R64 = R64I != 0;
const int RG = 8 / CG;
const int BR = 32 * RG + 32 * R64I;  // query rows per workgroup
const int BC = 16 * CG - 64 * R64I;  // keys per block
const int KG = BC / 16;              // key groups of S (rows groups: 8 / KG)
const int SPR = 256 / BR;            // softmax invocations per row
const int OFR = 2 + 2 * R64I;        // O row fragments per subgroup
const int LDS = BC / 4 + 1;      // S row in 16-byte vectors (+1: banks)
const int LDP = BC / 8 + 1;      // P row in 16-byte vectors
// MODE bits 8-14 (DK_VK_ATCM_MODE_D8_SHIFT): D / 8 compiled in (the host sets it where Nq, Nkv, D and Dv
// are multiples of 16; 0: from the parameters), so that the slice loops over
// the head dimension are unrolled with static bounds and fetch indices (as
// with the conv's tap grid; not for the masked shapes (DK_VK_ATCM_MODE_MASKED), which
// measured slower with it).
const int D8C = (MODE >> DK_VK_ATCM_MODE_D8_SHIFT) & DK_VK_ATCM_MODE_D8_MASK;

// f16 tensors as 16-byte vectors: fragment offsets and strides count vectors.
layout(std430, set = 0, binding = 0) readonly buffer QV { uvec4 v[]; } qv;
layout(std430, set = 0, binding = 1) readonly buffer KV { uvec4 v[]; } kv;
layout(std430, set = 0, binding = 2) readonly buffer VV { uvec4 v[]; } vv;
DK_IO(4, O, DT)

shared uvec4 at_s[BR * LDS];     // scores (fp32); at the end the output spill slots
shared uvec4 at_p[BR * LDP];     // probabilities (f16)
shared float at_alpha[BR], at_l[BR];
// Subgroup-private staging of 16 rows x 64 f16 (K: keys x dims, V: keys x
// columns), loaded as 16-byte vectors: the fragments then come from shared
// memory.  Only where shared memory allows (CG >= 4).
const int SV = 9;                // staged row in 16-byte vectors (+1: banks)
const bool STG = CG >= 4;
// CG 8 (one row group of 32): the workgroup stages Q 64 dims at a time next to
// the K slices, so Q fragments come from shared memory too (two barriers per
// slice; shared memory then totals 48896 bytes).
const bool QST = CG == 8;
shared uvec4 at_qc[(QST ? 32 * SV : 1) - R64I * (32 * SV - 1)];
shared uvec4 at_st[STG ? 8 * 16 * SV : 1];

void main() {
    int t = int(gl_LocalInvocationIndex);
    int sg = int(gl_SubgroupID), lane = int(gl_SubgroupInvocationID);
    int kgi = sg % KG;                       // this subgroup's key group of S
    int r0 = 32 * (sg / KG);                 // and its first row in the block
    int cgi = R64 ? sg : kgi;                // its output column group
    int or0 = R64 ? 0 : r0;                  // and first output row
    uint b = gl_WorkGroupID.z, h = gl_WorkGroupID.y;
    uint nq = uint(dkp.p.nq), nkv = uint(dkp.p.nkv), Dv = uint(dkp.p.dv);
    int D8 = D8C != 0 ? D8C : dkp.p.d >> 3;
    uint q0 = group_x() * uint(BR);
    float sl2 = dkp.p.scale * 1.4426950408889634;   // scale * log2(e)
    uint qb = uint(dkp.p.q.offset) + b * uint(dkp.p.q.stride[0]) + h * uint(dkp.p.q.stride[1]);
    uint kb = uint(dkp.p.k.offset) + b * uint(dkp.p.k.stride[0]) + h * uint(dkp.p.k.stride[1]);
    uint vb = uint(dkp.p.v.offset) + b * uint(dkp.p.v.stride[0]) + h * uint(dkp.p.v.stride[1]);
    uint ob = uint(dkp.p.o.offset) + b * uint(dkp.p.o.stride[0]) + h * uint(dkp.p.o.stride[1]);
    uint qs2 = uint(dkp.p.q.stride[2]), ks2 = uint(dkp.p.k.stride[2]), vs2 = uint(dkp.p.v.stride[2]);
    uint col0 = uint(64 * cgi);              // this subgroup's first output column

    // Q rows past Nq read row Nq-16.. instead (finite values, never stored).
    uint qrow0 = min(q0 + uint(r0), nq - 16u), qrow1 = min(q0 + uint(r0) + 16u, nq - 16u);
    uint qa0 = (qb + qrow0 * qs2) >> 3, qa1 = (qb + qrow1 * qs2) >> 3;

    if (t < 64) at_s[t] = uvec4(floatBitsToUint(float(t >> 2)));   // element (r, c) = r
    barrier();
    CM_C probe;
    CM_LOAD(probe, at_s, 0u, 4u);
    barrier();

    CM_C o0[4], o1[4], o2[4], o3[4];   // O rows or0 .. +16, +16 .. +32, (R64) +32, +48
    [[unroll]] for (int j = 0; j < 4; j++) {
        o0[j] = CM_C(0.0);
        o1[j] = CM_C(0.0);
        if (R64) {
            o2[j] = CM_C(0.0);
            o3[j] = CM_C(0.0);
        }
    }
    // Softmax role: row sr, keys sp*16 .. +16 of each block; running max and sum.
    int sr = t / SPR, sp = t % SPR;
    float m_run = -1.0 / 0.0, l_run = 0.0;

    int stb = sg * 16 * SV;
    int xr = lane >> 3, xv = lane & 7;     // staging: rows xr + 4i, vector xv
    // CG 8 (with or without R64): the K and Q slices are fetched into
    // registers in one sequence that runs on across blocks (the next block's
    // first slice loads during this block's softmax and P V, instead of one
    // exposed load latency per block), the slice of keys fk .., vectors
    // fn .. fn + 8 of the head dimension.  Keys past Nkv read the last keys
    // (masked in the softmax), rows past Nq the last row (never stored), and
    // vectors past D zeros.
    //   R64: keys fk + kr, + 32 and query rows q0 + kr, + 32, vector xq; K
    //     rows 0 .. 63 of at_st, Q rows QO ..; one slice in flight (two
    //     spill: 255 registers).
    //   else: this subgroup's keys fk + 16 kgi + xr + 4 i, query row q0 +
    //     t / 8, vector xv; one slice in flight (three measured slower at
    //     every size once the fetch runs on across blocks).
    const int QO = 64 * SV;
    int kr = t >> 3, xq = t & 7;
    uint qc0 = (qb + min(q0 + uint(kr), nq - 1u) * qs2) >> 3;
    uint qc1 = (qb + min(q0 + uint(kr + 32), nq - 1u) * qs2) >> 3;
    uvec4 rk0, rk1, rq0, rq1;
    uvec4 rkA[4], rqA;
#define AT_FETCH64(fk, fn)                                                                \
    {                                                                                     \
        bool in_ = (fn) + uint(xq) < uint(D8);                                            \
        uint ka0 = ((kb + min((fk) + uint(kr), nkv - 1u) * ks2) >> 3) + (fn) + uint(xq);  \
        uint ka1 = ((kb + min((fk) + uint(kr + 32), nkv - 1u) * ks2) >> 3) + (fn) + uint(xq); \
        rk0 = in_ ? kv.v[ka0] : uvec4(0);                                                 \
        rk1 = in_ ? kv.v[ka1] : uvec4(0);                                                 \
        rq0 = in_ ? qv.v[qc0 + (fn) + uint(xq)] : uvec4(0);                               \
        rq1 = in_ ? qv.v[qc1 + (fn) + uint(xq)] : uvec4(0);                               \
    }
#define AT_FETCH_KQ(rk, rq, fk, fn)                                                         \
    {                                                                                       \
        bool in_ = (fn) + uint(xq) < uint(D8);                                              \
        uint ka = ((kb + min((fk) + uint(16 * kgi), nkv - 16u) * ks2) >> 3) + (fn) + uint(xq); \
        [[unroll]] for (int i = 0; i < 4; i++) {                                            \
            uint key_ = min((fk) + uint(16 * kgi + xr + 4 * i), nkv - 1u);                  \
            uint a_ = ANYN ? ((kb + key_ * ks2) >> 3) + (fn) + uint(xq) : ka + uint(xr + 4 * i) * (ks2 >> 3); \
            rk[i] = in_ ? kv.v[a_] : uvec4(0);                                              \
        }                                                                                   \
        rq = in_ ? qv.v[qc0 + (fn) + uint(xq)] : uvec4(0);                                  \
    }
// The slice after slice d8 of block kv0 (keys, first vector): static where D
// is compiled in; else the state fk, fn, advanced after each fetch (with D8
// at run time this measured faster than the static form).
#define AT_NEXT_FK(kv0, d8) ((d8) + 8 < D8 ? (kv0) : (kv0) + uint(BC))
#define AT_NEXT_FN(d8) uint((d8) + 8 < D8 ? (d8) + 8 : 0)
    uint fk = 0u, fn = 8u;
#define AT_ADVANCE          \
    {                       \
        fn += 8u;           \
        if (fn >= uint(D8)) { \
            fn = 0u;        \
            fk += uint(BC); \
        }                   \
    }
    if (D8 <= 8) {   // (the slice after slice 0 is the next block's first)
        fn = 0u;
        fk = uint(BC);
    }
// One slice of S's products: K and Q vectors d8 .. d8 + 8 of the head dimension
// staged from registers, the next slice fetched, the products (R64, CG 8).
#define AT_SLICE64(d8, FETCH_NEXT)                                                                        \
    {                                                                                                     \
        barrier(); /* the previous slice's (or block's) readers are done */                              \
        at_st[kr * SV + xq] = rk0;                                                                        \
        at_st[(kr + 32) * SV + xq] = rk1;                                                                 \
        at_st[QO + kr * SV + xq] = rq0;                                                                   \
        at_st[QO + (kr + 32) * SV + xq] = rq1;                                                            \
        barrier();                                                                                        \
        FETCH_NEXT                                                                                        \
        [[unroll]] for (int kk = 0; kk < 4; kk++) {                                                       \
            if ((d8) + 2 * kk < D8) {                                                                     \
                CM_A a0, a1;                                                                              \
                CM_B kf;                                                                                  \
                CM_LOADT(kf, at_st, uint(kgi * 16 * SV + 2 * kk), uint(SV));                              \
                CM_LOAD(a0, at_st, uint(QO + r0 * SV + 2 * kk), uint(SV));                                \
                CM_LOAD(a1, at_st, uint(QO + (r0 + 16) * SV + 2 * kk), uint(SV));                         \
                s0 = CM_MAD(a0, kf, s0);                                                                  \
                s1 = CM_MAD(a1, kf, s1);                                                                  \
            }                                                                                             \
        }                                                                                                 \
    }
#define AT_SLICE_KQ(d8, FETCH_NEXT)                                                                       \
    {                                                                                                     \
        barrier(); /* the previous slice's (or block's) readers are done */                              \
        [[unroll]] for (int i = 0; i < 4; i++) at_st[stb + (xr + 4 * i) * SV + xv] = rkA[i];              \
        at_qc[kr * SV + xq] = rqA;                                                                        \
        barrier();                                                                                        \
        FETCH_NEXT                                                                                        \
        [[unroll]] for (int kk = 0; kk < 4; kk++) {                                                       \
            if ((d8) + 2 * kk < D8) {                                                                     \
                CM_A a0, a1;                                                                              \
                CM_B kf;                                                                                  \
                CM_LOADT(kf, at_st, uint(stb + 2 * kk), uint(SV));                                        \
                CM_LOAD(a0, at_qc, uint(2 * kk), uint(SV));                                               \
                CM_LOAD(a1, at_qc, uint(16 * SV + 2 * kk), uint(SV));                                     \
                s0 = CM_MAD(a0, kf, s0);                                                                  \
                s1 = CM_MAD(a1, kf, s1);                                                                  \
            }                                                                                             \
        }                                                                                                 \
    }
    if (R64) {
        AT_FETCH64(0u, 0u)
    } else if (QST) {
        AT_FETCH_KQ(rkA, rqA, 0u, 0u)
    }
    for (uint kv0 = 0u; kv0 < nkv; kv0 += uint(BC)) {
        // S for rows r0 .. r0+31, keys kv0 + kgi*16 .. +16.
        uint key = kv0 + uint(16 * kgi);
        CM_C s0 = CM_C(0.0), s1 = CM_C(0.0);
        if (R64) {
            if (D8C != 0) {
                [[unroll]] for (int d8 = 0; d8 < D8C; d8 += 8)
                    AT_SLICE64(d8, if (AT_NEXT_FK(kv0, d8) < nkv) AT_FETCH64(AT_NEXT_FK(kv0, d8), AT_NEXT_FN(d8)))
            } else {
                for (int d8 = 0; d8 < D8; d8 += 8) AT_SLICE64(d8, if (fk < nkv) { AT_FETCH64(fk, fn) AT_ADVANCE })
            }
        } else if (QST) {
            // Every subgroup runs the slices (workgroup barriers).
            if (D8C != 0) {
                [[unroll]] for (int d8 = 0; d8 < D8C; d8 += 8)
                    AT_SLICE_KQ(d8, if (AT_NEXT_FK(kv0, d8) < nkv) AT_FETCH_KQ(rkA, rqA, AT_NEXT_FK(kv0, d8), AT_NEXT_FN(d8)))
            } else {
                for (int d8 = 0; d8 < D8; d8 += 8) AT_SLICE_KQ(d8, if (fk < nkv) { AT_FETCH_KQ(rkA, rqA, fk, fn) AT_ADVANCE })
            }
        } else if (STG && key < nkv) {
            uint ka = (kb + key * ks2) >> 3, kst = ks2 >> 3;
            for (uint d8 = 0u; d8 < uint(D8); d8 += 8u) {
                subgroupBarrier();
                [[unroll]] for (int i = 0; i < 4; i++)
                    at_st[stb + (xr + 4 * i) * SV + xv] =
                        d8 + uint(xv) < uint(D8) ? kv.v[ka + uint(xr + 4 * i) * kst + d8 + uint(xv)] : uvec4(0);
                subgroupMemoryBarrierShared();
                subgroupBarrier();
                [[unroll]] for (int kk = 0; kk < 4; kk++) {
                    if (d8 + uint(2 * kk) < uint(D8)) {
                        CM_A a0, a1;
                        CM_B kf;
                        CM_LOADT(kf, at_st, uint(stb + 2 * kk), uint(SV));
                        CM_LOAD(a0, qv.v, qa0 + d8 + uint(2 * kk), qs2 >> 3);
                        CM_LOAD(a1, qv.v, qa1 + d8 + uint(2 * kk), qs2 >> 3);
                        s0 = CM_MAD(a0, kf, s0);
                        s1 = CM_MAD(a1, kf, s1);
                    }
                }
            }
        } else if (key < nkv) {
            uint ka = (kb + key * ks2) >> 3;
            for (uint d8 = 0u; d8 < uint(D8); d8 += 2u) {
                CM_A a0, a1;
                CM_B kf;
                CM_LOADT(kf, kv.v, ka + d8, ks2 >> 3);
                CM_LOAD(a0, qv.v, qa0 + d8, qs2 >> 3);
                CM_LOAD(a1, qv.v, qa1 + d8, qs2 >> 3);
                s0 = CM_MAD(a0, kf, s0);
                s1 = CM_MAD(a1, kf, s1);
            }
        }
        // V rows of the first key step in flight during the softmax (staged paths).
        uint vst = vs2 >> 3, nv = (Dv - min(Dv, col0)) >> 3;   // nv: vectors of this subgroup's columns
        uvec4 rv[4];
        if (STG) {
            uint va = (vb + kv0 * vs2 + col0) >> 3;
            [[unroll]] for (int i = 0; i < 4; i++)   // (ANYN: zeros past Nkv, where P is 0)
                rv[i] = uint(xv) < nv && (!ANYN || kv0 + uint(xr + 4 * i) < nkv)
                            ? vv.v[va + uint(xr + 4 * i) * vst + uint(xv)]
                            : uvec4(0);
        }
        CM_STORE(s0, at_s, uint(r0 * LDS + 4 * kgi), uint(LDS));
        CM_STORE(s1, at_s, uint((r0 + 16) * LDS + 4 * kgi), uint(LDS));
        barrier();

        // Online softmax of row sr over this block (log2 domain).
        {
            float sv[16];
            // Keys valid in this lane's 16: all or none where Nkv % 16 == 0.
            int nval = ANYN ? clamp(int(nkv) - int(kv0) - 16 * sp, 0, 16) : (kv0 + uint(16 * sp) < nkv ? 16 : 0);
            bool valid = nval > 0;
            float mx = -1.0 / 0.0;
            [[unroll]] for (int c = 0; c < 4; c++) {
                vec4 x = uintBitsToFloat(at_s[sr * LDS + 4 * sp + c]);
                sv[4 * c] = x.x * sl2;
                sv[4 * c + 1] = x.y * sl2;
                sv[4 * c + 2] = x.z * sl2;
                sv[4 * c + 3] = x.w * sl2;
            }
            if (valid)
                [[unroll]] for (int c = 0; c < 16; c++)
                    if (!ANYN || c < nval) mx = max(mx, sv[c]);
            [[unroll]] for (int off = 1; off < SPR; off <<= 1) mx = max(mx, subgroupShuffleXor(mx, uint(off)));
            float m_new = max(m_run, mx);        // finite: key 0 of the block is valid
            float alpha = exp2(m_run - m_new);   // 0 on the first block
            float sum = 0.0;
            [[unroll]] for (int c = 0; c < 16; c++) {
                sv[c] = (ANYN ? c < nval : valid) ? exp2(sv[c] - m_new) : 0.0;
                sum += sv[c];
            }
            [[unroll]] for (int off = 1; off < SPR; off <<= 1) sum += subgroupShuffleXor(sum, uint(off));
            l_run = l_run * alpha + sum;
            m_run = m_new;
            [[unroll]] for (int c = 0; c < 2; c++) {
                uvec4 w;
                [[unroll]] for (int e = 0; e < 4; e++)
                    w[e] = cm_pack2(sv[8 * c + 2 * e], sv[8 * c + 2 * e + 1]);
                at_p[sr * LDP + 2 * sp + c] = w;
            }
            if (sp == 0) at_alpha[sr] = alpha;
        }
        barrier();

        // O rows *= alpha, then O += P V.
        {
            float al0[8], al1[8], al2[8], al3[8];
            [[unroll]] for (int i = 0; i < 8; i++)
                if (i < probe.length()) {
                    int rr = int(probe[i]);
                    al0[i] = at_alpha[or0 + rr];
                    al1[i] = at_alpha[or0 + 16 + rr];
                    if (R64) {
                        al2[i] = at_alpha[32 + rr];
                        al3[i] = at_alpha[48 + rr];
                    }
                }
            [[unroll]] for (int j = 0; j < 4; j++)
                [[unroll]] for (int i = 0; i < 8; i++)
                    if (i < probe.length()) {
                        o0[j][i] *= al0[i];
                        o1[j][i] *= al1[i];
                        if (R64) {
                            o2[j][i] *= al2[i];
                            o3[j][i] *= al3[i];
                        }
                    }
        }
        [[unroll]] for (int kk = 0; kk < BC; kk += 16) {
            if (STG && kv0 + uint(kk) < nkv) {
                CM_A p0, p1, p2, p3;
                CM_LOAD(p0, at_p, uint(or0 * LDP + kk / 8), uint(LDP));
                CM_LOAD(p1, at_p, uint((or0 + 16) * LDP + kk / 8), uint(LDP));
                if (R64) {
                    CM_LOAD(p2, at_p, uint(32 * LDP + kk / 8), uint(LDP));
                    CM_LOAD(p3, at_p, uint(48 * LDP + kk / 8), uint(LDP));
                }
                subgroupBarrier();
                [[unroll]] for (int i = 0; i < 4; i++) at_st[stb + (xr + 4 * i) * SV + xv] = rv[i];
                subgroupMemoryBarrierShared();
                subgroupBarrier();
                if (kk + 16 < BC && kv0 + uint(kk + 16) < nkv) {   // the next step's rows
                    uint va = (vb + (kv0 + uint(kk + 16)) * vs2 + col0) >> 3;
                    [[unroll]] for (int i = 0; i < 4; i++)
                        rv[i] = uint(xv) < nv && (!ANYN || kv0 + uint(kk + 16 + xr + 4 * i) < nkv)
                                    ? vv.v[va + uint(xr + 4 * i) * vst + uint(xv)]
                                    : uvec4(0);
                }
                [[unroll]] for (int j = 0; j < 4; j++) {
                    if (col0 + uint(16 * j) < Dv) {
                        CM_B vf;
                        CM_LOAD(vf, at_st, uint(stb + 2 * j), uint(SV));
                        o0[j] = CM_MAD(p0, vf, o0[j]);
                        o1[j] = CM_MAD(p1, vf, o1[j]);
                        if (R64) {
                            o2[j] = CM_MAD(p2, vf, o2[j]);
                            o3[j] = CM_MAD(p3, vf, o3[j]);
                        }
                    }
                }
            } else if (kv0 + uint(kk) < nkv) {
                CM_A p0, p1;
                CM_LOAD(p0, at_p, uint(or0 * LDP + kk / 8), uint(LDP));
                CM_LOAD(p1, at_p, uint((or0 + 16) * LDP + kk / 8), uint(LDP));
                uint va = vb + (kv0 + uint(kk)) * vs2 + col0;
                [[unroll]] for (int j = 0; j < 4; j++) {
                    if (col0 + uint(16 * j) < Dv) {
                        CM_B vf;
                        CM_LOAD(vf, vv.v, (va + uint(16 * j)) >> 3, vs2 >> 3);
                        o0[j] = CM_MAD(p0, vf, o0[j]);
                        o1[j] = CM_MAD(p1, vf, o1[j]);
                    }
                }
            }
        }
    }

#undef AT_FETCH64
#undef AT_FETCH_KQ
#undef AT_NEXT_FK
#undef AT_NEXT_FN
#undef AT_ADVANCE
#undef AT_SLICE64
#undef AT_SLICE_KQ
    // Epilogue: O / l, through this subgroup's spill slot (256 floats of
    // at_s, whose last readers finished before the loop's last barrier).
    if (sp == 0) at_l[sr] = l_run;
    barrier();
    uint os2 = uint(dkp.p.o.stride[2]), os3 = uint(dkp.p.o.stride[3]);
    int er = lane >> 1, ec = (lane & 1) * 8;
    [[unroll]] for (int f = 0; f < OFR; f++)
        [[unroll]] for (int j = 0; j < 4; j++) {
            uint col = col0 + uint(16 * j);
            if (col >= Dv) continue;
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            if (f == 0) CM_STORE(o0[j], at_s, uint(sg * 64), 4u);
            else if (f == 1) CM_STORE(o1[j], at_s, uint(sg * 64), 4u);
            else if (f == 2) CM_STORE(o2[j], at_s, uint(sg * 64), 4u);
            else CM_STORE(o3[j], at_s, uint(sg * 64), 4u);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            int row = or0 + 16 * f + er;
            uint q = q0 + uint(row);
            if (q < nq && (!ANYN || col + uint(ec) < Dv)) {   // (Dv % 8 == 0)
                float inv = 1.0 / at_l[row];
                vec4 lo = uintBitsToFloat(at_s[sg * 64 + er * 4 + (ec >> 2)]);
                vec4 hi = uintBitsToFloat(at_s[sg * 64 + er * 4 + (ec >> 2) + 1]);
                float v[8] = float[8](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
                [[unroll]] for (int c = 0; c < 8; c++) O_st(ob + q * os2 + (col + uint(ec + c)) * os3, v[c] * inv);
            }
        }
}
