/* test.h — the minimal assertion harness every unit-test program uses.
 *
 * A program runs named cases; each prints one line, "PASS prog/case",
 * "FAIL prog/case: where: what" or "SKIP prog/case: why".  tests/run.sh
 * tallies those lines across all programs.  Header-only on purpose: each test
 * program links just the library and this. */
#ifndef MPE_TEST_H
#define MPE_TEST_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct TestCtx {
    const char *prog;
    const char *case_name;
    int case_failed;
    int case_skipped;
    int passed, failed, skipped;
} TestCtx;

static inline void test_init(TestCtx *t, const char *prog)
{
    memset(t, 0, sizeof(*t));
    t->prog = prog;
}

static inline void test_fail_at(TestCtx *t, const char *file, int line,
                                const char *fmt, ...)
{
    va_list ap;
    /* only the first failure of a case gets the FAIL line; later ones add detail */
    if (!t->case_failed)
        printf("FAIL %s/%s: %s:%d: ", t->prog, t->case_name, file, line);
    else
        printf("     %s:%d: ", file, line);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    t->case_failed++;
}

/* CHECK(t, cond, "fmt", ...) fails the current case when cond is false. */
#define CHECK(t, cond, ...)                                                   \
    do {                                                                      \
        if (!(cond)) {                                                        \
            test_fail_at((t), __FILE__, __LINE__, "%s", "(" #cond ") ");      \
            printf("     ");                                                  \
            printf(__VA_ARGS__);                                              \
            printf("\n");                                                     \
        }                                                                     \
    } while (0)

static inline void test_skip(TestCtx *t, const char *why)
{
    printf("SKIP %s/%s: %s\n", t->prog, t->case_name, why);
    t->case_skipped = 1;
}

static inline void test_run(TestCtx *t, const char *name, void (*fn)(TestCtx *))
{
    t->case_name = name;
    t->case_failed = 0;
    t->case_skipped = 0;
    fn(t);
    if (t->case_failed)
        t->failed++;
    else if (t->case_skipped)
        t->skipped++;
    else {
        printf("PASS %s/%s\n", t->prog, name);
        t->passed++;
    }
    fflush(stdout);
}

static inline int test_finish(TestCtx *t)
{
    return t->failed ? 1 : 0;
}

/* Deterministic PRNG for random-input tests (xorshift64*), seeded per test so
 * failures reproduce. */
typedef struct TestRng { unsigned long long s; } TestRng;

/* A whole file, with a NUL after its last byte (text can be used as a
 * string); NULL when it cannot be opened or read. */
static inline uint8_t *test_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long n;
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1))) {
        if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        } else {
            buf[n] = 0;
            *size = (size_t)n;
        }
    }
    fclose(f);
    return buf;
}

/* The messages a library logs, "LEVEL message" a line, kept in text (what
 * does not fit is dropped): an MpeLog's callback, with a TestLog as its
 * opaque pointer. */
typedef struct TestLog {
    char text[4096];
    size_t len;
} TestLog;

static inline void test_log_capture(void *opaque, int level, const char *msg)
{
    TestLog *c = opaque;
    int n = snprintf(c->text + c->len, sizeof(c->text) - c->len, "%d %s\n", level, msg);
    if (n > 0 && (size_t)n < sizeof(c->text) - c->len)
        c->len += (size_t)n;
}

static inline unsigned test_rand(TestRng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return (unsigned)((r->s * 2685821657736338717ULL) >> 32);
}

#endif
