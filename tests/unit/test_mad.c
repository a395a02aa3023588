/* test_mad.c — MAD (iqa/mad.h) against the authors' original code and
 * against a second implementation written here from the SPEC.
 *
 * External truth: ../shared/reference/mad/ (scores and full-resolution
 * maps the original MATLAB code produced under Octave; found through
 * $MPE_SHARED_DIR, default ../shared, SKIPPED when absent) and the compact
 * copy of part of it in tests/data/mad/ (always run).  Tolerances are the
 * issue's: scores 1e-6 relative (exactly 0 where the original gives 0),
 * maps 1e-9 absolute.
 *
 * The reference set has even sizes only.  Odd sizes change every frequency
 * grid (half-bin offsets), so the second implementation (slow_* below)
 * covers them: it follows the original's shapes, not the library's — a
 * plain O(n^2) DFT instead of FFTW, the complex CSF product with
 * fftshift/ifftshift and the real part taken afterwards (the library uses a
 * symmetrised filter and a c2r transform), filters built in centred layout
 * and shifted, tile-expanded full-resolution maps, the modified std read
 * from the tile-expanded 8x8 map at +5 as the mex does, per-block two-pass
 * loops in column-major order and a per-pixel local MSE with a mirrored
 * index.  The same per-block loops are the checkasm-style reference for the
 * library's streaming block statistics on random input. */
#include <complex.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "input/input.h"
#include "iqa/mad.h"
#include "iqa/mad_internal.h"
#include "tests/mad_testdata.h"
#include "tests/test.h"
#include "iqa/metric.h"

#define DATA_DIR "tests/data/mad"
#define SCORE_REL_TOL 1e-6
#define MAP_ABS_TOL 1e-9
#define SLOW_REL_TOL 1e-9

#define PI 3.14159265358979323846

/* ---- files ---------------------------------------------------------------- */

/* ---- reference.csv -------------------------------------------------------- */

/* One pair against the original's scores: each within SCORE_REL_TOL. */
static void check_pair(TestCtx *t, void *opaque, const RefRow *r, const MadScore *s,
                       const uint8_t *ref, const uint8_t *dst, int w, int h)
{
    double *maxerr = opaque;
    double e[3] = { rel_err(s->d_detect, r->want.d_detect), rel_err(s->d_appear, r->want.d_appear),
                    rel_err(s->mad, r->want.mad) };
    (void)ref, (void)dst, (void)w, (void)h;
    CHECK(t, e[0] <= SCORE_REL_TOL && e[1] <= SCORE_REL_TOL && e[2] <= SCORE_REL_TOL,
          "%s: d_detect %.17g (want %.17g), d_appear %.17g (want %.17g), "
          "mad %.17g (want %.17g)",
          r->dst, s->d_detect, r->want.d_detect, s->d_appear, r->want.d_appear, s->mad, r->want.mad);
    for (int k = 0; k < 3; k++)
        if (e[k] > maxerr[k])
            maxerr[k] = e[k];
}

static int check_reference_csv(TestCtx *t, const char *csv, const char *img_dir, double maxerr[3])
{
    return mad_score_reference_csv(t, &mad_cpu, csv, img_dir, check_pair, maxerr);
}

static void report_max(TestCtx *t, const char *what, int pairs, const double e[3])
{
    printf("INFO %s/%s: %d pairs (%s), max relative error d_detect %.2e d_appear %.2e mad %.2e\n",
           t->prog, t->case_name, pairs, what, e[0], e[1], e[2]);
}

static void t_reference_subset(TestCtx *t)
{
    double e[3] = { 0 };
    int n = check_reference_csv(t, DATA_DIR "/reference.csv", DATA_DIR, e);
    CHECK(t, n >= 6, "only %d pairs checked", n);
    report_max(t, DATA_DIR, n, e);
}

static void t_reference_all(TestCtx *t)
{
    char dir[4096], csv[4200], img[4200];
    double e[3] = { 0 };
    if (!shared_mad_dir(dir, sizeof(dir))) {
        test_skip(t, "../shared/reference/mad not found (set MPE_SHARED_DIR)");
        return;
    }
    snprintf(csv, sizeof(csv), "%s/reference.csv", dir);
    snprintf(img, sizeof(img), "%s/images", dir);
    int n = check_reference_csv(t, csv, img, e);
    CHECK(t, n >= 26, "only %d pairs checked", n);
    report_max(t, "shared", n, e);
}

/* The original's full-resolution maps: map.HI = msk.lmse is our
 * mad_detect, map.LO = η our mad_appearance (both before the crop). */
static void check_maps(TestCtx *t, const char *img_dir, const char *map_dir, const char *ref_name,
                       const char *stem)
{
    char path[4200], tmp[4096];
    MpeError err;
    MadContext *ctx = NULL;
    MadScore s;
    int w = 0, h = 0, w2 = 0, h2 = 0;
    uint8_t *ref = NULL, *dst = NULL;

    if (make_tmpdir_named(tmp, sizeof(tmp), "test_mad") < 0) {
        CHECK(t, 0, "mkdtemp: %s", strerror(errno));
        return;
    }
    snprintf(path, sizeof(path), "%s/%s", img_dir, ref_name);
    ref = load_gray(path, 1, &w, &h, &err);
    snprintf(path, sizeof(path), "%s/%s.png", img_dir, stem);
    dst = load_gray(path, 1, &w2, &h2, &err);
    CHECK(t, ref && dst && w == w2 && h == h2, "loading %s: %s", stem, err.msg);
    if (!ref || !dst || w != w2 || h != h2)
        goto done;
    MadOptions opt = { .threads = 0, .dump_dir = tmp };
    int ret = mad_cpu.open(&ctx, w, h, &opt, &err);
    if (ret == 0)
        ret = mad_score_pair(&mad_cpu, ctx, ref, dst, w, &s, &err);
    CHECK(t, ret == 0, "%s: %s", stem, err.msg);
    if (ret < 0)
        goto done;
    static const char *const which[2][2] = { { "mapHI", "mad_detect" },
                                              { "mapLO", "mad_appearance" } };
    for (int m = 0; m < 2; m++) {
        size_t n = (size_t)w * h;
        snprintf(path, sizeof(path), "%s/%s_%s_f64.bin", map_dir, stem, which[m][0]);
        double *want = read_f64(path, n);
        snprintf(path, sizeof(path), "%s/%s_f64.bin", tmp, which[m][1]);
        double *got = read_f64(path, n);
        CHECK(t, want && got, "%s %s: cannot read the maps", stem, which[m][0]);
        if (want && got) {
            double worst = 0.0;
            size_t at = 0;
            for (size_t i = 0; i < n; i++) {
                double d = fabs(got[i] - want[i]);
                if (!(d <= worst)) {
                    worst = d;
                    at = i;
                }
            }
            CHECK(t, worst <= MAP_ABS_TOL, "%s %s: off by %.3g at row %zu col %zu (%.17g vs %.17g)",
                  stem, which[m][0], worst, at / w, at % w, got[at], want[at]);
            printf("INFO %s/%s: %s %s max abs error %.2e\n", t->prog, t->case_name, stem,
                   which[m][0], worst);
        }
        free(want);
        free(got);
    }
done:
    mad_cpu.close(ctx);
    free(ref);
    free(dst);
    remove_tmpdir(tmp);
}

static void t_maps_subset(TestCtx *t)
{
    check_maps(t, DATA_DIR, DATA_DIR, "g256x384_ref.png", "g256x384_jpeg_q30");
}

static void t_maps_all(TestCtx *t)
{
    char dir[4096], img[4200], maps[4200];
    if (!shared_mad_dir(dir, sizeof(dir))) {
        test_skip(t, "../shared/reference/mad not found (set MPE_SHARED_DIR)");
        return;
    }
    snprintf(img, sizeof(img), "%s/images", dir);
    snprintf(maps, sizeof(maps), "%s/maps", dir);
    check_maps(t, img, maps, "g256x384_ref.png", "g256x384_jpeg_q30");
    check_maps(t, img, maps, "g512_ref.png", "g512_jpeg_q30");
}

/* ---- synthetic pictures --------------------------------------------------- */

static void distort(uint8_t *d, const uint8_t *s, int w, int h, int amp, TestRng *rng)
{
    for (size_t i = 0; i < (size_t)w * h; i++) {
        int v = s[i] + (int)(test_rand(rng) % (unsigned)(2 * amp + 1)) - amp;
        d[i] = (uint8_t)MPE_CLAMP(v, 0, 255);
    }
}

/* ---- second implementation: block statistics ------------------------------ */

/* Mean and central sums S2, S3, S4 of the n x n block at (r0, c0), two-pass,
 * column-major as the mex loops. */
static void naive_moments(double out[4], const double *img, int stride, int r0, int c0, int n)
{
    double sum = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0;
    for (int c = c0; c < c0 + n; c++)
        for (int r = r0; r < r0 + n; r++)
            sum += img[(size_t)r * stride + c];
    double m = sum / (n * n);
    for (int c = c0; c < c0 + n; c++)
        for (int r = r0; r < r0 + n; r++) {
            double d = img[(size_t)r * stride + c] - m;
            s2 += d * d;
            s3 += d * d * d;
            s4 += d * d * d * d;
        }
    out[0] = m;
    out[1] = s2;
    out[2] = s3;
    out[3] = s4;
}

/* Tile-expanded maps (h x w, 0 outside every tile) of the SPEC's block
 * statistics, by the original's loops: origins while r0 < M-15. */
typedef struct NaiveMaps {
    double *mean16, *sd16, *sd8, *std, *skew, *kurt;
} NaiveMaps;

static void naive_tile_maps(NaiveMaps *m, const double *img, int w, int h)
{
    for (int r0 = 0; r0 < h - 15; r0 += 4)
        for (int c0 = 0; c0 < w - 15; c0 += 4) {
            double a[4], b[4];
            naive_moments(a, img, w, r0, c0, 16);
            naive_moments(b, img, w, r0, c0, 8);
            double sigma = sqrt(a[1] / 256.0);
            double v[6] = { a[0], sqrt(a[1] / 255.0), sqrt(b[1] / 63.0), sqrt(a[1] / 255.0),
                            sigma == 0.0 ? 0.0 : (a[2] / 256.0) / pow(sigma, 3),
                            sigma == 0.0 ? 0.0 : (a[3] / 256.0) / pow(sigma, 4) };
            double *dst[6] = { m->mean16, m->sd16, m->sd8, m->std, m->skew, m->kurt };
            for (int k = 0; k < 6; k++)
                if (dst[k])
                    for (int r = r0; r < r0 + 4; r++)
                        for (int c = c0; c < c0 + 4; c++)
                            dst[k][(size_t)r * w + c] = v[k];
        }
}

/* The mex's modified std: from each origin, step 5 into the tile-expanded
 * 8x8 map, where r0+5 < M-15 (and c0+5 < N-15) allow it. */
static void naive_modified_std(double *out, const double *sd8map, int w, int h)
{
    for (int r0 = 0; r0 < h - 15; r0 += 4)
        for (int c0 = 0; c0 < w - 15; c0 += 4) {
            double v = sd8map[(size_t)r0 * w + c0];
            int down = r0 + 5 < h - 15, right = c0 + 5 < w - 15;
            if (down)
                v = fmin(v, sd8map[(size_t)(r0 + 5) * w + c0]);
            if (right)
                v = fmin(v, sd8map[(size_t)r0 * w + c0 + 5]);
            if (down && right)
                v = fmin(v, sd8map[(size_t)(r0 + 5) * w + c0 + 5]);
            for (int r = r0; r < r0 + 4; r++)
                for (int c = c0; c < c0 + 4; c++)
                    out[(size_t)r * w + c] = v;
        }
}

static double *zalloc(size_t n)
{
    return calloc(n, sizeof(double));
}

#define SENTINEL (-12345.678)

/* Worst |got - want| / (1 + |want|) between a grid array and a tile map at
 * the block origins; NaN (an unwritten sentinel never is) counts as huge. */
static double grid_vs_map(const double *grid, const double *map, int w, int h)
{
    int nbr = mad_grid_rows(h), nbc = mad_grid_cols(w);
    double worst = 0.0;
    for (int by = 0; by < nbr; by++)
        for (int bx = 0; bx < nbc; bx++) {
            double g = grid[(size_t)by * nbc + bx];
            double want = map[(size_t)(4 * by) * w + 4 * bx];
            double e = fabs(g - want) / (1.0 + fabs(want));
            if (!(e <= worst))
                worst = isnan(e) || g == SENTINEL ? INFINITY : e;
        }
    return worst;
}

static void fill(double *p, size_t n, double v)
{
    for (size_t i = 0; i < n; i++)
        p[i] = v;
}

enum { CONTENT_UNIFORM, CONTENT_FLAT_OFFSET, CONTENT_PIECEWISE };

static void make_stats_input(double *img, int w, int h, int kind, TestRng *rng)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double u = (test_rand(rng) & 0xffffff) / 16777216.0;
            double v;
            if (kind == CONTENT_UNIFORM)
                v = 255.0 * u;
            else if (kind == CONTENT_FLAT_OFFSET) /* raw power sums would cancel to noise */
                v = 1000.0 + 1e-3 * u + 1e-4 * sin(0.3 * x);
            else /* constant patches: sigma exactly 0, skew = kurt = 0 */
                v = (double)(((x / 20) + (y / 20)) % 3 == 0 ? 7 : (int)(u * 4));
            img[(size_t)y * w + x] = v;
        }
}

static void t_stats_fast_vs_naive(TestCtx *t)
{
    /* the last two have (size-16) % 4 == 0, where the modified std's edge
     * rule drops an existing neighbour */
    static const int sizes[][2] = { { 16, 16 }, { 19, 23 },  { 34, 34 },  { 37, 35 }, { 53, 41 },
                                    { 101, 70 }, { 64, 127 }, { 52, 36 }, { 48, 64 } };
    static const char *const kind_name[] = { "uniform", "flat+offset", "piecewise" };
    /* relative to 1 + |value|; skew and kurt of the flat+offset blocks
     * inherit the rounding of x - mean at |x| = 1000 in both paths */
    static const double tol[] = { 1e-12, 1e-7, 1e-12 };
    TestRng rng = { 0x6d61642d73746174ULL };
    double worst_all[3] = { 0 };

    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        int w = sizes[si][0], h = sizes[si][1];
        int nbr = mad_grid_rows(h), nbc = mad_grid_cols(w);
        size_t n = (size_t)w * h, nb = (size_t)nbr * nbc;
        for (int kind = 0; kind < 3; kind++) {
            double *img = zalloc(n), *scratch = zalloc(mad_stats_scratch_size(w));
            double *g[7], *mp[7];
            for (int k = 0; k < 7; k++) {
                g[k] = zalloc(nb + 8); /* + guard */
                mp[k] = zalloc(n);
            }
            if (!img || !scratch || !g[6] || !mp[6]) {
                CHECK(t, 0, "out of memory");
                return;
            }
            make_stats_input(img, w, h, kind, &rng);
            for (int k = 0; k < 7; k++)
                fill(g[k], nb + 8, SENTINEL);
            /* g: std skew kurt mean16 sd16 sd8 modstd */
            mad_stats_appear(g[0], g[1], g[2], img, w, w, h, scratch);
            mad_stats_detect(g[3], g[4], g[5], img, w, w, h, scratch);
            mad_modified_std(g[6], g[5], w, h);
            NaiveMaps nm = { mp[3], mp[4], mp[5], mp[0], mp[1], mp[2] };
            naive_tile_maps(&nm, img, w, h);
            naive_modified_std(mp[6], mp[5], w, h);

            static const char *const names[7] = { "std", "skew", "kurt", "mean16",
                                                  "sd16", "sd8", "modified std" };
            for (int k = 0; k < 7; k++) {
                double e = grid_vs_map(g[k], mp[k], w, h);
                int guard_ok = 1;
                for (int i = 0; i < 8; i++)
                    guard_ok &= g[k][nb + i] == SENTINEL;
                CHECK(t, e <= tol[kind] && guard_ok, "%dx%d %s %s: error %.3g (tol %.0e)%s", w,
                      h, kind_name[kind], names[k], e, tol[kind],
                      guard_ok ? "" : ", wrote past the grid");
                if (e > worst_all[kind])
                    worst_all[kind] = e;
            }
            if (kind == CONTENT_PIECEWISE) {
                /* blocks inside a constant patch: sigma == 0 exactly */
                int zeros = 0;
                for (size_t b = 0; b < nb; b++)
                    zeros += g[0][b] == 0.0 && g[1][b] == 0.0 && g[2][b] == 0.0;
                CHECK(t, w < 40 || h < 40 || zeros > 0, "%dx%d: no constant block seen", w, h);
            }
            for (int k = 0; k < 7; k++) {
                free(g[k]);
                free(mp[k]);
            }
            free(img);
            free(scratch);
        }
    }
    printf("INFO %s/%s: worst error vs per-block loops: uniform %.2e, flat+offset %.2e, "
           "piecewise %.2e\n",
           t->prog, t->case_name, worst_all[0], worst_all[1], worst_all[2]);
}

/* ---- second implementation: the whole metric ------------------------------ */

/* In-place 2-D DFT by its definition (rows, then columns); inverse divides
 * by w*h like MATLAB's ifft2. */
static void slow_dft2(double complex *x, int w, int h, int inverse)
{
    int n = w > h ? w : h;
    double complex *tmp = malloc((size_t)n * sizeof(*tmp)), *tw = malloc((size_t)n * sizeof(*tw));
    double sign = inverse ? 1.0 : -1.0;
    for (int pass = 0; pass < 2; pass++) {
        int len = pass ? h : w, count = pass ? w : h;
        size_t step = pass ? (size_t)w : 1, next = pass ? 1 : (size_t)w;
        for (int j = 0; j < len; j++)
            tw[j] = cos(2.0 * PI * j / len) + sign * sin(2.0 * PI * j / len) * I;
        for (int line = 0; line < count; line++) {
            double complex *p = x + line * next;
            for (int k = 0; k < len; k++) {
                double complex s = 0;
                for (int j = 0; j < len; j++)
                    s += p[j * step] * tw[(size_t)k * j % len];
                tmp[k] = s;
            }
            for (int k = 0; k < len; k++)
                p[k * step] = tmp[k];
        }
    }
    if (inverse)
        for (size_t i = 0; i < (size_t)w * h; i++)
            x[i] /= (double)w * h;
    free(tmp);
    free(tw);
}

/* MATLAB fftshift (circshift by floor(n/2)) and ifftshift (by -floor(n/2)). */
static void slow_shift(double complex *dst, const double complex *src, int w, int h, int inverse)
{
    for (int r = 0; r < h; r++)
        for (int c = 0; c < w; c++) {
            int r2 = (r + h / 2) % h, c2 = (c + w / 2) % w;
            if (inverse)
                dst[(size_t)r * w + c] = src[(size_t)r2 * w + c2];
            else
                dst[(size_t)r2 * w + c2] = src[(size_t)r * w + c];
        }
}

/* RMS over the kept region, rows and columns 16 .. size-18 (MATLAB
 * BSIZE+1:end-BSIZE-1). */
static double slow_crop_rms(const double *map, int w, int h)
{
    double s = 0.0;
    int n = 0;
    for (int r = 16; r <= h - 18; r++)
        for (int c = 16; c <= w - 18; c++, n++)
            s += map[(size_t)r * w + c] * map[(size_t)r * w + c];
    return sqrt(s / n);
}

/* out = real(IFFT2(FFT2(lightness of g) . CSF)), SPEC §3.1-3.2; f and sh
 * are w x h scratch. */
static void slow_csf_lightness(double *out, const uint8_t *g, int w, int h, double complex *f,
                               double complex *sh)
{
    size_t n = (size_t)w * h;
    for (size_t i = 0; i < n; i++) /* uint8 g+1 saturates: 255 reads LUT(255) = 254^.733 */
        f[i] = 0.02874 * pow(g[i] == 255 ? 254.0 : (double)g[i], 2.2 / 3.0);
    slow_dft2(f, w, h, 0);
    slow_shift(sh, f, w, h, 0);
    for (int r = 0; r < h; r++)
        for (int c = 0; c < w; c++) {
            double complex z = ((r - (h - 1) / 2.0) + (c - (w - 1) / 2.0) * I) / w * 2.0 * 32;
            double radfreq = cabs(z);
            double s = (1 - 0.7) / 2 * cos(4 * carg(z)) + (1 + 0.7) / 2;
            radfreq /= s;
            double csf = 2.6 * (0.0192 + 0.114 * radfreq) * exp(-pow(0.114 * radfreq, 1.1));
            if (radfreq < 7.8909)
                csf = 0.9809;
            sh[(size_t)r * w + c] *= csf;
        }
    slow_shift(f, sh, w, h, 1);
    slow_dft2(f, w, h, 1);
    for (size_t i = 0; i < n; i++)
        out[i] = creal(f[i]);
}

static double slow_d_detect(double *hi, const uint8_t *ref, const uint8_t *dst, int w, int h)
{
    size_t n = (size_t)w * h;
    double complex *f = malloc(n * sizeof(*f)), *sh = malloc(n * sizeof(*sh));
    double *rimg = zalloc(n), *eimg = zalloc(n);
    double *mu = zalloc(n), *sd8 = zalloc(n), *sdref = zalloc(n), *sderr = zalloc(n);

    slow_csf_lightness(rimg, ref, w, h, f, sh);
    slow_csf_lightness(eimg, dst, w, h, f, sh);
    for (size_t i = 0; i < n; i++)
        eimg[i] -= rimg[i];
    NaiveMaps mr = { .mean16 = mu, .sd8 = sd8 }, me = { .sd16 = sderr };
    naive_tile_maps(&mr, rimg, w, h);
    naive_modified_std(sdref, sd8, w, h);
    naive_tile_maps(&me, eimg, w, h);

    for (int r = 0; r < h; r++)
        for (int c = 0; c < w; c++) {
            size_t i = (size_t)r * w + c;
            double ci_ref = log(sdref[i] / mu[i]);
            double ci_dst = mu[i] < 0.5 ? -INFINITY : log(sderr[i] / mu[i]);
            double msk = 0.0;
            if (ci_ref > -5 && ci_dst > ci_ref)
                msk = ci_dst - ci_ref;
            else if (ci_ref <= -5 && ci_dst > -5)
                msk = ci_dst + 5;
            long sum = 0; /* rows r-7..r+8, symmetric padding */
            for (int y = r - 7; y <= r + 8; y++)
                for (int x = c - 7; x <= c + 8; x++) {
                    int yy = y < 0 ? -1 - y : y >= h ? 2 * h - 1 - y : y;
                    int xx = x < 0 ? -1 - x : x >= w ? 2 * w - 1 - x : x;
                    int d = ref[(size_t)yy * w + xx] - dst[(size_t)yy * w + xx];
                    sum += d * d;
                }
            hi[i] = msk * (sum / 256.0);
        }
    double d = 200.0 * slow_crop_rms(hi, w, h);
    free(f);
    free(sh);
    free(rimg);
    free(eimg);
    free(mu);
    free(sd8);
    free(sdref);
    free(sderr);
    return d;
}

static double slow_d_appear(double *eta, const uint8_t *ref, const uint8_t *dst, int w, int h)
{
    static const double weight[5] = { 0.5, 0.75, 1, 5, 6 };
    size_t n = (size_t)w * h;
    double complex *fg[2], *eo = malloc(n * sizeof(*eo)), *filt = malloc(n * sizeof(*filt));
    double complex *cen = malloc(n * sizeof(*cen));
    double *a = zalloc(n), *radius = zalloc(n), *theta = zalloc(n);
    double *st[2][3];
    for (int p = 0; p < 2; p++) {
        fg[p] = malloc(n * sizeof(*fg[p]));
        for (size_t i = 0; i < n; i++)
            fg[p][i] = (p ? dst : ref)[i];
        slow_dft2(fg[p], w, h, 0);
        for (int k = 0; k < 3; k++)
            st[p][k] = zalloc(n);
    }
    for (int r = 0; r < h; r++)
        for (int c = 0; c < w; c++) {
            double x = (-w / 2.0 + c) / (w / 2.0), y = (-h / 2.0 + r) / (h / 2.0);
            radius[(size_t)r * w + c] = sqrt(x * x + y * y);
            theta[(size_t)r * w + c] = atan2(-y, x);
        }
    int rs = (int)round(h / 2.0 + 1) - 1, cs = (int)round(w / 2.0 + 1) - 1;
    radius[(size_t)rs * w + cs] = 1.0;
    memset(eta, 0, n * sizeof(*eta));

    for (int s = 0; s < 5; s++) {
        double rfo = (1.0 / (3.0 * pow(3.0, s))) / 0.5;
        for (int o = 0; o < 4; o++) {
            double ang = o * PI / 4, sigma = PI / 4 / 1.5;
            for (size_t i = 0; i < n; i++) {
                double lg = exp(-pow(log(radius[i] / rfo), 2) / (2 * pow(log(0.55), 2)));
                double ds = sin(theta[i]) * cos(ang) - cos(theta[i]) * sin(ang);
                double dc = cos(theta[i]) * cos(ang) + sin(theta[i]) * sin(ang);
                double dtheta = fabs(atan2(ds, dc));
                cen[i] = lg * exp(-dtheta * dtheta / (2 * sigma * sigma));
            }
            cen[(size_t)rs * w + cs] = 0.0;
            slow_shift(filt, cen, w, h, 0);
            for (int p = 0; p < 2; p++) {
                for (size_t i = 0; i < n; i++)
                    eo[i] = fg[p][i] * filt[i];
                slow_dft2(eo, w, h, 1);
                for (size_t i = 0; i < n; i++)
                    a[i] = cabs(eo[i]);
                NaiveMaps m = { .std = st[p][0], .skew = st[p][1], .kurt = st[p][2] };
                naive_tile_maps(&m, a, w, h);
            }
            for (size_t i = 0; i < n; i++)
                eta[i] += weight[s] / 13.25 *
                          (fabs(st[0][0][i] - st[1][0][i]) + 2 * fabs(st[0][1][i] - st[1][1][i]) +
                           fabs(st[0][2][i] - st[1][2][i]));
        }
    }
    double d = slow_crop_rms(eta, w, h);
    for (int p = 0; p < 2; p++) {
        free(fg[p]);
        for (int k = 0; k < 3; k++)
            free(st[p][k]);
    }
    free(eo);
    free(filt);
    free(cen);
    free(a);
    free(radius);
    free(theta);
    return d;
}

static void t_slow_odd_sizes(TestCtx *t)
{
    static const int sizes[][2] = { { 37, 41 }, { 34, 35 }, { 39, 48 }, { 64, 45 }, { 53, 61 } };
    TestRng rng = { 0x736c6f772d6d6164ULL };
    double worst[3] = { 0 }, worst_map = 0.0;
    char tmp[4096];
    int visible = 0;

    if (make_tmpdir_named(tmp, sizeof(tmp), "test_mad") < 0) {
        CHECK(t, 0, "mkdtemp: %s", strerror(errno));
        return;
    }
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        int w = sizes[si][0], h = sizes[si][1];
        size_t n = (size_t)w * h;
        uint8_t *ref = malloc(n), *dst = malloc(n);
        double *hi = zalloc(n), *eta = zalloc(n);
        MadContext *ctx = NULL;
        MpeError err;
        MadScore s;
        make_picture(ref, w, h, &rng);
        distort(dst, ref, w, h, 12, &rng);

        double dd = slow_d_detect(hi, ref, dst, w, h);
        double da = slow_d_appear(eta, ref, dst, w, h);
        double alpha = 1.0 / (1.0 + exp(-2.55 / 3.35) * pow(dd, 1.0 / (log(10.0) * 3.35)));
        double mad = pow(da, 1.0 - alpha) * pow(dd, alpha);

        MadOptions opt = { .threads = 2, .dump_dir = tmp };
        int ret = mad_cpu.open(&ctx, w, h, &opt, &err);
        if (ret == 0)
            ret = mad_score_pair(&mad_cpu, ctx, ref, dst, w, &s, &err);
        CHECK(t, ret == 0, "%dx%d: %s", w, h, err.msg);
        if (ret == 0) {
            double e[3] = { rel_err(s.d_detect, dd), rel_err(s.d_appear, da), rel_err(s.mad, mad) };
            CHECK(t, e[0] <= SLOW_REL_TOL && e[1] <= SLOW_REL_TOL && e[2] <= SLOW_REL_TOL,
                  "%dx%d: d_detect %.17g (slow %.17g), d_appear %.17g (slow %.17g), mad %.17g "
                  "(slow %.17g)",
                  w, h, s.d_detect, dd, s.d_appear, da, s.mad, mad);
            visible += dd > 0.0 && da > 0.0;
            for (int k = 0; k < 3; k++)
                worst[k] = fmax(worst[k], e[k]);
            const double *want[2] = { hi, eta };
            const char *name[2] = { "mad_detect", "mad_appearance" };
            for (int m = 0; m < 2; m++) {
                char path[4200];
                snprintf(path, sizeof(path), "%s/%s_f64.bin", tmp, name[m]);
                double *got = read_f64(path, n), e2 = 0.0;
                CHECK(t, got != NULL, "%s not written", path);
                for (size_t i = 0; got && i < n; i++)
                    e2 = fmax(e2, fabs(got[i] - want[m][i]) / (1.0 + fabs(want[m][i])));
                CHECK(t, e2 <= SLOW_REL_TOL, "%dx%d %s map: error %.3g", w, h, name[m], e2);
                worst_map = fmax(worst_map, e2);
                free(got);
            }
        }
        mad_cpu.close(ctx);
        free(ref);
        free(dst);
        free(hi);
        free(eta);
    }
    remove_tmpdir(tmp);
    /* the kept region of 34x35 is 1x2 pixels, in the masked texture */
    CHECK(t, visible >= 4, "only %d test pictures with visible distortion", visible);
    printf("INFO %s/%s: vs the slow implementation: d_detect %.2e d_appear %.2e mad %.2e, "
           "maps %.2e\n",
           t->prog, t->case_name, worst[0], worst[1], worst[2], worst_map);
}

/* MadMask (the encoder's --aq-mode mad) against the slow implementation's
 * reference side: block mean and modified std of the CSF-filtered
 * lightness on the grid. */
static void t_mask_vs_slow(TestCtx *t)
{
    static const int sizes[][2] = { { 37, 41 }, { 64, 45 }, { 48, 48 } };
    TestRng rng = { 0x6d61736b2d736c6fULL };
    double worst = 0.0;
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        int w = sizes[si][0], h = sizes[si][1];
        size_t n = (size_t)w * h, nb = (size_t)mad_grid_rows(h) * mad_grid_cols(w);
        uint8_t *g = malloc(n);
        double complex *f = malloc(n * sizeof(*f)), *sh = malloc(n * sizeof(*sh));
        double *r = zalloc(n), *mu = zalloc(n), *sd8 = zalloc(n), *sd = zalloc(n);
        double *gmu = zalloc(nb), *gsd = zalloc(nb);
        MadMask *m = NULL;
        MpeError err;
        make_picture(g, w, h, &rng);
        slow_csf_lightness(r, g, w, h, f, sh);
        NaiveMaps nm = { .mean16 = mu, .sd8 = sd8 };
        naive_tile_maps(&nm, r, w, h);
        naive_modified_std(sd, sd8, w, h);
        fill(gmu, nb, SENTINEL);
        fill(gsd, nb, SENTINEL);
        int ret = mad_mask_open(&m, w, h, &err);
        if (ret == 0)
            ret = mad_mask_compute(m, g, w, gmu, gsd, &err);
        CHECK(t, ret == 0, "%dx%d: %s", w, h, err.msg);
        if (ret == 0) {
            double e = fmax(grid_vs_map(gmu, mu, w, h), grid_vs_map(gsd, sd, w, h));
            CHECK(t, e <= SLOW_REL_TOL, "%dx%d: mean / modified std error %.3g", w, h, e);
            worst = fmax(worst, e);
        }
        mad_mask_close(m);
        free(g);
        free(f);
        free(sh);
        free(r);
        free(mu);
        free(sd8);
        free(sd);
        free(gmu);
        free(gsd);
    }
    printf("INFO %s/%s: vs the slow implementation: %.2e\n", t->prog, t->case_name, worst);
}

/* ---- behaviour ------------------------------------------------------------ */

static void t_identical_is_zero(TestCtx *t)
{
    static const int sizes[][2] = { { 34, 34 }, { 57, 39 }, { 130, 97 } };
    mad_check_identical_is_zero(t, &mad_cpu, sizes, sizeof(sizes) / sizeof(sizes[0]));
}

static void t_flat_pictures(TestCtx *t)
{
    mad_check_flat_pictures(t, &mad_cpu);
}

static void t_reference_reuse(TestCtx *t)
{
    int w = 75, h = 51;
    size_t n = (size_t)w * h;
    TestRng rng = { 0x7265757365ULL };
    uint8_t *ref = malloc(n), *ref2 = malloc(n), *d1 = malloc(n), *d2 = malloc(n);
    MadContext *reused = NULL, *fresh = NULL;
    MpeError err;
    MadScore s1, s2, s3, f1, f2;
    make_picture(ref, w, h, &rng);
    make_picture(ref2, w, h, &rng);
    distort(d1, ref, w, h, 5, &rng);
    distort(d2, ref, w, h, 25, &rng);

    int ret = mad_cpu.open(&reused, w, h, NULL, &err);
    CHECK(t, ret == 0, "open: %s", err.msg);
    if (ret < 0)
        goto done;
    ret = mad_cpu.set_reference(reused, ref, w, &err);
    ret |= mad_cpu.score(reused, d1, w, &s1, &err);
    ret |= mad_cpu.score(reused, d2, w, &s2, &err);
    ret |= mad_cpu.score(reused, d1, w, &s3, &err);
    CHECK(t, ret == 0, "reused context: %s", err.msg);
    for (int k = 0; k < 2; k++) {
        ret = mad_cpu.open(&fresh, w, h, NULL, &err);
        if (ret == 0)
            ret = mad_score_pair(&mad_cpu, fresh, ref, k ? d2 : d1, w, k ? &f2 : &f1, &err);
        CHECK(t, ret == 0, "fresh context: %s", err.msg);
        mad_cpu.close(fresh);
        fresh = NULL;
    }
    CHECK(t, same_score(&s1, &f1) && same_score(&s3, &f1), "d1: reused %.17g/%.17g, fresh %.17g",
          s1.mad, s3.mad, f1.mad);
    CHECK(t, same_score(&s2, &f2), "d2: reused %.17g, fresh %.17g", s2.mad, f2.mad);
    CHECK(t, s2.mad > s1.mad, "stronger noise scored better: %g vs %g", s2.mad, s1.mad);
    /* a new reference replaces the old one */
    ret = mad_cpu.set_reference(reused, ref2, w, &err);
    ret |= mad_cpu.score(reused, ref2, w, &s1, &err);
    CHECK(t, ret == 0 && s1.mad == 0.0, "after a new reference, itself scores %g", s1.mad);
done:
    mad_cpu.close(reused);
    free(ref);
    free(ref2);
    free(d1);
    free(d2);
}

static void t_threads_and_stride(TestCtx *t)
{
    int w = 97, h = 66, stride = 128;
    TestRng rng = { 0x746872656164ULL };
    uint8_t *ref = malloc((size_t)w * h), *dst = malloc((size_t)w * h);
    uint8_t *rs = malloc((size_t)stride * h), *ds = malloc((size_t)stride * h);
    MadScore s[4];
    MpeError err;
    make_picture(ref, w, h, &rng);
    distort(dst, ref, w, h, 9, &rng);
    memset(rs, 0xAA, (size_t)stride * h);
    memset(ds, 0x55, (size_t)stride * h);
    for (int y = 0; y < h; y++) {
        memcpy(rs + (size_t)y * stride, ref + (size_t)y * w, (size_t)w);
        memcpy(ds + (size_t)y * stride, dst + (size_t)y * w, (size_t)w);
    }
    static const int threads[4] = { 1, 3, 0, 20 };
    for (int k = 0; k < 4; k++) {
        MadContext *ctx = NULL;
        MadOptions opt = { .threads = threads[k] };
        int padded = k == 3;
        int ret = mad_cpu.open(&ctx, w, h, &opt, &err);
        if (ret == 0)
            ret = mad_score_pair(&mad_cpu, ctx, padded ? rs : ref, padded ? ds : dst,
                                 padded ? stride : w, &s[k], &err);
        CHECK(t, ret == 0, "threads %d: %s", threads[k], err.msg);
        mad_cpu.close(ctx);
    }
    for (int k = 1; k < 4; k++)
        CHECK(t, same_score(&s[k], &s[0]), "threads %d%s: mad %.17g, 1 thread %.17g", threads[k],
              k == 3 ? " (padded stride)" : "", s[k].mad, s[0].mad);
    free(ref);
    free(dst);
    free(rs);
    free(ds);
}

static void t_rgb_to_gray(TestCtx *t)
{
    /* gray RGB stays itself, as with MATLAB's rgb2gray */
    uint8_t rgb[256 * 3], g[256];
    for (int v = 0; v < 256; v++)
        rgb[3 * v] = rgb[3 * v + 1] = rgb[3 * v + 2] = (uint8_t)v;
    mad_rgb_to_gray(g, 256, rgb, 256 * 3, 256, 1);
    for (int v = 0; v < 256; v++)
        CHECK(t, g[v] == v, "gray %d became %d", v, g[v]);
    /* rgb2gray's weights, not BT.601's .299/.587/.114: find a colour where
     * the two round apart (the SPEC counts up to 518 per test image) */
    int differ = 0;
    for (int r = 0; r < 256 && !differ; r += 3)
        for (int gg = 0; gg < 256 && !differ; gg += 5)
            for (int b = 0; b < 256; b++) {
                double m = 0.298936021293775 * r + 0.587043074451121 * gg + 0.114020904255103 * b;
                double bt = 0.299 * r + 0.587 * gg + 0.114 * b;
                if (round(m) != round(bt)) {
                    uint8_t px[3] = { (uint8_t)r, (uint8_t)gg, (uint8_t)b }, out;
                    mad_rgb_to_gray(&out, 1, px, 3, 1, 1);
                    CHECK(t, out == round(m), "(%d,%d,%d) -> %d, rgb2gray weights give %g", r, gg,
                          b, out, round(m));
                    differ = 1;
                    break;
                }
            }
    CHECK(t, differ, "no pixel where the two weight sets round apart");
}

static void t_errors(TestCtx *t)
{
    mad_check_call_errors(t, &mad_cpu);

    char why[64];
    MpeError err = { "" };
    const IqaMetric *row = iqa_metric_pick("mad", "cpu", NULL, &err);
    CHECK(t, row && row->impl == &mad_cpu && iqa_metric_find("mad_cpu") == row,
          "cpu not found by name: %s", err.msg);
    CHECK(t, !iqa_metric_pick("mad", "nope", NULL, &err) && !iqa_metric_pick(NULL, "cpu", NULL, &err),
          "unknown name found");
    row = iqa_metric_pick("mad", "auto", NULL, &err);
    CHECK(t, row != NULL && row->probe(why, sizeof(why)) == 0, "auto found nothing usable");
    CHECK(t, mad_cpu.probe(why, sizeof(why)) == 0, "mad_cpu probe failed: %s", why);
}

static void t_dump_files(TestCtx *t)
{
    int w = 45, h = 38;
    size_t n = (size_t)w * h;
    TestRng rng = { 0x64756d70ULL };
    uint8_t *ref = malloc(n), *dst = malloc(n);
    char tmp[4096], path[4200];
    MadContext *ctx = NULL;
    MpeError err;
    MadScore s;
    double *m[NMAPS] = { 0 };
    make_picture(ref, w, h, &rng);
    distort(dst, ref, w, h, 20, &rng);
    if (make_tmpdir_named(tmp, sizeof(tmp), "test_mad") < 0) {
        CHECK(t, 0, "mkdtemp: %s", strerror(errno));
        goto done;
    }
    MadOptions opt = { .dump_dir = tmp };
    int ret = mad_cpu.open(&ctx, w, h, &opt, &err);
    if (ret == 0)
        ret = mad_score_pair(&mad_cpu, ctx, ref, dst, w, &s, &err);
    CHECK(t, ret == 0, "%s", err.msg);
    for (size_t k = 0; k < NMAPS; k++) {
        snprintf(path, sizeof(path), "%s/%s_f64.bin", tmp, map_files[k]);
        m[k] = read_f64(path, n);
        CHECK(t, m[k] != NULL, "%s missing or not %zu doubles", path, n);
        snprintf(path, sizeof(path), "%s/%s.png", tmp, map_files[k]);
        MpeInput *in = NULL;
        int ok = mpe_input_open(&in, path, 0, &err) == 0 && mpe_input_info(in)->width == w &&
                 mpe_input_info(in)->height == h;
        CHECK(t, ok, "%s: not a %dx%d PNG (%s)", path, w, h, err.msg);
        mpe_input_close(in);
    }
    if (m[0] && m[1] && m[2] && m[3]) {
        /* detect = visibility x lmse; the crop RMS of each gives the scores */
        double worst = 0.0, sd = 0.0, sa = 0.0;
        for (size_t i = 0; i < n; i++)
            worst = fmax(worst, fabs(m[2][i] - m[0][i] * m[1][i]));
        CHECK(t, worst == 0.0, "detect != visibility x lmse by %g", worst);
        for (int y = 16; y <= h - 18; y++)
            for (int x = 16; x <= w - 18; x++) {
                sd += m[2][(size_t)y * w + x] * m[2][(size_t)y * w + x];
                sa += m[3][(size_t)y * w + x] * m[3][(size_t)y * w + x];
            }
        double cnt = (double)(h - 33) * (w - 33);
        CHECK(t, rel_err(200.0 * sqrt(sd / cnt), s.d_detect) < 1e-12 &&
                     rel_err(sqrt(sa / cnt), s.d_appear) < 1e-12,
              "map RMS %.17g/%.17g vs scores %.17g/%.17g", 200.0 * sqrt(sd / cnt),
              sqrt(sa / cnt), s.d_detect, s.d_appear);
    }
    remove_tmpdir(tmp);
done:
    for (size_t k = 0; k < NMAPS; k++)
        free(m[k]);
    mad_cpu.close(ctx);
    free(ref);
    free(dst);
}

int main(void)
{
    TestCtx t;
    test_init(&t, "test_mad");
    test_run(&t, "stats_fast_vs_naive", t_stats_fast_vs_naive);
    test_run(&t, "slow_odd_sizes", t_slow_odd_sizes);
    test_run(&t, "mask_vs_slow", t_mask_vs_slow);
    test_run(&t, "identical_is_zero", t_identical_is_zero);
    test_run(&t, "flat_pictures", t_flat_pictures);
    test_run(&t, "reference_reuse", t_reference_reuse);
    test_run(&t, "threads_and_stride", t_threads_and_stride);
    test_run(&t, "rgb_to_gray", t_rgb_to_gray);
    test_run(&t, "errors", t_errors);
    test_run(&t, "dump_files", t_dump_files);
    test_run(&t, "reference_subset", t_reference_subset);
    test_run(&t, "maps_subset", t_maps_subset);
    test_run(&t, "reference_all", t_reference_all);
    test_run(&t, "maps_all", t_maps_all);
    return test_finish(&t);
}
