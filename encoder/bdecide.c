/* bdecide.c — adaptive B-picture placement: see bdecide.h. */
#include "bdecide.h"

void mpe_bdecide_intra_costs(uint32_t *intra, const MpePicture *pic)
{
    const ptrdiff_t stride = pic->stride[0];
    for (int mby = 0; mby < pic->mb_height; mby++) {
        for (int mbx = 0; mbx < pic->mb_width; mbx++) {
            uint32_t cost = 0;
            for (int b = 0; b < 4; b++) {
                const uint8_t *p = pic->plane[0] + (ptrdiff_t)(16 * mby + 8 * (b >> 1)) * stride +
                                   16 * mbx + 8 * (b & 1);
                uint32_t sum = 0;
                for (int y = 0; y < 8; y++)
                    for (int x = 0; x < 8; x++)
                        sum += p[y * stride + x];
                const int mean = (int)(sum >> 6);
                for (int y = 0; y < 8; y++)
                    for (int x = 0; x < 8; x++) {
                        const int d = p[y * stride + x] - mean;
                        cost += (uint32_t)(d < 0 ? -d : d);
                    }
            }
            intra[mby * pic->mb_width + mbx] = cost;
        }
    }
}

uint64_t mpe_bdecide_cost(const GpuMotion *mv, const uint32_t *intra, int n_mb)
{
    uint64_t cost = 0;
    for (int i = 0; i < n_mb; i++)
        cost += mv[i].sad < intra[i] ? mv[i].sad : intra[i];
    return cost;
}

int mpe_bdecide_stop(const uint64_t *c, int m, int tolerance)
{
    /* c[m] / m > (1 + tolerance / 100) c[m-1] / (m-1) */
    return c[m] * (uint64_t)(m - 1) * 100 > c[m - 1] * (uint64_t)m * (uint64_t)(100 + tolerance);
}
