/* frontend_cpu_fast.c — the cpu backend's fast kernels (see frontend.h):
 * conversion and the pruned exhaustive search, each on bands of macroblock
 * rows, in portable C and with AVX2, chosen by the flags like every DSP
 * table (common/cpu.h); the SAD and block sums they use are dsp/sad.h's.
 * The references in frontend_cpu.c define the results;
 * tests/unit/test_frontend.c holds every flag subset's set to them. */
#include "frontend.h"

#include <errno.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpu.h"
#ifdef MPE_ARCH_X86
#include <immintrin.h>
#endif

/* The conversion's coefficients, as in frontend_cpu.c (frontend.h). */
enum {
    Y_R = 16829, Y_G = 33039, Y_B = 6416,
    CB_R = -9714, CB_G = -19070, CB_B = 28784,
    CR_R = 28784, CR_G = -24103, CR_B = -4681,
};

/* Planar row buffers: plane widths stop at 4096, chroma at 2048.  A source
 * row is spread into R, G, B with its edge replicated at index -1 and from
 * w up to plane_w + CONV_REACH, which covers the widest vector read. */
enum { CONV_PAD = 32, CONV_REACH = 64 };
#define CONV_ROW (CONV_PAD + 4096 + CONV_REACH + 32)
#define CONV_CROW (2048 + 32)

static inline int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* ------------------------------------------------------------ conversion
 *
 * By linearity the chroma filter can run on R, G, B before the matrix:
 * sum(w * (a R + b G + c B)) = a sum(w R) + b sum(w G) + c sum(w B) exactly
 * in integers, and the filtered sums (<= 64 * 255) fit 16 bits.  So each
 * source row is filtered horizontally once per channel ([1 3 3 1] at
 * 2cx-1 .. 2cx+2), four such rows vertically, and the matrix is applied to
 * the result: the reference's value, with no int32 until the very end. */

typedef struct ConvOps {
    void (*planar)(uint8_t *const pl[3], const uint8_t *src, int w);
    void (*luma)(uint8_t *dst, uint8_t *const pl[3], int n);
    void (*hfilter)(uint16_t *const h[3], uint8_t *const pl[3], int cw);
    void (*vfilter)(uint8_t *dcb, uint8_t *dcr, const uint16_t *const hr[4][3], int cw);
} ConvOps;

static void conv_planar_c(uint8_t *const pl[3], const uint8_t *src, int w)
{
    for (int x = 0; x < w; x++) {
        pl[0][x] = src[3 * x];
        pl[1][x] = src[3 * x + 1];
        pl[2][x] = src[3 * x + 2];
    }
}

static void conv_luma_c(uint8_t *dst, uint8_t *const pl[3], int n)
{
    for (int x = 0; x < n; x++)
        dst[x] = (uint8_t)((Y_R * pl[0][x] + Y_G * pl[1][x] + Y_B * pl[2][x] + (16 << 16) + 32768) >> 16);
}

static void conv_hfilter_c(uint16_t *const h[3], uint8_t *const pl[3], int cw)
{
    for (int c = 0; c < 3; c++)
        for (int cx = 0; cx < cw; cx++) {
            const uint8_t *p = pl[c] + 2 * cx;
            h[c][cx] = (uint16_t)(p[-1] + 3 * (p[0] + p[1]) + p[2]);
        }
}

static void conv_vfilter_c(uint8_t *dcb, uint8_t *dcr, const uint16_t *const hr[4][3], int cw)
{
    for (int cx = 0; cx < cw; cx++) {
        int32_t v[3];
        for (int c = 0; c < 3; c++)
            v[c] = hr[0][c][cx] + 3 * (hr[1][c][cx] + hr[2][c][cx]) + hr[3][c][cx];
        int32_t scb = CB_R * v[0] + CB_G * v[1] + CB_B * v[2];
        int32_t scr = CR_R * v[0] + CR_G * v[1] + CR_B * v[2];
        dcb[cx] = (uint8_t)clampi((scb + (128 << 22) + (1 << 21)) >> 22, 16, 240);
        dcr[cx] = (uint8_t)clampi((scr + (128 << 22) + (1 << 21)) >> 22, 16, 240);
    }
}

/* Macroblock row `row`: luma rows 16row.., chroma rows 8row.., from source
 * rows 16row-1 .. 16row+16 (clamped to the image, which is the reference's
 * edge replication).  The vector kernels may write past plane_w up to the
 * next multiple of 32, which stays inside the stride. */
static void convert_band(MpePicture *pic, const uint8_t *rgb, ptrdiff_t rgb_stride, int row,
                         const ConvOps *ops)
{
    alignas(32) uint8_t planar[3][CONV_ROW];
    alignas(32) uint16_t ring[4][3][CONV_CROW];   /* horizontally filtered rows r+1 mod 4 */
    uint8_t *const pl[3] = { planar[0] + CONV_PAD, planar[1] + CONV_PAD, planar[2] + CONV_PAD };
    const int w = pic->width, h = pic->height, pw = pic->plane_w[0], cw = pic->plane_w[1];
    const int y0 = 16 * row;

    for (int r = y0 - 1; r <= y0 + 16; r++) {
        ops->planar(pl, rgb + (ptrdiff_t)clampi(r, 0, h - 1) * rgb_stride, w);
        for (int c = 0; c < 3; c++) {
            pl[c][-1] = pl[c][0];
            memset(pl[c] + w, pl[c][w - 1], (size_t)(pw + CONV_REACH - w));
        }
        if (r >= y0 && r < y0 + 16)
            ops->luma(pic->plane[0] + (ptrdiff_t)r * pic->stride[0], pl, pw);
        uint16_t *const hrow[3] = { ring[(r + 1) & 3][0], ring[(r + 1) & 3][1], ring[(r + 1) & 3][2] };
        ops->hfilter(hrow, pl, cw);
        if (r >= y0 + 2 && !(r & 1)) {
            /* chroma row cy takes source rows 2cy-1 .. 2cy+2 = r-3 .. r */
            const int cy = r / 2 - 1;
            const uint16_t *const hr[4][3] = {
                { ring[(r - 2) & 3][0], ring[(r - 2) & 3][1], ring[(r - 2) & 3][2] },
                { ring[(r - 1) & 3][0], ring[(r - 1) & 3][1], ring[(r - 1) & 3][2] },
                { ring[r & 3][0], ring[r & 3][1], ring[r & 3][2] },
                { ring[(r + 1) & 3][0], ring[(r + 1) & 3][1], ring[(r + 1) & 3][2] },
            };
            ops->vfilter(pic->plane[1] + (ptrdiff_t)cy * pic->stride[1],
                         pic->plane[2] + (ptrdiff_t)cy * pic->stride[2], hr, cw);
        }
    }
}

static const ConvOps conv_ops_c = { conv_planar_c, conv_luma_c, conv_hfilter_c, conv_vfilter_c };

static void convert_rgb_rows_c(MpePicture *pic, const uint8_t *rgb, ptrdiff_t rgb_stride, int row0,
                               int row1)
{
    for (int row = row0; row < row1; row++)
        convert_band(pic, rgb, rgb_stride, row, &conv_ops_c);
}

/* ------------------------------------------------------------ block sums */

int gpu_block_sums_alloc(GpuBlockSums *s, const MpePicture *pic)
{
    /* zeroed, with a vector's worth of slack: the search reads whole
     * vectors of sums and masks off the lanes past a row's last block.
     * Rows plane_w apart, not the picture's stride: with pictures whose
     * rows are padded off a multiple of 1 KiB (L1 set conflicts), sums
     * rows 2 * stride apart made the window scan's loads miss twice as
     * often (solar 2048^2: scan_window_avx2 390 -> 920 samples) */
    s->stride = pic->plane_w[0];
    s->x_shift = 0;
    s->sum = calloc((size_t)(pic->plane_h[0] - 7) * (size_t)s->stride + 64, sizeof(*s->sum));
    return s->sum ? 0 : -ENOMEM;
}

void gpu_block_sums_free(GpuBlockSums *s)
{
    free(s->sum);
    s->sum = NULL;
}

void gpu_block_sums_rows(const MpeSadDsp *sad, GpuBlockSums *s, const MpePicture *pic, int row0,
                         int row1)
{
    sad->block_sums(s->sum, s->stride, pic->plane[0], pic->stride[0], pic->plane_w[0], 16 * row0,
                    MPE_MIN(16 * row1, pic->plane_h[0] - 7));
}

/* entries a grid row: a multiple of 8, so that the sum at (x, y), y a
 * multiple of 8, is sum[y * (row / 8) + x / 8] (gpu_block_sums_grid) */
int gpu_grid_row(const MpePicture *pic)
{
    return (pic->plane_w[0] / 8 + 7) & ~7;
}

size_t gpu_grid_entries(const MpePicture *pic)
{
    return (size_t)(pic->plane_h[0] / 8) * (size_t)gpu_grid_row(pic);
}

static void grid_rows_c(uint16_t *grid, const MpePicture *pic, int row0, int row1)
{
    const ptrdiff_t stride = pic->stride[0], row = gpu_grid_row(pic);
    for (int y = 16 * row0; y < 16 * row1; y += 8)
        for (int x = 0; x + 8 <= pic->plane_w[0]; x += 8) {
            const uint8_t *p = pic->plane[0] + y * stride + x;
            unsigned s = 0;
            for (int j = 0; j < 8; j++)
                for (int i = 0; i < 8; i++)
                    s += p[j * stride + i];
            grid[(y / 8) * row + x / 8] = (uint16_t)s;
        }
}

static inline uint32_t absd(int a, int b)
{
    return (uint32_t)(a < b ? b - a : a - b);
}

/* A macroblock's sum from its quarters' in the grid (rows y0 / 8 and
 * y0 / 8 + 1 of the table, row entries apart). */
static inline unsigned mb_sum_of_grid(const uint16_t *grid, ptrdiff_t row, int x0, int y0)
{
    const uint16_t *g = grid + (y0 / 8) * row + x0 / 8;
    return (unsigned)g[0] + g[1] + g[row] + g[row + 1];
}

static void intra_cost_rows_c(uint32_t *intra, const MpePicture *pic, const uint16_t *grid, int row0,
                              int row1)
{
    const ptrdiff_t stride = pic->stride[0], grow = gpu_grid_row(pic);
    for (int mby = row0; mby < row1; mby++)
        for (int mbx = 0; mbx < pic->mb_width; mbx++) {
            const int x0 = 16 * mbx, y0 = 16 * mby;
            const int mean = (int)((mb_sum_of_grid(grid, grow, x0, y0) + 128) >> 8);
            const uint8_t *p = pic->plane[0] + y0 * stride + x0;
            uint32_t cost = 0;
            for (int j = 0; j < 16; j++)
                for (int i = 0; i < 16; i++)
                    cost += absd(p[j * stride + i], mean);
            intra[mby * pic->mb_width + mbx] = cost;
        }
}

GpuBlockSums gpu_block_sums_grid(uint16_t *grid, const MpePicture *pic)
{
    return (GpuBlockSums){ .sum = grid, .stride = gpu_grid_row(pic) / 8, .x_shift = 3 };
}

/* ------------------------------------------------------------ search */

/* One macroblock's search state. */
typedef struct MbSearch {
    const uint8_t *blk, *rblk;   /* current block; reference block at the zero vector */
    ptrdiff_t stride, rstride;
    const uint16_t *rs;          /* reference 8x8 sums at the zero vector */
    ptrdiff_t sstride;
    int c16, c8[4];              /* the current block's sum and its quarters' */
    int dx_lo, dx_hi, dy_lo, dy_hi;
    int cy;                      /* rows are visited from this dy outwards */
    uint32_t bsad;               /* best so far */
    int bdx, bdy;
    MpeSad16BoundFn sad16_bound;
} MbSearch;

/* Out of line: rare next to the bound checks, and kept out of their loops'
 * registers. */
static void evaluate(MbSearch *m, int dx, int dy)
{
    uint32_t sad = m->sad16_bound(m->blk, m->stride, m->rblk + dy * m->rstride + dx, m->rstride, m->bsad);
    if (gpu_mv_better(sad, dx, dy, m->bsad, m->bdx, m->bdy)) {
        m->bsad = sad;
        m->bdx = dx;
        m->bdy = dy;
    }
}

/* Candidate (dx, dy) whose SAD is at least lb: evaluate it only if it could
 * still beat the best (a tie on SAD may win on the tie-break). */
static inline void try_candidate(MbSearch *m, int dx, int dy, uint32_t lb)
{
    if (gpu_mv_better(lb, dx, dy, m->bsad, m->bdx, m->bdy))
        evaluate(m, dx, dy);
}

/* The quarters' bound of candidate (dx, dy). */
static inline uint32_t bound8(const MbSearch *m, int dx, int dy)
{
    const uint16_t *t = m->rs + dy * m->sstride + dx, *b = t + 8 * m->sstride;
    return absd(m->c8[0], t[0]) + absd(m->c8[1], t[8]) + absd(m->c8[2], b[0]) + absd(m->c8[3], b[8]);
}

static void try_vector(MbSearch *m, int dx, int dy)
{
    if (dx >= m->dx_lo && dx <= m->dx_hi && dy >= m->dy_lo && dy <= m->dy_hi)
        try_candidate(m, dx, dy, bound8(m, dx, dy));
}

/* The whole block's bound first (the quarters' sums added up): it rejects
 * most candidates, for less work than the quarters' bound. */
static inline void scan_row_c(MbSearch *m, int dy)
{
    const uint16_t *t = m->rs + dy * m->sstride, *b = t + 8 * m->sstride;
    for (int dx = m->dx_lo; dx <= m->dx_hi; dx++) {
        const int q0 = t[dx], q1 = t[dx + 8], q2 = b[dx], q3 = b[dx + 8];
        if (absd(m->c16, q0 + q1 + q2 + q3) > m->bsad)
            continue;
        uint32_t lb = absd(m->c8[0], q0) + absd(m->c8[1], q1) + absd(m->c8[2], q2) + absd(m->c8[3], q3);
        if (lb <= m->bsad)
            try_candidate(m, dx, dy, lb);
    }
}

/* Rows from dy = 0 outwards (0, -1, 1, -2, 2 ...): small vectors are the
 * likely winners, and the sooner the best is good, the more the bounds
 * skip.  k-th row in that order, or a value outside dy_lo..dy_hi to skip. */
static inline int row_at(int k)
{
    return k & 1 ? -((k + 1) >> 1) : k >> 1;
}

static inline int rows_to_visit(const MbSearch *m)
{
    return 2 * MPE_MAX(m->cy - m->dy_lo, m->dy_hi - m->cy) + 1;
}

static void scan_window_c(MbSearch *m)
{
    for (int k = 0, n = rows_to_visit(m); k < n; k++) {
        const int dy = m->cy + row_at(k);
        if (dy >= m->dy_lo && dy <= m->dy_hi)
            scan_row_c(m, dy);
    }
}

typedef void (*ScanWindowFn)(MbSearch *m);

/* The zero vector first (its SAD is wanted anyway), then the left
 * neighbour's and the hint's vectors, then the whole window. */
static void search_mb(GpuMotion *out, MbSearch *m, const GpuMotion *left, const GpuMotion *hint,
                      ScanWindowFn scan)
{
    const uint32_t sad0 = m->sad16_bound(m->blk, m->stride, m->rblk, m->rstride, UINT32_MAX);

    m->bsad = sad0;
    m->bdx = m->bdy = 0;
    /* SAD 0 at the zero vector: nothing can beat it (no smaller SAD, no smaller |dx|+|dy|) */
    if (sad0 != 0) {
        if (left)
            try_vector(m, left->dx, left->dy);
        if (hint)
            try_vector(m, hint->dx, hint->dy);
        scan(m);
    }
    out->dx = (int16_t)m->bdx;
    out->dy = (int16_t)m->bdy;
    out->sad = m->bsad;
    out->sad0 = sad0;
}

static void mb_setup(MbSearch *m, const MpePicture *cur, const GpuBlockSums *cur_sums,
                     const MpePicture *ref, const GpuBlockSums *ref_sums, int x0, int y0)
{
    m->blk = cur->plane[0] + y0 * m->stride + x0;
    m->rblk = ref->plane[0] + y0 * m->rstride + x0;
    const int xs = cur_sums->x_shift;
    const uint16_t *c8 = cur_sums->sum + y0 * cur_sums->stride + (x0 >> xs);
    m->rs = ref_sums->sum + y0 * ref_sums->stride + x0;
    m->c8[0] = c8[0];
    m->c8[1] = c8[8 >> xs];
    m->c8[2] = c8[8 * cur_sums->stride];
    m->c8[3] = c8[8 * cur_sums->stride + (8 >> xs)];
    m->c16 = m->c8[0] + m->c8[1] + m->c8[2] + m->c8[3];
    m->cy = 0;
}

/* Steps 4-5 of the hierarchical search: the candidates' best is the
 * window's centre and the first best so far (it lies in the window, so
 * the window's minimum is the answer, as in the reference). */
static void hier_rows(const GpuCpuKernels *k, GpuMotion *mv, const MpePicture *cur,
                      const GpuBlockSums *cur_sums, const MpePicture *ref,
                      const GpuBlockSums *ref_sums, const GpuMotion *coarse, const GpuMotion *prev,
                      int range, int reach, int row0, int row1, ScanWindowFn scan)
{
    MbSearch m = { .stride = cur->stride[0], .rstride = ref->stride[0], .sstride = ref_sums->stride,
                   .sad16_bound = k->sad.sad16_bound };

    for (int mby = row0; mby < row1; mby++)
        for (int mbx = 0; mbx < cur->mb_width; mbx++) {
            const int x0 = mbx * 16, y0 = mby * 16;
            GpuMotion *o = &mv[mby * cur->mb_width + mbx];

            mb_setup(&m, cur, cur_sums, ref, ref_sums, x0, y0);
            m.bdx = m.bdy = 0;
            /* the zero vector's SAD is wanted anyway; the others only where
             * they could win: a vector seen before cannot beat itself, and
             * one whose quarters' bound loses cannot win (neighbours mostly
             * share their coarse vector, in still areas all are zero) */
            const uint32_t sad0 = m.sad16_bound(m.blk, m.stride, m.rblk, m.rstride, UINT32_MAX);
            if (!sad0) {
                /* nothing beats SAD 0 at the zero vector: no candidate, no
                 * window (their bounds' loads were misses in the sums) */
                *o = (GpuMotion){ .dx = 0, .dy = 0, .sad = 0, .sad0 = 0 };
                continue;
            }
            int16_t cand[GPU_HIER_CANDIDATES][2];
            const int n = gpu_hier_candidates(cand, cur, coarse, prev, reach, mbx, mby);
            m.bsad = sad0;
            for (int c = 0; c < n; c++) {
                const int dx = cand[c][0], dy = cand[c][1];
                int seen = !dx && !dy;
                for (int i = 0; i < c && !seen; i++)
                    seen = cand[i][0] == dx && cand[i][1] == dy;
                if (!seen)
                    try_candidate(&m, dx, dy, bound8(&m, dx, dy));
            }
            gpu_hier_window(cur, x0, y0, m.bdx, m.bdy, range, reach, &m.dx_lo, &m.dx_hi, &m.dy_lo,
                            &m.dy_hi);
            m.cy = m.bdy;
            /* SAD 0 at the zero vector cannot be beaten; SAD 0 elsewhere
             * can, by another SAD 0 of smaller |dx|+|dy| in the window */
            if (m.bsad || m.bdx || m.bdy)
                scan(&m);
            o->dx = (int16_t)m.bdx;
            o->dy = (int16_t)m.bdy;
            o->sad = m.bsad;
            o->sad0 = sad0;
        }
}

static void search_rows(const GpuCpuKernels *k, GpuMotion *mv, const MpePicture *cur,
                        const GpuBlockSums *cur_sums, const MpePicture *ref,
                        const GpuBlockSums *ref_sums, int range, const GpuMotion *hint, int row0,
                        int row1, ScanWindowFn scan)
{
    const ptrdiff_t stride = cur->stride[0], rstride = ref->stride[0];
    const int pw = cur->plane_w[0], ph = cur->plane_h[0];
    MbSearch m = { .stride = stride, .rstride = rstride, .sstride = ref_sums->stride,
                   .sad16_bound = k->sad.sad16_bound };

    for (int mby = row0; mby < row1; mby++) {
        for (int mbx = 0; mbx < cur->mb_width; mbx++) {
            const int x0 = mbx * 16, y0 = mby * 16, i = mby * cur->mb_width + mbx;
            mb_setup(&m, cur, cur_sums, ref, ref_sums, x0, y0);
            m.dx_lo = -MPE_MIN(range, x0);
            m.dx_hi = MPE_MIN(range, pw - 16 - x0);
            m.dy_lo = -MPE_MIN(range, y0);
            m.dy_hi = MPE_MIN(range, ph - 16 - y0);
            search_mb(&mv[i], &m, mbx ? &mv[i - 1] : NULL, hint ? &hint[i] : NULL, scan);
        }
    }
}

static void hier_final_rows_c(const GpuCpuKernels *k, GpuMotion *mv, const MpePicture *cur,
                              const GpuBlockSums *cur_sums, const MpePicture *ref,
                              const GpuBlockSums *ref_sums, const GpuMotion *coarse,
                              const GpuMotion *prev, int range, int reach, int row0, int row1)
{
    hier_rows(k, mv, cur, cur_sums, ref, ref_sums, coarse, prev, range, reach, row0, row1,
              scan_window_c);
}

static void motion_search_rows_c(const GpuCpuKernels *k, GpuMotion *mv, const MpePicture *cur,
                                 const GpuBlockSums *cur_sums, const MpePicture *ref,
                                 const GpuBlockSums *ref_sums, int range, const GpuMotion *hint,
                                 int row0, int row1)
{
    search_rows(k, mv, cur, cur_sums, ref, ref_sums, range, hint, row0, row1, scan_window_c);
}

/* ------------------------------------------------------------ AVX2 */

#ifdef MPE_ARCH_X86

#define AVX2 __attribute__((target("avx2")))

AVX2 static inline __m256i load2x128(const uint8_t *lo, const uint8_t *hi)
{
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)lo)),
                                   _mm_loadu_si128((const __m128i *)hi), 1);
}

/* 32 pixels per step, 16 in each lane: each channel's bytes gathered from
 * the lane's three 16-byte pieces of 48 RGB bytes. */
AVX2 static void conv_planar_avx2(uint8_t *const pl[3], const uint8_t *src, int w)
{
#define M(...) _mm256_setr_epi8(__VA_ARGS__, __VA_ARGS__)
    const __m256i r0 = M(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i r1 = M(-1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14, -1, -1, -1, -1, -1);
    const __m256i r2 = M(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 1, 4, 7, 10, 13);
    const __m256i g0 = M(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i g1 = M(-1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1);
    const __m256i g2 = M(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14);
    const __m256i b0 = M(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i b1 = M(-1, -1, -1, -1, -1, 1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1);
    const __m256i b2 = M(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15);
#undef M
    int x = 0;
    for (; x + 32 <= w; x += 32) {
        const uint8_t *p = src + 3 * x;
        __m256i a = load2x128(p, p + 48), b = load2x128(p + 16, p + 64), c = load2x128(p + 32, p + 80);
        __m256i r = _mm256_or_si256(_mm256_or_si256(_mm256_shuffle_epi8(a, r0), _mm256_shuffle_epi8(b, r1)),
                                    _mm256_shuffle_epi8(c, r2));
        __m256i g = _mm256_or_si256(_mm256_or_si256(_mm256_shuffle_epi8(a, g0), _mm256_shuffle_epi8(b, g1)),
                                    _mm256_shuffle_epi8(c, g2));
        __m256i bl = _mm256_or_si256(_mm256_or_si256(_mm256_shuffle_epi8(a, b0), _mm256_shuffle_epi8(b, b1)),
                                     _mm256_shuffle_epi8(c, b2));
        _mm256_storeu_si256((__m256i *)(pl[0] + x), r);
        _mm256_storeu_si256((__m256i *)(pl[1] + x), g);
        _mm256_storeu_si256((__m256i *)(pl[2] + x), bl);
    }
    for (; x < w; x++) {
        pl[0][x] = src[3 * x];
        pl[1][x] = src[3 * x + 1];
        pl[2][x] = src[3 * x + 2];
    }
}

/* Y_G = 33039 does not fit an int16 multiplier: split as 16520 + 16519 over
 * two pmaddwd pairs (R, G) and (B, G). */
AVX2 static inline __m256i luma8_avx2(__m256i rg, __m256i bg)
{
    const __m256i crg = _mm256_set1_epi32((16520 << 16) | Y_R);
    const __m256i cbg = _mm256_set1_epi32((16519 << 16) | Y_B);
    const __m256i k = _mm256_set1_epi32((16 << 16) + 32768);
    __m256i s = _mm256_add_epi32(_mm256_madd_epi16(rg, crg), _mm256_madd_epi16(bg, cbg));
    return _mm256_srai_epi32(_mm256_add_epi32(s, k), 16);
}

AVX2 static void conv_luma_avx2(uint8_t *dst, uint8_t *const pl[3], int n)
{
    const __m256i z = _mm256_setzero_si256();
    for (int x = 0; x < n; x += 32) {
        __m256i r = _mm256_loadu_si256((const __m256i *)(pl[0] + x));
        __m256i g = _mm256_loadu_si256((const __m256i *)(pl[1] + x));
        __m256i b = _mm256_loadu_si256((const __m256i *)(pl[2] + x));
        __m256i rl = _mm256_unpacklo_epi8(r, z), rh = _mm256_unpackhi_epi8(r, z);
        __m256i gl = _mm256_unpacklo_epi8(g, z), gh = _mm256_unpackhi_epi8(g, z);
        __m256i bl = _mm256_unpacklo_epi8(b, z), bh = _mm256_unpackhi_epi8(b, z);
        /* all in-lane, so the packs put every pixel back where it came from */
        __m256i lo = _mm256_packs_epi32(
            luma8_avx2(_mm256_unpacklo_epi16(rl, gl), _mm256_unpacklo_epi16(bl, gl)),
            luma8_avx2(_mm256_unpackhi_epi16(rl, gl), _mm256_unpackhi_epi16(bl, gl)));
        __m256i hi = _mm256_packs_epi32(
            luma8_avx2(_mm256_unpacklo_epi16(rh, gh), _mm256_unpacklo_epi16(bh, gh)),
            luma8_avx2(_mm256_unpackhi_epi16(rh, gh), _mm256_unpackhi_epi16(bh, gh)));
        _mm256_storeu_si256((__m256i *)(dst + x), _mm256_packus_epi16(lo, hi));
    }
}

/* pmaddubsw on the byte pairs (p[2cx-1], p[2cx]) with (1, 3) and
 * (p[2cx+1], p[2cx+2]) with (3, 1). */
AVX2 static void conv_hfilter_avx2(uint16_t *const h[3], uint8_t *const pl[3], int cw)
{
    const __m256i k13 = _mm256_set1_epi16(0x0301), k31 = _mm256_set1_epi16(0x0103);
    for (int c = 0; c < 3; c++)
        for (int cx = 0; cx < cw; cx += 16) {
            const uint8_t *p = pl[c] + 2 * cx;
            __m256i a = _mm256_maddubs_epi16(_mm256_loadu_si256((const __m256i *)(p - 1)), k13);
            __m256i b = _mm256_maddubs_epi16(_mm256_loadu_si256((const __m256i *)(p + 1)), k31);
            _mm256_storeu_si256((__m256i *)(h[c] + cx), _mm256_add_epi16(a, b));
        }
}

/* One chroma component of 16 samples from the filtered R, G, B (<= 16320):
 * 128 + round(sum / 2^22), in int16 lanes. */
AVX2 static inline __m256i chroma16_avx2(__m256i r, __m256i g, __m256i b, int cr, int cg, int cb)
{
    const __m256i crg = _mm256_set1_epi32((int32_t)(((uint32_t)(uint16_t)cg << 16) | (uint16_t)cr));
    const __m256i cbz = _mm256_set1_epi32((uint16_t)cb);
    const __m256i half = _mm256_set1_epi32(1 << 21), z = _mm256_setzero_si256();
    __m256i lo = _mm256_add_epi32(_mm256_madd_epi16(_mm256_unpacklo_epi16(r, g), crg),
                                  _mm256_madd_epi16(_mm256_unpacklo_epi16(b, z), cbz));
    __m256i hi = _mm256_add_epi32(_mm256_madd_epi16(_mm256_unpackhi_epi16(r, g), crg),
                                  _mm256_madd_epi16(_mm256_unpackhi_epi16(b, z), cbz));
    lo = _mm256_srai_epi32(_mm256_add_epi32(lo, half), 22);
    hi = _mm256_srai_epi32(_mm256_add_epi32(hi, half), 22);
    return _mm256_add_epi16(_mm256_packs_epi32(lo, hi), _mm256_set1_epi16(128));
}

AVX2 static void conv_vfilter_avx2(uint8_t *dcb, uint8_t *dcr, const uint16_t *const hr[4][3], int cw)
{
    const __m256i lo = _mm256_set1_epi8(16), hi = _mm256_set1_epi8((char)240);
    for (int cx = 0; cx < cw; cx += 16) {
        __m256i v[3];
        for (int c = 0; c < 3; c++) {
            __m256i m = _mm256_add_epi16(_mm256_loadu_si256((const __m256i *)(hr[1][c] + cx)),
                                         _mm256_loadu_si256((const __m256i *)(hr[2][c] + cx)));
            __m256i o = _mm256_add_epi16(_mm256_loadu_si256((const __m256i *)(hr[0][c] + cx)),
                                         _mm256_loadu_si256((const __m256i *)(hr[3][c] + cx)));
            v[c] = _mm256_add_epi16(o, _mm256_add_epi16(m, _mm256_add_epi16(m, m)));
        }
        __m256i cb = chroma16_avx2(v[0], v[1], v[2], CB_R, CB_G, CB_B);
        __m256i cr = chroma16_avx2(v[0], v[1], v[2], CR_R, CR_G, CR_B);
        /* packus interleaves the lanes: cb 0-7, cr 0-7 | cb 8-15, cr 8-15 */
        __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi16(cb, cr), 0xD8);
        p = _mm256_min_epu8(_mm256_max_epu8(p, lo), hi);
        _mm_storeu_si128((__m128i *)(dcb + cx), _mm256_castsi256_si128(p));
        _mm_storeu_si128((__m128i *)(dcr + cx), _mm256_extracti128_si256(p, 1));
    }
}

static const ConvOps conv_ops_avx2 = { conv_planar_avx2, conv_luma_avx2, conv_hfilter_avx2,
                                       conv_vfilter_avx2 };

static void convert_rgb_rows_avx2(MpePicture *pic, const uint8_t *rgb, ptrdiff_t rgb_stride,
                                  int row0, int row1)
{
    for (int row = row0; row < row1; row++)
        convert_band(pic, rgb, rgb_stride, row, &conv_ops_avx2);
}

AVX2 static inline __m256i absdiff16(__m256i a, __m256i b)
{
    return _mm256_or_si256(_mm256_subs_epu16(a, b), _mm256_subs_epu16(b, a));
}

/* Lanes whose bound is <= best, as two mask bits per lane. */
AVX2 static inline unsigned not_above(__m256i lb, __m256i best)
{
    __m256i over = _mm256_subs_epu16(lb, best);
    return (unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi16(over, _mm256_setzero_si256()));
}

/* 16 candidates at a time, in uint16 lanes (bounds stop at 65280 like
 * SADs): the quarters' bound of every candidate of a row against the best
 * at the row's start, one branch for the row (branching on every vector,
 * or on the whole block's bound first, costs more in mispredictions than
 * it saves), then the exact check of try_candidate for the few lanes left. */
AVX2 static void scan_window_avx2(MbSearch *m)
{
    const int ndx = m->dx_hi - m->dx_lo + 1, nvec = (ndx + 15) / 16;
    const unsigned tail = ndx % 16 ? (1u << 2 * (ndx % 16)) - 1 : ~0u;
    const ptrdiff_t ss = m->sstride;
    const __m256i c0 = _mm256_set1_epi16((short)m->c8[0]), c1 = _mm256_set1_epi16((short)m->c8[1]);
    const __m256i c2 = _mm256_set1_epi16((short)m->c8[2]), c3 = _mm256_set1_epi16((short)m->c8[3]);
    unsigned masks[(2 * GPU_MAX_SEARCH_RANGE + 1 + 15) / 16];

    for (int k = 0, n = rows_to_visit(m); k < n; k++) {
        const int dy = m->cy + row_at(k);
        if (dy < m->dy_lo || dy > m->dy_hi)
            continue;
        const uint16_t *t = m->rs + dy * ss + m->dx_lo, *b = t + 8 * ss;
        const __m256i best = _mm256_set1_epi16((short)m->bsad);
        unsigned any = 0;
        for (int v = 0; v < nvec; v++) {
            __m256i l8 = _mm256_add_epi16(
                _mm256_add_epi16(absdiff16(_mm256_loadu_si256((const __m256i *)(t + 16 * v)), c0),
                                 absdiff16(_mm256_loadu_si256((const __m256i *)(t + 16 * v + 8)), c1)),
                _mm256_add_epi16(absdiff16(_mm256_loadu_si256((const __m256i *)(b + 16 * v)), c2),
                                 absdiff16(_mm256_loadu_si256((const __m256i *)(b + 16 * v + 8)), c3)));
            masks[v] = not_above(l8, best) & (v == nvec - 1 ? tail : ~0u);
            any |= masks[v];
        }
        if (!any)
            continue;
        for (int v = 0; v < nvec; v++)
            for (unsigned mk = masks[v]; mk; mk &= mk - 1, mk &= mk - 1) {   /* two bits per lane */
                const int dx = m->dx_lo + 16 * v + (__builtin_ctz(mk) >> 1);
                try_candidate(m, dx, dy, bound8(m, dx, dy));
            }
    }
}

static void motion_search_rows_avx2(const GpuCpuKernels *k, GpuMotion *mv, const MpePicture *cur,
                                    const GpuBlockSums *cur_sums, const MpePicture *ref,
                                    const GpuBlockSums *ref_sums, int range, const GpuMotion *hint,
                                    int row0, int row1)
{
    search_rows(k, mv, cur, cur_sums, ref, ref_sums, range, hint, row0, row1, scan_window_avx2);
}

/* gpu_pyramid_build_c's 2:1 decimation of rows [y0, y1) of dst, 32
 * samples per step: pmaddubsw adds each horizontal pair, the two rows'
 * pairs are added, then the rounding (+2) >> 2; packus works within lanes,
 * so a permute puts the halves back in order. */
AVX2 static void decimate_avx2(uint8_t *dst, int dw, int y0, int y1, const uint8_t *src, ptrdiff_t sstride)
{
    const __m256i ones = _mm256_set1_epi8(1), two = _mm256_set1_epi16(2);
    for (int y = y0; y < y1; y++) {
        const uint8_t *a = src + 2 * y * sstride, *b = a + sstride;
        uint8_t *d = dst + (ptrdiff_t)y * dw;
        int x = 0;
        for (; x + 32 <= dw; x += 32) {
            __m256i s[2];
            for (int i = 0; i < 2; i++) {
                const __m256i ha = _mm256_maddubs_epi16(_mm256_loadu_si256((const __m256i *)(a + 2 * x + 32 * i)), ones);
                const __m256i hb = _mm256_maddubs_epi16(_mm256_loadu_si256((const __m256i *)(b + 2 * x + 32 * i)), ones);
                s[i] = _mm256_srli_epi16(_mm256_add_epi16(_mm256_add_epi16(ha, hb), two), 2);
            }
            _mm256_storeu_si256((__m256i *)(d + x),
                                _mm256_permute4x64_epi64(_mm256_packus_epi16(s[0], s[1]), 0xD8));
        }
        for (; x < dw; x++)
            d[x] = (uint8_t)((a[2 * x] + a[2 * x + 1] + b[2 * x] + b[2 * x + 1] + 2) >> 2);
    }
}

/* A band at a time, so that the pool spreads the pyramid like the other
 * passes, and the 1/4 rows read the 1/2 rows just written (in L1). */
AVX2 static void pyramid_rows_avx2(GpuPyramid *p, const MpePicture *pic, int row0, int row1)
{
    decimate_avx2(p->half, p->hw, 8 * row0, 8 * row1, pic->plane[0], pic->stride[0]);
    decimate_avx2(p->quarter, p->qw, 4 * row0, 4 * row1, p->half, p->hw);
}

/* grid_rows_c with psadbw against zero: each 64-bit lane is a row's 8
 * bytes' sum, so 8 rows added give 4 blocks' sums per 32 bytes.  Where the
 * plane ends 16 bytes into a step the loads reach 16 bytes past it, still
 * inside the row (strides are multiples of 32), and those sums are not
 * stored.  Before: the block sums at every x of those rows, 8 times the
 * work (solar 2048^2: 0.45 -> 0.08 ms a picture). */
AVX2 static void grid_rows_avx2(uint16_t *grid, const MpePicture *pic, int row0, int row1)
{
    const ptrdiff_t stride = pic->stride[0];
    const int pw = pic->plane_w[0], grow = gpu_grid_row(pic);
    const __m256i z = _mm256_setzero_si256();
    for (int y = 16 * row0; y < 16 * row1; y += 8) {
        const uint8_t *src = pic->plane[0] + y * stride;
        uint16_t *out = grid + (y / 8) * grow;
        for (int x = 0; x < pw; x += 32) {
            __m256i acc = z;
            for (int j = 0; j < 8; j++)
                acc = _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_loadu_si256((const __m256i *)(src + j * stride + x)), z));
            out[x / 8] = (uint16_t)_mm256_extract_epi16(acc, 0);
            out[x / 8 + 1] = (uint16_t)_mm256_extract_epi16(acc, 4);
            if (x + 16 < pw) {
                out[x / 8 + 2] = (uint16_t)_mm256_extract_epi16(acc, 8);
                out[x / 8 + 3] = (uint16_t)_mm256_extract_epi16(acc, 12);
            }
        }
    }
}

/* intra_cost_rows_c with psadbw against the mean: two macroblocks side by
 * side per vector (each 128-bit lane against its own mean), one where a
 * row ends on an odd one. */
AVX2 static void intra_cost_rows_avx2(uint32_t *intra, const MpePicture *pic, const uint16_t *grid,
                                      int row0, int row1)
{
    const ptrdiff_t stride = pic->stride[0], grow = gpu_grid_row(pic);
    for (int mby = row0; mby < row1; mby++) {
        const int y0 = 16 * mby;
        const uint8_t *row = pic->plane[0] + y0 * stride;
        uint32_t *out = intra + mby * pic->mb_width;
        int mbx = 0;
        for (; mbx + 2 <= pic->mb_width; mbx += 2) {
            const int x0 = 16 * mbx;
            const int m0 = (int)((mb_sum_of_grid(grid, grow, x0, y0) + 128) >> 8);
            const int m1 = (int)((mb_sum_of_grid(grid, grow, x0 + 16, y0) + 128) >> 8);
            const __m256i flat = _mm256_inserti128_si256(_mm256_set1_epi8((char)m0), _mm_set1_epi8((char)m1), 1);
            __m256i acc = _mm256_setzero_si256();
#pragma GCC unroll 16
            for (int j = 0; j < 16; j++)
                acc = _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_loadu_si256((const __m256i *)(row + j * stride + x0)), flat));
            const __m256i s = _mm256_add_epi64(acc, _mm256_srli_si256(acc, 8));
            out[mbx] = (uint32_t)_mm256_extract_epi32(s, 0);
            out[mbx + 1] = (uint32_t)_mm256_extract_epi32(s, 4);
        }
        if (mbx < pic->mb_width) {
            const int x0 = 16 * mbx;
            const __m128i flat = _mm_set1_epi8((char)((mb_sum_of_grid(grid, grow, x0, y0) + 128) >> 8));
            __m128i acc = _mm_setzero_si128();
            for (int j = 0; j < 16; j++)
                acc = _mm_add_epi64(acc, _mm_sad_epu8(_mm_loadu_si128((const __m128i *)(row + j * stride + x0)), flat));
            out[mbx] = (uint32_t)(_mm_cvtsi128_si32(acc) + _mm_extract_epi16(acc, 4));
        }
    }
}

/* gpu_hier_half_mb with psadbw: an 8x8 SAD is 4 of them (two rows each). */
AVX2 static void half_mb_avx2(GpuMotion *out, const GpuPyramid *cur, const GpuPyramid *ref, int reach,
                              int mbx, int mby, int ux, int uy)
{
    const int w = cur->hw, h = cur->hh, x0 = 8 * mbx, y0 = 8 * mby, lim = reach / 2;
    const int dx_lo = MPE_MAX(MPE_MAX(-x0, -lim), 2 * ux - 2), dx_hi = MPE_MIN(MPE_MIN(w - 8 - x0, lim), 2 * ux + 2);
    const int dy_lo = MPE_MAX(MPE_MAX(-y0, -lim), 2 * uy - 2), dy_hi = MPE_MIN(MPE_MIN(h - 8 - y0, lim), 2 * uy + 2);
    const uint8_t *blk = cur->half + y0 * w + x0;
    __m128i c[4];
    uint32_t bs = UINT32_MAX;
    int bx = 0, by = 0;

    for (int j = 0; j < 4; j++)
        c[j] = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(blk + 2 * j * w)),
                                  _mm_loadl_epi64((const __m128i *)(blk + (2 * j + 1) * w)));
    for (int dy = dy_lo; dy <= dy_hi; dy++)
        for (int dx = dx_lo; dx <= dx_hi; dx++) {
            const uint8_t *r = ref->half + (y0 + dy) * w + x0 + dx;
            __m128i acc = _mm_setzero_si128();
            for (int j = 0; j < 4; j++) {
                const __m128i rr = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(r + 2 * j * w)),
                                                      _mm_loadl_epi64((const __m128i *)(r + (2 * j + 1) * w)));
                acc = _mm_add_epi64(acc, _mm_sad_epu8(c[j], rr));
            }
            const uint32_t sad = (uint32_t)(_mm_cvtsi128_si32(acc) + _mm_extract_epi16(acc, 4));
            if (gpu_mv_better(sad, dx, dy, bs, bx, by)) {
                bs = sad;
                bx = dx;
                by = dy;
            }
        }
    out->dx = (int16_t)(2 * bx);
    out->dy = (int16_t)(2 * by);
    out->sad = bs;
    out->sad0 = 0;
}

/* Stage 2's window for the 4x4 block at (x0, y0): |u| <= lim, the block
 * inside the 1/4 plane (gpu_hier_coarse_rows's). */
static inline void coarse_window(const GpuPyramid *p, int lim, int x0, int y0, int *dx_lo, int *dx_hi,
                                 int *dy_lo, int *dy_hi)
{
    *dx_lo = MPE_MAX(-x0, -lim);
    *dx_hi = MPE_MIN(p->qw - 4 - x0, lim);
    *dy_lo = MPE_MAX(-y0, -lim);
    *dy_hi = MPE_MIN(p->qh - 4 - y0, lim);
}

/* The 4x4 block's SAD at the zero vector (both planes' rows w apart). */
static inline uint32_t sad4x4_zero(const uint8_t *blk, const uint8_t *r, int w)
{
    uint32_t s = 0;
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 4; i++)
            s += absd(blk[j * w + i], r[j * w + i]);
    return s;
}

/* Stage 3 where stage 2 found u = 0: if the 8x8 block's SAD at the zero
 * vector of the 1/2 plane is 0 too, nothing in the window beats it (no
 * smaller SAD, no vector nearer zero): that is stage 3's answer, written
 * to out (returns 1) without the window's 25 SADs.  The still areas of the
 * solar clip, half its macroblocks. */
AVX2 static inline int half_zero_sad(GpuMotion *out, const GpuPyramid *cur, const GpuPyramid *ref, int mbx,
                                     int mby)
{
    const int w = cur->hw;
    const uint8_t *a = cur->half + 8 * mby * w + 8 * mbx, *b = ref->half + 8 * mby * w + 8 * mbx;
    __m128i acc = _mm_setzero_si128();
    for (int j = 0; j < 8; j += 2)
        acc = _mm_or_si128(acc, _mm_sad_epu8(_mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(a + j * w)),
                                                                _mm_loadl_epi64((const __m128i *)(a + (j + 1) * w))),
                                             _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(b + j * w)),
                                                                _mm_loadl_epi64((const __m128i *)(b + (j + 1) * w)))));
    if (!_mm_testz_si128(acc, acc))
        return 0;
    *out = (GpuMotion){ .dx = 0, .dy = 0, .sad = 0, .sad0 = 0 };
    return 1;
}

/* Each row of the 4x4 block as a dword in every dword of c[row]. */
AVX2 static inline void block_rows_dwords(__m256i c[4], const uint8_t *blk, int w)
{
    for (int j = 0; j < 4; j++) {
        int32_t v;
        memcpy(&v, blk + j * w, 4);
        c[j] = _mm256_set1_epi32(v);
    }
}

/* Stage 2 (the 1/4 resolution 4x4 blocks) with mpsadbw: 16 candidates of
 * a row in 4 instructions; of those, only the one that is best under the
 * tie-break order (the minimum SAD, nearest to dx = 0) is checked against
 * the best so far, so the minimum is the reference's and flat areas, where
 * every lane ties, cost one check per 16 candidates.  Stage 3 is small:
 * the reference's own code. */
AVX2 static void coarse_rows_avx2(GpuMotion *coarse, const GpuPyramid *cur, const GpuPyramid *ref,
                                  int mb_w, int reach, int row0, int row1)
{
    const int w = cur->qw, lim = reach / 4;

    for (int mby = row0; mby < row1; mby++)
        for (int mbx = 0; mbx < mb_w; mbx++) {
            const int x0 = 4 * mbx, y0 = 4 * mby;
            int dx_lo, dx_hi, dy_lo, dy_hi;
            coarse_window(cur, lim, x0, y0, &dx_lo, &dx_hi, &dy_lo, &dy_hi);
            const uint8_t *blk = cur->quarter + y0 * w + x0;
            __m256i c[4];
            /* the zero vector first (always in the window): SAD 0 there
             * cannot be beaten (every other vector is farther from zero),
             * so the window is not scanned -- about half the macroblocks
             * of the solar clip, 35 % of the cpu front end's time */
            uint32_t bs = sad4x4_zero(blk, ref->quarter + y0 * w + x0, w);
            int bx = 0, by = 0;
            if (!bs) {
                if (!half_zero_sad(&coarse[mby * mb_w + mbx], cur, ref, mbx, mby))
                    half_mb_avx2(&coarse[mby * mb_w + mbx], cur, ref, reach, mbx, mby, 0, 0);
                continue;
            }
            const __m256i lane = _mm256_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
            block_rows_dwords(c, blk, w);
            for (int dy = dy_lo; dy <= dy_hi; dy++) {
                const uint8_t *r = ref->quarter + (y0 + dy) * w + x0;
                for (int dx = dx_lo; dx <= dx_hi; dx += 16) {
                    __m256i sad = _mm256_setzero_si256();
                    for (int j = 0; j < 4; j++) {
                        const uint8_t *p = r + j * w + dx;
                        sad = _mm256_add_epi16(sad, _mm256_mpsadbw_epu8(load2x128(p, p + 8), c[j], 0));
                    }
                    /* lanes past the window get the largest SAD: never the minimum */
                    const int n = MPE_MIN(16, dx_hi - dx + 1);
                    sad = _mm256_or_si256(sad, _mm256_cmpgt_epi16(lane, _mm256_set1_epi16((short)(n - 1))));
                    const __m128i m8 = _mm_min_epu16(_mm256_castsi256_si128(sad),
                                                     _mm256_extracti128_si256(sad, 1));
                    const unsigned m = (unsigned)_mm_extract_epi16(_mm_minpos_epu16(m8), 0);
                    if (m > bs)
                        continue;
                    /* of the lanes at the row's minimum (2 mask bits each)
                     * the best under the tie-break (same dy: the smaller
                     * |dx|, then the smaller dx) is the nearest to dx = 0
                     * from below or above: only it can beat the best */
                    const unsigned eq = (unsigned)_mm256_movemask_epi8(
                        _mm256_cmpeq_epi16(sad, _mm256_set1_epi16((short)m)));
                    const int l0 = -dx;   /* the lane of dx = 0 */
                    const unsigned below = l0 < 0 ? 0u : l0 >= 15 ? ~0u : (1u << 2 * (l0 + 1)) - 1;
                    int l;
                    if (!(eq & below))
                        l = __builtin_ctz(eq) >> 1;
                    else if (!(eq & ~below))
                        l = (31 - __builtin_clz(eq & below)) >> 1;
                    else {
                        const int ln = (31 - __builtin_clz(eq & below)) >> 1;
                        const int lp = __builtin_ctz(eq & ~below) >> 1;
                        l = -(dx + ln) <= dx + lp ? ln : lp;
                    }
                    if (gpu_mv_better(m, dx + l, dy, bs, bx, by)) {
                        bs = m;
                        bx = dx + l;
                        by = dy;
                    }
                }
            }
            half_mb_avx2(&coarse[mby * mb_w + mbx], cur, ref, reach, mbx, mby, bx, by);
        }
}

static void hier_final_rows_avx2(const GpuCpuKernels *k, GpuMotion *mv, const MpePicture *cur,
                                      const GpuBlockSums *cur_sums, const MpePicture *ref,
                                      const GpuBlockSums *ref_sums, const GpuMotion *coarse,
                                      const GpuMotion *prev, int range, int reach, int row0, int row1)
{
    hier_rows(k, mv, cur, cur_sums, ref, ref_sums, coarse, prev, range, reach, row0, row1,
              scan_window_avx2);
}

/* ------------------------------------------------------------ AVX-512
 *
 * Stages 2-3 with vdbpsadbw (AVX-512 BW, on 256-bit vectors): against a
 * block dword broadcast to every dword, each 64-bit chunk gives the SADs
 * of that dword at 4 consecutive offsets, 16 per instruction, for about a
 * third of the cost of vmpsadbw's 16 (Zen 4).  Each lane keeps the best
 * vector of its own dx: the first of its smallest SADs, the rows visited
 * in the tie-break order (dy 0, -1, 1, -2 ...: for one dx, |dx| + |dy|
 * then dy decide); only the lanes at the window's minimum are compared
 * under gpu_mv_better at the end: no reduction per row. */

#define AVX512 __attribute__((target("avx2,avx512f,avx512bw,avx512vl")))

/* The best of the lanes set in `lanes` (their SAD is m, dy in bdy[]) into
 * (bs, bx, by) under gpu_mv_better; lane i's dx is dx0 + off[i]. */
static void lanes_fold(unsigned lanes, uint32_t m, const int16_t *bdy, int dx0, const int8_t *off,
                       uint32_t *bs, int *bx, int *by)
{
    for (; lanes; lanes &= lanes - 1) {
        const int i = __builtin_ctz(lanes), dx = dx0 + off[i];
        if (gpu_mv_better(m, dx, bdy[i], *bs, *bx, *by)) {
            *bs = m;
            *bx = dx;
            *by = bdy[i];
        }
    }
}

AVX512 static uint32_t hmin_epu16(__m256i v)
{
    const __m128i m8 = _mm_min_epu16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    return (uint32_t)_mm_extract_epi16(_mm_minpos_epu16(m8), 0);
}

/* gpu_hier_half_mb: two block rows per vector (one per 128-bit lane), each
 * half row against 8 offsets in one vdbpsadbw (shuffle 0x94: dwords
 * 0,1,1,2, offsets 0..7 of the left half; 0xE9: 1,2,2,3, the right half's
 * offsets 0..7, 4 bytes further on). */
AVX512 static void half_mb_avx512(GpuMotion *out, const GpuPyramid *cur, const GpuPyramid *ref,
                                  int reach, int mbx, int mby, int ux, int uy)
{
    static const int8_t off[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    const int w = cur->hw, h = cur->hh, x0 = 8 * mbx, y0 = 8 * mby, lim = reach / 2;
    const int dx_lo = MPE_MAX(MPE_MAX(-x0, -lim), 2 * ux - 2), dx_hi = MPE_MIN(MPE_MIN(w - 8 - x0, lim), 2 * ux + 2);
    const int dy_lo = MPE_MAX(MPE_MAX(-y0, -lim), 2 * uy - 2), dy_hi = MPE_MIN(MPE_MIN(h - 8 - y0, lim), 2 * uy + 2);
    const uint8_t *blk = cur->half + y0 * w + x0;
    const __mmask16 valid = (__mmask16)((1u << (dx_hi - dx_lo + 1)) - 1);
    __m256i cl[4], cr[4];
    __m128i best = _mm_set1_epi16(-1), bdy = _mm_setzero_si128();

    /* unrolled (here and in the rows' loop): GCC kept cl[], cr[] in
     * memory otherwise, a store and reload per use */
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        const __m256i rows = _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadl_epi64((const __m128i *)(blk + 2 * j * w))),
            _mm_loadl_epi64((const __m128i *)(blk + (2 * j + 1) * w)), 1);
        cl[j] = _mm256_shuffle_epi32(rows, 0x00);
        cr[j] = _mm256_shuffle_epi32(rows, 0x55);
    }
    /* rows in the tie-break order: |dy| ascending, -dy before dy */
    int order[5], n = 0;
    if (dy_lo >= 0 || dy_hi <= 0)
        for (; n < dy_hi - dy_lo + 1; n++)
            order[n] = dy_lo >= 0 ? dy_lo + n : dy_hi - n;
    else
        for (int a = 0; n < dy_hi - dy_lo + 1; a++) {
            if (-a >= dy_lo)
                order[n++] = -a;
            if (a && a <= dy_hi)
                order[n++] = a;
        }
    for (int i = 0; i < n; i++) {
        const int dy = order[i];
        const uint8_t *r = ref->half + (y0 + dy) * w + x0 + dx_lo;
        __m256i s = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            const __m256i rr = load2x128(r + 2 * j * w, r + (2 * j + 1) * w);
            s = _mm256_add_epi16(s, _mm256_add_epi16(_mm256_dbsad_epu8(cl[j], rr, 0x94),
                                                     _mm256_dbsad_epu8(cr[j], rr, 0xE9)));
        }
        const __m128i s8 = _mm_add_epi16(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
        const __mmask8 lt = _mm_mask_cmplt_epu16_mask((__mmask8)valid, s8, best);
        best = _mm_mask_mov_epi16(best, lt, s8);
        bdy = _mm_mask_mov_epi16(bdy, lt, _mm_set1_epi16((short)dy));
    }
    alignas(16) int16_t bd[8];
    _mm_store_si128((__m128i *)bd, bdy);
    const uint32_t m = (uint32_t)_mm_extract_epi16(_mm_minpos_epu16(best), 0);
    uint32_t bs = UINT32_MAX;
    int bx = 0, by = 0;
    lanes_fold((unsigned)_mm_cmpeq_epi16_mask(best, _mm_set1_epi16((short)m)) & valid, m, bd, dx_lo,
               off, &bs, &bx, &by);
    out->dx = (int16_t)(2 * bx);
    out->dy = (int16_t)(2 * by);
    out->sad = bs;
    out->sad0 = 0;
}

/* The SADs of the 4x4 block c[] at 16 offsets of the 32 bytes at r (rows
 * w apart): 0-3, 8-11, 16-19, 24-27 from r (so 4, 5 ... from r + 4). */
AVX512 static inline __m256i sad4x4_16(const __m256i c[4], const uint8_t *r, int w)
{
    const __m256i s01 = _mm256_add_epi16(
        _mm256_dbsad_epu8(c[0], _mm256_loadu_si256((const __m256i *)r), 0xE4),
        _mm256_dbsad_epu8(c[1], _mm256_loadu_si256((const __m256i *)(r + w)), 0xE4));
    const __m256i s23 = _mm256_add_epi16(
        _mm256_dbsad_epu8(c[2], _mm256_loadu_si256((const __m256i *)(r + 2 * w)), 0xE4),
        _mm256_dbsad_epu8(c[3], _mm256_loadu_si256((const __m256i *)(r + 3 * w)), 0xE4));
    return _mm256_add_epi16(s01, s23);
}

/* Every row of the window, nv (2 or 4: a constant where inlined) vectors
 * of 16 offsets each: each lane's first smallest SAD, rows in the
 * tie-break order, into best[] and its dy into bdy[]. */
AVX512 static inline __attribute__((always_inline)) void
coarse_window_rows(__m256i best[4], __m256i bdy[4], const __mmask16 valid[4], const __m256i c[4],
                   const uint8_t *r0, int w, int dy_lo, int dy_hi, const int nv)
{
    /* the window holds dy = 0: rows 0, -1, 1, -2 ... (row_at) */
    const int rows = 2 * MPE_MAX(-dy_lo, dy_hi) + 1;
    for (int k = 0; k < rows; k++) {
        const int dy = row_at(k);
        if (dy < dy_lo || dy > dy_hi)
            continue;
        const uint8_t *r = r0 + dy * w;
        const __m256i dyv = _mm256_set1_epi16((short)dy);
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            const __m256i sad = sad4x4_16(c, r + 32 * (v >> 1) + 4 * (v & 1), w);
            const __mmask16 lt = _mm256_mask_cmplt_epu16_mask(valid[v], sad, best[v]);
            best[v] = _mm256_mask_mov_epi16(best[v], lt, sad);
            bdy[v] = _mm256_mask_mov_epi16(bdy[v], lt, dyv);
        }
    }
}

/* Stage 2: 64 offsets of a row per step, in 4 vectors of 16 lanes
 * (sad4x4_16 at r, r + 4, r + 32, r + 36).  The loads reach 67 bytes past
 * the step's first offset, and never more than 31 past the plane's last
 * byte (the last candidate lies at most at w - 4; a step's second half,
 * where the window ends before it, is not read): inside the pyramid's
 * slack. */
AVX512 static void coarse_rows_avx512(GpuMotion *coarse, const GpuPyramid *cur, const GpuPyramid *ref,
                                      int mb_w, int reach, int row0, int row1)
{
    static const int8_t off[4][16] = {
        { 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27 },
        { 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31 },
        { 32, 33, 34, 35, 40, 41, 42, 43, 48, 49, 50, 51, 56, 57, 58, 59 },
        { 36, 37, 38, 39, 44, 45, 46, 47, 52, 53, 54, 55, 60, 61, 62, 63 },
    };
    const int w = cur->qw, lim = reach / 4;
    __m256i lane[4];

    for (int v = 0; v < 4; v++)
        lane[v] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)off[v]));
    for (int mby = row0; mby < row1; mby++)
        for (int mbx = 0; mbx < mb_w; mbx++) {
            const int x0 = 4 * mbx, y0 = 4 * mby;
            int dx_lo, dx_hi, dy_lo, dy_hi;
            coarse_window(cur, lim, x0, y0, &dx_lo, &dx_hi, &dy_lo, &dy_hi);
            const uint8_t *blk = cur->quarter + y0 * w + x0;
            /* SAD 0 at the zero vector cannot be beaten (as coarse_rows_avx2) */
            uint32_t bs = sad4x4_zero(blk, ref->quarter + y0 * w + x0, w);
            int bx = 0, by = 0;
            if (!bs) {
                if (!half_zero_sad(&coarse[mby * mb_w + mbx], cur, ref, mbx, mby))
                    half_mb_avx512(&coarse[mby * mb_w + mbx], cur, ref, reach, mbx, mby, 0, 0);
                continue;
            }
            __m256i c[4];
            block_rows_dwords(c, blk, w);
            bs = UINT32_MAX;
            for (int dx = dx_lo; dx <= dx_hi; dx += 64) {
                const __m256i left = _mm256_set1_epi16((short)(dx_hi - dx));
                __mmask16 valid[4];
                __m256i best[4], bdy[4];
                for (int v = 0; v < 4; v++) {
                    valid[v] = _mm256_cmple_epi16_mask(lane[v], left);
                    best[v] = _mm256_set1_epi16(-1);
                    bdy[v] = _mm256_setzero_si256();
                }
                if (dx_hi - dx >= 32)
                    coarse_window_rows(best, bdy, valid, c, ref->quarter + y0 * w + x0 + dx, w, dy_lo, dy_hi, 4);
                else
                    coarse_window_rows(best, bdy, valid, c, ref->quarter + y0 * w + x0 + dx, w, dy_lo, dy_hi, 2);
                const uint32_t m = hmin_epu16(_mm256_min_epu16(_mm256_min_epu16(best[0], best[1]),
                                                               _mm256_min_epu16(best[2], best[3])));
                if (m > bs)
                    continue;
                for (int v = 0; v < 4; v++) {
                    alignas(32) int16_t bd[16];
                    _mm256_store_si256((__m256i *)bd, bdy[v]);
                    lanes_fold(_mm256_cmpeq_epi16_mask(best[v], _mm256_set1_epi16((short)m)) & valid[v],
                               m, bd, dx, off[v], &bs, &bx, &by);
                }
            }
            half_mb_avx512(&coarse[mby * mb_w + mbx], cur, ref, reach, mbx, mby, bx, by);
        }
}

#endif /* MPE_ARCH_X86 */

void gpu_cpu_kernels_init(GpuCpuKernels *k, unsigned cpu_flags)
{
    k->name = "c";
    mpe_sad_dsp_init(&k->sad, cpu_flags);
    k->convert_rgb_rows = convert_rgb_rows_c;
    k->motion_search_rows = motion_search_rows_c;
    k->hier_final_rows = hier_final_rows_c;
    k->coarse_rows = gpu_hier_coarse_rows;
    k->pyramid_rows = gpu_pyramid_rows_c;
    k->grid_rows = grid_rows_c;
    k->intra_cost_rows = intra_cost_rows_c;
#ifdef MPE_ARCH_X86
    if (cpu_flags & MPE_CPU_SSE2)
        k->name = "sse2";
    if (cpu_flags & MPE_CPU_AVX2) {
        k->name = "avx2";
        k->convert_rgb_rows = convert_rgb_rows_avx2;
        k->motion_search_rows = motion_search_rows_avx2;
        k->hier_final_rows = hier_final_rows_avx2;
        k->coarse_rows = coarse_rows_avx2;
        k->pyramid_rows = pyramid_rows_avx2;
        k->grid_rows = grid_rows_avx2;
        k->intra_cost_rows = intra_cost_rows_avx2;
    }
    if (cpu_flags & MPE_CPU_AVX512) {
        k->name = "avx512";
        k->coarse_rows = coarse_rows_avx512;
    }
#endif
}
