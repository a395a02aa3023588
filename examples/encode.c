/* encode.c — the smallest complete program embedding mpegenc: a Y4M file
 * (or PNG sequence) in, an MPEG-1/2 video elementary stream out, options as
 * name=value through the library's own parser (the names of mpegenc's long
 * options), one line per coded picture on stdout.
 *
 *   cc encode.c $(pkg-config --cflags --libs mpegenc) -o encode
 *   ./encode clip.y4m clip.m2v q=5 gop=12
 *
 * With the same options its stream is byte-identical to
 * `mpegenc -i clip.y4m -o clip.m2v --q 5 --gop 12` (tests/e2e/install.sh). */
#include <stdio.h>
#include <string.h>

#include <mpegenc.h>

int main(int argc, char **argv)
{
    MpeParam p;
    MpeError err = { "" };
    MpeInput *in = NULL;
    MpeEncoder *enc = NULL;
    MpeFrame frame = { 0 };
    FILE *out = NULL;
    int status = 1, got;

    if (argc < 3) {
        fprintf(stderr, "usage: %s INPUT OUTPUT [option=value ...]\n", argv[0]);
        return 2;
    }
    mpe_param_default(&p);
    for (int i = 3; i < argc; i++) {
        char name[64];
        const char *eq = strchr(argv[i], '=');
        if (!eq || (size_t)(eq - argv[i]) >= sizeof(name)) {
            fprintf(stderr, "%s: expected option=value\n", argv[i]);
            return 2;
        }
        snprintf(name, sizeof(name), "%.*s", (int)(eq - argv[i]), argv[i]);
        if (mpe_param_parse(&p, name, eq + 1, &err) < 0) {
            fprintf(stderr, "%s\n", err.msg);
            return 2;
        }
    }
    if (mpe_input_open(&in, argv[1], p.start_number, &err) < 0)
        goto fail;
    const MpeInputInfo *info = mpe_input_info(in);
    p.width = info->width;
    p.height = info->height;
    if (!p.fps_num && info->fps_num > 0) {
        p.fps_num = info->fps_num;
        p.fps_den = info->fps_den;
    }
    if (mpe_frame_alloc(&frame, info->format, info->width, info->height) < 0) {
        snprintf(err.msg, sizeof(err.msg), "out of memory");
        goto fail;
    }
    if (mpe_encoder_open(&enc, &p, NULL, &err) < 0)
        goto fail;
    if (!(out = fopen(argv[2], "wb"))) {
        snprintf(err.msg, sizeof(err.msg), "%s: cannot create", argv[2]);
        goto fail;
    }
    /* the measures of a record are found by name in the metric registry */
    const int psnr_y = iqa_value_find("psnr_y_db");
    MpeOutput o;
    int ended = 0;
    do {
        MpeFrameStats fs;
        /* after the input's end, flush calls until nothing comes out */
        if ((got = ended ? 0 : mpe_input_read(in, &frame, &err)) < 0 ||
            mpe_encode_frame(enc, got ? &frame : NULL, &o, &err) < 0)
            goto fail;
        if (o.size && fwrite(o.data, 1, o.size, out) != o.size) {
            snprintf(err.msg, sizeof(err.msg), "%s: write error", argv[2]);
            goto fail;
        }
        while (mpe_encoder_pop_stats(enc, &fs))
            printf("picture %d %c: %llu bits, PSNR-Y %.2f dB\n", fs.display_index, fs.type,
                   (unsigned long long)fs.bits, fs.value[psnr_y]);
        ended = !got;
    } while (got > 0 || o.size || o.have_picture);
    status = fclose(out) != 0;
    out = NULL;
    if (status)
        snprintf(err.msg, sizeof(err.msg), "%s: write error", argv[2]);
fail:
    if (status)
        fprintf(stderr, "encode: %s\n", err.msg);
    if (out)
        fclose(out);
    mpe_encoder_close(enc);
    mpe_input_close(in);
    mpe_frame_free(&frame);
    return status;
}
