/* Context, errors, buffers, timing and small helpers: the backend-independent core. */
#include "dk_internal.h"
#include "../backends/backend.h"

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(_MSC_VER)
#define CORE_THREAD_LOCAL __declspec(thread)
#else
#define CORE_THREAD_LOCAL _Thread_local
#endif

static CORE_THREAD_LOCAL char core_thread_error[1024];
/* The calling thread's last failure on a context (which: core_thread_ctx_serial),
 * so that dk_last_error(ctx) gives a thread its own message when threads share ctx. */
static CORE_THREAD_LOCAL char core_thread_ctx_error[1024];
static CORE_THREAD_LOCAL uint64_t core_thread_ctx_serial;
static CORE_THREAD_LOCAL char core_thread_ctx_view[1024]; /* dk_last_error's copy of ctx->error */
/* Buffer ids and context serials: unique in the process, never reused. */
static atomic_uint_least64_t core_next_buffer_id = 1;
static atomic_uint_least64_t core_next_context_serial = 1;

/* ------------------------------------------------------------------ errors */

void dk__lock(dk_context *ctx) { (void)mtx_lock(&ctx->lock); }
void dk__unlock(dk_context *ctx) { (void)mtx_unlock(&ctx->lock); }
dk_status dk__unlock_ret(dk_context *ctx, dk_status st) {
    (void)mtx_unlock(&ctx->lock);
    return st;
}

dk_status dk__fail(dk_context *ctx, dk_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (!ctx) {
        vsnprintf(core_thread_error, sizeof core_thread_error, fmt, ap);
    } else {
        vsnprintf(core_thread_ctx_error, sizeof core_thread_ctx_error, fmt, ap);
        core_thread_ctx_serial = ctx->serial;
        dk__lock(ctx);
        memcpy(ctx->error, core_thread_ctx_error, sizeof ctx->error);
        dk__unlock(ctx);
    }
    va_end(ap);
    return status;
}

void dk__clear_error(dk_context *ctx) {
    if (!ctx) {
        core_thread_error[0] = '\0';
        return;
    }
    if (core_thread_ctx_serial == ctx->serial) core_thread_ctx_error[0] = '\0';
    dk__lock(ctx);
    ctx->error[0] = '\0';
    dk__unlock(ctx);
}

dk_status dk__check_owner(dk_context *ctx, const char *fn, const char *what, const dk_buffer *b) {
    if (b->owner == ctx) return DK_OK;
    return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT,
                    "%s: %s belongs to another context (%s backend); a buffer is used only with the "
                    "context that created it",
                    fn, what, b->owner && b->owner->ops ? b->owner->ops->name : "unknown");
}

int32_t dk__core_count(void) {
#if defined(__unix__) || defined(__APPLE__)
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n >= 1 && n <= 1024 ? (int32_t)n : 1;
#else
    return 1;
#endif
}

double dk__now_ms(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

void dk__strlcpy(char *dst, const char *src, size_t cap) {
    size_t n;
    if (cap == 0) return;
    n = strlen(src);
    if (n >= cap) n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

const char *dk_last_error(const dk_context *ctx) {
    dk_context *c = (dk_context *)ctx; /* the lock is the only thing changed */
    if (!ctx) return core_thread_error;
    if (core_thread_ctx_serial == ctx->serial) return core_thread_ctx_error;
    /* No failure of this thread on ctx: the context's last message (another
     * thread's), copied under the lock so that it cannot change while read. */
    dk__lock(c);
    memcpy(core_thread_ctx_view, ctx->error, sizeof core_thread_ctx_view);
    dk__unlock(c);
    return core_thread_ctx_view;
}

const char *dk_status_name(dk_status s) {
    switch (s) {
    case DK_OK: return "DK_OK";
    case DK_ERR_INVALID_ARGUMENT: return "DK_ERR_INVALID_ARGUMENT";
    case DK_ERR_UNSUPPORTED: return "DK_ERR_UNSUPPORTED";
    case DK_ERR_OUT_OF_MEMORY: return "DK_ERR_OUT_OF_MEMORY";
    case DK_ERR_BACKEND_UNAVAILABLE: return "DK_ERR_BACKEND_UNAVAILABLE";
    case DK_ERR_DEVICE_LOST: return "DK_ERR_DEVICE_LOST";
    case DK_ERR_IO: return "DK_ERR_IO";
    case DK_ERR_FORMAT: return "DK_ERR_FORMAT";
    case DK_ERR_INTERNAL: return "DK_ERR_INTERNAL";
    case DK_ERR_NON_FINITE: return "DK_ERR_NON_FINITE";
    }
    return "DK_ERR_UNKNOWN";
}

const char *dk_dtype_name(dk_dtype t) {
    switch (t) {
    case DK_F32: return "f32";
    case DK_F16: return "f16";
    case DK_BF16: return "bf16";
    }
    return "invalid";
}

const char *dk_activation_name(dk_activation a) {
    switch (a) {
    case DK_ACT_NONE: return "none";
    case DK_ACT_RELU: return "relu";
    case DK_ACT_SILU: return "silu";
    case DK_ACT_GELU: return "gelu";
    case DK_ACT_GELU_TANH: return "gelu_tanh";
    case DK_ACT_TANH: return "tanh";
    }
    return "invalid";
}

const char *dk_version_string(void) { return "0.2.0"; }
uint32_t dk_version(void) {
    return ((uint32_t)DK_VERSION_MAJOR << 16) | ((uint32_t)DK_VERSION_MINOR << 8) | DK_VERSION_PATCH;
}

/* ------------------------------------------------------------- activations */

float dk__act_f32(dk_activation act, float x) {
    switch (act) {
    case DK_ACT_NONE: return x;
    case DK_ACT_RELU: return x > 0.0f ? x : 0.0f;
    case DK_ACT_SILU: return x / (1.0f + expf(-x));
    case DK_ACT_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case DK_ACT_GELU_TANH:
        return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case DK_ACT_TANH: return tanhf(x);
    }
    return x;
}

double dk__act_f64(dk_activation act, double x) {
    switch (act) {
    case DK_ACT_NONE: return x;
    case DK_ACT_RELU: return x > 0.0 ? x : 0.0;
    case DK_ACT_SILU: return x / (1.0 + exp(-x));
    case DK_ACT_GELU: return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440));
    case DK_ACT_GELU_TANH:
        return 0.5 * x * (1.0 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
    case DK_ACT_TANH: return tanh(x);
    }
    return x;
}

/* ---------------------------------------------------------- half precision */

static uint32_t core_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float core_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

uint16_t dk_f32_to_bf16(float x) {
    uint32_t u = core_f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

float dk_bf16_to_f32(uint16_t h) { return dk__bf16_to_f32(h); }

uint16_t dk_f32_to_f16(float x) {
    uint32_t u = core_f32_bits(x);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);       /* NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);      /* overflow (after rounding) -> inf */
    if (a < 0x38800000u) {                                        /* subnormal or zero in f16 */
        /* value = a_float; f16 subnormal unit is 2^-24: round(a * 2^24) to even */
        float v = core_bits_f32(a) * 16777216.0f;                 /* exact: power-of-two scale */
        float r = nearbyintf(v);                                  /* default mode: nearest even */
        return (uint16_t)(sign | (uint32_t)r);
    }
    {
        uint32_t mant_round = a + 0x0fffu + ((a >> 13) & 1u);    /* round to nearest even at bit 13 */
        uint32_t e = (mant_round >> 23) - 127u + 15u;
        uint32_t m = (mant_round >> 13) & 0x3ffu;
        return (uint16_t)(sign | (e << 10) | m);
    }
}

float dk_f16_to_f32(uint16_t h) { return dk__f16_to_f32(h); }

/* ----------------------------------------------------------------- context */

/* Backends compiled in, in AUTO preference order. */
static const dk_backend_ops *const core_backends[] = {
#ifdef DIFKERN_HIP
    &dk__hip_backend,
#endif
#ifdef DIFKERN_VULKAN
    &dk__vulkan_backend,
#endif
    &dk__cpu_backend,
};
#define CORE_NUM_BACKENDS (sizeof core_backends / sizeof core_backends[0])

static const dk_backend_ops *core_find_backend(dk_backend_kind kind) {
    size_t i;
    for (i = 0; i < CORE_NUM_BACKENDS; i++)
        if (core_backends[i]->kind == kind) return core_backends[i];
    return NULL;
}

/* The variable that picks a backend's device (NULL: the backend has none). */
int dk_backend_compiled(dk_backend_kind kind) {
    return kind == DK_BACKEND_AUTO || core_find_backend(kind) != NULL;
}

const char *dk_backend_name(dk_backend_kind kind) {
    switch (kind) {
    case DK_BACKEND_AUTO: return "auto";
    case DK_BACKEND_CPU: return "cpu";
    case DK_BACKEND_VULKAN: return "vulkan";
    case DK_BACKEND_HIP: return "hip";
    }
    return "invalid";
}

void dk_context_options_init(dk_context_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->backend = DK_BACKEND_AUTO;
    o->device_index = -1;
}

static dk_status core_try_backend(const dk_backend_ops *ops, const dk_context_options *o, const dk_knobs *knobs,
                                  dk_context **out) {
    dk_context *ctx = (dk_context *)calloc(1, sizeof *ctx);
    dk_status st;
    if (!ctx) return dk__fail(NULL, DK_ERR_OUT_OF_MEMORY, "dk_context_create: out of host memory");
    if (mtx_init(&ctx->lock, mtx_plain | mtx_recursive) != thrd_success) {
        free(ctx);
        return dk__fail(NULL, DK_ERR_OUT_OF_MEMORY, "dk_context_create: cannot create the context's lock");
    }
    ctx->ops = ops;
    ctx->knobs = *knobs;
    ctx->serial = (uint64_t)atomic_fetch_add(&core_next_context_serial, 1);
    dk__strlcpy(ctx->device_name, ops->name, sizeof ctx->device_name);
    dk__strlcpy(ctx->description, ops->name, sizeof ctx->description);
    st = ops->create(ctx, o);
    if (st != DK_OK) {
        dk__fail(NULL, st, "%s", ctx->error);
        if (core_thread_ctx_serial == ctx->serial) core_thread_ctx_serial = 0;
        mtx_destroy(&ctx->lock);
        free(ctx);
        return st;
    }
    *out = ctx;
    return DK_OK;
}

static dk_status core_create(dk_context_options *o, dk_backend_kind kind, const dk_knobs *knobs, dk_context **out);

dk_status dk_context_create(const dk_context_options *options, dk_context **out) {
    dk_context_options o;
    dk_backend_kind kind;
    dk_knobs *knobs;
    char why_knob[512];
    dk_status st;

    dk__clear_error(NULL);
    if (!out) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_context_create: out must not be NULL");
    *out = NULL;
    if (options) o = *options;
    else dk_context_options_init(&o);
    kind = o.backend;
    if ((int)kind < DK_BACKEND_AUTO || (int)kind > DK_BACKEND_HIP)
        return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT,
                        "dk_context_create: options->backend (=%d) must be a dk_backend_kind", (int)kind);
    if (o.num_threads < 0 || o.num_threads > DK_MAX_THREADS)
        return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT,
                        "dk_context_create: options->num_threads (=%d) must be in 0..%d (0: all cores)",
                        (int)o.num_threads, DK_MAX_THREADS);

    /* on the heap: the parsed settings hold strings of up to DK_KNOB_STRING_MAX */
    knobs = (dk_knobs *)malloc(sizeof *knobs);
    if (!knobs) return dk__fail(NULL, DK_ERR_OUT_OF_MEMORY, "dk_context_create: out of host memory");
    st = dk__knobs_load(knobs, o.settings, why_knob, sizeof why_knob);
    if (st != DK_OK) {
        free(knobs);
        return dk__fail(NULL, st, "dk_context_create: %s", why_knob);
    }
    if (kind == DK_BACKEND_AUTO && knobs->backend >= 0) {
        /* the order of "cpu|vulkan|hip|auto" in DK_KNOB_LIST */
        static const dk_backend_kind kinds[4] = {DK_BACKEND_CPU, DK_BACKEND_VULKAN, DK_BACKEND_HIP, DK_BACKEND_AUTO};
        kind = kinds[knobs->backend];
    }
    st = core_create(&o, kind, knobs, out);
    free(knobs);
    return st;
}

/* The backend `kind` names, or under AUTO the first that comes up. */
static dk_status core_create(dk_context_options *o, dk_backend_kind kind, const dk_knobs *knobs, dk_context **out) {
    dk_status st;
    size_t i;
    if (kind != DK_BACKEND_AUTO) {
        const dk_backend_ops *ops = core_find_backend(kind);
        if (!ops)
            return dk__fail(NULL, DK_ERR_BACKEND_UNAVAILABLE,
                            "dk_context_create: the %s backend is not compiled into this build",
                            dk_backend_name(kind));
        o->backend = kind; /* tells the backend it was asked for by name (not AUTO) */
        return core_try_backend(ops, o, knobs, out);
    }

    /* AUTO with DIFKERN_VULKAN_DEVICE or DIFKERN_HIP_DEVICE set: a device was
     * chosen, so only the backends whose device is named are tried (HIP first),
     * each as if asked for by name, and their failure is the answer: falling
     * back to the CPU in silence hid a misspelt device name. */
    if (knobs->vulkan_device[0] || knobs->hip_device >= 0) {
        static const dk_backend_kind named[2] = {DK_BACKEND_HIP, DK_BACKEND_VULKAN};
        char why[1024] = "";
        st = DK_ERR_BACKEND_UNAVAILABLE;
        for (i = 0; i < 2; i++) {
            const dk_backend_ops *ops = core_find_backend(named[i]);
            char var[64 + DK_KNOB_STRING_MAX];
            if (named[i] == DK_BACKEND_HIP) {
                if (knobs->hip_device < 0) continue;
                snprintf(var, sizeof var, "DIFKERN_HIP_DEVICE=%d", (int)knobs->hip_device);
            } else {
                if (!knobs->vulkan_device[0]) continue;
                snprintf(var, sizeof var, "DIFKERN_VULKAN_DEVICE='%s'", knobs->vulkan_device);
            }
            if (!ops)
                return dk__fail(NULL, DK_ERR_BACKEND_UNAVAILABLE,
                                "dk_context_create: %s is set but the %s backend is not compiled into this "
                                "build (unset it for AUTO to pick a backend)", var, dk_backend_name(named[i]));
            o->backend = named[i];
            st = core_try_backend(ops, o, knobs, out);
            if (st == DK_OK) return DK_OK;
            snprintf(why + strlen(why), sizeof why - strlen(why), "%s%s (AUTO takes the %s backend): %s",
                     why[0] ? "; " : "", var, dk_backend_name(named[i]), core_thread_error);
        }
        return dk__fail(NULL, st, "dk_context_create: %s", why);
    }

    /* AUTO: the first backend that comes up; remember why the others did not. */
    {
        char why[1024] = "";
        for (i = 0; i < CORE_NUM_BACKENDS; i++) {
            st = core_try_backend(core_backends[i], o, knobs, out);
            if (st == DK_OK) return DK_OK;
            if (strlen(why) + strlen(core_thread_error) + 4 < sizeof why) {
                if (why[0]) strcat(why, "; ");
                strcat(why, core_thread_error);
            }
        }
        return dk__fail(NULL, DK_ERR_BACKEND_UNAVAILABLE, "dk_context_create: no backend came up: %s", why);
    }
}

static void core_host_release(dk_context *ctx, const dk_host_block *h) {
    if (h->pinned)
        ctx->ops->host_free(ctx, h->ptr, h->handle);
    else
        free(h->ptr);
}

void dk_context_destroy(dk_context *ctx) {
    uint32_t i;
    if (!ctx) return;
    dk__lock(ctx); /* waits for a call another thread still has in flight */
    if (ctx->ops->sync) (void)ctx->ops->sync(ctx);
    for (i = 0; i < ctx->nhost; i++) core_host_release(ctx, &ctx->host[i]);
    free(ctx->host);
    (void)dk__conv3d_release_scratch(ctx);
    dk__weight_drop_all(ctx);
    ctx->ops->destroy(ctx);
    if (core_thread_ctx_serial == ctx->serial) core_thread_ctx_serial = 0;
    dk__unlock(ctx);
    mtx_destroy(&ctx->lock);
    free(ctx);
}

dk_backend_kind dk_context_backend(const dk_context *ctx) { return ctx ? ctx->ops->kind : DK_BACKEND_AUTO; }
const char *dk_context_device_name(const dk_context *ctx) { return ctx ? ctx->device_name : ""; }
const char *dk_context_describe(const dk_context *ctx) { return ctx ? ctx->description : ""; }

dk_status dk_setting_value(const dk_context *ctx, const char *name, char *value, size_t cap) {
    char err[512];
    dk_knobs env;
    dk_status st;
    if (!name || !value || cap == 0)
        return dk__fail((dk_context *)ctx, DK_ERR_INVALID_ARGUMENT, "dk_setting_value: name and value (cap > 0) are required");
    if (!ctx) {
        st = dk__knobs_load(&env, NULL, err, sizeof err);
        if (st == DK_OK) st = dk__knob_text(&env, name, value, cap, err, sizeof err);
    } else {
        st = dk__knob_text(&ctx->knobs, name, value, cap, err, sizeof err);
    }
    if (st != DK_OK) {
        value[0] = '\0';
        return dk__fail((dk_context *)ctx, st, "%s", err);
    }
    return DK_OK;
}

dk_status dk_sync(dk_context *ctx) {
    if (!ctx) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_sync: ctx must not be NULL");
    dk__lock(ctx);
    return dk__unlock_ret(ctx, ctx->ops->sync(ctx));
}

dk_status dk_memory_usage(const dk_context *ctx, uint64_t *current_bytes, uint64_t *peak_bytes) {
    dk_context *c = (dk_context *)ctx; /* the lock is the only thing changed */
    if (!ctx) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_memory_usage: ctx must not be NULL");
    dk__lock(c);
    if (current_bytes) *current_bytes = ctx->mem_current;
    if (peak_bytes) *peak_bytes = ctx->mem_peak;
    dk__unlock(c);
    return DK_OK;
}

void dk_memory_reset_peak(dk_context *ctx) {
    if (!ctx) return;
    dk__lock(ctx);
    ctx->mem_peak = ctx->mem_current;
    dk__unlock(ctx);
}

dk_status dk_release_scratch(dk_context *ctx) {
    if (!ctx) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_release_scratch: ctx must not be NULL");
    dk__lock(ctx);
    {
        dk_status st = dk__conv3d_release_scratch(ctx);
        if (st == DK_OK && ctx->ops->release_scratch) st = ctx->ops->release_scratch(ctx);
        return dk__unlock_ret(ctx, st);
    }
}

dk_status dk_timer_begin(dk_context *ctx) {
    dk_status st;
    if (!ctx) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_timer_begin: ctx must not be NULL");
    dk__lock(ctx);
    st = ctx->ops->timer_begin(ctx);
    ctx->timer_running = st == DK_OK;
    return dk__unlock_ret(ctx, st);
}

dk_status dk_timer_end(dk_context *ctx, double *elapsed_ms) {
    dk_status st;
    if (!ctx) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_timer_end: ctx must not be NULL");
    if (!elapsed_ms) return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "dk_timer_end: elapsed_ms must not be NULL");
    *elapsed_ms = 0.0;
    dk__lock(ctx);
    if (!ctx->timer_running)
        return dk__unlock_ret(ctx, dk__fail(ctx, DK_ERR_INVALID_ARGUMENT,
                                            "dk_timer_end: no dk_timer_begin on this context before it"));
    ctx->timer_running = 0;
    st = ctx->ops->timer_end(ctx, elapsed_ms);
    return dk__unlock_ret(ctx, st);
}

/* ----------------------------------------------------------------- buffers */

uint64_t dk__next_buffer_id(void) { return (uint64_t)atomic_fetch_add(&core_next_buffer_id, 1); }

static dk_status core_new_buffer(dk_context *ctx, uint64_t size, dk_buffer **out) {
    dk_buffer *b = (dk_buffer *)calloc(1, sizeof *b);
    if (!b) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "out of host memory for a buffer handle");
    b->size = size;
    b->id = dk__next_buffer_id();
    b->owner = ctx;
    *out = b;
    return DK_OK;
}

dk_status dk_buffer_create(dk_context *ctx, uint64_t size_bytes, dk_buffer **out) {
    dk_buffer *b = NULL;
    dk_status st;
    if (!ctx) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_buffer_create: ctx must not be NULL");
    if (!out) return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "dk_buffer_create: out must not be NULL");
    *out = NULL;
    if (size_bytes == 0)
        return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "dk_buffer_create: size_bytes must be > 0");
    if (size_bytes > ((uint64_t)1 << 50))
        return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY,
                        "dk_buffer_create: size_bytes (=%llu) exceeds 2^50", (unsigned long long)size_bytes);
    dk__lock(ctx);
    st = core_new_buffer(ctx, size_bytes, &b);
    if (st != DK_OK) return dk__unlock_ret(ctx, st);
    st = ctx->ops->buffer_create(ctx, b);
    if (st != DK_OK) {
        free(b);
        return dk__unlock_ret(ctx, st);
    }
    dk__mem_account(ctx, (int64_t)size_bytes);
    *out = b;
    return dk__unlock_ret(ctx, DK_OK);
}

dk_status dk_buffer_wrap(dk_context *ctx, const dk_external_memory *m, dk_buffer **out) {
    dk_buffer *b = NULL;
    dk_status st;
    if (!ctx) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_buffer_wrap: ctx must not be NULL");
    if (!out) return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "dk_buffer_wrap: out must not be NULL");
    *out = NULL;
    if (!m) return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "dk_buffer_wrap: memory must not be NULL");
    if (m->size == 0) return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "dk_buffer_wrap: memory->size must be > 0");
    if (m->kind != DK_EXTERNAL_HOST_POINTER && m->kind != DK_EXTERNAL_DEVICE_POINTER &&
        m->kind != DK_EXTERNAL_VK_BUFFER)
        return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT,
                        "dk_buffer_wrap: memory->kind (=%d) must be a dk_external_kind", (int)m->kind);
    if ((m->kind == DK_EXTERNAL_HOST_POINTER || m->kind == DK_EXTERNAL_DEVICE_POINTER) && !m->pointer)
        return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "dk_buffer_wrap: memory->pointer must not be NULL");
    if (m->kind == DK_EXTERNAL_VK_BUFFER && !m->vk_buffer)
        return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "dk_buffer_wrap: memory->vk_buffer must not be 0");
    if (!ctx->ops->buffer_wrap)
        return dk__fail(ctx, DK_ERR_UNSUPPORTED, "dk_buffer_wrap: the %s backend cannot wrap external memory",
                        ctx->ops->name);
    dk__lock(ctx);
    st = core_new_buffer(ctx, m->size, &b);
    if (st != DK_OK) return dk__unlock_ret(ctx, st);
    b->wrapped = 1;
    st = ctx->ops->buffer_wrap(ctx, b, m);
    if (st != DK_OK) {
        free(b);
        return dk__unlock_ret(ctx, st);
    }
    *out = b;
    return dk__unlock_ret(ctx, DK_OK);
}

void dk_buffer_destroy(dk_context *ctx, dk_buffer *b) {
    if (!ctx || !b) return;
    dk__lock(ctx);
    /* A buffer of another context is left alone (its memory counters and cache
     * belong to that context); the error says so. */
    if (dk__check_owner(ctx, "dk_buffer_destroy", "buffer", b) != DK_OK) {
        dk__unlock(ctx);
        return;
    }
    dk__weight_drop_buffer(ctx, b);
    ctx->ops->buffer_destroy(ctx, b);
    if (!b->wrapped) dk__mem_account(ctx, -(int64_t)b->size);
    b->owner = NULL;
    free(b);
    dk__unlock(ctx);
}

void dk__mem_account(dk_context *ctx, int64_t delta) {
    dk__lock(ctx);
    ctx->mem_current = (uint64_t)((int64_t)ctx->mem_current + delta);
    if (ctx->mem_current > ctx->mem_peak) ctx->mem_peak = ctx->mem_current;
    dk__unlock(ctx);
}

uint64_t dk_buffer_size(const dk_buffer *b) { return b ? b->size : 0; }

void dk__buffer_written(dk_context *ctx, dk_buffer *b) {
    b->generation++;
    dk__weight_drop_buffer(ctx, b);
}

dk_status dk_buffer_invalidate(dk_context *ctx, dk_buffer *b) {
    dk_status st;
    if (!ctx) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_buffer_invalidate: ctx must not be NULL");
    if (!b) return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "dk_buffer_invalidate: buffer must not be NULL");
    dk__lock(ctx);
    st = dk__check_owner(ctx, "dk_buffer_invalidate", "buffer", b);
    if (st == DK_OK) dk__buffer_written(ctx, b);
    return dk__unlock_ret(ctx, st);
}

/* The buffer must belong to ctx and [offset, offset+size) lie inside it. */
static dk_status core_check_range(dk_context *ctx, const char *fn, const dk_buffer *b, uint64_t offset,
                                  uint64_t size) {
    if (!b) return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "%s: buffer must not be NULL", fn);
    if (dk__check_owner(ctx, fn, "buffer", b) != DK_OK) return DK_ERR_INVALID_ARGUMENT;
    if (offset > b->size || size > b->size - offset)
        return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT,
                        "%s: offset (=%llu) + size (=%llu) exceeds the buffer's size (=%llu)", fn,
                        (unsigned long long)offset, (unsigned long long)size, (unsigned long long)b->size);
    return DK_OK;
}

dk_status dk_buffer_upload(dk_context *ctx, dk_buffer *b, uint64_t offset, const void *src, uint64_t size) {
    dk_status st;
    if (!ctx) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_buffer_upload: ctx must not be NULL");
    dk__lock(ctx);
    st = core_check_range(ctx, "dk_buffer_upload", b, offset, size);
    if (st != DK_OK || size == 0) return dk__unlock_ret(ctx, st);
    if (!src)
        return dk__unlock_ret(ctx, dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "dk_buffer_upload: src must not be NULL"));
    dk__buffer_written(ctx, b);
    return dk__unlock_ret(ctx, ctx->ops->buffer_upload(ctx, b, offset, src, size));
}

dk_status dk_buffer_download(dk_context *ctx, const dk_buffer *b, uint64_t offset, void *dst, uint64_t size) {
    dk_status st;
    if (!ctx) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_buffer_download: ctx must not be NULL");
    dk__lock(ctx);
    st = core_check_range(ctx, "dk_buffer_download", b, offset, size);
    if (st != DK_OK || size == 0) return dk__unlock_ret(ctx, st);
    if (!dst)
        return dk__unlock_ret(ctx,
                              dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "dk_buffer_download: dst must not be NULL"));
    return dk__unlock_ret(ctx, ctx->ops->buffer_download(ctx, b, offset, dst, size));
}

dk_status dk_buffer_fill(dk_context *ctx, dk_buffer *b, uint64_t offset, uint64_t size, uint32_t pattern) {
    dk_status st;
    if (!ctx) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_buffer_fill: ctx must not be NULL");
    dk__lock(ctx);
    st = core_check_range(ctx, "dk_buffer_fill", b, offset, size);
    if (st != DK_OK) return dk__unlock_ret(ctx, st);
    if (offset % 4 || size % 4)
        return dk__unlock_ret(ctx, dk__fail(ctx, DK_ERR_INVALID_ARGUMENT,
                                            "dk_buffer_fill: offset (=%llu) and size (=%llu) must be multiples of 4",
                                            (unsigned long long)offset, (unsigned long long)size));
    if (size == 0) return dk__unlock_ret(ctx, DK_OK);
    dk__buffer_written(ctx, b);
    return dk__unlock_ret(ctx, ctx->ops->buffer_fill(ctx, b, offset, size, pattern));
}

/* ------------------------------------------------------------- host memory */

static dk_status core_host_alloc(dk_context *ctx, uint64_t size, void **out);

dk_status dk_host_alloc(dk_context *ctx, uint64_t size, void **out) {
    dk_status st;
    if (!ctx) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_host_alloc: ctx must not be NULL");
    if (!out) return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "dk_host_alloc: out must not be NULL");
    *out = NULL;
    if (size == 0 || size > ((uint64_t)1 << 48))
        return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT, "dk_host_alloc: size (=%llu) must be in 1 .. 2^48",
                        (unsigned long long)size);
    dk__lock(ctx);
    st = core_host_alloc(ctx, size, out);
    return dk__unlock_ret(ctx, st);
}

static dk_status core_host_alloc(dk_context *ctx, uint64_t size, void **out) {
    dk_host_block h;
    if (ctx->nhost == ctx->caphost) {
        uint32_t cap = ctx->caphost ? ctx->caphost * 2 : 8;
        dk_host_block *n = (dk_host_block *)realloc(ctx->host, cap * sizeof *n);
        if (!n) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "dk_host_alloc: out of host memory");
        ctx->host = n;
        ctx->caphost = cap;
    }
    memset(&h, 0, sizeof h);
    h.size = size;
    if (ctx->ops->host_alloc) {
        dk_status st = ctx->ops->host_alloc(ctx, size, &h.ptr, &h.handle);
        if (st == DK_OK) h.pinned = 1;
        else if (st != DK_ERR_UNSUPPORTED) return st;
        else dk__clear_error(ctx);
    }
    if (!h.pinned) {
        h.ptr = aligned_alloc(64, (size_t)((size + 63) & ~(uint64_t)63));
        if (!h.ptr)
            return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "dk_host_alloc: cannot allocate %llu bytes of host memory",
                            (unsigned long long)size);
    }
    ctx->host[ctx->nhost++] = h;
    *out = h.ptr;
    return DK_OK;
}

dk_status dk_host_free(dk_context *ctx, void *ptr) {
    uint32_t i;
    if (!ctx) return dk__fail(NULL, DK_ERR_INVALID_ARGUMENT, "dk_host_free: ctx must not be NULL");
    if (!ptr) return DK_OK;
    dk__lock(ctx);
    for (i = 0; i < ctx->nhost; i++)
        if (ctx->host[i].ptr == ptr) {
            if (ctx->host[i].pinned && ctx->ops->sync) (void)ctx->ops->sync(ctx); /* no copy may still use it */
            core_host_release(ctx, &ctx->host[i]);
            ctx->host[i] = ctx->host[--ctx->nhost];
            return dk__unlock_ret(ctx, DK_OK);
        }
    return dk__unlock_ret(ctx, dk__fail(ctx, DK_ERR_INVALID_ARGUMENT,
                                        "dk_host_free: %p is not a live dk_host_alloc block of this context", ptr));
}

int dk__host_find(const dk_context *ctx, const void *p, uint64_t size, void **handle, uint64_t *offset) {
    uint32_t i;
    const uintptr_t q = (uintptr_t)p;
    for (i = 0; i < ctx->nhost; i++) {
        const dk_host_block *h = &ctx->host[i];
        const uintptr_t b = (uintptr_t)h->ptr;
        if (h->pinned && q >= b && q - b < h->size && size <= h->size - (q - b)) {
            *handle = h->handle;
            *offset = (uint64_t)(q - b);
            return 1;
        }
    }
    return 0;
}

#undef CORE_THREAD_LOCAL
#undef CORE_NUM_BACKENDS
