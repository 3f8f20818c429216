/* The settings (src/knobs.h) through the public API, on CPU contexts:
 *   - defaults: no DIFKERN_* set, a context comes up with every core;
 *   - DIFKERN_THREADS from the environment, and dk_context_options.settings
 *     winning over it (the thread count shows in dk_context_describe);
 *   - DIFKERN_BACKEND through settings picks the backend under AUTO; a
 *     variable that settings name is not read from the environment at all;
 *   - bad values, in the environment or in settings, of every type (int, bool,
 *     enum, a listed integer), unknown names and entries without '=' fail
 *     dk_context_create with DK_ERR_INVALID_ARGUMENT naming the variable and
 *     what it accepts, also for a backend the context does not use;
 *   - benchmark settings: argv[1] "dev" (built with -Ddev_knobs=true) or "user";
 *     without dev_knobs a bad value in the environment is not read and one in
 *     settings is refused, with dev_knobs both are checked;
 *   - dk_setting_value: the values a context runs with, and the environment's;
 *   - the file readers (no context) refuse a bad DIFKERN_IO_STREAM_LIMIT.
 * The test clears every DIFKERN_* variable it sets. */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv, environ */

#include <difkern.h>
#include <difkern/safetensors.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

extern char **environ; /* POSIX */

/* Start from no DIFKERN_* variable: the checks below name their own. */
static void tk_clear_env(void) {
    char name[256];
    int again = 1;
    while (again) {
        char **e;
        again = 0;
        for (e = environ; *e; e++) {
            size_t n = strcspn(*e, "=");
            if (strncmp(*e, "DIFKERN_", 8) != 0 || n >= sizeof name) continue;
            memcpy(name, *e, n);
            name[n] = '\0';
            unsetenv(name);
            again = 1; /* environ changed under the walk */
            break;
        }
    }
}


/* dk_context_create on the CPU backend with settings (NULL: none); the
 * context's description in desc ("" on failure). */
static dk_status tk_create(dk_backend_kind kind, const char *settings, char *desc, size_t cap) {
    dk_context_options o;
    dk_context *ctx = NULL;
    dk_status st;
    dk_context_options_init(&o);
    o.backend = kind;
    o.settings = settings;
    st = dk_context_create(&o, &ctx);
    desc[0] = '\0';
    if (st == DK_OK) {
        snprintf(desc, cap, "%s [%s]", dk_context_describe(ctx), dk_backend_name(dk_context_backend(ctx)));
        dk_context_destroy(ctx);
    }
    return st;
}

/* A context with env NAME=VALUE (env NULL: unset) and settings fails with
 * DK_ERR_INVALID_ARGUMENT and a message holding each of want1, want2. */
static void tk_expect_bad(const char *what, const char *name, const char *value, const char *settings,
                          const char *want1, const char *want2) {
    char desc[512];
    dk_status st;
    if (name) setenv(name, value, 1);
    st = tk_create(DK_BACKEND_CPU, settings, desc, sizeof desc);
    if (name) unsetenv(name);
    CHECK(st == DK_ERR_INVALID_ARGUMENT, "%s: got %s (%s)", what, dk_status_name(st), desc);
    CHECK(strstr(dk_last_error(NULL), want1) && (!want2 || strstr(dk_last_error(NULL), want2)),
          "%s: message '%s' lacks '%s' / '%s'", what, dk_last_error(NULL), want1, want2 ? want2 : "");
    printf("  %-44s -> %s\n", what, dk_last_error(NULL));
}

static void tk_expect_ok(const char *what, const char *name, const char *value, const char *settings,
                         const char *want) {
    char desc[512];
    dk_status st;
    if (name) setenv(name, value, 1);
    st = tk_create(DK_BACKEND_CPU, settings, desc, sizeof desc);
    if (name) unsetenv(name);
    CHECK(st == DK_OK, "%s: got %s (%s)", what, dk_status_name(st), dk_last_error(NULL));
    CHECK(!want || strstr(desc, want), "%s: '%s' lacks '%s'", what, desc, want ? want : "");
    printf("  %-44s -> %s\n", what, desc);
}

int main(int argc, char **argv) {
    char desc[512];
    int dev = argc > 1 && !strcmp(argv[1], "dev");
    dk_context_options o;
    float *data = NULL;
    int32_t ndim = 0;
    int64_t shape[DK_MAX_DIMS];
    if (argc != 2 || (strcmp(argv[1], "dev") && strcmp(argv[1], "user"))) {
        fprintf(stderr, "usage: test_knobs dev|user (whether the build has -Ddev_knobs=true)\n");
        return 2;
    }
    tk_clear_env();
    dk_context_options_init(&o);
    CHECK(o.settings == NULL, "dk_context_options_init leaves settings %p", (const void *)o.settings);

    printf("defaults, environment, settings:\n");
    tk_expect_ok("no settings", NULL, NULL, NULL, "[cpu]");
    tk_expect_ok("empty settings", NULL, NULL, "", "[cpu]");
    tk_expect_ok("DIFKERN_THREADS=3 (env)", "DIFKERN_THREADS", "3", NULL, "3 threads");
    tk_expect_ok("env 3, settings 5: settings win", "DIFKERN_THREADS", "3", "DIFKERN_THREADS=5", "5 threads");
    tk_expect_ok("settings with blanks and empty entries", NULL, NULL, " ; DIFKERN_THREADS = 7 ;; ", "7 threads");
    tk_expect_ok("empty value: the default", "DIFKERN_THREADS", "", NULL, "[cpu]");
    tk_expect_ok("settings '' override a bad env value", "DIFKERN_THREADS", "0", "DIFKERN_THREADS=;DIFKERN_THREADS=6", "6 threads");
    tk_expect_ok("bool words", NULL, NULL, "DIFKERN_VULKAN_PORTABLE=yes;DIFKERN_IO_NO_MMAP=off", "[cpu]");
    {
        dk_status st = tk_create(DK_BACKEND_AUTO, "DIFKERN_BACKEND=cpu", desc, sizeof desc);
        CHECK(st == DK_OK && strstr(desc, "[cpu]"), "AUTO with DIFKERN_BACKEND=cpu in settings: %s (%s)",
              dk_status_name(st), desc);
        setenv("DIFKERN_BACKEND", "no-such-backend", 1);
        st = tk_create(DK_BACKEND_AUTO, "DIFKERN_BACKEND=cpu", desc, sizeof desc);
        unsetenv("DIFKERN_BACKEND");
        CHECK(st == DK_OK && strstr(desc, "[cpu]"), "settings replace a bad env DIFKERN_BACKEND: %s (%s)",
              dk_status_name(st), dk_last_error(NULL));
    }

    printf("bad values and names:\n");
    tk_expect_bad("DIFKERN_THREADS=0 (env)", "DIFKERN_THREADS", "0", NULL, "DIFKERN_THREADS='0'", "1..1024");
    tk_expect_bad("DIFKERN_THREADS=4x (settings)", NULL, NULL, "DIFKERN_THREADS=4x", "DIFKERN_THREADS='4x'",
                  "dk_context_options.settings");
    tk_expect_bad("DIFKERN_BACKEND=gpu", "DIFKERN_BACKEND", "gpu", NULL, "DIFKERN_BACKEND='gpu'",
                  "cpu, vulkan, hip or auto");
    tk_expect_bad("DIFKERN_VULKAN_COOPMAT=amd on a CPU context", "DIFKERN_VULKAN_COOPMAT", "amd", NULL,
                  "DIFKERN_VULKAN_COOPMAT", "nv or khr");
    tk_expect_bad("DIFKERN_VULKAN_VALIDATION=2", "DIFKERN_VULKAN_VALIDATION", "2", NULL, "DIFKERN_VULKAN_VALIDATION",
                  "0 or 1");
    tk_expect_bad("DIFKERN_HIP_RUNTIME=rocm", "DIFKERN_HIP_RUNTIME", "rocm", NULL, "DIFKERN_HIP_RUNTIME",
                  "hip or cuda");
    tk_expect_bad("DIFKERN_HIP_GN_PLANES=4", "DIFKERN_HIP_GN_PLANES", "4", NULL, "DIFKERN_HIP_GN_PLANES", "0 or 8");
    tk_expect_bad("DIFKERN_IO_STREAM_LIMIT=0", "DIFKERN_IO_STREAM_LIMIT", "0", NULL, "DIFKERN_IO_STREAM_LIMIT",
                  "1..");
    tk_expect_bad("unknown name", NULL, NULL, "DIFKERN_THREAD=2", "unknown setting 'DIFKERN_THREAD'", NULL);
    tk_expect_bad("entry without '='", NULL, NULL, "DIFKERN_THREADS", "not NAME=VALUE", NULL);

    printf("benchmark settings (%s build):\n", dev ? "dev_knobs" : "default");
    if (dev) {
        tk_expect_bad("DIFKERN_VULKAN_CM_TILE=3 (env)", "DIFKERN_VULKAN_CM_TILE", "3", NULL, "DIFKERN_VULKAN_CM_TILE",
                      "0, 4, 5 or 6");
        tk_expect_ok("DIFKERN_HIP_WGMMA=2 (settings)", NULL, NULL, "DIFKERN_HIP_WGMMA=2", "[cpu]");
    } else {
        tk_expect_ok("DIFKERN_VULKAN_CM_TILE=3 (env): not read", "DIFKERN_VULKAN_CM_TILE", "3", NULL, "[cpu]");
        tk_expect_bad("DIFKERN_HIP_WGMMA=2 (settings)", NULL, NULL, "DIFKERN_HIP_WGMMA=2", "DIFKERN_HIP_WGMMA",
                      "-Ddev_knobs=true");
    }

    printf("dk_setting_value:\n");
    {
        dk_context_options so;
        dk_context *ctx = NULL;
        char v[64], tiny[2];
        dk_status st;
        setenv("DIFKERN_VULKAN_COOPMAT", "khr", 1);
        setenv("DIFKERN_THREADS", "3", 1);
        dk_context_options_init(&so);
        so.backend = DK_BACKEND_CPU;
        so.settings = "DIFKERN_VULKAN_COOPMAT=nv;DIFKERN_VULKAN_PORTABLE=yes";
        st = dk_context_create(&so, &ctx);
        CHECK(st == DK_OK, "context for dk_setting_value: %s", dk_last_error(NULL));
        if (ctx) {
            struct { const char *name, *want; } ctx_cases[] = {
                {"DIFKERN_VULKAN_COOPMAT", "nv"},  /* settings win over the environment */
                {"DIFKERN_VULKAN_PORTABLE", "1"},  /* a boolean word as 0/1 */
                {"DIFKERN_THREADS", "3"},          /* from the environment */
                {"DIFKERN_HIP_RUNTIME", ""},       /* unset: the library decides */
                {"DIFKERN_HIP_DEVICE", ""},
                {"DIFKERN_VULKAN_DEVICE", ""},
                {"DIFKERN_VAE_SHRINK", "1"},       /* a default */
            };
            size_t i;
            for (i = 0; i < sizeof ctx_cases / sizeof ctx_cases[0]; i++) {
                strcpy(v, "poison");
                st = dk_setting_value(ctx, ctx_cases[i].name, v, sizeof v);
                CHECK(st == DK_OK && strcmp(v, ctx_cases[i].want) == 0, "dk_setting_value(ctx, %s) = %s '%s', want '%s'",
                      ctx_cases[i].name, dk_status_name(st), v, ctx_cases[i].want);
            }
            st = dk_setting_value(ctx, "DIFKERN_NOPE", v, sizeof v);
            CHECK(st == DK_ERR_INVALID_ARGUMENT && v[0] == '\0' && strstr(dk_last_error(ctx), "DIFKERN_NOPE"),
                  "unknown name: %s (%s)", dk_status_name(st), dk_last_error(ctx));
            st = dk_setting_value(ctx, "DIFKERN_VULKAN_COOPMAT", tiny, sizeof tiny);
            CHECK(st == DK_ERR_INVALID_ARGUMENT && tiny[0] == '\0', "value over cap: %s", dk_status_name(st));
            dk_context_destroy(ctx);
        }
        strcpy(v, "poison");
        st = dk_setting_value(NULL, "DIFKERN_VULKAN_COOPMAT", v, sizeof v);
        CHECK(st == DK_OK && strcmp(v, "khr") == 0, "dk_setting_value(NULL, COOPMAT) = %s '%s'", dk_status_name(st), v);
        st = dk_setting_value(NULL, "DIFKERN_THREADS", NULL, 8);
        CHECK(st == DK_ERR_INVALID_ARGUMENT, "NULL value buffer: %s", dk_status_name(st));
        setenv("DIFKERN_THREADS", "0", 1);
        st = dk_setting_value(NULL, "DIFKERN_VULKAN_COOPMAT", v, sizeof v);
        CHECK(st == DK_ERR_INVALID_ARGUMENT && strstr(dk_last_error(NULL), "DIFKERN_THREADS='0'"),
              "bad environment value: %s (%s)", dk_status_name(st), dk_last_error(NULL));
        printf("  %-44s -> %s\n", "bad DIFKERN_THREADS in the environment", dk_last_error(NULL));
        unsetenv("DIFKERN_VULKAN_COOPMAT");
        unsetenv("DIFKERN_THREADS");
    }

    printf("file readers:\n");
    setenv("DIFKERN_IO_STREAM_LIMIT", "lots", 1);
    {
        dk_status st = dk_npy_read_f32("/dev/null", &data, &ndim, shape);
        CHECK(st == DK_ERR_INVALID_ARGUMENT && strstr(dk_last_error(NULL), "DIFKERN_IO_STREAM_LIMIT='lots'"),
              "npy read with DIFKERN_IO_STREAM_LIMIT=lots: %s (%s)", dk_status_name(st), dk_last_error(NULL));
        printf("  %-44s -> %s\n", "dk_npy_read_f32, DIFKERN_IO_STREAM_LIMIT=lots", dk_last_error(NULL));
    }
    unsetenv("DIFKERN_IO_STREAM_LIMIT");
    free(data);

    if (failures) printf("%d check(s) failed\n", failures);
    else printf("all knob checks passed\n");
    return failures ? 1 : 0;
}
