/* difkern-doctor: lists the runtimes and devices, then on every GPU backend
 * and device (a "target") runs the shared case list against the fp64 CPU
 * reference and a short benchmark, and writes the markdown and JSON reports.
 * See docs/doctor.md. */
#define _POSIX_C_SOURCE 200809L
#include "doctor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

extern char **environ;

/* Settings that change what the library or the runtimes do. */
static void dd_scan_env(dd_report *r) {
    static const char *const prefixes[] = {"DIFKERN_", "HSA_OVERRIDE_GFX_VERSION=", "HIP_VISIBLE_DEVICES=",
                                           "ROCR_VISIBLE_DEVICES=", "CUDA_VISIBLE_DEVICES=", "VK_ICD_FILENAMES=",
                                           "VK_DRIVER_FILES=", "VK_INSTANCE_LAYERS=", "VK_LOADER_", "MESA_VK_", "RADV_",
                                           NULL};
    size_t used = 0;
    char **e;
    r->env[0] = 0;
    for (e = environ; e && *e; e++) {
        int i, match = 0;
        for (i = 0; prefixes[i]; i++) match |= !strncmp(*e, prefixes[i], strlen(prefixes[i]));
        if (match && used + strlen(*e) + 2 < sizeof r->env)
            used += (size_t)snprintf(r->env + used, sizeof r->env - used, "%s%s", used ? "\n" : "", *e);
    }
}

static dd_target *dd_add_target(dd_report *r, dk_backend_kind kind, int device_index, const char *variant) {
    dd_target *t;
    if (r->ntargets >= DD_MAX_TARGETS) return NULL;
    t = &r->targets[r->ntargets++];
    memset(t, 0, sizeof *t);
    t->backend = kind;
    t->device_index = device_index;
    t->variant = variant;
    t->vk_probe = -1;
    return t;
}

static void dd_print_listing(const dd_report *r) {
    static const dk_backend_kind kinds[3] = {DK_BACKEND_CPU, DK_BACKEND_VULKAN, DK_BACKEND_HIP};
    const dd_hip_runtime *rt[2];
    char v[32], dv[32];
    int i, k;
    printf("difkern %s, difkern-doctor %s\n", dk_version_string(), DD_TOOL_VERSION);
    printf("compiled-in backends:");
    for (i = 0; i < 3; i++) printf(" %s %s", dk_backend_name(kinds[i]), dk_backend_compiled(kinds[i]) ? "yes" : "no");
    printf("\n");
    if (r->vk.loader) {
        dd_vk_version(r->vk.loader_version, v, sizeof v);
        printf("Vulkan loader: libvulkan.so.1, instance version %s%s%s\n", v, r->vk.error[0] ? "; " : "", r->vk.error);
    } else {
        printf("Vulkan: %s\n", r->vk.error);
    }
    for (i = 0; i < r->vk.ndev; i++) {
        const dd_vk_device *d = &r->vk.dev[i];
        dd_vk_version(d->api_version, v, sizeof v);
        dd_vk_driver_version(d, dv, sizeof dv);
        printf("  vulkan #%d %s (%s), Vulkan %s, driver %s %s (%s), subgroup %u (%u..%u), KHR coopmat %s (%d shapes), "
               "NV coopmat %s, bf16 %s%s%s\n",
               i, d->name, dd_vk_type_name(d->type), v, d->driver_name, dv, d->driver_info, d->subgroup_size,
               d->subgroup_min, d->subgroup_max, d->khr_ext ? "yes" : "no", d->n_khr, d->nv_ext ? "yes" : "no",
               d->bf16_coopmat ? "coopmat" : d->bf16_ext ? "ext only" : "no", d->unusable ? "; NOT USABLE: " : "",
               d->unusable ? d->unusable : "");
    }
    rt[0] = &r->hip.hip;
    rt[1] = &r->hip.cuda;
    for (k = 0; k < 2; k++) {
        if (!rt[k]->loaded) {
            printf("%s: %s\n", rt[k]->label, rt[k]->error);
            continue;
        }
        printf("%s: %s, %s, %d device(s)%s%s\n", rt[k]->label, rt[k]->lib,
               rt[k]->versions, rt[k]->count, rt[k]->error[0] ? "; " : "",
               rt[k]->error);
        for (i = 0; i < rt[k]->count; i++)
            printf("  %s #%d %s, %s, %.1f GiB\n", k ? "cuda" : "hip", i, rt[k]->name[i], rt[k]->arch[i],
                   (double)rt[k]->memory[i] / 1073741824.0);
    }
    if (r->hip.hsa_override[0])
        printf("HSA_OVERRIDE_GFX_VERSION=%s: the HIP runtime reports the overridden gfx target, not the silicon's\n",
               r->hip.hsa_override);
    fflush(stdout);
}

/* A backend asked for that this build of the library lacks: listed, not tested. */
static void dd_add_uncompiled(dd_report *r, dk_backend_kind kind) {
    dd_target *t = dd_add_target(r, kind, -1, "");
    if (!t) return;
    snprintf(t->label, sizeof t->label, "%s", dk_backend_name(kind));
    t->skip = 1;
    snprintf(t->skip_why, sizeof t->skip_why, "the %s backend is not compiled into this difkern build",
             dk_backend_name(kind));
}

/* The targets: every device of every backend asked for (see --help). */
static void dd_plan_targets(dd_report *r) {
    const dd_options *o = r->opt;
    dd_target *t;
    int i;
    if (o->want_cpu) {
        t = dd_add_target(r, DK_BACKEND_CPU, -1, "");
        if (t) {
            t->cpu_type = 1;
            snprintf(t->label, sizeof t->label, "cpu");
        }
    }
    if (o->want_vulkan && !dk_backend_compiled(DK_BACKEND_VULKAN)) dd_add_uncompiled(r, DK_BACKEND_VULKAN);
    if (o->want_vulkan && dk_backend_compiled(DK_BACKEND_VULKAN)) {
        if (r->vk.ndev == 0) {
            t = dd_add_target(r, DK_BACKEND_VULKAN, o->device, "");
            if (t) snprintf(t->label, sizeof t->label, "vulkan");
        }
        for (i = 0; i < r->vk.ndev; i++) {
            const dd_vk_device *d = &r->vk.dev[i];
            static const char *const variants[3] = {"", "nv", "portable"};
            int v;
            if (o->device >= 0 && o->device != i) continue;
            for (v = 0; v < 3; v++) {
                if (v > 0 && (!o->all_families || d->unusable || d->type == 4)) break;
                if (v == 1 && !(d->nv_ext && d->nv_feature)) continue;
                t = dd_add_target(r, DK_BACKEND_VULKAN, i, variants[v]);
                if (!t) break;
                t->vk_probe = i;
                t->cpu_type = d->type == 4;
                snprintf(t->label, sizeof t->label, "vulkan #%d %s%s%s%s", i, d->name, v ? " (" : "",
                         v == 1 ? "NV cooperative matrix" : v == 2 ? "portable" : "", v ? ")" : "");
                if (d->unusable) {
                    t->skip = 1;
                    snprintf(t->skip_why, sizeof t->skip_why, "not usable by difkern: %s", d->unusable);
                } else if (t->cpu_type && !o->backend_explicit) {
                    t->skip = 1;
                    snprintf(t->skip_why, sizeof t->skip_why,
                             "a CPU implementation, not a GPU (test it with --backend vulkan --device %d)", i);
                }
            }
        }
    }
    if (o->want_hip && !dk_backend_compiled(DK_BACKEND_HIP)) dd_add_uncompiled(r, DK_BACKEND_HIP);
    if (o->want_hip && dk_backend_compiled(DK_BACKEND_HIP)) {
        int n = r->hip.hip.init_ok ? r->hip.hip.count : 0;
        if (r->hip.cuda.init_ok && r->hip.cuda.count > n) n = r->hip.cuda.count;
        if (n == 0) {
            t = dd_add_target(r, DK_BACKEND_HIP, o->device, "");
            if (t) snprintf(t->label, sizeof t->label, "hip");
        }
        for (i = 0; i < n; i++) {
            if (o->device >= 0 && o->device != i) continue;
            t = dd_add_target(r, DK_BACKEND_HIP, i, "");
            if (t) snprintf(t->label, sizeof t->label, "hip #%d", i);
        }
    }
}

/* --all-families: the variant's setting for dk_context_options.settings
 * (wins over the same variable in the environment); NULL: none. */
static const char *dd_variant_settings(const char *variant) {
    if (!strcmp(variant, "nv")) return "DIFKERN_VULKAN_COOPMAT=nv";
    if (!strcmp(variant, "portable")) return "DIFKERN_VULKAN_PORTABLE=1";
    return NULL;
}

static void dd_run_target(dd_report *r, dd_target *t, const hc_case *cases, int ncases) {
    const dd_options *o = r->opt;
    dk_context_options co;
    dk_context *ctx = NULL;
    dk_status st;
    const dd_vk_device *vk = t->vk_probe >= 0 ? &r->vk.dev[t->vk_probe] : NULL;
    int op;
    printf("\n== %s\n", t->label);
    if (t->skip) {
        printf("  not tested: %s\n", t->skip_why);
        dd_families(t, vk, &r->hip);
        return;
    }
    dk_context_options_init(&co);
    co.backend = t->backend;
    co.device_index = t->device_index;
    co.settings = dd_variant_settings(t->variant);
    st = dk_context_create(&co, &ctx);
    if (st != DK_OK) {
        dd_copy(t->create_error, sizeof t->create_error, dk_last_error(NULL));
        printf("  %s: %s\n", st == DK_ERR_BACKEND_UNAVAILABLE ? "not available" : "FAILED to create a context",
               t->create_error);
        if (st != DK_ERR_BACKEND_UNAVAILABLE) {
            t->context_failed = 1; /* a present device the library cannot open is a failure */
            r->total_failed++;
            snprintf(t->create_error + strlen(t->create_error), sizeof t->create_error - strlen(t->create_error),
                     " (%s)", dk_status_name(st));
        }
        dd_families(t, vk, &r->hip);
        return;
    }
    t->created = 1;
    dd_copy(t->describe, sizeof t->describe, dk_context_describe(ctx));
    dd_copy(t->device_name, sizeof t->device_name, dk_context_device_name(ctx));
    if (t->backend == DK_BACKEND_CPU) t->cpu_type = 1;
    if (vk && strcmp(vk->name, t->device_name) != 0) {
        printf("  note: the library opened '%s', the probe's device #%d is '%s'; families are from the library\n",
               t->device_name, t->vk_probe, vk->name);
        vk = NULL;
    }
    if (t->backend == DK_BACKEND_HIP && t->label[0]) {
        snprintf(t->label + strlen(t->label), sizeof t->label - strlen(t->label), " %s", t->device_name);
    }
    dd_families(t, vk, &r->hip);
    printf("  %s\n", t->describe);
    for (op = 0; op < HC_OP_COUNT; op++)
        if (op == HC_CONV2D || op == HC_ATTENTION || op == HC_GROUP_NORM)
            printf("  %-17s %s%s%s\n", hc_op_name((hc_op)op), t->fam[op].family, t->fam[op].why[0] ? " -- not faster: " : "",
                   t->fam[op].why);
    r->tested++;
    if (!o->no_cases) {
        int failures = dd_run_cases(ctx, t, o, cases, ncases);
        r->total_failed += failures;
    }
    for (op = 0; op < HC_OP_COUNT; op++) {
        r->total_passed += t->passed[op];
        r->total_skipped += t->skipped[op];
    }
    if (!o->no_bench) {
        int i;
        dd_run_bench(ctx, t, o);
        for (i = 0; i < DD_NUM_BENCH; i++) r->total_failed += t->bench[i].ran < 0;
    }
    dk_context_destroy(ctx);
}

static int dd_write_reports(dd_report *r) {
    dd_text md = {0}, js = {0};
    char err[4400];
    int rc = 0;
    dd_report_markdown(r, &md);
    dd_report_json(r, &js);
    if (dd_write_atomic(r->opt->md_path, &md, err, sizeof err) != 0 ||
        dd_write_atomic(r->opt->json_path, &js, err, sizeof err) != 0) {
        fprintf(stderr, "difkern-doctor: %s\n", err);
        rc = -1;
    }
    dd_text_free(&md);
    dd_text_free(&js);
    return rc;
}

int main(int argc, char **argv) {
    dd_options opt;
    dd_report *r;
    const hc_case *cases;
    char err[4400];
    int ncases = hc_cases(&cases), i, selected = 0, rc;
    double t0 = dd_now_ms();
    time_t now = time(NULL);
    struct utsname un;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (ncases < 0) {
        fprintf(stderr, "difkern-doctor: the case list is malformed (two cases share a name)\n");
        return 2;
    }
    rc = dd_parse_options(argc, argv, &opt);
    if (rc) return rc == 1 ? 0 : 2;
    for (i = 0; i < ncases; i++) selected += dd_case_selected(&opt, &cases[i], cases, ncases);
    if (opt.list_cases) {
        for (i = 0; i < ncases; i++)
            if (dd_case_selected(&opt, &cases[i], cases, ncases)) printf("%s\n", cases[i].name);
        printf("%d cases\n", selected);
        return 0;
    }
    if (selected == 0 && !opt.no_cases) {
        fprintf(stderr, "difkern-doctor: no case matches%s%s%s%s (difkern-doctor --list-cases --full lists them)\n",
                opt.op ? " --op " : "", opt.op ? opt.op : "", opt.case_name ? " --case " : "",
                opt.case_name ? opt.case_name : "");
        return 2;
    }
    if (dd_check_writable(opt.md_path, err, sizeof err) != 0) {
        fprintf(stderr, "difkern-doctor: %s (choose another --out)\n", err);
        return 2;
    }
    r = (dd_report *)calloc(1, sizeof *r);
    if (!r) {
        fprintf(stderr, "difkern-doctor: out of memory\n");
        return 1;
    }
    r->opt = &opt;
    r->ncases = opt.no_cases ? 0 : selected;
    strftime(r->started, sizeof r->started, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    if (uname(&un) == 0) snprintf(r->host, sizeof r->host, "%s %s %s", un.sysname, un.release, un.machine);
    dd_scan_env(r);
    dd_probe_vulkan(&r->vk);
    dd_probe_hip(&r->hip);
    dd_print_listing(r);
    if (opt.inject) printf("DIFKERN_DOCTOR_INJECT=%s: results of matching cases are perturbed on purpose\n", opt.inject);
    printf("cases: %d per target (%s), seed %llu\n", r->ncases,
           opt.no_cases ? "none" : opt.case_name || opt.op ? "selected" : opt.full ? "the whole list" : "the quick subset",
           (unsigned long long)opt.seed);
    dd_plan_targets(r);
    for (i = 0; i < r->ntargets; i++) dd_run_target(r, &r->targets[i], cases, ncases);
    r->total_s = (dd_now_ms() - t0) / 1e3;
    r->exit_status = r->total_failed ? 1 : r->tested ? 0 : 77;
    printf("\n%d passed, %d failed, %d unsupported (skipped) on %d target(s) in %.1f s: %s\n", r->total_passed,
           r->total_failed, r->total_skipped, r->tested, r->total_s,
           r->total_failed ? "FAILED" : r->tested ? "all passed" : "nothing tested (no usable GPU; --backend cpu tests the CPU)");
    if (dd_write_reports(r) != 0) {
        free(r);
        return 3;
    }
    printf("report: %s and %s\n", opt.md_path, opt.json_path);
    rc = r->exit_status;
    free(r);
    return rc;
}
