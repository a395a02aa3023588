/* cuda.h — the CUDA machinery the front end (gpu/) and the metrics (iqa/)
 * share: which device a run uses, and how a CUDA error becomes an MpeError.
 * Built only when nvcc is found (common/cuda.cu); the header itself uses no
 * CUDA type, so C files may include it too.  One picker means --device N
 * selects the same GPU for the front end and for MAD and BLIINDS-II. */
#ifndef MPE_COMMON_CUDA_H
#define MPE_COMMON_CUDA_H

#include <stddef.h>

#include "common/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Lowest compute capability (major * 10 + minor) the metrics' kernels run
 * on: they are built as sm_90 SASS plus compute_75 PTX. */
#define MPE_CUDA_MIN_COMPUTE 75

/* The device for --device `index` (-1: the first one).  0 with *dev set and
 * why[] naming it ("device 0: NAME (compute 9.0, 132 SMs)"); else -ENODEV
 * and why[] saying why: no driver, no device, an index past the count
 * ("--device 5: only 1 CUDA device (0..0)"), or a compute capability below
 * min_compute (0: any).  why may be NULL with why_size 0. */
int mpe_cuda_pick(int index, int min_compute, int *dev, char *why, size_t why_size);

/* Makes device dev current on this thread (cudaSetDevice: in CUDA 12 and
 * later, its primary context is made here if it was not yet) and has the
 * process's waits on it block on an interrupt instead of polling
 * (cudaDeviceScheduleBlockingSync), whichever of the front end and the
 * metrics opens first.  On the H100 machine, whose cores the slices keep
 * busy, the yielding polls cost 2.3-2.6 s of system CPU in a 400-frame
 * `--iqa all` run; blocking, two calls of 2 and 4 rounds: `--iqa all`
 * 167.5-170.9 fps against 138.6-171.8 with the polls, the default 406-550
 * against 336-537.  0, or an MpeError from who. */
int mpe_cuda_use_device(int dev, const char *who, MpeError *err);

/* Fills err for a failed CUDA runtime call (cuda_error: its cudaError_t)
 * and returns -ENOMEM for an allocation failure, else -EIO.  The message is
 * "WHO: CUDA: WHAT failed: DESCRIPTION (NAME)" ("CUDA: ..." if who is NULL). */
int mpe_cuda_error(MpeError *err, const char *who, int cuda_error, const char *what);

#ifdef __cplusplus
}
#endif

/* Runs a CUDA runtime call; on failure returns its error from the calling
 * function (which has `MpeError *err`) through mpe_cuda_error. */
#define MPE_CUDA_TRY(who, call, what)                                                         \
    do {                                                                                      \
        int cu_e_ = (int)(call);                                                              \
        if (cu_e_ != 0)                                                                       \
            return mpe_cuda_error(err, (who), cu_e_, (what));                                 \
    } while (0)

#endif
