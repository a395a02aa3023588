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
#include "dsp/dsp.h"
#include "dsp/sad.h"
#include "gpu/frontend.h"

/* IDCT mismatch control by forced intra refresh.  A decoder's inverse DCT
 * need only meet IEEE 1180-1990 (11172-2 and 13818-2 Annex A), so it may
 * differ from ours by a little in each block, and every P coding with
 * coefficients adds such a difference to what later pictures predict from.
 * IEEE 1180, which both Annexes cite, bounds the chain: each macroblock is
 * coded intra at least once in every 132 times it is coded in a predicted
 * picture.  Like H.261 and H.263 we count the codings that transmit
 * coefficients: only they run an IDCT and can add a mismatch (a macroblock
 * predicted without residual copies its reference exactly).  MPEG-2 also has mismatch control (§7.4.4), which we do; the
 * refresh applies to both formats.  Refreshes are spread over
 * MPE_REFRESH_SPREAD pictures. */
#define MPE_REFRESH_PERIOD 132
#define MPE_REFRESH_SPREAD 32

/* How a macroblock was coded, for the refresh counters. */
enum {
    MPE_MB_CODED_PREDICTION = 0,   /* skipped or no residual: no IDCT, no new mismatch */
    MPE_MB_CODED_RESIDUAL = 1,     /* non-intra with coefficients */
    MPE_MB_CODED_INTRA = 2,
};

/* Everything a slice needs to know about its picture; read-only while the
 * slices of a picture are coded. */
typedef struct MpePictureCtx {
    int mpeg2;
    int coding_type;           /* BS_PICTURE_I, _P or _B */
    int qscale;                /* quantiser in MPEG-1 units (MPEG-2 quantiser_scale / 2) */
    int qscale_code;           /* quantiser_scale_code for the slice header */
    int drop_residual;         /* P: code no inter residual (prediction only): the rate
                                  control's step beyond the coarsest quantiser */
    int skip_all;              /* P: every macroblock a copy of the reference (skipped
                                  where the syntax allows): the step beyond that; B: a
                                  copy of the previous reference (forward, zero vector) */
    int f_code;                /* forward f_code (P and B pictures) */
    int f_code_bwd;            /* backward f_code (B pictures) */
    int tall_picture;          /* MPEG-2 vertical_size > 2800 */
    const MpePicture *orig;    /* the picture being coded */
    const MpePicture *ref;     /* reconstruction of the previous reference (P, B) */
    const MpePicture *ref_bwd; /* reconstruction of the next reference in display order (B) */
    MpePicture *recon;         /* reconstruction written here */
    int bits_only;             /* no reconstruction: a coding only counted, never kept
                                  (the rate control's partial codings); its bits are those
                                  of the same coding with it */
    const GpuMotion *mv;       /* full-pel vectors from the front end against ref (P, B) */
    const GpuMotion *mv_bwd;   /* ... and against ref_bwd's source (B) */
    const MpeDsp *dsp;
    MpeSad16Fn sad16;          /* 16x16 SAD (dsp/sad.h's table) */
    const MpeQuantizer *quant; /* qscale, matrices and their reciprocals */
    const uint8_t *scan;       /* transmission order: mpe_zigzag or mpe_alternate_scan */
    int intra_vlc_table;       /* intra blocks' coefficient table: BS_DCT_TABLE_ZERO or _ONE */
    int count_intra_tables;    /* MPEG-2 --intra-vlc auto: count what both tables would spend */
    int dc_precision;          /* MPEG-2 intra_dc_precision: 0..3 = 8..11 bits */
    int trellis_c;             /* trellis quantisation (dsp/trellis.h) with lambda =
                                  trellis_c / 1000 * qscale^2; 0: the plain quantisers */
    const uint8_t *refresh_count; /* per macroblock: codings with residual since its last
                                     intra coding, before this picture (P) */
    uint8_t *mb_coding;        /* per macroblock: MPE_MB_CODED_*, written for the slice's rows */
    /* Adaptive quantisation: per macroblock, the factor its quantiser is
     * qscale times (NULL: none); it is moved to the nearest of ladder[] and
     * coded with the macroblock quant flag.  quants[] and q_code[] are
     * indexed by those quantisers (MPEG-1 units). */
    const double *aq;
    const uint8_t *ladder;
    int n_ladder;
    const MpeQuantizer *quants;
    const uint8_t *q_code;
} MpePictureCtx;

typedef struct MpeSliceStats {
    int intra, inter, skipped;
    int fwd, bwd, interp;  /* B: the inter (coded) macroblocks by prediction direction */
    int refreshed;       /* of the intra ones: forced by the refresh rule */
    double mv_abs_sum;   /* sum of |mv| in pels over the inter (coded) macroblocks */
    int64_t intra_table_bits[2]; /* count_intra_tables: the intra blocks' AC + EOB bits, as
                                    coded, in table zero and in table one */
} MpeSliceStats;

/* Code macroblock rows [row_begin, row_end) as one slice into bw (appended). */
void mpe_code_slice(const MpePictureCtx *pc, int row_begin, int row_end, BsWriter *bw,
                    MpeSliceStats *stats);

/* The half-pel vector choice of one P or B macroblock (mbx, mby) in
 * direction dir (0 forward from pc->ref, 1 backward from pc->ref_bwd)
 * around the front end's full-pel vector m, against the predictor pmv
 * (half-pels): the vector (out_v), its SAD (returned) and cost (out_cost,
 * where not NULL), and *out_sad_at the SAD of vector at where it was
 * measured, else UINT32_MAX.  one_by_one 0: as the slice coder chooses
 * (the nine half-pel SADs in one hpel_sads pass where they are needed);
 * 1: the reference, each candidate measured on its own by pred_sad in a
 * fixed order, skipped where its rate alone cannot win.  Both give the
 * same vector, SAD and cost (test_slice checks it). */
uint32_t mpe_slice_choose_vector(const MpePictureCtx *pc, const int pmv[2], int dir, int mbx,
                                 int mby, const GpuMotion *m, int out_v[2], uint32_t *out_cost,
                                 const int at[2], uint32_t *out_sad_at, int one_by_one);

/* --intra-vlc auto before any picture of the kind has been coded (the
 * first I picture of a chunk): 1 when Table B.15 codes the plain
 * quantiser's levels of every other macroblock (a checkerboard) of
 * pc->orig in fewer bits than B.14, else 0.  Reads pc->orig, dsp, quant
 * and scan only. */
int mpe_slice_guess_intra_table(const MpePictureCtx *pc);
/* Its sums over macroblock rows row0..row1-1, added to bits[table] (rows
 * can be summed on several threads and added up: the same guess). */
void mpe_slice_intra_table_bits(const MpePictureCtx *pc, int row0, int row1, int64_t bits[2]);

#endif
