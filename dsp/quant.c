/* quant.c — zigzag scan, default matrices, quantisation and inverse
 * quantisation for MPEG-1 (ISO/IEC 11172-2 §2.4.4) and MPEG-2 (ISO/IEC
 * 13818-2 §7.4).
 *
 * Reconstruction step.  With qscale in MPEG-1 units and, for MPEG-2,
 * q_scale_type 0 (quantiser_scale = 2 * qscale, Table 7-6), both formats
 * reconstruct a level QF at (ignoring truncation and mismatch control)
 *     intra AC:  QF * qscale * W / 8
 *     non-intra: (QF + sign(QF) / 2) * qscale * W / 8
 * so one step s = qscale * W / 8 serves both, and the forward quantisers
 * below are format-independent except for max_level.
 *
 * All arithmetic is integer; the largest product, for any int16 level,
 * is (2 * 32767 + 1) * 255 * 62 < 2^31, so int32 never overflows.
 * Division is C's truncation toward zero, exactly as the standards'
 * "/" (11172-2 §2.2.1 and 13818-2 §4.1 define "/" as integer division with
 * truncation toward zero), and parity is tested with "% 2" rather than
 * "& 1" so it does not depend on the representation of negative values. */
#include "dsp/quant.h"

#include <stdint.h>

#include "common/cpu.h"

#ifdef MPE_ARCH_X86
#include <immintrin.h>
#endif

/* 13818-2 Figure 7-2 (alternate_scan = 0) and 11172-2 §2.4.4.1's zigzag:
 * the i-th coefficient in transmission order sits at raster index
 * mpe_zigzag[i] = 8 * v + u. */
const uint8_t mpe_zigzag[64] = {
     0,  1,  8, 16,  9,  2,  3, 10,
    17, 24, 32, 25, 18, 11,  4,  5,
    12, 19, 26, 33, 40, 48, 41, 34,
    27, 20, 13,  6,  7, 14, 21, 28,
    35, 42, 49, 56, 57, 50, 43, 36,
    29, 22, 15, 23, 30, 37, 44, 51,
    58, 59, 52, 45, 38, 31, 39, 46,
    53, 60, 61, 54, 47, 55, 62, 63,
};

/* 13818-2 Figure 7-3 (alternate_scan = 1): mostly down the columns first,
 * for blocks whose energy runs vertically (interlaced material). */
const uint8_t mpe_alternate_scan[64] = {
     0,  8, 16, 24,  1,  9,  2, 10,
    17, 25, 32, 40, 48, 56, 57, 49,
    41, 33, 26, 18,  3, 11,  4, 12,
    19, 27, 34, 42, 50, 58, 35, 43,
    51, 59, 20, 28,  5, 13,  6, 14,
    21, 29, 36, 44, 52, 60, 37, 45,
    53, 61, 22, 30,  7, 15, 23, 31,
    38, 46, 54, 62, 39, 47, 55, 63,
};

/* The inverses: the scan position of each raster index. */
const uint8_t mpe_zigzag_inv[64] = {
     0,  1,  5,  6, 14, 15, 27, 28,
     2,  4,  7, 13, 16, 26, 29, 42,
     3,  8, 12, 17, 25, 30, 41, 43,
     9, 11, 18, 24, 31, 40, 44, 53,
    10, 19, 23, 32, 39, 45, 52, 54,
    20, 22, 33, 38, 46, 51, 55, 60,
    21, 34, 37, 47, 50, 56, 59, 61,
    35, 36, 48, 49, 57, 58, 62, 63,
};

const uint8_t mpe_alternate_scan_inv[64] = {
     0,  4,  6, 20, 22, 36, 38, 52,
     1,  5,  7, 21, 23, 37, 39, 53,
     2,  8, 19, 24, 34, 40, 50, 54,
     3,  9, 18, 25, 35, 41, 51, 55,
    10, 17, 26, 30, 42, 46, 56, 60,
    11, 16, 27, 31, 43, 47, 57, 61,
    12, 15, 28, 32, 44, 48, 58, 62,
    13, 14, 29, 33, 45, 49, 59, 63,
};

/* 11172-2 §2.4.3.2 / 13818-2 §6.3.11 default intra_quantiser_matrix, as
 * the standards print it: row v, column u (raster order). */
const uint8_t mpe_default_intra_matrix[64] = {
     8, 16, 19, 22, 26, 27, 29, 34,
    16, 16, 22, 24, 27, 29, 34, 37,
    19, 22, 26, 27, 29, 34, 34, 38,
    22, 22, 26, 27, 29, 34, 37, 40,
    22, 26, 27, 29, 32, 35, 40, 48,
    26, 27, 29, 32, 35, 40, 48, 58,
    26, 27, 29, 34, 38, 46, 56, 69,
    27, 29, 35, 38, 46, 56, 69, 83,
};

/* Default non_intra_quantiser_matrix: 16 everywhere (same sections). */
const uint8_t mpe_default_inter_matrix[64] = {
    16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16,
};

static inline int32_t mpe_sign32(int32_t x)
{
    return (x > 0) - (x < 0);
}

static inline int32_t mpe_clamp32(int32_t x, int32_t lo, int32_t hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* Intra: DC is F(0,0)/8 rounded (intra DC precision 8 bits: 11172-2
 * §2.4.4.1 always, 13818-2 §7.4.1 with intra_dc_precision 0), clamped to
 * 0..255 since F(0,0) = 8 * mean is non-negative for 8-bit samples.
 * AC: QF = round(F / s) with s = qscale * W / 8, i.e.
 *     |QF| = floor(8|F| / (qscale W) + 1/2) = (16|F| + qscale W) / (2 qscale W)
 * (ties away from zero), so |F - QF s| <= s / 2 before the decoder's own
 * truncation and mismatch control. */
int mpe_quant_intra(int16_t level[64], const int16_t coef[64], int qscale,
                    const uint8_t matrix[64], int max_level)
{
    int nz = 0;
    int32_t dc = coef[0] < 0 ? 0 : coef[0];

    level[0] = (int16_t)mpe_clamp32((dc + 4) / 8, 0, 255);
    for (int i = 1; i < 64; i++) {
        int32_t f = coef[i];
        int32_t qw = (int32_t)qscale * matrix[i];
        int32_t mag = (16 * (f < 0 ? -f : f) + qw) / (2 * qw);
        if (mag > max_level)
            mag = max_level;
        level[i] = (int16_t)(f < 0 ? -mag : mag);
        nz += mag != 0;
    }
    return nz;
}

/* Non-intra: QF = trunc(F / s), |QF| = 8|F| / (qscale W).  The decoder
 * reconstructs at (|QF| + 1/2) s, the middle of [|QF| s, (|QF| + 1) s), so
 * every non-zero level errs by at most s / 2, while |F| < s falls in the
 * dead zone and costs no bits (11172-2 §2.4.4.2, 13818-2 §7.4.2.3). */
int mpe_quant_inter(int16_t level[64], const int16_t coef[64], int qscale,
                    const uint8_t matrix[64], int max_level)
{
    int nz = 0;

    for (int i = 0; i < 64; i++) {
        int32_t f = coef[i];
        int32_t qw = (int32_t)qscale * matrix[i];
        int32_t mag = 8 * (f < 0 ? -f : f) / qw;
        if (mag > max_level)
            mag = max_level;
        level[i] = (int16_t)(f < 0 ? -mag : mag);
        nz += mag != 0;
    }
    return nz;
}

/* MPEG-1 (11172-2 §2.4.4.1 intra, §2.4.4.2 non-intra): reconstruct,
 * make even values odd by moving them one toward zero, then saturate. */
static int32_t mpe_mpeg1_oddify_clamp(int32_t rec)
{
    if (rec % 2 == 0)
        rec -= mpe_sign32(rec); /* Sign(0) = 0: zero stays zero */
    return mpe_clamp32(rec, -2048, 2047);
}

/* MPEG-2 mismatch control (13818-2 §7.4.4): if the sum of all 64
 * saturated coefficients is even, toggle the LSB of F[7][7]. */
static void mpe_mpeg2_mismatch(int16_t coef[64])
{
    int32_t sum = 0;
    for (int i = 0; i < 64; i++)
        sum += coef[i];
    if (sum % 2 == 0) {
        if (coef[63] % 2 != 0)
            coef[63] = (int16_t)(coef[63] - 1);
        else
            coef[63] = (int16_t)(coef[63] + 1);
    }
}

int mpe_quant_intra_dc(int f00, int dc_precision)
{
    const int32_t mult = 8 >> dc_precision, dc = f00 < 0 ? 0 : f00;
    return (int)mpe_clamp32((dc + mult / 2) / mult, 0, (256 << dc_precision) - 1);
}

void mpe_dequant_intra(int16_t coef[64], const int16_t level[64], int qscale,
                       const uint8_t matrix[64], int mpeg2)
{
    mpe_dequant_intra_dc(coef, level, qscale, matrix, mpeg2, 0);
}

void mpe_dequant_intra_dc(int16_t coef[64], const int16_t level[64], int qscale,
                          const uint8_t matrix[64], int mpeg2, int dc_precision)
{
    /* Intra DC: dct_recon = 8 * dct_dc (11172-2 §2.4.4.1); MPEG-2
     * intra_dc_mult = 8 >> intra_dc_precision (§7.4.1, Table 7-4).
     * Levels are 0..(256 << p) - 1, so the product needs no saturation in
     * either format (clamping anyway keeps out-of-contract levels from
     * wrapping). */
    coef[0] = (int16_t)mpe_clamp32((8 >> dc_precision) * (int32_t)level[0], -2048, 2047);
    if (!mpeg2) {
        for (int i = 1; i < 64; i++) {
            int32_t rec = (2 * (int32_t)level[i] * qscale * matrix[i]) / 16;
            coef[i] = (int16_t)mpe_mpeg1_oddify_clamp(rec);
        }
        return;
    }
    /* §7.4.2.3: F''[v][u] = (2 QF[v][u] * W * quantiser_scale) / 32 for
     * intra AC, with quantiser_scale = 2 * qscale (q_scale_type 0);
     * §7.4.3 saturation; §7.4.4 mismatch control over all 64 including
     * the DC. */
    const int32_t qs = 2 * (int32_t)qscale;
    for (int i = 1; i < 64; i++) {
        int32_t rec = (2 * (int32_t)level[i] * matrix[i] * qs) / 32;
        coef[i] = (int16_t)mpe_clamp32(rec, -2048, 2047);
    }
    mpe_mpeg2_mismatch(coef);
}

void mpe_dequant_inter(int16_t coef[64], const int16_t level[64], int qscale,
                       const uint8_t matrix[64], int mpeg2)
{
    if (!mpeg2) {
        /* 11172-2 §2.4.4.2: ((2 level + Sign(level)) * qscale * W) / 16,
         * then oddification and saturation; level 0 gives 0. */
        for (int i = 0; i < 64; i++) {
            int32_t l = level[i];
            int32_t rec = ((2 * l + mpe_sign32(l)) * qscale * matrix[i]) / 16;
            coef[i] = (int16_t)(l == 0 ? 0 : mpe_mpeg1_oddify_clamp(rec));
        }
        return;
    }
    /* 13818-2 §7.4.2.3 with k = Sign(QF): ((2 QF + k) * W * quantiser_scale)
     * / 32, §7.4.3 saturation, §7.4.4 mismatch control. */
    const int32_t qs = 2 * (int32_t)qscale;
    for (int i = 0; i < 64; i++) {
        int32_t l = level[i];
        int32_t rec = ((2 * l + mpe_sign32(l)) * matrix[i] * qs) / 32;
        coef[i] = (int16_t)mpe_clamp32(rec, -2048, 2047);
    }
    mpe_mpeg2_mismatch(coef);
}

void mpe_quantizer_init(MpeQuantizer *q, int qscale, const uint8_t intra_matrix[64],
                        const uint8_t inter_matrix[64], int max_level)
{
    q->qscale = qscale;
    q->max_level = max_level;
    q->intra_matrix = intra_matrix;
    q->inter_matrix = inter_matrix;
    q->inter_wmin = 255;
    for (int i = 0; i < 64; i++) {
        q->inter_wmin = inter_matrix[i] < q->inter_wmin ? inter_matrix[i] : q->inter_wmin;
        uint64_t qwi = (uint64_t)qscale * intra_matrix[i], qwn = (uint64_t)qscale * inter_matrix[i];
        q->intra_qw[i] = (uint32_t)qwi;
        q->inter_qw[i] = (uint32_t)qwn;
        q->intra_recip[i] = (((uint64_t)1 << 32) + 2 * qwi - 1) / (2 * qwi);
        q->inter_recip[i] = (((uint64_t)1 << 32) + qwn - 1) / qwn;
        q->intra_rcp[i] = 1.0f / (float)(2 * qwi);
        q->inter_rcp[i] = 1.0f / (float)qwn;
    }
}

int mpe_quant_intra_ref(int16_t level[64], const int16_t coef[64], const MpeQuantizer *q)
{
    return mpe_quant_intra(level, coef, q->qscale, q->intra_matrix, q->max_level);
}

int mpe_quant_inter_ref(int16_t level[64], const int16_t coef[64], const MpeQuantizer *q)
{
    return mpe_quant_inter(level, coef, q->qscale, q->inter_matrix, q->max_level);
}

/* mpe_quant_intra with |QF| = (16|F| + qW) / (2qW) as a multiply-shift. */
int mpe_quant_intra_fast(int16_t level[64], const int16_t coef[64], const MpeQuantizer *q)
{
    const uint32_t max = (uint32_t)q->max_level;
    int32_t dc = coef[0] < 0 ? 0 : coef[0];
    int nz = 0;

    level[0] = (int16_t)mpe_clamp32((dc + 4) / 8, 0, 255);
    for (int i = 1; i < 64; i++) {
        int32_t f = coef[i];
        uint32_t n = 16 * (uint32_t)(f < 0 ? -f : f) + q->intra_qw[i];
        uint32_t mag = (uint32_t)((n * q->intra_recip[i]) >> 32);
        mag = mag > max ? max : mag;
        level[i] = (int16_t)(f < 0 ? -(int32_t)mag : (int32_t)mag);
        nz += mag != 0;
    }
    return nz;
}

/* mpe_quant_inter with |QF| = 8|F| / (qW) as a multiply-shift. */
int mpe_quant_inter_fast(int16_t level[64], const int16_t coef[64], const MpeQuantizer *q)
{
    const uint32_t max = (uint32_t)q->max_level;
    int nz = 0;

    for (int i = 0; i < 64; i++) {
        int32_t f = coef[i];
        uint32_t n = 8 * (uint32_t)(f < 0 ? -f : f);
        uint32_t mag = (uint32_t)((n * q->inter_recip[i]) >> 32);
        mag = mag > max ? max : mag;
        level[i] = (int16_t)(f < 0 ? -(int32_t)mag : (int32_t)mag);
        nz += mag != 0;
    }
    return nz;
}

#ifdef MPE_ARCH_X86

#define AVX2 __attribute__((target("avx2")))

/* floor(y / d) = k in eight int32 lanes, 0 <= y < 2^17, 1 <= d < 2^16:
 * p = y * rcp in float (rcp within 2^-24 of 1 / d) is within (y / d) 2^-23
 * of y / d.  That is less than 1 / d (y < 2^23), the least gap from a
 * quotient that is not a whole number to the whole numbers around it, so
 * truncated p is k, except where y / d is k exactly and p falls below it:
 * then k - 1, which the exact product (m + 1) d <= y puts right. */
AVX2 static inline __m256i div_floor8(__m256i y, __m256i d, const float *rcp)
{
    const __m256i m = _mm256_cvttps_epi32(_mm256_mul_ps(_mm256_cvtepi32_ps(y), _mm256_loadu_ps(rcp)));
    const __m256i m1d = _mm256_mullo_epi32(_mm256_add_epi32(m, _mm256_set1_epi32(1)), d);
    return _mm256_sub_epi32(m, _mm256_cmpgt_epi32(_mm256_add_epi32(y, _mm256_set1_epi32(1)), m1d));
}

/* Sixteen magnitudes (a: coefficients 0-7, b: 8-15) clamped to max as
 * int16 in order, signed like f; *zero_bits gets movemask's two bits per
 * zero level. */
AVX2 static inline __m256i levels16(__m256i a, __m256i b, __m256i max, __m256i f, unsigned *zero_bits)
{
    const __m256i mag = _mm256_permute4x64_epi64(
        _mm256_packs_epi32(_mm256_min_epi32(a, max), _mm256_min_epi32(b, max)), 0xD8);
    *zero_bits = (unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi16(mag, _mm256_setzero_si256()));
    return _mm256_sign_epi16(mag, f);
}

/* mpe_quant_intra_fast sixteen coefficients a step: |QF| = floor(y / d),
 * y = 16|F| + qW, d = 2qW. */
AVX2 int mpe_quant_intra_avx2(int16_t level[64], const int16_t coef[64], const MpeQuantizer *q)
{
    const __m256i max = _mm256_set1_epi32(q->max_level);
    int zeros = 0, ac0 = 0;

    for (int i = 0; i < 64; i += 16) {
        const __m256i f = _mm256_loadu_si256((const __m256i *)(coef + i));
        const __m256i a16 = _mm256_slli_epi16(_mm256_abs_epi16(f), 4);   /* 16|F| <= 32768: unsigned */
        const __m256i qw0 = _mm256_loadu_si256((const __m256i *)(q->intra_qw + i));
        const __m256i qw1 = _mm256_loadu_si256((const __m256i *)(q->intra_qw + i + 8));
        const __m256i y0 = _mm256_add_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(a16)), qw0);
        const __m256i y1 = _mm256_add_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(a16, 1)), qw1);
        unsigned zero_bits;
        const __m256i l = levels16(div_floor8(y0, _mm256_add_epi32(qw0, qw0), q->intra_rcp + i),
                                   div_floor8(y1, _mm256_add_epi32(qw1, qw1), q->intra_rcp + i + 8), max,
                                   f, &zero_bits);
        _mm256_storeu_si256((__m256i *)(level + i), l);
        zeros += __builtin_popcount(zero_bits) / 2;
        if (i == 0)
            ac0 = !(zero_bits & 3);   /* position 0 is the DC, not counted */
    }
    const int32_t dc = coef[0] < 0 ? 0 : coef[0];
    level[0] = (int16_t)mpe_clamp32((dc + 4) / 8, 0, 255);
    return 64 - zeros - ac0;
}

/* x / 2^s truncated towards zero, as C's division, in int32 lanes. */
AVX2 static inline __m256i div_pow2(__m256i x, int s)
{
    const __m256i bias = _mm256_and_si256(_mm256_srai_epi32(x, 31), _mm256_set1_epi32((1 << s) - 1));
    return _mm256_sra_epi32(_mm256_add_epi32(x, bias), _mm_cvtsi32_si128(s));
}

AVX2 static inline __m256i clamp_coef(__m256i x)
{
    return _mm256_min_epi32(_mm256_max_epi32(x, _mm256_set1_epi32(-2048)), _mm256_set1_epi32(2047));
}

/* mpe_mpeg1_oddify_clamp: an even non-zero value one step towards zero */
AVX2 static inline __m256i oddify_clamp(__m256i rec)
{
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i even = _mm256_cmpeq_epi32(_mm256_and_si256(rec, one), _mm256_setzero_si256());
    return clamp_coef(_mm256_sub_epi32(rec, _mm256_and_si256(_mm256_sign_epi32(one, rec), even)));
}

/* Eight int32 coefficients (already inside [-2048, 2047]) stored as int16. */
AVX2 static inline void store_coef8(int16_t *dst, __m256i v)
{
    _mm_storeu_si128((__m128i *)dst,
                     _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)));
}

/* mpe_mpeg2_mismatch from the sum of all 64 coefficients in lanes. */
AVX2 static inline void mismatch_from_sum(int16_t coef[64], __m256i sum)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    if (!(_mm_cvtsi128_si32(s) & 1))
        coef[63] = (int16_t)(coef[63] & 1 ? coef[63] - 1 : coef[63] + 1);
}

/* mpe_dequant_intra_dc eight coefficients at a time: the same int32
 * products (no overflow for any int16 level and quantiser up to 56), the
 * same truncating division, oddification, saturation and mismatch control. */
AVX2 void mpe_dequant_intra_avx2(int16_t coef[64], const int16_t level[64], int qscale,
                                 const uint8_t matrix[64], int mpeg2, int dc_precision)
{
    /* MPEG-1 (2 l q W) / 16; MPEG-2 (2 l W 2q) / 32 */
    const __m256i mul = _mm256_set1_epi32((mpeg2 ? 4 : 2) * qscale);
    const int shift = mpeg2 ? 5 : 4;
    const int32_t dc = mpe_clamp32((8 >> dc_precision) * (int32_t)level[0], -2048, 2047);
    __m256i sum = _mm256_setzero_si256();

    for (int i = 0; i < 64; i += 8) {
        const __m256i l = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(level + i)));
        const __m256i w = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(matrix + i)));
        const __m256i rec = div_pow2(_mm256_mullo_epi32(_mm256_mullo_epi32(l, w), mul), shift);
        __m256i c = mpeg2 ? clamp_coef(rec) : oddify_clamp(rec);
        if (i == 0)
            c = _mm256_blend_epi32(c, _mm256_set1_epi32(dc), 1);
        sum = _mm256_add_epi32(sum, c);
        store_coef8(coef + i, c);
    }
    if (mpeg2)
        mismatch_from_sum(coef, sum);
}

/* mpe_dequant_inter eight coefficients at a time (as the intra one). */
AVX2 void mpe_dequant_inter_avx2(int16_t coef[64], const int16_t level[64], int qscale,
                                 const uint8_t matrix[64], int mpeg2)
{
    /* MPEG-1 ((2 l + Sign l) q W) / 16; MPEG-2 ((2 l + Sign l) W 2q) / 32 */
    const __m256i mul = _mm256_set1_epi32((mpeg2 ? 2 : 1) * qscale), one = _mm256_set1_epi32(1);
    const int shift = mpeg2 ? 5 : 4;
    __m256i sum = _mm256_setzero_si256();

    for (int i = 0; i < 64; i += 8) {
        const __m256i l = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(level + i)));
        const __m256i w = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(matrix + i)));
        const __m256i t = _mm256_add_epi32(_mm256_add_epi32(l, l), _mm256_sign_epi32(one, l));
        const __m256i rec = div_pow2(_mm256_mullo_epi32(_mm256_mullo_epi32(t, w), mul), shift);
        const __m256i c = mpeg2 ? clamp_coef(rec) : oddify_clamp(rec);
        sum = _mm256_add_epi32(sum, c);
        store_coef8(coef + i, c);
    }
    if (mpeg2)
        mismatch_from_sum(coef, sum);
}

/* mpe_quant_inter_fast sixteen coefficients a step: |QF| = floor(8|F| / qW). */
AVX2 int mpe_quant_inter_avx2(int16_t level[64], const int16_t coef[64], const MpeQuantizer *q)
{
    const __m256i max = _mm256_set1_epi32(q->max_level);
    int zeros = 0;

    for (int i = 0; i < 64; i += 16) {
        const __m256i f = _mm256_loadu_si256((const __m256i *)(coef + i));
        const __m256i n16 = _mm256_slli_epi16(_mm256_abs_epi16(f), 3);   /* 8|F| <= 16384 */
        unsigned zero_bits;
        const __m256i l = levels16(
            div_floor8(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(n16)),
                       _mm256_loadu_si256((const __m256i *)(q->inter_qw + i)), q->inter_rcp + i),
            div_floor8(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(n16, 1)),
                       _mm256_loadu_si256((const __m256i *)(q->inter_qw + i + 8)), q->inter_rcp + i + 8),
            max, f, &zero_bits);
        _mm256_storeu_si256((__m256i *)(level + i), l);
        zeros += __builtin_popcount(zero_bits) / 2;
    }
    return 64 - zeros;
}

#endif
