/* timer.h — a monotonic wall clock for per-stage statistics. */
#ifndef MPE_TIMER_H
#define MPE_TIMER_H

#include <time.h>

/* Milliseconds since an arbitrary fixed point. */
static inline double mpe_time_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The same clock in seconds. */
static inline double mpe_time_s(void)
{
    return mpe_time_ms() * 1e-3;
}

#endif
