/* sdxl_decode's output files: checked, atomic writes and the checks of an
 * output path made before any decoding (see file_write.h). */
#define _XOPEN_SOURCE 700 /* POSIX.1-2008 with XSI: realpath, fchmod */

#include "file_write.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *sdxl_prog = "sdxl_decode";

void sdxl_err(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: ", sdxl_prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

/* All n bytes to fd; 0 with errno set on failure. */
static int fw_write_all(int fd, const unsigned char *p, size_t n) {
    while (n > 0) {
        ssize_t k = write(fd, p, n > ((size_t)1 << 30) ? (size_t)1 << 30 : n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            if (k == 0) errno = EIO;
            return 0;
        }
        p += k;
        n -= (size_t)k;
    }
    return 1;
}

int sdxl_write_file(const char *path, const void *data, size_t n) {
    struct stat st;
    char *target = NULL, *tmp = NULL;
    const char *slash, *step = "write";
    size_t dirlen, cap;
    int fd = -1, attempt, exists, err = 0;
    exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) {
        sdxl_err("cannot write %s: it is a directory\n", path);
        return 0;
    }
    if (exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
        /* A device (/dev/null, /dev/full) or a pipe: written in place, checked. */
        fd = open(path, O_WRONLY);
        if (fd < 0) {
            sdxl_err("cannot open %s: %s\n", path, strerror(errno));
            return 0;
        }
        if (!fw_write_all(fd, (const unsigned char *)data, n)) err = errno;
        if (close(fd) != 0 && !err) err = errno, step = "close";
        if (err) sdxl_err("cannot write %s (%s failed): %s\n", path, step, strerror(err));
        return !err;
    }
    if (exists && !S_ISREG(st.st_mode)) {
        sdxl_err("cannot write %s: it exists and is not a regular file, a device or a FIFO\n", path);
        return 0;
    }
    /* Through a symbolic link: the file it points to is replaced, the link stays. */
    target = exists ? realpath(path, NULL) : NULL;
    if (!target) target = strdup(path);
    cap = target ? strlen(target) + 64 : 0;
    tmp = target ? (char *)malloc(cap) : NULL;
    if (!tmp) {
        sdxl_err("cannot write %s: out of memory\n", path);
        free(target);
        return 0;
    }
    slash = strrchr(target, '/');
    dirlen = slash ? (size_t)(slash - target) + 1 : 0;
    /* A temporary file beside the target (same file system: the rename is
     * atomic); O_EXCL never takes over another writer's file. */
    for (attempt = 0; attempt < 1000 && fd < 0; attempt++) {
        snprintf(tmp, cap, "%.*s.%s.tmp-%ld-%d", (int)dirlen, target, target + dirlen, (long)getpid(), attempt);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        sdxl_err("cannot create a temporary file beside %s: %s\n", target, strerror(errno));
        free(tmp);
        free(target);
        return 0;
    }
    if (exists) (void)fchmod(fd, st.st_mode & 07777); /* keep the replaced file's permissions */
    if (!fw_write_all(fd, (const unsigned char *)data, n)) err = errno;
    if (!err && fsync(fd) != 0) err = errno, step = "fsync";
    if (close(fd) != 0 && !err) err = errno, step = "close";
    if (!err && rename(tmp, target) != 0) err = errno, step = "rename";
    if (err) {
        unlink(tmp);
        sdxl_err("cannot write %s (%s failed): %s; %s\n", path, step, strerror(err),
                exists ? "the existing file is unchanged" : "no file was written");
    }
    free(tmp);
    free(target);
    return !err;
}

int sdxl_check_output(const char *path, const char *const *inputs, int ninputs) {
    struct stat st, in;
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    int i;
    size_t len = strlen(path);
    if (len == 0 || len >= PATH_MAX) {
        sdxl_err("output path of %zu bytes: it must be 1..%d bytes long\n", len, PATH_MAX - 1);
        return 0;
    }
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (stat(dir, &st) != 0) {
        sdxl_err("cannot write %s: directory %s: %s\n", path, dir, strerror(errno));
        return 0;
    }
    if (!S_ISDIR(st.st_mode)) {
        sdxl_err("cannot write %s: %s is not a directory\n", path, dir);
        return 0;
    }
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            sdxl_err("cannot write %s: it is a directory\n", path);
            return 0;
        }
        if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode)) {
            sdxl_err("cannot write %s: it is not a regular file, a device or a FIFO\n", path);
            return 0;
        }
        for (i = 0; i < ninputs; i++)
            if (inputs[i] && stat(inputs[i], &in) == 0 && in.st_dev == st.st_dev && in.st_ino == st.st_ino) {
                sdxl_err("output %s is the input file %s: it would be overwritten\n", path,
                        inputs[i]);
                return 0;
            }
        if (access(path, W_OK) != 0) {
            sdxl_err("cannot write %s: %s\n", path, strerror(errno));
            return 0;
        }
        if (!S_ISREG(st.st_mode)) return 1; /* written in place */
    }
    if (access(dir, W_OK | X_OK) != 0) {
        sdxl_err("cannot write %s: directory %s: %s\n", path, dir, strerror(errno));
        return 0;
    }
    return 1;
}
