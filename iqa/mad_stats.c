/* mad_stats.c — local statistics of MAD on the stride-4 grid of 16x16
 * blocks (SPEC §3.3 and §4.2), without a 256-pixel loop per block.
 *
 * Blocks start every 4 pixels, so every block is an exact union of 4x4
 * "cells".  Each cell's mean and central sums of d^2, d^3, d^4 are computed
 * two-pass from its 16 pixels; cells are then merged pairwise with the exact
 * update for central moments of a union (Chan et al. 1979, Pébay 2008),
 * first 2 cells, then 4 across, then 2 and 4 rows down.  Unlike running sums
 * of x, x^2, x^3, x^4 this never subtracts large raw power sums, so nearly
 * flat blocks of large values (the coarse log-Gabor subbands) keep their
 * precision; unlike per-block loops it costs O(1) per pixel.  The picture is
 * streamed one cell row (4 pixel rows) at a time, so the scratch is a few
 * rows of cells. */
#include "iqa/mad_internal.h"
#include "iqa/mad_math.h"

#include <math.h>
#include <string.h>

typedef MadMom Mom;
#define mom_merge mad_mom_merge

/* Moments of the 4x4 cells of pixel rows 4*ci .. 4*ci+3, columns 0..4*ncc-1. */
static void cells_row(Mom *cell, const double *row0, ptrdiff_t stride, int ncc)
{
    for (int j = 0; j < ncc; j++) {
        const double *p = row0 + 4 * j;
        double sum = 0.0;
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 4; x++)
                sum += p[y * stride + x];
        double m = sum * (1.0 / 16.0);
        double s2 = 0.0, s3 = 0.0, s4 = 0.0;
        for (int y = 0; y < 4; y++) {
            for (int x = 0; x < 4; x++) {
                double d = p[y * stride + x] - m, dd = d * d;
                s2 += dd;
                s3 += dd * d;
                s4 += dd * dd;
            }
        }
        cell[j] = (Mom){ m, s2, s3, s4 };
    }
}

/* Scratch layout, in Mom units: cells (ncc), horizontal pairs (ncc-1), a ring
 * of 4 rows of 4-cell-wide aggregates (4*nbc), a ring of 2 rows of pairs for
 * the 8x8 blocks (2*nbc). */
size_t mad_stats_scratch_size(int w)
{
    size_t nbc = (size_t)mad_grid_cols(w), ncc = nbc + 3;
    return (ncc + (ncc - 1) + 4 * nbc + 2 * nbc) * (sizeof(Mom) / sizeof(double));
}

typedef struct StatsOut {
    double *std, *skew, *kurt;  /* appearance */
    double *mean16, *sd16, *sd8; /* detection */
} StatsOut;

static void stats_run(const StatsOut *out, const double *img, ptrdiff_t stride, int w, int h,
                      double *scratch)
{
    int nbr = mad_grid_rows(h), nbc = mad_grid_cols(w);
    int ncr = nbr + 3, ncc = nbc + 3;
    Mom *cell = (Mom *)scratch;
    Mom *pair = cell + ncc;
    Mom *quad = pair + (ncc - 1);   /* ring: quad[(ci % 4) * nbc + bx] */
    Mom *pair8 = quad + 4 * nbc;    /* ring: pair8[(ci % 2) * nbc + bx] */

    for (int ci = 0; ci < ncr; ci++) {
        cells_row(cell, img + (ptrdiff_t)4 * ci * stride, stride, ncc);
        for (int j = 0; j < ncc - 1; j++)
            pair[j] = mom_merge(cell[j], cell[j + 1], 16.0);
        Mom *q = quad + (ci % 4) * nbc;
        for (int j = 0; j < nbc; j++)
            q[j] = mom_merge(pair[j], pair[j + 2], 32.0);

        if (out->sd8) {
            Mom *p8 = pair8 + (ci % 2) * nbc;
            memcpy(p8, pair, (size_t)nbc * sizeof(*p8));
            int by = ci - 1; /* 8x8 blocks whose last cell row is ci */
            if (by >= 0 && by < nbr) {
                const Mom *p8a = pair8 + (by % 2) * nbc;
                double *sd8 = out->sd8 + (size_t)by * nbc;
                for (int j = 0; j < nbc; j++)
                    sd8[j] = sqrt(mom_merge(p8a[j], p8[j], 32.0).s2 / 63.0);
            }
        }

        int by = ci - 3; /* 16x16 blocks whose last cell row is ci */
        if (by < 0)
            continue;
        const Mom *q0 = quad + (by % 4) * nbc, *q1 = quad + ((by + 1) % 4) * nbc;
        const Mom *q2 = quad + ((by + 2) % 4) * nbc, *q3 = quad + ((by + 3) % 4) * nbc;
        size_t o = (size_t)by * nbc;
        for (int j = 0; j < nbc; j++) {
            Mom b = mom_merge(mom_merge(q0[j], q1[j], 64.0), mom_merge(q2[j], q3[j], 64.0), 128.0);
            if (out->mean16)
                out->mean16[o + j] = b.m;
            if (out->sd16)
                out->sd16[o + j] = sqrt(b.s2 / 255.0);
            if (out->std) {
                double sigma = sqrt(b.s2 / 256.0);
                out->std[o + j] = sqrt(b.s2 / 255.0);
                if (sigma == 0.0) {
                    out->skew[o + j] = 0.0;
                    out->kurt[o + j] = 0.0;
                } else {
                    out->skew[o + j] = (b.s3 / 256.0) / (sigma * sigma * sigma);
                    out->kurt[o + j] = (b.s4 / 256.0) / (sigma * sigma * sigma * sigma);
                }
            }
        }
    }
}

void mad_stats_appear(double *std, double *skew, double *kurt, const double *img,
                      ptrdiff_t stride, int w, int h, double *scratch)
{
    StatsOut out = { .std = std, .skew = skew, .kurt = kurt };
    stats_run(&out, img, stride, w, h, scratch);
}

void mad_stats_detect(double *mean16, double *sd16, double *sd8, const double *img,
                      ptrdiff_t stride, int w, int h, double *scratch)
{
    StatsOut out = { .mean16 = mean16, .sd16 = sd16, .sd8 = sd8 };
    stats_run(&out, img, stride, w, h, scratch);
}

void mad_modified_std(double *sd_ref, const double *sd8, int w, int h)
{
    int nbr = mad_grid_rows(h), nbc = mad_grid_cols(w);
    for (int by = 0; by < nbr; by++) {
        /* the original steps 5 pixels into its tile-expanded 8x8 map and
         * tests r0+5 < M-15: a neighbour origin of exactly M-16 is dropped */
        int down = 4 * by + 5 < h - 15;
        for (int bx = 0; bx < nbc; bx++) {
            int right = 4 * bx + 5 < w - 15;
            const double *p = sd8 + (size_t)by * nbc + bx;
            double v = p[0];
            if (down && p[nbc] < v)
                v = p[nbc];
            if (right && p[1] < v)
                v = p[1];
            if (down && right && p[nbc + 1] < v)
                v = p[nbc + 1];
            sd_ref[(size_t)by * nbc + bx] = v;
        }
    }
}
