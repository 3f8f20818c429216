/* GroupNorm planning shared by the GPU backends (declared in plan.h). */
#include "plan.h"

int dk__gn_vector_mode(int aligned, const int64_t shape[4], const int64_t strides[4], int64_t vw,
                       int64_t max_pixel_vectors) {
    const int64_t c = shape[1], h = shape[2], w = shape[3];
    const int64_t nchw[4] = {c * h * w, h * w, w, 1}, nhwc[4] = {h * w * c, 1, w * c, c};
    int nchw_ok = (h * w) % vw == 0, nhwc_ok = c % vw == 0 && c / vw <= max_pixel_vectors, i;
    if (!aligned) return 0;
    for (i = 0; i < 4; i++) {
        if (shape[i] == 1) continue;
        nchw_ok = nchw_ok && strides[i] == nchw[i];
        nhwc_ok = nhwc_ok && strides[i] == nhwc[i];
    }
    return nchw_ok ? 1 : nhwc_ok ? 2 : 0;
}
