/* Per-op glue of the harness: which tensors a case has (shapes, strides,
 * storage, value ranges), how to call the op through the public API, and which
 * fp64 reference computes its expected output. */
#ifndef HO_OPS_H
#define HO_OPS_H

#include "cases.h"
#include "harness_tensor.h"

typedef struct ho_plan {
    ht_set set;
    int out;                 /* output slot */
    int weight;              /* slot of the weight dk_prepare_weight takes, -1: none */
    dk_weight_use weight_use;
    int64_t k;               /* reduction length (tolerance grows with it) */
    int exact;               /* pure data movement: must equal the reference bit for bit */
    int weight_sums;         /* backends may sum weights and round the sums (upsample convs) */
    double *ref;             /* expected output, logical dense, numel of the output */
} ho_plan;

/* Declares the case's tensors in p->set (no device work). */
void ho_setup(const hc_case *c, ho_plan *p);
/* dk_prepare_weight on the case's weight (the view the op will use). */
dk_status ho_prepare(dk_context *ctx, const hc_case *c, ho_plan *p);
/* Queues the op. */
dk_status ho_run(dk_context *ctx, const hc_case *c, ho_plan *p);
/* Computes p->ref from the inputs' values; returns 0 on allocation failure. */
int ho_reference(const hc_case *c, ho_plan *p);
void ho_free(ho_plan *p);

#endif /* HO_OPS_H */
