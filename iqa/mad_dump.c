/* mad_dump.c — writes one full-resolution MAD map for inspection, as raw
 * little-endian float64 (h rows x w columns, row-major, no header: the
 * format of ../shared/reference/mad/maps) and as an 8-bit gray PNG scaled
 * linearly from 0 (black) to the map's maximum (white).  Each file is
 * written under a temporary name and renamed, so a failed dump leaves no
 * partial file behind. */
#include "iqa/mad_internal.h"

#include <errno.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int write_bin(const char *path, const double *map, size_t n, MpeError *err)
{
    unsigned char buf[8 * 512];
    FILE *f = fopen(path, "wb");
    if (!f)
        return mpe_error(err, -errno, "%s: %s", path, strerror(errno));
    for (size_t i = 0; i < n;) {
        size_t k = 0;
        for (; k < sizeof(buf) / 8 && i < n; k++, i++) {
            uint64_t u;
            memcpy(&u, &map[i], 8);
            for (int b = 0; b < 8; b++)
                buf[8 * k + b] = (unsigned char)(u >> (8 * b));
        }
        if (fwrite(buf, 8, k, f) != k) {
            fclose(f);
            return mpe_error(err, -EIO, "%s: write failed", path);
        }
    }
    if (fclose(f) != 0)
        return mpe_error(err, -EIO, "%s: write failed", path);
    return 0;
}

/* libpng reports errors by longjmp; the rows are prepared before it starts
 * so nothing needs freeing on that path except the file. */
static int write_png(const char *path, const uint8_t *pix, int w, int h, MpeError *err)
{
    png_structp png = NULL;
    png_infop info = NULL;
    FILE *volatile f = fopen(path, "wb");
    if (!f)
        return mpe_error(err, -errno, "%s: %s", path, strerror(errno));
    png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    if (png)
        info = png_create_info_struct(png);
    if (!png || !info) {
        png_destroy_write_struct(&png, NULL);
        fclose(f);
        return mpe_error(err, -ENOMEM, "%s: out of memory", path);
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(f);
        return mpe_error(err, -EIO, "%s: PNG write failed", path);
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_GRAY,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < h; y++)
        png_write_row(png, (png_const_bytep)(pix + (size_t)y * w));
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    if (fclose(f) != 0)
        return mpe_error(err, -EIO, "%s: write failed", path);
    return 0;
}

static int write_renamed(const char *dir, const char *name, const char *ext, const double *map,
                         const uint8_t *pix, int w, int h, MpeError *err)
{
    char path[4096], tmp[4200];
    int ret;
    if (snprintf(path, sizeof(path), "%s/%s%s", dir, name, ext) >= (int)sizeof(path))
        return mpe_error(err, -ENAMETOOLONG, "%s: path too long", dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    ret = map ? write_bin(tmp, map, (size_t)w * h, err) : write_png(tmp, pix, w, h, err);
    if (ret < 0) {
        remove(tmp);
        return ret;
    }
    if (rename(tmp, path) != 0) {
        ret = mpe_error(err, -errno, "%s: %s", path, strerror(errno));
        remove(tmp);
        return ret;
    }
    return 0;
}

int mad_dump_map(const char *dir, const char *name, const double *map, int w, int h,
                 MpeError *err)
{
    size_t n = (size_t)w * h;
    double hi = 0.0;
    int ret;
    uint8_t *pix = malloc(n);
    if (!pix)
        return mpe_error(err, -ENOMEM, "mad: out of memory for the %s map", name);
    for (size_t i = 0; i < n; i++)
        if (map[i] > hi)
            hi = map[i];
    for (size_t i = 0; i < n; i++) {
        double v = hi > 0.0 && map[i] > 0.0 ? map[i] / hi * 255.0 + 0.5 : 0.0;
        pix[i] = (uint8_t)(v > 255.0 ? 255.0 : v);
    }
    ret = write_renamed(dir, name, "_f64.bin", map, NULL, w, h, err);
    if (ret == 0)
        ret = write_renamed(dir, name, ".png", NULL, pix, w, h, err);
    free(pix);
    return ret;
}

static void expand_tiles(double *map, int w, int h, int nbr, int nbc, const double *grid)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int by = y / MAD_STEP, bx = x / MAD_STEP;
            map[(size_t)y * w + x] = by < nbr && bx < nbc ? grid[(size_t)by * nbc + bx] : 0.0;
        }
}

int mad_dump_maps(const char *dir, int w, int h, int nbr, int nbc, const double *msk,
                  const int32_t *lmse_sum, const double *eta, MpeError *err)
{
    const size_t n = (size_t)w * h;
    int ret = 0;
    double *vis = malloc(n * sizeof(*vis)), *map = calloc(n, sizeof(*map));
    if (!vis || !map) {
        ret = mpe_error(err, -ENOMEM, "mad: out of memory for the map dump");
        goto fail;
    }
    expand_tiles(vis, w, h, nbr, nbc, msk);
    if ((ret = mad_dump_map(dir, "mad_visibility", vis, w, h, err)) < 0)
        goto fail;
    for (size_t i = 0; i < n; i++)
        map[i] = lmse_sum[i] / 256.0;
    if ((ret = mad_dump_map(dir, "mad_lmse", map, w, h, err)) < 0)
        goto fail;
    for (size_t i = 0; i < n; i++)
        map[i] *= vis[i];
    if ((ret = mad_dump_map(dir, "mad_detect", map, w, h, err)) < 0)
        goto fail;
    expand_tiles(map, w, h, nbr, nbc, eta);
    ret = mad_dump_map(dir, "mad_appearance", map, w, h, err);
fail:
    free(vis);
    free(map);
    return ret;
}
