/* The SDXL VAE decoder's entry points (include/difkern/sdxl_vae.h), kept for
 * one release as thin wrappers over the family API (include/difkern/vae.h): a
 * dk_sdxl_vae is a dk_vae of model DK_VAE_SDXL holding only the decoder. */
#include "vae_internal.h"
#include "../../include/difkern/sdxl_vae.h"

static void vaes_options(const dk_sdxl_vae_options *in, dk_vae_options *o) {
    dk_vae_options_init(o);
    o->model = DK_VAE_SDXL;
    if (!in) return;
    o->scaling_factor = in->scaling_factor;
    o->shift_factor = 0.0f;
    o->tile_rows = in->tile_rows;
    o->max_device_bytes = in->max_device_bytes;
    o->fp16_activation_scale = in->fp16_activation_scale;
    o->fp16_fallback = in->fp16_fallback;
    o->progress = in->progress;
    o->progress_user = in->progress_user;
    o->allow_nonfinite = in->allow_nonfinite;
}

static void vaes_info(const dk_vae_info *in, dk_sdxl_vae_info *out) {
    if (!out) return;
    out->banded = in->banded;
    out->band_rows = in->band_rows;
    out->fp16_fallback = in->fp16_fallback;
    out->plan_device_bytes = in->plan_device_bytes;
    out->weight_device_bytes = in->weight_device_bytes;
    out->scratch_reserve_bytes = in->scratch_reserve_bytes;
    out->peak_device_bytes = in->peak_device_bytes;
    out->elapsed_ms = in->elapsed_ms;
}

static dk_vae *vaes_vae(dk_sdxl_vae *vae) { return (dk_vae *)(void *)vae; }

void dk_sdxl_vae_options_init(dk_sdxl_vae_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->scaling_factor = 0.13025f;
    o->fp16_activation_scale = 1.0f / 256.0f;
    o->fp16_fallback = 1;
}

/* v is read after the call that fills it (an argument of its own would be
 * evaluated in unspecified order). */
static dk_status vaes_created(dk_status st, dk_vae *const *v, dk_sdxl_vae **out) {
    if (out) *out = st == DK_OK ? (dk_sdxl_vae *)(void *)*v : NULL;
    return st;
}

dk_status dk_sdxl_vae_create_from_file(dk_context *ctx, const char *path, dk_dtype dtype,
                                       const dk_sdxl_vae_options *options, dk_sdxl_vae **out) {
    static const char fn[] = "dk_sdxl_vae_create_from_file";
    dk_vae_options o;
    dk_vae *v = NULL;
    if (out) *out = NULL;
    if (!out) return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "%s: out must not be NULL", fn);
    if (!ctx) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "%s: ctx must not be NULL", fn);
    if (!path) return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "%s: path must not be NULL", fn);
    vaes_options(options, &o);
    return vaes_created(dk__vae_create(ctx, fn, path, NULL, 0, dtype, &o, DK__VAE_DEC, 1, &v), &v, out);
}

dk_status dk_sdxl_vae_create_from_memory(dk_context *ctx, const void *data, uint64_t size, dk_dtype dtype,
                                         const dk_sdxl_vae_options *options, dk_sdxl_vae **out) {
    static const char fn[] = "dk_sdxl_vae_create_from_memory";
    dk_vae_options o;
    dk_vae *v = NULL;
    if (out) *out = NULL;
    if (!out) return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "%s: out must not be NULL", fn);
    if (!ctx) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "%s: ctx must not be NULL", fn);
    if (!data) return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "%s: data must not be NULL", fn);
    vaes_options(options, &o);
    return vaes_created(dk__vae_create(ctx, fn, NULL, data, size, dtype, &o, DK__VAE_DEC, 1, &v), &v, out);
}

dk_status dk_sdxl_vae_create_random(dk_context *ctx, uint64_t seed, dk_dtype dtype,
                                    const dk_sdxl_vae_options *options, dk_sdxl_vae **out) {
    dk_vae_options o;
    dk_vae *v = NULL;
    vaes_options(options, &o);
    return vaes_created(dk__vae_create_random(ctx, "dk_sdxl_vae_create_random", seed, dtype, &o, DK__VAE_DEC, &v), &v,
                        out);
}

void dk_sdxl_vae_destroy(dk_sdxl_vae *vae) { dk_vae_destroy(vaes_vae(vae)); }

dk_status dk_sdxl_vae_set_options(dk_sdxl_vae *vae, const dk_sdxl_vae_options *options) {
    dk_vae_options o;
    if (!vae) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_sdxl_vae_set_options: vae must not be NULL");
    if (!options)
        return dk__fail(vaes_vae(vae)->ctx, DK_ERR_INVALID_ARGUMENT, "dk_sdxl_vae_set_options: options must not be NULL");
    vaes_options(options, &o);
    return dk_vae_set_options(vaes_vae(vae), &o);
}

const char *dk_sdxl_vae_naming(const dk_sdxl_vae *vae) { return dk_vae_naming((const dk_vae *)(const void *)vae); }
dk_dtype dk_sdxl_vae_dtype(const dk_sdxl_vae *vae) { return dk_vae_dtype((const dk_vae *)(const void *)vae); }

dk_status dk_sdxl_vae_decode_rgb8(dk_sdxl_vae *vae, const float *latents, int32_t batch, int32_t h, int32_t w,
                                  uint8_t *rgb8, dk_sdxl_vae_info *info) {
    dk_vae_info i;
    dk_status st;
    memset(&i, 0, sizeof i);
    st = dk__vae_decode_rgb8(vaes_vae(vae), "dk_sdxl_vae_decode_rgb8", latents, batch, h, w, rgb8, info ? &i : NULL);
    if (info && (st == DK_OK || st == DK_ERR_NON_FINITE)) vaes_info(&i, info);
    return st;
}

dk_status dk_sdxl_vae_decode_f32(dk_sdxl_vae *vae, const float *latents, int32_t batch, int32_t h, int32_t w,
                                 float *out, dk_sdxl_vae_info *info) {
    dk_vae_info i;
    dk_status st;
    memset(&i, 0, sizeof i);
    st = dk__vae_decode_f32(vaes_vae(vae), "dk_sdxl_vae_decode_f32", latents, batch, h, w, out, info ? &i : NULL);
    if (info && (st == DK_OK || st == DK_ERR_NON_FINITE)) vaes_info(&i, info);
    return st;
}

dk_status dk_sdxl_vae_decode_tensor(dk_sdxl_vae *vae, const dk_tensor *latents, const dk_tensor *out,
                                    dk_sdxl_vae_info *info) {
    dk_vae_info i;
    dk_status st;
    memset(&i, 0, sizeof i);
    st = dk__vae_decode_tensor(vaes_vae(vae), "dk_sdxl_vae_decode_tensor", latents, out, info ? &i : NULL);
    if (info && (st == DK_OK || st == DK_ERR_NON_FINITE)) vaes_info(&i, info);
    return st;
}

dk_status dk_sdxl_vae_plan(dk_sdxl_vae *vae, int32_t h, int32_t w, dk_sdxl_vae_info *info) {
    dk_vae_info i;
    dk_status st;
    memset(&i, 0, sizeof i);
    st = dk__vae_plan(vaes_vae(vae), "dk_sdxl_vae_plan", h, w, info ? &i : NULL);
    if (info && st == DK_OK) vaes_info(&i, info);
    return st;
}
