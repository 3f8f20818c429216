/* dk_host_alloc / dk_host_free on one backend (argv[1]: cpu, vulkan, hip):
 * bad arguments get a status and a message; uploads from and downloads into
 * host blocks (whole, interior ranges, the last bytes, a block's neighbour in
 * ordinary memory) move the right bytes and keep their synchronous meaning;
 * blocks left allocated are freed by dk_context_destroy (ASan checks leaks).
 * Exit 77 (skipped) when the backend is not on this machine. */
#include "backend_test.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void th_pattern(unsigned char *p, size_t n, unsigned seed) {
    size_t i;
    for (i = 0; i < n; i++) p[i] = (unsigned char)((i * 131u + seed * 7u + (i >> 8)) & 0xffu);
}

static void th_bad_arguments(dk_context *ctx) {
    void *p = (void *)1;
    int local = 0;
    dk_status st = dk_host_alloc(NULL, 64, &p);
    BT_CHECK(st == DK_ERR_INVALID_ARGUMENT && strstr(dk_last_error(NULL), "ctx must not be NULL"),
             "NULL ctx: %s '%s'", dk_status_name(st), dk_last_error(NULL));
    st = dk_host_alloc(ctx, 0, &p);
    BT_CHECK(st == DK_ERR_INVALID_ARGUMENT && p == NULL && strstr(dk_last_error(ctx), "size (=0)"),
             "size 0: %s '%s'", dk_status_name(st), dk_last_error(ctx));
    st = dk_host_alloc(ctx, (uint64_t)1 << 60, &p);
    BT_CHECK(st == DK_ERR_INVALID_ARGUMENT && p == NULL, "size 2^60: %s", dk_status_name(st));
    st = dk_host_alloc(ctx, 64, NULL);
    BT_CHECK(st == DK_ERR_INVALID_ARGUMENT && strstr(dk_last_error(ctx), "out must not be NULL"), "out NULL: %s",
             dk_status_name(st));
    st = dk_host_free(ctx, &local);
    BT_CHECK(st == DK_ERR_INVALID_ARGUMENT && strstr(dk_last_error(ctx), "not a live dk_host_alloc block"),
             "free of a stack address: %s '%s'", dk_status_name(st), dk_last_error(ctx));
    BT_CHECK(dk_host_free(ctx, NULL) == DK_OK, "free(NULL): %s", dk_last_error(ctx));
    BT_CHECK(dk_host_free(NULL, NULL) == DK_ERR_INVALID_ARGUMENT, "free with a NULL ctx");
}

static void th_transfers(dk_context *ctx, size_t n) {
    unsigned char *a = NULL, *b = NULL, *plain = (unsigned char *)malloc(n);
    dk_buffer *buf = NULL;
    dk_status st;
    st = dk_host_alloc(ctx, n, (void **)&a);
    if (st == DK_OK) st = dk_host_alloc(ctx, n, (void **)&b);
    if (st == DK_OK) st = dk_buffer_create(ctx, n + 256, &buf);
    BT_CHECK(st == DK_OK && plain, "setup: %s", dk_last_error(ctx));
    if (st != DK_OK || !plain) {
        free(plain);
        dk_buffer_destroy(ctx, buf);
        return;
    }
    BT_CHECK(((uintptr_t)a % 64) == 0 && ((uintptr_t)b % 64) == 0, "blocks not 64-byte aligned");

    /* whole block up, whole block down; the source changes right after the upload */
    th_pattern(a, n, 1);
    memset(b, 0xee, n);
    st = dk_buffer_upload(ctx, buf, 0, a, n);
    memset(a, 0x55, n);
    if (st == DK_OK) st = dk_buffer_download(ctx, buf, 0, b, n);
    th_pattern(a, n, 1);
    BT_CHECK(st == DK_OK && memcmp(a, b, n) == 0, "whole block round trip: %s", dk_last_error(ctx));

    /* interior ranges: from a + 1000 to buffer offset 256, back into b + 333 */
    th_pattern(a, n, 2);
    memset(b, 0xee, n);
    st = dk_buffer_upload(ctx, buf, 256, a + 1000, 70000);
    if (st == DK_OK) st = dk_buffer_download(ctx, buf, 256, b + 333, 70000);
    BT_CHECK(st == DK_OK && memcmp(a + 1000, b + 333, 70000) == 0, "interior round trip: %s", dk_last_error(ctx));
    BT_CHECK(b[332] == 0xee && b[333 + 70000] == 0xee, "interior download wrote outside its range");

    /* the block's last bytes; then ordinary memory on one side */
    st = dk_buffer_upload(ctx, buf, 0, a + n - 4096, 4096);
    if (st == DK_OK) st = dk_buffer_download(ctx, buf, 0, plain, 4096);
    BT_CHECK(st == DK_OK && memcmp(a + n - 4096, plain, 4096) == 0, "tail range: %s", dk_last_error(ctx));
    th_pattern(plain, n, 3);
    st = dk_buffer_upload(ctx, buf, 0, plain, n);
    if (st == DK_OK) st = dk_buffer_download(ctx, buf, 0, b, n);
    BT_CHECK(st == DK_OK && memcmp(plain, b, n) == 0, "ordinary -> pinned: %s", dk_last_error(ctx));

    /* a freed block is gone; b stays for dk_context_destroy */
    BT_CHECK(dk_host_free(ctx, a) == DK_OK, "free: %s", dk_last_error(ctx));
    st = dk_host_free(ctx, a);
    BT_CHECK(st == DK_ERR_INVALID_ARGUMENT, "double free: %s", dk_status_name(st));
    st = dk_host_free(ctx, b + 64);
    BT_CHECK(st == DK_ERR_INVALID_ARGUMENT, "free of an interior pointer: %s", dk_status_name(st));
    /* Vulkan with the validation layer: its messages come back from dk_sync */
    BT_CHECK(dk_sync(ctx) == DK_OK, "dk_sync: %s", dk_last_error(ctx));
    dk_buffer_destroy(ctx, buf);
    free(plain);
}

int main(int argc, char **argv) {
    dk_context_options opt;
    dk_context *ctx = NULL;
    const char *name;
    const int rc = bt_context(argc, argv, &opt, &ctx, &name);
    if (rc) return rc;
    th_bad_arguments(ctx);
    th_transfers(ctx, (size_t)3 << 20 | 3); /* larger than one staging chunk, odd */
    th_transfers(ctx, (size_t)9 << 20 | 5); /* HIP: a block difkern allocates and registers */
    BT_CHECK(dk_sync(ctx) == DK_OK, "dk_sync: %s", dk_last_error(ctx));
    dk_context_destroy(ctx);
    printf("host memory on %s: %d failures\n", name, bt_failures);
    return bt_failures ? 1 : 0;
}
