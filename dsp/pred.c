/* pred.c — half-pel prediction and intra activity: C references and SSE2.
 *
 * The SSE2 versions are exact by construction: pavgb computes (a+b+1)>>1,
 * the four-sample average is done in 16-bit lanes (at most 4*255+2), and
 * psadbw sums |a-b| exactly.  Compiled for x86 with a target attribute;
 * dsp.c installs them when the flags allow SSE2. */
#include "dsp/pred.h"

#include <stdlib.h>

#include "common/cpu.h"
#ifdef MPE_ARCH_X86
#include <immintrin.h>
#endif

void mpe_predict_c(uint8_t *dst, ptrdiff_t dstride, const uint8_t *ref, ptrdiff_t rstride, int px,
                   int py, int bw, int bh)
{
    const uint8_t *s = ref + (py >> 1) * rstride + (px >> 1);
    const int hx = px & 1, hy = py & 1;

    for (int y = 0; y < bh; y++, s += rstride, dst += dstride) {
        const uint8_t *s1 = s + (hy ? rstride : 0);
        for (int x = 0; x < bw; x++) {
            if (hx && hy)
                dst[x] = (uint8_t)((s[x] + s[x + 1] + s1[x] + s1[x + 1] + 2) >> 2);
            else if (hx)
                dst[x] = (uint8_t)((s[x] + s[x + 1] + 1) >> 1);
            else if (hy)
                dst[x] = (uint8_t)((s[x] + s1[x] + 1) >> 1);
            else
                dst[x] = s[x];
        }
    }
}

uint32_t mpe_intra_activity_c(const uint8_t *p, ptrdiff_t stride)
{
    uint32_t sum = 0, act = 0;
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 16; x++)
            sum += p[y * stride + x];
    int mean = (int)((sum + 128) >> 8);
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 16; x++)
            act += (uint32_t)abs(p[y * stride + x] - mean);
    return act;
}

static inline uint8_t clip_u8(int v)
{
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

void mpe_get_pixels_c(int16_t blk[64], const uint8_t *src, ptrdiff_t stride)
{
    for (int y = 0; y < 8; y++)
        for (int x = 0; x < 8; x++)
            blk[y * 8 + x] = src[y * stride + x];
}

uint32_t mpe_diff_pixels_c(int16_t blk[64], const uint8_t *src, ptrdiff_t sstride,
                           const uint8_t *pred, ptrdiff_t pstride)
{
    uint32_t sum = 0;
    for (int y = 0; y < 8; y++)
        for (int x = 0; x < 8; x++) {
            int r = src[y * sstride + x] - pred[y * pstride + x];
            blk[y * 8 + x] = (int16_t)r;
            sum += (uint32_t)abs(r);
        }
    return sum;
}

void mpe_put_pixels_c(uint8_t *dst, ptrdiff_t stride, const int16_t blk[64])
{
    for (int y = 0; y < 8; y++)
        for (int x = 0; x < 8; x++)
            dst[y * stride + x] = clip_u8(blk[y * 8 + x]);
}

void mpe_add_pixels_c(uint8_t *dst, ptrdiff_t dstride, const uint8_t *pred, ptrdiff_t pstride,
                      const int16_t blk[64])
{
    for (int y = 0; y < 8; y++)
        for (int x = 0; x < 8; x++)
            dst[y * dstride + x] = clip_u8(pred[y * pstride + x] + blk[y * 8 + x]);
}

#ifdef MPE_ARCH_X86

#define SSE2 __attribute__((target("sse2")))

SSE2 void mpe_get_pixels_sse2(int16_t blk[64], const uint8_t *src, ptrdiff_t stride)
{
    const __m128i z = _mm_setzero_si128();
    for (int y = 0; y < 8; y++)
        _mm_storeu_si128((__m128i *)(blk + 8 * y),
                         _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(src + y * stride)), z));
}

SSE2 uint32_t mpe_diff_pixels_sse2(int16_t blk[64], const uint8_t *src, ptrdiff_t sstride,
                              const uint8_t *pred, ptrdiff_t pstride)
{
    const __m128i z = _mm_setzero_si128();
    __m128i acc = z;
    for (int y = 0; y < 8; y++) {
        __m128i s = _mm_loadl_epi64((const __m128i *)(src + y * sstride));
        __m128i p = _mm_loadl_epi64((const __m128i *)(pred + y * pstride));
        _mm_storeu_si128((__m128i *)(blk + 8 * y),
                         _mm_sub_epi16(_mm_unpacklo_epi8(s, z), _mm_unpacklo_epi8(p, z)));
        acc = _mm_add_epi64(acc, _mm_sad_epu8(s, p));   /* the upper 8 bytes are zero in both */
    }
    return (uint32_t)_mm_cvtsi128_si32(acc);
}

SSE2 void mpe_put_pixels_sse2(uint8_t *dst, ptrdiff_t stride, const int16_t blk[64])
{
    for (int y = 0; y < 8; y += 2) {
        __m128i a = _mm_loadu_si128((const __m128i *)(blk + 8 * y));
        __m128i b = _mm_loadu_si128((const __m128i *)(blk + 8 * y + 8));
        __m128i p = _mm_packus_epi16(a, b);   /* saturation is the clip */
        _mm_storel_epi64((__m128i *)(dst + y * stride), p);
        _mm_storel_epi64((__m128i *)(dst + (y + 1) * stride), _mm_srli_si128(p, 8));
    }
}

SSE2 void mpe_add_pixels_sse2(uint8_t *dst, ptrdiff_t dstride, const uint8_t *pred, ptrdiff_t pstride,
                         const int16_t blk[64])
{
    const __m128i z = _mm_setzero_si128();
    for (int y = 0; y < 8; y += 2) {
        __m128i p0 = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(pred + y * pstride)), z);
        __m128i p1 =
            _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(pred + (y + 1) * pstride)), z);
        /* pred + blk lies in [-256, 510]: no int16 overflow before the clip */
        __m128i a = _mm_add_epi16(p0, _mm_loadu_si128((const __m128i *)(blk + 8 * y)));
        __m128i b = _mm_add_epi16(p1, _mm_loadu_si128((const __m128i *)(blk + 8 * y + 8)));
        __m128i r = _mm_packus_epi16(a, b);
        _mm_storel_epi64((__m128i *)(dst + y * dstride), r);
        _mm_storel_epi64((__m128i *)(dst + (y + 1) * dstride), _mm_srli_si128(r, 8));
    }
}

/* (a + b + c + d + 2) >> 2 of 8 samples each, in 16-bit lanes. */
SSE2 static inline __m128i avg4_lo(__m128i a, __m128i b, __m128i c, __m128i d)
{
    const __m128i z = _mm_setzero_si128();
    __m128i s = _mm_add_epi16(_mm_add_epi16(_mm_unpacklo_epi8(a, z), _mm_unpacklo_epi8(b, z)),
                              _mm_add_epi16(_mm_unpacklo_epi8(c, z), _mm_unpacklo_epi8(d, z)));
    return _mm_srli_epi16(_mm_add_epi16(s, _mm_set1_epi16(2)), 2);
}

SSE2 static inline __m128i avg4_hi(__m128i a, __m128i b, __m128i c, __m128i d)
{
    const __m128i z = _mm_setzero_si128();
    __m128i s = _mm_add_epi16(_mm_add_epi16(_mm_unpackhi_epi8(a, z), _mm_unpackhi_epi8(b, z)),
                              _mm_add_epi16(_mm_unpackhi_epi8(c, z), _mm_unpackhi_epi8(d, z)));
    return _mm_srli_epi16(_mm_add_epi16(s, _mm_set1_epi16(2)), 2);
}

SSE2 static void predict16_sse2(uint8_t *dst, ptrdiff_t dstride, const uint8_t *s, ptrdiff_t rstride,
                           int hx, int hy, int bh)
{
    if (!hx && !hy) {
        for (int y = 0; y < bh; y++, s += rstride, dst += dstride)
            _mm_storeu_si128((__m128i *)dst, _mm_loadu_si128((const __m128i *)s));
    } else if (!hy) {
        for (int y = 0; y < bh; y++, s += rstride, dst += dstride)
            _mm_storeu_si128((__m128i *)dst, _mm_avg_epu8(_mm_loadu_si128((const __m128i *)s),
                                                          _mm_loadu_si128((const __m128i *)(s + 1))));
    } else if (!hx) {
        __m128i a = _mm_loadu_si128((const __m128i *)s);
        for (int y = 0; y < bh; y++, s += rstride, dst += dstride) {
            __m128i b = _mm_loadu_si128((const __m128i *)(s + rstride));
            _mm_storeu_si128((__m128i *)dst, _mm_avg_epu8(a, b));
            a = b;
        }
    } else {
        __m128i a = _mm_loadu_si128((const __m128i *)s);
        __m128i b = _mm_loadu_si128((const __m128i *)(s + 1));
        for (int y = 0; y < bh; y++, s += rstride, dst += dstride) {
            __m128i c = _mm_loadu_si128((const __m128i *)(s + rstride));
            __m128i d = _mm_loadu_si128((const __m128i *)(s + rstride + 1));
            _mm_storeu_si128((__m128i *)dst,
                             _mm_packus_epi16(avg4_lo(a, b, c, d), avg4_hi(a, b, c, d)));
            a = c;
            b = d;
        }
    }
}

SSE2 static inline __m128i load8(const uint8_t *p)
{
    return _mm_loadl_epi64((const __m128i *)p);
}

SSE2 static void predict8_sse2(uint8_t *dst, ptrdiff_t dstride, const uint8_t *s, ptrdiff_t rstride,
                          int hx, int hy, int bh)
{
    for (int y = 0; y < bh; y++, s += rstride, dst += dstride) {
        __m128i r;
        if (hx && hy)
            r = _mm_packus_epi16(avg4_lo(load8(s), load8(s + 1), load8(s + rstride),
                                         load8(s + rstride + 1)),
                                 _mm_setzero_si128());
        else if (hx)
            r = _mm_avg_epu8(load8(s), load8(s + 1));
        else if (hy)
            r = _mm_avg_epu8(load8(s), load8(s + rstride));
        else
            r = load8(s);
        _mm_storel_epi64((__m128i *)dst, r);
    }
}

SSE2 void mpe_predict_sse2(uint8_t *dst, ptrdiff_t dstride, const uint8_t *ref, ptrdiff_t rstride,
                      int px, int py, int bw, int bh)
{
    const uint8_t *s = ref + (py >> 1) * rstride + (px >> 1);
    if (bw == 16)
        predict16_sse2(dst, dstride, s, rstride, px & 1, py & 1, bh);
    else if (bw == 8)
        predict8_sse2(dst, dstride, s, rstride, px & 1, py & 1, bh);
    else
        mpe_predict_c(dst, dstride, ref, rstride, px, py, bw, bh);
}

SSE2 uint32_t mpe_intra_activity_sse2(const uint8_t *p, ptrdiff_t stride)
{
    const __m128i z = _mm_setzero_si128();
    __m128i acc = z;
    for (int y = 0; y < 16; y++)
        acc = _mm_add_epi64(acc, _mm_sad_epu8(_mm_loadu_si128((const __m128i *)(p + y * stride)), z));
    uint32_t sum = (uint32_t)(_mm_cvtsi128_si32(acc) + _mm_cvtsi128_si32(_mm_srli_si128(acc, 8)));
    const __m128i mean = _mm_set1_epi8((char)((sum + 128) >> 8));
    acc = z;
    for (int y = 0; y < 16; y++)
        acc = _mm_add_epi64(acc,
                            _mm_sad_epu8(_mm_loadu_si128((const __m128i *)(p + y * stride)), mean));
    return (uint32_t)(_mm_cvtsi128_si32(acc) + _mm_cvtsi128_si32(_mm_srli_si128(acc, 8)));
}

#define AVX2 __attribute__((target("avx2")))

/* 16 samples a step: differences in 16-bit lanes, squared and paired by
 * pmaddwd into 32-bit lanes (a row's lane sums stay below 2^31). */
AVX2 uint64_t mpe_sse_avx2(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs, int w,
                           int h)
{
    uint64_t sse = 0;
    const int w16 = w & ~15;

    for (int y = 0; y < h; y++, a += as, b += bs) {
        __m256i acc = _mm256_setzero_si256();
        for (int x = 0; x < w16; x += 16) {
            const __m256i d = _mm256_sub_epi16(
                _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(a + x))),
                _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(b + x))));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(d, d));
        }
        __m128i s = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
        uint32_t row = (uint32_t)_mm_cvtsi128_si32(s);
        for (int x = w16; x < w; x++) {
            int d = a[x] - b[x];
            row += (uint32_t)(d * d);
        }
        sse += row;
    }
    return sse;
}

#endif
