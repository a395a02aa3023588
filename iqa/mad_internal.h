/* mad_internal.h — pieces of MAD shared by its implementations, its unit
 * test and its benchmark; not part of the public API (that is mad.h).
 *
 * Layout conventions: the picture has h rows (M) and w columns (N), stored
 * row-major.  Block statistics live on the stride-4 block grid of SPEC §3.3:
 * origins (4*by, 4*bx) with 4*by <= h-16 and 4*bx <= w-16, so the grid is
 * mad_grid_rows(h) x mad_grid_cols(w), row-major; the original writes each
 * block's value into the 4x4 tile at the block origin. */
#ifndef MPE_MAD_INTERNAL_H
#define MPE_MAD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "iqa/mad.h"

#define MAD_NSCALE 5
#define MAD_NORIENT 4
#define MAD_NSUB (MAD_NSCALE * MAD_NORIENT)
#define MAD_BLOCK 16 /* block size of every local statistic */
#define MAD_STEP 4   /* block grid stride */
#define MAD_CROP_LO 16 /* final crop: rows/cols [16, size-18] are kept (SPEC §3.6) */
#define MAD_CROP_HI 17

static inline int mad_grid_rows(int h) { return (h - MAD_BLOCK) / MAD_STEP + 1; }
static inline int mad_grid_cols(int w) { return (w - MAD_BLOCK) / MAD_STEP + 1; }

/* ---- filters (mad_filters.c) -------------------------------------------- */

/* LUT[v] = 0.02874 * min(v,254)^(2.2/3): the original indexes its LUT with a
 * saturating uint8 v+1, so 255 reads the entry of 254 (SPEC §3.1). */
void mad_lightness_lut(double lut[256]);

/* The CSF of SPEC §3.2 in centred layout, at row r, column c. */
double mad_csf_centred(int r, int c, int w, int h);

/* The CSF on FFTW's r2c half-spectrum (h rows x (w/2+1) columns), made
 * Hermitian: real(IFFT(F.H)) of a real image equals IFFT(F.(H(k)+H(-k))/2),
 * so the filtered image comes out of a c2r transform.  Multiplied by scale
 * (pass 1/(w*h) to fold in the inverse's normalisation). */
void mad_csf_half(double *hs, int w, int h, double scale);

/* Log-Gabor bank of SPEC §4.1 in DFT bin layout (h x w): the filter of
 * subband (s, o) is radial[s] * angular[o] element by element; the radial
 * part is 0 at DC. */
void mad_loggabor_radial(double *g, int s, int w, int h);
void mad_loggabor_angular(double *a, int o, int w, int h);

/* Scale weights of η (SPEC §4.3) and the combination (SPEC §5). */
extern const double mad_scale_weight[MAD_NSCALE];
void mad_combine(MadScore *out, double d_detect, double d_appear);

/* ---- block statistics (mad_stats.c) ------------------------------------- */

/* Streaming moments of every 16x16 block on the grid, from 4x4 cells merged
 * with the pairwise central-moment update (Chan/Pébay), so each pixel is
 * touched once and no raw power sum is ever differenced: no cancellation.
 * Scratch: mad_stats_scratch_size(w) doubles. */
size_t mad_stats_scratch_size(int w);

/* SPEC §4.2: per block sample std (/255), skewness and kurtosis
 * (population, /256; 0 when sigma is exactly 0).  Outputs: grid-sized. */
void mad_stats_appear(double *std, double *skew, double *kurt, const double *img,
                      ptrdiff_t stride, int w, int h, double *scratch);

/* SPEC §3.3: per block the mean and sample std (/255) of the 16x16 block and
 * the sample std (/63) of the 8x8 block at the same origin.  Any output may
 * be NULL. */
void mad_stats_detect(double *mean16, double *sd16, double *sd8, const double *img,
                      ptrdiff_t stride, int w, int h, double *scratch);

/* SPEC §3.3 modified std: min of sd8 at offsets (0,0), (+4,0), (0,+4),
 * (+4,+4) where the original's edge tests allow them. */
void mad_modified_std(double *sd_ref, const double *sd8, int w, int h);

/* The argument checks every implementation's open() makes, with the same
 * messages (mad_common.c): pctx, the size limits, the thread count. */
int mad_check_open(MadContext **pctx, int width, int height, const MadOptions *opt, MpeError *err);
/* ... and set_reference()/score() make on their picture (`have_ctx`: the
 * context pointer was not NULL; `width`: the context's width). */
int mad_check_picture(int have_ctx, int width, const uint8_t *pic, ptrdiff_t stride,
                      const char *what, MpeError *err);
/* ... and score() makes: the picture as above, an output, a reference set. */
int mad_check_score(int have_ctx, int width, int have_ref, const uint8_t *dst, ptrdiff_t stride,
                    const MadScore *out, MpeError *err);

/* ---- map dumps (mad_dump.c) --------------------------------------------- */

/* Writes DIR/NAME_f64.bin (raw little-endian float64, h x w row-major, the
 * format of ../shared/reference/mad/maps) and DIR/NAME.png (linear, 0 black,
 * the map's maximum white). */
int mad_dump_map(const char *dir, const char *name, const double *map, int w, int h,
                 MpeError *err);

/* The four maps of MadOptions.dump_dir from one score's results: visibility
 * and appearance (grids of nbr x nbc blocks, each value filling the 4x4 tile
 * at its block's origin, 0 outside every tile, SPEC §3.3), local MSE (from
 * the 16x16 sums of squared differences) and detection (visibility x local
 * MSE, the SPEC's map.HI).  Shared by mad_cpu and mad_cuda. */
int mad_dump_maps(const char *dir, int w, int h, int nbr, int nbc, const double *msk,
                  const int32_t *lmse_sum, const double *eta, MpeError *err);

/* ---- per-stage timing of mad_cpu (for the benchmark) -------------------- */

/* FFT: transforms, including the subband filter products and |EO|, which
 * are fused into them; FILTER: lightness and gray conversion, spectrum
 * expansion, local-MSE box sums; STATS: block moments, visibility, η,
 * collapse. */
enum { MAD_STAGE_FFT, MAD_STAGE_FILTER, MAD_STAGE_STATS, MAD_NSTAGE };

typedef struct MadTimes {
    double stage[MAD_NSTAGE]; /* seconds summed over worker threads */
    double wall;              /* seconds of the whole call */
    int threads;              /* workers used */
} MadTimes;

/* Times of the last set_reference() and score() of a mad_cpu context. */
void mad_cpu_times(const MadContext *ctx, MadTimes *set_reference, MadTimes *score);

#endif
