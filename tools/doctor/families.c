/* Which kernel family each op gets on a target, and why a faster one is not
 * used.  The family is what the library says it chose (dk_context_describe);
 * the reason is worked out from the device's own answers (probe_vulkan.c,
 * probe_hip.c) with the library's rules (backends/vulkan/vk_device.c:
 * vkdev_pick_coopmat; backends/hip/hip_backend.c: hipbk_pick). */
#include "doctor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DD_SG_NEEDED (1u | 2u | 16u) /* VK_SUBGROUP_FEATURE_BASIC | VOTE | SHUFFLE */

/* A setting from the environment as the library parses it ("" where unset or
 * bad: a bad value fails the context, which the report shows already). */
static const char *dd_setting(const char *name, char *buf, size_t cap) {
    if (dk_setting_value(NULL, name, buf, cap) != DK_OK) buf[0] = '\0';
    return buf;
}

static int dd_setting_on(const char *name) {
    char v[8];
    return strcmp(dd_setting(name, v, sizeof v), "1") == 0;
}

/* Why the device's subgroups do not suit the tensor-core shaders (8 subgroups
 * of 32 per workgroup), or NULL. */
static const char *dd_vk_subgroup_problem(const dd_vk_device *d, char *buf, size_t cap) {
    if (!(d->subgroup_stages & 32u /* VK_SHADER_STAGE_COMPUTE_BIT */) ||
        (d->subgroup_ops & DD_SG_NEEDED) != DD_SG_NEEDED) {
        snprintf(buf, cap, "compute subgroups lack basic/vote/shuffle operations (supported ops 0x%x)", d->subgroup_ops);
        return buf;
    }
    if (d->subgroup_size == 32 && !dd_setting_on("DIFKERN_VULKAN_CM_WAVE32")) return NULL;
    if (d->api_version < ((1u << 22) | (3u << 12)) || d->subgroup_min > 32 || d->subgroup_max < 32 ||
        !d->required_size_compute || !d->subgroup_size_control || !d->compute_full_subgroups) {
        snprintf(buf, cap,
                 "subgroups are %u wide and 32-wide ones cannot be requested in compute (Vulkan 1.3 subgroup size "
                 "control: sizes %u..%u, control %d, full subgroups %d)",
                 d->subgroup_size, d->subgroup_min, d->subgroup_max, d->subgroup_size_control,
                 d->compute_full_subgroups);
        return buf;
    }
    return NULL;
}

static int dd_cm_has(const dd_vk_cm *c, int n, int32_t ab) {
    int i;
    for (i = 0; i < n; i++)
        if (c[i].m == 16 && c[i].n == 16 && c[i].k == 16 && c[i].a == ab && c[i].b == ab && c[i].c == 1 &&
            c[i].result == 1 && c[i].scope == 3)
            return 1;
    return 0;
}

/* Why there is no f16 tensor-core family on d (NULL: there could be). */
static const char *dd_vk_f16_problem(const dd_vk_device *d, const char *variant, char *buf, size_t cap) {
    char spelling[8];
    const char *env = dd_setting("DIFKERN_VULKAN_COOPMAT", spelling, sizeof spelling);
    int want_khr = !variant[0] && (!env[0] || !strcmp(env, "khr"));
    int want_nv = !strcmp(variant, "nv") || (!variant[0] && (!env[0] || !strcmp(env, "nv")));
    int khr, nv;
    const char *sg;
    if (!strcmp(variant, "portable")) return "portable run requested (--all-families: DIFKERN_VULKAN_PORTABLE=1)";
    if (dd_setting_on("DIFKERN_VULKAN_PORTABLE")) return "DIFKERN_VULKAN_PORTABLE is set";
    if (!d->khr_ext && !d->nv_ext) return "no VK_KHR_cooperative_matrix or VK_NV_cooperative_matrix";
    if ((sg = dd_vk_subgroup_problem(d, buf, cap)) != NULL) return sg;
    if (!d->f16_arith || !d->memory_model) return "no shaderFloat16 or no vulkanMemoryModel (Vulkan 1.2 features)";
    khr = d->khr_ext && d->khr_feature && dd_cm_has(d->khr, d->n_khr, 0);
    nv = d->nv_ext && d->nv_feature && dd_cm_has(d->nv, d->n_nv, 0);
    if ((want_khr && khr) || (want_nv && nv)) return NULL;
    if (!want_khr && khr) return "DIFKERN_VULKAN_COOPMAT excludes the KHR spelling the device has";
    if (!want_nv && nv) return "DIFKERN_VULKAN_COOPMAT excludes the NV spelling the device has";
    snprintf(buf, cap, "%s%s without a 16x16x16 f16 x f16 -> f32 subgroup shape (or the feature is off)",
             d->khr_ext ? "VK_KHR_cooperative_matrix" : "", d->khr_ext ? (d->nv_ext ? " and VK_NV_cooperative_matrix" : "")
                                                                       : "VK_NV_cooperative_matrix");
    return buf;
}

static const char *dd_vk_bf16_problem(const dd_vk_device *d, int khr_used) {
    if (!khr_used) return "bf16 tensor cores need the KHR cooperative matrix family";
    if (!d->bf16_ext) return "no VK_KHR_shader_bfloat16";
    if (!d->bf16_type || !d->bf16_coopmat) return "VK_KHR_shader_bfloat16 without shaderBFloat16CooperativeMatrix";
    if (!dd_cm_has(d->khr, d->n_khr, 1000141000)) return "no 16x16x16 bf16 x bf16 -> f32 cooperative-matrix shape";
    return "the library did not enable it (report this)";
}

static void dd_set(dd_family *f, const char *family, const char *why) {
    dd_copy(f->family, sizeof f->family, family);
    dd_copy(f->why, sizeof f->why, why);
}

static int dd_is_matrix_op(int op) {
    return op == HC_CONV2D || op == HC_CONV_TRANSPOSE2D || op == HC_CONV3D || op == HC_MATMUL || op == HC_LINEAR || op == HC_ATTENTION;
}

static const char *dd_shape_rule(int op, int vulkan) {
    if (op == HC_CONV2D || op == HC_CONV_TRANSPOSE2D || op == HC_CONV3D)
        return vulkan ? "groups 1, Cin % 32 == 0 (else zero-padded), Cout % 8 == 0 or Cout <= 8" : "any shape";
    if (op == HC_MATMUL || op == HC_LINEAR)
        return vulkan ? "one b for the batch, K % 32 == 0, N % 8 == 0, a's rows K-contiguous" : "b shared and M >= 128";
    if (op == HC_ATTENTION) return vulkan ? "16-byte aligned rows, D and Dv multiples of 8" : "any shape";
    return "";
}

static void dd_families_vulkan(dd_target *t, const dd_vk_device *d) {
    const char *desc = t->describe;
    int khr_bf16 = strstr(desc, "KHR cooperative-matrix f16/bf16") != NULL;
    int khr = khr_bf16 || strstr(desc, "KHR cooperative-matrix f16") != NULL;
    int nv = strstr(desc, "NV cooperative-matrix f16") != NULL;
    char buf[400], f16why[300] = "", line[400];
    const char *p;
    int op;
    if (!(khr || nv)) {
        p = d ? dd_vk_f16_problem(d, t->variant, buf, sizeof buf) : "the device was not found by the doctor's probe";
        dd_copy(f16why, sizeof f16why, p ? p : "the probe sees tensor-core support the library did not enable (report this)");
    }
    for (op = 0; op < HC_OP_COUNT; op++) {
        dd_family *f = &t->fam[op];
        if (!dd_is_matrix_op(op)) {
            dd_set(f, "portable (fp32 arithmetic)", "");
            continue;
        }
        if (khr || nv) {
            snprintf(line, sizeof line, "%s cooperative matrix (tensor cores) for f16%s where %s; portable otherwise",
                     khr ? "KHR" : "NV", khr_bf16 ? " and bf16" : "", dd_shape_rule(op, 1));
            if (khr_bf16) buf[0] = 0;
            else snprintf(buf, sizeof buf, "bf16: %s", d ? dd_vk_bf16_problem(d, khr) : "unknown");
            if (strlen(buf)) dd_copy(buf + strlen(buf), sizeof buf - strlen(buf), "; f32: no tensor-core path");
            else dd_copy(buf, sizeof buf, "f32: no tensor-core path");
            dd_set(f, line, buf);
        } else {
            dd_set(f, "portable (fp32 accumulation)", f16why);
        }
    }
}

/* The text after key in s, up to the next ';' or ',' (into out). */
static void dd_field(const char *s, const char *key, char *out, size_t cap) {
    const char *p = strstr(s, key);
    size_t n;
    out[0] = 0;
    if (!p) return;
    p += strlen(key);
    n = strcspn(p, ";,");
    snprintf(out, cap, "%.*s", (int)n, p);
}

static void dd_families_hip(dd_target *t) {
    char mc[96], line[400], why[400];
    int op, jit = strstr(t->describe, "PTX, JIT-compiled") != NULL;
    int wgmma = strstr(t->describe, "sm_90a") != NULL;
    dd_field(t->describe, "matrix cores: ", mc, sizeof mc);
    for (op = 0; op < HC_OP_COUNT; op++) {
        dd_family *f = &t->fam[op];
        if (!dd_is_matrix_op(op)) {
            dd_set(f, "HIP kernels (fp32 arithmetic)", "");
            continue;
        }
        snprintf(line, sizeof line, "matrix cores (%s) for f16 and bf16%s; fp32: FMA tiles", mc[0] ? mc : "?",
                 wgmma && op != HC_ATTENTION ? ", wgmma where Cin/groups % 64 == 0"
                 : wgmma                     ? ", wgmma for D == Dv == 512 and D == Dv <= 128"
                                             : "");
        why[0] = 0;
        if (jit) dd_copy(why, sizeof why, "no cubin for this GPU: PTX JIT-compiled by the driver, without wgmma");
        else if (!wgmma && strstr(t->describe, "sm_")) dd_copy(why, sizeof why, "wgmma needs sm_90 (Hopper)");
        dd_copy(why + strlen(why), sizeof why - strlen(why), why[0] ? "; f32: no matrix-core path" : "f32: no matrix-core path");
        dd_set(f, line, why);
    }
}

void dd_families(dd_target *t, const dd_vk_device *vk, const dd_hip_probe *hip) {
    int op;
    (void)hip;
    if (!t->created) {
        for (op = 0; op < HC_OP_COUNT; op++) dd_set(&t->fam[op], "none (no context)", t->create_error);
        return;
    }
    if (t->backend == DK_BACKEND_VULKAN) dd_families_vulkan(t, vk);
    else if (t->backend == DK_BACKEND_HIP) dd_families_hip(t);
    else
        for (op = 0; op < HC_OP_COUNT; op++)
            dd_set(&t->fam[op], "CPU: fp32 blocked GEMM core, 16-bit data widened to fp32", "");
}
