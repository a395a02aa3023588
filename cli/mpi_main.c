/* mpi_main.c — mpegenc-mpi: one clip encoded across MPI ranks into one
 * standard stream, byte-identical to what mpegenc writes for the same input
 * and options (README "Encoding across MPI ranks").
 *
 *   mpirun -np N mpegenc-mpi [mpegenc options] -i INPUT -o OUT
 *
 * The plan is a function of the input and the options only: the run's
 * frames cut into chunks of --chunk-gops closed GOPs (encoder.h), the same
 * chunks at which every encode restarts its rate control, so a chunk codes
 * to the same bytes wherever it is coded.  Chunks go out longest first from
 * one queue that rank 0 keeps: a worker that finishes a chunk sends its
 * bytes and per-picture records and gets the next index, so a slow rank
 * never holds the others.  Rank 0 codes chunks too, answering between its
 * pictures.  Every rank reads its own frames (it opens the input and skips
 * to its chunk: a PNG pattern by name, a Y4M file by seeking), and takes
 * GPU (local rank mod the devices visible) unless --device names one.
 *
 * Rank 0 writes: chunks in order as they become complete (out-of-order
 * ones wait in memory), the records through the same log and report code
 * as mpegenc, all through common/outfile.c's temporaries, so a failed run
 * leaves no output.  A rank whose chunk fails reports the error; rank 0
 * prints that one line, tells every rank to stop, and the job exits 1.
 * A rank that dies outright makes mpirun end the job; rank 0's signal
 * handler then removes the temporaries.
 *
 * The option parsing, the output checks, the records' log and report and
 * the signal handling are mpegenc's own: main.c is included here with its
 * main renamed, so both programs accept and check exactly the same things. */
#include <mpi.h>

#define main mpegenc_single_main
#include "cli/main.c"
#undef main

#ifdef MPE_HAVE_CUDA
#include "common/cuda.h"
#endif

enum { TAG_RESULT = 1, TAG_ASSIGN = 2, TAG_DATA = 3, TAG_STATUS = 4 };
enum { ASSIGN_DONE = -1, ASSIGN_ABORT = -2 };

/* What a worker sends after each chunk (and, with chunk -1, to ask for its
 * first): then the bytes and the records follow as TAG_DATA messages. */
typedef struct ChunkHeader {
    int chunk;           /* -1: no chunk, just asking */
    int failed;          /* the chunk failed: msg says why, nothing follows */
    long long bytes;
    int records;
    char msg[512];
} ChunkHeader;

typedef struct Chunk {
    int first, frames;   /* frame numbers of the run */
    uint8_t *data;       /* rank 0: the finished chunk's bytes until written */
    size_t size;
    MpeFrameStats *rec;
    int n_rec;
    int done;
} Chunk;

/* Time of one rank, for --stats. */
typedef struct RankTime {
    double busy_ms;      /* coding chunks (input, encoder, flush) */
    double frames;
    double chunks;
} RankTime;

typedef struct Job {
    Cli cli;
    MpeLog log;
    int rank, size;
    Chunk *chunks;
    int n_chunks;
    int *order;          /* chunk indices, longest first */
    int next;            /* the queue's head (rank 0) */
    int written;         /* chunks written, in order (rank 0) */
    int workers_left;    /* workers not yet told there is no more (rank 0) */
    int failed;          /* rank 0: a chunk failed (the message is printed) */
    MpePool *pool;
    MpeEncoder *enc;
    MpeFrame frame;
    int frame_format;
    RankTime time;
    Records rs;
    uint64_t bytes;
    int frames;
} Job;

/* The plan: chunks of chunk_frames (the last may be shorter), longest
 * first, ties in frame order.  Depends on nothing but its arguments. */
static int plan_chunks(Job *j, long total, int chunk_frames)
{
    const long len = chunk_frames > 0 ? chunk_frames : total;

    j->n_chunks = (int)((total + len - 1) / len);
    j->chunks = calloc((size_t)j->n_chunks, sizeof(*j->chunks));
    j->order = calloc((size_t)j->n_chunks, sizeof(*j->order));
    if (!j->chunks || !j->order)
        return -1;
    for (int c = 0; c < j->n_chunks; c++) {
        j->chunks[c].first = (int)(c * len);
        j->chunks[c].frames = (int)MPE_MIN(len, total - c * len);
        j->order[c] = c;
    }
    /* only the last chunk can be shorter: it goes last */
    return 0;
}

static int gpu_count(void)
{
#ifdef MPE_HAVE_CUDA
    int n = 0, dev;
    char why[256];
    while (n < 64 && mpe_cuda_pick(n, 0, &dev, why, sizeof(why)) == 0)
        n++;
    return n;
#else
    return 0;
#endif
}

/* One GPU per rank of a host: the rank's place among the host's ranks,
 * modulo the GPUs it sees.  An explicit --device, the cpu backend, or no
 * CUDA device leave the choice alone. */
static void pick_device(Job *j)
{
    MPI_Comm local;
    int local_rank = 0, n;

    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local) ==
        MPI_SUCCESS) {
        MPI_Comm_rank(local, &local_rank);
        MPI_Comm_free(&local);
    }
    if (j->cli.param.device >= 0 || !strcmp(j->cli.param.backend, "cpu"))
        return;
    if ((n = gpu_count()) > 0)
        j->cli.param.device = local_rank % n;
}

/* Rank 0: a finished chunk, whichever rank coded it; write every chunk now
 * complete in order (the records too: log and report in frame order). */
static int take_chunk(Job *j, int c)
{
    j->chunks[c].done = 1;
    while (j->written < j->n_chunks && j->chunks[j->written].done) {
        Chunk *k = &j->chunks[j->written++];
        if (k->size && fwrite(k->data, 1, k->size, outputs[OUT_STREAM].f) != k->size) {
            fprintf(stderr, "mpegenc: %s: write error: %s\n", outputs[OUT_STREAM].path,
                    strerror(errno));
            return -1;
        }
        j->bytes += k->size;
        for (int i = 0; i < k->n_rec; i++) {
            MpeFrameStats *fs = &k->rec[i];
            j->rs.caller[fs->display_index % CALLER_RING] = fs->time;
            if (take_record(&j->rs, &j->cli, fs) < 0)
                return -1;
        }
        j->frames += k->n_rec;
        free(k->data);
        free(k->rec);
        k->data = NULL;
        k->rec = NULL;
    }
    return 0;
}

static int next_chunk(Job *j)
{
    if (j->failed || stop_requested)
        return j->failed || stop_requested ? ASSIGN_ABORT : ASSIGN_DONE;
    return j->next < j->n_chunks ? j->order[j->next++] : ASSIGN_DONE;
}

/* Rank 0: answer the workers' messages; blocking: until every worker has
 * been told there is no more. */
static int serve(Job *j, int blocking)
{
    for (;;) {
        MPI_Status st;
        int flag = 0;
        if (blocking) {
            if (!j->workers_left)
                return 0;
            MPI_Probe(MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &st);
        } else {
            MPI_Iprobe(MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &flag, &st);
            if (!flag)
                return 0;
        }
        ChunkHeader h;
        const int src = st.MPI_SOURCE;
        MPI_Recv(&h, (int)sizeof(h), MPI_BYTE, src, TAG_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (h.chunk >= 0 && h.failed) {
            if (!j->failed)
                fprintf(stderr, "mpegenc: %s\n", h.msg);
            j->failed = 1;
        } else if (h.chunk >= 0) {
            Chunk *k = &j->chunks[h.chunk];
            k->size = (size_t)h.bytes;
            k->n_rec = h.records;
            k->data = malloc(k->size ? k->size : 1);
            k->rec = malloc((size_t)(k->n_rec ? k->n_rec : 1) * sizeof(*k->rec));
            if (k->data && k->rec) {
                MPI_Recv(k->data, (int)k->size, MPI_BYTE, src, TAG_DATA, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                MPI_Recv(k->rec, (int)(k->n_rec * sizeof(*k->rec)), MPI_BYTE, src, TAG_DATA,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                /* the data is on its way whatever happens: take it, to let the worker go on */
                for (int m = 0; m < 2; m++)
                    MPI_Recv(NULL, 0, MPI_BYTE, src, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            if (!k->data || !k->rec) {
                if (!j->failed)
                    fprintf(stderr, "mpegenc: out of memory for chunk %d\n", h.chunk);
                j->failed = 1;
            } else if (!j->failed && take_chunk(j, h.chunk) < 0) {
                j->failed = 1;
            }
        }
        int next = next_chunk(j);
        MPI_Send(&next, 1, MPI_INT, src, TAG_ASSIGN, MPI_COMM_WORLD);
        if (next < 0)
            j->workers_left--;
    }
}

/* Code chunk c on this rank into *data / *rec (grown as needed).  Rank 0
 * answers the workers between pictures.  Returns 0, or -1 with msg set. */
static int code_chunk(Job *j, int c, uint8_t **data, size_t *size, MpeFrameStats **rec, int *n_rec,
                      char *msg, size_t msg_size)
{
    const Chunk *k = &j->chunks[c];
    const Cli *cli = &j->cli;
    size_t cap = *size;
    MpeInput *in = NULL;
    MpeError err = { "" };
    long have;
    int ret = -1, read_threads;
    double t0 = mpe_time_ms();

    *size = 0;
    *n_rec = 0;
    if (mpe_input_open(&in, cli->input, cli->param.start_number, &err) < 0 ||
        mpe_input_skip(in, (long)cli->param.seek + k->first, &have, &err) < 0)
        goto fail;
    if (have < (long)cli->param.seek + k->first) {
        snprintf(err.msg, sizeof(err.msg), "%s: ends at frame %ld, before chunk %d (frame %d)",
                 input_name(cli), have, c, k->first);
        goto fail;
    }
    read_threads = cli->param.read_threads >= 0 ? cli->param.read_threads
                                                : MPE_MIN(4, mpe_cpu_count());
    mpe_input_set_cpu_flags(in, mpe_param_cpu_flags(&cli->param));
    if (mpe_input_start_ahead_pool(in, read_threads, j->pool, &err) < 0 ||
        mpe_encoder_start_chunk(j->enc, k->first, c == j->n_chunks - 1, &err) < 0)
        goto fail;
    for (int i = 0; i <= k->frames; i++) {
        MpeOutput o;
        MpeFrameStats fs;
        int got = 0;
        double ta = mpe_time_ms();
        if (i < k->frames && (got = mpe_input_read(in, &j->frame, &err)) <= 0) {
            if (got == 0)
                snprintf(err.msg, sizeof(err.msg), "%s: ends within chunk %d (frame %d of %d)",
                         input_name(cli), c, k->first + i, k->first + k->frames);
            goto fail;
        }
        const double read_ms = mpe_time_ms() - ta;
        if (mpe_encode_frame(j->enc, got ? &j->frame : NULL, &o, &err) < 0) {
            char m[sizeof(err.msg)];
            snprintf(m, sizeof(m), "%s", err.msg);
            snprintf(err.msg, sizeof(err.msg), "%s: %.400s", mpe_input_current_name(in), m);
            goto fail;
        }
        if (*size + o.size > cap) {
            size_t ncap = MPE_MAX(2 * cap, *size + o.size + 65536);
            uint8_t *nd = realloc(*data, ncap);
            if (!nd) {
                snprintf(err.msg, sizeof(err.msg), "out of memory for chunk %d", c);
                goto fail;
            }
            *data = nd;
            cap = ncap;
        }
        memcpy(*data + *size, o.data, o.size);
        *size += o.size;
        while (mpe_encoder_pop_stats(j->enc, &fs)) {
            MpeFrameStats *nr = realloc(*rec, (size_t)(*n_rec + 1) * sizeof(**rec));
            if (!nr) {
                snprintf(err.msg, sizeof(err.msg), "out of memory for chunk %d", c);
                goto fail;
            }
            *rec = nr;
            fs.time.read_ms = read_ms;   /* of the frame just read: near enough for the log */
            (*rec)[(*n_rec)++] = fs;
        }
        if (j->rank == 0 && j->size > 1)
            serve(j, 0);
    }
    ret = 0;
    j->time.frames += k->frames;
    j->time.chunks++;
fail:
    if (ret < 0) {
        snprintf(msg, msg_size, "%s", err.msg);
        /* an encoder that failed mid-chunk cannot take another: the job stops anyway */
    }
    mpe_input_close(in);
    j->time.busy_ms += mpe_time_ms() - t0;
    return ret;
}

static void worker_loop(Job *j)
{
    ChunkHeader h = { .chunk = -1 };
    uint8_t *data = NULL;
    MpeFrameStats *rec = NULL;
    size_t cap = 0;

    for (;;) {
        int c;
        MPI_Send(&h, (int)sizeof(h), MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD);
        if (h.chunk >= 0 && !h.failed) {
            MPI_Send(data, (int)h.bytes, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD);
            MPI_Send(rec, (int)(h.records * sizeof(*rec)), MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD);
        }
        MPI_Recv(&c, 1, MPI_INT, 0, TAG_ASSIGN, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (c < 0)
            break;
        size_t size = cap;
        memset(&h, 0, sizeof(h));
        h.chunk = c;
        h.failed = code_chunk(j, c, &data, &size, &rec, &h.records, h.msg, sizeof(h.msg)) < 0;
        cap = MPE_MAX(cap, size);
        h.bytes = (long long)size;
    }
    free(data);
    free(rec);
}

/* Rank 0 codes chunks from the queue too, then waits for the workers. */
static void rank0_loop(Job *j)
{
    j->workers_left = j->size - 1;
    for (;;) {
        int c = next_chunk(j);
        if (c < 0)
            break;
        Chunk *k = &j->chunks[c];
        char msg[512];
        size_t size = 0;
        if (code_chunk(j, c, &k->data, &size, &k->rec, &k->n_rec, msg, sizeof(msg)) < 0) {
            if (!j->failed)
                fprintf(stderr, "mpegenc: %s\n", msg);
            j->failed = 1;
            break;
        }
        k->size = size;
        if (take_chunk(j, c) < 0) {
            j->failed = 1;
            break;
        }
    }
    serve(j, 1);
}

static void print_rank_stats(const Job *j, double wall_ms)
{
    RankTime *all = j->rank == 0 ? calloc((size_t)j->size, sizeof(*all)) : NULL;
    double busy = 0;

    MPI_Gather(&j->time, 3, MPI_DOUBLE, all, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (j->rank || !all)
        return;
    fprintf(stderr, "mpegenc: %d ranks, %d chunks of up to %d pictures, wall %.2f s, %.2f fps:\n",
            j->size, j->n_chunks, j->chunks[0].frames, wall_ms / 1000,
            wall_ms > 0 ? 1000.0 * j->frames / wall_ms : 0.0);
    for (int r = 0; r < j->size; r++) {
        busy += all[r].busy_ms;
        fprintf(stderr, "  rank %3d: %3.0f chunks %5.0f frames, busy %8.2f s (%5.1f%% of wall), "
                        "%.2f fps while busy\n",
                r, all[r].chunks, all[r].frames, all[r].busy_ms / 1000,
                wall_ms > 0 ? 100.0 * all[r].busy_ms / wall_ms : 0.0,
                all[r].busy_ms > 0 ? 1000.0 * all[r].frames / all[r].busy_ms : 0.0);
    }
    fprintf(stderr, "  efficiency %.1f%% (rank time spent coding: busy / (ranks x wall))\n",
            wall_ms > 0 ? 100.0 * busy / (j->size * wall_ms) : 0.0);
    free(all);
}

/* Rank 0's checks and outputs, as mpegenc makes them.  Returns -1 to go on,
 * else the exit status; *total: the run's frames. */
static int prepare(Job *j, long *total, MpeInputInfo *info_out)
{
    Cli *cli = &j->cli;
    MpeInput *in = NULL;
    MpeError err;
    int ret;

    if (!strcmp(cli->input, "-")) {
        fprintf(stderr, "mpegenc: mpegenc-mpi reads a Y4M file or PNG frames (every rank seeks "
                        "to its own chunks), not stdin\n");
        return EXIT_USAGE;
    }
    if (cli->recon || cli->container == CONTAINER_PS) {
        fprintf(stderr, "mpegenc: mpegenc-mpi writes an elementary stream only (no --recon, no "
                        "program stream)\n");
        return EXIT_USAGE;
    }
    if (mpe_input_open(&in, cli->input, cli->param.start_number, &err) < 0) {
        fprintf(stderr, "mpegenc: %s\n", err.msg);
        return EXIT_RUNTIME;
    }
    if ((ret = seek_input(cli, in, total)) >= 0)
        goto out;
    if (*total <= 0) {
        fprintf(stderr, "mpegenc: %s: the number of frames is not known\n", input_name(cli));
        ret = EXIT_RUNTIME;
        goto out;
    }
    *info_out = *mpe_input_info(in);
    cli->param.width = info_out->width;
    cli->param.height = info_out->height;
    if (!cli->param.fps_num && info_out->fps_num > 0) {
        cli->param.fps_num = info_out->fps_num;
        cli->param.fps_den = info_out->fps_den;
    }
    if (mpe_encoder_check_params(&cli->param, &err) < 0) {
        fprintf(stderr, "mpegenc: %s\n", err.msg);
        ret = EXIT_USAGE;
        goto out;
    }
    if ((ret = check_outputs(cli, in)) >= 0 || (ret = choose_container(cli)) >= 0)
        goto out;
    if (cli->container == CONTAINER_PS) {
        fprintf(stderr, "mpegenc: mpegenc-mpi writes an elementary stream only (name it .m1v "
                        "or .m2v)\n");
        ret = EXIT_USAGE;
        goto out;
    }
    ret = -1;
out:
    mpe_input_close(in);
    return ret;
}

int main(int argc, char **argv)
{
    Job j = { .cli = { .progress = -1 } };
    MpeProgress pg = { 0 };
    MpeError err = { "" };
    MpeInputInfo info = { 0 };
    long total = 0;
    int status = -1, ok = 0;
    double t0;

    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "mpegenc: MPI_Init failed\n");
        return EXIT_RUNTIME;
    }
    t0 = mpe_time_ms();
    MPI_Comm_rank(MPI_COMM_WORLD, &j.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &j.size);
    j.log = (MpeLog){ log_to_stderr, &pg, MPE_LOG_WARNING };
    mpe_param_default(&j.cli.param);
    /* rank 0 speaks for the job: the others check quietly after it said yes */
    if (j.rank == 0) {
        if ((status = parse_args(&j.cli, argc, argv)) < 0 &&
            (status = check_cli(&j.cli, &j.log)) < 0) {
            install_signals();
            status = prepare(&j, &total, &info);
            if (status < 0 && open_outputs(&j.cli) < 0)
                status = EXIT_RUNTIME;
        }
    }
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (status >= 0)
        goto finish;
    MPI_Bcast(&total, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    MPI_Bcast(&info, (int)sizeof(info), MPI_BYTE, 0, MPI_COMM_WORLD);
    if (j.rank != 0) {
        parse_args(&j.cli, argc, argv);
        check_cli(&j.cli, &j.log);
        install_signals();
        j.cli.param.width = info.width;
        j.cli.param.height = info.height;
        if (!j.cli.param.fps_num && info.fps_num > 0) {
            j.cli.param.fps_num = info.fps_num;
            j.cli.param.fps_den = info.fps_den;
        }
    }
    pick_device(&j);

    /* every rank opens its encoder: a failure anywhere stops all before any work */
    int open_ok = mpe_frame_alloc(&j.frame, info.format, info.width, info.height) == 0 &&
                  mpe_pool_open(&j.pool, j.cli.param.threads > 0 ? j.cli.param.threads
                                                                  : mpe_cpu_count(), &err) == 0 &&
                  mpe_encoder_open_pool(&j.enc, &j.cli.param, j.pool, &j.log, &err) == 0 &&
                  plan_chunks(&j, total, mpe_encoder_chunk_frames(j.enc)) == 0;
    if (!open_ok)
        fprintf(stderr, "mpegenc: rank %d: %s\n", j.rank, err.msg[0] ? err.msg : "out of memory");
    int all_ok = 0;
    MPI_Allreduce(&open_ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all_ok) {
        status = EXIT_RUNTIME;
        goto finish;
    }
    if (j.rank == 0) {
        double target;
        mpe_summary_init(&j.rs.summary, mpe_param_target(&j.cli.param, &target), target);
        mpe_summary_set_size(&j.rs.summary, info.width, info.height);
        if (j.cli.log && mpe_qlog_open_file(&j.rs.qlog, outputs[OUT_LOG].f, j.cli.log, &err) < 0) {
            fprintf(stderr, "mpegenc: %s\n", err.msg);
            j.failed = 1;
        }
        rank0_loop(&j);
        ok = !j.failed && !stop_requested && j.written == j.n_chunks;
        if (j.rs.qlog && mpe_qlog_close(j.rs.qlog, &err) < 0) {
            if (ok)
                fprintf(stderr, "mpegenc: %s\n", err.msg);
            ok = 0;
        }
        if (ok && j.cli.report && write_report(&j.cli, &j.rs, j.enc, &info, argc, argv) < 0)
            ok = 0;
        ok = close_outputs(ok);
        status = ok ? 0 : stop_requested ? EXIT_INTERRUPTED : EXIT_RUNTIME;
    } else {
        worker_loop(&j);
    }
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (j.cli.stats && !j.cli.quiet && status == 0)
        print_rank_stats(&j, mpe_time_ms() - t0);
    if (j.rank == 0 && status == 0 && !j.cli.quiet) {
        int rn, rd;
        char mode[96], text[2048];
        const double secs = (mpe_time_ms() - t0) / 1000.0;
        const double mse = (double)j.rs.sse_y / ((double)j.frames * info.width * info.height);
        mpe_encoder_stream_rate(j.enc, &rn, &rd);
        rate_mode_text(&j.cli.param, mode, sizeof(mode));
        fprintf(stderr,
                "mpegenc: %d frames, %llu bytes, %.1f kbit/s, PSNR-Y %.2f dB, %.2f fps "
                "(%s, %s, %s, backend %s, %d ranks)\n",
                j.frames, (unsigned long long)j.bytes,
                j.bytes * 8.0 * rn / ((double)j.frames * rd) / 1000.0, iqa_psnr_from_mse(mse),
                j.frames / (secs > 0 ? secs : 1e-9),
                j.cli.param.format == MPE_FORMAT_MPEG1 ? "MPEG-1" : "MPEG-2", j.cli.output, mode,
                mpe_encoder_backend(j.enc), j.size);
        mpe_summary_format(&j.rs.summary, (double)rn / rd, text, sizeof(text));
        if (j.cli.verbose || j.rs.summary.target_metric ||
            (j.rs.summary.metrics & ~(unsigned)MPE_IQA_PSNR))
            fprintf(stderr, "%s", text);
    }
finish:
    if (j.rank == 0 && status != 0)
        close_outputs(0);
    mpe_encoder_close(j.enc);
    mpe_frame_free(&j.frame);
    mpe_pool_close(j.pool);
    if (j.chunks)
        for (int c = 0; c < j.n_chunks; c++) {
            free(j.chunks[c].data);
            free(j.chunks[c].rec);
        }
    free(j.chunks);
    free(j.order);
    free(j.rs.all);
    MPI_Finalize();
    return status;
}
