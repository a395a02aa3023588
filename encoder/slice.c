#include "slice.h"

#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "bitstream/mpeg12.h"
#include "dsp/quant.h"
#include "dsp/trellis.h"

/* Mode decision biases, in luma SAD units over 256 pixels.  Intra is chosen
 * only when its activity beats the best prediction clearly (intra blocks cost
 * more bits at equal distortion), and the zero vector is preferred when it
 * is almost as good because it costs no vector bits and enables skipping. */
#define INTRA_BIAS 512
#define ZERO_MV_BIAS 64

/* Prediction directions: forward from pc->ref, backward from pc->ref_bwd
 * (B pictures); a B macroblock's mode is a set of them (MODE_FWD |
 * MODE_BWD: interpolated). */
enum { DIR_FWD = 0, DIR_BWD = 1 };
enum { MODE_FWD = 1, MODE_BWD = 2, MODE_INTRA = 4 };

typedef struct SliceState {
    int dc_pred[3];       /* intra DC predictors, in DC-level units (reset 128 << intra_dc_precision) */
    int pmv[2][2];        /* [direction] motion vector predictors, half-pel */
    int prev_addr;        /* macroblock address of the last coded macroblock */
    int prev_mode;        /* B: MODE_* of the last macroblock (skipped ones inherit it);
                             0 at the slice start */
    int q;                /* quantiser in force (slice header, or the last quant flag) */
    int64_t table_bits[2];  /* --intra-vlc auto: the intra blocks' AC bits in table zero, one */
} SliceState;

static const MpePicture *dir_ref(const MpePictureCtx *pc, int dir)
{
    return dir == DIR_FWD ? pc->ref : pc->ref_bwd;
}

static int dir_f_code(const MpePictureCtx *pc, int dir)
{
    return dir == DIR_FWD ? pc->f_code : pc->f_code_bwd;
}

/* A vector is usable when its prediction reads only inside the padded
 * reference (which is what the decoder has) and it fits the f_code range.
 * For the macroblock at (x0, y0) those are a box of vectors: a half-pel
 * position p reads samples p >> 1 .. (p >> 1) + 15 + (p & 1), inside a
 * plane of size n exactly when 0 <= p <= 2 (n - 16). */
typedef struct VectorBox {
    int lo[2], hi[2];
} VectorBox;

static VectorBox vector_box(const MpePictureCtx *pc, int dir, int x0, int y0)
{
    const int f = 1 << (dir_f_code(pc, dir) - 1);
    const MpePicture *ref = dir_ref(pc, dir);
    const VectorBox b = { { MPE_MAX(-16 * f, -2 * x0), MPE_MAX(-16 * f, -2 * y0) },
                          { MPE_MIN(16 * f - 1, 2 * (ref->plane_w[0] - 16 - x0)),
                            MPE_MIN(16 * f - 1, 2 * (ref->plane_h[0] - 16 - y0)) } };
    return b;
}

static int in_box(const VectorBox *b, int vx, int vy)
{
    return vx >= b->lo[0] && vx <= b->hi[0] && vy >= b->lo[1] && vy <= b->hi[1];
}

static int vector_valid(const MpePictureCtx *pc, int dir, int x0, int y0, int vx, int vy)
{
    const VectorBox b = vector_box(pc, dir, x0, y0);
    return in_box(&b, vx, vy);
}

/* The 6 prediction blocks (Y 16x16, Cb, Cr 8x8) for vector (vx, vy) from
 * direction dir's reference; luma only where pred_c is NULL. */
static void predict_macroblock(const MpePictureCtx *pc, int dir, int mbx, int mby, int vx, int vy,
                               uint8_t pred_y[256], uint8_t pred_c[2][64])
{
    const MpePicture *ref = dir_ref(pc, dir);
    /* chroma vector: luma vector / 2, truncated towards zero (§7.6.3.7) */
    const int cvx = vx / 2, cvy = vy / 2;

    pc->dsp->predict(pred_y, 16, ref->plane[0], ref->stride[0], 32 * mbx + vx, 32 * mby + vy, 16,
                  16);
    for (int c = 0; pred_c && c < 2; c++)
        pc->dsp->predict(pred_c[c], 8, ref->plane[c + 1], ref->stride[c + 1], 16 * mbx + cvx,
                      16 * mby + cvy, 8, 8);
}

/* Pointer to 8x8 block b (0..3 luma raster, 4 Cb, 5 Cr) of a macroblock
 * (inlined: a call for each of 1.1 M blocks at solar q 2 was 1.3 % of the
 * code stage's instructions). */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline uint8_t *block_ptr(const MpePicture *pic, int mbx, int mby, int b, int *stride)
{
    int c = b < 4 ? 0 : b - 3;
    int x = b < 4 ? 16 * mbx + 8 * (b & 1) : 8 * mbx;
    int y = b < 4 ? 16 * mby + 8 * (b >> 1) : 8 * mby;
    *stride = pic->stride[c];
    return pic->plane[c] + y * pic->stride[c] + x;
}

static const uint8_t *pred_ptr(const uint8_t pred_y[256], const uint8_t pred_c[2][64], int b,
                               int *stride)
{
    if (b < 4) {
        *stride = 16;
        return pred_y + 8 * (b >> 1) * 16 + 8 * (b & 1);
    }
    *stride = 8;
    return pred_c[b - 4];
}

static void to_scan(const MpePictureCtx *pc, int16_t scan[64], const int16_t level[64])
{
    const uint8_t *inv = pc->scan == mpe_zigzag           ? mpe_zigzag_inv
                         : pc->scan == mpe_alternate_scan ? mpe_alternate_scan_inv
                                                          : NULL;
    if (!inv) {
        for (int i = 0; i < 64; i++)
            scan[i] = level[pc->scan[i]];
        return;
    }
    /* most levels are zero (a third of an I picture's blocks are DC only):
     * only the non-zero ones move */
    mpe_block_zero(scan);
    for (uint64_t m = bs_nonzero_mask(level); m; m &= m - 1) {
        const int pos = __builtin_ctzll(m);
        scan[inv[pos]] = level[pos];
    }
}

/* coded_block_pattern, then the blocks it names (non-intra VLCs) */
static void write_coded_blocks(const MpePictureCtx *pc, int cbp, int16_t level[6][64], BsWriter *bw)
{
    bs_put(bw, bs_vlc_cbp[cbp].len, bs_vlc_cbp[cbp].code);
    for (int b = 0; b < 6; b++) {
        if (cbp & (1 << (5 - b))) {
            int16_t scan[64];
            to_scan(pc, scan, level[b]);
            pc->dsp->write_inter_block(bw, scan, pc->mpeg2);
        }
    }
}

/* 13818-2 Table 7-2: the predictors restart at half the DC range */
static void reset_dc(const MpePictureCtx *pc, SliceState *st)
{
    st->dc_pred[0] = st->dc_pred[1] = st->dc_pred[2] = 128 << pc->dc_precision;
}

/* The trellis's choice of levels for a block the plain quantiser has put in
 * level[] (see dsp/trellis.h); returns the non-zero count as the quantisers
 * do (AC only for intra). */
static int trellis_block(const MpePictureCtx *pc, int16_t level[64], const int16_t coef[64],
                         int intra)
{
    const MpeTrellisParams tp = {
        .intra = intra,
        .mpeg2 = pc->mpeg2,
        .table = pc->intra_vlc_table,
        .scan = pc->scan,
        .qscale = pc->qscale,
        .matrix = intra ? pc->quant->intra_matrix : pc->quant->inter_matrix,
        .max_level = pc->quant->max_level,
        .lambda = mpe_trellis_lambda(pc->qscale, pc->trellis_c),
        .candidates = pc->dsp->trellis_candidates,
    };
    return mpe_trellis_quant(level, coef, &tp);
}

static void code_intra_mb(const MpePictureCtx *pc, SliceState *st, int mbx, int mby, BsWriter *bw)
{
    for (int b = 0; b < 6; b++) {
        int16_t blk[64], level[64], scan[64];
        int stride, rstride;
        const uint8_t *src = block_ptr(pc->orig, mbx, mby, b, &stride);
        uint8_t *rec = block_ptr(pc->recon, mbx, mby, b, &rstride);
        int comp = b < 4 ? 0 : b - 3;

        pc->dsp->get_pixels(blk, src, stride);
        /* a flat block (background) has only a DC: no transform, and no
         * AC candidate for the trellis (every AC coefficient is 0) */
        const int flat = mpe_fdct_flat(blk);
        if (!flat)
            pc->dsp->fdct(blk);
        pc->dsp->quant_intra(level, blk, pc->quant);
        if (pc->dc_precision)
            level[0] = (int16_t)mpe_quant_intra_dc(blk[0], pc->dc_precision);
        if (pc->trellis_c) {
            if (!flat)
                trellis_block(pc, level, blk, 1);
            level[0] = (int16_t)mpe_trellis_intra_dc(blk[0], level[0], st->dc_pred[comp], comp != 0,
                                                     pc->dc_precision,
                                                     mpe_trellis_lambda(pc->qscale, pc->trellis_c));
        }
        to_scan(pc, scan, level);
        pc->dsp->write_intra_block(bw, scan, level[0] - st->dc_pred[comp], comp != 0, pc->mpeg2,
                                   pc->intra_vlc_table);
        if (pc->count_intra_tables) {
            int bits[2];
            mpe_trellis_intra_bits_both_scan(scan, 1, bits);
            st->table_bits[BS_DCT_TABLE_ZERO] += bits[BS_DCT_TABLE_ZERO];
            st->table_bits[BS_DCT_TABLE_ONE] += bits[BS_DCT_TABLE_ONE];
        }
        st->dc_pred[comp] = level[0];

        if (pc->bits_only)
            continue;
        pc->dsp->dequant_intra(blk, level, pc->qscale, pc->quant->intra_matrix, pc->mpeg2,
                               pc->dc_precision);
        if (!mpe_idct_sparse(blk))   /* DC only: one value, no transform */
            pc->dsp->idct(blk);
        pc->dsp->put_pixels(rec, rstride, blk);
    }
}

/* Residual of each block against the prediction, transformed and quantised;
 * returns the coded_block_pattern (block 0 in bit 5).  level[b] is
 * meaningful only for the blocks the pattern names (the only ones read:
 * clearing 128 bytes for each zero block took 40 % of this function's
 * time as a rep stos). */
static int quantise_inter_mb(const MpePictureCtx *pc, int mbx, int mby,
                             const uint8_t pred_y[256], const uint8_t pred_c[2][64],
                             int16_t level[6][64])
{
    int cbp = 0;

    /* A block whose levels are certainly all zero (mpe_quant_inter_all_zero)
     * skips the transform without changing a single bit: most of a static
     * background, and most noise-only residuals, take this path. */
    const int qw = pc->qscale * pc->quant->inter_wmin;
    for (int b = 0; b < 6; b++) {
        int16_t blk[64];
        int stride, pstride;
        const uint8_t *src = block_ptr(pc->orig, mbx, mby, b, &stride);
        const uint8_t *p = pred_ptr(pred_y, pred_c, b, &pstride);
        const uint32_t sum_abs = pc->dsp->diff_pixels(blk, src, stride, p, pstride);
        int32_t sum = 0;
        /* the energy only where the cheaper bound leaves it open */
        const uint32_t sum_sq = 2 * (int64_t)sum_abs + 8 <= qw ? 0 : pc->dsp->block_energy(blk, &sum);

        if (mpe_quant_inter_all_zero(sum_abs, sum, sum_sq, qw) ||
            mpe_quant_inter_zero_by_bound(pc->dsp->fdct_bound(blk), sum_abs, qw))
            continue;   /* level[b] left as it was: only coded blocks' are read */
        pc->dsp->fdct(blk);
        /* the trellis only revisits blocks with a non-zero plain level: a
         * lone level 1 from the dead zone's upper part never pays for its
         * codes and the coded_block_pattern */
        int nz = pc->dsp->quant_inter(level[b], blk, pc->quant);
        if (nz && pc->trellis_c)
            nz = trellis_block(pc, level[b], blk, 0);
        if (nz)
            cbp |= 1 << (5 - b);
    }
    return cbp;
}

static void reconstruct_inter_mb(const MpePictureCtx *pc, int mbx, int mby,
                                 const uint8_t pred_y[256], const uint8_t pred_c[2][64],
                                 int16_t level[6][64], int cbp)
{
    if (pc->bits_only)
        return;
    if (!cbp) {   /* nothing coded: the prediction itself, a row of each plane at a time */
        const MpePicture *r = pc->recon;
        const ptrdiff_t ys = r->stride[0], us = r->stride[1], vs = r->stride[2];
        uint8_t *dy = r->plane[0] + 16 * mby * ys + 16 * mbx;
        uint8_t *du = r->plane[1] + 8 * mby * us + 8 * mbx, *dv = r->plane[2] + 8 * mby * vs + 8 * mbx;
        for (int y = 0; y < 16; y++)
            memcpy(dy + y * ys, pred_y + 16 * y, 16);
        for (int y = 0; y < 8; y++) {
            memcpy(du + y * us, pred_c[0] + 8 * y, 8);
            memcpy(dv + y * vs, pred_c[1] + 8 * y, 8);
        }
        return;
    }
    for (int b = 0; b < 6; b++) {
        int16_t blk[64];
        int rstride, pstride;
        uint8_t *rec = block_ptr(pc->recon, mbx, mby, b, &rstride);
        const uint8_t *p = pred_ptr(pred_y, pred_c, b, &pstride);

        if (cbp & (1 << (5 - b))) {
            pc->dsp->dequant_inter(blk, level[b], pc->qscale, pc->quant->inter_matrix, pc->mpeg2);
            if (!mpe_idct_sparse(blk))
                pc->dsp->idct(blk);
            pc->dsp->add_pixels(rec, rstride, p, pstride, blk);
        } else {
            for (int y = 0; y < 8; y++)   /* nothing coded: the prediction itself */
                memcpy(rec + y * rstride, p + y * pstride, 8);
        }
    }
}

/* The difference to the predictor, wrapped into the f_code range (§7.6.3.1). */
static int wrap_delta(int f_code, int v, int pred)
{
    const int f = 1 << (f_code - 1);
    int delta = v - pred;
    if (delta < -16 * f)
        delta += 32 * f;
    else if (delta > 16 * f - 1)
        delta -= 32 * f;
    return delta;
}

static void write_vector(const MpePictureCtx *pc, SliceState *st, int dir, int vx, int vy,
                         BsWriter *bw)
{
    const int v[2] = { vx, vy };
    const int f_code = dir_f_code(pc, dir);
    for (int i = 0; i < 2; i++) {
        bs_write_motion_delta(bw, wrap_delta(f_code, v[i], st->pmv[dir][i]), f_code);
        st->pmv[dir][i] = v[i];
    }
}

/* Bits of a vector against the predictor. */
static int vector_bits(const MpePictureCtx *pc, const int pmv[2], int dir, int vx, int vy)
{
    const int f_code = dir_f_code(pc, dir);
    return bs_motion_delta_bits(wrap_delta(f_code, vx, pmv[0]), f_code) +
           bs_motion_delta_bits(wrap_delta(f_code, vy, pmv[1]), f_code);
}

/* The best candidate so far of choose_vector: least cost, ties broken by
 * gpu_mv_better (a strict total order over distinct vectors, so the
 * order of visits never changes the choice). */
typedef struct VectorChoice {
    uint32_t cost, sad;
    int vx, vy;
} VectorChoice;

static inline void consider_vector(VectorChoice *b, uint32_t sad, uint32_t rate, int vx, int vy)
{
    const uint32_t cost = sad + rate;
    if (cost < b->cost || (cost == b->cost && gpu_mv_better(sad, vx, vy, b->sad, b->vx, b->vy))) {
        b->cost = cost;
        b->sad = sad;
        b->vx = vx;
        b->vy = vy;
    }
}

/* Rate-constrained choice of the vector, against the RECONSTRUCTED
 * reference: the 9 half-pel positions around the front end's full-pel
 * vector and the predictor itself, each costing SAD + lambda * bits of its
 * difference to the predictor.  lambda = the quantiser (MPEG-1 units): a
 * bit is worth about that much SAD at the rate the residual is coded
 * (x264's SAD lambda, 2^((QP-12)/6), is 0.8 q for H.264's QP of the same
 * step size).  Without it the search spends most of a P picture's bits on
 * vectors that win by a SAD of a few units; with a coarse quantiser it
 * smooths the field further, which the rate control uses as a step.
 * *out_sad_at (where not NULL): the SAD of vector at where it was among
 * those measured, else UINT32_MAX. */
static uint32_t choose_vector(const MpePictureCtx *pc, const int pmv[2], int dir, int mbx,
                              int mby, const GpuMotion *m, int *out_vx, int *out_vy,
                              uint32_t *out_cost, const int at[2], uint32_t *out_sad_at,
                              int one_by_one)
{
    const MpePicture *ref = dir_ref(pc, dir);
    const ptrdiff_t sstride = pc->orig->stride[0], rstride = ref->stride[0];
    const uint8_t *src = pc->orig->plane[0] + 16 * mby * sstride + 16 * mbx;
    const uint32_t lambda = (uint32_t)pc->qscale;
    VectorChoice best = { UINT32_MAX, UINT32_MAX, 0, 0 };
    /* the nine around the full-pel vector in one pass (hpel_sads) where
     * all of its reads lie inside the plane, else one by one */
    const int fx = 16 * mbx + m->dx, fy = 16 * mby + m->dy;
    const uint8_t *full = ref->plane[0] + fy * rstride + fx;
    const int nine_inside = fx >= 1 && fy >= 1 && fx + 17 <= ref->plane_w[0] &&
                            fy + 17 <= ref->plane_h[0];
    /* the nine share three horizontal and three vertical components: their
     * bits and validity once each */
    const VectorBox box = vector_box(pc, dir, 16 * mbx, 16 * mby);
    const int f_code = dir_f_code(pc, dir);
    int comp[2][3], ok[2][3], bits[2][3];
    #pragma GCC unroll 9
    for (int j = 0; j < 3; j++) {
        comp[0][j] = 2 * m->dx + j - 1;
        comp[1][j] = 2 * m->dy + j - 1;
        /* only a component inside the box wraps into a motion code (the
         * others are never priced) */
        #pragma GCC unroll 9
        for (int d = 0; d < 2; d++) {
            ok[d][j] = comp[d][j] >= box.lo[d] && comp[d][j] <= box.hi[d];
            bits[d][j] = ok[d][j] ? bs_motion_delta_bits(wrap_delta(f_code, comp[d][j], pmv[d]),
                                                         f_code)
                                  : 0;
        }
    }
    /* the nine by index 3 jy + jx (the centre 4): rate, and which are valid */
    uint32_t rate9[9], nine[9];
    unsigned valid = 0, measured = 0;   /* bit i: nine[i] holds the SAD */
    #pragma GCC unroll 9
    for (int jy = 0; jy < 3; jy++)
        #pragma GCC unroll 9
        for (int jx = 0; jx < 3; jx++) {
            rate9[3 * jy + jx] = lambda * (uint32_t)(bits[0][jx] + bits[1][jy]);
            valid |= (unsigned)(ok[0][jx] & ok[1][jy]) << (3 * jy + jx);
        }
    const unsigned centre = 1u << 4;

    if (nine_inside && !one_by_one) {
        /* A candidate whose rate alone exceeds a cost already found cannot
         * win, and needs no SAD: where the centre is valid and every valid
         * neighbour's rate exceeds the centre's cost, the centre alone is
         * measured; else the nine at once (the centre among them). */
        int all = valid != 0;
        if (valid & centre) {
            unsigned cheap = 0;
            #pragma GCC unroll 9
            for (int i = 0; i < 9; i++)
                cheap |= (unsigned)(rate9[i] <= rate9[4]) << i;
            if (!(cheap & valid & ~centre)) {
                nine[4] = pc->sad16(src, sstride, full, rstride);
                measured = centre;
                const uint32_t ccost = nine[4] + rate9[4];
                cheap = 0;
                #pragma GCC unroll 9
                for (int i = 0; i < 9; i++)
                    cheap |= (unsigned)(rate9[i] <= ccost) << i;
                all = (cheap & valid & ~centre) != 0;
            }
        }
        unsigned ties = valid & measured;   /* the centre alone, or the valid of all nine */
        if (all) {
            pc->dsp->hpel_sads(nine, src, sstride, full, rstride);
            measured = 0x1FF;
            /* the least cost first (no branches), then the tie-break among
             * those that reach it: usually one */
            uint32_t cost9[9], least = UINT32_MAX;
            #pragma GCC unroll 9
            for (int i = 0; i < 9; i++) {
                cost9[i] = valid >> i & 1 ? nine[i] + rate9[i] : UINT32_MAX;
                least = cost9[i] < least ? cost9[i] : least;
            }
            ties = 0;
            #pragma GCC unroll 9
            for (int i = 0; i < 9; i++)
                ties |= (unsigned)(cost9[i] == least) << i;
            ties &= valid;
        }
        for (unsigned c = ties; c; c &= c - 1) {
            const int i = __builtin_ctz(c);
            consider_vector(&best, nine[i], rate9[i], comp[0][i % 3], comp[1][i / 3]);
        }
    } else {
        /* near the plane's edge (or as the reference): one by one, the
         * centre first so that its cost lets the others be skipped by
         * their rate */
        static const uint8_t order[9] = { 4, 1, 2, 3, 0, 5, 6, 7, 8 };
        for (int k = 0; k < 9; k++) {
            const int i = order[k];
            if (!(valid >> i & 1) || rate9[i] > best.cost)
                continue;
            const int vx = comp[0][i % 3], vy = comp[1][i / 3];
            nine[i] = i == 4 ? pc->sad16(src, sstride, full, rstride)
                             : pc->dsp->pred_sad(src, sstride, ref->plane[0], rstride, 32 * mbx + vx,
                                                 32 * mby + vy);
            measured |= 1u << i;
            consider_vector(&best, nine[i], rate9[i], vx, vy);
        }
    }

    if (out_sad_at) {
        /* any of the nine measured (valid or not, its SAD is the vector's) */
        const int jx = at[0] - comp[0][0], jy = at[1] - comp[1][0];
        const int known = jx >= 0 && jx < 3 && jy >= 0 && jy < 3 && (measured >> (3 * jy + jx) & 1);
        *out_sad_at = known ? nine[3 * jy + jx] : UINT32_MAX;
    }
    /* then the predictor where it is not among the nine */
    const int pvx = pmv[0], pvy = pmv[1];
    if ((abs(pvx - 2 * m->dx) > 1 || abs(pvy - 2 * m->dy) > 1) && in_box(&box, pvx, pvy)) {
        const uint32_t rate = lambda * (uint32_t)vector_bits(pc, pmv, dir, pvx, pvy);
        if (rate <= best.cost) {
            const uint32_t sad = pc->dsp->pred_sad(src, sstride, ref->plane[0], rstride,
                                                   32 * mbx + pvx, 32 * mby + pvy);
            if (out_sad_at && pvx == at[0] && pvy == at[1])
                *out_sad_at = sad;
            consider_vector(&best, sad, rate, pvx, pvy);
        }
    }
    *out_vx = best.vx;
    *out_vy = best.vy;
    if (out_cost)
        *out_cost = best.cost;
    return best.sad;
}

uint32_t mpe_slice_choose_vector(const MpePictureCtx *pc, const int pmv[2], int dir, int mbx,
                                 int mby, const GpuMotion *m, int out_v[2], uint32_t *out_cost,
                                 const int at[2], uint32_t *out_sad_at, int one_by_one)
{
    return choose_vector(pc, pmv, dir, mbx, mby, m, &out_v[0], &out_v[1], out_cost, at, out_sad_at,
                         one_by_one);
}

/* Intra instead of a prediction of SAD bsad: when the source's activity
 * beats it by INTRA_BIAS (never where bsad <= INTRA_BIAS: no activity
 * needed there). */
static int intra_wins(const MpePictureCtx *pc, const uint8_t *src, uint32_t bsad)
{
    return bsad > INTRA_BIAS && pc->dsp->intra_activity(src, pc->orig->stride[0]) + INTRA_BIAS < bsad;
}

/* The refresh rule (see MPE_REFRESH_PERIOD): a macroblock's next coding
 * with residual must be intra once it has had period - 1 of them since its
 * last intra coding.  Each macroblock reaches its limit a few pictures
 * earlier than that, by its address, so that when every macroblock is coded
 * in every picture they are not all refreshed in the same one (a whole
 * intra picture in the middle of a GOP, and a spike in its bits). */
static int refresh_due(const MpePictureCtx *pc, int addr)
{
    const int limit = MPE_REFRESH_PERIOD - 1 - addr % MPE_REFRESH_SPREAD;
    return pc->refresh_count[addr] >= limit;
}

/* The prediction of a B macroblock in mode (MODE_FWD, MODE_BWD or both:
 * the two averaged, rounding up, §7.6.7.1) with vectors v[dir]; luma only
 * where pred_c is NULL. */
static void predict_b(const MpePictureCtx *pc, int mode, int mbx, int mby, const int v[2][2],
                      uint8_t pred_y[256], uint8_t pred_c[2][64])
{
    if (mode != (MODE_FWD | MODE_BWD)) {
        const int dir = mode == MODE_FWD ? DIR_FWD : DIR_BWD;
        predict_macroblock(pc, dir, mbx, mby, v[dir][0], v[dir][1], pred_y, pred_c);
        return;
    }
    uint8_t by[256], bc[2][64];
    predict_macroblock(pc, DIR_FWD, mbx, mby, v[0][0], v[0][1], pred_y, pred_c);
    predict_macroblock(pc, DIR_BWD, mbx, mby, v[1][0], v[1][1], by, pred_c ? bc : NULL);
    for (int i = 0; i < 256; i++)
        pred_y[i] = (uint8_t)((pred_y[i] + by[i] + 1) >> 1);
    for (int c = 0; pred_c && c < 2; c++)
        for (int i = 0; i < 64; i++)
            pred_c[c][i] = (uint8_t)((pred_c[c][i] + bc[c][i] + 1) >> 1);
}

/* macroblock_type bits of a B macroblock without coefficients (Table B-4):
 * interpolated 2, backward 3, forward 4; what the choice of mode pays on
 * top of its vectors. */
static int b_mode_bits(int mode)
{
    return mode == (MODE_FWD | MODE_BWD) ? 2 : mode == MODE_BWD ? 3 : 4;
}

/* Luma SAD of mode with vectors v against the source (predict_b's luma,
 * not written). */
static uint32_t b_mode_sad(const MpePictureCtx *pc, int mode, int mbx, int mby, const int v[2][2])
{
    const uint8_t *src = pc->orig->plane[0] + 16 * mby * pc->orig->stride[0] + 16 * mbx;
    const MpePicture *f = pc->ref, *b = pc->ref_bwd;
    if (mode == (MODE_FWD | MODE_BWD))
        return pc->dsp->bipred_sad(src, pc->orig->stride[0], f->plane[0], f->stride[0],
                                   32 * mbx + v[0][0], 32 * mby + v[0][1], b->plane[0], b->stride[0],
                                   32 * mbx + v[1][0], 32 * mby + v[1][1]);
    const int dir = mode == MODE_FWD ? DIR_FWD : DIR_BWD;
    const MpePicture *ref = dir_ref(pc, dir);
    return pc->dsp->pred_sad(src, pc->orig->stride[0], ref->plane[0], ref->stride[0],
                             32 * mbx + v[dir][0], 32 * mby + v[dir][1]);
}

/* Can the previous macroblock's mode with the predictors as vectors (what a
 * skipped B macroblock means, §7.6.6.4) be used here?  Not after an intra
 * macroblock nor at a slice's start (prev_mode 0), and only with vectors
 * that are valid here. */
static int b_skip_usable(const MpePictureCtx *pc, const SliceState *st, int mbx, int mby)
{
    if (!st->prev_mode || (st->prev_mode & MODE_INTRA))
        return 0;
    for (int dir = 0; dir < 2; dir++)
        if ((st->prev_mode & (1 << dir)) &&
            !vector_valid(pc, dir, 16 * mbx, 16 * mby, st->pmv[dir][0], st->pmv[dir][1]))
            return 0;
    return 1;
}

/* Mode decision of a B macroblock: the best forward and backward vectors
 * (each as choose_vector picks it), their average, and the previous
 * macroblock's mode with the predictors as vectors (which may be skipped),
 * by SAD + lambda * (vector and macroblock_type bits); then intra when its
 * activity beats that clearly.  Returns the MODE_* chosen, vectors in v. */
static int choose_b_mode(const MpePictureCtx *pc, const SliceState *st, int mbx, int mby, int addr,
                         int v[2][2])
{
    const uint8_t *src = pc->orig->plane[0] + 16 * mby * pc->orig->stride[0] + 16 * mbx;
    const uint32_t lambda = (uint32_t)pc->qscale;
    uint32_t cost[2], sad[2];
    int mode, bsad;
    uint32_t bcost;

    /* the SADs at the predictors: the skip's, where it predicts one way */
    uint32_t sad_pred[2];
    sad[0] = choose_vector(pc, st->pmv[DIR_FWD], DIR_FWD, mbx, mby, &pc->mv[addr], &v[0][0], &v[0][1],
                           &cost[0], st->pmv[DIR_FWD], &sad_pred[0], 0);
    sad[1] = choose_vector(pc, st->pmv[DIR_BWD], DIR_BWD, mbx, mby, &pc->mv_bwd[addr], &v[1][0],
                           &v[1][1], &cost[1], st->pmv[DIR_BWD], &sad_pred[1], 0);
    /* choose_vector always finds a valid vector: the front end's full-pel
     * one lies inside the padded reference */
    cost[0] += lambda * (uint32_t)b_mode_bits(MODE_FWD);
    cost[1] += lambda * (uint32_t)b_mode_bits(MODE_BWD);
    mode = cost[1] < cost[0] ? MODE_BWD : MODE_FWD;
    bcost = cost[mode == MODE_BWD];
    bsad = (int)sad[mode == MODE_BWD];
    /* interpolated: both vectors' rates less the mode bits it saves; its
     * SAD only where that rate leaves room to win (a still area's best
     * single prediction has SAD 0 there, and then no room) */
    const uint32_t irate = (cost[0] - sad[0]) + (cost[1] - sad[1]) -
                           lambda * (uint32_t)(b_mode_bits(MODE_FWD) + b_mode_bits(MODE_BWD) -
                                               b_mode_bits(MODE_FWD | MODE_BWD));
    uint32_t isad = UINT32_MAX;
    if (irate < bcost) {
        isad = b_mode_sad(pc, MODE_FWD | MODE_BWD, mbx, mby, v);
        const uint32_t icost = isad + irate;
        if (icost < bcost) {
            mode = MODE_FWD | MODE_BWD;
            bcost = icost;
            bsad = (int)isad;
        }
    }
    if (b_skip_usable(pc, st, mbx, mby)) {
        /* the skip sends nothing: its cost is its SAD, with the bias that
         * makes P pictures prefer the zero vector */
        int sv[2][2] = { { st->pmv[0][0], st->pmv[0][1] }, { st->pmv[1][0], st->pmv[1][1] } };
        const int m = st->prev_mode;
        const uint32_t known = m == MODE_FWD ? sad_pred[DIR_FWD]
                               : m == MODE_BWD ? sad_pred[DIR_BWD]
                               : !memcmp(sv, v, sizeof(sv)) ? isad
                                                            : UINT32_MAX;
        const uint32_t ssad = known != UINT32_MAX ? known : b_mode_sad(pc, m, mbx, mby, sv);
        if (ssad <= bcost + ZERO_MV_BIAS) {
            mode = st->prev_mode;
            memcpy(v, sv, sizeof(sv));
            bsad = (int)ssad;
        }
    }
    if (intra_wins(pc, src, (uint32_t)bsad))
        return MODE_INTRA;
    return mode;
}

/* macroblock_quant: quantiser_scale_code right after macroblock_type */
static void write_mb_quant(const MpePictureCtx *pc, SliceState *st, int q, BsWriter *bw)
{
    if (q != st->q) {
        bs_put(bw, 5, pc->q_code[q]);
        st->q = q;
    }
}

/* One B macroblock.  B pictures are no reference, so no refresh rule (their
 * mismatch goes no further than themselves). */
static void code_b_mb(const MpePictureCtx *pc, SliceState *st, int addr, int first, int last,
                      BsWriter *bw, MpeSliceStats *stats)
{
    const int mbw = pc->orig->mb_width;
    const int mbx = addr % mbw, mby = addr / mbw;
    int v[2][2] = { { 0, 0 }, { 0, 0 } };
    int mode, cbp = 0;
    uint8_t pred_y[256], pred_c[2][64];
    int16_t level[6][64];

    /* pc->qscale is the macroblock's own quantiser (mb_quantiser) */
    const int mq = pc->qscale;
    mode = pc->skip_all ? MODE_FWD : choose_b_mode(pc, st, mbx, mby, addr, v);
    if (mode == MODE_INTRA) {
        BsVlc t = bs_vlc_mb_type(pc->coding_type, BS_MB_INTRA | (mq != st->q ? BS_MB_QUANT : 0));
        bs_write_mb_addr_inc(bw, addr - st->prev_addr);
        bs_put(bw, t.len, t.code);
        write_mb_quant(pc, st, mq, bw);
        code_intra_mb(pc, st, mbx, mby, bw);
        st->prev_addr = addr;
        memset(st->pmv, 0, sizeof(st->pmv));   /* §7.6.3.4: intra resets the predictors */
        st->prev_mode = MODE_INTRA;
        stats->intra++;
        pc->mb_coding[addr] = MPE_MB_CODED_INTRA;
        return;
    }
    predict_b(pc, mode, mbx, mby, v, pred_y, pred_c);
    cbp = pc->drop_residual || pc->skip_all ? 0
                                            : quantise_inter_mb(pc, mbx, mby, pred_y, pred_c, level);
    pc->mb_coding[addr] = cbp ? MPE_MB_CODED_RESIDUAL : MPE_MB_CODED_PREDICTION;
    reconstruct_inter_mb(pc, mbx, mby, pred_y, pred_c, level, cbp);
    reset_dc(pc, st);

    /* Skipped: the previous macroblock's mode and the predictors as vectors,
     * no coefficients; the predictors stay (§7.6.3.4: only P pictures reset
     * them on a skip).  Never the first or the last of a slice. */
    int same = mode == st->prev_mode && addr != first && addr != last && !cbp;
    for (int dir = 0; dir < 2; dir++)
        if ((mode & (1 << dir)) && (v[dir][0] != st->pmv[dir][0] || v[dir][1] != st->pmv[dir][1]))
            same = 0;
    if (same) {
        stats->skipped++;
        return;
    }

    /* only a macroblock with coefficients may carry a new quantiser */
    const int flags = (mode & MODE_FWD ? BS_MB_MOTION_FWD : 0) |
                      (mode & MODE_BWD ? BS_MB_MOTION_BWD : 0) | (cbp ? BS_MB_PATTERN : 0) |
                      (cbp && mq != st->q ? BS_MB_QUANT : 0);
    BsVlc t = bs_vlc_mb_type(pc->coding_type, flags);
    bs_write_mb_addr_inc(bw, addr - st->prev_addr);
    bs_put(bw, t.len, t.code);
    if (cbp)
        write_mb_quant(pc, st, mq, bw);
    for (int dir = 0; dir < 2; dir++)   /* forward first (motion_vectors(0)) */
        if (mode & (1 << dir))
            write_vector(pc, st, dir, v[dir][0], v[dir][1], bw);
    if (cbp)
        write_coded_blocks(pc, cbp, level, bw);
    st->prev_addr = addr;
    st->prev_mode = mode;
    stats->inter++;
    if (mode == (MODE_FWD | MODE_BWD))
        stats->interp++;
    else if (mode == MODE_BWD)
        stats->bwd++;
    else
        stats->fwd++;
    for (int dir = 0; dir < 2; dir++)
        if (mode & (1 << dir))
            stats->mv_abs_sum += 0.5 * sqrt((double)(v[dir][0] * v[dir][0] + v[dir][1] * v[dir][1])) /
                                 (mode == (MODE_FWD | MODE_BWD) ? 2 : 1);
}

/* The macroblock's quantiser under adaptive quantisation: the ladder step
 * nearest to qscale times its factor.  A change costs the quant flag's
 * longer macroblock_type and 5 bits of quantiser_scale_code, so the one in
 * force is kept unless the wanted one is more than AQ_KEEP away from it. */
#define AQ_KEEP 1.12

static int mb_quantiser(const MpePictureCtx *pc, const SliceState *st, int addr)
{
    if (!pc->aq || pc->drop_residual || pc->skip_all)
        return pc->qscale;
    const double want = pc->qscale * pc->aq[addr];
    int best = 0;
    for (int k = 1; k < pc->n_ladder; k++)
        if (fabs(log(want / pc->ladder[k])) < fabs(log(want / pc->ladder[best])))
            best = k;
    const int q = pc->ladder[best];
    return fabs(log((double)q / st->q)) < log(AQ_KEEP) ? st->q : q;
}

void mpe_code_slice(const MpePictureCtx *pc_slice, int row_begin, int row_end, BsWriter *bw,
                    MpeSliceStats *stats)
{
    const MpePictureCtx *const pc = pc_slice;
    const int mbw = pc->orig->mb_width;
    const int first = row_begin * mbw, last = row_end * mbw - 1;
    const int is_p = pc->coding_type == BS_PICTURE_P;
    const int is_intra_picture = pc->coding_type == BS_PICTURE_I || !pc->mv;
    const int n_mbs = mbw * pc->orig->mb_height;
    SliceState st;

    memset(stats, 0, sizeof(*stats));
    st.table_bits[0] = st.table_bits[1] = 0;
    reset_dc(pc, &st);
    memset(st.pmv, 0, sizeof(st.pmv));
    st.prev_addr = first - 1;
    st.prev_mode = 0;
    st.q = pc->qscale;
    bs_write_slice_header(bw, pc->mpeg2, pc->tall_picture, row_begin, pc->qscale_code);

    for (int addr = first; addr <= last; addr++) {
        const int mbx = addr % mbw, mby = addr / mbw;
        /* the macroblock's own quantiser (adaptive quantisation) */
        MpePictureCtx mpc = *pc_slice;
        const int mq = mb_quantiser(pc_slice, &st, addr);
        const MpePictureCtx *const pc = &mpc;
        if (mq != mpc.qscale) {
            mpc.qscale = mq;
            mpc.quant = &pc_slice->quants[mq];
        }
        int intra = !is_p;
        int vx = 0, vy = 0, cbp = 0;
        uint8_t pred_y[256], pred_c[2][64];
        int16_t level[6][64];

        /* the front end's vectors a few macroblocks ahead: a line of them
         * serves five macroblocks, and its miss stalled choose_vector's
         * first read (an eighth of its time) */
        if (!is_intra_picture && addr + 8 < n_mbs) {   /* no address past the arrays */
            __builtin_prefetch(&pc->mv[addr + 8]);
            if (pc->mv_bwd)
                __builtin_prefetch(&pc->mv_bwd[addr + 8]);
        }
        if (pc->coding_type == BS_PICTURE_B) {
            code_b_mb(pc, &st, addr, first, last, bw, stats);
            continue;
        }
        if (is_p && pc->skip_all) {
            /* the copy of the reference: zero vector, nothing coded */
        } else if (is_p) {
            const uint8_t *src = pc->orig->plane[0] + 16 * mby * pc->orig->stride[0] + 16 * mbx;
            uint32_t sad0;
            static const int zero[2] = { 0, 0 };
            uint32_t bsad = choose_vector(pc, st.pmv[DIR_FWD], DIR_FWD, mbx, mby, &pc->mv[addr], &vx, &vy,
                                          NULL, zero, &sad0, 0);
            if (sad0 == UINT32_MAX)   /* not among those choose_vector measured */
                sad0 = pc->sad16(src, pc->orig->stride[0],
                                 pc->ref->plane[0] + 16 * mby * pc->ref->stride[0] + 16 * mbx,
                                 pc->ref->stride[0]);
            /* the zero vector sends no vector at all (and may skip) */
            if (sad0 <= bsad + (uint32_t)pc->qscale * (uint32_t)vector_bits(pc, st.pmv[DIR_FWD], DIR_FWD, vx, vy) +
                            ZERO_MV_BIAS) {
                vx = vy = 0;
                bsad = sad0;
            }
            intra = intra_wins(pc, src, bsad);
        }

        if (!intra) {
            predict_macroblock(pc, DIR_FWD, mbx, mby, vx, vy, pred_y, pred_c);
            cbp = pc->drop_residual || pc->skip_all
                      ? 0
                      : quantise_inter_mb(pc, mbx, mby, pred_y, pred_c, level);
            /* one more coding with residual would break the refresh rule */
            if (cbp && refresh_due(pc, addr)) {
                intra = 1;
                stats->refreshed++;
            }
        }
        if (intra) {
            BsVlc t = bs_vlc_mb_type(pc->coding_type, BS_MB_INTRA | (mq != st.q ? BS_MB_QUANT : 0));
            bs_write_mb_addr_inc(bw, addr - st.prev_addr);
            bs_put(bw, t.len, t.code);
            write_mb_quant(pc, &st, mq, bw);
            code_intra_mb(pc, &st, mbx, mby, bw);
            st.prev_addr = addr;
            memset(st.pmv, 0, sizeof(st.pmv));   /* §7.6.3.4: intra resets the predictors */
            stats->intra++;
            pc->mb_coding[addr] = MPE_MB_CODED_INTRA;
            continue;
        }

        pc->mb_coding[addr] = cbp ? MPE_MB_CODED_RESIDUAL : MPE_MB_CODED_PREDICTION;
        reconstruct_inter_mb(pc, mbx, mby, pred_y, pred_c, level, cbp);
        reset_dc(pc, &st);   /* any non-intra macroblock, skipped or not, resets DC prediction */

        /* A P macroblock with zero vector and nothing to code is skipped,
         * except the first and last of a slice, which must be coded. */
        if (!cbp && !vx && !vy && addr != first && addr != last) {
            st.pmv[0][0] = st.pmv[0][1] = 0;   /* skipped P macroblocks reset the predictors */
            stats->skipped++;
            continue;
        }

        int flags;
        if (!cbp)
            flags = BS_MB_MOTION_FWD;                   /* MC, not coded */
        else if (!vx && !vy)
            flags = BS_MB_PATTERN;                      /* no MC, coded */
        else
            flags = BS_MB_MOTION_FWD | BS_MB_PATTERN;   /* MC, coded */
        /* only a macroblock with coefficients may carry a new quantiser
         * (and only one with coefficients needed it) */
        if (cbp && mq != st.q)
            flags |= BS_MB_QUANT;
        BsVlc t = bs_vlc_mb_type(pc->coding_type, flags);
        bs_write_mb_addr_inc(bw, addr - st.prev_addr);
        bs_put(bw, t.len, t.code);
        if (cbp)
            write_mb_quant(pc, &st, mq, bw);
        if (flags & BS_MB_MOTION_FWD)
            write_vector(pc, &st, DIR_FWD, vx, vy, bw);
        else
            st.pmv[0][0] = st.pmv[0][1] = 0;   /* "no MC" in a P picture resets the predictors */
        if (flags & BS_MB_PATTERN)
            write_coded_blocks(pc, cbp, level, bw);
        st.prev_addr = addr;
        stats->inter++;
        stats->mv_abs_sum += 0.5 * sqrt((double)(vx * vx + vy * vy));   /* half-pels */
    }
    stats->intra_table_bits[0] = st.table_bits[0];
    stats->intra_table_bits[1] = st.table_bits[1];
}

void mpe_slice_intra_table_bits(const MpePictureCtx *pc, int row0, int row1, int64_t bits[2])
{
    for (int mby = row0; mby < row1; mby++) {
        for (int mbx = mby & 1; mbx < pc->orig->mb_width; mbx += 2) {
            for (int b = 0; b < 6; b++) {
                int16_t blk[64], level[64], scan[64];
                int stride, both[2];
                const uint8_t *src = block_ptr(pc->orig, mbx, mby, b, &stride);
                pc->dsp->get_pixels(blk, src, stride);
                if (!mpe_fdct_flat(blk))
                    pc->dsp->fdct(blk);
                pc->dsp->quant_intra(level, blk, pc->quant);
                to_scan(pc, scan, level);
                mpe_trellis_intra_bits_both_scan(scan, 1, both);
                bits[0] += both[0];
                bits[1] += both[1];
            }
        }
    }
}

int mpe_slice_guess_intra_table(const MpePictureCtx *pc)
{
    int64_t bits[2] = { 0, 0 };
    mpe_slice_intra_table_bits(pc, 0, pc->orig->mb_height, bits);
    return bits[1] < bits[0];
}
