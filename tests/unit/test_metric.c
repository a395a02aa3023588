/* test_metric.c — the metric registry (iqa/metric.h): every row describes
 * itself completely, lookups by name, twins expose the same values, the one
 * open function checks its arguments and falls back with a logged reason. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encoder/param.h"
#include "iqa/metric.h"
#include "tests/test.h"


static void t_rows_complete(TestCtx *t)
{
    CHECK(t, iqa_metric_count() >= 4, "only %d rows", iqa_metric_count());
    for (int i = 0; i < iqa_metric_count(); i++) {
        const IqaMetric *m = iqa_metric_get(i);
        CHECK(t, m->name && m->family && m->device && m->label && m->title && m->axis && m->vunit &&
                     m->fmt,
              "row %d: a name or presentation field is missing", i);
        CHECK(t, !strcmp(m->device, "cpu") || !strcmp(m->device, "cuda"), "%s: device '%s'",
              m->name, m->device);
        CHECK(t, !strcmp(m->device, "cuda") == !!(m->flags & IQA_CUDA), "%s: device vs IQA_CUDA",
              m->name);
        CHECK(t, !(m->flags & IQA_FULL_REFERENCE) != !(m->flags & IQA_NO_REFERENCE),
              "%s: not exactly one of full- / no-reference", m->name);
        CHECK(t, !!(m->flags & IQA_FULL_REFERENCE) == !!m->set_reference,
              "%s: set_reference does not match its reference flag", m->name);
        CHECK(t, m->probe && m->open && m->close && m->score, "%s: a callback is missing", m->name);
        CHECK(t, m->nvalues > 0 && m->values, "%s: no values", m->name);
        CHECK(t, m->min_size >= 1, "%s: min_size %d", m->name, m->min_size);
        for (int v = 0; v < m->nvalues; v++) {
            const IqaValue *val = &m->values[v];
            CHECK(t, val->name && val->unit && val->label, "%s value %d: name/unit/label missing",
                  m->name, v);
            CHECK(t, val->direction == IQA_LOWER_IS_BETTER || val->direction == IQA_HIGHER_IS_BETTER,
                  "%s.%s: direction %d", m->name, val->name, val->direction);
        }
        CHECK(t, iqa_metric_find(m->name) == m, "%s not found by its name", m->name);
    }
    CHECK(t, iqa_metric_find("nope") == NULL && iqa_metric_find(NULL) == NULL, "unknown name found");
    CHECK(t, iqa_metric_find("mad_cpu") && iqa_metric_find("bliinds_cpu") && iqa_metric_find("psnr") &&
                 iqa_metric_find("ssim"),
          "a built-in row is missing");
}

/* Value ids are unique by name, fit the per-frame array, and the family
 * bits the option table and rate control use (MPE_IQA_*) are the registry's. */
static void t_values_and_families(TestCtx *t)
{
    const int nv = iqa_value_count(), nf = iqa_family_count();
    CHECK(t, nv <= IQA_MAX_VALUES && nf <= IQA_MAX_FAMILIES, "%d values, %d families", nv, nf);
    for (int id = 0; id < nv; id++) {
        CHECK(t, iqa_value_find(iqa_value_get(id)->name) == id, "value %d (%s) not unique", id,
              iqa_value_get(id)->name);
        CHECK(t, iqa_value_family(id) >= 0, "value %d has no family", id);
    }
    CHECK(t, iqa_value_get(nv) == NULL && iqa_value_get(-1) == NULL, "value out of range found");
    CHECK(t, iqa_family_find("psnr") >= 0 && MPE_IQA_PSNR == 1u << iqa_family_find("psnr"),
          "psnr's bit");
    CHECK(t, MPE_IQA_SSIM == 1u << iqa_family_find("ssim"), "ssim's bit");
    CHECK(t, MPE_IQA_MAD == 1u << iqa_family_find("mad"), "mad's bit");
    CHECK(t, MPE_IQA_BLIINDS == 1u << iqa_family_find("bliinds"), "bliinds's bit");
    /* the encoder writes PSNR from the SSE at ids 0..2 */
    CHECK(t, iqa_value_find("psnr_y_db") == 0 && iqa_value_find("psnr_cb_db") == 1 &&
                 iqa_value_find("psnr_cr_db") == 2 &&
                 (iqa_family_metric(iqa_family_find("psnr"))->flags & IQA_FROM_SSE),
          "psnr values are not ids 0..2");
    CHECK(t, iqa_family_bit_value(MPE_IQA_MAD) == iqa_value_find("mad"), "mad's first value");
    CHECK(t, iqa_family_bit_value(MPE_IQA_MAD | MPE_IQA_SSIM) == -1 && iqa_family_bit_value(0) == -1,
          "a mask of two families or none has a value");
    CHECK(t, iqa_value_get(iqa_value_find("mad"))->direction == IQA_LOWER_IS_BETTER &&
                 iqa_value_get(iqa_value_find("psnr_y_db"))->direction == IQA_HIGHER_IS_BETTER,
          "directions");
}

/* CPU and CUDA twins of a family expose identical value names, units and
 * directions (callers pick by family; logs must not depend on the device). */
static void t_twins_identical(TestCtx *t)
{
    for (int i = 0; i < iqa_metric_count(); i++) {
        const IqaMetric *a = iqa_metric_get(i);
        const IqaMetric *head = iqa_family_metric(iqa_family_find(a->family));
        CHECK(t, a->nvalues == head->nvalues, "%s: %d values, %s has %d", a->name, a->nvalues,
              head->name, head->nvalues);
        for (int v = 0; v < a->nvalues && v < head->nvalues; v++)
            CHECK(t, !strcmp(a->values[v].name, head->values[v].name) &&
                         !strcmp(a->values[v].unit, head->values[v].unit) &&
                         a->values[v].direction == head->values[v].direction,
                  "%s value %d differs from %s's", a->name, v, head->name);
        CHECK(t, a->flags == head->flags || ((a->flags ^ head->flags) == IQA_CUDA),
              "%s: flags differ from %s's beyond IQA_CUDA", a->name, head->name);
    }
}

static void t_open_checks(TestCtx *t)
{
    IqaInstance in;
    MpeError err = { "" };
    IqaConfig cfg = { .width = 64, .height = 48, .threads = 1, .device = -1 };
    int ret;

    ret = iqa_metric_open(&in, "nope", "auto", &cfg, NULL, &err);
    CHECK(t, ret == -EINVAL && strstr(err.msg, "nope"), "unknown family: %d '%s'", ret, err.msg);
    cfg.device = -2;
    ret = iqa_metric_open(&in, "mad", "cpu", &cfg, NULL, &err);
    CHECK(t, ret == -EINVAL && strstr(err.msg, "-2"), "negative device: %d '%s'", ret, err.msg);
    cfg.device = -1;
    cfg.threads = -1;
    ret = iqa_metric_open(&in, "bliinds", "cpu", &cfg, NULL, &err);
    CHECK(t, ret == -EINVAL && strstr(err.msg, "thread"), "negative threads: %d '%s'", ret, err.msg);
    cfg.threads = 1;
    cfg.width = 20;
    ret = iqa_metric_open(&in, "mad", "auto", &cfg, NULL, &err);
    CHECK(t, ret == -EINVAL && strstr(err.msg, "MAD needs pictures of at least 34x34"),
          "small picture: %d '%s'", ret, err.msg);
    cfg.width = 64;
    ret = iqa_metric_open(&in, "mad", "nope", &cfg, NULL, &err);
    CHECK(t, ret == -ENODEV && strstr(err.msg, "no nope implementation"), "bad backend: %d '%s'",
          ret, err.msg);
    ret = iqa_metric_open(&in, "ssim", "cuda", &cfg, NULL, &err);
    CHECK(t, ret < 0, "ssim opened on cuda");
}

/* "auto" with a CUDA twin built: without a GPU its probe fails, with one the
 * open fails on a device index that cannot exist; either way the reason is
 * logged, naming the twin, and the C row is opened. */
static void t_auto_fallback(TestCtx *t)
{
    TestLog cap = { "", 0 };
    MpeLog log = { test_log_capture, &cap, MPE_LOG_DEBUG };
    IqaConfig cfg = { .width = 64, .height = 48, .threads = 1, .device = 99 };
    IqaInstance in;
    MpeError err = { "" };

    if (!iqa_metric_find("bliinds_cuda")) {
        test_skip(t, "no bliinds_cuda in this build");
        return;
    }
    int ret = iqa_metric_open(&in, "bliinds", "auto", &cfg, &log, &err);
    CHECK(t, ret == 0 && in.metric == iqa_metric_find("bliinds_cpu"), "auto: %d %s '%s'", ret,
          in.metric ? in.metric->name : "-", err.msg);
    CHECK(t, strstr(cap.text, "bliinds_cuda") != NULL, "no logged reason: '%s'", cap.text);
    printf("     # logged: %s", cap.text);
    iqa_metric_close(&in);
    /* asked for by device, the twin's failure is the error, and names the index or the cause */
    ret = iqa_metric_open(&in, "bliinds", "cuda", &cfg, &log, &err);
    CHECK(t, ret < 0 && strstr(err.msg, "bliinds_cuda"), "cuda on device 99: %d '%s'", ret,
          err.msg);
    printf("     # cuda, device 99: %s\n", err.msg);
}

/* The C rows score through the registry as their own functions do. */
static void t_score_cpu_rows(TestCtx *t)
{
    enum { W = 40, H = 36 };
    static uint8_t a[W * H], b[W * H];
    TestRng rng = { 0x6d6574726963ULL };
    MpeError err = { "" };
    IqaConfig cfg = { .width = W, .height = H, .threads = 1, .device = -1 };
    IqaPicture pa, pb;

    /* a smooth picture and it with noise (MAD sees nothing on a noise picture) */
    for (int i = 0; i < W * H; i++) {
        a[i] = (uint8_t)(60 + 2 * (i % W) + i / W);
        b[i] = (uint8_t)(a[i] + (int)(test_rand(&rng) % 41) - 20);
    }
    iqa_picture_gray(&pa, a, W, W, H);
    iqa_picture_gray(&pb, b, W, W, H);
    for (int i = 0; i < iqa_metric_count(); i++) {
        const IqaMetric *m = iqa_metric_get(i);
        IqaInstance in;
        double v[IQA_MAX_VALUES], same[IQA_MAX_VALUES];
        if (m->flags & IQA_CUDA)
            continue;
        int ret = iqa_metric_open(&in, m->family, m->name, &cfg, NULL, &err);
        CHECK(t, ret == 0 && in.metric == m, "%s: open %d '%s'", m->name, ret, err.msg);
        if (ret)
            continue;
        if (m->set_reference)
            CHECK(t, m->set_reference(in.ctx, &pa, &err) == 0, "%s: set_reference '%s'", m->name,
                  err.msg);
        CHECK(t, m->score(in.ctx, &pb, v, &err) == 0, "%s: score '%s'", m->name, err.msg);
        CHECK(t, m->score(in.ctx, &pa, same, &err) == 0, "%s: score '%s'", m->name, err.msg);
        if (m->flags & IQA_FULL_REFERENCE) {
            /* identical pictures are the best a full-reference value can say */
            const IqaValue *first = &m->values[0];
            CHECK(t, first->direction == IQA_HIGHER_IS_BETTER ? same[0] > v[0] : same[0] < v[0],
                  "%s: identical %g vs distorted %g", m->name, same[0], v[0]);
        }
        iqa_metric_close(&in);
    }
}

/* score() in halves through the registry: every row of a family with
 * halves has them (twins alike), C rows give score()'s values, one score in
 * flight, and set_reference between submit and collect leaves the pending
 * score on the old reference. */
static void t_submit_collect_rows(TestCtx *t)
{
    enum { W = 40, H = 36 };
    static uint8_t a[W * H], b[W * H], c[W * H];
    TestRng rng = { 0x7375626d6974ULL };
    MpeError err = { "" };
    IqaConfig cfg = { .width = W, .height = H, .threads = 1, .device = -1 };
    IqaPicture pa, pb, pc;
    int with_halves = 0;

    for (int i = 0; i < W * H; i++) {
        a[i] = (uint8_t)(60 + 2 * (i % W) + i / W);
        b[i] = (uint8_t)(a[i] + (int)(test_rand(&rng) % 41) - 20);
        c[i] = (uint8_t)(200 - a[i] / 2);
    }
    iqa_picture_gray(&pa, a, W, W, H);
    iqa_picture_gray(&pb, b, W, W, H);
    iqa_picture_gray(&pc, c, W, W, H);
    for (int i = 0; i < iqa_metric_count(); i++) {
        const IqaMetric *m = iqa_metric_get(i);
        const IqaMetric *head = iqa_family_metric(iqa_family_find(m->family));
        IqaInstance in;
        double v[IQA_MAX_VALUES], w[IQA_MAX_VALUES];
        CHECK(t, !m->submit == !m->collect && !m->submit == !head->submit,
              "%s: submit %d collect %d, its family's first row %d", m->name, !!m->submit,
              !!m->collect, !!head->submit);
        if ((m->flags & IQA_CUDA) || !m->submit)
            continue;
        with_halves++;
        int ret = iqa_metric_open(&in, m->family, m->name, &cfg, NULL, &err);
        CHECK(t, ret == 0, "%s: open %d '%s'", m->name, ret, err.msg);
        if (ret)
            continue;
        if (m->set_reference)
            CHECK(t, m->set_reference(in.ctx, &pa, &err) == 0, "%s: set_reference", m->name);
        CHECK(t, m->score(in.ctx, &pb, v, &err) == 0, "%s: score '%s'", m->name, err.msg);
        CHECK(t, m->collect(in.ctx, w, &err) == -EINVAL, "%s: collect without submit", m->name);
        CHECK(t, m->submit(in.ctx, &pb, &err) == 0, "%s: submit '%s'", m->name, err.msg);
        CHECK(t, m->submit(in.ctx, &pb, &err) == -EBUSY, "%s: a second submit", m->name);
        if (m->set_reference)
            CHECK(t, m->set_reference(in.ctx, &pc, &err) == 0, "%s: set_reference", m->name);
        CHECK(t, m->collect(in.ctx, w, &err) == 0 && !memcmp(v, w, m->nvalues * sizeof(double)),
              "%s: collected %g, score() gave %g", m->name, w[0], v[0]);
        iqa_metric_close(&in);
    }
    CHECK(t, with_halves >= 2, "only %d C rows with submit/collect", with_halves);
}

int main(void)
{
    TestCtx t;
    test_init(&t, "test_metric");
    test_run(&t, "rows_complete", t_rows_complete);
    test_run(&t, "values_and_families", t_values_and_families);
    test_run(&t, "twins_identical", t_twins_identical);
    test_run(&t, "open_checks", t_open_checks);
    test_run(&t, "auto_fallback", t_auto_fallback);
    test_run(&t, "score_cpu_rows", t_score_cpu_rows);
    test_run(&t, "submit_collect_rows", t_submit_collect_rows);
    return test_finish(&t);
}
