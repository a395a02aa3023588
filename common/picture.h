/* picture.h — the two image containers that cross module boundaries.
 *
 * MpeFrame is what an input reader produces: the true-size image, either
 * packed 8-bit RGB or planar YUV 4:2:0.  MpePicture is what the coder works
 * on: Y, Cb, Cr planes padded to whole macroblocks (16x16 luma, 8x8 chroma);
 * the padding holds edge-replicated samples so that a decoder, which also
 * decodes whole macroblocks, sees the same thing the encoder predicted from. */
#ifndef MPE_PICTURE_H
#define MPE_PICTURE_H

#include <stddef.h>
#include <stdint.h>

typedef enum MpeFrameFormat {
    MPE_FRAME_RGB24 = 0,   /* data[0]: packed R,G,B bytes, stride[0] bytes/row */
    MPE_FRAME_YUV420 = 1,  /* data[0..2]: Y (w x h), Cb, Cr ((w+1)/2 x (h+1)/2) */
} MpeFrameFormat;

typedef struct MpeFrame {
    MpeFrameFormat format;
    int width, height;
    uint8_t *data[3];
    int stride[3];
    void *alloc;           /* owner of data[] */
} MpeFrame;

/* Allocate a frame of the given format and size; contents undefined. */
int mpe_frame_alloc(MpeFrame *f, MpeFrameFormat format, int width, int height);
void mpe_frame_free(MpeFrame *f);

typedef struct MpePicture {
    int width, height;       /* true (display) size of the luma plane */
    int mb_width, mb_height; /* macroblocks covering it */
    uint8_t *plane[3];       /* Y, Cb, Cr */
    int stride[3];           /* bytes per row, a multiple of 32 */
    int plane_w[3], plane_h[3]; /* padded sizes: 16*mb_width x 16*mb_height, half for chroma */
    void *alloc;
} MpePicture;

/* The picture's geometry (planes padded to whole macroblocks, strides a
 * multiple of 32 and never of 1024) with its planes in buf (64-aligned, or
 * NULL: none yet);
 * returns the bytes buf needs, 0 for a bad size.  pic->alloc stays NULL. */
size_t mpe_picture_layout(MpePicture *pic, int width, int height, uint8_t *buf);
int mpe_picture_alloc(MpePicture *pic, int width, int height);
void mpe_picture_free(MpePicture *pic);
/* Copy a YUV 4:2:0 frame into the picture and fill the padding by edge
 * replication. */
void mpe_picture_from_yuv(MpePicture *pic, const MpeFrame *src);
/* The same, band `band` of `bands` (rows cut alike in every plane, the
 * bottom padding with the last band): the bands together do exactly what
 * mpe_picture_from_yuv does, in any order or at once. */
void mpe_picture_from_yuv_band(MpePicture *pic, const MpeFrame *src, int band, int bands);
/* Copy src's padded planes into dst (the same size, any strides). */
void mpe_picture_copy(MpePicture *dst, const MpePicture *src);

/* Sum of squared differences of two w x h 8-bit planes (w <= 4095): the
 * C version of PSNR's sums (iqa/) and of the DSP table's sse (dsp/, which
 * has faster ones checked against it). */
uint64_t mpe_plane_sse(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs, int w, int h);

#endif
