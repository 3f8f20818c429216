#ifndef SDXL_PNG_WRITE_H
#define SDXL_PNG_WRITE_H
/* Writes 8-bit RGB rows; returns 1 on success. */
int sdxl_write_png(const char *path, int width, int height, const unsigned char *rgb);
#endif
