/* .npy reader (NumPy format 1.0 / 2.0 / 3.0): magic, version, header length, a
 * Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * and the raw C-order elements.  The dict is parsed strictly and every read is
 * bounds-checked; elements are assembled from little-endian bytes. */
#include "io_internal.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct dknpy_cur {
    const unsigned char *begin, *p, *end;
    const char *fn;
} dknpy_cur;

static dk_status dknpy_error(const dknpy_cur *c, const char *what) {
    return dk__fail(NULL, DK_ERR_FORMAT, "%s: header byte %llu: %s", c->fn,
                    (unsigned long long)(c->p - c->begin), what);
}

static void dknpy_ws(dknpy_cur *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

/* Skip whitespace; consume ch if it is next. */
static int dknpy_take(dknpy_cur *c, char ch) {
    dknpy_ws(c);
    if (c->p < c->end && *c->p == (unsigned char)ch) { c->p++; return 1; }
    return 0;
}

/* A quoted Python string without escapes, copied into buf (cap bytes). */
static dk_status dknpy_string(dknpy_cur *c, char *buf, size_t cap, const char *what) {
    unsigned char q;
    size_t n = 0;
    char msg[128];
    dknpy_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) {
        snprintf(msg, sizeof msg, "expected %s as a quoted string", what);
        return dknpy_error(c, msg);
    }
    q = *c->p++;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || *c->p < 0x20 || *c->p >= 0x7F || n + 1 >= cap) {
            snprintf(msg, sizeof msg, "%s: unexpected character or longer than %zu bytes", what, cap - 1);
            return dknpy_error(c, msg);
        }
        buf[n++] = (char)*c->p++;
    }
    if (c->p >= c->end) return dknpy_error(c, "unterminated string");
    c->p++;
    buf[n] = '\0';
    return DK_OK;
}

static dk_status dknpy_int(dknpy_cur *c, int64_t *out) {
    const unsigned char *start;
    int64_t v = 0;
    dknpy_ws(c);
    start = c->p;
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return dknpy_error(c, "shape entries must be non-negative integers");
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        int d = *c->p - '0';
        if (v > (INT64_MAX - d) / 10) return dknpy_error(c, "a shape entry exceeds 2^63-1");
        v = v * 10 + d;
        c->p++;
    }
    if (*start == '0' && c->p - start > 1) {
        c->p = start;
        return dknpy_error(c, "a shape entry has a leading zero");
    }
    *out = v;
    return DK_OK;
}

/* (a, b, c) with Python's tuple rules: () or (a,) or (a, b) with optional trailing comma. */
static dk_status dknpy_shape(dknpy_cur *c, int64_t *ndim, int64_t shape[DK_MAX_DIMS]) {
    dk_status st;
    *ndim = 0;
    if (!dknpy_take(c, '(')) return dknpy_error(c, "expected '(' starting the shape tuple");
    if (dknpy_take(c, ')')) return DK_OK;
    for (;;) {
        int64_t d = 0;
        st = dknpy_int(c, &d);
        if (st != DK_OK) return st;
        if (*ndim < DK_MAX_DIMS) shape[*ndim] = d;
        (*ndim)++;
        if (dknpy_take(c, ',')) {
            if (dknpy_take(c, ')')) return DK_OK;
            continue;
        }
        if (dknpy_take(c, ')')) {
            if (*ndim == 1) return dknpy_error(c, "(n) is not a tuple: a 1-D shape is written (n,)");
            return DK_OK;
        }
        return dknpy_error(c, "expected ',' or ')' in the shape tuple");
    }
}

/* The header dict; each of the three keys exactly once. */
static dk_status dknpy_dict(dknpy_cur *c, char descr[16], int *fortran, int64_t *ndim, int64_t shape[DK_MAX_DIMS]) {
    int seen_descr = 0, seen_fortran = 0, seen_shape = 0;
    char key[32];
    dk_status st;
    if (!dknpy_take(c, '{')) return dknpy_error(c, "the header must be a dict starting with '{'");
    while (!dknpy_take(c, '}')) {
        st = dknpy_string(c, key, sizeof key, "a dict key");
        if (st != DK_OK) return st;
        if (!dknpy_take(c, ':')) return dknpy_error(c, "expected ':' after a dict key");
        if (strcmp(key, "descr") == 0) {
            if (seen_descr++) return dknpy_error(c, "duplicate key 'descr'");
            dknpy_ws(c);
            if (c->p < c->end && (*c->p == '[' || *c->p == '{'))
                return dk__fail(NULL, DK_ERR_UNSUPPORTED, "%s: structured dtypes are not supported (need '<f4', '<f2' or '<f8')",
                                c->fn);
            st = dknpy_string(c, descr, 16, "descr");
        } else if (strcmp(key, "fortran_order") == 0) {
            if (seen_fortran++) return dknpy_error(c, "duplicate key 'fortran_order'");
            dknpy_ws(c);
            if (c->end - c->p >= 4 && memcmp(c->p, "True", 4) == 0) *fortran = 1, c->p += 4;
            else if (c->end - c->p >= 5 && memcmp(c->p, "False", 5) == 0) *fortran = 0, c->p += 5;
            else st = dknpy_error(c, "fortran_order must be True or False");
        } else if (strcmp(key, "shape") == 0) {
            if (seen_shape++) return dknpy_error(c, "duplicate key 'shape'");
            st = dknpy_shape(c, ndim, shape);
        } else {
            return dknpy_error(c, "unknown dict key (need descr, fortran_order, shape)");
        }
        if (st != DK_OK) return st;
        if (dknpy_take(c, ',')) continue;
        if (dknpy_take(c, '}')) break;
        return dknpy_error(c, "expected ',' or '}' in the header dict");
    }
    dknpy_ws(c);
    if (c->p != c->end) return dknpy_error(c, "trailing characters after the header dict");
    if (!seen_descr || !seen_fortran || !seen_shape)
        return dk__fail(NULL, DK_ERR_FORMAT, "%s: the header dict lacks '%s'", c->fn,
                        !seen_descr ? "descr" : !seen_fortran ? "fortran_order" : "shape");
    return DK_OK;
}

/* Nearest float to a double, without an out-of-range conversion. */
static float dknpy_narrow(double d) {
    if (d != d) return NAN;
    if (d >= 0x1.ffffffp127) return INFINITY; /* halfway above FLT_MAX rounds up (FLT_MAX is odd) */
    if (d <= -0x1.ffffffp127) return -INFINITY;
    if (d > FLT_MAX) return FLT_MAX;
    if (d < -FLT_MAX) return -FLT_MAX;
    return (float)d;
}

static dk_status dknpy_read(const char *fn, const unsigned char *b, uint64_t size, float **data, int32_t *ndim_out,
                            int64_t shape_out[DK_MAX_DIMS]) {
    dknpy_cur c;
    char descr[16];
    int fortran = 0, major;
    int64_t ndim = 0, shape[DK_MAX_DIMS], i;
    uint64_t hlen, hstart, numel = 1, need, item;
    int zero = 0, overflow = 0;
    float *out;
    dk_status st;

    if (size < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
        return dk__fail(NULL, DK_ERR_FORMAT, "%s: not a .npy file (no \\x93NUMPY magic in %llu bytes)", fn,
                        (unsigned long long)size);
    major = b[6];
    if ((major != 1 && major != 2 && major != 3) || b[7] != 0)
        return dk__fail(NULL, DK_ERR_UNSUPPORTED, "%s: .npy version %d.%d (need 1.0, 2.0 or 3.0)", fn, major, b[7]);
    if (major == 1) {
        hlen = (uint64_t)b[8] | (uint64_t)b[9] << 8;
        hstart = 10;
    } else {
        if (size < 12) return dk__fail(NULL, DK_ERR_FORMAT, "%s: %llu bytes is too short for a version %d header", fn,
                                       (unsigned long long)size, major);
        hlen = (uint64_t)b[8] | (uint64_t)b[9] << 8 | (uint64_t)b[10] << 16 | (uint64_t)b[11] << 24;
        hstart = 12;
    }
    if (hlen > size - hstart)
        return dk__fail(NULL, DK_ERR_FORMAT, "%s: header length %llu exceeds the %llu bytes after it (truncated file?)", fn,
                        (unsigned long long)hlen, (unsigned long long)(size - hstart));
    c.begin = c.p = b + hstart;
    c.end = b + hstart + hlen;
    c.fn = fn;
    for (i = 0; i < DK_MAX_DIMS; i++) shape[i] = 1;
    st = dknpy_dict(&c, descr, &fortran, &ndim, shape);
    if (st != DK_OK) return st;

    if (strcmp(descr, "<f4") == 0) item = 4;
    else if (strcmp(descr, "<f2") == 0) item = 2;
    else if (strcmp(descr, "<f8") == 0) item = 8;
    else if (descr[0] == '>' || (descr[0] == '|' && descr[1] == 'f'))
        return dk__fail(NULL, DK_ERR_UNSUPPORTED, "%s: dtype '%s' is not little-endian; need '<f4', '<f2' or '<f8'", fn, descr);
    else
        return dk__fail(NULL, DK_ERR_UNSUPPORTED, "%s: dtype '%s' unsupported; need '<f4', '<f2' or '<f8'", fn, descr);
    if (fortran)
        return dk__fail(NULL, DK_ERR_UNSUPPORTED, "%s: fortran_order True is not supported (save a C-order array)", fn);
    if (ndim > DK_MAX_DIMS)
        return dk__fail(NULL, DK_ERR_UNSUPPORTED, "%s: %lld dims; at most %d are supported", fn, (long long)ndim, DK_MAX_DIMS);
    for (i = 0; i < ndim; i++) {
        if (shape[i] == 0) zero = 1;
        else if (numel > (uint64_t)INT64_MAX / (uint64_t)shape[i]) overflow = 1;
        else numel *= (uint64_t)shape[i];
    }
    if (zero) numel = 0;
    else if (overflow || numel > UINT64_MAX / item)
        return dk__fail(NULL, DK_ERR_FORMAT, "%s: the shape's element count overflows", fn);
    need = numel * item;
    if (size - hstart - hlen != need)
        return dk__fail(NULL, DK_ERR_FORMAT, "%s: the data holds %llu bytes but %llu elements of '%s' need %llu (%s)", fn,
                        (unsigned long long)(size - hstart - hlen), (unsigned long long)numel, descr,
                        (unsigned long long)need, size - hstart - hlen < need ? "truncated file" : "trailing bytes");
    /* numel * item bytes exist in memory, so numel * 4 fits a size_t. */
    out = (float *)malloc(numel > 0 ? (size_t)numel * sizeof(float) : sizeof(float));
    if (!out) return dk__fail(NULL, DK_ERR_OUT_OF_MEMORY, "%s: cannot allocate %llu floats", fn, (unsigned long long)numel);
    b += hstart + hlen;
    for (i = 0; i < (int64_t)numel; i++) {
        const unsigned char *e = b + (uint64_t)i * item;
        if (item == 2) {
            out[i] = dk_f16_to_f32((uint16_t)(e[0] | e[1] << 8));
        } else if (item == 4) {
            uint32_t u = (uint32_t)e[0] | (uint32_t)e[1] << 8 | (uint32_t)e[2] << 16 | (uint32_t)e[3] << 24;
            memcpy(&out[i], &u, 4);
        } else {
            uint64_t u = 0;
            double d;
            int k;
            for (k = 7; k >= 0; k--) u = (u << 8) | e[k];
            memcpy(&d, &u, 8);
            out[i] = dknpy_narrow(d);
        }
    }
    *data = out;
    *ndim_out = (int32_t)ndim;
    for (i = 0; i < DK_MAX_DIMS; i++) shape_out[i] = i < ndim ? shape[i] : 1;
    return DK_OK;
}

static dk_status dknpy_check_out(const char *fn, float **data, int32_t *ndim, int64_t *shape) {
    if (!data || !ndim || !shape)
        return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "%s: %s must not be NULL", fn, !data ? "data" : !ndim ? "ndim" : "shape");
    *data = NULL;
    return DK_OK;
}

dk_status dk_npy_read_f32(const char *path, float **data, int32_t *ndim, int64_t shape[DK_MAX_DIMS]) {
    char fn[512];
    unsigned char *bytes;
    uint64_t size;
    dk_status st = dknpy_check_out("dk_npy_read_f32", data, ndim, shape);
    if (st != DK_OK) return st;
    st = dk__io_read_file("dk_npy_read_f32", path, &bytes, &size);
    if (st != DK_OK) return st;
    snprintf(fn, sizeof fn, "dk_npy_read_f32: '%.400s'", path);
    st = dknpy_read(fn, bytes, size, data, ndim, shape);
    free(bytes);
    return st;
}

dk_status dk_npy_read_f32_memory(const void *bytes, uint64_t size, float **data, int32_t *ndim,
                                 int64_t shape[DK_MAX_DIMS]) {
    dk_status st = dknpy_check_out("dk_npy_read_f32_memory", data, ndim, shape);
    if (st != DK_OK) return st;
    if (!bytes && size > 0)
        return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_npy_read_f32_memory: bytes is NULL but size is %llu",
                        (unsigned long long)size);
    if (!bytes) return dk__fail(NULL, DK_ERR_FORMAT, "dk_npy_read_f32_memory: 0 bytes is not a .npy file");
    return dknpy_read("dk_npy_read_f32_memory", (const unsigned char *)bytes, size, data, ndim, shape);
}

void dk_npy_free(float *data) { free(data); }
