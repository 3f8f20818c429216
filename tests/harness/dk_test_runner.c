/* dk_test_runner: runs the shared case list (cases.c) on every backend that is
 * compiled in and present, and compares each output with the fp64 reference
 * (reference.c) computed from the same dtype-rounded inputs.
 *
 *   dk_test_runner [--backend cpu|vulkan|hip|all] [--op NAME] [--case SUBSTR]
 *                  [--seed N] [--list] [--quick] [-v]
 *
 * Per case: fresh random inputs (seeded by --seed and the case name), output
 * buffers poisoned with NaN, the op, dk_sync, download, then
 *   - relative L2 error ||y - ref|| / ||ref|| <= tol(dtype, K), where K is the
 *     reduction length, and per element |y - ref| <= tol * (|ref| + rms(ref));
 *     data-movement ops (upsample, convert) must be exact;
 *   - no NaN/Inf in the output;
 *   - every byte outside the output view (guards, gaps, inputs) unchanged.
 * Cases marked prepare call dk_prepare_weight first, then upload a new weight
 * and run again (the prepared copy must be dropped).  DK_ERR_UNSUPPORTED is a
 * failure on the CPU backend (the reference does everything) and a skip,
 * printed with its message, on the others.
 * Exit status: 0 all passed, 1 a failure, 2 bad usage, 77 nothing ran.
 */
#include "cases.h"
#include "harness_ops.h"
#include "harness_tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct tr_options {
    const char *backend, *op, *case_sub;
    uint64_t seed;
    int list, quick, verbose;
} tr_options;

typedef struct tr_counts { int passed, failed, skipped; } tr_counts;

typedef enum tr_result { TR_PASS, TR_FAIL, TR_SKIP } tr_result;

static double tr_now(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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
static double tr_tolerance(dk_dtype t, int64_t k, int weight_sums) {
    double out = (t == DK_F32 ? 0.0 : t == DK_F16 ? 1e-3 : 8e-3) * (weight_sums ? 1.5 : 1.0);
    double grow = sqrt((double)k) / 8.0;
    return out + 1e-5 * (grow > 1.0 ? grow : 1.0);
}

static int tr_selected(const tr_options *o, const hc_case *c) {
    if (o->op && strcmp(o->op, hc_op_name(c->op)) != 0) return 0;
    if (o->case_sub && !strstr(c->name, o->case_sub)) return 0;
    if (o->quick && !c->quick) return 0;
    return 1;
}

/* Compares the downloaded output with the reference; prints a FAIL line.
 * Two bounds with the same tol: the relative L2 error of the whole output,
 * and per element |y - ref| <= tol * (|ref| + rms(ref)), so that a few wrong
 * elements (an edge, one tile) cannot hide in the norm of a large output.
 * *err_out / *elem_out / *tol_out: the errors and the bound (for -v). */
static int tr_compare(const char *backend, const hc_case *c, const ho_plan *p, const char *phase,
                      double *err_out, double *elem_out, double *tol_out) {
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
        printf("FAIL %s %s%s: %lld of %lld outputs are NaN/Inf (first at flat index %lld)\n", backend, c->name,
               phase, (long long)nonfinite, (long long)y->numel, (long long)first_bad);
        return 0;
    }
    if (!(den > 0.0) || !isfinite(den)) {
        printf("FAIL %s %s%s: reference has norm %g (harness bug)\n", backend, c->name, phase, sqrt(den));
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
    tol = p->exact ? 0.0 : tr_tolerance(c->dtype, p->k, p->weight_sums);
    *err_out = err;
    *elem_out = worst;
    *tol_out = tol;
    if (p->exact && mismatches) {
        printf("FAIL %s %s%s: %lld of %lld outputs differ from the exact result (first at flat index %lld: "
               "%.9g, expected %.9g)\n", backend, c->name, phase, (long long)mismatches, (long long)y->numel,
               (long long)first_bad, y->val[first_bad], p->ref[first_bad]);
        return 0;
    }
    if (!(err <= tol)) {
        printf("FAIL %s %s%s: rel_l2 %.3e > tol %.3e (K=%lld)\n", backend, c->name, phase, err, tol,
               (long long)p->k);
        return 0;
    }
    if (!(worst <= tol)) {
        printf("FAIL %s %s%s: element %lld is %.9g, expected %.9g: |error| / (|ref| + rms %.3g) = %.3e > tol %.3e "
               "(rel_l2 %.3e)\n", backend, c->name, phase, (long long)worst_i, y->val[worst_i], p->ref[worst_i], rms,
               worst, tol, err);
        return 0;
    }
    return 1;
}

/* Runs the op once on the uploaded inputs and checks everything. */
static tr_result tr_run_once(dk_context *ctx, const char *backend, const hc_case *c, ho_plan *p,
                             int prepare, const char *phase, double *err, double *elem, double *tol) {
    const char *what = "";
    int64_t bad_bytes;
    int bad_store;
    dk_status st = ht_set_upload(ctx, &p->set, &what);
    if (st != DK_OK) {
        printf("FAIL %s %s%s: %s returned %s: %s\n", backend, c->name, phase, what, dk_status_name(st),
               dk_last_error(ctx));
        return TR_FAIL;
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
        printf("UNSUPPORTED %s %s: %s\n", backend, c->name, dk_last_error(ctx));
        return TR_SKIP;
    }
    if (st != DK_OK) { /* the CPU reference backend must do every case */
        printf("FAIL %s %s%s: %s returned %s: %s\n", backend, c->name, phase, what, dk_status_name(st),
               dk_last_error(ctx));
        return TR_FAIL;
    }
    st = ht_set_check(ctx, &p->set, p->out, &bad_bytes, &bad_store);
    if (st != DK_OK) {
        printf("FAIL %s %s%s: download returned %s: %s\n", backend, c->name, phase, dk_status_name(st),
               dk_last_error(ctx));
        return TR_FAIL;
    }
    if (bad_bytes) {
        printf("FAIL %s %s%s: %lld bytes outside the output view changed (first in buffer of slot %d)\n",
               backend, c->name, phase, (long long)bad_bytes, bad_store);
        return TR_FAIL;
    }
    return tr_compare(backend, c, p, phase, err, elem, tol) ? TR_PASS : TR_FAIL;
}

static tr_result tr_run_case(dk_context *ctx, const char *backend, const hc_case *c, uint64_t seed,
                             double *err, double *elem, double *tol) {
    ho_plan p;
    ht_rng rng;
    const char *what = "";
    tr_result r;
    dk_status st;
    ho_setup(c, &p);
    ht_rng_seed(&rng, seed, c->name);
    st = ht_set_create(ctx, &p.set, &what);
    if (st != DK_OK) {
        printf("FAIL %s %s: %s returned %s: %s\n", backend, c->name, what, dk_status_name(st), dk_last_error(ctx));
        ht_set_destroy(ctx, &p.set);
        return TR_FAIL;
    }
    ht_set_generate(&p.set, &rng);
    if (!ho_reference(c, &p)) {
        printf("FAIL %s %s: out of host memory for the reference\n", backend, c->name);
        r = TR_FAIL;
    } else {
        int prepare = c->prepare && p.weight >= 0;
        r = tr_run_once(ctx, backend, c, &p, prepare, "", err, elem, tol);
        if (r == TR_PASS && prepare) {
            /* new weight values: the prepared copy must not be used any more */
            ht_regenerate(&p.set, p.weight, &rng);
            if (!ho_reference(c, &p)) {
                printf("FAIL %s %s: out of host memory for the reference\n", backend, c->name);
                r = TR_FAIL;
            } else r = tr_run_once(ctx, backend, c, &p, 0, " (after weight re-upload)", err, elem, tol);
        }
    }
    ho_free(&p);
    ht_set_destroy(ctx, &p.set);
    return r;
}

static void tr_run_backend(const tr_options *o, dk_backend_kind kind, const hc_case *cases, int ncases,
                           tr_counts *n) {
    const char *name = dk_backend_name(kind);
    dk_context_options opt;
    dk_context *ctx = NULL;
    dk_status st;
    int i, selected = 0;
    tr_counts local = {0, 0, 0};
    double t0;
    for (i = 0; i < ncases; i++) selected += tr_selected(o, &cases[i]);
    if (!dk_backend_compiled(kind)) {
        printf("SKIP backend %s: not compiled into this build\n", name);
        n->skipped += selected;
        return;
    }
    dk_context_options_init(&opt);
    opt.backend = kind;
    st = dk_context_create(&opt, &ctx);
    if (st == DK_ERR_BACKEND_UNAVAILABLE) {
        printf("SKIP backend %s: %s\n", name, dk_last_error(NULL));
        n->skipped += selected;
        return;
    }
    if (st != DK_OK) {
        printf("FAIL backend %s: dk_context_create returned %s: %s\n", name, dk_status_name(st), dk_last_error(NULL));
        n->failed++;
        return;
    }
    printf("backend %s: %s\n", name, dk_context_describe(ctx));
    fflush(stdout);
    t0 = tr_now();
    for (i = 0; i < ncases; i++) {
        double tc = tr_now(), err = 0.0, elem = 0.0, tol = 0.0;
        tr_result r;
        if (!tr_selected(o, &cases[i])) continue;
        r = tr_run_case(ctx, name, &cases[i], o->seed, &err, &elem, &tol);
        if (r == TR_PASS) local.passed++;
        else if (r == TR_FAIL) local.failed++;
        else local.skipped++;
        if (o->verbose && r == TR_PASS) printf("ok   %s %s rel_l2 %.2e elem %.2e tol %.2e (%.1f ms)\n", name, cases[i].name, err, elem,
                   tol, 1e3 * (tr_now() - tc));
        fflush(stdout);
    }
    printf("backend %s: %d passed, %d failed, %d skipped in %.2f s\n", name, local.passed, local.failed,
           local.skipped, tr_now() - t0);
    n->passed += local.passed;
    n->failed += local.failed;
    n->skipped += local.skipped;
    dk_context_destroy(ctx);
}

static void tr_usage(void) {
    fprintf(stderr, "usage: dk_test_runner [--backend cpu|vulkan|hip|all] [--op NAME] [--case SUBSTR]\n"
                    "                      [--seed N] [--list] [--quick] [-v]\n");
}

static int tr_parse(int argc, char **argv, tr_options *o) {
    int i;
    memset(o, 0, sizeof *o);
    o->backend = "all";
    {
        struct timespec ts;
        timespec_get(&ts, TIME_UTC);
        o->seed = ((uint64_t)ts.tv_sec * 1000003u) ^ (uint64_t)ts.tv_nsec;
        o->seed %= 1000000000u; /* short enough to retype */
    }
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (strcmp(a, "--backend") == 0 && has_value) o->backend = argv[++i];
        else if (strcmp(a, "--op") == 0 && has_value) o->op = argv[++i];
        else if (strcmp(a, "--case") == 0 && has_value) o->case_sub = argv[++i];
        else if (strcmp(a, "--seed") == 0 && has_value) {
            char *end;
            o->seed = strtoull(argv[++i], &end, 0);
            if (*end) return 0;
        } else if (strcmp(a, "--list") == 0) o->list = 1;
        else if (strcmp(a, "--quick") == 0) o->quick = 1;
        else if (strcmp(a, "-v") == 0) o->verbose = 1;
        else return 0;
    }
    if (strcmp(o->backend, "all") != 0 && strcmp(o->backend, "cpu") != 0 && strcmp(o->backend, "vulkan") != 0 &&
        strcmp(o->backend, "hip") != 0)
        return 0;
    if (o->op) {
        int k, known = 0;
        for (k = 0; k < HC_OP_COUNT; k++) known |= strcmp(o->op, hc_op_name((hc_op)k)) == 0;
        if (!known) {
            fprintf(stderr, "dk_test_runner: unknown op '%s'\n", o->op);
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv) {
    static const dk_backend_kind kinds[3] = {DK_BACKEND_CPU, DK_BACKEND_VULKAN, DK_BACKEND_HIP};
    tr_options o;
    tr_counts n = {0, 0, 0};
    const hc_case *cases;
    int ncases = hc_cases(&cases), i, selected = 0;
    if (ncases < 0) return 2;
    if (!tr_parse(argc, argv, &o)) {
        tr_usage();
        return 2;
    }
    for (i = 0; i < ncases; i++) selected += tr_selected(&o, &cases[i]);
    if (o.list) {
        for (i = 0; i < ncases; i++)
            if (tr_selected(&o, &cases[i])) printf("%s%s\n", cases[i].name, cases[i].quick ? "  [quick]" : "");
        printf("%d cases\n", selected);
        return 0;
    }
    printf("dk_test_runner: %d cases, seed %llu (rerun with --seed %llu)\n", selected, (unsigned long long)o.seed,
           (unsigned long long)o.seed);
    for (i = 0; i < 3; i++)
        if (strcmp(o.backend, "all") == 0 || strcmp(o.backend, dk_backend_name(kinds[i])) == 0)
            tr_run_backend(&o, kinds[i], cases, ncases, &n);
    printf("%d passed, %d failed, %d skipped\n", n.passed, n.failed, n.skipped);
    if (n.failed) return 1;
    return n.passed ? 0 : 77;
}
