/* png.c — benchmark of the PNG decoders on files held in memory: libpng's
 * row reader, the fast path inflating with zlib, and (when built with it)
 * the fast path inflating with libdeflate.  One thread; the figure is the
 * thread's CPU time per frame, median over the runs.  Every mode's frames
 * are checked against libpng's before anything is timed.
 *
 *   png [--runs N] FILE.png ...      (make bench-png: the solar frames)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cpu.h"
#include "input/png_decode.h"

typedef struct Mode {
    const char *name;
    unsigned flags;
} Mode;

static const Mode kModes[] = {
    {"libpng", MPE_PNG_LIBPNG_ONLY},
    {"fast, zlib", MPE_PNG_FAST_ONLY | MPE_PNG_ZLIB_STREAM},
    {"fast, libdeflate", MPE_PNG_FAST_ONLY},
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int load(const char *path, uint8_t **data, size_t *size)
{
    FILE *f = fopen(path, "rb");
    long n;
    if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) != 0 ||
        !(*data = malloc((size_t)n)) || fread(*data, 1, (size_t)n, f) != (size_t)n) {
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    *size = (size_t)n;
    return 0;
}

static int frames_equal(const MpeFrame *a, const MpeFrame *b)
{
    for (int y = 0; y < a->height; y++)
        if (memcmp(a->data[0] + (size_t)y * a->stride[0], b->data[0] + (size_t)y * b->stride[0],
                   (size_t)a->width * 3) != 0)
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    int runs = 5, first = 1, nfiles, nmodes = mpe_png_have_libdeflate() ? 3 : 2, w, h;
    unsigned cpu = mpe_cpu_flags();
    uint8_t **data;
    size_t *size;
    MpeFrame ref, out;
    MpePngScratch *scratch;
    MpeError err;

    if (argc > 2 && strcmp(argv[1], "--runs") == 0) {
        runs = atoi(argv[2]);
        first = 3;
    }
    nfiles = argc - first;
    if (nfiles < 1 || runs < 1) {
        fprintf(stderr, "usage: %s [--runs N] FILE.png ...\n", argv[0]);
        return 2;
    }
    data = calloc((size_t)nfiles, sizeof(*data));
    size = calloc((size_t)nfiles, sizeof(*size));
    if (!data || !size || mpe_png_scratch_open(&scratch) < 0)
        return 1;
    for (int i = 0; i < nfiles; i++) {
        if (load(argv[first + i], &data[i], &size[i]) < 0) {
            fprintf(stderr, "%s: cannot read\n", argv[first + i]);
            return 1;
        }
    }
    if (mpe_png_decode(NULL, &w, &h, data[0], size[0], argv[first], 0, 0, &err) < 0 ||
        mpe_frame_alloc(&ref, MPE_FRAME_RGB24, w, h) < 0 ||
        mpe_frame_alloc(&out, MPE_FRAME_RGB24, w, h) < 0) {
        fprintf(stderr, "%s: %s\n", argv[first], err.msg);
        return 1;
    }
    for (int i = 0; i < nfiles; i++) {
        for (int m = 0; m < nmodes; m++) {
            MpeFrame *f = m ? &out : &ref;
            int ret = mpe_png_decode_with(scratch, f, NULL, NULL, data[i], size[i],
                                          argv[first + i], kModes[m].flags, cpu, &err);
            if (ret != 0) {
                fprintf(stderr, "%s (%s): %s\n", argv[first + i], kModes[m].name,
                        ret < 0 && err.msg[0] ? err.msg : "not the first file's size or layout");
                return 1;
            }
            if (m && !frames_equal(&ref, &out)) {
                fprintf(stderr, "%s: %s differs from libpng\n", argv[first + i], kModes[m].name);
                return 1;
            }
        }
    }
    printf("%dx%d, %d files, %d runs: CPU ms per frame, one thread (median of runs)\n", w, h,
           nfiles, runs);
    for (int m = 0; m < nmodes; m++) {
        double *t = malloc((size_t)runs * sizeof(*t));
        if (!t)
            return 1;
        for (int r = 0; r < runs; r++) {
            double t0 = cpu_ms();
            for (int i = 0; i < nfiles; i++)
                mpe_png_decode_with(scratch, &out, NULL, NULL, data[i], size[i], "", kModes[m].flags,
                                    cpu, &err);
            t[r] = (cpu_ms() - t0) / nfiles;
        }
        qsort(t, (size_t)runs, sizeof(*t), cmp_double);
        printf("  %-18s %7.2f (best %.2f)\n", kModes[m].name, t[runs / 2], t[0]);
        free(t);
    }
    for (int i = 0; i < nfiles; i++)
        free(data[i]);
    free(data);
    free(size);
    mpe_frame_free(&ref);
    mpe_frame_free(&out);
    mpe_png_scratch_close(scratch);
    return 0;
}
