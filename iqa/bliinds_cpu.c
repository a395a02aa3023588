/* bliinds_cpu.c — BLIINDS-II in C, double precision as the original
 * (../shared/reference/bliinds/SPEC.md; section numbers below are its).
 *
 * Per scale, the image lives in a zero-filled buffer laid out exactly as the
 * original's blkproc padding: (3*rows + 2) x (3*cols + 2) with the image at
 * (1, 1), so every 5x5 block (stride 3) and every 3x3 filter tap reads a
 * plain array element and the zeros the original sees.  A block row's DCT
 * is done as matrix products: the vertical 5-point DCT of its five buffer
 * rows once for every column (shared by the overlapping blocks), then the
 * horizontal one per block.
 *
 * Threads: each score() runs as a sequence of fork-join stages on the
 * caller's MpePool (BliindsOptions.pool) or the context's own (load, blocks of scale 1, downsample, blocks of scale
 * 2, ..., pooling), items being image or block rows.  An item writes only
 * its own rows, and each pooled feature is reduced by one item in a fixed
 * order (per-row sums, then rows in order; the top 10 % by selection), so
 * the result does not depend on the thread count or the scheduling. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/threads.h"
#include "common/timer.h"
#include "iqa/bliinds.h"
#include "iqa/bliinds_internal.h"

#define NSCALES 3
#define NPOOLED 4   /* zeta, gamma, subband, orientvar: the pooled maps */
#define LANES 16    /* blocks whose parameters are computed side by side */
#define MAX_DIM (1 << 20)
#define PI 3.14159265358979323846

const char *const bliinds_map_names[BLIINDS_NMAPS] = {
    "zeta", "gamma", "subband", "orientvar", "ori1", "ori2", "ori3",
};

/* ---- gamma lookup and pooling (shared with other implementations) ---- */

void bliinds_gamma_table_init(double ratio[BLIINDS_GAMMA_TABLE_SIZE])
{
    for (int k = 0; k < BLIINDS_GAMMA_TABLE_SIZE; k++) {
        double g = bliinds_gamma_shape(k);
        double g2 = tgamma(2.0 / g);
        ratio[k] = tgamma(1.0 / g) * tgamma(3.0 / g) / (g2 * g2);
    }
}

double bliinds_gamma_lookup_linear(const double ratio[BLIINDS_GAMMA_TABLE_SIZE], double rho)
{
    for (int k = 0; k < BLIINDS_GAMMA_TABLE_SIZE - 1; k++)
        if (rho <= ratio[k] && rho > ratio[k + 1])
            return bliinds_gamma_shape(k);
    return BLIINDS_GAMMA_NONE;
}

/* The table decreases strictly, so "first k with r_{k+1} < rho <= r_k" is
 * k = n - 1 where n counts the entries >= rho; n = 0 (rho above the table or
 * NaN) and n = 9971 (rho at or below the last entry) have no such k.  n is
 * found by a branch-free binary search whose steps do not depend on the
 * data, run for many blocks side by side so their table loads overlap. */
static void gamma_lookup_lanes(const double *ratio, const double *rho, double *gamma, int lanes)
{
    int base[LANES] = { 0 };   /* lanes <= LANES */
    for (int len = BLIINDS_GAMMA_TABLE_SIZE; len > 1; len -= len / 2)
        for (int b = 0; b < lanes; b++)
            base[b] += ratio[base[b] + len / 2] >= rho[b] ? len / 2 : 0;
    for (int b = 0; b < lanes; b++) {
        int n = base[b] + (ratio[base[b]] >= rho[b]);
        gamma[b] = n >= 1 && n < BLIINDS_GAMMA_TABLE_SIZE ? bliinds_gamma_shape(n - 1)
                                                          : BLIINDS_GAMMA_NONE;
    }
}

double bliinds_gamma_lookup(const double ratio[BLIINDS_GAMMA_TABLE_SIZE], double rho)
{
    double gamma;
    gamma_lookup_lanes(ratio, &rho, &gamma, 1);
    return gamma;
}

static void copy_signed(double *dst, const double *x, size_t n, int negate)
{
    if (negate)
        for (size_t i = 0; i < n; i++)
            dst[i] = -x[i];
    else
        memcpy(dst, x, n * sizeof(*x));
}

static double median3(double a, double b, double c)
{
    if (a < b)
        return b < c ? b : (a < c ? c : a);
    return a < c ? a : (b < c ? c : b);
}

static int cmp_descending(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a < b) - (a > b);
}

/* Rearranges a[0..n) so that a[0..k) holds its k largest values: quickselect
 * with a three-way partition, which finishes at once on the long runs of
 * equal values gamma maps have (every flat block is 11).  Input built to
 * defeat the median-of-3 pivot would make it quadratic; after many rounds
 * it sorts what is left instead. */
static void select_largest(double *a, size_t n, size_t k)
{
    size_t lo = 0, hi = n;
    for (int round = 0; hi - lo > 1; round++) {
        if (round == 100) {
            qsort(a + lo, hi - lo, sizeof(*a), cmp_descending);
            return;
        }
        double p = median3(a[lo], a[lo + (hi - lo) / 2], a[hi - 1]);
        size_t lt = lo, i = lo, gt = hi;
        while (i < gt) {
            double v = a[i];
            if (v > p) {
                a[i++] = a[lt];
                a[lt++] = v;
            } else if (v < p) {
                a[i] = a[--gt];
                a[gt] = v;
            } else {
                i++;
            }
        }
        /* [lo, lt) > p, [lt, gt) == p, [gt, hi) < p */
        if (k < lt)
            hi = lt;
        else if (k <= gt)
            return;
        else
            lo = gt;
    }
}

/* Large maps: a threshold t from a fixed stratified sample of the map, a bit
 * below where the k-th largest should be, lets one pass keep only the values
 * >= t; when at least k are kept they hold the k largest, and the selection
 * works on those few.  Otherwise (an unlucky sample) select on everything. */
double bliinds_pool_top(double *scratch, const double *x, size_t n, size_t k, int lowest)
{
    enum { SAMPLE = 2048, MARGIN = 64 };
    const double sign = lowest ? -1.0 : 1.0;
    size_t m = n, r = (SAMPLE * k + n - 1) / n + MARGIN;   /* sample rank of t */
    double sum = 0.0;

    if (n >= 4 * SAMPLE && r < SAMPLE) {
        size_t step = n / SAMPLE;
        for (size_t i = 0; i < SAMPLE; i++)
            scratch[i] = sign * x[i * step + (i * 2654435761u) % step];
        select_largest(scratch, SAMPLE, r);
        double t = scratch[0];
        for (size_t i = 1; i < r; i++)
            t = scratch[i] < t ? scratch[i] : t;
        m = 0;
        for (size_t i = 0; i < n; i++) {
            double v = sign * x[i];
            scratch[m] = v;
            m += v >= t;
        }
        if (m < k)
            m = n;
    }
    if (m == n)
        copy_signed(scratch, x, n, lowest);
    select_largest(scratch, m, k);
    for (size_t i = 0; i < k; i++)
        sum += scratch[i];
    return sign * sum / (double)k;
}

double bliinds_pool_top_sort(double *scratch, const double *x, size_t n, size_t k, int lowest)
{
    double sum = 0.0;
    copy_signed(scratch, x, n, lowest);
    qsort(scratch, n, sizeof(*scratch), cmp_descending);
    for (size_t i = 0; i < k; i++)
        sum += scratch[i];
    return (lowest ? -sum : sum) / (double)k;
}

/* ---- per-block parameters (§5) ----------------------------------------- */

/* Blocks are processed LANES at a time, each statistic as a loop over
 * coefficients with the blocks innermost: every block still sums its values
 * in the same order (so the results are those of one block at a time), but
 * the LANES independent sums overlap instead of waiting on each other, and
 * the compiler vectorises across blocks.  Unrolling the lanes loop inside a
 * loop over coefficients keeps the accumulators in registers (1.5x for the
 * whole block stage with gcc -O2). */
#define UNROLL_LANES _Pragma("GCC unroll 16")

typedef double Lanes[LANES];

/* Coefficient positions u*5 + v of the 5x5 DCT. */
static const int ac_all[24] = { 1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12,
                                13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24 };
static const int band_1[5] = { 1, 2, 5, 6, 10 };                                /* u+v 1..2 */
static const int band_2[13] = { 3, 4, 7, 8, 9, 11, 12, 13, 15, 16, 17, 20, 21 }; /* 3..5 */
static const int band_3[6] = { 14, 18, 19, 22, 23, 24 };                        /* 6..8 */
static const int orient_region[3][8] = {
    { 1, 2, 3, 4, 7, 8, 9, 14 },        /* A: above the diagonal */
    { 6, 12, 13, 17, 18, 19, 23, 24 },  /* B: along it */
    { 5, 10, 15, 20, 11, 16, 21, 22 },  /* C: A transposed */
};

/* Mean (divide by n) and sample variance (divide by n - 1, about the mean:
 * two passes, as MATLAB's var) of coefficients idx[0..n), or of their
 * magnitudes. */
static inline void lanes_stats(const Lanes *d, const int *idx, int n, int magnitude, Lanes mean,
                               Lanes var)
{
    for (int b = 0; b < LANES; b++)
        mean[b] = var[b] = 0.0;
    for (int i = 0; i < n; i++)
        UNROLL_LANES
        for (int b = 0; b < LANES; b++)
            mean[b] += magnitude ? fabs(d[idx[i]][b]) : d[idx[i]][b];
    for (int b = 0; b < LANES; b++)
        mean[b] /= n;
    for (int i = 0; i < n; i++)
        UNROLL_LANES
        for (int b = 0; b < LANES; b++) {
            double e = (magnitude ? fabs(d[idx[i]][b]) : d[idx[i]][b]) - mean[b];
            var[b] += e * e;
        }
    for (int b = 0; b < LANES; b++)
        var[b] /= n - 1;
}

/* d: the 5x5 DCTs of LANES blocks, d[u*5 + v][block] (DC unused). */
static void block_params(const double *ratio, const Lanes *d, Lanes out[BLIINDS_NMAPS])
{
    Lanes mean, var, dev, rho, e1, e2, e3, zr[3];

    /* §5.1: std / (mean + 1e-7) of the magnitudes */
    lanes_stats(d, ac_all, 24, 1, mean, var);
    for (int b = 0; b < LANES; b++)
        out[BLIINDS_MAP_ZETA][b] = sqrt(var[b]) / (mean[b] + 1e-7);

    /* §5.2: epsilon on the squared mean absolute deviation */
    lanes_stats(d, ac_all, 24, 0, mean, var);
    for (int b = 0; b < LANES; b++)
        dev[b] = 0.0;
    for (int i = 0; i < 24; i++)
        UNROLL_LANES
        for (int b = 0; b < LANES; b++)
            dev[b] += fabs(d[ac_all[i]][b] - mean[b]);
    for (int b = 0; b < LANES; b++) {
        double mad = dev[b] / 24;
        rho[b] = var[b] / (mad * mad + 1e-7);
    }
    gamma_lookup_lanes(ratio, rho, out[BLIINDS_MAP_GAMMA], LANES);

    /* §5.3, with the original's E_3 + E_1 denominator for R2 */
    lanes_stats(d, band_1, 5, 0, mean, e1);
    lanes_stats(d, band_2, 13, 0, mean, e2);
    lanes_stats(d, band_3, 6, 0, mean, e3);
    for (int b = 0; b < LANES; b++) {
        double e12 = (e1[b] + e2[b]) / 2.0;
        double r3 = fabs(e3[b] - e12) / (e3[b] + e12 + 1e-8);
        double r2 = fabs(e2[b] - e1[b]) / (e3[b] + e1[b] + 1e-8);
        out[BLIINDS_MAP_SUBBAND][b] = (r2 + r3) / 2.0;
    }

    /* §5.4: zeta per orientation region, then their sample variance */
    for (int r = 0; r < 3; r++) {
        lanes_stats(d, orient_region[r], 8, 1, mean, var);
        for (int b = 0; b < LANES; b++)
            out[BLIINDS_MAP_ORI1 + r][b] = zr[r][b] = sqrt(var[b]) / (mean[b] + 1e-7);
    }
    for (int b = 0; b < LANES; b++) {
        double m = (zr[0][b] + zr[1][b] + zr[2][b]) / 3;
        double v = (zr[0][b] - m) * (zr[0][b] - m) + (zr[1][b] - m) * (zr[1][b] - m) +
                   (zr[2][b] - m) * (zr[2][b] - m);
        out[BLIINDS_MAP_ORIENTVAR][b] = v / 2;
    }
}

/* ---- context ----------------------------------------------------------- */

typedef struct BliindsScale {
    int width, height;
    int rows, cols;        /* blocks */
    int pad_w, pad_h;      /* 3*cols + 2, 3*rows + 2 */
    double *pad;           /* zero except the image at (1, 1) */
    double *map[BLIINDS_NMAPS];
    double *row_sum[NPOOLED];  /* per block row, for the means */
} BliindsScale;

/* Per pool thread: a block row's vertical DCT (15 rows of scratch_w: 5
 * coefficients x 3 column phases, zero past the image's columns) and a
 * scale-1 map's worth of room for the selections. */
typedef struct BliindsScratch {
    double *dct_rows;
    double *select;
} BliindsScratch;

struct BliindsContext {
    BliindsScale scale[NSCALES];
    double dct[5][5];      /* C[k][n] = a(k) cos(pi (2n+1) k / 10) */
    double taps[2];        /* 1-D Gaussian, sigma 0.5: outer, centre */
    double ratio[BLIINDS_GAMMA_TABLE_SIZE];
    char *dump_dir;
    MpePool *pool;             /* the caller's (BliindsOptions.pool) or own_pool */
    MpePool *own_pool;
    BliindsScratch *scratch;   /* one per thread a stage runs on */
    int nscratch;
    int scratch_w;             /* row length of dct_rows: scale-1 cols + LANES + 1 */

    /* the call in progress */
    const uint8_t *img;
    ptrdiff_t stride;
    int cur;               /* the scale a stage works on */
    double features[BLIINDS_NFEATURES];
    BliindsStageTimes times;
};

static void load_row(void *opaque, int y, int worker)
{
    BliindsContext *ctx = opaque;
    BliindsScale *sc = &ctx->scale[0];
    const uint8_t *src = ctx->img + y * ctx->stride;
    double *dst = sc->pad + (size_t)(y + 1) * sc->pad_w + 1;
    (void)worker;
    for (int x = 0; x < sc->width; x++)
        dst[x] = src[x];
}

/* Vertical 5-point DCT, coefficient row c, of the five buffer rows at p
 * (pw apart), written split by column phase: out[ph * out_w + k] is the
 * value at buffer column 3k + ph.  The split lets the horizontal pass read
 * each block's taps as contiguous runs across blocks. */
static void dct_columns(double *restrict out, int out_w, const double *restrict p, int pw,
                        int cols, const double c[5])
{
    for (int ph = 0; ph < 3; ph++) {
        double *restrict o = out + (size_t)ph * out_w;
        const double *restrict q = p + ph;
        for (int k = 0; k < cols + (ph < 2); k++)
            o[k] = c[0] * q[3 * k] + c[1] * q[pw + 3 * k] + c[2] * q[2 * pw + 3 * k] +
                   c[3] * q[3 * pw + 3 * k] + c[4] * q[4 * pw + 3 * k];
    }
}

static void block_row(void *opaque, int i, int worker)
{
    BliindsContext *ctx = opaque;
    BliindsScale *sc = &ctx->scale[ctx->cur];
    double *tmp = ctx->scratch[worker].dct_rows;
    const int tw = ctx->scratch_w;
    const double *p = sc->pad + (size_t)3 * i * sc->pad_w;
    double sums[NPOOLED] = { 0 };
    size_t at = (size_t)i * sc->cols;

    /* vertical DCT of the block row's five buffer rows: tmp[(u*3 + ph)*tw + k]
     * is coefficient row u at buffer column 3k + ph (the pad has 3 cols + 2
     * columns: phases 0 and 1 run to k = cols, phase 2 to cols - 1) */
    for (int u = 0; u < 5; u++)
        dct_columns(tmp + (size_t)u * 3 * tw, tw, p, sc->pad_w, sc->cols, ctx->dct[u]);
    /* horizontal DCT and parameters, LANES blocks at a time; block j's tap c
     * is column 3j + c = phase c % 3 at k = j + c / 3.  Lanes past the row's
     * end compute on whatever finite values follow in tmp and are dropped. */
    for (int j0 = 0; j0 < sc->cols; j0 += LANES) {
        Lanes d[25], par[BLIINDS_NMAPS];
        int n = MPE_MIN(LANES, sc->cols - j0);
        for (int u = 0; u < 5; u++) {
            const double *t0 = tmp + (size_t)u * 3 * tw + j0, *t1 = t0 + tw, *t2 = t1 + tw;
            for (int v = u ? 0 : 1; v < 5; v++) {
                const double *c = ctx->dct[v];
                for (int b = 0; b < LANES; b++)
                    d[u * 5 + v][b] = t0[b] * c[0] + t1[b] * c[1] + t2[b] * c[2] +
                                      t0[b + 1] * c[3] + t1[b + 1] * c[4];
            }
        }
        block_params(ctx->ratio, d, par);
        for (int m = 0; m < BLIINDS_NMAPS; m++)
            memcpy(sc->map[m] + at + j0, par[m], n * sizeof(double));
        for (int b = 0; b < n; b++)
            for (int m = 0; m < NPOOLED; m++)
                sums[m] += par[m][b];
    }
    for (int m = 0; m < NPOOLED; m++)
        sc->row_sum[m][i] = sums[m];
}

/* §7: row y of scale cur + 1 = the 3x3 Gaussian over zero padding of scale
 * cur, at its odd rows and columns. */
static void downsample_row(void *opaque, int y, int worker)
{
    BliindsContext *ctx = opaque;
    const BliindsScale *src = &ctx->scale[ctx->cur];
    BliindsScale *dst = &ctx->scale[ctx->cur + 1];
    const double t = ctx->taps[0], c = ctx->taps[1];
    const int pw = src->pad_w;
    /* image row 2y+1 is buffer row 2y+2; its neighbours are 2y+1, 2y+3 */
    const double *r0 = src->pad + (size_t)(2 * y + 1) * pw;
    const double *r1 = r0 + pw, *r2 = r1 + pw;
    double *out = dst->pad + (size_t)(y + 1) * dst->pad_w + 1;
    (void)worker;
    for (int x = 0; x < dst->width; x++) {
        int cx = 2 * x + 1;   /* buffer columns 2x+1 .. 2x+3 */
        double h0 = t * r0[cx] + c * r0[cx + 1] + t * r0[cx + 2];
        double h1 = t * r1[cx] + c * r1[cx + 1] + t * r1[cx + 2];
        double h2 = t * r2[cx] + c * r2[cx + 1] + t * r2[cx + 2];
        out[x] = t * h0 + c * h1 + t * h2;
    }
}

/* Pooled features of job q: scale q / 4, parameter q % 4 (its mean over all
 * blocks and its 10 % tail).  Jobs of scale 1 come first, so the pool starts
 * the big ones first. */
static void pool_job(void *opaque, int q, int worker)
{
    BliindsContext *ctx = opaque;
    const BliindsScale *sc = &ctx->scale[q / NPOOLED];
    int m = q % NPOOLED;
    size_t n = (size_t)sc->rows * sc->cols;
    double sum = 0.0;
    for (int i = 0; i < sc->rows; i++)
        sum += sc->row_sum[m][i];
    double *f = ctx->features + 8 * (q / NPOOLED) + 2 * m;
    f[0] = sum / (double)n;
    f[1] = bliinds_pool_top(ctx->scratch[worker].select, sc->map[m], n, bliinds_pool_count(n),
                            m == BLIINDS_MAP_GAMMA);
}

/* Run one stage over n items on the pool; its wall time into *ms. */
static void run_stage(BliindsContext *ctx, int n, MpePoolFn fn, double *ms)
{
    double t0 = mpe_time_ms();
    mpe_pool_run_slots(ctx->pool, n, ctx->nscratch, fn, ctx);
    *ms = mpe_time_ms() - t0;
}

static int write_csv(const char *dir, int scale, const char *name, const double *v, int rows,
                     int cols, ptrdiff_t stride, MpeError *err)
{
    char path[4096];
    FILE *f;
    if (snprintf(path, sizeof(path), "%s/L%d_%s.csv", dir, scale + 1, name) >= (int)sizeof(path))
        return mpe_error(err, -ENAMETOOLONG, "%s: path too long", dir);
    if (!(f = fopen(path, "w")))
        return mpe_error(err, -errno, "%s: cannot create: %s", path, strerror(errno));
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            fprintf(f, "%.17g%c", v[r * stride + c], c + 1 < cols ? ',' : '\n');
    if (ferror(f) | fclose(f))
        return mpe_error(err, -EIO, "%s: write error", path);
    return 0;
}

int bliinds_dump_scale(const char *dir, int scale, const BliindsMaps *m, MpeError *err)
{
    int ret = write_csv(dir, scale, "image", m->image, m->height, m->width, m->image_stride, err);
    for (int k = 0; k < BLIINDS_NMAPS && ret == 0; k++)
        ret = write_csv(dir, scale, bliinds_map_names[k], m->map[k], m->rows, m->cols, m->cols, err);
    return ret;
}

static int dump_maps(const BliindsContext *ctx, MpeError *err)
{
    for (int s = 0; s < NSCALES; s++) {
        BliindsMaps m;
        int ret = bliinds_cpu_maps(ctx, s, &m);
        if (ret == 0)
            ret = bliinds_dump_scale(ctx->dump_dir, s, &m, err);
        if (ret < 0)
            return ret;
    }
    return 0;
}

static void cpu_close(BliindsContext *ctx)
{
    if (!ctx)
        return;
    if (ctx->scratch)
        for (int i = 0; i < ctx->nscratch; i++) {
            free(ctx->scratch[i].dct_rows);
            free(ctx->scratch[i].select);
        }
    free(ctx->scratch);
    mpe_pool_close(ctx->own_pool);
    for (int s = 0; s < NSCALES; s++) {
        free(ctx->scale[s].pad);
        for (int m = 0; m < BLIINDS_NMAPS; m++)
            free(ctx->scale[s].map[m]);
        for (int m = 0; m < NPOOLED; m++)
            free(ctx->scale[s].row_sum[m]);
    }
    free(ctx->dump_dir);
    free(ctx);
}

static int scale_alloc(BliindsScale *sc, int width, int height)
{
    size_t blocks;
    sc->width = width;
    sc->height = height;
    sc->rows = (height + 2) / 3;
    sc->cols = (width + 2) / 3;
    sc->pad_w = 3 * sc->cols + 2;
    sc->pad_h = 3 * sc->rows + 2;
    blocks = (size_t)sc->rows * sc->cols;
    if (!(sc->pad = calloc((size_t)sc->pad_w * sc->pad_h, sizeof(double))))
        return -ENOMEM;
    for (int m = 0; m < BLIINDS_NMAPS; m++)
        if (!(sc->map[m] = malloc(blocks * sizeof(double))))
            return -ENOMEM;
    for (int m = 0; m < NPOOLED; m++)
        if (!(sc->row_sum[m] = malloc((size_t)sc->rows * sizeof(double))))
            return -ENOMEM;
    return 0;
}

static int cpu_open(BliindsContext **out, int width, int height, const BliindsOptions *opt,
                    MpeError *err)
{
    BliindsContext *ctx = NULL;
    int threads = opt ? opt->threads : 0;
    int ret;

    *out = NULL;
    if (width < BLIINDS_MIN_SIZE || height < BLIINDS_MIN_SIZE || width > MAX_DIM ||
        height > MAX_DIM)
        return mpe_error(err, -EINVAL, "image size %dx%d is outside %dx%d .. %dx%d", width,
                         height, BLIINDS_MIN_SIZE, BLIINDS_MIN_SIZE, MAX_DIM, MAX_DIM);
    if (threads < 0)
        return mpe_error(err, -EINVAL, "thread count %d is negative", threads);
    if (!(ctx = calloc(1, sizeof(*ctx))))
        goto fail_memory;
    for (int s = 0; s < NSCALES; s++)
        if (scale_alloc(&ctx->scale[s], width >> s, height >> s) < 0)
            goto fail_memory;
    if (opt && opt->dump_dir && !(ctx->dump_dir = strdup(opt->dump_dir)))
        goto fail_memory;
    /* more threads than scale-1 block rows would find nothing to do */
    if (opt && opt->pool) {
        ctx->pool = opt->pool;
        threads = mpe_pool_threads(ctx->pool);
    } else {
        threads = MPE_MIN(threads ? threads : mpe_cpu_count(), ctx->scale[0].rows);
        if ((ret = mpe_pool_open(&ctx->own_pool, threads, err)) < 0)
            goto fail;
        ctx->pool = ctx->own_pool;
    }
    ctx->nscratch = MPE_MIN(threads, ctx->scale[0].rows);
    if (!(ctx->scratch = calloc(ctx->nscratch, sizeof(*ctx->scratch))))
        goto fail_memory;
    ctx->scratch_w = ctx->scale[0].cols + LANES + 1;
    for (int i = 0; i < ctx->nscratch; i++) {
        BliindsScratch *w = &ctx->scratch[i];
        w->dct_rows = calloc((size_t)15 * ctx->scratch_w, sizeof(double));
        w->select = malloc((size_t)ctx->scale[0].rows * ctx->scale[0].cols * sizeof(double));
        if (!w->dct_rows || !w->select)
            goto fail_memory;
    }

    for (int k = 0; k < 5; k++)
        for (int n = 0; n < 5; n++)
            ctx->dct[k][n] = sqrt((k ? 2.0 : 1.0) / 5.0) * cos(PI * (2 * n + 1) * k / 10.0);
    /* fspecial('gaussian', 3, 0.5) is the outer product of [e 1 e] / (1 + 2e)
     * with itself, e = exp(-1 / (2 sigma^2)) */
    double e = exp(-2.0);
    ctx->taps[0] = e / (1.0 + 2.0 * e);
    ctx->taps[1] = 1.0 / (1.0 + 2.0 * e);
    bliinds_gamma_table_init(ctx->ratio);
    *out = ctx;
    return 0;

fail_memory:
    ret = mpe_error(err, -ENOMEM, "out of memory for a %dx%d image", width, height);
fail:
    cpu_close(ctx);
    return ret;
}

static int cpu_score(BliindsContext *ctx, const uint8_t *img, ptrdiff_t stride, BliindsScore *out,
                     MpeError *err)
{
    const BliindsScale *sc;
    if (!ctx || !img || !out)
        return mpe_error(err, -EINVAL, "bliinds_cpu: NULL argument");
    sc = &ctx->scale[0];
    if (stride < sc->width && -stride < sc->width)
        return mpe_error(err, -EINVAL, "stride %td is smaller than the width %d", stride,
                         sc->width);
    ctx->img = img;
    ctx->stride = stride;
    run_stage(ctx, sc->height, load_row, &ctx->times.load_ms);
    for (ctx->cur = 0; ctx->cur < NSCALES; ctx->cur++) {
        run_stage(ctx, ctx->scale[ctx->cur].rows, block_row, &ctx->times.blocks_ms[ctx->cur]);
        if (ctx->cur + 1 < NSCALES)
            run_stage(ctx, ctx->scale[ctx->cur + 1].height, downsample_row,
                      &ctx->times.downsample_ms[ctx->cur]);
    }
    run_stage(ctx, NSCALES * NPOOLED, pool_job, &ctx->times.pool_ms);
    ctx->img = NULL;

    double t0 = mpe_time_ms();
    out->score = bliinds_predict(ctx->features);
    memcpy(out->features, ctx->features, sizeof(out->features));
    ctx->times.predict_ms = mpe_time_ms() - t0;
    return ctx->dump_dir ? dump_maps(ctx, err) : 0;
}

static int cpu_probe(char *why, size_t why_size)
{
    if (why && why_size)
        snprintf(why, why_size, "C, double precision");
    return 0;
}

const BliindsImpl bliinds_cpu = {
    .name = "bliinds_cpu",
    .probe = cpu_probe,
    .open = cpu_open,
    .close = cpu_close,
    .score = cpu_score,
};

int bliinds_cpu_maps(const BliindsContext *ctx, int scale, BliindsMaps *maps)
{
    if (!ctx || scale < 0 || scale >= NSCALES)
        return -EINVAL;
    const BliindsScale *sc = &ctx->scale[scale];
    maps->width = sc->width;
    maps->height = sc->height;
    maps->image = sc->pad + sc->pad_w + 1;
    maps->image_stride = sc->pad_w;
    maps->rows = sc->rows;
    maps->cols = sc->cols;
    for (int m = 0; m < BLIINDS_NMAPS; m++)
        maps->map[m] = sc->map[m];
    return 0;
}

void bliinds_cpu_stage_times(const BliindsContext *ctx, BliindsStageTimes *times)
{
    *times = ctx->times;
}
