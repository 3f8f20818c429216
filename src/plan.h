/* Launch planning shared by the GPU backends (and the CPU's conv packing):
 * the decisions that depend only on shapes, strides, dtypes, alignment and
 * the op's description, made once here on backend-neutral inputs and
 * returned as plain values; each backend translates them into its own kernel
 * arguments, buffers and launches.  Where the backends deliberately differ
 * (vector widths, reduction slices, which operands a kernel can take in
 * another layout) the difference is a parameter.
 *   conv_plan.c         transposed-conv phases, channels-last staging,
 *                       small-Cin padding, packed weight layouts, fused 2x
 *                       upsample eligibility (its weights: conv_up2.c)
 *   norm_plan.c         GroupNorm's vector mode, the RMS norm's kernel shape
 *   elementwise_plan.c  the vector paths of the elementwise walk
 *   dims.c              5-D views lowered to the backends' 4-D views
 *   conv3d.c            conv3d lowered onto conv2d (path, frame groups, scratch) */
#ifndef DK_PLAN_H
#define DK_PLAN_H

#include "dk_internal.h"

/* ---- conv_plan.c ---- */

/* The kernel taps of one transposed-conv output phase along one axis: outputs
 * o = out_start + i * stride read input i + off0 + t * off_step through kernel
 * tap k0 + t * k_step, t < taps (taps 0: no tap reaches the phase, off0 0). */
typedef struct dk_phase_taps {
    int64_t k0, k_step, taps, off0, off_step;
} dk_phase_taps;
void dk__transposed_taps(int64_t out_start, int64_t stride, int64_t pad, int64_t dilation, int64_t ksize,
                         dk_phase_taps *t);
/* How many of out_size outputs the phase starting at out_start holds. */
int64_t dk__phase_outputs(int64_t out_start, int64_t stride, int64_t out_size);

/* Whether 4-D t (first element at byte address addr) is channels-last with
 * every pixel on a 16-byte vector.  unit_dims_free: a dimension of extent 1
 * may have any stride (the kernels never step along it); 0 where the backend's
 * vector checks read every stride as bound. */
int dk__channels_last16(const dk_tensor *t, uint64_t addr, int unit_dims_free);

/* Channels-last copies of a conv's operands (x, y, residual): which are
 * copied, with how many channels, where in one scratch region (offsets and
 * sizes in bytes, each copy starting on align bytes) and how much it takes. */
typedef struct dk_stage_plan {
    int staged[3];
    int64_t channels[3];
    uint64_t offset[3], bytes[3], total;
} dk_stage_plan;
/* ops: x, y, residual (NULL: none).  want[i]: the backend copies operand i
 * (present and not channels-last in 16-byte vectors, its kernels able to use
 * the copy).  cpad > 0: x is copied whatever its layout, with cpad channels.
 * whole_vectors: a copy whose channels do not fill whole 16-byte vectors is
 * dropped (it would gain nothing); 0 where the caller checked the channel
 * counts already.  Returns whether anything is copied. */
int dk__conv_stage_plan(const dk_tensor *const ops[3], const int want[3], int64_t cpad, int whole_vectors,
                        uint64_t align, dk_stage_plan *plan);

/* The copies in of a staged conv by the backend's convert (t, staged: the
 * operands as the conv sees them and which are copies): x, into its first
 * x->shape[1] channels with the rest zeroed where cpad > 0, and the residual. */
dk_status dk__conv_stage_copy_in(dk_context *ctx, const dk_tensor *x, const dk_tensor *residual, const int staged[3],
                                 const dk_tensor t[3], int64_t cpad);
/* After the conv on the staged operands (status st): y copied out where its
 * copy was written. */
dk_status dk__conv_stage_copy_out(dk_context *ctx, const int staged[3], const dk_tensor t[3], const dk_tensor *y,
                                  dk_status st);

/* Input channels rounded up to whole reduction slices of the tensor-core
 * GEMM, for a conv2d with cin channels per group that no fast kernel takes as
 * it is; 0 where padding is not possible: groups, fused upsample (their weight
 * packs keep w's channels), mixed dtypes, or cin already whole slices.  Each
 * backend adds its own cost rule and device limits. */
int64_t dk__conv_cin_pad(const dk_conv2d_desc *d, const dk_tensor *x, const dk_tensor *y, int64_t cin,
                         int64_t slice);
/* Whether the fused nearest-2x upsample (conv_up2.c) can take the conv:
 * stride 1, dilation 1, pads that fit its weight-cache variant. */
int dk__conv_up2_fits(const dk_conv2d_desc *d);

/* Element strides of a dense copy of a conv weight seen as (cout, cin, kh,
 * kw) with extents ext, laid out with the dimensions of order innermost first
 * (a permutation of 0..3).  The backends pack in their kernels' order. */
void dk__weight_pack_strides(const int64_t ext[4], const int order[4], int64_t s[4]);

/* A conv or conv_transpose weight packed densely for a GEMM kernel, seen as
 * (cout, cin, kh, kw) with cout and cin possibly zero-padded: strides of
 * those dimensions (s) and of w's own (w_s: conv_transpose2d's w is [Cin,
 * Cout, KH, KW]), the element count, and whether padding must be zeroed. */
typedef struct dk_pack_plan {
    int64_t s[4], w_s[4];
    uint64_t elements;
    int padded;
} dk_pack_plan;
/* coutp, cinp: the padded counts (at least w's); order as for
 * dk__weight_pack_strides. */
void dk__weight_pack_plan(const dk_tensor *w, int transposed, int64_t coutp, int64_t cinp, const int order[4],
                          dk_pack_plan *plan);

/* ---- conv_up2.c (besides dk__up2_axis / dk__up2_weights) ---- */

/* The cache key of the summed phase weights of w for these pads. */
void dk__up2_weight_key(dk_weight_key *key, const dk_tensor *w, const dk_conv2d_desc *d);
/* The layout of w's summed phase weights (dk__up2_weights) packed with the
 * dimensions of order innermost first (dk__weight_pack_strides): their
 * element strides in os; returns their element count. */
uint64_t dk__up2_weight_layout(const dk_tensor *w, const dk_conv2d_desc *d, const int order[4], int64_t os[4]);
/* Those weights in a new host array of bytes (free() it), or NULL with *st
 * the failure. */
void *dk__up2_weights_host(dk_context *ctx, const dk_tensor *w, const dk_conv2d_desc *d, const int64_t os[4],
                           uint64_t bytes, dk_status *st);

/* ---- norm_plan.c ---- */

/* GroupNorm's vector mode for a 4-D tensor (shape, element strides): 1 dense
 * NCHW, 2 dense NHWC, else 0 (element loads), in 16-byte vectors of vw
 * elements that never straddle a channel (NCHW) or an image (NHWC).
 * aligned: its first element starts a 16-byte vector.  max_pixel_vectors:
 * the NHWC kernel holds one pixel's vectors in a workgroup (its size). */
int dk__gn_vector_mode(int aligned, const int64_t shape[4], const int64_t strides[4], int64_t vw,
                       int64_t max_pixel_vectors);

/* GroupNorm's work split for the GPU backends' three passes, in the units of
 * vector mode `mode` (0: elements, 1: NCHW vectors, 2: NHWC pixels):
 * - the statistics pass: `chunks` runs of `chunk` units per group (mode 2: per
 *   image, whole pixels of every group, `threads / (C / vw)` pixels a step),
 *   each reduced to one partial that the merge pass combines;
 * - the NHWC normalize pass (mode 2): apply_chunks runs of apply_chunk pixels
 *   per image.  Why the two differ: docs/group-norm.md. */
typedef struct dk_gn_split {
    int64_t chunks, chunk;             /* statistics */
    int64_t apply_chunks, apply_chunk; /* mode 2 normalize */
} dk_gn_split;

void dk__gn_split(int mode, const int64_t shape[4], int32_t groups, int64_t vw, int64_t threads, dk_gn_split *s);

/* RMS norm (dk_rms_norm) over the channels of each position.  The position
 * dims (every dim but 1) lose their extent-1 dims, adjacent ones that both x
 * and y lay out as one run merge, and the rest sit right-aligned in four
 * slots (slot 3 innermost; unused slots extent 1, stride 0).  Both kernels
 * give each position `lanes` lanes (a power of two) that share its channels
 * (lane l takes channel units l, l + lanes, ...; a unit: a 16-byte vector
 * with vec, else one channel), keep up to the backend's budget of units in
 * registers between the sum of squares and the scaling (in_regs: all of them,
 * x read once; else the rest are read again), and add their partial sums
 * across the lanes.  They differ in which lanes are neighbours:
 *   DK__RMS_ROWS     channel-contiguous (NHWC, NDHWC): the lanes of one
 *                    position are adjacent threads, several positions per
 *                    workgroup; vec when x and y have channel stride 1, C,
 *                    the position strides and both first elements allow
 *                    16-byte vectors;
 *   DK__RMS_COLUMNS  channel-strided (NCHW, NCDHW: the innermost position
 *                    steps less than a channel): adjacent threads take
 *                    adjacent positions, so a subgroup's loads of one channel
 *                    are coalesced; the lanes of a position sit a workgroup
 *                    slice apart; vec (backends with column_vec_keep or
 *                    column_tile_bytes) when a thread can take vw adjacent
 *                    positions of a channel as one 16-byte vector.  With vec
 *                    and a backend's column_tile_bytes, tile > 0 where the
 *                    tile fits (else vec needs column_vec_keep, and the
 *                    scalar kernel runs without it): a workgroup stages a tile
 *                    of `tile` positions x C channels in shared memory
 *                    (x read once, in 16-byte vectors of whole channel runs),
 *                    sums each position's squares from there and writes the
 *                    tile back scaled; lanes and in_regs are then unused.
 * Any strides work in both (the generic fallback is ROWS without vec). */
enum { DK__RMS_ROWS = 0, DK__RMS_COLUMNS = 1 };
typedef struct dk_rms_plan {
    int kernel;              /* DK__RMS_ROWS / DK__RMS_COLUMNS */
    int vec, in_regs, lanes;
    int64_t tile;            /* COLUMNS with vec: positions per staged tile (a power of two); 0: none */
    int32_t pdims;           /* position dims after folding (0: one position) */
    int64_t channels, positions;
    int64_t cs[2];           /* channel stride of x, y (elements) */
    int64_t pshape[4];       /* position dims, slot 3 innermost */
    int64_t ps[2][4];        /* their strides in x, y (elements) */
} dk_rms_plan;
/* What a backend's kernels take: vw channels per 16-byte vector (1: no
 * vector path); lanes per position at most (ROWS, COLUMNS); units one lane
 * keeps in registers (vectors, scalars); column_vec_keep: 0, or the channel
 * vectors one lane keeps in COLUMNS' vector kernel (vw adjacent positions per
 * 16-byte vector), with at most max_column_vec_lanes lanes; column_tile_bytes:
 * 0, or the shared memory of the staged column tile (tile positions x C
 * channels, tile a power of two of at least 32 bytes per channel and at most
 * max_tile positions). */
typedef struct dk_rms_kernel_limits {
    int64_t vw, max_row_lanes, max_column_lanes, keep_vectors, keep_scalars;
    int64_t column_vec_keep, max_column_vec_lanes;
    int64_t column_tile_bytes, max_tile;
} dk_rms_kernel_limits;
/* x_addr, y_addr: byte addresses (or offsets from a 16-byte aligned base) of
 * the first elements. */
void dk__rms_plan(const dk_tensor *x, const dk_tensor *y, uint64_t x_addr, uint64_t y_addr,
                  const dk_rms_kernel_limits *lim, dk_rms_plan *p);
/* Whether plan p's ROWS vector kernel may read gamma and beta (either may be
 * NULL; addresses as for x_addr) as 16-byte vectors beside x's: x's dtype,
 * unit stride, a 16-byte aligned start (whole vectors: the plan's C is). */
int dk__rms_affine_vec(const dk_rms_plan *p, const dk_tensor *x, const dk_tensor *gamma, uint64_t gamma_addr,
                       const dk_tensor *beta, uint64_t beta_addr);

/* ---- elementwise_plan.c ---- */

/* Whether strides s (in the walk order of shape) make an operand one dense
 * run, element i at offset i, and it is 16-byte aligned (aligned). */
int dk__elt_dense_walk(const int64_t shape[4], const int64_t s[4], int aligned);

/* Whether a nearest upsample takes the vector walk: integer factors per walk
 * dimension (y's extent shape[k] over a's extent a_ext[k]) of at most 64
 * output vectors per input vector, walk dim 3 unit-stride in a and y with a's
 * rows in whole 16-byte vectors of 8 elements, every other stride (of an
 * extent above 1) a multiple of 8 elements; aligned: both starts on 16-byte
 * vectors.  fac (may be NULL) gets the factors as they are found. */
int dk__elt_upsample_vec(const int64_t shape[4], const int64_t a_ext[4], const int64_t as[4], const int64_t ys[4],
                         int aligned, int fac[4]);

/* Whether a layout-changing copy (a's unit stride at walk position k, y's at
 * 3) moves 16-byte vectors: both unit-stride dims and every other stride (of
 * an extent above 1) in whole vectors of the operand's dtype; aligned: both
 * starts on 16-byte vectors.  1: one 16-bit dtype (raw bits), 2: any other
 * pair (through floats), 0: element tiles. */
int dk__elt_transpose16(const int64_t shape[4], const int64_t as[4], const int64_t ys[4], int k, dk_dtype at,
                        dk_dtype yt, int aligned);

/* ---- dims.c ---- */

/* Up to DK_FOLD_MAX views of one op lowered to views of at most 4 dims (the
 * backends' limit) that reach the same elements in the same order: adjacent
 * dims that every view lays out as one run merge (innermost pairs first);
 * bit d of keep forbids merging dims d and d + 1 (they mean different things
 * to the op).  Where that is not enough and allow_loop is set, the leading dim
 * becomes a loop: view i of iteration j is dk__fold_view(f, i, j).  The views
 * must have equal ndim (and, for a loop, equal leading sizes).  Returns 0 when
 * the views cannot be lowered so (nothing is written then but *f). */
#define DK_FOLD_MAX 4
typedef struct dk_fold {
    dk_tensor v[DK_FOLD_MAX];
    uint64_t step[DK_FOLD_MAX]; /* bytes per loop iteration */
    int64_t loops;              /* 1: no loop */
    int count;
} dk_fold;
int dk__fold_views(int count, const dk_tensor *const in[], unsigned keep, int allow_loop, dk_fold *f);
dk_tensor dk__fold_view(const dk_fold *f, int i, int64_t loop);
/* Whether dims d and d + 1 of t walk as one dim (outer stride = inner stride *
 * inner size, or either of size 1). */
int dk__dims_mergeable(const dk_tensor *t, int32_t d);
/* t with dims d and d + 1 walked as one (dk__dims_mergeable must hold). */
dk_tensor dk__merge_dims(const dk_tensor *t, int32_t d);
/* t without dim d, at index `index` of it. */
dk_tensor dk__drop_dim(const dk_tensor *t, int32_t d, int64_t index);
/* t with dims a and b exchanged (a view of the same elements). */
dk_tensor dk__swap_dims(const dk_tensor *t, int32_t a, int32_t b);

/* ---- conv3d.c ---- */

/* The most scratch a conv3d stages its input frames in (bytes), unless one
 * output frame's staged input alone is larger (then that one frame). */
#define DK_CONV3D_SCRATCH_CAP ((uint64_t)512 << 20)

/* How the output frames that need no copy run (the rest are staged). */
enum { DK__C3D_STAGED = 0, DK__C3D_FRAMES = 1, DK__C3D_TIME = 2 };

/* The lowering of one conv3d (src/conv3d.c has the paths):
 * output frames [direct_begin, direct_end) run by `path` without a copy; the
 * frames before and after go through the time-im2col copy X'[frames, H, W, kc]
 * (kc_data = KT*Cin copied channels: tap-major, channel kt*Cin + c, where
 * tap_major (groups 1), else c*KT + kt; kc - kc_data zero channels after them
 * where the backend's fastest conv wants a channel multiple, groups 1 only),
 * group frames per conv2d, each staged frame
 * frame_elems elements (a whole number of 16-byte vectors).  The scratch holds
 * a zero block (the source of the pad channels' zeros) when kc > kc_data, then
 * a dense weight copy in the staged channel order when copy_weight
 * (weight_bytes at weight_offset: tap-major, padded, or w's strides do not
 * give the view [Cout, KT*Cin/groups, KH, KW]), then the slab at slab_offset; scratch_bytes: 0 when nothing is
 * staged. */
typedef struct dk_conv3d_plan {
    int path;
    int64_t ot, direct_begin, direct_end;
    int64_t kc, kc_data, group;
    int tap_major, copy_weight;
    uint64_t frame_elems, weight_offset, weight_bytes, slab_offset, scratch_bytes;
} dk_conv3d_plan;
/* The padded staged channel count for kc_data channels and the backend's
 * channel multiple (0 or 1: none): a multiple of it where that adds at most a
 * quarter to the conv's work, else kc_data. */
int64_t dk__conv3d_padded_channels(int64_t kc_data, int64_t groups, int64_t multiple);
/* tc: the cache's frames (0: none); multiple: the backend's conv channel
 * multiple (dk_backend_ops.conv_channel_multiple; 0: none); cap: the scratch
 * bound (DK_CONV3D_SCRATCH_CAP).  Validated arguments; returns 0 when a staged
 * frame's size overflows. */
int dk__conv3d_plan(const dk_conv3d_desc *d, int64_t tc, const dk_tensor *x, const dk_tensor *w,
                    const dk_tensor *y, const dk_tensor *residual, int64_t multiple, uint64_t cap,
                    dk_conv3d_plan *p);
/* The op on validated arguments (op: the public name for messages; cache may be
 * NULL).  multiple: the staged channel multiple (0: no padding; tests pad the
 * CPU and lavapipe runs with it), -1: DIFKERN_CONV3D_PAD_CHANNELS where set
 * (benchmark builds), else the backend's conv_channel_multiple. */
dk_status dk__conv3d(dk_context *ctx, const char *op, const dk_conv3d_desc *d, const dk_tensor *cache,
                     const dk_tensor *x, const dk_tensor *w, const dk_tensor *bias, const dk_tensor *residual,
                     const dk_tensor *y, int64_t multiple);
/* Frames [f0, f0 + count) of image n of 5-D t ([N, C, T, H, W]), every step-th,
 * as the batch of a 4-D [count, C, H, W] view. */
dk_tensor dk__conv3d_frames(const dk_tensor *t, int64_t n, int64_t f0, int64_t count, int64_t step);
/* The TIME lowering's conditions: a time-only kernel (KH = KW = 1), unit
 * spatial strides, no spatial padding, and H and W one run in x, y and the
 * residual (and the cache, if given). */
int dk__conv3d_is_time(const dk_conv3d_desc *d, const dk_tensor *cache, const dk_tensor *x, const dk_tensor *w,
                       const dk_tensor *y, const dk_tensor *residual);
/* The TIME lowering's view: images [n0, n0 + images) and frames [f0, f0 +
 * frames) of 5-D t as the 4-D [images, C, frames, H*W] (time as the rows; its
 * kernel is dk__drop_dim(w, 4, 0), [Cout, Cin/groups, KT, 1]). */
dk_tensor dk__conv3d_time_view(const dk_tensor *t, int64_t n0, int64_t images, int64_t f0, int64_t frames);
/* Waits for the queued work, then frees the context's conv3d scratch (if any). */
dk_status dk__conv3d_release_scratch(dk_context *ctx);

#endif /* DK_PLAN_H */
