/* Vulkan backend tests beyond the shared case list: device selection and absence,
 * a chain of ops queued without syncs (barriers) against the CPU backend, buffer
 * transfers larger than the staging area, fill, deferred frees, read-backs beside a
 * recording frame, out of memory,
 * the on-disk pipeline cache, timers and wrapping a caller's VkBuffer.
 *
 *   vk_backend_test                       everything that needs a device
 *   vk_backend_test --expect-unavailable  run with no driver: status + AUTO fallback
 *   vk_backend_test --expect-bad-device   run with DIFKERN_VULKAN_DEVICE naming none
 * Exit 77 (skipped) when no Vulkan device is present.
 */
#include <difkern.h>
/* The test drives Vulkan itself for the interop case, through its own copy of
 * volk (the library keeps its volk symbols private). */
#define VOLK_IMPLEMENTATION
#include <volk.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

#define VT_OK(call, ctx)                                                                                   \
    do {                                                                                                   \
        dk_status vt_st = (call);                                                                          \
        if (vt_st != DK_OK) {                                                                              \
            printf("FAIL %s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call, dk_status_name(vt_st),         \
                   dk_last_error(ctx));                                                                    \
            failures++;                                                                                 \
            return;                                                                                        \
        }                                                                                                  \
    } while (0)

static uint64_t vt_rng = 0x9e3779b97f4a7c15ull;

static float vt_rand(void) { /* uniform in [-1, 1) */
    vt_rng ^= vt_rng << 13;
    vt_rng ^= vt_rng >> 7;
    vt_rng ^= vt_rng << 17;
    return (float)((double)(vt_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static dk_status vt_vulkan(dk_context **ctx, const char *cache_path) {
    dk_context_options o;
    dk_context_options_init(&o);
    o.backend = DK_BACKEND_VULKAN;
    o.pipeline_cache_path = cache_path;
    return dk_context_create(&o, ctx);
}

/* ------------------------------------------------------------ absence */

static int vt_expect_unavailable(void) {
    dk_context *ctx = NULL;
    dk_context_options o;
    dk_status st = vt_vulkan(&ctx, NULL);
    CHECK(st == DK_ERR_BACKEND_UNAVAILABLE, "vulkan without a driver: got %s (%s)", dk_status_name(st),
             dk_last_error(NULL));
    CHECK(strstr(dk_last_error(NULL), "vulkan") != NULL, "message should name vulkan: '%s'", dk_last_error(NULL));
    printf("vulkan unavailable as expected: %s\n", dk_last_error(NULL));
    dk_context_destroy(ctx);
    dk_context_options_init(&o);
    st = dk_context_create(&o, &ctx);
    CHECK(st == DK_OK && dk_context_backend(ctx) == DK_BACKEND_CPU, "AUTO should fall back to the CPU: %s",
             dk_status_name(st));
    dk_context_destroy(ctx);
    return failures ? 1 : 0;
}

static int vt_expect_bad_device(void) {
    dk_context *ctx = NULL;
    dk_context_options o;
    dk_status st = vt_vulkan(&ctx, NULL);
    CHECK(st == DK_ERR_BACKEND_UNAVAILABLE && strstr(dk_last_error(NULL), "DIFKERN_VULKAN_DEVICE"),
             "DIFKERN_VULKAN_DEVICE naming no device: got %s (%s)", dk_status_name(st), dk_last_error(NULL));
    dk_context_destroy(ctx);
    dk_context_options_init(&o);
    o.backend = DK_BACKEND_VULKAN;
    o.device_index = 99;
    st = dk_context_create(&o, &ctx);
    CHECK(st == DK_ERR_BACKEND_UNAVAILABLE, "device_index 99: got %s", dk_status_name(st));
    dk_context_destroy(ctx);
    return failures ? 1 : 0;
}

/* ---------------------------------------------------- chain vs the CPU */

typedef struct vt_chain_out { float *y; int64_t n; } vt_chain_out;

/* conv3x3 (NHWC, bias, silu) -> group_norm+silu in place -> conv_transpose s2 ->
 * conv with fused 2x upsample + residual -> attention over pixels -> layer_norm ->
 * matmul, all queued before one sync, in dtype dt. */
static void vt_chain(dk_context *ctx, dk_dtype dt, const float *host_x, const float *host_w, vt_chain_out *out) {
    enum { N = 1, C = 8, H = 6, W = 5 };
    size_t es = dk_dtype_size(dt);
    dk_buffer *bx = NULL, *bw = NULL, *b1 = NULL, *b2 = NULL, *b3 = NULL, *b4 = NULL, *b5 = NULL;
    dk_tensor x, w1, bias, t1, gam, bet, wt, t2, w3, t3, q, t4, g2, t5, wm, t6;
    dk_conv2d_desc cd;
    dk_conv_transpose2d_desc td;
    dk_group_norm_desc gd;
    dk_layer_norm_desc ld;
    dk_attention_desc ad;
    dk_matmul_desc md;
    int64_t i, nw = 4000;
    int64_t shp[3];
    void *stage = malloc(nw * 4);
    if (!stage) return;
    for (i = 0; i < nw; i++) {
        float v = host_w[i];
        if (dt == DK_F32) memcpy((char *)stage + i * 4, &v, 4);
        else {
            uint16_t h = dt == DK_F16 ? dk_f32_to_f16(v) : dk_f32_to_bf16(v);
            memcpy((char *)stage + i * 2, &h, 2);
        }
    }
    VT_OK(dk_buffer_create(ctx, (uint64_t)nw * es, &bw), ctx);
    VT_OK(dk_buffer_upload(ctx, bw, 0, stage, (uint64_t)nw * es), ctx);
    for (i = 0; i < N * C * H * W; i++) {
        float v = host_x[i];
        if (dt == DK_F32) memcpy((char *)stage + i * 4, &v, 4);
        else {
            uint16_t h = dt == DK_F16 ? dk_f32_to_f16(v) : dk_f32_to_bf16(v);
            memcpy((char *)stage + i * 2, &h, 2);
        }
    }
    VT_OK(dk_buffer_create(ctx, (uint64_t)(N * C * H * W) * es, &bx), ctx);
    VT_OK(dk_buffer_upload(ctx, bx, 0, stage, (uint64_t)(N * C * H * W) * es), ctx);
    free(stage);
    VT_OK(dk_buffer_create(ctx, 1 << 16, &b1), ctx);
    VT_OK(dk_buffer_create(ctx, 1 << 16, &b2), ctx);
    VT_OK(dk_buffer_create(ctx, 1 << 16, &b3), ctx);
    VT_OK(dk_buffer_create(ctx, 1 << 16, &b4), ctx);
    VT_OK(dk_buffer_create(ctx, 1 << 16, &b5), ctx);

    /* weights are views into bw at distinct element offsets */
    x = dk_tensor_nhwc(bx, 0, dt, N, C, H, W);
    w1 = dk_tensor_nchw(bw, 0, dt, 8, 8, 3, 3);               /* 576 */
    shp[0] = 8;
    bias = dk_tensor_contiguous(bw, 600 * es, dt, 1, shp);
    gam = dk_tensor_contiguous(bw, 620 * es, dt, 1, shp);
    bet = dk_tensor_contiguous(bw, 640 * es, dt, 1, shp);
    wt = dk_tensor_nchw(bw, 700 * es, dt, 8, 4, 3, 3);         /* 288 */
    w3 = dk_tensor_nchw(bw, 1000 * es, dt, 4, 4, 3, 3);        /* 144 */
    shp[0] = 4;
    g2 = dk_tensor_contiguous(bw, 1200 * es, dt, 1, shp);
    shp[0] = 4; shp[1] = 6;
    wm = dk_tensor_contiguous(bw, 1300 * es, dt, 2, shp);      /* [K=4, N=6] */

    t1 = dk_tensor_nhwc(b1, 0, dt, N, 8, H, W);
    dk_conv2d_desc_init(&cd);
    cd.pad_h = cd.pad_w = 1;
    cd.activation = DK_ACT_SILU;
    VT_OK(dk_conv2d(ctx, &cd, &x, &w1, &bias, NULL, &t1), ctx);
    dk_group_norm_desc_init(&gd);
    gd.groups = 4;
    gd.activation = DK_ACT_SILU;
    VT_OK(dk_group_norm(ctx, &gd, &t1, &gam, &bet, &t1), ctx);
    /* transposed conv: 6x5 -> 12x10 (k3 s2 p1 op1), NCHW output */
    t2 = dk_tensor_nchw(b2, 0, dt, N, 4, 12, 10);
    dk_conv_transpose2d_desc_init(&td);
    td.stride_h = td.stride_w = 2;
    td.pad_h = td.pad_w = 1;
    td.output_padding_h = td.output_padding_w = 1;
    VT_OK(dk_conv_transpose2d(ctx, &td, &t1, &wt, NULL, NULL, &t2), ctx);
    /* conv on the 2x-upsampled t2 (24x20, s2 -> 12x10) with t2 as residual */
    t3 = dk_tensor_nhwc(b3, 0, dt, N, 4, 12, 10);
    dk_conv2d_desc_init(&cd);
    cd.pad_h = cd.pad_w = 1;
    cd.stride_h = cd.stride_w = 2;
    cd.upsample = 2;
    cd.residual_scale = 0.5f;
    VT_OK(dk_conv2d(ctx, &cd, &t2, &w3, NULL, &t2, &t3), ctx);
    /* attention over the 120 pixels of t3 (channels-last = [B, H=1, N, D] view) */
    q.buffer = b3; q.offset = 0; q.dtype = dt; q.ndim = 4;
    q.shape[0] = 1; q.shape[1] = 1; q.shape[2] = 120; q.shape[3] = 4;
    q.strides[0] = 480; q.strides[1] = 480; q.strides[2] = 4; q.strides[3] = 1;
    shp[0] = 1; shp[1] = 1; shp[2] = 120;
    {
        int64_t s4[4] = {1, 1, 120, 4};
        t4 = dk_tensor_contiguous(b4, 0, dt, 4, s4);
    }
    dk_attention_desc_init(&ad);
    VT_OK(dk_attention(ctx, &ad, &q, &q, &q, &t4), ctx);
    {
        int64_t s2[2] = {120, 4};
        t5 = dk_tensor_contiguous(b4, 0, dt, 2, s2);
    }
    dk_layer_norm_desc_init(&ld);
    VT_OK(dk_layer_norm(ctx, &ld, &t5, &g2, NULL, &t5), ctx);
    {
        int64_t s2[2] = {120, 6};
        t6 = dk_tensor_contiguous(b5, 0, dt, 2, s2);
    }
    dk_matmul_desc_init(&md);
    md.activation = DK_ACT_GELU;
    VT_OK(dk_matmul(ctx, &md, &t5, &wm, NULL, NULL, &t6), ctx);
    VT_OK(dk_sync(ctx), ctx);
    out->n = 120 * 6;
    out->y = (float *)malloc((size_t)out->n * 4);
    if (!out->y) return;
    {
        unsigned char raw[120 * 6 * 4];
        VT_OK(dk_buffer_download(ctx, b5, 0, raw, (uint64_t)out->n * es), ctx);
        for (i = 0; i < out->n; i++) {
            if (dt == DK_F32) memcpy(&out->y[i], raw + i * 4, 4);
            else {
                uint16_t h;
                memcpy(&h, raw + i * 2, 2);
                out->y[i] = dt == DK_F16 ? dk_f16_to_f32(h) : dk_bf16_to_f32(h);
            }
        }
    }
    dk_buffer_destroy(ctx, bx);
    dk_buffer_destroy(ctx, bw);
    dk_buffer_destroy(ctx, b1);
    dk_buffer_destroy(ctx, b2);
    dk_buffer_destroy(ctx, b3);
    dk_buffer_destroy(ctx, b4);
    dk_buffer_destroy(ctx, b5);
}

static void vt_test_chain(dk_context *vk) {
    dk_context *cpu = NULL;
    dk_context_options o;
    float x[240], w[4000];
    int i;
    dk_dtype dts[3] = {DK_F32, DK_F16, DK_BF16};
    double tol[3] = {1e-4, 2e-2, 8e-2};
    dk_context_options_init(&o);
    o.backend = DK_BACKEND_CPU;
    VT_OK(dk_context_create(&o, &cpu), NULL);
    for (i = 0; i < 240; i++) x[i] = vt_rand();
    for (i = 0; i < 4000; i++) w[i] = 0.4f * vt_rand();
    for (i = 0; i < 3; i++) {
        vt_chain_out a = {NULL, 0}, b = {NULL, 0};
        double num = 0, den = 0;
        int64_t j;
        vt_chain(vk, dts[i], x, w, &a);
        vt_chain(cpu, dts[i], x, w, &b);
        if (a.y && b.y) {
            for (j = 0; j < a.n; j++) {
                num += ((double)a.y[j] - b.y[j]) * ((double)a.y[j] - b.y[j]);
                den += (double)b.y[j] * b.y[j];
            }
            CHECK(den > 0 && sqrt(num / den) <= tol[i], "chain %s: rel_l2 %.3e > %.1e", dk_dtype_name(dts[i]),
                     sqrt(num / den), tol[i]);
            printf("chain %s: rel_l2 vs cpu %.3e\n", dk_dtype_name(dts[i]), sqrt(num / (den > 0 ? den : 1)));
        } else {
            CHECK(0, "chain %s did not produce output", dk_dtype_name(dts[i]));
        }
        free(a.y);
        free(b.y);
    }
    dk_context_destroy(cpu);
}

/* ------------------------------------------------------------- buffers */

static void vt_test_buffers(dk_context *ctx) {
    uint64_t n = (40u << 20) + 12, i, bad = 0, cur = 0, peak = 0;
    unsigned char *src = (unsigned char *)malloc(n), *dst = (unsigned char *)malloc(n);
    dk_buffer *b = NULL, *tmp = NULL, *c = NULL;
    uint32_t words[8];
    if (!src || !dst) {
        free(src);
        free(dst);
        return;
    }
    for (i = 0; i < n; i++) src[i] = (unsigned char)(vt_rng = vt_rng * 6364136223846793005ull + 1442695040888963407ull) ^
                                     (unsigned char)(i >> 8);
    memset(dst, 0xcd, n);
    VT_OK(dk_buffer_create(ctx, n, &b), ctx);
    VT_OK(dk_memory_usage(ctx, &cur, &peak), ctx);
    CHECK(cur >= n && peak >= cur, "memory usage %llu/%llu after a %llu-byte buffer", (unsigned long long)cur,
             (unsigned long long)peak, (unsigned long long)n);
    VT_OK(dk_buffer_upload(ctx, b, 0, src, n), ctx); /* more than the staging area: chunked */
    VT_OK(dk_buffer_download(ctx, b, 0, dst, n), ctx);
    for (i = 0; i < n; i++) bad += src[i] != dst[i];
    CHECK(bad == 0, "40 MiB round trip: %llu bytes differ", (unsigned long long)bad);
    /* fill a range in the middle and read around it */
    VT_OK(dk_buffer_fill(ctx, b, 1024, 16, 0xdeadbeefu), ctx);
    VT_OK(dk_buffer_download(ctx, b, 1020, words, 24), ctx);
    CHECK(memcmp(words, src + 1020, 4) == 0 && words[1] == 0xdeadbeefu && words[4] == 0xdeadbeefu &&
                 memcmp(&words[5], src + 1040, 4) == 0,
             "fill wrote %08x %08x .. %08x %08x", words[0], words[1], words[4], words[5]);
    dk_buffer_destroy(ctx, b);
    free(src);
    free(dst);

    /* destroy a buffer whose op is still queued; its memory must not be reused early */
    {
        float in[256], out[256];
        int64_t s1[1] = {256};
        dk_tensor tt, tout;
        int k;
        for (k = 0; k < 256; k++) in[k] = vt_rand();
        VT_OK(dk_buffer_create(ctx, 1024, &tmp), ctx);
        VT_OK(dk_buffer_create(ctx, 1024, &c), ctx);
        VT_OK(dk_buffer_upload(ctx, tmp, 0, in, sizeof in), ctx);
        tt = dk_tensor_contiguous(tmp, 0, DK_F32, 1, s1);
        tout = dk_tensor_contiguous(c, 0, DK_F32, 1, s1);
        VT_OK(dk_activation_forward(ctx, DK_ACT_RELU, &tt, &tout), ctx);
        dk_buffer_destroy(ctx, tmp);
        tmp = NULL;
        VT_OK(dk_buffer_create(ctx, 1024, &tmp), ctx); /* may land where the old one was */
        VT_OK(dk_buffer_fill(ctx, tmp, 0, 1024, 0x7fc00000u), ctx);
        VT_OK(dk_sync(ctx), ctx);
        VT_OK(dk_buffer_download(ctx, c, 0, out, sizeof out), ctx);
        for (k = 0; k < 256; k++)
            if (out[k] != (in[k] > 0 ? in[k] : 0.0f)) break;
        CHECK(k == 256, "relu after destroying its input: element %d is %g, want %g", k, k < 256 ? out[k] : 0.0,
                 k < 256 ? (in[k] > 0 ? in[k] : 0.0) : 0.0);
        dk_buffer_destroy(ctx, tmp);
        dk_buffer_destroy(ctx, c);
    }
}

/* ---------------------------------------- read-backs beside a recording frame */

/* Buffers that the frame being recorded only reads are read back beside it
 * (vk_memory.c): the read must see their contents, and the frame's later write
 * of one must come after the frame's own earlier read.  Also through more than
 * the staging area and into dk_host_alloc memory.  The timer keeps the frame
 * recording (no early submit between dk_timer_begin and dk_timer_end). */
static void vt_test_read_aside(dk_context *ctx) {
    enum { N = 4096 };
    const uint64_t big = (20u << 20) + 8;
    float a[N], got[N], relu[N];
    int64_t s1[1] = {N};
    dk_buffer *ba = NULL, *bb = NULL, *bc = NULL;
    dk_tensor ta, tb;
    unsigned char *src = (unsigned char *)malloc(big), *dst = (unsigned char *)malloc(big), *pinned = NULL;
    uint64_t i, bad = 0;
    int k;
    if (!src || !dst) {
        free(src);
        free(dst);
        return;
    }
    for (k = 0; k < N; k++) a[k] = vt_rand();
    for (i = 0; i < big; i++) src[i] = (unsigned char)(i * 131u + (i >> 12));
    VT_OK(dk_buffer_create(ctx, sizeof a, &ba), ctx);
    VT_OK(dk_buffer_create(ctx, sizeof a, &bb), ctx);
    VT_OK(dk_buffer_create(ctx, big, &bc), ctx);
    VT_OK(dk_buffer_upload(ctx, ba, 0, a, sizeof a), ctx);
    VT_OK(dk_buffer_upload(ctx, bc, 0, src, big), ctx);
    VT_OK(dk_sync(ctx), ctx);
    ta = dk_tensor_contiguous(ba, 0, DK_F32, 1, s1);
    tb = dk_tensor_contiguous(bb, 0, DK_F32, 1, s1);
    VT_OK(dk_timer_begin(ctx), ctx);
    VT_OK(dk_activation_forward(ctx, DK_ACT_RELU, &ta, &tb), ctx); /* reads a: recorded, not submitted */
    memset(got, 0xff, sizeof got);
    VT_OK(dk_buffer_download(ctx, ba, 0, got, sizeof got), ctx);
    CHECK(memcmp(got, a, sizeof a) == 0, "read-back of a buffer the recording frame reads: contents differ");
    memset(dst, 0xcd, big);
    VT_OK(dk_buffer_download(ctx, bc, 0, dst, big), ctx); /* more than the staging area */
    for (i = 0; i < big; i++) bad += src[i] != dst[i];
    CHECK(bad == 0, "20 MiB read-back beside a recording frame: %llu bytes differ", (unsigned long long)bad);
    if (dk_host_alloc(ctx, sizeof a, (void **)&pinned) == DK_OK) {
        memset(pinned, 0xff, sizeof a);
        VT_OK(dk_buffer_download(ctx, ba, 0, pinned, sizeof a), ctx);
        CHECK(memcmp(pinned, a, sizeof a) == 0, "read-back into dk_host_alloc memory beside a recording frame");
        dk_host_free(ctx, pinned);
    }
    VT_OK(dk_add(ctx, 2.0f, &ta, 1.0f, &ta, DK_ACT_NONE, &ta), ctx); /* writes a after the relu read it */
    {
        double ms;
        VT_OK(dk_timer_end(ctx, &ms), ctx);
    }
    VT_OK(dk_buffer_download(ctx, bb, 0, relu, sizeof relu), ctx);
    VT_OK(dk_buffer_download(ctx, ba, 0, got, sizeof got), ctx);
    for (k = 0; k < N; k++)
        if (relu[k] != (a[k] > 0 ? a[k] : 0.0f) || fabsf(got[k] - 3.0f * a[k]) > 1e-6f) break;
    CHECK(k == N, "relu then an in-place add around a read-back: element %d is %g / %g, want %g / %g", k,
          k < N ? relu[k] : 0.0, k < N ? got[k] : 0.0, k < N ? (a[k] > 0 ? a[k] : 0.0) : 0.0, k < N ? 3.0 * a[k] : 0.0);
    dk_buffer_destroy(ctx, ba);
    dk_buffer_destroy(ctx, bb);
    dk_buffer_destroy(ctx, bc);
    free(src);
    free(dst);
}

/* -------------------------------------------------- out of memory, timer */

static void vt_test_oom_and_timer(dk_context *ctx) {
    dk_buffer *huge = NULL, *b = NULL;
    dk_status st = dk_buffer_create(ctx, (uint64_t)1 << 48, &huge);
    float v[64], r[64];
    int64_t s1[1] = {64};
    dk_tensor t;
    double ms = -1;
    int k;
    CHECK(st == DK_ERR_OUT_OF_MEMORY && huge == NULL, "2^48-byte buffer: got %s", dk_status_name(st));
    printf("out of memory as expected: %s\n", dk_last_error(ctx));
    /* the context is still usable */
    for (k = 0; k < 64; k++) v[k] = vt_rand();
    VT_OK(dk_buffer_create(ctx, sizeof v, &b), ctx);
    VT_OK(dk_buffer_upload(ctx, b, 0, v, sizeof v), ctx);
    t = dk_tensor_contiguous(b, 0, DK_F32, 1, s1);
    VT_OK(dk_timer_begin(ctx), ctx);
    VT_OK(dk_add(ctx, 2.0f, &t, 1.0f, &t, DK_ACT_NONE, &t), ctx);
    VT_OK(dk_timer_end(ctx, &ms), ctx);
    CHECK(ms >= 0 && ms < 10000, "timer gave %g ms", ms);
    VT_OK(dk_buffer_download(ctx, b, 0, r, sizeof r), ctx);
    for (k = 0; k < 64; k++)
        if (fabsf(r[k] - 3.0f * v[k]) > 1e-6f) break;
    CHECK(k == 64, "after OOM, add in place: element %d is %g, want %g", k, k < 64 ? r[k] : 0.0,
             k < 64 ? 3.0 * v[k] : 0.0);
    dk_buffer_destroy(ctx, b);
}

/* ------------------------------------------------------ pipeline cache */

static void vt_test_pipeline_cache(const char *path) {
    FILE *f = fopen(path, "wb");
    dk_context *ctx = NULL;
    unsigned char head[32];
    size_t got;
    uint32_t len, ver;
    if (!f) {
        CHECK(0, "cannot write %s", path);
        return;
    }
    fputs("this is not a pipeline cache, it must be ignored ..........", f);
    fclose(f);
    VT_OK(vt_vulkan(&ctx, path), NULL);
    {
        dk_buffer *b = NULL;
        float v[16] = {1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12, 13, -14, 15, -16}, r[16];
        int64_t s1[1] = {16};
        dk_tensor t;
        VT_OK(dk_buffer_create(ctx, sizeof v, &b), ctx);
        VT_OK(dk_buffer_upload(ctx, b, 0, v, sizeof v), ctx);
        t = dk_tensor_contiguous(b, 0, DK_F32, 1, s1);
        VT_OK(dk_activation_forward(ctx, DK_ACT_RELU, &t, &t), ctx);
        VT_OK(dk_buffer_download(ctx, b, 0, r, sizeof r), ctx);
        CHECK(r[0] == 1 && r[1] == 0 && r[14] == 15 && r[15] == 0, "relu with a corrupt cache file");
        dk_buffer_destroy(ctx, b);
    }
    dk_context_destroy(ctx);
    f = fopen(path, "rb");
    CHECK(f != NULL, "the pipeline cache was not written to %s", path);
    if (!f) return;
    got = fread(head, 1, sizeof head, f);
    fclose(f);
    memcpy(&len, head, 4);
    memcpy(&ver, head + 4, 4);
    CHECK(got == 32 && len == 32 && ver == 1, "cache header: %zu bytes, length %u, version %u", got, len, ver);
    VT_OK(vt_vulkan(&ctx, path), NULL); /* and a valid file is accepted */
    dk_context_destroy(ctx);
    remove(path);
}

/* --------------------------------------------------------------- interop */

/* A caller-owned instance, device and VkBuffer: difkern runs on them. */
static void vt_test_wrap(void) {
    VkInstance inst = VK_NULL_HANDLE;
    VkPhysicalDevice pd[8];
    uint32_t npd = 8, fam = 0, nq = 0, i, mt;
    VkDevice dev = VK_NULL_HANDLE;
    VkQueue queue;
    VkBuffer vb = VK_NULL_HANDLE;
    VkDeviceMemory mem = VK_NULL_HANDLE;
    VkQueueFamilyProperties qf[16];
    VkApplicationInfo app;
    VkInstanceCreateInfo ici;
    VkDeviceQueueCreateInfo qi;
    VkPhysicalDeviceVulkan11Features f11;
    VkPhysicalDeviceFeatures2 f2;
    VkDeviceCreateInfo dci;
    VkBufferCreateInfo bci;
    VkMemoryRequirements req;
    VkPhysicalDeviceMemoryProperties mp;
    VkMemoryAllocateInfo mai;
    const char *ext = VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
    float prio = 1.0f, *mapped = NULL;
    dk_context *ctx = NULL;
    dk_context_options o;
    dk_external_memory em;
    dk_buffer *b = NULL;
    int64_t s1[1] = {256};
    dk_tensor tin, tout;
    int k;

    if (volkInitialize() != VK_SUCCESS) return;
    memset(&app, 0, sizeof app);
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.apiVersion = VK_API_VERSION_1_2;
    memset(&ici, 0, sizeof ici);
    ici.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    ici.pApplicationInfo = &app;
    if (vkCreateInstance(&ici, NULL, &inst) != VK_SUCCESS) {
        CHECK(0, "interop: vkCreateInstance");
        return;
    }
    volkLoadInstanceOnly(inst);
    if (vkEnumeratePhysicalDevices(inst, &npd, pd) < 0 || npd == 0) goto done;
    vkGetPhysicalDeviceQueueFamilyProperties(pd[0], &nq, NULL);
    if (nq > 16) nq = 16;
    vkGetPhysicalDeviceQueueFamilyProperties(pd[0], &nq, qf);
    for (fam = 0; fam < nq && !(qf[fam].queueFlags & VK_QUEUE_COMPUTE_BIT); fam++) {}
    memset(&qi, 0, sizeof qi);
    qi.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
    qi.queueFamilyIndex = fam;
    qi.queueCount = 1;
    qi.pQueuePriorities = &prio;
    memset(&f11, 0, sizeof f11);
    f11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
    f11.storageBuffer16BitAccess = VK_TRUE;
    memset(&f2, 0, sizeof f2);
    f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    f2.pNext = &f11;
    memset(&dci, 0, sizeof dci);
    dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
    dci.pNext = &f2;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qi;
    dci.enabledExtensionCount = 1;
    dci.ppEnabledExtensionNames = &ext;
    if (vkCreateDevice(pd[0], &dci, NULL, &dev) != VK_SUCCESS) {
        CHECK(0, "interop: vkCreateDevice");
        goto done;
    }
    volkLoadDevice(dev);
    vkGetDeviceQueue(dev, fam, 0, &queue);
    /* a host-visible buffer of 4 KiB; difkern gets the region at offset 1024 */
    memset(&bci, 0, sizeof bci);
    bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bci.size = 4096;
    bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    if (vkCreateBuffer(dev, &bci, NULL, &vb) != VK_SUCCESS) goto done;
    vkGetBufferMemoryRequirements(dev, vb, &req);
    vkGetPhysicalDeviceMemoryProperties(pd[0], &mp);
    for (mt = 0; mt < mp.memoryTypeCount; mt++)
        if ((req.memoryTypeBits & (1u << mt)) &&
            (mp.memoryTypes[mt].propertyFlags & (VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)) ==
                (VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT))
            break;
    memset(&mai, 0, sizeof mai);
    mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = mt;
    if (mt == mp.memoryTypeCount || vkAllocateMemory(dev, &mai, NULL, &mem) != VK_SUCCESS ||
        vkBindBufferMemory(dev, vb, mem, 0) != VK_SUCCESS ||
        vkMapMemory(dev, mem, 0, VK_WHOLE_SIZE, 0, (void **)&mapped) != VK_SUCCESS) {
        CHECK(0, "interop: cannot set up a host-visible buffer");
        goto done;
    }
    for (i = 0; i < 1024; i++) mapped[i] = vt_rand();

    dk_context_options_init(&o);
    o.backend = DK_BACKEND_VULKAN;
    o.vk_instance = inst;
    o.vk_physical_device = pd[0];
    o.vk_device = dev;
    o.vk_queue = queue;
    o.vk_queue_family = fam;
    if (dk_context_create(&o, &ctx) != DK_OK) {
        CHECK(0, "interop: dk_context_create on the caller's device: %s", dk_last_error(NULL));
        goto done;
    }
    memset(&em, 0, sizeof em);
    em.kind = DK_EXTERNAL_VK_BUFFER;
    em.vk_buffer = (uint64_t)(uintptr_t)vb;
    em.offset = 1024;
    em.size = 3072;
    if (dk_buffer_wrap(ctx, &em, &b) != DK_OK) {
        CHECK(0, "interop: dk_buffer_wrap: %s", dk_last_error(ctx));
        goto done;
    }
    /* y (floats 512..767 of the VkBuffer) = tanh(x (floats 256..511)) */
    tin = dk_tensor_contiguous(b, 0, DK_F32, 1, s1);
    tout = dk_tensor_contiguous(b, 1024, DK_F32, 1, s1);
    if (dk_activation_forward(ctx, DK_ACT_TANH, &tin, &tout) != DK_OK || dk_sync(ctx) != DK_OK) {
        CHECK(0, "interop: tanh on the wrapped buffer: %s", dk_last_error(ctx));
        goto done;
    }
    for (k = 0; k < 256; k++)
        if (fabsf(mapped[512 + k] - tanhf(mapped[256 + k])) > 2e-6f) break;
    CHECK(k == 256, "interop: element %d is %g, want %g", k, k < 256 ? mapped[512 + k] : 0.0,
             k < 256 ? tanh(mapped[256 + k]) : 0.0);
    printf("interop on a caller's VkDevice/VkBuffer: %s\n", k == 256 ? "ok" : "wrong");
done:
    dk_buffer_destroy(ctx, b);
    dk_context_destroy(ctx);
    if (dev) {
        if (vb) vkDestroyBuffer(dev, vb, NULL);
        if (mem) vkFreeMemory(dev, mem, NULL);
        vkDestroyDevice(dev, NULL);
    }
    vkDestroyInstance(inst, NULL);
}

int main(int argc, char **argv) {
    dk_context *ctx = NULL;
    dk_status st;
    if (argc > 1 && strcmp(argv[1], "--expect-unavailable") == 0) return vt_expect_unavailable();
    if (argc > 1 && strcmp(argv[1], "--expect-bad-device") == 0) return vt_expect_bad_device();
    if (!dk_backend_compiled(DK_BACKEND_VULKAN)) {
        printf("SKIP: vulkan backend not compiled in\n");
        return 77;
    }
    st = vt_vulkan(&ctx, NULL);
    if (st == DK_ERR_BACKEND_UNAVAILABLE) {
        printf("SKIP: %s\n", dk_last_error(NULL));
        return 77;
    }
    if (st != DK_OK) {
        printf("FAIL: dk_context_create: %s: %s\n", dk_status_name(st), dk_last_error(NULL));
        return 1;
    }
    printf("%s\n", dk_context_describe(ctx));
    vt_test_chain(ctx);
    vt_test_buffers(ctx);
    vt_test_read_aside(ctx);
    vt_test_oom_and_timer(ctx);
    st = dk_sync(ctx);
    CHECK(st == DK_OK, "final sync: %s: %s", dk_status_name(st), dk_last_error(ctx));
    dk_context_destroy(ctx);
    vt_test_pipeline_cache(argc > 1 ? argv[1] : "vk_backend_test_pipelines.bin");
    vt_test_wrap();
    printf("%s (%d failure%s)\n", failures ? "FAILED" : "PASSED", failures, failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
