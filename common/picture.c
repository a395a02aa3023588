#include "picture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))

int mpe_frame_alloc(MpeFrame *f, MpeFrameFormat format, int width, int height)
{
    size_t total;
    uint8_t *buf;

    memset(f, 0, sizeof(*f));
    if (width <= 0 || height <= 0)
        return -EINVAL;
    f->format = format;
    f->width = width;
    f->height = height;
    if (format == MPE_FRAME_RGB24) {
        f->stride[0] = width * 3;
        total = (size_t)f->stride[0] * height;
        if (!(buf = malloc(total)))
            return -ENOMEM;
        f->data[0] = buf;
    } else {
        int cw = (width + 1) / 2, ch = (height + 1) / 2;
        f->stride[0] = width;
        f->stride[1] = f->stride[2] = cw;
        total = (size_t)width * height + 2 * (size_t)cw * ch;
        if (!(buf = malloc(total)))
            return -ENOMEM;
        f->data[0] = buf;
        f->data[1] = buf + (size_t)width * height;
        f->data[2] = f->data[1] + (size_t)cw * ch;
    }
    f->alloc = buf;
    return 0;
}

void mpe_frame_free(MpeFrame *f)
{
    free(f->alloc);
    memset(f, 0, sizeof(*f));
}

size_t mpe_picture_layout(MpePicture *pic, int width, int height, uint8_t *buf)
{
    size_t off[3], total = 0;

    memset(pic, 0, sizeof(*pic));
    if (width <= 0 || height <= 0)
        return 0;
    pic->width = width;
    pic->height = height;
    pic->mb_width = (width + 15) / 16;
    pic->mb_height = (height + 15) / 16;
    for (int c = 0; c < 3; c++) {
        int shift = c ? 1 : 0;
        pic->plane_w[c] = (pic->mb_width * 16) >> shift;
        pic->plane_h[c] = (pic->mb_height * 16) >> shift;
        pic->stride[c] = ALIGN_UP(pic->plane_w[c], 32);
        /* rows a multiple of 1 KiB apart map a block's 16 rows, and its
         * reference's, onto the same two L1 sets: every SAD evicts its own
         * lines (2048^2 luma: a hot 16x16 SAD 49 ns at stride 2048, 17.5 at
         * 2112; the whole encode 5 % less CPU on 2 cores) */
        if (pic->stride[c] % 1024 == 0)
            pic->stride[c] += 64;
        off[c] = total;
        total += (size_t)pic->stride[c] * pic->plane_h[c];
    }
    for (int c = 0; buf && c < 3; c++)
        pic->plane[c] = buf + off[c];
    return ALIGN_UP(total, 64);
}

int mpe_picture_alloc(MpePicture *pic, int width, int height)
{
    const size_t size = mpe_picture_layout(pic, width, height, NULL);
    uint8_t *buf;

    if (!size)
        return -EINVAL;
    /* 64-byte alignment keeps rows friendly to SIMD and DMA later on. */
    if (!(buf = aligned_alloc(64, size)))
        return -ENOMEM;
    mpe_picture_layout(pic, width, height, buf);
    pic->alloc = buf;
    return 0;
}

void mpe_picture_free(MpePicture *pic)
{
    free(pic->alloc);
    memset(pic, 0, sizeof(*pic));
}

/* A row into a picture that is read next by another thread or a DMA engine,
 * not by this core: streaming stores (no read of the destination's lines
 * first, and no eviction of what the cache holds for the coder).  A 2048^2
 * frame's 6.3 MB into a slot: 0.58 -> 0.33 ms on the development machine;
 * on the H100 machine the copy took 1.7 ms of pool time a frame. */
static void copy_row_streaming(uint8_t *dst, const uint8_t *src, size_t n)
{
    size_t i = 0;
#if defined(__SSE2__)
    if (!((uintptr_t)dst & 15))
        for (; i + 64 <= n; i += 64) {
            const __m128i a = _mm_loadu_si128((const __m128i *)(src + i));
            const __m128i b = _mm_loadu_si128((const __m128i *)(src + i + 16));
            const __m128i c = _mm_loadu_si128((const __m128i *)(src + i + 32));
            const __m128i d = _mm_loadu_si128((const __m128i *)(src + i + 48));
            _mm_stream_si128((__m128i *)(dst + i), a);
            _mm_stream_si128((__m128i *)(dst + i + 16), b);
            _mm_stream_si128((__m128i *)(dst + i + 32), c);
            _mm_stream_si128((__m128i *)(dst + i + 48), d);
        }
#endif
    memcpy(dst + i, src + i, n - i);
}

void mpe_picture_from_yuv_band(MpePicture *pic, const MpeFrame *src, int band, int bands)
{
    for (int c = 0; c < 3; c++) {
        const int w = c ? (src->width + 1) / 2 : src->width;
        const int h = c ? (src->height + 1) / 2 : src->height;
        const int y0 = (int)((int64_t)h * band / bands), y1 = (int)((int64_t)h * (band + 1) / bands);
        uint8_t *p = pic->plane[c];
        const int stride = pic->stride[c];
        for (int y = y0; y < y1; y++) {
            uint8_t *row = p + (size_t)y * stride;
            const uint8_t *in = src->data[c] + (size_t)y * src->stride[c];
            copy_row_streaming(row, in, (size_t)w);
            memset(row + w, in[w - 1], (size_t)(pic->plane_w[c] - w));
        }
        /* the bottom padding repeats the last row (from the source: the
         * streaming stores need not be read back) */
        const uint8_t *last = src->data[c] + (size_t)(h - 1) * src->stride[c];
        for (int y = h; band == bands - 1 && y < pic->plane_h[c]; y++) {
            memcpy(p + (size_t)y * stride, last, (size_t)w);
            memset(p + (size_t)y * stride + w, last[w - 1], (size_t)(pic->plane_w[c] - w));
        }
    }
#if defined(__SSE2__)
    _mm_sfence();   /* the streaming stores are globally visible before the caller's release */
#endif
}

void mpe_picture_from_yuv(MpePicture *pic, const MpeFrame *src)
{
    mpe_picture_from_yuv_band(pic, src, 0, 1);
}

void mpe_picture_copy(MpePicture *dst, const MpePicture *src)
{
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < src->plane_h[c]; y++)
            memcpy(dst->plane[c] + (ptrdiff_t)y * dst->stride[c], src->plane[c] + (ptrdiff_t)y * src->stride[c],
                   (size_t)src->plane_w[c]);
}

uint64_t mpe_plane_sse(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs, int w, int h)
{
    uint64_t sse = 0;
    for (int y = 0; y < h; y++, a += as, b += bs) {
        uint32_t row = 0;   /* 4095 * 255^2 fits in 32 bits */
        for (int x = 0; x < w; x++) {
            int d = a[x] - b[x];
            row += (uint32_t)(d * d);
        }
        sse += row;
    }
    return sse;
}
