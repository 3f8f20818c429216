/* Fuzz target: dk_npy_read_f32_memory on arbitrary bytes.  Invariants (a
 * violation aborts): failure leaves *data NULL with a message; success gives
 * 0..DK_MAX_DIMS dims whose element count matches the data the input holds.
 *
 * Built by tests/fuzz/meson.build as a libFuzzer binary (tools/fuzz.sh) and as a
 * regression test with fuzz_main.c over corpus/npy/. */
#include <difkern.h>
#include <difkern/safetensors.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZNPY_REQUIRE(c) do { if (!(c)) { fprintf(stderr, "fuzz_npy: invariant failed: %s\n", #c); abort(); } } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    float *out = (float *)&size;
    int32_t ndim = -1, d;
    int64_t shape[DK_MAX_DIMS];
    uint64_t numel = 1;
    volatile float sink = 0.0f;
    dk_status st = dk_npy_read_f32_memory(data, size, &out, &ndim, shape);
    if (st != DK_OK) {
        FZNPY_REQUIRE(out == NULL);
        FZNPY_REQUIRE(st == DK_ERR_FORMAT || st == DK_ERR_UNSUPPORTED || st == DK_ERR_OUT_OF_MEMORY ||
                      (st == DK_ERR_INVALID_ARGUMENT && size == 0));
        FZNPY_REQUIRE(dk_last_error(NULL)[0] != '\0');
        return 0;
    }
    FZNPY_REQUIRE(out != NULL && ndim >= 0 && ndim <= DK_MAX_DIMS);
    for (d = 0; d < DK_MAX_DIMS; d++) {
        FZNPY_REQUIRE(d < ndim ? shape[d] >= 0 : shape[d] == 1);
        numel *= (uint64_t)shape[d];
    }
    FZNPY_REQUIRE(numel * 2 <= size); /* at least 2 bytes per element were in the input */
    if (numel > 0) sink = out[numel - 1] + out[0]; /* every element was written: ASan/MSan-visible */
    (void)sink;
    dk_npy_free(out);
    return 0;
}
