/* test_png_decode.c — the fast PNG path (input/png_decode.c) against
 * libpng and against the pixels it was made from.
 *
 * The PNGs are written here byte by byte (own CRC-32, zlib streams of
 * stored deflate blocks), not by libpng, so that the test controls what the
 * fast path must follow: a random filter type per row (the filtering done
 * by this file's own encoder), IDAT split into many chunks including empty
 * ones, ancillary chunks before and after the image data.  Real compressed
 * streams come from the PNGs in tests/data (and ../shared), which are also
 * damaged on purpose.  Each image is decoded four ways (fast with SIMD,
 * fast with the C unfilters, fast inflating with zlib, libpng only) and
 * each result must equal the RGB expected from
 * the source pixels.  Damaged files must fail in both decoders with a
 * "NAME: corrupt PNG (" message, or succeed in both with the same pixels.
 * The SIMD unfilters are also checked one by one against the C ones on
 * random rows, with guard bytes after the row.  PNGs in tests/data, the
 * fuzz corpus, samples/ and ../shared (skipped when absent) are decoded
 * every way and compared.  The fast decoder inflating with libdeflate must
 * give exactly what it gives inflating with zlib (MPE_PNG_ZLIB_STREAM):
 * result, message and frame bytes, a failure's partial rows included. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "common/cpu.h"
#include "common/picture.h"
#include "input/png_decode.h"
#include "tests/test.h"

/* ------------------------------------------------------------- writer */

typedef struct Buf {
    uint8_t *p;
    size_t n, cap;
    int oom;
} Buf;

static void buf_put(Buf *b, const void *p, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        uint8_t *np;
        while (cap < b->n + n)
            cap *= 2;
        if (!(np = realloc(b->p, cap))) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* CRC-32 of ISO/IEC 15948 Annex D, bit by bit. */
static uint32_t crc_update(uint32_t crc, const uint8_t *p, size_t n)
{
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = crc & 1 ? 0xedb88320u ^ (crc >> 1) : crc >> 1;
    }
    return ~crc;
}

/* A zlib stream (RFC 1950) of stored deflate blocks (RFC 1951 §3.2.4) of
 * at most `block` bytes. */
static void zlib_stored(Buf *out, const uint8_t *p, size_t n, size_t block)
{
    uint32_t s1 = 1, s2 = 0;
    uint8_t a[4];
    buf_put(out, "\x78\x01", 2);
    for (size_t off = 0;;) {
        size_t k = MPE_MIN(block, n - off);
        uint8_t h[5] = {off + k == n, (uint8_t)k, (uint8_t)(k >> 8), (uint8_t)~k, (uint8_t)(~k >> 8)};
        buf_put(out, h, 5);
        buf_put(out, p + off, k);
        off += k;
        if (off == n)
            break;
    }
    for (size_t i = 0; i < n; i++) {
        s1 = (s1 + p[i]) % 65521;
        s2 = (s2 + s1) % 65521;
    }
    a[0] = (uint8_t)(s2 >> 8);
    a[1] = (uint8_t)s2;
    a[2] = (uint8_t)(s1 >> 8);
    a[3] = (uint8_t)s1;
    buf_put(out, a, 4);
}

static void chunk(Buf *b, const char *type, const uint8_t *data, size_t len)
{
    uint8_t h[8], c[4];
    uint32_t crc = crc_update(0, (const uint8_t *)type, 4);
    if (len)
        crc = crc_update(crc, data, len);
    put32(h, (uint32_t)len);
    memcpy(h + 4, type, 4);
    put32(c, (uint32_t)crc);
    buf_put(b, h, 8);
    if (len)
        buf_put(b, data, len);
    buf_put(b, c, 4);
}

static int channels_of(int color_type)
{
    return color_type == 0 ? 1 : color_type == 4 ? 2 : color_type == 2 ? 3 : 4;
}

static uint8_t paeth_ref(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return (uint8_t)(pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
}

/* Filters raw rows (h rows of rb bytes) with filter filt[y] each into out
 * (h rows of 1 + rb bytes): the encoder side of ISO/IEC 15948 §9.2. */
static void filter_rows(uint8_t *out, const uint8_t *raw, const int *filt, int h, size_t rb, int bpp)
{
    for (int y = 0; y < h; y++) {
        const uint8_t *cur = raw + (size_t)y * rb, *up = y ? cur - rb : NULL;
        uint8_t *o = out + (size_t)y * (rb + 1);
        o[0] = (uint8_t)filt[y];
        for (size_t i = 0; i < rb; i++) {
            int a = i >= (size_t)bpp ? cur[i - bpp] : 0, b = up ? up[i] : 0;
            int c = up && i >= (size_t)bpp ? up[i - bpp] : 0, pred = 0;
            switch (filt[y]) {
            case 1: pred = a; break;
            case 2: pred = b; break;
            case 3: pred = (a + b) >> 1; break;
            case 4: pred = paeth_ref(a, b, c); break;
            }
            o[1 + i] = (uint8_t)(cur[i] - pred);
        }
    }
}

typedef struct PngSpec {
    int w, h, color_type;
    int idat_max;        /* largest IDAT chunk; 0: one chunk */
    int empty_idats;     /* zero-length IDATs sprinkled in */
    int extra_rows;      /* rows of compressed data beyond the image (too much data) */
    int drop_rows;       /* rows missing from the compressed data (not enough) */
    int ancillary;       /* tEXt before and after the image data */
    int block;           /* largest stored deflate block (1..65535) */
} PngSpec;

/* Writes a PNG of random pixels (kept in *raw: h rows of w*ch bytes) with a
 * random filter per row.  Returns 0, or -1 when out of memory. */
static int make_png(Buf *out, uint8_t **raw_out, const PngSpec *s, TestRng *rng)
{
    const int ch = channels_of(s->color_type), rows = s->h + s->extra_rows - s->drop_rows;
    const size_t rb = (size_t)s->w * ch;
    uint8_t *raw = NULL, *filt_data = NULL, ihdr[13];
    int *filt = NULL, ret = -1;
    Buf z = {0};

    memset(out, 0, sizeof(*out));
    *raw_out = NULL;
    raw = malloc(rb * (size_t)(s->h + s->extra_rows) + 1);
    filt = malloc(sizeof(*filt) * (size_t)(s->h + s->extra_rows));
    filt_data = malloc((rb + 1) * (size_t)(s->h + s->extra_rows) + 1);
    if (!raw || !filt || !filt_data)
        goto fail;
    /* smooth-ish pixels with noise, so every filter sees real predictions */
    for (int y = 0; y < s->h + s->extra_rows; y++) {
        filt[y] = (int)(test_rand(rng) % 5);
        for (size_t i = 0; i < rb; i++) {
            unsigned r = test_rand(rng);
            raw[(size_t)y * rb + i] = (uint8_t)(r & 1 ? r >> 8 : (unsigned)(y * 3 + (int)i) + (r >> 28));
        }
    }
    filter_rows(filt_data, raw, filt, s->h + s->extra_rows, rb, ch);
    zlib_stored(&z, filt_data, (rb + 1) * (size_t)rows, (size_t)MPE_CLAMP(s->block, 1, 65535));
    if (z.oom)
        goto fail;

    buf_put(out, "\x89PNG\r\n\x1a\n", 8);
    put32(ihdr, (uint32_t)s->w);
    put32(ihdr + 4, (uint32_t)s->h);
    ihdr[8] = 8;
    ihdr[9] = (uint8_t)s->color_type;
    ihdr[10] = ihdr[11] = ihdr[12] = 0;
    chunk(out, "IHDR", ihdr, 13);
    if (s->ancillary)
        chunk(out, "tEXt", (const uint8_t *)"Comment\0before", 14);
    for (size_t off = 0; off < z.n;) {
        size_t n = s->idat_max ? 1 + test_rand(rng) % (unsigned)s->idat_max : z.n;
        if (n > z.n - off)
            n = z.n - off;
        if (s->empty_idats && test_rand(rng) % 3 == 0)
            chunk(out, "IDAT", NULL, 0);
        chunk(out, "IDAT", z.p + off, n);
        off += n;
    }
    if (s->empty_idats)
        chunk(out, "IDAT", NULL, 0);
    if (s->ancillary)
        chunk(out, "tEXt", (const uint8_t *)"Comment\0after", 13);
    chunk(out, "IEND", NULL, 0);
    if (out->oom)
        goto fail;
    *raw_out = raw;
    raw = NULL;
    ret = 0;
fail:
    free(raw);
    free(filt);
    free(filt_data);
    free(z.p);
    return ret;
}

/* ------------------------------------------------------------ helpers */

/* The fast decoder with this CPU's unfilters, with the C ones, inflating
 * with zlib's streaming API (the same as the first where built without
 * libdeflate), and libpng's. */
enum { FAST, FAST_C, FAST_ZLIB, LIBPNG, NDEC };
static const unsigned kFlags[NDEC] = {0, 0, MPE_PNG_ZLIB_STREAM, MPE_PNG_LIBPNG_ONLY};
static unsigned cpu_flags_of(int i)
{
    return i == FAST_C ? 0 : mpe_cpu_flags();
}
static const char *const kFlagName[NDEC] = {"fast", "fast-C", "fast-zlib", "libpng"};

/* Decodes with each of kFlags; results[i] holds 0 or the error code, the
 * frames the pixels.  Returns 0, or -1 when the header cannot be read. */
static int decode_all(TestCtx *t, MpeFrame fr[NDEC], int res[NDEC], MpeError errs[NDEC], const uint8_t *p,
                    size_t n, const char *name)
{
    int w = 0, h = 0;
    MpeError err;
    if (mpe_png_decode(NULL, &w, &h, p, n, name, 0, 0, &err) < 0)
        return -1;
    for (int i = 0; i < NDEC; i++) {
        int ow = 0, oh = 0;
        memset(&fr[i], 0, sizeof(fr[i]));
        if (mpe_frame_alloc(&fr[i], MPE_FRAME_RGB24, w, h) < 0) {
            CHECK(t, 0, "alloc %dx%d", w, h);
            return -1;
        }
        memset(fr[i].data[0], 0xA5, (size_t)fr[i].stride[0] * h);
        res[i] = mpe_png_decode(&fr[i], &ow, &oh, p, n, name, kFlags[i], cpu_flags_of(i), &errs[i]);
    }
    return 0;
}

static int frames_equal(const MpeFrame *a, const MpeFrame *b)
{
    for (int y = 0; y < a->height; y++)
        if (memcmp(a->data[0] + (size_t)y * a->stride[0], b->data[0] + (size_t)y * b->stride[0],
                   (size_t)a->width * 3))
            return 0;
    return 1;
}

static int frame_is_raw(const MpeFrame *f, const uint8_t *raw, int ch)
{
    for (int y = 0; y < f->height; y++)
        for (int x = 0; x < f->width; x++) {
            const uint8_t *s = raw + ((size_t)y * f->width + x) * ch;
            const uint8_t *d = f->data[0] + (size_t)y * f->stride[0] + 3 * x;
            uint8_t r = s[0], g = ch >= 3 ? s[1] : s[0], b = ch >= 3 ? s[2] : s[0];
            if (d[0] != r || d[1] != g || d[2] != b)
                return 0;
        }
    return 1;
}

/* The fast decoder inflating with libdeflate and with zlib: the same result,
 * the same message, the same frame bytes (on a failure too: the rows made
 * before it).  Where built without libdeflate both are zlib. */
static void check_same_as_zlib(TestCtx *t, MpeFrame fr[NDEC], const int res[NDEC],
                               const MpeError errs[NDEC], const char *what)
{
    CHECK(t, res[FAST] == res[FAST_ZLIB] &&
                 (res[FAST] >= 0 || strcmp(errs[FAST].msg, errs[FAST_ZLIB].msg) == 0),
          "%s: fast gives %d '%s', fast-zlib %d '%s'", what, res[FAST],
          res[FAST] < 0 ? errs[FAST].msg : "", res[FAST_ZLIB], res[FAST_ZLIB] < 0 ? errs[FAST_ZLIB].msg : "");
    CHECK(t, frames_equal(&fr[FAST], &fr[FAST_ZLIB]), "%s: fast's frame bytes differ from fast-zlib's",
          what);
}

static void free_all(MpeFrame fr[NDEC])
{
    for (int i = 0; i < NDEC; i++)
        mpe_frame_free(&fr[i]);
}

/* -------------------------------------------------------- round trips */

static void roundtrip(TestCtx *t, const PngSpec *s, TestRng *rng)
{
    Buf png;
    uint8_t *raw = NULL;
    MpeFrame fr[NDEC];
    MpeError errs[NDEC];
    int res[NDEC];
    char name[96];

    snprintf(name, sizeof(name), "gen_%dx%d_ct%d_idat%d.png", s->w, s->h, s->color_type,
             s->idat_max);
    if (make_png(&png, &raw, s, rng) < 0) {
        CHECK(t, 0, "%s: cannot write", name);
        free(png.p);
        return;
    }
    if (decode_all(t, fr, res, errs, png.p, png.n, name) < 0) {
        CHECK(t, 0, "%s: header not read", name);
    } else {
        for (int i = 0; i < NDEC; i++) {
            CHECK(t, res[i] == 0, "%s: %s decoder failed: %s", name, kFlagName[i], errs[i].msg);
            CHECK(t, res[i] != 0 || frame_is_raw(&fr[i], raw, channels_of(s->color_type)),
                  "%s: %s decoder's pixels differ from the source", name, kFlagName[i]);
        }
        check_same_as_zlib(t, fr, res, errs, name);
        free_all(fr);
    }
    free(raw);
    free(png.p);
}

static void roundtrip_layouts(TestCtx *t)
{
    static const int widths[] = {1, 2, 3, 5, 16, 17, 31, 64, 127, 300};
    static const int heights[] = {1, 2, 3, 7, 16, 33};
    static const int cts[] = {0, 2, 4, 6};
    TestRng rng = {0xC0FFEEull};
    for (size_t ci = 0; ci < 4; ci++)
        for (size_t wi = 0; wi < sizeof(widths) / sizeof(widths[0]); wi++)
            for (size_t hi = 0; hi < sizeof(heights) / sizeof(heights[0]); hi++) {
                PngSpec s = {widths[wi], heights[hi], cts[ci], 0, 0, 0, 0, 0, 65535};
                /* many small IDATs with empty ones between them, half the time */
                if ((wi + hi) & 1) {
                    s.idat_max = 1 + (int)(test_rand(&rng) % 200);
                    s.empty_idats = 1;
                    s.ancillary = 1;
                }
                s.block = 1 + (int)(test_rand(&rng) % 70000);
                roundtrip(t, &s, &rng);
            }
}

static void roundtrip_large(TestCtx *t)
{
    /* rows larger than the inflate buffer, and a 4095-wide RGBA one */
    TestRng rng = {77};
    PngSpec a = {4095, 9, 6, 5000, 1, 0, 0, 1, 1000};
    PngSpec b = {2048, 40, 2, 65536, 0, 0, 0, 0, 65535};
    PngSpec c = {11000, 3, 0, 0, 0, 0, 0, 0, 30000};
    roundtrip(t, &a, &rng);
    roundtrip(t, &b, &rng);
    roundtrip(t, &c, &rng);
}

/* One scratch kept from image to image, as each reader thread keeps its own:
 * rows wider than the inflate buffer first (its buffers grow, the inflate
 * buffer filled with their data), then smaller images of other layouts and
 * IDAT splits, each inflated with zlib and with libdeflate.  Every decode
 * must give the source pixels, as with a fresh scratch: nothing of the
 * image before may show through (the zero row above the first row lies
 * where the wide image's inflated data was). */
static void scratch_kept(TestCtx *t)
{
    static const PngSpec specs[] = {
        {20000, 3, 4, 0, 0, 0, 0, 0, 65535},
        {19, 13, 2, 0, 0, 0, 0, 0, 65535},
        {300, 7, 6, 50, 1, 0, 0, 1, 100},
        {17, 33, 0, 0, 0, 0, 0, 0, 65535},
        {64, 16, 4, 200, 0, 0, 0, 0, 1000},
        {5, 3, 2, 7, 1, 0, 0, 0, 65535},
    };
    static const unsigned inflaters[2] = {MPE_PNG_ZLIB_STREAM, 0};
    TestRng rng = {4242};
    MpePngScratch *scratch;

    if (mpe_png_scratch_open(&scratch) < 0) {
        CHECK(t, 0, "scratch: out of memory");
        return;
    }
    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        const PngSpec *s = &specs[i];
        Buf png;
        uint8_t *raw = NULL;
        MpeFrame fr;

        memset(&fr, 0, sizeof(fr));
        if (make_png(&png, &raw, s, &rng) < 0 ||
            mpe_frame_alloc(&fr, MPE_FRAME_RGB24, s->w, s->h) < 0) {
            CHECK(t, 0, "image %zu: out of memory", i);
        } else {
            for (int k = 0; k < 2; k++) {
                MpeError err;
                int ret;
                memset(fr.data[0], 0xA5, (size_t)fr.stride[0] * s->h);
                ret = mpe_png_decode_with(scratch, &fr, NULL, NULL, png.p, png.n, "kept.png",
                                          MPE_PNG_FAST_ONLY | inflaters[k], mpe_cpu_flags(), &err);
                CHECK(t, ret == 0 && frame_is_raw(&fr, raw, channels_of(s->color_type)),
                      "image %zu (%dx%d, color type %d), %s: %d '%s' or pixels differ", i, s->w,
                      s->h, s->color_type, k ? "libdeflate" : "zlib", ret, ret < 0 ? err.msg : "");
            }
        }
        mpe_frame_free(&fr);
        free(raw);
        free(png.p);
    }
    mpe_png_scratch_close(scratch);
}

/* Too much image data (rows after the last) is ignored by both. */
static void too_much_data(TestCtx *t)
{
    TestRng rng = {91};
    for (int ct = 0; ct <= 6; ct += 2) {
        PngSpec s = {23, 17, ct, 37, 1, 5, 0, 1, 100};
        roundtrip(t, &s, &rng);
    }
}

/* ------------------------------------------------------------ damage */

/* Both decoders fail with "NAME: corrupt PNG (" (or "not a PNG"), or both
 * succeed with the same pixels. */
static void expect_agree(TestCtx *t, const uint8_t *p, size_t n, const char *what, int must_fail)
{
    MpeFrame fr[NDEC];
    MpeError errs[NDEC];
    int res[NDEC];
    char prefix[128];

    snprintf(prefix, sizeof(prefix), "%s: corrupt PNG (", what);
    if (decode_all(t, fr, res, errs, p, n, what) < 0)
        return; /* the header already fails: the same libpng code for both */
    for (int i = 0; i < NDEC; i++) {
        CHECK(t, !must_fail || res[i] < 0, "%s: %s decoder did not fail", what, kFlagName[i]);
        CHECK(t, res[i] >= 0 || strncmp(errs[i].msg, prefix, strlen(prefix)) == 0,
              "%s: %s message '%s'", what, kFlagName[i], errs[i].msg);
        CHECK(t, (res[i] < 0) == (res[LIBPNG] < 0), "%s: %s %s but libpng %s (%s / %s)", what,
              kFlagName[i], res[i] < 0 ? "failed" : "succeeded", res[LIBPNG] < 0 ? "failed" : "succeeded",
              res[i] < 0 ? errs[i].msg : "", res[LIBPNG] < 0 ? errs[LIBPNG].msg : "");
        CHECK(t, res[i] < 0 || res[LIBPNG] < 0 || frames_equal(&fr[i], &fr[LIBPNG]),
              "%s: %s pixels differ from libpng's", what, kFlagName[i]);
    }
    check_same_as_zlib(t, fr, res, errs, what);
    free_all(fr);
}

/* Offset of the first chunk of this type, or 0. */
static size_t find_chunk(const uint8_t *p, size_t n, const char *type)
{
    size_t pos = 8;
    while (pos + 12 <= n) {
        uint32_t len = (uint32_t)p[pos] << 24 | (uint32_t)p[pos + 1] << 16 |
                       (uint32_t)p[pos + 2] << 8 | p[pos + 3];
        if (memcmp(p + pos + 4, type, 4) == 0)
            return pos;
        if (len > n - pos - 12)
            break;
        pos += 12 + len;
    }
    return 0;
}

static void fix_crc(uint8_t *p, size_t pos)
{
    uint32_t len = (uint32_t)p[pos] << 24 | (uint32_t)p[pos + 1] << 16 |
                   (uint32_t)p[pos + 2] << 8 | p[pos + 3];
    put32(p + pos + 8 + len, crc_update(0, p + pos + 4, len + 4));
}

static void damaged(TestCtx *t)
{
    TestRng rng = {4242};
    PngSpec s = {37, 23, 2, 300, 1, 0, 0, 1, 50};
    Buf png;
    uint8_t *raw = NULL, *q;
    size_t idat;
    char what[64];

    if (make_png(&png, &raw, &s, &rng) < 0 || !(q = malloc(png.n + 64))) {
        CHECK(t, 0, "cannot write");
        free(png.p);
        free(raw);
        return;
    }
    free(raw);
    idat = find_chunk(png.p, png.n, "IDAT");
    CHECK(t, idat > 0, "no IDAT");

    /* truncated at every length past the header */
    for (size_t cut = idat; cut < png.n; cut += 1 + cut % 7) {
        snprintf(what, sizeof(what), "cut%zu.png", cut);
        expect_agree(t, png.p, cut, what, 1);
    }
    /* a flipped byte in the image data: the CRC catches it */
    for (size_t k = 0; k < 40; k++) {
        size_t at = idat + 8 + test_rand(&rng) % 280;
        memcpy(q, png.p, png.n);
        q[at] ^= (uint8_t)(1 + test_rand(&rng) % 255);
        snprintf(what, sizeof(what), "flip%zu.png", at);
        expect_agree(t, q, png.n, what, 1);
    }
    /* the same with the CRC fixed: zlib errors, bad filter bytes, or
     * (rarely) a different valid image; both decoders must agree */
    for (size_t k = 0; k < 200; k++) {
        size_t at = idat + 8 + test_rand(&rng) % 280;
        memcpy(q, png.p, png.n);
        q[at] ^= (uint8_t)(1 + test_rand(&rng) % 255);
        fix_crc(q, idat);
        snprintf(what, sizeof(what), "zflip%zu.png", at);
        expect_agree(t, q, png.n, what, 0);
    }
    /* a bad filter type byte in an otherwise fine stream */
    {
        PngSpec st = {9, 4, 0, 0, 0, 0, 0, 0, 65535}; /* one stored block */
        Buf p2;
        uint8_t *r2 = NULL;
        if (make_png(&p2, &r2, &st, &rng) == 0) {
            size_t id = find_chunk(p2.p, p2.n, "IDAT");
            /* zlib header 2, stored block header 5, then row 2's filter byte */
            p2.p[id + 8 + 2 + 5 + 2 * 10] = 5;
            fix_crc(p2.p, id);
            expect_agree(t, p2.p, p2.n, "filter5.png", 1);
        }
        free(p2.p);
        free(r2);
    }
    free(q);
    free(png.p);
}

/* Not enough image data: the stream ends early, or a chunk interrupts. */
static void short_data(TestCtx *t)
{
    TestRng rng = {5150};
    for (int ct = 0; ct <= 6; ct += 2) {
        PngSpec s = {19, 13, ct, 50, 1, 0, 3, 1, 64};
        Buf png;
        uint8_t *raw = NULL;
        if (make_png(&png, &raw, &s, &rng) == 0)
            expect_agree(t, png.p, png.n, "short.png", 1);
        free(png.p);
        free(raw);
    }
    {
        /* every row there, but the zlib stream never ends (no final block,
         * no Adler-32): libpng reads on for its end and finds IEND */
        Buf z = {0}, b = {0};
        uint8_t ihdr[13] = {0, 0, 0, 16, 0, 0, 0, 2, 8, 0, 0, 0, 0}, rows[2 * 17];
        memset(rows, 0, sizeof(rows));
        buf_put(&z, "\x78\x01\x00\x22\x00\xdd\xff", 7); /* a non-final stored block */
        buf_put(&z, rows, sizeof(rows));
        buf_put(&b, "\x89PNG\r\n\x1a\n", 8);
        chunk(&b, "IHDR", ihdr, 13);
        chunk(&b, "IDAT", z.p, z.n);
        chunk(&b, "IEND", NULL, 0);
        if (!b.oom && !z.oom)
            expect_agree(t, b.p, b.n, "unended.png", 1);
        free(z.p);
        free(b.p);
    }
    /* every row there and the deflate stream ended, but its Adler-32 cut
     * (1..4 bytes missing): zlib, which reads it even unchecked, never
     * sees the stream end, and neither may the libdeflate path */
    for (int cut = 1; cut <= 4; cut++) {
        Buf z = {0}, b = {0};
        uint8_t ihdr[13] = {0, 0, 0, 16, 0, 0, 0, 2, 8, 0, 0, 0, 0}, rows[2 * 17];
        char what[32];
        for (size_t i = 0; i < sizeof(rows); i++)
            rows[i] = (uint8_t)(i % 17 ? i * 7 : 0);
        zlib_stored(&z, rows, sizeof(rows), 65535);
        buf_put(&b, "\x89PNG\r\n\x1a\n", 8);
        chunk(&b, "IHDR", ihdr, 13);
        if (!z.oom)
            chunk(&b, "IDAT", z.p, z.n - (size_t)cut);
        chunk(&b, "IEND", NULL, 0);
        snprintf(what, sizeof(what), "adler_cut%d.png", cut);
        if (!b.oom && !z.oom)
            expect_agree(t, b.p, b.n, what, 1);
        free(z.p);
        free(b.p);
    }
    {
        /* a tEXt between two IDATs of an image not yet complete */
        PngSpec s = {19, 13, 2, 0, 0, 0, 0, 0, 65535};
        Buf png, b2;
        uint8_t *raw = NULL;
        if (make_png(&png, &raw, &s, &rng) == 0) {
            size_t idat = find_chunk(png.p, png.n, "IDAT");
            uint32_t len = (uint32_t)png.p[idat] << 24 | (uint32_t)png.p[idat + 1] << 16 |
                           (uint32_t)png.p[idat + 2] << 8 | png.p[idat + 3];
            memset(&b2, 0, sizeof(b2));
            buf_put(&b2, png.p, idat);
            chunk(&b2, "IDAT", png.p + idat + 8, len / 2);
            chunk(&b2, "tEXt", (const uint8_t *)"a\0b", 3);
            chunk(&b2, "IDAT", png.p + idat + 8 + len / 2, len - len / 2);
            chunk(&b2, "IEND", NULL, 0);
            if (!b2.oom)
                expect_agree(t, b2.p, b2.n, "split.png", 1);
            free(b2.p);
        }
        free(png.p);
        free(raw);
    }
}

/* Dimensions from the header: absurd ones are refused by the header read
 * (libpng's checks) or by the frame-size check, before any row. */
static void dimensions(TestCtx *t)
{
    static const uint32_t dims[][2] = {{0, 16}, {16, 0}, {0x80000000u, 16}, {16, 0xffffffffu},
                                       {1000001, 16}, {5000, 5000}};
    for (size_t k = 0; k < sizeof(dims) / sizeof(dims[0]); k++) {
        Buf b;
        uint8_t ihdr[13] = {0, 0, 0, 0, 0, 0, 0, 0, 8, 2, 0, 0, 0};
        MpeFrame fr;
        MpeError err;
        int w = -1, h = -1, ret;
        memset(&b, 0, sizeof(b));
        put32(ihdr, dims[k][0]);
        put32(ihdr + 4, dims[k][1]);
        buf_put(&b, "\x89PNG\r\n\x1a\n", 8);
        chunk(&b, "IHDR", ihdr, 13);
        chunk(&b, "IDAT", (const uint8_t *)"\x78\x9c\x03\x00", 4);
        chunk(&b, "IEND", NULL, 0);
        ret = mpe_png_decode(NULL, &w, &h, b.p, b.n, "dim.png", 0, 0, &err);
        if (dims[k][0] == 5000) {
            /* a valid header: the size is the caller's to refuse, and a
             * frame of another size is not decoded into */
            CHECK(t, ret == 0 && w == 5000 && h == 5000, "5000x5000 header: %d %dx%d", ret, w, h);
            if (mpe_frame_alloc(&fr, MPE_FRAME_RGB24, 16, 16) == 0) {
                ret = mpe_png_decode(&fr, &w, &h, b.p, b.n, "dim.png", 0, mpe_cpu_flags(), &err);
                CHECK(t, ret == 1 && w == 5000, "size mismatch not reported: %d", ret);
                mpe_frame_free(&fr);
            }
        } else {
            CHECK(t, ret < 0 && strncmp(err.msg, "dim.png: corrupt PNG (", 22) == 0,
                  "%ux%u accepted (%d) or bad message '%s'", dims[k][0], dims[k][1], ret,
                  ret < 0 ? err.msg : "");
        }
        free(b.p);
    }
}

static void not_png(TestCtx *t)
{
    MpeError err;
    int ret = mpe_png_decode(NULL, NULL, NULL, (const uint8_t *)"GIF89a....", 10, "x.png", 0, 0, &err);
    CHECK(t, ret == -EINVAL && strcmp(err.msg, "x.png: not a PNG file") == 0, "%d %s", ret, err.msg);
    ret = mpe_png_decode(NULL, NULL, NULL, (const uint8_t *)"", 0, "e.png", 0, 0, &err);
    CHECK(t, ret == -EINVAL && strcmp(err.msg, "e.png: not a PNG file") == 0, "%d %s", ret, err.msg);
}

/* ------------------------------------------------- libdeflate vs zlib */

/* Deflate bits (RFC 1951 §3.1.1): values LSB first, Huffman codes MSB first. */
typedef struct Bits {
    Buf *out;
    uint32_t acc;
    int n;
} Bits;

static void bits_put(Bits *b, uint32_t v, int n)
{
    for (int i = 0; i < n; i++) {
        b->acc |= ((v >> i) & 1u) << b->n;
        if (++b->n == 8) {
            uint8_t byte = (uint8_t)b->acc;
            buf_put(b->out, &byte, 1);
            b->acc = 0;
            b->n = 0;
        }
    }
}

static void bits_code(Bits *b, uint32_t code, int len)
{
    for (int i = len - 1; i >= 0; i--)
        bits_put(b, (code >> i) & 1u, 1);
}

/* A zlib stream of one dynamic Huffman block of literals that declares 287
 * literal/length code lengths (HLIT = 30), the last one 0: valid in every
 * other respect.  zlib refuses it ("too many length or distance symbols",
 * RFC 1951 allows at most 286), libdeflate decodes it.  Codes: bytes
 * 0..254 8 bits, byte 255 and end-of-block 9 bits; one distance code of
 * 1 bit; the precode has 0, 1, 8 and 9 at 2 bits each. */
static void zlib_hlit287(Buf *out, const uint8_t *p, size_t n)
{
    static const int order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    Bits b = {out, 0, 0};
    buf_put(out, "\x78\x01", 2);
    bits_put(&b, 1, 1);  /* BFINAL */
    bits_put(&b, 2, 2);  /* dynamic */
    bits_put(&b, 30, 5); /* HLIT: 287 codes */
    bits_put(&b, 0, 5);  /* HDIST: 1 code */
    bits_put(&b, 14, 4); /* HCLEN: 18 precode lengths, up to symbol 1's */
    for (int i = 0; i < 18; i++) {
        int sym = order[i];
        bits_put(&b, sym == 0 || sym == 1 || sym == 8 || sym == 9 ? 2 : 0, 3);
    }
    /* canonical precode: 0 -> 00, 1 -> 01, 8 -> 10, 9 -> 11 */
    for (int sym = 0; sym < 287 + 1; sym++) {
        int len = sym < 255 ? 8 : sym < 257 ? 9 : sym < 287 ? 0 : 1;
        bits_code(&b, len == 0 ? 0 : len == 1 ? 1 : len == 8 ? 2 : 3, 2);
    }
    /* canonical litlen: 0..254 -> 0..254 (8 bits), 255 -> 510, 256 -> 511 */
    for (size_t i = 0; i < n; i++)
        if (p[i] < 255)
            bits_code(&b, p[i], 8);
        else
            bits_code(&b, 510, 9);
    bits_code(&b, 511, 9);
    if (b.n)
        bits_put(&b, 0, 8 - b.n);
    buf_put(out, "\0\0\0\0", 4); /* Adler-32: not checked by either */
}

/* Proof that the fast path inflates with libdeflate (one IDAT used in
 * place, and several joined), and the one documented difference from zlib:
 * a stream zlib refuses for HLIT > 286 decodes.  Built without libdeflate,
 * the fast path refuses it as zlib does. */
static void libdeflate_used(TestCtx *t)
{
    static const int idat_max[2] = {0, 23};
    TestRng rng = {2718};
    const int w = 13, h = 7, ch = 3;
    const size_t rb = (size_t)w * ch;
    uint8_t raw[7 * 39], filtered[7 * 40], ihdr[13] = {0, 0, 0, 13, 0, 0, 0, 7, 8, 2, 0, 0, 0};
    int filt[7];

    for (size_t i = 0; i < sizeof(raw); i++)
        raw[i] = (uint8_t)(test_rand(&rng) % 7 == 0 ? 255 : i * 5);
    for (int y = 0; y < h; y++)
        filt[y] = y % 5;
    filter_rows(filtered, raw, filt, h, rb, ch);
    for (int k = 0; k < 2; k++) {
        Buf z = {0}, png = {0};
        MpeFrame fr[NDEC];
        MpeError errs[NDEC];
        int res[NDEC];
        const char *name = k ? "hlit287_split.png" : "hlit287.png";
        char want[128];

        zlib_hlit287(&z, filtered, sizeof(filtered));
        buf_put(&png, "\x89PNG\r\n\x1a\n", 8);
        chunk(&png, "IHDR", ihdr, 13);
        for (size_t off = 0; off < z.n;) {
            size_t len = idat_max[k] ? MPE_MIN((size_t)idat_max[k], z.n - off) : z.n;
            chunk(&png, "IDAT", z.p + off, len);
            off += len;
        }
        chunk(&png, "IEND", NULL, 0);
        if (z.oom || png.oom || decode_all(t, fr, res, errs, png.p, png.n, name) < 0) {
            CHECK(t, 0, "%s: cannot write or read the header", name);
            free(z.p);
            free(png.p);
            continue;
        }
        snprintf(want, sizeof(want), "%s: corrupt PNG (IDAT: too many length or distance symbols)",
                 name);
        CHECK(t, res[FAST_ZLIB] < 0 && strcmp(errs[FAST_ZLIB].msg, want) == 0,
              "%s: fast-zlib gave %d '%s'", name, res[FAST_ZLIB],
              res[FAST_ZLIB] < 0 ? errs[FAST_ZLIB].msg : "");
        CHECK(t, res[LIBPNG] < 0, "%s: libpng accepted HLIT 287", name);
        if (mpe_png_have_libdeflate()) {
            CHECK(t, res[FAST] == 0 && frame_is_raw(&fr[FAST], raw, ch),
                  "%s: the fast path did not decode it with libdeflate (%d '%s')", name, res[FAST],
                  res[FAST] < 0 ? errs[FAST].msg : "");
        } else {
            CHECK(t, res[FAST] < 0 && strcmp(errs[FAST].msg, want) == 0,
                  "%s: built without libdeflate, fast gave %d '%s'", name, res[FAST],
                  res[FAST] < 0 ? errs[FAST].msg : "");
        }
        free_all(fr);
        free(z.p);
        free(png.p);
    }
}

/* ----------------------------------------------------------- real files */

/* Every *.png in dir, fast vs libpng.  Returns how many were compared. */
static int compare_dir(TestCtx *t, const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int count = 0;
    if (!d)
        return -1;
    while ((de = readdir(d))) {
        char path[1024];
        size_t n = 0, l = strlen(de->d_name);
        uint8_t *p;
        if (l < 4 || strcmp(de->d_name + l - 4, ".png") != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (!(p = test_read_file(path, &n)))
            continue;
        {
            MpeFrame fr[NDEC];
            MpeError errs[NDEC];
            int res[NDEC];
            if (decode_all(t, fr, res, errs, p, n, path) == 0) {
                for (int i = 0; i < NDEC; i++) {
                    CHECK(t, res[i] == 0, "%s: %s", path, errs[i].msg);
                    CHECK(t, res[i] || res[LIBPNG] || frames_equal(&fr[i], &fr[LIBPNG]),
                          "%s: %s differs from libpng", path, kFlagName[i]);
                }
                check_same_as_zlib(t, fr, res, errs, path);
                free_all(fr);
                count++;
            } else {
                CHECK(t, 0, "%s: header not read", path);
            }
        }
        free(p);
    }
    closedir(d);
    return count;
}

/* Real deflate streams damaged: flips in the image data (CRC fixed, so
 * zlib and the unfilters see them) and cuts. */
static void damaged_compressed(TestCtx *t)
{
    static const char *const files[] = {"tests/data/mad/c512_jpeg_q10.png",
                                        "tests/data/mad/g256x384_blur_s1.5.png"};
    TestRng rng = {31337};
    int done = 0;
    for (size_t fi = 0; fi < 2; fi++) {
        size_t n = 0, idat, len;
        uint8_t *p = test_read_file(files[fi], &n), *q;
        char what[96];
        if (!p)
            continue;
        idat = find_chunk(p, n, "IDAT");
        len = idat ? (size_t)p[idat] << 24 | (size_t)p[idat + 1] << 16 |
                     (size_t)p[idat + 2] << 8 | p[idat + 3] : 0;
        if (!len || !(q = malloc(n))) {
            CHECK(t, 0, "%s: no IDAT", files[fi]);
            free(p);
            continue;
        }
        for (int k = 0; k < 60; k++) {
            /* early bytes (zlib header, Huffman tables) and anywhere */
            size_t at = idat + 8 + (k < 20 ? test_rand(&rng) % MPE_MIN(len, 64)
                                           : test_rand(&rng) % len);
            memcpy(q, p, n);
            q[at] ^= (uint8_t)(1u << (test_rand(&rng) % 8));
            fix_crc(q, idat);
            snprintf(what, sizeof(what), "%s@%zu", files[fi], at);
            expect_agree(t, q, n, what, 0);
        }
        for (int k = 0; k < 20; k++) {
            size_t cut = idat + 8 + test_rand(&rng) % (n - idat - 8);
            snprintf(what, sizeof(what), "%s:cut%zu", files[fi], cut);
            expect_agree(t, p, cut, what, 1);
        }
        done++;
        free(q);
        free(p);
    }
    if (!done)
        test_skip(t, "tests/data/mad not found (run from the repository root)");
}

static void files_tests_data(TestCtx *t)
{
    int n = compare_dir(t, "tests/data/mad") + compare_dir(t, "tests/data/bliinds") +
            compare_dir(t, "tests/fuzz/corpus/png") + compare_dir(t, "samples/solar");
    if (n <= 0)
        test_skip(t, "tests/data/{mad,bliinds} not found (run from the repository root)");
}

static void files_shared(TestCtx *t)
{
    int n = compare_dir(t, "../shared/solar");
    if (n < 0) {
        test_skip(t, "../shared/solar not present");
        return;
    }
    n += MPE_MAX(0, compare_dir(t, "../shared/reference/bliinds/images"));
    CHECK(t, n >= 10, "only %d files compared", n);
}

int main(void)
{
    TestCtx t;
    test_init(&t, "test_png_decode");
    test_run(&t, "roundtrip_layouts", roundtrip_layouts);
    test_run(&t, "roundtrip_large", roundtrip_large);
    test_run(&t, "too_much_data", too_much_data);
    test_run(&t, "damaged", damaged);
    test_run(&t, "short_data", short_data);
    test_run(&t, "dimensions", dimensions);
    test_run(&t, "not_png", not_png);
    test_run(&t, "damaged_compressed", damaged_compressed);
    test_run(&t, "libdeflate_used", libdeflate_used);
    test_run(&t, "scratch_kept", scratch_kept);
    test_run(&t, "files_tests_data", files_tests_data);
    test_run(&t, "files_shared", files_shared);
    return test_finish(&t);
}
