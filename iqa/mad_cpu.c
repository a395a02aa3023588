/* mad_cpu.c — MAD in C, double precision, FFTW3, on an MpePool
 * (../shared/reference/mad/SPEC.md; paper: Larson & Chandler 2010).
 *
 * Per context (one picture size): the CSF and the log-Gabor bank as
 * 5 radial x 4 angular factors, FFTW plans and all buffers.
 *
 * 2-D transforms are done here as FFTW row batches plus column batches
 * gathered 16 columns at a time into a contiguous buffer.  Plans are made
 * with FFTW_ESTIMATE, which picks the same algorithm on every run (measured
 * plans may differ between runs, and with them the last bits of the
 * scores); FFTW_ESTIMATE's own 2-D plans are ~10x slower than measured ones
 * because of how they walk the columns (512x512: 11 ms vs 1 ms), while
 * gathering the columns ourselves comes within ~1.3x of FFTW_MEASURE.  A
 * subband's filter product is made row by row just before that row batch
 * is transformed, and the column pass keeps only |EO|, so neither the
 * filtered spectrum nor the complex subband ever goes through memory whole.
 *
 * set_reference() keeps the CSF-filtered reference lightness R, its block
 * mean and modified std, and the std/skew/kurt maps of its 20 subbands;
 * score() then does the distorted side only:
 *
 *   phase A  (tasks in parallel)  gray spectrum of the picture
 *                                 16x16 local MSE (integer box sums)
 *   phase B  (tasks in parallel)  detection: lightness -> CSF -> E = D-R ->
 *                                   block std of E -> visibility per block
 *                                 20 subbands: spectrum x filter -> inverse
 *                                   FFT -> |EO| -> block std/skew/kurt ->
 *                                   |differences| to the reference's
 *   collapse (calling thread)     η, crop, RMS, combination
 *
 * Each task writes only its own outputs and sums in a fixed order, so the
 * scores do not depend on the thread count, and a picture scored against
 * itself goes through bit-identical arithmetic on both sides: exactly 0.
 *
 * Tasks run on the caller's pool (MadOptions.pool), or on one of the
 * context's own sized by MadOptions.threads.
 *
 * Memory: about 175 bytes per pixel plus 26 per worker thread (the filter
 * bank is 72 of them); 2048x2048 with 2 threads peaks at 0.95 GB. */
#include "iqa/mad.h"
#include "iqa/mad_internal.h"
#include "common/threads.h"
#include "common/timer.h"

#include <errno.h>
#include <fftw3.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The widest stage has 20 independent subbands; more workers would idle. */
#define MAD_MAX_THREADS MAD_NSUB
/* Columns per batch of column transforms (16 x h complex stays in L2), and
 * how many rows ahead their gather prefetches. */
#define COL_BATCH 16
#define PREFETCH_ROWS 8
/* Subband rows filtered and transformed together while they are in cache. */
#define ROW_BATCH 8

enum { DIR_FWD, DIR_INV };

typedef struct MadWorker {
    fftw_complex *buf;   /* one subband, h x w */
    fftw_complex *cols;  /* COL_BATCH x h: columns being transformed */
    double *mag;         /* |EO| of one subband, h x w */
    double *scratch;     /* block statistics */
    double *st[3];       /* std, skew, kurt of the distorted subband, grid-sized */
    double t[MAD_NSTAGE];
} MadWorker;

struct MadContext {
    int w, h, hc;           /* hc: columns of the r2c half spectrum */
    int nbr, nbc;           /* block grid */
    size_t npix, nblk, nhalf;
    int nthreads;           /* MadWorkers: the pool's threads, at most MAD_MAX_THREADS */
    MpePool *pool;          /* the caller's (MadOptions.pool) or own_pool */
    MpePool *own_pool;
    char *dump_dir;

    double lut[256];
    double *csf;            /* h x hc, Hermitian-symmetrised, includes 1/(w*h) */
    double *lg_rad;         /* MAD_NSCALE x npix */
    double *lg_ang;         /* MAD_NORIENT x npix */
    fftw_plan p_rows_r2c;   /* h rows, w -> hc */
    fftw_plan p_rows_c2r;   /* h rows, hc -> w */
    fftw_plan p_row_inv[2]; /* ROW_BATCH rows / one row of w, complex, backward, in place */
    fftw_plan p_cols[2][2]; /* [direction][batch of COL_BATCH, or 1]: length h, contiguous */
    MadWorker wk[MAD_MAX_THREADS];

    /* reference side, valid when have_ref */
    int have_ref;
    uint8_t *g_ref;         /* h x w copy */
    double *r_img;          /* CSF-filtered lightness R */
    double *mu_ref, *sd_ref;
    double *st_ref;         /* MAD_NSUB x 3 x nblk: std, skew, kurt */

    /* the picture being processed */
    const uint8_t *cur;
    ptrdiff_t cur_stride;
    int cur_is_ref;

    /* shared by phase A's gray spectrum and phase B's detection, which never
     * run at the same time */
    double *real;           /* double(cur), then the lightness of cur */
    fftw_complex *half;     /* its r2c half spectrum */
    fftw_complex *spec;     /* full spectrum of gray */
    double *e_img;          /* D, then E = D - R */
    int32_t *hsum;          /* 16-wide row sums of squared differences */
    int32_t *lmse_sum;      /* 16x16 sums of squared differences */
    double *sd_err, *msk;   /* grid */
    double *terms;          /* MAD_NSUB x nblk */
    double *eta;            /* grid */

    MadTimes t_ref, t_score;
};

/* Arrays of a picture's size: 2 MiB aligned and, where the kernel gives
 * transparent huge pages on request, backed by them.  A column batch
 * touches every row of its arrays, one 4 KiB page per row at 2048 columns,
 * which would thrash the TLB.  Alignment is a multiple of FFTW's, so the
 * new-array execute functions accept these arrays. */
static void *big_alloc(size_t size)
{
    const size_t huge = (size_t)2 << 20;
    size_t align = size >= huge ? huge : 64;
    void *p = NULL;
    if (posix_memalign(&p, align, size) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    if (align == huge)
        madvise(p, size & ~(huge - 1), MADV_HUGEPAGE); /* a hint: failure is harmless */
#endif
    return p;
}

/* ---- tasks on the pool ------------------------------------------------- */

typedef void (*TaskFn)(MadContext *ctx, int task, MadWorker *wk);

typedef struct TaskRun {
    MadContext *ctx;
    TaskFn fn;
} TaskRun;

static void task_job(void *arg, int task, int worker)
{
    const TaskRun *r = arg;
    r->fn(r->ctx, task, &r->ctx->wk[worker]);
}

/* Runs tasks 0..ntasks-1 on the pool, at most nthreads at once (one
 * MadWorker's buffers each), the caller being one of them. */
static void run_tasks(MadContext *ctx, int ntasks, TaskFn fn)
{
    TaskRun r = { ctx, fn };
    mpe_pool_run_slots(ctx->pool, ntasks, ctx->nthreads, task_job, &r);
}

/* ---- 2-D transforms ------------------------------------------------------ */

/* Columns c0 .. c0+n-1 of src (rows ncols long) into n contiguous columns
 * of length h. */
static void cols_gather(fftw_complex *cols, const fftw_complex *src, int h, int ncols, int c0,
                        int n)
{
    for (int y = 0; y < h; y++) {
        size_t i = (size_t)y * ncols + c0;
        /* rows are kilobytes apart, too far for the hardware prefetcher */
        if (y + PREFETCH_ROWS < h)
            for (int j = 0; j < n; j += 4)
                __builtin_prefetch(src[i + (size_t)PREFETCH_ROWS * ncols + j]);
        for (int j = 0; j < n; j++) {
            cols[(size_t)j * h + y][0] = src[i + j][0];
            cols[(size_t)j * h + y][1] = src[i + j][1];
        }
    }
}

static void cols_scatter(fftw_complex *dst, const fftw_complex *cols, int h, int ncols, int c0,
                         int n)
{
    for (int y = 0; y < h; y++) {
        size_t i = (size_t)y * ncols + c0;
        for (int j = 0; j < n; j++) {
            dst[i + j][0] = cols[(size_t)j * h + y][0];
            dst[i + j][1] = cols[(size_t)j * h + y][1];
        }
    }
}

/* Width of the column batch starting at c0.  A short last batch goes one
 * column at a time, always at cols[0], so every execute on cols sees the
 * planning array's alignment and one of the two batch sizes planned. */
static int col_batch(int ncols, int c0)
{
    return ncols - c0 >= COL_BATCH ? COL_BATCH : 1;
}

/* In place: data = FFT_cols(data), or with mid given,
 * data = IFFT_cols(FFT_cols(data) . mid) in one pass over the columns. */
static void fft_cols(const MadContext *ctx, fftw_complex *data, const double *mid, int ncols,
                     fftw_complex *cols)
{
    int h = ctx->h;
    for (int c0 = 0, n; c0 < ncols; c0 += n) {
        n = col_batch(ncols, c0);
        cols_gather(cols, data, h, ncols, c0, n);
        fftw_execute_dft(ctx->p_cols[DIR_FWD][n == 1], cols, cols);
        if (mid) {
            for (int y = 0; y < h; y++)
                for (int j = 0; j < n; j++) {
                    double f = mid[(size_t)y * ncols + c0 + j];
                    cols[(size_t)j * h + y][0] *= f;
                    cols[(size_t)j * h + y][1] *= f;
                }
            fftw_execute_dft(ctx->p_cols[DIR_INV][n == 1], cols, cols);
        }
        cols_scatter(data, cols, h, ncols, c0, n);
    }
}

/* mag = |IFFT_cols(buf)| * scale (buf: h x w): the scatter keeps only the
 * modulus, so the complex subband is never written back. */
static void ifft_cols_modulus(const MadContext *ctx, double *mag, const fftw_complex *buf,
                              double scale, fftw_complex *cols)
{
    int h = ctx->h, w = ctx->w;
    for (int c0 = 0, n; c0 < w; c0 += n) {
        n = col_batch(w, c0);
        cols_gather(cols, buf, h, w, c0, n);
        fftw_execute_dft(ctx->p_cols[DIR_INV][n == 1], cols, cols);
        for (int y = 0; y < h; y++) {
            double *m = mag + (size_t)y * w + c0;
            int j = 0;
#if defined(__SSE2__)
            /* two square roots at a time and no errno branch; the same
             * IEEE operations as the scalar loop */
            __m128d k = _mm_set1_pd(scale);
            for (; j + 2 <= n; j += 2) {
                __m128d a = _mm_loadu_pd(cols[(size_t)j * h + y]);
                __m128d b = _mm_loadu_pd(cols[(size_t)(j + 1) * h + y]);
                a = _mm_mul_pd(a, a);
                b = _mm_mul_pd(b, b);
                __m128d sq = _mm_add_pd(_mm_unpacklo_pd(a, b), _mm_unpackhi_pd(a, b));
                _mm_storeu_pd(m + j, _mm_mul_pd(_mm_sqrt_pd(sq), k));
            }
#endif
            for (; j < n; j++) {
                double re = cols[(size_t)j * h + y][0], im = cols[(size_t)j * h + y][1];
                m[j] = sqrt(re * re + im * im) * scale;
            }
        }
    }
}

/* ---- filters (built in open, in parallel) ------------------------------- */

static void task_build_filter(MadContext *ctx, int task, MadWorker *wk)
{
    (void)wk;
    if (task < MAD_NSCALE)
        mad_loggabor_radial(ctx->lg_rad + (size_t)task * ctx->npix, task, ctx->w, ctx->h);
    else if (task < MAD_NSCALE + MAD_NORIENT)
        mad_loggabor_angular(ctx->lg_ang + (size_t)(task - MAD_NSCALE) * ctx->npix,
                             task - MAD_NSCALE, ctx->w, ctx->h);
    else
        mad_csf_half(ctx->csf, ctx->w, ctx->h, 1.0 / (double)ctx->npix);
}

/* ---- phase A: gray spectrum, local MSE ----------------------------------- */

static void gray_spectrum(MadContext *ctx, MadWorker *wk)
{
    int w = ctx->w, h = ctx->h, hc = ctx->hc;
    double t0 = mpe_time_s();
    /* Every log-Gabor filter is 0 at DC, so subtracting a constant from the
     * picture changes no subband; taking off its rounded mean keeps the
     * transform's rounding from spilling the DC term into the other bins.
     * That makes a flat picture transform to exactly 0 at every size, as
     * SPEC §7 says it must (sigma exactly 0, skew = kurt = 0); without it
     * sizes with large prime factors (Rader/Bluestein paths) leave ~1e-13
     * there, and skewness and kurtosis of that noise are O(1). */
    uint64_t sum = 0;
    for (int y = 0; y < h; y++) {
        const uint8_t *s = ctx->cur + y * ctx->cur_stride;
        for (int x = 0; x < w; x++)
            sum += s[x];
    }
    double mean = (double)((sum + ctx->npix / 2) / ctx->npix);
    for (int y = 0; y < h; y++) {
        const uint8_t *s = ctx->cur + y * ctx->cur_stride;
        double *d = ctx->real + (size_t)y * w;
        for (int x = 0; x < w; x++)
            d[x] = s[x] - mean;
    }
    double t1 = mpe_time_s();
    fftw_execute_dft_r2c(ctx->p_rows_r2c, ctx->real, ctx->half);
    fft_cols(ctx, ctx->half, NULL, hc, wk->cols);
    double t2 = mpe_time_s();
    /* the log-Gabor filters are one-sided, so they need the whole spectrum:
     * F(k, l) = conj(F(-k, -l)) for the columns r2c leaves out */
    for (int k = 0; k < h; k++) {
        fftw_complex *row = ctx->spec + (size_t)k * w;
        const fftw_complex *src = ctx->half + (size_t)k * hc;
        const fftw_complex *mir = ctx->half + (size_t)((h - k) % h) * hc;
        memcpy(row, src, (size_t)hc * sizeof(*row));
        for (int l = hc; l < w; l++) {
            row[l][0] = mir[w - l][0];
            row[l][1] = -mir[w - l][1];
        }
    }
    double t3 = mpe_time_s();
    wk->t[MAD_STAGE_FILTER] += (t1 - t0) + (t3 - t2);
    wk->t[MAD_STAGE_FFT] += t2 - t1;
}

/* The original's symmetric padding: the edge sample is repeated. */
static inline int mirror(int i, int n)
{
    return i < 0 ? -i - 1 : i >= n ? 2 * n - 1 - i : i;
}

/* lmse(p, q) = mean of (g_ref - g_dst)^2 over rows p-7..p+8, cols q-7..q+8
 * (SPEC §3.5); kept as exact integer sums, lmse = sum / 256. */
static void local_mse(MadContext *ctx, MadWorker *wk)
{
    int w = ctx->w, h = ctx->h;
    double t0 = mpe_time_s();
    for (int y = 0; y < h; y++) {
        const uint8_t *a = ctx->g_ref + (size_t)y * w;
        const uint8_t *b = ctx->cur + y * ctx->cur_stride;
        int32_t *o = ctx->hsum + (size_t)y * w;
        int32_t s = 0;
        for (int x = -7; x <= 8; x++) {
            int d = a[mirror(x, w)] - b[mirror(x, w)];
            s += d * d;
        }
        o[0] = s;
        for (int x = 1; x < w; x++) {
            int xi = mirror(x + 8, w), xo = mirror(x - 8, w);
            int di = a[xi] - b[xi], dout = a[xo] - b[xo];
            s += di * di - dout * dout;
            o[x] = s;
        }
    }
    int32_t *acc = ctx->lmse_sum;
    memset(acc, 0, (size_t)w * sizeof(*acc));
    for (int y = -7; y <= 8; y++) {
        const int32_t *r = ctx->hsum + (size_t)mirror(y, h) * w;
        for (int x = 0; x < w; x++)
            acc[x] += r[x];
    }
    for (int y = 1; y < h; y++) {
        const int32_t *prev = ctx->lmse_sum + (size_t)(y - 1) * w;
        const int32_t *in = ctx->hsum + (size_t)mirror(y + 8, h) * w;
        const int32_t *out = ctx->hsum + (size_t)mirror(y - 8, h) * w;
        int32_t *o = ctx->lmse_sum + (size_t)y * w;
        for (int x = 0; x < w; x++)
            o[x] = prev[x] + in[x] - out[x];
    }
    wk->t[MAD_STAGE_FILTER] += mpe_time_s() - t0;
}

static void task_phase_a(MadContext *ctx, int task, MadWorker *wk)
{
    if (task == 0)
        gray_spectrum(ctx, wk);
    else
        local_mse(ctx, wk);
}

/* ---- phase B: detection ------------------------------------------------- */

/* SPEC §3.4, on the block grid. */
static double visibility(double mu_ref, double sd_ref, double sd_err)
{
    const double g_thresh = 0.5, ci_thrsh = -5.0, cd_thrsh = -5.0;
    double ci_ref = log(sd_ref / mu_ref);
    double ci_dst = mu_ref < g_thresh ? -INFINITY : log(sd_err / mu_ref);
    /* comparisons are strict; NaN (0/0 outside tiles) falls through to 0 */
    if (ci_ref > ci_thrsh && ci_dst > ci_ref)
        return ci_dst - ci_ref;
    if (ci_ref <= ci_thrsh && ci_dst > cd_thrsh)
        return ci_dst - cd_thrsh;
    return 0.0;
}

static void detect(MadContext *ctx, MadWorker *wk)
{
    int w = ctx->w, h = ctx->h;
    double *out = ctx->cur_is_ref ? ctx->r_img : ctx->e_img;
    double t0 = mpe_time_s();
    for (int y = 0; y < h; y++) {
        const uint8_t *s = ctx->cur + y * ctx->cur_stride;
        double *d = ctx->real + (size_t)y * w;
        for (int x = 0; x < w; x++)
            d[x] = ctx->lut[s[x]];
    }
    double t1 = mpe_time_s();
    fftw_execute_dft_r2c(ctx->p_rows_r2c, ctx->real, ctx->half);
    /* column FFT, CSF (with the inverse's 1/(w*h)), inverse column FFT in
     * one pass over the columns */
    fft_cols(ctx, ctx->half, ctx->csf, ctx->hc, wk->cols);
    fftw_execute_dft_c2r(ctx->p_rows_c2r, ctx->half, out);
    double t2 = mpe_time_s();
    if (ctx->cur_is_ref) {
        /* msk is free until the first score: it holds the 8x8 stds here */
        mad_stats_detect(ctx->mu_ref, NULL, ctx->msk, ctx->r_img, w, w, h, wk->scratch);
        mad_modified_std(ctx->sd_ref, ctx->msk, w, h);
    } else {
        for (size_t i = 0; i < ctx->npix; i++)
            ctx->e_img[i] -= ctx->r_img[i];
        mad_stats_detect(NULL, ctx->sd_err, NULL, ctx->e_img, w, w, h, wk->scratch);
        for (size_t b = 0; b < ctx->nblk; b++)
            ctx->msk[b] = visibility(ctx->mu_ref[b], ctx->sd_ref[b], ctx->sd_err[b]);
    }
    double t3 = mpe_time_s();
    wk->t[MAD_STAGE_FILTER] += t1 - t0;
    wk->t[MAD_STAGE_FFT] += t2 - t1;
    wk->t[MAD_STAGE_STATS] += t3 - t2;
}

/* ---- phase B: appearance ------------------------------------------------ */

static void subband(MadContext *ctx, int sub, MadWorker *wk)
{
    int s = sub / MAD_NORIENT, o = sub % MAD_NORIENT;
    const double *rad = ctx->lg_rad + (size_t)s * ctx->npix;
    const double *ang = ctx->lg_ang + (size_t)o * ctx->npix;
    size_t n = ctx->npix, nb = ctx->nblk;
    fftw_complex *buf = wk->buf;
    double t0 = mpe_time_s();
    /* EO = IFFT2(F . radial . angular): each row filtered and transformed
     * while it is in cache, then the columns, whose scatter keeps only the
     * modulus */
    for (int y0 = 0; y0 < ctx->h; y0 += ROW_BATCH) {
        int nr = MPE_MIN(ROW_BATCH, ctx->h - y0);
        size_t i0 = (size_t)y0 * ctx->w, i1 = i0 + (size_t)nr * ctx->w;
        for (size_t i = i0; i < i1; i++) {
            double f = rad[i] * ang[i];
            buf[i][0] = ctx->spec[i][0] * f;
            buf[i][1] = ctx->spec[i][1] * f;
        }
        if (nr == ROW_BATCH)
            fftw_execute_dft(ctx->p_row_inv[0], buf + i0, buf + i0);
        else
            for (int y = y0; y < y0 + nr; y++)
                fftw_execute_dft(ctx->p_row_inv[1], buf + (size_t)y * ctx->w,
                                 buf + (size_t)y * ctx->w);
    }
    double *a = wk->mag;
    ifft_cols_modulus(ctx, a, buf, 1.0 / (double)n, wk->cols);
    double t2 = mpe_time_s();
    if (ctx->cur_is_ref) {
        double *st = ctx->st_ref + (size_t)sub * 3 * nb;
        mad_stats_appear(st, st + nb, st + 2 * nb, a, ctx->w, ctx->w, ctx->h, wk->scratch);
    } else {
        const double *sr = ctx->st_ref + (size_t)sub * 3 * nb;
        double *term = ctx->terms + (size_t)sub * nb;
        mad_stats_appear(wk->st[0], wk->st[1], wk->st[2], a, ctx->w, ctx->w, ctx->h,
                         wk->scratch);
        for (size_t b = 0; b < nb; b++)
            term[b] = fabs(sr[b] - wk->st[0][b]) + 2.0 * fabs(sr[nb + b] - wk->st[1][b]) +
                      fabs(sr[2 * nb + b] - wk->st[2][b]);
    }
    double t3 = mpe_time_s();
    wk->t[MAD_STAGE_FFT] += t2 - t0;
    wk->t[MAD_STAGE_STATS] += t3 - t2;
}

/* Task 0 (the longest chain) first, then the 20 subbands. */
static void task_phase_b(MadContext *ctx, int task, MadWorker *wk)
{
    if (task == 0)
        detect(ctx, wk);
    else
        subband(ctx, task - 1, wk);
}

/* ---- collapse ------------------------------------------------------------ */

/* Sum of squares of a tile-constant grid map times an optional per-pixel
 * factor over the kept region, rows and cols [16, size-18] (SPEC §3.6). */
static double kept_sum_sq(const MadContext *ctx, const double *grid, const int32_t *lsum)
{
    double total = 0.0;
    for (int y = MAD_CROP_LO; y <= ctx->h - 1 - MAD_CROP_HI; y++) {
        const double *g = grid + (size_t)(y / MAD_STEP) * ctx->nbc;
        double row = 0.0;
        for (int x = MAD_CROP_LO; x <= ctx->w - 1 - MAD_CROP_HI; x++) {
            double v = g[x / MAD_STEP];
            if (lsum)
                v *= lsum[(size_t)y * ctx->w + x] / 256.0;
            row += v * v;
        }
        total += row;
    }
    return total;
}

static int dump_maps(MadContext *ctx, MpeError *err)
{
    return mad_dump_maps(ctx->dump_dir, ctx->w, ctx->h, ctx->nbr, ctx->nbc, ctx->msk, ctx->lmse_sum,
                         ctx->eta, err);
}

/* ---- the MadImpl -------------------------------------------------------- */

static int cpu_probe(char *why, size_t why_size)
{
    if (why && why_size)
        why[0] = '\0';
    return 0;
}

static void cpu_close(MadContext *ctx)
{
    if (!ctx)
        return;
    mpe_pool_close(ctx->own_pool);
    fftw_plan plans[] = { ctx->p_rows_r2c,   ctx->p_rows_c2r,   ctx->p_row_inv[0],
                          ctx->p_row_inv[1], ctx->p_cols[0][0], ctx->p_cols[0][1],
                          ctx->p_cols[1][0], ctx->p_cols[1][1] };
    for (size_t i = 0; i < sizeof(plans) / sizeof(plans[0]); i++)
        if (plans[i])
            fftw_destroy_plan(plans[i]);
    for (int i = 0; i < MAD_MAX_THREADS; i++) {
        free(ctx->wk[i].buf);
        free(ctx->wk[i].cols);
        free(ctx->wk[i].mag);
        free(ctx->wk[i].scratch);
        for (int k = 0; k < 3; k++)
            free(ctx->wk[i].st[k]);
    }
    free(ctx->csf);
    free(ctx->lg_rad);
    free(ctx->lg_ang);
    free(ctx->g_ref);
    free(ctx->r_img);
    free(ctx->mu_ref);
    free(ctx->sd_ref);
    free(ctx->st_ref);
    free(ctx->real);
    free(ctx->half);
    free(ctx->spec);
    free(ctx->e_img);
    free(ctx->hsum);
    free(ctx->lmse_sum);
    free(ctx->sd_err);
    free(ctx->msk);
    free(ctx->terms);
    free(ctx->eta);
    free(ctx->dump_dir);
    free(ctx);
}

static int cpu_open(MadContext **pctx, int width, int height, const MadOptions *opt,
                    MpeError *err)
{
    MadContext *ctx = NULL;
    int ret, threads = opt ? opt->threads : 0;

    if ((ret = mad_check_open(pctx, width, height, opt, err)) < 0)
        return ret;
    ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return mpe_error(err, -ENOMEM, "mad: out of memory");
    if (opt && opt->pool) {
        ctx->pool = opt->pool;
    } else {
        threads = threads ? threads : mpe_cpu_count();
        if ((ret = mpe_pool_open(&ctx->own_pool, MPE_MIN(threads, MAD_MAX_THREADS), err)) < 0)
            goto fail;
        ctx->pool = ctx->own_pool;
    }
    ctx->w = width;
    ctx->h = height;
    ctx->hc = width / 2 + 1;
    ctx->nbr = mad_grid_rows(height);
    ctx->nbc = mad_grid_cols(width);
    ctx->npix = (size_t)width * height;
    ctx->nblk = (size_t)ctx->nbr * ctx->nbc;
    ctx->nhalf = (size_t)height * ctx->hc;
    ctx->nthreads = MPE_MIN(mpe_pool_threads(ctx->pool), MAD_MAX_THREADS);
    if (opt && opt->dump_dir && !(ctx->dump_dir = strdup(opt->dump_dir)))
        goto nomem;

    size_t n = ctx->npix, nb = ctx->nblk, nh = ctx->nhalf;
    ctx->csf = big_alloc(nh * sizeof(double));
    ctx->lg_rad = big_alloc(MAD_NSCALE * n * sizeof(double));
    ctx->lg_ang = big_alloc(MAD_NORIENT * n * sizeof(double));
    ctx->g_ref = malloc(n);
    ctx->r_img = big_alloc(n * sizeof(double));
    ctx->mu_ref = malloc(nb * sizeof(double));
    ctx->sd_ref = malloc(nb * sizeof(double));
    ctx->st_ref = malloc(MAD_NSUB * 3 * nb * sizeof(double));
    ctx->real = big_alloc(n * sizeof(double));
    ctx->half = big_alloc(nh * sizeof(fftw_complex));
    ctx->spec = big_alloc(n * sizeof(fftw_complex));
    ctx->e_img = big_alloc(n * sizeof(double));
    ctx->hsum = malloc(n * sizeof(int32_t));
    ctx->lmse_sum = malloc(n * sizeof(int32_t));
    ctx->sd_err = malloc(nb * sizeof(double));
    ctx->msk = malloc(nb * sizeof(double));
    ctx->terms = malloc(MAD_NSUB * nb * sizeof(double));
    ctx->eta = malloc(nb * sizeof(double));
    if (!ctx->csf || !ctx->lg_rad || !ctx->lg_ang || !ctx->g_ref || !ctx->r_img || !ctx->mu_ref ||
        !ctx->sd_ref || !ctx->st_ref || !ctx->real || !ctx->half || !ctx->spec || !ctx->e_img ||
        !ctx->hsum || !ctx->lmse_sum || !ctx->sd_err || !ctx->msk || !ctx->terms || !ctx->eta)
        goto nomem;
    for (int i = 0; i < ctx->nthreads; i++) {
        MadWorker *wk = &ctx->wk[i];
        wk->buf = big_alloc(n * sizeof(fftw_complex));
        wk->cols = big_alloc((size_t)COL_BATCH * height * sizeof(fftw_complex));
        wk->mag = big_alloc(n * sizeof(double));
        wk->scratch = malloc(mad_stats_scratch_size(width) * sizeof(double));
        if (!wk->buf || !wk->cols || !wk->mag || !wk->scratch)
            goto nomem;
        for (int k = 0; k < 3; k++)
            if (!(wk->st[k] = malloc(nb * sizeof(double))))
                goto nomem;
    }

    mad_lightness_lut(ctx->lut);
    run_tasks(ctx, MAD_NSCALE + MAD_NORIENT + 1, task_build_filter);

    /* FFTW_ESTIMATE leaves the arrays alone and picks the same plan every
     * time; all arrays come from big_alloc, so the new-array execute
     * functions may use them with these plans */
    {
        int n_w = width, n_h = height, hc = ctx->hc;
        fftw_complex *b = ctx->wk[0].buf, *c = ctx->wk[0].cols;
        ctx->p_rows_r2c = fftw_plan_many_dft_r2c(1, &n_w, height, ctx->real, NULL, 1, width,
                                                 ctx->half, NULL, 1, hc, FFTW_ESTIMATE);
        ctx->p_rows_c2r = fftw_plan_many_dft_c2r(1, &n_w, height, ctx->half, NULL, 1, hc,
                                                 ctx->e_img, NULL, 1, width, FFTW_ESTIMATE);
        for (int one = 0; one < 2; one++)
            ctx->p_row_inv[one] =
                fftw_plan_many_dft(1, &n_w, one ? 1 : ROW_BATCH, b, NULL, 1, width, b, NULL, 1,
                                   width, FFTW_BACKWARD, FFTW_ESTIMATE);
        for (int d = 0; d < 2; d++)
            for (int one = 0; one < 2; one++)
                ctx->p_cols[d][one] = fftw_plan_many_dft(
                    1, &n_h, one ? 1 : COL_BATCH, c, NULL, 1, height, c, NULL, 1, height,
                    d == DIR_FWD ? FFTW_FORWARD : FFTW_BACKWARD, FFTW_ESTIMATE);
    }
    if (!ctx->p_rows_r2c || !ctx->p_rows_c2r || !ctx->p_row_inv[0] || !ctx->p_row_inv[1] ||
        !ctx->p_cols[0][0] ||
        !ctx->p_cols[0][1] || !ctx->p_cols[1][0] || !ctx->p_cols[1][1]) {
        ret = mpe_error(err, -ENOMEM, "mad: FFTW could not plan a %dx%d transform", width,
                        height);
        goto fail;
    }
    *pctx = ctx;
    return 0;

nomem:
    ret = mpe_error(err, -ENOMEM, "mad: out of memory for %dx%d", width, height);
fail:
    cpu_close(ctx);
    return ret;
}

static void times_begin(MadContext *ctx)
{
    for (int i = 0; i < ctx->nthreads; i++)
        memset(ctx->wk[i].t, 0, sizeof(ctx->wk[i].t));
}

static void times_end(const MadContext *ctx, MadTimes *t, double t0)
{
    memset(t, 0, sizeof(*t));
    for (int i = 0; i < ctx->nthreads; i++)
        for (int k = 0; k < MAD_NSTAGE; k++)
            t->stage[k] += ctx->wk[i].t[k];
    t->wall = mpe_time_s() - t0;
    t->threads = ctx->nthreads;
}

static int cpu_set_reference(MadContext *ctx, const uint8_t *ref, ptrdiff_t stride,
                             MpeError *err)
{
    int ret = mad_check_picture(ctx != NULL, ctx ? ctx->w : 0, ref, stride, "reference", err);
    if (ret < 0)
        return ret;
    double t0 = mpe_time_s();
    times_begin(ctx);
    ctx->have_ref = 0;
    for (int y = 0; y < ctx->h; y++)
        memcpy(ctx->g_ref + (size_t)y * ctx->w, ref + y * stride, (size_t)ctx->w);
    ctx->cur = ref;
    ctx->cur_stride = stride;
    ctx->cur_is_ref = 1;
    run_tasks(ctx, 1, task_phase_a);   /* gray spectrum only */
    run_tasks(ctx, 1 + MAD_NSUB, task_phase_b);
    ctx->cur = NULL;
    ctx->have_ref = 1;
    times_end(ctx, &ctx->t_ref, t0);
    return 0;
}

static int cpu_score(MadContext *ctx, const uint8_t *dst, ptrdiff_t stride, MadScore *out,
                     MpeError *err)
{
    int ret = mad_check_score(ctx != NULL, ctx ? ctx->w : 0, ctx && ctx->have_ref, dst, stride,
                              out, err);
    if (ret < 0)
        return ret;
    double t0 = mpe_time_s();
    times_begin(ctx);
    ctx->cur = dst;
    ctx->cur_stride = stride;
    ctx->cur_is_ref = 0;
    run_tasks(ctx, 2, task_phase_a);
    run_tasks(ctx, 1 + MAD_NSUB, task_phase_b);
    ctx->cur = NULL;

    double t1 = mpe_time_s();
    for (size_t b = 0; b < ctx->nblk; b++) {
        double e = 0.0;
        /* scale outer, orientation inner, as the original loops */
        for (int sub = 0; sub < MAD_NSUB; sub++)
            e += mad_scale_weight[sub / MAD_NORIENT] * ctx->terms[(size_t)sub * ctx->nblk + b];
        ctx->eta[b] = e;
    }
    double count = (double)(ctx->h - MAD_CROP_LO - MAD_CROP_HI) *
                   (double)(ctx->w - MAD_CROP_LO - MAD_CROP_HI);
    double d_detect = 200.0 * sqrt(kept_sum_sq(ctx, ctx->msk, ctx->lmse_sum) / count);
    double d_appear = sqrt(kept_sum_sq(ctx, ctx->eta, NULL) / count);
    mad_combine(out, d_detect, d_appear);
    ctx->wk[0].t[MAD_STAGE_STATS] += mpe_time_s() - t1;

    ret = ctx->dump_dir ? dump_maps(ctx, err) : 0;
    times_end(ctx, &ctx->t_score, t0);
    return ret;
}

void mad_cpu_times(const MadContext *ctx, MadTimes *set_reference, MadTimes *score)
{
    if (set_reference)
        *set_reference = ctx->t_ref;
    if (score)
        *score = ctx->t_score;
}

const MadImpl mad_cpu = {
    .name = "mad_cpu",
    .probe = cpu_probe,
    .open = cpu_open,
    .close = cpu_close,
    .set_reference = cpu_set_reference,
    .score = cpu_score,
};
