/* bliinds.h — BLIINDS-II, the no-reference image quality metric of Saad,
 * Bovik & Charrier (IEEE TIP 21(8), 2012), as the authors' released code
 * computes it (../shared/reference/bliinds/SPEC.md is the definition).
 *
 * Input: one 8-bit plane (the encoder gives it luma; the original takes the
 * first channel of whatever it is given), any size from 4x4 up, odd and
 * non-square included.  Output: the 24 pooled features (3 scales x {zeta
 * mean, zeta top 10 %, gamma mean, gamma lowest 10 %, subband mean, subband
 * top 10 %, orientation mean, orientation top 10 %}, the order of
 * reference.csv) and the score the LIVE-trained model predicts: a DMOS-like
 * value on a 0.5 grid from 0 to 99, higher is worse.
 *
 * Implementations have one shape: the C reference "bliinds_cpu" and, where
 * built, "bliinds_cuda"; callers pick them through the metric registry
 * (iqa/metric.h), whose rows of the same names wrap them.  A context is
 * opened for one image size and scores any number of images of that size;
 * it is not safe to score on one context from two threads at once. */
#ifndef MPE_BLIINDS_H
#define MPE_BLIINDS_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "common/threads.h"

#define BLIINDS_NFEATURES 24
#define BLIINDS_MIN_SIZE 4   /* SPEC §2: scale 3 must not be empty */

typedef struct BliindsScore {
    double score;
    double features[BLIINDS_NFEATURES];
} BliindsScore;

typedef struct BliindsContext BliindsContext;

typedef struct BliindsOptions {
    int threads;          /* worker threads; 0 = all online cores */
    int device;           /* CUDA device index (bliinds_cuda), 0 also for -1 */
    MpePool *pool;        /* non-NULL: the C path runs on it (threads is then unused); the
                           * CUDA path splits its host copy of the picture over it */
    /* Optional: a directory where every score() also writes the scale
     * images and per-block maps, named and formatted like the reference's
     * blockmaps/ (L<s>_image.csv, L<s>_{zeta,gamma,subband,orientvar,ori1,
     * ori2,ori3}.csv; one CSV row per image row / block row, %.17g). */
    const char *dump_dir;
} BliindsOptions;

typedef struct BliindsImpl {
    const char *name;  /* "bliinds_cpu", "bliinds_cuda" */
    /* 0 if this implementation can run here; else negative errno and why[]. */
    int (*probe)(char *why, size_t why_size);
    /* opt may be NULL (defaults).  Sizes below BLIINDS_MIN_SIZE: -EINVAL. */
    int (*open)(BliindsContext **ctx, int width, int height, const BliindsOptions *opt,
                MpeError *err);
    void (*close)(BliindsContext *ctx);
    /* img: width x height 8-bit samples, rows stride bytes apart. */
    int (*score)(BliindsContext *ctx, const uint8_t *img, ptrdiff_t stride, BliindsScore *out,
                 MpeError *err);
    /* score() in two halves, NULL where score() is all there is
     * (bliinds_cpu): score_submit queues the work and returns once img may
     * be reused; score_collect waits for it and writes the score.  One score
     * at a time per context (-EBUSY otherwise), so a caller can score
     * picture n on the GPU while it codes n + 1. */
    int (*score_submit)(BliindsContext *ctx, const uint8_t *img, ptrdiff_t stride, MpeError *err);
    int (*score_collect)(BliindsContext *ctx, BliindsScore *out, MpeError *err);
} BliindsImpl;

extern const BliindsImpl bliinds_cpu;
#ifdef MPE_HAVE_CUDA
extern const BliindsImpl bliinds_cuda;
#endif

/* The prediction step alone (features -> score), exposed for tests: the
 * original's grid search over DMOS 1, 1.5, ..., 100 of the LIVE-trained
 * multivariate generalised Gaussian, including its off-by-one (SPEC §9). */
double bliinds_predict(const double features[BLIINDS_NFEATURES]);

/* How far features are from what the model was fitted on (SPEC §9): *dmos,
 * the DMOS the model estimates before the 1..100 grid (the Gaussian
 * conditional mean: a score is it less one, rounded to 0.5 and clamped to
 * 0..99), and *distance, the squared Mahalanobis distance of [features, that
 * DMOS clamped to 1..100] from the training mean.  The 982 LIVE training
 * vectors all lie within BLIINDS_TRAINING_DISTANCE_MAX.  A dmos outside
 * 0.75..100.25 or a larger distance: the score is an extrapolation (clamped
 * to an end of the scale), not a judgement the model was trained to make. */
#define BLIINDS_TRAINING_DISTANCE_MAX 565.0
void bliinds_model_fit(const double features[BLIINDS_NFEATURES], double *dmos, double *distance);

#endif
