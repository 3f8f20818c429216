/* difkern-vae's input images and output latents. */
#ifndef DV_IMAGE_IO_H
#define DV_IMAGE_IO_H

#include <difkern.h>

/* The image as floats NCHW [n, 3, h, w] (free with free()): an image file stb
 * reads (n = 1; 8-bit RGB mapped to [lo, 1]: lo is -1 for the AutoencoderKL
 * family, 0 for the TAESD family) or a float32 .npy [N, 3, H, W] taken as it
 * is (already in [lo, 1]).  NULL with the reason printed. */
float *dv_load_image(const char *path, float lo, int32_t *n, int32_t *h, int32_t *w);

/* float32 .npy (format 1.0) of shape [n, c, h, w], written atomically
 * (sdxl_write_file); prints "wrote ...".  Returns 1 on success. */
int dv_write_npy(const char *path, const float *data, int32_t n, int32_t c, int32_t h, int32_t w);

/* PSNR in dB of a (clamped to [lo, 1]) against the reference b, both n floats
 * in [lo, 1], measured on the [0, 1] scale. */
double dv_psnr(const float *a, const float *b, int64_t n, float lo);

#endif
