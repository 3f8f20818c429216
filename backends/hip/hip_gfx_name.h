/* The gfx name ("gfx90a") in a hipDeviceProp_t of any ROCm version, shared by
 * the HIP backend and difkern-doctor's runtime probe.
 *
 * Its gcnArchName field ("gfx90a:sramecc+:xnack-") is the only "gfx" string
 * that starts a field of the struct, so a scan of the raw bytes avoids
 * depending on the struct's layout, which changed between ROCm versions. */
#ifndef DK_HIP_GFX_NAME_H
#define DK_HIP_GFX_NAME_H

#include <stddef.h>
#include <string.h>

/* 1 and the name in out (at most cap - 1 characters), or 0. */
static inline int dk_hip_scan_gfx(const unsigned char *p, size_t n, char *out, size_t cap) {
    size_t i, j;
    for (i = 0; i + 4 < n; i++) {
        if (p[i] != 'g' || p[i + 1] != 'f' || p[i + 2] != 'x' || (i > 0 && p[i - 1] != 0)) continue;
        for (j = i + 3; j < n && j - i + 1 < cap; j++) {
            unsigned char c = p[j];
            if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) break;
        }
        if (j == i + 3 || j >= n || (p[j] != 0 && p[j] != ':')) continue;
        memcpy(out, p + i, j - i);
        out[j - i] = '\0';
        return 1;
    }
    return 0;
}

#endif
