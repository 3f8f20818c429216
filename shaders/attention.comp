#version 450
#extension GL_GOOGLE_include_directive : require
// Flash-style attention, portable family: a workgroup owns AT_BQ queries of one
// (batch = z, head = y) and streams K/V in blocks of AT_BKV keys with an online
// softmax; scores and the output accumulate in fp32.  Q (pre-scaled) stays in
// shared memory; K is staged 64 dims at a time; each invocation owns output
// columns d = t + 128*j (j < 4, so Dv <= 512) for all AT_BQ queries.
#include "dk_common.glsl"

#define AT_T 128
#define AT_BQ 8
#define AT_BKV 32
#define AT_DCH 64

layout(local_size_x = AT_T) in;

DK_IO(0, Q, DT)
DK_IO(1, K, DT)
DK_IO(2, V, DT)
DK_IO(4, O, DT)

shared float at_q[AT_BQ][512];
shared float at_k[AT_BKV][AT_DCH + 1];
shared float at_s[AT_BQ][AT_BKV];
shared float at_m[AT_BQ], at_l[AT_BQ], at_alpha[AT_BQ];

void main() {
    uint t = gl_LocalInvocationID.x;
    uint b = gl_WorkGroupID.z, h = gl_WorkGroupID.y;
    uint nq = PU(DK_VKP_AT_NQ), nkv = PU(DK_VKP_AT_NKV), D = PU(DK_VKP_AT_D), Dv = PU(DK_VKP_AT_DV);
    uint q0 = group_x() * AT_BQ;
    float scale = PF(DK_VKP_AT_SCALE);
    uint qb = PU(DK_VKP_AT_QS + 4) + b * PU(DK_VKP_AT_QS) + h * PU(DK_VKP_AT_QS + 1);
    uint kb = PU(DK_VKP_AT_KS + 4) + b * PU(DK_VKP_AT_KS) + h * PU(DK_VKP_AT_KS + 1);
    uint vb = PU(DK_VKP_AT_VS + 4) + b * PU(DK_VKP_AT_VS) + h * PU(DK_VKP_AT_VS + 1);
    uint ob = PU(DK_VKP_AT_OS + 4) + b * PU(DK_VKP_AT_OS) + h * PU(DK_VKP_AT_OS + 1);
    uint qs2 = PU(DK_VKP_AT_QS + 2), qs3 = PU(DK_VKP_AT_QS + 3);
    uint ks2 = PU(DK_VKP_AT_KS + 2), ks3 = PU(DK_VKP_AT_KS + 3);
    uint vs2 = PU(DK_VKP_AT_VS + 2), vs3 = PU(DK_VKP_AT_VS + 3);

    for (uint i = t; i < AT_BQ * 512u; i += AT_T) {
        uint q = i / 512u, d = i % 512u;
        at_q[q][d] = (q0 + q < nq && d < D) ? scale * Q_ld(qb + (q0 + q) * qs2 + d * qs3) : 0.0;
    }
    if (t < AT_BQ) { at_m[t] = -1.0 / 0.0; at_l[t] = 0.0; }
    float acc[AT_BQ][4];
    for (int q = 0; q < AT_BQ; q++)
        for (int j = 0; j < 4; j++) acc[q][j] = 0.0;
    barrier();

    // Score pairs of this invocation: p = t and t + 128 of the 8 x 32 block.
    uint pq0 = t / AT_BKV, pk = t % AT_BKV, pq1 = pq0 + AT_T / AT_BKV;
    for (uint kv0 = 0u; kv0 < nkv; kv0 += AT_BKV) {
        float s0 = 0.0, s1 = 0.0;
        for (uint d0 = 0u; d0 < D; d0 += AT_DCH) {
            for (uint i = t; i < AT_BKV * AT_DCH; i += AT_T) {
                uint r = i / AT_DCH, d = i % AT_DCH;
                at_k[r][d] = (kv0 + r < nkv && d0 + d < D) ? K_ld(kb + (kv0 + r) * ks2 + (d0 + d) * ks3) : 0.0;
            }
            barrier();
            for (uint d = 0u; d < AT_DCH; d++) {
                float kk = at_k[pk][d];
                s0 += at_q[pq0][d0 + d] * kk;
                s1 += at_q[pq1][d0 + d] * kk;
            }
            barrier();
        }
        bool valid = kv0 + pk < nkv;
        at_s[pq0][pk] = valid ? s0 : -1.0 / 0.0;
        at_s[pq1][pk] = valid ? s1 : -1.0 / 0.0;
        barrier();
        if (t < AT_BQ) {
            float mx = at_m[t];
            for (uint k = 0u; k < AT_BKV; k++) mx = max(mx, at_s[t][k]);
            float alpha = exp(at_m[t] - mx); // exp(-inf) = 0 on the first block
            float sum = 0.0;
            for (uint k = 0u; k < AT_BKV; k++) {
                float e = exp(at_s[t][k] - mx);
                at_s[t][k] = e;
                sum += e;
            }
            at_l[t] = at_l[t] * alpha + sum;
            at_m[t] = mx;
            at_alpha[t] = alpha;
        }
        barrier();
        uint nk = min(uint(AT_BKV), nkv - kv0);
        for (uint j = 0u; j < 4u; j++) {
            uint d = t + AT_T * j;
            if (d >= Dv) break;
            for (int q = 0; q < AT_BQ; q++) acc[q][j] *= at_alpha[q];
            for (uint k = 0u; k < nk; k++) {
                float vv = V_ld(vb + (kv0 + k) * vs2 + d * vs3);
                for (int q = 0; q < AT_BQ; q++) acc[q][j] += at_s[q][k] * vv;
            }
        }
        barrier();
    }
    for (uint j = 0u; j < 4u; j++) {
        uint d = t + AT_T * j;
        if (d >= Dv) break;
        for (uint q = 0u; q < AT_BQ; q++)
            if (q0 + q < nq) O_st(ob + (q0 + q) * PU(DK_VKP_AT_OS + 2) + d * PU(DK_VKP_AT_OS + 3), acc[q][j] / at_l[q]);
    }
}
