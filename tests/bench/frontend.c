/* frontend.c — benchmark of the front-end backends on two 2048x2048 solar
 * frames: upload, fused conversion, search at R = 16, 32, 64 and the
 * hierarchical search (reach 127, window 4 = the default, and 16), read-back.
 * Results are checked against the cpu backend before anything is timed.
 * Device times come from the backend's own events (gpu_frontend_timings);
 * "wall" is the host's view of submit .. wait for one frame pair.
 *
 *   frontend [--backend NAME] [--device N] [--runs N] [--dir SOLAR_DIR]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "input/input.h"
#include "common/cpu.h"
#include "gpu/frontend.h"
#include "common/timer.h"

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

typedef struct Pair {
    MpePicture pic;
    GpuMotion *mv;
} Pair;

/* frame 1 searched against frame 0 (reach > 0: hierarchically); planes and
 * vectors of frame 1 out */
static int run_pair(GpuFrontend *fe, const MpeFrame *f0, const MpeFrame *f1, int range, int reach,
                    Pair *out, MpeError *err)
{
    int ret;
    if ((ret = gpu_frontend_submit(fe, 0, f0, err)) < 0 || (ret = gpu_frontend_submit(fe, 1, f1, err)) < 0 ||
        (ret = reach ? gpu_frontend_search_hier(fe, 1, 0, range, reach, err)
                     : gpu_frontend_search(fe, 1, 0, range, err)) < 0 ||
        (ret = gpu_frontend_wait(fe, 1, err)) < 0)
        return ret;
    return out ? gpu_frontend_download(fe, 1, &out->pic, out->mv, err) : 0;
}

static int same(const Pair *a, const Pair *b)
{
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < a->pic.plane_h[c]; y++)
            if (memcmp(a->pic.plane[c] + y * a->pic.stride[c], b->pic.plane[c] + y * b->pic.stride[c],
                       (size_t)a->pic.plane_w[c]))
                return 0;
    size_t n = (size_t)a->pic.mb_width * a->pic.mb_height;
    for (size_t i = 0; i < n; i++)
        if (a->mv[i].dx != b->mv[i].dx || a->mv[i].dy != b->mv[i].dy || a->mv[i].sad != b->mv[i].sad ||
            a->mv[i].sad0 != b->mv[i].sad0)
            return 0;
    return 1;
}

static int bench_backend(const char *b, int device, const MpeFrame *f0, const MpeFrame *f1,
                         int runs)
{
    /* R, reach (0: the exhaustive search) */
    static const int modes[][2] = { { 16, 0 }, { 32, 0 }, { 64, 0 }, { 4, 127 }, { 16, 127 } };
    GpuFrontend *ctx = NULL, *ref_ctx = NULL, *hier_ctx = NULL, *hier_ref_ctx = NULL;
    GpuConfig cfg = { .width = f0->width, .height = f0->height, .slots = 2, .device = device,
                      .cpu_flags = mpe_cpu_flags() };
    GpuConfig hier_cfg = cfg;
    MpeError err = { "" };
    Pair ref, got;
    int ret = 1, has_timers = 0;
    size_t n = (size_t)((f0->width + 15) / 16) * ((f0->height + 15) / 16);
    double *t_up = calloc((size_t)runs, sizeof(double)), *t_cv = calloc((size_t)runs, sizeof(double));
    double *t_se = calloc((size_t)runs, sizeof(double)), *t_rb = calloc((size_t)runs, sizeof(double));
    double *t_wall = calloc((size_t)runs, sizeof(double));

    if (!t_up || !t_cv || !t_se || !t_rb || !t_wall || mpe_picture_alloc(&ref.pic, f0->width, f0->height) < 0 ||
        mpe_picture_alloc(&got.pic, f0->width, f0->height) < 0 || !(ref.mv = malloc(n * sizeof(GpuMotion))) ||
        !(got.mv = malloc(n * sizeof(GpuMotion)))) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    hier_cfg.pyramid = 1;
    if (gpu_frontend_open(&ctx, b, &cfg, NULL, &err) < 0 ||
        gpu_frontend_open(&ref_ctx, "cpu", &cfg, NULL, &err) < 0 ||
        gpu_frontend_open(&hier_ctx, b, &hier_cfg, NULL, &err) < 0 ||
        gpu_frontend_open(&hier_ref_ctx, "cpu", &hier_cfg, NULL, &err) < 0) {
        fprintf(stderr, "%s: %s\n", b, err.msg);
        goto done;
    }
    printf("\nbackend %s, %dx%d, %d timed runs after 3 warm-ups (median ms)\n", b, f0->width,
           f0->height, runs);
    printf("%11s %9s %9s %9s %9s %9s %s\n", "R", "upload", "convert", "search", "readback", "wall",
           "vs cpu");
    for (size_t k = 0; k < sizeof(modes) / sizeof(modes[0]); k++) {
        const int r = modes[k][0], reach = modes[k][1];
        GpuFrontend *fe = reach ? hier_ctx : ctx, *fe_ref = reach ? hier_ref_ctx : ref_ctx;
        char label[32];
        if (reach)
            snprintf(label, sizeof(label), "hier %d/%d", r, reach);
        else
            snprintf(label, sizeof(label), "%d", r);
        /* correctness first: the cpu backend's answer for this range */
        if (run_pair(fe_ref, f0, f1, r, reach, &ref, &err) < 0 ||
            run_pair(fe, f0, f1, r, reach, &got, &err) < 0) {
            fprintf(stderr, "%s: %s\n", b, err.msg);
            goto done;
        }
        if (!same(&ref, &got)) {
            printf("%11s   results differ from the cpu backend: not timed\n", label);
            goto done;
        }
        for (int i = -3; i < runs; i++) {
            GpuTimings t = { 0, 0, 0, 0 };
            double t0 = mpe_time_ms();
            if (run_pair(fe, f0, f1, r, reach, NULL, &err) < 0) {
                fprintf(stderr, "%s: %s\n", b, err.msg);
                goto done;
            }
            double wall = mpe_time_ms() - t0;
            if (i < 0)
                continue;
            has_timers = gpu_frontend_timings(fe, 1, &t) == 0;
            t_up[i] = t.upload_ms;
            t_cv[i] = t.convert_ms;
            t_se[i] = t.search_ms;
            t_rb[i] = t.readback_ms;
            t_wall[i] = wall;
        }
        if (has_timers)
            printf("%11s %9.3f %9.3f %9.3f %9.3f %9.3f identical\n", label, median(t_up, runs),
                   median(t_cv, runs), median(t_se, runs), median(t_rb, runs), median(t_wall, runs));
        else
            printf("%11s %9s %9s %9s %9s %9.3f identical\n", label, "-", "-", "-", "-",
                   median(t_wall, runs));
        fflush(stdout);
    }
    /* The encoder's pattern: submit frame n, search it against n-1, then
     * download frame n-1, so the upload and conversion of n run while n-1
     * is still being searched or read back.  Per frame: the host's time in
     * submit (its copy into pinned memory), in download (waiting for the
     * device, then copying out), and the whole. */
    {
        const int frames = 4 * runs;
        double t_sub = 0, t_dl = 0, t0 = mpe_time_ms();
        for (int n = 0; n <= frames; n++) {
            double a = mpe_time_ms();
            if (n < frames && (gpu_frontend_submit(ctx, n % 2, n & 1 ? f1 : f0, &err) < 0 ||
                               (n > 0 && gpu_frontend_search(ctx, n % 2, (n - 1) % 2, 16, &err) < 0))) {
                fprintf(stderr, "%s: %s\n", b, err.msg);
                goto done;
            }
            double c = mpe_time_ms();
            if (n > 0 &&
                gpu_frontend_download(ctx, (n - 1) % 2, &got.pic, n > 1 ? got.mv : NULL, &err) < 0) {
                fprintf(stderr, "%s: %s\n", b, err.msg);
                goto done;
            }
            t_sub += c - a;
            t_dl += mpe_time_ms() - c;
        }
        double per = (mpe_time_ms() - t0) / frames;
        printf("pipelined, R 16, %d frames: %.3f ms/frame (%.0f fps); host per frame: submit %.3f, "
               "download %.3f\n", frames, per, 1e3 / per, t_sub / frames, t_dl / frames);
    }
    ret = 0;
done:
    gpu_frontend_close(ctx);
    gpu_frontend_close(ref_ctx);
    gpu_frontend_close(hier_ctx);
    gpu_frontend_close(hier_ref_ctx);
    mpe_picture_free(&ref.pic);
    mpe_picture_free(&got.pic);
    free(ref.mv);
    free(got.mv);
    free(t_up);
    free(t_cv);
    free(t_se);
    free(t_rb);
    free(t_wall);
    return ret;
}

int main(int argc, char **argv)
{
    const char *only = NULL, *dir = getenv("SOLAR_DIR");
    int device = -1, runs = 20, failed = 0, ran = 0;
    char spec[1024];
    MpeInput *in = NULL;
    MpeError err;
    MpeFrame f0, f1;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--backend"))
            only = argv[i + 1];
        else if (!strcmp(argv[i], "--device"))
            device = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--runs"))
            runs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--dir"))
            dir = argv[i + 1];
    }
    if (runs < 1)
        runs = 1;
    snprintf(spec, sizeof(spec), "%s/solar_%%d.png", dir ? dir : "../shared/solar");
    if (mpe_input_open(&in, spec, 0, &err) < 0) {
        printf("SKIPPED: no solar clip (%s)\n", err.msg);
        return 0;
    }
    const MpeInputInfo *info = mpe_input_info(in);
    if (mpe_frame_alloc(&f0, info->format, info->width, info->height) < 0 ||
        mpe_frame_alloc(&f1, info->format, info->width, info->height) < 0 ||
        mpe_input_read(in, &f0, &err) != 1 || mpe_input_read(in, &f1, &err) != 1) {
        fprintf(stderr, "cannot read two solar frames: %s\n", err.msg);
        return 1;
    }
    for (const GpuBackend *const *b = gpu_backend_list(); *b; b++) {
        char why[256] = "";
        const char *name = gpu_backend_name(*b);
        if (only ? strcmp(name, only) != 0 : !strcmp(name, "cpu"))
            continue;
        if (gpu_backend_probe(*b, 0, why, sizeof(why)) < 0) {
            printf("backend %s: SKIPPED (%s)\n", name, why);
            continue;
        }
        printf("backend %s: %s\n", name, why);
        failed |= bench_backend(name, device, &f0, &f1, runs);
        ran++;
    }
    if (!ran)
        printf("no backend ran\n");
    mpe_frame_free(&f0);
    mpe_frame_free(&f1);
    mpe_input_close(in);
    return failed;
}
