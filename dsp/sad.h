/* sad.h — the motion search's primitives, shared by the encoder's half-pel
 * refinement and the cpu front end (gpu/frontend_cpu*.c): 16x16 SAD, the
 * same with an early exit, and sums of 8x8 luma blocks (the search's lower
 * bounds).  One table, filled like every DSP table (common/cpu.h): the C
 * versions, then the variants the flags allow; each variant's output is
 * identical to its C version's (tests/unit/test_checkasm.c). */
#ifndef MPE_SAD_H
#define MPE_SAD_H

#include <stddef.h>
#include <stdint.h>

/* SAD of the 16x16 blocks at a (stride as) and b (stride bs). */
typedef uint32_t (*MpeSad16Fn)(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs);

/* The exact SAD, or, once the top 8 rows' SAD alone exceeds bound, that
 * partial sum: then the SAD exceeds bound too, and a caller comparing it
 * with bound decides the same either way. */
typedef uint32_t (*MpeSad16BoundFn)(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs,
                                    uint32_t bound);

/* Sums of the 8x8 blocks of src whose top-left corner is at (x, y),
 * x in 0 .. w-8, y in y0 .. y1-1, into sum[y * sstride + x].  w is a
 * multiple of 16 in 16 .. 4096; reads rows y0 .. y1+6, columns 0 .. w-1.
 * Writes nothing outside x 0 .. w-1 of those rows; the entries at x past
 * w-8 are unspecified (a vector variant fills them with whatever it
 * computed there). */
typedef void (*MpeBlockSumsFn)(uint16_t *sum, ptrdiff_t sstride, const uint8_t *src,
                               ptrdiff_t stride, int w, int y0, int y1);

typedef struct MpeSadDsp {
    MpeSad16Fn sad16;
    MpeSad16BoundFn sad16_bound;
    MpeBlockSumsFn block_sums;
} MpeSadDsp;

uint32_t mpe_sad16_c(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs);
uint32_t mpe_sad16_sse2(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs);
uint32_t mpe_sad16_bound_c(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs,
                           uint32_t bound);
uint32_t mpe_sad16_bound_sse2(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs,
                              uint32_t bound);
void mpe_block_sums_c(uint16_t *sum, ptrdiff_t sstride, const uint8_t *src, ptrdiff_t stride, int w,
                      int y0, int y1);
void mpe_block_sums_avx2(uint16_t *sum, ptrdiff_t sstride, const uint8_t *src, ptrdiff_t stride,
                         int w, int y0, int y1);

/* The C versions only. */
void mpe_sad_dsp_init_c(MpeSadDsp *dsp);
/* The C versions, then the variants that cpu_flags (mpe_cpu_flags() & mask) allow. */
void mpe_sad_dsp_init(MpeSadDsp *dsp, unsigned cpu_flags);

#endif
