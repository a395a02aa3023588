/* mad.h — MAD (Most Apparent Distortion, Larson & Chandler, J. Electronic
 * Imaging 19(1) 011006, 2010), full-reference, as the authors' 2011-09 MATLAB
 * release computes it (../shared/reference/mad/SPEC.md).
 *
 * One const MadImpl per device; callers pick them through the metric
 * registry (iqa/metric.h: rows mad_cpu, mad_cuda).  A context is opened for one picture size; set_reference() does all
 * the work that depends only on the source picture (CSF-filtered lightness,
 * its block statistics, the 20 log-Gabor subband statistic maps) and keeps
 * it, so scoring several reconstructions of one source frame pays for the
 * reference once.
 *
 * Inputs are 8-bit gray planes in display range 0..255 (the lightness model
 * assumes display values; callers expand studio-range luma first).  Sizes:
 * both dimensions at least MAD_MIN_SIZE (smaller pictures leave nothing after
 * the original's border crop), at most MAD_MAX_SIZE.  Higher MAD = worse;
 * identical pictures give exactly 0.
 *
 * Threads: one context must not be used from two threads at once; distinct
 * contexts may score concurrently.  mad_cpu's open() and close() create and
 * destroy FFTW plans, and FFTW's planner is not thread-safe: do not open or
 * close contexts while another thread is in FFTW's planner. */
#ifndef MPE_MAD_H
#define MPE_MAD_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "common/threads.h"

#define MAD_MIN_SIZE 34
#define MAD_MAX_SIZE 16384

typedef struct MadScore {
    double mad, d_detect, d_appear;
} MadScore;

typedef struct MadContext MadContext;

typedef struct MadOptions {
    int threads;          /* worker threads for the C path, 0 = all online cores */
    int device;           /* CUDA device index (mad_cuda), 0 also for -1; zeroed options: 0 */
    MpePool *pool;        /* non-NULL: the C path runs on it (threads is then unused); the
                           * CUDA path splits its host copies of the pictures over it */
    const char *dump_dir; /* non-NULL: score() writes the visibility, local-MSE and
                           * appearance maps there (PNG for viewing + raw float64 .bin) */
} MadOptions;

typedef struct MadImpl {
    const char *name;                          /* "mad_cpu", later "mad_cuda" */
    int (*probe)(char *why, size_t why_size); /* 0 if usable here */
    int (*open)(MadContext **ctx, int width, int height, const MadOptions *opt, MpeError *err);
    void (*close)(MadContext *ctx);
    /* Precompute everything that depends only on the reference (CSF-filtered
     * image, block stats, the 20 log-Gabor subband statistic maps); kept
     * until the next call. */
    int (*set_reference)(MadContext *ctx, const uint8_t *ref, ptrdiff_t stride, MpeError *err);
    /* Score a distorted picture against the current reference. */
    int (*score)(MadContext *ctx, const uint8_t *dst, ptrdiff_t stride, MadScore *out,
                 MpeError *err);
    /* score() in two halves, NULL where score() is all there is (mad_cpu):
     * score_submit queues the work and returns once dst may be reused;
     * score_collect waits for it and writes the score.  One score at a time
     * per context (submit again only after collect: -EBUSY); set_reference
     * may come in between, it is queued behind the pending score, which is
     * still scored against the old reference.  So a caller can score
     * picture n on the GPU while it codes n + 1:
     *   set_reference(src n); score_submit(recon n); ...code n + 1...;
     *   score_collect(-> score of n); set_reference(src n + 1); ... */
    int (*score_submit)(MadContext *ctx, const uint8_t *dst, ptrdiff_t stride, MpeError *err);
    int (*score_collect)(MadContext *ctx, MadScore *out, MpeError *err);
} MadImpl;

extern const MadImpl mad_cpu;
/* Defined only in builds with iqa/mad_cuda.cu, which also define
 * MPE_HAVE_MAD_CUDA so that the metric registry (iqa/metric.h) lists it. */
extern const MadImpl mad_cuda;

/* Convenience: set_reference + score in one call (the issue's
 * score(ref, dst, stride)). */
int mad_score_pair(const MadImpl *impl, MadContext *ctx, const uint8_t *ref, const uint8_t *dst,
                   ptrdiff_t stride, MadScore *out, MpeError *err);

/* MAD's contrast masking of one picture alone: the reference side of the
 * detection stage (SPEC §3.1-3.4: lightness, CSF filter, per block of the
 * stride-4 grid of 16x16 blocks the mean mu of the filtered lightness and
 * its modified std sd), without the appearance stage's 20 subbands, so an
 * encoder can ask before coding where distortion will be masked.  C with
 * FFTW (a plan made with FFTW_ESTIMATE, single-threaded): the same numbers
 * on every run and thread count.  open/close plan with FFTW, which is not
 * thread-safe: not while another thread plans (see above). */
typedef struct MadMask MadMask;

int mad_mask_open(MadMask **mask, int width, int height, MpeError *err);
void mad_mask_close(MadMask *mask);
/* Grid of the maps: rows x cols blocks, row-major; block (by, bx) is the
 * 16x16 block whose top-left pixel is (4 by, 4 bx). */
void mad_mask_grid(const MadMask *mask, int *rows, int *cols);
/* mu and sd (grid-sized) of an 8-bit gray picture in display range. */
int mad_mask_compute(MadMask *mask, const uint8_t *gray, ptrdiff_t stride, double *mu, double *sd,
                     MpeError *err);
/* ln of the smallest std of a CSF-filtered lightness error that MAD's
 * visibility (SPEC §3.4) counts in a block of these statistics: an error
 * is seen where ln(sd_err / mu) > max(ln(sd / mu), -5), so the threshold
 * is max(sd, mu e^-5); +INFINITY where mu is under the luminance
 * threshold 0.5 and nothing is seen. */
double mad_mask_threshold(double mu, double sd);

/* RGB24 -> 8-bit gray exactly as the original MATLAB code does (SPEC §2:
 * rgb2gray's coefficients, rounded half away from zero). */
void mad_rgb_to_gray(uint8_t *gray, ptrdiff_t gstride, const uint8_t *rgb, ptrdiff_t rstride,
                     int w, int h);

#endif
