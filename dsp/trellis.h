/* trellis.h — rate-distortion optimised quantisation of one 8x8 block
 * (trellis quantisation) over the real MPEG-1/MPEG-2 coefficient VLCs.
 *
 * The plain quantisers (quant.h) pick each level on its own, nearest to the
 * coefficient.  The trellis picks the levels of a whole block together so as
 * to minimise
 *     J = D * MPE_TRELLIS_ONE + lambda * R
 * where D is the squared error between the coefficients and their
 * reconstruction (the DCT is orthonormal, so this is the pixel-domain squared
 * error before the IDCT's rounding), and R is the bits of the block's
 * run/level codes exactly as bitstream/mpeg12.c writes them: Table B.14 or
 * B.15 codes plus sign, the non-intra block's '1s' short code for run 0
 * level 1 as the first coefficient, escapes (MPEG-1 20 bits, or 28 for
 * |level| > 127; MPEG-2 24 bits) and end_of_block.  The intra DC is coded
 * apart (DC prediction): mpe_trellis_quant leaves it as the plain quantiser
 * set it, and mpe_trellis_intra_dc chooses it against its predictor.
 *
 * The reconstruction in D is each coefficient's decoder-exact inverse
 * quantisation (truncating division, MPEG-1 oddification, saturation to
 * [-2048, 2047]); MPEG-2's mismatch control, which toggles the LSB of
 * F[7][7] by the parity of the whole block, is left out of D (at most one
 * unit on one coefficient).  Whatever levels the trellis picks, the encoder
 * reconstructs them with mpe_dequant_intra/inter, exactly as a decoder does,
 * so the choice never costs conformance.
 *
 * Candidates.  At scan position i with plain level Lp (magnitude):
 *   Lp >= 1: |level| in {0, Lp, Lp - 1} (Lp - 1 only when >= 1);
 *   Lp == 0: |level| in {0, 1}, 1 only when its reconstruction is closer
 *            to the coefficient than 0 (the non-intra dead zone's upper
 *            part, [0.75, 1) of a step);
 * the sign is the coefficient's.  Over that set the search is exact: a
 * dynamic programme over the positions (a coefficient's code depends only
 * on its own level and the run of zeros before it), not a beam.  Ties keep
 * the earlier-found choice in a fixed order, so the result is a pure
 * function of the inputs. */
#ifndef MPE_TRELLIS_H
#define MPE_TRELLIS_H

#include <stdint.h>

/* Fixed-point unit of lambda: J = D * MPE_TRELLIS_ONE + lambda * bits. */
#define MPE_TRELLIS_ONE 256

typedef struct MpeTrellisParams MpeTrellisParams;
/* The search's set-up (mpe_trellis_candidates below). */
typedef uint64_t (*MpeTrellisCandidatesFn)(const int16_t level[64], const int16_t coef[64],
                                           const MpeTrellisParams *p, int32_t sq[64],
                                           int64_t *sq_sum);

struct MpeTrellisParams {
    int intra;              /* intra block: DC apart, AC from scan position 1, EOB always */
    int mpeg2;              /* MPEG-2 inverse quantisation and 24-bit escapes */
    int table;              /* BS_DCT_TABLE_ZERO or _ONE (intra blocks only) */
    const uint8_t *scan;    /* transmission order (mpe_zigzag or mpe_alternate_scan); NULL: zigzag */
    int qscale;             /* MPEG-1 units, as quant.h */
    const uint8_t *matrix;  /* raster order */
    int max_level;          /* 255 (MPEG-1) or 2047 (MPEG-2) */
    int64_t lambda;         /* per bit, in 1 / MPE_TRELLIS_ONE squared-coefficient units */
    MpeTrellisCandidatesFn candidates;  /* the set-up's variant (dsp.h's trellis_candidates,
                                           all identical); NULL: mpe_trellis_candidates */
};

/* lambda for quantiser qscale (MPEG-1 units) from the constant c in
 * lambda = c * qscale^2 (squared-coefficient units per bit), c given as
 * c_milli / 1000; integer, so every thread computes the same value. */
int64_t mpe_trellis_lambda(int qscale, int c_milli);

/* The intra DC level by the same J: of the nearest level (to f00, the
 * DC coefficient) and one either side, the one of least squared error
 * plus lambda times the bits of dct_dc_size and dct_dc_differential
 * against the predictor pred (ties: nearest).  The DC's step (8 at 8-bit
 * precision: one gray level of the block's mean) is fixed while the AC's
 * grows with the quantiser, so at coarse quantisers a step of DC error
 * costs less than the bits a smaller difference saves (smooth pictures,
 * whose blocks' means differ by a few levels).  make rd's still solar
 * picture, one I picture at q 2..16: -0.8 % BD-rate, q 16 -4.2 % bits for
 * -0.10 dB. */
int mpe_trellis_intra_dc(int f00, int nearest, int pred, int chroma, int dc_precision,
                         int64_t lambda);

/* level (raster) holds the plain quantiser's levels on entry and the
 * trellis's on return; coef (raster) is the forward DCT's output the plain
 * levels were computed from.  Returns the number of non-zero levels (AC only
 * for intra blocks), so 0 means an empty non-intra block.  A non-intra block
 * left empty costs no bits (it is not coded: coded_block_pattern's own
 * change of cost is not modelled); an intra block always has its EOB. */
int mpe_trellis_quant(int16_t level[64], const int16_t coef[64], const MpeTrellisParams *p);

/* The search's set-up, exposed for test_trellis: sq[pos] = coef[pos]^2,
 * *sq_sum their sum, and the mask of the raster positions with a candidate
 * (a non-zero plain level, or level 1 reconstructing closer to the
 * coefficient than 0).  _c is the reference; mpe_trellis_candidates,
 * identical, uses SSE2 compares where the compiler has them, _avx2 (x86
 * builds, CPUs with AVX2) sixteen coefficients a step; both for any int16
 * input. */
uint64_t mpe_trellis_candidates_c(const int16_t level[64], const int16_t coef[64],
                                  const MpeTrellisParams *p, int32_t sq[64], int64_t *sq_sum);
uint64_t mpe_trellis_candidates(const int16_t level[64], const int16_t coef[64],
                                const MpeTrellisParams *p, int32_t sq[64], int64_t *sq_sum);
uint64_t mpe_trellis_candidates_avx2(const int16_t level[64], const int16_t coef[64],
                                     const MpeTrellisParams *p, int32_t sq[64], int64_t *sq_sum);

/* J of the given levels under the same model (for tests and comparisons). */
int64_t mpe_trellis_cost(const int16_t level[64], const int16_t coef[64], const MpeTrellisParams *p);

/* Bits of the block's run/level codes and EOB, DC excluded, as
 * bitstream/mpeg12.c writes them (0 for an empty non-intra block). */
int mpe_trellis_block_bits(const int16_t level[64], const MpeTrellisParams *p);

/* An intra block's mpe_trellis_block_bits in table zero and table one at
 * once (bits[BS_DCT_TABLE_ZERO], bits[BS_DCT_TABLE_ONE]): one pass for
 * --intra-vlc auto's count; p's table is ignored. */
void mpe_trellis_intra_bits_both(const int16_t level[64], const MpeTrellisParams *p, int bits[2]);

/* The same count from the levels already in transmission order (scan[i]
 * the level at scan position i, scan[0] the DC, ignored), visiting only the
 * non-zero ones (bs_nonzero_mask): the slice coder's count per intra block
 * and --intra-vlc auto's first guess.  Identical to
 * mpe_trellis_intra_bits_both (test_trellis checks it). */
void mpe_trellis_intra_bits_both_scan(const int16_t scan[64], int mpeg2, int bits[2]);

/* Decoder-exact reconstruction of one coefficient at raster position pos
 * (AC for intra blocks), before MPEG-2 mismatch control. */
int mpe_trellis_recon(int level, int pos, const MpeTrellisParams *p);

#endif
