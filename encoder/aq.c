/* aq.c — adaptive quantisation's per-macroblock factors (aq.h). */
#include "encoder/aq.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "encoder/checker.h"
#include "iqa/mad.h"

/* The mad mode's factors are rounded to 1/64 of an octave: FFTW's last
 * bits may differ between CPUs (its codelets follow the SIMD found), and a
 * rounded exponent keeps them from reaching the quantiser choice short of
 * a tie. */
#define AQ_STEPS_PER_OCTAVE 64

struct MpeAq {
    MpeAqMode mode;
    double strength;
    int mbw, mbh;
    double *value;          /* per macroblock: log2 of its masking measure */
    /* mad */
    MadMask *mask;
    uint8_t *full;          /* the padded luma in display range */
    double *mu, *sd;        /* the mask's grid */
    int nbr, nbc;
};

void mpe_aq_close(MpeAq *aq)
{
    if (!aq)
        return;
    mad_mask_close(aq->mask);
    free(aq->value);
    free(aq->full);
    free(aq->mu);
    free(aq->sd);
    free(aq);
}

int mpe_aq_open(MpeAq **out, MpeAqMode mode, double strength, int mb_width, int mb_height,
                MpeError *err)
{
    MpeAq *aq = calloc(1, sizeof(*aq));
    int ret;

    *out = NULL;
    if (!aq)
        return mpe_error(err, -ENOMEM, "aq: out of memory");
    aq->mode = mode;
    aq->strength = strength;
    aq->mbw = mb_width;
    aq->mbh = mb_height;
    if (!(aq->value = malloc((size_t)mb_width * mb_height * sizeof(double))))
        goto nomem;
    if (mode == MPE_AQ_MAD) {
        const int w = 16 * mb_width, h = 16 * mb_height;
        if (w < MAD_MIN_SIZE || h < MAD_MIN_SIZE) {
            ret = mpe_error(err, -EINVAL, "--aq-mode mad needs a picture of at least %dx%d",
                            MAD_MIN_SIZE, MAD_MIN_SIZE);
            goto fail;
        }
        if ((ret = mad_mask_open(&aq->mask, w, h, err)) < 0)
            goto fail;
        mad_mask_grid(aq->mask, &aq->nbr, &aq->nbc);
        aq->full = malloc((size_t)w * h);
        aq->mu = malloc((size_t)aq->nbr * aq->nbc * sizeof(double));
        aq->sd = malloc((size_t)aq->nbr * aq->nbc * sizeof(double));
        if (!aq->full || !aq->mu || !aq->sd)
            goto nomem;
    }
    *out = aq;
    return 0;
nomem:
    ret = mpe_error(err, -ENOMEM, "aq: out of memory");
fail:
    mpe_aq_close(aq);
    return ret;
}

/* log2 of each macroblock's luma AC energy (256 x its variance): integer
 * sums of the source. */
static void variance_values(MpeAq *aq, const MpePicture *orig)
{
    for (int i = 0; i < aq->mbw * aq->mbh; i++) {
        const uint8_t *y = orig->plane[0] + (ptrdiff_t)16 * (i / aq->mbw) * orig->stride[0] +
                           16 * (i % aq->mbw);
        uint32_t sum = 0;
        uint64_t sq = 0;
        for (int r = 0; r < 16; r++)
            for (int c = 0; c < 16; c++) {
                const uint32_t v = y[(ptrdiff_t)r * orig->stride[0] + c];
                sum += v;
                sq += v * v;
            }
        const uint64_t energy = sq - (uint64_t)sum * sum / 256;
        aq->value[i] = log2((double)(energy > 1 ? energy : 1));
    }
}

/* ln of a block's threshold in gray levels: MAD's threshold is a std of
 * CSF-filtered lightness L = k v^g (SPEC §3.1); near the block's mean
 * lightness mu a gray-level error dv moves L by L'(v) dv = g mu / v dv,
 * with v = (mu / k)^(1 / g). */
static double gray_threshold(double mu, double sd)
{
    const double k = 0.02874, g = 2.2 / 3.0;
    const double t = mad_mask_threshold(mu, sd);
    if (!isfinite(t))
        return t;
    const double ln_mu = log(mu);
    return t - log(g) - ln_mu + (ln_mu - log(k)) / g;
}

/* log2 of each macroblock's mean threshold over the blocks of MAD's grid
 * that start inside it; macroblocks where MAD sees nothing (too dark) take
 * the picture's highest, or all 0 when none is seen anywhere. */
static int mad_values(MpeAq *aq, const MpePicture *orig, MpeError *err)
{
    const int w = 16 * aq->mbw, h = 16 * aq->mbh;
    int ret;

    mpe_luma_to_full_range(aq->full, w, orig->plane[0], orig->stride[0], w, h);
    if ((ret = mad_mask_compute(aq->mask, aq->full, w, aq->mu, aq->sd, err)) < 0)
        return ret;
    double top = -INFINITY;
    for (int my = 0; my < aq->mbh; my++)
        for (int mx = 0; mx < aq->mbw; mx++) {
            double sum = 0;
            int n = 0;
            for (int by = 4 * my; by < 4 * my + 4 && by < aq->nbr; by++)
                for (int bx = 4 * mx; bx < 4 * mx + 4 && bx < aq->nbc; bx++) {
                    const size_t b = (size_t)by * aq->nbc + bx;
                    const double t = gray_threshold(aq->mu[b], aq->sd[b]);
                    if (isfinite(t)) {
                        sum += t;
                        n++;
                    }
                }
            const double v = n ? sum / n / log(2.0) : INFINITY;
            aq->value[my * aq->mbw + mx] = v;
            if (n && v > top)
                top = v;
        }
    for (int i = 0; i < aq->mbw * aq->mbh; i++)
        if (!isfinite(aq->value[i]))
            aq->value[i] = isfinite(top) ? top : 0;
    return 0;
}

int mpe_aq_plan(MpeAq *aq, const MpePicture *orig, double *factor, MpeError *err)
{
    const int n = aq->mbw * aq->mbh;
    int ret;

    if (aq->mode == MPE_AQ_MAD) {
        if ((ret = mad_values(aq, orig, err)) < 0)
            return ret;
    } else {
        variance_values(aq, orig);
    }
    double mean = 0;
    for (int i = 0; i < n; i++)
        mean += aq->value[i];
    mean /= n;
    for (int i = 0; i < n; i++) {
        if (aq->mode == MPE_AQ_MAD) {
            /* a ratio of stds to the power S/3 */
            const double steps = round(AQ_STEPS_PER_OCTAVE * aq->strength / 3.0 *
                                       (aq->value[i] - mean));
            factor[i] = exp2(steps / AQ_STEPS_PER_OCTAVE);
        } else {
            /* energies (variances) to the power S/6 */
            factor[i] = exp2(aq->strength / 6.0 * (aq->value[i] - mean));
        }
    }
    return 0;
}
