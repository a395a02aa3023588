/* frontend.h — the encoder's front end: colour conversion with chroma
 * lowpass/decimation, and exhaustive full-pel motion search.
 *
 * The public API of the front end.  A backend (cpu = the C reference,
 * opencl, cuda) works on a ring of frame slots: submit(slot) starts
 * upload+conversion, search(cur, ref) starts the search of one slot against
 * another (both ORIGINAL pictures, which is what lets a GPU search frame n+1
 * while the CPU codes frame n), wait(slot) blocks until the slot's work is
 * done, download(slot) copies the planes and vectors out.  The cpu backend
 * does the work synchronously.  All backends must give bit-identical
 * results: integer arithmetic and one tie-break rule.  How backends plug in:
 * gpu/frontend_internal.h.
 *
 * Conversion (ITU-R BT.601 studio range, 16-bit fixed point):
 *   Y  = 16  + ( 16829 R + 33039 G +  6416 B) / 65536
 *   Cb = 128 + ( -9714 R - 19070 G + 28784 B) / 65536
 *   Cr = 128 + ( 28784 R - 24103 G -  4681 B) / 65536
 * Y rounds to nearest.  Cb and Cr are kept at full precision through the
 * chroma lowpass: each 4:2:0 sample is the separable [1 3 3 1]/8 x [1 3 3 1]/8
 * filter over the 4x4 full-resolution samples around it (rows and columns
 * 2c-1 .. 2c+2), i.e. centred between its four luma samples (MPEG-1 / JPEG
 * siting), rounded once and clamped to 16..240.  Source pixels outside the
 * image are edge-replicated, which also fills the macroblock padding.
 *
 * Motion search: for each 16x16 luma macroblock, every full-pel vector
 * (dx, dy) in [-R, R]^2 whose block lies inside the padded reference plane;
 * cost = SAD; ties go to the smaller |dx|+|dy|, then the smaller dy, then the
 * smaller dx (DESIGN.md invariant 2). */
#ifndef MPE_FRONTEND_H
#define MPE_FRONTEND_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "common/picture.h"
#include "dsp/sad.h"
#include "common/threads.h"

#define GPU_MAX_SEARCH_RANGE 64
/* The widest reach of the hierarchical search (its vectors stay within
 * +-reach full pels); 255 keeps its 1/4-resolution window (2*63+1)^2. */
#define GPU_MAX_REACH 255

typedef struct GpuMotion {
    int16_t dx, dy;   /* best full-pel vector */
    uint32_t sad;     /* its SAD */
    uint32_t sad0;    /* SAD of the zero vector (mode decision wants it) */
} GpuMotion;

typedef struct GpuConfig {
    int width, height;   /* true frame size, 16..4095 */
    int slots;           /* frame slots in the ring, >= 2 */
    int device;          /* backend's device index (--device), -1: its own choice */
    int threads;         /* cpu backend: threads it works on, 0: all online cores */
    int pyramid;         /* build each slot's 1/2 and 1/4 resolution luma at submit:
                          * gpu_frontend_search_hier needs them */
    unsigned cpu_flags;  /* cpu backend: MPE_CPU_* its kernels may use (common/cpu.h:
                          * mpe_cpu_flags() & mask); 0: the C ones */
    MpePool *pool;       /* cpu backend: non-NULL: it works on this pool (threads unused) */
    long length;         /* frames the run will submit where known, 0: unknown
                          * (gpu_frontend_open_async with "auto") */
    int intra_costs;     /* a backend that can counts each macroblock's intra cost
                          * at submit (gpu_frontend_intra_costs) */
    const MpeLog *log;
} GpuConfig;

/* Device-side times of one slot's last frame, in milliseconds (from the
 * backend's own profiling events); 0 where a stage did not run. */
typedef struct GpuTimings {
    double upload_ms, convert_ms, search_ms, readback_ms;
} GpuTimings;

/* An open front end: one backend's context with the framework's slot
 * bookkeeping around it. */
typedef struct GpuFrontend GpuFrontend;
/* A registry row (gpu/frontend_internal.h). */
typedef struct GpuBackend GpuBackend;

/* Does dev_dir ("/dev") hold a node that a GPU driver creates (a DRM render
 * or card node, AMD's kfd, an NVIDIA GPU, WSL's dxg, Mali, Adreno, Vivante,
 * an accel node)?  Every Linux OpenCL GPU driver works through one, so
 * --backend auto asks OpenCL only when one is there: loading the OpenCL
 * ICDs to find a CPU device that auto declines anyway (PoCL) costs 0.03 s
 * warm to 0.4 s cold and leaves LLVM's signal handlers in the process. */
int gpu_has_device_node(const char *dev_dir);

/* Is a run of `length` frames of width x height (length 0: unknown) long
 * enough for --backend auto to start a GPU?  Only where the cpu backend
 * would take longer over it than a GPU takes to start (gpu/frontend.c says
 * what that was measured as). */
int gpu_auto_wants_gpu(int width, int height, long length);

/* NULL-terminated list of compiled-in backends, in `auto` preference order. */
const GpuBackend *const *gpu_backend_list(void);
const char *gpu_backend_name(const GpuBackend *b);
/* 0 if this backend can run here (why[] may then name the device); else
 * negative errno and why[].  for_auto: asked by --backend auto, which wants
 * an accelerator: a backend may decline a device that would be slower than
 * the cpu one (an OpenCL CPU device, say). */
int gpu_backend_probe(const GpuBackend *b, int for_auto, char *why, size_t why_size);

/* Pick a backend by name, or the first usable one for "auto" (logging each
 * one skipped and why).  A named backend that cannot run is an error. */
int gpu_backend_select(const GpuBackend **out, const char *name, const MpeLog *log,
                       MpeError *err);

/* Select and open in one step: a named backend that cannot run or fails to
 * open is an error naming it; "auto" takes the backends in preference order
 * and falls back to the next one when a probe fails (logged as info: a
 * missing GPU is normal) or when open fails, say on a kernel build error or
 * an out-of-memory device (logged as a warning with the reason).  Fallback
 * happens only here, before the first frame: a failure later in the run is
 * the caller's error, never a silent switch of backend mid-stream. */
int gpu_frontend_open(GpuFrontend **fe, const char *name, const GpuConfig *cfg, const MpeLog *log,
                      MpeError *err);
/* gpu_frontend_open on a thread of its own, so that a GPU's start-up
 * (driver, context, kernel build: 0.05 s to over 1 s) overlaps the first
 * frames instead of preceding them.  Until that open has finished, frames
 * go to a cpu front end opened here at once (every backend gives the same
 * planes and vectors, bit for bit); the first submit after it has finished
 * moves to the new front end, which gets the reference picture of its first
 * search from the cpu one ("opencl" is probed here first, on the caller's
 * thread, and a probe failure is returned at once).  Calls are those of any front end; an open that
 * failed is reported by the first submit after it, and by
 * gpu_frontend_ready.  With cfg->pyramid the move waits for a submit that
 * follows a frame that was not searched (an intra picture): the
 * hierarchical search takes the reference's own vectors as candidates,
 * which a reference moved between backends would not have.  Opens
 * synchronously (plain gpu_frontend_open) for "cpu", for "auto" where /dev
 * has no GPU node, for a named backend without the hierarchical search when
 * cfg->pyramid asks for it (its error at once), and while MPE_GPU_FAIL is
 * set (its frame numbers count one backend's submits).  "auto" opens the
 * cpu backend, touching no GPU, when cfg->length says the run is too short
 * to gain from one (gpu_auto_wants_gpu): the open would still be running
 * when the cpu front end has taken every frame, and the run would wait for
 * it at the end. */
int gpu_frontend_open_async(GpuFrontend **fe, const char *name, const GpuConfig *cfg,
                            const MpeLog *log, MpeError *err);
/* The caller's word that a frame submitted before the next submit will
 * still be searched against the next one (a B frame waiting for its
 * anchor): an asynchronous open must not move to the opened backend at
 * that submit, since the waiting frame's planes stay on the cpu front end.
 * No effect on a front end opened otherwise. */
void gpu_frontend_defer_move(GpuFrontend *fe);
/* The caller's word that no frame will be submitted any more (the input
 * ended): an asynchronous open still running stops after the step it is
 * in (the backend's probe: driver and device index; the context; the
 * kernels; each slot's buffers) instead of opening what no frame would
 * use, so that gpu_frontend_ready waits for that step only (CUDA's driver
 * start, 0.1-0.2 s on the H100 machine, is one): a start-up is never left
 * running half-done, nor waited for in full.  Returns at once; from any
 * thread; no effect on a front end opened otherwise.  Later calls are
 * served as before, by the cpu front end for its frames. */
void gpu_frontend_finish(GpuFrontend *fe);
/* Waits for an asynchronous open: 0, or the error it failed with (0 at once
 * for a front end opened otherwise).  An open that gpu_frontend_finish
 * stopped after a passing probe is no error. */
int gpu_frontend_ready(GpuFrontend *fe, MpeError *err);
/* An asynchronous open still running is stopped as by gpu_frontend_finish
 * and waited for. */
void gpu_frontend_close(GpuFrontend *fe);
/* The backend it runs on ("cpu", "opencl", "cuda"); after an asynchronous
 * open, the one it opened (waiting for it), or where gpu_frontend_finish
 * stopped the open: "cpu" for "auto" (the cpu front end took every frame),
 * the named backend otherwise (its probe passed). */
const char *gpu_frontend_name(const GpuFrontend *fe);

/* The work on a ring of cfg->slots frame slots.  submit takes RGB24
 * (converted) or YUV420 (copied and padded) frames of the configured size;
 * the caller may reuse `frame` as soon as it returns. */
int gpu_frontend_submit(GpuFrontend *fe, int slot, const MpeFrame *frame, MpeError *err);

/* submit in three steps, so that a frame's copy into host memory (1-2 ms
 * at 2048^2) runs on another thread while this one drives the front end's
 * other slots: gpu_frontend_stage readies the slot and says where the
 * frame goes (on the thread that makes every other call);
 * gpu_frontend_stage_copy copies it there (host memory only: any thread,
 * concurrently with calls on OTHER slots; `frame` must stay valid until it
 * returns); gpu_frontend_commit hands it to the device, as submit's end.
 * stage returns -EAGAIN where the frame must go through submit whole: an
 * asynchronous open has not moved to its GPU yet (the move is decided in
 * submit's order), or the backend would read an RGB frame at commit (cpu:
 * it converts from the caller's frame). */
typedef struct GpuStaged {
    /* frontend.c's; the caller only keeps it from stage to commit */
    GpuFrontend *holder;
    const MpeFrame *frame;
    uint8_t *staging;          /* RGB rows packed, or YUV planes back to back */
    MpePicture *pic;           /* YUV: the padded planes filled */
    MpePicture view;
    int width, height, bands;
    MpePool *pool;
} GpuStaged;
int gpu_frontend_stage(GpuFrontend *fe, int slot, const MpeFrame *frame, GpuStaged *st,
                       MpeError *err);
void gpu_frontend_stage_copy(GpuStaged *st);
int gpu_frontend_commit(GpuFrontend *fe, int slot, GpuStaged *st, MpeError *err);
/* Search slot cur against slot ref (both submitted), range
 * 0..GPU_MAX_SEARCH_RANGE. */
int gpu_frontend_search(GpuFrontend *fe, int cur, int ref, int range, MpeError *err);
/* The hierarchical search (gpu_motion_search_hier_c) of slot cur against
 * slot ref: reach 1..GPU_MAX_REACH, the final window +-range around the best
 * candidate.  Needs cfg->pyramid.  The co-located vectors it takes as a
 * candidate are ref's own, when ref was searched since its submit. */
int gpu_frontend_search_hier(GpuFrontend *fe, int cur, int ref, int range, int reach,
                             MpeError *err);
int gpu_frontend_wait(GpuFrontend *fe, int slot, MpeError *err);
/* Planes into pic (allocated for the configured size; NULL: vectors only,
 * e.g. a second search of a slot whose planes were taken); vectors into mv
 * (mb_width*mb_height entries, raster order) if mv is non-NULL, which needs
 * a search on this slot since its last submit. */
int gpu_frontend_download(GpuFrontend *fe, int slot, MpePicture *pic, GpuMotion *mv,
                          MpeError *err);
/* The slot's planes where the backend keeps them on the host (cpu), to be
 * read in place instead of downloaded: valid after wait(slot) until the
 * slot's next submit.  NULL where they must be downloaded (a GPU) or the
 * slot holds no frame.  With them, download's pic may be NULL (vectors only). */
const MpePicture *gpu_frontend_host_planes(GpuFrontend *fe, int slot);
/* The slot's macroblocks' intra costs (mpe_bdecide_intra_costs on its
 * luma: the SAD against the block's rounded mean), raster order, where
 * the backend counted them at submit (cfg->intra_costs); waits for them.
 * -ENOSYS where it did not: the caller counts them on the host. */
int gpu_frontend_intra_costs(GpuFrontend *fe, int slot, uint32_t *intra, MpeError *err);
/* Whether gpu_frontend_intra_costs would give the slot's (submitted) frame's. */
int gpu_frontend_has_intra_costs(GpuFrontend *fe, int slot);
/* The slot's device times, valid after wait(slot); -ENOSYS if the backend
 * has no timers. */
int gpu_frontend_timings(GpuFrontend *fe, int slot, GpuTimings *t);

/* --- test hook: making a backend fail on purpose ---
 *
 * MPE_GPU_FAIL=<backend>:<where>[,<backend>:<where>...] in the environment
 * makes the named backend (cpu, opencl, cuda) fail where a real device
 * could, through the same return and cleanup paths as a real failure, so
 * that those paths run in tests on machines without a GPU.  <where> is
 *   probe        the backend reports it cannot run here
 *   build        open fails as on a kernel/program build error
 *   alloc        open fails as on device out-of-memory (after the first
 *                slot's buffers exist, so the partial cleanup runs too)
 *   submit@N     submit of frame N fails (frames count from 0 in
 *   search@N     submission order) as on a lost device; a search with
 *   download@N   frame N as current, or its wait/download, likewise
 * A device lost mid-run stays lost: every later call on that front end
 * fails.  A backend named in MPE_GPU_FAIL is also accepted by --backend auto
 * on a device that auto would normally decline (PoCL's CPU device), so the
 * fallback can be exercised without a GPU.  Messages end in "(MPE_GPU_FAIL
 * test hook)" so an injected failure is never mistaken for a real one.  The
 * framework (frontend.c) runs the hook for every backend; nothing of it runs
 * unless the variable is set. */

/* The tie-break order of DESIGN.md invariant 2, shared by the full-pel
 * search and the encoder's half-pel refinement: does candidate (sad, dx, dy)
 * beat the best so far?  Smaller SAD, then smaller |dx|+|dy|, then smaller
 * dy, then smaller dx. */
static inline int gpu_mv_better(uint32_t sad, int dx, int dy, uint32_t bsad, int bdx, int bdy)
{
    if (sad != bsad)
        return sad < bsad;
    int l1 = (dx < 0 ? -dx : dx) + (dy < 0 ? -dy : dy);
    int bl1 = (bdx < 0 ? -bdx : bdx) + (bdy < 0 ? -bdy : bdy);
    if (l1 != bl1)
        return l1 < bl1;
    return dy != bdy ? dy < bdy : dx < bdx;
}

/* --- C reference kernels (also used by the differential tests) --- */

/* Convert true-size RGB24 into the padded Y/Cb/Cr planes of pic. */
void gpu_convert_rgb_c(MpePicture *pic, const uint8_t *rgb, ptrdiff_t rgb_stride);

/* Exhaustive search of every macroblock of cur's luma against ref's. */
void gpu_motion_search_c(GpuMotion *mv, const MpePicture *cur, const MpePicture *ref,
                         int range, MpeSad16Fn sad16);

/* --- The hierarchical search (DESIGN.md section 1) ---
 *
 * All on ORIGINAL luma, all integer, every stage's minimum taken under the
 * tie-break order of gpu_mv_better (a strict total order, so the result
 * does not depend on the order candidates are visited in):
 *  1. pyramid: each picture's luma (padded plane) decimated 2:1 twice, each
 *     sample the rounded mean of 2x2: (a + b + c + d + 2) >> 2;
 *  2. coarse: per macroblock, its 4x4 block at 1/4 resolution, exhaustive
 *     over u in [-reach/4, reach/4]^2 (inside the 1/4 plane);
 *  3. its 8x8 block at 1/2 resolution, h in 2u + [-2, 2]^2, |h| <= reach/2
 *     (inside the 1/2 plane); the coarse vector is 2h full pels;
 *  4. candidates at full resolution: the macroblock's own coarse vector,
 *     zero, the co-located vector of the previous search (prev, if given),
 *     and the coarse vectors of the left, right, top and bottom neighbours;
 *     the best by 16x16 SAD is the centre of
 *  5. an exhaustive window centre +-range, the answer.
 * Every vector at full resolution keeps its block inside the padded plane
 * and |dx|, |dy| <= reach (which is what bounds f_code). */
typedef struct GpuPyramid {
    uint8_t *half, *quarter;   /* rows packed: strides are hw and qw */
    int hw, hh, qw, qh;        /* plane_w[0] / 2, plane_h[0] / 2, and / 4 */
} GpuPyramid;

/* 0 or -ENOMEM */
int gpu_pyramid_alloc(GpuPyramid *p, const MpePicture *pic);
void gpu_pyramid_free(GpuPyramid *p);
void gpu_pyramid_build_c(GpuPyramid *p, const MpePicture *pic);
/* Its macroblock rows [row0, row1) alone (GpuCpuKernels.pyramid_rows) */
void gpu_pyramid_rows_c(GpuPyramid *p, const MpePicture *pic, int row0, int row1);

/* Stages 2-3 for macroblock rows [row0, row1): coarse[i].dx, dy = 2h (full
 * pels), .sad = its 8x8 SAD at 1/2 resolution, .sad0 = 0. */
void gpu_hier_coarse_rows(GpuMotion *coarse, const GpuPyramid *cur, const GpuPyramid *ref, int mb_w,
                          int reach, int row0, int row1);

/* Stage 3 of one macroblock, from stage 2's u (1/4 resolution pels). */
void gpu_hier_half_mb(GpuMotion *m, const GpuPyramid *cur, const GpuPyramid *ref, int reach,
                      int mbx, int mby, int ux, int uy);

/* Stage 4's candidates of macroblock (mbx, mby), the valid ones only, into
 * cand[] (room for GPU_HIER_CANDIDATES); returns their count.  Zero is
 * always among them. */
#define GPU_HIER_CANDIDATES 7
int gpu_hier_candidates(int16_t cand[][2], const MpePicture *cur, const GpuMotion *coarse,
                        const GpuMotion *prev, int reach, int mbx, int mby);

/* The window of step 5 around centre (cx, cy) for the block at (x0, y0):
 * [*lo, *hi] in each axis. */
void gpu_hier_window(const MpePicture *cur, int x0, int y0, int cx, int cy, int range, int reach,
                     int *dx_lo, int *dx_hi, int *dy_lo, int *dy_hi);

/* The whole search, plain C; prev may be NULL.  0 or -ENOMEM. */
int gpu_motion_search_hier_c(GpuMotion *mv, const MpePicture *cur, const MpePicture *ref,
                             const GpuMotion *prev, int range, int reach, MpeSad16Fn sad16);

/* --- The cpu backend's fast kernels: the references' results, bit for bit ---
 *
 * Each works on macroblock rows [row0, row1) of a picture (16 luma and 8
 * chroma rows each) and writes only those rows (their stride padding
 * included), so a pool can run the rows of one picture at once in any
 * order.
 *
 * The search prunes with block sums: |sum(cur) - sum(cand)| <= SAD(cur, cand),
 * so a candidate whose bound already loses to the best so far under the
 * tie-break order (gpu_mv_better) cannot win and is skipped; every other
 * candidate gets its SAD.  The answer is the minimum of a strict total order,
 * so it does not depend on the visiting order, which only decides how much
 * is skipped. */

/* 8x8 luma block sums of a picture at every position such a block fits.
 * A 16x16 candidate's four quarters give two bounds: |sum(cur) - sum(cand)|
 * over the whole block, and the tighter sum of that over the quarters. */
typedef struct GpuBlockSums {
    uint16_t *sum;    /* sum[y * stride + (x >> x_shift)], x 0..plane_w[0]-8, y 0..plane_h[0]-8 */
    ptrdiff_t stride; /* in elements */
    int x_shift;      /* 0: every x; 3: x multiples of 8 only (gpu_block_sums_grid) */
} GpuBlockSums;

/* 0 or -ENOMEM */
int gpu_block_sums_alloc(GpuBlockSums *s, const MpePicture *pic);
void gpu_block_sums_free(GpuBlockSums *s);

/* The sums at y = 16 * row0 .. 16 * row1 - 1 (those that exist; they read
 * 7 luma rows further), with sad's block sums. */
void gpu_block_sums_rows(const MpeSadDsp *sad, GpuBlockSums *s, const MpePicture *pic, int row0,
                         int row1);

/* The current picture's sums as the searches read them (GpuCpuKernels): at
 * the macroblocks' quarters only (x and y multiples of 8), packed: the sum
 * at (x, y) is grid[(y / 8) * gpu_grid_row(pic) + x / 8], and the table
 * has gpu_grid_entries(pic) entries (128 KB at 2048x2048: with a row of
 * entries a picture row apart, 1 MB a slot of which every page was touched
 * for the 1/8 written).  The kernel table's grid_rows makes those of
 * macroblock rows [row0, row1); gpu_block_sums_grid is the table as
 * GpuBlockSums (x_shift 3, stride gpu_grid_row(pic) / 8), whose sum at (x,
 * y) is the sum there for those x and y. */
int gpu_grid_row(const MpePicture *pic);
size_t gpu_grid_entries(const MpePicture *pic);
GpuBlockSums gpu_block_sums_grid(uint16_t *grid, const MpePicture *pic);

typedef struct GpuCpuKernels GpuCpuKernels;
struct GpuCpuKernels {
    const char *name;   /* "c", "sse2", "avx2": the widest instructions it uses */
    MpeSadDsp sad;      /* the search's SAD and the block sums (dsp/sad.h) */
    /* gpu_convert_rgb_c's output for rows [row0, row1) */
    void (*convert_rgb_rows)(MpePicture *pic, const uint8_t *rgb, ptrdiff_t rgb_stride, int row0,
                             int row1);
    /* gpu_motion_search_c's vectors for rows [row0, row1), given ref's
     * complete sums (x_shift 0) and cur's at x and y multiples of 8 (the
     * macroblocks' quarters, the only ones read: either kind of table
     * serves, gpu_block_sums_grid's or a complete one); hint (may be NULL):
     * a vector per macroblock likely to be good, tried early (the previous
     * picture's, say) */
    void (*motion_search_rows)(const GpuCpuKernels *k, GpuMotion *mv, const MpePicture *cur,
                               const GpuBlockSums *cur_sums, const MpePicture *ref,
                               const GpuBlockSums *ref_sums, int range, const GpuMotion *hint,
                               int row0, int row1);
    /* the sums at x and y multiples of 8 of macroblock rows [row0, row1)
     * into a gpu_block_sums_grid table */
    void (*grid_rows)(uint16_t *grid, const MpePicture *pic, int row0, int row1);
    /* each macroblock's intra cost (mpe_bdecide_intra_costs: the SAD
     * against its rounded mean) of rows [row0, row1), raster order, given
     * those rows' grid_rows sums (the mean's) */
    void (*intra_cost_rows)(uint32_t *intra, const MpePicture *pic, const uint16_t *grid, int row0,
                            int row1);
    /* gpu_pyramid_build_c's result for macroblock rows [row0, row1): the
     * 1/2 plane's rows 8 row0 .. 8 row1 - 1 and the 1/4 plane's 4 row0 ..
     * 4 row1 - 1 (they read only the band's own luma rows) */
    void (*pyramid_rows)(GpuPyramid *p, const MpePicture *pic, int row0, int row1);
    /* gpu_hier_coarse_rows's result */
    void (*coarse_rows)(GpuMotion *coarse, const GpuPyramid *cur, const GpuPyramid *ref, int mb_w,
                        int reach, int row0, int row1);
    /* steps 4-5 of the hierarchical search for rows [row0, row1), given
     * stage 3's vectors of every macroblock (the sums as for
     * motion_search_rows) */
    void (*hier_final_rows)(const GpuCpuKernels *k, GpuMotion *mv, const MpePicture *cur,
                            const GpuBlockSums *cur_sums, const MpePicture *ref,
                            const GpuBlockSums *ref_sums, const GpuMotion *coarse,
                            const GpuMotion *prev, int range, int reach, int row0, int row1);
};

/* Like every DSP table (common/cpu.h): the C kernels, then the variants
 * cpu_flags (mpe_cpu_flags() & mask) allow. */
void gpu_cpu_kernels_init(GpuCpuKernels *k, unsigned cpu_flags);

#endif
