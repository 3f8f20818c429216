/* Second translation unit of the consumer (see consumer.c): declarations only.
 * Uses the header's inline helpers too, so their definitions must not clash. */
#include <difkern.h>

const char *consumer_tu2_version(void);

const char *consumer_tu2_version(void) {
    dk_tensor t = dk_tensor_nchw(NULL, 0, DK_F16, 1, 2, 3, 4);
    return dk_tensor_numel(&t) == 24 && dk_dtype_size(t.dtype) == 2 ? dk_version_string() : "mismatch";
}
