/* TAESD family execution shared by both directions: the activation buffer
 * (three 64-channel slots + the pool slot, grown only), the conv and Block
 * steps on difkern's ops, and the layer loop. */
#include "taesd_internal.h"

#include <stdio.h>
#include <string.h>

#define TAER_ALIGN 256u

uint64_t dk__taesd_bytes(int64_t n, int64_t c, int64_t h, int64_t w, uint64_t es) {
    int64_t e;
    if (!dk_checked_mul(n, c, &e) || !dk_checked_mul(e, h, &e) || !dk_checked_mul(e, w, &e) ||
        !dk_checked_mul(e, (int64_t)es, &e) || e > INT64_MAX - (int64_t)TAER_ALIGN)
        return 0;
    return ((uint64_t)e + TAER_ALIGN - 1) / TAER_ALIGN * TAER_ALIGN;
}

dk_status dk__taesd_check_tensor(dk_taesd *t, const char *fn, const char *what, const dk_tensor *x, int64_t n,
                                 int64_t c, int64_t h, int64_t w) {
    const int64_t want[4] = {n, c, h, w};
    int32_t i;
    if (!x) return dk__fail(t->ctx, DK_ERR_INVALID_ARGUMENT, "taesd: %s: %s is NULL", fn, what);
    if (x->ndim != 4 || dk_tensor_numel(x) < 1)
        return dk__fail(t->ctx, DK_ERR_INVALID_ARGUMENT, "taesd: %s: %s must be a 4-D tensor [N, C, H, W] (ndim %d)",
                        fn, what, (int)x->ndim);
    for (i = 0; i < 4; i++)
        if (want[i] >= 0 && x->shape[i] != want[i])
            return dk__fail(t->ctx, DK_ERR_INVALID_ARGUMENT,
                            "taesd: %s: %s has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld, %lld, %lld]"
                            " (-1: any)",
                            fn, what, (long long)x->shape[0], (long long)x->shape[1], (long long)x->shape[2],
                            (long long)x->shape[3], (long long)n, (long long)c, (long long)h, (long long)w);
    return DK_OK;
}

dk_status dk__taesd_reserve(dk_taesd *t, int64_t n, int64_t h, int64_t w, int64_t ph, int64_t pw,
                            int64_t io_floats) {
    uint64_t es = dk_dtype_size(t->opt.dtype);
    uint64_t slot = dk__taesd_bytes(n, DK__TAESD_CH, h, w, es);
    uint64_t pool = t->pool ? dk__taesd_bytes(n, DK__TAESD_POOL_CH, ph, pw, es) : 0;
    uint64_t io = io_floats > 0 ? dk__taesd_bytes(io_floats, 1, 1, 1, sizeof(float)) : 0;
    dk_status st;
    if (slot == 0 || (t->pool && pool == 0) || (io_floats > 0 && io == 0) || slot > UINT64_MAX / 4 - pool)
        return dk__fail(t->ctx, DK_ERR_INVALID_ARGUMENT,
                        "taesd: a batch of %lld at %lld x %lld needs more memory than 64-bit sizes hold",
                        (long long)n, (long long)h, (long long)w);
    if (slot > t->slot_bytes || pool > t->pool_bytes) {
        if (t->act) dk_buffer_destroy(t->ctx, t->act);
        t->act = NULL;
        t->act_bytes = 0;
        if (slot < t->slot_bytes) slot = t->slot_bytes;
        if (pool < t->pool_bytes) pool = t->pool_bytes;
        st = dk_buffer_create(t->ctx, 3 * slot + pool, &t->act);
        if (st != DK_OK) {
            t->slot_bytes = t->pool_bytes = 0;
            return st;
        }
        t->slot_bytes = slot;
        t->pool_bytes = pool;
        t->act_bytes = 3 * slot + pool;
    }
    if (io > t->io_bytes) {
        if (t->io) dk_buffer_destroy(t->ctx, t->io);
        t->io = NULL;
        t->io_bytes = 0;
        st = dk_buffer_create(t->ctx, io, &t->io);
        if (st != DK_OK) return st;
        t->io_bytes = io;
    }
    return DK_OK;
}

void dk_taesd_release_buffers(dk_taesd *tae) {
    if (!tae) return;
    if (tae->act) dk_buffer_destroy(tae->ctx, tae->act);
    if (tae->io) dk_buffer_destroy(tae->ctx, tae->io);
    tae->act = tae->io = NULL;
    tae->act_bytes = tae->slot_bytes = tae->pool_bytes = tae->io_bytes = 0;
}

dk_tensor dk__taesd_slot(const dk_taesd *t, int32_t s, int64_t n, int64_t c, int64_t h, int64_t w) {
    return dk_tensor_nhwc(t->act, (uint64_t)s * t->slot_bytes, t->opt.dtype, n, c, h, w);
}

dk_status dk__taesd_where(dk_taesd *t, dk_status st, int32_t dir, int32_t index, const char *what) {
    char msg[768];
    dk__strlcpy(msg, dk_last_error(t->ctx), sizeof msg);
    return dk__fail(t->ctx, st, "taesd: %s layer %d (%s): %s", dir == DK__TAESD_ENC ? "encoder" : "decoder",
                    (int)index, what, msg);
}

/* One dk_conv2d of parameters wi / bi (bi < 0: no bias) with padding pad. */
static dk_status taer_conv(dk_taesd *t, int32_t dir, int32_t index, const char *what, int32_t wi, int32_t bi,
                           int32_t pad, int32_t stride, int32_t upsample, dk_activation act, const dk_tensor *x,
                           const dk_tensor *residual, const dk_tensor *y) {
    dk_conv2d_desc d;
    dk_tensor wt = dk__taesd_weight(t, dir, wi), bt;
    dk_status st;
    if (bi >= 0) bt = dk__taesd_weight(t, dir, bi);
    dk_conv2d_desc_init(&d);
    d.pad_h = d.pad_w = pad;
    d.stride_h = d.stride_w = stride;
    d.upsample = upsample;
    d.activation = act;
    st = dk_conv2d(t->ctx, &d, x, &wt, bi >= 0 ? &bt : NULL, residual, y);
    return st == DK_OK ? DK_OK : dk__taesd_where(t, st, dir, index, what);
}

/* y = relu(conv(x) + residual): the Block's fuse.  The epilogue applies its
 * activation before the residual, so the ReLU after the sum is a separate
 * pass; this is the one place that changes when the epilogue can apply an
 * activation after the residual. */
static dk_status taer_conv_residual_relu(dk_taesd *t, int32_t dir, int32_t index, const char *what, int32_t wi,
                                         int32_t bi, int32_t pad, const dk_tensor *x, const dk_tensor *residual,
                                         const dk_tensor *y) {
    dk_status st = taer_conv(t, dir, index, what, wi, bi, pad, 1, 1, DK_ACT_NONE, x, residual, y);
    if (st == DK_OK) {
        st = dk_activation_forward(t->ctx, DK_ACT_RELU, y, y);
        if (st != DK_OK) st = dk__taesd_where(t, st, dir, index, "fuse relu");
    }
    return st;
}

/* Block on slot *cur: x -> u -> v -> u (+x), rotating over the three slots;
 * with a pool branch x' = x + pool(x) goes to another slot first. */
static dk_status taer_block(dk_taesd *t, int32_t dir, const dk__taesd_layer *L, int32_t *cur, int64_t n,
                            int64_t h, int64_t w) {
    int32_t xs = *cur, us = (xs + 1) % 3, vs = (xs + 2) % 3;
    dk_tensor x, u, v;
    dk_status st;
    if (L->pool) {
        dk_tensor p = dk_tensor_nhwc(t->act, 3 * t->slot_bytes, t->opt.dtype, n, DK__TAESD_POOL_CH, h, w);
        dk_tensor g = dk__taesd_weight(t, dir, L->pg), b = dk__taesd_weight(t, dir, L->pb);
        dk_group_norm_desc gn;
        x = dk__taesd_slot(t, xs, n, DK__TAESD_CH, h, w);
        u = dk__taesd_slot(t, us, n, DK__TAESD_CH, h, w);
        st = taer_conv(t, dir, L->index, "pool.0", L->pw0, -1, 0, 1, 1, DK_ACT_NONE, &x, NULL, &p);
        if (st != DK_OK) return st;
        dk_group_norm_desc_init(&gn);
        gn.groups = DK__TAESD_POOL_GROUPS;
        gn.eps = 1e-5f;
        gn.activation = DK_ACT_RELU;
        st = dk_group_norm(t->ctx, &gn, &p, &g, &b, &p);
        if (st != DK_OK) return dk__taesd_where(t, st, dir, L->index, "pool.1");
        st = taer_conv(t, dir, L->index, "pool.3", L->pw3, -1, 0, 1, 1, DK_ACT_NONE, &p, &x, &u);
        if (st != DK_OK) return st;
        xs = us; /* x' = x + pool(x); the old x is dead */
        us = (xs + 1) % 3;
        vs = (xs + 2) % 3;
    }
    x = dk__taesd_slot(t, xs, n, DK__TAESD_CH, h, w);
    u = dk__taesd_slot(t, us, n, DK__TAESD_CH, h, w);
    v = dk__taesd_slot(t, vs, n, DK__TAESD_CH, h, w);
    st = taer_conv(t, dir, L->index, "conv.0", L->cw[0], L->cb[0], 1, 1, 1, DK_ACT_RELU, &x, NULL, &u);
    if (st == DK_OK) st = taer_conv(t, dir, L->index, "conv.2", L->cw[1], L->cb[1], 1, 1, 1, DK_ACT_RELU, &u, NULL, &v);
    if (st == DK_OK) st = taer_conv_residual_relu(t, dir, L->index, "conv.4", L->cw[2], L->cb[2], 1, &v, &x, &u);
    if (st == DK_OK) *cur = us;
    return st;
}

dk_status dk__taesd_forward(dk_taesd *t, int32_t dir, int64_t n, int64_t h, int64_t w, int32_t *out_slot,
                            int64_t *oh, int64_t *ow) {
    const dk__taesd_net *net = &t->net[dir];
    int32_t cur = 1, i;
    dk_status st = DK_OK;
    for (i = 0; i < net->nlayers && st == DK_OK; i++) {
        const dk__taesd_layer *L = &net->layers[i];
        if (L->kind == DK__TAESD_L_BLOCK) {
            st = taer_block(t, dir, L, &cur, n, h, w);
        } else {
            int32_t dst = (cur + 1) % 3;
            int64_t h2 = L->stride == 2 ? (h - 1) / 2 + 1 : h * L->upsample;
            int64_t w2 = L->stride == 2 ? (w - 1) / 2 + 1 : w * L->upsample;
            dk_tensor x = dk__taesd_slot(t, cur, n, L->cin, h, w), y = dk__taesd_slot(t, dst, n, L->cout, h2, w2);
            st = taer_conv(t, dir, L->index, "conv", L->w, L->b, 1, L->stride, L->upsample,
                           L->relu ? DK_ACT_RELU : DK_ACT_NONE, &x, NULL, &y);
            cur = dst;
            h = h2;
            w = w2;
        }
    }
    *out_slot = cur;
    *oh = h;
    *ow = w;
    return st;
}

#undef TAER_ALIGN
