/* iqa.h — image quality measures.  For now the cheap companions (SSE/PSNR/SSIM)
 * the encoder reports per frame; MAD and BLIINDS-II join here later with the
 * same shape (DESIGN.md §3). */
#ifndef MPE_IQA_H
#define MPE_IQA_H

#include <stddef.h>
#include <stdint.h>


/* PSNR in dB for 8-bit samples from a mean squared error; identical images
 * (mse 0) report 100 dB rather than infinity, so averages stay finite. */
double iqa_psnr_from_mse(double mse);

/* SSIM of two w x h 8-bit planes (a: the picture judged, b: the reference;
 * the value is symmetric), exactly as ffmpeg's ssim filter defines it
 * (x264's: 8x8 windows at a stride of 4 built from 4x4 block sums, mean
 * over (w/4-1) x (h/4-1) windows).  1.0 for identical planes; NaN when
 * w < 8 or h < 8 (no window fits). */
double iqa_ssim_plane(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs, int w,
                      int h);

#endif
