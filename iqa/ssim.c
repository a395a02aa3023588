/* ssim.c — SSIM of two 8-bit planes, as ffmpeg's ssim filter computes it.
 *
 * The definition is x264's: sums over 4x4 blocks; an 8x8 window is four
 * neighbouring blocks, so windows sit at a stride of 4 and overlap by half;
 * each window's SSIM comes from integer sums with the constants scaled by
 * the 64 samples in a window (c1 = (.01*255)^2 * 64, c2 = (.03*255)^2 * 64 * 63,
 * the 63 because the variance terms are 64*sum(x^2) - sum(x)^2, i.e.
 * 64*63 times the sample variance).  The result is the mean over the
 * (w/4-1) x (h/4-1) windows; the samples right of 4*(w/4) and below
 * 4*(h/4) are not used.
 *
 * One window's value is computed in single precision, in the same
 * operations and order as ffmpeg (float(num1) * float(num2) /
 * (float(den1) * float(den2))), so each term is bit-identical to ffmpeg's;
 * the terms are summed in double, which leaves only the order of that sum
 * different (far below the 6 decimals ffmpeg prints).
 *
 * The plane is walked top-down once: a band of 4 rows gives a row of block
 * sums, and each window row needs only the current and the previous block
 * row, so two rows of sums roll.  Wide planes are cut into vertical strips
 * that share one block column, so the sums fit a fixed stack buffer (no
 * allocation, no failure path) and stay in L1. */
#include "iqa.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/common.h"
#include "metric.h"

/* 4x4 blocks per strip: 2048 pixels. */
#define SSIM_STRIP_BLOCKS 512

/* Sums over one 4x4 block of a (s1), b (s2), a^2 + b^2 (ss), a*b (s12). */
typedef struct SsimSums {
    int32_t s1[SSIM_STRIP_BLOCKS];
    int32_t s2[SSIM_STRIP_BLOCKS];
    int32_t ss[SSIM_STRIP_BLOCKS];
    int32_t s12[SSIM_STRIP_BLOCKS];
} SsimSums;

/* Column sums of 4 rows over n pixels.  Kept to fixed-length inner loops
 * so that gcc's -O2 cost model vectorises them (it only does so when the
 * vector loop needs no scalar remainder); the tail runs the same code
 * unrolled by the compiler for its own length. */
#define SSIM_CHUNK 16

static inline void ssim_columns(uint16_t *restrict ca, uint16_t *restrict cb,
                                uint32_t *restrict cq, uint32_t *restrict cab,
                                const uint8_t *restrict a, ptrdiff_t as,
                                const uint8_t *restrict b, ptrdiff_t bs, int n)
{
    for (int x = 0; x < n; x++) {
        unsigned pa = a[x], pb = b[x];
        ca[x] = (uint16_t)pa;
        cb[x] = (uint16_t)pb;
        cq[x] = pa * pa + pb * pb;
        cab[x] = pa * pb;
    }
    for (int y = 1; y < 4; y++) {
        const uint8_t *ra = a + y * as, *rb = b + y * bs;
        for (int x = 0; x < n; x++) {
            unsigned pa = ra[x], pb = rb[x];
            ca[x] = (uint16_t)(ca[x] + pa);
            cb[x] = (uint16_t)(cb[x] + pb);
            cq[x] += pa * pa + pb * pb;
            cab[x] += pa * pb;
        }
    }
}

/* Block sums of one band of 4 rows, nb blocks wide: columns are summed
 * first, then folded by 4. */
static void ssim_block_row(SsimSums *out, const uint8_t *a, ptrdiff_t as, const uint8_t *b,
                           ptrdiff_t bs, int nb)
{
    /* per column over 4 rows: 4*255 fits 16 bits, 4*2*255^2 fits 32 */
    uint16_t ca[4 * SSIM_STRIP_BLOCKS], cb[4 * SSIM_STRIP_BLOCKS];
    uint32_t cq[4 * SSIM_STRIP_BLOCKS], cab[4 * SSIM_STRIP_BLOCKS];
    const int n = 4 * nb, full = n - n % SSIM_CHUNK;

    for (int x = 0; x < full; x += SSIM_CHUNK)
        ssim_columns(ca + x, cb + x, cq + x, cab + x, a + x, as, b + x, bs, SSIM_CHUNK);
    if (full < n)
        ssim_columns(ca + full, cb + full, cq + full, cab + full, a + full, as, b + full, bs,
                     n - full);
    for (int z = 0; z < nb; z++) {
        const int x = 4 * z;
        out->s1[z] = ca[x] + ca[x + 1] + ca[x + 2] + ca[x + 3];
        out->s2[z] = cb[x] + cb[x + 1] + cb[x + 2] + cb[x + 3];
        out->ss[z] = (int32_t)(cq[x] + cq[x + 1] + cq[x + 2] + cq[x + 3]);
        out->s12[z] = (int32_t)(cab[x] + cab[x + 1] + cab[x + 2] + cab[x + 3]);
    }
}

/* Sum of the SSIM of the nb-1 windows between two block rows.  Every
 * intermediate fits int32: s1, s2 <= 64*255, so s1*s2*2 < 2^30, and
 * 64*ss <= 64*64*2*255^2 < 2^29. */
static double ssim_window_row(const SsimSums *p, const SsimSums *c, int nb)
{
    const int c1 = (int)(.01 * .01 * 255 * 255 * 64 + .5);
    const int c2 = (int)(.03 * .03 * 255 * 255 * 64 * 63 + .5);
    double acc = 0.0;

    for (int z = 0; z + 1 < nb; z++) {
        int s1 = p->s1[z] + p->s1[z + 1] + c->s1[z] + c->s1[z + 1];
        int s2 = p->s2[z] + p->s2[z + 1] + c->s2[z] + c->s2[z + 1];
        int ss = p->ss[z] + p->ss[z + 1] + c->ss[z] + c->ss[z + 1];
        int s12 = p->s12[z] + p->s12[z + 1] + c->s12[z] + c->s12[z + 1];
        int vars = ss * 64 - s1 * s1 - s2 * s2;
        int covar = s12 * 64 - s1 * s2;
        float num = (float)(2 * s1 * s2 + c1) * (float)(2 * covar + c2);
        float den = (float)(s1 * s1 + s2 * s2 + c1) * (float)(vars + c2);
        acc += (double)(num / den);
    }
    return acc;
}

double iqa_ssim_plane(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs, int w,
                      int h)
{
    SsimSums rows[2];
    const int bw = w / 4, bh = h / 4;
    double total = 0.0;

    if (bw < 2 || bh < 2)
        return NAN;   /* no 8x8 window fits; ffmpeg divides by zero here */

    /* strips of up to SSIM_STRIP_BLOCKS blocks, each starting at the last
     * block of the one before, so every window lies in exactly one strip */
    for (int bx = 0; bx + 1 < bw; bx += SSIM_STRIP_BLOCKS - 1) {
        const int nb = MPE_MIN(SSIM_STRIP_BLOCKS, bw - bx);
        SsimSums *prev = &rows[0], *cur = &rows[1];

        ssim_block_row(prev, a + 4 * bx, as, b + 4 * bx, bs, nb);
        for (int by = 1; by < bh; by++) {
            SsimSums *t;
            ssim_block_row(cur, a + 4 * by * as + 4 * bx, as, b + 4 * by * bs + 4 * bx, bs, nb);
            total += ssim_window_row(prev, cur, nb);
            t = prev;
            prev = cur;
            cur = t;
        }
    }
    return total / ((double)(bw - 1) * (bh - 1));
}

/* The registry row: SSIM of luma, on the coded samples (as ffmpeg's filter
 * sees them); the reference is kept by pointer until the next one. */
typedef struct SsimContext {
    IqaPicture ref;
} SsimContext;

static int ssim_probe(char *why, size_t why_size)
{
    if (why && why_size)
        snprintf(why, why_size, "C");
    return 0;
}

static int ssim_open(void **ctx, const IqaConfig *cfg, MpeError *err)
{
    (void)cfg;
    if (!(*ctx = calloc(1, sizeof(SsimContext))))
        return mpe_error(err, -ENOMEM, "ssim: out of memory");
    return 0;
}

static void ssim_close(void *ctx)
{
    free(ctx);
}

static int ssim_set_reference(void *ctx, const IqaPicture *ref, MpeError *err)
{
    (void)err;
    ((SsimContext *)ctx)->ref = *ref;
    return 0;
}

static int ssim_score(void *ctx, const IqaPicture *pic, double *values, MpeError *err)
{
    const IqaPicture *ref = &((SsimContext *)ctx)->ref;
    if (!ref->plane[0])
        return mpe_error(err, -EINVAL, "ssim: score called before set_reference");
    values[0] = iqa_ssim_plane(ref->plane[0], ref->stride[0], pic->plane[0], pic->stride[0],
                               pic->width[0], pic->height[0]);
    return 0;
}

static const IqaValue ssim_values[] = {
    { "ssim_y", "SSIM, 0..1", IQA_HIGHER_IS_BETTER, "SSIM-Y", "SSIM-Y", "SSIM Y", 5, "  SSIM %.4f",
      NULL, 1.5 },
};

const IqaMetric iqa_ssim = {
    .name = "ssim",
    .family = "ssim",
    .device = "cpu",
    .flags = IQA_FULL_REFERENCE,
    .label = "SSIM",
    .min_size = 1,
    .title = "SSIM (luma)",
    .axis = "SSIM-Y",
    .vunit = "",
    .fmt = "%.6f",
    .top = 1,
    .nvalues = 1,
    .values = ssim_values,
    .probe = ssim_probe,
    .open = ssim_open,
    .close = ssim_close,
    .set_reference = ssim_set_reference,
    .score = ssim_score,
};
