/* report.h — the self-contained HTML report of an encode (--report FILE.html).
 *
 * One page: a header naming the run, a summary table (mean/min/max of bits,
 * quantiser and every measured metric), then one inline-SVG line chart per
 * series against the frame number.  No scripts, no external assets, no fonts
 * fetched: the file can be mailed or archived as is.
 *
 * The charts carry their axis in data attributes so a test (or a script)
 * can map points back to values:
 *   <svg data-chart="ID" data-xmin data-xmax data-ymin data-ymax
 *        data-left data-right data-top data-bottom data-scale>
 *   x_px = left + (frame - xmin) / (xmax - xmin) * (right - left)
 *   y_px = bottom - (value * scale - ymin) / (ymax - ymin) * (bottom - top)
 * and each frame of a chart is one <circle data-frame="N"> with a <title>
 * tooltip giving the exact value.  Chart IDs: bits (scale 1e-3: kbit),
 * qscale, psnr, ssim, mad, bliinds. */
#ifndef MPE_REPORT_H
#define MPE_REPORT_H

#include <stdio.h>

#include "common/common.h"
#include "encoder/encoder.h"

typedef struct MpeReportInfo {
    const char *title;          /* e.g. the output file name */
    const char *input, *output; /* names shown in the header */
    const char *command_line;   /* may be NULL */
    const char *format;         /* "MPEG-1" / "MPEG-2" */
    const char *backend;        /* front-end backend used */
    int width, height;
    double fps;                 /* stream frame rate (for kbit/s) */
    unsigned metrics;           /* MPE_IQA_* bits measured (encoder.h) */
    unsigned target_metric;     /* one MPE_IQA_* bit (PSNR, MAD or BLIINDS) or 0 */
    double target;              /* its target value: drawn as a horizontal line on that metric's plot */
    double bitrate;             /* target bit/s, 0 = none: drawn as a per-frame-bits line (bitrate/fps) on the bits plot */
} MpeReportInfo;

/* Writes a self-contained HTML page (inline SVG and CSS, no scripts needed,
 * no external assets, no fonts fetched) to path through common/outfile.h (a
 * temporary renamed into place; a device or FIFO written in place), so a
 * failure leaves nothing behind.  Errors name the
 * file.  Any string of info may be NULL (shown as empty).  Numbers are
 * printed in the C locale whatever the caller's locale. */
int mpe_report_write(const char *path, const MpeReportInfo *info,
                     const MpeFrameStats *frames, int n, MpeError *err);

/* The same page written to an open stream (the caller owns and closes f);
 * name is for messages.  Flushes f and reports a write error. */
int mpe_report_write_file(FILE *f, const char *name, const MpeReportInfo *info,
                          const MpeFrameStats *frames, int n, MpeError *err);

#endif
