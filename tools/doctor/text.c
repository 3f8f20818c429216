/* Growing strings, JSON / markdown escaping and atomic report files. */
#define _POSIX_C_SOURCE 200809L
#include "doctor.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void dd_copy(char *dst, size_t cap, const char *src) {
    if (!cap) return;
    snprintf(dst, cap, "%s", src ? src : "");
}

double dd_now_ms(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int dd_text_reserve(dd_text *t, size_t extra) {
    size_t need = t->len + extra + 1, cap;
    char *s;
    if (t->oom) return 0;
    if (need <= t->cap) return 1;
    cap = t->cap ? t->cap : 4096;
    while (cap < need) cap *= 2;
    s = (char *)realloc(t->s, cap);
    if (!s) {
        t->oom = 1;
        return 0;
    }
    t->s = s;
    t->cap = cap;
    return 1;
}

void dd_text_printf(dd_text *t, const char *fmt, ...) {
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !dd_text_reserve(t, (size_t)n)) {
        if (n < 0) t->oom = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(t->s + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

void dd_text_json_string(dd_text *t, const char *s) {
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    dd_text_printf(t, "\"");
    for (; *p; p++) {
        if (*p == '"' || *p == '\\') dd_text_printf(t, "\\%c", *p);
        else if (*p == '\n') dd_text_printf(t, "\\n");
        else if (*p == '\t') dd_text_printf(t, "\\t");
        else if (*p == '\r') dd_text_printf(t, "\\r");
        else if (*p < 0x20 || *p == 0x7f) dd_text_printf(t, "\\u%04x", *p);
        else if (*p < 0x80) dd_text_printf(t, "%c", *p);
        else {
            /* bytes of valid UTF-8 sequences pass; anything else becomes U+FFFD so that
             * the report stays valid JSON whatever a driver string holds */
            int len = (*p & 0xe0) == 0xc0 ? 2 : (*p & 0xf0) == 0xe0 ? 3 : (*p & 0xf8) == 0xf0 ? 4 : 0, i;
            for (i = 1; i < len; i++)
                if ((p[i] & 0xc0) != 0x80) len = 0;
            if (len) {
                dd_text_printf(t, "%.*s", len, (const char *)p);
                p += len - 1;
            } else {
                dd_text_printf(t, "\\ufffd");
            }
        }
    }
    dd_text_printf(t, "\"");
}

void dd_text_md_cell(dd_text *t, const char *s) {
    const char *p = s ? s : "";
    for (; *p; p++) {
        if (*p == '|') dd_text_printf(t, "\\|");
        else if (*p == '\n' || *p == '\r') dd_text_printf(t, " ");
        else dd_text_printf(t, "%c", *p);
    }
}

void dd_text_free(dd_text *t) {
    free(t->s);
    memset(t, 0, sizeof *t);
}

/* The directory part of path ("." when it has none). */
static void dd_dirname(const char *path, char *dir, size_t cap) {
    const char *slash = strrchr(path, '/');
    if (!slash) dd_copy(dir, cap, ".");
    else if (slash == path) dd_copy(dir, cap, "/");
    else snprintf(dir, cap, "%.*s", (int)(slash - path), path);
}

int dd_check_writable(const char *path, char *err, size_t cap) {
    char dir[4096];
    dd_dirname(path, dir, sizeof dir);
    if (access(dir, W_OK | X_OK) != 0) {
        snprintf(err, cap, "cannot write reports into '%s': %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

int dd_write_atomic(const char *path, const dd_text *t, char *err, size_t cap) {
    char tmp[4200];
    int fd, saved;
    size_t off = 0;
    if (t->oom) {
        snprintf(err, cap, "%s: out of memory while composing the report", path);
        errno = ENOMEM;
        return -1;
    }
    if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof tmp) {
        snprintf(err, cap, "%s: path too long", path);
        errno = ENAMETOOLONG;
        return -1;
    }
    fd = mkstemp(tmp);
    if (fd < 0) {
        saved = errno;
        snprintf(err, cap, "cannot create a temporary file beside %s: %s", path, strerror(saved));
        errno = saved;
        return -1;
    }
    while (off < t->len) {
        ssize_t n = write(fd, t->s + off, t->len - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) goto fail;
        off += (size_t)n;
    }
    /* mkstemp makes it 0600; a report is meant to be shared */
    if (fchmod(fd, 0644) != 0 || fsync(fd) != 0) goto fail;
    if (close(fd) != 0) {
        fd = -1;
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) != 0) goto fail;
    return 0;
fail:
    saved = errno;
    if (fd >= 0) close(fd);
    unlink(tmp);
    snprintf(err, cap, "cannot write %s: %s", path, strerror(saved));
    errno = saved;
    return -1;
}
