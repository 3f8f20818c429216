/* difkern-vae: one command for difkern's VAEs.
 *
 *   difkern-vae decode --vae W --latent L.npy|.safetensors -o out.png [...]
 *   difkern-vae encode --vae W --image in.png|in.npy -o latents.npy [...]
 *   difkern-vae roundtrip --vae W [--decoder W2] --image in.png -o out.png [...]
 *
 * The weights (or --model) say which family they belong to: AutoencoderKL
 * weights (SD 1.x, SDXL, SD3, FLUX.1) run on the dk_vae API (kl_cli.c, shared
 * with sdxl_decode), the TAESD family's tiny autoencoders on dk_taesd
 * (taesd_cli.c).  The options are parsed once for both (vae_args.c). */
#include "file_write.h"
#include "sdxl_decode.h"
#include "vae_cli.h"

#include <difkern/safetensors.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void dv_usage(FILE *f) {
    fprintf(f,
        "usage: difkern-vae decode --vae FILE --latent FILE(.npy|.safetensors) -o out.png [options]\n"
        "       difkern-vae encode --vae FILE --image FILE(.png|.npy) -o latents.npy [options]\n"
        "       difkern-vae roundtrip --vae FILE [--decoder FILE] --image FILE(.png|.npy) -o out.png [options]\n"
        "\n"
        "  --vae FILE      weights (.safetensors): AutoencoderKL (diffusers or original single-file\n"
        "                  naming, a full checkpoint's first_stage_model.* too; a file with only the\n"
        "                  decoder or only the encoder works for that direction) or the TAESD family\n"
        "                  (original nn.Sequential, ComfyUI or diffusers AutoencoderTiny keys)\n"
        "  --model M       auto (default) | sd15 | sdxl | sd3 | flux1 | taesd | taesdxl | taesd3 | taef1 | taef2\n"
        "                  auto detects the family and the latent channels from the weights; the\n"
        "                  weights cannot tell SD 1.x from SDXL nor SD3 from FLUX.1 (only the scaling\n"
        "                  and shift differ), so 4-channel AutoencoderKL weights default to sdxl and\n"
        "                  16-channel ones to flux1: name sd15 or sd3 for those\n"
        "  --latent FILE   latents [C, h, w] or [N, C, h, w] as the diffusion model gives them\n"
        "                  (float32/float16 .npy, or .safetensors with one tensor or one named 'latents')\n"
        "  --image FILE    an RGB image (PNG, JPEG, ...), or a float32 .npy [N, 3, H, W] in [-1, 1]\n"
        "                  for AutoencoderKL, in [0, 1] for the TAESD family; AutoencoderKL takes\n"
        "                  H and W multiples of 8\n"
        "  -o FILE         decode, roundtrip: PNG (a batch of N: FILE_0.png ..); encode: .npy\n"
        "                  (checked before the weights load; written atomically)\n"
        "  --decoder FILE  roundtrip, TAESD family: the decoder's weights when --vae holds the encoder\n"
        "  --backend B     auto (default) | cpu | vulkan | hip\n"
        "  --dtype D       f32 | f16 | bf16 (default f32 on the CPU backend, f16 elsewhere)\n"
        "  --repeat N      run N times; prints `decode K: X ms` / `encode K: X ms` for each run K\n"
        "                  (the first builds pipelines), `peak device memory: Y MiB` and, for\n"
        "                  AutoencoderKL, `first-call cost: X ms` (the first run over the fastest other)\n"
        "  --device        input and output as device tensors (the *_tensor entry points): the\n"
        "                  time is the call's alone, without the host transfers\n"
        "\n"
        "AutoencoderKL only:\n"
        "  --sample        encode: a sample of the posterior instead of its mean, noise from --seed\n"
        "  --stages        print each stage's time in the first run; the model then waits for the\n"
        "                  device after each stage (and builds the GPU pipelines stage by stage)\n"
        "  --seed S        the sample's seed (default 1; the same latents on every backend);\n"
        "                  with --random-weights, the weights' seed\n"
        "  --tile N        decode or encode in bands of N latent rows (bounded device memory,\n"
        "                  the same result within rounding)\n"
        "  --max-memory MB band only when the untiled plan exceeds MB (refused when even bands\n"
        "                  of one latent row exceed it)\n"
        "  --scale F       the latent scaling factor instead of the model's\n"
        "  --allow-nonfinite  write the result even when it (or the input) holds NaN/Inf (a\n"
        "                  warning; NaN pixels come out black); without it that is an error\n"
        "  --max-host-memory MB  host memory one image may take while it is written (default:\n"
        "                  the machine's physical memory)\n"
        "  --random-weights  seeded random weights of --model instead of --vae (tests; NOT real images)\n"
        "  --plan N        print the decode memory plan of an N x N latent and exit\n"
        "\n"
        "Every run prints the backend, the model detected and the memory plan.  roundtrip\n"
        "encodes the image, decodes the latents, writes the result and prints its PSNR\n"
        "against the input (the TAESD family: about 30 dB on photos).\n");
}

/* The family and latent channels the file's tensor names and shapes say:
 * 1 AutoencoderKL (*channels from decoder.conv_in's input channels or half of
 * encoder.conv_out's outputs, 0 when neither is there), 0 anything else (the
 * TAESD reader says what is wrong), -1 unreadable (printed).  Only the header
 * is read. */
static int dv_peek_kl(const char *path, int32_t *channels) {
    dk_safetensors *f;
    int64_t i, n;
    int kl = 0;
    *channels = 0;
    if (dk_safetensors_open(path, &f) != DK_OK) {
        sdxl_err("%s\n", dk_last_error(NULL));
        return -1;
    }
    n = dk_safetensors_count(f);
    for (i = 0; i < n; i++) {
        dk_st_tensor t;
        size_t len;
        if (dk_safetensors_at(f, i, &t) != DK_OK) continue;
        if (strstr(t.name, "decoder.conv_in.") || strstr(t.name, "encoder.conv_in.") ||
            strstr(t.name, "post_quant_conv."))
            kl = 1;
        len = strlen(t.name);
        if (t.ndim == 4 && len >= 22 && !strcmp(t.name + len - 22, "decoder.conv_in.weight") &&
            (len == 22 || t.name[len - 23] == '.'))
            *channels = (int32_t)t.shape[1];
        if (t.ndim == 4 && len >= 23 && !strcmp(t.name + len - 23, "encoder.conv_out.weight") && !*channels &&
            (len == 23 || t.name[len - 24] == '.'))
            *channels = (int32_t)(t.shape[0] / 2);
    }
    dk_safetensors_close(f);
    return kl;
}

/* --model: *kl 1 with the AutoencoderKL model, 0 with the TAESD one; AUTO in
 * both for auto.  0 for an unknown name. */
static int dv_parse_model(const char *s, int *kl, dk_vae_model *km, dk_taesd_model *tm) {
    static const char *const kn[] = {"sd15", "sdxl", "sd3", "flux1"};
    static const dk_vae_model kv[] = {DK_VAE_SD15, DK_VAE_SDXL, DK_VAE_SD3, DK_VAE_FLUX1};
    static const char *const tn[] = {"taesd", "taesdxl", "taesd3", "taef1", "taef2"};
    static const dk_taesd_model tv[] = {DK_TAESD_SD, DK_TAESD_SDXL, DK_TAESD_SD3, DK_TAESD_FLUX1, DK_TAESD_FLUX2};
    size_t i;
    *kl = 0;
    *km = DK_VAE_AUTO;
    *tm = DK_TAESD_AUTO;
    if (!s || !strcmp(s, "auto")) return 1;
    for (i = 0; i < sizeof kn / sizeof kn[0]; i++)
        if (!strcmp(s, kn[i])) {
            *kl = 1;
            *km = kv[i];
            return 1;
        }
    for (i = 0; i < sizeof tn / sizeof tn[0]; i++)
        if (!strcmp(s, tn[i])) {
            *tm = tv[i];
            return 1;
        }
    return 0;
}

int main(int argc, char **argv) {
    sdxl_args a;
    dk_taesd_model tm;
    int kl, decode;
    int32_t peeked = 0;
    setvbuf(stdout, NULL, _IOLBF, 0); /* keep stdout in order with the progress on stderr */
    sdxl_prog = "difkern-vae";
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        dv_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "decode") && strcmp(argv[1], "encode") && strcmp(argv[1], "roundtrip")) {
        sdxl_err("unknown command '%s': decode, encode or roundtrip (see --help)\n", argv[1]);
        return 2;
    }
    if (!sdxl_parse_args(argc, argv, 2, 1, dv_usage, &a)) return 2;
    a.cmd = argv[1];
    decode = !strcmp(a.cmd, "decode");
    if (!dv_parse_model(a.model, &kl, &a.kl_model, &tm)) {
        sdxl_err("--model %s: expected auto, sd15, sdxl, sd3, flux1, taesd, taesdxl, taesd3, taef1 or taef2\n",
                 a.model);
        return 2;
    }
    if ((!a.vae && !(a.random_weights && kl)) || (!a.out && !a.plan)) {
        sdxl_err("%s: --vae and -o are required (see --help)\n", a.cmd);
        return 2;
    }
    if (!a.plan && (decode ? !a.latent : !a.image)) {
        sdxl_err("%s: %s is required (see --help)\n", a.cmd, decode ? "--latent" : "--image");
        return 2;
    }
    if (a.vae && a.kl_model == DK_VAE_AUTO && tm == DK_TAESD_AUTO) {
        kl = dv_peek_kl(a.vae, &peeked);
        if (kl < 0) return 1;
    } else if (a.vae && kl) {
        int32_t c;
        if (dv_peek_kl(a.vae, &c) < 0) return 1;
        peeked = c;
    }
    if (!kl) return vae_taesd_run(&a, tm);
    /* The latents are checked against the file's channels when the header
     * names them (a model that disagrees is then the weights' error, naming the
     * tensor), else against the model's. */
    a.kl_channels = peeked ? peeked
                  : a.kl_model == DK_VAE_SD3 || a.kl_model == DK_VAE_FLUX1 ? 16 : 4;
    return vae_kl_run(&a);
}
