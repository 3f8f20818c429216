/* The markdown report: for a person reading a bug report, and the source of a
 * "verified where" row (docs/doctor.md). */
#include "doctor.h"

#include <stdio.h>
#include <string.h>

const char *const dd_unknowables[] = {
    "Correctness beyond the cases run: the case list is a finite set of shapes with random inputs; "
    "other shapes may take other code paths (tiles, edges, split-K) that were not exercised here.",
    "Real-model numerics: the benchmark decode uses seeded random weights; the fp16 range of real SDXL "
    "weights (and the decoder's fp32 fallback) is not exercised.",
    "Which kernel ran for each call: the library reports one family per context (dk_context_describe); "
    "per-shape fallbacks (e.g. a Cin that is not a multiple of 32, the Hopper wgmma/TMA conditions) are "
    "inferred from the documented rules, not observed.",
    "The silicon behind HSA_OVERRIDE_GFX_VERSION: with it set, the HIP runtime reports the overridden "
    "gfx target, and the doctor cannot see the real one.",
    "Stable performance: timings are medians of a few runs after a short warm-up, on whatever clocks, "
    "power limits and other processes the machine had; they are not a tuned benchmark.",
    "Thread safety, long runs and device-memory pressure: one context at a time runs short jobs here.",
    "That Vulkan device #N of the doctor's own probe is the library's #N: both enumerate the same loader "
    "in the same process; a mismatch is reported when the names differ.",
    NULL};

const char *dd_target_status(const dd_target *t) {
    int op, bad = t->context_failed;
    if (t->skip) return "not tested";
    if (!t->created) return bad ? "failed" : "not available";
    for (op = 0; op < HC_OP_COUNT; op++) bad |= t->failed[op] != 0;
    for (op = 0; op < DD_NUM_BENCH; op++) bad |= t->bench[op].ran < 0;
    return bad ? "failed" : "passed";
}

const char *dd_op_status(const dd_target *t, int op) {
    if (t->failed[op]) return "failed";
    if (t->passed[op]) return "passed";
    if (t->skipped[op]) return "unsupported";
    return "not run";
}

static void dd_md_device_vulkan(const dd_report *r, dd_text *m) {
    int i, j;
    char v[32], dv[32], a[16], b[16], c[16], d[16];
    if (!r->vk.ndev) return;
    dd_text_printf(m, "\n### Vulkan devices\n\n");
    for (i = 0; i < r->vk.ndev; i++) {
        const dd_vk_device *x = &r->vk.dev[i];
        dd_vk_version(x->api_version, v, sizeof v);
        dd_vk_driver_version(x, dv, sizeof dv);
        dd_text_printf(m, "**#%d %s** (%s, vendor 0x%04x, device 0x%04x)%s%s\n\n", i, x->name, dd_vk_type_name(x->type),
                       x->vendor_id, x->device_id, x->unusable ? ": **not usable by difkern: " : "",
                       x->unusable ? x->unusable : "");
        if (x->unusable) dd_text_printf(m, "**\n\n");
        dd_text_printf(m, "- Vulkan %s; driver %s %s (", v, x->driver_name, dv);
        dd_text_md_cell(m, x->driver_info);
        dd_text_printf(m, "), driver id %d, conformance %s\n", x->driver_id, x->conformance);
        dd_text_printf(m, "- subgroups: %u wide (min %u, max %u; size control %s, full subgroups %s, required size in "
                          "compute %s); operations 0x%x\n",
                       x->subgroup_size, x->subgroup_min, x->subgroup_max, x->subgroup_size_control ? "yes" : "no",
                       x->compute_full_subgroups ? "yes" : "no", x->required_size_compute ? "yes" : "no", x->subgroup_ops);
        dd_text_printf(m, "- shaderFloat16 %s, vulkanMemoryModel %s, storageBuffer16BitAccess %s, VK_KHR_push_descriptor %s\n",
                       x->f16_arith ? "yes" : "no", x->memory_model ? "yes" : "no", x->storage16 ? "yes" : "no",
                       x->push_descriptor ? "yes" : "no");
        dd_text_printf(m, "- VK_KHR_cooperative_matrix: %s", !x->khr_ext ? "no" : x->khr_feature ? "yes" : "extension, feature off");
        for (j = 0; j < x->n_khr; j++) {
            const dd_vk_cm *q = &x->khr[j];
            dd_text_printf(m, "%s%ux%ux%u %s*%s+%s->%s%s%s", j ? ", " : "; shapes (MxNxK A*B+C->R): ", q->m, q->n, q->k,
                           dd_vk_component_name(q->a, a, sizeof a), dd_vk_component_name(q->b, b, sizeof b),
                           dd_vk_component_name(q->c, c, sizeof c), dd_vk_component_name(q->result, d, sizeof d),
                           q->scope == 3 ? "" : " (not subgroup scope)", q->saturating ? " sat" : "");
        }
        dd_text_printf(m, "\n- VK_NV_cooperative_matrix: %s", !x->nv_ext ? "no" : x->nv_feature ? "yes" : "extension, feature off");
        for (j = 0; j < x->n_nv; j++) {
            const dd_vk_cm *q = &x->nv[j];
            dd_text_printf(m, "%s%ux%ux%u %s*%s+%s->%s", j ? ", " : "; shapes: ", q->m, q->n, q->k,
                           dd_vk_component_name(q->a, a, sizeof a), dd_vk_component_name(q->b, b, sizeof b),
                           dd_vk_component_name(q->c, c, sizeof c), dd_vk_component_name(q->result, d, sizeof d));
        }
        dd_text_printf(m, "\n- bf16 (VK_KHR_shader_bfloat16): %s\n",
                       !x->bf16_ext ? "no" : x->bf16_coopmat ? "yes, with cooperative matrices" : x->bf16_type ? "type only" : "extension, features off");
        dd_text_printf(m, "- memory heaps:");
        for (j = 0; j < x->n_heaps; j++)
            dd_text_printf(m, "%s %.2f GiB%s", j ? "," : "", (double)x->heap_size[j] / 1073741824.0,
                           x->heap_flags[j] & 1u ? " device-local" : "");
        dd_text_printf(m, "\n\n");
    }
}

static void dd_md_runtimes(const dd_report *r, dd_text *m) {
    const dd_hip_runtime *rt[2];
    char v[32];
    int k, i;
    dd_text_printf(m, "\n## Runtimes and devices\n\n");
    if (r->vk.loader) {
        dd_vk_version(r->vk.loader_version, v, sizeof v);
        dd_text_printf(m, "- Vulkan loader: libvulkan.so.1, instance version %s%s%s\n", v, r->vk.error[0] ? "; " : "",
                       r->vk.error);
    } else {
        dd_text_printf(m, "- Vulkan: %s\n", r->vk.error);
    }
    rt[0] = &r->hip.hip;
    rt[1] = &r->hip.cuda;
    for (k = 0; k < 2; k++) {
        if (!rt[k]->loaded) dd_text_printf(m, "- %s: %s\n", rt[k]->label, rt[k]->error);
        else
            dd_text_printf(m, "- %s: %s, %s, %d device(s)%s%s\n", rt[k]->label,
                           rt[k]->lib, rt[k]->versions, rt[k]->count,
                           rt[k]->error[0] ? "; " : "", rt[k]->error);
        for (i = 0; i < rt[k]->count; i++)
            dd_text_printf(m, "  - #%d %s, %s, %.1f GiB\n", i, rt[k]->name[i], rt[k]->arch[i][0] ? rt[k]->arch[i] : "arch unknown",
                           (double)rt[k]->memory[i] / 1073741824.0);
    }
    if (r->hip.hsa_override[0])
        dd_text_printf(m, "- HSA_OVERRIDE_GFX_VERSION=%s: the gfx target above is the overridden one\n", r->hip.hsa_override);
    dd_md_device_vulkan(r, m);
}

static void dd_md_target(const dd_report *r, const dd_target *t, dd_text *m) {
    int op, i;
    char unit[96];
    dd_text_printf(m, "\n### %s: %s\n\n", t->label, dd_target_status(t));
    if (t->skip) {
        dd_text_printf(m, "Not tested: %s\n", t->skip_why);
        return;
    }
    if (!t->created) {
        dd_text_printf(m, "No context: `");
        dd_text_md_cell(m, t->create_error);
        dd_text_printf(m, "`\n");
        return;
    }
    dd_text_printf(m, "`%s`\n\n", t->describe);
    dd_text_printf(m, "| op | cases passed | failed | unsupported | kernel family | why not a faster one |\n|---|---|---|---|---|---|\n");
    for (op = 0; op < HC_OP_COUNT; op++) {
        dd_text_printf(m, "| %s | %d | %d | %d | ", hc_op_name((hc_op)op), t->passed[op], t->failed[op], t->skipped[op]);
        dd_text_md_cell(m, t->fam[op].family);
        dd_text_printf(m, " | ");
        dd_text_md_cell(m, t->fam[op].why[0] ? t->fam[op].why : "-");
        dd_text_printf(m, " |\n");
    }
    if (!r->opt->no_cases) dd_text_printf(m, "\nCases took %.1f s.\n", t->cases_s);
    if (t->first_skip[0]) {
        dd_text_printf(m, "\nUnsupported here (skipped, not failed), e.g.: `");
        dd_text_md_cell(m, t->first_skip);
        dd_text_printf(m, "`\n");
    }
    if (t->nfail) {
        dd_text_printf(m, "\n**Failures**%s:\n\n", t->nfail == DD_MAX_FAILURES ? " (the first ones)" : "");
        for (i = 0; i < t->nfail; i++) {
            dd_text_printf(m, "- `%s`: ", t->fail[i].case_name);
            dd_text_md_cell(m, t->fail[i].message);
            dd_text_printf(m, "\n  reproduce: `%s`\n", t->fail[i].reproducer);
        }
    }
    if (r->opt->no_bench) return;
    dd_text_printf(m, "\nBenchmark (%s sizes; median of timed runs, device timestamps where the backend has them):\n\n",
                   t->bench_quick ? "quick" : "full");
    dd_text_printf(m, "| benchmark | shape | ms | throughput |\n|---|---|---|---|\n");
    for (i = 0; i < DD_NUM_BENCH; i++) {
        const dd_bench *b = &t->bench[i];
        dd_text_printf(m, "| %s | ", b->name);
        dd_text_md_cell(m, b->spec);
        if (b->ran == 1) {
            dd_text_printf(m, " | %.3f | %s", b->ms, dd_bench_unit(b, unit, sizeof unit));
            if (b->peak_bytes) dd_text_printf(m, "; peak device memory %.1f MiB; host wall %.3f ms", b->peak_bytes / 1048576.0, b->wall_ms);
            dd_text_printf(m, " |\n");
        } else {
            dd_text_printf(m, " | - | ");
            dd_text_md_cell(m, b->ran < 0 ? b->error : b->error[0] ? b->error : "not run");
            dd_text_printf(m, " |\n");
        }
    }
}

/* A target as the README's "backend / target" column names it. */
static void dd_row_name(const dd_report *r, const dd_target *t, char *out, size_t cap) {
    const char *d = t->describe;
    if (t->backend == DK_BACKEND_VULKAN) {
        const char *fam = strstr(d, "KHR cooperative-matrix f16/bf16") ? "tensor cores, KHR, f16 + bf16"
                          : strstr(d, "KHR cooperative-matrix f16")     ? "tensor cores, KHR, f16"
                          : strstr(d, "NV cooperative-matrix f16")      ? "tensor cores, NV, f16"
                                                                        : "portable";
        char dv[32] = "";
        const dd_vk_device *v = t->vk_probe >= 0 ? &r->vk.dev[t->vk_probe] : NULL;
        if (v) dd_vk_driver_version(v, dv, sizeof dv);
        snprintf(out, cap, "Vulkan %s: %s, %s %s", fam, t->device_name, v ? v->driver_name : "driver", dv);
    } else if (t->backend == DK_BACKEND_HIP) {
        const char *p = strstr(d, "): ");
        snprintf(out, cap, "HIP %s", p ? p + 3 : d);
    } else {
        snprintf(out, cap, "CPU (%s)", d);
    }
}

/* The rows this report would give the README's "verified where" table. */
static void dd_md_verified_row(const dd_report *r, dd_text *m) {
    int i, any = 0;
    dd_text_printf(m, "\n## Suggested \"verified where\" rows\n\n"
                      "For the README's table (docs/doctor.md says how a field report becomes a row); one per "
                      "target that passed:\n\n```\n");
    for (i = 0; i < r->ntargets; i++) {
        const dd_target *t = &r->targets[i];
        int op, passed = 0, total = 0;
        char name[512];
        if (strcmp(dd_target_status(t), "passed") != 0) continue;
        for (op = 0; op < HC_OP_COUNT; op++) {
            passed += t->passed[op];
            total += t->passed[op] + t->failed[op] + t->skipped[op];
        }
        dd_row_name(r, t, name, sizeof name);
        dd_text_printf(m, "| ");
        dd_text_md_cell(m, name);
        dd_text_printf(m, " | field build | field report %.10s: %s list (%d/%d, %d unsupported) | %s%.10s |\n",
                       r->started, r->opt->full ? "whole" : r->opt->case_name || r->opt->op ? "part of the" : "quick",
                       passed, total, total - passed, r->opt->no_bench ? "no" : t->bench_quick ? "quick sizes, " : "",
                       r->opt->no_bench ? "" : r->started);
        any = 1;
    }
    if (!any) dd_text_printf(m, "(none: no target passed)\n");
    dd_text_printf(m, "```\n");
}

void dd_report_markdown(const dd_report *r, dd_text *m) {
    const dd_options *o = r->opt;
    int i;
    dd_text_printf(m, "# difkern-doctor report\n\n");
    dd_text_printf(m, "**Result: %s** (%d passed, %d failed, %d unsupported on %d target(s), %.1f s)\n\n",
                   r->total_failed ? "FAILED" : r->tested ? "PASSED" : "NOTHING TESTED", r->total_passed, r->total_failed,
                   r->total_skipped, r->tested, r->total_s);
    dd_text_printf(m, "- difkern %s, difkern-doctor %s; compiled-in backends: cpu %s, vulkan %s, hip %s\n",
                   dk_version_string(), DD_TOOL_VERSION, dk_backend_compiled(DK_BACKEND_CPU) ? "yes" : "no",
                   dk_backend_compiled(DK_BACKEND_VULKAN) ? "yes" : "no", dk_backend_compiled(DK_BACKEND_HIP) ? "yes" : "no");
    dd_text_printf(m, "- started %s on %s\n- command: `%s`\n", r->started, r->host, o->command_line);
    dd_text_printf(m, "- cases: %d per target (%s%s), seed %llu\n", r->ncases,
                   o->no_cases ? "none" : o->case_name || o->op ? "selected" : o->full ? "the whole list" : "the quick subset",
                   o->odd_views ? "; on odd views: size-1 strides INT64_MAX, misaligned" : "", (unsigned long long)o->seed);
    if (o->inject) dd_text_printf(m, "- **DIFKERN_DOCTOR_INJECT=%s: results were perturbed on purpose** (a test of the doctor)\n", o->inject);
    if (r->env[0]) {
        dd_text_printf(m, "- environment:\n");
        {
            const char *p = r->env;
            while (*p) {
                size_t n = strcspn(p, "\n");
                dd_text_printf(m, "  - `%.*s`\n", (int)n, p);
                p += n;
                if (*p) p++;
            }
        }
    }
    dd_md_runtimes(r, m);
    dd_text_printf(m, "\n## Results per target\n\n| target | result | cases passed | failed | unsupported |\n|---|---|---|---|---|\n");
    for (i = 0; i < r->ntargets; i++) {
        const dd_target *t = &r->targets[i];
        int op, p = 0, f = 0, s = 0;
        for (op = 0; op < HC_OP_COUNT; op++) p += t->passed[op], f += t->failed[op], s += t->skipped[op];
        dd_text_printf(m, "| ");
        dd_text_md_cell(m, t->label);
        dd_text_printf(m, " | %s | %d | %d | %d |\n", dd_target_status(t), p, f, s);
    }
    if (r->ntargets == 0) dd_text_printf(m, "| (no backend asked for is compiled in) | - | 0 | 0 | 0 |\n");
    for (i = 0; i < r->ntargets; i++) dd_md_target(r, &r->targets[i], m);
    dd_md_verified_row(r, m);
    dd_text_printf(m, "\n## What this report cannot tell\n\n");
    for (i = 0; dd_unknowables[i]; i++) dd_text_printf(m, "- %s\n", dd_unknowables[i]);
}
