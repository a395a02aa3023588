/* Rate control against a synthetic picture whose rows behave like coded
 * rows (bits ~ A/q, SSE ~ B q^2, each row its own A and B): the controller
 * only ever sees reported numbers, so its decisions can be checked exactly
 * against what the model says a coding would give.  Checked: constant
 * quantiser codes once; a PSNR target is met with the fewest bits the
 * model allows within one ladder step, by row mixing; a bit budget is never
 * exceeded; the VBV never underflows and a constant-rate stream is stuffed
 * up to what keeps it from overflowing, and from holding more than
 * vbv_delay can say; a picture too big for the buffer even at the coarsest
 * quantiser is reported; a quality target under a cap keeps to it over
 * whole GOPs; under a bit rate, the first picture of each type is planned
 * from partial codings and coded whole once (at most twice where its
 * bits steepen at fine quantisers); decisions are deterministic.  A
 * second model stands in for MAD on a P picture: flat at its reference's
 * score for coarse quantisers, falling to 0 at q 1, "copy the reference"
 * far off, and a mix of rows scored by a power mean that, like MAD, lets a
 * few bad rows dominate.  The same model in the dark (a fade to black,
 * where MAD sees nothing at any quantiser) scores 0 everywhere while the
 * rows' mean levels drift from the source's as the quantiser coarsens and
 * jump without residual: the mean-level guard must keep every row of the
 * picture kept within its tolerance, and still find the coarsest that is.
 * The same model in steps of 0.5, with a score of its own without residual,
 * stands in for BLIINDS-II: a P or B picture that meets the target
 * without residual must end there, in one coding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "encoder/encoder.h"
#include "encoder/ratecontrol.h"
#include "tests/test.h"

#define ROWS 40
#define SAMPLES (352.0 * 16 * ROWS)

typedef struct Picture {
    double a[ROWS], b[ROWS];       /* model per row */
    double a2[ROWS];               /* bits that grow as 1 / q^2 (a curve steeper at fine q) */
    double floor[ROWS];            /* bits a row costs at any q (headers, vectors), /8 */
    uint8_t q[MPE_RC_BANKS][ROWS]; /* what each bank holds, per row */
} Picture;

static uint64_t row_bits(const Picture *p, int r, int q)
{
    return (uint64_t)(p->a[r] / q + p->a2[r] / ((double)q * q) + p->floor[r]) * 8;
}
static uint64_t row_sse(const Picture *p, int r, int q) { return (uint64_t)(p->b[r] * q * q); }

/* What a row of a coding costs: the steps beyond q 31 what q 31 costs, a
 * row left out (q 0, a partial coding) nothing (and row_sse gives it no SSE) */
static uint64_t coded_row_bits(const Picture *p, int r, int q)
{
    return q ? row_bits(p, r, q > 31 ? 31 : q) : 0;
}

/* at q 31 a picture is about 34 kbit, under a 2 Mbit/s share of 80 */
static void make_picture(Picture *p, TestRng *rng)
{
    for (int r = 0; r < ROWS; r++) {
        p->a[r] = 500 + test_rand(rng) % 5500;
        p->b[r] = 200 + test_rand(rng) % 3000;
        p->floor[r] = 0;
        p->a2[r] = 0;
    }
}

/* MAD-like score of a bank: row r at quantiser q scores m(q); the picture a
 * power mean of its rows.  m rises linearly from 0 at q 1 to the plateau at
 * q knee, stays there to q 31, is 5 % higher without residual (32) and 100
 * for a copy of the reference (33). */
typedef struct MadModel {
    double plateau;
    int knee;
    double copy;    /* > 0: the copy step's score instead of 100 (a no-reference metric) */
    int dark;       /* scores 0 at every step, copy included */
    const double *drift;   /* per row: mean-level error per unit of q (NULL: none) */
    double stale;          /* mean-level error of every row without residual (q 32, 33) */
    double scale, power;   /* scale > 0: a smooth curve instead, scale q^power up to q 31 */
    double top;            /* > 0: the score without residual (q 32), as BLIINDS-II gives it */
    double quantum;        /* > 0: scores come in steps of it (BLIINDS-II: 0.5) */
} MadModel;

static double mad_row(const MadModel *m, int q)
{
    if (m->dark)
        return 0;
    if (q >= 33)
        return m->copy > 0 ? m->copy : 100;
    if (q == 32 && m->top > 0)
        return m->top;
    if (m->scale > 0)
        return m->scale * pow(q > 31 ? 31 * 1.05 : q, m->power);
    if (q == 32)
        return 1.05 * m->plateau;
    return q >= m->knee ? m->plateau : m->plateau * (q - 1) / (m->knee - 1);
}

static double mean_err_row(const MadModel *m, int r, int q)
{
    if (!m || !m->drift)
        return 0;
    return q >= 32 ? m->stale : m->drift[r] * q;
}

static double mad_of(const MadModel *m, const uint8_t *row_q)
{
    double s = 0;
    for (int r = 0; r < ROWS; r++)
        s += pow(mad_row(m, row_q[r]), 4);
    s = pow(s / ROWS, 0.25);
    return m->quantum > 0 ? m->quantum * round(s / m->quantum) : s;
}

typedef struct Outcome {
    uint64_t bits, sse;
    double metric;         /* with a MadModel: the score of the coding kept */
    int trials, codes;
    int underflow;         /* mpe_rc_end_frame said the picture did not fit in the VBV */
    uint64_t stuffing;     /* zero bytes it asked for after the picture */
    int vbv_delay;         /* what mpe_rc_start_frame returned */
    int bank;              /* the bank kept */
    double work;           /* codings in whole pictures' worth (a partial one codes some rows) */
    int partials;          /* codings that left rows out */
    int kept_rows_out;     /* rows the kept bank left out (a partial coding kept: never) */
    int first_partial;     /* the picture's first coding left rows out */
} Outcome;

/* The encoder's side of the loop, with the model standing in for coding
 * (rows beyond q 31, the extra steps, cost what q 31 costs); with a
 * MadModel, every coding and mix is scored by it. */
static Outcome run_picture(MpeRc *rc, Picture *p, char type, const MadModel *m)
{
    Outcome o = { 0 };
    uint64_t rb[ROWS], rs[ROWS];
    double re[ROWS];
    o.vbv_delay = mpe_rc_start_frame(rc, type, 400, 100);
    for (;;) {
        MpeRcStep st;
        mpe_rc_next(rc, &st);
        if (st.action == MPE_RC_DONE) {
            o.bank = st.bank;
            for (int r = 0; r < ROWS; r++) {
                o.kept_rows_out += p->q[st.bank][r] == 0;
                o.bits += coded_row_bits(p, r, p->q[st.bank][r]);
                o.sse += row_sse(p, r, p->q[st.bank][r]);
            }
            o.metric = m ? mad_of(m, p->q[st.bank]) : 0;
            break;
        }
        if (st.action == MPE_RC_CODE) {
            int coded = 0;
            o.codes++;
            memcpy(p->q[st.bank], st.row_q, ROWS);
            for (int r = 0; r < ROWS; r++)
                coded += st.row_q[r] != 0;
            o.work += (double)coded / ROWS;
            o.partials += coded < ROWS;
            o.first_partial |= o.codes == 1 && coded < ROWS;
        } else {
            for (int r = 0; r < ROWS; r++)
                p->q[st.bank][r] = p->q[st.src[r]][r];
        }
        for (int r = 0; r < ROWS; r++) {
            rb[r] = coded_row_bits(p, r, p->q[st.bank][r]);
            rs[r] = row_sse(p, r, p->q[st.bank][r]);
            re[r] = mean_err_row(m, r, p->q[st.bank][r]);
        }
        MpeRcResult res = { rb, rs, m ? mad_of(m, p->q[st.bank]) : 0, re };
        mpe_rc_report(rc, &res);
    }
    uint64_t stuffing;
    o.underflow = mpe_rc_end_frame(rc, o.bits + 400, &o.trials, &stuffing) < 0;
    o.stuffing = stuffing;
    return o;
}

static const uint8_t ladder31[31] = { 1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                                      17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31 };

static MpeRcConfig base_config(int mode)
{
    return (MpeRcConfig){ .mode = mode, .qscale = 5, .ladder = ladder31, .n_ladder = 31,
                          .n_rows = ROWS, .gop = 12, .fps = 25, .max_trials = 4 };
}

/* quantiser steps 1..31, then 32 (no inter residual) and 33 (a copy of
 * the reference), as a metric target's ladder has them */
static const uint8_t ladder33[33] = { 1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                      12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                                      23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33 };

/* A MAD or BLIINDS-II target on ladder33, 8 trials a picture */
static MpeRcConfig metric_config(int metric, double target)
{
    MpeRcConfig c = base_config(MPE_RC_QUALITY);
    c.ladder = ladder33;
    c.n_ladder = 33;
    c.max_trials = 8;
    c.target_metric = metric;
    c.target = target;
    return c;
}

static double psnr(uint64_t sse)
{
    return 10 * log10(255.0 * 255.0 * SAMPLES / (double)sse);
}

static void t_constant(TestCtx *t)
{
    MpeRcConfig c = base_config(MPE_RC_CQ);
    MpeRc *rc;
    MpeError err;
    Picture p;
    TestRng rng = { 7 };
    CHECK(t, mpe_rc_new(&rc, &c, (uint64_t)SAMPLES, &err) == 0, "open: %s", err.msg);
    make_picture(&p, &rng);
    Outcome o = run_picture(rc, &p, 'I', NULL);
    CHECK(t, o.codes == 1 && o.trials == 1, "constant q coded %d times", o.codes);
    for (int r = 0; r < ROWS; r++)
        CHECK(t, p.q[0][r] == 5, "row %d q %d", r, p.q[0][r]);
    mpe_rc_free(rc);
}

static void t_psnr_target(TestCtx *t)
{
    TestRng rng = { 11 };
    for (int k = 0; k < 40; k++) {
        MpeRcConfig c = base_config(MPE_RC_QUALITY);
        MpeRc *rc;
        MpeError err;
        Picture p;
        c.target_metric = MPE_IQA_PSNR;
        c.target = 30 + (test_rand(&rng) % 1500) / 100.0;
        CHECK(t, mpe_rc_new(&rc, &c, (uint64_t)SAMPLES, &err) == 0, "open: %s", err.msg);
        for (int n = 0; n < 6; n++) {
            make_picture(&p, &rng);
            Outcome o = run_picture(rc, &p, n ? 'P' : 'I', NULL);
            double got = psnr(o.sse);
            /* the best uniform quantiser that meets the target, by the model */
            int qbest = 0;
            for (int q = 1; q <= 31; q++) {
                uint64_t s = 0;
                for (int r = 0; r < ROWS; r++)
                    s += row_sse(&p, r, q);
                if (psnr(s) >= c.target)
                    qbest = q;
            }
            if (!qbest)
                continue;   /* unreachable even at q 1 */
            uint64_t bits_best = 0;
            for (int r = 0; r < ROWS; r++)
                bits_best += row_bits(&p, r, qbest);
            CHECK(t, got >= c.target - 1e-9, "target %.2f: got %.4f dB", c.target, got);
            CHECK(t, o.trials <= c.max_trials + 2, "%d trials", o.trials);
            /* at most what the best uniform quantiser costs (mixing rows
             * can only save), unless the search ran out before finding it */
            if (qbest < 31 && o.trials < c.max_trials)
                CHECK(t, o.bits <= bits_best, "target %.2f: %llu bits, uniform q %d: %llu",
                      c.target, (unsigned long long)o.bits, qbest, (unsigned long long)bits_best);
        }
        mpe_rc_free(rc);
    }
}

static void t_bit_budget(TestCtx *t)
{
    TestRng rng = { 23 };
    MpeRcConfig c = base_config(MPE_RC_BITRATE);
    MpeRc *rc;
    MpeError err;
    Picture p;
    c.bitrate = 2e6;
    c.vbv_bits = 1.5e6;
    CHECK(t, mpe_rc_new(&rc, &c, (uint64_t)SAMPLES, &err) == 0, "open: %s", err.msg);
    double total = 0;
    for (int n = 0; n < 48; n++) {
        make_picture(&p, &rng);
        double before = mpe_rc_vbv_fullness(rc);
        Outcome o = run_picture(rc, &p, n % 12 ? 'P' : 'I', NULL);
        CHECK(t, (double)(o.bits + 400) <= before, "picture %d: %llu bits with %.0f in the VBV", n,
              (unsigned long long)o.bits, before);
        total += o.bits + 400;
        CHECK(t, mpe_rc_vbv_fullness(rc) <= c.vbv_bits + 1, "overflow: %.0f",
              mpe_rc_vbv_fullness(rc));
    }
    /* four GOPs: the mean rate is within 15 % of the target */
    double rate = total * 25 / 48;
    CHECK(t, rate > 0.85 * c.bitrate && rate < 1.15 * c.bitrate, "rate %.0f", rate);
    mpe_rc_free(rc);
}

/* Easy pictures at a low constant rate: the buffer would fill far past
 * what vbv_delay (at most 0xFFFE ticks) can say long before it reaches
 * vbv_buffer_size.  Stuffing keeps it there, and every vbv_delay is the
 * model's fullness (the encoder writes the headers: 100 bits to the end of
 * the picture start code). */
static void t_vbv_delay_expressible(TestCtx *t)
{
    TestRng rng = { 31 };
    MpeRcConfig c = base_config(MPE_RC_BITRATE);
    MpeRc *rc;
    MpeError err;
    Picture p;
    c.bitrate = 300e3;
    c.vbv_bits = 112 * 16384.0;
    CHECK(t, mpe_rc_new(&rc, &c, (uint64_t)SAMPLES, &err) == 0, "open: %s", err.msg);
    double worst_ticks = 0, worst_off = 0;
    int underflows = 0;
    for (int n = 0; n < 30; n++) {
        make_picture(&p, &rng);
        for (int r = 0; r < ROWS; r++)
            p.a[r] = 20;   /* a few bits a row */
        double before = mpe_rc_vbv_fullness(rc);
        Outcome o = run_picture(rc, &p, n % 12 ? 'P' : 'I', NULL);
        worst_ticks = fmax(worst_ticks, (mpe_rc_vbv_fullness(rc) - 100) * 90000.0 / 300e3);
        if (n > 0)   /* the first picture's start sets the fullness to a whole vbv_delay */
            worst_off = fmax(worst_off, fabs(o.vbv_delay - (before - 100) * 90000.0 / 300e3));
        underflows += o.underflow;
    }
    CHECK(t, worst_ticks <= 0xFFFE, "a vbv_delay of %.0f ticks would be needed", worst_ticks);
    CHECK(t, worst_off <= 0.5 + 1e-6, "a vbv_delay %.1f ticks off the buffer's fullness", worst_off);
    CHECK(t, underflows == 0, "%d pictures underflowed", underflows);
    mpe_rc_free(rc);
}

/* Pictures bigger at the coarsest quantiser than the buffer can hold: the
 * controller codes them at the coarsest step and says they underflowed. */
static void t_underflow_reported(TestCtx *t)
{
    TestRng rng = { 41 };
    MpeRcConfig c = base_config(MPE_RC_BITRATE);
    MpeRc *rc;
    MpeError err;
    Picture p;
    int underflows = 0;
    c.bitrate = 20e3;   /* 0.73 s of vbv_delay holds 14.6 kbit, a picture is 34 at q 31 */
    c.vbv_bits = 112 * 16384.0;
    CHECK(t, mpe_rc_new(&rc, &c, (uint64_t)SAMPLES, &err) == 0, "open: %s", err.msg);
    make_picture(&p, &rng);
    Outcome o = run_picture(rc, &p, 'I', NULL);
    for (int r = 0; r < ROWS; r++)
        underflows += p.q[0][r] < 31 && p.q[1][r] < 31 && p.q[2][r] < 31;
    CHECK(t, o.underflow, "a %llu-bit picture fitted a buffer of 14.6 kbit", (unsigned long long)o.bits);
    CHECK(t, underflows == 0, "%d rows never tried at the coarsest quantiser", underflows);
    mpe_rc_free(rc);
}

/* A PSNR target no rate can give, under a 1 Mbit/s cap: four GOPs come
 * to at most the cap (a GOP's savings carry over to the next, and the
 * coarsest quantiser, about 340 kbit/s here, is well within it). */
static void t_quality_cap(TestCtx *t)
{
    TestRng rng = { 43 };
    MpeRcConfig c = base_config(MPE_RC_QUALITY);
    MpeRc *rc;
    MpeError err;
    Picture p;
    double total = 0;
    c.target_metric = MPE_IQA_PSNR;
    c.target = 60;
    c.bitrate = 1e6;
    c.vbv_bits = 112 * 16384.0;
    CHECK(t, mpe_rc_new(&rc, &c, (uint64_t)SAMPLES, &err) == 0, "open: %s", err.msg);
    for (int n = 0; n < 48; n++) {
        make_picture(&p, &rng);
        Outcome o = run_picture(rc, &p, n % 12 ? 'P' : 'I', NULL);
        total += o.bits + 400;
        CHECK(t, !o.underflow, "picture %d underflowed", n);
    }
    CHECK(t, total * 25 / 48 <= 1.0 * c.bitrate, "%.0f bit/s under a %.0f cap", total * 25 / 48, c.bitrate);
    mpe_rc_free(rc);
}

static void t_mad_target(TestCtx *t)
{
    TestRng rng = { 5 };
    int pictures = 0, within = 0, worse25 = 0, trials_over = 0;
    for (int k = 0; k < 30; k++) {
        MpeRcConfig c = base_config(MPE_RC_QUALITY);
        MpeRc *rc;
        MpeError err;
        Picture p;
        c.ladder = ladder33;
        c.n_ladder = 33;
        c.max_trials = 8;
        c.target_metric = MPE_IQA_MAD;
        c.target = 3 + (test_rand(&rng) % 1700) / 100.0;
        CHECK(t, mpe_rc_new(&rc, &c, (uint64_t)SAMPLES, &err) == 0, "open: %s", err.msg);
        for (int n = 0; n < 8; n++) {
            MadModel m = { .plateau = 5 + (test_rand(&rng) % 2500) / 100.0,
                           .knee = 6 + (int)(test_rand(&rng) % 19) };
            make_picture(&p, &rng);
            Outcome o = run_picture(rc, &p, n ? 'P' : 'I', &m);
            const double got = o.metric;
            const int trials = o.trials;
            trials_over += trials > c.max_trials + 2;
            /* reachable: some uniform quantiser short of a copy lands within 10 % */
            int reachable = 0;
            for (int q = 1; q <= 32; q++)
                reachable |= fabs(mad_row(&m, q) - c.target) <= 0.1 * c.target;
            if (!reachable)
                continue;
            pictures++;
            within += fabs(got - c.target) <= 0.1 * c.target;
            worse25 += got > 1.25 * c.target;
        }
        mpe_rc_free(rc);
    }
    CHECK(t, trials_over == 0, "%d pictures over the trial limit", trials_over);
    CHECK(t, pictures >= 100, "only %d reachable pictures", pictures);
    CHECK(t, within >= 0.9 * pictures, "%d of %d pictures within 10 %% of the target", within, pictures);
    CHECK(t, worse25 == 0, "%d pictures more than 25 %% worse than the target", worse25);
}

/* A steady clip under --target-mad 9 (see the two tests below): per
 * picture, drift by up to 5 %, then the picture; I every 12, and with_b:
 * two B pictures between anchors, whose score is mostly their anchors'
 * and whose rows' bits fall only to what their vectors cost. */
typedef struct SteadyRun {
    int trials, b_trials, b_n, missed;
} SteadyRun;

static SteadyRun steady_clip(TestCtx *t, unsigned seed, int n_pic, int with_b)
{
    TestRng rng = { seed };
    MpeRcConfig c = metric_config(MPE_IQA_MAD, 9);
    MpeRc *rc;
    MpeError err;
    Picture p;
    SteadyRun run = { 0 };
    double drift = 1;
    c.bframes = with_b ? 2 : 0;
    CHECK(t, mpe_rc_new(&rc, &c, (uint64_t)SAMPLES, &err) == 0, "open: %s", err.msg);
    for (int n = 0; n < n_pic; n++) {
        const char type = n % 12 == 0 ? 'I' : !with_b || n % 3 == 0 ? 'P' : 'B';
        drift *= 1 + ((int)(test_rand(&rng) % 101) - 50) / 1000.0;
        MadModel m = { .scale = (type == 'I' ? 2.2 : type == 'P' ? 5.0 : 6.5) * drift,
                       .power = type == 'I' ? 1.0 : type == 'P' ? 0.35 : 0.2 };
        make_picture(&p, &rng);
        if (type == 'B')
            for (int r = 0; r < ROWS; r++) {
                p.floor[r] = p.a[r] / 40;
                p.a[r] /= 8;
            }
        Outcome o = run_picture(rc, &p, type, &m);
        run.trials += o.trials;
        if (type == 'B') {
            run.b_trials += o.trials;
            run.b_n++;
        }
        run.missed += o.metric > c.target;
    }
    mpe_rc_free(rc);
    return run;
}

/* A steady clip whose pictures' MAD curves are smooth (scale q^power, I
 * and P pictures apart) and drift by up to 5 % from one picture to the
 * next: the controller predicts each picture from the last of its type and
 * ends on the first coding in the band below the target (10 % wide for I
 * and P pictures), so it needs fewer than 2.5 scored codings a picture on
 * average (closing a bracket of two ladder steps and mixing them took 4.31
 * here; this takes 1.25), and every picture still meets the target. */
static void t_mad_target_few_trials(TestCtx *t)
{
    const int n_pic = 48;
    const SteadyRun run = steady_clip(t, 23, n_pic, 0);
    CHECK(t, run.missed == 0, "%d pictures above the target", run.missed);
    CHECK(t, run.trials < 2.5 * n_pic, "%.2f scored codings a picture", (double)run.trials / n_pic);
}

/* The steady clip with B pictures: a B picture ends on the first coding
 * within 3.5 % of the target, and a bracket whose coarser side saves at
 * most 2 % of a mean picture's bits ends on its ok coding, no mix.  Every
 * picture still meets the target, in 1.90 trials a picture (1.94 a B
 * picture) where the old search (B pictures always on a mix) took 3.40
 * (4.09). */
static void t_mad_target_b_pictures(TestCtx *t)
{
    const int n_pic = 48;
    const SteadyRun run = steady_clip(t, 31, n_pic, 1);
    printf("INFO test_ratecontrol/mad_target_b_pictures: %.2f trials a picture, %.2f a B picture\n",
           (double)run.trials / n_pic, (double)run.b_trials / run.b_n);
    CHECK(t, run.missed == 0, "%d pictures above the target", run.missed);
    CHECK(t, run.b_trials <= 2.5 * run.b_n, "%.2f trials a B picture", (double)run.b_trials / run.b_n);
    CHECK(t, run.trials <= 2.3 * n_pic, "%.2f trials a picture", (double)run.trials / n_pic);
}

/* A B picture between two equal anchors codes the same at every
 * quantiser (all its macroblocks skipped: no bits, the same score): the
 * search stops at the second ok coding, which took no fewer bits than the
 * first, instead of climbing to the coarsest step (8 trials before); and
 * the next B picture, an ordinary one, starts from the model of the B
 * pictures before, not from that coarse quantiser (it took 6 trials from
 * q 52 on the H100 run that showed this). */
static void t_mad_target_saturated_b(TestCtx *t)
{
    TestRng rng = { 77 };
    MpeRcConfig c = metric_config(MPE_IQA_MAD, 9);
    MpeRc *rc;
    MpeError err;
    Picture p;
    int sat_trials = 0, sat_n = 0, after_trials = 0, after_n = 0, missed = 0;
    CHECK(t, mpe_rc_new(&rc, &c, (uint64_t)SAMPLES, &err) == 0, "open: %s", err.msg);
    for (int n = 0; n < 36; n++) {
        const char type = n % 12 == 0 ? 'I' : n % 4 == 0 ? 'P' : 'B';
        const int saturated = type == 'B' && n % 4 == 3;
        MadModel m = { .scale = type == 'I' ? 2.2 : type == 'P' ? 5.0 : 6.0,
                       .power = type == 'I' ? 1.0 : 0.35 };
        make_picture(&p, &rng);
        if (saturated) {   /* skipped whole: no bits, one score */
            memset(p.a, 0, sizeof(p.a));
            m = (MadModel){ .scale = 8.4, .power = 0 };
        }
        Outcome o = run_picture(rc, &p, type, &m);
        missed += o.metric > c.target;
        if (saturated) {
            sat_trials += o.trials;
            sat_n++;
        } else if (type == 'B' && n % 4 == 1 && n > 4) {
            after_trials += o.trials;
            after_n++;
        }
    }
    CHECK(t, missed == 0, "%d pictures above the target", missed);
    CHECK(t, sat_trials <= 2 * sat_n, "%.2f codings a saturated B picture", (double)sat_trials / sat_n);
    CHECK(t, after_trials <= 3 * after_n, "%.2f codings the B picture after one",
          (double)after_trials / after_n);
    mpe_rc_free(rc);
}

/* A no-reference metric scores a copy of the reference like the picture
 * it repeats (here: better than anything coded), yet a copy shows the
 * wrong picture: a BLIINDS-II target must never choose that step. */
static void t_bliinds_never_copies(TestCtx *t)
{
    TestRng rng = { 17 };
    MpeRcConfig c = base_config(MPE_RC_QUALITY);
    MpeRc *rc;
    MpeError err;
    Picture p;
    int copies = 0;
    c.ladder = ladder33;
    c.n_ladder = 33;
    c.max_trials = 8;
    c.target_metric = MPE_IQA_BLIINDS;
    c.target = 20;
    CHECK(t, mpe_rc_new(&rc, &c, (uint64_t)SAMPLES, &err) == 0, "open: %s", err.msg);
    for (int n = 0; n < 24; n++) {
        /* the plateau on either side of the target; the copy scores 5 */
        MadModel m = { .plateau = 10 + (test_rand(&rng) % 1500) / 100.0,
                       .knee = 4 + (int)(test_rand(&rng) % 8), .copy = 5 };
        make_picture(&p, &rng);
        run_picture(rc, &p, n % 12 ? 'P' : 'I', &m);
        for (int b = 0; b < MPE_RC_BANKS; b++)
            for (int r = 0; r < ROWS; r++)
                copies += p.q[b][r] == 33;
    }
    CHECK(t, copies == 0, "%d rows tried or kept as a copy of the reference", copies);
    mpe_rc_free(rc);
}

/* A BLIINDS-II-like clip under --target-bliinds 33: P and B pictures
 * whose score rises smoothly with q (drifting by up to 5 % a picture) in
 * steps of 0.5, and without residual (the top step) scores either well
 * within the target (two pictures in three) or past it (the third).  The
 * probe of the top step ends the first kind in one coding; the second
 * goes on below it from the last picture that did, and ends in the
 * target's 0.5 step or on a mix.  Every picture meets the target, and
 * those that can without residual end there, in at most 2.6 codings and
 * mix scores a picture on average (2.42; the search from the last
 * picture's quantiser took 3.67, and kept none of the 28 pictures that
 * meet the target without residual there). */
static void t_bliinds_target_probe(TestCtx *t)
{
    TestRng rng = { 41 };
    MpeRcConfig c = metric_config(MPE_IQA_BLIINDS, 33);
    MpeRc *rc;
    MpeError err;
    Picture p;
    const int n_pic = 48;
    int trials = 0, missed = 0, top_n = 0, top_kept = 0, top_trials = 0;
    double drift = 1;
    c.bframes = 2;
    CHECK(t, mpe_rc_new(&rc, &c, (uint64_t)SAMPLES, &err) == 0, "open: %s", err.msg);
    for (int n = 0; n < n_pic; n++) {
        const char type = n % 12 == 0 ? 'I' : n % 3 == 0 ? 'P' : 'B';
        const int top_ok = n % 3 != 2;
        drift *= 1 + ((int)(test_rand(&rng) % 101) - 50) / 1000.0;
        MadModel m = { .scale = 20 * drift, .power = 0.25, .quantum = 0.5,
                       .top = type == 'I' ? 0 : top_ok ? 31 : 36 };
        make_picture(&p, &rng);
        Outcome o = run_picture(rc, &p, type, &m);
        trials += o.trials;
        missed += o.metric > c.target;
        if (type != 'I' && top_ok) {
            int at_top = 1;
            for (int r = 0; r < ROWS; r++)
                at_top &= p.q[o.bank][r] == 32;
            top_n++;
            top_kept += at_top;
            top_trials += o.trials;
        }
    }
    printf("INFO test_ratecontrol/bliinds_target_probe: %.2f trials a picture, %.2f where the top step meets the target\n",
           (double)trials / n_pic, (double)top_trials / top_n);
    CHECK(t, missed == 0, "%d pictures above the target", missed);
    CHECK(t, top_kept == top_n, "%d of %d pictures that meet the target without residual kept it",
          top_kept, top_n);
    CHECK(t, trials <= 2.6 * n_pic, "%.2f trials a picture", (double)trials / n_pic);
    mpe_rc_free(rc);
}

/* A fade to black under a MAD target: the metric is 0 at every step, so
 * without the guard "copy the reference" wins and the picture freezes.
 * With it, every kept row is within the tolerance, the guard says it
 * acted, and the picture costs no more than the coarsest uniform
 * quantiser the guard allows (rows the guard lets go coarser save more). */
static void t_mad_guard_fade(TestCtx *t)
{
    for (int guard = 1; guard >= 0; guard--) {
        TestRng rng = { 41 };
        MpeRcConfig c = base_config(MPE_RC_QUALITY);
        MpeRc *rc;
        MpeError err;
        Picture p;
        int stale_rows = 0, worst_trials = 0, over_budget = 0, guard_silent = 0;
        c.ladder = ladder33;
        c.n_ladder = 33;
        c.max_trials = 8;
        c.target_metric = MPE_IQA_MAD;
        c.target = 10;
        c.mean_tol = guard ? MPE_RC_MEAN_TOL : 0;
        CHECK(t, mpe_rc_new(&rc, &c, (uint64_t)SAMPLES, &err) == 0, "open: %s", err.msg);
        for (int n = 0; n < 24; n++) {
            double drift[ROWS];
            /* rows allowed up to q 4..40 by the guard; stale rows 5..40 levels off */
            for (int r = 0; r < ROWS; r++)
                drift[r] = MPE_RC_MEAN_TOL / (4 + (int)(test_rand(&rng) % 37)) + 1e-9;
            MadModel m = { .plateau = 8, .knee = 10, .dark = 1, .drift = drift,
                           .stale = 5 + (test_rand(&rng) % 3500) / 100.0 };
            make_picture(&p, &rng);
            Outcome o = run_picture(rc, &p, n % 12 ? 'P' : 'I', &m);
            int q_allowed = 33;   /* the coarsest uniform step the guard lets through */
            for (int r = 0; r < ROWS; r++)
                while (q_allowed > 1 && mean_err_row(&m, r, q_allowed) > MPE_RC_MEAN_TOL)
                    q_allowed--;
            uint64_t bits_allowed = 0, bits_kept = 0;
            for (int r = 0; r < ROWS; r++) {
                const int q = p.q[o.bank][r];
                bits_allowed += row_bits(&p, r, q_allowed);
                bits_kept += coded_row_bits(&p, r, q);
                stale_rows += mean_err_row(&m, r, q) > MPE_RC_MEAN_TOL;
            }
            over_budget += o.trials < c.max_trials && bits_kept > bits_allowed;
            worst_trials = o.trials > worst_trials ? o.trials : worst_trials;
            guard_silent += guard && mpe_rc_guard_mean_rejects(rc) == 0;
        }
        if (guard) {
            CHECK(t, stale_rows == 0, "%d rows kept with their mean level off the source's", stale_rows);
            CHECK(t, over_budget == 0, "%d pictures cost more than the coarsest uniform q the guard allows",
                  over_budget);
            CHECK(t, worst_trials <= c.max_trials + 2, "%d trials", worst_trials);
            CHECK(t, guard_silent == 0, "%d pictures where the guard acted without saying so",
                  guard_silent);
        } else {
            /* the model tempts the controller: unguarded, it keeps stale rows */
            CHECK(t, stale_rows > 0, "no stale rows even without the guard");
        }
        mpe_rc_free(rc);
    }
}

/* A stationary clip at a constant rate (I pictures 4x the bits of a P
 * picture at equal q, every picture's rows drawn afresh): from the second
 * GOP on, the I pictures' quantisers agree within 25 % (the old TM5
 * allocation swung them from GOP to GOP: here from 24.6 to 31.0), each P
 * picture's is within 25 % of the I/P ratio from its GOP's I, and the
 * rate over the last six GOPs is within 5 % of the target. */
static double mean_q(const Picture *p, int bank)
{
    double s = 0;
    for (int r = 0; r < ROWS; r++)
        s += p->q[bank][r];
    return s / ROWS;
}

/* What a picture put in the stream: its bits, the 400 of headers
 * run_picture models, and the stuffing the VBV asked for. */
static double stream_bits(const Outcome *o)
{
    return (double)(o->bits + 400) + 8.0 * (double)o->stuffing;
}

/* The rate of `total` bits over `pictures` at 25 fps is within 5 % of the
 * target. */
static void check_rate(TestCtx *t, double total, int pictures, double bitrate)
{
    const double rate = total * 25 / pictures;
    CHECK(t, fabs(rate / bitrate - 1) <= 0.05, "rate %.0f for a target of %.0f", rate, bitrate);
}

static void t_bitrate_no_swing(TestCtx *t)
{
    TestRng rng = { 57 };
    MpeRcConfig c = base_config(MPE_RC_BITRATE);
    MpeRc *rc;
    MpeError err;
    Picture p;
    c.bitrate = 1.2e6;
    c.vbv_bits = 1835008;
    CHECK(t, mpe_rc_new(&rc, &c, (uint64_t)SAMPLES, &err) == 0, "open: %s", err.msg);
    double qi_min = 1e9, qi_max = 0, worst_ratio = 1, total = 0, qi = 0;
    for (int n = 0; n < 96; n++) {
        const char type = n % 12 ? 'P' : 'I';
        make_picture(&p, &rng);
        if (type == 'I')
            for (int r = 0; r < ROWS; r++)
                p.a[r] *= 4;
        Outcome o = run_picture(rc, &p, type, NULL);
        const double q = mean_q(&p, o.bank);
        CHECK(t, !o.underflow, "picture %d underflowed", n);
        if (n < 24)
            continue;
        total += stream_bits(&o);
        if (type == 'I') {
            qi = q;
            qi_min = fmin(qi_min, q);
            qi_max = fmax(qi_max, q);
        } else {
            worst_ratio = fmax(worst_ratio, fmax(q / qi, qi / q));
        }
    }
    CHECK(t, qi_max <= 1.25 * qi_min, "I quantisers from %.2f to %.2f across GOPs", qi_min, qi_max);
    CHECK(t, worst_ratio <= 1.25 * 1.4, "a P quantiser %.2f x its GOP's I", worst_ratio);
    check_rate(t, total, 72, c.bitrate);
    mpe_rc_free(rc);
}

/* One B picture between anchors (I B P B P ... P P, as encoder.c lays a
 * GOP of 12 out), at 1.2 Mbit/s; b_gop_picture makes the n-th picture, I
 * pictures four times a P picture's cost and B pictures a third. */
static MpeRcConfig b_gop_config(void)
{
    MpeRcConfig c = base_config(MPE_RC_BITRATE);
    c.bitrate = 1.2e6;
    c.vbv_bits = 1835008;
    c.bframes = 1;
    c.pb_ratio = 1.3;
    return c;
}

static char b_gop_picture(Picture *p, TestRng *rng, int n)
{
    const int k = n % 12;
    const char type = k == 0 ? 'I' : k == 11 || k % 2 == 0 ? 'P' : 'B';
    make_picture(p, rng);
    for (int r = 0; r < ROWS; r++)
        p->a[r] *= type == 'I' ? 4 : type == 'B' ? 1.0 / 3 : 1;
    return type;
}

/* The GOP of b_gop_config: the plan codes its B pictures --pb-ratio
 * coarser than the P pictures around them, the rate holds and the VBV
 * neither underflows nor swings the I quantiser across GOPs.  (A
 * controller that plans a B picture as a P gives it the P quantiser.) */
static void t_bitrate_b_pictures(TestCtx *t)
{
    TestRng rng = { 61 };
    const MpeRcConfig c = b_gop_config();
    MpeRc *rc;
    MpeError err;
    Picture p;
    CHECK(t, mpe_rc_new(&rc, &c, (uint64_t)SAMPLES, &err) == 0, "open: %s", err.msg);
    double qi_min = 1e9, qi_max = 0, total = 0, qp = 0, worst_pb = 1.3;
    for (int n = 0; n < 96; n++) {
        const char type = b_gop_picture(&p, &rng, n);
        Outcome o = run_picture(rc, &p, type, NULL);
        const double q = mean_q(&p, o.bank);
        CHECK(t, !o.underflow, "picture %d underflowed", n);
        if (n < 24)
            continue;
        total += stream_bits(&o);
        if (type == 'I') {
            qi_min = fmin(qi_min, q);
            qi_max = fmax(qi_max, q);
        } else if (type == 'P') {
            qp = q;
        } else if (qp > 0 && fabs(log(q / qp / 1.3)) > fabs(log(worst_pb / 1.3))) {
            worst_pb = q / qp;
        }
    }
    CHECK(t, qi_max <= 1.25 * qi_min, "I quantisers from %.2f to %.2f across GOPs", qi_min, qi_max);
    CHECK(t, worst_pb >= 1.3 / 1.25 && worst_pb <= 1.3 * 1.25, "a B quantiser %.2f x the P before it",
          worst_pb);
    check_rate(t, total, 72, c.bitrate);
    mpe_rc_free(rc);
}

/* A clip whose P and B pictures cost nearly the same at every quantiser
 * (their bits are mostly headers and vectors, as on a slow pan at a low
 * rate), with runs of one to three B pictures as --b-adapt places them,
 * at the rate constant q 12 gives (I and P at 12, B at 12 x 1.3): the
 * plan stays near q 12 rather than chasing a few percent of bits with
 * quantisers far coarser (the model of bits against q, learnt where the
 * curve is flat, once took every picture to the coarsest step for them,
 * I pictures included), and the rate holds. */
static void t_bitrate_flat_curves(TestCtx *t)
{
    TestRng rng = { 67 };
    MpeRcConfig c = base_config(MPE_RC_BITRATE);
    MpeRc *rc;
    MpeError err;
    Picture p;
    /* the GOPs' types in coding order: the anchor of a run, then its B pictures */
    static const char *gops[2] = { "IPBBBPBBPBPB", "IPBPBBPBBBPB" };
    const double a[3] = { 6000, 100, 30 }, fl[3] = { 0, 150, 60 }, qref[3] = { 12, 12, 12 * 1.3 };
    double want = 0;
    for (int k = 0; k < 12; k++) {
        const int pt = gops[0][k] == 'I' ? 0 : gops[0][k] == 'P' ? 1 : 2;
        want += ROWS * 8 * (a[pt] / qref[pt] + fl[pt]);
    }
    c.bitrate = (want + 12 * 400) * 25 / 12;
    c.vbv_bits = 1835008;
    c.bframes = 3;
    c.pb_ratio = 1.3;
    CHECK(t, mpe_rc_new(&rc, &c, (uint64_t)SAMPLES, &err) == 0, "open: %s", err.msg);
    double total = 0, worst = 1;
    int worst_at = -1;
    for (int n = 0; n < 96; n++) {
        const char type = gops[n / 12 % 2][n % 12];
        const int pt = type == 'I' ? 0 : type == 'P' ? 1 : 2;
        for (int r = 0; r < ROWS; r++) {
            p.a[r] = a[pt] * (0.8 + 0.4 * (test_rand(&rng) % 1000) / 1000.0);
            p.b[r] = 1000;
            p.a2[r] = 0;
            p.floor[r] = fl[pt];
        }
        Outcome o = run_picture(rc, &p, type, NULL);
        const double q = mean_q(&p, o.bank);
        CHECK(t, !o.underflow, "picture %d underflowed", n);
        if (n < 12)
            continue;
        total += stream_bits(&o);
        const double r = fmax(q / qref[pt], qref[pt] / q);
        if (r > worst) {
            worst = r;
            worst_at = n;
        }
    }
    CHECK(t, worst <= 1.6, "picture %d's quantiser %.2f x constant q's", worst_at, worst);
    check_rate(t, total, 84, c.bitrate);
    mpe_rc_free(rc);
}

/* Four GOPs of b_gop_picture's pictures at c (seed: their rows), each
 * row's bits a / q plus a2 / q^2 with a2 the row's a times steep_i in I
 * pictures and steep_pb in P and B pictures: no picture may underflow
 * nor be kept with rows left out, and the rate over the three GOPs after
 * the first holds.  Returns what the first picture of each type cost. */
typedef struct FirstPictures {
    double work;           /* the first I, P and B pictures' codings, in whole codings' worth */
    int partials;          /* partial codings of the whole run */
    int wholes[3];         /* whole codings of the first I, P and B picture */
    int first_partial[3];  /* that picture's first coding left rows out */
} FirstPictures;

static FirstPictures first_pictures(TestCtx *t, MpeRcConfig c, unsigned seed, double steep_i,
                                    double steep_pb)
{
    TestRng rng = { seed };
    FirstPictures f = { 0 };
    MpeRc *rc;
    MpeError err;
    Picture p;
    double total = 0;
    int seen[3] = { 0, 0, 0 };
    CHECK(t, mpe_rc_new(&rc, &c, (uint64_t)SAMPLES, &err) == 0, "open: %s", err.msg);
    if (!rc)
        return f;
    for (int n = 0; n < 48; n++) {
        const char type = b_gop_picture(&p, &rng, n);
        const int pt = type == 'I' ? 0 : type == 'P' ? 1 : 2;
        for (int r = 0; r < ROWS; r++)
            p.a2[r] = p.a[r] * (type == 'I' ? steep_i : steep_pb);
        Outcome o = run_picture(rc, &p, type, NULL);
        CHECK(t, !o.underflow, "picture %d underflowed", n);
        CHECK(t, o.kept_rows_out == 0, "picture %d kept a coding with %d rows left out", n,
              o.kept_rows_out);
        f.partials += o.partials;
        if (!seen[pt]++) {
            f.work += o.work;
            f.wholes[pt] = o.codes - o.partials;
            f.first_partial[pt] = o.first_partial;
        }
        if (n >= 12)
            total += stream_bits(&o);
    }
    check_rate(t, total, 36, c.bitrate);
    mpe_rc_free(rc);
    return f;
}

/* The first picture of each type is planned from codings that only teach
 * the model (its bits at two or more quantisers): those are partial, a
 * share of the rows each, the first one included, and the picture kept is
 * always coded whole.  Over the first GOP of b_gop_config (half the rows
 * at this height), each of the first I, P and B pictures is coded whole
 * once, the one kept, and they take at most 6 whole codings' worth
 * together (a first coding that was whole and a partial coding's rows at
 * a finer mean quantiser than the whole coding it stood for took 7.5;
 * whole codings only, 9), every picture kept has all its rows, none
 * underflows, and the rate over the next GOPs holds. */
static void t_bitrate_partial(TestCtx *t)
{
    const FirstPictures f = first_pictures(t, b_gop_config(), 71, 0, 0);
    printf("INFO test_ratecontrol/bitrate_first_pictures_partial: %.2f whole codings' worth, %d partial\n",
           f.work, f.partials);
    for (int pt = 0; pt < 3; pt++) {
        CHECK(t, f.first_partial[pt], "the first %c picture's first coding was whole", "IPB"[pt]);
        CHECK(t, f.wholes[pt] == 1, "the first %c picture was coded whole %d times", "IPB"[pt],
              f.wholes[pt]);
    }
    CHECK(t, f.partials > 0 && f.work <= 6.0 + 1e-9,
          "first I, P and B pictures: %.2f whole codings' worth", f.work);
}

/* Bits whose curve steepens at fine quantisers, as coded pictures' do
 * (at 2048x2048 an I picture's went as q^-0.7 between q 6 and 3.7 and as
 * q^-1.05 below, a P picture's as q^-0.9 and q^-4): each row a / q + a2 /
 * q^2, the q^-2 part equal to the 1 / q part at q 4 (I) or 6 (P and B),
 * at a rate that puts the plan near q 4.5.  One power of q fitted to two
 * codings far apart misplans the next coding there, and a whole coding
 * made at such a plan misses it.  The first I, P and B pictures are each
 * coded whole at most twice and take at most 6.5 whole codings' worth
 * together (a whole first coding, learning codings from the coarser side
 * only and no interpolation between the codings made: 9, the I picture
 * coded whole 3 times), none underflows, and the rate over the three GOPs
 * after the first holds. */
static void t_bitrate_steep_curves(TestCtx *t)
{
    MpeRcConfig c = b_gop_config();
    c.bitrate = 12.0e6;
    c.vbv_bits = 600 * 16384;
    const FirstPictures f = first_pictures(t, c, 73, 4, 6);
    printf("INFO test_ratecontrol/bitrate_steep_curves: first I, P and B pictures %.2f whole "
           "codings' worth\n", f.work);
    for (int pt = 0; pt < 3; pt++)
        CHECK(t, f.wholes[pt] <= 2, "the first %c picture was coded whole %d times", "IPB"[pt],
              f.wholes[pt]);
    CHECK(t, f.work <= 6.5 + 1e-9, "first I, P and B pictures: %.2f whole codings' worth", f.work);
}

static void t_deterministic(TestCtx *t)
{
    uint64_t bits[2] = { 0, 0 };
    for (int run = 0; run < 2; run++) {
        TestRng rng = { 99 };
        MpeRcConfig c = base_config(MPE_RC_QUALITY);
        MpeRc *rc;
        MpeError err;
        Picture p;
        c.target_metric = MPE_IQA_PSNR;
        c.target = 38;
        CHECK(t, mpe_rc_new(&rc, &c, (uint64_t)SAMPLES, &err) == 0, "open: %s", err.msg);
        for (int n = 0; n < 10; n++) {
            make_picture(&p, &rng);
            bits[run] = bits[run] * 31 + run_picture(rc, &p, n ? 'P' : 'I', NULL).bits;
        }
        mpe_rc_free(rc);
    }
    CHECK(t, bits[0] == bits[1], "two runs decided differently");
}

int main(void)
{
    TestCtx t;
    test_init(&t, "test_ratecontrol");
    test_run(&t, "constant_quantiser_codes_once", t_constant);
    test_run(&t, "psnr_target_met_with_fewest_bits", t_psnr_target);
    test_run(&t, "bit_budget_and_vbv", t_bit_budget);
    test_run(&t, "vbv_delay_expressible", t_vbv_delay_expressible);
    test_run(&t, "underflow_reported", t_underflow_reported);
    test_run(&t, "quality_target_under_cap", t_quality_cap);
    test_run(&t, "mad_target_within_tolerance", t_mad_target);
    test_run(&t, "mad_target_few_trials", t_mad_target_few_trials);
    test_run(&t, "mad_target_saturated_b", t_mad_target_saturated_b);
    test_run(&t, "mad_target_b_pictures", t_mad_target_b_pictures);
    test_run(&t, "bliinds_target_never_copies", t_bliinds_never_copies);
    test_run(&t, "bliinds_target_probe", t_bliinds_target_probe);
    test_run(&t, "mad_guard_keeps_mean_level_in_a_fade", t_mad_guard_fade);
    test_run(&t, "bitrate_no_swing_from_gop_to_gop", t_bitrate_no_swing);
    test_run(&t, "bitrate_b_pictures_pb_ratio_coarser", t_bitrate_b_pictures);
    test_run(&t, "bitrate_flat_curves_no_chase", t_bitrate_flat_curves);
    test_run(&t, "bitrate_first_pictures_partial", t_bitrate_partial);
    test_run(&t, "bitrate_steep_curves", t_bitrate_steep_curves);
    test_run(&t, "deterministic", t_deterministic);
    return test_finish(&t);
}
