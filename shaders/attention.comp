#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// Flash attention, portable family (no subgroup operations, no tensor cores:
// any subgroup size, lavapipe's 8 included).  A workgroup of 256 invocations
// owns BQ queries of one (batch = z, head = y) and streams keys in blocks of
// BKV = 4096 / BQ with an online softmax (base 2: the scale carries log2 e);
// scores and the output accumulate in fp32.  Per key block, built like the
// portable GEMM core (dk_gemm_tile.glsl):
//   S = Q K^T  each invocation a 4x4 register tile of S (rows 4*sm+i, keys
//              4*sn+j); Q and K stream through shared memory in DK-deep slices
//              of D, stored transposed ([d][row]) so that the fragments are
//              vec4 reads;
//   softmax    row maxima through shared memory; P = exp2(S - m) goes to shared
//              memory as [key][row]; each invocation keeps partial row sums of
//              its own keys (all invocations of a row share m, so the partial
//              sums are reduced once, at the end);
//   O += P V   each invocation a register tile of O: RM rows (RM*om + i) by NJ
//              vec4s of columns (4*on + CW*j), V streaming through shared
//              memory VK keys at a time.
// Every slice (a Q/K slice or a V slice) is fetched into registers while the
// previous one is multiplied (register double buffering, across the phases and
// into the next key block).  Loads are groups of 8 consecutive elements along
// the head dimension: one 16-byte load per group (two for f32) where the host
// found the view contiguous and aligned (DK_VK_AT_MODE_VEC_Q / _K / _V), else 8
// scalar loads.
// MODE bits 3..4 (OT, DK_VK_AT_MODE_OTILE_SHIFT), by Dv: 0 Dv <= 64 (BQ 64, NJ 1), 1 <= 128 (BQ 64,
// NJ 2), 2 <= 256 (BQ 32, NJ 2); RM 4: at most 32 accumulators (64, measured
// only while the epilogue still converted per accumulator, ran 7x slower per
// FLOP on the H100).  The host splits larger Dv into 256-column dispatches.
// DK_VK_AT_MODE_BIG_SLICES: the device has >= 40,192 bytes of shared memory (40,064 used):
// 32-deep Q/K slices and 4096-element V slices (else half, at most 29,312
// bytes).
#define DK_PARAMS dk_vk_attention_params
#include "dk_common.glsl"

layout(local_size_x = 256) in;

DK_IO(0, Q, DT)
DK_IO(1, K, DT)
DK_IO(2, V, DT)
DK_IO(4, O, DT)
layout(std430, set = 0, binding = 0) readonly buffer QV4 { uvec4 v[]; } qv4;
layout(std430, set = 0, binding = 1) readonly buffer KV4 { uvec4 v[]; } kv4;
layout(std430, set = 0, binding = 2) readonly buffer VV4 { uvec4 v[]; } vv4;

const int OT = (MODE >> DK_VK_AT_MODE_OTILE_SHIFT) & DK_VK_AT_MODE_OTILE_MASK;
const int AT_BQ = OT == 2 ? 32 : 64;          // queries per workgroup
const int AT_BKV = 4096 / AT_BQ;              // keys per block
const int NSM = AT_BQ / 4, NSN = AT_BKV / 4;  // S tiles along rows, keys
const int RM = 4;                             // O rows per invocation
const int NJ = OT == 0 ? 1 : 2;               // O column vec4s per invocation
const int NCT = 256 * RM / AT_BQ;             // invocations along O's columns
const int CW = 4 * NCT;                       // column stride of the vec4s
const int VW = CW * NJ;                       // columns per V slice
const bool BIG = (MODE & DK_VK_AT_MODE_BIG_SLICES) != 0;
const int DK = BIG ? 32 : 16;                 // Q/K slice depth
const int VCH = BIG ? 4096 : 2048;            // V slice elements
const int VK = VCH / VW;                      // keys per V slice
const int NQKG = (AT_BQ + AT_BKV) * DK / 8;   // 8-element groups of a Q/K slice
const int NGQK = (NQKG + 255) / 256, NGV = VCH / 8 / 256;
const int NG = NGQK > NGV ? NGQK : NGV;       // groups fetched per invocation and slice
const int LDQ = AT_BQ + 4, LDK = AT_BKV + 4;  // Q / K slice and P row pitches (floats; 16-byte multiples)
const int QK4 = DK * (LDQ + LDK) / 4;
const int UN4 = QK4 > VCH / 4 ? QK4 : VCH / 4; // >= NSN * NSM too

// Union (vec4s): a Q/K slice (Q at [d * LDQ + row], K at DK * LDQ + [d * LDK
// + key]), a V slice ([key][col], VW columns), or the NSN x AT_BQ row reductions.
shared vec4 at_u[UN4];
shared vec4 at_p[AT_BKV * LDQ / 4]; // P as [key][row]
shared float at_alpha[AT_BQ];

uint q0, qb, kb, vb, nq, nkv, D, Dv;
uint qs2, qs3, ks2, ks3, vs2, vs3;

void at_set(uint e, float x) { at_u[e >> 2][e & 3u] = x; }

// 8 elements from element index i of binding b (0 Q, 1 K, 2 V), 16-byte
// loads; i a multiple of 8 (of 4 for f32).
void at_ld8v(int b, uint i, out float r[8]) {
    if (DT == 1) {
        uvec4 u0, u1;
        if (b == 0) u0 = qv4.v[i >> 2], u1 = qv4.v[(i >> 2) + 1u];
        else if (b == 1) u0 = kv4.v[i >> 2], u1 = kv4.v[(i >> 2) + 1u];
        else u0 = vv4.v[i >> 2], u1 = vv4.v[(i >> 2) + 1u];
        [[unroll]] for (int e = 0; e < 4; e++) {
            r[e] = uintBitsToFloat(u0[e]);
            r[e + 4] = uintBitsToFloat(u1[e]);
        }
    } else {
        uvec4 u = b == 0 ? qv4.v[i >> 3] : b == 1 ? kv4.v[i >> 3] : vv4.v[i >> 3];
        [[unroll]] for (int e = 0; e < 8; e++) r[e] = dk_v16_get(u, e);
    }
}

float at_ld1(int b, uint i) { return b == 0 ? Q_ld(i) : b == 1 ? K_ld(i) : V_ld(i); }

// Group: binding b, element index i of its first element, stride st between
// its elements, nv of its 8 elements inside the tensor (0 = the row is out).
void at_group(int b, uint i, uint st, uint nv, out float r[8]) {
    if ((MODE & (DK_VK_AT_MODE_VEC_Q << b)) != 0) { // nv is 0 or 8 there (the dimension is a multiple of 8)
        if (nv > 0u) at_ld8v(b, i, r);
        else [[unroll]] for (int e = 0; e < 8; e++) r[e] = 0.0;
    } else {
        [[unroll]] for (int e = 0; e < 8; e++) r[e] = uint(e) < nv ? at_ld1(b, i + uint(e) * st) : 0.0;
    }
}

// Step st of the key block at kv0: st < nd a Q/K slice (d0 = st * DK), else V
// slice st - nd.  Fetched into r (NG groups of 8).
void at_fetch(uint kv0, uint st, uint nd, out float r[NG][8]) {
    int t = int(gl_LocalInvocationIndex);
    [[unroll]] for (int g = 0; g < NG; g++) {
        int gi = t + 256 * g;
        if (st < nd) {
            if (gi >= NQKG) continue;
            bool isq = gi < AT_BQ * DK / 8;
            int w = isq ? gi : gi - AT_BQ * DK / 8;
            uint row = uint(w / (DK / 8)), d = st * uint(DK) + uint(w % (DK / 8)) * 8u;
            uint nv = d < D ? min(8u, D - d) : 0u;
            if (isq) at_group(0, qb + (q0 + row) * qs2 + d * qs3, qs3, q0 + row < nq ? nv : 0u, r[g]);
            else at_group(1, kb + (kv0 + row) * ks2 + d * ks3, ks3, kv0 + row < nkv ? nv : 0u, r[g]);
        } else {
            if (g >= NGV) continue;
            uint e = uint(gi) * 8u, row = kv0 + (st - nd) * uint(VK) + e / uint(VW), c = e % uint(VW);
            uint nv = c < Dv ? min(8u, Dv - c) : 0u;
            at_group(2, vb + row * vs2 + c * vs3, vs3, row < nkv ? nv : 0u, r[g]);
        }
    }
}

// Fetched registers into the union for step st.
void at_store(uint st, uint nd, float r[NG][8]) {
    int t = int(gl_LocalInvocationIndex);
    [[unroll]] for (int g = 0; g < NG; g++) {
        int gi = t + 256 * g;
        if (st < nd) {
            if (gi >= NQKG) continue;
            bool isq = gi < AT_BQ * DK / 8;
            int w = isq ? gi : gi - AT_BQ * DK / 8;
            int row = w / (DK / 8), d = (w % (DK / 8)) * 8, ld = isq ? LDQ : LDK;
            uint base = uint((isq ? 0 : DK * LDQ) + d * ld + row);
            [[unroll]] for (int e = 0; e < 8; e++) at_set(base + uint(e * ld), r[g][e]);
        } else {
            if (g >= NGV) continue;
            uint e4 = uint(gi) * 2u; // V slice [key][col] is contiguous: 8 elements = 2 vec4s
            at_u[e4] = vec4(r[g][0], r[g][1], r[g][2], r[g][3]);
            at_u[e4 + 1u] = vec4(r[g][4], r[g][5], r[g][6], r[g][7]);
        }
    }
}

void main() {
    int t = int(gl_LocalInvocationIndex);
    uint b = gl_WorkGroupID.z, h = gl_WorkGroupID.y;
    nq = uint(dkp.p.nq), nkv = uint(dkp.p.nkv), D = uint(dkp.p.d), Dv = uint(dkp.p.dv);
    q0 = group_x() * uint(AT_BQ);
    float scale2 = dkp.p.scale * 1.4426950408889634;
    qb = uint(dkp.p.q.offset) + b * uint(dkp.p.q.stride[0]) + h * uint(dkp.p.q.stride[1]);
    kb = uint(dkp.p.k.offset) + b * uint(dkp.p.k.stride[0]) + h * uint(dkp.p.k.stride[1]);
    vb = uint(dkp.p.v.offset) + b * uint(dkp.p.v.stride[0]) + h * uint(dkp.p.v.stride[1]);
    uint ob = uint(dkp.p.o.offset) + b * uint(dkp.p.o.stride[0]) + h * uint(dkp.p.o.stride[1]);
    qs2 = uint(dkp.p.q.stride[2]), qs3 = uint(dkp.p.q.stride[3]);
    ks2 = uint(dkp.p.k.stride[2]), ks3 = uint(dkp.p.k.stride[3]);
    vs2 = uint(dkp.p.v.stride[2]), vs3 = uint(dkp.p.v.stride[3]);
    uint nd = (D + uint(DK) - 1u) / uint(DK);

    // S tile (sm, sn): a subgroup of 32 covers 32 / NSN rows x NSN keys of tiles.
    int sn = t % NSN, sm = t / NSN;
    // O tile (om, on).
    int on = t % NCT, om = t / NCT;

    float m[4], l[4];
    [[unroll]] for (int i = 0; i < 4; i++) m[i] = -1.0 / 0.0, l[i] = 0.0;
    vec4 o[RM][NJ];
    [[unroll]] for (int i = 0; i < RM; i++)
        [[unroll]] for (int j = 0; j < NJ; j++) o[i][j] = vec4(0.0);

    float pf[NG][8];
    if (nkv > 0u) at_fetch(0u, 0u, nd, pf);
    for (uint kv0 = 0u; kv0 < nkv; kv0 += uint(AT_BKV)) {
        uint nkb = min(uint(AT_BKV), nkv - kv0);
        uint nst = nd + (nkb + uint(VK) - 1u) / uint(VK);
        vec4 s[4];
        [[unroll]] for (int i = 0; i < 4; i++) s[i] = vec4(0.0);
        for (uint st = 0u; st < nst; st++) {
            at_store(st, nd, pf);
            barrier();
            if (st + 1u < nst) at_fetch(kv0, st + 1u, nd, pf);
            else if (kv0 + uint(AT_BKV) < nkv) at_fetch(kv0 + uint(AT_BKV), 0u, nd, pf);
            if (st < nd) {
                [[unroll]] for (int kk = 0; kk < DK; kk++) {
                    vec4 a = at_u[kk * (LDQ / 4) + sm];
                    vec4 k4 = at_u[(DK * LDQ + kk * LDK) / 4 + sn];
                    [[unroll]] for (int i = 0; i < 4; i++) s[i] += a[i] * k4;
                }
            } else {
                uint kr0 = (st - nd) * uint(VK);
                [[unroll]] for (int kk = 0; kk < VK; kk++) {
                    vec4 p4[RM / 4];
                    [[unroll]] for (int i = 0; i < RM / 4; i++) p4[i] = at_p[(kr0 + uint(kk)) * uint(LDQ / 4) + uint(om * (RM / 4) + i)];
                    [[unroll]] for (int j = 0; j < NJ; j++) {
                        vec4 v4 = at_u[kk * (VW / 4) + on + j * (CW / 4)];
                        [[unroll]] for (int i = 0; i < RM; i++) o[i][j] += p4[i >> 2][i & 3] * v4;
                    }
                }
            }
            barrier();
            if (st + 1u == nd) {
                // Softmax of this key block: row maxima over the NSN tiles of a row.
                float mx[4];
                [[unroll]] for (int i = 0; i < 4; i++) {
                    s[i] *= scale2;
                    [[unroll]] for (int j = 0; j < 4; j++)
                        if (kv0 + uint(4 * sn + j) >= nkv) s[i][j] = -1.0 / 0.0;
                    mx[i] = max(max(s[i].x, s[i].y), max(s[i].z, s[i].w));
                }
                at_u[sn * NSM + sm] = vec4(mx[0], mx[1], mx[2], mx[3]);
                barrier();
                vec4 mn = vec4(m[0], m[1], m[2], m[3]);
                for (int k = 0; k < NSN; k++) mn = max(mn, at_u[k * NSM + sm]);
                vec4 p[4];
                [[unroll]] for (int i = 0; i < 4; i++) {
                    float alpha = exp2(m[i] - mn[i]); // 0 on the first block (m = -inf)
                    p[i] = exp2(s[i] - mn[i]);
                    l[i] = l[i] * alpha + (p[i].x + p[i].y) + (p[i].z + p[i].w);
                    m[i] = mn[i];
                    if (sn == 0) at_alpha[4 * sm + i] = alpha;
                }
                [[unroll]] for (int j = 0; j < 4; j++)
                    at_p[(4 * sn + j) * (LDQ / 4) + sm] = vec4(p[0][j], p[1][j], p[2][j], p[3][j]);
                barrier();
                [[unroll]] for (int i = 0; i < RM; i++) {
                    float alpha = at_alpha[RM * om + i];
                    [[unroll]] for (int j = 0; j < NJ; j++) o[i][j] *= alpha;
                }
            }
        }
    }

    // Row sums: the NSN partial sums of each row; 1 / sum into at_alpha.
    at_u[sn * NSM + sm] = vec4(l[0], l[1], l[2], l[3]);
    barrier();
    if (t < AT_BQ) {
        float sum = 0.0;
        for (int k = 0; k < NSN; k++) sum += at_u[k * NSM + (t >> 2)][t & 3];
        at_alpha[t] = 1.0 / sum;
    }
    // O staged through shared memory one CW-column band at a time, so that the
    // accumulators are indexed by constants only and the (f16: long) dtype
    // conversion is one plain loop (inlined per accumulator it cost the H100
    // build registers: 3.5x slower at D = 512), with coalesced stores.
    uint os2 = uint(dkp.p.o.stride[2]), os3 = uint(dkp.p.o.stride[3]);
    [[unroll]] for (int j = 0; j < NJ; j++) {
        barrier();
        [[unroll]] for (int i = 0; i < RM; i++) at_p[(RM * om + i) * (CW / 4) + on] = o[i][j];
        barrier();
        for (int e = t; e < AT_BQ * CW; e += 256) {
            int r = e / CW, c = e % CW;
            uint q = q0 + uint(r), d = uint(CW * j + c);
            if (q < nq && d < Dv) O_st(ob + q * os2 + d * os3, at_p[e >> 2][e & 3] * at_alpha[r]);
        }
    }
}
