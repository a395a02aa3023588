/* png_decode.c — PNG to RGB24: libpng's row reader, and a fast path for
 * 8-bit gray/GA/RGB/RGBA non-interlaced images.
 *
 * Why a fast path: on a 2048² RGB frame libpng spends half its time in its
 * scalar Paeth unfilter (Debian's libpng has no SIMD filters) and the other
 * half in zlib.  Here zlib inflates ~64 KiB at a time into a buffer that
 * stays in cache, and each complete row is unfiltered from that buffer
 * straight into the frame (RGB) or into a two-row scratch (other layouts),
 * with the Adler-32 check off (the chunk CRCs cover the same bytes).
 *
 * The fast path still lets libpng read everything before the first IDAT:
 * IHDR validation, PLTE/tRNS/iCCP and the other ancillary chunks, chunk
 * order and their error messages are then libpng's own, and the fast code
 * only has to follow IDAT ... IEND.  It mirrors libpng's decisions there:
 * a non-IDAT chunk before the zlib stream's end is "Not enough image data",
 * a stream that ends before the last row likewise, data after the last row
 * (even a zlib error there) is ignored, critical chunks' CRCs are checked,
 * ancillary chunks are skipped.  fuzz_png runs both on every input and
 * stops when they disagree.
 *
 * With libdeflate (MPE_HAVE_LIBDEFLATE) the image data is inflated whole
 * instead, about twice zlib's speed, into a buffer the caller's
 * MpePngScratch keeps between frames, and rows are unfiltered from there.
 * libdeflate has no streaming API: it cannot say how far a broken stream
 * got, so it takes only streams that give exactly the image's bytes and end,
 * Adler-32 included, within one run of intact IDAT chunks (every encoder's
 * output); anything else (a short or long stream, one cut in its Adler-32,
 * a deflate error, a CRC error, a window under 32 KiB, whose distance
 * checks in zlib depend on how output is chunked) goes through the zlib
 * path above from the first IDAT again, so rows and messages stay the
 * same.  One difference remains: libdeflate accepts a few
 * malformed deflate streams that zlib refuses (HLIT > 286, HDIST > 30, a
 * length repeat past the last code, a precode of one code, distance codes
 * 30 and 31); such a stream decodes where libpng says "IDAT: ..."
 * (fuzz_png allows exactly that).
 *
 * libpng reports errors by calling our error callback, which records the
 * message in the PngDec that png_get_error_ptr() returns and longjmps back
 * into png_run().  png_run() keeps nothing in automatic variables across the
 * setjmp: everything the error path needs (the message, the row buffer to
 * free) lives in the PngDec owned by the caller, so it is never
 * indeterminate after the longjmp.  No state is global. */
#include "input/png_decode.h"

#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#ifdef MPE_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#include "common/cpu.h"

#ifdef MPE_ARCH_X86
#include <immintrin.h>
#endif

#define INFLATE_CHUNK (64 * 1024) /* bytes inflated per zlib call (fits L2 with the rows) */
#define ROW_SLACK 16              /* spare bytes after each buffer row */

/* ------------------------------------------------------------ unfilters */

static inline uint8_t paeth_pred(int a, int b, int c)
{
    int p = a + b - c;
    int pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    if (pa <= pb && pa <= pc)
        return (uint8_t)a;
    return (uint8_t)(pb <= pc ? b : c);
}

/* Generic C versions; bpp is a constant in each wrapper below. */
static inline void sub_c(uint8_t *restrict dst, const uint8_t *restrict src, size_t len, int bpp)
{
    size_t i;
    for (i = 0; i < (size_t)bpp && i < len; i++)
        dst[i] = src[i];
    for (; i < len; i++)
        dst[i] = (uint8_t)(src[i] + dst[i - bpp]);
}

static inline void up_c(uint8_t *restrict dst, const uint8_t *restrict src,
                        const uint8_t *restrict prev, size_t len)
{
    for (size_t i = 0; i < len; i++)
        dst[i] = (uint8_t)(src[i] + prev[i]);
}

static inline void avg_c(uint8_t *restrict dst, const uint8_t *restrict src,
                         const uint8_t *restrict prev, size_t len, int bpp)
{
    size_t i;
    for (i = 0; i < (size_t)bpp && i < len; i++)
        dst[i] = (uint8_t)(src[i] + (prev[i] >> 1));
    for (; i < len; i++)
        dst[i] = (uint8_t)(src[i] + ((dst[i - bpp] + prev[i]) >> 1));
}

static inline void paeth_c(uint8_t *restrict dst, const uint8_t *restrict src,
                           const uint8_t *restrict prev, size_t len, int bpp)
{
    size_t i;
    /* no left or upper-left pixel: the predictor is the one above */
    for (i = 0; i < (size_t)bpp && i < len; i++)
        dst[i] = (uint8_t)(src[i] + prev[i]);
    for (; i < len; i++)
        dst[i] = (uint8_t)(src[i] + paeth_pred(dst[i - bpp], prev[i], prev[i - bpp]));
}

#define C_UNFILTERS(bpp)                                                                      \
    static void sub##bpp##_c(uint8_t *dst, const uint8_t *src, const uint8_t *prev,          \
                             size_t len)                                                     \
    {                                                                                        \
        (void)prev;                                                                          \
        sub_c(dst, src, len, bpp);                                                           \
    }                                                                                        \
    static void up##bpp##_c(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t len) \
    {                                                                                        \
        up_c(dst, src, prev, len);                                                           \
    }                                                                                        \
    static void avg##bpp##_c(uint8_t *dst, const uint8_t *src, const uint8_t *prev,          \
                             size_t len)                                                     \
    {                                                                                        \
        avg_c(dst, src, prev, len, bpp);                                                     \
    }                                                                                        \
    static void paeth##bpp##_c(uint8_t *dst, const uint8_t *src, const uint8_t *prev,        \
                               size_t len)                                                   \
    {                                                                                        \
        paeth_c(dst, src, prev, len, bpp);                                                   \
    }
C_UNFILTERS(1)
C_UNFILTERS(2)
C_UNFILTERS(3)
C_UNFILTERS(4)

#ifdef MPE_ARCH_X86
/* One pixel of 3 or 4 bytes at a time: the predictors depend on the pixel
 * to the left, so a row is a chain of pixels, but the channels of a pixel
 * go through in parallel (as in ffmpeg's add_png_paeth_prediction).  A
 * 3-byte pixel is loaded and stored as 4 bytes except the row's last one:
 * the extra byte read belongs to the same row, the extra byte written is
 * the next pixel's and is overwritten by it. */
static inline __m128i px_load(const uint8_t *p, int bpp, int whole4)
{
    uint32_t v = 0;
    if (bpp == 4 || whole4)
        memcpy(&v, p, 4);
    else
        memcpy(&v, p, 3);
    return _mm_cvtsi32_si128((int)v);
}

static inline void px_store(uint8_t *p, __m128i x, int bpp, int whole4)
{
    uint32_t v = (uint32_t)_mm_cvtsi128_si32(x);
    if (bpp == 4 || whole4)
        memcpy(p, &v, 4);
    else
        memcpy(p, &v, 3);
}

static inline void sub_sse2(uint8_t *restrict dst, const uint8_t *restrict src, size_t len,
                            int bpp)
{
    __m128i a = _mm_setzero_si128();
    for (size_t i = 0; i + (size_t)bpp <= len; i += (size_t)bpp) {
        int w4 = i + 4 <= len;
        a = _mm_add_epi8(a, px_load(src + i, bpp, w4));
        px_store(dst + i, a, bpp, w4);
    }
}

static void up_sse2(uint8_t *restrict dst, const uint8_t *restrict src,
                    const uint8_t *restrict prev, size_t len)
{
    size_t i = 0;
    for (; i + 16 <= len; i += 16) {
        __m128i s = _mm_loadu_si128((const __m128i *)(src + i));
        __m128i p = _mm_loadu_si128((const __m128i *)(prev + i));
        _mm_storeu_si128((__m128i *)(dst + i), _mm_add_epi8(s, p));
    }
    for (; i < len; i++)
        dst[i] = (uint8_t)(src[i] + prev[i]);
}

static inline void avg_sse2(uint8_t *restrict dst, const uint8_t *restrict src,
                            const uint8_t *restrict prev, size_t len, int bpp)
{
    const __m128i zero = _mm_setzero_si128(), mask = _mm_set1_epi16(0xff);
    __m128i a = zero;
    for (size_t i = 0; i + (size_t)bpp <= len; i += (size_t)bpp) {
        int w4 = i + 4 <= len;
        __m128i b = _mm_unpacklo_epi8(px_load(prev + i, bpp, w4), zero);
        __m128i x = _mm_unpacklo_epi8(px_load(src + i, bpp, w4), zero);
        a = _mm_and_si128(_mm_add_epi16(x, _mm_srli_epi16(_mm_add_epi16(a, b), 1)), mask);
        px_store(dst + i, _mm_packus_epi16(a, a), bpp, w4);
    }
}

/* Paeth in 16-bit lanes, branch-free.  With p = a + b - c:
 * p - a = b - c, p - b = a - c, p - c = (b - c) + (a - c).  The predictor
 * is a when |p-a| is the smallest, else b when |p-b| is, else c (the
 * standard's tie order).  Returns the new pixel, x + predictor mod 256.
 * The chain from one pixel to the next is what bounds the speed; the
 * _avx2 step (pabsw, pblendvb; VEX-encoded 128-bit) shortens it. */
static inline __m128i paeth_step_sse2(__m128i a, __m128i b, __m128i c, __m128i x)
{
    const __m128i zero = _mm_setzero_si128();
    __m128i pa = _mm_sub_epi16(b, c), pb = _mm_sub_epi16(a, c);
    __m128i pc = _mm_add_epi16(pa, pb);
    pa = _mm_max_epi16(pa, _mm_sub_epi16(zero, pa));
    pb = _mm_max_epi16(pb, _mm_sub_epi16(zero, pb));
    pc = _mm_max_epi16(pc, _mm_sub_epi16(zero, pc));
    /* not a: pa > pb or pa > pc; then c when pb > pc, else b */
    __m128i not_a = _mm_or_si128(_mm_cmpgt_epi16(pa, pb), _mm_cmpgt_epi16(pa, pc));
    __m128i is_c = _mm_cmpgt_epi16(pb, pc);
    __m128i bc = _mm_or_si128(_mm_and_si128(is_c, c), _mm_andnot_si128(is_c, b));
    __m128i pred = _mm_or_si128(_mm_and_si128(not_a, bc), _mm_andnot_si128(not_a, a));
    return _mm_and_si128(_mm_add_epi16(pred, x), _mm_set1_epi16(0xff));
}

__attribute__((target("avx2"))) static inline __m128i paeth_step_avx2(__m128i a, __m128i b,
                                                                       __m128i c, __m128i x)
{
    __m128i pa = _mm_sub_epi16(b, c), pb = _mm_sub_epi16(a, c);
    __m128i pc = _mm_abs_epi16(_mm_add_epi16(pa, pb));
    pa = _mm_abs_epi16(pa);
    pb = _mm_abs_epi16(pb);
    __m128i not_a = _mm_or_si128(_mm_cmpgt_epi16(pa, pb), _mm_cmpgt_epi16(pa, pc));
    __m128i bc = _mm_blendv_epi8(b, c, _mm_cmpgt_epi16(pb, pc));
    __m128i pred = _mm_blendv_epi8(a, bc, not_a);
    return _mm_and_si128(_mm_add_epi16(pred, x), _mm_set1_epi16(0xff));
}

/* One row: a is the pixel to the left, b above, c above-left. */
#define PAETH_ROW(STEP)                                                                      \
    const __m128i zero = _mm_setzero_si128();                                                \
    __m128i a = zero, c = zero;                                                              \
    for (size_t i = 0; i + (size_t)bpp <= len; i += (size_t)bpp) {                           \
        int w4 = i + 4 <= len;                                                               \
        __m128i b = _mm_unpacklo_epi8(px_load(prev + i, bpp, w4), zero);                     \
        __m128i x = _mm_unpacklo_epi8(px_load(src + i, bpp, w4), zero);                      \
        a = STEP(a, b, c, x);                                                                \
        c = b;                                                                               \
        px_store(dst + i, _mm_packus_epi16(a, a), bpp, w4);                                  \
    }

/* Two rows at once, the second one pixel behind the first: its pixel i-1
 * needs the first row's pixels i-1 (above) and i-2 (above-left), which the
 * previous step made.  Lanes 0..3 hold the first row, 4..7 the second, and
 * one step does both: two independent chains in flight instead of one. */
#define PAETH_ROWS2(STEP)                                                                    \
    const __m128i zero = _mm_setzero_si128();                                                \
    const size_t n = len / (size_t)bpp;                                                      \
    __m128i a = zero, c = zero;                                                              \
    for (size_t k = 0; k <= n; k++) {                                                        \
        const size_t i = k * (size_t)bpp, j = i - (size_t)bpp; /* j: second row's pixel */   \
        __m128i up0 = zero, x0 = zero, x1 = zero, b, x;                                      \
        if (k < n) {                                                                         \
            int w4 = i + 4 <= len;                                                           \
            up0 = _mm_unpacklo_epi8(px_load(prev + i, bpp, w4), zero);                       \
            x0 = _mm_unpacklo_epi8(px_load(src0 + i, bpp, w4), zero);                        \
        }                                                                                    \
        if (k > 0)                                                                           \
            x1 = _mm_unpacklo_epi8(px_load(src1 + j, bpp, j + 4 <= len), zero);              \
        b = _mm_unpacklo_epi64(up0, a);  /* above row 1: row 0's pixel i-1 */                \
        x = _mm_unpacklo_epi64(x0, x1);                                                      \
        a = STEP(a, b, c, x);                                                                \
        c = b;                                                                               \
        {                                                                                    \
            __m128i p = _mm_packus_epi16(a, a);                                              \
            if (k < n)                                                                       \
                px_store(dst0 + i, p, bpp, i + 4 <= len);                                    \
            if (k > 0)                                                                       \
                px_store(dst1 + j, _mm_srli_si128(p, 4), bpp, j + 4 <= len);                 \
        }                                                                                    \
    }

static inline void paeth_sse2(uint8_t *restrict dst, const uint8_t *restrict src,
                              const uint8_t *restrict prev, size_t len, int bpp)
{
    PAETH_ROW(paeth_step_sse2)
}

__attribute__((target("avx2"))) static inline void
paeth_avx2(uint8_t *restrict dst, const uint8_t *restrict src, const uint8_t *restrict prev,
           size_t len, int bpp)
{
    PAETH_ROW(paeth_step_avx2)
}

static inline void paeth2_sse2(uint8_t *restrict dst0, uint8_t *restrict dst1,
                               const uint8_t *restrict src0, const uint8_t *restrict src1,
                               const uint8_t *restrict prev, size_t len, int bpp)
{
    PAETH_ROWS2(paeth_step_sse2)
}

__attribute__((target("avx2"))) static inline void
paeth2_avx2(uint8_t *restrict dst0, uint8_t *restrict dst1, const uint8_t *restrict src0,
            const uint8_t *restrict src1, const uint8_t *restrict prev, size_t len, int bpp)
{
    PAETH_ROWS2(paeth_step_avx2)
}

#define SSE2_UNFILTERS(bpp)                                                                  \
    static void sub##bpp##_sse2(uint8_t *dst, const uint8_t *src, const uint8_t *prev,       \
                                size_t len)                                                  \
    {                                                                                        \
        (void)prev;                                                                          \
        sub_sse2(dst, src, len, bpp);                                                        \
    }                                                                                        \
    static void avg##bpp##_sse2(uint8_t *dst, const uint8_t *src, const uint8_t *prev,       \
                                size_t len)                                                  \
    {                                                                                        \
        avg_sse2(dst, src, prev, len, bpp);                                                  \
    }                                                                                        \
    static void paeth##bpp##_sse2(uint8_t *dst, const uint8_t *src, const uint8_t *prev,     \
                                  size_t len)                                                \
    {                                                                                        \
        paeth_sse2(dst, src, prev, len, bpp);                                                \
    }                                                                                        \
    __attribute__((target("avx2"))) static void paeth##bpp##_avx2(                           \
        uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t len)                   \
    {                                                                                        \
        paeth_avx2(dst, src, prev, len, bpp);                                                \
    }                                                                                        \
    static void paeth2_##bpp##_sse2(uint8_t *dst0, uint8_t *dst1, const uint8_t *src0,        \
                                    const uint8_t *src1, const uint8_t *prev, size_t len)    \
    {                                                                                        \
        paeth2_sse2(dst0, dst1, src0, src1, prev, len, bpp);                                 \
    }                                                                                        \
    __attribute__((target("avx2"))) static void paeth2_##bpp##_avx2(                         \
        uint8_t *dst0, uint8_t *dst1, const uint8_t *src0, const uint8_t *src1,             \
        const uint8_t *prev, size_t len)                                                     \
    {                                                                                        \
        paeth2_avx2(dst0, dst1, src0, src1, prev, len, bpp);                                 \
    }
SSE2_UNFILTERS(3)
SSE2_UNFILTERS(4)

static void png_dsp_init_x86(MpePngDsp *dsp, unsigned cpu_flags)
{
    if (cpu_flags & MPE_CPU_SSE2) {
        for (int b = 0; b < 4; b++)
            dsp->unfilter[MPE_PNG_UP][b] = up_sse2;
        dsp->unfilter[MPE_PNG_SUB][2] = sub3_sse2;
        dsp->unfilter[MPE_PNG_SUB][3] = sub4_sse2;
        dsp->unfilter[MPE_PNG_AVG][2] = avg3_sse2;
        dsp->unfilter[MPE_PNG_AVG][3] = avg4_sse2;
        dsp->unfilter[MPE_PNG_PAETH][2] = paeth3_sse2;
        dsp->unfilter[MPE_PNG_PAETH][3] = paeth4_sse2;
        dsp->paeth2[2] = paeth2_3_sse2;
        dsp->paeth2[3] = paeth2_4_sse2;
    }
    if (cpu_flags & MPE_CPU_AVX2) {
        dsp->unfilter[MPE_PNG_PAETH][2] = paeth3_avx2;
        dsp->unfilter[MPE_PNG_PAETH][3] = paeth4_avx2;
        dsp->paeth2[2] = paeth2_3_avx2;
        dsp->paeth2[3] = paeth2_4_avx2;
    }
}
#endif /* MPE_ARCH_X86 */

/* ----------------------------------------------------------------- zlib */

/* zlib is linked directly (the Makefile adds `pkg-config --libs zlib`,
 * which libpng's own flags leave out).  inflateValidate (zlib >= 1.2.9)
 * turns off the Adler-32 check, as libpng does for speed; chunk CRCs are
 * still verified. */
static int z_inflate_init(z_stream *z)
{
    /* windowBits 0: the window the zlib header asks for, as libpng does */
    if (inflateInit2(z, 0) != Z_OK)
        return -1;
#if ZLIB_VERNUM >= 0x1290
    inflateValidate(z, 0);
#endif
    return 0;
}

/* What the fast decoder keeps between images (one per decoding thread). */
struct MpePngScratch {
    uint8_t *rows;     /* zlib's inflate buffer, then the zero row and three rows */
    size_t rows_cap;
    uint8_t *image;    /* the whole inflated image data (libdeflate) */
    size_t image_cap;
    uint8_t *idat;     /* the IDATs' payload joined, when there are several */
    size_t idat_cap;
#ifdef MPE_HAVE_LIBDEFLATE
    struct libdeflate_decompressor *inflater;
#endif
};

/* At least `need` bytes in *buf, its contents not kept. */
static int reserve(uint8_t **buf, size_t *cap, size_t need)
{
    if (*cap >= need)
        return 0;
    free(*buf);
    *buf = malloc(need);
    *cap = *buf ? need : 0;
    return *buf ? 0 : -1;
}

int mpe_png_scratch_open(MpePngScratch **scratch)
{
    MpePngScratch *s = calloc(1, sizeof(*s));

    *scratch = NULL;
    if (!s)
        return -ENOMEM;
#ifdef MPE_HAVE_LIBDEFLATE
    if (!(s->inflater = libdeflate_alloc_decompressor())) {
        free(s);
        return -ENOMEM;
    }
#endif
    *scratch = s;
    return 0;
}

void mpe_png_scratch_close(MpePngScratch *s)
{
    if (!s)
        return;
#ifdef MPE_HAVE_LIBDEFLATE
    libdeflate_free_decompressor(s->inflater);
#endif
    free(s->rows);
    free(s->image);
    free(s->idat);
    free(s);
}

int mpe_png_have_libdeflate(void)
{
#ifdef MPE_HAVE_LIBDEFLATE
    return 1;
#else
    return 0;
#endif
}

/* --------------------------------------------------------------- libpng */

typedef struct PngDec {
    const char *name;
    const uint8_t *data;
    size_t size, pos;   /* the bytes, and how far libpng has read them */
    char msg[256];      /* libpng's (or the fast path's) error message */
    int oom;            /* set when our own allocation failed */
    uint8_t *buf;       /* row buffer, freed by the caller */
    int width, height;  /* from IHDR */
    int channels;       /* of the stored pixels (fast path) */
    int fast;           /* the header is read and the fast path takes the image */
} PngDec;

static void png_error_cb(png_structp png, png_const_charp msg)
{
    PngDec *d = png_get_error_ptr(png);
    snprintf(d->msg, sizeof(d->msg), "%s", msg ? msg : "unknown error");
    png_longjmp(png, 1);
}

static void png_warning_cb(png_structp png, png_const_charp msg)
{
    /* Warnings (bad ancillary chunks, odd ICC profiles) do not stop us. */
    (void)png;
    (void)msg;
}

static void png_read_cb(png_structp png, png_bytep data, size_t len)
{
    PngDec *d = png_get_io_ptr(png);
    if (len > d->size - d->pos)
        png_error(png, "unexpected end of file");
    memcpy(data, d->data + d->pos, len);
    d->pos += len;
}

static uint8_t round16(unsigned v)
{
    return (uint8_t)((v * 255u + 32767u) / 65535u);
}

/* One decoded row (ch channels of depth bits, after palette and low-bit gray
 * expansion) to packed RGB24. */
static void row_to_rgb(uint8_t *restrict dst, const uint8_t *restrict src, int w, int ch,
                       int depth)
{
    if (depth == 8) {
        if (ch == 3) {
            memcpy(dst, src, (size_t)w * 3);
        } else if (ch == 4) {
            for (int x = 0; x < w; x++, src += 4, dst += 3) {
                dst[0] = src[0];
                dst[1] = src[1];
                dst[2] = src[2];
            }
        } else { /* gray, gray+alpha */
            for (int x = 0; x < w; x++, src += ch, dst += 3)
                dst[0] = dst[1] = dst[2] = src[0];
        }
    } else {
        if (ch >= 3) {
            for (int x = 0; x < w; x++, src += 2 * ch, dst += 3) {
                dst[0] = round16((unsigned)src[0] << 8 | src[1]);
                dst[1] = round16((unsigned)src[2] << 8 | src[3]);
                dst[2] = round16((unsigned)src[4] << 8 | src[5]);
            }
        } else {
            for (int x = 0; x < w; x++, src += 2 * ch, dst += 3)
                dst[0] = dst[1] = dst[2] = round16((unsigned)src[0] << 8 | src[1]);
        }
    }
}

static int png_fail(const PngDec *d, MpeError *err)
{
    if (d->oom)
        return mpe_error(err, -ENOMEM, "%s: out of memory", d->name);
    return mpe_error(err, -EINVAL, "%s: corrupt PNG (%s)", d->name, d->msg);
}

/* Runs libpng on d->data, whose 8 signature bytes were checked.  Reads the
 * header into d->width/height; when frame is non-NULL and the size is the
 * frame's, either leaves the rest to the fast path (d->fast, d->pos at the
 * first IDAT's data) or decodes the image into it.  Returns 0, 1 (the size
 * differs: nothing decoded, no message), -ENOTSUP (MPE_PNG_FAST_ONLY and
 * the fast path cannot) or a negative errno with err set. */
static int png_run(PngDec *d, png_structp png, png_infop info, MpeFrame *frame, unsigned flags,
                   MpeError *err)
{
    if (setjmp(png_jmpbuf(png)))
        return png_fail(d, err);

    png_set_read_fn(png, d, png_read_cb);
    png_set_sig_bytes(png, 8);
#ifdef PNG_USER_LIMITS_SUPPORTED
    /* No chunk is longer than the file: without this, a 200-byte file
     * whose tEXt claims 1.3 GB makes libpng allocate that before it finds
     * the data missing (found by fuzz_png). */
    png_set_chunk_malloc_max(png, d->size + 1);
#endif
#ifdef PNG_IGNORE_ADLER32
    png_set_option(png, PNG_IGNORE_ADLER32, PNG_OPTION_ON);
#endif
    if (flags & MPE_PNG_NO_CRC)
        png_set_crc_action(png, PNG_CRC_QUIET_USE, PNG_CRC_QUIET_USE);
    png_read_info(png, info);
    d->width = (int)png_get_image_width(png, info);
    d->height = (int)png_get_image_height(png, info);
    if (!frame)
        return 0;
    if (d->width != frame->width || d->height != frame->height)
        return 1;

    {
        int color_type = png_get_color_type(png, info);
        int bit_depth = png_get_bit_depth(png, info);
        int passes, ch, depth;
        size_t rowbytes;
        int w = d->width, h = d->height;

        if (!(flags & MPE_PNG_LIBPNG_ONLY) && bit_depth == 8 &&
            png_get_interlace_type(png, info) == PNG_INTERLACE_NONE &&
            color_type != PNG_COLOR_TYPE_PALETTE) {
            d->channels = png_get_channels(png, info);
            d->fast = 1;
            return 0;
        }
        if (flags & MPE_PNG_FAST_ONLY)
            return -ENOTSUP;

        if (color_type == PNG_COLOR_TYPE_PALETTE)
            png_set_palette_to_rgb(png);
        if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8)
            png_set_expand_gray_1_2_4_to_8(png);
        passes = png_set_interlace_handling(png);
        png_read_update_info(png, info);

        ch = png_get_channels(png, info);
        depth = png_get_bit_depth(png, info);
        rowbytes = png_get_rowbytes(png, info);
        if ((depth != 8 && depth != 16) || ch < 1 || ch > 4 ||
            rowbytes != (size_t)w * ch * (depth / 8))
            png_error(png, "unexpected pixel layout after expansion");

        if (ch == 3 && depth == 8) {
            /* Already packed RGB24: let libpng write straight into the frame
             * (for Adam7 it fills in each pass's pixels in place). */
            for (int p = 0; p < passes; p++)
                for (int y = 0; y < h; y++)
                    png_read_row(png, frame->data[0] + (size_t)y * frame->stride[0], NULL);
        } else if (passes > 1) {
            /* Interlaced: later passes add pixels to the rows of earlier
             * ones, so the whole image must be kept. */
            if (!(d->buf = malloc(rowbytes * (size_t)h))) {
                d->oom = 1;
                png_error(png, "out of memory");
            }
            for (int p = 0; p < passes; p++)
                for (int y = 0; y < h; y++)
                    png_read_row(png, d->buf + rowbytes * (size_t)y, NULL);
            for (int y = 0; y < h; y++)
                row_to_rgb(frame->data[0] + (size_t)y * frame->stride[0],
                           d->buf + rowbytes * (size_t)y, w, ch, depth);
        } else {
            if (!(d->buf = malloc(rowbytes))) {
                d->oom = 1;
                png_error(png, "out of memory");
            }
            for (int y = 0; y < h; y++) {
                png_read_row(png, d->buf, NULL);
                row_to_rgb(frame->data[0] + (size_t)y * frame->stride[0], d->buf, w, ch, depth);
            }
        }
        /* Check the rest of the file too (IDAT/IEND CRCs, truncation). */
        png_read_end(png, NULL);
    }
    return 0;
}

/* ------------------------------------------------------------ fast path */

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int fast_fail(PngDec *d, MpeError *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fast_fail(PngDec *d, MpeError *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
    va_end(ap);
    return png_fail(d, err);
}

/* libpng's rule: four ASCII letters. */
static int chunk_name_ok(const uint8_t *t)
{
    for (int i = 0; i < 4; i++)
        if (!((t[i] >= 'A' && t[i] <= 'Z') || (t[i] >= 'a' && t[i] <= 'z')))
            return 0;
    return 1;
}

typedef struct FastRows {
    const MpePngDsp *dsp;
    MpeFrame *frame;
    int w, h, ch, y;
    size_t rowbytes;
    uint8_t *zero;      /* a row of zeros: the row above the first */
    uint8_t *rows[3];   /* unfiltered rows when they are not RGB already: row y in y % 3 */
} FastRows;

static uint8_t *row_out(const FastRows *r, int y)
{
    return r->frame->data[0] + (size_t)y * r->frame->stride[0];
}

/* Where row y is unfiltered to: the frame row itself for RGB. */
static uint8_t *row_dst(const FastRows *r, int y)
{
    if (y < 0)
        return r->zero;
    return r->ch == 3 ? row_out(r, y) : r->rows[y % 3];
}

/* Unfilters the row(s) at src (filter byte first, rows back to back) into
 * their frame rows; two when `two` and both are Paeth.  Returns how many
 * rows it did, or -1 on a bad filter byte. */
static int fast_rows(FastRows *r, const uint8_t *src, int two)
{
    const size_t rs = r->rowbytes + 1;
    const int y = r->y;
    int f = src[0];

    if (f > 4)
        return -1;
    if (two && f == MPE_PNG_PAETH && src[rs] == MPE_PNG_PAETH && r->dsp->paeth2[r->ch - 1]) {
        r->dsp->paeth2[r->ch - 1](row_dst(r, y), row_dst(r, y + 1), src + 1, src + rs + 1,
                                  row_dst(r, y - 1), r->rowbytes);
        if (r->ch != 3) {
            row_to_rgb(row_out(r, y), row_dst(r, y), r->w, r->ch, 8);
            row_to_rgb(row_out(r, y + 1), row_dst(r, y + 1), r->w, r->ch, 8);
        }
        r->y += 2;
        return 2;
    }
    if (f == 0)
        memcpy(row_dst(r, y), src + 1, r->rowbytes);
    else
        r->dsp->unfilter[f][r->ch - 1](row_dst(r, y), src + 1, row_dst(r, y - 1), r->rowbytes);
    if (r->ch != 3)
        row_to_rgb(row_out(r, y), row_dst(r, y), r->w, r->ch, 8);
    r->y++;
    return 1;
}

/* CRC-32 of a chunk's type and data: libdeflate's (carry-less multiply)
 * takes under a third of zlib's time (0.6 against 2.0 ms per 8 MiB here,
 * about the IDAT data of a 2048² RGB frame). */
static uint32_t chunk_crc(const uint8_t *p, size_t n)
{
#ifdef MPE_HAVE_LIBDEFLATE
    return libdeflate_crc32(0, p, n);
#else
    return (uint32_t)crc32(0, p, (uInt)n);
#endif
}

/* The chunk at pos (at least its 8-byte header inside the file) as fast_decode
 * walks them: 0 and *len, *t set when it is whole, with a good name and (if
 * critical and checked) CRC; else -1 with the message libpng would give. */
static int chunk_at(const PngDec *d, size_t pos, unsigned flags, uint32_t *len,
                    const uint8_t **t, const char **why)
{
    *len = be32(d->data + pos);
    *t = d->data + pos + 4;
    if (*len > 0x7fffffffu) {
        *why = "PNG unsigned integer out of range";
        return -1;
    }
    if (!chunk_name_ok(*t)) {
        *why = "invalid chunk type";
        return -1;
    }
    if (d->size - pos - 8 < (size_t)*len + 4) {
        *why = "unexpected end of file";
        return -1;
    }
    /* Critical chunks must be intact; ancillary ones are skipped
     * unread (libpng would only warn about their CRC). */
    if (!((*t)[0] & 0x20) && !(flags & MPE_PNG_NO_CRC) &&
        chunk_crc(*t, *len + 4) != be32(*t + 4 + *len)) {
        *why = NULL; /* "<name>: CRC error" */
        return -1;
    }
    return 0;
}

#ifdef MPE_HAVE_LIBDEFLATE
/* The whole image through libdeflate, when it can give what the zlib path
 * would (see the header comment): 1 with every row made and *end at the
 * first chunk after the IDATs; 0 when the zlib path must take the image
 * (no row made yet); < 0 on a bad filter byte or when out of memory, with
 * err set. */
static int whole_decode(PngDec *d, FastRows *r, MpePngScratch *s, unsigned flags, size_t *end,
                        MpeError *err)
{
    const size_t rs = r->rowbytes + 1, image_size = rs * (size_t)r->h;
    const uint8_t *zdata = NULL;
    size_t pos = d->pos - 8, zsize = 0, used_in, used_out;

    /* The run of IDATs: one is used in place; several are joined as their
     * CRCs are checked (each still in cache), into room for the rest of the
     * file, which bounds their data. */
    for (int nidat = 0;; nidat++) {
        const uint8_t *t;
        const char *why;
        uint32_t len;

        if (d->size - pos < 8 || chunk_at(d, pos, flags, &len, &t, &why) < 0)
            return 0;
        if (memcmp(t, "IDAT", 4) != 0)
            break;
        if (nidat == 0) {
            zdata = t + 4;
        } else {
            if (nidat == 1) {
                if (reserve(&s->idat, &s->idat_cap, d->size - d->pos) < 0)
                    return mpe_error(err, -ENOMEM, "%s: out of memory", d->name);
                memcpy(s->idat, zdata, zsize);
                zdata = s->idat;
            }
            memcpy(s->idat + zsize, t + 4, len);
        }
        zsize += len;
        pos += 12 + (size_t)len;
    }
    /* zlib header: deflate with a 32 KiB window, no preset dictionary */
    if (zsize < 2 || zdata[0] != 0x78 || (zdata[0] << 8 | zdata[1]) % 31 != 0 || (zdata[1] & 0x20))
        return 0;
    if (reserve(&s->image, &s->image_cap, image_size) < 0)
        return mpe_error(err, -ENOMEM, "%s: out of memory", d->name);
    /* The zlib path sees the stream end only where its Adler-32 (not
     * checked, but read) is there too: a stream whose last bytes are
     * missing is "Not enough image data" to it, and to libpng. */
    if (libdeflate_deflate_decompress_ex(s->inflater, zdata + 2, zsize - 2, s->image, image_size,
                                         &used_in, &used_out) != LIBDEFLATE_SUCCESS ||
        used_out != image_size || zsize - 2 - used_in < 4)
        return 0;
    while (r->y < r->h) {
        if (fast_rows(r, s->image + (size_t)r->y * rs, r->y + 1 < r->h) < 0)
            return fast_fail(d, err, "bad adaptive filter value");
    }
    *end = pos;
    return 1;
}
#endif

/* Decodes the image data from d->pos (the first IDAT's data, its chunk
 * header just before) to IEND into frame. */
static int fast_decode(PngDec *d, MpeFrame *frame, MpePngScratch *s, unsigned flags,
                       unsigned cpu_flags, MpeError *err)
{
    MpePngDsp dsp;
    FastRows r;
    z_stream z;
    int z_open = 0, ret = 0, done = 0, z_end = 0; /* all rows made; zlib stream over */
    size_t cap, filled = 0, pos = d->pos - 8;
    uint8_t *scratch;

    memset(&r, 0, sizeof(r));
    memset(&z, 0, sizeof(z));
    mpe_png_dsp_init(&dsp, cpu_flags);
    r.dsp = &dsp;
    r.frame = frame;
    r.w = d->width;
    r.h = d->height;
    r.ch = d->channels;
    r.rowbytes = (size_t)r.w * (size_t)r.ch;
    if (r.ch < 1 || r.ch > 4 || d->pos < 8 || memcmp(d->data + d->pos - 4, "IDAT", 4) != 0)
        return fast_fail(d, err, "internal error: fast path not at IDAT");

    /* inflate buffer (whole rows and a partial one), zero row, three rows */
    cap = r.rowbytes + 1 > INFLATE_CHUNK / 2 ? 2 * (r.rowbytes + 1) : INFLATE_CHUNK;
    if (reserve(&s->rows, &s->rows_cap, cap + 4 * (r.rowbytes + ROW_SLACK)) < 0)
        return mpe_error(err, -ENOMEM, "%s: out of memory", d->name);
    scratch = s->rows;
    r.zero = scratch + cap;
    memset(r.zero, 0, r.rowbytes + ROW_SLACK);
    r.rows[0] = r.zero + r.rowbytes + ROW_SLACK;
    r.rows[1] = r.rows[0] + r.rowbytes + ROW_SLACK;
    r.rows[2] = r.rows[1] + r.rowbytes + ROW_SLACK;

#ifdef MPE_HAVE_LIBDEFLATE
    if (!(flags & MPE_PNG_ZLIB_STREAM)) {
        /* when it cannot, zlib takes the image from the first IDAT */
        if ((ret = whole_decode(d, &r, s, flags, &pos, err)) < 0)
            return ret;
        done = z_end = ret;
        ret = 0;
    }
#endif
    if (!done) {
        if (z_inflate_init(&z) < 0)
            return mpe_error(err, -ENOMEM, "%s: out of memory (zlib)", d->name);
        z_open = 1;
    }

    for (;;) {
        const uint8_t *t, *body;
        const char *why;
        uint32_t len;

        if (d->size - pos < 8) {
            ret = fast_fail(d, err, "unexpected end of file");
            goto out;
        }
        if (chunk_at(d, pos, flags, &len, &t, &why) < 0) {
            ret = why ? fast_fail(d, err, "%s", why)
                      : fast_fail(d, err, "%.4s: CRC error", (const char *)t);
            goto out;
        }
        body = t + 4;

        if (memcmp(t, "IDAT", 4) == 0) {
            z.next_in = (Bytef *)body;
            z.avail_in = len;
            while (!z_end && z.avail_in > 0) {
                size_t off = 0;
                int zr;

                if (done) {
                    /* libpng reads the stream to its end after the last row
                     * (and only then lets another chunk come); what it
                     * holds is dropped, a zlib error there only ends it */
                    z.next_out = scratch;
                    z.avail_out = (uInt)cap;
                    z_end = inflate(&z, Z_NO_FLUSH) != Z_OK;
                    continue;
                }
                /* Never ask for output past the image's last byte: then
                 * the call that ends the image stops where libpng's last
                 * row does, and a zlib error found there (zlib decodes a
                 * symbol ahead) is fatal or not for both alike. */
                z.next_out = scratch + filled;
                z.avail_out = (uInt)MPE_MIN(cap - filled,
                                            (size_t)(r.h - r.y) * (r.rowbytes + 1) - filled);
                zr = inflate(&z, Z_NO_FLUSH);
                filled = (size_t)(z.next_out - scratch);
                while (filled - off >= r.rowbytes + 1 && r.y < r.h) {
                    int two = filled - off >= 2 * (r.rowbytes + 1) && r.y + 1 < r.h;
                    int n = fast_rows(&r, scratch + off, two);
                    if (n < 0) {
                        ret = fast_fail(d, err, "bad adaptive filter value");
                        goto out;
                    }
                    off += (size_t)n * (r.rowbytes + 1);
                }
                if (r.y == r.h && (zr == Z_OK || zr == Z_STREAM_END)) {
                    done = 1;
                    z_end = zr == Z_STREAM_END;
                    continue;
                }
                memmove(scratch, scratch + off, filled - off);
                filled -= off;
                if (zr == Z_STREAM_END) {
                    ret = fast_fail(d, err, "Not enough image data");
                    goto out;
                }
                if (zr != Z_OK) {
                    /* even in the call that made the last row, as libpng */
                    ret = fast_fail(d, err, "IDAT: %s", z.msg ? z.msg : "zlib error");
                    goto out;
                }
            }
        } else if (!done || !z_end) {
            /* the image's IDATs, to the end of its zlib stream, come in
             * one run (libpng's "Not enough image data") */
            ret = fast_fail(d, err, "Not enough image data");
            goto out;
        } else if (memcmp(t, "IEND", 4) == 0) {
            break;
        } else if (memcmp(t, "IHDR", 4) == 0) {
            ret = fast_fail(d, err, "IHDR: out of place");
            goto out;
        }
        /* Any other chunk after the image, critical or not, is skipped
         * (once its CRC is checked), as png_read_end(png, NULL) does. */
        pos += 12 + (size_t)len;
    }
out:
    if (z_open)
        inflateEnd(&z);
    return ret;
}

/* --------------------------------------------------------------- public */

/* Whether some chunk claims more bytes than the file has left.  libpng
 * allocates an ancillary chunk's buffer from its length before reading it,
 * so a 200-byte file whose tEXt claims 1.5 GB would cost 1.5 GB just to
 * find the data missing (found by fuzz_png).  The header read looks only at
 * the chunks before the image data (a file cut in its image data opens,
 * and fails when decoded).  Anything else odd about the chunks is left to
 * the decoders to report. */
static int chunks_truncated(const uint8_t *data, size_t size, int header_only)
{
    size_t pos = 8;
    while (size - pos >= 8) {
        uint32_t len = be32(data + pos);
        if (len > 0x7fffffffu)
            return 0;
        if (header_only && memcmp(data + pos + 4, "IDAT", 4) == 0)
            return 0; /* the header ends here; the decode looks further */
        if ((size_t)len + 12 > size - pos)
            return 1;
        if (memcmp(data + pos + 4, "IEND", 4) == 0)
            return 0;
        pos += (size_t)len + 12;
    }
    return 0;
}

int mpe_png_decode(MpeFrame *frame, int *width, int *height, const uint8_t *data, size_t size,
                   const char *name, unsigned flags, unsigned cpu_flags, MpeError *err)
{
    return mpe_png_decode_with(NULL, frame, width, height, data, size, name, flags, cpu_flags,
                               err);
}

int mpe_png_decode_with(MpePngScratch *scratch, MpeFrame *frame, int *width, int *height,
                        const uint8_t *data, size_t size, const char *name, unsigned flags,
                        unsigned cpu_flags, MpeError *err)
{
    PngDec d;
    png_structp png;
    png_infop info;
    int ret;

    if (size < 8 || png_sig_cmp(data, 0, 8) != 0)
        return mpe_error(err, -EINVAL, "%s: not a PNG file", name);
    if (frame && (frame->format != MPE_FRAME_RGB24 || !frame->data[0] ||
                  frame->stride[0] < 3 * frame->width))
        return mpe_error(err, -EINVAL, "%s: frame buffer is not RGB24", name);

    if (chunks_truncated(data, size, !frame))
        return mpe_error(err, -EINVAL, "%s: corrupt PNG (unexpected end of file)", name);
    memset(&d, 0, sizeof(d));
    d.name = name;
    d.data = data;
    d.size = size;
    d.pos = 8;
    png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &d, png_error_cb, png_warning_cb);
    info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return mpe_error(err, -ENOMEM, "%s: out of memory (libpng)", name);
    }
    ret = png_run(&d, png, info, frame, flags, err);
    png_destroy_read_struct(&png, &info, NULL);
    free(d.buf);
    if (ret == 0 && d.fast) {
        MpePngScratch *own = NULL;
        if (!scratch && mpe_png_scratch_open(&own) < 0)
            return mpe_error(err, -ENOMEM, "%s: out of memory", name);
        ret = fast_decode(&d, frame, scratch ? scratch : own, flags, cpu_flags, err);
        mpe_png_scratch_close(own);
    }
    if (ret < 0)
        return ret;
    if (width)
        *width = d.width;
    if (height)
        *height = d.height;
    return ret;
}

void mpe_png_dsp_init_c(MpePngDsp *dsp)
{
    memset(dsp, 0, sizeof(*dsp));
#define SET_C(bpp)                                           \
    dsp->unfilter[MPE_PNG_SUB][bpp - 1] = sub##bpp##_c;     \
    dsp->unfilter[MPE_PNG_UP][bpp - 1] = up##bpp##_c;       \
    dsp->unfilter[MPE_PNG_AVG][bpp - 1] = avg##bpp##_c;     \
    dsp->unfilter[MPE_PNG_PAETH][bpp - 1] = paeth##bpp##_c;
    SET_C(1)
    SET_C(2)
    SET_C(3)
    SET_C(4)
#undef SET_C
}

void mpe_png_dsp_init(MpePngDsp *dsp, unsigned cpu_flags)
{
    mpe_png_dsp_init_c(dsp);
#ifdef MPE_ARCH_X86
    png_dsp_init_x86(dsp, cpu_flags);
#else
    (void)cpu_flags;
#endif
}
