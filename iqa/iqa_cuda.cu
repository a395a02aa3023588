/* iqa_cuda.cu — see iqa_cuda.h. */
#include "iqa/iqa_cuda.h"

extern "C" {
#include "common/cuda.h"
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

int iqa_upload(IqaUpload *u, MpePool *pool, uint8_t *dst, const uint8_t *pic, ptrdiff_t stride,
               int w, int h, cudaStream_t stream, const char *who, MpeError *err)
{
    cudaError_t e;
    if (u->recorded && (e = cudaEventSynchronize(u->left)) != cudaSuccess)
        return mpe_cuda_error(err, who, e, "waiting for the staging buffer");
    if (pool && mpe_pool_threads(pool) > 1) {
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
    if ((e = cudaEventRecord(u->left, stream)) != cudaSuccess)
        return mpe_cuda_error(err, who, e, "cudaEventRecord(staging)");
    u->recorded = 1;
    return 0;
}
