/* slice.h — coding of one slice: per macroblock, half-pel refinement against
 * the reconstructed reference, mode decision, DCT, quantisation, zigzag, VLC
 * into the slice's own bit buffer, and reconstruction.  A slice touches only
 * its own rows of the output picture and its own bit buffer, so slices run
 * in parallel (encoder.c) and are concatenated in order. */
#ifndef MPE_SLICE_H
#define MPE_SLICE_H

#include <stdint.h>

#include "bitstream/bitwriter.h"
#include "common/picture.h"
#include "encoder/dsp.h"
#include "gpu/frontend.h"

/* Everything a slice needs to know about its picture; read-only while the
 * slices of a picture are coded. */
typedef struct MpePictureCtx {
    int mpeg2;
    int coding_type;           /* BS_PICTURE_I or BS_PICTURE_P */
    int qscale;                /* quantiser in MPEG-1 units (MPEG-2 quantiser_scale / 2) */
    int qscale_code;           /* quantiser_scale_code for the slice header */
    int drop_residual;         /* P: code no inter residual (prediction only): the rate
                                  control's step beyond the coarsest quantiser */
    int skip_all;              /* P: every macroblock a copy of the reference (skipped
                                  where the syntax allows): the step beyond that */
    int f_code;                /* forward f_code (P pictures) */
    int tall_picture;          /* MPEG-2 vertical_size > 2800 */
    const MpePicture *orig;    /* the picture being coded */
    const MpePicture *ref;     /* reconstruction of the previous reference (P) */
    MpePicture *recon;         /* reconstruction written here */
    const GpuMotion *mv;       /* full-pel vectors from the front end (P) */
    const MpeDsp *dsp;
    GpuSad16Fn sad16;          /* 16x16 SAD (the front end's fastest) */
    const MpeQuantizer *quant; /* qscale, matrices and their reciprocals */
} MpePictureCtx;

typedef struct MpeSliceStats {
    int intra, inter, skipped;
    double mv_abs_sum;   /* sum of |mv| in pels over the inter (coded) macroblocks */
} MpeSliceStats;

/* Code macroblock rows [row_begin, row_end) as one slice into bw (appended). */
void mpe_code_slice(const MpePictureCtx *pc, int row_begin, int row_end, BsWriter *bw,
                    MpeSliceStats *stats);

#endif
