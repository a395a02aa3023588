/* frontend_ocl.c — the "opencl" front end: kernels in frontend.cl (embedded
 * at build time), planes resident on the device, one in-order queue, work
 * submitted without waiting and tied together by events, transfers through
 * pinned (CL_MEM_ALLOC_HOST_PTR, mapped once) host buffers.
 *
 * Slot protocol (the encoder's): submit_frame(s) uploads and converts, and
 * queues the read-back of the planes; motion_search(s, r) queues the search
 * of s against r and the read-back of its vectors; wait(s) blocks on those
 * read-backs; download(s) copies out of the pinned buffers.  The in-order
 * queue orders a slot's reuse after every earlier use of it. */
#define CL_TARGET_OPENCL_VERSION 120
#include "frontend_internal.h"

#include <CL/cl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* generated from frontend.cl by tools/embed.sh */
extern const char mpe_frontend_cl_source[];

#define HIER_WG 64
#define COARSE_WG 256   /* frontend.cl */
#define WS_MAX_MBS 8    /* frontend.cl */
#define WS_MAX_THREADS 512
#define WS_CPU_THREADS 64   /* the one work-group size on a CPU device */
/* window_search_NY: rows of candidates per item (frontend.cl) */
static const int ws_ny[] = { 8, 9, 11, 13, 17, 22 };
#define WS_VARIANTS ((int)(sizeof(ws_ny) / sizeof(ws_ny[0])))
/* window_search's fixed local arrays (block, centres, SADs of the zero
 * vector, partial minima), with room for a driver's own */
#define WS_LOCAL_FIXED (WS_MAX_MBS * (256 + 8 + 4 + 16 * 8) + 256)
#define CONV_T 16

typedef struct OclSlot {
    cl_mem d_rgb, d_plane[3], d_mv;
    cl_mem d_half, d_quarter;    /* the pyramid (cfg->pyramid) */
    cl_mem h_in, h_out;          /* pinned staging, mapped for the context's life */
    uint8_t *in, *out;           /* their mapped pointers */
    /* A YUV frame's padded planes, staged here by the framework and
     * uploaded from here: they stay on the host (host_planes), so they never
     * come back down (as in frontend_cuda.cu) */
    cl_mem h_yuv;
    uint8_t *yuv;                /* its mapping */
    MpePicture host_pic;         /* laid out in it */
    int converted_on_device;     /* the last frame was RGB: its planes come back in h_out */
    cl_mem d_intra, h_intra;     /* cfg->intra_costs: per macroblock, and their pinned copy */
    uint32_t *intra;             /* h_intra's mapping */
    /* upload and read-back of the planes are three transfers each (the RGB
     * upload one); in-order, so the last of each marks completion */
    cl_event ev_upload[3], ev_convert, ev_search, ev_planes[3], ev_mv, ev_intra;
    cl_event ev_coarse, ev_centre; /* the hierarchical search's first kernels (ev_search: its last) */
} OclSlot;

struct GpuContext {
    cl_context ctx;
    cl_command_queue q;
    cl_program prog;
    cl_kernel k_convert, k_decimate, k_coarse, k_centre, k_intra;
    cl_kernel k_window[WS_VARIANTS];
    size_t window_max_wg[WS_VARIANTS]; /* each variant's largest work-group on this device */
    cl_ulong local_mem;
    int is_gpu;
    cl_mem d_coarse;             /* the hierarchical search's stage 3, per macroblock */
    cl_mem d_centres;            /* its stage 4: 2 words per macroblock */
    int pyramid;
    int intra_costs;             /* cfg->intra_costs */
    cl_device_id dev;
    const GpuGeometry *geo;      /* h_in and h_out are laid out as it says */
    int slots;
    OclSlot *slot;
};

static const char *cl_error_name(cl_int e)
{
    switch (e) {
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
    case CL_DEVICE_NOT_AVAILABLE: return "CL_DEVICE_NOT_AVAILABLE";
    case CL_COMPILER_NOT_AVAILABLE: return "CL_COMPILER_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
        return "CL_MEM_OBJECT_ALLOCATION_FAILURE (out of device memory)";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES (out of device memory or device lost)";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_DEVICE: return "CL_INVALID_DEVICE";
    case CL_INVALID_MEM_OBJECT: return "CL_INVALID_MEM_OBJECT";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_WORK_ITEM_SIZE: return "CL_INVALID_WORK_ITEM_SIZE";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_EVENT_WAIT_LIST: return "CL_INVALID_EVENT_WAIT_LIST";
    case CL_INVALID_PLATFORM: return "CL_INVALID_PLATFORM";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR (no OpenCL driver installed)";
    default: return "OpenCL error";
    }
}

#define CL_TRY(call, what)                                                                \
    do {                                                                                  \
        cl_int e_ = (call);                                                               \
        if (e_ != CL_SUCCESS)                                                             \
            return mpe_error(err, -EIO, "OpenCL: %s failed: %s (%d)", what,               \
                             cl_error_name(e_), (int)e_);                                 \
    } while (0)

/* Every device of every platform, in platform order: --device N indexes
 * this list.  Returns the count (<= max) or a negative cl error. */
static int list_devices(cl_device_id *out, cl_device_type *type, int max)
{
    cl_platform_id plat[16];
    cl_uint np = 0;
    int n = 0;
    cl_int e = clGetPlatformIDs(16, plat, &np);
    if (e != CL_SUCCESS)
        return e < 0 ? e : -1;
    for (cl_uint p = 0; p < np && n < max; p++) {
        cl_uint nd = 0;
        cl_device_id dev[32];
        if (clGetDeviceIDs(plat[p], CL_DEVICE_TYPE_ALL, 32, dev, &nd) != CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < nd && n < max; d++) {
            out[n] = dev[d];
            if (clGetDeviceInfo(dev[d], CL_DEVICE_TYPE, sizeof(type[n]), &type[n], NULL) != CL_SUCCESS)
                type[n] = CL_DEVICE_TYPE_DEFAULT;
            n++;
        }
    }
    return n;
}

/* --device N, else the first GPU, else the first device. */
static int pick_device(int index, cl_device_id *dev, int *is_gpu, char *why, size_t why_size)
{
    cl_device_id devs[64];
    cl_device_type type[64];
    int n = list_devices(devs, type, 64), pick = -1;

    if (n < 0) {
        snprintf(why, why_size, "no OpenCL platform (%s)", cl_error_name(n));
        return -ENODEV;
    }
    if (n == 0) {
        snprintf(why, why_size, "no OpenCL device");
        return -ENODEV;
    }
    if (index >= 0) {
        if (index >= n) {
            snprintf(why, why_size, "--device %d: only %d OpenCL device%s (0..%d)", index, n,
                     n == 1 ? "" : "s", n - 1);
            return -ENODEV;
        }
        pick = index;
    } else {
        for (int i = 0; i < n && pick < 0; i++)
            if (type[i] & CL_DEVICE_TYPE_GPU)
                pick = i;
        if (pick < 0)
            pick = 0;
    }
    *dev = devs[pick];
    *is_gpu = (type[pick] & CL_DEVICE_TYPE_GPU) != 0;
    char name[128] = "?";
    clGetDeviceInfo(devs[pick], CL_DEVICE_NAME, sizeof(name), name, NULL);
    snprintf(why, why_size, "device %d: %s (%s)", pick, name, *is_gpu ? "GPU" : "not a GPU");
    return 0;
}

static int ocl_probe(int device, int for_auto, char *why, size_t why_size)
{
    cl_device_id dev;
    int is_gpu = 0, ret;

    /* auto takes only a GPU, and no GPU works without a device node: then
     * the ICDs (PoCL: LLVM, its signal handlers) are not even loaded */
    if (for_auto && !gpu_has_device_node("/dev")) {
        snprintf(why, why_size, "no GPU device node in /dev, so --backend auto does not load "
                                "OpenCL (use --backend opencl)");
        return -ENODEV;
    }
    if ((ret = pick_device(device, &dev, &is_gpu, why, why_size)) < 0)
        return ret;
    if (for_auto && !is_gpu) {
        char name[160];
        snprintf(name, sizeof(name), "%s", why);
        snprintf(why, why_size, "%s; --backend auto wants a GPU (use --backend opencl)", name);
        return -ENODEV;
    }
    return 0;
}

static void release_event(cl_event *e)
{
    if (*e) {
        clReleaseEvent(*e);
        *e = NULL;
    }
}

static void release_slot_events(OclSlot *s)
{
    for (int c = 0; c < 3; c++) {
        release_event(&s->ev_upload[c]);
        release_event(&s->ev_planes[c]);
    }
    release_event(&s->ev_convert);
    release_event(&s->ev_search);
    release_event(&s->ev_coarse);
    release_event(&s->ev_centre);
    release_event(&s->ev_mv);
    release_event(&s->ev_intra);
}

/* The last of a stage's events (NULL entries skipped). */
static cl_event last_event(cl_event *ev)
{
    return ev[2] ? ev[2] : ev[1] ? ev[1] : ev[0];
}

static void ocl_close(GpuContext *g)
{
    if (!g)
        return;
    if (g->q)
        clFinish(g->q);
    for (int i = 0; g->slot && i < g->slots; i++) {
        OclSlot *s = &g->slot[i];
        release_slot_events(s);
        if (s->in)
            clEnqueueUnmapMemObject(g->q, s->h_in, s->in, 0, NULL, NULL);
        if (s->out)
            clEnqueueUnmapMemObject(g->q, s->h_out, s->out, 0, NULL, NULL);
        if (s->yuv)
            clEnqueueUnmapMemObject(g->q, s->h_yuv, s->yuv, 0, NULL, NULL);
        if (s->intra)
            clEnqueueUnmapMemObject(g->q, s->h_intra, s->intra, 0, NULL, NULL);
        if (g->q)
            clFinish(g->q);
        cl_mem m[] = { s->d_rgb, s->d_plane[0], s->d_plane[1], s->d_plane[2], s->d_mv, s->h_in, s->h_out,
                       s->d_half, s->d_quarter, s->h_yuv, s->d_intra, s->h_intra };
        for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++)
            if (m[k])
                clReleaseMemObject(m[k]);
    }
    free(g->slot);
    if (g->d_coarse)
        clReleaseMemObject(g->d_coarse);
    if (g->d_centres)
        clReleaseMemObject(g->d_centres);
    cl_kernel ks[] = { g->k_convert, g->k_decimate, g->k_coarse, g->k_centre, g->k_intra };
    for (size_t k = 0; k < sizeof(ks) / sizeof(ks[0]); k++)
        if (ks[k])
            clReleaseKernel(ks[k]);
    for (int v = 0; v < WS_VARIANTS; v++)
        if (g->k_window[v])
            clReleaseKernel(g->k_window[v]);
    if (g->prog)
        clReleaseProgram(g->prog);
    if (g->q)
        clReleaseCommandQueue(g->q);
    if (g->ctx)
        clReleaseContext(g->ctx);
    free(g);
}

/* ---- compiled programs cached by device and source (x264's habit) ----
 *
 * NVIDIA's OpenCL compiles the source on every run (1.03 s of a run's
 * start on the H100); the binary it hands back loads in a fraction of that.
 * The file is $XDG_CACHE_HOME/mpegenc/ocl-<hash>.bin (~/.cache without
 * XDG_CACHE_HOME), the hash (FNV-1a, 64 bits) taken over the source, the
 * build options, the device's name and version, and the driver's and the
 * platform's versions, so a new driver or kernel builds afresh.  A missing,
 * unreadable or refused file means a build from source, whose binary is then
 * written under a temporary name and renamed (runs at once never read half
 * a file); a failure to write is no error.  MPE_OCL_CACHE=0 turns it off. */

#define OCL_BUILD_OPTIONS "-cl-std=CL1.2"
/* A CPU device (PoCL) builds one window_search variant (plan_window) */
#define OCL_BUILD_OPTIONS_CPU OCL_BUILD_OPTIONS " -DMPE_OCL_ONE_VARIANT"

static const char *build_options(const GpuContext *g)
{
    return g->is_gpu ? OCL_BUILD_OPTIONS : OCL_BUILD_OPTIONS_CPU;
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

/* The cache file of this device and source; -1 if there is none to use. */
static int cache_path(const GpuContext *g, char *path, size_t size)
{
    const char *off = getenv("MPE_OCL_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    const cl_device_info dev_info[] = { CL_DEVICE_NAME, CL_DEVICE_VERSION, CL_DRIVER_VERSION };
    char text[1024], dir[900];
    cl_platform_id plat;
    uint64_t h = 0xcbf29ce484222325ULL;

    if ((off && !strcmp(off, "0")) || (!(xdg && *xdg) && !(home && *home)))
        return -1;
    h = fnv1a(h, mpe_frontend_cl_source, strlen(mpe_frontend_cl_source));
    h = fnv1a(h, build_options(g), strlen(build_options(g)) + 1);
    for (size_t i = 0; i < sizeof(dev_info) / sizeof(dev_info[0]); i++) {
        size_t n = 0;
        if (clGetDeviceInfo(g->dev, dev_info[i], sizeof(text), text, &n) != CL_SUCCESS)
            return -1;
        h = fnv1a(h, text, n);
    }
    if (clGetDeviceInfo(g->dev, CL_DEVICE_PLATFORM, sizeof(plat), &plat, NULL) == CL_SUCCESS) {
        size_t n = 0;
        if (clGetPlatformInfo(plat, CL_PLATFORM_VERSION, sizeof(text), text, &n) == CL_SUCCESS)
            h = fnv1a(h, text, n);
    }
    if (xdg && *xdg)
        snprintf(dir, sizeof(dir), "%s", xdg);
    else
        snprintf(dir, sizeof(dir), "%s/.cache", home);
    if ((size_t)snprintf(path, size, "%s/mpegenc/ocl-%016llx.bin", dir, (unsigned long long)h) >= size)
        return -1;
    return 0;
}

/* The program from the cache file, built; 0, or -1 (nothing kept). */
static int cache_load(GpuContext *g, const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char *bin = NULL;
    long n;
    cl_int e, status;

    if (!f)
        return -1;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && n < (1L << 28) &&
        fseek(f, 0, SEEK_SET) == 0 && (bin = malloc((size_t)n)) &&
        fread(bin, 1, (size_t)n, f) == (size_t)n) {
        const size_t len = (size_t)n;
        const unsigned char *b = bin;
        g->prog = clCreateProgramWithBinary(g->ctx, 1, &g->dev, &len, &b, &status, &e);
        if (e == CL_SUCCESS && status == CL_SUCCESS &&
            clBuildProgram(g->prog, 1, &g->dev, build_options(g), NULL, NULL) == CL_SUCCESS) {
            free(bin);
            fclose(f);
            return 0;
        }
        if (g->prog)
            clReleaseProgram(g->prog);
        g->prog = NULL;
    }
    free(bin);
    fclose(f);
    return -1;
}

/* The built program's binary into the cache file, quietly best-effort. */
static void cache_store(GpuContext *g, const char *path)
{
    char dir[1024], tmp[1100];
    size_t n = 0;
    unsigned char *bin;
    FILE *f;

    if (clGetProgramInfo(g->prog, CL_PROGRAM_BINARY_SIZES, sizeof(n), &n, NULL) != CL_SUCCESS || !n ||
        !(bin = malloc(n)))
        return;
    if (clGetProgramInfo(g->prog, CL_PROGRAM_BINARIES, sizeof(bin), &bin, NULL) == CL_SUCCESS) {
        /* the directory and its parent (~/.cache may not exist yet) */
        snprintf(dir, sizeof(dir), "%s", path);
        *strrchr(dir, '/') = '\0';
        char *up = strrchr(dir, '/');
        if (up) {
            *up = '\0';
            mkdir(dir, 0755);
            *up = '/';
        }
        mkdir(dir, 0755);
        snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
        if ((f = fopen(tmp, "wb"))) {
            const int ok = fwrite(bin, 1, n, f) == n;
            if (fclose(f) == 0 && ok && rename(tmp, path) == 0)
                tmp[0] = '\0';
            if (tmp[0])
                remove(tmp);
        }
    }
    free(bin);
}

static int ocl_build(GpuContext *g, MpeError *err)
{
    const char *src = mpe_frontend_cl_source;
    char path[1024];
    const int cached = cache_path(g, path, sizeof(path)) == 0;
    cl_int e = CL_SUCCESS;

    if (cached && cache_load(g, path) == 0)
        goto kernels;
    g->prog = clCreateProgramWithSource(g->ctx, 1, &src, NULL, &e);
    CL_TRY(e, "clCreateProgramWithSource");
    e = clBuildProgram(g->prog, 1, &g->dev, build_options(g), NULL, NULL);
    if (e == CL_SUCCESS && cached)
        cache_store(g, path);
    if (e != CL_SUCCESS) {
        char log[2048] = "";
        clGetProgramBuildInfo(g->prog, g->dev, CL_PROGRAM_BUILD_LOG, sizeof(log) - 1, log, NULL);
        for (char *p = log; *p; p++)   /* one line for the message */
            if (*p == '\n')
                *p = ' ';
        return mpe_error(err, -EIO, "OpenCL: kernel build failed (%s): %.300s", cl_error_name(e), log);
    }
kernels:
    g->k_convert = clCreateKernel(g->prog, "convert_rgb", &e);
    CL_TRY(e, "clCreateKernel(convert_rgb)");
    for (int v = 0; v < (g->is_gpu ? WS_VARIANTS : 1); v++) {
        char name[32];
        snprintf(name, sizeof(name), "window_search_%d", ws_ny[v]);
        g->k_window[v] = clCreateKernel(g->prog, name, &e);
        CL_TRY(e, "clCreateKernel(window_search)");
        CL_TRY(clGetKernelWorkGroupInfo(g->k_window[v], g->dev, CL_KERNEL_WORK_GROUP_SIZE,
                                        sizeof(size_t), &g->window_max_wg[v], NULL),
               "clGetKernelWorkGroupInfo");
    }
    g->k_decimate = clCreateKernel(g->prog, "decimate", &e);
    CL_TRY(e, "clCreateKernel(decimate)");
    g->k_coarse = clCreateKernel(g->prog, "hier_coarse", &e);
    CL_TRY(e, "clCreateKernel(hier_coarse)");
    g->k_centre = clCreateKernel(g->prog, "hier_centre", &e);
    CL_TRY(e, "clCreateKernel(hier_centre)");
    g->k_intra = clCreateKernel(g->prog, "intra_cost", &e);
    CL_TRY(e, "clCreateKernel(intra_cost)");
    return 0;
}

static int ocl_alloc_slot(GpuContext *g, int slot, MpeError *err)
{
    const GpuGeometry *geo = g->geo;
    OclSlot *s = &g->slot[slot];
    cl_int e;

    for (int c = 0; c < 3; c++) {
        s->d_plane[c] = clCreateBuffer(g->ctx, CL_MEM_READ_WRITE,
                                       geo->plane_off[c + 1] - geo->plane_off[c], NULL, &e);
        CL_TRY(e, "clCreateBuffer(plane)");
    }
    s->d_mv = clCreateBuffer(g->ctx, CL_MEM_READ_WRITE, geo->mv_size, NULL, &e);
    CL_TRY(e, "clCreateBuffer(vectors)");
    if (g->pyramid) {
        const size_t half = (size_t)(geo->plane_w[0] / 2) * (geo->plane_h[0] / 2);
        s->d_half = clCreateBuffer(g->ctx, CL_MEM_READ_WRITE, half, NULL, &e);
        CL_TRY(e, "clCreateBuffer(half)");
        s->d_quarter = clCreateBuffer(g->ctx, CL_MEM_READ_WRITE, half / 4, NULL, &e);
        CL_TRY(e, "clCreateBuffer(quarter)");
        if (!g->d_coarse) {
            g->d_coarse = clCreateBuffer(g->ctx, CL_MEM_READ_WRITE,
                                         (size_t)geo->mb_w * geo->mb_h * sizeof(cl_uint), NULL, &e);
            CL_TRY(e, "clCreateBuffer(coarse)");
            g->d_centres = clCreateBuffer(g->ctx, CL_MEM_READ_WRITE,
                                          (size_t)geo->mb_w * geo->mb_h * 2 * sizeof(cl_uint), NULL, &e);
            CL_TRY(e, "clCreateBuffer(centres)");
        }
    }
    s->h_out = clCreateBuffer(g->ctx, CL_MEM_WRITE_ONLY | CL_MEM_ALLOC_HOST_PTR,
                              geo->plane_off[3] + geo->mv_size, NULL, &e);
    CL_TRY(e, "clCreateBuffer(pinned output)");
    s->out = clEnqueueMapBuffer(g->q, s->h_out, CL_TRUE, CL_MAP_READ, 0, geo->plane_off[3] + geo->mv_size,
                                0, NULL, NULL, &e);
    CL_TRY(e, "clEnqueueMapBuffer(output)");
    /* the picture's planes 64-aligned in the mapping (mpe_picture_layout) */
    const size_t yuv_size = mpe_picture_layout(&s->host_pic, geo->width, geo->height, NULL) + 64;
    s->h_yuv = clCreateBuffer(g->ctx, CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR, yuv_size, NULL, &e);
    CL_TRY(e, "clCreateBuffer(pinned planes)");
    s->yuv = clEnqueueMapBuffer(g->q, s->h_yuv, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, yuv_size, 0, NULL,
                                NULL, &e);
    CL_TRY(e, "clEnqueueMapBuffer(planes)");
    mpe_picture_layout(&s->host_pic, geo->width, geo->height,
                       s->yuv + (64 - (uintptr_t)s->yuv % 64) % 64);
    if (g->intra_costs) {
        const size_t bytes = (size_t)geo->mb_w * geo->mb_h * sizeof(cl_uint);
        s->d_intra = clCreateBuffer(g->ctx, CL_MEM_READ_WRITE, bytes, NULL, &e);
        CL_TRY(e, "clCreateBuffer(intra costs)");
        s->h_intra = clCreateBuffer(g->ctx, CL_MEM_WRITE_ONLY | CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &e);
        CL_TRY(e, "clCreateBuffer(pinned intra costs)");
        s->intra = clEnqueueMapBuffer(g->q, s->h_intra, CL_TRUE, CL_MAP_READ, 0, bytes, 0, NULL, NULL, &e);
        CL_TRY(e, "clEnqueueMapBuffer(intra costs)");
    }
    return 0;
}

static int ocl_open(GpuContext **out, const GpuConfig *cfg, const GpuGeometry *geo, MpeError *err)
{
    GpuContext *g;
    char why[256];
    int is_gpu, ret;
    cl_int e;

    if (!(*out = g = calloc(1, sizeof(*g))) ||
        !(g->slot = calloc((size_t)cfg->slots, sizeof(*g->slot))))
        return mpe_error(err, -ENOMEM, "out of memory");
    g->geo = geo;
    g->slots = cfg->slots;
    g->pyramid = cfg->pyramid;
    g->intra_costs = cfg->intra_costs;
    if ((ret = pick_device(cfg->device, &g->dev, &is_gpu, why, sizeof(why))) < 0)
        return mpe_error(err, ret, "OpenCL: %s", why);
    g->is_gpu = is_gpu;
    mpe_log(cfg->log, MPE_LOG_INFO, "OpenCL front end on %s", why);

    cl_ulong local_mem = 0;
    clGetDeviceInfo(g->dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof(local_mem), &local_mem, NULL);
    g->local_mem = local_mem;
    /* the smallest search plan at R = 64: one macroblock, 8 rows per item
     * (151 x 148 bytes of window), its block, centres, partial minima and
     * one key per item (plan_window sizes the real ones) */
    if (local_mem < WS_LOCAL_FIXED + 151 * 148 + 64 * 8)
        return mpe_error(err, -ENODEV, "OpenCL: device has %lu bytes of local memory, need %d",
                         (unsigned long)local_mem, WS_LOCAL_FIXED + 151 * 148 + 64 * 8);
    g->ctx = clCreateContext(NULL, 1, &g->dev, NULL, NULL, &e);
    CL_TRY(e, "clCreateContext");
    g->q = clCreateCommandQueue(g->ctx, g->dev, CL_QUEUE_PROFILING_ENABLE, &e);
    CL_TRY(e, "clCreateCommandQueue");
    return 0;
}

static int ocl_input(GpuContext *g, int slot, GpuInput *in, MpeError *err)
{
    OclSlot *s = &g->slot[slot];
    /* the pinned input buffer may still feed this slot's previous upload */
    cl_event up = last_event(s->ev_upload);
    if (up)
        CL_TRY(clWaitForEvents(1, &up), "clWaitForEvents(upload)");
    release_slot_events(s);
    if (in->rgb && !s->h_in) {
        /* 25 MB of pinned and device memory a slot that YUV input never
         * uses (and pinning it at open delays the device's start) */
        const GpuGeometry *geo = g->geo;
        cl_int e;
        s->d_rgb = clCreateBuffer(g->ctx, CL_MEM_READ_ONLY, geo->rgb_size, NULL, &e);
        CL_TRY(e, "clCreateBuffer(rgb)");
        s->h_in = clCreateBuffer(g->ctx, CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR, geo->rgb_size, NULL, &e);
        CL_TRY(e, "clCreateBuffer(pinned input)");
        s->in = clEnqueueMapBuffer(g->q, s->h_in, CL_TRUE, CL_MAP_WRITE, 0, geo->rgb_size, 0, NULL, NULL, &e);
        CL_TRY(e, "clEnqueueMapBuffer(input)");
    }
    in->staging = s->in;
    in->pic = &s->host_pic;
    return 0;
}

#define ARG(k, i, type, v)                                                                \
    do {                                                                                  \
        type v_ = (v);                                                                    \
        CL_TRY(clSetKernelArg(k, i, sizeof(type), &v_), "clSetKernelArg");                \
    } while (0)

static int ocl_submit(GpuContext *g, int slot, const MpeFrame *rgb, MpeError *err)
{
    const GpuGeometry *geo = g->geo;
    OclSlot *s = &g->slot[slot];

    if (rgb) {
        CL_TRY(clEnqueueWriteBuffer(g->q, s->d_rgb, CL_FALSE, 0, geo->rgb_size, s->in, 0, NULL,
                                    &s->ev_upload[0]), "clEnqueueWriteBuffer(rgb)");
        cl_int w = geo->width, h = geo->height, stride = (cl_int)geo->width * 3;
        cl_int lw = geo->plane_w[0], lh = geo->plane_h[0];
        cl_kernel k = g->k_convert;
        CL_TRY(clSetKernelArg(k, 0, sizeof(cl_mem), &s->d_rgb), "clSetKernelArg");
        CL_TRY(clSetKernelArg(k, 1, sizeof(cl_int), &stride), "clSetKernelArg");
        CL_TRY(clSetKernelArg(k, 2, sizeof(cl_int), &w), "clSetKernelArg");
        CL_TRY(clSetKernelArg(k, 3, sizeof(cl_int), &h), "clSetKernelArg");
        for (int c = 0; c < 3; c++)
            CL_TRY(clSetKernelArg(k, 4 + c, sizeof(cl_mem), &s->d_plane[c]), "clSetKernelArg");
        CL_TRY(clSetKernelArg(k, 7, sizeof(cl_int), &lw), "clSetKernelArg");
        CL_TRY(clSetKernelArg(k, 8, sizeof(cl_int), &lh), "clSetKernelArg");
        size_t local[2] = { CONV_T, CONV_T };
        size_t global[2] = { (size_t)(geo->plane_w[1] + CONV_T - 1) / CONV_T * CONV_T,
                             (size_t)(geo->plane_h[1] + CONV_T - 1) / CONV_T * CONV_T };
        CL_TRY(clEnqueueNDRangeKernel(g->q, k, 2, NULL, global, local, 0, NULL, &s->ev_convert),
               "clEnqueueNDRangeKernel(convert_rgb)");
    } else {
        const MpePicture *hp = &s->host_pic;
        for (int c = 0; c < 3; c++) {
            const size_t origin[3] = { 0, 0, 0 };
            const size_t region[3] = { (size_t)geo->plane_w[c], (size_t)geo->plane_h[c], 1 };
            CL_TRY(clEnqueueWriteBufferRect(g->q, s->d_plane[c], CL_FALSE, origin, origin, region,
                                            (size_t)geo->plane_w[c], 0, (size_t)hp->stride[c], 0,
                                            hp->plane[c], 0, NULL, &s->ev_upload[c]),
                   "clEnqueueWriteBufferRect(plane)");
        }
    }
    s->converted_on_device = rgb != NULL;
    if (g->pyramid) {
        /* luma -> 1/2 -> 1/4, in queue order after the planes are in */
        cl_mem from[2] = { s->d_plane[0], s->d_half }, to[2] = { s->d_half, s->d_quarter };
        for (int l = 0; l < 2; l++) {
            cl_int sw = geo->plane_w[0] >> l, dw = sw / 2, dh = (geo->plane_h[0] >> l) / 2;
            cl_kernel k = g->k_decimate;
            CL_TRY(clSetKernelArg(k, 0, sizeof(cl_mem), &from[l]), "clSetKernelArg");
            CL_TRY(clSetKernelArg(k, 1, sizeof(cl_int), &sw), "clSetKernelArg");
            CL_TRY(clSetKernelArg(k, 2, sizeof(cl_mem), &to[l]), "clSetKernelArg");
            CL_TRY(clSetKernelArg(k, 3, sizeof(cl_int), &dw), "clSetKernelArg");
            CL_TRY(clSetKernelArg(k, 4, sizeof(cl_int), &dh), "clSetKernelArg");
            size_t global[2] = { (size_t)dw, (size_t)dh };
            CL_TRY(clEnqueueNDRangeKernel(g->q, k, 2, NULL, global, NULL, 0, NULL, NULL),
                   "clEnqueueNDRangeKernel(decimate)");
        }
    }
    if (rgb)   /* a YUV frame's planes are on the host already (host_pic) */
        for (int c = 0; c < 3; c++)
            CL_TRY(clEnqueueReadBuffer(g->q, s->d_plane[c], CL_FALSE, 0,
                                       geo->plane_off[c + 1] - geo->plane_off[c],
                                       s->out + geo->plane_off[c], 0, NULL, &s->ev_planes[c]),
                   "clEnqueueReadBuffer(planes)");
    if (g->intra_costs) {
        /* 4 MB of luma read once, after the planes are in (in queue order) */
        const cl_int n_mb = geo->mb_w * geo->mb_h;
        const size_t local = 64, global = ((size_t)n_mb + local - 1) / local * local;
        cl_kernel k = g->k_intra;
        CL_TRY(clSetKernelArg(k, 0, sizeof(cl_mem), &s->d_plane[0]), "clSetKernelArg");
        ARG(k, 1, cl_int, geo->plane_w[0]);
        ARG(k, 2, cl_int, geo->mb_w);
        ARG(k, 3, cl_int, n_mb);
        CL_TRY(clSetKernelArg(k, 4, sizeof(cl_mem), &s->d_intra), "clSetKernelArg");
        CL_TRY(clEnqueueNDRangeKernel(g->q, k, 1, NULL, &global, &local, 0, NULL, NULL),
               "clEnqueueNDRangeKernel(intra_cost)");
        CL_TRY(clEnqueueReadBuffer(g->q, s->d_intra, CL_FALSE, 0, (size_t)n_mb * sizeof(cl_uint), s->intra,
                                   0, NULL, &s->ev_intra),
               "clEnqueueReadBuffer(intra costs)");
    }
    CL_TRY(clFlush(g->q), "clFlush");
    return 0;
}

/* Launch shape of one window search: variant, macroblocks per
 * work-group, items per macroblock, window geometry. */
typedef struct WindowPlan {
    int variant, ny, chunks, mbs, tpm, threads, pitch, win_rows;
    size_t win_bytes;
} WindowPlan;

/* frontend_cuda.cu's cost model (instructions per dx column: NY*64 SADs
 * plus 9 per reference row; idle lanes of the last warp cost like busy
 * ones; 1% per work-group for staging and synchronising), over the
 * variants, strips of 8, 4, 2, 1 macroblocks and what local memory and
 * each variant's largest work-group allow.  separate: one window per
 * macroblock (per-macroblock centres).  A CPU device (PoCL) gets one
 * variant and one work-group size, as it compiles a kernel afresh for every
 * work-group size it is launched with (a test run of test_gpu_frontend
 * took 6 min instead of 46 s with every plan open).  0, or -1 if nothing
 * fits. */
static int plan_window(const GpuContext *g, int range, int separate, WindowPlan *out)
{
    const int side = 2 * range + 1;
    double best_cost = 1e300;
    for (int v = 0; v < (g->is_gpu ? WS_VARIANTS : 1); v++) {
        const int ny = ws_ny[v], chunks = (side + ny - 1) / ny;
        const int max_t = (int)(g->window_max_wg[v] < WS_MAX_THREADS ? g->window_max_wg[v] : WS_MAX_THREADS);
        const double per_item = ny * 64.0 + (ny + 15) * 9.0;
        for (int mbs = WS_MAX_MBS; mbs >= 1; mbs /= 2) {
            if (mbs > g->geo->mb_w || mbs > max_t)
                continue;
            const int per_mb = side * chunks;
            int rounds = (mbs * per_mb + max_t - 1) / max_t, tpm;
            while ((tpm = (per_mb + rounds - 1) / rounds) * mbs > max_t)
                rounds++;
            if (!g->is_gpu)
                tpm = WS_CPU_THREADS / mbs;
            const int threads = tpm * mbs;
            const int pitch = ((separate ? 16 : 16 * mbs) + 2 * range + 4 + 3) & ~3;
            const int win_rows = chunks * ny + 15;
            const size_t win_bytes = (size_t)(separate ? mbs : 1) * win_rows * pitch;
            if (WS_LOCAL_FIXED + win_bytes + (size_t)threads * 8 > g->local_mem)
                continue;
            const double cost = (double)rounds * ((threads + 31) / 32 * 32) * per_item / mbs *
                                (1.0 + 0.01 * 8 / mbs);
            if (cost < best_cost) {
                best_cost = cost;
                *out = (WindowPlan){ v, ny, chunks, mbs, tpm, threads, pitch, win_rows, win_bytes };
            }
        }
    }
    return best_cost < 1e300 ? 0 : -1;
}

/* Queues window_search: centre +-range of every macroblock inside |d| <=
 * reach and the plane, centres from d_centres (2 words per macroblock) if
 * given, else (0, 0) with the zero vector's SAD taken from the window. */
static int enqueue_window(GpuContext *g, OclSlot *s, cl_mem ref, int range, int reach,
                          cl_mem d_centres, MpeError *err)
{
    const GpuGeometry *geo = g->geo;
    WindowPlan p = { 0 };
    if (plan_window(g, range, d_centres != NULL, &p) < 0)
        return mpe_error(err, -ENODEV, "OpenCL: no search work-group fits the device at range %d", range);
    cl_kernel k = g->k_window[p.variant];
    ARG(k, 0, cl_mem, s->d_plane[0]);
    ARG(k, 1, cl_mem, ref);
    ARG(k, 2, cl_int, geo->plane_w[0]);
    ARG(k, 3, cl_int, geo->plane_h[0]);
    ARG(k, 4, cl_int, geo->mb_w);
    ARG(k, 5, cl_int, range);
    ARG(k, 6, cl_int, reach);
    ARG(k, 7, cl_int, p.mbs);
    ARG(k, 8, cl_int, p.tpm);
    ARG(k, 9, cl_int, p.chunks);
    ARG(k, 10, cl_int, p.pitch);
    ARG(k, 11, cl_mem, d_centres ? d_centres : s->d_mv);   /* unread without centres */
    ARG(k, 12, cl_int, d_centres != NULL);
    ARG(k, 13, cl_mem, s->d_mv);
    CL_TRY(clSetKernelArg(k, 14, p.win_bytes, NULL), "clSetKernelArg(window)");
    CL_TRY(clSetKernelArg(k, 15, (size_t)p.threads * 8, NULL), "clSetKernelArg(keys)");
    const size_t local[2] = { (size_t)p.threads, 1 };
    const size_t global[2] = { (size_t)((geo->mb_w + p.mbs - 1) / p.mbs) * p.threads, (size_t)geo->mb_h };
    CL_TRY(clEnqueueNDRangeKernel(g->q, k, 2, NULL, global, local, 0, NULL, &s->ev_search),
           "clEnqueueNDRangeKernel(window_search)");
    return 0;
}

static int ocl_search_hier(GpuContext *g, int cur, int ref, int range, int reach, int ref_has_mv,
                           MpeError *err)
{
    const GpuGeometry *geo = g->geo;
    OclSlot *s = &g->slot[cur], *r = &g->slot[ref];
    const size_t nmb = (size_t)geo->mb_w * geo->mb_h;
    cl_kernel k = g->k_coarse;
    int ret;

    release_event(&s->ev_coarse);
    release_event(&s->ev_centre);
    release_event(&s->ev_search);
    release_event(&s->ev_mv);
    ARG(k, 0, cl_mem, s->d_quarter);
    ARG(k, 1, cl_mem, r->d_quarter);
    ARG(k, 2, cl_mem, s->d_half);
    ARG(k, 3, cl_mem, r->d_half);
    ARG(k, 4, cl_int, geo->plane_w[0] / 4);
    ARG(k, 5, cl_int, geo->plane_h[0] / 4);
    ARG(k, 6, cl_int, geo->mb_w);
    ARG(k, 7, cl_int, reach);
    ARG(k, 8, cl_mem, g->d_coarse);
    size_t local = COARSE_WG, global = nmb * COARSE_WG;   /* a work-group per macroblock */
    CL_TRY(clEnqueueNDRangeKernel(g->q, k, 1, NULL, &global, &local, 0, NULL, &s->ev_coarse),
           "clEnqueueNDRangeKernel(hier_coarse)");
    k = g->k_centre;
    ARG(k, 0, cl_mem, s->d_plane[0]);
    ARG(k, 1, cl_mem, r->d_plane[0]);
    ARG(k, 2, cl_int, geo->plane_w[0]);
    ARG(k, 3, cl_int, geo->plane_h[0]);
    ARG(k, 4, cl_int, geo->mb_w);
    ARG(k, 5, cl_int, geo->mb_h);
    ARG(k, 6, cl_int, reach);
    ARG(k, 7, cl_mem, g->d_coarse);
    ARG(k, 8, cl_mem, r->d_mv);   /* ref's own vectors: valid when ref_has_mv */
    ARG(k, 9, cl_int, ref_has_mv);
    ARG(k, 10, cl_mem, g->d_centres);
    local = HIER_WG;   /* a work-item per macroblock */
    global = (nmb + HIER_WG - 1) / HIER_WG * HIER_WG;
    CL_TRY(clEnqueueNDRangeKernel(g->q, k, 1, NULL, &global, &local, 0, NULL, &s->ev_centre),
           "clEnqueueNDRangeKernel(hier_centre)");
    if ((ret = enqueue_window(g, s, r->d_plane[0], range, reach, g->d_centres, err)) < 0)
        return ret;
    CL_TRY(clEnqueueReadBuffer(g->q, s->d_mv, CL_FALSE, 0, geo->mv_size, s->out + geo->plane_off[3],
                               0, NULL, &s->ev_mv),
           "clEnqueueReadBuffer(vectors)");
    CL_TRY(clFlush(g->q), "clFlush");
    return 0;
}

static int ocl_search(GpuContext *g, int cur, int ref, int range, int reach, int ref_has_mv,
                      MpeError *err)
{
    if (reach)
        return ocl_search_hier(g, cur, ref, range, reach, ref_has_mv, err);
    const GpuGeometry *geo = g->geo;
    OclSlot *s = &g->slot[cur];
    int ret;

    (void)ref_has_mv;
    release_event(&s->ev_coarse);
    release_event(&s->ev_centre);
    release_event(&s->ev_search);
    release_event(&s->ev_mv);
    if ((ret = enqueue_window(g, s, g->slot[ref].d_plane[0], range, range, NULL, err)) < 0)
        return ret;
    CL_TRY(clEnqueueReadBuffer(g->q, s->d_mv, CL_FALSE, 0, geo->mv_size, s->out + geo->plane_off[3],
                               0, NULL, &s->ev_mv),
           "clEnqueueReadBuffer(vectors)");
    CL_TRY(clFlush(g->q), "clFlush");
    return 0;
}

static int ocl_wait(GpuContext *g, int slot, int has_mv, MpeError *err)
{
    OclSlot *s = &g->slot[slot];
    cl_event ev[2];
    cl_uint n = 0;
    if (last_event(s->ev_planes))
        ev[n++] = last_event(s->ev_planes);
    if (has_mv && s->ev_mv)
        ev[n++] = s->ev_mv;
    if (n)
        CL_TRY(clWaitForEvents(n, ev), "clWaitForEvents");
    return 0;
}

static int ocl_download(GpuContext *g, int slot, MpePicture *pic, GpuMotion *mv, MpeError *err)
{
    const OclSlot *s = &g->slot[slot];
    (void)err;
    if (pic && !s->converted_on_device) {   /* a YUV frame: on the host already */
        mpe_picture_copy(pic, &s->host_pic);
        pic = NULL;
    }
    gpu_unpack_readback(pic, mv, s->out, g->geo);
    return 0;
}

static const MpePicture *ocl_host_planes(GpuContext *g, int slot)
{
    const OclSlot *s = &g->slot[slot];
    return s->converted_on_device ? NULL : &s->host_pic;
}

static int ocl_intra_costs(GpuContext *g, int slot, uint32_t *intra, MpeError *err)
{
    OclSlot *s = &g->slot[slot];
    if (!g->intra_costs || !s->ev_intra)   /* counted at every submit when asked for */
        return -ENOSYS;
    CL_TRY(clWaitForEvents(1, &s->ev_intra), "clWaitForEvents(intra costs)");
    memcpy(intra, s->intra, (size_t)g->geo->mb_w * g->geo->mb_h * sizeof(uint32_t));
    return 0;
}

static double event_ms(cl_event e)
{
    cl_ulong t0 = 0, t1 = 0;
    if (!e || clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof(t0), &t0, NULL) != CL_SUCCESS ||
        clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, NULL) != CL_SUCCESS)
        return 0;
    return (double)(t1 - t0) * 1e-6;
}

static int ocl_timings(GpuContext *g, int slot, int has_mv, GpuTimings *t)
{
    const OclSlot *s = &g->slot[slot];
    for (int c = 0; c < 3; c++) {
        t->upload_ms += event_ms(s->ev_upload[c]);
        t->readback_ms += event_ms(s->ev_planes[c]);
    }
    t->convert_ms = event_ms(s->ev_convert);
    t->search_ms = has_mv ? event_ms(s->ev_coarse) + event_ms(s->ev_centre) + event_ms(s->ev_search) : 0;
    t->readback_ms += has_mv ? event_ms(s->ev_mv) : 0;
    return 0;
}

const GpuBackend gpu_backend_opencl = {
    .name = "opencl",
    .probe = ocl_probe,
    .open = ocl_open,
    .build = ocl_build,
    .alloc_slot = ocl_alloc_slot,
    .close = ocl_close,
    .input = ocl_input,
    .submit = ocl_submit,
    .search = ocl_search,
    .wait = ocl_wait,
    .download = ocl_download,
    .timings = ocl_timings,
    .hier = 1,
    .host_planes = ocl_host_planes,
    .intra_costs = ocl_intra_costs,
};
