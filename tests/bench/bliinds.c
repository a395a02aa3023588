/* bliinds.c — benchmark of the BLIINDS-II implementations (`make bench-iqa`):
 * median wall time per score() call, after warm-up, at 512x512 and
 * 2048x2048, for bliinds_cpu on all cores and for bliinds_cuda when it is
 * built and can run here (its features first checked against the C ones:
 * 1e-4 relative, same score).  For the C implementation also the median of
 * each stage.  The machine's other load counts: run it on an idle one.
 *
 * Content: luma of the first 2048x2048 solar frame (from --dir, $SOLAR_DIR
 * or ../shared/solar) and its centre 512x512 crop; without the frames a
 * synthetic image (noise over gradients, flat patches), said so in the
 * output.
 *
 * The picture is page-locked (iqa_host_register), as the encoder's checker
 * locks the buffers it scores from, so bliinds_cuda uploads it by DMA
 * straight from there; --pageable leaves it as malloc gave it.
 *
 *   bliinds [--runs N] [--threads N] [--pool N] [--dir SOLAR_DIR] [--pageable]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/threads.h"
#include "common/timer.h"
#include "input/input.h"
#include "iqa/bliinds.h"
#include "iqa/bliinds_internal.h"
#include "iqa/metric.h"
#ifdef MPE_HAVE_CUDA
#include "iqa/bliinds_cuda_internal.h"
#endif

#define FULL 2048

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* FULL x FULL luma of solar_0.png (rgb2gray weights), or NULL. */
static uint8_t *load_solar(const char *dir)
{
    char path[4096];
    MpeInput *in = NULL;
    MpeFrame fr = { 0 };
    MpeError err = { "" };
    uint8_t *out = NULL;
    snprintf(path, sizeof(path), "%s/solar_0.png", dir);
    if (mpe_input_open(&in, path, 0, &err) < 0)
        return NULL;
    const MpeInputInfo *info = mpe_input_info(in);
    if (info->width == FULL && info->height == FULL && info->format == MPE_FRAME_RGB24 &&
        mpe_frame_alloc(&fr, info->format, FULL, FULL) == 0 && mpe_input_read(in, &fr, &err) == 1 &&
        (out = malloc((size_t)FULL * FULL)))
        for (int y = 0; y < FULL; y++)
            for (int x = 0; x < FULL; x++) {
                const uint8_t *p = fr.data[0] + (size_t)y * fr.stride[0] + 3 * x;
                out[(size_t)y * FULL + x] =
                    (uint8_t)floor(0.298936021293775 * p[0] + 0.587043074451121 * p[1] +
                                   0.114020904255103 * p[2] + 0.5);
            }
    mpe_frame_free(&fr);
    mpe_input_close(in);
    return out;
}

static uint8_t *synthetic(void)
{
    uint8_t *img = malloc((size_t)FULL * FULL);
    unsigned long long s = 88172645463325252ULL;
    if (!img)
        return NULL;
    for (int y = 0; y < FULL; y++)
        for (int x = 0; x < FULL; x++) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            int v = ((x / 64 + y / 64) % 5 == 0) ? 90 : (x + 2 * y) / 24 % 200 + (int)(s % 40);
            img[(size_t)y * FULL + x] = (uint8_t)v;
        }
    return img;
}

typedef struct Run {
    BliindsScore score;
    double median_ms, best_ms;
    BliindsStageTimes stages;   /* medians, where the implementation keeps them */
} Run;

static int bench(const BliindsImpl *impl, const uint8_t *img, int size, ptrdiff_t stride,
                 int threads, MpePool *pool, int runs, Run *out)
{
    BliindsOptions opt = { .threads = threads, .pool = pool };
    BliindsContext *ctx = NULL;
    MpeError err = { "" };
    int ret = -1, warm = 2, is_cpu = impl == &bliinds_cpu, has_stages = is_cpu;
#ifdef MPE_HAVE_CUDA
    has_stages |= impl == &bliinds_cuda;
#endif
    double *t = calloc((size_t)runs * 10, sizeof(double));

    if (!t || impl->open(&ctx, size, size, &opt, &err) < 0) {
        fprintf(stderr, "bliinds: %s %dx%d: %s\n", impl->name, size, size,
                t ? err.msg : "out of memory");
        goto done;
    }
    for (int r = -warm; r < runs; r++) {
        double t0 = mpe_time_ms();
        if (impl->score(ctx, img, stride, &out->score, &err) < 0) {
            fprintf(stderr, "bliinds: %s: %s\n", impl->name, err.msg);
            goto done;
        }
        if (r < 0)
            continue;
        t[r] = mpe_time_ms() - t0;
        if (has_stages) {
            BliindsStageTimes s;
            if (is_cpu)
                bliinds_cpu_stage_times(ctx, &s);
#ifdef MPE_HAVE_CUDA
            else
                bliinds_cuda_stage_times(ctx, &s);
#endif
            double v[9] = { s.load_ms,          s.blocks_ms[0],     s.blocks_ms[1],
                            s.blocks_ms[2],     s.downsample_ms[0], s.downsample_ms[1],
                            s.pool_ms,          s.predict_ms,       0 };
            for (int k = 0; k < 8; k++)
                t[(size_t)runs * (k + 1) + r] = v[k];
        }
    }
    out->best_ms = t[0];
    for (int r = 1; r < runs; r++)
        out->best_ms = fmin(out->best_ms, t[r]);
    out->median_ms = median(t, runs);
    if (has_stages) {
        double m[8];
        for (int k = 0; k < 8; k++)
            m[k] = median(t + (size_t)runs * (k + 1), runs);
        out->stages = (BliindsStageTimes){ .load_ms = m[0],
                                           .blocks_ms = { m[1], m[2], m[3] },
                                           .downsample_ms = { m[4], m[5] },
                                           .pool_ms = m[6],
                                           .predict_ms = m[7] };
    }
    ret = 0;
done:
    if (ctx)
        impl->close(ctx);
    free(t);
    return ret;
}

#ifdef MPE_HAVE_CUDA
/* The caller's share of a score when it submits and collects later. */
static void submit_share(const uint8_t *img, int size, ptrdiff_t stride, MpePool *pool)
{
    BliindsContext *ctx = NULL;
    BliindsOptions opt = { .pool = pool };
    BliindsScore sc;
    MpeError err = { "" };
    double best_submit = INFINITY, best_total = INFINITY;
    if (bliinds_cuda.open(&ctx, size, size, &opt, &err) < 0)
        return;
    for (int r = 0; r < 12; r++) {
        double a = mpe_time_ms();
        if (bliinds_cuda.score_submit(ctx, img, stride, &err) < 0)
            break;
        double b = mpe_time_ms();
        if (bliinds_cuda.score_collect(ctx, &sc, &err) < 0)
            break;
        if (r >= 2) {
            best_submit = fmin(best_submit, b - a);
            best_total = fmin(best_total, mpe_time_ms() - a);
        }
    }
    bliinds_cuda.close(ctx);
    printf("    score_submit on the host %.3f ms of %.3f ms to the score (best of 10)\n",
           best_submit, best_total);
}
#endif

static void print_run(const BliindsImpl *impl, int size, int threads, int runs, const Run *r)
{
    printf("%-13s %4dx%-4d threads %-3d median %9.3f ms/call  best %9.3f  (%d runs)  score %g\n",
           impl->name, size, size, threads ? threads : mpe_cpu_count(), r->median_ms, r->best_ms,
           runs, r->score.score);
    if (r->stages.load_ms > 0 || r->stages.blocks_ms[0] > 0) {
        const BliindsStageTimes *s = &r->stages;
        printf("    stages (median ms): load %.3f | blocks L1 %.3f  L2 %.3f  L3 %.3f | "
               "downsample L2 %.3f  L3 %.3f | pool %.3f | predict %.3f\n",
               s->load_ms, s->blocks_ms[0], s->blocks_ms[1], s->blocks_ms[2],
               s->downsample_ms[0], s->downsample_ms[1], s->pool_ms, s->predict_ms);
    }
}

/* Another implementation agrees with C: features 1e-4 relative, same score. */
static int agrees(const BliindsScore *got, const BliindsScore *ref)
{
    for (int i = 0; i < BLIINDS_NFEATURES; i++)
        if (fabs(got->features[i] - ref->features[i]) > 1e-4 * fabs(ref->features[i]) + 1e-6)
            return 0;
    return got->score == ref->score;
}

int main(int argc, char **argv)
{
    const char *dir = getenv("SOLAR_DIR");
    int runs = 0, threads = 0, status = 0, pool_threads = 0, pageable = 0, locked = 0;
    MpePool *pool = NULL;
    uint8_t *img;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--pool") && i + 1 < argc)
            pool_threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--pageable"))
            pageable = 1;
        else {
            fprintf(stderr, "usage: bliinds [--runs N] [--threads N] [--pool N] [--dir SOLAR_DIR] "
                            "[--pageable]\n");
            return 2;
        }
    }
    if (!dir || !*dir)
        dir = "../shared/solar";
    if (pool_threads > 0) {
        MpeError err;
        if (mpe_pool_open(&pool, pool_threads, &err) < 0) {
            fprintf(stderr, "bliinds: %s\n", err.msg);
            return 1;
        }
        printf("implementations get a pool of %d threads (bliinds_cuda stages its upload on it)\n",
               pool_threads);
    }
    if ((img = load_solar(dir))) {
        printf("content: luma of %s/solar_0.png (512x512: its centre)\n", dir);
    } else if ((img = synthetic())) {
        printf("content: synthetic (no 2048x2048 %s/solar_0.png)\n", dir);
    } else {
        fprintf(stderr, "bliinds: out of memory\n");
        return 1;
    }
    if (!pageable) {
        locked = iqa_host_register(img, (size_t)FULL * FULL);
        printf("picture: %s\n", locked ? "page-locked (the encoder's path)"
                                        : "pageable (page-locking failed or no CUDA)");
    }

    static const int sizes[2] = { 512, FULL };
    for (int si = 0; si < 2; si++) {
        int size = sizes[si], n = runs > 0 ? runs : size == FULL ? 9 : 31;
        const uint8_t *p = img + (size_t)(FULL - size) / 2 * FULL + (FULL - size) / 2;
        Run cpu, gpu;
        if (bench(&bliinds_cpu, p, size, FULL, threads, pool, n, &cpu) < 0) {
            status = 1;
            continue;
        }
        print_run(&bliinds_cpu, size, threads, n, &cpu);

        const IqaMetric *row = iqa_metric_find("bliinds_cuda");
        const BliindsImpl *cuda = row ? row->impl : NULL;
        char why[256] = "";
        if (!cuda) {
            printf("bliinds_cuda  not built\n");
        } else if (cuda->probe(why, sizeof(why)) < 0) {
            printf("bliinds_cuda  cannot run here: %s\n", why);
        } else if (bench(cuda, p, size, FULL, threads, pool, n, &gpu) < 0) {
            status = 1;
        } else if (!agrees(&gpu.score, &cpu.score)) {
            printf("bliinds_cuda  %dx%d: DISAGREES with bliinds_cpu (score %g vs %g); not timed\n",
                   size, size, gpu.score.score, cpu.score.score);
            status = 1;
        } else {
            print_run(cuda, size, threads, n, &gpu);
#ifdef MPE_HAVE_CUDA
            submit_share(p, size, FULL, pool);
#endif
        }
    }
    if (locked)
        iqa_host_unregister(img);
    free(img);
    mpe_pool_close(pool);
    return status;
}
