/* test_aq.c — adaptive quantisation's factor maps (encoder/aq.h) on
 * synthetic pictures: flat areas get finer quantisers than textured ones
 * in both modes, the factors are centred (geometric mean 1), MAD's
 * threshold follows SPEC §3.4, and the mad mode reads MAD's masking (a
 * macroblock half flat, half textured counts as visible, where variance
 * calls it busy; too dark to be seen counts as masked). */
#include <math.h>
#include <string.h>

#include "common/picture.h"
#include "encoder/aq.h"
#include "iqa/mad.h"
#include "tests/test.h"

#define MBW 8
#define MBH 4

/* Studio-range luma: columns below split flat (mid grey), the rest noise
 * of +-amp around it (xorshift, fixed seed). */
static void fill(MpePicture *pic, int split, int amp, int level)
{
    TestRng r = { 0x9E3779B97F4A7C15ULL };
    for (int y = 0; y < pic->plane_h[0]; y++)
        for (int x = 0; x < pic->plane_w[0]; x++) {
            int v = level;
            if (x >= split)
                v += (int)(test_rand(&r) % (unsigned)(2 * amp + 1)) - amp;
            pic->plane[0][(ptrdiff_t)y * pic->stride[0] + x] = (uint8_t)(v < 16 ? 16 : v > 235 ? 235 : v);
        }
}

static int plan(TestCtx *t, MpeAqMode mode, const MpePicture *pic, double *f)
{
    MpeAq *aq = NULL;
    MpeError err = { 0 };
    int ret = mpe_aq_open(&aq, mode, 1.0, MBW, MBH, &err);
    if (ret == 0)
        ret = mpe_aq_plan(aq, pic, f, &err);
    CHECK(t, ret == 0, "mode %d: %s", (int)mode, err.msg);
    mpe_aq_close(aq);
    return ret;
}

/* Both modes' factors of fill(split, 40, 128) with the top dark_rows
 * rows black; 0 when both planned. */
static int plan_both(TestCtx *t, int split, int dark_rows, double *fv, double *fm)
{
    MpePicture pic;
    int ret;
    if (mpe_picture_alloc(&pic, 16 * MBW, 16 * MBH) < 0) {
        CHECK(t, 0, "picture alloc");
        return -1;
    }
    fill(&pic, split, 40, 128);
    for (int y = 0; y < dark_rows; y++)
        memset(pic.plane[0] + (ptrdiff_t)y * pic.stride[0], 16, (size_t)pic.plane_w[0]);
    ret = plan(t, MPE_AQ_VARIANCE, &pic, fv);
    if (ret == 0)
        ret = plan(t, MPE_AQ_MAD, &pic, fm);
    mpe_picture_free(&pic);
    return ret;
}

static double log_mean(const double *f, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += log2(f[i]);
    return s / n;
}

/* left half flat, right half textured: every flat macroblock finer than
 * 1, every textured one coarser, centred */
static void t_flat_vs_texture(TestCtx *t)
{
    double f[2][MBW * MBH];
    if (plan_both(t, 16 * MBW / 2, 0, f[0], f[1]) < 0)
        return;
    for (int mode = 0; mode < 2; mode++) {
        for (int i = 0; i < MBW * MBH; i++) {
            const int textured = i % MBW >= MBW / 2;
            CHECK(t, textured ? f[mode][i] > 1.2 : f[mode][i] < 1 / 1.2,
                  "%s mb %d (%s): factor %.3f", mode ? "mad" : "variance", i,
                  textured ? "textured" : "flat", f[mode][i]);
        }
        /* mad's exponents are rounded to 1/64 octave */
        CHECK(t, fabs(log_mean(f[mode], MBW * MBH)) < 1.0 / 64, "%s: log2 mean %.4f",
              mode ? "mad" : "variance", log_mean(f[mode], MBW * MBH));
    }
}

/* the split runs through the middle of macroblock column 3: variance
 * sees its texture, MAD's modified std (the least busy 8x8 block near
 * each point) sees the flat half next to it, so that macroblock is finer
 * under mad than under variance */
static void t_edge_macroblock(TestCtx *t)
{
    double fv[MBW * MBH], fm[MBW * MBH];
    if (plan_both(t, 16 * 3 + 8, 0, fv, fm) < 0)
        return;
    for (int my = 0; my < MBH; my++) {
        const int i = my * MBW + 3;
        CHECK(t, fv[i] > 1, "variance mb %d: %.3f", i, fv[i]);
        CHECK(t, fm[i] < fv[i] && fm[i] < fm[i + 1],
              "mad mb %d: %.3f (variance %.3f, textured neighbour %.3f)", i, fm[i], fv[i],
              fm[i + 1]);
    }
}

/* a black strip MAD cannot see (its lightness mean is under 0.5) takes
 * the coarsest factor of the picture under mad, the finest under variance:
 * two macroblock rows of it, so that the first row's blocks see black only
 * (the CSF's low-pass reaches little past a block) */
static void t_dark_is_masked(TestCtx *t)
{
    double fv[MBW * MBH], fm[MBW * MBH], top = 0;
    if (plan_both(t, 16 * MBW / 2, 32, fv, fm) < 0)
        return;
    for (int i = 2 * MBW; i < MBW * MBH; i++)
        top = fmax(top, fm[i]);
    for (int i = 0; i < MBW; i++) {
        CHECK(t, fm[i] >= top, "mad dark mb %d: %.3f below the picture's top %.3f", i, fm[i], top);
        CHECK(t, fv[i] < 1, "variance dark mb %d: %.3f", i, fv[i]);
    }
}

static void t_threshold(TestCtx *t)
{
    CHECK(t, isinf(mad_mask_threshold(0.49, 1.0)), "below the luminance threshold");
    CHECK(t, fabs(mad_mask_threshold(1.0, 0.0) - -5.0) < 1e-12, "flat: ln(mu) - 5, got %g",
          mad_mask_threshold(1.0, 0.0));
    CHECK(t, fabs(mad_mask_threshold(1.0, 0.1) - log(0.1)) < 1e-12, "contrast above e^-5");
    CHECK(t, fabs(mad_mask_threshold(2.0, 0.001) - (log(2.0) - 5)) < 1e-12, "contrast below e^-5");
}

static void t_too_small(TestCtx *t)
{
    MpeAq *aq = NULL;
    MpeError err = { 0 };
    CHECK(t, mpe_aq_open(&aq, MPE_AQ_MAD, 1.0, 2, 2, &err) < 0 && !aq, "32x32 accepted");
    CHECK(t, strstr(err.msg, "--aq-mode mad") != NULL, "message: %s", err.msg);
}

int main(void)
{
    TestCtx t;
    test_init(&t, "test_aq");
    test_run(&t, "flat_finer_than_texture", t_flat_vs_texture);
    test_run(&t, "edge_macroblock_visible_under_mad", t_edge_macroblock);
    test_run(&t, "dark_is_masked_under_mad", t_dark_is_masked);
    test_run(&t, "mad_threshold", t_threshold);
    test_run(&t, "mad_needs_34x34", t_too_small);
    return test_finish(&t);
}
