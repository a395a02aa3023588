/* test_pool.c — the fork-join pool and the background task (common/threads.h):
 * every index runs exactly once, on a worker id in range, whatever the
 * thread count; results written by the workers are visible to the caller
 * when mpe_pool_run returns; a slow item does not hold up the others;
 * thousands of back-to-back jobs lose no wake-up; several threads may run
 * jobs on one pool at once (each job's worker numbers stay unique while it
 * runs, and threads busy in items never outnumber the pool), an item may run
 * a job of its own, and run_slots caps a job's threads; the task runs one
 * job at a time and close joins it.  A deadlock ends the program by alarm. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/threads.h"
#include "tests/test.h"

typedef struct Job {
    int n;
    int threads;
    atomic_int *hits;     /* per index */
    int *worker;          /* which worker ran each index */
    long long *value;     /* a result per index, plain memory */
    atomic_int bad_worker;
    int slow_index;       /* -1: none */
} Job;

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static void job_fn(void *ctx, int i, int worker)
{
    Job *j = ctx;
    if (i < 0 || i >= j->n)
        return;
    if (worker < 0 || worker >= j->threads)
        atomic_fetch_add(&j->bad_worker, 1);
    if (i == j->slow_index)
        sleep_ms(100);
    atomic_fetch_add(&j->hits[i], 1);
    j->worker[i] = worker;
    j->value[i] = (long long)i * i + 7;
}

static int run_job(TestCtx *t, MpePool *pool, int threads, int n, int slow)
{
    atomic_int *hits = calloc((size_t)n + 1, sizeof(*hits));
    int *worker = calloc((size_t)n + 1, sizeof(*worker));
    long long *value = calloc((size_t)n + 1, sizeof(*value));
    Job j = { .n = n, .threads = threads, .hits = hits, .worker = worker, .value = value,
              .slow_index = slow };
    int ok = 1;

    atomic_init(&j.bad_worker, 0);
    mpe_pool_run(pool, n, job_fn, &j);
    for (int i = 0; i < n && ok; i++) {
        ok = atomic_load(&hits[i]) == 1 && value[i] == (long long)i * i + 7;
        CHECK(t, ok, "threads %d n %d: index %d ran %d times, value %lld", threads, n, i,
              atomic_load(&hits[i]), value[i]);
    }
    CHECK(t, atomic_load(&j.bad_worker) == 0, "worker id out of range");
    if (slow == 0 && threads > 1 && n > 2) {
        /* item 0 is claimed first; while it sleeps the other thread takes
         * every later item (100 ms is ages for 63 trivial items) */
        int others_elsewhere = 1;
        for (int i = 0; i < n; i++)
            if (i != slow && worker[i] == worker[slow])
                others_elsewhere = 0;
        CHECK(t, others_elsewhere, "items waited behind the slow one on its thread");
    }
    free(hits);
    free(worker);
    free(value);
    return ok;
}

static void t_each_index_once(TestCtx *t)
{
    const int threads[] = { 1, 2, 3, 8, 33 };
    const int sizes[] = { 0, 1, 2, 5, 128, 1000 };
    for (size_t a = 0; a < sizeof(threads) / sizeof(threads[0]); a++) {
        MpePool *pool = NULL;
        MpeError err;
        CHECK(t, mpe_pool_open(&pool, threads[a], &err) == 0, "open %d: %s", threads[a], err.msg);
        if (!pool)
            return;
        CHECK(t, mpe_pool_threads(pool) == threads[a], "threads %d", mpe_pool_threads(pool));
        for (size_t b = 0; b < sizeof(sizes) / sizeof(sizes[0]); b++)
            if (!run_job(t, pool, threads[a], sizes[b], -1))
                break;
        mpe_pool_close(pool);
    }
}

static void t_slow_item(TestCtx *t)
{
    MpePool *pool = NULL;
    MpeError err;
    CHECK(t, mpe_pool_open(&pool, 2, &err) == 0, "open: %s", err.msg);
    if (!pool)
        return;
    run_job(t, pool, 2, 64, 0);
    run_job(t, pool, 2, 64, 63);
    mpe_pool_close(pool);
}

typedef struct Sum {
    atomic_long total;
} Sum;

static void sum_fn(void *ctx, int i, int worker)
{
    Sum *s = ctx;
    (void)worker;
    atomic_fetch_add_explicit(&s->total, i + 1, memory_order_relaxed);
}

/* Many short jobs back to back: a lost wake-up would hang, a job started
 * before the last one was joined would miscount. */
static void t_many_jobs(TestCtx *t)
{
    for (int threads = 2; threads <= 5; threads += 3) {
        MpePool *pool = NULL;
        MpeError err;
        long want = 0, got = 0;
        CHECK(t, mpe_pool_open(&pool, threads, &err) == 0, "open: %s", err.msg);
        if (!pool)
            return;
        for (int k = 0; k < 5000; k++) {
            Sum s;
            int n = k % 7;
            atomic_init(&s.total, 0);
            mpe_pool_run(pool, n, sum_fn, &s);
            got += atomic_load(&s.total);
            want += (long)n * (n + 1) / 2;
        }
        CHECK(t, got == want, "threads %d: sum %ld, want %ld", threads, got, want);
        mpe_pool_close(pool);
    }
}

/* ---- several callers on one pool ---- */

typedef struct Shared {
    atomic_int busy, peak;        /* threads inside items, across all jobs */
} Shared;

typedef struct Batch {
    Shared *sh;
    int slots;
    atomic_int in_slot[8];        /* threads using each worker number now */
    atomic_int clash, bad_worker;
    atomic_long total;
} Batch;

static void spin_us(int us)
{
    struct timespec ts = { 0, (long)us * 1000L };
    nanosleep(&ts, NULL);
}

static void batch_fn(void *ctx, int i, int worker)
{
    Batch *b = ctx;
    int busy = atomic_fetch_add(&b->sh->busy, 1) + 1;
    int peak = atomic_load(&b->sh->peak);
    while (busy > peak && !atomic_compare_exchange_weak(&b->sh->peak, &peak, busy))
        ;
    if (worker < 0 || worker >= b->slots) {
        atomic_fetch_add(&b->bad_worker, 1);
    } else {
        if (atomic_fetch_add(&b->in_slot[worker], 1) != 0)
            atomic_fetch_add(&b->clash, 1);
        spin_us(50);
        atomic_fetch_sub(&b->in_slot[worker], 1);
    }
    atomic_fetch_add(&b->total, i + 1);
    atomic_fetch_sub(&b->sh->busy, 1);
}

typedef struct Caller {
    MpePool *pool;
    Shared *sh;
    int slots;                    /* 0: mpe_pool_run */
    int runs;
    long got, want;
    int clash, bad_worker;
} Caller;

static void *caller_main(void *arg)
{
    Caller *c = arg;
    for (int k = 0; k < c->runs; k++) {
        Batch b = { .sh = c->sh, .slots = c->slots ? c->slots : mpe_pool_threads(c->pool) };
        int n = 1 + k % 9;
        for (int s = 0; s < 8; s++)
            atomic_init(&b.in_slot[s], 0);
        atomic_init(&b.clash, 0);
        atomic_init(&b.bad_worker, 0);
        atomic_init(&b.total, 0);
        if (c->slots)
            mpe_pool_run_slots(c->pool, n, c->slots, batch_fn, &b);
        else
            mpe_pool_run(c->pool, n, batch_fn, &b);
        c->got += atomic_load(&b.total);
        c->want += (long)n * (n + 1) / 2;
        c->clash += atomic_load(&b.clash);
        c->bad_worker += atomic_load(&b.bad_worker);
    }
    return NULL;
}

static void t_concurrent_callers(TestCtx *t)
{
    enum { CALLERS = 2, THREADS = 3 };
    MpePool *pool = NULL;
    MpeError err;
    Shared sh;
    Caller c[CALLERS];
    pthread_t tid[CALLERS];

    atomic_init(&sh.busy, 0);
    atomic_init(&sh.peak, 0);
    CHECK(t, mpe_pool_open(&pool, THREADS, &err) == 0, "open: %s", err.msg);
    if (!pool)
        return;
    for (int i = 0; i < CALLERS; i++) {
        c[i] = (Caller){ .pool = pool, .sh = &sh, .slots = i == 1 ? 2 : 0, .runs = 400 };
        CHECK(t, pthread_create(&tid[i], NULL, caller_main, &c[i]) == 0, "thread %d", i);
    }
    for (int i = 0; i < CALLERS; i++) {
        pthread_join(tid[i], NULL);
        CHECK(t, c[i].got == c[i].want, "caller %d: sum %ld, want %ld", i, c[i].got, c[i].want);
        CHECK(t, c[i].clash == 0, "caller %d: %d items shared a worker number", i, c[i].clash);
        CHECK(t, c[i].bad_worker == 0, "caller %d: %d worker numbers out of range", i,
              c[i].bad_worker);
    }
    /* pool threads join only while fewer than THREADS threads are in items,
     * but a caller always runs its own: a caller arriving while the pool's
     * threads are all busy adds one, for as long as those stay in their job */
    CHECK(t, atomic_load(&sh.peak) <= THREADS - 1 + CALLERS,
          "%d threads in items at once on a pool of %d with %d callers", atomic_load(&sh.peak),
          THREADS, CALLERS);
    mpe_pool_close(pool);
}

typedef struct Nest {
    MpePool *pool;
    atomic_long total;
} Nest;

static void inner_fn(void *ctx, int i, int worker)
{
    Nest *n = ctx;
    (void)worker;
    atomic_fetch_add(&n->total, i + 1);
}

static void outer_fn(void *ctx, int i, int worker)
{
    Nest *n = ctx;
    (void)worker;
    (void)i;
    mpe_pool_run(n->pool, 8, inner_fn, n);
}

static void t_nested(TestCtx *t)
{
    MpePool *pool = NULL;
    MpeError err;
    Nest n;

    CHECK(t, mpe_pool_open(&pool, 2, &err) == 0, "open: %s", err.msg);
    if (!pool)
        return;
    n.pool = pool;
    for (int k = 0; k < 200; k++) {
        atomic_init(&n.total, 0);
        mpe_pool_run(pool, 4, outer_fn, &n);
        CHECK(t, atomic_load(&n.total) == 4 * 36, "round %d: sum %ld", k, atomic_load(&n.total));
        if (atomic_load(&n.total) != 4 * 36)
            break;
    }
    mpe_pool_close(pool);
}

static void t_open_errors(TestCtx *t)
{
    MpePool *pool = (MpePool *)1;
    MpeError err = { "" };
    CHECK(t, mpe_pool_open(&pool, 0, &err) < 0 && pool == NULL, "0 threads accepted");
    CHECK(t, strstr(err.msg, "thread pool") != NULL, "message: %s", err.msg);
    mpe_pool_close(NULL);
    mpe_task_close(NULL);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    CHECK(t, mpe_cpu_count() >= 1 && (n < 1 || mpe_cpu_count() == n), "cpu count %d vs %ld",
          mpe_cpu_count(), n);
}

typedef struct TaskArg {
    int in, out;
    atomic_int running;
    int overlap;
} TaskArg;

static void task_fn(void *p)
{
    TaskArg *a = p;
    if (atomic_fetch_add(&a->running, 1) != 0)
        a->overlap = 1;
    sleep_ms(2);
    a->out = a->in * 3;
    atomic_fetch_sub(&a->running, 1);
}

static void t_task(TestCtx *t)
{
    MpeTask *task = NULL;
    MpeError err;
    TaskArg a;

    memset(&a, 0, sizeof(a));
    atomic_init(&a.running, 0);
    CHECK(t, mpe_task_open(&task, &err) == 0, "open: %s", err.msg);
    if (!task)
        return;
    mpe_task_wait(task);   /* nothing started: returns at once */
    for (int i = 1; i <= 50; i++) {
        a.in = i;
        mpe_task_start(task, task_fn, &a);
        mpe_task_wait(task);
        CHECK(t, a.out == 3 * i, "job %d gave %d", i, a.out);
        if (a.out != 3 * i)
            break;
    }
    CHECK(t, !a.overlap, "two jobs ran at once");
    /* close joins a job still running */
    a.in = 1000;
    mpe_task_start(task, task_fn, &a);
    mpe_task_close(task);
    CHECK(t, a.out == 3000, "close did not let the job finish: %d", a.out);
}

int main(void)
{
    TestCtx t;
    test_init(&t, "test_pool");
    alarm(120);   /* a deadlock fails the program instead of hanging the suite */
    test_run(&t, "each_index_once", t_each_index_once);
    test_run(&t, "slow_item_dynamic_scheduling", t_slow_item);
    test_run(&t, "many_jobs_back_to_back", t_many_jobs);
    test_run(&t, "concurrent_callers", t_concurrent_callers);
    test_run(&t, "nested_jobs", t_nested);
    test_run(&t, "open_errors_and_cpu_count", t_open_errors);
    test_run(&t, "task", t_task);
    return test_finish(&t);
}
