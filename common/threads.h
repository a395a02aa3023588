/* threads.h — the two kinds of concurrency the encoder uses.
 *
 * MpePool: fork-join loops.  mpe_pool_run(pool, n, fn, ctx) calls fn for
 * every index 0..n-1, spread over the pool's threads and the calling thread,
 * and returns when all are done.  Indices are handed out one at a time from
 * a shared counter (dynamic scheduling), so a slow item never holds up the
 * others' threads; which thread runs which index is unpredictable, so an
 * item must write only its own outputs (results are then independent of
 * scheduling, which is what keeps streams identical for every thread count).
 *
 * MpeTask: one background thread that runs one job at a time, for a stage
 * that overlaps the caller's own work (mpe_task_start ... mpe_task_wait).
 *
 * A pool or task is driven from one thread at a time (the encoder's).  With
 * threads == 1 a pool creates no thread and runs everything in the caller. */
#ifndef MPE_THREADS_H
#define MPE_THREADS_H

#include "common/common.h"

/* Online CPU cores (at least 1). */
int mpe_cpu_count(void);

typedef struct MpePool MpePool;

/* fn(ctx, index, worker): worker is 0 for the calling thread, 1..threads-1
 * for the pool's own, so per-thread scratch can be indexed by it. */
typedef void (*MpePoolFn)(void *ctx, int index, int worker);

/* threads >= 1 in total, counting the thread that calls mpe_pool_run. */
int mpe_pool_open(MpePool **pool, int threads, MpeError *err);
void mpe_pool_close(MpePool *pool);
int mpe_pool_threads(const MpePool *pool);
void mpe_pool_run(MpePool *pool, int n, MpePoolFn fn, void *ctx);

typedef struct MpeTask MpeTask;

int mpe_task_open(MpeTask **task, MpeError *err);
/* Joins a running job first. */
void mpe_task_close(MpeTask *task);
/* Start fn(arg) on the task's thread; the previous job must have been
 * waited for. */
void mpe_task_start(MpeTask *task, void (*fn)(void *arg), void *arg);
/* Block until the job started last has returned (at once if none). */
void mpe_task_wait(MpeTask *task);

#endif
