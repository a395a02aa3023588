/* common.h — error reporting and logging shared by every module.
 *
 * Library functions return 0 on success or a negative errno value, and
 * describe the failure in a caller-owned MpeError ("FILE: problem"), so the
 * CLI can print exactly one line.  Nothing here holds global state: the log
 * sink is a callback the caller passes in. */
#ifndef MPE_COMMON_H
#define MPE_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define MPE_ERROR_MAX 512

typedef struct MpeError {
    char msg[MPE_ERROR_MAX];
} MpeError;

/* Format a message into err (if non-NULL) and return code (a negative errno),
 * so callers can write `return mpe_error(err, -EINVAL, "%s: bad", f);`. */
int mpe_error(MpeError *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

enum MpeLogLevel {
    MPE_LOG_ERROR = 0,
    MPE_LOG_WARNING = 1,
    MPE_LOG_INFO = 2,
    MPE_LOG_DEBUG = 3,
};

typedef void (*MpeLogFn)(void *opaque, int level, const char *msg);

typedef struct MpeLog {
    MpeLogFn fn;   /* NULL: messages are dropped */
    void *opaque;
    int level;     /* messages above this level are dropped */
} MpeLog;

void mpe_log(const MpeLog *log, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define MPE_MIN(a, b) ((a) < (b) ? (a) : (b))
#define MPE_MAX(a, b) ((a) > (b) ? (a) : (b))
#define MPE_CLAMP(x, lo, hi) ((x) < (lo) ? (lo) : (x) > (hi) ? (hi) : (x))

#endif
