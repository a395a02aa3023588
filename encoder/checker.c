#include "checker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iqa/bliinds.h"
#include "iqa/iqa.h"
#include "iqa/mad.h"

struct MpeChecker {
    int w, h;
    unsigned metrics;
    const MadImpl *mad;
    MadContext *mad_ctx;
    const BliindsImpl *bliinds;
    BliindsContext *bliinds_ctx;
    const MpePicture *src;   /* for SSIM: the coded source samples */
    uint8_t *full;           /* w x h: expanded luma of the picture being scored */
    char names[96];
};

void mpe_luma_to_full_range(uint8_t *dst, ptrdiff_t dstride, const uint8_t *src, ptrdiff_t sstride,
                            int w, int h)
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

void mpe_checker_close(MpeChecker *c)
{
    if (!c)
        return;
    if (c->mad_ctx)
        c->mad->close(c->mad_ctx);
    if (c->bliinds_ctx)
        c->bliinds->close(c->bliinds_ctx);
    free(c->full);
    free(c);
}

static int find_impls(MpeChecker *c, const char *backend, MpeError *err)
{
    char why[256] = "";
    const char *want = !strcmp(backend, "auto") ? "auto" : backend;

    if (c->metrics & MPE_IQA_MAD) {
        c->mad = mad_impl_find(want);
        if (!c->mad)
            return mpe_error(err, -ENODEV, "MAD: no %s implementation in this build", backend);
        if (c->mad->probe(why, sizeof(why)) < 0)
            return mpe_error(err, -ENODEV, "MAD on %s: %s", backend, why);
    }
    if (c->metrics & MPE_IQA_BLIINDS) {
        c->bliinds = bliinds_impl_find(want);
        if (!c->bliinds)
            return mpe_error(err, -ENODEV, "BLIINDS-II: no %s implementation in this build", backend);
        if (c->bliinds->probe(why, sizeof(why)) < 0)
            return mpe_error(err, -ENODEV, "BLIINDS-II on %s: %s", backend, why);
    }
    return 0;
}

int mpe_checker_open(MpeChecker **out, int w, int h, unsigned metrics, const char *backend,
                     MpePool *pool, const MpeLog *log, MpeError *err)
{
    MpeChecker *c;
    int ret;

    *out = NULL;
    if ((metrics & MPE_IQA_MAD) && (w < MAD_MIN_SIZE || h < MAD_MIN_SIZE))
        return mpe_error(err, -EINVAL, "MAD needs pictures of at least %dx%d (this one is %dx%d)",
                         MAD_MIN_SIZE, MAD_MIN_SIZE, w, h);
    if (!(c = calloc(1, sizeof(*c))))
        return mpe_error(err, -ENOMEM, "out of memory for the quality checker");
    c->w = w;
    c->h = h;
    c->metrics = metrics & (MPE_IQA_SSIM | MPE_IQA_MAD | MPE_IQA_BLIINDS);
    if ((ret = find_impls(c, backend, err)) < 0)
        goto fail;
    if (c->metrics & (MPE_IQA_MAD | MPE_IQA_BLIINDS)) {
        if (!(c->full = malloc((size_t)w * h))) {
            ret = mpe_error(err, -ENOMEM, "out of memory for the quality checker");
            goto fail;
        }
    }
    if (c->mad) {
        MadOptions mo = { .pool = pool };
        if ((ret = c->mad->open(&c->mad_ctx, w, h, &mo, err)) < 0)
            goto fail;
    }
    if (c->bliinds) {
        BliindsOptions bo = { .pool = pool };
        if ((ret = c->bliinds->open(&c->bliinds_ctx, w, h, &bo, err)) < 0)
            goto fail;
    }
    snprintf(c->names, sizeof(c->names), "%s%s%s%s%s", c->metrics & MPE_IQA_SSIM ? "ssim" : "",
             (c->metrics & MPE_IQA_SSIM) && c->mad ? ", " : "", c->mad ? c->mad->name : "",
             c->bliinds && (c->mad || (c->metrics & MPE_IQA_SSIM)) ? ", " : "",
             c->bliinds ? c->bliinds->name : "");
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

int mpe_checker_set_source(MpeChecker *c, const MpePicture *src, MpeError *err)
{
    c->src = src;
    if (!c->mad)
        return 0;
    mpe_luma_to_full_range(c->full, c->w, src->plane[0], src->stride[0], c->w, c->h);
    return c->mad->set_reference(c->mad_ctx, c->full, c->w, err);
}

int mpe_checker_score(MpeChecker *c, const MpePicture *recon, MpeFrameStats *fs, MpeError *err)
{
    int ret;

    if (c->metrics & MPE_IQA_SSIM) {
        fs->ssim_y = iqa_ssim_plane(c->src->plane[0], c->src->stride[0], recon->plane[0],
                                    recon->stride[0], c->w, c->h);
        fs->metrics |= MPE_IQA_SSIM;
    }
    if (c->mad || c->bliinds)
        mpe_luma_to_full_range(c->full, c->w, recon->plane[0], recon->stride[0], c->w, c->h);
    if (c->mad) {
        MadScore ms;
        if ((ret = c->mad->score(c->mad_ctx, c->full, c->w, &ms, err)) < 0)
            return ret;
        fs->mad = ms.mad;
        fs->mad_detect = ms.d_detect;
        fs->mad_appear = ms.d_appear;
        fs->metrics |= MPE_IQA_MAD;
    }
    if (c->bliinds) {
        BliindsScore bs;
        if ((ret = c->bliinds->score(c->bliinds_ctx, c->full, c->w, &bs, err)) < 0)
            return ret;
        fs->bliinds = bs.score;
        fs->metrics |= MPE_IQA_BLIINDS;
    }
    return 0;
}
