/* aq.h — adaptive quantisation: per macroblock a factor on the slice's
 * quantiser, from the source picture alone (before coding), centred so
 * that the factors' geometric mean is 1 and bits move between macroblocks
 * rather than leave the picture.  Two modes (--aq-mode):
 *   variance  the luma AC energy (x264's --aq-mode 1);
 *   mad       MAD's own contrast masking (iqa/mad.h's MadMask): the error
 *             std its detection stage just sees in each 16x16 block, in
 *             gray levels; coarser where MAD says distortion is masked.
 * The factors come from the source's bytes only, in C: the same on every
 * backend and thread count. */
#ifndef MPE_ENCODER_AQ_H
#define MPE_ENCODER_AQ_H

#include "common/common.h"
#include "common/picture.h"
#include "encoder/param.h"

typedef struct MpeAq MpeAq;

/* strength: --aq-strength S; the factor is (a masking ratio)^(S/3) where
 * the ratio is of stds (variance: sqrt of the energies'), so S means the
 * same in both modes.  mad needs a picture of at least 34x34 macroblock
 * pixels (MAD_MIN_SIZE). */
int mpe_aq_open(MpeAq **aq, MpeAqMode mode, double strength, int mb_width, int mb_height,
                MpeError *err);
void mpe_aq_close(MpeAq *aq);

/* factor[mb_width * mb_height]: the quantiser factors of one source
 * picture (its padded luma plane). */
int mpe_aq_plan(MpeAq *aq, const MpePicture *orig, double *factor, MpeError *err);

#endif
