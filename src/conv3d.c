/* dk_conv3d and dk_conv3d_chunk lowered onto the backend's conv2d, convert and
 * buffer_fill entries (declared in plan.h; docs/conv.md).
 *
 * The conv2d backends accumulate a whole conv2d in fp32 on their tensor-core
 * GEMMs, so every output frame is ONE conv2d reduction over all KT x KH x KW
 * taps, never a sum of per-tap convs through 16-bit outputs:
 *   FRAMES  KT = 1: per image, a conv2d whose batch is the output frames (a
 *           view with batch stride stride_t frames); no copy.
 *   TIME    KH = KW = 1, unit spatial stride, no spatial padding, H and W one
 *           run in x, y and the residual: a (KT, 1) conv2d over [N, C, T, H*W],
 *           the time padding as pad_top / pad_bottom; no copy.
 *   STAGED  anything else, and the frames the paths above cannot reach (zero
 *           frames before a cache, cache frames): a time-im2col copy
 *           X'[frames, H, W, KT*Cin] in scratch, then one conv2d over X' with
 *           the spatial taps, in groups of output frames that bound the
 *           scratch.  groups 1: tap-major, channel kt*Cin + c holding the frame
 *           of tap kt of channel c, so each tap's copy writes whole runs of Cin
 *           channels per pixel (the backends' vector copies; interleaved
 *           channels made the copies up to 5x slower than the bandwidth) and
 *           the weight is copied to match.  groups > 1: channel c*KT + kt, so
 *           each group's channels stay together and a weight with
 *           w.strides[1] = KT * w.strides[2] is the plain view
 *           [Cout, KT*Cin/groups, KH, KW].
 *           Where the backend's fastest conv needs a channel multiple that
 *           KT*Cin misses (HIP's wgmma: 64; Wan's 96-channel stage stages 288),
 *           X' gets zero channels up to it and the weight a zero-padded copy:
 *           the copy is made anyway, so the pad costs its zeros and the extra
 *           reduction, not a second pass.
 * A backend whose conv kernels can gather every tap's frame themselves
 * (conv3d_in_place: HIP's fast kernels; Vulkan's tensor-core conv for TIME
 * convs with a cache) takes any call that would stage, and
 * the copies, their scratch and the weight copy go away. */
#include "plan.h"

#include "../backends/backend.h"

#include <stdlib.h>

#define C3D_ALIGN 256u

/* ceil(a / b) for b > 0 and any a. */
static int64_t c3d_ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

static int64_t c3d_clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* H and W of a 5-D view walk as one dim. */
static int c3d_hw_merge(const dk_tensor *t) {
    return !t || dk__dims_mergeable(t, 3);
}

static uint64_t c3d_round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

int64_t dk__conv3d_padded_channels(int64_t kc_data, int64_t groups, int64_t multiple) {
    int64_t kc;
    if (groups != 1 || multiple <= 1 || kc_data % multiple == 0 || kc_data > INT64_MAX / 2) return kc_data;
    kc = (kc_data + multiple - 1) / multiple * multiple;
    return kc - kc_data <= kc_data / 4 ? kc : kc_data;
}

int dk__conv3d_is_time(const dk_conv3d_desc *d, const dk_tensor *cache, const dk_tensor *x, const dk_tensor *w,
                       const dk_tensor *y, const dk_tensor *residual) {
    return w->shape[3] == 1 && w->shape[4] == 1 && d->stride_h == 1 && d->stride_w == 1 && !d->pad_top &&
           !d->pad_bottom && !d->pad_left && !d->pad_right && c3d_hw_merge(x) && c3d_hw_merge(y) &&
           c3d_hw_merge(residual) && c3d_hw_merge(cache);
}

int dk__conv3d_plan(const dk_conv3d_desc *d, int64_t tc, const dk_tensor *x, const dk_tensor *w,
                    const dk_tensor *y, const dk_tensor *residual, int64_t multiple, uint64_t cap,
                    dk_conv3d_plan *p) {
    const int64_t kt = w->shape[2], kh = w->shape[3], kw = w->shape[4], cin = x->shape[1];
    const int64_t t = x->shape[2], st = d->stride_t, pf = d->pad_front;
    const uint64_t es = dk_dtype_size(x->dtype);
    uint64_t frame, avail;
    int64_t staged_max, cpg = cin / d->groups;
    memset(p, 0, sizeof *p);
    p->ot = y->shape[2];
    p->kc = p->kc_data = kt * cin;
    if (dk__conv3d_is_time(d, NULL, x, w, y, residual)) {
        p->path = DK__C3D_TIME;
        /* without a cache the front zeros are the conv2d's pad_top; with one, the
         * frames whose taps reach the cache (or the zeros before it) are staged */
        p->direct_begin = tc ? c3d_clamp(c3d_ceil_div(pf, st), 0, p->ot) : 0;
        p->direct_end = p->ot;
    } else if (kt == 1) {
        p->path = DK__C3D_FRAMES;
        p->direct_begin = c3d_clamp(c3d_ceil_div(pf, st), 0, p->ot);
        p->direct_end = c3d_clamp(c3d_ceil_div(pf + t, st), p->direct_begin, p->ot);
    } else {
        p->path = DK__C3D_STAGED;
    }
    staged_max = p->ot - (p->direct_end - p->direct_begin);
    if (staged_max == 0) return 1;
    /* element strides of the staged frames stay whole 16-byte vectors: fills of
     * whole frames are 4-byte aligned and the conv reads aligned pixels */
    if (x->shape[3] > INT64_MAX / x->shape[4] || p->kc > INT64_MAX / (x->shape[3] * x->shape[4])) return 0;
    p->kc = dk__conv3d_padded_channels(p->kc_data, d->groups, multiple);
    if (p->kc > INT64_MAX / (x->shape[3] * x->shape[4])) p->kc = p->kc_data;
    frame = (uint64_t)(x->shape[3] * x->shape[4] * p->kc);
    if (frame > (UINT64_MAX >> 8) / es) return 0;
    frame = c3d_round_up(frame * es, 16);
    p->frame_elems = frame / es;
    p->tap_major = d->groups == 1 && kt > 1 && cin > 1;
    p->copy_weight = p->kc > p->kc_data || p->tap_major || (kt > 1 && cpg > 1 && w->strides[1] != kt * w->strides[2]);
    p->weight_offset = p->kc > p->kc_data ? C3D_ALIGN : 0;
    if (p->copy_weight) {
        /* w's validated element count bounds Cout * KT*Cin/groups * KH*KW; the pad adds at most a quarter */
        uint64_t n = (uint64_t)w->shape[0] * (uint64_t)(p->kc / d->groups);
        p->weight_bytes = c3d_round_up(n * (uint64_t)(kh * kw) * es, C3D_ALIGN);
    }
    p->slab_offset = p->weight_offset + p->weight_bytes;
    avail = cap > p->slab_offset ? cap - p->slab_offset : 0;
    p->group = avail / frame < (uint64_t)staged_max ? (int64_t)(avail / frame) : staged_max;
    if (p->group < 1) p->group = 1;
    p->scratch_bytes = p->slab_offset + (uint64_t)p->group * frame;
    return 1;
}

/* ---- the context's scratch buffer ---- */

static dk_status c3d_scratch(dk_context *ctx, uint64_t bytes, dk_buffer **out) {
    dk_buffer *b = ctx->conv3d_scratch;
    dk_status st;
    if (b && b->size >= bytes) {
        *out = b;
        return DK_OK;
    }
    st = dk__conv3d_release_scratch(ctx); /* grow only: the old one goes after the queued work */
    if (st != DK_OK) return st;
    b = (dk_buffer *)calloc(1, sizeof *b);
    if (!b) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "dk_conv3d: out of host memory for a scratch handle");
    b->size = bytes;
    b->id = dk__next_buffer_id();
    b->owner = ctx;
    st = ctx->ops->buffer_create(ctx, b);
    if (st != DK_OK) {
        free(b);
        return st;
    }
    dk__mem_account(ctx, (int64_t)bytes);
    ctx->conv3d_scratch = b;
    *out = b;
    return DK_OK;
}

dk_status dk__conv3d_release_scratch(dk_context *ctx) {
    dk_buffer *b = ctx->conv3d_scratch;
    dk_status st;
    if (!b) return DK_OK;
    st = ctx->ops->sync(ctx);
    if (st != DK_OK) return st;
    dk__weight_drop_buffer(ctx, b);
    ctx->ops->buffer_destroy(ctx, b);
    dk__mem_account(ctx, -(int64_t)b->size);
    free(b);
    ctx->conv3d_scratch = NULL;
    return DK_OK;
}

/* ---- views ---- */

/* A 4-D view of buffer b at element offset off. */
static dk_tensor c3d_view(dk_buffer *b, dk_dtype dt, uint64_t off, const int64_t shape[4], const int64_t strides[4]) {
    dk_tensor v;
    int i;
    memset(&v, 0, sizeof v);
    v.buffer = b;
    v.dtype = dt;
    v.offset = off * dk_dtype_size(dt);
    v.ndim = 4;
    for (i = 0; i < 4; i++) {
        v.shape[i] = shape[i];
        v.strides[i] = strides[i];
    }
    return v;
}

dk_tensor dk__conv3d_frames(const dk_tensor *t, int64_t n, int64_t f0, int64_t count, int64_t step) {
    const int64_t shape[4] = {count, t->shape[1], t->shape[3], t->shape[4]};
    /* one frame: the time stride is never used, and may be any value (step * it may overflow) */
    const int64_t strides[4] = {count > 1 ? step * t->strides[2] : t->strides[2], t->strides[1], t->strides[3],
                                t->strides[4]};
    uint64_t off = t->offset / dk_dtype_size(t->dtype) + (uint64_t)(n * t->strides[0] + f0 * t->strides[2]);
    return c3d_view(t->buffer, t->dtype, off, shape, strides);
}

dk_tensor dk__conv3d_time_view(const dk_tensor *t, int64_t n0, int64_t images, int64_t f0, int64_t frames) {
    dk_tensor v = *t;
    v.offset += (uint64_t)(n0 * t->strides[0] + f0 * t->strides[2]) * dk_dtype_size(t->dtype);
    v.shape[0] = images;
    v.shape[2] = frames;
    return dk__merge_dims(&v, 3);
}

static void c3d_conv2d_desc(const dk_conv3d_desc *d, dk_conv2d_desc *c) {
    dk_conv2d_desc_init(c);
    c->stride_h = d->stride_h;
    c->stride_w = d->stride_w;
    c->dilation_h = d->dilation_h;
    c->dilation_w = d->dilation_w;
    c->groups = d->groups;
    c->pad_h = c->pad_top = d->pad_top; /* resolved, as validated conv2d descriptors are */
    c->pad_bottom = d->pad_bottom;
    c->pad_w = c->pad_left = d->pad_left;
    c->pad_right = d->pad_right;
    c->activation = d->activation;
    c->post_activation = d->post_activation;
    c->output_scale = d->output_scale;
    c->residual_scale = d->residual_scale;
}

/* ---- the paths ---- */

typedef struct c3d_call {
    dk_context *ctx;
    const dk_conv3d_desc *d;
    const dk_tensor *cache, *x, *w, *bias, *residual, *y;
    int64_t tc;
    dk_conv3d_plan plan;
    dk_buffer *scratch;
    dk_tensor wview; /* the staged conv's weight [Cout, KT*Cin/groups, KH, KW] */
} c3d_call;

/* FRAMES and TIME: output frames [direct_begin, direct_end) of every image, no copy. */
static dk_status c3d_direct(c3d_call *c) {
    const dk_conv3d_desc *d = c->d;
    const dk_conv3d_plan *p = &c->plan;
    const int64_t ob = p->direct_begin, count = p->direct_end - ob, pf = d->pad_front;
    dk_conv2d_desc cd;
    dk_status st = DK_OK;
    int64_t n;
    if (count <= 0) return DK_OK;
    c3d_conv2d_desc(d, &cd);
    if (p->path == DK__C3D_TIME) {
        /* [N, C, T, H*W] with a (KT, 1) kernel; x starts at the frame of output ob's first tap */
        const int64_t x0 = ob * d->stride_t - pf, f0 = x0 > 0 ? x0 : 0, images = c->x->shape[0];
        dk_tensor v[3], wv = dk__drop_dim(c->w, 4, 0); /* [Cout, Cin/groups, KT, 1] */
        v[0] = dk__conv3d_time_view(c->x, 0, images, f0, c->x->shape[2] - f0);
        v[1] = dk__conv3d_time_view(c->y, 0, images, ob, count);
        if (c->residual) v[2] = dk__conv3d_time_view(c->residual, 0, images, ob, count);
        cd.stride_h = d->stride_t;
        cd.dilation_h = d->dilation_t;
        cd.stride_w = cd.dilation_w = 1;
        cd.pad_h = cd.pad_top = x0 < 0 ? (int32_t)-x0 : 0;
        cd.pad_bottom = d->pad_back;
        cd.pad_w = cd.pad_left = cd.pad_right = 0;
        return c->ctx->ops->conv2d(c->ctx, &cd, &v[0], &wv, c->bias, c->residual ? &v[2] : NULL, &v[1]);
    }
    /* FRAMES: KT = 1, output frame o reads x frame o*stride_t - pad_front */
    for (n = 0; n < c->x->shape[0] && st == DK_OK; n++) {
        dk_tensor xv = dk__conv3d_frames(c->x, n, ob * d->stride_t - pf, count, d->stride_t);
        dk_tensor yv = dk__conv3d_frames(c->y, n, ob, count, 1), rv, wv = dk__drop_dim(c->w, 2, 0);
        if (c->residual) rv = dk__conv3d_frames(c->residual, n, ob, count, 1);
        st = c->ctx->ops->conv2d(c->ctx, &cd, &xv, &wv, c->bias, c->residual ? &rv : NULL, &yv);
    }
    return st;
}

/* The staged conv's weight: w as [Cout, KT*Cin/groups, KH, KW] (channel c*KT + kt),
 * a view of w or a dense copy at the start of the scratch. */
static dk_status c3d_weight(c3d_call *c) {
    const dk_tensor *w = c->w;
    const int64_t kt = w->shape[2], kh = w->shape[3], kw = w->shape[4], cpg = w->shape[1];
    const int64_t kcg = c->plan.kc / c->d->groups, shape[4] = {w->shape[0], kcg, kh, kw};
    const uint64_t woff = c->plan.weight_offset / dk_dtype_size(w->dtype);
    int64_t k;
    if (!c->plan.copy_weight) {
        /* channel c*KT + kt at c*strides[1] + kt*strides[2] = (c*KT + kt)*strides[2] */
        const int64_t strides[4] = {w->strides[0], kt == 1 ? w->strides[1] : w->strides[2], w->strides[3],
                                    w->strides[4]};
        c->wview = c3d_view(w->buffer, w->dtype, w->offset / dk_dtype_size(w->dtype), shape, strides);
        return DK_OK;
    } else {
        /* channel c of tap k at k*Cin + c (tap-major) or c*KT + k */
        const int64_t tm = c->plan.tap_major, tap = tm ? cpg * kh * kw : kh * kw;
        const int64_t ds[4] = {kcg * kh * kw, tm ? kh * kw : kt * kh * kw, kw, 1};
        const int64_t vs[4] = {kcg * kh * kw, kh * kw, kw, 1};
        c->wview = c3d_view(c->scratch, w->dtype, woff, shape, vs);
        if (kcg > kt * cpg) { /* the pad channels' weights are zeros */
            dk_status st = c->ctx->ops->buffer_fill(c->ctx, c->scratch, c->plan.weight_offset, c->plan.weight_bytes, 0u);
            if (st != DK_OK) return st;
        }
        for (k = 0; k < kt; k++) {
            dk_tensor src = dk__drop_dim(w, 2, k);
            const int64_t ext[4] = {w->shape[0], cpg, kh, kw};
            dk_tensor dst = c3d_view(c->scratch, w->dtype, woff + (uint64_t)(k * tap), ext, ds);
            dk_status st = c->ctx->ops->convert(c->ctx, &src, &dst);
            if (st != DK_OK) return st;
        }
    }
    return DK_OK;
}

/* Zeros in the pad channels [kc_data, kc) of the slab's `group` frames: a
 * convert from the zero block read with strides 0.  The copies write only the
 * data channels and c3d_fill whole frames, so these stay zeros for the call. */
static dk_status c3d_zero_pad_channels(c3d_call *c) {
    const dk_conv3d_plan *p = &c->plan;
    const dk_dtype dt = c->x->dtype;
    const uint64_t es = dk_dtype_size(dt);
    const int64_t h = c->x->shape[3], w = c->x->shape[4];
    const int64_t shape[4] = {p->group, p->kc - p->kc_data, h, w}, zeros[4] = {0, 0, 0, 0};
    const int64_t strides[4] = {(int64_t)p->frame_elems, 1, w * p->kc, p->kc};
    dk_tensor src, dst;
    dk_status st;
    if (p->kc == p->kc_data) return DK_OK;
    st = c->ctx->ops->buffer_fill(c->ctx, c->scratch, 0, C3D_ALIGN, 0u);
    if (st != DK_OK) return st;
    src = c3d_view(c->scratch, dt, 0, shape, zeros);
    dst = c3d_view(c->scratch, dt, p->slab_offset / es + (uint64_t)p->kc_data, shape, strides);
    return c->ctx->ops->convert(c->ctx, &src, &dst);
}

/* Zero the staged frames [o0, o1) (slot o - g0) of the group starting at g0. */
static dk_status c3d_fill(c3d_call *c, int64_t g0, int64_t o0, int64_t o1) {
    const uint64_t es = dk_dtype_size(c->x->dtype), fb = c->plan.frame_elems * es;
    if (o1 <= o0) return DK_OK;
    return c->ctx->ops->buffer_fill(c->ctx, c->scratch, c->plan.slab_offset + (uint64_t)(o0 - g0) * fb,
                                    (uint64_t)(o1 - o0) * fb, 0u);
}

/* Copies tap kt of the staged frames [o0, o1) from frames src0 + (o - o0)*stride_t of src. */
static dk_status c3d_copy(c3d_call *c, const dk_tensor *src, int64_t n, int64_t kt, int64_t g0, int64_t o0,
                          int64_t o1, int64_t src0) {
    const dk_conv3d_plan *p = &c->plan;
    const int64_t h = c->x->shape[3], w = c->x->shape[4], cin = c->x->shape[1];
    const int64_t shape[4] = {o1 - o0, cin, h, w};
    const int64_t strides[4] = {(int64_t)p->frame_elems, p->tap_major ? 1 : c->w->shape[2], w * p->kc, p->kc};
    const int64_t tap = p->tap_major ? kt * cin : kt; /* the tap's first staged channel */
    const uint64_t es = dk_dtype_size(c->x->dtype);
    dk_tensor s, dst;
    if (o1 <= o0) return DK_OK;
    s = dk__conv3d_frames(src, n, src0, o1 - o0, c->d->stride_t);
    dst = c3d_view(c->scratch, c->x->dtype,
                   p->slab_offset / es + (uint64_t)(o0 - g0) * p->frame_elems + (uint64_t)tap, shape, strides);
    return c->ctx->ops->convert(c->ctx, &s, &dst);
}

/* Output frames [a, b) of image n through the staged copy, group by group. */
static dk_status c3d_staged(c3d_call *c, int64_t n, int64_t a, int64_t b) {
    const dk_conv3d_desc *d = c->d;
    const dk_conv3d_plan *p = &c->plan;
    const int64_t st = d->stride_t, dt = d->dilation_t, kt = c->w->shape[2], t = c->x->shape[2];
    const int64_t pf = d->pad_front, z = pf - c->tc, reach = (kt - 1) * dt;
    const uint64_t es = dk_dtype_size(c->x->dtype);
    dk_conv2d_desc cd;
    dk_status s = DK_OK;
    int64_t g0, k;
    c3d_conv2d_desc(d, &cd);
    for (g0 = a; g0 < b && s == DK_OK; g0 += p->group) {
        const int64_t g1 = g0 + p->group < b ? g0 + p->group : b, count = g1 - g0;
        /* frames with a tap in the zeros before (s < z) or after (s >= pf + T) */
        const int64_t zf = c3d_clamp(c3d_ceil_div(z, st), g0, g1);
        const int64_t zb = c3d_clamp(c3d_ceil_div(pf + t - reach, st), zf, g1);
        const int64_t xs[4] = {count, p->kc, c->x->shape[3], c->x->shape[4]};
        const int64_t xstr[4] = {(int64_t)p->frame_elems, 1, c->x->shape[4] * p->kc, p->kc};
        dk_tensor xv, yv, rv;
        s = c3d_fill(c, g0, g0, zf);
        if (s == DK_OK) s = c3d_fill(c, g0, zb, g1);
        for (k = 0; k < kt && s == DK_OK; k++) {
            /* tap k of frame o reads concatenation frame o*st + k*dt: the cache
             * holds [z, pf), x holds [pf, pf + T) */
            int64_t c0 = c3d_clamp(c3d_ceil_div(z - k * dt, st), g0, g1);
            int64_t c1 = c3d_clamp(c3d_ceil_div(pf - k * dt, st), c0, g1);
            int64_t x1 = c3d_clamp(c3d_ceil_div(pf + t - k * dt, st), c1, g1);
            if (c1 > c0) s = c3d_copy(c, c->cache, n, k, g0, c0, c1, c0 * st + k * dt - z);
            if (s == DK_OK && x1 > c1) s = c3d_copy(c, c->x, n, k, g0, c1, x1, c1 * st + k * dt - pf);
        }
        if (s != DK_OK) break;
        xv = c3d_view(c->scratch, c->x->dtype, p->slab_offset / es, xs, xstr);
        yv = dk__conv3d_frames(c->y, n, g0, count, 1);
        if (c->residual) rv = dk__conv3d_frames(c->residual, n, g0, count, 1);
        s = c->ctx->ops->conv2d(c->ctx, &cd, &xv, &c->wview, c->bias, c->residual ? &rv : NULL, &yv);
    }
    return s;
}

/* The staged channel multiple: the caller's (multiple >= 0), else
 * DIFKERN_CONV3D_PAD_CHANNELS where set, else the backend's. */
static int64_t c3d_channel_multiple(dk_context *ctx, dk_dtype dt, int64_t multiple) {
    if (multiple >= 0) return multiple;
    if (ctx->knobs.conv3d_pad_channels >= 0) return ctx->knobs.conv3d_pad_channels;
    return ctx->ops->conv_channel_multiple ? ctx->ops->conv_channel_multiple(ctx, dt) : 0;
}

dk_status dk__conv3d(dk_context *ctx, const char *op, const dk_conv3d_desc *d, const dk_tensor *cache,
                     const dk_tensor *x, const dk_tensor *w, const dk_tensor *bias, const dk_tensor *residual,
                     const dk_tensor *y, int64_t multiple) {
    c3d_call c;
    dk_status st;
    int64_t n;
    int planned;
    memset(&c, 0, sizeof c);
    c.ctx = ctx;
    c.d = d;
    c.cache = cache;
    c.x = x;
    c.w = w;
    c.bias = bias;
    c.residual = residual;
    c.y = y;
    c.tc = cache ? cache->shape[2] : 0;
    planned = dk__conv3d_plan(d, c.tc, x, w, y, residual, c3d_channel_multiple(ctx, x->dtype, multiple),
                              DK_CONV3D_SCRATCH_CAP, &c.plan);
    /* whatever would be staged, the backend's kernels may read in place (not
     * where the caller named a staging multiple: the tests' staged path) */
    if ((!planned || c.plan.scratch_bytes) && multiple < 0 && ctx->knobs.conv3d_in_place && ctx->ops->conv3d_in_place &&
        ctx->ops->conv3d_in_place(ctx, d, cache, x, w, bias, residual, y, &st))
        return st;
    if (!planned)
        return dk__fail(ctx, DK_ERR_UNSUPPORTED, "%s: one staged frame (H*W*KT*Cin = %lld*%lld*%lld) overflows 64 bits",
                        op, (long long)(x->shape[3] * x->shape[4]), (long long)w->shape[2], (long long)x->shape[1]);
    st = c3d_direct(&c);
    if (st != DK_OK || !c.plan.scratch_bytes) return st;
    st = c3d_scratch(ctx, c.plan.scratch_bytes, &c.scratch);
    if (st == DK_OK) {
        dk__buffer_written(ctx, c.scratch);
        st = c3d_weight(&c);
        if (st == DK_OK) st = c3d_zero_pad_channels(&c);
    }
    for (n = 0; n < x->shape[0] && st == DK_OK; n++) {
        st = c3d_staged(&c, n, 0, c.plan.direct_begin);
        if (st == DK_OK) st = c3d_staged(&c, n, c.plan.direct_end, c.plan.ot);
    }
    return st;
}

#undef C3D_ALIGN
