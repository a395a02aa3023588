/* frontend_cuda_hier.h — the CUDA front end's hierarchical search
 * (frontend_cuda_hier.cu) and the device helpers it shares with the
 * exhaustive search (frontend_cuda.cu).  CUDA C++ only. */
#ifndef MPE_FRONTEND_CUDA_HIER_H
#define MPE_FRONTEND_CUDA_HIER_H

#include <cuda_runtime.h>
#include <stdint.h>

/* SAD of 4 byte pairs, added to acc (one instruction). */
static __device__ __forceinline__ uint32_t sad4_acc(uint32_t a, uint32_t b, uint32_t acc)
{
    uint32_t d;
    asm("vabsdiff4.u32.u32.u32.add %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(acc));
    return d;
}

/* A candidate as a 64-bit key whose order is the tie-break rule of
 * frontend.h: SAD, then |dx|+|dy|, then dy, then dx. */
static __device__ __forceinline__ unsigned long long cand_key(uint32_t sad, int dx, int dy)
{
    return ((unsigned long long)sad << 40) | ((unsigned long long)(abs(dx) + abs(dy)) << 24) |
           ((unsigned long long)(dy + 2048) << 12) | (unsigned long long)(dx + 2048);
}

/* One level of the pyramid on stream: dst (sw/2 x sh/2, rows packed) from
 * src (sw x sh, rows packed). */
cudaError_t gpu_cuda_decimate(const uint8_t *src, int sw, uint8_t *dst, int sh, cudaStream_t stream);

/* Stages 2-5 of frontend.h's hierarchical search on stream: the pyramids
 * and luma planes (rows packed) of the current and reference pictures,
 * coarse: scratch of a word per macroblock, prev: the reference's own
 * vectors (3 words per macroblock, used if has_prev), out: 3 words per
 * macroblock. */
cudaError_t gpu_cuda_hier_search(const uint8_t *cur_quarter, const uint8_t *ref_quarter,
                                 const uint8_t *cur_half, const uint8_t *ref_half,
                                 const uint8_t *cur, const uint8_t *ref, int plane_w, int plane_h,
                                 int mb_w, int mb_h, int range, int reach, uint32_t *coarse,
                                 const uint32_t *prev, int has_prev, uint32_t *out,
                                 cudaStream_t stream);

#endif
