/* dk_release_scratch on one backend (argv[1]: cpu, vulkan, hip): an NCHW f16
 * conv with a residual (the GPU backends copy its operands to channels-last
 * scratch) grows the reported device memory beyond the same conv in NHWC;
 * dk_release_scratch gives exactly that back; the conv then runs again (the
 * scratch allocated anew) to the same bits, and matches the NHWC conv.  Bad
 * arguments get a status and a message.  Exit 77 (skipped) when the backend is
 * not on this machine. */
#include "backend_test.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TS_N = 1, TS_C = 64, TS_H = 12, TS_W = 16, TS_PIX = TS_H * TS_W, TS_NUMEL = TS_N * TS_C * TS_PIX };

static uint32_t ts_rng = 12345u;
static uint16_t ts_rand_f16(float scale) {
    ts_rng = ts_rng * 1664525u + 1013904223u;
    return dk_f32_to_f16(scale * ((float)(ts_rng >> 8) / 8388608.0f - 1.0f));
}

static uint64_t ts_memory(dk_context *ctx) {
    uint64_t cur = 0;
    BT_CHECK(dk_memory_usage(ctx, &cur, NULL) == DK_OK, "dk_memory_usage: %s", dk_last_error(ctx));
    return cur;
}

/* y = conv3x3(x) + bias + 0.5 * r, all f16 in the given layout; out: y as
 * stored (layout order). */
static void ts_conv(dk_context *ctx, int nhwc, dk_buffer *bx, dk_buffer *bw, dk_buffer *bb, dk_buffer *br,
                    dk_buffer *by, uint16_t *out) {
    dk_conv2d_desc d;
    const int64_t wshape[4] = {TS_C, TS_C, 3, 3}, bshape[1] = {TS_C};
    dk_tensor x, w = dk_tensor_contiguous(bw, 0, DK_F16, 4, wshape), b = dk_tensor_contiguous(bb, 0, DK_F16, 1, bshape);
    dk_tensor r, y;
    x = nhwc ? dk_tensor_nhwc(bx, 0, DK_F16, TS_N, TS_C, TS_H, TS_W) : dk_tensor_nchw(bx, 0, DK_F16, TS_N, TS_C, TS_H, TS_W);
    r = nhwc ? dk_tensor_nhwc(br, 0, DK_F16, TS_N, TS_C, TS_H, TS_W) : dk_tensor_nchw(br, 0, DK_F16, TS_N, TS_C, TS_H, TS_W);
    y = nhwc ? dk_tensor_nhwc(by, 0, DK_F16, TS_N, TS_C, TS_H, TS_W) : dk_tensor_nchw(by, 0, DK_F16, TS_N, TS_C, TS_H, TS_W);
    dk_conv2d_desc_init(&d);
    d.pad_h = d.pad_w = 1;
    d.residual_scale = 0.5f;
    BT_CHECK(dk_buffer_fill(ctx, by, 0, TS_NUMEL * 2, 0x7e007e00u) == DK_OK, "poison y: %s", dk_last_error(ctx));
    BT_CHECK(dk_conv2d(ctx, &d, &x, &w, &b, &r, &y) == DK_OK, "conv (%s): %s", nhwc ? "NHWC" : "NCHW",
             dk_last_error(ctx));
    BT_CHECK(dk_buffer_download(ctx, by, 0, out, TS_NUMEL * 2) == DK_OK, "download: %s", dk_last_error(ctx));
}

/* The NCHW tensor t as NHWC, host side. */
static void ts_to_nhwc(const uint16_t *t, uint16_t *out) {
    int c, p;
    for (c = 0; c < TS_C; c++)
        for (p = 0; p < TS_PIX; p++) out[p * TS_C + c] = t[c * TS_PIX + p];
}

int main(int argc, char **argv) {
    dk_context_options opt;
    dk_context *ctx = NULL;
    const char *name;
    static uint16_t hx[TS_NUMEL], hr[TS_NUMEL], hw[TS_C * TS_C * 9], hb[TS_C], tmp[TS_NUMEL];
    static uint16_t y_nhwc[TS_NUMEL], y1[TS_NUMEL], y2[TS_NUMEL], y1n[TS_NUMEL];
    dk_buffer *bx = NULL, *bxn = NULL, *bw = NULL, *bb = NULL, *br = NULL, *brn = NULL, *by = NULL;
    uint64_t mem0, mem1, mem2;
    dk_status st;
    int i, bad = 0, nan = 0;
    i = bt_context(argc, argv, &opt, &ctx, &name);
    if (i) return i;
    st = dk_release_scratch(NULL);
    BT_CHECK(st == DK_ERR_INVALID_ARGUMENT && strstr(dk_last_error(NULL), "ctx must not be NULL"), "NULL ctx: %s '%s'",
             dk_status_name(st), dk_last_error(NULL));
    BT_CHECK(dk_release_scratch(ctx) == DK_OK, "release with no scratch: %s", dk_last_error(ctx));

    for (i = 0; i < TS_NUMEL; i++) hx[i] = ts_rand_f16(1.0f), hr[i] = ts_rand_f16(1.0f);
    for (i = 0; i < TS_C * TS_C * 9; i++) hw[i] = ts_rand_f16(0.05f);
    for (i = 0; i < TS_C; i++) hb[i] = ts_rand_f16(0.5f);
    st = DK_OK;
    if (st == DK_OK) st = dk_buffer_create(ctx, TS_NUMEL * 2, &bx);
    if (st == DK_OK) st = dk_buffer_create(ctx, TS_NUMEL * 2, &bxn);
    if (st == DK_OK) st = dk_buffer_create(ctx, TS_NUMEL * 2, &br);
    if (st == DK_OK) st = dk_buffer_create(ctx, TS_NUMEL * 2, &brn);
    if (st == DK_OK) st = dk_buffer_create(ctx, TS_NUMEL * 2, &by);
    if (st == DK_OK) st = dk_buffer_create(ctx, sizeof hw, &bw);
    if (st == DK_OK) st = dk_buffer_create(ctx, sizeof hb, &bb);
    if (st == DK_OK) st = dk_buffer_upload(ctx, bx, 0, hx, sizeof hx);
    if (st == DK_OK) st = dk_buffer_upload(ctx, br, 0, hr, sizeof hr);
    ts_to_nhwc(hx, tmp);
    if (st == DK_OK) st = dk_buffer_upload(ctx, bxn, 0, tmp, sizeof tmp);
    ts_to_nhwc(hr, tmp);
    if (st == DK_OK) st = dk_buffer_upload(ctx, brn, 0, tmp, sizeof tmp);
    if (st == DK_OK) st = dk_buffer_upload(ctx, bw, 0, hw, sizeof hw);
    if (st == DK_OK) st = dk_buffer_upload(ctx, bb, 0, hb, sizeof hb);
    BT_CHECK(st == DK_OK, "setup: %s", dk_last_error(ctx));
    if (st != DK_OK) {
        dk_context_destroy(ctx);
        return 1;
    }

    /* NHWC first: the weight's prepacked copy is made and kept; no staging */
    ts_conv(ctx, 1, bxn, bw, bb, brn, by, y_nhwc);
    mem0 = ts_memory(ctx);
    ts_conv(ctx, 0, bx, bw, bb, br, by, y1);
    mem1 = ts_memory(ctx);
    if (opt.backend != DK_BACKEND_CPU)
        BT_CHECK(mem1 > mem0, "%s: the NCHW conv added no scratch (%llu -> %llu bytes)", name, (unsigned long long)mem0,
                 (unsigned long long)mem1);
    BT_CHECK(dk_release_scratch(ctx) == DK_OK, "release: %s", dk_last_error(ctx));
    mem2 = ts_memory(ctx);
    BT_CHECK(mem2 == mem0, "after the release %llu bytes, before the NCHW conv %llu", (unsigned long long)mem2,
             (unsigned long long)mem0);
    BT_CHECK(dk_release_scratch(ctx) == DK_OK, "second release: %s", dk_last_error(ctx));
    ts_conv(ctx, 0, bx, bw, bb, br, by, y2);
    BT_CHECK(memcmp(y1, y2, sizeof y1) == 0, "the NCHW conv after the release differs from the one before");
    BT_CHECK(ts_memory(ctx) == mem1, "scratch after the second NCHW conv: %llu bytes, after the first %llu",
             (unsigned long long)ts_memory(ctx), (unsigned long long)mem1);

    /* NCHW vs NHWC: same function (f16 output: a few units in the last place) */
    ts_to_nhwc(y1, y1n);
    for (i = 0; i < TS_NUMEL; i++) {
        float a = dk_f16_to_f32(y1n[i]), b = dk_f16_to_f32(y_nhwc[i]);
        nan += isnan(a) || isnan(b);
        bad += !(fabsf(a - b) <= 4e-3f * (1.0f + fabsf(b)));
    }
    BT_CHECK(nan == 0 && bad == 0, "NCHW vs NHWC conv: %d of %d outputs differ (%d NaN)", bad, TS_NUMEL, nan);
    BT_CHECK(dk_sync(ctx) == DK_OK, "dk_sync: %s", dk_last_error(ctx));
    dk_buffer_destroy(ctx, bx);
    dk_buffer_destroy(ctx, bxn);
    dk_buffer_destroy(ctx, br);
    dk_buffer_destroy(ctx, brn);
    dk_buffer_destroy(ctx, by);
    dk_buffer_destroy(ctx, bw);
    dk_buffer_destroy(ctx, bb);
    dk_context_destroy(ctx);
    printf("scratch on %s: %d failures\n", name, bt_failures);
    return bt_failures ? 1 : 0;
}
