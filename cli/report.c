/* report.c — the self-contained HTML report (report.h).
 *
 * The page is written straight to a stdio stream: header, summary table,
 * then one inline-SVG chart per series.  It is also well-formed XML (every
 * element closed, text escaped, control bytes and broken UTF-8 replaced), so
 * tests and scripts can read it with an XML parser as well as a browser.
 *
 * Numbers go through printf under a thread-local "C" locale (uselocale), so
 * a caller running in a decimal-comma locale still gets "41.5", and nothing
 * global is touched. */
#include "cli/report.h"

#include "common/outfile.h"

#include <errno.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* Chart geometry in SVG user units (CSS px at 100 % zoom): plot box
 * [PLOT_L, PLOT_R] x [PLOT_T, PLOT_B], tick labels left and below it. */
enum {
    SVG_W = 960, SVG_H = 268,
    PLOT_L = 72, PLOT_R = 944, PLOT_T = 28, PLOT_B = 222,
    Y_TICKS = 5, X_TICKS = 10,
};

#define COL_MAIN "#1f77b4"

typedef double (*RepGet)(const MpeFrameStats *f);

typedef struct RepSeries {
    char key[32];         /* data-row of its summary row */
    const char *name;     /* legend and tooltip */
    const char *label;    /* summary table and header */
    const char *color;
    double width;         /* line width */
    RepGet get;           /* NULL: the registry value `value` */
    int value;
} RepSeries;

typedef struct RepChart {
    const char *id;       /* data-chart */
    const char *title;
    const char *unit;     /* y-axis label (plotted unit) */
    const char *vunit;    /* unit of the values in tooltips and the summary */
    const char *fmt;      /* printf format of one value */
    unsigned metric;      /* MpeFrameStats.metrics bit (registry family), 0 = always there */
    double scale;         /* plotted = value * scale */
    double top;           /* largest value the measure can take (SSIM: 1), or 0:
                             a padded axis does not run past it */
    int rate;             /* the bits chart: markers coloured by picture type,
                             the bitrate target drawn as bits per picture */
    int nseries;
    RepSeries series[IQA_MAX_VALUES];  /* [0] is drawn last and carries the markers */
} RepChart;

static double get_bits(const MpeFrameStats *f) { return (double)f->bits; }
static double get_q(const MpeFrameStats *f) { return f->qscale_mean; }

/* Before the registry's metrics. */
static const RepChart rep_fixed[] = {
    { "bits", "Bits per picture", "kbit", "bits", "%.0f", 0, 1e-3, 0, 1, 1,
      { { "bits", "bits", "bits per picture", COL_MAIN, 1.2, get_bits, 0 } } },
    { "qscale", "Quantiser (mean quantiser_scale_code)", "quantiser_scale_code", "", "%.2f", 0, 1, 0, 0, 1,
      { { "qscale", "q", "quantiser (mean)", COL_MAIN, 1.5, get_q, 0 } } },
};
#define N_FIXED ((int)(sizeof(rep_fixed) / sizeof(rep_fixed[0])))

static int n_charts(void)
{
    return N_FIXED + iqa_family_count();
}

/* A series key from a log column name: dashes for underscores, without the
 * unit the column name ends in (psnr_y_db -> psnr-y). */
static void series_key(char *key, size_t size, const char *name, const char *unit)
{
    size_t n = strlen(name), u = unit ? strlen(unit) : 0;
    if (u && n > u + 1 && name[n - u - 1] == '_' && !strcasecmp(name + n - u, unit))
        n -= u + 1;
    snprintf(key, size, "%.*s", (int)n, name);
    for (char *p = key; *p; p++)
        if (*p == '_')
            *p = '-';
}

/* Chart i: the fixed ones, then one per registry family with a line per value. */
static void chart_at(int i, RepChart *c)
{
    const IqaMetric *m;
    int base;

    if (i < N_FIXED) {
        *c = rep_fixed[i];
        return;
    }
    m = iqa_family_metric(i - N_FIXED);
    base = iqa_family_value_base(i - N_FIXED);
    memset(c, 0, sizeof(*c));
    *c = (RepChart){ m->family, m->title, m->axis, m->vunit, m->fmt, 1u << (i - N_FIXED), 1, m->top,
                     0, m->nvalues, { { "", NULL, NULL, NULL, 0, NULL, 0 } } };
    for (int v = 0; v < m->nvalues && v < IQA_MAX_VALUES; v++) {
        const IqaValue *val = &m->values[v];
        RepSeries *se = &c->series[v];
        series_key(se->key, sizeof(se->key), val->name, m->vunit);
        se->name = val->legend ? val->legend : val->name;
        se->label = val->label ? val->label : val->name;
        se->color = val->color ? val->color : COL_MAIN;
        se->width = val->width > 0 ? val->width : 1.2;
        se->get = NULL;
        se->value = base + v;
    }
}

static double series_get(const RepSeries *se, const MpeFrameStats *f)
{
    return se->get ? se->get(f) : f->value[se->value];
}

typedef struct RepAxis {
    double min, max, step;
} RepAxis;

typedef struct RepStats {
    int n;
    double sum, min, max;
} RepStats;

/* Frames sorted by display_index, so lines run left to right whatever
 * order the caller kept them in. */
typedef struct RepOrder {
    int display, index;
} RepOrder;

static int order_cmp(const void *a, const void *b)
{
    const RepOrder *x = a, *y = b;
    if (x->display != y->display)
        return x->display < y->display ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one
 * (overlong forms, surrogates and code points past U+10FFFF included):
 * XML parsers reject those bytes, so they are replaced. */
static int utf8_len(const unsigned char *s)
{
    unsigned char c = s[0];
    int len;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0;
        if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90;
        if (c == 0xf4)
            hi = 0x8f;
    } else
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (int i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

/* Text or attribute value, escaped; NULL writes nothing. */
static void put_text(FILE *f, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    if (!s)
        return;
    while (*s) {
        int len = utf8_len(s);
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default:
            if (len == 0 || (*s < 0x20 && *s != '\t' && *s != '\n'))
                fputs("\xef\xbf\xbd", f);   /* U+FFFD */
            else
                fwrite(s, 1, (size_t)len, f);
        }
        s += len ? len : 1;
    }
}

/* One value with the chart's format; never "nan"/"inf" on the page. */
static void put_value(FILE *f, const char *fmt, double v)
{
    if (isfinite(v))
        fprintf(f, fmt, v);
    else
        fputs(isnan(v) ? "n/a" : v > 0 ? "+&#8734;" : "-&#8734;", f);
}

static int frame_has(const MpeFrameStats *f, const RepChart *c)
{
    return !c->metric || (f->metrics & c->metric);
}

static void stats_add(RepStats *s, double v)
{
    if (!isfinite(v))
        return;
    if (!s->n || v < s->min)
        s->min = v;
    if (!s->n || v > s->max)
        s->max = v;
    s->sum += v;
    s->n++;
}

/* A value axis [min, max] with 1-2-5 steps around [lo, hi].  A constant
 * series gets a band around its value instead of a zero-width range; a
 * series that is never negative does not get a negative axis. */
static RepAxis axis_nice(double lo, double hi, int ticks)
{
    RepAxis a;
    double dlo = lo;
    if (!(hi > lo)) {
        double pad = fabs(lo) > 1e-9 ? fabs(lo) * 0.05 : 1.0;
        lo -= pad;
        hi += pad;
    }
    double raw = (hi - lo) / ticks;
    double mag = pow(10.0, floor(log10(raw)));
    double f = raw / mag;
    a.step = (f <= 1.0 ? 1.0 : f <= 2.0 ? 2.0 : f <= 5.0 ? 5.0 : 10.0) * mag;
    a.min = floor(lo / a.step + 1e-9) * a.step;
    a.max = ceil(hi / a.step - 1e-9) * a.step;
    if (dlo >= 0 && a.min < 0)
        a.min = 0;
    return a;
}

static double map_x(const RepAxis *x, double v)
{
    return PLOT_L + (v - x->min) / (x->max - x->min) * (PLOT_R - PLOT_L);
}

/* Non-finite values sit on the plot's edge (their tooltip says what they are). */
static double map_y(const RepAxis *y, double v)
{
    if (isnan(v) || v == -INFINITY)
        return PLOT_B;
    if (v == INFINITY)
        return PLOT_T;
    return PLOT_B - (v - y->min) / (y->max - y->min) * (PLOT_B - PLOT_T);
}

/* Decimals that print every multiple of step exactly enough. */
static int step_decimals(double step)
{
    return step >= 1.0 ? 0 : (int)ceil(-log10(step) - 1e-9);
}

static void write_axes(FILE *f, const RepChart *c, const RepAxis *xa, const RepAxis *ya)
{
    int yd = step_decimals(ya->step);
    int nt = (int)floor((ya->max - ya->min) / ya->step + 0.5);

    fputs("<g class=\"grid\">\n", f);
    for (int i = 0; i <= nt; i++) {
        double v = ya->min + i * ya->step;
        if (fabs(v) < ya->step * 1e-6)
            v = 0;   /* no "-0" */
        double y = map_y(ya, v);
        fprintf(f, "<line class=\"gr\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
                   "<text class=\"yt\" x=\"%d\" y=\"%.1f\" dy=\"4\">%.*f</text>\n",
                PLOT_L, y, PLOT_R, y, PLOT_L - 6, y, yd, v);
    }
    /* frame numbers are integers: steps of at least one frame */
    double xstep = fmax(1.0, axis_nice(xa->min, xa->max, X_TICKS).step);
    for (double v = ceil(fmax(0.0, xa->min) / xstep) * xstep; v <= xa->max + 1e-9; v += xstep) {
        double x = map_x(xa, v);
        fprintf(f, "<line class=\"ax\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
                   "<text class=\"xt\" x=\"%.1f\" y=\"%d\">%.0f</text>\n",
                x, PLOT_B, x, PLOT_B + 5, x, PLOT_B + 18, v);
    }
    fprintf(f, "<line class=\"ax\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>"
               "<line class=\"ax\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n",
            PLOT_L, PLOT_T, PLOT_L, PLOT_B, PLOT_L, PLOT_B, PLOT_R, PLOT_B);
    fprintf(f, "<text class=\"xl\" x=\"%d\" y=\"%d\">frame (display order)</text>\n",
            (PLOT_L + PLOT_R) / 2, SVG_H - 8);
    fprintf(f, "<text class=\"yl\" transform=\"translate(16 %d) rotate(-90)\">",
            (PLOT_T + PLOT_B) / 2);
    put_text(f, c->unit);
    fputs("</text>\n</g>\n", f);
}

/* Legend along the top edge, right-aligned: one entry per series (bits:
 * the picture types instead, which the markers' colours show). */
static void write_legend(FILE *f, const RepChart *c)
{
    static const char *const types[3][2] = { { "I picture", "#d62728" }, { "P picture", "#1f77b4" },
                                             { "B picture", "#2ca02c" } };
    int n = c->rate ? 3 : c->nseries;
    double x = PLOT_R - 96.0 * n;

    fputs("<g class=\"legend\">", f);
    for (int i = 0; i < n; i++, x += 96.0) {
        const char *name = c->rate ? types[i][0] : c->series[i].name;
        const char *col = c->rate ? types[i][1] : c->series[i].color;
        if (c->rate)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"12\" r=\"4\" fill=\"%s\"/>", x + 9, col);
        else
            fprintf(f, "<line x1=\"%.1f\" y1=\"12\" x2=\"%.1f\" y2=\"12\" stroke=\"%s\" stroke-width=\"3\"/>",
                    x, x + 18, col);
        fprintf(f, "<text x=\"%.1f\" y=\"16\">", x + 23);
        put_text(f, name);
        fputs("</text>", f);
    }
    fputs("</g>\n", f);
}

static void write_chart(FILE *f, const RepChart *c, const MpeReportInfo *info,
                        const MpeFrameStats *frames, const RepOrder *order, int n)
{
    double lo = INFINITY, hi = -INFINITY;
    int first = -1, last = -1, count = 0;
    double target = NAN;

    for (int k = 0; k < n; k++) {
        const MpeFrameStats *fr = &frames[order[k].index];
        if (!frame_has(fr, c))
            continue;
        if (!count)
            first = fr->display_index;
        last = fr->display_index;
        count++;
        for (int s = 0; s < c->nseries; s++) {
            double v = series_get(&c->series[s], fr) * c->scale;
            if (isfinite(v)) {
                lo = fmin(lo, v);
                hi = fmax(hi, v);
            }
        }
    }
    if (!count)
        return;
    if (c->metric && c->metric == info->target_metric)
        target = info->target;
    else if (c->rate && info->bitrate > 0 && info->fps > 0)
        target = info->bitrate / info->fps;
    if (isfinite(target)) {
        lo = fmin(lo, target * c->scale);
        hi = fmax(hi, target * c->scale);
    }
    if (!(lo <= hi))   /* nothing finite at all */
        lo = hi = 0;

    RepAxis ya = axis_nice(lo, hi, Y_TICKS);
    if (c->top > 0 && hi <= c->top * c->scale && ya.max > c->top * c->scale)
        ya.max = c->top * c->scale;
    RepAxis xa = { first, last, 1 };
    if (last == first) {
        xa.min -= 1;
        xa.max += 1;
    }

    fprintf(f, "<section class=\"chart\" id=\"chart-%s\">\n<h2>", c->id);
    put_text(f, c->title);
    fputs("</h2>\n", f);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" data-chart=\"%s\" data-xmin=\"%.17g\" data-xmax=\"%.17g\" "
               "data-ymin=\"%.17g\" data-ymax=\"%.17g\" data-left=\"%d\" data-right=\"%d\" "
               "data-top=\"%d\" data-bottom=\"%d\" data-scale=\"%g\">\n",
            SVG_W, SVG_H, SVG_W, SVG_H, c->id, xa.min, xa.max, ya.min, ya.max,
            PLOT_L, PLOT_R, PLOT_T, PLOT_B, c->scale);
    write_axes(f, c, &xa, &ya);
    write_legend(f, c);

    /* companions first, so the main series is drawn on top */
    for (int s = c->nseries - 1; s >= 0; s--) {
        const RepSeries *se = &c->series[s];
        fprintf(f, "<polyline class=\"ln\" data-series=\"%s\" stroke=\"%s\" stroke-width=\"%.1f\" points=\"",
                se->key, se->color, se->width);
        for (int k = 0; k < n; k++) {
            const MpeFrameStats *fr = &frames[order[k].index];
            if (frame_has(fr, c))
                fprintf(f, "%.1f,%.1f ", map_x(&xa, fr->display_index),
                        map_y(&ya, series_get(se, fr) * c->scale));
        }
        fputs("\"/>\n", f);
    }

    if (isfinite(target)) {
        double y = map_y(&ya, target * c->scale);
        /* label above the line, or below it when the line is at the top */
        double ty = y - 4 < PLOT_T + 12 ? y + 13 : y - 4;
        fprintf(f, "<line class=\"tg\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
                   "<text class=\"tl\" x=\"%d\" y=\"%.1f\">target ",
                PLOT_L, y, PLOT_R, y, PLOT_R - 4, ty);
        put_value(f, c->rate ? "%.0f" : "%.6g", target);
        if (*c->vunit)
            fprintf(f, " %s", c->vunit);
        if (c->rate)
            fprintf(f, " per picture (%.0f kbit/s)", info->bitrate / 1000.0);
        fputs("</text>\n", f);
    }

    /* One marker per frame; its tooltip gives the exact values.  Sizes come
     * from the CSS (class s/m/l by count) and only the bits chart colours by
     * picture type: a 10000-frame report stays a few MB. */
    fprintf(f, "<g class=\"pts %c\" data-series=\"%s\" fill=\"%s\">\n",
            count <= 100 ? 's' : count <= 1000 ? 'm' : 'l', c->series[0].key, c->series[0].color);
    for (int k = 0; k < n; k++) {
        const MpeFrameStats *fr = &frames[order[k].index];
        if (!frame_has(fr, c))
            continue;
        char type = fr->type == 'I' || fr->type == 'P' || fr->type == 'B' ? fr->type : '?';
        fputs("<circle ", f);
        if (c->rate)
            fprintf(f, "class=\"%c\" ", type == '?' ? 'X' : type);
        fprintf(f, "data-frame=\"%d\" cx=\"%.1f\" cy=\"%.1f\"><title>#%d %c:", fr->display_index,
                map_x(&xa, fr->display_index), map_y(&ya, series_get(&c->series[0], fr) * c->scale),
                fr->display_index, type);
        for (int s = 0; s < c->nseries; s++) {
            if (c->nseries > 1)
                fprintf(f, "%s %s", s ? "," : "", c->series[s].name);
            fputc(' ', f);
            put_value(f, c->fmt, series_get(&c->series[s], fr));
        }
        if (*c->vunit)
            fprintf(f, " %s", c->vunit);
        fputs("</title></circle>\n", f);
    }
    fputs("</g>\n</svg>\n</section>\n", f);
}

/* Header rows: label, then escaped value. */
static void info_row(FILE *f, const char *label, const char *value)
{
    fprintf(f, "<tr><th>%s</th><td>", label);
    put_text(f, value);
    fputs("</td></tr>\n", f);
}

static void write_header(FILE *f, const MpeReportInfo *info, const MpeFrameStats *frames, int n)
{
    uint64_t bits = 0;
    int n_i = 0, n_p = 0, n_b = 0;
    char buf[256];

    for (int k = 0; k < n; k++) {
        bits += frames[k].bits;
        n_i += frames[k].type == 'I';
        n_p += frames[k].type == 'P';
        n_b += frames[k].type == 'B';
    }
    fputs("<h1>", f);
    put_text(f, info->title);
    fputs("</h1>\n<table class=\"run\">\n", f);
    info_row(f, "Input", info->input);
    info_row(f, "Output", info->output);
    if (info->command_line)
        info_row(f, "Command", info->command_line);
    info_row(f, "Format", info->format);
    info_row(f, "Front end", info->backend);
    snprintf(buf, sizeof(buf), "%d\xc3\x97%d", info->width, info->height);
    info_row(f, "Size", buf);
    if (info->fps > 0) {
        snprintf(buf, sizeof(buf), "%.3f frames/s", info->fps);
        info_row(f, "Frame rate", buf);
    }
    if (n_b)
        snprintf(buf, sizeof(buf), "%d (%d I, %d P, %d B)", n, n_i, n_p, n_b);
    else
        snprintf(buf, sizeof(buf), "%d (%d I, %d P)", n, n_i, n_p);
    info_row(f, "Pictures", buf);
    snprintf(buf, sizeof(buf), "%" PRIu64 " bytes", (bits + 7) / 8);
    info_row(f, "Coded size", buf);
    if (info->fps > 0 && n > 0) {
        snprintf(buf, sizeof(buf), "%.1f kbit/s", (double)bits * info->fps / n / 1000.0);
        info_row(f, "Mean bitrate", buf);
    }
    buf[0] = '\0';
    for (int fam = 0, len = 0, nf = iqa_family_count(); fam < nf; fam++)
        if ((info->metrics & (1u << fam)) && len < (int)sizeof(buf))
            len += snprintf(buf + len, sizeof(buf) - (size_t)len, " %s",
                            iqa_family_metric(fam)->label);
    info_row(f, "Quality measures", buf[0] ? buf + 1 : "none");
    if (info->target_metric) {
        for (int ci = 0, nc = n_charts(); ci < nc; ci++) {
            RepChart c;
            chart_at(ci, &c);
            if (c.metric == info->target_metric) {
                snprintf(buf, sizeof(buf), "%s %.4g %s", c.series[0].label, info->target, c.vunit);
                info_row(f, "Quality target", buf);
            }
        }
    }
    if (info->bitrate > 0) {
        snprintf(buf, sizeof(buf), "%.1f kbit/s", info->bitrate / 1000.0);
        info_row(f, "Bitrate target", buf);
    }
    fputs("</table>\n", f);
}

static int chart_shown(const RepChart *c, const MpeReportInfo *info)
{
    return !c->metric || (info->metrics & c->metric);
}

static void write_summary(FILE *f, const MpeReportInfo *info, const MpeFrameStats *frames, int n)
{
    fputs("<h2>Summary</h2>\n<table class=\"summary\">\n"
          "<tr><th>measure</th><th>unit</th><th class=\"n\">mean</th><th class=\"n\">min</th>"
          "<th class=\"n\">max</th><th class=\"n\">pictures</th></tr>\n", f);
    for (int ci = 0, nc = n_charts(); ci < nc; ci++) {
        RepChart chart;
        const RepChart *c = &chart;
        chart_at(ci, &chart);
        if (!chart_shown(c, info))
            continue;
        for (int s = 0; s < c->nseries; s++) {
            RepStats st = { 0, 0, 0, 0 };
            for (int k = 0; k < n; k++)
                if (frame_has(&frames[k], c))
                    stats_add(&st, series_get(&c->series[s], &frames[k]));
            if (!st.n)
                continue;
            fprintf(f, "<tr data-row=\"%s\"><td>", c->series[s].key);
            put_text(f, c->series[s].label);
            fputs("</td><td>", f);
            put_text(f, c->vunit);
            fputs("</td><td class=\"n mean\">", f);
            put_value(f, c->fmt, st.sum / st.n);
            fputs("</td><td class=\"n min\">", f);
            put_value(f, c->fmt, st.min);
            fputs("</td><td class=\"n max\">", f);
            put_value(f, c->fmt, st.max);
            fprintf(f, "</td><td class=\"n\">%d</td></tr>\n", st.n);
        }
    }
    fputs("</table>\n", f);
}

/* No '<' or '&' in here: the page stays well-formed XML. */
static const char rep_css[] =
    "body{font-family:system-ui,sans-serif;margin:24px;color:#222;background:#fff}\n"
    "h1{font-size:22px;margin:0 0 12px;word-break:break-all}\n"
    "h2{font-size:16px;margin:22px 0 4px}\n"
    "table{border-collapse:collapse;font-size:14px}\n"
    "th,td{padding:3px 10px;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}\n"
    "table.run td{font-family:ui-monospace,monospace;word-break:break-all}\n"
    ".n{text-align:right;font-variant-numeric:tabular-nums}\n"
    "svg{display:block;font-size:11px;background:#fff}\n"
    "svg text{fill:#333}\n"
    ".gr{stroke:#e6e6e6}\n"
    ".ax{stroke:#444}\n"
    ".yt{text-anchor:end}\n"
    ".xt,.xl{text-anchor:middle}\n"
    ".yl{text-anchor:middle}\n"
    ".ln{fill:none;stroke-linejoin:round}\n"
    ".tg{stroke:#444;stroke-width:1.2;stroke-dasharray:6 4}\n"
    ".tl{text-anchor:end;font-weight:bold;paint-order:stroke;stroke:#fff;stroke-width:3px}\n"
    ".pts.s circle{r:2.5px}\n"
    ".pts.m circle{r:1.6px}\n"
    ".pts.l circle{r:0.9px}\n"
    "#chart-bits .I{fill:#d62728}\n"
    "#chart-bits .P{fill:#1f77b4}\n"
    "#chart-bits .B{fill:#2ca02c}\n";

static void write_page(FILE *f, const MpeReportInfo *info, const MpeFrameStats *frames,
                       const RepOrder *order, int n)
{
    fputs("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
          "<meta charset=\"utf-8\"/>\n<meta name=\"generator\" content=\"mpegenc " MPE_VERSION "\"/>\n"
          "<title>mpegenc report: ", f);
    put_text(f, info->title);
    fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n", rep_css);
    write_header(f, info, frames, n);
    write_summary(f, info, frames, n);
    if (!n)
        fputs("<p>No picture was coded.</p>\n", f);
    for (int ci = 0, nc = n_charts(); ci < nc; ci++) {
        RepChart c;
        chart_at(ci, &c);
        if (chart_shown(&c, info))
            write_chart(f, &c, info, frames, order, n);
    }
    fputs("</body>\n</html>\n", f);
}

int mpe_report_write_file(FILE *f, const char *name, const MpeReportInfo *info,
                          const MpeFrameStats *frames, int n, MpeError *err)
{
    RepOrder *order = NULL;
    locale_t cloc, old;
    int ret = 0;

    if (!name || !*name)
        name = "report";
    if (!f || !info || n < 0 || (n > 0 && !frames))
        return mpe_error(err, -EINVAL, "%s: bad report arguments", name);
    if (n > 0 && !(order = malloc(sizeof(*order) * (size_t)n)))
        return mpe_error(err, -ENOMEM, "%s: out of memory", name);
    for (int k = 0; k < n; k++) {
        order[k].display = frames[k].display_index;
        order[k].index = k;
    }
    if (n > 1)
        qsort(order, (size_t)n, sizeof(*order), order_cmp);
    if (!(cloc = newlocale(LC_ALL_MASK, "C", (locale_t)0))) {
        free(order);
        return mpe_error(err, -ENOMEM, "%s: cannot set up the C locale", name);
    }
    old = uselocale(cloc);
    errno = 0;
    write_page(f, info, frames, order, n);
    uselocale(old);
    freelocale(cloc);
    free(order);
    if (fflush(f) != 0 || ferror(f))
        ret = mpe_error(err, -(errno ? errno : EIO), "%s: write error: %s", name,
                        strerror(errno ? errno : EIO));
    return ret;
}

int mpe_report_write(const char *path, const MpeReportInfo *info,
                     const MpeFrameStats *frames, int n, MpeError *err)
{
    MpeOutFile o;
    int ret;

    if (!path || !*path)
        return mpe_error(err, -EINVAL, "report: no file name");
    if (!info || n < 0 || (n > 0 && !frames))
        return mpe_error(err, -EINVAL, "%s: bad report arguments", path);
    if ((ret = mpe_outfile_open(&o, path, err)) < 0)
        return ret;
    if ((ret = mpe_report_write_file(o.f, path, info, frames, n, err)) < 0 ||
        (ret = mpe_outfile_finish(&o, err)) < 0 || (ret = mpe_outfile_commit(&o, err)) < 0) {
        mpe_outfile_abort(&o);
        return ret;
    }
    return 0;
}
