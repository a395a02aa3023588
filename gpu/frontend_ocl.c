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
#include "frontend.h"

#include <CL/cl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* generated from frontend.cl by tools/embed.sh */
extern const char mpe_frontend_cl_source[];

#define SEARCH_WG 256
#define CONV_T 16

typedef struct OclSlot {
    cl_mem d_rgb, d_plane[3], d_mv;
    cl_mem h_in, h_out;          /* pinned staging, mapped for the context's life */
    uint8_t *in, *out;           /* their mapped pointers */
    /* upload and read-back of the planes are three transfers each (the RGB
     * upload one); in-order, so the last of each marks completion */
    cl_event ev_upload[3], ev_convert, ev_search, ev_planes[3], ev_mv;
    int has_mv;
} OclSlot;

struct GpuContext {
    cl_context ctx;
    cl_command_queue q;
    cl_program prog;
    cl_kernel k_convert, k_search;
    cl_device_id dev;
    int width, height, slots;
    int plane_w[3], plane_h[3], mb_w, mb_h;
    size_t plane_off[4];         /* offsets of Y, Cb, Cr (and the end) in h_out */
    OclSlot *slot;
    const MpeLog *log;
    GpuFailHook fail;
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

static int ocl_probe(int for_auto, char *why, size_t why_size)
{
    cl_device_id dev;
    int is_gpu = 0;
    int ret = gpu_fail_probe("opencl", why, why_size);
    /* the test hook wants its failure paths reachable through auto on PoCL */
    int take_cpu_device = gpu_fail_names("opencl");
    if (ret < 0)
        return ret;
    /* auto takes only a GPU, and no GPU works without a device node: then
     * the ICDs (PoCL: LLVM, its signal handlers) are not even loaded */
    if (for_auto && !take_cpu_device && !gpu_has_device_node("/dev")) {
        snprintf(why, why_size, "no GPU device node in /dev, so --backend auto does not load "
                                "OpenCL (use --backend opencl)");
        return -ENODEV;
    }
    if ((ret = pick_device(-1, &dev, &is_gpu, why, why_size)) < 0)
        return ret;
    if (for_auto && !is_gpu && !take_cpu_device) {
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
    release_event(&s->ev_mv);
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
        if (g->q)
            clFinish(g->q);
        cl_mem m[] = { s->d_rgb, s->d_plane[0], s->d_plane[1], s->d_plane[2], s->d_mv, s->h_in, s->h_out };
        for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++)
            if (m[k])
                clReleaseMemObject(m[k]);
    }
    free(g->slot);
    if (g->k_convert)
        clReleaseKernel(g->k_convert);
    if (g->k_search)
        clReleaseKernel(g->k_search);
    if (g->prog)
        clReleaseProgram(g->prog);
    if (g->q)
        clReleaseCommandQueue(g->q);
    if (g->ctx)
        clReleaseContext(g->ctx);
    free(g);
}

static int build_program(GpuContext *g, MpeError *err)
{
    const char *src = mpe_frontend_cl_source;
    cl_int e;

    g->prog = clCreateProgramWithSource(g->ctx, 1, &src, NULL, &e);
    CL_TRY(e, "clCreateProgramWithSource");
    if ((e = gpu_fail_open(&g->fail, GPU_FAIL_BUILD, err)) < 0)
        return e;
    e = clBuildProgram(g->prog, 1, &g->dev, "-cl-std=CL1.2", NULL, NULL);
    if (e != CL_SUCCESS) {
        char log[2048] = "";
        clGetProgramBuildInfo(g->prog, g->dev, CL_PROGRAM_BUILD_LOG, sizeof(log) - 1, log, NULL);
        for (char *p = log; *p; p++)   /* one line for the message */
            if (*p == '\n')
                *p = ' ';
        return mpe_error(err, -EIO, "OpenCL: kernel build failed (%s): %.300s", cl_error_name(e), log);
    }
    g->k_convert = clCreateKernel(g->prog, "convert_rgb", &e);
    CL_TRY(e, "clCreateKernel(convert_rgb)");
    g->k_search = clCreateKernel(g->prog, "motion_search", &e);
    CL_TRY(e, "clCreateKernel(motion_search)");
    return 0;
}

static int alloc_slot(GpuContext *g, OclSlot *s, MpeError *err)
{
    const size_t rgb_size = (size_t)g->width * g->height * 3;
    const size_t mv_size = (size_t)g->mb_w * g->mb_h * 3 * sizeof(cl_uint);
    const size_t in_size = rgb_size > g->plane_off[3] ? rgb_size : g->plane_off[3];
    cl_int e;

    s->d_rgb = clCreateBuffer(g->ctx, CL_MEM_READ_ONLY, rgb_size, NULL, &e);
    CL_TRY(e, "clCreateBuffer(rgb)");
    for (int c = 0; c < 3; c++) {
        s->d_plane[c] = clCreateBuffer(g->ctx, CL_MEM_READ_WRITE,
                                       (size_t)g->plane_w[c] * g->plane_h[c], NULL, &e);
        CL_TRY(e, "clCreateBuffer(plane)");
    }
    s->d_mv = clCreateBuffer(g->ctx, CL_MEM_WRITE_ONLY, mv_size, NULL, &e);
    CL_TRY(e, "clCreateBuffer(vectors)");
    /* the test hook fails the second slot, after real buffers exist */
    if (s != g->slot && (e = gpu_fail_open(&g->fail, GPU_FAIL_ALLOC, err)) < 0)
        return e;
    s->h_in = clCreateBuffer(g->ctx, CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR, in_size, NULL, &e);
    CL_TRY(e, "clCreateBuffer(pinned input)");
    s->h_out = clCreateBuffer(g->ctx, CL_MEM_WRITE_ONLY | CL_MEM_ALLOC_HOST_PTR,
                              g->plane_off[3] + mv_size, NULL, &e);
    CL_TRY(e, "clCreateBuffer(pinned output)");
    s->in = clEnqueueMapBuffer(g->q, s->h_in, CL_TRUE, CL_MAP_WRITE, 0, in_size, 0, NULL, NULL, &e);
    CL_TRY(e, "clEnqueueMapBuffer(input)");
    s->out = clEnqueueMapBuffer(g->q, s->h_out, CL_TRUE, CL_MAP_READ, 0, g->plane_off[3] + mv_size,
                                0, NULL, NULL, &e);
    CL_TRY(e, "clEnqueueMapBuffer(output)");
    return 0;
}

static int ocl_open(GpuContext **out, const GpuConfig *cfg, MpeError *err)
{
    GpuContext *g;
    char why[256];
    int is_gpu, ret;
    cl_int e;

    *out = NULL;
    if (cfg->slots < 2)
        return mpe_error(err, -EINVAL, "front end: need at least 2 frame slots, got %d", cfg->slots);
    if (!(g = calloc(1, sizeof(*g))))
        return mpe_error(err, -ENOMEM, "out of memory");
    g->width = cfg->width;
    g->height = cfg->height;
    g->slots = cfg->slots;
    g->log = cfg->log;
    gpu_fail_init(&g->fail, "opencl");
    g->mb_w = (cfg->width + 15) / 16;
    g->mb_h = (cfg->height + 15) / 16;
    for (int c = 0; c < 3; c++) {
        g->plane_w[c] = (16 * g->mb_w) >> (c ? 1 : 0);
        g->plane_h[c] = (16 * g->mb_h) >> (c ? 1 : 0);
        g->plane_off[c + 1] = g->plane_off[c] + (size_t)g->plane_w[c] * g->plane_h[c];
    }
    if ((ret = pick_device(cfg->device, &g->dev, &is_gpu, why, sizeof(why))) < 0) {
        ret = mpe_error(err, ret, "OpenCL: %s", why);
        goto fail;
    }
    mpe_log(cfg->log, MPE_LOG_INFO, "OpenCL front end on %s", why);

    cl_ulong local_mem = 0;
    clGetDeviceInfo(g->dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof(local_mem), &local_mem, NULL);
    /* the search's window at R = 64 plus its block and reduction arrays */
    if (local_mem < 144 * 144 + 256 + SEARCH_WG * 8 + 4) {
        ret = mpe_error(err, -ENODEV, "OpenCL: device has %lu bytes of local memory, need %d",
                        (unsigned long)local_mem, 144 * 144 + 256 + SEARCH_WG * 8 + 4);
        goto fail;
    }
    g->ctx = clCreateContext(NULL, 1, &g->dev, NULL, NULL, &e);
    if (e != CL_SUCCESS) {
        ret = mpe_error(err, -EIO, "OpenCL: clCreateContext failed: %s (%d)", cl_error_name(e), e);
        goto fail;
    }
    g->q = clCreateCommandQueue(g->ctx, g->dev, CL_QUEUE_PROFILING_ENABLE, &e);
    if (e != CL_SUCCESS) {
        ret = mpe_error(err, -EIO, "OpenCL: clCreateCommandQueue failed: %s (%d)", cl_error_name(e), e);
        goto fail;
    }
    if ((ret = build_program(g, err)) < 0)
        goto fail;
    if (!(g->slot = calloc((size_t)g->slots, sizeof(*g->slot)))) {
        ret = mpe_error(err, -ENOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < g->slots; i++)
        if ((ret = alloc_slot(g, &g->slot[i], err)) < 0)
            goto fail;
    *out = g;
    return 0;
fail:
    ocl_close(g);
    return ret;
}

static int ocl_submit_frame(GpuContext *g, int slot, const MpeFrame *frame, MpeError *err)
{
    OclSlot *s;
    int ret;

    if ((ret = gpu_check_slot(g->slots, slot, err)) < 0 ||
        (ret = gpu_check_frame(frame, g->width, g->height, err)) < 0)
        return ret;
    if ((ret = gpu_fail_frame(&g->fail, GPU_FAIL_SUBMIT, slot, err)) < 0)
        return ret;
    s = &g->slot[slot];
    /* the pinned input buffer may still feed this slot's previous upload */
    cl_event up = last_event(s->ev_upload);
    if (up)
        CL_TRY(clWaitForEvents(1, &up), "clWaitForEvents(upload)");
    release_slot_events(s);
    s->has_mv = 0;

    if (frame->format == MPE_FRAME_RGB24) {
        const size_t row = (size_t)g->width * 3;
        for (int y = 0; y < g->height; y++)
            memcpy(s->in + y * row, frame->data[0] + (size_t)y * frame->stride[0], row);
        CL_TRY(clEnqueueWriteBuffer(g->q, s->d_rgb, CL_FALSE, 0, row * g->height, s->in, 0, NULL,
                                    &s->ev_upload[0]), "clEnqueueWriteBuffer(rgb)");
        cl_int w = g->width, h = g->height, stride = (cl_int)row, lw = g->plane_w[0], lh = g->plane_h[0];
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
        size_t global[2] = { (size_t)(g->plane_w[1] + CONV_T - 1) / CONV_T * CONV_T,
                             (size_t)(g->plane_h[1] + CONV_T - 1) / CONV_T * CONV_T };
        CL_TRY(clEnqueueNDRangeKernel(g->q, k, 2, NULL, global, local, 0, NULL, &s->ev_convert),
               "clEnqueueNDRangeKernel(convert_rgb)");
    } else {
        /* already YUV: pad on the host into the pinned buffer, upload as is */
        MpePicture view = { .width = g->width, .height = g->height, .mb_width = g->mb_w,
                            .mb_height = g->mb_h };
        for (int c = 0; c < 3; c++) {
            view.plane[c] = s->in + g->plane_off[c];
            view.stride[c] = view.plane_w[c] = g->plane_w[c];
            view.plane_h[c] = g->plane_h[c];
        }
        mpe_picture_from_yuv(&view, frame);
        for (int c = 0; c < 3; c++)
            CL_TRY(clEnqueueWriteBuffer(g->q, s->d_plane[c], CL_FALSE, 0,
                                        g->plane_off[c + 1] - g->plane_off[c], s->in + g->plane_off[c],
                                        0, NULL, &s->ev_upload[c]),
                   "clEnqueueWriteBuffer(plane)");
    }
    for (int c = 0; c < 3; c++)
        CL_TRY(clEnqueueReadBuffer(g->q, s->d_plane[c], CL_FALSE, 0,
                                   g->plane_off[c + 1] - g->plane_off[c], s->out + g->plane_off[c], 0,
                                   NULL, &s->ev_planes[c]),
               "clEnqueueReadBuffer(planes)");
    CL_TRY(clFlush(g->q), "clFlush");
    return 0;
}

static int ocl_motion_search(GpuContext *g, int cur, int ref, int range, MpeError *err)
{
    int ret;
    if ((ret = gpu_check_slot(g->slots, cur, err)) < 0 ||
        (ret = gpu_check_slot(g->slots, ref, err)) < 0 || (ret = gpu_check_range(range, err)) < 0)
        return ret;
    if ((ret = gpu_fail_frame(&g->fail, GPU_FAIL_SEARCH, cur, err)) < 0)
        return ret;
    OclSlot *s = &g->slot[cur];
    cl_kernel k = g->k_search;
    cl_int pw = g->plane_w[0], ph = g->plane_h[0], mbw = g->mb_w, r = range;
    const size_t win = (size_t)(16 + 2 * range) * (16 + 2 * range);

    release_event(&s->ev_search);
    release_event(&s->ev_mv);
    CL_TRY(clSetKernelArg(k, 0, sizeof(cl_mem), &s->d_plane[0]), "clSetKernelArg");
    CL_TRY(clSetKernelArg(k, 1, sizeof(cl_mem), &g->slot[ref].d_plane[0]), "clSetKernelArg");
    CL_TRY(clSetKernelArg(k, 2, sizeof(cl_int), &pw), "clSetKernelArg");
    CL_TRY(clSetKernelArg(k, 3, sizeof(cl_int), &ph), "clSetKernelArg");
    CL_TRY(clSetKernelArg(k, 4, sizeof(cl_int), &mbw), "clSetKernelArg");
    CL_TRY(clSetKernelArg(k, 5, sizeof(cl_int), &r), "clSetKernelArg");
    CL_TRY(clSetKernelArg(k, 6, sizeof(cl_mem), &s->d_mv), "clSetKernelArg");
    CL_TRY(clSetKernelArg(k, 7, win, NULL), "clSetKernelArg(window)");
    size_t local = SEARCH_WG, global = (size_t)g->mb_w * g->mb_h * SEARCH_WG;
    CL_TRY(clEnqueueNDRangeKernel(g->q, k, 1, NULL, &global, &local, 0, NULL, &s->ev_search),
           "clEnqueueNDRangeKernel(motion_search)");
    CL_TRY(clEnqueueReadBuffer(g->q, s->d_mv, CL_FALSE, 0,
                               (size_t)g->mb_w * g->mb_h * 3 * sizeof(cl_uint), s->out + g->plane_off[3],
                               0, NULL, &s->ev_mv),
           "clEnqueueReadBuffer(vectors)");
    CL_TRY(clFlush(g->q), "clFlush");
    s->has_mv = 1;
    return 0;
}

static int ocl_wait(GpuContext *g, int slot, MpeError *err)
{
    int ret = gpu_check_slot(g->slots, slot, err);
    if (ret < 0)
        return ret;
    if ((ret = gpu_fail_frame(&g->fail, GPU_FAIL_DOWNLOAD, slot, err)) < 0)
        return ret;
    OclSlot *s = &g->slot[slot];
    cl_event ev[2];
    cl_uint n = 0;
    if (last_event(s->ev_planes))
        ev[n++] = last_event(s->ev_planes);
    if (s->has_mv && s->ev_mv)
        ev[n++] = s->ev_mv;
    if (n)
        CL_TRY(clWaitForEvents(n, ev), "clWaitForEvents");
    return 0;
}

static int ocl_download(GpuContext *g, int slot, MpePicture *pic, GpuMotion *mv, MpeError *err)
{
    int ret = ocl_wait(g, slot, err);
    if (ret < 0)
        return ret;
    const OclSlot *s = &g->slot[slot];
    if (mv && !s->has_mv)
        return mpe_error(err, -EINVAL, "front end: no motion search was run on slot %d", slot);
    gpu_unpack_readback(pic, mv, s->out, g->plane_off, g->plane_w, g->plane_h, g->mb_w * g->mb_h);
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

static int ocl_timings(GpuContext *g, int slot, GpuTimings *t)
{
    if (slot < 0 || slot >= g->slots)
        return -EINVAL;
    const OclSlot *s = &g->slot[slot];
    memset(t, 0, sizeof(*t));
    for (int c = 0; c < 3; c++) {
        t->upload_ms += event_ms(s->ev_upload[c]);
        t->readback_ms += event_ms(s->ev_planes[c]);
    }
    t->convert_ms = event_ms(s->ev_convert);
    t->search_ms = s->has_mv ? event_ms(s->ev_search) : 0;
    t->readback_ms += s->has_mv ? event_ms(s->ev_mv) : 0;
    return 0;
}

const GpuBackend gpu_backend_opencl = {
    .name = "opencl",
    .probe = ocl_probe,
    .open = ocl_open,
    .close = ocl_close,
    .submit_frame = ocl_submit_frame,
    .motion_search = ocl_motion_search,
    .wait = ocl_wait,
    .download = ocl_download,
    .timings = ocl_timings,
};
