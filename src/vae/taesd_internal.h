/* Internal definitions of the TAESD family (src/vae/taesd_*.c): the layer
 * program of each direction, its parameter table, and the object.  Shared
 * names carry the dk__taesd_ prefix (amalgamation). */
#ifndef DK_TAESD_INTERNAL_H
#define DK_TAESD_INTERNAL_H

#include "../dk_internal.h"
#include "../../include/difkern/taesd.h"
#include "../../include/difkern/safetensors.h"

#define DK__TAESD_MAX_PARAMS 96  /* per direction: 79 for TAEF2 */
#define DK__TAESD_MAX_LAYERS 24  /* Sequential indices 0..19 of the decoder */
#define DK__TAESD_CH 64          /* every hidden layer's channels */
#define DK__TAESD_POOL_CH 256    /* the pool branch's hidden channels */
#define DK__TAESD_POOL_GROUPS 4
#define DK__TAESD_SUFFIX 24

enum { DK__TAESD_ENC = 0, DK__TAESD_DEC = 1 };

/* Parameter flags. */
#define DK__TAESD_P_RESID_OUT 2 /* random init: a residual branch's last conv (smaller) */
#define DK__TAESD_P_GAMMA 4     /* random init: GroupNorm gamma (around 1) */

typedef struct dk__taesd_param {
    int32_t layer;                   /* the original nn.Sequential index */
    char suffix[DK__TAESD_SUFFIX];   /* "weight", "conv.2.bias", "pool.1.weight", ... */
    int32_t ndim;
    int64_t shape[4];
    int64_t numel;
    int32_t flags;
    int64_t elem_offset;             /* in the weight buffer, in elements */
} dk__taesd_param;

enum { DK__TAESD_L_CONV = 1, DK__TAESD_L_BLOCK = 2 };

/* One step of a direction's program. */
typedef struct dk__taesd_layer {
    int32_t kind;
    int32_t index;                   /* the original nn.Sequential index */
    /* conv: */
    int32_t cin, cout, stride, upsample, relu;
    int32_t w, b;                    /* parameter indices; b = -1: no bias */
    /* block: */
    int32_t cw[3], cb[3];            /* conv.0, conv.2, conv.4 */
    int32_t pool;                    /* 1: pool branch */
    int32_t pw0, pg, pb, pw3;        /* pool.0.weight, pool.1.weight/bias, pool.3.weight */
} dk__taesd_layer;

typedef struct dk__taesd_net {
    int32_t present;
    char naming[16];
    dk__taesd_layer layers[DK__TAESD_MAX_LAYERS];
    int32_t nlayers;
    dk__taesd_param p[DK__TAESD_MAX_PARAMS];
    int32_t np;
} dk__taesd_net;

struct dk_taesd {
    dk_context *ctx;
    dk_taesd_options opt;
    dk_taesd_model model;
    int32_t latent_channels, pool;
    dk__taesd_net net[2];            /* DK__TAESD_ENC, DK__TAESD_DEC */
    dk_buffer *weights;
    uint64_t weight_bytes;
    dk_buffer *act;                  /* three 64-channel slots + the pool slot */
    uint64_t act_bytes, slot_bytes, pool_bytes;
    dk_buffer *io;                   /* f32 staging of host arrays */
    uint64_t io_bytes;
};

/* taesd_weights.c */
/* The program and parameter table of one direction for c latent channels. */
void dk__taesd_net_build(dk__taesd_net *net, int32_t dir, int32_t c, int32_t pool);
/* The full key of parameter p of direction dir under a naming. */
void dk__taesd_key(char *dst, size_t cap, int32_t dir, const char *naming, const dk__taesd_param *p);
/* The view of parameter i of direction dir in the weight buffer. */
dk_tensor dk__taesd_weight(const dk_taesd *t, int32_t dir, int32_t i);

/* taesd_run.c */
/* Activation buffer for a batch of n at the largest resolution h x w with the
 * pool slot at ph x pw; staging of io_floats f32 values (0: none).  Grows only. */
dk_status dk__taesd_reserve(dk_taesd *t, int64_t n, int64_t h, int64_t w, int64_t ph, int64_t pw,
                            int64_t io_floats);
/* Slot s (0..2) as an NHWC tensor [n, c, h, w] of the decode dtype; slot 3 is the pool slot. */
dk_tensor dk__taesd_slot(const dk_taesd *t, int32_t s, int64_t n, int64_t c, int64_t h, int64_t w);
/* Every layer of direction dir on the input in slot 1 ([n, cin, h, w]); on
 * return the output is in slot *out_slot, [n, cout, *oh, *ow]. */
dk_status dk__taesd_forward(dk_taesd *t, int32_t dir, int64_t n, int64_t h, int64_t w, int32_t *out_slot,
                            int64_t *oh, int64_t *ow);
/* n * c * h * w elements of es bytes, rounded up to 256 bytes; 0 when it overflows. */
uint64_t dk__taesd_bytes(int64_t n, int64_t c, int64_t h, int64_t w, uint64_t es);
/* Checks a caller's tensor: 4-D with the given shape (-1: any size >= 1). */
dk_status dk__taesd_check_tensor(dk_taesd *t, const char *fn, const char *what, const dk_tensor *x, int64_t n,
                                 int64_t c, int64_t h, int64_t w);
/* Prefixes the context's last message with where it happened. */
dk_status dk__taesd_where(dk_taesd *t, dk_status st, int32_t dir, int32_t index, const char *what);

/* taesd_decode.c / taesd_encode.c: the whole direction from x (any dtype and
 * strides) into y (any dtype and strides). */
dk_status dk__taesd_decode_run(dk_taesd *t, const dk_tensor *x, const dk_tensor *y);
dk_status dk__taesd_encode_run(dk_taesd *t, const dk_tensor *x, const dk_tensor *y);

#endif /* DK_TAESD_INTERNAL_H */
