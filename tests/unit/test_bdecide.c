/* test_bdecide: the adaptive B-picture decision's pieces (encoder/bdecide.h):
 * where a run of B pictures ends for cost sequences of known shape, the B
 * and I quantiser factors for predictions of known gain, and the intra costs, which must be the same with every sad16 variant (the
 * decision, and so the stream, must not depend on the CPU). */
#include <stdlib.h>
#include <string.h>

#include "common/cpu.h"
#include "encoder/bdecide.h"
#include "tests/test.h"

/* the first m at which the run of c[1..] stops, 0: never up to n */
static int stop_at(const uint64_t *c, int n)
{
    for (int m = 2; m <= n; m++)
        if (mpe_bdecide_stop(c, m, MPE_BDECIDE_TOLERANCE))
            return m;
    return 0;
}

static void test_stop(TestCtx *t)
{
    /* c[0] unused: costs by distance from the anchor */
    const uint64_t still[] = { 0, 1000, 1010, 990, 1005 };        /* noise floor */
    const uint64_t pan[] = { 0, 1000, 2000, 3000, 4000 };         /* new content, steady */
    const uint64_t lost[] = { 0, 1000, 2000, 9000, 12000 };       /* beyond the reach at 3 */
    const uint64_t zoom[] = { 0, 1000, 2200, 3000, 4000 };        /* 10 % more per frame at 2 */
    CHECK(t, stop_at(still, 4) == 0, "a still run stops at %d", stop_at(still, 4));
    CHECK(t, stop_at(pan, 4) == 0, "a steady pan stops at %d", stop_at(pan, 4));
    CHECK(t, stop_at(lost, 4) == 3, "a pan beyond the reach stops at %d, not 3", stop_at(lost, 4));
    CHECK(t, stop_at(zoom, 4) == 2, "a cost 10 %% above proportion stops at %d, not 2", stop_at(zoom, 4));
    /* the tolerance: 5 % above proportion still joins */
    const uint64_t edge[] = { 0, 1000, 2100 };
    CHECK(t, !mpe_bdecide_stop(edge, 2, 5) && mpe_bdecide_stop(edge, 2, 4), "tolerance edge");
}

static void test_b_ratio(TestCtx *t)
{
    enum { N = 4 };
    const uint32_t intra[N] = { 1000, 1000, 1000, 1000 };
    GpuMotion fwd[N], bwd[N];
    memset(fwd, 0, sizeof(fwd));
    memset(bwd, 0, sizeof(bwd));
    /* the better direction, macroblock by macroblock, saves everything */
    for (int i = 0; i < N; i++) {
        fwd[i].sad = i & 1 ? 0 : 5000;
        bwd[i].sad = i & 1 ? 5000 : 0;
    }
    double r = mpe_bdecide_b_ratio(fwd, bwd, intra, N, 1.3);
    CHECK(t, r == 1.3, "predicted: factor %.4f, expected 1.3", r);
    /* noise: both searches cost more than intra, nothing saved */
    for (int i = 0; i < N; i++)
        fwd[i].sad = bwd[i].sad = 1400;
    r = mpe_bdecide_b_ratio(fwd, bwd, intra, N, 1.3);
    CHECK(t, r == 1.0, "unpredicted: factor %.4f, expected 1", r);
    /* a quarter saved: half of MPE_BDECIDE_PB_FULL (50 %), half the ratio */
    for (int i = 0; i < N; i++)
        fwd[i].sad = 750;
    r = mpe_bdecide_b_ratio(fwd, bwd, intra, N, 1.3);
    CHECK(t, r > 1.1499 && r < 1.1501, "a quarter saved: factor %.4f, expected 1.15", r);
    /* exactly the threshold: the whole ratio */
    for (int i = 0; i < N; i++)
        fwd[i].sad = 500;
    r = mpe_bdecide_b_ratio(fwd, bwd, intra, N, 1.6);
    CHECK(t, r == 1.6, "half saved: factor %.4f, expected 1.6", r);
    /* from the sums (the encoder's one pass over the vectors): each of the
     * three the smallest somewhere, the same factor */
    const uint32_t intra2[N] = { 300, 1000, 900, 50 };
    const uint32_t fs[N] = { 400, 900, 800, 70 }, bs[N] = { 500, 950, 850, 40 };
    uint64_t sum_intra = 0, cost = 0;
    for (int i = 0; i < N; i++) {
        fwd[i].sad = fs[i];
        bwd[i].sad = bs[i];
        sum_intra += intra2[i];
        cost += mpe_bdecide_b_cost(fs[i], bs[i], intra2[i]);
    }
    CHECK(t, cost == 300 + 900 + 800 + 40, "b cost %llu, expected 2040", (unsigned long long)cost);
    r = mpe_bdecide_b_ratio(fwd, bwd, intra2, N, 1.3);
    const double r_sums = mpe_bdecide_b_ratio_of(sum_intra, cost, 1.3);
    CHECK(t, r == r_sums && r > 1.0 && r < 1.3, "from the sums %.6f, from the vectors %.6f", r_sums, r);
}

static void test_ip_ratio(TestCtx *t)
{
    enum { N = 4 };
    const uint32_t intra[N] = { 1000, 1000, 1000, 1000 };
    GpuMotion mv[N];
    memset(mv, 0, sizeof(mv));
    /* a still: everything kept, at any distance */
    double r = mpe_bdecide_retention(mv, intra, N, 3);
    CHECK(t, r == 1, "still: retention %.4f, expected 1", r);
    CHECK(t, mpe_bdecide_ip_ratio(r, 2) == 2, "still: ratio %.4f, expected 2", mpe_bdecide_ip_ratio(r, 2));
    /* 81 % kept over 2 frames: 90 % a frame, below the 93 % floor */
    for (int i = 0; i < N; i++)
        mv[i].sad = 190;
    r = mpe_bdecide_retention(mv, intra, N, 2);
    CHECK(t, r > 0.8999 && r < 0.9001, "81 %% over 2: retention %.4f, expected 0.9", r);
    CHECK(t, mpe_bdecide_ip_ratio(r, 2) == 1, "0.9: ratio %.4f, expected 1", mpe_bdecide_ip_ratio(r, 2));
    /* grain: the search costs more than intra, nothing kept */
    for (int i = 0; i < N; i++)
        mv[i].sad = 1500;
    r = mpe_bdecide_retention(mv, intra, N, 1);
    CHECK(t, r == 0 && mpe_bdecide_ip_ratio(r, 2) == 1, "grain: retention %.4f", r);
    /* halfway between the floor and 1: half the ratio's excess */
    const double mid = (MPE_BDECIDE_IP_LOW / 1000.0 + 1) / 2, half = mpe_bdecide_ip_ratio(mid, 2);
    CHECK(t, half > 1.4999 && half < 1.5001, "halfway: ratio %.4f, expected 1.5", half);
}

static void test_intra(TestCtx *t)
{
    MpePicture pic;
    MpeSadDsp c, best;
    CHECK(t, mpe_picture_alloc(&pic, 40, 24) == 0, "picture alloc");
    if (t->case_failed)
        return;
    const int n = pic.mb_width * pic.mb_height;
    uint32_t *ic = calloc((size_t)n, sizeof(*ic)), *ib = calloc((size_t)n, sizeof(*ib));
    CHECK(t, ic && ib, "alloc");
    if (!ic || !ib) {
        free(ic);
        free(ib);
        mpe_picture_free(&pic);
        return;
    }
    mpe_sad_dsp_init_c(&c);
    mpe_sad_dsp_init(&best, mpe_cpu_flags());
    /* flat macroblock: 0; one sample off by d: d (mean unchanged at 100) */
    memset(pic.plane[0], 100, (size_t)pic.stride[0] * pic.plane_h[0]);
    pic.plane[0][3 * pic.stride[0] + 5] = 110;
    mpe_bdecide_intra_costs(ic, &pic, c.sad16);
    CHECK(t, ic[0] == 10 && ic[1] == 0, "flat + one sample: %u %u, expected 10 0", ic[0], ic[1]);
    srand(7);
    for (int round = 0; round < 20 && !t->case_failed; round++) {
        for (int i = 0; i < pic.stride[0] * pic.plane_h[0]; i++)
            pic.plane[0][i] = (uint8_t)(round & 1 ? rand() & 255 : 96 + (rand() & 31));
        mpe_bdecide_intra_costs(ic, &pic, c.sad16);
        mpe_bdecide_intra_costs(ib, &pic, best.sad16);
        CHECK(t, !memcmp(ic, ib, (size_t)n * sizeof(*ic)), "round %d: C and optimised sad16 differ", round);
        /* in bands of macroblock rows (the encoder's pool), uneven, last first */
        memset(ib, 0xA5, (size_t)n * sizeof(*ib));
        mpe_bdecide_intra_costs_rows(ib, &pic, best.sad16, 1, pic.mb_height);
        mpe_bdecide_intra_costs_rows(ib, &pic, best.sad16, 0, 1);
        CHECK(t, !memcmp(ic, ib, (size_t)n * sizeof(*ic)), "round %d: costs by rows differ", round);
    }
    free(ic);
    free(ib);
    mpe_picture_free(&pic);
}

int main(void)
{
    TestCtx t;
    test_init(&t, "bdecide");
    test_run(&t, "stop", test_stop);
    test_run(&t, "b-ratio", test_b_ratio);
    test_run(&t, "ip-ratio", test_ip_ratio);
    test_run(&t, "intra-costs", test_intra);
    return test_finish(&t);
}
