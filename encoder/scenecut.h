/* scenecut.h — scene-cut detection on the host, from the input frames only.
 *
 * A cut is where a picture's luma histogram (of 8x8 block means, so that
 * noise averages out and motion does not matter; in units of the frame's
 * own standard deviation around its mean, so that fades and brightness
 * changes do not count) differs from the previous frame's by more than a
 * threshold, or where the mean level jumps by more than
 * MPE_SCENECUT_MEAN_JUMP.  The decision for frame n reads frames
 * n and n-1 and nothing else: the same on every backend and thread count,
 * and the same whether an encode ran into a chunk or started at it. */
#ifndef MPE_SCENECUT_H
#define MPE_SCENECUT_H

#include <stdint.h>

#include "common/picture.h"
#include "common/threads.h"

#define MPE_SCENECUT_BINS 64
/* a mean-level change (0..255) in one frame that counts as a cut */
#define MPE_SCENECUT_MEAN_JUMP 48.0

typedef struct MpeSceneCut {
    uint32_t hist[2][MPE_SCENECUT_BINS];   /* of the last two frames, by frame number parity */
    int last;            /* frame number whose histogram is in hist[last & 1], -1: none */
    int blocks;          /* block means per histogram */
    double mean[2];      /* mean block level of the last two frames, by parity */
    unsigned cpu_flags;  /* MPE_CPU_* the counts may use (common/cpu.h; 0 after
                          * mpe_scenecut_init, the caller sets it): AVX2 counts
                          * RGB frames' blocks (YUV's use SSE2 where built) */
} MpeSceneCut;

void mpe_scenecut_init(MpeSceneCut *sc);

/* Take frame n; returns the histogram difference to frame n-1 in percent of
 * the blocks that changed bins (0..100), or -1 when frame n-1 was not the
 * last frame taken. */
double mpe_scenecut_score(MpeSceneCut *sc, int n, const MpeFrame *f);
/* The same, its block rows counted on pool (NULL: on this thread alone);
 * the score is the same. */
double mpe_scenecut_score_pool(MpeSceneCut *sc, int n, const MpeFrame *f, MpePool *pool);

/* The histogram the score starts from: every whole 8x8 block of f counted
 * at its level, the sum of 16 of its luma samples / 16, into level[256]
 * (added to).  _c is the plain C reference; the other is what the score
 * uses (SSE2 for YUV frames where built, AVX2 for RGB ones where
 * cpu_flags has it), bit for bit the same. */
void mpe_scenecut_levels_c(const MpeFrame *f, uint32_t level[256]);
void mpe_scenecut_levels(const MpeFrame *f, uint32_t level[256], unsigned cpu_flags);

#endif
