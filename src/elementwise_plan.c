/* Elementwise planning shared by the GPU backends (declared in plan.h): which
 * vector path of the walk in y's memory order an operand set can take. */
#include "plan.h"

int dk__elt_dense_walk(const int64_t shape[4], const int64_t s[4], int aligned) {
    int64_t expect = 1;
    int i;
    for (i = 3; i >= 0; i--) {
        if (shape[i] != 1 && s[i] != expect) return 0;
        expect *= shape[i];
    }
    return aligned;
}

int dk__elt_upsample_vec(const int64_t shape[4], const int64_t a_ext[4], const int64_t as[4], const int64_t ys[4],
                         int aligned, int fac[4]) {
    int64_t prod = 1, ak = 1;
    int k;
    for (k = 0; k < 4; k++) {
        ak = a_ext[k];
        if (ak <= 0 || shape[k] % ak != 0) return 0;
        if (fac) fac[k] = (int)(shape[k] / ak);
        prod *= shape[k] / ak;
        if (prod > 64) return 0;
        if (k < 3 && ((ak > 1 && as[k] % 8 != 0) || (shape[k] > 1 && ys[k] % 8 != 0))) return 0;
    }
    return as[3] == 1 && ys[3] == 1 && ak % 8 == 0 && aligned;
}

int dk__elt_transpose16(const int64_t shape[4], const int64_t as[4], const int64_t ys[4], int k, dk_dtype at,
                        dk_dtype yt, int aligned) {
    const int64_t va = at == DK_F32 ? 4 : 8, vy = yt == DK_F32 ? 4 : 8;
    int i;
    if (!aligned || ys[3] != 1 || shape[3] % vy != 0 || shape[k] % va != 0) return 0;
    for (i = 0; i < 4; i++) {
        if (i != k && shape[i] > 1 && as[i] % va != 0) return 0;
        if (i != 3 && shape[i] > 1 && ys[i] % vy != 0) return 0;
    }
    return at == yt && at != DK_F32 ? 1 : 2;
}
