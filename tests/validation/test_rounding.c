/* 16-bit outputs round to nearest, ties to even, on one backend (argv[1]: cpu,
 * vulkan, hip), as the CPU reference and dk_f32_to_f16 / dk_f32_to_bf16 do.
 * The case list's tolerances would accept round-toward-zero or ties-away: this
 * test would not.  A 1x1 conv (Cin 32, Cout 16, channels-last, 128 pixels: the
 * GPU backends' tensor-core path) with identity weights computes exactly
 * y = x + bias[c], where x is 1 or -1 and bias[c] = c/8 of the output's unit in
 * the last place at 1, so the fp32 sums fall below, on and above the halfway
 * points between two 16-bit values; each output must be the nearest-even
 * rounding of its exact sum.  f16 and bf16.  Exit 77 (skipped) when the
 * backend is not on this machine. */
#include "backend_test.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TR_CIN = 32, TR_COUT = 16, TR_W = 128 };

static uint16_t tr_to16(dk_dtype dt, float v) { return dt == DK_BF16 ? dk_f32_to_bf16(v) : dk_f32_to_f16(v); }

/* The 16-bit value nearest to v, ties to the even significand, computed from
 * its two neighbours a spacing apart (independent of the library's own
 * conversion, which only encodes the chosen, exactly representable value). */
static uint16_t tr_nearest_even(dk_dtype dt, double v, double spacing) {
    double lo = floor(v / spacing) * spacing, hi = lo + spacing, pick;
    if (v - lo < hi - v) pick = lo;
    else if (v - lo > hi - v) pick = hi;
    else pick = fmod(fabs(lo / spacing), 2.0) == 0.0 ? lo : hi;
    return tr_to16(dt, (float)pick);
}

static void tr_run(dk_context *ctx, dk_dtype dt) {
    const double ulp = dt == DK_BF16 ? 1.0 / 128.0 : 1.0 / 1024.0; /* at |y| in [1, 2) */
    const int64_t wshape[4] = {TR_COUT, TR_CIN, 1, 1}, bshape[1] = {TR_COUT};
    uint16_t hx[TR_W * TR_CIN], hw[TR_COUT * TR_CIN], hb[TR_COUT], hy[TR_W * TR_COUT];
    dk_buffer *bx = NULL, *bw = NULL, *bb = NULL, *by = NULL;
    dk_tensor x, w, b, y;
    dk_conv2d_desc d;
    int i, c, bad = 0;
    for (i = 0; i < TR_W; i++)
        for (c = 0; c < TR_CIN; c++) hx[i * TR_CIN + c] = tr_to16(dt, c == i % TR_COUT ? (i % 2 ? -1.0f : 1.0f) : 0.0f);
    /* identity: output channel co takes input channel co; pixel i has x = +-1 in
     * channel i % 16 only, so y[i][co] = (co == i % 16 ? +-1 : 0) + bias[co] */
    for (c = 0; c < TR_COUT * TR_CIN; c++) hw[c] = tr_to16(dt, c / TR_CIN == c % TR_CIN ? 1.0f : 0.0f);
    for (c = 0; c < TR_COUT; c++) hb[c] = tr_to16(dt, (float)(c * ulp / 8.0));
    BT_CHECK(dk_buffer_create(ctx, sizeof hx, &bx) == DK_OK && dk_buffer_create(ctx, sizeof hw, &bw) == DK_OK &&
                 dk_buffer_create(ctx, sizeof hb, &bb) == DK_OK && dk_buffer_create(ctx, sizeof hy, &by) == DK_OK,
             "buffers: %s", dk_last_error(ctx));
    if (bt_failures) goto done;
    BT_CHECK(dk_buffer_upload(ctx, bx, 0, hx, sizeof hx) == DK_OK && dk_buffer_upload(ctx, bw, 0, hw, sizeof hw) == DK_OK &&
                 dk_buffer_upload(ctx, bb, 0, hb, sizeof hb) == DK_OK &&
                 dk_buffer_fill(ctx, by, 0, sizeof hy, 0x7e007e00u) == DK_OK,
             "uploads: %s", dk_last_error(ctx));
    x = dk_tensor_nhwc(bx, 0, dt, 1, TR_CIN, 1, TR_W);
    y = dk_tensor_nhwc(by, 0, dt, 1, TR_COUT, 1, TR_W);
    w = dk_tensor_contiguous(bw, 0, dt, 4, wshape);
    b = dk_tensor_contiguous(bb, 0, dt, 1, bshape);
    dk_conv2d_desc_init(&d);
    BT_CHECK(dk_conv2d(ctx, &d, &x, &w, &b, NULL, &y) == DK_OK, "conv: %s", dk_last_error(ctx));
    BT_CHECK(dk_buffer_download(ctx, by, 0, hy, sizeof hy) == DK_OK, "download: %s", dk_last_error(ctx));
    if (bt_failures) goto done;
    for (i = 0; i < TR_W; i++)
        for (c = 0; c < TR_COUT; c++) {
            double exact = (c == i % TR_COUT ? (i % 2 ? -1.0 : 1.0) : 0.0) + c * ulp / 8.0;
            /* a zero x leaves bias[c] itself, exact in the dtype */
            /* below 1 in magnitude (x = -1) the 16-bit values are half as far apart */
            uint16_t want = c == i % TR_COUT ? tr_nearest_even(dt, exact, i % 2 ? ulp / 2.0 : ulp) : hb[c];
            if (hy[i * TR_COUT + c] != want && bad++ < 8)
                printf("FAIL %s pixel %d channel %d: exact %.10f, got 0x%04x, want 0x%04x\n", dk_dtype_name(dt), i, c,
                       exact, hy[i * TR_COUT + c], want);
        }
    BT_CHECK(bad == 0, "%s: %d outputs not rounded to nearest even", dk_dtype_name(dt), bad);
done:
    dk_buffer_destroy(ctx, bx);
    dk_buffer_destroy(ctx, bw);
    dk_buffer_destroy(ctx, bb);
    dk_buffer_destroy(ctx, by);
}

int main(int argc, char **argv) {
    dk_context_options opt;
    dk_context *ctx = NULL;
    const char *name;
    int rc = bt_context(argc, argv, &opt, &ctx, &name);
    if (rc) return rc;
    tr_run(ctx, DK_F16);
    tr_run(ctx, DK_BF16);
    dk_context_destroy(ctx);
    printf("%s: %s\n", name, bt_failures ? "FAILED" : "16-bit outputs rounded to nearest even");
    return bt_failures ? 1 : 0;
}
