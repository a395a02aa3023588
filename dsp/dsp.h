/* dsp.h — the slice coder's hot primitives as one table of function pointers
 * (dav1d's DSP-context habit): mpe_dsp_init fills the C references, then
 * overwrites entries with the variants the flags allow (common/cpu.h):
 *   entry              C reference            FAST_C           SSE2    AVX2
 *   fdct, idct         mpe_[fi]dct_c          _fast_c          -       _avx2
 *   fdct_bound         mpe_fdct_bound_c       -                -       _avx2
 *   quant_intra/inter  mpe_quant_*_ref        _fast            -       _avx2
 *   dequant_intra      mpe_dequant_intra_dc   -                -       _avx2
 *   dequant_inter      mpe_dequant_inter      -                -       _avx2
 *   predict, pred_sad, bipred_sad, intra_activity,
 *   get/put/add_pixels                     _c        -                _sse2   -
 *   diff_pixels, block_energy              _c        -                _sse2   _avx2
 *   hpel_sads          mpe_hpel_sads_c        -                -       _avx2
 *   sse                mpe_plane_sse          -                -       _avx2
 *   write_intra/inter_block  bs_write_*_block _fast            -       -
 *   trellis_candidates mpe_trellis_candidates_c -          (SSE2)  _avx2
 *                      (SSE2: mpe_trellis_candidates, SSE2 where built)
 * Every variant gives output identical to its reference
 * (tests/unit/test_checkasm.c checks every entry under every subset of the
 * flags), so the choice never changes a stream; --dsp c (flags 0) keeps the
 * references.  The SAD and block sums are dsp/sad.h's table. */
#ifndef MPE_DSP_H
#define MPE_DSP_H

#include "bitstream/bitwriter.h"
#include "dsp/dct.h"
#include "dsp/pred.h"
#include "dsp/quant.h"
#include "dsp/trellis.h"

typedef void (*MpeIntraBlockFn)(BsWriter *bw, const int16_t scan[64], int dc_diff, int chroma,
                                int mpeg2, int table);
typedef void (*MpeInterBlockFn)(BsWriter *bw, const int16_t scan[64], int mpeg2);

typedef struct MpeDsp {
    MpeDctFn fdct, idct;                 /* dsp/dct.h */
    MpeFdctBoundFn fdct_bound;
    MpeQuantFn quant_intra, quant_inter; /* dsp/quant.h */
    MpeDequantIntraFn dequant_intra;
    MpeDequantInterFn dequant_inter;
    MpePredictFn predict;                /* dsp/pred.h */
    MpePredSadFn pred_sad;
    MpeBipredSadFn bipred_sad;
    MpeHpelSadsFn hpel_sads;
    MpeActivityFn intra_activity;
    MpeGetPixelsFn get_pixels;
    MpeDiffPixelsFn diff_pixels;
    MpeBlockEnergyFn block_energy;
    MpePutPixelsFn put_pixels;
    MpeAddPixelsFn add_pixels;
    MpeSseFn sse;                        /* dsp/pred.h */
    MpeIntraBlockFn write_intra_block;   /* bitstream/mpeg12.h */
    MpeInterBlockFn write_inter_block;
    MpeTrellisCandidatesFn trellis_candidates;   /* dsp/trellis.h */
} MpeDsp;

/* The C references only. */
void mpe_dsp_init_c(MpeDsp *dsp);
/* The C references, then the variants that cpu_flags (mpe_cpu_flags() & mask) allow. */
void mpe_dsp_init(MpeDsp *dsp, unsigned cpu_flags);

#endif
