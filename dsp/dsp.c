/* dsp.c — filling the primitive table: the C references, then one arch
 * init gated by the flags (dav1d's src/mc_tmpl.c + src/x86/mc.h shape). */
#include "dsp/dsp.h"

#include "bitstream/mpeg12.h"
#include "common/cpu.h"

void mpe_dsp_init_c(MpeDsp *dsp)
{
    dsp->fdct = mpe_fdct_c;
    dsp->idct = mpe_idct_c;
    dsp->fdct_bound = mpe_fdct_bound_c;
    dsp->quant_intra = mpe_quant_intra_ref;
    dsp->quant_inter = mpe_quant_inter_ref;
    dsp->dequant_intra = mpe_dequant_intra_dc;
    dsp->dequant_inter = mpe_dequant_inter;
    dsp->predict = mpe_predict_c;
    dsp->pred_sad = mpe_pred_sad_c;
    dsp->bipred_sad = mpe_bipred_sad_c;
    dsp->hpel_sads = mpe_hpel_sads_c;
    dsp->intra_activity = mpe_intra_activity_c;
    dsp->get_pixels = mpe_get_pixels_c;
    dsp->diff_pixels = mpe_diff_pixels_c;
    dsp->block_energy = mpe_block_energy_c;
    dsp->put_pixels = mpe_put_pixels_c;
    dsp->add_pixels = mpe_add_pixels_c;
    dsp->sse = mpe_plane_sse;
    dsp->write_intra_block = bs_write_intra_block;
    dsp->write_inter_block = bs_write_inter_block;
    dsp->trellis_candidates = mpe_trellis_candidates_c;
}

#ifdef MPE_ARCH_X86
static void dsp_init_x86(MpeDsp *dsp, unsigned cpu_flags)
{
    if (cpu_flags & MPE_CPU_SSE2) {
        dsp->predict = mpe_predict_sse2;
        dsp->pred_sad = mpe_pred_sad_sse2;
        dsp->bipred_sad = mpe_bipred_sad_sse2;
        dsp->intra_activity = mpe_intra_activity_sse2;
        dsp->get_pixels = mpe_get_pixels_sse2;
        dsp->diff_pixels = mpe_diff_pixels_sse2;
        dsp->block_energy = mpe_block_energy_sse2;
        dsp->put_pixels = mpe_put_pixels_sse2;
        dsp->add_pixels = mpe_add_pixels_sse2;
        dsp->trellis_candidates = mpe_trellis_candidates;
    }
    if (cpu_flags & MPE_CPU_AVX2) {
        dsp->fdct = mpe_fdct_avx2;
        dsp->idct = mpe_idct_avx2;
        dsp->fdct_bound = mpe_fdct_bound_avx2;
        dsp->quant_intra = mpe_quant_intra_avx2;
        dsp->quant_inter = mpe_quant_inter_avx2;
        dsp->dequant_intra = mpe_dequant_intra_avx2;
        dsp->dequant_inter = mpe_dequant_inter_avx2;
        dsp->sse = mpe_sse_avx2;
        dsp->hpel_sads = mpe_hpel_sads_avx2;
        dsp->diff_pixels = mpe_diff_pixels_avx2;
        dsp->block_energy = mpe_block_energy_avx2;
        dsp->trellis_candidates = mpe_trellis_candidates_avx2;
    }
}
#endif

void mpe_dsp_init(MpeDsp *dsp, unsigned cpu_flags)
{
    mpe_dsp_init_c(dsp);
    if (cpu_flags & MPE_CPU_FAST_C) {
        dsp->fdct = mpe_fdct_fast_c;
        dsp->idct = mpe_idct_fast_c;
        dsp->quant_intra = mpe_quant_intra_fast;
        dsp->quant_inter = mpe_quant_inter_fast;
        dsp->write_intra_block = bs_write_intra_block_fast;
        dsp->write_inter_block = bs_write_inter_block_fast;
    }
#ifdef MPE_ARCH_X86
    dsp_init_x86(dsp, cpu_flags);
#endif
}
