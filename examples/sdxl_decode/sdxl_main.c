/* sdxl_decode: the SDXL VAE decoder's command (kept beside difkern-vae, whose
 * `decode` runs the same code for AutoencoderKL weights). */
#include "sdxl_decode.h"

int main(int argc, char **argv) { return sdxl_decode_main(argc, argv); }
