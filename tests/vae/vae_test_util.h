/* Shared by the VAE test programs (test_vae.c, test_vae_kl.c, test_taesd.c): the
 * failure counter and CHECK, the context under test, and the comparisons and
 * .npy reads the oracle checks use. */
#ifndef VAE_TEST_UTIL_H
#define VAE_TEST_UTIL_H

#include <difkern.h>
#include <difkern/safetensors.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../check.h"

static dk_context *ctx;

/* Relative L2 error and max |diff|; non-finite values give +inf. */
static inline double rel_err(const float *x, const float *ref, int64_t n, double *maxd) {
    double num = 0.0, den = 0.0;
    int64_t i;
    *maxd = 0.0;
    for (i = 0; i < n; i++) {
        double d = (double)x[i] - ref[i];
        if (!isfinite(x[i])) return INFINITY;
        num += d * d;
        den += (double)ref[i] * ref[i];
        if (fabs(d) > *maxd) *maxd = fabs(d);
    }
    return sqrt(num / (den > 0 ? den : 1.0));
}

/* dir/name as float32 (exits with a message when it cannot be read). */
static inline float *read_npy(const char *dir, const char *name, int64_t *numel, int64_t shape[DK_MAX_DIMS]) {
    char path[1024];
    float *d = NULL;
    int32_t nd = 0, i;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (dk_npy_read_f32(path, &d, &nd, shape) != DK_OK) {
        printf("cannot read %s: %s\n", path, dk_last_error(NULL));
        exit(1);
    }
    *numel = 1;
    for (i = 0; i < nd; i++) *numel *= shape[i];
    return d;
}

#endif
