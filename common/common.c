#include "common.h"

#include <stdio.h>

int mpe_error(MpeError *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
    }
    return code;
}

void mpe_log(const MpeLog *log, int level, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;

    if (!log || !log->fn || level > log->level)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    log->fn(log->opaque, level, buf);
}
