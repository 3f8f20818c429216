/* Standalone driver for the fuzz targets, so that any compiler (no libFuzzer)
 * can run a target as a regression test:
 *
 *   fuzz_X_regress [-r N] [-s SEED] PATH...
 *
 * Every PATH is a file (one input) or a directory (each regular file in it).
 * -r N also runs N pseudo-random inputs (lengths 0..511, from SEED, default 1),
 * which cover more than the seeds without a fuzzing engine.  A crash or a
 * sanitizer report fails the test; so does finding no input at all.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long fzmain_count = 0;

static int fzmain_run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    long n;
    if (!f) return fprintf(stderr, "cannot open %s\n", path), 1;
    if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
        fclose(f);
        return fprintf(stderr, "cannot size %s\n", path), 1;
    }
    buf = (unsigned char *)malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        return fprintf(stderr, "cannot read %s\n", path), 1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    fzmain_count++;
    return 0;
}

static int fzmain_run_path(const char *path) {
    struct stat st;
    DIR *d;
    struct dirent *e;
    int bad = 0;
    if (stat(path, &st)) return fprintf(stderr, "no such file or directory: %s\n", path), 1;
    if (!S_ISDIR(st.st_mode)) return fzmain_run_file(path);
    d = opendir(path);
    if (!d) return fprintf(stderr, "cannot list %s\n", path), 1;
    while ((e = readdir(d)) != NULL) {
        char full[4096];
        struct stat fst;
        if (e->d_name[0] == '.') continue;
        snprintf(full, sizeof full, "%s/%s", path, e->d_name);
        if (stat(full, &fst) == 0 && S_ISREG(fst.st_mode)) bad |= fzmain_run_file(full);
    }
    closedir(d);
    return bad;
}

int main(int argc, char **argv) {
    long random_runs = 0, i;
    uint64_t seed = 1;
    int bad = 0, a;
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "-r") && a + 1 < argc) random_runs = atol(argv[++a]);
        else if (!strcmp(argv[a], "-s") && a + 1 < argc) seed = strtoull(argv[++a], NULL, 10);
        else bad |= fzmain_run_path(argv[a]);
    }
    for (i = 0; i < random_runs; i++) {
        unsigned char buf[512];
        size_t n, j;
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        n = (size_t)(seed >> 33) % sizeof buf;
        for (j = 0; j < n; j++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            buf[j] = (unsigned char)(seed >> 56);
        }
        LLVMFuzzerTestOneInput(buf, n);
        fzmain_count++;
    }
    printf("%ld inputs ran\n", fzmain_count);
    if (fzmain_count == 0) return fprintf(stderr, "no inputs\n"), 1;
    return bad;
}
