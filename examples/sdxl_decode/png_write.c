/* PNG output through stb_image_write (Debian's libstb-dev). */
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

#include "png_write.h"

int sdxl_write_png(const char *path, int width, int height, const unsigned char *rgb) {
    return stbi_write_png(path, width, height, 3, rgb, width * 3) != 0;
}
