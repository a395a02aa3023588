/* test_checkasm.c — every optimised DSP entry against its C reference
 * (dav1d's tests/checkasm): for every subset of this CPU's flags
 * (common/cpu.h), each table (dsp/dsp.h MpeDsp, dsp/sad.h MpeSadDsp, the
 * PNG unfilters of input/png_decode.h) is filled with mpe_*_init(flags) and
 * every entry that is not the C function — each distinct function once —
 * runs on random and edge-case inputs beside the C one: outputs pre-filled
 * with the same sentinel and compared in full (what must stay untouched
 * included), odd strides and lengths where the function takes them.  All
 * primitives are integer: results must be IDENTICAL (the encoder may pick
 * any variant, and the stream may not change).  Flags 0 must give the C
 * functions everywhere (--dsp c).
 *
 *   test_checkasm            the checks (a few seconds)
 *   test_checkasm --bench    also each variant's speed against its C
 *
 * The references themselves are checked against the standards elsewhere
 * (test_dct.c: IEEE 1180, test_quant.c, test_vlc.c, test_syntax.c,
 * test_png_decode.c); the cpu front end's kernels against independent
 * formulas in test_frontend.c. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bitstream/bitwriter.h"
#include "bitstream/mpeg12.h"
#include "common/common.h"
#include "common/cpu.h"
#include "common/timer.h"
#include "dsp/dct.h"
#include "dsp/dsp.h"
#include "dsp/pred.h"
#include "dsp/quant.h"
#include "dsp/sad.h"
#include "dsp/trellis.h"
#include "encoder/param.h"
#include "gpu/frontend.h"
#include "input/png_decode.h"
#include "tests/test.h"

#define GUARD 16
#define SENTINEL16 ((int16_t)0x5A5A)
#define SENTINEL8 0xA5

typedef void (*AnyFn)(void);

/* What the run is checking: the flags of the table under test, the
 * functions already checked (each distinct one once), the bench switch. */
typedef struct Checkasm {
    unsigned flags;
    AnyFn seen[128];
    int n_seen;
    int bench;
    int checked;
} Checkasm;

/* Is fn a variant (not the C one) that has not been checked yet? */
static int fresh(Checkasm *ca, AnyFn fn, AnyFn c)
{
    if (fn == c)
        return 0;
    for (int i = 0; i < ca->n_seen; i++)
        if (ca->seen[i] == fn)
            return 0;
    if (ca->n_seen < (int)(sizeof(ca->seen) / sizeof(ca->seen[0])))
        ca->seen[ca->n_seen++] = fn;
    ca->checked++;
    return 1;
}

static int rnd(TestRng *r, int lo, int hi)
{
    return lo + (int)(test_rand(r) % (unsigned)(hi - lo + 1));
}

/* Best-of-3 time per call in ns of `body` run n times. */
#define TIME_NS(out, n, body)                                                                     \
    do {                                                                                          \
        double best_ = 1e30;                                                                      \
        for (int rep_ = 0; rep_ < 3; rep_++) {                                                    \
            double t0_ = mpe_time_s();                                                            \
            for (int it_ = 0; it_ < (n); it_++) {                                                 \
                body;                                                                             \
            }                                                                                     \
            double dt_ = (mpe_time_s() - t0_) / (n);                                              \
            best_ = dt_ < best_ ? dt_ : best_;                                                    \
        }                                                                                         \
        (out) = best_ * 1e9;                                                                      \
    } while (0)

static void report_speed(const Checkasm *ca, const char *name, double c_ns, double v_ns)
{
    printf("     bench flags 0x%x %-22s C %8.1f ns  variant %8.1f ns  %5.2fx\n", ca->flags, name, c_ns,
           v_ns, c_ns / v_ns);
}

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

/* ------------------------------------------------------------------ DCT */

static volatile int16_t sink16;
static volatile uint32_t sink32;

static void check_dct(TestCtx *t, const char *name, MpeDctFn fn, MpeDctFn ref, int lo, int hi,
                      int blocks, unsigned long long seed)
{
    TestRng r = { seed };
    int16_t a[64 + 2 * GUARD], b[64 + 2 * GUARD];

    for (int n = 0; n < blocks; n++) {
        for (int i = 0; i < 64 + 2 * GUARD; i++)
            a[i] = SENTINEL16;
        make_block(&r, a + GUARD, n, lo, hi);
        memcpy(b, a, sizeof(a));
        ref(a + GUARD);
        fn(b + GUARD);
        if (memcmp(a, b, sizeof(a)) != 0) {
            int i = 0;
            while (a[i] == b[i])
                i++;
            CHECK(t, 0, "%s: block %d (kind %d, range %d..%d) differs first at %d: ref %d got %d",
                  name, n, n % 6, lo, hi, i - GUARD, a[i], b[i]);
            return;
        }
    }
}

static void bench_dct(const Checkasm *ca, const char *name, MpeDctFn fn, MpeDctFn ref, int lo,
                      int hi)
{
    static int16_t blocks[256][64];
    TestRng r = { 3 };
    double c_ns, v_ns;
    for (int n = 0; n < 256; n++)
        make_block(&r, blocks[n], 0, lo, hi);
    TIME_NS(c_ns, 20000, { int16_t b[64]; memcpy(b, blocks[it_ & 255], sizeof(b)); ref(b); sink16 = b[5]; });
    TIME_NS(v_ns, 20000, { int16_t b[64]; memcpy(b, blocks[it_ & 255], sizeof(b)); fn(b); sink16 = b[5]; });
    report_speed(ca, name, c_ns, v_ns);
}

/* fdct inputs: residuals and intra samples; idct: dequantised coefficients.
 * The portable fast versions are identical for any int16 input. */
static void check_dct_entries(TestCtx *t, Checkasm *ca, const MpeDsp *d, const MpeDsp *c)
{
    if (fresh(ca, (AnyFn)d->fdct, (AnyFn)c->fdct)) {
        check_dct(t, "fdct", d->fdct, c->fdct, -256, 255, 20000, 11);
        check_dct(t, "fdct", d->fdct, c->fdct, 0, 255, 6000, 21);
        if (d->fdct == mpe_fdct_fast_c)
            check_dct(t, "fdct", d->fdct, c->fdct, -32768, 32767, 6000, 31);
        if (ca->bench)
            bench_dct(ca, "fdct", d->fdct, c->fdct, -256, 255);
    }
    if (fresh(ca, (AnyFn)d->fdct_bound, (AnyFn)c->fdct_bound)) {
        TestRng r = { 12 };
        int16_t b[64];
        for (int n = 0; n < 40000 && !t->case_failed; n++) {
            make_block(&r, b, n, n % 12 < 6 ? -256 : -rnd(&r, 1, 40), n % 12 < 6 ? 255 : rnd(&r, 1, 40));
            const uint32_t x = c->fdct_bound(b), y = d->fdct_bound(b);
            CHECK(t, x == y, "fdct_bound: block %d (kind %d): %u vs %u", n, n % 6, x, y);
        }
        if (ca->bench) {
            double c_ns, v_ns;
            make_block(&r, b, 0, -20, 20);
            TIME_NS(c_ns, 50000, { b[it_ & 63] ^= 1; sink32 = c->fdct_bound(b); });
            TIME_NS(v_ns, 50000, { b[it_ & 63] ^= 1; sink32 = d->fdct_bound(b); });
            report_speed(ca, "fdct_bound", c_ns, v_ns);
        }
    }
    if (fresh(ca, (AnyFn)d->idct, (AnyFn)c->idct)) {
        check_dct(t, "idct", d->idct, c->idct, -2048, 2047, 20000, 41);
        check_dct(t, "idct", d->idct, c->idct, -40, 40, 6000, 51);
        if (d->idct == mpe_idct_fast_c)
            check_dct(t, "idct", d->idct, c->idct, -32768, 32767, 6000, 61);
        if (ca->bench)
            bench_dct(ca, "idct", d->idct, c->idct, -2048, 2047);
    }
}

/* -------------------------------------------------------------- quantiser */

static void check_quant(TestCtx *t, const char *what, MpeQuantFn ref, MpeQuantFn fn,
                        const MpeQuantizer *q, const int16_t coef[64])
{
    int16_t la[64 + 2 * GUARD], lb[64 + 2 * GUARD];
    for (int i = 0; i < 64 + 2 * GUARD; i++)
        la[i] = lb[i] = SENTINEL16;
    int na = ref(la + GUARD, coef, q), nb = fn(lb + GUARD, coef, q);
    CHECK(t, na == nb && !memcmp(la, lb, sizeof(la)), "%s q %d max %d: count %d vs %d%s", what,
          q->qscale, q->max_level, na, nb, memcmp(la, lb, sizeof(la)) ? ", levels differ" : "");
}

/* Every coefficient value in [-2048, 2047] at every position, for every
 * qscale and every weight 1..255 (via flat matrices), both max_levels; then
 * random matrices and coefficients, quantisers up to 56. */
static void check_quant_entry(TestCtx *t, const Checkasm *ca, const char *what, MpeQuantFn fn,
                              MpeQuantFn ref)
{
    uint8_t m[64], mi[64], mn[64];
    int16_t coef[64];
    MpeQuantizer q;
    TestRng r = { 5 };
    for (int w = 1; w <= 255 && !t->case_failed; w++) {
        memset(m, w, sizeof(m));
        for (int qs = 1; qs <= 31 && !t->case_failed; qs++) {
            mpe_quantizer_init(&q, qs, m, m, qs & 1 ? 2047 : 255);
            for (int f0 = -2048; f0 < 2048 && !t->case_failed; f0 += 64) {
                for (int i = 0; i < 64; i++)
                    coef[i] = (int16_t)(f0 + i);
                check_quant(t, what, ref, fn, &q, coef);
            }
        }
    }
    for (int n = 0; n < 20000 && !t->case_failed; n++) {
        for (int i = 0; i < 64; i++) {
            mi[i] = (uint8_t)rnd(&r, 1, 255);
            mn[i] = (uint8_t)rnd(&r, 1, 255);
            coef[i] = (int16_t)rnd(&r, -2048, 2047);
        }
        /* up to 56: the non-linear scale's MPEG-1 units */
        mpe_quantizer_init(&q, rnd(&r, 1, n & 8 ? 56 : 31), n & 1 ? mi : mpe_default_intra_matrix,
                           n & 2 ? mn : mpe_default_inter_matrix, n & 4 ? 2047 : 255);
        check_quant(t, what, ref, fn, &q, coef);
    }
    if (ca->bench) {
        static int16_t blocks[64][64];
        double c_ns, v_ns;
        mpe_quantizer_init(&q, 8, mpe_default_intra_matrix, mpe_default_inter_matrix, 2047);
        for (int n = 0; n < 64; n++)
            for (int i = 0; i < 64; i++)
                blocks[n][i] = (int16_t)rnd(&r, -300, 300);
        TIME_NS(c_ns, 50000, { int16_t l[64]; sink32 = (uint32_t)ref(l, blocks[it_ & 63], &q); });
        TIME_NS(v_ns, 50000, { int16_t l[64]; sink32 = (uint32_t)fn(l, blocks[it_ & 63], &q); });
        report_speed(ca, what, c_ns, v_ns);
    }
}

/* Inverse quantisers: every level in [-2047, 2047] at every position (a
 * sliding ramp), sparse and extreme int16 levels, both formats, every
 * quantiser 1..56 (the non-linear scale's MPEG-1 units), flat, default and
 * random matrices, every intra DC precision; sentinels around the output. */
static void check_dequant_entries(TestCtx *t, Checkasm *ca, const MpeDsp *d, const MpeDsp *c)
{
    const int intra = fresh(ca, (AnyFn)d->dequant_intra, (AnyFn)c->dequant_intra);
    const int inter = fresh(ca, (AnyFn)d->dequant_inter, (AnyFn)c->dequant_inter);
    int16_t lvl[64], a[64 + 2 * GUARD], b[64 + 2 * GUARD];
    uint8_t m[64];
    TestRng r = { 6 };
    if (!intra && !inter)
        return;
    for (int n = 0; n < 40000 && !t->case_failed; n++) {
        const int kind = n % 4, qs = 1 + n / 4 % 56, mpeg2 = n / 224 % 2, dcp = n / 448 % 4;
        if (kind == 0) {
            const int l0 = -2047 + (n / 4 % 64) * 64;
            for (int i = 0; i < 64; i++)
                lvl[i] = (int16_t)MPE_CLAMP(l0 + i, -2047, 2047);
        } else if (kind == 1) {
            for (int i = 0; i < 64; i++)
                lvl[i] = (int16_t)(test_rand(&r) % 6 == 0 ? rnd(&r, -40, 40) : 0);
        } else if (kind == 2) {
            for (int i = 0; i < 64; i++)
                lvl[i] = (int16_t)rnd(&r, -2047, 2047);
        } else {
            for (int i = 0; i < 64; i++)
                lvl[i] = (int16_t)(test_rand(&r) & 1 ? rnd(&r, -32768, 32767) : 0);
        }
        lvl[0] = (int16_t)rnd(&r, 0, (256 << dcp) - 1);   /* the intra DC level's range */
        const int mk = n / 896 % 3;
        for (int i = 0; i < 64; i++)
            m[i] = mk == 0 ? 16 : mk == 1 ? mpe_default_intra_matrix[i] : (uint8_t)rnd(&r, 1, 255);
        if (intra) {
            for (int i = 0; i < 64 + 2 * GUARD; i++)
                a[i] = b[i] = SENTINEL16;
            c->dequant_intra(a + GUARD, lvl, qs, m, mpeg2, mpeg2 ? dcp : 0);
            d->dequant_intra(b + GUARD, lvl, qs, m, mpeg2, mpeg2 ? dcp : 0);
            CHECK(t, !memcmp(a, b, sizeof(a)), "dequant_intra (kind %d, q %d, mpeg%d, dc %d) differs",
                  kind, qs, mpeg2 + 1, dcp);
        }
        if (inter) {
            for (int i = 0; i < 64 + 2 * GUARD; i++)
                a[i] = b[i] = SENTINEL16;
            c->dequant_inter(a + GUARD, lvl, qs, m, mpeg2);
            d->dequant_inter(b + GUARD, lvl, qs, m, mpeg2);
            CHECK(t, !memcmp(a, b, sizeof(a)), "dequant_inter (kind %d, q %d, mpeg%d) differs", kind,
                  qs, mpeg2 + 1);
        }
    }
    if (ca->bench) {
        double c_ns, v_ns;
        for (int i = 0; i < 64; i++)
            lvl[i] = (int16_t)(i % 7 == 0 ? rnd(&r, -30, 30) : 0);
        if (intra) {
            TIME_NS(c_ns, 50000, { c->dequant_intra(a, lvl, 8, mpe_default_intra_matrix, 1, 0); sink16 = a[5]; });
            TIME_NS(v_ns, 50000, { d->dequant_intra(a, lvl, 8, mpe_default_intra_matrix, 1, 0); sink16 = a[5]; });
            report_speed(ca, "dequant_intra", c_ns, v_ns);
        }
        if (inter) {
            TIME_NS(c_ns, 50000, { c->dequant_inter(a, lvl, 8, mpe_default_inter_matrix, 1); sink16 = a[5]; });
            TIME_NS(v_ns, 50000, { d->dequant_inter(a, lvl, 8, mpe_default_inter_matrix, 1); sink16 = a[5]; });
            report_speed(ca, "dequant_inter", c_ns, v_ns);
        }
    }
}

static void check_quant_entries(TestCtx *t, Checkasm *ca, const MpeDsp *d, const MpeDsp *c)
{
    check_dequant_entries(t, ca, d, c);
    if (fresh(ca, (AnyFn)d->quant_intra, (AnyFn)c->quant_intra))
        check_quant_entry(t, ca, "quant_intra", d->quant_intra, c->quant_intra);
    if (fresh(ca, (AnyFn)d->quant_inter, (AnyFn)c->quant_inter))
        check_quant_entry(t, ca, "quant_inter", d->quant_inter, c->quant_inter);
}

/* ------------------------------------------------------- pixel primitives */

/* Planes with odd strides, so that no row starts aligned. */
#define PW 83
#define PH 48
#define DW 37   /* destination stride */

static void fill_plane(TestRng *r, uint8_t *p, int n, int kind)
{
    for (int i = 0; i < n; i++)
        p[i] = kind == 0 ? (uint8_t)test_rand(r) : kind == 1 ? (test_rand(r) & 1 ? 255 : 0)
                                                             : (uint8_t)(128 + rnd(r, -2, 2));
}

/* Rectangles of every width 1..80 and a few up to 4095, at every
 * alignment, random and extreme (0 against 255) samples. */
static void check_sse_entry(TestCtx *t, const Checkasm *ca, MpeSseFn fn, MpeSseFn ref)
{
    static uint8_t a[4096 * 4], b[4096 * 4];
    TestRng r = { 13 };
    for (int n = 0; n < 4000 && !t->case_failed; n++) {
        const int w = n < 2000 ? 1 + n % 80 : n % 4 == 0 ? 4095 : rnd(&r, 1, 4095);
        const int h = rnd(&r, 1, 3), off = rnd(&r, 0, 31);
        const ptrdiff_t stride = 4096 - off;
        for (size_t i = 0; i < sizeof(a); i++) {
            a[i] = n % 3 == 0 ? 255 : (uint8_t)test_rand(&r);
            b[i] = n % 3 == 0 ? 0 : (uint8_t)test_rand(&r);
        }
        const uint64_t want = ref(a + off, stride, b + 1, stride + 1, w, h);
        const uint64_t got = fn(a + off, stride, b + 1, stride + 1, w, h);
        CHECK(t, want == got, "sse %dx%d: %llu vs %llu", w, h, (unsigned long long)want,
              (unsigned long long)got);
    }
    if (ca->bench) {
        double c_ns, v_ns;
        TIME_NS(c_ns, 2000, sink32 = (uint32_t)ref(a, 2048, b, 2048, 2048, 1));
        TIME_NS(v_ns, 2000, sink32 = (uint32_t)fn(a, 2048, b, 2048, 2048, 1));
        report_speed(ca, "sse (2048-sample row)", c_ns, v_ns);
    }
}

static void check_pred_entries(TestCtx *t, Checkasm *ca, const MpeDsp *d, const MpeDsp *c)
{
    static uint8_t ref[PW * PH], src[PW * PH], da[DW * 24], db[DW * 24];
    int16_t ba[64 + 2 * GUARD], bb[64 + 2 * GUARD], blk[64];
    TestRng r = { 9 };
    double c_ns, v_ns;

    if (fresh(ca, (AnyFn)d->sse, (AnyFn)c->sse))
        check_sse_entry(t, ca, d->sse, c->sse);
    if (fresh(ca, (AnyFn)d->predict, (AnyFn)c->predict)) {
        for (int n = 0; n < 20000 && !t->case_failed; n++) {
            int bw = n & 1 ? 16 : 8, bh = n & 2 ? 16 : 8;
            /* a half-pel position whose reads stay inside the plane */
            int px = rnd(&r, 0, 2 * (PW - bw - 1)), py = rnd(&r, 0, 2 * (PH - bh - 1));
            if (n % 64 == 0)
                fill_plane(&r, ref, PW * PH, n % 3);
            memset(da, SENTINEL8, sizeof(da));
            memset(db, SENTINEL8, sizeof(db));
            /* the destination starts inside the buffer so writes before it show */
            c->predict(da + DW * 2 + 3, DW, ref, PW, px, py, bw, bh);
            d->predict(db + DW * 2 + 3, DW, ref, PW, px, py, bw, bh);
            CHECK(t, !memcmp(da, db, sizeof(da)), "predict %dx%d at (%d,%d)/2 differs", bw, bh, px, py);
        }
        if (ca->bench) {
            TIME_NS(c_ns, 50000, c->predict(da, DW, ref, PW, 2 * (it_ & 15) + 1, 3, 16, 16));
            TIME_NS(v_ns, 50000, d->predict(da, DW, ref, PW, 2 * (it_ & 15) + 1, 3, 16, 16));
            report_speed(ca, "predict 16x16 xy", c_ns, v_ns);
        }
    }
    if (fresh(ca, (AnyFn)d->pred_sad, (AnyFn)c->pred_sad)) {
        for (int n = 0; n < 20000 && !t->case_failed; n++) {
            if (n % 64 == 0) {
                fill_plane(&r, ref, PW * PH, n % 3);
                fill_plane(&r, src, PW * PH, (n / 3) % 3);
                if (n % 128 == 64)   /* the largest differences */
                    for (int i = 0; i < PW * PH; i++)
                        src[i] = (uint8_t)(255 - ref[i]);
            }
            int px = rnd(&r, 0, 2 * (PW - 17)), py = rnd(&r, 0, 2 * (PH - 17));
            const uint8_t *s = src + rnd(&r, 0, PH - 16) * PW + rnd(&r, 0, PW - 16);
            uint32_t a = c->pred_sad(s, PW, ref, PW, px, py), b = d->pred_sad(s, PW, ref, PW, px, py);
            CHECK(t, a == b, "pred_sad at (%d,%d)/2: %u vs %u", px, py, a, b);
        }
        if (ca->bench) {
            TIME_NS(c_ns, 50000, sink32 = c->pred_sad(src, PW, ref, PW, 2 * (it_ & 15) + 1, 3));
            TIME_NS(v_ns, 50000, sink32 = d->pred_sad(src, PW, ref, PW, 2 * (it_ & 15) + 1, 3));
            report_speed(ca, "pred_sad xy", c_ns, v_ns);
        }
    }
    if (fresh(ca, (AnyFn)d->bipred_sad, (AnyFn)c->bipred_sad)) {
        static uint8_t ref1[PW * PH];
        for (int n = 0; n < 20000 && !t->case_failed; n++) {
            if (n % 64 == 0) {
                fill_plane(&r, ref, PW * PH, n % 3);
                fill_plane(&r, ref1, PW * PH, (n / 3) % 3);
                fill_plane(&r, src, PW * PH, (n / 9) % 3);
                if (n % 128 == 64)
                    for (int i = 0; i < PW * PH; i++)
                        ref1[i] = ref[i] = (uint8_t)(255 - src[i]);
            }
            int px0 = rnd(&r, 0, 2 * (PW - 17)), py0 = rnd(&r, 0, 2 * (PH - 17));
            int px1 = rnd(&r, 0, 2 * (PW - 17)), py1 = rnd(&r, 0, 2 * (PH - 17));
            const uint8_t *s = src + rnd(&r, 0, PH - 16) * PW + rnd(&r, 0, PW - 16);
            uint32_t a = c->bipred_sad(s, PW, ref, PW, px0, py0, ref1, PW, px1, py1);
            uint32_t b = d->bipred_sad(s, PW, ref, PW, px0, py0, ref1, PW, px1, py1);
            CHECK(t, a == b, "bipred_sad at (%d,%d)/2 and (%d,%d)/2: %u vs %u", px0, py0, px1, py1, a, b);
        }
        if (ca->bench) {
            TIME_NS(c_ns, 50000, sink32 = c->bipred_sad(src, PW, ref, PW, 2 * (it_ & 15) + 1, 3, ref, PW, 5, 2 * (it_ & 7)));
            TIME_NS(v_ns, 50000, sink32 = d->bipred_sad(src, PW, ref, PW, 2 * (it_ & 15) + 1, 3, ref, PW, 5, 2 * (it_ & 7)));
            report_speed(ca, "bipred_sad", c_ns, v_ns);
        }
    }
    if (fresh(ca, (AnyFn)d->hpel_sads, (AnyFn)c->hpel_sads)) {
        for (int n = 0; n < 20000 && !t->case_failed; n++) {
            if (n % 64 == 0) {
                fill_plane(&r, ref, PW * PH, n % 3);
                fill_plane(&r, src, PW * PH, (n / 3) % 3);
                if (n % 128 == 64)
                    for (int i = 0; i < PW * PH; i++)
                        src[i] = (uint8_t)(255 - ref[i]);
            }
            /* the reads, rows and columns -1 .. 16, inside the plane */
            const uint8_t *p = ref + rnd(&r, 1, PH - 17) * PW + rnd(&r, 1, PW - 17);
            const uint8_t *s = src + rnd(&r, 0, PH - 16) * PW + rnd(&r, 0, PW - 16);
            uint32_t a[9], b[9];
            c->hpel_sads(a, s, PW, p, PW);
            d->hpel_sads(b, s, PW, p, PW);
            for (int i = 0; i < 9; i++)
                CHECK(t, a[i] == b[i], "hpel_sads offset (%d,%d): %u vs %u", i % 3 - 1, i / 3 - 1,
                      a[i], b[i]);
        }
        if (ca->bench) {
            uint32_t a[9];
            TIME_NS(c_ns, 20000, { c->hpel_sads(a, src, PW, ref + PW + 1 + (it_ & 15), PW); sink32 = a[4]; });
            TIME_NS(v_ns, 20000, { d->hpel_sads(a, src, PW, ref + PW + 1 + (it_ & 15), PW); sink32 = a[4]; });
            report_speed(ca, "hpel_sads (9)", c_ns, v_ns);
        }
    }
    if (fresh(ca, (AnyFn)d->intra_activity, (AnyFn)c->intra_activity)) {
        for (int n = 0; n < 20000 && !t->case_failed; n++) {
            if (n % 16 == 0)
                fill_plane(&r, src, PW * PH, n % 3);
            int x = rnd(&r, 0, PW - 16), y = rnd(&r, 0, PH - 16);
            uint32_t a = c->intra_activity(src + y * PW + x, PW);
            uint32_t b = d->intra_activity(src + y * PW + x, PW);
            CHECK(t, a == b, "intra_activity %u vs %u", a, b);
        }
        if (ca->bench) {
            TIME_NS(c_ns, 50000, sink32 = c->intra_activity(src + (it_ & 15), PW));
            TIME_NS(v_ns, 50000, sink32 = d->intra_activity(src + (it_ & 15), PW));
            report_speed(ca, "intra_activity", c_ns, v_ns);
        }
    }
    const int get = fresh(ca, (AnyFn)d->get_pixels, (AnyFn)c->get_pixels);
    const int diff = fresh(ca, (AnyFn)d->diff_pixels, (AnyFn)c->diff_pixels);
    const int put = fresh(ca, (AnyFn)d->put_pixels, (AnyFn)c->put_pixels);
    const int add = fresh(ca, (AnyFn)d->add_pixels, (AnyFn)c->add_pixels);
    const int energy = fresh(ca, (AnyFn)d->block_energy, (AnyFn)c->block_energy);
    if (!(get | diff | put | add | energy))
        return;
    for (int n = 0; n < 20000 && !t->case_failed; n++) {
        if (n % 16 == 0) {
            fill_plane(&r, src, PW * PH, n % 3);
            fill_plane(&r, ref, PW * PH, (n / 3) % 3);
        }
        const uint8_t *s = src + rnd(&r, 0, PH - 8) * PW + rnd(&r, 0, PW - 8);
        const uint8_t *p = ref + rnd(&r, 0, PH - 8) * PW + rnd(&r, 0, PW - 8);

        if (get) {
            for (int i = 0; i < 64 + 2 * GUARD; i++)
                ba[i] = bb[i] = SENTINEL16;
            c->get_pixels(ba + GUARD, s, PW);
            d->get_pixels(bb + GUARD, s, PW);
            CHECK(t, !memcmp(ba, bb, sizeof(ba)), "get_pixels differs");
        }
        if (diff) {
            for (int i = 0; i < 64 + 2 * GUARD; i++)
                ba[i] = bb[i] = SENTINEL16;
            /* the coder's predictions are 16 or 8 wide */
            const ptrdiff_t ps = n % 3 == 0 ? PW : n % 3 == 1 ? 16 : 8;
            uint32_t sa = c->diff_pixels(ba + GUARD, s, PW, p, ps);
            uint32_t sb = d->diff_pixels(bb + GUARD, s, PW, p, ps);
            CHECK(t, sa == sb && !memcmp(ba, bb, sizeof(ba)), "diff_pixels (pred stride %d): sum %u vs %u",
                  (int)ps, sa, sb);
        }
        /* reconstruction inputs are IDCT outputs: [-256, 255]; residuals,
         * the energy's input, lie inside that too */
        make_block(&r, blk, n, -256, 255);
        if (energy) {
            int32_t sa, sb;
            uint32_t qa = c->block_energy(blk, &sa), qb = d->block_energy(blk, &sb);
            CHECK(t, qa == qb && sa == sb, "block_energy: %u, %d vs %u, %d", qa, sa, qb, sb);
        }
        if (put) {
            memset(da, SENTINEL8, sizeof(da));
            memset(db, SENTINEL8, sizeof(db));
            c->put_pixels(da + DW + 5, DW, blk);
            d->put_pixels(db + DW + 5, DW, blk);
            CHECK(t, !memcmp(da, db, sizeof(da)), "put_pixels differs");
        }
        if (add) {
            memset(da, SENTINEL8, sizeof(da));
            memset(db, SENTINEL8, sizeof(db));
            c->add_pixels(da + DW + 5, DW, p, PW, blk);
            d->add_pixels(db + DW + 5, DW, p, PW, blk);
            CHECK(t, !memcmp(da, db, sizeof(da)), "add_pixels differs");
        }
    }
    if (ca->bench) {
        if (get) {
            TIME_NS(c_ns, 100000, { c->get_pixels(ba, src + (it_ & 15), PW); sink16 = ba[3]; });
            TIME_NS(v_ns, 100000, { d->get_pixels(ba, src + (it_ & 15), PW); sink16 = ba[3]; });
            report_speed(ca, "get_pixels", c_ns, v_ns);
        }
        if (diff) {
            TIME_NS(c_ns, 100000, sink32 = c->diff_pixels(ba, src + (it_ & 15), PW, ref, PW));
            TIME_NS(v_ns, 100000, sink32 = d->diff_pixels(ba, src + (it_ & 15), PW, ref, PW));
            report_speed(ca, "diff_pixels", c_ns, v_ns);
        }
        if (put) {
            TIME_NS(c_ns, 100000, c->put_pixels(da + (it_ & 7), DW, blk));
            TIME_NS(v_ns, 100000, d->put_pixels(da + (it_ & 7), DW, blk));
            report_speed(ca, "put_pixels", c_ns, v_ns);
        }
        if (add) {
            TIME_NS(c_ns, 100000, c->add_pixels(da + (it_ & 7), DW, ref, PW, blk));
            TIME_NS(v_ns, 100000, d->add_pixels(da + (it_ & 7), DW, ref, PW, blk));
            report_speed(ca, "add_pixels", c_ns, v_ns);
        }
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

/* Both writers fed the same blocks after an odd number of bits, so codes
 * straddle byte boundaries; the bits written must be the same. */
static void check_vlc_entries(TestCtx *t, Checkasm *ca, const MpeDsp *d, const MpeDsp *c)
{
    const int intra = fresh(ca, (AnyFn)d->write_intra_block, (AnyFn)c->write_intra_block);
    const int inter = fresh(ca, (AnyFn)d->write_inter_block, (AnyFn)c->write_inter_block);
    TestRng r = { 13 };
    BsWriter a, b;
    if (!intra && !inter)
        return;
    CHECK(t, bs_writer_init(&a, 1 << 16) == 0 && bs_writer_init(&b, 1 << 16) == 0, "alloc");
    for (int round = 0; round < 200 && !t->case_failed; round++) {
        const int mpeg2 = round & 1;
        bs_writer_reset(&a);
        bs_writer_reset(&b);
        for (int k = 0; k < 200; k++) {
            int16_t s[64];
            int pre = rnd(&r, 0, 13);
            uint32_t bits = test_rand(&r);
            bs_put(&a, pre, bits);
            bs_put(&b, pre, bits);
            make_scan(&r, s, mpeg2, k);
            if (k & 1) {
                int dc = rnd(&r, -255, 255), chroma = (k >> 1) & 1;
                /* MPEG-2 intra blocks: both tables (intra_vlc_format 0 and 1) */
                int table = mpeg2 && (k & 4) ? BS_DCT_TABLE_ONE : BS_DCT_TABLE_ZERO;
                c->write_intra_block(&a, s, dc, chroma, mpeg2, table);
                (intra ? d : c)->write_intra_block(&b, s, dc, chroma, mpeg2, table);
            } else {
                int any = 0;
                for (int i = 0; i < 64; i++)
                    any |= s[i];
                if (!any)   /* a non-intra block has a coefficient */
                    s[rnd(&r, 0, 63)] = (int16_t)(k & 2 ? -1 : 2);
                c->write_inter_block(&a, s, mpeg2);
                (inter ? d : c)->write_inter_block(&b, s, mpeg2);
            }
        }
        CHECK(t, bs_bit_count(&a) == bs_bit_count(&b), "round %d: %llu vs %llu bits", round,
              (unsigned long long)bs_bit_count(&a), (unsigned long long)bs_bit_count(&b));
        bs_flush(&a);
        bs_flush(&b);
        CHECK(t, a.pos == b.pos && !memcmp(a.buf, b.buf, a.pos), "round %d (%s): bytes differ",
              round, mpeg2 ? "MPEG-2" : "MPEG-1");
    }
    if (ca->bench) {
        int16_t s[64];
        double c_ns, v_ns;
        make_scan(&r, s, 1, 2);
        bs_writer_reset(&a);
        TIME_NS(c_ns, 100000, { if (!(it_ & 1023)) bs_writer_reset(&a); c->write_intra_block(&a, s, 3, 0, 1, 0); });
        TIME_NS(v_ns, 100000, { if (!(it_ & 1023)) bs_writer_reset(&a); d->write_intra_block(&a, s, 3, 0, 1, 0); });
        report_speed(ca, "write_intra_block", c_ns, v_ns);
    }
    bs_writer_free(&a);
    bs_writer_free(&b);
}

/* The trellis's set-up: every kind of block (MPEG-1/2, intra or not),
 * random and default matrices, quantisers past 128 (the C loop's), level 1
 * allowed or not, coefficients over the whole int16 range and over a DCT's. */
static void check_trellis_entry(TestCtx *t, Checkasm *ca, const MpeDsp *d, const MpeDsp *c)
{
    if (!fresh(ca, (AnyFn)d->trellis_candidates, (AnyFn)c->trellis_candidates))
        return;
    TestRng r = { 0x7e11 };
    uint8_t matrix[64];
    for (int n = 0; n < 20000 && !t->case_failed; n++) {
        int16_t level[64], coef[64];
        int32_t sa[64 + 2 * GUARD], sb[64 + 2 * GUARD];
        int64_t suma, sumb;
        for (int i = 0; i < 64; i++)
            matrix[i] = (uint8_t)rnd(&r, 1, 255);
        const MpeTrellisParams p = {
            .intra = n & 1,
            .mpeg2 = (n >> 1) & 1,
            .qscale = n % 7 ? rnd(&r, 1, 31) : rnd(&r, 1, 140),
            .matrix = n & 4 ? matrix : (n & 1 ? mpe_default_intra_matrix : mpe_default_inter_matrix),
            .max_level = n % 11 ? ((n >> 1) & 1 ? 2047 : 255) : 0,
        };
        const int span = n % 3 == 0 ? 32767 : n % 3 == 1 ? 2048 : 40;
        for (int i = 0; i < 64; i++) {
            coef[i] = (int16_t)rnd(&r, -span - (span == 32767), span);
            level[i] = (int16_t)(rnd(&r, 0, 3) ? 0 : rnd(&r, -3, 3));
            if (n % 97 == 5 && rnd(&r, 0, 1))   /* the largest squares: their sums past 2^31 */
                coef[i] = -32768;
        }
        for (int i = 0; i < 64 + 2 * GUARD; i++)
            sa[i] = sb[i] = 0x5A5A5A5A;
        const uint64_t ma = c->trellis_candidates(level, coef, &p, sa + GUARD, &suma);
        const uint64_t mb = d->trellis_candidates(level, coef, &p, sb + GUARD, &sumb);
        CHECK(t, ma == mb && suma == sumb && !memcmp(sa, sb, sizeof(sa)),
              "trellis_candidates n %d (intra %d mpeg2 %d q %d): mask %016llx vs %016llx, sum %lld vs %lld",
              n, p.intra, p.mpeg2, p.qscale, (unsigned long long)ma, (unsigned long long)mb,
              (long long)suma, (long long)sumb);
    }
    if (ca->bench) {
        int16_t level[64] = { 0 }, coef[64];
        int32_t sq[64];
        int64_t sum;
        double c_ns, v_ns;
        for (int i = 0; i < 64; i++)
            coef[i] = (int16_t)rnd(&r, -300, 300);
        const MpeTrellisParams p = { .intra = 1, .mpeg2 = 1, .qscale = 4, .matrix = mpe_default_intra_matrix,
                                     .max_level = 2047 };
        TIME_NS(c_ns, 100000, sink32 += (uint32_t)c->trellis_candidates(level, coef, &p, sq, &sum));
        TIME_NS(v_ns, 100000, sink32 += (uint32_t)d->trellis_candidates(level, coef, &p, sq, &sum));
        report_speed(ca, "trellis_candidates", c_ns, v_ns);
    }
}

/* ------------------------------------------------------- SAD, block sums */

#define SW (4096 + 49)   /* the block sums' widest plane and its stride */

static void check_sad_entries(TestCtx *t, Checkasm *ca, const MpeSadDsp *d, const MpeSadDsp *c)
{
    static uint8_t a[PW * PH], b[PW * PH];
    TestRng r = { 31337 };
    double c_ns, v_ns;

    if (fresh(ca, (AnyFn)d->sad16, (AnyFn)c->sad16)) {
        for (int n = 0; n < 20000 && !t->case_failed; n++) {
            if (n % 16 == 0) {
                fill_plane(&r, a, PW * PH, n % 3);
                fill_plane(&r, b, PW * PH, (n / 3) % 3);
                if (n % 32 == 16)   /* the largest SAD, 65280 */
                    for (int i = 0; i < PW * PH; i++)
                        b[i] = (uint8_t)(255 - a[i]);
            }
            const uint8_t *pa = a + rnd(&r, 0, PH - 16) * PW + rnd(&r, 0, PW - 16);
            const uint8_t *pb = b + rnd(&r, 0, PH - 16) * PW + rnd(&r, 0, PW - 16);
            uint32_t sc = c->sad16(pa, PW, pb, PW), sv = d->sad16(pa, PW, pb, PW);
            CHECK(t, sc == sv, "sad16 %u vs %u", sc, sv);
        }
        if (ca->bench) {
            TIME_NS(c_ns, 100000, sink32 = c->sad16(a + (it_ & 15), PW, b + (it_ & 31), PW));
            TIME_NS(v_ns, 100000, sink32 = d->sad16(a + (it_ & 15), PW, b + (it_ & 31), PW));
            report_speed(ca, "sad16", c_ns, v_ns);
        }
    }
    if (fresh(ca, (AnyFn)d->sad16_bound, (AnyFn)c->sad16_bound)) {
        for (int n = 0; n < 20000 && !t->case_failed; n++) {
            if (n % 16 == 0) {
                fill_plane(&r, a, PW * PH, n % 3);
                fill_plane(&r, b, PW * PH, (n / 3) % 3);
            }
            const uint8_t *pa = a + rnd(&r, 0, PH - 16) * PW + rnd(&r, 0, PW - 16);
            const uint8_t *pb = b + rnd(&r, 0, PH - 16) * PW + rnd(&r, 0, PW - 16);
            /* bounds around the half's SAD, where the early exit flips */
            uint32_t half = c->sad16_bound(pa, PW, pb, PW, 0);
            uint32_t bound = n % 4 == 0 ? UINT32_MAX : (uint32_t)MPE_MAX(0, (int)half + rnd(&r, -2, 2));
            uint32_t sc = c->sad16_bound(pa, PW, pb, PW, bound), sv = d->sad16_bound(pa, PW, pb, PW, bound);
            CHECK(t, sc == sv, "sad16_bound(bound %u) %u vs %u", bound, sc, sv);
        }
        if (ca->bench) {
            TIME_NS(c_ns, 100000, sink32 = c->sad16_bound(a + (it_ & 15), PW, b + (it_ & 31), PW, UINT32_MAX));
            TIME_NS(v_ns, 100000, sink32 = d->sad16_bound(a + (it_ & 15), PW, b + (it_ & 31), PW, UINT32_MAX));
            report_speed(ca, "sad16_bound", c_ns, v_ns);
        }
    }
    if (fresh(ca, (AnyFn)d->block_sums, (AnyFn)c->block_sums)) {
        static const int widths[] = { 16, 32, 48, 80, 176, 4096 };
        enum { ROWS = 40 };
        static uint8_t pic[ROWS * SW];
        static uint16_t sa[ROWS * (SW + 8)], sb[ROWS * (SW + 8)];
        for (size_t wi = 0; wi < sizeof(widths) / sizeof(widths[0]) && !t->case_failed; wi++) {
            const int w = widths[wi];
            const ptrdiff_t stride = w + 48 + 1, sstride = w + 3;   /* odd strides */
            for (int mode = 0; mode < 3 && !t->case_failed; mode++) {
                for (int i = 0; i < ROWS * (int)stride; i++)
                    pic[i] = (uint8_t)(mode == 0 ? test_rand(&r) : mode == 1 ? 255 : test_rand(&r) & 1 ? 255 : 0);
                /* a band at an arbitrary row (it starts its sliding sums afresh) */
                const int y0 = rnd(&r, 0, 8), y1 = rnd(&r, y0, ROWS - 7);
                for (size_t i = 0; i < sizeof(sa) / sizeof(sa[0]); i++)
                    sa[i] = sb[i] = 0x5A5A;
                c->block_sums(sa, sstride, pic, stride, w, y0, y1);
                d->block_sums(sb, sstride, pic, stride, w, y0, y1);
                /* x past w - 8 is unspecified, but nothing at or past w is written */
                for (int y = 0; y < ROWS; y++)
                    for (int x = w - 7; x < w; x++)
                        sa[y * sstride + x] = sb[y * sstride + x] = 0;
                int bad = memcmp(sa, sb, sizeof(sa)) != 0;
                CHECK(t, !bad, "block_sums w %d rows %d..%d content %d differ", w, y0, y1, mode);
            }
        }
        if (ca->bench) {
            const ptrdiff_t stride = 4096 + 49;
            TIME_NS(c_ns, 20, c->block_sums(sa, 4099, pic, stride, 4096, 0, ROWS - 8));
            TIME_NS(v_ns, 20, d->block_sums(sb, 4099, pic, stride, 4096, 0, ROWS - 8));
            report_speed(ca, "block_sums 4096 wide", c_ns, v_ns);
        }
    }
}

/* ------------------------------------------------------- PNG unfilters */

static void check_png_entries(TestCtx *t, Checkasm *ca, const MpePngDsp *v, const MpePngDsp *c)
{
    static const size_t lens[] = { 1, 2, 3, 5, 7, 16, 17, 33, 64, 100, 255 };
    TestRng rng = { 0x1234567ull };
    uint8_t src[2][1024 + 32], prev[1024 + 32], ref[2][1024 + 32], out[2][1024 + 32];
    double c_ns, v_ns;

    for (int f = 1; f <= 4; f++)
        for (int bpp = 1; bpp <= 4; bpp++) {
            const int pa2 = f == MPE_PNG_PAETH && v->paeth2[bpp - 1] &&
                            fresh(ca, (AnyFn)v->paeth2[bpp - 1], (AnyFn)c->paeth2[bpp - 1]);
            if (!fresh(ca, (AnyFn)v->unfilter[f][bpp - 1], (AnyFn)c->unfilter[f][bpp - 1]) && !pa2)
                continue;
            for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
                const size_t len = lens[li] * (size_t)bpp;
                for (int rep = 0; rep < 8; rep++) {
                    for (size_t i = 0; i < sizeof(prev); i++) {
                        prev[i] = (uint8_t)test_rand(&rng);
                        src[0][i] = (uint8_t)test_rand(&rng);
                        src[1][i] = (uint8_t)test_rand(&rng);
                    }
                    /* extremes and ties matter for Paeth */
                    if (rep & 1)
                        for (size_t i = 0; i < len; i++) {
                            prev[i] &= 0x81;
                            src[0][i] &= 0x83;
                        }
                    memset(ref[0], SENTINEL8, sizeof(ref[0]));
                    memset(out[0], SENTINEL8, sizeof(out[0]));
                    c->unfilter[f][bpp - 1](ref[0], src[0], prev, len);
                    v->unfilter[f][bpp - 1](out[0], src[0], prev, len);
                    CHECK(t, memcmp(ref[0], out[0], sizeof(out[0])) == 0,
                          "unfilter %d bpp %d len %zu differs from C (or wrote past the row)", f,
                          bpp, len);
                    if (pa2) {
                        memset(ref, SENTINEL8, sizeof(ref));
                        memset(out, SENTINEL8, sizeof(out));
                        c->unfilter[MPE_PNG_PAETH][bpp - 1](ref[0], src[0], prev, len);
                        c->unfilter[MPE_PNG_PAETH][bpp - 1](ref[1], src[1], ref[0], len);
                        v->paeth2[bpp - 1](out[0], out[1], src[0], src[1], prev, len);
                        CHECK(t, memcmp(ref, out, sizeof(out)) == 0,
                              "paeth2 bpp %d len %zu differs from two C rows", bpp, len);
                    }
                }
            }
            if (ca->bench) {
                char name[32];
                snprintf(name, sizeof(name), "unfilter %d bpp %d", f, bpp);
                TIME_NS(c_ns, 20000, c->unfilter[f][bpp - 1](out[0], src[0], prev, 1020));
                TIME_NS(v_ns, 20000, v->unfilter[f][bpp - 1](out[0], src[0], prev, 1020));
                report_speed(ca, name, c_ns, v_ns);
            }
        }
}

/* ------------------------------------------------------------ the runs */

static Checkasm g_opts;   /* set once by main before the cases: --bench */

/* Every subset of this CPU's flags, the full set first (its functions are
 * the ones the encoder runs). */
static void t_every_mask(TestCtx *t)
{
    const unsigned have = mpe_cpu_flags() & MPE_CPU_ALL;
    Checkasm ca = g_opts;
    MpeDsp c, d;
    MpeSadDsp sc, sd;
    MpePngDsp pc, pd;

    mpe_dsp_init_c(&c);
    mpe_sad_dsp_init_c(&sc);
    mpe_png_dsp_init_c(&pc);
    for (unsigned sub = have;; sub = (sub - 1) & have) {
        ca.flags = sub;
        mpe_dsp_init(&d, sub);
        mpe_sad_dsp_init(&sd, sub);
        mpe_png_dsp_init(&pd, sub);
        check_dct_entries(t, &ca, &d, &c);
        check_quant_entries(t, &ca, &d, &c);
        check_pred_entries(t, &ca, &d, &c);
        check_vlc_entries(t, &ca, &d, &c);
        check_trellis_entry(t, &ca, &d, &c);
        check_sad_entries(t, &ca, &sd, &sc);
        check_png_entries(t, &ca, &pd, &pc);
        if (!sub || t->case_failed)
            break;
    }
    printf("     %d variants checked under the subsets of flags 0x%x\n", ca.checked, have);
    if (!ca.checked)
        test_skip(t, "no optimised variant on this CPU");
}

/* Flags 0 (--dsp c, --cpu-mask 0) must leave every table at its C
 * functions: the same pointers as the *_init_c ones, entry by entry. */
static void t_mask_zero_is_c(TestCtx *t)
{
    MpeDsp d, c;
    MpeSadDsp sd, sc;
    MpePngDsp pd, pc;
    GpuCpuKernels k, kc;
    MpeParam p;

    memset(&d, 0, sizeof(d));
    mpe_dsp_init(&d, 0);
    mpe_dsp_init_c(&c);
    CHECK(t, d.fdct == mpe_fdct_c && d.idct == mpe_idct_c && d.quant_intra == mpe_quant_intra_ref &&
                 d.fdct_bound == mpe_fdct_bound_c &&
                 d.quant_inter == mpe_quant_inter_ref && d.predict == mpe_predict_c &&
                 d.dequant_intra == mpe_dequant_intra_dc && d.dequant_inter == mpe_dequant_inter &&
                 d.pred_sad == mpe_pred_sad_c && d.hpel_sads == mpe_hpel_sads_c &&
                 d.bipred_sad == mpe_bipred_sad_c &&
                 d.intra_activity == mpe_intra_activity_c && d.get_pixels == mpe_get_pixels_c &&
                 d.diff_pixels == mpe_diff_pixels_c && d.put_pixels == mpe_put_pixels_c &&
                 d.block_energy == mpe_block_energy_c &&
                 d.add_pixels == mpe_add_pixels_c && d.sse == mpe_plane_sse &&
                 d.write_intra_block == bs_write_intra_block &&
                 d.write_inter_block == bs_write_inter_block &&
                 d.trellis_candidates == mpe_trellis_candidates_c,
          "block DSP with flags 0 holds a non-C entry");
    CHECK(t, !memcmp(&d, &c, sizeof(d)), "mpe_dsp_init(0) differs from mpe_dsp_init_c");
    mpe_sad_dsp_init(&sd, 0);
    mpe_sad_dsp_init_c(&sc);
    CHECK(t, sd.sad16 == mpe_sad16_c && sd.sad16_bound == mpe_sad16_bound_c &&
                 sd.block_sums == mpe_block_sums_c && !memcmp(&sd, &sc, sizeof(sd)),
          "SAD table with flags 0 holds a non-C entry");
    mpe_png_dsp_init(&pd, 0);
    mpe_png_dsp_init_c(&pc);
    CHECK(t, !memcmp(&pd, &pc, sizeof(pd)), "PNG unfilters with flags 0 hold a non-C entry");
    for (int b = 0; b < 4; b++)
        CHECK(t, !pd.paeth2[b], "PNG paeth2[%d] set with flags 0", b);
    gpu_cpu_kernels_init(&k, 0);
    gpu_cpu_kernels_init(&kc, 0);
    CHECK(t, !strcmp(k.name, "c") && !memcmp(&k.sad, &sc, sizeof(sc)),
          "cpu front-end kernels with flags 0: '%s'", k.name);
    /* and every one differs from its C somewhere once all flags are on,
     * where this CPU has them: the mask is what selects */
    gpu_cpu_kernels_init(&k, mpe_cpu_flags());
    if (mpe_cpu_flags() & MPE_CPU_AVX2)
        CHECK(t, k.convert_rgb_rows != kc.convert_rgb_rows && k.motion_search_rows != kc.motion_search_rows,
              "AVX2 front-end kernels not chosen");
    /* the options that lead there */
    mpe_param_default(&p);
    CHECK(t, mpe_param_cpu_flags(&p) == mpe_cpu_flags(), "default flags 0x%x", mpe_param_cpu_flags(&p));
    p.dsp = MPE_DSP_C;
    CHECK(t, mpe_param_cpu_flags(&p) == 0, "--dsp c gives flags 0x%x", mpe_param_cpu_flags(&p));
    mpe_param_default(&p);
    MpeError err;
    CHECK(t, mpe_param_parse(&p, "cpu-mask", "0", &err) == 0 && mpe_param_cpu_flags(&p) == 0,
          "--cpu-mask 0 gives flags 0x%x", mpe_param_cpu_flags(&p));
    CHECK(t, mpe_param_parse(&p, "cpu-mask", "0x3", &err) == 0 &&
                 mpe_param_cpu_flags(&p) == (mpe_cpu_flags() & 3),
          "--cpu-mask 0x3 gives flags 0x%x", mpe_param_cpu_flags(&p));
    CHECK(t, mpe_param_parse(&p, "cpu-mask", "xyz", &err) == MPE_PARAM_BAD_VALUE, "--cpu-mask xyz accepted");
}

/* The forward transform of picture-like blocks, quantised, dequantised and
 * inverse transformed: the chain the encoder runs, with the table it runs
 * (all of this CPU's flags) against the C one. */
static void t_dct_chain(TestCtx *t)
{
    MpeDsp best, ref;
    MpeQuantizer q;
    TestRng r = { 77 };
    mpe_dsp_init(&best, mpe_cpu_flags());
    mpe_dsp_init_c(&ref);
    for (int qs = 1; qs <= 31; qs += 5) {
        mpe_quantizer_init(&q, qs, mpe_default_intra_matrix, mpe_default_inter_matrix, 2047);
        for (int n = 0; n < 1000; n++) {
            int16_t a[64], b[64], la[64], lb[64];
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

int main(int argc, char **argv)
{
    TestCtx t;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bench")) {
            g_opts.bench = 1;
        } else {
            fprintf(stderr, "usage: %s [--bench]\n", argv[0]);
            return 2;
        }
    }
    test_init(&t, "checkasm");
    test_run(&t, "mask_zero_is_c_everywhere", t_mask_zero_is_c);
    test_run(&t, "every_entry_every_mask_vs_c", t_every_mask);
    test_run(&t, "dct_quant_chain", t_dct_chain);
    return test_finish(&t);
}
