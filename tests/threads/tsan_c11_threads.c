/* ThreadSanitizer builds only: glibc's C11 <threads.h> functions call the
 * pthread functions through internal aliases that ThreadSanitizer's runtime
 * (gcc 12, LLVM 14-16) does not intercept, so a thread made by thrd_create
 * crashes in the runtime and mutexes taken by mtx_lock are invisible to it.
 * These definitions, linked into the test program ahead of libc, route the
 * C11 calls difkern makes to the pthread functions the runtime does see.
 * glibc lays mtx_t, cnd_t and once_flag out as pthread_mutex_t,
 * pthread_cond_t and pthread_once_t (the static asserts check the sizes). */
#define _POSIX_C_SOURCE 200809L /* pthread_mutexattr_settype under -std=c11 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <threads.h>

_Static_assert(sizeof(mtx_t) == sizeof(pthread_mutex_t), "mtx_t is not a pthread_mutex_t");
_Static_assert(sizeof(cnd_t) == sizeof(pthread_cond_t), "cnd_t is not a pthread_cond_t");
_Static_assert(sizeof(once_flag) == sizeof(pthread_once_t), "once_flag is not a pthread_once_t");

static int tsanc11_status(int rc) { return rc == 0 ? thrd_success : rc == ENOMEM ? thrd_nomem : rc == ETIMEDOUT ? thrd_timedout : rc == EBUSY ? thrd_busy : thrd_error; }

typedef struct tsanc11_start {
    thrd_start_t fn;
    void *arg;
} tsanc11_start;

static void *tsanc11_main(void *p) {
    tsanc11_start s = *(tsanc11_start *)p;
    free(p);
    return (void *)(intptr_t)s.fn(s.arg);
}

int thrd_create(thrd_t *thr, thrd_start_t fn, void *arg) {
    tsanc11_start *s = (tsanc11_start *)malloc(sizeof *s);
    int rc;
    if (!s) return thrd_nomem;
    s->fn = fn;
    s->arg = arg;
    rc = pthread_create(thr, NULL, tsanc11_main, s);
    if (rc) free(s);
    return tsanc11_status(rc);
}

int thrd_join(thrd_t thr, int *res) {
    void *r = NULL;
    int rc = pthread_join(thr, &r);
    if (rc == 0 && res) *res = (int)(intptr_t)r;
    return tsanc11_status(rc);
}

int mtx_init(mtx_t *m, int type) {
    pthread_mutexattr_t a;
    int rc;
    pthread_mutexattr_init(&a);
    if (type & mtx_recursive) pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    rc = pthread_mutex_init((pthread_mutex_t *)m, &a);
    pthread_mutexattr_destroy(&a);
    return tsanc11_status(rc);
}

int mtx_lock(mtx_t *m) { return tsanc11_status(pthread_mutex_lock((pthread_mutex_t *)m)); }
int mtx_trylock(mtx_t *m) { return tsanc11_status(pthread_mutex_trylock((pthread_mutex_t *)m)); }
int mtx_unlock(mtx_t *m) { return tsanc11_status(pthread_mutex_unlock((pthread_mutex_t *)m)); }
void mtx_destroy(mtx_t *m) { pthread_mutex_destroy((pthread_mutex_t *)m); }

int cnd_init(cnd_t *c) { return tsanc11_status(pthread_cond_init((pthread_cond_t *)c, NULL)); }
int cnd_wait(cnd_t *c, mtx_t *m) { return tsanc11_status(pthread_cond_wait((pthread_cond_t *)c, (pthread_mutex_t *)m)); }
int cnd_signal(cnd_t *c) { return tsanc11_status(pthread_cond_signal((pthread_cond_t *)c)); }
int cnd_broadcast(cnd_t *c) { return tsanc11_status(pthread_cond_broadcast((pthread_cond_t *)c)); }
void cnd_destroy(cnd_t *c) { pthread_cond_destroy((pthread_cond_t *)c); }

void call_once(once_flag *flag, void (*fn)(void)) { pthread_once((pthread_once_t *)flag, fn); }
