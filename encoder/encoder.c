/* encoder.c — the picture loop: front end, picture/GOP structure, headers,
 * slices, statistics.
 *
 * Pipeline of one mpe_encode_frame(frame n+1) call:
 *
 *   fetch n        wait for the front end's slot of n, download its planes and
 *                  vectors (main thread; already done when threads > 1)
 *   front end n+1  submit + full-pel search of n+1 against the ORIGINAL n,
 *                  then wait for it and download: with threads > 1 all of it
 *                  on the front-end task's thread, for every backend (a GPU
 *                  backend's host side, copying 12 MB of RGB into pinned
 *                  memory and 6 MB of planes out, costs more than its
 *                  kernels)
 *   code n         headers on the main thread, then one job per slice (one
 *                  macroblock row) on the pool, each into its own bit writer;
 *                  concatenated in row order
 *   quality n      on the reconstruction (PSNR now; see quality_stage)
 *   join n+1       wait for the front end of n+1
 *
 * Nothing a slice computes depends on which thread ran it or when: slices
 * share only read-only inputs (source, reference reconstruction, vectors)
 * and write disjoint rows of the new reconstruction and their own writer and
 * statistics, which are combined in slice order.  Streams are therefore
 * byte-identical for every thread count. */
#include "encoder.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bitstream/mpeg12.h"
#include "common/cpu.h"
#include "common/threads.h"
#include "common/timer.h"
#include "encoder/dsp.h"
#include "encoder/quant.h"
#include "encoder/slice.h"
#include "gpu/frontend.h"
#include "iqa/iqa.h"

#define FRONTEND_SLOTS 2
#define ORIG_RING 2   /* source pictures kept: n and n-1 (see quality_stage) */

/* One slice's output.  Slices are coded on different threads at once, so
 * each gets whole cache lines: a writer's position and pending bits change
 * with every code written, and sharing a line with a neighbour's would make
 * the cores fight over it. */
typedef struct SliceJob {
    _Alignas(64) BsWriter bw;   /* reused picture after picture: no mallocs once grown */
    MpeSliceStats ss;
    uint64_t sse[3];            /* recon vs source over the slice's rows, true size */
    int row_begin, row_end;     /* macroblock rows */
} SliceJob;

/* The front end's work for one frame when it runs on the task thread. */
typedef struct FrontendJob {
    MpeEncoder *e;
    const MpeFrame *frame;
    int n;                      /* frame number */
    int ret;
    double ms;                  /* submit + wait + download, on the task thread */
    MpeError err;
} FrontendJob;

struct MpeEncoder {
    MpeParam p;
    MpeLog log;
    int mpeg2;
    int f_code;
    int rate_num, rate_den;       /* as signalled in the stream */
    BsSequence seq;
    const GpuBackend *fe;
    GpuContext *fe_ctx;
    MpeDsp dsp;
    MpeQuantizer quant;
    GpuSad16Fn sad16;
    MpePicture orig[ORIG_RING];   /* source of picture n in orig[n % ORIG_RING] */
    MpePicture recon[2];
    int cur_recon;                /* index of the latest reference reconstruction */
    GpuMotion *mv[FRONTEND_SLOTS];   /* vectors of the frame in each slot */
    BsWriter out;
    int submitted;                /* frames handed to the front end */
    int frame_index;              /* frames coded; frame_index < submitted: one is waiting */
    int gop_start;                /* display index of the current GOP's first picture */
    int flushed;

    int threads;                  /* slice-coding threads */
    MpePool *pool;
    MpeTask *fe_task;             /* non-NULL: the front end runs on its own thread */
    FrontendJob fe_job;
    SliceJob *slices;
    int n_slices;
    /* front-end times of the frame in each slot, reported when it is coded */
    double slot_fe_ms[FRONTEND_SLOTS], slot_wait_ms[FRONTEND_SLOTS];
    double slot_download_ms[FRONTEND_SLOTS], slot_gpu_ms[FRONTEND_SLOTS];
    int slot_fetched[FRONTEND_SLOTS];   /* planes and vectors already downloaded */
};

/* frame_rate_code values of 13818-2 Table 6-4 (= 11172-2 §2.4.3.2). */
static const int rate_table[9][2] = {
    { 0, 0 }, { 24000, 1001 }, { 24, 1 }, { 25, 1 }, { 30000, 1001 },
    { 30, 1 }, { 50, 1 }, { 60000, 1001 }, { 60, 1 },
};

/* The closest rate the format can signal; MPEG-2 may scale a code's rate by
 * (n+1)/(d+1) with frame_rate_extension_n (2 bits) and _d (5 bits). */
static void choose_frame_rate(MpeEncoder *e, int num, int den)
{
    double want = (double)num / den, best_err = 1e30;
    const int max_n = e->mpeg2 ? 3 : 0, max_d = e->mpeg2 ? 31 : 0;

    for (int code = 1; code <= 8; code++) {
        for (int n = 0; n <= max_n; n++) {
            for (int d = 0; d <= max_d; d++) {
                long long rn = (long long)rate_table[code][0] * (n + 1);
                long long rd = (long long)rate_table[code][1] * (d + 1);
                double err;
                if ((long long)num * rd == (long long)den * rn)
                    err = 0;
                else
                    err = fabs(log(((double)rn / (double)rd) / want)) + 1e-9;
                if (err < best_err) {
                    best_err = err;
                    e->seq.frame_rate_code = code;
                    e->seq.frame_rate_ext_n = n;
                    e->seq.frame_rate_ext_d = d;
                    e->rate_num = (int)rn;
                    e->rate_den = (int)rd;
                }
            }
        }
    }
    if (best_err > 0)
        mpe_log(&e->log, MPE_LOG_WARNING,
                "frame rate %d/%d cannot be signalled in %s; the stream says %d/%d", num, den,
                e->mpeg2 ? "MPEG-2" : "MPEG-1", e->rate_num, e->rate_den);
}

/* MPEG-2 Main profile at the lowest level that holds the picture size and
 * rate (13818-2 Table 8-11/8-12); bit_rate and vbv_buffer_size are that
 * level's maxima, since constant-quantiser streams have no rate of their own. */
static void choose_profile_level(MpeEncoder *e)
{
    const int w = e->p.width, h = e->p.height;
    const double rate = (double)e->rate_num / e->rate_den;

    if (!e->mpeg2) {
        e->seq.bit_rate = 0x3FFFF;       /* 11172-2: variable bit rate */
        e->seq.vbv_buffer_size = 1023;   /* largest expressible: no VBV model in constant-q */
        return;
    }
    if (w <= 720 && h <= 576 && rate <= 30.0) {
        e->seq.profile_and_level = 0x48;   /* Main@Main */
        e->seq.bit_rate = 15000000 / 400;
        e->seq.vbv_buffer_size = 112;
    } else if (w <= 1440 && h <= 1152 && rate <= 60.0) {
        e->seq.profile_and_level = 0x46;   /* Main@High-1440 */
        e->seq.bit_rate = 60000000 / 400;
        e->seq.vbv_buffer_size = 448;
    } else {
        e->seq.profile_and_level = 0x44;   /* Main@High */
        e->seq.bit_rate = 80000000 / 400;
        e->seq.vbv_buffer_size = 597;
        if (w > 1920 || h > 1152 || rate > 60.0)
            mpe_log(&e->log, MPE_LOG_INFO,
                    "%dx%d at %.3f fps exceeds Main@High; signalled as Main@High", w, h, rate);
    }
}

/* Smallest f_code whose range [-16f, 16f-1] half-pels holds every vector a
 * +-R full-pel search plus half-pel refinement can produce, +-(2R+1). */
static int f_code_for_range(int range)
{
    int f_code = 1;
    while (16 * (1 << (f_code - 1)) - 1 < 2 * range + 1)
        f_code++;
    return f_code;
}

void mpe_encoder_close(MpeEncoder *e)
{
    if (!e)
        return;
    /* the task first: it may still be running the front end */
    mpe_task_close(e->fe_task);
    mpe_pool_close(e->pool);
    if (e->fe_ctx)
        e->fe->close(e->fe_ctx);
    for (int i = 0; i < ORIG_RING; i++)
        mpe_picture_free(&e->orig[i]);
    mpe_picture_free(&e->recon[0]);
    mpe_picture_free(&e->recon[1]);
    for (int i = 0; i < FRONTEND_SLOTS; i++)
        free(e->mv[i]);
    bs_writer_free(&e->out);
    if (e->slices)
        for (int i = 0; i < e->n_slices; i++)
            bs_writer_free(&e->slices[i].bw);
    free(e->slices);
    free(e);
}

/* Slices: one per macroblock row.  MPEG-1 slice start codes stop at row 175
 * (0xAF), so in a taller MPEG-1 picture the last slice runs to the bottom. */
static int plan_slices(MpeEncoder *e)
{
    const int mbh = e->orig[0].mb_height;
    int n = 0;

    e->n_slices = !e->mpeg2 && mbh > 175 ? 175 : mbh;
    e->slices = aligned_alloc(_Alignof(SliceJob), (size_t)e->n_slices * sizeof(SliceJob));
    if (!e->slices)
        return -ENOMEM;
    memset(e->slices, 0, (size_t)e->n_slices * sizeof(SliceJob));
    for (int row = 0; row < mbh; n++) {
        int end = row + 1;
        if (!e->mpeg2 && row == 174)
            end = mbh;
        e->slices[n].row_begin = row;
        e->slices[n].row_end = end;
        row = end;
    }
    return 0;
}

int mpe_encoder_open(MpeEncoder **out, const MpeParam *p, const MpeLog *log, MpeError *err)
{
    MpeEncoder *e;
    int ret;

    *out = NULL;
    if (p->width < 16 || p->width > 4095 || p->height < 16 || p->height > 4095)
        return mpe_error(err, -EINVAL, "frame size %dx%d outside 16x16..4095x4095", p->width,
                         p->height);
    if (p->qscale < 1 || p->qscale > 31 || p->gop < 1 || p->search_range < 0 ||
        p->search_range > GPU_MAX_SEARCH_RANGE || p->threads < 0)
        return mpe_error(err, -EINVAL, "invalid encoder parameters");
    if (!(e = calloc(1, sizeof(*e))))
        return mpe_error(err, -ENOMEM, "out of memory");
    e->p = *p;
    if (log)
        e->log = *log;
    e->mpeg2 = p->format != MPE_FORMAT_MPEG1;
    e->f_code = f_code_for_range(p->search_range);
    if (p->dsp == MPE_DSP_C)
        mpe_dsp_init_reference(&e->dsp);
    else
        mpe_dsp_init(&e->dsp, mpe_cpu_flags());
    /* constant quantiser: one context for the whole stream */
    mpe_quantizer_init(&e->quant, p->qscale, mpe_default_intra_matrix, mpe_default_inter_matrix,
                       e->mpeg2 ? 2047 : 255);
    e->sad16 = gpu_sad16_best();

    e->seq.mpeg2 = e->mpeg2;
    e->seq.width = p->width;
    e->seq.height = p->height;
    e->seq.aspect_ratio_code = 1;   /* square pels / samples */
    e->seq.low_delay = 1;           /* I and P pictures only: no reordering */
    choose_frame_rate(e, p->fps_num > 0 ? p->fps_num : 25, p->fps_num > 0 ? p->fps_den : 1);
    choose_profile_level(e);

    if ((ret = gpu_backend_select(&e->fe, p->backend, &e->log, err)) < 0)
        goto fail;
    GpuConfig cfg = { .width = p->width, .height = p->height, .slots = FRONTEND_SLOTS, .threads = p->threads,
                      .device = p->device, .log = &e->log };
    if ((ret = e->fe->open(&e->fe_ctx, &cfg, err)) < 0)
        goto fail;
    for (int i = 0; i < ORIG_RING; i++)
        if (mpe_picture_alloc(&e->orig[i], p->width, p->height) < 0)
            goto nomem;
    if (mpe_picture_alloc(&e->recon[0], p->width, p->height) < 0 ||
        mpe_picture_alloc(&e->recon[1], p->width, p->height) < 0 ||
        bs_writer_init(&e->out, 1 << 16) < 0 || plan_slices(e) < 0)
        goto nomem;
    for (int i = 0; i < FRONTEND_SLOTS; i++)
        if (!(e->mv[i] = calloc((size_t)e->orig[0].mb_width * e->orig[0].mb_height, sizeof(*e->mv[i]))))
            goto nomem;

    /* more threads than slices would only wait */
    e->threads = p->threads > 0 ? p->threads : mpe_cpu_count();
    e->threads = MPE_MIN(e->threads, e->n_slices);
    if ((ret = mpe_pool_open(&e->pool, e->threads, err)) < 0)
        goto fail;
    /* The cpu backend works synchronously inside its calls, and a GPU
     * backend's host side (copies into and out of pinned memory) costs
     * milliseconds too, so with threads to spare the front end gets a thread
     * of its own (backends take calls from any one thread at a time). */
    if (e->threads > 1 && (ret = mpe_task_open(&e->fe_task, err)) < 0)
        goto fail;
    mpe_log(&e->log, MPE_LOG_INFO, "%d slice threads, %d slices, front end %s", e->threads,
            e->n_slices, e->fe_task ? "on its own thread" : "asynchronous or inline");
    *out = e;
    return 0;
nomem:
    ret = mpe_error(err, -ENOMEM, "out of memory for %dx%d pictures", p->width, p->height);
fail:
    mpe_encoder_close(e);
    return ret;
}

const char *mpe_encoder_backend(const MpeEncoder *e)
{
    return e->fe->name;
}

void mpe_encoder_stream_rate(const MpeEncoder *e, int *num, int *den)
{
    *num = e->rate_num;
    *den = e->rate_den;
}

int mpe_encoder_threads(const MpeEncoder *e)
{
    return e->threads;
}

int mpe_encoder_frontend_async(const MpeEncoder *e)
{
    return e->fe_task != NULL;
}

static void write_gop_header(MpeEncoder *e)
{
    /* time code of the GOP's first picture at the nominal integer rate */
    const int ifps = (e->rate_num + e->rate_den / 2) / e->rate_den;
    const int n = e->frame_index, secs = n / ifps;
    bs_write_gop_header(&e->out, (secs / 3600) % 24, (secs / 60) % 60, secs % 60, n % ifps, 1);
}

typedef struct CodeJob {
    MpeEncoder *e;
    const MpePictureCtx *pc;
} CodeJob;

/* Distortion of the slice's rows (luma rows 16*begin.., chroma 8*begin..,
 * clipped to the true size): measured here, while the rows are still in
 * this core's cache, instead of in a serial pass over the picture. */
static void slice_sse(const MpeEncoder *e, const MpePictureCtx *pc, SliceJob *s)
{
    for (int c = 0; c < 3; c++) {
        const int w = c ? (e->p.width + 1) / 2 : e->p.width;
        const int h = c ? (e->p.height + 1) / 2 : e->p.height;
        const int mb = c ? 8 : 16;
        const int y0 = s->row_begin * mb, y1 = MPE_MIN(s->row_end * mb, h);
        s->sse[c] = y1 > y0 ? iqa_sse_plane(pc->orig->plane[c] + (ptrdiff_t)y0 * pc->orig->stride[c],
                                            pc->orig->stride[c],
                                            pc->recon->plane[c] + (ptrdiff_t)y0 * pc->recon->stride[c],
                                            pc->recon->stride[c], w, y1 - y0)
                            : 0;
    }
}

static void code_slice_job(void *ctx, int index, int worker)
{
    const CodeJob *job = ctx;
    SliceJob *s = &job->e->slices[index];

    (void)worker;
    bs_writer_reset(&s->bw);
    mpe_code_slice(job->pc, s->row_begin, s->row_end, &s->bw, &s->ss);
    bs_flush(&s->bw);
    slice_sse(job->e, job->pc, s);
}

static void code_slices(MpeEncoder *e, const MpePictureCtx *pc, MpeFrameStats *fs)
{
    CodeJob job = { e, pc };

    mpe_pool_run(e->pool, e->n_slices, code_slice_job, &job);
    /* in slice order, whatever order they finished in */
    for (int i = 0; i < e->n_slices; i++) {
        const SliceJob *s = &e->slices[i];
        bs_append(&e->out, &s->bw);
        fs->mb_intra += s->ss.intra;
        fs->mb_inter += s->ss.inter;
        fs->mb_skipped += s->ss.skipped;
        for (int c = 0; c < 3; c++)
            fs->sse[c] += s->sse[c];
    }
}

/* The in-loop quality stage: it sees the source (e->orig[n % ORIG_RING])
 * and the reconstruction of picture n.  Only PSNR from the slices' SSE for
 * now.  A heavier checker (MAD, BLIINDS-II) can run here on a task of its
 * own while picture n+1 is coded without stalling it: picture n+1 reads
 * recon n only as its reference and writes the other recon buffer and the
 * other orig slot, so both inputs stay untouched until picture n+2 starts,
 * which is when such a task would have to be joined. */
static void quality_stage(MpeEncoder *e, MpeFrameStats *fs)
{
    for (int c = 0; c < 3; c++) {
        int w = c ? (e->p.width + 1) / 2 : e->p.width;
        int h = c ? (e->p.height + 1) / 2 : e->p.height;
        fs->psnr[c] = iqa_psnr_from_mse((double)fs->sse[c] / ((double)w * h));
    }
}

static int is_intra(const MpeEncoder *e, int index)
{
    return index % e->p.gop == 0;
}

/* Hand frame number n to the front end: upload, convert, and for a P
 * picture search it against the previous ORIGINAL picture.  On a GPU this
 * runs while the CPU codes the frame before it. */
static int submit(MpeEncoder *e, int n, const MpeFrame *frame, MpeError *err)
{
    const int slot = n % FRONTEND_SLOTS;
    const int prev_slot = (n + FRONTEND_SLOTS - 1) % FRONTEND_SLOTS;
    int ret;

    if ((ret = e->fe->submit_frame(e->fe_ctx, slot, frame, err)) < 0)
        return ret;
    if (!is_intra(e, n) &&
        (ret = e->fe->motion_search(e->fe_ctx, slot, prev_slot, e->p.search_range, err)) < 0)
        return ret;
    return 0;
}

/* Wait for frame n's front-end work and download its planes into
 * orig[n % ORIG_RING] and vectors into its slot's array.  That orig entry
 * is free: it held picture n-2, coded before n-1 began (the quality stage of
 * n-1 reads only orig[(n-1) % ORIG_RING]). */
static int fetch(MpeEncoder *e, int n, MpeError *err)
{
    const int slot = n % FRONTEND_SLOTS;
    double t0, t1;
    int ret;

    if ((ret = e->fe->wait(e->fe_ctx, slot, err)) < 0)
        return ret;
    t0 = mpe_time_ms();
    if ((ret = e->fe->download(e->fe_ctx, slot, &e->orig[n % ORIG_RING],
                               is_intra(e, n) ? NULL : e->mv[slot], err)) < 0)
        return ret;
    t1 = mpe_time_ms();
    e->slot_download_ms[slot] = t1 - t0;
    e->slot_gpu_ms[slot] = 0;
    if (e->fe->timings) {
        GpuTimings gt;
        if (e->fe->timings(e->fe_ctx, slot, &gt) == 0)
            e->slot_gpu_ms[slot] = gt.upload_ms + gt.convert_ms + gt.search_ms + gt.readback_ms;
    }
    e->slot_fetched[slot] = 1;
    return 0;
}

static void frontend_job(void *arg)
{
    FrontendJob *job = arg;
    double t0 = mpe_time_ms();
    job->ret = submit(job->e, job->n, job->frame, &job->err);
    if (job->ret == 0)
        job->ret = fetch(job->e, job->n, &job->err);
    job->ms = mpe_time_ms() - t0;
}

/* The front end's results of frame e->frame_index: fetched on the task
 * thread already, or now. */
static int fetch_picture(MpeEncoder *e, MpeFrameStats *fs, MpeError *err)
{
    const int n = e->frame_index, slot = n % FRONTEND_SLOTS;
    double t0 = mpe_time_ms();
    int ret;

    if (!e->slot_fetched[slot]) {
        if ((ret = fetch(e, n, err)) < 0)
            return ret;
        /* on this thread: the wait is not hidden, the download is its own stage */
        fs->time.download_ms = e->slot_download_ms[slot];
        fs->time.fe_wait_ms = mpe_time_ms() - t0 - e->slot_download_ms[slot];
    }
    e->slot_fetched[slot] = 0;
    fs->time.fe_ms = e->slot_fe_ms[slot];
    fs->time.fe_wait_ms += e->slot_wait_ms[slot];
    fs->time.fe_gpu_ms = e->slot_gpu_ms[slot];
    return 0;
}

/* Code frame number e->frame_index, fetched already. */
static void code_picture(MpeEncoder *e, MpeOutput *out)
{
    const int intra = is_intra(e, e->frame_index);
    MpeFrameStats *fs = &out->stats;
    double t0 = mpe_time_ms(), t1;

    if (intra) {
        /* every GOP starts with the sequence header again so that a decoder
         * can start at any GOP (and all GOPs are closed) */
        bs_write_sequence_header(&e->out, &e->seq);
        e->gop_start = e->frame_index;
        write_gop_header(e);
    }
    BsPictureHeader ph = {
        .mpeg2 = e->mpeg2,
        .temporal_reference = e->frame_index - e->gop_start,
        .coding_type = intra ? BS_PICTURE_I : BS_PICTURE_P,
        .f_code_fwd = e->f_code,
    };
    bs_write_picture_header(&e->out, &ph);

    MpePicture *recon = &e->recon[e->cur_recon ^ 1];
    MpePictureCtx pc = {
        .mpeg2 = e->mpeg2,
        .coding_type = ph.coding_type,
        .qscale = e->p.qscale,
        .f_code = e->f_code,
        .tall_picture = e->p.height > 2800,
        .orig = &e->orig[e->frame_index % ORIG_RING],
        .ref = &e->recon[e->cur_recon],
        .recon = recon,
        .mv = e->mv[e->frame_index % FRONTEND_SLOTS],
        .dsp = &e->dsp,
        .sad16 = e->sad16,
        .quant = &e->quant,
    };
    fs->display_index = e->frame_index;
    fs->type = intra ? 'I' : 'P';
    fs->qscale = e->p.qscale;
    code_slices(e, &pc, fs);
    t1 = mpe_time_ms();
    quality_stage(e, fs);
    fs->time.code_ms = t1 - t0;
    fs->time.quality_ms = mpe_time_ms() - t1;
    e->cur_recon ^= 1;
    e->frame_index++;
    out->have_picture = 1;
    out->recon = recon;
}

int mpe_encode_frame(MpeEncoder *e, const MpeFrame *frame, MpeOutput *out, MpeError *err)
{
    const int have = e->frame_index < e->submitted;   /* a fetched frame waits to be coded */
    const int n = e->submitted;
    int ret, async = 0;

    memset(out, 0, sizeof(*out));
    bs_writer_reset(&e->out);
    if (e->flushed)
        return frame ? mpe_error(err, -EINVAL, "encoder already flushed") : 0;
    if (have && (ret = fetch_picture(e, &out->stats, err)) < 0)
        return ret;
    /* one frame of look-ahead: the front end takes frame n+1 before frame n
     * is coded, and the two overlap */
    if (frame) {
        if (e->fe_task) {
            e->fe_job = (FrontendJob){ .e = e, .frame = frame, .n = n };
            mpe_task_start(e->fe_task, frontend_job, &e->fe_job);
            async = 1;
        } else {
            double t0 = mpe_time_ms();
            if ((ret = submit(e, n, frame, err)) < 0)
                return ret;
            /* the calls block this thread: whatever they take is not hidden
             * (a GPU's own time, fe_gpu_ms, is) */
            e->slot_fe_ms[n % FRONTEND_SLOTS] = mpe_time_ms() - t0;
            e->slot_wait_ms[n % FRONTEND_SLOTS] = e->slot_fe_ms[n % FRONTEND_SLOTS];
            e->submitted++;
        }
    }
    if (have)
        code_picture(e, out);
    if (async) {
        double t0 = mpe_time_ms();
        mpe_task_wait(e->fe_task);
        if (e->fe_job.ret < 0) {
            if (err)
                *err = e->fe_job.err;
            return e->fe_job.ret;
        }
        e->slot_fe_ms[n % FRONTEND_SLOTS] = e->fe_job.ms;
        e->slot_wait_ms[n % FRONTEND_SLOTS] = mpe_time_ms() - t0;
        e->submitted++;
    }
    if (!frame) {
        if (e->frame_index > 0)
            bs_write_sequence_end(&e->out);
        e->flushed = 1;
    }
    bs_flush(&e->out);
    if (bs_error(&e->out))
        return mpe_error(err, bs_error(&e->out), "out of memory for the bitstream");
    out->data = e->out.buf;
    out->size = e->out.pos;
    out->stats.bits = (uint64_t)out->size * 8;
    return 0;
}
