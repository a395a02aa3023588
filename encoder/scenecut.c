/* scenecut.c — see scenecut.h. */
#include "scenecut.h"

#include <stddef.h>
#include <string.h>

void mpe_scenecut_init(MpeSceneCut *sc)
{
    memset(sc, 0, sizeof(*sc));
    sc->last = -1;
}

/* Sum of the luma of 16 samples of the 8x8 block at (x, y): every other
 * sample of every other row, a quarter of the reads and still a mean that
 * noise barely moves.  RGB input through frontend.h's fixed-point BT.601
 * conversion, YUV input's Y plane as it is. */
static int block_sum(const MpeFrame *f, int x, int y)
{
    int sum = 0;
    if (f->format == MPE_FRAME_YUV420) {
        for (int r = 0; r < 8; r += 2) {
            const uint8_t *p = f->data[0] + (ptrdiff_t)(y + r) * f->stride[0] + x;
            sum += p[0] + p[2] + p[4] + p[6];
        }
        return sum;
    }
    for (int r = 0; r < 8; r += 2) {
        const uint8_t *p = f->data[0] + (ptrdiff_t)(y + r) * f->stride[0] + 3 * x;
        for (int c = 0; c < 8; c += 2, p += 6)
            sum += (16829 * p[0] + 33039 * p[1] + 6416 * p[2] + (16 << 16) + 32768) >> 16;
    }
    return sum;
}

double mpe_scenecut_score(MpeSceneCut *sc, int n, const MpeFrame *f)
{
    uint32_t *h = sc->hist[n & 1];
    const int bw = f->width / 8, bh = f->height / 8;

    memset(h, 0, sizeof(sc->hist[0]));
    for (int by = 0; by < bh; by++)
        for (int bx = 0; bx < bw; bx++)
            h[(block_sum(f, 8 * bx, 8 * by) / 16) * MPE_SCENECUT_BINS / 256]++;
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
