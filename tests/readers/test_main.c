/* Reader tests: safetensors round trips and hostile files, .npy valid and invalid.
 * Usage: test_readers <scratch dir> [seed] */
#include "readers_test.h"

#include <stdlib.h>
#include <time.h>

int rt_failures = 0;
int rt_checks = 0;
const char *rt_dir = ".";
static uint32_t rt_state = 1;

uint32_t rt_rand(void) {
    rt_state ^= rt_state << 13;
    rt_state ^= rt_state >> 17;
    rt_state ^= rt_state << 5;
    return rt_state;
}

float rt_randf(void) { return (float)(rt_rand() >> 8) / (float)(1u << 24) * 4.0f - 2.0f; }

void rt_expect(const char *label, dk_status st, dk_status want, const char *msg) {
    const char *err = dk_last_error(NULL);
    rt_checks++;
    if (st != want) {
        rt_failures++;
        fprintf(stderr, "FAIL [%s]: status %s, want %s (message: %s)\n", label, dk_status_name(st),
                dk_status_name(want), err);
        return;
    }
    if (want != DK_OK && (!err[0] || (msg && !strstr(err, msg)))) {
        rt_failures++;
        fprintf(stderr, "FAIL [%s]: message \"%s\" lacks \"%s\"\n", label, err, msg ? msg : "(anything)");
    }
}

int main(int argc, char **argv) {
    uint32_t seed = (uint32_t)time(NULL);
    if (argc > 1) rt_dir = argv[1];
    if (argc > 2) seed = (uint32_t)strtoul(argv[2], NULL, 10);
    rt_state = seed ? seed : 1;
    printf("test_readers: seed %u, scratch dir %s\n", seed, rt_dir);
    test_safetensors();
    test_safetensors_hostile();
    test_npy();
    test_reliability();
    printf("test_readers: %d checks, %d failures\n", rt_checks, rt_failures);
    return rt_failures ? 1 : 0;
}
