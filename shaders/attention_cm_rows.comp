#version 450
#extension GL_GOOGLE_include_directive : require
// Flash attention on tensor cores (cooperative matrix) for small heads: D and
// Dv <= 128, multiples of 8, any Nq and Nkv (SD 1.5's D 40 and 80, SDXL's
// 77-token cross-attention); attention_cm.comp covers larger heads.  f16 or
// bf16 data, fp32 scores, softmax statistics and output accumulation.  Rows,
// keys and head dimensions past the tensors are staged as zeros; the head is
// computed 64 wide (MODE 0) or 128 wide (MODE 1, D or Dv above 64).
//
// Each of the 8 subgroups owns 16 query rows for the whole key loop (as HIP's
// dk_attention_rows.hip does per wave): its Q fragments (staged once through
// shared memory) stay in registers, its 16-row output tile in 4 or 8
// accumulator fragments.  The workgroup (128 rows) stages each block of 32
// keys' K and V rows in shared memory (each invocation fetches its vectors of
// the next block into registers during P V), double-buffered at width 64
// (stored at the block's end: one workgroup barrier per block),
// single-buffered at 128 (stored at the next block's start between two
// barriers: two buffers and the score slots would exceed 48 KB).  Scores and
// probabilities go through the subgroup's own shared memory (16 rows x 32
// keys; two lanes per row do the online softmax) with subgroup barriers only,
// so subgroups do not wait on each other's softmax.  (attention_cm.comp's
// D <= 64 path, 256 rows per workgroup in 16-key blocks with scores through
// workgroup-shared memory and two workgroup barriers per block, ran at 0.17x
// PyTorch on the H100.)  The per-row rescale of O uses the accumulator
// "probe" of attention_cm.comp.  Shared memory: 47616 / 46592 bytes; on the
// H100 120-126 registers at width 64 (two workgroups per SM), 197 at 128.
// Cooperative-matrix spelling (NV, KHR, bf16 A/B): dk_coopmat.glsl.
#define DK_PARAMS dk_vk_attention_params
#include "dk_common.glsl"
#include "dk_coopmat.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

const int NSG = 8;        // subgroups of 32
const int RS = 16;        // query rows per subgroup
const int BC = 32;        // keys per block
const bool WIDE = MODE == DK_VK_ATROWS_MODE_WIDE;
const int NF = WIDE ? 8 : 4;     // Q and O fragments: the head width / 16
const int VR = 2 * NF;           // 16-byte vectors of a staged K / V / Q row
const int SV = VR + 1;           // ... and its stride (+1: banks)
const int NBUF = WIDE ? 1 : 2;   // K / V buffers
const int NST = 2 * BC * VR / 256;   // staged vectors per invocation and block
const int QPASS = NBUF * 64;     // Q rows staged per pass through at_kv
const int LDS = 9;        // score row: 32 fp32 in 16-byte vectors (+1)
const int LDP = 5;        // probability row: 32 f16 in 16-byte vectors (+1)

// f16 tensors as 16-byte vectors: fragment offsets and strides count vectors.
layout(std430, set = 0, binding = 0) readonly buffer QV { uvec4 v[]; } qv;
layout(std430, set = 0, binding = 1) readonly buffer KV { uvec4 v[]; } kv;
layout(std430, set = 0, binding = 2) readonly buffer VV { uvec4 v[]; } vv;
DK_IO(4, O, DT)

shared uvec4 at_kv[NBUF * 2 * BC * SV];   // Q at the start; then [buffer][K, V][key][vector]
shared uvec4 at_s[NSG * RS * LDS];      // per subgroup: scores, the output spill slot
shared uvec4 at_p[NSG * RS * LDP];      // the probe at the start; then per subgroup: probabilities (storage dtype)
shared float at_a[NSG * RS];            // per subgroup row: the block's rescale; at the end 1 / l

// Two probabilities (finite, in [0, 1]) -> the storage dtype's 16-bit pair; bf16
// rounds half up (cm_pack2's NaN-preserving round-to-even costs more in the
// softmax, which bounds this shader).
uint pack_p(float a, float b) {
    if (DT == 3) return ((floatBitsToUint(a) + 0x8000u) >> 16) | ((floatBitsToUint(b) + 0x8000u) & 0xffff0000u);
    return packFloat2x16(f16vec2(a, b));
}

void main() {
    int t = int(gl_LocalInvocationIndex);
    int sg = int(gl_SubgroupID), lane = int(gl_SubgroupInvocationID);
    uint b = gl_WorkGroupID.z, h = gl_WorkGroupID.y;
    uint nq = uint(dkp.p.nq), nkv = uint(dkp.p.nkv), D = uint(dkp.p.d), Dv = uint(dkp.p.dv);
    float sl2 = dkp.p.scale * 1.4426950408889634;   // scale * log2(e)
    uint qb = uint(dkp.p.q.offset) + b * uint(dkp.p.q.stride[0]) + h * uint(dkp.p.q.stride[1]);
    uint kb = uint(dkp.p.k.offset) + b * uint(dkp.p.k.stride[0]) + h * uint(dkp.p.k.stride[1]);
    uint vb = uint(dkp.p.v.offset) + b * uint(dkp.p.v.stride[0]) + h * uint(dkp.p.v.stride[1]);
    uint ob = uint(dkp.p.o.offset) + b * uint(dkp.p.o.stride[0]) + h * uint(dkp.p.o.stride[1]);
    uint qs2 = uint(dkp.p.q.stride[2]), ks2 = uint(dkp.p.k.stride[2]), vs2 = uint(dkp.p.v.stride[2]);
    uint D8 = D >> 3, Dv8 = Dv >> 3;
    uint r0 = group_x() * uint(NSG * RS) + uint(sg * RS);   // this subgroup's first query row
    int sb = sg * RS * LDS, pb = sg * RS * LDP, ab = sg * RS;

    // The probe, an accumulator whose element (r, c) is r (attention_cm.comp);
    // the workgroup's Q rows (zeros past Nq and past D) QPASS at a time
    // through at_kv, each subgroup loading its fragments.
    if (t < 64) at_p[t] = uvec4(floatBitsToUint(float(t >> 2)));
    uint qw0 = group_x() * uint(NSG * RS);
    CM_A qf[NF];
    [[unroll]] for (int pass = 0; pass < 128 / QPASS; pass++) {
        if (pass > 0) barrier();   // the previous pass's fragments are loaded
        [[unroll]] for (int i = 0; i < QPASS * VR / 256; i++) {
            int row = 256 * i / VR + t / VR;   // vector t % VR of row (t + 256 i) / VR of the pass
            uint r = qw0 + uint(pass * QPASS + row), x = uint(t % VR);
            at_kv[row * SV + t % VR] = r < nq && x < D8 ? qv.v[((qb + r * qs2) >> 3) + x] : uvec4(0);
        }
        barrier();
        int qr = sg * RS - pass * QPASS;   // this subgroup's first row in the pass
        if (qr >= 0 && qr < QPASS)
            [[unroll]] for (int kk = 0; kk < NF; kk++)
                if (uint(2 * kk) < D8) CM_LOAD(qf[kk], at_kv, uint(qr * SV + 2 * kk), uint(SV));
    }
    CM_C probe;
    CM_LOAD(probe, at_p, 0u, 4u);
    CM_C o[NF];
    [[unroll]] for (int j = 0; j < NF; j++) o[j] = CM_C(0.0);

    // Staging: vector e = t + 256 i of a block is vector t % VR of staged row
    // e / VR = 256 i / VR + t / VR: key row % BC of K (row < BC) or V (as
    // BC VR is a multiple of 256, which tensor is known per i); zeros past Nkv
    // or the head dimension.  (Computed from e at run time, the tensor test
    // cost 131 registers at width 64: one workgroup per SM.)
    uvec4 rs[NST];
#define FETCH(key0)                                                                            \
    [[unroll]] for (int i = 0; i < NST; i++) {                                                 \
        int row = 256 * i / VR + t / VR;                                                       \
        uint k = (key0) + uint(row % BC), x = uint(t % VR);                                    \
        rs[i] = uvec4(0);                                                                      \
        if (k < nkv) {                                                                         \
            if (256 * i < BC * VR) {                                                           \
                if (x < D8) rs[i] = kv.v[((kb + k * ks2) >> 3) + x];                           \
            } else if (x < Dv8) rs[i] = vv.v[((vb + k * vs2) >> 3) + x];                       \
        }                                                                                      \
    }
#define STORE(bufi)                                                                            \
    [[unroll]] for (int i = 0; i < NST; i++)                                                   \
        at_kv[(bufi) * 2 * BC * SV + (256 * i / VR + t / VR) * SV + t % VR] = rs[i];
    FETCH(0u);
    barrier();   // Q and the probe are loaded: at_kv becomes K / V, at_p probabilities
    if (NBUF == 2) STORE(0);

    // Softmax role: row sr of the subgroup's 16, keys 16 * sp .. +16 of the block.
    int sr = lane >> 1, sp = lane & 1;
    float m_run = -1.0 / 0.0, l_run = 0.0, m_old;
    uint buf = 0u;
    for (uint kv0 = 0u; kv0 < nkv; kv0 += uint(BC)) {
        if (NBUF == 1) {   // the only buffer's readers are done; then this block's rows stored
            barrier();
            STORE(0);
        }
        barrier();   // this block's rows are stored (NBUF 2: the other buffer's readers are done)
        int kvb = int(buf) * 2 * BC * SV;

        // S = Q K^T for the subgroup's rows and the block's 32 keys.
        CM_C s0 = CM_C(0.0), s1 = CM_C(0.0);
        [[unroll]] for (int kk = 0; kk < NF; kk++) {
            if (uint(2 * kk) < D8) {
                CM_B k0, k1;
                CM_LOADT(k0, at_kv, uint(kvb + 2 * kk), uint(SV));
                CM_LOADT(k1, at_kv, uint(kvb + 16 * SV + 2 * kk), uint(SV));
                s0 = CM_MAD(qf[kk], k0, s0);
                s1 = CM_MAD(qf[kk], k1, s1);
            }
        }
        CM_STORE(s0, at_s, uint(sb), uint(LDS));
        CM_STORE(s1, at_s, uint(sb + 4), uint(LDS));
        subgroupMemoryBarrierShared();
        subgroupBarrier();

        // Online softmax of row sr over its 16 keys (log2 domain); keys past
        // Nkv get probability 0.
        {
            float sv[16];
            uint kl = kv0 + uint(16 * sp);   // the lane's first key
            [[unroll]] for (int c = 0; c < 4; c++) {
                vec4 x = uintBitsToFloat(at_s[sb + sr * LDS + 4 * sp + c]);
                sv[4 * c] = x.x * sl2;
                sv[4 * c + 1] = x.y * sl2;
                sv[4 * c + 2] = x.z * sl2;
                sv[4 * c + 3] = x.w * sl2;
            }
            if (kv0 + uint(BC) > nkv)   // the last block: keys past Nkv weigh exp2(-inf) = 0
                [[unroll]] for (int c = 0; c < 16; c++)
                    if (kl + uint(c) >= nkv) sv[c] = -1.0 / 0.0;
            float mx = -1.0 / 0.0;
            [[unroll]] for (int c = 0; c < 16; c++) mx = max(mx, sv[c]);
            mx = max(mx, subgroupShuffleXor(mx, 1u));
            m_old = m_run;
            float m_new = max(m_run, mx);        // finite: key 0 of the block is valid
            float alpha = exp2(m_run - m_new);   // 0 on the first block
            float sum = 0.0;
            [[unroll]] for (int c = 0; c < 16; c++) {
                sv[c] = exp2(sv[c] - m_new);
                sum += sv[c];
            }
            sum += subgroupShuffleXor(sum, 1u);
            l_run = l_run * alpha + sum;
            m_run = m_new;
            [[unroll]] for (int c = 0; c < 2; c++) {
                uvec4 w;
                [[unroll]] for (int e = 0; e < 4; e++)
                    w[e] = pack_p(sv[8 * c + 2 * e], sv[8 * c + 2 * e + 1]);
                at_p[pb + sr * LDP + 2 * sp + c] = w;
            }
            if (sp == 0) at_a[ab + sr] = alpha;
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();

        // O rows *= alpha, then O += P V.
        // (skipped where no row maximum of the subgroup changed, as is usual
        // after the first blocks; it also keeps the shader at 128 registers,
        // two workgroups per SM)
        if (!subgroupAll(m_run == m_old)) {
            float al[8];
            [[unroll]] for (int i = 0; i < 8; i++)
                if (i < probe.length()) al[i] = at_a[ab + int(probe[i])];
            [[unroll]] for (int j = 0; j < NF; j++)
                [[unroll]] for (int i = 0; i < 8; i++)
                    if (i < probe.length()) o[j][i] *= al[i];
        }
        // The next block's rows, in flight during P V (fetched at the block's
        // start instead they cost 130 registers at width 64, one workgroup per
        // SM; fetched at its end, they measured slower too).
        FETCH(kv0 + uint(BC));
        [[unroll]] for (int ks = 0; ks < 2; ks++) {
            CM_A pf;
            CM_LOAD(pf, at_p, uint(pb + 2 * ks), uint(LDP));
            [[unroll]] for (int j = 0; j < NF; j++) {
                if (uint(2 * j) < Dv8) {
                    CM_B vf;
                    CM_LOAD(vf, at_kv, uint(kvb + (BC + 16 * ks) * SV + 2 * j), uint(SV));
                    o[j] = CM_MAD(pf, vf, o[j]);
                }
            }
        }
        // NBUF 2: the next block's rows into the other buffer (its last
        // readers, the previous block, passed this block's barrier).
        if (NBUF == 2) {
            STORE(buf ^ 1u);
            buf ^= 1u;
        }
    }

    // Epilogue: O / l, fragment by fragment through the subgroup's score slot
    // (the last block's rescale has read at_a once every lane passes here).
    subgroupBarrier();
    if (sp == 0) at_a[ab + sr] = 1.0 / l_run;
    uint os2 = uint(dkp.p.o.stride[2]), os3 = uint(dkp.p.o.stride[3]);
    int er = lane >> 1, ec = (lane & 1) * 8;
    uint q = r0 + uint(er);
    [[unroll]] for (int j = 0; j < NF; j++) {
        if (uint(2 * j) >= Dv8) continue;
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        CM_STORE(o[j], at_s, uint(sb), 4u);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        uint col = uint(16 * j + ec);
        if (q < nq && col < Dv) {   // Dv % 8 == 0: the lane's 8 columns are valid together
            float inv = at_a[ab + er];
            vec4 lo = uintBitsToFloat(at_s[sb + er * 4 + (ec >> 2)]);
            vec4 hi = uintBitsToFloat(at_s[sb + er * 4 + (ec >> 2) + 1]);
            float v[8] = float[8](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
            [[unroll]] for (int c = 0; c < 8; c++) O_st(ob + q * os2 + (col + uint(c)) * os3, v[c] * inv);
        }
    }
}
