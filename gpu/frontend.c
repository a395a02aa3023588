/* frontend.c — backend registry and selection. */
#include "frontend.h"

#include <errno.h>
#include <string.h>

static const GpuBackend *const backend_list[] = {
    /* preference order for --backend auto: cuda, opencl, then cpu */
#ifdef MPE_HAVE_CUDA
    &gpu_backend_cuda,
#endif
#ifdef MPE_HAVE_OPENCL
    &gpu_backend_opencl,
#endif
    &gpu_backend_cpu,
    NULL,
};

int gpu_check_slot(int slots, int slot, MpeError *err)
{
    if (slot < 0 || slot >= slots)
        return mpe_error(err, -EINVAL, "front end: slot %d out of range 0..%d", slot, slots - 1);
    return 0;
}

int gpu_check_frame(const MpeFrame *frame, int width, int height, MpeError *err)
{
    if (frame->width != width || frame->height != height)
        return mpe_error(err, -EINVAL, "front end: frame is %dx%d, expected %dx%d", frame->width,
                         frame->height, width, height);
    if (frame->format != MPE_FRAME_RGB24 && frame->format != MPE_FRAME_YUV420)
        return mpe_error(err, -EINVAL, "front end: unknown frame format %d", (int)frame->format);
    return 0;
}

int gpu_check_range(int range, MpeError *err)
{
    if (range < 0 || range > GPU_MAX_SEARCH_RANGE)
        return mpe_error(err, -EINVAL, "front end: search range %d outside 0..%d", range,
                         GPU_MAX_SEARCH_RANGE);
    return 0;
}

void gpu_unpack_readback(MpePicture *pic, GpuMotion *mv, const uint8_t *buf, const size_t off[4],
                         const int pw[3], const int ph[3], int n_mb)
{
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < ph[c]; y++)
            memcpy(pic->plane[c] + (size_t)y * pic->stride[c], buf + off[c] + (size_t)y * pw[c],
                   (size_t)pw[c]);
    if (!mv)
        return;
    for (int i = 0; i < n_mb; i++) {
        uint32_t v[3];
        memcpy(v, buf + off[3] + 12 * (size_t)i, sizeof(v));
        mv[i].dx = (int16_t)(v[0] & 0xFFFF);
        mv[i].dy = (int16_t)(v[0] >> 16);
        mv[i].sad = v[1];
        mv[i].sad0 = v[2];
    }
}

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
