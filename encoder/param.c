#include "param.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>

#include "common/cpu.h"
#include "dsp/quant.h"
#include "iqa/metric.h"

/* OPT_AUTO_INT: an integer in min..max or "auto", stored as auto_value;
 * OPT_AUTO_DOUBLE: a number between min and max or "auto", stored as 0
 * (outside its range). */
typedef enum {
    OPT_INT, OPT_FORMAT, OPT_RATE, OPT_STRING, OPT_AUTO_INT, OPT_DSP, OPT_IQA,
    OPT_BITRATE, OPT_DOUBLE, OPT_IQA_BACKEND, OPT_CPU_MASK, OPT_ME,
    OPT_KEYWORD, OPT_CQM, OPT_AUTO_DOUBLE,
} OptType;

typedef struct OptDesc {
    MpeParamInfo info;
    OptType type;
    size_t offset;      /* of the (first) int / char[] field */
    int min, max;       /* OPT_INT, OPT_AUTO_INT, OPT_DOUBLE (exclusive bounds) */
    int auto_value;     /* OPT_AUTO_INT */
    const char *const *keywords;   /* OPT_KEYWORD: value i's name (NULL-terminated); "auto" is -1 */
} OptDesc;

static const char *const scan_names[] = { "zigzag", "alternate", NULL };
static const char *const qscale_type_names[] = { "linear", "nonlinear", NULL };
static const char *const cqm_names[] = { "mpeg", "flat", "ramp", NULL };
static const char *const aq_mode_names[] = { "variance", "mad", NULL };   /* MpeAqMode order */

#define OFF(f) offsetof(MpeParam, f)

static const OptDesc options[] = {
    { { "format", "FMT", "mpeg1 or mpeg2 (auto: mpeg1 for a .m1v output, else mpeg2)" },
      OPT_FORMAT, OFF(format), 0, 0, 0, NULL },
    { { "q", "N", "quantiser scale 1..31 (lower is better quality, more bits)" },
      OPT_INT, OFF(qscale), 1, 31, 0, NULL },
    { { "gop", "N", "most pictures per closed GOP; the first of each is an I picture" },
      OPT_INT, OFF(gop), 1, 1024, 0, NULL },
    { { "scenecut", "T", "scene cuts start a GOP (an I picture): a frame whose histogram of 8x8 "
                         "luma block means differs from the previous frame's in more than T % "
                         "of the blocks, 0..100; 0: never" },
      OPT_INT, OFF(scenecut), 0, 100, 0, NULL },
    { { "bframes", "N", "B pictures between I and P pictures, 0..4, at most N in a row with "
                         "--b-adapt 1 (each GOP ends on a P: GOPs stay closed); auto: 3 (1 with "
                         "--b-adapt 0)" },
      OPT_AUTO_INT, OFF(bframes), 0, MPE_MAX_BFRAMES, -1, NULL },
    { { "b-adapt", "N", "1: each run of B pictures as long as the front end's motion-search and "
                        "intra costs say it pays, 0..--bframes; 0: always --bframes; auto: 1" },
      OPT_AUTO_INT, OFF(b_adapt), 0, 1, -1, NULL },
    { { "pb-ratio", "X", "a B picture's quantiser is X times a P picture's (--q: rounded, and "
                          "with --b-adapt 1 scaled toward 1 where its references predict less "
                          "than half of it, as with grain; --bitrate: the plan's ratio); above 0, "
                          "below 4" },
      OPT_DOUBLE, OFF(pb_ratio), 0, 4, 0, NULL },
    { { "ip-ratio", "X", "an I picture's quantiser is a P picture's divided by X (--q: rounded; "
                          "--bitrate: the plan's ratio); above 0, below 4; auto: under --q with "
                          "--b-adapt 1, 1 to 2 as far as the pictures up to the next anchor keep "
                          "the I picture's content (2: a still, 1: less than 93 % kept per "
                          "frame), else 1" },
      OPT_AUTO_DOUBLE, OFF(ip_ratio), 0, 4, 0, NULL },
    { { "chunk-gops", "N", "GOPs per chunk: the encode restarts its rate control at every chunk, "
                           "so chunks can be coded apart (mpegenc-mpi) into the same stream; "
                           "0: one chunk; auto: 2, or one chunk with --bitrate (mpegenc-mpi: 2)" },
      OPT_AUTO_INT, OFF(chunk_gops), 0, 1000000, -1, NULL },
    { { "me", "KIND", "motion search: hier (1/4 and 1/2 resolution over +-merange, then an "
                      "exhaustive +-search window around the best candidate) or full (exhaustive "
                      "+-search around zero)" },
      OPT_ME, OFF(me), 0, 0, 0, NULL },
    { { "merange", "R", "hier: vectors up to +-R full pels, 4..255 (auto: 127; MPEG-2 allows at "
                        "most 127: Main profile's vertical f_code limit, 5)" },
      OPT_AUTO_INT, OFF(merange), 4, 255, 0, NULL },
    { { "merange-adapt", "N", "hier: 1: each search reaches as far as the motion its reference "
                              "picture's own vectors show, scaled to the distance, with a margin "
                              "(a search against an I picture, or one whose reference's vectors "
                              "came near their reach, reaches --merange); 0: every search "
                              "reaches --merange" },
      OPT_INT, OFF(merange_adapt), 0, 1, 0, NULL },
    { { "search", "R", "full-pel exhaustive search window +-R pixels, 0..64 (auto: 16 for --me full, "
                       "4 around the best candidate for --me hier)" },
      OPT_AUTO_INT, OFF(search_range), 0, 64, -1, NULL },
    { { "trellis", "N", "1: choose each block's levels for the fewest bits at their distortion "
                        "(trellis quantisation over the real VLC costs); 0: nearest levels" },
      OPT_INT, OFF(trellis), 0, 1, 0, NULL },
    { { "intra-vlc", "N|auto", "MPEG-2 intra_vlc_format: 0 codes intra blocks with Table B.14 (as "
                          "MPEG-1), 1 with Table B.15; auto: each picture the table that would "
                          "have coded the last one of its kind (I, or P/B) in fewer bits (a "
                          "chunk's first I picture under --q: the table a sample of its levels "
                          "codes in fewer bits; else the first: B.14)" },
      OPT_AUTO_INT, OFF(intra_vlc), 0, 1, -1, NULL },
    { { "scan", "KIND", "MPEG-2 coefficient order: zigzag or alternate (Figure 7-3)" },
      OPT_KEYWORD, OFF(alt_scan), 0, 0, 0, scan_names },
    { { "dc-precision", "BITS", "MPEG-2 intra DC precision, 8..10 bits (Main profile's)" },
      OPT_AUTO_INT, OFF(dc_precision), 8, 10, -1, NULL },
    { { "qscale-type", "KIND", "MPEG-2 q_scale_type: linear (quantiser_scale 2..62) or nonlinear "
                               "(Table 7-6, up to 112); auto: nonlinear under a rate or quality "
                               "target, else linear" },
      OPT_KEYWORD, OFF(qscale_type), 0, 0, 0, qscale_type_names },
    { { "cqm", "M", "quantiser matrices: mpeg (the standards' defaults), flat (16), ramp (intra "
                    "16..24 rising with frequency, non-intra 16), or a file (x264's cqm format: "
                    "INTRA8X8_LUMA = and INTER8X8_LUMA = , 64 values each in raster order; the "
                    "intra DC entry 8); auto: ramp for MPEG-2, mpeg for MPEG-1 and under "
                    "--target-mad or --target-bliinds" },
      OPT_CQM, OFF(cqm), 0, 0, 0, cqm_names },
    { { "aq-strength", "S", "adaptive quantisation: each macroblock's quantiser times "
                            "2^(S/6 (log2 of its luma variance - the picture's mean of those)), "
                            "coded with the macroblock quant flag; 0: off" },
      OPT_DOUBLE, OFF(aq_strength), -1, 4, 0, NULL },
    { { "aq-mode", "MODE", "what --aq-strength adapts to: variance (the luma's) or mad (MAD's "
                           "contrast masking of the source: coarser where its detection stage "
                           "says distortion is masked, finer where it shows); auto: variance" },
      OPT_KEYWORD, OFF(aq_mode), 0, 0, 0, aq_mode_names },
    { { "lambda", "C", "rate-distortion choices (the trellis) trade one bit for lambda = C / 1000 * q^2 "
                       "of squared DCT error" },
      OPT_INT, OFF(trellis_lambda), 1, 100000, 0, NULL },
    { { "fps", "RATE", "frame rate: 25, 29.97, 30000/1001 ... (auto: the Y4M header's, else 25)" },
      OPT_RATE, OFF(fps_num), 0, 0, 0, NULL },
    { { "start", "N", "first frame number of a printf-pattern PNG sequence" },
      OPT_INT, OFF(start_number), 0, 1000000000, 0, NULL },
    { { "seek", "N", "skip the first N input frames (PNG files are not read, a Y4M file is seeked)" },
      OPT_INT, OFF(seek), 0, 1000000000, 0, NULL },
    { { "frames", "N", "encode at most N frames; 0: all" },
      OPT_INT, OFF(frames), 0, 1000000000, 0, NULL },
    { { "backend", "NAME", "front end: auto, cpu, opencl (see --list-backends)" },
      OPT_STRING, OFF(backend), 0, 0, 0, NULL },
    { { "device", "N", "device index for a GPU backend (auto: its first GPU)" },
      OPT_AUTO_INT, OFF(device), 0, 63, -1, NULL },
    { { "threads", "N", "CPU threads of the run, shared by slice coding, the cpu front end, "
                        "the C metrics and PNG decoding; auto: all online cores" },
      OPT_AUTO_INT, OFF(threads), 1, 256, 0, NULL },
    { { "read-threads", "N", "PNG frames decoded ahead at once, on the --threads threads "
                             "(Y4M: one reader); 0: none; auto: as many as --threads, within 1 GiB of frames" },
      OPT_AUTO_INT, OFF(read_threads), 0, 64, -1, NULL },
    { { "dsp", "KIND", "primitives: auto (fastest on this CPU) or c (the C references: "
                       "slower, identical stream)" },
      OPT_DSP, OFF(dsp), 0, 0, 0, NULL },
    { { "cpu-mask", "HEX", "optimised primitives allowed, as MPE_CPU_* bits ANDed with the CPU's: "
                           "1 portable-C speed-ups, 2 SSE2, 4 AVX2, 8 AVX-512 (0 is --dsp c)" },
      OPT_CPU_MASK, OFF(cpu_mask), 0, 0, 0, NULL },
    { { "iqa", "LIST", "quality measures scored on every reconstructed picture, comma-separated: "
                       "psnr, ssim, mad, bliinds, all (psnr is always measured)" },
      OPT_IQA, OFF(iqa), 0, 0, 0, NULL },
    { { "iqa-backend", "NAME", "where MAD and BLIINDS-II run: auto (the GPU when there is one), "
                               "cpu, cuda" },
      OPT_IQA_BACKEND, OFF(iqa_backend), 0, 0, 0, NULL },
    { { "bitrate", "RATE", "target bit rate, e.g. 20M, 1500k (bit/s); with a quality target, a cap" },
      OPT_BITRATE, OFF(bitrate), 0, 0, 0, NULL },
    { { "maxrate", "RATE", "peak bit rate of a variable-rate stream (default: --bitrate, constant rate)" },
      OPT_BITRATE, OFF(maxrate), 0, 0, 0, NULL },
    { { "vbv-size", "KBIT", "VBV buffer size in kbit (default: the level's maximum)" },
      OPT_INT, OFF(vbv_size), 1, 1000000, 0, NULL },
    { { "target-psnr", "DB", "per-picture quality target: PSNR-Y in dB (fewest bits that meet it)" },
      OPT_DOUBLE, OFF(target_psnr), 0, 100, 0, NULL },
    { { "target-mad", "X", "per-picture quality target: MAD index (lower is better)" },
      OPT_DOUBLE, OFF(target_mad), 0, 1000, 0, NULL },
    { { "target-bliinds", "X", "per-picture quality target: BLIINDS-II score (lower is better)" },
      OPT_DOUBLE, OFF(target_bliinds), 0, 100, 0, NULL },
    { { "max-trials", "N", "codings (and mix evaluations) of one picture a quality or bitrate "
                           "target may try; auto: 8 for MAD and BLIINDS-II targets, else 4" },
      OPT_AUTO_INT, OFF(max_trials), 1, 16, 0, NULL },
    { { "strict", "N", "1: refuse a frame rate MPEG-1 or MPEG-2 Main profile has no frame_rate_code "
                       "for (e.g. 12, 15); 0: allow it (MPEG-2: frame_rate_extension, not Main "
                       "profile; MPEG-1: the nearest standard rate)" },
      OPT_INT, OFF(strict), 0, 1, 0, NULL },
};

#define N_OPTIONS ((int)(sizeof(options) / sizeof(options[0])))

void mpe_param_default(MpeParam *p)
{
    memset(p, 0, sizeof(*p));
    p->format = MPE_FORMAT_AUTO;
    p->qscale = 4;
    p->gop = 12;
    p->scenecut = 40;
    p->bframes = -1;   /* auto: mpe_param_bframes */
    p->b_adapt = -1;   /* auto: mpe_param_b_adapt */
    p->pb_ratio = 1.3;
    p->ip_ratio = 0;        /* auto */
    p->chunk_gops = -1;     /* auto */
    p->search_range = -1;   /* auto */
    /* hier: finds motion far outside a +-16 window (all three backends run
     * it, bit for bit); --me full keeps the exhaustive search */
    p->me = MPE_ME_HIER;
    p->merange = 0;         /* auto */
    p->merange_adapt = 1;
    p->trellis = 1;
    p->trellis_lambda = 640;
    p->intra_vlc = -1;      /* auto; measured (make rd): 1 loses 3-11 % on the pans, auto wins */
    p->alt_scan = -1;
    p->dc_precision = -1;
    p->qscale_type = -1;
    p->cqm = MPE_CQM_AUTO;
    p->fps_num = 0;
    p->fps_den = 0;
    p->start_number = 0;
    p->seek = 0;
    p->frames = 0;
    snprintf(p->backend, sizeof(p->backend), "auto");
    p->device = -1;
    p->threads = 0;
    p->read_threads = -1;
    p->cpu_mask = MPE_CPU_ALL;
    p->iqa = MPE_IQA_PSNR;
    snprintf(p->iqa_backend, sizeof(p->iqa_backend), "auto");
    p->max_trials = 0;   /* auto */
    p->strict = 1;
}

unsigned mpe_param_target(const MpeParam *p, double *value)
{
    *value = p->target_psnr > 0 ? p->target_psnr : p->target_mad > 0 ? p->target_mad
                                                                       : p->target_bliinds;
    return p->target_psnr > 0 ? MPE_IQA_PSNR : p->target_mad > 0 ? MPE_IQA_MAD
                                             : p->target_bliinds > 0 ? MPE_IQA_BLIINDS : 0;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || v != v)
        return -1;
    *out = v;
    return 0;
}

/* "20M", "1500k", "2.5m", "800000": bit/s, 1 kbit/s .. 1 Gbit/s */
static int parse_bitrate(const char *s, double *out)
{
    char buf[64], *end;
    size_t len = strlen(s);
    double mul = 1, v;

    if (!len || len >= sizeof(buf))
        return -1;
    memcpy(buf, s, len + 1);
    if (buf[len - 1] == 'k' || buf[len - 1] == 'K')
        mul = 1e3;
    else if (buf[len - 1] == 'm' || buf[len - 1] == 'M')
        mul = 1e6;
    if (mul != 1)
        buf[--len] = '\0';
    errno = 0;
    v = strtod(buf, &end);
    if (!len || *end || errno || !(v > 0))
        return -1;
    v *= mul;
    if (v < 1e3 || v > 1e9)
        return -1;
    *out = v;
    return 0;
}

/* "psnr,ssim", "all", "mad" ...: a set of registry family bits (MPE_IQA_*);
 * psnr is always in */
static int parse_iqa(const char *s, unsigned *out)
{
    const int nf = iqa_family_count();
    unsigned bits = MPE_IQA_PSNR;
    const char *p = s;

    if (!*s)
        return -1;
    while (*p) {
        size_t len = strcspn(p, ",");
        int f;
        if (len == 3 && !strncasecmp(p, "all", len)) {
            bits |= nf >= 32 ? ~0u : (1u << nf) - 1;
        } else {
            for (f = 0; f < nf; f++)
                if (strlen(iqa_family_name(f)) == len && !strncasecmp(p, iqa_family_name(f), len))
                    break;
            if (f == nf)
                return -1;
            bits |= 1u << f;
        }
        p += len;
        if (*p == ',' && *++p == '\0')
            return -1;
    }
    *out = bits;
    return 0;
}

/* "psnr, ssim, mad, bliinds": the --iqa names the registry knows. */
static void iqa_names(char *buf, size_t size)
{
    size_t pos = 0;
    buf[0] = '\0';
    for (int f = 0, nf = iqa_family_count(); f < nf && pos < size; f++)
        pos += (size_t)snprintf(buf + pos, size - pos, "%s%s", f ? ", " : "", iqa_family_name(f));
}

static int name_equal(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        char ca = *a == '_' ? '-' : *a, cb = *b == '_' ? '-' : *b;
        if (ca != cb)
            return 0;
    }
    return *a == *b;
}

static int parse_int(const char *s, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno)
        return -1;
    *out = v;
    return 0;
}

static long gcd(long a, long b)
{
    while (b) {
        long t = a % b;
        a = b;
        b = t;
    }
    return a;
}

int mpe_parse_rate(const char *s, int *num, int *den)
{
    const char *sep = strpbrk(s, "/:");
    long n, d;

    if (sep) {
        char buf[64];
        size_t len = (size_t)(sep - s);
        if (len >= sizeof(buf))
            return -1;
        memcpy(buf, s, len);
        buf[len] = '\0';
        if (parse_int(buf, &n) < 0 || parse_int(sep + 1, &d) < 0)
            return -1;
    } else {
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (!*s || *end || errno || !(v > 0))
            return -1;
        /* the NTSC family is what "29.97" means in practice */
        static const struct { double v; int n, d; } ntsc[] = {
            { 23.976, 24000, 1001 }, { 29.97, 30000, 1001 }, { 59.94, 60000, 1001 },
        };
        for (size_t i = 0; i < sizeof(ntsc) / sizeof(ntsc[0]); i++) {
            if (v > ntsc[i].v - 0.002 && v < ntsc[i].v + 0.002) {
                *num = ntsc[i].n;
                *den = ntsc[i].d;
                return 0;
            }
        }
        if (v > 1e6)
            return -1;
        n = (long)(v * 1000 + 0.5);
        d = 1000;
    }
    if (n <= 0 || d <= 0 || n > 1000000000L || d > 1000000000L)
        return -1;
    long g = gcd(n, d);
    n /= g;
    d /= g;
    if ((double)n / (double)d > 1000.0)
        return -1;
    *num = (int)n;
    *den = (int)d;
    return 0;
}

/* The matrices' names in x264's cqm files; the H.264-only ones are read
 * past (an x264 file then works), anything else is an error. */
static const char *const cqm_h264_keys[] = {
    "INTRA4X4_LUMA", "INTRA4X4_CHROMAU", "INTRA4X4_CHROMAV", "INTER4X4_LUMA", "INTER4X4_CHROMAU",
    "INTER4X4_CHROMAV", "INTRA8X8_CHROMAU", "INTRA8X8_CHROMAV", "INTER8X8_CHROMAU",
    "INTER8X8_CHROMAV", "INTRA4X4_CHROMA", "INTER4X4_CHROMA", "INTRA8X8_CHROMA",
    "INTER8X8_CHROMA", NULL,
};

/* The end of a matrix's values: exactly 64 unless it is one read past. */
static int cqm_close(const char *path, const char *key, int key_line, int n, int ours,
                     MpeError *err)
{
    if (ours && n != 64)
        return mpe_error(err, MPE_PARAM_BAD_VALUE, "--cqm %s:%d: %s has %d values, not 64",
                         path, key_line, key, n);
    return 0;
}

/* --cqm FILE: x264's cqm text (a name, '=', the values in raster order,
 * separated by commas or blanks; '#' starts a comment).  INTRA8X8_LUMA and
 * INTER8X8_LUMA are MPEG's intra and non-intra matrices (chroma shares them
 * in 4:2:0); one that is absent keeps the standard's default. */
static int read_cqm_file(MpeParam *p, const char *path, MpeError *err)
{
    if (strlen(path) >= sizeof(p->cqm_file))
        return mpe_error(err, MPE_PARAM_BAD_VALUE, "--cqm: file name longer than %d characters",
                         (int)sizeof(p->cqm_file) - 1);
    FILE *f = fopen(path, "r");
    if (!f)
        return mpe_error(err, MPE_PARAM_BAD_VALUE, "--cqm %s: %s (not mpeg, flat, auto or a "
                         "readable file)", path, strerror(errno));
    uint8_t intra[64], inter[64], *dst = NULL;
    char line[1024], key[64] = "";
    int line_no = 0, key_line = 0, n = 0, ours = 0, seen_intra = 0, seen_inter = 0, ret = 0;

    memcpy(intra, mpe_default_intra_matrix, 64);
    memcpy(inter, mpe_default_inter_matrix, 64);
    while (!ret && fgets(line, sizeof(line), f)) {
        line_no++;
        if (!strchr(line, '\n') && !feof(f)) {
            ret = mpe_error(err, MPE_PARAM_BAD_VALUE, "--cqm %s:%d: line longer than %d characters",
                            path, line_no, (int)sizeof(line) - 2);
            break;
        }
        line[strcspn(line, "#\r\n")] = '\0';
        char *save = NULL;
        for (char *tok = strtok_r(line, " \t,=", &save); tok && !ret;
             tok = strtok_r(NULL, " \t,=", &save)) {
            if (isalpha((unsigned char)tok[0])) {
                const int next = !strcmp(tok, "INTRA8X8_LUMA") ? 1 : !strcmp(tok, "INTER8X8_LUMA") ? 2 : 0;
                int known = next != 0;
                for (int k = 0; !known && cqm_h264_keys[k]; k++)
                    known = !strcmp(tok, cqm_h264_keys[k]);
                if (!known) {
                    ret = mpe_error(err, MPE_PARAM_BAD_VALUE, "--cqm %s:%d: '%.40s' is neither a "
                                    "matrix name (INTRA8X8_LUMA, INTER8X8_LUMA) nor a value 1..255",
                                    path, line_no, tok);
                    break;
                }
                if ((ret = cqm_close(path, key, key_line, n, ours, err)) < 0)
                    break;
                ours = next;
                if ((ours == 1 && seen_intra++) || (ours == 2 && seen_inter++))
                    ret = mpe_error(err, MPE_PARAM_BAD_VALUE, "--cqm %s:%d: %s given twice", path,
                                    line_no, tok);
                dst = ours == 1 ? intra : ours == 2 ? inter : NULL;
                snprintf(key, sizeof(key), "%s", tok);
                key_line = line_no;
                n = 0;
                continue;
            }
            long v;
            if (!key[0])
                ret = mpe_error(err, MPE_PARAM_BAD_VALUE, "--cqm %s:%d: '%.40s' before a matrix "
                                "name (INTRA8X8_LUMA =)", path, line_no, tok);
            else if (parse_int(tok, &v) < 0 || ((v < 1 || v > 255) && ours))
                ret = mpe_error(err, MPE_PARAM_BAD_VALUE, "--cqm %s:%d: '%.40s' is not a matrix "
                                "value 1..255", path, line_no, tok);
            else if (ours && n >= 64)
                ret = mpe_error(err, MPE_PARAM_BAD_VALUE, "--cqm %s:%d: %s has more than 64 values",
                                path, line_no, key);
            else if (ours == 1 && n == 0 && v != 8)
                ret = mpe_error(err, MPE_PARAM_BAD_VALUE, "--cqm %s:%d: the intra matrix's first "
                                "(DC) value is %ld; MPEG requires 8", path, line_no, v);
            else if (dst)
                dst[n] = (uint8_t)v;
            n++;
        }
    }
    if (!ret && ferror(f))
        ret = mpe_error(err, MPE_PARAM_BAD_VALUE, "--cqm %s: read error", path);
    if (!ret)
        ret = cqm_close(path, key, key_line, n, ours, err);
    if (!ret && !seen_intra && !seen_inter)
        ret = mpe_error(err, MPE_PARAM_BAD_VALUE, "--cqm %s: no INTRA8X8_LUMA or INTER8X8_LUMA "
                        "matrix", path);
    fclose(f);
    if (ret)
        return ret;
    memcpy(p->cqm_intra, intra, 64);
    memcpy(p->cqm_inter, inter, 64);
    snprintf(p->cqm_file, sizeof(p->cqm_file), "%s", path);
    p->cqm = MPE_CQM_FILE;
    return 0;
}

int mpe_param_parse(MpeParam *p, const char *name, const char *value, MpeError *err)
{
    const OptDesc *o = NULL;
    char *base = (char *)p;

    for (int i = 0; i < N_OPTIONS; i++)
        if (name_equal(name, options[i].info.name))
            o = &options[i];
    if (!o)
        return mpe_error(err, MPE_PARAM_BAD_NAME, "unknown option '--%s'", name);
    if (!value)
        return mpe_error(err, MPE_PARAM_BAD_VALUE, "option '--%s' needs a value", o->info.name);

    switch (o->type) {
    case OPT_INT: {
        long v;
        if (parse_int(value, &v) < 0 || v < o->min || v > o->max)
            return mpe_error(err, MPE_PARAM_BAD_VALUE, "--%s: '%s' is not an integer in %d..%d",
                             o->info.name, value, o->min, o->max);
        *(int *)(base + o->offset) = (int)v;
        return 0;
    }
    case OPT_FORMAT:
        if (!strcasecmp(value, "mpeg1") || !strcasecmp(value, "m1v"))
            p->format = MPE_FORMAT_MPEG1;
        else if (!strcasecmp(value, "mpeg2") || !strcasecmp(value, "m2v"))
            p->format = MPE_FORMAT_MPEG2;
        else if (!strcasecmp(value, "auto"))
            p->format = MPE_FORMAT_AUTO;
        else
            return mpe_error(err, MPE_PARAM_BAD_VALUE,
                             "--format: '%s' is not one of mpeg1, mpeg2, auto", value);
        return 0;
    case OPT_RATE:
        if (!strcasecmp(value, "auto")) {
            p->fps_num = p->fps_den = 0;
            return 0;
        }
        if (mpe_parse_rate(value, &p->fps_num, &p->fps_den) < 0)
            return mpe_error(err, MPE_PARAM_BAD_VALUE,
                             "--fps: '%s' is not a frame rate (e.g. 25, 29.97, 30000/1001)", value);
        return 0;
    case OPT_ME:
        if (!strcasecmp(value, "hier"))
            p->me = MPE_ME_HIER;
        else if (!strcasecmp(value, "full"))
            p->me = MPE_ME_FULL;
        else
            return mpe_error(err, MPE_PARAM_BAD_VALUE, "--me: '%s' is not one of hier, full", value);
        return 0;
    case OPT_DSP:
        if (!strcasecmp(value, "auto"))
            p->dsp = MPE_DSP_AUTO;
        else if (!strcasecmp(value, "c"))
            p->dsp = MPE_DSP_C;
        else
            return mpe_error(err, MPE_PARAM_BAD_VALUE, "--dsp: '%s' is not one of auto, c", value);
        return 0;
    case OPT_CPU_MASK: {
        char *end;
        unsigned long v;
        errno = 0;
        v = strtoul(value, &end, 16);
        if (!*value || *end || errno || v > 0xffff || value[0] == '-')
            return mpe_error(err, MPE_PARAM_BAD_VALUE,
                             "--cpu-mask: '%s' is not a hexadecimal mask (e.g. 0, 3, 0x7)", value);
        p->cpu_mask = (unsigned)v;
        return 0;
    }
    case OPT_AUTO_INT: {
        long v;
        if (!strcasecmp(value, "auto")) {
            *(int *)(base + o->offset) = o->auto_value;
            return 0;
        }
        if (parse_int(value, &v) < 0 || v < o->min || v > o->max)
            return mpe_error(err, MPE_PARAM_BAD_VALUE, "--%s: '%s' is not auto or an integer in %d..%d",
                             o->info.name, value, o->min, o->max);
        *(int *)(base + o->offset) = (int)v;
        return 0;
    }
    case OPT_IQA:
        if (parse_iqa(value, &p->iqa) < 0) {
            char names[256];
            iqa_names(names, sizeof(names));
            return mpe_error(err, MPE_PARAM_BAD_VALUE,
                             "--iqa: '%s' is not a comma-separated list of %s, all", value, names);
        }
        return 0;
    case OPT_IQA_BACKEND:
        if (strcasecmp(value, "auto") && strcasecmp(value, "cpu") && strcasecmp(value, "cuda"))
            return mpe_error(err, MPE_PARAM_BAD_VALUE,
                             "--iqa-backend: '%s' is not one of auto, cpu, cuda", value);
        snprintf(p->iqa_backend, sizeof(p->iqa_backend), "%s", value);
        return 0;
    case OPT_BITRATE:
        if (parse_bitrate(value, (double *)(base + o->offset)) < 0)
            return mpe_error(err, MPE_PARAM_BAD_VALUE,
                             "--%s: '%s' is not a bit rate from 1k to 1000M (e.g. 20M, 1500k)",
                             o->info.name, value);
        return 0;
    case OPT_AUTO_DOUBLE:
        if (!strcasecmp(value, "auto")) {
            *(double *)(base + o->offset) = 0;
            return 0;
        }
        /* fall through */
    case OPT_DOUBLE: {
        double v;
        if (parse_double(value, &v) < 0 || !(v > o->min) || !(v < o->max))
            return mpe_error(err, MPE_PARAM_BAD_VALUE, "--%s: '%s' is not a number above %d and below %d",
                             o->info.name, value, o->min, o->max);
        *(double *)(base + o->offset) = v;
        return 0;
    }
    case OPT_KEYWORD:
    case OPT_CQM: {
        int *field = (int *)(base + o->offset);
        if (!strcasecmp(value, "auto")) {
            *field = -1;
            return 0;
        }
        for (int k = 0; o->keywords[k]; k++) {
            if (!strcasecmp(value, o->keywords[k])) {
                *field = k;
                return 0;
            }
        }
        if (o->type == OPT_CQM)
            return read_cqm_file(p, value, err);
        return mpe_error(err, MPE_PARAM_BAD_VALUE, "--%s: '%s' is not one of auto, %s, %s",
                         o->info.name, value, o->keywords[0], o->keywords[1]);   /* two-word lists */
    }
    case OPT_STRING: {
        size_t len = strlen(value);
        if (!len || len >= sizeof(p->backend))
            return mpe_error(err, MPE_PARAM_BAD_VALUE, "--%s: bad value '%s'", o->info.name,
                             value);
        memcpy(base + o->offset, value, len + 1);
        return 0;
    }
    }
    return mpe_error(err, MPE_PARAM_BAD_NAME, "unknown option '--%s'", name);
}

const MpeParamInfo *mpe_param_info(int i)
{
    return i >= 0 && i < N_OPTIONS ? &options[i].info : NULL;
}

void mpe_param_value_string(const MpeParam *p, int i, char *buf, size_t size)
{
    const OptDesc *o = &options[i];
    const char *base = (const char *)p;

    switch (o->type) {
    case OPT_INT:
        snprintf(buf, size, "%d", *(const int *)(base + o->offset));
        break;
    case OPT_FORMAT:
        snprintf(buf, size, "%s", p->format == MPE_FORMAT_MPEG1   ? "mpeg1"
                                  : p->format == MPE_FORMAT_MPEG2 ? "mpeg2"
                                                                  : "auto");
        break;
    case OPT_RATE:
        if (p->fps_num)
            snprintf(buf, size, "%d/%d", p->fps_num, p->fps_den);
        else
            snprintf(buf, size, "auto");
        break;
    case OPT_STRING:
        snprintf(buf, size, "%s", base + o->offset);
        break;
    case OPT_ME:
        snprintf(buf, size, "%s", p->me == MPE_ME_FULL ? "full" : "hier");
        break;
    case OPT_DSP:
        snprintf(buf, size, "%s", p->dsp == MPE_DSP_C ? "c" : "auto");
        break;
    case OPT_CPU_MASK:
        snprintf(buf, size, "0x%x", p->cpu_mask);
        break;
    case OPT_IQA: {
        size_t pos = 0;
        buf[0] = '\0';
        for (int f = 0, nf = iqa_family_count(); f < nf; f++)
            if ((p->iqa >> f) & 1u && pos < size)
                pos += (size_t)snprintf(buf + pos, size - pos, "%s%s", pos ? "," : "",
                                        iqa_family_name(f));
        break;
    }
    case OPT_IQA_BACKEND:
        snprintf(buf, size, "%s", p->iqa_backend);
        break;
    case OPT_AUTO_DOUBLE:
        if (!(*(const double *)(base + o->offset) > 0)) {
            snprintf(buf, size, "auto");
            break;
        }
        /* fall through */
    case OPT_BITRATE:
    case OPT_DOUBLE: {
        double v = *(const double *)(base + o->offset);
        /* 0 is "none" where the option's range excludes it (a target
         * that is off), a number where it is a value (--aq-strength 0) */
        if (v > 0 || (o->type == OPT_DOUBLE && o->min < 0)) {
            /* the shortest text that reads back as v: plain %g rounds
             * 99.9999999 to "100", which --target-psnr then rejects (found
             * by tests/fuzz/fuzz_param.c) */
            for (int digits = 6; digits <= 17; digits++) {
                snprintf(buf, size, "%.*g", digits, v);
                if (strtod(buf, NULL) == v)
                    break;
            }
        } else
            snprintf(buf, size, "none");
        break;
    }
    case OPT_KEYWORD:
    case OPT_CQM: {
        const int v = *(const int *)(base + o->offset);
        snprintf(buf, size, "%s", v < 0 ? "auto" : o->type == OPT_CQM && v == MPE_CQM_FILE ? p->cqm_file
                                                                                            : o->keywords[v]);
        break;
    }
    case OPT_AUTO_INT:
        if (*(const int *)(base + o->offset) == o->auto_value)
            snprintf(buf, size, "auto");
        else
            snprintf(buf, size, "%d", *(const int *)(base + o->offset));
        break;
    }
}

int mpe_param_bframes(const MpeParam *p)
{
    if (p->bframes >= 0)
        return p->bframes;
    /* measured (make rd, and --bitrate at --q's rates): B pictures win in
     * every rate-control mode; runs of up to 3 placed by --b-adapt 1, one
     * in the fixed pattern */
    return mpe_param_b_adapt(p) ? MPE_BADAPT_MAX_AUTO : 1;
}

int mpe_param_b_adapt(const MpeParam *p)
{
    /* --bitrate's plan counts the B pictures the runs bring (ratecontrol.c) */
    return p->b_adapt >= 0 ? p->b_adapt : 1;
}

int mpe_param_chunk_gops(const MpeParam *p)
{
    if (p->chunk_gops >= 0)
        return p->chunk_gops;
    return p->bitrate > 0 ? 0 : MPE_CHUNK_GOPS_AUTO;
}

int mpe_param_check(const MpeParam *p, MpeError *err)
{
    int targets = (p->target_psnr > 0) + (p->target_mad > 0) + (p->target_bliinds > 0);
    if (targets > 1)
        return mpe_error(err, -EINVAL, "choose one quality target (--target-psnr, --target-mad "
                                       "or --target-bliinds)");
    if (p->maxrate > 0 && !(p->bitrate > 0))
        return mpe_error(err, -EINVAL, "--maxrate needs --bitrate");
    if (p->maxrate > 0 && p->maxrate < p->bitrate)
        return mpe_error(err, -EINVAL, "--maxrate %.0f is below --bitrate %.0f", p->maxrate,
                         p->bitrate);
    if (p->vbv_size > 0 && !(p->bitrate > 0))
        return mpe_error(err, -EINVAL, "--vbv-size needs --bitrate");
    if (p->format == MPE_FORMAT_MPEG1 && (p->intra_vlc > 0 || p->alt_scan > 0 ||
                                          p->dc_precision > 8 || p->qscale_type > 0))
        return mpe_error(err, -EINVAL, "--intra-vlc 1, --scan alternate, --dc-precision above 8 "
                                       "and --qscale-type nonlinear are MPEG-2 only");
    if (!(p->aq_strength >= 0))
        return mpe_error(err, -EINVAL, "--aq-strength %g is below 0 (0: off)", p->aq_strength);
    return 0;
}

unsigned mpe_param_cpu_flags(const MpeParam *p)
{
    return p->dsp == MPE_DSP_C ? 0 : mpe_cpu_flags() & p->cpu_mask;
}

/* --cqm ramp (the MPEG-2 default, measured with make rd: see README): an
 * intra matrix rising gently from 16 to 24 with u + v, 16 + round(8 (u + v)
 * / 14), far flatter than the standard's 16..83, which spends bits where
 * PSNR and SSIM gain most; the non-intra matrix stays the default 16. */
static const uint8_t ramp_intra[64] = {
     8, 17, 17, 18, 18, 19, 19, 20,
    17, 17, 18, 18, 19, 19, 20, 21,
    17, 18, 18, 19, 19, 20, 21, 21,
    18, 18, 19, 19, 20, 21, 21, 22,
    18, 19, 19, 20, 21, 21, 22, 22,
    19, 19, 20, 21, 21, 22, 22, 23,
    19, 20, 21, 21, 22, 22, 23, 23,
    20, 21, 21, 22, 22, 23, 23, 24,
};

/* 16 everywhere but the intra DC entry, which MPEG fixes at 8 */
static const uint8_t flat_intra[64] = {
     8, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
};

void mpe_param_mpeg2_switches(const MpeParam *p, int mpeg2, MpeCodingSwitches *sw)
{
    sw->intra_vlc = p->intra_vlc;   /* auto (-1): picture by picture (encoder.c) */
    sw->alt_scan = p->alt_scan >= 0 ? p->alt_scan : 0;
    sw->dc_precision = p->dc_precision >= 0 ? p->dc_precision : 8;
    sw->qscale_type = p->qscale_type;
    /* auto: ramp won PSNR-Y and SSIM on make rd but lost on MAD (README),
     * so a perceptual target keeps the standard's matrices */
    double target;
    const unsigned metric = mpe_param_target(p, &target);
    const int perceptual = metric == MPE_IQA_MAD || metric == MPE_IQA_BLIINDS;
    sw->cqm = p->cqm >= 0 ? p->cqm : mpeg2 && !perceptual ? MPE_CQM_RAMP : MPE_CQM_MPEG;
    if (!mpeg2) {
        sw->intra_vlc = sw->alt_scan = 0;
        sw->dc_precision = 8;
        sw->qscale_type = 0;
    }
}

void mpe_param_cqm_matrices(const MpeParam *p, int cqm, const uint8_t **intra,
                            const uint8_t **inter)
{
    *intra = cqm == MPE_CQM_FILE ? p->cqm_intra : cqm == MPE_CQM_FLAT ? flat_intra
           : cqm == MPE_CQM_RAMP ? ramp_intra : NULL;
    *inter = cqm == MPE_CQM_FILE ? p->cqm_inter : NULL;
}
