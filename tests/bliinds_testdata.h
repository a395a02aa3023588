/* bliinds_testdata.h — what the BLIINDS-II tests (C and CUDA) share: the
 * reference files (../shared/reference/bliinds or MPE_SHARED_DIR,
 * tests/data/bliinds), reference.csv rows and PNG luma as the tests read it. */
#ifndef MPE_TESTS_BLIINDS_TESTDATA_H
#define MPE_TESTS_BLIINDS_TESTDATA_H

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "input/input.h"
#include "iqa/bliinds.h"
#include "tests/test.h"

static const char *const feature_names[8] = {
    "zeta_mean", "zeta_top10", "gamma_mean", "gamma_low10",
    "subband_mean", "subband_top10", "orient_mean", "orient_top10",
};

static inline const char *shared_bliinds_dir(char *buf, size_t size)
{
    const char *root = getenv("MPE_SHARED_DIR");
    struct stat st;
    snprintf(buf, size, "%s/reference/bliinds", root && *root ? root : "../shared");
    return stat(buf, &st) == 0 && S_ISDIR(st.st_mode) ? buf : NULL;
}

static inline int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* First channel of a PNG (the reference images are 8-bit gray, which the
 * reader replicates into R = G = B), as the original's I(:,:,1). */
static inline uint8_t *load_png(const char *path, int *w, int *h, MpeError *err)
{
    MpeInput *in = NULL;
    MpeFrame fr = { 0 };
    uint8_t *img = NULL;
    if (mpe_input_open(&in, path, 0, err) < 0)
        return NULL;
    const MpeInputInfo *info = mpe_input_info(in);
    *w = info->width;
    *h = info->height;
    if (mpe_frame_alloc(&fr, info->format, *w, *h) < 0 || mpe_input_read(in, &fr, err) != 1 ||
        !(img = malloc((size_t)*w * *h)))
        goto done;
    for (int y = 0; y < *h; y++)
        for (int x = 0; x < *w; x++)
            img[(size_t)y * *w + x] = fr.data[0][(size_t)y * fr.stride[0] + 3 * x];
done:
    mpe_frame_free(&fr);
    mpe_input_close(in);
    return img;
}

/* A text file as a string (test_read_file adds the NUL). */
static inline char *read_text(const char *path)
{
    size_t n;
    return (char *)test_read_file(path, &n);
}

typedef struct RefRow {
    char file[64];
    int rows, cols;
    double f[BLIINDS_NFEATURES];
    double score;
} RefRow;

/* reference.csv: file,rows,cols,24 features,score,... (header first). */
static inline int read_reference(const char *path, RefRow *out, int max)
{
    char *text = read_text(path), *line, *save = NULL;
    int n = 0;
    if (!text)
        return -1;
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *p = strchr(line, ',');
        if (!p || !strncmp(line, "file,", 5) || n == max)
            continue;
        RefRow *r = &out[n];
        snprintf(r->file, sizeof(r->file), "%.*s", (int)(p - line), line);
        r->rows = (int)strtol(p + 1, &p, 10);
        r->cols = (int)strtol(p + 1, &p, 10);
        for (int i = 0; i < BLIINDS_NFEATURES; i++)
            r->f[i] = strtod(p + 1, &p);
        r->score = strtod(p + 1, &p);
        if (*p != ',' && *p)
            continue;
        n++;
    }
    free(text);
    return n;
}

#endif
