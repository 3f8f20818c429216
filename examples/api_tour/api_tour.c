/* A complete small difkern program (the README's API tour): a 3x3 conv with a
 * fused bias + SiLU epilogue, then GroupNorm + SiLU in place, on whatever
 * backend the machine has.  Built by meson as examples/api_tour and run as a
 * test, so the README's code stays true. */
#include <difkern.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                       \
    do {                                                                                  \
        dk_status st_ = (call);                                                           \
        if (st_ != DK_OK) {                                                               \
            fprintf(stderr, "%s failed: %s: %s\n", #call, dk_status_name(st_), dk_last_error(ctx)); \
            return 1;                                                                     \
        }                                                                                 \
    } while (0)

int main(void) {
    enum { N = 1, CIN = 32, COUT = 64, H = 16, W = 16 };
    static float x[N * H * W * CIN], w[COUT * CIN * 3 * 3], b[COUT], y[N * H * W * COUT];
    dk_context *ctx = NULL;
    dk_buffer *bx, *bw, *bb, *by;
    dk_tensor tx, tw, tb, ty;
    dk_conv2d_desc conv;
    dk_group_norm_desc gn;
    int64_t wshape[4] = {COUT, CIN, 3, 3}, bshape[1] = {COUT};
    double sum = 0.0;
    int i;

    for (i = 0; i < N * H * W * CIN; i++) x[i] = sinf(0.1f * (float)i);
    for (i = 0; i < COUT * CIN * 9; i++) w[i] = cosf(0.37f * (float)i) * 0.05f;
    for (i = 0; i < COUT; i++) b[i] = 0.01f * (float)i;

    /* AUTO: HIP, then Vulkan, then CPU (DIFKERN_BACKEND=cpu|vulkan|hip overrides). */
    if (dk_context_create(NULL, &ctx) != DK_OK) {
        fprintf(stderr, "no context: %s\n", dk_last_error(NULL));
        return 1;
    }
    printf("%s\n", dk_context_describe(ctx));

    CHECK(dk_buffer_create(ctx, sizeof x, &bx));
    CHECK(dk_buffer_create(ctx, sizeof w, &bw));
    CHECK(dk_buffer_create(ctx, sizeof b, &bb));
    CHECK(dk_buffer_create(ctx, sizeof y, &by));
    CHECK(dk_buffer_upload(ctx, bx, 0, x, sizeof x));
    CHECK(dk_buffer_upload(ctx, bw, 0, w, sizeof w));
    CHECK(dk_buffer_upload(ctx, bb, 0, b, sizeof b));

    /* Activations NHWC, weights in PyTorch's [Cout, Cin, KH, KW]. */
    tx = dk_tensor_nhwc(bx, 0, DK_F32, N, CIN, H, W);
    ty = dk_tensor_nhwc(by, 0, DK_F32, N, COUT, H, W);
    tw = dk_tensor_contiguous(bw, 0, DK_F32, 4, wshape);
    tb = dk_tensor_contiguous(bb, 0, DK_F32, 1, bshape);

    dk_conv2d_desc_init(&conv);
    conv.pad_h = conv.pad_w = 1;
    conv.activation = DK_ACT_SILU;               /* y = silu(conv(x, w) + b) */
    CHECK(dk_conv2d(ctx, &conv, &tx, &tw, &tb, NULL, &ty));

    dk_group_norm_desc_init(&gn);                /* 32 groups, eps 1e-5 */
    gn.activation = DK_ACT_SILU;
    CHECK(dk_group_norm(ctx, &gn, &ty, NULL, NULL, &ty)); /* in place, no affine */

    CHECK(dk_sync(ctx));                         /* ops run asynchronously until here */
    CHECK(dk_buffer_download(ctx, by, 0, y, sizeof y));
    for (i = 0; i < N * H * W * COUT; i++) sum += y[i];
    printf("y[0..3] = %.5f %.5f %.5f %.5f, mean %.5f\n", y[0], y[1], y[2], y[3], sum / (N * H * W * COUT));

    /* Bad input is a status and a message, never a crash: */
    conv.groups = 3;
    if (dk_conv2d(ctx, &conv, &tx, &tw, &tb, NULL, &ty) == DK_ERR_INVALID_ARGUMENT)
        printf("as expected: %s\n", dk_last_error(ctx));

    dk_buffer_destroy(ctx, bx);
    dk_buffer_destroy(ctx, bw);
    dk_buffer_destroy(ctx, bb);
    dk_buffer_destroy(ctx, by);
    dk_context_destroy(ctx);
    return isfinite(sum) ? 0 : 1;
}
