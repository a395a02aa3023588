/* frontend_cpu.c — the C reference front end, and backend "cpu".
 * Definitions of the arithmetic are in frontend.h; gpu_convert_rgb_c and
 * gpu_motion_search_c are the plain references that every backend, and the
 * fast kernels the cpu backend runs (frontend_cpu_fast.c), must match bit
 * for bit. */
#include "frontend.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/threads.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* 16-bit fixed-point BT.601 studio-range coefficients (see frontend.h):
 * round(65536 * {219,224}/255 * Kx) with each chroma row adjusted to sum to
 * exactly zero, so grey stays at 128. */
enum {
    Y_R = 16829, Y_G = 33039, Y_B = 6416,
    CB_R = -9714, CB_G = -19070, CB_B = 28784,
    CR_R = 28784, CR_G = -24103, CR_B = -4681,
};

/* Chroma lowpass taps; the 2-D weights sum to 64. */
static const int chroma_taps[4] = { 1, 3, 3, 1 };

static inline int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

void gpu_convert_rgb_c(MpePicture *pic, const uint8_t *rgb, ptrdiff_t rgb_stride)
{
    const int w = pic->width, h = pic->height;
    const int cw = pic->plane_w[1], ch = pic->plane_h[1];
    /* horizontally filtered full-precision Cb, Cr of the 4 source rows under
     * one chroma row; plane_w[1] <= 2048 because widths stop at 4095 */
    int32_t hcb[4][2048], hcr[4][2048];

    for (int y = 0; y < pic->plane_h[0]; y++) {
        const uint8_t *src = rgb + (ptrdiff_t)clampi(y, 0, h - 1) * rgb_stride;
        uint8_t *dst = pic->plane[0] + (ptrdiff_t)y * pic->stride[0];
        for (int x = 0; x < pic->plane_w[0]; x++) {
            const uint8_t *p = src + 3 * clampi(x, 0, w - 1);
            dst[x] = (uint8_t)((Y_R * p[0] + Y_G * p[1] + Y_B * p[2] + (16 << 16) + 32768) >> 16);
        }
    }

    for (int cy = 0; cy < ch; cy++) {
        for (int j = 0; j < 4; j++) {
            const uint8_t *src = rgb + (ptrdiff_t)clampi(2 * cy - 1 + j, 0, h - 1) * rgb_stride;
            for (int cx = 0; cx < cw; cx++) {
                int32_t scb = 0, scr = 0;
                for (int i = 0; i < 4; i++) {
                    const uint8_t *p = src + 3 * clampi(2 * cx - 1 + i, 0, w - 1);
                    scb += chroma_taps[i] * (CB_R * p[0] + CB_G * p[1] + CB_B * p[2]);
                    scr += chroma_taps[i] * (CR_R * p[0] + CR_G * p[1] + CR_B * p[2]);
                }
                hcb[j][cx] = scb;
                hcr[j][cx] = scr;
            }
        }
        uint8_t *dcb = pic->plane[1] + (ptrdiff_t)cy * pic->stride[1];
        uint8_t *dcr = pic->plane[2] + (ptrdiff_t)cy * pic->stride[2];
        for (int cx = 0; cx < cw; cx++) {
            /* |sum| <= 64 * 28784 * 255 < 2^29, so the offset keeps it positive
             * in int32 and the shift is a true round-to-nearest */
            int32_t scb = 0, scr = 0;
            for (int j = 0; j < 4; j++) {
                scb += chroma_taps[j] * hcb[j][cx];
                scr += chroma_taps[j] * hcr[j][cx];
            }
            dcb[cx] = (uint8_t)clampi((scb + (128 << 22) + (1 << 21)) >> 22, 16, 240);
            dcr[cx] = (uint8_t)clampi((scr + (128 << 22) + (1 << 21)) >> 22, 16, 240);
        }
    }
}

uint32_t gpu_sad16_c(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs)
{
    uint32_t sad = 0;
    for (int y = 0; y < 16; y++, a += as, b += bs)
        for (int x = 0; x < 16; x++)
            sad += (uint32_t)abs(a[x] - b[x]);
    return sad;
}

#if defined(__SSE2__)
static uint32_t sad16_sse2(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs)
{
    __m128i acc = _mm_setzero_si128();
    for (int y = 0; y < 16; y++, a += as, b += bs) {
        __m128i va = _mm_loadu_si128((const __m128i *)a);
        __m128i vb = _mm_loadu_si128((const __m128i *)b);
        acc = _mm_add_epi64(acc, _mm_sad_epu8(va, vb));
    }
    return (uint32_t)(_mm_cvtsi128_si32(acc) + _mm_cvtsi128_si32(_mm_srli_si128(acc, 8)));
}
#endif

GpuSad16Fn gpu_sad16_best(void)
{
#if defined(__SSE2__)
    return sad16_sse2;   /* SSE2 is part of the x86-64 baseline: no runtime check */
#else
    return gpu_sad16_c;
#endif
}

void gpu_motion_search_c(GpuMotion *mv, const MpePicture *cur, const MpePicture *ref,
                         int range, GpuSad16Fn sad16)
{
    const ptrdiff_t stride = cur->stride[0], rstride = ref->stride[0];
    const int pw = cur->plane_w[0], ph = cur->plane_h[0];

    for (int mby = 0; mby < cur->mb_height; mby++) {
        for (int mbx = 0; mbx < cur->mb_width; mbx++) {
            const int x0 = mbx * 16, y0 = mby * 16;
            const uint8_t *blk = cur->plane[0] + y0 * stride + x0;
            const uint8_t *rblk = ref->plane[0] + y0 * rstride + x0;
            const int dx_lo = -MPE_MIN(range, x0), dx_hi = MPE_MIN(range, pw - 16 - x0);
            const int dy_lo = -MPE_MIN(range, y0), dy_hi = MPE_MIN(range, ph - 16 - y0);
            uint32_t sad0 = sad16(blk, stride, rblk, rstride);
            uint32_t bsad = sad0;
            int bdx = 0, bdy = 0;

            for (int dy = dy_lo; dy <= dy_hi; dy++) {
                for (int dx = dx_lo; dx <= dx_hi; dx++) {
                    uint32_t sad = sad16(blk, stride, rblk + dy * rstride + dx, rstride);
                    if (gpu_mv_better(sad, dx, dy, bsad, bdx, bdy)) {
                        bsad = sad;
                        bdx = dx;
                        bdy = dy;
                    }
                }
            }
            GpuMotion *m = &mv[mby * cur->mb_width + mbx];
            m->dx = (int16_t)bdx;
            m->dy = (int16_t)bdy;
            m->sad = bsad;
            m->sad0 = sad0;
        }
    }
}

/* ---- backend "cpu": synchronous (wait() has nothing to wait for), with
 * the fast kernels of frontend_cpu_fast.c spread over a pool by macroblock
 * rows; every row's result is independent of the others', so the output is
 * the same for every thread count. ---- */

struct GpuContext {
    int slots;
    MpePicture *pic;
    GpuBlockSums *sums;
    GpuMotion **mv;
    int *has_mv;
    MpePool *pool;       /* GpuConfig.pool or own_pool */
    MpePool *own_pool;
    const GpuCpuKernels *k;
    GpuFailHook fail;
};

/* One pool job over a picture's macroblock rows. */
typedef struct RowJob {
    const GpuCpuKernels *k;
    MpePicture *pic;
    const uint8_t *rgb;
    ptrdiff_t rgb_stride;
    GpuBlockSums *sums;
    GpuMotion *mv;
    const MpePicture *ref;
    const GpuBlockSums *ref_sums;
    const GpuMotion *hint;
    int range;
} RowJob;

static void convert_job(void *arg, int row, int worker)
{
    const RowJob *j = arg;
    (void)worker;
    j->k->convert_rgb_rows(j->pic, j->rgb, j->rgb_stride, row, row + 1);
}

static void sums_job(void *arg, int row, int worker)
{
    const RowJob *j = arg;
    (void)worker;
    j->k->block_sums_rows(j->sums, j->pic, row, row + 1);
}

static void search_job(void *arg, int row, int worker)
{
    const RowJob *j = arg;
    (void)worker;
    j->k->motion_search_rows(j->mv, j->pic, j->sums, j->ref, j->ref_sums, j->range, j->hint, row,
                             row + 1);
}

static int cpu_probe(int for_auto, char *why, size_t why_size)
{
    (void)for_auto;
    if (why && why_size)
        why[0] = '\0';
    return gpu_fail_probe("cpu", why, why_size);
}

static void cpu_close(GpuContext *ctx)
{
    if (!ctx)
        return;
    mpe_pool_close(ctx->own_pool);
    for (int i = 0; i < ctx->slots; i++) {
        if (ctx->pic)
            mpe_picture_free(&ctx->pic[i]);
        if (ctx->sums)
            gpu_block_sums_free(&ctx->sums[i]);
        if (ctx->mv)
            free(ctx->mv[i]);
    }
    free(ctx->pic);
    free(ctx->sums);
    free(ctx->mv);
    free(ctx->has_mv);
    free(ctx);
}

static int cpu_open(GpuContext **out, const GpuConfig *cfg, MpeError *err)
{
    GpuContext *ctx;
    int n = cfg->slots, threads, ret;

    *out = NULL;
    if (n < 2)
        return mpe_error(err, -EINVAL, "front end: need at least 2 frame slots, got %d", n);
    if (!(ctx = calloc(1, sizeof(*ctx))))
        goto nomem;
    ctx->slots = n;
    ctx->k = gpu_cpu_kernels(0);
    /* nothing to build here, but the test hook can pretend there was */
    gpu_fail_init(&ctx->fail, "cpu");
    if ((ret = gpu_fail_open(&ctx->fail, GPU_FAIL_BUILD, err)) < 0)
        goto fail;
    ctx->pic = calloc((size_t)n, sizeof(*ctx->pic));
    ctx->sums = calloc((size_t)n, sizeof(*ctx->sums));
    ctx->mv = calloc((size_t)n, sizeof(*ctx->mv));
    ctx->has_mv = calloc((size_t)n, sizeof(*ctx->has_mv));
    if (!ctx->pic || !ctx->sums || !ctx->mv || !ctx->has_mv)
        goto nomem;
    for (int i = 0; i < n; i++) {
        /* the hook fails after the first slot, so the partial cleanup runs */
        if (i == 1 && (ret = gpu_fail_open(&ctx->fail, GPU_FAIL_ALLOC, err)) < 0)
            goto fail;
        if (mpe_picture_alloc(&ctx->pic[i], cfg->width, cfg->height) < 0 ||
            gpu_block_sums_alloc(&ctx->sums[i], &ctx->pic[i]) < 0)
            goto nomem;
        ctx->mv[i] = calloc((size_t)ctx->pic[i].mb_width * ctx->pic[i].mb_height, sizeof(GpuMotion));
        if (!ctx->mv[i])
            goto nomem;
    }
    /* the pool splits macroblock rows: more threads than rows would idle */
    if (cfg->pool) {
        ctx->pool = cfg->pool;
        threads = MPE_MIN(mpe_pool_threads(ctx->pool), ctx->pic[0].mb_height);
    } else {
        threads = cfg->threads > 0 ? cfg->threads : mpe_cpu_count();
        threads = MPE_MIN(threads, ctx->pic[0].mb_height);
        if ((ret = mpe_pool_open(&ctx->own_pool, threads, err)) < 0)
            goto fail;
        ctx->pool = ctx->own_pool;
    }
    mpe_log(cfg->log, MPE_LOG_INFO, "front end cpu: %s kernels on %d threads", ctx->k->name, threads);
    *out = ctx;
    return 0;
nomem:
    ret = mpe_error(err, -ENOMEM, "front end: out of memory for %dx%d frames", cfg->width,
                    cfg->height);
fail:
    cpu_close(ctx);
    return ret;
}

static int cpu_submit_frame(GpuContext *ctx, int slot, const MpeFrame *frame, MpeError *err)
{
    MpePicture *pic;
    int ret;

    if ((ret = gpu_check_slot(ctx->slots, slot, err)) < 0 ||
        (ret = gpu_fail_frame(&ctx->fail, GPU_FAIL_SUBMIT, slot, err)) < 0)
        return ret;
    pic = &ctx->pic[slot];
    if ((ret = gpu_check_frame(frame, pic->width, pic->height, err)) < 0)
        return ret;
    RowJob job = { .k = ctx->k, .pic = pic, .rgb = frame->data[0], .rgb_stride = frame->stride[0],
                   .sums = &ctx->sums[slot] };
    if (frame->format == MPE_FRAME_RGB24)
        mpe_pool_run(ctx->pool, pic->mb_height, convert_job, &job);
    else
        mpe_picture_from_yuv(pic, frame);
    /* the sums of row r's blocks reach into row r + 1: a second pass */
    mpe_pool_run(ctx->pool, pic->mb_height, sums_job, &job);
    ctx->has_mv[slot] = 0;
    return 0;
}

static int cpu_motion_search(GpuContext *ctx, int cur, int ref, int range, MpeError *err)
{
    int ret;
    if ((ret = gpu_check_slot(ctx->slots, cur, err)) < 0 ||
        (ret = gpu_check_slot(ctx->slots, ref, err)) < 0 || (ret = gpu_check_range(range, err)) < 0 ||
        (ret = gpu_fail_frame(&ctx->fail, GPU_FAIL_SEARCH, cur, err)) < 0)
        return ret;
    /* the reference picture's own vectors are likely good here too (smooth
     * motion); they only order the search, never change its answer */
    RowJob job = { .k = ctx->k, .pic = &ctx->pic[cur], .sums = &ctx->sums[cur], .mv = ctx->mv[cur],
                   .ref = &ctx->pic[ref], .ref_sums = &ctx->sums[ref], .range = range,
                   .hint = ref != cur && ctx->has_mv[ref] ? ctx->mv[ref] : NULL };
    mpe_pool_run(ctx->pool, ctx->pic[cur].mb_height, search_job, &job);
    ctx->has_mv[cur] = 1;
    return 0;
}

static int cpu_wait(GpuContext *ctx, int slot, MpeError *err)
{
    int ret = gpu_check_slot(ctx->slots, slot, err);
    return ret < 0 ? ret : gpu_fail_frame(&ctx->fail, GPU_FAIL_DOWNLOAD, slot, err);
}

static int cpu_download(GpuContext *ctx, int slot, MpePicture *pic, GpuMotion *mv, MpeError *err)
{
    const MpePicture *src;
    int ret = gpu_check_slot(ctx->slots, slot, err);

    if (ret < 0 || (ret = gpu_fail_frame(&ctx->fail, GPU_FAIL_DOWNLOAD, slot, err)) < 0)
        return ret;
    src = &ctx->pic[slot];
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < src->plane_h[c]; y++)
            memcpy(pic->plane[c] + (ptrdiff_t)y * pic->stride[c],
                   src->plane[c] + (ptrdiff_t)y * src->stride[c], (size_t)src->plane_w[c]);
    if (mv) {
        if (!ctx->has_mv[slot])
            return mpe_error(err, -EINVAL, "front end: no motion search was run on slot %d", slot);
        memcpy(mv, ctx->mv[slot], (size_t)src->mb_width * src->mb_height * sizeof(*mv));
    }
    return 0;
}

const GpuBackend gpu_backend_cpu = {
    .name = "cpu",
    .probe = cpu_probe,
    .open = cpu_open,
    .close = cpu_close,
    .submit_frame = cpu_submit_frame,
    .motion_search = cpu_motion_search,
    .wait = cpu_wait,
    .download = cpu_download,
    .timings = NULL,
};
