/* test_report.c — the HTML report (cli/report.h).
 *
 * Synthetic frame arrays are written to a temporary directory and the page
 * is read back.  The truth is the input array: every chart must hold one
 * marker per frame that carries its metric, in display order, at the pixel
 * position the chart's own declared axis gives for that frame's value (the
 * mapping is recomputed here), tooltips and summary numbers must be the
 * array's values and their mean/min/max, the target line must sit at the
 * target's y, and tick labels at their own y.  Well-formedness is checked
 * with python3's XML and HTML parsers when python3 is there. */
#include <dirent.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/report.h"
#include "tests/test.h"
#include "common/timer.h"
#include "iqa/metric.h"

/* a metric registry value id by its log name */
#define VID(name) iqa_value_find(name)

/* ---- what the page must show, written independently of report.c ------- */

static double g_bits(const MpeFrameStats *f) { return (double)f->bits; }
static double g_q(const MpeFrameStats *f) { return f->qscale_mean; }
static double g_py(const MpeFrameStats *f) { return f->value[VID("psnr_y_db")]; }
static double g_pcb(const MpeFrameStats *f) { return f->value[VID("psnr_y_db") + 1]; }
static double g_pcr(const MpeFrameStats *f) { return f->value[VID("psnr_y_db") + 2]; }
static double g_ssim(const MpeFrameStats *f) { return f->value[VID("ssim_y")]; }
static double g_mad(const MpeFrameStats *f) { return f->value[VID("mad")]; }
static double g_det(const MpeFrameStats *f) { return f->value[VID("mad_detect")]; }
static double g_app(const MpeFrameStats *f) { return f->value[VID("mad_appear")]; }
static double g_bl(const MpeFrameStats *f) { return f->value[VID("bliinds")]; }

typedef struct Series {
    const char *chart;    /* data-chart */
    const char *row;      /* summary data-row */
    int main;             /* carries the chart's markers */
    unsigned metric;      /* 0 = always */
    double scale;         /* plotted unit per value */
    double tol;           /* printing precision of tooltips and summary */
    double (*get)(const MpeFrameStats *);
} Series;

static const Series series[] = {
    { "bits", "bits", 1, 0, 1e-3, 0.51, g_bits },
    { "qscale", "qscale", 1, 0, 1, 0.0051, g_q },
    { "psnr", "psnr-y", 1, MPE_IQA_PSNR, 1, 5.1e-5, g_py },
    { "psnr", "psnr-cb", 0, MPE_IQA_PSNR, 1, 5.1e-5, g_pcb },
    { "psnr", "psnr-cr", 0, MPE_IQA_PSNR, 1, 5.1e-5, g_pcr },
    { "ssim", "ssim-y", 1, MPE_IQA_SSIM, 1, 5.1e-7, g_ssim },
    { "mad", "mad", 1, MPE_IQA_MAD, 1, 5.1e-5, g_mad },
    { "mad", "mad-detect", 0, MPE_IQA_MAD, 1, 5.1e-5, g_det },
    { "mad", "mad-appear", 0, MPE_IQA_MAD, 1, 5.1e-5, g_app },
    { "bliinds", "bliinds", 1, MPE_IQA_BLIINDS, 1, 5.1e-5, g_bl },
};
#define N_SERIES ((int)(sizeof(series) / sizeof(series[0])))

/* Coordinates are printed with one decimal. */
#define PX_TOL 0.051

/* ---- files ------------------------------------------------------------- */

static int make_dir(char *buf, size_t size)
{
    snprintf(buf, size, "%s/test_report-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    return mkdtemp(buf) ? 0 : -1;
}

/* Names in dir (without . and ..), space-separated, and how many. */
static int list_dir(const char *dir, char *names, size_t size)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    names[0] = '\0';
    if (!d)
        return -1;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        n++;
        if (strlen(names) + strlen(e->d_name) + 2 < size) {
            strcat(names, " ");
            strcat(names, e->d_name);
        }
    }
    closedir(d);
    return n;
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[4096];
    if (!d)
        return;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        if (unlink(p) != 0)
            rmdir(p);
    }
    closedir(d);
    rmdir(dir);
}

/* ---- reading the page back --------------------------------------------- */

/* needle in [p, end), or NULL.  Bounded on purpose: strstr on the rest of a
 * 7 MB page for every marker would make the checks quadratic. */
static const char *find(const char *p, const char *end, const char *needle)
{
    size_t m = strlen(needle);
    for (; p + m <= end; p++)
        if (*p == needle[0] && !memcmp(p, needle, m))
            return p;
    return NULL;
}

static const char *tag_end(const char *tag)
{
    while (*tag && *tag != '>')
        tag++;
    return tag;
}

/* Value of attribute name="..." in the tag starting at tag (up to its '>'). */
static int attr(const char *tag, const char *name, char *out, size_t size)
{
    const char *end = tag_end(tag);
    char key[64];
    snprintf(key, sizeof(key), " %s=\"", name);
    const char *p = find(tag, end, key);
    if (!p)
        return -1;
    p += strlen(key);
    const char *q = find(p, end, "\"");
    if (!q || (size_t)(q - p) >= size)
        return -1;
    memcpy(out, p, (size_t)(q - p));
    out[q - p] = '\0';
    return 0;
}

static int attr_num(const char *tag, const char *name, double *v)
{
    char buf[64], *end;
    if (attr(tag, name, buf, sizeof(buf)))
        return -1;
    *v = strtod(buf, &end);
    return *end || end == buf ? -1 : 0;
}

typedef struct Chart {
    const char *svg, *end;   /* the <svg ...> tag to its </svg> */
    double xmin, xmax, ymin, ymax, left, right, top, bottom, scale;
} Chart;

/* 1 found, 0 absent, -1 malformed */
static int find_chart(const char *page, const char *id, Chart *c)
{
    char key[64];
    snprintf(key, sizeof(key), "data-chart=\"%s\"", id);
    const char *p = strstr(page, key);
    if (!p)
        return 0;
    if (strstr(p + 1, key))
        return -1;   /* twice */
    while (p > page && strncmp(p, "<svg", 4))
        p--;
    c->svg = p;
    c->end = strstr(p, "</svg>");
    if (!c->end || attr_num(p, "data-xmin", &c->xmin) || attr_num(p, "data-xmax", &c->xmax) ||
        attr_num(p, "data-ymin", &c->ymin) || attr_num(p, "data-ymax", &c->ymax) ||
        attr_num(p, "data-left", &c->left) || attr_num(p, "data-right", &c->right) ||
        attr_num(p, "data-top", &c->top) || attr_num(p, "data-bottom", &c->bottom) ||
        attr_num(p, "data-scale", &c->scale))
        return -1;
    return 1;
}

static double chart_x(const Chart *c, double frame)
{
    return c->left + (frame - c->xmin) / (c->xmax - c->xmin) * (c->right - c->left);
}

static double chart_y(const Chart *c, double plotted)
{
    return c->bottom - (plotted - c->ymin) / (c->ymax - c->ymin) * (c->bottom - c->top);
}

/* Next tag "<name" with the attribute marker in [p, end), or NULL. */
static const char *next_tag(const char *p, const char *end, const char *open, const char *must)
{
    while ((p = find(p, end, open))) {
        if (find(p, tag_end(p), must))
            return p;
        p++;
    }
    return NULL;
}

static int cmp_display(const void *a, const void *b)
{
    const MpeFrameStats *x = *(const MpeFrameStats *const *)a, *y = *(const MpeFrameStats *const *)b;
    return (x->display_index > y->display_index) - (x->display_index < y->display_index);
}

static int has(const MpeFrameStats *f, const Series *s)
{
    return !s->metric || (f->metrics & s->metric);
}

static double target_of(const Series *s, const MpeReportInfo *info)
{
    if (!strcmp(s->chart, "bits"))
        return info->bitrate > 0 && info->fps > 0 ? info->bitrate / info->fps : NAN;
    return s->metric && s->metric == info->target_metric ? info->target : NAN;
}

static void check_chart(TestCtx *t, const char *page, const Series *s, const MpeReportInfo *info,
                        const MpeFrameStats *const *sorted, int n)
{
    Chart c;
    int want = 0;
    for (int k = 0; k < n; k++)
        want += has(sorted[k], s);
    int found = find_chart(page, s->chart, &c);
    int shown = want > 0 && (!s->metric || (info->metrics & s->metric));
    CHECK(t, found >= 0, "chart %s malformed or twice", s->chart);
    CHECK(t, found == shown, "chart %s: present %d, expected %d", s->chart, found, shown);
    if (found != 1 || !shown)
        return;
    CHECK(t, c.xmax > c.xmin && c.ymax > c.ymin, "chart %s: axis [%g,%g]x[%g,%g]", s->chart,
          c.xmin, c.xmax, c.ymin, c.ymax);
    CHECK(t, fabs(c.scale - s->scale) < 1e-12, "chart %s: scale %g", s->chart, c.scale);
    if (!(c.xmax > c.xmin && c.ymax > c.ymin))
        return;

    /* every finite value of every series lies on the axis */
    for (int k = 0; k < n; k++) {
        double v = s->get(sorted[k]) * s->scale;
        if (has(sorted[k], s) && isfinite(v))
            CHECK(t, v >= c.ymin - 1e-9 && v <= c.ymax + 1e-9, "chart %s %s: value %g outside [%g, %g]",
                  s->chart, s->row, v, c.ymin, c.ymax);
    }
    if (!s->main)
        return;

    /* markers: one per frame with the metric, in display order, at (x, y) */
    const char *p = c.svg;
    int k = 0, count = 0, bad = 0;
    while ((p = next_tag(p, c.end, "<circle", " data-frame=\""))) {
        double frame, cx, cy;
        count++;
        while (k < n && !has(sorted[k], s))
            k++;
        if (k >= n) {
            p++;
            continue;
        }
        const MpeFrameStats *f = sorted[k++];
        double v = s->get(f);
        if (attr_num(p, "data-frame", &frame) || attr_num(p, "cx", &cx) || attr_num(p, "cy", &cy)) {
            CHECK(t, 0, "chart %s: marker %d lacks data-frame/cx/cy", s->chart, count);
            return;
        }
        if (bad < 5 && frame != f->display_index) {
            bad++;
            CHECK(t, 0, "chart %s: marker %d is frame %g, expected %d", s->chart, count, frame,
                  f->display_index);
        }
        if (bad < 5 && fabs(cx - chart_x(&c, f->display_index)) > PX_TOL) {
            bad++;
            CHECK(t, 0, "chart %s frame %d: cx %g, axis gives %.3f", s->chart, f->display_index, cx,
                  chart_x(&c, f->display_index));
        }
        if (bad < 5 && isfinite(v) && fabs(cy - chart_y(&c, v * s->scale)) > PX_TOL) {
            bad++;
            CHECK(t, 0, "chart %s frame %d: cy %g, axis gives %.3f for %g", s->chart, f->display_index,
                  cy, chart_y(&c, v * s->scale), v);
        }
        /* tooltip: "#N T: VALUE ..." (multi-series charts name each value) */
        const char *ti = find(p, c.end, "<title>");
        char head[32];
        snprintf(head, sizeof(head), "<title>#%d %c:", f->display_index, f->type);
        if (bad < 5 && (!ti || strncmp(ti, head, strlen(head)))) {
            bad++;
            CHECK(t, 0, "chart %s frame %d: tooltip does not start with '%s'", s->chart,
                  f->display_index, head + 7);
        } else if (ti && isfinite(v)) {
            const char *num = ti + strlen(head);
            while (*num == ' ' || (*num >= 'A' && *num <= 'Z') || (*num >= 'a' && *num <= 'z') || *num == '_')
                num++;
            double tv = strtod(num, NULL);
            if (bad < 5 && fabs(tv - v) > s->tol) {
                bad++;
                CHECK(t, 0, "chart %s frame %d: tooltip says %.9g, value %.9g", s->chart,
                      f->display_index, tv, v);
            }
        }
        p++;
    }
    CHECK(t, count == want, "chart %s: %d markers, %d frames carry it", s->chart, count, want);

    /* the target line at the target's y; none without a target */
    double target = target_of(s, info);
    const char *tg = next_tag(c.svg, c.end, "<line", " class=\"tg\"");
    CHECK(t, !!tg == !!isfinite(target), "chart %s: target line %s", s->chart,
          tg ? "drawn without a target" : "missing");
    if (tg && isfinite(target)) {
        double y1, y2;
        CHECK(t, !attr_num(tg, "y1", &y1) && !attr_num(tg, "y2", &y2) &&
                     fabs(y1 - chart_y(&c, target * s->scale)) <= PX_TOL && y1 == y2,
              "chart %s: target %g drawn at y %g, axis gives %.3f", s->chart, target, y1,
              chart_y(&c, target * s->scale));
        CHECK(t, target * s->scale >= c.ymin && target * s->scale <= c.ymax,
              "chart %s: target %g off the axis", s->chart, target);
    }

    /* tick labels sit at their own value's y, from ymin to ymax */
    const char *tk = c.svg;
    int ticks = 0;
    double first = NAN, last = NAN;
    while ((tk = next_tag(tk, c.end, "<text", " class=\"yt\""))) {
        double y, v;
        const char *gt = tag_end(tk);
        CHECK(t, !attr_num(tk, "y", &y), "chart %s: tick without y", s->chart);
        v = strtod(gt + 1, NULL);
        CHECK(t, fabs(y - chart_y(&c, v)) <= PX_TOL, "chart %s: tick '%g' at y %g, axis gives %.3f",
              s->chart, v, y, chart_y(&c, v));
        if (!ticks)
            first = v;
        last = v;
        ticks++;
        tk++;
    }
    double eps = (c.ymax - c.ymin) * 1e-6;
    CHECK(t, ticks >= 2 && fabs(first - c.ymin) <= eps && fabs(last - c.ymax) <= eps,
          "chart %s: %d ticks from %g to %g on axis [%g, %g]", s->chart, ticks, first, last, c.ymin,
          c.ymax);
}

/* Summary row: mean, min, max of the frames that carry the metric. */
static void check_row(TestCtx *t, const char *page, const Series *s, const MpeReportInfo *info,
                      const MpeFrameStats *fr, int n)
{
    char key[64];
    double sum = 0, mn = INFINITY, mx = -INFINITY;
    int cnt = 0;
    for (int k = 0; k < n; k++) {
        double v = s->get(&fr[k]);
        if (!has(&fr[k], s) || !isfinite(v))
            continue;
        sum += v;
        mn = fmin(mn, v);
        mx = fmax(mx, v);
        cnt++;
    }
    snprintf(key, sizeof(key), "<tr data-row=\"%s\">", s->row);
    const char *r = strstr(page, key);
    int shown = cnt > 0 && (!s->metric || (info->metrics & s->metric));
    CHECK(t, !!r == shown, "summary row %s: present %d, expected %d", s->row, !!r, shown);
    if (!r || !shown)
        return;
    const char *end = strstr(r, "</tr>");
    static const char *const cls[3] = { "\"n mean\">", "\"n min\">", "\"n max\">" };
    double want[3] = { sum / cnt, mn, mx };
    for (int i = 0; i < 3; i++) {
        const char *c = end ? find(r, end, cls[i]) : NULL;
        double got = c ? strtod(c + strlen(cls[i]), NULL) : NAN;
        CHECK(t, fabs(got - want[i]) <= s->tol, "summary %s %s: %.9g, expected %.9g", s->row,
              cls[i], got, want[i]);
    }
}

/* ---- one full round: write, read back, check everything ---------------- */

static int contains_ci(const char *hay, const char *needle)
{
    size_t m = strlen(needle);
    for (const char *p = hay; *p; p++) {
        size_t i = 0;
        while (i < m && p[i] && (p[i] | 0x20) == needle[i])
            i++;
        if (i == m)
            return 1;
    }
    return 0;
}

/* python3 is there and runs */
static int have_python(void)
{
    return system("python3 -c 'import xml.etree.ElementTree, html.parser' >/dev/null 2>&1") == 0;
}

/* Parses the page as XML (and as HTML when it is small: html.parser is slow)
 * and counts the data-frame circles of each chart into counts[] (by the
 * order of ids); returns 0, or -1 when python could not parse it. */
static int python_counts(TestCtx *t, const char *dir, const char *file, const char *const *ids,
                         int nids, int *counts)
{
    char script[320], cmd[1024], line[256];
    int parsed = 1;
    snprintf(script, sizeof(script), "%s/count.py", dir);
    FILE *f = fopen(script, "w");
    if (!f)
        return -1;
    fputs("import sys, html.parser, xml.etree.ElementTree as ET\n"
          "src = open(sys.argv[1], encoding='utf-8').read()\n"
          "if len(src) < 1000000:\n"
          "    html.parser.HTMLParser().feed(src)\n"
          "root = ET.fromstring(src)\n"
          "S = '{http://www.w3.org/2000/svg}'\n"
          "for svg in root.iter(S + 'svg'):\n"
          "    n = sum(1 for c in svg.iter(S + 'circle') if 'data-frame' in c.attrib)\n"
          "    print('count', svg.get('data-chart'), n)\n", f);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "python3 '%s' '%s' 2>&1", script, file);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    for (int i = 0; i < nids; i++)
        counts[i] = 0;
    while (fgets(line, sizeof(line), p)) {
        char name[64];
        int c;
        if (sscanf(line, "count %63s %d", name, &c) == 2) {
            for (int i = 0; i < nids; i++)
                if (!strcmp(name, ids[i]))
                    counts[i] = c;
        } else if (strstr(line, "Error")) {
            CHECK(t, 0, "python: %s", line);
            parsed = 0;
        }
    }
    if (pclose(p) != 0)
        parsed = 0;
    unlink(script);
    return parsed ? 0 : -1;
}

/* Writes the report (under the numeric locale loc when not NULL) and checks
 * it all; returns the file size (0 on failure). */
static size_t round_trip_in(TestCtx *t, const MpeReportInfo *info, const MpeFrameStats *fr, int n,
                            int with_python, const char *loc)
{
    char dir[256], path[320], names[512];
    MpeError err = { "" };
    const MpeFrameStats **sorted = NULL;
    size_t len = 0;
    char *page = NULL;

    if (make_dir(dir, sizeof(dir))) {
        CHECK(t, 0, "cannot make a temp dir");
        return 0;
    }
    snprintf(path, sizeof(path), "%s/report.html", dir);
    if (loc)
        setlocale(LC_NUMERIC, loc);
    int ret = mpe_report_write(path, info, fr, n, &err);
    setlocale(LC_NUMERIC, "C");   /* the checks below parse with strtod */
    CHECK(t, ret == 0, "mpe_report_write: %d %s", ret, err.msg);
    int entries = list_dir(dir, names, sizeof(names));
    CHECK(t, entries == 1 && !strcmp(names, " report.html"), "directory holds:%s", names);
    page = (char *)test_read_file(path, &len);
    sorted = malloc(sizeof(*sorted) * (size_t)(n ? n : 1));
    CHECK(t, page && sorted, "cannot read %s back", path);
    if (!page || !sorted)
        goto done;

    CHECK(t, !strncmp(page, "<!DOCTYPE html>", 15), "no doctype");
    CHECK(t, strstr(page, "</html>") != NULL, "no </html>");
    CHECK(t, !contains_ci(page, "nan") && !contains_ci(page, "inf"), "'nan' or 'inf' in the page");
    CHECK(t, !strstr(page, "<script") && !strstr(page, "<link") && !strstr(page, "src=") &&
                 !strstr(page, "url(") && !strstr(page, "https:") && !strstr(page, "@import"),
          "page refers to something outside itself");

    for (int k = 0; k < n; k++)
        sorted[k] = &fr[k];
    qsort(sorted, (size_t)n, sizeof(*sorted), cmp_display);
    for (int s = 0; s < N_SERIES; s++) {
        check_chart(t, page, &series[s], info, sorted, n);
        check_row(t, page, &series[s], info, fr, n);
    }

    if (with_python && have_python()) {
        const char *ids[N_SERIES];
        int want[N_SERIES], got[N_SERIES], nids = 0;
        for (int s = 0; s < N_SERIES; s++) {
            if (!series[s].main)
                continue;
            want[nids] = 0;
            for (int k = 0; k < n; k++)
                want[nids] += has(&fr[k], &series[s]);
            if (series[s].metric && !(info->metrics & series[s].metric))
                want[nids] = 0;
            ids[nids++] = series[s].chart;
        }
        int pr = python_counts(t, dir, path, ids, nids, got);
        CHECK(t, pr == 0, "python3 could not parse %s", path);
        for (int i = 0; i < nids && pr == 0; i++)
            CHECK(t, got[i] == want[i], "python: chart %s has %d markers, expected %d", ids[i], got[i], want[i]);
    }
done:
    free(page);
    free(sorted);
    remove_dir(dir);
    return len;
}

static size_t round_trip(TestCtx *t, const MpeReportInfo *info, const MpeFrameStats *fr, int n,
                         int with_python)
{
    return round_trip_in(t, info, fr, n, with_python, NULL);
}

/* ---- synthetic encodes ------------------------------------------------- */

static double rnd(TestRng *r, double lo, double hi)
{
    return lo + (hi - lo) * (test_rand(r) / 4294967296.0);
}

static void fill_random(MpeFrameStats *fr, int n, unsigned metrics, TestRng *r)
{
    memset(fr, 0, sizeof(*fr) * (size_t)n);
    for (int k = 0; k < n; k++) {
        MpeFrameStats *f = &fr[k];
        f->display_index = k;
        f->type = k % 15 ? 'P' : 'I';
        f->qscale = 1 + (int)(test_rand(r) % 31);
        f->qscale_mean = rnd(r, 1, 31);
        f->bits = (f->type == 'I' ? 300000 : 20000) + test_rand(r) % 100000;
        for (int c = 0; c < 3; c++)
            f->value[VID("psnr_y_db") + c] = rnd(r, 28, 52);
        f->value[VID("ssim_y")] = rnd(r, 0.8, 1.0);
        f->value[VID("mad_detect")] = rnd(r, 0, 40);
        f->value[VID("mad_appear")] = rnd(r, 10, 80);
        f->value[VID("mad")] = rnd(r, 0, 60);
        f->value[VID("bliinds")] = rnd(r, 5, 60);
        f->metrics = metrics;
    }
}

static MpeReportInfo base_info(unsigned metrics)
{
    MpeReportInfo info = { "out.m2v", "in.y4m", "out.m2v", "mpegenc -i in.y4m -o out.m2v --q 5",
                           "MPEG-2", "cpu", 352, 288, 25.0, metrics, 0, 0, 0 };
    return info;
}

#define ALL (MPE_IQA_PSNR | MPE_IQA_SSIM | MPE_IQA_MAD | MPE_IQA_BLIINDS)

/* ---- cases -------------------------------------------------------------- */

static void t_ten_frames(TestCtx *t)
{
    MpeFrameStats fr[10];
    TestRng r = { 0x1234567 };
    fill_random(fr, 10, ALL, &r);
    /* frame numbers are not array positions: gaps, and a late start */
    for (int k = 0; k < 10; k++)
        fr[k].display_index = 100 + 3 * k;
    MpeReportInfo info = base_info(ALL);
    info.target_metric = MPE_IQA_PSNR;
    info.target = 38.5;
    info.bitrate = 4e6;
    round_trip(t, &info, fr, 10, 1);
    info.target_metric = MPE_IQA_MAD;
    info.target = 12.25;
    info.bitrate = 0;
    round_trip(t, &info, fr, 10, 0);
    info.target_metric = MPE_IQA_BLIINDS;
    info.target = 99;   /* beyond every value: the axis must stretch to it */
    round_trip(t, &info, fr, 10, 0);
}

static void t_single_frame(TestCtx *t)
{
    MpeFrameStats fr[1];
    TestRng r = { 42 };
    fill_random(fr, 1, ALL, &r);
    MpeReportInfo info = base_info(ALL);
    round_trip(t, &info, fr, 1, 1);
    /* a lone frame that is not frame 0, with a target equal to its value */
    fr[0].display_index = 7;
    info.target_metric = MPE_IQA_PSNR;
    info.target = fr[0].value[VID("psnr_y_db")];
    round_trip(t, &info, fr, 1, 0);
}

static void t_constant_1000(TestCtx *t)
{
    static MpeFrameStats fr[1000];
    TestRng r = { 7 };
    fill_random(fr, 1000, ALL, &r);
    for (int k = 0; k < 1000; k++) {
        fr[k].type = 'P';
        fr[k].bits = 50000;
        fr[k].qscale_mean = 8;
        fr[k].value[VID("psnr_y_db")] = fr[k].value[VID("psnr_y_db") + 1] = fr[k].value[VID("psnr_y_db") + 2] = 100;   /* iqa_psnr_from_mse's cap */
        fr[k].value[VID("ssim_y")] = 1;
        fr[k].value[VID("mad")] = fr[k].value[VID("mad_detect")] = fr[k].value[VID("mad_appear")] = 0;   /* identical pictures */
        fr[k].value[VID("bliinds")] = -3.5;
    }
    MpeReportInfo info = base_info(ALL);
    info.target_metric = MPE_IQA_MAD;
    info.target = 0;
    info.bitrate = 50000 * 25.0;   /* exactly the constant bits per picture */
    round_trip(t, &info, fr, 1000, 1);
}

static void t_varying_1000(TestCtx *t)
{
    static MpeFrameStats fr[1000];
    TestRng r = { 99 };
    fill_random(fr, 1000, MPE_IQA_PSNR | MPE_IQA_SSIM, &r);
    MpeReportInfo info = base_info(MPE_IQA_PSNR | MPE_IQA_SSIM);
    info.fps = 29.97;
    info.bitrate = 1.5e6;
    round_trip(t, &info, fr, 1000, 1);
}

/* Metrics not measured: no chart, no summary row; frames without a
 * measure of a measured metric are left out of that chart only. */
static void t_metrics_absent(TestCtx *t)
{
    MpeFrameStats fr[40];
    TestRng r = { 5 };
    fill_random(fr, 40, MPE_IQA_PSNR, &r);
    MpeReportInfo info = base_info(MPE_IQA_PSNR);
    round_trip(t, &info, fr, 40, 0);
    info.metrics = 0;   /* even PSNR off: bits and quantiser only */
    round_trip(t, &info, fr, 40, 0);
    info.metrics = MPE_IQA_PSNR | MPE_IQA_BLIINDS;
    for (int k = 0; k < 40; k++)
        if (k % 3 == 0)
            fr[k].metrics |= MPE_IQA_BLIINDS;
    round_trip(t, &info, fr, 40, 1);
}

/* Frames handed over out of display order are plotted in display order. */
static void t_shuffled(TestCtx *t)
{
    MpeFrameStats fr[50];
    TestRng r = { 11 };
    fill_random(fr, 50, ALL, &r);
    for (int k = 49; k > 0; k--) {
        int j = (int)(test_rand(&r) % (unsigned)(k + 1));
        MpeFrameStats tmp = fr[k];
        fr[k] = fr[j];
        fr[j] = tmp;
    }
    MpeReportInfo info = base_info(ALL);
    round_trip(t, &info, fr, 50, 0);
}

/* Non-finite values (the API promises NaN-free input, but an infinite PSNR
 * is one helper away): still one marker each, and no "nan"/"inf" text. */
static void t_non_finite(TestCtx *t)
{
    MpeFrameStats fr[12];
    TestRng r = { 13 };
    fill_random(fr, 12, ALL, &r);
    fr[3].value[VID("psnr_y_db")] = INFINITY;
    fr[4].value[VID("bliinds")] = NAN;
    fr[5].value[VID("mad_appear")] = -INFINITY;
    MpeReportInfo info = base_info(ALL);
    round_trip(t, &info, fr, 12, 0);
}

static void t_zero_frames(TestCtx *t)
{
    MpeReportInfo info = base_info(ALL);
    round_trip(t, &info, NULL, 0, 0);
}

static void t_large(TestCtx *t)
{
    /* the checker scans the page per attribute: far slower under ASan, so
     * the sanitized pass (MPE_TEST_SMALL) checks a tenth of the frames */
    int n = getenv("MPE_TEST_SMALL") ? 1000 : 10000;
    MpeFrameStats *fr = malloc(sizeof(*fr) * (size_t)n);
    TestRng r = { 2024 };
    CHECK(t, fr != NULL, "out of memory");
    if (!fr)
        return;
    fill_random(fr, n, ALL, &r);
    MpeReportInfo info = base_info(ALL);
    info.target_metric = MPE_IQA_BLIINDS;
    info.target = 30;
    info.bitrate = 2e6;
    const double t0 = mpe_time_ms();
    size_t len = round_trip(t, &info, fr, n, 1);
    printf("     %d frames, every metric: %.2f MB, written, read back and checked in %.2f s\n",
           n, len / 1e6, (mpe_time_ms() - t0) * 1e-3);
    CHECK(t, len > 0 && len < 8000000, "10000-frame report is %zu bytes", len);
    free(fr);
}

/* Names with markup, quotes, control bytes and broken UTF-8 come out as
 * text, and the page still parses. */
static void t_escaping(TestCtx *t)
{
    char dir[256], path[320];
    MpeFrameStats fr[3];
    TestRng r = { 3 };
    MpeError err = { "" };
    size_t len = 0;
    fill_random(fr, 3, ALL, &r);
    MpeReportInfo info = base_info(ALL);
    info.title = "a<b>&c\"d'e.m2v";
    info.input = "in\x01put\xff.y4m";
    info.output = "caf\xc3\xa9 & <script>x</script>";
    info.command_line = NULL;
    info.backend = NULL;
    if (make_dir(dir, sizeof(dir))) {
        CHECK(t, 0, "temp dir");
        return;
    }
    snprintf(path, sizeof(path), "%s/esc.html", dir);
    CHECK(t, mpe_report_write(path, &info, fr, 3, &err) == 0, "%s", err.msg);
    char *page = (char *)test_read_file(path, &len);
    CHECK(t, page != NULL, "cannot read back");
    if (page) {
        CHECK(t, strstr(page, "<h1>a&lt;b&gt;&amp;c&quot;d&#39;e.m2v</h1>") != NULL, "title not escaped");
        CHECK(t, strstr(page, "in\xef\xbf\xbdput\xef\xbf\xbd.y4m") != NULL, "control byte / bad UTF-8 not replaced");
        CHECK(t, strstr(page, "caf\xc3\xa9 &amp; &lt;script&gt;x&lt;/script&gt;") != NULL, "output name");
        CHECK(t, !strstr(page, "<b>") && !strstr(page, "<script") && !strchr(page, '\x01'),
              "raw markup or control byte in the page");
        if (have_python()) {
            char cmd[1024];
            snprintf(cmd, sizeof(cmd),
                     "python3 -c \"import sys, xml.etree.ElementTree as E; "
                     "r = E.parse(sys.argv[1]).getroot(); "
                     "h = r.find('.//{http://www.w3.org/1999/xhtml}h1'); "
                     "sys.exit(h is None or h.text != sys.argv[2])\" '%s' 'a<b>&c\"d'\\''e.m2v' >/dev/null 2>&1",
                     path);
            CHECK(t, system(cmd) == 0, "python's XML parser does not read the title back");
        }
    }
    free(page);
    remove_dir(dir);
}

static void t_bad_path(TestCtx *t)
{
    char dir[256], path[320], names[512];
    MpeFrameStats fr[4];
    TestRng r = { 17 };
    MpeError err = { "" };
    fill_random(fr, 4, ALL, &r);
    MpeReportInfo info = base_info(ALL);
    if (make_dir(dir, sizeof(dir))) {
        CHECK(t, 0, "temp dir");
        return;
    }
    /* the directory does not exist */
    snprintf(path, sizeof(path), "%s/missing/r.html", dir);
    int ret = mpe_report_write(path, &info, fr, 4, &err);
    CHECK(t, ret < 0 && strstr(err.msg, path) && strstr(err.msg, "No such file"), "%d '%s'", ret, err.msg);
    /* the name is a directory: the temporary is written, the rename fails */
    snprintf(path, sizeof(path), "%s/sub", dir);
    CHECK(t, mkdir(path, 0755) == 0, "mkdir %s", path);
    err.msg[0] = '\0';
    ret = mpe_report_write(path, &info, fr, 4, &err);
    CHECK(t, ret < 0 && !strncmp(err.msg, path, strlen(path)), "%d '%s'", ret, err.msg);
    int entries = list_dir(dir, names, sizeof(names));
    CHECK(t, entries == 1 && !strcmp(names, " sub"), "left behind:%s", names);
    /* bad arguments */
    CHECK(t, mpe_report_write(path, NULL, fr, 4, &err) == -EINVAL, "NULL info");
    CHECK(t, mpe_report_write(path, &info, NULL, 4, &err) == -EINVAL, "NULL frames");
    CHECK(t, mpe_report_write(path, &info, fr, -1, &err) == -EINVAL, "n = -1");
    CHECK(t, mpe_report_write(NULL, &info, fr, 4, &err) == -EINVAL, "NULL path");
    remove_dir(dir);
}

/* The caller's locale does not leak into the numbers. */
static void t_locale(TestCtx *t)
{
    static const char *const names[] = { "de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8",
                                         "de_DE", "fr_FR", "ru_RU.UTF-8" };
    const char *got = NULL;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !got; i++)
        if (setlocale(LC_NUMERIC, names[i]) && localeconv()->decimal_point[0] == ',')
            got = names[i];
    if (!got) {
        setlocale(LC_NUMERIC, "C");
        test_skip(t, "no decimal-comma locale installed (e.g. locales: de_DE.UTF-8)");
        return;
    }
    setlocale(LC_NUMERIC, "C");
    MpeFrameStats fr[10];
    TestRng r = { 23 };
    fill_random(fr, 10, ALL, &r);
    MpeReportInfo info = base_info(ALL);
    info.target_metric = MPE_IQA_PSNR;
    info.target = 40.5;
    info.bitrate = 2.5e6;
    round_trip_in(t, &info, fr, 10, 1, got);
}

int main(void)
{
    TestCtx t;
    test_init(&t, "test_report");
    test_run(&t, "ten_frames", t_ten_frames);
    test_run(&t, "single_frame", t_single_frame);
    test_run(&t, "zero_frames", t_zero_frames);
    test_run(&t, "constant_1000", t_constant_1000);
    test_run(&t, "varying_1000", t_varying_1000);
    test_run(&t, "metrics_absent", t_metrics_absent);
    test_run(&t, "shuffled", t_shuffled);
    test_run(&t, "non_finite", t_non_finite);
    test_run(&t, "escaping", t_escaping);
    test_run(&t, "bad_path", t_bad_path);
    test_run(&t, "locale", t_locale);
    test_run(&t, "large_10000", t_large);
    return test_finish(&t);
}
