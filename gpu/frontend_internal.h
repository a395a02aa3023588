/* frontend_internal.h — how a backend plugs into the front-end framework.
 *
 * The framework (frontend.c) does what every backend would otherwise copy:
 * the registry and --backend auto, the argument checks (slot, frame size and
 * format, search range), the slot bookkeeping (which slot holds a frame,
 * which has vectors), the geometry (padded plane sizes, the packed layout
 * of host buffers), host-side packing of RGB rows and padding of YUV
 * frames, and the MPE_GPU_FAIL test hook.  A backend implements only its
 * device work through a GpuBackend table; adding one is one file with such
 * a table plus one row in frontend.c's list.  Callbacks are only called
 * with valid arguments (slots in range, both search slots submitted, ...). */
#ifndef MPE_FRONTEND_INTERNAL_H
#define MPE_FRONTEND_INTERNAL_H

#include "gpu/frontend.h"

/* The sizes every backend works with, computed once by the framework. */
typedef struct GpuGeometry {
    int width, height;           /* true frame size */
    int mb_w, mb_h;              /* macroblocks */
    int plane_w[3], plane_h[3];  /* Y, Cb, Cr padded to whole macroblocks */
    size_t plane_off[4];         /* Y, Cb, Cr packed back to back, and the end */
    size_t rgb_size;             /* a true-size RGB24 frame, rows packed */
    size_t mv_size;              /* 3 words per macroblock: dx | dy << 16, sad, sad0 */
    size_t in_size;              /* a host input buffer: the larger of rgb and planes */
} GpuGeometry;

/* A backend's own state. */
typedef struct GpuContext GpuContext;

/* Where submit's input goes, as input() says: either a host staging buffer
 * of geo->in_size bytes that the framework fills (RGB rows packed, or the
 * padded planes back to back at plane_off[]), or a picture that the
 * framework pads a YUV frame into (an RGB frame then goes to submit as is). */
typedef struct GpuInput {
    int rgb;              /* in: the frame is RGB (staging wanted), else YUV */
    uint8_t *staging;
    MpePicture *pic;
} GpuInput;

struct GpuBackend {
    const char *name;
    /* As gpu_backend_probe (the framework runs the test hook first), for
     * device index `device` (GpuConfig.device; -1: the backend's own
     * choice), which fails where that index does not exist. */
    int (*probe)(int device, int for_auto, char *why, size_t why_size);
    /* The device and whatever the kernels need before they are built; the
     * context must have room for cfg->slots slots.  A failure may leave a
     * partial *ctx, which close() then frees. */
    int (*open)(GpuContext **ctx, const GpuConfig *cfg, const GpuGeometry *geo, MpeError *err);
    /* Optional: build or load the kernels. */
    int (*build)(GpuContext *ctx, MpeError *err);
    /* One slot's buffers, slots 0..cfg->slots-1 in order. */
    int (*alloc_slot)(GpuContext *ctx, int slot, MpeError *err);
    /* Frees a context in any state open/build/alloc_slot left it (NULL: none). */
    void (*close)(GpuContext *ctx);
    /* Makes the slot's input free to overwrite (an earlier upload may still
     * read it) and says where its input goes. */
    int (*input)(GpuContext *ctx, int slot, GpuInput *in, MpeError *err);
    /* Starts upload and conversion: rgb is the RGB24 frame (already packed
     * into the staging buffer if input() gave one), NULL for a YUV frame,
     * whose padded planes are in place. */
    int (*submit)(GpuContext *ctx, int slot, const MpeFrame *rgb, MpeError *err);
    /* ref_has_mv: slot ref holds vectors of its own (a hint for the full
     * search if wanted; the hierarchical search's co-located candidates).
     * reach 0: the exhaustive +-range search; else the hierarchical one
     * (frontend.h), on the pyramids submit built (cfg->pyramid). */
    int (*search)(GpuContext *ctx, int cur, int ref, int range, int reach, int ref_has_mv,
                  MpeError *err);
    /* Blocks until the slot's planes (and vectors, if has_mv) are on the host. */
    int (*wait)(GpuContext *ctx, int slot, int has_mv, MpeError *err);
    /* After wait(): planes into pic (if non-NULL: only a backend with
     * host_planes is given NULL), vectors into mv if mv is non-NULL. */
    int (*download)(GpuContext *ctx, int slot, MpePicture *pic, GpuMotion *mv, MpeError *err);
    /* Optional (NULL: no timers); valid after wait(slot). */
    int (*timings)(GpuContext *ctx, int slot, int has_mv, GpuTimings *t);
    /* 1: runs the hierarchical search (cfg->pyramid); 0: open refuses it */
    int hier;
    /* Optional: the slot's planes, where they already are on the host. */
    const MpePicture *(*host_planes)(GpuContext *ctx, int slot);
    /* Optional (NULL: the caller counts them): the macroblocks' intra costs
     * counted at submit when cfg->intra_costs was set, waited for; -ENOSYS
     * where they were not counted. */
    int (*intra_costs)(GpuContext *ctx, int slot, uint32_t *intra, MpeError *err);
};

extern const GpuBackend gpu_backend_cpu;
#ifdef MPE_HAVE_OPENCL
extern const GpuBackend gpu_backend_opencl;
#endif
#ifdef MPE_HAVE_CUDA
extern const GpuBackend gpu_backend_cuda;
#endif

/* For a GPU backend's download: copies the planes of a read-back buffer
 * laid out as geo describes (planes at plane_off[0..2], then the vectors at
 * plane_off[3]) into pic and, if mv is non-NULL, the vectors into mv. */
/* The vectors alone: 3 words per macroblock (dx | dy << 16, sad, sad0). */
void gpu_unpack_vectors(GpuMotion *mv, const uint8_t *words, const GpuGeometry *geo);
void gpu_unpack_readback(MpePicture *pic, GpuMotion *mv, const uint8_t *buf,
                         const GpuGeometry *geo);

#endif
