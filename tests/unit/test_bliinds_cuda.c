/* test_bliinds_cuda.c — bliinds_cuda against bliinds_cpu, its C reference
 * (test_bliinds checks that one against the authors' original), and against
 * the original's numbers directly.
 *
 * Tolerances are the issue's: every feature within 1e-4 relative of C, or
 * 1e-6 absolute for features near zero, and the same score.  The CUDA code
 * does C's arithmetic in C's order, so the differences seen are expected to
 * be far smaller; every comparison prints its worst error.
 *
 * Diagnostics: on any feature mismatch the case compares the stages for
 * that image — the three scale images, the seven per-block maps of each
 * scale (downloaded with bliinds_cuda_maps) and the pooling (C's pooling of
 * the CUDA maps against the CUDA features) — and prints where they first
 * part.  MPE_BLIINDS_CUDA_DEBUG=1 prints that comparison for every image,
 * and every feature side by side.
 *
 * Without a usable GPU (no driver, no device) every case but `registry`
 * SKIPs with the probe's reason; without CUDA in the build all SKIP. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/timer.h"
#include "input/input.h"
#include "iqa/bliinds.h"
#include "iqa/bliinds_cuda_internal.h"
#include "iqa/bliinds_internal.h"
#include "tests/bliinds_testdata.h"
#include "tests/test.h"
#include "iqa/metric.h"

#ifdef MPE_HAVE_CUDA

#define DATA_DIR "tests/data/bliinds"
#define REL_TOL 1e-4
#define ABS_TOL 1e-6
/* maps: C's arithmetic in C's order should agree to the last bits; blocks
 * whose AC coefficients are round-off differ by the SPEC §10 amount */
#define MAP_REL_TOL 1e-9
#define MAP_ABS_TOL 1e-6
/* pooling the same map: only the summation order differs */
#define POOL_TOL 1e-12

/* ---- helpers ------------------------------------------------------------ */

static int debug_on(void)
{
    const char *v = getenv("MPE_BLIINDS_CUDA_DEBUG");
    return v && *v && strcmp(v, "0") != 0;
}

/* 1 if the GPU implementation can run here; else SKIPs the case. */
static int need_gpu(TestCtx *t)
{
    char why[256] = "", msg[300];
    if (bliinds_cuda.probe(why, sizeof(why)) == 0)
        return 1;
    snprintf(msg, sizeof(msg), "bliinds_cuda cannot run here: %s", why);
    test_skip(t, msg);
    return 0;
}

static void random_image(TestRng *rng, uint8_t *img, int w, int h, int kind)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            unsigned r = test_rand(rng);
            uint8_t v;
            if (kind == 0)          /* noise */
                v = (uint8_t)r;
            else if (kind == 1)     /* smooth ramps with a little noise */
                v = (uint8_t)(40 + (x * 3 + y * 2) % 150 + (r % 5));
            else if (kind == 2)     /* flat patches and edges: exact-zero AC */
                v = (uint8_t)(((x / 7 + y / 5) % 3) * 90);
            else                    /* constant: gamma 11 almost everywhere */
                v = 128;
            img[(size_t)y * w + x] = v;
        }
}

static const char *kind_name(int kind)
{
    static const char *const names[4] = { "noise", "ramps", "patches", "flat" };
    return kind >= 0 && kind < 4 ? names[kind] : "image";
}

/* Scores img with impl; the context is kept in *keep (when non-NULL and
 * the score succeeded) or closed. */
static int score_with(const BliindsImpl *impl, const uint8_t *img, int w, int h, ptrdiff_t stride,
                      BliindsScore *out, BliindsContext **keep, MpeError *err)
{
    BliindsContext *ctx = NULL;
    int ret = impl->open(&ctx, w, h, NULL, err);
    if (ret < 0)
        return ret;
    ret = impl->score(ctx, img, stride, out, err);
    if (keep && ret == 0)
        *keep = ctx;
    else
        impl->close(ctx);
    return ret;
}

static int feature_ok(double got, double want)
{
    double e = fabs(got - want);
    return e <= REL_TOL * fabs(want) || e <= ABS_TOL;
}

/* |got - want| relative to |want|, or absolute below the ABS/REL crossover */
static double feature_err(double got, double want)
{
    return fabs(got - want) / MPE_MAX(fabs(want), ABS_TOL / REL_TOL);
}

/* CUDA (got) against want (C or the reference): features and score.
 * Returns the number of mismatches; *worst gets the largest feature_err. */
static int compare_features(TestCtx *t, const char *label, const char *what,
                            const BliindsScore *got, const BliindsScore *want, double *worst)
{
    int bad = 0;
    for (int f = 0; f < BLIINDS_NFEATURES; f++) {
        double g = got->features[f], w = want->features[f];
        *worst = MPE_MAX(*worst, feature_err(g, w));
        if (!feature_ok(g, w) || isnan(g)) {
            CHECK(t, 0, "%s: %s_L%d: cuda %.17g, %s %.17g (abs %.3g, rel %.3g)", label,
                  feature_names[f % 8], f / 8 + 1, g, what, w, fabs(g - w),
                  fabs(g - w) / MPE_MAX(fabs(w), 1e-300));
            bad++;
        }
    }
    if (got->score != want->score) {
        CHECK(t, 0, "%s: score: cuda %g, %s %g", label, got->score, what, want->score);
        bad++;
    }
    if (debug_on()) {
        printf("     # %s: cuda vs %s, score %g vs %g\n", label, what, got->score, want->score);
        for (int f = 0; f < BLIINDS_NFEATURES; f++)
            printf("     #   %-14s L%d  cuda %.17g  %s %.17g  diff %.3g\n", feature_names[f % 8],
                   f / 8 + 1, got->features[f], what, want->features[f],
                   got->features[f] - want->features[f]);
    }
    return bad;
}

/* ---- stage-by-stage comparison ----------------------------------------- */

typedef struct DiffStats {
    double max_abs, max_rel;    /* rel: relative to max(1, |c|) */
    size_t n, identical, beyond;
    int worst_at;               /* index of the largest difference */
    double worst_got, worst_want;
} DiffStats;

static void diff_values(DiffStats *d, const double *got, ptrdiff_t gs, const double *want,
                        ptrdiff_t ws, int rows, int cols, double rel_tol, double abs_tol)
{
    memset(d, 0, sizeof(*d));
    d->worst_at = -1;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            double g = got[r * gs + c], w = want[r * ws + c], e = fabs(g - w);
            double rel = e / MPE_MAX(1.0, fabs(w));
            d->n++;
            d->identical += memcmp(&g, &w, sizeof(g)) == 0;
            if (!(rel <= rel_tol || e <= abs_tol))
                d->beyond++;
            if (e > d->max_abs || (isnan(e) && d->worst_at < 0)) {
                d->max_abs = e;
                d->worst_at = r * cols + c;
                d->worst_got = g;
                d->worst_want = w;
            }
            d->max_rel = MPE_MAX(d->max_rel, rel);
        }
}

/* Compares every stage of the last score() on a CUDA and a C context of the
 * same image; gpu is the CUDA result.  Prints a table when verbose or when
 * something is beyond tolerance; with check, a difference beyond tolerance
 * fails the case.  Returns the number of stages beyond tolerance. */
static int diagnose(TestCtx *t, const char *label, BliindsContext *gctx, BliindsContext *cctx,
                    const BliindsScore *gpu, int verbose, int check)
{
    static const int pooled[4] = { BLIINDS_MAP_ZETA, BLIINDS_MAP_GAMMA, BLIINDS_MAP_SUBBAND,
                                   BLIINDS_MAP_ORIENTVAR };
    MpeError err = { "" };
    int problems = 0;
    double *scratch = NULL;

    for (int s = 0; s < 3; s++) {
        BliindsMaps g, c;
        DiffStats d;
        if (bliinds_cuda_maps(gctx, s, &g, &err) < 0 || bliinds_cpu_maps(cctx, s, &c) < 0) {
            CHECK(t, 0, "%s: scale %d maps: %s", label, s + 1, err.msg);
            problems++;
            break;
        }
        if (g.width != c.width || g.height != c.height || g.rows != c.rows || g.cols != c.cols) {
            CHECK(t, 0, "%s L%d: sizes: cuda %dx%d (%dx%d blocks), cpu %dx%d (%dx%d blocks)",
                  label, s + 1, g.width, g.height, g.cols, g.rows, c.width, c.height, c.cols,
                  c.rows);
            problems++;
            break;
        }
        diff_values(&d, g.image, g.image_stride, c.image, c.image_stride, g.height, g.width,
                    1e-12, 0.0);
        if (verbose || d.beyond)
            printf("     # %s L%d image %dx%d: max abs diff %.3g, %zu/%zu identical, %zu beyond "
                   "tolerance%s\n",
                   label, s + 1, g.width, g.height, d.max_abs, d.identical, d.n, d.beyond,
                   d.beyond ? " <-- scale image differs" : "");
        if (d.beyond) {
            printf("     #   worst at (%d,%d): cuda %.17g cpu %.17g\n", d.worst_at / g.width,
                   d.worst_at % g.width, d.worst_got, d.worst_want);
            problems++;
            if (check)
                CHECK(t, 0, "%s L%d: scale image differs (%zu pixels)", label, s + 1, d.beyond);
        }
        for (int m = 0; m < BLIINDS_NMAPS; m++) {
            diff_values(&d, g.map[m], g.cols, c.map[m], c.cols, g.rows, g.cols, MAP_REL_TOL,
                        MAP_ABS_TOL);
            /* gamma may move one table step (0.001, or 9.999 <-> 11 at the
             * table's end) on a block whose rho sits on a bin edge; a few
             * such blocks are tolerated, and reported */
            size_t allowed = m == BLIINDS_MAP_GAMMA ? MPE_MAX((size_t)2, d.n / 1000) : 0;
            int bad = d.beyond > allowed;
            if (verbose || d.beyond)
                printf("     # %s L%d %-9s (%dx%d): max abs %.3g, max rel %.3g, %zu/%zu "
                       "identical, %zu beyond tolerance%s\n",
                       label, s + 1, bliinds_map_names[m], g.cols, g.rows, d.max_abs, d.max_rel,
                       d.identical, d.n, d.beyond, bad ? " <-- map differs" : "");
            if (d.beyond && d.worst_at >= 0)
                printf("     #   worst at block (%d,%d): cuda %.17g cpu %.17g\n",
                       d.worst_at / g.cols, d.worst_at % g.cols, d.worst_got, d.worst_want);
            if (bad) {
                problems++;
                if (check)
                    CHECK(t, 0, "%s L%d: map %s differs at %zu blocks", label, s + 1,
                          bliinds_map_names[m], d.beyond);
            }
        }
        /* pooling: C's pooling of the CUDA maps against the CUDA features */
        size_t n = (size_t)g.rows * g.cols, k = bliinds_pool_count(n);
        double *ns = realloc(scratch, n * sizeof(double));
        if (!ns) {
            CHECK(t, 0, "out of memory");
            problems++;
            break;
        }
        scratch = ns;
        for (int p = 0; p < 4; p++) {
            const double *x = g.map[pooled[p]];
            double sum = 0.0;
            for (size_t i = 0; i < n; i++)
                sum += x[i];
            double want[2] = { sum / (double)n,
                               bliinds_pool_top_sort(scratch, x, n, k, p == 1) };
            for (int h = 0; h < 2; h++) {
                int f = 8 * s + 2 * p + h;
                double got = gpu->features[f], e = fabs(got - want[h]);
                int ok = e <= POOL_TOL * MPE_MAX(1.0, fabs(want[h]));
                if (verbose || !ok)
                    printf("     # %s L%d pool %-14s: cuda %.17g, C pooling of cuda maps %.17g "
                           "(n %zu, k %zu)%s\n",
                           label, s + 1, feature_names[2 * p + h], got, want[h], n, k,
                           ok ? "" : " <-- pooling differs");
                if (!ok) {
                    problems++;
                    if (check)
                        CHECK(t, 0, "%s L%d: pooled %s: cuda %.17g, C pooling %.17g", label,
                              s + 1, feature_names[2 * p + h], got, want[h]);
                }
            }
        }
    }
    free(scratch);
    return problems;
}

/* Scores img with both implementations and compares; on a mismatch (or
 * with MPE_BLIINDS_CUDA_DEBUG) the stages too.  *gpu_out gets the CUDA
 * result when non-NULL.  Returns mismatches (-1: could not score). */
static int cuda_vs_cpu(TestCtx *t, const char *label, const uint8_t *img, int w, int h,
                       double *worst, BliindsScore *gpu_out)
{
    BliindsContext *gctx = NULL, *cctx = NULL;
    BliindsScore g, c;
    MpeError err = { "" };
    int bad;
    if (score_with(&bliinds_cuda, img, w, h, w, &g, &gctx, &err) < 0 ||
        score_with(&bliinds_cpu, img, w, h, w, &c, &cctx, &err) < 0) {
        CHECK(t, 0, "%s: %s", label, err.msg);
        bliinds_cuda.close(gctx);
        return -1;
    }
    bad = compare_features(t, label, "cpu", &g, &c, worst);
    if (bad || debug_on()) {
        if (bad)
            printf("     # %s: features differ; stage by stage:\n", label);
        diagnose(t, label, gctx, cctx, &g, 1, 0);
    }
    if (gpu_out)
        *gpu_out = g;
    bliinds_cuda.close(gctx);
    bliinds_cpu.close(cctx);
    return bad;
}

/* ---- cases ---------------------------------------------------------------- */

/* Runs everywhere: the table is registered first; without a GPU the probe
 * says why, auto falls back to C and open fails cleanly. */
static void t_registry(TestCtx *t)
{
    char why[256] = "";
    BliindsContext *ctx = (BliindsContext *)&ctx;
    MpeError err = { "" };
    const IqaMetric *row = iqa_metric_find("bliinds_cuda");
    CHECK(t, row && row->impl == &bliinds_cuda, "'bliinds_cuda' not found");
    CHECK(t, !strcmp(bliinds_cuda.name, "bliinds_cuda"), "name '%s'", bliinds_cuda.name);
    int ret = bliinds_cuda.probe(why, sizeof(why));
    CHECK(t, why[0] != '\0', "probe gave no reason (ret %d)", ret);
    CHECK(t, bliinds_cuda.probe(NULL, 0) == ret, "probe without a buffer differs");
    printf("     # probe: %d (%s)\n", ret, why);
    if (ret == 0) {
        row = iqa_metric_pick("bliinds", "auto", NULL, &err);
        CHECK(t, row && row->impl == &bliinds_cuda, "auto did not pick the GPU");
        bliinds_cuda.close(NULL);
        return;
    }
    CHECK(t, ret == -ENODEV, "probe returned %d, expected -ENODEV", ret);
    row = iqa_metric_pick("bliinds", "auto", NULL, &err);
    CHECK(t, row && row->impl == &bliinds_cpu, "auto did not fall back to bliinds_cpu");
    ret = bliinds_cuda.open(&ctx, 64, 48, NULL, &err);
    CHECK(t, ret < 0 && ctx == NULL && err.msg[0], "open without a GPU: ret %d, msg '%s'", ret,
          err.msg);
    bliinds_cuda.close(NULL);
}

static void t_bad_arguments(TestCtx *t)
{
    static const int sizes[][2] = { { 3, 4 }, { 4, 3 }, { 0, 0 }, { -5, 10 }, { 10, 1 } };
    BliindsContext *ctx = NULL;
    BliindsOptions opt = { .threads = -1 };
    BliindsScore s;
    MpeError err = { "" };
    uint8_t img[16 * 4] = { 0 };
    if (!need_gpu(t))
        return;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        ctx = (BliindsContext *)&ctx;   /* open must clear it */
        err.msg[0] = '\0';
        int ret = bliinds_cuda.open(&ctx, sizes[i][0], sizes[i][1], NULL, &err);
        CHECK(t, ret == -EINVAL && ctx == NULL && strstr(err.msg, "size"),
              "%dx%d: ret %d, msg '%s'", sizes[i][0], sizes[i][1], ret, err.msg);
    }
    CHECK(t, bliinds_cuda.open(&ctx, 16, 16, &opt, &err) == -EINVAL, "negative thread count");
    img[5] = 200;
    if (bliinds_cuda.open(&ctx, 16, 4, NULL, &err) < 0) {
        CHECK(t, 0, "16x4: %s", err.msg);
        return;
    }
    CHECK(t, bliinds_cuda.score(ctx, img, 16, &s, &err) == 0, "16x4: %s", err.msg);
    CHECK(t, bliinds_cuda.score(ctx, NULL, 16, &s, &err) == -EINVAL, "NULL image accepted");
    CHECK(t, bliinds_cuda.score(ctx, img, 15, &s, &err) == -EINVAL, "stride < width accepted");
    CHECK(t, bliinds_cuda.score(NULL, img, 16, &s, &err) == -EINVAL, "NULL context accepted");
    BliindsMaps m;
    CHECK(t, bliinds_cuda_maps(ctx, 3, &m, &err) == -EINVAL, "maps of scale 4");
    bliinds_cuda.close(ctx);
}

/* Images of reference.csv found in img_dir: CUDA against C and against the
 * original's numbers. */
static void check_reference(TestCtx *t, const char *csv, const char *img_dir, int need)
{
    RefRow rows[32];
    int n = read_reference(csv, rows, 32), done = 0;
    double worst_cpu = 0, worst_ref = 0;
    CHECK(t, n > 0, "%s: unreadable", csv);
    for (int i = 0; i < n; i++) {
        char path[4096];
        MpeError err = { "" };
        BliindsScore g, ref;
        int w = 0, h = 0;
        if (snprintf(path, sizeof(path), "%s/%s", img_dir, rows[i].file) >= (int)sizeof(path) ||
            !file_exists(path))
            continue;
        uint8_t *img = load_png(path, &w, &h, &err);
        if (!img) {
            CHECK(t, 0, "%s: %s", path, err.msg);
            continue;
        }
        CHECK(t, w == rows[i].cols && h == rows[i].rows, "%s: %dx%d", path, w, h);
        if (cuda_vs_cpu(t, rows[i].file, img, w, h, &worst_cpu, &g) >= 0) {
            memcpy(ref.features, rows[i].f, sizeof(ref.features));
            ref.score = rows[i].score;
            compare_features(t, rows[i].file, "reference", &g, &ref, &worst_ref);
            done++;
        }
        free(img);
    }
    CHECK(t, done >= need, "%d images scored, expected at least %d", done, need);
    printf("     # %s: %d images; worst feature error (relative, absolute below 0.01): "
           "vs cpu %.2g, vs reference %.2g\n",
           img_dir, done, worst_cpu, worst_ref);
}

static void t_data_images(TestCtx *t)
{
    if (need_gpu(t))
        check_reference(t, DATA_DIR "/reference.csv", DATA_DIR, 3);
}

static void t_reference_shared(TestCtx *t)
{
    char dir[1024], csv[1200], img[1200];
    if (!need_gpu(t))
        return;
    if (!shared_bliinds_dir(dir, sizeof(dir))) {
        test_skip(t, "../shared/reference/bliinds absent (set MPE_SHARED_DIR)");
        return;
    }
    snprintf(csv, sizeof(csv), "%s/reference.csv", dir);
    snprintf(img, sizeof(img), "%s/images", dir);
    check_reference(t, csv, img, 9);
}

/* Odd, tiny and non-square sizes (several pool chunks at the largest),
 * four kinds of content. */
static void t_random_sizes(TestCtx *t)
{
    static const int sizes[][2] = { { 4, 4 },    { 5, 7 },     { 6, 95 },    { 37, 29 },
                                    { 101, 50 }, { 257, 130 }, { 512, 384 }, { 1031, 777 } };
    TestRng rng = { 0xb11d5 };
    double worst = 0;
    int images = 0;
    if (!need_gpu(t))
        return;
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
        for (int kind = 0; kind < 4; kind++) {
            int w = sizes[si][0], h = sizes[si][1];
            char label[64];
            uint8_t *img = malloc((size_t)w * h);
            if (!img) {
                CHECK(t, 0, "out of memory");
                return;
            }
            random_image(&rng, img, w, h, kind);
            snprintf(label, sizeof(label), "%dx%d %s", w, h, kind_name(kind));
            images += cuda_vs_cpu(t, label, img, w, h, &worst, NULL) >= 0;
            free(img);
        }
    printf("     # %d random images; worst feature error vs cpu %.2g\n", images, worst);
}

/* Every stage against C on a few images, always (the test of the
 * intermediate results, not only a diagnostic). */
static void t_maps_vs_cpu(TestCtx *t)
{
    static const struct {
        int w, h, kind;
    } cases[] = { { 257, 130, 0 }, { 257, 130, 2 }, { 37, 29, 1 }, { 100, 96, 3 } };
    MpeError err = { "" };
    TestRng rng = { 31337 };
    if (!need_gpu(t))
        return;
    for (size_t i = 0; i <= sizeof(cases) / sizeof(cases[0]); i++) {
        BliindsContext *gctx = NULL, *cctx = NULL;
        BliindsScore g, c;
        char label[96];
        int w = 0, h = 0;
        uint8_t *img;
        if (i < sizeof(cases) / sizeof(cases[0])) {
            w = cases[i].w;
            h = cases[i].h;
            if (!(img = malloc((size_t)w * h))) {
                CHECK(t, 0, "out of memory");
                return;
            }
            random_image(&rng, img, w, h, cases[i].kind);
            snprintf(label, sizeof(label), "%dx%d %s", w, h, kind_name(cases[i].kind));
        } else if (!(img = load_png(DATA_DIR "/ref_256x384.png", &w, &h, &err))) {
            CHECK(t, 0, "%s", err.msg);
            return;
        } else {
            snprintf(label, sizeof(label), "ref_256x384.png");
        }
        if (score_with(&bliinds_cuda, img, w, h, w, &g, &gctx, &err) < 0 ||
            score_with(&bliinds_cpu, img, w, h, w, &c, &cctx, &err) < 0) {
            CHECK(t, 0, "%s: %s", label, err.msg);
        } else {
            int problems = diagnose(t, label, gctx, cctx, &g, debug_on(), 1);
            printf("     # %s: stages %s\n", label, problems ? "DIFFER (above)" : "agree");
        }
        bliinds_cuda.close(gctx);
        bliinds_cpu.close(cctx);
        free(img);
    }
}

typedef struct ThreadJob {
    const uint8_t *img[2];
    int w, h, rounds;
    BliindsScore got[2];
    int ret, same;
    MpeError err;
} ThreadJob;

/* One context per thread: its two images scored alternately, every round
 * giving the same bits. */
static void *thread_main(void *opaque)
{
    ThreadJob *j = opaque;
    BliindsContext *ctx = NULL;
    j->same = 1;
    if ((j->ret = bliinds_cuda.open(&ctx, j->w, j->h, NULL, &j->err)) < 0)
        return NULL;
    for (int r = 0; r < j->rounds && j->ret == 0; r++)
        for (int k = 0; k < 2 && j->ret == 0; k++) {
            BliindsScore s;
            if ((j->ret = bliinds_cuda.score(ctx, j->img[k], j->w, &s, &j->err)) < 0)
                break;
            if (r == 0)
                j->got[k] = s;
            else if (memcmp(&s, &j->got[k], sizeof(s)) != 0)
                j->same = 0;
        }
    bliinds_cuda.close(ctx);
    return NULL;
}

/* A context reused gives the same bits; strides and bottom-up rows are
 * honoured; contexts on several threads at once give the same bits as one
 * alone. */
static int same_bliinds(const BliindsScore *a, const BliindsScore *b)
{
    return a->score == b->score && !memcmp(a->features, b->features, sizeof(a->features));
}

/* score() in halves: the same bits as score(), one score in flight, the
 * picture reusable once submit returns, and the same bits on every run. */
static void t_submit_collect(TestCtx *t)
{
    enum { W = 203, H = 157 };
    TestRng rng = { 0x7375626dULL };
    uint8_t *a = malloc((size_t)W * H), *b = malloc((size_t)W * H);
    BliindsContext *ctx = NULL;
    MpePool *pool = NULL;
    BliindsScore sa, sb, s;
    MpeError err = { "" };
    int ret;
    CHECK(t, bliinds_cuda.score_submit && bliinds_cuda.score_collect &&
                 !bliinds_cpu.score_submit && !bliinds_cpu.score_collect,
          "bliinds_cuda has both halves, bliinds_cpu neither");
    if (!need_gpu(t))
        goto done;
    if (!a || !b) {
        CHECK(t, 0, "out of memory");
        goto done;
    }
    random_image(&rng, a, W, H, 1);
    random_image(&rng, b, W, H, 0);
    if ((ret = bliinds_cuda.open(&ctx, W, H, NULL, &err)) < 0) {
        CHECK(t, 0, "open: %s", err.msg);
        goto done;
    }
    ret = bliinds_cuda.score(ctx, a, W, &sa, &err);
    ret |= bliinds_cuda.score(ctx, b, W, &sb, &err);
    CHECK(t, ret == 0 && sa.score != sb.score, "scores %g %g (%s)", sa.score, sb.score, err.msg);
    ret = bliinds_cuda.score_submit(ctx, a, W, &err);
    CHECK(t, ret == 0, "submit: %s", err.msg);
    CHECK(t, bliinds_cuda.score_submit(ctx, b, W, &err) == -EBUSY, "second submit accepted");
    CHECK(t, bliinds_cuda.score(ctx, b, W, &s, &err) == -EBUSY, "score() while one is pending");
    memset(a, 0, (size_t)W * H);   /* the submitted picture may be reused at once */
    ret = bliinds_cuda.score_collect(ctx, &s, &err);
    CHECK(t, ret == 0 && same_bliinds(&s, &sa), "collect: %g vs %g (%s)", s.score, sa.score,
          err.msg);
    CHECK(t, bliinds_cuda.score_collect(ctx, &s, &err) == -EINVAL, "collect without submit");
    for (int k = 0; k < 3; k++) {
        ret = bliinds_cuda.score_submit(ctx, b, W, &err);
        ret |= bliinds_cuda.score_collect(ctx, &s, &err);
        CHECK(t, ret == 0 && same_bliinds(&s, &sb), "run %d: %g vs %g", k, s.score, sb.score);
    }
    /* the upload staged by a pool's threads: the same picture arrives */
    if (mpe_pool_open(&pool, 4, &err) == 0) {
        BliindsOptions opt = { .pool = pool };
        BliindsContext *pc = NULL;
        ret = bliinds_cuda.open(&pc, W, H, &opt, &err);
        if (ret == 0)
            ret = bliinds_cuda.score(pc, b, W, &s, &err);
        CHECK(t, ret == 0 && same_bliinds(&s, &sb), "with a pool: %g vs %g (%s)", s.score,
              sb.score, ret ? err.msg : "");
        bliinds_cuda.close(pc);
    } else {
        CHECK(t, 0, "pool: %s", err.msg);
    }
done:
    mpe_pool_close(pool);
    bliinds_cuda.close(ctx);
    free(a);
    free(b);
}

static void t_reuse_strides_threads(TestCtx *t)
{
    enum { W = 203, H = 157, STRIDE = 224, NTHREADS = 3 };
    TestRng rng = { 99 };
    uint8_t *a = malloc((size_t)W * H), *b = malloc((size_t)W * H),
            *wide = malloc((size_t)STRIDE * H), *flip = malloc((size_t)W * H);
    BliindsContext *ctx = NULL;
    BliindsScore sa, sb, sa2, s;
    MpeError err = { "" };
    ThreadJob jobs[NTHREADS];
    pthread_t tid[NTHREADS];
    if (!need_gpu(t))
        goto done;
    if (!a || !b || !wide || !flip) {
        CHECK(t, 0, "out of memory");
        goto done;
    }
    random_image(&rng, a, W, H, 1);
    random_image(&rng, b, W, H, 0);
    if (bliinds_cuda.open(&ctx, W, H, NULL, &err) < 0 ||
        bliinds_cuda.score(ctx, a, W, &sa, &err) < 0 ||
        bliinds_cuda.score(ctx, b, W, &sb, &err) < 0 ||
        bliinds_cuda.score(ctx, a, W, &sa2, &err) < 0) {
        CHECK(t, 0, "%s", err.msg);
        goto done;
    }
    CHECK(t, !memcmp(&sa, &sa2, sizeof(sa)), "reused context: score %g then %g", sa.score,
          sa2.score);
    CHECK(t, memcmp(&sa, &sb, sizeof(sa)) != 0, "different images, same result");
    for (int y = 0; y < H; y++) {
        memcpy(wide + (size_t)y * STRIDE, a + (size_t)y * W, W);
        memset(wide + (size_t)y * STRIDE + W, 0xee, STRIDE - W);
        memcpy(flip + (size_t)(H - 1 - y) * W, a + (size_t)y * W, W);
    }
    CHECK(t, bliinds_cuda.score(ctx, wide, STRIDE, &s, &err) == 0, "%s", err.msg);
    CHECK(t, !memcmp(&s, &sa, sizeof(s)), "stride %d: score %g vs %g", STRIDE, s.score, sa.score);
    /* page-locked: uploaded by DMA straight from the picture, no staging copy */
    CHECK(t, iqa_host_register(wide, (size_t)STRIDE * H) == 1, "page-locking the picture failed");
    CHECK(t, bliinds_cuda.score(ctx, wide, STRIDE, &s, &err) == 0, "%s", err.msg);
    CHECK(t, !memcmp(&s, &sa, sizeof(s)), "page-locked, stride %d: score %g vs %g", STRIDE,
          s.score, sa.score);
    iqa_host_unregister(wide);
    CHECK(t, bliinds_cuda.score(ctx, flip + (size_t)(H - 1) * W, -W, &s, &err) == 0, "%s",
          err.msg);
    CHECK(t, !memcmp(&s, &sa, sizeof(s)), "negative stride: score %g vs %g", s.score, sa.score);

    for (int i = 0; i < NTHREADS; i++) {
        jobs[i] = (ThreadJob){ .img = { i % 2 ? b : a, i % 2 ? a : b }, .w = W, .h = H,
                               .rounds = 3 };
        if (pthread_create(&tid[i], NULL, thread_main, &jobs[i]) != 0) {
            CHECK(t, 0, "pthread_create failed");
            for (int k = 0; k < i; k++)
                pthread_join(tid[k], NULL);
            goto done;
        }
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(tid[i], NULL);
    for (int i = 0; i < NTHREADS; i++) {
        const BliindsScore *want_a = i % 2 ? &sb : &sa, *want_b = i % 2 ? &sa : &sb;
        CHECK(t, jobs[i].ret == 0, "thread %d: %s", i, jobs[i].err.msg);
        if (jobs[i].ret)
            continue;
        CHECK(t, jobs[i].same, "thread %d: rounds differ", i);
        CHECK(t, !memcmp(&jobs[i].got[0], want_a, sizeof(*want_a)) &&
                     !memcmp(&jobs[i].got[1], want_b, sizeof(*want_b)),
              "thread %d: scores %g %g, alone %g %g", i, jobs[i].got[0].score,
              jobs[i].got[1].score, want_a->score, want_b->score);
    }
done:
    bliinds_cuda.close(ctx);
    free(a);
    free(b);
    free(wide);
    free(flip);
}

/* BliindsOptions.dump_dir: the 24 CSV files, holding what bliinds_cuda_maps
 * downloads. */
static void t_dump(TestCtx *t)
{
    char dir[] = "/tmp/test_bliinds_cuda_XXXXXX";
    enum { W = 50, H = 41 };
    uint8_t img[W * H];
    TestRng rng = { 1 };
    BliindsContext *ctx = NULL;
    BliindsScore s;
    MpeError err = { "" };
    int files = 0;
    if (!need_gpu(t))
        return;
    if (!mkdtemp(dir)) {
        CHECK(t, 0, "mkdtemp: %s", strerror(errno));
        return;
    }
    random_image(&rng, img, W, H, 1);
    BliindsOptions opt = { .dump_dir = dir };
    if (bliinds_cuda.open(&ctx, W, H, &opt, &err) < 0 ||
        bliinds_cuda.score(ctx, img, W, &s, &err) < 0) {
        CHECK(t, 0, "%s", err.msg);
    } else {
        for (int sc = 0; sc < 3; sc++) {
            BliindsMaps m;
            if (bliinds_cuda_maps(ctx, sc, &m, &err) < 0) {
                CHECK(t, 0, "%s", err.msg);
                break;
            }
            for (int k = -1; k < BLIINDS_NMAPS; k++) {
                char path[256];
                snprintf(path, sizeof(path), "%s/L%d_%s.csv", dir, sc + 1,
                         k < 0 ? "image" : bliinds_map_names[k]);
                char *text = read_text(path), *p = text;
                int rows = k < 0 ? m.height : m.rows, cols = k < 0 ? m.width : m.cols, ok = !!text;
                for (int i = 0; ok && i < rows * cols; i++) {
                    double want = k < 0 ? m.image[(i / cols) * m.image_stride + i % cols]
                                        : m.map[k][i];
                    char *end;
                    ok = strtod(p, &end) == want && end != p;
                    p = end + (*end ? 1 : 0);
                }
                CHECK(t, ok, "%s does not hold the map", path);
                files += ok;
                free(text);
                unlink(path);
            }
        }
    }
    bliinds_cuda.close(ctx);
    rmdir(dir);
    CHECK(t, files == 24, "%d files", files);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Informational: median per call and the stage split of the last call, on
 * the benchmark's synthetic content (noise over gradients, flat patches).
 * build/bench/bliinds is the measurement of record. */
static void t_timing(TestCtx *t)
{
    static const int sizes[2] = { 512, 2048 };
    enum { RUNS = 21 };
    if (!need_gpu(t))
        return;
    for (int si = 0; si < 2; si++) {
        const int n = sizes[si];
        uint8_t *img = malloc((size_t)n * n);
        BliindsContext *ctx = NULL;
        BliindsScore s;
        MpeError err = { "" };
        double ms[RUNS];
        unsigned long long x = 88172645463325252ULL;
        if (!img) {
            CHECK(t, 0, "out of memory");
            return;
        }
        for (int y = 0; y < n; y++)
            for (int i = 0; i < n; i++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                img[(size_t)y * n + i] = (uint8_t)(((i / 64 + y / 64) % 5 == 0)
                                                       ? 90
                                                       : (i + 2 * y) / 24 % 200 + (int)(x % 40));
            }
        if (bliinds_cuda.open(&ctx, n, n, NULL, &err) < 0) {
            CHECK(t, 0, "%s", err.msg);
            free(img);
            return;
        }
        for (int r = -3; r < RUNS; r++) {
            double t0 = mpe_time_ms();
            if (bliinds_cuda.score(ctx, img, n, &s, &err) < 0) {
                CHECK(t, 0, "%s", err.msg);
                break;
            }
            if (r >= 0)
                ms[r] = mpe_time_ms() - t0;
        }
        BliindsStageTimes st;
        bliinds_cuda_stage_times(ctx, &st);
        qsort(ms, RUNS, sizeof(ms[0]), cmp_double);
        printf("     # bliinds_cuda %dx%d: median %.3f ms/call (min %.3f, target %s), score %g\n",
               n, n, ms[RUNS / 2], ms[0], n == 512 ? "0.5" : "3", s.score);
        printf("     #   last call (ms): upload %.3f | blocks L1 %.3f L2 %.3f L3 %.3f | "
               "downsample L2 %.3f L3 %.3f | pool %.3f | predict %.3f\n",
               st.load_ms, st.blocks_ms[0], st.blocks_ms[1], st.blocks_ms[2],
               st.downsample_ms[0], st.downsample_ms[1], st.pool_ms, st.predict_ms);
        bliinds_cuda.close(ctx);
        free(img);
    }
}

int main(void)
{
    TestCtx t;
    test_init(&t, "test_bliinds_cuda");
    test_run(&t, "registry", t_registry);
    test_run(&t, "bad_arguments", t_bad_arguments);
    test_run(&t, "data_images", t_data_images);
    test_run(&t, "random_sizes", t_random_sizes);
    test_run(&t, "maps_vs_cpu", t_maps_vs_cpu);
    test_run(&t, "reuse_strides_threads", t_reuse_strides_threads);
    test_run(&t, "submit_collect", t_submit_collect);
    test_run(&t, "dump", t_dump);
    test_run(&t, "reference_shared", t_reference_shared);
    test_run(&t, "timing", t_timing);
    return test_finish(&t);
}

#else /* !MPE_HAVE_CUDA */

static void t_not_built(TestCtx *t)
{
    test_skip(t, "built without CUDA");
}

int main(void)
{
    TestCtx t;
    test_init(&t, "test_bliinds_cuda");
    test_run(&t, "all", t_not_built);
    return test_finish(&t);
}

#endif
