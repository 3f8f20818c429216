/* The table built from DK_KNOB_LIST (src/knobs.h) and the one parser of knob
 * values, shared by the context (environment, then dk_context_options.settings)
 * and by the context-less readers.  Depends on nothing but the C library, so
 * tools/knobs_doc.c links it alone. */
#include "knobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DK_KNOB_ROW(f, N, T, d, lo, hi, acc, be, cl, dd, doc) \
    {"DIFKERN_" #N, #f, DK_KNOB_##T, d, lo, hi, acc, be, DK_KNOB_##cl, dd, doc, offsetof(dk_knobs, f)},
static const dk_knob_info knobs_table[DK_KNOB_COUNT] = {DK_KNOB_LIST(DK_KNOB_ROW)};
#undef DK_KNOB_ROW /* the amalgamation goes on after this file */

const dk_knob_info *dk__knob_info(int id) { return id >= 0 && id < DK_KNOB_COUNT ? &knobs_table[id] : NULL; }

int dk__knobs_dev(void) {
#ifdef DIFKERN_DEV_KNOBS
    return 1;
#else
    return 0;
#endif
}

/* Whether `word` (len bytes) is one of the '|'-separated entries of list; its index in *index. */
static int knobs_in_list(const char *list, const char *word, size_t len, int64_t *index) {
    int64_t i = 0;
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, "|");
        if (n == len && strncmp(p, word, len) == 0) {
            *index = i;
            return 1;
        }
        p += n;
        if (*p) p++;
        i++;
    }
    return 0;
}

/* "a|b|c" as "a, b or c" for messages. */
static void knobs_list_text(const char *list, char *out, size_t cap) {
    size_t used = 0;
    const char *p = list;
    out[0] = '\0';
    while (*p && used + 1 < cap) {
        size_t n = strcspn(p, "|");
        const char *sep = used == 0 ? "" : p[n] ? ", " : " or ";
        int w = snprintf(out + used, cap - used, "%s%.*s", sep, (int)n, p);
        if (w < 0) break;
        used += (size_t)w < cap - used ? (size_t)w : cap - used - 1;
        p += n;
        if (*p) p++;
    }
}

static dk_status knobs_bad(const dk_knob_info *in, const char *text, size_t len, const char *source, char *err,
                           size_t cap) {
    char accepted[160];
    if (in->type == DK_KNOB_BOOL)
        snprintf(accepted, sizeof accepted, "0 or 1 (also off/on, false/true, no/yes)");
    else if (in->type == DK_KNOB_INT && !in->accepted)
        snprintf(accepted, sizeof accepted, "an integer in %lld..%lld", (long long)in->lo, (long long)in->hi);
    else if (in->type == DK_KNOB_STRING)
        snprintf(accepted, sizeof accepted, "shorter than %d bytes", DK_KNOB_STRING_MAX);
    else
        knobs_list_text(in->accepted, accepted, sizeof accepted);
    snprintf(err, cap, "%s='%.*s' (%s) must be %s", in->name, (int)(len > 200 ? 200 : len), text, source, accepted);
    return DK_ERR_INVALID_ARGUMENT;
}

static void knobs_default(const dk_knob_info *in, dk_knobs *k) {
    if (in->type == DK_KNOB_STRING) ((char *)k + in->offset)[0] = '\0';
    else *(int64_t *)(void *)((char *)k + in->offset) = in->def;
}

/* Parse text[0..len) into knob `in` of k; empty means the default. */
static dk_status knobs_parse(const dk_knob_info *in, dk_knobs *k, const char *text, size_t len, const char *source,
                             char *err, size_t cap) {
    int64_t *num = (int64_t *)(void *)((char *)k + in->offset);
    static const char *const bools = "0|1|off|on|false|true|no|yes";
    int64_t v = 0;
    size_t i;
    if (len == 0) {
        knobs_default(in, k);
        return DK_OK;
    }
    switch (in->type) {
    case DK_KNOB_BOOL:
        if (!knobs_in_list(bools, text, len, &v)) return knobs_bad(in, text, len, source, err, cap);
        *num = v % 2;
        return DK_OK;
    case DK_KNOB_ENUM:
        if (!knobs_in_list(in->accepted, text, len, &v)) return knobs_bad(in, text, len, source, err, cap);
        *num = v;
        return DK_OK;
    case DK_KNOB_INT:
        if (in->accepted) {
            if (!knobs_in_list(in->accepted, text, len, &v)) return knobs_bad(in, text, len, source, err, cap);
            v = 0;
        }
        for (i = 0; i < len; i++) {
            if (text[i] < '0' || text[i] > '9' || v > (INT64_MAX - 9) / 10) /* no overflow below */
                return knobs_bad(in, text, len, source, err, cap);
            v = v * 10 + (text[i] - '0');
        }
        if (!in->accepted && (v < in->lo || v > in->hi)) return knobs_bad(in, text, len, source, err, cap);
        *num = v;
        return DK_OK;
    case DK_KNOB_STRING:
        if (len >= DK_KNOB_STRING_MAX) return knobs_bad(in, text, len, source, err, cap);
        memcpy((char *)k + in->offset, text, len);
        ((char *)k + in->offset)[len] = '\0';
        return DK_OK;
    }
    return knobs_bad(in, text, len, source, err, cap);
}

dk_status dk__knob_env(dk_knob_id id, dk_knobs *k, char *err, size_t cap) {
    const dk_knob_info *in = dk__knob_info((int)id);
    const char *v;
    if (!in) {
        snprintf(err, cap, "knob id %d out of range", (int)id);
        return DK_ERR_INVALID_ARGUMENT;
    }
    knobs_default(in, k);
    if (in->cls == DK_KNOB_BENCHMARK && !dk__knobs_dev()) return DK_OK;
    v = getenv(in->name);
    return v ? knobs_parse(in, k, v, strlen(v), "environment", err, cap) : DK_OK;
}

/* One "NAME=VALUE" entry of settings, s[0..len), surrounding blanks allowed;
 * marks the knob in seen. */
static dk_status knobs_setting(dk_knobs *k, const char *s, size_t len, char *seen, char *err, size_t cap) {
    const char *eq = (const char *)memchr(s, '=', len), *name = s, *val;
    size_t nlen, vlen;
    int i;
    while (len && (*name == ' ' || *name == '\t')) name++, len--;
    if (!len) return DK_OK;
    if (!eq) {
        snprintf(err, cap, "dk_context_options.settings: '%.*s' is not NAME=VALUE", (int)(len > 200 ? 200 : len), name);
        return DK_ERR_INVALID_ARGUMENT;
    }
    nlen = (size_t)(eq - name);
    while (nlen && (name[nlen - 1] == ' ' || name[nlen - 1] == '\t')) nlen--;
    val = eq + 1;
    vlen = (size_t)((name + len) - val);
    while (vlen && (*val == ' ' || *val == '\t')) val++, vlen--;
    while (vlen && (val[vlen - 1] == ' ' || val[vlen - 1] == '\t')) vlen--;
    for (i = 0; i < DK_KNOB_COUNT; i++) {
        const dk_knob_info *in = &knobs_table[i];
        if (strlen(in->name) != nlen || strncmp(in->name, name, nlen) != 0) continue;
        if (in->cls == DK_KNOB_BENCHMARK && !dk__knobs_dev()) {
            snprintf(err, cap,
                     "dk_context_options.settings: %s is a benchmark setting, read only by builds configured with "
                     "-Ddev_knobs=true",
                     in->name);
            return DK_ERR_INVALID_ARGUMENT;
        }
        seen[i] = 1;
        return knobs_parse(in, k, val, vlen, "dk_context_options.settings", err, cap);
    }
    snprintf(err, cap, "dk_context_options.settings: unknown setting '%.*s' (docs/environment.md lists them)",
             (int)(nlen > 200 ? 200 : nlen), name);
    return DK_ERR_INVALID_ARGUMENT;
}

/* Settings first, so that a variable they name is not read from the
 * environment at all (a bad value there cannot fail a context whose options
 * replace it); then the environment for the rest. */
dk_status dk__knobs_load(dk_knobs *k, const char *settings, char *err, size_t cap) {
    char seen[DK_KNOB_COUNT];
    dk_status st;
    int i;
    err[0] = '\0';
    memset(k, 0, sizeof *k);
    memset(seen, 0, sizeof seen);
    for (i = 0; i < DK_KNOB_COUNT; i++) knobs_default(&knobs_table[i], k);
    while (settings && *settings) {
        size_t n = strcspn(settings, ";");
        if ((st = knobs_setting(k, settings, n, seen, err, cap)) != DK_OK) return st;
        settings += n;
        if (*settings) settings++;
    }
    for (i = 0; i < DK_KNOB_COUNT; i++)
        if (!seen[i] && (st = dk__knob_env((dk_knob_id)i, k, err, cap)) != DK_OK) return st;
    return DK_OK;
}

/* Entry `index` of the '|'-separated list (the inverse of knobs_in_list). */
static const char *knobs_list_entry(const char *list, int64_t index, int *len) {
    for (; index > 0 && *list; index--) list += strcspn(list, "|") + (list[strcspn(list, "|")] ? 1 : 0);
    *len = (int)strcspn(list, "|");
    return list;
}

dk_status dk__knob_text(const dk_knobs *k, const char *name, char *value, size_t cap, char *err, size_t errcap) {
    int i, w, len;
    for (i = 0; i < DK_KNOB_COUNT && strcmp(knobs_table[i].name, name) != 0; i++) {}
    if (i == DK_KNOB_COUNT) {
        snprintf(err, errcap, "dk_setting_value: unknown setting '%.200s' (docs/environment.md lists them)", name);
        if (cap) value[0] = '\0';
        return DK_ERR_INVALID_ARGUMENT;
    }
    {
        const dk_knob_info *in = &knobs_table[i];
        const char *field = (const char *)k + in->offset;
        int64_t num = in->type == DK_KNOB_STRING ? 0 : *(const int64_t *)(const void *)field;
        if (in->type == DK_KNOB_STRING) {
            w = snprintf(value, cap, "%s", field);
        } else if (num < 0) { /* the parser takes no sign: negative is the "unset, the library decides" default */
            w = snprintf(value, cap, "%s", "");
        } else if (in->type == DK_KNOB_ENUM) {
            const char *word = knobs_list_entry(in->accepted, num, &len);
            w = snprintf(value, cap, "%.*s", len, word);
        } else {
            w = snprintf(value, cap, "%lld", (long long)num);
        }
    }
    if (w < 0 || (size_t)w >= cap) {
        snprintf(err, errcap, "dk_setting_value: the value of %s needs %d bytes, cap is %zu", name, w + 1, cap);
        if (cap) value[0] = '\0';
        return DK_ERR_INVALID_ARGUMENT;
    }
    return DK_OK;
}
