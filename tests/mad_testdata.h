/* mad_testdata.h — what the MAD tests (C and CUDA) share: the reference
 * files (../shared/reference/mad or MPE_SHARED_DIR, tests/data/mad), their
 * csv rows, gray pictures as the original reads them, map dump files. */
#ifndef MPE_TESTS_MAD_TESTDATA_H
#define MPE_TESTS_MAD_TESTDATA_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "encoder/input.h"
#include "iqa/mad.h"
#include "tests/test.h"

static const char *const map_files[] = { "mad_visibility", "mad_lmse", "mad_detect",
                                         "mad_appearance" };
#define NMAPS (sizeof(map_files) / sizeof(map_files[0]))

static inline const char *shared_mad_dir(char *buf, size_t size)
{
    const char *root = getenv("MPE_SHARED_DIR");
    struct stat st;
    snprintf(buf, size, "%s/reference/mad", root && *root ? root : "../shared");
    return stat(buf, &st) == 0 && S_ISDIR(st.st_mode) ? buf : NULL;
}

/* 8-bit gray from a PNG: channel 1 of a gray file (the reader replicates
 * gray into R = G = B), or the original's rgb2gray of an RGB one. */
static inline uint8_t *load_gray(const char *path, int channels, int *w, int *h, MpeError *err)
{
    MpeInput *in = NULL;
    MpeFrame fr = { 0 };
    uint8_t *img = NULL;
    if (mpe_input_open(&in, path, 0, err) < 0)
        return NULL;
    const MpeInputInfo *info = mpe_input_info(in);
    *w = info->width;
    *h = info->height;
    if (mpe_frame_alloc(&fr, info->format, *w, *h) < 0 || mpe_input_read(in, &fr, err) != 1 ||
        !(img = malloc((size_t)*w * *h)))
        goto done;
    if (channels == 3) {
        mad_rgb_to_gray(img, *w, fr.data[0], fr.stride[0], *w, *h);
    } else {
        for (int y = 0; y < *h; y++)
            for (int x = 0; x < *w; x++)
                img[(size_t)y * *w + x] = fr.data[0][(size_t)y * fr.stride[0] + 3 * x];
    }
done:
    mpe_frame_free(&fr);
    mpe_input_close(in);
    return img;
}

/* Raw little-endian float64 file of exactly n values, or NULL. */
static inline double *read_f64(const char *path, size_t n)
{
    FILE *f = fopen(path, "rb");
    unsigned char *raw = malloc(n * 8);
    double *v = malloc(n * sizeof(*v));
    int ok = f && raw && v && fread(raw, 8, n, f) == n && fgetc(f) == EOF;
    if (f)
        fclose(f);
    if (ok) {
        for (size_t i = 0; i < n; i++) {
            uint64_t u = 0;
            for (int b = 7; b >= 0; b--)
                u = u << 8 | raw[8 * i + b];
            memcpy(&v[i], &u, 8);
        }
    }
    free(raw);
    if (!ok) {
        free(v);
        return NULL;
    }
    return v;
}

static inline void remove_tmpdir(const char *dir)
{
    char path[4200];
    for (size_t i = 0; i < NMAPS; i++) {
        snprintf(path, sizeof(path), "%s/%s_f64.bin", dir, map_files[i]);
        remove(path);
        snprintf(path, sizeof(path), "%s/%s.png", dir, map_files[i]);
        remove(path);
    }
    rmdir(dir);
}

/* 0 when equal within tol relative; where the reference is exactly 0 the
 * result must be exactly 0 too. */
static inline double rel_err(double got, double want)
{
    if (want == 0.0)
        return got == 0.0 ? 0.0 : INFINITY;
    return fabs(got - want) / fabs(want);
}

/* Dark at the top (blocks there fall below the visibility threshold
 * G = 0.5, about gray 49), textured on the left (noise is masked there),
 * smooth on the right (noise is visible). */
static inline void make_picture(uint8_t *p, int w, int h, TestRng *rng)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double v = y < h / 3 ? 25.0 : 110.0 + (x < w / 2 ? 40.0 * sin(x * 0.3 + y * 0.1) : 0.0);
            v += (int)(test_rand(rng) % 5) - 2;
            p[(size_t)y * w + x] = (uint8_t)MPE_CLAMP(v, 0.0, 255.0);
        }
}

/* A fresh directory $TMPDIR/PREFIX_XXXXXX for map dumps. */
static inline int make_tmpdir_named(char *dir, size_t size, const char *prefix)
{
    const char *base = getenv("TMPDIR");
    snprintf(dir, size, "%s/%s_XXXXXX", base && *base ? base : "/tmp", prefix);
    return mkdtemp(dir) ? 0 : -1;
}

/* One row of reference.csv: the pair, its size and the original's scores. */
typedef struct RefRow {
    char ref[128], dst[128];
    int h, w, channels;
    MadScore want;
} RefRow;

static inline int parse_row(RefRow *r, char *line)
{
    char *f[12];
    int n = 0;
    for (char *p = line; n < 12;) {
        f[n++] = p;
        p = strchr(p, ',');
        if (!p)
            break;
        *p++ = '\0';
    }
    if (n < 9 || strlen(f[0]) >= sizeof(r->ref) || strlen(f[1]) >= sizeof(r->dst))
        return -1;
    strcpy(r->ref, f[0]);
    strcpy(r->dst, f[1]);
    r->h = atoi(f[2]);
    r->w = atoi(f[3]);
    r->channels = atoi(f[4]);
    r->want.d_detect = strtod(f[5], NULL);
    r->want.d_appear = strtod(f[6], NULL);
    r->want.mad = strtod(f[8], NULL);
    return 0;
}

/* What a test does with one scored pair of reference.csv. */
typedef void (*MadPairCheck)(TestCtx *t, void *opaque, const RefRow *r, const MadScore *s,
                             const uint8_t *ref, const uint8_t *dst, int w, int h);

/* Scores every pair of csv (images in img_dir) with impl and hands each
 * score to check; one context per size and set_reference once per
 * reference file, as the encoder uses them.  Returns the pairs scored. */
static inline int mad_score_reference_csv(TestCtx *t, const MadImpl *impl, const char *csv,
                                          const char *img_dir, MadPairCheck check, void *opaque)
{
    FILE *f = fopen(csv, "r");
    char line[1024], path[4200], cur_ref[128] = "";
    MadContext *ctx = NULL;
    uint8_t *ref = NULL;
    int cw = 0, ch = 0, cchan = 0, pairs = 0;
    MpeError err;

    CHECK(t, f != NULL, "cannot open %s", csv);
    if (!f)
        return 0;
    if (!fgets(line, sizeof(line), f)) /* header */
        line[0] = '\0';
    while (fgets(line, sizeof(line), f)) {
        RefRow r;
        int w = 0, h = 0;
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0])
            continue;
        if (parse_row(&r, line) < 0) {
            CHECK(t, 0, "%s: bad row '%s'", csv, line);
            continue;
        }
        if (!ctx || r.w != cw || r.h != ch) {
            impl->close(ctx);
            ctx = NULL;
            cur_ref[0] = '\0';
            int ret = impl->open(&ctx, r.w, r.h, NULL, &err);
            CHECK(t, ret == 0, "open %dx%d: %s", r.w, r.h, err.msg);
            if (ret < 0)
                continue;
            cw = r.w;
            ch = r.h;
        }
        if (strcmp(cur_ref, r.ref) != 0 || cchan != r.channels) {
            free(ref);
            snprintf(path, sizeof(path), "%s/%s", img_dir, r.ref);
            ref = load_gray(path, r.channels, &w, &h, &err);
            CHECK(t, ref && w == r.w && h == r.h, "%s: %s", path, ref ? "size" : err.msg);
            if (!ref || w != r.w || h != r.h) {
                cur_ref[0] = '\0';
                continue;
            }
            int ret = impl->set_reference(ctx, ref, w, &err);
            CHECK(t, ret == 0, "set_reference %s: %s", r.ref, err.msg);
            strcpy(cur_ref, r.ref);
            cchan = r.channels;
        }
        snprintf(path, sizeof(path), "%s/%s", img_dir, r.dst);
        uint8_t *dst = load_gray(path, r.channels, &w, &h, &err);
        CHECK(t, dst && w == r.w && h == r.h, "%s: %s", path, dst ? "size" : err.msg);
        if (dst && w == r.w && h == r.h) {
            MadScore s;
            int ret = impl->score(ctx, dst, w, &s, &err);
            CHECK(t, ret == 0, "score %s: %s", r.dst, err.msg);
            if (ret == 0) {
                check(t, opaque, &r, &s, ref, dst, w, h);
                pairs++;
            }
        }
        free(dst);
    }
    fclose(f);
    free(ref);
    impl->close(ctx);
    return pairs;
}

#endif
