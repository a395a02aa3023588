/* fuzz_png.c — libFuzzer target for the PNG decoder (input/png_decode.c).
 *
 * Each input is decoded three times from memory: by the fast path when it
 * takes the image (inflating with libdeflate where built with it), by the
 * fast path inflating with zlib's streaming API, and by libpng alone (its
 * setjmp/longjmp error path included); then all again with chunk CRCs
 * unchecked, so that mutated image data reaches the inflaters and the
 * unfilters instead of stopping at the CRC.  Besides the sanitizers'
 * findings, it stops on a message that does not start with the name, on the
 * zlib fast path and libpng disagreeing (one failing where the other
 * succeeds, or different pixels), and on the two fast paths giving
 * different results, messages or frame bytes (the rows made before a
 * failure included).  One difference is allowed (png_decode.c's header):
 * where zlib finds the deflate data bad, libdeflate may accept it. */
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

static int frames_differ(const MpeFrame *a, const MpeFrame *b, int w, int h)
{
    for (int y = 0; y < h; y++)
        if (memcmp(a->data[0] + (size_t)y * a->stride[0], b->data[0] + (size_t)y * b->stride[0],
                   (size_t)w * 3) != 0)
            return y + 1;
    return 0;
}

static void differential(const uint8_t *data, size_t size, int w, int h, unsigned flags)
{
    static const char zlib_error[] = NAME ": corrupt PNG (IDAT: ";
    MpeFrame fast, zfast, ref;
    MpeError e1, e2, e3;
    int r1, r2, r3, row;

    memset(&fast, 0, sizeof(fast));
    memset(&zfast, 0, sizeof(zfast));
    memset(&ref, 0, sizeof(ref));
    if (mpe_frame_alloc(&fast, MPE_FRAME_RGB24, w, h) < 0 ||
        mpe_frame_alloc(&zfast, MPE_FRAME_RGB24, w, h) < 0 ||
        mpe_frame_alloc(&ref, MPE_FRAME_RGB24, w, h) < 0)
        goto out;
    /* the rows a failed decode leaves are compared too: same start */
    memset(fast.data[0], 0xA5, (size_t)fast.stride[0] * h);
    memset(zfast.data[0], 0xA5, (size_t)zfast.stride[0] * h);
    r1 = mpe_png_decode(&fast, NULL, NULL, data, size, NAME, flags, mpe_cpu_flags(), &e1);
    r3 = mpe_png_decode(&zfast, NULL, NULL, data, size, NAME, flags | MPE_PNG_ZLIB_STREAM,
                        mpe_cpu_flags(), &e3);
    r2 = mpe_png_decode(&ref, NULL, NULL, data, size, NAME, flags | MPE_PNG_LIBPNG_ONLY, 0, &e2);
    if (r1 < 0)
        check_msg(&e1);
    if (r2 < 0)
        check_msg(&e2);
    if (r3 < 0)
        check_msg(&e3);
    if ((r3 < 0) != (r2 < 0)) {
        fprintf(stderr, "decoders disagree (flags %u): fast %d '%s', libpng %d '%s'\n", flags,
                r3, r3 < 0 ? e3.msg : "", r2, r2 < 0 ? e2.msg : "");
        abort();
    }
    if (r3 == 0 && r2 == 0 && (row = frames_differ(&zfast, &ref, w, h))) {
        fprintf(stderr, "pixels differ in row %d\n", row - 1);
        abort();
    }
    if (r3 < 0 && strncmp(e3.msg, zlib_error, sizeof(zlib_error) - 1) == 0)
        goto out; /* libdeflate may read on where zlib stops */
    if (r1 != r3 || (r1 < 0 && strcmp(e1.msg, e3.msg) != 0)) {
        fprintf(stderr, "fast paths disagree (flags %u): libdeflate %d '%s', zlib %d '%s'\n",
                flags, r1, r1 < 0 ? e1.msg : "", r3, r3 < 0 ? e3.msg : "");
        abort();
    }
    if ((row = frames_differ(&fast, &zfast, w, h))) {
        fprintf(stderr, "fast paths' frames differ in row %d (result %d)\n", row - 1, r1);
        abort();
    }
out:
    mpe_frame_free(&fast);
    mpe_frame_free(&zfast);
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
