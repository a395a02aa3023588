/* png_decode.h — PNG decoding from memory into an RGB24 frame.
 *
 * Two decoders behind one call.  The fast one takes the common case (8-bit
 * gray, gray+alpha, RGB, RGBA, not interlaced): it lets libpng read and
 * check everything up to the first IDAT, then inflates the image data
 * itself (libdeflate where built with it, else zlib; png_decode.c says when
 * zlib still takes over) and unfilters with SIMD code into the frame rows.
 * Every other layout (palette, 1/2/4/16-bit, Adam7) goes through libpng's
 * row reader.  Both give the same pixels for every image (alpha dropped,
 * gray replicated, 16-bit rounded (v*255+32767)/65535, palette expanded).
 *
 * Checks, in both decoders: chunk CRCs of critical chunks (IHDR, PLTE,
 * IDAT, IEND; a bad one is an error, a bad ancillary one is ignored as
 * libpng does); the zlib stream's Adler-32 is not checked (the IDAT CRCs
 * already cover the compressed bytes; skipping it saves ~3 ms per 2048²
 * frame).  A stream that ends early, a file cut short, a bad filter byte or
 * a zlib error is "corrupt PNG (<reason>)"; compressed data beyond the
 * image is ignored, as libpng does.  Every message starts with the name.
 *
 * input.c reads files through this; the fuzz target and the tests call it
 * on bytes in memory.  No global state: safe on several threads at once. */
#ifndef MPE_PNG_DECODE_H
#define MPE_PNG_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "common/picture.h"

/* mpe_png_decode flags */
enum {
    MPE_PNG_LIBPNG_ONLY = 1 << 0, /* never the fast decoder */
    MPE_PNG_FAST_ONLY = 1 << 1,   /* -ENOTSUP (no message) when the fast one cannot take it */
    MPE_PNG_NO_CRC = 1 << 3,      /* chunk CRCs not checked (fuzzing reaches deeper) */
    MPE_PNG_ZLIB_STREAM = 1 << 4, /* the fast decoder inflates with zlib even with libdeflate
                                     built in (the tests compare the two) */
};

/* What the fast decoder keeps from one image to the next: its row buffers,
 * with libdeflate the whole inflated image (bytes per row + 1, times the
 * height) and the joined IDAT data, and libdeflate's decompressor.  Buffers
 * grow on demand and are kept, so frames of one size cost no allocation
 * after the first.  One per decoding thread: never used by two at once. */
typedef struct MpePngScratch MpePngScratch;
/* 0, or -ENOMEM (then *scratch is NULL). */
int mpe_png_scratch_open(MpePngScratch **scratch);
void mpe_png_scratch_close(MpePngScratch *scratch); /* NULL: nothing */
/* 1 when the fast decoder inflates with libdeflate (built with it). */
int mpe_png_have_libdeflate(void);

/* Decodes the PNG data[0..size) ("name" is for messages).  With frame NULL,
 * reads only the header (everything before the image data) and sets *width,
 * *height.  Else decodes into frame (MPE_FRAME_RGB24), but only when the
 * image is frame->width x frame->height: when it is not, sets *width,
 * *height and returns 1 without a message.  Returns 0, 1, or a negative
 * errno with err set ("NAME: not a PNG file", "NAME: corrupt PNG (...)",
 * "NAME: out of memory").  cpu_flags: the MPE_CPU_* (common/cpu.h) the
 * fast decoder's unfilters may use, mpe_cpu_flags() & mask; 0 is C only. */
int mpe_png_decode(MpeFrame *frame, int *width, int *height, const uint8_t *data, size_t size,
                   const char *name, unsigned flags, unsigned cpu_flags, MpeError *err);
/* The same with the caller's scratch (NULL: one of its own for this call). */
int mpe_png_decode_with(MpePngScratch *scratch, MpeFrame *frame, int *width, int *height,
                        const uint8_t *data, size_t size, const char *name, unsigned flags,
                        unsigned cpu_flags, MpeError *err);

/* The PNG unfilters (ISO/IEC 15948 §9.2) for 1..4 bytes per pixel:
 * dst[0..len) = src + predictor(dst to the left, prev above); prev is the
 * previous unfiltered row (zeros for the first).  dst must not overlap src
 * or prev.  Exposed so that the tests check each variant against the C. */
typedef void (*MpePngUnfilterFn)(uint8_t *dst, const uint8_t *src, const uint8_t *prev,
                                 size_t len);

enum { MPE_PNG_SUB = 1, MPE_PNG_UP = 2, MPE_PNG_AVG = 3, MPE_PNG_PAETH = 4 };

/* Paeth on two consecutive rows at once: row 0 (src0 -> dst0, above it
 * prev) then row 1 (src1 -> dst1, above it dst0); the same bytes as two
 * unfilter[MPE_PNG_PAETH] calls.  No buffer may overlap another. */
typedef void (*MpePngPaeth2Fn)(uint8_t *dst0, uint8_t *dst1, const uint8_t *src0,
                               const uint8_t *src1, const uint8_t *prev, size_t len);

typedef struct MpePngDsp {
    MpePngUnfilterFn unfilter[5][4]; /* [filter type 1..4][bytes per pixel - 1]; [0] unused */
    MpePngPaeth2Fn paeth2[4];        /* [bytes per pixel - 1]; NULL: none faster than two rows */
} MpePngDsp;

/* The C versions only. */
void mpe_png_dsp_init_c(MpePngDsp *dsp);
/* The C versions, then the variants that cpu_flags (mpe_cpu_flags() & mask) allow. */
void mpe_png_dsp_init(MpePngDsp *dsp, unsigned cpu_flags);

#endif
