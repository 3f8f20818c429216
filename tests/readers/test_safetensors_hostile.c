/* safetensors: hostile and malformed files, generated here (no Python), each
 * expecting its status and message; plus every truncation of a valid file. */
#include "readers_test.h"

#include <stdlib.h>

/* 8-byte little-endian header length + header + data_len random bytes. */
static unsigned char *th_blob(const char *header, uint64_t data_len, uint64_t *size) {
    uint64_t hlen = strlen(header), i;
    unsigned char *b = (unsigned char *)malloc(8 + hlen + data_len + 1);
    for (i = 0; i < 8; i++) b[i] = (unsigned char)(hlen >> (8 * i));
    memcpy(b + 8, header, hlen);
    for (i = 0; i < data_len; i++) b[8 + hlen + i] = (unsigned char)rt_rand();
    *size = 8 + hlen + data_len;
    return b;
}

/* Open header+data from memory; expect want and msg. */
static void th_case(const char *label, const char *header, uint64_t data_len, dk_status want, const char *msg) {
    uint64_t size;
    unsigned char *b = th_blob(header, data_len, &size);
    dk_safetensors *f = (dk_safetensors *)&size; /* must come back NULL on failure */
    dk_status st = dk_safetensors_open_memory(b, size, &f);
    rt_expect(label, st, want, msg);
    RT_CHECK(st == DK_OK ? f != NULL : f == NULL, "[%s] *out after open", label);
    if (st == DK_OK) dk_safetensors_close(f);
    free(b);
}

typedef struct th_spec {
    const char *label, *header;
    uint64_t data_len;
    dk_status want;
    const char *msg;
} th_spec;

#define F DK_ERR_FORMAT
static const th_spec th_specs[] = {
    /* header framing and JSON syntax */
    {"not an object", "[1]", 0, F, "must start with '{'"},
    {"leading space", " {}", 0, F, "must start with '{'"},
    {"not JSON", "hello", 0, F, "must start with '{'"},
    {"unclosed", "{", 0, F, "ends early"},
    {"empty entry value", "{\"a\":}", 0, F, "'{' starting a tensor entry"},
    {"missing colon", "{\"a\" {}}", 0, F, "':' after a key"},
    {"unquoted key", "{a:{}}", 0, F, "a string"},
    {"trailing comma", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},}", 4, F, "a string"},
    {"trailing garbage", "{}x", 0, F, "trailing bytes after the header object"},
    {"two objects", "{}{}", 0, F, "trailing bytes after the header object"},
    {"empty header", "", 0, F, "must start with '{'"},
    /* entries */
    {"missing dtype", "{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, F, "missing key 'dtype'"},
    {"missing shape", "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, F, "missing key 'shape'"},
    {"missing offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, F, "missing key 'data_offsets'"},
    {"empty entry", "{\"a\":{}}", 0, F, "missing key 'dtype'"},
    {"unknown key", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", 4, F, "unknown key 'x'"},
    {"duplicate key", "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, F,
     "duplicate key 'dtype'"},
    {"unknown dtype", "{\"a\":{\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, F, "unknown dtype 'F33'"},
    {"dtype not string", "{\"a\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, F, "a string"},
    {"shape not array", "{\"a\":{\"dtype\":\"F32\",\"shape\":1,\"data_offsets\":[0,4]}}", 4, F, "'[' starting the shape"},
    {"negative dim", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, F, "non-negative integer"},
    {"fraction dim", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4, F, "no fraction"},
    {"exponent dim", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1e0],\"data_offsets\":[0,4]}}", 4, F, "no fraction"},
    {"leading zero", "{\"a\":{\"dtype\":\"F32\",\"shape\":[01],\"data_offsets\":[0,4]}}", 4, F, "leading zero"},
    {"dim 2^64", "{\"a\":{\"dtype\":\"F32\",\"shape\":[18446744073709551616],\"data_offsets\":[0,4]}}", 4, F,
     "does not fit in 64 bits"},
    {"dim 2^63", "{\"a\":{\"dtype\":\"F32\",\"shape\":[9223372036854775808],\"data_offsets\":[0,4]}}", 4, F,
     "exceeds 2^63-1"},
    {"numel overflow", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,4]}}", 4, F,
     "overflows 2^63-1"},
    {"bytes overflow", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2305843009213693952,2],\"data_offsets\":[0,4]}}", 4, F,
     "overflow 64-bit byte sizes"},
    {"shape unclosed", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,\"data_offsets\":[0,4]}}", 4, F, "non-negative integer"},
    {"offsets 3", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 8, F, "need [begin, end]"},
    {"offsets 1", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4]}}", 4, F, "need [begin, end]"},
    {"offsets reversed", "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,0]}}", 4, F, "end before they begin"},
    {"size mismatch", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, F, "hold 4 bytes but 2 elements"},
    {"f16 size", "{\"a\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[0,4]}}", 4, F, "need 6"},
    {"past data", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, F, "run past the 4-byte data section"},
    {"huge offsets", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[18446744073709551614,18446744073709551615]}}",
     4, F, "run past"},
    {"overlap", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
     8, F, "overlap"},
    {"same range", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
     4, F, "overlap"},
    {"gap", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, F, "gap in the data section: bytes [0, 4)"},
    {"trailing data", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 6, F, "2 trailing bytes"},
    {"data but no tensors", "{}", 3, F, "3 trailing bytes"},
    {"sub-byte", "{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,1]}}", 1, F, "not whole bytes"},
    {"duplicate names", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
     8, F, "duplicate tensor name 'a'"},
    /* names: UTF-8 and escapes */
    {"invalid UTF-8", "{\"a\xff\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, F, "not valid UTF-8"},
    {"overlong UTF-8", "{\"\xc0\xaf\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, F, "not valid UTF-8"},
    {"UTF-8 surrogate", "{\"\xed\xa0\x80\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, F, "not valid UTF-8"},
    {"truncated UTF-8", "{\"\xe2\x82\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, F, "not valid UTF-8"},
    {"raw control", "{\"a\nb\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, F, "control character"},
    {"bad escape", "{\"a\\x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, F, "invalid escape"},
    {"short \\u", "{\"a\\u12\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, F, "bad \\u escape"},
    {"\\u0000", "{\"a\\u0000\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, F, "\\u0000"},
    {"lone high surrogate", "{\"\\ud800x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, F, "high surrogate"},
    {"lone low surrogate", "{\"\\udc00\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, F, "lone low surrogate"},
    {"unterminated name", "{\"abc", 0, F, "unterminated string"},
    {"escape at end", "{\"abc\\", 0, F, "unterminated string"},
    /* __metadata__ */
    {"metadata number", "{\"__metadata__\":{\"a\":1}}", 0, F, "values must be strings"},
    {"metadata nested", "{\"__metadata__\":{\"a\":{}}}", 0, F, "values must be strings"},
    {"metadata twice", "{\"__metadata__\":{},\"__metadata__\":{}}", 0, F, "duplicate key '__metadata__'"},
    {"metadata dup key", "{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, F, "duplicate __metadata__ key 'k'"},
    {"metadata not object", "{\"__metadata__\":\"x\"}", 0, F, "'{' starting __metadata__"},
    /* valid corner cases */
    {"empty object", "{}", 0, DK_OK, NULL},
    {"space padding", "{}      ", 0, DK_OK, NULL},
    {"whitespace", "{ \"a\" : { \"dtype\" : \"BF16\" ,\n\"shape\" : [ 2 ] , \"data_offsets\" : [ 0 , 4 ] } }\t", 4, DK_OK, NULL},
    {"scalar", "{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}", 4, DK_OK, NULL},
    {"zero size", "{\"z\":{\"dtype\":\"F32\",\"shape\":[0,4294967296,4294967296],\"data_offsets\":[4,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
     4, DK_OK, NULL},
    {"other dtypes", "{\"i\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[8,11]},\"f\":{\"dtype\":\"F4\",\"shape\":[2],\"data_offsets\":[11,12]}}",
     12, DK_OK, NULL},
};
#undef F

/* Lookups in a file with escapes, metadata, other dtypes and too many dims. */
static void th_valid_details(void) {
    static const char *header =
        "{\"__metadata__\":{\"format\":\"pt\",\"caf\\u00e9\":\"\\\"q\\\"\"},"
        "\"caf\\u00e9\\ud83d\\ude00\\n\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]},"
        "\"ids\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[4,12]},"
        "\"deep\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1,2],\"data_offsets\":[12,20]}}";
    uint64_t size;
    unsigned char *b = th_blob(header, 20, &size);
    dk_safetensors *f = NULL;
    dk_st_tensor t;
    dk_status st = dk_safetensors_open_memory(b, size, &f);
    rt_expect("details open", st, DK_OK, NULL);
    if (st == DK_OK) {
        RT_CHECK(dk_safetensors_count(f) == 3, "details count %lld", (long long)dk_safetensors_count(f));
        st = dk_safetensors_find(f, "caf\xc3\xa9\xf0\x9f\x98\x80\n", &t);
        rt_expect("escaped name", st, DK_OK, NULL);
        RT_CHECK(st != DK_OK || (t.data == b + size - 20 && t.nbytes == 4 && t.ndim == 1 && t.shape[0] == 2),
                 "escaped name entry");
        st = dk_safetensors_find(f, "ids", &t);
        rt_expect("I64 listed but unsupported", st, DK_ERR_UNSUPPORTED, "has dtype I64");
        RT_CHECK(t.dtype == 0 && strcmp(t.dtype_name, "I64") == 0 && t.nbytes == 8 && t.name && !strcmp(t.name, "ids"),
                 "I64 entry filled");
        rt_expect("copy I64", dk_st_tensor_copy(&t, DK_F32, NULL, 0), DK_ERR_UNSUPPORTED, "has dtype I64");
        st = dk_safetensors_find(f, "deep", &t);
        rt_expect("10 dims listed but unsupported", st, DK_ERR_UNSUPPORTED, "has 10 dims");
        RT_CHECK(t.ndim == 10 && t.nbytes == 8, "deep entry filled: ndim %d", (int)t.ndim);
        st = dk_safetensors_at(f, 1, &t);
        rt_expect("at(1) is ids", st, DK_ERR_UNSUPPORTED, "'ids'");
        RT_CHECK(dk_safetensors_metadata(f, "format") && !strcmp(dk_safetensors_metadata(f, "format"), "pt"), "metadata format");
        RT_CHECK(dk_safetensors_metadata(f, "caf\xc3\xa9") && !strcmp(dk_safetensors_metadata(f, "caf\xc3\xa9"), "\"q\""),
                 "metadata escapes");
        RT_CHECK(dk_safetensors_metadata(f, "missing") == NULL, "metadata missing");
        dk_safetensors_close(f);
    }
    free(b);
}

/* Header length fields that lie. */
static void th_lengths(void) {
    unsigned char small[16];
    dk_safetensors *f = NULL;
    uint64_t big = ((uint64_t)100 << 20) + 1, i, size;
    unsigned char *b;
    memset(small, 0, sizeof small);
    rt_expect("0 bytes", dk_safetensors_open_memory(small, 0, &f), DK_ERR_FORMAT, "too short");
    rt_expect("7 bytes", dk_safetensors_open_memory(small, 7, &f), DK_ERR_FORMAT, "too short");
    rt_expect("NULL data", dk_safetensors_open_memory(NULL, 8, &f), DK_ERR_INVALID_ARGUMENT, "data is NULL");
    rt_expect("zero header", dk_safetensors_open_memory(small, 8, &f), DK_ERR_FORMAT, "must start with '{'");
    small[0] = 9;
    rt_expect("header past end", dk_safetensors_open_memory(small, 16, &f), DK_ERR_FORMAT, "header length 9 exceeds the 8 bytes");
    memset(small, 0xff, 8);
    rt_expect("header 2^64-1", dk_safetensors_open_memory(small, 16, &f), DK_ERR_FORMAT, "exceeds");
    /* A header over the 100 MiB limit inside a file that is big enough. */
    size = 8 + big;
    b = (unsigned char *)calloc(1, (size_t)size);
    if (b) {
        for (i = 0; i < 8; i++) b[i] = (unsigned char)(big >> (8 * i));
        rt_expect("header over 100 MiB", dk_safetensors_open_memory(b, size, &f), DK_ERR_FORMAT, "100 MiB");
        free(b);
    }
}

/* Every proper prefix of a valid file must fail cleanly (FORMAT), the whole must open. */
static void th_truncations(void) {
    static const char *header =
        "{\"__metadata__\":{\"k\":\"v\"},\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
        "\"b\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[16,22]}}";
    uint64_t size, n;
    unsigned char *b = th_blob(header, 22, &size);
    int bad = 0;
    char path[1024];
    FILE *fp;
    for (n = 0; n <= size; n++) {
        /* A fresh exact-size copy so ASan sees any read past the prefix. */
        unsigned char *copy = (unsigned char *)malloc(n ? n : 1);
        dk_safetensors *f = NULL;
        dk_status st;
        memcpy(copy, b, n);
        st = dk_safetensors_open_memory(copy, n, &f);
        if (n < size && (st != DK_ERR_FORMAT || f != NULL || !dk_last_error(NULL)[0])) {
            if (bad++ < 5) fprintf(stderr, "FAIL truncated at %llu: %s %s\n", (unsigned long long)n, dk_status_name(st), dk_last_error(NULL));
        }
        if (n == size && st != DK_OK) bad++, fprintf(stderr, "FAIL untruncated: %s\n", dk_last_error(NULL));
        dk_safetensors_close(f);
        free(copy);
    }
    RT_CHECK(bad == 0, "%d truncations misbehaved", bad);
    /* The same from a file: the reader must not trust anything but the bytes it read. */
    snprintf(path, sizeof path, "%s/rt_truncated.safetensors", rt_dir);
    fp = fopen(path, "wb");
    if (fp) {
        dk_safetensors *f = NULL;
        fwrite(b, 1, (size_t)(size - 3), fp);
        fclose(fp);
        rt_expect("truncated file", dk_safetensors_open(path, &f), DK_ERR_FORMAT, "run past the 19-byte data section");
        RT_CHECK(strstr(dk_last_error(NULL), "rt_truncated.safetensors") != NULL, "message names the file: %s",
                 dk_last_error(NULL));
    }
    free(b);
}

void test_safetensors_hostile(void) {
    size_t i;
    for (i = 0; i < sizeof th_specs / sizeof th_specs[0]; i++)
        th_case(th_specs[i].label, th_specs[i].header, th_specs[i].data_len, th_specs[i].want, th_specs[i].msg);
    th_valid_details();
    th_lengths();
    th_truncations();
}
