/* bliinds_cuda_internal.h — what the CUDA implementation of BLIINDS-II
 * (iqa/bliinds_cuda.cu) exposes to its unit test and the benchmark beside
 * the BliindsImpl table: the device's intermediate results of the last
 * score() and the time of each stage.  Only for contexts opened with
 * bliinds_cuda; not part of the module's public interface. */
#ifndef MPE_BLIINDS_CUDA_INTERNAL_H
#define MPE_BLIINDS_CUDA_INTERNAL_H

#include "common/common.h"
#include "iqa/bliinds.h"
#include "iqa/bliinds_internal.h"

#ifdef MPE_HAVE_CUDA

/* Downloads scale 0, 1 or 2 (SPEC's L1..L3) of the last score(): the scale
 * image and all seven per-block maps, into host memory the context owns
 * (valid until the next call of this function for the same scale, or
 * close), laid out as bliinds_cpu_maps() describes them.  Synchronous; for
 * tests and dumps only.  -EINVAL for another scale or before any score(). */
int bliinds_cuda_maps(BliindsContext *ctx, int scale, BliindsMaps *maps, MpeError *err);

/* Time of each stage of the last score(), in milliseconds, from CUDA events
 * between the stages on the device's stream (load_ms: from the start of the
 * upload to its end, which includes the host's copies into pinned memory it
 * waited for; predict_ms: the host).  All zero before the first score(). */
void bliinds_cuda_stage_times(const BliindsContext *ctx, BliindsStageTimes *times);

#endif

#endif
