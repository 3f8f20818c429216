/* dk_safetensors_write: a header in the reference layout (padded with spaces to a
 * multiple of 8 bytes, tensors by decreasing element size, then name order as
 * given) followed by the tensors' bytes, written atomically (dk__io_write_file). */
#include "io_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing text buffer; on allocation failure ok drops to 0. */
typedef struct stw_text {
    char *s;
    size_t len, cap;
    int ok;
} stw_text;

static void stw_put(stw_text *t, const char *s, size_t n) {
    if (!t->ok) return;
    if (t->cap - t->len <= n) {
        size_t ncap = (t->cap ? t->cap : 256);
        char *grown;
        while (ncap - t->len <= n) ncap *= 2;
        grown = (char *)realloc(t->s, ncap);
        if (!grown) { t->ok = 0; return; }
        t->s = grown;
        t->cap = ncap;
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
}

static void stw_puts(stw_text *t, const char *s) { stw_put(t, s, strlen(s)); }

/* JSON string literal: quotes, backslashes and control characters escaped. */
static void stw_put_json_string(stw_text *t, const char *s) {
    char esc[8];
    stw_put(t, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            stw_put(t, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            stw_put(t, esc, 6);
        } else {
            stw_put(t, (const char *)&c, 1);
        }
    }
    stw_put(t, "\"", 1);
}

static const char *stw_dtype_name(dk_dtype t) {
    return t == DK_F32 ? "F32" : t == DK_F16 ? "F16" : "BF16";
}

static int stw_cmp_name(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every rule of the header comment in safetensors.h, with its message. */
static dk_status stw_validate(const dk_st_tensor *tensors, int64_t count) {
    int64_t i;
    int32_t d;
    const char **names;
    if (count < 0) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_safetensors_write: count %lld < 0", (long long)count);
    if (count > 0 && !tensors) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_safetensors_write: tensors must not be NULL");
    for (i = 0; i < count; i++) {
        const dk_st_tensor *t = &tensors[i];
        uint64_t numel = 1;
        int zero = 0, overflow = 0;
        if (!t->name || !t->name[0] || !dk__utf8_valid((const unsigned char *)t->name, strlen(t->name)) ||
            strcmp(t->name, "__metadata__") == 0)
            return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT,
                            "dk_safetensors_write: tensors[%lld].name must be a non-empty UTF-8 string other than __metadata__",
                            (long long)i);
        if (t->dtype != DK_F32 && t->dtype != DK_F16 && t->dtype != DK_BF16)
            return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_safetensors_write: tensor '%.200s': dtype %d is not DK_F32, DK_F16 or DK_BF16",
                            t->name, (int)t->dtype);
        if (t->ndim < 0 || t->ndim > DK_ST_MAX_DIMS)
            return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_safetensors_write: tensor '%.200s': ndim %d not in [0, %d]",
                            t->name, (int)t->ndim, DK_ST_MAX_DIMS);
        for (d = 0; d < t->ndim; d++) {
            if (t->shape[d] < 0)
                return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_safetensors_write: tensor '%.200s': shape[%d] = %lld < 0",
                                t->name, (int)d, (long long)t->shape[d]);
            if (t->shape[d] == 0) zero = 1;
            else if (numel > (uint64_t)INT64_MAX / (uint64_t)t->shape[d]) overflow = 1;
            else numel *= (uint64_t)t->shape[d];
        }
        if (zero) numel = 0;
        if (overflow && !zero)
            return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_safetensors_write: tensor '%.200s': element count overflows", t->name);
        if (t->nbytes != numel * dk_dtype_size(t->dtype))
            return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT,
                            "dk_safetensors_write: tensor '%.200s': nbytes %llu != %llu elements * %zu bytes", t->name,
                            (unsigned long long)t->nbytes, (unsigned long long)numel, dk_dtype_size(t->dtype));
        if (t->nbytes > 0 && !t->data)
            return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_safetensors_write: tensor '%.200s': data is NULL", t->name);
    }
    if (count < 2) return DK_OK;
    names = (const char **)malloc((size_t)count * sizeof(char *));
    if (!names) return dk__fail(NULL, DK_ERR_OUT_OF_MEMORY, "dk_safetensors_write: out of host memory");
    for (i = 0; i < count; i++) names[i] = tensors[i].name;
    qsort(names, (size_t)count, sizeof(char *), stw_cmp_name);
    for (i = 1; i < count; i++) {
        if (strcmp(names[i - 1], names[i]) == 0) {
            dk_status st = dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_safetensors_write: duplicate tensor name '%.200s'", names[i]);
            free(names);
            return st;
        }
    }
    free(names);
    return DK_OK;
}

dk_status dk_safetensors_write(const char *path, const dk_st_tensor *tensors, int64_t count) {
    stw_text h = {NULL, 0, 0, 1};
    int64_t *order;
    int64_t i, n = 0;
    uint64_t off = 0, hlen;
    unsigned char len8[8];
    char num[64];
    dk__io_piece *pieces;
    int k, size;
    dk_status st;

    if (!path) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_safetensors_write: path must not be NULL");
    st = stw_validate(tensors, count);
    if (st != DK_OK) return st;
    order = (int64_t *)malloc((size_t)(count > 0 ? count : 1) * sizeof(int64_t));
    if (!order) return dk__fail(NULL, DK_ERR_OUT_OF_MEMORY, "dk_safetensors_write: out of host memory");
    for (size = 4; size >= 2; size -= 2)
        for (i = 0; i < count; i++)
            if ((int)dk_dtype_size(tensors[i].dtype) == size) order[n++] = i;

    stw_puts(&h, "{");
    for (i = 0; i < count; i++) {
        const dk_st_tensor *t = &tensors[order[i]];
        int32_t d;
        if (i > 0) stw_puts(&h, ",");
        stw_put_json_string(&h, t->name);
        stw_puts(&h, ":{\"dtype\":\"");
        stw_puts(&h, stw_dtype_name(t->dtype));
        stw_puts(&h, "\",\"shape\":[");
        for (d = 0; d < t->ndim; d++) {
            snprintf(num, sizeof num, "%s%lld", d ? "," : "", (long long)t->shape[d]);
            stw_puts(&h, num);
        }
        snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                 (unsigned long long)(off + t->nbytes));
        stw_puts(&h, num);
        off += t->nbytes;
    }
    stw_puts(&h, "}");
    while (h.ok && (8 + h.len) % 8 != 0) stw_puts(&h, " ");
    if (!h.ok) {
        free(h.s);
        free(order);
        return dk__fail(NULL, DK_ERR_OUT_OF_MEMORY, "dk_safetensors_write: out of host memory");
    }
    hlen = h.len;
    for (k = 0; k < 8; k++) len8[k] = (unsigned char)(hlen >> (8 * k));

    /* Data as given: the caller's arrays are little-endian element bytes (see
     * safetensors.h).  Written atomically: a failure leaves any existing file. */
    pieces = (dk__io_piece *)malloc((size_t)(count + 2) * sizeof(dk__io_piece));
    if (!pieces) {
        free(h.s);
        free(order);
        return dk__fail(NULL, DK_ERR_OUT_OF_MEMORY, "dk_safetensors_write: out of host memory");
    }
    pieces[0].data = len8;
    pieces[0].size = 8;
    pieces[1].data = h.s;
    pieces[1].size = h.len;
    for (i = 0; i < count; i++) {
        pieces[i + 2].data = tensors[order[i]].data;
        pieces[i + 2].size = tensors[order[i]].nbytes;
    }
    st = dk__io_write_file("dk_safetensors_write", path, pieces, count + 2);
    free(pieces);
    free(h.s);
    free(order);
    return st;
}
