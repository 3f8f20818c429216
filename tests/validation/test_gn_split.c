/* GroupNorm's work split for the GPU backends (dk__gn_split, src/norm_plan.c):
 * every unit covered once, NHWC chunks in whole steps of the workgroup's
 * pixels, at most 4096 chunks, and the chunk counts the VAE's tensors get
 * (statistics chunks of up to 128 K elements while 512 workgroups remain; the
 * normalize pass keeps 32 K).  The backends' kernels are checked on these
 * splits by the case list; the large tensors' splits only here. */
#include "../../src/plan.h"
#include "../check.h"

/* runs of `run` covering `units` exactly once: the last run starts inside */
static int covers(int64_t runs, int64_t run, int64_t units) {
    return runs >= 1 && runs <= 4096 && run >= 1 && runs * run >= units && (runs - 1) * run < units;
}

static void check_shape(int mode, int64_t n, int64_t c, int64_t h, int64_t w, int32_t groups, int64_t vw) {
    const int64_t shape[4] = {n, c, h, w}, threads = 256, hw = h * w;
    dk_gn_split s;
    dk__gn_split(mode, shape, groups, vw, threads, &s);
    if (mode == 2) {
        const int64_t rows = threads / (c / vw);
        CHECK(covers(s.chunks, s.chunk, hw) && s.chunk % rows == 0, "mode 2 [%lld,%lld,%lld,%lld]: stats %lld x %lld",
              (long long)n, (long long)c, (long long)h, (long long)w, (long long)s.chunks, (long long)s.chunk);
        CHECK(covers(s.apply_chunks, s.apply_chunk, hw) && s.apply_chunk % rows == 0,
              "mode 2 [%lld,%lld,%lld,%lld]: apply %lld x %lld", (long long)n, (long long)c, (long long)h, (long long)w,
              (long long)s.apply_chunks, (long long)s.apply_chunk);
        CHECK(s.chunks <= s.apply_chunks, "statistics chunks %lld > apply chunks %lld", (long long)s.chunks,
              (long long)s.apply_chunks);
    } else {
        const int64_t len = c / groups * hw, units = mode == 1 ? len / vw : len;
        CHECK(covers(s.chunks, s.chunk, units), "mode %d [%lld,%lld,%lld,%lld] g%d: %lld x %lld", mode, (long long)n,
              (long long)c, (long long)h, (long long)w, (int)groups, (long long)s.chunks, (long long)s.chunk);
    }
}

static void check_counts(int64_t c, int64_t side, int64_t stats, int64_t apply) {
    const int64_t shape[4] = {1, c, side, side};
    dk_gn_split s;
    dk__gn_split(2, shape, 32, 8, 256, &s);
    CHECK(s.chunks == stats && s.apply_chunks == apply, "f16 NHWC %lld ch @ %lld: %lld / %lld chunks, want %lld / %lld",
          (long long)c, (long long)side, (long long)s.chunks, (long long)s.apply_chunks, (long long)stats,
          (long long)apply);
}

int main(void) {
    static const int64_t chans[] = {8, 32, 96, 128, 256, 512, 2048};
    static const int64_t sides[][2] = {{1, 1}, {3, 5}, {64, 72}, {128, 128}, {257, 129}, {512, 512}, {1024, 1024},
                                       {2048, 2048}, {4096, 1023}};
    size_t i, j;
    int mode;
    for (mode = 0; mode < 3; mode++)
        for (i = 0; i < sizeof chans / sizeof chans[0]; i++)
            for (j = 0; j < sizeof sides / sizeof sides[0]; j++) {
                int64_t vw;
                for (vw = 4; vw <= 8; vw += 4) { /* f32, 16-bit */
                    /* the vector modes' conditions (dk__gn_vector_mode): a workgroup holds a
                     * pixel's vectors; NCHW planes of whole vectors */
                    if (mode == 2 && (chans[i] % vw || chans[i] / vw > 256)) continue;
                    if (mode == 1 && sides[j][0] * sides[j][1] % vw) continue;
                    check_shape(mode, vw == 4 ? 1 : 2, chans[i], sides[j][0], sides[j][1], chans[i] >= 32 ? 32 : 4, vw);
                }
            }
    /* the VAEs' tensors: 128 K-element statistics chunks at 1024x1024, at least 512 at 512 and 256 */
    check_counts(128, 1024, 1024, 4096);
    check_counts(256, 1024, 2048, 4096);
    check_counts(256, 512, 512, 2048);
    check_counts(512, 256, 512, 1024);
    check_counts(512, 128, 256, 256);
    check_counts(128, 64, 16, 16);
    /* the VAEs' NaN/Inf tests (one group per channel, element by element): a 4-channel
     * 128x128 latent in 64 chunks of 256 per channel, a 3-channel 1024x1024 image in 171 */
    {
        const int64_t lat[4] = {1, 4, 128, 128}, img[4] = {1, 3, 1024, 1024};
        dk_gn_split s;
        dk__gn_split(0, lat, 4, 8, 256, &s);
        CHECK(s.chunks == 64 && s.chunk == 256, "latent test: %lld x %lld", (long long)s.chunks, (long long)s.chunk);
        dk__gn_split(0, img, 3, 8, 256, &s);
        CHECK(s.chunks == 171 && s.chunks * s.chunk >= 1024 * 1024, "image test: %lld x %lld", (long long)s.chunks,
              (long long)s.chunk);
    }
    printf("gn_split: %s (%d failures)\n", failures ? "FAIL" : "ok", failures);
    return failures ? 1 : 0;
}
