/* test_qlog.c — the per-frame quality log and the run summary.
 *
 * The log files are read back by Python's csv and json modules (an
 * independent parser), against the column list and the values this test
 * writes down itself: every double as a C99 hex float, so "round-trips
 * exactly" is checked bit for bit.  The summary is checked on records whose
 * means, extremes and target misses are worked out by hand. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/qlog.h"
#include "tests/test.h"
#include "iqa/metric.h"

/* a metric registry value id by its log name */
#define VID(name) iqa_value_find(name)

/* The documented layout, written out here rather than taken from qlog.c. */
static const char *const want_columns[] = {
    "frame",       "type",        "qscale",     "qscale_mean",  "bits",
    "psnr_y_db",   "psnr_cb_db",  "psnr_cr_db", "ssim_y",       "mad",
    "mad_detect",  "mad_appear",  "bliinds",    "mv_mean_abs_pel", "reach_fwd_pel",
    "reach_bwd_pel", "mb_intra",  "mb_inter",    "mb_skipped",  "trials",     "guard_mean",   "vbv_fullness_bits",
    "read_ms",     "decode_ms",   "fe_ms",      "fe_gpu_ms",    "fe_wait_ms",
    "download_ms", "code_ms",     "quality_ms", "quality_wait_ms", "write_ms",
};
#define NCOLS (sizeof(want_columns) / sizeof(want_columns[0]))

/* Reads the log back: argv: format, log file, expectation file.  The
 * expectation file has the column names on its first line, then per record
 * one token per column: i:<int>, f:<hex float>, s:<string>, n (no value). */
static const char py_check[] =
    "import csv, json, sys\n"
    "fmt, logf, expf = sys.argv[1:4]\n"
    "lines = open(expf).read().split('\\n')\n"
    "names = lines[0].split()\n"
    "exp = [l.split() for l in lines[1:] if l.strip()]\n"
    "bad = []\n"
    "def cmp(r, name, tok, got):\n"
    "    k, _, v = tok.partition(':')\n"
    "    if k == 'n':\n"
    "        ok = got is None\n"
    "    elif k == 'i':\n"
    "        ok = got is not None and int(got) == int(v) and float(got).is_integer()\n"
    "    elif k == 'f':\n"
    "        ok = got is not None and float(got) == float.fromhex(v)\n"
    "    else:\n"
    "        ok = got == v\n"
    "    if not ok: bad.append('record %d %s: got %r, want %s' % (r, name, got, tok))\n"
    "if fmt == 'csv':\n"
    "    rows = list(csv.reader(open(logf, newline='')))\n"
    "    if rows[0] != names: bad.append('header %r' % rows[0])\n"
    "    recs = rows[1:]\n"
    "    if len(recs) != len(exp): bad.append('%d records, want %d' % (len(recs), len(exp)))\n"
    "    for r, (row, e) in enumerate(zip(recs, exp)):\n"
    "        if len(row) != len(names): bad.append('record %d: %d fields' % (r, len(row)))\n"
    "        for name, tok, got in zip(names, e, row):\n"
    "            if tok[0] == 'i' and got != '' and not got.lstrip('-').isdigit():\n"
    "                bad.append('record %d %s: %r is not an integer' % (r, name, got))\n"
    "            cmp(r, name, tok, None if got == '' else got)\n"
    "else:\n"
    "    text = open(logf).read()\n"
    "    if not text.endswith('\\n'): bad.append('no final newline')\n"
    "    objs = [json.loads(l, parse_constant=lambda c: bad.append('constant ' + c))\n"
    "            for l in text.split('\\n') if l]\n"
    "    h = objs[0]\n"
    "    if h.get('mpegenc_log') != 1: bad.append('header %r' % h)\n"
    "    if h.get('fields') != names: bad.append('fields %r' % h.get('fields'))\n"
    "    if sorted(h.get('units', {})) != sorted(names): bad.append('units %r' % h.get('units'))\n"
    "    recs = objs[1:]\n"
    "    if len(recs) != len(exp): bad.append('%d records, want %d' % (len(recs), len(exp)))\n"
    "    for r, (o, e) in enumerate(zip(recs, exp)):\n"
    "        if list(o) != names: bad.append('record %d keys %r' % (r, list(o)))\n"
    "        for name, tok in zip(names, e):\n"
    "            got = o.get(name)\n"
    "            if tok[0] == 'i' and not isinstance(got, int):\n"
    "                bad.append('record %d %s: %r is not a JSON integer' % (r, name, got))\n"
    "            cmp(r, name, tok, got)\n"
    "print('\\n'.join(bad[:20]) if bad else 'OK')\n"
    "sys.exit(1 if bad else 0)\n";

/* ---- helpers ------------------------------------------------------------ */

static int have_python(void)
{
    return system("python3 -c 'import csv, json' >/dev/null 2>&1") == 0;
}

static int make_tmpdir(char *dir, size_t size)
{
    snprintf(dir, size, "/tmp/test_qlog.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static void remove_tmpdir(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

/* Four records with the corners that matter: every metric, none but PSNR,
 * a NaN and an infinity where a number should be, no VBV, values that
 * need all 17 digits. */
static void make_records(MpeFrameStats fs[4])
{
    memset(fs, 0, 4 * sizeof(fs[0]));
    for (int i = 0; i < 4; i++) {
        fs[i].display_index = i;
        fs[i].type = i ? 'P' : 'I';
        fs[i].qscale = 4 + i;
        fs[i].qscale_mean = 4.25 + i / 3.0;
        fs[i].bits = 1000003ULL * (uint64_t)(i + 1) + (i == 3 ? 0x100000000ULL : 0);
        fs[i].value[VID("psnr_y_db")] = 38.0 + 0.1 * i;
        fs[i].value[VID("psnr_y_db") + 1] = 41.0 + 1.0 / 7.0;
        fs[i].value[VID("psnr_y_db") + 2] = 100.0;
        fs[i].value[VID("ssim_y")] = 0.98765432109876543;
        fs[i].value[VID("mad")] = 12.5 / (i + 1);
        fs[i].value[VID("mad_detect")] = 3.0e-5;
        fs[i].value[VID("mad_appear")] = 1.0e-300;
        fs[i].value[VID("bliinds")] = 27.0 + i;
        fs[i].mv_mean_abs = i ? 2.5 * i : 0.0;
        fs[i].reach_fwd = i ? 16 + 4 * i : 0;
        fs[i].reach_bwd = i == 2 ? 127 : 0;
        fs[i].mb_intra = i ? 3 : 256;
        fs[i].mb_inter = i ? 200 : 0;
        fs[i].mb_skipped = i ? 53 : 0;
        fs[i].trials = 1 + (i == 2);
        fs[i].guard_mean = i == 2 ? 3 : 0;
        fs[i].vbv_fullness = i == 1 ? -1.0 : 1835008.0 - 12345.678 * i;
        fs[i].time.read_ms = 0.001 * i;
        fs[i].time.decode_ms = 11.25;
        fs[i].time.fe_ms = 1.0 / 3.0;
        fs[i].time.fe_gpu_ms = 0.0;
        fs[i].time.fe_wait_ms = 0.125;
        fs[i].time.download_ms = 2e-9;
        fs[i].time.code_ms = 17.5 + i;
        fs[i].time.quality_ms = 123.456;
        fs[i].time.quality_wait_ms = 0.75 + i;
        fs[i].time.write_ms = 0.05;
    }
    fs[0].metrics = MPE_IQA_PSNR | MPE_IQA_SSIM | MPE_IQA_MAD | MPE_IQA_BLIINDS;
    fs[1].metrics = MPE_IQA_PSNR;
    fs[2].metrics = MPE_IQA_PSNR | MPE_IQA_MAD;
    fs[3].metrics = MPE_IQA_PSNR | MPE_IQA_BLIINDS | MPE_IQA_SSIM;
    fs[2].value[VID("psnr_y_db") + 2] = NAN;        /* measured but not a number: no value */
    fs[3].value[VID("bliinds")] = INFINITY;   /* likewise */
    fs[3].qscale_mean = -0.0;
}

static void put_f(FILE *f, double v, int present)
{
    if (present && isfinite(v))
        fprintf(f, " f:%a", v);
    else
        fprintf(f, " n");
}

/* What the reader must find, in the test's own words. */
static int write_expectation(const char *path, const MpeFrameStats *fs, int n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    for (size_t c = 0; c < NCOLS; c++)
        fprintf(f, "%s%s", c ? " " : "", want_columns[c]);
    fprintf(f, "\n");
    for (int i = 0; i < n; i++) {
        const MpeFrameStats *s = &fs[i];
        int psnr = !!(s->metrics & MPE_IQA_PSNR), ssim = !!(s->metrics & MPE_IQA_SSIM);
        int mad = !!(s->metrics & MPE_IQA_MAD), bl = !!(s->metrics & MPE_IQA_BLIINDS);
        fprintf(f, "i:%d s:%c i:%d", s->display_index, s->type, s->qscale);
        put_f(f, s->qscale_mean, 1);
        fprintf(f, " i:%llu", (unsigned long long)s->bits);
        put_f(f, s->value[VID("psnr_y_db")], psnr);
        put_f(f, s->value[VID("psnr_y_db") + 1], psnr);
        put_f(f, s->value[VID("psnr_y_db") + 2], psnr);
        put_f(f, s->value[VID("ssim_y")], ssim);
        put_f(f, s->value[VID("mad")], mad);
        put_f(f, s->value[VID("mad_detect")], mad);
        put_f(f, s->value[VID("mad_appear")], mad);
        put_f(f, s->value[VID("bliinds")], bl);
        put_f(f, s->mv_mean_abs, 1);
        fprintf(f, " i:%d i:%d", s->reach_fwd, s->reach_bwd);
        fprintf(f, " i:%d i:%d i:%d i:%d i:%d", s->mb_intra, s->mb_inter, s->mb_skipped, s->trials,
                s->guard_mean);
        put_f(f, s->vbv_fullness, s->vbv_fullness >= 0);
        put_f(f, s->time.read_ms, 1);
        put_f(f, s->time.decode_ms, 1);
        put_f(f, s->time.fe_ms, 1);
        put_f(f, s->time.fe_gpu_ms, 1);
        put_f(f, s->time.fe_wait_ms, 1);
        put_f(f, s->time.download_ms, 1);
        put_f(f, s->time.code_ms, 1);
        put_f(f, s->time.quality_ms, 1);
        put_f(f, s->time.quality_wait_ms, 1);
        put_f(f, s->time.write_ms, 1);
        fprintf(f, "\n");
    }
    return fclose(f) == 0 ? 0 : -1;
}

/* Counts complete lines (ending in '\n') in a file. */
static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    int c, n = 0;
    if (!f)
        return -1;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

static void roundtrip(TestCtx *t, const char *ext, const char *fmt)
{
    char dir[64], logp[128], expp[128], pyp[128], cmd[600], out[4096];
    MpeFrameStats fs[4];
    MpeQlog *q = NULL;
    MpeError err = { { 0 } };
    size_t got;
    FILE *p;

    if (!have_python()) {
        test_skip(t, "python3 not installed");
        return;
    }
    if (make_tmpdir(dir, sizeof(dir))) {
        CHECK(t, 0, "mkdtemp: %s", strerror(errno));
        return;
    }
    snprintf(logp, sizeof(logp), "%s/run%s", dir, ext);
    snprintf(expp, sizeof(expp), "%s/expect.txt", dir);
    snprintf(pyp, sizeof(pyp), "%s/check.py", dir);
    make_records(fs);

    int ret = mpe_qlog_open(&q, logp, &err);
    CHECK(t, ret == 0, "open %s: %d %s", logp, ret, err.msg);
    for (int i = 0; i < 4 && q; i++) {
        ret = mpe_qlog_write(q, &fs[i], &err);
        CHECK(t, ret == 0, "write %d: %d %s", i, ret, err.msg);
    }
    ret = mpe_qlog_close(q, &err);
    CHECK(t, ret == 0, "close: %d %s", ret, err.msg);

    p = fopen(pyp, "w");
    CHECK(t, p && fputs(py_check, p) >= 0, "cannot write %s", pyp);
    if (p)
        fclose(p);
    CHECK(t, write_expectation(expp, fs, 4) == 0, "cannot write %s", expp);
    snprintf(cmd, sizeof(cmd), "python3 '%s' %s '%s' '%s' 2>&1", pyp, fmt, logp, expp);
    p = popen(cmd, "r");
    if (!p) {
        CHECK(t, 0, "popen python3");
    } else {
        got = fread(out, 1, sizeof(out) - 1, p);
        out[got] = '\0';
        int rc = pclose(p);
        CHECK(t, rc == 0 && !strncmp(out, "OK", 2), "python3 read back %s:\n%s", logp, out);
    }
    remove_tmpdir(dir);
}

/* ---- log cases ---------------------------------------------------------- */

static void t_csv_roundtrip(TestCtx *t) { roundtrip(t, ".csv", "csv"); }
static void t_jsonl_roundtrip(TestCtx *t) { roundtrip(t, ".jsonl", "json"); }

/* Extensions in any case select the format; the file's first line tells. */
static void t_extension_case(TestCtx *t)
{
    static const struct { const char *name; char first; } cases[] = {
        { "a.CSV", 'f' }, { "b.Csv", 'f' }, { "c.JSONL", '{' }, { "d.JsonL", '{' },
        { "e.x.csv", 'f' },
    };
    char dir[64], path[128];
    MpeError err = { { 0 } };
    if (make_tmpdir(dir, sizeof(dir))) {
        CHECK(t, 0, "mkdtemp: %s", strerror(errno));
        return;
    }
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        MpeQlog *q = NULL;
        snprintf(path, sizeof(path), "%s/%s", dir, cases[k].name);
        int ret = mpe_qlog_open(&q, path, &err);
        CHECK(t, ret == 0 && q, "%s: %d %s", cases[k].name, ret, err.msg);
        mpe_qlog_close(q, &err);
        FILE *f = fopen(path, "r");
        int c = f ? fgetc(f) : EOF;
        if (f)
            fclose(f);
        CHECK(t, c == cases[k].first, "%s starts with '%c', want '%c'", cases[k].name, c,
              cases[k].first);
    }
    remove_tmpdir(dir);
}

static void t_bad_extension(TestCtx *t)
{
    static const char *const bad[] = { "x.txt", "noext", "run.csv.bak", "run.jsn",
                                       "dir.csv/log", ".csvx", "run.json.gz" };
    char dir[64], path[128];
    if (make_tmpdir(dir, sizeof(dir))) {
        CHECK(t, 0, "mkdtemp: %s", strerror(errno));
        return;
    }
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        MpeQlog *q = (MpeQlog *)&q;   /* must be reset */
        MpeError err = { { 0 } };
        snprintf(path, sizeof(path), "%s/%s", dir, bad[k]);
        int ret = mpe_qlog_open(&q, path, &err);
        CHECK(t, ret == -EINVAL && q == NULL, "%s: ret %d", bad[k], ret);
        CHECK(t, strstr(err.msg, path) && strstr(err.msg, ".csv") && strstr(err.msg, ".jsonl") &&
                     strstr(err.msg, ".json)"),
              "%s: message \"%s\" should name the file and the three extensions", bad[k], err.msg);
        CHECK(t, access(path, F_OK) != 0, "%s was created", path);
    }
    remove_tmpdir(dir);
}

static void t_unwritable(TestCtx *t)
{
    char dir[64], path[160];
    MpeQlog *q = NULL;
    MpeError err = { { 0 } };
    if (make_tmpdir(dir, sizeof(dir))) {
        CHECK(t, 0, "mkdtemp: %s", strerror(errno));
        return;
    }
    /* a missing directory fails even for root */
    snprintf(path, sizeof(path), "%s/no/such/dir/run.csv", dir);
    int ret = mpe_qlog_open(&q, path, &err);
    CHECK(t, ret == -ENOENT && !q, "%s: ret %d", path, ret);
    CHECK(t, strstr(err.msg, path) != NULL, "message \"%s\" does not name the file", err.msg);
    /* a directory in the way */
    snprintf(path, sizeof(path), "%s/d.jsonl", dir);
    CHECK(t, mkdir(path, 0700) == 0, "mkdir %s", path);
    ret = mpe_qlog_open(&q, path, &err);
    CHECK(t, ret == -EISDIR && !q, "%s: ret %d", path, ret);
    CHECK(t, strstr(err.msg, path) != NULL, "message \"%s\" does not name the file", err.msg);
    CHECK(t, mpe_qlog_close(NULL, &err) == 0, "close(NULL)");
    remove_tmpdir(dir);
}

/* A full disk: /dev/full fails the header at open; a file-size limit
 * (EFBIG) fails a later record, and close reports it again. */
static void t_disk_full(TestCtx *t)
{
    char dir[64], path[128];
    MpeQlog *q = NULL;
    MpeError err = { { 0 } };
    MpeFrameStats fs[4];
    struct rlimit old, lim;
    int ret, failed_at = -1;

    if (make_tmpdir(dir, sizeof(dir))) {
        CHECK(t, 0, "mkdtemp: %s", strerror(errno));
        return;
    }
    snprintf(path, sizeof(path), "%s/full.csv", dir);
    if (access("/dev/full", W_OK) == 0 && symlink("/dev/full", path) == 0) {
        ret = mpe_qlog_open(&q, path, &err);
        CHECK(t, ret == -ENOSPC && !q, "/dev/full: ret %d (%s)", ret, err.msg);
        CHECK(t, strstr(err.msg, path) != NULL, "message \"%s\" does not name the file", err.msg);
    }

    make_records(fs);
    snprintf(path, sizeof(path), "%s/limited.jsonl", dir);
    if (getrlimit(RLIMIT_FSIZE, &old) != 0) {
        CHECK(t, 0, "getrlimit: %s", strerror(errno));
        goto done;
    }
    signal(SIGXFSZ, SIG_IGN);   /* get EFBIG instead of the signal */
    lim = old;
    lim.rlim_cur = 3000;        /* the header and about one record */
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0) {
        CHECK(t, 0, "setrlimit: %s", strerror(errno));
        goto done;
    }
    ret = mpe_qlog_open(&q, path, &err);
    CHECK(t, ret == 0, "open under the limit: %d %s", ret, err.msg);
    for (int i = 0; q && i < 4 && failed_at < 0; i++)
        if (mpe_qlog_write(q, &fs[i], &err) < 0)
            failed_at = i;
    int closed = mpe_qlog_close(q, &err);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, SIG_DFL);
    CHECK(t, failed_at >= 0, "no write failed past the file-size limit");
    CHECK(t, closed == -EFBIG, "close after a failed write: %d (%s)", closed, err.msg);
    CHECK(t, strstr(err.msg, path) != NULL, "message \"%s\" does not name the file", err.msg);
done:
    remove_tmpdir(dir);
}

/* Each record reaches the file when it is written, not at close. */
static void t_flushed_per_frame(TestCtx *t)
{
    static const char *const exts[] = { ".csv", ".jsonl" };
    char dir[64], path[128];
    MpeFrameStats fs[4];
    MpeError err = { { 0 } };
    make_records(fs);
    if (make_tmpdir(dir, sizeof(dir))) {
        CHECK(t, 0, "mkdtemp: %s", strerror(errno));
        return;
    }
    for (int e = 0; e < 2; e++) {
        MpeQlog *q = NULL;
        snprintf(path, sizeof(path), "%s/live%s", dir, exts[e]);
        if (mpe_qlog_open(&q, path, &err)) {
            CHECK(t, 0, "open: %s", err.msg);
            continue;
        }
        CHECK(t, count_lines(path) == 1, "%s: %d lines after open", path, count_lines(path));
        for (int i = 0; i < 3; i++) {
            mpe_qlog_write(q, &fs[i], &err);
            CHECK(t, count_lines(path) == 2 + i, "%s: %d lines after record %d", path,
                  count_lines(path), i);
        }
        mpe_qlog_close(q, &err);
        CHECK(t, count_lines(path) == 4, "%s: %d lines after close", path, count_lines(path));
    }
    remove_tmpdir(dir);
}

/* ---- summary cases ------------------------------------------------------ */

static MpeFrameStats frame(int idx, uint64_t bits, unsigned metrics, double psnr_y, double ssim,
                           double mad, double bliinds)
{
    MpeFrameStats fs;
    memset(&fs, 0, sizeof(fs));
    fs.display_index = idx;
    fs.type = idx ? 'P' : 'I';
    fs.bits = bits;
    fs.metrics = metrics;
    fs.value[VID("psnr_y_db")] = psnr_y;
    fs.value[VID("psnr_y_db") + 1] = psnr_y + 2;
    fs.value[VID("psnr_y_db") + 2] = psnr_y + 3;
    fs.value[VID("ssim_y")] = ssim;
    fs.value[VID("mad")] = mad;
    fs.value[VID("bliinds")] = bliinds;
    fs.qscale = 2 + idx;
    fs.qscale_mean = idx == 1 ? 0.0 : 2.5 + idx;   /* frame 1: no mean, qscale counts */
    return fs;
}

/* Running means may differ from the exact mean in the last bits. */
static int near(double a, double b)
{
    return fabs(a - b) <= 1e-12 * fmax(1.0, fabs(b));
}

static void t_summary_stats(TestCtx *t)
{
    const unsigned P = MPE_IQA_PSNR, S = MPE_IQA_SSIM, M = MPE_IQA_MAD;
    MpeFrameStats f[4] = {
        frame(0, 6000, P | S | M, 45.0, 0.95, 1.0, 0),
        frame(1, 1000, P, 30.0, 0.10, 99.0, 0),      /* ssim, mad not measured */
        frame(2, 2000, P | M, 35.0, 0.20, 4.0, 0),
        frame(3, 3000, P | S | M, 40.0, 0.90, 7.0, 0),
    };
    MpeSummary s;
    mpe_summary_init(&s, 0, 0);
    CHECK(t, s.frames == 0 && s.missed == 0 && s.worst_miss_frame == -1, "init");
    for (int i = 0; i < 4; i++)
        mpe_summary_add(&s, &f[i]);
    CHECK(t, s.frames == 4 && s.bits == 12000, "frames %d bits %llu", s.frames,
          (unsigned long long)s.bits);
    CHECK(t, s.bits_per_frame.n == 4 && near(s.bits_per_frame.mean, 3000) &&
                 s.bits_per_frame.min == 1000 && s.bits_per_frame.max == 6000,
          "bits/frame n %d mean %g min %g max %g", s.bits_per_frame.n, s.bits_per_frame.mean,
          s.bits_per_frame.min, s.bits_per_frame.max);
    /* qscale: 2.5, 3 (qscale of frame 1), 4.5, 5.5 */
    CHECK(t, s.qscale.n == 4 && near(s.qscale.mean, 3.875) && s.qscale.min == 2.5 &&
                 s.qscale.max == 5.5,
          "qscale n %d mean %g min %g max %g", s.qscale.n, s.qscale.mean, s.qscale.min,
          s.qscale.max);
    CHECK(t, s.value[VID("psnr_y_db")].n == 4 && near(s.value[VID("psnr_y_db")].mean, 37.5) && s.value[VID("psnr_y_db")].min == 30 &&
                 s.value[VID("psnr_y_db")].max == 45,
          "psnr y mean %g min %g max %g", s.value[VID("psnr_y_db")].mean, s.value[VID("psnr_y_db")].min, s.value[VID("psnr_y_db")].max);
    CHECK(t, near(s.value[VID("psnr_y_db") + 1].mean, 39.5) && near(s.value[VID("psnr_y_db") + 2].mean, 40.5) && s.value[VID("psnr_y_db") + 2].max == 48,
          "psnr cb %g cr %g", s.value[VID("psnr_y_db") + 1].mean, s.value[VID("psnr_y_db") + 2].mean);
    CHECK(t, s.value[VID("ssim_y")].n == 2 && near(s.value[VID("ssim_y")].mean, 0.925) && s.value[VID("ssim_y")].min == 0.90 &&
                 s.value[VID("ssim_y")].max == 0.95,
          "ssim n %d mean %.17g", s.value[VID("ssim_y")].n, s.value[VID("ssim_y")].mean);
    CHECK(t, s.value[VID("mad")].n == 3 && near(s.value[VID("mad")].mean, 4.0) && s.value[VID("mad")].min == 1 && s.value[VID("mad")].max == 7,
          "mad n %d mean %g min %g max %g", s.value[VID("mad")].n, s.value[VID("mad")].mean, s.value[VID("mad")].min, s.value[VID("mad")].max);
    CHECK(t, s.value[VID("bliinds")].n == 0, "bliinds n %d", s.value[VID("bliinds")].n);
    CHECK(t, s.metrics == P, "metrics on every frame 0x%x, want 0x%x", s.metrics, P);
    CHECK(t, s.missed == 0 && s.worst_miss == 0 && s.worst_miss_frame == -1, "no target");
}

static void t_summary_target_higher_better(TestCtx *t)
{
    const unsigned P = MPE_IQA_PSNR, S = MPE_IQA_SSIM;
    MpeFrameStats f[] = {
        frame(0, 100, P, 36.0, 0, 0, 0),    /* exactly the target: met */
        frame(7, 100, P, 30.0, 0, 0, 0),    /* 6 dB short: the worst */
        frame(2, 100, P, 35.0, 0, 0, 0),    /* 1 dB short */
        frame(3, 100, P, 40.0, 0, 0, 0),
        frame(4, 100, 0, 10.0, 0, 0, 0),    /* not measured: not counted */
    };
    MpeSummary s;
    mpe_summary_init(&s, P, 36.0);
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        mpe_summary_add(&s, &f[i]);
    CHECK(t, s.missed == 2, "psnr missed %d, want 2", s.missed);
    CHECK(t, near(s.worst_miss, 6.0) && s.worst_miss_frame == 7, "worst %g at %d, want 6 at 7",
          s.worst_miss, s.worst_miss_frame);
    CHECK(t, s.metrics == 0, "metrics 0x%x: one frame measured nothing", s.metrics);

    MpeFrameStats g[] = {
        frame(0, 100, S, 0, 0.97, 0, 0),
        frame(1, 100, S, 0, 0.94, 0, 0),
        frame(2, 100, S, 0, 0.99, 0, 0),
    };
    mpe_summary_init(&s, S, 0.95);
    for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++)
        mpe_summary_add(&s, &g[i]);
    CHECK(t, s.missed == 1 && fabs(s.worst_miss - 0.01) < 1e-12 && s.worst_miss_frame == 1,
          "ssim missed %d worst %g at %d", s.missed, s.worst_miss, s.worst_miss_frame);
}

static void t_summary_target_lower_better(TestCtx *t)
{
    const unsigned M = MPE_IQA_MAD, B = MPE_IQA_BLIINDS;
    MpeFrameStats f[] = {
        frame(0, 100, M, 0, 0, 8.0, 0),
        frame(1, 100, M, 0, 0, 12.0, 0),    /* 2 over */
        frame(2, 100, M, 0, 0, 15.0, 0),    /* 5 over: the worst */
        frame(3, 100, M, 0, 0, 10.0, 0),    /* exactly the target: met */
        frame(4, 100, B, 0, 0, 500.0, 0),   /* MAD not measured: not counted */
    };
    MpeSummary s;
    mpe_summary_init(&s, M, 10.0);
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        mpe_summary_add(&s, &f[i]);
    CHECK(t, s.missed == 2, "mad missed %d, want 2", s.missed);
    CHECK(t, near(s.worst_miss, 5.0) && s.worst_miss_frame == 2, "worst %g at %d, want 5 at 2",
          s.worst_miss, s.worst_miss_frame);

    MpeFrameStats g[] = {
        frame(0, 100, B, 0, 0, 0, 20.0),
        frame(1, 100, B, 0, 0, 0, 31.5),    /* 1.5 over */
        frame(2, 100, B, 0, 0, 0, 25.0),
        frame(3, 100, B, 0, 0, 0, 30.25),   /* 0.25 over */
    };
    mpe_summary_init(&s, B, 30.0);
    for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++)
        mpe_summary_add(&s, &g[i]);
    CHECK(t, s.missed == 2 && near(s.worst_miss, 1.5) && s.worst_miss_frame == 1,
          "bliinds missed %d worst %g at %d", s.missed, s.worst_miss, s.worst_miss_frame);
    CHECK(t, s.value[VID("bliinds")].n == 4 && near(s.value[VID("bliinds")].mean, 26.6875) && s.value[VID("bliinds")].max == 31.5,
          "bliinds mean %g", s.value[VID("bliinds")].mean);
}

static void t_summary_format(TestCtx *t)
{
    const unsigned P = MPE_IQA_PSNR, S = MPE_IQA_SSIM;
    MpeFrameStats f[4] = {
        frame(0, 6000, P | S, 45.0, 0.95, 0, 0),
        frame(1, 1000, P, 30.0, 0, 0, 0),
        frame(2, 2000, P, 35.0, 0, 0, 0),
        frame(3, 3000, P | S, 40.0, 0.90, 0, 0),
    };
    MpeSummary s;
    char buf[2048], small[16];
    mpe_summary_init(&s, P, 36.0);
    for (int i = 0; i < 4; i++)
        mpe_summary_add(&s, &f[i]);
    int n = mpe_summary_format(&s, 25.0, buf, sizeof(buf));
    CHECK(t, n > 0 && (size_t)n == strlen(buf), "returned %d, text %zu chars", n, strlen(buf));
    /* 12000 bits = 1500 bytes; 3000 bits/frame at 25 fps = 75 kbit/s */
    CHECK(t, strstr(buf, "4 frames") && strstr(buf, "1500 bytes") && strstr(buf, "75.0 kbit/s"),
          "header line:\n%s", buf);
    CHECK(t, strstr(buf, "mean 37.50 dB") && strstr(buf, "min 30.00 dB") &&
                 strstr(buf, "max 45.00 dB"),
          "PSNR line:\n%s", buf);
    CHECK(t, strstr(buf, "SSIM Y") && strstr(buf, "mean 0.92500") && strstr(buf, "2 of 4 frames"),
          "SSIM line:\n%s", buf);
    CHECK(t, !strstr(buf, "MAD") && !strstr(buf, "BLIINDS"), "unmeasured metrics shown:\n%s",
          buf);
    CHECK(t, strstr(buf, "missed on 2 of 4 frames") && strstr(buf, "worst by 6.00 dB (frame 1)"),
          "target line:\n%s", buf);
    CHECK(t, !strstr(buf, "nan") && !strstr(buf, "inf"), "non-numbers:\n%s", buf);

    /* snprintf contract: cut to fit, terminated, full length returned */
    int m = mpe_summary_format(&s, 25.0, small, sizeof(small));
    CHECK(t, m == n && strlen(small) == sizeof(small) - 1 &&
                 !strncmp(small, buf, sizeof(small) - 1),
          "small buffer: %d \"%s\"", m, small);
    CHECK(t, mpe_summary_format(&s, 25.0, NULL, 0) == n, "NULL buffer length");

    /* an empty run and no frame rate */
    mpe_summary_init(&s, 0, 0);
    n = mpe_summary_format(&s, 0, buf, sizeof(buf));
    CHECK(t, n > 0 && strstr(buf, "0 frames") && !strstr(buf, "kbit/s") && !strstr(buf, "nan"),
          "empty run:\n%s", buf);
}

int main(void)
{
    TestCtx t;
    test_init(&t, "test_qlog");
    test_run(&t, "csv_roundtrip", t_csv_roundtrip);
    test_run(&t, "jsonl_roundtrip", t_jsonl_roundtrip);
    test_run(&t, "extension_case", t_extension_case);
    test_run(&t, "bad_extension", t_bad_extension);
    test_run(&t, "unwritable", t_unwritable);
    test_run(&t, "disk_full", t_disk_full);
    test_run(&t, "flushed_per_frame", t_flushed_per_frame);
    test_run(&t, "summary_stats", t_summary_stats);
    test_run(&t, "summary_target_higher_better", t_summary_target_higher_better);
    test_run(&t, "summary_target_lower_better", t_summary_target_lower_better);
    test_run(&t, "summary_format", t_summary_format);
    return test_finish(&t);
}
