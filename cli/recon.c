/* recon.c — YUV4MPEG2 writer for reconstructed pictures.
 *
 * Both functions flush the stream before returning, so a write failure
 * (ENOSPC, EPIPE, EIO) is reported by the call that caused it rather than by
 * a later fclose. */
#include "cli/recon.h"

#include <errno.h>
#include <stddef.h>

static int write_error(void)
{
    return errno > 0 ? -errno : -EIO;
}

int mpe_y4m_write_header(FILE *f, int width, int height, int fps_num, int fps_den)
{
    if (!f || width <= 0 || height <= 0 || fps_num <= 0 || fps_den <= 0)
        return -EINVAL;
    errno = 0;
    if (fprintf(f, "YUV4MPEG2 W%d H%d F%d:%d Ip A1:1 C420jpeg\n", width, height, fps_num,
                fps_den) < 0 ||
        fflush(f) != 0)
        return write_error();
    return 0;
}

int mpe_y4m_write_picture(FILE *f, const MpePicture *pic)
{
    if (!f || !pic || !pic->plane[0] || pic->width <= 0 || pic->height <= 0)
        return -EINVAL;
    errno = 0;
    if (fputs("FRAME\n", f) == EOF)
        return write_error();
    for (int c = 0; c < 3; c++) {
        int w = c ? (pic->width + 1) / 2 : pic->width;
        int h = c ? (pic->height + 1) / 2 : pic->height;
        const uint8_t *p = pic->plane[c];

        if (w > pic->plane_w[c] || h > pic->plane_h[c] || w > pic->stride[c])
            return -EINVAL;
        if (pic->stride[c] == w) {
            if (fwrite(p, 1, (size_t)w * h, f) != (size_t)w * h)
                return write_error();
            continue;
        }
        for (int y = 0; y < h; y++)
            if (fwrite(p + (size_t)y * pic->stride[c], 1, (size_t)w, f) != (size_t)w)
                return write_error();
    }
    if (fflush(f) != 0)
        return write_error();
    return 0;
}
