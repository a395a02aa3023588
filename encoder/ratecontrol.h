/* ratecontrol.h — choosing quantisers: constant quantiser, target bit rate
 * with a VBV model, or target quality (PSNR-Y, MAD, BLIINDS-II).
 *
 * Lifecycle (DESIGN.md §3): mpe_rc_new, then per picture
 * mpe_rc_start_frame, a loop of mpe_rc_next / mpe_rc_report, and
 * mpe_rc_end_frame; mpe_rc_summary at the end.
 *
 * Slices are macroblock rows coded in parallel, and a slice's bits and
 * reconstruction depend only on its own quantiser (slice headers carry it,
 * prediction of DC and vectors restarts in every slice, and the reference is
 * the previous picture).  So after coding a picture at two quantisers the
 * bits and SSE of any per-row mix of the two are known exactly without
 * coding it again.  The controller therefore works with "banks": the
 * encoder codes a picture into a bank with the row quantisers the controller
 * asks for, reports bits, SSE and (when the target needs it) the metric, and
 * the controller may then ask for a mix of two banks assembled into a third,
 * row by row.  That gives per-row adaptation with at most one extra metric
 * evaluation, and for PSNR and bit targets none at all.
 *
 * Every decision depends only on the numbers reported, never on timing, so
 * streams stay identical for every thread count and backend. */
#ifndef MPE_RATECONTROL_H
#define MPE_RATECONTROL_H

#include <stdint.h>

#include "common/common.h"

#define MPE_RC_BANKS 3

/* The mean-level guard of MAD and BLIINDS-II targets (see ratecontrol.c):
 * two 8-bit levels over a row 16 lines high, about one just-noticeable
 * step of a flat offset, and three times the largest row error normal
 * coding showed on the solar clip (0.66). */
#define MPE_RC_MEAN_TOL 2.0

typedef enum MpeRcMode {
    MPE_RC_CQ = 0,        /* constant quantiser */
    MPE_RC_BITRATE = 1,   /* target bit rate with VBV */
    MPE_RC_QUALITY = 2,   /* target quality, optionally capped by a bit rate */
} MpeRcMode;

typedef struct MpeRcConfig {
    int mode;               /* MpeRcMode */
    int mpeg2;
    int qscale;             /* CQ: the quantiser; else the first guess */
    const uint8_t *ladder;  /* the quantisers rows may use, ascending, in MPEG-1 units */
    int n_ladder;
    int n_drop;             /* of those, the last n_drop are no quantisers but coarser
                               steps (no residual, copy): a bit rate plans below them */
    int n_rows;             /* slices per picture */
    int gop;                /* pictures per GOP (the first is I) */
    int bframes;            /* B pictures between anchors (encoder.c's gop_type places them) */
    double pb_ratio;        /* BITRATE: a B picture's quantiser over a P picture's */
    double ip_ratio;        /* BITRATE: a P picture's quantiser over an I picture's */
    double fps;             /* stream frame rate */
    double bitrate;         /* bit/s (BITRATE; QUALITY: a cap, 0 = none) */
    double maxrate;         /* bit/s peak of a variable-rate stream; 0 = constant rate */
    double vbv_bits;        /* VBV buffer size in bits (0: no VBV model) */
    unsigned target_metric; /* QUALITY: MPE_IQA_PSNR, MPE_IQA_MAD or MPE_IQA_BLIINDS */
    double target;          /* QUALITY: PSNR-Y dB, or MAD / BLIINDS-II score (lower is better) */
    int max_trials;         /* codings (and mix evaluations) per picture */
    double mean_tol;        /* QUALITY with MAD or BLIINDS-II: the largest |mean(source) -
                               mean(recon)| a row may show in Y, Cb or Cr, in 8-bit levels,
                               for a coding to count as meeting the target; 0: no guard */
    /* The VBV contract of chunks coded apart (encoder.h: mpe_encoder_start_chunk): the
     * controller codes chunk chunk_index of chunk_frames pictures (0: no chunks), starting
     * at the fullness every chunk agrees on and ending at the next chunk's: constant rate,
     * the first chunk's start, moved by the fraction of a byte the rate brings per chunk
     * (pictures are whole bytes), so the last picture's zero stuffing lands on it exactly;
     * variable rate, a full buffer.  Then the stitched stream's buffer is the one each
     * chunk modelled, and its vbv_delay values run on one schedule. */
    int chunk_frames;
    int chunk_index;
} MpeRcConfig;

typedef struct MpeRc MpeRc;

/* What the encoder does next for the current picture. */
typedef enum MpeRcAction {
    MPE_RC_CODE = 0,   /* code the picture into `bank` with row_q[], then mpe_rc_report */
    MPE_RC_MIX = 1,    /* make `bank` the per-row mix: its row r := row r of bank src[r]
                          (reconstruction and bits; src[r] != bank), then mpe_rc_report
                          (bits and SSE of a mix are known: only the metric is read) */
    MPE_RC_DONE = 2,   /* the picture is `bank` as it stands */
} MpeRcAction;

typedef struct MpeRcStep {
    MpeRcAction action;
    int bank;                 /* 0..MPE_RC_BANKS-1 */
    const uint8_t *row_q;     /* CODE: quantiser_scale_code per row; 0: the row is left
                                 out (a partial coding: its bits and SSE come back 0, and
                                 the bank is never the one kept) */
    const uint8_t *src;       /* MIX: the bank each row comes from */
    int need_metric;          /* report the target metric of this bank (MAD, BLIINDS-II) */
} MpeRcStep;

/* Per-row results of a CODE step. */
typedef struct MpeRcResult {
    const uint64_t *row_bits;  /* slice bits */
    const uint64_t *row_sse;   /* luma SSE of the slice's rows */
    double metric;             /* the target metric when need_metric was set */
    const double *row_mean_err;/* per row: the largest |mean(source) - mean(recon)| of Y, Cb
                                  and Cr (levels); read when cfg.mean_tol > 0 */
} MpeRcResult;

int mpe_rc_new(MpeRc **rc, const MpeRcConfig *cfg, uint64_t luma_samples, MpeError *err);
void mpe_rc_free(MpeRc *rc);

/* Begins a picture (type 'I', 'P' or 'B'); header_bits: sequence, GOP and picture
 * headers written before its slices, of which the first start_code_bits run
 * to the end of the picture start code.  Returns the picture's vbv_delay in
 * 90 kHz units for a constant-rate stream, or 0xFFFF (variable rate / none). */
int mpe_rc_start_frame(MpeRc *rc, char type, uint64_t header_bits, uint64_t start_code_bits);
void mpe_rc_next(MpeRc *rc, MpeRcStep *step);
void mpe_rc_report(MpeRc *rc, const MpeRcResult *res);
/* The picture as written: total bits (headers + slices).  *stuffing: the
 * zero bytes to write after it so that a constant-rate VBV cannot overflow
 * nor hold more than vbv_delay can say.  Returns -1 when the picture did
 * not fit in the VBV (it underflowed: even the coarsest coding the search
 * falls back to was too big for what the buffer held); 1 when a quality
 * target's GOP has spent its share of the bit-rate cap and this picture
 * was at the coarsest coding the target may use (the stream will be above
 * the cap, within its VBV); -2 when the picture is the last of a chunk
 * (cfg.chunk_frames) and too big to leave the next chunk its agreed
 * fullness; else 0. */
int mpe_rc_end_frame(MpeRc *rc, uint64_t bits, int *trials, uint64_t *stuffing);
/* Codings (and mixes) of the last picture that met the metric target but
 * were turned down by the mean-level guard (cfg.mean_tol). */
int mpe_rc_guard_mean_rejects(const MpeRc *rc);
/* VBV fullness in bits just before the current/last picture was removed,
 * negative without a VBV model. */
double mpe_rc_vbv_fullness(const MpeRc *rc);
/* The rates to signal in the sequence header: bit_rate in 400 bit/s units
 * and vbv_buffer_size in 16384-bit units (0 when rc has no VBV model). */
void mpe_rc_stream_rates(const MpeRc *rc, uint32_t *bit_rate_400, uint32_t *vbv_16k);

#endif
