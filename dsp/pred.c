/* pred.c — half-pel prediction and intra activity: C references and SSE2.
 *
 * The SSE2 versions are exact by construction: pavgb computes (a+b+1)>>1,
 * the four-sample average is done in 16-bit lanes (at most 4*255+2), and
 * psadbw sums |a-b| exactly.  Compiled for x86 with a target attribute;
 * dsp.c installs them when the flags allow SSE2. */
#include "dsp/pred.h"

#include <stdlib.h>

#include "common/cpu.h"
#include "dsp/sad.h"
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

uint32_t mpe_pred_sad_c(const uint8_t *src, ptrdiff_t sstride, const uint8_t *ref, ptrdiff_t rstride,
                        int px, int py)
{
    uint8_t pred[256];
    mpe_predict_c(pred, 16, ref, rstride, px, py, 16, 16);
    return mpe_sad16_c(src, sstride, pred, 16);
}

uint32_t mpe_bipred_sad_c(const uint8_t *src, ptrdiff_t sstride, const uint8_t *ref0,
                          ptrdiff_t r0stride, int px0, int py0, const uint8_t *ref1,
                          ptrdiff_t r1stride, int px1, int py1)
{
    uint8_t p0[256], p1[256];
    mpe_predict_c(p0, 16, ref0, r0stride, px0, py0, 16, 16);
    mpe_predict_c(p1, 16, ref1, r1stride, px1, py1, 16, 16);
    for (int i = 0; i < 256; i++)
        p0[i] = (uint8_t)((p0[i] + p1[i] + 1) >> 1);
    return mpe_sad16_c(src, sstride, p0, 16);
}

void mpe_hpel_sads_c(uint32_t sad[9], const uint8_t *src, ptrdiff_t sstride, const uint8_t *ref,
                     ptrdiff_t rstride)
{
    /* ref's position is (1, 1) of the plane starting one row and one
     * column before it, so the offsets reach -1 */
    for (int i = 0; i < 9; i++)
        sad[i] = mpe_pred_sad_c(src, sstride, ref - rstride - 1, rstride, 2 + i % 3 - 1,
                                2 + i / 3 - 1);
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

uint32_t mpe_block_energy_c(const int16_t blk[64], int32_t *sum)
{
    int32_t s = 0;
    uint32_t sq = 0;
    for (int i = 0; i < 64; i++) {
        s += blk[i];
        sq += (uint32_t)(blk[i] * blk[i]);
    }
    *sum = s;
    return sq;
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

/* pmaddwd pairs the squares (and, against ones, the values) into int32
 * lanes: at most 8 * 2 * 255^2 per lane */
SSE2 uint32_t mpe_block_energy_sse2(const int16_t blk[64], int32_t *sum)
{
    const __m128i one = _mm_set1_epi16(1);
    __m128i s = _mm_setzero_si128(), sq = s;
    for (int i = 0; i < 64; i += 8) {
        const __m128i v = _mm_loadu_si128((const __m128i *)(blk + i));
        s = _mm_add_epi32(s, _mm_madd_epi16(v, one));
        sq = _mm_add_epi32(sq, _mm_madd_epi16(v, v));
    }
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    sq = _mm_add_epi32(sq, _mm_shuffle_epi32(sq, 0x4E));
    sq = _mm_add_epi32(sq, _mm_shuffle_epi32(sq, 0xB1));
    *sum = _mm_cvtsi128_si32(s);
    return (uint32_t)_mm_cvtsi128_si32(sq);
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

/* Where predict16_rows puts each predicted row of 16: stored at dst, or,
 * where dst is NULL, averaged with the row at avg (16 a row, unless NULL:
 * the other prediction of an interpolated one) and its SAD against the
 * source row at src added to the returned sum. */
typedef struct RowSink {
    uint8_t *dst;
    ptrdiff_t dstride;
    const uint8_t *src;
    ptrdiff_t sstride;
    const uint8_t *avg;
} RowSink;

SSE2 static inline __m128i emit16(__m128i row, RowSink *k, __m128i acc)
{
    if (k->dst) {
        _mm_storeu_si128((__m128i *)k->dst, row);
        k->dst += k->dstride;
        return acc;
    }
    if (k->avg) {
        row = _mm_avg_epu8(row, _mm_loadu_si128((const __m128i *)k->avg));
        k->avg += 16;
    }
    acc = _mm_add_epi64(acc, _mm_sad_epu8(row, _mm_loadu_si128((const __m128i *)k->src)));
    k->src += k->sstride;
    return acc;
}

/* predict16, pred_sad and bipred_sad (the sink says which; inlined into
 * each with it constant). */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
SSE2 static inline __m128i predict16_rows(RowSink k, const uint8_t *s, ptrdiff_t rstride, int hx,
                                          int hy, int bh)
{
    __m128i acc = _mm_setzero_si128();
    if (!hx && !hy) {
        for (int y = 0; y < bh; y++, s += rstride)
            acc = emit16(_mm_loadu_si128((const __m128i *)s), &k, acc);
    } else if (!hy) {
        for (int y = 0; y < bh; y++, s += rstride)
            acc = emit16(_mm_avg_epu8(_mm_loadu_si128((const __m128i *)s),
                                      _mm_loadu_si128((const __m128i *)(s + 1))),
                         &k, acc);
    } else if (!hx) {
        __m128i a = _mm_loadu_si128((const __m128i *)s);
        for (int y = 0; y < bh; y++, s += rstride) {
            __m128i b = _mm_loadu_si128((const __m128i *)(s + rstride));
            acc = emit16(_mm_avg_epu8(a, b), &k, acc);
            a = b;
        }
    } else {
        __m128i a = _mm_loadu_si128((const __m128i *)s);
        __m128i b = _mm_loadu_si128((const __m128i *)(s + 1));
        for (int y = 0; y < bh; y++, s += rstride) {
            __m128i c = _mm_loadu_si128((const __m128i *)(s + rstride));
            __m128i d = _mm_loadu_si128((const __m128i *)(s + rstride + 1));
            acc = emit16(_mm_packus_epi16(avg4_lo(a, b, c, d), avg4_hi(a, b, c, d)), &k, acc);
            a = c;
            b = d;
        }
    }
    return acc;
}

SSE2 static void predict16_sse2(uint8_t *dst, ptrdiff_t dstride, const uint8_t *s, ptrdiff_t rstride,
                           int hx, int hy, int bh)
{
    const RowSink k = { dst, dstride, NULL, 0, NULL };
    predict16_rows(k, s, rstride, hx, hy, bh);
}

SSE2 uint32_t mpe_pred_sad_sse2(const uint8_t *src, ptrdiff_t sstride, const uint8_t *ref,
                                ptrdiff_t rstride, int px, int py)
{
    const RowSink k = { NULL, 0, src, sstride, NULL };
    const __m128i acc =
        predict16_rows(k, ref + (py >> 1) * rstride + (px >> 1), rstride, px & 1, py & 1, 16);
    return (uint32_t)(_mm_cvtsi128_si32(acc) + _mm_cvtsi128_si32(_mm_srli_si128(acc, 8)));
}

SSE2 uint32_t mpe_bipred_sad_sse2(const uint8_t *src, ptrdiff_t sstride, const uint8_t *ref0,
                                  ptrdiff_t r0stride, int px0, int py0, const uint8_t *ref1,
                                  ptrdiff_t r1stride, int px1, int py1)
{
    uint8_t first[256];
    const RowSink store = { first, 16, NULL, 0, NULL }, sad = { NULL, 0, src, sstride, first };
    predict16_rows(store, ref0 + (py0 >> 1) * r0stride + (px0 >> 1), r0stride, px0 & 1, py0 & 1, 16);
    const __m128i acc = predict16_rows(sad, ref1 + (py1 >> 1) * r1stride + (px1 >> 1), r1stride,
                                       px1 & 1, py1 & 1, 16);
    return (uint32_t)(_mm_cvtsi128_si32(acc) + _mm_cvtsi128_si32(_mm_srli_si128(acc, 8)));
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

/* Two rows a step: each row's 8 samples side by side in one 128-bit
 * register (movq + movhps), widened to 16 int16 lanes; psadbw gives the
 * sum of |src - pred| of both rows at once. */
AVX2 uint32_t mpe_diff_pixels_avx2(int16_t blk[64], const uint8_t *src, ptrdiff_t sstride,
                                   const uint8_t *pred, ptrdiff_t pstride)
{
    __m128i acc = _mm_setzero_si128();
    for (int y = 0; y < 8; y += 2) {
        const __m128i s = _mm_castpd_si128(_mm_loadh_pd(
            _mm_castsi128_pd(_mm_loadl_epi64((const __m128i *)(src + y * sstride))),
            (const double *)(const void *)(src + (y + 1) * sstride)));
        const __m128i p = _mm_castpd_si128(_mm_loadh_pd(
            _mm_castsi128_pd(_mm_loadl_epi64((const __m128i *)(pred + y * pstride))),
            (const double *)(const void *)(pred + (y + 1) * pstride)));
        _mm256_storeu_si256((__m256i *)(blk + 8 * y),
                            _mm256_sub_epi16(_mm256_cvtepu8_epi16(s), _mm256_cvtepu8_epi16(p)));
        acc = _mm_add_epi64(acc, _mm_sad_epu8(s, p));
    }
    return (uint32_t)(_mm_cvtsi128_si32(acc) + _mm_cvtsi128_si32(_mm_srli_si128(acc, 8)));
}

/* mpe_block_energy_sse2 on 16 lanes: at most 4 * 2 * 255^2 per int32 lane */
AVX2 uint32_t mpe_block_energy_avx2(const int16_t blk[64], int32_t *sum)
{
    const __m256i one = _mm256_set1_epi16(1);
    __m256i s = _mm256_setzero_si256(), sq = s;
    for (int i = 0; i < 64; i += 16) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(blk + i));
        s = _mm256_add_epi32(s, _mm256_madd_epi16(v, one));
        sq = _mm256_add_epi32(sq, _mm256_madd_epi16(v, v));
    }
    /* the sums' and the squares' halves side by side, then folded */
    __m256i both = _mm256_hadd_epi32(s, sq);   /* per 128-bit lane: s pairs, sq pairs */
    both = _mm256_hadd_epi32(both, both);
    const __m128i f = _mm_add_epi32(_mm256_castsi256_si128(both), _mm256_extracti128_si256(both, 1));
    *sum = _mm_cvtsi128_si32(f);
    return (uint32_t)_mm_extract_epi32(f, 1);
}

/* The four diagonal averages of a row pair, (a + b + c + d + 2) >> 2 from
 * the horizontal pair sums l (columns x-1, x) and r (x, x+1) of two rows,
 * packed as psadbw wants them against src_pairs: per 128-bit lane the left
 * diagonal's 8 samples, then the right one's. */
AVX2 static inline __m256i diag_pair(__m256i l0, __m256i l1, __m256i r0, __m256i r1)
{
    const __m256i two = _mm256_set1_epi16(2);
    const __m256i dl = _mm256_srli_epi16(_mm256_add_epi16(_mm256_add_epi16(l0, l1), two), 2);
    const __m256i dr = _mm256_srli_epi16(_mm256_add_epi16(_mm256_add_epi16(r0, r1), two), 2);
    return _mm256_packus_epi16(dl, dr);
}

/* Rows -1 .. 16 of columns -1 .. 16 once each: per row the three column
 * offsets A (x-1), B (x), C (x+1), the pair sums A+B and B+C in 16-bit
 * lanes (the diagonals' halves, shared by the row above and below), and the
 * vertical average of B with the row below (the (0,+1) candidate here, the
 * (0,-1) one on the next row). */
AVX2 void mpe_hpel_sads_avx2(uint32_t sad[9], const uint8_t *src, ptrdiff_t sstride, const uint8_t *ref,
                             ptrdiff_t rstride)
{
    const uint8_t *r = ref - rstride;
    __m128i a0 = _mm_loadu_si128((const __m128i *)(r - 1));
    __m128i b0 = _mm_loadu_si128((const __m128i *)r);
    __m256i b16 = _mm256_cvtepu8_epi16(b0);
    __m256i l0 = _mm256_add_epi16(_mm256_cvtepu8_epi16(a0), b16);
    __m128i c0 = _mm_loadu_si128((const __m128i *)(r + 1));
    __m256i r0 = _mm256_add_epi16(b16, _mm256_cvtepu8_epi16(c0));
    __m128i vprev = b0;
    __m256i dprev = _mm256_setzero_si256();
    __m256i acc_up = _mm256_setzero_si256(), acc_down = acc_up, acc_h = acc_up, acc_v = acc_up;
    __m128i acc_c = _mm_setzero_si128();

    /* y = -1 only primes the row above row 0 */
    for (int y = -1; y < 16; y++, r += rstride) {
        const uint8_t *n = r + rstride;   /* row y + 1 */
        const __m128i a1 = _mm_loadu_si128((const __m128i *)(n - 1));
        const __m128i b1 = _mm_loadu_si128((const __m128i *)n);
        const __m128i c1 = _mm_loadu_si128((const __m128i *)(n + 1));
        const __m256i b1w = _mm256_cvtepu8_epi16(b1);
        const __m256i l1 = _mm256_add_epi16(_mm256_cvtepu8_epi16(a1), b1w);
        const __m256i r1 = _mm256_add_epi16(b1w, _mm256_cvtepu8_epi16(c1));
        const __m256i dcur = diag_pair(l0, l1, r0, r1);
        const __m128i vcur = _mm_avg_epu8(b0, b1);
        if (y >= 0) {
            const __m128i s = _mm_loadu_si128((const __m128i *)(src + y * sstride));
            const __m256i s2 = _mm256_broadcastsi128_si256(s);
            const __m256i pairs = _mm256_permute4x64_epi64(_mm256_castsi128_si256(s), 0x50);
            acc_up = _mm256_add_epi64(acc_up, _mm256_sad_epu8(dprev, pairs));
            acc_down = _mm256_add_epi64(acc_down, _mm256_sad_epu8(dcur, pairs));
            acc_h = _mm256_add_epi64(
                acc_h, _mm256_sad_epu8(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_avg_epu8(a0, b0)),
                                                               _mm_avg_epu8(b0, c0), 1),
                                       s2));
            acc_v = _mm256_add_epi64(
                acc_v, _mm256_sad_epu8(_mm256_inserti128_si256(_mm256_castsi128_si256(vprev), vcur, 1), s2));
            acc_c = _mm_add_epi64(acc_c, _mm_sad_epu8(b0, s));
        }
        a0 = a1;
        b0 = b1;
        c0 = c1;
        l0 = l1;
        r0 = r1;
        dprev = dcur;
        vprev = vcur;
    }
    /* acc_up/down lanes: left's low half, right's low half, left's high
     * half, right's high half; acc_h/v: a candidate per 128-bit lane */
    uint64_t u[4], d[4], h[4], v[4];
    _mm256_storeu_si256((__m256i *)u, acc_up);
    _mm256_storeu_si256((__m256i *)d, acc_down);
    _mm256_storeu_si256((__m256i *)h, acc_h);
    _mm256_storeu_si256((__m256i *)v, acc_v);
    sad[0] = (uint32_t)(u[0] + u[2]);
    sad[1] = (uint32_t)(v[0] + v[1]);
    sad[2] = (uint32_t)(u[1] + u[3]);
    sad[3] = (uint32_t)(h[0] + h[1]);
    sad[4] = (uint32_t)(_mm_cvtsi128_si32(acc_c) + _mm_cvtsi128_si32(_mm_srli_si128(acc_c, 8)));
    sad[5] = (uint32_t)(h[2] + h[3]);
    sad[6] = (uint32_t)(d[0] + d[2]);
    sad[7] = (uint32_t)(v[2] + v[3]);
    sad[8] = (uint32_t)(d[1] + d[3]);
}

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
