/* PNG (and the other formats stb_image reads) decoding through Debian's
 * libstb-dev, from bytes the caller read (bounded, regular files only). */
#include <stdlib.h>

#define STBI_NO_STDIO
#define STBI_NO_HDR
#define STBI_NO_LINEAR
#define STBI_MAX_DIMENSIONS (1 << 15)
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>

#include "png_write.h"

unsigned char *sdxl_decode_image(const unsigned char *bytes, size_t n, int *width, int *height, const char **why) {
    int comp = 0;
    unsigned char *rgb;
    *width = *height = 0;
    if (n > (size_t)0x7fffffff) {
        *why = "the file is over 2 GiB";
        return NULL;
    }
    rgb = stbi_load_from_memory(bytes, (int)n, width, height, &comp, 3);
    *why = rgb ? "" : stbi_failure_reason();
    return rgb;
}

void sdxl_free_image(unsigned char *rgb) { stbi_image_free(rgb); }
