/* Tiny check helpers shared by the reader tests. */
#ifndef READERS_TEST_H
#define READERS_TEST_H

#include <difkern.h>
#include <difkern/safetensors.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

extern int rt_failures;
extern int rt_checks;
extern const char *rt_dir; /* where tests may write files */

#define RT_CHECK(cond, ...)                                                   \
    do {                                                                      \
        rt_checks++;                                                          \
        if (!(cond)) {                                                        \
            rt_failures++;                                                    \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);              \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, "\n");                                            \
        }                                                                     \
    } while (0)

/* st == want and dk_last_error(NULL) contains msg (NULL: any non-empty message
 * when want != DK_OK).  label names the case in failures. */
void rt_expect(const char *label, dk_status st, dk_status want, const char *msg);

uint32_t rt_rand(void); /* xorshift, seeded in main (seed printed) */
float rt_randf(void);   /* uniform in [-2, 2) */

void test_safetensors(void);
void test_safetensors_hostile(void);
void test_npy(void);
void test_reliability(void); /* atomic writes, bounded reads, > 8 dims */

#endif
