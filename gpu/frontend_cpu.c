/* frontend_cpu.c — the C reference front end, and backend "cpu".
 * Definitions of the arithmetic are in frontend.h; gpu_convert_rgb_c and
 * gpu_motion_search_c are the plain references that every backend, and the
 * fast kernels the cpu backend runs (frontend_cpu_fast.c), must match bit
 * for bit. */
#include "frontend_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/threads.h"

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

/* The best vector of the window [lo_x, hi_x] x [lo_y, hi_y] by the
 * tie-break rule (gpu_mv_better), starting from the best so far in
 * bsad, bdx, bdy; rows in order, dx ascending within a row. */
static void scan_window(const uint8_t *blk, ptrdiff_t stride, const uint8_t *rblk,
                        ptrdiff_t rstride, int lo_x, int hi_x, int lo_y, int hi_y,
                        MpeSad16Fn sad16, uint32_t *bsad, int *bdx, int *bdy)
{
    for (int dy = lo_y; dy <= hi_y; dy++)
        for (int dx = lo_x; dx <= hi_x; dx++) {
            const uint32_t s = sad16(blk, stride, rblk + dy * rstride + dx, rstride);
            if (gpu_mv_better(s, dx, dy, *bsad, *bdx, *bdy)) {
                *bsad = s;
                *bdx = dx;
                *bdy = dy;
            }
        }
}

void gpu_motion_search_c(GpuMotion *mv, const MpePicture *cur, const MpePicture *ref,
                         int range, MpeSad16Fn sad16)
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

            scan_window(blk, stride, rblk, rstride, dx_lo, dx_hi, dy_lo, dy_hi, sad16, &bsad, &bdx,
                        &bdy);
            GpuMotion *m = &mv[mby * cur->mb_width + mbx];
            m->dx = (int16_t)bdx;
            m->dy = (int16_t)bdy;
            m->sad = bsad;
            m->sad0 = sad0;
        }
    }
}

/* ---- the hierarchical search (frontend.h) ---- */

int gpu_pyramid_alloc(GpuPyramid *p, const MpePicture *pic)
{
    p->hw = pic->plane_w[0] / 2;
    p->hh = pic->plane_h[0] / 2;
    p->qw = p->hw / 2;
    p->qh = p->hh / 2;
    /* slack: vector kernels read 16 bytes from a block's last candidate
     * (and mpsadbw lanes past the window, masked off); zeroed, so that no
     * decision reads an undefined byte, even one whose lane is discarded */
    p->half = calloc(1, (size_t)p->hw * p->hh + 32);
    p->quarter = calloc(1, (size_t)p->qw * p->qh + 32);
    if (p->half && p->quarter)
        return 0;
    gpu_pyramid_free(p);
    return -ENOMEM;
}

void gpu_pyramid_free(GpuPyramid *p)
{
    free(p->half);
    free(p->quarter);
    p->half = p->quarter = NULL;
}

static void decimate(uint8_t *dst, int dw, int y0, int y1, const uint8_t *src, ptrdiff_t sstride)
{
    for (int y = y0; y < y1; y++) {
        const uint8_t *a = src + 2 * y * sstride, *b = a + sstride;
        for (int x = 0; x < dw; x++)
            dst[y * dw + x] = (uint8_t)((a[2 * x] + a[2 * x + 1] + b[2 * x] + b[2 * x + 1] + 2) >> 2);
    }
}

void gpu_pyramid_rows_c(GpuPyramid *p, const MpePicture *pic, int row0, int row1)
{
    decimate(p->half, p->hw, 8 * row0, 8 * row1, pic->plane[0], pic->stride[0]);
    decimate(p->quarter, p->qw, 4 * row0, 4 * row1, p->half, p->hw);
}

void gpu_pyramid_build_c(GpuPyramid *p, const MpePicture *pic)
{
    gpu_pyramid_rows_c(p, pic, 0, pic->mb_height);
}

static uint32_t sad_nxn(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs, int n)
{
    uint32_t s = 0;
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++)
            s += (uint32_t)abs(a[y * as + x] - b[y * bs + x]);
    return s;
}

/* The best vector of the n x n block at (x0, y0) of a w x h plane (stride
 * w) over [cx - r, cx + r]^2, |v| <= lim, the block inside the plane. */
static void search_level(const uint8_t *cur, const uint8_t *ref, int w, int h, int n, int x0,
                         int y0, int cx, int cy, int r, int lim, int *bx, int *by, uint32_t *bs)
{
    const int dx_lo = MPE_MAX(MPE_MAX(-x0, -lim), cx - r), dx_hi = MPE_MIN(MPE_MIN(w - n - x0, lim), cx + r);
    const int dy_lo = MPE_MAX(MPE_MAX(-y0, -lim), cy - r), dy_hi = MPE_MIN(MPE_MIN(h - n - y0, lim), cy + r);
    const uint8_t *blk = cur + y0 * w + x0;

    *bs = UINT32_MAX;
    *bx = *by = 0;
    for (int dy = dy_lo; dy <= dy_hi; dy++)
        for (int dx = dx_lo; dx <= dx_hi; dx++) {
            uint32_t s = sad_nxn(blk, w, ref + (y0 + dy) * w + x0 + dx, w, n);
            if (gpu_mv_better(s, dx, dy, *bs, *bx, *by)) {
                *bs = s;
                *bx = dx;
                *by = dy;
            }
        }
}

void gpu_hier_half_mb(GpuMotion *m, const GpuPyramid *cur, const GpuPyramid *ref, int reach,
                      int mbx, int mby, int ux, int uy)
{
    int hx, hy;
    uint32_t s;
    /* never empty: 2u fits the 1/2 plane and |2u| <= reach/2 */
    search_level(cur->half, ref->half, cur->hw, cur->hh, 8, 8 * mbx, 8 * mby, 2 * ux, 2 * uy, 2,
                 reach / 2, &hx, &hy, &s);
    m->dx = (int16_t)(2 * hx);
    m->dy = (int16_t)(2 * hy);
    m->sad = s;
    m->sad0 = 0;
}

void gpu_hier_coarse_rows(GpuMotion *coarse, const GpuPyramid *cur, const GpuPyramid *ref, int mb_w,
                          int reach, int row0, int row1)
{
    for (int mby = row0; mby < row1; mby++)
        for (int mbx = 0; mbx < mb_w; mbx++) {
            int ux, uy;
            uint32_t s;
            /* never empty: u = 0 fits */
            search_level(cur->quarter, ref->quarter, cur->qw, cur->qh, 4, 4 * mbx, 4 * mby, 0, 0,
                         reach / 4, reach / 4, &ux, &uy, &s);
            gpu_hier_half_mb(&coarse[mby * mb_w + mbx], cur, ref, reach, mbx, mby, ux, uy);
        }
}

static int vector_fits(const MpePicture *cur, int x0, int y0, int dx, int dy, int reach)
{
    return dx >= -x0 && dx <= cur->plane_w[0] - 16 - x0 && dy >= -y0 &&
           dy <= cur->plane_h[0] - 16 - y0 && abs(dx) <= reach && abs(dy) <= reach;
}

int gpu_hier_candidates(int16_t cand[][2], const MpePicture *cur, const GpuMotion *coarse,
                        const GpuMotion *prev, int reach, int mbx, int mby)
{
    const int mbw = cur->mb_width, mbh = cur->mb_height, i = mby * mbw + mbx;
    const GpuMotion *from[GPU_HIER_CANDIDATES] = {
        &coarse[i],
        NULL,   /* zero */
        prev ? &prev[i] : NULL,
        mbx > 0 ? &coarse[i - 1] : NULL,
        mbx < mbw - 1 ? &coarse[i + 1] : NULL,
        mby > 0 ? &coarse[i - mbw] : NULL,
        mby < mbh - 1 ? &coarse[i + mbw] : NULL,
    };
    int n = 0;

    for (int k = 0; k < GPU_HIER_CANDIDATES; k++) {
        const int dx = from[k] ? from[k]->dx : 0, dy = from[k] ? from[k]->dy : 0;
        if ((k == 1 || from[k]) && vector_fits(cur, 16 * mbx, 16 * mby, dx, dy, reach)) {
            cand[n][0] = (int16_t)dx;
            cand[n][1] = (int16_t)dy;
            n++;
        }
    }
    return n;
}

void gpu_hier_window(const MpePicture *cur, int x0, int y0, int cx, int cy, int range, int reach,
                     int *dx_lo, int *dx_hi, int *dy_lo, int *dy_hi)
{
    *dx_lo = MPE_MAX(MPE_MAX(-x0, -reach), cx - range);
    *dx_hi = MPE_MIN(MPE_MIN(cur->plane_w[0] - 16 - x0, reach), cx + range);
    *dy_lo = MPE_MAX(MPE_MAX(-y0, -reach), cy - range);
    *dy_hi = MPE_MIN(MPE_MIN(cur->plane_h[0] - 16 - y0, reach), cy + range);
}

int gpu_motion_search_hier_c(GpuMotion *mv, const MpePicture *cur, const MpePicture *ref,
                             const GpuMotion *prev, int range, int reach, MpeSad16Fn sad16)
{
    const ptrdiff_t stride = cur->stride[0], rstride = ref->stride[0];
    const int mbw = cur->mb_width, mbh = cur->mb_height;
    GpuPyramid pc = { 0 }, pr = { 0 };
    GpuMotion *coarse = malloc((size_t)mbw * mbh * sizeof(*coarse));
    int ret = -ENOMEM;

    if (!coarse || gpu_pyramid_alloc(&pc, cur) < 0 || gpu_pyramid_alloc(&pr, ref) < 0)
        goto done;
    gpu_pyramid_build_c(&pc, cur);
    gpu_pyramid_build_c(&pr, ref);
    gpu_hier_coarse_rows(coarse, &pc, &pr, mbw, reach, 0, mbh);
    for (int mby = 0; mby < mbh; mby++)
        for (int mbx = 0; mbx < mbw; mbx++) {
            const int x0 = 16 * mbx, y0 = 16 * mby;
            const uint8_t *blk = cur->plane[0] + y0 * stride + x0;
            const uint8_t *rblk = ref->plane[0] + y0 * rstride + x0;
            int16_t cand[GPU_HIER_CANDIDATES][2];
            int n = gpu_hier_candidates(cand, cur, coarse, prev, reach, mbx, mby);
            uint32_t bsad = UINT32_MAX;
            int bdx = 0, bdy = 0, lo_x, hi_x, lo_y, hi_y;

            for (int k = 0; k < n; k++) {
                uint32_t s = sad16(blk, stride, rblk + cand[k][1] * rstride + cand[k][0], rstride);
                if (gpu_mv_better(s, cand[k][0], cand[k][1], bsad, bdx, bdy)) {
                    bsad = s;
                    bdx = cand[k][0];
                    bdy = cand[k][1];
                }
            }
            gpu_hier_window(cur, x0, y0, bdx, bdy, range, reach, &lo_x, &hi_x, &lo_y, &hi_y);
            scan_window(blk, stride, rblk, rstride, lo_x, hi_x, lo_y, hi_y, sad16, &bsad, &bdx, &bdy);
            GpuMotion *m = &mv[mby * mbw + mbx];
            m->dx = (int16_t)bdx;
            m->dy = (int16_t)bdy;
            m->sad = bsad;
            m->sad0 = sad16(blk, stride, rblk, rstride);
        }
    ret = 0;
done:
    gpu_pyramid_free(&pc);
    gpu_pyramid_free(&pr);
    free(coarse);
    return ret;
}

/* ---- backend "cpu": synchronous (wait() has nothing to wait for), with
 * the fast kernels of frontend_cpu_fast.c spread over a pool by macroblock
 * rows; every row's result is independent of the others', so the output is
 * the same for every thread count. ---- */

struct GpuContext {
    const GpuGeometry *geo;
    int slots;
    MpePicture *pic;
    /* The sums at every position (8 MB at 2048x2048) of pictures searched
     * against: a table is taken when a slot is first a reference and given
     * back at the slot's next submit, or taken from the slot used longest
     * ago when sums_cap are held.  The encoder searches every picture
     * against the older anchor before any against the newer one, so one
     * table serves (solar: one made in 10 frames and in 60, against one a
     * slot before, 7); a slot that is searched against again after its
     * table was taken (sums_lost) has its sums made again and raises the
     * cap, so another order costs a few remakes, not one a search.  The
     * sums are the same whichever table holds them. */
    GpuBlockSums *sums;    /* [slots], the first n_sums made */
    int n_sums, sums_cap;
    int *sums_of;          /* per slot: its table in sums[], or -1 */
    int *sums_lost;        /* per slot: its table was taken since its submit */
    int *sums_user;        /* per table: the slot it holds the sums of, or -1 */
    uint64_t *sums_used;   /* per table: sums_tick at its last search */
    uint64_t sums_tick;
    uint16_t **grid;       /* per slot, the current picture's sums (gpu_block_sums_grid) */
    uint32_t **intra;      /* per slot when cfg->intra_costs: its macroblocks' intra costs */
    GpuPyramid *pyr;       /* per slot, when cfg->pyramid */
    GpuMotion **mv;
    GpuMotion *coarse;     /* the hierarchical search's stage 3, per macroblock */
    MpePool *pool;       /* GpuConfig.pool or own_pool */
    MpePool *own_pool;
    GpuCpuKernels k;
};

/* One pool job over a picture's macroblock rows. */
typedef struct RowJob {
    const GpuCpuKernels *k;
    MpePicture *pic;
    const uint8_t *rgb;
    ptrdiff_t rgb_stride;
    GpuBlockSums *sums;
    uint16_t *grid;
    uint32_t *intra;
    GpuMotion *mv;
    const MpePicture *ref;
    const GpuBlockSums *ref_sums;
    const GpuMotion *hint;
    int range, reach;
    GpuPyramid *build;     /* the pyramid submit builds */
    const GpuPyramid *pyr, *ref_pyr;
    GpuMotion *coarse;
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
    gpu_block_sums_rows(&j->k->sad, j->sums, j->pic, row, row + 1);
}

/* The current picture's grid sums, pyramid and intra costs of a band: the
 * pyramid's pass reads the band's 16 luma rows, the others then find them
 * in cache (and the intra costs' means are the grid's sums) */
static void planes_job(void *arg, int row, int worker)
{
    const RowJob *j = arg;
    (void)worker;
    if (j->build)
        j->k->pyramid_rows(j->build, j->pic, row, row + 1);
    j->k->grid_rows(j->grid, j->pic, row, row + 1);
    if (j->intra)
        j->k->intra_cost_rows(j->intra, j->pic, j->grid, row, row + 1);
}

static void search_job(void *arg, int row, int worker)
{
    const RowJob *j = arg;
    (void)worker;
    j->k->motion_search_rows(j->k, j->mv, j->pic, j->sums, j->ref, j->ref_sums, j->range, j->hint, row,
                             row + 1);
}

static void coarse_job(void *arg, int row, int worker)
{
    const RowJob *j = arg;
    (void)worker;
    j->k->coarse_rows(j->coarse, j->pyr, j->ref_pyr, j->pic->mb_width, j->reach, row, row + 1);
}

static void hier_job(void *arg, int row, int worker)
{
    const RowJob *j = arg;
    (void)worker;
    j->k->hier_final_rows(j->k, j->mv, j->pic, j->sums, j->ref, j->ref_sums, j->coarse, j->hint,
                          j->range, j->reach, row, row + 1);
}

static int cpu_probe(int device, int for_auto, char *why, size_t why_size)
{
    (void)device;
    (void)for_auto;
    (void)why;
    (void)why_size;
    return 0;
}

static void cpu_close(GpuContext *ctx)
{
    if (!ctx)
        return;
    mpe_pool_close(ctx->own_pool);
    for (int i = 0; i < ctx->slots; i++) {
        if (ctx->pic)
            mpe_picture_free(&ctx->pic[i]);
        if (ctx->grid)
            free(ctx->grid[i]);
        if (ctx->intra)
            free(ctx->intra[i]);
        if (ctx->pyr)
            gpu_pyramid_free(&ctx->pyr[i]);
        if (ctx->mv)
            free(ctx->mv[i]);
    }
    for (int i = 0; i < ctx->n_sums; i++)
        gpu_block_sums_free(&ctx->sums[i]);
    free(ctx->pic);
    free(ctx->sums);
    free(ctx->sums_of);
    free(ctx->sums_lost);
    free(ctx->sums_user);
    free(ctx->sums_used);
    free(ctx->grid);
    free(ctx->intra);
    free(ctx->pyr);
    free(ctx->coarse);
    free(ctx->mv);
    free(ctx);
}

static int cpu_open(GpuContext **out, const GpuConfig *cfg, const GpuGeometry *geo, MpeError *err)
{
    GpuContext *ctx;
    int n = cfg->slots, threads;

    if (!(*out = ctx = calloc(1, sizeof(*ctx))))
        return mpe_error(err, -ENOMEM, "front end: out of memory");
    ctx->geo = geo;
    ctx->slots = n;
    gpu_cpu_kernels_init(&ctx->k, cfg->cpu_flags);
    ctx->pic = calloc((size_t)n, sizeof(*ctx->pic));
    ctx->sums = calloc((size_t)n, sizeof(*ctx->sums));
    ctx->sums_of = malloc((size_t)n * sizeof(*ctx->sums_of));
    ctx->sums_lost = calloc((size_t)n, sizeof(*ctx->sums_lost));
    ctx->sums_user = malloc((size_t)n * sizeof(*ctx->sums_user));
    ctx->sums_used = calloc((size_t)n, sizeof(*ctx->sums_used));
    ctx->sums_cap = 1;
    ctx->grid = calloc((size_t)n, sizeof(*ctx->grid));
    ctx->mv = calloc((size_t)n, sizeof(*ctx->mv));
    if (cfg->pyramid)
        ctx->pyr = calloc((size_t)n, sizeof(*ctx->pyr));
    if (cfg->pyramid)
        ctx->coarse = calloc((size_t)geo->mb_w * geo->mb_h, sizeof(*ctx->coarse));
    if (cfg->intra_costs)
        ctx->intra = calloc((size_t)n, sizeof(*ctx->intra));
    if (!ctx->pic || !ctx->sums || !ctx->sums_of || !ctx->sums_lost || !ctx->sums_user || !ctx->sums_used ||
        !ctx->grid || !ctx->mv ||
        (cfg->pyramid && (!ctx->pyr || !ctx->coarse)) || (cfg->intra_costs && !ctx->intra))
        return mpe_error(err, -ENOMEM, "front end: out of memory");
    for (int i = 0; i < n; i++)
        ctx->sums_of[i] = ctx->sums_user[i] = -1;
    /* the pool splits macroblock rows: more threads than rows would idle */
    if (cfg->pool) {
        ctx->pool = cfg->pool;
        threads = MPE_MIN(mpe_pool_threads(ctx->pool), geo->mb_h);
    } else {
        int ret;
        threads = cfg->threads > 0 ? cfg->threads : mpe_cpu_count();
        threads = MPE_MIN(threads, geo->mb_h);
        if ((ret = mpe_pool_open(&ctx->own_pool, threads, err)) < 0)
            return ret;
        ctx->pool = ctx->own_pool;
    }
    mpe_log(cfg->log, MPE_LOG_INFO, "front end cpu: %s kernels on %d threads", ctx->k.name, threads);
    return 0;
}

static int cpu_alloc_slot(GpuContext *ctx, int slot, MpeError *err)
{
    const GpuGeometry *g = ctx->geo;
    if (mpe_picture_alloc(&ctx->pic[slot], g->width, g->height) < 0 ||
        !(ctx->grid[slot] = malloc(gpu_grid_entries(&ctx->pic[slot]) * sizeof(uint16_t))) ||
        !(ctx->mv[slot] = calloc((size_t)g->mb_w * g->mb_h, sizeof(GpuMotion))) ||
        (ctx->pyr && gpu_pyramid_alloc(&ctx->pyr[slot], &ctx->pic[slot]) < 0) ||
        (ctx->intra && !(ctx->intra[slot] = malloc((size_t)g->mb_w * g->mb_h * sizeof(uint32_t)))))
        return mpe_error(err, -ENOMEM, "front end: out of memory for %dx%d frames", g->width,
                         g->height);
    return 0;
}

static int cpu_input(GpuContext *ctx, int slot, GpuInput *in, MpeError *err)
{
    (void)err;
    in->pic = &ctx->pic[slot];   /* RGB is converted straight from the caller's frame */
    return 0;
}

static int cpu_submit(GpuContext *ctx, int slot, const MpeFrame *rgb, MpeError *err)
{
    MpePicture *pic = &ctx->pic[slot];
    RowJob job = { .k = &ctx->k, .pic = pic };

    (void)err;
    if (rgb) {
        job.rgb = rgb->data[0];
        job.rgb_stride = rgb->stride[0];
        mpe_pool_run(ctx->pool, pic->mb_height, convert_job, &job);
    }
    /* a picture searched only as the current one (a B picture) needs its
     * macroblocks' quarters' sums alone: the sums at every position (8 MB
     * at 2048x2048, a page fault per 4 KiB the first time) wait until the
     * slot is a reference (cpu_search) */
    job.grid = ctx->grid[slot];
    job.build = ctx->pyr ? &ctx->pyr[slot] : NULL;
    job.intra = ctx->intra ? ctx->intra[slot] : NULL;
    mpe_pool_run(ctx->pool, pic->mb_height, planes_job, &job);
    if (ctx->sums_of[slot] >= 0) {
        ctx->sums_user[ctx->sums_of[slot]] = -1;
        ctx->sums_of[slot] = -1;
    }
    ctx->sums_lost[slot] = 0;
    return 0;
}

/* ref's table of sums, made on its first search since its submit */
static const GpuBlockSums *reference_sums(GpuContext *ctx, int ref, MpeError *err)
{
    int t = ctx->sums_of[ref];
    if (t >= 0) {
        ctx->sums_used[t] = ++ctx->sums_tick;
        return &ctx->sums[t];
    }
    if (ctx->sums_lost[ref] && ctx->sums_cap < ctx->slots)
        ctx->sums_cap++;
    ctx->sums_lost[ref] = 0;
    for (t = 0; t < ctx->n_sums && ctx->sums_user[t] >= 0; t++)
        ;
    if (t == ctx->n_sums && ctx->n_sums == ctx->sums_cap) {
        /* all held: take the one searched against longest ago */
        t = 0;
        for (int i = 1; i < ctx->n_sums; i++)
            if (ctx->sums_used[i] < ctx->sums_used[t])
                t = i;
        ctx->sums_of[ctx->sums_user[t]] = -1;
        ctx->sums_lost[ctx->sums_user[t]] = 1;
    } else if (t == ctx->n_sums) {
        if (gpu_block_sums_alloc(&ctx->sums[t], &ctx->pic[ref]) < 0) {
            mpe_error(err, -ENOMEM, "front end: out of memory for %dx%d block sums", ctx->geo->width,
                      ctx->geo->height);
            return NULL;
        }
        ctx->n_sums++;
    }
    /* the sums of row r's blocks reach into row r + 1: a pass of their own */
    RowJob sums = { .k = &ctx->k, .pic = &ctx->pic[ref], .sums = &ctx->sums[t] };
    mpe_pool_run(ctx->pool, ctx->pic[ref].mb_height, sums_job, &sums);
    ctx->sums_user[t] = ref;
    ctx->sums_of[ref] = t;
    ctx->sums_used[t] = ++ctx->sums_tick;
    return &ctx->sums[t];
}

static int cpu_search(GpuContext *ctx, int cur, int ref, int range, int reach, int ref_has_mv,
                      MpeError *err)
{
    /* the reference picture's own vectors are likely good here too (smooth
     * motion); they only order the search, never change its answer */
    GpuBlockSums grid = gpu_block_sums_grid(ctx->grid[cur], &ctx->pic[cur]);
    const GpuBlockSums *ref_sums = reference_sums(ctx, ref, err);
    if (!ref_sums)
        return -ENOMEM;
    RowJob job = { .k = &ctx->k, .pic = &ctx->pic[cur], .sums = &grid, .mv = ctx->mv[cur],
                   .ref = &ctx->pic[ref], .ref_sums = ref_sums, .range = range,
                   .hint = ref_has_mv ? ctx->mv[ref] : NULL };
    if (reach) {
        /* stage 3 of every macroblock before stage 4 of any: it takes its
         * neighbours' */
        job.reach = reach;
        job.pyr = &ctx->pyr[cur];
        job.ref_pyr = &ctx->pyr[ref];
        job.coarse = ctx->coarse;
        mpe_pool_run(ctx->pool, ctx->pic[cur].mb_height, coarse_job, &job);
        mpe_pool_run(ctx->pool, ctx->pic[cur].mb_height, hier_job, &job);
        return 0;
    }
    mpe_pool_run(ctx->pool, ctx->pic[cur].mb_height, search_job, &job);
    return 0;
}

/* synchronous: the work was done when it was asked for */
static int cpu_wait(GpuContext *ctx, int slot, int has_mv, MpeError *err)
{
    (void)ctx;
    (void)slot;
    (void)has_mv;
    (void)err;
    return 0;
}

static int cpu_download(GpuContext *ctx, int slot, MpePicture *pic, GpuMotion *mv, MpeError *err)
{
    const MpePicture *src = &ctx->pic[slot];

    (void)err;
    if (pic)
        mpe_picture_copy(pic, src);
    if (mv)
        memcpy(mv, ctx->mv[slot], (size_t)src->mb_width * src->mb_height * sizeof(*mv));
    return 0;
}

/* counted at submit (planes_job) */
static int cpu_intra_costs(GpuContext *ctx, int slot, uint32_t *intra, MpeError *err)
{
    (void)err;
    memcpy(intra, ctx->intra[slot], (size_t)ctx->geo->mb_w * ctx->geo->mb_h * sizeof(*intra));
    return 0;
}

static const MpePicture *cpu_host_planes(GpuContext *ctx, int slot)
{
    return &ctx->pic[slot];
}

const GpuBackend gpu_backend_cpu = {
    .name = "cpu",
    .probe = cpu_probe,
    .open = cpu_open,
    .build = NULL,
    .alloc_slot = cpu_alloc_slot,
    .close = cpu_close,
    .input = cpu_input,
    .submit = cpu_submit,
    .search = cpu_search,
    .wait = cpu_wait,
    .download = cpu_download,
    .timings = NULL,
    .hier = 1,
    .host_planes = cpu_host_planes,
    .intra_costs = cpu_intra_costs,
};
