/* The JSON report (schema "difkern-doctor/1", described in docs/doctor.md):
 * the same facts as the markdown one, for scripts that collect field reports. */
#include "doctor.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void dd_js_key(dd_text *j, const char *key) {
    dd_text_json_string(j, key);
    dd_text_printf(j, ": ");
}

static void dd_js_str(dd_text *j, const char *key, const char *v, int comma) {
    dd_js_key(j, key);
    dd_text_json_string(j, v);
    if (comma) dd_text_printf(j, ", ");
}

static void dd_js_num(dd_text *j, const char *key, double v, int comma) {
    dd_js_key(j, key);
    if (isfinite(v)) dd_text_printf(j, "%.10g", v);
    else dd_text_printf(j, "null");
    if (comma) dd_text_printf(j, ", ");
}

static void dd_js_bool(dd_text *j, const char *key, int v, int comma) {
    dd_js_key(j, key);
    dd_text_printf(j, "%s%s", v ? "true" : "false", comma ? ", " : "");
}

static void dd_js_cm(dd_text *j, const dd_vk_cm *c, int n) {
    char a[16], b[16], cc[16], d[16];
    int i;
    dd_text_printf(j, "[");
    for (i = 0; i < n; i++) {
        dd_text_printf(j, "%s{", i ? ", " : "");
        dd_js_num(j, "m", c[i].m, 1);
        dd_js_num(j, "n", c[i].n, 1);
        dd_js_num(j, "k", c[i].k, 1);
        dd_js_str(j, "a", dd_vk_component_name(c[i].a, a, sizeof a), 1);
        dd_js_str(j, "b", dd_vk_component_name(c[i].b, b, sizeof b), 1);
        dd_js_str(j, "c", dd_vk_component_name(c[i].c, cc, sizeof cc), 1);
        dd_js_str(j, "result", dd_vk_component_name(c[i].result, d, sizeof d), 1);
        dd_js_bool(j, "subgroup_scope", c[i].scope == 3, 1);
        dd_js_bool(j, "saturating", c[i].saturating, 0);
        dd_text_printf(j, "}");
    }
    dd_text_printf(j, "]");
}

static void dd_js_vulkan_device(dd_text *j, const dd_vk_device *x) {
    char v[32], dv[32];
    int i;
    dd_vk_version(x->api_version, v, sizeof v);
    dd_vk_driver_version(x, dv, sizeof dv);
    dd_text_printf(j, "{");
    dd_js_num(j, "index", x->index, 1);
    dd_js_str(j, "name", x->name, 1);
    dd_js_str(j, "type", dd_vk_type_name(x->type), 1);
    dd_js_num(j, "vendor_id", x->vendor_id, 1);
    dd_js_num(j, "device_id", x->device_id, 1);
    dd_js_str(j, "api_version", v, 1);
    dd_js_str(j, "driver_name", x->driver_name, 1);
    dd_js_str(j, "driver_info", x->driver_info, 1);
    dd_js_str(j, "driver_version", dv, 1);
    dd_js_num(j, "driver_version_raw", x->driver_version, 1);
    dd_js_num(j, "driver_id", x->driver_id, 1);
    dd_js_str(j, "conformance_version", x->conformance, 1);
    dd_js_key(j, "subgroup");
    dd_text_printf(j, "{");
    dd_js_num(j, "size", x->subgroup_size, 1);
    dd_js_num(j, "min", x->subgroup_min, 1);
    dd_js_num(j, "max", x->subgroup_max, 1);
    dd_js_num(j, "operations", x->subgroup_ops, 1);
    dd_js_bool(j, "size_control", x->subgroup_size_control, 1);
    dd_js_bool(j, "full_subgroups", x->compute_full_subgroups, 1);
    dd_js_bool(j, "required_size_in_compute", x->required_size_compute, 0);
    dd_text_printf(j, "}, ");
    dd_js_bool(j, "shader_float16", x->f16_arith, 1);
    dd_js_bool(j, "vulkan_memory_model", x->memory_model, 1);
    dd_js_bool(j, "storage_buffer_16bit", x->storage16, 1);
    dd_js_bool(j, "push_descriptor", x->push_descriptor, 1);
    dd_js_key(j, "cooperative_matrix_khr");
    dd_text_printf(j, "{");
    dd_js_bool(j, "extension", x->khr_ext, 1);
    dd_js_bool(j, "feature", x->khr_feature, 1);
    dd_js_key(j, "shapes");
    dd_js_cm(j, x->khr, x->n_khr);
    dd_text_printf(j, "}, ");
    dd_js_key(j, "cooperative_matrix_nv");
    dd_text_printf(j, "{");
    dd_js_bool(j, "extension", x->nv_ext, 1);
    dd_js_bool(j, "feature", x->nv_feature, 1);
    dd_js_key(j, "shapes");
    dd_js_cm(j, x->nv, x->n_nv);
    dd_text_printf(j, "}, ");
    dd_js_key(j, "bfloat16");
    dd_text_printf(j, "{");
    dd_js_bool(j, "extension", x->bf16_ext, 1);
    dd_js_bool(j, "type", x->bf16_type, 1);
    dd_js_bool(j, "cooperative_matrix", x->bf16_coopmat, 0);
    dd_text_printf(j, "}, ");
    dd_js_key(j, "memory_heaps");
    dd_text_printf(j, "[");
    for (i = 0; i < x->n_heaps; i++) {
        dd_text_printf(j, "%s{", i ? ", " : "");
        dd_js_num(j, "bytes", (double)x->heap_size[i], 1);
        dd_js_bool(j, "device_local", (x->heap_flags[i] & 1u) != 0, 0);
        dd_text_printf(j, "}");
    }
    dd_text_printf(j, "], ");
    dd_js_bool(j, "usable", x->unusable == NULL, 1);
    dd_js_str(j, "unusable_reason", x->unusable ? x->unusable : "", 0);
    dd_text_printf(j, "}");
}

static void dd_js_runtime(dd_text *j, const char *key, const dd_hip_runtime *rt, int comma) {
    int i;
    dd_js_key(j, key);
    dd_text_printf(j, "{");
    dd_js_bool(j, "loaded", rt->loaded, 1);
    dd_js_str(j, "library", rt->lib, 1);
    dd_js_bool(j, "initialized", rt->init_ok, 1);
    dd_js_num(j, "runtime_version", rt->runtime_version, 1);
    dd_js_num(j, "driver_version", rt->driver_version, 1);
    dd_js_str(j, "versions", rt->versions, 1);
    dd_js_str(j, "error", rt->error, 1);
    dd_js_key(j, "devices");
    dd_text_printf(j, "[");
    for (i = 0; i < rt->count; i++) {
        dd_text_printf(j, "%s{", i ? ", " : "");
        dd_js_num(j, "index", i, 1);
        dd_js_str(j, "name", rt->name[i], 1);
        dd_js_str(j, "arch", rt->arch[i], 1);
        dd_js_num(j, "memory_bytes", (double)rt->memory[i], 0);
        dd_text_printf(j, "}");
    }
    dd_text_printf(j, "]}%s", comma ? ", " : "");
}

static void dd_js_target(dd_text *j, const dd_report *r, const dd_target *t) {
    int op, i;
    dd_text_printf(j, "{");
    dd_js_str(j, "label", t->label, 1);
    dd_js_str(j, "backend", dk_backend_name(t->backend), 1);
    dd_js_num(j, "device_index", t->device_index, 1);
    dd_js_str(j, "variant", t->variant[0] ? t->variant : "default", 1);
    dd_js_str(j, "status", dd_target_status(t), 1);
    dd_js_str(j, "reason", t->skip ? t->skip_why : !t->created ? t->create_error : "", 1);
    dd_js_str(j, "device", t->device_name, 1);
    dd_js_str(j, "description", t->describe, 1);
    dd_js_bool(j, "cpu_device", t->cpu_type, 1);
    dd_js_key(j, "ops");
    dd_text_printf(j, "{");
    for (op = 0; op < HC_OP_COUNT; op++) {
        dd_js_key(j, hc_op_name((hc_op)op));
        dd_text_printf(j, "{");
        dd_js_str(j, "status", dd_op_status(t, op), 1);
        dd_js_num(j, "passed", t->passed[op], 1);
        dd_js_num(j, "failed", t->failed[op], 1);
        dd_js_num(j, "unsupported", t->skipped[op], 1);
        dd_js_str(j, "family", t->fam[op].family, 1);
        dd_js_str(j, "why_not_faster", t->fam[op].why, 0);
        dd_text_printf(j, "}%s", op + 1 < HC_OP_COUNT ? ", " : "");
    }
    dd_text_printf(j, "}, ");
    dd_js_num(j, "cases_seconds", t->cases_s, 1);
    dd_js_str(j, "first_unsupported", t->first_skip, 1);
    dd_js_key(j, "failures");
    dd_text_printf(j, "[");
    for (i = 0; i < t->nfail; i++) {
        dd_text_printf(j, "%s{", i ? ", " : "");
        dd_js_str(j, "case", t->fail[i].case_name, 1);
        dd_js_str(j, "error", t->fail[i].message, 1);
        dd_js_str(j, "reproducer", t->fail[i].reproducer, 0);
        dd_text_printf(j, "}");
    }
    dd_text_printf(j, "], ");
    dd_js_key(j, "bench");
    if (r->opt->no_bench || !t->created) {
        dd_text_printf(j, "null}");
        return;
    }
    dd_text_printf(j, "{");
    dd_js_bool(j, "quick_sizes", t->bench_quick, 1);
    dd_js_key(j, "results");
    dd_text_printf(j, "[");
    for (i = 0; i < DD_NUM_BENCH; i++) {
        const dd_bench *b = &t->bench[i];
        int ok = b->ran == 1 && b->ms > 0.0;
        dd_text_printf(j, "%s{", i ? ", " : "");
        dd_js_str(j, "name", b->name, 1);
        dd_js_str(j, "shape", b->spec, 1);
        dd_js_str(j, "status", b->ran == 1 ? "timed" : b->ran < 0 ? "failed" : "skipped", 1);
        dd_js_str(j, "error", b->error, 1);
        dd_js_num(j, "ms", ok ? b->ms : NAN, 1);
        dd_js_num(j, "flops", b->flops, 1);
        dd_js_num(j, "bytes", b->bytes, 1);
        dd_js_num(j, "tflops", ok ? b->flops / b->ms / 1e9 : NAN, 1);
        dd_js_num(j, "gbps", ok && b->bytes > 0.0 ? b->bytes / b->ms / 1e6 : NAN, 1);
        dd_js_num(j, "host_wall_ms", ok && b->wall_ms > 0.0 ? b->wall_ms : NAN, 1);
        dd_js_num(j, "peak_device_bytes", ok && b->peak_bytes ? (double)b->peak_bytes : NAN, 0);
        dd_text_printf(j, "}");
    }
    dd_text_printf(j, "]}}");
}

void dd_report_json(const dd_report *r, dd_text *j) {
    const dd_options *o = r->opt;
    char v[32];
    int i;
    dd_text_printf(j, "{\n");
    dd_js_str(j, "schema", "difkern-doctor/1", 1);
    dd_js_str(j, "difkern_version", dk_version_string(), 1);
    dd_js_str(j, "doctor_version", DD_TOOL_VERSION, 1);
    dd_js_str(j, "started", r->started, 1);
    dd_js_str(j, "host", r->host, 1);
    dd_js_str(j, "command", o->command_line, 1);
    dd_js_num(j, "seed", (double)o->seed, 1);
    dd_js_str(j, "case_selection",
              o->no_cases ? "none" : o->case_name || o->op ? "selected" : o->full ? "full" : "quick", 1);
    dd_js_str(j, "views", o->odd_views ? "odd" : "listed", 1);
    dd_js_num(j, "cases_per_target", r->ncases, 1);
    dd_js_key(j, "inject");
    if (o->inject) dd_text_json_string(j, o->inject);
    else dd_text_printf(j, "null");
    dd_text_printf(j, ",\n");
    dd_js_key(j, "environment");
    dd_text_printf(j, "[");
    {
        const char *p = r->env;
        int first = 1;
        while (*p) {
            size_t n = strcspn(p, "\n");
            char line[1024];
            snprintf(line, sizeof line, "%.*s", (int)n, p);
            if (!first) dd_text_printf(j, ", ");
            dd_text_json_string(j, line);
            first = 0;
            p += n;
            if (*p) p++;
        }
    }
    dd_text_printf(j, "],\n");
    dd_js_key(j, "backends_compiled");
    dd_text_printf(j, "{");
    dd_js_bool(j, "cpu", dk_backend_compiled(DK_BACKEND_CPU), 1);
    dd_js_bool(j, "vulkan", dk_backend_compiled(DK_BACKEND_VULKAN), 1);
    dd_js_bool(j, "hip", dk_backend_compiled(DK_BACKEND_HIP), 0);
    dd_text_printf(j, "},\n");
    dd_js_key(j, "runtimes");
    dd_text_printf(j, "{");
    dd_js_key(j, "vulkan_loader");
    dd_text_printf(j, "{");
    dd_js_bool(j, "found", r->vk.loader, 1);
    dd_vk_version(r->vk.loader_version, v, sizeof v);
    dd_js_str(j, "version", r->vk.loader ? v : "", 1);
    dd_js_str(j, "error", r->vk.error, 0);
    dd_text_printf(j, "}, ");
    dd_js_runtime(j, "hip", &r->hip.hip, 1);
    dd_js_runtime(j, "cuda", &r->hip.cuda, 1);
    dd_js_str(j, "hsa_override_gfx_version", r->hip.hsa_override, 0);
    dd_text_printf(j, "},\n");
    dd_js_key(j, "vulkan_devices");
    dd_text_printf(j, "[");
    for (i = 0; i < r->vk.ndev; i++) {
        dd_text_printf(j, "%s\n  ", i ? "," : "");
        dd_js_vulkan_device(j, &r->vk.dev[i]);
    }
    dd_text_printf(j, "],\n");
    dd_js_key(j, "targets");
    dd_text_printf(j, "[");
    for (i = 0; i < r->ntargets; i++) {
        dd_text_printf(j, "%s\n  ", i ? "," : "");
        dd_js_target(j, r, &r->targets[i]);
    }
    dd_text_printf(j, "],\n");
    dd_js_key(j, "summary");
    dd_text_printf(j, "{");
    dd_js_str(j, "result", r->total_failed ? "failed" : r->tested ? "passed" : "nothing tested", 1);
    dd_js_num(j, "passed", r->total_passed, 1);
    dd_js_num(j, "failed", r->total_failed, 1);
    dd_js_num(j, "unsupported", r->total_skipped, 1);
    dd_js_num(j, "targets_tested", r->tested, 1);
    dd_js_num(j, "seconds", r->total_s, 1);
    dd_js_num(j, "exit_status", r->exit_status, 0);
    dd_text_printf(j, "},\n");
    dd_js_key(j, "cannot_know");
    dd_text_printf(j, "[");
    for (i = 0; dd_unknowables[i]; i++) {
        dd_text_printf(j, "%s\n  ", i ? "," : "");
        dd_text_json_string(j, dd_unknowables[i]);
    }
    dd_text_printf(j, "]\n}\n");
}
