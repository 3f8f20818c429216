/* Host memory of banded decodes (sdxl_vae.h): blocks from dk_host_alloc
 * (pinned, so the band copies go by DMA) while that works, else malloc.
 * Freed blocks are kept, best fit on reuse, for the rest of the decode and the
 * decodes after it until dk_vae_destroy: fresh pages fault on first touch
 * (a download into new memory runs at the page-fault rate, far below the
 * bus's) and pinning gigabytes takes seconds, which a large banded decode
 * would otherwise pay on every call. */
#include "vae_internal.h"

#include <stdlib.h>

static void *vaeh_new(dk_vae *vae, uint64_t bytes, int pin) {
    dk__vae_hostmem *h = &vae->hostmem;
    void *p = NULL;
    if (pin && !h->pin_failed && h->npinned < (int32_t)(sizeof h->pinned / sizeof h->pinned[0])) {
        if (dk_host_alloc(vae->ctx, bytes, &p) == DK_OK) {
            h->pinned[h->npinned++] = p;
            return p;
        }
        h->pin_failed = 1; /* out of pinned memory: malloc from now on */
    }
    return malloc((size_t)bytes);
}

static void vaeh_free(dk_vae *vae, void *p) {
    dk__vae_hostmem *h = &vae->hostmem;
    int32_t i;
    if (!p) return;
    for (i = 0; i < h->npinned; i++)
        if (h->pinned[i] == p) {
            (void)dk_host_free(vae->ctx, p);
            h->pinned[i] = h->pinned[--h->npinned];
            return;
        }
    free(p);
}

/* Remembers the real size of a block handed out (when the table is full the
 * block is simply put back under the size its user asked for). */
static void vaeh_give(dk__vae_hostmem *h, void *p, uint64_t bytes) {
    if (!p || h->ngiven >= (int32_t)(sizeof h->given / sizeof h->given[0])) return;
    h->given[h->ngiven] = p;
    h->given_bytes[h->ngiven++] = bytes;
}

void *dk__vae_host_get(dk_vae *vae, uint64_t bytes, int pin) {
    dk__vae_hostmem *h = &vae->hostmem;
    int32_t i, best = -1;
    void *p;
    for (i = 0; i < h->nspare; i++)
        if (h->spare_bytes[i] >= bytes && (best < 0 || h->spare_bytes[i] < h->spare_bytes[best])) best = i;
    if (best < 0) {
        p = vaeh_new(vae, bytes, pin);
        if (p) {
            h->allocs++;
            h->alloc_bytes += bytes;
        }
        vaeh_give(h, p, bytes);
        return p;
    }
    p = h->spare[best];
    vaeh_give(h, p, h->spare_bytes[best]);
    h->nspare--;
    h->spare[best] = h->spare[h->nspare];
    h->spare_bytes[best] = h->spare_bytes[h->nspare];
    return p;
}

/* Keeps p (at least bytes long); when the list is full, the smallest goes. */
void dk__vae_host_put(dk_vae *vae, void *p, uint64_t bytes) {
    dk__vae_hostmem *h = &vae->hostmem;
    int32_t i, small = 0;
    if (!p) return;
    for (i = 0; i < h->ngiven; i++)
        if (h->given[i] == p) {
            bytes = h->given_bytes[i];
            h->given[i] = h->given[--h->ngiven];
            h->given_bytes[i] = h->given_bytes[h->ngiven];
            break;
        }
    if (h->nspare < (int32_t)(sizeof h->spare / sizeof h->spare[0])) {
        h->spare[h->nspare] = p;
        h->spare_bytes[h->nspare++] = bytes;
        return;
    }
    for (i = 1; i < h->nspare; i++)
        if (h->spare_bytes[i] < h->spare_bytes[small]) small = i;
    if (h->spare_bytes[small] >= bytes) {
        vaeh_free(vae, p);
        return;
    }
    vaeh_free(vae, h->spare[small]);
    h->spare[small] = p;
    h->spare_bytes[small] = bytes;
}

void dk__vae_host_release(dk_vae *vae) {
    dk__vae_hostmem *h = &vae->hostmem;
    int32_t i;
    for (i = 0; i < h->nspare; i++) vaeh_free(vae, h->spare[i]);
    h->nspare = 0;
}
