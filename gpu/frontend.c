/* frontend.c — the front-end framework: backend registry and selection,
 * and around every backend the checks, slot bookkeeping, geometry, host
 * packing and the MPE_GPU_FAIL hook (frontend_internal.h). */
#include "frontend_internal.h"

#include "common/timer.h"

#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdatomic.h>
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

/* ---- the MPE_GPU_FAIL test hook (see frontend.h) ---- */

typedef enum GpuFailWhere {
    GPU_FAIL_PROBE,
    GPU_FAIL_BUILD,
    GPU_FAIL_ALLOC,
    GPU_FAIL_SUBMIT,
    GPU_FAIL_SEARCH,
    GPU_FAIL_DOWNLOAD,
    GPU_FAIL_WHERE_COUNT
} GpuFailWhere;

#define GPU_FAIL_MAX_SLOTS 64   /* frame numbers are tracked for this many slots */

/* One front end's view of the hook. */
typedef struct GpuFailHook {
    const char *backend;
    int armed[GPU_FAIL_WHERE_COUNT];
    long at[GPU_FAIL_WHERE_COUNT];          /* frame number for submit/search/download */
    long submitted;                         /* frames submitted so far */
    long slot_frame[GPU_FAIL_MAX_SLOTS];    /* frame number held by each slot, -1: none */
    int lost;
} GpuFailHook;

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

static void fail_init(GpuFailHook *h, const char *backend)
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

static int fail_names(const char *backend)
{
    GpuFailHook h;
    fail_init(&h, backend);
    for (int w = 0; w < GPU_FAIL_WHERE_COUNT; w++)
        if (h.armed[w])
            return 1;
    return 0;
}

static int fail_probe(const char *backend, char *why, size_t why_size)
{
    GpuFailHook h;
    fail_init(&h, backend);
    if (!h.armed[GPU_FAIL_PROBE])
        return 0;
    snprintf(why, why_size, "%s: device probe failed (MPE_GPU_FAIL test hook)", backend);
    return -ENODEV;
}

static int fail_open(const GpuFailHook *h, GpuFailWhere where, MpeError *err)
{
    if (!h->armed[where])
        return 0;
    if (where == GPU_FAIL_ALLOC)
        return mpe_error(err, -ENOMEM, "%s: out of device memory (MPE_GPU_FAIL test hook)",
                         h->backend);
    return mpe_error(err, -EIO, "%s: kernel build failed (MPE_GPU_FAIL test hook)", h->backend);
}

static int fail_frame(GpuFailHook *h, GpuFailWhere where, int slot, MpeError *err)
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

/* The luma samples (width x height x frames) of the shortest run that
 * --backend auto starts a GPU for.  A shorter run ends before a GPU could
 * take over, and then waited for its open at the end: on the H100 machine
 * (16 cores) the CUDA open took 0.25-0.36 s (driver 0.1-0.2, context 0.1,
 * pinned staging 0.05), and 2048^2 runs took, cpu against cuda, 0.26 s
 * against 0.38 at 32 frames, 0.49 against 0.52 at 64 and 0.92 against 0.78
 * at 128 (tools/device/short.sh): they cross near 80 frames, 335 M samples.
 * The limit, 64 frames at 2048^2 (129 at 1920x1080), leans to the GPU: a
 * machine with fewer cores crosses sooner. */
#define GPU_AUTO_MIN_SAMPLES (256.0 * 1024 * 1024)

int gpu_auto_wants_gpu(int width, int height, long length)
{
    return length <= 0 || (double)width * height * (double)length >= GPU_AUTO_MIN_SAMPLES;
}

/* ---- the framework around a backend ---- */

typedef struct FrontendSlot {
    int submitted;   /* holds a frame */
    int has_mv;      /* searched since its last submit */
} FrontendSlot;

/* An asynchronous open (gpu_frontend_open_async): the task opens `gpu`
 * while `boot`, a cpu front end, takes the frames. */
typedef struct GpuAsync {
    MpeTask *task;
    char name[32];
    GpuConfig cfg;
    MpeLog log;
    atomic_int finish;       /* gpu_frontend_finish: the open stops at its next step */
    GpuFrontend *gpu;        /* the task's result: NULL where it stopped so */
    const char *probed;      /* then the backend whose probe passed (NULL: none yet) */
    int ret;
    MpeError err;
    int joined;              /* the task's result has been taken */
    int switched;            /* frames go to gpu from now on */
    int boot_frames;         /* frames that went to boot */
    int last_slot;           /* the slot submitted last, -1: none yet */
    int defer;               /* gpu_frontend_defer_move: not at the next submit */
    GpuFrontend *boot;
    unsigned char *on_boot;  /* per slot: its frame went to boot */
    unsigned char *uploaded; /* per slot on boot: its planes are on gpu too */
} GpuAsync;

struct GpuFrontend {
    const GpuBackend *be;
    int pyramid;
    int intra;               /* cfg->intra_costs */
    GpuContext *ctx;
    GpuGeometry geo;
    int slots;
    FrontendSlot *slot;
    GpuFailHook fail;
    GpuAsync *async;         /* non-NULL: every call goes to async->boot or ->gpu */
    MpePool *pool;           /* the frame's copy into the slot runs on it (NULL: inline) */
};

static void geometry_init(GpuGeometry *g, int width, int height)
{
    memset(g, 0, sizeof(*g));
    g->width = width;
    g->height = height;
    g->mb_w = (width + 15) / 16;
    g->mb_h = (height + 15) / 16;
    for (int c = 0; c < 3; c++) {
        g->plane_w[c] = (16 * g->mb_w) >> (c ? 1 : 0);
        g->plane_h[c] = (16 * g->mb_h) >> (c ? 1 : 0);
        g->plane_off[c + 1] = g->plane_off[c] + (size_t)g->plane_w[c] * g->plane_h[c];
    }
    g->rgb_size = (size_t)width * height * 3;
    g->mv_size = (size_t)g->mb_w * g->mb_h * 3 * sizeof(uint32_t);
    g->in_size = MPE_MAX(g->rgb_size, g->plane_off[3]);
}

void gpu_unpack_vectors(GpuMotion *mv, const uint8_t *words, const GpuGeometry *geo)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* the words are GpuMotion's own layout here: dx in the low half of the
     * first, then dy, sad, sad0 (16384 vectors at 2048^2: 0.1 ms unpacked
     * one by one, a tenth of that copied) */
    _Static_assert(sizeof(GpuMotion) == 12 && offsetof(GpuMotion, dy) == 2 &&
                       offsetof(GpuMotion, sad) == 4 && offsetof(GpuMotion, sad0) == 8,
                   "GpuMotion is not the readback's 3 words");
    memcpy(mv, words, 12 * (size_t)geo->mb_w * geo->mb_h);
#else
    for (int i = 0; i < geo->mb_w * geo->mb_h; i++) {
        uint32_t v[3];
        memcpy(v, words + 12 * (size_t)i, sizeof(v));
        mv[i].dx = (int16_t)(v[0] & 0xFFFF);
        mv[i].dy = (int16_t)(v[0] >> 16);
        mv[i].sad = v[1];
        mv[i].sad0 = v[2];
    }
#endif
}

void gpu_unpack_readback(MpePicture *pic, GpuMotion *mv, const uint8_t *buf,
                         const GpuGeometry *geo)
{
    for (int c = 0; pic && c < 3; c++)
        for (int y = 0; y < geo->plane_h[c]; y++)
            memcpy(pic->plane[c] + (size_t)y * pic->stride[c],
                   buf + geo->plane_off[c] + (size_t)y * geo->plane_w[c], (size_t)geo->plane_w[c]);
    if (mv)
        gpu_unpack_vectors(mv, buf + geo->plane_off[3], geo);
}

static int check_slot(const GpuFrontend *fe, int slot, MpeError *err)
{
    if (slot < 0 || slot >= fe->slots)
        return mpe_error(err, -EINVAL, "front end: slot %d out of range 0..%d", slot, fe->slots - 1);
    return 0;
}

static int check_frame(const GpuFrontend *fe, const MpeFrame *frame, MpeError *err)
{
    if (frame->width != fe->geo.width || frame->height != fe->geo.height)
        return mpe_error(err, -EINVAL, "front end: frame is %dx%d, expected %dx%d", frame->width,
                         frame->height, fe->geo.width, fe->geo.height);
    if (frame->format != MPE_FRAME_RGB24 && frame->format != MPE_FRAME_YUV420)
        return mpe_error(err, -EINVAL, "front end: unknown frame format %d", (int)frame->format);
    return 0;
}

static int check_range(int range, MpeError *err)
{
    if (range < 0 || range > GPU_MAX_SEARCH_RANGE)
        return mpe_error(err, -EINVAL, "front end: search range %d outside 0..%d", range,
                         GPU_MAX_SEARCH_RANGE);
    return 0;
}

void gpu_frontend_close(GpuFrontend *fe)
{
    if (!fe)
        return;
    if (fe->async) {
        /* nothing will use the open's result: it stops at its next step */
        atomic_store(&fe->async->finish, 1);
        mpe_task_close(fe->async->task);   /* waits for the open */
        gpu_frontend_close(fe->async->gpu);
        gpu_frontend_close(fe->async->boot);
        free(fe->async->on_boot);
        free(fe->async->uploaded);
        free(fe->async);
    }
    if (fe->ctx)
        fe->be->close(fe->ctx);
    free(fe->slot);
    free(fe);
}

/* Is the open no longer wanted (gpu_frontend_finish)?  NULL: always wanted. */
static int finishing(atomic_int *finish)
{
    return finish && atomic_load(finish);
}

/* One backend's open: its device, then the kernels, then the slots, with
 * the test hook's build and alloc failures between them.  Once `finish` is
 * set, it stops after the step in progress: 0 with *out NULL. */
static int frontend_open_one(GpuFrontend **out, const GpuBackend *be, const GpuConfig *cfg,
                             atomic_int *finish, MpeError *err)
{
    GpuFrontend *fe;
    int ret;

    *out = NULL;
    if (cfg->slots < 2)
        return mpe_error(err, -EINVAL, "front end: need at least 2 frame slots, got %d", cfg->slots);
    if (cfg->pyramid && !be->hier)
        return mpe_error(err, -ENOSYS, "%s: no hierarchical motion search on this backend yet "
                         "(--me full runs here)", be->name);
    if (!(fe = calloc(1, sizeof(*fe))) || !(fe->slot = calloc((size_t)cfg->slots, sizeof(*fe->slot)))) {
        free(fe);
        return mpe_error(err, -ENOMEM, "front end: out of memory");
    }
    fe->be = be;
    fe->slots = cfg->slots;
    fe->pyramid = cfg->pyramid;
    fe->intra = cfg->intra_costs;
    fe->pool = cfg->pool;
    geometry_init(&fe->geo, cfg->width, cfg->height);
    fail_init(&fe->fail, be->name);
    ret = 0;
    if (finishing(finish) || (ret = be->open(&fe->ctx, cfg, &fe->geo, err)) < 0 ||
        (ret = fail_open(&fe->fail, GPU_FAIL_BUILD, err)) < 0 || finishing(finish) ||
        (be->build && (ret = be->build(fe->ctx, err)) < 0))
        goto fail;
    for (int i = 0; i < fe->slots; i++)
        /* the hook fails after the first slot, so the partial cleanup runs */
        if ((i == 1 && (ret = fail_open(&fe->fail, GPU_FAIL_ALLOC, err)) < 0) || finishing(finish) ||
            (ret = be->alloc_slot(fe->ctx, i, err)) < 0)
            goto fail;
    *out = fe;
    return 0;
fail:
    gpu_frontend_close(fe);
    return ret;
}

/* ---- the asynchronous open ---- */

static int frontend_open(GpuFrontend **fe, const char *name, const GpuConfig *cfg,
                         const MpeLog *log, atomic_int *finish, const char **probed, MpeError *err);

static void async_open_job(void *arg)
{
    GpuAsync *a = arg;
    const double t0 = mpe_time_ms();
    a->ret = frontend_open(&a->gpu, a->name, &a->cfg, &a->log, &a->finish, &a->probed, &a->err);
    if (a->gpu)
        mpe_log(&a->log, MPE_LOG_INFO, "front end: '%s' opened in %.1f ms beside the first frames",
                gpu_frontend_name(a->gpu), mpe_time_ms() - t0);
}

/* 1 when the opened front end is there, 0 while it is still opening (only
 * without `block`) or where it stopped unopened (gpu_frontend_finish), or
 * the open's error (on every call). */
static int async_join(GpuAsync *a, int block, MpeError *err)
{
    if (!a->joined) {
        if (!block && mpe_task_busy(a->task))
            return 0;
        mpe_task_wait(a->task);
        a->joined = 1;
    }
    if (a->ret < 0) {
        if (err)
            *err = a->err;
        return a->ret;
    }
    return a->gpu != NULL;
}

/* The front end that holds the slot's frame. */
static GpuFrontend *async_holder(const GpuFrontend *fe, int slot)
{
    const GpuAsync *a = fe->async;
    return (a->on_boot[slot] || !a->gpu) && a->boot ? a->boot : a->gpu;
}

/* Once moved to the GPU: slot's next frame goes there; the cpu front end's
 * memory goes once no slot holds a frame of it (the caller reuses a slot
 * only when done with its frame, so nobody reads its planes any more). */
static GpuFrontend *async_take_slot(GpuFrontend *fe, int slot)
{
    GpuAsync *a = fe->async;
    int held = 0;

    a->defer = 0;
    a->on_boot[slot] = 0;
    a->uploaded[slot] = 0;
    a->last_slot = slot;
    for (int i = 0; i < fe->slots; i++)
        held |= a->on_boot[i];
    if (!held && a->boot) {
        gpu_frontend_close(a->boot);
        a->boot = NULL;
    }
    return a->gpu;
}

static int async_submit(GpuFrontend *fe, int slot, const MpeFrame *frame, MpeError *err)
{
    GpuAsync *a = fe->async;
    int ret;

    if ((ret = check_slot(fe, slot, err)) < 0)
        return ret;
    if (!a->switched) {
        if ((ret = async_join(a, 0, err)) < 0)
            return ret;
        /* the hierarchical search's candidates include the reference's own
         * vectors, which a picture moved over would not bring: move after
         * a picture that was not searched */
        if (ret && a->cfg.pyramid && a->last_slot >= 0 && a->boot->slot[a->last_slot].has_mv)
            ret = 0;
        if (ret && a->defer)
            ret = 0;
        if ((a->switched = ret))
            mpe_log(&a->log, MPE_LOG_INFO, "front end: '%s' open; the first %d frames went "
                    "through the cpu front end meanwhile", gpu_frontend_name(a->gpu), a->boot_frames);
    }
    if (a->switched)
        return gpu_frontend_submit(async_take_slot(fe, slot), slot, frame, err);
    a->defer = 0;
    a->on_boot[slot] = 1;
    a->uploaded[slot] = 0;
    a->last_slot = slot;
    a->boot_frames++;
    return gpu_frontend_submit(a->boot, slot, frame, err);
}

static int frontend_search(GpuFrontend *fe, int cur, int ref, int range, int reach, MpeError *err);

static int async_search(GpuFrontend *fe, int cur, int ref, int range, int reach, MpeError *err)
{
    GpuAsync *a = fe->async;
    int ret;

    if ((ret = check_slot(fe, cur, err)) < 0 || (ret = check_slot(fe, ref, err)) < 0)
        return ret;
    if (a->on_boot[cur] || !a->gpu)
        return frontend_search(a->boot, cur, ref, range, reach, err);
    if (a->on_boot[ref] && !a->uploaded[ref]) {
        /* the reference went to the cpu front end before the switch: its
         * planes go up as a YUV frame (padded there as they would be here) */
        const MpePicture *p = gpu_frontend_host_planes(a->boot, ref);
        MpeFrame f = { .format = MPE_FRAME_YUV420, .width = fe->geo.width, .height = fe->geo.height };
        if (!p)
            return mpe_error(err, -EINVAL, "front end: motion search on a slot with no frame");
        for (int c = 0; c < 3; c++) {
            f.data[c] = p->plane[c];
            f.stride[c] = (int)p->stride[c];
        }
        if ((ret = gpu_frontend_submit(a->gpu, ref, &f, err)) < 0)
            return ret;
        a->uploaded[ref] = 1;
    }
    return frontend_search(a->gpu, cur, ref, range, reach, err);
}

int gpu_frontend_open_async(GpuFrontend **out, const char *name, const GpuConfig *cfg,
                            const MpeLog *log, MpeError *err)
{
    GpuFrontend *fe;
    GpuAsync *a;
    const int is_auto = !strcmp(name, "auto");
    int ret, known = is_auto, refuses_hier = 0;

    *out = NULL;
    if (is_auto && !gpu_auto_wants_gpu(cfg->width, cfg->height, cfg->length) &&
        !getenv("MPE_GPU_FAIL")) {
        mpe_log(log, MPE_LOG_INFO, "front end: --backend auto: a run of %ld frame%s at %dx%d ends "
                "sooner on the cpu than a GPU starts; no GPU opened", cfg->length,
                cfg->length == 1 ? "" : "s", cfg->width, cfg->height);
        return gpu_frontend_open(out, "cpu", cfg, log, err);
    }
    for (const GpuBackend *const *b = backend_list; *b && !known; b++)
        if ((known = !strcmp((*b)->name, name)))
            refuses_hier = cfg->pyramid && !(*b)->hier;
    if (!known || refuses_hier || !strcmp(name, "cpu") || getenv("MPE_GPU_FAIL") ||
        strlen(name) >= sizeof(a->name) || (is_auto && !gpu_has_device_node("/dev")))
        return gpu_frontend_open(out, name, cfg, log, err);
    /* OpenCL is loaded here, on the caller's thread: an implementation
     * built on LLVM (PoCL) gives the first thread that loads it a signal
     * stack of its own, which AddressSanitizer then fails to free when that
     * thread ends (the opening task's does, at close).  The build, the
     * slow part, still runs on the task. */
    if (!strcmp(name, "opencl")) {
        char why[256];
        for (const GpuBackend *const *b = backend_list; *b; b++)
            if (!strcmp((*b)->name, name) && (ret = gpu_backend_probe(*b, 0, why, sizeof(why))) < 0)
                return mpe_error(err, ret, "backend '%s' cannot run here: %s", name, why);
    }
    if (!(fe = calloc(1, sizeof(*fe))) || !(fe->async = a = calloc(1, sizeof(*a))) ||
        !(a->on_boot = calloc((size_t)cfg->slots, 1)) || !(a->uploaded = calloc((size_t)cfg->slots, 1))) {
        ret = mpe_error(err, -ENOMEM, "front end: out of memory");
        goto fail;
    }
    fe->slots = cfg->slots;
    geometry_init(&fe->geo, cfg->width, cfg->height);
    memset(a->on_boot, 1, (size_t)cfg->slots);
    a->last_slot = -1;
    atomic_init(&a->finish, 0);
    snprintf(a->name, sizeof(a->name), "%s", name);
    a->cfg = *cfg;
    if (log)
        a->log = *log;
    if ((ret = frontend_open_one(&a->boot, &gpu_backend_cpu, cfg, NULL, err)) < 0 ||
        (ret = mpe_task_open(&a->task, err)) < 0)
        goto fail;
    mpe_task_start(a->task, async_open_job, a);
    *out = fe;
    return 0;
fail:
    gpu_frontend_close(fe);
    return ret;
}

void gpu_frontend_defer_move(GpuFrontend *fe)
{
    if (fe->async)
        fe->async->defer = 1;
}

void gpu_frontend_finish(GpuFrontend *fe)
{
    if (fe->async)
        atomic_store(&fe->async->finish, 1);
}

int gpu_frontend_ready(GpuFrontend *fe, MpeError *err)
{
    const int ret = fe->async ? async_join(fe->async, 1, err) : 0;
    return ret < 0 ? ret : 0;
}

const char *gpu_frontend_name(const GpuFrontend *fe)
{
    if (fe->async)
        return async_join(fe->async, 1, NULL) > 0 ? gpu_frontend_name(fe->async->gpu)
               : fe->async->probed                ? fe->async->probed
                                                  : fe->async->name;
    return fe->be->name;
}

/* A frame's copy into the slot's host memory, one band of rows each. */
static void copy_band(void *arg, int band, int worker)
{
    const GpuStaged *j = arg;
    (void)worker;
    if (j->frame->format != MPE_FRAME_RGB24) {
        MpePicture view = j->view;   /* the planes of the band's rows only are written */
        mpe_picture_from_yuv_band(j->pic ? j->pic : &view, j->frame, band, j->bands);
        return;
    }
    const size_t row = (size_t)j->width * 3;
    const int y0 = (int)((int64_t)j->height * band / j->bands);
    const int y1 = (int)((int64_t)j->height * (band + 1) / j->bands);
    for (int y = y0; y < y1; y++)
        memcpy(j->staging + y * row, j->frame->data[0] + (size_t)y * j->frame->stride[0], row);
}

/* deferred: the copy and the commit may come later (gpu_frontend_stage) */
static int stage_slot(GpuFrontend *fe, int slot, const MpeFrame *frame, GpuStaged *st, int deferred,
                      MpeError *err)
{
    const GpuGeometry *g = &fe->geo;
    GpuInput in = { frame->format == MPE_FRAME_RGB24, NULL, NULL };
    int ret;

    memset(st, 0, sizeof(*st));
    if ((ret = check_slot(fe, slot, err)) < 0 || (ret = check_frame(fe, frame, err)) < 0 ||
        (ret = fe->be->input(fe->ctx, slot, &in, err)) < 0)
        return ret;
    /* an RGB frame that the backend converts from where it is (no staging)
     * would be read in commit, when the caller may have reused it */
    if (deferred && frame->format == MPE_FRAME_RGB24 && !in.staging)
        return -EAGAIN;
    if ((ret = fail_frame(&fe->fail, GPU_FAIL_SUBMIT, slot, err)) < 0)
        return ret;
    fe->slot[slot].submitted = 0;
    fe->slot[slot].has_mv = 0;
    *st = (GpuStaged){ .holder = fe, .frame = frame, .staging = in.staging, .pic = in.pic,
                       .width = g->width, .height = g->height, .pool = fe->pool };
    if (frame->format != MPE_FRAME_RGB24 && !in.pic) {
        /* already YUV: padded on the host, uploaded as is */
        st->view = (MpePicture){ .width = g->width, .height = g->height, .mb_width = g->mb_w,
                                 .mb_height = g->mb_h };
        for (int c = 0; c < 3; c++) {
            st->view.plane[c] = in.staging + g->plane_off[c];
            st->view.stride[c] = st->view.plane_w[c] = g->plane_w[c];
            st->view.plane_h[c] = g->plane_h[c];
        }
    }
    /* a frame is 6-25 MB: on one thread 1-2 ms of the front end's
     * time, which the coder waits for between short pictures */
    if (frame->format != MPE_FRAME_RGB24 || in.staging)
        st->bands = fe->pool ? MPE_MAX(1, MPE_MIN(4 * mpe_pool_threads(fe->pool), g->height / 32)) : 1;
    return 0;
}

int gpu_frontend_stage(GpuFrontend *fe, int slot, const MpeFrame *frame, GpuStaged *st,
                       MpeError *err)
{
    int ret;

    memset(st, 0, sizeof(*st));
    if (!fe->async)
        return stage_slot(fe, slot, frame, st, 1, err);
    if ((ret = check_slot(fe, slot, err)) < 0)
        return ret;
    /* before the move, which is decided in submit's order (async_submit),
     * frames go through whole */
    if (!fe->async->switched)
        return -EAGAIN;
    return stage_slot(async_take_slot(fe, slot), slot, frame, st, 1, err);
}

void gpu_frontend_stage_copy(GpuStaged *st)
{
    if (st->bands > 1)
        mpe_pool_run(st->pool, st->bands, copy_band, st);
    else if (st->bands == 1)
        copy_band(st, 0, 0);
}

int gpu_frontend_commit(GpuFrontend *fe, int slot, GpuStaged *st, MpeError *err)
{
    int ret;

    if (!st->holder || (fe->async ? async_holder(fe, slot) : fe) != st->holder)
        return mpe_error(err, -EINVAL, "front end: commit of slot %d without its stage", slot);
    fe = st->holder;
    if ((ret = check_slot(fe, slot, err)) < 0 ||
        (ret = fe->be->submit(fe->ctx, slot, st->frame->format == MPE_FRAME_RGB24 ? st->frame : NULL,
                              err)) < 0)
        return ret;
    fe->slot[slot].submitted = 1;
    st->holder = NULL;
    return 0;
}

int gpu_frontend_submit(GpuFrontend *fe, int slot, const MpeFrame *frame, MpeError *err)
{
    GpuStaged st;
    int ret;

    if (fe->async)
        return async_submit(fe, slot, frame, err);
    if ((ret = stage_slot(fe, slot, frame, &st, 0, err)) < 0)
        return ret;
    gpu_frontend_stage_copy(&st);
    return gpu_frontend_commit(fe, slot, &st, err);
}

static int frontend_search(GpuFrontend *fe, int cur, int ref, int range, int reach, MpeError *err)
{
    int ret;

    if (fe->async)
        return async_search(fe, cur, ref, range, reach, err);
    if (reach && (reach < 0 || reach > GPU_MAX_REACH))
        return mpe_error(err, -EINVAL, "front end: search reach %d outside 1..%d", reach,
                         GPU_MAX_REACH);
    if (reach && !fe->pyramid)
        return mpe_error(err, -EINVAL, "front end: hierarchical search without pyramids (GpuConfig.pyramid)");
    if ((ret = check_slot(fe, cur, err)) < 0 || (ret = check_slot(fe, ref, err)) < 0 ||
        (ret = check_range(range, err)) < 0 ||
        (ret = fail_frame(&fe->fail, GPU_FAIL_SEARCH, cur, err)) < 0)
        return ret;
    if (!fe->slot[cur].submitted || !fe->slot[ref].submitted)
        return mpe_error(err, -EINVAL, "front end: motion search on a slot with no frame");
    if ((ret = fe->be->search(fe->ctx, cur, ref, range, reach, ref != cur && fe->slot[ref].has_mv,
                              err)) < 0)
        return ret;
    fe->slot[cur].has_mv = 1;
    return 0;
}

int gpu_frontend_search(GpuFrontend *fe, int cur, int ref, int range, MpeError *err)
{
    return frontend_search(fe, cur, ref, range, 0, err);
}

int gpu_frontend_search_hier(GpuFrontend *fe, int cur, int ref, int range, int reach,
                             MpeError *err)
{
    if (reach == 0)
        return mpe_error(err, -EINVAL, "front end: search reach 0 (the full search is gpu_frontend_search)");
    return frontend_search(fe, cur, ref, range, reach, err);
}

int gpu_frontend_wait(GpuFrontend *fe, int slot, MpeError *err)
{
    int ret;

    if (fe->async)
        return check_slot(fe, slot, err) < 0 ? -EINVAL : gpu_frontend_wait(async_holder(fe, slot), slot, err);
    if ((ret = check_slot(fe, slot, err)) < 0 ||
        (ret = fail_frame(&fe->fail, GPU_FAIL_DOWNLOAD, slot, err)) < 0)
        return ret;
    if (!fe->slot[slot].submitted)
        return 0;
    return fe->be->wait(fe->ctx, slot, fe->slot[slot].has_mv, err);
}

int gpu_frontend_download(GpuFrontend *fe, int slot, MpePicture *pic, GpuMotion *mv,
                          MpeError *err)
{
    if (fe->async)
        return check_slot(fe, slot, err) < 0 ? -EINVAL
                                              : gpu_frontend_download(async_holder(fe, slot), slot, pic, mv, err);
    int ret = gpu_frontend_wait(fe, slot, err);

    if (ret < 0)
        return ret;
    if (!fe->slot[slot].submitted)
        return mpe_error(err, -EINVAL, "front end: no frame was submitted to slot %d", slot);
    if (mv && !fe->slot[slot].has_mv)
        return mpe_error(err, -EINVAL, "front end: no motion search was run on slot %d", slot);
    if (!pic && !mv && !fe->be->host_planes)
        return mpe_error(err, -EINVAL, "front end: %s needs a picture or vectors to download into",
                         fe->be->name);
    return fe->be->download(fe->ctx, slot, pic, mv, err);
}

const MpePicture *gpu_frontend_host_planes(GpuFrontend *fe, int slot)
{
    if (fe->async)
        return slot < 0 || slot >= fe->slots ? NULL : gpu_frontend_host_planes(async_holder(fe, slot), slot);
    if (!fe->be->host_planes || slot < 0 || slot >= fe->slots || !fe->slot[slot].submitted)
        return NULL;
    return fe->be->host_planes(fe->ctx, slot);
}

int gpu_frontend_has_intra_costs(GpuFrontend *fe, int slot)
{
    if (slot < 0 || slot >= fe->slots)
        return 0;
    if (fe->async)
        return gpu_frontend_has_intra_costs(async_holder(fe, slot), slot);
    return fe->intra && fe->be->intra_costs && fe->slot[slot].submitted;
}

int gpu_frontend_intra_costs(GpuFrontend *fe, int slot, uint32_t *intra, MpeError *err)
{
    int ret;

    if ((ret = check_slot(fe, slot, err)) < 0)
        return ret;
    if (fe->async)
        return gpu_frontend_intra_costs(async_holder(fe, slot), slot, intra, err);
    if (!gpu_frontend_has_intra_costs(fe, slot))
        return -ENOSYS;
    if ((ret = fail_frame(&fe->fail, GPU_FAIL_DOWNLOAD, slot, err)) < 0)
        return ret;
    return fe->be->intra_costs(fe->ctx, slot, intra, err);
}

int gpu_frontend_timings(GpuFrontend *fe, int slot, GpuTimings *t)
{
    if (fe->async)
        return slot < 0 || slot >= fe->slots ? -EINVAL : gpu_frontend_timings(async_holder(fe, slot), slot, t);
    if (!fe->be->timings)
        return -ENOSYS;
    if (slot < 0 || slot >= fe->slots)
        return -EINVAL;
    memset(t, 0, sizeof(*t));
    if (!fe->slot[slot].submitted)
        return 0;
    return fe->be->timings(fe->ctx, slot, fe->slot[slot].has_mv, t);
}

/* ---- the registry ---- */

const GpuBackend *const *gpu_backend_list(void)
{
    return backend_list;
}

const char *gpu_backend_name(const GpuBackend *b)
{
    return b->name;
}

static int backend_probe(const GpuBackend *b, int device, int for_auto, char *why,
                         size_t why_size)
{
    int ret = fail_probe(b->name, why, why_size);
    if (ret < 0)
        return ret;
    if (why && why_size)
        why[0] = '\0';
    /* the test hook wants its failure paths reachable through auto on a
     * device auto would decline (PoCL's CPU device): probe as if named */
    return b->probe(device, for_auto && !fail_names(b->name), why, why_size);
}

int gpu_backend_probe(const GpuBackend *b, int for_auto, char *why, size_t why_size)
{
    return backend_probe(b, -1, for_auto, why, why_size);
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
        if (gpu_backend_probe(*b, is_auto, why, sizeof(why)) == 0) {
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

/* gpu_frontend_open; once `finish` (may be NULL) is set, a backend whose
 * probe has passed (its driver and device index are there) is not opened,
 * or not further, and "auto" probes nothing more: 0 with *fe NULL and
 * *probed the backend that took the frames as far as the caller can tell
 * ("cpu" for auto, which wanted a GPU only for frames; a named backend's
 * own name, which is what its probe vouched for). */
static int frontend_open(GpuFrontend **fe, const char *name, const GpuConfig *cfg,
                         const MpeLog *log, atomic_int *finish, const char **probed, MpeError *err)
{
    char why[256];
    MpeError oerr = { "" };   /* open's own message, wrapped below */
    const char *last = NULL, *last_why = "";
    int is_auto = !strcmp(name, "auto"), ret;

    *fe = NULL;
    for (const GpuBackend *const *b = backend_list; *b; b++) {
        if (!is_auto && strcmp((*b)->name, name))
            continue;
        if (is_auto && finishing(finish)) {
            *probed = gpu_backend_cpu.name;
            mpe_log(log, MPE_LOG_INFO, "front end: --backend auto: the input ended before a GPU "
                    "opened; its frames went through the cpu front end");
            return 0;
        }
        why[0] = '\0';
        if ((ret = backend_probe(*b, cfg->device, is_auto, why, sizeof(why))) < 0) {
            if (!is_auto)
                return mpe_error(err, ret, "backend '%s' cannot run here: %s", name, why);
            /* a missing GPU is normal, a missing --device index a mistake */
            mpe_log(log, cfg->device >= 0 ? MPE_LOG_WARNING : MPE_LOG_INFO,
                    "front end: backend '%s' unavailable (%s); trying the next", (*b)->name, why);
            last = (*b)->name;
            last_why = why;
            continue;
        }
        if ((ret = frontend_open_one(fe, *b, cfg, finish, &oerr)) < 0) {
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
        if (!*fe) {
            *probed = is_auto ? gpu_backend_cpu.name : (*b)->name;
            mpe_log(log, MPE_LOG_INFO, "front end: backend '%s' can run here%s%s; not opened: "
                    "the run's frames went through the cpu front end", (*b)->name,
                    why[0] ? ": " : "", why);
            return 0;
        }
        mpe_log(log, MPE_LOG_INFO, "front end: using backend '%s'%s%s", (*b)->name,
                why[0] ? ": " : "", why);
        return 0;
    }
    if (is_auto)
        return mpe_error(err, -ENODEV, "no usable front-end backend (the last, '%s': %s)",
                         last ? last : "none", last_why);
    return mpe_error(err, -EINVAL, "unknown backend '%s' (see --list-backends)", name);
}

int gpu_frontend_open(GpuFrontend **fe, const char *name, const GpuConfig *cfg, const MpeLog *log,
                      MpeError *err)
{
    const char *probed;
    return frontend_open(fe, name, cfg, log, NULL, &probed, err);
}
