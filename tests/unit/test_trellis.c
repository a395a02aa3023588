/* test_trellis.c — the trellis quantiser (dsp/trellis.h) against brute
 * force and against the project's own writer and inverse quantisers:
 *  - its per-coefficient reconstruction is mpe_dequant_intra/inter's;
 *  - its bit count is what bs_write_intra/inter_block writes;
 *  - on blocks with few candidate positions, an exhaustive search over the
 *    documented candidate set finds the same minimum J;
 *  - on realistic blocks its J never exceeds the plain quantiser's;
 *  - lambda 0 keeps the plain levels' distortion (never worse);
 *  - its levels, ties included, are those of the plain unpruned search
 *    the header describes (the streams depend on them, not only on J). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bitstream/mpeg12.h"
#include "bitstream/vlc.h"
#include "dsp/quant.h"
#include "dsp/trellis.h"
#include "common/cpu.h"
#include "dsp/dsp.h"
#include "encoder/slice.h"
#include "tests/test.h"

static int rand_range(TestRng *r, int lo, int hi)
{
    return lo + (int)(test_rand(r) % (unsigned)(hi - lo + 1));
}

/* The six kinds of block: MPEG-1/2 x intra (tables zero and one) / non-intra. */
static void setup(MpeTrellisParams *p, int kind, int qscale, int64_t lambda)
{
    memset(p, 0, sizeof(*p));
    p->mpeg2 = kind & 1;
    p->intra = (kind >> 1) != 0;
    p->table = (kind >> 1) == 2 && p->mpeg2 ? BS_DCT_TABLE_ONE : BS_DCT_TABLE_ZERO;
    p->qscale = qscale;
    p->matrix = p->intra ? mpe_default_intra_matrix : mpe_default_inter_matrix;
    p->max_level = p->mpeg2 ? 2047 : 255;
    p->lambda = lambda;
}

static int plain_quant(int16_t level[64], const int16_t coef[64], const MpeTrellisParams *p)
{
    return p->intra ? mpe_quant_intra(level, coef, p->qscale, p->matrix, p->max_level)
                    : mpe_quant_inter(level, coef, p->qscale, p->matrix, p->max_level);
}

/* A block shaped like a DCT's output: large at low frequencies, falling
 * off with the scan position (scale picks how fast). */
static void random_block(TestRng *r, int16_t coef[64], int scale)
{
    for (int i = 0; i < 64; i++) {
        int pos = mpe_zigzag[i];
        int amp = scale * 64 / (4 + 2 * i);
        int v = amp ? rand_range(r, -amp, amp) : 0;
        if (rand_range(r, 0, 3) == 0)
            v /= 4;
        coef[pos] = (int16_t)(v < -2048 ? -2048 : v > 2047 ? 2047 : v);
    }
    coef[0] = (int16_t)rand_range(r, 0, 2040);
}

static void t_recon_matches_dequant(TestCtx *t)
{
    TestRng r = { 0x7e11150 };
    for (int kind = 0; kind < 6; kind++) {
        for (int iter = 0; iter < 400; iter++) {
            MpeTrellisParams p;
            int16_t level[64], rec[64];
            setup(&p, kind, rand_range(&r, 1, 31), 0);
            for (int i = 0; i < 64; i++)
                level[i] = (int16_t)(rand_range(&r, 0, 2) ? 0 : rand_range(&r, -p.max_level, p.max_level));
            level[0] = p.intra ? (int16_t)rand_range(&r, 0, 255) : level[0];
            if (p.intra)
                mpe_dequant_intra(rec, level, p.qscale, p.matrix, p.mpeg2);
            else
                mpe_dequant_inter(rec, level, p.qscale, p.matrix, p.mpeg2);
            for (int pos = p.intra ? 1 : 0; pos < 64; pos++) {
                int mine = mpe_trellis_recon(level[pos], pos, &p);
                /* MPEG-2 mismatch control may move F[7][7] by one */
                int ok = p.mpeg2 && pos == 63 ? abs(mine - rec[pos]) <= 1 : mine == rec[pos];
                CHECK(t, ok, "kind %d q %d pos %d level %d: %d, dequant %d", kind, p.qscale, pos,
                      level[pos], mine, rec[pos]);
            }
        }
    }
}

static void t_bits_match_writer(TestCtx *t)
{
    TestRng r = { 0xb175 };
    BsWriter bw;
    if (bs_writer_init(&bw, 4096) != 0) {
        test_skip(t, "no memory");
        return;
    }
    for (int kind = 0; kind < 6; kind++) {
        for (int iter = 0; iter < 2000; iter++) {
            MpeTrellisParams p;
            int16_t level[64], scan[64];
            setup(&p, kind, 1, 0);
            int density = rand_range(&r, 1, 8), big = rand_range(&r, 0, 5) == 0;
            for (int i = 0; i < 64; i++) {
                int a = rand_range(&r, 1, big ? p.max_level : 6);
                level[i] = (int16_t)(rand_range(&r, 0, density) ? 0 : rand_range(&r, 0, 1) ? a : -a);
            }
            if (p.intra)
                level[0] = 128;
            else if (!rand_range(&r, 0, 3))
                level[0] = (int16_t)(rand_range(&r, 0, 1) ? 1 : -1);   /* the '1s' case */
            int nz = 0;
            for (int i = p.intra ? 1 : 0; i < 64; i++)
                nz += level[i] != 0;
            if (!p.intra && !nz)
                continue;   /* an empty non-intra block is never written */
            p.scan = p.mpeg2 && (iter & 1) ? mpe_alternate_scan : NULL;
            for (int i = 0; i < 64; i++)
                scan[i] = level[(p.scan ? p.scan : mpe_zigzag)[i]];
            bs_writer_reset(&bw);
            if (p.intra)
                bs_write_intra_block(&bw, scan, 0, 0, p.mpeg2, p.table);
            else
                bs_write_inter_block(&bw, scan, p.mpeg2);
            /* dc_diff 0 is dct_dc_size_luminance 0, '100' */
            int written = (int)bs_bit_count(&bw) - (p.intra ? 3 : 0);
            int counted = mpe_trellis_block_bits(level, &p);
            CHECK(t, written == counted, "kind %d iter %d: writer %d bits, model %d", kind, iter,
                  written, counted);
            if (p.intra) {   /* both tables at once, as the writer would spend them */
                int both[2];
                mpe_trellis_intra_bits_both(level, &p, both);
                int from_scan[2];   /* the slice coder's count, from the scan order */
                mpe_trellis_intra_bits_both_scan(scan, p.mpeg2, from_scan);
                CHECK(t, from_scan[0] == both[0] && from_scan[1] == both[1],
                      "kind %d iter %d: from the scan order %d, %d, from the raster %d, %d", kind,
                      iter, from_scan[0], from_scan[1], both[0], both[1]);
                bs_writer_reset(&bw);
                bs_write_intra_block(&bw, scan, 0, 0, p.mpeg2, !p.table);
                CHECK(t, both[p.table] == counted && both[!p.table] == (int)bs_bit_count(&bw) - 3,
                      "kind %d iter %d: both tables %d, %d vs writer %d (table %d), %d", kind, iter,
                      both[0], both[1], counted, p.table, (int)bs_bit_count(&bw) - 3);
            }
        }
    }
    bs_writer_free(&bw);
}

/* trellis.h's candidate set, written again from the header's words. */
static int candidates(const int16_t coef[64], const int16_t plain[64], int pos,
                      const MpeTrellisParams *p, int out[3])
{
    int n = 0, c = coef[pos], lp = abs(plain[pos]), s = c < 0 ? -1 : 1;
    out[n++] = 0;
    if (lp >= 1) {
        out[n++] = s * lp;
        if (lp >= 2)
            out[n++] = s * (lp - 1);
    } else if (c) {
        int64_t d1 = (int64_t)(c - mpe_trellis_recon(s, pos, p)) * (c - mpe_trellis_recon(s, pos, p));
        if (d1 < (int64_t)c * c)
            out[n++] = s;
    }
    return n;
}

static void t_brute_force(TestCtx *t)
{
    TestRng r = { 0xb2f7e };
    int tried = 0;
    for (int kind = 0; kind < 6; kind++) {
        for (int iter = 0; iter < 1500; iter++) {
            MpeTrellisParams p;
            int16_t coef[64] = { 0 }, plain[64], lev[64], best_lev[64];
            int q = rand_range(&r, 1, 20);
            setup(&p, kind, q, mpe_trellis_lambda(q, rand_range(&r, 0, 3000)));
            /* few non-zero coefficients, small values, anywhere (long runs
             * and escapes included) */
            int n = rand_range(&r, 1, 6);
            for (int k = 0; k < n; k++) {
                int pos = rand_range(&r, p.intra ? 1 : 0, 63);
                int step = p.qscale * p.matrix[pos] / 8 + 1;
                int big = rand_range(&r, 0, 6) == 0 ? 45 : 4;
                int v = rand_range(&r, 0, big * step);
                coef[pos] = (int16_t)(rand_range(&r, 0, 1) ? v : -v);
            }
            if (p.intra)
                coef[0] = (int16_t)rand_range(&r, 0, 2040);
            plain_quant(plain, coef, &p);

            int cand[64][3], nc[64], pos_list[64], np = 0;
            for (int pos = 0; pos < 64; pos++) {
                nc[pos] = 1;
                cand[pos][0] = 0;
                if (pos == 0 && p.intra)
                    continue;
                nc[pos] = candidates(coef, plain, pos, &p, cand[pos]);
                if (nc[pos] > 1)
                    pos_list[np++] = pos;
            }
            if (np > 7)
                continue;
            int64_t best = INT64_MAX;
            int combos = 1;
            for (int k = 0; k < np; k++)
                combos *= nc[pos_list[k]];
            memcpy(lev, plain, sizeof(lev));
            for (int c = 0; c < combos; c++) {
                int x = c;
                for (int k = 0; k < np; k++) {
                    int pos = pos_list[k];
                    lev[pos] = (int16_t)cand[pos][x % nc[pos]];
                    x /= nc[pos];
                }
                for (int pos = p.intra ? 1 : 0; pos < 64; pos++)
                    if (nc[pos] == 1)
                        lev[pos] = 0;
                int64_t j = mpe_trellis_cost(lev, coef, &p);
                if (j < best) {
                    best = j;
                    memcpy(best_lev, lev, sizeof(lev));
                }
            }
            int16_t tl[64];
            memcpy(tl, plain, sizeof(tl));
            int nz = mpe_trellis_quant(tl, coef, &p);
            int64_t tj = mpe_trellis_cost(tl, coef, &p);
            int real_nz = 0;
            for (int pos = p.intra ? 1 : 0; pos < 64; pos++)
                real_nz += tl[pos] != 0;
            CHECK(t, tj == best, "kind %d iter %d q %d lambda %lld: trellis J %lld, brute force %lld",
                  kind, iter, q, (long long)p.lambda, (long long)tj, (long long)best);
            CHECK(t, nz == real_nz, "returned %d non-zero, block has %d", nz, real_nz);
            CHECK(t, !p.intra || tl[0] == plain[0], "intra DC changed");
            (void)best_lev;
            tried++;
        }
    }
    CHECK(t, tried > 5000, "only %d blocks searched", tried);
}

static void t_never_worse_than_plain(TestCtx *t)
{
    TestRng r = { 0x91a1 };
    for (int kind = 0; kind < 6; kind++) {
        for (int iter = 0; iter < 3000; iter++) {
            MpeTrellisParams p;
            int16_t coef[64], plain[64], tl[64];
            int q = rand_range(&r, 1, 31);
            setup(&p, kind, q, mpe_trellis_lambda(q, rand_range(&r, 0, 2000)));
            random_block(&r, coef, rand_range(&r, 1, 60));
            plain_quant(plain, coef, &p);
            memcpy(tl, plain, sizeof(tl));
            mpe_trellis_quant(tl, coef, &p);
            int64_t jp = mpe_trellis_cost(plain, coef, &p), jt = mpe_trellis_cost(tl, coef, &p);
            CHECK(t, jt <= jp, "kind %d iter %d q %d: trellis J %lld > plain %lld", kind, iter, q,
                  (long long)jt, (long long)jp);
            for (int pos = 0; pos < 64; pos++)
                CHECK(t, abs(tl[pos]) <= p.max_level && (tl[pos] == 0 || (tl[pos] < 0) == (coef[pos] < 0) || pos == 0),
                      "level %d at %d out of range or of the wrong sign", tl[pos], pos);
        }
    }
}

/* One run/level code's bits as mpe_trellis_block_bits counts them, from
 * blocks holding just that code (after a level 1 at the first scan position
 * unless first); cached, as the reference search below asks often. */
static int code_bits(int *cache, const MpeTrellisParams *p, int first, int run, int a)
{
    int *slot = &cache[(first * 64 + run) * 2048 + a];
    if (*slot < 0) {
        const int start = p->intra ? 1 : 0;
        const uint8_t *scan = p->scan ? p->scan : mpe_zigzag;   /* the bits are the scan's own */
        int16_t one[64] = { 0 }, two[64] = { 0 };
        int eob = bs_vlc_dct_eob[p->intra ? p->table : BS_DCT_TABLE_ZERO].len;
        if (first) {
            two[scan[start + run]] = (int16_t)a;
            *slot = mpe_trellis_block_bits(two, p) - eob;
        } else {
            one[scan[start]] = two[scan[start]] = 1;
            two[scan[start + 1 + run]] = (int16_t)a;
            *slot = mpe_trellis_block_bits(two, p) - mpe_trellis_block_bits(one, p);
        }
    }
    return *slot;
}

/* The search as trellis.h states it and nothing more: every candidate in
 * the header's order at every position, over every earlier state in scan
 * order, no pruning, a J kept only when strictly lower. */
static void reference_search(int16_t out[64], const int16_t coef[64], const int16_t plain[64],
                             const MpeTrellisParams *p, int *cache)
{
    const int start = p->intra ? 1 : 0;
    const uint8_t *scan = p->scan ? p->scan : mpe_zigzag;
    const int eob = bs_vlc_dct_eob[p->intra ? p->table : BS_DCT_TABLE_ZERO].len;
    int64_t best[65], zero[65];
    int from[65], chosen[65], live[65], n_live = 0;

    zero[start] = 0;
    for (int i = start; i < 64; i++)
        zero[i + 1] = zero[i] + (int64_t)coef[scan[i]] * coef[scan[i]] * MPE_TRELLIS_ONE;
    best[start] = 0;
    live[n_live++] = start;
    for (int i = start; i < 64; i++) {
        const int pos = scan[i];
        int cand[3], nc = candidates(coef, plain, pos, p, cand);
        if (nc == 1)
            continue;
        best[i + 1] = INT64_MAX;
        for (int k = 1; k < nc; k++) {
            const int64_t e = coef[pos] - mpe_trellis_recon(cand[k], pos, p);
            for (int s = 0; s < n_live; s++) {
                const int prev = live[s];
                const int bits = code_bits(cache, p, prev == start, i - prev, abs(cand[k]));
                const int64_t j = best[prev] + zero[i] - zero[prev] + e * e * MPE_TRELLIS_ONE + p->lambda * bits;
                if (j < best[i + 1]) {
                    best[i + 1] = j;
                    from[i + 1] = prev;
                    chosen[i + 1] = cand[k];
                }
            }
        }
        live[n_live++] = i + 1;
    }
    int last = start;
    int64_t b = zero[64] + (p->intra ? p->lambda * eob : 0);
    for (int s = 1; s < n_live; s++) {
        const int64_t j = best[live[s]] + zero[64] - zero[live[s]] + p->lambda * eob;
        if (j < b) {
            b = j;
            last = live[s];
        }
    }
    memcpy(out, plain, 64 * sizeof(out[0]));
    for (int i = start; i < 64; i++)
        out[scan[i]] = 0;
    for (int st = last; st != start; st = from[st])
        out[scan[st - 1]] = (int16_t)chosen[st];
}

/* Not only the same J as the reference: the same levels, ties included, so
 * that a faster search never changes a stream. */
static void t_same_levels_as_reference(TestCtx *t)
{
    TestRng r = { 0x5a3e1e };
    int *cache = malloc(2 * 64 * 2048 * sizeof(*cache));
    if (!cache) {
        test_skip(t, "no memory");
        return;
    }
    for (int kind = 0; kind < 6; kind++) {
        MpeTrellisParams p;
        setup(&p, kind, 1, 0);
        memset(cache, 0xff, 2 * 64 * 2048 * sizeof(*cache));
        for (int iter = 0; iter < 1500; iter++) {
            int16_t coef[64], plain[64], mine[64], ref[64];
            int q = rand_range(&r, 1, 31);
            /* lambda 0 ties often; large lambdas empty blocks */
            int c_milli = rand_range(&r, 0, 4) ? rand_range(&r, 0, 3000) : rand_range(&r, 0, 1) * 20000;
            p.qscale = q;
            p.lambda = mpe_trellis_lambda(q, c_milli);
            /* MPEG-2's alternate_scan: the runs are counted in its order */
            p.scan = p.mpeg2 && (iter & 1) ? mpe_alternate_scan : NULL;
            random_block(&r, coef, rand_range(&r, 1, 200));
            plain_quant(plain, coef, &p);
            memcpy(mine, plain, sizeof(mine));
            int nz = mpe_trellis_quant(mine, coef, &p);
            reference_search(ref, coef, plain, &p, cache);
            int real_nz = 0;
            for (int pos = p.intra ? 1 : 0; pos < 64; pos++)
                real_nz += ref[pos] != 0;
            CHECK(t, !memcmp(mine, ref, sizeof(ref)) && nz == real_nz,
                  "kind %d iter %d q %d lambda %lld%s: levels differ from the reference search", kind,
                  iter, q, (long long)p.lambda, p.scan ? " alternate scan" : "");
        }
    }
    free(cache);
}

/* The trellis drops a state once a later one costs no more so far; that is
 * exact only if no code gets shorter when its run gets longer.  Checked for
 * every kind of block, every level and run, through single-coefficient
 * blocks (their EOB is the same for every run). */
static void t_bits_monotone_in_run(TestCtx *t)
{
    for (int kind = 0; kind < 6; kind++) {
        MpeTrellisParams p;
        setup(&p, kind, 1, 0);
        for (int a = 1; a <= p.max_level; a++) {
            int prev = 0;
            for (int run = 0; run + (p.intra ? 1 : 0) < 64; run++) {
                int16_t level[64] = { 0 };
                level[mpe_zigzag[run + (p.intra ? 1 : 0)]] = (int16_t)a;
                int bits = mpe_trellis_block_bits(level, &p);
                CHECK(t, bits >= prev, "kind %d level %d: run %d costs %d bits, run %d %d", kind, a,
                      run, bits, run - 1, prev);
                prev = bits;
            }
        }
    }
}

/* The intra DC choice: luma DC differences 0 and 1 cost 3 bits, 2..3 4
 * bits, 4..7 6 bits (Table B.12 + the differential). */
static void t_intra_dc(TestCtx *t)
{
    const int64_t q16 = mpe_trellis_lambda(16, 640), q1 = mpe_trellis_lambda(1, 640);
    /* block mean 102.4 (f00 819): nearest 102, two above the predictor 100;
     * 101 costs a bit less for (819 - 808)^2 - (819 - 816)^2 = 112 more error */
    int l = mpe_trellis_intra_dc(819, 102, 100, 0, 0, q16);
    CHECK(t, l == 101, "q 16: level %d, expected 101 (one bit for 112 of error)", l);
    l = mpe_trellis_intra_dc(819, 102, 100, 0, 0, q1);
    CHECK(t, l == 102, "q 1: level %d, expected the nearest 102", l);
    /* no bits to save: 0 and 1 away cost the same, the nearest stays */
    l = mpe_trellis_intra_dc(812, 102, 101, 0, 0, q16 * 100);
    CHECK(t, l == 102, "equal bits: level %d, expected the nearest 102", l);
    /* 4 away (6 bits) -> 3 away (4 bits) from below; chroma codes differ */
    l = mpe_trellis_intra_dc(8 * 104 - 3, 104, 100, 1, 0, q16);
    CHECK(t, l == 103, "chroma 4 away: level %d, expected 103", l);
    /* 10-bit precision (a step of 2): 4 away -> 3 away saves 2 bits for 8 of error */
    l = mpe_trellis_intra_dc(2047, 1023, 1019, 0, 2, q16);
    CHECK(t, l == 1022, "10 bits: level %d, expected 1022", l);
    l = mpe_trellis_intra_dc(2047, 1023, 1020, 0, 2, q16 * 100);
    CHECK(t, l == 1023, "10 bits, equal bits: level %d, expected the nearest 1023", l);
}

/* mpe_trellis_candidates (SSE2 where built) against its C reference, on
 * random blocks over the whole int16 range, random matrices, every kind,
 * quantisers up to 140 (beyond 128 the fast one takes the C loop). */
static void t_candidates_vs_c(TestCtx *t)
{
    TestRng r = { 0xca4d };
    for (int iter = 0; iter < 40000; iter++) {
        MpeTrellisParams p;
        uint8_t matrix[64];
        int16_t level[64], coef[64];
        int32_t sq_c[64], sq_f[64];
        setup(&p, iter % 6, rand_range(&r, 1, 140), 0);
        if (iter & 8) {
            for (int i = 0; i < 64; i++)
                matrix[i] = (uint8_t)rand_range(&r, 1, 255);
            p.matrix = matrix;
        }
        if (!rand_range(&r, 0, 15))
            p.max_level = 0;
        const int span = (iter >> 4) % 3 == 0 ? 32767 : (iter >> 4) % 3 == 1 ? 2048 : 60;
        for (int i = 0; i < 64; i++) {
            coef[i] = (int16_t)rand_range(&r, -span - (span == 32767), span);
            level[i] = (int16_t)(rand_range(&r, 0, 3) ? 0 : rand_range(&r, -3, 3));
        }
        int64_t sum_c, sum_f;
        const uint64_t c = mpe_trellis_candidates_c(level, coef, &p, sq_c, &sum_c);
        const uint64_t f = mpe_trellis_candidates(level, coef, &p, sq_f, &sum_f);
        CHECK(t, c == f && memcmp(sq_c, sq_f, sizeof(sq_c)) == 0 && sum_c == sum_f,
              "iter %d kind %d q %d: mask %016llx vs reference %016llx", iter, iter % 6, p.qscale,
              (unsigned long long)f, (unsigned long long)c);
        if (t->case_failed)
            return;
    }
}

/* --intra-vlc auto's guess summed in bands of macroblock rows (the
 * encoder's pool) is the guess over the whole picture: every table's bits
 * the same, on random pictures of odd sizes and quantisers, bands cut
 * unevenly and added in reverse order. */
static void t_guess_bands(TestCtx *t)
{
    TestRng r = { 0x6E55ULL };
    MpeDsp dsp;
    mpe_dsp_init(&dsp, mpe_cpu_flags());
    for (int k = 0; k < 8 && !t->case_failed; k++) {
        const int w = rand_range(&r, 16, 200), h = rand_range(&r, 16, 150), q = rand_range(&r, 1, 31);
        MpePicture pic;
        MpeQuantizer quant;
        if (mpe_picture_alloc(&pic, w, h) < 0) {
            CHECK(t, 0, "out of memory");
            return;
        }
        for (int c = 0; c < 3; c++)
            for (int i = 0; i < pic.stride[c] * pic.plane_h[c]; i++)
                pic.plane[c][i] = (uint8_t)(k & 1 ? (int)(test_rand(&r) & 255) : 100 + (int)(test_rand(&r) % 40));
        mpe_quantizer_init(&quant, q, mpe_default_intra_matrix, mpe_default_inter_matrix, 2047);
        const MpePictureCtx pc = { .orig = &pic, .dsp = &dsp, .quant = &quant, .scan = mpe_zigzag };
        int64_t whole[2] = { 0, 0 }, banded[2] = { 0, 0 };
        mpe_slice_intra_table_bits(&pc, 0, pic.mb_height, whole);
        const int cut = pic.mb_height / 3;
        mpe_slice_intra_table_bits(&pc, cut, pic.mb_height, banded);
        mpe_slice_intra_table_bits(&pc, 0, cut, banded);
        CHECK(t, whole[0] == banded[0] && whole[1] == banded[1] && whole[0] > 0,
              "%dx%d q %d: bits %lld/%lld whole, %lld/%lld in bands", w, h, q, (long long)whole[0],
              (long long)whole[1], (long long)banded[0], (long long)banded[1]);
        CHECK(t, mpe_slice_guess_intra_table(&pc) == (whole[1] < whole[0]), "%dx%d: guess", w, h);
        mpe_picture_free(&pic);
    }
}

int main(void)
{
    TestCtx t;
    test_init(&t, "test_trellis");
    test_run(&t, "intra_dc", t_intra_dc);
    test_run(&t, "candidates_vs_c", t_candidates_vs_c);
    test_run(&t, "recon_matches_dequant", t_recon_matches_dequant);
    test_run(&t, "bits_match_block_writer", t_bits_match_writer);
    test_run(&t, "bits_never_shorter_for_longer_run", t_bits_monotone_in_run);
    test_run(&t, "brute_force_same_minimum", t_brute_force);
    test_run(&t, "never_worse_than_plain", t_never_worse_than_plain);
    test_run(&t, "same_levels_as_reference_search", t_same_levels_as_reference);
    test_run(&t, "intra_table_guess_in_bands", t_guess_bands);
    return test_finish(&t);
}
