/* mad_testdata.h — what the MAD tests (C and CUDA) share: the reference
 * files (../shared/reference/mad or MPE_SHARED_DIR, tests/data/mad), their
 * csv rows, gray pictures as the original reads them, map dump files. */
#ifndef MPE_TESTS_MAD_TESTDATA_H
#define MPE_TESTS_MAD_TESTDATA_H

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

static inline int same_score(const MadScore *a, const MadScore *b)
{
    return a->mad == b->mad && a->d_detect == b->d_detect && a->d_appear == b->d_appear;
}

/* Identical pictures (in different buffers) score exactly 0; one changed
 * pixel does not.  Every implementation runs it at its own sizes. */
static inline void mad_check_identical_is_zero(TestCtx *t, const MadImpl *impl,
                                               const int (*sizes)[2], size_t n_sizes)
{
    TestRng rng = { 0x6964656e746963ULL };
    for (size_t si = 0; si < n_sizes; si++) {
        int w = sizes[si][0], h = sizes[si][1];
        uint8_t *a = malloc((size_t)w * h), *b = malloc((size_t)w * h);
        MadContext *ctx = NULL;
        MpeError err;
        MadScore s = { -1, -1, -1 };
        if (!a || !b) {
            CHECK(t, 0, "out of memory");
            free(a);
            free(b);
            return;
        }
        make_picture(a, w, h, &rng);
        memcpy(b, a, (size_t)w * h); /* a different buffer with the same pixels */
        int ret = impl->open(&ctx, w, h, NULL, &err);
        if (ret == 0)
            ret = mad_score_pair(impl, ctx, a, b, w, &s, &err);
        CHECK(t, ret == 0, "%dx%d: %s", w, h, err.msg);
        CHECK(t, s.mad == 0.0 && s.d_detect == 0.0 && s.d_appear == 0.0,
              "%dx%d: mad %g d_detect %g d_appear %g", w, h, s.mad, s.d_detect, s.d_appear);
        /* and one changed pixel is not 0 */
        b[(size_t)(h / 2) * w + w / 2] ^= 0x40;
        if (ret == 0)
            ret = impl->score(ctx, b, w, &s, &err);
        CHECK(t, ret == 0 && s.d_appear > 0.0, "%dx%d: one changed pixel gives d_appear %g", w,
              h, s.d_appear);
        impl->close(ctx);
        free(a);
        free(b);
    }
}

/* SPEC §7: a flat picture has only a DC term and every log-Gabor filter is
 * 0 at DC, so sigma is exactly 0 and skew = kurt = 0 in every block; two
 * flat pictures give d_appear = 0, and no visible error, MAD = 0.  Sizes
 * with large prime factors are where a transform's rounding would leave
 * noise at the other bins. */
static inline void mad_check_flat_pictures(TestCtx *t, const MadImpl *impl)
{
    static const int sizes[][2] = { { 128, 128 }, { 301, 187 }, { 373, 250 }, { 37, 41 },
                                    { 97, 89 } };
    static const int levels[][2] = { { 100, 120 }, { 0, 255 }, { 16, 16 } };
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        int w = sizes[si][0], h = sizes[si][1];
        uint8_t *a = malloc((size_t)w * h), *b = malloc((size_t)w * h);
        MadContext *ctx = NULL;
        MpeError err;
        int ret = a && b ? impl->open(&ctx, w, h, NULL, &err) : -ENOMEM;
        CHECK(t, ret == 0, "%dx%d: %s", w, h, ret == -ENOMEM ? "out of memory" : err.msg);
        for (size_t li = 0; ret == 0 && li < sizeof(levels) / sizeof(levels[0]); li++) {
            MadScore s = { -1, -1, -1 };
            memset(a, levels[li][0], (size_t)w * h);
            memset(b, levels[li][1], (size_t)w * h);
            ret = mad_score_pair(impl, ctx, a, b, w, &s, &err);
            CHECK(t, ret == 0 && s.d_appear == 0.0 && s.mad == 0.0,
                  "%dx%d flat %d vs %d: d_appear %g mad %g (%s)", w, h, levels[li][0],
                  levels[li][1], s.d_appear, s.mad, ret ? err.msg : "");
        }
        impl->close(ctx);
        free(a);
        free(b);
    }
}

/* The argument contract every implementation keeps: sizes and options
 * refused at open (the context pointer reset to NULL), set_reference
 * before score, NULL pictures and narrow strides refused, close(NULL) a
 * no-op, an unwritable dump directory an error from score. */
static inline void mad_check_call_errors(TestCtx *t, const MadImpl *impl)
{
    MadContext *ctx = (MadContext *)&ctx; /* must be reset to NULL on failure */
    MpeError err;
    MadScore s;
    uint8_t pic[64 * 64] = { 0 };
    int ret;

    ret = impl->open(&ctx, 33, 100, NULL, &err);
    CHECK(t, ret == -EINVAL && !ctx && strstr(err.msg, "33x100"), "33x100: %d '%s'", ret,
          err.msg);
    ret = impl->open(&ctx, 100, 33, NULL, &err);
    CHECK(t, ret == -EINVAL && !ctx, "100x33: %d", ret);
    ret = impl->open(&ctx, 0, 0, NULL, &err);
    CHECK(t, ret == -EINVAL && !ctx, "0x0: %d", ret);
    ret = impl->open(&ctx, MAD_MAX_SIZE + 1, 64, NULL, &err);
    CHECK(t, ret == -EINVAL && !ctx, "too wide: %d", ret);
    MadOptions bad = { .threads = -1 };
    ret = impl->open(&ctx, 64, 64, &bad, &err);
    CHECK(t, ret == -EINVAL && !ctx, "threads -1: %d", ret);
    ret = impl->open(NULL, 64, 64, NULL, &err);
    CHECK(t, ret == -EINVAL, "NULL context pointer: %d", ret);

    ret = impl->open(&ctx, 34, 34, NULL, &err); /* the smallest size runs */
    CHECK(t, ret == 0, "34x34: %s", err.msg);
    if (ret < 0)
        return;
    ret = impl->score(ctx, pic, 34, &s, &err);
    CHECK(t, ret == -EINVAL && strstr(err.msg, "set_reference"), "score first: %d '%s'", ret,
          err.msg);
    ret = impl->set_reference(ctx, NULL, 34, &err);
    CHECK(t, ret == -EINVAL, "NULL reference: %d", ret);
    ret = impl->set_reference(ctx, pic, 20, &err);
    CHECK(t, ret == -EINVAL && strstr(err.msg, "stride"), "narrow stride: %d '%s'", ret, err.msg);
    ret = impl->set_reference(ctx, pic, 34, &err);
    CHECK(t, ret == 0, "set_reference: %s", err.msg);
    ret = impl->score(ctx, NULL, 34, &s, &err);
    CHECK(t, ret == -EINVAL, "NULL picture: %d", ret);
    ret = impl->score(ctx, pic, 34, NULL, &err);
    CHECK(t, ret == -EINVAL, "NULL output: %d", ret);
    ret = impl->score(ctx, pic, 34, &s, &err);
    CHECK(t, ret == 0 && s.mad == 0.0, "black vs black at 34x34: %d, mad %g", ret, s.mad);
    ret = mad_score_pair(NULL, ctx, pic, pic, 34, &s, &err);
    CHECK(t, ret == -EINVAL, "NULL implementation: %d", ret);
    impl->close(ctx);
    impl->close(NULL);

    /* an unwritable dump directory is an error from score, not a crash */
    MadOptions dump = { .threads = 1, .dump_dir = "/nonexistent/mad-dump" };
    ctx = NULL;
    ret = impl->open(&ctx, 40, 40, &dump, &err);
    if (ret == 0)
        ret = mad_score_pair(impl, ctx, pic, pic, 40, &s, &err);
    CHECK(t, ret < 0 && strstr(err.msg, "/nonexistent/mad-dump"), "dump to nowhere: %d '%s'", ret,
          err.msg);
    impl->close(ctx);
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
