/* Internal definitions of the AutoencoderKL family's decoder and encoder
 * (src/vae/vae_*.c): the parameter table, the device weight sets and the
 * executor shared by vae_params.c, vae_exec.c, vae_decode.c and vae_encode.c.
 * Shared names carry the dk__vae_ prefix (amalgamation). */
#ifndef DK_VAE_INTERNAL_H
#define DK_VAE_INTERNAL_H

#include "../dk_internal.h"
#include "../../include/difkern/vae.h"

#define DK__VAE_MAX_PARAMS 272
#define DK__VAE_NAME 96

/* Parameter flags. */
#define DK__VAE_P_BIAS_SCALED 1 /* a bias added to an already scaled input: x activation scale */
#define DK__VAE_P_LINEAR 2      /* [N, K] linear weight; the original naming stores [N, K, 1, 1] */
#define DK__VAE_P_RESID_OUT 4   /* random init: a residual branch's last conv (smaller) */

typedef struct dk__vae_param {
    char diffusers[DK__VAE_NAME];  /* full diffusers name */
    char original[DK__VAE_NAME];   /* original name without "first_stage_model." */
    int32_t ndim;
    int64_t shape[4];
    int64_t numel;
    int32_t flags;
    int64_t elem_offset;           /* in the weight buffer, in elements (aligned) */
    float *host;                   /* host copy of 1-D parameters (biases, norms) */
} dk__vae_param;

typedef struct dk__vae_resnet {
    int32_t cin, cout;
    int32_t n1g, n1b, c1w, c1b, n2g, n2b, c2w, c2b, scw, scb; /* scw = scb = -1: no shortcut */
} dk__vae_resnet;

typedef struct dk__vae_attn {
    int32_t ng, nb, qw, qb, kw, kb, vw, vb, ow, ob;
} dk__vae_attn;

/* Which parts a parameter table holds (dk__vae_arch_build). */
#define DK__VAE_DEC 1
#define DK__VAE_ENC 2

typedef struct dk__vae_arch {
    int32_t lc;                  /* latent channels */
    int32_t quant;               /* 1: quant_conv / post_quant_conv */
    int32_t parts;               /* DK__VAE_DEC | DK__VAE_ENC */
    /* decoder (indices -1 when absent; pq_w also without quant convs) */
    int32_t pq_w, pq_b, in_w, in_b;
    dk__vae_resnet mid[2];
    dk__vae_attn attn;
    dk__vae_resnet up[4][3];
    int32_t upc_w[3], upc_b[3];  /* upsampler convs of up_blocks.0..2 */
    int32_t no_g, no_b, out_w, out_b;
    /* encoder */
    int32_t e_in_w, e_in_b;
    dk__vae_resnet down[4][2];
    int32_t dsc_w[3], dsc_b[3];  /* downsampler convs of down_blocks.0..2 */
    dk__vae_resnet e_mid[2];
    dk__vae_attn e_attn;
    int32_t e_no_g, e_no_b, e_out_w, e_out_b, q_w, q_b; /* q_w -1: no quant_conv */
    dk__vae_param p[DK__VAE_MAX_PARAMS];
    int32_t np;
    int64_t total_elems;         /* weight buffer size in elements */
} dk__vae_arch;

/* A set of device weights in one dtype; act_scale is the activation scale the
 * biases were uploaded for (1 except fp16). */
typedef struct dk__vae_weights {
    dk_dtype dtype;
    float act_scale;
    dk_buffer *buf;
} dk__vae_weights;

/* Host blocks of banded decodes, kept between decodes (vae_hostmem.c). */
typedef struct dk__vae_hostmem {
    void *spare[8];
    uint64_t spare_bytes[8];
    int32_t nspare;
    void *pinned[64]; /* the live blocks that came from dk_host_alloc */
    int32_t npinned, pin_failed;
    void *given[64];  /* blocks handed out, with their real sizes (a block reused */
    uint64_t given_bytes[64]; /* for a smaller activation keeps its size when put back) */
    int32_t ngiven;
    int32_t allocs;   /* new blocks so far (DIFKERN_VAE_PROFILE prints them) */
    uint64_t alloc_bytes;
} dk__vae_hostmem;

struct dk_vae {
    dk_context *ctx;
    dk_dtype dtype;
    dk_vae_options opt;
    dk_vae_model model;   /* resolved (never AUTO) */
    float scaling, shift; /* in use: the options' or the model's */
    char naming[32];
    dk__vae_arch arch;
    dk__vae_weights w;
    dk_buffer *arena;     /* activations of the untiled decode, kept between decodes */
    dk_buffer *check;     /* the device-tensor output's finiteness test (statistics; lazy) */
    dk_buffer *mean_bias; /* the encoder's last bias, mean channels, minus the shift (f32; lazy) */
    dk_context *host_ctx; /* CPU context of host-side work: banded GroupNorms, output conversion (lazy) */
    dk__vae_hostmem hostmem;
};

/* vae_hostmem.c: a block of at least bytes (pinned if pin and possible), NULL
 * when out of memory; put keeps it for reuse; release frees the kept ones. */
void *dk__vae_host_get(dk_vae *vae, uint64_t bytes, int pin);
void dk__vae_host_put(dk_vae *vae, void *p, uint64_t bytes);
void dk__vae_host_release(dk_vae *vae);

/* vae_params.c: the table of the parts (DK__VAE_DEC / DK__VAE_ENC) of a model
 * with lc latent channels, with or without the quant convs.  The decoder's
 * parameters come first, in the same order for every model. */
void dk__vae_arch_build(dk__vae_arch *a, int32_t lc, int32_t quant, int32_t parts);
void dk__vae_arch_free(dk__vae_arch *a);
dk_tensor dk__vae_weight(const dk__vae_weights *ws, const dk__vae_arch *a, int32_t param);
/* A source tensor as found in a file. */
typedef struct dk__vae_src {
    const char *name;       /* the name it was found under */
    dk_dtype dtype;
    int32_t ndim;
    int64_t shape[4];
    const void *data;       /* little-endian elements, row-major */
} dk__vae_src;
/* Returns 1 and fills *out when name exists, 0 when not, -1 when it exists in a
 * dtype other than F32/F16/BF16 (out->name set). */
typedef int (*dk__vae_lookup_fn)(void *user, const char *name, dk__vae_src *out);
/* Detects the naming, the parts present (of those in want) and the model
 * (vae->opt.model or AUTO), builds vae->arch, then loads it; fn names the
 * public call (messages), sdxl: the old SDXL entry points' wording. */
dk_status dk__vae_load(dk_vae *vae, dk__vae_lookup_fn lookup, void *user, int32_t want, int sdxl);
/* Resolves the model of options (AUTO: SDXL), builds the parts and fills them. */
dk_status dk__vae_load_random(dk_vae *vae, uint64_t seed, int32_t parts);
/* The model's latent channels, quant convs, scaling and shift. */
void dk__vae_model_config(dk_vae_model m, int32_t *lc, int32_t *quant, float *scaling, float *shift);
/* vae->scaling / shift from the options and the model. */
void dk__vae_resolve_factors(dk_vae *vae);
/* A fp32 copy of vae->w (exact widening of fp16), biases at activation scale 1. */
dk_status dk__vae_weights_widen(dk_vae *vae, dk__vae_weights *out);
void dk__vae_weights_free(dk_context *ctx, dk__vae_weights *ws);
/* fp16: re-upload the scaled biases for a new activation scale. */
dk_status dk__vae_rescale(dk_vae *vae, float act_scale);

/* ------------------------------------------------ vae_exec.c: the executor
 * The decoder's and the encoder's forward passes (vae_decode.c, vae_encode.c)
 * are written once against these primitives; the executor runs them in one of
 * three modes:
 *   PLAN:   nothing runs; allocations are recorded and assigned to reusable
 *           device buffers (the memory plan), or band buffer sizes are measured;
 *   DEVICE: every activation lives at a planned offset of one device buffer
 *           (the arena; untiled);
 *   BANDED: every activation lives in host memory; each conv runs over bands of
 *           full-width rows with exact halos, each GroupNorm uses statistics of
 *           the whole tensor (bounded device memory).
 * An activation is [1, C, H, W] stored NHWC in the executor's dtype. */
#define DK__VAE_MAX_ACTS 256
#define DK__VAE_GN_FLOATS 64 /* 32 groups x (mean, variance) */

typedef struct dk__vae_act {
    int32_t c, h, w, id; /* id < 0: none */
} dk__vae_act;

typedef struct dk__vae_exec {
    dk_vae *vae;
    const dk__vae_weights *ws;
    dk_dtype dtype;
    float s;                 /* activation scale (fp16: < 1) */
    int32_t dry;             /* PLAN: record only */
    int32_t banded;
    int32_t band_rows;       /* BANDED: rows per band at latent resolution */
    int32_t lat_h;           /* latent height (band rows scale with resolution) */
    dk_status st;            /* first failure; later primitives do nothing */
    int32_t nacts;
    uint64_t act_bytes[DK__VAE_MAX_ACTS];
    void *act_host[DK__VAE_MAX_ACTS];   /* BANDED: host storage */
    /* DEVICE/PLAN: lifetimes (alloc/free event numbers) and the arena offsets
     * the plan assigns (largest first, lowest offset free over the lifetime) */
    int32_t events;
    int32_t act_start[DK__VAE_MAX_ACTS], act_end[DK__VAE_MAX_ACTS];
    uint64_t act_off[DK__VAE_MAX_ACTS];
    int64_t act_view[DK__VAE_MAX_ACTS];   /* the tensor's byte offset from its storage's start */
    int32_t act_next[DK__VAE_MAX_ACTS];   /* -1, or the activation placed right after this one */
    int32_t planned;         /* offsets assigned: replay the recorded sequence */
    int32_t nplanned;        /* activations in the plan */
    uint64_t arena_bytes;
    dk_buffer *arena;
    /* banded: band buffers (input, residual, output) and the attention's size */
    dk_buffer *band[3];
    uint64_t band_bytes[3];
    uint64_t attn_bytes;
    uint64_t scratch_reserve; /* room kept for backend scratch outside the plan (HIP's V^T) */
    void *stage;             /* BANDED: host staging of one band */
    uint64_t stage_bytes;
    /* BANDED: split GroupNorm.  Each conv output's band statistics (device, one
     * slot of DK__VAE_GN_FLOATS per band after the input's merged slot) merged on
     * the host per activation (act_count: values per group so far, 0: none). */
    dk_buffer *gn_stats;
    uint64_t gn_stats_bytes;
    float *act_stats;        /* [DK__VAE_MAX_ACTS][DK__VAE_GN_FLOATS], malloc'd when needed */
    double act_count[DK__VAE_MAX_ACTS];
    /* BANDED on a GPU: host blocks pinned (vae_hostmem.c) unless DIFKERN_VAE_PINNED=0 */
    int32_t pin;
    /* dk__vae_output's destination when it is a device tensor (the sample's view)
     * instead of host floats; check_out: also test the result (in the decode
     * dtype) for NaN/Inf into out_bad (untiled or device output; a banded
     * decode to host floats tests the floats) */
    const dk_tensor *out_dev;
    int32_t check_out, out_bad;
    /* DIFKERN_VAE_PROFILE=1: wall time of each primitive, synced before and
     * after, summed per label and printed to stderr by dk__vae_exec_free */
    int32_t profile, nprof;
    double prof_t0;
    struct {
        char label[72];
        int32_t count;
        double ms;
    } prof[64];
} dk__vae_exec;

/* A GroupNorm(+SiLU) in front of a conv, or none (gamma < 0). */
typedef struct dk__vae_conv_args {
    dk__vae_act in;
    int32_t gn_gamma, gn_beta; /* -1: no norm */
    int32_t w, b;              /* param indices; b -1: no bias */
    int32_t k, upsample;
    int32_t down;              /* 1: the encoder's downsampler (pad 0 top/left, 1
                                  bottom/right, stride 2) */
    dk__vae_act resid;         /* id -1: none */
    float out_scale;
    int32_t consume;           /* the input dies here (its buffer may be reused in place) */
    int32_t cout;              /* > 0: only the weight's first cout output channels */
    const dk_tensor *bias_t;   /* non-NULL: this bias instead of param b (cout channels) */
} dk__vae_conv_args;

void dk__vae_exec_init(dk__vae_exec *e, dk_vae *vae, const dk__vae_weights *ws, int32_t dry,
                       int32_t banded, int32_t band_rows, int32_t lat_h);
/* DEVICE after a PLAN run of the same sequence: run in vae->arena, kept
 * between runs and made anew when smaller than the plan, or larger under
 * max_device_bytes (a budget must not pay for an earlier, larger plan). */
void dk__vae_exec_realize(dk__vae_exec *e);
void dk__vae_exec_free(dk__vae_exec *e);
uint64_t dk__vae_exec_plan_bytes(dk__vae_exec *e); /* arena, or bands + attention bytes */
/* What a budget must hold besides the weights: the plan plus scratch_reserve. */
uint64_t dk__vae_exec_budget_bytes(dk__vae_exec *e);
/* x (NCHW floats) * mul + add as an activation. */
dk__vae_act dk__vae_input(dk__vae_exec *e, const float *x, int32_t c, int32_t h, int32_t w, float mul, float add);
/* The device tensor x ([1, c, h, w], any dtype and strides) as an activation;
 * *bad (when not NULL): whether it holds NaN/Inf (c <= 32). */
dk__vae_act dk__vae_input_dev(dk__vae_exec *e, const dk_tensor *x, int32_t c, int32_t h, int32_t w, int *bad);
/* Whether x ([N, C, H, W], any dtype and strides) holds a NaN or an infinity,
 * tested on the device: its GroupNorm statistics (N * groups <= 32 pairs, in
 * vae->check) are finite for finite 16-bit values and NaN or infinite as soon
 * as one value is (the shifted sums and Chan steps propagate them).  In fp32, huge
 * finite values (beyond ~1e19) can overflow them too: a caller confirms a
 * non-finite answer for fp32 by reading x back.  *st: the status. */
int dk__vae_stats_nonfinite(dk_vae *vae, const dk_tensor *x, int32_t groups, dk_status *st);
/* NCHW floats into out, or into e->out_dev when set; frees a. */
void dk__vae_output(dk__vae_exec *e, dk__vae_act a, float *out);
void dk__vae_free_act(dk__vae_exec *e, dk__vae_act a);
/* Sample b's view [1, ...] of the batch tensor t. */
static inline dk_tensor dk__vae_sample_view(const dk_tensor *t, int32_t b) {
    dk_tensor v = *t;
    v.shape[0] = 1;
    v.offset += (uint64_t)((int64_t)b * v.strides[0] * (int64_t)dk_dtype_size(v.dtype));
    return v;
}
/* One forward pass (decode or encode of one sample): the progress callback's
 * stage names and when the API call began. */
typedef struct dk__vae_run {
    dk_vae *vae;
    double t0;
    const char *const *stage_names; /* DK_VAE_NUM_STAGES of them */
} dk__vae_run;
/* Stage `stage` is done: with a progress callback (and not PLAN), sync and
 * report it with the time since r->t0. */
void dk__vae_stage(dk__vae_exec *e, const dk__vae_run *r, int32_t stage);
dk__vae_act dk__vae_conv(dk__vae_exec *e, const dk__vae_conv_args *args);
/* A conv whose output x leaves room for the conv that consumes it (GroupNorm+SiLU
 * in place, 3x3, stride 1, to next_c <= C channels, no residual): that conv
 * then writes its output over x's dead rows, in bands, so the pair needs x plus
 * an eighth of the output instead of both.  Untiled only (elsewhere a plain
 * conv); DIFKERN_VAE_SHRINK=0 turns it off. */
dk__vae_act dk__vae_conv_roomy(dk__vae_exec *e, const dk__vae_conv_args *args, int32_t next_c);
/* Mid-block attention: x + to_out(attention(q, k, v of GroupNorm(x))); consumes x. */
dk__vae_act dk__vae_attention(dk__vae_exec *e, dk__vae_act x, const dk__vae_attn *t);

/* vae_decode.c: shared by vae_encode.c */
/* Untiled or banded, and what the plan allocates. */
typedef struct dk__vae_mode {
    int32_t banded, band_rows; /* band_rows: latent rows per band (h when untiled) */
    uint64_t plan_bytes;       /* what the plan allocates besides the weights */
    uint64_t budget_bytes;     /* that plus room for backend scratch */
} dk__vae_mode;
/* A PLAN run of one h x w latent's forward pass (banded or not): the plan's
 * bytes, and in *budget what a budget must hold besides the weights. */
typedef uint64_t (*dk__vae_dry_fn)(dk_vae *vae, int32_t banded, int32_t band_rows, int32_t h, int32_t w,
                                   uint64_t *budget);
/* Untiled, or banded when options->tile_rows asks for it or the untiled plan
 * exceeds options->max_device_bytes (the largest band that fits, halving from
 * h); DK_ERR_OUT_OF_MEMORY naming the minimum when even bands of one latent row
 * do not fit.  what: the work for the message ("a 64x64 latent"). */
dk_status dk__vae_choose(dk_vae *vae, const char *fn, const char *what, int32_t h, int32_t w, dk__vae_dry_fn dry,
                         dk__vae_mode *m);
int dk__vae_finite(const float *p, int64_t n);
int64_t dk__vae_first_nonfinite(const float *p, int64_t n);
uint64_t dk__vae_weight_bytes(const dk_vae *vae);
/* Conv arguments: no residual, no upsample, no downsample. */
dk__vae_conv_args dk__vae_conv_make(dk__vae_act in, int32_t gn_gamma, int32_t gn_beta, int32_t w, int32_t b, int32_t k,
                                    float out_scale, int32_t consume);
/* out = conv2(GN+SiLU(conv1(GN+SiLU(x)))) + shortcut(x); consumes x. */
dk__vae_act dk__vae_resnet_fwd(dk__vae_exec *e, dk__vae_act x, const dk__vae_resnet *r);
/* The public calls with the caller's name for messages (fn), for vae_sdxl.c.
 * create: from path, else from data/size; want: the parts to load; sdxl: the
 * old SDXL entry points' wording of the messages. */
dk_status dk__vae_create(dk_context *ctx, const char *fn, const char *path, const void *data, uint64_t size,
                         dk_dtype dtype, const dk_vae_options *options, int32_t want, int sdxl, dk_vae **out);
dk_status dk__vae_create_random(dk_context *ctx, const char *fn, uint64_t seed, dk_dtype dtype,
                                const dk_vae_options *options, int32_t parts, dk_vae **out);
dk_status dk__vae_decode_f32(dk_vae *vae, const char *fn, const float *latents, int32_t batch, int32_t h, int32_t w,
                             float *out, dk_vae_info *info);
dk_status dk__vae_decode_rgb8(dk_vae *vae, const char *fn, const float *latents, int32_t batch, int32_t h, int32_t w,
                              uint8_t *rgb8, dk_vae_info *info);
dk_status dk__vae_decode_tensor(dk_vae *vae, const char *fn, const dk_tensor *latents, const dk_tensor *out,
                                dk_vae_info *info);
dk_status dk__vae_plan(dk_vae *vae, const char *fn, int32_t h, int32_t w, dk_vae_info *info);

#endif /* DK_VAE_INTERNAL_H */
