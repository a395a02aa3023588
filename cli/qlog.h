/* qlog.h — the per-frame quality log (--log FILE) and the end-of-run summary.
 *
 * The log has one record per coded picture, in coding order, as CSV or as
 * JSON Lines (chosen by the file's extension).  Its columns never depend on
 * the options: a measure that was not taken on a frame (its MPE_IQA_* bit
 * is clear in MpeFrameStats.metrics) is an empty CSV field or a JSON null.
 * Each record is flushed as soon as it is written.  mpe_qlog_open writes
 * under the final name; the mpegenc command writes through a temporary
 * renamed at the end (mpe_qlog_open_file), so a failed run leaves an older
 * log untouched while a Ctrl-C'd one still keeps every finished frame (and
 * a run killed outright leaves them in FILE.tmp-XXXXXX).
 *
 *   MpeQlog *q; mpe_qlog_open(&q, "run.csv", &err);
 *   for each picture: mpe_qlog_write(q, &out.stats, &err);
 *   mpe_qlog_close(q, &err);
 *
 *   MpeSummary s; mpe_summary_init(&s, MPE_IQA_PSNR, 38.0);
 *   for each picture: mpe_summary_add(&s, &out.stats);
 *   mpe_summary_format(&s, 25.0, buf, sizeof(buf));
 */
#ifndef MPE_QLOG_H
#define MPE_QLOG_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "common/common.h"
#include "encoder/encoder.h"

typedef struct MpeQlog MpeQlog;

/* Opens path for writing; the format follows the extension: ".csv" → CSV,
 * ".jsonl" → JSON Lines (case-insensitive); anything else is an error
 * naming the file and the accepted extensions.  Writes the header line at
 * once (CSV: the column names, which carry their units, e.g. psnr_y_db,
 * code_ms; JSON Lines: an object {"mpegenc_log":1,...} listing the fields
 * and their units). */
int mpe_qlog_open(MpeQlog **q, const char *path, MpeError *err);
/* The same on a stream the caller opened (and closes after mpe_qlog_close,
 * which then only flushes it); name picks the format and names the file in
 * messages.  The CLI writes the log through common/outfile.h this way. */
int mpe_qlog_open_file(MpeQlog **q, FILE *f, const char *name, MpeError *err);
/* One record, then fflush: a crashed run keeps every finished frame's record. */
int mpe_qlog_write(MpeQlog *q, const MpeFrameStats *fs, MpeError *err);
/* Closes and frees; NULL-safe.  Reports write errors (disk full), including
 * ones an earlier mpe_qlog_write already reported. */
int mpe_qlog_close(MpeQlog *q, MpeError *err);

typedef struct MpeMetricSummary {
    int n;                  /* frames that contributed (finite, measured values) */
    double mean, min, max;  /* 0 when n is 0 */
} MpeMetricSummary;

typedef struct MpeSummary {
    int frames;
    uint64_t bits;
    /* qscale: per picture its qscale_mean, or qscale where qscale_mean is 0 */
    MpeMetricSummary qscale, bits_per_frame;
    MpeMetricSummary value[IQA_MAX_VALUES];   /* by metric registry value id */
    unsigned metrics;          /* registry family bits (MpeFrameStats.metrics) measured on
                                  every frame */
    unsigned target_metric;    /* one family bit (MPE_IQA_*) or 0; the target applies to
                                  that family's first value */
    double target;             /* the target value */
    int missed;                /* frames worse than the target (PSNR or SSIM below it;
                                  MAD or BLIINDS above it) */
    double worst_miss;         /* largest amount by which a frame was worse (in the
                                  metric's unit), 0 if none */
    int worst_miss_frame;      /* display index of that frame, -1 if none */
    /* for mpe_summary_format_peer */
    int width, height;         /* picture size (mpe_summary_set_size), 0: unknown */
    uint64_t sse[3];           /* Y, Cb, Cr squared error summed over frames */
    double psnr_all_sum;       /* per frame PSNR of Y, Cb and Cr together, summed */
    int worst_frame[IQA_MAX_VALUES];   /* display index of each value's worst frame */
    double worst[IQA_MAX_VALUES];
} MpeSummary;

void mpe_summary_init(MpeSummary *s, unsigned target_metric, double target);
void mpe_summary_add(MpeSummary *s, const MpeFrameStats *fs);
/* The picture size, for the PSNR of all planes together (peer lines). */
void mpe_summary_set_size(MpeSummary *s, int width, int height);
/* The end-of-run lines in the shape users already parse from x264:
 *   PSNR Mean Y:42.170 U:46.433 V:46.866 Avg:43.270 Global:42.879 kb/s:1234.56
 *   SSIM Mean Y:0.9876543 (19.082db)
 * (Mean: the mean of per-frame values; Avg: the mean of per-frame PSNR of
 * Y, U and V together; Global: that PSNR from the squared error of the
 * whole run, the number ffmpeg's psnr filter calls "average"), then a
 * "LABEL Mean:M Worst:W (frame N)" line for every other measured metric
 * (MAD, BLIINDS-II), each line prefixed with `prefix`.  PSNR needs
 * mpe_summary_set_size; without it the PSNR line is left out.  Returns
 * the text's full length like snprintf. */
int mpe_summary_format_peer(const MpeSummary *s, double fps, const char *prefix, char *buf,
                            size_t size);

/* Human-readable multi-line text for the end of a run: frames, bytes,
 * kbit/s at the given frame rate (left out when fps <= 0), mean/min/max of
 * each measured metric, target misses; returns the length of the whole
 * text like snprintf (the text is cut to fit size, always terminated when
 * size > 0). */
int mpe_summary_format(const MpeSummary *s, double fps, char *buf, size_t size);

#endif
