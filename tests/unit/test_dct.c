/* test_dct.c — the C reference DCTs against double-precision references,
 * including the full IEEE Std 1180-1990 accuracy procedure for the IDCT.
 *
 * Floating point is fine here: it is only the yardstick.  The references
 * are the direct separable sums of the Annex A definitions, rounded to
 * nearest with ties away from zero (as Tom Lane's public-domain ieeetest.c,
 * the usual IEEE 1180 harness, rounds). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpu.h"
#include "dsp/dct.h"
#include "dsp/dsp.h"
#include "tests/test.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* ref_c[k][n] = C(k)/2 cos((2n+1) k pi / 16): the orthonormal DCT-II matrix. */
static double ref_c[8][8];

static void ref_init(void)
{
    for (int k = 0; k < 8; k++)
        for (int n = 0; n < 8; n++)
            ref_c[k][n] = (k == 0 ? 1.0 / sqrt(2.0) : 1.0) / 2.0 *
                          cos((2 * n + 1) * k * M_PI / 16.0);
}

static long ref_round(double x)
{
    return x < 0.0 ? -(long)(0.5 - x) : (long)(x + 0.5);
}

static long clampl(long x, long lo, long hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* Whether x is (to double precision) exactly halfway between integers:
 * there either rounding errs by 1/2 and the reference's own choice is an
 * accident of its floating-point error, so a differing result is no fault. */
static int is_tie(double x)
{
    return fabs(fabs(x - floor(x)) - 0.5) < 1e-6;
}

/* Worst error and mismatch counts of integer results against the rounded
 * ideal values, clamped to [lo, hi]. */
typedef struct ErrTally {
    int worst;
    long mismatches, non_tie, total;
} ErrTally;

static void tally_block(ErrTally *e, const int16_t got[64], const double want[64], long lo,
                        long hi)
{
    for (int i = 0; i < 64; i++) {
        int err = abs(got[i] - (int)clampl(ref_round(want[i]), lo, hi));
        if (err > e->worst)
            e->worst = err;
        e->mismatches += err != 0;
        e->non_tie += err != 0 && !is_tie(want[i]);
        e->total++;
    }
}

/* F(u,v) = 1/4 C(u) C(v) sum_x sum_y f(x,y) cos.. cos..  (unrounded) */
static void ref_fdct_d(const int *in, double out[64])
{
    for (int v = 0; v < 8; v++)
        for (int u = 0; u < 8; u++) {
            double s = 0.0;
            for (int y = 0; y < 8; y++) {
                double r = 0.0;
                for (int x = 0; x < 8; x++)
                    r += in[8 * y + x] * ref_c[u][x];
                s += ref_c[v][y] * r;
            }
            out[8 * v + u] = s;
        }
}

/* f(x,y) = sum_u sum_v 1/4 C(u) C(v) F(u,v) cos.. cos..  (unrounded) */
static void ref_idct_d(const int *in, double out[64])
{
    for (int y = 0; y < 8; y++)
        for (int x = 0; x < 8; x++) {
            double s = 0.0;
            for (int v = 0; v < 8; v++) {
                double r = 0.0;
                for (int u = 0; u < 8; u++)
                    r += in[8 * v + u] * ref_c[u][x];
                s += ref_c[v][y] * r;
            }
            out[8 * y + x] = s;
        }
}

/* ---- IEEE Std 1180-1990 ------------------------------------------------ */

/* The standard's generator: randx = randx * 1103515245 + 12345, keep bits
 * 1..30, scale to [-L, H].  Done in uint32 so it never overflows; only the
 * low 31 bits matter, so this equals the standard's `long` version. */
typedef struct IeeeRng { uint32_t randx; } IeeeRng;

static long ieee_rand(IeeeRng *r, long L, long H)
{
    r->randx = r->randx * 1103515245u + 12345u;
    long i = (long)(r->randx & 0x7ffffffeu);
    double x = (double)i / (double)0x7fffffff; /* 0 to 0.99999... */
    x *= (double)(L + H + 1);                  /* 0 to < L+H+1 */
    long j = (long)x;                          /* truncate */
    return j - L;
}

typedef struct IeeeResult {
    int peak;              /* worst |error| at any pixel */
    long mismatches;       /* pixels differing from the reference */
    long non_tie;          /* ... of which the ideal value was not a tie */
    double worst_pmse;     /* worst per-pixel mean square error */
    double omse;           /* overall mean square error */
    double worst_pme;      /* worst per-pixel |mean error| */
    double ome;            /* overall mean error */
} IeeeResult;

/* One run of the procedure: 10000 blocks from [-L, H] (times sign),
 * reference FDCT rounded and clamped to [-2048, 2047], then the reference
 * IDCT (rounded, clamped to [-256, 255]) against mpe_idct_c. */
static IeeeResult ieee_run(long L, long H, int sign, int blocks, MpeDctFn idct)
{
    IeeeRng rng = { 1 }; /* each run restarts the generator */
    long sum_err[64] = { 0 }, sum_sq[64] = { 0 };
    IeeeResult res = { 0, 0, 0, 0, 0, 0, 0 };

    for (int b = 0; b < blocks; b++) {
        int pix[64], coef[64];
        double d[64];
        int16_t test[64];

        for (int i = 0; i < 64; i++)
            pix[i] = (int)ieee_rand(&rng, L, H) * sign;
        ref_fdct_d(pix, d);
        for (int i = 0; i < 64; i++)
            coef[i] = (int)clampl(ref_round(d[i]), -2048, 2047);
        ref_idct_d(coef, d);
        for (int i = 0; i < 64; i++)
            test[i] = (int16_t)coef[i];
        idct(test);
        for (int i = 0; i < 64; i++) {
            int ref = (int)clampl(ref_round(d[i]), -256, 255);
            int err = test[i] - ref;
            sum_err[i] += err;
            sum_sq[i] += (long)err * err;
            res.mismatches += err != 0;
            res.non_tie += err != 0 && !is_tie(d[i]);
            if (abs(err) > res.peak)
                res.peak = abs(err);
        }
    }
    double tot_sq = 0, tot_err = 0;
    for (int i = 0; i < 64; i++) {
        double pmse = (double)sum_sq[i] / blocks;
        double pme = fabs((double)sum_err[i] / blocks);
        if (pmse > res.worst_pmse)
            res.worst_pmse = pmse;
        if (pme > res.worst_pme)
            res.worst_pme = pme;
        tot_sq += (double)sum_sq[i];
        tot_err += (double)sum_err[i];
    }
    res.omse = tot_sq / (64.0 * blocks);
    res.ome = tot_err / (64.0 * blocks);
    return res;
}

static void ieee_check_fn(TestCtx *t, long L, long H, int sign, MpeDctFn idct, const char *name)
{
    IeeeResult r = ieee_run(L, H, sign, 10000, idct);
    printf("     IEEE1180 %s L=%ld H=%ld sign=%+d: peak %d (<=1), worst pmse %.6f "
           "(<=0.06), omse %.7f (<=0.02), worst pme %.6f (<=0.015), "
           "ome %.7f (<=0.0015); %ld of 640000 pixels differ, %ld not at "
           "an exact tie\n",
           name, L, H, sign, r.peak, r.worst_pmse, r.omse, r.worst_pme, r.ome,
           r.mismatches, r.non_tie);
    CHECK(t, r.peak <= 1, "peak error %d", r.peak);
    CHECK(t, r.worst_pmse <= 0.06, "worst pmse %f", r.worst_pmse);
    CHECK(t, r.omse <= 0.02, "omse %f", r.omse);
    CHECK(t, r.worst_pme <= 0.015, "worst pme %f", r.worst_pme);
    CHECK(t, fabs(r.ome) <= 0.0015, "ome %f", r.ome);
}

static void ieee_check(TestCtx *t, long L, long H, int sign)
{
    ieee_check_fn(t, L, H, sign, mpe_idct_c, "idct_c");
}

/* The variants the encoder may pick are identical to mpe_idct_c on these
 * inputs (test_checkasm.c); run the procedure on them anyway, since meeting
 * IEEE 1180 is the property that matters for drift. */
static void t_ieee_variants(TestCtx *t)
{
    MpeDsp dsp;
    const struct { const char *name; MpeDctFn fn; } v[] = {
        { "idct_fast_c", mpe_idct_fast_c },
        { "idct_dsp", NULL },
    };
    static const long lh[3][2] = { { 256, 255 }, { 5, 5 }, { 300, 300 } };
    mpe_dsp_init(&dsp, mpe_cpu_flags());
    for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++)
        for (int i = 0; i < 3; i++)
            for (int sign = -1; sign <= 1; sign += 2)
                ieee_check_fn(t, lh[i][0], lh[i][1], sign, v[k].fn ? v[k].fn : dsp.idct,
                              v[k].name);
}

static void t_ieee_256_pos(TestCtx *t) { ieee_check(t, 256, 255, +1); }
static void t_ieee_256_neg(TestCtx *t) { ieee_check(t, 256, 255, -1); }
static void t_ieee_5_pos(TestCtx *t) { ieee_check(t, 5, 5, +1); }
static void t_ieee_5_neg(TestCtx *t) { ieee_check(t, 5, 5, -1); }
static void t_ieee_300_pos(TestCtx *t) { ieee_check(t, 300, 300, +1); }
static void t_ieee_300_neg(TestCtx *t) { ieee_check(t, 300, 300, -1); }

static void t_ieee_zero(TestCtx *t)
{
    int16_t b[64] = { 0 };
    mpe_idct_c(b);
    for (int i = 0; i < 64; i++)
        CHECK(t, b[i] == 0, "IDCT(0)[%d] = %d", i, b[i]);
}

/* ---- other accuracy checks -------------------------------------------- */

static int rand_range(TestRng *r, int lo, int hi)
{
    return lo + (int)(test_rand(r) % (unsigned)(hi - lo + 1));
}

/* fdct against the rounded, clamped double reference.  Inputs: uniform
 * noise over the full [-256, 255], 8-bit samples, and smooth blocks (the
 * common case, whose energy sits in few coefficients). */
static void t_fdct_accuracy(TestCtx *t)
{
    TestRng rng = { 0x1234567887654321ULL };
    ErrTally e = { 0 };
    for (int b = 0; b < 60000; b++) {
        int pix[64];
        int kind = b % 3;
        int base = rand_range(&rng, -256, 255);
        int gx = rand_range(&rng, -12, 12), gy = rand_range(&rng, -12, 12);
        for (int i = 0; i < 64; i++) {
            if (kind == 0)
                pix[i] = rand_range(&rng, -256, 255);
            else if (kind == 1)
                pix[i] = rand_range(&rng, 0, 255);
            else
                pix[i] = (int)clampl(base + gx * (i % 8) + gy * (i / 8) +
                                     rand_range(&rng, -3, 3), -256, 255);
        }
        double d[64];
        int16_t blk[64];
        ref_fdct_d(pix, d);
        for (int i = 0; i < 64; i++)
            blk[i] = (int16_t)pix[i];
        mpe_fdct_c(blk);
        tally_block(&e, blk, d, -2048, 2047);
    }
    printf("     fdct vs double: worst |error| %d, %ld of %ld coefficients "
           "differ, %ld not at an exact tie\n", e.worst, e.mismatches, e.total,
           e.non_tie);
    CHECK(t, e.worst <= 1, "worst fdct error %d", e.worst);
}

/* idct against the reference on coefficient blocks the IEEE generator does
 * not produce: every single-coefficient block over the full input range
 * (the sparse blocks a real decoder sees most), and dense random blocks. */
static void t_idct_accuracy(TestCtx *t)
{
    TestRng rng = { 0x0badc0ffee15600dULL };
    ErrTally e = { 0 };
    int coef[64];
    double d[64];
    int16_t blk[64];

    for (int pos = 0; pos < 64; pos++)
        for (int val = -2048; val <= 2047; val++) {
            memset(coef, 0, sizeof(coef));
            coef[pos] = val;
            ref_idct_d(coef, d);
            memset(blk, 0, sizeof(blk));
            blk[pos] = (int16_t)val;
            mpe_idct_c(blk);
            tally_block(&e, blk, d, -256, 255);
        }
    for (int b = 0; b < 20000; b++) {
        int amp = b % 2 ? 64 : 2048; /* small and full-range coefficients */
        for (int i = 0; i < 64; i++)
            coef[i] = rand_range(&rng, -amp, amp - 1);
        ref_idct_d(coef, d);
        for (int i = 0; i < 64; i++)
            blk[i] = (int16_t)coef[i];
        mpe_idct_c(blk);
        tally_block(&e, blk, d, -256, 255);
    }
    printf("     idct vs double: worst |error| %d, %ld of %ld samples differ, "
           "%ld not at an exact tie\n", e.worst, e.mismatches, e.total, e.non_tie);
    CHECK(t, e.worst <= 1, "worst idct error %d", e.worst);
}

/* fdct then idct of 8-bit blocks (intra) and residuals (inter) comes back
 * within the error of rounding the coefficients to integers. */
static void t_roundtrip(TestCtx *t)
{
    TestRng rng = { 0x5eed5eed5eed5eedULL };
    long hist[4] = { 0 };
    int worst = 0;
    for (int b = 0; b < 100000; b++) {
        int16_t orig[64], blk[64];
        int lo = b % 2 ? 0 : -255, hi = 255;
        for (int i = 0; i < 64; i++)
            orig[i] = (int16_t)rand_range(&rng, lo, hi);
        memcpy(blk, orig, sizeof(blk));
        mpe_fdct_c(blk);
        mpe_idct_c(blk);
        for (int i = 0; i < 64; i++) {
            int err = abs(blk[i] - orig[i]);
            if (err > worst)
                worst = err;
            hist[err > 3 ? 3 : err]++;
        }
    }
    printf("     round trip |error| 0: %ld, 1: %ld, 2: %ld, >2: %ld\n",
           hist[0], hist[1], hist[2], hist[3]);
    CHECK(t, worst <= 2, "worst round-trip error %d", worst);
}

/* A flat block of value v has F(0,0) = 8v and no AC (Annex A), and comes
 * back exactly. */
static void t_flat(TestCtx *t)
{
    for (int v = -256; v <= 255; v++) {
        int16_t blk[64];
        for (int i = 0; i < 64; i++)
            blk[i] = (int16_t)v;
        mpe_fdct_c(blk);
        CHECK(t, blk[0] == 8 * v, "v=%d: DC %d", v, blk[0]);
        for (int i = 1; i < 64; i++)
            CHECK(t, blk[i] == 0, "v=%d: AC[%d] = %d", v, i, blk[i]);
        mpe_idct_c(blk);
        for (int i = 0; i < 64; i++)
            CHECK(t, blk[i] == v, "v=%d: idct[%d] = %d", v, i, blk[i]);
        if (t->case_failed)
            return;
    }
}

/* The transforms round ties away from zero at every step, so they are
 * exactly odd-symmetric wherever the output clamp is not reached. */
static void t_symmetry(TestCtx *t)
{
    TestRng rng = { 42 };
    for (int b = 0; b < 20000 && !t->case_failed; b++) {
        int16_t a[64], n[64];
        for (int i = 0; i < 64; i++) {
            a[i] = (int16_t)rand_range(&rng, -255, 255);
            n[i] = (int16_t)-a[i];
        }
        mpe_fdct_c(a);
        mpe_fdct_c(n);
        for (int i = 0; i < 64; i++)
            if (a[i] > -2048 && a[i] < 2047)
                CHECK(t, n[i] == -a[i], "fdct block %d [%d]: %d vs %d", b, i,
                      a[i], n[i]);
        for (int i = 0; i < 64; i++) {
            a[i] = (int16_t)rand_range(&rng, -300, 300);
            n[i] = (int16_t)-a[i];
        }
        mpe_idct_c(a);
        mpe_idct_c(n);
        for (int i = 0; i < 64; i++)
            if (a[i] > -256 && a[i] < 255)
                CHECK(t, n[i] == -a[i], "idct block %d [%d]: %d vs %d", b, i,
                      a[i], n[i]);
    }
}

/* Same input, same output, on every run and every build: a hash of the
 * outputs on a fixed input set is compared with the value this reference
 * produced when it was written (gcc 12 and clang 14, -O0 to -O3, x86-64).
 * A deliberate change to the reference's arithmetic must update it. */
#define GOLDEN_FDCT 0x7043d6455381bacdULL
#define GOLDEN_IDCT 0xc4f0fac479b0bdaeULL

static uint64_t fnv1a(uint64_t h, const int16_t *b)
{
    for (int i = 0; i < 64; i++) {
        uint16_t v = (uint16_t)b[i];
        h = (h ^ (v & 0xff)) * 0x100000001b3ULL;
        h = (h ^ (v >> 8)) * 0x100000001b3ULL;
    }
    return h;
}

static void t_determinism(TestCtx *t)
{
    uint64_t hf = 0xcbf29ce484222325ULL, hi = hf;
    TestRng rng = { 7 };
    for (int b = 0; b < 20000; b++) {
        int16_t in[64], x[64], y[64];
        for (int i = 0; i < 64; i++)
            in[i] = (int16_t)rand_range(&rng, -256, 255);
        memcpy(x, in, sizeof(x));
        memcpy(y, in, sizeof(y));
        mpe_fdct_c(x);
        mpe_fdct_c(y);
        CHECK(t, memcmp(x, y, sizeof(x)) == 0, "fdct not repeatable, block %d", b);
        hf = fnv1a(hf, x);
        for (int i = 0; i < 64; i++)
            in[i] = (int16_t)rand_range(&rng, -2048, 2047);
        memcpy(x, in, sizeof(x));
        memcpy(y, in, sizeof(y));
        mpe_idct_c(x);
        mpe_idct_c(y);
        CHECK(t, memcmp(x, y, sizeof(x)) == 0, "idct not repeatable, block %d", b);
        hi = fnv1a(hi, x);
        if (t->case_failed)
            return;
    }
    printf("     output hashes: fdct %016llx idct %016llx\n",
           (unsigned long long)hf, (unsigned long long)hi);
    CHECK(t, hf == GOLDEN_FDCT, "fdct hash %016llx, expected %016llx",
          (unsigned long long)hf, GOLDEN_FDCT);
    CHECK(t, hi == GOLDEN_IDCT, "idct hash %016llx, expected %016llx",
          (unsigned long long)hi, GOLDEN_IDCT);
}

/* Inputs outside the documented ranges (any int16) must not overflow: the
 * outputs just saturate.  Run under -fsanitize=undefined to see it. */
static void t_extremes(TestCtx *t)
{
    static const int16_t vals[] = { -32768, 32767, -2048, 2047 };
    for (int k = 0; k < 4; k++) {
        int16_t a[64], b[64];
        for (int i = 0; i < 64; i++) {
            a[i] = vals[k];
            b[i] = (int16_t)((i ^ (i >> 3)) & 1 ? vals[k] : -vals[k] - (k % 2 == 0));
        }
        mpe_fdct_c(a);
        mpe_idct_c(b);
        CHECK(t, a[0] == (vals[k] < 0 ? -2048 : 2047), "flat %d: DC %d",
              vals[k], a[0]);
        for (int i = 0; i < 64; i++)
            CHECK(t, b[i] >= -256 && b[i] <= 255, "idct out of range");
    }
}

/* The premise of the fast transforms' butterflies (dct_fast.c):
 * T[u][7-x] = (-1)^u T[u][x] exactly, and T[4][0] = T[0][0]. */
static void t_table_symmetry(TestCtx *t)
{
    for (int u = 0; u < 8; u++)
        for (int x = 0; x < 4; x++)
            CHECK(t, mpe_dct_tab[u][7 - x] == (u & 1 ? -mpe_dct_tab[u][x] : mpe_dct_tab[u][x]),
                  "T[%d][%d] = %d vs T[%d][%d] = %d", u, 7 - x, mpe_dct_tab[u][7 - x], u, x,
                  mpe_dct_tab[u][x]);
    CHECK(t, mpe_dct_tab[4][0] == mpe_dct_tab[0][0], "T40 != T00");
}

/* mpe_fdct_bound's matrix: mpe_dct_tab / 2^16 rounded (each entry within
 * 2^-15 of the true one, which its error bound assumes) and T's symmetry
 * (which the AVX2 one's folding assumes). */
static void t_bound_table(TestCtx *t)
{
    for (int u = 0; u < 8; u++)
        for (int x = 0; x < 8; x++) {
            const int32_t v = mpe_dct_tab[u][x];
            const int32_t want = v < 0 ? -((-v + 32768) >> 16) : (v + 32768) >> 16;
            CHECK(t, mpe_dct_tab_q14[u][x] == want, "Q14[%d][%d] = %d, want %d", u, x,
                  mpe_dct_tab_q14[u][x], want);
            if (x < 4)
                CHECK(t, mpe_dct_tab_q14[u][7 - x] == (u & 1 ? -mpe_dct_tab_q14[u][x] : mpe_dct_tab_q14[u][x]),
                      "Q14 symmetry at [%d][%d]", u, x);
        }
}

/* The promise of dct.h's bound: every coefficient of mpe_fdct_c satisfies
 * |F| 2^18 < bound + MPE_FDCT_BOUND_ERR + MPE_FDCT_BOUND_ERR_PER_ABS sum|r|
 * + 0.5002 2^18, on residual-like blocks (noise of every strength, single
 * basis functions, extremes, checkerboards of +-256).  The smallest slack
 * seen is printed: it shows how tight the constants are. */
static void t_bound_holds(TestCtx *t)
{
    TestRng r = { 99 };
    int64_t min_slack = INT64_MAX;
    for (int n = 0; n < 100000 && !t->case_failed; n++) {
        int16_t b[64], f[64];
        const int kind = n % 5;
        if (kind == 0) {
            const int a = 1 + (int)(test_rand(&r) % 64);
            for (int i = 0; i < 64; i++)
                b[i] = (int16_t)((int)(test_rand(&r) % (unsigned)(2 * a + 1)) - a);
        } else if (kind == 1) {
            const int u = (int)(test_rand(&r) % 8), v = (int)(test_rand(&r) % 8);
            const double amp = (double)(test_rand(&r) % 200000) / 100.0;
            for (int y = 0; y < 8; y++)
                for (int x = 0; x < 8; x++)
                    b[8 * y + x] = (int16_t)lrint(amp * mpe_dct_tab[u][x] / 1073741824.0 *
                                                  mpe_dct_tab[v][y] / 1073741824.0);
        } else if (kind == 2) {
            for (int i = 0; i < 64; i++)
                b[i] = (int16_t)(test_rand(&r) & 1 ? 255 : -256);
        } else if (kind == 3) {
            for (int i = 0; i < 64; i++)
                b[i] = (int16_t)(((i >> 3) ^ i) & 1 ? 255 : -256);
        } else {
            for (int i = 0; i < 64; i++)
                b[i] = (int16_t)((int)(test_rand(&r) % 512) - 256);
        }
        int64_t sum_abs = 0;
        for (int i = 0; i < 64; i++)
            sum_abs += b[i] < 0 ? -b[i] : b[i];
        memcpy(f, b, sizeof(f));
        mpe_fdct_c(f);
        int maxf = 0;
        for (int i = 0; i < 64; i++)
            maxf = abs(f[i]) > maxf ? abs(f[i]) : maxf;
        const int64_t lim = (int64_t)mpe_fdct_bound_c(b) + MPE_FDCT_BOUND_ERR +
                            MPE_FDCT_BOUND_ERR_PER_ABS * sum_abs + 131125;
        const int64_t slack = lim - ((int64_t)maxf << 18);
        min_slack = slack < min_slack ? slack : min_slack;
        CHECK(t, slack > 0, "block %d (kind %d): max |F| %d beyond the bound's %.4f", n, kind, maxf,
              (double)lim / (1 << 18));
    }
    printf("     smallest slack %.4f coefficient units\n", (double)min_slack / (1 << 18));
}

/* mpe_fdct_flat against mpe_fdct_c: every flat block (exhaustive), and
 * blocks one sample off flat, which it must leave alone. */
static void t_fdct_flat(TestCtx *t)
{
    TestRng r = { 0xf1a7 };
    for (int v = -256; v <= 255; v++) {
        int16_t a[64], b[64];
        for (int i = 0; i < 64; i++)
            a[i] = b[i] = (int16_t)v;
        mpe_fdct_c(a);
        CHECK(t, mpe_fdct_flat(b) == 1, "flat %d: not taken", v);
        CHECK(t, memcmp(a, b, sizeof(a)) == 0, "flat %d: F00 %d, reference %d", v, b[0], a[0]);
        const int16_t before = b[0];
        for (int i = 0; i < 64; i++)
            a[i] = b[i] = (int16_t)v;
        const int k = 1 + (int)(test_rand(&r) % 63u);
        b[k] = a[k] = (int16_t)(v == 255 ? 254 : v + 1);
        CHECK(t, mpe_fdct_flat(b) == 0 && memcmp(a, b, sizeof(a)) == 0,
              "flat %d with sample %d changed: taken or touched", v, k);
        (void)before;
    }
}

/* mpe_idct_sparse against mpe_idct_c: every F(0,0) in [-2048, 2047] with
 * F(7,7) in {-1, 0, 1} (exhaustive), and random blocks with one more
 * coefficient, which it must leave alone. */
static void t_idct_sparse(TestCtx *t)
{
    TestRng r = { 0x5ba5 };
    int taken = 0, cases = 0;
    for (int f77 = -1; f77 <= 1; f77++)
        for (int dc = -2048; dc <= 2047; dc++) {
            int16_t a[64] = { 0 }, b[64] = { 0 };
            a[0] = b[0] = (int16_t)dc;
            a[63] = b[63] = (int16_t)f77;
            mpe_idct_c(a);
            cases++;
            if (mpe_idct_sparse(b)) {
                taken++;
                CHECK(t, memcmp(a, b, sizeof(a)) == 0, "F00 %d F77 %d: %d vs reference %d..%d", dc,
                      f77, b[0], a[0], a[63]);
            } else {
                CHECK(t, b[0] == dc && b[63] == f77, "F00 %d F77 %d: refused but touched", dc, f77);
            }
            int16_t c[64] = { 0 };
            c[0] = (int16_t)dc;
            const int k = 1 + (int)(test_rand(&r) % 63u);
            c[k] = (int16_t)(k == 63 ? 2 + (int)(test_rand(&r) % 100u) : 1 + (int)(test_rand(&r) % 100u));
            int16_t d[64];
            memcpy(d, c, sizeof(c));
            CHECK(t, mpe_idct_sparse(c) == 0 && memcmp(c, d, sizeof(c)) == 0,
                  "F00 %d with coefficient %d = %d: taken or touched", dc, k, d[k]);
        }
    printf("     %d of %d DC (+ F77) blocks filled without the transform\n", taken, cases);
    CHECK(t, taken > cases / 2, "only %d of %d taken", taken, cases);
}

/* The AVX2 first passes' exact rounding of hi 2^16 + lo: random lanes,
 * and every residue class of lo around the ties (lo = k 2^16 + 2^15 +- 1)
 * with both signs of the sum. */
static void t_round16_split(TestCtx *t)
{
#ifdef MPE_ARCH_X86
    if (!(mpe_cpu_flags() & MPE_CPU_AVX2)) {
        test_skip(t, "no AVX2");
        return;
    }
    TestRng r = { 0x1616 };
    int ties = 0;
    for (int iter = 0; iter < 200000; iter++) {
        int32_t hi[8], lo[8], out[8];
        for (int k = 0; k < 8; k++) {
            hi[k] = (int32_t)(test_rand(&r) % 4000001u) - 2000000;
            if (iter & 1) {   /* near a tie: 2^15 + {-1, 0, 1} above a multiple of 2^16 */
                lo[k] = (int32_t)((int32_t)(test_rand(&r) % 20001u) - 10000) * 65536 + 32768 +
                        (int32_t)(test_rand(&r) % 3u) - 1;
                if (k & 1)
                    hi[k] = (int32_t)(test_rand(&r) % 21u) - 10;   /* sums of either sign near 0 */
            } else {
                lo[k] = (int32_t)test_rand(&r);
            }
        }
        mpe_dct_round16_split_avx2(hi, lo, out);
        for (int k = 0; k < 8; k++) {
            const int64_t x = (int64_t)hi[k] * 65536 + lo[k];
            const int64_t a = x < 0 ? -x : x, want = x < 0 ? -((a + 32768) >> 16) : (a + 32768) >> 16;
            ties += (a & 0xFFFF) == 32768;
            CHECK(t, out[k] == want, "hi %d lo %d: %d, reference %lld", hi[k], lo[k], out[k],
                  (long long)want);
        }
        if (t->case_failed)
            return;
    }
    CHECK(t, ties > 1000, "only %d exact ties tried", ties);
#else
    test_skip(t, "not x86");
#endif
}

int main(void)
{
    TestCtx t;
    test_init(&t, "test_dct");
    ref_init();
    test_run(&t, "ieee1180_L256_H255", t_ieee_256_pos);
    test_run(&t, "ieee1180_L256_H255_negated", t_ieee_256_neg);
    test_run(&t, "ieee1180_L5_H5", t_ieee_5_pos);
    test_run(&t, "ieee1180_L5_H5_negated", t_ieee_5_neg);
    test_run(&t, "ieee1180_L300_H300", t_ieee_300_pos);
    test_run(&t, "ieee1180_L300_H300_negated", t_ieee_300_neg);
    test_run(&t, "ieee1180_zero_in_zero_out", t_ieee_zero);
    test_run(&t, "ieee1180_fast_variants", t_ieee_variants);
    test_run(&t, "fdct_vs_double_reference", t_fdct_accuracy);
    test_run(&t, "idct_vs_double_reference", t_idct_accuracy);
    test_run(&t, "fdct_idct_round_trip", t_roundtrip);
    test_run(&t, "flat_block_dc_8v", t_flat);
    test_run(&t, "odd_symmetry", t_symmetry);
    test_run(&t, "determinism", t_determinism);
    test_run(&t, "int16_extremes_saturate", t_extremes);
    test_run(&t, "table_butterfly_symmetry", t_table_symmetry);
    test_run(&t, "bound_table_q14", t_bound_table);
    test_run(&t, "bound_holds", t_bound_holds);
    test_run(&t, "fdct_flat_shortcut", t_fdct_flat);
    test_run(&t, "idct_sparse_shortcut", t_idct_sparse);
    test_run(&t, "avx2_first_pass_rounding", t_round16_split);
    return test_finish(&t);
}
