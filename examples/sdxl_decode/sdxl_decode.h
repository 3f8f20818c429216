/* sdxl_decode: shared definitions of the CLI (sdxl_decode.c) and the demo (demo.c). */
#ifndef SDXL_DECODE_H
#define SDXL_DECODE_H

#include <difkern.h>
#include <difkern/sdxl_vae.h>

typedef struct sdxl_args {
    const char *vae, *latent, *out;
    dk_backend_kind backend;
    int dtype_set;
    dk_dtype dtype;
    int32_t tile_rows;
    uint64_t max_bytes;
    float scale;
    int demo;
    int32_t demo_size;    /* latent side in demo mode */
    uint64_t seed;
    int plan;             /* print the memory plan for --plan-size and exit */
    int32_t plan_size;
    int32_t repeat;       /* decode this many times (timing: the first one builds pipelines) */
    int device;           /* latents and image as device tensors (dk_sdxl_vae_decode_tensor) */
    int allow_nonfinite;  /* write images of NaN/Inf latents or results (with a warning) */
    int random_weights;   /* decode the files with seeded random weights (--seed) instead of --vae */
    uint64_t max_host_bytes; /* host memory limit per image; 0: physical memory */
} sdxl_args;

/* Options for the decoder from the arguments (progress on stderr). */
void sdxl_options(const sdxl_args *a, dk_sdxl_vae_options *o);
/* The file image b of a batch goes to: out itself when batch is 1, else out
 * with _b before its extension.  Returns 0 when that is PATH_MAX bytes or more. */
int sdxl_output_name(const char *out, int32_t batch, int32_t b, char *path, size_t cap);
/* Host bytes one h x w image takes while it is written (float image, RGB
 * rows, PNG encoding), in 64 bits. */
uint64_t sdxl_image_host_bytes(int64_t h, int64_t w);
/* Checks an h x w image against the PNG encoder's limit and the host memory
 * limit (max_host_bytes, 0: physical memory); prints the sizes and the limit
 * and returns 0 when over. */
int sdxl_check_image_size(int64_t h, int64_t w, uint64_t max_host_bytes);
/* Maps floats NCHW [3, h, w] in [lo, 1] (-1 for the AutoencoderKL family, 0 for
 * the TAESD family) to RGB8, clamped, and writes the PNG to path (checked,
 * atomic: see file_write.h).  Returns 1 on success. */
int sdxl_write_image(const char *path, const float *img, int32_t h, int32_t w, float lo);
/* Latents as floats [N, channels, h, w] in *data (free with free()) from a .npy
 * or .safetensors file; checks the shape and the 8x image's size
 * (max_host_bytes) before the elements are converted.  Returns 1 on success;
 * on failure nothing is left allocated and the reason is printed. */
int sdxl_load_latents(const char *path, int32_t channels, uint64_t max_host_bytes, float **data, int32_t *n,
                      int32_t *h, int32_t *w);
/* The sdxl_decode command (the SDXL decoder's CLI, also `difkern-vae decode`
 * for AutoencoderKL weights). */
int sdxl_decode_main(int argc, char **argv);
double sdxl_now_ms(void);
int sdxl_demo(const sdxl_args *a);

#endif
