/* One case of the shared list, run and checked (see harness_check.h). */
#include "harness_check.h"
#include "harness_tensor.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The outcome's message, formatted like a printf (truncated to fit). */
static void hk_msg(hk_outcome *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->msg, sizeof o->msg, fmt, ap);
    va_end(ap);
}

/* tol = out(dtype) + acc(K).  out covers rounding to the output dtype (and a
 * rounded intermediate or two): unit roundoff 2^-11 (f16), 2^-8 (bf16), with
 * ~2x margin; 0 for f32.  acc covers fp32 arithmetic (accumulation, exp, ...):
 * 1e-5 * max(1, sqrt(K) / 8), growing like a random walk with the reduction
 * length K.  Half-precision outputs do not get a K-scaled bound: with fp32
 * accumulation their error stays at the output rounding for any K, so e.g.
 * one missing input channel of 512 still fails in bf16.  Summed weights (an
 * upsample conv's phase taps, rounded to the weight dtype once more) add half a
 * unit of margin. */
double hk_tolerance(dk_dtype t, int64_t k, int weight_sums) {
    double out = (t == DK_F32 ? 0.0 : t == DK_F16 ? 1e-3 : 8e-3) * (weight_sums ? 1.5 : 1.0);
    double grow = sqrt((double)k) / 8.0;
    return out + 1e-5 * (grow > 1.0 ? grow : 1.0);
}

/* Compares the downloaded output with the reference; a failure's message goes
 * to o->msg.  Two bounds with the same tol: the relative L2 error of the whole
 * output, and per element |y - ref| <= tol * (|ref| + rms(ref)), so that a few
 * wrong elements (an edge, one tile) cannot hide in the norm of a large output. */
static int hk_compare(const char *backend, const hc_case *c, const ho_plan *p, const char *phase, hk_outcome *o) {
    const ht_tensor *y = &p->set.t[p->out];
    int64_t i, nonfinite = 0, first_bad = -1, mismatches = 0, worst_i = 0;
    double num = 0.0, den = 0.0, rms, err, tol, worst = 0.0;
    for (i = 0; i < y->numel; i++) {
        double d = y->val[i] - p->ref[i];
        if (!isfinite(y->val[i])) {
            if (first_bad < 0) first_bad = i;
            nonfinite++;
            continue;
        }
        if (y->val[i] != p->ref[i]) {
            if (first_bad < 0) first_bad = i;
            mismatches++;
        }
        num += d * d;
        den += p->ref[i] * p->ref[i];
    }
    if (nonfinite) {
        hk_msg(o, "FAIL %s %s%s: %lld of %lld outputs are NaN/Inf (first at flat index %lld)", backend, c->name,
               phase, (long long)nonfinite, (long long)y->numel, (long long)first_bad);
        return 0;
    }
    if (!(den > 0.0) || !isfinite(den)) {
        hk_msg(o, "FAIL %s %s%s: reference has norm %g (harness bug)", backend, c->name, phase, sqrt(den));
        return 0;
    }
    err = sqrt(num / den);
    rms = sqrt(den / (double)y->numel);
    for (i = 0; i < y->numel; i++) {
        double e = fabs(y->val[i] - p->ref[i]) / (fabs(p->ref[i]) + rms);
        if (e > worst) {
            worst = e;
            worst_i = i;
        }
    }
    tol = p->exact ? 0.0 : hk_tolerance(c->dtype, p->k, p->weight_sums);
    o->err = err;
    o->elem = worst;
    o->tol = tol;
    if (p->exact && mismatches) {
        hk_msg(o, "FAIL %s %s%s: %lld of %lld outputs differ from the exact result (first at flat index %lld: "
               "%.9g, expected %.9g)", backend, c->name, phase, (long long)mismatches, (long long)y->numel,
               (long long)first_bad, y->val[first_bad], p->ref[first_bad]);
        return 0;
    }
    if (!(err <= tol)) {
        hk_msg(o, "FAIL %s %s%s: rel_l2 %.3e > tol %.3e (K=%lld)", backend, c->name, phase, err, tol,
               (long long)p->k);
        return 0;
    }
    if (!(worst <= tol)) {
        hk_msg(o, "FAIL %s %s%s: element %lld is %.9g, expected %.9g: |error| / (|ref| + rms %.3g) = %.3e > tol %.3e "
               "(rel_l2 %.3e)", backend, c->name, phase, (long long)worst_i, y->val[worst_i], p->ref[worst_i], rms,
               worst, tol, err);
        return 0;
    }
    return 1;
}

/* Runs the op once on the uploaded inputs and checks everything. */
static hk_result hk_run_once(dk_context *ctx, const char *backend, const hc_case *c, ho_plan *p, int prepare,
                             const char *phase, hk_perturb_fn perturb, void *user, hk_outcome *o) {
    const char *what = "";
    int64_t bad_bytes;
    int bad_store;
    dk_status st = ht_set_upload(ctx, &p->set, &what);
    if (st != DK_OK) {
        hk_msg(o, "FAIL %s %s%s: %s returned %s: %s", backend, c->name, phase, what, dk_status_name(st),
               dk_last_error(ctx));
        return HK_FAIL;
    }
    if (prepare) {
        st = ho_prepare(ctx, c, p);
        what = "dk_prepare_weight";
    }
    if (st == DK_OK) {
        st = ho_run(ctx, c, p);
        what = hc_op_name(c->op);
    }
    if (st == DK_OK) {
        st = dk_sync(ctx);
        what = "dk_sync";
    }
    if (st == DK_ERR_UNSUPPORTED && strcmp(backend, "cpu") != 0) {
        hk_msg(o, "UNSUPPORTED %s %s: %s", backend, c->name, dk_last_error(ctx));
        return HK_SKIP;
    }
    if (st != DK_OK) { /* the CPU reference backend must do every case */
        hk_msg(o, "FAIL %s %s%s: %s returned %s: %s", backend, c->name, phase, what, dk_status_name(st),
               dk_last_error(ctx));
        return HK_FAIL;
    }
    st = ht_set_check(ctx, &p->set, p->out, &bad_bytes, &bad_store);
    if (st != DK_OK) {
        hk_msg(o, "FAIL %s %s%s: download returned %s: %s", backend, c->name, phase, dk_status_name(st),
               dk_last_error(ctx));
        return HK_FAIL;
    }
    if (bad_bytes) {
        hk_msg(o, "FAIL %s %s%s: %lld bytes outside the output view changed (first in buffer of slot %d)", backend,
               c->name, phase, (long long)bad_bytes, bad_store);
        return HK_FAIL;
    }
    if (perturb) perturb(user, c, p);
    return hk_compare(backend, c, p, phase, o) ? HK_PASS : HK_FAIL;
}

hk_result hk_run_case(dk_context *ctx, const char *backend, const hc_case *c, uint64_t seed, hk_views views,
                      hk_perturb_fn perturb, void *user, hk_outcome *o) {
    ho_plan p;
    ht_rng rng;
    const char *what = "";
    hk_result r;
    dk_status st;
    memset(o, 0, sizeof *o);
    ho_setup(c, &p);
    if (views & HK_VIEWS_SIZE1_STRIDES_MAX) ht_set_size1_strides_max(&p.set);
    if (views & HK_VIEWS_MISALIGNED) ht_set_misalign(&p.set);
    ht_rng_seed(&rng, seed, c->name);
    st = ht_set_create(ctx, &p.set, &what);
    if (st != DK_OK) {
        hk_msg(o, "FAIL %s %s: %s returned %s: %s", backend, c->name, what, dk_status_name(st), dk_last_error(ctx));
        ht_set_destroy(ctx, &p.set);
        return HK_FAIL;
    }
    ht_set_generate(&p.set, &rng);
    if (!ho_reference(c, &p)) {
        hk_msg(o, "FAIL %s %s: out of host memory for the reference", backend, c->name);
        r = HK_FAIL;
    } else {
        int prepare = c->prepare && p.weight >= 0;
        r = hk_run_once(ctx, backend, c, &p, prepare, "", perturb, user, o);
        if (r == HK_PASS && prepare) {
            /* new weight values: the prepared copy must not be used any more */
            ht_regenerate(&p.set, p.weight, &rng);
            if (!ho_reference(c, &p)) {
                hk_msg(o, "FAIL %s %s: out of host memory for the reference", backend, c->name);
                r = HK_FAIL;
            } else r = hk_run_once(ctx, backend, c, &p, 0, " (after weight re-upload)", perturb, user, o);
        }
    }
    ho_free(&p);
    ht_set_destroy(ctx, &p.set);
    return r;
}
