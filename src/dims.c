/* Views of five dims as the backends' views of at most four (see src/plan.h).
 *
 * The backends' kernels walk at most four dims.  A 5-D view is lowered in src/
 * to 4-D views that reach the same elements in the same order: adjacent dims
 * that every view lays out as one run (outer stride = inner stride * inner
 * size, or a dim of size 1) become one dim; where no such pair exists the
 * leading dim becomes a loop of backend calls on sub-views.  No data moves. */
#include "plan.h"

#include <string.h>

int dk__dims_mergeable(const dk_tensor *t, int32_t d) {
    if (t->shape[d] == 1 || t->shape[d + 1] == 1) return 1;
    return t->strides[d] == t->strides[d + 1] * t->shape[d + 1];
}

static void dims_merge(dk_tensor *t, int32_t d) {
    int32_t i;
    int64_t stride = t->shape[d + 1] == 1 ? t->strides[d] : t->strides[d + 1];
    t->shape[d] *= t->shape[d + 1];
    t->strides[d] = stride;
    /* ndim <= DK_MAX_DIMS always; the second bound lets GCC see it where this
     * is inlined into a caller (-Warray-bounds in the header-only build) */
    for (i = d + 1; i + 1 < t->ndim && i + 1 < DK_MAX_DIMS; i++) {
        t->shape[i] = t->shape[i + 1];
        t->strides[i] = t->strides[i + 1];
    }
    t->ndim--;
    t->shape[t->ndim] = 1;
    t->strides[t->ndim] = 0;
}

int dk__fold_views(int count, const dk_tensor *const in[], unsigned keep, int allow_loop, dk_fold *out) {
    int i;
    int32_t ndim, d;
    memset(out, 0, sizeof *out);
    if (count < 1 || count > DK_FOLD_MAX) return 0;
    ndim = in[0]->ndim;
    for (i = 0; i < count; i++) {
        if (in[i]->ndim != ndim) return 0;
        out->v[i] = *in[i];
    }
    out->count = count;
    out->loops = 1;
    while (ndim > 4) {
        /* the innermost pair every view can merge, not across a kept boundary */
        int32_t pick = -1;
        for (d = ndim - 2; d >= 0 && pick < 0; d--) {
            int ok = !(keep & (1u << d));
            for (i = 0; ok && i < count; i++) ok = dk__dims_mergeable(&out->v[i], d);
            if (ok) pick = d;
        }
        if (pick >= 0) {
            for (i = 0; i < count; i++) dims_merge(&out->v[i], pick);
            /* the boundaries after the merged pair move down by one */
            keep = (keep & ((1u << pick) - 1u)) | ((keep >> 1) & ~((1u << pick) - 1u));
        } else if (allow_loop && out->loops == 1) {
            for (i = 1; i < count; i++)
                if (out->v[i].shape[0] != out->v[0].shape[0]) return 0;
            out->loops = out->v[0].shape[0];
            for (i = 0; i < count; i++) {
                dk_tensor *t = &out->v[i];
                out->step[i] = (uint64_t)t->strides[0] * dk_dtype_size(t->dtype);
                t->shape[0] = 1; /* then dropped: merged into dim 1 */
                dims_merge(t, 0);
            }
            keep >>= 1;
        } else {
            return 0;
        }
        ndim--;
    }
    return 1;
}

dk_tensor dk__fold_view(const dk_fold *f, int i, int64_t loop) {
    dk_tensor t = f->v[i];
    t.offset += (uint64_t)loop * f->step[i];
    return t;
}

dk_tensor dk__merge_dims(const dk_tensor *t, int32_t d) {
    dk_tensor r = *t;
    dims_merge(&r, d);
    return r;
}

dk_tensor dk__drop_dim(const dk_tensor *t, int32_t d, int64_t index) {
    dk_tensor r = *t;
    int32_t i;
    r.offset += (uint64_t)(index * t->strides[d]) * dk_dtype_size(t->dtype);
    for (i = d; i + 1 < t->ndim; i++) {
        r.shape[i] = t->shape[i + 1];
        r.strides[i] = t->strides[i + 1];
    }
    r.ndim--;
    r.shape[r.ndim] = 1;
    r.strides[r.ndim] = 0;
    return r;
}

dk_tensor dk__swap_dims(const dk_tensor *t, int32_t a, int32_t b) {
    dk_tensor r = *t;
    r.shape[a] = t->shape[b];
    r.shape[b] = t->shape[a];
    r.strides[a] = t->strides[b];
    r.strides[b] = t->strides[a];
    return r;
}
