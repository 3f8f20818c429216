/* difkern-vae's parts: the TAESD family's path (taesd_cli.c) and the family
 * detection of the weights (difkern_vae.c); AutoencoderKL weights run through
 * vae_kl_run (sdxl_decode.h), shared with sdxl_decode. */
#ifndef DV_VAE_CLI_H
#define DV_VAE_CLI_H

#include "sdxl_decode.h"

#include <difkern/taesd.h>

/* Runs a (decode, encode or roundtrip) with TAESD-family weights; the exit
 * status (0 ok, 1 failed, 2 options this family does not take). */
int vae_taesd_run(const sdxl_args *a, dk_taesd_model model);

#endif
