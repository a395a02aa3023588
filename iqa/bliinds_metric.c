/* bliinds_metric.c — the registry rows (iqa/metric.h) of BLIINDS-II: one
 * adapter over a BliindsImpl, shared by the C and CUDA twins. */
#include <errno.h>
#include <stdlib.h>

#include "iqa/bliinds.h"
#include "iqa/metric.h"

typedef struct BliindsMetric {
    const BliindsImpl *impl;
    BliindsContext *ctx;
    IqaHalves halves;
} BliindsMetric;

static int bliinds_metric_open(const BliindsImpl *impl, void **out, const IqaConfig *cfg,
                               MpeError *err)
{
    BliindsOptions bo = { .threads = cfg->threads, .pool = cfg->pool, .device = cfg->device, .dump_dir = cfg->dump_dir };
    BliindsMetric *m = calloc(1, sizeof(*m));
    int ret;

    *out = NULL;
    if (!m)
        return mpe_error(err, -ENOMEM, "%s: out of memory", impl->name);
    m->impl = impl;
    if ((ret = impl->open(&m->ctx, cfg->width, cfg->height, &bo, err)) < 0) {
        free(m);
        return ret;
    }
    *out = m;
    return 0;
}

static void bliinds_metric_close(void *ctx)
{
    BliindsMetric *m = ctx;
    m->impl->close(m->ctx);
    free(m);
}

static int bliinds_metric_score(void *ctx, const IqaPicture *pic, double *values, MpeError *err)
{
    BliindsMetric *m = ctx;
    BliindsScore bs;
    int ret = m->impl->score(m->ctx, pic->plane[0], pic->stride[0], &bs, err);
    if (ret == 0)
        values[0] = bs.score;
    return ret;
}

static int bliinds_queue(void *ctx, const IqaPicture *pic, MpeError *err)
{
    BliindsMetric *m = ctx;
    return m->impl->score_submit(m->ctx, pic->plane[0], pic->stride[0], err);
}

static int bliinds_wait(void *ctx, double *values, MpeError *err)
{
    BliindsMetric *m = ctx;
    BliindsScore bs;
    int ret = m->impl->score_collect(m->ctx, &bs, err);
    if (ret == 0)
        values[0] = bs.score;
    return ret;
}

static int bliinds_metric_submit(void *ctx, const IqaPicture *pic, MpeError *err)
{
    BliindsMetric *m = ctx;
    return iqa_halves_submit(&m->halves, m->impl->name,
                             m->impl->score_submit ? bliinds_queue : NULL, bliinds_metric_score,
                             ctx, pic, err);
}

static int bliinds_metric_collect(void *ctx, double *values, MpeError *err)
{
    BliindsMetric *m = ctx;
    return iqa_halves_collect(&m->halves, m->impl->name,
                              m->impl->score_collect ? bliinds_wait : NULL, 1, ctx, values, err);
}

static const IqaValue bliinds_values[] = {
    { "bliinds", "BLIINDS-II predicted DMOS", IQA_LOWER_IS_BETTER, "BLIINDS-II", "BLIINDS-II",
      "BLIINDS-II", 3, "  BLIINDS %.1f", NULL, 1.5 },
};

#define BLIINDS_ROW(IMPL, DEVICE, FLAGS)                                                         \
    static int IMPL##_metric_probe(char *why, size_t why_size)                                   \
    {                                                                                            \
        return IMPL.probe(why, why_size);                                                        \
    }                                                                                            \
    static int IMPL##_metric_open(void **ctx, const IqaConfig *cfg, MpeError *err)               \
    {                                                                                            \
        return bliinds_metric_open(&IMPL, ctx, cfg, err);                                        \
    }                                                                                            \
    const IqaMetric iqa_##IMPL = {                                                               \
        .name = #IMPL, .family = "bliinds", .device = DEVICE,                                    \
        .flags = IQA_NO_REFERENCE | IQA_DISPLAY_RANGE | (FLAGS), .label = "BLIINDS-II",          \
        .min_size = BLIINDS_MIN_SIZE, .title = "BLIINDS-II (predicted DMOS; lower is better)",   \
        .axis = "DMOS", .vunit = "", .fmt = "%.4f", .nvalues = 1, .values = bliinds_values,      \
        .impl = &IMPL, .probe = IMPL##_metric_probe, .open = IMPL##_metric_open,                                \
        .close = bliinds_metric_close, .score = bliinds_metric_score,                            \
        .submit = bliinds_metric_submit, .collect = bliinds_metric_collect,                      \
    };

BLIINDS_ROW(bliinds_cpu, "cpu", 0)
#ifdef MPE_HAVE_CUDA
BLIINDS_ROW(bliinds_cuda, "cuda", IQA_CUDA)
#endif
