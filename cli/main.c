/* main.c — the mpegenc command line: a thin layer over the library.
 * Exit status: 0 success, 1 runtime error (bad input, I/O), 2 usage error,
 * 130 interrupted by Ctrl-C (the stream and log hold every finished picture). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/outfile.h"
#include "common/threads.h"
#include "common/timer.h"
#include "encoder/encoder.h"
#include "input/input.h"
#include "cli/progress.h"
#include "cli/psmux.h"
#include "cli/qlog.h"
#include "cli/recon.h"
#include "cli/report.h"
#include "gpu/frontend.h"
#include "iqa/iqa.h"

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2, EXIT_INTERRUPTED = 130 };

/* The outputs (their temporaries are removed if a signal ends the run
 * early) and the first Ctrl-C's request to stop.  The only global state in
 * the program, because a signal handler cannot be handed a context. */
enum { OUT_STREAM, OUT_RECON, OUT_LOG, OUT_REPORT, N_OUT };
static MpeOutFile outputs[N_OUT];
static volatile sig_atomic_t stop_requested;

/* The first Ctrl-C asks the loop to finish the picture in hand and close
 * the stream properly; a second one, or any other terminating signal, ends
 * the run at once and takes the temporary outputs away (unlink is
 * async-signal-safe; an existing file under the final name stays as it was). */
static void on_signal(int sig)
{
    if (sig == SIGINT && !stop_requested) {
        stop_requested = 1;
        return;
    }
    for (int i = 0; i < N_OUT; i++)
        if (outputs[i].tmp[0])
            unlink(outputs[i].tmp);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Every signal whose default action ends the process without a core dump
 * the user asked for goes through on_signal.  SIGPIPE (the reader of -o -
 * went away) and SIGXFSZ (file size limit) are ignored: the write then
 * fails with EPIPE or EFBIG and the run ends on its normal error path, with
 * a message and no temporary left. */
static void install_signals(void)
{
    static const int terminating[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM,
                                       SIGVTALRM, SIGPROF, SIGUSR1, SIGUSR2 };
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;   /* a read in progress completes; the loop checks the flag */
    for (size_t i = 0; i < sizeof(terminating) / sizeof(terminating[0]); i++)
        sigaction(terminating[i], &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    sigaction(SIGXFSZ, &sa, NULL);
}

typedef struct Cli {
    const char *input, *output, *recon, *log, *report;
    int verbose, quiet, stats;
    int progress;      /* --progress 1, --no-progress 0, neither -1 (on a terminal) */
    int overwrite;     /* -y: 1, -n: -1, neither: 0 (an existing file is refused) */
    int container;     /* CONTAINER_*: --container, else from the output's extension */
    MpeParam param;
} Cli;

enum { CONTAINER_AUTO = 0, CONTAINER_ES, CONTAINER_PS };

/* Per-picture records for the log, the summary and the report.  The caller's
 * own stage times (read, write) are kept by display index until the record
 * of that picture comes out of the encoder, which may be several calls later
 * (the quality lanes: up to 4 pictures in flight, beside B pictures). */
#define CALLER_RING 32
typedef struct Records {
    MpeQlog *qlog;
    MpeSummary summary;
    MpeFrameStats *all;    /* for --report */
    int n, cap;
    MpeStageTimes caller[CALLER_RING];
    uint64_t sse_y;
} Records;

/* Stage times summed over the run, for --stats. */
typedef struct StageTotals {
    MpeStageTimes t;       /* sums over coded pictures, plus the caller's read/write */
    double encode_ms;      /* inside mpe_encode_frame */
    double open_ms;        /* mpe_encoder_open: backend start-up, once */
    int frames;
} StageTotals;

/* opaque: the progress line, ended before the message */
static void log_to_stderr(void *opaque, int level, const char *msg)
{
    mpe_progress_break(opaque);
    fprintf(stderr, "mpegenc: %s%s\n", level == MPE_LOG_WARNING ? "warning: " : "", msg);
}

static void print_help(void)
{
    MpeParam def;
    char val[64];
    mpe_param_default(&def);
    printf("mpegenc %s: MPEG-1 / MPEG-2 video encoder\n\n"
           "usage: mpegenc [options] -i INPUT -o OUTPUT\n\n"
           "INPUT:  frames/solar_%%d.png (printf pattern, see --start), a directory of .png\n"
           "        files (name order), a single .png, a .y4m file, or - for Y4M on stdin\n"
           "OUTPUT: .m1v (MPEG-1) or .m2v (MPEG-2) elementary stream, .mpg or .mpeg program\n"
           "        stream (MPEG-1 system stream with --format mpeg1), or - for stdout\n\n"
           "  -i, --input FILE       input (required)\n"
           "  -o, --output FILE      output stream (required)\n"
           "      --container KIND   es, ps or auto (default: auto: ps for .mpg/.mpeg/.m2p, es\n"
           "                         for .m1v/.m2v/.mpv, stdout and names without extension)\n"
           "  -y, --overwrite        replace output files that exist (default: refuse)\n"
           "  -n, --no-overwrite     never replace an existing file (the default, explicit)\n"
           "      --recon FILE.y4m   also write the encoder's reconstructed pictures\n"
           "      --log FILE         per-frame log: FILE.csv (CSV) or FILE.jsonl (JSON Lines),\n"
           "                         one record per picture, flushed as it is written; or\n"
           "                         FILE.json: libvmaf's JSON (frames, pooled metrics)\n"
           "      --report FILE.html  self-contained page plotting bits, quantiser and quality\n",
           MPE_VERSION);
    for (int i = 0; mpe_param_info(i); i++) {
        const MpeParamInfo *o = mpe_param_info(i);
        char left[64];
        mpe_param_value_string(&def, i, val, sizeof(val));
        snprintf(left, sizeof(left), "--%s %s", o->name, o->arg);
        printf("      %-19s%s (default: %s)\n", left, o->help, val);
    }
    printf("  -v, --verbose          one line per frame on stderr\n"
           "  -vv                    also each rate-control trial\n"
           "      --quiet            no summary line and no progress line\n"
           "      --progress         progress line on stderr even when it is not a terminal\n"
           "                         (then one line a second instead of a line refreshed in place)\n"
           "      --no-progress      no progress line (default: one on a terminal, unless -v)\n"
           "      --stats            time per pipeline stage in the summary (and per frame with -v)\n"
           "      --list-backends    list front-end backends and whether they can run here\n"
           "      --version          print the version\n"
           "  -h, --help             this help\n");
}

static int list_backends(void)
{
    for (const GpuBackend *const *b = gpu_backend_list(); *b; b++) {
        char why[256] = "";
        int ok = gpu_backend_probe(*b, 0, why, sizeof(why)) == 0;
        char auto_why[256] = "";
        int for_auto = ok && gpu_backend_probe(*b, 1, auto_why, sizeof(auto_why)) == 0;
        printf("%-8s %s%s%s%s\n", gpu_backend_name(*b), ok ? "available" : "unavailable", why[0] ? ": " : "",
               why, ok && !for_auto ? " (not chosen by --backend auto)" : "");
    }
    return 0;
}

/* Returns -1 to continue, else an exit status. */
static int parse_args(Cli *cli, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        char name[64];
        const char *value = NULL;
        int has_inline = 0;

        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            print_help();
            return 0;
        }
        if (!strcmp(a, "--version")) {
            printf("mpegenc %s\n", MPE_VERSION);
            return 0;
        }
        if (!strcmp(a, "--list-backends"))
            return list_backends();
        if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            cli->verbose = cli->verbose > 1 ? cli->verbose : 1;
            continue;
        }
        if (!strcmp(a, "-vv")) {
            cli->verbose = 2;
            continue;
        }
        if (!strcmp(a, "--quiet")) {
            cli->quiet = 1;
            continue;
        }
        if (!strcmp(a, "--progress") || !strcmp(a, "--no-progress")) {
            cli->progress = !strcmp(a, "--progress");
            continue;
        }
        if (!strcmp(a, "--stats")) {
            cli->stats = 1;
            continue;
        }
        if (!strcmp(a, "-y") || !strcmp(a, "--overwrite") || !strcmp(a, "-n") ||
            !strcmp(a, "--no-overwrite")) {
            const int want = a[1] == 'y' || !strcmp(a, "--overwrite") ? 1 : -1;
            if (cli->overwrite && cli->overwrite != want) {
                fprintf(stderr, "mpegenc: -y (--overwrite) and -n (--no-overwrite) contradict each other\n");
                return EXIT_USAGE;
            }
            cli->overwrite = want;
            continue;
        }
        if (a[0] != '-' || !a[1]) {
            fprintf(stderr, "mpegenc: unexpected argument '%s' (inputs go after -i)\n", a);
            return EXIT_USAGE;
        }
        if (!strcmp(a, "-i") || !strcmp(a, "-o")) {
            snprintf(name, sizeof(name), "%s", a[1] == 'i' ? "input" : "output");
        } else if (a[1] == '-') {
            const char *eq = strchr(a + 2, '=');
            size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
            if (len >= sizeof(name)) {
                fprintf(stderr, "mpegenc: unknown option '%s' (see --help)\n", a);
                return EXIT_USAGE;
            }
            memcpy(name, a + 2, len);
            name[len] = '\0';
            if (eq) {
                value = eq + 1;
                has_inline = 1;
            }
        } else {
            fprintf(stderr, "mpegenc: unknown option '%s' (see --help)\n", a);
            return EXIT_USAGE;
        }
        if (!has_inline) {
            if (i + 1 >= argc) {
                fprintf(stderr, "mpegenc: option '%s' needs a value\n", a);
                return EXIT_USAGE;
            }
            value = argv[++i];
        }
        if (!strcmp(name, "input")) {
            cli->input = value;
        } else if (!strcmp(name, "output")) {
            cli->output = value;
        } else if (!strcmp(name, "recon")) {
            cli->recon = value;
        } else if (!strcmp(name, "log")) {
            cli->log = value;
        } else if (!strcmp(name, "report")) {
            cli->report = value;
        } else if (!strcmp(name, "container")) {
            if (!strcmp(value, "es"))
                cli->container = CONTAINER_ES;
            else if (!strcmp(value, "ps"))
                cli->container = CONTAINER_PS;
            else if (!strcmp(value, "auto"))
                cli->container = CONTAINER_AUTO;
            else {
                fprintf(stderr, "mpegenc: --container '%s': es (elementary stream), ps (program "
                                "stream) or auto\n", value);
                return EXIT_USAGE;
            }
        } else {
            MpeError err;
            if (mpe_param_parse(&cli->param, name, value, &err) < 0) {
                fprintf(stderr, "mpegenc: %s%s\n", err.msg,
                        strstr(err.msg, "unknown option") ? " (see --help)" : "");
                return EXIT_USAGE;
            }
        }
    }
    if (!cli->input || !cli->output) {
        fprintf(stderr, "mpegenc: %s (usage: mpegenc [options] -i INPUT -o OUTPUT; see --help)\n",
                !cli->input ? "no input given" : "no output given");
        return EXIT_USAGE;
    }
    return -1;
}

static int has_ext(const char *path, const char *ext)
{
    size_t n = strlen(path), e = strlen(ext);
    return n > e && !strcasecmp(path + n - e, ext);
}

/* The container from the output's name: a program stream for .mpg, .mpeg
 * and .m2p, an elementary stream for .m1v, .m2v and .mpv, stdout, a device
 * or FIFO, and names without an extension.  Any other extension is refused:
 * an elementary stream named .mp4 or .ts would only look like one.
 * Returns -1 to go on, else the exit status. */
static int choose_container(Cli *cli)
{
    static const char *const ps_ext[] = { ".mpg", ".mpeg", ".m2p" };
    static const char *const es_ext[] = { ".m1v", ".m2v", ".mpv" };
    const char *out = cli->output, *base = strrchr(out, '/'), *dot;
    struct stat st;

    if (cli->container != CONTAINER_AUTO)
        return -1;
    cli->container = CONTAINER_ES;
    if (!strcmp(out, "-"))
        return -1;
    for (size_t i = 0; i < sizeof(ps_ext) / sizeof(ps_ext[0]); i++)
        if (has_ext(out, ps_ext[i])) {
            cli->container = CONTAINER_PS;
            return -1;
        }
    for (size_t i = 0; i < sizeof(es_ext) / sizeof(es_ext[0]); i++)
        if (has_ext(out, es_ext[i]))
            return -1;
    base = base ? base + 1 : out;
    dot = strrchr(base, '.');
    if (!dot || dot == base || (stat(out, &st) == 0 && !S_ISREG(st.st_mode)))
        return -1;
    fprintf(stderr, "mpegenc: %s: cannot write '%s' files: name the output .m1v/.m2v "
                    "(elementary stream) or .mpg/.mpeg (program stream), or say --container\n",
            out, dot);
    return EXIT_USAGE;
}

static const char *const output_option[N_OUT] = { "-o", "--recon", "--log", "--report" };

/* Before any work: every output must be a file we may write, none may be an
 * input or another output, and an existing regular file is replaced only
 * with -y (ffmpeg's convention).  Devices, FIFOs and descriptors are
 * written to, never replaced, so they need no -y; two outputs may share a
 * character device (/dev/null) but not a file or a FIFO.  Returns -1 to go
 * on, else the exit status. */
static int check_outputs(const Cli *cli, const MpeInput *in)
{
    const char *paths[N_OUT] = { cli->output, cli->recon, cli->log, cli->report };
    MpeOutTarget t[N_OUT];
    int have[N_OUT] = { 0 };
    char name[4096];
    MpeError err;

    for (int i = 0; i < N_OUT; i++) {
        if (!paths[i] || !strcmp(paths[i], "-"))
            continue;
        if (mpe_out_resolve(paths[i], &t[i], &err) < 0) {
            fprintf(stderr, "mpegenc: %s\n", err.msg);
            return EXIT_RUNTIME;
        }
        have[i] = 1;
        if (t[i].is_dir) {
            fprintf(stderr, "mpegenc: %s: is a directory (%s names the file to write)\n", paths[i],
                    output_option[i]);
            return EXIT_USAGE;
        }
        if (t[i].exists && !t[i].is_chardev &&
            mpe_input_find_file(in, t[i].dev, t[i].ino, name, sizeof(name))) {
            fprintf(stderr, "mpegenc: %s: is the input %s; %s would destroy it\n", paths[i], name,
                    output_option[i]);
            return EXIT_USAGE;
        }
        for (int j = 0; j < i; j++) {
            if (have[j] && !(t[i].is_chardev && t[j].is_chardev) && mpe_out_same(&t[i], &t[j])) {
                fprintf(stderr, "mpegenc: %s: both %s and %s would write this file\n", paths[i],
                        output_option[j], output_option[i]);
                return EXIT_USAGE;
            }
        }
        if (t[i].exists && t[i].regular && cli->overwrite <= 0) {
            fprintf(stderr, "mpegenc: %s: already exists; %s\n", paths[i],
                    cli->overwrite < 0 ? "not overwritten (-n)" : "use -y to overwrite it");
            return EXIT_RUNTIME;
        }
    }
    return -1;
}

/* Creates every output now (temporaries beside regular files), so an
 * unwritable directory is found before the encode rather than after it. */
static int open_outputs(const Cli *cli)
{
    const char *paths[N_OUT] = { cli->output, cli->recon, cli->log, cli->report };
    MpeError err;

    for (int i = 0; i < N_OUT; i++) {
        if (paths[i] && mpe_outfile_open(&outputs[i], paths[i], &err) < 0) {
            fprintf(stderr, "mpegenc: %s\n", err.msg);
            return -1;
        }
    }
    return 0;
}

/* The end of the run: when it went well, every output is flushed, then all
 * are renamed into place; otherwise (or if one cannot be written) every
 * temporary is removed and older files keep their content.  Returns ok. */
static int close_outputs(int ok)
{
    MpeError err;

    for (int i = 0; i < N_OUT; i++) {
        if (mpe_outfile_finish(&outputs[i], &err) < 0) {
            if (ok)
                fprintf(stderr, "mpegenc: %s\n", err.msg);
            ok = 0;
        }
    }
    for (int i = 0; i < N_OUT && ok; i++) {
        if (mpe_outfile_commit(&outputs[i], &err) < 0) {
            fprintf(stderr, "mpegenc: %s\n", err.msg);
            ok = 0;
        }
    }
    for (int i = 0; i < N_OUT; i++)
        mpe_outfile_abort(&outputs[i]);
    return ok;
}

static void add_times(MpeStageTimes *sum, const MpeStageTimes *t)
{
    sum->read_ms += t->read_ms;
    sum->decode_ms += t->decode_ms;
    sum->fe_ms += t->fe_ms;
    sum->fe_gpu_ms += t->fe_gpu_ms;
    sum->fe_wait_ms += t->fe_wait_ms;
    sum->download_ms += t->download_ms;
    sum->code_ms += t->code_ms;
    sum->quality_ms += t->quality_ms;
    sum->quality_wait_ms += t->quality_wait_ms;
    sum->write_ms += t->write_ms;
}

/* The --stats block: milliseconds per frame for each stage.  Busy times of
 * stages on other threads (PNG decoding, the front end) overlap the main
 * thread's; what the main thread waited for them is what they cost. */
static void print_stats(const StageTotals *st, const MpeEncoder *enc, int read_threads,
                        double wall_ms)
{
    const double n = st->frames > 0 ? st->frames : 1;
    const MpeStageTimes *t = &st->t;
    /* on its own thread the front end's host time already spans its waits
     * for the device; on the main thread the device works beside it */
    const int fe_async = mpe_encoder_frontend_async(enc);
    const double fe_busy = fe_async ? t->fe_ms : t->fe_ms + t->fe_gpu_ms;
    const double hidden = fe_busy - t->fe_wait_ms > 0 ? fe_busy - t->fe_wait_ms : 0;

    const char *fe_mode = mpe_encoder_pipelined(enc)                ? "in the calls, the coder on its own thread"
                          : fe_async                                   ? "on its own thread"
                          : strcmp(mpe_encoder_backend(enc), "cpu") ? "asynchronous on the device"
                                                                    : "on the main thread";
    fprintf(stderr,
            "mpegenc: stages, ms per frame over %d frames (slice threads %d; front end %s %s; "
            "reader threads %d):\n",
            st->frames, mpe_encoder_threads(enc), mpe_encoder_backend(enc), fe_mode, read_threads);
    if (read_threads > 0)
        fprintf(stderr, "  read       %8.2f waited   (decoding %.2f busy on the reader threads)\n",
                t->read_ms / n, t->decode_ms / n);
    else
        fprintf(stderr, "  read       %8.2f          (decoding on the main thread)\n",
                t->read_ms / n);
    if (mpe_encoder_pipelined(enc))
        fprintf(stderr,
                "  front end  %8.2f busy     (on the calling thread; the device %.2f); it waited "
                "%.2f for the coder (a free slot)\n",
                t->fe_ms / n, t->fe_gpu_ms / n, t->fe_wait_ms / n);
    else
        fprintf(stderr,
                "  front end  %8.2f busy     (%s %.2f); back end waited %.2f: %.0f%% hidden\n",
                fe_busy / n, fe_async ? "of which device" : "host + device", t->fe_gpu_ms / n,
                t->fe_wait_ms / n, fe_busy > 0 ? 100.0 * hidden / fe_busy : 100.0);
    fprintf(stderr, "  download   %8.2f\n", t->download_ms / n);
    fprintf(stderr, "  code       %8.2f          (slices on %d threads, headers, concatenation%s)\n",
            t->code_ms / n, mpe_encoder_threads(enc),
            mpe_encoder_pipelined(enc) ? "; on a thread of its own beside the front end" : "");
    if (t->quality_ms > 0)
        fprintf(stderr, "  quality    %8.2f busy     (on the lanes); coder held %.2f (copies, and "
                        "waits for a free lane)\n", t->quality_ms / n, t->quality_wait_ms / n);
    else
        fprintf(stderr, "  quality    %8.2f\n", 0.0);
    fprintf(stderr, "  write      %8.2f\n", t->write_ms / n);
    fprintf(stderr, "  encode     %8.2f          (inside mpe_encode_frame)\n", st->encode_ms / n);
    fprintf(stderr, "  wall       %8.2f          (%.2f fps)\n", wall_ms / n,
            wall_ms > 0 ? 1000.0 * st->frames / wall_ms : 0.0);
    if (strcmp(mpe_encoder_backend(enc), "cpu"))
        fprintf(stderr, "  open       %8.2f ms once (encoder start-up, inside wall; the %s backend "
                        "opened beside the first frames: -v says how long)\n",
                st->open_ms, mpe_encoder_backend(enc));
    else
        fprintf(stderr, "  open       %8.2f ms once (encoder and cpu backend start-up, inside wall)\n",
                st->open_ms);
}

/* One complete record: log it, count it, keep it for the report. */
static int take_record(Records *r, const Cli *cli, MpeFrameStats *fs)
{
    MpeError err;
    const MpeStageTimes *c = &r->caller[fs->display_index % CALLER_RING];

    fs->time.read_ms = c->read_ms;
    fs->time.decode_ms = c->decode_ms;
    fs->time.write_ms = c->write_ms;
    mpe_summary_add(&r->summary, fs);
    r->sse_y += fs->sse[0];
    if (r->qlog && mpe_qlog_write(r->qlog, fs, &err) < 0) {
        fprintf(stderr, "mpegenc: %s\n", err.msg);
        return -1;
    }
    if (cli->report) {
        if (r->n == r->cap) {
            int cap = r->cap ? 2 * r->cap : 256;
            MpeFrameStats *all = realloc(r->all, (size_t)cap * sizeof(*all));
            if (!all) {
                fprintf(stderr, "mpegenc: %s: out of memory for the report\n", cli->report);
                return -1;
            }
            r->all = all;
            r->cap = cap;
        }
        r->all[r->n++] = *fs;
    }
    if (cli->verbose) {
        fprintf(stderr, "frame %5d %c q %5.2f %9llu bits", fs->display_index, fs->type,
                fs->qscale_mean, (unsigned long long)fs->bits);
        for (int id = 0, n = iqa_value_count(); id < n; id++) {
            const char *fmt = iqa_value_get(id)->verbose;
            if (fmt && (fs->metrics & (1u << iqa_value_family(id))))
                fprintf(stderr, fmt, fs->value[id]);
        }
        fprintf(stderr, "  mb intra %d inter %d skip %d", fs->mb_intra, fs->mb_inter, fs->mb_skipped);
        if (fs->reach_fwd)
            fprintf(stderr, "  reach %d", fs->reach_fwd);
        if (fs->reach_bwd)
            fprintf(stderr, "/%d", fs->reach_bwd);
        if (fs->trials > 1)
            fprintf(stderr, "  trials %d", fs->trials);
        if (fs->guard_mean)
            fprintf(stderr, "  guard mean %d", fs->guard_mean);
        fprintf(stderr, "\n");
        if (cli->stats)
            fprintf(stderr,
                    "      ms: read %.2f decode %.2f  front end %.2f + device %.2f, waited "
                    "%.2f  download %.2f  code %.2f  quality %.2f, held %.2f  write %.2f\n",
                    fs->time.read_ms, fs->time.decode_ms, fs->time.fe_ms, fs->time.fe_gpu_ms,
                    fs->time.fe_wait_ms, fs->time.download_ms, fs->time.code_ms,
                    fs->time.quality_ms, fs->time.quality_wait_ms, fs->time.write_ms);
    }
    return 0;
}

static void rate_mode_text(const MpeParam *p, char *buf, size_t size)
{
    double t;
    unsigned m = mpe_param_target(p, &t);
    int id = iqa_family_bit_value(m);
    if (id >= 0)
        snprintf(buf, size, "target %s %g%s", iqa_value_get(id)->label, t,
                 p->bitrate > 0 ? ", bit-rate cap" : "");
    else if (p->bitrate > 0)
        snprintf(buf, size, "%.0f kbit/s %s", p->bitrate / 1000,
                 p->maxrate > p->bitrate ? "variable" : "constant");
    else
        snprintf(buf, size, "q %d", p->qscale);
}

static int write_report(const Cli *cli, const Records *r, const MpeEncoder *enc, const MpeInputInfo *info,
                        int argc, char **argv)
{
    char cmd[2048] = "", mode[96];
    size_t pos = 0;
    int rn, rd;
    MpeError err;
    double target;

    for (int i = 0; i < argc && pos < sizeof(cmd); i++)
        pos += (size_t)snprintf(cmd + pos, sizeof(cmd) - pos, "%s%s", i ? " " : "", argv[i]);
    mpe_encoder_stream_rate(enc, &rn, &rd);
    rate_mode_text(&cli->param, mode, sizeof(mode));
    MpeReportInfo ri = {
        .title = cli->output,
        .input = cli->input,
        .output = cli->output,
        .command_line = cmd,
        .format = cli->param.format == MPE_FORMAT_MPEG1 ? "MPEG-1" : "MPEG-2",
        .backend = mpe_encoder_backend(enc),
        .width = info->width,
        .height = info->height,
        .fps = (double)rn / rd,
        .metrics = r->summary.metrics,
        .target_metric = mpe_param_target(&cli->param, &target),
        .target = target,
        .bitrate = cli->param.bitrate,
    };
    if (mpe_report_write_file(outputs[OUT_REPORT].f, cli->report, &ri, r->all, r->n, &err) < 0) {
        fprintf(stderr, "mpegenc: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static const char *input_name(const Cli *cli)
{
    return !strcmp(cli->input, "-") ? "<stdin>" : cli->input;
}

/* --seek: the first frames of the input are passed over (the info may then
 * be the new first frame's); *total: the frames the run will encode, for
 * the progress line, -1 when that is not known (a pipe without --frames).
 * Returns -1 to go on, else the exit status. */
static int seek_input(const Cli *cli, MpeInput *in, long *total)
{
    long have, left;
    MpeError err;
    int ret = mpe_input_skip(in, cli->param.seek, &have, &err);

    if (ret < 0) {
        fprintf(stderr, "mpegenc: %s\n", err.msg);
        return EXIT_RUNTIME;
    }
    if (ret == 0) {
        fprintf(stderr, "mpegenc: %s: no frames after --seek %d (the input has %ld frame%s)\n",
                input_name(cli), cli->param.seek, have, have == 1 ? "" : "s");
        return EXIT_RUNTIME;
    }
    left = mpe_input_frames_left(in);
    *total = left < 0 ? (cli->param.frames ? cli->param.frames : -1)
                      : cli->param.frames ? MPE_MIN(left, (long)cli->param.frames) : left;
    return -1;
}

/* The command line's own checks, after parse_args and before any input is
 * opened (mpegenc-mpi's too).  Returns -1 to go on, else the exit status. */
static int check_cli(Cli *cli, MpeLog *log)
{
    MpeError err = { "" };
    double target;

    if (cli->verbose)
        log->level = cli->verbose > 1 ? MPE_LOG_DEBUG : MPE_LOG_INFO;
    if (cli->param.format == MPE_FORMAT_AUTO)
        cli->param.format = has_ext(cli->output, ".m1v") ? MPE_FORMAT_MPEG1 : MPE_FORMAT_MPEG2;
    if (cli->recon && !strcmp(cli->recon, "-") && !strcmp(cli->output, "-")) {
        fprintf(stderr, "mpegenc: --recon and --output cannot both be stdout\n");
        return EXIT_USAGE;
    }
    if (cli->report && !has_ext(cli->report, ".html") && !has_ext(cli->report, ".htm")) {
        fprintf(stderr, "mpegenc: %s: the report is an HTML page: name it FILE.html\n", cli->report);
        return EXIT_USAGE;
    }
    if (cli->log && !has_ext(cli->log, ".csv") && !has_ext(cli->log, ".jsonl") &&
        !has_ext(cli->log, ".json")) {
        fprintf(stderr, "mpegenc: %s: the log is CSV, JSON Lines or libvmaf-style JSON: name it "
                        "FILE.csv, FILE.jsonl or FILE.json\n", cli->log);
        return EXIT_USAGE;
    }
    if (mpe_param_check(&cli->param, &err) < 0) {
        fprintf(stderr, "mpegenc: %s\n", err.msg);
        return EXIT_USAGE;
    }
    /* a quality target is measured, so it is logged too */
    cli->param.iqa |= mpe_param_target(&cli->param, &target);
    return -1;
}

int main(int argc, char **argv)
{
    Cli cli = { .progress = -1 };
    MpeProgress pg = { 0 };
    MpeLog log = { log_to_stderr, &pg, MPE_LOG_WARNING };
    MpeError err = { "" };
    MpeInput *in = NULL;
    MpePool *pool = NULL;   /* the run's CPU threads: slices, cpu front end, metrics, PNG decoding */
    MpeEncoder *enc = NULL;
    MpeFrame frame = { 0 };
    const MpeInputInfo *info;
    uint64_t bytes = 0;
    int frames = 0, coded = 0, flushing = 0, ok = 0, ret, read_threads, interrupted = 0, damaged_input = 0;
    long total = -1;
    double t0, target;
    StageTotals st = { 0 };
    MpeStageTimes caller = { 0 };   /* the caller's stages since the last picture */
    Records rs = { 0 };
    FILE *out, *rec;
    MpePsMux *mux = NULL;

    mpe_param_default(&cli.param);
    if ((ret = parse_args(&cli, argc, argv)) >= 0 || (ret = check_cli(&cli, &log)) >= 0)
        return ret;
    /* the metric first: an argument list's order of evaluation is unspecified */
    const unsigned target_metric = mpe_param_target(&cli.param, &target);
    mpe_summary_init(&rs.summary, target_metric, target);

    t0 = mpe_time_ms();
    if (mpe_input_open(&in, cli.input, cli.param.start_number, &err) < 0) {
        fprintf(stderr, "mpegenc: %s\n", err.msg);
        return EXIT_RUNTIME;
    }
    if ((ret = seek_input(&cli, in, &total)) >= 0) {
        mpe_input_close(in);
        return ret;
    }
    read_threads = cli.param.read_threads >= 0
                       ? cli.param.read_threads
                       : mpe_input_auto_threads(in, cli.param.threads > 0 ? cli.param.threads
                                                                          : mpe_cpu_count());
    info = mpe_input_info(in);
    mpe_summary_set_size(&rs.summary, info->width, info->height);
    cli.param.width = info->width;
    cli.param.height = info->height;
    cli.param.length = total > 0 ? total : 0;
    /* pictures coded on a thread of their own while the next frames go
     * through the front end: the reconstruction then does not come back
     * with the picture, which --recon writes */
    cli.param.pipeline = !cli.recon;
    if (!cli.param.fps_num && info->fps_num > 0) {
        cli.param.fps_num = info->fps_num;
        cli.param.fps_den = info->fps_den;
    }
    /* parameters no encoder can take (a frame rate without a code, ...) are
     * the command line's problem: status 2, before any output exists */
    if (mpe_encoder_check_params(&cli.param, &err) < 0) {
        fprintf(stderr, "mpegenc: %s\n", err.msg);
        mpe_input_close(in);
        return EXIT_USAGE;
    }
    if ((ret = check_outputs(&cli, in)) >= 0 || (ret = choose_container(&cli)) >= 0) {
        mpe_input_close(in);
        return ret;
    }
    /* from here a signal takes the temporaries away */
    install_signals();
    if (open_outputs(&cli) < 0)
        goto end;
    out = outputs[OUT_STREAM].f;
    rec = outputs[OUT_RECON].f;
    if (mpe_frame_alloc(&frame, info->format, info->width, info->height) < 0) {
        fprintf(stderr, "mpegenc: out of memory for %dx%d frames\n", info->width, info->height);
        goto end;
    }
    /* one set of threads, sized once, for every parallel loop of the run */
    if (mpe_pool_open(&pool, cli.param.threads > 0 ? cli.param.threads : mpe_cpu_count(),
                      &err) < 0) {
        fprintf(stderr, "mpegenc: %s\n", err.msg);
        goto end;
    }
    /* the readers start first: they decode the first frames while the
     * encoder opens its GPU backend (a context costs ~0.3 s on some machines) */
    mpe_input_set_cpu_flags(in, mpe_param_cpu_flags(&cli.param));
    if (mpe_input_start_ahead_pool(in, read_threads, pool, &err) < 0) {
        fprintf(stderr, "mpegenc: %s\n", err.msg);
        goto end;
    }
    st.open_ms = mpe_time_ms();
    if (mpe_encoder_open_pool(&enc, &cli.param, pool, &log, &err) < 0) {
        fprintf(stderr, "mpegenc: %s\n", err.msg);
        goto end;
    }
    st.open_ms = mpe_time_ms() - st.open_ms;
    if (rec) {
        int rn, rd;
        mpe_encoder_stream_rate(enc, &rn, &rd);
        if (mpe_y4m_write_header(rec, info->width, info->height, rn, rd) < 0) {
            fprintf(stderr, "mpegenc: %s: write error: %s\n", outputs[OUT_RECON].path,
                    strerror(errno ? errno : EIO));
            goto end;
        }
    }
    if (cli.container == CONTAINER_PS) {
        int rn, rd;
        mpe_encoder_stream_rate(enc, &rn, &rd);
        /* I and P pictures only: decoded in display order (reorder 0); with B
         * pictures an anchor is decoded a picture before it is shown */
        if (mpe_ps_open(&mux, cli.param.format != MPE_FORMAT_MPEG1, rn, rd, mpe_encoder_bframes(enc) ? 1 : 0,
                        MPE_MAX(cli.param.bitrate, cli.param.maxrate), &err) < 0) {
            fprintf(stderr, "mpegenc: %s: %s\n", outputs[OUT_STREAM].path, err.msg);
            goto end;
        }
    }
    if (cli.log && mpe_qlog_open_file(&rs.qlog, outputs[OUT_LOG].f, cli.log, &err) < 0) {
        fprintf(stderr, "mpegenc: %s\n", err.msg);
        goto end;
    }

    {
        int rn, rd;
        double target_value;
        mpe_encoder_stream_rate(enc, &rn, &rd);
        mpe_progress_start(&pg, stderr, cli.progress, cli.quiet, cli.verbose, total, (double)rn / rd,
                           mpe_param_target(&cli.param, &target_value));
    }
    for (int read = 0;; read++) {
        MpeOutput o;
        MpeFrameStats fs;
        double ta = mpe_time_ms(), tb;
        int got = 0;
        if (flushing) {
            got = 0;           /* the flush goes on until nothing comes out */
        } else if (stop_requested) {
            interrupted = 1;   /* flush: the picture in hand is coded, the stream closed */
        } else if (cli.param.frames && read >= cli.param.frames) {
            got = 0;           /* --frames: as if the input ended here */
        } else {
            got = mpe_input_read(in, &frame, &err);
        }
        if (got == MPE_INPUT_DAMAGED_END) {
            /* the frames before the damage are whole: finish the stream, fail the run */
            mpe_progress_break(&pg);
            fprintf(stderr, "mpegenc: warning: %s\n", err.msg);
            damaged_input = 1;
            got = 0;
        }
        tb = mpe_time_ms();
        caller.read_ms += tb - ta;
        if (got > 0)
            caller.decode_ms += mpe_input_decode_ms(in);
        if (got < 0) {
            mpe_progress_break(&pg);
            fprintf(stderr, "mpegenc: %s\n", err.msg);
            goto end;
        }
        if (got == 0 && read == 0) {
            if (interrupted)
                goto end;
            if (cli.param.seek)
                fprintf(stderr, "mpegenc: %s: no frames after --seek %d\n", input_name(&cli),
                        cli.param.seek);
            else
                fprintf(stderr, "mpegenc: %s: no frames\n", input_name(&cli));
            goto end;
        }
        if (mpe_encode_frame(enc, got ? &frame : NULL, &o, &err) < 0) {
            mpe_progress_break(&pg);
            fprintf(stderr, "mpegenc: %s: %s\n", mpe_input_current_name(in), err.msg);
            goto end;
        }
        ta = mpe_time_ms();
        st.encode_ms += ta - tb;
        if (mux && o.size &&
            mpe_ps_write(mux, out, o.data, o.size, o.coded, o.coded_display_index, coded,
                         &err) < 0) {
            mpe_progress_break(&pg);
            fprintf(stderr, "mpegenc: %s: %s\n", outputs[OUT_STREAM].path, err.msg);
            goto end;
        }
        if (!mux && o.size && fwrite(o.data, 1, o.size, out) != o.size) {
            mpe_progress_break(&pg);
            fprintf(stderr, "mpegenc: %s: write error: %s\n", outputs[OUT_STREAM].path,
                    strerror(errno));
            goto end;
        }
        bytes += o.size;
        coded += o.coded;
        if (o.have_picture) {
            if (rec && mpe_y4m_write_picture(rec, o.recon) < 0) {
                mpe_progress_break(&pg);
                fprintf(stderr, "mpegenc: %s: write error: %s\n", outputs[OUT_RECON].path,
                        strerror(errno));
                goto end;
            }
            /* the caller's stages go with the picture that came out */
            caller.write_ms += mpe_time_ms() - ta;
            rs.caller[o.stats.display_index % CALLER_RING] = caller;
            memset(&caller, 0, sizeof(caller));
            frames++;
        } else {
            caller.write_ms += mpe_time_ms() - ta;
        }
        while (mpe_encoder_pop_stats(enc, &fs)) {
            if (take_record(&rs, &cli, &fs) < 0)
                goto end;
            add_times(&st.t, &fs.time);
            st.frames++;
            mpe_progress_picture(&pg, &fs);
        }
        /* each flush call returns at most one picture: call again until
         * nothing comes */
        if (!got && !o.size && !o.have_picture)
            break;
        flushing = !got;
        mpe_progress_update(&pg, frames, bytes);
    }
    mpe_progress_end(&pg, frames, bytes);
    if (mux && mpe_ps_finish(mux, out, &err) < 0) {
        fprintf(stderr, "mpegenc: %s: %s\n", outputs[OUT_STREAM].path, err.msg);
        goto end;
    }
    ok = 1;
    /* a Ctrl-C that came while the input was waiting (stdin) still counts */
    if (stop_requested)
        interrupted = 1;
end:
    if (rs.qlog && mpe_qlog_close(rs.qlog, &err) < 0) {
        if (ok)
            fprintf(stderr, "mpegenc: %s\n", err.msg);
        ok = 0;
    }
    if (ok && cli.report && write_report(&cli, &rs, enc, info, argc, argv) < 0)
        ok = 0;
    ok = close_outputs(ok);
    if (ok && !cli.quiet) {
        int rn, rd;
        char mode[96], text[2048];
        double secs = (mpe_time_ms() - t0) / 1000.0;
        double mse = (double)rs.sse_y / ((double)frames * info->width * info->height);
        mpe_encoder_stream_rate(enc, &rn, &rd);
        rate_mode_text(&cli.param, mode, sizeof(mode));
        fprintf(stderr,
                "mpegenc: %d frames, %llu bytes, %.1f kbit/s, PSNR-Y %.2f dB, %.2f fps "
                "(%s, %s, %s, backend %s)\n",
                frames, (unsigned long long)bytes, bytes * 8.0 * rn / ((double)frames * rd) / 1000.0,
                iqa_psnr_from_mse(mse), frames / (secs > 0 ? secs : 1e-9),
                cli.param.format == MPE_FORMAT_MPEG1 ? "MPEG-1" : "MPEG-2", cli.output, mode,
                mpe_encoder_backend(enc));
        mpe_summary_format_peer(&rs.summary, (double)rn / rd, "mpegenc: ", text, sizeof(text));
        fprintf(stderr, "%s", text);
        if (cli.verbose || rs.summary.target_metric || (rs.summary.metrics & ~(unsigned)MPE_IQA_PSNR)) {
            mpe_summary_format(&rs.summary, (double)rn / rd, text, sizeof(text));
            fprintf(stderr, "%s", text);
        }
        if (cli.stats)
            print_stats(&st, enc, read_threads, secs * 1000.0);
    }
    if (ok && interrupted)
        fprintf(stderr, "mpegenc: interrupted: %s holds the %d frames encoded so far\n", cli.output,
                frames);
    mpe_ps_close(mux);
    mpe_encoder_close(enc);
    mpe_frame_free(&frame);
    mpe_input_close(in);
    mpe_pool_close(pool);   /* last: the encoder and the readers ran on it */
    free(rs.all);
    return interrupted ? EXIT_INTERRUPTED : !ok || damaged_input ? EXIT_RUNTIME : 0;
}
