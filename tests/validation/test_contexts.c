/* Buffers belong to the context that made them, and misuse is an error, never a
 * wrong answer or a crash (argv[1]: the backend of the first context, cpu or
 * vulkan; the second context is always a CPU one, and where the first is CPU a
 * second CPU context too):
 *   - a buffer of another context as an op's input, output, weight or residual,
 *     or in upload / download / fill / invalidate / destroy: DK_ERR_INVALID_ARGUMENT
 *     naming the argument, the output untouched, the memory counters unchanged;
 *   - the prepared-weight cache never serves one context's weights for another's
 *     buffer (the conv result of each context is its own);
 *   - dk_timer_end without dk_timer_begin; options->num_threads above DK_MAX_THREADS;
 *   - the inline tensor helpers with sizes whose product overflows int64 give
 *     a view every op rejects (UBSan would stop on the overflow itself);
 *   - AUTO with DIFKERN_VULKAN_DEVICE / DIFKERN_HIP_DEVICE set takes that backend
 *     and device, or fails naming the variable (and the devices present), never
 *     the CPU backend in silence.
 * Exit 77 (skipped) when the backend is not on this machine. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "backend_test.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TC_POISON 0x7fc00bad /* a NaN no op writes */

/* A 1x1 conv of a [1, 2, 2, 2] f32 input with a [2, 2, 1, 1] weight in ctx:
 * buffers x (value vx), w (value vw), y (poisoned). */
typedef struct tc_conv {
    dk_buffer *x, *w, *y;
} tc_conv;

static int tc_conv_make(dk_context *ctx, float vx, float vw, tc_conv *c) {
    float hx[8], hw[4];
    int i;
    for (i = 0; i < 8; i++) hx[i] = vx;
    for (i = 0; i < 4; i++) hw[i] = vw;
    memset(c, 0, sizeof *c);
    return dk_buffer_create(ctx, sizeof hx, &c->x) == DK_OK && dk_buffer_create(ctx, sizeof hw, &c->w) == DK_OK &&
           dk_buffer_create(ctx, sizeof hx, &c->y) == DK_OK && dk_buffer_upload(ctx, c->x, 0, hx, sizeof hx) == DK_OK &&
           dk_buffer_upload(ctx, c->w, 0, hw, sizeof hw) == DK_OK &&
           dk_buffer_fill(ctx, c->y, 0, sizeof hx, TC_POISON) == DK_OK;
}

static void tc_conv_free(dk_context *ctx, tc_conv *c) {
    dk_buffer_destroy(ctx, c->x);
    dk_buffer_destroy(ctx, c->w);
    dk_buffer_destroy(ctx, c->y);
}

static dk_status tc_conv_run(dk_context *ctx, dk_buffer *x, dk_buffer *w, dk_buffer *y) {
    dk_conv2d_desc d;
    dk_tensor tx = dk_tensor_nchw(x, 0, DK_F32, 1, 2, 2, 2), ty = dk_tensor_nchw(y, 0, DK_F32, 1, 2, 2, 2);
    dk_tensor tw = dk_tensor_nchw(w, 0, DK_F32, 2, 2, 1, 1);
    dk_conv2d_desc_init(&d);
    return dk_conv2d(ctx, &d, &tx, &tw, NULL, NULL, &ty);
}

/* y[0] after a download, or -1e30 when the download fails. */
static float tc_first(dk_context *ctx, dk_buffer *y) {
    float v[8];
    if (dk_buffer_download(ctx, y, 0, v, sizeof v) != DK_OK) return -1e30f;
    return v[0];
}

static int tc_is_poison(dk_context *ctx, dk_buffer *y) {
    uint32_t v[8];
    int i;
    if (dk_buffer_download(ctx, y, 0, v, sizeof v) != DK_OK) return 0;
    for (i = 0; i < 8; i++)
        if (v[i] != TC_POISON) return 0;
    return 1;
}

static int tc_foreign(dk_status st, dk_context *ctx, const char *what) {
    return st == DK_ERR_INVALID_ARGUMENT && strstr(dk_last_error(ctx), "belongs to another context") &&
           strstr(dk_last_error(ctx), what);
}

/* Two contexts whose buffers were made in the same order: each conv sees its own
 * weights (an output is the sum over 2 input channels of x * w: 4 in A, 8 in B),
 * and every use of a buffer in the other context is refused. */
static void tc_ownership(dk_context *a, dk_context *b, const char *na) {
    tc_conv ca, cb;
    uint64_t cur0 = 0, peak0 = 0, cur1 = 0, peak1 = 0;
    dk_status st;
    float host[8] = {0};
    dk_group_norm_desc gn;
    dk_tensor gx, gy;
    if (!tc_conv_make(a, 1.0f, 2.0f, &ca) || !tc_conv_make(b, 1.0f, 4.0f, &cb)) {
        BT_CHECK(0, "setup: %s / %s", dk_last_error(a), dk_last_error(b));
        tc_conv_free(a, &ca);
        tc_conv_free(b, &cb);
        return;
    }
    /* Each context runs its own conv first: the weight caches hold entries. */
    BT_CHECK(tc_conv_run(a, ca.x, ca.w, ca.y) == DK_OK && tc_first(a, ca.y) == 4.0f, "%s own conv: %g (%s)", na,
             (double)tc_first(a, ca.y), dk_last_error(a));
    BT_CHECK(tc_conv_run(b, cb.x, cb.w, cb.y) == DK_OK && tc_first(b, cb.y) == 8.0f, "cpu own conv: %g (%s)",
             (double)tc_first(b, cb.y), dk_last_error(b));
    /* B with A's weight: refused, B's output untouched (it used to give B's cached 8). */
    BT_CHECK(dk_buffer_fill(b, cb.y, 0, 32, TC_POISON) == DK_OK, "refill");
    st = tc_conv_run(b, cb.x, ca.w, cb.y);
    BT_CHECK(tc_foreign(st, b, "w.buffer") && tc_is_poison(b, cb.y), "%s weight in a cpu conv: %s '%s'", na,
             dk_status_name(st), dk_last_error(b));
    st = tc_conv_run(b, ca.x, cb.w, cb.y);
    BT_CHECK(tc_foreign(st, b, "x.buffer") && tc_is_poison(b, cb.y), "%s input in a cpu conv: %s '%s'", na,
             dk_status_name(st), dk_last_error(b));
    st = tc_conv_run(b, cb.x, cb.w, ca.y);
    BT_CHECK(tc_foreign(st, b, "y.buffer"), "%s output in a cpu conv: %s '%s'", na, dk_status_name(st),
             dk_last_error(b));
    st = tc_conv_run(a, ca.x, cb.w, ca.y);
    BT_CHECK(tc_foreign(st, a, "w.buffer"), "cpu weight in a %s conv: %s '%s'", na, dk_status_name(st),
             dk_last_error(a));
    /* The GroupNorm that overflowed the heap with a foreign buffer. */
    dk_group_norm_desc_init(&gn);
    gn.groups = 1;
    gx = dk_tensor_nchw(ca.x, 0, DK_F32, 1, 2, 2, 2);
    gy = dk_tensor_nchw(cb.y, 0, DK_F32, 1, 2, 2, 2);
    st = dk_group_norm(b, &gn, &gx, NULL, NULL, &gy);
    BT_CHECK(tc_foreign(st, b, "x.buffer"), "%s buffer in a cpu group_norm: %s '%s'", na, dk_status_name(st),
             dk_last_error(b));
    st = dk_prepare_weight(b, DK_WEIGHT_CONV2D, &gx);
    BT_CHECK(tc_foreign(st, b, "buffer"), "dk_prepare_weight of a foreign buffer: %s '%s'", dk_status_name(st),
             dk_last_error(b));
    /* Transfers and buffer calls. */
    st = dk_buffer_upload(b, ca.x, 0, host, sizeof host);
    BT_CHECK(tc_foreign(st, b, "dk_buffer_upload"), "upload: %s '%s'", dk_status_name(st), dk_last_error(b));
    st = dk_buffer_download(b, ca.x, 0, host, sizeof host);
    BT_CHECK(tc_foreign(st, b, "dk_buffer_download"), "download: %s '%s'", dk_status_name(st), dk_last_error(b));
    st = dk_buffer_fill(b, ca.x, 0, sizeof host, 0);
    BT_CHECK(tc_foreign(st, b, "dk_buffer_fill"), "fill: %s '%s'", dk_status_name(st), dk_last_error(b));
    st = dk_buffer_invalidate(b, ca.w);
    BT_CHECK(tc_foreign(st, b, "dk_buffer_invalidate"), "invalidate: %s '%s'", dk_status_name(st), dk_last_error(b));
    /* Destroy through the wrong context: nothing happens but the message. */
    dk_memory_usage(a, &cur0, &peak0);
    dk_memory_usage(b, &cur1, &peak1);
    dk_buffer_destroy(b, ca.x);
    BT_CHECK(strstr(dk_last_error(b), "dk_buffer_destroy") && strstr(dk_last_error(b), "another context"),
             "destroy through the wrong context: '%s'", dk_last_error(b));
    {
        uint64_t c0 = 0, c1 = 0;
        dk_memory_usage(a, &c0, NULL);
        dk_memory_usage(b, &c1, NULL);
        BT_CHECK(c0 == cur0 && c1 == cur1, "memory counters moved: %llu -> %llu, %llu -> %llu",
                 (unsigned long long)cur0, (unsigned long long)c0, (unsigned long long)cur1, (unsigned long long)c1);
    }
    /* A's buffers still work in A, with A's weights. */
    BT_CHECK(dk_buffer_fill(a, ca.y, 0, 32, TC_POISON) == DK_OK && tc_conv_run(a, ca.x, ca.w, ca.y) == DK_OK &&
                 tc_first(a, ca.y) == 4.0f,
             "%s conv after the refusals: %g (%s)", na, (double)tc_first(a, ca.y), dk_last_error(a));
    tc_conv_free(a, &ca);
    tc_conv_free(b, &cb);
}

static void tc_timer(dk_context *ctx, const char *name) {
    double ms = 123.0;
    dk_status st = dk_timer_end(ctx, &ms);
    BT_CHECK(st == DK_ERR_INVALID_ARGUMENT && strstr(dk_last_error(ctx), "no dk_timer_begin") && ms == 0.0,
             "%s: dk_timer_end without begin: %s %g '%s'", name, dk_status_name(st), ms, dk_last_error(ctx));
    st = dk_timer_begin(ctx);
    if (st == DK_OK) st = dk_timer_end(ctx, &ms);
    BT_CHECK(st == DK_OK && ms >= 0.0 && ms < 60000.0, "%s: begin/end: %s %g", name, dk_status_name(st), ms);
    st = dk_timer_end(ctx, &ms);
    BT_CHECK(st == DK_ERR_INVALID_ARGUMENT, "%s: a second dk_timer_end: %s", name, dk_status_name(st));
}

static void tc_threads_option(void) {
    dk_context_options o;
    dk_context *c = NULL;
    dk_status st;
    dk_context_options_init(&o);
    o.backend = DK_BACKEND_CPU;
    o.num_threads = 3000;
    st = dk_context_create(&o, &c);
    BT_CHECK(st == DK_ERR_INVALID_ARGUMENT && !c && strstr(dk_last_error(NULL), "num_threads (=3000)"),
             "num_threads 3000: %s '%s'", dk_status_name(st), dk_last_error(NULL));
    o.num_threads = DK_MAX_THREADS + 1;
    st = dk_context_create(&o, &c);
    BT_CHECK(st == DK_ERR_INVALID_ARGUMENT && !c, "num_threads DK_MAX_THREADS + 1: %s", dk_status_name(st));
    o.num_threads = 2;
    st = dk_context_create(&o, &c);
    BT_CHECK(st == DK_OK, "num_threads 2: %s", dk_last_error(NULL));
    dk_context_destroy(c);
}

static void tc_helpers(dk_context *ctx) {
    const int64_t big = (int64_t)1 << 40;
    int64_t shape[4] = {big, big, 2, 2};
    dk_tensor t;
    dk_buffer *buf = NULL;
    BT_CHECK(dk_buffer_create(ctx, 64, &buf) == DK_OK, "buffer: %s", dk_last_error(ctx));
    t = dk_tensor_nchw(buf, 0, DK_F32, big, big, big, 2);
    BT_CHECK(t.ndim == 0, "dk_tensor_nchw with 2^120 elements: ndim %d", (int)t.ndim);
    BT_CHECK(dk_activation_forward(ctx, DK_ACT_RELU, &t, &t) == DK_ERR_INVALID_ARGUMENT &&
                 strstr(dk_last_error(ctx), "ndim (=0)"),
             "op on the overflowed nchw view: '%s'", dk_last_error(ctx));
    t = dk_tensor_nhwc(buf, 0, DK_F32, 2, big, big, 1);
    BT_CHECK(t.ndim == 0, "dk_tensor_nhwc with 2^81 elements: ndim %d", (int)t.ndim);
    t = dk_tensor_nhwc(buf, 0, DK_F32, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX);
    BT_CHECK(t.ndim == 0, "dk_tensor_nhwc of INT64_MAX sizes: ndim %d", (int)t.ndim);
    t = dk_tensor_nchw(buf, 0, DK_F32, 1, -3, 2, 2);
    BT_CHECK(t.ndim == 0, "dk_tensor_nchw with a negative size: ndim %d", (int)t.ndim);
    t = dk_tensor_contiguous(buf, 0, DK_F32, 4, shape);
    BT_CHECK(t.ndim == 0, "dk_tensor_contiguous with 2^82 elements: ndim %d", (int)t.ndim);
    t = dk_tensor_contiguous(buf, 0, DK_F32, 2, NULL);
    BT_CHECK(t.ndim == 0, "dk_tensor_contiguous with a NULL shape: ndim %d", (int)t.ndim);
    t = dk_tensor_contiguous(buf, 0, DK_F32, 7, shape);
    BT_CHECK(t.ndim == 0, "dk_tensor_contiguous with ndim 7: ndim %d", (int)t.ndim);
    shape[0] = 2;
    shape[1] = 2;
    t = dk_tensor_contiguous(buf, 0, DK_F32, 4, shape);
    BT_CHECK(t.ndim == 4 && t.strides[0] == 8 && t.strides[3] == 1 && dk_tensor_numel(&t) == 16,
             "dk_tensor_contiguous [2,2,2,2]: ndim %d strides[0] %lld", (int)t.ndim, (long long)t.strides[0]);
    t.shape[0] = big;
    t.shape[1] = big;
    BT_CHECK(dk_tensor_numel(&t) == -1, "dk_tensor_numel of 2^82 elements: %lld", (long long)dk_tensor_numel(&t));
    t.ndim = 9;
    BT_CHECK(dk_tensor_numel(&t) == -1, "dk_tensor_numel with ndim 9");
    dk_buffer_destroy(ctx, buf);
}

/* AUTO context with variable var set to value (then unset); *out NULL on failure. */
static dk_status tc_auto_with(const char *var, const char *value, dk_context **out) {
    dk_context_options o;
    dk_status st;
    dk_context_options_init(&o);
    *out = NULL;
    setenv(var, value, 1);
    st = dk_context_create(&o, out);
    unsetenv(var);
    return st;
}

static void tc_device_env(void) {
    dk_context_options o;
    dk_context *v = NULL, *c = NULL;
    dk_status st;
    const char *env_backend = getenv("DIFKERN_BACKEND");
    if (env_backend && env_backend[0] && strcmp(env_backend, "auto") != 0) return; /* AUTO not in play */
    /* a name no device has: an error that names the variable and lists the devices */
    st = tc_auto_with("DIFKERN_VULKAN_DEVICE", "no-such-gpu-xyz", &c);
    BT_CHECK(st != DK_OK && !c && strstr(dk_last_error(NULL), "DIFKERN_VULKAN_DEVICE") &&
                 strstr(dk_last_error(NULL), "no-such-gpu-xyz"),
             "AUTO, DIFKERN_VULKAN_DEVICE naming no device: %s '%s' (backend %s)", dk_status_name(st),
             dk_last_error(NULL), c ? dk_backend_name(dk_context_backend(c)) : "none");
    if (dk_backend_compiled(DK_BACKEND_VULKAN) && st != DK_OK)
        BT_CHECK(strstr(dk_last_error(NULL), "devices:") || strstr(dk_last_error(NULL), "no Vulkan device"),
                 "AUTO, DIFKERN_VULKAN_DEVICE naming no device: no device list in '%s'", dk_last_error(NULL));
    dk_context_destroy(c);
    st = tc_auto_with("DIFKERN_HIP_DEVICE", "not-an-index", &c);
    BT_CHECK(st != DK_OK && !c && strstr(dk_last_error(NULL), "DIFKERN_HIP_DEVICE"),
             "AUTO, DIFKERN_HIP_DEVICE='not-an-index': %s '%s'", dk_status_name(st), dk_last_error(NULL));
    dk_context_destroy(c);
    /* the Vulkan device this machine has, named: AUTO gives the vulkan backend on it */
    dk_context_options_init(&o);
    o.backend = DK_BACKEND_VULKAN;
    if (dk_context_create(&o, &v) != DK_OK) return;
    {
        /* lavapipe calls itself llvmpipe; its usual name must select it too */
        const char *name = strstr(dk_context_device_name(v), "llvmpipe") ? "lavapipe" : dk_context_device_name(v);
        st = tc_auto_with("DIFKERN_VULKAN_DEVICE", name, &c);
        BT_CHECK(st == DK_OK && c && dk_context_backend(c) == DK_BACKEND_VULKAN &&
                     strcmp(dk_context_device_name(c), dk_context_device_name(v)) == 0,
                 "AUTO, DIFKERN_VULKAN_DEVICE='%s': %s '%s' (backend %s)", name, dk_status_name(st),
                 dk_last_error(NULL), c ? dk_backend_name(dk_context_backend(c)) : "none");
        dk_context_destroy(c);
        st = tc_auto_with("DIFKERN_VULKAN_DEVICE", "0", &c);
        BT_CHECK(st == DK_OK && c && dk_context_backend(c) == DK_BACKEND_VULKAN,
                 "AUTO, DIFKERN_VULKAN_DEVICE='0': %s '%s'", dk_status_name(st), dk_last_error(NULL));
        dk_context_destroy(c);
        st = tc_auto_with("DIFKERN_VULKAN_DEVICE", "99", &c);
        BT_CHECK(st != DK_OK && !c && strstr(dk_last_error(NULL), "device index 99") &&
                     strstr(dk_last_error(NULL), "devices:"),
                 "AUTO, DIFKERN_VULKAN_DEVICE='99': %s '%s'", dk_status_name(st), dk_last_error(NULL));
        dk_context_destroy(c);
    }
    dk_context_destroy(v);
}

int main(int argc, char **argv) {
    dk_context_options opt;
    dk_context *a = NULL, *b = NULL;
    const char *name;
    dk_context_options cpu;
    int rc = bt_context(argc, argv, &opt, &a, &name);
    if (rc) return rc;
    dk_context_options_init(&cpu);
    cpu.backend = DK_BACKEND_CPU;
    if (dk_context_create(&cpu, &b) != DK_OK) {
        printf("FAIL: cpu context: %s\n", dk_last_error(NULL));
        return 1;
    }
    tc_ownership(a, b, name);
    tc_timer(a, name);
    tc_timer(b, "cpu");
    tc_threads_option();
    tc_helpers(a);
    tc_device_env();
    dk_context_destroy(b);
    dk_context_destroy(a);
    if (bt_failures) {
        printf("%d check(s) failed\n", bt_failures);
        return 1;
    }
    printf("contexts (%s): all checks passed\n", name);
    return 0;
}
