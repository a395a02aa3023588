/* mad_common.c — what every MAD implementation shares: the registry, the
 * one-call convenience, and the original's RGB to gray conversion. */
#include "iqa/mad.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

/* In "auto" order: GPU first. */
static const MadImpl *const mad_impls[] = {
#ifdef MPE_HAVE_MAD_CUDA
    &mad_cuda,
#endif
    &mad_cpu,
};

int mad_check_open(MadContext **pctx, int width, int height, const MadOptions *opt, MpeError *err)
{
    if (!pctx)
        return mpe_error(err, -EINVAL, "mad: no context pointer");
    *pctx = NULL;
    if (width < MAD_MIN_SIZE || height < MAD_MIN_SIZE)
        return mpe_error(err, -EINVAL,
                         "mad: %dx%d is too small (the original needs at least %dx%d: "
                         "its border crop leaves nothing below that)",
                         width, height, MAD_MIN_SIZE, MAD_MIN_SIZE);
    if (width > MAD_MAX_SIZE || height > MAD_MAX_SIZE)
        return mpe_error(err, -EINVAL, "mad: %dx%d is too large (at most %d per side)", width,
                         height, MAD_MAX_SIZE);
    if (opt && opt->threads < 0)
        return mpe_error(err, -EINVAL, "mad: negative thread count %d", opt->threads);
    return 0;
}

int mad_check_picture(int have_ctx, int width, const uint8_t *pic, ptrdiff_t stride,
                      const char *what, MpeError *err)
{
    if (!have_ctx)
        return mpe_error(err, -EINVAL, "mad: no context");
    if (!pic)
        return mpe_error(err, -EINVAL, "mad: no %s picture", what);
    if (stride < width && -stride < width)
        return mpe_error(err, -EINVAL, "mad: %s stride %td is narrower than the width %d", what,
                         stride, width);
    return 0;
}

int mad_check_score(int have_ctx, int width, int have_ref, const uint8_t *dst, ptrdiff_t stride,
                    const MadScore *out, MpeError *err)
{
    int ret = mad_check_picture(have_ctx, width, dst, stride, "distorted", err);
    if (ret < 0)
        return ret;
    if (!out)
        return mpe_error(err, -EINVAL, "mad: no score output");
    if (!have_ref)
        return mpe_error(err, -EINVAL, "mad: score called before set_reference");
    return 0;
}

const MadImpl *mad_impl_find(const char *name)
{
    size_t n = sizeof(mad_impls) / sizeof(mad_impls[0]);
    if (!name)
        return NULL;
    if (strcmp(name, "auto") == 0) {
        for (size_t i = 0; i < n; i++) {
            char why[256];
            if (mad_impls[i]->probe(why, sizeof(why)) == 0)
                return mad_impls[i];
        }
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        const char *full = mad_impls[i]->name; /* "mad_<device>" */
        if (strcmp(name, full) == 0 || strcmp(name, full + 4) == 0)
            return mad_impls[i];
    }
    return NULL;
}

int mad_score_pair(const MadImpl *impl, MadContext *ctx, const uint8_t *ref, const uint8_t *dst,
                   ptrdiff_t stride, MadScore *out, MpeError *err)
{
    int ret;
    if (!impl)
        return mpe_error(err, -EINVAL, "mad: no implementation given");
    ret = impl->set_reference(ctx, ref, stride, err);
    if (ret < 0)
        return ret;
    return impl->score(ctx, dst, stride, out, err);
}

void mad_rgb_to_gray(uint8_t *gray, ptrdiff_t gstride, const uint8_t *rgb, ptrdiff_t rstride,
                     int w, int h)
{
    /* MATLAB rgb2gray's weights (the inverse of its NTSC matrix, not BT.601's
     * rounded .299/.587/.114), computed in double and rounded half away from
     * zero back to uint8 (SPEC §2) */
    const double cr = 0.298936021293775, cg = 0.587043074451121, cb = 0.114020904255103;
    for (int y = 0; y < h; y++) {
        const uint8_t *s = rgb + y * rstride;
        uint8_t *d = gray + y * gstride;
        for (int x = 0; x < w; x++) {
            double v = round(cr * s[3 * x] + cg * s[3 * x + 1] + cb * s[3 * x + 2]);
            d[x] = (uint8_t)(v > 255.0 ? 255.0 : v);
        }
    }
}
