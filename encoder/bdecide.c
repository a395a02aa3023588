/* bdecide.c — adaptive B-picture placement: see bdecide.h. */
#include "bdecide.h"

#include <math.h>
#include <string.h>

void mpe_bdecide_intra_costs(uint32_t *intra, const MpePicture *pic, MpeSad16Fn sad16)
{
    mpe_bdecide_intra_costs_rows(intra, pic, sad16, 0, pic->mb_height);
}

void mpe_bdecide_intra_costs_rows(uint32_t *intra, const MpePicture *pic, MpeSad16Fn sad16,
                                  int row0, int row1)
{
    /* rows read with stride 0: a block of zeros, a block of the mean */
    static const uint8_t zero[16];
    uint8_t flat[16];
    const ptrdiff_t stride = pic->stride[0];

    for (int mby = row0; mby < row1; mby++) {
        for (int mbx = 0; mbx < pic->mb_width; mbx++) {
            const uint8_t *p = pic->plane[0] + (ptrdiff_t)16 * mby * stride + 16 * mbx;
            const uint32_t sum = sad16(p, stride, zero, 0);
            memset(flat, (int)((sum + 128) >> 8), sizeof(flat));
            intra[mby * pic->mb_width + mbx] = sad16(p, stride, flat, 0);
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

double mpe_bdecide_b_ratio(const GpuMotion *fwd, const GpuMotion *bwd, const uint32_t *intra,
                           int n_mb, double pb)
{
    uint64_t sum_intra = 0, cost = 0;
    for (int i = 0; i < n_mb; i++) {
        sum_intra += intra[i];
        cost += mpe_bdecide_b_cost(fwd[i].sad, bwd[i].sad, intra[i]);
    }
    return mpe_bdecide_b_ratio_of(sum_intra, cost, pb);
}

double mpe_bdecide_b_ratio_of(uint64_t sum_intra, uint64_t cost, double pb)
{
    if (!sum_intra)   /* flat picture: nothing to lose either way */
        return pb;
    /* saved * 100 >= sum_intra * FULL: the whole ratio, in integers */
    const uint64_t saved = sum_intra - cost;
    if (saved * 100 >= sum_intra * MPE_BDECIDE_PB_FULL)
        return pb;
    return 1 + (pb - 1) * (double)(saved * 100) / (double)(sum_intra * MPE_BDECIDE_PB_FULL);
}

double mpe_bdecide_retention(const GpuMotion *mv, const uint32_t *intra, int n_mb, int d)
{
    uint64_t sum_intra = 0;
    for (int i = 0; i < n_mb; i++)
        sum_intra += intra[i];
    if (!sum_intra || d < 1)   /* flat picture: nothing to lose, nothing to carry */
        return 1;
    const double kept = 1 - (double)mpe_bdecide_cost(mv, intra, n_mb) / (double)sum_intra;
    return d == 1 ? kept : pow(kept, 1.0 / d);
}

double mpe_bdecide_ip_ratio(double r, double ip)
{
    const double low = MPE_BDECIDE_IP_LOW / 1000.0;
    const double w = r <= low ? 0 : r >= 1 ? 1 : (r - low) / (1 - low);
    return 1 + (ip - 1) * w;
}
