/* Host emulation of every matrix-core instruction family of the HIP backend.
 *
 * The kernels place operands into lanes, and read results out of them, only
 * through the index functions of backends/hip/kernels/dk_tile_layout.h
 * (slot -> element).  This test distributes random matrices into per-lane
 * registers with those same functions, runs an emulation of each instruction
 * written independently from the vendors' documents in the opposite direction
 * (element -> lane, register slot), and checks a 64x64x32 block-tile product,
 * accumulated over K steps exactly as dk_gemm.hip does, against a plain matrix
 * product of the same dtype-rounded values.  It also checks that the index
 * functions cover each element exactly once (twice for gfx11 A/B, whose lanes
 * 16-31 must repeat lanes 0-15, which the emulation enforces).
 *
 * Sources of the emulated layouts (element -> lane, slot):
 *   MFMA (AMD CDNA3 ISA guide, dense MFMA operand layout; matrix instruction
 *     calculator): A[i][k] at lane i + M*(k/KL), slot k%KL (KL = 4, or 2 for the
 *     gfx908 bf16 forms); B[k][j] likewise with j; D[i][j] of 32x32 at lane
 *     j + 32*((i/4)%2), slot 4*(i/8) + i%4; of 16x16 at lane j + 16*(i/4), slot i%4.
 *   WMMA gfx11 (RDNA3 ISA guide 7.9): A[i][k] at lanes i and i+16, slot k; B[k][j]
 *     at lanes j and j+16, slot k; D[i][j] at lane j + 16*(i%2), slot i/2.
 *   WMMA gfx12 (RDNA4 ISA guide 7.9): A[i][k] at lane i + 16*(k/8), slot k%8;
 *     B[k][j] at lane j + 16*(k/8), slot k%8; D[i][j] at lane j + 16*(i/8), slot i%8.
 *   mma.sync m16n8k16 (PTX ISA, "Matrix Fragments for mma.m16n8k16"): A[i][k] at
 *     lane 4*(i%8) + (k%8)/2, slot k%2 + 2*(i/8) + 4*(k/8); B[k][j] at lane
 *     4*j + (k%8)/2, slot k%2 + 2*(k/8); C[i][j] at lane 4*(i%8) + j/2, slot j%2 + 2*(i/8).
 */
#include <difkern.h>

#include "../../backends/hip/kernels/dk_tile_layout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TT_BM 64
#define TT_BN 64
#define TT_BK 32
#define TT_MAXL 64
#define TT_MAXS 16

typedef struct tt_loc {
    int lane, slot;
} tt_loc;

/* ---- the emulated instructions: element -> (lane, slot), from the ISA documents ---- */

static int tt_kl(int fam) { return fam == DKT_MFMA32_BF16 || fam == DKT_MFMA16_BF16 ? 2 : 4; }

/* copy: 0 or 1 (gfx11 A/B live in two lanes) */
static tt_loc tt_a_loc(int fam, int i, int k, int copy) {
    tt_loc l = {0, 0};
    int m = dkt_shape_of(fam).m;
    switch (fam) {
    case DKT_MFMA32: case DKT_MFMA16: case DKT_MFMA32_BF16: case DKT_MFMA16_BF16:
        l.lane = i + m * (k / tt_kl(fam)); l.slot = k % tt_kl(fam); break;
    case DKT_WMMA11: l.lane = i + 16 * copy; l.slot = k; break;
    case DKT_WMMA12: l.lane = i + 16 * (k / 8); l.slot = k % 8; break;
    case DKT_MMA16816: l.lane = 4 * (i % 8) + (k % 8) / 2; l.slot = k % 2 + 2 * (i / 8) + 4 * (k / 8); break;
    default: break;
    }
    return l;
}

static tt_loc tt_b_loc(int fam, int k, int j, int copy) {
    tt_loc l = {0, 0};
    int n = dkt_shape_of(fam).n;
    switch (fam) {
    case DKT_MFMA32: case DKT_MFMA16: case DKT_MFMA32_BF16: case DKT_MFMA16_BF16:
        l.lane = j + n * (k / tt_kl(fam)); l.slot = k % tt_kl(fam); break;
    case DKT_WMMA11: l.lane = j + 16 * copy; l.slot = k; break;
    case DKT_WMMA12: l.lane = j + 16 * (k / 8); l.slot = k % 8; break;
    case DKT_MMA16816: l.lane = 4 * j + (k % 8) / 2; l.slot = k % 2 + 2 * (k / 8); break;
    default: break;
    }
    return l;
}

static tt_loc tt_d_loc(int fam, int i, int j) {
    tt_loc l = {0, 0};
    switch (fam) {
    case DKT_MFMA32: case DKT_MFMA32_BF16: l.lane = j + 32 * ((i / 4) % 2); l.slot = 4 * (i / 8) + i % 4; break;
    case DKT_MFMA16: case DKT_MFMA16_BF16: l.lane = j + 16 * (i / 4); l.slot = i % 4; break;
    case DKT_WMMA11: l.lane = j + 16 * (i % 2); l.slot = i / 2; break;
    case DKT_WMMA12: l.lane = j + 16 * (i / 8); l.slot = i % 8; break;
    case DKT_MMA16816: l.lane = 4 * (i % 8) + j / 2; l.slot = j % 2 + 2 * (i / 8); break;
    default: break;
    }
    return l;
}

/* D = A*B + C on register files; returns 0 if the operands break the
 * instruction's rules (gfx11: the two lane halves of A/B differ). */
static int tt_execute(int fam, double ra[TT_MAXL][TT_MAXS], double rb[TT_MAXL][TT_MAXS],
                      double rc[TT_MAXL][TT_MAXS]) {
    dkt_shape s = dkt_shape_of(fam);
    double d[32][32];
    int i, j, k;
    if (fam == DKT_WMMA11)
        for (i = 0; i < 16; i++)
            for (k = 0; k < 16; k++) {
                tt_loc a0 = tt_a_loc(fam, i, k, 0), a1 = tt_a_loc(fam, i, k, 1);
                tt_loc b0 = tt_b_loc(fam, k, i, 0), b1 = tt_b_loc(fam, k, i, 1);
                if (ra[a0.lane][a0.slot] != ra[a1.lane][a1.slot] || rb[b0.lane][b0.slot] != rb[b1.lane][b1.slot])
                    return 0;
            }
    for (i = 0; i < s.m; i++)
        for (j = 0; j < s.n; j++) {
            tt_loc c = tt_d_loc(fam, i, j);
            double acc = rc[c.lane][c.slot];
            for (k = 0; k < s.k; k++) {
                tt_loc a = tt_a_loc(fam, i, k, 0), b = tt_b_loc(fam, k, j, 0);
                acc += ra[a.lane][a.slot] * rb[b.lane][b.slot];
            }
            d[i][j] = acc;
        }
    for (i = 0; i < s.m; i++)
        for (j = 0; j < s.n; j++) {
            tt_loc c = tt_d_loc(fam, i, j);
            rc[c.lane][c.slot] = d[i][j];
        }
    return 1;
}

/* ---- the kernels' side: fragments through the index functions ---- */

static double tt_round(dk_dtype dt, double v) {
    return dt == DK_F16 ? dk_f16_to_f32(dk_f32_to_f16((float)v)) : dk_bf16_to_f32(dk_f32_to_bf16((float)v));
}

static int tt_family(int fam, const char *name, dk_dtype dt) {
    static double A[TT_BM][TT_BK], B[TT_BK][TT_BN], C[TT_BM][TT_BN], ref[TT_BM][TT_BN];
    static double ra[TT_MAXL][TT_MAXS], rb[TT_MAXL][TT_MAXS], acc[TT_BM / 16 * TT_BN / 8][TT_MAXL][TT_MAXS];
    dkt_shape s = dkt_shape_of(fam);
    int cover_a[32][16], cover_c[32][32];
    int i, j, k, f, lane, slot, nf = (TT_BM / s.m) * (TT_BN / s.n), bad = 0;
    double num = 0.0, den = 0.0, err;

    /* coverage of one fragment by the index functions */
    memset(cover_a, 0, sizeof cover_a);
    memset(cover_c, 0, sizeof cover_c);
    for (lane = 0; lane < s.wave; lane++) {
        for (slot = 0; slot < s.a_regs; slot++) {
            dkt_a_map(fam, lane, slot, &i, &k);
            if (i < 0 || i >= s.m || k < 0 || k >= s.k) bad = 1;
            else cover_a[i][k]++;
        }
        for (slot = 0; slot < s.c_regs; slot++) {
            dkt_c_map(fam, lane, slot, &i, &j);
            if (i < 0 || i >= s.m || j < 0 || j >= s.n) bad = 1;
            else cover_c[i][j]++;
        }
    }
    for (i = 0; i < s.m; i++) {
        for (k = 0; k < s.k; k++)
            if (cover_a[i][k] != (fam == DKT_WMMA11 ? 2 : 1)) bad = 1;
        for (j = 0; j < s.n; j++)
            if (cover_c[i][j] != 1) bad = 1;
    }
    if (bad) {
        printf("FAIL %-18s %-4s: index functions do not cover the fragment exactly\n", name, dk_dtype_name(dt));
        return 1;
    }

    for (i = 0; i < TT_BM; i++)
        for (k = 0; k < TT_BK; k++) A[i][k] = tt_round(dt, (double)rand() / RAND_MAX * 2.0 - 1.0);
    for (k = 0; k < TT_BK; k++)
        for (j = 0; j < TT_BN; j++) B[k][j] = tt_round(dt, (double)rand() / RAND_MAX * 2.0 - 1.0);
    for (i = 0; i < TT_BM; i++)
        for (j = 0; j < TT_BN; j++) {
            double sum = 0.0;
            for (k = 0; k < TT_BK; k++) sum += A[i][k] * B[k][j];
            ref[i][j] = sum;
            C[i][j] = NAN;
        }

    /* the block tile as dk_gemm.hip walks it: fragments (fm, fn), K steps of s.k */
    memset(acc, 0, sizeof acc);
    for (f = 0; f < nf; f++) {
        int fm = (f / (TT_BN / s.n)) * s.m, fn = (f % (TT_BN / s.n)) * s.n, k0;
        for (k0 = 0; k0 < TT_BK; k0 += s.k) {
            for (lane = 0; lane < s.wave; lane++) {
                for (slot = 0; slot < s.a_regs; slot++) {
                    dkt_a_map(fam, lane, slot, &i, &k);
                    ra[lane][slot] = A[fm + i][k0 + k];
                }
                for (slot = 0; slot < s.b_regs; slot++) {
                    dkt_b_map(fam, lane, slot, &k, &j);
                    rb[lane][slot] = B[k0 + k][fn + j];
                }
            }
            if (!tt_execute(fam, ra, rb, acc[f])) {
                printf("FAIL %-18s %-4s: operands break the instruction's lane rules\n", name, dk_dtype_name(dt));
                return 1;
            }
        }
        for (lane = 0; lane < s.wave; lane++)
            for (slot = 0; slot < s.c_regs; slot++) {
                dkt_c_map(fam, lane, slot, &i, &j);
                C[fm + i][fn + j] = acc[f][lane][slot];
            }
    }
    for (i = 0; i < TT_BM; i++)
        for (j = 0; j < TT_BN; j++) {
            double dlt = C[i][j] - ref[i][j];
            num += dlt * dlt;
            den += ref[i][j] * ref[i][j];
        }
    err = sqrt(num / den);
    if (!(err < 1e-12)) {
        printf("FAIL %-18s %-4s: 64x64x32 tile product rel. L2 error %.3g\n", name, dk_dtype_name(dt), err);
        return 1;
    }
    printf("ok   %-18s %-4s: %2dx%2dx%2d fragments, wave%d, 64x64x32 tile rel. L2 error %.1e\n", name,
           dk_dtype_name(dt), s.m, s.n, s.k, s.wave, err);
    return 0;
}

/* The FMA families have no instruction: only their C layout is checked. */
static int tt_fma_cover(int fam, const char *name) {
    dkt_shape s = dkt_shape_of(fam);
    int cover[16][16], lane, slot, i, j;
    memset(cover, 0, sizeof cover);
    for (lane = 0; lane < s.wave; lane++)
        for (slot = 0; slot < s.c_regs; slot++) {
            dkt_c_map(fam, lane, slot, &i, &j);
            if (i < 0 || i >= 16 || j < 0 || j >= 16) {
                printf("FAIL %s: slot outside the tile\n", name);
                return 1;
            }
            cover[i][j]++;
        }
    for (i = 0; i < 16; i++)
        for (j = 0; j < 16; j++)
            if (cover[i][j] != 1) {
                printf("FAIL %s: C element (%d, %d) held %d times\n", name, i, j, cover[i][j]);
                return 1;
            }
    printf("ok   %-18s     : C layout covers the 16x16 tile once\n", name);
    return 0;
}

/* The register-fragment loads of dk_tile.h (load_a / load_b) read slot pair
 * (2j, 2j+1) as one 32-bit word: same row (column), k and k+1 with k even.
 * mma.sync loads with ldmatrix: lane l addresses row (l%8) + 8*((l/8)%2), k 8*(l/16)
 * of A (column l%8, k 8*((l/8)%2) of B), the element lane 4*(l%8) holds in slot
 * 2*(l/8) (2*((l/8)%2)), and receives row t/4, k 2*(t%4) of each 8x8 matrix. */
static int tt_pairs(int fam, const char *name) {
    dkt_shape s = dkt_shape_of(fam);
    int lane, j;
    for (lane = 0; lane < s.wave; lane++) {
        for (j = 0; 2 * j + 1 < s.a_regs; j++) {
            int r0, k0, r1, k1;
            dkt_a_map(fam, lane, 2 * j, &r0, &k0);
            dkt_a_map(fam, lane, 2 * j + 1, &r1, &k1);
            if (r0 != r1 || k1 != k0 + 1 || k0 % 2) {
                printf("FAIL %s: A slots %d, %d of lane %d are not one 32-bit pair\n", name, 2 * j, 2 * j + 1, lane);
                return 1;
            }
        }
        for (j = 0; 2 * j + 1 < s.b_regs; j++) {
            int k0, c0, k1, c1;
            dkt_b_map(fam, lane, 2 * j, &k0, &c0);
            dkt_b_map(fam, lane, 2 * j + 1, &k1, &c1);
            if (c0 != c1 || k1 != k0 + 1 || k0 % 2) {
                printf("FAIL %s: B slots %d, %d of lane %d are not one 32-bit pair\n", name, 2 * j, 2 * j + 1, lane);
                return 1;
            }
        }
    }
    if (fam == DKT_MMA16816)
        for (lane = 0; lane < 32; lane++) {
            int r, k, t;
            dkt_a_map(fam, 4 * (lane % 8), 2 * (lane / 8), &r, &k);
            if (r != lane % 8 + 8 * ((lane / 8) % 2) || k != 8 * (lane / 16)) {
                printf("FAIL %s: ldmatrix A row address of lane %d\n", name, lane);
                return 1;
            }
            dkt_b_map(fam, 4 * (lane % 8), 2 * ((lane / 8) % 2), &k, &r);
            if (r != lane % 8 || k != 8 * ((lane / 8) % 2)) {
                printf("FAIL %s: ldmatrix B row address of lane %d\n", name, lane);
                return 1;
            }
            for (t = 0; t < 4; t++) { /* register t of lane: matrix t, row lane/4, k 2*(lane%4) */
                dkt_a_map(fam, lane, 2 * t, &r, &k);
                if (r != lane / 4 + 8 * (t % 2) || k != 2 * (lane % 4) + 8 * (t / 2)) {
                    printf("FAIL %s: ldmatrix A register %d of lane %d\n", name, t, lane);
                    return 1;
                }
            }
        }
    printf("ok   %-18s     : fragment slot pairs are 32-bit words%s\n", name,
           fam == DKT_MMA16816 ? ", ldmatrix addresses" : "");
    return 0;
}

int main(int argc, char **argv) {
    static const struct { int fam; const char *name; int f16, bf16; } fams[] = {
        {DKT_MFMA32, "mfma 32x32x8", 1, 1},
        {DKT_MFMA16, "mfma 16x16x16", 1, 1},
        {DKT_MFMA32_BF16, "mfma 32x32x4 (908)", 0, 1},
        {DKT_MFMA16_BF16, "mfma 16x16x8 (908)", 0, 1},
        {DKT_WMMA11, "wmma gfx11", 1, 1},
        {DKT_WMMA12, "wmma gfx12", 1, 1},
        {DKT_MMA16816, "mma.sync m16n8k16", 1, 1},
    };
    unsigned seed = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 12345u;
    size_t n;
    int fails = 0;
    printf("tile layout emulation, seed %u\n", seed);
    srand(seed);
    for (n = 0; n < sizeof fams / sizeof fams[0]; n++) {
        if (fams[n].f16) fails += tt_family(fams[n].fam, fams[n].name, DK_F16);
        if (fams[n].bf16) fails += tt_family(fams[n].fam, fams[n].name, DK_BF16);
        fails += tt_pairs(fams[n].fam, fams[n].name);
    }
    fails += tt_fma_cover(DKT_FMA32, "fma wave32");
    fails += tt_fma_cover(DKT_FMA64, "fma wave64");
    printf("%s: %d failure(s)\n", fails ? "FAILED" : "passed", fails);
    return fails ? 1 : 0;
}
