/* 5-D views ([N, C, T, H, W] videos, two attention batch dims) on the ops that
 * take them: the rules of each op, the one layout GroupNorm cannot take
 * (DK_ERR_UNSUPPORTED with a message), and outputs left untouched on failure.
 * The results themselves are checked by the shared case list (video cases).
 * Argument: the backend (cpu, vulkan). */
#include <difkern.h>

#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                              \
    do {                                                              \
        if (!(cond)) {                                                \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);      \
            fprintf(stderr, __VA_ARGS__);                             \
            fprintf(stderr, "\n");                                    \
            failures++;                                               \
        }                                                             \
    } while (0)

static void expect(dk_context *ctx, dk_status st, dk_status want, const char *msg) {
    const char *got = dk_last_error(ctx);
    CHECK(st == want, "status %s, expected %s (%s)", dk_status_name(st), dk_status_name(want), got);
    CHECK(strstr(got, msg) != NULL, "message '%s' lacks '%s'", got, msg);
}

/* The first `bytes` of b still hold the fill pattern. */
static void untouched(dk_context *ctx, dk_buffer *b, uint64_t bytes) {
    static unsigned char host[1 << 16];
    uint64_t i;
    dk_status st = dk_buffer_download(ctx, b, 0, host, bytes);
    CHECK(st == DK_OK, "download: %s", dk_last_error(ctx));
    for (i = 0; i < bytes; i++)
        if (host[i] != 0x5a) {
            CHECK(0, "byte %llu of the output changed", (unsigned long long)i);
            return;
        }
}

int main(int argc, char **argv) {
    dk_context_options o;
    dk_context *ctx = NULL;
    dk_buffer *bx = NULL, *by = NULL;
    dk_tensor x, y, q, k, v, out;
    dk_group_norm_desc gn;
    dk_attention_desc ad;
    dk_status st;
    const char *backend = argc > 1 ? argv[1] : "cpu";
    dk_context_options_init(&o);
    o.backend = strcmp(backend, "vulkan") == 0 ? DK_BACKEND_VULKAN : DK_BACKEND_CPU;
    if (dk_context_create(&o, &ctx) != DK_OK) {
        fprintf(stderr, "no %s context: %s\n", backend, dk_last_error(NULL));
        return o.backend == DK_BACKEND_CPU ? 1 : 77;
    }
    if (dk_buffer_create(ctx, 1 << 16, &bx) != DK_OK || dk_buffer_create(ctx, 1 << 16, &by) != DK_OK) return 1;
    CHECK(dk_buffer_fill(ctx, bx, 0, 1 << 16, 0x3c003c00u) == DK_OK, "fill x");
    CHECK(dk_buffer_fill(ctx, by, 0, 1 << 16, 0x5a5a5a5au) == DK_OK, "fill y");

    /* GroupNorm over [1, 4, 3, 5, 6] whose T, H and W never merge: rows of 8 with
     * a gap, frames 3 rows apart that hold 5 */
    x = dk_tensor_ncdhw(bx, 0, DK_F16, 1, 4, 3, 5, 6);
    x.strides[3] = 8;  /* row pitch 8 > W */
    x.strides[2] = 64; /* frame pitch 64 > 5 rows * 8 */
    x.strides[1] = 3 * 64;
    x.strides[0] = 4 * 3 * 64;
    y = dk_tensor_ncdhw(by, 0, DK_F16, 1, 4, 3, 5, 6);
    dk_group_norm_desc_init(&gn);
    gn.groups = 2;
    st = dk_group_norm(ctx, &gn, &x, NULL, NULL, &y);
    expect(ctx, st, DK_ERR_UNSUPPORTED, "dk_group_norm: a 5-D x (and y) must let T merge with H, or H with W");
    dk_sync(ctx);
    untouched(ctx, by, 4 * 3 * 5 * 6 * 2);
    /* ... and the dense views work, in place too */
    x = dk_tensor_ncdhw(bx, 0, DK_F16, 1, 4, 3, 5, 6);
    st = dk_group_norm(ctx, &gn, &x, NULL, NULL, &x);
    CHECK(st == DK_OK, "dense 5-D group norm in place: %s", dk_last_error(ctx));

    /* a video GroupNorm needs x and y of one rank */
    y = dk_tensor_nchw(by, 0, DK_F16, 1, 4, 15, 6);
    st = dk_group_norm(ctx, &gn, &x, NULL, NULL, &y);
    expect(ctx, st, DK_ERR_INVALID_ARGUMENT, "dk_group_norm: y.shape");

    /* upsample: x and y of one rank, same N and C */
    x = dk_tensor_ndhwc(bx, 0, DK_F16, 1, 4, 2, 3, 3);
    y = dk_tensor_nhwc(by, 0, DK_F16, 1, 4, 6, 6);
    st = dk_upsample_nearest(ctx, &x, &y);
    expect(ctx, st, DK_ERR_INVALID_ARGUMENT, "dk_upsample_nearest: y.ndim (=4) must be 5 ([N, C, OT, OH, OW] like x)");
    y = dk_tensor_ndhwc(by, 0, DK_F16, 1, 5, 4, 6, 6);
    st = dk_upsample_nearest(ctx, &x, &y);
    expect(ctx, st, DK_ERR_INVALID_ARGUMENT, "dk_upsample_nearest: y.shape[1] (=5) must equal x.shape[1] (=4)");
    dk_sync(ctx);
    untouched(ctx, by, 5 * 4 * 6 * 6 * 2);

    /* attention with two batch dims: every tensor 5-D, B2 and the rest agree */
    {
        int64_t qs[5] = {1, 3, 2, 8, 16}, ks[5] = {1, 3, 2, 5, 16}, os[5] = {1, 3, 2, 8, 16};
        dk_attention_desc_init(&ad);
        q = dk_tensor_contiguous(bx, 0, DK_F16, 5, qs);
        k = dk_tensor_contiguous(bx, 4096, DK_F16, 5, ks);
        v = dk_tensor_contiguous(bx, 8192, DK_F16, 5, ks);
        out = dk_tensor_contiguous(by, 0, DK_F16, 5, os);
        st = dk_attention(ctx, &ad, &q, &k, &v, &out);
        CHECK(st == DK_OK, "5-D attention: %s", dk_last_error(ctx));
        k.ndim = 4;
        st = dk_attention(ctx, &ad, &q, &k, &v, &out);
        expect(ctx, st, DK_ERR_INVALID_ARGUMENT, "dk_attention: k.ndim (=4) must be 5 ([B, B2, H, Nkv, D] like q)");
        k = dk_tensor_contiguous(bx, 4096, DK_F16, 5, ks);
        k.shape[1] = 2;
        st = dk_attention(ctx, &ad, &q, &k, &v, &out);
        expect(ctx, st, DK_ERR_INVALID_ARGUMENT, "dk_attention: k.shape[1] (=2) must equal B2 = q.shape[1] (=3)");
        k.shape[1] = 3;
        k.shape[4] = 8;
        st = dk_attention(ctx, &ad, &q, &k, &v, &out);
        expect(ctx, st, DK_ERR_INVALID_ARGUMENT, "dk_attention: k.shape[4] (=8) must equal D = q.shape[4] (=16)");
    }

    dk_buffer_destroy(ctx, bx);
    dk_buffer_destroy(ctx, by);
    dk_context_destroy(ctx);
    if (failures) fprintf(stderr, "%d failures\n", failures);
    else printf("video views: all checks passed on %s\n", backend);
    return failures ? 1 : 0;
}
