/* The failure counter and CHECK of the test programs: a failed check prints
 * its file, line and message and counts; the program exits non-zero at the
 * end when failures > 0. */
#ifndef DK_TEST_CHECK_H
#define DK_TEST_CHECK_H

#include <stdio.h>

static int failures = 0;

#define CHECK(cond, ...)                                \
    do {                                                \
        if (!(cond)) {                                  \
            printf("FAIL %s:%d: ", __FILE__, __LINE__); \
            printf(__VA_ARGS__);                        \
            printf("\n");                               \
            failures++;                                 \
        }                                               \
    } while (0)

#endif
