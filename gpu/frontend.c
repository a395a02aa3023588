/* frontend.c — backend registry and selection. */
#include "frontend.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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

/* ---- the MPE_GPU_FAIL test hook (see frontend.h) ---- */

static const char *const fail_where_name[GPU_FAIL_WHERE_COUNT] = {
    "probe", "build", "alloc", "submit", "search", "download",
};

/* Parses one "<backend>:<where>[@N]" entry of length len; 0 if it is not
 * for `backend` or malformed (a typo then fails nothing, which the test
 * that set it notices). */
static int fail_parse_entry(const char *e, size_t len, const char *backend, GpuFailWhere *where,
                            long *at)
{
    char buf[64], *colon, *atsign;

    if (len >= sizeof(buf))
        return 0;
    memcpy(buf, e, len);
    buf[len] = '\0';
    if (!(colon = strchr(buf, ':')))
        return 0;
    *colon = '\0';
    if (strcmp(buf, backend))
        return 0;
    if ((atsign = strchr(colon + 1, '@')))
        *atsign = '\0';
    for (int w = 0; w < GPU_FAIL_WHERE_COUNT; w++) {
        if (strcmp(colon + 1, fail_where_name[w]))
            continue;
        if ((w >= GPU_FAIL_SUBMIT) != (atsign != NULL))
            return 0;   /* frame number required exactly for the per-frame ones */
        *at = 0;
        if (atsign) {
            char *end;
            *at = strtol(atsign + 1, &end, 10);
            if (end == atsign + 1 || *end || *at < 0)
                return 0;
        }
        *where = (GpuFailWhere)w;
        return 1;
    }
    return 0;
}

void gpu_fail_init(GpuFailHook *h, const char *backend)
{
    const char *spec = getenv("MPE_GPU_FAIL");

    memset(h, 0, sizeof(*h));
    h->backend = backend;
    for (int i = 0; i < GPU_FAIL_MAX_SLOTS; i++)
        h->slot_frame[i] = -1;
    while (spec && *spec) {
        size_t len = strcspn(spec, ",");
        GpuFailWhere w;
        long at;
        if (fail_parse_entry(spec, len, backend, &w, &at)) {
            h->armed[w] = 1;
            h->at[w] = at;
        }
        spec += len + (spec[len] == ',');
    }
}

int gpu_fail_names(const char *backend)
{
    GpuFailHook h;
    gpu_fail_init(&h, backend);
    for (int w = 0; w < GPU_FAIL_WHERE_COUNT; w++)
        if (h.armed[w])
            return 1;
    return 0;
}

int gpu_fail_probe(const char *backend, char *why, size_t why_size)
{
    GpuFailHook h;
    gpu_fail_init(&h, backend);
    if (!h.armed[GPU_FAIL_PROBE])
        return 0;
    snprintf(why, why_size, "%s: device probe failed (MPE_GPU_FAIL test hook)", backend);
    return -ENODEV;
}

int gpu_fail_open(const GpuFailHook *h, GpuFailWhere where, MpeError *err)
{
    if (!h->armed[where])
        return 0;
    if (where == GPU_FAIL_ALLOC)
        return mpe_error(err, -ENOMEM, "%s: out of device memory (MPE_GPU_FAIL test hook)",
                         h->backend);
    return mpe_error(err, -EIO, "%s: kernel build failed (MPE_GPU_FAIL test hook)", h->backend);
}

int gpu_fail_frame(GpuFailHook *h, GpuFailWhere where, int slot, MpeError *err)
{
    long frame = -1;

    if (slot >= 0 && slot < GPU_FAIL_MAX_SLOTS) {
        if (where == GPU_FAIL_SUBMIT)
            h->slot_frame[slot] = h->submitted;
        frame = h->slot_frame[slot];
    }
    if (where == GPU_FAIL_SUBMIT)
        h->submitted++;
    if (h->lost)
        return mpe_error(err, -EIO, "%s: device was lost earlier in the run (MPE_GPU_FAIL test hook)",
                         h->backend);
    if (!h->armed[where] || frame != h->at[where])
        return 0;
    h->lost = 1;
    return mpe_error(err, -EIO, "%s: device lost during %s of frame %ld (MPE_GPU_FAIL test hook)",
                     h->backend, fail_where_name[where], frame);
}

/* name matches pattern's fixed prefix followed by anything ("*") or by a
 * digit first ("#"), or equals it (no wildcard) */
static int node_matches(const char *name, const char *pattern)
{
    size_t n = strcspn(pattern, "*#");
    if (strncmp(name, pattern, n))
        return 0;
    if (pattern[n] == '*')
        return 1;
    if (pattern[n] == '#')
        return name[n] >= '0' && name[n] <= '9';
    return name[n] == '\0';
}

int gpu_has_device_node(const char *dev_dir)
{
    static const struct {
        const char *dir, *pattern;
    } nodes[] = {
        { "dri", "renderD*" }, { "dri", "card*" },   /* Mesa, Intel, AMD */
        { "", "kfd" },                                 /* AMD ROCm */
        { "", "nvidia#" },                             /* NVIDIA, one per GPU */
        { "", "dxg" },                                 /* WSL2 */
        { "", "mali*" }, { "", "kgsl-3d*" }, { "", "galcore" },
        { "accel", "accel*" },
    };
    char path[4096];
    int found = 0;

    for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]) && !found; i++) {
        DIR *d;
        struct dirent *de;
        snprintf(path, sizeof(path), "%s/%s", dev_dir, nodes[i].dir);
        if (!(d = opendir(path)))
            continue;
        while (!found && (de = readdir(d)))
            found = node_matches(de->d_name, nodes[i].pattern);
        closedir(d);
    }
    return found;
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

int gpu_frontend_open(const GpuBackend **be, GpuContext **ctx, const char *name,
                      const GpuConfig *cfg, const MpeLog *log, MpeError *err)
{
    char why[256];
    MpeError oerr = { "" };   /* open's own message, wrapped below */
    const char *last = NULL, *last_why = "";
    int is_auto = !strcmp(name, "auto"), ret;

    *be = NULL;
    *ctx = NULL;
    for (const GpuBackend *const *b = backend_list; *b; b++) {
        if (!is_auto && strcmp((*b)->name, name))
            continue;
        why[0] = '\0';
        if ((ret = (*b)->probe(is_auto, why, sizeof(why))) < 0) {
            if (!is_auto)
                return mpe_error(err, ret, "backend '%s' cannot run here: %s", name, why);
            mpe_log(log, MPE_LOG_INFO, "front end: backend '%s' unavailable (%s); trying the next",
                    (*b)->name, why);
            last = (*b)->name;
            last_why = why;
            continue;
        }
        if ((ret = (*b)->open(ctx, cfg, &oerr)) < 0) {
            *ctx = NULL;
            if (!is_auto)
                return mpe_error(err, ret, "backend '%s' failed to open: %s", name, oerr.msg);
            if (b[1])   /* the last one's reason goes into the error below */
                mpe_log(log, MPE_LOG_WARNING,
                        "front end: backend '%s' failed to open (%s); falling back to the next",
                        (*b)->name, oerr.msg);
            last = (*b)->name;
            last_why = oerr.msg;
            continue;
        }
        *be = *b;
        mpe_log(log, MPE_LOG_INFO, "front end: using backend '%s'%s%s", (*b)->name,
                why[0] ? ": " : "", why);
        return 0;
    }
    if (is_auto)
        return mpe_error(err, -ENODEV, "no usable front-end backend (the last, '%s': %s)",
                         last ? last : "none", last_why);
    return mpe_error(err, -EINVAL, "unknown backend '%s' (see --list-backends)", name);
}
