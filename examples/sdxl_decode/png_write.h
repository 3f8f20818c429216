#ifndef SDXL_PNG_WRITE_H
#define SDXL_PNG_WRITE_H

#include <stddef.h>
#include <stdint.h>

/* The largest image the PNG encoder takes: stb_image_write computes sizes in
 * int, and its zlib output buffer doubles its int capacity as it grows, so the
 * filtered rows ((3 * width + 1) * height bytes) must stay well below
 * INT_MAX / 2 (9/8 of them in the worst case of its compressor). */
#define SDXL_PNG_MAX_BYTES UINT64_C(900000000)

/* The bytes of the filtered rows the encoder holds for a width x height image
 * (computed in 64 bits). */
uint64_t sdxl_png_bytes(uint64_t width, uint64_t height);

/* Encodes 8-bit RGB rows as PNG into a malloc'd block (*len bytes); NULL when
 * the image is over SDXL_PNG_MAX_BYTES or memory ran out. */
unsigned char *sdxl_encode_png(int width, int height, const unsigned char *rgb, size_t *len);

/* Decodes an image file's n bytes (PNG, JPEG, BMP, ...: what stb_image reads,
 * each side at most 32768) to 8-bit RGB rows (free with sdxl_free_image); NULL
 * with *why set (stb's reason) when it cannot (png_read.c). */
unsigned char *sdxl_decode_image(const unsigned char *bytes, size_t n, int *width, int *height, const char **why);
void sdxl_free_image(unsigned char *rgb);

#endif
