#include "iqa.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "metric.h"
#include "common/picture.h"

double iqa_psnr_from_mse(double mse)
{
    if (mse <= 1e-10)
        return 100.0;
    return 10.0 * log10(255.0 * 255.0 / mse);
}

/* The registry row.  The encoder measures PSNR inline from the SSE its
 * slices accumulate (IQA_FROM_SSE), so in the loop this row only describes
 * the values; score() computes the same numbers from planes for tools. */
typedef struct PsnrContext {
    IqaPicture ref;
} PsnrContext;

static int psnr_probe(char *why, size_t why_size)
{
    if (why && why_size)
        snprintf(why, why_size, "C");
    return 0;
}

static int psnr_open(void **ctx, const IqaConfig *cfg, MpeError *err)
{
    (void)cfg;
    if (!(*ctx = calloc(1, sizeof(PsnrContext))))
        return mpe_error(err, -ENOMEM, "psnr: out of memory");
    return 0;
}

static void psnr_close(void *ctx)
{
    free(ctx);
}

static int psnr_set_reference(void *ctx, const IqaPicture *ref, MpeError *err)
{
    (void)err;
    ((PsnrContext *)ctx)->ref = *ref;
    return 0;
}

static int psnr_score(void *ctx, const IqaPicture *pic, double *values, MpeError *err)
{
    const IqaPicture *ref = &((PsnrContext *)ctx)->ref;
    for (int c = 0; c < 3; c++) {
        if (c >= pic->nplanes || c >= ref->nplanes) {
            values[c] = NAN;   /* a gray picture has no chroma to compare */
            continue;
        }
        if (pic->width[c] != ref->width[c] || pic->height[c] != ref->height[c])
            return mpe_error(err, -EINVAL, "psnr: plane %d is %dx%d, the reference's %dx%d", c,
                             pic->width[c], pic->height[c], ref->width[c], ref->height[c]);
        double n = (double)pic->width[c] * pic->height[c];
        uint64_t sse = mpe_plane_sse(pic->plane[c], pic->stride[c], ref->plane[c], ref->stride[c],
                                     pic->width[c], pic->height[c]);
        values[c] = iqa_psnr_from_mse(n > 0 ? (double)sse / n : 0.0);
    }
    return 0;
}

static const IqaValue psnr_values[] = {
    { "psnr_y_db", "dB", IQA_HIGHER_IS_BETTER, "PSNR-Y", "Y", "PSNR Y", 2, "  PSNR Y %.2f", NULL, 1.5 },
    { "psnr_cb_db", "dB", IQA_HIGHER_IS_BETTER, "PSNR-Cb", "Cb", "PSNR Cb", 2, " Cb %.2f", "#9ecae1",
      1.2 },
    { "psnr_cr_db", "dB", IQA_HIGHER_IS_BETTER, "PSNR-Cr", "Cr", "PSNR Cr", 2, " Cr %.2f", "#fdae6b",
      1.2 },
};

const IqaMetric iqa_psnr = {
    .name = "psnr",
    .family = "psnr",
    .device = "cpu",
    .flags = IQA_FULL_REFERENCE | IQA_FROM_SSE,
    .label = "PSNR",
    .min_size = 1,
    .title = "PSNR",
    .axis = "dB",
    .vunit = "dB",
    .fmt = "%.4f",
    .nvalues = 3,
    .values = psnr_values,
    .probe = psnr_probe,
    .open = psnr_open,
    .close = psnr_close,
    .set_reference = psnr_set_reference,
    .score = psnr_score,
};
