/* test_param.c — the parameter parser: defaults, name spelling, bad names vs
 * bad values, ranges, frame rates. */
#include <string.h>

#include "encoder/param.h"
#include "tests/test.h"

static void test_defaults(TestCtx *t)
{
    MpeParam p;
    mpe_param_default(&p);
    CHECK(t, p.qscale == 4 && p.gop == 12 && p.search_range == -1 && p.me == MPE_ME_HIER &&
                 p.trellis == 1 && p.format == MPE_FORMAT_AUTO &&
                 p.fps_num == 0 && !strcmp(p.backend, "auto") && p.start_number == 0,
          "unexpected defaults");
    char buf[64];
    int found_gop = 0;
    for (int i = 0; mpe_param_info(i); i++) {
        mpe_param_value_string(&p, i, buf, sizeof(buf));
        if (!strcmp(mpe_param_info(i)->name, "gop"))
            found_gop = !strcmp(buf, "12");
        CHECK(t, mpe_param_info(i)->help && *mpe_param_info(i)->help, "option %d has no help", i);
    }
    CHECK(t, found_gop, "--gop default not printed as 12");
}

static void test_names_and_values(TestCtx *t)
{
    MpeParam p;
    MpeError err;
    mpe_param_default(&p);
    CHECK(t, mpe_param_parse(&p, "q", "7", &err) == 0 && p.qscale == 7, "q 7");
    CHECK(t, mpe_param_parse(&p, "search", "64", &err) == 0 && p.search_range == 64, "search 64");
    /* the exhaustive search stays selectable beside the default hier */
    CHECK(t, mpe_param_parse(&p, "me", "full", &err) == 0 && p.me == MPE_ME_FULL, "me full");
    CHECK(t, mpe_param_parse(&p, "me", "hier", &err) == 0 && p.me == MPE_ME_HIER, "me hier");
    CHECK(t, mpe_param_parse(&p, "format", "MPEG1", &err) == 0 && p.format == MPE_FORMAT_MPEG1, "format");
    CHECK(t, mpe_param_parse(&p, "backend", "cpu", &err) == 0 && !strcmp(p.backend, "cpu"), "backend");
    /* unknown name and bad value are different errors */
    CHECK(t, mpe_param_parse(&p, "qq", "7", &err) == MPE_PARAM_BAD_NAME && strstr(err.msg, "qq"),
          "unknown name: %s", err.msg);
    CHECK(t, mpe_param_parse(&p, "q", "0", &err) == MPE_PARAM_BAD_VALUE && strstr(err.msg, "1..31"),
          "q 0: %s", err.msg);
    CHECK(t, mpe_param_parse(&p, "q", "32", &err) == MPE_PARAM_BAD_VALUE, "q 32");
    CHECK(t, mpe_param_parse(&p, "q", "5x", &err) == MPE_PARAM_BAD_VALUE, "q 5x");
    CHECK(t, mpe_param_parse(&p, "q", "", &err) == MPE_PARAM_BAD_VALUE, "q empty");
    CHECK(t, mpe_param_parse(&p, "q", NULL, &err) == MPE_PARAM_BAD_VALUE, "q without value");
    CHECK(t, mpe_param_parse(&p, "search", "65", &err) == MPE_PARAM_BAD_VALUE, "search 65");
    CHECK(t, mpe_param_parse(&p, "gop", "0", &err) == MPE_PARAM_BAD_VALUE, "gop 0");
    CHECK(t, mpe_param_parse(&p, "format", "h264", &err) == MPE_PARAM_BAD_VALUE, "format h264");
    CHECK(t, p.qscale == 7 && p.search_range == 64, "a rejected value changed the parameter");
}

static void test_separators_not_ignored(TestCtx *t)
{
    MpeParam p;
    MpeError err;
    mpe_param_default(&p);
    /* '-' and '_' compare equal to each other, but are not skipped: a name
     * with a separator inserted must not match (read-threads, the first
     * name with a separator, is checked in test_threads). */
    CHECK(t, mpe_param_parse(&p, "sea_rch", "3", &err) == MPE_PARAM_BAD_NAME, "sea_rch matched");
    CHECK(t, mpe_param_parse(&p, "back-end", "cpu", &err) == MPE_PARAM_BAD_NAME, "back-end matched");
}

static void test_rates(TestCtx *t)
{
    static const struct { const char *s; int n, d; } ok[] = {
        { "25", 25, 1 },           { "29.97", 30000, 1001 }, { "30000/1001", 30000, 1001 },
        { "24000:1001", 24000, 1001 }, { "50", 50, 1 },      { "12.5", 25, 2 },
        { "59.94", 60000, 1001 },  { "60/2", 30, 1 },
    };
    static const char *bad[] = { "", "0", "-25", "abc", "25/0", "1/0", "25fps", "/", "1e9" };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int n = 0, d = 0;
        CHECK(t, mpe_parse_rate(ok[i].s, &n, &d) == 0 && n == ok[i].n && d == ok[i].d,
              "'%s' -> %d/%d, want %d/%d", ok[i].s, n, d, ok[i].n, ok[i].d);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int n = 0, d = 0;
        CHECK(t, mpe_parse_rate(bad[i], &n, &d) < 0, "'%s' accepted as %d/%d", bad[i], n, d);
    }
}

/* --threads, --read-threads, --dsp: "auto" or a number in range; the
 * defaults print as auto; '_' spells '-' in the two-word name. */
static void test_threads(TestCtx *t)
{
    MpeParam p, def;
    MpeError err;
    char buf[64];
    mpe_param_default(&def);
    p = def;
    CHECK(t, def.threads == 0 && def.read_threads == -1 && def.dsp == MPE_DSP_AUTO,
          "defaults threads %d read_threads %d dsp %d", def.threads, def.read_threads, def.dsp);
    for (int i = 0; mpe_param_info(i); i++) {
        const char *n = mpe_param_info(i)->name;
        if (!strcmp(n, "threads") || !strcmp(n, "read-threads") || !strcmp(n, "dsp")) {
            mpe_param_value_string(&def, i, buf, sizeof(buf));
            CHECK(t, !strcmp(buf, "auto"), "--%s default printed as '%s'", n, buf);
        }
    }
    CHECK(t, mpe_param_parse(&p, "threads", "7", &err) == 0 && p.threads == 7, "threads 7");
    CHECK(t, mpe_param_parse(&p, "threads", "1", &err) == 0 && p.threads == 1, "threads 1");
    CHECK(t, mpe_param_parse(&p, "threads", "256", &err) == 0 && p.threads == 256, "threads 256");
    CHECK(t, mpe_param_parse(&p, "threads", "AUTO", &err) == 0 && p.threads == 0, "threads auto");
    CHECK(t, mpe_param_parse(&p, "threads", "0", &err) == MPE_PARAM_BAD_VALUE &&
                 strstr(err.msg, "auto or an integer in 1..256"),
          "threads 0: %s", err.msg);
    CHECK(t, mpe_param_parse(&p, "threads", "257", &err) == MPE_PARAM_BAD_VALUE, "threads 257");
    CHECK(t, mpe_param_parse(&p, "threads", "-1", &err) == MPE_PARAM_BAD_VALUE, "threads -1");
    CHECK(t, mpe_param_parse(&p, "threads", "2x", &err) == MPE_PARAM_BAD_VALUE, "threads 2x");
    CHECK(t, mpe_param_parse(&p, "threads", NULL, &err) == MPE_PARAM_BAD_VALUE, "no value");
    CHECK(t, p.threads == 0, "a rejected value changed --threads to %d", p.threads);

    CHECK(t, mpe_param_parse(&p, "read-threads", "0", &err) == 0 && p.read_threads == 0, "0");
    CHECK(t, mpe_param_parse(&p, "read_threads", "4", &err) == 0 && p.read_threads == 4,
          "read_threads spelled with '_'");
    CHECK(t, mpe_param_parse(&p, "read-threads", "auto", &err) == 0 && p.read_threads == -1,
          "read-threads auto");
    CHECK(t, mpe_param_parse(&p, "read-threads", "65", &err) == MPE_PARAM_BAD_VALUE, "65");
    CHECK(t, mpe_param_parse(&p, "readthreads", "2", &err) == MPE_PARAM_BAD_NAME,
          "readthreads matched");
    CHECK(t, mpe_param_parse(&p, "read--threads", "2", &err) == MPE_PARAM_BAD_NAME,
          "read--threads matched");

    CHECK(t, mpe_param_parse(&p, "dsp", "c", &err) == 0 && p.dsp == MPE_DSP_C, "dsp c");
    CHECK(t, mpe_param_parse(&p, "dsp", "AUTO", &err) == 0 && p.dsp == MPE_DSP_AUTO, "dsp auto");
    CHECK(t, mpe_param_parse(&p, "dsp", "avx2", &err) == MPE_PARAM_BAD_VALUE &&
                 strstr(err.msg, "auto, c"),
          "dsp avx2: %s", err.msg);
    for (int i = 0; mpe_param_info(i); i++) {
        if (!strcmp(mpe_param_info(i)->name, "threads")) {
            p.threads = 12;
            mpe_param_value_string(&p, i, buf, sizeof(buf));
            CHECK(t, !strcmp(buf, "12"), "threads 12 printed as '%s'", buf);
        }
    }
}

int main(void)
{
    TestCtx t;
    test_init(&t, "param");
    test_run(&t, "defaults", test_defaults);
    test_run(&t, "names-and-values", test_names_and_values);
    test_run(&t, "separators-not-ignored", test_separators_not_ignored);
    test_run(&t, "rates", test_rates);
    test_run(&t, "threads-read-threads-dsp", test_threads);
    return test_finish(&t);
}
