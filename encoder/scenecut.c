/* scenecut.c — see scenecut.h. */
#include "scenecut.h"

#include <stddef.h>
#include <string.h>

void mpe_scenecut_init(MpeSceneCut *sc)
{
    memset(sc, 0, sizeof(*sc));
    sc->last = -1;
}

/* Luma of one sample: frontend.h's fixed-point BT.601 conversion for RGB
 * input, the Y plane as it is for YUV input. */
static int luma_at(const MpeFrame *f, int x, int y)
{
    if (f->format == MPE_FRAME_YUV420)
        return f->data[0][(ptrdiff_t)y * f->stride[0] + x];
    const uint8_t *p = f->data[0] + (ptrdiff_t)y * f->stride[0] + 3 * x;
    return (16829 * p[0] + 33039 * p[1] + 6416 * p[2] + (16 << 16) + 32768) >> 16;
}

double mpe_scenecut_score(MpeSceneCut *sc, int n, const MpeFrame *f)
{
    uint32_t *h = sc->hist[n & 1];
    const int bw = f->width / 8, bh = f->height / 8;

    memset(h, 0, sizeof(sc->hist[0]));
    /* every other sample of every other row of each 8x8 block: 16 samples,
     * a quarter of the reads and still a mean that noise barely moves */
    for (int by = 0; by < bh; by++)
        for (int bx = 0; bx < bw; bx++) {
            int sum = 0;
            for (int y = 0; y < 8; y += 2)
                for (int x = 0; x < 8; x += 2)
                    sum += luma_at(f, 8 * bx + x, 8 * by + y);
            h[(sum / 16) * MPE_SCENECUT_BINS / 256]++;
        }
    sc->blocks = bw * bh;
    const int have_prev = sc->last == n - 1 && n > 0;
    sc->last = n;
    if (!have_prev || !sc->blocks)
        return -1;
    const uint32_t *g = sc->hist[(n - 1) & 1];
    uint64_t moved = 0;
    for (int i = 0; i < MPE_SCENECUT_BINS; i++)
        moved += h[i] > g[i] ? h[i] - g[i] : g[i] - h[i];
    return 100.0 * (double)moved / (2.0 * sc->blocks);
}
