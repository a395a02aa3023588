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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitstream/mpeg12.h"
#include "common/threads.h"
#include "common/timer.h"
#include "encoder/aq.h"
#include "encoder/bdecide.h"
#include "encoder/checker.h"
#include "dsp/dsp.h"
#include "dsp/quant.h"
#include "dsp/sad.h"
#include "encoder/ratecontrol.h"
#include "encoder/scenecut.h"
#include "encoder/slice.h"
#include "gpu/frontend.h"
#include "iqa/iqa.h"

/* Source pictures kept, in a ring of e->slots, as many as the front end's
 * slots (where the backend keeps the planes on the host -- cpu, and cuda
 * for YUV input -- the coder reads picture n in its slot).  Without B
 * pictures 3: n (being coded), n-1 (its quality stage may still run) and
 * n+1 (the front end takes it meanwhile).  With N B pictures between
 * anchors, picture d is coded as late as N + 2 calls after its frame came
 * in, and its quality stage runs during the next one: N + 4 (the schedule
 * in code_queue's comment).  The quality lanes copy what they score
 * (mpe_checker_hold), so the quality stage no longer reads the slot, but
 * one slot fewer is not enough: tried in session 8 (N + 3), the lock-step
 * schedule (testsrc2 CIF --q 5 --recon) coded a different stream. */
#define MAX_SLOTS (MPE_MAX_BFRAMES + 4 + PIPE_LEAD)
/* MpeParam.pipeline: frames the front end may run ahead of the coder
 * beyond the lock-step schedule's slots (each slot is a frame's planes on
 * the host and the device) */
#define PIPE_LEAD 6
/* A pool this large or larger gets the pipeline's stage_task; on fewer
 * cores the thread would only take turns with the others. */
#define STAGE_TASK_THREADS 4
/* reconstructions: the reference, and one per rate-control bank; with B
 * pictures also the previous reference (the B pictures' forward one) and
 * the last B picture (see MAX_SLOTS: no longer needed by the quality
 * stage) */
#define N_PICS (MPE_RC_BANKS + 3)
/* records pushed and not yet popped: in lock-step at most QA_LANES + 2;
 * with MpeParam.pipeline the pictures coded while the caller was away too */
#define STATS_QUEUE (4 * MAX_SLOTS + QA_LANES)
/* Pictures whose logged measures may be in flight at once (quality lanes,
 * each with its own checker, copy of the pictures and thread): with a
 * metric on the device, enough that the device's time per picture hides
 * behind several pictures' coding; with C metrics alone, which share the
 * coder's cores, two (one scored while the next is coded, and one more so
 * that a slow picture does not stall the coder). */
#define QA_LANES_DEVICE 4
#define QA_LANES_CPU 2
#define QA_LANES MPE_MAX(QA_LANES_DEVICE, QA_LANES_CPU)
/* MPEG-2's non-linear quantiser_scale reaches 112, twice the linear 62:
 * 56 in MPEG-1 units */
#define MAX_Q 56

/* 13818-2 Table 7-6: quantiser_scale for q_scale_type 1, by code */
static const uint8_t nonlinear_scale[32] = {
    0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 18, 20, 22,
    24, 28, 32, 36, 40, 44, 48, 52, 56, 64, 72, 80, 88, 96, 104, 112,
};

/* One slice's output.  Slices are coded on different threads at once, so
 * each gets whole cache lines: a writer's position and pending bits change
 * with every code written, and sharing a line with a neighbour's would make
 * the cores fight over it. */
typedef struct SliceJob {
    _Alignas(64) BsWriter bw;   /* reused picture after picture: no mallocs once grown */
    MpeSliceStats ss;
    uint64_t sse[3];            /* recon vs source over the slice's rows, true size */
    int64_t dsum[3];            /* sum of (source - recon) over the same samples */
    int64_t samples[3];         /* how many */
    int row_begin, row_end;     /* macroblock rows */
    int q;                      /* quantiser_scale_code it was coded with */
} SliceJob;

/* The quality stage of one picture on its lane's thread: the measures that
 * are only logged, scored from the lane checker's own copy of the pictures
 * while the next pictures are coded. */
typedef struct QualityJob {
    MpeChecker *checker;
    MpeFrameStats fs;
    int ret;
    MpeError err;
} QualityJob;

typedef struct QualityLane {
    MpeChecker *checker;          /* lane 0's is check_log */
    MpeTask *task;
    QualityJob job;
} QualityLane;

/* MpeParam.pipeline: a coded picture waiting for the call that returns it. */
typedef struct CodedPic {
    BsWriter bw;                /* its stream bytes (headers, slices, stuffing) */
    MpeFrameStats fs;           /* display_index and type say which picture */
} CodedPic;

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
    int f_code;          /* this picture's */
    int f_code_bwd;      /* this picture's backward one (B) */
    int search_window;   /* --search resolved */
    int reach;           /* --merange resolved (--me hier) */
    int rate_num, rate_den;       /* as signalled in the stream */
    BsSequence seq;
    GpuFrontend *fe;
    MpeDsp dsp;
    MpeQuantizer quant[MAX_Q + 3];   /* for each quantiser 1..MAX_Q (MPEG-1 units) */
    int nonlinear;                /* MPEG-2 pictures use q_scale_type 1 (Table 7-6) */
    MpeCodingSwitches sw;         /* --intra-vlc, --scan, --dc-precision, --cqm resolved */
    uint8_t intra_matrix[64], inter_matrix[64];   /* raster order, as the quantisers use them */
    uint8_t intra_zz[64], inter_zz[64];           /* the same in zigzag order, for the header */
    int intra_vlc;                /* this picture's intra_vlc_format */
    int intra_vlc_next[2];        /* --intra-vlc auto: the next I [0] and P/B [1] picture's */
    int intra_vlc_counted;        /* ... and [0] counted on an I picture of this chunk */
    uint8_t ladder[31 + 2];       /* quantisers the rate control may give a row: up to 31, two extra steps */
    int n_ladder;
    int drop_q;                   /* the ladder's last steps: coarsest quantiser without inter
                                     residual (drop_q), then every macroblock skipped (+1) */
    uint8_t q_code[MAX_Q + 3];    /* quantiser -> quantiser_scale_code */
    MpeSadDsp sad;
    int slots;                    /* source ring and front-end slots (see MAX_SLOTS) */
    MpePicture orig[MAX_SLOTS];   /* source of picture n downloaded into orig[n % slots] */
    const MpePicture *src[MAX_SLOTS]; /* source of picture n: orig[n % slots] or its slot */
    MpePicture pics[N_PICS];      /* reconstructions: the references and the banks' */
    int n_pics;                   /* of them in use: MPE_RC_BANKS + 1 without B pictures */
    int ref_pic;                  /* pics[] index of the reference (latest I or P picture) */
    int past_pic;                 /* B pictures: the reference before it (forward prediction) */
    int last_b_pic;               /* B pictures: the last B picture's reconstruction */
    int bank_pic[MPE_RC_BANKS];   /* pics[] index of each bank's reconstruction */
    uint8_t *origin[MPE_RC_BANKS];/* per slice: the bank whose coding holds its bits */
    uint8_t *mb_coding[MPE_RC_BANKS]; /* per macroblock: how each bank's coding of its
                                     slice coded it (MPE_MB_CODED_*); origin says which
                                     bank's entry holds the coding a mix kept */
    uint8_t *refresh_count;       /* per macroblock: P codings with coefficients since its
                                     last intra coding, in the stream (slice.h) */
    double *aq;                   /* per macroblock: --aq-strength's quantiser factor */
    MpeAq *aq_plan;               /* --aq-mode's map of them (aq.h), NULL: AQ off */
    MpeRc *rc;
    uint8_t *b_row_q;             /* constant quantiser with B pictures: theirs, per slice */
    uint8_t *i_row_q;             /* constant quantiser, --ip-ratio: the I pictures' */
    int ip_auto;                  /* --ip-ratio auto: I pictures wait for the next anchor */
    MpeRcConfig rc_cfg;           /* to open the rate control again at each chunk */
    int chunk_len;                /* pictures per chunk (--chunk-gops GOPs), 0: one chunk */
    int rc_chunk;                 /* the chunk rc was opened for, -1: open it afresh */
    int end_code;                 /* the flush writes sequence_end_code */
    int coded;                    /* pictures coded since the encoder (re)started */
    int cap_warned;               /* the rate control said once that a --bitrate cap cannot hold */
    uint64_t *row_bits, *row_sse; /* a bank's per-slice numbers for the rate control */
    double *row_mean_err;         /* ... and its rows' mean-level error, when measure_mean */
    int measure_mean;             /* the rate control guards a MAD or BLIINDS-II target */
    int target_value;             /* registry value id of a checker-scored target metric */
    BsWriter hdr;                 /* headers written once to count their bits */
    MpeChecker *check_rc;         /* the rate control's target metric, on this thread */
    MpeChecker *check_log;        /* measures only logged, on the quality lanes */
    MpeFrameStats bank_fs[MPE_RC_BANKS];   /* check_rc's scores of each bank */
    int bank_scored[MPE_RC_BANKS];
    QualityLane qa[QA_LANES];     /* n_lanes of them open; in flight: qa_busy from qa_head on */
    int n_lanes, qa_head, qa_busy;
    MpeFrameStats queue[STATS_QUEUE];   /* finished records, oldest first */
    int queue_head, queue_len;
    GpuMotion *mv[MAX_SLOTS];     /* vectors of the frame in each slot (B: forward) */
    GpuMotion *mv_bwd[MAX_SLOTS]; /* B: backward vectors of the frame in each slot */
    char slot_type[MAX_SLOTS];    /* 'I', 'P' or 'B' of the frame in each slot */
    int fwd_ref[MAX_SLOTS];       /* display index the slot's forward vectors (mv) were
                                     searched against, -1: none yet */
    /* --b-adapt 1 (bdecide.h): frames after the last anchor wait as B
     * pictures until the run of them ends; costs of the run so far */
    int b_adapt;
    uint64_t run_cost[MPE_MAX_BFRAMES + 2];
    uint32_t *intra_cost[MAX_SLOTS]; /* per macroblock, of the frame in each slot */
    BsWriter out;
    int submitted;                /* frames handed to the front end (display order) */
    int frame_index;              /* display index of the picture being coded */
    int gop_start;                /* display index of the current GOP's first picture */
    int flushed;
    /* display order vs coding order (B pictures): an I or P picture is coded
     * before the B pictures that precede it in display order */
    int last_anchor;              /* display index of the last I or P frame submitted, -1 */
    int last_i;                   /* display index of the last I frame submitted, -1: the next
                                     frame starts a GOP (the first, or a chunk's) */
    MpeSceneCut scenecut;         /* --scenecut: the front end's, like last_i */
    int code_queue[2 * MAX_SLOTS];/* display indices ready to be coded, in coding order */
    int cq_head, cq_len;
    int held;                     /* an anchor's output waits for the B pictures before it */
    MpeFrameStats held_stats;
    const MpePicture *held_recon;
    int held_rec;                 /* ... and its complete record */
    MpeFrameStats held_rec_fs;

    int threads;                  /* slice-coding threads */
    MpePool *pool;                /* the caller's (mpe_encoder_open_pool) or own_pool: slices,
                                     the cpu front end and the C metrics all run on it */
    MpePool *own_pool;
    MpeTask *fe_task;             /* non-NULL: the front end runs on its own thread */
    /* The pipeline's front end copies frame n into its slot and counts its
     * scene-cut levels on stage_task while this thread finishes frame
     * n - 1's front-end work (frontend_frame_pipe), then commits it;
     * staged_n is then n, and its type waits in staged_type for the next
     * call (or the flush). */
    MpeTask *stage_task;          /* NULL: below STAGE_TASK_THREADS, on this thread first */
    GpuStaged staged;
    int staged_n;
    char staged_type;
    const MpeFrame *stage_frame;  /* stage_task's frame, its number and score */
    int stage_n;
    double stage_cut;
    FrontendJob fe_job;
    SliceJob *slices[MPE_RC_BANKS];   /* one set per bank */
    int n_slices;
    /* front-end times of the frame in each slot, reported when it is coded */
    double slot_fe_ms[MAX_SLOTS], slot_wait_ms[MAX_SLOTS];
    double slot_download_ms[MAX_SLOTS], slot_gpu_ms[MAX_SLOTS];
    int slot_fetched[MAX_SLOTS];  /* planes and vectors already downloaded */
    /* --merange-adapt: the reach of each slot's forward search, and whether
     * its forward vectors (mv) are downloaded since that search */
    int fwd_reach[MAX_SLOTS], bwd_reach[MAX_SLOTS];
    int mv_fresh[MAX_SLOTS];
    int next_coded;               /* display index of the picture coded after this one, -1:
                                     none known yet (--ip-ratio auto's look at it) */
    BsWriter *code_out;           /* where code_picture writes: out, or a CodedPic's */
    /* MpeParam.pipeline: pictures are coded one after the other on
     * code_task (coder_loop) while the caller's thread runs the front end
     * of the next frames.  The caller's thread queues a picture once the
     * front end is done with it (its per-slot state is final then) and
     * refills a slot only after the picture in it came back coded
     * (slot_busy).  The k-th picture queued is coded into ring[k % slots]
     * and returned by a later call. */
    int pipe;
    MpeTask *code_task;
    pthread_mutex_t pipe_lock;
    pthread_cond_t pipe_work, pipe_done;
    int have_pipe_sync, coder_started;
    /* under pipe_lock */
    int work[MAX_SLOTS], work_next[MAX_SLOTS];   /* display index, the one coded after it */
    int work_head, work_len;
    int done;                     /* pictures coded back so far */
    int coder_quit, coder_ret;
    MpeError coder_err;
    /* the caller's thread's */
    int pushed, collected, delivered;
    CodedPic ring[MAX_SLOTS];
    uint8_t slot_busy[MAX_SLOTS]; /* the slot's frame submitted, its picture not coded back */
    int flushing;
    pthread_mutex_t queue_lock;   /* queue and held_rec: pushed on code_task, popped here */
    int have_queue_lock;
};

/* frame_rate_code values of 13818-2 Table 6-4 (= 11172-2 §2.4.3.2). */
static const int rate_table[9][2] = {
    { 0, 0 }, { 24000, 1001 }, { 24, 1 }, { 25, 1 }, { 30000, 1001 },
    { 30, 1 }, { 50, 1 }, { 60000, 1001 }, { 60, 1 },
};

typedef struct FrameRate {
    int code, ext_n, ext_d;   /* frame_rate_code, frame_rate_extension_n/_d */
    int num, den;             /* the rate they signal: code's * (n+1)/(d+1) */
    int exact;                /* that is the rate asked for */
} FrameRate;

/* The frame_rate_code whose rate is num/den, 0 if none. */
static int exact_rate_code(int num, int den)
{
    for (int code = 1; code <= 8; code++)
        if ((long long)num * rate_table[code][1] == (long long)den * rate_table[code][0])
            return code;
    return 0;
}

/* How a stream signals num/den: a frame_rate_code of its own with both
 * extensions 0, which is all MPEG-1 has and all MPEG-2's Main profile
 * allows (13818-2 §8: frame_rate_extension_n and _d are 0 in the Simple,
 * Main, SNR, Spatial and High profiles).  Otherwise, with extensions
 * (MPEG-2 only, when allowed), the exact rate if some code's rate *
 * (n+1)/(d+1) is it, else the closest rate (ratio nearest 1). */
static FrameRate pick_frame_rate(int num, int den, int extensions)
{
    FrameRate best = { 0 };
    double best_err = 1e30;
    const int code = exact_rate_code(num, den);

    if (code)
        return (FrameRate){ code, 0, 0, rate_table[code][0], rate_table[code][1], 1 };
    for (int c = 1; c <= 8; c++) {
        for (int n = 0; n <= (extensions ? 3 : 0); n++) {
            for (int d = 0; d <= (extensions ? 31 : 0); d++) {
                const long long rn = (long long)rate_table[c][0] * (n + 1);
                const long long rd = (long long)rate_table[c][1] * (d + 1);
                const int exact = (long long)num * rd == (long long)den * rn;
                const double err = exact ? 0 : fabs(log((double)rn * den / ((double)rd * num))) + 1e-9;
                if (err < best_err) {
                    best_err = err;
                    best = (FrameRate){ c, n, d, (int)rn, (int)rd, exact };
                }
            }
        }
    }
    return best;
}

/* "23.976" or "24": a rate as people write it */
static void rate_text(char *buf, size_t size, int num, int den)
{
    size_t len;

    snprintf(buf, size, "%.3f", (double)num / den);
    for (len = strlen(buf); len > 0 && buf[len - 1] == '0'; len--)
        buf[len - 1] = '\0';
    if (len > 0 && buf[len - 1] == '.')
        buf[len - 1] = '\0';
}

/* A rate without a frame_rate_code of its own is an error unless the
 * caller allowed it (--strict 0). */
static int check_frame_rate(const MpeParam *p, MpeError *err)
{
    const int num = p->fps_num > 0 ? p->fps_num : 25, den = p->fps_num > 0 ? p->fps_den : 1;
    const int mpeg2 = p->format != MPE_FORMAT_MPEG1;
    char want[32], below[32] = "", above[32] = "";

    if (exact_rate_code(num, den) || !p->strict)
        return 0;
    /* the standard rates either side of it */
    for (int code = 1; code <= 8; code++) {
        const double r = (double)rate_table[code][0] / rate_table[code][1];
        if (r < (double)num / den)
            rate_text(below, sizeof(below), rate_table[code][0], rate_table[code][1]);
        else if (!above[0])
            rate_text(above, sizeof(above), rate_table[code][0], rate_table[code][1]);
    }
    rate_text(want, sizeof(want), num, den);
    return mpe_error(err, -EINVAL,
                     "frame rate %s fps (%d/%d) has no frame_rate_code in %s (nearest standard "
                     "rate%s: %s%s%s); set --fps to one (the pictures play at that rate) or "
                     "--strict 0 to signal it %s",
                     want, num, den, mpeg2 ? "MPEG-2 Main profile" : "MPEG-1",
                     below[0] && above[0] ? "s" : "", below,
                     below[0] && above[0] ? ", " : "", above,
                     mpeg2 ? "with frame_rate_extension (not Main profile)"
                           : "as the nearest standard rate");
}

/* The rate the stream signals; check_frame_rate has refused what --strict
 * does not allow, so what is left here is logged. */
static void choose_frame_rate(MpeEncoder *e, int num, int den)
{
    const FrameRate fr = pick_frame_rate(num, den, e->mpeg2);

    e->seq.frame_rate_code = fr.code;
    e->seq.frame_rate_ext_n = fr.ext_n;
    e->seq.frame_rate_ext_d = fr.ext_d;
    e->rate_num = fr.num;
    e->rate_den = fr.den;
    if (fr.ext_n || fr.ext_d)
        mpe_log(&e->log, MPE_LOG_WARNING,
                "frame rate %d/%d signalled with frame_rate_extension (code %d x %d/%d): the "
                "stream is no longer strictly Main profile", num, den, fr.code, fr.ext_n + 1,
                fr.ext_d + 1);
    if (!fr.exact)
        mpe_log(&e->log, MPE_LOG_WARNING,
                "frame rate %d/%d cannot be signalled in %s; the stream says %d/%d", num, den,
                e->mpeg2 ? "MPEG-2" : "MPEG-1", e->rate_num, e->rate_den);
}

/* MPEG-2 Main profile at the lowest level that holds the picture size and
 * rate, and under rate control the peak bit rate and the VBV buffer asked
 * for (13818-2 Tables 8-11 to 8-14); bit_rate and vbv_buffer_size are that
 * level's maxima (open_rate_control replaces them with the rate control's),
 * since constant-quantiser streams have no rate of their own.  A rate or
 * buffer beyond Main@High is refused: no level allows it. */
static int choose_profile_level(MpeEncoder *e, MpeError *err)
{
    static const struct {
        int code;
        const char *name;
        int width, height;
        double fps, bit_rate;   /* bit/s */
        int vbv_16k;            /* vbv_buffer_size, 16384-bit units */
    } levels[] = {
        { 0x48, "Main@Main", 720, 576, 30.0, 15e6, 112 },
        { 0x46, "Main@High-1440", 1440, 1152, 60.0, 60e6, 448 },
        { 0x44, "Main@High", 1920, 1152, 60.0, 80e6, 597 },
    };
    const int n_levels = (int)(sizeof(levels) / sizeof(levels[0]));
    const int w = e->p.width, h = e->p.height;
    const double rate = (double)e->rate_num / e->rate_den;
    const double peak = e->p.bitrate > 0 ? fmax(e->p.bitrate, e->p.maxrate) : 0;
    /* the buffer is signalled (and modelled) in whole 16384-bit units */
    const double vbv_16k = e->p.bitrate > 0 ? floor(e->p.vbv_size * 1000.0 / 16384.0) : 0;
    int size_level = n_levels - 1, level;

    if (!e->mpeg2) {
        e->seq.bit_rate = 0x3FFFF;       /* 11172-2: variable bit rate */
        e->seq.vbv_buffer_size = 1023;   /* largest expressible: no VBV model in constant-q */
        return 0;
    }
    for (int k = n_levels - 1; k >= 0; k--)
        if (w <= levels[k].width && h <= levels[k].height && rate <= levels[k].fps)
            size_level = k;
    for (level = size_level; level < n_levels; level++)
        if (peak <= levels[level].bit_rate && vbv_16k <= levels[level].vbv_16k)
            break;
    if (level == n_levels) {
        const int top = n_levels - 1;
        if (peak > levels[top].bit_rate)
            return mpe_error(err, -EINVAL, "a bit rate of %.0f bit/s is more than MPEG-2 %s allows "
                             "(%.0f)", peak, levels[top].name, levels[top].bit_rate);
        return mpe_error(err, -EINVAL, "--vbv-size %d kbit is more than MPEG-2 %s allows (%.0f kbit)",
                         e->p.vbv_size, levels[top].name, levels[top].vbv_16k * 16.384);
    }
    e->seq.profile_and_level = levels[level].code;
    e->seq.bit_rate = (uint32_t)(levels[level].bit_rate / 400);
    e->seq.vbv_buffer_size = (uint32_t)levels[level].vbv_16k;
    if (level > size_level && vbv_16k > levels[size_level].vbv_16k)
        mpe_log(&e->log, MPE_LOG_INFO, "--vbv-size %d kbit is more than %s allows (%.0f kbit): "
                "signalled as %s", e->p.vbv_size, levels[size_level].name,
                levels[size_level].vbv_16k * 16.384, levels[level].name);
    else if (level > size_level)
        mpe_log(&e->log, MPE_LOG_INFO, "a peak rate of %.0f kbit/s is more than %s allows (%.0f): "
                "signalled as %s", peak / 1000, levels[size_level].name,
                levels[size_level].bit_rate / 1000, levels[level].name);
    if (w > 1920 || h > 1152 || rate > 60.0)
        mpe_log(&e->log, MPE_LOG_INFO, "%dx%d at %.3f fps exceeds Main@High; signalled as Main@High",
                w, h, rate);
    return 0;
}

/* Smallest f_code whose range [-16f, 16f-1] half-pels holds every vector a
 * +-R full-pel search plus half-pel refinement can produce, +-(2R+1).
 * Per picture, R is the largest component of the front end's vectors: the
 * slices choose among their half-pel neighbours and earlier choices only,
 * and every vector costs fewer bits with the smaller f_code. */
static int f_code_for_range(int range)
{
    int f_code = 1;
    while (16 * (1 << (f_code - 1)) - 1 < 2 * range + 1)
        f_code++;
    return f_code;
}

static int vector_reach(const GpuMotion *m)
{
    return MPE_MAX(abs(m->dx), abs(m->dy));
}

/* What a picture's coding needs from its vectors before the slices start:
 * the largest component forward and (B) backward, and for a B picture
 * with intra costs the sums of mpe_bdecide_b_ratio.  One pass over the
 * vectors, on the coding thread alone while the pool waits: three passes
 * over 16384 macroblocks took 0.1 ms of a 1.6 ms B picture at 2048^2 on
 * 16 threads (the H100 machine). */
typedef struct VectorScan {
    int reach_fwd, reach_bwd;
    uint64_t sum_intra, b_cost;
} VectorScan;

static void scan_vectors(const GpuMotion *fwd, const GpuMotion *bwd, const uint32_t *intra,
                         int n, VectorScan *s)
{
    int rf = 0, rb = 0;
    uint64_t sum_intra = 0, b_cost = 0;

    if (bwd && intra) {
        for (int i = 0; i < n; i++) {
            rf = MPE_MAX(rf, vector_reach(&fwd[i]));
            rb = MPE_MAX(rb, vector_reach(&bwd[i]));
            sum_intra += intra[i];
            b_cost += mpe_bdecide_b_cost(fwd[i].sad, bwd[i].sad, intra[i]);
        }
    } else if (bwd) {
        for (int i = 0; i < n; i++) {
            rf = MPE_MAX(rf, vector_reach(&fwd[i]));
            rb = MPE_MAX(rb, vector_reach(&bwd[i]));
        }
    } else {
        for (int i = 0; i < n; i++)
            rf = MPE_MAX(rf, vector_reach(&fwd[i]));
    }
    *s = (VectorScan){ rf, rb, sum_intra, b_cost };
}

/* MPEG-2 Main profile, every level we signal: vertical f_code <= 5, vectors
 * within [-128, 127.5] (13818-2 Table 8-8); half-pel refinement adds half
 * a pel either way, so full-pel vectors stop at 127. */
#define MPEG2_MAX_REACH 127

void mpe_encoder_close(MpeEncoder *e)
{
    if (!e)
        return;
    /* the tasks first: they may still be running the front end or coding */
    mpe_task_close(e->fe_task);
    mpe_task_close(e->stage_task);
    if (e->have_pipe_sync) {
        pthread_mutex_lock(&e->pipe_lock);
        e->coder_quit = 1;
        pthread_cond_broadcast(&e->pipe_work);
        pthread_mutex_unlock(&e->pipe_lock);
    }
    mpe_task_close(e->code_task);
    if (e->have_pipe_sync) {
        pthread_cond_destroy(&e->pipe_work);
        pthread_cond_destroy(&e->pipe_done);
        pthread_mutex_destroy(&e->pipe_lock);
    }
    for (int i = 0; i < MAX_SLOTS; i++)
        bs_writer_free(&e->ring[i].bw);
    if (e->have_queue_lock)
        pthread_mutex_destroy(&e->queue_lock);
    for (int i = 0; i < e->n_lanes; i++)
        mpe_task_close(e->qa[i].task);
    gpu_frontend_close(e->fe);
    mpe_checker_close(e->check_rc);
    for (int i = 1; i < e->n_lanes; i++)
        mpe_checker_close(e->qa[i].checker);
    mpe_checker_close(e->check_log);
    mpe_pool_close(e->own_pool);   /* after everything that runs on it */
    mpe_rc_free(e->rc);
    for (int i = 0; i < MAX_SLOTS; i++)
        mpe_picture_free(&e->orig[i]);
    for (int i = 0; i < N_PICS; i++)
        mpe_picture_free(&e->pics[i]);
    for (int i = 0; i < MAX_SLOTS; i++) {
        free(e->mv[i]);
        free(e->mv_bwd[i]);
        free(e->intra_cost[i]);
    }
    bs_writer_free(&e->out);
    bs_writer_free(&e->hdr);
    for (int b = 0; b < MPE_RC_BANKS; b++) {
        if (e->slices[b])
            for (int i = 0; i < e->n_slices; i++)
                bs_writer_free(&e->slices[b][i].bw);
        free(e->slices[b]);
        free(e->origin[b]);
        free(e->mb_coding[b]);
    }
    free(e->refresh_count);
    free(e->aq);
    mpe_aq_close(e->aq_plan);
    free(e->b_row_q);
    free(e->i_row_q);
    free(e->row_bits);
    free(e->row_sse);
    free(e->row_mean_err);
    free(e);
}

/* Slices: one per macroblock row.  MPEG-1 slice start codes stop at row 175
 * (0xAF), so in a taller MPEG-1 picture the last slice runs to the bottom. */
static int plan_slices(MpeEncoder *e)
{
    const int mbh = e->orig[0].mb_height;
    const size_t n_mb = (size_t)e->orig[0].mb_width * mbh;
    int n = 0;

    e->n_slices = !e->mpeg2 && mbh > 175 ? 175 : mbh;
    for (int b = 0; b < MPE_RC_BANKS; b++) {
        e->slices[b] = aligned_alloc(_Alignof(SliceJob), (size_t)e->n_slices * sizeof(SliceJob));
        e->origin[b] = calloc((size_t)e->n_slices, 1);
        e->mb_coding[b] = calloc(n_mb, 1);
        if (!e->slices[b] || !e->origin[b] || !e->mb_coding[b])
            return -ENOMEM;
        memset(e->slices[b], 0, (size_t)e->n_slices * sizeof(SliceJob));
    }
    e->row_bits = calloc((size_t)e->n_slices, sizeof(uint64_t));
    e->row_sse = calloc((size_t)e->n_slices, sizeof(uint64_t));
    e->refresh_count = calloc(n_mb, 1);
    e->row_mean_err = calloc((size_t)e->n_slices, sizeof(double));
    e->aq = calloc(n_mb, sizeof(double));
    if (!e->row_bits || !e->row_sse || !e->refresh_count || !e->row_mean_err || !e->aq)
        return -ENOMEM;
    for (int row = 0; row < mbh; n++) {
        int end = row + 1;
        if (!e->mpeg2 && row == 174)
            end = mbh;
        for (int b = 0; b < MPE_RC_BANKS; b++) {
            e->slices[b][n].row_begin = row;
            e->slices[b][n].row_end = end;
        }
        row = end;
    }
    return 0;
}

/* The quantisers rows may use.  Constant quantiser and MPEG-1: 1..31
 * (MPEG-2 linear codes, as --q always meant).  MPEG-2 under rate control:
 * the non-linear scale, whose even entries (whole MPEG-1 steps) run from 1
 * to 56, so a picture that needs coarser steps than 31 can have them. */
static void plan_quantisers(MpeEncoder *e)
{
    const MpeParam *p = &e->p;
    double target;
    const int rate_control = p->bitrate > 0 || mpe_param_target(p, &target);
    e->nonlinear = e->mpeg2 && (e->sw.qscale_type >= 0 ? e->sw.qscale_type : rate_control);
    e->n_ladder = 0;
    e->drop_q = 0;
    if (!e->nonlinear) {
        for (int q = 1; q <= 31; q++) {
            e->ladder[e->n_ladder++] = (uint8_t)q;
            e->q_code[q] = (uint8_t)q;
        }
    } else {
        for (int code = 1; code <= 31; code++) {
            if (nonlinear_scale[code] % 2)
                continue;
            int q = nonlinear_scale[code] / 2;
            e->ladder[e->n_ladder++] = (uint8_t)q;
            e->q_code[q] = (uint8_t)code;
        }
    }
    /* A static picture predicted from a good reference can stay better than
     * a quality target asks even at the coarsest quantiser (half-pel
     * prediction even smooths the source's noise away), and spends bits on
     * it.  Two more steps: drop the inter residual (intra macroblocks keep
     * theirs), then copy the reference outright. */
    if (rate_control) {
        e->drop_q = e->ladder[e->n_ladder - 1] + 1;
        e->ladder[e->n_ladder++] = (uint8_t)e->drop_q;
        e->ladder[e->n_ladder++] = (uint8_t)(e->drop_q + 1);
    }
}

/* The quantiser of the ladder nearest to q on a log scale (the rate
 * control's rule for --q): with the non-linear scale, --q 13 is 14. */
static int ladder_nearest(const MpeEncoder *e, double q)
{
    const int n = e->n_ladder - (e->drop_q ? 2 : 0);
    int best = 0;
    for (int k = 1; k < n; k++)
        if (fabs(log(q / e->ladder[k])) < fabs(log(q / e->ladder[best])))
            best = k;
    return e->ladder[best];
}

/* --cqm: the matrices the quantisers use, and those the sequence header
 * loads (only where they differ from the defaults a decoder assumes). */
static void choose_matrices(MpeEncoder *e)
{
    const uint8_t *intra, *inter;
    mpe_param_cqm_matrices(&e->p, e->sw.cqm, &intra, &inter);
    memcpy(e->intra_matrix, intra ? intra : mpe_default_intra_matrix, 64);
    memcpy(e->inter_matrix, inter ? inter : mpe_default_inter_matrix, 64);
    for (int i = 0; i < 64; i++) {
        e->intra_zz[i] = e->intra_matrix[mpe_zigzag[i]];
        e->inter_zz[i] = e->inter_matrix[mpe_zigzag[i]];
    }
    e->seq.intra_matrix = memcmp(e->intra_matrix, mpe_default_intra_matrix, 64) ? e->intra_zz : NULL;
    e->seq.inter_matrix = memcmp(e->inter_matrix, mpe_default_inter_matrix, 64) ? e->inter_zz : NULL;
}

/* Rate control, and the bit rate and VBV size the sequence header signals. */
static int open_rate_control(MpeEncoder *e, MpeError *err)
{
    const MpeParam *p = &e->p;
    const double fps = (double)e->rate_num / e->rate_den;
    double target;
    const unsigned metric = mpe_param_target(p, &target);
    MpeRcConfig rc = {
        .mode = metric ? MPE_RC_QUALITY : p->bitrate > 0 ? MPE_RC_BITRATE : MPE_RC_CQ,
        .mpeg2 = e->mpeg2,
        .qscale = p->qscale,
        .ladder = e->ladder,
        .n_ladder = e->n_ladder,
        .n_drop = e->drop_q ? 2 : 0,
        .n_rows = e->n_slices,
        .gop = p->gop,
        .bframes = p->bframes,
        .pb_ratio = p->pb_ratio,
        .ip_ratio = p->ip_ratio,
        .fps = fps,
        .bitrate = p->bitrate,
        .maxrate = p->maxrate,
        .target_metric = metric,
        .target = target,
        .mean_tol = MPE_RC_MEAN_TOL,
        /* a MAD or BLIINDS-II curve is no straight line (a P picture's score is
         * mostly its reference's until fine quantisers refresh it): bisection
         * needs about five codings to close the bracket, and mixing two more */
        .max_trials = p->max_trials > 0 ? p->max_trials
                      : metric && metric != MPE_IQA_PSNR ? 8 : 4,
    };
    const double max_units = e->mpeg2 ? (double)((1 << 18) - 1) : 1023.0;
    int ret;

    if (p->bitrate > 0) {
        const double peak = p->maxrate > 0 ? p->maxrate : p->bitrate;
        /* default: the level's buffer (MPEG-2), the largest MPEG-1 can signal */
        rc.vbv_bits = p->vbv_size > 0 ? p->vbv_size * 1000.0
                                      : (e->mpeg2 ? e->seq.vbv_buffer_size : 1023) * 16384.0;
        if (rc.vbv_bits / 16384.0 > max_units)
            return mpe_error(err, -EINVAL, "--vbv-size %d kbit is more than %s can signal (%.0f kbit)",
                             p->vbv_size, e->mpeg2 ? "MPEG-2" : "MPEG-1", max_units * 16.384);
        if (rc.vbv_bits < 16384.0 || rc.vbv_bits < peak / fps)
            return mpe_error(err, -EINVAL, "VBV buffer of %.0f kbit cannot hold one picture's "
                                           "share of %.0f kbit/s at %.3f fps", rc.vbv_bits / 1000,
                             peak / 1000, fps);
        /* the header rounds up to 400 bit/s units, and 0x3FFFF there means variable rate */
        if (!e->mpeg2 && ceil(peak / 400.0) >= 0x3FFFF)
            return mpe_error(err, -EINVAL, "MPEG-1 cannot signal a bit rate of %.0f bit/s (at most %.0f)",
                             peak, (0x3FFFF - 1) * 400.0);
    }
    e->chunk_len = mpe_param_chunk_gops(p) * p->gop;
    rc.chunk_frames = e->chunk_len;
    e->rc_cfg = rc;
    if ((ret = mpe_rc_new(&e->rc, &rc, (uint64_t)p->width * p->height, err)) < 0)
        return ret;
    if (rc.mode == MPE_RC_CQ) {
        /* B pictures are no reference: what they lose in quality stays in
         * them, so they take a coarser quantiser (x262's pbratio); an I
         * picture is what its whole GOP predicts from (x264's ipratio) */
        const long qb = ladder_nearest(e, p->qscale * p->pb_ratio);
        const long qi = ladder_nearest(e, p->qscale / (p->ip_ratio > 0 ? p->ip_ratio : 1));
        /* --ip-ratio auto measures what the pictures after an I picture
         * keep of it, which --b-adapt 1's searches against it tell */
        e->ip_auto = !(p->ip_ratio > 0) && e->b_adapt;
        if ((p->bframes && !(e->b_row_q = malloc((size_t)e->n_slices))) ||
            ((qi != p->qscale || e->ip_auto) && !(e->i_row_q = malloc((size_t)e->n_slices))))
            return mpe_error(err, -ENOMEM, "out of memory");
        if (e->b_row_q)
            memset(e->b_row_q, (int)qb, (size_t)e->n_slices);
        if (e->i_row_q)
            memset(e->i_row_q, (int)qi, (size_t)e->n_slices);
    }
    /* the guard's numbers are read only for these targets (see ratecontrol.c) */
    e->measure_mean = metric && metric != MPE_IQA_PSNR;
    e->target_value = iqa_family_bit_value(metric);
    uint32_t rate400, vbv16k;
    mpe_rc_stream_rates(e->rc, &rate400, &vbv16k);
    if (rate400) {
        e->seq.bit_rate = rate400;
        e->seq.vbv_buffer_size = vbv16k;
    }
    if (rc.mode != MPE_RC_CQ)
        mpe_log(&e->log, MPE_LOG_INFO, "rate control: %s, VBV %.0f kbit at %.0f kbit/s%s",
                rc.mode == MPE_RC_QUALITY ? "quality target" : "bit rate", rc.vbv_bits / 1000,
                rate400 * 0.4, rc.mode == MPE_RC_BITRATE && !(p->maxrate > p->bitrate)
                                   ? " constant rate" : rate400 ? " variable rate" : "");
    return 0;
}

/* The target metric is measured where the rate control needs it, on this
 * thread; every other measure on the quality task. */
static int open_checkers(MpeEncoder *e, MpeError *err)
{
    double target_value;
    const unsigned target = mpe_param_target(&e->p, &target_value);
    const unsigned rc_metrics = target & ~(unsigned)MPE_IQA_PSNR;   /* PSNR comes from the SSE */
    MpeCheckerConfig cc = { .width = e->p.width, .height = e->p.height, .backend = e->p.iqa_backend,
                            .threads = e->p.threads, .pool = e->pool, .device = e->p.device };
    int ret;

    cc.metrics = rc_metrics;
    if (rc_metrics && (ret = mpe_checker_open(&e->check_rc, &cc, &e->log, err)) < 0)
        return ret;
    cc.metrics = e->p.iqa & ~(rc_metrics | MPE_IQA_PSNR);
    cc.hold = 1;
    if (!cc.metrics)
        return 0;
    if ((ret = mpe_checker_open(&e->check_log, &cc, &e->log, err)) < 0)
        return ret;
    /* the quality lanes: lane 0 on check_log, the others on twins of it
     * (the same rows); a twin that cannot open (device memory) leaves
     * fewer lanes, and the encode goes on with less overlap */
    const int want = mpe_checker_on_device(e->check_log) ? QA_LANES_DEVICE : QA_LANES_CPU;
    e->qa[0].checker = e->check_log;
    cc.like = e->check_log;
    for (e->n_lanes = 1; e->n_lanes < want; e->n_lanes++) {
        MpeError lane_err;
        if (mpe_checker_open(&e->qa[e->n_lanes].checker, &cc, &e->log, &lane_err) < 0) {
            mpe_log(&e->log, MPE_LOG_INFO, "quality stage: %d pictures in flight (no more: %s)",
                    e->n_lanes, lane_err.msg);
            break;
        }
    }
    mpe_log(&e->log, MPE_LOG_INFO, "quality stage: up to %d pictures scored while later ones "
            "are coded", e->n_lanes);
    return 0;
}

int mpe_encoder_check_params(const MpeParam *p, MpeError *err)
{
    int ret;

    if (p->width < 16 || p->width > 4095 || p->height < 16 || p->height > 4095)
        return mpe_error(err, -EINVAL, "frame size %dx%d outside 16x16..4095x4095", p->width,
                         p->height);
    if (p->qscale < 1 || p->qscale > 31 || p->gop < 1 || p->search_range < -1 ||
        p->bframes < -1 || p->bframes > MPE_MAX_BFRAMES || !(p->pb_ratio > 0) || p->ip_ratio < 0 ||
        p->search_range > GPU_MAX_SEARCH_RANGE || p->threads < 0 || p->max_trials < 0 ||
        p->chunk_gops < -1 || p->chunk_gops > 1000000)
        return mpe_error(err, -EINVAL, "invalid encoder parameters");
    if ((ret = mpe_param_check(p, err)) < 0 || (ret = check_frame_rate(p, err)) < 0)
        return ret;
    return 0;
}

int mpe_encoder_open_pool(MpeEncoder **out, const MpeParam *p, MpePool *pool, const MpeLog *log,
                          MpeError *err)
{
    MpeEncoder *e;
    int ret;

    *out = NULL;
    if ((ret = mpe_encoder_check_params(p, err)) < 0)
        return ret;
    if (!(e = calloc(1, sizeof(*e))))
        return mpe_error(err, -ENOMEM, "out of memory");
    e->p = *p;
    e->p.bframes = mpe_param_bframes(p);
    e->b_adapt = e->p.bframes > 0 && mpe_param_b_adapt(p);
    e->end_code = 1;
    if (log)
        e->log = *log;
    e->mpeg2 = p->format != MPE_FORMAT_MPEG1;
    e->search_window = p->search_range >= 0 ? p->search_range : p->me == MPE_ME_FULL ? 16 : 4;
    e->f_code = f_code_for_range(e->search_window);
    e->reach = p->merange > 0 ? p->merange : MPEG2_MAX_REACH;
    if (e->mpeg2 && e->reach > MPEG2_MAX_REACH) {
        mpe_log(&e->log, MPE_LOG_WARNING, "--merange %d: MPEG-2 Main profile codes vectors up to "
                "+-%d full pels; searching that far", e->reach, MPEG2_MAX_REACH);
        e->reach = MPEG2_MAX_REACH;
    }
    mpe_dsp_init(&e->dsp, mpe_param_cpu_flags(p));
    mpe_sad_dsp_init(&e->sad, mpe_param_cpu_flags(p));
    mpe_param_mpeg2_switches(p, e->mpeg2, &e->sw);
    choose_matrices(e);
    /* every quantiser a slice may use, so rows can differ */
    for (int q = 1; q <= MAX_Q + 2; q++)
        mpe_quantizer_init(&e->quant[q], q, e->intra_matrix, e->inter_matrix,
                           e->mpeg2 ? 2047 : 255);
    plan_quantisers(e);

    e->seq.mpeg2 = e->mpeg2;
    e->seq.width = p->width;
    e->seq.height = p->height;
    e->seq.aspect_ratio_code = 1;   /* square pels / samples */
    e->seq.low_delay = !e->p.bframes; /* I and P pictures only: no reordering */
    choose_frame_rate(e, p->fps_num > 0 ? p->fps_num : 25, p->fps_num > 0 ? p->fps_den : 1);
    if ((ret = choose_profile_level(e, err)) < 0)
        goto fail;
    /* Valid MPEG-1 (11172-2 allows 4095 lines; slices past row 174 run on
     * with address increments), but libmpeg2 0.5.1 decodes such pictures
     * wrong (5 dB against our reconstruction, tests/e2e/conformance.sh),
     * while ffmpeg decodes them exactly. */
    if (!e->mpeg2 && p->height > 2800)
        mpe_log(&e->log, MPE_LOG_WARNING,
                "MPEG-1 picture %d lines tall: libmpeg2 (mpeg2dec and players built on it) "
                "decodes MPEG-1 taller than 2800 lines wrong; the stream is valid and ffmpeg "
                "decodes it (--format mpeg2 suits both)", p->height);

    if (pool) {
        e->pool = pool;
    } else {
        if ((ret = mpe_pool_open(&e->own_pool, p->threads > 0 ? p->threads : mpe_cpu_count(),
                                 err)) < 0)
            goto fail;
        e->pool = e->own_pool;
    }
    /* a coder of its own needs a second thread at least */
    e->pipe = p->pipeline && mpe_pool_threads(e->pool) > 1;
    /* the lead a coder of many threads needs (an I picture codes in the
     * time of 4-5 frames' front end on 16); with few, each slot's first
     * use costs more than the lead buys (2 threads, 10 frames 2048^2:
     * CPU 500 -> 523 ms with a lead of 6, page faults 41k -> 53k) */
    const int lead = e->pipe ? MPE_MIN(PIPE_LEAD, MPE_MAX(0, mpe_pool_threads(e->pool) / 2 - 1)) : 0;
    e->slots = (e->p.bframes ? e->p.bframes + 4 : 3) + lead;
    e->code_out = &e->out;
    e->next_coded = -1;
    e->n_pics = e->p.bframes ? MPE_RC_BANKS + 3 : MPE_RC_BANKS + 1;
    e->last_anchor = -1;
    e->last_i = -1;
    e->staged_n = -1;
    mpe_scenecut_init(&e->scenecut);
    e->scenecut.cpu_flags = mpe_param_cpu_flags(p);
    GpuConfig cfg = { .width = p->width, .height = p->height, .slots = e->slots, .threads = p->threads,
                      .pool = e->pool, .device = p->device, .pyramid = p->me == MPE_ME_HIER,
                      .length = p->length, .intra_costs = e->b_adapt,
                      .cpu_flags = mpe_param_cpu_flags(p), .log = &e->log };
    /* auto falls back to the next backend if one fails to open (kernel
     * build, device memory), before its first frame; a GPU opens while the
     * first frames go through the cpu front end */
    if ((ret = gpu_frontend_open_async(&e->fe, p->backend, &cfg, &e->log, err)) < 0)
        goto fail;
    for (int i = 0; i < e->slots; i++)
        if (mpe_picture_alloc(&e->orig[i], p->width, p->height) < 0)
            goto nomem;
    for (int i = 0; i < e->n_pics; i++)
        if (mpe_picture_alloc(&e->pics[i], p->width, p->height) < 0)
            goto nomem;
    e->ref_pic = 0;
    for (int b = 0; b < MPE_RC_BANKS; b++)
        e->bank_pic[b] = b + 1;
    e->past_pic = MPE_RC_BANKS + 1;
    e->last_b_pic = MPE_RC_BANKS + 2;
    if (bs_writer_init(&e->out, 1 << 16) < 0 || bs_writer_init(&e->hdr, 256) < 0 ||
        plan_slices(e) < 0)
        goto nomem;
    for (int i = 0; e->pipe && i < e->slots; i++)
        if (bs_writer_init(&e->ring[i].bw, 1 << 16) < 0)
            goto nomem;
    if (pthread_mutex_init(&e->queue_lock, NULL)) {
        ret = mpe_error(err, -ENOMEM, "cannot create a lock");
        goto fail;
    }
    e->have_queue_lock = 1;
    if (e->pipe) {
        if (pthread_mutex_init(&e->pipe_lock, NULL)) {
            ret = mpe_error(err, -ENOMEM, "cannot create a lock");
            goto fail;
        }
        if (pthread_cond_init(&e->pipe_work, NULL)) {
            pthread_mutex_destroy(&e->pipe_lock);
            ret = mpe_error(err, -ENOMEM, "cannot create a condition variable");
            goto fail;
        }
        if (pthread_cond_init(&e->pipe_done, NULL)) {
            pthread_cond_destroy(&e->pipe_work);
            pthread_mutex_destroy(&e->pipe_lock);
            ret = mpe_error(err, -ENOMEM, "cannot create a condition variable");
            goto fail;
        }
        e->have_pipe_sync = 1;
    }
    if ((ret = open_rate_control(e, err)) < 0 || (ret = open_checkers(e, err)) < 0)
        goto fail;
    if (p->aq_strength > 0 &&
        (ret = mpe_aq_open(&e->aq_plan, p->aq_mode, p->aq_strength, e->orig[0].mb_width,
                           e->orig[0].mb_height, err)) < 0)
        goto fail;
    for (int i = 0; i < e->slots; i++)
        if (!(e->mv[i] = calloc((size_t)e->orig[0].mb_width * e->orig[0].mb_height, sizeof(*e->mv[i]))) ||
            (e->p.bframes && !(e->mv_bwd[i] = calloc((size_t)e->orig[0].mb_width * e->orig[0].mb_height,
                                                   sizeof(*e->mv_bwd[i])))) ||
            (e->b_adapt && !(e->intra_cost[i] = calloc((size_t)e->orig[0].mb_width * e->orig[0].mb_height,
                                                       sizeof(*e->intra_cost[i])))))
            goto nomem;

    /* more threads than slices would only wait */
    e->threads = MPE_MIN(mpe_pool_threads(e->pool), e->n_slices);
    /* The cpu backend works synchronously inside its calls, and a GPU
     * backend's host side (copies into and out of pinned memory) costs
     * milliseconds too, so with threads to spare the front end gets a thread
     * of its own (backends take calls from any one thread at a time). */
    if (e->pipe ? (ret = mpe_task_open(&e->code_task, err)) < 0 ||
                      (mpe_pool_threads(e->pool) >= STAGE_TASK_THREADS &&
                       (ret = mpe_task_open(&e->stage_task, err)) < 0)
                : e->threads > 1 && (ret = mpe_task_open(&e->fe_task, err)) < 0)
        goto fail;
    for (int i = 0; i < e->n_lanes; i++)
        if ((ret = mpe_task_open(&e->qa[i].task, err)) < 0)
            goto fail;
    mpe_log(&e->log, MPE_LOG_INFO, "%d slice threads, %d slices, front end %s", e->threads,
            e->n_slices, e->pipe ? "on the caller's thread, pictures coded on a thread of their own"
                         : e->fe_task ? "on its own thread" : "asynchronous or inline");
    *out = e;
    return 0;
nomem:
    ret = mpe_error(err, -ENOMEM, "out of memory for %dx%d pictures", p->width, p->height);
fail:
    mpe_encoder_close(e);
    return ret;
}

int mpe_encoder_open(MpeEncoder **out, const MpeParam *p, const MpeLog *log, MpeError *err)
{
    return mpe_encoder_open_pool(out, p, NULL, log, err);
}

const char *mpe_encoder_backend(const MpeEncoder *e)
{
    return gpu_frontend_name(e->fe);
}

void mpe_encoder_stream_rate(const MpeEncoder *e, int *num, int *den)
{
    *num = e->rate_num;
    *den = e->rate_den;
}

int mpe_encoder_bframes(const MpeEncoder *e)
{
    return e->p.bframes;
}

int mpe_encoder_start_chunk(MpeEncoder *e, int first_frame, int end_code, MpeError *err)
{
    if (e->cq_len || e->held || e->staged_n >= 0 || e->submitted > e->last_anchor + 1 ||
        (e->coded && !e->flushed) ||
        e->pushed > e->delivered)
        return mpe_error(err, -EINVAL, "a chunk starts on a new or flushed encoder");
    if (first_frame < 0 || first_frame % (e->chunk_len ? e->chunk_len : e->p.gop))
        return mpe_error(err, -EINVAL, "frame %d does not begin a chunk of %d pictures",
                         first_frame, e->chunk_len ? e->chunk_len : e->p.gop);
    e->frame_index = e->submitted = first_frame;
    e->last_anchor = first_frame - 1;   /* no B frame waits for an anchor */
    e->last_i = -1;                     /* the GOP phase starts again */
    e->flushed = 0;
    e->flushing = 0;
    e->coded = 0;
    e->end_code = end_code;
    e->rc_chunk = -1;
    return 0;
}

int mpe_encoder_chunk_frames(const MpeEncoder *e)
{
    return e->chunk_len;
}

int mpe_encoder_threads(const MpeEncoder *e)
{
    return e->threads;
}

int mpe_encoder_frontend_async(const MpeEncoder *e)
{
    return e->fe_task != NULL;
}

int mpe_encoder_pipelined(const MpeEncoder *e)
{
    return e->pipe;
}

static void write_gop_header(MpeEncoder *e, BsWriter *bw)
{
    /* time code of the GOP's first picture at the nominal integer rate */
    const int ifps = (e->rate_num + e->rate_den / 2) / e->rate_den;
    const int n = e->frame_index, secs = n / ifps;
    bs_write_gop_header(bw, (secs / 3600) % 24, (secs / 60) % 60, secs % 60, n % ifps, 1);
}

typedef struct CodeJob {
    MpeEncoder *e;
    const MpePictureCtx *pc;   /* qscale and quant are set per slice */
    SliceJob *slices;
    const uint8_t *row_q;
} CodeJob;

/* Sum of (a - b): the mean level the rate control's guard checks. */
static int64_t diff_sum_plane(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs,
                              int w, int h)
{
    int64_t sum = 0;
    for (int y = 0; y < h; y++) {
        int32_t line = 0;
        for (int x = 0; x < w; x++)
            line += a[(ptrdiff_t)y * as + x] - b[(ptrdiff_t)y * bs + x];
        sum += line;
    }
    return sum;
}

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
        s->sse[c] = y1 > y0 ? pc->dsp->sse(pc->orig->plane[c] + (ptrdiff_t)y0 * pc->orig->stride[c],
                                          pc->orig->stride[c],
                                          pc->recon->plane[c] + (ptrdiff_t)y0 * pc->recon->stride[c],
                                          pc->recon->stride[c], w, y1 - y0)
                            : 0;
        if (!e->measure_mean || y1 <= y0) {
            s->dsum[c] = s->samples[c] = 0;
            continue;
        }
        s->dsum[c] = diff_sum_plane(pc->orig->plane[c] + (ptrdiff_t)y0 * pc->orig->stride[c],
                                    pc->orig->stride[c],
                                    pc->recon->plane[c] + (ptrdiff_t)y0 * pc->recon->stride[c],
                                    pc->recon->stride[c], w, y1 - y0);
        s->samples[c] = (int64_t)w * (y1 - y0);
    }
}

/* A slice with nothing measured: left out, or coded for its bits only. */
static void clear_slice_measures(SliceJob *s)
{
    memset(s->sse, 0, sizeof(s->sse));
    memset(s->dsum, 0, sizeof(s->dsum));
    memset(s->samples, 0, sizeof(s->samples));
}

static void code_slice_job(void *ctx, int index, int worker)
{
    const CodeJob *job = ctx;
    SliceJob *s = &job->slices[index];
    MpePictureCtx pc = *job->pc;

    (void)worker;
    if (!job->row_q[index]) {
        /* a rate control partial coding leaves the row out (ratecontrol.h) */
        s->q = 0;
        bs_writer_reset(&s->bw);
        clear_slice_measures(s);
        return;
    }
    s->q = job->row_q[index];
    pc.drop_residual = job->e->drop_q && s->q == job->e->drop_q;
    pc.skip_all = job->e->drop_q && s->q == job->e->drop_q + 1;
    pc.qscale = pc.drop_residual ? s->q - 1 : pc.skip_all ? s->q - 2 : s->q;
    pc.qscale_code = job->e->q_code[pc.qscale];
    pc.quant = &job->e->quant[pc.qscale];
    bs_writer_reset(&s->bw);
    mpe_code_slice(&pc, s->row_begin, s->row_end, &s->bw, &s->ss);
    bs_flush(&s->bw);
    if (pc.bits_only)   /* no reconstruction to measure: the rate control reads only bits */
        clear_slice_measures(s);
    else
        slice_sse(job->e, &pc, s);
}

/* The slice's largest |mean(source) - mean(recon)| over Y, Cb, Cr, in levels. */
static double slice_mean_err(const SliceJob *s)
{
    double m = 0;
    for (int c = 0; c < 3; c++)
        if (s->samples[c] > 0)
            m = fmax(m, fabs((double)s->dsum[c] / (double)s->samples[c]));
    return m;
}

/* One coding of the picture into a bank, each slice at its row quantiser. */
static void code_bank(MpeEncoder *e, const MpePictureCtx *pc_in, int bank, const uint8_t *row_q)
{
    MpePictureCtx pc = *pc_in;
    pc.recon = &e->pics[e->bank_pic[bank]];
    pc.mb_coding = e->mb_coding[bank];
    /* a partial coding (rows left out) is never kept (ratecontrol.h): its
     * bits are all it is for, so it skips dequantisation, inverse transform
     * and the distortion (a fifth of its time; on the 2048^2 solar clip at
     * --bitrate 8M the first I, P and B pictures take 7 of them) */
    pc.bits_only = memchr(row_q, 0, (size_t)e->n_slices) != NULL;
    CodeJob job = { e, &pc, e->slices[bank], row_q };

    mpe_pool_run(e->pool, e->n_slices, code_slice_job, &job);
    for (int i = 0; i < e->n_slices; i++) {
        e->origin[bank][i] = (uint8_t)bank;
        e->row_bits[i] = (uint64_t)e->slices[bank][i].bw.pos * 8;
        e->row_sse[i] = e->slices[bank][i].sse[0];
        e->row_mean_err[i] = slice_mean_err(&e->slices[bank][i]);
    }
    e->bank_scored[bank] = 0;
}

typedef struct MixJob {
    MpeEncoder *e;
    int dst;
    const uint8_t *src;
} MixJob;

static void mix_slice(void *arg, int i, int worker)
{
    const MixJob *j = arg;
    MpeEncoder *e = j->e;
    MpePicture *d = &e->pics[e->bank_pic[j->dst]];
    const int sb = j->src[i];
    const MpePicture *s = &e->pics[e->bank_pic[sb]];
    const SliceJob *sj = &e->slices[sb][i];
    (void)worker;
    for (int c = 0; c < 3; c++) {
        const int mb = c ? 8 : 16;
        const size_t off = (size_t)sj->row_begin * mb * d->stride[c];
        const size_t len = (size_t)(sj->row_end - sj->row_begin) * mb * d->stride[c];
        memcpy(d->plane[c] + off, s->plane[c] + off, len);
    }
}

/* Make bank `dst` the per-row mix of other banks: reconstruction rows are
 * copied (a whole picture, on the pool: 6 MB at 2048^2, which the rate
 * control then scores), bits stay where they were coded (origin). */
static void mix_banks(MpeEncoder *e, int dst, const uint8_t *src)
{
    MixJob job = { e, dst, src };
    mpe_pool_run(e->pool, e->n_slices, mix_slice, &job);
    for (int i = 0; i < e->n_slices; i++)
        e->origin[dst][i] = e->origin[src[i]][i];
    e->bank_scored[dst] = 0;
}

/* The rate control's target metric of a bank (one scored by a checker:
 * MAD, BLIINDS-II); *metric is its first value. */
static int score_bank(MpeEncoder *e, int bank, double *metric, MpeError *err)
{
    MpeFrameStats *fs = &e->bank_fs[bank];
    int ret;

    if (!e->bank_scored[bank]) {
        fs->metrics = 0;
        if ((ret = mpe_checker_score(e->check_rc, &e->pics[e->bank_pic[bank]], fs, err)) < 0)
            return ret;
        e->bank_scored[bank] = 1;
    }
    if (metric)
        *metric = fs->value[e->target_value];
    return 0;
}

static void quality_job(void *arg)
{
    QualityJob *job = arg;
    double t0 = mpe_time_ms();
    job->ret = mpe_checker_score_held(job->checker, &job->fs, &job->err);
    job->fs.time.quality_ms += mpe_time_ms() - t0;
}

/* Called with queue_lock held. */
static void queue_push_raw(MpeEncoder *e, const MpeFrameStats *fs)
{
    /* at most QA_LANES + 2 records wait in lock-step: those of the lanes
     * joined in one call, an anchor's held one, and one pushed without a
     * lane; with MpeParam.pipeline those of pictures coded meanwhile */
    e->queue[(e->queue_head + e->queue_len) % STATS_QUEUE] = *fs;
    e->queue_len++;
}

/* Records come out in display order: with B pictures an I or P picture's
 * waits until the B pictures before it (coded after it) are out. */
static void queue_push(MpeEncoder *e, const MpeFrameStats *fs)
{
    pthread_mutex_lock(&e->queue_lock);
    if (!e->p.bframes || fs->type == 'B') {
        queue_push_raw(e, fs);
    } else {
        if (e->held_rec)
            queue_push_raw(e, &e->held_rec_fs);
        e->held_rec_fs = *fs;
        e->held_rec = 1;
    }
    pthread_mutex_unlock(&e->queue_lock);
}

int mpe_encoder_pop_stats(MpeEncoder *e, MpeFrameStats *fs)
{
    int have = 0;
    pthread_mutex_lock(&e->queue_lock);
    if (e->queue_len) {
        *fs = e->queue[e->queue_head];
        e->queue_head = (e->queue_head + 1) % STATS_QUEUE;
        e->queue_len--;
        have = 1;
    }
    pthread_mutex_unlock(&e->queue_lock);
    return have;
}

/* Records of the lanes in flight join the queue in the order the pictures
 * were coded (queue_push puts them in display order): the oldest lanes
 * that are done (all of them with `all`, waiting for each).  The first
 * error a lane met stops the encode with its message. */
static int quality_collect(MpeEncoder *e, int all, MpeError *err)
{
    while (e->qa_busy) {
        QualityLane *lane = &e->qa[e->qa_head];
        if (!all && mpe_task_busy(lane->task))
            break;
        mpe_task_wait(lane->task);
        e->qa_head = (e->qa_head + 1) % e->n_lanes;
        e->qa_busy--;
        if (lane->job.ret < 0) {
            if (err)
                *err = lane->job.err;
            return lane->job.ret;
        }
        queue_push(e, &lane->job.fs);
    }
    return 0;
}

/* Every picture's logged measures (the flush). */
static int quality_join(MpeEncoder *e, MpeError *err)
{
    return quality_collect(e, 1, err);
}

/* The quality stage of a coded picture: PSNR from the slices' SSE at once;
 * the logged measures on a lane of their own, which keeps its copy of the
 * source and reconstruction (mpe_checker_hold), so the coder goes on at
 * once and waits only when every lane is still busy. */
static int quality_stage(MpeEncoder *e, MpeFrameStats *fs, const MpePicture *src,
                         const MpePicture *recon, MpeError *err)
{
    int ret;

    for (int c = 0; c < 3; c++) {
        int w = c ? (e->p.width + 1) / 2 : e->p.width;
        int h = c ? (e->p.height + 1) / 2 : e->p.height;
        fs->value[c] = iqa_psnr_from_mse((double)fs->sse[c] / ((double)w * h));
    }
    fs->metrics |= MPE_IQA_PSNR;   /* family 0: psnr_y_db, psnr_cb_db, psnr_cr_db are ids 0..2 */
    if (!e->n_lanes) {
        queue_push(e, fs);
        return 0;
    }
    const double t_wait = mpe_time_ms();
    if ((ret = quality_collect(e, 0, err)) < 0)
        return ret;
    if (e->qa_busy == e->n_lanes) {
        /* every lane busy: the oldest picture's measures first */
        QualityLane *oldest = &e->qa[e->qa_head];
        mpe_task_wait(oldest->task);
        if ((ret = quality_collect(e, 0, err)) < 0)
            return ret;
    }
    QualityLane *lane = &e->qa[(e->qa_head + e->qa_busy) % e->n_lanes];
    const double t0 = mpe_time_ms();
    mpe_checker_hold(lane->checker, src, recon);
    lane->job = (QualityJob){ .checker = lane->checker, .fs = *fs };
    lane->job.fs.time.quality_ms = mpe_time_ms() - t0;
    lane->job.fs.time.quality_wait_ms = mpe_time_ms() - t_wait;
    mpe_task_start(lane->task, quality_job, &lane->job);
    e->qa_busy++;
    return 0;
}

/* The picture type of display index n (frame), by the GOP structure:
 * closed GOPs of at most --gop pictures, the first I; without B pictures
 * the rest P; with N, every (N+1)-th after the I a P and the others B
 * (--b-adapt 0; with --b-adapt 1 every one a B until adapt_run ends the
 * run, at most N long), and the GOP's last picture a P, so that no B picture needs the next GOP
 * (every GOP is closed and can be cut out or coded alone).  A GOP starts
 * after --gop pictures, at every chunk start and at a scene cut
 * (--scenecut), whose decision reads frames n and n-1 only: so the phase,
 * and every type, is the same whether the encode ran into a chunk or
 * started at it.  B frames still waiting when an I comes early, or the clip
 * ends, are closed off with a P (close_pending_b).  Front end only (it
 * may run on the front end's thread: no logging here; --log shows the
 * types). */
static double scenecut_score(MpeEncoder *e, int n, const MpeFrame *frame)
{
    return e->p.scenecut > 0 ? mpe_scenecut_score_pool(&e->scenecut, n, frame, e->pool) : -1;
}

/* Frame n's type, from its scene-cut score (scenecut_score) */
static char gop_type(MpeEncoder *e, int n, double cut)
{
    const int k = e->last_i < 0 ? 0 : n - e->last_i;
    if (e->last_i < 0 || k >= e->p.gop || (e->chunk_len && n % e->chunk_len == 0) ||
        cut > e->p.scenecut) {
        e->last_i = n;
        return 'I';
    }
    if (!e->p.bframes || k == e->p.gop - 1 || (!e->b_adapt && k % (e->p.bframes + 1) == 0))
        return 'P';
    return 'B';   /* --b-adapt 1: until adapt_run ends the run */
}

static int slot_of(const MpeEncoder *e, int n)
{
    return n % e->slots;
}

static int fetch_into(MpeEncoder *e, int n, GpuMotion *mv, MpeError *err);

/* --merange-adapt: the least reach, and the margin added to the motion the
 * reference's vectors show: at least REACH_MARGIN full pels and half that
 * motion (it may speed up).  A reference whose vectors came within
 * REACH_EDGE of their own reach may have had motion beyond it. */
#define REACH_MIN 16
#define REACH_MARGIN 16
#define REACH_EDGE 8

static uint64_t sad_sum(const GpuMotion *mv, int n_mb)
{
    uint64_t sum = 0;
    for (int i = 0; i < n_mb; i++)
        sum += mv[i].sad;
    return sum;
}

/* The reach of the hierarchical search of frame cur against frame ref.
 * Motion is mostly steady from picture to picture, so the reference's own
 * forward vectors (ref against its anchor, d_ref frames before it) say how
 * far the motion goes over the |cur - ref| frames of this search: the
 * largest vector component, scaled to this distance, plus a margin.  The
 * whole --merange is searched where that says nothing: ref is an I
 * picture (so every GOP, chunk and scene cut starts with it), or its
 * vectors came near their own search's reach.  *expect: what the SADs of
 * a forward search at that reach should stay within (search() searches
 * again over the whole --merange above it: motion that started or sped
 * up).  It reads only vectors of searches issued before, by display
 * index, so it is the same on every backend and thread count: ref's
 * vectors not downloaded yet are fetched here (on a GPU, ref's search was
 * issued a frame earlier or more). */
static int search_reach(MpeEncoder *e, int cur, int ref, int *reach, uint64_t *expect,
                        MpeError *err)
{
    const int rs = slot_of(e, ref);
    int ret;

    *reach = e->reach;
    if (!e->p.merange_adapt || e->fwd_ref[rs] < 0)
        return 0;
    if (!e->mv_fresh[rs] && (ret = fetch_into(e, ref, e->mv[rs], err)) < 0)
        return ret;
    /* how far the motion goes: the largest vector component of the
     * macroblocks whose vector halves the zero vector's SAD (elsewhere,
     * flat or noisy blocks, a vector far away matches about as well as
     * zero and says nothing), leaving out the farthest 1 in 256 of them */
    const int n_mb = e->orig[0].mb_width * e->orig[0].mb_height;
    int count[GPU_MAX_REACH + 2] = { 0 }, total = 0;
    for (int i = 0; i < n_mb; i++) {
        const GpuMotion *m = &e->mv[rs][i];
        if ((uint64_t)m->sad * 2 < m->sad0) {
            count[MPE_MIN(GPU_MAX_REACH + 1, MPE_MAX(abs(m->dx), abs(m->dy)))]++;
            total++;
        }
    }
    int ext = GPU_MAX_REACH + 1, beyond = 0;
    while (ext > 0 && beyond + count[ext] <= total / 256)
        beyond += count[ext--];
    if (ext > e->fwd_reach[rs] - REACH_EDGE)
        return 0;
    const int dist = abs(cur - ref), d_ref = ref - e->fwd_ref[rs];
    const int motion = (ext * dist + d_ref - 1) / d_ref;
    const int r = (motion + MPE_MAX(REACH_MARGIN, motion / 2) + 3) & ~3;
    *reach = MPE_MIN(e->reach, MPE_MAX(REACH_MIN, r));
    /* the reference's SADs, as many times over as this search is longer
     * (new content comes in with the distance), half as much again, and
     * a floor of 1/2 per sample for pictures ref predicts almost exactly */
    const uint64_t s = sad_sum(e->mv[rs], n_mb);
    *expect = MPE_MAX(s, s * (uint64_t)dist / (uint64_t)d_ref) * 3 / 2 + (uint64_t)n_mb * 128;
    return 0;
}

static int search_hier(MpeEncoder *e, int cur, int ref, int reach, MpeError *err)
{
    if (ref < cur) {   /* a forward search: its vectors go to mv */
        e->fwd_reach[slot_of(e, cur)] = reach;
        e->mv_fresh[slot_of(e, cur)] = 0;
    } else {
        e->bwd_reach[slot_of(e, cur)] = reach;
    }
    return gpu_frontend_search_hier(e->fe, slot_of(e, cur), slot_of(e, ref), e->search_window,
                                    reach, err);
}

/* Search slot of frame cur against frame ref's (both submitted). */
static int search(MpeEncoder *e, int cur, int ref, MpeError *err)
{
    const int slot = slot_of(e, cur);
    int reach, ret;
    uint64_t expect = 0;

    if (e->p.me != MPE_ME_HIER) {
        e->fwd_reach[slot] = e->bwd_reach[slot] = e->search_window;
        return gpu_frontend_search(e->fe, slot, slot_of(e, ref), e->search_window, err);
    }
    if ((ret = search_reach(e, cur, ref, &reach, &expect, err)) < 0 ||
        (ret = search_hier(e, cur, ref, reach, err)) < 0)
        return ret;
    if (ref > cur || reach == e->reach)
        return 0;
    /* a forward search over less than the whole reach: its SADs tell
     * whether the motion stayed within it */
    const int n_mb = e->orig[0].mb_width * e->orig[0].mb_height;
    if ((ret = fetch_into(e, cur, e->mv[slot], err)) < 0)
        return ret;
    if (sad_sum(e->mv[slot], n_mb) <= expect)
        return 0;
    return search_hier(e, cur, ref, e->reach, err);
}

/* Hand frame number n to the front end: upload, convert, and for a P
 * picture search it against the previous anchor's ORIGINAL picture.  On a
 * GPU this runs while the CPU codes the frame before it.  A B frame is
 * searched once the anchor after it is in (search_pending_b).  frame NULL:
 * it was staged and committed already (frontend_frame_pipe). */
static int submit(MpeEncoder *e, int n, const MpeFrame *frame, char type, MpeError *err)
{
    const int slot = slot_of(e, n);
    int ret;

    /* a B frame before this one is searched against it once it is in: both
     * must stay on the front end that has the B frame */
    if (n > 0 && e->slot_type[slot_of(e, n - 1)] == 'B')
        gpu_frontend_defer_move(e->fe);
    if (frame && (ret = gpu_frontend_submit(e->fe, slot, frame, err)) < 0)
        return ret;
    e->slot_type[slot] = type;
    e->slot_fetched[slot] = 0;
    e->fwd_ref[slot] = -1;
    e->mv_fresh[slot] = 0;
    if (e->slot_type[slot] != 'P')
        return 0;
    e->fwd_ref[slot] = e->last_anchor;
    return search(e, n, e->last_anchor, err);
}

/* Wait for frame n's front-end work: its vectors into mv (if not NULL),
 * its planes downloaded into orig[n % slots] or, where the backend keeps
 * them on the host, read in the slot.  Either is free: no picture still
 * coded or measured uses the slot (see MAX_SLOTS). */
static int fetch_into(MpeEncoder *e, int n, GpuMotion *mv, MpeError *err)
{
    const int slot = slot_of(e, n);
    double t0, t1;
    int ret;

    /* planes and forward vectors already here: a shorter search fetched
     * them to check its SADs (search), and its caller asks again */
    if (mv == e->mv[slot] && e->mv_fresh[slot] && e->slot_fetched[slot])
        return 0;
    if ((ret = gpu_frontend_wait(e->fe, slot, err)) < 0)
        return ret;
    t0 = mpe_time_ms();
    /* planes the backend keeps on the host are read in place: no copy; a
     * B frame's second fetch (its backward vectors) takes the vectors only */
    const MpePicture *host = gpu_frontend_host_planes(e->fe, slot);
    MpePicture *orig = host || e->slot_fetched[slot] ? NULL : &e->orig[slot];
    if (orig || mv)
        if ((ret = gpu_frontend_download(e->fe, slot, orig, mv, err)) < 0)
            return ret;
    e->src[slot] = host ? host : &e->orig[slot];
    if (mv == e->mv[slot])
        e->mv_fresh[slot] = 1;
    t1 = mpe_time_ms();
    e->slot_download_ms[slot] += t1 - t0;
    e->slot_gpu_ms[slot] = 0;
    GpuTimings gt;
    if (gpu_frontend_timings(e->fe, slot, &gt) == 0)
        e->slot_gpu_ms[slot] = gt.upload_ms + gt.convert_ms + gt.search_ms + gt.readback_ms;
    e->slot_fetched[slot] = 1;
    return 0;
}

static int fetch(MpeEncoder *e, int n, MpeError *err)
{
    const int slot = slot_of(e, n);
    e->slot_download_ms[slot] = 0;
    return fetch_into(e, n, e->slot_type[slot] == 'I' ? NULL : e->mv[slot], err);
}

/* The B frames between the last anchor and frame `anchor` (just submitted
 * and searched, or made an anchor at the flush): each searched forward
 * against the last anchor and backward against `anchor`, and fetched. */
static int search_pending_b(MpeEncoder *e, int anchor, MpeError *err)
{
    int ret;
    for (int b = e->last_anchor + 1; b < anchor; b++) {
        const int slot = slot_of(e, b);
        /* --b-adapt 1 searched it forward already (adapt_run) */
        const int fwd_done = e->fwd_ref[slot] == e->last_anchor;
        if (!fwd_done)
            e->slot_download_ms[slot] = 0;
        e->fwd_ref[slot] = e->last_anchor;
        if ((!fwd_done && ((ret = search(e, b, e->last_anchor, err)) < 0 ||
                           (ret = fetch_into(e, b, e->mv[slot], err)) < 0)) ||
            (ret = search(e, b, anchor, err)) < 0)
            return ret;
    }
    /* the backward searches all in flight before the first is waited for
     * (on a GPU they run back to back, or at once on their own streams) */
    for (int b = e->last_anchor + 1; b < anchor; b++)
        if ((ret = fetch_into(e, b, e->mv_bwd[slot_of(e, b)], err)) < 0)
            return ret;
    return 0;
}

/* B frames wait for the anchor after them; when none comes (an I picture
 * starts a GOP early, or the clip ends) the last of them, `last`, becomes a
 * P and the others B pictures between it and the last anchor. */
static int close_pending_b(MpeEncoder *e, int last, int fetch_now, MpeError *err)
{
    int ret;
    if (last <= e->last_anchor)
        return 0;
    e->slot_type[slot_of(e, last)] = 'P';
    /* --b-adapt 1 searched and fetched it forward already (adapt_run) */
    if (e->fwd_ref[slot_of(e, last)] != e->last_anchor) {
        e->fwd_ref[slot_of(e, last)] = e->last_anchor;
        if ((ret = search(e, last, e->last_anchor, err)) < 0 ||
            (fetch_now && (ret = fetch(e, last, err)) < 0))
            return ret;
    }
    return search_pending_b(e, last, err);
}

typedef struct IntraCostJob {
    uint32_t *intra;
    const MpePicture *pic;
    MpeSad16Fn sad16;
    int bands;
} IntraCostJob;

static void intra_cost_band(void *arg, int band, int worker)
{
    const IntraCostJob *j = arg;
    const int rows = j->pic->mb_height;
    (void)worker;
    mpe_bdecide_intra_costs_rows(j->intra, j->pic, j->sad16, rows * band / j->bands,
                                 rows * (band + 1) / j->bands);
}

/* 0.6-1 ms at 2048^2 on one thread: on the pool, whose threads take
 * bands when they are free */
static void intra_costs(MpeEncoder *e, int slot, const MpePicture *pic)
{
    IntraCostJob job = { e->intra_cost[slot], pic, e->sad.sad16,
                         MPE_MAX(1, MPE_MIN(4 * mpe_pool_threads(e->pool), pic->mb_height / 4)) };
    mpe_pool_run(e->pool, job.bands, intra_cost_band, &job);
}

/* --b-adapt 1: frame n's forward search against `anchor` (the last I or P
 * picture), fetched at once, and its cost as a P picture there
 * (bdecide.h). */
static int run_cost_of(MpeEncoder *e, int n, int anchor, uint64_t *cost, MpeError *err)
{
    const int slot = slot_of(e, n);
    const int n_mb = e->orig[0].mb_width * e->orig[0].mb_height;
    const int first = !e->slot_fetched[slot];
    int ret;

    if (first)
        e->slot_download_ms[slot] = 0;
    e->fwd_ref[slot] = anchor;
    /* a GPU counted the intra costs beside its conversion (0.4-0.6 ms of
     * this thread's time on the H100 machine's busy pool otherwise); else
     * planes the backend keeps on the host (YUV input) are there before the
     * search: their intra costs are counted while the device searches */
    const int on_device = first && gpu_frontend_has_intra_costs(e->fe, slot);
    const MpePicture *host = first && !on_device ? gpu_frontend_host_planes(e->fe, slot) : NULL;
    if (host)
        intra_costs(e, slot, host);
    if ((ret = search(e, n, anchor, err)) < 0 || (ret = fetch_into(e, n, e->mv[slot], err)) < 0 ||
        (on_device && (ret = gpu_frontend_intra_costs(e->fe, slot, e->intra_cost[slot], err)) < 0))
        return ret;
    if (first && !on_device && !host)
        intra_costs(e, slot, e->src[slot]);
    *cost = mpe_bdecide_cost(e->mv[slot], e->intra_cost[slot], n_mb);
    return 0;
}

/* --b-adapt 1: frame n came in as a B picture after the last anchor a.
 * Where one more B picture makes the run dearer (mpe_bdecide_stop), the
 * frame before n becomes the P that ends the run, and n starts the next
 * one (or is a P after it, when it must be an anchor: the GOP's last
 * picture); where the run is --bframes long, or n must be an anchor, n is
 * its P. */
static int adapt_run(MpeEncoder *e, int n, int anchor, MpeError *err)
{
    const int a = e->last_anchor, m = n - a;
    int ret;

    if ((ret = run_cost_of(e, n, a, &e->run_cost[m], err)) < 0)
        return ret;
    if (m >= 2 && mpe_bdecide_stop(e->run_cost, m, MPE_BDECIDE_TOLERANCE)) {
        e->slot_type[slot_of(e, n - 1)] = 'P';
        if ((ret = search_pending_b(e, n - 1, err)) < 0)
            return ret;
        if ((ret = run_cost_of(e, n, n - 1, &e->run_cost[1], err)) < 0)
            return ret;
        if (anchor)
            e->slot_type[slot_of(e, n)] = 'P';
        return 0;
    }
    if (m == e->p.bframes + 1 || anchor) {
        e->slot_type[slot_of(e, n)] = 'P';
        return search_pending_b(e, n, err);
    }
    return 0;
}

/* The front end's whole work for frame n of the given type (gop_type):
 * submit (and search, for a P), and when n is a P, the B frames before it;
 * an I closes them off first (they are coded before it, see
 * enqueue_ready).  frame NULL: it was staged and committed already. */
static int frontend_frame(MpeEncoder *e, int n, const MpeFrame *frame, char type, int fetch_now,
                          MpeError *err)
{
    int ret;
    if (type == 'I' && (ret = close_pending_b(e, n - 1, fetch_now, err)) < 0)
        return ret;
    /* --b-adapt 1: the GOP's last picture, a P, may end the run of B
     * frames before it early too */
    const int adapt = e->b_adapt && (type == 'B' || (type == 'P' && n - e->last_anchor >= 2));
    if ((ret = submit(e, n, frame, adapt ? 'B' : type, err)) < 0)
        return ret;
    if (adapt)
        return adapt_run(e, n, type == 'P', err);
    if (type == 'B')
        return 0;
    if (fetch_now && (ret = fetch(e, n, err)) < 0)
        return ret;
    return type == 'P' ? search_pending_b(e, n, err) : 0;
}

/* Frame n's front-end work is done: what it made ready joins the coding
 * queue.  Each anchor up to n (the P that closed off B frames before an I,
 * close_pending_b, or ended a run, adapt_run; then n itself) is coded
 * first, then the B frames before it. */
static void enqueue_ready(MpeEncoder *e, int n)
{
    for (int d = e->last_anchor + 1; d <= n; d++) {
        if (e->slot_type[slot_of(e, d)] == 'B')
            continue;
        e->code_queue[(e->cq_head + e->cq_len++) % (2 * MAX_SLOTS)] = d;
        for (int b = e->last_anchor + 1; b < d; b++)
            e->code_queue[(e->cq_head + e->cq_len++) % (2 * MAX_SLOTS)] = b;
        e->last_anchor = d;
    }
}

/* The flush: the clip ends on B frames, which have no anchor after them. */
static int end_pending_b(MpeEncoder *e, MpeError *err)
{
    const int last = e->submitted - 1;
    int ret;
    if (last <= e->last_anchor)
        return 0;
    if ((ret = close_pending_b(e, last, 1, err)) < 0)
        return ret;
    enqueue_ready(e, last);
    return 0;
}

static void frontend_job(void *arg)
{
    FrontendJob *job = arg;
    double t0 = mpe_time_ms();
    job->ret = frontend_frame(job->e, job->n, job->frame,
                              gop_type(job->e, job->n, scenecut_score(job->e, job->n, job->frame)),
                              1, &job->err);
    job->ms = mpe_time_ms() - t0;
}

/* The front end's results of frame e->frame_index: fetched on the task
 * thread already, or now. */
static int fetch_picture(MpeEncoder *e, MpeFrameStats *fs, MpeError *err)
{
    const int n = e->frame_index, slot = slot_of(e, n);
    double t0 = mpe_time_ms();
    int ret;

    if (!e->slot_fetched[slot]) {
        /* on code_task the front end's calls belong to the caller's thread,
         * which fetched every queued picture (frontend_frame's fetch_now) */
        if (e->pipe)
            return mpe_error(err, -EINVAL, "internal: picture %d queued unfetched", n);
        if ((ret = fetch(e, n, err)) < 0)
            return ret;
        /* on this thread: the wait is not hidden, the download is its own stage */
        fs->time.download_ms = e->slot_download_ms[slot];
        fs->time.fe_wait_ms = mpe_time_ms() - t0 - e->slot_download_ms[slot];
    }
    /* (the caller's thread marks it again at the slot's next frame) */
    if (!e->pipe)
        e->slot_fetched[slot] = 0;
    fs->time.fe_ms = e->slot_fe_ms[slot];
    fs->time.fe_wait_ms += e->slot_wait_ms[slot];
    fs->time.fe_gpu_ms = e->slot_gpu_ms[slot];
    return 0;
}

/* Returns the bits written up to the end of the picture start code. */
static uint64_t write_headers(MpeEncoder *e, BsWriter *bw, char type, int vbv_delay)
{
    const int intra = type == 'I';
    const uint64_t begin = bs_bit_count(bw);
    uint64_t start_code_end;

    if (intra) {
        /* every GOP starts with the sequence header again so that a decoder
         * can start at any GOP (and all GOPs are closed) */
        bs_write_sequence_header(bw, &e->seq);
        write_gop_header(e, bw);
    }
    bs_align(bw);
    start_code_end = bs_bit_count(bw) - begin + 32;
    BsPictureHeader ph = {
        .mpeg2 = e->mpeg2,
        /* display order within the GOP */
        .temporal_reference = e->frame_index - (intra ? e->frame_index : e->gop_start),
        .coding_type = intra ? BS_PICTURE_I : type == 'P' ? BS_PICTURE_P : BS_PICTURE_B,
        .f_code_fwd = e->f_code,
        .f_code_bwd = e->f_code_bwd,
        .vbv_delay = vbv_delay,
        .q_scale_type = e->nonlinear,
        .intra_dc_precision = e->sw.dc_precision - 8,
        .intra_vlc_format = e->intra_vlc,
        .alternate_scan = e->sw.alt_scan,
    };
    bs_write_picture_header(bw, &ph);
    bs_align(bw);   /* the first slice start code is aligned */
    return start_code_end;
}

/* The refresh counters follow the coding written: slice `s` as coded in
 * bank `origin`. */
static void update_refresh_count(MpeEncoder *e, int origin, const SliceJob *s)
{
    const int mbw = e->orig[0].mb_width;
    for (int addr = s->row_begin * mbw; addr < s->row_end * mbw; addr++) {
        switch (e->mb_coding[origin][addr]) {
        case MPE_MB_CODED_INTRA:
            e->refresh_count[addr] = 0;
            break;
        case MPE_MB_CODED_RESIDUAL:
            e->refresh_count[addr]++;   /* below MPE_REFRESH_PERIOD: the slice forces intra first */
            break;
        default:
            break;
        }
    }
}

/* -vv: one line per rate-control trial (what a quality target costs) */
static void trace_trial(MpeEncoder *e, const MpeRcStep *step, char type, int trial, double metric)
{
    uint64_t bits = 0, sse = 0;
    double q = 0, mean_err = 0;
    int rows = 0;   /* coded: a partial coding's are fewer (its bits and PSNR are of them) */
    for (int i = 0; i < e->n_slices; i++) {
        const SliceJob *s = &e->slices[e->origin[step->bank][i]][i];
        mean_err = fmax(mean_err, slice_mean_err(s));
        bits += (uint64_t)s->bw.pos * 8;
        sse += s->sse[0];
        q += (double)s->q * (s->row_end - s->row_begin);
        rows += s->q ? s->row_end - s->row_begin : 0;
    }
    const int partial = step->action == MPE_RC_CODE && rows < e->orig[0].mb_height;
    char psnr[32] = "", metric_s[32] = "", mean_s[48] = "";
    if (!partial)   /* a partial coding has no reconstruction to measure (code_bank) */
        snprintf(psnr, sizeof(psnr), ", PSNR-Y %.3f dB",
                 iqa_psnr_from_mse((double)sse / ((double)e->p.width * MPE_MIN(16 * rows, e->p.height))));
    if (step->need_metric)
        snprintf(metric_s, sizeof(metric_s), ", metric %.4g", metric);
    if (e->measure_mean && !partial)
        snprintf(mean_s, sizeof(mean_s), ", row mean error %.2f", mean_err);
    mpe_log(&e->log, MPE_LOG_DEBUG, "frame %d %c trial %d: %s mean q %.2f, %llu bits%s%s%s",
            e->frame_index, type, trial,
            step->action != MPE_RC_CODE ? "mix" : partial ? "partial" : "code",
            q / MPE_MAX(rows, 1), (unsigned long long)bits, psnr, metric_s, mean_s);
}

/* At the first picture of a chunk, whatever crosses GOPs starts as in a
 * fresh encoder: the rate control (its models, the GOP budget carried over,
 * and the VBV fullness, which it sets to the chunk's agreed start), the
 * f_code and the refresh counters.  So a chunk codes to the same bytes
 * whether the encode began at it (mpe_encoder_start_chunk) or ran into it,
 * and chunks can be coded apart and concatenated. */
/* --intra-vlc auto's guess for a chunk's first I picture, in bands of
 * macroblock rows on the pool (the integer sums add up alike in any
 * order: mpe_slice_guess_intra_table's result). */
#define GUESS_BANDS 64

typedef struct GuessJob {
    const MpePictureCtx *pc;
    int rows, bands;
    int64_t bits[GUESS_BANDS][2];
} GuessJob;

static void guess_band(void *arg, int band, int worker)
{
    GuessJob *j = arg;
    (void)worker;
    j->bits[band][0] = j->bits[band][1] = 0;
    mpe_slice_intra_table_bits(j->pc, j->rows * band / j->bands, j->rows * (band + 1) / j->bands,
                               j->bits[band]);
}

static int start_chunk_state(MpeEncoder *e, MpeError *err)
{
    const int chunk = e->chunk_len ? e->frame_index / e->chunk_len : 0;
    MpeRc *rc;
    int ret;

    if ((e->chunk_len && e->frame_index % e->chunk_len) || chunk == e->rc_chunk)
        return 0;
    e->rc_cfg.chunk_index = chunk;
    if ((ret = mpe_rc_new(&rc, &e->rc_cfg, (uint64_t)e->p.width * e->p.height, err)) < 0)
        return ret;
    e->intra_vlc_next[0] = e->intra_vlc_next[1] = 0;
    e->intra_vlc_counted = 0;
    mpe_rc_free(e->rc);
    e->rc = rc;
    e->rc_chunk = chunk;
    e->f_code = f_code_for_range(e->search_window);
    memset(e->refresh_count, 0, (size_t)e->orig[0].mb_width * e->orig[0].mb_height);
    return 0;
}

/* Code frame number e->frame_index, fetched already: the rate control's
 * trials, then the chosen bank's slices into the stream. */
static int code_picture(MpeEncoder *e, MpeFrameStats *fs, const MpePicture **recon_out,
                        MpeError *err)
{
    const int slot = slot_of(e, e->frame_index);
    const char type = e->slot_type[slot];
    const int intra = type == 'I', is_b = type == 'B';
    const MpePicture *orig = e->src[slot];
    double t0 = mpe_time_ms(), t1;
    const uint64_t start_bits = bs_bit_count(e->code_out);
    int ret, bank = 0, trials = 0;

    if (intra && (ret = start_chunk_state(e, err)) < 0)
        return ret;
    /* --b-adapt 1 has the B picture's intra costs: --pb-ratio in full only
     * where the references predict it (bdecide.h) */
    const int b_ratio = is_b && e->b_row_q && e->intra_cost[slot];
    VectorScan vs = { 0, 0, 0, 0 };
    if (!intra) {
        scan_vectors(e->mv[slot], is_b ? e->mv_bwd[slot] : NULL,
                     b_ratio ? e->intra_cost[slot] : NULL, orig->mb_width * orig->mb_height, &vs);
        e->f_code = f_code_for_range(vs.reach_fwd);
    }
    if (is_b)
        e->f_code_bwd = f_code_for_range(vs.reach_bwd);
    if (intra && e->ip_auto) {
        /* --ip-ratio auto: as far as the pictures up to the next anchor,
         * searched against this one (--b-adapt 1) and held for it, keep
         * its content (bdecide.h); none searched: --q */
        const int next = e->next_coded;
        const int ns = next > e->frame_index ? slot_of(e, next) : 0;
        const double ratio = next > e->frame_index && e->slot_type[ns] == 'P' &&
                                     e->fwd_ref[ns] == e->frame_index
                                 ? mpe_bdecide_ip_ratio(mpe_bdecide_retention(
                                       e->mv[ns], e->intra_cost[ns], orig->mb_width * orig->mb_height,
                                       next - e->frame_index), MPE_IP_RATIO_AUTO)
                                 : 1;
        memset(e->i_row_q, (int)ladder_nearest(e, e->p.qscale / ratio), (size_t)e->n_slices);
    }
    if (intra)
        e->gop_start = e->frame_index;
    if (intra && e->sw.intra_vlc < 0 && !e->intra_vlc_counted && e->rc_cfg.mode == MPE_RC_CQ) {
        /* no I picture counted yet: the table a sample of this one's
         * levels takes fewer bits with (make rd: mandelbrot's first I
         * picture 14 % fewer bits with B.15, the still solar's with B.14);
         * a rate or quality target's quantiser is not known yet: B.14 */
        const int q = e->i_row_q ? e->i_row_q[0] : e->p.qscale;
        const MpePictureCtx guess = { .orig = orig, .dsp = &e->dsp, .quant = &e->quant[q],
                                      .scan = e->sw.alt_scan ? mpe_alternate_scan : mpe_zigzag };
        /* a DCT of half the picture's blocks: 13-14 ms at 2048^2 on one
         * thread, longer than the I picture's coding on 16 */
        GuessJob job = { .pc = &guess, .rows = orig->mb_height,
                         .bands = MPE_MIN(GUESS_BANDS, MPE_MAX(1, orig->mb_height / 2)) };
        mpe_pool_run(e->pool, job.bands, guess_band, &job);
        int64_t bits[2] = { 0, 0 };
        for (int b = 0; b < job.bands; b++)
            for (int t = 0; t < 2; t++)
                bits[t] += job.bits[b][t];
        e->intra_vlc_next[0] = bits[1] < bits[0];
    }
    e->intra_vlc = e->sw.intra_vlc >= 0 ? e->sw.intra_vlc : e->intra_vlc_next[!intra];
    bs_writer_reset(&e->hdr);
    const uint64_t start_code_bits = write_headers(e, &e->hdr, type, 0xFFFF);
    const int vbv_delay = mpe_rc_start_frame(e->rc, type, bs_bit_count(&e->hdr), start_code_bits);
    fs->vbv_fullness = mpe_rc_vbv_fullness(e->rc);
    write_headers(e, e->code_out, type, vbv_delay == 0xFFFF ? 0 : vbv_delay);
    if (e->check_rc && (ret = mpe_checker_set_source(e->check_rc, orig, err)) < 0)
        return ret;

    MpePictureCtx pc = {
        .mpeg2 = e->mpeg2,
        .coding_type = intra ? BS_PICTURE_I : is_b ? BS_PICTURE_B : BS_PICTURE_P,
        .f_code = e->f_code,
        .f_code_bwd = e->f_code_bwd,
        .tall_picture = e->p.height > 2800,
        .orig = orig,
        /* B: forward from the anchor before, backward from the one after */
        .ref = &e->pics[is_b ? e->past_pic : e->ref_pic],
        .ref_bwd = is_b ? &e->pics[e->ref_pic] : NULL,
        .mv = e->mv[slot],
        .mv_bwd = is_b ? e->mv_bwd[slot] : NULL,
        .dsp = &e->dsp,
        .sad16 = e->sad.sad16,
        .refresh_count = e->refresh_count,
        .trellis_c = e->p.trellis ? e->p.trellis_lambda : 0,
        .scan = e->sw.alt_scan ? mpe_alternate_scan : mpe_zigzag,
        .intra_vlc_table = e->intra_vlc ? BS_DCT_TABLE_ONE : BS_DCT_TABLE_ZERO,
        .count_intra_tables = e->sw.intra_vlc < 0,
        .dc_precision = e->sw.dc_precision - 8,
        .aq = e->p.aq_strength > 0 ? e->aq : NULL,
        .ladder = e->ladder,
        .n_ladder = e->n_ladder - (e->drop_q ? 2 : 0),
        .quants = e->quant,
        .q_code = e->q_code,
    };
    if (e->aq_plan && (ret = mpe_aq_plan(e->aq_plan, orig, e->aq, err)) < 0)
        return ret;
    if (b_ratio)
        memset(e->b_row_q, (int)ladder_nearest(e, e->p.qscale * mpe_bdecide_b_ratio_of(
                   vs.sum_intra, vs.b_cost, e->p.pb_ratio)), (size_t)e->n_slices);
    for (;;) {
        MpeRcStep step;
        MpeRcResult res = { .row_bits = e->row_bits, .row_sse = e->row_sse,
                            .row_mean_err = e->row_mean_err };
        mpe_rc_next(e->rc, &step);
        if (step.action == MPE_RC_DONE) {
            bank = step.bank;
            break;
        }
        if (step.action == MPE_RC_CODE)
            /* constant quantiser: B pictures at --pb-ratio times P's, I at 1 / --ip-ratio */
            code_bank(e, &pc, step.bank, is_b && e->b_row_q ? e->b_row_q
                                         : intra && e->i_row_q ? e->i_row_q : step.row_q);
        else
            mix_banks(e, step.bank, step.src);
        if (step.need_metric && (ret = score_bank(e, step.bank, &res.metric, err)) < 0)
            return ret;
        mpe_rc_report(e->rc, &res);
        if (e->log.level >= MPE_LOG_DEBUG)
            trace_trial(e, &step, type, ++trials, res.metric);
    }

    /* the chosen bank's slices, in order, from the codings that hold them */
    double qsum = 0, mv_sum = 0;
    int refreshed = 0;
    int64_t table_bits[2] = { 0, 0 };
    for (int i = 0; i < e->n_slices; i++) {
        const SliceJob *s = &e->slices[e->origin[bank][i]][i];
        table_bits[0] += s->ss.intra_table_bits[0];
        table_bits[1] += s->ss.intra_table_bits[1];
        if (!is_b)   /* B pictures are no reference: their mismatch goes nowhere */
            update_refresh_count(e, e->origin[bank][i], s);
        refreshed += s->ss.refreshed;
        /* the no-residual step is logged as the coarsest quantiser plus one */
        bs_append(e->code_out, &s->bw);
        fs->mb_intra += s->ss.intra;
        fs->mb_inter += s->ss.inter;
        fs->mb_skipped += s->ss.skipped;
        mv_sum += s->ss.mv_abs_sum;
        qsum += (double)s->q * (s->row_end - s->row_begin);
        for (int c = 0; c < 3; c++)
            fs->sse[c] += s->sse[c];
    }
    /* --intra-vlc auto: the next picture of this kind takes the table that
     * would have coded this one's intra blocks in fewer bits */
    if (table_bits[0] != table_bits[1])
        e->intra_vlc_next[!intra] = table_bits[1] < table_bits[0];
    e->intra_vlc_counted |= intra;
    const uint64_t pic_bits = bs_bit_count(e->code_out) - start_bits;
    uint64_t stuffing;
    const int rc_said = mpe_rc_end_frame(e->rc, pic_bits, &trials, &stuffing);
    if (rc_said > 0 && !e->cap_warned) {
        e->cap_warned = 1;
        mpe_log(&e->log, MPE_LOG_WARNING,
                "picture %d (%c) needs %llu bits even at the coarsest quantiser, more than its "
                "GOP has left of the %.0f kbit/s cap: the stream will be above the cap",
                e->frame_index, type, (unsigned long long)pic_bits, e->p.bitrate / 1000);
    }
    if (rc_said == -2)
        return mpe_error(err, -ERANGE,
                         "picture %d (%c) needs %llu bits even coded as coarsely as it can be, more "
                         "than leaves the next chunk of --chunk-gops %d its agreed VBV fullness: the "
                         "rate is too low for this content (raise --bitrate, or --chunk-gops 0 when "
                         "the stream is not coded in pieces)",
                         e->frame_index, intra ? 'I' : 'P', (unsigned long long)pic_bits,
                         mpe_param_chunk_gops(&e->p));
    if (rc_said < 0)
        /* a stream that breaks the VBV its header declares is no stream a
         * decoder with that buffer can play: stop, rather than finish one */
        return mpe_error(err, -ERANGE,
                         "picture %d (%c) needs %llu bits even coded as coarsely as it can be, but "
                         "the VBV holds only %.0f at %.0f kbit/s: the rate is too low for this "
                         "content (raise --bitrate, or --gop for fewer I pictures)",
                         e->frame_index, type, (unsigned long long)pic_bits,
                         fs->vbv_fullness, e->seq.bit_rate * 0.4);
    for (uint64_t i = 0; i < stuffing; i++)
        bs_put(e->code_out, 8, 0);   /* zero stuffing before the next start code */

    const MpePicture *recon = &e->pics[e->bank_pic[bank]];
    if (e->check_rc) {
        /* the target metric of the picture kept (coded, not yet scored, when
         * the VBV forced a coarser coding than the search chose) */
        if ((ret = score_bank(e, bank, NULL, err)) < 0)
            return ret;
        mpe_stats_copy_values(fs, &e->bank_fs[bank]);
    }
    fs->display_index = e->frame_index;
    fs->type = type;
    fs->qscale_mean = qsum / orig->mb_height;
    fs->qscale = (int)lround(fs->qscale_mean);
    fs->mv_mean_abs = fs->mb_inter ? mv_sum / fs->mb_inter : 0;
    fs->reach_fwd = intra ? 0 : e->fwd_reach[slot];
    fs->reach_bwd = is_b ? e->bwd_reach[slot] : 0;
    fs->trials = trials;
    fs->guard_mean = mpe_rc_guard_mean_rejects(e->rc);
    fs->bits = bs_bit_count(e->code_out) - start_bits;
    if (refreshed)
        mpe_log(&e->log, MPE_LOG_DEBUG, "frame %d: %d macroblocks intra for the refresh rule",
                e->frame_index, refreshed);
    /* the kept reconstruction becomes the reference, and the old one a bank
     * (with B pictures the old one stays as the forward reference, and the
     * one before it becomes a bank); a B picture's is kept aside until its
     * quality stage is done */
    const int kept = e->bank_pic[bank];
    if (is_b) {
        e->bank_pic[bank] = e->last_b_pic;
        e->last_b_pic = kept;
    } else if (e->p.bframes) {
        e->bank_pic[bank] = e->past_pic;
        e->past_pic = e->ref_pic;
        e->ref_pic = kept;
    } else {
        e->bank_pic[bank] = e->ref_pic;
        e->ref_pic = kept;
    }
    t1 = mpe_time_ms();
    fs->time.code_ms = t1 - t0;
    ret = quality_stage(e, fs, orig, recon, err);
    e->coded++;
    *recon_out = recon;
    return ret;
}

/* Code picture e->frame_index (fetched into fs's times) and say which
 * picture comes out, in display order: a B picture at once, an I or P
 * picture when the next one is coded (the B pictures between them come out
 * before it) or at the end. */
static int code_next(MpeEncoder *e, MpeFrameStats *fs, MpeOutput *out, MpeError *err)
{
    const MpePicture *recon = NULL;
    int ret;

    if ((ret = code_picture(e, fs, &recon, err)) < 0)
        return ret;
    out->coded = 1;
    out->coded_display_index = fs->display_index;
    out->coded_type = fs->type;
    if (!e->p.bframes || fs->type == 'B') {
        out->stats = *fs;
        out->recon = recon;
        out->have_picture = 1;
        return 0;
    }
    if (e->held) {
        out->stats = e->held_stats;
        out->recon = e->held_recon;
        out->have_picture = 1;
    }
    e->held = 1;
    e->held_stats = *fs;
    e->held_recon = recon;
    return 0;
}

/* The flush's end, every picture out: the last picture's logged measures
 * too; and a GPU that failed to open while the cpu front end took every
 * frame fails the run. */
static int flush_end(MpeEncoder *e, MpeError *err)
{
    int ret;
    if ((ret = quality_join(e, err)) < 0 || (ret = gpu_frontend_ready(e->fe, err)) < 0)
        return ret;
    pthread_mutex_lock(&e->queue_lock);
    if (e->held_rec) {
        queue_push_raw(e, &e->held_rec_fs);
        e->held_rec = 0;
    }
    pthread_mutex_unlock(&e->queue_lock);
    if (e->coded > 0 && e->end_code)
        bs_write_sequence_end(&e->out);
    e->flushed = 1;
    return 0;
}

/* ---- MpeParam.pipeline ---- */

/* code_task: the queued pictures, in coding order, each into its CodedPic,
 * until told to quit; stops at the first error. */
static void coder_loop(void *arg)
{
    MpeEncoder *e = arg;
    pthread_mutex_lock(&e->pipe_lock);
    for (;;) {
        while (!e->work_len && !e->coder_quit)
            pthread_cond_wait(&e->pipe_work, &e->pipe_lock);
        if (!e->work_len)
            break;
        e->frame_index = e->work[e->work_head];
        e->next_coded = e->work_next[e->work_head];
        e->work_head = (e->work_head + 1) % MAX_SLOTS;
        e->work_len--;
        CodedPic *cp = &e->ring[e->done % e->slots];
        pthread_mutex_unlock(&e->pipe_lock);

        const MpePicture *recon;
        MpeError err;
        int ret;
        memset(&cp->fs, 0, sizeof(cp->fs));
        bs_writer_reset(&cp->bw);
        e->code_out = &cp->bw;
        if ((ret = fetch_picture(e, &cp->fs, &err)) >= 0 &&
            (ret = code_picture(e, &cp->fs, &recon, &err)) >= 0) {
            bs_flush(&cp->bw);
            if (bs_error(&cp->bw))
                ret = mpe_error(&err, bs_error(&cp->bw), "out of memory for the bitstream");
        }

        pthread_mutex_lock(&e->pipe_lock);
        if (ret < 0) {
            e->coder_ret = ret;
            e->coder_err = err;
            pthread_cond_broadcast(&e->pipe_done);
            break;
        }
        e->done++;
        pthread_cond_broadcast(&e->pipe_done);
    }
    pthread_mutex_unlock(&e->pipe_lock);
}

/* The pictures coded back since the last look (waiting for one more with
 * `wait`, if any is out): their slots are free again. */
static int pipe_collect(MpeEncoder *e, int wait, MpeError *err)
{
    pthread_mutex_lock(&e->pipe_lock);
    while (wait && e->done == e->collected && e->pushed > e->done && !e->coder_ret)
        pthread_cond_wait(&e->pipe_done, &e->pipe_lock);
    const int done = e->done, ret = e->coder_ret;
    if (ret < 0 && err)
        *err = e->coder_err;
    pthread_mutex_unlock(&e->pipe_lock);
    for (; e->collected < done; e->collected++)
        e->slot_busy[slot_of(e, e->ring[e->collected % e->slots].fs.display_index)] = 0;
    return ret < 0 ? ret : 0;
}

/* Queued pictures go to code_task as long as the ring has room;
 * --ip-ratio auto's I picture waits for the anchor after it, as in
 * mpe_encode_frame, unless the flush leaves none. */
static void pipe_push(MpeEncoder *e)
{
    int n = 0;
    pthread_mutex_lock(&e->pipe_lock);
    while (e->cq_len && e->pushed - e->delivered < e->slots) {
        const int d = e->code_queue[e->cq_head];
        if (e->ip_auto && e->cq_len == 1 && e->slot_type[slot_of(e, d)] == 'I' && !e->flushing)
            break;
        e->cq_head = (e->cq_head + 1) % (2 * MAX_SLOTS);
        e->cq_len--;
        const int at = (e->work_head + e->work_len) % MAX_SLOTS;
        e->work[at] = d;
        e->work_next[at] = e->cq_len ? e->code_queue[e->cq_head] : -1;
        e->work_len++;
        e->pushed++;
        n++;
    }
    if (n)
        pthread_cond_signal(&e->pipe_work);
    pthread_mutex_unlock(&e->pipe_lock);
    if (n && !e->coder_started) {
        mpe_task_start(e->code_task, coder_loop, e);
        e->coder_started = 1;
    }
}

static void stage_job(void *arg)
{
    MpeEncoder *e = arg;
    gpu_frontend_stage_copy(&e->staged);
    e->stage_cut = scenecut_score(e, e->stage_n, e->stage_frame);
}

/* The front-end work left of the staged frame (frontend_frame_pipe), its
 * time added to the slot's; it then joins the coding queue. */
static int finish_staged(MpeEncoder *e, MpeError *err)
{
    const int n = e->staged_n;
    const double t0 = mpe_time_ms();
    int ret;

    if (n < 0)
        return 0;
    e->staged_n = -1;
    if ((ret = frontend_frame(e, n, NULL, e->staged_type, 1, err)) < 0)
        return ret;
    e->slot_fe_ms[slot_of(e, n)] += mpe_time_ms() - t0;
    enqueue_ready(e, n);
    return 0;
}

/* Frame n (its slot free) into the front end.  Its copy into the slot and
 * its scene-cut levels (about 1.4 ms on the H100 machine's busy pool) run
 * on stage_task while this thread finishes frame n - 1's front-end work
 * (its searches, waits and decisions: n - 1 is staged); frame n is then
 * committed (its upload and conversion run while the next frame comes),
 * and the rest of its front end waits for the next call.  Every call into
 * the front end keeps its order, so the pictures are the lock-step
 * schedule's.  Where a frame cannot be staged (gpu_frontend_stage: the cpu
 * front end takes the first frames while a GPU opens, or converts RGB from
 * the caller's frame), it goes through whole, after n - 1. */
static int frontend_frame_pipe(MpeEncoder *e, int n, const MpeFrame *frame, MpeError *err)
{
    const int slot = slot_of(e, n);
    const double t0 = mpe_time_ms();
    int ret = gpu_frontend_stage(e->fe, slot, frame, &e->staged, err);

    if (ret == -EAGAIN) {
        if ((ret = finish_staged(e, err)) < 0)
            return ret;
        const double t1 = mpe_time_ms();
        if ((ret = frontend_frame(e, n, frame, gop_type(e, n, scenecut_score(e, n, frame)), 1,
                                  err)) < 0)
            return ret;
        e->slot_fe_ms[slot] = mpe_time_ms() - t1;
        enqueue_ready(e, n);
        return 0;
    }
    if (ret < 0)
        return ret;
    e->stage_frame = frame;
    e->stage_n = n;
    if (e->stage_task)
        mpe_task_start(e->stage_task, stage_job, e);
    else
        stage_job(e);
    const double t1 = mpe_time_ms();
    ret = finish_staged(e, err);
    const double t2 = mpe_time_ms();
    if (e->stage_task)
        mpe_task_wait(e->stage_task);
    /* its upload and conversion start now, while the next frame is read */
    if (ret < 0 || (ret = gpu_frontend_commit(e->fe, slot, &e->staged, err)) < 0)
        return ret;
    e->staged_n = n;
    e->staged_type = gop_type(e, n, e->stage_cut);
    e->slot_fe_ms[slot] = mpe_time_ms() - t2 + t1 - t0;
    return 0;
}

static int encode_frame_pipe(MpeEncoder *e, const MpeFrame *frame, MpeOutput *out, MpeError *err)
{
    int ret;

    if ((ret = pipe_collect(e, 0, err)) < 0)
        return ret;
    if (frame) {
        const int n = e->submitted, slot = slot_of(e, n);
        double t0 = mpe_time_ms();
        /* the slot's last picture must be coded back first: it is queued
         * (its anchor came at most --bframes + 1 frames after it, and one
         * more frame may be staged since), so it is out on code_task or
         * goes now */
        while (e->slot_busy[slot]) {
            pipe_push(e);
            if (e->pushed == e->collected)
                return mpe_error(err, -EINVAL, "internal: slot of frame %d held by an unqueued picture", n);
            if ((ret = pipe_collect(e, 1, err)) < 0)
                return ret;
        }
        /* on this thread: before the front end's time, the wait for the
         * coder to free the slot (mpe_encoder_pipelined) */
        e->slot_wait_ms[slot] = mpe_time_ms() - t0;
        e->slot_busy[slot] = 1;
        if ((ret = frontend_frame_pipe(e, n, frame, err)) < 0)
            return ret;
        e->submitted++;
    } else {
        gpu_frontend_finish(e->fe);
        if ((ret = finish_staged(e, err)) < 0 || (ret = end_pending_b(e, err)) < 0)
            return ret;
        e->flushing = 1;
    }
    pipe_push(e);
    if ((ret = pipe_collect(e, 0, err)) < 0)
        return ret;
    /* the flush waits for each picture in turn; a frame takes one if ready */
    while (!frame && e->delivered == e->collected && (e->pushed > e->collected || e->cq_len)) {
        pipe_push(e);
        if ((ret = pipe_collect(e, 1, err)) < 0)
            return ret;
    }
    if (e->delivered < e->collected) {
        CodedPic *cp = &e->ring[e->delivered % e->slots];
        bs_append(&e->out, &cp->bw);
        out->coded = 1;
        out->coded_display_index = cp->fs.display_index;
        out->coded_type = cp->fs.type;
        if (!e->p.bframes || cp->fs.type == 'B') {
            out->stats = cp->fs;
            out->have_picture = 1;
        } else {
            if (e->held) {
                out->stats = e->held_stats;
                out->have_picture = 1;
            }
            e->held = 1;
            e->held_stats = cp->fs;
        }
        e->delivered++;
        /* the ring has room again */
        pipe_push(e);
    }
    if (!frame && e->delivered == e->pushed && !e->cq_len) {
        if (!out->have_picture && e->held) {
            out->stats = e->held_stats;
            out->have_picture = 1;
            e->held = 0;
        }
        if (!e->held && (ret = flush_end(e, err)) < 0)
            return ret;
    }
    return 0;
}

int mpe_encode_frame(MpeEncoder *e, const MpeFrame *frame, MpeOutput *out, MpeError *err)
{
    const int n = e->submitted;
    MpeFrameStats fs;
    int ret, async = 0, have;

    memset(out, 0, sizeof(*out));
    out->coded_display_index = -1;
    bs_writer_reset(&e->out);
    if (e->flushed)
        return frame ? mpe_error(err, -EINVAL, "encoder already flushed") : 0;
    if (e->pipe) {
        if ((ret = encode_frame_pipe(e, frame, out, err)) < 0)
            return ret;
        goto written;
    }
    /* the flush: no frame comes any more, so a GPU still opening would take
     * none (it stops after its step in progress; the flush's end waits for
     * that); B frames at the end get their anchor, the last of them */
    if (!frame)
        gpu_frontend_finish(e->fe);
    if (!frame && (ret = end_pending_b(e, err)) < 0)
        return ret;
    /* the next picture in coding order, its front-end work done in an
     * earlier call: fetched here before the front end takes the next frame
     * (a backend takes calls from one thread at a time) */
    have = e->cq_len > 0;
    /* --ip-ratio auto: an I picture waits (one call, as a B picture's
     * anchor does) until the anchor after it is in and searched against it */
    if (have && frame && e->ip_auto && e->cq_len == 1 &&
        e->slot_type[slot_of(e, e->code_queue[e->cq_head])] == 'I')
        have = 0;
    memset(&fs, 0, sizeof(fs));
    if (have) {
        e->frame_index = e->code_queue[e->cq_head];
        e->cq_head = (e->cq_head + 1) % (2 * MAX_SLOTS);
        e->cq_len--;
        e->next_coded = e->cq_len ? e->code_queue[e->cq_head] : -1;
        if ((ret = fetch_picture(e, &fs, err)) < 0)
            return ret;
    }
    /* one frame of look-ahead: the front end takes frame n+1 before frame n
     * is coded, and the two overlap */
    if (frame) {
        if (e->fe_task) {
            e->fe_job = (FrontendJob){ .e = e, .frame = frame, .n = n };
            mpe_task_start(e->fe_task, frontend_job, &e->fe_job);
            async = 1;
        } else {
            double t0 = mpe_time_ms();
            if ((ret = frontend_frame(e, n, frame, gop_type(e, n, scenecut_score(e, n, frame)), 0,
                                      err)) < 0)
                return ret;
            /* the calls block this thread: whatever they take is not hidden
             * (a GPU's own time, fe_gpu_ms, is) */
            e->slot_fe_ms[slot_of(e, n)] = mpe_time_ms() - t0;
            e->slot_wait_ms[slot_of(e, n)] = e->slot_fe_ms[slot_of(e, n)];
            e->submitted++;
            enqueue_ready(e, n);
        }
    }
    if (have && (ret = code_next(e, &fs, out, err)) < 0) {
        if (async)
            mpe_task_wait(e->fe_task);
        return ret;
    }
    if (async) {
        double t0 = mpe_time_ms();
        mpe_task_wait(e->fe_task);
        if (e->fe_job.ret < 0) {
            if (err)
                *err = e->fe_job.err;
            return e->fe_job.ret;
        }
        e->slot_fe_ms[slot_of(e, n)] = e->fe_job.ms;
        e->slot_wait_ms[slot_of(e, n)] = mpe_time_ms() - t0;
        e->submitted++;
        enqueue_ready(e, n);
    }
    if (!frame) {
        /* the last I or P picture comes out after the B pictures before it */
        if (!out->have_picture && e->held && !e->cq_len) {
            out->stats = e->held_stats;
            out->recon = e->held_recon;
            out->have_picture = 1;
            e->held = 0;
        }
        if (!e->cq_len && !e->held && (ret = flush_end(e, err)) < 0)
            return ret;
    }
written:
    bs_flush(&e->out);
    if (bs_error(&e->out))
        return mpe_error(err, bs_error(&e->out), "out of memory for the bitstream");
    out->data = e->out.buf;
    out->size = e->out.pos;
    return 0;
}
