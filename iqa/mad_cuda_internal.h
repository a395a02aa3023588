/* mad_cuda_internal.h — what the CUDA implementation of MAD
 * (iqa/mad_cuda.cu) exposes to its unit test and the benchmark beside the
 * MadImpl table: the device's intermediate results, the time of each stage
 * and a way to pick the subband batch.  Only for contexts opened with
 * mad_cuda; not part of the module's public interface. */
#ifndef MPE_MAD_CUDA_INTERNAL_H
#define MPE_MAD_CUDA_INTERNAL_H

#include <stdint.h>

#include "common/common.h"
#include "iqa/mad.h"
#include "iqa/mad_internal.h"

#if defined(MPE_HAVE_MAD_CUDA) || defined(__CUDACC__)

/* Everything the device holds for the current size, reference and last
 * score, downloaded into host memory the context owns (valid until the next
 * call of mad_cuda_maps or close).  Layouts are those of mad_internal.h:
 * pictures h x w row-major, grids mad_grid_rows(h) x mad_grid_cols(w).
 * Pointers of a side not computed yet are NULL. */
typedef struct MadCudaMaps {
    int w, h, nbr, nbc;
    int batch;                 /* subbands per batched inverse transform */
    int precision;             /* MAD_CUDA_SUB_FLOAT or MAD_CUDA_SUB_DOUBLE */
    /* built in open, DFT bin layout */
    const double *lg_radial;   /* MAD_NSCALE planes of h x w (mad_loggabor_radial) */
    const double *lg_angular;  /* MAD_NORIENT planes of h x w (mad_loggabor_angular) */
    const double *csf_half;    /* h x (w/2+1): mad_csf_half(.., 1/(w*h)) */
    /* set_reference() */
    const double *r_img;       /* CSF-filtered lightness R of the reference */
    const double *mu_ref;      /* grid: mean of R over each 16x16 block */
    const double *sd_ref;      /* grid: modified std of R (SPEC §3.3) */
    const double *st_ref;      /* MAD_NSUB x 3 x grid: std, skew, kurt of |EO_ref| */
    /* the last score() */
    const double *e_img;       /* E = D - R */
    const double *sd_err;      /* grid: sample std of E */
    const double *msk;         /* grid: visibility (SPEC §3.4) */
    const int32_t *lmse_sum;   /* h x w: 16x16 sums of squared differences (lmse * 256) */
    const double *terms;       /* MAD_NSUB x grid: |dstd| + 2|dskew| + |dkurt| */
    const double *eta;         /* grid: weighted sum of terms (SPEC §4.3) */
    double sum_detect;         /* sum over the kept region of (msk * lmse)^2 */
    double sum_appear;         /* sum over the kept region of eta^2 */
} MadCudaMaps;

/* Synchronous download of all of the above; for tests and dumps only. */
int mad_cuda_maps(MadContext *ctx, MadCudaMaps *maps, MpeError *err);

/* mad_cuda's open with the number of subbands transformed together forced
 * (1..MAD_NSUB); 0 picks it as open() does (all 20 while they fit in
 * 1.5 GiB of subband buffer). */
int mad_cuda_open_batch(MadContext **ctx, int width, int height, const MadOptions *opt,
                        int batch, MpeError *err);

/* Precision of the 20 log-Gabor subbands between their product and their
 * block statistics (the product, the inverse transforms and the buffer;
 * the spectrum, the filters, the moments and everything else stay double).
 * open() takes MAD_CUDA_SUB_FLOAT: half the bytes of the stage that is
 * three quarters of the time, scores within ~5e-5 of double (SPEC §7: float
 * FFTs change MAD by at most 5.2e-5; the issue allows 2e-4).
 * MAD_CUDA_SUB_DOUBLE agrees with C to ~1e-12 map by map, for the stage
 * tests.  Either is deterministic run to run. */
enum {
    MAD_CUDA_SUB_FLOAT = 0,
    MAD_CUDA_SUB_DOUBLE = 1,
    MAD_CUDA_SUB_FLOAT_STORE_CB = 2,
    MAD_CUDA_SUB_FLOAT_LOAD_CB = 3,
    MAD_CUDA_SUB_FLOAT_CUFFT = 4,
};

/* Float subbands (MAD_CUDA_SUB_FLOAT) go through mad_cuda's own transforms
 * (iqa/mad_cuda_fft.cuh) where the picture's width and height factor into
 * 2, 3 and 5 and fit a block's threads: w / R <= 256 and 2 h / R <= 512,
 * R the side's largest radix (8 where 8 divides it: both sides up to 2048,
 * 1920x1080 too).  The subband product is made in the row transform's
 * load and the 4x4 cell moments in the column transform's store (H100,
 * 2048^2: a score 2.26 -> 1.94 ms, docs/PERF.md).  Other sizes, and
 * MAD_CUDA_SUB_FLOAT_CUFFT, take cuFFT's batched C2C behind the product
 * kernel.  The two round their float bins otherwise; scores agree to
 * ~1e-5 (7e-6 at most so far), and with mad_cpu as closely as before. */

/* Float subbands with cuFFT LTO callbacks in their inverse transform
 * (mad_cuda_cb.cuh; where this cuFFT can link them and all 20 subbands are
 * one batch, else none): _STORE_CB stores |EO| as one float, which the
 * statistics read (half their bytes); _LOAD_CB also makes the subband
 * product in the transform's load instead of the product kernel.  The
 * same bins and scores (2e-7 relative at most so far), but slower on an
 * H100 with cuFFT 12.0 (CUDA 13.0) at 2048^2: the transform took 1.79 ms
 * (store) and 5.5 ms (load and store) instead of 1.23, for 0.24 ms less
 * in the statistics, and each plan costs a JIT link (~0.05-0.5 s) at open.
 * So open() takes none; these are for the benchmark and later cuFFTs.
 * Which a context has (MAD_CUDA_CB_*); *why (if why is not NULL) says why
 * it has none when some were asked for ("" otherwise). */
enum { MAD_CUDA_CB_NONE = 0, MAD_CUDA_CB_STORE = 1, MAD_CUDA_CB_LOAD_STORE = 2 };

int mad_cuda_callbacks(const MadContext *ctx, const char **why);

/* 1 where the context's float subbands go through mad_cuda's own
 * transforms (MAD_CUDA_SUB_FLOAT_CUFFT above), else 0. */
int mad_cuda_own_fft(const MadContext *ctx);

int mad_cuda_open_ex(MadContext **ctx, int width, int height, const MadOptions *opt, int batch,
                     int precision, MpeError *err);

/* Stages of a set_reference() or score() on the device, from CUDA events
 * recorded between them when timing is on (off by default: the events cost
 * host time per call).  upload: host-to-device copies of the picture;
 * prep: pixel sum, lightness and mean-free gray; fft: cuFFT transforms;
 * filter: the log-Gabor spectrum products; stats: block statistics;
 * collapse: eta, reductions and the copy back.  The detection side (CSF
 * filter, its statistics, visibility, local MSE) runs on a second stream
 * beside the appearance side and counts in no stage. */
enum {
    MAD_CUDA_UPLOAD,
    MAD_CUDA_PREP,
    MAD_CUDA_FFT,
    MAD_CUDA_FILTER,
    MAD_CUDA_STATS,
    MAD_CUDA_COLLAPSE,
    MAD_CUDA_NSTAGE
};

typedef struct MadCudaTimes {
    double ms[MAD_CUDA_NSTAGE]; /* device time of each stage, milliseconds */
    double gpu_ms;              /* first to last event */
    double wall_ms;             /* the whole call on the host */
} MadCudaTimes;

void mad_cuda_set_timing(MadContext *ctx, int on);
/* Times of the last set_reference() and score(); zeros where timing was off. */
void mad_cuda_times(const MadContext *ctx, MadCudaTimes *set_reference, MadCudaTimes *score);

#endif

#endif
