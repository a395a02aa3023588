/* qlog.c — the per-frame quality log (CSV / JSON Lines) and the run summary.
 *
 * The columns are two const tables (name with unit, where the value lives
 * in MpeFrameStats) with the metric registry's values between them (name,
 * unit and family from iqa/metric.h), so the CSV header, the JSON header
 * object and every record come from the same list and cannot drift apart.  A record is formatted into a buffer and handed to
 * stdio in one piece, then flushed. */
#include "cli/qlog.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum QlogKind {
    QLOG_INT,      /* int */
    QLOG_U64,      /* uint64_t */
    QLOG_DOUBLE,   /* double; non-finite values are written as empty / null */
    QLOG_TYPE,     /* char picture type */
    QLOG_VBV,      /* double, empty / null when negative (no VBV model) */
} QlogKind;

typedef struct QlogColumn {
    const char *name;   /* CSV column and JSON key; carries the unit */
    const char *unit;   /* for the JSON header */
    QlogKind kind;
    size_t offset;      /* in MpeFrameStats */
    unsigned metric;    /* MpeFrameStats.metrics bit the value needs, 0: always there */
} QlogColumn;

#define COL(name, unit, kind, member, metric) \
    { name, unit, kind, offsetof(MpeFrameStats, member), metric }

/* Before the registry's values. */
static const QlogColumn qlog_head[] = {
    COL("frame", "display index, from 0", QLOG_INT, display_index, 0),
    COL("type", "picture coding type", QLOG_TYPE, type, 0),
    COL("qscale", "quantiser_scale_code", QLOG_INT, qscale, 0),
    COL("qscale_mean", "quantiser_scale_code, mean over macroblocks", QLOG_DOUBLE, qscale_mean, 0),
    COL("bits", "bits", QLOG_U64, bits, 0),
};

/* After them. */
static const QlogColumn qlog_tail[] = {
    COL("mv_mean_abs_pel", "pels", QLOG_DOUBLE, mv_mean_abs, 0),
    COL("reach_fwd_pel", "full pels the forward motion search reached, 0: none", QLOG_INT, reach_fwd, 0),
    COL("reach_bwd_pel", "full pels the backward motion search reached, 0: none", QLOG_INT, reach_bwd, 0),
    COL("mb_intra", "macroblocks", QLOG_INT, mb_intra, 0),
    COL("mb_inter", "macroblocks", QLOG_INT, mb_inter, 0),
    COL("mb_skipped", "macroblocks", QLOG_INT, mb_skipped, 0),
    COL("trials", "codings of the picture", QLOG_INT, trials, 0),
    COL("guard_mean", "trials that met a MAD/BLIINDS-II target, turned down by the row mean-level guard",
        QLOG_INT, guard_mean, 0),
    COL("vbv_fullness_bits", "bits", QLOG_VBV, vbv_fullness, 0),
    COL("read_ms", "ms", QLOG_DOUBLE, time.read_ms, 0),
    COL("decode_ms", "ms", QLOG_DOUBLE, time.decode_ms, 0),
    COL("fe_ms", "ms", QLOG_DOUBLE, time.fe_ms, 0),
    COL("fe_gpu_ms", "ms", QLOG_DOUBLE, time.fe_gpu_ms, 0),
    COL("fe_wait_ms", "ms", QLOG_DOUBLE, time.fe_wait_ms, 0),
    COL("download_ms", "ms", QLOG_DOUBLE, time.download_ms, 0),
    COL("code_ms", "ms", QLOG_DOUBLE, time.code_ms, 0),
    COL("quality_ms", "ms", QLOG_DOUBLE, time.quality_ms, 0),
    COL("quality_wait_ms", "ms", QLOG_DOUBLE, time.quality_wait_ms, 0),
    COL("write_ms", "ms", QLOG_DOUBLE, time.write_ms, 0),
};

#define QLOG_NHEAD (sizeof(qlog_head) / sizeof(qlog_head[0]))
#define QLOG_NTAIL (sizeof(qlog_tail) / sizeof(qlog_tail[0]))

static size_t qlog_ncols(void)
{
    return QLOG_NHEAD + (size_t)iqa_value_count() + QLOG_NTAIL;
}

/* Column i of the log. */
static QlogColumn qlog_column(size_t i)
{
    const size_t nv = (size_t)iqa_value_count();
    if (i < QLOG_NHEAD)
        return qlog_head[i];
    if (i - QLOG_NHEAD < nv) {
        const int id = (int)(i - QLOG_NHEAD);
        const IqaValue *v = iqa_value_get(id);
        return (QlogColumn){ v->name, v->unit, QLOG_DOUBLE,
                             offsetof(MpeFrameStats, value) + (size_t)id * sizeof(double),
                             1u << iqa_value_family(id) };
    }
    return qlog_tail[i - QLOG_NHEAD - nv];
}

enum { QLOG_CSV = 0, QLOG_JSONL = 1, QLOG_JSON = 2 };

struct MpeQlog {
    FILE *f;
    char *path;
    int json;     /* QLOG_*: JSON Lines writes records as they come; JSON at the end */
    int failed;   /* errno of the first failed write, 0 if none */
    int owns_f;   /* opened by name: closed here; else the caller's stream */
    MpeFrameStats *kept;   /* QLOG_JSON: every record, written by mpe_qlog_close */
    int n_kept, cap_kept;
};

/* A growing line: formatted pieces are appended; an overflow is remembered
 * rather than silently cutting the record. */
typedef struct QlogLine {
    char buf[4096];
    size_t len;
    int overflow;
} QlogLine;

__attribute__((format(printf, 2, 3)))
static void line_put(QlogLine *l, const char *fmt, ...)
{
    va_list ap;
    int n;
    if (l->overflow)
        return;
    va_start(ap, fmt);
    n = vsnprintf(l->buf + l->len, sizeof(l->buf) - l->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(l->buf) - l->len)
        l->overflow = 1;
    else
        l->len += (size_t)n;
}

/* The value of one column for one frame; nothing (empty / null) when the
 * measure was not taken or the value cannot be written as a number. */
static void put_value(QlogLine *l, const QlogColumn *c, const MpeFrameStats *fs, int json)
{
    const char *p = (const char *)fs + c->offset;
    const char *none = json ? "null" : "";

    if (c->metric && !(fs->metrics & c->metric)) {
        line_put(l, "%s", none);
        return;
    }
    switch (c->kind) {
    case QLOG_INT: {
        int v;
        memcpy(&v, p, sizeof(v));
        line_put(l, "%d", v);
        break;
    }
    case QLOG_U64: {
        uint64_t v;
        memcpy(&v, p, sizeof(v));
        line_put(l, "%" PRIu64, v);
        break;
    }
    case QLOG_TYPE: {
        char v = *p;
        /* only a letter can need no quoting in CSV and no escaping in JSON */
        if ((v >= 'A' && v <= 'Z') || (v >= 'a' && v <= 'z'))
            line_put(l, json ? "\"%c\"" : "%c", v);
        else
            line_put(l, "%s", none);
        break;
    }
    case QLOG_DOUBLE:
    case QLOG_VBV: {
        double v;
        memcpy(&v, p, sizeof(v));
        if (!isfinite(v) || (c->kind == QLOG_VBV && v < 0))
            line_put(l, "%s", none);
        else
            line_put(l, "%.17g", v);   /* round-trips exactly */
        break;
    }
    }
}

static void format_header(QlogLine *l, int json)
{
    const size_t n = qlog_ncols();
    if (!json) {
        for (size_t i = 0; i < n; i++)
            line_put(l, "%s%s", i ? "," : "", qlog_column(i).name);
        line_put(l, "\n");
        return;
    }
    line_put(l, "{\"mpegenc_log\":1,\"encoder\":\"mpegenc %s\",\"fields\":[", MPE_VERSION);
    for (size_t i = 0; i < n; i++)
        line_put(l, "%s\"%s\"", i ? "," : "", qlog_column(i).name);
    line_put(l, "],\"units\":{");
    for (size_t i = 0; i < n; i++) {
        QlogColumn c = qlog_column(i);
        line_put(l, "%s\"%s\":\"%s\"", i ? "," : "", c.name, c.unit);
    }
    line_put(l, "},\"null\":\"not measured on this frame\"}\n");
}

static void format_record(QlogLine *l, const MpeFrameStats *fs, int json)
{
    const size_t n = qlog_ncols();
    if (json)
        line_put(l, "{");
    for (size_t i = 0; i < n; i++) {
        QlogColumn c = qlog_column(i);
        if (json)
            line_put(l, "%s\"%s\":", i ? "," : "", c.name);
        else if (i)
            line_put(l, ",");
        put_value(l, &c, fs, json);
    }
    line_put(l, json ? "}\n" : "\n");
}

/* Writes a finished line and flushes it to the file. */
static int qlog_emit(MpeQlog *q, const QlogLine *l, MpeError *err)
{
    if (l->overflow)
        return mpe_error(err, -EOVERFLOW, "%s: log record too long", q->path);
    errno = 0;
    if (fwrite(l->buf, 1, l->len, q->f) != l->len || fflush(q->f) != 0) {
        if (!q->failed)
            q->failed = errno ? errno : EIO;
        return mpe_error(err, -q->failed, "%s: write failed: %s", q->path, strerror(q->failed));
    }
    return 0;
}

static const char *path_extension(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    return (dot && (!slash || dot > slash)) ? dot : "";
}

static int qlog_format(const char *path, int *json, MpeError *err)
{
    const char *ext = path_extension(path);
    if (!strcasecmp(ext, ".csv"))
        *json = QLOG_CSV;
    else if (!strcasecmp(ext, ".jsonl"))
        *json = QLOG_JSONL;
    else if (!strcasecmp(ext, ".json"))
        *json = QLOG_JSON;
    else
        return mpe_error(err, -EINVAL, "%s: unknown log format (the name must end in .csv, "
                                       ".jsonl or .json)", path);
    return 0;
}

static int qlog_start(MpeQlog **qp, FILE *f, int owns_f, const char *path, MpeError *err)
{
    MpeQlog *q = NULL;
    QlogLine line = { .len = 0 };
    int json = 0, ret;

    *qp = NULL;
    if ((ret = qlog_format(path, &json, err)) < 0)
        return ret;
    q = calloc(1, sizeof(*q));
    if (!q || !(q->path = strdup(path))) {
        ret = mpe_error(err, -ENOMEM, "%s: out of memory", path);
        goto fail;
    }
    q->json = json;
    q->owns_f = owns_f;
    q->f = f ? f : fopen(path, "w");
    if (!q->f) {
        ret = mpe_error(err, -errno, "%s: cannot open for writing: %s", path, strerror(errno));
        goto fail;
    }
    if (json != QLOG_JSON) {   /* the JSON document is written whole at the end */
        format_header(&line, json);
        ret = qlog_emit(q, &line, err);
        if (ret < 0)
            goto fail;
    }
    *qp = q;
    return 0;

fail:
    if (q && q->f && q->owns_f)
        fclose(q->f);
    if (q)
        free(q->path);
    free(q);
    return ret;
}

int mpe_qlog_open(MpeQlog **qp, const char *path, MpeError *err)
{
    return qlog_start(qp, NULL, 1, path, err);
}

int mpe_qlog_open_file(MpeQlog **qp, FILE *f, const char *name, MpeError *err)
{
    if (!f) {
        *qp = NULL;
        return mpe_error(err, -EINVAL, "%s: no stream", name);
    }
    return qlog_start(qp, f, 0, name, err);
}

int mpe_qlog_write(MpeQlog *q, const MpeFrameStats *fs, MpeError *err)
{
    QlogLine line = { .len = 0 };
    if (q->json == QLOG_JSON) {
        if (q->n_kept == q->cap_kept) {
            int cap = q->cap_kept ? 2 * q->cap_kept : 256;
            MpeFrameStats *k = realloc(q->kept, (size_t)cap * sizeof(*k));
            if (!k)
                return mpe_error(err, -ENOMEM, "%s: out of memory for the log", q->path);
            q->kept = k;
            q->cap_kept = cap;
        }
        q->kept[q->n_kept++] = *fs;
        return 0;
    }
    format_record(&line, fs, q->json);
    return qlog_emit(q, &line, err);
}

static int by_display(const void *a, const void *b)
{
    const MpeFrameStats *x = a, *y = b;
    return (x->display_index > y->display_index) - (x->display_index < y->display_index);
}

/* A number as JSON: %.6f like libvmaf, null when not finite. */
static void json_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6f", v);
    else
        fputs("null", f);
}

/* libvmaf's JSON document (libvmaf/src/output.c): frames in display order,
 * each with the measured values by name, then per value its pooled min,
 * max, mean and harmonic mean (libvmaf's: n / sum(1 / (x + 1)) - 1, which
 * stays defined at 0), and an empty aggregate_metrics. */
static void write_json_document(MpeQlog *q)
{
    FILE *f = q->f;
    const int nv = iqa_value_count();
    qsort(q->kept, (size_t)q->n_kept, sizeof(*q->kept), by_display);
    fprintf(f, "{\n  \"version\": \"mpegenc %s\",\n  \"fps\": null,\n  \"frames\": [", MPE_VERSION);
    for (int k = 0; k < q->n_kept; k++) {
        const MpeFrameStats *fs = &q->kept[k];
        int first = 1;
        /* libvmaf's record, and the picture type beside it (I, P or B) */
        fprintf(f, "%s    {\n      \"frameNum\": %d,\n", k ? ",\n" : "\n", fs->display_index);
        if ((fs->type >= 'A' && fs->type <= 'Z'))
            fprintf(f, "      \"type\": \"%c\",\n", fs->type);
        fprintf(f, "      \"metrics\": {");
        for (int id = 0; id < nv; id++) {
            if (!(fs->metrics & (1u << iqa_value_family(id))))
                continue;
            fprintf(f, "%s\n        \"%s\": ", first ? "" : ",", iqa_value_get(id)->name);
            json_number(f, fs->value[id]);
            first = 0;
        }
        fprintf(f, "\n      }\n    }");
    }
    fprintf(f, "\n  ],\n  \"pooled_metrics\": {");
    for (int id = 0, first = 1; id < nv; id++) {
        double mn = INFINITY, mx = -INFINITY, sum = 0, hsum = 0;
        int n = 0;
        for (int k = 0; k < q->n_kept; k++) {
            const double v = q->kept[k].value[id];
            if (!(q->kept[k].metrics & (1u << iqa_value_family(id))) || !isfinite(v))
                continue;
            mn = fmin(mn, v);
            mx = fmax(mx, v);
            sum += v;
            hsum += 1.0 / (v + 1.0);
            n++;
        }
        if (!n)
            continue;
        fprintf(f, "%s\n    \"%s\": {\n      \"min\": ", first ? "" : ",", iqa_value_get(id)->name);
        json_number(f, mn);
        fputs(",\n      \"max\": ", f);
        json_number(f, mx);
        fputs(",\n      \"mean\": ", f);
        json_number(f, sum / n);
        fputs(",\n      \"harmonic_mean\": ", f);
        json_number(f, n / hsum - 1.0);
        fputs("\n    }", f);
        first = 0;
    }
    fputs("\n  },\n  \"aggregate_metrics\": {}\n}\n", f);
}

int mpe_qlog_close(MpeQlog *q, MpeError *err)
{
    int ret = 0;
    if (!q)
        return 0;
    errno = 0;
    if (q->json == QLOG_JSON && !q->failed) {
        write_json_document(q);
        if (ferror(q->f))
            q->failed = errno ? errno : EIO;
    }
    if ((q->owns_f ? fclose(q->f) : fflush(q->f)) != 0 && !q->failed)
        q->failed = errno ? errno : EIO;
    if (q->failed)
        ret = mpe_error(err, -q->failed, "%s: write failed: %s", q->path, strerror(q->failed));
    free(q->kept);
    free(q->path);
    free(q);
    return ret;
}

/* ---- summary ------------------------------------------------------------ */

static void metric_add(MpeMetricSummary *m, double v)
{
    if (!isfinite(v))
        return;
    m->n++;
    if (m->n == 1) {
        m->mean = m->min = m->max = v;
        return;
    }
    m->mean += (v - m->mean) / m->n;   /* running mean: no sum to overflow */
    m->min = fmin(m->min, v);
    m->max = fmax(m->max, v);
}

/* The registry value id a target applies to (its family's first), -1: none. */
static int target_value(const MpeSummary *s)
{
    return iqa_family_bit_value(s->target_metric);
}

/* How much worse than the target a frame is (> 0), in the metric's unit;
 * <= 0 when it meets it or the metric was not measured. */
static double target_shortfall(const MpeSummary *s, const MpeFrameStats *fs)
{
    const int id = target_value(s);
    double d;
    if (id < 0 || !(fs->metrics & s->target_metric))
        return 0;
    d = iqa_value_get(id)->direction == IQA_HIGHER_IS_BETTER ? s->target - fs->value[id]
                                                              : fs->value[id] - s->target;
    return isfinite(d) ? d : 0;
}

void mpe_summary_init(MpeSummary *s, unsigned target_metric, double target)
{
    memset(s, 0, sizeof(*s));
    s->target_metric = target_metric;
    s->target = target;
    s->worst_miss_frame = -1;
    for (int id = 0; id < IQA_MAX_VALUES; id++)
        s->worst_frame[id] = -1;
}

void mpe_summary_set_size(MpeSummary *s, int width, int height)
{
    s->width = width;
    s->height = height;
}

/* Samples of plane c (4:2:0). */
static double plane_samples(const MpeSummary *s, int c)
{
    return c ? (double)((s->width + 1) / 2) * ((s->height + 1) / 2) : (double)s->width * s->height;
}

static double psnr_of(double sse, double samples)
{
    return sse > 0 ? 10.0 * log10(255.0 * 255.0 * samples / sse) : INFINITY;
}

void mpe_summary_add(MpeSummary *s, const MpeFrameStats *fs)
{
    double miss = target_shortfall(s, fs);

    s->metrics = s->frames ? (s->metrics & fs->metrics) : fs->metrics;
    s->frames++;
    s->bits += fs->bits;
    metric_add(&s->bits_per_frame, (double)fs->bits);
    metric_add(&s->qscale, fs->qscale_mean > 0 ? fs->qscale_mean : (double)fs->qscale);
    for (int id = 0, n = iqa_value_count(); id < n; id++) {
        const double v = fs->value[id];
        if (!(fs->metrics & (1u << iqa_value_family(id))))
            continue;
        metric_add(&s->value[id], v);
        if (isfinite(v) && (s->worst_frame[id] < 0 ||
                            (iqa_value_get(id)->direction == IQA_HIGHER_IS_BETTER ? v < s->worst[id]
                                                                                  : v > s->worst[id]))) {
            s->worst[id] = v;
            s->worst_frame[id] = fs->display_index;
        }
    }
    if (s->width > 0) {
        const double all = plane_samples(s, 0) + 2 * plane_samples(s, 1);
        const double p = psnr_of((double)(fs->sse[0] + fs->sse[1] + fs->sse[2]), all);
        s->psnr_all_sum += isfinite(p) ? p : 100.0;   /* x264 caps a lossless frame the same way */
        for (int c = 0; c < 3; c++)
            s->sse[c] += fs->sse[c];
    }
    if (miss > 0) {
        s->missed++;
        if (miss > s->worst_miss) {
            s->worst_miss = miss;
            s->worst_miss_frame = fs->display_index;
        }
    }
}

/* Appends to a snprintf-style buffer while counting the full length. */
typedef struct SumText {
    char *buf;
    size_t size;
    size_t len;   /* length of the whole text, even past size */
} SumText;

__attribute__((format(printf, 2, 3)))
static void text_put(SumText *t, const char *fmt, ...)
{
    va_list ap;
    char *dst = NULL;
    size_t room = 0;
    int n;
    if (t->len < t->size) {
        dst = t->buf + t->len;
        room = t->size - t->len;
    }
    va_start(ap, fmt);
    n = vsnprintf(dst, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->len += (size_t)n;
}

static void text_metric(SumText *t, const char *label, const MpeMetricSummary *m, int prec,
                        const char *unit, int frames)
{
    if (!m->n)
        return;
    text_put(t, "  %-11s mean %.*f%s  min %.*f%s  max %.*f%s", label, prec, m->mean, unit, prec,
             m->min, unit, prec, m->max, unit);
    if (m->n != frames)
        text_put(t, "  (%d of %d frames)", m->n, frames);
    text_put(t, "\n");
}

/* " dB" after a value whose family has a unit, else "". */
static void value_unit(int id, char *buf, size_t size)
{
    const char *u = iqa_family_metric(iqa_value_family(id))->vunit;
    snprintf(buf, size, "%s%s", u && *u ? " " : "", u ? u : "");
}

int mpe_summary_format(const MpeSummary *s, double fps, char *buf, size_t size)
{
    SumText t = { buf, size, 0 };
    const int target = target_value(s);

    if (buf && size)
        buf[0] = '\0';
    text_put(&t, "%d frames, %" PRIu64 " bytes", s->frames, (s->bits + 7) / 8);
    if (fps > 0 && s->frames > 0)
        text_put(&t, ", %.1f kbit/s at %g fps", (double)s->bits / s->frames * fps / 1000.0, fps);
    text_put(&t, "\n");
    text_metric(&t, "bits/frame", &s->bits_per_frame, 0, "", s->frames);
    text_metric(&t, "qscale", &s->qscale, 2, "", s->frames);
    for (int id = 0, n = iqa_value_count(); id < n; id++) {
        const IqaValue *v = iqa_value_get(id);
        char unit[32];
        if (!v->summary)
            continue;
        value_unit(id, unit, sizeof(unit));
        text_metric(&t, v->summary, &s->value[id], v->summary_digits, unit, s->frames);
    }

    if (target >= 0) {
        const IqaValue *v = iqa_value_get(target);
        const char *name = v->summary ? v->summary : v->label;
        const char *cmp = v->direction == IQA_HIGHER_IS_BETTER ? ">=" : "<=";
        const int prec = v->summary ? v->summary_digits : 3, measured = s->value[target].n;
        char unit[32];
        value_unit(target, unit, sizeof(unit));
        text_put(&t, "  target %s %s %.*f%s: ", name, cmp, prec, s->target, unit);
        if (s->missed)
            text_put(&t, "missed on %d of %d frames, worst by %.*f%s (frame %d)\n", s->missed,
                     s->frames, prec, s->worst_miss, unit, s->worst_miss_frame);
        else
            text_put(&t, "met on all %d frames measured\n", measured);
    }
    return t.len > (size_t)INT_MAX ? -1 : (int)t.len;
}

int mpe_summary_format_peer(const MpeSummary *s, double fps, const char *prefix, char *buf,
                            size_t size)
{
    SumText t = { buf, size, 0 };
    const int n = s->frames;

    if (buf && size)
        buf[0] = '\0';
    if (!prefix)
        prefix = "";
    if (n > 0 && s->width > 0 && (s->metrics & MPE_IQA_PSNR)) {
        const double all = (plane_samples(s, 0) + 2 * plane_samples(s, 1)) * n;
        const double global = psnr_of((double)(s->sse[0] + s->sse[1] + s->sse[2]), all);
        text_put(&t, "%sPSNR Mean Y:%.3f U:%.3f V:%.3f Avg:%.3f Global:%.3f", prefix,
                 s->value[0].mean, s->value[1].mean, s->value[2].mean, s->psnr_all_sum / n, global);
        if (fps > 0)
            text_put(&t, " kb/s:%.2f", (double)s->bits / n * fps / 1000.0);
        text_put(&t, "\n");
    }
    for (int f = 0, nf = iqa_family_count(); f < nf; f++) {
        const int id = iqa_family_value_base(f);
        const IqaMetric *m = iqa_family_metric(f);
        const IqaValue *v = iqa_value_get(id);
        if (!(s->metrics & (1u << f)) || (m->flags & IQA_FROM_SSE) || !s->value[id].n)
            continue;
        if (!strcmp(m->family, "ssim")) {
            /* x264 prints SSIM as a dB figure too: -10 log10(1 - SSIM) */
            text_put(&t, "%sSSIM Mean Y:%.7f (%.3fdb)\n", prefix, s->value[id].mean,
                     -10.0 * log10(1.0 - fmin(s->value[id].mean, 1.0 - 1e-12)));
        } else {
            const int prec = v->summary ? v->summary_digits : 3;
            text_put(&t, "%s%s Mean:%.*f Worst:%.*f (frame %d)\n", prefix, v->label, prec,
                     s->value[id].mean, prec, s->worst[id], s->worst_frame[id]);
        }
    }
    return t.len > (size_t)INT_MAX ? -1 : (int)t.len;
}
