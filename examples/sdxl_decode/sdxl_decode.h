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
} sdxl_args;

/* Options for the decoder from the arguments (progress on stderr). */
void sdxl_options(const sdxl_args *a, dk_sdxl_vae_options *o);
/* Maps [-1, 1] floats NCHW to RGB8 and writes out (numbered when batch > 1). */
int sdxl_write_images(const char *out, const float *img, int32_t batch, int32_t h, int32_t w);
double sdxl_now_ms(void);
int sdxl_demo(const sdxl_args *a);

#endif
