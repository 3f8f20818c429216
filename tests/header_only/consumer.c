/* A difkern consumer built from the installed files only (tests/header_only/header_only.py).
 *
 * Compiled with -DCONSUMER_HEADER_ONLY it is the header-only use:
 *     #define DIFKERN_IMPLEMENTATION
 *     #include <difkern.h>
 * otherwise it links the installed library (found through pkg-config).
 * It runs a small conv2d and group_norm on the CPU backend and checks both
 * against naive loops in double precision.  Built with -DDIFKERN_VULKAN or
 * -DDIFKERN_HIP too, it checks that the backend got compiled in (the ops still
 * run on the CPU).
 * Exit status 0 on success.
 */
#ifdef CONSUMER_HEADER_ONLY
#define DIFKERN_IMPLEMENTATION
#endif
#include <difkern.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Defined in consumer_tu2.c: a second translation unit that includes only the
 * declarations, so duplicate definitions from the header would fail to link. */
const char *consumer_tu2_version(void);

static uint32_t consumer_rng = 0x9E3779B9u;

/* Uniform in [-1, 1) from a 32-bit xorshift: random data, never zeros. */
static float consumer_rand(void) {
    consumer_rng ^= consumer_rng << 13;
    consumer_rng ^= consumer_rng >> 17;
    consumer_rng ^= consumer_rng << 5;
    return (float)((double)(consumer_rng >> 8) / 8388608.0 - 1.0);
}

static int consumer_fail(dk_context *ctx, const char *what, dk_status st) {
    fprintf(stderr, "consumer: %s: %s: %s\n", what, dk_status_name(st), dk_last_error(ctx));
    return 1;
}

static double consumer_silu(double v) { return v / (1.0 + exp(-v)); }

/* conv2d, NCHW, 3x3, stride 1, pad 1, bias, SiLU. */
static int consumer_conv2d(dk_context *ctx) {
    enum { N = 2, CI = 4, H = 7, W = 6, CO = 5, K = 3 };
    static float x[N * CI * H * W], w[CO * CI * K * K], b[CO], y[N * CO * H * W];
    dk_buffer *bx = NULL, *bw = NULL, *bb = NULL, *by = NULL;
    dk_tensor tx, tw, tb, ty;
    dk_conv2d_desc d;
    dk_status st;
    double max_err = 0.0;
    int64_t shape_w[4] = {CO, CI, K, K}, shape_b[1] = {CO};
    int n, co, oh, ow, ci, kh, kw, rc = 0;
    size_t i;

    for (i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = consumer_rand();
    for (i = 0; i < sizeof w / sizeof w[0]; i++) w[i] = consumer_rand() * 0.3f;
    for (i = 0; i < CO; i++) b[i] = consumer_rand();
    st = dk_buffer_create(ctx, sizeof x, &bx);
    if (st == DK_OK) st = dk_buffer_create(ctx, sizeof w, &bw);
    if (st == DK_OK) st = dk_buffer_create(ctx, sizeof b, &bb);
    if (st == DK_OK) st = dk_buffer_create(ctx, sizeof y, &by);
    if (st == DK_OK) st = dk_buffer_upload(ctx, bx, 0, x, sizeof x);
    if (st == DK_OK) st = dk_buffer_upload(ctx, bw, 0, w, sizeof w);
    if (st == DK_OK) st = dk_buffer_upload(ctx, bb, 0, b, sizeof b);
    if (st == DK_OK) st = dk_buffer_fill(ctx, by, 0, sizeof y, 0x7FC00000u); /* NaN poison */
    if (st != DK_OK) {
        rc = consumer_fail(ctx, "conv2d buffers", st);
        goto done;
    }
    tx = dk_tensor_nchw(bx, 0, DK_F32, N, CI, H, W);
    tw = dk_tensor_contiguous(bw, 0, DK_F32, 4, shape_w);
    tb = dk_tensor_contiguous(bb, 0, DK_F32, 1, shape_b);
    ty = dk_tensor_nchw(by, 0, DK_F32, N, CO, H, W);
    dk_conv2d_desc_init(&d);
    d.pad_h = d.pad_w = 1;
    d.activation = DK_ACT_SILU;
    st = dk_conv2d(ctx, &d, &tx, &tw, &tb, NULL, &ty);
    if (st == DK_OK) st = dk_buffer_download(ctx, by, 0, y, sizeof y);
    if (st != DK_OK) {
        rc = consumer_fail(ctx, "dk_conv2d", st);
        goto done;
    }
    for (n = 0; n < N; n++)
        for (co = 0; co < CO; co++)
            for (oh = 0; oh < H; oh++)
                for (ow = 0; ow < W; ow++) {
                    double acc = b[co], err;
                    for (ci = 0; ci < CI; ci++)
                        for (kh = 0; kh < K; kh++)
                            for (kw = 0; kw < K; kw++) {
                                int ih = oh + kh - 1, iw = ow + kw - 1;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                acc += (double)x[((n * CI + ci) * H + ih) * W + iw] *
                                       (double)w[((co * CI + ci) * K + kh) * K + kw];
                            }
                    err = fabs((double)y[((n * CO + co) * H + oh) * W + ow] - consumer_silu(acc));
                    if (!(err <= max_err)) max_err = err; /* NaN propagates */
                }
    printf("consumer: conv2d max abs error %.3g\n", max_err);
    if (!(max_err < 1e-4)) {
        fprintf(stderr, "consumer: conv2d disagrees with the naive loop (max abs error %g)\n", max_err);
        rc = 1;
    }
done:
    dk_buffer_destroy(ctx, bx);
    dk_buffer_destroy(ctx, bw);
    dk_buffer_destroy(ctx, bb);
    dk_buffer_destroy(ctx, by);
    return rc;
}

/* group_norm, NHWC storage, 3 groups of 2 channels, affine. */
static int consumer_group_norm(dk_context *ctx) {
    enum { N = 2, C = 6, H = 5, W = 4, G = 3 };
    static float x[N * H * W * C], y[N * H * W * C], gamma[C], beta[C];
    dk_buffer *bx = NULL, *by = NULL, *bg = NULL, *bb = NULL;
    dk_tensor tx, ty, tg, tb;
    dk_group_norm_desc d;
    dk_status st;
    double max_err = 0.0;
    int64_t shape_c[1] = {C};
    int n, g, c, p, rc = 0;
    size_t i;

    for (i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = 2.0f * consumer_rand() + 0.5f;
    for (i = 0; i < C; i++) {
        gamma[i] = consumer_rand() + 1.0f;
        beta[i] = consumer_rand();
    }
    st = dk_buffer_create(ctx, sizeof x, &bx);
    if (st == DK_OK) st = dk_buffer_create(ctx, sizeof y, &by);
    if (st == DK_OK) st = dk_buffer_create(ctx, sizeof gamma, &bg);
    if (st == DK_OK) st = dk_buffer_create(ctx, sizeof beta, &bb);
    if (st == DK_OK) st = dk_buffer_upload(ctx, bx, 0, x, sizeof x);
    if (st == DK_OK) st = dk_buffer_upload(ctx, bg, 0, gamma, sizeof gamma);
    if (st == DK_OK) st = dk_buffer_upload(ctx, bb, 0, beta, sizeof beta);
    if (st == DK_OK) st = dk_buffer_fill(ctx, by, 0, sizeof y, 0x7FC00000u);
    if (st != DK_OK) {
        rc = consumer_fail(ctx, "group_norm buffers", st);
        goto done;
    }
    tx = dk_tensor_nhwc(bx, 0, DK_F32, N, C, H, W);
    ty = dk_tensor_nhwc(by, 0, DK_F32, N, C, H, W);
    tg = dk_tensor_contiguous(bg, 0, DK_F32, 1, shape_c);
    tb = dk_tensor_contiguous(bb, 0, DK_F32, 1, shape_c);
    dk_group_norm_desc_init(&d);
    d.groups = G;
    st = dk_group_norm(ctx, &d, &tx, &tg, &tb, &ty);
    if (st == DK_OK) st = dk_sync(ctx);
    if (st == DK_OK) st = dk_buffer_download(ctx, by, 0, y, sizeof y);
    if (st != DK_OK) {
        rc = consumer_fail(ctx, "dk_group_norm", st);
        goto done;
    }
    for (n = 0; n < N; n++)
        for (g = 0; g < G; g++) {
            double sum = 0.0, sq = 0.0, mean, var, cnt = (double)(C / G * H * W);
            for (p = 0; p < H * W; p++)
                for (c = g * (C / G); c < (g + 1) * (C / G); c++) sum += x[(n * H * W + p) * C + c];
            mean = sum / cnt;
            for (p = 0; p < H * W; p++)
                for (c = g * (C / G); c < (g + 1) * (C / G); c++) {
                    double dv = x[(n * H * W + p) * C + c] - mean;
                    sq += dv * dv;
                }
            var = sq / cnt;
            for (p = 0; p < H * W; p++)
                for (c = g * (C / G); c < (g + 1) * (C / G); c++) {
                    size_t at = (size_t)((n * H * W + p) * C + c);
                    double want = (x[at] - mean) / sqrt(var + (double)d.eps) * gamma[c] + beta[c];
                    double err = fabs((double)y[at] - want);
                    if (!(err <= max_err)) max_err = err;
                }
        }
    printf("consumer: group_norm max abs error %.3g\n", max_err);
    if (!(max_err < 1e-4)) {
        fprintf(stderr, "consumer: group_norm disagrees with the naive loop (max abs error %g)\n", max_err);
        rc = 1;
    }
done:
    dk_buffer_destroy(ctx, bx);
    dk_buffer_destroy(ctx, by);
    dk_buffer_destroy(ctx, bg);
    dk_buffer_destroy(ctx, bb);
    return rc;
}

int main(void) {
    dk_context_options opt;
    dk_context *ctx = NULL;
    dk_status st;
    int rc;

    if (strcmp(consumer_tu2_version(), dk_version_string()) != 0) {
        fprintf(stderr, "consumer: the two translation units disagree on the version\n");
        return 1;
    }
#ifdef DIFKERN_VULKAN
    if (!dk_backend_compiled(DK_BACKEND_VULKAN)) {
        fprintf(stderr, "consumer: built with DIFKERN_VULKAN but the Vulkan backend is not compiled in\n");
        return 1;
    }
#endif
#ifdef DIFKERN_HIP
    if (!dk_backend_compiled(DK_BACKEND_HIP)) {
        fprintf(stderr, "consumer: built with DIFKERN_HIP but the HIP backend is not compiled in\n");
        return 1;
    }
#endif
    if (!dk_backend_compiled(DK_BACKEND_CPU)) {
        fprintf(stderr, "consumer: the CPU backend is not compiled in\n");
        return 1;
    }
    dk_context_options_init(&opt);
    opt.backend = DK_BACKEND_CPU;
    opt.num_threads = 2;
    st = dk_context_create(&opt, &ctx);
    if (st != DK_OK) return consumer_fail(NULL, "dk_context_create", st);
    printf("consumer: difkern %s, %s\n", dk_version_string(), dk_context_describe(ctx));
    rc = consumer_conv2d(ctx);
    rc |= consumer_group_norm(ctx);
    dk_context_destroy(ctx);
    if (rc == 0) printf("consumer: ok\n");
    return rc;
}
