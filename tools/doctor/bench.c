/* The short benchmark: four ops at SDXL VAE sizes and one whole SDXL decode
 * with seeded random weights, f16, channels-last.  Each op: one untimed run
 * (pipelines, prepared weights), then on GPUs about 300 ms of back-to-back
 * runs (clocks ramp up only under sustained work; see tests/perf/bench.c),
 * then timed runs bracketed by dk_timer_begin / dk_timer_end; the median is
 * reported.  FLOP and byte counts are those of tests/perf/shapes.py. */
#include "doctor.h"

#include <difkern/sdxl_vae.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DD_BT 6

typedef struct dd_brun {
    dk_context *ctx;
    dk_buffer *buf[DD_BT];
    dk_tensor t[DD_BT];
    int n;
    uint32_t seed;
} dd_brun;

/* A tensor of f16 values in [-1, 1), NHWC for 4-D images (nhwc), else contiguous. */
static dk_status dd_tensor(dd_brun *r, int ndim, const int64_t *shape, int nhwc) {
    int64_t numel = 1, i;
    uint16_t *host;
    dk_buffer *b = NULL;
    dk_status st;
    int k;
    for (k = 0; k < ndim; k++) numel *= shape[k];
    host = (uint16_t *)malloc((size_t)numel * 2);
    if (!host) return DK_ERR_OUT_OF_MEMORY;
    for (i = 0; i < numel; i++) {
        r->seed = r->seed * 1664525u + 1013904223u;
        host[i] = dk_f32_to_f16((float)((r->seed >> 8) & 0xffff) / 32768.0f - 1.0f);
    }
    st = dk_buffer_create(r->ctx, (uint64_t)numel * 2, &b);
    if (st == DK_OK) st = dk_buffer_upload(r->ctx, b, 0, host, (uint64_t)numel * 2);
    free(host);
    if (st != DK_OK) {
        dk_buffer_destroy(r->ctx, b);
        return st;
    }
    r->buf[r->n] = b;
    r->t[r->n] = ndim == 4 && nhwc ? dk_tensor_nhwc(b, 0, DK_F16, shape[0], shape[1], shape[2], shape[3])
                                   : dk_tensor_contiguous(b, 0, DK_F16, ndim, shape);
    r->n++;
    return DK_OK;
}

typedef struct dd_bspec {
    int kind;                      /* 0 conv2d, 1 conv_transpose2d, 2 group_norm, 3 attention */
    int64_t cin, cout, h, w, n, d; /* conv: cin, cout, h, w; gn: cin, h, w; attention: n, d */
} dd_bspec;

static dk_status dd_setup(dd_brun *r, const dd_bspec *s, dd_bench *b) {
    dk_status st = DK_OK;
    const double e = 2.0;
    if (s->kind == 0) {
        int64_t x[4] = {1, s->cin, s->h, s->w}, w[4] = {s->cout, s->cin, 3, 3}, bias[1] = {s->cout},
                y[4] = {1, s->cout, s->h, s->w};
        if ((st = dd_tensor(r, 4, x, 1)) || (st = dd_tensor(r, 4, w, 0)) || (st = dd_tensor(r, 1, bias, 0)) ||
            (st = dd_tensor(r, 4, y, 1)))
            return st;
        b->flops = 2.0 * (double)(s->cout * s->h * s->w) * (double)s->cin * 9.0;
        b->bytes = e * (double)(s->cin * s->h * s->w + s->cout * s->cin * 9 + s->cout * s->h * s->w + s->cout);
        snprintf(b->spec, sizeof b->spec, "3x3 pad 1, %lld -> %lld channels at %lldx%lld, f16 NHWC, bias",
                 (long long)s->cin, (long long)s->cout, (long long)s->h, (long long)s->w);
    } else if (s->kind == 1) {
        int64_t oh = 2 * s->h, ow = 2 * s->w;
        int64_t x[4] = {1, s->cin, s->h, s->w}, w[4] = {s->cin, s->cout, 3, 3}, bias[1] = {s->cout},
                y[4] = {1, s->cout, oh, ow};
        if ((st = dd_tensor(r, 4, x, 1)) || (st = dd_tensor(r, 4, w, 0)) || (st = dd_tensor(r, 1, bias, 0)) ||
            (st = dd_tensor(r, 4, y, 1)))
            return st;
        b->flops = 2.0 * (double)(s->cin * s->h * s->w) * (double)s->cout * 9.0;
        b->bytes = e * (double)(s->cin * s->h * s->w + s->cin * s->cout * 9 + s->cout * oh * ow + s->cout);
        snprintf(b->spec, sizeof b->spec, "3x3 stride 2 pad 1 output_padding 1, %lld -> %lld channels at %lldx%lld, f16 NHWC",
                 (long long)s->cin, (long long)s->cout, (long long)s->h, (long long)s->w);
    } else if (s->kind == 2) {
        int64_t x[4] = {1, s->cin, s->h, s->w}, c[1] = {s->cin};
        double numel = (double)(s->cin * s->h * s->w);
        if ((st = dd_tensor(r, 4, x, 1)) || (st = dd_tensor(r, 1, c, 0)) || (st = dd_tensor(r, 1, c, 0)) ||
            (st = dd_tensor(r, 4, x, 1)))
            return st;
        b->flops = 8.0 * numel;
        b->bytes = e * (2.0 * numel + 2.0 * (double)s->cin);
        snprintf(b->spec, sizeof b->spec, "32 groups + SiLU, %lld channels at %lldx%lld, f16 NHWC", (long long)s->cin,
                 (long long)s->h, (long long)s->w);
    } else {
        int64_t q[4] = {1, 1, s->n, s->d};
        if ((st = dd_tensor(r, 4, q, 0)) || (st = dd_tensor(r, 4, q, 0)) || (st = dd_tensor(r, 4, q, 0)) ||
            (st = dd_tensor(r, 4, q, 0)))
            return st;
        b->flops = 2.0 * (double)s->n * (double)s->n * (double)(2 * s->d);
        b->bytes = e * 4.0 * (double)(s->n * s->d);
        snprintf(b->spec, sizeof b->spec, "1 head, %lld tokens, D = Dv = %lld, f16", (long long)s->n, (long long)s->d);
    }
    return DK_OK;
}

static dk_status dd_op(dd_brun *r, const dd_bspec *s) {
    dk_tensor *t = r->t;
    if (s->kind == 0) {
        dk_conv2d_desc d;
        dk_conv2d_desc_init(&d);
        d.pad_h = d.pad_w = 1;
        return dk_conv2d(r->ctx, &d, &t[0], &t[1], &t[2], NULL, &t[3]);
    }
    if (s->kind == 1) {
        dk_conv_transpose2d_desc d;
        dk_conv_transpose2d_desc_init(&d);
        d.stride_h = d.stride_w = 2;
        d.pad_h = d.pad_w = 1;
        d.output_padding_h = d.output_padding_w = 1;
        return dk_conv_transpose2d(r->ctx, &d, &t[0], &t[1], &t[2], NULL, &t[3]);
    }
    if (s->kind == 2) {
        dk_group_norm_desc d;
        dk_group_norm_desc_init(&d);
        d.activation = DK_ACT_SILU;
        return dk_group_norm(r->ctx, &d, &t[0], &t[1], &t[2], &t[3]);
    }
    {
        dk_attention_desc d;
        dk_attention_desc_init(&d);
        return dk_attention(r->ctx, &d, &t[0], &t[1], &t[2], &t[3]);
    }
}

static int dd_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Records a failed or skipped measurement (out of memory is a skip). */
static void dd_bench_error(dk_context *ctx, dd_bench *b, dk_status st, const char *what) {
    b->ran = st == DK_ERR_OUT_OF_MEMORY || st == DK_ERR_UNSUPPORTED ? 0 : -1;
    snprintf(b->error, sizeof b->error, "%s%s returned %s: %s", b->ran == 0 ? "skipped: " : "", what,
             dk_status_name(st), dk_last_error(ctx));
}

static void dd_bench_op(dk_context *ctx, const dd_bspec *s, dd_bench *b, int iters, double warm_ms) {
    dd_brun r;
    double times[16], t0;
    dk_status st;
    int i;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.seed = 12345;
    if (iters > 16) iters = 16;
    st = dd_setup(&r, s, b);
    if (st == DK_OK) st = dd_op(&r, s);
    if (st == DK_OK) st = dk_sync(ctx);
    t0 = dd_now_ms();
    while (st == DK_OK && dd_now_ms() - t0 < warm_ms) {
        for (i = 0; st == DK_OK && i < 8; i++) st = dd_op(&r, s);
        if (st == DK_OK) st = dk_sync(ctx);
    }
    for (i = 0; st == DK_OK && i < iters; i++) {
        st = dk_timer_begin(ctx);
        if (st == DK_OK) st = dd_op(&r, s);
        if (st == DK_OK) st = dk_timer_end(ctx, &times[i]);
    }
    if (st != DK_OK) dd_bench_error(ctx, b, st, b->name);
    else {
        qsort(times, (size_t)iters, sizeof times[0], dd_cmp);
        b->ms = times[iters / 2];
        b->ran = 1;
    }
    for (i = 0; i < r.n; i++) dk_buffer_destroy(ctx, r.buf[i]);
}

/* FLOPs of one SDXL VAE decode of an h x w latent: every conv, linear and
 * attention product (2 per multiply-add); norms and elementwise ops are left
 * out (well under 1%). */
static double dd_sdxl_flops(double h, double w) {
    double f = 0.0, hw = h * w, n = hw;
    static const int ch[4] = {512, 512, 256, 128};
    int b, i, cin = 512;
#define DD_CONV(ci, co, k, px) (2.0 * (double)(ci) * (double)(co) * (double)(k) * (double)(k) * (px))
    f += DD_CONV(4, 4, 1, hw) + DD_CONV(4, 512, 3, hw);
    f += 4.0 * DD_CONV(512, 512, 3, hw);                          /* mid resnets */
    f += 4.0 * 2.0 * n * 512.0 * 512.0 + 2.0 * 2.0 * n * n * 512.0; /* q, k, v, out; QK^T and PV */
    for (b = 0; b < 4; b++) {
        for (i = 0; i < 3; i++) {
            int ci = i == 0 ? cin : ch[b];
            f += DD_CONV(ci, ch[b], 3, hw) + DD_CONV(ch[b], ch[b], 3, hw);
            if (ci != ch[b]) f += DD_CONV(ci, ch[b], 1, hw);
        }
        cin = ch[b];
        if (b < 3) {
            hw *= 4.0;
            f += DD_CONV(ch[b], ch[b], 3, hw);
        }
    }
    f += DD_CONV(128, 3, 3, hw);
#undef DD_CONV
    return f;
}

static uint64_t dd_splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* warm: one untimed decode first (pipelines, prepared weights); the quick
 * sizes leave it out, and their one timed decode includes those costs. */
static void dd_bench_decode(dk_context *ctx, int side, dd_bench *b, int iters, int warm) {
    dk_sdxl_vae *vae = NULL;
    dk_sdxl_vae_info info;
    dk_buffer *lb = NULL, *ob = NULL;
    dk_tensor lat, img;
    float *host = NULL;
    double times[8], walls[8];
    uint64_t s = 0x5eedull, peak = 0;
    int64_t i, nlat = 4LL * side * side;
    dk_status st;
    int k;
    const char *what = "dk_sdxl_vae_create_random";
    if (iters > 8) iters = 8;
    memset(&info, 0, sizeof info);
    snprintf(b->spec, sizeof b->spec, "SDXL VAE decoder, seeded random weights, %dx%d latent -> %dx%d image, f16, "
             "device tensors%s", side, side, 8 * side, 8 * side, warm ? "" : "; first decode (pipeline builds included)");
    b->flops = dd_sdxl_flops(side, side);
    host = (float *)malloc((size_t)nlat * sizeof(float));
    if (!host) {
        b->ran = -1;
        dd_copy(b->error, sizeof b->error, "out of host memory");
        return;
    }
    for (i = 0; i < nlat; i++) { /* standard normal latents, as a diffusion model gives */
        double u1 = ((double)(dd_splitmix(&s) >> 11) + 1.0) / 9007199254740993.0;
        double u2 = (double)(dd_splitmix(&s) >> 11) / 9007199254740992.0;
        host[i] = (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
    }
    st = dk_sdxl_vae_create_random(ctx, 42, DK_F16, NULL, &vae);
    if (st == DK_OK) {
        what = "dk_buffer_create";
        st = dk_buffer_create(ctx, (uint64_t)nlat * 4, &lb);
    }
    if (st == DK_OK) st = dk_buffer_create(ctx, (uint64_t)3 * 64 * side * side * 2, &ob);
    if (st == DK_OK) {
        what = "dk_buffer_upload";
        st = dk_buffer_upload(ctx, lb, 0, host, (uint64_t)nlat * 4);
    }
    lat = dk_tensor_nchw(lb, 0, DK_F32, 1, 4, side, side);
    img = dk_tensor_nchw(ob, 0, DK_F16, 1, 3, 8 * side, 8 * side);
    if (st == DK_OK && warm) {
        what = "dk_sdxl_vae_decode_tensor";
        st = dk_sdxl_vae_decode_tensor(vae, &lat, &img, &info);
    }
    for (k = 0; st == DK_OK && k < iters; k++) {
        double w0 = dd_now_ms();
        what = "dk_timer_begin";
        st = dk_timer_begin(ctx);
        if (st == DK_OK) {
            what = "dk_sdxl_vae_decode_tensor";
            st = dk_sdxl_vae_decode_tensor(vae, &lat, &img, &info);
        }
        if (st == DK_OK) {
            what = "dk_timer_end";
            st = dk_timer_end(ctx, &times[k]);
        }
        walls[k] = dd_now_ms() - w0;
        if (info.peak_device_bytes > peak) peak = info.peak_device_bytes;
    }
    if (st != DK_OK) dd_bench_error(ctx, b, st, what);
    else {
        qsort(times, (size_t)iters, sizeof times[0], dd_cmp);
        qsort(walls, (size_t)iters, sizeof walls[0], dd_cmp);
        b->ms = times[iters / 2];
        b->wall_ms = walls[iters / 2];
        b->peak_bytes = peak;
        b->ran = 1;
    }
    dk_buffer_destroy(ctx, lb);
    dk_buffer_destroy(ctx, ob);
    dk_sdxl_vae_destroy(vae);
    free(host);
}

const char *dd_bench_unit(const dd_bench *b, char *buf, size_t cap) {
    if (b->ran != 1 || !(b->ms > 0.0)) {
        dd_copy(buf, cap, "");
        return buf;
    }
    {
        double tf = b->flops / b->ms / 1e9;
        int n = tf >= 0.1 ? snprintf(buf, cap, "%.2f TFLOP/s", tf) : snprintf(buf, cap, "%.2f GFLOP/s", tf * 1e3);
        if (b->bytes > 0.0 && n > 0 && (size_t)n < cap)
            snprintf(buf + n, cap - (size_t)n, ", %.1f GB/s", b->bytes / b->ms / 1e6);
    }
    return buf;
}

void dd_run_bench(dk_context *ctx, dd_target *t, const dd_options *o) {
    static const char *const names[DD_NUM_BENCH] = {"conv2d_3x3", "conv_transpose2d", "group_norm_silu",
                                                    "attention_d512", "sdxl_decode"};
    int quick = o->quick_bench || t->cpu_type, i;
    dd_bspec specs[4];
    int iters = quick ? 3 : 10;
    double warm = quick ? 0.0 : 300.0;
    memset(specs, 0, sizeof specs);
    specs[0].kind = 0, specs[0].cin = quick ? 64 : 512, specs[0].cout = specs[0].cin;
    specs[0].h = specs[0].w = quick ? 32 : 128;
    specs[1].kind = 1, specs[1].cin = quick ? 64 : 512, specs[1].cout = quick ? 32 : 256;
    specs[1].h = specs[1].w = quick ? 32 : 128;
    specs[2].kind = 2, specs[2].cin = quick ? 64 : 512, specs[2].h = specs[2].w = quick ? 32 : 256;
    specs[3].kind = 3, specs[3].n = quick ? 256 : 4096, specs[3].d = 512;
    t->bench_quick = quick;
    for (i = 0; i < DD_NUM_BENCH; i++) {
        dd_bench *b = &t->bench[i];
        char unit[96];
        dd_copy(b->name, sizeof b->name, names[i]);
        if (i < 4) dd_bench_op(ctx, &specs[i], b, iters, warm);
        else dd_bench_decode(ctx, quick ? 2 : 128, b, quick ? 1 : 3, !quick);
        if (b->ran == 1)
            printf("  bench %-17s %10.3f ms  %-30s %s\n", b->name, b->ms, dd_bench_unit(b, unit, sizeof unit), b->spec);
        else
            printf("  bench %-17s %s\n", b->name, b->error);
        if (i == 4 && b->ran == 1)
            printf("        peak device memory %.1f MiB, host wall %.3f ms\n", (double)b->peak_bytes / 1048576.0,
                   b->wall_ms);
        fflush(stdout);
    }
}
