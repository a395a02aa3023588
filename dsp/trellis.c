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

#include <stddef.h>

#include "bitstream/vlc.h"
#include "dsp/quant.h"

#define COST_INF INT64_MAX

/* quant.c's inverse quantisers, one coefficient at a time (test_trellis
 * checks them against mpe_dequant_intra/inter), on magnitudes: both
 * divisions truncate towards zero and the oddification moves towards zero,
 * so only the saturation (2047 up, -2048 down) depends on the sign.
 * MPEG-2's (2 a w 2 q) / 32 is MPEG-1's (2 a q w) / 16, both (a w q) / 8;
 * non-intra, ((2 a + 1) w q) / 16.  wq = w * q. */
static inline int recon_mag(int a, int wq, int intra, int mpeg1)
{
    int m = intra ? (a * wq) >> 3 : ((2 * a + 1) * wq) >> 4;
    if (mpeg1 && m > 0 && !(m & 1))
        m--;   /* MPEG-1 oddification */
    return m;
}

static inline int saturate_mag(int m, int negative)
{
    const int top = negative ? 2048 : 2047;
    return m > top ? top : m;
}

int mpe_trellis_recon(int level, int pos, const MpeTrellisParams *p)
{
    if (level == 0)
        return 0;
    const int a = level < 0 ? -level : level;
    const int m = saturate_mag(recon_mag(a, p->matrix[pos] * p->qscale, p->intra, !p->mpeg2), level < 0);
    return level < 0 ? -m : m;
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

/* The codes of one candidate magnitude a at every run after a coded
 * coefficient (never the '1s' short code): table zero's column for a, read
 * in place, or every run an escape when a is beyond both tables. */
typedef struct CandCodes {
    const BsVlc *col;   /* &bs_vlc_dct_zero[0][a], stride BS_DCT_MAX_LEVEL + 1; NULL: see below */
    int table, a, escape, all_escape;
} CandCodes;

static CandCodes cand_codes(int table, int mpeg2, int a)
{
    CandCodes cc = { NULL, table, a, escape_bits(a, mpeg2), a > BS_DCT_MAX_LEVEL };
    if (table == BS_DCT_TABLE_ZERO && !cc.all_escape)
        cc.col = &bs_vlc_dct_zero[0][a];
    return cc;
}

/* rl_bits(table, mpeg2, run, a, 0) */
static inline int cand_bits(const CandCodes *cc, int run)
{
    if (run > BS_DCT_MAX_RUN || cc->all_escape)
        return cc->escape;
    const int len = cc->col ? cc->col[run * (BS_DCT_MAX_LEVEL + 1)].len
                            : bs_vlc_dct_coeff(cc->table, run, cc->a).len;
    return len ? len + 1 : cc->escape;
}

int mpe_trellis_quant(int16_t level[64], const int16_t coef[64], const MpeTrellisParams *p)
{
    const int start = p->intra ? 1 : 0, table = block_table(p);
    const int64_t lambda = p->lambda;
    const int mpeg1 = !p->mpeg2;
    const int64_t eob = lambda * bs_vlc_dct_eob[table].len;
    int64_t zsum[65];                /* zsum[i]: error of scan positions start..i-1 left at 0 */
    uint8_t from[65];                /* by state (see the top of the file) */
    int16_t chosen[65];              /* the level (signed) of the state's last position */
    uint8_t states[65];              /* the live states, oldest first */
    int64_t adj[65];                 /* by live state: its best J less the zeros before it */
    int n_states = 0;

    zsum[start] = 0;
    for (int i = start; i < 64; i++)
        zsum[i + 1] = zsum[i] + sq(coef[mpe_zigzag[i]]) * MPE_TRELLIS_ONE;
    states[n_states] = (uint8_t)start;
    adj[n_states++] = 0;

    for (int i = start; i < 64; i++) {
        const int pos = mpe_zigzag[i], c = coef[pos];
        const int lp = level[pos] < 0 ? -level[pos] : level[pos];
        const int sgn = c < 0 ? -1 : 1, ca = c < 0 ? -c : c, wq = p->matrix[pos] * p->qscale;
        int cand[2], n_cand = 0;

        /* the sign is the coefficient's, so a candidate's error is that of
         * the magnitudes */
        if (lp >= 1) {
            cand[n_cand++] = lp;
            if (lp >= 2)
                cand[n_cand++] = lp - 1;
        } else if (c != 0 && p->max_level >= 1 &&
                   sq(ca - saturate_mag(recon_mag(1, wq, p->intra, mpeg1), c < 0)) < sq(c)) {
            cand[n_cand++] = 1;
        }
        if (!n_cand)
            continue;

        /* The candidates in order, each over the live states oldest first;
         * a J replaces the best only when strictly lower, so the choice is
         * the first minimum in that order. */
        int64_t b = COST_INF;
        int bl = 0, bf = 0;
        for (int k = 0; k < n_cand; k++) {
            const int a = cand[k], l = sgn * a;
            const int rm = saturate_mag(recon_mag(a, wq, p->intra, mpeg1), c < 0);
            const int64_t base = zsum[i] + sq(ca - rm) * MPE_TRELLIS_ONE;
            const CandCodes cc = cand_codes(table, p->mpeg2, a);

            /* the start state: its run may take the non-intra '1s' code */
            const int bits0 = !p->intra && i == start && a == 1 ? 2 : cand_bits(&cc, i - start);
            int64_t j = adj[0] + base + lambda * bits0;
            if (j < b) {
                b = j;
                bl = l;
                bf = start;
            }
            if (n_states == 1)
                continue;
            /* The other live states have non-decreasing adj oldest first
             * (the pruning below keeps only those at or under each new
             * one), and the newest has the shortest run, whose code is the
             * shortest (no code gets shorter with a longer run).  So once a
             * state's adj plus the newest's bits reaches the best, neither
             * it nor any newer state can be strictly lower. */
            const int64_t floor_rate = lambda * cand_bits(&cc, i - states[n_states - 1]);
            for (int s = 1; s < n_states; s++) {
                const int64_t lo = adj[s] + base;
                if (lo + floor_rate >= b)
                    break;
                j = lo + lambda * cand_bits(&cc, i - states[s]);
                if (j < b) {
                    b = j;
                    bl = l;
                    bf = states[s];
                }
            }
        }
        chosen[i + 1] = (int16_t)bl;
        from[i + 1] = (uint8_t)bf;
        /* An earlier state P whose cost so far, with its zeros up to here,
         * is higher than this one's can never win again: from P every
         * later code has a longer run, and no code gets shorter with a
         * longer run (test_trellis checks that of both tables and the
         * escapes), so this state reaches everything P reaches for less.
         * On a tie P stays, so the result is the unpruned search's, tie
         * order included.  The start state stays: it is also the empty
         * block's end.  The live states being sorted by adj, those
         * dropped are the newest ones. */
        const int64_t adj_new = b - zsum[i + 1];
        while (n_states > 1 && adj[n_states - 1] > adj_new)
            n_states--;
        states[n_states] = (uint8_t)(i + 1);
        adj[n_states++] = adj_new;
    }

    /* the last state: nothing coded (a non-intra block then sends nothing) or
     * a last non-zero level, each with the zeroed tail and the EOB */
    int last = start;
    int64_t b = zsum[64] + (p->intra ? eob : 0);
    for (int s = 1; s < n_states; s++) {
        const int64_t j = adj[s] + zsum[64] + eob;
        if (j < b) {
            b = j;
            last = states[s];
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
