/* stb_image (Debian's libstb-dev) for test_taesd's PNG input, compiled on its
 * own without the project's warnings (third-party code). */
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#include <stb/stb_image.h>
