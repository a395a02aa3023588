/* input.c — frame sequence readers: PNG files and YUV4MPEG2.
 *
 * A PNG file is read whole into memory (capped at PNG_FILE_MAX) and decoded
 * by png_decode.c: a fast path for 8-bit gray/GA/RGB/RGBA, libpng's classic
 * API for every other layout.  Every sample is taken as stored: palette and
 * low-bit gray are expanded, alpha (including tRNS) is dropped, and 16-bit
 * samples are rounded with (v*255+32767)/65535.
 *
 * Reading ahead (mpe_input_start_ahead): one reader thread fills a ring of
 * frame buffers, frame i in slot i % depth: it claims every free slot and
 * runs their frames as one job on the thread pool (the caller's, shared with
 * the encoder, or the input's own).  PNG frames are independent, so several
 * are decoded at once, on the pool's threads as they have time; a Y4M
 * stream is sequential, so its job runs on the reader thread alone, in
 * order.  The reader thread itself stays: it sleeps while the ring is full,
 * and a Y4M reader may block on a pipe for as long as its writer likes,
 * which no pool thread may.  mpe_input_read takes
 * the frames in order and swaps buffers with the caller instead of copying.
 * A frame that fails keeps its message until it is its turn: the caller
 * sees exactly what the synchronous reader would have said, when it would
 * have said it, and no thread reads past an end or an error. */
#include "input/input.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "common/cpu.h"
#include "common/timer.h"
#include "input/png_decode.h"

#define MIN_DIM 16
#define MAX_DIM 4095
#define Y4M_HEADER_MAX 4096   /* longest stream header line we accept */
#define Y4M_FRAME_LINE_MAX 4096
#define PATTERN_WIDTH_MAX 32  /* largest field width in %0Nd */
#define PNG_FILE_MAX (1 << 30) /* bytes; far above any 4095x4095 frame's PNG */

enum SourceKind { SRC_PNG_LIST, SRC_PNG_PATTERN, SRC_Y4M };

typedef struct AheadSlot {
    MpeFrame frame;
    int ready;                /* result, err, name and ms are valid */
    long index;               /* the frame number it holds or is being read into */
    int result;               /* 1: a frame, 0: end of the sequence, < 0: error */
    MpeError err;
    char *name;               /* the frame's file name (PNG pattern: own buffer) */
    double ms;                /* time spent reading / decoding it */
} AheadSlot;

typedef struct Ahead {
    pthread_t reader;
    int have_sync, started;   /* lock and cv initialised; reader thread running */
    MpePool *pool;            /* the caller's, or own_pool */
    MpePool *own_pool;
    int threads;              /* frames decoded at once, at most */
    long first;               /* the reader's job: frames first .. first + n - 1 */
    pthread_mutex_t lock;
    pthread_cond_t cv;        /* every state change; waiters re-check their condition */
    AheadSlot *slot;
    MpePngScratch **png;      /* [worker]: each reader thread's PNG decoder buffers */
    int depth;
    long next_claim;          /* next frame number a reader thread takes */
    long next_read;           /* next frame number mpe_input_read returns */
    long stop;                /* no frame number >= stop is read (past an end or error) */
    int quit;
} Ahead;

typedef struct Pattern {
    char *prefix, *suffix;    /* literal parts, '%%' already unescaped */
    int zero_pad, width;
    char conv;                /* 'd', 'i' or 'u' */
} Pattern;

struct MpeInput {
    MpeInputInfo info;
    enum SourceKind kind;
    const char *cur;          /* name for messages and mpe_input_current_name */
    char *spec;               /* copy of the spec */

    /* SRC_PNG_LIST: a directory's PNGs, or one file */
    char **files;
    size_t nfiles, next_file;
    size_t nskipped;          /* files[-nskipped..-1]: passed over by --seek, still the input's */

    /* SRC_PNG_PATTERN */
    Pattern pat;
    int start_number, next_number;
    int first_number;         /* the start before --seek moved it */
    int pattern_done;
    char *name;               /* the current frame's file name */
    char *probe;              /* the next candidate's, swapped into name once it exists */
    size_t name_size;

    /* SRC_Y4M */
    FILE *f;
    int is_stdin;             /* or another stream the caller owns: not closed */
    long frame_index;         /* frames read so far */
    int y4m_done;
    unsigned long long y4m_pos;       /* bytes consumed, header included */
    unsigned long long y4m_good_end;  /* y4m_pos after the header or the last complete frame */

    Ahead *ahead;             /* non-NULL once reader threads run */
    unsigned cpu_flags;       /* the PNG unfilters' (common/cpu.h) */
    MpePngScratch *png;       /* the synchronous reader's PNG decoder buffers */
    double decode_ms;         /* reading time of the frame returned last */
};

static int size_ok(int w, int h)
{
    return w >= MIN_DIM && w <= MAX_DIM && h >= MIN_DIM && h <= MAX_DIM;
}

static int size_error(MpeError *err, const char *name, long w, long h)
{
    return mpe_error(err, -EINVAL,
                     "%s: frame size %ldx%ld is out of range (each dimension must be %d..%d)",
                     name, w, h, MIN_DIM, MAX_DIM);
}

static int errno_error(MpeError *err, const char *name, int e)
{
    /* MPE_INPUT_DAMAGED_END means one thing only */
    if (e <= 0 || e == -MPE_INPUT_DAMAGED_END)
        e = EIO;
    return mpe_error(err, -e, "%s: %s", name, strerror(e));
}

static int ends_with_ci(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

static int frame_matches(const MpeInput *in, const MpeFrame *frame)
{
    int w = in->info.width, cw = (w + 1) / 2;
    if (!frame || !frame->data[0] || frame->format != in->info.format ||
        frame->width != w || frame->height != in->info.height)
        return 0;
    if (frame->format == MPE_FRAME_RGB24)
        return frame->stride[0] >= 3 * w;
    return frame->data[1] && frame->data[2] && frame->stride[0] >= w &&
           frame->stride[1] >= cw && frame->stride[2] >= cw;
}

/* ------------------------------------------------------------------ PNG */

/* Reads a whole file into *data (freed by the caller).  The size comes from
 * reading, not from stat, and is capped: a PNG of the largest frame we take
 * is well under the cap, and the reader threads each hold one file. */
static int file_slurp(uint8_t **data, size_t *size, FILE *f, const char *path, MpeError *err)
{
    struct stat st;
    size_t cap, n = 0;
    uint8_t *buf = NULL;

    *data = NULL;
    *size = 0;
    cap = fstat(fileno(f), &st) == 0 && st.st_size > 0 && (uint64_t)st.st_size < PNG_FILE_MAX
              ? (size_t)st.st_size + 1 : 1 << 16;
    for (;;) {
        size_t r;
        if (n == cap) {
            uint8_t *nb;
            if (cap >= PNG_FILE_MAX) {
                free(buf);
                return mpe_error(err, -EFBIG, "%s: file too large for a PNG frame (over %d MiB)",
                                 path, PNG_FILE_MAX >> 20);
            }
            cap = MPE_MIN(2 * cap, (size_t)PNG_FILE_MAX);
            if (!(nb = realloc(buf, cap))) {
                free(buf);
                return mpe_error(err, -ENOMEM, "%s: out of memory", path);
            }
            buf = nb;
        } else if (!buf && !(buf = malloc(cap))) {
            return mpe_error(err, -ENOMEM, "%s: out of memory", path);
        }
        r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) {
            if (ferror(f)) {
                int e = errno;
                free(buf);
                return errno_error(err, path, e);
            }
            break;
        }
    }
    *data = buf;
    *size = n;
    return 0;
}

/* Loads one PNG: only its header when frame is NULL (its size goes to *w,
 * *h), else the whole image, which must be frame's size.  When missing
 * is non-NULL and the file does not exist, sets *missing and returns 0. */
static int png_load(const char *path, MpeFrame *frame, int *w, int *h, int *missing,
                    MpePngScratch **scratch, unsigned cpu_flags, MpeError *err)
{
    static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    uint8_t *data, sig[8];
    size_t size;
    int ret, pw = 0, ph = 0;
    FILE *f;

    if (missing)
        *missing = 0;
    if (!(f = fopen(path, "rb"))) {
        int e = errno;
        if (missing && e == ENOENT) {
            *missing = 1;
            return 0;
        }
        return errno_error(err, path, e);
    }
    /* a file that is not a PNG is refused before it is read whole */
    if (fread(sig, 1, sizeof(sig), f) != sizeof(sig) || memcmp(sig, png_sig, sizeof(sig)) != 0) {
        int e = ferror(f) ? errno : 0;
        fclose(f);
        return e ? errno_error(err, path, e) : mpe_error(err, -EINVAL, "%s: not a PNG file", path);
    }
    rewind(f);
    ret = file_slurp(&data, &size, f, path, err);
    fclose(f);
    if (ret < 0)
        return ret;
    /* opened on first use; when that fails the decoder makes its own and
     * reports the lack of memory itself */
    if (scratch && !*scratch && frame)
        mpe_png_scratch_open(scratch);
    ret = mpe_png_decode_with(scratch ? *scratch : NULL, frame, &pw, &ph, data, size, path, 0,
                              cpu_flags, err);
    free(data);
    if (ret < 0)
        return ret;
    if (w)
        *w = pw;
    if (h)
        *h = ph;
    if (ret == 1)
        return mpe_error(err, -EINVAL, "%s: frame size %dx%d differs from the first frame's %dx%d",
                         path, pw, ph, frame->width, frame->height);
    return 0;
}

/* Header of the first PNG: sets the stream info. */
static int png_first(MpeInput *in, const char *path, int *missing, MpeError *err)
{
    int w = 0, h = 0, ret;

    ret = png_load(path, NULL, &w, &h, missing, NULL, in->cpu_flags, err);
    if (ret < 0 || (missing && *missing))
        return ret;
    if (!size_ok(w, h))
        return size_error(err, path, w, h);
    in->info.format = MPE_FRAME_RGB24;
    in->info.width = w;
    in->info.height = h;
    in->info.fps_num = in->info.fps_den = 0;
    return 0;
}

/* -------------------------------------------------------------- pattern */

static void pattern_free(Pattern *p)
{
    free(p->prefix);
    free(p->suffix);
    memset(p, 0, sizeof(*p));
}

/* Parses a printf-style pattern with exactly one integer conversion. */
static int pattern_parse(Pattern *p, const char *spec, MpeError *err)
{
    size_t len = strlen(spec), np = 0, ns = 0;
    int have_conv = 0;

    memset(p, 0, sizeof(*p));
    p->prefix = malloc(len + 1);
    p->suffix = malloc(len + 1);
    if (!p->prefix || !p->suffix) {
        pattern_free(p);
        return mpe_error(err, -ENOMEM, "%s: out of memory", spec);
    }
    for (size_t i = 0; i < len; i++) {
        char c = spec[i];
        size_t j;
        int width = 0;

        if (c != '%') {
            if (have_conv)
                p->suffix[ns++] = c;
            else
                p->prefix[np++] = c;
            continue;
        }
        if (spec[i + 1] == '%') {
            if (have_conv)
                p->suffix[ns++] = '%';
            else
                p->prefix[np++] = '%';
            i++;
            continue;
        }
        if (spec[i + 1] == '\0') {
            pattern_free(p);
            return mpe_error(err, -EINVAL,
                             "%s: pattern ends with a lone '%%' (write '%%%%' for a literal '%%')",
                             spec);
        }
        j = i + 1;
        if (spec[j] == '0') {
            p->zero_pad = 1;
            while (spec[j] == '0')
                j++;
        }
        while (spec[j] >= '0' && spec[j] <= '9') {
            if (width <= PATTERN_WIDTH_MAX)
                width = width * 10 + (spec[j] - '0');
            j++;
        }
        if (spec[j] != 'd' && spec[j] != 'i' && spec[j] != 'u') {
            /* Show the offending conversion up to its conversion letter. */
            size_t k = i + 1;
            while (spec[k] && !isalpha((unsigned char)spec[k]) && k - i < 16)
                k++;
            while (spec[k] && isalpha((unsigned char)spec[k]) && strchr("hljztLq", spec[k]) &&
                   k - i < 16)
                k++;
            if (spec[k] && k - i < 16)
                k++;
            pattern_free(p);
            return mpe_error(err, -EINVAL,
                             "%s: unsupported conversion '%.*s' in pattern "
                             "(use one integer conversion: %%d, %%i, %%u, %%Nd or %%0Nd)",
                             spec, (int)(k - i), spec + i);
        }
        if (width > PATTERN_WIDTH_MAX) {
            pattern_free(p);
            return mpe_error(err, -EINVAL, "%s: field width in pattern is too large (at most %d)",
                             spec, PATTERN_WIDTH_MAX);
        }
        if (have_conv) {
            pattern_free(p);
            return mpe_error(err, -EINVAL,
                             "%s: pattern has more than one conversion (exactly one integer "
                             "conversion such as %%d or %%04d is allowed; write '%%%%' for a literal '%%')",
                             spec);
        }
        have_conv = 1;
        p->width = width;
        p->conv = spec[j];
        i = j;
    }
    p->prefix[np] = '\0';
    p->suffix[ns] = '\0';
    if (!have_conv) {
        pattern_free(p);
        return mpe_error(err, -EINVAL,
                         "%s: pattern has no integer conversion (need one of %%d, %%i, %%u, %%Nd or %%0Nd)",
                         spec);
    }
    return 0;
}

/* Builds the file name of frame `number` into out (in->name_size bytes). */
static void pattern_name(const MpeInput *in, char *out, int number)
{
    const Pattern *p = &in->pat;
    char num[PATTERN_WIDTH_MAX + 32];

    if (p->conv == 'u')
        snprintf(num, sizeof(num), p->zero_pad ? "%0*u" : "%*u", p->width, (unsigned)number);
    else
        snprintf(num, sizeof(num), p->zero_pad ? "%0*d" : "%*d", p->width, number);
    snprintf(out, in->name_size, "%s%s%s", p->prefix, num, p->suffix);
}

/* ------------------------------------------------------------ directory */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int list_add(MpeInput *in, size_t *cap, char *path)
{
    if (in->nfiles == *cap) {
        size_t ncap = *cap ? *cap * 2 : 64;
        char **nf = realloc(in->files, ncap * sizeof(*nf));
        if (!nf)
            return -ENOMEM;
        in->files = nf;
        *cap = ncap;
    }
    in->files[in->nfiles++] = path;
    return 0;
}

static int dir_scan(MpeInput *in, const char *dir, MpeError *err)
{
    DIR *dp;
    struct dirent *de;
    size_t cap = 0, dlen = strlen(dir);
    int sep = dlen > 0 && dir[dlen - 1] == '/' ? 0 : 1;

    if (!(dp = opendir(dir)))
        return errno_error(err, dir, errno);
    for (;;) {
        char *path;
        struct stat st;
        size_t nlen;

        errno = 0;
        if (!(de = readdir(dp))) {
            if (errno) {
                int e = errno;
                closedir(dp);
                return errno_error(err, dir, e);
            }
            break;
        }
        if (!ends_with_ci(de->d_name, ".png"))
            continue;
        nlen = strlen(de->d_name);
        if (!(path = malloc(dlen + sep + nlen + 1))) {
            closedir(dp);
            return mpe_error(err, -ENOMEM, "%s: out of memory", dir);
        }
        memcpy(path, dir, dlen);
        if (sep)
            path[dlen] = '/';
        memcpy(path + dlen + sep, de->d_name, nlen + 1);
        /* stat, not lstat: a symlink to a PNG counts, a dangling one not. */
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            free(path);
            continue;
        }
        if (list_add(in, &cap, path) < 0) {
            free(path);
            closedir(dp);
            return mpe_error(err, -ENOMEM, "%s: out of memory", dir);
        }
    }
    closedir(dp);
    if (in->nfiles == 0)
        return mpe_error(err, -ENOENT, "%s: no PNG files (*.png) in this directory", dir);
    /* Every entry starts with the same directory prefix, so sorting the
     * paths sorts the names. */
    qsort(in->files, in->nfiles, sizeof(*in->files), cmp_str);
    return 0;
}

/* ------------------------------------------------------------------ Y4M */

/* Reads one '\n'-terminated line of at most max-1 bytes into buf (without
 * the newline), adding the bytes it consumes to *pos.  Returns its length,
 * -1 at EOF before any byte, -2 when the line is too long (the rest is left
 * unread), -3 on EOF inside the line, -4 on a read error. */
static long read_line(FILE *f, char *buf, size_t max, unsigned long long *pos)
{
    size_t n = 0;
    int c;

    while ((c = getc(f)) != EOF) {
        ++*pos;
        if (c == '\n') {
            buf[n] = '\0';
            return (long)n;
        }
        if (n + 1 >= max) {
            buf[n] = '\0';
            return -2;
        }
        buf[n++] = (char)c;
    }
    buf[n] = '\0';
    if (ferror(f))
        return -4;
    return n == 0 ? -1 : -3;
}

/* Copies up to outsz-1 bytes of s into out, replacing unprintable ones by '?'. */
static void printable(char *out, size_t outsz, const char *s)
{
    size_t i = 0;
    for (; s[i] && i + 1 < outsz; i++)
        out[i] = isprint((unsigned char)s[i]) ? s[i] : '?';
    out[i] = '\0';
}

static int parse_uint(const char *s, long *out)
{
    long v = 0;
    if (!*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        if (v > (LONG_MAX - 9) / 10)
            return -1;
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return 0;
}

static int parse_ratio(const char *s, long *num, long *den)
{
    char buf[64];
    const char *colon = strchr(s, ':');
    size_t n;

    if (!colon || (n = (size_t)(colon - s)) >= sizeof(buf))
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (parse_uint(buf, num) < 0 || parse_uint(colon + 1, den) < 0)
        return -1;
    return 0;
}

static int y4m_header(MpeInput *in, MpeError *err)
{
    char *line, *tok, *save = NULL;
    const char *name = in->cur;
    long r, w = -1, h = -1, fn = 0, fd = 0;
    int ret = 0;

    if (!(line = malloc(Y4M_HEADER_MAX)))
        return mpe_error(err, -ENOMEM, "%s: out of memory", name);
    r = read_line(in->f, line, Y4M_HEADER_MAX, &in->y4m_pos);
    if (r == -4) {
        ret = errno_error(err, name, errno);
        goto out;
    }
    if (strncmp(line, "YUV4MPEG2", 9) != 0 || (line[9] != ' ' && line[9] != '\0')) {
        ret = mpe_error(err, -EINVAL, "%s: not a YUV4MPEG2 stream (%s)", name,
                        r == -1 ? "empty input" : "no 'YUV4MPEG2' signature");
        goto out;
    }
    if (r == -2) {
        ret = mpe_error(err, -EINVAL, "%s: Y4M stream header is longer than %d bytes", name,
                        Y4M_HEADER_MAX - 1);
        goto out;
    }
    if (r == -3) {
        ret = mpe_error(err, -EINVAL, "%s: truncated Y4M stream header (no end of line)", name);
        goto out;
    }
    for (tok = strtok_r(line + 9, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char shown[32];
        printable(shown, sizeof(shown), tok);
        switch (tok[0]) {
        case 'W':
            if (parse_uint(tok + 1, &w) < 0) {
                ret = mpe_error(err, -EINVAL, "%s: bad Y4M width tag '%s'", name, shown);
                goto out;
            }
            break;
        case 'H':
            if (parse_uint(tok + 1, &h) < 0) {
                ret = mpe_error(err, -EINVAL, "%s: bad Y4M height tag '%s'", name, shown);
                goto out;
            }
            break;
        case 'F':
            if (parse_ratio(tok + 1, &fn, &fd) < 0 || fn > INT_MAX || fd > INT_MAX ||
                (fn == 0) != (fd == 0)) {
                ret = mpe_error(err, -EINVAL, "%s: bad Y4M frame rate tag '%s'", name, shown);
                goto out;
            }
            break;
        case 'C':
            if (strcmp(tok, "C420jpeg") && strcmp(tok, "C420mpeg2") && strcmp(tok, "C420paldv") &&
                strcmp(tok, "C420")) {
                ret = mpe_error(err, -EINVAL,
                                "%s: unsupported Y4M colourspace '%s' (need 4:2:0 8-bit)",
                                name, shown);
                goto out;
            }
            break;
        case 'A': {
            /* not used, but a malformed one means a damaged header */
            long an, ad;
            if (parse_ratio(tok + 1, &an, &ad) < 0 || an > INT_MAX || ad > INT_MAX ||
                (an == 0) != (ad == 0)) {
                ret = mpe_error(err, -EINVAL, "%s: bad Y4M aspect tag '%s'", name, shown);
                goto out;
            }
            break;
        }
        default:
            /* I (interlacing), X (extensions) and anything unknown:
             * ignored. */
            break;
        }
    }
    if (w < 0 || h < 0) {
        ret = mpe_error(err, -EINVAL, "%s: Y4M stream header has no %s tag", name,
                        w < 0 && h < 0 ? "W (width) or H (height)" : w < 0 ? "W (width)" : "H (height)");
        goto out;
    }
    if (w < MIN_DIM || w > MAX_DIM || h < MIN_DIM || h > MAX_DIM) {
        ret = size_error(err, name, w, h);
        goto out;
    }
    in->info.format = MPE_FRAME_YUV420;
    in->info.width = (int)w;
    in->info.height = (int)h;
    in->info.fps_num = (int)fn;
    in->info.fps_den = (int)fd;
    in->y4m_good_end = in->y4m_pos;
out:
    free(line);
    return ret;
}

/* Reads n bytes into dst; returns how many it got. */
static size_t read_full(FILE *f, uint8_t *dst, size_t n)
{
    size_t got = 0;
    while (got < n) {
        size_t r = fread(dst + got, 1, n - got, f);
        if (r == 0)
            break;
        got += r;
    }
    return got;
}

/* Bytes of one frame's planes. */
static size_t y4m_frame_bytes(const MpeInput *in)
{
    int w = in->info.width, h = in->info.height;
    return (size_t)w * h + 2 * (size_t)((w + 1) / 2) * ((h + 1) / 2);
}

/* The next frame's FRAME line, parameters and all (1), the end of the
 * stream (0) or an error; the bytes it consumes are counted in in->y4m_pos. */
static int y4m_frame_marker(MpeInput *in, MpeError *err)
{
    char line[64];
    const char *name = in->cur;
    long r;

    r = read_line(in->f, line, sizeof(line), &in->y4m_pos);
    if (r == -1)
        return 0;
    if (r == -4)
        return errno_error(err, name, errno);
    if (r == -3 && strncmp(line, "FRAME", strlen(line)) == 0)
        return mpe_error(err, -EINVAL, "%s: truncated frame %ld (incomplete frame header)",
                         name, in->frame_index);
    if (strncmp(line, "FRAME", 5) != 0 || (line[5] != ' ' && line[5] != '\0')) {
        char shown[17];
        printable(shown, sizeof(shown), line);
        return mpe_error(err, -EINVAL,
                         "%s: bad frame marker before frame %ld (expected 'FRAME', got '%s'%s)",
                         name, in->frame_index, shown,
                         in->frame_index > 0 ? "; is the header's W/H right?" : "");
    }
    if (r == -3)
        return mpe_error(err, -EINVAL, "%s: truncated frame %ld (frame header has no end of line)",
                         name, in->frame_index);
    if (r == -2) {
        /* Long frame parameters: skip to the end of the line. */
        int c;
        long skipped = 0;
        while ((c = getc(in->f)) != EOF) {
            in->y4m_pos++;
            if (c == '\n')
                break;
            if (++skipped > Y4M_FRAME_LINE_MAX)
                return mpe_error(err, -EINVAL, "%s: frame header of frame %ld is too long",
                                 name, in->frame_index);
        }
        if (c == EOF) {
            if (ferror(in->f))
                return errno_error(err, name, errno);
            return mpe_error(err, -EINVAL, "%s: truncated frame %ld (frame header has no end of line)",
                             name, in->frame_index);
        }
    }
    return 1;
}

/* The next frame (1), the end of the stream (0) or an error; the bytes it
 * consumes are counted in in->y4m_pos. */
static int y4m_read_frame(MpeInput *in, MpeFrame *frame, MpeError *err)
{
    const char *name = in->cur;
    int w = in->info.width, h = in->info.height;
    int cw = (w + 1) / 2, chh = (h + 1) / 2;
    size_t total = y4m_frame_bytes(in), got = 0;
    int r;

    if ((r = y4m_frame_marker(in, err)) <= 0)
        return r;
    if (frame->data[1] == frame->data[0] + (size_t)w * h && frame->stride[0] == w &&
        frame->data[2] == frame->data[1] + (size_t)cw * chh && frame->stride[1] == cw &&
        frame->stride[2] == cw) {
        /* mpe_frame_alloc's layout is the Y4M layout: one large read. */
        got = read_full(in->f, frame->data[0], total);
        in->y4m_pos += got;
    } else {
        int short_read = 0;
        for (int c = 0; c < 3 && !short_read; c++) {
            int pw = c ? cw : w, ph = c ? chh : h;
            for (int y = 0; y < ph && !short_read; y++) {
                size_t g = read_full(in->f, frame->data[c] + (size_t)y * frame->stride[c], (size_t)pw);
                got += g;
                in->y4m_pos += g;
                short_read = g < (size_t)pw;
            }
        }
    }
    if (got < total) {
        if (ferror(in->f))
            return errno_error(err, name, errno);
        return mpe_error(err, -EINVAL, "%s: truncated frame %ld (got %zu of %zu bytes)",
                         name, in->frame_index, got, total);
    }
    in->frame_index++;
    return 1;
}

/* After complete frames, bytes that are not a frame (why says what is wrong
 * with them): how many there are, if that can be known without reading an
 * endless pipe to its end, and MPE_INPUT_DAMAGED_END saying so. */
static int y4m_damaged_end(MpeInput *in, const MpeError *why, MpeError *err)
{
    const char *name = in->cur, *reason = why->msg;
    size_t n = strlen(name);
    unsigned long long tail = in->y4m_pos - in->y4m_good_end;
    int at_end = feof(in->f), c;
    struct stat st;
    off_t now;

    if (!strncmp(reason, name, n) && !strncmp(reason + n, ": ", 2))
        reason += n + 2;
    if (!at_end && fstat(fileno(in->f), &st) == 0 && S_ISREG(st.st_mode) &&
        (now = ftello(in->f)) >= 0 && st.st_size >= now) {
        tail += (unsigned long long)(st.st_size - now);
        at_end = 1;
    } else if (!at_end) {
        /* a pipe: the end only if it is already there */
        if ((c = getc(in->f)) != EOF)
            ungetc(c, in->f);
        at_end = c == EOF && !ferror(in->f);
    }
    if (at_end)
        return mpe_error(err, MPE_INPUT_DAMAGED_END,
                         "%s: the last %llu bytes (from byte %llu) are not a complete frame: %s; "
                         "the %ld complete frame%s before them %s read",
                         name, tail, in->y4m_good_end, reason, in->frame_index,
                         in->frame_index == 1 ? "" : "s", in->frame_index == 1 ? "is" : "are");
    return mpe_error(err, MPE_INPUT_DAMAGED_END,
                     "%s: the bytes from byte %llu on are not a frame: %s; the %ld complete "
                     "frame%s before them %s read, the rest is not",
                     name, in->y4m_good_end, reason, in->frame_index,
                     in->frame_index == 1 ? "" : "s", in->frame_index == 1 ? "is" : "are");
}

static int y4m_read(MpeInput *in, MpeFrame *frame, MpeError *err)
{
    MpeError why;
    int ret;

    if (in->y4m_done)
        return 0;
    if ((ret = y4m_read_frame(in, frame, &why)) > 0) {
        in->y4m_good_end = in->y4m_pos;
        return 1;
    }
    if (ret == 0 || ferror(in->f) || in->frame_index == 0) {
        /* the end, a read error or no frame at all: nothing to keep */
        in->y4m_done = ret == 0;
        if (ret < 0 && err)
            *err = why;
        return ret;
    }
    in->y4m_done = 1;
    return y4m_damaged_end(in, &why, err);
}

/* Passes over one frame without keeping it: the FRAME line is read (it may
 * carry parameters, so frames need not all be the same length), then the
 * planes are seeked over in a regular file and read into scratch and
 * dropped from a pipe.  1: passed, 0: the end (a frame cut short is the end
 * too: none of it would be encoded), < 0: an error. */
static int y4m_skip_frame(MpeInput *in, int seekable, off_t file_size, uint8_t *scratch,
                          size_t scratch_size, MpeError *err)
{
    size_t total = y4m_frame_bytes(in), got = 0;
    off_t now;
    int r;

    if ((r = y4m_frame_marker(in, err)) <= 0)
        return r;
    if (seekable) {
        if ((now = ftello(in->f)) < 0)
            return errno_error(err, in->cur, errno);
        if (file_size - now < (off_t)total)
            return 0;
        if (fseeko(in->f, (off_t)total, SEEK_CUR) != 0)
            return errno_error(err, in->cur, errno);
        got = total;
    } else {
        while (got < total) {
            size_t want = MPE_MIN(scratch_size, total - got), g = read_full(in->f, scratch, want);
            got += g;
            if (g < want)
                break;
        }
    }
    in->y4m_pos += got;
    if (got < total)
        return ferror(in->f) ? errno_error(err, in->cur, errno) : 0;
    in->frame_index++;
    in->y4m_good_end = in->y4m_pos;
    return 1;
}

static int y4m_skip(MpeInput *in, long n, long *have, MpeError *err)
{
    struct stat st;
    int seekable = fstat(fileno(in->f), &st) == 0 && S_ISREG(st.st_mode), r = 1, c;
    size_t scratch_size = 1 << 16;
    uint8_t *scratch = NULL;

    if (!seekable && !(scratch = malloc(scratch_size)))
        return mpe_error(err, -ENOMEM, "%s: out of memory", in->cur);
    for (*have = 0; *have < n && (r = y4m_skip_frame(in, seekable, st.st_size, scratch,
                                                     scratch_size, err)) > 0;)
        ++*have;
    free(scratch);
    if (r < 0)
        return r;
    if (r == 0) {
        in->y4m_done = 1;
        return 0;
    }
    /* a frame must follow: the caller's "nothing left" comes from here */
    if ((c = getc(in->f)) == EOF) {
        if (ferror(in->f))
            return errno_error(err, in->cur, errno);
        in->y4m_done = 1;
        return 0;
    }
    ungetc(c, in->f);
    return 1;
}

/* Moves a printf pattern's first frame on by n: each number on the way
 * must exist (the sequence ends at the first missing one), and so must the
 * new first.  Only names are looked up; no PNG is read but the new first's
 * header, which says the frame size. */
static int pattern_skip(MpeInput *in, long n, long *have, MpeError *err)
{
    struct stat st;
    long k;

    for (k = 0; k <= n; k++) {
        if ((long)in->start_number + k > INT_MAX)
            break;
        pattern_name(in, in->probe, (int)(in->start_number + k));
        if (stat(in->probe, &st) != 0)
            break;
    }
    if (k <= n) {
        *have = k;
        return 0;
    }
    *have = n;
    in->start_number = in->next_number = (int)(in->start_number + n);
    pattern_name(in, in->name, in->start_number);
    in->cur = in->name;
    {
        int ret = png_first(in, in->name, NULL, err);
        return ret < 0 ? ret : 1;
    }
}

/* Drops a list's first n files; the new first one's header says the size. */
static int list_skip(MpeInput *in, long n, long *have, MpeError *err)
{
    int ret;

    if ((size_t)n >= in->nfiles) {
        *have = (long)in->nfiles;
        return 0;
    }
    /* the names stay before files[0]: an output may not replace them either */
    *have = n;
    in->files += n;
    in->nfiles -= (size_t)n;
    in->nskipped = (size_t)n;
    in->cur = in->files[0];
    return (ret = png_first(in, in->files[0], NULL, err)) < 0 ? ret : 1;
}

/* --------------------------------------------------------------- public */

static int open_y4m(MpeInput *in, const char *spec, MpeError *err)
{
    in->kind = SRC_Y4M;
    if (strcmp(spec, "-") == 0) {
        in->f = stdin;
        in->is_stdin = 1;
        in->cur = "<stdin>";
    } else {
        in->cur = in->spec;
        if (!(in->f = fopen(spec, "rb")))
            return errno_error(err, spec, errno);
    }
    return y4m_header(in, err);
}

static int open_pattern(MpeInput *in, int start_number, MpeError *err)
{
    int missing = 0, ret;
    size_t size = strlen(in->pat.prefix) + strlen(in->pat.suffix) + PATTERN_WIDTH_MAX + 32;

    if (in->pat.conv == 'u' && start_number < 0)
        return mpe_error(err, -EINVAL, "%s: negative start number %d with a %%u pattern",
                         in->spec, start_number);
    in->kind = SRC_PNG_PATTERN;
    if (!(in->name = malloc(size)) || !(in->probe = malloc(size)))
        return mpe_error(err, -ENOMEM, "%s: out of memory", in->spec);
    in->name_size = size;
    in->start_number = in->next_number = in->first_number = start_number;
    pattern_name(in, in->name, start_number);
    in->cur = in->name;
    ret = png_first(in, in->name, &missing, err);
    if (ret < 0)
        return ret;
    if (missing)
        return mpe_error(err, -ENOENT, "%s: no frame found (looked for %s)", in->spec, in->name);
    return 0;
}

/* A file that is not named .y4m: PNG unless it starts like a Y4M stream. */
static int is_y4m_file(const char *path)
{
    char magic[10];
    size_t n = 0;
    FILE *f = fopen(path, "rb");
    if (f) {
        n = fread(magic, 1, sizeof(magic), f);
        fclose(f);
    }
    return n == sizeof(magic) && memcmp(magic, "YUV4MPEG2", 9) == 0 &&
           (magic[9] == ' ' || magic[9] == '\n');
}

int mpe_input_open(MpeInput **out, const char *spec, int start_number, MpeError *err)
{
    MpeInput *in;
    struct stat st;
    int ret = 0, literal = 0;

    *out = NULL;
    if (!spec || !*spec)
        return mpe_error(err, -EINVAL, "(no input): empty input name");
    if (!(in = calloc(1, sizeof(*in))) || !(in->spec = strdup(spec))) {
        free(in);
        return mpe_error(err, -ENOMEM, "%s: out of memory", spec);
    }
    in->cur = in->spec;
    in->cpu_flags = mpe_cpu_flags();

    if (strcmp(spec, "-") == 0 || ends_with_ci(spec, ".y4m")) {
        ret = open_y4m(in, spec, err);
    } else if (strchr(spec, '%')) {
        MpeError perr;
        ret = pattern_parse(&in->pat, spec, &perr);
        if (ret == 0) {
            ret = open_pattern(in, start_number, err);
        } else if (ret != -ENOMEM && stat(spec, &st) == 0) {
            /* Not a valid pattern, but a file or directory of that name
             * exists ("50%.png"): take it literally. */
            literal = 1;
        } else if (err) {
            *err = perr;
        }
    } else {
        literal = 1;
    }

    if (literal) {
        if (stat(spec, &st) == 0 && S_ISDIR(st.st_mode)) {
            in->kind = SRC_PNG_LIST;
            ret = dir_scan(in, spec, err);
            if (ret == 0) {
                in->cur = in->files[0];
                ret = png_first(in, in->files[0], NULL, err);
            }
        } else if (is_y4m_file(spec)) {
            ret = open_y4m(in, spec, err);
        } else {
            size_t cap = 0;
            char *dup = strdup(spec);
            in->kind = SRC_PNG_LIST;
            if (!dup || list_add(in, &cap, dup) < 0) {
                free(dup);
                ret = mpe_error(err, -ENOMEM, "%s: out of memory", spec);
            } else {
                in->cur = in->files[0];
                ret = png_first(in, in->files[0], NULL, err);
            }
        }
    }
    if (ret < 0) {
        mpe_input_close(in);
        return ret;
    }
    *out = in;
    return 0;
}

int mpe_input_open_y4m_stream(MpeInput **out, FILE *f, const char *name, MpeError *err)
{
    MpeInput *in;
    int ret;

    *out = NULL;
    if (!f || !name)
        return mpe_error(err, -EINVAL, "%s: no stream", name ? name : "(no input)");
    if (!(in = calloc(1, sizeof(*in))) || !(in->spec = strdup(name))) {
        free(in);
        return mpe_error(err, -ENOMEM, "%s: out of memory", name);
    }
    in->kind = SRC_Y4M;
    in->f = f;
    in->is_stdin = 1;
    in->cur = in->spec;
    if ((ret = y4m_header(in, err)) < 0) {
        mpe_input_close(in);
        return ret;
    }
    *out = in;
    return 0;
}

const MpeInputInfo *mpe_input_info(const MpeInput *in)
{
    return &in->info;
}

/* The synchronous reader: the next frame into `frame`. */
static int read_sync(MpeInput *in, MpeFrame *frame, MpeError *err)
{
    int missing = 0, ret;

    switch (in->kind) {
    case SRC_Y4M:
        return y4m_read(in, frame, err);
    case SRC_PNG_LIST:
        if (in->next_file >= in->nfiles)
            return 0;
        in->cur = in->files[in->next_file++];
        ret = png_load(in->cur, frame, NULL, NULL, NULL, &in->png, in->cpu_flags, err);
        return ret < 0 ? ret : 1;
    case SRC_PNG_PATTERN:
        if (in->pattern_done)
            return 0;
        pattern_name(in, in->probe, in->next_number);
        ret = png_load(in->probe, frame, NULL, NULL, &missing, &in->png, in->cpu_flags, err);
        if (missing) {
            /* the end: the current name stays the last frame's */
            in->pattern_done = 1;
            if (in->next_number == in->start_number)
                return mpe_error(err, -ENOENT, "%s: no frame found (looked for %s)", in->spec,
                                 in->probe);
            return 0;
        }
        {
            char *tmp = in->name;
            in->name = in->probe;
            in->probe = tmp;
            in->cur = in->name;
        }
        if (ret < 0)
            return ret;
        if (in->next_number == INT_MAX)
            in->pattern_done = 1;
        else
            in->next_number++;
        return 1;
    }
    return mpe_error(err, -EINVAL, "%s: bad input state", in->cur);
}

/* ----------------------------------------------------------- read-ahead */

/* Read frame number i into slot s, on a reader thread.  PNG frames need
 * only their number; Y4M has one reader thread, so frames come in order. */
static int ahead_produce(MpeInput *in, long i, AheadSlot *s, int worker)
{
    int missing = 0, ret;

    switch (in->kind) {
    case SRC_Y4M:
        return read_sync(in, &s->frame, &s->err);
    case SRC_PNG_LIST:
        if ((size_t)i >= in->nfiles)
            return 0;
        s->name = in->files[i];
        ret = png_load(s->name, &s->frame, NULL, NULL, NULL, &in->ahead->png[worker],
                       in->cpu_flags, &s->err);
        return ret < 0 ? ret : 1;
    case SRC_PNG_PATTERN:
        /* the synchronous reader stops after number INT_MAX */
        if (i > (long)INT_MAX - in->start_number)
            return 0;
        pattern_name(in, s->name, (int)(in->start_number + i));
        ret = png_load(s->name, &s->frame, NULL, NULL, &missing, &in->ahead->png[worker],
                       in->cpu_flags, &s->err);
        if (missing)
            return i == 0 ? mpe_error(&s->err, -ENOENT, "%s: no frame found (looked for %s)",
                                      in->spec, s->name)
                          : 0;
        return ret < 0 ? ret : 1;
    }
    return mpe_error(&s->err, -EINVAL, "%s: bad input state", in->cur);
}

/* One frame of the reader's job, on any thread of the pool. */
static void ahead_job(void *arg, int k, int worker)
{
    MpeInput *in = arg;
    Ahead *a = in->ahead;
    long i = a->first + k;
    AheadSlot *s = &a->slot[i % a->depth];
    int r = 0, quit;
    double ms = 0.0;

    pthread_mutex_lock(&a->lock);
    /* a frame that can no longer be wanted is not read: closing does not
     * wait for a whole job of decodes */
    quit = a->quit || i >= a->stop;
    pthread_mutex_unlock(&a->lock);
    if (!quit) {
        double t0 = mpe_time_ms();
        r = ahead_produce(in, i, s, worker);
        ms = mpe_time_ms() - t0;
    }
    pthread_mutex_lock(&a->lock);
    s->result = r;
    s->ms = ms;
    s->ready = 1;
    if (r <= 0 && i + 1 < a->stop)
        a->stop = i + 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->lock);
}

static void *ahead_main(void *arg)
{
    MpeInput *in = arg;
    Ahead *a = in->ahead;

    pthread_mutex_lock(&a->lock);
    for (;;) {
        while (!a->quit && !(a->next_claim < a->stop && a->next_claim < a->next_read + a->depth))
            pthread_cond_wait(&a->cv, &a->lock);
        if (a->quit)
            break;
        long end = MPE_MIN(a->stop, a->next_read + a->depth);
        int n = (int)(end - a->next_claim);
        a->first = a->next_claim;
        for (long i = a->first; i < end; i++) {
            a->slot[i % a->depth].ready = 0;
            a->slot[i % a->depth].index = i;
        }
        a->next_claim = end;
        pthread_mutex_unlock(&a->lock);
        /* one frame at a time for Y4M: the job then runs here, in order */
        mpe_pool_run_slots(a->pool, n, in->kind == SRC_Y4M ? 1 : a->threads, ahead_job, in);
        pthread_mutex_lock(&a->lock);
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

static void ahead_stop(MpeInput *in)
{
    Ahead *a = in->ahead;

    if (!a)
        return;
    if (a->started) {
        pthread_mutex_lock(&a->lock);
        a->quit = 1;
        pthread_cond_broadcast(&a->cv);
        pthread_mutex_unlock(&a->lock);
        pthread_join(a->reader, NULL);
    }
    if (a->have_sync) {
        pthread_cond_destroy(&a->cv);
        pthread_mutex_destroy(&a->lock);
    }
    mpe_pool_close(a->own_pool);
    if (a->slot) {
        for (int i = 0; i < a->depth; i++) {
            mpe_frame_free(&a->slot[i].frame);
            if (in->kind == SRC_PNG_PATTERN)
                free(a->slot[i].name);
        }
    }
    free(a->slot);
    if (a->png)
        for (int i = 0; i < a->threads; i++)
            mpe_png_scratch_close(a->png[i]);
    free(a->png);
    free(a);
    in->ahead = NULL;
}

/* Hand the caller frame i: swap buffers when both came from
 * mpe_frame_alloc with the same layout, else copy. */
static void ahead_take(MpeFrame *dst, MpeFrame *src)
{
    if (dst->alloc == dst->data[0] && dst->stride[0] == src->stride[0] &&
        (dst->format == MPE_FRAME_RGB24 ||
         (dst->data[1] == dst->data[0] + (size_t)dst->stride[0] * dst->height &&
          dst->data[2] == dst->data[1] + (size_t)dst->stride[1] * ((dst->height + 1) / 2) &&
          dst->stride[1] == src->stride[1] && dst->stride[2] == src->stride[2]))) {
        MpeFrame t = *dst;
        *dst = *src;
        *src = t;
        return;
    }
    for (int c = 0; c < (src->format == MPE_FRAME_RGB24 ? 1 : 3); c++) {
        int rows = c ? (src->height + 1) / 2 : src->height;
        size_t bytes = src->format == MPE_FRAME_RGB24 ? (size_t)src->width * 3
                       : c ? (size_t)(src->width + 1) / 2 : (size_t)src->width;
        for (int y = 0; y < rows; y++)
            memcpy(dst->data[c] + (size_t)y * dst->stride[c],
                   src->data[c] + (size_t)y * src->stride[c], bytes);
    }
}

static int ahead_read(MpeInput *in, MpeFrame *frame, MpeError *err)
{
    Ahead *a = in->ahead;
    const long i = a->next_read;
    AheadSlot *s = &a->slot[i % a->depth];
    int r;

    pthread_mutex_lock(&a->lock);
    while (!(s->ready && s->index == i))
        pthread_cond_wait(&a->cv, &a->lock);
    r = s->result;
    in->decode_ms = s->ms;
    if (r > 0) {
        ahead_take(frame, &s->frame);
        if (in->kind == SRC_PNG_LIST) {
            in->cur = s->name;
        } else if (in->kind == SRC_PNG_PATTERN) {
            snprintf(in->name, in->name_size, "%s", s->name);
            in->cur = in->name;
        }
        s->ready = 0;
        a->next_read++;
        pthread_cond_broadcast(&a->cv);
    } else if (r < 0) {
        /* the slot stays: asking again gives the same answer (the end, after
         * a damaged one, as from the synchronous reader) */
        if (err)
            *err = s->err;
        if (r == MPE_INPUT_DAMAGED_END)
            s->result = 0;
        if (in->kind == SRC_PNG_LIST) {
            in->cur = s->name;
        } else if (in->kind == SRC_PNG_PATTERN) {
            snprintf(in->name, in->name_size, "%s", s->name);
            in->cur = in->name;
        }
    }
    pthread_mutex_unlock(&a->lock);
    return r;
}

int mpe_input_auto_threads(const MpeInput *in, int pool_threads)
{
    /* a reader thread holds 2 frames read ahead (RGB or YUV of the input's
     * size) and, while it decodes, about 2 more: the file read whole and
     * its PNG decoder's buffers (the inflated rows, the joined image data;
     * 21 MB at 2048^2 RGB) */
    const size_t budget = (size_t)1 << 30;
    const size_t frame = (size_t)in->info.width * in->info.height *
                         (in->info.format == MPE_FRAME_RGB24 ? 3 : 2);
    size_t cap;

    if (in->kind == SRC_Y4M)
        return 1;
    cap = frame ? budget / (4 * frame) : 64;
    return (int)MPE_MAX(1, MPE_MIN(MPE_MIN((size_t)MPE_MAX(pool_threads, 1), cap), (size_t)64));
}

int mpe_input_start_ahead_pool(MpeInput *in, int threads, MpePool *pool, MpeError *err)
{
    Ahead *a;
    int ret;

    if (in->ahead)
        return mpe_error(err, -EINVAL, "%s: reading ahead already started", in->cur);
    if (threads <= 0)
        return 0;
    if (in->kind == SRC_Y4M)
        threads = 1;
    /* a list's length is known: no thread or buffer beyond it (+1 for the end) */
    if (in->kind == SRC_PNG_LIST && (size_t)threads > in->nfiles)
        threads = MPE_MAX((int)in->nfiles, 1);
    if (!(a = calloc(1, sizeof(*a))))
        return mpe_error(err, -ENOMEM, "%s: out of memory", in->spec);
    in->ahead = a;
    a->threads = threads;
    /* room for every thread to decode one while as many wait to be taken
     * (a Y4M stream's one reader too: a third buffer, 6.3 MB at 2048^2,
     * was first-touch page faults and memory for nothing -- solar 10
     * frames, 2 cores: 1,540 faults and 1-2 % of the CPU time) */
    a->depth = 2 * threads;
    if (in->kind == SRC_PNG_LIST && (size_t)a->depth > in->nfiles + 1)
        a->depth = (int)in->nfiles + 1;
    a->stop = LONG_MAX;
    if (!(a->slot = calloc((size_t)a->depth, sizeof(*a->slot))) ||
        !(a->png = calloc((size_t)threads, sizeof(*a->png))))
        goto nomem;
    for (int i = 0; i < a->depth; i++) {
        if (mpe_frame_alloc(&a->slot[i].frame, in->info.format, in->info.width,
                            in->info.height) < 0)
            goto nomem;
        if (in->kind == SRC_PNG_PATTERN && !(a->slot[i].name = malloc(in->name_size)))
            goto nomem;
    }
    if (pool) {
        a->pool = pool;
    } else {
        /* the reader thread is one of the decoders */
        if ((ret = mpe_pool_open(&a->own_pool, threads, err)) < 0) {
            ahead_stop(in);
            return ret;
        }
        a->pool = a->own_pool;
    }
    if (pthread_mutex_init(&a->lock, NULL) != 0)
        goto nomem;
    if (pthread_cond_init(&a->cv, NULL) != 0) {
        pthread_mutex_destroy(&a->lock);
        goto nomem;
    }
    a->have_sync = 1;
    if ((ret = pthread_create(&a->reader, NULL, ahead_main, in)) != 0) {
        ahead_stop(in);
        return mpe_error(err, -ret, "%s: cannot start a reader thread: %s", in->spec,
                         strerror(ret));
    }
    a->started = 1;
    return 0;
nomem:
    ahead_stop(in);
    return mpe_error(err, -ENOMEM, "%s: out of memory for the frames read ahead", in->spec);
}

int mpe_input_start_ahead(MpeInput *in, int threads, MpeError *err)
{
    return mpe_input_start_ahead_pool(in, threads, NULL, err);
}

int mpe_input_read(MpeInput *in, MpeFrame *frame, MpeError *err)
{
    double t0;
    int ret;

    if (!frame_matches(in, frame))
        return mpe_error(err, -EINVAL, "%s: frame buffer does not match the input's format and size",
                         in->cur);
    if (in->ahead)
        return ahead_read(in, frame, err);
    t0 = mpe_time_ms();
    ret = read_sync(in, frame, err);
    in->decode_ms = mpe_time_ms() - t0;
    return ret;
}

double mpe_input_decode_ms(const MpeInput *in)
{
    return in->decode_ms;
}

const char *mpe_input_current_name(const MpeInput *in)
{
    return in ? in->cur : "";
}

void mpe_input_close(MpeInput *in)
{
    if (!in)
        return;
    ahead_stop(in);   /* first: the threads read through in */
    mpe_png_scratch_close(in->png);
    if (in->f && !in->is_stdin)
        fclose(in->f);
    if (in->files) {   /* --seek moved the list's start past the skipped names */
        in->files -= in->nskipped;
        in->nfiles += in->nskipped;
    }
    for (size_t i = 0; i < in->nfiles; i++)
        free(in->files[i]);
    free(in->files);
    pattern_free(&in->pat);
    free(in->name);
    free(in->probe);
    free(in->spec);
    free(in);
}

/* One candidate file of the input: 1 (and its name) when it is dev/ino. */
static int same_file(const char *path, dev_t dev, ino_t ino, char *name, size_t size)
{
    struct stat st;
    if (stat(path, &st) != 0 || st.st_dev != dev || st.st_ino != ino)
        return 0;
    snprintf(name, size, "%s", path);
    return 1;
}

int mpe_input_find_file(const MpeInput *in, dev_t dev, ino_t ino, char *name, size_t size)
{
    struct stat st;

    switch (in->kind) {
    case SRC_Y4M:
        if (fstat(fileno(in->f), &st) == 0 && st.st_dev == dev && st.st_ino == ino) {
            snprintf(name, size, "%s", in->is_stdin ? "<stdin>" : in->spec);
            return 1;
        }
        return 0;
    case SRC_PNG_LIST:
        for (char **f = in->files - in->nskipped; f < in->files + in->nfiles; f++)
            if (same_file(*f, dev, ino, name, size))
                return 1;
        return 0;
    case SRC_PNG_PATTERN: {
        /* from --start (frames --seek passes over count too) until one is missing */
        char *path = malloc(in->name_size);
        int found = 0;
        if (!path)
            return 0;
        for (long k = in->first_number; k <= INT_MAX; k++) {
            pattern_name(in, path, (int)k);
            if (stat(path, &st) != 0)
                break;
            if (st.st_dev == dev && st.st_ino == ino) {
                snprintf(name, size, "%s", path);
                found = 1;
                break;
            }
        }
        free(path);
        return found;
    }
    }
    return 0;
}

int mpe_input_skip(MpeInput *in, long n, long *have, MpeError *err)
{
    *have = 0;
    if (n < 0)
        return mpe_error(err, -EINVAL, "%s: cannot skip %ld frames", in->spec, n);
    if (in->ahead || in->next_file || in->next_number != in->start_number || in->frame_index)
        return mpe_error(err, -EINVAL, "%s: frames are skipped before the first is read", in->spec);
    if (n == 0)
        return 1;
    switch (in->kind) {
    case SRC_Y4M:
        return y4m_skip(in, n, have, err);
    case SRC_PNG_LIST:
        return list_skip(in, n, have, err);
    case SRC_PNG_PATTERN:
        return pattern_skip(in, n, have, err);
    }
    return mpe_error(err, -EINVAL, "%s: bad input state", in->cur);
}

long mpe_input_frames_left(const MpeInput *in)
{
    struct stat st;
    off_t now;

    switch (in->kind) {
    case SRC_Y4M:
        /* "FRAME\n" and the planes; frame parameters make it an estimate */
        if (fstat(fileno(in->f), &st) != 0 || !S_ISREG(st.st_mode) || (now = ftello(in->f)) < 0)
            return -1;
        return st.st_size > now ? (long)((st.st_size - now) / (off_t)(6 + y4m_frame_bytes(in))) : 0;
    case SRC_PNG_LIST:
        return (long)(in->nfiles - in->next_file);
    case SRC_PNG_PATTERN: {
        long k = 0;
        char *path = malloc(in->name_size);
        if (!path)
            return -1;
        for (; (long)in->next_number + k <= INT_MAX; k++) {
            pattern_name(in, path, (int)(in->next_number + k));
            if (stat(path, &st) != 0)
                break;
        }
        free(path);
        return k;
    }
    }
    return -1;
}

void mpe_input_set_cpu_flags(MpeInput *in, unsigned cpu_flags)
{
    in->cpu_flags = cpu_flags;
}
