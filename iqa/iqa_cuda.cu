/* iqa_cuda.cu — see iqa_cuda.h. */
#include "iqa/iqa_cuda.h"

extern "C" {
#include "common/cuda.h"
#include "iqa/metric.h"
}

#include <string.h>

#define PIECE ((size_t)1 << 19) /* bytes per piece of the unpooled upload */
#define BANDS 8                 /* pieces of the pooled copy */

int iqa_upload_open(IqaUpload *u, size_t bytes, const char *who, MpeError *err)
{
    cudaError_t e;
    memset(u, 0, sizeof(*u));
    /* write-combined: the host only writes it, the DMA reads it */
    if ((e = cudaHostAlloc((void **)&u->stage, bytes, cudaHostAllocWriteCombined)) != cudaSuccess) {
        u->stage = NULL;
        return mpe_cuda_error(err, who, e, "cudaHostAlloc(staging)");
    }
    if ((e = cudaEventCreateWithFlags(&u->left, cudaEventDisableTiming)) != cudaSuccess) {
        u->left = NULL;
        return mpe_cuda_error(err, who, e, "cudaEventCreate(staging)");
    }
    return 0;
}

void iqa_upload_close(IqaUpload *u)
{
    if (u->stage)
        cudaFreeHost(u->stage);
    if (u->left)
        cudaEventDestroy(u->left);
    memset(u, 0, sizeof(*u));
}

typedef struct CopyJob {
    uint8_t *stage;
    const uint8_t *pic;
    ptrdiff_t stride;
    int w, h;
} CopyJob;

static void copy_band(void *arg, int band, int worker)
{
    const CopyJob *j = (const CopyJob *)arg;
    const int y0 = (int)((long long)j->h * band / BANDS), y1 = (int)((long long)j->h * (band + 1) / BANDS);
    (void)worker;
    if (j->stride == j->w)
        memcpy(j->stage + (size_t)y0 * j->w, j->pic + (size_t)y0 * j->w, (size_t)(y1 - y0) * j->w);
    else
        for (int y = y0; y < y1; y++)
            memcpy(j->stage + (size_t)y * j->w, j->pic + (ptrdiff_t)y * j->stride, (size_t)j->w);
}

/* Whether the DMA engine can read p directly: page-locked host memory
 * (registered or allocated through CUDA).  Anything else, or a failed
 * query, reads as no. */
static int page_locked(const void *p)
{
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky; clears the query's error */
        return 0;
    }
    return a.type == cudaMemoryTypeHost;
}

int iqa_upload(IqaUpload *u, MpePool *pool, uint8_t *dst, const uint8_t *pic, ptrdiff_t stride,
               int w, int h, cudaStream_t stream, const char *who, MpeError *err)
{
    cudaError_t e;
    if (u->recorded && (e = cudaEventSynchronize(u->left)) != cudaSuccess)
        return mpe_cuda_error(err, who, e, "waiting for the staging buffer");
    u->direct = 0;
    /* both ends locked: one registration covers the picture (the checker
     * registers each of its buffers whole) */
    if (stride >= w && page_locked(pic) && page_locked(pic + (ptrdiff_t)(h - 1) * stride + w - 1)) {
        if ((e = cudaMemcpy2DAsync(dst, (size_t)w, pic, (size_t)stride, (size_t)w, (size_t)h,
                                   cudaMemcpyHostToDevice, stream)) != cudaSuccess)
            return mpe_cuda_error(err, who, e, "cudaMemcpy2DAsync(picture)");
        u->direct = 1;
    } else if (pool && mpe_pool_threads(pool) > 1) {
        CopyJob job = { u->stage, pic, stride, w, h };
        mpe_pool_run(pool, BANDS, copy_band, &job);
        if ((e = cudaMemcpyAsync(dst, u->stage, (size_t)w * h, cudaMemcpyHostToDevice, stream)) !=
            cudaSuccess)
            return mpe_cuda_error(err, who, e, "cudaMemcpyAsync(picture)");
    } else {
        const int rows = (int)MPE_MAX((size_t)1, PIECE / (size_t)w);
        for (int y0 = 0; y0 < h; y0 += rows) {
            const int nr = MPE_MIN(rows, h - y0);
            uint8_t *stage = u->stage + (size_t)y0 * w;
            if (stride == w)
                memcpy(stage, pic + (size_t)y0 * w, (size_t)nr * w);
            else
                for (int y = 0; y < nr; y++)
                    memcpy(stage + (size_t)y * w, pic + (ptrdiff_t)(y0 + y) * stride, (size_t)w);
            if ((e = cudaMemcpyAsync(dst + (size_t)y0 * w, stage, (size_t)nr * w,
                                     cudaMemcpyHostToDevice, stream)) != cudaSuccess)
                return mpe_cuda_error(err, who, e, "cudaMemcpyAsync(picture)");
        }
    }
    if ((e = cudaEventRecord(u->left, stream)) != cudaSuccess) {
        if (u->direct) /* nothing else would say when the DMA has read pic */
            (void)cudaStreamSynchronize(stream);
        u->direct = 0;
        return mpe_cuda_error(err, who, e, "cudaEventRecord(staging)");
    }
    u->recorded = 1;
    return 0;
}

int iqa_upload_release(IqaUpload *u, const char *who, MpeError *err)
{
    cudaError_t e;
    if (u->direct && (e = cudaEventSynchronize(u->left)) != cudaSuccess)
        return mpe_cuda_error(err, who, e, "waiting for the picture's upload");
    u->direct = 0;
    return 0;
}

extern "C" int iqa_host_register(void *p, size_t bytes)
{
    if (!p || !bytes)
        return 0;
    /* portable: every device's context may read it (--device picks one) */
    if (cudaHostRegister(p, bytes, cudaHostRegisterPortable) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return 1;
}

extern "C" void iqa_host_unregister(void *p)
{
    if (p && cudaHostUnregister(p) != cudaSuccess)
        (void)cudaGetLastError();
}
