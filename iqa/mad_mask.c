/* mad_mask.c — the reference side of MAD's detection stage alone (mad.h's
 * MadMask): lightness, CSF, block mean and modified std, with the pieces
 * mad_cpu uses (mad_filters.c, mad_stats.c).  Plain 2-D FFTW plans: one
 * picture per call, no pool; at encoder sizes the transform is a few
 * milliseconds. */
#include "iqa/mad.h"
#include "iqa/mad_internal.h"

#include <errno.h>
#include <fftw3.h>
#include <math.h>
#include <stdlib.h>

struct MadMask {
    int w, h, nbr, nbc;
    double lut[256];
    double *csf;          /* h x (w/2+1), Hermitian-symmetrised, includes 1/(w*h) */
    double *real;         /* lightness, then the CSF-filtered lightness */
    fftw_complex *half;   /* its r2c spectrum */
    double *sd8, *scratch;
    fftw_plan fwd, inv;
};

void mad_mask_close(MadMask *m)
{
    if (!m)
        return;
    if (m->fwd)
        fftw_destroy_plan(m->fwd);
    if (m->inv)
        fftw_destroy_plan(m->inv);
    fftw_free(m->real);
    fftw_free(m->half);
    free(m->csf);
    free(m->sd8);
    free(m->scratch);
    free(m);
}

int mad_mask_open(MadMask **pm, int width, int height, MpeError *err)
{
    MadMask *m;
    int ret;

    if (!pm)
        return mpe_error(err, -EINVAL, "mad: no mask pointer");
    *pm = NULL;
    if (width < MAD_MIN_SIZE || height < MAD_MIN_SIZE || width > MAD_MAX_SIZE ||
        height > MAD_MAX_SIZE)
        return mpe_error(err, -EINVAL, "mad: a %dx%d picture has no masking map (%d to %d per side)",
                         width, height, MAD_MIN_SIZE, MAD_MAX_SIZE);
    if (!(m = calloc(1, sizeof(*m))))
        return mpe_error(err, -ENOMEM, "mad: out of memory");
    m->w = width;
    m->h = height;
    m->nbr = mad_grid_rows(height);
    m->nbc = mad_grid_cols(width);
    const size_t npix = (size_t)width * height, nhalf = (size_t)height * (width / 2 + 1);
    const size_t nblk = (size_t)m->nbr * m->nbc;
    m->csf = malloc(nhalf * sizeof(double));
    m->real = fftw_malloc(npix * sizeof(double));
    m->half = fftw_malloc(nhalf * sizeof(fftw_complex));
    m->sd8 = malloc(nblk * sizeof(double));
    m->scratch = malloc(mad_stats_scratch_size(width) * sizeof(double));
    if (!m->csf || !m->real || !m->half || !m->sd8 || !m->scratch) {
        ret = mpe_error(err, -ENOMEM, "mad: out of memory for a %dx%d masking map", width, height);
        goto fail;
    }
    mad_lightness_lut(m->lut);
    mad_csf_half(m->csf, width, height, 1.0 / (double)npix);
    /* FFTW_ESTIMATE: the same plan, so the same last bits, on every run */
    m->fwd = fftw_plan_dft_r2c_2d(height, width, m->real, m->half, FFTW_ESTIMATE);
    m->inv = fftw_plan_dft_c2r_2d(height, width, m->half, m->real, FFTW_ESTIMATE);
    if (!m->fwd || !m->inv) {
        ret = mpe_error(err, -ENOMEM, "mad: FFTW could not plan a %dx%d transform", width, height);
        goto fail;
    }
    *pm = m;
    return 0;
fail:
    mad_mask_close(m);
    return ret;
}

void mad_mask_grid(const MadMask *m, int *rows, int *cols)
{
    *rows = m->nbr;
    *cols = m->nbc;
}

int mad_mask_compute(MadMask *m, const uint8_t *gray, ptrdiff_t stride, double *mu, double *sd,
                     MpeError *err)
{
    int ret = mad_check_picture(m != NULL, m ? m->w : 0, gray, stride, "masking", err);
    if (ret < 0)
        return ret;
    if (!mu || !sd)
        return mpe_error(err, -EINVAL, "mad: no masking map output");
    const int w = m->w, h = m->h, hc = w / 2 + 1;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            m->real[(size_t)y * w + x] = m->lut[gray[y * stride + x]];
    fftw_execute(m->fwd);
    for (size_t i = 0; i < (size_t)h * hc; i++) {
        m->half[i][0] *= m->csf[i];
        m->half[i][1] *= m->csf[i];
    }
    fftw_execute(m->inv);
    mad_stats_detect(mu, NULL, m->sd8, m->real, w, w, h, m->scratch);
    mad_modified_std(sd, m->sd8, w, h);
    return 0;
}

double mad_mask_threshold(double mu, double sd)
{
    const double g_thresh = 0.5, c_thresh = -5.0; /* SPEC §3.4's G and Ci_thrsh = Cd_thrsh */
    if (!(mu >= g_thresh))
        return INFINITY;
    /* one log: ln max(sd, mu e^-5) = max(ln sd, ln mu - 5) */
    return log(fmax(sd, mu * exp(c_thresh)));
}
