/* test_slice.c — the slice coder's half-pel vector choice (encoder/slice.c
 * choose_vector) as the coder runs it against its reference, each candidate
 * measured on its own with pred_sad (mpe_slice_choose_vector's one_by_one):
 * the same vector, SAD and cost on random pictures, vectors, predictors,
 * f_codes and quantisers, under every subset of this CPU's flags.  The
 * pictures are few-valued (many equal SADs, so the tie-break decides) or
 * noise, the front end's vectors anywhere in the plane (the nine near its
 * edges too), the predictors inside and outside the f_code range.  A SAD
 * the coder reports at a named vector (out_sad_at) must be that vector's
 * pred_sad whenever it reports one, and must be reported wherever the
 * reference reports it. */
#include <stdint.h>
#include <string.h>

#include "bitstream/bitwriter.h"
#include "bitstream/mpeg12.h"
#include "common/cpu.h"
#include "dsp/dsp.h"
#include "dsp/quant.h"
#include "dsp/sad.h"
#include "encoder/slice.h"
#include "tests/test.h"

static int rand_range(TestRng *r, int lo, int hi)
{
    return lo + (int)(test_rand(r) % (unsigned)(hi - lo + 1));
}

static void fill(TestRng *r, MpePicture *pic, int levels)
{
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < pic->stride[c] * pic->plane_h[c]; i++)
            pic->plane[c][i] = (uint8_t)(levels ? 100 + 3 * rand_range(r, 0, levels - 1) : (int)(test_rand(r) & 255));
}

static void t_choose_vector(TestCtx *t)
{
    TestRng r = { 0xC405E5EULL };
    const unsigned all = mpe_cpu_flags();
    int checked = 0;
    for (int iter = 0; iter < 48 && !t->case_failed; iter++) {
        const unsigned flags = iter % 3 == 0 ? 0 : iter % 3 == 1 ? all : all & test_rand(&r);
        MpeDsp dsp;
        MpeSadDsp sad;
        mpe_dsp_init(&dsp, flags);
        mpe_sad_dsp_init(&sad, flags);
        const int w = rand_range(&r, 16, 120), h = rand_range(&r, 16, 90);
        MpePicture orig, ref;
        if (mpe_picture_alloc(&orig, w, h) < 0) {
            CHECK(t, 0, "out of memory");
            return;
        }
        if (mpe_picture_alloc(&ref, w, h) < 0) {
            mpe_picture_free(&orig);
            CHECK(t, 0, "out of memory");
            return;
        }
        const int levels = iter % 4 == 3 ? 0 : rand_range(&r, 1, 3);
        fill(&r, &orig, levels);
        fill(&r, &ref, levels);
        const MpePictureCtx pc = { .qscale = rand_range(&r, 1, 31),
                                   .f_code = rand_range(&r, 1, 4),
                                   .f_code_bwd = rand_range(&r, 1, 4),
                                   .orig = &orig,
                                   .ref = &ref,
                                   .ref_bwd = &ref,
                                   .dsp = &dsp,
                                   .sad16 = sad.sad16 };
        for (int k = 0; k < 400 && !t->case_failed; k++) {
            const int mbx = rand_range(&r, 0, orig.mb_width - 1), mby = rand_range(&r, 0, orig.mb_height - 1);
            const int dir = k & 1, f = 1 << ((dir ? pc.f_code_bwd : pc.f_code) - 1);
            /* a full-pel vector whose block lies inside the plane */
            const GpuMotion m = { .dx = (int16_t)rand_range(&r, -16 * mbx, ref.plane_w[0] - 16 - 16 * mbx),
                                  .dy = (int16_t)rand_range(&r, -16 * mby, ref.plane_h[0] - 16 - 16 * mby) };
            int pmv[2];
            for (int d = 0; d < 2; d++) {
                const int near = 2 * (d ? m.dy : m.dx) + rand_range(&r, -3, 3);
                /* a predictor is a vector sent: inside the f_code range */
                pmv[d] = k % 5 == 0 ? rand_range(&r, -16 * f, 16 * f - 1)
                                    : near < -16 * f ? -16 * f : near > 16 * f - 1 ? 16 * f - 1 : near;
            }
            /* the vector asked about: zero, the predictor, or one of the nine */
            int at[2] = { 0, 0 };
            if (k % 3 == 1) {
                at[0] = pmv[0];
                at[1] = pmv[1];
            } else if (k % 3 == 2) {
                at[0] = 2 * m.dx + rand_range(&r, -1, 1);
                at[1] = 2 * m.dy + rand_range(&r, -1, 1);
            }
            int v[2], vr[2];
            uint32_t cost, cost_r, at_sad, at_sad_r;
            const uint32_t s = mpe_slice_choose_vector(&pc, pmv, dir, mbx, mby, &m, v, &cost, at, &at_sad, 0);
            const uint32_t sr = mpe_slice_choose_vector(&pc, pmv, dir, mbx, mby, &m, vr, &cost_r, at, &at_sad_r, 1);
            CHECK(t, s == sr && cost == cost_r && v[0] == vr[0] && v[1] == vr[1],
                  "iter %d mb (%d,%d) dir %d m (%d,%d) pmv (%d,%d) q %d: (%d,%d) sad %u cost %u, "
                  "reference (%d,%d) sad %u cost %u",
                  iter, mbx, mby, dir, m.dx, m.dy, pmv[0], pmv[1], pc.qscale, v[0], v[1], s, cost, vr[0],
                  vr[1], sr, cost_r);
            if (at_sad != UINT32_MAX) {
                const uint32_t truth = dsp.pred_sad(orig.plane[0] + 16 * mby * orig.stride[0] + 16 * mbx,
                                                    orig.stride[0], ref.plane[0], ref.stride[0],
                                                    32 * mbx + at[0], 32 * mby + at[1]);
                CHECK(t, at_sad == truth, "iter %d: SAD at (%d,%d) reported %u, is %u", iter, at[0], at[1],
                      at_sad, truth);
            }
            CHECK(t, at_sad_r == UINT32_MAX || at_sad == at_sad_r,
                  "iter %d: SAD at (%d,%d) %u, reference %u", iter, at[0], at[1], at_sad, at_sad_r);
            checked++;
        }
        mpe_picture_free(&orig);
        mpe_picture_free(&ref);
    }
    CHECK(t, checked > 10000, "only %d choices checked", checked);
}

/* A smooth picture with noise: flat, textured and in-between blocks, so
 * every path of the coders runs (skips, intra, all-zero and coded blocks). */
static void fill_scene(TestRng *r, MpePicture *pic, int shift)
{
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < pic->plane_h[c]; y++)
            for (int x = 0; x < pic->plane_w[c]; x++) {
                const int base = 60 + ((x + shift) * 3 + y * 2) % 120;
                const int noise = (x / 16 + y / 16) % 3 == 0 ? rand_range(r, -40, 40) : rand_range(r, -2, 2);
                const int v = base + noise;
                pic->plane[c][(ptrdiff_t)y * pic->stride[c] + x] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
}

/* A coding with bits_only (the rate control's partial codings, never kept)
 * spends exactly the bits of the same coding with its reconstruction, makes
 * the same choices, and leaves the reconstruction untouched. */
static void t_bits_only(TestCtx *t)
{
    TestRng r = { 0xB175011ULL };
    MpeDsp dsp;
    MpeSadDsp sad;
    mpe_dsp_init(&dsp, mpe_cpu_flags());
    mpe_sad_dsp_init(&sad, mpe_cpu_flags());
    const int w = 96, h = 64, mbs = (w / 16) * (h / 16);
    MpePicture orig, ref, ref_bwd, rec[2];
    MpePicture *pics[] = { &orig, &ref, &ref_bwd, &rec[0], &rec[1] };
    GpuMotion mv[2][24];
    uint8_t refresh[24], coding[2][24];
    BsWriter bw[2];
    int n = 0, ok = 1;
    for (; n < 5 && ok; n++)
        ok = mpe_picture_alloc(pics[n], w, h) == 0;
    if (!ok || bs_writer_init(&bw[0], 1 << 16) < 0 || bs_writer_init(&bw[1], 1 << 16) < 0) {
        CHECK(t, 0, "out of memory");
        goto done;
    }
    int checked = 0;
    for (int iter = 0; iter < 60 && !t->case_failed; iter++) {
        const int type = iter % 3 == 0 ? BS_PICTURE_I : iter % 3 == 1 ? BS_PICTURE_P : BS_PICTURE_B;
        const int q = rand_range(&r, 1, 31);
        MpeQuantizer quant;
        mpe_quantizer_init(&quant, q, mpe_default_intra_matrix, mpe_default_inter_matrix, 2047);
        fill_scene(&r, &orig, 0);
        fill_scene(&r, &ref, rand_range(&r, 0, 3));
        fill_scene(&r, &ref_bwd, rand_range(&r, 0, 3));
        for (int d = 0; d < 2; d++)
            for (int i = 0; i < mbs; i++) {
                const int mbx = i % (w / 16), mby = i / (w / 16);
                mv[d][i] = (GpuMotion){ .dx = (int16_t)rand_range(&r, -16 * mbx, w - 16 - 16 * mbx) / (iter % 2 + 1),
                                        .dy = (int16_t)rand_range(&r, -16 * mby, h - 16 - 16 * mby) / (iter % 2 + 1),
                                        .sad = 1000, .sad0 = 2000 };
            }
        for (int i = 0; i < mbs; i++)
            refresh[i] = (uint8_t)rand_range(&r, 0, 200);
        MpeSliceStats st[2];
        uint8_t canary = (uint8_t)rand_range(&r, 0, 255);
        for (int k = 0; k < 2; k++) {
            for (int c = 0; c < 3; c++)
                memset(rec[k].plane[c], canary, (size_t)rec[k].stride[c] * rec[k].plane_h[c]);
            memset(&st[k], 0, sizeof(st[k]));
            memset(coding[k], 0xEE, sizeof(coding[k]));
            bs_writer_reset(&bw[k]);
            const MpePictureCtx pc = {
                .mpeg2 = iter % 4 != 3, .coding_type = type, .qscale = q, .qscale_code = q,
                .f_code = 3, .f_code_bwd = 3, .orig = &orig, .ref = &ref, .ref_bwd = &ref_bwd,
                .recon = &rec[k], .bits_only = k, .mv = mv[0], .mv_bwd = mv[1], .dsp = &dsp,
                .sad16 = sad.sad16, .quant = &quant, .scan = iter % 5 == 4 ? mpe_alternate_scan : mpe_zigzag,
                .intra_vlc_table = iter % 2 ? BS_DCT_TABLE_ONE : BS_DCT_TABLE_ZERO,
                .count_intra_tables = iter % 7 == 0, .trellis_c = iter % 2 ? 0 : 1500,
                .refresh_count = refresh, .mb_coding = coding[k],
            };
            mpe_code_slice(&pc, 0, h / 16, &bw[k], &st[k]);
            bs_flush(&bw[k]);
        }
        CHECK(t, bw[0].pos == bw[1].pos && memcmp(bw[0].buf, bw[1].buf, bw[0].pos) == 0,
              "iter %d type %d q %d: %zu bytes coded, %zu with bits_only (or their bytes differ)", iter,
              type, q, bw[0].pos, bw[1].pos);
        CHECK(t, memcmp(&st[0], &st[1], sizeof(st[0])) == 0 && memcmp(coding[0], coding[1], sizeof(coding[0])) == 0,
              "iter %d: the stats or macroblock codings differ with bits_only", iter);
        int untouched = 1, written = 0;
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < rec[1].plane_h[c]; y++)
                for (int x = 0; x < rec[1].plane_w[c]; x++) {
                    untouched &= rec[1].plane[c][(ptrdiff_t)y * rec[1].stride[c] + x] == canary;
                    written |= rec[0].plane[c][(ptrdiff_t)y * rec[0].stride[c] + x] != canary;
                }
        CHECK(t, untouched, "iter %d: bits_only wrote the reconstruction", iter);
        CHECK(t, written, "iter %d: the coding with reconstruction wrote none", iter);
        checked++;
    }
    CHECK(t, checked == 60, "only %d codings compared", checked);
done:
    for (int i = 0; i < n; i++)
        mpe_picture_free(pics[i]);
    bs_writer_free(&bw[0]);
    bs_writer_free(&bw[1]);
}

int main(void)
{
    TestCtx t;
    test_init(&t, "test_slice");
    test_run(&t, "choose_vector_vs_one_by_one", t_choose_vector);
    test_run(&t, "bits_only_same_bits", t_bits_only);
    return test_finish(&t);
}
