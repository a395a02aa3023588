/* metric.c — the list of metrics, lookups over it, and the one open
 * function (argument checks, the auto probe, the logged fallback). */
#include "metric.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const IqaMetric iqa_psnr, iqa_ssim, iqa_mad_cpu, iqa_bliinds_cpu;
#ifdef MPE_HAVE_MAD_CUDA
extern const IqaMetric iqa_mad_cuda;
#endif
#ifdef MPE_HAVE_CUDA
extern const IqaMetric iqa_bliinds_cuda;
#endif

/* The order is the order of log columns, report charts and summary lines;
 * within a family the CUDA twin comes first so that "auto" tries it first. */
static const IqaMetric *const metric_list[] = {
    &iqa_psnr,
    &iqa_ssim,
#ifdef MPE_HAVE_MAD_CUDA
    &iqa_mad_cuda,
#endif
    &iqa_mad_cpu,
#ifdef MPE_HAVE_CUDA
    &iqa_bliinds_cuda,
#endif
    &iqa_bliinds_cpu,
};

#define N_METRICS ((int)(sizeof(metric_list) / sizeof(metric_list[0])))

#ifndef MPE_HAVE_CUDA
/* without CUDA nothing needs page-locked memory (iqa_cuda.cu has the real ones) */
int iqa_host_register(void *p, size_t bytes)
{
    (void)p;
    (void)bytes;
    return 0;
}

void iqa_host_unregister(void *p)
{
    (void)p;
}
#endif

int iqa_metric_count(void)
{
    return N_METRICS;
}

const IqaMetric *iqa_metric_get(int i)
{
    return i >= 0 && i < N_METRICS ? metric_list[i] : NULL;
}

const IqaMetric *iqa_metric_find(const char *name)
{
    for (int i = 0; name && i < N_METRICS; i++)
        if (!strcmp(metric_list[i]->name, name))
            return metric_list[i];
    return NULL;
}

/* Whether row i is the first of its family (the family's representative). */
static int family_head(int i)
{
    for (int j = 0; j < i; j++)
        if (!strcmp(metric_list[j]->family, metric_list[i]->family))
            return 0;
    return 1;
}

/* Row index of family f's first row, -1 if f is out of range. */
static int family_row(int f)
{
    for (int i = 0, k = 0; i < N_METRICS; i++)
        if (family_head(i) && k++ == f)
            return i;
    return -1;
}

int iqa_family_count(void)
{
    int n = 0;
    for (int i = 0; i < N_METRICS; i++)
        n += family_head(i);
    return n;
}

const IqaMetric *iqa_family_metric(int f)
{
    int i = family_row(f);
    return i < 0 ? NULL : metric_list[i];
}

const char *iqa_family_name(int f)
{
    const IqaMetric *m = iqa_family_metric(f);
    return m ? m->family : NULL;
}

int iqa_family_find(const char *name)
{
    for (int f = 0, n = iqa_family_count(); name && f < n; f++)
        if (!strcmp(iqa_family_name(f), name))
            return f;
    return -1;
}

int iqa_family_value_base(int f)
{
    int base = 0;
    for (int g = 0; g < f; g++)
        base += iqa_family_metric(g)->nvalues;
    return base;
}

int iqa_family_bit_value(unsigned bit)
{
    for (int f = 0, n = iqa_family_count(); f < n; f++)
        if (bit == 1u << f)
            return iqa_family_value_base(f);
    return -1;
}

int iqa_value_count(void)
{
    return iqa_family_value_base(iqa_family_count());
}

int iqa_value_family(int id)
{
    for (int f = 0, n = iqa_family_count(), base = 0; id >= 0 && f < n; f++) {
        base += iqa_family_metric(f)->nvalues;
        if (id < base)
            return f;
    }
    return -1;
}

const IqaValue *iqa_value_get(int id)
{
    int f = iqa_value_family(id);
    return f < 0 ? NULL : &iqa_family_metric(f)->values[id - iqa_family_value_base(f)];
}

int iqa_value_find(const char *name)
{
    for (int id = 0, n = iqa_value_count(); name && id < n; id++)
        if (!strcmp(iqa_value_get(id)->name, name))
            return id;
    return -1;
}

void iqa_picture_gray(IqaPicture *pic, const uint8_t *plane, ptrdiff_t stride, int w, int h)
{
    memset(pic, 0, sizeof(*pic));
    pic->plane[0] = plane;
    pic->stride[0] = stride;
    pic->width[0] = w;
    pic->height[0] = h;
    pic->nplanes = 1;
}

void iqa_metric_close(IqaInstance *inst)
{
    if (inst && inst->metric && inst->ctx)
        inst->metric->close(inst->ctx);
    if (inst)
        inst->ctx = NULL;
}

/* Whether row m answers to `backend`: "auto", its device, or its name. */
static int backend_matches(const IqaMetric *m, const char *backend)
{
    return !strcmp(backend, "auto") || !strcmp(backend, m->device) || !strcmp(backend, m->name);
}

int iqa_family_has_backend(const char *family, const char *backend)
{
    for (int i = 0; family && backend && i < N_METRICS; i++)
        if (!strcmp(metric_list[i]->family, family) && backend_matches(metric_list[i], backend))
            return 1;
    return 0;
}

/* The next row from *from on of `family` that answers to `backend` and
 * whose probe succeeds; *from moves past it.  Under "auto" rows that
 * cannot run are logged and skipped; otherwise the first one found is the
 * answer or the error.  NULL with err set when there is none. */
static const IqaMetric *next_usable(int *from, const char *family, const char *backend,
                                    const MpeLog *log, char *last_why, size_t why_size,
                                    MpeError *err)
{
    const int is_auto = !strcmp(backend, "auto");
    char why[256];
    int ret;

    for (; *from < N_METRICS; ++*from) {
        const IqaMetric *m = metric_list[*from];
        if (strcmp(m->family, family) || !backend_matches(m, backend))
            continue;
        why[0] = '\0';
        if ((ret = m->probe(why, sizeof(why))) == 0) {
            ++*from;
            return m;
        }
        if (!is_auto) {
            mpe_error(err, ret, "%s cannot run here: %s", m->name, why);
            return NULL;
        }
        mpe_log(log, MPE_LOG_INFO, "quality: %s unavailable (%s); trying the next", m->name, why);
        snprintf(last_why, why_size, "%s: %s", m->name, why);
    }
    if (last_why[0])
        mpe_error(err, -ENODEV, "%s: no usable implementation (the last, %s)", family, last_why);
    else
        mpe_error(err, -ENODEV, "%s: no %s implementation in this build", family, backend);
    return NULL;
}

/* The family index, with the config checks every open makes. */
static int check_open(const char *family, const IqaConfig *cfg, MpeError *err)
{
    const IqaMetric *fm;
    int f;

    if (!family || (f = iqa_family_find(family)) < 0)
        return mpe_error(err, -EINVAL, "unknown quality metric '%s'", family ? family : "(null)");
    fm = iqa_family_metric(f);
    if (!cfg)
        return f;
    if (cfg->width < fm->min_size || cfg->height < fm->min_size)
        return mpe_error(err, -EINVAL, "%s needs pictures of at least %dx%d (this one is %dx%d)",
                         fm->label, fm->min_size, fm->min_size, cfg->width, cfg->height);
    if (cfg->threads < 0)
        return mpe_error(err, -EINVAL, "%s: thread count %d is negative", family, cfg->threads);
    if (cfg->device < -1)
        return mpe_error(err, -EINVAL, "%s: device index %d is negative", family, cfg->device);
    return f;
}

const IqaMetric *iqa_metric_pick(const char *family, const char *backend, const MpeLog *log,
                                 MpeError *err)
{
    char last_why[256] = "";
    int from = 0;
    if (check_open(family, NULL, err) < 0)
        return NULL;
    return next_usable(&from, family, backend ? backend : "auto", log, last_why, sizeof(last_why),
                       err);
}

int iqa_metric_open(IqaInstance *inst, const char *family, const char *backend,
                    const IqaConfig *cfg, const MpeLog *log, MpeError *err)
{
    char last_why[256] = "";
    const IqaMetric *m;
    int f, from = 0, ret;

    memset(inst, 0, sizeof(*inst));
    if (!cfg)
        return mpe_error(err, -EINVAL, "%s: no configuration", family ? family : "(null)");
    if ((f = check_open(family, cfg, err)) < 0)
        return f;
    if (!backend)
        backend = "auto";
    while ((m = next_usable(&from, family, backend, log, last_why, sizeof(last_why), err))) {
        MpeError oerr = { "" };   /* open's own message, passed on or logged */
        if ((ret = m->open(&inst->ctx, cfg, &oerr)) == 0) {
            inst->metric = m;
            inst->family = f;
            inst->value_base = iqa_family_value_base(f);
            return 0;
        }
        inst->ctx = NULL;
        if (strcmp(backend, "auto"))
            return mpe_error(err, ret, "%s", oerr.msg);
        /* the fallback: say why the faster twin was given up */
        mpe_log(log, MPE_LOG_WARNING, "quality: %s failed to open (%s); falling back to the next",
                m->name, oerr.msg);
        snprintf(last_why, sizeof(last_why), "%s: %s", m->name, oerr.msg);
    }
    return -ENODEV;
}

int iqa_halves_submit(IqaHalves *h, const char *name,
                      int (*queue)(void *ctx, const IqaPicture *pic, MpeError *err),
                      int (*score)(void *ctx, const IqaPicture *pic, double *values, MpeError *err),
                      void *ctx, const IqaPicture *pic, MpeError *err)
{
    if (h->pending)
        return mpe_error(err, -EBUSY, "%s: a score is pending (collect it first)", name);
    int ret = queue ? queue(ctx, pic, err) : score(ctx, pic, h->held, err);
    h->pending = ret == 0;
    return ret;
}

int iqa_halves_collect(IqaHalves *h, const char *name,
                       int (*wait)(void *ctx, double *values, MpeError *err), int nvalues,
                       void *ctx, double *values, MpeError *err)
{
    if (!h->pending)
        return mpe_error(err, -EINVAL, "%s: no score was submitted", name);
    h->pending = 0;
    if (wait)
        return wait(ctx, values, err);
    memcpy(values, h->held, (size_t)nvalues * sizeof(*values));
    return 0;
}
