/* dk_bench: time any op on any backend.
 *
 *   dk_bench [--backend cpu|vulkan|hip|auto] [--dtype f32|f16|bf16] [--layout nchw|nhwc]
 *            (conv3d: nchw means NCDHW, nhwc NDHWC)
 *            [--op OP --shape k=v,...] [--suite NAME] [--list] [--warmup N] [--iters N]
 *            [--warmup-ms MS] [--json FILE]
 *
 * --layout nchw / nhwc: images stored NCHW / NHWC; for the video ops (rms_norm,
 * copy: [N, C, T, H, W]) NCDHW / NDHWC.  `copy` is a dk_convert of the video to
 * the same dtype and layout: the device's copy bandwidth for that tensor, the
 * yardstick of the memory-bound rms_norm (suite wan).
 *
 * Shapes use the syntax of tests/perf/shapes.py (same parameter names and
 * defaults, same FLOP and byte counts), so torch_bench.py times the same thing.
 * Each measurement: warm-up runs, then at least --warmup-ms (default 500) of
 * back-to-back runs, then `iters` runs each bracketed by dk_timer_begin/end
 * (device timestamps on GPU backends, the host clock on the CPU backend); the
 * median is reported with TFLOP/s and GB/s.
 *
 * Why the timed warm-up: on the H100 the SM clock falls from 1980 to 345 MHz
 * after about a second without GPU work (a case's host-side setup takes that
 * long) and the driver raises it again only after ~200 ms of sustained work
 * (nvidia-smi sampled every 100 ms, 2026-11-23).  The CUDA driver's contexts
 * hid this; Vulkan ones did not: with 3 warm-up runs, ops were timed at the
 * low clock, up to 5x slow (conv 128->128 @1024 f16: 13.1 ms cold, 2.5 ms warm). */
#include <difkern.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_MAX_PARAMS 16

typedef struct bench_param {
    const char *key;
    const char *def; /* NULL: required */
} bench_param;

typedef struct bench_opdef {
    const char *op;
    bench_param params[BENCH_MAX_PARAMS];
} bench_opdef;

static const bench_opdef bench_ops[] = {
    {"conv2d", {{"n", "1"}, {"cin", NULL}, {"cout", NULL}, {"h", NULL}, {"w", NULL}, {"k", "3"}, {"s", "1"},
                {"p", "0"}, {"d", "1"}, {"g", "1"}, {"up", "1"}, {"bias", "1"}, {"act", "none"}, {"res", "0"},
                {NULL, NULL}}},
    {"conv_transpose2d", {{"n", "1"}, {"cin", NULL}, {"cout", NULL}, {"h", NULL}, {"w", NULL}, {"k", "3"},
                          {"s", "2"}, {"p", "1"}, {"op", "1"}, {"d", "1"}, {"g", "1"}, {"bias", "1"},
                          {"act", "none"}, {NULL, NULL}}},
    {"matmul", {{"b", "1"}, {"m", NULL}, {"n", NULL}, {"k", NULL}, {"bias", "1"}, {"act", "none"}, {NULL, NULL}}},
    {"group_norm", {{"n", "1"}, {"c", NULL}, {"h", NULL}, {"w", NULL}, {"g", "32"}, {"act", "silu"}, {NULL, NULL}}},
    {"layer_norm", {{"rows", NULL}, {"d", NULL}, {"act", "none"}, {NULL, NULL}}},
    {"attention", {{"b", "1"}, {"h", "1"}, {"n", NULL}, {"nkv", "0"}, {"d", NULL}, {"dv", "0"}, {NULL, NULL}}},
    {"add", {{"n", "1"}, {"c", NULL}, {"h", NULL}, {"w", NULL}, {"act", "none"}, {NULL, NULL}}},
    {"convert", {{"n", "1"}, {"c", NULL}, {"h", NULL}, {"w", NULL}, {"to", "same"}, {"tl", "other"}, {NULL, NULL}}},
    {"upsample", {{"n", "1"}, {"c", NULL}, {"h", NULL}, {"w", NULL}, {"f", "2"}, {NULL, NULL}}},
    {"rms_norm", {{"n", "1"}, {"c", NULL}, {"t", "1"}, {"h", NULL}, {"w", NULL}, {"form", "l2"}, {"act", "none"},
                  {NULL, NULL}}},
    {"copy", {{"n", "1"}, {"c", NULL}, {"t", "1"}, {"h", NULL}, {"w", NULL}, {NULL, NULL}}},
    /* causal conv3d as a video VAE decodes: kt x k x k kernel, pad_front kt-1, spatial
     * padding k/2, t new frames after tc cached ones (dk_conv3d_chunk when tc > 0) */
    {"conv3d", {{"n", "1"}, {"cin", NULL}, {"cout", NULL}, {"t", NULL}, {"h", NULL}, {"w", NULL}, {"kt", "3"},
                {"k", "3"}, {"tc", "0"}, {"bias", "1"}, {"act", "none"}, {NULL, NULL}}},
};
#define BENCH_NUM_OPS (int)(sizeof bench_ops / sizeof bench_ops[0])

/* Named suites: "op spec" lines.  h100: the shapes of the Vulkan/HIP issues;
 * cpu: the same families scaled to a 2-core machine. */
static const char *const bench_suite_h100[] = {
    "conv_transpose2d cin=512,cout=256,h=128,w=128",
    /* the seed conv_transpose's equal-FLOP conv: same channels, 3x3 on its 128x128 input */
    "conv2d cin=512,cout=256,h=128,w=128,p=1",
    "conv2d cin=512,cout=512,h=128,w=128,p=1",
    "conv2d cin=512,cout=512,h=256,w=256,p=1",
    "conv2d cin=512,cout=512,h=512,w=512,p=1",
    "conv2d cin=512,cout=256,h=512,w=512,p=1",
    "conv2d cin=256,cout=256,h=512,w=512,p=1",
    "conv2d cin=256,cout=256,h=1024,w=1024,p=1",
    "conv2d cin=256,cout=128,h=1024,w=1024,p=1",
    "conv2d cin=128,cout=128,h=1024,w=1024,p=1",
    /* an image encoder's first conv: a reduction of 27 (docs/conv.md, shallow reductions) */
    "conv2d cin=3,cout=128,h=1024,w=1024,p=1",
    "group_norm c=512,h=128,w=128",
    "group_norm c=512,h=512,w=512",
    "group_norm c=256,h=1024,w=1024",
    "group_norm c=128,h=1024,w=1024",
    "attention n=4096,d=512",
    "attention n=16384,d=512",
    "attention b=2,h=10,n=4096,d=64",
    /* attention beyond the issues' list: SDXL's cross-attention (77 text tokens), SD 1.5's
     * 64x64-latent self-attention (D 40) and 32x32 (D 80), D 128 (SD3 / Flux heads) */
    "attention b=2,h=10,n=4096,nkv=77,d=64",
    "attention b=2,h=8,n=4096,d=40",
    "attention b=2,h=8,n=1024,d=80",
    "attention b=2,h=10,n=4096,d=128",
    /* linear layers: the SDXL VAE's attention projections (16384 tokens, 512 -> 512) and an SDXL
     * UNet feed-forward (2 x 4096 tokens, 640 -> 5120) */
    "matmul m=16384,n=512,k=512",
    "matmul m=8192,n=5120,k=640",
    NULL};
/* memory: the memory-bound ops a runtime calls outside the fused paths (a VAE's
 * upsample convs fuse the upsample) */
static const char *const bench_suite_memory[] = {
    "add c=256,h=512,w=512",
    "convert c=256,h=512,w=512,to=bf16,tl=same",
    "convert c=256,h=512,w=512,to=f32,tl=other",
    "upsample c=256,h=512,w=512",
    "upsample c=512,h=256,w=256",
    NULL};
/* wan_rms: the RMS norms of the Wan 2.1 video VAE decoder (4 latent frames) at 720p
 * and 480p, each next to a plain copy of the same tensor; run with --dtype bf16
 * --layout nchw,nhwc (NCDHW, NDHWC) */
static const char *const bench_suite_wan_rms[] = {
    "rms_norm c=384,t=4,h=90,w=160",
    "copy c=384,t=4,h=90,w=160",
    "rms_norm c=192,t=4,h=360,w=640",
    "copy c=192,t=4,h=360,w=640",
    "rms_norm c=96,t=4,h=720,w=1280",
    "copy c=96,t=4,h=720,w=1280",
    "rms_norm c=384,t=4,h=60,w=104",
    "copy c=384,t=4,h=60,w=104",
    "rms_norm c=192,t=4,h=240,w=416",
    "copy c=192,t=4,h=240,w=416",
    "rms_norm c=96,t=4,h=480,w=832",
    "copy c=96,t=4,h=480,w=832",
    NULL};
/* wan: the Wan 2.1 VAE decoder's conv3d shapes at 720p and 480p: the causal 3x3x3 convs on
 * a 4-frame chunk after 2 cached frames, per decoder stage (channels 384, 384, 192, 96), and
 * the upsamplers' 3x1x1 time convs (384 -> 768) on a 1-frame chunk after 2 cached frames
 * and on 4 frames */
static const char *const bench_suite_wan[] = {
    "conv3d cin=384,cout=384,t=4,tc=2,h=90,w=160",
    "conv3d cin=384,cout=384,t=4,tc=2,h=180,w=320",
    "conv3d cin=192,cout=192,t=4,tc=2,h=360,w=640",
    "conv3d cin=96,cout=96,t=4,tc=2,h=720,w=1280",
    "conv3d cin=384,cout=384,t=4,tc=2,h=60,w=104",
    "conv3d cin=384,cout=384,t=4,tc=2,h=120,w=208",
    "conv3d cin=192,cout=192,t=4,tc=2,h=240,w=416",
    "conv3d cin=96,cout=96,t=4,tc=2,h=480,w=832",
    "conv3d cin=384,cout=768,t=1,tc=2,h=90,w=160,k=1",
    "conv3d cin=384,cout=768,t=1,tc=2,h=180,w=320,k=1",
    "conv3d cin=384,cout=768,t=4,tc=2,h=90,w=160,k=1",
    "conv3d cin=384,cout=768,t=4,tc=2,h=180,w=320,k=1",
    "conv3d cin=384,cout=768,t=1,tc=2,h=60,w=104,k=1",
    "conv3d cin=384,cout=768,t=1,tc=2,h=120,w=208,k=1",
    NULL};
/* conv3d scaled to a 2-core CPU */
static const char *const bench_suite_wan_cpu[] = {
    "conv3d cin=32,cout=32,t=4,tc=2,h=24,w=40",
    "conv3d cin=32,cout=64,t=1,tc=2,h=24,w=40,k=1",
    NULL};
static const char *const bench_suite_cpu[] = {
    "conv2d cin=256,cout=256,h=32,w=32,p=1",
    "conv2d cin=512,cout=512,h=16,w=16,p=1",
    "conv2d cin=128,cout=128,h=64,w=64,p=1",
    "conv2d cin=128,cout=128,h=32,w=32,k=1",
    "conv_transpose2d cin=512,cout=256,h=16,w=16",
    "matmul m=1024,n=512,k=512",
    "attention n=1024,d=512",
    "attention b=2,h=10,n=1024,d=64",
    "group_norm c=256,h=64,w=64",
    NULL};

typedef struct bench_spec {
    const bench_opdef *def;
    char values[BENCH_MAX_PARAMS][32];
} bench_spec;

/* Splits *cursor at the next sep (strtok_r is not C11). */
static char *bench_token(char **cursor, char sep) {
    char *start = *cursor, *end;
    if (!start || !*start) return NULL;
    end = strchr(start, sep);
    if (end) {
        *end = 0;
        *cursor = end + 1;
    } else {
        *cursor = NULL;
    }
    return start;
}

static const char *bench_get(const bench_spec *s, const char *key) {
    int i;
    for (i = 0; s->def->params[i].key; i++)
        if (!strcmp(s->def->params[i].key, key)) return s->values[i];
    return "";
}
static int64_t bench_int(const bench_spec *s, const char *key) { return strtoll(bench_get(s, key), NULL, 10); }

static int bench_parse(const char *op, const char *text, bench_spec *s) {
    int i, n;
    char buf[512], *tok, *cursor = buf;
    s->def = NULL;
    for (i = 0; i < BENCH_NUM_OPS; i++)
        if (!strcmp(bench_ops[i].op, op)) s->def = &bench_ops[i];
    if (!s->def) {
        fprintf(stderr, "dk_bench: unknown op '%s'\n", op);
        return -1;
    }
    for (n = 0; s->def->params[n].key; n++) s->values[n][0] = 0;
    snprintf(buf, sizeof buf, "%s", text ? text : "");
    while ((tok = bench_token(&cursor, ',')) != NULL) {
        char *eq = strchr(tok, '=');
        int found = 0;
        if (!eq) {
            fprintf(stderr, "dk_bench: '%s' is not key=value\n", tok);
            return -1;
        }
        *eq = 0;
        for (i = 0; i < n; i++)
            if (!strcmp(s->def->params[i].key, tok)) {
                snprintf(s->values[i], sizeof s->values[i], "%s", eq + 1);
                found = 1;
            }
        if (!found) {
            fprintf(stderr, "dk_bench: %s has no parameter '%s'\n", op, tok);
            return -1;
        }
    }
    for (i = 0; i < n; i++) {
        if (s->values[i][0]) continue;
        if (!s->def->params[i].def) {
            fprintf(stderr, "dk_bench: %s needs parameter '%s'\n", op, s->def->params[i].key);
            return -1;
        }
        snprintf(s->values[i], sizeof s->values[i], "%s", s->def->params[i].def);
    }
    /* Relative defaults resolved, as shapes.py does: nkv=0 -> n, dv=0 -> d. */
    if (!strcmp(op, "attention")) {
        for (i = 0; i < n; i++) {
            if (!strcmp(s->def->params[i].key, "nkv") && !strcmp(s->values[i], "0"))
                snprintf(s->values[i], sizeof s->values[i], "%s", bench_get(s, "n"));
            if (!strcmp(s->def->params[i].key, "dv") && !strcmp(s->values[i], "0"))
                snprintf(s->values[i], sizeof s->values[i], "%s", bench_get(s, "d"));
        }
    }
    return 0;
}

static void bench_canonical(const bench_spec *s, char *out, size_t cap) {
    int i;
    size_t used = 0;
    out[0] = 0;
    for (i = 0; s->def->params[i].key && used < cap; i++)
        used += (size_t)snprintf(out + used, cap - used, "%s%s=%s", i ? "," : "", s->def->params[i].key, s->values[i]);
}

static dk_activation bench_act(const char *name) {
    if (!strcmp(name, "relu")) return DK_ACT_RELU;
    if (!strcmp(name, "silu")) return DK_ACT_SILU;
    if (!strcmp(name, "gelu")) return DK_ACT_GELU;
    if (!strcmp(name, "gelu_tanh")) return DK_ACT_GELU_TANH;
    if (!strcmp(name, "tanh")) return DK_ACT_TANH;
    return DK_ACT_NONE;
}

static int bench_dtype(const char *name, dk_dtype *t) {
    if (!strcmp(name, "f32")) *t = DK_F32;
    else if (!strcmp(name, "f16")) *t = DK_F16;
    else if (!strcmp(name, "bf16")) *t = DK_BF16;
    else return -1;
    return 0;
}

/* ---- the run ---- */

#define BENCH_MAX_TENSORS 6

typedef struct bench_run {
    dk_context *ctx;
    dk_buffer *bufs[BENCH_MAX_TENSORS];
    dk_tensor t[BENCH_MAX_TENSORS];
    int count;
    double flops, bytes;
} bench_run;

/* A tensor of random values in [-1, 1] (f32 generated, rounded to dtype). */
static int bench_tensor(bench_run *r, dk_dtype dt, int ndim, const int64_t *shape, int nhwc, unsigned *seed) {
    int64_t numel = 1, i;
    int k;
    size_t es = dk_dtype_size(dt);
    unsigned char *host;
    dk_buffer *b;
    for (k = 0; k < ndim; k++) numel *= shape[k];
    host = (unsigned char *)malloc((size_t)numel * es);
    if (!host) return -1;
    for (i = 0; i < numel; i++) {
        float v;
        *seed = *seed * 1664525u + 1013904223u;
        v = (float)((*seed >> 8) & 0xffff) / 32768.0f - 1.0f;
        if (dt == DK_F32) memcpy(host + i * 4, &v, 4);
        else {
            uint16_t h = dt == DK_F16 ? dk_f32_to_f16(v) : dk_f32_to_bf16(v);
            memcpy(host + i * 2, &h, 2);
        }
    }
    if (dk_buffer_create(r->ctx, (uint64_t)numel * es, &b) != DK_OK ||
        dk_buffer_upload(r->ctx, b, 0, host, (uint64_t)numel * es) != DK_OK) {
        free(host);
        return -1;
    }
    free(host);
    r->bufs[r->count] = b;
    if (ndim == 5)
        r->t[r->count] = nhwc ? dk_tensor_ndhwc(b, 0, dt, shape[0], shape[1], shape[2], shape[3], shape[4])
                              : dk_tensor_ncdhw(b, 0, dt, shape[0], shape[1], shape[2], shape[3], shape[4]);
    else if (ndim == 4)
        r->t[r->count] = nhwc ? dk_tensor_nhwc(b, 0, dt, shape[0], shape[1], shape[2], shape[3])
                              : dk_tensor_nchw(b, 0, dt, shape[0], shape[1], shape[2], shape[3]);
    else if (ndim == 5 && nhwc)
        r->t[r->count] = dk_tensor_ndhwc(b, 0, dt, shape[0], shape[1], shape[2], shape[3], shape[4]);
    else
        r->t[r->count] = dk_tensor_contiguous(b, 0, dt, ndim, shape);
    r->count++;
    return 0;
}

static int64_t bench_conv_out(int64_t size, int64_t k, int64_t s, int64_t p, int64_t d, int64_t up) {
    return (size * up + 2 * p - d * (k - 1) - 1) / s + 1;
}

/* Runs the op of one spec; with setup, first creates its tensors and costs. */
static dk_status bench_op(bench_run *r, const bench_spec *s, dk_dtype dt, int nhwc, int setup, unsigned *seed) {
    const char *op = s->def->op;
    dk_tensor *t = r->t;
    double e = (double)dk_dtype_size(dt);
    if (!strcmp(op, "conv2d")) {
        int64_t n = bench_int(s, "n"), ci = bench_int(s, "cin"), co = bench_int(s, "cout"), h = bench_int(s, "h"),
                w = bench_int(s, "w"), k = bench_int(s, "k"), st = bench_int(s, "s"), p = bench_int(s, "p"),
                d = bench_int(s, "d"), g = bench_int(s, "g"), up = bench_int(s, "up");
        int64_t oh = bench_conv_out(h, k, st, p, d, up), ow = bench_conv_out(w, k, st, p, d, up);
        dk_conv2d_desc cd;
        if (setup) {
            int64_t xs[4] = {n, ci, h, w}, ws[4] = {co, ci / g, k, k}, bs[1] = {co}, ys[4] = {n, co, oh, ow};
            if (bench_tensor(r, dt, 4, xs, nhwc, seed) || bench_tensor(r, dt, 4, ws, 0, seed) ||
                bench_tensor(r, dt, 1, bs, 0, seed) || bench_tensor(r, dt, 4, ys, nhwc, seed) ||
                (bench_int(s, "res") && bench_tensor(r, dt, 4, ys, nhwc, seed))) /* res=1: a residual like y */
                return DK_ERR_OUT_OF_MEMORY;
            r->flops = 2.0 * n * co * oh * ow * (double)(ci / g) * k * k;
            r->bytes = e * (double)(n * ci * h * w + co * (ci / g) * k * k + n * co * oh * ow * (1 + bench_int(s, "res")) + co);
        }
        dk_conv2d_desc_init(&cd);
        cd.stride_h = cd.stride_w = (int32_t)st;
        cd.pad_h = cd.pad_w = (int32_t)p;
        cd.dilation_h = cd.dilation_w = (int32_t)d;
        cd.groups = (int32_t)g;
        cd.upsample = (int32_t)up;
        cd.activation = bench_act(bench_get(s, "act"));
        return dk_conv2d(r->ctx, &cd, &t[0], &t[1], bench_int(s, "bias") ? &t[2] : NULL,
                         bench_int(s, "res") ? &t[4] : NULL, &t[3]);
    }
    if (!strcmp(op, "conv3d")) {
        int64_t n = bench_int(s, "n"), ci = bench_int(s, "cin"), co = bench_int(s, "cout"), f = bench_int(s, "t"),
                h = bench_int(s, "h"), w = bench_int(s, "w"), kt = bench_int(s, "kt"), k = bench_int(s, "k"),
                tc = bench_int(s, "tc");
        int64_t oh = h + 2 * (k / 2) - k + 1, ow = w + 2 * (k / 2) - k + 1; /* OT = t: causal */
        dk_conv3d_desc cd;
        if (setup) {
            int64_t xs[5] = {n, ci, f, h, w}, ws[5] = {co, ci, kt, k, k}, bs[1] = {co}, ys[5] = {n, co, f, oh, ow};
            int64_t cs[5] = {n, ci, tc > 0 ? tc : 1, h, w};
            if (bench_tensor(r, dt, 5, xs, nhwc, seed) || bench_tensor(r, dt, 5, ws, 0, seed) ||
                bench_tensor(r, dt, 1, bs, 0, seed) || bench_tensor(r, dt, 5, ys, nhwc, seed) ||
                (tc > 0 && bench_tensor(r, dt, 5, cs, nhwc, seed)))
                return DK_ERR_OUT_OF_MEMORY;
            r->flops = 2.0 * n * co * f * oh * ow * (double)ci * kt * k * k;
            r->bytes = e * (double)(n * ci * (f + tc) * h * w + co * ci * kt * k * k + n * co * f * oh * ow + co);
        }
        dk_conv3d_desc_init(&cd);
        cd.pad_front = (int32_t)(kt - 1);
        cd.pad_top = cd.pad_bottom = cd.pad_left = cd.pad_right = (int32_t)(k / 2);
        cd.activation = bench_act(bench_get(s, "act"));
        return dk_conv3d_chunk(r->ctx, &cd, tc > 0 ? &t[4] : NULL, &t[0], &t[1], bench_int(s, "bias") ? &t[2] : NULL,
                               NULL, &t[3]);
    }
    if (!strcmp(op, "conv_transpose2d")) {
        int64_t n = bench_int(s, "n"), ci = bench_int(s, "cin"), co = bench_int(s, "cout"), h = bench_int(s, "h"),
                w = bench_int(s, "w"), k = bench_int(s, "k"), st = bench_int(s, "s"), p = bench_int(s, "p"),
                opad = bench_int(s, "op"), d = bench_int(s, "d"), g = bench_int(s, "g");
        int64_t oh = (h - 1) * st - 2 * p + d * (k - 1) + opad + 1, ow = (w - 1) * st - 2 * p + d * (k - 1) + opad + 1;
        dk_conv_transpose2d_desc cd;
        if (setup) {
            int64_t xs[4] = {n, ci, h, w}, ws[4] = {ci, co / g, k, k}, bs[1] = {co}, ys[4] = {n, co, oh, ow};
            if (bench_tensor(r, dt, 4, xs, nhwc, seed) || bench_tensor(r, dt, 4, ws, 0, seed) ||
                bench_tensor(r, dt, 1, bs, 0, seed) || bench_tensor(r, dt, 4, ys, nhwc, seed))
                return DK_ERR_OUT_OF_MEMORY;
            r->flops = 2.0 * n * ci * h * w * (double)(co / g) * k * k;
            r->bytes = e * (double)(n * ci * h * w + ci * (co / g) * k * k + n * co * oh * ow + co);
        }
        dk_conv_transpose2d_desc_init(&cd);
        cd.stride_h = cd.stride_w = (int32_t)st;
        cd.pad_h = cd.pad_w = (int32_t)p;
        cd.output_padding_h = cd.output_padding_w = (int32_t)opad;
        cd.dilation_h = cd.dilation_w = (int32_t)d;
        cd.groups = (int32_t)g;
        cd.activation = bench_act(bench_get(s, "act"));
        return dk_conv_transpose2d(r->ctx, &cd, &t[0], &t[1], bench_int(s, "bias") ? &t[2] : NULL, NULL, &t[3]);
    }
    if (!strcmp(op, "matmul")) {
        int64_t b = bench_int(s, "b"), m = bench_int(s, "m"), n = bench_int(s, "n"), k = bench_int(s, "k");
        dk_matmul_desc md;
        if (setup) {
            int64_t as[3] = {b, m, k}, bs[2] = {k, n}, cs[1] = {n}, ys[3] = {b, m, n};
            if (bench_tensor(r, dt, 3, as, 0, seed) || bench_tensor(r, dt, 2, bs, 0, seed) ||
                bench_tensor(r, dt, 1, cs, 0, seed) || bench_tensor(r, dt, 3, ys, 0, seed))
                return DK_ERR_OUT_OF_MEMORY;
            r->flops = 2.0 * b * m * n * (double)k;
            r->bytes = e * (double)(b * (m * k + m * n) + k * n + n);
        }
        dk_matmul_desc_init(&md);
        md.activation = bench_act(bench_get(s, "act"));
        return dk_matmul(r->ctx, &md, &t[0], &t[1], bench_int(s, "bias") ? &t[2] : NULL, NULL, &t[3]);
    }
    if (!strcmp(op, "group_norm") || !strcmp(op, "add") || !strcmp(op, "convert") || !strcmp(op, "upsample")) {
        int64_t n = bench_int(s, "n"), c = bench_int(s, "c"), h = bench_int(s, "h"), w = bench_int(s, "w");
        int64_t numel = n * c * h * w;
        if (!strcmp(op, "group_norm")) {
            dk_group_norm_desc gd;
            if (setup) {
                int64_t xs[4] = {n, c, h, w}, cs[1] = {c};
                if (bench_tensor(r, dt, 4, xs, nhwc, seed) || bench_tensor(r, dt, 1, cs, 0, seed) ||
                    bench_tensor(r, dt, 1, cs, 0, seed) || bench_tensor(r, dt, 4, xs, nhwc, seed))
                    return DK_ERR_OUT_OF_MEMORY;
                r->flops = 8.0 * numel;
                r->bytes = e * (2.0 * numel + 2.0 * c);
            }
            dk_group_norm_desc_init(&gd);
            gd.groups = (int32_t)bench_int(s, "g");
            gd.activation = bench_act(bench_get(s, "act"));
            return dk_group_norm(r->ctx, &gd, &t[0], &t[1], &t[2], &t[3]);
        }
        if (!strcmp(op, "add")) {
            if (setup) {
                int64_t xs[4] = {n, c, h, w};
                if (bench_tensor(r, dt, 4, xs, nhwc, seed) || bench_tensor(r, dt, 4, xs, nhwc, seed) ||
                    bench_tensor(r, dt, 4, xs, nhwc, seed))
                    return DK_ERR_OUT_OF_MEMORY;
                r->flops = 3.0 * numel;
                r->bytes = 3.0 * e * numel;
            }
            return dk_add(r->ctx, 1.0f, &t[0], 1.0f, &t[1], bench_act(bench_get(s, "act")), &t[2]);
        }
        if (!strcmp(op, "upsample")) {
            int64_t f = bench_int(s, "f");
            if (setup) {
                int64_t xs[4] = {n, c, h, w}, ys[4] = {n, c, h * f, w * f};
                if (bench_tensor(r, dt, 4, xs, nhwc, seed) || bench_tensor(r, dt, 4, ys, nhwc, seed))
                    return DK_ERR_OUT_OF_MEMORY;
                r->flops = 0;
                r->bytes = e * numel * (1.0 + (double)(f * f));
            }
            return dk_upsample_nearest(r->ctx, &t[0], &t[1]);
        }
        {
            const char *to = bench_get(s, "to"), *tl = bench_get(s, "tl");
            dk_dtype odt = dt;
            int onhwc = !nhwc;
            if (strcmp(to, "same") && bench_dtype(to, &odt)) return DK_ERR_INVALID_ARGUMENT;
            if (!strcmp(tl, "same")) onhwc = nhwc;
            else if (!strcmp(tl, "nhwc")) onhwc = 1;
            else if (!strcmp(tl, "nchw")) onhwc = 0;
            if (setup) {
                int64_t xs[4] = {n, c, h, w};
                if (bench_tensor(r, dt, 4, xs, nhwc, seed) || bench_tensor(r, odt, 4, xs, onhwc, seed))
                    return DK_ERR_OUT_OF_MEMORY;
                r->flops = 0;
                r->bytes = (double)numel * (e + (double)dk_dtype_size(odt));
            }
            return dk_convert(r->ctx, &t[0], &t[1]);
        }
    }
    if (!strcmp(op, "layer_norm")) {
        int64_t rows = bench_int(s, "rows"), d = bench_int(s, "d");
        dk_layer_norm_desc ld;
        if (setup) {
            int64_t xs[2] = {rows, d}, gs[1] = {d};
            if (bench_tensor(r, dt, 2, xs, 0, seed) || bench_tensor(r, dt, 1, gs, 0, seed) ||
                bench_tensor(r, dt, 1, gs, 0, seed) || bench_tensor(r, dt, 2, xs, 0, seed))
                return DK_ERR_OUT_OF_MEMORY;
            r->flops = 8.0 * rows * d;
            r->bytes = e * (2.0 * rows * d + 2.0 * d);
        }
        dk_layer_norm_desc_init(&ld);
        ld.activation = bench_act(bench_get(s, "act"));
        return dk_layer_norm(r->ctx, &ld, &t[0], &t[1], &t[2], &t[3]);
    }
    if (!strcmp(op, "rms_norm") || !strcmp(op, "copy")) {
        int64_t n = bench_int(s, "n"), c = bench_int(s, "c"), tt = bench_int(s, "t"), h = bench_int(s, "h"),
                w = bench_int(s, "w");
        double numel = (double)n * (double)c * (double)tt * (double)h * (double)w;
        int rms = !strcmp(op, "rms_norm");
        dk_rms_norm_desc rd;
        if (setup) {
            int64_t xs[5] = {n, c, tt, h, w}, cs[1] = {c};
            if (bench_tensor(r, dt, 5, xs, nhwc, seed) || bench_tensor(r, dt, 5, xs, nhwc, seed) ||
                (rms && (bench_tensor(r, dt, 1, cs, 0, seed) || bench_tensor(r, dt, 1, cs, 0, seed))))
                return DK_ERR_OUT_OF_MEMORY;
            r->flops = rms ? 4.0 * numel : 0.0;
            r->bytes = e * (2.0 * numel + (rms ? 2.0 * (double)c : 0.0));
        }
        if (!rms) return dk_convert(r->ctx, &t[0], &t[1]);
        dk_rms_norm_desc_init(&rd);
        rd.form = !strcmp(bench_get(s, "form"), "ms") ? DK_RMS_NORM_MEAN_SQUARE : DK_RMS_NORM_L2;
        rd.eps = rd.form == DK_RMS_NORM_L2 ? 1e-12f : 1e-6f;
        rd.activation = bench_act(bench_get(s, "act"));
        return dk_rms_norm(r->ctx, &rd, &t[0], &t[2], &t[3], &t[1]);
    }
    if (!strcmp(op, "attention")) {
        int64_t b = bench_int(s, "b"), h = bench_int(s, "h"), n = bench_int(s, "n"), nkv = bench_int(s, "nkv"),
                d = bench_int(s, "d"), dv = bench_int(s, "dv");
        dk_attention_desc ad;
        if (!nkv) nkv = n;
        if (!dv) dv = d;
        if (setup) {
            int64_t qs[4] = {b, h, n, d}, ks[4] = {b, h, nkv, d}, vs[4] = {b, h, nkv, dv}, os[4] = {b, h, n, dv};
            if (bench_tensor(r, dt, 4, qs, 0, seed) || bench_tensor(r, dt, 4, ks, 0, seed) ||
                bench_tensor(r, dt, 4, vs, 0, seed) || bench_tensor(r, dt, 4, os, 0, seed))
                return DK_ERR_OUT_OF_MEMORY;
            r->flops = 2.0 * b * h * n * (double)nkv * (double)(d + dv);
            r->bytes = e * (double)(b * h * (n * d + nkv * d + nkv * dv + n * dv));
        }
        dk_attention_desc_init(&ad);
        return dk_attention(r->ctx, &ad, &t[0], &t[1], &t[2], &t[3]);
    }
    return DK_ERR_INVALID_ARGUMENT;
}

static double bench_now_ms(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Keeps the device busy for at least ms milliseconds (see the top comment):
 * batches of runs that double up to 64, one sync per batch, so that the device
 * does not idle between runs while the host waits. */
static dk_status bench_busy(bench_run *r, const bench_spec *s, dk_dtype dt, int nhwc, double ms, unsigned *seed) {
    double t0 = bench_now_ms();
    dk_status st = DK_OK;
    int batch = 1, i;
    while (st == DK_OK && bench_now_ms() - t0 < ms) {
        for (i = 0; st == DK_OK && i < batch; i++) st = bench_op(r, s, dt, nhwc, 0, seed);
        if (st == DK_OK) st = dk_sync(r->ctx);
        if (batch < 64) batch *= 2;
    }
    return st;
}

static int bench_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Measures one spec; prints a line and appends a JSON object. */
static int bench_measure(dk_context *ctx, const bench_spec *s, dk_dtype dt, int nhwc, int warmup, double warmup_ms,
                         int iters, FILE *json, int *first) {
    bench_run r;
    unsigned seed = 12345;
    double *times, med;
    int i, ok = 1;
    char canon[512];
    const char *layout = !strcmp(s->def->op, "attention") ? "bhnd"
                         : (!strcmp(s->def->op, "matmul") || !strcmp(s->def->op, "layer_norm")) ? "row"
                         : !strcmp(s->def->op, "rms_norm") || !strcmp(s->def->op, "copy") || !strcmp(s->def->op, "conv3d") ? (nhwc ? "ndhwc" : "ncdhw")
                         : nhwc ? "nhwc" : "nchw";
    dk_status st;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    bench_canonical(s, canon, sizeof canon);
    times = (double *)calloc((size_t)(iters > 0 ? iters : 1), sizeof(double));
    st = times ? bench_op(&r, s, dt, nhwc, 1, &seed) : DK_ERR_OUT_OF_MEMORY;
    if (st == DK_OK) st = dk_sync(ctx);
    for (i = 0; st == DK_OK && i < warmup; i++) st = bench_op(&r, s, dt, nhwc, 0, &seed);
    if (st == DK_OK) st = dk_sync(ctx);
    if (st == DK_OK && warmup_ms > 0) st = bench_busy(&r, s, dt, nhwc, warmup_ms, &seed);
    for (i = 0; st == DK_OK && i < iters; i++) {
        st = dk_timer_begin(ctx);
        if (st == DK_OK) st = bench_op(&r, s, dt, nhwc, 0, &seed);
        if (st == DK_OK) st = dk_timer_end(ctx, &times[i]);
    }
    if (st != DK_OK) {
        printf("%-18s %-60s %-5s %-5s FAILED %s: %s\n", s->def->op, canon, dk_dtype_name(dt), layout,
               dk_status_name(st), dk_last_error(ctx));
        ok = 0;
    } else {
        qsort(times, (size_t)iters, sizeof(double), bench_cmp);
        med = times[iters / 2];
        printf("%-18s %-60s %-5s %-5s %10.4f ms %9.3f TFLOP/s %9.1f GB/s\n", s->def->op, canon, dk_dtype_name(dt),
               layout, med, r.flops / med / 1e9, r.bytes / med / 1e6);
        if (json) {
            fprintf(json,
                    "%s\n  {\"op\": \"%s\", \"spec\": \"%s\", \"dtype\": \"%s\", \"layout\": \"%s\", "
                    "\"backend\": \"%s\", \"device\": \"%s\", \"ms\": %.6f, \"min_ms\": %.6f, "
                    "\"flops\": %.0f, \"bytes\": %.0f, \"tflops\": %.4f, \"gbps\": %.2f}",
                    *first ? "" : ",", s->def->op, canon, dk_dtype_name(dt), layout,
                    dk_backend_name(dk_context_backend(ctx)), dk_context_device_name(ctx), med, times[0], r.flops,
                    r.bytes, r.flops / med / 1e9, r.bytes / med / 1e6);
            *first = 0;
        }
    }
    fflush(stdout);
    for (i = 0; i < r.count; i++) dk_buffer_destroy(ctx, r.bufs[i]);
    free(times);
    return ok;
}

static void bench_usage(void) {
    printf("usage: dk_bench [--backend cpu|vulkan|hip|auto] [--dtype f32|f16|bf16[,..]] [--layout nchw|nhwc[,..]]\n"
           "                [--op OP --shape k=v,...] [--suite cpu|h100|memory|wan|wan_cpu|wan_rms] [--list] [--warmup N] [--iters N]\n"
           "                [--warmup-ms MS (default 500: see the source)] [--json FILE]\n");
}

int main(int argc, char **argv) {
    const char *backend = "auto", *dtypes = "f32", *layouts = "nhwc", *op = NULL, *shape = "", *suite = NULL,
               *json_path = NULL;
    int warmup = 3, iters = 10, list = 0, i, failures = 0, first = 1;
    double warmup_ms = 500.0;
    const char *const *lines = NULL;
    const char *single[2] = {NULL, NULL};
    char single_line[600];
    dk_context_options o;
    dk_context *ctx;
    FILE *json = NULL;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            bench_usage();
            return 0;
        } else if (!strcmp(a, "--list")) list = 1;
        else if (v && !strcmp(a, "--backend")) backend = argv[++i];
        else if (v && !strcmp(a, "--dtype")) dtypes = argv[++i];
        else if (v && !strcmp(a, "--layout")) layouts = argv[++i];
        else if (v && !strcmp(a, "--op")) op = argv[++i];
        else if (v && !strcmp(a, "--shape")) shape = argv[++i];
        else if (v && !strcmp(a, "--suite")) suite = argv[++i];
        else if (v && !strcmp(a, "--json")) json_path = argv[++i];
        else if (v && !strcmp(a, "--warmup")) warmup = atoi(argv[++i]);
        else if (v && !strcmp(a, "--iters")) iters = atoi(argv[++i]);
        else if (v && !strcmp(a, "--warmup-ms")) warmup_ms = atof(argv[++i]);
        else {
            fprintf(stderr, "dk_bench: unknown or incomplete argument '%s'\n", a);
            bench_usage();
            return 2;
        }
    }
    if (iters < 1) iters = 1;
    if (op) {
        snprintf(single_line, sizeof single_line, "%s %s", op, shape);
        single[0] = single_line;
        lines = single;
    } else if (!suite || !strcmp(suite, "cpu")) lines = bench_suite_cpu;
    else if (!strcmp(suite, "h100")) lines = bench_suite_h100;
    else if (!strcmp(suite, "memory")) lines = bench_suite_memory;
    else if (!strcmp(suite, "wan")) lines = bench_suite_wan;
    else if (!strcmp(suite, "wan_cpu")) lines = bench_suite_wan_cpu;
    else if (!strcmp(suite, "wan_rms")) lines = bench_suite_wan_rms;
    else {
        fprintf(stderr, "dk_bench: unknown suite '%s' (cpu, h100, memory, wan, wan_cpu, wan_rms)\n", suite);
        return 2;
    }
    if (list) {
        for (i = 0; lines[i]; i++) printf("%s\n", lines[i]);
        return 0;
    }
    dk_context_options_init(&o);
    if (!strcmp(backend, "cpu")) o.backend = DK_BACKEND_CPU;
    else if (!strcmp(backend, "vulkan")) o.backend = DK_BACKEND_VULKAN;
    else if (!strcmp(backend, "hip")) o.backend = DK_BACKEND_HIP;
    else if (strcmp(backend, "auto")) {
        fprintf(stderr, "dk_bench: unknown backend '%s'\n", backend);
        return 2;
    }
    if (dk_context_create(&o, &ctx) != DK_OK) {
        printf("SKIP backend %s: %s\n", backend, dk_last_error(NULL));
        return 77;
    }
    printf("# %s\n", dk_context_describe(ctx));
    if (json_path && !(json = fopen(json_path, "w"))) {
        fprintf(stderr, "dk_bench: cannot write %s\n", json_path);
        dk_context_destroy(ctx);
        return 2;
    }
    if (json) fprintf(json, "[");
    for (i = 0; lines[i]; i++) {
        char opname[64], text[512], dl[64], ll[64], *dcur = dl, *dt_tok;
        bench_spec s;
        if (sscanf(lines[i], "%63s %511s", opname, text) < 1) continue;
        if (!strchr(lines[i], ' ')) text[0] = 0;
        if (bench_parse(opname, text, &s)) {
            failures++;
            continue;
        }
        snprintf(dl, sizeof dl, "%s", dtypes);
        while ((dt_tok = bench_token(&dcur, ',')) != NULL) {
            char *lcur = ll, *l_tok;
            dk_dtype dt;
            if (bench_dtype(dt_tok, &dt)) {
                fprintf(stderr, "dk_bench: unknown dtype '%s'\n", dt_tok);
                failures++;
                continue;
            }
            snprintf(ll, sizeof ll, "%s", layouts);
            while ((l_tok = bench_token(&lcur, ',')) != NULL) {
                int nhwc = !strcmp(l_tok, "nhwc");
                if (!bench_measure(ctx, &s, dt, nhwc, warmup, warmup_ms, iters, json, &first)) failures++;
                /* Layout-free ops run once. */
                if (!strcmp(opname, "attention") || !strcmp(opname, "matmul") || !strcmp(opname, "layer_norm")) break;
            }
        }
    }
    if (json) {
        fprintf(json, "\n]\n");
        fclose(json);
    }
    dk_context_destroy(ctx);
    return failures ? 1 : 0;
}
