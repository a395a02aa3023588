/* iqa_main.c — the mpegenc-iqa command: image quality metrics of image
 * files, a thin layer over iqa/.
 *
 *   mpegenc-iqa [options] bliinds IMAGE        -> score=S [features=F1,...,F24]
 *   mpegenc-iqa [options] mad REF DST          -> mad=M d_detect=D d_appear=A
 *
 * Exit status: 0 success, 1 runtime error (unreadable or unsuitable input,
 * an implementation that cannot run), 2 usage error.  Every error is one
 * line on stderr, "mpegenc-iqa: FILE: problem".
 *
 * Inputs become one 8-bit plane:
 *  - PNG, read here with libpng rather than input/input.h because the
 *    metrics accept sizes that reader refuses (BLIINDS-II from 4x4, anything
 *    above 4095) and because a 16-bit RGB image should be rounded to 8 bits
 *    once, after the luma sum, not per channel before it.  Gray is taken as
 *    is; colour becomes luma with MATLAB rgb2gray's weights (BT.601,
 *    0.298936021293775 R + 0.587043074451121 G + 0.114020904255103 B),
 *    which keeps gray exact and is what users of the original MATLAB code
 *    feed it (the original itself reads the first channel, SPEC §2); alpha
 *    is ignored; 16-bit samples are scaled by 255/65535 and rounded.
 *  - Y4M (.y4m, or - for stdin) through input/input.h: the Y plane of
 *    frame --frame N, as stored for bliinds; for mad expanded from studio
 *    range (16..235) to 0..255, the display range MAD's lightness model
 *    assumes (iqa/mad.h).
 *
 * A new subcommand is one run_* function and one line in `commands`. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/common.h"
#include "common/picture.h"
#include "encoder/encoder.h"
#include "encoder/checker.h"
#include "input/input.h"
#include "iqa/bliinds.h"
#include "iqa/mad.h"
#include "iqa/metric.h"

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

typedef struct IqaCli {
    const char *impl;       /* --impl: cpu, cuda, auto */
    int features;           /* --features */
    int frame;              /* --frame */
    int threads;            /* --threads */
    const char *cmd;
    const char *args[2];    /* the metric's file arguments */
} IqaCli;

/* One 8-bit plane, rows width bytes apart. */
typedef struct Plane {
    int width, height;
    uint8_t *data;
} Plane;

static int fail_runtime(const char *msg)
{
    fprintf(stderr, "mpegenc-iqa: %s\n", msg);
    return EXIT_RUNTIME;
}

/* A library message about an image, which names no file itself. */
static int fail_image(const char *path, const char *msg)
{
    fprintf(stderr, "mpegenc-iqa: %s: %s\n", path, msg);
    return EXIT_RUNTIME;
}

/* ---- PNG ------------------------------------------------------------------ */

/* libpng reports errors through png_on_error, which longjmps back into
 * png_decode; everything the error path needs lives here, owned by the
 * caller of png_decode, never in png_decode's automatic variables. */
typedef struct PngRead {
    FILE *f;
    png_structp png;
    png_infop info;
    uint8_t *pixels;
    png_bytep *rows;
    int width, height, channels, bytes;   /* bytes per sample: 1 or 2 */
    char msg[256];
} PngRead;

static void png_on_error(png_structp png, png_const_charp msg)
{
    PngRead *r = png_get_error_ptr(png);
    snprintf(r->msg, sizeof(r->msg), "corrupt PNG: %s", msg);
    png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

static int png_decode(PngRead *r)
{
    if (setjmp(png_jmpbuf(r->png)))
        return -1;
    png_init_io(r->png, r->f);
    png_set_sig_bytes(r->png, 8);
    png_read_info(r->png, r->info);
    int type = png_get_color_type(r->png, r->info);
    if (type == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(r->png);
    if (type == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(r->png, r->info) < 8)
        png_set_expand_gray_1_2_4_to_8(r->png);
    png_set_interlace_handling(r->png);
    png_read_update_info(r->png, r->info);
    r->width = (int)png_get_image_width(r->png, r->info);
    r->height = (int)png_get_image_height(r->png, r->info);
    r->channels = png_get_channels(r->png, r->info);
    r->bytes = png_get_bit_depth(r->png, r->info) == 16 ? 2 : 1;

    size_t row = png_get_rowbytes(r->png, r->info);
    if (row != (size_t)r->width * r->channels * r->bytes || r->width <= 0 || r->height <= 0 ||
        (size_t)r->height > SIZE_MAX / row) {
        snprintf(r->msg, sizeof(r->msg), "unsupported PNG layout");
        return -1;
    }
    if (!(r->pixels = malloc(row * r->height)) ||
        !(r->rows = malloc((size_t)r->height * sizeof(*r->rows)))) {
        snprintf(r->msg, sizeof(r->msg), "out of memory for a %dx%d image", r->width, r->height);
        return -1;
    }
    for (int y = 0; y < r->height; y++)
        r->rows[y] = r->pixels + (size_t)y * row;
    png_read_image(r->png, r->rows);
    png_read_end(r->png, NULL);
    return 0;
}

static double png_sample(const uint8_t *p, int bytes)
{
    return bytes == 2 ? (double)(p[0] << 8 | p[1]) : (double)p[0];
}

/* Gray as is, colour through rgb2gray's weights; one rounding to 8 bits. */
static void png_to_luma(const PngRead *r, uint8_t *out)
{
    const double scale = r->bytes == 2 ? 255.0 / 65535.0 : 1.0;
    const int step = r->channels * r->bytes;
    for (int y = 0; y < r->height; y++) {
        const uint8_t *p = r->rows[y];
        for (int x = 0; x < r->width; x++, p += step) {
            double v = png_sample(p, r->bytes);
            if (r->channels >= 3)
                v = 0.298936021293775 * v + 0.587043074451121 * png_sample(p + r->bytes, r->bytes) +
                    0.114020904255103 * png_sample(p + 2 * r->bytes, r->bytes);
            v = floor(v * scale + 0.5);
            out[(size_t)y * r->width + x] = (uint8_t)(v > 255 ? 255 : v < 0 ? 0 : v);
        }
    }
}

static int load_png(Plane *out, const char *path, MpeError *err)
{
    PngRead r = { 0 };
    unsigned char sig[8];
    int ret = -EINVAL;

    if (!(r.f = fopen(path, "rb")))
        return mpe_error(err, -errno, "%s: cannot open: %s", path, strerror(errno));
    if (fread(sig, 1, 8, r.f) != 8 || png_sig_cmp(sig, 0, 8)) {
        ret = mpe_error(err, -EINVAL, "%s: not a PNG or Y4M file", path);
        goto done;
    }
    r.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &r, png_on_error, png_on_warning);
    if (!r.png || !(r.info = png_create_info_struct(r.png))) {
        ret = mpe_error(err, -ENOMEM, "%s: out of memory", path);
        goto done;
    }
    if (png_decode(&r) < 0) {
        ret = mpe_error(err, -EINVAL, "%s: %s", path, r.msg);
        goto done;
    }
    if (!(out->data = malloc((size_t)r.width * r.height))) {
        ret = mpe_error(err, -ENOMEM, "%s: out of memory for a %dx%d image", path, r.width,
                        r.height);
        goto done;
    }
    png_to_luma(&r, out->data);
    out->width = r.width;
    out->height = r.height;
    ret = 0;
done:
    if (r.png)
        png_destroy_read_struct(&r.png, r.info ? &r.info : NULL, NULL);
    free(r.rows);
    free(r.pixels);
    fclose(r.f);
    return ret;
}

/* ---- Y4M -------------------------------------------------------------- */

static int load_y4m(Plane *out, const char *path, int frame, int expand, MpeError *err)
{
    MpeInput *in = NULL;
    MpeFrame fr = { 0 };
    int ret, got = 0;

    if ((ret = mpe_input_open(&in, path, 0, err)) < 0)
        return ret;
    const MpeInputInfo *info = mpe_input_info(in);
    if ((ret = mpe_frame_alloc(&fr, info->format, info->width, info->height)) < 0) {
        ret = mpe_error(err, ret, "%s: out of memory", path);
        goto done;
    }
    for (; got <= frame; got++)
        if ((ret = mpe_input_read(in, &fr, err)) <= 0)
            break;
    if (ret < 0)
        goto done;
    if (ret == 0) {
        ret = mpe_error(err, -EINVAL, "%s: has %d frame%s, no frame %d", path, got,
                        got == 1 ? "" : "s", frame);
        goto done;
    }
    if (!(out->data = malloc((size_t)fr.width * fr.height))) {
        ret = mpe_error(err, -ENOMEM, "%s: out of memory", path);
        goto done;
    }
    out->width = fr.width;
    out->height = fr.height;
    if (expand)   /* the encoder's checker does the same */
        mpe_luma_to_full_range(out->data, fr.width, fr.data[0], fr.stride[0], fr.width, fr.height);
    else
        for (int y = 0; y < fr.height; y++)
            memcpy(out->data + (size_t)y * fr.width, fr.data[0] + (size_t)y * fr.stride[0],
                   (size_t)fr.width);
    ret = 0;
done:
    mpe_frame_free(&fr);
    mpe_input_close(in);
    return ret;
}

static int is_y4m(const char *path)
{
    size_t n = strlen(path);
    return !strcmp(path, "-") || (n > 4 && !strcasecmp(path + n - 4, ".y4m"));
}

/* expand: studio-range Y4M luma to display range (for mad). */
static int load_plane(Plane *out, const char *path, int frame, int expand, MpeError *err)
{
    out->data = NULL;
    if (is_y4m(path))
        return load_y4m(out, path, frame, expand, err);
    if (frame != 0)
        return mpe_error(err, -EINVAL, "%s: a PNG holds one frame; --frame %d asked", path, frame);
    return load_png(out, path, err);
}

/* ---- where a metric's number means nothing -------------------------------
 *
 * Both metrics compute a number for any input they accept (the original
 * MATLAB code does too), and the encoder relies on that.  But some inputs
 * are outside what the metric can judge, and a bare 0 or 99 there reads as
 * a confident verdict.  The score is still printed (it is what the original
 * would give) and the exit status stays 0, with one warning line on stderr
 * saying why the number is not a quality. */

static void warn_image(const char *path, const char *msg)
{
    fprintf(stderr, "mpegenc-iqa: warning: %s: %s\n", path, msg);
}

/* BLIINDS-II: a flat image (no DCT statistics: every block's AC energy is
 * 0, and the model answers its end of scale); an image whose third scale
 * (W/4 x H/4, SPEC §7) is smaller than one 5x5 DCT block, so that the
 * features describe the zero padding more than the picture; features the
 * LIVE-trained model never saw (bliinds_model_fit). */
static void bliinds_check(const char *path, const Plane *img, const BliindsScore *s)
{
    char msg[512];
    size_t n = (size_t)img->width * img->height, i = 1;
    double dmos, distance;

    while (i < n && img->data[i] == img->data[0])
        i++;
    bliinds_model_fit(s->features, &dmos, &distance);
    if (i == n) {
        snprintf(msg, sizeof(msg),
                 "the image is flat (every sample is %d): BLIINDS-II's DCT statistics are "
                 "undefined there, and %g is the model's end of scale, not a quality",
                 img->data[0], s->score);
    } else if (img->width / 4 < 5 || img->height / 4 < 5) {
        snprintf(msg, sizeof(msg),
                 "%dx%d is too small for BLIINDS-II: its third scale (%dx%d) is smaller than "
                 "one 5x5 DCT block (20x20 needed), so the score is not a quality",
                 img->width, img->height, img->width / 4, img->height / 4);
    } else if (dmos < 0.75 || dmos > 100.25 || distance > BLIINDS_TRAINING_DISTANCE_MAX) {
        snprintf(msg, sizeof(msg),
                 "the features lie outside what BLIINDS-II's model was trained on (unclamped "
                 "DMOS %.1f, scale 1..100; distance %.0f, LIVE training data within %.0f): "
                 "the score is an extrapolation, not a quality",
                 dmos, distance, BLIINDS_TRAINING_DISTANCE_MAX);
    } else {
        return;
    }
    warn_image(path, msg);
}

/* MAD = d_appear^(1-alpha) * d_detect^alpha (SPEC §5) is 0 when either
 * stage sees nothing, whatever the other says.  Between different images:
 * the detection stage sees nothing where every block of the reference is
 * darker than gray ~49 (filtered mean lightness below 0.5, §3.4), or where
 * the difference has no local contrast (a flat image against another flat
 * one), or where the images differ only in the 16-17 pixel border it crops
 * (§3.6); the appearance stage, whose log-Gabor subbands have no DC, sees
 * nothing in a uniform offset. */
static void mad_check(const char *path, const Plane *ref, const Plane *dst, const MadScore *s)
{
    char msg[512], why[256];
    size_t n = (size_t)ref->width * ref->height, i;
    int offset = dst->data[0] - ref->data[0], uniform = 1, brightest = 0;

    if (s->mad != 0.0 || !memcmp(ref->data, dst->data, n))
        return;
    for (i = 0; i < n; i++) {
        uniform &= dst->data[i] - ref->data[i] == offset;
        brightest = ref->data[i] > brightest ? ref->data[i] : brightest;
    }
    if (uniform)
        snprintf(why, sizeof(why), "they differ only by a uniform offset of %+d, which MAD does "
                 "not count as distortion", offset);
    else if (s->d_detect == 0.0 && brightest < 50)
        snprintf(why, sizeof(why), "the reference is dark (brightest sample %d), and MAD sees "
                 "no distortion in blocks darker than gray ~49", brightest);
    else if (s->d_detect == 0.0)
        snprintf(why, sizeof(why), "no block of the central %dx%d region shows a visible "
                 "difference", ref->width - 33, ref->height - 33);
    else
        snprintf(why, sizeof(why), "their log-Gabor subband statistics are the same");
    snprintf(msg, sizeof(msg), "MAD is 0 although the images differ (d_detect=%.4g, "
             "d_appear=%.4g): %s; MAD cannot rank this pair", s->d_detect, s->d_appear, why);
    warn_image(path, msg);
}

/* ---- subcommands ------------------------------------------------------- */

static int run_bliinds(const IqaCli *cli)
{
    const char *path = cli->args[0];
    BliindsOptions opt = { .threads = cli->threads };
    BliindsContext *ctx = NULL;
    BliindsScore s;
    MpeError err = { "" };
    Plane img = { 0 };
    int status = -1;   /* -1: fail with err.msg */
    const IqaMetric *row = iqa_metric_pick("bliinds", cli->impl, NULL, &err);
    const BliindsImpl *impl = row ? row->impl : NULL;

    if (!impl)
        return fail_runtime(err.msg);
    if (load_plane(&img, path, cli->frame, 0, &err) < 0)
        goto done;
    if (impl->open(&ctx, img.width, img.height, &opt, &err) < 0 ||
        impl->score(ctx, img.data, img.width, &s, &err) < 0) {
        status = fail_image(path, err.msg);
        goto done;
    }
    bliinds_check(path, &img, &s);
    printf("score=%.17g", s.score);
    if (cli->features)
        for (int i = 0; i < BLIINDS_NFEATURES; i++)
            printf("%s%.17g", i ? "," : " features=", s.features[i]);
    printf("\n");
    status = 0;
done:
    if (ctx)
        impl->close(ctx);
    free(img.data);
    return status < 0 ? fail_runtime(err.msg) : status;
}

static int run_mad(const IqaCli *cli)
{
    MadOptions opt = { .threads = cli->threads };
    MadContext *ctx = NULL;
    MadScore s;
    MpeError err = { "" };
    Plane ref = { 0 }, dst = { 0 };
    int status = -1;   /* -1: fail with err.msg */
    const IqaMetric *row = iqa_metric_pick("mad", cli->impl, NULL, &err);
    const MadImpl *impl = row ? row->impl : NULL;

    if (!impl)
        return fail_runtime(err.msg);
    if (load_plane(&ref, cli->args[0], cli->frame, 1, &err) < 0 ||
        load_plane(&dst, cli->args[1], cli->frame, 1, &err) < 0)
        goto done;
    if (dst.width != ref.width || dst.height != ref.height) {
        fprintf(stderr, "mpegenc-iqa: %s: size %dx%d differs from %s's %dx%d\n", cli->args[1],
                dst.width, dst.height, cli->args[0], ref.width, ref.height);
        status = EXIT_RUNTIME;
        goto done;
    }
    if (impl->open(&ctx, ref.width, ref.height, &opt, &err) < 0 ||
        mad_score_pair(impl, ctx, ref.data, dst.data, ref.width, &s, &err) < 0) {
        status = fail_image(cli->args[1], err.msg);
        goto done;
    }
    mad_check(cli->args[1], &ref, &dst, &s);
    printf("mad=%.17g d_detect=%.17g d_appear=%.17g\n", s.mad, s.d_detect, s.d_appear);
    status = 0;
done:
    if (ctx)
        impl->close(ctx);
    free(ref.data);
    free(dst.data);
    return status < 0 ? fail_runtime(err.msg) : status;
}

typedef struct IqaCommand {
    const char *name;
    int nargs;
    const char *args;    /* for the usage line */
    int (*run)(const IqaCli *cli);
} IqaCommand;

static const IqaCommand commands[] = {
    { "bliinds", 1, "IMAGE", run_bliinds },
    { "mad", 2, "REFERENCE DISTORTED", run_mad },
};

#define NCOMMANDS ((int)(sizeof(commands) / sizeof(commands[0])))

/* ---- command line ------------------------------------------------------ */

static void print_help(void)
{
    printf("mpegenc-iqa %s: image quality metrics of image files\n\nusage:", MPE_VERSION);
    for (int i = 0; i < NCOMMANDS; i++)
        printf("%s mpegenc-iqa [options] %s %s\n", i ? "      " : "", commands[i].name,
               commands[i].args);
    printf("\n"
           "  bliinds IMAGE      BLIINDS-II, no reference: prints score=S, a DMOS-like value\n"
           "                     0..99 in steps of 0.5 (higher is worse)\n"
           "  mad REF DST        MAD, full reference: prints mad=M d_detect=D d_appear=A\n"
           "                     (higher is worse; identical images give 0)\n\n"
           "Images: PNG (8/16-bit gray, RGB, with or without alpha, palette; colour becomes\n"
           "luma 0.2989 R + 0.5870 G + 0.1140 B, as MATLAB's rgb2gray, rounded to 8 bits)\n"
           "or Y4M (4:2:0 8-bit, - for stdin): its Y plane (for mad expanded from 16..235\n"
           "to 0..255).\n\n"
           "  --features         bliinds: the 24 features too, on the same line\n"
           "                     (features=F1,...,F24, full precision)\n"
           "  --impl NAME        cpu, cuda or auto (default: auto, cuda when it can run)\n"
           "  --frame N          Y4M: use frame N, 0 = the first (default: 0)\n"
           "  --threads N        CPU threads, 0 = all cores (default: 0)\n"
           "      --version      print the version\n"
           "  -h, --help         this help\n\n"
           "Exit status: 0 success, 1 bad input or failure, 2 usage error.\n");
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "mpegenc-iqa: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see --help)\n");
    return EXIT_USAGE;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

/* Returns -1 to go on, else an exit status. */
static int parse_args(IqaCli *cli, int argc, char **argv)
{
    int options_done = 0, npos = 0;
    const char *pos[3];

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *value = NULL;
        char name[32];

        if (options_done || a[0] != '-' || !a[1]) {
            if (npos == 3)
                return usage_error("unexpected argument '%s'", a);
            pos[npos++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            options_done = 1;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            print_help();
            return 0;
        }
        if (!strcmp(a, "--version")) {
            printf("mpegenc-iqa %s\n", MPE_VERSION);
            return 0;
        }
        if (!strcmp(a, "--features")) {
            cli->features = 1;
            continue;
        }
        const char *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        if (a[1] != '-' || len >= sizeof(name))
            return usage_error("unknown option '%s'", a);
        memcpy(name, a, len);
        name[len] = '\0';
        if (strcmp(name, "--impl") && strcmp(name, "--frame") && strcmp(name, "--threads"))
            return usage_error("unknown option '%s'", a);
        if (eq)
            value = eq + 1;
        else if (i + 1 < argc)
            value = argv[++i];
        else
            return usage_error("option '%s' needs a value", a);
        if (!strcmp(name, "--impl")) {
            if (strcmp(value, "cpu") && strcmp(value, "cuda") && strcmp(value, "auto"))
                return usage_error("--impl '%s': expected cpu, cuda or auto", value);
            cli->impl = value;
        } else if (!strcmp(name, "--frame")) {
            if (parse_int(value, 0, INT_MAX, &cli->frame) < 0)
                return usage_error("--frame '%s': expected a frame number >= 0", value);
        } else if (parse_int(value, 0, 4096, &cli->threads) < 0) {
            return usage_error("--threads '%s': expected 0..4096", value);
        }
    }
    if (npos == 0)
        return usage_error("%s", "no metric given: bliinds IMAGE or mad REF DST");
    cli->cmd = pos[0];
    for (int c = 0; c < NCOMMANDS; c++) {
        if (strcmp(pos[0], commands[c].name))
            continue;
        if (npos - 1 != commands[c].nargs) {
            fprintf(stderr, "mpegenc-iqa: %s takes %s (see --help)\n", commands[c].name,
                    commands[c].args);
            return EXIT_USAGE;
        }
        for (int k = 1; k < npos; k++)
            cli->args[k - 1] = pos[k];
        return -1;
    }
    return usage_error("unknown metric '%s' (bliinds, mad)", pos[0]);
}

int main(int argc, char **argv)
{
    IqaCli cli = { .impl = "auto" };
    int status = parse_args(&cli, argc, argv);
    if (status >= 0)
        return status;
    for (int c = 0; c < NCOMMANDS; c++)
        if (!strcmp(cli.cmd, commands[c].name))
            status = commands[c].run(&cli);
    if (status == 0 && (fflush(stdout) || ferror(stdout)))
        return fail_runtime("<stdout>: write error");
    return status;
}
