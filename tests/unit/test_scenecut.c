/* test_scenecut.c — the scene-cut score (encoder/scenecut.h) is the score
 * the scalar block count gave (main 5022291, before the SSE2 count): on
 * random frames whose widths leave 0 or 1 block beside the two-block
 * steps, YUV (the SSE2 path) and RGB (scalar), every score and mean block
 * level equals its recorded value to the last bit (a block counted at
 * another level moves the mean), and every block is counted once.  A cut (a dark picture with a bright quarter after a
 * gradient) scores above 40 and its fade (half contrast) below. */
#include <string.h>

#include "common/cpu.h"
#include "encoder/scenecut.h"
#include "tests/test.h"

#define N_FRAMES 4

/* frame n: a noisy gradient (0, 1), a dark picture with a bright quarter
 * (2: a cut), and that at half contrast (3: a fade); noise on every sample,
 * so that the block sums spread over many levels */
static void make_frame(MpeFrame *f, int n)
{
    TestRng rng = { 0x5CE7EC07ULL + (unsigned long long)n };
    const int planes = f->format == MPE_FRAME_RGB24 ? 1 : 3;
    const int bpp = f->format == MPE_FRAME_RGB24 ? 3 : 1;
    for (int c = 0; c < planes; c++) {
        const int w = c ? (f->width + 1) / 2 : f->width, h = c ? (f->height + 1) / 2 : f->height;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w * bpp; x++) {
                int v = ((x / bpp) * 7 + y * 3 + n * 2) % 200 + (int)(test_rand(&rng) % 24);
                if (n >= 2)
                    v = (x / bpp < w / 2 && y < h / 2 ? 220 : 30) + (int)(test_rand(&rng) % 24);
                if (n == 3)
                    v = 128 + (v - 128) / 2;
                f->data[c][y * f->stride[c] + x] = (uint8_t)v;
            }
    }
}

static void test_recorded_scores(TestCtx *t)
{
    static const struct {
        int w, h;
        MpeFrameFormat format;
        double score[N_FRAMES];   /* main 5022291's, printed with %.17g */
        double mean[N_FRAMES];    /* its mean block level: any block counted at another
                                   * level moves it */
    } cases[] = {
        { 352, 288, MPE_FRAME_YUV420,
          { -1, 23.042929292929294, 94.88636363636364, 3.8510101010101012 },
          { 109.92929292929293, 109.8705808080808, 88.420454545454547, 108.1584595959596 } },
        { 360, 144, MPE_FRAME_YUV420,
          { -1, 22.839506172839506, 91.604938271604937, 3.2098765432098766 },
          { 109.87530864197531, 109.90864197530864, 88.480246913580245, 108.15925925925926 } },
        { 40, 48, MPE_FRAME_YUV420,
          { -1, 33.333333333333336, 90, 30 },
          { 110.53333333333333, 110.59999999999999, 88.233333333333334, 107.86666666666666 } },
        { 1000, 136, MPE_FRAME_YUV420,
          { -1, 20.752941176470589, 88.752941176470586, 4.8470588235294114 },
          { 109.992, 110.01129411764705, 88.465411764705877, 108.18070588235294 } },
        { 176, 144, MPE_FRAME_RGB24,
          { -1, 28.535353535353536, 95.959595959595958, 1.0101010101010102 },
          { 110.3459595959596, 110.43434343434343, 91.931818181818187, 108.81565656565657 } },
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        MpeSceneCut sc;
        mpe_scenecut_init(&sc);
        for (int n = 0; n < N_FRAMES; n++) {
            MpeFrame f;
            if (mpe_frame_alloc(&f, cases[k].format, cases[k].w, cases[k].h) < 0) {
                CHECK(t, 0, "out of memory");
                return;
            }
            make_frame(&f, n);
            const double got = mpe_scenecut_score(&sc, n, &f);
            mpe_frame_free(&f);
            uint32_t counted = 0;
            for (int b = 0; b < MPE_SCENECUT_BINS; b++)
                counted += sc.hist[n & 1][b];
            CHECK(t, counted == (uint32_t)((cases[k].w / 8) * (cases[k].h / 8)),
                  "%dx%d frame %d: %u blocks counted", cases[k].w, cases[k].h, n, counted);
            CHECK(t, got == cases[k].score[n], "%dx%d %s frame %d: score %.17g, recorded %.17g",
                  cases[k].w, cases[k].h, cases[k].format == MPE_FRAME_RGB24 ? "rgb" : "yuv", n,
                  got, cases[k].score[n]);
            CHECK(t, sc.mean[n & 1] == cases[k].mean[n], "%dx%d frame %d: mean level %.17g, recorded %.17g",
                  cases[k].w, cases[k].h, n, sc.mean[n & 1], cases[k].mean[n]);
            if (n == 2)
                CHECK(t, got > 40.0, "%dx%d: the cut scores %.2f", cases[k].w, cases[k].h, got);
            if (n == 3)
                CHECK(t, got < 40.0, "%dx%d: the fade scores %.2f", cases[k].w, cases[k].h, got);
        }
    }
}

/* The count the score uses (SSE2 for YUV, AVX2 for RGB), with every flag
 * subset this CPU has, against the C reference, on random frames of odd
 * sizes and strides (blocks left over beside the two at a time, rows wider
 * than the frame), YUV and RGB, on extreme samples (all 255: every block
 * at its largest level, 255 for YUV) and on RGB pixels whose luma is .5
 * before the rounding. */
static void test_levels_vs_c(TestCtx *t)
{
    TestRng rng = { 0x1E7E15ULL };
    for (int k = 0; k < 40; k++) {
        const MpeFrameFormat fmt = k % 2 ? MPE_FRAME_RGB24 : MPE_FRAME_YUV420;
        const int w = 8 + (int)(test_rand(&rng) % 300), h = 8 + (int)(test_rand(&rng) % 120);
        MpeFrame f;
        if (mpe_frame_alloc(&f, fmt, w, h) < 0) {
            CHECK(t, 0, "out of memory");
            return;
        }
        const int planes = fmt == MPE_FRAME_RGB24 ? 1 : 3;
        for (int c = 0; c < planes; c++)
            for (int y = 0; y < (c ? (h + 1) / 2 : h); y++)
                for (int x = 0; x < f.stride[c]; x++)
                    f.data[c][y * f.stride[c] + x] = k < 2 ? 255 : (uint8_t)test_rand(&rng);
        if (k == 3)   /* RGB pixels whose luma is exactly .5 before the rounding: (1, 173, 82) */
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    memcpy(f.data[0] + y * f.stride[0] + 3 * x, "\x01\xAD\x52", 3);
        uint32_t want[256] = { 0 };
        mpe_scenecut_levels_c(&f, want);
        /* every flag subset this CPU has (AVX2: the RGB kernel) */
        const unsigned have = mpe_cpu_flags() & MPE_CPU_ALL;
        for (unsigned sub = 0; sub <= MPE_CPU_ALL; sub++) {
            if ((sub & have) != sub)
                continue;
            uint32_t got[256] = { 0 };
            mpe_scenecut_levels(&f, got, sub);
            int bad = -1;
            for (int v = 0; v < 256 && bad < 0; v++)
                bad = want[v] != got[v] ? v : -1;
            CHECK(t, bad < 0, "%s %dx%d flags 0x%x: level %d counted %u times, C reference %u",
                  planes == 1 ? "rgb" : "yuv", w, h, sub, bad, bad < 0 ? 0 : got[bad], bad < 0 ? 0 : want[bad]);
        }
        mpe_frame_free(&f);
        if (k == 0)
            CHECK(t, want[255] == (uint32_t)((w / 8) * (h / 8)), "all-255 frame: %u blocks at 255", want[255]);
    }
}

/* The score with its block rows counted on a pool (bands of rows, the
 * encoder's front end) is the score counted on one thread, to the last
 * bit, frame after frame (the previous frame's histogram is part of it):
 * random sizes tall enough for 2..16 bands, odd widths, YUV and RGB. */
static void test_pool_same_score(TestCtx *t)
{
    TestRng rng = { 0xB0A7DULL };
    MpePool *pool;
    MpeError err;
    if (mpe_pool_open(&pool, 3, &err) < 0) {
        CHECK(t, 0, "pool: %s", err.msg);
        return;
    }
    for (int k = 0; k < 12; k++) {
        const MpeFrameFormat fmt = k % 3 == 2 ? MPE_FRAME_RGB24 : MPE_FRAME_YUV420;
        const int w = 8 + (int)(test_rand(&rng) % 700), h = 256 + (int)(test_rand(&rng) % 1900);
        MpeSceneCut one, banded;
        mpe_scenecut_init(&one);
        mpe_scenecut_init(&banded);
        for (int n = 0; n < 3; n++) {
            MpeFrame f;
            if (mpe_frame_alloc(&f, fmt, w, h) < 0) {
                CHECK(t, 0, "out of memory");
                break;
            }
            make_frame(&f, n + (k & 1));
            const double want = mpe_scenecut_score(&one, n, &f);
            const double got = mpe_scenecut_score_pool(&banded, n, &f, pool);
            mpe_frame_free(&f);
            CHECK(t, got == want && banded.mean[n & 1] == one.mean[n & 1] &&
                     !memcmp(banded.hist[n & 1], one.hist[n & 1], sizeof(one.hist[0])),
                  "%s %dx%d frame %d: pool score %.17g mean %.17g, one thread %.17g mean %.17g",
                  fmt == MPE_FRAME_RGB24 ? "rgb" : "yuv", w, h, n, got, banded.mean[n & 1], want,
                  one.mean[n & 1]);
        }
    }
    mpe_pool_close(pool);
}

int main(void)
{
    TestCtx t;
    test_init(&t, "scenecut");
    test_run(&t, "recorded-scores", test_recorded_scores);
    test_run(&t, "levels-vs-c", test_levels_vs_c);
    test_run(&t, "pool-same-score", test_pool_same_score);
    return test_finish(&t);
}
