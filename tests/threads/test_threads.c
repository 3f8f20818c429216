/* The thread contract of include/difkern.h, on one backend (argv[1]: cpu or vulkan;
 * argv[2]: threads, default 4; argv[3]: rounds per thread, default 3):
 *   1. separate contexts in separate threads run at once and each computes exactly
 *      what a single thread computes (conv2d + bias + SiLU, GroupNorm + SiLU, a
 *      linear layer, attention, on seeded random data, bit for bit);
 *   2. one context shared by all threads: the same work, each thread with its own
 *      buffers, plus buffer churn, memory queries and failing calls whose message
 *      each thread must read back as its own through dk_last_error(ctx).
 * Run under ThreadSanitizer on the CPU backend and on lavapipe (tools/test.sh;
 * on Vulkan the pipelines build on compile threads too) and as a stress test.  Exit 77 (skipped) when the backend is not on this machine. */
#include <difkern.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#define TT_C 8     /* channels */
#define TT_S 8     /* image side */
#define TT_N (TT_C * TT_S * TT_S)
#define TT_MAX_THREADS 16

static dk_backend_kind tt_backend;

/* The bytes each work item leaves: the final tensors, read back. */
typedef struct tt_result {
    float conv[TT_N], norm[TT_N], lin[TT_N], attn[TT_N];
} tt_result;

static uint32_t tt_rand(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

static void tt_fill(float *p, int n, uint64_t *s, float scale) {
    int i;
    for (i = 0; i < n; i++) p[i] = scale * ((float)(tt_rand(s) % 2001u) / 1000.0f - 1.0f);
}

static int tt_make_context(dk_context **ctx) {
    dk_context_options o;
    dk_context_options_init(&o);
    o.backend = tt_backend;
    o.num_threads = 2;
    return dk_context_create(&o, ctx);
}

/* One work item on ctx with data from seed; 0 on success, else the failing
 * call's message is in msg. */
static int tt_work(dk_context *ctx, uint64_t seed, tt_result *r, char *msg, size_t cap) {
    float hx[TT_N], hw[TT_C * TT_C * 9], hb[TT_C], hg[TT_C], hl[TT_C * TT_C];
    dk_buffer *bx = NULL, *bw = NULL, *bb = NULL, *bg = NULL, *bl = NULL, *by = NULL, *bn = NULL, *bz = NULL,
              *ba = NULL;
    dk_tensor x, w, b, g, y, n, l, z, q, a, lx, lz;
    int64_t ws[4] = {TT_C, TT_C, 3, 3}, cs[1] = {TT_C}, ls[2] = {TT_C, TT_C};
    dk_conv2d_desc cd;
    dk_group_norm_desc gd;
    dk_matmul_desc md;
    dk_attention_desc ad;
    dk_status st;
    uint64_t s = seed;
    const uint64_t fb = sizeof(float) * TT_N;
    tt_fill(hx, TT_N, &s, 1.0f);
    tt_fill(hw, TT_C * TT_C * 9, &s, 0.3f);
    tt_fill(hb, TT_C, &s, 0.1f);
    tt_fill(hg, TT_C, &s, 1.0f);
    tt_fill(hl, TT_C * TT_C, &s, 0.4f);
    st = dk_buffer_create(ctx, fb, &bx);
    if (st == DK_OK) st = dk_buffer_create(ctx, sizeof hw, &bw);
    if (st == DK_OK) st = dk_buffer_create(ctx, sizeof hb, &bb);
    if (st == DK_OK) st = dk_buffer_create(ctx, sizeof hg, &bg);
    if (st == DK_OK) st = dk_buffer_create(ctx, sizeof hl, &bl);
    if (st == DK_OK) st = dk_buffer_create(ctx, fb, &by);
    if (st == DK_OK) st = dk_buffer_create(ctx, fb, &bn);
    if (st == DK_OK) st = dk_buffer_create(ctx, fb, &bz);
    if (st == DK_OK) st = dk_buffer_create(ctx, fb, &ba);
    if (st == DK_OK) st = dk_buffer_upload(ctx, bx, 0, hx, fb);
    if (st == DK_OK) st = dk_buffer_upload(ctx, bw, 0, hw, sizeof hw);
    if (st == DK_OK) st = dk_buffer_upload(ctx, bb, 0, hb, sizeof hb);
    if (st == DK_OK) st = dk_buffer_upload(ctx, bg, 0, hg, sizeof hg);
    if (st == DK_OK) st = dk_buffer_upload(ctx, bl, 0, hl, sizeof hl);
    if (st == DK_OK) st = dk_buffer_fill(ctx, ba, 0, fb, 0x7fc00bad); /* poison: every element must be written */
    x = dk_tensor_nhwc(bx, 0, DK_F32, 1, TT_C, TT_S, TT_S);
    y = dk_tensor_nhwc(by, 0, DK_F32, 1, TT_C, TT_S, TT_S);
    n = dk_tensor_nhwc(bn, 0, DK_F32, 1, TT_C, TT_S, TT_S);
    w = dk_tensor_contiguous(bw, 0, DK_F32, 4, ws);
    b = dk_tensor_contiguous(bb, 0, DK_F32, 1, cs);
    g = dk_tensor_contiguous(bg, 0, DK_F32, 1, cs);
    l = dk_tensor_contiguous(bl, 0, DK_F32, 2, ls);
    /* conv2d 3x3 + bias + SiLU */
    dk_conv2d_desc_init(&cd);
    cd.pad_h = cd.pad_w = 1;
    cd.activation = DK_ACT_SILU;
    if (st == DK_OK) st = dk_conv2d(ctx, &cd, &x, &w, &b, NULL, &y);
    /* GroupNorm(4) + SiLU */
    dk_group_norm_desc_init(&gd);
    gd.groups = 4;
    gd.activation = DK_ACT_SILU;
    if (st == DK_OK) st = dk_group_norm(ctx, &gd, &y, &g, &b, &n);
    /* a linear layer over the channels: the pixels are the rows */
    {
        int64_t rs[2] = {TT_S * TT_S, TT_C};
        lx = dk_tensor_contiguous(bn, 0, DK_F32, 2, rs);
        lz = dk_tensor_contiguous(bz, 0, DK_F32, 2, rs);
    }
    dk_matmul_desc_init(&md);
    if (st == DK_OK) st = dk_linear(ctx, &md, &lx, &l, &b, NULL, &lz);
    /* attention over the 64 pixels, one head of dimension 8 (q = k = v = z) */
    {
        int64_t as[4] = {1, 1, TT_S * TT_S, TT_C};
        z = dk_tensor_contiguous(bz, 0, DK_F32, 4, as);
        q = z;
        a = dk_tensor_contiguous(ba, 0, DK_F32, 4, as);
    }
    dk_attention_desc_init(&ad);
    if (st == DK_OK) st = dk_attention(ctx, &ad, &q, &z, &z, &a);
    if (st == DK_OK) st = dk_buffer_download(ctx, by, 0, r->conv, fb);
    if (st == DK_OK) st = dk_buffer_download(ctx, bn, 0, r->norm, fb);
    if (st == DK_OK) st = dk_buffer_download(ctx, bz, 0, r->lin, fb);
    if (st == DK_OK) st = dk_buffer_download(ctx, ba, 0, r->attn, fb);
    if (st != DK_OK) snprintf(msg, cap, "%s: %s", dk_status_name(st), dk_last_error(ctx));
    dk_buffer_destroy(ctx, bx);
    dk_buffer_destroy(ctx, bw);
    dk_buffer_destroy(ctx, bb);
    dk_buffer_destroy(ctx, bg);
    dk_buffer_destroy(ctx, bl);
    dk_buffer_destroy(ctx, by);
    dk_buffer_destroy(ctx, bn);
    dk_buffer_destroy(ctx, bz);
    dk_buffer_destroy(ctx, ba);
    return st == DK_OK ? 0 : 1;
}

typedef struct tt_thread {
    int index, rounds;
    dk_context *shared;       /* NULL: the thread makes its own context */
    const tt_result *expect;  /* per round: expect[round] */
    int failures;
    char msg[1200];
} tt_thread;

static uint64_t tt_seed(int thread, int round) { return 1000u * (uint64_t)(thread + 1) + (uint64_t)round; }

/* The reference results, one per (thread, round): computed on one thread first. */
static tt_result *tt_expect;

static void tt_fail(tt_thread *t, const char *what) {
    if (!t->failures++) snprintf(t->msg, sizeof t->msg, "thread %d: %s", t->index, what);
}

/* A failing call whose message names this thread, read back at once. */
static void tt_own_error(tt_thread *t, dk_context *ctx) {
    char want[64];
    dk_buffer *b = NULL;
    dk_tensor bad;
    int64_t shape[1] = {4};
    snprintf(want, sizeof want, "thread-%d-marker", t->index);
    if (dk_buffer_create(ctx, 16, &b) != DK_OK) {
        tt_fail(t, dk_last_error(ctx));
        return;
    }
    bad = dk_tensor_contiguous(b, 0, DK_F32, 1, shape);
    bad.offset = 1000000u + (uint64_t)t->index * 4u; /* out of the buffer: the message carries the offset */
    if (dk_activation_forward(ctx, DK_ACT_RELU, &bad, &bad) != DK_ERR_INVALID_ARGUMENT) tt_fail(t, "bad view accepted");
    {
        char off[32];
        snprintf(off, sizeof off, "offset %llu", (unsigned long long)bad.offset);
        if (!strstr(dk_last_error(ctx), off)) {
            char m[1100];
            snprintf(m, sizeof m, "dk_last_error gave another thread's message: want '%s' (%s), got '%s'", off, want,
                     dk_last_error(ctx));
            tt_fail(t, m);
        }
    }
    dk_buffer_destroy(ctx, b);
}

static int tt_main(void *p) {
    tt_thread *t = (tt_thread *)p;
    dk_context *ctx = t->shared;
    int round;
    if (!ctx && tt_make_context(&ctx) != DK_OK) {
        tt_fail(t, dk_last_error(NULL));
        return 0;
    }
    for (round = 0; round < t->rounds; round++) {
        tt_result *r = (tt_result *)malloc(sizeof *r);
        char msg[1100];
        uint64_t cur = 0, peak = 0;
        if (!r) {
            tt_fail(t, "out of memory");
            break;
        }
        if (tt_work(ctx, tt_seed(t->index, round), r, msg, sizeof msg)) tt_fail(t, msg);
        else if (memcmp(r, &t->expect[round], sizeof *r)) tt_fail(t, "result differs from the single-thread run");
        free(r);
        if (dk_memory_usage(ctx, &cur, &peak) != DK_OK || cur > peak) tt_fail(t, "dk_memory_usage");
        if (t->shared) tt_own_error(t, ctx);
        if (dk_sync(ctx) != DK_OK) tt_fail(t, dk_last_error(ctx));
    }
    if (!t->shared) dk_context_destroy(ctx);
    return 0;
}

static int tt_run(const char *phase, dk_context *shared, int nthreads, int rounds) {
    tt_thread t[TT_MAX_THREADS];
    thrd_t th[TT_MAX_THREADS];
    int started[TT_MAX_THREADS];
    int i, failures = 0;
    for (i = 0; i < nthreads; i++) {
        memset(&t[i], 0, sizeof t[i]);
        t[i].index = i;
        t[i].rounds = rounds;
        t[i].shared = shared;
        t[i].expect = &tt_expect[i * rounds];
        started[i] = thrd_create(&th[i], tt_main, &t[i]) == thrd_success;
        if (!started[i]) tt_main(&t[i]); /* no thread to be had: still check the work */
    }
    for (i = 0; i < nthreads; i++) {
        if (started[i]) thrd_join(th[i], NULL);
        if (t[i].failures) {
            printf("FAIL %s: %s (%d failure(s))\n", phase, t[i].msg, t[i].failures);
            failures++;
        }
    }
    printf("%s: %d threads x %d rounds: %s\n", phase, nthreads, rounds, failures ? "FAILED" : "ok");
    return failures;
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "cpu";
    int nthreads = argc > 2 ? atoi(argv[2]) : 4, rounds = argc > 3 ? atoi(argv[3]) : 3;
    dk_context *ref = NULL, *shared = NULL;
    dk_status st;
    int i, j, failures = 0;
    char msg[1100];
    tt_backend = !strcmp(name, "vulkan") ? DK_BACKEND_VULKAN : DK_BACKEND_CPU;
    if (nthreads < 1 || nthreads > TT_MAX_THREADS || rounds < 1 || rounds > 100) {
        printf("usage: test_threads cpu|vulkan [threads 1..%d] [rounds 1..100]\n", TT_MAX_THREADS);
        return 1;
    }
    st = tt_make_context(&ref);
    if (st == DK_ERR_BACKEND_UNAVAILABLE) {
        printf("SKIP: %s backend: %s\n", name, dk_last_error(NULL));
        return 77;
    }
    if (st != DK_OK) {
        printf("FAIL: context: %s\n", dk_last_error(NULL));
        return 1;
    }
    tt_expect = (tt_result *)calloc((size_t)nthreads * (size_t)rounds, sizeof *tt_expect);
    if (!tt_expect) return 1;
    for (i = 0; i < nthreads; i++)
        for (j = 0; j < rounds; j++)
            if (tt_work(ref, tt_seed(i, j), &tt_expect[i * rounds + j], msg, sizeof msg)) {
                printf("FAIL: single-thread reference: %s\n", msg);
                return 1;
            }
    dk_context_destroy(ref);
    failures += tt_run("separate contexts", NULL, nthreads, rounds);
    if (tt_make_context(&shared) != DK_OK) {
        printf("FAIL: shared context: %s\n", dk_last_error(NULL));
        return 1;
    }
    failures += tt_run("one shared context", shared, nthreads, rounds);
    dk_context_destroy(shared);
    free(tt_expect);
    if (failures) return 1;
    printf("threads (%s): all checks passed\n", name);
    return 0;
}
