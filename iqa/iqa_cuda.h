/* iqa_cuda.h — what the CUDA metrics (mad_cuda.cu, bliinds_cuda.cu) share:
 * the upload of an 8-bit host picture through pinned staging memory.  For
 * .cu files only (it names CUDA runtime types). */
#ifndef MPE_IQA_CUDA_H
#define MPE_IQA_CUDA_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {
#include "common/common.h"
#include "common/threads.h"
}

/* One write-combined pinned staging buffer and the event that says its
 * last upload has left it (so a caller may queue a picture behind device
 * work still running, and the host waits only for that upload's DMA). */
typedef struct IqaUpload {
    uint8_t *stage;
    cudaEvent_t left;
    int recorded;
    int direct;   /* the last upload reads the caller's page-locked picture */
} IqaUpload;

/* who names the metric in errors ("mad_cuda").  close() of a zeroed or
 * half-opened IqaUpload is fine. */
int iqa_upload_open(IqaUpload *u, size_t bytes, const char *who, MpeError *err);
void iqa_upload_close(IqaUpload *u);

/* w x h bytes at pic (rows stride apart) -> dst (rows w apart) on stream.
 * A picture in page-locked memory (iqa_host_register, cudaHostAlloc) goes
 * up by one DMA straight from it, with no host copy; the caller queues its
 * kernels behind it and calls iqa_upload_release before giving pic back.
 * Any other picture is copied into the staging buffer: with a pool the
 * copy is split over its threads and sent in one DMA; without, it is sent
 * in pieces, each as soon as it is copied; pic may be reused at once. */
int iqa_upload(IqaUpload *u, MpePool *pool, uint8_t *dst, const uint8_t *pic, ptrdiff_t stride,
               int w, int h, cudaStream_t stream, const char *who, MpeError *err);

/* Waits until the last upload has read the caller's picture (a direct
 * upload's DMA); returns at once after a staged one. */
int iqa_upload_release(IqaUpload *u, const char *who, MpeError *err);

#endif
