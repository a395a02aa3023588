/* frontend.c — backend registry and selection. */
#include "frontend.h"

#include <errno.h>
#include <string.h>

static const GpuBackend *const backend_list[] = {
    /* preference order for --backend auto: cuda, opencl, then cpu */
#ifdef MPE_HAVE_OPENCL
    &gpu_backend_opencl,
#endif
    &gpu_backend_cpu,
    NULL,
};

const GpuBackend *const *gpu_backend_list(void)
{
    return backend_list;
}

int gpu_backend_select(const GpuBackend **out, const char *name, const MpeLog *log,
                       MpeError *err)
{
    char why[256];
    int is_auto = !strcmp(name, "auto");

    *out = NULL;
    for (const GpuBackend *const *b = backend_list; *b; b++) {
        if (!is_auto && strcmp((*b)->name, name))
            continue;
        why[0] = '\0';
        if ((*b)->probe(is_auto, why, sizeof(why)) == 0) {
            *out = *b;
            mpe_log(log, MPE_LOG_INFO, "front end: using backend '%s'%s%s", (*b)->name,
                    why[0] ? ": " : "", why);
            return 0;
        }
        if (!is_auto)
            return mpe_error(err, -ENODEV, "backend '%s' cannot run here: %s", name, why);
        mpe_log(log, MPE_LOG_INFO, "front end: backend '%s' unavailable (%s); trying the next",
                (*b)->name, why);
    }
    if (is_auto)
        return mpe_error(err, -ENODEV, "no usable front-end backend");
    return mpe_error(err, -EINVAL, "unknown backend '%s' (see --list-backends)", name);
}
