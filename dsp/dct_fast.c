/* dct_fast.c — faster 8x8 DCT/IDCT with output IDENTICAL to the C reference
 * in dct.c (not merely close: the reconstruction must not drift, and the
 * stream must not change).
 *
 * Why identical is possible.  The reference rounds exactly twice: each pass
 * forms the EXACT integer sum of eight int x Q30 products and rounds it once.
 * Integer addition is associative, so any regrouping of that sum gives the
 * same integer as long as nothing overflows.  The 8-point DCT matrix has
 *     T[u][7-x] = (-1)^u T[u][x]        (checked by tests/unit/test_dct.c)
 * so the sums fold into the usual even/odd butterflies, 22 multiplications
 * per 8 outputs instead of 64, with the very same Q30 constants:
 *
 *   forward, out[u] = sum_x in[x] T[u][x]:
 *     s_j = in[j] + in[7-j],  d_j = in[j] - in[7-j]       (j = 0..3)
 *     out[0] = T00 (s0+s1+s2+s3)        out[4] = T40 (s0-s1-s2+s3)
 *     out[2] = T20 (s0-s3) + T21 (s1-s2) out[6] = T60 (s0-s3) + T61 (s1-s2)
 *     out[u odd] = sum_j T[u][j] d_j
 *   inverse, out[x] = sum_u in[u] T[u][x]:
 *     p = T00 (in0+in4), q = T00 (in0-in4)                 (T40 = T00)
 *     m = T20 in2 + T60 in6, k = T21 in2 + T61 in6
 *     E = { p+m, q+k, q-k, p-m },  O[x] = sum_{u odd} in[u] T[u][x]
 *     out[x] = E[x] + O[x],  out[7-x] = E[x] - O[x]        (x = 0..3)
 *
 * mpe_fdct_fast_c / mpe_idct_fast_c: those butterflies in portable int64 C;
 * identical to the reference for ANY int16 input (every intermediate stays
 * far inside int64: at most 8 * 1.52e9 * 5.3e8 < 6.5e18).
 *
 * mpe_fdct_avx2 / mpe_idct_avx2: the same butterflies on eight columns at
 * once.  Sums and differences are formed in int32 lanes, products and their
 * sums in int64 lanes (vpmuldq multiplies the even int32 lanes; the odd ones
 * are shifted down into place for a second multiply), then rounded exactly as
 * the reference rounds and put back together.  The int32 butterflies need the
 * documented input ranges (fdct [-256, 255], idct [-2048, 2047]: then every
 * pass-2 input is below 1e8 and every int32 sum below 2^30); inside them the
 * output is identical to the reference, outside it is unspecified (no UB:
 * vector lanes wrap). */
#include "dsp/dct.h"

#include <stdint.h>
#include <string.h>

#include "common/cpu.h"

#ifdef MPE_ARCH_X86
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#define T(u, x) ((int64_t)mpe_dct_tab[u][x])

/* The reference's rounding: x / 2^shift to nearest, ties away from zero. */
static inline int64_t round_shift(int64_t x, int shift)
{
    const int64_t half = (int64_t)1 << (shift - 1);
    return x >= 0 ? (x + half) >> shift : -((-x + half) >> shift);
}

static inline int16_t clamp16(int64_t x, int lo, int hi)
{
    return (int16_t)(x < lo ? lo : x > hi ? hi : x);
}

/* out[u] = sum_x in[x] T[u][x], exact. */
static inline void fwd8(int64_t out[8], const int64_t in[8])
{
    const int64_t s0 = in[0] + in[7], s1 = in[1] + in[6], s2 = in[2] + in[5], s3 = in[3] + in[4];
    const int64_t d0 = in[0] - in[7], d1 = in[1] - in[6], d2 = in[2] - in[5], d3 = in[3] - in[4];

    out[0] = T(0, 0) * (s0 + s1 + s2 + s3);
    out[4] = T(4, 0) * (s0 - s1 - s2 + s3);
    out[2] = T(2, 0) * (s0 - s3) + T(2, 1) * (s1 - s2);
    out[6] = T(6, 0) * (s0 - s3) + T(6, 1) * (s1 - s2);
    for (int u = 1; u < 8; u += 2)
        out[u] = T(u, 0) * d0 + T(u, 1) * d1 + T(u, 2) * d2 + T(u, 3) * d3;
}

/* out[x] = sum_u in[u] T[u][x], exact. */
static inline void inv8(int64_t out[8], const int64_t in[8])
{
    const int64_t p = T(0, 0) * (in[0] + in[4]), q = T(0, 0) * (in[0] - in[4]);
    const int64_t m = T(2, 0) * in[2] + T(6, 0) * in[6], k = T(2, 1) * in[2] + T(6, 1) * in[6];
    const int64_t e[4] = { p + m, q + k, q - k, p - m };

    for (int x = 0; x < 4; x++) {
        int64_t o = T(1, x) * in[1] + T(3, x) * in[3] + T(5, x) * in[5] + T(7, x) * in[7];
        out[x] = e[x] + o;
        out[7 - x] = e[x] - o;
    }
}

void mpe_fdct_fast_c(int16_t block[64])
{
    int64_t in[8], out[8], mid[64];

    for (int y = 0; y < 8; y++) {
        for (int x = 0; x < 8; x++)
            in[x] = block[8 * y + x];
        fwd8(out, in);
        for (int u = 0; u < 8; u++)
            mid[8 * y + u] = round_shift(out[u], 16);
    }
    for (int u = 0; u < 8; u++) {
        for (int y = 0; y < 8; y++)
            in[y] = mid[8 * y + u];
        fwd8(out, in);
        for (int v = 0; v < 8; v++)
            block[8 * v + u] = clamp16(round_shift(out[v], 44), -2048, 2047);
    }
}

void mpe_idct_fast_c(int16_t block[64])
{
    int64_t in[8], out[8], mid[64];

    for (int v = 0; v < 8; v++) {
        for (int u = 0; u < 8; u++)
            in[u] = block[8 * v + u];
        inv8(out, in);
        for (int x = 0; x < 8; x++)
            mid[8 * v + x] = round_shift(out[x], 16);
    }
    for (int x = 0; x < 8; x++) {
        for (int v = 0; v < 8; v++)
            in[v] = mid[8 * v + x];
        inv8(out, in);
        for (int y = 0; y < 8; y++)
            block[8 * y + x] = clamp16(round_shift(out[y], 44), -256, 255);
    }
}

/* The tests of the shortcuts: SSE2 compares (x86-64's baseline) where
 * the compiler has them, else the plain loops. */
static inline int all_equal(const int16_t block[64])
{
#if defined(__SSE2__)
    const __m128i v = _mm_set1_epi16(block[0]);
    __m128i eq = _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)block), v);
    for (int i = 8; i < 64; i += 8)
        eq = _mm_and_si128(eq, _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)(block + i)), v));
    return _mm_movemask_epi8(eq) == 0xFFFF;
#else
    int diff = 0;
    for (int i = 1; i < 64; i++)
        diff |= block[i] ^ block[0];
    return !diff;
#endif
}

/* every coefficient but [0] and [63] zero */
static inline int only_corners(const int16_t block[64])
{
#if defined(__SSE2__)
    __m128i any = _mm_and_si128(_mm_loadu_si128((const __m128i *)block),
                                _mm_setr_epi16(0, -1, -1, -1, -1, -1, -1, -1));
    for (int i = 8; i < 56; i += 8)
        any = _mm_or_si128(any, _mm_loadu_si128((const __m128i *)(block + i)));
    any = _mm_or_si128(any, _mm_and_si128(_mm_loadu_si128((const __m128i *)(block + 56)),
                                          _mm_setr_epi16(-1, -1, -1, -1, -1, -1, -1, 0)));
    return _mm_movemask_epi8(_mm_cmpeq_epi16(any, _mm_setzero_si128())) == 0xFFFF;
#else
    int rest = 0;
    for (int i = 1; i < 63; i++)
        rest |= block[i];
    return !rest;
#endif
}

int mpe_fdct_flat(int16_t block[64])
{
    if (!all_equal(block))
        return 0;
    /* pass 1: row sums 8 v T(0,0), then 0 for u > 0; pass 2 likewise */
    const int64_t mid = round_shift(8 * block[0] * T(0, 0), 16);
    const int16_t dc = clamp16(round_shift(8 * mid * T(0, 0), 44), -2048, 2047);
    mpe_block_zero(block);
    block[0] = dc;
    return 1;
}

int mpe_idct_sparse(int16_t block[64])
{
    const int f77 = block[63];
    if (f77 < -1 || f77 > 1 || !only_corners(block))
        return 0;
    const int64_t a = round_shift(block[0] * T(0, 0), 16) * T(0, 0);
    /* row 7's largest magnitude, -T(7,3): K bounds every r(T(7,x)) T(7,y) */
    const int64_t k = f77 ? round_shift(-T(7, 3), 16) * -T(7, 3) : 0;
    const int64_t lo = round_shift(a - k, 44);
    if (lo != round_shift(a + k, 44))
        return 0;
    const int16_t v = clamp16(lo, -256, 255);
    for (int i = 0; i < 64; i++)
        block[i] = v;
    return 1;
}

/* mpe_dct_tab / 2^16 rounded, half away from zero (so the symmetry
 * T[u][7-x] = (-1)^u T[u][x] survives; tests/unit/test_dct.c checks both). */
const int16_t mpe_dct_tab_q14[8][8] = {
    { 5793, 5793, 5793, 5793, 5793, 5793, 5793, 5793 },
    { 8035, 6811, 4551, 1598, -1598, -4551, -6811, -8035 },
    { 7568, 3135, -3135, -7568, -7568, -3135, 3135, 7568 },
    { 6811, -1598, -8035, -4551, 4551, 8035, 1598, -6811 },
    { 5793, -5793, -5793, 5793, 5793, -5793, -5793, 5793 },
    { 4551, -8035, 1598, 6811, -6811, -1598, 8035, -4551 },
    { 3135, -7568, 7568, -3135, -3135, 7568, -7568, 3135 },
    { 1598, -4551, 6811, -8035, 8035, -6811, 4551, -1598 },
};

/* mpe_dct_tab = 2^16 mpe_dct_tab_q14 + this, exactly (|entries| < 2^15):
 * the AVX2 first passes multiply the int16 samples by both halves in
 * pmaddwd and put the Q30 sum back together without int64 lanes. */
static const int16_t dct_tab_lo[8][8] = {
    { -24986, -24986, -24986, -24986, -24986, -24986, -24986, -24986 },
    { -26672, 26153, 15162, 11791, -11791, -15162, -26153, 26672 },
    { 27599, -3757, 3757, -27599, -27599, 3757, -3757, 27599 },
    { 26153, -11791, 26672, -15162, 15162, -26672, 11791, -26153 },
    { -24986, 24986, 24986, -24986, -24986, 24986, 24986, -24986 },
    { 15162, 26672, 11791, 26153, -26153, -11791, -26672, -15162 },
    { -3757, -27599, 27599, 3757, 3757, 27599, -27599, -3757 },
    { 11791, -15162, 26153, 26672, -26672, -26153, 15162, -11791 },
};

/* floor(x / 2^s) of an int64 without shifting a negative value */
static inline int64_t floor_shift(int64_t x, int s)
{
    return x >= 0 ? x >> s : -((-x + ((int64_t)1 << s) - 1) >> s);
}

uint32_t mpe_fdct_bound_c(const int16_t block[64])
{
    int32_t mid[8][8];   /* [v][x], Q4 */
    uint32_t max = 0;
    for (int v = 0; v < 8; v++)
        for (int x = 0; x < 8; x++) {
            int64_t p = 0;
            for (int y = 0; y < 8; y++)
                p += (int64_t)mpe_dct_tab_q14[v][y] * block[8 * y + x];
            mid[v][x] = (int32_t)floor_shift(p + 512, 10);
        }
    for (int v = 0; v < 8; v++)
        for (int u = 0; u < 8; u++) {
            int64_t r = 0;
            for (int x = 0; x < 8; x++)
                r += (int64_t)mpe_dct_tab_q14[u][x] * mid[v][x];
            const uint32_t a = (uint32_t)(r < 0 ? -r : r);
            max = a > max ? a : max;
        }
    return max;
}

#ifdef MPE_ARCH_X86

#define AVX2 __attribute__((target("avx2")))

/* Pairs (a[k], b[k]) of eight int16 columns in one vector for pmaddwd. */
AVX2 static inline __m256i pair16(__m128i a, __m128i b)
{
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi16(a, b)),
                                   _mm_unpackhi_epi16(a, b), 1);
}

/* A pmaddwd constant: c0 for the first of each pair, c1 for the second. */
#define COEF_PAIR(c0, c1) _mm256_set1_epi32((int32_t)(((uint32_t)(uint16_t)(c1) << 16) | (uint16_t)(c0)))

/* EMIT(u, sum_y A[u][y] in[y]) for u = 0..7, column by column, A =
 * mpe_dct_tab_q14 (its entries written out: u's row, first four columns),
 * exact in int32: fwd8's even/odd folding (A keeps T's symmetry) through
 * pmaddwd; inputs below 11600, so the folded sums fit int16.  in[] is read
 * before the first EMIT (which may overwrite it).  Written out in full, each
 * output consumed as it is made: loops over arrays stay in memory. */
#define FWD_Q14(in, EMIT)                                                                         \
    do {                                                                                          \
        const __m128i s0_ = _mm_add_epi16(in[0], in[7]), s1_ = _mm_add_epi16(in[1], in[6]);      \
        const __m128i s2_ = _mm_add_epi16(in[2], in[5]), s3_ = _mm_add_epi16(in[3], in[4]);      \
        const __m128i d0_ = _mm_sub_epi16(in[0], in[7]), d1_ = _mm_sub_epi16(in[1], in[6]);      \
        const __m128i d2_ = _mm_sub_epi16(in[2], in[5]), d3_ = _mm_sub_epi16(in[3], in[4]);      \
        const __m256i s01_ = pair16(s0_, s1_), s23_ = pair16(s2_, s3_);                          \
        const __m256i d01_ = pair16(d0_, d1_), d23_ = pair16(d2_, d3_);                          \
        EMIT(0, _mm256_add_epi32(_mm256_madd_epi16(s01_, COEF_PAIR(5793, 5793)),                 \
                                 _mm256_madd_epi16(s23_, COEF_PAIR(5793, 5793))));               \
        EMIT(2, _mm256_add_epi32(_mm256_madd_epi16(s01_, COEF_PAIR(7568, 3135)),                 \
                                 _mm256_madd_epi16(s23_, COEF_PAIR(-3135, -7568))));             \
        EMIT(4, _mm256_add_epi32(_mm256_madd_epi16(s01_, COEF_PAIR(5793, -5793)),                \
                                 _mm256_madd_epi16(s23_, COEF_PAIR(-5793, 5793))));              \
        EMIT(6, _mm256_add_epi32(_mm256_madd_epi16(s01_, COEF_PAIR(3135, -7568)),                \
                                 _mm256_madd_epi16(s23_, COEF_PAIR(7568, -3135))));              \
        EMIT(1, _mm256_add_epi32(_mm256_madd_epi16(d01_, COEF_PAIR(8035, 6811)),                 \
                                 _mm256_madd_epi16(d23_, COEF_PAIR(4551, 1598))));               \
        EMIT(3, _mm256_add_epi32(_mm256_madd_epi16(d01_, COEF_PAIR(6811, -1598)),                \
                                 _mm256_madd_epi16(d23_, COEF_PAIR(-8035, -4551))));             \
        EMIT(5, _mm256_add_epi32(_mm256_madd_epi16(d01_, COEF_PAIR(4551, -8035)),                \
                                 _mm256_madd_epi16(d23_, COEF_PAIR(1598, 6811))));               \
        EMIT(7, _mm256_add_epi32(_mm256_madd_epi16(d01_, COEF_PAIR(1598, -4551)),                \
                                 _mm256_madd_epi16(d23_, COEF_PAIR(6811, -8035))));              \
    } while (0)

#if defined(__GNUC__)
__attribute__((always_inline))
#endif
AVX2 static inline void transpose8x16(__m128i r[8])
{
    __m128i a[8], b[8];
    for (int i = 0; i < 4; i++) {
        a[2 * i] = _mm_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        b[4 * i + 0] = _mm_unpacklo_epi32(a[4 * i + 0], a[4 * i + 2]);
        b[4 * i + 1] = _mm_unpackhi_epi32(a[4 * i + 0], a[4 * i + 2]);
        b[4 * i + 2] = _mm_unpacklo_epi32(a[4 * i + 1], a[4 * i + 3]);
        b[4 * i + 3] = _mm_unpackhi_epi32(a[4 * i + 1], a[4 * i + 3]);
    }
    for (int i = 0; i < 4; i++) {
        r[2 * i] = _mm_unpacklo_epi64(b[i], b[4 + i]);
        r[2 * i + 1] = _mm_unpackhi_epi64(b[i], b[4 + i]);
    }
}

/* The first pass's output rounded to Q4 (floor of x + 1/2; |q| < 11600),
 * as row v of int16; the second's folded into the running max of |R|. */
#define EMIT_ROW(v, x)                                                                            \
    do {                                                                                          \
        const __m256i q_ = _mm256_srai_epi32(_mm256_add_epi32((x), _mm256_set1_epi32(512)), 10); \
        rows[v] = _mm_packs_epi32(_mm256_castsi256_si128(q_), _mm256_extracti128_si256(q_, 1));  \
    } while (0)
#define EMIT_MAX(u, x) (m = _mm256_max_epu32(m, _mm256_abs_epi32(x)))

AVX2 uint32_t mpe_fdct_bound_avx2(const int16_t block[64])
{
    __m128i rows[8];
    __m256i m = _mm256_setzero_si256();
    for (int y = 0; y < 8; y++)
        rows[y] = _mm_loadu_si128((const __m128i *)(block + 8 * y));
    FWD_Q14(rows, EMIT_ROW);   /* rows[v]: column x in lane x */
    transpose8x16(rows);       /* rows[x]: v in lane v */
    FWD_Q14(rows, EMIT_MAX);   /* R[v][u] in lane v */
    __m128i h = _mm_max_epu32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
    h = _mm_max_epu32(h, _mm_shuffle_epi32(h, 0x4E));
    h = _mm_max_epu32(h, _mm_shuffle_epi32(h, 0xB1));
    return (uint32_t)_mm_cvtsi128_si32(h);
}

/* x / 2^S rounded like round_shift, in int64 lanes (|x| < 2^61).  AVX2 has
 * no 64-bit arithmetic shift: adding 2^62 makes every value non-negative so
 * a logical shift floors, and 2^62 / 2^S comes off afterwards.  Negative x
 * get half - 1 instead of half: floor((x + half - 1) / 2^S) equals
 * -floor((-x + half) / 2^S), the reference's rounding of a negative sum. */
#define RSHIFT64(x, S)                                                                     \
    _mm256_sub_epi64(                                                                      \
        _mm256_srli_epi64(                                                                 \
            _mm256_add_epi64(_mm256_add_epi64((x), _mm256_set1_epi64x(((int64_t)1 << 62) + \
                                                                      ((int64_t)1 << ((S)-1)))), \
                             _mm256_cmpgt_epi64(_mm256_setzero_si256(), (x))),             \
            (S)),                                                                          \
        _mm256_set1_epi64x((int64_t)1 << (62 - (S))))

/* Rounded even-lane (e) and odd-lane (o) int64 results back into int32 lanes. */
#define MERGE(e, o, S) \
    _mm256_blend_epi32(RSHIFT64(e, S), _mm256_slli_epi64(RSHIFT64(o, S), 32), 0xAA)

AVX2 static inline __m256i mulc(__m256i x, int64_t c)
{
    /* vpmuldq: signed low 32 bits of each 64-bit lane, full 64-bit product */
    return _mm256_mul_epi32(x, _mm256_set1_epi32((int32_t)c));
}

AVX2 static inline void transpose8(__m256i out[8], const __m256i in[8])
{
    __m256i t[8], u[8];
#pragma GCC unroll 8
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_epi32(in[2 * i], in[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_epi32(in[2 * i], in[2 * i + 1]);
    }
#pragma GCC unroll 8
    for (int i = 0; i < 2; i++) {
        u[4 * i + 0] = _mm256_unpacklo_epi64(t[4 * i + 0], t[4 * i + 2]);
        u[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i + 0], t[4 * i + 2]);
        u[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
#pragma GCC unroll 8
    for (int i = 0; i < 4; i++) {
        out[i] = _mm256_permute2x128_si256(u[i], u[4 + i], 0x20);
        out[4 + i] = _mm256_permute2x128_si256(u[i], u[4 + i], 0x31);
    }
}

/* Products of the forward butterfly for one set of lanes (even or odd):
 * ss = s0+s1+s2+s3, sd = s0-s1-s2+s3, a = s0-s3, b = s1-s2, d[j]. */
AVX2 static inline void fwd_products(__m256i out[8], __m256i ss, __m256i sd, __m256i a, __m256i b,
                                     const __m256i d[4])
{
    out[0] = mulc(ss, T(0, 0));
    out[4] = mulc(sd, T(4, 0));
    out[2] = _mm256_add_epi64(mulc(a, T(2, 0)), mulc(b, T(2, 1)));
    out[6] = _mm256_add_epi64(mulc(a, T(6, 0)), mulc(b, T(6, 1)));
#pragma GCC unroll 8
    for (int u = 1; u < 8; u += 2)
        out[u] = _mm256_add_epi64(_mm256_add_epi64(mulc(d[0], T(u, 0)), mulc(d[1], T(u, 1))),
                                  _mm256_add_epi64(mulc(d[2], T(u, 2)), mulc(d[3], T(u, 3))));
}

/* Forward 1-D transform down the 8 int32 vectors: e/o[u] = exact
 * sum_j T[u][j] in[j] for the even / odd int32 lanes, in int64 lanes. */
AVX2 static inline void fwd8_avx2(__m256i e[8], __m256i o[8], const __m256i in[8])
{
    __m256i s[4], d[4], dodd[4];
#pragma GCC unroll 8
    for (int j = 0; j < 4; j++) {
        s[j] = _mm256_add_epi32(in[j], in[7 - j]);
        d[j] = _mm256_sub_epi32(in[j], in[7 - j]);
        dodd[j] = _mm256_srli_epi64(d[j], 32);
    }
    const __m256i s03 = _mm256_add_epi32(s[0], s[3]), s12 = _mm256_add_epi32(s[1], s[2]);
    const __m256i ss = _mm256_add_epi32(s03, s12), sd = _mm256_sub_epi32(s03, s12);
    const __m256i a = _mm256_sub_epi32(s[0], s[3]), b = _mm256_sub_epi32(s[1], s[2]);
    fwd_products(e, ss, sd, a, b, d);
    fwd_products(o, _mm256_srli_epi64(ss, 32), _mm256_srli_epi64(sd, 32), _mm256_srli_epi64(a, 32),
                 _mm256_srli_epi64(b, 32), dodd);
}

/* Products of the inverse butterfly for one set of lanes; in[] holds the
 * eight input vectors (only the lanes in use matter). */
AVX2 static inline void inv_products(__m256i out[8], __m256i sum04, __m256i dif04, const __m256i in[8])
{
    const __m256i p = mulc(sum04, T(0, 0)), q = mulc(dif04, T(0, 0));
    const __m256i m = _mm256_add_epi64(mulc(in[2], T(2, 0)), mulc(in[6], T(6, 0)));
    const __m256i k = _mm256_add_epi64(mulc(in[2], T(2, 1)), mulc(in[6], T(6, 1)));
    const __m256i ev[4] = { _mm256_add_epi64(p, m), _mm256_add_epi64(q, k),
                            _mm256_sub_epi64(q, k), _mm256_sub_epi64(p, m) };
#pragma GCC unroll 8
    for (int x = 0; x < 4; x++) {
        __m256i od = _mm256_add_epi64(_mm256_add_epi64(mulc(in[1], T(1, x)), mulc(in[3], T(3, x))),
                                      _mm256_add_epi64(mulc(in[5], T(5, x)), mulc(in[7], T(7, x))));
        out[x] = _mm256_add_epi64(ev[x], od);
        out[7 - x] = _mm256_sub_epi64(ev[x], od);
    }
}

AVX2 static inline void inv8_avx2(__m256i e[8], __m256i o[8], const __m256i in[8])
{
    __m256i odd[8];
    const __m256i sum04 = _mm256_add_epi32(in[0], in[4]), dif04 = _mm256_sub_epi32(in[0], in[4]);
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++)
        odd[j] = _mm256_srli_epi64(in[j], 32);
    inv_products(e, sum04, dif04, in);
    inv_products(o, _mm256_srli_epi64(sum04, 32), _mm256_srli_epi64(dif04, 32), odd);
}

/* Rows i and i+1, clamped to [lo, hi], back to int16. */
AVX2 static inline void store8(int16_t block[64], const __m256i r[8], int lo, int hi)
{
    const __m256i vlo = _mm256_set1_epi32(lo), vhi = _mm256_set1_epi32(hi);
#pragma GCC unroll 8
    for (int i = 0; i < 8; i += 2) {
        __m256i a = _mm256_min_epi32(_mm256_max_epi32(r[i], vlo), vhi);
        __m256i b = _mm256_min_epi32(_mm256_max_epi32(r[i + 1], vlo), vhi);
        /* packs works per 128-bit half: a0-3 b0-3 | a4-7 b4-7 */
        __m256i p = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xD8);
        _mm256_storeu_si256((__m256i *)(block + 8 * i), p);
    }
}

/* round_shift(hi 2^16 + lo, 16) of int32 lanes, exactly: with
 * a = hi + floor(lo / 2^16) and b = lo mod 2^16 the sum is a 2^16 + b,
 * 0 <= b < 2^16, negative exactly when a is; the reference's rounding is
 * then a + floor((b + 2^15 - (a < 0)) / 2^16). */
AVX2 static inline __m256i round16_split(__m256i hi, __m256i lo)
{
    const __m256i a = _mm256_add_epi32(hi, _mm256_srai_epi32(lo, 16));
    const __m256i b = _mm256_and_si256(lo, _mm256_set1_epi32(0xFFFF));
    return _mm256_add_epi32(
        a, _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(32768)),
                                              _mm256_srai_epi32(a, 31)),
                             16));
}

AVX2 void mpe_dct_round16_split_avx2(const int32_t hi[8], const int32_t lo[8], int32_t out[8])
{
    _mm256_storeu_si256((__m256i *)out,
                        round16_split(_mm256_loadu_si256((const __m256i *)hi),
                                      _mm256_loadu_si256((const __m256i *)lo)));
}

#define PAIR_HI(u, j0, j1) COEF_PAIR(mpe_dct_tab_q14[u][j0], mpe_dct_tab_q14[u][j1])
#define PAIR_LO(u, j0, j1) COEF_PAIR(dct_tab_lo[u][j0], dct_tab_lo[u][j1])

/* The first (row) pass of the forward transform, exact, in int32 lanes:
 * each Q30 product is split as T = 2^16 Th + Tl (int16 halves) so that
 * pmaddwd forms both partial sums of the folded samples (|s|, |d| <= 512:
 * every partial sum below 2^26).  c[x]: column x of the block, lanes y;
 * out[u]: mid[y][u], lanes y. */
AVX2 static inline void fwd_pass1_split(__m256i out[8], const __m128i c[8])
{
    const __m128i s0 = _mm_add_epi16(c[0], c[7]), s1 = _mm_add_epi16(c[1], c[6]);
    const __m128i s2 = _mm_add_epi16(c[2], c[5]), s3 = _mm_add_epi16(c[3], c[4]);
    const __m128i d0 = _mm_sub_epi16(c[0], c[7]), d1 = _mm_sub_epi16(c[1], c[6]);
    const __m128i d2 = _mm_sub_epi16(c[2], c[5]), d3 = _mm_sub_epi16(c[3], c[4]);
    const __m256i s01 = pair16(s0, s1), s23 = pair16(s2, s3);
    const __m256i d01 = pair16(d0, d1), d23 = pair16(d2, d3);
#pragma GCC unroll 8
    for (int u = 0; u < 8; u++) {
        const __m256i x01 = u & 1 ? d01 : s01, x23 = u & 1 ? d23 : s23;
        const __m256i hi = _mm256_add_epi32(_mm256_madd_epi16(x01, PAIR_HI(u, 0, 1)),
                                            _mm256_madd_epi16(x23, PAIR_HI(u, 2, 3)));
        const __m256i lo = _mm256_add_epi32(_mm256_madd_epi16(x01, PAIR_LO(u, 0, 1)),
                                            _mm256_madd_epi16(x23, PAIR_LO(u, 2, 3)));
        out[u] = round16_split(hi, lo);
    }
}

/* The inverse transform's first (row) pass the same way: c[u] holds
 * coefficient column u, lanes v (|F| <= 2048: partial sums below 2^30);
 * out[x]: mid[v][x], lanes v, from inv8's even and odd halves. */
AVX2 static inline void inv_pass1_split(__m256i out[8], const __m128i c[8])
{
    const __m256i f02 = pair16(c[0], c[2]), f46 = pair16(c[4], c[6]);
    const __m256i f13 = pair16(c[1], c[3]), f57 = pair16(c[5], c[7]);
#pragma GCC unroll 4
    for (int x = 0; x < 4; x++) {
        const __m256i ehi = _mm256_add_epi32(_mm256_madd_epi16(f02, COEF_PAIR(mpe_dct_tab_q14[0][x], mpe_dct_tab_q14[2][x])),
                                             _mm256_madd_epi16(f46, COEF_PAIR(mpe_dct_tab_q14[4][x], mpe_dct_tab_q14[6][x])));
        const __m256i elo = _mm256_add_epi32(_mm256_madd_epi16(f02, COEF_PAIR(dct_tab_lo[0][x], dct_tab_lo[2][x])),
                                             _mm256_madd_epi16(f46, COEF_PAIR(dct_tab_lo[4][x], dct_tab_lo[6][x])));
        const __m256i ohi = _mm256_add_epi32(_mm256_madd_epi16(f13, COEF_PAIR(mpe_dct_tab_q14[1][x], mpe_dct_tab_q14[3][x])),
                                             _mm256_madd_epi16(f57, COEF_PAIR(mpe_dct_tab_q14[5][x], mpe_dct_tab_q14[7][x])));
        const __m256i olo = _mm256_add_epi32(_mm256_madd_epi16(f13, COEF_PAIR(dct_tab_lo[1][x], dct_tab_lo[3][x])),
                                             _mm256_madd_epi16(f57, COEF_PAIR(dct_tab_lo[5][x], dct_tab_lo[7][x])));
        out[x] = round16_split(_mm256_add_epi32(ehi, ohi), _mm256_add_epi32(elo, olo));
        out[7 - x] = round16_split(_mm256_sub_epi32(ehi, ohi), _mm256_sub_epi32(elo, olo));
    }
}

AVX2 static inline void load_columns16(__m128i c[8], const int16_t block[64])
{
#pragma GCC unroll 8
    for (int y = 0; y < 8; y++)
        c[y] = _mm_loadu_si128((const __m128i *)(block + 8 * y));
    transpose8x16(c);
}

AVX2 void mpe_fdct_avx2(int16_t block[64])
{
    __m256i r[8], t[8], e[8], o[8];
    __m128i c[8];

    /* pass 1 runs along rows: transpose so it runs down vectors */
    load_columns16(c, block);
    fwd_pass1_split(r, c);              /* mid[y][u] for y across the lanes */
    transpose8(t, r);                   /* t[y] = mid[y][u] for u across the lanes */
    fwd8_avx2(e, o, t);
#pragma GCC unroll 8
    for (int v = 0; v < 8; v++)
        r[v] = MERGE(e[v], o[v], 44);
    store8(block, r, -2048, 2047);
}

AVX2 void mpe_idct_avx2(int16_t block[64])
{
    __m256i r[8], t[8], e[8], o[8];
    __m128i c[8];

    load_columns16(c, block);           /* c[u] = F[v][u] for v across the lanes */
    inv_pass1_split(r, c);              /* mid[v][x] for v across the lanes */
    transpose8(t, r);                   /* t[v] = mid[v][x] for x across the lanes */
    inv8_avx2(e, o, t);
#pragma GCC unroll 8
    for (int y = 0; y < 8; y++)
        r[y] = MERGE(e[y], o[y], 44);
    store8(block, r, -256, 255);
}

#endif
