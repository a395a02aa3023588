/* bdecide.h — adaptive B-picture placement (--b-adapt 1) from the front
 * end's costs.
 *
 * The model is x264's fast b-adapt (slicetype.c), on the costs this
 * encoder's front end has anyway: every frame after the last anchor a (I
 * or P picture) is searched against a as it comes in, which is the forward
 * search a B picture there needs and the search a P picture there needs.
 * Its cost c[d] (d = its distance from a) is the sum over macroblocks of
 * the smaller of the search's SAD and an intra cost (the sum of absolute
 * deviations from the macroblock's mean luma).
 *
 * What a run of B pictures costs is its anchor's longer prediction: the B
 * pictures predict from both sides, and content that comes into view has
 * to be coded once whichever picture codes it.  Where the motion is
 * followed, c[d] grows at most in proportion to d (new content at a steady
 * rate, on a floor of noise and residual that does not grow); where the
 * prediction over d frames fails (motion beyond the search's reach,
 * deformation, a zoom), c[d] / d grows.  So the run ends at the frame
 * before the first one whose c[d] / d is more than MPE_BDECIDE_TOLERANCE
 * percent above the previous frame's c[d-1] / (d-1).  Measured with make rd
 * against fixed runs of 0..3 B pictures: it picks, clip by clip, the run
 * length that fixed runs do best with (a pan of 60 px per frame 1, slower
 * pans, testsrc2 and a zoom 3).  Integers only: the decision is the same on
 * every backend, thread count and machine. */
#ifndef MPE_BDECIDE_H
#define MPE_BDECIDE_H

#include <stdint.h>

#include "common/picture.h"
#include "dsp/sad.h"
#include "gpu/frontend.h"

/* percent by which c[d] / d may exceed c[d-1] / (d-1) (make rd: 5 and 10
 * pick the same run lengths on 7 of 8 clips; 0 ends pans' runs too soon,
 * 25 a fast pan's too late) */
#define MPE_BDECIDE_TOLERANCE 5

/* Intra cost of each macroblock of pic (mb_width * mb_height, raster
 * order): the sum of |luma sample - the macroblock's mean luma (rounded)|,
 * over the padded plane; two SADs of sad16 (dsp/sad.h, any variant: they
 * are exact) per macroblock. */
void mpe_bdecide_intra_costs(uint32_t *intra, const MpePicture *pic, MpeSad16Fn sad16);
/* The same for macroblock rows row0..row1-1 only (the rows of a picture
 * can be costed on several threads at once). */
void mpe_bdecide_intra_costs_rows(uint32_t *intra, const MpePicture *pic, MpeSad16Fn sad16,
                                  int row0, int row1);

/* The P cost of a picture: sum over macroblocks of min(mv[i].sad, intra[i]). */
uint64_t mpe_bdecide_cost(const GpuMotion *mv, const uint32_t *intra, int n_mb);

/* c[1..m], m >= 2: the costs of the frames after the last anchor, each
 * predicted from it.  1: frame a+m would end the run (the P goes at a+m-1,
 * and a+m starts the next run); 0: it may join it. */
int mpe_bdecide_stop(const uint64_t *c, int m, int tolerance);

/* percent of a B picture's intra cost its references' prediction must save
 * for the whole --pb-ratio (mpe_bdecide_b_ratio) */
#define MPE_BDECIDE_PB_FULL 50

/* Constant quantiser: the factor on the P quantiser for a B picture, from
 * --pb-ratio pb.  A B picture takes a coarser quantiser than its anchors
 * because its anchors' quality carries into it through the prediction,
 * and its own carries nowhere; where the prediction saves little (grain,
 * noise that changes every frame: the anchors' quality does not carry),
 * the coarser quantiser only loses quality at the rate its bits would have
 * bought it anywhere.  With s = 1 - sum min(fwd, bwd, intra) / sum intra
 * over the macroblocks (the share the better search saves), the factor is
 * 1 + (pb - 1) min(1, s / (MPE_BDECIDE_PB_FULL / 100)).  make rd: s is
 * 0.78..0.97 on every clip but the grainy one (0.02..0.04), where the full
 * ratio lost 3.6 points of BD-rate (PSNR-Y).  Integer costs, so the same
 * on every backend and thread count. */
double mpe_bdecide_b_ratio(const GpuMotion *fwd, const GpuMotion *bwd, const uint32_t *intra,
                           int n_mb, double pb);

/* The same from the sums over the macroblocks, of intra[i] and of
 * mpe_bdecide_b_cost (for a caller that reads the vectors anyway). */
double mpe_bdecide_b_ratio_of(uint64_t sum_intra, uint64_t cost, double pb);

/* One macroblock's term of mpe_bdecide_b_ratio's cost: min(fwd, bwd, intra). */
static inline uint32_t mpe_bdecide_b_cost(uint32_t fwd_sad, uint32_t bwd_sad, uint32_t intra)
{
    const uint32_t c = fwd_sad < intra ? fwd_sad : intra;
    return bwd_sad < c ? bwd_sad : c;
}

/* --ip-ratio auto's largest ratio, for a still */
#define MPE_IP_RATIO_AUTO 2.0

/* Per-frame retention below which an I picture takes --q (mpe_bdecide_ip_ratio),
 * in per mille */
#define MPE_BDECIDE_IP_LOW 930

/* A P picture's retention: the share of its intra cost its search saves
 * against its reference d frames back (mpe_bdecide_cost), per frame of
 * distance: (1 - cost / intra)^(1/d), 0..1.  1: nothing new comes into
 * view (a still), 0: nothing carries (grain that changes every frame). */
double mpe_bdecide_retention(const GpuMotion *mv, const uint32_t *intra, int n_mb, int d);

/* Constant quantiser: the factor by which an I picture's quantiser is finer
 * than --q, from --ip-ratio ip and the mean retention r of the P pictures
 * of the GOP before it (a picture-level MB-tree without a look-ahead: the
 * share of the I picture that the GOP's pictures go on predicting from is
 * what its finer quantiser buys quality for).  1 + (ip - 1) w with
 * w = (r - MPE_BDECIDE_IP_LOW / 1000) / (1 - MPE_BDECIDE_IP_LOW / 1000) in
 * 0..1.  make rd's clips, BD-rate over 36.5..48.5 dB against a fixed
 * --ip-ratio 1 / 2: the still pan0 (r 1.00) -9.1 / -15.4 %, pan8 (0.98)
 * -33.6 / -35.4, testsrc2 (0.96) -16.1 / -16.0, pan25 (0.92) -22.1 / -17.7,
 * pan60 (0.81) -30.9 / -25.2, grain (0.0) -14.4 / -13.1. */
double mpe_bdecide_ip_ratio(double r, double ip);

#endif
