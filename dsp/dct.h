/* dct.h — 8x8 forward and inverse DCT: the C reference and faster variants
 * with identical output (dsp/dsp.h's table picks one).
 *
 * Both work in place on a row-major 8x8 block of int16.
 *  fdct: input samples or residuals in [-256, 255]; output the coefficients
 *        of ISO/IEC 13818-2 Annex A's definition, F(u,v) = 1/4 C(u) C(v)
 *        sum f(x,y) cos.. cos.., rounded to nearest and clamped to
 *        [-2048, 2047]; F(0,0) of a flat block of value v is 8v.
 *  idct: input coefficients in [-2048, 2047]; output rounded to nearest and
 *        clamped to [-256, 255]; meets IEEE 1180-1990 accuracy.
 * Integer arithmetic only, so results are identical on every machine. */
#ifndef MPE_DCT_H
#define MPE_DCT_H

#include <stdint.h>
#include <string.h>

typedef void (*MpeDctFn)(int16_t block[64]);

/* Clear a block.  A memset of its 128 bytes is a rep stos at gcc -O2 (so is
 * a loop of zero stores), whose start-up costs more than the stores: the
 * copy of a constant block is eight vector moves (clang: zero stores). */
static inline void mpe_block_zero(int16_t block[64])
{
    static const int16_t zero[64];
    memcpy(block, zero, sizeof(zero));
}

/* The C reference (dct.c). */
void mpe_fdct_c(int16_t block[64]);
void mpe_idct_c(int16_t block[64]);

/* Faster variants (dct_fast.c) whose output is IDENTICAL to the reference:
 * _fast_c for any int16 input; _avx2 for inputs in the documented ranges
 * above, on CPUs with AVX2 (x86 builds only). */
void mpe_fdct_fast_c(int16_t block[64]);
void mpe_idct_fast_c(int16_t block[64]);
void mpe_fdct_avx2(int16_t block[64]);
void mpe_idct_avx2(int16_t block[64]);
/* The AVX2 first passes' rounding, exposed for test_dct: out = the
 * reference's round_shift(hi * 2^16 + lo, 16) lane by lane, exactly (the
 * sums are formed as int16 x int16 halves of the Q30 table, see
 * dct_fast.c), for |hi| < 2^30 and any lo.  AVX2 CPUs only. */
void mpe_dct_round16_split_avx2(const int32_t hi[8], const int32_t lo[8], int32_t out[8]);

/* Shortcuts with the reference's exact output for two kinds of block the
 * intra path meets often (a flat background: a quarter of the still solar
 * picture's blocks; a block whose AC levels all quantise to zero: more
 * than a third), without the transform.
 *
 * mpe_fdct_flat: when all 64 samples of block are equal (any value in
 * [-256, 255]), writes mpe_fdct_c's output (F(0,0) and 63 zeros: every row
 * of T but the first sums to exactly 0) and returns 1; else returns 0 and
 * leaves block as it was.
 *
 * mpe_idct_sparse: when every coefficient but F(0,0) and F(7,7) is zero and
 * |F(7,7)| <= 1 (a DC-only block after MPEG-2 mismatch control, which sets
 * F(7,7) to 1 when the DC is even) and all 64 outputs then round to one
 * value, writes mpe_idct_c's output (that value, 64 times) and returns 1;
 * else returns 0 and leaves block as it was.  The reference sums
 * m0 T(0,y) + F77 r(T(7,x)) T(7,y) exactly; the second term is at most
 * K = r(|T(7,3)|) |T(7,3)| in size (row 7's largest entry), and rounding is monotonic, so where
 * A - K and A + K round alike every output does. */
int mpe_fdct_flat(int16_t block[64]);
int mpe_idct_sparse(int16_t block[64]);

/* A cheap certificate for the forward transform's largest coefficient
 * (the slice coder's test for a residual that quantises to nothing, without
 * the exact transform).  For a block of residuals in [-256, 255], returns
 * max |R(u,v)| over the 64 outputs of the same separable transform done in
 * 16-bit arithmetic: the matrix mpe_dct_tab rounded to Q14
 * (mpe_dct_tab_q14), the first (vertical) pass rounded to Q4 (floor of
 * x + 1/2), the second exact; R is in Q18.  Each R / 2^18 lies within
 *     (MPE_FDCT_BOUND_ERR + MPE_FDCT_BOUND_ERR_PER_ABS * sum |r|) / 2^18
 * of the exact F(u,v) (the entries are within 2^-15 of the true matrix, the
 * Q4 rounding adds at most 2^-5 per intermediate, times the largest row
 * sum of |T|, 2.83; 2^-15 (0.49 + 0.49) sum|r| for the entries' error on
 * the samples and on the intermediates), and mpe_fdct_*'s output within
 * 1/2 + 1.4e-4 of the exact F. */
#define MPE_FDCT_BOUND_ERR 23300
#define MPE_FDCT_BOUND_ERR_PER_ABS 8
uint32_t mpe_fdct_bound_c(const int16_t block[64]);
uint32_t mpe_fdct_bound_avx2(const int16_t block[64]);
typedef uint32_t (*MpeFdctBoundFn)(const int16_t block[64]);
extern const int16_t mpe_dct_tab_q14[8][8];

/* T[k][n] = round(2^30 * C(k)/2 * cos((2n+1) k pi / 16)), shared by every variant. */
extern const int32_t mpe_dct_tab[8][8];

#endif
