// Tensor-core GEMM core: the cooperative-matrix replacement of dk_gemm_tile.glsl,
// with the same callbacks (gemm_row_setup, gemm_load_a, gemm_load_b, gemm_store).
// C[m][n] = sum_k A[m][k] B[k][n]: one 128x128 tile of C per workgroup of 256
// invocations (8 subgroups of 32, each owning a 32x64 sub-tile = 2x4 fragments of
// 16x16), 32-deep K slices staged in shared memory as fp16, fp32 accumulators.
// The next slice's global loads are issued before the current slice's matrix
// products, so memory latency overlaps the tensor-core work.
//
// Written once for both spellings of the extension: GL_NV_cooperative_matrix
// (Debian's glslang 12; NVIDIA drivers) and, with DK_COOPMAT_KHR defined,
// GL_KHR_cooperative_matrix (RADV on RDNA3, newer glslang).
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#ifdef DK_COOPMAT_KHR
#extension GL_KHR_cooperative_matrix : require
#define CM_A coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA>
#define CM_B coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB>
#define CM_C coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
#define CM_LOAD(m, buf, off, ld) coopMatLoad(m, buf, off, ld, gl_CooperativeMatrixLayoutRowMajor)
#define CM_STORE(m, buf, off, ld) coopMatStore(m, buf, off, ld, gl_CooperativeMatrixLayoutRowMajor)
#define CM_MAD(a, b, c) coopMatMulAdd(a, b, c)
#else
#extension GL_NV_cooperative_matrix : require
#define CM_A fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define CM_B fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define CM_C fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define CM_LOAD(m, buf, off, ld) coopMatLoadNV(m, buf, off, ld, false)
#define CM_STORE(m, buf, off, ld) coopMatStoreNV(m, buf, off, ld, false)
#define CM_MAD(a, b, c) coopMatMulAddNV(a, b, c)
#endif

#define GEMM_BM 128
#define GEMM_BN 128
#define GEMM_BK 32
#define GEMM_LDA (GEMM_BK + 8)   // padded rows: fewer shared-memory bank conflicts
#define GEMM_LDB (GEMM_BN + 8)
#define GEMM_PER 16              // elements of A (and of B) each invocation stages per slice

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

shared float16_t gemm_sa[GEMM_BM * GEMM_LDA];
shared float16_t gemm_sb[GEMM_BK * GEMM_LDB];
shared float gemm_sc[8 * 256];   // one 16x16 fp32 fragment per subgroup (epilogue)

// Staging position of the j-th element an invocation loads.  A: row-fast
// (neighbouring invocations take neighbouring m: NCHW input) or, with FLAGS bit 2,
// k-fast (neighbouring k: channels-last input).  B: column-fast.
int gemm_a_m(int t, int j, bool kfast) { return kfast ? (t >> 5) + 8 * j : (t & 127); }
int gemm_a_k(int t, int j, bool kfast) { return kfast ? (t & 31) : (t >> 7) + 2 * j; }

void gemm_fetch(int M, int N, int K, int m0, int n0, int k0, int t, bool kfast,
                inout float16_t ra[GEMM_PER], inout float16_t rb[GEMM_PER]) {
    for (int j = 0; j < GEMM_PER; j++) {
        int m = m0 + gemm_a_m(t, j, kfast), k = k0 + gemm_a_k(t, j, kfast);
        ra[j] = float16_t((m < M && k < K) ? gemm_load_a(kfast ? j : 0, m, k) : 0.0);
        int kb = k0 + (t >> 7) + 2 * j, n = n0 + (t & 127);
        rb[j] = float16_t((n < N && kb < K) ? gemm_load_b(kb, n) : 0.0);
    }
}

void gemm_run(int M, int N, int K, int m0, int n0) {
    int t = int(gl_LocalInvocationIndex);
    bool kfast = (FLAGS & 4) != 0;
    int warp = t >> 5, lane = t & 31;
    int wm = (warp & 3) * 32, wn = (warp >> 2) * 64;
    // Row set-up once per tile: k-fast needs all 16 of its rows, row-fast one.
    for (int j = 0; j < (kfast ? GEMM_PER : 1); j++) {
        int m = m0 + gemm_a_m(t, j, kfast);
        if (m < M) gemm_row_setup(j, m);
    }
    CM_C acc[2][4];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = CM_C(0.0);

    float16_t ra[GEMM_PER], rb[GEMM_PER];
    gemm_fetch(M, N, K, m0, n0, 0, t, kfast, ra, rb);
    for (int k0 = 0; k0 < K; k0 += GEMM_BK) {
        barrier();
        for (int j = 0; j < GEMM_PER; j++) {
            gemm_sa[gemm_a_m(t, j, kfast) * GEMM_LDA + gemm_a_k(t, j, kfast)] = ra[j];
            gemm_sb[((t >> 7) + 2 * j) * GEMM_LDB + (t & 127)] = rb[j];
        }
        barrier();
        if (k0 + GEMM_BK < K) gemm_fetch(M, N, K, m0, n0, k0 + GEMM_BK, t, kfast, ra, rb);
        for (int kk = 0; kk < GEMM_BK; kk += 16) {
            CM_A a[2];
            CM_B b[4];
            for (int i = 0; i < 2; i++) CM_LOAD(a[i], gemm_sa, uint((wm + 16 * i) * GEMM_LDA + kk), uint(GEMM_LDA));
            for (int j = 0; j < 4; j++) CM_LOAD(b[j], gemm_sb, uint(kk * GEMM_LDB + wn + 16 * j), uint(GEMM_LDB));
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 4; j++) acc[i][j] = CM_MAD(a[i], b[j], acc[i][j]);
        }
    }
    // Epilogue: each subgroup spills one fragment at a time to its own shared
    // slot and its lanes apply gemm_store (bias, activation, residual) per element.
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) {
            CM_STORE(acc[i][j], gemm_sc, uint(warp * 256), 16u);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            for (int r = 0; r < 8; r++) {
                int e = lane + 32 * r;
                int m = m0 + wm + 16 * i + (e >> 4), n = n0 + wn + 16 * j + (e & 15);
                if (m < M && n < N) gemm_store(m, n, gemm_sc[warp * 256 + e]);
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();
        }
}
