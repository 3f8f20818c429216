/* The command line of difkern-doctor. */
#include "doctor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void dd_usage(FILE *f) {
    fprintf(f,
            "usage: difkern-doctor [options]\n"
            "Checks difkern on this machine's GPUs: lists the runtimes and devices it finds and the kernel\n"
            "family each op gets, runs the shared case list against an fp64 CPU reference, times a short\n"
            "benchmark, and writes difkern-doctor-report.md and .json (attach them to a bug report).\n"
            "No network is used.  Exit status: 0 all passed, 1 a case or benchmark failed, 2 bad usage,\n"
            "3 the report could not be written, 77 nothing could be tested (no usable GPU: see the report).\n"
            "\n"
            "  --backend LIST    gpu (default: vulkan and hip), cpu, vulkan, hip or all; comma-separated.\n"
            "                    Naming vulkan also tests CPU Vulkan implementations (lavapipe)\n"
            "  --device N        only device N of each backend (the library's device_index)\n"
            "  --full            the whole case list (default: the quick subset)\n"
            "  --odd-views       run the cases on views that keep every result: size-1 dims with the\n"
            "                    stride INT64_MAX, every view one element off 16-byte alignment\n"
            "  --op NAME         only the cases of one op (conv2d, attention, ...)\n"
            "  --case NAME       only this case (exact name; else every case containing NAME)\n"
            "  --list-cases      print the selected cases and exit\n"
            "  --seed N          input seed (default 1; reproducers repeat it)\n"
            "  --all-families    Vulkan: also run the slower families the device could use\n"
            "                    (NV cooperative matrix, portable) as separate targets\n"
            "  --quick-bench     small benchmark shapes (CPU devices always get them)\n"
            "  --no-bench        no benchmark\n"
            "  --no-cases        no case list (devices and benchmark only)\n"
            "  --out PREFIX      write PREFIX.md and PREFIX.json (default difkern-doctor-report)\n"
            "  -v, --verbose     print every case\n"
            "  -h, --help        this text\n");
}

static int dd_bad(const char *fmt, const char *arg) {
    fprintf(stderr, "difkern-doctor: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(difkern-doctor --help lists the options)\n");
    return 2;
}

static int dd_set_backends(dd_options *o, const char *list) {
    char buf[128], *p, *tok;
    if (strlen(list) >= sizeof buf || !list[0]) return 0;
    memcpy(buf, list, strlen(list) + 1);
    o->want_cpu = o->want_vulkan = o->want_hip = 0;
    for (p = buf; p; p = tok) {
        tok = strchr(p, ',');
        if (tok) *tok++ = 0;
        if (!strcmp(p, "cpu")) o->want_cpu = 1;
        else if (!strcmp(p, "vulkan")) o->want_vulkan = 1;
        else if (!strcmp(p, "hip")) o->want_hip = 1;
        else if (!strcmp(p, "gpu")) o->want_vulkan = o->want_hip = 1;
        else if (!strcmp(p, "all")) o->want_cpu = o->want_vulkan = o->want_hip = 1;
        else return 0;
    }
    return 1;
}

/* The command line, quoted for a POSIX shell, for the report. */
static void dd_record_command(dd_options *o, int argc, char **argv) {
    size_t used = 0;
    int i;
    o->command_line[0] = 0;
    for (i = 0; i < argc && used + 8 < sizeof o->command_line; i++) {
        const char *a = i == 0 ? "difkern-doctor" : argv[i];
        int plain = a[0] != 0 && strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./,:+@") ==
                                     strlen(a);
        if (plain) used += (size_t)snprintf(o->command_line + used, sizeof o->command_line - used, "%s%s", i ? " " : "", a);
        else {
            const char *p;
            used += (size_t)snprintf(o->command_line + used, sizeof o->command_line - used, "%s'", i ? " " : "");
            for (p = a; *p && used + 6 < sizeof o->command_line; p++)
                used += (size_t)snprintf(o->command_line + used, sizeof o->command_line - used, "%s",
                                         *p == '\'' ? "'\\''" : (char[2]){*p, 0});
            used += (size_t)snprintf(o->command_line + used, sizeof o->command_line - used, "'");
        }
    }
}

int dd_parse_options(int argc, char **argv, dd_options *o) {
    int i;
    const char *inject = getenv("DIFKERN_DOCTOR_INJECT");
    memset(o, 0, sizeof *o);
    o->want_vulkan = o->want_hip = 1;
    o->device = -1;
    o->seed = 1;
    o->out_prefix = "difkern-doctor-report";
    o->inject = inject && inject[0] ? inject : NULL;
    dd_record_command(o, argc, argv);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = !strcmp(a, "--backend") || !strcmp(a, "--device") || !strcmp(a, "--op") || !strcmp(a, "--case") ||
                    !strcmp(a, "--seed") || !strcmp(a, "--out") || !strcmp(a, "--inject");
        if (takes && !v) return dd_bad("%s needs a value", a);
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            dd_usage(stdout);
            return 1;
        } else if (!strcmp(a, "--backend")) {
            if (!dd_set_backends(o, v)) return dd_bad("--backend '%s': expected gpu, cpu, vulkan, hip or all (comma-separated)", v);
            o->backend_explicit = 1;
            i++;
        } else if (!strcmp(a, "--device")) {
            char *end;
            long d;
            errno = 0;
            d = strtol(v, &end, 10);
            if (errno || *end || end == v || d < 0 || d > 1000) return dd_bad("--device '%s': expected a device index 0..1000", v);
            o->device = (int)d;
            i++;
        } else if (!strcmp(a, "--op")) {
            int k, known = 0;
            for (k = 0; k < HC_OP_COUNT; k++) known |= !strcmp(v, hc_op_name((hc_op)k));
            if (!known) {
                fprintf(stderr, "difkern-doctor: --op '%s' is not an op; the ops are:", v);
                for (k = 0; k < HC_OP_COUNT; k++) fprintf(stderr, " %s", hc_op_name((hc_op)k));
                fprintf(stderr, "\n");
                return 2;
            }
            o->op = v;
            i++;
        } else if (!strcmp(a, "--case")) {
            if (!v[0]) return dd_bad("--case needs a non-empty name%s", "");
            o->case_name = v;
            i++;
        } else if (!strcmp(a, "--seed")) {
            char *end;
            errno = 0;
            o->seed = strtoull(v, &end, 0);
            if (errno || *end || end == v || v[0] == '-') return dd_bad("--seed '%s': expected a non-negative integer", v);
            i++;
        } else if (!strcmp(a, "--out")) {
            if (!v[0]) return dd_bad("--out needs a file name prefix%s", "");
            o->out_prefix = v;
            i++;
        } else if (!strcmp(a, "--inject")) {
            /* hidden: the same as DIFKERN_DOCTOR_INJECT (tests of the failure path) */
            o->inject = v;
            i++;
        } else if (!strcmp(a, "--full")) o->full = 1;
        else if (!strcmp(a, "--odd-views")) o->odd_views = 1;
        else if (!strcmp(a, "--quick-bench")) o->quick_bench = 1;
        else if (!strcmp(a, "--no-bench")) o->no_bench = 1;
        else if (!strcmp(a, "--no-cases")) o->no_cases = 1;
        else if (!strcmp(a, "--all-families")) o->all_families = 1;
        else if (!strcmp(a, "--list-cases")) o->list_cases = 1;
        else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) o->verbose = 1;
        else return dd_bad("unknown option '%s'", a);
    }
    if (snprintf(o->md_path, sizeof o->md_path, "%s.md", o->out_prefix) >= (int)sizeof o->md_path ||
        snprintf(o->json_path, sizeof o->json_path, "%s.json", o->out_prefix) >= (int)sizeof o->json_path)
        return dd_bad("--out '%s': too long", o->out_prefix);
    return 0;
}
