/* checker.h — the in-loop quality checker: scores a reconstructed picture
 * against its source with the measures the user asked for (--iqa).
 *
 * MAD and BLIINDS-II model display values, so they see luma expanded from
 * studio range (16..235) to full range (0..255), source and reconstruction
 * alike; SSIM, like ffmpeg's ssim filter, and PSNR see the coded samples.
 * The source-side MAD work (CSF-filtered reference, subband statistics) is
 * done once per picture in mpe_checker_set_source and reused by every
 * mpe_checker_score of that picture (trial reconstructions).
 *
 * One checker is used by one thread at a time; the encoder keeps one for
 * the rate control's target metric (on its own thread) and one for the
 * measures it only logs (on the quality stage's thread). */
#ifndef MPE_CHECKER_H
#define MPE_CHECKER_H

#include "common/common.h"
#include "common/picture.h"
#include "common/threads.h"
#include "encoder/encoder.h"

typedef struct MpeChecker MpeChecker;

/* metrics: MPE_IQA_SSIM | MPE_IQA_MAD | MPE_IQA_BLIINDS (PSNR is the
 * encoder's own, from the slices' SSE); backend: "auto", "cpu" or "cuda"
 * (MAD and BLIINDS-II); pool: the threads the C implementations run on. */
int mpe_checker_open(MpeChecker **c, int width, int height, unsigned metrics, const char *backend,
                     MpePool *pool, const MpeLog *log, MpeError *err);
void mpe_checker_close(MpeChecker *c);

/* Names of the implementations in use, e.g. "mad_cuda, bliinds_cuda". */
const char *mpe_checker_describe(const MpeChecker *c);

int mpe_checker_set_source(MpeChecker *c, const MpePicture *src, MpeError *err);
/* Fills the fields of the checker's metrics in fs and sets their bits in
 * fs->metrics. */
int mpe_checker_score(MpeChecker *c, const MpePicture *recon, MpeFrameStats *fs, MpeError *err);

/* Studio-range luma to full range, rounded: (v - 16) * 255 / 219, clamped. */
void mpe_luma_to_full_range(uint8_t *dst, ptrdiff_t dstride, const uint8_t *src, ptrdiff_t sstride,
                            int w, int h);

#endif
