/* fp64 reference implementations (see reference.h).  Deliberately naive: each
 * is the formula of include/difkern.h written as loops, so that it is obviously
 * right; speed does not matter at the harness's sizes. */
#include "reference.h"

#include <math.h>
#include <stdlib.h>

double hr_act(dk_activation act, double x) {
    switch (act) {
    case DK_ACT_NONE: return x;
    case DK_ACT_RELU: return x > 0.0 ? x : 0.0;
    case DK_ACT_SILU: return x / (1.0 + exp(-x));
    case DK_ACT_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case DK_ACT_GELU_TANH: {
        const double c = sqrt(2.0 / 3.14159265358979323846);
        return 0.5 * x * (1.0 + tanh(c * (x + 0.044715 * x * x * x)));
    }
    case DK_ACT_TANH: return tanh(x);
    }
    return x;
}

/* out = post_act(output_scale * act(acc + bias) + residual_scale * residual) */
static double hr_epilogue(double acc, const double *bias, int64_t channel, dk_activation act,
                          double output_scale, const double *residual, int64_t index,
                          double residual_scale, dk_activation post_act) {
    double v = output_scale * hr_act(act, acc + (bias ? bias[channel] : 0.0));
    if (residual) v += residual_scale * residual[index];
    return hr_act(post_act, v);
}

/* ------------------------------------------------------------------- conv */

/* conv2d's padding per side: the per-side fields where the case sets them, else pad_h / pad_w */
static int64_t hr_pad_top(const hc_conv *p) { return p->sides ? p->pad_top : p->pad_h; }
static int64_t hr_pad_bottom(const hc_conv *p) { return p->sides ? p->pad_bottom : p->pad_h; }
static int64_t hr_pad_left(const hc_conv *p) { return p->sides ? p->pad_left : p->pad_w; }
static int64_t hr_pad_right(const hc_conv *p) { return p->sides ? p->pad_right : p->pad_w; }

int64_t hr_conv_out_h(const hc_conv *p, int transposed) {
    if (transposed)
        return (p->h - 1) * p->stride_h - 2 * p->pad_h + p->dilation_h * (p->kh - 1) + p->output_padding_h + 1;
    return (p->h * p->upsample + hr_pad_top(p) + hr_pad_bottom(p) - p->dilation_h * (p->kh - 1) - 1) / p->stride_h +
           1;
}

int64_t hr_conv_out_w(const hc_conv *p, int transposed) {
    if (transposed)
        return (p->w - 1) * p->stride_w - 2 * p->pad_w + p->dilation_w * (p->kw - 1) + p->output_padding_w + 1;
    return (p->w * p->upsample + hr_pad_left(p) + hr_pad_right(p) - p->dilation_w * (p->kw - 1) - 1) / p->stride_w +
           1;
}

void hr_conv2d(const hc_conv *p, const double *x, const double *w, const double *bias,
               const double *residual, double *y) {
    int64_t oh = hr_conv_out_h(p, 0), ow = hr_conv_out_w(p, 0);
    int64_t uh = p->h * p->upsample, uw = p->w * p->upsample; /* the upsampled input */
    int64_t cin_g = p->cin / p->groups, cout_g = p->cout / p->groups;
    int64_t n, co, oy, ox, ci, ky, kx;
    for (n = 0; n < p->n; n++)
        for (co = 0; co < p->cout; co++)
            for (oy = 0; oy < oh; oy++)
                for (ox = 0; ox < ow; ox++) {
                    int64_t g = co / cout_g, yi = ((n * p->cout + co) * oh + oy) * ow + ox;
                    double acc = 0.0;
                    for (ci = 0; ci < cin_g; ci++)
                        for (ky = 0; ky < p->kh; ky++)
                            for (kx = 0; kx < p->kw; kx++) {
                                int64_t iy = oy * p->stride_h - hr_pad_top(p) + ky * p->dilation_h;
                                int64_t ix = ox * p->stride_w - hr_pad_left(p) + kx * p->dilation_w;
                                int64_t c = g * cin_g + ci;
                                if (iy < 0 || iy >= uh || ix < 0 || ix >= uw) continue; /* zero pad */
                                /* nearest upsampling: upsampled (iy, ix) reads x[iy/up, ix/up] */
                                acc += x[((n * p->cin + c) * p->h + iy / p->upsample) * p->w + ix / p->upsample] *
                                       w[((co * cin_g + ci) * p->kh + ky) * p->kw + kx];
                            }
                    y[yi] = hr_epilogue(acc, bias, co, p->act, p->output_scale, residual, yi, p->residual_scale,
                                        p->post_act);
                }
}

int64_t hr_conv3d_out(int64_t in, int64_t lo, int64_t hi, int64_t dilation, int64_t k, int64_t stride) {
    return (in + lo + hi - dilation * (k - 1) - 1) / stride + 1;
}

void hr_conv3d(const hc_conv3d *p, const double *cache, const double *x, const double *w, const double *bias,
               const double *residual, double *y) {
    int64_t ot = hr_conv3d_out(p->t, p->pad_front, p->pad_back, p->dilation_t, p->kt, p->stride_t);
    int64_t oh = hr_conv3d_out(p->h, p->pad_top, p->pad_bottom, p->dilation_h, p->kh, p->stride_h);
    int64_t ow = hr_conv3d_out(p->w, p->pad_left, p->pad_right, p->dilation_w, p->kw, p->stride_w);
    int64_t cin_g = p->cin / p->groups, cout_g = p->cout / p->groups, tc = cache ? p->tc : 0;
    int64_t z = p->pad_front - tc; /* zero frames before the cache */
    int64_t n, co, of, oy, ox, ci, kf, ky, kx;
    for (n = 0; n < p->n; n++)
        for (co = 0; co < p->cout; co++)
            for (of = 0; of < ot; of++)
                for (oy = 0; oy < oh; oy++)
                    for (ox = 0; ox < ow; ox++) {
                        int64_t g = co / cout_g, yi = (((n * p->cout + co) * ot + of) * oh + oy) * ow + ox;
                        double acc = 0.0;
                        for (ci = 0; ci < cin_g; ci++)
                            for (kf = 0; kf < p->kt; kf++)
                                for (ky = 0; ky < p->kh; ky++)
                                    for (kx = 0; kx < p->kw; kx++) {
                                        /* frame s of the concatenation: zeros, cache, x, zeros */
                                        int64_t s = of * p->stride_t + kf * p->dilation_t;
                                        int64_t iy = oy * p->stride_h - p->pad_top + ky * p->dilation_h;
                                        int64_t ix = ox * p->stride_w - p->pad_left + kx * p->dilation_w;
                                        int64_t c = g * cin_g + ci;
                                        double v;
                                        if (iy < 0 || iy >= p->h || ix < 0 || ix >= p->w) continue;
                                        if (s < z || s >= z + tc + p->t) continue;
                                        if (s < z + tc)
                                            v = cache[(((n * p->cin + c) * tc + (s - z)) * p->h + iy) * p->w + ix];
                                        else
                                            v = x[(((n * p->cin + c) * p->t + (s - z - tc)) * p->h + iy) * p->w + ix];
                                        acc += v * w[(((co * cin_g + ci) * p->kt + kf) * p->kh + ky) * p->kw + kx];
                                    }
                        y[yi] = hr_epilogue(acc, bias, co, p->act, p->output_scale, residual, yi,
                                            p->residual_scale, p->post_act);
                    }
}

/* Transposed conv as the scatter it is defined by: input (iy, ix) with tap
 * (ky, kx) lands on output (iy*stride - pad + ky*dilation, ...). */
void hr_conv_transpose2d(const hc_conv *p, const double *x, const double *w, const double *bias,
                         const double *residual, double *y) {
    int64_t oh = hr_conv_out_h(p, 1), ow = hr_conv_out_w(p, 1);
    int64_t cin_g = p->cin / p->groups, cout_g = p->cout / p->groups;
    int64_t total = p->n * p->cout * oh * ow, i;
    int64_t n, ci, iy, ix, col, ky, kx, co, oy, ox;
    for (i = 0; i < total; i++) y[i] = 0.0;
    for (n = 0; n < p->n; n++)
        for (ci = 0; ci < p->cin; ci++)
            for (iy = 0; iy < p->h; iy++)
                for (ix = 0; ix < p->w; ix++) {
                    double xv = x[((n * p->cin + ci) * p->h + iy) * p->w + ix];
                    int64_t g = ci / cin_g;
                    for (col = 0; col < cout_g; col++)
                        for (ky = 0; ky < p->kh; ky++)
                            for (kx = 0; kx < p->kw; kx++) {
                                int64_t ty = iy * p->stride_h - p->pad_h + ky * p->dilation_h;
                                int64_t tx = ix * p->stride_w - p->pad_w + kx * p->dilation_w;
                                if (ty < 0 || ty >= oh || tx < 0 || tx >= ow) continue;
                                co = g * cout_g + col;
                                y[((n * p->cout + co) * oh + ty) * ow + tx] +=
                                    xv * w[((ci * cout_g + col) * p->kh + ky) * p->kw + kx];
                            }
                }
    for (n = 0; n < p->n; n++)
        for (co = 0; co < p->cout; co++)
            for (oy = 0; oy < oh; oy++)
                for (ox = 0; ox < ow; ox++) {
                    int64_t yi = ((n * p->cout + co) * oh + oy) * ow + ox;
                    y[yi] = hr_epilogue(y[yi], bias, co, p->act, p->output_scale, residual, yi, p->residual_scale,
                                        p->post_act);
                }
}

/* ----------------------------------------------------------------- matmul */

void hr_matmul(const hc_matmul *p, const double *a, const double *b, const double *bias,
               const double *residual, double *y) {
    int64_t nb = p->batch > 0 ? p->batch : 1, bi, m, n, k;
    for (bi = 0; bi < nb; bi++) {
        const double *ab = a + (p->batch > 0 && !p->a_shared ? bi * p->m * p->k : 0);
        const double *bb = b + (p->batch > 0 && !p->b_shared ? bi * p->k * p->n : 0);
        for (m = 0; m < p->m; m++)
            for (n = 0; n < p->n; n++) {
                int64_t yi = (bi * p->m + m) * p->n + n;
                double acc = 0.0;
                for (k = 0; k < p->k; k++) acc += ab[m * p->k + k] * bb[k * p->n + n];
                y[yi] = hr_epilogue(acc, bias, n, p->act, p->output_scale, residual, yi, p->residual_scale,
                                    p->post_act);
            }
    }
}

void hr_linear(const hc_matmul *p, const double *x, const double *w, const double *bias,
               const double *residual, double *y) {
    int64_t nb = p->batch > 0 ? p->batch : 1, bi, m, n, k;
    for (bi = 0; bi < nb; bi++)
        for (m = 0; m < p->m; m++)
            for (n = 0; n < p->n; n++) {
                int64_t yi = (bi * p->m + m) * p->n + n;
                double acc = 0.0;
                for (k = 0; k < p->k; k++) acc += x[(bi * p->m + m) * p->k + k] * w[n * p->k + k];
                y[yi] = hr_epilogue(acc, bias, n, p->act, p->output_scale, residual, yi, p->residual_scale,
                                    p->post_act);
            }
}

/* ------------------------------------------------------------------ norms */

void hr_group_norm(const hc_norm *p, const double *x, const double *gamma, const double *beta,
                   double *y) {
    int64_t N = p->shape[0], C = p->shape[1], HW = p->shape[2] * p->shape[3]; /* HW: every position */
    int64_t cg = C / p->groups, n, g, c, i;
    if (p->ndim == 5) HW *= p->shape[4];
    for (n = 0; n < N; n++)
        for (g = 0; g < p->groups; g++) {
            const double *xg = x + (n * C + g * cg) * HW; /* a group is contiguous in NCHW */
            double *yg = y + (n * C + g * cg) * HW;
            int64_t count = cg * HW;
            double mean = 0.0, var = 0.0, inv;
            for (i = 0; i < count; i++) mean += xg[i];
            mean /= (double)count;
            for (i = 0; i < count; i++) var += (xg[i] - mean) * (xg[i] - mean);
            var /= (double)count; /* biased, as PyTorch */
            inv = 1.0 / sqrt(var + (double)p->eps);
            for (c = 0; c < cg; c++) {
                int64_t ch = g * cg + c;
                for (i = 0; i < HW; i++) {
                    double v = (xg[c * HW + i] - mean) * inv;
                    if (gamma) v = v * gamma[ch] + beta[ch];
                    yg[c * HW + i] = hr_act(p->act, v);
                }
            }
        }
}

void hr_rms_norm(const hc_norm *p, const double *x, const double *gamma, const double *beta, double *y) {
    int64_t n = p->shape[0], c = p->shape[1], sp = 1, b, ch, i;
    int32_t j;
    for (j = 2; j < p->ndim; j++) sp *= p->shape[j];
    for (b = 0; b < n; b++)
        for (i = 0; i < sp; i++) {
            const double *xp = x + b * c * sp + i;
            double *yp = y + b * c * sp + i;
            double sum = 0.0, scale;
            for (ch = 0; ch < c; ch++) sum += xp[ch * sp] * xp[ch * sp];
            if (p->form == DK_RMS_NORM_L2) /* F.normalize(x, dim=1) * sqrt(C) */
                scale = sqrt((double)c) / (sqrt(sum) < (double)p->eps ? (double)p->eps : sqrt(sum));
            else /* x * rsqrt(mean(x^2) + eps) */
                scale = 1.0 / sqrt(sum / (double)c + (double)p->eps);
            for (ch = 0; ch < c; ch++) {
                double v = xp[ch * sp] * scale;
                if (gamma) v *= gamma[ch];
                if (beta) v += beta[ch];
                yp[ch * sp] = hr_act(p->act, v);
            }
        }
}

void hr_layer_norm(const hc_norm *p, const double *x, const double *gamma, const double *beta,
                   double *y) {
    int64_t d = p->shape[p->ndim - 1], rows = 1, r, i;
    int32_t j;
    for (j = 0; j < p->ndim - 1; j++) rows *= p->shape[j];
    for (r = 0; r < rows; r++) {
        const double *xr = x + r * d;
        double mean = 0.0, var = 0.0, inv;
        for (i = 0; i < d; i++) mean += xr[i];
        mean /= (double)d;
        for (i = 0; i < d; i++) var += (xr[i] - mean) * (xr[i] - mean);
        var /= (double)d;
        inv = 1.0 / sqrt(var + (double)p->eps);
        for (i = 0; i < d; i++) {
            double v = (xr[i] - mean) * inv;
            if (gamma) v *= gamma[i];
            if (beta) v += beta[i];
            y[r * d + i] = hr_act(p->act, v);
        }
    }
}

/* -------------------------------------------------------------- attention */

void hr_attention(const hc_attention *p, const double *q, const double *k, const double *v,
                  double *out) {
    double scale = p->scale != 0.0f ? (double)p->scale : 1.0 / sqrt((double)p->d);
    int64_t bh, i, j, e;
    double *s = (double *)malloc((size_t)p->nkv * sizeof(double));
    if (!s) return; /* the caller's output stays NaN-poisoned and fails */
    for (bh = 0; bh < p->b * (p->b2 > 0 ? p->b2 : 1) * p->heads; bh++) {
        const double *qb = q + bh * p->nq * p->d, *kb = k + bh * p->nkv * p->d;
        const double *vb = v + bh * p->nkv * p->dv;
        double *ob = out + bh * p->nq * p->dv;
        for (i = 0; i < p->nq; i++) {
            double mx = -INFINITY, sum = 0.0;
            for (j = 0; j < p->nkv; j++) {
                double dot = 0.0;
                for (e = 0; e < p->d; e++) dot += qb[i * p->d + e] * kb[j * p->d + e];
                s[j] = scale * dot;
                if (s[j] > mx) mx = s[j];
            }
            for (j = 0; j < p->nkv; j++) {
                s[j] = exp(s[j] - mx);
                sum += s[j];
            }
            for (e = 0; e < p->dv; e++) {
                double acc = 0.0;
                for (j = 0; j < p->nkv; j++) acc += s[j] * vb[j * p->dv + e];
                ob[i * p->dv + e] = acc / sum;
            }
        }
    }
    free(s);
}

/* ------------------------------------------------------------ elementwise */

void hr_add(int64_t count, double alpha, const double *a, double beta, const double *b,
            dk_activation act, double *y) {
    int64_t i;
    for (i = 0; i < count; i++) y[i] = hr_act(act, alpha * a[i] + beta * b[i]);
}

void hr_activation(int64_t count, dk_activation act, const double *x, double *y) {
    int64_t i;
    for (i = 0; i < count; i++) y[i] = hr_act(act, x[i]);
}

void hr_upsample_nearest(const hc_elementwise *p, const double *x, double *y) {
    int64_t n, c, f, i, j;
    int64_t t = p->t > 0 ? p->t : 1, ot = p->t > 0 ? p->ot : 1; /* an image is one frame */
    for (n = 0; n < p->n; n++)
        for (c = 0; c < p->c; c++)
            for (f = 0; f < ot; f++)
                for (i = 0; i < p->oh; i++)
                    for (j = 0; j < p->ow; j++) {
                        /* floor, exact */
                        int64_t sf = f * t / ot, si = i * p->h / p->oh, sj = j * p->w / p->ow;
                        y[(((n * p->c + c) * ot + f) * p->oh + i) * p->ow + j] =
                            x[(((n * p->c + c) * t + sf) * p->h + si) * p->w + sj];
                    }
}
