/* progress.h — the progress line on stderr while a sequence is encoded:
 *   [ 42.0%] 168/400 frames, 95.31 fps, 4961.2 kbit/s, q 5.31, MAD 9.870, eta 0:00:02
 * percent and eta only when the number of frames is known (not a pipe
 * without --frames), the metric only with a quality target (the last
 * picture's, as q is).  On a terminal it is refreshed in place ('\r') at
 * most 4 times a second and ends with a newline before anything else is
 * printed; elsewhere (--progress with stderr in a file) each update is a
 * line of its own, at most one a second.  It never touches the stream. */
#ifndef MPE_PROGRESS_H
#define MPE_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

#include "encoder/encoder.h"

typedef struct MpeProgress {
    FILE *f;
    int on;            /* prints at all */
    int in_place;      /* a terminal: '\r' refreshes one line */
    long total;        /* frames the run will encode, -1 unknown */
    double fps;        /* the stream's frame rate: bits per second from bits per frame */
    unsigned target;   /* the quality target's MPE_IQA_* bit, 0 none */
    int target_value;  /* its first registry value id, -1 none */
    double t0_ms, last_ms, interval_ms;
    int open;          /* an in-place line is shown without its newline */
    int width;         /* characters of the longest line shown, blanked past a shorter one */
    int have_picture;
    double q, metric;  /* of the last picture whose statistics came out */
} MpeProgress;

/* requested: 1 --progress, 0 --no-progress, -1 neither: then on only when f
 * is a terminal and neither quiet (--quiet) nor verbose (-v prints a line
 * per frame already).  With verbose the line is never refreshed in place,
 * so it cannot run into the per-frame lines. */
void mpe_progress_start(MpeProgress *p, FILE *f, int requested, int quiet, int verbose, long total,
                        double fps, unsigned target);

/* The last picture's quantiser and (with a target) its metric. */
void mpe_progress_picture(MpeProgress *p, const MpeFrameStats *fs);

/* frames coded and bytes written so far; prints when the interval passed. */
void mpe_progress_update(MpeProgress *p, int frames, uint64_t bytes);

/* Ends an in-place line with a newline, so that a message printed next
 * starts on a line of its own.  errno is kept for that message. */
void mpe_progress_break(MpeProgress *p);

/* The final state, always printed (when on and a picture came out), ending
 * with a newline: the summary follows on its own line. */
void mpe_progress_end(MpeProgress *p, int frames, uint64_t bytes);

#endif
