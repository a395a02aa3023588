/* bliinds_internal.h — BLIINDS-II pieces shared by the implementations
 * (cpu, cuda) and exposed to the unit tests and the benchmark.  Not part of
 * the module's public interface: callers outside iqa/ use iqa/bliinds.h.
 * Section numbers refer to ../shared/reference/bliinds/SPEC.md. */
#ifndef MPE_BLIINDS_INTERNAL_H
#define MPE_BLIINDS_INTERNAL_H

#include <stddef.h>

#include "iqa/bliinds.h"

/* ---- trained model (bliinds_model.c) ---------------------------------- */

#define BLIINDS_MODEL_DIM 25   /* 24 features + DMOS */

extern const double bliinds_model_b;
extern const double bliinds_model_gama;
extern const double bliinds_model_mu[BLIINDS_MODEL_DIM];
extern const double bliinds_model_sigma_inv[BLIINDS_MODEL_DIM][BLIINDS_MODEL_DIM];

/* ---- generalised-Gaussian shape lookup (§5.2) ------------------------- */

#define BLIINDS_GAMMA_TABLE_SIZE 9971
#define BLIINDS_GAMMA_NONE 11.0   /* the original's answer outside the table */

/* Shape g_k = 0.03 + 0.001 k of table entry k. */
static inline double bliinds_gamma_shape(int k)
{
    return 0.03 + k * 0.001;
}

/* r_k = G(1/g_k) G(3/g_k) / G(2/g_k)^2, strictly decreasing in k. */
void bliinds_gamma_table_init(double ratio[BLIINDS_GAMMA_TABLE_SIZE]);

/* gamma for the ratio rho = var / (mean abs deviation^2 + 1e-7): g_k for the
 * first k with r_{k+1} < rho <= r_k, else 11.  The binary search is what
 * the implementations use; _linear is the original's scan, its reference. */
double bliinds_gamma_lookup(const double ratio[BLIINDS_GAMMA_TABLE_SIZE], double rho);
double bliinds_gamma_lookup_linear(const double ratio[BLIINDS_GAMMA_TABLE_SIZE], double rho);

/* ---- pooling (§6) ------------------------------------------------------ */

/* k = ceil(n / 10): how many blocks the "10 %" features average. */
static inline size_t bliinds_pool_count(size_t n)
{
    return (n + 9) / 10;
}

/* Mean of the k largest of x[0..n) (the k smallest if lowest != 0), by
 * selection in scratch (n doubles, overwritten); 1 <= k <= n.  _sort is the
 * original's way, a full sort, kept as the reference. */
double bliinds_pool_top(double *scratch, const double *x, size_t n, size_t k, int lowest);
double bliinds_pool_top_sort(double *scratch, const double *x, size_t n, size_t k, int lowest);

/* ---- the C implementation's internals, for tests and the benchmark ---- */

enum {
    BLIINDS_MAP_ZETA,
    BLIINDS_MAP_GAMMA,
    BLIINDS_MAP_SUBBAND,
    BLIINDS_MAP_ORIENTVAR,
    BLIINDS_MAP_ORI1,   /* zeta of orientation region A (§5.4) */
    BLIINDS_MAP_ORI2,   /* region B */
    BLIINDS_MAP_ORI3,   /* region C */
    BLIINDS_NMAPS
};

/* File-name stems of the maps, as in the reference's blockmaps/. */
extern const char *const bliinds_map_names[BLIINDS_NMAPS];

/* One scale of the last score() on a bliinds_cpu context. */
typedef struct BliindsMaps {
    int width, height;        /* the scale image */
    const double *image;      /* its samples, row r at image + r * image_stride */
    ptrdiff_t image_stride;
    int rows, cols;           /* blocks: ceil(height / 3) x ceil(width / 3) */
    const double *map[BLIINDS_NMAPS];   /* rows x cols each, row-major */
} BliindsMaps;

/* scale 0, 1, 2 (SPEC's L1..L3).  -EINVAL for another scale. */
int bliinds_cpu_maps(const BliindsContext *ctx, int scale, BliindsMaps *maps);

/* Writes one scale's image and maps as DIR/L<scale+1>_<name>.csv (%.17g),
 * the dump of BliindsOptions.dump_dir; shared by bliinds_cpu and bliinds_cuda. */
int bliinds_dump_scale(const char *dir, int scale, const BliindsMaps *maps, MpeError *err);

/* Wall time of each stage of the last score(), in milliseconds. */
typedef struct BliindsStageTimes {
    double load_ms;           /* 8-bit image into the padded scale-1 buffer */
    double blocks_ms[3];      /* DCT + block parameters, per scale */
    double downsample_ms[2];  /* filter + decimate into scales 2 and 3 */
    double pool_ms;           /* 24 means and top-10 % selections */
    double predict_ms;
} BliindsStageTimes;

void bliinds_cpu_stage_times(const BliindsContext *ctx, BliindsStageTimes *times);

#endif
