/* The shared case list (tests/harness) on one target, checked against the
 * fp64 reference with the tests' tolerances (harness_check.c), with a
 * reproducer command line for every failure.  DIFKERN_DOCTOR_INJECT (or the
 * hidden --inject) perturbs the results of one op or of the cases whose name
 * contains the given text, so that the failure path itself can be tested. */
#include "doctor.h"
#include "harness_check.h"
#include "harness_tensor.h"

#include <stdio.h>
#include <string.h>

int dd_case_selected(const dd_options *o, const hc_case *c, const hc_case *all, int ncases) {
    if (o->op && strcmp(o->op, hc_op_name(c->op)) != 0) return 0;
    if (o->case_name) {
        int i, exact = 0;
        for (i = 0; i < ncases && !exact; i++) exact = !strcmp(all[i].name, o->case_name);
        return exact ? !strcmp(c->name, o->case_name) : strstr(c->name, o->case_name) != NULL;
    }
    return o->full || c->quick;
}

static int dd_injected(const dd_options *o, const hc_case *c) {
    return o->inject && (!strcmp(o->inject, hc_op_name(c->op)) || strstr(c->name, o->inject));
}

/* A wrong result as a broken kernel might give: 5% off everywhere, one
 * element off by one more. */
static void dd_perturb(void *user, const hc_case *c, ho_plan *p) {
    ht_tensor *y = &p->set.t[p->out];
    int64_t i;
    (void)user;
    (void)c;
    for (i = 0; i < y->numel; i++) y->val[i] *= 1.05;
    if (y->numel) y->val[0] += 1.0;
}

static void dd_reproducer(const dd_target *t, const dd_options *o, const hc_case *c, char *out, size_t cap) {
    char env[160] = "", dev[32] = "";
    if (!strcmp(t->variant, "nv")) dd_copy(env, sizeof env, "DIFKERN_VULKAN_COOPMAT=nv ");
    else if (!strcmp(t->variant, "portable")) dd_copy(env, sizeof env, "DIFKERN_VULKAN_PORTABLE=1 ");
    if (o->inject) snprintf(env + strlen(env), sizeof env - strlen(env), "DIFKERN_DOCTOR_INJECT='%s' ", o->inject);
    if (t->backend != DK_BACKEND_CPU) snprintf(dev, sizeof dev, " --device %d", t->device_index);
    snprintf(out, cap, "%sdifkern-doctor --backend %s%s --case '%s' --seed %llu%s --no-bench", env,
             dk_backend_name(t->backend), dev, c->name, (unsigned long long)o->seed, o->odd_views ? " --odd-views" : "");
}

int dd_run_cases(dk_context *ctx, dd_target *t, const dd_options *o, const hc_case *cases, int ncases) {
    const char *backend = dk_backend_name(t->backend);
    const hk_views views = o->odd_views ? HK_VIEWS_ODD : HK_VIEWS_LISTED;
    double t0 = dd_now_ms();
    int i, failures = 0, done = 0, selected = 0;
    for (i = 0; i < ncases; i++) selected += dd_case_selected(o, &cases[i], cases, ncases);
    for (i = 0; i < ncases; i++) {
        const hc_case *c = &cases[i];
        hk_outcome out;
        hk_result r;
        double tc = dd_now_ms();
        if (!dd_case_selected(o, c, cases, ncases)) continue;
        r = hk_run_case(ctx, backend, c, o->seed, views, dd_injected(o, c) ? dd_perturb : NULL, NULL, &out);
        done++;
        if (r == HK_PASS) {
            t->passed[c->op]++;
            if (o->verbose)
                printf("  ok   %s rel_l2 %.2e elem %.2e tol %.2e (%.1f ms)\n", c->name, out.err, out.elem, out.tol,
                       dd_now_ms() - tc);
        } else if (r == HK_SKIP) {
            t->skipped[c->op]++;
            if (!t->first_skip[0]) dd_copy(t->first_skip, sizeof t->first_skip, out.msg);
            if (o->verbose) printf("  %s\n", out.msg);
        } else {
            char repro[512];
            t->failed[c->op]++;
            failures++;
            dd_reproducer(t, o, c, repro, sizeof repro);
            printf("  %s\n    reproduce: %s\n", out.msg, repro);
            if (t->nfail < DD_MAX_FAILURES) {
                dd_failure *f = &t->fail[t->nfail++];
                dd_copy(f->case_name, sizeof f->case_name, c->name);
                dd_copy(f->message, sizeof f->message, out.msg);
                dd_copy(f->reproducer, sizeof f->reproducer, repro);
            }
        }
        if (!o->verbose && (done % 25 == 0 || done == selected)) {
            printf("  cases: %d/%d, %d failed (%.1f s)\n", done, selected, failures, (dd_now_ms() - t0) / 1e3);
        }
        fflush(stdout);
    }
    t->cases_s = (dd_now_ms() - t0) / 1e3;
    return failures;
}
