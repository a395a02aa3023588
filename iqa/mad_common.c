/* mad_common.c — what every MAD implementation shares: the argument
 * checks, the registry rows (iqa/metric.h), the one-call convenience, and
 * the original's RGB to gray conversion. */
#include "iqa/mad.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "iqa/metric.h"

int mad_check_open(MadContext **pctx, int width, int height, const MadOptions *opt, MpeError *err)
{
    if (!pctx)
        return mpe_error(err, -EINVAL, "mad: no context pointer");
    *pctx = NULL;
    if (width < MAD_MIN_SIZE || height < MAD_MIN_SIZE)
        return mpe_error(err, -EINVAL,
                         "mad: %dx%d is too small (the original needs at least %dx%d: "
                         "its border crop leaves nothing below that)",
                         width, height, MAD_MIN_SIZE, MAD_MIN_SIZE);
    if (width > MAD_MAX_SIZE || height > MAD_MAX_SIZE)
        return mpe_error(err, -EINVAL, "mad: %dx%d is too large (at most %d per side)", width,
                         height, MAD_MAX_SIZE);
    if (opt && opt->threads < 0)
        return mpe_error(err, -EINVAL, "mad: negative thread count %d", opt->threads);
    return 0;
}

int mad_check_picture(int have_ctx, int width, const uint8_t *pic, ptrdiff_t stride,
                      const char *what, MpeError *err)
{
    if (!have_ctx)
        return mpe_error(err, -EINVAL, "mad: no context");
    if (!pic)
        return mpe_error(err, -EINVAL, "mad: no %s picture", what);
    if (stride < width && -stride < width)
        return mpe_error(err, -EINVAL, "mad: %s stride %td is narrower than the width %d", what,
                         stride, width);
    return 0;
}

int mad_check_score(int have_ctx, int width, int have_ref, const uint8_t *dst, ptrdiff_t stride,
                    const MadScore *out, MpeError *err)
{
    int ret = mad_check_picture(have_ctx, width, dst, stride, "distorted", err);
    if (ret < 0)
        return ret;
    if (!out)
        return mpe_error(err, -EINVAL, "mad: no score output");
    if (!have_ref)
        return mpe_error(err, -EINVAL, "mad: score called before set_reference");
    return 0;
}

/* The registry rows: one adapter over a MadImpl, shared by both twins. */
typedef struct MadMetric {
    const MadImpl *impl;
    MadContext *ctx;
    IqaHalves halves;
} MadMetric;

static int mad_metric_open(const MadImpl *impl, void **out, const IqaConfig *cfg, MpeError *err)
{
    MadOptions mo = { .threads = cfg->threads, .pool = cfg->pool, .device = cfg->device, .dump_dir = cfg->dump_dir };
    MadMetric *m = calloc(1, sizeof(*m));
    int ret;

    *out = NULL;
    if (!m)
        return mpe_error(err, -ENOMEM, "%s: out of memory", impl->name);
    m->impl = impl;
    if ((ret = impl->open(&m->ctx, cfg->width, cfg->height, &mo, err)) < 0) {
        free(m);
        return ret;
    }
    *out = m;
    return 0;
}

static void mad_metric_close(void *ctx)
{
    MadMetric *m = ctx;
    m->impl->close(m->ctx);
    free(m);
}

static int mad_metric_set_reference(void *ctx, const IqaPicture *ref, MpeError *err)
{
    MadMetric *m = ctx;
    return m->impl->set_reference(m->ctx, ref->plane[0], ref->stride[0], err);
}

static void mad_values_of(double *values, const MadScore *ms)
{
    values[0] = ms->mad;
    values[1] = ms->d_detect;
    values[2] = ms->d_appear;
}

static int mad_metric_score(void *ctx, const IqaPicture *pic, double *values, MpeError *err)
{
    MadMetric *m = ctx;
    MadScore ms;
    int ret = m->impl->score(m->ctx, pic->plane[0], pic->stride[0], &ms, err);
    if (ret == 0)
        mad_values_of(values, &ms);
    return ret;
}

static int mad_queue(void *ctx, const IqaPicture *pic, MpeError *err)
{
    MadMetric *m = ctx;
    return m->impl->score_submit(m->ctx, pic->plane[0], pic->stride[0], err);
}

static int mad_wait(void *ctx, double *values, MpeError *err)
{
    MadMetric *m = ctx;
    MadScore ms;
    int ret = m->impl->score_collect(m->ctx, &ms, err);
    if (ret == 0)
        mad_values_of(values, &ms);
    return ret;
}

static int mad_metric_submit(void *ctx, const IqaPicture *pic, MpeError *err)
{
    MadMetric *m = ctx;
    return iqa_halves_submit(&m->halves, m->impl->name, m->impl->score_submit ? mad_queue : NULL,
                             mad_metric_score, ctx, pic, err);
}

static int mad_metric_collect(void *ctx, double *values, MpeError *err)
{
    MadMetric *m = ctx;
    return iqa_halves_collect(&m->halves, m->impl->name, m->impl->score_collect ? mad_wait : NULL,
                              3, ctx, values, err);
}

static const IqaValue mad_values[] = {
    { "mad", "MAD index, 0 = identical", IQA_LOWER_IS_BETTER, "MAD", "MAD", "MAD", 3, "  MAD %.3f",
      NULL, 1.5 },
    { "mad_detect", "MAD d_detect", IQA_LOWER_IS_BETTER, "MAD d_detect", "d_detect", NULL, 0, NULL,
      "#2ca02c", 0.8 },
    { "mad_appear", "MAD d_appear", IQA_LOWER_IS_BETTER, "MAD d_appear", "d_appear", NULL, 0, NULL,
      "#d62728", 0.8 },
};

#define MAD_ROW(IMPL, DEVICE, FLAGS)                                                             \
    static int IMPL##_metric_probe(char *why, size_t why_size)                                   \
    {                                                                                            \
        return IMPL.probe(why, why_size);                                                        \
    }                                                                                            \
    static int IMPL##_metric_open(void **ctx, const IqaConfig *cfg, MpeError *err)               \
    {                                                                                            \
        return mad_metric_open(&IMPL, ctx, cfg, err);                                            \
    }                                                                                            \
    const IqaMetric iqa_##IMPL = {                                                               \
        .name = #IMPL, .family = "mad", .device = DEVICE,                                        \
        .flags = IQA_FULL_REFERENCE | IQA_DISPLAY_RANGE | (FLAGS), .label = "MAD",               \
        .min_size = MAD_MIN_SIZE, .title = "MAD (most apparent distortion; 0 = identical)",       \
        .axis = "MAD index", .vunit = "", .fmt = "%.4f", .nvalues = 3, .values = mad_values,     \
        .impl = &IMPL, .probe = IMPL##_metric_probe, .open = IMPL##_metric_open, .close = mad_metric_close,     \
        .set_reference = mad_metric_set_reference, .score = mad_metric_score,                    \
        .submit = mad_metric_submit, .collect = mad_metric_collect,                              \
    };

MAD_ROW(mad_cpu, "cpu", 0)
#ifdef MPE_HAVE_MAD_CUDA
MAD_ROW(mad_cuda, "cuda", IQA_CUDA)
#endif

int mad_score_pair(const MadImpl *impl, MadContext *ctx, const uint8_t *ref, const uint8_t *dst,
                   ptrdiff_t stride, MadScore *out, MpeError *err)
{
    int ret;
    if (!impl)
        return mpe_error(err, -EINVAL, "mad: no implementation given");
    ret = impl->set_reference(ctx, ref, stride, err);
    if (ret < 0)
        return ret;
    return impl->score(ctx, dst, stride, out, err);
}

void mad_rgb_to_gray(uint8_t *gray, ptrdiff_t gstride, const uint8_t *rgb, ptrdiff_t rstride,
                     int w, int h)
{
    /* MATLAB rgb2gray's weights (the inverse of its NTSC matrix, not BT.601's
     * rounded .299/.587/.114), computed in double and rounded half away from
     * zero back to uint8 (SPEC §2) */
    const double cr = 0.298936021293775, cg = 0.587043074451121, cb = 0.114020904255103;
    for (int y = 0; y < h; y++) {
        const uint8_t *s = rgb + y * rstride;
        uint8_t *d = gray + y * gstride;
        for (int x = 0; x < w; x++) {
            double v = round(cr * s[3 * x] + cg * s[3 * x + 1] + cb * s[3 * x + 2]);
            d[x] = (uint8_t)(v > 255.0 ? 255.0 : v);
        }
    }
}
