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
 * states, so a block of n such positions costs O(n^2) code lookups at
 * worst; the pruning in search() keeps few states live (about two per
 * position on a noisy clip), so in practice O(n). */
#include "dsp/trellis.h"

#include <string.h>

#include "common/cpu.h"

#if defined(MPE_ARCH_X86)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "bitstream/mpeg12.h"
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
    /* written without branches: the search calls it for every candidate */
    const int m = intra ? (a * wq) >> 3 : ((2 * a + 1) * wq) >> 4;
    return m - (mpeg1 & (m > 0) & ~m);   /* MPEG-1 oddification of an even m */
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

static const uint8_t *block_scan(const MpeTrellisParams *p)
{
    return p->scan ? p->scan : mpe_zigzag;
}

int mpe_trellis_block_bits(const int16_t level[64], const MpeTrellisParams *p)
{
    const int start = p->intra ? 1 : 0, table = block_table(p);
    const uint8_t *scan = block_scan(p);
    int bits = 0, run = 0, coded = 0;

    for (int i = start; i < 64; i++) {
        const int l = level[scan[i]];
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

void mpe_trellis_intra_bits_both(const int16_t level[64], const MpeTrellisParams *p, int bits[2])
{
    const uint8_t *scan = block_scan(p);
    int b0 = bs_vlc_dct_eob[BS_DCT_TABLE_ZERO].len, b1 = bs_vlc_dct_eob[BS_DCT_TABLE_ONE].len;
    int run = 0;

    for (int i = 1; i < 64; i++) {
        const int l = level[scan[i]];
        if (!l) {
            run++;
            continue;
        }
        const int a = l < 0 ? -l : l, escape = escape_bits(a, p->mpeg2);
        if (run <= BS_DCT_MAX_RUN && a <= BS_DCT_MAX_LEVEL) {
            const int z = bs_vlc_dct_zero[run][a].len, o = bs_vlc_dct_one[run][a].len;
            b0 += z ? z + 1 : escape;
            b1 += o ? o + 1 : escape;
        } else {
            b0 += escape;
            b1 += escape;
        }
        run = 0;
    }
    bits[0] = b0;
    bits[1] = b1;
}

void mpe_trellis_intra_bits_both_scan(const int16_t scan[64], int mpeg2, int bits[2])
{
    uint64_t m = bs_nonzero_mask(scan) & ~(uint64_t)1;
    int b0 = bs_vlc_dct_eob[BS_DCT_TABLE_ZERO].len, b1 = bs_vlc_dct_eob[BS_DCT_TABLE_ONE].len;
    int prev = 0;

    while (m) {
        const int i = __builtin_ctzll(m), l = scan[i], run = i - prev - 1;
        const int a = l < 0 ? -l : l;
        m &= m - 1;
        prev = i;
        if (run <= BS_DCT_MAX_RUN && a <= BS_DCT_MAX_LEVEL) {
            const int z = bs_vlc_dct_zero[run][a].len, o = bs_vlc_dct_one[run][a].len;
            if (z && o) {
                b0 += z + 1;
                b1 += o + 1;
                continue;
            }
            const int escape = escape_bits(a, mpeg2);
            b0 += z ? z + 1 : escape;
            b1 += o ? o + 1 : escape;
        } else {
            const int escape = escape_bits(a, mpeg2);
            b0 += escape;
            b1 += escape;
        }
    }
    bits[0] = b0;
    bits[1] = b1;
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

/* dct_dc_size's code and dct_dc_differential (§7.2.1) */
static int dc_bits(int diff, int chroma)
{
    const int a = diff < 0 ? -diff : diff, size = a ? 32 - __builtin_clz((unsigned)a) : 0;
    return (chroma ? bs_vlc_dc_size_chroma : bs_vlc_dc_size_luma)[size].len + size;
}

int mpe_trellis_intra_dc(int f00, int nearest, int pred, int chroma, int dc_precision,
                         int64_t lambda)
{
    static const int order[3] = { 0, -1, 1 };   /* nearest first: ties keep it */
    const int mult = 8 >> dc_precision, top = (256 << dc_precision) - 1;
    int best = nearest;
    int64_t best_j = INT64_MAX;
    for (int k = 0; k < 3; k++) {
        const int l = nearest + order[k];
        if (l < 0 || l > top)
            continue;
        const int64_t d = f00 - (int64_t)l * mult;
        const int64_t j = d * d * MPE_TRELLIS_ONE + lambda * dc_bits(l - pred, chroma);
        if (j < best_j) {
            best_j = j;
            best = l;
        }
    }
    return best;
}

/* The codes of one candidate magnitude a at every run after a coded
 * coefficient (never the '1s' short code), read from the block's table in
 * place without branches: col[run * (BS_DCT_MAX_LEVEL + 1)] for runs up to
 * max_run, the empty entry beyond, an empty entry being an escape. */
typedef struct CandCodes {
    const BsVlc *col;
    int max_run, escape;
} CandCodes;

static const BsVlc no_code = { 0, 0 };

static inline CandCodes cand_codes(int table, int mpeg2, int a)
{
    const int in_table = a <= BS_DCT_MAX_LEVEL;
    const BsVlc(*codes)[BS_DCT_MAX_LEVEL + 1] = table == BS_DCT_TABLE_ONE ? bs_vlc_dct_one : bs_vlc_dct_zero;
    const CandCodes cc = { &codes[0][in_table ? a : 0], in_table ? BS_DCT_MAX_RUN : -1,
                           escape_bits(a, mpeg2) };
    return cc;
}

/* rl_bits(table, mpeg2, run, a, 0) */
static inline int cand_bits(const CandCodes *cc, int run)
{
    const BsVlc *e = run <= cc->max_run ? cc->col + run * (BS_DCT_MAX_LEVEL + 1) : &no_code;
    const int len = e->len;
    return len ? len + 1 : cc->escape;
}

uint64_t mpe_trellis_candidates_c(const int16_t level[64], const int16_t coef[64],
                                  const MpeTrellisParams *p, int32_t sq[64], int64_t *sq_sum)
{
    const int qscale = p->qscale, one_allowed = p->max_level >= 1, mpeg1 = !p->mpeg2;
    uint64_t cand = 0;
    *sq_sum = 0;
    for (int pos = 0; pos < 64; pos++) {
        const int c = coef[pos], ca = c < 0 ? -c : c;
        const int r1 = saturate_mag(recon_mag(1, p->matrix[pos] * qscale, p->intra, mpeg1), c < 0);
        sq[pos] = c * c;
        *sq_sum += sq[pos];
        cand |= (uint64_t)((level[pos] != 0) |
                           ((c != 0) & one_allowed & ((ca - r1) * (ca - r1) < c * c)))
                << pos;
    }
    return cand;
}

uint64_t mpe_trellis_candidates(const int16_t level[64], const int16_t coef[64],
                                const MpeTrellisParams *p, int32_t sq[64], int64_t *sq_sum)
{
#if defined(__SSE2__)
    /* wq = w q in 16 bits needs q <= 128 (w <= 255); beyond, the C loop */
    if (p->qscale > 128)
        return mpe_trellis_candidates_c(level, coef, p, sq, sq_sum);
    /* level 1's reconstruction r1: intra (w q) >> 3, else (3 w q) >> 4 as
     * the high half of w q * 12288; MPEG-1 makes an even one odd (down);
     * saturated at 2047, or 2048 for a negative coefficient.  The test
     * (|c| - r1)^2 < c^2 is r1 > 0 and r1 < 2|c| (r1 >= 0), done on
     * unsigned halves: |c| <= 32768, 2|c| saturating. */
    const __m128i zero = _mm_setzero_si128(), one = _mm_set1_epi16(1);
    const __m128i q = _mm_set1_epi16((int16_t)p->qscale), top = _mm_set1_epi16(2047);
    const __m128i mpeg1 = p->mpeg2 ? zero : _mm_set1_epi16(-1);
    const __m128i one_allowed = p->max_level >= 1 ? _mm_set1_epi16(-1) : zero;
    uint64_t cand = 0;
    __m128i total = zero;   /* two int64 lanes */
    for (int i = 0; i < 64; i += 8) {
        const __m128i c = _mm_loadu_si128((const __m128i *)(coef + i));
        const __m128i l = _mm_loadu_si128((const __m128i *)(level + i));
        const __m128i w = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(p->matrix + i)), zero);
        const __m128i wq = _mm_mullo_epi16(w, q);
        __m128i m = p->intra ? _mm_srli_epi16(wq, 3) : _mm_mulhi_epu16(wq, _mm_set1_epi16(12288));
        const __m128i pos_m = _mm_cmpgt_epi16(m, zero);
        m = _mm_sub_epi16(m, _mm_and_si128(_mm_and_si128(_mm_andnot_si128(m, one), pos_m), mpeg1));
        const __m128i neg = _mm_cmplt_epi16(c, zero);
        const __m128i r1 = _mm_min_epi16(m, _mm_sub_epi16(top, neg));
        const __m128i ca = _mm_sub_epi16(_mm_xor_si128(c, neg), neg);   /* |c|, unsigned */
        const __m128i closer = _mm_andnot_si128(
            _mm_cmpeq_epi16(_mm_subs_epu16(_mm_adds_epu16(ca, ca), r1), zero),
            _mm_cmpgt_epi16(r1, zero));
        const __m128i has = _mm_or_si128(_mm_andnot_si128(_mm_cmpeq_epi16(l, zero), _mm_set1_epi16(-1)),
                                         _mm_and_si128(closer, one_allowed));
        cand |= (uint64_t)(_mm_movemask_epi8(_mm_packs_epi16(has, zero)) & 0xFF) << i;
        const __m128i lo = _mm_mullo_epi16(c, c), hi = _mm_mulhi_epi16(c, c);
        const __m128i sq0 = _mm_unpacklo_epi16(lo, hi), sq1 = _mm_unpackhi_epi16(lo, hi);
        _mm_storeu_si128((__m128i *)(sq + i), sq0);
        _mm_storeu_si128((__m128i *)(sq + i + 4), sq1);
        /* squares are below 2^31: widened with zeros */
        const __m128i pair = _mm_add_epi64(_mm_unpacklo_epi32(sq0, zero), _mm_unpackhi_epi32(sq0, zero));
        total = _mm_add_epi64(total, _mm_add_epi64(pair, _mm_add_epi64(_mm_unpacklo_epi32(sq1, zero),
                                                                        _mm_unpackhi_epi32(sq1, zero))));
    }
    int64_t halves[2];
    _mm_storeu_si128((__m128i *)halves, total);
    *sq_sum = halves[0] + halves[1];
    return cand;
#else
    return mpe_trellis_candidates_c(level, coef, p, sq, sq_sum);
#endif
}

#if defined(MPE_ARCH_X86)
#define AVX2 __attribute__((target("avx2")))

/* mpe_trellis_candidates' SSE2 steps on sixteen coefficients; the squares
 * as pmaddwd of each zero-extended coefficient with itself (c^2 + 0^2,
 * below 2^31), their sum by pairs as unsigned 32-bit (at most 2^31) widened
 * into 64-bit lanes; the mask of two steps packed in order, one movemask. */
AVX2 uint64_t mpe_trellis_candidates_avx2(const int16_t level[64], const int16_t coef[64],
                                          const MpeTrellisParams *p, int32_t sq[64], int64_t *sq_sum)
{
    if (p->qscale > 128)
        return mpe_trellis_candidates_c(level, coef, p, sq, sq_sum);
    const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi16(1);
    const __m256i q = _mm256_set1_epi16((int16_t)p->qscale), top = _mm256_set1_epi16(2047);
    const __m256i mpeg1 = p->mpeg2 ? zero : _mm256_set1_epi16(-1);
    const __m256i one_allowed = p->max_level >= 1 ? _mm256_set1_epi16(-1) : zero;
    uint64_t cand = 0;
    __m256i total = zero;   /* four int64 lanes */
    __m256i has_prev = zero;
    for (int i = 0; i < 64; i += 16) {
        const __m256i c = _mm256_loadu_si256((const __m256i *)(coef + i));
        const __m256i l = _mm256_loadu_si256((const __m256i *)(level + i));
        const __m256i w = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(p->matrix + i)));
        const __m256i wq = _mm256_mullo_epi16(w, q);
        __m256i m = p->intra ? _mm256_srli_epi16(wq, 3) : _mm256_mulhi_epu16(wq, _mm256_set1_epi16(12288));
        const __m256i pos_m = _mm256_cmpgt_epi16(m, zero);
        m = _mm256_sub_epi16(m, _mm256_and_si256(_mm256_and_si256(_mm256_andnot_si256(m, one), pos_m), mpeg1));
        const __m256i neg = _mm256_cmpgt_epi16(zero, c);
        const __m256i r1 = _mm256_min_epi16(m, _mm256_sub_epi16(top, neg));
        const __m256i ca = _mm256_abs_epi16(c);   /* |c|, unsigned: -32768 gives 32768 */
        const __m256i closer = _mm256_andnot_si256(
            _mm256_cmpeq_epi16(_mm256_subs_epu16(_mm256_adds_epu16(ca, ca), r1), zero),
            _mm256_cmpgt_epi16(r1, zero));
        const __m256i has = _mm256_or_si256(_mm256_xor_si256(_mm256_cmpeq_epi16(l, zero), _mm256_set1_epi16(-1)),
                                            _mm256_and_si256(closer, one_allowed));
        if (i & 16) {
            /* bytes: prev 0-7, this 0-7 | prev 8-15, this 8-15 -> in order */
            const __m256i packed = _mm256_permute4x64_epi64(_mm256_packs_epi16(has_prev, has), 0xD8);
            cand |= (uint64_t)(uint32_t)_mm256_movemask_epi8(packed) << (i - 16);
        }
        has_prev = has;
        const __m256i sq0 = _mm256_madd_epi16(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(c)),
                                              _mm256_cvtepu16_epi32(_mm256_castsi256_si128(c)));
        const __m256i c_hi = _mm256_cvtepu16_epi32(_mm256_extracti128_si256(c, 1));
        const __m256i sq1 = _mm256_madd_epi16(c_hi, c_hi);
        _mm256_storeu_si256((__m256i *)(sq + i), sq0);
        _mm256_storeu_si256((__m256i *)(sq + i + 8), sq1);
        const __m256i pair = _mm256_add_epi32(sq0, sq1);   /* unsigned, at most 2^31 */
        total = _mm256_add_epi64(total, _mm256_add_epi64(_mm256_cvtepu32_epi64(_mm256_castsi256_si128(pair)),
                                                         _mm256_cvtepu32_epi64(_mm256_extracti128_si256(pair, 1))));
    }
    int64_t halves[2];
    _mm_storeu_si128((__m128i *)halves,
                     _mm_add_epi64(_mm256_castsi256_si128(total), _mm256_extracti128_si256(total, 1)));
    *sq_sum = halves[0] + halves[1];
    return cand;
}
#endif

/* The search, for one kind of block: inlined into mpe_trellis_quant once per
 * kind with intra, mpeg2 and table constant, so that the per-candidate
 * work has no tests of them left. */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline int search(int16_t level[64], const int16_t coef[64], const MpeTrellisParams *p,
                         const int intra, const int mpeg2, const int table)
{
    const int start = intra ? 1 : 0;
    const int64_t lambda = p->lambda;
    const int mpeg1 = !mpeg2;
    const int64_t eob = lambda * bs_vlc_dct_eob[table].len;
    const uint8_t *scan = block_scan(p);
    int64_t zsum[65];                /* zsum[i]: error of scan positions start..i-1 left at 0 */
    uint8_t from[65];                /* by state (see the top of the file) */
    int16_t chosen[65];              /* the level (signed) of the state's last position */
    uint8_t states[65];              /* the live states, oldest first */
    int64_t adj[65];                 /* by live state: its best J less the zeros before it */
    int n_states = 0;

    states[n_states] = (uint8_t)start;
    adj[n_states++] = 0;

    /* Per coefficient, in raster order: its square and whether it has a
     * candidate (mpe_trellis_candidates); then the positions with a
     * candidate as a mask in scan order, and the zeros' prefix sums.  A
     * block without any (after an intra block's DC) keeps its levels: all
     * zero. */
    int32_t sq_r[64];
    int64_t sq_total;
    const uint64_t cand = p->candidates ? p->candidates(level, coef, p, sq_r, &sq_total)
                                        : mpe_trellis_candidates(level, coef, p, sq_r, &sq_total);
    if (!(cand & (intra ? ~(uint64_t)1 : ~(uint64_t)0)))
        return 0;
    /* The prefix sums are needed up to the last candidate in scan order:
     * beyond it only their total, which is the raster one's (less an intra
     * block's DC).  The standard scans (scan[0] = 0) have inverses at hand;
     * any other scan is walked to the end. */
    const uint8_t *inv = scan == mpe_zigzag           ? mpe_zigzag_inv
                         : scan == mpe_alternate_scan ? mpe_alternate_scan_inv
                                                      : NULL;
    uint64_t cand_scan = 0;   /* bit i: scan position i has a candidate */
    int last_i = 63;
    if (inv) {
        for (uint64_t m = cand & (intra ? ~(uint64_t)1 : ~(uint64_t)0); m; m &= m - 1)
            cand_scan |= (uint64_t)1 << inv[__builtin_ctzll(m)];
        last_i = 63 - __builtin_clzll(cand_scan);
    } else {
        for (int i = start; i < 64; i++)
            cand_scan |= (cand >> scan[i] & 1) << i;
    }
    int64_t z = 0;
    zsum[start] = 0;
    for (int i = start; i <= last_i; i++) {
        z += (int64_t)sq_r[scan[i]] * MPE_TRELLIS_ONE;
        zsum[i + 1] = z;
    }
    zsum[64] = (sq_total - (intra ? sq_r[scan[0]] : 0)) * MPE_TRELLIS_ONE;

    /* COST_INF / 2 plus any J stays below COST_INF and above every real J */
    const int64_t no_cand = COST_INF / 2;
    for (uint64_t m = cand_scan; m; m &= m - 1) {
        const int i = __builtin_ctzll(m), pos = scan[i], c = coef[pos];
        const int lp = level[pos] < 0 ? -level[pos] : level[pos];
        const int ca = c < 0 ? -c : c, wq = p->matrix[pos] * p->qscale;
        /* lp >= 1: lp, then lp - 1 when >= 1; lp == 0: 1 (the dead zone).
         * The sign is the coefficient's, so a candidate's error is that of
         * the magnitudes.  A missing second candidate costs no_cand. */
        const int a1 = lp ? lp : 1, a2 = lp >= 2 ? lp - 1 : 1;
        const int r1 = saturate_mag(recon_mag(a1, wq, intra, mpeg1), c < 0);
        const int r2 = saturate_mag(recon_mag(a2, wq, intra, mpeg1), c < 0);
        const int64_t base1 = zsum[i] + sq(ca - r1) * MPE_TRELLIS_ONE;
        const int64_t base2 = lp >= 2 ? zsum[i] + sq(ca - r2) * MPE_TRELLIS_ONE : no_cand;
        const CandCodes cc1 = cand_codes(table, mpeg2, a1), cc2 = cand_codes(table, mpeg2, a2);

        /* Each candidate's first minimum over the live states, oldest
         * first, the start state's run possibly taking the non-intra '1s'
         * code; the second candidate only when strictly lower.  That is
         * the choice of a search that tries the candidates in turn, each
         * over the states, and keeps a J only when strictly lower. */
        const int first = !intra && i == start;
        int64_t b1 = base1 + lambda * (first && a1 == 1 ? 2 : cand_bits(&cc1, i - start));
        int64_t b2 = base2 + lambda * (first && a2 == 1 ? 2 : cand_bits(&cc2, i - start));
        int f1 = start, f2 = start;
        for (int s = 1; s < n_states; s++) {
            const int run = i - states[s];
            const int64_t j1 = adj[s] + base1 + lambda * cand_bits(&cc1, run);
            const int64_t j2 = adj[s] + base2 + lambda * cand_bits(&cc2, run);
            f1 = j1 < b1 ? states[s] : f1;
            b1 = j1 < b1 ? j1 : b1;
            f2 = j2 < b2 ? states[s] : f2;
            b2 = j2 < b2 ? j2 : b2;
        }
        const int second = b2 < b1;
        const int64_t b = second ? b2 : b1;
        const int a = second ? a2 : a1;
        chosen[i + 1] = (int16_t)(c < 0 ? -a : a);
        from[i + 1] = (uint8_t)(second ? f2 : f1);
        /* An earlier state P whose cost so far, with its zeros up to here,
         * is higher than this one's can never win again: from P every
         * later code has a longer run, and no code gets shorter with a
         * longer run (test_trellis checks that of both tables and the
         * escapes), so this state reaches everything P reaches for less.
         * On a tie P stays, so the result is the unpruned search's, tie
         * order included.  The start state stays: it is also the empty
         * block's end.  So the live states after the start have
         * non-decreasing adj oldest first, and those kept are a prefix. */
        const int64_t adj_new = b - zsum[i + 1];
        int kept = 1;
        for (int s = 1; s < n_states; s++)
            kept += adj[s] <= adj_new;
        n_states = kept;
        states[n_states] = (uint8_t)(i + 1);
        adj[n_states++] = adj_new;
    }

    /* the last state: nothing coded (a non-intra block then sends nothing) or
     * a last non-zero level, each with the zeroed tail and the EOB */
    int last = start;
    int64_t b = zsum[64] + (intra ? eob : 0);
    for (int s = 1; s < n_states; s++) {
        const int64_t j = adj[s] + zsum[64] + eob;
        if (j < b) {
            b = j;
            last = states[s];
        }
    }

    const int16_t dc = level[0];
    mpe_block_zero(level);
    if (intra)
        level[0] = dc;
    int nz = 0;
    for (int st = last; st != start; st = from[st]) {
        level[scan[st - 1]] = chosen[st];
        nz++;
    }
    return nz;
}

int mpe_trellis_quant(int16_t level[64], const int16_t coef[64], const MpeTrellisParams *p)
{
    if (!p->intra)
        return p->mpeg2 ? search(level, coef, p, 0, 1, BS_DCT_TABLE_ZERO)
                        : search(level, coef, p, 0, 0, BS_DCT_TABLE_ZERO);
    if (p->table != BS_DCT_TABLE_ZERO)
        return p->mpeg2 ? search(level, coef, p, 1, 1, p->table) : search(level, coef, p, 1, 0, p->table);
    return p->mpeg2 ? search(level, coef, p, 1, 1, BS_DCT_TABLE_ZERO)
                    : search(level, coef, p, 1, 0, BS_DCT_TABLE_ZERO);
}
