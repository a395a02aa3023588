/* encoder.c — the picture loop: front end, picture/GOP structure, headers,
 * slices, statistics. */
#include "encoder.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bitstream/mpeg12.h"
#include "encoder/dct.h"
#include "encoder/quant.h"
#include "encoder/slice.h"
#include "gpu/frontend.h"
#include "iqa/iqa.h"

#define FRONTEND_SLOTS 2

struct MpeEncoder {
    MpeParam p;
    MpeLog log;
    int mpeg2;
    int f_code;
    int rate_num, rate_den;       /* as signalled in the stream */
    BsSequence seq;
    const GpuBackend *fe;
    GpuContext *fe_ctx;
    MpeDctDsp dsp;
    GpuSad16Fn sad16;
    MpePicture orig;
    MpePicture recon[2];
    int cur_recon;                /* index of the latest reference reconstruction */
    GpuMotion *mv;
    BsWriter out;
    int submitted;                /* frames handed to the front end */
    int frame_index;              /* frames coded; frame_index < submitted: one is waiting */
    int gop_start;                /* display index of the current GOP's first picture */
    int flushed;
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
    if (e->fe_ctx)
        e->fe->close(e->fe_ctx);
    mpe_picture_free(&e->orig);
    mpe_picture_free(&e->recon[0]);
    mpe_picture_free(&e->recon[1]);
    free(e->mv);
    bs_writer_free(&e->out);
    free(e);
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
        p->search_range > GPU_MAX_SEARCH_RANGE)
        return mpe_error(err, -EINVAL, "invalid encoder parameters");
    if (!(e = calloc(1, sizeof(*e))))
        return mpe_error(err, -ENOMEM, "out of memory");
    e->p = *p;
    if (log)
        e->log = *log;
    e->mpeg2 = p->format != MPE_FORMAT_MPEG1;
    e->f_code = f_code_for_range(p->search_range);
    mpe_dct_dsp_init(&e->dsp);
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
    GpuConfig cfg = { .width = p->width, .height = p->height, .slots = FRONTEND_SLOTS,
                      .device = p->device, .log = &e->log };
    if ((ret = e->fe->open(&e->fe_ctx, &cfg, err)) < 0)
        goto fail;
    if (mpe_picture_alloc(&e->orig, p->width, p->height) < 0 ||
        mpe_picture_alloc(&e->recon[0], p->width, p->height) < 0 ||
        mpe_picture_alloc(&e->recon[1], p->width, p->height) < 0 ||
        bs_writer_init(&e->out, 1 << 16) < 0 ||
        !(e->mv = calloc((size_t)e->orig.mb_width * e->orig.mb_height, sizeof(*e->mv)))) {
        ret = mpe_error(err, -ENOMEM, "out of memory for %dx%d pictures", p->width, p->height);
        goto fail;
    }
    *out = e;
    return 0;
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

static void write_gop_header(MpeEncoder *e)
{
    /* time code of the GOP's first picture at the nominal integer rate */
    const int ifps = (e->rate_num + e->rate_den / 2) / e->rate_den;
    const int n = e->frame_index, secs = n / ifps;
    bs_write_gop_header(&e->out, (secs / 3600) % 24, (secs / 60) % 60, secs % 60, n % ifps, 1);
}

/* Slices: one per macroblock row.  MPEG-1 slice start codes stop at row 175
 * (0xAF), so in a taller MPEG-1 picture the last slice runs to the bottom. */
static void code_slices(MpeEncoder *e, const MpePictureCtx *pc, MpeFrameStats *fs)
{
    const int mbh = e->orig.mb_height;
    for (int row = 0; row < mbh;) {
        int end = row + 1;
        if (!e->mpeg2 && row == 174)
            end = mbh;
        MpeSliceStats ss;
        mpe_code_slice(pc, row, end, &e->out, &ss);
        fs->mb_intra += ss.intra;
        fs->mb_inter += ss.inter;
        fs->mb_skipped += ss.skipped;
        row = end;
    }
}

static void measure(MpeEncoder *e, const MpePicture *recon, MpeFrameStats *fs)
{
    for (int c = 0; c < 3; c++) {
        int w = c ? (e->p.width + 1) / 2 : e->p.width;
        int h = c ? (e->p.height + 1) / 2 : e->p.height;
        fs->sse[c] = iqa_sse_plane(e->orig.plane[c], e->orig.stride[c], recon->plane[c],
                                   recon->stride[c], w, h);
        fs->psnr[c] = iqa_psnr_from_mse((double)fs->sse[c] / ((double)w * h));
    }
}

static int is_intra(const MpeEncoder *e, int index)
{
    return index % e->p.gop == 0;
}

/* Hand frame number e->submitted to the front end: upload, convert, and for a
 * P picture search it against the previous ORIGINAL picture.  On a GPU this
 * runs while the CPU codes the frame before it. */
static int submit(MpeEncoder *e, const MpeFrame *frame, MpeError *err)
{
    const int n = e->submitted, slot = n % FRONTEND_SLOTS;
    const int prev_slot = (n + FRONTEND_SLOTS - 1) % FRONTEND_SLOTS;
    int ret;

    if ((ret = e->fe->submit_frame(e->fe_ctx, slot, frame, err)) < 0)
        return ret;
    if (!is_intra(e, n) &&
        (ret = e->fe->motion_search(e->fe_ctx, slot, prev_slot, e->p.search_range, err)) < 0)
        return ret;
    e->submitted++;
    return 0;
}

/* Code frame number e->frame_index, which the front end has (or is) working on. */
static int code_picture(MpeEncoder *e, MpeOutput *out, MpeError *err)
{
    const int slot = e->frame_index % FRONTEND_SLOTS;
    const int intra = is_intra(e, e->frame_index);
    int ret;

    if ((ret = e->fe->wait(e->fe_ctx, slot, err)) < 0 ||
        (ret = e->fe->download(e->fe_ctx, slot, &e->orig, intra ? NULL : e->mv, err)) < 0)
        return ret;
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
        .orig = &e->orig,
        .ref = &e->recon[e->cur_recon],
        .recon = recon,
        .mv = e->mv,
        .dsp = &e->dsp,
        .sad16 = e->sad16,
        .intra_matrix = mpe_default_intra_matrix,
        .inter_matrix = mpe_default_inter_matrix,
    };
    MpeFrameStats *fs = &out->stats;
    fs->display_index = e->frame_index;
    fs->type = intra ? 'I' : 'P';
    fs->qscale = e->p.qscale;
    code_slices(e, &pc, fs);
    measure(e, recon, fs);
    e->cur_recon ^= 1;
    e->frame_index++;
    out->have_picture = 1;
    out->recon = recon;
    return 0;
}

int mpe_encode_frame(MpeEncoder *e, const MpeFrame *frame, MpeOutput *out, MpeError *err)
{
    int ret;

    memset(out, 0, sizeof(*out));
    bs_writer_reset(&e->out);
    if (e->flushed)
        return frame ? mpe_error(err, -EINVAL, "encoder already flushed") : 0;
    /* one frame of look-ahead: frame n+1 goes to the front end before frame
     * n is coded, so the two overlap when the front end is asynchronous */
    if (frame && (ret = submit(e, frame, err)) < 0)
        return ret;
    if (e->frame_index < e->submitted - (frame ? 1 : 0) &&
        (ret = code_picture(e, out, err)) < 0)
        return ret;
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
