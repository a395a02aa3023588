/* ratecontrol.c — see ratecontrol.h.
 *
 * One search serves both targets.  A trial is "ok" when it meets the goal:
 * quality mode, the metric is at least as good as the target; bit-rate
 * mode, the picture fits its bit budget.  Quality mode wants the largest ok
 * quantiser (fewest bits), bit-rate mode the smallest (best quality).  (A
 * bit rate plans its quantiser instead, see plan_q, and searches only
 * where the VBV cannot hold the plan.)  The
 * search predicts a quantiser from a model y = g(value) linear in ln(q)
 * (PSNR: dB; MAD: ln MAD; BLIINDS-II: score; bits: ln bits), with the slope
 * taken from this picture's trials when there are two, else from earlier
 * pictures, until it holds an ok and a failing trial one quantiser apart.
 * Then rows are switched from the ok bank to the failing one, greedily by
 * what each switch gains per unit of what it costs, for as long as the
 * result stays ok: exactly for PSNR and bits (row SSE and bits add up),
 * estimated and then checked with one metric evaluation for MAD and
 * BLIINDS-II.
 *
 * A MAD or BLIINDS-II target is also guarded.  MAD compares contrast, not
 * level: a picture that only got darker or brighter (a fade, a cut from
 * black to white) scores 0 against a stale copy of its reference, and in
 * dark pictures it sees nothing at any quantiser; BLIINDS-II never sees the
 * source at all; neither sees chroma.  So "the copy meets the target" can
 * mean a frozen or blank picture.  What both miss is the mean level, and
 * that is cheap and exact per row: a coding (or mix) in which any row's
 * mean Y, Cb or Cr is off the source's by more than cfg.mean_tol does not
 * count as meeting the target, whatever its score.  Normal coding stays
 * far inside it (intra DC is exact to a level; on the solar clip every kept
 * row is within 0.7), a stale or blank row is far outside. */
#include "ratecontrol.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "encoder/encoder.h"

typedef struct Trial {
    int q;                 /* uniform quantiser: its index in the ladder; 0 for a mix */
    double q_mean;
    uint64_t bits;         /* slices only */
    uint64_t sse;
    double metric;         /* target metric (quality mode) */
    double mean_err;       /* largest row mean-level error (see the guard above) */
    int ok;
    int guarded;           /* met the metric target but turned down by the guard */
    int partial;           /* --bitrate: some rows left out, bits and q_mean estimated (partial_estimate) */
    double partial_q;      /* a partial coding's: the mean quantiser of the whole coding it stands for */
    uint8_t *row_q;
    uint64_t *row_bits, *row_sse;
    double *row_mean_err;
} Trial;

/* --bitrate: the most codings of one picture plan_own interpolates between */
#define ABR_POINTS 8

/* --bitrate's model of a picture's bits (see plan_q), per type: I, P, B */
typedef struct AbrModel {
    double c[3], a[3];   /* bits = c q^-a */
    int have[3];
    int n[3];            /* pictures of the type coded */
} AbrModel;

struct MpeRc {
    MpeRcConfig cfg;
    double samples;        /* luma samples per picture */
    int n;                 /* rows */
    uint8_t ladder[64];    /* the quantisers a row may use, ascending (MPEG-1 units) */
    int nl;

    /* VBV (13818-2 Annex C): fullness just before the current picture is removed */
    int vbv, cbr;
    int capped;            /* a quality target under a bit-rate cap */
    double fill_rate;      /* bit/s entering the buffer */
    double vbv_size;       /* bits */
    double vbv_top;        /* the most the buffer may hold before a removal (see mpe_rc_new) */
    double tick_bits;      /* bits arriving in one period of the 90 kHz clock */
    double fullness;
    int started;           /* the first picture has set the decoding schedule */
    int pictures;          /* pictures ended since mpe_rc_new */
    double end_fullness;   /* the chunk contract's fullness after its last picture (cfg) */

    /* --bitrate: the planned quantiser (see plan_q) */
    AbrModel abr;          /* bits of I, P and B pictures as a function of q */
    double gop_n[3];       /* pictures of each type in a whole GOP (see abr_count) */
    double prior_b;        /* B pictures in a GOP of the fixed pattern */
    int coded_n[3];        /* pictures of each type coded */
    double pb, ip;         /* B quantiser / P quantiser, P quantiser / I quantiser */
    int pt;                /* the current picture's type for the model: 0 I, 1 P, 2 B */
    double abr_err;        /* bits written beyond the plan's shares of the rate so far */
    double abr_spent;      /* bits written (stuffing included) */
    int abr_pics;          /* pictures written */
    double shares[3];      /* each type's share of its GOP at the current plan (see plan_q) */
    double plan, plan0;    /* the current picture's planned quantiser, and its first plan */
    int planning;          /* its first codings, while it may be planned again */
    int spare_bank;        /* a coding that fits, kept while a finer one is tried */
    int partial_k;         /* a partial coding codes every partial_k-th row (1: none, under 32 rows) */
    int plan_partials;     /* partial codings of the picture so far */
    int whole_after;       /* whole codings of the picture made after a partial one */
    unsigned plan_banks;   /* banks holding a coding of the picture made while planning */
    double plan_x[ABR_POINTS], plan_y[ABR_POINTS]; /* their ln q and ln bits (see plan_own) */
    int plan_n;
    int gop_pos;           /* pictures since the GOP's I */
    double aq[2], ab[2];   /* ln q and ln bits of the picture's last two codings */

    /* a quality target's cap (Test Model 5's picture-level allocation) */
    double complexity[2];  /* X = bits * mean q, I and P */
    double gop_left;       /* bits left for the current GOP */
    int left_i, left_p;    /* pictures of each type left in it */

    /* quality model per picture type: last (ln q, y) and slope dy/dlnq; a
     * MAD target keeps B pictures apart (index 2: their curves are far
     * flatter than P pictures'), the other targets do not */
    int have_last[3];
    double last_x[3], last_y[3], slope[3];
    /* a BLIINDS-II target: last_x and last_y of the last picture of the
     * type that ended below the top step (see bl_after_probe) */
    int have_fine[3];
    double fine_x[3], fine_y[3];
    double avg_bits;       /* a MAD or BLIINDS-II target: mean bits of the pictures so far (decaying) */
    int n_avg;

    /* the current picture */
    int t;                 /* 0 = I, 1 = P */
    int mt;                /* the quality model's index (see have_last) */
    int saturated;         /* a metric search's last coding, ok, took as many bits as
                              the finer ok one before it (see mpe_rc_next) */
    uint64_t header_bits;
    double budget;         /* bit-rate mode: target bits of the whole picture */
    double vbv_max;        /* VBV: bits the picture may not exceed (underflow) */
    double hard_max;       /* that, or less under a cap on a quality target */
    double stuff_min;      /* VBV constant rate: bits the picture must reach (overflow) */
    int trials;
    double px[2], py[2];   /* (ln q, y) of the picture's last two uniform trials */
    int np;
    int run_ok, run_len;   /* the side (ok or not) of the last codings in a row, and how many */
    int phase;             /* see mpe_rc_next */
    int cur;               /* bank the last step was about */
    int ok_bank, fail_bank;
    int mix_bank;
    double mix_frac;
    int done_bank;
    int emergency;         /* coding ever higher quantisers to fit the VBV */
    int top_failed;        /* a BLIINDS-II target: the probe at the top step failed */
    double probe_bits;     /* and what it took */
    int guard_rejects;     /* trials the mean-level guard turned down */
    Trial bank[MPE_RC_BANKS];
    uint8_t *mix_src;
    int *order;
    double *gain;
};

enum { PH_SEARCH, PH_MIX_EVAL, PH_DONE };

static int better_is_higher(const MpeRc *rc)
{
    return rc->cfg.mode == MPE_RC_QUALITY && rc->cfg.target_metric == MPE_IQA_PSNR;
}

/* the model's y for a value (quality metric or bits) */
static double model_y(const MpeRc *rc, double v)
{
    if (rc->cfg.mode == MPE_RC_BITRATE)
        return log(v > 1 ? v : 1);
    if (rc->cfg.target_metric == MPE_IQA_MAD)   /* MAD reaches 0 (nothing visible): offset the log */
        return log((v > 0 ? v : 0) + 0.05 * rc->cfg.target);
    return v;
}

static double default_slope(const MpeRc *rc)
{
    if (rc->cfg.mode == MPE_RC_BITRATE)
        return -1.0;            /* bits ~ 1/q */
    switch (rc->cfg.target_metric) {
    case MPE_IQA_PSNR: return -20.0 / log(10.0);   /* MSE ~ q^2 */
    case MPE_IQA_MAD: return 1.0;
    default: return 8.0;                           /* BLIINDS-II: a rough start */
    }
}

/* The ladder entry nearest to quantiser q (on a log scale). */
static int clamp_q(const MpeRc *rc, double q)
{
    int best = 0;
    if (!(q == q) || q <= rc->ladder[0])
        return 0;
    for (int k = 1; k < rc->nl; k++)
        if (fabs(log(q / rc->ladder[k])) < fabs(log(q / rc->ladder[best])))
            best = k;
    return best;
}

static double qval(const MpeRc *rc, int k)
{
    return rc->ladder[k];
}

static double psnr_of(const MpeRc *rc, uint64_t sse)
{
    double mse = (double)sse / rc->samples;
    return mse > 0 ? 10.0 * log10(255.0 * 255.0 / mse) : 100.0;
}

/* A MAD target: the predicted search that ends within a band (see
 * metric_next_q).  BLIINDS-II keeps the bracket search: its score is not
 * monotone in q, and on the 2048x2048 clip ending on the first coding in
 * MAD's band (10 % wide) cost 12 % more bits and more trials than closing
 * the bracket; it ends early only by the rules of bl_enough. */
static int metric_search(const MpeRc *rc)
{
    return rc->cfg.mode == MPE_RC_QUALITY && rc->cfg.target_metric == MPE_IQA_MAD;
}

/* A BLIINDS-II target: the bracket search, after a probe (see bl_probe) */
static int bliinds_search(const MpeRc *rc)
{
    return rc->cfg.mode == MPE_RC_QUALITY && rc->cfg.target_metric == MPE_IQA_BLIINDS;
}

static int guard_on(const MpeRc *rc)
{
    return rc->cfg.mode == MPE_RC_QUALITY && rc->cfg.target_metric != MPE_IQA_PSNR &&
           rc->cfg.mean_tol > 0;
}

static int metric_met(const MpeRc *rc, const Trial *tr)
{
    if (better_is_higher(rc))
        return tr->metric >= rc->cfg.target - 1e-9;   /* a mix is planned to the SSE budget */
    return tr->metric <= rc->cfg.target;
}

/* Sets tr->ok and tr->guarded. */
static void judge(MpeRc *rc, Trial *tr)
{
    tr->guarded = 0;
    if (rc->cfg.mode == MPE_RC_BITRATE) {
        tr->ok = (double)(tr->bits + rc->header_bits) <= rc->budget;
        return;
    }
    tr->ok = metric_met(rc, tr);
    if (tr->ok && guard_on(rc) && tr->mean_err > rc->cfg.mean_tol) {
        tr->ok = 0;
        tr->guarded = 1;
        rc->guard_rejects++;
    }
}

static double trial_value(const MpeRc *rc, const Trial *tr)
{
    return rc->cfg.mode == MPE_RC_BITRATE ? (double)(tr->bits + rc->header_bits) : tr->metric;
}

static double goal_value(const MpeRc *rc)
{
    return rc->cfg.mode == MPE_RC_BITRATE ? rc->budget : rc->cfg.target;
}

/* --bitrate: a GOP's P and B pictures.  --b-adapt places B pictures where
 * they pay, so runs vary with the content: the share of B pictures among
 * the P and B pictures coded so far, weighted against one GOP of the fixed
 * pattern (the start, and all of it under --b-adapt 0, where the coded
 * pictures follow the pattern). */
static void abr_count(MpeRc *rc)
{
    const double rest = MPE_MAX(rc->cfg.gop, 1) - 1;
    const double b = (rc->prior_b + rc->coded_n[2]) / (rest + rc->coded_n[1] + rc->coded_n[2]);
    rc->gop_n[0] = 1;
    rc->gop_n[2] = rest > 0 ? rest * b : 0;
    rc->gop_n[1] = rest - rc->gop_n[2];
}

void mpe_rc_free(MpeRc *rc)
{
    if (!rc)
        return;
    for (int b = 0; b < MPE_RC_BANKS; b++) {
        free(rc->bank[b].row_q);
        free(rc->bank[b].row_bits);
        free(rc->bank[b].row_sse);
        free(rc->bank[b].row_mean_err);
    }
    free(rc->mix_src);
    free(rc->order);
    free(rc->gain);
    free(rc);
}

int mpe_rc_new(MpeRc **out, const MpeRcConfig *cfg, uint64_t luma_samples, MpeError *err)
{
    MpeRc *rc = calloc(1, sizeof(*rc));
    const size_t n = (size_t)cfg->n_rows;

    *out = NULL;
    if (!rc)
        return mpe_error(err, -ENOMEM, "out of memory for rate control");
    rc->cfg = *cfg;
    rc->n = cfg->n_rows;
    rc->nl = MPE_MIN(cfg->n_ladder, 64);
    memcpy(rc->ladder, cfg->ladder, (size_t)rc->nl);
    if (rc->nl < 1) {
        free(rc);
        return mpe_error(err, -EINVAL, "rate control: no quantisers to choose from");
    }
    rc->samples = (double)luma_samples;
    rc->partial_k = rc->n >= 64 ? 4 : rc->n >= 32 ? 2 : 1;
    for (int b = 0; b < MPE_RC_BANKS; b++) {
        rc->bank[b].row_q = calloc(n, 1);
        rc->bank[b].row_bits = calloc(n, sizeof(uint64_t));
        rc->bank[b].row_sse = calloc(n, sizeof(uint64_t));
        rc->bank[b].row_mean_err = calloc(n, sizeof(double));
        if (!rc->bank[b].row_q || !rc->bank[b].row_bits || !rc->bank[b].row_sse ||
            !rc->bank[b].row_mean_err)
            goto nomem;
    }
    rc->mix_src = calloc(n, 1);
    rc->order = calloc(n, sizeof(int));
    rc->gain = calloc(n, sizeof(double));
    if (!rc->mix_src || !rc->order || !rc->gain)
        goto nomem;

    rc->vbv = cfg->vbv_bits > 0 && (cfg->bitrate > 0 || cfg->maxrate > 0);
    rc->capped = cfg->mode == MPE_RC_QUALITY && cfg->bitrate > 0;
    if (rc->vbv) {
        /* the model runs on what the sequence header can say: whole 16384-bit
         * buffer units and a rate in 400 bit/s units */
        rc->vbv_size = floor(cfg->vbv_bits / 16384.0) * 16384.0;
        /* constant rate only in bit-rate mode without a higher peak */
        rc->cbr = cfg->mode == MPE_RC_BITRATE && !(cfg->maxrate > cfg->bitrate);
        rc->fill_rate = rc->cbr ? cfg->bitrate : (cfg->maxrate > 0 ? cfg->maxrate : cfg->bitrate);
        rc->fill_rate = ceil(rc->fill_rate / 400.0) * 400.0;
        rc->tick_bits = rc->fill_rate / 90000.0;
        /* Constant rate: vbv_delay says how long the buffer has been filling
         * since the picture's start code came in, at most 0xFFFE ticks, so at
         * low rates it caps the fullness well below vbv_buffer_size (1.8
         * Mbit at 300 kbit/s would be 6 s; vbv_delay says 0.73 s at most).
         * One tick to spare also keeps a decoder that takes each picture's
         * rounded vbv_delay as its decoding time (half a tick off) from
         * overflowing. */
        rc->vbv_top = rc->cbr ? fmin(rc->vbv_size, 0xFFFE * rc->tick_bits) - rc->tick_bits
                              : rc->vbv_size;
        /* variable rate: the decoder waits for a full buffer (Annex C.3.2);
         * constant rate: start 90 % full, at most 0.7 s of data */
        rc->fullness = rc->cbr ? fmin(0.9 * rc->vbv_top, 0.7 * rc->fill_rate) : rc->vbv_size;
    }
    rc->abr.a[0] = rc->abr.a[1] = rc->abr.a[2] = 1.0;   /* bits ~ 1/q until a picture says otherwise */
    rc->pb = cfg->pb_ratio > 0 ? cfg->pb_ratio : 1.0;
    rc->ip = cfg->ip_ratio > 0 ? cfg->ip_ratio : 1.0;
    /* the GOP as encoder.c's gop_type lays out its fixed pattern: every
     * (bframes+1)-th picture after the I is a P, and so is the last */
    for (int k = 1; k < MPE_MAX(cfg->gop, 1); k++)
        rc->prior_b += !(cfg->bframes <= 0 || k == cfg->gop - 1 || k % (cfg->bframes + 1) == 0);
    abr_count(rc);
    if (rc->capped) {
        /* Test Model 5's initial complexities */
        rc->complexity[0] = 160.0 * cfg->bitrate / 115.0;
        rc->complexity[1] = 60.0 * cfg->bitrate / 115.0;
    }
    *out = rc;
    return 0;
nomem:
    mpe_rc_free(rc);
    return mpe_error(err, -ENOMEM, "out of memory for rate control");
}

void mpe_rc_stream_rates(const MpeRc *rc, uint32_t *bit_rate_400, uint32_t *vbv_16k)
{
    *bit_rate_400 = 0;
    *vbv_16k = 0;
    if (!rc->vbv)
        return;
    *bit_rate_400 = (uint32_t)ceil(rc->fill_rate / 400.0);
    *vbv_16k = (uint32_t)floor(rc->vbv_size / 16384.0);
}

double mpe_rc_vbv_fullness(const MpeRc *rc)
{
    return rc->vbv ? rc->fullness : -1.0;
}

/* --bitrate: one quantiser for the whole stream, I pictures --ip-ratio
 * finer and B pictures --pb-ratio coarser (as --q codes them: a B picture
 * is no reference, what it loses stays in it), planned from what pictures
 * cost, never from a bit budget per picture or per GOP.  Bits of a
 * picture at quantiser q are modelled as C q^-a per picture type: C (its
 * complexity) blurred over the earlier pictures of the type, a learnt from
 * the first picture of the type, coded at two quantisers (a mostly flat
 * picture's bits hardly move with q).  The base quantiser is the one at
 * which an average GOP of such pictures (P and B pictures in the
 * proportion coded so far, see abr_count) comes to the rate, less what has been spent
 * beyond the plan so far (repaid over ABR_REPAY seconds; each picture is
 * planned to take its type's share of the GOP, an I more than a picture's
 * worth, a B less, and that is no over- or underspend).  Bits at equal
 * quality favour a constant quantiser, and this keeps it as constant as
 * the rate allows: no swing from GOP to GOP, one I/P/B ratio everywhere.
 * The VBV overrides the plan only for a picture the buffer cannot hold
 * (the search in mpe_rc_next), or one so small that a constant-rate buffer
 * would overflow (it is coded finer: those bits would be stuffing), and
 * the pictures after an I leave the buffer what the next I is expected to
 * take (mpe_rc_start_frame).  A type not yet coded takes abr_complexity's
 * ratios to the types that were; after the first picture, every plan
 * comes from coded pictures.
 *
 * The first picture of a type is planned from codings of its own: all
 * but the one kept only teach the model, so where the picture has 32
 * rows or more they are partial codings (a partial_k-th of the rows,
 * every other row from 32 rows, every fourth from 64, coded as the whole
 * coding would code them; fill_planned spreads the two ladder steps of a
 * plan between them over those rows and the others alike, so that they
 * stand for the picture), the first one included: the bits of the
 * picture at a partial coding's plan are the first whole coding's scaled
 * by the ratio the same rows show, or before there is one, the rows' bits
 * scaled by the share of the rows they are (partial_estimate).  The
 * second coding learns how the bits move with q: after a partial first
 * coding it goes where that one plans the picture at the model's exponent
 * (1 for a type not coded yet), or ABR_LEARN away toward it where that is
 * nearer (after a whole one, ABR_LEARN coarser as before: that one may
 * be kept; whole learning codings at the plan cost make rd's CIF clips
 * 0.9 % in session 6, docs/PERF.md).  Each plan
 * after that comes from the codings made (plan_own: between two of them,
 * through both); one that falls between two codings, or within ABR_NEAR
 * of a partial one, is coded whole, and kept when it plans the picture
 * within ABR_NEAR_KEPT of itself (else planned and coded whole once
 * more).  On the 2048^2 solar clip at 8 Mbit/s the first I, P and B
 * pictures took 2 whole and 3 partial codings (of every other row), 1 and
 * 2, 2 and 2; now 1 whole and 3 partial (of every fourth row), 1 and 3, 1
 * and 2 (docs/PERF.md, wt-abr: the process's CPU time -17 %, BD-rate of
 * --bitrate against --q unchanged or better on 2048^2 and 1024^2 clips).
 * Every eighth row at 128 rows and more missed the rate by up to 14 % at
 * a low rate on the solar clip. */
#define ABR_BLUR 0.2          /* least weight of the newest picture in its type's complexity */
#define ABR_REPAY 1.0         /* seconds over which an over- or underspend is repaid */
#define ABR_A_MIN 0.5         /* least exponent a learnt (see mpe_rc_next) */
#define ABR_LEARN 1.4         /* q ratio of the second coding that learns a type's a */
#define ABR_NEAR 0.05         /* |ln q| of a coding from the plan that codes the plan */
#define ABR_NEAR_KEPT 0.1     /* that, for the first whole coding after partial ones */
#define ABR_FIRST_RANGE 4.0   /* the first picture's plan: within 4x coarser, 16x finer than its guess */
#define ABR_BRACKET 0.5       /* widest ln q between two codings that plan_own interpolates */

/* A type not yet coded borrows from one that was, at these complexity
 * ratios; the first picture of all, from nothing, takes Test Model 5's
 * start for the I.  Test Model 5's ratios (I 160 : P 60 : B 42) are for
 * its own coding; this encoder's P and B pictures at --q's ratios cost
 * from 3 % of an I (a still) to 110 % (film grain) on make rd's clips,
 * geometric means 0.32 (P) and 0.15 (B).  The first I is planned from
 * lower ones, 0.19 and 0.09: too coarse, it costs its whole GOP (cheap P
 * pictures after it cannot refine a still), too fine only what the
 * pictures after it repay (make rd, --bitrate against --q, mean BD-rate
 * PSNR-Y: +12.3 % at the means, +10.9 % at 0.25 / 0.12, +8.3 % here). */
static const double abr_complexity[3] = { 160.0, 30.0, 14.0 };

static double plan_q(const MpeRc *rc, int t, const AbrModel *m, double *shares)
{
    const double per_pic = rc->cfg.bitrate / rc->cfg.fps;
    const double gop = rc->cfg.gop > 0 ? rc->cfg.gop : 1;
    /* the type a missing one borrows from: I and P each other, B from P */
    static const int borrow[3][2] = { { 1, 2 }, { 0, 2 }, { 1, 0 } };
    double c[3], a[3];
    for (int k = 0; k < 3; k++) {
        const int o = m->have[borrow[k][0]] ? borrow[k][0] : m->have[borrow[k][1]] ? borrow[k][1] : -1;
        c[k] = m->have[k] ? m->c[k] : o >= 0 ? m->c[o] * abr_complexity[k] / abr_complexity[o]
               : abr_complexity[k] * rc->cfg.bitrate / 115.0;   /* from nothing: Test Model 5's start */
        a[k] = m->have[k] ? m->a[k] : o >= 0 ? m->a[o] : 1.0;   /* the same ratio at every q */
    }
    const double repay = fmax(ABR_REPAY * rc->cfg.fps, gop);
    const double want = fmin(fmax(per_pic - rc->abr_err / repay, per_pic / 3), 3 * per_pic);
    const double qmin = rc->ladder[0], qmax = rc->ladder[MPE_MAX(rc->nl - 1 - rc->cfg.n_drop, 0)];
    const double ratio[3] = { 1 / rc->ip, 1, rc->pb };
    double bits[3], sum = 0;
    /* the mean bits of a GOP's pictures fall as the base quantiser rises:
     * bisect ln q (64 halvings: exact to the last bit of a double).  Every
     * type stops at the coarsest quantiser, but I pictures may go on to it */
    double lo = log(qmin / 2), hi = log(qmax * rc->ip * 2);
    for (int i = 0; i <= 64; i++) {
        const double qb = exp(0.5 * (lo + hi));
        sum = 0;
        for (int k = 0; k < 3; k++) {
            bits[k] = c[k] * pow(fmin(qb * ratio[k], qmax), -a[k]);
            sum += rc->gop_n[k] * bits[k];
        }
        if (i == 64)
            break;   /* bits[] at the plan */
        if (sum / gop > want)
            lo = 0.5 * (lo + hi);
        else
            hi = 0.5 * (lo + hi);
    }
    /* each type's part of its GOP at the plan, in pictures' worth of the
     * rate: an I picture is meant to take more than its share, a B less */
    if (shares)
        for (int k = 0; k < 3; k++)
            shares[k] = bits[k] * gop / sum;
    return fmin(fmax(exp(0.5 * (lo + hi)) * ratio[t], qmin), qmax);
}

/* The current picture's plan from its own codings (plan_x, plan_y): its
 * bits modelled through its coding tr at the type's exponent a, then, while
 * the plan falls between two of its codings at most ABR_BRACKET apart in
 * ln q, through those two (the picture's bits are far from one power of q
 * over the range its codings span: at 2048^2 an I picture's went as
 * q^-0.7 between q 6 and 3.7 and as q^-1.05 between 3.7 and 2.5, a P
 * picture's as q^-0.9 and q^-4).  *between: the plan lies between two such
 * codings, so a coding at it is an interpolation, not a guess. */
static double plan_own(MpeRc *rc, const Trial *tr, double a, int *between)
{
    const int t = rc->pt;
    AbrModel own = rc->abr;
    own.have[t] = 1;
    own.a[t] = a;
    own.c[t] = (double)(tr->bits + rc->header_bits) * pow(tr->q_mean, a);
    double q = plan_q(rc, t, &own, rc->shares);
    *between = 0;
    for (int it = 0; it < 8; it++) {
        const double x = log(q);
        int lo = -1, hi = -1;
        for (int i = 0; i < rc->plan_n; i++) {
            if (rc->plan_x[i] <= x && (lo < 0 || rc->plan_x[i] > rc->plan_x[lo]))
                lo = i;
            if (rc->plan_x[i] > x && (hi < 0 || rc->plan_x[i] < rc->plan_x[hi]))
                hi = i;
        }
        const double w = lo >= 0 && hi >= 0 ? rc->plan_x[hi] - rc->plan_x[lo] : 0;
        const double s = w > 0 ? -(rc->plan_y[hi] - rc->plan_y[lo]) / w : 0;
        /* a slope the model would not learn (bits that hardly move: a
         * still P picture's, all skipped at both) says nothing between them */
        if (!(w > 0.04 && w <= ABR_BRACKET && s >= ABR_A_MIN && s <= 3.0))
            break;
        own.a[t] = s;
        own.c[t] = exp(rc->plan_y[lo] + own.a[t] * rc->plan_x[lo]);
        const double next = plan_q(rc, t, &own, rc->shares);
        *between = 1;
        if (fabs(log(next / q)) < 1e-4)
            break;
        q = next;
    }
    return q;
}

/* Bits for this picture from the GOP's remaining budget, weighted by the
 * complexity of I and P pictures (TM5 step 1, no B pictures, K_P = 1). */
static double allocate_bits(MpeRc *rc)
{
    const double per_frame = rc->cfg.bitrate / rc->cfg.fps;
    const double xi = rc->complexity[0], xp = rc->complexity[1];
    double t;

    if (rc->t == 0)
        t = rc->gop_left / (1.0 + rc->left_p * xp / xi);
    else
        t = rc->gop_left / (rc->left_p + rc->left_i * xi / xp);
    return fmax(t, per_frame / 8.0);
}

/* Pictures of the chunk left to code, this one included; 0 without chunks
 * (or past the chunk: the run's last chunk may be shorter). */
static int chunk_left(const MpeRc *rc)
{
    return rc->vbv && rc->cfg.chunk_frames > 0 ? MPE_MAX(rc->cfg.chunk_frames - rc->pictures, 0)
                                               : 0;
}

/* Bits the next `left` pictures may take in all and still end the chunk at
 * its agreed fullness. */
static double chunk_allowance(const MpeRc *rc, int left)
{
    return rc->fullness - rc->end_fullness + left * rc->fill_rate / rc->cfg.fps;
}

/* The VBV contract (MpeRcConfig.chunk_frames): constant rate, chunk k
 * starts k * chunk_bits mod 8 above the first chunk's start (whole-byte
 * pictures can only end a chunk on the fraction of a byte the rate brought
 * in), variable rate, with a full buffer as the first does. */
static void chunk_contract_start(MpeRc *rc)
{
    const double chunk_bits = rc->cfg.chunk_frames * rc->fill_rate / rc->cfg.fps;

    rc->end_fullness = rc->fullness;
    if (!rc->cbr || rc->cfg.chunk_frames <= 0)
        return;
    rc->end_fullness += fmod((rc->cfg.chunk_index + 1.0) * chunk_bits, 8.0);
    rc->fullness += fmod(rc->cfg.chunk_index * chunk_bits, 8.0);
}

/* In the chunk's last GOP, its budget is no more than what leaves the next
 * chunk its fullness (x265's --vbv-end, spread over the GOP). */
static void chunk_contract_frame(MpeRc *rc)
{
    const int left = chunk_left(rc);

    if (left > rc->cfg.gop || !(rc->cfg.mode == MPE_RC_BITRATE || rc->capped))
        return;
    if (rc->cfg.mode == MPE_RC_BITRATE) {
        /* the picture's part of what the pictures left may take, by the
         * plan's shares (the rest of the chunk is P and B pictures, at
         * their mean share) */
        const double gop = MPE_MAX(rc->cfg.gop, 2), share = rc->shares[rc->pt];
        const double rest_share = (gop - rc->shares[0]) / (gop - 1);
        rc->budget = fmin(rc->budget, fmax(chunk_allowance(rc, left), 0) * share /
                                          (share + (left - 1) * rest_share));
        return;
    }
    rc->gop_left = fmin(rc->gop_left, fmax(chunk_allowance(rc, left), 0));
    rc->budget = allocate_bits(rc);
}

int mpe_rc_start_frame(MpeRc *rc, char type, uint64_t header_bits, uint64_t start_code_bits)
{
    rc->t = type == 'I' ? 0 : 1;
    rc->pt = type == 'I' ? 0 : type == 'B' ? 2 : 1;
    rc->mt = type == 'B' && metric_search(rc) ? 2 : rc->t;
    rc->header_bits = header_bits;
    rc->trials = 0;
    rc->np = 0;
    rc->run_len = 0;
    rc->saturated = 0;
    rc->phase = PH_SEARCH;
    rc->ok_bank = rc->fail_bank = rc->mix_bank = rc->done_bank = -1;
    rc->cur = -1;
    rc->emergency = 0;
    rc->top_failed = 0;
    rc->guard_rejects = 0;
    if (rc->capped) {
        if (rc->t == 0) {
            /* a new GOP: its budget joins what the last one left over, less
             * the share of the pictures a scene cut took from it (they
             * will not come) */
            const int gop = rc->cfg.gop;
            rc->gop_left += rc->cfg.bitrate * (gop - MPE_MAX(rc->left_p, 0)) / rc->cfg.fps;
            rc->left_i = 1;
            rc->left_p = gop - 1;
        }
        rc->budget = allocate_bits(rc);
    }
    rc->gop_pos = rc->t == 0 ? 0 : rc->gop_pos + 1;
    if (rc->cfg.mode == MPE_RC_BITRATE) {
        /* A GOP's shares of the rate add up to the GOP only under one
         * model: where the model moved within it (the first GOP's P and B
         * pictures came out dearer or cheaper than the I's plan assumed),
         * the shares of its pictures, each from the model of its time,
         * leave an error that no share would repay.  At each I, the
         * overspend is what was written beyond the rate */
        if (rc->pt == 0 && rc->abr_pics > 0)
            rc->abr_err = rc->abr_spent - rc->abr_pics * rc->cfg.bitrate / rc->cfg.fps;
        /* the picture is coded at its plan; the budget is only what the VBV allows */
        rc->budget = INFINITY;
        rc->plan = rc->plan0 = plan_q(rc, rc->pt, &rc->abr, rc->shares);
        rc->planning = 1;
        rc->spare_bank = -1;
    }
    rc->vbv_max = INFINITY;
    rc->stuff_min = 0;
    if (rc->vbv && rc->cbr && !rc->started) {
        /* the first picture's vbv_delay fixes when every picture is decoded
         * (a frame period apart): a whole number of ticks, so that the
         * model's fullness is the one the stream's schedule gives */
        const double d = floor(((rc->fullness - (double)start_code_bits) / rc->tick_bits));
        rc->fullness = (double)start_code_bits + d * rc->tick_bits;
    }
    if (rc->vbv && !rc->started)
        chunk_contract_start(rc);
    rc->started = 1;
    if (rc->vbv && chunk_left(rc) > 0)
        chunk_contract_frame(rc);
    if (rc->vbv) {
        /* never take the buffer below empty (a tick to spare, see
         * mpe_rc_new); aim to keep a tenth of it */
        rc->vbv_max = rc->fullness - rc->tick_bits;
        if (rc->cfg.mode == MPE_RC_BITRATE || rc->capped)
            rc->budget = fmin(rc->budget, fmax(rc->fullness - 0.1 * rc->vbv_top, 0.5 * rc->fullness));
        if (rc->cbr)
            rc->stuff_min = rc->fullness + rc->fill_rate / rc->cfg.fps - rc->vbv_top;
        if (rc->cfg.mode == MPE_RC_BITRATE && rc->t == 1 && rc->abr.have[0]) {
            /* the P pictures up to the next I leave the buffer what that I
             * is expected to take at its plan (and the tenth to spare):
             * without it they drain a buffer the I then underflows */
            const AbrModel *m = &rc->abr;
            const double k = MPE_MAX(rc->cfg.gop - rc->gop_pos, 1);
            const double next_i = m->c[0] * pow(plan_q(rc, 0, m, NULL), -m->a[0]);
            const double fill = fmin(rc->fill_rate / rc->cfg.fps, rc->vbv_size);
            const double room = rc->fullness + k * fill - next_i - 0.1 * rc->vbv_top;
            rc->budget = fmin(rc->budget, fmax(room / k, 0.25 * fill));
        }
    }
    if (chunk_left(rc) == 1)
        /* the chunk's last picture leaves the next chunk its agreed fullness */
        rc->vbv_max = fmin(rc->vbv_max, chunk_allowance(rc, 1));
    /* a cap on a quality target: no picture above its share of the rate
     * (the finest coding within it, when the target asks for more) */
    rc->hard_max = rc->capped ? fmin(rc->vbv_max, rc->budget) : rc->vbv_max;
    if (rc->vbv && rc->cbr) {
        /* the last byte of the picture start code is in the buffer
         * (fullness - header bits) / rate seconds before the picture is
         * decoded (13818-2 C.3, 11172-2 C.1.5); vbv_top keeps it within
         * 0xFFFE, and only a stream that has underflowed could go below 1 */
        double d = (rc->fullness - (double)start_code_bits) / rc->tick_bits;
        return d < 1 ? 1 : d > 0xFFFE ? 0xFFFE : (int)lround(d);
    }
    return 0xFFFF;
}

static void fill_uniform(MpeRc *rc, int b, int k)
{
    memset(rc->bank[b].row_q, rc->ladder[k], (size_t)rc->n);
    rc->bank[b].q = k;
    rc->bank[b].partial = 0;
}

/* The rows a partial coding codes: every partial_k-th, from the middle of the first k. */
static int partial_row(const MpeRc *rc, int r)
{
    return r % rc->partial_k == rc->partial_k / 2;
}

/* Rows at quantiser q, which may lie between two steps of the ladder: the
 * two steps around it, spread over the rows in the proportion that makes
 * their mean q (rounding error diffused down the picture).  The trial's q
 * is the finer step: a search for a coarser coding starts above it.  A
 * partial coding codes its rows as the whole coding would, and leaves the
 * others out (0). */
static void fill_planned(MpeRc *rc, int b, double q, int partial)
{
    const int top = MPE_MAX(rc->nl - 1 - rc->cfg.n_drop, 0);
    int k = 0;
    while (k < top && rc->ladder[k + 1] <= q)
        k++;
    const double lo = rc->ladder[k], hi = k < top ? rc->ladder[k + 1] : lo;
    const double f = hi > lo ? (q - lo) / (hi - lo) : 0;
    /* diffused apart over the rows a partial coding codes and the others,
     * so that each set's mean is q: a partial coding's rows stand for the
     * picture (one diffusion over all rows near f = 0.5 puts the coarser
     * step on every other row, and every other row is what it codes) */
    double acc[2] = { 0, 0 }, qsum = 0;
    int seen[2] = { 0, 0 };
    for (int r = 0; r < rc->n; r++) {
        const int set = partial_row(rc, r);
        const double want = f * ++seen[set];
        const int up = want - acc[set] >= 0.5;
        acc[set] += up;
        qsum += rc->ladder[k + up];
        rc->bank[b].row_q[r] = partial && !partial_row(rc, r) ? 0 : rc->ladder[k + up];
    }
    rc->bank[b].q = k;
    rc->bank[b].partial = partial;
    rc->bank[b].partial_q = qsum / rc->n;
}

/* A partial coding's bits for the whole coding it stands for: the
 * picture's first coding (bank 0) scaled by the ratio its rows show
 * against the same rows there (a ratio estimator: the rows' content is the
 * same in both, and each side's rows are at the quantisers its whole
 * coding gives them); while bank 0 is partial too, its rows' bits scaled
 * by the share of the picture's rows they are (at 2048^2 those rows' bits
 * were within 2.5 % of the share of the whole coding's in every picture
 * of the solar clip, 22 % off in one B picture before fill_planned spread
 * the steps over them alike). */
static void partial_estimate(const MpeRc *rc, Trial *tr)
{
    const Trial *ref = &rc->bank[0];
    double pb = 0, rb = 0;
    int rows = 0;
    for (int r = 0; r < rc->n; r++) {
        if (!partial_row(rc, r))
            continue;
        pb += (double)tr->row_bits[r];
        rb += (double)ref->row_bits[r];
        rows++;
    }
    tr->bits = (uint64_t)llround(!ref->partial && rb > 0 ? (double)ref->bits * pb / rb
                                                         : pb * rc->n / MPE_MAX(rows, 1));
    tr->q_mean = tr->partial_q;
}

/* A bank not holding the ok or failing trial (nor a live mix). */
static int free_bank(const MpeRc *rc)
{
    for (int b = 0; b < MPE_RC_BANKS; b++)
        if (b != rc->ok_bank && b != rc->fail_bank)
            return b;
    return 0;
}

/* The coarsest step a quality target may use.  A no-reference metric
 * (BLIINDS-II) cannot see that a copy of the reference shows the wrong
 * picture (a stale frame looks as natural as the one it repeats), so its
 * targets stop short of that step; the other targets may use it. */
static int top_step(const MpeRc *rc)
{
    return rc->cfg.mode == MPE_RC_QUALITY && rc->cfg.target_metric == MPE_IQA_BLIINDS ? rc->nl - 2
                                                                                      : rc->nl - 1;
}

/* The quantiser that a picture of the model (x, y: ln q and model_y),
 * the last of this type or else of the other, predicts for the goal by
 * its type's slope; -1 where neither has one. */
static int predict_q(const MpeRc *rc, const int *have, const double *x, const double *y)
{
    const int t = rc->t;
    const int src = have[t] ? t : have[!t] ? !t : -1;
    if (src < 0)
        return -1;
    const double slope = rc->slope[src] != 0 ? rc->slope[src] : default_slope(rc);
    return clamp_q(rc, exp(x[src] + (model_y(rc, goal_value(rc)) - y[src]) / slope));
}

/* First guess for the picture (PSNR and BLIINDS-II targets; see metric_first_q). */
static int first_q(MpeRc *rc)
{
    if (rc->cfg.mode == MPE_RC_CQ)
        return clamp_q(rc, rc->cfg.qscale);
    int k = predict_q(rc, rc->have_last, rc->last_x, rc->last_y);
    if (k < 0)
        return clamp_q(rc, rc->cfg.qscale);
    /* a metric target starts short of "copy the reference" (see next_q) */
    if (rc->cfg.target_metric != MPE_IQA_PSNR && k > rc->nl - 2)
        k = rc->nl - 2;
    return k;
}

/* Next uniform quantiser (PSNR, BLIINDS-II and bit targets; see
 * metric_next_q), strictly between the ok and failing ones when both exist. */
static int next_q(MpeRc *rc)
{
    const Trial *a = &rc->bank[rc->cur];
    const int qok = rc->ok_bank >= 0 ? rc->bank[rc->ok_bank].q : -1;
    const int qfail = rc->fail_bank >= 0 ? rc->bank[rc->fail_bank].q : -1;
    const int metric = rc->cfg.mode == MPE_RC_QUALITY && rc->cfg.target_metric != MPE_IQA_PSNR;
    /* a metric target tries "copy the reference" (the last step) only once
     * dropping the residual (the one before) is known to meet it: where
     * things move, a copy scores far off, and the trial would be wasted */
    const int kmax = (metric && qok != rc->nl - 2 ? rc->nl - 2 : top_step(rc)) - rc->top_failed;
    double slope = rc->slope[rc->t] != 0 ? rc->slope[rc->t] : default_slope(rc);
    int lo, hi, q;

    /* two trials of this picture: their secant, if it points the right way
     * (a picture's own curve beats any earlier picture's) */
    if (rc->np >= 2 && rc->px[0] != rc->px[1]) {
        double s = (rc->py[1] - rc->py[0]) / (rc->px[1] - rc->px[0]);
        if (s * default_slope(rc) > 0 && isfinite(s))
            slope = s;
    }
    q = clamp_q(rc, exp(log(qval(rc, a->q)) +
                        (model_y(rc, goal_value(rc)) - model_y(rc, trial_value(rc, a))) / slope));
    /* the ok side of the bracket lies below the failing side in quality
     * mode (lower q is better) and above it in bit-rate mode */
    if (rc->cfg.mode == MPE_RC_BITRATE) {
        lo = qfail >= 0 ? qfail + 1 : 0;
        hi = qok >= 0 ? qok - 1 : kmax;
    } else {
        lo = qok >= 0 ? qok + 1 : 0;
        hi = qfail >= 0 ? qfail - 1 : kmax;
    }
    /* MAD and BLIINDS-II are far from linear in ln q (a P picture's score
     * is mostly its reference's until the residual refreshes it at fine
     * quantisers): inside a bracket, interpolate between its ends but stay
     * in the bracket's middle half, so every trial at least quarters it */
    /* no bracket yet, and two codings in a row on one side: the metric
     * may be on a flat stretch (a P picture's curve at coarse quantisers),
     * where the model creeps; go at least halfway to the end of the range */
    if ((qok < 0 || qfail < 0) && metric && rc->run_len >= 2) {
        if (qok < 0 && q > qfail / 2)
            q = qfail / 2;
        if (qfail < 0 && q < (qok + kmax + 1) / 2)
            q = (qok + kmax + 1) / 2;
    }
    if (qok >= 0 && qfail >= 0 && metric) {
        const Trial *o = &rc->bank[rc->ok_bank], *f = &rc->bank[rc->fail_bank];
        const double yo = model_y(rc, o->metric), yf = model_y(rc, f->metric);
        const double xo = log(qval(rc, qok)), xf = log(qval(rc, qfail));
        /* a failing end the guard turned down has no score to aim by */
        const double x = yf != yo && !f->guarded
                             ? xo + (model_y(rc, goal_value(rc)) - yo) * (xf - xo) / (yf - yo)
                             : 0.5 * (xo + xf);
        const int w = hi - lo;
        q = clamp_q(rc, exp(x));
        if (q < lo + w / 4)
            q = lo + w / 4;
        if (q > hi - w / 4)
            q = hi - w / 4;
    }
    /* the last coding met the metric but was turned down by the guard: its
     * score says go coarser, the guard finer; without a bracket, halve
     * the range below it rather than creep down a step at a time */
    if (a->guarded && qok < 0)
        q = (lo + hi) / 2;
    return q < lo ? lo : q > hi ? hi : q;
}

static int bracket_closed(const MpeRc *rc)
{
    if (rc->ok_bank < 0 || rc->fail_bank < 0)
        return 0;
    int qok = rc->bank[rc->ok_bank].q, qfail = rc->bank[rc->fail_bank].q;
    return rc->cfg.mode == MPE_RC_BITRATE ? qok == qfail + 1 : qfail == qok + 1;
}

/* BLIINDS-II targets.  The score comes in steps of 0.5 and is far from
 * monotone in q: dropping a P or B picture's residual (the top step a
 * BLIINDS-II target may use) often scores better than any quantiser
 * proper, for a tenth of the bits or less, while the steps between it and
 * the usual quantisers score worse than either (a solar B picture at
 * 2048x2048: q 57 41.5, 52 41.5, 14 42, 7 42.5, 4 42, 3 38).  So:
 * - a P or B picture's first coding is that top step, the probe (the
 *   cheapest coding there is, and the cheapest to make); ok, it ends the
 *   picture: nothing coarser may be used;
 * - a failed probe is no end of the bracket (the scores between say
 *   nothing of it, and row mixes with it missed: +12 % bytes at a mean
 *   score 1.2 better than asked): the search goes on below the top step,
 *   starting at the quantiser the last P or B picture that ended below it
 *   predicts (its q and score, and the slope of its type);
 * - an ok coding in the target's own 0.5 step (score > target - 0.5)
 *   ends the picture: no coding can be closer;
 * - after a failed probe, an ok coding within BL_FLOOR of a mean
 *   picture's bits of the probe ends the picture: no coarser coding could
 *   save more.
 * Otherwise the bracket search and its row mix, as before.  On the solar
 * clip at 2048x2048 (24 frames, targets 30-44, cpu BLIINDS-II): 3.14 ->
 * 1.92 trials a picture, 10.6 % fewer bytes at the same mean score; 400
 * frames on the H100: 3.53 -> 1.87 trials at --target-bliinds 30, 3.26 ->
 * 2.14 at 41, 11 and 19 % fewer bytes (docs/PERF.md). */
#define BL_FLOOR 0.05

static int bl_probe(const MpeRc *rc)
{
    return bliinds_search(rc) && rc->t == 1;
}

/* the quantiser after a failed probe, and the search set up below the top step */
static int bl_after_probe(MpeRc *rc)
{
    int q = predict_q(rc, rc->have_fine, rc->fine_x, rc->fine_y);
    if (q < 0)
        q = first_q(rc);
    rc->top_failed = 1;
    rc->probe_bits = (double)rc->bank[rc->cur].bits;
    rc->fail_bank = -1;
    rc->np = rc->run_len = 0;
    return MPE_MIN(q, top_step(rc) - 1);
}

/* the current coding ends the picture (see above) */
static int bl_enough(const MpeRc *rc)
{
    const Trial *c = &rc->bank[rc->cur];
    return c->ok && (c->metric > rc->cfg.target - 0.5 ||
                     (rc->top_failed && (double)c->bits - rc->probe_bits <= BL_FLOOR * rc->avg_bits));
}

/* MAD targets.  Each trial costs a coding of the picture and a score, so
 * a picture ends on the first ok coding (or mix) that scores at least
 * RC_ACCEPT of the target (I and P pictures: 0.90, within 3.5 % below
 * their aim; B pictures: 0.965) instead of always closing a bracket of two
 * ladder steps and mixing them, and on its ok coding where no mix could
 * save more than RC_GAIN_MIN of a mean picture's bits (see
 * little_to_gain).  The band stops at 0.90: the target's contract is
 * 90 % of the pictures within 10 % (tests/e2e/quality.sh), though a wider
 * one paid on the solar clip at 2048x2048 (H100, 100 frames, 0.88: 1.38
 * trials a picture instead of 2.51 and 4.8 % fewer bytes at --target-mad
 * 9, an I or P picture ending on its first coding leaving its B pictures
 * less to correct).  I and P pictures aim RC_REF_MARGIN lower than B
 * pictures: the B pictures predicted from them pay for what distortion
 * they carry (aimed at the band's middle like the others, they cost 4-7 %
 * more bits on pan8).  B pictures aim at the band's top and mostly end on a
 * mix: their bits move 3-5 times as fast as their MAD, and the mix, which
 * switches the rows that save most bits per unit of distortion first, beat
 * a uniform coding of the same score by 5-15 %; a coding that lands within
 * 3.5 % of the target still ends them (ending every B picture on a mix
 * took 0.4 trials a B picture more for 0.1 % fewer bits).  The first
 * coding is predicted from the previous picture of its type (I, P and B
 * apart: B pictures' curves are far flatter) and the slope its trials
 * showed; the next from this picture's own secant (the model's slope until
 * there are two codings, never flatter than a quarter of the default:
 * scores are noisy), at most a factor 2 in q at a time (4 after two on one
 * side), halfway to the end of the range across a plateau (a P picture's
 * score is its reference's at coarse quantisers), and inside a bracket by
 * interpolation kept off its ends.  A bracket of two adjacent steps (or
 * narrower than RC_MIX_SPAN in ln q) is closed by a row mix aimed at the
 * aim; one that misses is shrunk by the secant.  Codings stay on ladder
 * steps: codings between two steps (rows of both, as fill_planned makes
 * them) landed in the band more often but cost 1-14 % more bits at equal
 * score than the mix. */
#define RC_BAND 0.03
#define RC_REF_MARGIN 0.05
#define RC_MIX_SPAN 0.2
static const double rc_accept[3] = { 0.90, 0.90, 0.965 };   /* RC_ACCEPT: I, P, B */
#define RC_GAIN_MIN 0.02

/* the coarsest quantiser proper: the last two steps drop the residual, then copy */
static int metric_top(const MpeRc *rc)
{
    return MPE_MAX(rc->nl - 3, 0);
}

/* What a picture aims at, as a fraction of the target: the band's middle,
 * and for I and P pictures RC_REF_MARGIN lower still */
static double metric_aim_frac(const MpeRc *rc)
{
    return 1 - 0.5 * RC_BAND - (rc->mt != 2 ? RC_REF_MARGIN : 0);
}

static double metric_aim(const MpeRc *rc)
{
    return model_y(rc, rc->cfg.target * metric_aim_frac(rc));
}

static int in_band(const MpeRc *rc, const Trial *tr)
{
    return tr->ok && tr->metric >= rc->cfg.target * rc_accept[rc->mt];
}

static double model_slope(const MpeRc *rc, int m)
{
    return rc->slope[m] != 0 ? rc->slope[m] : default_slope(rc);
}

/* Bank b at the ladder step nearest quantiser q, strictly inside the
 * bracket; above the quantisers proper, dropping the residual, and the
 * copy only once that is known to meet the target (a copy scores far off
 * where things move: the coding would be wasted). */
static void metric_fill(MpeRc *rc, int b, double q)
{
    const int top = metric_top(rc);
    const int qok = rc->ok_bank >= 0 ? rc->bank[rc->ok_bank].q : -1;
    const int qfail = rc->fail_bank >= 0 ? rc->bank[rc->fail_bank].q : top_step(rc) + 1;
    int k = rc->nl >= 3 && q > qval(rc, top) * 1.02 ? (qok >= rc->nl - 2 ? top_step(rc) : rc->nl - 2)
                                                   : clamp_q(rc, fmin(q, qval(rc, top)));
    if (k <= qok)
        k = qok + 1;
    if (k >= qfail)
        k = qfail - 1;
    fill_uniform(rc, b, MPE_MAX(k, 0));
}

static double metric_first_q(const MpeRc *rc)
{
    /* a type not seen yet borrows the nearest one's model: B from P, P from I */
    static const int borrow[3][3] = { { 0, 1, 2 }, { 1, 0, 2 }, { 2, 1, 0 } };
    for (int i = 0; i < 3; i++) {
        const int m = borrow[rc->mt][i];
        if (rc->have_last[m])
            return exp(rc->last_x[m] + (metric_aim(rc) - rc->last_y[m]) / model_slope(rc, m));
    }
    return rc->cfg.qscale;
}

static int metric_at_limit(const MpeRc *rc)
{
    return (rc->ok_bank >= 0 && rc->bank[rc->ok_bank].q == top_step(rc)) ||
           (rc->ok_bank < 0 && rc->fail_bank >= 0 && rc->bank[rc->fail_bank].q_mean <= qval(rc, 0));
}

/* The next coding's quantiser; 0: close the bracket with a mix instead. */
static double metric_next_q(const MpeRc *rc)
{
    const Trial *o = rc->ok_bank >= 0 ? &rc->bank[rc->ok_bank] : NULL;
    const Trial *f = rc->fail_bank >= 0 ? &rc->bank[rc->fail_bank] : NULL;
    const double aim = metric_aim(rc), xmin = log(qval(rc, 0));
    double slope = model_slope(rc, rc->mt), x;

    if (o && f) {
        const double xo = log(o->q_mean), xf = log(f->q_mean), w = xf - xo;
        const double yo = model_y(rc, o->metric), yf = model_y(rc, f->metric);
        if (w <= RC_MIX_SPAN || f->q <= o->q + 1)
            return 0;
        /* a failing end the guard turned down has no score to aim by */
        x = yf != yo && !f->guarded ? xo + (aim - yo) * w / (yf - yo) : xo + 0.5 * w;
        return exp(fmin(fmax(x, xo + 0.2 * w), xf - 0.2 * w));
    }
    int flat = 0;
    if (rc->np >= 2 && rc->px[0] != rc->px[1]) {
        const double s = (rc->py[1] - rc->py[0]) / (rc->px[1] - rc->px[0]);
        if (s * default_slope(rc) > 0 && isfinite(s))
            slope = s;
        /* two codings on one side that hardly differ: a flat stretch (a P
         * picture's score is its reference's at coarse quantisers), where
         * any slope creeps; go halfway to the end of the range */
        flat = rc->run_len >= 2 && fabs(rc->py[1] - rc->py[0]) < 1e-3;
    }
    /* scores are noisy: a secant of two close codings, or a picture's
     * slope, can come out near flat and throw the next coding far off */
    if (fabs(slope) < 0.25 * fabs(default_slope(rc)))
        slope = 0.25 * default_slope(rc);
    const double reach = log(2.0) * (rc->run_len >= 2 ? 2 : 1);
    if (o) {
        const double xo = log(o->q_mean), xtop = log(qval(rc, metric_top(rc)));
        x = flat ? 0.5 * (xo + xtop) : xo + (aim - model_y(rc, o->metric)) / slope;
        return exp(fmin(fmax(x, xo + 0.05), flat ? INFINITY : xo + reach));
    }
    const double xf = log(f->q_mean);
    /* the guard turned the coding down: its score says coarser, the guard finer */
    if (f->guarded || flat)
        return exp(0.5 * (xmin + xf));
    x = xf + (aim - model_y(rc, f->metric)) / slope;
    return exp(fmax(fmin(x, xf - 0.05), fmax(xf - reach, xmin)));
}

/* The ok coding is as good as any mix with the failing coding (or mix)
 * `fail`: no mix of the two saves more than the failing side does, and
 * that is at most RC_GAIN_MIN of a mean picture's bits (a flat B
 * picture's curve: its codings a few hundred bits apart, searched down to
 * a mix for every one of them). */
static int little_to_gain(const MpeRc *rc, int fail)
{
    if (rc->ok_bank < 0 || fail < 0 || rc->n_avg < 1)
        return 0;
    return (double)rc->bank[rc->ok_bank].bits - (double)rc->bank[fail].bits <=
           RC_GAIN_MIN * rc->avg_bits;
}

/* A mix that missed the target: how much to shrink its share of switched
 * rows, by the secant between the ok end and the mix (the share's score
 * is close to linear in it), within [0.25, 0.9]; halve it where the mix
 * has no score to aim by (the guard turned it down). */
static double metric_mix_shrink(const MpeRc *rc)
{
    const Trial *m = &rc->bank[rc->mix_bank];
    const double yo = model_y(rc, rc->bank[rc->ok_bank].metric), ym = model_y(rc, m->metric);
    if (m->guarded || !(ym - yo > 0))
        return 0.5;
    return fmin(fmax((metric_aim(rc) - yo) / (ym - yo), 0.25), 0.9);
}

/* Cannot move further: the best quantiser is at the end of the range. */
static int at_limit(const MpeRc *rc)
{
    const int kmax = rc->cfg.mode == MPE_RC_BITRATE ? rc->nl - 1 : top_step(rc);
    if (rc->cfg.mode == MPE_RC_BITRATE)
        return (rc->ok_bank >= 0 && rc->bank[rc->ok_bank].q == 0) ||
               (rc->ok_bank < 0 && rc->fail_bank >= 0 && rc->bank[rc->fail_bank].q == kmax);
    return (rc->ok_bank >= 0 && rc->bank[rc->ok_bank].q == kmax - rc->top_failed) ||
           (rc->ok_bank < 0 && rc->fail_bank >= 0 && rc->bank[rc->fail_bank].q == 0);
}

/* Rows of the ok bank switched to the failing bank for as long as the
 * picture stays ok (or, for an estimated metric, within sse_budget).
 * Returns how many rows switched. */
static int plan_mix(MpeRc *rc, double sse_budget)
{
    const Trial *o = &rc->bank[rc->ok_bank], *f = &rc->bank[rc->fail_bank];
    const int bitrate = rc->cfg.mode == MPE_RC_BITRATE;
    double bits = (double)(o->bits + rc->header_bits), sse = (double)o->sse;
    int n_sw = 0, n_cand = 0;

    /* quality: switching saves bits and costs SSE; bit rate: switching to
     * the lower quantiser costs bits and saves SSE.  Free wins first. */
    for (int r = 0; r < rc->n; r++) {
        double dbits = (double)f->row_bits[r] - (double)o->row_bits[r];
        double dsse = (double)f->row_sse[r] - (double)o->row_sse[r];
        double g;
        rc->mix_src[r] = (uint8_t)rc->ok_bank;
        if (bitrate)
            g = dsse < 0 ? (dbits <= 0 ? INFINITY : -dsse / dbits) : -1;
        else
            g = dbits < 0 ? (dsse <= 0 ? INFINITY : -dbits / dsse) : -1;
        if (guard_on(rc) && f->row_mean_err[r] > rc->cfg.mean_tol)
            g = -1;   /* the guard holds per row: the mix keeps it by construction */
        if (g > 0) {
            rc->gain[r] = g;
            rc->order[n_cand++] = r;
        }
    }
    /* descending gain, row index breaking ties: deterministic */
    for (int i = 1; i < n_cand; i++) {
        int r = rc->order[i], j = i;
        while (j > 0 && (rc->gain[rc->order[j - 1]] < rc->gain[r] ||
                         (rc->gain[rc->order[j - 1]] == rc->gain[r] && rc->order[j - 1] > r))) {
            rc->order[j] = rc->order[j - 1];
            j--;
        }
        rc->order[j] = r;
    }
    for (int i = 0; i < n_cand; i++) {
        int r = rc->order[i];
        double nb = bits + (double)f->row_bits[r] - (double)o->row_bits[r];
        double ns = sse + (double)f->row_sse[r] - (double)o->row_sse[r];
        int fits = bitrate ? nb <= rc->budget : ns <= sse_budget;
        if (!fits || nb > rc->hard_max)
            continue;   /* a later, smaller row may still fit */
        bits = nb;
        sse = ns;
        rc->mix_src[r] = (uint8_t)rc->fail_bank;
        n_sw++;
    }
    return n_sw;
}

/* A trial's totals from its rows: bits, SSE and mean quantiser. */
static void sum_rows(const MpeRc *rc, Trial *tr)
{
    double qsum = 0;
    tr->bits = tr->sse = 0;
    tr->mean_err = 0;
    for (int r = 0; r < rc->n; r++) {
        tr->bits += tr->row_bits[r];
        tr->sse += tr->row_sse[r];
        qsum += tr->row_q[r];
        tr->mean_err = fmax(tr->mean_err, tr->row_mean_err[r]);
    }
    tr->q_mean = qsum / rc->n;
}

static void set_mix_result(MpeRc *rc, int b)
{
    Trial *m = &rc->bank[b];
    m->q = -1;
    m->partial = 0;
    for (int r = 0; r < rc->n; r++) {
        const Trial *s = &rc->bank[rc->mix_src[r]];
        m->row_q[r] = s->row_q[r];
        m->row_bits[r] = s->row_bits[r];
        m->row_sse[r] = s->row_sse[r];
        m->row_mean_err[r] = s->row_mean_err[r];
    }
    sum_rows(rc, m);
}

/* Out of trials: the ok coding, unless it beats the target by more than
 * 10 % while a failing coding (or the last mix) misses it by less: for a
 * metric target both are off, and the nearer one is also cheaper.  Among
 * those within 10 %, the one that misses least. */
static int closest_bank(const MpeRc *rc)
{
    if (rc->ok_bank < 0 || rc->fail_bank < 0)
        return rc->ok_bank >= 0 ? rc->ok_bank : rc->fail_bank;
    if (rc->cfg.mode == MPE_RC_QUALITY && rc->cfg.target_metric != MPE_IQA_PSNR) {
        const double t = rc->cfg.target;
        int best = -1;
        if (fabs(rc->bank[rc->ok_bank].metric - t) <= 0.1 * t)
            return rc->ok_bank;
        const int cand[2] = { rc->fail_bank, rc->phase == PH_MIX_EVAL ? rc->mix_bank : -1 };
        for (int i = 0; i < 2; i++) {
            const int b = cand[i];
            if (b >= 0 && !rc->bank[b].guarded && fabs(rc->bank[b].metric - t) <= 0.1 * t &&
                (best < 0 || fabs(rc->bank[b].metric - t) < fabs(rc->bank[best].metric - t)))
                best = b;
        }
        if (best >= 0)
            return best;
    }
    return rc->ok_bank;
}

/* The search is over: pick the result, or fall back to fitting the VBV. */
static void finish(MpeRc *rc, MpeRcStep *step, int b)
{
    const Trial *tr = &rc->bank[b];
    const double total = (double)(tr->bits + rc->header_bits);
    /* a VBV underflow may take any step; a cap stops where the target's search would */
    const int top = total > rc->vbv_max ? rc->nl - 1 : top_step(rc);
    if (total > rc->hard_max && tr->q_mean < qval(rc, top)) {
        /* VBV underflow or the cap ahead: code coarser, whatever the trial budget */
        int q = clamp_q(rc, tr->q_mean * total / fmax(rc->hard_max, 1.0) * 1.15);
        int nb = (b + 1) % MPE_RC_BANKS;
        while (q < top && qval(rc, q) <= tr->q_mean)
            q++;
        if (q > top)
            q = top;
        rc->emergency = 1;
        rc->ok_bank = rc->fail_bank = -1;
        fill_uniform(rc, nb, q);
        rc->cur = nb;
        rc->trials++;
        *step = (MpeRcStep){ .action = MPE_RC_CODE, .bank = nb, .row_q = rc->bank[nb].row_q,
                             .need_metric = 0 };
        return;
    }
    rc->phase = PH_DONE;
    rc->done_bank = b;
    *step = (MpeRcStep){ .action = MPE_RC_DONE, .bank = b };
}

void mpe_rc_next(MpeRc *rc, MpeRcStep *step)
{
    const int metric_needed = rc->cfg.mode == MPE_RC_QUALITY && rc->cfg.target_metric != MPE_IQA_PSNR;

    if (rc->phase == PH_DONE) {
        *step = (MpeRcStep){ .action = MPE_RC_DONE, .bank = rc->done_bank };
        return;
    }
    if (rc->cur < 0) {   /* first trial */
        if (rc->cfg.mode == MPE_RC_BITRATE)
            fill_planned(rc, 0, rc->plan, !rc->abr.have[rc->pt] && rc->partial_k > 1);
        else if (metric_search(rc))
            metric_fill(rc, 0, metric_first_q(rc));
        else
            fill_uniform(rc, 0, bl_probe(rc) ? top_step(rc) : first_q(rc));
        rc->cur = 0;
        rc->trials = 1;
        rc->plan_banks = 1;
        rc->plan_n = 0;
        rc->plan_partials = rc->bank[0].partial;
        rc->whole_after = 0;
        *step = (MpeRcStep){ .action = MPE_RC_CODE, .bank = 0, .row_q = rc->bank[0].row_q,
                             .need_metric = metric_needed };
        return;
    }
    if (rc->emergency) {
        finish(rc, step, rc->cur);
        return;
    }
    if (rc->cfg.mode == MPE_RC_CQ) {
        finish(rc, step, rc->cur);
        return;
    }
    if (rc->planning) {
        const Trial *tr = &rc->bank[rc->cur];
        const double total = (double)(tr->bits + rc->header_bits);
        AbrModel *m = &rc->abr;
        const int t = rc->pt;
        double q = tr->q_mean;
        /* two codings of the first picture of its type: how its bits move
         * with q (learnt once: the finer codings that keep a full buffer
         * from stuffing, learnt from too, made the plan oscillate).  No
         * flatter than ABR_A_MIN: two codings at the coarse end, where
         * headers and vectors are most of the bits, say little of the
         * finer quantisers the plan may move to (make rd: 0.1 instead
         * +8.9 % against --q, pan0 +10.5 instead of +7.1) */
        if (!m->have[t] && rc->np >= 2 && fabs(rc->aq[1] - rc->aq[0]) > 0.04) {
            const double a = fmin(fmax(-(rc->ab[1] - rc->ab[0]) / (rc->aq[1] - rc->aq[0]), ABR_A_MIN), 3.0);
            m->a[t] = rc->np > 2 ? 0.5 * (m->a[t] + a) : a;
        }
        const int first_of_all = !m->have[0] && !m->have[1] && !m->have[2];
        /* the first whole coding after partial ones: planned once more, whatever the count */
        const int check_whole = !tr->partial && rc->whole_after == 1;
        int between = 0;
        if (!m->have[t] && rc->np == 1) {
            /* the first picture of its type, coded once at a plan that did
             * not move: a second coding ABR_LEARN coarser (finer at the
             * coarsest step) learns how its bits move with q; the model's
             * 1 / q, kept for a type coded once, once took P and B
             * pictures whose bits hardly moved to the coarsest step (make
             * rd: +16.8 % against --q without it, +8.3 % with).  After a
             * partial first coding (which is never kept) the second goes
             * where the first plans the picture, at least ABR_LEARN away:
             * it learns from two codings on the side of the plan, not from
             * one beyond it, and lands near the plan (the first I
             * picture's guess is from nothing: 6.1 at 2048^2 and 8 Mbit/s,
             * planned at 2.9) */
            const double qmax = rc->ladder[MPE_MAX(rc->nl - 1 - rc->cfg.n_drop, 0)];
            q = tr->q_mean * ABR_LEARN <= qmax ? tr->q_mean * ABR_LEARN : tr->q_mean / ABR_LEARN;
            if (tr->partial) {
                double to = plan_own(rc, tr, m->a[t], &between);
                if (first_of_all)
                    to = fmin(fmax(to, rc->plan0 / (4 * ABR_FIRST_RANGE)), ABR_FIRST_RANGE * rc->plan0);
                if (fabs(log(to / tr->q_mean)) >= log(ABR_LEARN))
                    q = to;
                else if (to < tr->q_mean && tr->q_mean / ABR_LEARN >= rc->ladder[0])
                    q = tr->q_mean / ABR_LEARN;
                between = 0;
            }
        } else if (!m->have[t] && (rc->trials < 4 || check_whole)) {
            /* the first picture of its type: its own cost, now known, plans it
             * again (a whole coding after partial ones, once more whatever
             * the count).  The very first picture knows nothing of P pictures but
             * abr_complexity's P/I ratio: it stays within ABR_FIRST_RANGE of
             * its first guess (Test Model 5's start, the same q at every
             * rate: 4 finer and 2 coarser kept a first I at 3 where --q 1
             * gives the rate, and at 22 where 16 does) */
            q = plan_own(rc, tr, m->a[t], &between);
            if (first_of_all)
                q = fmin(fmax(q, rc->plan0 / (4 * ABR_FIRST_RANGE)), ABR_FIRST_RANGE * rc->plan0);
        } else if (tr->ok && !tr->partial && rc->cbr && total < rc->stuff_min &&
                   rc->trials < rc->cfg.max_trials) {
            /* the buffer would overflow: what the picture leaves would be
             * stuffing (a coding kept aside must be whole, never partial) */
            const double a = fmax(m->have[t] ? m->a[t] : 1.0, 0.7);
            q = fmax(tr->q_mean * fmax(pow(total / rc->stuff_min, 1 / a), 0.67), rc->ladder[0]);
            rc->spare_bank = rc->cur;
        }
        const double near = check_whole ? ABR_NEAR_KEPT : ABR_NEAR;
        if (!m->have[t])
            /* the plan may have come back to an earlier coding (the one
             * before the learning coding): the nearest, but a whole one
             * within `near` before any partial one */
            for (int b = 0; b < MPE_RC_BANKS; b++) {
                const Trial *o = &rc->bank[b];
                const double d = fabs(log(q / o->q_mean)), dt = fabs(log(q / tr->q_mean));
                if ((rc->plan_banks >> b & 1) && o != tr &&
                    (tr->partial || dt > near) && (d < dt || (!o->partial && d <= near))) {
                    rc->cur = b;
                    tr = o;
                }
            }
        const int far = fabs(log(q / tr->q_mean)) > near;
        if (far || tr->partial) {
            /* the first picture of its type: its codings until one is at
             * the plan only teach the model, so they are partial (a
             * partial_k-th of the rows each) where a whole coding can still
             * follow; a plan at a partial coding, or between two codings
             * (an interpolation), is coded whole */
            const int partial = far && !m->have[t] && rc->partial_k > 1 && !rc->whole_after &&
                                !between;
            int b = (rc->cur + 1) % MPE_RC_BANKS;
            if (partial && b == 0)   /* the first coding, which partial_estimate measures by */
                b = 1;
            rc->whole_after += !partial && rc->plan_partials > 0;
            rc->plan_partials += partial;
            fill_planned(rc, b, q, partial);
            rc->ok_bank = rc->fail_bank = -1;
            rc->cur = b;
            rc->trials++;
            rc->plan_banks |= 1u << b;
            *step = (MpeRcStep){ .action = MPE_RC_CODE, .bank = b, .row_q = rc->bank[b].row_q };
            return;
        }
        rc->planning = 0;
        if (tr->ok || rc->spare_bank >= 0) {
            /* a finer coding than the stuffing asked for that the VBV cannot hold: the one before */
            finish(rc, step, tr->ok ? rc->cur : rc->spare_bank);
            return;
        }
        /* the VBV cannot hold the plan: search coarser from it */
        rc->ok_bank = -1;
        rc->fail_bank = rc->cur;
    }
    if (rc->phase == PH_MIX_EVAL) {
        judge(rc, &rc->bank[rc->mix_bank]);
        if (rc->bank[rc->mix_bank].ok) {
            finish(rc, step, rc->mix_bank);
            return;
        }
        if (metric_search(rc) && little_to_gain(rc, rc->mix_bank)) {
            finish(rc, step, rc->ok_bank);
            return;
        }
        rc->mix_frac *= metric_search(rc) ? metric_mix_shrink(rc) : 0.5;
        if (!metric_needed || rc->trials >= rc->cfg.max_trials || rc->mix_frac < 0.05) {
            finish(rc, step, closest_bank(rc));
            return;
        }
        goto mix;
    }
    /* searching; the first picture of a type has no model yet and may try
     * two more quantisers */
    if (metric_search(rc)) {
        double q;
        if (in_band(rc, &rc->bank[rc->cur])) {
            finish(rc, step, rc->cur);
            return;
        }
        /* every coarser quantiser would code it the same: no trial pays
         * (measured: a B picture between two equal anchors climbed to the
         * coarsest step in 8 trials of 12288 bits each) */
        if (rc->saturated) {
            finish(rc, step, rc->cur);
            return;
        }
        if (rc->trials >= rc->cfg.max_trials + (rc->have_last[rc->mt] ? 0 : 2) ||
            metric_at_limit(rc)) {
            finish(rc, step, closest_bank(rc));
            return;
        }
        if ((q = metric_next_q(rc)) == 0)
            goto start_mix;
        const int b = free_bank(rc);
        metric_fill(rc, b, q);
        rc->cur = b;
        rc->trials++;
        *step = (MpeRcStep){ .action = MPE_RC_CODE, .bank = b, .row_q = rc->bank[b].row_q,
                             .need_metric = 1 };
        return;
    }
    if (bliinds_search(rc) && bl_enough(rc)) {
        finish(rc, step, rc->cur);
        return;
    }
    if (bracket_closed(rc))
        goto start_mix;
    if (rc->trials >= rc->cfg.max_trials + (rc->have_last[rc->mt] ? 0 : 2) || at_limit(rc)) {
        /* out of trials with the target between two codings: a mix of them
         * still beats the ok one, and costs nothing where it is exact */
        if (!metric_needed && rc->ok_bank >= 0 && rc->fail_bank >= 0)
            goto start_mix;
        finish(rc, step, closest_bank(rc));
        return;
    }
    {
        const int probe_failed = bl_probe(rc) && rc->trials == 1 && !rc->bank[rc->cur].ok;
        int q = probe_failed ? bl_after_probe(rc) : next_q(rc), b = free_bank(rc);
        fill_uniform(rc, b, q);
        rc->cur = b;
        rc->trials++;
        *step = (MpeRcStep){ .action = MPE_RC_CODE, .bank = b, .row_q = rc->bank[b].row_q,
                             .need_metric = metric_needed };
        return;
    }
start_mix:
    if (metric_search(rc) && little_to_gain(rc, rc->fail_bank)) {
        finish(rc, step, rc->ok_bank);
        return;
    }
    if (metric_needed) {
        const Trial *o = &rc->bank[rc->ok_bank], *f = &rc->bank[rc->fail_bank];
        const double yo = model_y(rc, o->metric), span = model_y(rc, f->metric) - yo;
        /* an ok end already past the band's middle (a B picture's coding
         * in the band) still gains from switching rows halfway on */
        const double aim = !metric_search(rc) ? model_y(rc, rc->cfg.target)
                           : fmax(metric_aim(rc), 0.5 * (yo + model_y(rc, rc->cfg.target)));
        rc->mix_frac = span != 0 ? (aim - yo) / span : 0;
        rc->mix_frac = fmin(fmax(rc->mix_frac, 0), 1);
        /* the failing coding met the metric and only some rows failed the
         * guard: try every row that passes it (plan_mix keeps the others) */
        if (f->guarded)
            rc->mix_frac = 1;
        if (rc->trials >= rc->cfg.max_trials || rc->mix_frac < 0.05) {
            finish(rc, step, closest_bank(rc));
            return;
        }
    }
mix:
    {
        const Trial *o = &rc->bank[rc->ok_bank], *f = &rc->bank[rc->fail_bank];
        double sse_budget;
        if (rc->cfg.mode == MPE_RC_QUALITY && !metric_needed)
            sse_budget = rc->samples * 255.0 * 255.0 / pow(10.0, rc->cfg.target / 10.0);
        else
            sse_budget = (double)o->sse + rc->mix_frac * ((double)f->sse - (double)o->sse);
        if (plan_mix(rc, sse_budget) == 0) {
            finish(rc, step, closest_bank(rc));
            return;
        }
        rc->mix_bank = free_bank(rc);
        set_mix_result(rc, rc->mix_bank);
        rc->cur = rc->mix_bank;
        rc->phase = PH_MIX_EVAL;
        if (metric_needed)
            rc->trials++;
        else if (rc->cfg.mode == MPE_RC_QUALITY)   /* exact: the rows' SSE add up */
            rc->bank[rc->mix_bank].metric = psnr_of(rc, rc->bank[rc->mix_bank].sse);
        *step = (MpeRcStep){ .action = MPE_RC_MIX, .bank = rc->mix_bank, .src = rc->mix_src,
                             .need_metric = metric_needed };
    }
}

void mpe_rc_report(MpeRc *rc, const MpeRcResult *res)
{
    Trial *tr = &rc->bank[rc->cur];

    if (rc->phase == PH_MIX_EVAL) {
        if (rc->cfg.mode == MPE_RC_QUALITY && rc->cfg.target_metric != MPE_IQA_PSNR)
            tr->metric = res->metric;
        return;
    }
    if (rc->phase == PH_DONE)
        return;
    memcpy(tr->row_bits, res->row_bits, (size_t)rc->n * sizeof(*tr->row_bits));
    memcpy(tr->row_sse, res->row_sse, (size_t)rc->n * sizeof(*tr->row_sse));
    if (res->row_mean_err)
        memcpy(tr->row_mean_err, res->row_mean_err, (size_t)rc->n * sizeof(*tr->row_mean_err));
    else
        memset(tr->row_mean_err, 0, (size_t)rc->n * sizeof(*tr->row_mean_err));
    sum_rows(rc, tr);
    if (tr->partial)
        partial_estimate(rc, tr);
    if (rc->cfg.mode == MPE_RC_QUALITY)
        tr->metric = rc->cfg.target_metric == MPE_IQA_PSNR ? psnr_of(rc, tr->sse) : res->metric;
    if (rc->cfg.mode == MPE_RC_CQ || rc->emergency)
        return;
    judge(rc, tr);
    if (rc->cfg.mode == MPE_RC_BITRATE) {
        rc->aq[0] = rc->aq[1];
        rc->ab[0] = rc->ab[1];
        rc->aq[1] = log(tr->q_mean);
        rc->ab[1] = log(fmax((double)(tr->bits + rc->header_bits), 1));
        if (rc->planning && rc->plan_n < ABR_POINTS) {
            rc->plan_x[rc->plan_n] = rc->aq[1];
            rc->plan_y[rc->plan_n++] = rc->ab[1];
        }
    }
    rc->run_len = rc->run_len && rc->run_ok == tr->ok ? rc->run_len + 1 : 1;
    rc->run_ok = tr->ok;
    rc->px[0] = rc->px[1];
    rc->py[0] = rc->py[1];
    rc->px[1] = log(qval(rc, tr->q));
    rc->py[1] = model_y(rc, trial_value(rc, tr));
    rc->np++;
    /* keep the best of each side: quality mode wants the largest ok q and
     * the smallest failing q; bit-rate mode the reverse */
    const int up = rc->cfg.mode != MPE_RC_BITRATE;
    /* a coarser ok coding within 0.5 % of the finer ok one's bits: the
     * picture's coding no longer depends on the quantiser (its references
     * predict it whole: skipped macroblocks); a MAD or BLIINDS-II target */
    rc->saturated = metric_search(rc) && tr->ok && rc->ok_bank >= 0 &&
                    tr->q > rc->bank[rc->ok_bank].q &&
                    tr->bits * 200 >= rc->bank[rc->ok_bank].bits * 199;
    if (tr->ok) {
        if (rc->ok_bank < 0 || (up ? tr->q > rc->bank[rc->ok_bank].q : tr->q < rc->bank[rc->ok_bank].q))
            rc->ok_bank = rc->cur;
    } else {
        if (rc->fail_bank < 0 ||
            (up ? tr->q < rc->bank[rc->fail_bank].q : tr->q > rc->bank[rc->fail_bank].q))
            rc->fail_bank = rc->cur;
    }
}

int mpe_rc_end_frame(MpeRc *rc, uint64_t bits, int *trials, uint64_t *stuffing)
{
    const Trial *tr = &rc->bank[rc->done_bank >= 0 ? rc->done_bank : 0];
    const int t = rc->t;
    const int underflow = rc->vbv && (double)bits > rc->fullness;
    int over_cap = 0;

    int broke_contract = 0;

    *trials = rc->trials;
    *stuffing = 0;
    if (rc->vbv && rc->cbr && (double)bits < rc->stuff_min)
        *stuffing = (uint64_t)ceil((rc->stuff_min - (double)bits) / 8.0);
    if (chunk_left(rc) == 1) {
        /* the chunk ends on the next one's fullness: to the bit at constant
         * rate (the allowance is whole bytes), at or above it (full) at
         * variable rate */
        const double allowance = chunk_allowance(rc, 1);
        broke_contract = (double)bits > allowance + 0.5;
        if (rc->cbr && !broke_contract)
            *stuffing = (uint64_t)llround((allowance - (double)bits) / 8.0);
    }
    rc->pictures++;
    bits += *stuffing * 8;
    if (rc->vbv) {
        rc->fullness = rc->fullness - (double)bits + rc->fill_rate / rc->cfg.fps;
        if (!rc->cbr && rc->fullness > rc->vbv_size)
            rc->fullness = rc->vbv_size;   /* variable rate: input stops while full */
    }
    if (rc->cfg.mode == MPE_RC_BITRATE) {
        AbrModel *m = &rc->abr;
        const int pt = rc->pt;
        const double x = (double)(bits - *stuffing * 8) * pow(tr->q_mean, m->a[pt]);
        /* the mean of the type's pictures so far, then a decaying one */
        const double w = fmax(1.0 / ++m->n[pt], ABR_BLUR);
        m->c[pt] = (1 - w) * m->c[pt] + w * x;
        m->have[pt] = 1;
        rc->abr_err += (double)bits - rc->shares[rc->pt] * rc->cfg.bitrate / rc->cfg.fps;
        rc->abr_spent += (double)bits;
        rc->abr_pics++;
        rc->coded_n[pt]++;
        abr_count(rc);
    }
    if (rc->capped) {
        rc->complexity[t] = (double)bits * tr->q_mean;
        rc->gop_left -= (double)bits;
        /* a quality target's GOP has spent its share of the cap, at the
         * coarsest coding the target may use */
        over_cap = rc->capped && rc->gop_left < 0 && tr->q_mean >= qval(rc, top_step(rc));
        if (t == 0)
            rc->left_i--;
        else
            rc->left_p--;
    }
    /* a picture whose coding did not depend on the quantiser says nothing
     * of the next one's: its quantiser would start the next search far too
     * coarse (measured: a B picture after one began at q 52, and took 6
     * trials) */
    if (metric_search(rc) || bliinds_search(rc)) {
        const double w = fmax(1.0 / ++rc->n_avg, 0.1);
        rc->avg_bits = (1 - w) * rc->avg_bits + w * (double)bits;
    }
    if (rc->cfg.mode == MPE_RC_QUALITY && tr->q_mean > 0 && !rc->saturated) {
        /* slope from this picture's extreme trials, if two exist (uniform
         * ones, or for a metric target any two codings: the last two when
         * they are on one side) */
        const Trial *o = rc->ok_bank >= 0 ? &rc->bank[rc->ok_bank] : NULL;
        const Trial *f = rc->fail_bank >= 0 ? &rc->bank[rc->fail_bank] : NULL;
        const int mt = rc->mt;
        double s = 0;
        if (o && f && o->q_mean != f->q_mean && !f->guarded)
            s = (model_y(rc, f->metric) - model_y(rc, o->metric)) /
                (log(f->q_mean) - log(o->q_mean));
        else if (metric_search(rc) && !(o && f) && rc->np >= 2 && rc->px[0] != rc->px[1] &&
                 !rc->bank[rc->cur].guarded)
            s = (rc->py[1] - rc->py[0]) / (rc->px[1] - rc->px[0]);
        if (s * default_slope(rc) > 0 && isfinite(s))
            rc->slope[mt] = s;
        rc->have_last[mt] = 1;
        rc->last_x[mt] = log(tr->q_mean);
        rc->last_y[mt] = model_y(rc, tr->metric);
        if (bliinds_search(rc) && tr->q_mean < qval(rc, top_step(rc))) {
            rc->have_fine[mt] = 1;
            rc->fine_x[mt] = rc->last_x[mt];
            rc->fine_y[mt] = rc->last_y[mt];
        }
    }
    return underflow ? -1 : broke_contract ? -2 : over_cap ? 1 : 0;
}

int mpe_rc_guard_mean_rejects(const MpeRc *rc)
{
    return rc->guard_rejects;
}
