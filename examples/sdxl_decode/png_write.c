/* PNG encoding through stb_image_write (Debian's libstb-dev), into memory: the
 * file is written by sdxl_write_file (checked and atomic). */
#include <stdio.h>
#include <stdlib.h>

/* stb asserts that its buffer growth succeeded and would write past the
 * buffer without the assert: end the program with a message instead. */
static void sdxl_png_oom(void) {
    fprintf(stderr, "sdxl_decode: out of memory while encoding the PNG\n");
    exit(1);
}
#define STBIW_ASSERT(x) ((x) ? (void)0 : sdxl_png_oom())
#define STBI_WRITE_NO_STDIO
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

#include "png_write.h"

uint64_t sdxl_png_bytes(uint64_t width, uint64_t height) {
    if (width > UINT64_C(1) << 31 || height > UINT64_C(1) << 31) return UINT64_MAX;
    return (3 * width + 1) * height;
}

unsigned char *sdxl_encode_png(int width, int height, const unsigned char *rgb, size_t *len) {
    unsigned char *png;
    int n = 0;
    *len = 0;
    if (width < 1 || height < 1 || sdxl_png_bytes((uint64_t)width, (uint64_t)height) > SDXL_PNG_MAX_BYTES) return NULL;
    png = stbi_write_png_to_mem(rgb, width * 3, width, height, 3, &n);
    if (!png || n <= 0) {
        free(png);
        return NULL;
    }
    *len = (size_t)n;
    return png;
}
