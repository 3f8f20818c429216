/* Shared by the per-backend API tests (test_host_memory.c, test_scratch.c):
 * a check that prints its line and message and counts the failure, and the
 * context of the backend named by argv[1] (cpu, vulkan, hip). */
#ifndef DK_BACKEND_TEST_H
#define DK_BACKEND_TEST_H

#include <difkern.h>

#include <stdio.h>
#include <string.h>

static int bt_failures;
#define BT_CHECK(cond, ...)                     \
    do {                                        \
        if (!(cond)) {                          \
            printf("FAIL line %d: ", __LINE__); \
            printf(__VA_ARGS__);                \
            printf("\n");                       \
            bt_failures++;                      \
        }                                       \
    } while (0)

/* 0 with *ctx on the named backend; 77 (meson: skipped) when the machine lacks
 * it; 1 on any other failure. */
static int bt_context(int argc, char **argv, dk_context_options *opt, dk_context **ctx, const char **name) {
    dk_status st;
    *name = argc > 1 ? argv[1] : "cpu";
    dk_context_options_init(opt);
    opt->backend = !strcmp(*name, "vulkan") ? DK_BACKEND_VULKAN : !strcmp(*name, "hip") ? DK_BACKEND_HIP : DK_BACKEND_CPU;
    st = dk_context_create(opt, ctx);
    if (st == DK_ERR_BACKEND_UNAVAILABLE) {
        printf("SKIP: %s backend: %s\n", *name, dk_last_error(NULL));
        return 77;
    }
    if (st != DK_OK) {
        printf("FAIL: dk_context_create(%s): %s\n", *name, dk_last_error(NULL));
        return 1;
    }
    return 0;
}

#endif
