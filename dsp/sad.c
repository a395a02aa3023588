/* sad.c — SAD and block sums: C versions, SSE2 and AVX2 variants. */
#include "dsp/sad.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpu.h"
#ifdef MPE_ARCH_X86
#include <immintrin.h>
#endif

uint32_t mpe_sad16_c(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs)
{
    uint32_t sad = 0;
    for (int y = 0; y < 16; y++, a += as, b += bs)
        for (int x = 0; x < 16; x++)
            sad += (uint32_t)abs(a[x] - b[x]);
    return sad;
}

uint32_t mpe_sad16_bound_c(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs,
                           uint32_t bound)
{
    uint32_t sad = 0;
    for (int y = 0; y < 16; y++, a += as, b += bs) {
        for (int x = 0; x < 16; x++)
            sad += (uint32_t)abs(a[x] - b[x]);
        if (y == 7 && sad > bound)
            return sad;
    }
    return sad;
}

/* Column sums of 8 rows slide down the rows, then a sliding 8-wide window
 * along each row. */
void mpe_block_sums_c(uint16_t *sum, ptrdiff_t sstride, const uint8_t *src, ptrdiff_t stride, int w,
                      int y0, int y1)
{
    uint16_t col[4096];

    for (int y = y0; y < y1; y++) {
        const uint8_t *l = src + y * stride;
        if (y == y0) {
            memset(col, 0, sizeof(col));
            for (int j = 0; j < 8; j++)
                for (int x = 0; x < w; x++)
                    col[x] = (uint16_t)(col[x] + l[j * stride + x]);
        } else {
            for (int x = 0; x < w; x++)
                col[x] = (uint16_t)(col[x] + l[7 * stride + x] - l[-stride + x]);
        }
        uint16_t *out = sum + y * sstride;
        unsigned t = 0;
        for (int x = 0; x < 8; x++)
            t += col[x];
        out[0] = (uint16_t)t;
        for (int x = 1; x <= w - 8; x++) {
            t += col[x + 7] - col[x - 1];
            out[x] = (uint16_t)t;
        }
    }
}

#ifdef MPE_ARCH_X86

#define SSE2 __attribute__((target("sse2")))
#define AVX2 __attribute__((target("avx2")))

SSE2 static inline uint32_t hsum_sad_sse2(__m128i acc)
{
    return (uint32_t)(_mm_cvtsi128_si32(acc) + _mm_cvtsi128_si32(_mm_srli_si128(acc, 8)));
}

SSE2 uint32_t mpe_sad16_sse2(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs)
{
    __m128i acc = _mm_setzero_si128();
    for (int y = 0; y < 16; y++, a += as, b += bs)
        acc = _mm_add_epi64(acc, _mm_sad_epu8(_mm_loadu_si128((const __m128i *)a),
                                              _mm_loadu_si128((const __m128i *)b)));
    return hsum_sad_sse2(acc);
}

SSE2 uint32_t mpe_sad16_bound_sse2(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs,
                                   uint32_t bound)
{
    __m128i acc = _mm_setzero_si128();
    for (int y = 0; y < 8; y++, a += as, b += bs)
        acc = _mm_add_epi64(acc, _mm_sad_epu8(_mm_loadu_si128((const __m128i *)a),
                                              _mm_loadu_si128((const __m128i *)b)));
    uint32_t sad = hsum_sad_sse2(acc);
    if (sad > bound)
        return sad;
    for (int y = 8; y < 16; y++, a += as, b += bs)
        acc = _mm_add_epi64(acc, _mm_sad_epu8(_mm_loadu_si128((const __m128i *)a),
                                              _mm_loadu_si128((const __m128i *)b)));
    return hsum_sad_sse2(acc);
}

/* Sums of the 8 bytes at l[x .. x+7] for x .. x+15: (v)mpsadbw against zero
 * gives sums of 4 bytes at 8 consecutive offsets per lane, from byte 0 or
 * byte 4 of the lane.  last: x = w - 16, where only x + 8's sum has bytes
 * left in the row, so the upper lane takes its bytes from the lower one
 * rather than from past the row. */
AVX2 static inline __m256i hsum8_avx2(const uint8_t *l, int x, int last)
{
    const __m256i z = _mm256_setzero_si256();
    __m128i lo = _mm_loadu_si128((const __m128i *)(l + x));
    __m128i hi = last ? _mm_srli_si128(lo, 8) : _mm_loadu_si128((const __m128i *)(l + x + 8));
    __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    return _mm256_add_epi16(_mm256_mpsadbw_epu8(v, z, 0), _mm256_mpsadbw_epu8(v, z, 0x24));
}

/* Row sums of 8 bytes, then 8 of those down the rows, sliding: each new
 * row adds the row 7 below and drops the one above, kept in a ring.  Lanes
 * past a row's last block hold sums of whatever lies there. */
AVX2 void mpe_block_sums_avx2(uint16_t *sum, ptrdiff_t sstride, const uint8_t *src,
                              ptrdiff_t stride, int w, int y0, int y1)
{
    alignas(32) uint16_t ring[8][4096];   /* row sums of rows y-1 .. y+6, by row mod 8 */

    if (y0 >= y1)
        return;
    for (int x = 0; x < w; x += 16) {
        __m256i acc = _mm256_setzero_si256();
        for (int j = 0; j < 8; j++) {
            __m256i h = hsum8_avx2(src + (y0 + j) * stride, x, x == w - 16);
            _mm256_store_si256((__m256i *)(ring[(y0 + j) & 7] + x), h);
            acc = _mm256_add_epi16(acc, h);
        }
        _mm256_storeu_si256((__m256i *)(sum + y0 * sstride + x), acc);
    }
    for (int y = y0 + 1; y < y1; y++) {
        const uint8_t *l = src + (y + 7) * stride;
        uint16_t *slot = ring[(y + 7) & 7];   /* row y - 1's, out; row y + 7's, in */
        uint16_t *out = sum + y * sstride;
        for (int x = 0; x < w; x += 16) {
            __m256i h = hsum8_avx2(l, x, x == w - 16);
            __m256i old = _mm256_load_si256((const __m256i *)(slot + x));
            __m256i prev = _mm256_loadu_si256((const __m256i *)(out - sstride + x));
            _mm256_store_si256((__m256i *)(slot + x), h);
            _mm256_storeu_si256((__m256i *)(out + x), _mm256_sub_epi16(_mm256_add_epi16(prev, h), old));
        }
    }
}

static void sad_dsp_init_x86(MpeSadDsp *dsp, unsigned cpu_flags)
{
    if (cpu_flags & MPE_CPU_SSE2) {
        dsp->sad16 = mpe_sad16_sse2;
        dsp->sad16_bound = mpe_sad16_bound_sse2;
    }
    if (cpu_flags & MPE_CPU_AVX2)
        dsp->block_sums = mpe_block_sums_avx2;
}

#endif /* MPE_ARCH_X86 */

void mpe_sad_dsp_init_c(MpeSadDsp *dsp)
{
    dsp->sad16 = mpe_sad16_c;
    dsp->sad16_bound = mpe_sad16_bound_c;
    dsp->block_sums = mpe_block_sums_c;
}

void mpe_sad_dsp_init(MpeSadDsp *dsp, unsigned cpu_flags)
{
    mpe_sad_dsp_init_c(dsp);
#ifdef MPE_ARCH_X86
    sad_dsp_init_x86(dsp, cpu_flags);
#else
    (void)cpu_flags;
#endif
}
