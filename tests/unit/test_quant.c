/* test_quant.c — zigzag, default matrices, quantisers and the decoder-exact
 * inverse quantisers of MPEG-1 (11172-2 §2.4.4) and MPEG-2 (13818-2 §7.4).
 *
 * The inverse quantisers are checked against a second implementation
 * written here from the standards' pseudo-code, in their own shape (2-D
 * arrays, Sign(), "& 1" parity, long arithmetic), so a slip in either shows. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dsp/dct.h"
#include "dsp/quant.h"
#include "tests/test.h"

static int rand_range(TestRng *r, int lo, int hi)
{
    return lo + (int)(test_rand(r) % (unsigned)(hi - lo + 1));
}

/* ---- scan and matrices ------------------------------------------------ */

static void t_zigzag_permutation(TestCtx *t)
{
    int seen[64] = { 0 };
    for (int i = 0; i < 64; i++) {
        CHECK(t, mpe_zigzag[i] < 64, "mpe_zigzag[%d] = %d", i, mpe_zigzag[i]);
        if (mpe_zigzag[i] < 64)
            seen[mpe_zigzag[i]]++;
    }
    for (int i = 0; i < 64; i++)
        CHECK(t, seen[i] == 1, "raster %d appears %d times", i, seen[i]);
    for (int i = 0; i < 64; i++)   /* the inverses the slice coder's to_scan uses */
        CHECK(t, mpe_zigzag_inv[mpe_zigzag[i]] == i &&
                     mpe_alternate_scan_inv[mpe_alternate_scan[i]] == i,
              "scan position %d: inverses %d, %d", i, mpe_zigzag_inv[mpe_zigzag[i]],
              mpe_alternate_scan_inv[mpe_alternate_scan[i]]);
}

/* 13818-2 Figure 7-2 (alternate_scan 0), typed from the figure: entry
 * [v][u] is the scan index of the coefficient at row v, column u. */
static const int fig_7_2[8][8] = {
    {  0,  1,  5,  6, 14, 15, 27, 28 },
    {  2,  4,  7, 13, 16, 26, 29, 42 },
    {  3,  8, 12, 17, 25, 30, 41, 43 },
    {  9, 11, 18, 24, 31, 40, 44, 53 },
    { 10, 19, 23, 32, 39, 45, 52, 54 },
    { 20, 22, 33, 38, 46, 51, 55, 60 },
    { 21, 34, 37, 47, 50, 56, 59, 61 },
    { 35, 36, 48, 49, 57, 58, 62, 63 },
};

static void t_zigzag_figure(TestCtx *t)
{
    /* Spot positions: the scan starts horizontally (u=1, v=0), then goes
     * down-left; the anti-diagonals alternate direction. */
    CHECK(t, mpe_zigzag[0] == 0, "[0] = %d", mpe_zigzag[0]);
    CHECK(t, mpe_zigzag[1] == 1, "[1] = %d (u=1,v=0)", mpe_zigzag[1]);
    CHECK(t, mpe_zigzag[2] == 8, "[2] = %d (u=0,v=1)", mpe_zigzag[2]);
    CHECK(t, mpe_zigzag[3] == 16, "[3] = %d (u=0,v=2)", mpe_zigzag[3]);
    CHECK(t, mpe_zigzag[5] == 2, "[5] = %d (u=2,v=0)", mpe_zigzag[5]);
    CHECK(t, mpe_zigzag[35] == 56, "[35] = %d (u=0,v=7)", mpe_zigzag[35]);
    CHECK(t, mpe_zigzag[28] == 7, "[28] = %d (u=7,v=0)", mpe_zigzag[28]);
    CHECK(t, mpe_zigzag[42] == 15, "[42] = %d (u=7,v=1)", mpe_zigzag[42]);
    CHECK(t, mpe_zigzag[63] == 63, "[63] = %d", mpe_zigzag[63]);
    /* And the whole figure. */
    for (int v = 0; v < 8; v++)
        for (int u = 0; u < 8; u++)
            CHECK(t, mpe_zigzag[fig_7_2[v][u]] == 8 * v + u,
                  "scan %d: raster %d, figure says %d", fig_7_2[v][u],
                  mpe_zigzag[fig_7_2[v][u]], 8 * v + u);
}

static void t_default_matrices(TestCtx *t)
{
    /* (row v, column u, value) from 13818-2 §6.3.11 / 11172-2 §2.4.3.2;
     * the off-diagonal pairs catch a transposed table (the matrix is not
     * symmetric: w[1][3] = 24 but w[3][1] = 22). */
    static const int spots[][3] = {
        { 0, 0, 8 },  { 0, 1, 16 }, { 0, 7, 34 }, { 1, 0, 16 },
        { 1, 3, 24 }, { 3, 1, 22 }, { 2, 6, 34 }, { 4, 4, 32 },
        { 5, 7, 58 }, { 6, 6, 56 }, { 7, 0, 27 }, { 7, 6, 69 },
        { 6, 7, 69 }, { 7, 7, 83 }, { 4, 7, 48 }, { 7, 2, 35 },
    };
    for (size_t k = 0; k < sizeof(spots) / sizeof(spots[0]); k++) {
        int v = spots[k][0], u = spots[k][1];
        CHECK(t, mpe_default_intra_matrix[8 * v + u] == spots[k][2],
              "intra w[%d][%d] = %d, expected %d", v, u,
              mpe_default_intra_matrix[8 * v + u], spots[k][2]);
    }
    int sum = 0;
    for (int i = 0; i < 64; i++) {
        sum += mpe_default_intra_matrix[i];
        CHECK(t, mpe_default_inter_matrix[i] == 16, "inter [%d] = %d", i,
              mpe_default_inter_matrix[i]);
    }
    /* Sum of the standard's 64 entries, added up by hand from the table. */
    CHECK(t, sum == 2114, "intra matrix sum %d", sum);
}

/* ---- independent inverse quantisers ------------------------------------ */

static long sgn(long x) { return x > 0 ? 1 : x < 0 ? -1 : 0; }

/* 11172-2 §2.4.4.1 (intra) and §2.4.4.2 (non-intra), transcribed. */
static void ref_dequant_mpeg1(int16_t out[64], const int16_t lvl[64], int q,
                              const uint8_t mat[64], int intra)
{
    long dct_recon[8][8];
    for (int m = 0; m < 8; m++)
        for (int n = 0; n < 8; n++) {
            long zz = lvl[8 * m + n], w = mat[8 * m + n];
            if (intra)
                dct_recon[m][n] = (2 * zz * q * w) / 16;
            else
                dct_recon[m][n] = ((2 * zz + sgn(zz)) * q * w) / 16;
            if ((dct_recon[m][n] & 1) == 0)
                dct_recon[m][n] = dct_recon[m][n] - sgn(dct_recon[m][n]);
            if (dct_recon[m][n] > 2047)
                dct_recon[m][n] = 2047;
            if (dct_recon[m][n] < -2048)
                dct_recon[m][n] = -2048;
            if (!intra && zz == 0)
                dct_recon[m][n] = 0;
        }
    if (intra)
        dct_recon[0][0] = lvl[0] * 8;
    for (int i = 0; i < 64; i++)
        out[i] = (int16_t)dct_recon[i / 8][i % 8];
}

/* 13818-2 §7.4.2.3, §7.4.3 and §7.4.4, transcribed (q_scale_type 0). */
static void ref_dequant_mpeg2_dc(int16_t out[64], const int16_t lvl[64],
                                 int code, const uint8_t mat[64], int intra, int intra_dc_precision)
{
    static const long table_7_4[4] = { 8, 4, 2, 1 };
    long Fpp[8][8], Fp[8][8], F[8][8], sum = 0;
    long quantiser_scale = 2L * code; /* Table 7-6, q_scale_type = 0 */
    long intra_dc_mult = table_7_4[intra_dc_precision];
    for (int v = 0; v < 8; v++)
        for (int u = 0; u < 8; u++) {
            long QF = lvl[8 * v + u], W = mat[8 * v + u];
            if (u == 0 && v == 0 && intra)
                Fpp[v][u] = intra_dc_mult * QF;
            else if (intra)
                Fpp[v][u] = (QF * 2 * W * quantiser_scale) / 32;
            else
                Fpp[v][u] = (((QF * 2) + sgn(QF)) * W * quantiser_scale) / 32;
        }
    for (int v = 0; v < 8; v++)
        for (int u = 0; u < 8; u++) {
            if (Fpp[v][u] > 2047)
                Fp[v][u] = 2047;
            else if (Fpp[v][u] < -2048)
                Fp[v][u] = -2048;
            else
                Fp[v][u] = Fpp[v][u];
            sum = sum + Fp[v][u];
            F[v][u] = Fp[v][u];
        }
    if ((sum & 1) == 0) {
        if ((F[7][7] & 1) != 0)
            F[7][7] = Fp[7][7] - 1;
        else
            F[7][7] = Fp[7][7] + 1;
    }
    for (int i = 0; i < 64; i++)
        out[i] = (int16_t)F[i / 8][i % 8];
}

static void ref_dequant_mpeg2(int16_t out[64], const int16_t lvl[64],
                              int code, const uint8_t mat[64], int intra)
{
    ref_dequant_mpeg2_dc(out, lvl, code, mat, intra, 0);
}

/* Random levels shaped like real blocks: mostly small (where parity and
 * oddification matter), some large (saturation), some zero runs. */
static void random_levels(TestRng *r, int16_t lvl[64], int max_level, int intra)
{
    for (int i = 0; i < 64; i++) {
        int k = rand_range(r, 0, 9);
        if (k < 4)
            lvl[i] = 0;
        else if (k < 8)
            lvl[i] = (int16_t)rand_range(r, -4, 4);
        else
            lvl[i] = (int16_t)rand_range(r, -max_level, max_level);
    }
    if (intra)
        lvl[0] = (int16_t)rand_range(r, 0, 255);
}

static void random_matrix(TestRng *r, uint8_t m[64], int which)
{
    for (int i = 0; i < 64; i++)
        m[i] = which == 0 ? mpe_default_intra_matrix[i]
             : which == 1 ? mpe_default_inter_matrix[i]
             : (uint8_t)rand_range(r, 1, 255);
    if (which == 2 && rand_range(r, 0, 1))
        m[0] = 8; /* the usual intra DC entry; unused for intra anyway */
}

/* 13818-2 Figure 7-3 (alternate_scan 1): a permutation that starts down
 * the first column; spots read off the figure as (scan index, v, u). */
static void t_alternate_scan(TestCtx *t)
{
    int seen[64] = { 0 };
    static const int spots[][3] = {
        { 0, 0, 0 }, { 1, 1, 0 }, { 2, 2, 0 }, { 3, 3, 0 }, { 4, 0, 1 }, { 5, 1, 1 },
        { 6, 0, 2 }, { 7, 1, 2 }, { 13, 7, 0 }, { 14, 7, 1 }, { 52, 0, 7 }, { 63, 7, 7 },
    };
    for (int i = 0; i < 64; i++)
        if (mpe_alternate_scan[i] < 64)
            seen[mpe_alternate_scan[i]]++;
    for (int i = 0; i < 64; i++)
        CHECK(t, seen[i] == 1, "raster %d appears %d times", i, seen[i]);
    for (size_t k = 0; k < sizeof(spots) / sizeof(spots[0]); k++)
        CHECK(t, mpe_alternate_scan[spots[k][0]] == 8 * spots[k][1] + spots[k][2],
              "[%d] = %d, Figure 7-3 says v=%d u=%d", spots[k][0], mpe_alternate_scan[spots[k][0]],
              spots[k][1], spots[k][2]);
}

static void t_dequant_vs_reference(TestCtx *t)
{
    TestRng rng = { 0xdeadbeefcafef00dULL };
    for (int iter = 0; iter < 200000 && !t->case_failed; iter++) {
        int mpeg2 = iter & 1, intra = (iter >> 1) & 1;
        int q = rand_range(&rng, 1, 31);
        int16_t lvl[64], got[64], want[64];
        uint8_t mat[64];
        random_matrix(&rng, mat, rand_range(&rng, 0, 2));
        random_levels(&rng, lvl, mpeg2 ? 2047 : 255, intra);
        if (iter % 97 == 0) /* all-zero and DC-only blocks too */
            memset(lvl + 1, 0, 63 * sizeof(lvl[0]));
        if (intra)
            mpe_dequant_intra(got, lvl, q, mat, mpeg2);
        else
            mpe_dequant_inter(got, lvl, q, mat, mpeg2);
        if (mpeg2)
            ref_dequant_mpeg2(want, lvl, q, mat, intra);
        else
            ref_dequant_mpeg1(want, lvl, q, mat, intra);
        for (int i = 0; i < 64; i++)
            CHECK(t, got[i] == want[i],
                  "iter %d %s %s q=%d [%d]: level %d W %d -> %d, standard %d",
                  iter, mpeg2 ? "MPEG-2" : "MPEG-1", intra ? "intra" : "inter",
                  q, i, lvl[i], mat[i], got[i], want[i]);
    }
}

/* MPEG-2 intra_dc_precision 1..3 (9..10 bits, and 11): the DC level is
 * F(0,0) / intra_dc_mult rounded and clamped to the precision's range, and
 * the dequantiser multiplies it back (Table 7-4) before mismatch control. */
static void t_intra_dc_precision(TestCtx *t)
{
    TestRng rng = { 0xdc9dc10ULL };
    for (int iter = 0; iter < 40000 && !t->case_failed; iter++) {
        const int prec = 1 + iter % 3, mult = 8 >> prec, q = rand_range(&rng, 1, 31);
        int16_t lvl[64], got[64], want[64];
        uint8_t mat[64];
        random_matrix(&rng, mat, rand_range(&rng, 0, 2));
        random_levels(&rng, lvl, 2047, 1);
        const int f00 = rand_range(&rng, -40, 2047);
        lvl[0] = (int16_t)mpe_quant_intra_dc(f00, prec);
        const int near = (f00 < 0 ? 0 : f00 + mult / 2) / mult;
        const int top = (256 << prec) - 1;
        CHECK(t, lvl[0] == (near > top ? top : near), "prec %d F %d: level %d", prec, f00, lvl[0]);
        mpe_dequant_intra_dc(got, lvl, q, mat, 1, prec);
        ref_dequant_mpeg2_dc(want, lvl, q, mat, 1, prec);
        for (int i = 0; i < 64; i++)
            CHECK(t, got[i] == want[i], "iter %d prec %d [%d]: %d, standard %d", iter, prec, i,
                  got[i], want[i]);
    }
}

/* 13818-2 §7.4.4 leaves the sum of the 64 output coefficients odd, always
 * (an even sum is fixed by toggling F[7][7]'s LSB; an odd one is left). */
static void t_mpeg2_mismatch_parity(TestCtx *t)
{
    TestRng rng = { 12345 };
    for (int iter = 0; iter < 100000 && !t->case_failed; iter++) {
        int intra = iter & 1, q = rand_range(&rng, 1, 31);
        int16_t lvl[64], out[64];
        uint8_t mat[64];
        random_matrix(&rng, mat, rand_range(&rng, 0, 2));
        random_levels(&rng, lvl, 2047, intra);
        if (iter % 5 == 0) { /* push F[7][7] to the saturation edges */
            lvl[63] = (int16_t)(rand_range(&rng, 0, 1) ? 2047 : -2047);
            mat[63] = 255;
        }
        if (iter % 7 == 0)
            memset(lvl, 0, sizeof(lvl));
        if (intra)
            mpe_dequant_intra(out, lvl, q, mat, 1);
        else
            mpe_dequant_inter(out, lvl, q, mat, 1);
        long sum = 0;
        for (int i = 0; i < 64; i++)
            sum += out[i];
        CHECK(t, sum % 2 != 0, "iter %d: sum %ld is even", iter, sum);
        for (int i = 0; i < 64; i++)
            CHECK(t, out[i] >= -2048 && out[i] <= 2047, "out of range");
    }
    /* Worked examples: all-zero inter block -> F[7][7] = 1; F[7][7]
     * saturated at 2047 (odd) with an even total -> 2046; at -2048 (even)
     * -> -2047. */
    int16_t lvl[64] = { 0 }, out[64];
    mpe_dequant_inter(out, lvl, 1, mpe_default_inter_matrix, 1);
    CHECK(t, out[63] == 1, "all-zero block: F[7][7] = %d", out[63]);
    uint8_t mat[64];
    memset(mat, 255, sizeof(mat));
    lvl[63] = 2000; lvl[62] = 1;   /* 2047 + 47 = 2094: even, F77 odd */
    mpe_dequant_inter(out, lvl, 1, mat, 1);
    CHECK(t, out[62] == 47 && out[63] == 2046, "got %d, %d", out[62], out[63]);
    lvl[63] = -2000; lvl[62] = 0;  /* -2048 alone: even sum, F77 even */
    mpe_dequant_inter(out, lvl, 1, mat, 1);
    CHECK(t, out[63] == -2047, "got %d", out[63]);
}

/* 11172-2 oddification: every MPEG-1 AC / non-intra output is odd or zero,
 * except -2048, which saturation can produce after oddification. */
static void t_mpeg1_odd(TestCtx *t)
{
    TestRng rng = { 777 };
    long saturated_neg = 0;
    for (int iter = 0; iter < 100000 && !t->case_failed; iter++) {
        int intra = iter & 1, q = rand_range(&rng, 1, 31);
        int16_t lvl[64], out[64];
        uint8_t mat[64];
        random_matrix(&rng, mat, rand_range(&rng, 0, 2));
        random_levels(&rng, lvl, 255, intra);
        if (intra)
            mpe_dequant_intra(out, lvl, q, mat, 0);
        else
            mpe_dequant_inter(out, lvl, q, mat, 0);
        for (int i = intra ? 1 : 0; i < 64; i++) {
            saturated_neg += out[i] == -2048;
            CHECK(t, out[i] == 0 || out[i] % 2 != 0 || out[i] == -2048,
                  "iter %d [%d]: level %d -> %d", iter, i, lvl[i], out[i]);
            CHECK(t, (out[i] == 0) == (lvl[i] == 0) || out[i] == 0,
                  "iter %d [%d]: level 0 -> %d", iter, i, out[i]);
        }
        if (intra)
            CHECK(t, out[0] == 8 * lvl[0], "DC %d -> %d", lvl[0], out[0]);
    }
    printf("     (-2048 from saturation seen %ld times)\n", saturated_neg);
}

/* ---- forward quantisers ------------------------------------------------ */

/* Intra DC: round(F/8), clamped to 0..255. */
static void t_intra_dc(TestCtx *t)
{
    for (int f = -64; f <= 2047; f++) {
        int16_t coef[64] = { 0 }, lvl[64];
        coef[0] = (int16_t)f;
        mpe_quant_intra(lvl, coef, 1, mpe_default_intra_matrix, 255);
        int want = f < 0 ? 0 : (int)floor(f / 8.0 + 0.5);
        if (want > 255)
            want = 255;
        CHECK(t, lvl[0] == want, "F=%d: level %d, want %d", f, lvl[0], want);
        if (t->case_failed)
            return;
    }
}

/* The forward formulas against their real-number definitions in quant.h. */
static void t_quant_formulas(TestCtx *t)
{
    TestRng rng = { 4242 };
    for (int iter = 0; iter < 20000 && !t->case_failed; iter++) {
        int q = rand_range(&rng, 1, 31), max_level = iter & 1 ? 2047 : 255;
        int16_t coef[64], li[64], ln[64];
        uint8_t mat[64];
        random_matrix(&rng, mat, rand_range(&rng, 0, 2));
        for (int i = 0; i < 64; i++)
            coef[i] = (int16_t)rand_range(&rng, -2048, 2047);
        coef[0] = (int16_t)rand_range(&rng, 0, 2047);
        int nzi = mpe_quant_intra(li, coef, q, mat, max_level);
        int nzn = mpe_quant_inter(ln, coef, q, mat, max_level);
        int cnt_i = 0, cnt_n = 0;
        for (int i = 0; i < 64; i++) {
            double x = 8.0 * coef[i] / (q * mat[i]);
            /* round half away from zero; exact halves are representable,
             * so floor(|x| + 0.5) is exact here */
            long ri = (long)floor(fabs(x) + 0.5), rn = (long)floor(fabs(x));
            if (ri > max_level) ri = max_level;
            if (rn > max_level) rn = max_level;
            if (coef[i] < 0) { ri = -ri; rn = -rn; }
            if (i > 0) {
                CHECK(t, li[i] == ri, "intra q=%d W=%d F=%d: %d, want %ld", q,
                      mat[i], coef[i], li[i], ri);
                cnt_i += li[i] != 0;
            }
            CHECK(t, ln[i] == rn, "inter q=%d W=%d F=%d: %d, want %ld", q,
                  mat[i], coef[i], ln[i], rn);
            cnt_n += ln[i] != 0;
        }
        CHECK(t, nzi == cnt_i, "intra returned %d, %d non-zero AC", nzi, cnt_i);
        CHECK(t, nzn == cnt_n, "inter returned %d, %d non-zero", nzn, cnt_n);
    }
}

/* quantise -> dequantise.  s = qscale * W / 8 is the step.  The decoder's
 * truncation costs < 1 (at most 7/8) and oddification / mismatch control
 * at most 1 more, so (unclamped levels):
 *   intra AC:  |F - F'| <= s/2 + 15/8    (<= one step once s >= 3.75)
 *   intra DC:  |F - F'| <= 4             (half the DC step of 8)
 *   non-intra: |F - F'| <= s/2 + 15/8 for a non-zero level, < s (+1 for a
 *              mismatch toggle of F[7][7]) in the dead zone.
 * So with s >= 4 every error is within one step, bar that toggle. */
static void t_roundtrip(TestCtx *t)
{
    TestRng rng = { 31337 };
    double worst_i = 0, worst_n = 0; /* worst error in steps, s >= 4 */
    for (int q = 1; q <= 31; q++) {
        for (int iter = 0; iter < 3000 && !t->case_failed; iter++) {
            int mpeg2 = iter & 1, max_level = mpeg2 ? 2047 : 255;
            int16_t coef[64], lvl[64], rec[64];
            uint8_t mat[64];
            random_matrix(&rng, mat, rand_range(&rng, 0, 2));
            int amp = iter % 3 == 0 ? 2048 : iter % 3 == 1 ? 256 : 32;
            for (int i = 0; i < 64; i++)
                coef[i] = (int16_t)rand_range(&rng, -amp, amp - 1);
            coef[0] = (int16_t)rand_range(&rng, 0, 2047);

            mpe_quant_intra(lvl, coef, q, mat, max_level);
            mpe_dequant_intra(rec, lvl, q, mat, mpeg2);
            CHECK(t, abs(rec[0] - coef[0]) <= 4 || (coef[0] > 2044 && lvl[0] == 255),
                  "intra DC %d -> %d -> %d", coef[0], lvl[0], rec[0]);
            for (int i = 1; i < 64; i++) {
                double s = q * mat[i] / 8.0, err = abs(rec[i] - coef[i]);
                if (abs(lvl[i]) == max_level)
                    continue; /* possibly clamped: see t_clamp */
                CHECK(t, err <= s / 2 + 15.0 / 8,
                      "intra q=%d W=%d F=%d -> %d -> %d", q, mat[i], coef[i],
                      lvl[i], rec[i]);
                if (s >= 4 && err / s > worst_i)
                    worst_i = err / s;
            }

            mpe_quant_inter(lvl, coef, q, mat, max_level);
            mpe_dequant_inter(rec, lvl, q, mat, mpeg2);
            for (int i = 0; i < 64; i++) {
                double s = q * mat[i] / 8.0, err = abs(rec[i] - coef[i]);
                if (abs(lvl[i]) == max_level)
                    continue;
                if (lvl[i] != 0)
                    CHECK(t, err <= s / 2 + 15.0 / 8,
                          "inter q=%d W=%d F=%d -> %d -> %d", q, mat[i],
                          coef[i], lvl[i], rec[i]);
                else
                    CHECK(t, abs(coef[i]) < s && err < s + 1,
                          "inter dead zone q=%d W=%d F=%d -> %d", q, mat[i],
                          coef[i], rec[i]);
                /* the summary leaves out F[7][7] of MPEG-2, whose mismatch
                 * toggle can add 1 to a dead-zone error just under s */
                if (s >= 4 && !(mpeg2 && i == 63) && err / s > worst_n)
                    worst_n = err / s;
            }
        }
    }
    printf("     worst |error| / step (step >= 4): intra %.3f, inter %.3f\n",
           worst_i, worst_n);
    CHECK(t, worst_i <= 1.0 && worst_n <= 1.0, "more than one step");
}

/* Levels never exceed max_level; saturated ones sit exactly on it. */
static void t_clamp(TestCtx *t)
{
    static const int maxes[] = { 255, 2047 };
    for (int k = 0; k < 2; k++) {
        int16_t coef[64], lvl[64];
        uint8_t mat[64];
        memset(mat, 1, sizeof(mat));
        for (int i = 0; i < 64; i++)
            coef[i] = (int16_t)(i % 2 ? 2047 : -2048);
        coef[0] = 2047;
        int nz = mpe_quant_intra(lvl, coef, 1, mat, maxes[k]);
        CHECK(t, nz == 63, "intra returned %d", nz);
        CHECK(t, lvl[0] == 255, "intra DC %d", lvl[0]);
        for (int i = 1; i < 64; i++)
            CHECK(t, lvl[i] == (i % 2 ? maxes[k] : -maxes[k]),
                  "intra max %d [%d] = %d", maxes[k], i, lvl[i]);
        nz = mpe_quant_inter(lvl, coef, 1, mat, maxes[k]);
        CHECK(t, nz == 64, "inter returned %d", nz);
        for (int i = 0; i < 64; i++)
            CHECK(t, lvl[i] == (i % 2 || i == 0 ? maxes[k] : -maxes[k]),
                  "inter max %d [%d] = %d", maxes[k], i, lvl[i]);
    }
    /* random sweep: never beyond the bound */
    TestRng rng = { 99 };
    for (int iter = 0; iter < 20000 && !t->case_failed; iter++) {
        int max_level = iter & 1 ? 2047 : 255, q = rand_range(&rng, 1, 31);
        int16_t coef[64], lvl[64];
        uint8_t mat[64];
        random_matrix(&rng, mat, 2);
        for (int i = 0; i < 64; i++)
            coef[i] = (int16_t)rand_range(&rng, -2048, 2047);
        mpe_quant_intra(lvl, coef, q, mat, max_level);
        for (int i = 1; i < 64; i++)
            CHECK(t, abs(lvl[i]) <= max_level, "intra %d", lvl[i]);
        mpe_quant_inter(lvl, coef, q, mat, max_level);
        for (int i = 0; i < 64; i++)
            CHECK(t, abs(lvl[i]) <= max_level, "inter %d", lvl[i]);
    }
}

/* A zero block quantises to zeros; the counts say so. */
static void t_zero_block(TestCtx *t)
{
    int16_t coef[64] = { 0 }, lvl[64];
    CHECK(t, mpe_quant_intra(lvl, coef, 8, mpe_default_intra_matrix, 255) == 0,
          "intra count");
    for (int i = 0; i < 64; i++)
        CHECK(t, lvl[i] == 0, "intra [%d] = %d", i, lvl[i]);
    CHECK(t, mpe_quant_inter(lvl, coef, 8, mpe_default_inter_matrix, 2047) == 0,
          "inter count");
    for (int i = 0; i < 64; i++)
        CHECK(t, lvl[i] == 0, "inter [%d] = %d", i, lvl[i]);
}

/* mpe_quant_inter_all_zero's and mpe_quant_inter_zero_by_bound's promise
 * (the latter with mpe_fdct_bound_c): whenever either says so, the reference
 * transform and quantiser give no level at all.  Blocks near its bounds:
 * one DCT basis function (all the energy in one coefficient: where the
 * energy bound is tight) or a flat block (the DC) at amplitudes around the
 * dead zone, single impulses (the sum-of-|r| bound), noise of every
 * strength; each at every quantiser with the flat and a ramp matrix. */
static void t_all_zero_bound(TestCtx *t)
{
    TestRng r = { 4242 };
    uint8_t ramp[64];
    long said = 0, said_energy = 0, said_bound = 0;
    for (int i = 0; i < 64; i++)
        ramp[i] = (uint8_t)(16 + (i >> 3) + (i & 7));
    for (int n = 0; n < 60000 && !t->case_failed; n++) {
        int16_t blk[64], coef[64], lvl[64];
        const int kind = n % 4;
        const int qscale = 1 + n / 4 % 31;
        const uint8_t *m = n / 124 % 2 ? ramp : mpe_default_inter_matrix;
        const double dead = qscale * 16 / 8.0;   /* |F| where levels start, flat matrix */
        if (kind == 0) {   /* one basis function, amplitude around the dead zone */
            const int u = rand_range(&r, 0, 7), v = rand_range(&r, 0, 7);
            const double amp = dead * (0.6 + 0.8 * (test_rand(&r) % 1000) / 1000.0);
            for (int y = 0; y < 8; y++)
                for (int x = 0; x < 8; x++) {
                    double b = (u ? 0.5 : 0.5 / sqrt(2.0)) * cos((2 * x + 1) * u * M_PI / 16) *
                               (v ? 0.5 : 0.5 / sqrt(2.0)) * cos((2 * y + 1) * v * M_PI / 16);
                    blk[8 * y + x] = (int16_t)lrint(amp * b + rand_range(&r, -1, 1) * 0.5);
                }
        } else if (kind == 1) {   /* flat: the DC alone */
            const int v = rand_range(&r, -(int)dead / 4 - 2, (int)dead / 4 + 2);
            for (int i = 0; i < 64; i++)
                blk[i] = (int16_t)(v + (i == 0 ? rand_range(&r, -1, 1) : 0));
        } else if (kind == 2) {   /* an impulse or two */
            memset(blk, 0, sizeof(blk));
            for (int k = rand_range(&r, 1, 2); k > 0; k--)
                blk[rand_range(&r, 0, 63)] = (int16_t)rand_range(&r, -4 * (int)dead - 4, 4 * (int)dead + 4);
        } else {   /* noise */
            const int a = rand_range(&r, 0, 1 + qscale / 2);
            for (int i = 0; i < 64; i++)
                blk[i] = (int16_t)rand_range(&r, -a, a);
        }
        uint32_t sum_abs = 0, sum_sq = 0;
        int32_t sum = 0;
        for (int i = 0; i < 64; i++) {
            sum_abs += (uint32_t)abs(blk[i]);
            sum += blk[i];
            sum_sq += (uint32_t)(blk[i] * blk[i]);
        }
        int wmin = 255;
        for (int i = 0; i < 64; i++)
            wmin = m[i] < wmin ? m[i] : wmin;
        const int qw = qscale * wmin;
        const int by_sums = mpe_quant_inter_all_zero(sum_abs, sum, sum_sq, qw);
        const int by_bound = mpe_quant_inter_zero_by_bound(mpe_fdct_bound_c(blk), sum_abs, qw);
        if (!by_sums && !by_bound)
            continue;
        said++;
        said_energy += by_sums && 2 * (int64_t)sum_abs + 8 > qw;
        said_bound += by_bound;
        memcpy(coef, blk, sizeof(coef));
        mpe_fdct_c(coef);
        const int nz = mpe_quant_inter(lvl, coef, qscale, m, 2047);
        CHECK(t, nz == 0, "block %d (kind %d, q %d): said all zero, %d levels", n, kind, qscale, nz);
    }
    /* every bound had its say */
    CHECK(t, said > 10000 && said_energy > 3000 && said_bound > 10000,
          "%ld blocks said all zero, %ld by the energy, %ld by the transform bound", said, said_energy,
          said_bound);
}

int main(void)
{
    TestCtx t;
    test_init(&t, "test_quant");
    test_run(&t, "zigzag_is_permutation", t_zigzag_permutation);
    test_run(&t, "zigzag_matches_figure_7_2", t_zigzag_figure);
    test_run(&t, "default_matrices", t_default_matrices);
    test_run(&t, "alternate_scan_matches_figure_7_3", t_alternate_scan);
    test_run(&t, "dequant_matches_standard_pseudocode", t_dequant_vs_reference);
    test_run(&t, "intra_dc_precision_matches_standard", t_intra_dc_precision);
    test_run(&t, "mpeg2_mismatch_sum_odd", t_mpeg2_mismatch_parity);
    test_run(&t, "mpeg1_outputs_odd_or_zero", t_mpeg1_odd);
    test_run(&t, "intra_dc_round", t_intra_dc);
    test_run(&t, "quant_formulas", t_quant_formulas);
    test_run(&t, "quant_dequant_round_trip", t_roundtrip);
    test_run(&t, "levels_clamp_to_max_level", t_clamp);
    test_run(&t, "zero_block", t_zero_block);
    test_run(&t, "all_zero_bound_never_wrong", t_all_zero_bound);
    return test_finish(&t);
}
