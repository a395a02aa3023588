/* test_dsp.c — every fast primitive against its C reference (dav1d's
 * checkasm habit): random and edge-case inputs, outputs pre-filled with the
 * same sentinel for both and compared in full (including what must stay
 * untouched), then a speed ratio printed for information.
 *
 * The variants must be IDENTICAL to the references, not close: the encoder
 * may pick any of them, and the stream may not change.  The references
 * themselves are checked against the standards elsewhere (test_dct.c for
 * IEEE 1180 and the DCT definition, test_quant.c, test_vlc.c, test_syntax.c). */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "bitstream/bitwriter.h"
#include "bitstream/mpeg12.h"
#include "common/common.h"
#include "common/cpu.h"
#include "dsp/dct.h"
#include "dsp/dsp.h"
#include "dsp/pred.h"
#include "dsp/quant.h"
#include "tests/test.h"
#include "common/timer.h"

#define GUARD 16
#define SENTINEL16 ((int16_t)0x5A5A)
#define SENTINEL8 0xA5

static int rnd(TestRng *r, int lo, int hi)
{
    return lo + (int)(test_rand(r) % (unsigned)(hi - lo + 1));
}

static int have_avx2(void)
{
    return (mpe_cpu_flags() & MPE_CPU_AVX2) != 0;
}

/* ------------------------------------------------------------------ DCT */

typedef struct DctVariant {
    const char *name;
    MpeDctFn fn;
    int needs_avx2;
    int any_int16;   /* identical for every int16 input, not just the documented range */
} DctVariant;

static const DctVariant fdct_variants[] = {
    { "fdct_fast_c", mpe_fdct_fast_c, 0, 1 },
#ifdef MPE_ARCH_X86
    { "fdct_avx2", mpe_fdct_avx2, 1, 0 },
#endif
};
static const DctVariant idct_variants[] = {
    { "idct_fast_c", mpe_idct_fast_c, 0, 1 },
#ifdef MPE_ARCH_X86
    { "idct_avx2", mpe_idct_avx2, 1, 0 },
#endif
};

/* Block kinds: what the encoder feeds (samples, residuals, sparse
 * dequantised coefficients) plus the corners of the range. */
static void make_block(TestRng *r, int16_t b[64], int kind, int lo, int hi)
{
    switch (kind % 6) {
    case 0: /* uniform over the range */
        for (int i = 0; i < 64; i++)
            b[i] = (int16_t)rnd(r, lo, hi);
        break;
    case 1: /* extremes only */
        for (int i = 0; i < 64; i++)
            b[i] = (int16_t)(test_rand(r) & 1 ? lo : hi);
        break;
    case 2: /* sparse */
        for (int i = 0; i < 64; i++)
            b[i] = (int16_t)(test_rand(r) % 8 == 0 ? rnd(r, lo, hi) : 0);
        break;
    case 3: { /* flat (DC only in the coefficient domain) */
        int v = rnd(r, lo, hi);
        for (int i = 0; i < 64; i++)
            b[i] = (int16_t)v;
        break;
    }
    case 4: /* small values, as in quiet residuals */
        for (int i = 0; i < 64; i++)
            b[i] = (int16_t)rnd(r, -3, 3);
        break;
    default: /* checkerboard of extremes: the largest high-frequency energy */
        for (int i = 0; i < 64; i++)
            b[i] = (int16_t)(((i >> 3) ^ i) & 1 ? lo : hi);
        break;
    }
}

static void check_dct(TestCtx *t, const DctVariant *v, MpeDctFn ref, int lo, int hi, int blocks,
                      unsigned long long seed)
{
    TestRng r = { seed };
    int16_t a[64 + 2 * GUARD], b[64 + 2 * GUARD];

    for (int n = 0; n < blocks; n++) {
        for (int i = 0; i < 64 + 2 * GUARD; i++)
            a[i] = SENTINEL16;
        make_block(&r, a + GUARD, n, lo, hi);
        memcpy(b, a, sizeof(a));
        ref(a + GUARD);
        v->fn(b + GUARD);
        if (memcmp(a, b, sizeof(a)) != 0) {
            int i = 0;
            while (a[i] == b[i])
                i++;
            CHECK(t, 0, "%s: block %d (kind %d, range %d..%d) differs first at %d: ref %d got %d",
                  v->name, n, n % 6, lo, hi, i - GUARD, a[i], b[i]);
            return;
        }
    }
}

static void t_dct_table_symmetry(TestCtx *t)
{
    /* the premise of every butterfly: T[u][7-x] = (-1)^u T[u][x] exactly,
     * and T[4][0] = T[0][0] */
    for (int u = 0; u < 8; u++)
        for (int x = 0; x < 4; x++)
            CHECK(t, mpe_dct_tab[u][7 - x] == (u & 1 ? -mpe_dct_tab[u][x] : mpe_dct_tab[u][x]),
                  "T[%d][%d] = %d vs T[%d][%d] = %d", u, 7 - x, mpe_dct_tab[u][7 - x], u, x,
                  mpe_dct_tab[u][x]);
    CHECK(t, mpe_dct_tab[4][0] == mpe_dct_tab[0][0], "T40 != T00");
}

static void t_fdct(TestCtx *t)
{
    for (size_t k = 0; k < sizeof(fdct_variants) / sizeof(fdct_variants[0]); k++) {
        const DctVariant *v = &fdct_variants[k];
        if (v->needs_avx2 && !have_avx2()) {
            printf("     %s: this CPU has no AVX2, not tested\n", v->name);
            continue;
        }
        check_dct(t, v, mpe_fdct_c, -256, 255, 60000, 11 + k);   /* residuals */
        check_dct(t, v, mpe_fdct_c, 0, 255, 20000, 21 + k);      /* intra samples */
        if (v->any_int16)
            check_dct(t, v, mpe_fdct_c, -32768, 32767, 20000, 31 + k);
    }
}

static void t_idct(TestCtx *t)
{
    for (size_t k = 0; k < sizeof(idct_variants) / sizeof(idct_variants[0]); k++) {
        const DctVariant *v = &idct_variants[k];
        if (v->needs_avx2 && !have_avx2()) {
            printf("     %s: this CPU has no AVX2, not tested\n", v->name);
            continue;
        }
        check_dct(t, v, mpe_idct_c, -2048, 2047, 60000, 41 + k);
        check_dct(t, v, mpe_idct_c, -40, 40, 20000, 51 + k);
        if (v->any_int16)
            check_dct(t, v, mpe_idct_c, -32768, 32767, 20000, 61 + k);
    }
}

/* The forward transform of a real picture's blocks, then the inverse of
 * their quantised coefficients: the chain the encoder runs. */
static void t_dct_chain(TestCtx *t)
{
    MpeDsp best, ref;
    MpeQuantizer q;
    TestRng r = { 77 };
    mpe_dsp_init(&best, mpe_cpu_flags());
    mpe_dsp_init_reference(&ref);
    for (int qs = 1; qs <= 31; qs += 5) {
        mpe_quantizer_init(&q, qs, mpe_default_intra_matrix, mpe_default_inter_matrix, 2047);
        for (int n = 0; n < 3000; n++) {
            int16_t a[64], b[64], la[64], lb[64];
            /* a smooth block with noise: like picture content */
            int base = rnd(&r, 0, 255), gx = rnd(&r, -8, 8), gy = rnd(&r, -8, 8);
            for (int i = 0; i < 64; i++)
                a[i] = (int16_t)MPE_CLAMP(base + gx * (i & 7) + gy * (i >> 3) + rnd(&r, -6, 6), 0,
                                          255);
            memcpy(b, a, sizeof(a));
            ref.fdct(a);
            best.fdct(b);
            CHECK(t, !memcmp(a, b, sizeof(a)), "fdct differs, q %d block %d", qs, n);
            ref.quant_intra(la, a, &q);
            best.quant_intra(lb, b, &q);
            CHECK(t, !memcmp(la, lb, sizeof(la)), "quant differs, q %d block %d", qs, n);
            mpe_dequant_intra(a, la, qs, mpe_default_intra_matrix, 1);
            memcpy(b, a, sizeof(a));
            ref.idct(a);
            best.idct(b);
            CHECK(t, !memcmp(a, b, sizeof(a)), "idct differs, q %d block %d", qs, n);
            if (t->case_failed)
                return;
        }
    }
}

/* -------------------------------------------------------------- quantiser */

static void check_quant(TestCtx *t, const char *what, MpeQuantFn ref, MpeQuantFn fast,
                        const MpeQuantizer *q, const int16_t coef[64])
{
    int16_t la[64 + 2 * GUARD], lb[64 + 2 * GUARD];
    for (int i = 0; i < 64 + 2 * GUARD; i++)
        la[i] = lb[i] = SENTINEL16;
    int na = ref(la + GUARD, coef, q), nb = fast(lb + GUARD, coef, q);
    CHECK(t, na == nb && !memcmp(la, lb, sizeof(la)), "%s q %d max %d: count %d vs %d%s", what,
          q->qscale, q->max_level, na, nb, memcmp(la, lb, sizeof(la)) ? ", levels differ" : "");
}

/* Every coefficient value in [-2048, 2047] at every position, for every
 * qscale and every weight 1..255 (via flat matrices), both max_levels. */
static void t_quant_exhaustive(TestCtx *t)
{
    uint8_t m[64];
    int16_t coef[64];
    MpeQuantizer q;
    for (int w = 1; w <= 255 && !t->case_failed; w++) {
        memset(m, w, sizeof(m));
        for (int qs = 1; qs <= 31 && !t->case_failed; qs++) {
            int max = qs & 1 ? 2047 : 255;
            mpe_quantizer_init(&q, qs, m, m, max);
            for (int f0 = -2048; f0 < 2048 && !t->case_failed; f0 += 64) {
                for (int i = 0; i < 64; i++)
                    coef[i] = (int16_t)(f0 + i);
                check_quant(t, "intra", mpe_quant_intra_ref, mpe_quant_intra_fast, &q, coef);
                check_quant(t, "inter", mpe_quant_inter_ref, mpe_quant_inter_fast, &q, coef);
            }
        }
    }
}

static void t_quant_random(TestCtx *t)
{
    TestRng r = { 5 };
    uint8_t mi[64], mn[64];
    int16_t coef[64];
    MpeQuantizer q;
    for (int n = 0; n < 20000 && !t->case_failed; n++) {
        for (int i = 0; i < 64; i++) {
            mi[i] = (uint8_t)rnd(&r, 1, 255);
            mn[i] = (uint8_t)rnd(&r, 1, 255);
            coef[i] = (int16_t)rnd(&r, -2048, 2047);
        }
        mpe_quantizer_init(&q, rnd(&r, 1, 31), n & 1 ? mi : mpe_default_intra_matrix,
                           n & 2 ? mn : mpe_default_inter_matrix, n & 4 ? 2047 : 255);
        check_quant(t, "intra", mpe_quant_intra_ref, mpe_quant_intra_fast, &q, coef);
        check_quant(t, "inter", mpe_quant_inter_ref, mpe_quant_inter_fast, &q, coef);
    }
}

/* ------------------------------------------------------- pixel primitives */

#define PW 80
#define PH 48

static void fill_plane(TestRng *r, uint8_t *p, int n, int kind)
{
    for (int i = 0; i < n; i++)
        p[i] = kind == 0 ? (uint8_t)test_rand(r) : kind == 1 ? (test_rand(r) & 1 ? 255 : 0)
                                                             : (uint8_t)(128 + rnd(r, -2, 2));
}

static void t_predict(TestCtx *t)
{
    TestRng r = { 9 };
    static uint8_t ref[PW * PH], da[32 * 24], db[32 * 24];
    for (int n = 0; n < 20000 && !t->case_failed; n++) {
        int bw = n & 1 ? 16 : 8, bh = n & 2 ? 16 : 8;
        /* a half-pel position whose reads stay inside the plane */
        int px = rnd(&r, 0, 2 * (PW - bw - 1)), py = rnd(&r, 0, 2 * (PH - bh - 1));
        fill_plane(&r, ref, PW * PH, n % 3);
        memset(da, SENTINEL8, sizeof(da));
        memset(db, SENTINEL8, sizeof(db));
        /* the destination starts inside the buffer so writes before it show */
        mpe_predict_c(da + 32 * 2 + 3, 32, ref, PW, px, py, bw, bh);
        mpe_predict_sse2(db + 32 * 2 + 3, 32, ref, PW, px, py, bw, bh);
        CHECK(t, !memcmp(da, db, sizeof(da)), "predict %dx%d at (%d,%d)/2 differs", bw, bh, px, py);
    }
}

static void t_activity(TestCtx *t)
{
    TestRng r = { 10 };
    static uint8_t p[PW * PH];
    for (int n = 0; n < 20000 && !t->case_failed; n++) {
        fill_plane(&r, p, PW * PH, n % 3);
        int x = rnd(&r, 0, PW - 16), y = rnd(&r, 0, PH - 16);
        uint32_t a = mpe_intra_activity_c(p + y * PW + x, PW);
        uint32_t b = mpe_intra_activity_sse2(p + y * PW + x, PW);
        CHECK(t, a == b, "activity %u vs %u", a, b);
    }
}

static void t_pixels(TestCtx *t)
{
    TestRng r = { 12 };
    static uint8_t src[PW * PH], pred[PW * PH], da[PW * 12], db[PW * 12];
    int16_t ba[64 + 2 * GUARD], bb[64 + 2 * GUARD], blk[64];
    for (int n = 0; n < 20000 && !t->case_failed; n++) {
        fill_plane(&r, src, PW * PH, n % 3);
        fill_plane(&r, pred, PW * PH, (n / 3) % 3);
        const uint8_t *s = src + rnd(&r, 0, PH - 8) * PW + rnd(&r, 0, PW - 8);
        const uint8_t *p = pred + rnd(&r, 0, PH - 8) * PW + rnd(&r, 0, PW - 8);

        for (int i = 0; i < 64 + 2 * GUARD; i++)
            ba[i] = bb[i] = SENTINEL16;
        mpe_get_pixels_c(ba + GUARD, s, PW);
        mpe_get_pixels_sse2(bb + GUARD, s, PW);
        CHECK(t, !memcmp(ba, bb, sizeof(ba)), "get_pixels differs");

        uint32_t sa = mpe_diff_pixels_c(ba + GUARD, s, PW, p, PW);
        uint32_t sb = mpe_diff_pixels_sse2(bb + GUARD, s, PW, p, PW);
        CHECK(t, sa == sb && !memcmp(ba, bb, sizeof(ba)), "diff_pixels: sum %u vs %u", sa, sb);

        /* reconstruction inputs are IDCT outputs: [-256, 255] */
        make_block(&r, blk, n, -256, 255);
        memset(da, SENTINEL8, sizeof(da));
        memset(db, SENTINEL8, sizeof(db));
        mpe_put_pixels_c(da + PW + 5, PW, blk);
        mpe_put_pixels_sse2(db + PW + 5, PW, blk);
        CHECK(t, !memcmp(da, db, sizeof(da)), "put_pixels differs");
        mpe_add_pixels_c(da + PW + 5, PW, p, PW, blk);
        mpe_add_pixels_sse2(db + PW + 5, PW, p, PW, blk);
        CHECK(t, !memcmp(da, db, sizeof(da)), "add_pixels differs");
    }
}

/* ------------------------------------------------------------- block VLC */

/* A zigzag-ordered block: sparse or dense, small levels or escapes. */
static void make_scan(TestRng *r, int16_t s[64], int mpeg2, int kind)
{
    const int maxl = mpeg2 ? 2047 : 255;
    const int density[] = { 2, 8, 40, 100, 100 };
    memset(s, 0, 64 * sizeof(*s));
    for (int i = 0; i < 64; i++) {
        if ((int)(test_rand(r) % 100) >= density[kind % 5])
            continue;
        int a;
        switch (test_rand(r) % 8) {
        case 0: a = rnd(r, 1, maxl); break;           /* escapes */
        case 1: a = rnd(r, 38, 42); break;            /* around the table's edge */
        case 2: a = rnd(r, 15, 20); break;
        default: a = rnd(r, 1, 3); break;
        }
        s[i] = (int16_t)(test_rand(r) & 1 ? -a : a);
    }
    if (kind % 5 == 4) {   /* one coefficient after a long run (> 31: escape) */
        memset(s, 0, 64 * sizeof(*s));
        s[rnd(r, 0, 63)] = (int16_t)(test_rand(r) & 1 ? -1 : 1);
    }
}

static void t_block_vlc(TestCtx *t)
{
    TestRng r = { 13 };
    BsWriter a, b;
    bs_writer_init(&a, 1 << 16);
    bs_writer_init(&b, 1 << 16);
    for (int round = 0; round < 200 && !t->case_failed; round++) {
        const int mpeg2 = round & 1;
        bs_writer_reset(&a);
        bs_writer_reset(&b);
        for (int k = 0; k < 200; k++) {
            int16_t s[64];
            /* an odd number of bits first, so codes straddle byte boundaries */
            int pre = rnd(&r, 0, 13);
            uint32_t bits = test_rand(&r);
            bs_put(&a, pre, bits);
            bs_put(&b, pre, bits);
            make_scan(&r, s, mpeg2, k);
            if (k & 1) {
                int dc = rnd(&r, -255, 255), chroma = (k >> 1) & 1;
                bs_write_intra_block(&a, s, dc, chroma, mpeg2);
                bs_write_intra_block_fast(&b, s, dc, chroma, mpeg2);
            } else {
                int any = 0;
                for (int i = 0; i < 64; i++)
                    any |= s[i];
                if (!any)   /* a non-intra block has a coefficient */
                    s[rnd(&r, 0, 63)] = (int16_t)(k & 2 ? -1 : 2);
                bs_write_inter_block(&a, s, mpeg2);
                bs_write_inter_block_fast(&b, s, mpeg2);
            }
        }
        CHECK(t, bs_bit_count(&a) == bs_bit_count(&b), "round %d: %llu vs %llu bits", round,
              (unsigned long long)bs_bit_count(&a), (unsigned long long)bs_bit_count(&b));
        bs_flush(&a);
        bs_flush(&b);
        CHECK(t, a.pos == b.pos && !memcmp(a.buf, b.buf, a.pos), "round %d (%s): bytes differ",
              round, mpeg2 ? "MPEG-2" : "MPEG-1");
    }
    bs_writer_free(&a);
    bs_writer_free(&b);
}

/* ------------------------------------------------------------ the table */

static void t_table(TestCtx *t)
{
    MpeDsp d, ref;
    mpe_dsp_init_reference(&ref);
    CHECK(t, ref.fdct == mpe_fdct_c && ref.idct == mpe_idct_c &&
                 ref.quant_intra == mpe_quant_intra_ref && ref.quant_inter == mpe_quant_inter_ref &&
                 ref.predict == mpe_predict_c && ref.intra_activity == mpe_intra_activity_c &&
                 ref.get_pixels == mpe_get_pixels_c && ref.diff_pixels == mpe_diff_pixels_c &&
                 ref.put_pixels == mpe_put_pixels_c && ref.add_pixels == mpe_add_pixels_c &&
                 ref.write_intra_block == bs_write_intra_block &&
                 ref.write_inter_block == bs_write_inter_block,
          "reference table holds a non-reference entry");
    mpe_dsp_init(&d, 0);
    CHECK(t, d.fdct == mpe_fdct_fast_c && d.idct == mpe_idct_fast_c, "portable DCT not chosen");
    mpe_dsp_init(&d, mpe_cpu_flags());
    CHECK(t, d.fdct && d.idct && d.quant_intra && d.quant_inter && d.predict &&
                 d.intra_activity && d.get_pixels && d.diff_pixels && d.put_pixels &&
                 d.add_pixels && d.write_intra_block && d.write_inter_block,
          "an entry is empty");
#ifdef MPE_ARCH_X86
    if (have_avx2())
        CHECK(t, d.fdct == mpe_fdct_avx2 && d.idct == mpe_idct_avx2, "AVX2 DCT not chosen");
#endif
}

/* ------------------------------------------------------------- speed */

static volatile int16_t sink;

static double time_dct(MpeDctFn fn, int lo, int hi)
{
    TestRng r = { 3 };
    static int16_t blocks[256][64];
    for (int n = 0; n < 256; n++)
        make_block(&r, blocks[n], 0, lo, hi);
    double best = 1e9;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = mpe_time_s();
        for (int k = 0; k < 40; k++)
            for (int n = 0; n < 256; n++) {
                int16_t b[64];
                memcpy(b, blocks[n], sizeof(b));
                fn(b);
                sink = b[5];
            }
        double dt = (mpe_time_s() - t0) / (40 * 256);
        best = dt < best ? dt : best;
    }
    return best * 1e9;
}

static void t_speed(TestCtx *t)
{
    MpeDsp d;
    mpe_dsp_init(&d, mpe_cpu_flags());
    double fr = time_dct(mpe_fdct_c, -256, 255), fb = time_dct(d.fdct, -256, 255);
    double ir = time_dct(mpe_idct_c, -2048, 2047), ib = time_dct(d.idct, -2048, 2047);
    printf("     speed: fdct %.0f ns -> %.0f ns (%.1fx), idct %.0f ns -> %.0f ns (%.1fx)\n", fr, fb,
           fr / fb, ir, ib, ir / ib);
    CHECK(t, fb < fr && ib < ir, "the chosen DCTs are not faster than the references");
}

int main(void)
{
    TestCtx t;
    test_init(&t, "test_dsp");
    test_run(&t, "dct_table_symmetry", t_dct_table_symmetry);
    test_run(&t, "fdct_variants_identical", t_fdct);
    test_run(&t, "idct_variants_identical", t_idct);
    test_run(&t, "dct_quant_chain_identical", t_dct_chain);
    test_run(&t, "quant_exhaustive_identical", t_quant_exhaustive);
    test_run(&t, "quant_random_matrices_identical", t_quant_random);
    test_run(&t, "predict_identical", t_predict);
    test_run(&t, "intra_activity_identical", t_activity);
    test_run(&t, "pixels_identical", t_pixels);
    test_run(&t, "block_vlc_identical", t_block_vlc);
    test_run(&t, "dsp_table", t_table);
    test_run(&t, "speed", t_speed);
    return test_finish(&t);
}
