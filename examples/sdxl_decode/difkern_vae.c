/* difkern-vae: one command for difkern's VAEs.
 *
 *   difkern-vae decode --vae W --latent L.npy|.safetensors -o out.png [...]
 *   difkern-vae encode --vae W --image in.png|in.npy -o latents.npy [...]
 *   difkern-vae roundtrip --vae W [--decoder W2] --image in.png -o out.png [...]
 *
 * The weights say which family they belong to: AutoencoderKL weights (SDXL's
 * VAE) go to the SDXL decoder's command (sdxl_decode, whose flags `decode`
 * takes); the TAESD family's tiny autoencoders run here (include/difkern/taesd.h). */
#include "file_write.h"
#include "png_write.h"
#include "sdxl_decode.h"

#include <difkern/safetensors.h>
#include <difkern/taesd.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DV_MAX_IMAGE_FILE (UINT64_C(1) << 28) /* 256 MiB: far above any PNG stb decodes */

static void dv_usage(FILE *f) {
    fprintf(f,
        "usage: difkern-vae decode --vae FILE --latent FILE(.npy|.safetensors) -o out.png [options]\n"
        "       difkern-vae encode --vae FILE --image FILE(.png|.npy) -o latents.npy [options]\n"
        "       difkern-vae roundtrip --vae FILE [--decoder FILE] --image FILE(.png) -o out.png [options]\n"
        "\n"
        "  --vae FILE      weights (.safetensors).  AutoencoderKL (SDXL VAE) weights: `decode`\n"
        "                  runs sdxl_decode with the same arguments (see sdxl_decode --help);\n"
        "                  encoding them is not available yet.  TAESD family (TAESD, TAESDXL,\n"
        "                  TAESD3, TAEF1, TAEF2; original nn.Sequential, ComfyUI or diffusers\n"
        "                  AutoencoderTiny keys): the file of the direction used, or one holding both\n"
        "  --decoder FILE  roundtrip: the decoder's weights when --vae holds only the encoder\n"
        "  --model M       auto (default) | taesd | taesdxl | taesd3 | taef1 | taef2 | sdxl\n"
        "  --latent FILE   latents [C, h, w] or [N, C, h, w] as the model takes them\n"
        "  --image FILE    an RGB image (PNG, JPEG, ...), or float32 .npy [N, 3, H, W] in [0, 1]\n"
        "  -o FILE         decode, roundtrip: PNG (a batch of N: FILE_0.png ..); encode: .npy\n"
        "  --backend B     auto (default) | cpu | vulkan | hip\n"
        "  --dtype D       f32 | f16 | bf16 (default f32 on the CPU backend, f16 elsewhere)\n"
        "  --repeat N      run N times and print each time (the first one builds pipelines)\n"
        "\n"
        "roundtrip encodes the image, decodes the latents, writes the result and prints its\n"
        "PSNR against the input (the TAESD family's quality check: about 30 dB on photos).\n");
}

typedef struct dv_args {
    const char *cmd, *vae, *decoder, *latent, *image, *out, *model;
    dk_backend_kind backend;
    int dtype_set;
    dk_dtype dtype;
    int repeat;
} dv_args;

/* 1: the file's tensor names are AutoencoderKL's (diffusers or the original
 * single-file naming); 0: anything else (the TAESD reader says what is wrong);
 * -1: the file cannot be read (printed). */
static int dv_is_autoencoder_kl(const char *path) {
    dk_safetensors *f;
    int64_t i, n;
    int kl = 0;
    if (dk_safetensors_open(path, &f) != DK_OK) {
        fprintf(stderr, "difkern-vae: %s\n", dk_last_error(NULL));
        return -1;
    }
    n = dk_safetensors_count(f);
    for (i = 0; i < n && !kl; i++) {
        dk_st_tensor t;
        if (dk_safetensors_at(f, i, &t) == DK_OK &&
            (strstr(t.name, "decoder.conv_in.") || strstr(t.name, "encoder.conv_in.") ||
             strstr(t.name, "post_quant_conv.")))
            kl = 1;
    }
    dk_safetensors_close(f);
    return kl;
}

static int dv_parse_model(const char *s, dk_taesd_model *m, int *kl) {
    static const char *const names[] = {"auto", "taesd", "taesdxl", "taesd3", "taef1", "taef2"};
    static const dk_taesd_model models[] = {DK_TAESD_AUTO, DK_TAESD_SD, DK_TAESD_SDXL, DK_TAESD_SD3, DK_TAESD_FLUX1,
                                            DK_TAESD_FLUX2};
    size_t i;
    *kl = 0;
    if (!s) s = "auto";
    if (!strcmp(s, "sdxl")) {
        *kl = 1;
        *m = DK_TAESD_AUTO;
        return 1;
    }
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(s, names[i])) {
            *m = models[i];
            return 1;
        }
    return 0;
}

static int dv_parse(int argc, char **argv, dv_args *a) {
    int i;
    memset(a, 0, sizeof *a);
    a->cmd = argv[1];
    a->backend = DK_BACKEND_AUTO;
    a->repeat = 1;
    for (i = 2; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char **dst = !strcmp(s, "--vae") ? &a->vae : !strcmp(s, "--decoder") ? &a->decoder
                         : !strcmp(s, "--latent") ? &a->latent : !strcmp(s, "--image") ? &a->image
                         : !strcmp(s, "-o") ? &a->out : !strcmp(s, "--model") ? &a->model : NULL;
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            dv_usage(stdout);
            exit(0);
        }
        if (!v) {
            fprintf(stderr, "difkern-vae: %s needs a value (see --help)\n", s);
            return 0;
        }
        if (dst) {
            *dst = v;
        } else if (!strcmp(s, "--backend")) {
            if (!strcmp(v, "auto")) a->backend = DK_BACKEND_AUTO;
            else if (!strcmp(v, "cpu")) a->backend = DK_BACKEND_CPU;
            else if (!strcmp(v, "vulkan")) a->backend = DK_BACKEND_VULKAN;
            else if (!strcmp(v, "hip")) a->backend = DK_BACKEND_HIP;
            else {
                fprintf(stderr, "difkern-vae: --backend %s: expected auto, cpu, vulkan or hip\n", v);
                return 0;
            }
        } else if (!strcmp(s, "--dtype")) {
            a->dtype_set = 1;
            if (!strcmp(v, "f32")) a->dtype = DK_F32;
            else if (!strcmp(v, "f16")) a->dtype = DK_F16;
            else if (!strcmp(v, "bf16")) a->dtype = DK_BF16;
            else {
                fprintf(stderr, "difkern-vae: --dtype %s: expected f32, f16 or bf16\n", v);
                return 0;
            }
        } else if (!strcmp(s, "--repeat")) {
            char *end;
            long r = strtol(v, &end, 10);
            if (*end || r < 1 || r > 1000) {
                fprintf(stderr, "difkern-vae: --repeat %s: expected 1..1000\n", v);
                return 0;
            }
            a->repeat = (int)r;
        } else {
            fprintf(stderr, "difkern-vae: unknown option %s (see --help)\n", s);
            return 0;
        }
        i++;
    }
    if (!a->vae || !a->out) {
        fprintf(stderr, "difkern-vae %s: --vae and -o are required (see --help)\n", a->cmd);
        return 0;
    }
    if (!strcmp(a->cmd, "decode") ? !a->latent : !a->image) {
        fprintf(stderr, "difkern-vae %s: %s is required (see --help)\n", a->cmd,
                !strcmp(a->cmd, "decode") ? "--latent" : "--image");
        return 0;
    }
    return 1;
}

/* The whole of a regular file of at most DV_MAX_IMAGE_FILE bytes (free with
 * free()); NULL with the reason printed. */
static unsigned char *dv_read_file(const char *path, size_t *n) {
    struct stat sb;
    unsigned char *buf;
    FILE *fp = fopen(path, "rb");
    *n = 0;
    if (!fp) {
        perror(path);
        return NULL;
    }
    if (fstat(fileno(fp), &sb) != 0 || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > DV_MAX_IMAGE_FILE ||
        sb.st_size == 0) {
        fprintf(stderr, "difkern-vae: %s: not a regular image file of 1 byte .. 256 MiB\n", path);
        fclose(fp);
        return NULL;
    }
    buf = (unsigned char *)malloc((size_t)sb.st_size);
    if (!buf || fread(buf, 1, (size_t)sb.st_size, fp) != (size_t)sb.st_size) {
        fprintf(stderr, "difkern-vae: %s: %s\n", path, buf ? "read error" : "out of memory");
        free(buf);
        fclose(fp);
        return NULL;
    }
    fclose(fp);
    *n = (size_t)sb.st_size;
    return buf;
}

/* The image as floats NCHW [n, 3, h, w] in [0, 1] (free with free()). */
static float *dv_load_image(const char *path, int32_t *n, int32_t *h, int32_t *w) {
    size_t len = strlen(path);
    if (len > 4 && !strcmp(path + len - 4, ".npy")) {
        float *d = NULL, *own;
        int32_t ndim = 0;
        int64_t shape[DK_MAX_DIMS], numel;
        if (dk_npy_read_f32(path, &d, &ndim, shape) != DK_OK) {
            fprintf(stderr, "difkern-vae: %s\n", dk_last_error(NULL));
            return NULL;
        }
        if (ndim != 4 || shape[1] != 3 || shape[0] < 1 || shape[2] < 1 || shape[3] < 1 || shape[0] > 4096 ||
            shape[2] > 32768 || shape[3] > 32768) {
            fprintf(stderr, "difkern-vae: %s: images must be float32 [N, 3, H, W] (N <= 4096, H, W <= 32768)\n",
                    path);
            dk_npy_free(d);
            return NULL;
        }
        numel = shape[0] * 3 * shape[2] * shape[3];
        own = (float *)malloc((size_t)numel * sizeof(float));
        if (own) memcpy(own, d, (size_t)numel * sizeof(float));
        dk_npy_free(d);
        if (!own) fprintf(stderr, "difkern-vae: %s: out of memory\n", path);
        *n = (int32_t)shape[0];
        *h = (int32_t)shape[2];
        *w = (int32_t)shape[3];
        return own;
    } else {
        size_t bytes = 0;
        unsigned char *file = dv_read_file(path, &bytes), *rgb;
        const char *why = "";
        int iw = 0, ih = 0;
        float *img;
        int64_t i, c, hw;
        if (!file) return NULL;
        rgb = sdxl_decode_image(file, bytes, &iw, &ih, &why);
        free(file);
        if (!rgb) {
            fprintf(stderr, "difkern-vae: %s: cannot decode the image: %s\n", path, why);
            return NULL;
        }
        hw = (int64_t)iw * ih;
        img = (float *)malloc((size_t)hw * 3 * sizeof(float));
        if (img)
            for (i = 0; i < hw; i++)
                for (c = 0; c < 3; c++) img[c * hw + i] = (float)rgb[i * 3 + c] * (1.0f / 255.0f);
        else
            fprintf(stderr, "difkern-vae: %s: out of memory\n", path);
        sdxl_free_image(rgb);
        *n = 1;
        *h = ih;
        *w = iw;
        return img;
    }
}

/* float32 .npy (format 1.0) of shape [n, c, h, w], written atomically. */
static int dv_write_npy(const char *path, const float *data, int32_t n, int32_t c, int32_t h, int32_t w) {
    char head[128];
    size_t hl, bytes = (size_t)n * c * h * w * sizeof(float);
    unsigned char *buf;
    int len = snprintf(head, sizeof head, "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d, %d, %d), }",
                       (int)n, (int)c, (int)h, (int)w), ok;
    hl = (size_t)len;
    while ((10 + hl + 1) % 64) head[hl++] = ' '; /* the header ends 64-byte aligned, with a newline */
    head[hl++] = '\n';
    buf = (unsigned char *)malloc(10 + hl + bytes);
    if (!buf) {
        fprintf(stderr, "difkern-vae: %s: out of memory\n", path);
        return 0;
    }
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)(hl & 0xff);
    buf[9] = (unsigned char)(hl >> 8);
    memcpy(buf + 10, head, hl);
    memcpy(buf + 10 + hl, data, bytes); /* little-endian hosts (x86-64, arm64) */
    ok = sdxl_write_file(path, buf, 10 + hl + bytes);
    free(buf);
    if (ok) printf("wrote %s [%d, %d, %d, %d] float32\n", path, (int)n, (int)c, (int)h, (int)w);
    return ok;
}

/* PSNR in dB of a (clamped to [0, 1]) against the reference b, both n floats. */
static double dv_psnr(const float *a, const float *b, int64_t n) {
    double se = 0.0;
    int64_t i;
    for (i = 0; i < n; i++) {
        double v = a[i] < 0.0f ? 0.0 : a[i] > 1.0f ? 1.0 : (double)a[i], d = v - b[i];
        se += d * d;
    }
    return se > 0.0 ? 10.0 * log10((double)n / se) : INFINITY;
}

static int dv_taesd(const dv_args *a, dk_taesd_model model) {
    dk_context_options co;
    dk_context *ctx = NULL;
    dk_taesd_options to;
    dk_taesd *tae = NULL;
    dk_taesd_properties props;
    const char *inputs[3];
    float *in = NULL, *lat = NULL, *img = NULL;
    int32_t n = 0, h = 0, w = 0, lh, lw, b, r;
    int rc = 1, decode = !strcmp(a->cmd, "decode"), encode = !strcmp(a->cmd, "encode");
    double t0, ms;
    char path[PATH_MAX];

    inputs[0] = a->vae;
    inputs[1] = decode ? a->latent : a->image;
    inputs[2] = a->decoder ? a->decoder : a->vae;
    if (!sdxl_check_output(a->out, inputs, 3)) return 1;
    dk_context_options_init(&co);
    co.backend = a->backend;
    if (dk_context_create(&co, &ctx) != DK_OK) {
        fprintf(stderr, "difkern-vae: %s\n", dk_last_error(NULL));
        return 1;
    }
    dk_taesd_options_init(&to);
    to.model = model;
    to.dtype = a->dtype_set ? a->dtype : dk_context_backend(ctx) == DK_BACKEND_CPU ? DK_F32 : DK_F16;
    if (a->decoder ? dk_taesd_create_from_files(ctx, a->vae, a->decoder, &to, &tae) != DK_OK
                   : dk_taesd_create_from_file(ctx, a->vae, &to, &tae) != DK_OK) {
        fprintf(stderr, "difkern-vae: %s\n", dk_last_error(ctx));
        goto done;
    }
    dk_taesd_properties_get(tae, &props);
    printf("backend: %s\nmodel: %s (%d latent channels), %s, encoder %s, decoder %s\n", dk_context_describe(ctx),
           dk_taesd_model_name(props.model), (int)props.latent_channels, dk_dtype_name(props.dtype),
           props.encoder_naming ? props.encoder_naming : "absent", props.decoder_naming ? props.decoder_naming : "absent");
    if ((!decode && !props.has_encoder) || (!encode && !props.has_decoder)) {
        fprintf(stderr, "difkern-vae %s: the weights hold no %s (give %s)\n", a->cmd,
                !props.has_encoder && !decode ? "encoder" : "decoder",
                !strcmp(a->cmd, "roundtrip") ? "--vae with both directions, or --decoder" : "the other file");
        goto done;
    }
    if (decode) {
        if (!sdxl_load_latents(a->latent, props.latent_channels, 0, &lat, &n, &lh, &lw)) goto done;
        h = lh * 8;
        w = lw * 8;
    } else {
        in = dv_load_image(a->image, &n, &h, &w);
        if (!in) goto done;
        lh = (h + 7) / 8;
        lw = (w + 7) / 8;
        lat = (float *)malloc((size_t)n * props.latent_channels * lh * lw * sizeof(float));
        if (!lat) {
            fprintf(stderr, "difkern-vae: out of memory for the latents\n");
            goto done;
        }
    }
    if (!encode) {
        if (!sdxl_check_image_size((int64_t)lh * 8, (int64_t)lw * 8, 0)) goto done;
        img = (float *)malloc((size_t)n * 3 * ((size_t)lh * 8) * ((size_t)lw * 8) * sizeof(float));
        if (!img) {
            fprintf(stderr, "difkern-vae: out of memory for the image\n");
            goto done;
        }
    }
    for (r = 0; r < a->repeat; r++) {
        dk_status st = DK_OK;
        t0 = sdxl_now_ms();
        if (!decode) st = dk_taesd_encode_f32(tae, in, n, h, w, lat);
        if (st == DK_OK && !encode) st = dk_taesd_decode_f32(tae, lat, n, lh, lw, img);
        ms = sdxl_now_ms() - t0;
        if (st != DK_OK) {
            fprintf(stderr, "difkern-vae %s: %s\n", a->cmd, dk_last_error(ctx));
            goto done;
        }
        printf("%s %d: %dx%d image%s, %.2f ms\n", a->cmd, (int)r + 1, (int)w, (int)h, n > 1 ? "s" : "", ms);
    }
    if (encode) {
        if (!dv_write_npy(a->out, lat, n, props.latent_channels, lh, lw)) goto done;
    } else {
        for (b = 0; b < n; b++) {
            const float *im = img + (size_t)b * 3 * ((size_t)lh * 8) * ((size_t)lw * 8);
            if (!sdxl_output_name(a->out, n, b, path, sizeof path)) {
                fprintf(stderr, "difkern-vae: -o %s: the name of image %d is too long\n", a->out, (int)b);
                goto done;
            }
            if (!decode && (lh * 8 != h || lw * 8 != w)) {
                fprintf(stderr, "difkern-vae roundtrip: %dx%d is not a multiple of 8: compared on the decoded size\n",
                        (int)w, (int)h);
                goto done;
            }
            if (!decode)
                printf("round trip PSNR (image %d): %.2f dB\n", (int)b,
                       dv_psnr(im, in + (size_t)b * 3 * h * w, (int64_t)3 * h * w));
            if (!sdxl_write_image(path, im, lh * 8, lw * 8, 0.0f)) goto done;
        }
    }
    rc = 0;
done:
    free(in);
    free(lat);
    free(img);
    dk_taesd_destroy(tae);
    dk_context_destroy(ctx);
    return rc;
}

int main(int argc, char **argv) {
    dv_args a;
    dk_taesd_model model;
    int kl;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        dv_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "decode") && strcmp(argv[1], "encode") && strcmp(argv[1], "roundtrip")) {
        fprintf(stderr, "difkern-vae: unknown command '%s': decode, encode or roundtrip (see --help)\n", argv[1]);
        return 2;
    }
    /* The family first: AutoencoderKL weights take sdxl_decode's flags, which
     * this command's parser does not know. */
    {
        const char *vae = NULL, *m = NULL;
        int i;
        for (i = 2; i + 1 < argc; i++) {
            if (!strcmp(argv[i], "--vae")) vae = argv[i + 1];
            if (!strcmp(argv[i], "--model")) m = argv[i + 1];
        }
        if (!dv_parse_model(m, &model, &kl)) {
            fprintf(stderr, "difkern-vae: --model %s: expected auto, taesd, taesdxl, taesd3, taef1, taef2 or sdxl\n",
                    m);
            return 2;
        }
        if (vae && (!m || !strcmp(m, "auto"))) {
            kl = dv_is_autoencoder_kl(vae);
            if (kl < 0) return 1;
        }
    }
    if (kl) {
        char **v;
        int i, j = 0, rc;
        if (strcmp(argv[1], "decode")) {
            fprintf(stderr, "difkern-vae %s: AutoencoderKL weights: only decode is available yet\n", argv[1]);
            return 2;
        }
        v = (char **)malloc((size_t)argc * sizeof *v);
        if (!v) return 1;
        for (i = 1; i < argc; i++) {
            if (!strcmp(argv[i], "--model") && i + 1 < argc) {
                i++;
                continue;
            }
            v[j++] = argv[i];
        }
        v[j] = NULL;
        rc = sdxl_decode_main(j, v);
        free(v);
        return rc;
    }
    if (!dv_parse(argc, argv, &a)) return 2;
    return dv_taesd(&a, model);
}
