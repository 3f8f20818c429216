/* Shared definitions of the VAE commands: sdxl_decode (sdxl_decode.c, the demo
 * in demo.c) and difkern-vae (difkern_vae.c), which parse their arguments with
 * one parser (vae_args.c) and run AutoencoderKL weights through one
 * implementation on the dk_vae API (kl_cli.c). */
#ifndef SDXL_DECODE_H
#define SDXL_DECODE_H

#include <difkern.h>

#include <stdio.h>
#include <difkern/sdxl_vae.h>
#include <difkern/vae.h>

typedef struct sdxl_args {
    const char *cmd;      /* "decode", "encode" or "roundtrip" (sdxl_decode: "decode") */
    const char *vae, *latent, *out;
    const char *image;    /* encode, roundtrip: .png (or another stb format) or .npy */
    const char *decoder;  /* roundtrip, TAESD family: the decoder's file beside --vae's encoder */
    const char *model;    /* --model as given (difkern-vae); NULL: auto */
    dk_vae_model kl_model; /* the AutoencoderKL model (sdxl_decode: DK_VAE_SDXL) */
    int32_t kl_channels;  /* latent channels the latents are checked against before the weights load */
    int sample;           /* encode: a sample of the posterior (--seed) instead of its mean */
    int stages;           /* AutoencoderKL: print each stage's time in the first run (--stages) */
    int seed_set;         /* --seed was given */
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

/* Parses argv[first..argc-1] into a (defaults first).  family 0: sdxl_decode's
 * options (--demo, --size); 1: difkern-vae's (--model, --image, --decoder,
 * --sample).  Prints the reason and returns 0 for a bad option or value;
 * --help prints help() to stdout and exits 0. */
int sdxl_parse_args(int argc, char **argv, int first, int family, void (*help)(FILE *), sdxl_args *a);
/* Runs a (decode, encode or roundtrip; --plan) with AutoencoderKL weights on the
 * dk_vae API; the exit status (0 ok, 1 failed). */
int vae_kl_run(const sdxl_args *a);
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
