/* safetensors reader: a strict, bounds-checked header parser plus lookups.
 * The rules it enforces are listed in include/difkern/safetensors.h. */
#include "io_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DKST_MAX_HEADER ((uint64_t)100 << 20) /* like the reference implementation */

typedef struct dkst_entry {
    char *name;
    const char *dtype_name; /* static, from dkst_dtypes */
    dk_dtype dtype;         /* 0 when difkern cannot use the dtype */
    int64_t ndim;           /* may exceed DK_ST_MAX_DIMS; only those are stored */
    int64_t shape[DK_ST_MAX_DIMS];
    uint64_t numel;         /* product of every dim, the unstored ones too */
    int numel_zero, numel_overflow;
    uint64_t begin, end;    /* byte range in the data section */
    int64_t order;          /* position in the header (stable sort key) */
} dkst_entry;

struct dk_safetensors {
    unsigned char *owned;          /* the file's bytes when read from a path */
    const unsigned char *mapped;   /* or the file's mapping */
    uint64_t mapped_size;
    const unsigned char *data;     /* data section */
    uint64_t data_size;
    int64_t count;
    dkst_entry *entries;           /* sorted by offset */
    dkst_entry **by_name;          /* sorted by name */
    int64_t meta_count;
    char **meta;                   /* key, value pairs, sorted by key */
};

typedef struct dkst_dtype_info {
    const char *name;
    uint32_t bits;
    dk_dtype dtype;
} dkst_dtype_info;

/* Every dtype of the format, with its element size in bits. */
static const dkst_dtype_info dkst_dtypes[] = {
    {"F32", 32, DK_F32}, {"F16", 16, DK_F16}, {"BF16", 16, DK_BF16},
    {"BOOL", 8, (dk_dtype)0}, {"U8", 8, (dk_dtype)0}, {"I8", 8, (dk_dtype)0},
    {"F8_E5M2", 8, (dk_dtype)0}, {"F8_E4M3", 8, (dk_dtype)0}, {"F8_E8M0", 8, (dk_dtype)0},
    {"I16", 16, (dk_dtype)0}, {"U16", 16, (dk_dtype)0}, {"I32", 32, (dk_dtype)0},
    {"U32", 32, (dk_dtype)0}, {"F64", 64, (dk_dtype)0}, {"I64", 64, (dk_dtype)0},
    {"U64", 64, (dk_dtype)0}, {"C64", 64, (dk_dtype)0}, {"F4", 4, (dk_dtype)0},
    {"F6_E2M3", 6, (dk_dtype)0}, {"F6_E3M2", 6, (dk_dtype)0},
};

static const dkst_dtype_info *dkst_dtype_lookup(const char *name) {
    size_t i;
    for (i = 0; i < sizeof dkst_dtypes / sizeof dkst_dtypes[0]; i++)
        if (strcmp(dkst_dtypes[i].name, name) == 0) return &dkst_dtypes[i];
    return NULL;
}

/* Growable arrays of the parse. */
typedef struct dkst_parse {
    dk__json j;
    dkst_entry *entries;
    int64_t count, cap;
    char **meta;
    int64_t meta_count, meta_cap; /* pairs */
    int have_meta;
} dkst_parse;

static dk_status dkst_oom(const dkst_parse *ps) {
    return dk__fail(NULL, DK_ERR_OUT_OF_MEMORY, "%s: out of host memory", ps->j.fn);
}

/* After an item of an object or array: ',' (more follow, returns 1 in *more) or close. */
static dk_status dkst_next(dkst_parse *ps, char close, int *more, const char *what) {
    dk__json_ws(&ps->j);
    if (dk__json_at(&ps->j, ',')) { ps->j.p++; *more = 1; return DK_OK; }
    *more = 0;
    return dk__json_expect(&ps->j, close, what);
}

static dk_status dkst_parse_shape(dkst_parse *ps, dkst_entry *e) {
    dk_status st;
    int more = 1;
    st = dk__json_expect(&ps->j, '[', "'[' starting the shape array");
    if (st != DK_OK) return st;
    dk__json_ws(&ps->j);
    if (dk__json_at(&ps->j, ']')) { ps->j.p++; return DK_OK; }
    while (more) {
        uint64_t d;
        st = dk__json_uint(&ps->j, &d, "a shape entry");
        if (st != DK_OK) return st;
        if (d > (uint64_t)INT64_MAX) return dk__json_error(&ps->j, "a shape entry exceeds 2^63-1");
        if (e->ndim < DK_ST_MAX_DIMS) e->shape[e->ndim] = (int64_t)d;
        e->ndim++;
        /* The element count over every dim: an entry with more dims than are
         * stored still gets its byte size checked. */
        if (d == 0) e->numel_zero = 1;
        else if (e->numel > (uint64_t)INT64_MAX / d) e->numel_overflow = 1;
        else e->numel *= d;
        st = dkst_next(ps, ']', &more, "',' or ']' in the shape array");
        if (st != DK_OK) return st;
    }
    return DK_OK;
}

static dk_status dkst_parse_offsets(dkst_parse *ps, dkst_entry *e) {
    dk_status st;
    st = dk__json_expect(&ps->j, '[', "'[' starting data_offsets");
    if (st == DK_OK) st = dk__json_uint(&ps->j, &e->begin, "data_offsets[0]");
    if (st == DK_OK) st = dk__json_expect(&ps->j, ',', "',' after data_offsets[0] (need [begin, end])");
    if (st == DK_OK) st = dk__json_uint(&ps->j, &e->end, "data_offsets[1]");
    if (st == DK_OK) st = dk__json_expect(&ps->j, ']', "']' after data_offsets[1] (need [begin, end])");
    return st;
}

/* The element count and byte size the dtype and shape imply must match the offsets. */
static dk_status dkst_check_size(dkst_parse *ps, const dkst_entry *e, uint32_t bits) {
    uint64_t numel = e->numel, bitsz;
    if (e->end < e->begin)
        return dk__fail(NULL, DK_ERR_FORMAT, "%s: tensor '%.200s': data_offsets [%llu, %llu] end before they begin",
                        ps->j.fn, e->name, (unsigned long long)e->begin, (unsigned long long)e->end);
    if (e->numel_zero) numel = 0;
    else if (e->numel_overflow)
        return dk__fail(NULL, DK_ERR_FORMAT, "%s: tensor '%.200s': the shape's element count overflows 2^63-1",
                        ps->j.fn, e->name);
    if (numel > UINT64_MAX / bits)
        return dk__fail(NULL, DK_ERR_FORMAT, "%s: tensor '%.200s': %llu elements of %s overflow 64-bit byte sizes",
                        ps->j.fn, e->name, (unsigned long long)numel, e->dtype_name);
    bitsz = numel * bits;
    if (bitsz % 8 != 0)
        return dk__fail(NULL, DK_ERR_FORMAT, "%s: tensor '%.200s': %llu elements of %u-bit %s are not whole bytes",
                        ps->j.fn, e->name, (unsigned long long)numel, bits, e->dtype_name);
    if (e->end - e->begin != bitsz / 8)
        return dk__fail(NULL, DK_ERR_FORMAT,
                        "%s: tensor '%.200s': data_offsets [%llu, %llu] hold %llu bytes but %llu elements of %s need %llu",
                        ps->j.fn, e->name, (unsigned long long)e->begin, (unsigned long long)e->end,
                        (unsigned long long)(e->end - e->begin), (unsigned long long)numel, e->dtype_name,
                        (unsigned long long)(bitsz / 8));
    return DK_OK;
}

/* One tensor entry: {"dtype": .., "shape": [..], "data_offsets": [b, e]}, the
 * name already read into e->name. */
static dk_status dkst_parse_entry(dkst_parse *ps, dkst_entry *e) {
    const dkst_dtype_info *info = NULL;
    int seen_dtype = 0, seen_shape = 0, seen_offsets = 0, more = 1;
    dk_status st;
    char *key, *val;
    size_t len;

    st = dk__json_expect(&ps->j, '{', "'{' starting a tensor entry");
    if (st != DK_OK) return st;
    dk__json_ws(&ps->j);
    if (dk__json_at(&ps->j, '}')) more = 0, ps->j.p++;
    while (more) {
        st = dk__json_string(&ps->j, &key, &len);
        if (st != DK_OK) return st;
        st = dk__json_expect(&ps->j, ':', "':' after a key");
        if (st == DK_OK && strcmp(key, "dtype") == 0) {
            if (seen_dtype++) st = dk__json_error(&ps->j, "duplicate key 'dtype'");
            if (st == DK_OK) st = dk__json_string(&ps->j, &val, &len);
            if (st == DK_OK) {
                info = dkst_dtype_lookup(val);
                if (!info)
                    st = dk__fail(NULL, DK_ERR_FORMAT, "%s: tensor '%.200s': unknown dtype '%.40s'", ps->j.fn,
                                  e->name, val);
                free(val);
            }
        } else if (st == DK_OK && strcmp(key, "shape") == 0) {
            if (seen_shape++) st = dk__json_error(&ps->j, "duplicate key 'shape'");
            if (st == DK_OK) st = dkst_parse_shape(ps, e);
        } else if (st == DK_OK && strcmp(key, "data_offsets") == 0) {
            if (seen_offsets++) st = dk__json_error(&ps->j, "duplicate key 'data_offsets'");
            if (st == DK_OK) st = dkst_parse_offsets(ps, e);
        } else if (st == DK_OK) {
            st = dk__fail(NULL, DK_ERR_FORMAT,
                          "%s: tensor '%.200s': unknown key '%.60s' (need dtype, shape, data_offsets)",
                          ps->j.fn, e->name, key);
        }
        free(key);
        if (st != DK_OK) return st;
        st = dkst_next(ps, '}', &more, "',' or '}' in a tensor entry");
        if (st != DK_OK) return st;
    }
    if (!seen_dtype || !seen_shape || !seen_offsets)
        return dk__fail(NULL, DK_ERR_FORMAT, "%s: tensor '%.200s': missing key '%s'", ps->j.fn, e->name,
                        !seen_dtype ? "dtype" : !seen_shape ? "shape" : "data_offsets");
    e->dtype_name = info->name;
    e->dtype = info->dtype;
    return dkst_check_size(ps, e, info->bits);
}

/* "__metadata__": {"key": "value", ...}; values must be strings. */
static dk_status dkst_parse_meta(dkst_parse *ps) {
    dk_status st;
    int more = 1;
    char *k, *v;
    size_t len;
    if (ps->have_meta++) return dk__json_error(&ps->j, "duplicate key '__metadata__'");
    st = dk__json_expect(&ps->j, '{', "'{' starting __metadata__");
    if (st != DK_OK) return st;
    dk__json_ws(&ps->j);
    if (dk__json_at(&ps->j, '}')) { ps->j.p++; return DK_OK; }
    while (more) {
        st = dk__json_string(&ps->j, &k, &len);
        if (st != DK_OK) return st;
        st = dk__json_expect(&ps->j, ':', "':' after a __metadata__ key");
        if (st == DK_OK) {
            dk__json_ws(&ps->j);
            if (!dk__json_at(&ps->j, '"')) st = dk__json_error(&ps->j, "__metadata__ values must be strings");
        }
        if (st == DK_OK) st = dk__json_string(&ps->j, &v, &len);
        if (st != DK_OK) { free(k); return st; }
        if (ps->meta_count == ps->meta_cap) {
            int64_t ncap = ps->meta_cap ? ps->meta_cap * 2 : 8;
            char **grown = (char **)realloc(ps->meta, (size_t)ncap * 2 * sizeof(char *));
            if (!grown) { free(k); free(v); return dkst_oom(ps); }
            ps->meta = grown;
            ps->meta_cap = ncap;
        }
        ps->meta[2 * ps->meta_count] = k;
        ps->meta[2 * ps->meta_count + 1] = v;
        ps->meta_count++;
        st = dkst_next(ps, '}', &more, "',' or '}' in __metadata__");
        if (st != DK_OK) return st;
    }
    return DK_OK;
}

static dk_status dkst_parse_header(dkst_parse *ps) {
    dk_status st;
    int more = 1;
    char *key;
    size_t len;
    if (!dk__json_at(&ps->j, '{')) return dk__json_error(&ps->j, "the header must start with '{'");
    ps->j.p++;
    dk__json_ws(&ps->j);
    if (dk__json_at(&ps->j, '}')) more = 0, ps->j.p++;
    while (more) {
        st = dk__json_string(&ps->j, &key, &len);
        if (st != DK_OK) return st;
        st = dk__json_expect(&ps->j, ':', "':' after a key");
        if (st == DK_OK && strcmp(key, "__metadata__") == 0) {
            free(key);
            st = dkst_parse_meta(ps);
        } else if (st == DK_OK) {
            dkst_entry *e;
            if (ps->count == ps->cap) {
                int64_t ncap = ps->cap ? ps->cap * 2 : 16;
                dkst_entry *grown = (dkst_entry *)realloc(ps->entries, (size_t)ncap * sizeof(dkst_entry));
                if (!grown) { free(key); return dkst_oom(ps); }
                ps->entries = grown;
                ps->cap = ncap;
            }
            e = &ps->entries[ps->count++];
            memset(e, 0, sizeof *e);
            e->name = key;
            e->numel = 1;
            e->order = ps->count - 1;
            st = dkst_parse_entry(ps, e);
        } else {
            free(key);
        }
        if (st != DK_OK) return st;
        st = dkst_next(ps, '}', &more, "',' or '}' after a header entry");
        if (st != DK_OK) return st;
    }
    dk__json_ws(&ps->j);
    if (ps->j.p != ps->j.end) return dk__json_error(&ps->j, "trailing bytes after the header object");
    return DK_OK;
}

static int dkst_cmp_offset(const void *a, const void *b) {
    const dkst_entry *x = (const dkst_entry *)a, *y = (const dkst_entry *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int dkst_cmp_name(const void *a, const void *b) {
    return strcmp((*(dkst_entry *const *)a)->name, (*(dkst_entry *const *)b)->name);
}

static int dkst_cmp_meta(const void *a, const void *b) {
    return strcmp(((char *const *)a)[0], ((char *const *)b)[0]);
}

/* Tensors must lie in the data section and tile it exactly. */
static dk_status dkst_check_layout(dkst_parse *ps, uint64_t data_size) {
    uint64_t pos = 0;
    int64_t i;
    for (i = 0; i < ps->count; i++) {
        const dkst_entry *e = &ps->entries[i];
        if (e->end > data_size)
            return dk__fail(NULL, DK_ERR_FORMAT,
                            "%s: tensor '%.200s': data_offsets [%llu, %llu] run past the %llu-byte data section (truncated file?)",
                            ps->j.fn, e->name, (unsigned long long)e->begin, (unsigned long long)e->end,
                            (unsigned long long)data_size);
    }
    if (ps->count > 1) qsort(ps->entries, (size_t)ps->count, sizeof(dkst_entry), dkst_cmp_offset);
    for (i = 0; i < ps->count; i++) {
        const dkst_entry *e = &ps->entries[i];
        if (e->begin < pos)
            return dk__fail(NULL, DK_ERR_FORMAT, "%s: tensors '%.200s' and '%.200s' overlap (data_offsets [%llu, %llu] and [%llu, %llu])",
                            ps->j.fn, ps->entries[i - 1].name, e->name,
                            (unsigned long long)ps->entries[i - 1].begin, (unsigned long long)ps->entries[i - 1].end,
                            (unsigned long long)e->begin, (unsigned long long)e->end);
        if (e->begin > pos)
            return dk__fail(NULL, DK_ERR_FORMAT, "%s: gap in the data section: bytes [%llu, %llu) belong to no tensor (before '%.200s')",
                            ps->j.fn, (unsigned long long)pos, (unsigned long long)e->begin, e->name);
        pos = e->end;
    }
    if (pos != data_size)
        return dk__fail(NULL, DK_ERR_FORMAT, "%s: %llu trailing bytes after the last tensor (data section %llu bytes)",
                        ps->j.fn, (unsigned long long)(data_size - pos), (unsigned long long)data_size);
    return DK_OK;
}

static void dkst_free_parse(dkst_parse *ps) {
    int64_t i;
    for (i = 0; i < ps->count; i++) free(ps->entries[i].name);
    for (i = 0; i < 2 * ps->meta_count; i++) free(ps->meta[i]);
    free(ps->entries);
    free(ps->meta);
}

/* Give back the bytes of a file that failed to parse. */
static void dkst_release(const unsigned char *bytes, uint64_t size, unsigned char *owned, int mapped) {
    free(owned);
    if (mapped) dk__io_unmap_file(bytes, size);
}

/* Parse bytes.  They belong to the handle when owned (malloc'd) or mapped is set:
 * released with the handle or on failure. */
static dk_status dkst_open(const char *fn, const unsigned char *bytes, uint64_t size, unsigned char *owned,
                           int mapped, dk_safetensors **out) {
    dkst_parse ps;
    dk_safetensors *f = NULL;
    uint64_t hlen = 0;
    int64_t i;
    int k;
    dk_status st;

    memset(&ps, 0, sizeof ps);
    ps.j.fn = fn;
    if (size < 8) {
        dkst_release(bytes, size, owned, mapped);
        return dk__fail(NULL, DK_ERR_FORMAT, "%s: %llu bytes is too short for the 8-byte header length", fn,
                        (unsigned long long)size);
    }
    for (k = 7; k >= 0; k--) hlen = (hlen << 8) | bytes[k];
    if (hlen > size - 8) {
        dkst_release(bytes, size, owned, mapped);
        return dk__fail(NULL, DK_ERR_FORMAT, "%s: header length %llu exceeds the %llu bytes after it (truncated file?)",
                        fn, (unsigned long long)hlen, (unsigned long long)(size - 8));
    }
    if (hlen > DKST_MAX_HEADER) {
        dkst_release(bytes, size, owned, mapped);
        return dk__fail(NULL, DK_ERR_FORMAT, "%s: header length %llu exceeds the 100 MiB limit", fn,
                        (unsigned long long)hlen);
    }
    ps.j.begin = ps.j.p = bytes + 8;
    ps.j.end = bytes + 8 + hlen;
    st = dkst_parse_header(&ps);
    if (st == DK_OK) st = dkst_check_layout(&ps, size - 8 - hlen);
    if (st == DK_OK) {
        f = (dk_safetensors *)calloc(1, sizeof *f);
        if (f) f->by_name = (dkst_entry **)malloc((size_t)(ps.count ? ps.count : 1) * sizeof(dkst_entry *));
        if (!f || !f->by_name) {
            free(f);
            f = NULL;
            st = dkst_oom(&ps);
        }
    }
    if (st != DK_OK || !f) {
        dkst_free_parse(&ps);
        dkst_release(bytes, size, owned, mapped);
        return st;
    }
    for (i = 0; i < ps.count; i++) f->by_name[i] = &ps.entries[i];
    qsort(f->by_name, (size_t)ps.count, sizeof(dkst_entry *), dkst_cmp_name);
    if (ps.meta_count > 0) qsort(ps.meta, (size_t)ps.meta_count, 2 * sizeof(char *), dkst_cmp_meta);
    f->owned = owned;
    if (mapped) {
        f->mapped = bytes;
        f->mapped_size = size;
    }
    f->data = bytes + 8 + hlen;
    f->data_size = size - 8 - hlen;
    f->count = ps.count;
    f->entries = ps.entries;
    f->meta = ps.meta;
    f->meta_count = ps.meta_count;
    for (i = 1; i < ps.count; i++) {
        if (strcmp(f->by_name[i - 1]->name, f->by_name[i]->name) == 0) {
            st = dk__fail(NULL, DK_ERR_FORMAT, "%s: duplicate tensor name '%.200s'", fn, f->by_name[i]->name);
            break;
        }
    }
    for (i = 1; st == DK_OK && i < ps.meta_count; i++) {
        if (strcmp(ps.meta[2 * i - 2], ps.meta[2 * i]) == 0)
            st = dk__fail(NULL, DK_ERR_FORMAT, "%s: duplicate __metadata__ key '%.200s'", fn, ps.meta[2 * i]);
    }
    if (st != DK_OK) {
        dk_safetensors_close(f);
        return st;
    }
    *out = f;
    return DK_OK;
}

dk_status dk_safetensors_open(const char *path, dk_safetensors **out) {
    char fn[512];
    unsigned char *bytes;
    const unsigned char *mapped;
    uint64_t size;
    dk_status st;
    if (!out) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_safetensors_open: out must not be NULL");
    *out = NULL;
    snprintf(fn, sizeof fn, "dk_safetensors_open: '%.400s'", path ? path : "(null)");
    if (dk__io_map_file(path, &mapped, &size)) return dkst_open(fn, mapped, size, NULL, 1, out);
    st = dk__io_read_file("dk_safetensors_open", path, &bytes, &size);
    if (st != DK_OK) return st;
    return dkst_open(fn, bytes, size, bytes, 0, out);
}

dk_status dk_safetensors_open_memory(const void *data, uint64_t size, dk_safetensors **out) {
    if (!out) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_safetensors_open_memory: out must not be NULL");
    *out = NULL;
    if (!data && size > 0)
        return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_safetensors_open_memory: data is NULL but size is %llu",
                        (unsigned long long)size);
    return dkst_open("dk_safetensors_open_memory", (const unsigned char *)data, size, NULL, 0, out);
}

void dk_safetensors_close(dk_safetensors *f) {
    int64_t i;
    if (!f) return;
    for (i = 0; i < f->count; i++) free(f->entries[i].name);
    for (i = 0; i < 2 * f->meta_count; i++) free(f->meta[i]);
    free(f->entries);
    free(f->by_name);
    free(f->meta);
    free(f->owned);
    dk__io_unmap_file(f->mapped, f->mapped_size);
    free(f);
}

int64_t dk_safetensors_count(const dk_safetensors *f) {
    return f ? f->count : 0;
}

static dk_status dkst_fill(const char *fn, const dk_safetensors *f, const dkst_entry *e, dk_st_tensor *out) {
    int32_t d;
    memset(out, 0, sizeof *out);
    out->name = e->name;
    out->dtype_name = e->dtype_name;
    out->dtype = e->dtype;
    out->ndim = e->ndim > INT32_MAX ? INT32_MAX : (int32_t)e->ndim;
    for (d = 0; d < DK_ST_MAX_DIMS; d++) out->shape[d] = d < e->ndim ? e->shape[d] : 1;
    out->data = f->data + e->begin;
    out->nbytes = e->end - e->begin;
    if (e->dtype == 0)
        return dk__fail(NULL, DK_ERR_UNSUPPORTED, "%s: tensor '%.200s' has dtype %s; difkern uses F32, F16 or BF16",
                        fn, e->name, e->dtype_name);
    if (e->ndim > DK_ST_MAX_DIMS)
        return dk__fail(NULL, DK_ERR_UNSUPPORTED, "%s: tensor '%.200s' has %lld dims; at most %d are supported",
                        fn, e->name, (long long)e->ndim, DK_ST_MAX_DIMS);
    return DK_OK;
}

dk_status dk_safetensors_at(const dk_safetensors *f, int64_t i, dk_st_tensor *out) {
    if (!f || !out) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_safetensors_at: %s must not be NULL", !f ? "f" : "out");
    if (i < 0 || i >= f->count)
        return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_safetensors_at: index %lld out of range [0, %lld)",
                        (long long)i, (long long)f->count);
    return dkst_fill("dk_safetensors_at", f, &f->entries[i], out);
}

dk_status dk_safetensors_find(const dk_safetensors *f, const char *name, dk_st_tensor *out) {
    int64_t lo = 0, hi;
    if (!f || !name || !out)
        return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_safetensors_find: %s must not be NULL",
                        !f ? "f" : !name ? "name" : "out");
    hi = f->count;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int c = strcmp(f->by_name[mid]->name, name);
        if (c == 0) return dkst_fill("dk_safetensors_find", f, f->by_name[mid], out);
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_safetensors_find: tensor '%.400s' not found (the file has %lld tensors)",
                    name, (long long)f->count);
}

const char *dk_safetensors_metadata(const dk_safetensors *f, const char *key) {
    int64_t lo = 0, hi;
    if (!f || !key) return NULL;
    hi = f->meta_count;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int c = strcmp(f->meta[2 * mid], key);
        if (c == 0) return f->meta[2 * mid + 1];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

#undef DKST_MAX_HEADER
