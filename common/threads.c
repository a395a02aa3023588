/* threads.c — fork-join pool and single background task over POSIX threads. */
#include "common/threads.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/timer.h"

#define CACHE_LINE 64

/* How long a pool thread that found nothing to do, and a caller whose items
 * are all claimed, poll before they sleep on a condition variable.  Waking
 * a sleeping thread costs a futex call and a reschedule (an inter-processor
 * interrupt and, in a virtual machine, the host scheduling the vCPU again),
 * paid at every batch's start and end: a 2048x2048 picture's slices take
 * 1.2-1.8 ms on 16 threads, and on the H100 machine's 16 vCPUs its
 * threads sat idle 2.4 ms (thread-time) after their last row, 1.5 ms with
 * this polling. */
#define POOL_SPIN_MS 0.1

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();   /* leaves a hyper-thread sibling its share */
#endif
}

int mpe_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 4096 ? 4096 : (int)n;
}

/* ------------------------------------------------------------------ pool */

/* One mpe_pool_run call.  It lives on its caller's stack and sits in the
 * pool's list while items are left to claim; pool threads join it while it
 * has items, a free slot and the pool has a core to spare. */
typedef struct PoolBatch {
    /* claimed by every thread for every item: a cache line of its own */
    _Alignas(CACHE_LINE) atomic_int next;
    _Alignas(CACHE_LINE) MpePoolFn fn;
    void *ctx;
    int n;
    int slots;                   /* most threads at once, the caller included */
    int joined;                  /* slots handed out (the caller has 0) */
    /* pool threads still inside this batch: decremented under the pool's
     * lock, polled without it by the caller */
    atomic_int active;
    struct PoolBatch *next_batch;
} PoolBatch;

struct MpePool {
    int threads;
    int started;                 /* pool threads created (threads - 1 when open) */
    pthread_t *tid;
    pthread_mutex_t lock;
    pthread_cond_t wake;         /* a batch came, or a core came free */
    pthread_cond_t done;         /* a pool thread left a batch */
    int have_sync;               /* lock and conditions initialised */
    PoolBatch *batches;          /* open batches, oldest first */
    int running;                 /* threads running items now, callers included */
    int quit;
    /* no more threads than cores: a polling thread takes no core that a
     * running one needs (with more, polling only slows the others down) */
    int poll;
    /* batches queued so far: what a polling pool thread watches */
    _Alignas(CACHE_LINE) atomic_uint queued;
};

/* Poll until *word differs from `seen` or POOL_SPIN_MS pass; the yield
 * lets any other runnable thread have this core. */
static void spin_until_changed(const atomic_uint *word, unsigned seen)
{
    const double end = mpe_time_ms() + POOL_SPIN_MS;
    for (;;) {
        for (int i = 0; i < 64; i++) {
            if (atomic_load_explicit(word, memory_order_relaxed) != seen)
                return;
            cpu_relax();
        }
        if (mpe_time_ms() > end)
            return;
        sched_yield();
    }
}

static void pool_claim(PoolBatch *b, int slot)
{
    for (;;) {
        int i = atomic_fetch_add_explicit(&b->next, 1, memory_order_relaxed);
        if (i >= b->n)
            return;
        b->fn(b->ctx, i, slot);
    }
}

/* The oldest batch a pool thread may join now, or NULL.  Called locked. */
static PoolBatch *pool_pick(MpePool *p)
{
    if (p->running >= p->threads)
        return NULL;
    for (PoolBatch *b = p->batches; b; b = b->next_batch)
        if (b->joined < b->slots && atomic_load_explicit(&b->next, memory_order_relaxed) < b->n)
            return b;
    return NULL;
}

static void *pool_main(void *arg)
{
    MpePool *p = arg;

    pthread_mutex_lock(&p->lock);
    for (;;) {
        PoolBatch *b = NULL;
        int polled = 0;
        while (!p->quit && !(b = pool_pick(p))) {
            if (!polled && p->poll && p->running < p->threads) {
                /* a core is free and a next batch often comes within
                 * microseconds (the next picture's slices, the front end's
                 * bands): wait for it awake */
                const unsigned seen = atomic_load_explicit(&p->queued, memory_order_relaxed);
                polled = 1;
                pthread_mutex_unlock(&p->lock);
                spin_until_changed(&p->queued, seen);
                pthread_mutex_lock(&p->lock);
                continue;
            }
            pthread_cond_wait(&p->wake, &p->lock);
            polled = 0;
        }
        if (p->quit)
            break;
        int slot = b->joined++;
        atomic_fetch_add_explicit(&b->active, 1, memory_order_relaxed);
        p->running++;
        pthread_mutex_unlock(&p->lock);
        pool_claim(b, slot);
        pthread_mutex_lock(&p->lock);
        p->running--;
        /* the batch's caller may return once this is 0: b is not touched after */
        if (atomic_fetch_sub_explicit(&b->active, 1, memory_order_release) == 1)
            pthread_cond_broadcast(&p->done);
        /* a core came free: another thread may join some other batch */
        if (p->batches)
            pthread_cond_signal(&p->wake);
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
    free(p);
}

int mpe_pool_open(MpePool **out, int threads, MpeError *err)
{
    MpePool *p;
    int ret;

    *out = NULL;
    if (threads < 1)
        return mpe_error(err, -EINVAL, "thread pool: %d threads", threads);
    if (!(p = calloc(1, sizeof(*p))))
        return mpe_error(err, -ENOMEM, "thread pool: out of memory");
    p->threads = threads;
    p->poll = threads <= mpe_cpu_count();
    if (threads == 1) {
        *out = p;
        return 0;
    }
    if (!(p->tid = calloc((size_t)threads - 1, sizeof(*p->tid)))) {
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
        if ((ret = pthread_create(&p->tid[i], NULL, pool_main, p)) != 0) {
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

void mpe_pool_run_slots(MpePool *p, int n, int slots, MpePoolFn fn, void *ctx)
{
    if (n <= 0)
        return;
    slots = MPE_MIN(MPE_MIN(slots, p->threads), n);
    if (p->started == 0 || slots <= 1) {
        for (int i = 0; i < n; i++)
            fn(ctx, i, 0);
        return;
    }
    PoolBatch b = { .fn = fn, .ctx = ctx, .n = n, .slots = slots, .joined = 1 };
    atomic_init(&b.next, 0);
    atomic_init(&b.active, 0);

    pthread_mutex_lock(&p->lock);
    PoolBatch **tail = &p->batches;
    while (*tail)
        tail = &(*tail)->next_batch;
    *tail = &b;
    atomic_fetch_add_explicit(&p->queued, 1, memory_order_relaxed);
    p->running++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    /* The caller claims too, so the batch finishes even if every pool thread
     * is busy elsewhere (another caller's batch, or a batch whose item
     * itself runs a batch): waiting below is only for threads already
     * inside this batch, which never wait for anything else. */
    pool_claim(&b, 0);

    pthread_mutex_lock(&p->lock);
    for (tail = &p->batches; *tail != &b; tail = &(*tail)->next_batch)
        ;
    *tail = b.next_batch;
    p->running--;
    if (p->batches)
        pthread_cond_signal(&p->wake);
    if (atomic_load_explicit(&b.active, memory_order_acquire) == 0) {
        pthread_mutex_unlock(&p->lock);
        return;
    }
    pthread_mutex_unlock(&p->lock);
    /* the threads still inside are each finishing one item: poll for them
     * awake, sleep only if one is slow (descheduled) */
    const double end = mpe_time_ms() + (p->poll ? POOL_SPIN_MS : 0);
    while (atomic_load_explicit(&b.active, memory_order_acquire) != 0 && mpe_time_ms() < end)
        for (int i = 0; i < 64; i++)
            cpu_relax();
    if (atomic_load_explicit(&b.active, memory_order_acquire) == 0)
        return;
    pthread_mutex_lock(&p->lock);
    while (atomic_load_explicit(&b.active, memory_order_acquire) != 0)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

void mpe_pool_run(MpePool *p, int n, MpePoolFn fn, void *ctx)
{
    mpe_pool_run_slots(p, n, p->threads, fn, ctx);
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

int mpe_task_busy(MpeTask *t)
{
    pthread_mutex_lock(&t->lock);
    const int busy = t->fn || t->running;
    pthread_mutex_unlock(&t->lock);
    return busy;
}

void mpe_task_wait(MpeTask *t)
{
    pthread_mutex_lock(&t->lock);
    while (t->fn || t->running)
        pthread_cond_wait(&t->cv, &t->lock);
    pthread_mutex_unlock(&t->lock);
}
