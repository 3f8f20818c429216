/* dk_conv3d and dk_conv3d_chunk on one backend (argv[1]: cpu, vulkan, hip):
 * - every validation rule: status DK_ERR_INVALID_ARGUMENT, its message, the
 *   output untouched;
 * - the lowering's decisions (dk__conv3d_plan): path, direct frames, frame
 *   groups under a cap, the weight copy;
 * - chunked decoding equals the whole clip: a 9-frame clip through a causal
 *   3x3x3 conv and a 3x1x1 time conv in chunks of 1, 4 and 4 frames, each
 *   chunk's cache made with dk_convert on 5-D views as include/difkern.h
 *   documents, against one dk_conv3d over the clip (NCDHW and NDHWC, f32 and
 *   f16);
 * - (argv[2] "memory") a conv whose staged frames exceed DK_CONV3D_SCRATCH_CAP
 *   keeps dk_memory_usage's peak within the cap, dk_release_scratch gives the
 *   scratch back, and the frames of the last group are right.
 * - the staged channels padded to a multiple (dk__conv3d's) change nothing but the scratch;
 * - a conv the backend reads in place (HIP's fast kernels) equals the staged one,
 *   and on HIP it was taken;
 * Exit 77 (skipped) when the backend is not on this machine. */
#include "backend_test.h"
#include "../../src/plan.h"
#include "../../backends/backend.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TC_BUF 65536u
#define TC_POISON 0x7fc07fc0u

/* ------------------------------------------------------------------ rules */

enum { TX = 0, TW = 1, TB = 2, TR = 3, TY = 4, TCACHE = 5, TN = 6 };

typedef struct tc_call {
    dk_conv3d_desc d;
    dk_tensor t[TN];
    int present[TN];
    int chunk, desc_null;
} tc_call;

static dk_buffer *tc_bufs[TN];

/* A valid call: x [1, 4, 3, 5, 6], w [6, 4, 3, 3, 3], causal (pad_front 2),
 * spatial pads 1 -> y [1, 6, 3, 5, 6]; chunk: a cache [1, 4, 2, 5, 6]. */
static void tc_base(tc_call *c, int chunk) {
    static const int64_t xs[5] = {1, 4, 3, 5, 6}, ws[5] = {6, 4, 3, 3, 3}, bs[1] = {6}, ys[5] = {1, 6, 3, 5, 6},
                         cs[5] = {1, 4, 2, 5, 6};
    memset(c, 0, sizeof *c);
    dk_conv3d_desc_init(&c->d);
    c->d.pad_front = 2;
    c->d.pad_top = c->d.pad_bottom = c->d.pad_left = c->d.pad_right = 1;
    c->chunk = chunk;
    c->t[TX] = dk_tensor_contiguous(tc_bufs[TX], 0, DK_F32, 5, xs);
    c->t[TW] = dk_tensor_contiguous(tc_bufs[TW], 0, DK_F32, 5, ws);
    c->t[TB] = dk_tensor_contiguous(tc_bufs[TB], 0, DK_F32, 1, bs);
    c->t[TR] = dk_tensor_contiguous(tc_bufs[TR], 0, DK_F32, 5, ys);
    c->t[TY] = dk_tensor_contiguous(tc_bufs[TY], 0, DK_F32, 5, ys);
    c->t[TCACHE] = dk_tensor_contiguous(tc_bufs[TCACHE], 0, DK_F32, 5, cs);
    c->present[TX] = c->present[TW] = c->present[TB] = c->present[TR] = c->present[TY] = 1;
    c->present[TCACHE] = chunk;
}

static const dk_tensor *tc_arg(const tc_call *c, int i) { return c->present[i] ? &c->t[i] : NULL; }

static dk_status tc_run(dk_context *ctx, const tc_call *c) {
    const dk_conv3d_desc *d = c->desc_null ? NULL : &c->d;
    if (c->chunk)
        return dk_conv3d_chunk(ctx, d, tc_arg(c, TCACHE), tc_arg(c, TX), tc_arg(c, TW), tc_arg(c, TB), tc_arg(c, TR),
                               tc_arg(c, TY));
    return dk_conv3d(ctx, d, tc_arg(c, TX), tc_arg(c, TW), tc_arg(c, TB), tc_arg(c, TR), tc_arg(c, TY));
}

typedef void (*tc_mut)(tc_call *c);
#define MUT(name, ...) static void name(tc_call *c) { __VA_ARGS__; }
static void tc_shape(dk_tensor *t, int dim, int64_t v) {
    t->shape[dim] = v;
    *t = dk_tensor_contiguous(t->buffer, t->offset, t->dtype, t->ndim, t->shape);
}
MUT(m_desc_null, c->desc_null = 1)
MUT(m_x_null, c->present[TX] = 0)
MUT(m_w_null, c->present[TW] = 0)
MUT(m_y_null, c->present[TY] = 0)
MUT(m_stride_t, c->d.stride_t = 0)
MUT(m_stride_h, c->d.stride_h = 0)
MUT(m_stride_w, c->d.stride_w = -2)
MUT(m_dil_t, c->d.dilation_t = 0)
MUT(m_dil_h, c->d.dilation_h = 0)
MUT(m_dil_w, c->d.dilation_w = 0)
MUT(m_pad_front, c->d.pad_front = -1)
MUT(m_pad_back, c->d.pad_back = -1)
MUT(m_pad_top, c->d.pad_top = -1)
MUT(m_pad_bottom, c->d.pad_bottom = -1)
MUT(m_pad_left, c->d.pad_left = -1)
MUT(m_pad_right, c->d.pad_right = -3)
MUT(m_groups, c->d.groups = 0)
MUT(m_act, c->d.activation = (dk_activation)99)
MUT(m_post_act, c->d.post_activation = (dk_activation)6)
MUT(m_oscale, c->d.output_scale = INFINITY)
MUT(m_rscale, c->d.residual_scale = NAN)
MUT(m_x_ndim, c->t[TX].ndim = 4)
MUT(m_w_ndim, c->t[TW].ndim = 4)
MUT(m_y_ndim, c->t[TY].ndim = 4)
MUT(m_x_dtype, c->t[TW].dtype = DK_F16)
MUT(m_y_dtype, c->t[TY].dtype = DK_BF16)
MUT(m_groups_cin, c->d.groups = 3)
MUT(m_groups_cout, c->d.groups = 4; tc_shape(&c->t[TW], 1, 1))
MUT(m_w_cin, tc_shape(&c->t[TW], 1, 3))
MUT(m_t_small, tc_shape(&c->t[TW], 2, 6))
MUT(m_y_n, tc_shape(&c->t[TY], 0, 2))
MUT(m_y_c, tc_shape(&c->t[TY], 1, 5); c->present[TR] = 0)
MUT(m_y_t, tc_shape(&c->t[TY], 2, 4); c->present[TR] = 0)
MUT(m_y_h, c->d.stride_h = 2)
MUT(m_y_w, c->d.pad_right = 0)
MUT(m_bias_len, tc_shape(&c->t[TB], 0, 5))
MUT(m_bias_dtype, c->t[TB].dtype = DK_F16)
MUT(m_bias_ndim, c->t[TB].ndim = 2; c->t[TB].shape[1] = 1)
MUT(m_res_shape, tc_shape(&c->t[TR], 2, 2))
MUT(m_res_dtype, c->t[TR].dtype = DK_F16)
MUT(m_cache_ndim, c->t[TCACHE].ndim = 4)
MUT(m_cache_dtype, c->t[TCACHE].dtype = DK_F16)
MUT(m_cache_n, tc_shape(&c->t[TCACHE], 0, 2))
MUT(m_cache_c, tc_shape(&c->t[TCACHE], 1, 3))
MUT(m_cache_h, tc_shape(&c->t[TCACHE], 3, 4))
MUT(m_cache_w, tc_shape(&c->t[TCACHE], 4, 7))
MUT(m_cache_long, tc_shape(&c->t[TCACHE], 2, 3))
MUT(m_y_on_x, c->t[TY].buffer = tc_bufs[TX])
MUT(m_y_on_cache, c->t[TY].buffer = tc_bufs[TCACHE])
MUT(m_y_on_w, c->t[TY].buffer = tc_bufs[TW])
MUT(m_y_on_bias, c->t[TY].buffer = tc_bufs[TB])
MUT(m_res_shifted, c->t[TR] = c->t[TY]; c->t[TR].offset += 8)
MUT(m_y_self, c->t[TY].strides[2] = 3)
MUT(m_cache_owner, c->t[TCACHE].buffer = NULL)

typedef struct tc_rule {
    int chunk;
    tc_mut mutate;
    const char *msg; /* the message starts with it */
} tc_rule;

#define C3 "dk_conv3d: "
#define CH "dk_conv3d_chunk: "
static const tc_rule tc_rules[] = {
    {0, m_desc_null, C3 "desc must not be NULL"},
    {0, m_x_null, C3 "x must not be NULL"},
    {1, m_w_null, CH "w must not be NULL"},
    {0, m_y_null, C3 "y must not be NULL"},
    {0, m_stride_t, C3 "desc->stride_t (=0) must be >= 1"},
    {0, m_stride_h, C3 "desc->stride_h (=0) must be >= 1"},
    {1, m_stride_w, CH "desc->stride_w (=-2) must be >= 1"},
    {0, m_dil_t, C3 "desc->dilation_t (=0) must be >= 1"},
    {0, m_dil_h, C3 "desc->dilation_h (=0) must be >= 1"},
    {0, m_dil_w, C3 "desc->dilation_w (=0) must be >= 1"},
    {0, m_pad_front, C3 "desc->pad_front (=-1) must be >= 0"},
    {0, m_pad_back, C3 "desc->pad_back (=-1) must be >= 0"},
    {0, m_pad_top, C3 "desc->pad_top (=-1) must be >= 0"},
    {0, m_pad_bottom, C3 "desc->pad_bottom (=-1) must be >= 0"},
    {0, m_pad_left, C3 "desc->pad_left (=-1) must be >= 0"},
    {0, m_pad_right, C3 "desc->pad_right (=-3) must be >= 0"},
    {0, m_groups, C3 "desc->groups (=0) must be >= 1"},
    {0, m_act, C3 "desc->activation (=99) must be a dk_activation (0..5)"},
    {0, m_post_act, C3 "desc->post_activation (=6) must be a dk_activation (0..5)"},
    {0, m_oscale, C3 "desc->output_scale (=inf) must be finite"},
    {0, m_rscale, C3 "desc->residual_scale (=nan) must be finite"},
    {0, m_x_ndim, C3 "x.ndim (=4) must be 5 ([N, Cin, T, H, W])"},
    {0, m_w_ndim, C3 "w.ndim (=4) must be 5 ([Cout, Cin/groups, KT, KH, KW])"},
    {0, m_y_ndim, C3 "y.ndim (=4) must be 5 ([N, Cout, OT, OH, OW])"},
    {0, m_x_dtype, C3 "w.dtype (=f16) must equal x.dtype (=f32)"},
    {0, m_y_dtype, C3 "y.dtype (=bf16) must equal x.dtype (=f32)"},
    {0, m_groups_cin, C3 "x.shape[1] (=4) must be divisible by desc->groups (=3)"},
    {0, m_groups_cout, C3 "w.shape[0] (=6) must be divisible by desc->groups (=4)"},
    {0, m_w_cin, C3 "w.shape[1] (=3) must equal x.shape[1] / groups (=4)"},
    {0, m_t_small, C3 "the dilated kernel length (=dilation*(K-1)+1 = 6) must be <= the padded input length (=5)"},
    {0, m_y_n, C3 "y.shape[0] (=2) must equal x.shape[0] (=1)"},
    {0, m_y_c, C3 "y.shape[1] (=5) must equal w.shape[0] (=6)"},
    {1, m_y_t, CH "y.shape[2] (=4) must equal OT = (T + pad_front + pad_back - dilation_t*(KT-1) - 1) / stride_t + 1 (=3)"},
    {0, m_y_h, C3 "y.shape[3] (=5) must equal OH = (H + pad_top + pad_bottom - dilation_h*(KH-1) - 1) / stride_h + 1 (=3)"},
    {0, m_y_w, C3 "y.shape[4] (=6) must equal OW = (W + pad_left + pad_right - dilation_w*(KW-1) - 1) / stride_w + 1 (=5)"},
    {0, m_bias_len, C3 "bias.shape[0] (=5) must equal w.shape[0] (=6)"},
    {0, m_bias_dtype, C3 "bias.dtype (=f16) must equal x.dtype (=f32)"},
    {0, m_bias_ndim, C3 "bias.ndim (=2) must be 1 ([Cout])"},
    {0, m_res_shape, C3 "residual.shape (=[1, 6, 2, 5, 6]) must equal y.shape (=[1, 6, 3, 5, 6])"},
    {0, m_res_dtype, C3 "residual.dtype (=f16) must equal x.dtype (=f32)"},
    {1, m_cache_ndim, CH "cache.ndim (=4) must be 5 ([N, Cin, Tc, H, W])"},
    {1, m_cache_dtype, CH "cache.dtype (=f16) must equal x.dtype (=f32)"},
    {1, m_cache_n, CH "cache.shape[0] (=2) must equal x.shape[0] (=1)"},
    {1, m_cache_c, CH "cache.shape[1] (=3) must equal x.shape[1] (=4)"},
    {1, m_cache_h, CH "cache.shape[3] (=4) must equal x.shape[3] (=5)"},
    {1, m_cache_w, CH "cache.shape[4] (=7) must equal x.shape[4] (=6)"},
    {1, m_cache_long, CH "cache.shape[2] (=3) must be <= desc->pad_front (=2)"},
    {1, m_cache_owner, CH "cache.buffer must not be NULL"},
    {0, m_y_on_x, C3 "y (bytes 0..2159) overlaps x (bytes 0..1439) in the same buffer; an output may not alias an input"},
    {1, m_y_on_cache, CH "y (bytes 0..2159) overlaps cache (bytes 0..959) in the same buffer; an output may not alias an input"},
    {0, m_y_on_w, C3 "y (bytes 0..2159) overlaps w (bytes 0..2591)"},
    {0, m_y_on_bias, C3 "y (bytes 0..2159) overlaps bias (bytes 0..23)"},
    {0, m_res_shifted, C3 "y (bytes 0..2159) overlaps residual (bytes 8..2167) in the same buffer; it must be either the exact same view (in place) or disjoint"},
    {0, m_y_self, C3 "y overlaps itself: strides[2] (=3) must be > 5"},
};

static void tc_rules_check(dk_context *ctx) {
    static uint32_t host[TC_BUF / 4];
    size_t i, j;
    for (i = 0; i < sizeof tc_rules / sizeof tc_rules[0]; i++) {
        const tc_rule *r = &tc_rules[i];
        tc_call c;
        dk_status st;
        const char *msg;
        int untouched = 1;
        tc_base(&c, r->chunk);
        r->mutate(&c);
        BT_CHECK(dk_buffer_fill(ctx, tc_bufs[TY], 0, TC_BUF, TC_POISON) == DK_OK, "poison: %s", dk_last_error(ctx));
        st = tc_run(ctx, &c);
        msg = dk_last_error(ctx);
        BT_CHECK(st == DK_ERR_INVALID_ARGUMENT, "rule %zu: status %s (%s), want DK_ERR_INVALID_ARGUMENT", i,
                 dk_status_name(st), msg);
        BT_CHECK(strncmp(msg, r->msg, strlen(r->msg)) == 0, "rule %zu: message\n  \"%s\"\nwant\n  \"%s...\"", i, msg,
                 r->msg);
        BT_CHECK(dk_buffer_download(ctx, tc_bufs[TY], 0, host, TC_BUF) == DK_OK, "download: %s", dk_last_error(ctx));
        for (j = 0; j < TC_BUF / 4; j++) untouched &= host[j] == TC_POISON;
        BT_CHECK(untouched, "rule %zu: the output buffer was written", i);
    }
    { /* the base calls and the residual as y's very view are valid */
        tc_call c;
        int chunk;
        for (chunk = 0; chunk < 2; chunk++) {
            tc_base(&c, chunk);
            BT_CHECK(tc_run(ctx, &c) == DK_OK, "base call (chunk %d): %s", chunk, dk_last_error(ctx));
            c.t[TR] = c.t[TY];
            BT_CHECK(tc_run(ctx, &c) == DK_OK, "in-place residual (chunk %d): %s", chunk, dk_last_error(ctx));
        }
        tc_base(&c, 1);
        c.present[TCACHE] = 0; /* dk_conv3d_chunk without a cache is dk_conv3d */
        BT_CHECK(tc_run(ctx, &c) == DK_OK, "chunk without cache: %s", dk_last_error(ctx));
    }
}

/* ------------------------------------------------------------------- plan */

static dk_tensor tc_fake(dk_dtype dt, const int64_t shape[5], int ndhwc) {
    dk_tensor t = ndhwc ? dk_tensor_ndhwc(NULL, 0, dt, shape[0], shape[1], shape[2], shape[3], shape[4])
                        : dk_tensor_ncdhw(NULL, 0, dt, shape[0], shape[1], shape[2], shape[3], shape[4]);
    return t;
}

static void tc_plan_check(void) {
    dk_conv3d_desc d;
    dk_conv3d_plan p;
    const int64_t xs[5] = {1, 384, 4, 90, 160}, ys[5] = {1, 384, 4, 90, 160};
    const int64_t w333[5] = {384, 384, 3, 3, 3}, w311[5] = {768, 384, 3, 1, 1}, y311[5] = {1, 768, 4, 90, 160};
    const int64_t w133[5] = {384, 384, 1, 3, 3}, y5[5] = {1, 384, 5, 90, 160};
    dk_tensor x = tc_fake(DK_BF16, xs, 1), y = tc_fake(DK_BF16, ys, 1), w = tc_fake(DK_BF16, w333, 0);
    dk_tensor wt = tc_fake(DK_BF16, w311, 0), yt = tc_fake(DK_BF16, y311, 1), wf = tc_fake(DK_BF16, w133, 0);
    const uint64_t frame = 90 * 160 * 3 * 384 * 2, wbytes = 384 * 1152 * 9 * 2;
    dk_conv3d_desc_init(&d);
    d.pad_front = 2;
    d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
    /* Wan's causal 3x3x3 chunk (4 frames, 2 cached): all staged, tap-major (the weight
     * copied to match), one group */
    BT_CHECK(dk__conv3d_plan(&d, 2, &x, &w, &y, NULL, 0, DK_CONV3D_SCRATCH_CAP, &p), "plan 3x3x3");
    BT_CHECK(p.path == DK__C3D_STAGED && p.direct_begin == p.direct_end && p.ot == 4 && p.kc == 3 * 384 &&
                 p.tap_major && p.copy_weight && p.weight_offset == 0 && p.weight_bytes == wbytes &&
                 p.slab_offset == wbytes && p.group == 4 && p.frame_elems == frame / 2 &&
                 p.scratch_bytes == wbytes + 4 * frame,
             "plan 3x3x3: path %d direct [%lld, %lld) ot %lld kc %lld copy %d group %lld frame %llu bytes %llu", p.path,
             (long long)p.direct_begin, (long long)p.direct_end, (long long)p.ot, (long long)p.kc, p.copy_weight,
             (long long)p.group, (unsigned long long)p.frame_elems, (unsigned long long)p.scratch_bytes);
    /* a smaller cap: groups of 3 frames, then 1 */
    BT_CHECK(dk__conv3d_plan(&d, 2, &x, &w, &y, NULL, 0, wbytes + 3 * frame + 100, &p) && p.group == 3 &&
                 p.scratch_bytes == wbytes + 3 * frame, "plan 3x3x3 capped: group %lld", (long long)p.group);
    BT_CHECK(dk__conv3d_plan(&d, 2, &x, &w, &y, NULL, 0, 1, &p) && p.group == 1, "plan 3x3x3 tiny cap: group %lld",
             (long long)p.group);
    /* the weight stored [O, KT, KH, KW, I]: copied first, the slab after it */
    {
        dk_tensor wl = tc_fake(DK_BF16, w333, 1);
        BT_CHECK(dk__conv3d_plan(&d, 2, &x, &wl, &y, NULL, 0, DK_CONV3D_SCRATCH_CAP, &p) && p.copy_weight &&
                     p.weight_bytes >= (uint64_t)384 * 384 * 27 * 2 && p.slab_offset == p.weight_bytes &&
                     p.scratch_bytes == p.weight_bytes + 4 * frame,
                 "plan 3x3x3, weight channels-last: copy %d weight %llu", p.copy_weight,
                 (unsigned long long)p.weight_bytes);
    }
    /* channels padded to a backend multiple: none where KT*Cin is one (1152 at 64) or the pad
     * would add more than a quarter (1152 at 256 -> 1280 is fine, 36 at 64 is not) */
    BT_CHECK(dk__conv3d_padded_channels(1152, 1, 64) == 1152 && dk__conv3d_padded_channels(1152, 1, 256) == 1280 &&
                 dk__conv3d_padded_channels(288, 1, 64) == 320 && dk__conv3d_padded_channels(36, 1, 64) == 36 &&
                 dk__conv3d_padded_channels(288, 2, 64) == 288 && dk__conv3d_padded_channels(288, 1, 0) == 288,
             "padded channels");
    {
        /* Wan's 96-channel stage: 288 staged channels padded to 320, so a zero block, the
         * zero-padded weight copy, then the slab of 320-channel frames */
        const int64_t x96[5] = {1, 96, 4, 90, 160}, w96[5] = {96, 96, 3, 3, 3};
        dk_tensor xp = tc_fake(DK_BF16, x96, 1), yp = tc_fake(DK_BF16, x96, 1), wp = tc_fake(DK_BF16, w96, 0);
        const uint64_t f320 = 90 * 160 * 320 * 2, w320 = (96 * 320 * 9 * 2 + 255) / 256 * 256;
        BT_CHECK(dk__conv3d_plan(&d, 2, &xp, &wp, &yp, NULL, 64, DK_CONV3D_SCRATCH_CAP, &p) && p.kc == 320 &&
                     p.kc_data == 288 && p.copy_weight && p.weight_offset == 256 && p.weight_bytes == w320 &&
                     p.slab_offset == 256 + w320 && p.frame_elems == f320 / 2 &&
                     p.scratch_bytes == p.slab_offset + 4 * f320,
                 "plan 3x3x3 padded: kc %lld of %lld, copy %d, weight %llu at %llu, slab at %llu, frame %llu",
                 (long long)p.kc, (long long)p.kc_data, p.copy_weight, (unsigned long long)p.weight_bytes,
                 (unsigned long long)p.weight_offset, (unsigned long long)p.slab_offset,
                 (unsigned long long)p.frame_elems);
        BT_CHECK(dk__conv3d_plan(&d, 2, &x, &w, &y, NULL, 64, DK_CONV3D_SCRATCH_CAP, &p) && p.kc == 1152 &&
                     p.kc_data == 1152 && p.weight_offset == 0 && p.slab_offset == wbytes,
                 "plan 3x3x3 at 64: kc %lld", (long long)p.kc);
    }
    {
        /* groups 2: channel c*KT + kt, so a contiguous weight stays a view */
        const int64_t wg[5] = {384, 192, 3, 3, 3};
        dk_tensor w2 = tc_fake(DK_BF16, wg, 0);
        d.groups = 2;
        BT_CHECK(dk__conv3d_plan(&d, 2, &x, &w2, &y, NULL, 64, DK_CONV3D_SCRATCH_CAP, &p) && !p.tap_major &&
                     !p.copy_weight && p.kc == 1152 && p.slab_offset == 0 && p.scratch_bytes == 4 * frame,
                 "plan 3x3x3 groups 2: tap-major %d, copy %d", p.tap_major, p.copy_weight);
        d.groups = 1;
    }
    /* the 3x1x1 time conv: no copy without a cache; with one, the first 2 frames staged */
    d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 0;
    BT_CHECK(dk__conv3d_plan(&d, 0, &x, &wt, &yt, NULL, 0, DK_CONV3D_SCRATCH_CAP, &p) && p.path == DK__C3D_TIME &&
                 p.direct_begin == 0 && p.direct_end == 4 && p.scratch_bytes == 0,
             "plan 3x1x1: path %d [%lld, %lld)", p.path, (long long)p.direct_begin, (long long)p.direct_end);
    BT_CHECK(dk__conv3d_plan(&d, 2, &x, &wt, &yt, NULL, 0, DK_CONV3D_SCRATCH_CAP, &p) && p.path == DK__C3D_TIME &&
                 p.direct_begin == 2 && p.direct_end == 4 && p.group == 2,
             "plan 3x1x1 cached: path %d [%lld, %lld) group %lld", p.path, (long long)p.direct_begin,
             (long long)p.direct_end, (long long)p.group);
    /* NCDHW with a row gap: H and W do not merge, so the time conv is staged */
    {
        dk_tensor xg = x;
        xg.strides[3] += 1;
        BT_CHECK(dk__conv3d_plan(&d, 0, &xg, &wt, &yt, NULL, 0, DK_CONV3D_SCRATCH_CAP, &p) && p.path == DK__C3D_STAGED,
                 "plan 3x1x1 gapped: path %d", p.path);
    }
    /* KT = 1: the frames as the batch; a front pad's frame is staged */
    d.pad_front = 1;
    d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
    y = tc_fake(DK_BF16, y5, 1);
    BT_CHECK(dk__conv3d_plan(&d, 0, &x, &wf, &y, NULL, 0, DK_CONV3D_SCRATCH_CAP, &p) && p.path == DK__C3D_FRAMES &&
                 p.direct_begin == 1 && p.direct_end == 5 && p.group == 1 && !p.copy_weight,
             "plan 1x3x3: path %d [%lld, %lld) group %lld", p.path, (long long)p.direct_begin, (long long)p.direct_end,
             (long long)p.group);
}

/* ---------------------------------------------------------- chunk = whole */

typedef struct tc_host {
    dk_dtype dt;
    int ndhwc;
} tc_host;

static double tc_rand(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (double)(*s >> 8) / 8388608.0 - 1.0;
}

/* Uploads n random values (dtype dt) into a new buffer. */
static dk_buffer *tc_random_buffer(dk_context *ctx, dk_dtype dt, int64_t n, double scale, uint32_t seed) {
    size_t es = dk_dtype_size(dt), i;
    unsigned char *h = (unsigned char *)malloc((size_t)n * es);
    dk_buffer *b = NULL;
    BT_CHECK(h && dk_buffer_create(ctx, (uint64_t)n * es, &b) == DK_OK, "buffer: %s", dk_last_error(ctx));
    if (!h || !b) {
        free(h);
        return b;
    }
    for (i = 0; i < (size_t)n; i++) {
        float f = (float)(scale * tc_rand(&seed));
        if (dt == DK_F32) memcpy(h + 4 * i, &f, 4);
        else {
            uint16_t v = dt == DK_F16 ? dk_f32_to_f16(f) : dk_f32_to_bf16(f);
            memcpy(h + 2 * i, &v, 2);
        }
    }
    BT_CHECK(dk_buffer_upload(ctx, b, 0, h, (uint64_t)n * es) == DK_OK, "upload: %s", dk_last_error(ctx));
    free(h);
    return b;
}

static double tc_get(dk_dtype dt, const unsigned char *h, int64_t i) {
    if (dt == DK_F32) {
        float f;
        memcpy(&f, h + 4 * i, 4);
        return f;
    } else {
        uint16_t v;
        memcpy(&v, h + 2 * i, 2);
        return dt == DK_F16 ? dk_f16_to_f32(v) : dk_bf16_to_f32(v);
    }
}

static dk_tensor tc_video(dk_buffer *b, uint64_t off, dk_dtype dt, int ndhwc, int64_t n, int64_t c, int64_t t, int64_t h,
                          int64_t w) {
    return ndhwc ? dk_tensor_ndhwc(b, off, dt, n, c, t, h, w) : dk_tensor_ncdhw(b, off, dt, n, c, t, h, w);
}

/* Frames [f0, f0 + count) of v (a view). */
static dk_tensor tc_frames(const dk_tensor *v, int64_t f0, int64_t count) {
    dk_tensor r = *v;
    r.offset += (uint64_t)(f0 * v->strides[2]) * dk_dtype_size(v->dtype);
    r.shape[2] = count;
    return r;
}

/* Outputs of got that differ from want by more than tol (relative to 1 + |want|). */
static int tc_mismatches(dk_dtype dt, const unsigned char *got, const unsigned char *want, size_t n, double tol) {
    int bad = 0;
    size_t i;
    for (i = 0; got && want && i < n; i++) {
        double a = tc_get(dt, got, (int64_t)i), b = tc_get(dt, want, (int64_t)i);
        if (!(fabs(a - b) <= tol * (1.0 + fabs(b)))) bad++;
    }
    return bad;
}

/* The end of a two-run comparison: its host outputs and its n buffers freed. */
static void tc_run_free(dk_context *ctx, unsigned char *out[2], dk_buffer *const *bufs, int n) {
    int i;
    free(out[0]);
    free(out[1]);
    for (i = 0; i < n; i++) dk_buffer_destroy(ctx, bufs[i]);
}

/* A 9-frame clip x [1, C, 9, H, W] through w (KT = 3, pad_front 2) whole, and
 * in chunks of 1, 4, 4 frames with a 2-frame cache kept by dk_convert. */
static void tc_chunks(dk_context *ctx, dk_dtype dt, int ndhwc, int64_t kh) {
    enum { C = 12, CO = 8, T = 9, H = 5, W = 6 };
    const int64_t chunk[3] = {1, 4, 4};
    const int64_t wshape[5] = {CO, C, 3, kh, kh}, bshape[1] = {CO};
    const size_t es = dk_dtype_size(dt);
    const int64_t ysize = (int64_t)CO * T * H * W;
    dk_conv3d_desc d;
    dk_buffer *bx = tc_random_buffer(ctx, dt, (int64_t)C * T * H * W, 1.0, 11u);
    dk_buffer *bw = tc_random_buffer(ctx, dt, CO * C * 3 * kh * kh, 0.2, 12u);
    dk_buffer *bb = tc_random_buffer(ctx, DK_F32, CO, 0.5, 13u);
    dk_buffer *bwhole = NULL, *bparts = NULL, *bcache[2] = {NULL, NULL};
    unsigned char *hw = (unsigned char *)malloc((size_t)ysize * es), *hp = (unsigned char *)malloc((size_t)ysize * es);
    dk_tensor x, w, b, y;
    int64_t f = 0, tc = 0, i, k;
    double num = 0.0, den = 0.0, tol = dt == DK_F32 ? 1e-6 : 2e-3;
    if (!bx || !bw || !bb || !hw || !hp) goto out;
    BT_CHECK(dk_buffer_create(ctx, (uint64_t)ysize * es, &bwhole) == DK_OK, "buffer: %s", dk_last_error(ctx));
    BT_CHECK(dk_buffer_create(ctx, (uint64_t)ysize * es, &bparts) == DK_OK, "buffer: %s", dk_last_error(ctx));
    for (k = 0; k < 2; k++)
        BT_CHECK(dk_buffer_create(ctx, (uint64_t)C * 2 * H * W * es, &bcache[k]) == DK_OK, "buffer: %s",
                 dk_last_error(ctx));
    if (!bwhole || !bparts || !bcache[0] || !bcache[1]) goto out;
    dk_conv3d_desc_init(&d);
    d.pad_front = 2;
    d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = (int32_t)(kh / 2);
    d.activation = DK_ACT_SILU;
    x = tc_video(bx, 0, dt, ndhwc, 1, C, T, H, W);
    w = dk_tensor_contiguous(bw, 0, dt, 5, wshape);
    b = dk_tensor_contiguous(bb, 0, DK_F32, 1, bshape);
    y = tc_video(bwhole, 0, dt, ndhwc, 1, CO, T, H, W);
    BT_CHECK(dk_conv3d(ctx, &d, &x, &w, &b, NULL, &y) == DK_OK, "whole: %s", dk_last_error(ctx));
    y = tc_video(bparts, 0, dt, ndhwc, 1, CO, T, H, W);
    for (k = 0; k < 3; k++) {
        /* this chunk's frames, its cache (tc frames of bcache[k % 2]) and its output frames */
        dk_tensor xc = tc_frames(&x, f, chunk[k]), yc = tc_frames(&y, f, chunk[k]);
        /* cache buffers hold 2 frames; the cache is the first tc of them */
        dk_tensor full = tc_video(bcache[k % 2], 0, dt, ndhwc, 1, C, 2, H, W), cache = tc_frames(&full, 0, tc ? tc : 1);
        dk_tensor next = tc_video(bcache[(k + 1) % 2], 0, dt, ndhwc, 1, C, 2, H, W);
        int64_t keep;
        BT_CHECK(dk_conv3d_chunk(ctx, &d, tc ? &cache : NULL, &xc, &w, &b, NULL, &yc) == DK_OK, "chunk %lld: %s",
                 (long long)k, dk_last_error(ctx));
        /* the next cache: the last 2 frames of (cache, chunk), into the other buffer */
        keep = chunk[k] >= 2 ? 0 : (tc < 2 - chunk[k] ? tc : 2 - chunk[k]);
        if (keep) {
            dk_tensor src = tc_frames(&cache, tc - keep, keep), dst = tc_frames(&next, 0, keep);
            BT_CHECK(dk_convert(ctx, &src, &dst) == DK_OK, "cache keep: %s", dk_last_error(ctx));
        }
        {
            int64_t from_x = chunk[k] < 2 ? chunk[k] : 2;
            dk_tensor src = tc_frames(&xc, chunk[k] - from_x, from_x), dst = tc_frames(&next, keep, from_x);
            BT_CHECK(dk_convert(ctx, &src, &dst) == DK_OK, "cache copy: %s", dk_last_error(ctx));
            tc = keep + from_x;
        }
        f += chunk[k];
    }
    BT_CHECK(dk_buffer_download(ctx, bwhole, 0, hw, (uint64_t)ysize * es) == DK_OK, "download: %s", dk_last_error(ctx));
    BT_CHECK(dk_buffer_download(ctx, bparts, 0, hp, (uint64_t)ysize * es) == DK_OK, "download: %s", dk_last_error(ctx));
    for (i = 0; i < ysize; i++) {
        double a = tc_get(dt, hw, i), p = tc_get(dt, hp, i);
        num += (a - p) * (a - p);
        den += a * a;
    }
    BT_CHECK(den > 0.0 && sqrt(num / den) <= tol, "chunks 1+4+4 vs whole (%s %s %lldx%lldx%lld): rel_l2 %.3g > %.3g",
             dk_dtype_name(dt), ndhwc ? "ndhwc" : "ncdhw", 3LL, (long long)kh, (long long)kh, sqrt(num / den), tol);
out:
    free(hw);
    free(hp);
    dk_buffer_destroy(ctx, bx);
    dk_buffer_destroy(ctx, bw);
    dk_buffer_destroy(ctx, bb);
    dk_buffer_destroy(ctx, bwhole);
    dk_buffer_destroy(ctx, bparts);
    dk_buffer_destroy(ctx, bcache[0]);
    dk_buffer_destroy(ctx, bcache[1]);
}

/* ----------------------------------------------------------------- memory */

/* A 9x1x1 conv with spatial padding (the staged path) over 32 frames of
 * 256 x 256 x 8 f32: 32 staged frames of 256*256*72*4 bytes (604 MiB) exceed the
 * cap, so they run in groups; the peak stays within the cap. */
static void tc_memory(dk_context *ctx) {
    enum { C = 8, CO = 2, T = 32, H = 256, W = 256, KT = 9 };
    const int64_t wshape[5] = {CO, C, KT, 1, 1};
    dk_buffer *bx = tc_random_buffer(ctx, DK_F32, (int64_t)C * T * H * W, 1.0, 21u);
    dk_buffer *bw = tc_random_buffer(ctx, DK_F32, CO * C * KT, 0.3, 22u);
    dk_buffer *by = NULL;
    uint64_t base = 0, peak = 0, after = 0;
    dk_conv3d_desc d;
    dk_tensor x, w, y;
    float *host = NULL;
    if (!bx || !bw) goto out;
    BT_CHECK(dk_buffer_create(ctx, (uint64_t)CO * T * (H + 1) * W * 4, &by) == DK_OK, "buffer: %s",
             dk_last_error(ctx));
    if (!by) goto out;
    dk_conv3d_desc_init(&d);
    d.pad_front = KT - 1;
    d.pad_top = 1; /* OH = H + 1 */
    x = dk_tensor_ncdhw(bx, 0, DK_F32, 1, C, T, H, W);
    w = dk_tensor_contiguous(bw, 0, DK_F32, 5, wshape);
    y = dk_tensor_ncdhw(by, 0, DK_F32, 1, CO, T, H + 1, W);
    BT_CHECK(dk_release_scratch(ctx) == DK_OK, "release: %s", dk_last_error(ctx));
    dk_memory_reset_peak(ctx);
    BT_CHECK(dk_memory_usage(ctx, &base, NULL) == DK_OK, "usage: %s", dk_last_error(ctx));
    BT_CHECK(dk_conv3d(ctx, &d, &x, &w, NULL, NULL, &y) == DK_OK, "large conv3d: %s", dk_last_error(ctx));
    BT_CHECK(dk_sync(ctx) == DK_OK, "sync: %s", dk_last_error(ctx));
    BT_CHECK(dk_memory_usage(ctx, NULL, &peak) == DK_OK, "usage: %s", dk_last_error(ctx));
    printf("conv3d scratch: peak %.1f MiB above the buffers (cap %.0f MiB)\n", (double)(peak - base) / 1048576.0,
           (double)DK_CONV3D_SCRATCH_CAP / 1048576.0);
    BT_CHECK(peak > base && peak - base <= DK_CONV3D_SCRATCH_CAP, "peak %llu above %llu exceeds the cap %llu",
             (unsigned long long)peak, (unsigned long long)base, (unsigned long long)DK_CONV3D_SCRATCH_CAP);
    BT_CHECK(dk_release_scratch(ctx) == DK_OK, "release: %s", dk_last_error(ctx));
    BT_CHECK(dk_memory_usage(ctx, &after, NULL) == DK_OK && after == base, "after release %llu, before %llu",
             (unsigned long long)after, (unsigned long long)base);
    /* spot check the last frame (the last group): y[co, T-1, r, c] for a few pixels, in fp64 */
    host = (float *)malloc((size_t)C * T * H * W * 4);
    if (host) {
        float *hx = host, hwt[CO * C * KT], hy;
        const int64_t pix[3][2] = {{1, 0}, {100, 77}, {256, 255}};
        int p, co, ci, k;
        BT_CHECK(dk_buffer_download(ctx, bx, 0, hx, (uint64_t)C * T * H * W * 4) == DK_OK, "download");
        BT_CHECK(dk_buffer_download(ctx, bw, 0, hwt, sizeof hwt) == DK_OK, "download");
        for (p = 0; p < 3; p++)
            for (co = 0; co < CO; co++) {
                int64_t r = pix[p][0], cc = pix[p][1];
                double acc = 0.0;
                for (ci = 0; ci < C; ci++)
                    for (k = 0; k < KT; k++) {
                        int64_t s = (T - 1) + k - (KT - 1); /* x frame of tap k */
                        if (r >= 1 && s >= 0) acc += (double)hx[((int64_t)ci * T + s) * H * W + (r - 1) * W + cc] * hwt[(co * C + ci) * KT + k];
                    }
                BT_CHECK(dk_buffer_download(ctx, by, (uint64_t)(((int64_t)co * T + T - 1) * (H + 1) * W + r * W + cc) * 4,
                                            &hy, 4) == DK_OK, "download");
                BT_CHECK(fabs(hy - acc) <= 1e-4 * (1.0 + fabs(acc)), "y[%d, last, %lld, %lld] = %g, want %g", co,
                         (long long)r, (long long)cc, (double)hy, acc);
            }
    }
out:
    free(host);
    dk_buffer_destroy(ctx, bx);
    dk_buffer_destroy(ctx, bw);
    dk_buffer_destroy(ctx, by);
}

/* ---------------------------------------------------------------- padding */

/* The staged channels padded to a multiple (dk__conv3d's multiple: 8 pads 12
 * channels x 3 taps from 36 to 40) give what the unpadded staging gives, and
 * the scratch the padded plan needs is taken (so the multiple reached the plan):
 * f32 NCDHW; f16 NDHWC as a chunk after 2 cached frames with a residual; bf16
 * NCDHW after 1 cached frame. */
static void tc_padded(dk_context *ctx) {
    enum { C = 12, CO = 16, T = 3, H = 5, W = 6, RUNS = 3 };
    const dk_dtype dts[RUNS] = {DK_F32, DK_F16, DK_BF16};
    const int ndhwc[RUNS] = {0, 1, 0}, tcs[RUNS] = {0, 2, 1}, res[RUNS] = {0, 1, 0};
    const int64_t wshape[5] = {CO, C, 3, 3, 3};
    int r, k;
    for (r = 0; r < RUNS; r++) {
        const dk_dtype dt = dts[r];
        const size_t es = dk_dtype_size(dt), ny = (size_t)CO * T * H * W;
        const double tol = dt == DK_F32 ? 1e-5 : dt == DK_F16 ? 2e-3 : 1.6e-2;
        dk_buffer *bx = tc_random_buffer(ctx, dt, C * T * H * W, 1.0, 31u + (uint32_t)r);
        dk_buffer *bw = tc_random_buffer(ctx, dt, CO * C * 27, 0.3, 41u + (uint32_t)r);
        dk_buffer *bc = tc_random_buffer(ctx, dt, C * 2 * H * W, 1.0, 51u + (uint32_t)r);
        dk_buffer *br = tc_random_buffer(ctx, dt, (int64_t)ny, 1.0, 61u + (uint32_t)r);
        dk_buffer *by[2] = {NULL, NULL};
        unsigned char *out[2] = {(unsigned char *)malloc(ny * es), (unsigned char *)malloc(ny * es)};
        uint64_t need[2] = {0, 0};
        int bad = 0;
        for (k = 0; k < 2; k++)
            BT_CHECK(dk_buffer_create(ctx, ny * es, &by[k]) == DK_OK &&
                         dk_buffer_fill(ctx, by[k], 0, ny * es, TC_POISON) == DK_OK, "buffer: %s", dk_last_error(ctx));
        for (k = 0; k < 2 && bx && bw && bc && br && by[k] && out[k]; k++) {
            dk_conv3d_desc d;
            dk_conv3d_plan p;
            dk_tensor x = tc_video(bx, 0, dt, ndhwc[r], 1, C, T, H, W), y = tc_video(by[k], 0, dt, ndhwc[r], 1, CO, T, H, W);
            dk_tensor cache = tc_video(bc, 0, dt, ndhwc[r], 1, C, tcs[r] ? tcs[r] : 1, H, W);
            dk_tensor rv = tc_video(br, 0, dt, ndhwc[r], 1, CO, T, H, W);
            dk_tensor w = dk_tensor_contiguous(bw, 0, dt, 5, wshape);
            uint64_t base = 0, peak = 0;
            dk_conv3d_desc_init(&d);
            d.pad_front = 2;
            d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
            BT_CHECK(dk__conv3d_plan(&d, tcs[r], &x, &w, &y, res[r] ? &rv : NULL, k ? 8 : 0, DK_CONV3D_SCRATCH_CAP, &p) &&
                         p.kc == (k ? 40 : 36), "padded run %d: plan kc %lld", r, (long long)p.kc);
            need[k] = p.scratch_bytes;
            BT_CHECK(dk_release_scratch(ctx) == DK_OK, "release: %s", dk_last_error(ctx));
            dk_memory_reset_peak(ctx);
            BT_CHECK(dk_memory_usage(ctx, &base, NULL) == DK_OK, "usage: %s", dk_last_error(ctx));
            BT_CHECK(dk__conv3d(ctx, "dk_conv3d", &d, tcs[r] ? &cache : NULL, &x, &w, NULL, res[r] ? &rv : NULL, &y,
                                k ? 8 : 0) == DK_OK && dk_sync(ctx) == DK_OK,
                     "padded run %d, multiple %d: %s", r, k ? 8 : 0, dk_last_error(ctx));
            BT_CHECK(dk_memory_usage(ctx, NULL, &peak) == DK_OK && peak - base >= need[k], "padded run %d: scratch %llu < %llu",
                     r, (unsigned long long)(peak - base), (unsigned long long)need[k]);
            BT_CHECK(dk_buffer_download(ctx, by[k], 0, out[k], ny * es) == DK_OK, "download: %s", dk_last_error(ctx));
        }
        BT_CHECK(need[1] > need[0], "padded run %d: scratch %llu, unpadded %llu", r, (unsigned long long)need[1],
                 (unsigned long long)need[0]);
        bad = tc_mismatches(dt, out[1], out[0], ny, tol);
        BT_CHECK(bad == 0, "padded run %d (%s): padded staging differs from unpadded at %d of %d outputs", r,
                 dk_dtype_name(dt), bad, (int)ny);
        {
            dk_buffer *const bufs[6] = {bx, bw, bc, br, by[0], by[1]};
            tc_run_free(ctx, out, bufs, 6);
        }
    }
}

/* -------------------------------------------------------- unused strides */

/* A size-1 dim's stride is never used and may be any value: a one-frame clip
 * (stride_t 2, KT 1, the per-frame path; and KT 3 over a cached frame, the
 * staged path) whose size-1 dims carry INT64_MAX strides gives
 * the dense views' output exactly (the planner once multiplied such a stride
 * by stride_t: signed overflow). f32 NCDHW and f16 NDHWC. */
static void tc_unused_strides(dk_context *ctx) {
    enum { C = 4, CO = 6, H = 5, W = 6, RUNS = 4 };
    int r, k;
    for (r = 0; r < RUNS; r++) {
        const dk_dtype dt = r % 2 ? DK_F16 : DK_F32;
        const int ndhwc = r % 2, kt = r < 2 ? 1 : 3;
        const int64_t wshape[5] = {CO, C, kt, 3, 3};
        const size_t es = dk_dtype_size(dt), ny = (size_t)CO * H * W;
        dk_buffer *bx = tc_random_buffer(ctx, dt, C * H * W, 1.0, 71u + (uint32_t)r);
        dk_buffer *bw = tc_random_buffer(ctx, dt, CO * C * kt * 9, 0.3, 81u + (uint32_t)r);
        dk_buffer *bc = tc_random_buffer(ctx, dt, C * H * W, 1.0, 91u + (uint32_t)r);
        dk_buffer *by[2] = {NULL, NULL};
        unsigned char *out[2] = {(unsigned char *)malloc(ny * es), (unsigned char *)malloc(ny * es)};
        int bad;
        for (k = 0; k < 2; k++)
            BT_CHECK(dk_buffer_create(ctx, ny * es, &by[k]) == DK_OK &&
                         dk_buffer_fill(ctx, by[k], 0, ny * es, TC_POISON) == DK_OK, "buffer: %s", dk_last_error(ctx));
        for (k = 0; k < 2 && bx && bw && bc && by[k] && out[k]; k++) {
            dk_conv3d_desc d;
            dk_tensor x = tc_video(bx, 0, dt, ndhwc, 1, C, 1, H, W), y = tc_video(by[k], 0, dt, ndhwc, 1, CO, 1, H, W);
            dk_tensor cache = tc_video(bc, 0, dt, ndhwc, 1, C, 1, H, W);
            dk_tensor w = dk_tensor_contiguous(bw, 0, dt, 5, wshape);
            dk_conv3d_desc_init(&d);
            d.stride_t = 2;
            d.pad_front = kt - 1; /* KT 3: the cached frame, then one zero frame */
            d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
            if (k) {
                x.strides[0] = x.strides[2] = INT64_MAX;
                y.strides[0] = INT64_MAX;
                y.strides[2] = INT64_MAX;
                cache.strides[0] = INT64_MAX;
                cache.strides[2] = INT64_MAX;
                if (kt == 1) w.strides[2] = INT64_MAX;
            }
            BT_CHECK(dk_conv3d_chunk(ctx, &d, kt > 1 ? &cache : NULL, &x, &w, NULL, NULL, &y) == DK_OK &&
                         dk_sync(ctx) == DK_OK,
                     "unused strides run %d (%s): %s", r, k ? "INT64_MAX strides" : "dense", dk_last_error(ctx));
            BT_CHECK(dk_buffer_download(ctx, by[k], 0, out[k], ny * es) == DK_OK, "download: %s", dk_last_error(ctx));
        }
        bad = tc_mismatches(dt, out[1], out[0], ny, 0.0);
        BT_CHECK(bad == 0, "unused strides run %d (%s): %d of %d outputs differ from the dense views'", r,
                 dk_dtype_name(dt), bad, (int)ny);
        {
            dk_buffer *const bufs[5] = {bx, bw, bc, by[0], by[1]};
            tc_run_free(ctx, out, bufs, 5);
        }
    }
}

/* ------------------------------------------------------------- in place */

/* Whether this context's backend must take the in-place call of run r: HIP's
 * fast kernels take every run (64 channels, channels-last); Vulkan's
 * tensor-core conv the time-only kernels with a cache, where the device has
 * cooperative matrices for dt (dk_context_describe names them). */
static int tc_in_place_expected(dk_context *ctx, const char *name, dk_dtype dt, int time_only, int cached) {
    const char *desc = dk_context_describe(ctx);
    if (!strcmp(name, "hip")) return 1;
    if (strcmp(name, "vulkan") || !time_only || !cached || !strstr(desc, "cooperative-matrix")) return 0;
    return dt == DK_F16 || strstr(desc, "f16/bf16") != NULL;
}

/* A conv3d whose taps the backend's kernels read in place (backend.h's
 * conv3d_in_place) gives what the staged copy gives (dk__conv3d's multiple 0
 * always stages).  3x3x3: f16 without a cache and with a zero frame after x;
 * bf16 after 2 cached frames with a residual and rows of 12 (the TMA kernels
 * take rows of 16, the others 12); f16 after 1 cached frame (a zero frame
 * before it) with stride_t 2.  3x1x1 (the time convs of the video VAEs'
 * upsamplers): f16, one new frame after 2 cached ones; bf16, 4 frames after 2
 * cached ones with a residual and a zero frame after x.  Where the backend
 * must take the call (tc_in_place_expected), no conv3d scratch was grown. */
static void tc_in_place(dk_context *ctx, const char *name) {
    enum { C = 64, CO = 48, H = 4, RUNS = 5 };
    const dk_dtype dts[RUNS] = {DK_F16, DK_BF16, DK_F16, DK_F16, DK_BF16};
    const int ts[RUNS] = {3, 3, 4, 1, 4}, ws[RUNS] = {16, 12, 16, 16, 12}, tcs[RUNS] = {0, 2, 1, 2, 2};
    const int res[RUNS] = {0, 1, 0, 0, 1}, sts[RUNS] = {1, 1, 2, 1, 1}, pbs[RUNS] = {1, 0, 0, 0, 1};
    const int ks[RUNS] = {3, 3, 3, 1, 1};
    int r, k;
    for (r = 0; r < RUNS; r++) {
        const dk_dtype dt = dts[r];
        const int64_t wshape[5] = {CO, C, 3, ks[r], ks[r]}, bshape[1] = {CO};
        const int expect = tc_in_place_expected(ctx, name, dt, ks[r] == 1, tcs[r] > 0);
        const int T = ts[r], W = ws[r], OT = (T + 2 + pbs[r] - 2 - 1) / sts[r] + 1;
        const size_t es = dk_dtype_size(dt), ny = (size_t)CO * OT * H * W;
        const double tol = dt == DK_F16 ? 2e-3 : 1.6e-2;
        dk_buffer *bx = tc_random_buffer(ctx, dt, (int64_t)C * T * H * W, 1.0, 71u + (uint32_t)r);
        dk_buffer *bw = tc_random_buffer(ctx, dt, CO * C * 3 * ks[r] * ks[r], 0.05, 81u + (uint32_t)r);
        dk_buffer *bb = tc_random_buffer(ctx, dt, CO, 1.0, 91u + (uint32_t)r);
        dk_buffer *bc = tc_random_buffer(ctx, dt, (int64_t)C * 2 * H * W, 1.0, 101u + (uint32_t)r);
        dk_buffer *br = tc_random_buffer(ctx, dt, (int64_t)ny, 1.0, 111u + (uint32_t)r);
        dk_buffer *by[2] = {NULL, NULL};
        unsigned char *out[2] = {(unsigned char *)malloc(ny * es), (unsigned char *)malloc(ny * es)};
        int bad = 0;
        for (k = 0; k < 2; k++)
            BT_CHECK(dk_buffer_create(ctx, ny * es, &by[k]) == DK_OK &&
                         dk_buffer_fill(ctx, by[k], 0, ny * es, TC_POISON) == DK_OK, "buffer: %s", dk_last_error(ctx));
        for (k = 0; k < 2 && bx && bw && bb && bc && br && by[k] && out[k]; k++) {
            dk_conv3d_desc d;
            dk_tensor x = tc_video(bx, 0, dt, 1, 1, C, T, H, W), y = tc_video(by[k], 0, dt, 1, 1, CO, OT, H, W);
            dk_tensor cache = tc_video(bc, 0, dt, 1, 1, C, tcs[r] ? tcs[r] : 1, H, W);
            dk_tensor rv = tc_video(br, 0, dt, 1, 1, CO, OT, H, W);
            dk_tensor w = dk_tensor_contiguous(bw, 0, dt, 5, wshape), b = dk_tensor_contiguous(bb, 0, dt, 1, bshape);
            dk_conv3d_desc_init(&d);
            d.pad_front = 2;
            d.pad_back = pbs[r];
            d.stride_t = sts[r];
            d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = ks[r] / 2;
            d.activation = DK_ACT_SILU;
            BT_CHECK(dk_release_scratch(ctx) == DK_OK, "release: %s", dk_last_error(ctx));
            BT_CHECK(dk__conv3d(ctx, "dk_conv3d", &d, tcs[r] ? &cache : NULL, &x, &w, &b, res[r] ? &rv : NULL, &y,
                                k ? 0 : -1) == DK_OK && dk_sync(ctx) == DK_OK,
                     "in-place run %d (%s): %s", r, k ? "staged" : "in place", dk_last_error(ctx));
            if (!k && expect)
                BT_CHECK(ctx->ops->conv3d_in_place && !ctx->conv3d_scratch,
                         "in-place run %d: the %s backend staged the frames instead of reading them in place", r, name);
            BT_CHECK(dk_buffer_download(ctx, by[k], 0, out[k], ny * es) == DK_OK, "download: %s", dk_last_error(ctx));
        }
        bad = tc_mismatches(dt, out[0], out[1], ny, tol);
        BT_CHECK(bad == 0, "in-place run %d (%s): in place differs from staged at %d of %d outputs", r,
                 dk_dtype_name(dt), bad, (int)ny);
        {
            dk_buffer *const bufs[7] = {bx, bw, bb, bc, br, by[0], by[1]};
            tc_run_free(ctx, out, bufs, 7);
        }
    }
}

int main(int argc, char **argv) {
    dk_context_options opt;
    dk_context *ctx = NULL;
    const char *name;
    int rc = bt_context(argc, argv, &opt, &ctx, &name), i;
    if (rc) return rc;
    for (i = 0; i < TN; i++)
        BT_CHECK(dk_buffer_create(ctx, TC_BUF, &tc_bufs[i]) == DK_OK && dk_buffer_fill(ctx, tc_bufs[i], 0, TC_BUF, 0) == DK_OK,
                 "buffer: %s", dk_last_error(ctx));
    tc_rules_check(ctx);
    for (i = 0; i < TN; i++) dk_buffer_destroy(ctx, tc_bufs[i]);
    tc_plan_check();
    for (i = 0; i < 4; i++) {
        tc_chunks(ctx, i < 2 ? DK_F32 : DK_F16, i % 2, 3);
        tc_chunks(ctx, i < 2 ? DK_F32 : DK_F16, i % 2, 1);
    }
    if (argc > 2 && !strcmp(argv[2], "memory")) tc_memory(ctx);
    tc_padded(ctx);
    tc_unused_strides(ctx);
    tc_in_place(ctx, name);
    dk_context_destroy(ctx);
    printf("%s: %s (%d failures)\n", name, bt_failures ? "FAIL" : "ok", bt_failures);
    return bt_failures ? 1 : 0;
}
