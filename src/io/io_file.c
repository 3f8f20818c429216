/* Whole files into memory: read-only mmap where POSIX has it, fread anywhere.
 * The POSIX declarations used here (open, fstat, mmap) need no feature macros in
 * glibc, musl or macOS, which matters because this file is also amalgamated into
 * the header-only build where such macros cannot be set. */
#include "io_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define IOFILE_HAVE_MMAP 1
#endif

int dk__io_map_file(const char *path, const unsigned char **data, uint64_t *size) {
#ifdef IOFILE_HAVE_MMAP
    struct stat st;
    void *m;
    int fd;
    const char *off = getenv("DIFKERN_IO_NO_MMAP");
    if (!path || (off && off[0] && strcmp(off, "0") != 0)) return 0;
    fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    /* Only non-empty regular files; anything else takes the fread path and its messages. */
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 || (uint64_t)st.st_size > (uint64_t)SIZE_MAX) {
        close(fd);
        return 0;
    }
    m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return 0;
    *data = (const unsigned char *)m;
    *size = (uint64_t)st.st_size;
    return 1;
#else
    (void)path;
    (void)data;
    (void)size;
    return 0;
#endif
}

void dk__io_unmap_file(const unsigned char *data, uint64_t size) {
#ifdef IOFILE_HAVE_MMAP
    if (data) munmap((void *)(uintptr_t)data, (size_t)size);
#else
    (void)data;
    (void)size;
#endif
}

/* File size by seeking, as a first allocation size; 0 when unknown. */
static uint64_t iofile_size_hint(FILE *f) {
    long n;
    if (fseek(f, 0, SEEK_END) != 0) return 0;
    n = ftell(f);
    if (fseek(f, 0, SEEK_SET) != 0) return 0;
    return n > 0 ? (uint64_t)n : 0;
}

dk_status dk__io_read_file(const char *fn, const char *path, unsigned char **data, uint64_t *size) {
    FILE *f;
    unsigned char *buf, *grown;
    size_t cap = (size_t)1 << 16, len = 0, n;
    uint64_t hint;

    *data = NULL;
    *size = 0;
    if (!path) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "%s: path must not be NULL", fn);
    f = fopen(path, "rb");
    if (!f) return dk__fail(NULL, DK_ERR_IO, "%s: cannot open '%.400s': %s", fn, path, strerror(errno));
    hint = iofile_size_hint(f);
    buf = (unsigned char *)malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            return dk__fail(NULL, DK_ERR_OUT_OF_MEMORY, "%s: '%.400s': cannot allocate %llu bytes", fn, path,
                            (unsigned long long)cap);
        }
        n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0 || len < cap) break; /* EOF or error (checked below) */
        /* Full: grow to the size hint once the first block was readable (a
         * directory's bogus size never gets here), else double. */
        {
            size_t ncap = (hint >= cap && hint < (uint64_t)SIZE_MAX - 1) ? (size_t)hint + 1
                          : cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
            if (ncap == cap) break;
            grown = (unsigned char *)realloc(buf, ncap);
            if (!grown) free(buf);
            buf = grown;
            cap = ncap;
        }
    }
    if (ferror(f) || len == cap) {
        free(buf);
        fclose(f);
        return dk__fail(NULL, DK_ERR_IO, "%s: read error on '%.400s' after %llu bytes", fn, path,
                        (unsigned long long)len);
    }
    fclose(f);
    buf[len] = 0;
    *data = buf;
    *size = len;
    return DK_OK;
}

#undef IOFILE_HAVE_MMAP
