/* Fuzz target: dk_safetensors_open_memory and every accessor on arbitrary bytes.
 * Invariants (a violation aborts): failure leaves *out NULL with a message;
 * success yields entries whose data lie inside the input, names that find()
 * returns again, and F32/F16/BF16 tensors that convert.
 *
 * Built by tests/fuzz/meson.build as a libFuzzer binary (tools/fuzz.sh) and as a
 * regression test with fuzz_main.c over corpus/safetensors/. */
#include <difkern.h>
#include <difkern/safetensors.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZST_REQUIRE(c) do { if (!(c)) { fprintf(stderr, "fuzz_safetensors: invariant failed: %s\n", #c); abort(); } } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    dk_safetensors *f = (dk_safetensors *)&size;
    dk_st_tensor t, u;
    int64_t i, n;
    dk_status st = dk_safetensors_open_memory(data, size, &f);
    if (st != DK_OK) {
        FZST_REQUIRE(f == NULL);
        FZST_REQUIRE(st == DK_ERR_FORMAT || st == DK_ERR_OUT_OF_MEMORY);
        FZST_REQUIRE(dk_last_error(NULL)[0] != '\0');
        return 0;
    }
    n = dk_safetensors_count(f);
    FZST_REQUIRE(n >= 0);
    for (i = 0; i < n; i++) {
        st = dk_safetensors_at(f, i, &t);
        FZST_REQUIRE(st == DK_OK || st == DK_ERR_UNSUPPORTED);
        FZST_REQUIRE(t.name != NULL && t.dtype_name != NULL);
        FZST_REQUIRE((const uint8_t *)t.data >= data && t.nbytes <= size &&
                     (size_t)((const uint8_t *)t.data - data) <= size - (size_t)t.nbytes);
        FZST_REQUIRE(dk_safetensors_find(f, t.name, &u) == st && u.data == t.data && u.nbytes == t.nbytes);
        if (st == DK_OK) {
            uint64_t numel = t.nbytes / dk_dtype_size(t.dtype), e = 1;
            int32_t d;
            float *dst;
            FZST_REQUIRE(t.ndim >= 0 && t.ndim <= DK_ST_MAX_DIMS);
            for (d = 0; d < t.ndim; d++) e *= (uint64_t)t.shape[d]; /* no overflow: the reader checked */
            FZST_REQUIRE(e == numel && numel * dk_dtype_size(t.dtype) == t.nbytes);
            if (numel <= ((uint64_t)1 << 20)) {
                dst = (float *)malloc((size_t)numel * 4 + 4);
                FZST_REQUIRE(dst != NULL);
                FZST_REQUIRE(dk_st_tensor_copy(&t, DK_F32, dst, numel * 4) == DK_OK);
                FZST_REQUIRE(dk_st_tensor_copy(&t, DK_BF16, dst, numel * 2) == DK_OK);
                free(dst);
            }
        }
    }
    FZST_REQUIRE(dk_safetensors_at(f, n, &t) == DK_ERR_INVALID_ARGUMENT);
    (void)dk_safetensors_metadata(f, "format");
    dk_safetensors_close(f);
    return 0;
}
