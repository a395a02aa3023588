/* test_input.c — the PNG and YUV4MPEG2 readers (input/input.c) and the
 * Y4M recon writer (cli/recon.c).
 *
 * Every fixture is written by this program into a fresh mkdtemp directory
 * under /tmp, which is removed at the end: PNGs through libpng's writer in
 * every colour type and bit depth with known sample values, Y4M streams
 * byte by byte.  The "-" (stdin) case is exercised by pointing fd 0 at a
 * pipe that a forked child fills, so the reader meets a real unseekable
 * stream; the lead's end-to-end tests pipe into the CLI as well. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <png.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "common/picture.h"
#include "input/input.h"
#include "cli/recon.h"
#include "tests/test.h"

static char g_dir[64];
/* Reader threads for inputs opened through input_open(): 0 in the first
 * pass (synchronous reading), then the same tests run again reading ahead,
 * which must not change a frame, a name or a message. */
static int g_ahead;

/* ------------------------------------------------------------- helpers */

/* A ring of path buffers so a few paths can be live at once (the last 32
 * returned stay valid). */
static const char *tpath(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *tpath(const char *fmt, ...)
{
    static char ring[32][512];
    static int next;
    char *buf = ring[next++ & 31];
    char name[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    snprintf(buf, sizeof(ring[0]), "%s/%s", g_dir, name);
    return buf;
}

static int write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    if (len && fwrite(data, 1, len, f) != len) {
        fclose(f);
        return -1;
    }
    return fclose(f) == 0 ? 0 : -1;
}

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0, r;

    if (!f)
        return NULL;
    for (;;) {
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap = cap ? 2 * cap : 65536);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        if ((r = fread(buf + n, 1, cap - n, f)) == 0)
            break;
        n += r;
    }
    fclose(f);
    *len = n;
    return buf;
}

static void rm_rf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *de;
        if (d) {
            while ((de = readdir(d))) {
                char child[1024];
                if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                    continue;
                snprintf(child, sizeof(child), "%s/%s", path, de->d_name);
                rm_rf(child);
            }
            closedir(d);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

static int contains(const char *hay, const char *needle)
{
    return strstr(hay, needle) != NULL;
}

/* Checks that an error message names the file first and has every key word.
 * With TEST_INPUT_VERBOSE set in the environment, prints each message. */
#define CHECK_MSG(t, err, file, ...)                                                   \
    do {                                                                               \
        const char *keys_[] = {__VA_ARGS__};                                           \
        CHECK(t, strncmp((err).msg, (file), strlen(file)) == 0 &&                      \
                     (err).msg[strlen(file)] == ':',                                   \
              "message does not start with '%s:': \"%s\"", (file), (err).msg);         \
        for (size_t k_ = 0; k_ < sizeof(keys_) / sizeof(keys_[0]); k_++)               \
            CHECK(t, contains((err).msg, keys_[k_]), "message lacks \"%s\": \"%s\"",    \
                  keys_[k_], (err).msg);                                               \
        CHECK(t, !strchr((err).msg, '\n'), "message has a newline: \"%s\"", (err).msg); \
        if (getenv("TEST_INPUT_VERBOSE"))                                              \
            printf("     message: %s\n", (err).msg);                                  \
    } while (0)

static int input_open(MpeInput **in, const char *spec, int start, MpeError *err)
{
    int ret = mpe_input_open(in, spec, start, err);
    if (ret == 0 && g_ahead > 0 && (ret = mpe_input_start_ahead(*in, g_ahead, err)) < 0) {
        mpe_input_close(*in);
        *in = NULL;
    }
    return ret;
}

/* ------------------------------------------------------------ PNG fixtures */

typedef struct Fixture {
    int w, h, color_type, depth, interlace;
    uint16_t *s;              /* samples, channels per pixel, row-major */
    png_color pal[256];
    int npal;
    png_byte trans[256];      /* palette tRNS */
    int ntrans;
    png_color_16 trans_color; /* gray/RGB tRNS */
    int has_trans_color;
    double gamma;             /* gAMA when non-zero */
} Fixture;

static int channels_of(int color_type)
{
    switch (color_type) {
    case PNG_COLOR_TYPE_GRAY: return 1;
    case PNG_COLOR_TYPE_GRAY_ALPHA: return 2;
    case PNG_COLOR_TYPE_RGB: return 3;
    case PNG_COLOR_TYPE_RGB_ALPHA: return 4;
    default: return 1; /* palette */
    }
}

/* Random samples; 16-bit images also get the rounding boundaries. */
static void fixture_init(Fixture *fx, int w, int h, int color_type, int depth, int interlace,
                         unsigned long long seed)
{
    TestRng rng = {seed * 0x9E3779B97F4A7C15ULL + 1};
    int nch = channels_of(color_type);
    size_t n = (size_t)w * h * nch;
    static const uint16_t edge16[] = {0, 1, 127, 128, 129, 256, 257, 258, 385, 386, 32767,
                                      32768, 32895, 32896, 65277, 65278, 65406, 65407,
                                      65534, 65535};

    memset(fx, 0, sizeof(*fx));
    fx->w = w;
    fx->h = h;
    fx->color_type = color_type;
    fx->depth = depth;
    fx->interlace = interlace;
    fx->s = malloc(n * sizeof(*fx->s));
    if (color_type == PNG_COLOR_TYPE_PALETTE) {
        fx->npal = 1 << depth;
        if (fx->npal > 256)
            fx->npal = 256;
        for (int i = 0; i < fx->npal; i++) {
            fx->pal[i].red = (png_byte)test_rand(&rng);
            fx->pal[i].green = (png_byte)test_rand(&rng);
            fx->pal[i].blue = (png_byte)test_rand(&rng);
        }
        for (size_t i = 0; i < n; i++)
            fx->s[i] = (uint16_t)(test_rand(&rng) % (unsigned)fx->npal);
    } else {
        unsigned mask = depth == 16 ? 0xFFFF : (1u << depth) - 1;
        for (size_t i = 0; i < n; i++)
            fx->s[i] = (uint16_t)(test_rand(&rng) & mask);
        if (depth == 16)
            for (size_t i = 0; i < n && i < sizeof(edge16) / sizeof(edge16[0]); i++)
                fx->s[i] = edge16[i];
    }
}

static void fixture_free(Fixture *fx)
{
    free(fx->s);
    fx->s = NULL;
}

static uint8_t to8(unsigned v, int depth)
{
    if (depth == 16)
        return (uint8_t)((v * 255u + 32767u) / 65535u);
    if (depth == 8)
        return (uint8_t)v;
    return (uint8_t)(v * 255u / ((1u << depth) - 1)); /* 1, 2, 4 bits: exact multiples */
}

static void expect_px(const Fixture *fx, int x, int y, uint8_t rgb[3])
{
    int nch = channels_of(fx->color_type);
    const uint16_t *s = fx->s + ((size_t)y * fx->w + x) * nch;

    if (fx->color_type == PNG_COLOR_TYPE_PALETTE) {
        rgb[0] = fx->pal[s[0]].red;
        rgb[1] = fx->pal[s[0]].green;
        rgb[2] = fx->pal[s[0]].blue;
    } else if (nch <= 2) {
        rgb[0] = rgb[1] = rgb[2] = to8(s[0], fx->depth);
    } else {
        for (int c = 0; c < 3; c++)
            rgb[c] = to8(s[c], fx->depth);
    }
}

static int write_png(const char *path, const Fixture *fx)
{
    int nch = channels_of(fx->color_type);
    int bps = fx->depth == 16 ? 2 : 1; /* bytes per sample; <8 bits are packed by libpng */
    size_t rowbytes = (size_t)fx->w * nch * bps;
    FILE *f = fopen(path, "wb");
    uint8_t *buf = malloc(rowbytes * fx->h);
    png_bytep *rows = malloc(fx->h * sizeof(*rows));
    png_structp png = NULL;
    png_infop info = NULL;

    if (!f || !buf || !rows)
        goto fail_early;
    for (int y = 0; y < fx->h; y++) {
        rows[y] = buf + rowbytes * y;
        for (int i = 0; i < fx->w * nch; i++) {
            uint16_t v = fx->s[(size_t)y * fx->w * nch + i];
            if (bps == 2) {
                rows[y][2 * i] = (uint8_t)(v >> 8);
                rows[y][2 * i + 1] = (uint8_t)v;
            } else {
                rows[y][i] = (uint8_t)v;
            }
        }
    }
    png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    info = png ? png_create_info_struct(png) : NULL;
    if (!info)
        goto fail_early;
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        goto fail_early;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, fx->w, fx->h, fx->depth, fx->color_type,
                 fx->interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (fx->npal)
        png_set_PLTE(png, info, fx->pal, fx->npal);
    if (fx->ntrans)
        png_set_tRNS(png, info, fx->trans, fx->ntrans, NULL);
    else if (fx->has_trans_color)
        png_set_tRNS(png, info, NULL, 0, &fx->trans_color);
    if (fx->gamma > 0)
        png_set_gAMA(png, info, fx->gamma);
    png_write_info(png, info);
    if (fx->depth < 8)
        png_set_packing(png);
    png_write_image(png, rows);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(rows);
    free(buf);
    return fclose(f) == 0 ? 0 : -1;

fail_early:
    if (png)
        png_destroy_write_struct(&png, info ? &info : NULL);
    if (f)
        fclose(f);
    free(rows);
    free(buf);
    return -1;
}

/* An RGB8 PNG whose every pixel is (v, v+1, v+2). */
static int write_flat_png(const char *path, int w, int h, int v)
{
    Fixture fx;
    int ret;
    fixture_init(&fx, w, h, PNG_COLOR_TYPE_RGB, 8, 0, 1);
    for (size_t i = 0; i < (size_t)w * h; i++)
        for (int c = 0; c < 3; c++)
            fx.s[i * 3 + c] = (uint16_t)((v + c) & 255);
    ret = write_png(path, &fx);
    fixture_free(&fx);
    return ret;
}

/* Compares a decoded RGB24 frame with the fixture; returns mismatches. */
static int compare_rgb(TestCtx *t, const MpeFrame *fr, const Fixture *fx)
{
    int bad = 0;
    for (int y = 0; y < fx->h; y++)
        for (int x = 0; x < fx->w; x++) {
            uint8_t e[3];
            const uint8_t *g = fr->data[0] + (size_t)y * fr->stride[0] + 3 * x;
            expect_px(fx, x, y, e);
            if (memcmp(e, g, 3) != 0) {
                if (bad < 3) {
                    const uint16_t *s = fx->s + ((size_t)y * fx->w + x) * channels_of(fx->color_type);
                    CHECK(t, 0, "pixel (%d,%d) sample0=%u: got %u,%u,%u want %u,%u,%u", x, y,
                          s[0], g[0], g[1], g[2], e[0], e[1], e[2]);
                }
                bad++;
            }
        }
    return bad;
}

/* Writes the fixture, decodes it as a single-file input and compares. */
static void check_png(TestCtx *t, const char *name, Fixture *fx)
{
    const char *path = tpath("%s.png", name);
    MpeInput *in = NULL;
    MpeError err = {{0}};
    MpeFrame fr;
    const MpeInputInfo *info;
    int ret;

    CHECK(t, write_png(path, fx) == 0, "could not write %s", path);
    ret = input_open(&in, path, 0, &err);
    CHECK(t, ret == 0, "open: %d %s", ret, err.msg);
    if (ret)
        return;
    info = mpe_input_info(in);
    CHECK(t, info->format == MPE_FRAME_RGB24 && info->width == fx->w && info->height == fx->h &&
                 info->fps_num == 0 && info->fps_den == 0,
          "info: fmt %d %dx%d fps %d/%d", info->format, info->width, info->height,
          info->fps_num, info->fps_den);
    CHECK(t, !strcmp(mpe_input_current_name(in), path), "current name %s",
          mpe_input_current_name(in));
    CHECK(t, mpe_frame_alloc(&fr, info->format, info->width, info->height) == 0, "alloc");
    ret = mpe_input_read(in, &fr, &err);
    CHECK(t, ret == 1, "read: %d %s", ret, err.msg);
    if (ret == 1) {
        int bad = compare_rgb(t, &fr, fx);
        CHECK(t, bad == 0, "%d pixels differ", bad);
    }
    ret = mpe_input_read(in, &fr, &err);
    CHECK(t, ret == 0, "second read of a single PNG: %d", ret);
    mpe_frame_free(&fr);
    mpe_input_close(in);
}

static void png_case(TestCtx *t, const char *name, int color_type, int depth, int interlace,
                     int w, int h)
{
    Fixture fx;
    unsigned long long seed = 0;
    for (const char *p = name; *p; p++)
        seed = seed * 131 + (unsigned char)*p;
    fixture_init(&fx, w, h, color_type, depth, interlace, seed);
    check_png(t, name, &fx);
    fixture_free(&fx);
}

#define PNG_CASE(fn, ct, depth, il, w, h) \
    static void fn(TestCtx *t) { png_case(t, #fn, ct, depth, il, w, h); }

PNG_CASE(png_rgb8, PNG_COLOR_TYPE_RGB, 8, 0, 19, 17)
PNG_CASE(png_rgb16, PNG_COLOR_TYPE_RGB, 16, 0, 19, 17)
PNG_CASE(png_rgba8, PNG_COLOR_TYPE_RGB_ALPHA, 8, 0, 19, 17)
PNG_CASE(png_rgba16, PNG_COLOR_TYPE_RGB_ALPHA, 16, 0, 19, 17)
PNG_CASE(png_gray8, PNG_COLOR_TYPE_GRAY, 8, 0, 19, 17)
PNG_CASE(png_gray16, PNG_COLOR_TYPE_GRAY, 16, 0, 19, 17)
PNG_CASE(png_gray_alpha8, PNG_COLOR_TYPE_GRAY_ALPHA, 8, 0, 19, 17)
PNG_CASE(png_gray_alpha16, PNG_COLOR_TYPE_GRAY_ALPHA, 16, 0, 19, 17)
PNG_CASE(png_gray1, PNG_COLOR_TYPE_GRAY, 1, 0, 19, 17)
PNG_CASE(png_gray2, PNG_COLOR_TYPE_GRAY, 2, 0, 19, 17)
PNG_CASE(png_gray4, PNG_COLOR_TYPE_GRAY, 4, 0, 19, 17)
PNG_CASE(png_palette8, PNG_COLOR_TYPE_PALETTE, 8, 0, 19, 17)
PNG_CASE(png_palette4, PNG_COLOR_TYPE_PALETTE, 4, 0, 19, 17)
PNG_CASE(png_palette1, PNG_COLOR_TYPE_PALETTE, 1, 0, 19, 17)
PNG_CASE(png_interlaced_rgb8, PNG_COLOR_TYPE_RGB, 8, 1, 37, 23)
PNG_CASE(png_interlaced_rgba16, PNG_COLOR_TYPE_RGB_ALPHA, 16, 1, 37, 23)
PNG_CASE(png_interlaced_gray4, PNG_COLOR_TYPE_GRAY, 4, 1, 37, 23)
PNG_CASE(png_interlaced_gray_alpha8, PNG_COLOR_TYPE_GRAY_ALPHA, 8, 1, 37, 23)
PNG_CASE(png_interlaced_palette8, PNG_COLOR_TYPE_PALETTE, 8, 1, 37, 23)
PNG_CASE(png_large_rgb8, PNG_COLOR_TYPE_RGB, 8, 0, 720, 576)

/* RGBA with fully transparent pixels: the colour must come through as
 * stored, not composited onto any background. */
static void png_alpha_not_composited(TestCtx *t)
{
    Fixture fx;
    fixture_init(&fx, 16, 16, PNG_COLOR_TYPE_RGB_ALPHA, 8, 0, 77);
    for (int i = 0; i < 16 * 16; i++)
        fx.s[i * 4 + 3] = (uint16_t)(i % 3 == 0 ? 0 : i % 3 == 1 ? 1 : 254);
    check_png(t, "alpha_zero", &fx);
    fixture_free(&fx);
}

static void png_palette_trns(TestCtx *t)
{
    Fixture fx;
    fixture_init(&fx, 19, 17, PNG_COLOR_TYPE_PALETTE, 8, 0, 5);
    fx.ntrans = fx.npal;
    for (int i = 0; i < fx.ntrans; i++)
        fx.trans[i] = (png_byte)(i % 4 == 0 ? 0 : i * 7);
    check_png(t, "palette_trns", &fx);
    fixture_free(&fx);
}

static void png_palette4_trns_interlaced(TestCtx *t)
{
    Fixture fx;
    fixture_init(&fx, 37, 23, PNG_COLOR_TYPE_PALETTE, 4, 1, 6);
    fx.ntrans = 5; /* shorter than the palette, as PNG allows */
    for (int i = 0; i < fx.ntrans; i++)
        fx.trans[i] = (png_byte)(i * 50);
    check_png(t, "palette4_trns_il", &fx);
    fixture_free(&fx);
}

static void png_gray_trns(TestCtx *t)
{
    Fixture fx;
    fixture_init(&fx, 19, 17, PNG_COLOR_TYPE_GRAY, 8, 0, 7);
    fx.has_trans_color = 1;
    fx.trans_color.gray = fx.s[0];
    check_png(t, "gray_trns", &fx);
    fixture_free(&fx);
    fixture_init(&fx, 19, 17, PNG_COLOR_TYPE_GRAY, 2, 0, 8);
    fx.has_trans_color = 1;
    fx.trans_color.gray = fx.s[0];
    check_png(t, "gray2_trns", &fx);
    fixture_free(&fx);
}

static void png_rgb_trns(TestCtx *t)
{
    Fixture fx;
    fixture_init(&fx, 19, 17, PNG_COLOR_TYPE_RGB, 8, 0, 9);
    fx.has_trans_color = 1;
    fx.trans_color.red = fx.s[0];
    fx.trans_color.green = fx.s[1];
    fx.trans_color.blue = fx.s[2];
    check_png(t, "rgb_trns", &fx);
    fixture_free(&fx);
    fixture_init(&fx, 19, 17, PNG_COLOR_TYPE_RGB, 16, 1, 10);
    fx.has_trans_color = 1;
    fx.trans_color.red = fx.s[0];
    fx.trans_color.green = fx.s[1];
    fx.trans_color.blue = fx.s[2];
    check_png(t, "rgb16_trns_il", &fx);
    fixture_free(&fx);
}

/* A gAMA chunk must not change the samples (no gamma conversion). */
static void png_gamma_ignored(TestCtx *t)
{
    Fixture fx;
    fixture_init(&fx, 19, 17, PNG_COLOR_TYPE_RGB, 16, 0, 11);
    fx.gamma = 1.0;
    check_png(t, "gamma1", &fx);
    fixture_free(&fx);
}

/* Every 16-bit value once: checks (v*255+32767)/65535 exhaustively. */
static void png_16bit_rounding_exhaustive(TestCtx *t)
{
    Fixture fx;
    fixture_init(&fx, 256, 256, PNG_COLOR_TYPE_GRAY, 16, 0, 12);
    for (int i = 0; i < 65536; i++)
        fx.s[i] = (uint16_t)i;
    check_png(t, "all16", &fx);
    /* the formula is round-to-nearest of v/257 (never a tie) */
    CHECK(t, to8(128, 16) == 0 && to8(129, 16) == 1 && to8(32767, 16) == 127 &&
                 to8(32768, 16) == 128 && to8(65406, 16) == 254 && to8(65407, 16) == 255 &&
                 to8(65535, 16) == 255,
          "formula boundaries");
    for (unsigned v = 0; v < 65536; v++)
        if (to8(v, 16) != (unsigned)(v / 257.0 + 0.5)) {
            CHECK(t, 0, "to8(%u) = %u, round(v/257) = %u", v, to8(v, 16),
                  (unsigned)(v / 257.0 + 0.5));
            break;
        }
    fixture_free(&fx);
}

/* ------------------------------------------------------ PNG input errors */

static void open_expect_error(TestCtx *t, const char *spec, int start, MpeError *err)
{
    MpeInput *in = (MpeInput *)1;
    int ret = mpe_input_open(&in, spec, start, err);
    CHECK(t, ret < 0, "open of %s succeeded", spec);
    CHECK(t, in == NULL, "handle not NULL after failure");
    if (ret >= 0 && in)
        mpe_input_close(in);
}

/* Opens spec (which must succeed), then expects the read of frame
 * `nth` (0-based) to fail. */
/* Reads nth frames, then expects `want` (MPE_INPUT_DAMAGED_END, or any
 * other error when 0); after a damaged end, the next read must be the end. */
static void read_expect(TestCtx *t, const char *spec, int nth, int want, MpeError *err)
{
    MpeInput *in = NULL;
    MpeFrame fr;
    int ret = input_open(&in, spec, 0, err);
    CHECK(t, ret == 0, "open %s: %s", spec, err->msg);
    if (ret)
        return;
    CHECK(t, mpe_frame_alloc(&fr, mpe_input_info(in)->format, mpe_input_info(in)->width,
                             mpe_input_info(in)->height) == 0, "alloc");
    for (int i = 0; i < nth; i++) {
        ret = mpe_input_read(in, &fr, err);
        CHECK(t, ret == 1, "read %d: %d %s", i, ret, err->msg);
    }
    ret = mpe_input_read(in, &fr, err);
    CHECK(t, ret < 0, "read %d of %s did not fail (%d)", nth, spec, ret);
    if (want) {
        MpeError again;
        CHECK(t, ret == want, "read %d of %s: %d, expected %d", nth, spec, ret, want);
        ret = mpe_input_read(in, &fr, &again);
        CHECK(t, ret == 0, "read after the damaged end of %s: %d, expected the end", spec, ret);
    } else {
        CHECK(t, ret != MPE_INPUT_DAMAGED_END, "read %d of %s: a damaged end, expected an error",
              nth, spec);
    }
    mpe_frame_free(&fr);
    mpe_input_close(in);
}

static void read_expect_error(TestCtx *t, const char *spec, int nth, MpeError *err)
{
    read_expect(t, spec, nth, 0, err);
}

/* The frames before the damage are read, the damage is its own answer. */
static void read_expect_damaged(TestCtx *t, const char *spec, int nth, MpeError *err)
{
    read_expect(t, spec, nth, MPE_INPUT_DAMAGED_END, err);
}

static void png_missing_file(TestCtx *t)
{
    MpeError err;
    const char *p = tpath("nosuchfile.png");
    open_expect_error(t, p, 0, &err);
    CHECK_MSG(t, err, p, "No such file");
}

static void png_text_file(TestCtx *t)
{
    MpeError err;
    const char *p = tpath("text.png");
    write_file(p, "hello, I am not a PNG\n", 22);
    open_expect_error(t, p, 0, &err);
    CHECK_MSG(t, err, p, "not a PNG file");
    p = tpath("empty.png");
    write_file(p, "", 0);
    open_expect_error(t, p, 0, &err);
    CHECK_MSG(t, err, p, "not a PNG file");
}

static void png_truncated(TestCtx *t)
{
    Fixture fx;
    const char *p = tpath("trunc.png");
    uint8_t *data;
    size_t len = 0;
    MpeError err;

    fixture_init(&fx, 64, 64, PNG_COLOR_TYPE_RGB, 8, 0, 13); /* random: incompressible */
    CHECK(t, write_png(p, &fx) == 0, "write");
    data = read_file(p, &len);
    CHECK(t, data && len > 10000, "read back %zu", len);
    if (!data)
        goto out;
    write_file(p, data, len / 2);
    /* the header is intact, so the error comes from the decode */
    read_expect_error(t, p, 0, &err);
    CHECK_MSG(t, err, p, "corrupt PNG (", "end of file");
    /* cut inside the header: open already fails */
    write_file(p, data, 20);
    open_expect_error(t, p, 0, &err);
    CHECK_MSG(t, err, p, "corrupt PNG (");
    /* cut just before IEND: the image data is complete but the file is not */
    write_file(p, data, len - 12);
    read_expect_error(t, p, 0, &err);
    CHECK_MSG(t, err, p, "corrupt PNG (");
    free(data);
out:
    fixture_free(&fx);
}

static void png_crc_error(TestCtx *t)
{
    Fixture fx;
    const char *p = tpath("crc.png");
    uint8_t *data;
    size_t len = 0;
    MpeError err;

    fixture_init(&fx, 64, 64, PNG_COLOR_TYPE_RGB, 8, 0, 14);
    CHECK(t, write_png(p, &fx) == 0, "write");
    data = read_file(p, &len);
    CHECK(t, data && len > 10000, "read back");
    if (data) {
        data[len / 2] ^= 0x55; /* inside the IDAT data */
        write_file(p, data, len);
        read_expect_error(t, p, 0, &err);
        CHECK_MSG(t, err, p, "corrupt PNG (", "CRC");
        free(data);
    }
    fixture_free(&fx);
}

static void png_too_small(TestCtx *t)
{
    MpeError err;
    const char *p = tpath("small8x8.png");
    Fixture fx;
    fixture_init(&fx, 8, 8, PNG_COLOR_TYPE_RGB, 8, 0, 15);
    CHECK(t, write_png(p, &fx) == 0, "write");
    fixture_free(&fx);
    open_expect_error(t, p, 0, &err);
    CHECK_MSG(t, err, p, "8x8", "out of range");
    /* 16 high but 15 wide */
    p = tpath("small15x16.png");
    fixture_init(&fx, 15, 16, PNG_COLOR_TYPE_GRAY, 8, 0, 15);
    write_png(p, &fx);
    fixture_free(&fx);
    open_expect_error(t, p, 0, &err);
    CHECK_MSG(t, err, p, "15x16", "out of range");
}

static void png_too_large(TestCtx *t)
{
    MpeError err;
    const char *p = tpath("wide5000.png");
    Fixture fx;
    fixture_init(&fx, 5000, 16, PNG_COLOR_TYPE_GRAY, 8, 0, 16);
    CHECK(t, write_png(p, &fx) == 0, "write");
    fixture_free(&fx);
    open_expect_error(t, p, 0, &err);
    CHECK_MSG(t, err, p, "5000x16", "out of range");
    /* the limits themselves are fine */
    fixture_init(&fx, 4095, 16, PNG_COLOR_TYPE_GRAY, 8, 0, 17);
    check_png(t, "edge4095x16", &fx);
    fixture_free(&fx);
}

static void png_unreadable(TestCtx *t)
{
    MpeError err;
    const char *p = tpath("noperm.png");
    int fds[2], status = 0;
    pid_t pid;
    ssize_t n;

    write_flat_png(p, 16, 16, 1);
    chmod(p, 0);
    if (geteuid() != 0) {
        open_expect_error(t, p, 0, &err);
        CHECK_MSG(t, err, p, "Permission denied");
        return;
    }
    /* root reads anything: try as "nobody" in a child */
    if (pipe(fds) != 0) {
        test_skip(t, "pipe failed");
        return;
    }
    chmod(g_dir, 0711);
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        MpeInput *in = NULL;
        int ret;
        close(fds[0]);
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(2);
        memset(&err, 0, sizeof(err));
        ret = mpe_input_open(&in, p, 0, &err);
        if (ret == 0)
            mpe_input_close(in);
        if (write(fds[1], err.msg, strlen(err.msg) + 1) < 0)
            _exit(3);
        _exit(ret < 0 ? 0 : 1);
    }
    close(fds[1]);
    memset(&err, 0, sizeof(err));
    n = pid > 0 ? read(fds[0], err.msg, sizeof(err.msg) - 1) : -1;
    close(fds[0]);
    if (pid > 0)
        waitpid(pid, &status, 0);
    chmod(g_dir, 0700);
    if (pid < 0 || (WIFEXITED(status) && WEXITSTATUS(status) == 2)) {
        test_skip(t, "running as root and cannot switch to uid 65534");
        return;
    }
    CHECK(t, WIFEXITED(status) && WEXITSTATUS(status) == 0 && n > 0,
          "open as uid 65534 did not fail (status %d)", status);
    CHECK_MSG(t, err, p, "Permission denied");
}

static void frame_buffer_mismatch(TestCtx *t)
{
    const char *p = tpath("mismatch.png");
    MpeInput *in = NULL;
    MpeError err;
    MpeFrame fr;
    write_flat_png(p, 32, 16, 3);
    CHECK(t, input_open(&in, p, 0, &err) == 0, "open: %s", err.msg);
    if (!in)
        return;
    mpe_frame_alloc(&fr, MPE_FRAME_RGB24, 16, 16);
    CHECK(t, mpe_input_read(in, &fr, &err) == -EINVAL, "wrong-size frame accepted");
    mpe_frame_free(&fr);
    mpe_frame_alloc(&fr, MPE_FRAME_YUV420, 32, 16);
    CHECK(t, mpe_input_read(in, &fr, &err) == -EINVAL, "wrong-format frame accepted");
    mpe_frame_free(&fr);
    mpe_input_close(in);
}

/* ----------------------------------------------------------- sequences */

/* Reads every frame of spec; checks each is flat (v, v+1, v+2) with v from
 * vals and came from names[i]. */
static void check_sequence(TestCtx *t, const char *spec, int start, int n, const int *vals,
                           const char *const *names)
{
    MpeInput *in = NULL;
    MpeError err;
    MpeFrame fr;
    int ret = input_open(&in, spec, start, &err);
    CHECK(t, ret == 0, "open %s: %s", spec, err.msg);
    if (ret)
        return;
    if (n > 0)
        CHECK(t, !strcmp(mpe_input_current_name(in), names[0]), "name after open %s want %s",
              mpe_input_current_name(in), names[0]);
    mpe_frame_alloc(&fr, MPE_FRAME_RGB24, mpe_input_info(in)->width, mpe_input_info(in)->height);
    for (int i = 0; i < n; i++) {
        ret = mpe_input_read(in, &fr, &err);
        CHECK(t, ret == 1, "frame %d: %d %s", i, ret, err.msg);
        if (ret != 1)
            break;
        CHECK(t, !strcmp(mpe_input_current_name(in), names[i]), "frame %d from %s, want %s", i,
              mpe_input_current_name(in), names[i]);
        CHECK(t, fr.data[0][0] == vals[i] && fr.data[0][1] == vals[i] + 1 &&
                     fr.data[0][fr.stride[0] * (fr.height - 1) + 3 * (fr.width - 1) + 2] ==
                         vals[i] + 2,
              "frame %d content %u, want %d", i, fr.data[0][0], vals[i]);
    }
    ret = mpe_input_read(in, &fr, &err);
    CHECK(t, ret == 0, "after %d frames: %d %s", n, ret, ret < 0 ? err.msg : "");
    ret = mpe_input_read(in, &fr, &err);
    CHECK(t, ret == 0, "read after the end: %d", ret);
    if (n > 0)
        CHECK(t, !strcmp(mpe_input_current_name(in), names[n - 1]),
              "name after the end %s, want the last frame's %s", mpe_input_current_name(in),
              names[n - 1]);
    mpe_frame_free(&fr);
    mpe_input_close(in);
}

/* A sequence may mix colour types, bit depths and interlacing. */
static void pattern_mixed_types(TestCtx *t)
{
    static const struct {
        int ct, depth, il;
    } kinds[] = {
        {PNG_COLOR_TYPE_RGB, 8, 0},     {PNG_COLOR_TYPE_GRAY, 16, 1},
        {PNG_COLOR_TYPE_PALETTE, 2, 0}, {PNG_COLOR_TYPE_RGB_ALPHA, 16, 0},
        {PNG_COLOR_TYPE_GRAY_ALPHA, 8, 1},
    };
    enum { N = sizeof(kinds) / sizeof(kinds[0]) };
    Fixture fx[N];
    MpeInput *in = NULL;
    MpeError err;
    MpeFrame fr;
    int ret;

    mkdir(tpath("mixed"), 0755);
    for (int i = 0; i < N; i++) {
        fixture_init(&fx[i], 33, 18, kinds[i].ct, kinds[i].depth, kinds[i].il, 100 + i);
        CHECK(t, write_png(tpath("mixed/m%d.png", i), &fx[i]) == 0, "write %d", i);
    }
    ret = input_open(&in, tpath("mixed/m%%d.png"), 0, &err);
    CHECK(t, ret == 0, "open: %s", err.msg);
    if (ret == 0) {
        mpe_frame_alloc(&fr, MPE_FRAME_RGB24, 33, 18);
        for (int i = 0; i < N; i++) {
            ret = mpe_input_read(in, &fr, &err);
            CHECK(t, ret == 1, "frame %d: %d %s", i, ret, err.msg);
            if (ret == 1)
                CHECK(t, compare_rgb(t, &fr, &fx[i]) == 0, "frame %d differs", i);
        }
        CHECK(t, mpe_input_read(in, &fr, &err) == 0, "end");
        mpe_frame_free(&fr);
        mpe_input_close(in);
    }
    for (int i = 0; i < N; i++)
        fixture_free(&fx[i]);
}


static void pattern_start_number(TestCtx *t)
{
    const int nums[] = {5, 6, 7, 9}; /* 8 missing: the sequence is 5..7 */
    const int vals[] = {10, 20, 30};
    const char *names[3];
    mkdir(tpath("seq"), 0755);
    for (int i = 0; i < 4; i++)
        write_flat_png(tpath("seq/s_%d.png", nums[i]), 24, 16, 10 * (i + 1));
    write_flat_png(tpath("seq/s_4.png"), 24, 16, 99); /* before the start */
    for (int i = 0; i < 3; i++)
        names[i] = tpath("seq/s_%d.png", nums[i]);
    check_sequence(t, tpath("seq/s_%%d.png"), 5, 3, vals, names);
    /* %i and a plain width (space padding) */
    write_flat_png(tpath("seq/w_  7.png"), 24, 16, 40);
    names[0] = tpath("seq/w_  7.png");
    check_sequence(t, tpath("seq/w_%%3i.png"), 7, 1, (const int[]){40}, names);
}

static void pattern_zero_padded(TestCtx *t)
{
    const int vals[] = {1, 2, 3};
    const char *names[3];
    mkdir(tpath("pad"), 0755);
    for (int i = 0; i < 3; i++) {
        names[i] = tpath("pad/f_%04d.png", i + 1);
        write_flat_png(names[i], 16, 16, vals[i]);
    }
    write_flat_png(tpath("pad/f_0.png"), 16, 16, 0); /* not 0000: ignored */
    check_sequence(t, tpath("pad/f_%%04d.png"), 1, 3, vals, names);
    /* start 0: f_0000.png is missing */
    {
        MpeError err;
        const char *spec = tpath("pad/f_%%04d.png");
        open_expect_error(t, spec, 0, &err);
        CHECK_MSG(t, err, spec, "no frame found", "f_0000.png");
    }
}

static void pattern_literal_percent(TestCtx *t)
{
    const char *names[2];
    mkdir(tpath("100%%dir"), 0755);
    names[0] = tpath("100%%dir/x%%_0.png");
    names[1] = tpath("100%%dir/x%%_1.png");
    write_flat_png(names[0], 16, 16, 50);
    write_flat_png(names[1], 16, 16, 60);
    check_sequence(t, tpath("100%%%%dir/x%%%%_%%u.png"), 0, 2, (const int[]){50, 60}, names);
    /* a file whose name has a '%' but is not a pattern is taken literally */
    names[0] = tpath("50%%.png");
    write_flat_png(names[0], 16, 16, 70);
    check_sequence(t, names[0], 0, 1, (const int[]){70}, names);
}

static void pattern_rejected(TestCtx *t)
{
    static const struct {
        const char *pat, *key;
    } bad[] = {
        {"a_%s.png", "unsupported conversion '%s'"},
        {"a_%ld.png", "unsupported conversion '%ld'"},
        {"a_%.3d.png", "unsupported conversion '%.3d'"},
        {"a_%x.png", "unsupported conversion '%x'"},
        {"a_%-4d.png", "unsupported conversion '%-4d'"},
        {"a_%f.png", "unsupported conversion '%f'"},
        {"a_%d_%d.png", "more than one conversion"},
        {"a_%d%%%04d.png", "more than one conversion"},
        {"a_100%%.png", "no integer conversion"},
        {"a_%", "lone '%'"},
        {"a_%99d.png", "width"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        MpeError err;
        const char *spec = tpath("%s", bad[i].pat);
        open_expect_error(t, spec, 0, &err);
        CHECK_MSG(t, err, spec, bad[i].key);
    }
}

static void pattern_missing_first(TestCtx *t)
{
    MpeError err;
    const char *spec = tpath("frames/s_%%d.png");
    mkdir(tpath("frames"), 0755);
    open_expect_error(t, spec, 0, &err);
    CHECK_MSG(t, err, spec, "no frame found", "(looked for ", "frames/s_0.png)");
    open_expect_error(t, spec, 12, &err);
    CHECK_MSG(t, err, spec, "no frame found", "frames/s_12.png");
    /* a missing directory in the path is also "no frame found" */
    spec = tpath("nodir/s_%%d.png");
    open_expect_error(t, spec, 0, &err);
    CHECK_MSG(t, err, spec, "no frame found");
}

static void pattern_size_differs(TestCtx *t)
{
    MpeError err;
    const char *bad = tpath("sz/s_1.png");
    mkdir(tpath("sz"), 0755);
    write_flat_png(tpath("sz/s_0.png"), 352, 288, 1);
    write_flat_png(bad, 320, 240, 2);
    write_flat_png(tpath("sz/s_2.png"), 352, 288, 3);
    read_expect_error(t, tpath("sz/s_%%d.png"), 1, &err);
    CHECK_MSG(t, err, bad, "frame size 320x240 differs from the first frame's 352x288");
}

static void pattern_bad_frame_midway(TestCtx *t)
{
    MpeError err;
    const char *p;
    mkdir(tpath("mid"), 0755);
    write_flat_png(tpath("mid/s_0.png"), 16, 16, 1);
    /* a directory where a frame should be */
    p = tpath("mid/s_1.png");
    mkdir(p, 0755);
    read_expect_error(t, tpath("mid/s_%%d.png"), 1, &err);
    CHECK_MSG(t, err, p, "Is a directory");
    /* a corrupt second frame */
    rmdir(p);
    write_file(p, "garbage", 7);
    read_expect_error(t, tpath("mid/s_%%d.png"), 1, &err);
    CHECK_MSG(t, err, p, "not a PNG file");
}

static void dir_order(TestCtx *t)
{
    static const char *files[] = {"b.png", "a.PNG", "Z.png", "a10.png", "a2.png", "c.Png"};
    static const char *order[] = {"Z.png", "a.PNG", "a10.png", "a2.png", "b.png", "c.Png",
                                  "link.png"};
    int vals[7];
    const char *names[7];
    mkdir(tpath("dir"), 0755);
    for (int i = 0; i < 6; i++)
        write_flat_png(tpath("dir/%s", files[i]), 16, 16, 10 * i);
    write_file(tpath("dir/notes.txt"), "x", 1);
    write_file(tpath("dir/x.png.bak"), "x", 1);
    mkdir(tpath("dir/sub.png"), 0755);                      /* a directory: skipped */
    CHECK(t, symlink("b.png", tpath("dir/link.png")) == 0, "symlink");     /* counts */
    CHECK(t, symlink("nowhere.png", tpath("dir/dead.png")) == 0, "symlink"); /* skipped */
    for (int i = 0; i < 7; i++) {
        const char *f = i < 6 ? order[i] : "b.png";
        for (int j = 0; j < 6; j++)
            if (!strcmp(files[j], f))
                vals[i] = 10 * j;
        names[i] = tpath("dir/%s", order[i]);
    }
    check_sequence(t, tpath("dir"), 0, 7, vals, names);
    /* a trailing slash gives the same names (no double slash) */
    check_sequence(t, tpath("dir/"), 0, 7, vals, names);
}

static void dir_empty(TestCtx *t)
{
    MpeError err;
    const char *d = tpath("emptydir");
    mkdir(d, 0755);
    write_file(tpath("emptydir/readme.txt"), "x", 1);
    open_expect_error(t, d, 0, &err);
    CHECK_MSG(t, err, d, "no PNG files");
}

static void dir_size_differs(TestCtx *t)
{
    MpeError err;
    mkdir(tpath("dsz"), 0755);
    write_flat_png(tpath("dsz/a.png"), 16, 16, 1);
    write_flat_png(tpath("dsz/b.png"), 32, 16, 1);
    read_expect_error(t, tpath("dsz"), 1, &err);
    CHECK_MSG(t, err, tpath("dsz/b.png"), "frame size 32x16 differs from the first frame's 16x16");
}

/* ------------------------------------------------------------------ Y4M */

typedef struct Y4mData {
    uint8_t *buf;
    size_t len, cap;
} Y4mData;

static void y4m_append(Y4mData *d, const void *p, size_t n)
{
    if (d->len + n > d->cap) {
        d->cap = (d->len + n) * 2 + 1024;
        d->buf = realloc(d->buf, d->cap);
    }
    memcpy(d->buf + d->len, p, n);
    d->len += n;
}

static size_t frame_bytes(int w, int h)
{
    return (size_t)w * h + 2 * (size_t)((w + 1) / 2) * ((h + 1) / 2);
}

/* Frame i's bytes: a seeded pseudo-random pattern. */
static void frame_fill(uint8_t *p, size_t n, int i)
{
    TestRng r = {0x1234567ULL + (unsigned long long)i * 7919};
    for (size_t k = 0; k < n; k++)
        p[k] = (uint8_t)test_rand(&r);
}

static Y4mData y4m_make(const char *header, int w, int h, int nframes, const char *frame_line)
{
    Y4mData d = {0};
    size_t fb = frame_bytes(w, h);
    uint8_t *tmp = malloc(fb);
    y4m_append(&d, header, strlen(header));
    for (int i = 0; i < nframes; i++) {
        y4m_append(&d, frame_line, strlen(frame_line));
        frame_fill(tmp, fb, i);
        y4m_append(&d, tmp, fb);
    }
    free(tmp);
    return d;
}

/* Reads nframes frames from an open input and checks their bytes. */
static void y4m_check_frames(TestCtx *t, MpeInput *in, int w, int h, int nframes)
{
    MpeFrame fr;
    MpeError err;
    size_t fb = frame_bytes(w, h);
    uint8_t *want = malloc(fb);
    int ret;

    CHECK(t, mpe_frame_alloc(&fr, MPE_FRAME_YUV420, w, h) == 0, "alloc");
    for (int i = 0; i < nframes; i++) {
        size_t off = 0;
        int ok = 1;
        ret = mpe_input_read(in, &fr, &err);
        CHECK(t, ret == 1, "frame %d: %d %s", i, ret, err.msg);
        if (ret != 1)
            break;
        frame_fill(want, fb, i);
        for (int c = 0; c < 3; c++) {
            int pw = c ? (w + 1) / 2 : w, ph = c ? (h + 1) / 2 : h;
            for (int y = 0; y < ph; y++, off += pw)
                if (memcmp(fr.data[c] + (size_t)y * fr.stride[c], want + off, pw))
                    ok = 0;
        }
        CHECK(t, ok, "frame %d bytes differ", i);
    }
    ret = mpe_input_read(in, &fr, &err);
    CHECK(t, ret == 0, "end: %d %s", ret, ret < 0 ? err.msg : "");
    ret = mpe_input_read(in, &fr, &err);
    CHECK(t, ret == 0, "read after end: %d", ret);
    mpe_frame_free(&fr);
    free(want);
}

static void y4m_file_case(TestCtx *t, const char *fname, const char *header, int w, int h,
                          int nframes, const char *frame_line, int fps_num, int fps_den)
{
    const char *p = tpath("%s", fname);
    Y4mData d = y4m_make(header, w, h, nframes, frame_line);
    MpeInput *in = NULL;
    MpeError err;
    int ret;

    write_file(p, d.buf, d.len);
    free(d.buf);
    ret = input_open(&in, p, 0, &err);
    CHECK(t, ret == 0, "open %s (%s): %s", fname, header, err.msg);
    if (ret)
        return;
    CHECK(t, mpe_input_info(in)->format == MPE_FRAME_YUV420 && mpe_input_info(in)->width == w &&
                 mpe_input_info(in)->height == h && mpe_input_info(in)->fps_num == fps_num &&
                 mpe_input_info(in)->fps_den == fps_den,
          "info %dx%d %d/%d", mpe_input_info(in)->width, mpe_input_info(in)->height,
          mpe_input_info(in)->fps_num, mpe_input_info(in)->fps_den);
    CHECK(t, !strcmp(mpe_input_current_name(in), p), "name %s", mpe_input_current_name(in));
    y4m_check_frames(t, in, w, h, nframes);
    mpe_input_close(in);
}

static void y4m_colourspaces(TestCtx *t)
{
    static const char *tags[] = {"", " C420jpeg", " C420mpeg2", " C420paldv", " C420",
                                 " C420mpeg2 XYSCSS=420MPEG2"};
    for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
        char hdr[128];
        snprintf(hdr, sizeof(hdr), "YUV4MPEG2 W17 H19 F30000:1001 Ip A1:1%s\n", tags[i]);
        y4m_file_case(t, "cs.y4m", hdr, 17, 19, 3, "FRAME\n", 30000, 1001);
    }
}

static void y4m_frame_params(TestCtx *t)
{
    char longline[300];
    /* tags in another order, unknown tags, X tags, interlacing t/b/m/? */
    y4m_file_case(t, "params.y4m", "YUV4MPEG2 C420jpeg It H16 W32 Xfoo=bar A0:0 F25:1 Zunknown\n",
                  32, 16, 2, "FRAME Ixyz Xcolor=1\n", 25, 1);
    y4m_file_case(t, "params2.Y4M", "YUV4MPEG2 W32 H16 F50:1 Ib\n", 32, 16, 2, "FRAME \n", 50, 1);
    y4m_file_case(t, "params3.y4m", "YUV4MPEG2 W32 H16 F24:1 Im\n", 32, 16, 1, "FRAME X\n", 24, 1);
    /* a frame line longer than any internal buffer */
    memset(longline, 'x', sizeof(longline));
    memcpy(longline, "FRAME X", 7);
    longline[sizeof(longline) - 2] = '\n';
    longline[sizeof(longline) - 1] = '\0';
    y4m_file_case(t, "params4.y4m", "YUV4MPEG2 W32 H16 F24:1 I?\n", 32, 16, 3, longline, 24, 1);
    /* no frame rate: 0/0 */
    y4m_file_case(t, "nofps.y4m", "YUV4MPEG2 W16 H16\n", 16, 16, 1, "FRAME\n", 0, 0);
    /* no frames at all */
    y4m_file_case(t, "noframes.y4m", "YUV4MPEG2 W16 H16 F25:1\n", 16, 16, 0, "FRAME\n", 25, 1);
    /* a file not named .y4m is recognised by its signature */
    y4m_file_case(t, "clip.raw", "YUV4MPEG2 W16 H16 F25:1\n", 16, 16, 2, "FRAME\n", 25, 1);
}

static void y4m_expect_open_error(TestCtx *t, const char *fname, const char *header,
                                  MpeError *err)
{
    const char *p = tpath("%s", fname);
    Y4mData d = y4m_make(header, 16, 16, 1, "FRAME\n");
    write_file(p, d.buf, d.len);
    free(d.buf);
    open_expect_error(t, p, 0, err);
}

static void y4m_rejected_colourspace(TestCtx *t)
{
    static const char *cs[] = {"C444", "C422", "C420p10", "Cmono", "C411", "C444alpha",
                               "C420p16"};
    for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
        char hdr[128], want[128];
        MpeError err;
        const char *p = tpath("cs_bad.y4m");
        snprintf(hdr, sizeof(hdr), "YUV4MPEG2 W16 H16 F25:1 Ip %s\n", cs[i]);
        snprintf(want, sizeof(want), "unsupported Y4M colourspace '%s' (need 4:2:0 8-bit)", cs[i]);
        y4m_expect_open_error(t, "cs_bad.y4m", hdr, &err);
        CHECK_MSG(t, err, p, want);
    }
}

static void y4m_missing_size(TestCtx *t)
{
    MpeError err;
    const char *p = tpath("nosize.y4m");
    y4m_expect_open_error(t, "nosize.y4m", "YUV4MPEG2 H16 F25:1\n", &err);
    CHECK_MSG(t, err, p, "no W (width) tag");
    y4m_expect_open_error(t, "nosize.y4m", "YUV4MPEG2 W16 F25:1\n", &err);
    CHECK_MSG(t, err, p, "no H (height) tag");
    y4m_expect_open_error(t, "nosize.y4m", "YUV4MPEG2\n", &err);
    CHECK_MSG(t, err, p, "no W (width) or H (height) tag");
    y4m_expect_open_error(t, "nosize.y4m", "YUV4MPEG2 Wabc H16\n", &err);
    CHECK_MSG(t, err, p, "bad Y4M width tag 'Wabc'");
    y4m_expect_open_error(t, "nosize.y4m", "YUV4MPEG2 W16 H16 F25\n", &err);
    CHECK_MSG(t, err, p, "bad Y4M frame rate tag 'F25'");
}

static void y4m_size_range(TestCtx *t)
{
    MpeError err;
    const char *p = tpath("range.y4m");
    y4m_expect_open_error(t, "range.y4m", "YUV4MPEG2 W8 H16\n", &err);
    CHECK_MSG(t, err, p, "8x16", "out of range");
    y4m_expect_open_error(t, "range.y4m", "YUV4MPEG2 W5000 H16\n", &err);
    CHECK_MSG(t, err, p, "5000x16", "out of range");
    y4m_expect_open_error(t, "range.y4m", "YUV4MPEG2 W16 H4096\n", &err);
    CHECK_MSG(t, err, p, "16x4096", "out of range");
    y4m_expect_open_error(t, "range.y4m", "YUV4MPEG2 W99999999999999999999 H16\n", &err);
    CHECK_MSG(t, err, p, "bad Y4M width tag");
}

/* Headers a damaged or hostile file may carry: refused before any frame
 * buffer is sized from them. */
static void y4m_absurd_tags(TestCtx *t)
{
    static const struct {
        const char *header, *msg;
    } cases[] = {
        {"YUV4MPEG2 W0 H16\n", "0x16"},
        {"YUV4MPEG2 W16 H0\n", "16x0"},
        {"YUV4MPEG2 W-16 H16\n", "bad Y4M width tag 'W-16'"},
        {"YUV4MPEG2 W16 H+16\n", "bad Y4M height tag 'H+16'"},
        {"YUV4MPEG2 W4294967312 H16\n", "4294967312x16"},
        {"YUV4MPEG2 W16 H99999999999\n", "16x99999999999"},
        {"YUV4MPEG2 W16 H92233720368547758070\n", "bad Y4M height tag"},
        {"YUV4MPEG2 W16 H16 F25:0\n", "bad Y4M frame rate tag 'F25:0'"},
        {"YUV4MPEG2 W16 H16 F0:1\n", "bad Y4M frame rate tag 'F0:1'"},
        {"YUV4MPEG2 W16 H16 F2147483648:1\n", "bad Y4M frame rate tag"},
        {"YUV4MPEG2 W16 H16 F-25:1\n", "bad Y4M frame rate tag"},
        {"YUV4MPEG2 W16 H16 A1:0\n", "bad Y4M aspect tag 'A1:0'"},
        {"YUV4MPEG2 W16 H16 A-1:1\n", "bad Y4M aspect tag"},
        {"YUV4MPEG2 W16 H16 A99999999999:1\n", "bad Y4M aspect tag"},
        {"YUV4MPEG2 W16 H16 Ax\n", "bad Y4M aspect tag 'Ax'"},
        {"YUV4MPEG2 W16 H16 C444\n", "unsupported Y4M colourspace 'C444'"},
        {"YUV4MPEG2 W16 H16 C420p10\n", "unsupported Y4M colourspace"},
    };
    MpeError err;
    const char *p = tpath("absurd.y4m");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        y4m_expect_open_error(t, "absurd.y4m", cases[i].header, &err);
        CHECK_MSG(t, err, p, cases[i].msg);
    }
    /* the limits and the usual tags still open */
    y4m_file_case(t, "fine.y4m", "YUV4MPEG2 W16 H16 F30000:1001 A0:0 Ip C420jpeg\n", 16, 16, 1,
                  "FRAME\n", 30000, 1001);
    y4m_file_case(t, "fine2.y4m", "YUV4MPEG2 W4095 H16 F1:1 A128:117\n", 4095, 16, 1, "FRAME\n",
                  1, 1);
}

static void y4m_not_y4m(TestCtx *t)
{
    MpeError err;
    const char *p = tpath("notreally.y4m");
    write_flat_png(p, 16, 16, 0);
    open_expect_error(t, p, 0, &err);
    CHECK_MSG(t, err, p, "not a YUV4MPEG2 stream");
    write_file(p, "", 0);
    open_expect_error(t, p, 0, &err);
    CHECK_MSG(t, err, p, "not a YUV4MPEG2 stream");
    write_file(p, "YUV4MPEG2 W16 H16", 17); /* no newline */
    open_expect_error(t, p, 0, &err);
    CHECK_MSG(t, err, p, "truncated");
    p = tpath("nofile.y4m");
    open_expect_error(t, p, 0, &err);
    CHECK_MSG(t, err, p, "No such file");
}

static void y4m_truncated(TestCtx *t)
{
    const char *p = tpath("trunc.y4m");
    int w = 17, h = 19;
    size_t fb = frame_bytes(w, h);
    Y4mData d = y4m_make("YUV4MPEG2 W17 H19 F25:1\n", w, h, 2, "FRAME\n");
    char want[128];
    MpeError err;

    /* second frame cut 100 bytes short: the first is kept */
    write_file(p, d.buf, d.len - 100);
    read_expect_damaged(t, p, 1, &err);
    snprintf(want, sizeof(want), "truncated frame 1 (got %zu of %zu bytes)", fb - 100, fb);
    CHECK_MSG(t, err, p, want);
    snprintf(want, sizeof(want), "the last %zu bytes (from byte %zu)", 6 + fb - 100, 24 + 6 + fb);
    CHECK_MSG(t, err, p, want, "the 1 complete frame before them is read");
    /* second frame header only */
    write_file(p, d.buf, d.len - fb);
    read_expect_damaged(t, p, 1, &err);
    snprintf(want, sizeof(want), "truncated frame 1 (got 0 of %zu bytes)", fb);
    CHECK_MSG(t, err, p, want, "the last 6 bytes");
    /* cut inside the FRAME marker */
    write_file(p, d.buf, d.len - fb - 3);
    read_expect_damaged(t, p, 1, &err);
    CHECK_MSG(t, err, p, "truncated frame 1", "the last 3 bytes");
    /* first frame cut in the luma plane */
    write_file(p, d.buf, 24 + 6 + 50);
    read_expect_error(t, p, 0, &err);
    snprintf(want, sizeof(want), "truncated frame 0 (got 50 of %zu bytes)", fb);
    CHECK_MSG(t, err, p, want);
    free(d.buf);
}

static void y4m_bad_marker(TestCtx *t)
{
    const char *p = tpath("marker.y4m");
    Y4mData d = y4m_make("YUV4MPEG2 W16 H16 F25:1\n", 16, 16, 2, "FRAME\n");
    MpeError err;
    char want[128];

    memcpy(d.buf + d.len - frame_bytes(16, 16) - 6, "FRAMX\n", 6);
    write_file(p, d.buf, d.len);
    read_expect_damaged(t, p, 1, &err);
    CHECK_MSG(t, err, p, "bad frame marker", "frame 1", "FRAMX");
    snprintf(want, sizeof(want), "the last %zu bytes", 6 + frame_bytes(16, 16));
    CHECK_MSG(t, err, p, want);
    /* stray bytes after the last frame */
    memcpy(d.buf + d.len - frame_bytes(16, 16) - 6, "\n\0x", 3);
    write_file(p, d.buf, d.len - frame_bytes(16, 16) - 3);
    read_expect_damaged(t, p, 1, &err);
    CHECK_MSG(t, err, p, "the last 3 bytes", "bad frame marker");
    free(d.buf);
    /* a header whose size is wrong: the frame data runs into the marker */
    d = y4m_make("YUV4MPEG2 W16 H16 F25:1\n", 18, 16, 2, "FRAME\n");
    write_file(p, d.buf, d.len);
    read_expect_damaged(t, p, 1, &err);
    CHECK_MSG(t, err, p, "bad frame marker", "W/H right");
    free(d.buf);
    /* "FRAMES" is not "FRAME" */
    d = y4m_make("YUV4MPEG2 W16 H16 F25:1\n", 16, 16, 1, "FRAMES\n");
    write_file(p, d.buf, d.len);
    read_expect_error(t, p, 0, &err);
    CHECK_MSG(t, err, p, "bad frame marker", "frame 0");
    free(d.buf);
}

/* Connects fd 0 to a pipe that a forked child fills with data; returns the
 * child's pid (reaped by stdin_restore).  The child frees `heap` (the
 * parent's buffers it inherited) so that valgrind finds it clean too. */
static pid_t stdin_from_pipe(const uint8_t *data, size_t len, void *heap, int *saved_fd)
{
    int p[2];
    pid_t pid;

    if (pipe(p) != 0)
        return -1;
    fflush(stdout);
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        size_t off = 0;
        close(p[0]);
        while (off < len) {
            ssize_t n = write(p[1], data + off, len - off > 4000 ? 4000 : len - off);
            if (n <= 0) {
                free(heap);
                _exit(1);
            }
            off += (size_t)n;
        }
        free(heap);
        _exit(0);
    }
    close(p[1]);
    *saved_fd = dup(0);
    dup2(p[0], 0);
    close(p[0]);
    clearerr(stdin);
    return pid;
}

static void stdin_restore(pid_t pid, int saved_fd)
{
    dup2(saved_fd, 0);
    close(saved_fd);
    clearerr(stdin);
    if (pid > 0)
        waitpid(pid, NULL, 0);
}

static void y4m_stdin_pipe(TestCtx *t)
{
    int w = 176, h = 144, saved = -1;
    Y4mData d = y4m_make("YUV4MPEG2 W176 H144 F25:1 Ip C420jpeg\n", w, h, 5, "FRAME\n");
    pid_t pid = stdin_from_pipe(d.buf, d.len, d.buf, &saved);
    MpeInput *in = NULL;
    MpeError err;

    CHECK(t, pid > 0, "pipe/fork");
    if (pid > 0) {
        int ret = input_open(&in, "-", 0, &err);
        CHECK(t, ret == 0, "open -: %s", err.msg);
        if (ret == 0) {
            CHECK(t, !strcmp(mpe_input_current_name(in), "<stdin>"), "name %s",
                  mpe_input_current_name(in));
            CHECK(t, mpe_input_info(in)->width == w && mpe_input_info(in)->fps_num == 25, "info");
            y4m_check_frames(t, in, w, h, 5);
            mpe_input_close(in);
        }
        stdin_restore(pid, saved);
    }
    free(d.buf);
}

static void y4m_stdin_errors(TestCtx *t)
{
    int saved = -1;
    Y4mData d = y4m_make("YUV4MPEG2 W176 H144 F25:1\n", 176, 144, 3, "FRAME\n");
    size_t fb = frame_bytes(176, 144);
    pid_t pid = stdin_from_pipe(d.buf, d.len - 1000, d.buf, &saved);
    MpeError err;
    char want[128];

    CHECK(t, pid > 0, "pipe/fork");
    if (pid > 0) {
        read_expect_damaged(t, "-", 2, &err);
        snprintf(want, sizeof(want), "truncated frame 2 (got %zu of %zu bytes)", fb - 1000, fb);
        CHECK_MSG(t, err, "<stdin>", want);
        snprintf(want, sizeof(want), "the last %zu bytes", 6 + fb - 1000);
        CHECK_MSG(t, err, "<stdin>", want);
        stdin_restore(pid, saved);
    }
    pid = stdin_from_pipe((const uint8_t *)"YUV4MPEG2 W16 H16 C444\n", 23, d.buf, &saved);
    if (pid > 0) {
        open_expect_error(t, "-", 0, &err);
        CHECK_MSG(t, err, "<stdin>", "unsupported Y4M colourspace 'C444'");
        stdin_restore(pid, saved);
    }
    pid = stdin_from_pipe((const uint8_t *)"", 0, d.buf, &saved);
    if (pid > 0) {
        open_expect_error(t, "-", 0, &err);
        CHECK_MSG(t, err, "<stdin>", "not a YUV4MPEG2 stream");
        stdin_restore(pid, saved);
    }
    free(d.buf);
}

/* Frames with strides wider than the image (not mpe_frame_alloc's layout). */
static void strided_frames(TestCtx *t)
{
    Fixture fx;
    MpeInput *in = NULL;
    MpeError err;
    MpeFrame fr;
    const char *p = tpath("strided.png");
    int w = 21, h = 17, ret;

    fixture_init(&fx, w, h, PNG_COLOR_TYPE_GRAY_ALPHA, 16, 1, 55);
    write_png(p, &fx);
    ret = input_open(&in, p, 0, &err);
    CHECK(t, ret == 0, "open: %s", err.msg);
    if (ret == 0) {
        uint8_t *buf = malloc((size_t)(3 * w + 5) * h);
        memset(&fr, 0, sizeof(fr));
        fr.format = MPE_FRAME_RGB24;
        fr.width = w;
        fr.height = h;
        fr.data[0] = buf;
        fr.stride[0] = 3 * w + 5;
        ret = mpe_input_read(in, &fr, &err);
        CHECK(t, ret == 1, "read: %d %s", ret, err.msg);
        if (ret == 1)
            CHECK(t, compare_rgb(t, &fr, &fx) == 0, "differs");
        free(buf);
        mpe_input_close(in);
    }
    fixture_free(&fx);

    /* Y4M into planes with padding between rows */
    {
        Y4mData d = {0};
        size_t fb = frame_bytes(w, h);
        uint8_t *want = malloc(fb), *planes[3];
        int cw = (w + 1) / 2, ch = (h + 1) / 2;
        const char *hdr = "YUV4MPEG2 W21 H17 F25:1\n";

        p = tpath("strided.y4m");
        frame_fill(want, fb, 3);
        y4m_append(&d, hdr, strlen(hdr));
        y4m_append(&d, "FRAME\n", 6);
        y4m_append(&d, want, fb);
        write_file(p, d.buf, d.len);
        free(d.buf);
        ret = input_open(&in, p, 0, &err);
        CHECK(t, ret == 0, "open: %s", err.msg);
        if (ret == 0) {
            memset(&fr, 0, sizeof(fr));
            fr.format = MPE_FRAME_YUV420;
            fr.width = w;
            fr.height = h;
            for (int c = 0; c < 3; c++) {
                fr.stride[c] = (c ? cw : w) + 11;
                planes[c] = fr.data[c] = malloc((size_t)fr.stride[c] * (c ? ch : h));
            }
            ret = mpe_input_read(in, &fr, &err);
            CHECK(t, ret == 1, "read: %d %s", ret, err.msg);
            if (ret == 1) {
                size_t off = 0;
                int ok = 1;
                for (int c = 0; c < 3; c++)
                    for (int y = 0; y < (c ? ch : h); y++, off += c ? cw : w)
                        ok &= !memcmp(fr.data[c] + (size_t)y * fr.stride[c], want + off,
                                      c ? cw : w);
                CHECK(t, ok, "planes differ");
            }
            CHECK(t, mpe_input_read(in, &fr, &err) == 0, "end");
            for (int c = 0; c < 3; c++)
                free(planes[c]);
            mpe_input_close(in);
        }
        free(want);
    }
}

/* ---------------------------------------------------------------- recon */

static void fill_picture(MpePicture *pic, int seed)
{
    TestRng r = {(unsigned long long)seed * 31 + 7};
    for (int c = 0; c < 3; c++) {
        int w = c ? (pic->width + 1) / 2 : pic->width;
        int h = c ? (pic->height + 1) / 2 : pic->height;
        for (int y = 0; y < pic->plane_h[c]; y++)
            for (int x = 0; x < pic->stride[c]; x++)
                pic->plane[c][(size_t)y * pic->stride[c] + x] =
                    x < w && y < h ? (uint8_t)(test_rand(&r) % 200) : 0xEE; /* 0xEE: padding */
    }
}

/* Appends the picture's visible samples to d. */
static void append_visible(Y4mData *d, const MpePicture *pic)
{
    for (int c = 0; c < 3; c++) {
        int w = c ? (pic->width + 1) / 2 : pic->width;
        int h = c ? (pic->height + 1) / 2 : pic->height;
        for (int y = 0; y < h; y++)
            y4m_append(d, pic->plane[c] + (size_t)y * pic->stride[c], w);
    }
}

static void recon_bytes(TestCtx *t)
{
    const char *p = tpath("recon.y4m");
    MpePicture pic;
    Y4mData want = {0};
    const char *hdr = "YUV4MPEG2 W17 H9 F30000:1001 Ip A1:1 C420jpeg\n";
    FILE *f = fopen(p, "wb");
    uint8_t *got;
    size_t len = 0;

    CHECK(t, f != NULL, "fopen");
    if (!f)
        return;
    CHECK(t, mpe_picture_alloc(&pic, 17, 9) == 0, "alloc");
    CHECK(t, mpe_y4m_write_header(f, 17, 9, 30000, 1001) == 0, "header");
    y4m_append(&want, hdr, strlen(hdr));
    for (int i = 0; i < 2; i++) {
        fill_picture(&pic, i);
        CHECK(t, mpe_y4m_write_picture(f, &pic) == 0, "picture %d", i);
        y4m_append(&want, "FRAME\n", 6);
        append_visible(&want, &pic);
    }
    fclose(f);
    got = read_file(p, &len);
    CHECK(t, got && len == want.len, "length %zu want %zu (= 47 + 2*(6+17*9+2*9*5))", len,
          want.len);
    CHECK(t, want.len == strlen(hdr) + 2 * (6 + 17 * 9 + 2 * 9 * 5), "expected length");
    if (got && len == want.len)
        CHECK(t, memcmp(got, want.buf, len) == 0, "bytes differ");
    CHECK(t, got && !memchr(got, 0xEE, len), "padding leaked into the output");
    free(got);
    free(want.buf);
    mpe_picture_free(&pic);
}

/* recon output read back through the Y4M reader */
static void recon_roundtrip(TestCtx *t)
{
    const char *p = tpath("rt.y4m");
    MpePicture pic;
    MpeInput *in = NULL;
    MpeFrame fr;
    MpeError err;
    FILE *f = fopen(p, "wb");

    if (!f) {
        CHECK(t, 0, "fopen");
        return;
    }
    mpe_picture_alloc(&pic, 33, 17);
    fill_picture(&pic, 5);
    mpe_y4m_write_header(f, 33, 17, 25, 1);
    mpe_y4m_write_picture(f, &pic);
    fclose(f);
    CHECK(t, mpe_input_open(&in, p, 0, &err) == 0, "open: %s", err.msg);
    if (in) {
        CHECK(t, mpe_input_info(in)->width == 33 && mpe_input_info(in)->height == 17 &&
                     mpe_input_info(in)->fps_num == 25 && mpe_input_info(in)->fps_den == 1,
              "info");
        mpe_frame_alloc(&fr, MPE_FRAME_YUV420, 33, 17);
        CHECK(t, mpe_input_read(in, &fr, &err) == 1, "read: %s", err.msg);
        for (int c = 0; c < 3; c++) {
            int w = c ? 17 : 33, h = c ? 9 : 17, ok = 1;
            for (int y = 0; y < h; y++)
                ok &= !memcmp(fr.data[c] + (size_t)y * fr.stride[c],
                              pic.plane[c] + (size_t)y * pic.stride[c], w);
            CHECK(t, ok, "plane %d differs", c);
        }
        CHECK(t, mpe_input_read(in, &fr, &err) == 0, "end");
        mpe_frame_free(&fr);
        mpe_input_close(in);
    }
    mpe_picture_free(&pic);
}

static void recon_errors(TestCtx *t)
{
    MpePicture pic;
    FILE *f = fopen("/dev/full", "wb");
    int ret;

    CHECK(t, mpe_y4m_write_header(stdout, 0, 16, 25, 1) == -EINVAL, "zero width accepted");
    CHECK(t, mpe_y4m_write_header(stdout, 16, 16, 0, 1) == -EINVAL, "zero rate accepted");
    if (!f) {
        test_skip(t, "no /dev/full");
        return;
    }
    mpe_picture_alloc(&pic, 64, 48);
    fill_picture(&pic, 1);
    ret = mpe_y4m_write_header(f, 64, 48, 25, 1);
    CHECK(t, ret == -ENOSPC, "header to /dev/full: %d", ret);
    clearerr(f);
    ret = mpe_y4m_write_picture(f, &pic);
    CHECK(t, ret == -ENOSPC, "picture to /dev/full: %d", ret);
    fclose(f);
    mpe_picture_free(&pic);
}

/* ----------------------------------------------------------------- main */

/* ----------------------------------------------------------- read-ahead */

/* Many frames, read with 1..8 reader threads: order, content and names as
 * without reading ahead (check_sequence), for a pattern and a directory. */
static void ahead_order(TestCtx *t)
{
    enum { N = 37 };
    int vals[N];
    const char *names[N], *dnames[N];
    char pat_names[N][512], dir_names[N][512];
    const int threads[] = { 1, 2, 3, 8 };

    mkdir(tpath("many"), 0755);
    mkdir(tpath("manyd"), 0755);
    for (int i = 0; i < N; i++) {
        vals[i] = (7 * i) % 250;
        snprintf(pat_names[i], sizeof(pat_names[i]), "%s", tpath("many/f%03d.png", i));
        snprintf(dir_names[i], sizeof(dir_names[i]), "%s", tpath("manyd/g%03d.png", i));
        write_flat_png(pat_names[i], 40, 24, vals[i]);
        write_flat_png(dir_names[i], 40, 24, vals[i]);
        names[i] = pat_names[i];
        dnames[i] = dir_names[i];
    }
    for (size_t k = 0; k < sizeof(threads) / sizeof(threads[0]); k++) {
        g_ahead = threads[k];
        check_sequence(t, tpath("many/f%%03d.png"), 0, N, vals, names);
        check_sequence(t, tpath("manyd"), 0, N, vals, dnames);
        /* a gap ends a pattern at the first missing number, as without threads */
        check_sequence(t, tpath("many/f%%03d.png"), 30, 7, vals + 30, names + 30);
    }
    g_ahead = 0;
}

static void ahead_gap(TestCtx *t)
{
    int vals[2] = { 10, 20 };
    const char *names[2];
    mkdir(tpath("gap"), 0755);
    write_flat_png(tpath("gap/s_0.png"), 16, 16, 10);
    write_flat_png(tpath("gap/s_1.png"), 16, 16, 20);
    write_flat_png(tpath("gap/s_3.png"), 16, 16, 30);
    names[0] = tpath("gap/s_0.png");
    names[1] = tpath("gap/s_1.png");
    for (int th = 1; th <= 4; th += 3) {
        g_ahead = th;
        check_sequence(t, tpath("gap/s_%%d.png"), 0, 2, vals, names);
    }
    g_ahead = 0;
}

/* An error in frame 2 of 6 is reported on the third read, with the frame's
 * name, though the threads saw it early; asking again gives it again. */
static void ahead_error_in_order(TestCtx *t)
{
    const char *bad = tpath("ae/s_2.png");
    MpeInput *in = NULL;
    MpeError err;
    MpeFrame fr;
    mkdir(tpath("ae"), 0755);
    for (int i = 0; i < 6; i++)
        write_flat_png(tpath("ae/s_%d.png", i), 16, 16, i);
    write_file(bad, "garbage", 7);
    g_ahead = 4;
    CHECK(t, input_open(&in, tpath("ae/s_%%d.png"), 0, &err) == 0, "open: %s", err.msg);
    g_ahead = 0;
    if (!in)
        return;
    mpe_frame_alloc(&fr, MPE_FRAME_RGB24, 16, 16);
    for (int i = 0; i < 2; i++) {
        int ret = mpe_input_read(in, &fr, &err);
        CHECK(t, ret == 1 && fr.data[0][0] == i, "frame %d: %d", i, ret);
        CHECK(t, !strcmp(mpe_input_current_name(in), tpath("ae/s_%d.png", i)), "name %s",
              mpe_input_current_name(in));
        CHECK(t, mpe_input_decode_ms(in) > 0, "no decode time for frame %d", i);
    }
    for (int again = 0; again < 2; again++) {
        memset(&err, 0, sizeof(err));
        CHECK(t, mpe_input_read(in, &fr, &err) < 0, "corrupt frame 2 read");
        CHECK_MSG(t, err, bad, "not a PNG file");
        CHECK(t, !strcmp(mpe_input_current_name(in), bad), "name %s", mpe_input_current_name(in));
    }
    mpe_frame_free(&fr);
    mpe_input_close(in);
}

static void ahead_api(TestCtx *t)
{
    MpeInput *in = NULL;
    MpeError err;
    MpeFrame fr;
    mkdir(tpath("api"), 0755);
    for (int i = 0; i < 20; i++)
        write_flat_png(tpath("api/s_%d.png", i), 64, 32, i);
    CHECK(t, mpe_input_open(&in, tpath("api/s_%%d.png"), 0, &err) == 0, "open: %s", err.msg);
    if (!in)
        return;
    CHECK(t, mpe_input_start_ahead(in, 0, &err) == 0, "0 threads is synchronous");
    CHECK(t, mpe_input_start_ahead(in, 3, &err) == 0, "start: %s", err.msg);
    CHECK(t, mpe_input_start_ahead(in, 3, &err) < 0, "second start accepted");
    mpe_frame_alloc(&fr, MPE_FRAME_RGB24, 64, 32);
    CHECK(t, mpe_input_read(in, &fr, &err) == 1 && fr.data[0][0] == 0, "first frame");
    mpe_frame_free(&fr);
    /* closing while the threads are still decoding must neither hang nor leak */
    mpe_input_close(in);
}

/* --read-threads auto: the pool's threads for PNG, within 1 GiB of
 * readers' memory (2 frames read ahead and about 2 more while decoding,
 * per thread) and 64; one reader for Y4M */
static void ahead_auto_threads(TestCtx *t)
{
    MpeInput *in = NULL;
    MpeError err;
    Y4mData d = y4m_make("YUV4MPEG2 W64 H32 F25:1\n", 64, 32, 2, "FRAME\n");
    CHECK(t, write_file(tpath("auto.y4m"), d.buf, d.len) == 0, "write y4m");
    free(d.buf);
    write_flat_png(tpath("auto_small.png"), 64, 32, 1);
    write_flat_png(tpath("auto_big.png"), 2048, 2048, 1);
    if (mpe_input_open(&in, tpath("auto_small.png"), 0, &err) == 0) {
        CHECK(t, mpe_input_auto_threads(in, 16) == 16, "16-thread pool: %d", mpe_input_auto_threads(in, 16));
        CHECK(t, mpe_input_auto_threads(in, 0) == 1, "empty pool: %d", mpe_input_auto_threads(in, 0));
        CHECK(t, mpe_input_auto_threads(in, 256) == 64, "256-thread pool: %d", mpe_input_auto_threads(in, 256));
        mpe_input_close(in);
    } else {
        CHECK(t, 0, "open small png: %s", err.msg);
    }
    /* 2048x2048 RGB: 1 GiB / (4 * 12 MiB) = 21 threads */
    if (mpe_input_open(&in, tpath("auto_big.png"), 0, &err) == 0) {
        CHECK(t, mpe_input_auto_threads(in, 16) == 16, "16-thread pool: %d", mpe_input_auto_threads(in, 16));
        CHECK(t, mpe_input_auto_threads(in, 256) == 21, "256-thread pool: %d", mpe_input_auto_threads(in, 256));
        mpe_input_close(in);
    } else {
        CHECK(t, 0, "open big png: %s", err.msg);
    }
    if (mpe_input_open(&in, tpath("auto.y4m"), 0, &err) == 0) {
        CHECK(t, mpe_input_auto_threads(in, 16) == 1, "y4m: %d", mpe_input_auto_threads(in, 16));
        mpe_input_close(in);
    } else {
        CHECK(t, 0, "open y4m: %s", err.msg);
    }
}

int main(void)
{
    TestCtx t;
    char tmpl[] = "/tmp/mpe_test_input.XXXXXX";

    signal(SIGPIPE, SIG_IGN);
    test_init(&t, "test_input");
    if (!mkdtemp(tmpl)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(g_dir, sizeof(g_dir), "%s", tmpl);

    test_run(&t, "png_rgb8", png_rgb8);
    test_run(&t, "png_rgb16", png_rgb16);
    test_run(&t, "png_rgba8", png_rgba8);
    test_run(&t, "png_rgba16", png_rgba16);
    test_run(&t, "png_gray8", png_gray8);
    test_run(&t, "png_gray16", png_gray16);
    test_run(&t, "png_gray_alpha8", png_gray_alpha8);
    test_run(&t, "png_gray_alpha16", png_gray_alpha16);
    test_run(&t, "png_gray1", png_gray1);
    test_run(&t, "png_gray2", png_gray2);
    test_run(&t, "png_gray4", png_gray4);
    test_run(&t, "png_palette8", png_palette8);
    test_run(&t, "png_palette4", png_palette4);
    test_run(&t, "png_palette1", png_palette1);
    test_run(&t, "png_palette_trns", png_palette_trns);
    test_run(&t, "png_palette4_trns_interlaced", png_palette4_trns_interlaced);
    test_run(&t, "png_gray_trns", png_gray_trns);
    test_run(&t, "png_rgb_trns", png_rgb_trns);
    test_run(&t, "png_alpha_not_composited", png_alpha_not_composited);
    test_run(&t, "png_interlaced_rgb8", png_interlaced_rgb8);
    test_run(&t, "png_interlaced_rgba16", png_interlaced_rgba16);
    test_run(&t, "png_interlaced_gray4", png_interlaced_gray4);
    test_run(&t, "png_interlaced_gray_alpha8", png_interlaced_gray_alpha8);
    test_run(&t, "png_interlaced_palette8", png_interlaced_palette8);
    test_run(&t, "png_large_rgb8", png_large_rgb8);
    test_run(&t, "png_gamma_ignored", png_gamma_ignored);
    test_run(&t, "png_16bit_rounding_exhaustive", png_16bit_rounding_exhaustive);
    test_run(&t, "png_missing_file", png_missing_file);
    test_run(&t, "png_text_file", png_text_file);
    test_run(&t, "png_truncated", png_truncated);
    test_run(&t, "png_crc_error", png_crc_error);
    test_run(&t, "png_too_small", png_too_small);
    test_run(&t, "png_too_large", png_too_large);
    test_run(&t, "png_unreadable", png_unreadable);
    test_run(&t, "frame_buffer_mismatch", frame_buffer_mismatch);
    test_run(&t, "pattern_start_number", pattern_start_number);
    test_run(&t, "pattern_zero_padded", pattern_zero_padded);
    test_run(&t, "pattern_literal_percent", pattern_literal_percent);
    test_run(&t, "pattern_rejected", pattern_rejected);
    test_run(&t, "pattern_missing_first", pattern_missing_first);
    test_run(&t, "pattern_size_differs", pattern_size_differs);
    test_run(&t, "pattern_bad_frame_midway", pattern_bad_frame_midway);
    test_run(&t, "pattern_mixed_types", pattern_mixed_types);
    test_run(&t, "strided_frames", strided_frames);
    test_run(&t, "dir_order", dir_order);
    test_run(&t, "dir_empty", dir_empty);
    test_run(&t, "dir_size_differs", dir_size_differs);
    test_run(&t, "y4m_colourspaces", y4m_colourspaces);
    test_run(&t, "y4m_frame_params", y4m_frame_params);
    test_run(&t, "y4m_rejected_colourspace", y4m_rejected_colourspace);
    test_run(&t, "y4m_missing_size", y4m_missing_size);
    test_run(&t, "y4m_size_range", y4m_size_range);
    test_run(&t, "y4m_absurd_tags", y4m_absurd_tags);
    test_run(&t, "y4m_not_y4m", y4m_not_y4m);
    test_run(&t, "y4m_truncated", y4m_truncated);
    test_run(&t, "y4m_bad_marker", y4m_bad_marker);
    test_run(&t, "y4m_stdin_pipe", y4m_stdin_pipe);
    test_run(&t, "y4m_stdin_errors", y4m_stdin_errors);
    test_run(&t, "recon_bytes", recon_bytes);
    test_run(&t, "recon_roundtrip", recon_roundtrip);
    test_run(&t, "recon_errors", recon_errors);
    test_run(&t, "ahead_order", ahead_order);
    test_run(&t, "ahead_gap", ahead_gap);
    test_run(&t, "ahead_error_in_order", ahead_error_in_order);
    test_run(&t, "ahead_api", ahead_api);
    test_run(&t, "ahead_auto_threads", ahead_auto_threads);

    /* the readers' own cases again, reading ahead on 3 threads */
    {
        static const struct { const char *name; void (*fn)(TestCtx *); } again[] = {
            { "png_rgb8", png_rgb8 },
            { "png_interlaced_rgba16", png_interlaced_rgba16 },
            { "png_truncated", png_truncated },
            { "png_crc_error", png_crc_error },
            { "frame_buffer_mismatch", frame_buffer_mismatch },
            { "pattern_start_number", pattern_start_number },
            { "pattern_zero_padded", pattern_zero_padded },
            { "pattern_size_differs", pattern_size_differs },
            { "pattern_bad_frame_midway", pattern_bad_frame_midway },
            { "pattern_mixed_types", pattern_mixed_types },
            { "strided_frames", strided_frames },
            { "dir_order", dir_order },
            { "dir_size_differs", dir_size_differs },
            { "y4m_colourspaces", y4m_colourspaces },
            { "y4m_frame_params", y4m_frame_params },
            { "y4m_truncated", y4m_truncated },
            { "y4m_bad_marker", y4m_bad_marker },
            { "y4m_stdin_pipe", y4m_stdin_pipe },
            { "y4m_stdin_errors", y4m_stdin_errors },
        };
        char name[96], root[sizeof(g_dir)];
        /* fixtures of the first pass stay out of the way: a directory of its own */
        snprintf(root, sizeof(root), "%s", g_dir);
        snprintf(g_dir, sizeof(g_dir), "%.50s/ahead", root);
        mkdir(g_dir, 0700);
        for (size_t i = 0; i < sizeof(again) / sizeof(again[0]); i++) {
            g_ahead = 3;
            snprintf(name, sizeof(name), "ahead3_%s", again[i].name);
            test_run(&t, name, again[i].fn);
        }
        g_ahead = 0;
        snprintf(g_dir, sizeof(g_dir), "%s", root);
    }

    rm_rf(g_dir);
    return test_finish(&t);
}
