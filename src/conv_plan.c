/* Conv planning shared by the backends (declared in plan.h): the geometry of
 * conv_transpose2d's stride phases, which operands get channels-last copies,
 * small-Cin padding, packed weight layouts and the fused 2x upsample's reach. */
#include "plan.h"
#include "../backends/backend.h"

static int64_t plan_gcd(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Output o reads input (o + pad - k * dilation) / stride through tap k where
 * that division is exact; for the outputs of one phase those k are k0, k0 +
 * step, ... with step = stride / gcd(stride, dilation), and consecutive taps
 * read inputs dilation / gcd apart, backwards. */
void dk__transposed_taps(int64_t out_start, int64_t stride, int64_t pad, int64_t dilation, int64_t ksize,
                         dk_phase_taps *t) {
    const int64_t step = stride / plan_gcd(stride, dilation);
    int64_t k;
    t->k0 = 0;
    t->k_step = step;
    t->taps = 0;
    t->off0 = 0;
    t->off_step = -(step * dilation) / stride;
    for (k = 0; k < step && k < ksize; k++) {
        const int64_t num = out_start + pad - k * dilation;
        if (num % stride == 0) {
            t->k0 = k;
            t->taps = (ksize - k + step - 1) / step;
            t->off0 = num / stride;
            break;
        }
    }
}

int64_t dk__phase_outputs(int64_t out_start, int64_t stride, int64_t out_size) {
    return out_start < out_size ? (out_size - out_start + stride - 1) / stride : 0;
}

int dk__channels_last16(const dk_tensor *t, uint64_t addr, int unit_dims_free) {
    const int64_t v = 16 / (int64_t)dk_dtype_size(t->dtype);
    int i;
    if (t->ndim != 4 || t->strides[1] != 1 || addr % 16 != 0) return 0;
    for (i = 0; i < 4; i++)
        if (i != 1 && (t->shape[i] > 1 || !unit_dims_free) && t->strides[i] % v != 0) return 0;
    return 1;
}

int dk__conv_stage_plan(const dk_tensor *const ops[3], const int want[3], int64_t cpad, int whole_vectors,
                        uint64_t align, dk_stage_plan *plan) {
    int i, any = 0;
    memset(plan, 0, sizeof *plan);
    for (i = 0; i < 3; i++) {
        const dk_tensor *t = ops[i];
        const int padded = i == 0 && cpad > 0;
        plan->offset[i] = plan->total;
        if (!t || (!padded && !want[i])) continue;
        plan->channels[i] = padded ? cpad : t->shape[1];
        if (!padded && whole_vectors) {
            /* the copy is dense channels-last on an aligned start: in vectors
             * where its channel count (and so every pixel stride) is */
            dk_tensor copy = dk_tensor_nhwc(NULL, 0, t->dtype, t->shape[0], t->shape[1], t->shape[2], t->shape[3]);
            if (!dk__channels_last16(&copy, 0, 1)) continue;
        }
        plan->staged[i] = 1;
        plan->bytes[i] = (uint64_t)(t->shape[0] * plan->channels[i] * t->shape[2] * t->shape[3]) *
                         dk_dtype_size(t->dtype);
        plan->total += (plan->bytes[i] + align - 1) / align * align;
        any = 1;
    }
    return any;
}

dk_status dk__conv_stage_copy_in(dk_context *ctx, const dk_tensor *x, const dk_tensor *residual, const int staged[3],
                                 const dk_tensor t[3], int64_t cpad) {
    dk_status st = DK_OK;
    if (staged[0] && cpad) {
        /* zeros over the whole copy (one fill; the real channels are then
         * written twice, cin/cpad of it), then x into its first channels */
        const uint64_t bytes = (uint64_t)dk_tensor_numel(&t[0]) * dk_dtype_size(x->dtype);
        dk_tensor v = t[0];
        v.shape[1] = x->shape[1];
        st = ctx->ops->buffer_fill(ctx, t[0].buffer, t[0].offset, bytes, 0);
        if (st == DK_OK) st = ctx->ops->convert(ctx, x, &v);
    } else if (staged[0]) {
        st = ctx->ops->convert(ctx, x, &t[0]);
    }
    if (st == DK_OK && staged[2]) st = ctx->ops->convert(ctx, residual, &t[2]);
    return st;
}

dk_status dk__conv_stage_copy_out(dk_context *ctx, const int staged[3], const dk_tensor t[3], const dk_tensor *y,
                                  dk_status st) {
    if (st != DK_OK || !staged[1]) return st;
    return ctx->ops->convert(ctx, &t[1], y);
}

int64_t dk__conv_cin_pad(const dk_conv2d_desc *d, const dk_tensor *x, const dk_tensor *y, int64_t cin,
                         int64_t slice) {
    if (d->groups != 1 || d->upsample != 1 || y->dtype != x->dtype || cin % slice == 0) return 0;
    return (cin + slice - 1) / slice * slice;
}

/* The pads are part of the phase weights' cache variant (12 bits each). */
int dk__conv_up2_fits(const dk_conv2d_desc *d) {
    return d->upsample == 2 && d->stride_h == 1 && d->stride_w == 1 && d->dilation_h == 1 && d->dilation_w == 1 &&
           d->pad_h < 4096 && d->pad_w < 4096;
}

void dk__weight_pack_strides(const int64_t ext[4], const int order[4], int64_t s[4]) {
    int64_t step = 1;
    int i;
    for (i = 0; i < 4; i++) {
        s[order[i]] = step;
        step *= ext[order[i]];
    }
}

void dk__weight_pack_plan(const dk_tensor *w, int transposed, int64_t coutp, int64_t cinp, const int order[4],
                          dk_pack_plan *plan) {
    const int64_t cout = transposed ? w->shape[1] : w->shape[0], cin = transposed ? w->shape[0] : w->shape[1];
    int64_t ext[4];
    ext[0] = coutp;
    ext[1] = cinp;
    ext[2] = w->shape[2];
    ext[3] = w->shape[3];
    dk__weight_pack_strides(ext, order, plan->s);
    plan->w_s[transposed ? 1 : 0] = plan->s[0];
    plan->w_s[transposed ? 0 : 1] = plan->s[1];
    plan->w_s[2] = plan->s[2];
    plan->w_s[3] = plan->s[3];
    plan->elements = (uint64_t)(coutp * cinp * ext[2] * ext[3]);
    plan->padded = coutp > cout || cinp > cin;
}
