/* Check files written by gen_files.py (Python, not difkern) against the expected
 * float32 values it stored.  Usage: readers_pycheck <manifest.txt>.  Each line is
 * tab-separated: count FILE N | meta FILE KEY VALUE | st FILE NAME DTYPE "NDIM D.." EXP |
 * sterr FILE NAME STATUS MSG | npy FILE "NDIM D.." EXP | npyerr FILE STATUS MSG. */
#include <difkern.h>
#include <difkern/safetensors.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int pc_fail = 0, pc_checks = 0;

#define PC_CHECK(cond, ...)                                                   \
    do {                                                                      \
        pc_checks++;                                                          \
        if (!(cond)) {                                                        \
            pc_fail++;                                                        \
            fprintf(stderr, "FAIL: ");                                        \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, "\n");                                            \
        }                                                                     \
    } while (0)

/* Raw little-endian float32 file -> malloc'd floats. */
static float *pc_load(const char *path, long *n) {
    FILE *f = fopen(path, "rb");
    float *v;
    long bytes, i;
    unsigned char *raw;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    raw = (unsigned char *)malloc((size_t)bytes + 4);
    v = (float *)malloc((size_t)bytes + 4);
    if (fread(raw, 1, (size_t)bytes, f) != (size_t)bytes) bytes = 0;
    fclose(f);
    for (i = 0; i < bytes / 4; i++) {
        uint32_t u = (uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 | (uint32_t)raw[4 * i + 2] << 16 |
                     (uint32_t)raw[4 * i + 3] << 24;
        memcpy(&v[i], &u, 4);
    }
    free(raw);
    *n = bytes / 4;
    return v;
}

/* Split line at tabs into at most max fields. */
static int pc_split(char *line, char **f, int max) {
    int n = 0;
    char *p = line;
    while (n < max) {
        f[n++] = p;
        p = strchr(p, '\t');
        if (!p) break;
        *p++ = '\0';
    }
    return n;
}

static int pc_shape(const char *s, int32_t ndim, const int64_t *shape) {
    char *end;
    long nd = strtol(s, &end, 10), i;
    if (nd != ndim) return 0;
    for (i = 0; i < nd; i++)
        if (strtoll(end, &end, 10) != shape[i]) return 0;
    return 1;
}

static int pc_equal(const float *a, const float *b, long n) {
    return n == 0 || memcmp(a, b, (size_t)n * sizeof(float)) == 0;
}

int main(int argc, char **argv) {
    char line[4096];
    char *f[8];
    FILE *man;
    if (argc < 2 || !(man = fopen(argv[1], "r"))) {
        fprintf(stderr, "usage: readers_pycheck <manifest.txt>\n");
        return 1;
    }
    while (fgets(line, sizeof line, man)) {
        int n, k;
        dk_safetensors *st = NULL;
        dk_st_tensor t;
        dk_status s;
        line[strcspn(line, "\n")] = '\0';
        for (k = 0; k < 8; k++) f[k] = NULL;
        n = pc_split(line, f, 8);
        if (n < 3) continue;
        if (strcmp(f[0], "npy") == 0 || strcmp(f[0], "npyerr") == 0) {
            float *v = NULL, *exp;
            int32_t nd;
            int64_t shp[DK_MAX_DIMS];
            long ne;
            s = dk_npy_read_f32(f[1], &v, &nd, shp);
            if (f[0][3] == 'e') {
                PC_CHECK(strcmp(dk_status_name(s), f[2]) == 0 && n > 3 && strstr(dk_last_error(NULL), f[3]),
                         "%s: got %s '%s', want %s '%s'", f[1], dk_status_name(s), dk_last_error(NULL), f[2], n > 3 ? f[3] : "");
            } else {
                PC_CHECK(s == DK_OK, "%s: %s", f[1], dk_last_error(NULL));
                exp = pc_load(f[3], &ne);
                if (s == DK_OK && exp) {
                    int64_t numel = 1;
                    int32_t d;
                    for (d = 0; d < nd; d++) numel *= shp[d];
                    PC_CHECK(pc_shape(f[2], nd, shp), "%s: shape differs (want %s)", f[1], f[2]);
                    PC_CHECK(numel == ne && pc_equal(v, exp, ne), "%s: values differ", f[1]);
                }
                free(exp);
            }
            dk_npy_free(v);
            continue;
        }
        s = dk_safetensors_open(f[1], &st);
        PC_CHECK(s == DK_OK, "%s: %s", f[1], dk_last_error(NULL));
        if (s != DK_OK) continue;
        if (strcmp(f[0], "count") == 0) {
            PC_CHECK(dk_safetensors_count(st) == atol(f[2]), "count %lld != %s", (long long)dk_safetensors_count(st), f[2]);
        } else if (strcmp(f[0], "meta") == 0 && n > 3) {
            const char *v = dk_safetensors_metadata(st, f[2]);
            PC_CHECK(v && strcmp(v, f[3]) == 0, "metadata %s = %s", f[2], v ? v : "(absent)");
        } else if (strcmp(f[0], "sterr") == 0 && n > 4) {
            s = dk_safetensors_find(st, f[2], &t);
            PC_CHECK(strcmp(dk_status_name(s), f[3]) == 0 && strstr(dk_last_error(NULL), f[4]), "%s: got %s '%s'", f[2],
                     dk_status_name(s), dk_last_error(NULL));
        } else if (strcmp(f[0], "st") == 0 && n > 5) {
            long ne;
            float *exp = pc_load(f[5], &ne), *got;
            s = dk_safetensors_find(st, f[2], &t);
            PC_CHECK(s == DK_OK, "%s: %s", f[2], dk_last_error(NULL));
            if (s == DK_OK && exp) {
                got = (float *)malloc((size_t)ne * 4 + 4);
                PC_CHECK(strcmp(t.dtype_name, f[3]) == 0, "%s: dtype %s != %s", f[2], t.dtype_name, f[3]);
                PC_CHECK(pc_shape(f[4], t.ndim, t.shape), "%s: shape differs (want %s)", f[2], f[4]);
                s = dk_st_tensor_copy(&t, DK_F32, got, (uint64_t)ne * 4);
                PC_CHECK(s == DK_OK && pc_equal(got, exp, ne), "%s: values differ (%s)", f[2], dk_last_error(NULL));
                free(got);
            }
            free(exp);
        }
        dk_safetensors_close(st);
    }
    fclose(man);
    printf("readers_pycheck: %d checks, %d failures\n", pc_checks, pc_fail);
    return pc_fail ? 1 : 0;
}
