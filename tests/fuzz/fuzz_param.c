/* fuzz_param.c — mpe_param_parse (encoder/param.h) on option names and
 * values cut from the input, every real option name included (from
 * mpe_param_info, also spelled with '_' for '-', with a "no-" prefix, in
 * upper case).  After every call, whatever it returned:
 *   - the return value is 0, MPE_PARAM_BAD_NAME or MPE_PARAM_BAD_VALUE;
 *   - a rejected call left a message and left the parameters untouched;
 *   - every field is inside the range param.h documents for it;
 *   - an accepted value of a real option prints (mpe_param_value_string)
 *     as text that parses back to the same text, and to the same struct
 *     where the text is exact (integers, names, fractions).
 * A broken invariant aborts (the fuzzer's crash).
 *
 * Input: records until the data ends.  A record is a mode byte, then
 *   mode % 4 == 0 or 1: an option index byte (a real name, spelled by the
 *                       mode byte's bits 2..4), then the value;
 *   mode % 4 == 2:      a raw name (bytes up to a 0 byte), then the value;
 *   mode % 4 == 3:      a real name with no value (NULL).
 * A value is the bytes up to the next 0 byte or the end. */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "encoder/param.h"

#define MAX_TEXT 300

typedef struct FuzzIn {
    const uint8_t *p;
    size_t n;
} FuzzIn;

static void die(const char *what, const char *name, const char *value)
{
    fprintf(stderr, "fuzz_param: %s (name '%s', value '%s')\n", what, name ? name : "(null)",
            value ? value : "(null)");
    abort();
}

static int take_byte(FuzzIn *in)
{
    if (!in->n)
        return -1;
    in->n--;
    return *in->p++;
}

/* Bytes up to a 0 byte or the end, as a C string (truncated to MAX_TEXT). */
static void take_text(FuzzIn *in, char *out)
{
    size_t len = 0;
    int c;
    while ((c = take_byte(in)) > 0)
        if (len < MAX_TEXT)
            out[len++] = (char)c;
    out[len] = '\0';
}

static int option_count(void)
{
    int n = 0;
    while (mpe_param_info(n))
        n++;
    return n;
}

static int nul_terminated(const char *s, size_t size)
{
    return memchr(s, '\0', size) != NULL;
}

static int finite_nonneg(double v)
{
    return isfinite(v) && v >= 0;
}

/* The ranges of param.h's field comments. */
static void check_ranges(const MpeParam *p, const char *name, const char *value)
{
    if (p->format < MPE_FORMAT_AUTO || p->format > MPE_FORMAT_MPEG2)
        die("format out of range", name, value);
    if (p->qscale < 1 || p->qscale > 31)
        die("qscale outside 1..31", name, value);
    if (p->gop < 1 || p->gop > 1024)
        die("gop outside 1..1024", name, value);
    if (p->chunk_gops < -1 || p->chunk_gops > 1000000)
        die("chunk_gops neither -1 (auto) nor 0..1000000", name, value);
    if (p->search_range < -1 || p->search_range > 64)
        die("search range outside -1 (auto)..64", name, value);
    if (p->me != MPE_ME_HIER && p->me != MPE_ME_FULL)
        die("motion search neither hier nor full", name, value);
    if (p->merange != 0 && (p->merange < 4 || p->merange > 255))
        die("merange neither 0 (auto) nor 4..255", name, value);
    if (p->merange_adapt != 0 && p->merange_adapt != 1)
        die("merange_adapt neither 0 nor 1", name, value);
    if (p->trellis != 0 && p->trellis != 1)
        die("trellis neither 0 nor 1", name, value);
    if (p->trellis_lambda < 1 || p->trellis_lambda > 100000)
        die("lambda outside 1..100000", name, value);
    if (!(p->aq_strength > -1 && p->aq_strength < 4))
        die("aq strength outside (-1, 4)", name, value);
    if (!((p->fps_num == 0 && p->fps_den == 0) || (p->fps_num > 0 && p->fps_den > 0)))
        die("fps neither 0/0 nor positive", name, value);
    if (p->start_number < 0)
        die("negative start number", name, value);
    if (!nul_terminated(p->backend, sizeof(p->backend)) || !p->backend[0])
        die("backend not a non-empty string", name, value);
    if (p->device < -1)
        die("device below -1 (auto)", name, value);
    if (p->threads < 0)
        die("threads below 0 (auto)", name, value);
    if (p->dsp != MPE_DSP_AUTO && p->dsp != MPE_DSP_C)
        die("dsp not auto or c", name, value);
    if (p->read_threads < -1)
        die("read threads below -1 (auto)", name, value);
    if (!(p->iqa & 1u))
        die("psnr dropped from iqa (it is always measured)", name, value);
    if (!nul_terminated(p->iqa_backend, sizeof(p->iqa_backend)) ||
        (strcasecmp(p->iqa_backend, "auto") && strcasecmp(p->iqa_backend, "cpu") &&
         strcasecmp(p->iqa_backend, "cuda")))
        die("iqa backend not auto, cpu or cuda", name, value);
    if (!finite_nonneg(p->bitrate) || !finite_nonneg(p->maxrate))
        die("bit rate negative or not finite", name, value);
    if (p->vbv_size < 0)
        die("negative vbv size", name, value);
    if (!finite_nonneg(p->target_psnr) || !finite_nonneg(p->target_mad) ||
        !finite_nonneg(p->target_bliinds))
        die("quality target negative or not finite", name, value);
    if (p->max_trials < 0 || p->max_trials > 16)
        die("max trials outside auto (0) and 1..16", name, value);
    if (p->width || p->height)
        die("an option changed the frame size (not an option)", name, value);
}

/* The option a raw name spells exactly ('_' for '-' allowed), or -1. */
static int find_option(const char *name, int n_opts)
{
    for (int i = 0; i < n_opts; i++) {
        const char *a = name, *b = mpe_param_info(i)->name;
        while (*a && (*a == *b || (*a == '_' && *b == '-'))) {
            a++;
            b++;
        }
        if (!*a && !*b)
            return i;
    }
    return -1;
}

/* Exact texts: what %g or a decimal fraction cannot lose. */
static int exact_text(const char *s)
{
    return !strpbrk(s, ".eE");
}

/* One call with every invariant checked; opt: the real option's index or -1. */
static void parse_checked(MpeParam *p, int opt, const char *name, const char *value)
{
    MpeParam before = *p;
    MpeError err;
    int ret;

    memset(&err, 0, sizeof(err));
    ret = mpe_param_parse(p, name, value, &err);
    if (ret != 0 && ret != MPE_PARAM_BAD_NAME && ret != MPE_PARAM_BAD_VALUE)
        die("return value not 0, BAD_NAME or BAD_VALUE", name, value);
    if (ret != 0) {
        if (!err.msg[0] || !nul_terminated(err.msg, sizeof(err.msg)))
            die("rejected without a message", name, value);
        if (memcmp(&before, p, sizeof(*p)))
            die("a rejected value changed the parameters", name, value);
    }
    if (opt >= 0 && ret == MPE_PARAM_BAD_NAME)
        die("a real option name was not recognised", name, value);
    check_ranges(p, name, value);
    if (ret != 0 || opt < 0)
        return;

    /* accepted: its text form must be accepted back, and be stable */
    char text[256], again[256];
    MpeParam q = *p;
    mpe_param_value_string(p, opt, text, sizeof(text));
    memset(&err, 0, sizeof(err));
    if (mpe_param_parse(&q, mpe_param_info(opt)->name, text, &err) != 0) {
        fprintf(stderr, "fuzz_param: printed value '%s' rejected: %s\n", text, err.msg);
        die("an accepted value does not print as an accepted value", name, value);
    }
    mpe_param_value_string(&q, opt, again, sizeof(again));
    if (strcmp(text, again))
        die("printing is not stable across a re-parse", name, value);
    if (exact_text(text) && memcmp(&q, p, sizeof(q)))
        die("an exactly printed value parses back to different parameters", name, value);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzIn in = { data, size };
    const int n_opts = option_count();
    MpeParam p;
    char name[MAX_TEXT + 8], value[MAX_TEXT + 1];
    int mode;

    if (n_opts <= 0)
        die("mpe_param_info lists no options", NULL, NULL);
    mpe_param_default(&p);
    check_ranges(&p, "(defaults)", NULL);
    /* each default's text goes through the parser too (bit rate 0 prints as
     * "none", which need not be accepted: only accepted values are checked) */
    for (int i = 0; i < n_opts; i++) {
        mpe_param_value_string(&p, i, value, sizeof(value));
        parse_checked(&p, i, mpe_param_info(i)->name, value);
    }

    while ((mode = take_byte(&in)) >= 0) {
        int opt = -1;
        if ((mode & 3) == 2) {
            take_text(&in, name);
            opt = find_option(name, n_opts);
        } else {
            int idx = take_byte(&in);
            if (idx < 0)
                break;
            opt = idx % n_opts;
            const char *real = mpe_param_info(opt)->name;
            snprintf(name, sizeof(name), "%s%s", mode & 4 ? "no-" : "", real);
            if (mode & 8)
                for (char *c = name; *c; c++)
                    *c = *c == '-' ? '_' : *c;
            if (mode & 16)
                for (char *c = name; *c; c++)
                    *c = (char)toupper((unsigned char)*c);
            /* only the plain and the '_' spellings must be recognised */
            if (mode & (4 | 16))
                opt = -1;
        }
        if ((mode & 3) == 3) {
            parse_checked(&p, -1, name, NULL);
            continue;
        }
        take_text(&in, value);
        parse_checked(&p, opt, name, value);
    }
    return 0;
}
