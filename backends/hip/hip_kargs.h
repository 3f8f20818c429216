/* Kernel argument blocks of the HIP backend, shared by the host code (C11) and
 * the kernels (HIP / CUDA C++).  Each kernel takes one of these by value; only
 * 64-bit integers, 32-bit ints and floats, so both sides lay them out alike.
 * Device addresses are byte addresses of element 0 (view offset included). */
#ifndef DK_HIP_KARGS_H
#define DK_HIP_KARGS_H

#if defined(__CUDACC__) || defined(__HIP__)
typedef long long dkh_i64;
typedef unsigned long long dkh_u64;
#else
#include <stdint.h>
typedef int64_t dkh_i64;
typedef uint64_t dkh_u64;
#endif

/* Block tile of the GEMM kernel (rows x cols x reduction step) and its threads. */
#define DKH_GEMM_BM 64
#define DKH_GEMM_BN 64
#define DKH_GEMM_BK 16
#define DKH_THREADS 256
/* The RMS norm's staged column tile (dkk_rms_norm_columns_tile): its bytes of
 * shared memory, four blocks per AMD CU's 64 KiB. */
#define DKH_RMS_TILE_BYTES 16384
/* The RMS norm's units kept in registers per lane (dk_rms_norm.hip; the host's
 * dk_rms_kernel_limits): 16-byte vectors in the rows vector kernel (3: no spill
 * at its 48-register cap), scalars in the scalar kernels, channel vectors in the
 * column vector kernel (12 spilled to scratch on gfx9/gfx11). */
#define DKH_RMS_KEEP_VECTORS 3
#define DKH_RMS_KEEP_SCALARS 24
#define DKH_RMS_KEEP_COLUMN_VECTORS 8
/* Fast GEMM (dk_gemm_fast.hip): 128 output pixels x 128 output channels per
 * block, reduction slices of 32 channels of one tap; channels-last input and
 * K-contiguous weights. */
#define DKH_GEMM_MMA_BM 128
#define DKH_GEMM_MMA_BN 128
#define DKH_GEMM_MMA_BK 32
#define DKH_GEMM_MMA_4WARP_THREADS 128 /* the NVIDIA 4-warp variant of the fast GEMM */
/* Its Hopper variant (dk_gemm_wgmma.hip, sm_90a code objects only): the same
 * block tile and threads, reduction slices of 64 channels, a ring of ST stages
 * in dynamic shared memory (+1 KB: the ring starts at a 1024-byte boundary). */
#define DKH_GEMM_WGMMA_BK 64
#define DKH_GEMM_WGMMA_ST 3
#define DKH_GEMM_WGMMA_SMEM (DKH_GEMM_WGMMA_ST * (DKH_GEMM_MMA_BM + DKH_GEMM_MMA_BN) * DKH_GEMM_WGMMA_BK * 2 + 1024)
/* four warpgroups: 256 pixels x 128 channels, 4 stages */
#define DKH_GEMM_WGMMA_4WG_BM 256
#define DKH_GEMM_WGMMA_4WG_THREADS 512
#define DKH_GEMM_WGMMA_4WG_ST 4
#define DKH_GEMM_WGMMA_4WG_SMEM (DKH_GEMM_WGMMA_4WG_ST * (DKH_GEMM_WGMMA_4WG_BM + DKH_GEMM_MMA_BN) * DKH_GEMM_WGMMA_BK * 2 + 1024)
/* warp-specialized TMA variants: the same tiles, rings and shared memory, plus
 * a producer warp; the tensor maps of x and the weight (CUtensorMap, 128 bytes
 * each, built by the driver) travel as a second kernel parameter */
#define DKH_GEMM_WGMMA_TMA_THREADS (DKH_THREADS + 32)
#define DKH_GEMM_WGMMA_TMA_4WG_THREADS (DKH_GEMM_WGMMA_4WG_THREADS + 32)
#if defined(__cplusplus)
#define DKH_ALIGN64 alignas(64)
#else
#define DKH_ALIGN64 _Alignas(64)
#endif
typedef struct dkh_tmaps {
    DKH_ALIGN64 unsigned char x[128];
    DKH_ALIGN64 unsigned char w[128];
    DKH_ALIGN64 unsigned char c[128]; /* conv3d in place: the cache's frames (x's where none) */
} dkh_tmaps;
/* dkk_attention_wgmma_small_*: tensor maps of Q and K ([b, h, n, D] as (D, n, h, b)) and of V^T
 * in scratch ((keys, b*h*Dv)) */
typedef struct dkh_attn_tmaps {
    DKH_ALIGN64 unsigned char q[128];
    DKH_ALIGN64 unsigned char k[128];
    DKH_ALIGN64 unsigned char vt[128];
} dkh_attn_tmaps;
/* Attention: query rows and keys per block step; D chunk staged at a time. */
#define DKH_ATTN_BQ 16
#define DKH_ATTN_BKV 16
#define DKH_ATTN_DC 64
/* Fast attention (dk_attention_fast.hip): BQ query rows per block, BKV keys per
 * step, K/V streamed in slices of SLICE elements through an ST-stage ring
 * (NVIDIA and the simulators; AMD: BQ_AMD rows, sizes fixed in the kernel). */
#define DKH_ATTENTION_MMA_BQ 64
#define DKH_ATTENTION_MMA_BKV 64
#define DKH_ATTENTION_MMA_ST 4
#define DKH_ATTENTION_MMA_SLICE 8192
#define DKH_ATTENTION_MMA_BQ_AMD 16
/* Small-head attention (dk_attention_rows.hip): BQ query rows per block; BKV
 * keys per stage, ST stages (NVIDIA and the simulators; AMD: fixed in the kernel). */
#define DKH_ATTENTION_MMA_ROWS_BQ 128
#define DKH_ATTENTION_MMA_ROWS_BKV(d) ((d) <= 64 ? 128 : 64)
#define DKH_ATTENTION_MMA_ROWS_ST 3
/* Hopper attention (dk_attention_wgmma.hip): 64 query rows, 64 keys per tile,
 * 256 threads; Q, K, V^T tiles (64 KB each), P (8 KB), the fp32 S tile (pitch
 * 72), two floats per row, +1 KB for the 1024-byte alignment */
#define DKH_ATTENTION_WGMMA_THREADS 256
#define DKH_ATTENTION_WGMMA_SMEM (200 * 1024 + 64 * 72 * 4 + 2 * 64 * 4 + 1024)
/* dkk_attention_wgmma_small_* (sm_90a, D == Dv in {64, 128}): 128 query rows, two consumer
 * warpgroups and a producer warp, keys in tiles of BKV through an ST-stage
 * ring; shared memory: Q, then ST pairs of K and V^T tiles, 1 KB alignment */
#define DKH_ATTENTION_WGMMA_SMALL_THREADS 288
#define DKH_ATTENTION_WGMMA_SMALL_BQ 128
#define DKH_ATTENTION_WGMMA_SMALL_BKV(d) ((d) == 64 ? 128 : 64)
#define DKH_ATTENTION_WGMMA_SMALL_ST 3
#define DKH_ATTENTION_WGMMA_SMALL_SMEM(d) (2 * (d) * (DKH_ATTENTION_WGMMA_SMALL_BQ + 2 * DKH_ATTENTION_WGMMA_SMALL_ST * DKH_ATTENTION_WGMMA_SMALL_BKV(d)) + 1024)

enum { DKH_GEMM_MATMUL = 0, DKH_GEMM_CONV = 1 };
#define DKH_PHASES 4 /* conv_transpose2d phases per launch of the fast kernels */

/* One axis of a conv phase (see backends/cpu/cpu_conv.c): output o = out_start +
 * i*out_step reads input p = i*in_step + off0 + t*off_step (upsampled coordinates)
 * for taps k = k0 + t*k_step, t < taps. */
typedef struct dkh_axis {
    dkh_i64 out_count, out_start, out_step, in_step, off0, off_step, taps, k0, k_step, in_size;
} dkh_axis;

/* C[M x N] = A[M x K] * B[K x N] per batch z, with the fused epilogue
 * out = post_act(out_scale * act(acc + bias) + res_scale * residual).
 * MATMUL: A(m,k) = a[z*a_s0 + m*a_s1 + k*a_s2] (likewise b, y, res); bias per column.
 * CONV:   z = image * groups + group; rows = output channels of the group,
 *         columns = the phase's output pixels, reduction = (channel, tap_h, tap_w);
 *         bias per output channel.
 * The fast kernel (CONV only; matmul comes as a 1 x M image) takes rows = pixels,
 * columns = output channels, reduction = (tap_h, tap_w, channel). */
typedef struct dkh_gemm_args {
    dkh_u64 a, b, bias, res, y;
    dkh_i64 M, N, K;
    dkh_i64 a_s[4], b_s[4], y_s[4], r_s[4];
    dkh_i64 bias_s;
    dkh_i64 groups, cin_g, ups;
    dkh_axis h, w;
    /* fast kernel only: the weight's offsets of one image (batched matmul) and
     * of one group; a_s are then the strides of (cout, cin, kh, kw), a_s[1] == 1 */
    dkh_i64 a_zs, a_gs;
    /* fast kernels, conv_transpose2d: nph > 1 stride phases in one launch, block
     * z = (image * groups + group) * nph + phase; phase i is ph_h[i], ph_w[i],
     * ph_n[i], ph_k[i] (h, w, N, K above: the grid's extent and kernel choice) */
    dkh_axis ph_h[DKH_PHASES], ph_w[DKH_PHASES];
    dkh_i64 ph_n[DKH_PHASES], ph_k[DKH_PHASES];
    /* fast kernels, conv3d read in place (t_taps > 0; one image per launch, z =
     * output frame, b_s[0] = 0): the taps are (time tap, tap_h, tap_w), the
     * tap index th of the tap_h loop running over t_taps * h.taps (time tap th
     * / h.taps; h.k0 = 0, h.k_step = 1, so the packed weight's rows are
     * [KT*KH][KW][Cin]).  Output frame z reads at time tap k frame f = z *
     * t_step + k * t_dil of the concatenation [zeros, cache, x, zeros]: where f
     * >= t_front or there is no cache (t_cache 0), x's frame f - t_front (b +
     * that * t_xs), else the cache's frame f - t_zero (t_cache + that * t_cs);
     * frames outside [0, t_x) and [0, t_c) read as zeros.  x and the cache share
     * b_s[2], b_s[3]. */
    dkh_u64 t_cache;
    dkh_i64 t_xs, t_cs;
    int t_taps, t_step, t_dil, t_front, t_zero, t_x, t_c, t_pad;
    /* fast kernel: tiles_xy 1 = grid x walks the channel tiles, y the pixel tiles */
    int nph, mode, transposed, act, has_bias, has_res, tiles_xy;
    int tma_box; /* TMA kernels: pixels per box of x (64, 32 or 16; divides every output row) */
    int post_act; /* the activation after the residual (dk_activation numbering) */
    int bias_dt;  /* the bias's dtype: the activations', or f32 (1) */
    float out_scale, res_scale;
} dkh_gemm_args;

/* Narrow-output direct conv (dk_conv_narrow.hip): conv2d or one conv_transpose2d
 * phase with Cout/groups <= 8, described as for the GEMM kernels (c.a: the weight
 * in its own layout, c.a_s its strides; c.M = Cout/groups, c.N = the phase's
 * pixels per image; grid z = image * groups + group).  Pixels go in tiles of
 * 64 (vector kernels) or 256 (scalar kernels); block x takes tiles
 * [x*tpb, min((x+1)*tpb, tiles)); with one chunk of CC channels and one batch
 * of TB taps its weights are staged once, else once per tile. */
#define DKH_NARROW_CC 128 /* input channels per weight chunk */
#define DKH_NARROW_TB 9   /* taps per weight batch */
typedef struct dkh_narrow_args {
    dkh_gemm_args c;
    dkh_i64 tiles, tpb;
} dkh_narrow_args;

/* Shallow-reduction direct conv (dk_conv_shallow.hip): conv2d with Cin/groups
 * x taps <= K and Cout/groups > 8, described as for the GEMM kernels (c.a: the
 * weight in its own layout; c.M = Cout/groups).  Block: rg groups of TH output
 * rows x TW columns (TW = threads / 4: a thread per column, four lanes of
 * channels) and CB output channels; grid x = tiles (tiles_w per tile row of
 * rg x TH rows), y = channel blocks, z = image * groups + group.  Its input
 * patch, patch_h x patch_w x Cin/groups fp32, fits PATCH floats (with the
 * weights, bias and the epilogue's slots 32 KB of shared memory: two blocks per
 * AMD compute unit); vec_out: y channels-last with 16-byte aligned pixels and
 * Cout/groups a multiple of 8. */
#define DKH_SHALLOW_TH 4
#define DKH_SHALLOW_TW (DKH_THREADS / 4)
#define DKH_SHALLOW_CB 64
#define DKH_SHALLOW_K 32
#define DKH_SHALLOW_RG 4 /* most row groups per block */
#define DKH_SHALLOW_PATCH 3776
typedef struct dkh_shallow_args {
    dkh_gemm_args c;
    dkh_i64 tiles_w;
    int patch_h, patch_w, vec_out, rg;
    int k3; /* 3x3 taps, stride and dilation 1, patch DKH_SHALLOW_TW + 2 wide: the unrolled products */
    int pad0;
} dkh_shallow_args;

/* out[b,h,i,:] = softmax(scale * q[b,h,i,:] k[b,h,:,:]^T) v[b,h,:,:] */
typedef struct dkh_attn_args {
    dkh_u64 q, k, v, o;
    dkh_i64 q_s[4], k_s[4], v_s[4], o_s[4];
    dkh_i64 nq, nkv, d, dv;
    float scale;
    /* dkk_attention_mma_*: splits > 1 splits the keys into ranges of kv_chunk (a multiple
     * of the kernel's BKV), block x = split * nqb + query block; each writes its
     * unnormalized O rows and their (max, sum) as floats to part, laid out
     * [split][b][h][nq][Dv + 2], and dkk_attention_combine_* merges them into o. */
    int splits;
    dkh_i64 kv_chunk, nqb, nb, nh;
    dkh_u64 part;
    /* dkk_attention_wgmma_* (sm_90a, D == Dv == 512): V transposed by dkk_attention_v_transpose into
     * [b*h][512][vt_ld] (vt_ld: keys rounded up to 64, the rest zero) */
    dkh_u64 vt;
    dkh_i64 vt_ld;
} dkh_attn_args;

enum { DKH_ELT_ACT = 0, DKH_ELT_ADD = 1, DKH_ELT_UPSAMPLE = 2, DKH_ELT_CONVERT = 3 };

/* Elementwise over y's 4-D shape (leading dims padded with 1), shape and strides
 * permuted into the walk order of dk__elt_order (the last dim fastest). */
typedef struct dkh_elt_args {
    dkh_u64 a, b, y;
    dkh_i64 shape[4], a_s[4], b_s[4], y_s[4];
    dkh_i64 a_h, a_w;     /* UPSAMPLE: the input's H, W */
    dkh_i64 total, nblocks;
    int op, act, dt_a, dt_b, dt_y;
    int hw_pos;           /* the walk order (dk__elt_order) permutes every dim: H at bits 0-1, W at 2-3 */
    int flat;             /* every operand dense in the walk order, 16-byte aligned (not UPSAMPLE) */
    int up32;             /* UPSAMPLE: h * a_h and w * a_w fit 32 bits (32-bit division is several times faster) */
    int tpos;             /* ACT / CONVERT: 1 + the walk position of a's unit-stride dim when it is not the last (tiled transpose) */
    int t16;              /* with tpos: CONVERT in 16-byte vectors: 1 raw 16-bit bits (dkk_transpose16), 2 converting (dkk_transpose_cvt) */
    int upv;              /* UPSAMPLE by the integer factors fac[] (y's size over a's per walk dim) in 16-byte vectors: dkk_upsample_vec */
    int fac[4];
    float alpha, beta;
    float oscale;         /* ACT, ADD: y = oscale * act(alpha * a [+ beta * b]) */
    int pad0;
} dkh_elt_args;

/* Group norm in three kernels (dk_group_norm.hip): partial statistics per chunk
 * (split GroupNorm: stats_mode 1 runs the first two, 2 the last two)
 * (grid: chunks x (mode 2 ? N : N*groups)) at scratch[(ng*chunks + chunk)*3];
 * per-group merge (grid: N*groups) writing per-(n, c) float4 (mean, rstd*gamma,
 * beta, 0) at scratch[coef + (n*C + c)*4]; apply (grid: nblocks; mode 2: the partial grid).  mode 0: any
 * strides; 1: x and y dense NCHW with H*W a multiple of the 16-byte vector;
 * 2: dense NHWC with C a multiple of it (and C/vector <= 256). */
typedef struct dkh_gn_args {
    dkh_u64 x, y, gamma, beta, scratch;
    dkh_u64 stats; /* split GroupNorm: [N*groups][2] (mean, variance) */
    dkh_i64 shape[4], x_s[4], y_s[4];
    dkh_i64 gamma_s, beta_s, groups, chunks, chunk, coef, total, nblocks;
    float eps;
    int mode, act, dt, has_gamma, has_beta;
    int stats_mode; /* 0: whole GroupNorm; 1: the merge writes stats (no coefficients); 2: it reads them */
    int affine_dt; /* gamma's and beta's dtype: dt, or f32 (1) */
    dkh_i64 plane_vecs; /* mode 1 apply: vectors per block of one (n, c) plane (grid: blocks per plane x N*C) */
    dkh_i64 a_chunks, a_chunk; /* mode 2 apply: pixel chunks per image, pixels per chunk (grid: a_chunks x N) */
} dkh_gn_args;

/* Layer norm: one block per row of the last dimension (rows indexed over shape[0..2]). */
typedef struct dkh_norm_args {
    dkh_u64 x, y, gamma, beta, stats;
    dkh_i64 shape[4], x_s[4], y_s[4];
    dkh_i64 gamma_s, beta_s, groups;
    float eps;
    int act, dt, has_gamma, has_beta, pad0;
} dkh_norm_args;

/* RMS norm (dkk_rms_norm_*): the plan of src/norm_plan.c (dk__rms_plan):
 * `positions` positions in pdims position slots (pshape, slot 3 fastest,
 * right-aligned), C channels, `lanes` threads per position. */
typedef struct dkh_rms_args {
    dkh_u64 x, y, gamma, beta;
    dkh_i64 pshape[4], x_ps[4], y_ps[4];
    dkh_i64 x_cs, y_cs, gamma_s, beta_s, channels, positions;
    float eps, sqrt_c; /* sqrt_c: sqrt(C), DK_RMS_NORM_L2's factor */
    int form, act, dt, affine_dt, has_gamma, has_beta, lanes, pdims;
    int aff_vec; /* gamma / beta in x's dtype, unit stride, 16-byte aligned: read in vectors (rows_vec) */
    int tile;    /* dkk_rms_norm_columns_tile: positions per block */
} dkh_rms_args;

#endif /* DK_HIP_KARGS_H */
