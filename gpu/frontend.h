/* frontend.h — the encoder's front end: colour conversion with chroma
 * lowpass/decimation, and exhaustive full-pel motion search.
 *
 * Each backend (cpu = the C reference, opencl, cuda) is a const
 * table of callbacks working on a ring of frame slots: submit_frame(slot)
 * starts upload+conversion, motion_search(cur, ref) starts the search of one
 * slot against another (both ORIGINAL pictures, which is what lets a GPU
 * search frame n+1 while the CPU codes frame n), wait(slot) blocks until the
 * slot's work is done, download(slot) copies the planes and vectors out.
 * The cpu backend does the work synchronously.  All backends must give
 * bit-identical results: integer arithmetic and one tie-break rule.
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
#include "common/threads.h"

#define GPU_MAX_SEARCH_RANGE 64

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
    MpePool *pool;       /* cpu backend: non-NULL: it works on this pool (threads unused) */
    const MpeLog *log;
} GpuConfig;

/* Device-side times of one slot's last frame, in milliseconds (from the
 * backend's own profiling events); 0 where a stage did not run. */
typedef struct GpuTimings {
    double upload_ms, convert_ms, search_ms, readback_ms;
} GpuTimings;

typedef struct GpuContext GpuContext;

typedef struct GpuBackend {
    const char *name;
    /* 0 if this backend can run here (why[] may then name the device);
     * else negative errno and why[].  for_auto: asked by --backend auto, which
     * wants an accelerator: a backend may decline a device that would be
     * slower than the cpu one (an OpenCL CPU device, say). */
    int (*probe)(int for_auto, char *why, size_t why_size);
    int (*open)(GpuContext **ctx, const GpuConfig *cfg, MpeError *err);
    void (*close)(GpuContext *ctx);
    /* Takes RGB24 (converted) or YUV420 (copied and padded) frames of the
     * configured size; the caller may reuse `frame` as soon as this returns. */
    int (*submit_frame)(GpuContext *ctx, int slot, const MpeFrame *frame, MpeError *err);
    /* Search slot cur against slot ref, range 0..GPU_MAX_SEARCH_RANGE. */
    int (*motion_search)(GpuContext *ctx, int cur, int ref, int range, MpeError *err);
    int (*wait)(GpuContext *ctx, int slot, MpeError *err);
    /* Planes into pic (allocated for the configured size); vectors into mv
     * (mb_width*mb_height entries, raster order) if mv is non-NULL and a
     * search was run on this slot since its last submit. */
    int (*download)(GpuContext *ctx, int slot, MpePicture *pic, GpuMotion *mv, MpeError *err);
    /* Optional (NULL if the backend has no timers); valid after wait(slot). */
    int (*timings)(GpuContext *ctx, int slot, GpuTimings *t);
} GpuBackend;

extern const GpuBackend gpu_backend_cpu;
#ifdef MPE_HAVE_OPENCL
extern const GpuBackend gpu_backend_opencl;
#endif
#ifdef MPE_HAVE_CUDA
extern const GpuBackend gpu_backend_cuda;
#endif

/* Does dev_dir ("/dev") hold a node that a GPU driver creates (a DRM render
 * or card node, AMD's kfd, an NVIDIA GPU, WSL's dxg, Mali, Adreno, Vivante,
 * an accel node)?  Every Linux OpenCL GPU driver works through one, so
 * --backend auto asks OpenCL only when one is there: loading the OpenCL
 * ICDs to find a CPU device that auto declines anyway (PoCL) costs 0.03 s
 * warm to 0.4 s cold and leaves LLVM's signal handlers in the process. */
int gpu_has_device_node(const char *dev_dir);

/* NULL-terminated list of compiled-in backends, in `auto` preference order. */
const GpuBackend *const *gpu_backend_list(void);

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
int gpu_frontend_open(const GpuBackend **be, GpuContext **ctx, const char *name,
                      const GpuConfig *cfg, const MpeLog *log, MpeError *err);

/* --- test hook: making a backend fail on purpose ---
 *
 * MPE_GPU_FAIL=<backend>:<where>[,<backend>:<where>...] in the environment
 * makes the named backend (cpu, opencl, cuda) fail where a real device
 * could, through the same return and cleanup paths as a real failure, so
 * that those paths run in tests on machines without a GPU.  <where> is
 *   probe        the backend reports it cannot run here
 *   build        open fails as on a kernel/program build error
 *   alloc        open fails as on device out-of-memory (after part of its
 *                buffers exist, so the partial cleanup runs too)
 *   submit@N     submit_frame of frame N fails (frames count from 0 in
 *   search@N     submission order) as on a lost device; motion_search with
 *   download@N   frame N as current, or its wait/download, likewise
 * A device lost mid-run stays lost: every later call on that context fails.
 * A backend named in MPE_GPU_FAIL is also accepted by --backend auto on a
 * device that auto would normally decline (PoCL's CPU device), so the
 * fallback can be exercised without a GPU.  Messages end in "(MPE_GPU_FAIL
 * test hook)" so an injected failure is never mistaken for a real one.
 * Nothing here runs unless the variable is set. */
typedef enum GpuFailWhere {
    GPU_FAIL_PROBE,
    GPU_FAIL_BUILD,
    GPU_FAIL_ALLOC,
    GPU_FAIL_SUBMIT,
    GPU_FAIL_SEARCH,
    GPU_FAIL_DOWNLOAD,
    GPU_FAIL_WHERE_COUNT
} GpuFailWhere;

#define GPU_FAIL_MAX_SLOTS 64   /* frame numbers are tracked for this many slots */

/* One backend context's view of the hook (lives in the context). */
typedef struct GpuFailHook {
    const char *backend;
    int armed[GPU_FAIL_WHERE_COUNT];
    long at[GPU_FAIL_WHERE_COUNT];          /* frame number for submit/search/download */
    long submitted;                         /* frames submitted so far */
    long slot_frame[GPU_FAIL_MAX_SLOTS];    /* frame number held by each slot, -1: none */
    int lost;
} GpuFailHook;

/* Reads MPE_GPU_FAIL for `backend`; a hook with nothing armed if unset. */
void gpu_fail_init(GpuFailHook *h, const char *backend);
/* Does MPE_GPU_FAIL name this backend at all? */
int gpu_fail_names(const char *backend);
/* For probe(): -ENODEV with why[] filled if "probe" is armed, else 0. */
int gpu_fail_probe(const char *backend, char *why, size_t why_size);
/* For open(): where is GPU_FAIL_BUILD or GPU_FAIL_ALLOC; negative errno and
 * err filled if armed, else 0. */
int gpu_fail_open(const GpuFailHook *h, GpuFailWhere where, MpeError *err);
/* For the per-frame calls: where is GPU_FAIL_SUBMIT (records which frame
 * now occupies slot), GPU_FAIL_SEARCH or GPU_FAIL_DOWNLOAD (slot: the
 * current picture's).  Negative errno and err filled if armed for the
 * slot's frame or the device was lost before, else 0. */
int gpu_fail_frame(GpuFailHook *h, GpuFailWhere where, int slot, MpeError *err);

/* --- what the GPU backends share on the host --- */

/* A GPU backend's read-back buffer: the padded Y, Cb, Cr planes packed
 * back to back (offsets off[0..2], plane widths pw[], heights ph[]), then 3
 * little-endian words per macroblock: dx | dy << 16, sad, sad0.  Copies the
 * planes into pic and, if mv is non-NULL, n_mb vectors into mv. */
void gpu_unpack_readback(MpePicture *pic, GpuMotion *mv, const uint8_t *buf, const size_t off[4],
                         const int pw[3], const int ph[3], int n_mb);

/* --- argument checks every backend makes, with the same messages --- */
int gpu_check_slot(int slots, int slot, MpeError *err);
int gpu_check_frame(const MpeFrame *frame, int width, int height, MpeError *err);
int gpu_check_range(int range, MpeError *err);

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

/* SAD of the 16x16 blocks at a (stride as) and b (stride bs). */
typedef uint32_t (*GpuSad16Fn)(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs);
uint32_t gpu_sad16_c(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs);
/* The fastest SAD this CPU has (SSE2 on x86-64, else the C one). */
GpuSad16Fn gpu_sad16_best(void);

/* Exhaustive search of every macroblock of cur's luma against ref's. */
void gpu_motion_search_c(GpuMotion *mv, const MpePicture *cur, const MpePicture *ref,
                         int range, GpuSad16Fn sad16);

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
    uint16_t *sum;    /* sum[y * stride + x], x 0..plane_w[0]-8, y 0..plane_h[0]-8 */
    ptrdiff_t stride; /* in elements */
} GpuBlockSums;

/* 0 or -ENOMEM */
int gpu_block_sums_alloc(GpuBlockSums *s, const MpePicture *pic);
void gpu_block_sums_free(GpuBlockSums *s);

typedef struct GpuCpuKernels {
    const char *name;   /* "c" (portable), "avx2" */
    /* gpu_convert_rgb_c's output for rows [row0, row1) */
    void (*convert_rgb_rows)(MpePicture *pic, const uint8_t *rgb, ptrdiff_t rgb_stride, int row0,
                             int row1);
    /* the sums at y = 16 * row0 .. 16 * row1 - 1 (those that exist; they
     * read 7 luma rows further) */
    void (*block_sums_rows)(GpuBlockSums *s, const MpePicture *pic, int row0, int row1);
    /* gpu_motion_search_c's vectors for rows [row0, row1), given both
     * pictures' complete sums; hint (may be NULL): a vector per macroblock
     * likely to be good, tried early (the previous picture's, say) */
    void (*motion_search_rows)(GpuMotion *mv, const MpePicture *cur, const GpuBlockSums *cur_sums,
                               const MpePicture *ref, const GpuBlockSums *ref_sums, int range,
                               const GpuMotion *hint, int row0, int row1);
} GpuCpuKernels;

/* The kernel sets this CPU can run, fastest first: index 0 is the one to
 * use; NULL past the last (the portable "c" set, always present). */
const GpuCpuKernels *gpu_cpu_kernels(int index);

#endif
