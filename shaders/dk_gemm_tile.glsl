// Portable tiled GEMM core shared by conv (implicit GEMM) and matmul.
// C[m][n] = sum_k A[m][k] * B[k][n] for one 64x64 tile of C per workgroup of 256
// invocations, 16-deep K slices staged in shared memory, a 4x4 register tile per
// invocation, fp32 accumulation.  The including shader provides:
//   void  gemm_row_setup(int slot, int m)   per-row precomputation (4 slots)
//   float gemm_load_a(int slot, int m, int k)   (m < M and k < K guaranteed)
//   float gemm_load_b(int k, int n)            (k < K and n < N guaranteed)
//   void  gemm_store(int m, int n, float acc)  (m < M and n < N guaranteed)
// FLAGS bit 2 (K-fast A loads): neighbouring invocations load neighbouring k
// (channels-last input) instead of neighbouring m.  A cooperative-matrix variant
// replaces only this file.
#define GEMM_BM 64
#define GEMM_BN 64
#define GEMM_BK 16

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

shared float gemm_as[GEMM_BK][GEMM_BM + 1];
shared float gemm_bs[GEMM_BK][GEMM_BN + 1];

void gemm_run(int M, int N, int K, int m0, int n0) {
    int t = int(gl_LocalInvocationIndex);
    bool kfast = (FLAGS & 4) != 0;
    int a_m[4], a_k[4];
    for (int j = 0; j < 4; j++) {
        a_m[j] = kfast ? (t >> 4) + 16 * j : (t & 63);
        a_k[j] = kfast ? (t & 15) : (t >> 6) + 4 * j;
        if (m0 + a_m[j] < M) gemm_row_setup(j, m0 + a_m[j]);
    }
    int b_n = t & 63;
    float acc[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = 0.0;
    int tx = t & 15, ty = t >> 4;
    for (int k0 = 0; k0 < K; k0 += GEMM_BK) {
        for (int j = 0; j < 4; j++) {
            int m = m0 + a_m[j], k = k0 + a_k[j];
            gemm_as[a_k[j]][a_m[j]] = (m < M && k < K) ? gemm_load_a(j, m, k) : 0.0;
            int kb = (t >> 6) + 4 * j, n = n0 + b_n;
            gemm_bs[kb][b_n] = (n < N && k0 + kb < K) ? gemm_load_b(k0 + kb, n) : 0.0;
        }
        barrier();
        for (int kk = 0; kk < GEMM_BK; kk++) {
            float a[4], b[4];
            for (int i = 0; i < 4; i++) a[i] = gemm_as[kk][tx + 16 * i];
            for (int j = 0; j < 4; j++) b[j] = gemm_bs[kk][ty + 16 * j];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) acc[i][j] += a[i] * b[j];
        }
        barrier();
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            int m = m0 + tx + 16 * i, n = n0 + ty + 16 * j;
            if (m < M && n < N) gemm_store(m, n, acc[i][j]);
        }
}
