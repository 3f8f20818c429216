/* The command line of sdxl_decode and difkern-vae: one parser for the options
 * both take (each command checks which combinations it needs). */
#define _POSIX_C_SOURCE 200809L /* PATH_MAX, fileno */

#include "file_write.h"
#include "sdxl_decode.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* 1 and *out when v is a whole decimal number in lo..hi. */
static int arg_long(const char *v, long lo, long hi, long *out) {
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < lo || x > hi) return 0;
    *out = x;
    return 1;
}

static int parse_backend(const char *s, dk_backend_kind *k) {
    if (!strcmp(s, "auto")) *k = DK_BACKEND_AUTO;
    else if (!strcmp(s, "cpu")) *k = DK_BACKEND_CPU;
    else if (!strcmp(s, "vulkan")) *k = DK_BACKEND_VULKAN;
    else if (!strcmp(s, "hip")) *k = DK_BACKEND_HIP;
    else return 0;
    return 1;
}

static int parse_dtype(const char *s, dk_dtype *t) {
    if (!strcmp(s, "f32")) *t = DK_F32;
    else if (!strcmp(s, "f16")) *t = DK_F16;
    else if (!strcmp(s, "bf16")) *t = DK_BF16;
    else return 0;
    return 1;
}

int sdxl_parse_args(int argc, char **argv, int first, int family, void (*help)(FILE *), sdxl_args *a) {
    /* Options taking a value; the flags are matched one by one below. */
    static const char *const valued[2] = {
        " --vae --latent -o --output --backend --dtype --tile --max-memory --max-host-memory --scale --size --seed "
        "--plan --repeat ",
        " --vae --latent -o --output --backend --dtype --tile --max-memory --max-host-memory --scale --seed --plan "
        "--repeat --model --image --decoder "};
    int i;
    memset(a, 0, sizeof *a);
    a->cmd = "decode";
    a->kl_model = DK_VAE_SDXL;
    a->kl_channels = 4;
    a->demo_size = 4;
    a->seed = 1;
    for (i = first; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            help(stdout);
            exit(0);
        } else if (!strcmp(s, "--demo") && !family) {
            a->demo = 1;
            continue;
        } else if (!strcmp(s, "--device")) {
            a->device = 1;
            continue;
        } else if (!strcmp(s, "--allow-nonfinite")) {
            a->allow_nonfinite = 1;
            continue;
        } else if (!strcmp(s, "--random-weights")) {
            a->random_weights = 1;
            continue;
        } else if (!strcmp(s, "--sample") && family) {
            a->sample = 1;
            continue;
        } else if (!strcmp(s, "--stages") && family) {
            a->stages = 1;
            continue;
        }
        if (strlen(s) < 2 || !strstr(valued[family], s) || strchr(s, ' ') || s[0] != '-') {
            sdxl_err("unknown option %s (see --help)\n", s);
            return 0;
        }
        if (!v) {
            sdxl_err("%s needs a value\n", s);
            return 0;
        }
        i++;
        if (!strcmp(s, "--vae")) a->vae = v;
        else if (!strcmp(s, "--latent")) a->latent = v;
        else if (!strcmp(s, "-o") || !strcmp(s, "--output")) a->out = v;
        else if (!strcmp(s, "--image")) a->image = v;
        else if (!strcmp(s, "--decoder")) a->decoder = v;
        else if (!strcmp(s, "--model")) a->model = v;
        else if (!strcmp(s, "--backend")) {
            if (!parse_backend(v, &a->backend)) {
                sdxl_err("--backend %s: expected auto, cpu, vulkan or hip\n", v);
                return 0;
            }
        } else if (!strcmp(s, "--dtype")) {
            if (!parse_dtype(v, &a->dtype)) {
                sdxl_err("--dtype %s: expected f32, f16 or bf16\n", v);
                return 0;
            }
            a->dtype_set = 1;
        } else if (!strcmp(s, "--repeat")) {
            long r;
            if (!arg_long(v, 1, 1000, &r)) {
                sdxl_err("--repeat %s: expected 1..1000\n", v);
                return 0;
            }
            a->repeat = (int32_t)r;
        } else if (!strcmp(s, "--tile")) {
            long t;
            if (!arg_long(v, 1, 1 << 20, &t)) {
                sdxl_err("--tile %s: expected a positive number of latent rows\n", v);
                return 0;
            }
            a->tile_rows = (int32_t)t;
        } else if (!strcmp(s, "--max-memory")) {
            double mb = strtod(v, &end);
            if (*end || !(mb > 0.0 && mb < 1e9)) {
                sdxl_err("--max-memory %s: expected megabytes > 0\n", v);
                return 0;
            }
            a->max_bytes = (uint64_t)(mb * 1048576.0);
            if (a->max_bytes == 0) { /* 0 bytes would mean "no limit" to the decoder */
                sdxl_err("--max-memory %s: that is less than one byte\n", v);
                return 0;
            }
        } else if (!strcmp(s, "--max-host-memory")) {
            double mb = strtod(v, &end);
            if (*end || !(mb > 0.0 && mb < 1e9) || (uint64_t)(mb * 1048576.0) == 0) {
                sdxl_err("--max-host-memory %s: expected megabytes > 0 (at least one byte)\n", v);
                return 0;
            }
            a->max_host_bytes = (uint64_t)(mb * 1048576.0);
        } else if (!strcmp(s, "--scale")) {
            a->scale = strtof(v, &end);
            if (*end || !(a->scale > 0.0f)) {
                sdxl_err("--scale %s: expected a positive number\n", v);
                return 0;
            }
        } else if (!strcmp(s, "--size")) {
            long t;
            if (!arg_long(v, 1, 512, &t)) {
                sdxl_err("--size %s: expected 1..512\n", v);
                return 0;
            }
            a->demo_size = (int32_t)t;
        } else if (!strcmp(s, "--seed")) {
            a->seed = strtoull(v, &end, 10);
            if (*end) {
                sdxl_err("--seed %s: expected a number\n", v);
                return 0;
            }
            a->seed_set = 1;
        } else if (!strcmp(s, "--plan")) {
            long t;
            if (!arg_long(v, 1, 4096, &t)) {
                sdxl_err("--plan %s: expected a latent side 1..4096\n", v);
                return 0;
            }
            a->plan = 1;
            a->plan_size = (int32_t)t;
        } else {
            sdxl_err("unknown option %s (see --help)\n", s);
            return 0;
        }
    }
    if (a->tile_rows && a->max_bytes) {
        sdxl_err("give --tile or --max-memory, not both\n");
        return 0;
    }
    if (a->vae && a->random_weights) {
        sdxl_err("give --vae or --random-weights, not both\n");
        return 0;
    }
    if (a->out && strlen(a->out) >= PATH_MAX) {
        sdxl_err("-o: the path is %zu bytes long; the limit is %d\n", strlen(a->out),
                PATH_MAX - 1);
        return 0;
    }
    return 1;
}

