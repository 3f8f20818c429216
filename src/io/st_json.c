/* A strict JSON cursor, just enough for the safetensors header: whitespace,
 * punctuation, strings (escapes, surrogate pairs, UTF-8 validation) and
 * non-negative integers.  Every read is bounds-checked against j->end. */
#include "io_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dk__utf8_valid(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t k, need;
        uint32_t cp;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) { need = 1; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { need = 2; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { need = 3; cp = c & 0x07; }
        else return 0; /* continuation byte, overlong 2-byte lead (C0/C1) or > F4 */
        if (n - i <= need) return 0;
        for (k = 1; k <= need; k++) {
            unsigned cc = s[i + k];
            if ((cc & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (cc & 0x3F);
        }
        if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
        if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
        i += need + 1;
    }
    return 1;
}

dk_status dk__json_error(dk__json *j, const char *what) {
    return dk__fail(NULL, DK_ERR_FORMAT, "%s: header byte %llu: %s", j->fn,
                    (unsigned long long)(j->p - j->begin), what);
}

void dk__json_ws(dk__json *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

int dk__json_at(dk__json *j, char c) {
    return j->p < j->end && *j->p == (unsigned char)c;
}

dk_status dk__json_expect(dk__json *j, char c, const char *what) {
    dk__json_ws(j);
    if (!dk__json_at(j, c)) {
        if (j->p >= j->end)
            return dk__fail(NULL, DK_ERR_FORMAT, "%s: header ends early (byte %llu): expected %s", j->fn,
                            (unsigned long long)(j->p - j->begin), what);
        return dk__fail(NULL, DK_ERR_FORMAT, "%s: header byte %llu: expected %s, found '%c' (0x%02x)",
                        j->fn, (unsigned long long)(j->p - j->begin), what,
                        (*j->p >= 0x20 && *j->p < 0x7F) ? *j->p : '?', *j->p);
    }
    j->p++;
    return DK_OK;
}

/* Value of one hex digit, or -1. */
static int stjson_hex(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits after "\u" at j->p; advances past them. */
static int stjson_u4(dk__json *j, uint32_t *out) {
    uint32_t v = 0;
    int k;
    if (j->end - j->p < 4) return 0;
    for (k = 0; k < 4; k++) {
        int h = stjson_hex(j->p[k]);
        if (h < 0) return 0;
        v = (v << 4) | (uint32_t)h;
    }
    j->p += 4;
    *out = v;
    return 1;
}

static size_t stjson_put_utf8(char *dst, uint32_t cp) {
    if (cp < 0x80) { dst[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        dst[0] = (char)(0xC0 | (cp >> 6));
        dst[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        dst[0] = (char)(0xE0 | (cp >> 12));
        dst[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        dst[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    dst[0] = (char)(0xF0 | (cp >> 18));
    dst[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    dst[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    dst[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

dk_status dk__json_string(dk__json *j, char **out, size_t *len) {
    const unsigned char *start, *q;
    char *s;
    size_t n = 0;
    dk_status st;

    *out = NULL;
    *len = 0;
    st = dk__json_expect(j, '"', "a string ('\"')");
    if (st != DK_OK) return st;
    /* Find the closing quote first: the decoded string is never longer than the raw one. */
    start = j->p;
    for (q = start; q < j->end && *q != '"'; q++) {
        if (*q == '\\') {
            q++;
            if (q >= j->end) break;
        } else if (*q < 0x20) {
            j->p = q;
            return dk__json_error(j, "control character inside a string (must be escaped)");
        }
    }
    if (q >= j->end) return dk__json_error(j, "unterminated string");
    if (!dk__utf8_valid(start, (size_t)(q - start))) return dk__json_error(j, "string is not valid UTF-8");
    s = (char *)malloc((size_t)(q - start) + 1);
    if (!s) return dk__fail(NULL, DK_ERR_OUT_OF_MEMORY, "%s: out of host memory", j->fn);
    while (j->p < q) {
        unsigned char c = *j->p;
        uint32_t cp, lo;
        if (c != '\\') { s[n++] = (char)c; j->p++; continue; }
        j->p++; /* j->p < q: the scan above saw the escaped character */
        c = *j->p++;
        switch (c) {
        case '"': s[n++] = '"'; break;
        case '\\': s[n++] = '\\'; break;
        case '/': s[n++] = '/'; break;
        case 'b': s[n++] = '\b'; break;
        case 'f': s[n++] = '\f'; break;
        case 'n': s[n++] = '\n'; break;
        case 'r': s[n++] = '\r'; break;
        case 't': s[n++] = '\t'; break;
        case 'u':
            if (!stjson_u4(j, &cp) || j->p > q) { free(s); return dk__json_error(j, "bad \\u escape (need 4 hex digits)"); }
            if (cp >= 0xDC00 && cp <= 0xDFFF) { free(s); return dk__json_error(j, "lone low surrogate in \\u escape"); }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (q - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u') {
                    free(s);
                    return dk__json_error(j, "high surrogate \\u escape not followed by a low one");
                }
                j->p += 2;
                if (!stjson_u4(j, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                    free(s);
                    return dk__json_error(j, "high surrogate \\u escape not followed by a low one");
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (cp == 0) { free(s); return dk__json_error(j, "\\u0000 in a string (names are C strings)"); }
            n += stjson_put_utf8(s + n, cp);
            break;
        default:
            j->p--;
            free(s);
            return dk__json_error(j, "invalid escape in a string");
        }
    }
    j->p = q + 1;
    s[n] = '\0';
    *out = s;
    *len = n;
    return DK_OK;
}

dk_status dk__json_uint(dk__json *j, uint64_t *out, const char *what) {
    uint64_t v = 0;
    const unsigned char *start;
    char msg[160];
    dk__json_ws(j);
    start = j->p;
    if (j->p >= j->end || *j->p < '0' || *j->p > '9') {
        snprintf(msg, sizeof msg, "%s must be a non-negative integer", what);
        return dk__json_error(j, msg);
    }
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
        unsigned d = (unsigned)(*j->p - '0');
        if (v > (UINT64_MAX - d) / 10) {
            snprintf(msg, sizeof msg, "%s does not fit in 64 bits", what);
            return dk__json_error(j, msg);
        }
        v = v * 10 + d;
        j->p++;
    }
    if (*start == '0' && j->p - start > 1) {
        j->p = start;
        snprintf(msg, sizeof msg, "%s has a leading zero (not JSON)", what);
        return dk__json_error(j, msg);
    }
    if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E')) {
        snprintf(msg, sizeof msg, "%s must be an integer (no fraction or exponent)", what);
        return dk__json_error(j, msg);
    }
    *out = v;
    return DK_OK;
}
