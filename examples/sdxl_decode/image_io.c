/* difkern-vae's input images and output latents (see image_io.h). */
#define _POSIX_C_SOURCE 200809L /* PATH_MAX, fileno */

#include "image_io.h"
#include "file_write.h"
#include "png_write.h"

#include <difkern/safetensors.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DV_MAX_IMAGE_FILE (UINT64_C(1) << 28) /* 256 MiB: far above any PNG stb decodes */

/* The whole of a regular file of at most DV_MAX_IMAGE_FILE bytes (free with
 * free()); NULL with the reason printed. */
static unsigned char *read_file(const char *path, size_t *n) {
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
        sdxl_err("%s: not a regular image file of 1 byte .. 256 MiB\n", path);
        fclose(fp);
        return NULL;
    }
    buf = (unsigned char *)malloc((size_t)sb.st_size);
    if (!buf || fread(buf, 1, (size_t)sb.st_size, fp) != (size_t)sb.st_size) {
        sdxl_err("%s: %s\n", path, buf ? "read error" : "out of memory");
        free(buf);
        fclose(fp);
        return NULL;
    }
    fclose(fp);
    *n = (size_t)sb.st_size;
    return buf;
}

float *dv_load_image(const char *path, float lo, int32_t *n, int32_t *h, int32_t *w) {
    size_t len = strlen(path);
    if (len > 4 && !strcmp(path + len - 4, ".npy")) {
        float *d = NULL, *own;
        int32_t ndim = 0;
        int64_t shape[DK_MAX_DIMS], numel;
        if (dk_npy_read_f32(path, &d, &ndim, shape) != DK_OK) {
            sdxl_err("%s\n", dk_last_error(NULL));
            return NULL;
        }
        if (ndim != 4 || shape[1] != 3 || shape[0] < 1 || shape[2] < 1 || shape[3] < 1 || shape[0] > 4096 ||
            shape[2] > 32768 || shape[3] > 32768) {
            sdxl_err("%s: images must be float32 [N, 3, H, W] (N <= 4096, H, W <= 32768)\n",
                    path);
            dk_npy_free(d);
            return NULL;
        }
        numel = shape[0] * 3 * shape[2] * shape[3];
        own = (float *)malloc((size_t)numel * sizeof(float));
        if (own) memcpy(own, d, (size_t)numel * sizeof(float));
        dk_npy_free(d);
        if (!own) sdxl_err("%s: out of memory\n", path);
        *n = (int32_t)shape[0];
        *h = (int32_t)shape[2];
        *w = (int32_t)shape[3];
        return own;
    } else {
        size_t bytes = 0;
        unsigned char *file = read_file(path, &bytes), *rgb;
        const char *why = "";
        int iw = 0, ih = 0;
        float *img;
        int64_t i, c, hw;
        if (!file) return NULL;
        rgb = sdxl_decode_image(file, bytes, &iw, &ih, &why);
        free(file);
        if (!rgb) {
            sdxl_err("%s: cannot decode the image: %s\n", path, why);
            return NULL;
        }
        hw = (int64_t)iw * ih;
        img = (float *)malloc((size_t)hw * 3 * sizeof(float));
        if (img)
            for (i = 0; i < hw; i++)
                for (c = 0; c < 3; c++) img[c * hw + i] = lo + (float)rgb[i * 3 + c] * ((1.0f - lo) / 255.0f);
        else
            sdxl_err("%s: out of memory\n", path);
        sdxl_free_image(rgb);
        *n = 1;
        *h = ih;
        *w = iw;
        return img;
    }
}

int dv_write_npy(const char *path, const float *data, int32_t n, int32_t c, int32_t h, int32_t w) {
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
        sdxl_err("%s: out of memory\n", path);
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

double dv_psnr(const float *a, const float *b, int64_t n, float lo) {
    double se = 0.0, s = 1.0 / (1.0 - lo);
    int64_t i;
    for (i = 0; i < n; i++) {
        double x = ((double)a[i] - lo) * s, y = ((double)b[i] - lo) * s, d;
        x = x < 0.0 ? 0.0 : x > 1.0 ? 1.0 : x;
        d = x - y;
        se += d * d;
    }
    return se > 0.0 ? 10.0 * log10((double)n / se) : INFINITY;
}

