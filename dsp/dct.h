/* dct.h — 8x8 forward and inverse DCT, as a table of function pointers so
 * faster versions can replace the C reference (dav1d's DSP-context habit).
 *
 * Both work in place on a row-major 8x8 block of int16.
 *  fdct: input samples or residuals in [-256, 255]; output the coefficients
 *        of ISO/IEC 13818-2 Annex A's definition, F(u,v) = 1/4 C(u) C(v)
 *        sum f(x,y) cos.. cos.., rounded to nearest and clamped to
 *        [-2048, 2047]; F(0,0) of a flat block of value v is 8v.
 *  idct: input coefficients in [-2048, 2047]; output rounded to nearest and
 *        clamped to [-256, 255]; meets IEEE 1180-1990 accuracy.
 * Integer arithmetic only, so results are identical on every machine. */
#ifndef MPE_DCT_H
#define MPE_DCT_H

#include <stdint.h>

typedef void (*MpeDctFn)(int16_t block[64]);

typedef struct MpeDctDsp {
    MpeDctFn fdct;
    MpeDctFn idct;
} MpeDctDsp;

/* The C reference (dct.c). */
void mpe_fdct_c(int16_t block[64]);
void mpe_idct_c(int16_t block[64]);

/* Faster variants (dct_fast.c) whose output is IDENTICAL to the reference:
 * _fast_c for any int16 input; _avx2 for inputs in the documented ranges
 * above, on CPUs with AVX2 (mpe_cpu_flags() & MPE_CPU_AVX2). */
void mpe_fdct_fast_c(int16_t block[64]);
void mpe_idct_fast_c(int16_t block[64]);
void mpe_fdct_avx2(int16_t block[64]);
void mpe_idct_avx2(int16_t block[64]);

/* T[k][n] = round(2^30 * C(k)/2 * cos((2n+1) k pi / 16)), shared by every variant. */
extern const int32_t mpe_dct_tab[8][8];

/* Fill with the C reference, then the fastest variants that `cpu_flags`
 * (MPE_CPU_* of common/cpu.h) allow: mpe_dct_dsp_init(&d) uses this CPU's,
 * mpe_dct_dsp_init_flags(&d, 0) the portable ones. */
void mpe_dct_dsp_init(MpeDctDsp *dsp);
void mpe_dct_dsp_init_flags(MpeDctDsp *dsp, unsigned cpu_flags);

#endif
