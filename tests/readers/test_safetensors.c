/* safetensors: write/read round trips of every dtype and rank, lookups,
 * dk_st_tensor_copy conversions and the writer's argument rules. */
#include "readers_test.h"

#include <stdlib.h>

#define TS_COUNT 9

/* Random elements of dtype (finite values, stored as the dtype's bits). */
static void *ts_random(dk_dtype t, uint64_t numel) {
    unsigned char *p = (unsigned char *)malloc(numel * dk_dtype_size(t) + 1);
    uint64_t i;
    for (i = 0; i < numel; i++) {
        float f = rt_randf();
        if (t == DK_F32) {
            memcpy(p + 4 * i, &f, 4);
        } else {
            uint16_t h = t == DK_F16 ? dk_f32_to_f16(f) : dk_f32_to_bf16(f);
            memcpy(p + 2 * i, &h, 2);
        }
    }
    return p;
}

static float ts_elem(dk_dtype t, const void *data, uint64_t i) {
    const unsigned char *p = (const unsigned char *)data;
    if (t == DK_F32) {
        float f;
        memcpy(&f, p + 4 * i, 4);
        return f;
    } else {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        return t == DK_F16 ? dk_f16_to_f32(h) : dk_bf16_to_f32(h);
    }
}

static void ts_roundtrip(void) {
    /* Names with JSON specials, UTF-8 and ranks 0..8, incl. a zero-size tensor. */
    static const char *names[TS_COUNT] = {
        "decoder.conv_in.weight", "quote\"back\\slash", "new\nline\ttab", "caf\xc3\xa9 \xf0\x9f\x98\x80",
        "scalar", "empty", "rank8", "b", "a"};
    static const dk_dtype dtypes[TS_COUNT] = {DK_F16, DK_F32, DK_BF16, DK_F32, DK_F16, DK_F32, DK_BF16, DK_F32, DK_F16};
    static const int32_t ndims[TS_COUNT] = {4, 2, 3, 1, 0, 2, 8, 1, 1};
    static const int64_t shapes[TS_COUNT][DK_ST_MAX_DIMS] = {
        {3, 2, 3, 3}, {5, 7}, {2, 3, 5}, {11}, {0}, {0, 3}, {1, 2, 1, 3, 1, 2, 1, 2}, {1}, {3}};
    dk_st_tensor in[TS_COUNT], got;
    void *bufs[TS_COUNT];
    dk_safetensors *f = NULL;
    char path[1024];
    int i, d;
    int64_t k, pos;
    dk_status st;

    for (i = 0; i < TS_COUNT; i++) {
        uint64_t numel = 1;
        memset(&in[i], 0, sizeof in[i]);
        in[i].name = names[i];
        in[i].dtype = dtypes[i];
        in[i].ndim = ndims[i];
        for (d = 0; d < ndims[i]; d++) { in[i].shape[d] = shapes[i][d]; numel *= (uint64_t)shapes[i][d]; }
        bufs[i] = ts_random(dtypes[i], numel);
        in[i].data = bufs[i];
        in[i].nbytes = numel * dk_dtype_size(dtypes[i]);
    }
    snprintf(path, sizeof path, "%s/rt_roundtrip.safetensors", rt_dir);
    st = dk_safetensors_write(path, in, TS_COUNT);
    rt_expect("write round trip file", st, DK_OK, NULL);
    st = dk_safetensors_open(path, &f);
    rt_expect("open round trip file", st, DK_OK, NULL);
    if (st != DK_OK) goto done;
    RT_CHECK(dk_safetensors_count(f) == TS_COUNT, "count %lld", (long long)dk_safetensors_count(f));
    for (i = 0; i < TS_COUNT; i++) {
        st = dk_safetensors_find(f, names[i], &got);
        rt_expect(names[i], st, DK_OK, NULL);
        if (st != DK_OK) continue;
        RT_CHECK(strcmp(got.name, names[i]) == 0, "name %s", got.name);
        RT_CHECK(got.dtype == dtypes[i], "%s: dtype %d", names[i], (int)got.dtype);
        RT_CHECK(strcmp(got.dtype_name, dtypes[i] == DK_F32 ? "F32" : dtypes[i] == DK_F16 ? "F16" : "BF16") == 0,
                 "%s: dtype_name %s", names[i], got.dtype_name);
        RT_CHECK(got.ndim == ndims[i], "%s: ndim %d", names[i], (int)got.ndim);
        for (d = 0; d < DK_ST_MAX_DIMS; d++)
            RT_CHECK(got.shape[d] == (d < ndims[i] ? shapes[i][d] : 1), "%s: shape[%d] %lld", names[i], d,
                     (long long)got.shape[d]);
        RT_CHECK(got.nbytes == in[i].nbytes, "%s: nbytes %llu", names[i], (unsigned long long)got.nbytes);
        RT_CHECK(got.nbytes == 0 || memcmp(got.data, bufs[i], (size_t)got.nbytes) == 0, "%s: data differs", names[i]);
        /* The writer orders tensors so every data pointer is aligned to its element size. */
        RT_CHECK((uintptr_t)got.data % dk_dtype_size(got.dtype) == 0, "%s: data misaligned", names[i]);
    }
    /* at(): offset order, which the writer makes "F32 first, then the 2-byte dtypes". */
    pos = 0;
    for (k = 0; k < TS_COUNT; k++) {
        st = dk_safetensors_at(f, k, &got);
        rt_expect("at", st, DK_OK, NULL);
        RT_CHECK(k == 0 || dk_dtype_size(got.dtype) <= (size_t)pos, "at(%lld): F32 after a 2-byte dtype", (long long)k);
        pos = (int64_t)dk_dtype_size(got.dtype);
    }
    rt_expect("at -1", dk_safetensors_at(f, -1, &got), DK_ERR_INVALID_ARGUMENT, "index -1 out of range");
    rt_expect("at count", dk_safetensors_at(f, TS_COUNT, &got), DK_ERR_INVALID_ARGUMENT, "out of range");
    rt_expect("find missing", dk_safetensors_find(f, "decoder.conv_in.bias", &got), DK_ERR_INVALID_ARGUMENT,
              "tensor 'decoder.conv_in.bias' not found");
    rt_expect("find NULL name", dk_safetensors_find(f, NULL, &got), DK_ERR_INVALID_ARGUMENT, "name must not be NULL");
    RT_CHECK(dk_safetensors_metadata(f, "format") == NULL, "writer wrote no metadata");

    /* Conversions: every source dtype to every destination dtype, element by element. */
    for (i = 0; i < 3; i++) {
        static const dk_dtype all[3] = {DK_F32, DK_F16, DK_BF16};
        int j;
        st = dk_safetensors_find(f, names[i], &got);
        for (j = 0; st == DK_OK && j < 3; j++) {
            uint64_t numel = got.nbytes / dk_dtype_size(got.dtype), e;
            void *dst = malloc(numel * 4 + 4);
            dk_status cs = dk_st_tensor_copy(&got, all[j], dst, numel * dk_dtype_size(all[j]));
            rt_expect("copy", cs, DK_OK, NULL);
            for (e = 0; cs == DK_OK && e < numel; e++) {
                float src = ts_elem(got.dtype, got.data, e);
                float want = all[j] == DK_F32 ? src : all[j] == DK_F16 ? dk_f16_to_f32(dk_f32_to_f16(src))
                                                                        : dk_bf16_to_f32(dk_f32_to_bf16(src));
                float have = ts_elem(all[j], dst, e);
                if (have != want) {
                    RT_CHECK(0, "copy %s -> %s element %llu: %g != %g", got.dtype_name, dk_dtype_name(all[j]),
                             (unsigned long long)e, have, want);
                    break;
                }
            }
            if (numel > 0) {
                rt_expect("copy short dst", dk_st_tensor_copy(&got, all[j], dst, numel * dk_dtype_size(all[j]) - 1),
                          DK_ERR_INVALID_ARGUMENT, "dst_bytes");
            }
            free(dst);
        }
    }
    rt_expect("copy bad dtype", dk_st_tensor_copy(&got, (dk_dtype)9, NULL, 0), DK_ERR_INVALID_ARGUMENT, "dtype 9");
    dk_safetensors_close(f);

done:
    /* Writer rules. */
    {
        dk_st_tensor bad[2];
        float one = 1.0f;
        memcpy(bad, in, sizeof bad);
        snprintf(path, sizeof path, "%s/rt_bad.safetensors", rt_dir);
        bad[1].name = bad[0].name;
        rt_expect("write duplicate", dk_safetensors_write(path, bad, 2), DK_ERR_INVALID_ARGUMENT, "duplicate tensor name");
        memcpy(bad, in, sizeof bad);
        bad[0].nbytes += 2;
        rt_expect("write nbytes", dk_safetensors_write(path, bad, 2), DK_ERR_INVALID_ARGUMENT, "nbytes");
        memcpy(bad, in, sizeof bad);
        bad[0].dtype = (dk_dtype)0;
        rt_expect("write dtype", dk_safetensors_write(path, bad, 1), DK_ERR_INVALID_ARGUMENT, "dtype 0");
        memcpy(bad, in, sizeof bad);
        bad[0].name = "__metadata__";
        rt_expect("write __metadata__", dk_safetensors_write(path, bad, 1), DK_ERR_INVALID_ARGUMENT, "__metadata__");
        bad[0].name = "bad\xff";
        rt_expect("write non-UTF-8", dk_safetensors_write(path, bad, 1), DK_ERR_INVALID_ARGUMENT, "UTF-8");
        memcpy(bad, in, sizeof bad);
        bad[0].ndim = 9;
        rt_expect("write ndim", dk_safetensors_write(path, bad, 1), DK_ERR_INVALID_ARGUMENT, "ndim 9");
        memcpy(bad, in, sizeof bad);
        bad[0].shape[1] = -2;
        rt_expect("write shape", dk_safetensors_write(path, bad, 1), DK_ERR_INVALID_ARGUMENT, "shape[1] = -2");
        memcpy(bad, in, sizeof bad);
        bad[0].data = NULL;
        rt_expect("write NULL data", dk_safetensors_write(path, bad, 1), DK_ERR_INVALID_ARGUMENT, "data is NULL");
        memset(bad, 0, sizeof bad);
        bad[0].name = "x";
        bad[0].dtype = DK_F32;
        bad[0].data = &one;
        bad[0].nbytes = 4;
        rt_expect("write no dir", dk_safetensors_write("/nonexistent-dir/x.safetensors", bad, 1), DK_ERR_IO,
                  "cannot create");
        rt_expect("write count", dk_safetensors_write(path, bad, -1), DK_ERR_INVALID_ARGUMENT, "count -1");
        rt_expect("write empty", dk_safetensors_write(path, bad, 0), DK_OK, NULL);
        st = dk_safetensors_open(path, &f);
        rt_expect("open empty", st, DK_OK, NULL);
        RT_CHECK(st != DK_OK || dk_safetensors_count(f) == 0, "empty file count");
        dk_safetensors_close(f);
    }
    rt_expect("open missing", dk_safetensors_open("/nonexistent-dir/x.safetensors", &f), DK_ERR_IO, "cannot open");
    RT_CHECK(f == NULL, "open failure leaves *out NULL");
    rt_expect("open NULL out", dk_safetensors_open(path, NULL), DK_ERR_INVALID_ARGUMENT, "out must not be NULL");
    rt_expect("open directory", dk_safetensors_open(rt_dir, &f), DK_ERR_IO, NULL);
    for (i = 0; i < TS_COUNT; i++) free(bufs[i]);
}

/* A file larger than the reader's first 64 KiB block. */
static void ts_large(void) {
    dk_st_tensor t, got;
    dk_safetensors *f = NULL;
    char path[1024];
    dk_status st;
    memset(&t, 0, sizeof t);
    t.name = "big";
    t.dtype = DK_F32;
    t.ndim = 2;
    t.shape[0] = 301;
    t.shape[1] = 1001;
    t.nbytes = 301 * 1001 * 4;
    t.data = ts_random(DK_F32, 301 * 1001);
    snprintf(path, sizeof path, "%s/rt_large.safetensors", rt_dir);
    rt_expect("write large", dk_safetensors_write(path, &t, 1), DK_OK, NULL);
    st = dk_safetensors_open(path, &f);
    rt_expect("open large", st, DK_OK, NULL);
    if (st == DK_OK) {
        st = dk_safetensors_find(f, "big", &got);
        rt_expect("find large", st, DK_OK, NULL);
        RT_CHECK(st == DK_OK && got.nbytes == t.nbytes && memcmp(got.data, t.data, (size_t)t.nbytes) == 0,
                 "large tensor differs");
        dk_safetensors_close(f);
    }
    free((void *)t.data);
}

void test_safetensors(void) {
    ts_roundtrip();
    ts_large();
}

#undef TS_COUNT
