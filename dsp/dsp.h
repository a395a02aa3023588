/* dsp.h — the slice coder's hot primitives as one table of function pointers
 * (dav1d's DSP-context habit): mpe_dsp_init fills the C references, then
 * overwrites each entry with the fastest variant this CPU runs.  Every
 * variant gives output identical to its reference (tests/unit/test_dsp.c
 * checks them on random inputs), so the choice never changes a stream;
 * --dsp c (mpe_dsp_init_reference) keeps the references, for comparison. */
#ifndef MPE_DSP_H
#define MPE_DSP_H

#include "bitstream/bitwriter.h"
#include "dsp/dct.h"
#include "dsp/pred.h"
#include "dsp/quant.h"

typedef void (*MpeIntraBlockFn)(BsWriter *bw, const int16_t scan[64], int dc_diff, int chroma,
                                int mpeg2);
typedef void (*MpeInterBlockFn)(BsWriter *bw, const int16_t scan[64], int mpeg2);

typedef struct MpeDsp {
    MpeDctFn fdct, idct;                 /* dsp/dct.h */
    MpeQuantFn quant_intra, quant_inter; /* dsp/quant.h */
    MpePredictFn predict;                /* dsp/pred.h */
    MpeActivityFn intra_activity;
    MpeGetPixelsFn get_pixels;
    MpeDiffPixelsFn diff_pixels;
    MpePutPixelsFn put_pixels;
    MpeAddPixelsFn add_pixels;
    MpeIntraBlockFn write_intra_block;   /* bitstream/mpeg12.h */
    MpeInterBlockFn write_inter_block;
} MpeDsp;

/* The fastest variants `cpu_flags` (common/cpu.h MPE_CPU_*) allow. */
void mpe_dsp_init(MpeDsp *dsp, unsigned cpu_flags);
/* The C references only. */
void mpe_dsp_init_reference(MpeDsp *dsp);

#endif
