/* Failure behaviour of the file layer: dk_safetensors_write keeps the existing
 * file when a write fails (a file-size limit, /dev/full) and keeps a symbolic
 * link a link; pipes and devices are read with a bounded size; a directory is
 * named as one; entries with more than DK_ST_MAX_DIMS dims get their byte size
 * checked. */
#define _XOPEN_SOURCE 700 /* lstat, symlink, mkfifo, fork, setenv, setrlimit */

#include "readers_test.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* The whole file at path into buf (cap bytes); its size, or -1. */
static long tr_slurp(const char *path, unsigned char *buf, long cap) {
    FILE *f = fopen(path, "rb");
    long n;
    if (!f) return -1;
    n = (long)fread(buf, 1, (size_t)cap, f);
    fclose(f);
    return n;
}

/* How many entries of dir start with prefix (left-over temporary files). */
static int tr_count_prefix(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
    closedir(d);
    return n;
}

static dk_st_tensor tr_tensor(const char *name, const float *data, int64_t n) {
    dk_st_tensor t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.dtype = DK_F32;
    t.ndim = 1;
    t.shape[0] = n;
    t.data = data;
    t.nbytes = (uint64_t)n * sizeof(float);
    return t;
}

static void tr_write_atomic(void) {
    static float big[4096], small[4] = {1, 2, 3, 4};
    char path[1024], link[1024];
    unsigned char before[256], after[256];
    long nbefore, nafter;
    struct rlimit old, lim;
    struct stat st;
    dk_st_tensor t;
    dk_status s;
    void (*prev)(int);
    snprintf(path, sizeof path, "%s/rel_atomic.safetensors", rt_dir);
    snprintf(link, sizeof link, "%s/rel_atomic_link.safetensors", rt_dir);
    remove(path);
    remove(link);
    t = tr_tensor("small", small, 4);
    rt_expect("write the original", dk_safetensors_write(path, &t, 1), DK_OK, NULL);
    nbefore = tr_slurp(path, before, sizeof before);
    RT_CHECK(nbefore > 16, "original file: %ld bytes", nbefore);

    /* A file-size limit below the new file's size: the write fails with the
     * OS's reason and the original stays whole (it used to be truncated, then
     * removed).  SIGXFSZ ignored: write returns EFBIG instead. */
    t = tr_tensor("big", big, 4096);
    prev = signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 4096;
    if (setrlimit(RLIMIT_FSIZE, &lim) == 0) {
        s = dk_safetensors_write(path, &t, 1);
        setrlimit(RLIMIT_FSIZE, &old);
        rt_expect("write over the file-size limit", s, DK_ERR_IO, "File too large");
        rt_expect("write over the file-size limit: the old file is kept", s, DK_ERR_IO, "unchanged");
        nafter = tr_slurp(path, after, sizeof after);
        RT_CHECK(nafter == nbefore && memcmp(before, after, (size_t)nbefore) == 0,
                 "the original file changed after a failed write (%ld bytes, was %ld)", nafter, nbefore);
        RT_CHECK(tr_count_prefix(rt_dir, ".rel_atomic.safetensors.tmp") == 0, "a temporary file was left behind");
    } else {
        printf("  (setrlimit RLIMIT_FSIZE failed: file-size case skipped)\n");
    }
    signal(SIGXFSZ, prev);

    /* Devices: /dev/full fails with its reason, /dev/null takes the bytes, a
     * directory is refused.  (/dev/full only when not root: a regressed writer
     * that removes its target on failure must not delete the device.) */
    if (geteuid() != 0 && access("/dev/full", W_OK) == 0)
        rt_expect("write to /dev/full", dk_safetensors_write("/dev/full", &t, 1), DK_ERR_IO, "No space left");
    if (access("/dev/null", W_OK) == 0)
        rt_expect("write to /dev/null", dk_safetensors_write("/dev/null", &t, 1), DK_OK, NULL);
    rt_expect("write to a directory", dk_safetensors_write(rt_dir, &t, 1), DK_ERR_IO, "is a directory");

    /* Through a symbolic link: the target is replaced, the link stays a link;
     * a failed write keeps both. */
    if (symlink("rel_atomic.safetensors", link) == 0) {
        t = tr_tensor("small", small, 2);
        rt_expect("write through a symlink", dk_safetensors_write(link, &t, 1), DK_OK, NULL);
        RT_CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "the symlink was replaced by a file");
        nafter = tr_slurp(path, after, sizeof after);
        RT_CHECK(nafter > 0 && nafter < nbefore, "the link's target was not rewritten (%ld bytes)", nafter);
        nbefore = tr_slurp(path, before, sizeof before);
        t = tr_tensor("big", big, 4096);
        prev = signal(SIGXFSZ, SIG_IGN);
        lim = old;
        lim.rlim_cur = 4096;
        if (setrlimit(RLIMIT_FSIZE, &lim) == 0) {
            s = dk_safetensors_write(link, &t, 1);
            setrlimit(RLIMIT_FSIZE, &old);
            rt_expect("failed write through a symlink", s, DK_ERR_IO, "File too large");
            RT_CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "a failed write removed the symlink");
            nafter = tr_slurp(path, after, sizeof after);
            RT_CHECK(nafter == nbefore && memcmp(before, after, (size_t)nbefore) == 0,
                     "a failed write through the symlink changed its target");
        }
        signal(SIGXFSZ, prev);
        remove(link);
    } else {
        printf("  (symlink failed: %s; symlink case skipped)\n", strerror(errno));
    }
    remove(path);
}

static void tr_bounded_reads(void) {
    char fifo[1024];
    float *data = NULL;
    int32_t ndim = 0;
    int64_t shape[DK_MAX_DIMS];
    dk_safetensors *f = NULL;
    pid_t pid;
    /* A directory says so (it used to be "read error after 0 bytes"). */
    rt_expect("npy of a directory", dk_npy_read_f32(rt_dir, &data, &ndim, shape), DK_ERR_IO, "is a directory");
    rt_expect("safetensors of a directory", dk_safetensors_open(rt_dir, &f), DK_ERR_IO, "is a directory");
    /* /dev/zero never ends: read up to the limit, then refused (it used to be
     * read until allocation failed). */
    if (access("/dev/zero", R_OK) == 0) {
        setenv("DIFKERN_IO_STREAM_LIMIT", "1000000", 1);
        rt_expect("npy of /dev/zero", dk_npy_read_f32("/dev/zero", &data, &ndim, shape), DK_ERR_IO,
                  "not a regular file");
        rt_expect("safetensors of /dev/zero", dk_safetensors_open("/dev/zero", &f), DK_ERR_IO, "1000000 bytes");
        unsetenv("DIFKERN_IO_STREAM_LIMIT");
    }
    /* A FIFO with a small .npy in it is read whole. */
    snprintf(fifo, sizeof fifo, "%s/rel_fifo.npy", rt_dir);
    remove(fifo);
    if (mkfifo(fifo, 0600) != 0) {
        printf("  (mkfifo failed: %s; FIFO case skipped)\n", strerror(errno));
        return;
    }
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        static const char head[] = "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
        unsigned char buf[192];
        float v[2] = {1.5f, -2.0f};
        FILE *w = fopen(fifo, "wb");
        size_t n = sizeof head - 1;
        if (!w) _exit(1);
        memcpy(buf, head, n);
        while (n < 10 + 0x76 - 1) buf[n++] = ' ';
        buf[n++] = '\n';
        memcpy(buf + n, v, sizeof v);
        n += sizeof v;
        fwrite(buf, 1, n, w);
        fclose(w);
        _exit(0);
    }
    if (pid > 0) {
        int status = 0;
        dk_status s = dk_npy_read_f32(fifo, &data, &ndim, shape);
        waitpid(pid, &status, 0);
        rt_expect("npy through a FIFO", s, DK_OK, NULL);
        RT_CHECK(s != DK_OK || (ndim == 1 && shape[0] == 2 && data[0] == 1.5f && data[1] == -2.0f),
                 "FIFO .npy contents");
        if (s == DK_OK) dk_npy_free(data);
    }
    remove(fifo);
}

/* A header (padded to a multiple of 8) plus datalen zero bytes. */
static unsigned char *tr_blob(const char *header, size_t datalen, uint64_t *size) {
    size_t h = strlen(header), hp = (h + 7) / 8 * 8, i;
    unsigned char *b = (unsigned char *)calloc(1, 8 + hp + datalen + 1);
    if (!b) return NULL;
    for (i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)hp >> (8 * i));
    memcpy(b + 8, header, h);
    memset(b + 8 + h, ' ', hp - h);
    *size = 8 + hp + datalen;
    return b;
}

static void tr_deep_sizes(void) {
    /* 9 dims of 2 F32 elements: 2048 bytes; the offsets claim 8. */
    static const char *bad =
        "{\"deep\":{\"dtype\":\"F32\",\"shape\":[2,2,2,2,2,2,2,2,2],\"data_offsets\":[0,8]}}";
    static const char *good =
        "{\"deep\":{\"dtype\":\"F32\",\"shape\":[2,2,2,2,2,2,2,2,2],\"data_offsets\":[0,2048]}}";
    static const char *zero =
        "{\"deep\":{\"dtype\":\"F32\",\"shape\":[2,2,2,2,2,2,2,2,0],\"data_offsets\":[0,4]}}";
    uint64_t size;
    dk_safetensors *f = NULL;
    dk_st_tensor t;
    unsigned char *b = tr_blob(bad, 8, &size);
    rt_expect("9 dims, wrong byte size", dk_safetensors_open_memory(b, size, &f), DK_ERR_FORMAT, "need 2048");
    dk_safetensors_close(f);
    f = NULL;
    free(b);
    b = tr_blob(zero, 4, &size);
    rt_expect("9 dims, a 0 dim past the 8th, 4 bytes", dk_safetensors_open_memory(b, size, &f), DK_ERR_FORMAT, "need 0");
    dk_safetensors_close(f);
    f = NULL;
    free(b);
    b = tr_blob(good, 2048, &size);
    rt_expect("9 dims, right byte size", dk_safetensors_open_memory(b, size, &f), DK_OK, NULL);
    if (f) {
        rt_expect("9 dims listed but unsupported", dk_safetensors_at(f, 0, &t), DK_ERR_UNSUPPORTED, "has 9 dims");
        RT_CHECK(t.nbytes == 2048, "9-dim entry nbytes %llu", (unsigned long long)t.nbytes);
    }
    dk_safetensors_close(f);
    free(b);
}

void test_reliability(void) {
    tr_write_atomic();
    tr_bounded_reads();
    tr_deep_sizes();
}
