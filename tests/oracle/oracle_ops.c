/* Runs difkern ops on the CPU backend for tests/oracle/oracle.py.
 *
 *   oracle_ops MANIFEST IN_BLOB OUT_BLOB OUT_BYTES
 *
 * MANIFEST is text, one case per block (tokens separated by blanks):
 *   case NAME OP                      OP: conv2d conv_transpose2d matmul linear group_norm
 *                                         group_norm_stats group_norm_apply layer_norm rms_norm
 *                                         attention
 *                                         activation activation_scaled add upsample convert
 *                                         conv3d (with an input "cache": dk_conv3d_chunk)
 *   p KEY VALUE                       a numeric parameter (stride_h, act, eps, ...)
 *   t ROLE DTYPE NDIM SHAPE.. STRIDES.. OFFSET BUFELEMS BLOBOFF
 *                                     an input: a buffer of BUFELEMS elements whose bytes are
 *                                     at BLOBOFF in IN_BLOB; the view starts OFFSET elements in
 *   o ROLE DTYPE NDIM SHAPE.. STRIDES.. OFFSET BUFELEMS BLOBOFF
 *                                     the output: its buffer is filled with NaN, the op runs,
 *                                     the whole buffer is written at BLOBOFF in OUT_BLOB
 *   a ROLE OTHER BLOBOFF              the output is the same view as input OTHER (in place);
 *                                     OTHER's whole buffer is written at BLOBOFF in OUT_BLOB
 *   end
 * Parameters the runner itself reads: "prepare" (dk_prepare_weight first) and
 * "reupload" (run, then upload input w2's bytes into w's buffer and run again).
 * OUT_BLOB is written with OUT_BYTES bytes (zero where no output landed).
 * For each case one line goes to stdout:  result NAME STATUS MESSAGE
 * The program exits nonzero only when it cannot do its job (bad manifest, I/O).
 */
#include <difkern.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ORC_MAX_TENSORS 8
#define ORC_MAX_PARAMS 24
#define ORC_LINE 1024

typedef struct orc_tensor {
    char role[16];
    dk_tensor t;
    dk_buffer *buf;
    uint64_t buf_bytes;
    uint64_t blob_off;
    int is_output;
} orc_tensor;

typedef struct orc_case {
    char name[128];
    char op[32];
    char pkey[ORC_MAX_PARAMS][24];
    double pval[ORC_MAX_PARAMS];
    int nparams;
    orc_tensor tensors[ORC_MAX_TENSORS];
    int ntensors;
    char alias_role[16], alias_of[16];
    uint64_t alias_blob_off;
    int has_alias;
} orc_case;

static unsigned char *orc_read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    unsigned char *data = NULL;
    long n;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        data = (unsigned char *)malloc((size_t)n + 1);
        if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
            free(data);
            data = NULL;
        }
        *size = (size_t)n;
    }
    fclose(f);
    return data;
}

static double orc_param(const orc_case *c, const char *key, double dflt) {
    int i;
    for (i = 0; i < c->nparams; i++)
        if (strcmp(c->pkey[i], key) == 0) return c->pval[i];
    return dflt;
}

static int orc_iparam(const orc_case *c, const char *key, int dflt) {
    return (int)orc_param(c, key, (double)dflt);
}

static const dk_tensor *orc_find(const orc_case *c, const char *role) {
    int i;
    for (i = 0; i < c->ntensors; i++)
        if (strcmp(c->tensors[i].role, role) == 0) return &c->tensors[i].t;
    return NULL;
}

static int orc_dtype(const char *s, dk_dtype *out) {
    if (strcmp(s, "f32") == 0) *out = DK_F32;
    else if (strcmp(s, "f16") == 0) *out = DK_F16;
    else if (strcmp(s, "bf16") == 0) *out = DK_BF16;
    else return 0;
    return 1;
}

/* Parses "t"/"o" lines: ROLE DTYPE NDIM SHAPE.. STRIDES.. OFFSET BUFELEMS BLOBOFF. */
static int orc_parse_tensor(char *rest, orc_tensor *ot) {
    char *tok[4 + 2 * DK_MAX_DIMS + 3];
    int n = 0, i, ndim;
    long long offset, bufelems, bloboff;
    for (tok[n] = strtok(rest, " \t\r\n"); tok[n] && n < (int)(sizeof tok / sizeof tok[0]) - 1;)
        tok[++n] = strtok(NULL, " \t\r\n");
    if (n < 3) return 0;
    memset(ot, 0, sizeof *ot);
    if (strlen(tok[0]) >= sizeof ot->role) return 0;
    strcpy(ot->role, tok[0]);
    if (!orc_dtype(tok[1], &ot->t.dtype)) return 0;
    ndim = atoi(tok[2]);
    if (ndim < 1 || ndim > DK_MAX_DIMS || n != 3 + 2 * ndim + 3) return 0;
    ot->t.ndim = ndim;
    for (i = 0; i < DK_MAX_DIMS; i++) {
        ot->t.shape[i] = 1;
        ot->t.strides[i] = 0;
    }
    for (i = 0; i < ndim; i++) {
        ot->t.shape[i] = atoll(tok[3 + i]);
        ot->t.strides[i] = atoll(tok[3 + ndim + i]);
    }
    offset = atoll(tok[3 + 2 * ndim]);
    bufelems = atoll(tok[4 + 2 * ndim]);
    bloboff = atoll(tok[5 + 2 * ndim]);
    if (offset < 0 || bufelems < 1 || bloboff < 0) return 0;
    ot->t.offset = (uint64_t)offset * dk_dtype_size(ot->t.dtype);
    ot->buf_bytes = (uint64_t)bufelems * dk_dtype_size(ot->t.dtype);
    ot->blob_off = (uint64_t)bloboff;
    return 1;
}

/* NaN in the tensor's dtype, repeated to 32 bits, for dk_buffer_fill. */
static uint32_t orc_nan_pattern(dk_dtype t) {
    if (t == DK_F32) return 0x7FC00000u;
    if (t == DK_F16) return 0x7E007E00u;
    return 0x7FC07FC0u;
}

static dk_activation orc_act(const orc_case *c) { return (dk_activation)orc_iparam(c, "act", 0); }
static dk_activation orc_post_act(const orc_case *c) { return (dk_activation)orc_iparam(c, "post_act", 0); }

static dk_status orc_run_op(dk_context *ctx, const orc_case *c, const dk_tensor *y) {
    const char *op = c->op;
    if (strcmp(op, "conv2d") == 0) {
        dk_conv2d_desc d;
        dk_conv2d_desc_init(&d);
        d.stride_h = orc_iparam(c, "stride_h", 1);
        d.stride_w = orc_iparam(c, "stride_w", 1);
        d.pad_h = orc_iparam(c, "pad_h", 0);
        d.pad_w = orc_iparam(c, "pad_w", 0);
        d.dilation_h = orc_iparam(c, "dilation_h", 1);
        d.dilation_w = orc_iparam(c, "dilation_w", 1);
        d.groups = orc_iparam(c, "groups", 1);
        d.upsample = orc_iparam(c, "upsample", 1);
        if (orc_iparam(c, "pad_top", -1) >= 0) {
            d.pad_top = orc_iparam(c, "pad_top", 0);
            d.pad_bottom = orc_iparam(c, "pad_bottom", 0);
            d.pad_left = orc_iparam(c, "pad_left", 0);
            d.pad_right = orc_iparam(c, "pad_right", 0);
        }
        d.activation = orc_act(c);
        d.post_activation = orc_post_act(c);
        d.output_scale = (float)orc_param(c, "output_scale", 1.0);
        d.residual_scale = (float)orc_param(c, "residual_scale", 1.0);
        if (orc_iparam(c, "prepare", 0)) {
            dk_status st = dk_prepare_weight(ctx, DK_WEIGHT_CONV2D, orc_find(c, "w"));
            if (st != DK_OK) return st;
        }
        return dk_conv2d(ctx, &d, orc_find(c, "x"), orc_find(c, "w"), orc_find(c, "bias"),
                         orc_find(c, "residual"), y);
    }
    if (strcmp(op, "conv3d") == 0) {
        dk_conv3d_desc d;
        dk_conv3d_desc_init(&d);
        d.stride_t = orc_iparam(c, "stride_t", 1);
        d.stride_h = orc_iparam(c, "stride_h", 1);
        d.stride_w = orc_iparam(c, "stride_w", 1);
        d.dilation_t = orc_iparam(c, "dilation_t", 1);
        d.dilation_h = orc_iparam(c, "dilation_h", 1);
        d.dilation_w = orc_iparam(c, "dilation_w", 1);
        d.pad_front = orc_iparam(c, "pad_front", 0);
        d.pad_back = orc_iparam(c, "pad_back", 0);
        d.pad_top = orc_iparam(c, "pad_top", 0);
        d.pad_bottom = orc_iparam(c, "pad_bottom", 0);
        d.pad_left = orc_iparam(c, "pad_left", 0);
        d.pad_right = orc_iparam(c, "pad_right", 0);
        d.groups = orc_iparam(c, "groups", 1);
        d.activation = orc_act(c);
        d.post_activation = orc_post_act(c);
        d.output_scale = (float)orc_param(c, "output_scale", 1.0);
        d.residual_scale = (float)orc_param(c, "residual_scale", 1.0);
        if (orc_find(c, "cache"))
            return dk_conv3d_chunk(ctx, &d, orc_find(c, "cache"), orc_find(c, "x"), orc_find(c, "w"),
                                   orc_find(c, "bias"), orc_find(c, "residual"), y);
        return dk_conv3d(ctx, &d, orc_find(c, "x"), orc_find(c, "w"), orc_find(c, "bias"), orc_find(c, "residual"),
                         y);
    }
    if (strcmp(op, "conv_transpose2d") == 0) {
        dk_conv_transpose2d_desc d;
        dk_conv_transpose2d_desc_init(&d);
        d.stride_h = orc_iparam(c, "stride_h", 1);
        d.stride_w = orc_iparam(c, "stride_w", 1);
        d.pad_h = orc_iparam(c, "pad_h", 0);
        d.pad_w = orc_iparam(c, "pad_w", 0);
        d.output_padding_h = orc_iparam(c, "output_padding_h", 0);
        d.output_padding_w = orc_iparam(c, "output_padding_w", 0);
        d.dilation_h = orc_iparam(c, "dilation_h", 1);
        d.dilation_w = orc_iparam(c, "dilation_w", 1);
        d.groups = orc_iparam(c, "groups", 1);
        d.activation = orc_act(c);
        d.post_activation = orc_post_act(c);
        d.output_scale = (float)orc_param(c, "output_scale", 1.0);
        d.residual_scale = (float)orc_param(c, "residual_scale", 1.0);
        if (orc_iparam(c, "prepare", 0)) {
            dk_status st = dk_prepare_weight(ctx, DK_WEIGHT_CONV_TRANSPOSE2D, orc_find(c, "w"));
            if (st != DK_OK) return st;
        }
        return dk_conv_transpose2d(ctx, &d, orc_find(c, "x"), orc_find(c, "w"), orc_find(c, "bias"),
                                   orc_find(c, "residual"), y);
    }
    if (strcmp(op, "matmul") == 0 || strcmp(op, "linear") == 0) {
        dk_matmul_desc d;
        dk_matmul_desc_init(&d);
        d.activation = orc_act(c);
        d.post_activation = orc_post_act(c);
        d.output_scale = (float)orc_param(c, "output_scale", 1.0);
        d.residual_scale = (float)orc_param(c, "residual_scale", 1.0);
        if (op[0] == 'm')
            return dk_matmul(ctx, &d, orc_find(c, "a"), orc_find(c, "b"), orc_find(c, "bias"),
                             orc_find(c, "residual"), y);
        return dk_linear(ctx, &d, orc_find(c, "x"), orc_find(c, "w"), orc_find(c, "bias"),
                         orc_find(c, "residual"), y);
    }
    if (strcmp(op, "group_norm") == 0) {
        dk_group_norm_desc d;
        dk_group_norm_desc_init(&d);
        d.groups = orc_iparam(c, "groups", 32);
        d.eps = (float)orc_param(c, "eps", 1e-5);
        d.activation = orc_act(c);
        return dk_group_norm(ctx, &d, orc_find(c, "x"), orc_find(c, "gamma"), orc_find(c, "beta"), y);
    }
    if (strcmp(op, "group_norm_stats") == 0 || strcmp(op, "group_norm_apply") == 0) {
        dk_group_norm_desc d;
        dk_group_norm_desc_init(&d);
        d.groups = orc_iparam(c, "groups", 32);
        d.eps = (float)orc_param(c, "eps", 1e-5);
        d.activation = orc_act(c);
        if (strcmp(op, "group_norm_stats") == 0) return dk_group_norm_stats(ctx, &d, orc_find(c, "x"), y);
        return dk_group_norm_apply(ctx, &d, orc_find(c, "x"), orc_find(c, "stats"), orc_find(c, "gamma"),
                                   orc_find(c, "beta"), y);
    }
    if (strcmp(op, "layer_norm") == 0) {
        dk_layer_norm_desc d;
        dk_layer_norm_desc_init(&d);
        d.eps = (float)orc_param(c, "eps", 1e-5);
        d.activation = orc_act(c);
        return dk_layer_norm(ctx, &d, orc_find(c, "x"), orc_find(c, "gamma"), orc_find(c, "beta"), y);
    }
    if (strcmp(op, "rms_norm") == 0) {
        dk_rms_norm_desc d;
        dk_rms_norm_desc_init(&d);
        d.form = (dk_rms_norm_form)orc_iparam(c, "form", 0);
        d.eps = (float)orc_param(c, "eps", 1e-6);
        d.activation = orc_act(c);
        return dk_rms_norm(ctx, &d, orc_find(c, "x"), orc_find(c, "gamma"), orc_find(c, "beta"), y);
    }
    if (strcmp(op, "attention") == 0) {
        dk_attention_desc d;
        dk_attention_desc_init(&d);
        d.scale = (float)orc_param(c, "scale", 0.0);
        return dk_attention(ctx, &d, orc_find(c, "q"), orc_find(c, "k"), orc_find(c, "v"), y);
    }
    if (strcmp(op, "activation") == 0) return dk_activation_forward(ctx, orc_act(c), orc_find(c, "x"), y);
    if (strcmp(op, "activation_scaled") == 0)
        return dk_activation_scaled(ctx, (float)orc_param(c, "in_scale", 1.0), orc_act(c),
                                    (float)orc_param(c, "out_scale", 1.0), orc_find(c, "x"), y);
    if (strcmp(op, "add") == 0)
        return dk_add(ctx, (float)orc_param(c, "alpha", 1.0), orc_find(c, "a"), (float)orc_param(c, "beta", 1.0),
                      orc_find(c, "b"), orc_act(c), y);
    if (strcmp(op, "upsample") == 0) return dk_upsample_nearest(ctx, orc_find(c, "x"), y);
    if (strcmp(op, "convert") == 0) return dk_convert(ctx, orc_find(c, "x"), y);
    fprintf(stderr, "oracle_ops: unknown op '%s' in case %s\n", op, c->name);
    return DK_ERR_INTERNAL;
}

/* Prints the result line; the message is kept on one line. */
static void orc_report(const orc_case *c, dk_status st, const char *msg) {
    char clean[1200];
    size_t i;
    snprintf(clean, sizeof clean, "%s", msg ? msg : "");
    for (i = 0; clean[i]; i++)
        if (clean[i] == '\n' || clean[i] == '\r') clean[i] = ' ';
    printf("result %s %s %s\n", c->name, dk_status_name(st), clean);
}

/* Fills the whole buffer of an output with NaN. */
static dk_status orc_poison(dk_context *ctx, const orc_tensor *ot) {
    dk_status st = dk_buffer_fill(ctx, ot->buf, 0, ot->buf_bytes & ~(uint64_t)3, orc_nan_pattern(ot->t.dtype));
    if (st == DK_OK && (ot->buf_bytes & 3)) { /* a trailing f16/bf16 element */
        uint16_t nan16 = (uint16_t)(orc_nan_pattern(ot->t.dtype) & 0xFFFFu);
        st = dk_buffer_upload(ctx, ot->buf, ot->buf_bytes - 2, &nan16, 2);
    }
    return st;
}

static orc_tensor *orc_find_slot(orc_case *c, const char *role) {
    int i;
    for (i = 0; i < c->ntensors; i++)
        if (strcmp(c->tensors[i].role, role) == 0) return &c->tensors[i];
    return NULL;
}

/* "reupload": after a first run, overwrite w's buffer with the bytes of w2 (same
 * placement), poison the output again and run once more.  A weight prepared and
 * cached by the first run must not be used for the second. */
static dk_status orc_reupload(dk_context *ctx, orc_case *c, const orc_tensor *ybuf, const unsigned char *in_blob,
                              int *ok) {
    orc_tensor *w = orc_find_slot(c, "w"), *w2 = orc_find_slot(c, "w2");
    dk_status st;
    if (!w || !w2 || w->buf_bytes != w2->buf_bytes || !ybuf->is_output) {
        fprintf(stderr, "oracle_ops: case %s: reupload needs inputs w, w2 of one size and an output\n",
                c->name);
        *ok = 0;
        return DK_OK;
    }
    st = dk_buffer_upload(ctx, w->buf, 0, in_blob + w2->blob_off, w->buf_bytes);
    if (st == DK_OK) st = orc_poison(ctx, ybuf);
    if (st == DK_OK) st = orc_run_op(ctx, c, &ybuf->t);
    if (st == DK_OK) st = dk_sync(ctx);
    return st;
}

/* Creates the buffers, runs the case, writes the output bytes into out_blob. */
static int orc_run_case(dk_context *ctx, orc_case *c, const unsigned char *in_blob, size_t in_size,
                        unsigned char *out_blob, size_t out_size) {
    dk_status st = DK_OK;
    const dk_tensor *y = NULL;
    const orc_tensor *ybuf = NULL;
    uint64_t y_blob_off = 0;
    int i, ok = 1;

    for (i = 0; i < c->ntensors && st == DK_OK; i++) {
        orc_tensor *ot = &c->tensors[i];
        st = dk_buffer_create(ctx, ot->buf_bytes, &ot->buf);
        if (st != DK_OK) break;
        ot->t.buffer = ot->buf;
        if (ot->is_output) {
            st = orc_poison(ctx, ot);
            y = &ot->t;
            ybuf = ot;
            y_blob_off = ot->blob_off;
        } else {
            if (ot->blob_off + ot->buf_bytes > in_size) {
                fprintf(stderr, "oracle_ops: case %s: tensor %s lies outside the input blob\n", c->name, ot->role);
                ok = 0;
                break;
            }
            st = dk_buffer_upload(ctx, ot->buf, 0, in_blob + ot->blob_off, ot->buf_bytes);
        }
    }
    if (ok && st == DK_OK && c->has_alias) {
        for (i = 0; i < c->ntensors; i++)
            if (strcmp(c->tensors[i].role, c->alias_of) == 0) {
                y = &c->tensors[i].t;
                ybuf = &c->tensors[i];
                y_blob_off = c->alias_blob_off;
            }
    }
    if (ok && st == DK_OK && !y) {
        fprintf(stderr, "oracle_ops: case %s has no output tensor\n", c->name);
        ok = 0;
    }
    if (ok && st == DK_OK) st = orc_run_op(ctx, c, y);
    if (ok && st == DK_OK) st = dk_sync(ctx);
    if (ok && st == DK_OK && orc_iparam(c, "reupload", 0)) st = orc_reupload(ctx, c, ybuf, in_blob, &ok);
    if (ok && st == DK_OK) {
        if (y_blob_off + ybuf->buf_bytes > out_size) {
            fprintf(stderr, "oracle_ops: case %s: output lies outside the output blob\n", c->name);
            ok = 0;
        } else {
            st = dk_buffer_download(ctx, ybuf->buf, 0, out_blob + y_blob_off, ybuf->buf_bytes);
        }
    }
    if (ok) orc_report(c, st, st == DK_OK ? "" : dk_last_error(ctx));
    for (i = 0; i < c->ntensors; i++) {
        dk_buffer_destroy(ctx, c->tensors[i].buf);
        c->tensors[i].buf = NULL;
    }
    return ok;
}

/* Reads the manifest line by line and runs each case as soon as its block ends. */
static int orc_run_manifest(dk_context *ctx, FILE *mf, const unsigned char *in_blob, size_t in_size,
                            unsigned char *out_blob, size_t out_size) {
    char line[ORC_LINE];
    orc_case *c = (orc_case *)calloc(1, sizeof *c);
    int in_case = 0, lineno = 0, ok = 1;
    if (!c) return 0;
    while (ok && fgets(line, sizeof line, mf)) {
        char *kind, *rest;
        lineno++;
        kind = strtok(line, " \t\r\n");
        if (!kind) continue;
        rest = kind + strlen(kind) + 1;
        if (strcmp(kind, "case") == 0) {
            char *name = strtok(NULL, " \t\r\n"), *op = strtok(NULL, " \t\r\n");
            memset(c, 0, sizeof *c);
            if (!name || !op || strlen(name) >= sizeof c->name || strlen(op) >= sizeof c->op) ok = 0;
            else {
                strcpy(c->name, name);
                strcpy(c->op, op);
                in_case = 1;
            }
        } else if (!in_case) {
            ok = 0;
        } else if (strcmp(kind, "p") == 0) {
            char *key = strtok(NULL, " \t\r\n"), *val = strtok(NULL, " \t\r\n");
            if (!key || !val || c->nparams >= ORC_MAX_PARAMS || strlen(key) >= sizeof c->pkey[0]) ok = 0;
            else {
                strcpy(c->pkey[c->nparams], key);
                c->pval[c->nparams++] = strtod(val, NULL);
            }
        } else if (strcmp(kind, "t") == 0 || strcmp(kind, "o") == 0) {
            if (c->ntensors >= ORC_MAX_TENSORS || !orc_parse_tensor(rest, &c->tensors[c->ntensors])) ok = 0;
            else c->tensors[c->ntensors++].is_output = kind[0] == 'o';
        } else if (strcmp(kind, "a") == 0) {
            char *role = strtok(NULL, " \t\r\n"), *of = strtok(NULL, " \t\r\n"), *off = strtok(NULL, " \t\r\n");
            if (!role || !of || !off || strlen(role) >= sizeof c->alias_role || strlen(of) >= sizeof c->alias_of)
                ok = 0;
            else {
                strcpy(c->alias_role, role);
                strcpy(c->alias_of, of);
                c->alias_blob_off = (uint64_t)atoll(off);
                c->has_alias = 1;
            }
        } else if (strcmp(kind, "end") == 0) {
            ok = orc_run_case(ctx, c, in_blob, in_size, out_blob, out_size);
            fflush(stdout);
            in_case = 0;
        } else {
            ok = 0;
        }
        if (!ok) fprintf(stderr, "oracle_ops: manifest line %d: cannot use it\n", lineno);
    }
    free(c);
    return ok;
}

int main(int argc, char **argv) {
    dk_context_options opt;
    dk_context *ctx = NULL;
    unsigned char *in_blob = NULL, *out_blob = NULL;
    size_t in_size = 0, out_size;
    FILE *mf, *of;
    int ok;
    dk_status st;

    if (argc != 5) {
        fprintf(stderr, "usage: %s MANIFEST IN_BLOB OUT_BLOB OUT_BYTES\n", argv[0]);
        return 2;
    }
    out_size = (size_t)strtoull(argv[4], NULL, 10);
    in_blob = orc_read_file(argv[2], &in_size);
    out_blob = (unsigned char *)calloc(out_size + 1, 1);
    mf = fopen(argv[1], "r");
    if (!in_blob || !out_blob || !mf) {
        fprintf(stderr, "oracle_ops: cannot read %s / %s or allocate %zu bytes\n", argv[1], argv[2], out_size);
        return 2;
    }
    dk_context_options_init(&opt);
    opt.backend = DK_BACKEND_CPU;
    st = dk_context_create(&opt, &ctx);
    if (st != DK_OK) {
        fprintf(stderr, "oracle_ops: dk_context_create: %s: %s\n", dk_status_name(st), dk_last_error(NULL));
        return 2;
    }
    printf("context %s\n", dk_context_describe(ctx));
    ok = orc_run_manifest(ctx, mf, in_blob, in_size, out_blob, out_size);
    fclose(mf);
    dk_context_destroy(ctx);
    of = fopen(argv[3], "wb");
    if (!of || fwrite(out_blob, 1, out_size, of) != out_size) {
        fprintf(stderr, "oracle_ops: cannot write %s\n", argv[3]);
        ok = 0;
    }
    if (of) fclose(of);
    free(in_blob);
    free(out_blob);
    return ok ? 0 : 2;
}
