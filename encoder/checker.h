/* checker.h — the in-loop quality checker: scores a reconstructed picture
 * against its source with the metrics the user asked for (--iqa), opened
 * through the metric registry (iqa/metric.h).
 *
 * Metrics flagged IQA_DISPLAY_RANGE (MAD, BLIINDS-II) model display values,
 * so they see luma expanded from studio range (16..235) to full range
 * (0..255), source and reconstruction alike; the others (SSIM, like
 * ffmpeg's ssim filter) see the coded samples.  A full-reference metric's
 * source-side work (MAD: CSF-filtered reference, subband statistics) is
 * done once per picture in mpe_checker_set_source and reused by every
 * mpe_checker_score of that picture (trial reconstructions).  PSNR
 * (IQA_FROM_SSE) is the encoder's own, from the slices' SSE: never here.
 *
 * One checker is used by one thread at a time; the encoder keeps one for
 * the rate control's target metric (on its own thread) and, for the
 * measures it only logs, one per picture in flight on the quality stage's
 * threads: each holds its own copy of the pictures it scores
 * (mpe_checker_hold), so the coder can reuse the buffers at once. */
#ifndef MPE_CHECKER_H
#define MPE_CHECKER_H

#include "common/common.h"
#include "common/picture.h"
#include "common/threads.h"
#include "encoder/encoder.h"

typedef struct MpeChecker MpeChecker;

/* What a checker measures and where. */
typedef struct MpeCheckerConfig {
    int width, height;
    unsigned metrics;      /* bit f: registry family f (MpeFrameStats.metrics) */
    const char *backend;   /* "auto", "cpu" or "cuda": for families with twins */
    int threads;           /* for the C implementations without a pool, 0 = all cores */
    MpePool *pool;         /* non-NULL: the C implementations run on it */
    int device;            /* CUDA device index (--device), -1 = the default */
    int hold;              /* mpe_checker_hold / mpe_checker_score_held will be used */
    const MpeChecker *like;  /* non-NULL: open the same rows as this one (no fallback) */
} MpeCheckerConfig;

int mpe_checker_open(MpeChecker **c, const MpeCheckerConfig *cfg, const MpeLog *log,
                     MpeError *err);
void mpe_checker_close(MpeChecker *c);

/* Names of the implementations in use, e.g. "mad_cuda, bliinds_cuda". */
const char *mpe_checker_describe(const MpeChecker *c);

int mpe_checker_set_source(MpeChecker *c, const MpePicture *src, MpeError *err);
/* Fills the values of the checker's metrics in fs and sets their bits in
 * fs->metrics. */
int mpe_checker_score(MpeChecker *c, const MpePicture *recon, MpeFrameStats *fs, MpeError *err);

/* Whether some metric runs on a CUDA device (its time is the device's). */
int mpe_checker_on_device(const MpeChecker *c);

/* Keeps what the checker's metrics need of a source and its reconstruction
 * (luma expanded to full range, or copied; on the pool given at open), so
 * that both may be reused as soon as this returns; then
 * mpe_checker_score_held, on any one thread, scores the pair as
 * mpe_checker_set_source + mpe_checker_score would (the same values).
 * Needs MpeCheckerConfig.hold. */
void mpe_checker_hold(MpeChecker *c, const MpePicture *src, const MpePicture *recon);
int mpe_checker_score_held(MpeChecker *c, MpeFrameStats *fs, MpeError *err);

/* Copies the values of the families set in from->metrics into to. */
void mpe_stats_copy_values(MpeFrameStats *to, const MpeFrameStats *from);

/* Studio-range luma to full range, rounded: (v - 16) * 255 / 219, clamped
 * (SSE2 where built for it); _c: the table it must equal. */
void mpe_luma_to_full_range(uint8_t *dst, ptrdiff_t dstride, const uint8_t *src, ptrdiff_t sstride,
                            int w, int h);
void mpe_luma_to_full_range_c(uint8_t *dst, ptrdiff_t dstride, const uint8_t *src,
                              ptrdiff_t sstride, int w, int h);

#endif
