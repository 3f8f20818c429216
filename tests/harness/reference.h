/* fp64 reference implementations of every op, written directly from the
 * semantics in include/difkern.h with naive loops, independent of any backend.
 *
 * All arrays are dense row-major in the op's LOGICAL shape (a 4-D image is
 * [N, C, H, W] whatever its storage layout), hold the dtype-rounded input
 * values, and the output is written unrounded.  Optional inputs are NULL.
 */
#ifndef HR_REFERENCE_H
#define HR_REFERENCE_H

#include "cases.h"

double hr_act(dk_activation act, double x);

/* Output spatial size of conv2d / conv_transpose2d. */
int64_t hr_conv_out_h(const hc_conv *p, int transposed);
int64_t hr_conv_out_w(const hc_conv *p, int transposed);

/* x [n, cin, h, w]; w [cout, cin/groups, kh, kw]; y [n, cout, oh, ow]. */
void hr_conv2d(const hc_conv *p, const double *x, const double *w, const double *bias,
               const double *residual, double *y);
/* x [n, cin, h, w]; w [cin, cout/groups, kh, kw]; y [n, cout, oh, ow]. */
void hr_conv_transpose2d(const hc_conv *p, const double *x, const double *w, const double *bias,
                         const double *residual, double *y);

/* Output length of one conv3d axis: (in + lo + hi - dilation*(k-1) - 1) / stride + 1. */
int64_t hr_conv3d_out(int64_t in, int64_t lo, int64_t hi, int64_t dilation, int64_t k, int64_t stride);
/* x [n, cin, t, h, w]; cache [n, cin, tc, h, w] or NULL (p->tc frames); w [cout, cin/groups,
 * kt, kh, kw]; y [n, cout, ot, oh, ow]: the conv over the concatenation of pad_front - tc
 * zero frames, the cache, x and pad_back zero frames. */
void hr_conv3d(const hc_conv3d *p, const double *cache, const double *x, const double *w, const double *bias,
               const double *residual, double *y);

/* a [batch or 1, m, k] (a_shared: one [m, k]); b [batch or 1, k, n] likewise;
 * y [max(batch,1), m, n].  For linear pass the weight seen as [k, n]. */
void hr_matmul(const hc_matmul *p, const double *a, const double *b, const double *bias,
               const double *residual, double *y);
/* Linear: w is the [n, k] weight (PyTorch layout). */
void hr_linear(const hc_matmul *p, const double *x, const double *w, const double *bias,
               const double *residual, double *y);

void hr_group_norm(const hc_norm *p, const double *x, const double *gamma, const double *beta,
                   double *y);
/* RMS norm over dim 1 of [n, c, ...] (p->form: dk_rms_norm_form). */
void hr_rms_norm(const hc_norm *p, const double *x, const double *gamma, const double *beta, double *y);
void hr_layer_norm(const hc_norm *p, const double *x, const double *gamma, const double *beta,
                   double *y);

/* q [b, heads, nq, d]; k [b, heads, nkv, d]; v [b, heads, nkv, dv]; out [b, heads, nq, dv]. */
void hr_attention(const hc_attention *p, const double *q, const double *k, const double *v,
                  double *out);

void hr_add(int64_t count, double alpha, const double *a, double beta, const double *b,
            dk_activation act, double *y);
void hr_activation(int64_t count, dk_activation act, const double *x, double *y);
/* x [n, c, h, w] -> y [n, c, oh, ow]. */
void hr_upsample_nearest(const hc_elementwise *p, const double *x, double *y);

#endif /* HR_REFERENCE_H */
