#include "checker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iqa/metric.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

struct MpeChecker {
    int w, h;
    int n;                          /* metrics open */
    IqaInstance metric[IQA_MAX_FAMILIES];
    unsigned display;               /* some metric wants display range (IQA_DISPLAY_RANGE) */
    unsigned coded;                 /* some metric wants the coded samples */
    unsigned on_device;             /* some metric runs on a CUDA device */
    IqaPicture src, src_full;       /* the coded source; its expanded luma */
    uint8_t *full_src, *full_pic;   /* w x h: expanded luma of the source, of the picture scored */
    uint8_t *held_src, *held_pic;   /* w x h: coded luma held by mpe_checker_hold */
    int locked;                     /* full_src and full_pic are page-locked (iqa_host_register) */
    MpePool *pool;                  /* the expansions and copies run on it, NULL: inline */
    char names[256];
};

void mpe_luma_to_full_range_c(uint8_t *dst, ptrdiff_t dstride, const uint8_t *src,
                              ptrdiff_t sstride, int w, int h)
{
    uint8_t lut[256];
    for (int v = 0; v < 256; v++) {
        int f = ((v - 16) * 255 * 2 + 219) / (2 * 219);   /* round half up, v >= 16 */
        if (v < 16)
            f = 0;
        lut[v] = (uint8_t)(f > 255 ? 255 : f);
    }
    for (int y = 0; y < h; y++) {
        const uint8_t *s = src + (ptrdiff_t)y * sstride;
        uint8_t *d = dst + (ptrdiff_t)y * dstride;
        for (int x = 0; x < w; x++)
            d[x] = lut[s[x]];
    }
}

#if defined(__SSE2__)
/* One sample by the vector path's arithmetic (below), for a row's tail. */
static inline uint8_t full_range_of(uint8_t v)
{
    const unsigned x = v > 16 ? v - 16u : 0u, f = x + ((x * 10772u + 32768u) >> 16);
    return (uint8_t)(f > 255 ? 255 : f);
}
#endif

void mpe_luma_to_full_range(uint8_t *dst, ptrdiff_t dstride, const uint8_t *src, ptrdiff_t sstride,
                            int w, int h)
{
#if defined(__SSE2__)
    /* The table's (x * 510 + 219) / 438 for x = v - 16 (0 below 16, by the
     * saturating subtraction) is x + (x * 10772 + 32768) >> 16 for every x
     * of 0..239 (test_checker checks all 256 values), in 16-bit lanes: the
     * product's high half, plus one where its low half carries the 32768;
     * the pack clamps at 255.  2.3 ms for a 2048^2 picture with the table
     * on one thread; this is what the rate control of a MAD or BLIINDS-II
     * target pays at every coding it scores. */
    const __m128i k16 = _mm_set1_epi8(16), zero = _mm_setzero_si128(), a = _mm_set1_epi16(10772);
    const int body = w & ~15;
    for (int y = 0; y < h; y++) {
        const uint8_t *s = src + (ptrdiff_t)y * sstride;
        uint8_t *d = dst + (ptrdiff_t)y * dstride;
        for (int x = 0; x < body; x += 16) {
            const __m128i v = _mm_subs_epu8(_mm_loadu_si128((const __m128i *)(s + x)), k16);
            __m128i lo = _mm_unpacklo_epi8(v, zero), hi = _mm_unpackhi_epi8(v, zero);
            lo = _mm_add_epi16(lo, _mm_add_epi16(_mm_mulhi_epu16(lo, a),
                                                 _mm_srli_epi16(_mm_mullo_epi16(lo, a), 15)));
            hi = _mm_add_epi16(hi, _mm_add_epi16(_mm_mulhi_epu16(hi, a),
                                                 _mm_srli_epi16(_mm_mullo_epi16(hi, a), 15)));
            _mm_storeu_si128((__m128i *)(d + x), _mm_packus_epi16(lo, hi));
        }
        for (int x = body; x < w; x++)
            d[x] = full_range_of(s[x]);
    }
#else
    mpe_luma_to_full_range_c(dst, dstride, src, sstride, w, h);
#endif
}

/* The expansion of a whole picture's luma, in bands of rows on the pool:
 * the rate control's target metric takes one at every coding it scores. */
typedef struct ExpandJob {
    uint8_t *dst;
    const MpePicture *pic;
    int w, h, bands;
} ExpandJob;

static void expand_band(void *arg, int band, int worker)
{
    const ExpandJob *j = arg;
    const int y0 = (int)((int64_t)j->h * band / j->bands);
    const int y1 = (int)((int64_t)j->h * (band + 1) / j->bands);
    (void)worker;
    mpe_luma_to_full_range(j->dst + (size_t)y0 * j->w, j->w,
                           j->pic->plane[0] + (ptrdiff_t)y0 * j->pic->stride[0], j->pic->stride[0],
                           j->w, y1 - y0);
}

/* Bands of at least 64 rows on the pool: a few per thread, each worth a
 * thread's start; one without a pool. */
static int band_count(const MpeChecker *c)
{
    return c->pool ? MPE_MAX(1, MPE_MIN(4 * mpe_pool_threads(c->pool), c->h / 64)) : 1;
}

static void run_bands(const MpeChecker *c, int bands, MpePoolFn fn, void *job)
{
    if (bands > 1)
        mpe_pool_run(c->pool, bands, fn, job);
    else
        fn(job, 0, 0);
}

static void expand_luma(const MpeChecker *c, uint8_t *dst, const MpePicture *pic)
{
    ExpandJob j = { dst, pic, c->w, c->h, band_count(c) };
    run_bands(c, j.bands, expand_band, &j);
}

void mpe_checker_close(MpeChecker *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n; i++)
        iqa_metric_close(&c->metric[i]);
    if (c->locked) {
        iqa_host_unregister(c->full_src);
        iqa_host_unregister(c->full_pic);
    }
    free(c->full_src);
    free(c->full_pic);
    free(c->held_src);
    free(c->held_pic);
    free(c);
}

/* The coded picture's planes as the registry sees them. */
static void picture_planes(IqaPicture *p, const MpePicture *pic, int w, int h)
{
    memset(p, 0, sizeof(*p));
    for (int c = 0; c < 3; c++) {
        p->plane[c] = pic->plane[c];
        p->stride[c] = pic->stride[c];
        p->width[c] = c ? (w + 1) / 2 : w;
        p->height[c] = c ? (h + 1) / 2 : h;
    }
    p->nplanes = 3;
}

int mpe_checker_open(MpeChecker **out, const MpeCheckerConfig *cfg, const MpeLog *log,
                     MpeError *err)
{
    const IqaConfig icfg = { .width = cfg->width, .height = cfg->height, .threads = cfg->threads,
                             .pool = cfg->pool, .device = cfg->device };
    MpeChecker *c;
    size_t len = 0;
    int ret;

    *out = NULL;
    if (!(c = calloc(1, sizeof(*c))))
        return mpe_error(err, -ENOMEM, "out of memory for the quality checker");
    c->w = cfg->width;
    c->h = cfg->height;
    c->pool = cfg->pool;
    for (int f = 0, n = iqa_family_count(); f < n; f++) {
        const IqaMetric *m = iqa_family_metric(f);
        if (!(cfg->metrics & (1u << f)) || (m->flags & IQA_FROM_SSE))
            continue;
        /* --iqa-backend names where MAD and BLIINDS-II run; a metric with
         * no row for it at all (PSNR, SSIM: cpu only) runs where it can.  A
         * twin of another checker opens that one's rows by name, with no
         * fallback: a picture scored on either gets the same values. */
        const char *backend = iqa_family_has_backend(m->family, cfg->backend) ? cfg->backend : "auto";
        if (cfg->like)
            for (int i = 0; i < cfg->like->n; i++)
                if (cfg->like->metric[i].family == f)
                    backend = cfg->like->metric[i].metric->name;
        if ((ret = iqa_metric_open(&c->metric[c->n], m->family, backend, &icfg, log, err)) < 0)
            goto fail;
        m = c->metric[c->n++].metric;
        c->display |= m->flags & IQA_DISPLAY_RANGE;
        c->coded |= !(m->flags & IQA_DISPLAY_RANGE);
        c->on_device |= m->flags & IQA_CUDA;
        len += (size_t)snprintf(c->names + len, sizeof(c->names) - len, "%s%s", len ? ", " : "",
                                m->name);
        if (len >= sizeof(c->names))
            len = sizeof(c->names) - 1;
    }
    if ((c->display && (!(c->full_src = malloc((size_t)c->w * c->h)) ||
                        !(c->full_pic = malloc((size_t)c->w * c->h)))) ||
        (cfg->hold && c->coded && (!(c->held_src = malloc((size_t)c->w * c->h)) ||
                                   !(c->held_pic = malloc((size_t)c->w * c->h))))) {
        ret = mpe_error(err, -ENOMEM, "out of memory for the quality checker");
        goto fail;
    }
    /* the device metrics score display-range luma: locked, it goes up by
     * DMA with no copy through their staging memory (2048^2 on an H100:
     * each MAD or BLIINDS-II upload 0.4-0.7 ms -> 0.09 ms) */
    if (c->on_device && c->display) {
        const size_t n = (size_t)c->w * c->h;
        if (iqa_host_register(c->full_src, n)) {
            if (iqa_host_register(c->full_pic, n))
                c->locked = 1;
            else
                iqa_host_unregister(c->full_src);
        }
    }
    if (!cfg->like)
        mpe_log(log, MPE_LOG_INFO, "quality checker: %s", c->names);
    *out = c;
    return 0;
fail:
    mpe_checker_close(c);
    return ret;
}

const char *mpe_checker_describe(const MpeChecker *c)
{
    return c ? c->names : "";
}

int mpe_checker_on_device(const MpeChecker *c)
{
    return c && c->on_device;
}

int mpe_checker_set_source(MpeChecker *c, const MpePicture *src, MpeError *err)
{
    int ret;

    picture_planes(&c->src, src, c->w, c->h);
    if (c->display) {
        expand_luma(c, c->full_src, src);
        iqa_picture_gray(&c->src_full, c->full_src, c->w, c->w, c->h);
    }
    for (int i = 0; i < c->n; i++) {
        const IqaMetric *m = c->metric[i].metric;
        if (!m->set_reference)
            continue;
        ret = m->set_reference(c->metric[i].ctx,
                               (m->flags & IQA_DISPLAY_RANGE) ? &c->src_full : &c->src, err);
        if (ret < 0)
            return ret;
    }
    return 0;
}

int mpe_checker_score(MpeChecker *c, const MpePicture *recon, MpeFrameStats *fs, MpeError *err)
{
    IqaPicture coded, full;
    int ret;

    picture_planes(&coded, recon, c->w, c->h);
    if (c->display) {
        expand_luma(c, c->full_pic, recon);
        iqa_picture_gray(&full, c->full_pic, c->w, c->w, c->h);
    }
    for (int i = 0; i < c->n; i++) {
        const IqaInstance *in = &c->metric[i];
        ret = in->metric->score(in->ctx, (in->metric->flags & IQA_DISPLAY_RANGE) ? &full : &coded,
                                &fs->value[in->value_base], err);
        if (ret < 0)
            return ret;
        fs->metrics |= 1u << in->family;
    }
    return 0;
}

/* mpe_checker_hold's copies, a band of rows each: luma expanded to full
 * range and, for metrics of the coded samples, copied as it is. */
typedef struct HoldJob {
    const MpeChecker *c;
    const MpePicture *src, *recon;
    int bands;
} HoldJob;

static void hold_band(void *arg, int band, int worker)
{
    const HoldJob *j = arg;
    const MpeChecker *c = j->c;
    const int y0 = (int)((int64_t)c->h * band / j->bands);
    const int rows = (int)((int64_t)c->h * (band + 1) / j->bands) - y0;
    (void)worker;
    for (int p = 0; p < 2; p++) {
        const MpePicture *pic = p ? j->recon : j->src;
        const uint8_t *in = pic->plane[0] + (ptrdiff_t)y0 * pic->stride[0];
        const size_t at = (size_t)y0 * c->w;
        if (c->display)
            mpe_luma_to_full_range((p ? c->full_pic : c->full_src) + at, c->w, in, pic->stride[0],
                                   c->w, rows);
        if (c->coded) {
            uint8_t *out = (p ? c->held_pic : c->held_src) + at;
            for (int y = 0; y < rows; y++)
                memcpy(out + (size_t)y * c->w, in + (ptrdiff_t)y * pic->stride[0], (size_t)c->w);
        }
    }
}

void mpe_checker_hold(MpeChecker *c, const MpePicture *src, const MpePicture *recon)
{
    HoldJob j = { .c = c, .src = src, .recon = recon, .bands = band_count(c) };
    run_bands(c, j.bands, hold_band, &j);
}

int mpe_checker_score_held(MpeChecker *c, MpeFrameStats *fs, MpeError *err)
{
    IqaPicture src_coded, src_full, pic_coded, pic_full;
    int ret;

    iqa_picture_gray(&src_coded, c->held_src, c->w, c->w, c->h);
    iqa_picture_gray(&pic_coded, c->held_pic, c->w, c->w, c->h);
    iqa_picture_gray(&src_full, c->full_src, c->w, c->w, c->h);
    iqa_picture_gray(&pic_full, c->full_pic, c->w, c->w, c->h);
    for (int i = 0; i < c->n; i++) {
        const IqaInstance *in = &c->metric[i];
        const int display = in->metric->flags & IQA_DISPLAY_RANGE;
        if (in->metric->set_reference &&
            (ret = in->metric->set_reference(in->ctx, display ? &src_full : &src_coded, err)) < 0)
            return ret;
    }
    /* every device metric queued before the first is waited for, so that
     * they run beside each other and beside the C ones */
    for (int i = 0; i < c->n; i++) {
        const IqaInstance *in = &c->metric[i];
        const IqaPicture *pic = (in->metric->flags & IQA_DISPLAY_RANGE) ? &pic_full : &pic_coded;
        ret = in->metric->submit ? in->metric->submit(in->ctx, pic, err)
                                 : in->metric->score(in->ctx, pic, &fs->value[in->value_base], err);
        if (ret < 0)
            goto fail;
    }
    for (int i = 0; i < c->n; i++) {
        const IqaInstance *in = &c->metric[i];
        if (in->metric->submit &&
            (ret = in->metric->collect(in->ctx, &fs->value[in->value_base], err)) < 0)
            goto fail;
        fs->metrics |= 1u << in->family;
    }
    return 0;
fail:
    /* no score left pending: the contexts stay usable */
    for (int i = 0; i < c->n; i++) {
        const IqaInstance *in = &c->metric[i];
        double unused[IQA_MAX_VALUES];
        MpeError ignored;
        if (in->metric->submit)
            in->metric->collect(in->ctx, unused, &ignored);
    }
    return ret;
}

void mpe_stats_copy_values(MpeFrameStats *to, const MpeFrameStats *from)
{
    for (int id = 0, n = iqa_value_count(); id < n; id++)
        if (from->metrics & (1u << iqa_value_family(id)))
            to->value[id] = from->value[id];
    to->metrics |= from->metrics;
}
