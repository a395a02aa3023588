/* mad.c — benchmark of the MAD implementations: median time per call after
 * warm-up at 512x512 and 2048x2048, for every implementation that can run
 * here (mad_cpu on all cores; mad_cuda when built and a GPU answers its
 * probe).  Pictures: solar frames 0 and 1 from ../shared/solar (512x512 is
 * their centre crop); without them the 256x384 pair in tests/data/mad tiled
 * to size; without that, synthetic texture.  Every implementation other
 * than mad_cpu is checked against mad_cpu on the same pair first.
 *
 * Reported per size and implementation: open (filters and plans, once per
 * size), set_reference (reference side, once per source frame), score (the
 * distorted side: what rate control pays per trial encode), pair (both,
 * the score(ref, dst)), and for mad_cpu the split of score's work,
 * in thread-seconds summed over workers, into
 *   FFTs:       the transforms, with the spectrum x filter products made
 *               just before each row batch and |EO| taken in the column
 *               scatter (fused there, so not separable),
 *   filters:    lightness LUT and gray conversion, spectrum expansion,
 *               16x16 local-MSE box sums,
 *   statistics: block moments, visibility, η terms, collapse.
 *
 * The pictures are page-locked (iqa_host_register), as the encoder's
 * checker locks the buffers it scores from, so mad_cuda uploads them by
 * DMA straight from there; --pageable leaves them as malloc gave them
 * (mad_cuda then copies them into its pinned staging memory first).
 *
 * --callbacks picks mad_cuda's cuFFT callbacks (mad_cuda_internal.h):
 * none (the default: a plain transform), store, or load (load and store).
 * --cufft: float subbands through cuFFT and the product kernel even where
 * mad_cuda's own transforms would take them (the path before those).
 *
 *   mad [--runs N] [--threads N] [--impl NAME] [--size N]... [--pageable]
 *       [--callbacks none|store|load] [--cufft]
 *   MPE_SHARED_DIR (default ../shared) locates the solar frames.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "input/input.h"
#include "iqa/mad.h"
#include "iqa/mad_internal.h"
#ifdef MPE_HAVE_MAD_CUDA
#include "iqa/mad_cuda_internal.h"
#endif
#include "common/timer.h"
#include "iqa/metric.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
    double *s = malloc((size_t)n * sizeof(*s));
    double m;
    if (!s)
        return NAN;
    memcpy(s, v, (size_t)n * sizeof(*s));
    qsort(s, (size_t)n, sizeof(*s), cmp_double);
    m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    free(s);
    return m;
}

/* Gray picture (rgb2gray as the original) from a PNG, or NULL. */
static uint8_t *load_gray(const char *path, int *w, int *h)
{
    MpeInput *in = NULL;
    MpeFrame fr = { 0 };
    MpeError err;
    uint8_t *img = NULL;
    if (mpe_input_open(&in, path, 0, &err) < 0)
        return NULL;
    *w = mpe_input_info(in)->width;
    *h = mpe_input_info(in)->height;
    if (mpe_frame_alloc(&fr, MPE_FRAME_RGB24, *w, *h) == 0 && mpe_input_read(in, &fr, &err) == 1 &&
        (img = malloc((size_t)*w * *h)))
        mad_rgb_to_gray(img, *w, fr.data[0], fr.stride[0], *w, *h);
    mpe_frame_free(&fr);
    mpe_input_close(in);
    return img;
}

/* size x size out of src (sw x sh): centre crop when it is large enough,
 * otherwise tiled with mirrored repeats so no seam is sharper than the
 * content. */
static uint8_t *fit(const uint8_t *src, int sw, int sh, int size)
{
    uint8_t *d = malloc((size_t)size * size);
    int ox = sw >= size ? (sw - size) / 2 : 0, oy = sh >= size ? (sh - size) / 2 : 0;
    if (!d)
        return NULL;
    for (int y = 0; y < size; y++) {
        int yy = (y + oy) % (2 * sh);
        yy = yy < sh ? yy : 2 * sh - 1 - yy;
        for (int x = 0; x < size; x++) {
            int xx = (x + ox) % (2 * sw);
            xx = xx < sw ? xx : 2 * sw - 1 - xx;
            d[(size_t)y * size + x] = src[(size_t)yy * sw + xx];
        }
    }
    return d;
}

typedef struct Source {
    const char *what;
    uint8_t *ref, *dst;
    int w, h;
} Source;

static void load_source(Source *s)
{
    const char *root = getenv("MPE_SHARED_DIR");
    char p0[4096], p1[4096];
    int w1, h1;
    snprintf(p0, sizeof(p0), "%s/solar/solar_0.png", root && *root ? root : "../shared");
    snprintf(p1, sizeof(p1), "%s/solar/solar_1.png", root && *root ? root : "../shared");
    s->what = "solar frames 0 and 1";
    s->ref = load_gray(p0, &s->w, &s->h);
    s->dst = s->ref ? load_gray(p1, &w1, &h1) : NULL;
    if (s->ref && s->dst && w1 == s->w && h1 == s->h)
        return;
    free(s->ref);
    free(s->dst);
    s->what = "tests/data/mad 256x384 ref / jpeg_q30, tiled";
    s->ref = load_gray("tests/data/mad/g256x384_ref.png", &s->w, &s->h);
    s->dst = s->ref ? load_gray("tests/data/mad/g256x384_jpeg_q30.png", &w1, &h1) : NULL;
    if (s->ref && s->dst && w1 == s->w && h1 == s->h)
        return;
    free(s->ref);
    free(s->dst);
    s->what = "synthetic texture + noise";
    s->w = s->h = 256;
    s->ref = malloc(256 * 256);
    s->dst = malloc(256 * 256);
    if (!s->ref || !s->dst)
        return;
    unsigned r = 12345;
    for (int i = 0; i < 256 * 256; i++) {
        int x = i % 256, y = i / 256;
        r = r * 1103515245u + 12345u;
        s->ref[i] = (uint8_t)(128 + 60 * sin(x * 0.07) * cos(y * 0.05) + (r >> 28));
        s->dst[i] = (uint8_t)(s->ref[i] + (int)((r >> 20) & 7) - 3);
    }
}

#ifdef MPE_HAVE_MAD_CUDA
/* One more set_reference + score with the device's stage events on: where
 * the time goes (the events cost a little host time, so these calls are not
 * among the timed ones). */
static void cuda_stages(MadContext *ctx, const uint8_t *ref, const uint8_t *dst, int size)
{
    static const char *const names[MAD_CUDA_NSTAGE] = { "upload", "prep", "fft",
                                                        "filter", "stats", "collapse" };
    MadCudaTimes t[2];
    MadScore s;
    MpeError err = { "" };
    mad_cuda_set_timing(ctx, 1);
    if (mad_cuda.set_reference(ctx, ref, size, &err) < 0 ||
        mad_cuda.score(ctx, dst, size, &s, &err) < 0) {
        fprintf(stderr, "mad_cuda stages: %s\n", err.msg);
        mad_cuda_set_timing(ctx, 0);
        return;
    }
    mad_cuda_set_timing(ctx, 0);
    mad_cuda_times(ctx, &t[0], &t[1]);
    /* what the caller's thread spends when it queues a frame's work and
     * collects it later (the coder's wait if the GPU keeps up) */
    double best_queue = INFINITY, best_total = INFINITY;
    for (int r = 0; r < 5; r++) {
        double a = mpe_time_ms();
        if (mad_cuda.set_reference(ctx, ref, size, &err) < 0 ||
            mad_cuda.score_submit(ctx, dst, size, &err) < 0)
            break;
        double b = mpe_time_ms();
        if (mad_cuda.score_collect(ctx, &s, &err) < 0)
            break;
        best_queue = fmin(best_queue, b - a);
        best_total = fmin(best_total, mpe_time_ms() - a);
    }
    printf("          set_reference + score_submit on the host %.3f ms of %.3f ms to the score "
           "(best of 5)\n", best_queue, best_total);
    for (int k = 0; k < 2; k++) {
        printf("          %-13s stages: wall %.3f ms, device %.3f ms:", k ? "score" : "set_reference",
               t[k].wall_ms, t[k].gpu_ms);
        for (int j = 0; j < MAD_CUDA_NSTAGE; j++)
            printf(" %s %.3f", names[j], t[k].ms[j]);
        printf("\n");
    }
}
#endif

typedef struct Result {
    double open, setref, score, pair;
    double best_setref, best_score, best_pair; /* fastest of the timed runs */
    MadScore s;
    MadTimes st; /* mad_cpu: stages of the median score call */
} Result;

static int bench_impl(const MadImpl *impl, const uint8_t *ref, const uint8_t *dst, int size,
                      int threads, MpePool *pool, int batch, int callbacks, int runs, Result *res)
{
    MadContext *ctx = NULL;
    MadOptions opt = { .threads = threads, .pool = pool };
    MpeError err = { "" };
    int ret, warm = 2;
    double *ts = calloc((size_t)runs, sizeof(double)), *tr = calloc((size_t)runs, sizeof(double));
    double *tp = calloc((size_t)runs, sizeof(double));
    MadTimes *stg = calloc((size_t)runs, sizeof(MadTimes));
    int is_cpu = impl == &mad_cpu;

    if (!ts || !tr || !tp || !stg) {
        ret = -ENOMEM;
        fprintf(stderr, "mad bench: out of memory\n");
        goto done;
    }
    double t0 = mpe_time_ms();
#ifdef MPE_HAVE_MAD_CUDA
    if (impl == &mad_cuda && (batch > 0 || callbacks != MAD_CUDA_SUB_FLOAT))
        ret = mad_cuda_open_ex(&ctx, size, size, &opt, batch, callbacks, &err);
    else
#endif
        ret = impl->open(&ctx, size, size, &opt, &err);
    if (ret < 0)
        goto fail;
    res->open = mpe_time_ms() - t0;
    for (int i = 0; i < warm + runs; i++) {
        double a = mpe_time_ms();
        if ((ret = impl->set_reference(ctx, ref, size, &err)) < 0)
            goto fail;
        double b = mpe_time_ms();
        if ((ret = impl->score(ctx, dst, size, &res->s, &err)) < 0)
            goto fail;
        double c = mpe_time_ms();
        /* score alone once more: the reference is already set */
        if ((ret = impl->score(ctx, dst, size, &res->s, &err)) < 0)
            goto fail;
        double d = mpe_time_ms();
        if (i >= warm) {
            tr[i - warm] = b - a;
            tp[i - warm] = c - a;
            ts[i - warm] = d - c;
            if (is_cpu)
                mad_cpu_times(ctx, NULL, &stg[i - warm]);
        }
    }
    res->setref = median(tr, runs);
    res->pair = median(tp, runs);
    res->score = median(ts, runs);
    res->best_setref = res->best_score = res->best_pair = INFINITY;
    for (int i = 0; i < runs; i++) {
        res->best_setref = fmin(res->best_setref, tr[i]);
        res->best_score = fmin(res->best_score, ts[i]);
        res->best_pair = fmin(res->best_pair, tp[i]);
    }
#ifdef MPE_HAVE_MAD_CUDA
    if (impl == &mad_cuda) {
        const char *why = "";
        static const char *const cb_name[] = { "none: ", "|EO| in the store",
                                               "product in the load, |EO| in the store" };
        printf("          cuFFT callbacks: %s%s\n", cb_name[mad_cuda_callbacks(ctx, &why)], why);
        printf("          subband transforms: %s\n",
               mad_cuda_own_fft(ctx) ? "mad_cuda's own (product in the rows', cells in the "
                                       "columns')" : "cuFFT");
        cuda_stages(ctx, ref, dst, size);
    }
#endif
    if (is_cpu) {
        /* the stage split of the run whose score time is the median */
        int best = 0;
        for (int i = 1; i < runs; i++)
            if (fabs(ts[i] - res->score) < fabs(ts[best] - res->score))
                best = i;
        res->st = stg[best];
    }
    ret = 0;
    goto done;
fail:
    fprintf(stderr, "%s %dx%d: %s\n", impl->name, size, size, err.msg);
done:
    if (ctx)
        impl->close(ctx);
    free(ts);
    free(tr);
    free(tp);
    free(stg);
    return ret;
}

static double rel(double a, double b)
{
    return b == 0.0 ? fabs(a) : fabs(a - b) / fabs(b);
}

int main(int argc, char **argv)
{
    int runs = 7, threads = 0, nsizes = 0, sizes[8], pool_threads = 0, batch = 0, pageable = 0,
        callbacks = MAD_CUDA_SUB_FLOAT;
    MpePool *pool = NULL;
    const char *impl_name = "all";
    Source src = { 0 };
    int status = 0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--pool") && i + 1 < argc)
            pool_threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
            batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--impl") && i + 1 < argc)
            impl_name = argv[++i];
        else if (!strcmp(argv[i], "--size") && i + 1 < argc && nsizes < 8)
            sizes[nsizes++] = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--pageable"))
            pageable = 1;
        else if (!strcmp(argv[i], "--cufft"))
            callbacks = MAD_CUDA_SUB_FLOAT_CUFFT;
        else if (!strcmp(argv[i], "--callbacks") && i + 1 < argc) {
            i++;
            callbacks = !strcmp(argv[i], "store")  ? MAD_CUDA_SUB_FLOAT_STORE_CB
                    : !strcmp(argv[i], "load") ? MAD_CUDA_SUB_FLOAT_LOAD_CB
                                               : MAD_CUDA_SUB_FLOAT;
        }
        else {
            fprintf(stderr,
                    "usage: %s [--runs N] [--threads N] [--pool N] [--batch N] [--impl NAME|all] "
                    "[--size N]... [--pageable] [--callbacks none|store|load] [--cufft]\n",
                    argv[0]);
            return 2;
        }
    }
    if (runs < 1)
        runs = 1;
    if (pool_threads > 0) {
        MpeError err;
        if (mpe_pool_open(&pool, pool_threads, &err) < 0) {
            fprintf(stderr, "mad bench: %s\n", err.msg);
            return 1;
        }
        printf("implementations get a pool of %d threads (mad_cuda stages its uploads on it)\n",
               pool_threads);
    }
    if (!nsizes) {
        sizes[nsizes++] = 512;
        sizes[nsizes++] = 2048;
    }

    /* which implementations: mad_cpu always, the others when they probe */
    const MadImpl *impls[4];
    int nimpl = 0;
    static const char *const names[] = { "cpu", "cuda" };
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        char row_name[16], why[256] = "";
        snprintf(row_name, sizeof(row_name), "mad_%s", names[k]);
        const IqaMetric *row = iqa_metric_find(row_name);
        const MadImpl *m = row ? row->impl : NULL;
        if (strcmp(impl_name, "all") && strcmp(impl_name, names[k]) && strcmp(impl_name, row_name))
            continue;
        if (!m) {
            printf("mad_%s: not in this build\n", names[k]);
            continue;
        }
        if (m->probe(why, sizeof(why)) != 0) {
            printf("%s: cannot run here: %s\n", m->name, why);
            continue;
        }
        impls[nimpl++] = m;
    }

    load_source(&src);
    if (!src.ref || !src.dst) {
        fprintf(stderr, "mad bench: out of memory\n");
        return 1;
    }
    printf("pictures: %s; %d timed runs after 2 warm-up\n", src.what, runs);
    int locked = 0;

    for (int si = 0; si < nsizes; si++) {
        int size = sizes[si];
        uint8_t *ref = fit(src.ref, src.w, src.h, size), *dst = fit(src.dst, src.w, src.h, size);
        Result cpu = { 0 };
        int have_cpu = 0;
        if (!ref || !dst) {
            fprintf(stderr, "mad bench: out of memory at %d\n", size);
            return 1;
        }
        if (!pageable) {
            const size_t n = (size_t)size * size;
            locked = iqa_host_register(ref, n) + iqa_host_register(dst, n);
            printf("pictures %dx%d: %s\n", size, size,
                   locked == 2 ? "page-locked (the encoder's path)"
                               : "pageable (page-locking failed or no CUDA)");
        }
        for (int k = 0; k < nimpl; k++) {
            Result r = { 0 };
            if (bench_impl(impls[k], ref, dst, size, threads, pool, batch, callbacks, runs, &r) < 0) {
                status = 1;
                continue;
            }
            printf("%-9s %4dx%-4d score %9.3f ms  set_reference %9.3f ms  pair %9.3f ms  "
                   "open %8.1f ms   mad=%.17g d_detect=%.17g d_appear=%.17g\n",
                   impls[k]->name, size, size, r.score, r.setref, r.pair, r.open, r.s.mad,
                   r.s.d_detect, r.s.d_appear);
            printf("          best of %d: score %.3f ms  set_reference %.3f ms  pair %.3f ms\n",
                   runs, r.best_score, r.best_setref, r.best_pair);
            if (impls[k] == &mad_cpu) {
                double tot = r.st.stage[MAD_STAGE_FFT] + r.st.stage[MAD_STAGE_FILTER] +
                             r.st.stage[MAD_STAGE_STATS];
                printf("          score on %d threads: FFTs %.1f ms (%.0f%%), filters %.1f ms "
                       "(%.0f%%), statistics %.1f ms (%.0f%%) thread-time; %.1f ms wall\n",
                       r.st.threads, 1e3 * r.st.stage[MAD_STAGE_FFT],
                       100 * r.st.stage[MAD_STAGE_FFT] / tot, 1e3 * r.st.stage[MAD_STAGE_FILTER],
                       100 * r.st.stage[MAD_STAGE_FILTER] / tot,
                       1e3 * r.st.stage[MAD_STAGE_STATS], 100 * r.st.stage[MAD_STAGE_STATS] / tot,
                       1e3 * r.st.wall);
                cpu = r;
                have_cpu = 1;
            } else if (have_cpu) {
                double e = fmax(rel(r.s.mad, cpu.s.mad),
                                fmax(rel(r.s.d_detect, cpu.s.d_detect),
                                     rel(r.s.d_appear, cpu.s.d_appear)));
                printf("          vs mad_cpu: max relative difference %.2e%s\n", e,
                       e <= 2e-4 ? "" : "  ** above the 2e-4 the issue allows **");
                if (e > 2e-4)
                    status = 1;
            }
        }
        if (locked) {
            iqa_host_unregister(ref);
            iqa_host_unregister(dst);
        }
        free(ref);
        free(dst);
    }
    free(src.ref);
    free(src.dst);
    mpe_pool_close(pool);
    return status;
}
