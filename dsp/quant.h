/* quant.h — quantisation, inverse quantisation and zigzag scan of MPEG-1
 * (ISO/IEC 11172-2 §2.4.4) and MPEG-2 (ISO/IEC 13818-2 §7.4).
 *
 * All blocks are row-major (raster) int16[64].  `qscale` is the quantiser
 * scale in MPEG-1 units: 1..31, where for MPEG-2 it is quantiser_scale_code
 * with q_scale_type 0 (linear, quantiser_scale = 2 * qscale), which gives
 * the same reconstruction step, so one encoder decision serves both
 * formats; up to 56 under MPEG-2's non-linear scale (q_scale_type 1, whose
 * quantiser_scale reaches 112), which the rate control uses.  Matrices are
 * in raster order. */
#ifndef MPE_QUANT_H
#define MPE_QUANT_H

#include <stdint.h>

#include "dsp/dct.h"

/* mpe_zigzag[i] = raster index of the i-th coefficient in zigzag order. */
extern const uint8_t mpe_zigzag[64];
/* MPEG-2 alternate_scan 1 (13818-2 Figure 7-3), in the same form. */
extern const uint8_t mpe_alternate_scan[64];
/* Their inverses: mpe_zigzag_inv[mpe_zigzag[i]] == i (test_quant checks it). */
extern const uint8_t mpe_zigzag_inv[64];
extern const uint8_t mpe_alternate_scan_inv[64];
extern const uint8_t mpe_default_intra_matrix[64];  /* raster order */
extern const uint8_t mpe_default_inter_matrix[64];  /* all 16 */

/* Intra block: level[0] = intra DC level, F(0,0)/8 rounded (intra DC
 * precision 8 bits, so 0..255); AC levels rounded to nearest,
 * QF = round(8 F / (qscale W)), clamped to [-max_level, max_level]
 * (255 for MPEG-1, 2047 for MPEG-2).  Returns the number of non-zero AC
 * levels (DC excluded).  Matrix entries must be 1..255 (the standard forbids
 * 0); the DC rule is that of intra_dc_precision 0 (8 bits). */
int mpe_quant_intra(int16_t level[64], const int16_t coef[64], int qscale,
                    const uint8_t matrix[64], int max_level);

/* Non-intra block: QF = trunc(8 |F| / (qscale W)) with sign, clamped to
 * [-max_level, max_level] (a dead zone, as the reconstruction adds half a
 * step).  Returns the number of non-zero levels. */
int mpe_quant_inter(int16_t level[64], const int16_t coef[64], int qscale,
                    const uint8_t matrix[64], int max_level);

/* Does a residual block certainly quantise to all-zero non-intra levels
 * (mpe_quant_inter after the forward DCT of dct.h), so that the transform
 * can be skipped?  From its sum of |r|, sum of r and sum of r^2 (values in
 * [-256, 255]) and qw = qscale * the inter matrix's smallest entry; a
 * level is zero when 8 |F| < qscale W.  Two bounds, either enough:
 *  - every coefficient obeys |F| <= sum|r| / 4 (+ its rounding), so
 *    2 sum|r| + 8 <= qw;
 *  - the transform is orthonormal (Parseval): the AC coefficients' squares
 *    sum to E / 64 with E = 64 sum r^2 - (sum r)^2, the DC is sum r / 8, and
 *    dct.h's output is within 1/2 + 1.4e-4 of the exact value, so |F| <
 *    exact + 1; zero when sqrt(E) + 8 <= qw and |sum r| + 8 <= qw.
 * The second is the tighter one on noise-like residuals (about half of the
 * first's bound), the first on sparse ones. */
static inline int mpe_quant_inter_all_zero(uint32_t sum_abs, int32_t sum, uint32_t sum_sq, int qw)
{
    if (2 * (int64_t)sum_abs + 8 <= qw)
        return 1;
    if (qw <= 8 || (sum < 0 ? -(int64_t)sum : sum) + 8 > qw)
        return 0;
    const int64_t e = 64 * (int64_t)sum_sq - (int64_t)sum * sum;
    return e <= (int64_t)(qw - 8) * (qw - 8);
}

/* The same question answered with mpe_fdct_bound's certificate (dct.h):
 * every level is zero when every |F| <= K = ceil(qw / 8) - 1, and
 * |F| < bound / 2^18 + its error + 1/2 + 1.4e-4. */
static inline int mpe_quant_inter_zero_by_bound(uint32_t bound, uint32_t sum_abs, int qw)
{
    const int64_t k = (qw + 7) / 8 - 1;
    return (int64_t)bound + MPE_FDCT_BOUND_ERR + MPE_FDCT_BOUND_ERR_PER_ABS * (int64_t)sum_abs <=
           k * (1 << 18) + 131019;   /* (K + 0.4998) 2^18 */
}

/* Inverse quantisation exactly as a decoder does it, including saturation to
 * [-2048, 2047] and mismatch control: MPEG-1 makes each non-zero coefficient
 * odd (towards zero) before saturation, so -2048 can remain; MPEG-2 toggles the LSB of F(7,7) when the sum of all
 * coefficients is even.  Intra: coef[0] = 8 * level[0]. */
void mpe_dequant_intra(int16_t coef[64], const int16_t level[64], int qscale,
                       const uint8_t matrix[64], int mpeg2);
void mpe_dequant_inter(int16_t coef[64], const int16_t level[64], int qscale,
                       const uint8_t matrix[64], int mpeg2);

/* The inverse quantisers as DSP entries (dsp.h): mpe_dequant_intra_dc and
 * mpe_dequant_inter are the C references; the AVX2 ones give identical
 * output for any int16 levels and qscale 1..56. */
typedef void (*MpeDequantIntraFn)(int16_t coef[64], const int16_t level[64], int qscale,
                                  const uint8_t matrix[64], int mpeg2, int dc_precision);
typedef void (*MpeDequantInterFn)(int16_t coef[64], const int16_t level[64], int qscale,
                                  const uint8_t matrix[64], int mpeg2);
void mpe_dequant_intra_avx2(int16_t coef[64], const int16_t level[64], int qscale,
                            const uint8_t matrix[64], int mpeg2, int dc_precision);
void mpe_dequant_inter_avx2(int16_t coef[64], const int16_t level[64], int qscale,
                            const uint8_t matrix[64], int mpeg2);

/* MPEG-2 intra_dc_precision p (0..3: 8..11 bits, 13818-2 §7.4.1): the DC
 * level is F(0,0) / intra_dc_mult rounded, intra_dc_mult = 8 >> p, in
 * 0..(256 << p) - 1.  The quantisers above set the 8-bit level (p = 0);
 * with p > 0 the caller replaces level[0] by this. */
int mpe_quant_intra_dc(int f00, int dc_precision);
/* mpe_dequant_intra with intra_dc_precision p: coef[0] = (8 >> p) level[0]
 * (before mismatch control, whose parity sum includes it). */
void mpe_dequant_intra_dc(int16_t coef[64], const int16_t level[64], int qscale,
                          const uint8_t matrix[64], int mpeg2, int dc_precision);

/* Everything the quantisers need for one (qscale, matrices) pair, computed
 * once per picture instead of per block: the fast quantisers replace each
 * division by a multiply with a rounded-up reciprocal.  With m = ceil(2^32/d),
 * (n * m) >> 32 == n / d exactly whenever n * d < 2^32 (the error n (m -
 * 2^32/d) / 2^32 < n / 2^32 < 1/d cannot carry past the next multiple);
 * here n < 2^16 and d < 2^14, so that always holds for coefficients in
 * [-2048, 2047], the forward DCT's output range. */
typedef struct MpeQuantizer {
    int qscale, max_level;
    const uint8_t *intra_matrix, *inter_matrix;
    uint32_t intra_qw[64];     /* qscale * W_intra */
    uint64_t intra_recip[64];  /* ceil(2^32 / (2 qscale W_intra)) */
    uint64_t inter_recip[64];  /* ceil(2^32 / (qscale W_inter)) */
    uint32_t inter_qw[64];     /* qscale * W_inter */
    float intra_rcp[64];       /* about 1 / (2 qscale W_intra): the AVX2 quantisers' estimate */
    float inter_rcp[64];       /* about 1 / (qscale W_inter) */
    int inter_wmin;            /* the smallest W_inter (mpe_quant_inter_all_zero's) */
} MpeQuantizer;

void mpe_quantizer_init(MpeQuantizer *q, int qscale, const uint8_t intra_matrix[64],
                        const uint8_t inter_matrix[64], int max_level);

typedef int (*MpeQuantFn)(int16_t level[64], const int16_t coef[64], const MpeQuantizer *q);
/* The references above, through the quantiser context. */
int mpe_quant_intra_ref(int16_t level[64], const int16_t coef[64], const MpeQuantizer *q);
int mpe_quant_inter_ref(int16_t level[64], const int16_t coef[64], const MpeQuantizer *q);
/* Reciprocal versions: identical output for coef in [-2048, 2047]. */
int mpe_quant_intra_fast(int16_t level[64], const int16_t coef[64], const MpeQuantizer *q);
int mpe_quant_inter_fast(int16_t level[64], const int16_t coef[64], const MpeQuantizer *q);
/* The same, x86 AVX2: each quotient estimated in float (intra_rcp,
 * inter_rcp) and made exact by one integer correction (an estimate one
 * short where the quotient is whole), sixteen coefficients a step. */
int mpe_quant_intra_avx2(int16_t level[64], const int16_t coef[64], const MpeQuantizer *q);
int mpe_quant_inter_avx2(int16_t level[64], const int16_t coef[64], const MpeQuantizer *q);

#endif
