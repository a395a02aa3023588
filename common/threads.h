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
 * One pool serves the whole process (DESIGN.md: slice coding, the cpu front
 * end, the C metrics): whoever owns the run opens it once, sized to the
 * cores it may use, and hands it to every component.  Several threads may
 * call mpe_pool_run on one pool at once (the encoder codes slices while
 * its quality task scores the previous picture): each call is a batch the
 * pool's threads join only while fewer threads than the pool's size are
 * running items, callers included.  A caller always runs its own batch's
 * items too, so a batch finishes even when every pool thread is busy
 * elsewhere, and an item may itself call mpe_pool_run: no deadlock.  The
 * price: a caller arriving while all pool threads are busy runs beside
 * them until they leave their batch, so busy threads stay within
 * max(size, callers) but for such moments (at most size - 1 + callers). 
 * A pool no larger than the online cores keeps an idle thread, and a
 * caller waiting for its batch's last items, polling for 0.1 ms before
 * it sleeps (waking a thread costs more than a picture's slice batch can
 * spare on 16 cores).
 *
 * MpeTask: one background thread that runs one job at a time, for a stage
 * that overlaps the caller's own work (mpe_task_start ... mpe_task_wait).
 * A task is driven from one thread at a time.  With threads == 1 a pool
 * creates no thread and runs everything in the caller. */
#ifndef MPE_THREADS_H
#define MPE_THREADS_H

#include "common/common.h"

/* Online CPU cores (at least 1). */
int mpe_cpu_count(void);

typedef struct MpePool MpePool;

/* fn(ctx, index, worker): worker is 0 for the calling thread and
 * 1..threads-1 for the others that joined this call; no two threads run
 * items of one call with the same worker number at once, so per-thread
 * scratch can be indexed by it. */
typedef void (*MpePoolFn)(void *ctx, int index, int worker);

/* threads >= 1 in total, counting the thread that calls mpe_pool_run. */
int mpe_pool_open(MpePool **pool, int threads, MpeError *err);
void mpe_pool_close(MpePool *pool);
int mpe_pool_threads(const MpePool *pool);
void mpe_pool_run(MpePool *pool, int n, MpePoolFn fn, void *ctx);
/* The same on at most `slots` threads at once (the caller included), for
 * callers whose per-thread scratch is fewer than the pool's threads: worker
 * numbers stay below min(slots, mpe_pool_threads(pool)). */
void mpe_pool_run_slots(MpePool *pool, int n, int slots, MpePoolFn fn, void *ctx);

typedef struct MpeTask MpeTask;

int mpe_task_open(MpeTask **task, MpeError *err);
/* Joins a running job first. */
void mpe_task_close(MpeTask *task);
/* Start fn(arg) on the task's thread; the previous job must have been
 * waited for. */
void mpe_task_start(MpeTask *task, void (*fn)(void *arg), void *arg);
/* Block until the job started last has returned (at once if none). */
void mpe_task_wait(MpeTask *task);
/* 1 while the job started last has not returned (a poll: never blocks on
 * the job); once it says 0, the job's writes are visible to the caller. */
int mpe_task_busy(MpeTask *task);

#endif
