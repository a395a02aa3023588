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
 * to its chunk: a PNG pattern by name, a Y4M file by seeking); from stdin,
 * which cannot seek, rank 0 reads each chunk as it hands it out and sends
 * the frames with it.  Each rank takes a GPU (its rank on the host mod the
 * devices visible) unless --device names one.
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
#include <limits.h>

/* TAG_STOP: rank 0 to every worker still coding, once, when the job fails
 * or is interrupted: leave the chunk in hand (it is checked between
 * pictures) rather than finish it for nothing. */
enum { TAG_RESULT = 1, TAG_ASSIGN = 2, TAG_DATA = 3, TAG_FRAMES = 4, TAG_STOP = 5 };
enum { ASSIGN_DONE = -1, ASSIGN_ABORT = -2 };

/* Rank 0's answer to a worker: a chunk (or ASSIGN_*), its first frame and
 * its frames, whether it is the run's last (its flush writes
 * sequence_end_code), whether its frames follow as TAG_FRAMES (stdin). */
typedef struct Assign {
    int chunk, first, frames, last, sent;
} Assign;

/* What a worker sends after each chunk (and, with chunk -1, to ask for its
 * first); the bytes and the records follow as two TAG_DATA messages. */
typedef struct ChunkHeader {
    int chunk;           /* -1: no chunk, just asking */
    int failed;          /* the chunk failed: msg says why (empty: stopped), nothing follows */
    long long bytes;
    int records;
    char msg[512];
} ChunkHeader;

/* Rank 0's view of a chunk. */
typedef struct Chunk {
    int first, frames;   /* frame numbers of the run */
    uint8_t *data;       /* the finished chunk's bytes until they are written */
    size_t size;
    MpeFrameStats *rec;
    int n_rec;
    int done;
} Chunk;

/* Time of one rank, for --stats (3 doubles: gathered as MPI_DOUBLE). */
typedef struct RankTime {
    double busy_ms;      /* coding chunks (input, encoder, flush) */
    double frames;
    double chunks;
} RankTime;

/* A chunk's output on the rank that codes it (buffers reused chunk to chunk). */
typedef struct ChunkOut {
    uint8_t *data;
    size_t size, cap;
    MpeFrameStats *rec;
    int n_rec, cap_rec;
} ChunkOut;

typedef struct Job {
    Cli cli;
    MpeLog log;
    int rank, size;
    MpeInputInfo info;
    int chunk_frames;    /* the plan's chunk length */
    long total;          /* frames of the run; -1: until stdin ends */
    /* rank 0: the plan and the queue */
    Chunk *chunks;
    int n_chunks, cap_chunks;
    int next;            /* the queue's head: chunks are handed out in index order,
                            which is longest first (only the last can be shorter) */
    int written;         /* chunks written, in order */
    int workers_left;    /* workers not yet told there is no more */
    uint8_t *active;     /* per rank: a worker not yet told there is no more */
    int stop_sent;
    int failed;          /* a chunk failed (its message is printed) */
    int damaged_input;   /* stdin ended in a damaged frame: the stream is kept, exit 1 */
    /* stdin (rank 0 reads, the workers code) */
    MpeInput *stream;
    MpeFrame *held;      /* rank 0: a chunk's frames, and the next chunk's first in held[len] */
    int have_next, eof;
    MpeFrame *recv;      /* a worker's frames from rank 0 */
    int stopped;         /* a worker has received TAG_STOP */
    /* every rank */
    MpePool *pool;
    MpeEncoder *enc;
    MpeFrame frame;
    RankTime time;
    /* rank 0: what was written */
    Records rs;
    uint64_t bytes;
    int frames;
} Job;

/* The plan: chunks of chunk_frames (the last may be shorter) in frame
 * order, which is longest first.  Depends on nothing but its arguments.
 * From stdin the count is not known: chunks are added as they are read. */
static int plan_chunks(Job *j, long total, int chunk_frames)
{
    const long len = chunk_frames > 0 ? chunk_frames : total > 0 ? total : INT_MAX / 2;

    j->chunk_frames = (int)len;
    j->total = total;
    if (!(j->active = calloc((size_t)j->size, 1)))
        return -1;
    if (total < 0)
        return 0;
    j->n_chunks = j->cap_chunks = (int)((total + len - 1) / len);
    if (!(j->chunks = calloc((size_t)j->n_chunks, sizeof(*j->chunks))))
        return -1;
    for (int c = 0; c < j->n_chunks; c++) {
        j->chunks[c].first = (int)(c * len);
        j->chunks[c].frames = (int)MPE_MIN(len, total - c * len);
    }
    return 0;
}

/* The planes of a frame, for sending it. */
static int frame_planes(const MpeFrame *f, size_t size[3])
{
    const int ch = (f->height + 1) / 2;
    size[0] = (size_t)f->stride[0] * f->height;
    if (f->format == MPE_FRAME_RGB24)
        return 1;
    size[1] = (size_t)f->stride[1] * ch;
    size[2] = (size_t)f->stride[2] * ch;
    return 3;
}

/* n frames of a chunk's worth (plus one), allocated once. */
static int alloc_frames(const Job *j, MpeFrame **frames)
{
    if (*frames)
        return 0;
    if (!(*frames = calloc((size_t)j->chunk_frames + 1, sizeof(**frames))))
        return -1;
    for (int i = 0; i <= j->chunk_frames; i++)
        if (mpe_frame_alloc(&(*frames)[i], j->info.format, j->info.width, j->info.height) < 0)
            return -1;
    return 0;
}

static void free_frames(const Job *j, MpeFrame *frames)
{
    if (frames)
        for (int i = 0; i <= j->chunk_frames; i++)
            mpe_frame_free(&frames[i]);
    free(frames);
}

/* Rank 0, stdin: the next chunk's frames into held[0..n-1], reading one
 * frame past it (kept in held[len] for the next chunk) to know whether it
 * is the last.  Returns n (0 at the end), or -1 with the message printed. */
static int read_stream_chunk(Job *j, int first)
{
    const int len = j->chunk_frames;
    MpeError err;
    int n = 0;

    if (alloc_frames(j, &j->held) < 0) {
        fprintf(stderr, "mpegenc: out of memory for a chunk of %d frames\n", len);
        return -1;
    }
    if (j->have_next) {
        MpeFrame t = j->held[0];
        j->held[0] = j->held[len];
        j->held[len] = t;
        j->have_next = 0;
        n = 1;
    }
    while (!j->eof) {
        int got = j->total >= 0 && first + n >= j->total
                      ? 0 : mpe_input_read(j->stream, &j->held[MPE_MIN(n, len)], &err);
        if (got == MPE_INPUT_DAMAGED_END) {
            /* as mpegenc: the frames before the damage are coded, the run fails */
            fprintf(stderr, "mpegenc: warning: %s\n", err.msg);
            j->damaged_input = 1;
            got = 0;
        }
        if (got < 0) {
            fprintf(stderr, "mpegenc: %s\n", err.msg);
            return -1;
        }
        if (got == 0)
            j->eof = 1;
        else if (n == len)
            j->have_next = 1;
        else
            n++;
        if (j->have_next)
            break;
    }
    return n;
}

/* Rank 0: the job failed or was interrupted: every worker still at work
 * leaves its chunk (TAG_STOP, sent once, before any ASSIGN_ABORT). */
static void stop_workers(Job *j)
{
    const int one = 1;

    if (j->stop_sent)
        return;
    j->stop_sent = 1;
    for (int r = 1; r < j->size; r++)
        if (j->active[r])
            MPI_Send(&one, 1, MPI_INT, r, TAG_STOP, MPI_COMM_WORLD);
}

/* Rank 0: the next chunk off the queue (from stdin: read now, into held). */
static Assign next_chunk(Job *j)
{
    Assign a = { .chunk = ASSIGN_DONE };

    if (j->failed || stop_requested) {
        stop_workers(j);
        a.chunk = ASSIGN_ABORT;
        return a;
    }
    if (j->stream) {
        const int first = j->n_chunks ? j->chunks[j->n_chunks - 1].first +
                                        j->chunks[j->n_chunks - 1].frames : 0;
        const int n = read_stream_chunk(j, first);
        if (n < 0) {
            j->failed = 1;
            stop_workers(j);
            a.chunk = ASSIGN_ABORT;
            return a;
        }
        if (n == 0)
            return a;
        if (j->n_chunks == j->cap_chunks) {
            int cap = j->cap_chunks ? 2 * j->cap_chunks : 64;
            Chunk *c = realloc(j->chunks, (size_t)cap * sizeof(*c));
            if (!c) {
                fprintf(stderr, "mpegenc: out of memory\n");
                j->failed = 1;
                stop_workers(j);
                a.chunk = ASSIGN_ABORT;
                return a;
            }
            memset(c + j->n_chunks, 0, (size_t)(cap - j->n_chunks) * sizeof(*c));
            j->chunks = c;
            j->cap_chunks = cap;
        }
        j->chunks[j->n_chunks] = (Chunk){ .first = first, .frames = n };
        j->next = ++j->n_chunks;
        return (Assign){ j->n_chunks - 1, first, n, !j->have_next, 1 };
    }
    if (j->next >= j->n_chunks)
        return a;
    const Chunk *k = &j->chunks[j->next];
    a = (Assign){ j->next, k->first, k->frames, j->next == j->n_chunks - 1, 0 };
    j->next++;
    return a;
}

/* A worker's log: its messages name the rank; those of opening the encoder
 * are not repeated (every rank opens it alike, and rank 0 says them). */
typedef struct RankLog {
    int rank;
    int opened;
} RankLog;

static void log_rank(void *opaque, int level, const char *msg)
{
    const RankLog *r = opaque;
    if (r->opened || level == MPE_LOG_ERROR)
        fprintf(stderr, "mpegenc: rank %d: %s%s\n", r->rank,
                level == MPE_LOG_WARNING ? "warning: " : "", msg);
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
    if ((n = gpu_count()) > 0) {
        j->cli.param.device = local_rank % n;
        mpe_log(&j->log, MPE_LOG_INFO, "rank %d: CUDA device %d (rank %d of its host, %d device%s)",
                j->rank, j->cli.param.device, local_rank, n, n == 1 ? "" : "s");
    }
}

/* Rank 0: chunk c is finished (its data and records are in place): write
 * every chunk now complete, in order, and its records (log and report in
 * frame order). */
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

/* Rank 0: the worker's result that has arrived (header h from src). */
static void receive_result(Job *j, const ChunkHeader *h, int src)
{
    if (h->failed) {
        if (!j->failed && h->msg[0])
            fprintf(stderr, "mpegenc: %s\n", h->msg);
        j->failed = 1;
        stop_workers(j);
        return;
    }
    Chunk *k = &j->chunks[h->chunk];
    k->size = (size_t)h->bytes;
    k->n_rec = h->records;
    k->data = malloc(k->size ? k->size : 1);
    k->rec = malloc((size_t)(k->n_rec ? k->n_rec : 1) * sizeof(*k->rec));
    if (!k->data || !k->rec) {
        /* the data is on its way whatever happens: take it, to let the worker go on */
        for (int m = 0; m < 2; m++)
            MPI_Recv(NULL, 0, MPI_BYTE, src, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (!j->failed)
            fprintf(stderr, "mpegenc: out of memory for chunk %d\n", h->chunk);
        j->failed = 1;
        stop_workers(j);
        return;
    }
    MPI_Recv(k->data, (int)k->size, MPI_BYTE, src, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(k->rec, (int)(k->n_rec * sizeof(*k->rec)), MPI_BYTE, src, TAG_DATA, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    if (!j->failed && take_chunk(j, h->chunk) < 0) {
        j->failed = 1;
        stop_workers(j);
    }
}

/* Rank 0: answer the workers' messages; blocking: until every worker has
 * been told there is no more. */
static void serve(Job *j, int blocking)
{
    for (;;) {
        MPI_Status st;
        ChunkHeader h;
        int flag = 0;
        if (blocking) {
            if (!j->workers_left)
                return;
            MPI_Probe(MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &st);
        } else {
            MPI_Iprobe(MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &flag, &st);
            if (!flag)
                return;
        }
        const int src = st.MPI_SOURCE;
        MPI_Recv(&h, (int)sizeof(h), MPI_BYTE, src, TAG_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (h.chunk >= 0)
            receive_result(j, &h, src);
        const Assign a = next_chunk(j);
        MPI_Send(&a, (int)(sizeof(a) / sizeof(int)), MPI_INT, src, TAG_ASSIGN, MPI_COMM_WORLD);
        for (int i = 0; a.sent && i < a.frames; i++) {
            size_t size[3];
            for (int p = 0, n = frame_planes(&j->held[i], size); p < n; p++)
                MPI_Send(j->held[i].data[p], (int)size[p], MPI_BYTE, src, TAG_FRAMES,
                         MPI_COMM_WORLD);
        }
        if (a.chunk < 0) {
            j->workers_left--;
            j->active[src] = 0;
        }
    }
}

/* Code chunk a on this rank into out: from frames[] when given (sent by
 * rank 0), else from the input, opened and skipped to the chunk's first
 * frame.  Rank 0 answers the workers between pictures.  Returns 0, or -1
 * with msg set. */
static int code_chunk(Job *j, const Assign *a, const MpeFrame *frames, ChunkOut *out, char *msg,
                      size_t msg_size)
{
    const Cli *cli = &j->cli;
    MpeInput *in = NULL;
    MpeError err = { "" };
    long have;
    int ret = -1;
    const double t0 = mpe_time_ms();

    out->size = 0;
    out->n_rec = 0;
    if (!frames) {
        const int read_threads = cli->param.read_threads >= 0 ? cli->param.read_threads
                                                              : MPE_MIN(4, mpe_cpu_count());
        if (mpe_input_open(&in, cli->input, cli->param.start_number, &err) < 0 ||
            mpe_input_skip(in, (long)cli->param.seek + a->first, &have, &err) < 0)
            goto fail;
        if (have < (long)cli->param.seek + a->first) {
            snprintf(err.msg, sizeof(err.msg), "%s: ends at frame %ld, before chunk %d (frame %d)",
                     input_name(cli), have, a->chunk, a->first);
            goto fail;
        }
        mpe_input_set_cpu_flags(in, mpe_param_cpu_flags(&cli->param));
        if (mpe_input_start_ahead_pool(in, read_threads, j->pool, &err) < 0)
            goto fail;
    }
    if (mpe_encoder_start_chunk(j->enc, a->first, a->last, &err) < 0)
        goto fail;
    /* after the chunk's frames, flush calls until nothing comes out (B
     * pictures leave several pictures to code, one per call) */
    for (int i = 0, more = 1; more; i++) {
        MpeOutput o;
        MpeFrameStats fs;
        const MpeFrame *f = NULL;
        const double ta = mpe_time_ms();
        if (i < a->frames && frames) {
            f = &frames[i];
        } else if (i < a->frames) {
            const int got = mpe_input_read(in, &j->frame, &err);
            if (got == 0)
                snprintf(err.msg, sizeof(err.msg), "%s: ends within chunk %d (frame %d of %d)",
                         input_name(cli), a->chunk, a->first + i, a->first + a->frames);
            if (got <= 0)
                goto fail;
            f = &j->frame;
        }
        const double read_ms = mpe_time_ms() - ta;
        if (mpe_encode_frame(j->enc, f, &o, &err) < 0) {
            char m[sizeof(err.msg)];
            snprintf(m, sizeof(m), "%s", err.msg);
            snprintf(err.msg, sizeof(err.msg), "%s: %.400s",
                     in ? mpe_input_current_name(in) : input_name(cli), m);
            goto fail;
        }
        if (out->size + o.size > out->cap) {
            size_t cap = MPE_MAX(2 * out->cap, out->size + o.size + 65536);
            uint8_t *d = realloc(out->data, cap);
            if (!d)
                goto nomem;
            out->data = d;
            out->cap = cap;
        }
        if (o.size)
            memcpy(out->data + out->size, o.data, o.size);
        out->size += o.size;
        more = i < a->frames || o.size || o.have_picture;
        while (mpe_encoder_pop_stats(j->enc, &fs)) {
            if (out->n_rec == out->cap_rec) {
                int cap = out->cap_rec ? 2 * out->cap_rec : 64;
                MpeFrameStats *r = realloc(out->rec, (size_t)cap * sizeof(*r));
                if (!r)
                    goto nomem;
                out->rec = r;
                out->cap_rec = cap;
            }
            fs.time.read_ms = read_ms;   /* the frame read in this call's: near enough for the log */
            out->rec[out->n_rec++] = fs;
        }
        if (j->rank == 0 && j->size > 1) {
            serve(j, 0);
            if (j->failed) {
                err.msg[0] = '\0';   /* a worker's chunk failed, and it has been said */
                goto fail;
            }
        }
        if (j->rank != 0 && !j->stopped) {
            int stop = 0;
            MPI_Iprobe(0, TAG_STOP, MPI_COMM_WORLD, &stop, MPI_STATUS_IGNORE);
            if (stop) {
                MPI_Recv(&stop, 1, MPI_INT, 0, TAG_STOP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                j->stopped = 1;
                err.msg[0] = '\0';   /* rank 0 has said why */
                goto fail;
            }
        }
    }
    ret = 0;
    j->time.frames += a->frames;
    j->time.chunks++;
    goto fail;
nomem:
    snprintf(err.msg, sizeof(err.msg), "out of memory for chunk %d", a->chunk);
fail:
    if (ret < 0)
        snprintf(msg, msg_size, "%s", err.msg);
    mpe_input_close(in);
    j->time.busy_ms += mpe_time_ms() - t0;
    return ret;
}

static void worker_loop(Job *j)
{
    ChunkHeader h = { .chunk = -1 };
    ChunkOut out = { 0 };

    for (;;) {
        Assign a;
        MPI_Send(&h, (int)sizeof(h), MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD);
        if (h.chunk >= 0 && !h.failed) {
            MPI_Send(out.data, (int)out.size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD);
            MPI_Send(out.rec, (int)(out.n_rec * sizeof(*out.rec)), MPI_BYTE, 0, TAG_DATA,
                     MPI_COMM_WORLD);
        }
        MPI_Recv(&a, (int)(sizeof(a) / sizeof(int)), MPI_INT, 0, TAG_ASSIGN, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        if (a.chunk == ASSIGN_ABORT && !j->stopped) {
            int stop;   /* sent before the ABORT: take it, to leave nothing pending */
            MPI_Recv(&stop, 1, MPI_INT, 0, TAG_STOP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            j->stopped = 1;
        }
        if (a.chunk < 0)
            break;
        memset(&h, 0, sizeof(h));
        h.chunk = a.chunk;
        if (a.sent) {
            /* frames from rank 0 (stdin): received whatever happens, the sends wait for them */
            const int ok = alloc_frames(j, &j->recv) == 0;
            for (int i = 0; i < a.frames; i++) {
                size_t size[3];
                for (int p = 0, n = frame_planes(&j->frame, size); p < n; p++)
                    MPI_Recv(ok ? j->recv[i].data[p] : NULL, ok ? (int)size[p] : 0, MPI_BYTE, 0,
                             TAG_FRAMES, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            if (!ok) {
                h.failed = 1;
                snprintf(h.msg, sizeof(h.msg), "rank %d: out of memory for a chunk of frames",
                         j->rank);
                continue;
            }
        }
        h.failed = code_chunk(j, &a, a.sent ? j->recv : NULL, &out, h.msg, sizeof(h.msg)) < 0;
        h.bytes = (long long)out.size;
        h.records = out.n_rec;
    }
    free(out.data);
    free(out.rec);
}

/* Rank 0 codes chunks from the queue too (from stdin only when alone: it
 * reads for everyone), then waits for the workers. */
static void rank0_loop(Job *j)
{
    ChunkOut out = { 0 };

    j->workers_left = j->size - 1;
    memset(j->active, 1, (size_t)j->size);
    while (!(j->stream && j->size > 1)) {
        const Assign a = next_chunk(j);
        char msg[512];
        if (a.chunk < 0)
            break;
        if (code_chunk(j, &a, a.sent ? j->held : NULL, &out, msg, sizeof(msg)) < 0) {
            if (!j->failed)
                fprintf(stderr, "mpegenc: %s\n", msg);
            j->failed = 1;
            break;
        }
        Chunk *k = &j->chunks[a.chunk];
        k->data = out.data;
        k->size = out.size;
        k->rec = out.rec;
        k->n_rec = out.n_rec;
        out = (ChunkOut){ 0 };
        if (take_chunk(j, a.chunk) < 0) {
            j->failed = 1;
            break;
        }
    }
    free(out.data);
    free(out.rec);
    if (j->failed || stop_requested)
        stop_workers(j);
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
            j->size, j->n_chunks, j->chunk_frames, wall_ms / 1000,
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

/* --chunk-gops auto is one chunk under a bit rate for mpegenc (the rate
 * control keeps what it learnt); here chunks are the point. */
static void resolve_chunks(Cli *cli)
{
    if (cli->param.chunk_gops < 0)
        cli->param.chunk_gops = MPE_CHUNK_GOPS_AUTO;
}

/* Rank 0's checks and outputs, as mpegenc makes them.  Returns -1 to go on,
 * else the exit status; sets j->info and *total (-1: stdin, until it ends). */
static int prepare(Job *j, long *total)
{
    Cli *cli = &j->cli;
    MpeInput *in = NULL;
    MpeError err;
    int ret;

    if (cli->recon) {
        fprintf(stderr, "mpegenc: mpegenc-mpi writes no --recon\n");
        return EXIT_USAGE;
    }
    if (mpe_input_open(&in, cli->input, cli->param.start_number, &err) < 0) {
        fprintf(stderr, "mpegenc: %s\n", err.msg);
        return EXIT_RUNTIME;
    }
    if ((ret = seek_input(cli, in, total)) >= 0)
        goto out;
    j->info = *mpe_input_info(in);
    cli->param.width = j->info.width;
    cli->param.height = j->info.height;
    if (!cli->param.fps_num && j->info.fps_num > 0) {
        cli->param.fps_num = j->info.fps_num;
        cli->param.fps_den = j->info.fps_den;
    }
    if (mpe_encoder_check_params(&cli->param, &err) < 0) {
        fprintf(stderr, "mpegenc: %s\n", err.msg);
        ret = EXIT_USAGE;
        goto out;
    }
    if ((ret = check_outputs(cli, in)) >= 0 || (ret = choose_container(cli)) >= 0)
        goto out;
    if (cli->container == CONTAINER_PS) {
        fprintf(stderr, "mpegenc: %s: mpegenc-mpi writes an elementary stream (name it .m1v or "
                        ".m2v, or say --container es)\n", cli->output);
        ret = EXIT_USAGE;
        goto out;
    }
    /* a pipe cannot be reopened by every rank: rank 0 reads it for all */
    if (mpe_input_frames_left(in) < 0) {
        j->stream = in;
        in = NULL;
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
    RankLog rank_log = { 0 };
    long total = 0;
    int status = -1;
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
    /* rank 0 speaks for the job: the others parse quietly after it said yes */
    if (j.rank == 0 && (status = parse_args(&j.cli, argc, argv)) < 0 &&
        (status = check_cli(&j.cli, &j.log)) < 0) {
        resolve_chunks(&j.cli);
        install_signals();
        if ((status = prepare(&j, &total)) < 0 && open_outputs(&j.cli) < 0)
            status = EXIT_RUNTIME;
    }
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (status >= 0)
        goto finish;
    MPI_Bcast(&total, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    MPI_Bcast(&j.info, (int)sizeof(j.info), MPI_BYTE, 0, MPI_COMM_WORLD);
    if (j.rank != 0) {
        rank_log = (RankLog){ j.rank, 1 };
        j.log.fn = log_rank;
        j.log.opaque = &rank_log;
        parse_args(&j.cli, argc, argv);
        check_cli(&j.cli, &j.log);
        resolve_chunks(&j.cli);
        install_signals();
        j.cli.param.width = j.info.width;
        j.cli.param.height = j.info.height;
        if (!j.cli.param.fps_num && j.info.fps_num > 0) {
            j.cli.param.fps_num = j.info.fps_num;
            j.cli.param.fps_den = j.info.fps_den;
        }
    }
    pick_device(&j);
    /* each rank codes its pictures on a thread of their own while its
     * calls run the front end (no rank writes a reconstruction) */
    j.cli.param.pipeline = 1;

    /* every rank opens its encoder: a failure anywhere stops all before any work */
    rank_log.opened = 0;
    int open_ok = mpe_frame_alloc(&j.frame, j.info.format, j.info.width, j.info.height) == 0 &&
                  mpe_pool_open(&j.pool, j.cli.param.threads > 0 ? j.cli.param.threads
                                                                  : mpe_cpu_count(), &err) == 0 &&
                  mpe_encoder_open_pool(&j.enc, &j.cli.param, j.pool, &j.log, &err) == 0 &&
                  plan_chunks(&j, total, mpe_encoder_chunk_frames(j.enc)) == 0;
    if (!open_ok)
        fprintf(stderr, "mpegenc: rank %d: %s\n", j.rank, err.msg[0] ? err.msg : "out of memory");
    int all_ok = 0;
    rank_log.opened = 1;
    MPI_Allreduce(&open_ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all_ok) {
        status = EXIT_RUNTIME;
        goto finish;
    }
    if (j.rank == 0) {
        double target;
        int ok;
        /* the metric first: an argument list's order of evaluation is unspecified */
        const unsigned target_metric = mpe_param_target(&j.cli.param, &target);
        mpe_summary_init(&j.rs.summary, target_metric, target);
        mpe_summary_set_size(&j.rs.summary, j.info.width, j.info.height);
        if (j.cli.log && mpe_qlog_open_file(&j.rs.qlog, outputs[OUT_LOG].f, j.cli.log, &err) < 0) {
            fprintf(stderr, "mpegenc: %s\n", err.msg);
            j.failed = 1;
        }
        rank0_loop(&j);
        ok = !j.failed && !stop_requested && j.written == j.n_chunks;
        if (ok && !j.frames) {
            fprintf(stderr, "mpegenc: %s: no frames\n", input_name(&j.cli));
            ok = 0;
        }
        if (j.rs.qlog && mpe_qlog_close(j.rs.qlog, &err) < 0) {
            if (ok)
                fprintf(stderr, "mpegenc: %s\n", err.msg);
            ok = 0;
        }
        if (ok && j.cli.report && write_report(&j.cli, &j.rs, j.enc, &j.info, argc, argv) < 0)
            ok = 0;
        ok = close_outputs(ok);
        status = !ok ? (stop_requested ? EXIT_INTERRUPTED : EXIT_RUNTIME)
                     : j.damaged_input ? EXIT_RUNTIME : 0;
        if (ok && !j.cli.quiet) {
            int rn, rd;
            char mode[96], text[2048];
            const double secs = (mpe_time_ms() - t0) / 1000.0;
            const double mse = (double)j.rs.sse_y / ((double)j.frames * j.info.width * j.info.height);
            mpe_encoder_stream_rate(j.enc, &rn, &rd);
            rate_mode_text(&j.cli.param, mode, sizeof(mode));
            fprintf(stderr,
                    "mpegenc: %d frames, %llu bytes, %.1f kbit/s, PSNR-Y %.2f dB, %.2f fps "
                    "(%s, %s, %s, backend %s, %d ranks)\n",
                    j.frames, (unsigned long long)j.bytes,
                    j.bytes * 8.0 * rn / ((double)j.frames * rd) / 1000.0, iqa_psnr_from_mse(mse),
                    j.frames / (secs > 0 ? secs : 1e-9),
                    j.cli.param.format == MPE_FORMAT_MPEG1 ? "MPEG-1" : "MPEG-2", j.cli.output,
                    mode, mpe_encoder_backend(j.enc), j.size);
            if (j.cli.verbose || j.rs.summary.target_metric ||
                (j.rs.summary.metrics & ~(unsigned)MPE_IQA_PSNR)) {
                mpe_summary_format(&j.rs.summary, (double)rn / rd, text, sizeof(text));
                fprintf(stderr, "%s", text);
            }
        }
    } else {
        worker_loop(&j);
    }
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (j.cli.stats && !j.cli.quiet && status == 0)
        print_rank_stats(&j, mpe_time_ms() - t0);
finish:
    if (j.rank == 0 && status != 0)
        close_outputs(0);
    mpe_encoder_close(j.enc);
    mpe_frame_free(&j.frame);
    mpe_input_close(j.stream);
    free_frames(&j, j.held);
    free_frames(&j, j.recv);
    mpe_pool_close(j.pool);
    for (int c = 0; c < j.n_chunks; c++) {
        free(j.chunks[c].data);
        free(j.chunks[c].rec);
    }
    free(j.chunks);
    free(j.active);
    free(j.rs.all);
    MPI_Finalize();
    return status;
}
