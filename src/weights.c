/* The prepared-weight cache: repacked weights keyed by buffer identity, view and
 * contents generation.  A short linked list: a model has a few hundred weights and
 * a lookup is per op launch, far cheaper than the op. */
#include "dk_internal.h"

#include <stdlib.h>

struct dk_weight_entry {
    dk_weight_key key;
    void *data;
    uint64_t bytes;
    dk_weight_free_fn free_fn;
    struct dk_weight_entry *next;
};

void dk__weight_key(dk_weight_key *key, const dk_tensor *w, int32_t use, int32_t variant) {
    int32_t i;
    memset(key, 0, sizeof *key); /* padding too: keys are compared with memcmp */
    key->buffer_id = w->buffer->id;
    key->generation = w->buffer->generation;
    key->offset = w->offset;
    key->dtype = (int32_t)w->dtype;
    key->ndim = w->ndim;
    key->use = use;
    key->variant = variant;
    for (i = 0; i < w->ndim && i < DK_MAX_DIMS; i++) {
        key->shape[i] = w->shape[i];
        key->strides[i] = w->strides[i];
    }
}

void *dk__weight_find(dk_context *ctx, const dk_weight_key *key) {
    struct dk_weight_entry *e;
    for (e = ctx->weights; e; e = e->next)
        if (!memcmp(&e->key, key, sizeof *key)) return e->data;
    return NULL;
}

dk_status dk__weight_insert(dk_context *ctx, const dk_weight_key *key, void *data, uint64_t bytes,
                            dk_weight_free_fn free_fn) {
    struct dk_weight_entry *e = (struct dk_weight_entry *)calloc(1, sizeof *e);
    if (!e) {
        free_fn(ctx, data);
        return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "out of host memory for the prepared-weight cache");
    }
    e->key = *key;
    e->data = data;
    e->bytes = bytes;
    e->free_fn = free_fn;
    e->next = ctx->weights;
    ctx->weights = e;
    ctx->weights_bytes += bytes;
    return DK_OK;
}

void dk__weight_drop_buffer(dk_context *ctx, const dk_buffer *buffer) {
    struct dk_weight_entry **p = &ctx->weights;
    while (*p) {
        struct dk_weight_entry *e = *p;
        if (e->key.buffer_id == buffer->id) {
            *p = e->next;
            ctx->weights_bytes -= e->bytes;
            e->free_fn(ctx, e->data);
            free(e);
        } else {
            p = &e->next;
        }
    }
}

void dk__weight_drop_all(dk_context *ctx) {
    while (ctx->weights) {
        struct dk_weight_entry *e = ctx->weights;
        ctx->weights = e->next;
        e->free_fn(ctx, e->data);
        free(e);
    }
    ctx->weights_bytes = 0;
}
