/* threads.c — fork-join pool and single background task over POSIX threads. */
#include "common/threads.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CACHE_LINE 64

int mpe_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 4096 ? 4096 : (int)n;
}

/* ------------------------------------------------------------------ pool */

typedef struct PoolWorker {
    MpePool *pool;
    int id;
} PoolWorker;

struct MpePool {
    /* The claim counter is written by every thread for every item: it gets
     * a cache line of its own so the lines the rest of the pool reads stay
     * shared and clean. */
    _Alignas(CACHE_LINE) atomic_int next;
    _Alignas(CACHE_LINE) int threads;
    int started;                 /* pool threads created (threads - 1 when open) */
    pthread_t *tid;
    PoolWorker *workers;
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    int have_sync;               /* lock and conditions initialised */
    unsigned long generation;    /* bumped for every job */
    int busy;                    /* pool threads that have not finished the current job */
    int quit;
    MpePoolFn fn;
    void *ctx;
    int n;
};

static void pool_claim(MpePool *p, MpePoolFn fn, void *ctx, int n, int worker)
{
    for (;;) {
        int i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (i >= n)
            return;
        fn(ctx, i, worker);
    }
}

static void *pool_main(void *arg)
{
    const PoolWorker *w = arg;
    MpePool *p = w->pool;
    unsigned long seen = 0;

    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->quit && p->generation == seen)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->quit)
            break;
        seen = p->generation;
        MpePoolFn fn = p->fn;
        void *ctx = p->ctx;
        int n = p->n;
        pthread_mutex_unlock(&p->lock);
        pool_claim(p, fn, ctx, n, w->id);
        pthread_mutex_lock(&p->lock);
        /* every pool thread checks in for every job, so the job's fields
         * are never read after mpe_pool_run has returned */
        if (--p->busy == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

void mpe_pool_close(MpePool *p)
{
    if (!p)
        return;
    if (p->have_sync) {
        pthread_mutex_lock(&p->lock);
        p->quit = 1;
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
        for (int i = 0; i < p->started; i++)
            pthread_join(p->tid[i], NULL);
        pthread_cond_destroy(&p->done);
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->lock);
    }
    free(p->tid);
    free(p->workers);
    free(p);
}

int mpe_pool_open(MpePool **out, int threads, MpeError *err)
{
    MpePool *p;
    int ret;

    *out = NULL;
    if (threads < 1)
        return mpe_error(err, -EINVAL, "thread pool: %d threads", threads);
    if (!(p = aligned_alloc(CACHE_LINE, sizeof(*p))))
        return mpe_error(err, -ENOMEM, "thread pool: out of memory");
    memset(p, 0, sizeof(*p));
    atomic_init(&p->next, 0);
    p->threads = threads;
    if (threads == 1) {
        *out = p;
        return 0;
    }
    if (!(p->tid = calloc((size_t)threads - 1, sizeof(*p->tid))) ||
        !(p->workers = calloc((size_t)threads - 1, sizeof(*p->workers)))) {
        ret = mpe_error(err, -ENOMEM, "thread pool: out of memory");
        goto fail;
    }
    if (pthread_mutex_init(&p->lock, NULL) != 0) {
        ret = mpe_error(err, -EAGAIN, "thread pool: cannot create a mutex");
        goto fail;
    }
    if (pthread_cond_init(&p->wake, NULL) != 0) {
        pthread_mutex_destroy(&p->lock);
        ret = mpe_error(err, -EAGAIN, "thread pool: cannot create a condition variable");
        goto fail;
    }
    if (pthread_cond_init(&p->done, NULL) != 0) {
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->lock);
        ret = mpe_error(err, -EAGAIN, "thread pool: cannot create a condition variable");
        goto fail;
    }
    p->have_sync = 1;
    for (int i = 0; i < threads - 1; i++) {
        p->workers[i].pool = p;
        p->workers[i].id = i + 1;
        if ((ret = pthread_create(&p->tid[i], NULL, pool_main, &p->workers[i])) != 0) {
            ret = mpe_error(err, -ret, "thread pool: cannot start thread %d of %d: %s", i + 2,
                            threads, strerror(ret));
            goto fail;
        }
        p->started++;
    }
    *out = p;
    return 0;
fail:
    mpe_pool_close(p);
    return ret;
}

int mpe_pool_threads(const MpePool *p)
{
    return p->threads;
}

void mpe_pool_run(MpePool *p, int n, MpePoolFn fn, void *ctx)
{
    if (n <= 0)
        return;
    if (p->started == 0 || n == 1) {
        for (int i = 0; i < n; i++)
            fn(ctx, i, 0);
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    p->busy = p->started;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    pool_claim(p, fn, ctx, n, 0);

    pthread_mutex_lock(&p->lock);
    while (p->busy)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

/* ------------------------------------------------------------------ task */

struct MpeTask {
    pthread_t tid;
    pthread_mutex_t lock;
    pthread_cond_t cv;
    void (*fn)(void *);          /* job waiting to run, NULL if none */
    void *arg;
    int running;
    int quit;
};

static void *task_main(void *arg)
{
    MpeTask *t = arg;

    pthread_mutex_lock(&t->lock);
    for (;;) {
        while (!t->quit && !t->fn)
            pthread_cond_wait(&t->cv, &t->lock);
        if (!t->fn)
            break;
        void (*fn)(void *) = t->fn;
        void *a = t->arg;
        t->fn = NULL;
        t->running = 1;
        pthread_mutex_unlock(&t->lock);
        fn(a);
        pthread_mutex_lock(&t->lock);
        t->running = 0;
        pthread_cond_broadcast(&t->cv);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

int mpe_task_open(MpeTask **out, MpeError *err)
{
    MpeTask *t;
    int ret;

    *out = NULL;
    if (!(t = calloc(1, sizeof(*t))))
        return mpe_error(err, -ENOMEM, "task: out of memory");
    if (pthread_mutex_init(&t->lock, NULL) != 0) {
        free(t);
        return mpe_error(err, -EAGAIN, "task: cannot create a mutex");
    }
    if (pthread_cond_init(&t->cv, NULL) != 0) {
        pthread_mutex_destroy(&t->lock);
        free(t);
        return mpe_error(err, -EAGAIN, "task: cannot create a condition variable");
    }
    if ((ret = pthread_create(&t->tid, NULL, task_main, t)) != 0) {
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->lock);
        free(t);
        return mpe_error(err, -ret, "task: cannot start a thread: %s", strerror(ret));
    }
    *out = t;
    return 0;
}

void mpe_task_close(MpeTask *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    t->quit = 1;   /* a job already started still runs to its end */
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->tid, NULL);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

void mpe_task_start(MpeTask *t, void (*fn)(void *arg), void *arg)
{
    pthread_mutex_lock(&t->lock);
    while (t->fn || t->running)
        pthread_cond_wait(&t->cv, &t->lock);
    t->fn = fn;
    t->arg = arg;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->lock);
}

void mpe_task_wait(MpeTask *t)
{
    pthread_mutex_lock(&t->lock);
    while (t->fn || t->running)
        pthread_cond_wait(&t->cv, &t->lock);
    pthread_mutex_unlock(&t->lock);
}
