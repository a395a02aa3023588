/* dsp.c — filling the primitive table. */
#include "dsp/dsp.h"

#include "bitstream/mpeg12.h"
#include "common/cpu.h"

void mpe_dsp_init_reference(MpeDsp *dsp)
{
    dsp->fdct = mpe_fdct_c;
    dsp->idct = mpe_idct_c;
    dsp->quant_intra = mpe_quant_intra_ref;
    dsp->quant_inter = mpe_quant_inter_ref;
    dsp->predict = mpe_predict_c;
    dsp->intra_activity = mpe_intra_activity_c;
    dsp->get_pixels = mpe_get_pixels_c;
    dsp->diff_pixels = mpe_diff_pixels_c;
    dsp->put_pixels = mpe_put_pixels_c;
    dsp->add_pixels = mpe_add_pixels_c;
    dsp->write_intra_block = bs_write_intra_block;
    dsp->write_inter_block = bs_write_inter_block;
}

void mpe_dsp_init(MpeDsp *dsp, unsigned cpu_flags)
{
    MpeDctDsp dct;

    mpe_dsp_init_reference(dsp);
    mpe_dct_dsp_init_flags(&dct, cpu_flags);
    dsp->fdct = dct.fdct;
    dsp->idct = dct.idct;
    dsp->quant_intra = mpe_quant_intra_fast;
    dsp->quant_inter = mpe_quant_inter_fast;
    dsp->write_intra_block = bs_write_intra_block_fast;
    dsp->write_inter_block = bs_write_inter_block_fast;
    /* SSE2 is the x86-64 baseline: compiled in or not, no run-time check */
#if defined(__SSE2__)
    dsp->predict = mpe_predict_sse2;
    dsp->intra_activity = mpe_intra_activity_sse2;
    dsp->get_pixels = mpe_get_pixels_sse2;
    dsp->diff_pixels = mpe_diff_pixels_sse2;
    dsp->put_pixels = mpe_put_pixels_sse2;
    dsp->add_pixels = mpe_add_pixels_sse2;
#endif
}
