/* The knob parser (src/knobs.c, compiled into this test) and the list itself
 * (src/knobs.h), built twice: with DIFKERN_DEV_KNOBS (argv[1] "dev") and
 * without ("user"), so the default build checks both readings of the
 * benchmark class.
 *   - the list: names unique and DIFKERN_-prefixed, defaults inside what each
 *     type accepts, at most 17 settings outside the benchmark class;
 *   - defaults with a clean environment, field by field against the table;
 *   - each type: bool words, integers (range, listed values, overflow), enum
 *     indices, strings (length), empty = default;
 *   - settings win over the environment; benchmark settings per build. */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */

#include "../check.h"
#include "../../src/knobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t tp_num(const dk_knobs *k, dk_knob_id id) {
    return *(const int64_t *)(const void *)((const char *)k + dk__knob_info((int)id)->offset);
}

/* dk__knobs_load with one env variable (name NULL: none) and settings. */
static dk_status tp_load(dk_knobs *k, const char *name, const char *value, const char *settings, char *err,
                         size_t cap) {
    dk_status st;
    if (name) setenv(name, value, 1);
    st = dk__knobs_load(k, settings, err, cap);
    if (name) unsetenv(name);
    return st;
}

static void tp_value(const char *name, const char *value, dk_knob_id id, int64_t want) {
    dk_knobs k;
    char err[512];
    dk_status st = tp_load(&k, name, value, NULL, err, sizeof err);
    CHECK(st == DK_OK && tp_num(&k, id) == want, "%s='%s': status %d value %lld, want %lld (%s)", name, value, (int)st,
          (long long)(st == DK_OK ? tp_num(&k, id) : -99), (long long)want, err);
}

static void tp_bad(const char *name, const char *value, const char *want) {
    dk_knobs k;
    char err[512];
    dk_status st = tp_load(&k, name, value, NULL, err, sizeof err);
    CHECK(st == DK_ERR_INVALID_ARGUMENT && strstr(err, name) && strstr(err, want), "%s='%s': status %d, '%s'", name,
          value, (int)st, err);
}

int main(int argc, char **argv) {
    const int dev = argc > 1 && !strcmp(argv[1], "dev");
    dk_knobs k;
    char err[512];
    int i, j, visible = 0;
    if (dev != dk__knobs_dev()) {
        printf("FAIL: built %s DIFKERN_DEV_KNOBS but run as '%s'\n", dk__knobs_dev() ? "with" : "without",
               argc > 1 ? argv[1] : "");
        return 1;
    }
    for (i = 0; i < DK_KNOB_COUNT; i++) unsetenv(dk__knob_info(i)->name);

    for (i = 0; i < DK_KNOB_COUNT; i++) {
        const dk_knob_info *in = dk__knob_info(i);
        CHECK(!strncmp(in->name, "DIFKERN_", 8), "%s lacks the prefix", in->name);
        for (j = 0; j < i; j++) CHECK(strcmp(in->name, dk__knob_info(j)->name), "%s listed twice", in->name);
        CHECK(in->doc[0] && in->def_text[0], "%s: no doc or default text", in->name);
        CHECK(in->accepted ? in->type == DK_KNOB_ENUM || in->type == DK_KNOB_INT : in->type != DK_KNOB_ENUM,
              "%s: accepted list and type disagree", in->name);
        if (in->type == DK_KNOB_BOOL) CHECK(in->def >= -1 && in->def <= 1, "%s: bool default %lld", in->name, (long long)in->def);
        if (in->type == DK_KNOB_ENUM) CHECK(in->def == -1, "%s: enum default must be -1 (unset)", in->name);
        if (in->type == DK_KNOB_INT && !in->accepted)
            CHECK(in->def == -1 || in->def == 0 || (in->def >= in->lo && in->def <= in->hi), "%s: default %lld outside %lld..%lld",
                  in->name, (long long)in->def, (long long)in->lo, (long long)in->hi);
        visible += in->cls != DK_KNOB_BENCHMARK;
    }
    /* the user and diagnostic classes stay short: a new switch for A/B timing is a benchmark one */
    CHECK(visible <= 17, "%d settings outside the benchmark class (at most 17)", visible);
    CHECK(dk__knob_info(-1) == NULL && dk__knob_info(DK_KNOB_COUNT) == NULL, "dk__knob_info out of range");

    CHECK(dk__knobs_load(&k, NULL, err, sizeof err) == DK_OK, "clean load: %s", err);
    for (i = 0; i < DK_KNOB_COUNT; i++) {
        const dk_knob_info *in = dk__knob_info(i);
        if (in->type == DK_KNOB_STRING) CHECK(((const char *)&k + in->offset)[0] == '\0', "%s not empty", in->name);
        else CHECK(tp_num(&k, (dk_knob_id)i) == in->def, "%s default %lld, table %lld", in->name,
                   (long long)tp_num(&k, (dk_knob_id)i), (long long)in->def);
    }
    CHECK(k.vulkan_eager == 1 && k.threads == 0 && k.io_stream_limit == DK_KNOB_GIB4 && k.backend == -1,
          "named fields do not hold the defaults");

    tp_value("DIFKERN_VULKAN_PORTABLE", "1", DK_KNOB_ID_VULKAN_PORTABLE, 1);
    tp_value("DIFKERN_VULKAN_PORTABLE", "yes", DK_KNOB_ID_VULKAN_PORTABLE, 1);
    tp_value("DIFKERN_VULKAN_PORTABLE", "true", DK_KNOB_ID_VULKAN_PORTABLE, 1);
    tp_value("DIFKERN_VULKAN_PORTABLE", "on", DK_KNOB_ID_VULKAN_PORTABLE, 1);
    tp_value("DIFKERN_VAE_SHRINK", "off", DK_KNOB_ID_VAE_SHRINK, 0);
    tp_value("DIFKERN_VAE_SHRINK", "no", DK_KNOB_ID_VAE_SHRINK, 0);
    tp_value("DIFKERN_VAE_SHRINK", "0", DK_KNOB_ID_VAE_SHRINK, 0);
    tp_value("DIFKERN_VAE_SHRINK", "", DK_KNOB_ID_VAE_SHRINK, 1);
    tp_bad("DIFKERN_VAE_SHRINK", "On", "0 or 1");
    tp_value("DIFKERN_THREADS", "1024", DK_KNOB_ID_THREADS, 1024);
    tp_bad("DIFKERN_THREADS", "1025", "1..1024");
    tp_bad("DIFKERN_THREADS", "-1", "1..1024");
    tp_bad("DIFKERN_THREADS", " 4", "1..1024");
    tp_value("DIFKERN_IO_STREAM_LIMIT", "1152921504606846976", DK_KNOB_ID_IO_STREAM_LIMIT, INT64_C(1) << 60);
    tp_bad("DIFKERN_IO_STREAM_LIMIT", "99999999999999999999999", "1..");
    tp_value("DIFKERN_HIP_GN_PLANES", "8", DK_KNOB_ID_HIP_GN_PLANES, 8);
    tp_value("DIFKERN_HIP_GN_PLANES", "0", DK_KNOB_ID_HIP_GN_PLANES, 0);
    tp_bad("DIFKERN_HIP_GN_PLANES", "08", "0 or 8");
    tp_value("DIFKERN_VULKAN_COOPMAT", "nv", DK_KNOB_ID_VULKAN_COOPMAT, 0);
    tp_value("DIFKERN_VULKAN_COOPMAT", "khr", DK_KNOB_ID_VULKAN_COOPMAT, 1);
    tp_bad("DIFKERN_VULKAN_COOPMAT", "kh", "nv or khr");
    tp_value("DIFKERN_BACKEND", "auto", DK_KNOB_ID_BACKEND, 3);
    {
        char longname[DK_KNOB_STRING_MAX + 8];
        memset(longname, 'x', sizeof longname - 1);
        longname[sizeof longname - 1] = '\0';
        tp_bad("DIFKERN_VULKAN_DEVICE", longname, "shorter than");
        CHECK(tp_load(&k, "DIFKERN_VULKAN_DEVICE", "RTX 4090", NULL, err, sizeof err) == DK_OK &&
                  !strcmp(k.vulkan_device, "RTX 4090"),
              "DIFKERN_VULKAN_DEVICE='RTX 4090' gave '%s' (%s)", k.vulkan_device, err);
    }

    /* settings win, and replace the variable wholly */
    CHECK(tp_load(&k, "DIFKERN_THREADS", "3", "DIFKERN_THREADS=5", err, sizeof err) == DK_OK && k.threads == 5,
          "settings over env: %lld (%s)", (long long)k.threads, err);
    CHECK(tp_load(&k, "DIFKERN_THREADS", "bad", "DIFKERN_THREADS=5", err, sizeof err) == DK_OK && k.threads == 5,
          "settings over a bad env value: %lld (%s)", (long long)k.threads, err);
    CHECK(tp_load(&k, NULL, NULL, "DIFKERN_THREADS=5;DIFKERN_THREADS=", err, sizeof err) == DK_OK && k.threads == 0,
          "a later empty entry restores the default: %lld (%s)", (long long)k.threads, err);
    CHECK(tp_load(&k, NULL, NULL, "DIFKERN_THREADS=5;DIFKERN_THREADS=x", err, sizeof err) == DK_ERR_INVALID_ARGUMENT &&
              strstr(err, "dk_context_options.settings"),
          "a bad settings value: '%s'", err);

    /* the benchmark class */
    {
        dk_status st = tp_load(&k, "DIFKERN_HIP_WGMMA", "2", NULL, err, sizeof err);
        CHECK(st == DK_OK && k.hip_wgmma == (dev ? 2 : -1), "env DIFKERN_HIP_WGMMA=2: %lld (%s)", (long long)k.hip_wgmma,
              err);
        st = tp_load(&k, "DIFKERN_HIP_WGMMA", "3", NULL, err, sizeof err);
        CHECK(dev ? st == DK_ERR_INVALID_ARGUMENT : st == DK_OK && k.hip_wgmma == -1, "env DIFKERN_HIP_WGMMA=3: %d (%s)",
              (int)st, err);
        st = tp_load(&k, NULL, NULL, "DIFKERN_VULKAN_CM_TILE=5", err, sizeof err);
        CHECK(dev ? st == DK_OK && k.vulkan_cm_tile == 5 : st == DK_ERR_INVALID_ARGUMENT && strstr(err, "-Ddev_knobs=true"),
              "settings DIFKERN_VULKAN_CM_TILE=5: %d %lld (%s)", (int)st, (long long)k.vulkan_cm_tile, err);
    }

    if (failures) printf("%d check(s) failed\n", failures);
    else printf("knob parser (%s): %d settings, %d outside the benchmark class, all checks passed\n",
                dev ? "dev" : "user", DK_KNOB_COUNT, visible);
    return failures ? 1 : 0;
}
