/* regress_main.c — runs a fuzz target without libFuzzer, as an ordinary
 * test in `make test`: every file of tests/fuzz/corpus/<name>/ (the seeds)
 * and tests/fuzz/regress/<name>/ (inputs that once crashed, kept so the bug
 * stays fixed), then a fixed set of pseudo-random inputs.  The target
 * aborts on a broken invariant; the sanitizers (in a SANITIZE build) abort
 * on memory and undefined-behaviour errors; either way this program dies
 * without printing PASS, which tests/run.sh counts as a failure.  Set
 * MPE_FUZZ_VERBOSE=1 to print each input's name before it runs, to see
 * which one did it.  Directories on the command line replace the two
 * defaults. */
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/test.h"

#ifndef MPE_FUZZ_NAME
#error "build with -DMPE_FUZZ_NAME='\"<name>\"' (the Makefile does)"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Feeds every regular file of dir (in name order) to the target; returns the
 * count, or -1 if dir cannot be read. */
static int run_dir(TestCtx *t, const char *dir, int verbose)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL;
    int n = 0, cap = 0, done = 0;

    if (!d)
        return -1;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **p = realloc(names, (size_t)(cap = cap ? 2 * cap : 64) * sizeof(*names));
            CHECK(t, p != NULL, "out of memory listing %s", dir);
            if (!p)
                break;
            names = p;
        }
        if (!(names[n] = strdup(e->d_name)))
            break;
        n++;
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof(*names), cmp_names);
    for (int i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        size_t size = 0;
        uint8_t *buf;
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (verbose)
            fprintf(stderr, "%s\n", path);
        buf = test_read_file(path, &size);
        CHECK(t, buf != NULL, "cannot read %s", path);
        if (buf) {
            LLVMFuzzerTestOneInput(buf, size);
            done++;
        }
        free(buf);
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return done;
}

int main(int argc, char **argv)
{
    TestCtx t;
    const int verbose = getenv("MPE_FUZZ_VERBOSE") != NULL;
    char corpus[256], regress[256];
    const char *dirs[16];
    int ndirs = 0, required = argc <= 1;

    test_init(&t, "fuzz_" MPE_FUZZ_NAME);
    snprintf(corpus, sizeof(corpus), "tests/fuzz/corpus/%s", MPE_FUZZ_NAME);
    snprintf(regress, sizeof(regress), "tests/fuzz/regress/%s", MPE_FUZZ_NAME);
    if (argc > 1) {
        for (int i = 1; i < argc && ndirs < 16; i++)
            dirs[ndirs++] = argv[i];
    } else {
        dirs[ndirs++] = corpus;
        dirs[ndirs++] = regress;
    }

    t.case_name = "corpus";
    t.case_failed = 0;
    int total = 0;
    for (int i = 0; i < ndirs; i++) {
        int n = run_dir(&t, dirs[i], verbose);
        /* the seed corpus is part of the repository: missing is a failure;
         * the regression directory exists only once something was found */
        CHECK(&t, n >= 0 || !(required && i == 0), "cannot read %s", dirs[i]);
        CHECK(&t, n != 0 || !(required && i == 0), "%s is empty", dirs[i]);
        total += n > 0 ? n : 0;
    }
    if (t.case_failed)
        t.failed++;
    else {
        printf("PASS %s/corpus: %d inputs\n", t.prog, total);
        t.passed++;
    }

    /* beyond the files: the empty input and pseudo-random ones of every
     * size up to 4 KiB, the same on every run */
    TestRng rng = { 0x5eed5eedULL };
    uint8_t buf[4096] = { 0 };
    LLVMFuzzerTestOneInput(buf, 0);
    for (int i = 0; i < 300; i++) {
        size_t size = test_rand(&rng) % sizeof(buf);
        for (size_t k = 0; k < size; k++)
            buf[k] = (uint8_t)test_rand(&rng);
        LLVMFuzzerTestOneInput(buf, size);
    }
    printf("PASS %s/random: 301 inputs\n", t.prog);
    t.passed++;
    fflush(stdout);
    return test_finish(&t);
}
