/* fuzz_png.c — libFuzzer target for the PNG decoder (input/png_decode.c).
 *
 * Each input is decoded twice from memory: by the fast path when it takes
 * the image, and by libpng alone (its setjmp/longjmp error path included);
 * then both again with chunk CRCs unchecked, so that mutated image data
 * reaches zlib and the unfilters instead of stopping at the CRC.
 * Besides the sanitizers' findings, it stops on a message that does not
 * start with the name, and on the two decoders disagreeing: one failing
 * where the other succeeds, or different pixels. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpu.h"
#include "input/png_decode.h"

#define NAME "fuzz.png"
#define MAX_PIXELS (512 * 512) /* larger images only slow the search down */

static void check_msg(const MpeError *err)
{
    if (strncmp(err->msg, NAME ": ", sizeof(NAME ": ") - 1) != 0) {
        fprintf(stderr, "message without the name: '%s'\n", err->msg);
        abort();
    }
}

static void differential(const uint8_t *data, size_t size, int w, int h, unsigned flags)
{
    MpeFrame fast, ref;
    MpeError e1, e2;
    int r1, r2;

    if (mpe_frame_alloc(&fast, MPE_FRAME_RGB24, w, h) < 0)
        return;
    if (mpe_frame_alloc(&ref, MPE_FRAME_RGB24, w, h) < 0) {
        mpe_frame_free(&fast);
        return;
    }
    r1 = mpe_png_decode(&fast, NULL, NULL, data, size, NAME, flags, mpe_cpu_flags(), &e1);
    r2 = mpe_png_decode(&ref, NULL, NULL, data, size, NAME, flags | MPE_PNG_LIBPNG_ONLY, 0, &e2);
    if (r1 < 0)
        check_msg(&e1);
    if (r2 < 0)
        check_msg(&e2);
    if ((r1 < 0) != (r2 < 0)) {
        fprintf(stderr, "decoders disagree (flags %u): fast %d '%s', libpng %d '%s'\n", flags,
                r1, r1 < 0 ? e1.msg : "", r2, r2 < 0 ? e2.msg : "");
        abort();
    }
    if (r1 == 0 && r2 == 0)
        for (int y = 0; y < h; y++)
            if (memcmp(fast.data[0] + (size_t)y * fast.stride[0],
                       ref.data[0] + (size_t)y * ref.stride[0], (size_t)w * 3) != 0) {
                fprintf(stderr, "pixels differ in row %d\n", y);
                abort();
            }
    mpe_frame_free(&fast);
    mpe_frame_free(&ref);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    MpeError err;
    int w = 0, h = 0;

    if (mpe_png_decode(NULL, &w, &h, data, size, NAME, 0, 0, &err) < 0) {
        check_msg(&err);
        return 0;
    }
    if (w < 1 || h < 1 || (long long)w * h > MAX_PIXELS)
        return 0;
    differential(data, size, w, h, 0);
    differential(data, size, w, h, MPE_PNG_NO_CRC);
    return 0;
}
