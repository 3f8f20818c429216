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
#if !defined(__APPLE__)
/* POSIX.1-2008; strict C11 builds hide its declaration (a compatible redeclaration).
 * Outside the header-only build's -O3 region (tools/amalgamate.py): where the
 * includer's _FORTIFY_SOURCE defined realpath inline, GCC rejects a redeclaration
 * under other optimization options. */
#ifdef DK__IMPL_O3
#pragma GCC pop_options
#endif
char *realpath(const char *path, char *resolved);
#ifdef DK__IMPL_O3
#pragma GCC push_options
#pragma GCC optimize("O3")
#endif
#endif
#endif

int dk__io_map_file(const char *path, const unsigned char **data, uint64_t *size) {
#ifdef IOFILE_HAVE_MMAP
    struct stat st;
    void *m;
    int fd;
    dk_knobs k;
    char why[256];
    /* a bad value is reported by dk__io_read_file, which the caller runs next */
    if (!path || dk__knob_env(DK_KNOB_ID_IO_NO_MMAP, &k, why, sizeof why) != DK_OK || k.io_no_mmap) return 0;
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

/* The most bytes read from a file that is not regular (a pipe, a device such
 * as /dev/zero), whose size is unknown: DIFKERN_IO_STREAM_LIMIT (bytes) or
 * 4 GiB.  Regular files are read whole whatever their size.  The readers run
 * without a context, so they read their knobs here, through the same parser;
 * a bad value in either fails the read with its reason. */
static dk_status iofile_knobs(const char *fn, uint64_t *limit) {
    dk_knobs k;
    char why[256];
    if (dk__knob_env(DK_KNOB_ID_IO_NO_MMAP, &k, why, sizeof why) != DK_OK ||
        dk__knob_env(DK_KNOB_ID_IO_STREAM_LIMIT, &k, why, sizeof why) != DK_OK)
        return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "%s: %s", fn, why);
    *limit = (uint64_t)k.io_stream_limit;
    return DK_OK;
}

dk_status dk__io_read_file(const char *fn, const char *path, unsigned char **data, uint64_t *size) {
    FILE *f;
    unsigned char *buf, *grown;
    size_t cap, len = 0, n;
    uint64_t hint = 0, limit = 0;
    int regular = 1;
    dk_status kst;

    *data = NULL;
    *size = 0;
    if (!path) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "%s: path must not be NULL", fn);
    if ((kst = iofile_knobs(fn, &limit)) != DK_OK) return kst;
#ifdef IOFILE_HAVE_MMAP
    {
        /* (stat on the path, not fstat on the stream: fileno is not declared in
         * strict C11 builds.  It only shapes the limit and the messages.) */
        struct stat st;
        if (stat(path, &st) == 0) {
            if (S_ISDIR(st.st_mode))
                return dk__fail(NULL, DK_ERR_IO, "%s: '%.400s' is a directory, not a file", fn, path);
            regular = S_ISREG(st.st_mode);
            if (regular && st.st_size > 0) hint = (uint64_t)st.st_size;
        }
    }
#endif
    f = fopen(path, "rb");
    if (!f) return dk__fail(NULL, DK_ERR_IO, "%s: cannot open '%.400s': %s", fn, path, strerror(errno));
    /* A regular file may still grow while it is read: allow its size plus the
     * stream limit.  Anything else is read up to the limit, never until memory
     * runs out. */
    if (regular && hint > 0 && hint <= UINT64_MAX - limit) limit += hint;
    if (limit > (uint64_t)SIZE_MAX - 1) limit = (uint64_t)SIZE_MAX - 1;
    cap = hint > 0 && hint < limit ? (size_t)hint + 1 : (size_t)1 << 16;
    if (cap > limit + 1) cap = (size_t)limit + 1;
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
        if (len > limit) {
            free(buf);
            fclose(f);
            if (!regular)
                return dk__fail(NULL, DK_ERR_IO,
                                "%s: '%.400s' is not a regular file (a pipe or device) and gave more than %llu bytes, "
                                "the limit for such inputs (DIFKERN_IO_STREAM_LIMIT); give a regular file",
                                fn, path, (unsigned long long)limit);
            return dk__fail(NULL, DK_ERR_IO, "%s: '%.400s' grew past %llu bytes while it was read", fn, path,
                            (unsigned long long)limit);
        }
        /* Full: double, up to one byte past the limit (which tells an input
         * over the limit from one exactly at it). */
        {
            size_t ncap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
            if (ncap > limit + 1) ncap = (size_t)limit + 1;
            grown = (unsigned char *)realloc(buf, ncap);
            if (!grown) free(buf);
            buf = grown;
            cap = ncap;
        }
    }
    if (ferror(f) || len == cap) {
        int err = errno;
        free(buf);
        fclose(f);
        return dk__fail(NULL, DK_ERR_IO, "%s: read error on '%.400s' after %llu bytes: %s", fn, path,
                        (unsigned long long)len, strerror(err));
    }
    fclose(f);
    buf[len] = 0;
    *data = buf;
    *size = len;
    return DK_OK;
}

#ifdef IOFILE_HAVE_MMAP
/* Every byte of the pieces to fd; 0 with errno set on failure. */
static int iofile_write_all(int fd, const dk__io_piece *pieces, int64_t count) {
    int64_t i;
    for (i = 0; i < count; i++) {
        const unsigned char *p = (const unsigned char *)pieces[i].data;
        uint64_t left = pieces[i].size;
        while (left > 0) {
            size_t chunk = left > ((uint64_t)1 << 30) ? (size_t)1 << 30 : (size_t)left;
            ssize_t n = write(fd, p, chunk);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                if (n == 0) errno = EIO;
                return 0;
            }
            p += n;
            left -= (uint64_t)n;
        }
    }
    return 1;
}
#endif

dk_status dk__io_write_file(const char *fn, const char *path, const dk__io_piece *pieces, int64_t count) {
#ifdef IOFILE_HAVE_MMAP
    struct stat st;
    char *target = NULL, *tmp = NULL;
    const char *slash;
    size_t dirlen, tmpcap;
    int fd = -1, attempt, exists, err;
    const char *step;
    if (!path || !path[0]) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "%s: path must be a non-empty string", fn);
    exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode))
        return dk__fail(NULL, DK_ERR_IO, "%s: '%.400s' is a directory", fn, path);
    if (exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
        /* A device or a pipe cannot be replaced by a rename: written in place. */
        fd = open(path, O_WRONLY);
        if (fd < 0) return dk__fail(NULL, DK_ERR_IO, "%s: cannot open '%.400s': %s", fn, path, strerror(errno));
        if (!iofile_write_all(fd, pieces, count)) {
            err = errno;
            close(fd);
            return dk__fail(NULL, DK_ERR_IO, "%s: write error on '%.400s': %s", fn, path, strerror(err));
        }
        if (close(fd) != 0)
            return dk__fail(NULL, DK_ERR_IO, "%s: write error on '%.400s' (close): %s", fn, path, strerror(errno));
        return DK_OK;
    }
    if (exists && !S_ISREG(st.st_mode))
        return dk__fail(NULL, DK_ERR_IO, "%s: '%.400s' exists and is not a regular file, a device or a FIFO", fn, path);
    /* Through a symbolic link: replace the file it points to, keep the link. */
    if (exists) target = realpath(path, NULL);
    if (!target) {
        size_t n = strlen(path) + 1;
        target = (char *)malloc(n);
        if (!target) return dk__fail(NULL, DK_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
        memcpy(target, path, n);
    }
    slash = strrchr(target, '/');
    dirlen = slash ? (size_t)(slash - target) + 1 : 0;
    tmpcap = strlen(target) + 64;
    tmp = (char *)malloc(tmpcap);
    if (!tmp) {
        free(target);
        return dk__fail(NULL, DK_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    }
    /* ".<name>.tmp-<pid>-<n>" beside the target: the same file system, so the
     * rename is atomic; O_EXCL never reuses another writer's file. */
    for (attempt = 0; attempt < 1000 && fd < 0; attempt++) {
        snprintf(tmp, tmpcap, "%.*s.%s.tmp-%ld-%d", (int)dirlen, target, target + dirlen, (long)getpid(), attempt);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        err = errno;
        dk__fail(NULL, DK_ERR_IO, "%s: cannot create a temporary file beside '%.400s': %s", fn, target, strerror(err));
        free(tmp);
        free(target);
        return DK_ERR_IO;
    }
    if (exists) (void)chmod(tmp, st.st_mode & 07777); /* the replaced file's permissions */
    step = "write";
    err = 0;
    if (!iofile_write_all(fd, pieces, count)) err = errno;
    if (!err && fsync(fd) != 0) err = errno, step = "fsync";
    if (close(fd) != 0 && !err) err = errno, step = "close";
    if (!err && rename(tmp, target) != 0) err = errno, step = "rename";
    if (err) {
        remove(tmp);
        dk__fail(NULL, DK_ERR_IO, "%s: cannot write '%.400s' (%s failed: %s); %s", fn, path, step, strerror(err),
                 exists ? "the existing file is unchanged" : "nothing was written");
    }
    free(tmp);
    free(target);
    return err ? DK_ERR_IO : DK_OK;
#else
    /* Without POSIX: a temporary file beside path, renamed over it. */
    char *tmp;
    FILE *f;
    int64_t i;
    int ok;
    size_t n;
    if (!path || !path[0]) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "%s: path must be a non-empty string", fn);
    n = strlen(path) + 8;
    tmp = (char *)malloc(n);
    if (!tmp) return dk__fail(NULL, DK_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    snprintf(tmp, n, "%s.tmp", path);
    f = fopen(tmp, "wb");
    if (!f) {
        dk__fail(NULL, DK_ERR_IO, "%s: cannot create '%.400s': %s", fn, tmp, strerror(errno));
        free(tmp);
        return DK_ERR_IO;
    }
    ok = 1;
    for (i = 0; ok && i < count; i++)
        if (pieces[i].size > 0) ok = fwrite(pieces[i].data, 1, (size_t)pieces[i].size, f) == (size_t)pieces[i].size;
    ok = (fclose(f) == 0) && ok;
    /* (Where rename does not replace an existing file this fails and leaves
     * the old file: never removed first.) */
    if (ok) ok = rename(tmp, path) == 0;
    if (!ok) {
        remove(tmp);
        dk__fail(NULL, DK_ERR_IO, "%s: cannot write '%.400s': %s", fn, path, strerror(errno));
    }
    free(tmp);
    return ok ? DK_OK : DK_ERR_IO;
#endif
}

#undef IOFILE_HAVE_MMAP
