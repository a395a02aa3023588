/* fuzz_y4m.c — libFuzzer target for the YUV4MPEG2 header and frame reader
 * (input/input.c), fed from memory through fmemopen.  Reads up to a few
 * frames; any message must start with the stream's name. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input/input.h"

#define NAME "fuzz.y4m"
#define MAX_FRAMES 4
#define MAX_PIXELS (256 * 256) /* larger frames only slow the search down */

static void check_msg(const MpeError *err)
{
    if (strncmp(err->msg, NAME ": ", sizeof(NAME ": ") - 1) != 0) {
        fprintf(stderr, "message without the name: '%s'\n", err->msg);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    MpeInput *in = NULL;
    MpeFrame fr;
    MpeError err;
    FILE *f;
    int ret;

    if (size == 0) /* fmemopen refuses an empty buffer */
        return 0;
    if (!(f = fmemopen((void *)data, size, "rb")))
        return 0;
    ret = mpe_input_open_y4m_stream(&in, f, NAME, &err);
    if (ret < 0) {
        check_msg(&err);
    } else {
        const MpeInputInfo *info = mpe_input_info(in);
        if (info->width < 16 || info->width > 4095 || info->height < 16 || info->height > 4095) {
            fprintf(stderr, "size %dx%d accepted\n", info->width, info->height);
            abort();
        }
        if ((long long)info->width * info->height <= MAX_PIXELS &&
            mpe_frame_alloc(&fr, info->format, info->width, info->height) == 0) {
            for (int i = 0; i < MAX_FRAMES; i++) {
                ret = mpe_input_read(in, &fr, &err);
                if (ret < 0)
                    check_msg(&err);
                if (ret <= 0)
                    break;
            }
            mpe_frame_free(&fr);
        }
        mpe_input_close(in);
    }
    fclose(f);
    return 0;
}
