/* dct.c — C reference 8x8 forward and inverse DCT (ISO/IEC 13818-2 Annex A,
 * ISO/IEC 11172-2 Annex A), integer arithmetic only.
 *
 * Both transforms are the separable matrix product with the orthonormal
 * 8-point DCT-II matrix
 *     T[k][n] = C(k)/2 * cos((2n+1) k pi / 16),  C(0) = 1/sqrt(2), C(k>0) = 1,
 * so that, with f the row-major block f[y][x] and F[v][u] its coefficients,
 *     fdct: F = T f T'    i.e. F(u,v) = 1/4 C(u)C(v) sum f(x,y) cos.. cos..
 *     idct: f = T' F T    (Annex A's inverse definition).
 *
 * Precision.  T is held in Q30 (relative error < 2^-31).  Each pass sums
 * eight int32 x Q30 products exactly in int64 and rounds once: the first
 * pass to an int32 intermediate with MPE_DCT_MID_BITS = 14 fractional bits,
 * the second pass to an integer.  The intermediate rounding contributes at
 * most 2^-15 * 2.83 = 8.7e-5 (2.83 = max row sum of |T|) to each output and
 * the table's rounding (2^-31 per entry) at most 4.5e-5 even for full-range
 * IDCT input, so an output differs from the exactly rounded ideal only when
 * the ideal lies within 1.4e-4 of a half-integer.  That keeps the IDCT far
 * inside IEEE Std 1180-1990 (see tests/unit/test_dct.c for the figures) and
 * as close as practical to any other compliant IDCT (a decoder's), which is
 * what limits encoder/decoder drift.
 *
 * Exact ties (an ideal value of exactly n + 1/2, e.g. F(0,0) = sum/8 when
 * the sum is 4 mod 8, or a DC-only IDCT input of 8n + 4) are broken by the
 * table and intermediate rounding, not by a rule: deterministic, but either
 * way.  Both choices err by exactly 1/2.  A tie needs the irrational parts
 * of the sum to cancel; the commonest such IDCT inputs, blocks with only
 * F(0,0), F(0,4), F(4,0), F(4,4) non-zero (every output is S/8, S having
 * the parity of the coefficient sum), are what MPEG-2 mismatch control
 * (13818-2 §7.4.4: the sum is made odd) rules out, and MPEG-1 oddification
 * (11172-2 §2.4.4) rules out DC-only ties (non-intra DC odd, intra DC 8n).
 *
 * Overflow (for ANY int16 input, not just the documented ranges):
 *   pass 1 |sum| <= 32768 * 2.8285 * 2^30          < 2^47   (int64)
 *   intermediate <= 32768 * 2.8285 * 2^14 + 1      < 1.52e9 < 2^31 (int32)
 *   pass 2 |sum| <= 1.52e9 * 2.8285 * 2^30         < 4.7e18 < 2^63 (int64)
 * so there is no undefined behaviour whatever the caller passes.
 *
 * Rounding is to nearest with ties away from zero, done with shifts of
 * non-negative values only (right-shifting a negative value is
 * implementation-defined in C11 §6.5.7), so the results are bit-identical on
 * every conforming compiler and the transforms are exactly odd-symmetric:
 * T(-X) = -T(X).  The IEEE 1180 reference rounds the same way. */
#include "dsp/dct.h"

#include <stdint.h>

#define MPE_DCT_TAB_BITS 30 /* fractional bits of mpe_dct_tab */
#define MPE_DCT_MID_BITS 14 /* fractional bits kept between the passes */

/* mpe_dct_tab[k][n] = round(2^30 * C(k)/2 * cos((2n+1) k pi / 16)).
 * Computed offline in double precision with Python:
 *   c = (1/math.sqrt(2) if k == 0 else 1) / 2 * math.cos((2*n+1)*k*math.pi/16)
 *   round(c * 2**30)
 * (every entry's fractional part is more than 1e-3 away from .5, so double
 * precision rounds each one correctly; checked with mpmath). */
const int32_t mpe_dct_tab[8][8] = {
    {  379625062,  379625062,  379625062,  379625062,
       379625062,  379625062,  379625062,  379625062 },
    {  526555088,  446391849,  298269498,  104738319,
      -104738319, -298269498, -446391849, -526555088 },
    {  496004047,  205451603, -205451603, -496004047,
      -496004047, -205451603,  205451603,  496004047 },
    {  446391849, -104738319, -526555088, -298269498,
       298269498,  526555088,  104738319, -446391849 },
    {  379625062, -379625062, -379625062,  379625062,
       379625062, -379625062, -379625062,  379625062 },
    {  298269498, -526555088,  104738319,  446391849,
      -446391849, -104738319,  526555088, -298269498 },
    {  205451603, -496004047,  496004047, -205451603,
      -205451603,  496004047, -496004047,  205451603 },
    {  104738319, -298269498,  446391849, -526555088,
       526555088, -446391849,  298269498, -104738319 },
};

/* x / 2^shift rounded to nearest, ties away from zero; only non-negative
 * values are shifted (see the file comment). */
static inline int64_t mpe_dct_round_shift(int64_t x, int shift)
{
    const int64_t half = (int64_t)1 << (shift - 1);
    return x >= 0 ? (x + half) >> shift : -((-x + half) >> shift);
}

static inline int16_t mpe_dct_clamp16(int64_t x, int lo, int hi)
{
    return (int16_t)(x < lo ? lo : x > hi ? hi : x);
}

/* Annex A forward DCT: F = T f T'. */
void mpe_fdct_c(int16_t block[64])
{
    int32_t mid[64]; /* mid[y*8+u] = sum_x f[y][x] T[u][x], Q14 */

    /* Pass 1: horizontal transform of each row. */
    for (int y = 0; y < 8; y++) {
        const int16_t *row = block + 8 * y;
        for (int u = 0; u < 8; u++) {
            int64_t sum = 0;
            for (int x = 0; x < 8; x++)
                sum += (int64_t)row[x] * mpe_dct_tab[u][x];
            mid[8 * y + u] = (int32_t)mpe_dct_round_shift(
                sum, MPE_DCT_TAB_BITS - MPE_DCT_MID_BITS);
        }
    }
    /* Pass 2: vertical transform of each column; one rounding to integer,
     * then the [-2048, 2047] range of 13818-2 §7.4 / Annex A. */
    for (int u = 0; u < 8; u++) {
        for (int v = 0; v < 8; v++) {
            int64_t sum = 0;
            for (int y = 0; y < 8; y++)
                sum += (int64_t)mid[8 * y + u] * mpe_dct_tab[v][y];
            block[8 * v + u] = mpe_dct_clamp16(
                mpe_dct_round_shift(sum, MPE_DCT_TAB_BITS + MPE_DCT_MID_BITS),
                -2048, 2047);
        }
    }
}

/* Annex A inverse DCT: f = T' F T. */
void mpe_idct_c(int16_t block[64])
{
    int32_t mid[64]; /* mid[v*8+x] = sum_u F[v][u] T[u][x], Q14 */

    /* Pass 1: horizontal inverse transform of each coefficient row. */
    for (int v = 0; v < 8; v++) {
        const int16_t *row = block + 8 * v;
        for (int x = 0; x < 8; x++) {
            int64_t sum = 0;
            for (int u = 0; u < 8; u++)
                sum += (int64_t)row[u] * mpe_dct_tab[u][x];
            mid[8 * v + x] = (int32_t)mpe_dct_round_shift(
                sum, MPE_DCT_TAB_BITS - MPE_DCT_MID_BITS);
        }
    }
    /* Pass 2: vertical inverse transform; one rounding to integer, then the
     * 9-bit output range [-256, 255] of Annex A and IEEE 1180. */
    for (int x = 0; x < 8; x++) {
        for (int y = 0; y < 8; y++) {
            int64_t sum = 0;
            for (int v = 0; v < 8; v++)
                sum += (int64_t)mid[8 * v + x] * mpe_dct_tab[v][y];
            block[8 * y + x] = mpe_dct_clamp16(
                mpe_dct_round_shift(sum, MPE_DCT_TAB_BITS + MPE_DCT_MID_BITS),
                -256, 255);
        }
    }
}
