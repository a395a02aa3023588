/* test_checker.c — the quality checker's studio-to-full-range luma
 * expansion (encoder/checker.h), which the metrics that model display
 * values see (MAD, BLIINDS-II): the fast path equals the table exactly for
 * every input value, at every width (its vector body and scalar tail) and
 * row stride, and leaves the bytes past each row alone. */
#include <stdint.h>
#include <string.h>

#include "encoder/checker.h"
#include "tests/test.h"

static void t_all_values(TestCtx *t)
{
    uint8_t src[256], got[256], want[256];
    for (int v = 0; v < 256; v++)
        src[v] = (uint8_t)v;
    mpe_luma_to_full_range(got, 256, src, 256, 256, 1);
    mpe_luma_to_full_range_c(want, 256, src, 256, 256, 1);
    for (int v = 0; v < 256; v++)
        CHECK(t, got[v] == want[v], "value %d: %d, the table's %d", v, got[v], want[v]);
    /* the formula's end points */
    CHECK(t, want[16] == 0 && want[235] == 255 && want[126] == 128 && want[15] == 0 && want[255] == 255,
          "table: 16 -> %d, 126 -> %d, 235 -> %d", want[16], want[126], want[235]);
}

static void t_random_pictures(TestCtx *t)
{
    enum { MAXW = 100, ROWS = 7, PAD = 37 };
    static uint8_t src[ROWS * (MAXW + PAD)], got[ROWS * (MAXW + PAD)], want[ROWS * (MAXW + PAD)];
    TestRng rng = { 0xF011 };
    for (int w = 1; w <= MAXW; w++) {
        const int sstride = w + (w % 5) * 3, dstride = w + (w % 3) * 7;
        for (size_t i = 0; i < sizeof(src); i++)
            src[i] = (uint8_t)test_rand(&rng);
        memset(got, 0xA5, sizeof(got));
        memset(want, 0xA5, sizeof(want));
        mpe_luma_to_full_range(got, dstride, src, sstride, w, ROWS);
        mpe_luma_to_full_range_c(want, dstride, src, sstride, w, ROWS);
        const int same = !memcmp(got, want, sizeof(got));
        CHECK(t, same, "width %d, strides %d / %d: differs", w, sstride, dstride);
        if (!same)
            return;
    }
}

int main(void)
{
    TestCtx t;
    test_init(&t, "test_checker");
    test_run(&t, "full_range_every_value", t_all_values);
    test_run(&t, "full_range_random_widths", t_random_pictures);
    return test_finish(&t);
}
