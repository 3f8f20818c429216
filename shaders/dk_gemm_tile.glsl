// Portable tiled GEMM core shared by conv (implicit GEMM) and matmul, for every
// GPU (no subgroup operations: any subgroup size, lavapipe's 8 included).
// C[m][n] = sum_k A[m][k] * B[k][n] for one 128x128 tile of C per workgroup of
// 256 invocations; each invocation accumulates an 8x8 register tile in fp32
// (rows tm*4+i and 64+tm*4+i, columns tn*4+j and 64+tn*4+j), reading its A and B
// fragments from shared memory as vec4s (A is stored transposed, [k][m]).
// K advances in 16-deep slices; the next slice is fetched from memory into
// registers while the current one is multiplied (register double buffering).
//
// Each invocation fetches 8 A elements per slice (one k, rows r + 16*j) and 8
// B elements (one k, columns c + 16*j), so the including shader keeps per-row
// and per-column state and one k cursor per operand, moved by GEMM_BK per
// slice: no per-element division.  It provides:
//   void  gemm_a_row(int j, int m)   row slot j (0..7) is row m (only if m < M)
//   void  gemm_a_kset(int k)         A cursor = k (0 <= k < GEMM_BK)
//   void  gemm_a_knext()             A cursor += GEMM_BK (may pass K: no load then)
//   float gemm_a_load(int j)         A[row j][cursor]    (m < M and k < K)
//   void  gemm_b_col(int j, int n), gemm_b_kset(int k), gemm_b_knext(),
//   float gemm_b_load(int j)         the same for B[cursor][column j]
//   void  gemm_out_row(int m)        per-row epilogue setup (m < M)
//   void  gemm_store(int m, int n, float acc)   (m < M and n < N)
// DK_VK_FLAG_A_KFAST: neighbouring invocations fetch neighbouring k of one
// row (A's k stride is the small one, e.g. channels-last conv input); else
// neighbouring rows.  DK_VK_FLAG_B_KFAST: the same for B.  DK_VK_FLAG_ROWS_FASTEST:
// the epilogue walks rows fastest (see there).
// Vector fetches (MODE, a specialization constant, so that the scalar path's
// per-row registers are not allocated when it is off): DK_VK_GEMM_MODE_VEC_A has each
// invocation fetch 8 consecutive k of one row (row slot 0: row t & 127,
// k 8 * (t >> 7)) through
//   void  gemm_a_load8(out float v[8])   (m < M and k < K; K a multiple of 8)
// DK_VK_GEMM_MODE_VEC_B_N 8 consecutive columns of one k of B (column slot 0: columns
// 8 * (t & 15), k = t >> 4; N a multiple of 8), DK_VK_GEMM_MODE_VEC_B_K instead 8 consecutive k
// of one column of B (column slot 0: column t & 127, k 8 * (t >> 7); K a
// multiple of 8), both through
//   void  gemm_b_load8(out float v[8])   (k < K and n < N)
// so that the loads are 16 bytes wide where the layout allows it.
// Include this file before the callbacks (they may use GEMM_BK).
#define GEMM_BM 128
#define GEMM_BN 128
#define GEMM_BK 16

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

void gemm_a_row(int j, int m);
void gemm_a_kset(int k);
void gemm_a_knext();
float gemm_a_load(int j);
void gemm_b_col(int j, int n);
void gemm_b_kset(int k);
void gemm_b_knext();
float gemm_b_load(int j);
void gemm_a_load8(out float v[8]);
void gemm_b_load8(out float v[8]);
void gemm_out_row(int m);
void gemm_store(int m, int n, float acc);

// A slice at [k * GEMM_LD + m / 4], B at GEMM_BOFF + [k * GEMM_LD + n / 4]; one
// vec4 of padding per k row spreads the K-fast stores (16 k rows, 2 rows of m
// per 32 invocations) over the banks.  The epilogue reuses the whole array as
// a 64x65 float staging tile.
#define GEMM_LD (GEMM_BM / 4 + 1)
#define GEMM_BOFF (GEMM_BK * GEMM_LD)
shared vec4 gemm_sm[2 * GEMM_BOFF];

// For gemm_a_load8 / gemm_b_load8: 8 consecutive elements of a uvec4 view from
// element index i (a multiple of 8 for 16-bit types, of 4 for f32, so the
// uvec4s are whole).
#define GEMM_LOAD8(view, i, v)                                                          \
    {                                                                                 \
        if (DT == 1) {                                                                \
            uvec4 u0 = view.v[(i) >> 2], u1 = view.v[((i) >> 2) + 1u];                \
            [[unroll]] for (int e = 0; e < 4; e++) {                                  \
                v[e] = uintBitsToFloat(u0[e]);                                        \
                v[e + 4] = uintBitsToFloat(u1[e]);                                    \
            }                                                                         \
        } else {                                                                      \
            uvec4 u = view.v[(i) >> 3];                                               \
            [[unroll]] for (int e = 0; e < 8; e++) v[e] = dk_v16_get(u, e);           \
        }                                                                             \
    }

// This invocation's next slice into ra / rb (zeros outside the matrices).
#define GEMM_FETCH()                                                                      \
    {                                                                                     \
        if (avec) {                                                                       \
            if (ka < K && (a_ok & 1u) != 0u) gemm_a_load8(ra);                            \
            else [[unroll]] for (int j = 0; j < 8; j++) ra[j] = 0.0;                      \
        } else {                                                                          \
            [[unroll]] for (int j = 0; j < 8; j++)                                        \
                ra[j] = (ka < K && (a_ok & (1u << j)) != 0u) ? gemm_a_load(j) : 0.0;      \
        }                                                                                 \
        if (bvec) {                                                                       \
            if (kb < K && (b_ok & 1u) != 0u) gemm_b_load8(rb);                            \
            else [[unroll]] for (int j = 0; j < 8; j++) rb[j] = 0.0;                      \
        } else {                                                                          \
            [[unroll]] for (int j = 0; j < 8; j++)                                        \
                rb[j] = (kb < K && (b_ok & (1u << j)) != 0u) ? gemm_b_load(j) : 0.0;      \
        }                                                                                 \
    }

void gemm_run(int M, int N, int K, int m0, int n0) {
    int t = int(gl_LocalInvocationIndex);
    bool akf = (FLAGS & DK_VK_FLAG_A_KFAST) != 0, bkf = (FLAGS & DK_VK_FLAG_B_KFAST) != 0;
    int a_k = akf ? (t & 15) : (t >> 4), a_r = akf ? (t >> 4) : (t & 15);
    int b_k = bkf ? (t & 15) : (t >> 4), b_c = bkf ? (t >> 4) : (t & 15);
    const bool avec = (MODE & DK_VK_GEMM_MODE_VEC_A) != 0, bvn = (MODE & DK_VK_GEMM_MODE_VEC_B_N) != 0,
               bvk = (MODE & DK_VK_GEMM_MODE_VEC_B_K) != 0, bvec = bvn || bvk;
    if (avec) {
        a_k = (t >> 7) * 8;
        a_r = t & 127;
    }
    if (bvn) {
        b_k = t >> 4;
        b_c = (t & 15) * 8;
    }
    if (bvk) {
        b_k = (t >> 7) * 8;
        b_c = t & 127;
    }
    uint a_ok = 0u, b_ok = 0u;
    [[unroll]] for (int j = 0; j < 8; j++) {
        int m = m0 + a_r + 16 * j, n = n0 + b_c + 16 * j;
        if (j > 0 && avec) m = M; // vector fetches use slot 0 only
        if (j > 0 && bvec) n = N;
        if (m < M) {
            a_ok |= 1u << j;
            gemm_a_row(j, m);
        }
        if (n < N) {
            b_ok |= 1u << j;
            gemm_b_col(j, n);
        }
    }
    gemm_a_kset(a_k);
    gemm_b_kset(b_k);
    int ka = a_k, kb = b_k; // the k each fetch reads
    float ra[8], rb[8];
    GEMM_FETCH();

    // Compute mapping: a subgroup of 32 covers 8 (m) x 4 (n) invocations, so
    // its fragment reads touch 8 + 4 distinct vec4s (broadcast for the rest).
    int l = t & 31, w = t >> 5;
    int tm = (l & 7) | ((w & 1) << 3), tn = (l >> 3) | ((w >> 1) << 2);
    vec4 acc[16];
    [[unroll]] for (int i = 0; i < 16; i++) acc[i] = vec4(0.0);
    int ar4 = a_r >> 2, ac = a_r & 3, bc4 = b_c >> 2, bcc = b_c & 3;
    int nslices = (K + GEMM_BK - 1) / GEMM_BK;
    for (int s = 0; s < nslices; s++) {
        if (avec) {
            [[unroll]] for (int j = 0; j < 8; j++) gemm_sm[(a_k + j) * GEMM_LD + ar4][ac] = ra[j];
        } else {
            [[unroll]] for (int j = 0; j < 8; j++) gemm_sm[a_k * GEMM_LD + ar4 + 4 * j][ac] = ra[j];
        }
        if (bvn) {
            gemm_sm[GEMM_BOFF + b_k * GEMM_LD + bc4] = vec4(rb[0], rb[1], rb[2], rb[3]);
            gemm_sm[GEMM_BOFF + b_k * GEMM_LD + bc4 + 1] = vec4(rb[4], rb[5], rb[6], rb[7]);
        } else if (bvk) {
            [[unroll]] for (int j = 0; j < 8; j++) gemm_sm[GEMM_BOFF + (b_k + j) * GEMM_LD + bc4][bcc] = rb[j];
        } else {
            [[unroll]] for (int j = 0; j < 8; j++) gemm_sm[GEMM_BOFF + b_k * GEMM_LD + bc4 + 4 * j][bcc] = rb[j];
        }
        barrier();
        if (s + 1 < nslices) { // fetch the next slice; used after the FMAs below
            gemm_a_knext();
            gemm_b_knext();
            ka += GEMM_BK;
            kb += GEMM_BK;
            GEMM_FETCH();
        }
        [[unroll]] for (int kk = 0; kk < GEMM_BK; kk++) {
            vec4 a0 = gemm_sm[kk * GEMM_LD + tm], a1 = gemm_sm[kk * GEMM_LD + tm + 16];
            vec4 b0 = gemm_sm[GEMM_BOFF + kk * GEMM_LD + tn], b1 = gemm_sm[GEMM_BOFF + kk * GEMM_LD + tn + 16];
            [[unroll]] for (int i = 0; i < 4; i++) {
                acc[2 * i] += a0[i] * b0;
                acc[2 * i + 1] += a0[i] * b1;
                acc[8 + 2 * i] += a1[i] * b0;
                acc[9 + 2 * i] += a1[i] * b1;
            }
        }
        barrier();
    }

    // Epilogue in four 64x64 quarters staged through shared memory: the
    // accumulators are indexed by constants only (a dynamic index would put
    // them in local memory) and gemm_store is called from one plain loop.
    // DK_VK_FLAG_ROWS_FASTEST: neighbouring invocations take neighbouring rows (the output's
    // m stride is the small one, e.g. NCHW); else neighbouring columns.
    bool mfo = (FLAGS & DK_VK_FLAG_ROWS_FASTEST) != 0;
    [[unroll]] for (int q = 0; q < 4; q++) {
        int mh = q >> 1, h = q & 1;
        [[unroll]] for (int r = 0; r < 4; r++)
            [[unroll]] for (int c = 0; c < 4; c++) {
                int e = (tm * 4 + r) * 65 + tn * 4 + c;
                gemm_sm[e >> 2][e & 3] = acc[2 * (mh * 4 + r) + h][c];
            }
        barrier();
        int mrow = -1;
        for (int e = t; e < 64 * 64; e += 256) {
            int r = mfo ? (e & 63) : (e >> 6), c = mfo ? (e >> 6) : (e & 63);
            int m = m0 + mh * 64 + r, n = n0 + h * 64 + c;
            if (m < M && n < N) {
                int f = r * 65 + c;
                if (m != mrow) gemm_out_row(m);
                mrow = m;
                gemm_store(m, n, gemm_sm[f >> 2][f & 3]);
            }
        }
        barrier();
    }
}
