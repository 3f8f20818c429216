/* Running one case of the shared list and checking it (dk_test_runner and
 * difkern-doctor share this): fresh seeded inputs, NaN-poisoned outputs, the
 * op, dk_sync, download, then the checks listed in README.md.  The outcome
 * carries the message a failure or skip prints, without printing it. */
#ifndef HK_CHECK_H
#define HK_CHECK_H

#include "cases.h"
#include "harness_ops.h"

typedef enum hk_result { HK_PASS, HK_FAIL, HK_SKIP } hk_result;

typedef struct hk_outcome {
    double err, elem, tol;  /* relative L2 error, worst per-element error, bound */
    char msg[2048];         /* FAIL / UNSUPPORTED line (no newline); "" on a pass */
} hk_outcome;

/* Called with the downloaded output (p->set.t[p->out].val) before it is
 * compared: difkern-doctor's fault injection.  NULL: none. */
typedef void (*hk_perturb_fn)(void *user, const hc_case *c, ho_plan *p);

/* tol = out(dtype) + 1e-5 * max(1, sqrt(K) / 8) (see harness_check.c). */
double hk_tolerance(dk_dtype t, int64_t k, int weight_sums);

/* The views a case runs on: as the case lists them (0), or changed in ways
 * that keep the result (flags, any combination): every size-1 dim's stride
 * INT64_MAX (ht_set_size1_strides_max); each view one element further into
 * its buffer (ht_set_misalign).  HK_VIEWS_ODD: all of them (difkern-doctor
 * --odd-views). */
enum {
    HK_VIEWS_LISTED = 0,
    HK_VIEWS_SIZE1_STRIDES_MAX = 1,
    HK_VIEWS_MISALIGNED = 2,
    HK_VIEWS_ODD = HK_VIEWS_SIZE1_STRIDES_MAX | HK_VIEWS_MISALIGNED
};
typedef unsigned hk_views;

/* Runs case c on ctx, whose backend is named `backend` (DK_ERR_UNSUPPORTED
 * is a failure on "cpu", a skip elsewhere). */
hk_result hk_run_case(dk_context *ctx, const char *backend, const hc_case *c, uint64_t seed, hk_views views,
                      hk_perturb_fn perturb, void *user, hk_outcome *out);

#endif /* HK_CHECK_H */
