/* encoder.h — the mpegenc library API.  The CLI is a thin layer over this.
 *
 *   MpeParam p; mpe_param_default(&p); ... p.width = w; p.height = h;
 *   mpe_encoder_open(&enc, &p, &log, &err);
 *   for each frame: mpe_encode_frame(enc, &frame, &out, &err); write out.data
 *   mpe_encode_frame(enc, NULL, &out, &err);   (flush: sequence_end_code)
 *   mpe_encoder_close(enc);
 */
#ifndef MPE_ENCODER_H
#define MPE_ENCODER_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "common/picture.h"
#include "common/threads.h"
#include "encoder/param.h"
#include "iqa/metric.h"

#define MPE_VERSION "0.1.0"

typedef struct MpeEncoder MpeEncoder;

/* Wall time per pipeline stage for one picture, in milliseconds.  The
 * encoder fills the front-end and back-end fields; read_ms, decode_ms and
 * write_ms belong to the caller's loop (the CLI fills them for --stats).
 * The front end of picture n runs while picture n-1 is coded.  When it has
 * a thread of its own (mpe_encoder_frontend_async), fe_ms is that thread's
 * whole time for the picture (submit, search, waiting for the device,
 * download) and fe_ms - fe_wait_ms is what was hidden behind the back end;
 * otherwise its calls block the main thread and only the device's own time
 * (fe_gpu_ms) can be hidden. */
typedef struct MpeStageTimes {
    double read_ms;      /* caller blocked on the input reader */
    double decode_ms;    /* reader threads' time decoding this frame (PNG), mostly hidden */
    double fe_ms;        /* front-end calls on the host (see above); for the cpu
                            backend this is the conversion and search themselves */
    double fe_gpu_ms;    /* device time the backend's timings callback reports, 0 if none */
    double fe_wait_ms;   /* back end blocked waiting for the front end (join, wait()) */
    double download_ms;  /* planes and vectors into the coder's buffers, when done on the
                            main thread (else part of fe_ms) */
    double code_ms;      /* headers + slices in parallel (refinement, mode decision, DCT,
                            quantisation, VLC, reconstruction, SSE) + concatenation */
    double quality_ms;   /* quality stage: the logged measures (SSIM, MAD, BLIINDS-II):
                            the copy of the pictures they score, on the main thread and the
                            pool, plus the scoring on a lane of its own, which overlaps the
                            coding of the pictures after it (several lanes, so their sum
                            can exceed the wall time); a target metric's scoring of trial
                            codings is part of code_ms */
    double quality_wait_ms; /* of that, the coder's own time: the copy of the pictures and its
                            waits for a free lane (all busy: the quality stage is the
                            bottleneck) */
    double write_ms;     /* caller writing the stream */
} MpeStageTimes;


/* One coded picture: what the per-frame log, the summary and the HTML
 * report show.  Metrics flagged IQA_DISPLAY_RANGE (MAD, BLIINDS-II) see
 * display values: the luma of both pictures expanded from studio (16..235)
 * to full range (0..255). */
typedef struct MpeFrameStats {
    int display_index;     /* frame number in input order (display order) */
    char type;             /* 'I', 'P' or 'B' */
    int qscale;            /* qscale_mean rounded (slice headers may vary the quantiser) */
    double qscale_mean;    /* mean quantiser over the picture's macroblocks, in --q units
                              (MPEG-1 steps; MPEG-2 quantiser_scale / 2); under rate control
                              the coarsest + 1 means "no inter residual" and + 2 "skipped" */
    uint64_t bits;         /* picture bits including headers before it */
    uint64_t sse[3];       /* recon vs source, per plane, true size */
    /* the quality measures, indexed by the metric registry's value ids
     * (iqa/metric.h: psnr_y_db, psnr_cb_db, psnr_cr_db, ssim_y, mad, ...) */
    double value[IQA_MAX_VALUES];
    unsigned metrics;      /* bit f: registry family f was measured (MPE_IQA_* for the
                              built-in ones), so its values above are valid */
    double mv_mean_abs;    /* mean |mv| (Euclidean, pels) over inter macroblocks; 0 if none */
    int reach_fwd, reach_bwd;  /* how far (full pels) the motion search of its forward and
                              backward vectors reached (--me hier: --merange or less, see
                              --merange-adapt; --me full: --search); 0: not searched */
    int mb_intra, mb_inter, mb_skipped;
    int trials;            /* reconstructions tried before this one was kept (1 = none redone) */
    int guard_mean;        /* trials that met a MAD/BLIINDS-II target but were turned down
                              because a row's mean level was off the source's */
    double vbv_fullness;   /* bits in the VBV buffer just before this picture is removed;
                              negative when no VBV model is active */
    MpeStageTimes time;
} MpeFrameStats;

typedef struct MpeOutput {
    const uint8_t *data;   /* stream bytes produced by this call; valid until the next */
    size_t size;
    int coded;             /* data holds a coded picture (in coding order) ... */
    int coded_display_index;  /* ... this one (-1: none) */
    char coded_type;       /* ... of this type */
    int have_picture;      /* a picture comes out, in display order: stats and recon are
                              valid.  Without B pictures it is the one coded; with them an
                              I or P picture comes out after the B pictures before it */
    MpeFrameStats stats;   /* of that picture, without the measures the quality stage adds
                              later: complete records come from mpe_encoder_pop_stats */
    const MpePicture *recon;  /* the reconstructed picture (padded planes) */
} MpeOutput;

/* The checks mpe_encoder_open makes of p before it starts anything (no side
 * effects): a negative error, with a message in err, for parameters no
 * encoder can take (sizes, ranges, conflicting rate-control options, a
 * frame rate the stream cannot signal without --strict 0).  Callers may
 * run it first to tell parameter errors from run-time failures. */
int mpe_encoder_check_params(const MpeParam *p, MpeError *err);
/* p->width/height must be set; p->format AUTO means MPEG-2; fps 0/0 means 25. */
int mpe_encoder_open(MpeEncoder **enc, const MpeParam *p, const MpeLog *log, MpeError *err);
/* The same on the caller's pool (common/threads.h), which then runs the
 * slices, the cpu front end and the C metrics beside the caller's own work
 * (one set of threads per process, sized once); p->threads is not used.
 * The pool must outlive the encoder.  mpe_encoder_open opens a pool of its
 * own of p->threads (0: all cores). */
int mpe_encoder_open_pool(MpeEncoder **enc, const MpeParam *p, MpePool *pool, const MpeLog *log,
                          MpeError *err);
/* Take one frame (RGB24 or YUV420 of the configured size) and code the one
 * before it in coding order: the front end works one frame ahead, so the
 * first call returns no picture; with B pictures (p->bframes) a B frame waits
 * for the I or P frame after it, which is coded first, so pictures come out
 * up to bframes + 2 calls later.  Flush with frame == NULL, again and again
 * until a call returns no bytes (size 0) and no picture: each returns at most
 * one picture, the last sequence_end_code.  out->have_picture says whether a
 * picture came out (display order); out->coded whether data holds one. */
int mpe_encode_frame(MpeEncoder *enc, const MpeFrame *frame, MpeOutput *out, MpeError *err);
void mpe_encoder_close(MpeEncoder *enc);

/* Chunks (MpeParam.chunk_gops): the encode is a run of chunks of
 * mpe_encoder_chunk_frames() pictures (0: one chunk), each starting with
 * the state that crosses GOPs afresh (see start_chunk_state in encoder.c),
 * so that chunks coded apart concatenate into the stream one encode of the
 * whole run writes, byte for byte.  mpe_encoder_start_chunk, on a new
 * encoder or after the flush call: the next frame is frame first_frame of
 * the run (a multiple of the chunk length; its GOP time code and the rate
 * control's chunk follow from it), and end_code says whether the next flush
 * writes sequence_end_code (0 for every chunk but the run's last). */
int mpe_encoder_start_chunk(MpeEncoder *enc, int first_frame, int end_code, MpeError *err);
int mpe_encoder_chunk_frames(const MpeEncoder *enc);

/* Complete per-picture records (every measure --iqa asked for), in display
 * order: call after each mpe_encode_frame until it returns 0.  The logged
 * measures run on their own stage, several pictures in flight, so a
 * picture's record may come out a few calls after its stream bytes (at most
 * 4 pictures later in coding order); after the flush call every record is
 * out. */
int mpe_encoder_pop_stats(MpeEncoder *enc, MpeFrameStats *fs);

/* B pictures between I/P pictures (p->bframes, auto resolved): 0 means
 * coding order is display order. */
int mpe_encoder_bframes(const MpeEncoder *enc);

/* The front-end backend in use.  A GPU backend opens on a thread of its
 * own while the first frames go through the cpu front end: this waits for
 * that open (and names "cpu" where auto fell back to it). */
const char *mpe_encoder_backend(const MpeEncoder *enc);
/* Threads coding slices (p->threads resolved: auto -> cores, capped at the
 * number of slices). */
int mpe_encoder_threads(const MpeEncoder *enc);
/* Whether the front end runs on its own thread, overlapping the back end
 * (cpu backend with threads > 1; GPU backends overlap by being asynchronous). */
int mpe_encoder_frontend_async(const MpeEncoder *enc);
/* MpeParam.pipeline took effect: the pictures are coded on a thread of
 * their own, the front end runs in the calls (fe_ms), and fe_wait_ms is a
 * call's wait for the coder to free the frame's slot. */
int mpe_encoder_pipelined(const MpeEncoder *enc);
/* The frame rate the stream signals (may differ from the requested one when
 * the format cannot express it; a warning is logged). */
void mpe_encoder_stream_rate(const MpeEncoder *enc, int *num, int *den);

#endif
