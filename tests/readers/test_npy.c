/* .npy: valid files of each dtype, version and rank built here byte by byte,
 * invalid and unsupported variants with their status and message, every
 * truncation of a valid file, and reading from a path. */
#include "readers_test.h"

#include <stdlib.h>

/* magic, version major.0, header length (2 or 4 bytes), dict padded with spaces
 * to a multiple of 64 and ended by '\n' (as numpy writes), then data. */
static unsigned char *tn_blob(int major, const char *dict, const void *data, uint64_t data_len, uint64_t *size) {
    size_t dlen = strlen(dict), pre = major == 1 ? 10 : 12, hlen = dlen + 1;
    unsigned char *b;
    size_t i;
    while ((pre + hlen) % 64) hlen++;
    b = (unsigned char *)malloc(pre + hlen + data_len + 1);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (unsigned char)major;
    b[7] = 0;
    for (i = 0; i < pre - 8; i++) b[8 + i] = (unsigned char)(hlen >> (8 * i));
    memcpy(b + pre, dict, dlen);
    memset(b + pre + dlen, ' ', hlen - dlen - 1);
    b[pre + hlen - 1] = '\n';
    if (data_len) memcpy(b + pre + hlen, data, (size_t)data_len);
    *size = pre + hlen + data_len;
    return b;
}

static void tn_put_le(unsigned char *p, uint64_t v, int n) {
    int i;
    for (i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* A valid file of descr ('<f4', '<f2', '<f8') and shape, random values; checks the read. */
static void tn_valid(const char *label, int major, const char *descr, int32_t ndim, const int64_t *shape,
                     const char *dict_fmt, int shape_first) {
    char dict[256], shp[96] = "(";
    int item = descr[2] - '0';
    int64_t numel = 1, i;
    unsigned char *data, *b;
    float *want, *got = NULL;
    int32_t gnd = -1;
    int64_t gshape[DK_MAX_DIMS];
    uint64_t size;
    dk_status st;
    int32_t d;
    for (d = 0; d < ndim; d++) {
        char part[32];
        snprintf(part, sizeof part, "%lld,%s", (long long)shape[d], ndim > 1 && d == ndim - 1 ? "" : " ");
        strcat(shp, part);
        numel *= shape[d];
    }
    strcat(shp, ")");
    if (ndim == 0) strcpy(shp, "()");
    if (shape_first) snprintf(dict, sizeof dict, dict_fmt, shp, descr);
    else snprintf(dict, sizeof dict, dict_fmt, descr, shp);
    data = (unsigned char *)malloc((size_t)(numel * item) + 1);
    want = (float *)malloc((size_t)numel * sizeof(float) + 4);
    for (i = 0; i < numel; i++) {
        float f = rt_randf();
        uint32_t u;
        if (item == 2) {
            uint16_t h = dk_f32_to_f16(f);
            tn_put_le(data + 2 * i, h, 2);
            want[i] = dk_f16_to_f32(h);
        } else if (item == 4) {
            memcpy(&u, &f, 4);
            tn_put_le(data + 4 * i, u, 4);
            want[i] = f;
        } else {
            double x = (double)f * 1.000000123;
            uint64_t v;
            memcpy(&v, &x, 8);
            tn_put_le(data + 8 * i, v, 8);
            want[i] = (float)x;
        }
    }
    b = tn_blob(major, dict, data, (uint64_t)(numel * item), &size);
    st = dk_npy_read_f32_memory(b, size, &got, &gnd, gshape);
    rt_expect(label, st, DK_OK, NULL);
    if (st == DK_OK) {
        RT_CHECK(gnd == ndim, "[%s] ndim %d", label, (int)gnd);
        for (d = 0; d < DK_MAX_DIMS; d++)
            RT_CHECK(gshape[d] == (d < ndim ? shape[d] : 1), "[%s] shape[%d] = %lld", label, (int)d, (long long)gshape[d]);
        RT_CHECK(numel == 0 || memcmp(got, want, (size_t)numel * sizeof(float)) == 0, "[%s] values differ", label);
        dk_npy_free(got);
    }
    free(b);
    free(data);
    free(want);
}

typedef struct tn_spec {
    const char *label;
    int major;
    const char *dict;
    uint64_t data_len;
    dk_status want;
    const char *msg;
} tn_spec;

#define F DK_ERR_FORMAT
#define U DK_ERR_UNSUPPORTED
static const tn_spec tn_specs[] = {
    {"big-endian", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8, U, "not little-endian"},
    {"fortran", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24, U, "fortran_order True"},
    {"int dtype", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", 8, U, "dtype '<i4' unsupported"},
    {"structured", 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8, U, "structured"},
    {"6 dims", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 2), }", 8, U, "6 dims"},
    {"not a tuple", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2), }", 8, F, "(n) is not a tuple"},
    {"shape list", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': [2], }", 8, F, "'(' starting the shape"},
    {"negative dim", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8, F, "non-negative"},
    {"leading zero", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (02,), }", 8, F, "leading zero"},
    {"huge dim", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775808,), }", 8, F, "exceeds 2^63-1"},
    {"overflow", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 8, F, "overflows"},
    {"bytes overflow", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,), }", 8, F, "overflows"},
    {"too little data", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 8, F, "truncated file"},
    {"too much data", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 8, F, "trailing bytes"},
    {"missing shape", 1, "{'descr': '<f4', 'fortran_order': False, }", 8, F, "lacks 'shape'"},
    {"missing descr", 1, "{'fortran_order': False, 'shape': (2,), }", 8, F, "lacks 'descr'"},
    {"duplicate key", 1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8, F,
     "duplicate key 'descr'"},
    {"unknown key", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8, F, "unknown dict key"},
    {"fortran int", 1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }", 8, F, "True or False"},
    {"not a dict", 1, "['descr', '<f4']", 8, F, "dict starting with '{'"},
    {"unclosed dict", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", 8, F, "',' or '}'"},
    {"garbage after", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x", 8, F, "trailing characters"},
    {"escape in string", 1, "{'descr': '<f\\4', 'fortran_order': False, 'shape': (2,), }", 8, F, "unexpected character"},
    {"unterminated string", 1, "{'descr': '<f4", 0, F, "unexpected character"}, /* runs into the '\n' */
    {"long descr", 1, "{'descr': '<f4444444444444444444444', 'fortran_order': False, 'shape': (2,), }", 8, F, "longer than"},
    {"empty", 1, "", 0, F, "dict starting with '{'"},
};
#undef F
#undef U

static void tn_invalid(void) {
    size_t i;
    unsigned char zeros[64];
    memset(zeros, 0x3c, sizeof zeros);
    for (i = 0; i < sizeof tn_specs / sizeof tn_specs[0]; i++) {
        uint64_t size;
        unsigned char *b = tn_blob(tn_specs[i].major, tn_specs[i].dict, zeros, tn_specs[i].data_len, &size);
        float *got = (float *)&size; /* must come back NULL on failure */
        int32_t nd;
        int64_t shp[DK_MAX_DIMS];
        dk_status st = dk_npy_read_f32_memory(b, size, &got, &nd, shp);
        rt_expect(tn_specs[i].label, st, tn_specs[i].want, tn_specs[i].msg);
        RT_CHECK(st != DK_OK ? got == NULL : 1, "[%s] *data after failure", tn_specs[i].label);
        if (st == DK_OK) dk_npy_free(got);
        free(b);
    }
}

/* Framing: magic, versions, header length fields. */
static void tn_framing(void) {
    static const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
    float one = 1.5f, *got = NULL;
    int32_t nd;
    int64_t shp[DK_MAX_DIMS];
    uint64_t size, n;
    unsigned char *b = tn_blob(1, dict, &one, 4, &size);
    int bad = 0;
    char path[1024];
    FILE *fp;

    b[0] = 0x92;
    rt_expect("bad magic", dk_npy_read_f32_memory(b, size, &got, &nd, shp), DK_ERR_FORMAT, "no \\x93NUMPY magic");
    b[0] = 0x93;
    b[6] = 4;
    rt_expect("version 4", dk_npy_read_f32_memory(b, size, &got, &nd, shp), DK_ERR_UNSUPPORTED, "version 4.0");
    b[6] = 1;
    b[7] = 1;
    rt_expect("version 1.1", dk_npy_read_f32_memory(b, size, &got, &nd, shp), DK_ERR_UNSUPPORTED, "version 1.1");
    b[7] = 0;
    b[8] = 0xff;
    b[9] = 0xff;
    rt_expect("header length", dk_npy_read_f32_memory(b, size, &got, &nd, shp), DK_ERR_FORMAT, "header length 65535 exceeds");
    b[8] = (unsigned char)(size - 10 - 4);
    b[9] = 0;
    rt_expect("restored", dk_npy_read_f32_memory(b, size, &got, &nd, shp), DK_OK, NULL);
    RT_CHECK(got && got[0] == 1.5f && nd == 1 && shp[0] == 1, "restored value");
    dk_npy_free(got);
    rt_expect("NULL bytes", dk_npy_read_f32_memory(NULL, 4, &got, &nd, shp), DK_ERR_INVALID_ARGUMENT, "bytes is NULL");
    rt_expect("NULL out", dk_npy_read_f32_memory(b, size, NULL, &nd, shp), DK_ERR_INVALID_ARGUMENT, "data must not be NULL");
    /* Every proper prefix fails with FORMAT; a fresh exact-size copy each time for ASan. */
    for (n = 0; n < size; n++) {
        unsigned char *copy = (unsigned char *)malloc(n ? n : 1);
        dk_status st;
        memcpy(copy, b, n);
        got = NULL;
        st = dk_npy_read_f32_memory(copy, n, &got, &nd, shp);
        if (st != DK_ERR_FORMAT || got != NULL) {
            if (bad++ < 5) fprintf(stderr, "FAIL npy truncated at %llu: %s %s\n", (unsigned long long)n, dk_status_name(st), dk_last_error(NULL));
        }
        free(copy);
    }
    RT_CHECK(bad == 0, "%d npy truncations misbehaved", bad);
    /* From a path. */
    snprintf(path, sizeof path, "%s/rt_valid.npy", rt_dir);
    fp = fopen(path, "wb");
    if (fp) {
        fwrite(b, 1, (size_t)size, fp);
        fclose(fp);
        got = NULL;
        rt_expect("npy path", dk_npy_read_f32(path, &got, &nd, shp), DK_OK, NULL);
        RT_CHECK(got && got[0] == 1.5f, "npy path value");
        dk_npy_free(got);
    }
    rt_expect("npy missing", dk_npy_read_f32("/nonexistent-dir/x.npy", &got, &nd, shp), DK_ERR_IO, "cannot open");
    free(b);
}

/* Doubles beyond float range round like IEEE conversion, without UB. */
static void tn_f8_range(void) {
    static const double vals[6] = {1e300, -1e300, 0x1.ffffffp127 /* FLT_MAX + 1/2 ulp */, 3.4028235e38,
                                   1e-50, -1e-50};
    unsigned char data[48];
    float *got = NULL, inf = 1e30f * 1e30f;
    int32_t nd;
    int64_t shp[DK_MAX_DIMS];
    uint64_t size;
    unsigned char *b;
    int i;
    for (i = 0; i < 6; i++) {
        uint64_t v;
        memcpy(&v, &vals[i], 8);
        tn_put_le(data + 8 * i, v, 8);
    }
    b = tn_blob(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }", data, 48, &size);
    rt_expect("f8 range", dk_npy_read_f32_memory(b, size, &got, &nd, shp), DK_OK, NULL);
    if (got) {
        RT_CHECK(got[0] == inf && got[1] == -inf && got[2] == inf, "f8 overflow to inf: %g %g %g", got[0], got[1], got[2]);
        RT_CHECK(got[3] == 3.4028235e38f && got[4] == 0.0f && got[5] == 0.0f, "f8 in range: %g %g %g", got[3], got[4], got[5]);
        dk_npy_free(got);
    }
    free(b);
}

void test_npy(void) {
    static const int64_t s23[2] = {2, 3}, s5[1] = {5}, s2345[4] = {2, 3, 4, 5}, s04[2] = {0, 4}, s7[1] = {7};
    static const char *numpy_fmt = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }";
    tn_valid("f4 2x3 v1", 1, "<f4", 2, s23, numpy_fmt, 0);
    tn_valid("f2 5 v1", 1, "<f2", 1, s5, numpy_fmt, 0);
    tn_valid("f8 scalar v1", 1, "<f8", 0, s5, numpy_fmt, 0);
    tn_valid("f4 4-D v2", 2, "<f4", 4, s2345, numpy_fmt, 0);
    tn_valid("f2 0x4 v3", 3, "<f2", 2, s04, numpy_fmt, 0);
    tn_valid("double quotes, key order", 1, "<f4", 1, s7, "{\"shape\": %s, \"fortran_order\": False, \"descr\": \"%s\"}", 1);
    tn_invalid();
    tn_framing();
    tn_f8_range();
}
