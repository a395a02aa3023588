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

void mpe_fdct_c(int16_t block[64]);
void mpe_idct_c(int16_t block[64]);

/* Fill with the C reference, then any faster variants this build has. */
void mpe_dct_dsp_init(MpeDctDsp *dsp);

#endif
