/* dk_test_runner: runs the shared case list (cases.c) on every backend that is
 * compiled in and present, and compares each output with the fp64 reference
 * (reference.c) computed from the same dtype-rounded inputs.
 *
 *   dk_test_runner [--backend cpu|vulkan|hip|all] [--op NAME] [--case SUBSTR]
 *                  [--seed N] [--list] [--quick] [--size1-strides] [--misaligned] [-v]
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
 * --size1-strides: every size-1 dim of every tensor gets the stride INT64_MAX
 * (no element address uses it, so any value is valid): the same checks must
 * pass, with no overflow in the planning (sanitizer builds) or the kernels.
 * --misaligned: every view starts one element further into its buffer, so
 * the views that started on 16 bytes (most) no longer do: the vector paths
 * must step aside.  The two combine.
 * Exit status: 0 all passed, 1 a failure, 2 bad usage, 77 nothing ran.
 */
#include "cases.h"
#include "harness_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct tr_options {
    const char *backend, *op, *case_sub;
    uint64_t seed;
    int list, quick, verbose;
    hk_views views;
} tr_options;

typedef struct tr_counts { int passed, failed, skipped; } tr_counts;

static double tr_now(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int tr_selected(const tr_options *o, const hc_case *c) {
    if (o->op && strcmp(o->op, hc_op_name(c->op)) != 0) return 0;
    if (o->case_sub && !strstr(c->name, o->case_sub)) return 0;
    if (o->quick && !c->quick) return 0;
    return 1;
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
        double tc = tr_now();
        hk_outcome out;
        hk_result r;
        if (!tr_selected(o, &cases[i])) continue;
        r = hk_run_case(ctx, name, &cases[i], o->seed, o->views, NULL, NULL, &out);
        if (r == HK_PASS) local.passed++;
        else if (r == HK_FAIL) local.failed++;
        else local.skipped++;
        if (r != HK_PASS) printf("%s\n", out.msg);
        if (o->verbose && r == HK_PASS) printf("ok   %s %s rel_l2 %.2e elem %.2e tol %.2e (%.1f ms)\n", name, cases[i].name,
                   out.err, out.elem, out.tol, 1e3 * (tr_now() - tc));
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
                    "                      [--seed N] [--list] [--quick] [--size1-strides] [--misaligned] [-v]\n");
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
        else if (strcmp(a, "--size1-strides") == 0) o->views |= HK_VIEWS_SIZE1_STRIDES_MAX;
        else if (strcmp(a, "--misaligned") == 0) o->views |= HK_VIEWS_MISALIGNED;
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
