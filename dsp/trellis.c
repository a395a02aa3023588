/* trellis.c — trellis quantisation of one block (see trellis.h).
 *
 * The search.  Number the states by scan position: state s = i + 1 means
 * "the last non-zero level so far is at scan position i", and state
 * s = start (the scan position before the first coded one) means "nothing
 * coded yet".  A coefficient's code depends only on its own level and the
 * run of zeros since the previous non-zero level, so the best J of a block
 * whose last non-zero level is at i is
 *     best[i + 1] = min over candidates L at i, over earlier states P of
 *                   best[P] + Z(P .. i-1) + d(i, L) + lambda * bits(i - P, L)
 * where Z is the error of the coefficients in between left at zero (prefix
 * sums), and the block's J is the minimum over the last state of best plus
 * the zeroed tail plus the EOB.  Only positions with a non-zero candidate are
 * states, so a block of n such positions costs O(n^2) code lookups. */
#include "dsp/trellis.h"

#include "bitstream/vlc.h"
#include "dsp/quant.h"

#define COST_INF INT64_MAX

static int sign_of(int x)
{
    return (x > 0) - (x < 0);
}

static int clamp2048(int x)
{
    return x < -2048 ? -2048 : x > 2047 ? 2047 : x;
}

/* quant.c's inverse quantisers, one coefficient at a time (test_trellis
 * checks them against mpe_dequant_intra/inter). */
int mpe_trellis_recon(int level, int pos, const MpeTrellisParams *p)
{
    const int w = p->matrix[pos], q = p->qscale;
    int rec;

    if (level == 0)
        return 0;
    if (p->intra)
        rec = p->mpeg2 ? (2 * level * w * 2 * q) / 32 : (2 * level * q * w) / 16;
    else
        rec = p->mpeg2 ? ((2 * level + sign_of(level)) * w * 2 * q) / 32
                       : ((2 * level + sign_of(level)) * q * w) / 16;
    if (!p->mpeg2 && rec % 2 == 0)
        rec -= sign_of(rec);   /* MPEG-1 oddification, towards zero */
    return clamp2048(rec);
}

static int escape_bits(int a, int mpeg2)
{
    /* '0000 01', 6-bit run, then a 12-bit level (13818-2 Table B.16) or an
     * 8-bit level, 16 bits beyond +-127 (11172-2 §2.4.3.7) */
    return mpeg2 ? 6 + 6 + 12 : a <= 127 ? 6 + 6 + 8 : 6 + 6 + 16;
}

/* Bits of one run/level code with its sign; first_short: the first
 * coefficient of a non-intra block, where run 0 level 1 is '1s'. */
static int rl_bits(int table, int mpeg2, int run, int a, int first_short)
{
    if (first_short && run == 0 && a == 1)
        return 2;
    const BsVlc v = bs_vlc_dct_coeff(table, run, a);
    return v.len ? v.len + 1 : escape_bits(a, mpeg2);
}

static int block_table(const MpeTrellisParams *p)
{
    return p->intra ? p->table : BS_DCT_TABLE_ZERO;
}

int mpe_trellis_block_bits(const int16_t level[64], const MpeTrellisParams *p)
{
    const int start = p->intra ? 1 : 0, table = block_table(p);
    int bits = 0, run = 0, coded = 0;

    for (int i = start; i < 64; i++) {
        const int l = level[mpe_zigzag[i]];
        if (!l) {
            run++;
            continue;
        }
        bits += rl_bits(table, p->mpeg2, run, l < 0 ? -l : l, !p->intra && !coded);
        coded = 1;
        run = 0;
    }
    if (coded || p->intra)
        bits += bs_vlc_dct_eob[table].len;
    return bits;
}

static int64_t sq(int x)
{
    return (int64_t)x * x;
}

int64_t mpe_trellis_cost(const int16_t level[64], const int16_t coef[64], const MpeTrellisParams *p)
{
    int64_t d = 0;
    for (int pos = p->intra ? 1 : 0; pos < 64; pos++)
        d += sq(coef[pos] - mpe_trellis_recon(level[pos], pos, p));
    return d * MPE_TRELLIS_ONE + p->lambda * mpe_trellis_block_bits(level, p);
}

int64_t mpe_trellis_lambda(int qscale, int c_milli)
{
    return ((int64_t)c_milli * qscale * qscale * MPE_TRELLIS_ONE + 500) / 1000;
}

int mpe_trellis_quant(int16_t level[64], const int16_t coef[64], const MpeTrellisParams *p)
{
    const int start = p->intra ? 1 : 0, table = block_table(p);
    const int64_t eob = p->lambda * bs_vlc_dct_eob[table].len;
    int64_t zsum[65];                /* zsum[i]: error of scan positions start..i-1 left at 0 */
    int64_t best[65];                /* by state (see the top of the file) */
    uint8_t from[65];
    int16_t chosen[65];              /* the level (signed) of the state's last position */
    uint8_t states[65];
    int n_states = 0;

    zsum[start] = 0;
    for (int i = start; i < 64; i++)
        zsum[i + 1] = zsum[i] + sq(coef[mpe_zigzag[i]]) * MPE_TRELLIS_ONE;
    best[start] = 0;
    states[n_states++] = (uint8_t)start;

    for (int i = start; i < 64; i++) {
        const int pos = mpe_zigzag[i], c = coef[pos];
        const int lp = level[pos] < 0 ? -level[pos] : level[pos];
        const int sgn = c < 0 ? -1 : 1;
        int cand[2], n_cand = 0;

        if (lp >= 1) {
            cand[n_cand++] = lp;
            if (lp >= 2)
                cand[n_cand++] = lp - 1;
        } else if (c != 0 && p->max_level >= 1 &&
                   sq(c - mpe_trellis_recon(sgn, pos, p)) < sq(c)) {
            cand[n_cand++] = 1;
        }
        if (!n_cand)
            continue;

        int64_t b = COST_INF;
        int bl = 0, bf = 0;
        for (int k = 0; k < n_cand; k++) {
            const int l = sgn * cand[k];
            const int64_t d = sq(c - mpe_trellis_recon(l, pos, p)) * MPE_TRELLIS_ONE;
            for (int s = 0; s < n_states; s++) {
                const int prev = states[s];
                const int bits = rl_bits(table, p->mpeg2, i - prev, cand[k],
                                         !p->intra && prev == start);
                const int64_t j = best[prev] + (zsum[i] - zsum[prev]) + d + p->lambda * bits;
                if (j < b) {
                    b = j;
                    bl = l;
                    bf = prev;
                }
            }
        }
        best[i + 1] = b;
        chosen[i + 1] = (int16_t)bl;
        from[i + 1] = (uint8_t)bf;
        /* An earlier state P whose cost so far, with its zeros up to here,
         * is higher than this one's can never win again: from P every
         * later code has a longer run, and no code gets shorter with a
         * longer run (test_trellis checks that of both tables and the
         * escapes), so this state reaches everything P reaches for less.
         * On a tie P stays, so the result is the unpruned search's, tie
         * order included.  The start state stays: it is also the empty
         * block's end. */
        int kept = 1;
        for (int s = 1; s < n_states; s++) {
            const int st = states[s];
            if (best[st] - zsum[st] <= b - zsum[i + 1])
                states[kept++] = (uint8_t)st;
        }
        n_states = kept;
        states[n_states++] = (uint8_t)(i + 1);
    }

    /* the last state: nothing coded (a non-intra block then sends nothing) or
     * a last non-zero level, each with the zeroed tail and the EOB */
    int last = start;
    int64_t b = best[start] + zsum[64] + (p->intra ? eob : 0);
    for (int s = 1; s < n_states; s++) {
        const int st = states[s];
        const int64_t j = best[st] + (zsum[64] - zsum[st]) + eob;
        if (j < b) {
            b = j;
            last = st;
        }
    }

    for (int i = start; i < 64; i++)
        level[mpe_zigzag[i]] = 0;
    int nz = 0;
    for (int st = last; st != start; st = from[st]) {
        level[mpe_zigzag[st - 1]] = chosen[st];
        nz++;
    }
    return nz;
}
