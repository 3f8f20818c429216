/* Argument validation for every public op (src/validate.c).
 *
 * Each function checks everything the backend table's contract promises
 * (backends/backend.h): non-NULL required pointers, tensor well-formedness
 * (dtype, ndim, shape >= 1, strides >= 0, 64-bit size arithmetic without
 * overflow, the view within its buffer), the op's shape rules, descriptor
 * values, and that outputs overlap no input (except the in-place cases an op
 * allows) and do not overlap themselves.  On a broken rule it returns the status
 * through dk__fail with a message naming the argument and the rule, e.g.
 *   "dk_conv2d: w.shape[1] (=3) must equal x.shape[1] / groups (=4)".
 */
#ifndef DK_VALIDATE_H
#define DK_VALIDATE_H

#include "dk_internal.h"

/* One tensor on its own: name is used in messages ("x", "w", ...). */
dk_status dk__validate_tensor(dk_context *ctx, const char *op, const char *name,
                              const dk_tensor *t);

/* resolved (may be NULL): desc with the per-side padding resolved (all four set,
 * pad_h = pad_top, pad_w = pad_left): what the backends get. */
dk_status dk__validate_conv2d(dk_context *ctx, const dk_conv2d_desc *desc, const dk_tensor *x,
                              const dk_tensor *w, const dk_tensor *bias,
                              const dk_tensor *residual, const dk_tensor *y, dk_conv2d_desc *resolved);
dk_status dk__validate_conv_transpose2d(dk_context *ctx, const dk_conv_transpose2d_desc *desc,
                                        const dk_tensor *x, const dk_tensor *w,
                                        const dk_tensor *bias, const dk_tensor *residual,
                                        const dk_tensor *y);
/* op: "dk_conv3d" (cache NULL) or "dk_conv3d_chunk" (cache NULL or [N, Cin, Tc, H, W]). */
dk_status dk__validate_conv3d(dk_context *ctx, const char *op, const dk_conv3d_desc *desc, const dk_tensor *cache,
                              const dk_tensor *x, const dk_tensor *w, const dk_tensor *bias,
                              const dk_tensor *residual, const dk_tensor *y);
dk_status dk__validate_matmul(dk_context *ctx, const char *op, const dk_matmul_desc *desc,
                              const dk_tensor *a, const dk_tensor *b, const dk_tensor *bias,
                              const dk_tensor *residual, const dk_tensor *y);
/* mode: DK__GN_FULL / _STATS / _APPLY (backends/backend.h); op: the public name. */
dk_status dk__validate_group_norm(dk_context *ctx, const char *op, int mode, const dk_group_norm_desc *desc,
                                  const dk_tensor *x, const dk_tensor *stats, const dk_tensor *gamma,
                                  const dk_tensor *beta, const dk_tensor *y);
dk_status dk__validate_layer_norm(dk_context *ctx, const dk_layer_norm_desc *desc,
                                  const dk_tensor *x, const dk_tensor *gamma,
                                  const dk_tensor *beta, const dk_tensor *y);
dk_status dk__validate_rms_norm(dk_context *ctx, const dk_rms_norm_desc *desc, const dk_tensor *x,
                                const dk_tensor *gamma, const dk_tensor *beta, const dk_tensor *y);
dk_status dk__validate_attention(dk_context *ctx, const dk_attention_desc *desc,
                                 const dk_tensor *q, const dk_tensor *k, const dk_tensor *v,
                                 const dk_tensor *out);
/* op: "dk_activation_forward" (scales 1) or "dk_activation_scaled". */
dk_status dk__validate_activation(dk_context *ctx, const char *op, float in_scale, dk_activation act,
                                  float out_scale, const dk_tensor *x, const dk_tensor *y);
dk_status dk__validate_add(dk_context *ctx, float alpha, const dk_tensor *a, float beta,
                           const dk_tensor *b, dk_activation act, const dk_tensor *y);
dk_status dk__validate_upsample_nearest(dk_context *ctx, const dk_tensor *x, const dk_tensor *y);
dk_status dk__validate_convert(dk_context *ctx, const dk_tensor *x, const dk_tensor *y);
dk_status dk__validate_prepare_weight(dk_context *ctx, dk_weight_use use, const dk_tensor *w);

#endif /* DK_VALIDATE_H */
