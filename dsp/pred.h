/* pred.h — pixel primitives of the slice coder: half-pel motion-compensated
 * prediction and the intra activity measure of mode decision.  Each has the
 * C reference and an SSE2 version with identical output; the SSE2 ones exist
 * on x86 (MPE_ARCH_X86 of common/cpu.h). */
#ifndef MPE_PRED_H
#define MPE_PRED_H

#include <stddef.h>
#include <stdint.h>

#include "common/picture.h"

/* Prediction of a bw x bh block (bw 8 or 16) whose top-left sample sits at
 * half-pel position (px, py) >= 0 of the reference plane (13818-2 §7.6.4):
 * averages of 2 or 4 neighbours rounded up, (a+b+1)>>1 and (a+b+c+d+2)>>2.
 * Reads (px>>1) .. (px>>1) + bw (+1 when px is odd), likewise rows. */
typedef void (*MpePredictFn)(uint8_t *dst, ptrdiff_t dstride, const uint8_t *ref,
                             ptrdiff_t rstride, int px, int py, int bw, int bh);
void mpe_predict_c(uint8_t *dst, ptrdiff_t dstride, const uint8_t *ref, ptrdiff_t rstride, int px,
                   int py, int bw, int bh);
void mpe_predict_sse2(uint8_t *dst, ptrdiff_t dstride, const uint8_t *ref, ptrdiff_t rstride,
                      int px, int py, int bw, int bh);

/* SAD of the 16x16 block src against predict's 16x16 output at half-pel
 * position (px, py) of ref, without writing the prediction: the half-pel
 * refinement's and the B modes' cost of one candidate. */
typedef uint32_t (*MpePredSadFn)(const uint8_t *src, ptrdiff_t sstride, const uint8_t *ref,
                                 ptrdiff_t rstride, int px, int py);
uint32_t mpe_pred_sad_c(const uint8_t *src, ptrdiff_t sstride, const uint8_t *ref, ptrdiff_t rstride,
                        int px, int py);
uint32_t mpe_pred_sad_sse2(const uint8_t *src, ptrdiff_t sstride, const uint8_t *ref,
                           ptrdiff_t rstride, int px, int py);

/* SAD of src against an interpolated prediction: the 16x16 predictions at
 * (px0, py0) of ref0 and (px1, py1) of ref1 averaged, rounding up (13818-2
 * §7.6.7.1), without writing it (the B modes' cost). */
typedef uint32_t (*MpeBipredSadFn)(const uint8_t *src, ptrdiff_t sstride, const uint8_t *ref0,
                                   ptrdiff_t r0stride, int px0, int py0, const uint8_t *ref1,
                                   ptrdiff_t r1stride, int px1, int py1);
uint32_t mpe_bipred_sad_c(const uint8_t *src, ptrdiff_t sstride, const uint8_t *ref0,
                          ptrdiff_t r0stride, int px0, int py0, const uint8_t *ref1,
                          ptrdiff_t r1stride, int px1, int py1);
uint32_t mpe_bipred_sad_sse2(const uint8_t *src, ptrdiff_t sstride, const uint8_t *ref0,
                             ptrdiff_t r0stride, int px0, int py0, const uint8_t *ref1,
                             ptrdiff_t r1stride, int px1, int py1);

/* The SADs of the 16x16 block src against the 9 half-pel predictions
 * around the full-pel block at ref: sad[3 * (hy + 1) + hx + 1] for the
 * half-pel offset (hx, hy) in {-1, 0, 1}^2, each what pred_sad gives at
 * (2 x + hx, 2 y + hy) for ref's own position (x, y).  Reads ref's rows
 * -1 .. 16 and columns -1 .. 16.  One pass shares the loads and the
 * averages of neighbouring candidates. */
typedef void (*MpeHpelSadsFn)(uint32_t sad[9], const uint8_t *src, ptrdiff_t sstride,
                              const uint8_t *ref, ptrdiff_t rstride);
void mpe_hpel_sads_c(uint32_t sad[9], const uint8_t *src, ptrdiff_t sstride, const uint8_t *ref,
                     ptrdiff_t rstride);
void mpe_hpel_sads_avx2(uint32_t sad[9], const uint8_t *src, ptrdiff_t sstride, const uint8_t *ref,
                        ptrdiff_t rstride);

/* Sum over a 16x16 block of |p - mean|, mean = (sum + 128) >> 8: the cost
 * of coding it intra, comparable with a prediction SAD. */
typedef uint32_t (*MpeActivityFn)(const uint8_t *p, ptrdiff_t stride);
uint32_t mpe_intra_activity_c(const uint8_t *p, ptrdiff_t stride);
uint32_t mpe_intra_activity_sse2(const uint8_t *p, ptrdiff_t stride);

/* 8x8 block transfers around the transform (FFmpeg's names):
 *   get:  blk = src (intra samples)
 *   diff: blk = src - pred, returning sum |blk| (the DCT-skip test's input)
 *   put:  dst = clip(blk) to 0..255 (intra reconstruction; blk from the IDCT)
 *   add:  dst = clip(pred + blk) (inter reconstruction) */
typedef void (*MpeGetPixelsFn)(int16_t blk[64], const uint8_t *src, ptrdiff_t stride);
typedef uint32_t (*MpeDiffPixelsFn)(int16_t blk[64], const uint8_t *src, ptrdiff_t sstride,
                                    const uint8_t *pred, ptrdiff_t pstride);
typedef void (*MpePutPixelsFn)(uint8_t *dst, ptrdiff_t stride, const int16_t blk[64]);
typedef void (*MpeAddPixelsFn)(uint8_t *dst, ptrdiff_t dstride, const uint8_t *pred,
                               ptrdiff_t pstride, const int16_t blk[64]);
void mpe_get_pixels_c(int16_t blk[64], const uint8_t *src, ptrdiff_t stride);
void mpe_get_pixels_sse2(int16_t blk[64], const uint8_t *src, ptrdiff_t stride);
uint32_t mpe_diff_pixels_c(int16_t blk[64], const uint8_t *src, ptrdiff_t sstride,
                           const uint8_t *pred, ptrdiff_t pstride);
uint32_t mpe_diff_pixels_sse2(int16_t blk[64], const uint8_t *src, ptrdiff_t sstride,
                              const uint8_t *pred, ptrdiff_t pstride);
uint32_t mpe_diff_pixels_avx2(int16_t blk[64], const uint8_t *src, ptrdiff_t sstride,
                              const uint8_t *pred, ptrdiff_t pstride);
void mpe_put_pixels_c(uint8_t *dst, ptrdiff_t stride, const int16_t blk[64]);
void mpe_put_pixels_sse2(uint8_t *dst, ptrdiff_t stride, const int16_t blk[64]);
/* blk in [-256, 255] (the IDCT's output range) */
void mpe_add_pixels_c(uint8_t *dst, ptrdiff_t dstride, const uint8_t *pred, ptrdiff_t pstride,
                      const int16_t blk[64]);
void mpe_add_pixels_sse2(uint8_t *dst, ptrdiff_t dstride, const uint8_t *pred, ptrdiff_t pstride,
                         const int16_t blk[64]);

/* The sum and (returned) the sum of squares of a residual block, values in
 * [-255, 255]: the energy that bounds every DCT coefficient (the slice
 * coder's exact test for a block that quantises to nothing). */
typedef uint32_t (*MpeBlockEnergyFn)(const int16_t blk[64], int32_t *sum);
uint32_t mpe_block_energy_c(const int16_t blk[64], int32_t *sum);
uint32_t mpe_block_energy_sse2(const int16_t blk[64], int32_t *sum);
uint32_t mpe_block_energy_avx2(const int16_t blk[64], int32_t *sum);

/* Sum of squared differences of two w x h sample rectangles (w <= 4095):
 * the slices' distortion, measured as they finish. */
typedef uint64_t (*MpeSseFn)(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs, int w,
                             int h);
uint64_t mpe_sse_avx2(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs, int w, int h);

#endif
