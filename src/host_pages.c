/* Large host blocks that a GPU runtime is about to pin (dk_host_alloc on the
 * HIP backend): allocated 2 MiB-aligned, marked for transparent huge pages on
 * Linux, and faulted in by several threads before the runtime registers them:
 * the runtime's own pinned allocation faults and registers 4 KiB pages one
 * thread at a time, which made a large banded VAE decode's first call
 * (several GiB pinned) spend most of its time allocating; huge pages cut the
 * registration and the freeing, the threads the faulting.
 *
 * Only C11 and POSIX functions (this file is also amalgamated into the
 * header-only build, where feature macros cannot be set, so posix_madvise is
 * declared here); it passes Linux's MADV_HUGEPAGE (14) on to madvise in glibc
 * and musl. */
#include "dk_internal.h"

#include <stdlib.h>
#include <threads.h>

#if defined(__linux__)
/* POSIX declares it (sys/mman.h hides it under strict C11 without feature macros) */
int posix_madvise(void *addr, size_t len, int advice);
#define HOSTPG_MADV_HUGEPAGE 14
#endif

#define HOSTPG_ALIGN ((size_t)2 << 20)
#define HOSTPG_THREADS 8

typedef struct hostpg_part {
    volatile unsigned char *p;
    size_t n;
} hostpg_part;

static int hostpg_touch(void *arg) {
    hostpg_part *part = (hostpg_part *)arg;
    size_t i;
    for (i = 0; i < part->n; i += 4096) part->p[i] = 0;
    return 0;
}

void *dk__host_pages_alloc(uint64_t size) {
    size_t n = (size_t)((size + HOSTPG_ALIGN - 1) / HOSTPG_ALIGN * HOSTPG_ALIGN), chunk;
    unsigned char *p;
    thrd_t th[HOSTPG_THREADS];
    hostpg_part parts[HOSTPG_THREADS];
    int started[HOSTPG_THREADS], i, k = HOSTPG_THREADS;
    if (size == 0 || size > (uint64_t)SIZE_MAX - HOSTPG_ALIGN) return NULL;
    p = (unsigned char *)aligned_alloc(HOSTPG_ALIGN, n);
    if (!p) return NULL;
#if defined(__linux__)
    (void)posix_madvise(p, n, HOSTPG_MADV_HUGEPAGE); /* advice only: no error if refused */
#endif
    /* fault the pages in from several threads (one thread: 2.5x slower) */
    if (n < ((size_t)64 << 20)) k = 1;
    chunk = (n / (size_t)k + 4095) / 4096 * 4096;
    for (i = 0; i < k; i++) {
        size_t a = chunk * (size_t)i;
        parts[i].p = p + (a < n ? a : n);
        parts[i].n = a < n ? (n - a < chunk ? n - a : chunk) : 0;
        started[i] = i > 0 && thrd_create(&th[i], hostpg_touch, &parts[i]) == thrd_success;
    }
    for (i = 0; i < k; i++)
        if (!started[i]) hostpg_touch(&parts[i]);
    for (i = 1; i < k; i++)
        if (started[i]) thrd_join(th[i], NULL);
    return p;
}

void dk__host_pages_free(void *p) { free(p); }

#undef HOSTPG_MADV_HUGEPAGE
#undef HOSTPG_ALIGN
#undef HOSTPG_THREADS
