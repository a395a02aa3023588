/* frontend_cuda_hier.cu — the hierarchical motion search of frontend.h in
 * CUDA: the pyramid, stages 2-3 and stages 4-5, bit-identical to the C
 * reference (gpu_motion_search_hier_c).
 *
 * ptxas of CUDA 13.0 for sm_90 (-O1 and up; the 580 driver's JIT of the
 * PTX likewise) miscompiles max(max(a, -k), b): it fuses the two into one
 * three-input VIMNMX3 and drops the negation, computing max(max(a, k), b).
 * Minimal reproducer (H100: 209 of 256 threads wrong at -O3, none at
 * -Xptxas -O0; the same with k per thread, or k = p / 2 also used as +k):
 *     __global__ void f(const int *a, const int *b, int k, int *lo)
 *     { int i = threadIdx.x; lo[i] = max(max(a[i], -k), b[i]); }
 * The half-resolution stage's lower bounds had that form, so every
 * candidate failed them and the coarse vectors came out as (4094, 4094);
 * compute-sanitizer (memcheck, racecheck, initcheck, synccheck) found
 * nothing.  Those bounds are now taken two operands at a time. */
extern "C" {
#include "gpu/frontend.h"
}
#include "gpu/frontend_cuda_hier.h"

/*  * The pyramid is built at submit; the search is two kernels, one block per
 * macroblock each: stages 2-3 (hier_coarse_kernel), then stages 4-5
 * (hier_final_kernel), which takes its neighbours' coarse vectors.  Every
 * minimum is a minimum of cand_key, the tie-break order.  Each stage's
 * candidate box is computed once, with the reference's bounds, and only
 * vectors inside it are keyed: a key outside any box can never reach the
 * next stage (the windows below are never empty). */
#define COARSE_T 256
#define FINAL_T 128
/* the 1/4-resolution window: a 4x4 block over +-(GPU_MAX_REACH / 4) */
#define QWIN_SIDE (4 + 2 * (GPU_MAX_REACH / 4))
/* the final window: a 16x16 block over +-GPU_MAX_SEARCH_RANGE */
#define FWIN_SIDE (16 + 2 * GPU_MAX_SEARCH_RANGE)

__device__ __forceinline__ unsigned long long warp_min(unsigned long long v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        unsigned long long w = __shfl_xor_sync(0xffffffffu, v, o);
        v = w < v ? w : v;
    }
    return v;
}

/* The block's minimum key, to every thread (red: a word per warp, plus one). */
template <int THREADS>
__device__ __forceinline__ unsigned long long block_min(unsigned long long v,
                                                        unsigned long long *red)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_min(v);
    if (lane == 0)
        red[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < THREADS / 32 ? red[lane] : ~0ull;
        v = warp_min(v);
        if (lane == 0)
            red[THREADS / 32] = v;
    }
    __syncthreads();
    v = red[THREADS / 32];
    __syncthreads();   /* red may be reused at once */
    return v;
}

__device__ __forceinline__ int key_dx(unsigned long long k) { return (int)(k & 0xFFF) - 2048; }
__device__ __forceinline__ int key_dy(unsigned long long k) { return (int)((k >> 12) & 0xFFF) - 2048; }

/* the 4 bytes at byte offset o of a word-aligned shared array */
__device__ __forceinline__ uint32_t word_at(const uint32_t *w, int o)
{
    return __funnelshift_r(w[o >> 2], w[(o >> 2) + 1], (o & 3) * 8);
}

/* One level of the pyramid: each sample the rounded mean of 2x2. */
static __global__ void decimate_kernel(const uint8_t *__restrict__ src, int sw, uint8_t *__restrict__ dst,
                                int dw, int dh)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= dw || y >= dh)
        return;
    const uint8_t *a = src + (size_t)2 * y * sw + 2 * x;
    dst[(size_t)y * dw + x] = (uint8_t)((a[0] + a[1] + a[sw] + a[sw + 1] + 2) >> 2);
}

/* Stages 2-3: coarse[mb] = 2h as dx | dy << 16 (gpu_hier_coarse_rows). */
static __global__ void __launch_bounds__(COARSE_T)
    hier_coarse_kernel(const uint8_t *__restrict__ cq, const uint8_t *__restrict__ rq,
                       const uint8_t *__restrict__ ch, const uint8_t *__restrict__ rh, int qw,
                       int qh, int mb_w, int reach, uint32_t *__restrict__ coarse)
{
    /* +8: word_at reads a word past a row's last candidate */
    __shared__ __align__(16) uint8_t win[QWIN_SIDE * QWIN_SIDE + 8];
    __shared__ unsigned long long red[COARSE_T / 32 + 1];
    const int t = threadIdx.x, mb = blockIdx.x;
    const int mbx = mb % mb_w, mby = mb / mb_w;

    /* 1/4 resolution: the 4x4 block at (x0, y0), u in [-reach/4, reach/4]^2
     * inside the plane; its reference window staged once */
    int x0 = 4 * mbx, y0 = 4 * mby, lim = reach / 4;
    int lo_x = max(-x0, -lim), hi_x = min(qw - 4 - x0, lim);
    int lo_y = max(-y0, -lim), hi_y = min(qh - 4 - y0, lim);
    const int nx = hi_x - lo_x + 1, ny = hi_y - lo_y + 1, ww = nx + 3;
    for (int i = t; i < ww * (ny + 3); i += COARSE_T) {
        const int wy = i / ww, wx = i - wy * ww;
        win[i] = rq[(size_t)(y0 + lo_y + wy) * qw + x0 + lo_x + wx];
    }
    uint32_t c[4];
#pragma unroll
    for (int r = 0; r < 4; r++) {
        const uint8_t *p = cq + (size_t)(y0 + r) * qw + x0;
        c[r] = p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    }
    __syncthreads();
    unsigned long long mine = ~0ull;
    for (int i = t; i < nx * ny; i += COARSE_T) {
        const int iy = i / nx, ix = i - iy * nx;
        uint32_t sad = 0;
#pragma unroll
        for (int r = 0; r < 4; r++)
            sad = sad4_acc(c[r], word_at((const uint32_t *)win, (iy + r) * ww + ix), sad);
        const unsigned long long k = cand_key(sad, lo_x + ix, lo_y + iy);
        mine = k < mine ? k : mine;
    }
    const unsigned long long ku = block_min<COARSE_T>(mine, red);
    if (t >= 32)
        return;

    /* 1/2 resolution: the 8x8 block, h in 2u + [-2, 2]^2, |h| <= reach/2,
     * inside the plane; one lane per candidate */
    const int ux = key_dx(ku), uy = key_dy(ku), hw = 2 * qw, hh = 2 * qh;
    x0 = 8 * mbx;
    y0 = 8 * mby;
    lim = reach / 2;
    mine = ~0ull;
    /* in 2u + [-2, 2]^2 by construction, so only the plane and |h| <=
     * reach/2 are tested: written as max(max(-x0, -lim), 2 * ux - 2), the
     * lower bound was miscompiled (see the top of this file) */
    const int dx = 2 * ux - 2 + t % 5, dy = 2 * uy - 2 + t / 5;
    if (t < 25 && dx >= max(-x0, -lim) && dx <= min(hw - 8 - x0, lim) && dy >= max(-y0, -lim) &&
        dy <= min(hh - 8 - y0, lim)) {
        const uint8_t *a = ch + (size_t)y0 * hw + x0, *b = rh + (size_t)(y0 + dy) * hw + x0 + dx;
        uint32_t sad = 0;
        for (int y = 0; y < 8; y++)
            for (int x = 0; x < 8; x++)
                sad += (uint32_t)abs((int)a[y * hw + x] - (int)b[y * hw + x]);
        mine = cand_key(sad, dx, dy);
    }
    const unsigned long long kh = warp_min(mine);
    if (t == 0)
        coarse[mb] = ((uint32_t)(2 * key_dx(kh)) & 0xFFFF) | ((uint32_t)(2 * key_dy(kh)) << 16);
}

/* Stages 4-5 (gpu_hier_candidates, gpu_hier_window): the best of the
 * candidates centres the exhaustive window, staged in shared memory. */
static __global__ void __launch_bounds__(FINAL_T)
    hier_final_kernel(const uint8_t *__restrict__ cur, const uint8_t *__restrict__ ref, int plane_w,
                      int plane_h, int mb_w, int mb_h, int range, int reach,
                      const uint32_t *__restrict__ coarse, const uint32_t *__restrict__ prev,
                      int has_prev, uint32_t *__restrict__ out)
{
    __shared__ __align__(16) uint8_t win[FWIN_SIDE * FWIN_SIDE + 8];
    __shared__ uint32_t blk[64];
    __shared__ unsigned long long red[FINAL_T / 32 + 1];
    __shared__ uint32_t sad0;
    const int t = threadIdx.x, mb = blockIdx.x;
    const int mbx = mb % mb_w, mby = mb / mb_w;
    const int x0 = 16 * mbx, y0 = 16 * mby;
    /* the box every full-resolution vector stays in */
    const int box_lo_x = max(-x0, -reach), box_hi_x = min(plane_w - 16 - x0, reach);
    const int box_lo_y = max(-y0, -reach), box_hi_y = min(plane_h - 16 - y0, reach);

    if (t < 64)   /* planes and rows are 16-aligned */
        blk[t] = *(const uint32_t *)(cur + (size_t)(y0 + (t >> 2)) * plane_w + x0 + 4 * (t & 3));

    /* candidates in gpu_hier_candidates' order: own, zero, co-located,
     * left, right, top, bottom; 16 threads each, one row per thread */
    const int ci = t >> 4, row = t & 15;
    int have = 0;
    uint32_t v = 0;
    switch (ci) {
    case 0: have = 1; v = coarse[mb]; break;
    case 1: have = 1; break;
    case 2: have = has_prev; v = has_prev ? prev[3 * mb] : 0; break;
    case 3: have = mbx > 0; v = have ? coarse[mb - 1] : 0; break;
    case 4: have = mbx < mb_w - 1; v = have ? coarse[mb + 1] : 0; break;
    case 5: have = mby > 0; v = have ? coarse[mb - mb_w] : 0; break;
    case 6: have = mby < mb_h - 1; v = have ? coarse[mb + mb_w] : 0; break;
    default: break;
    }
    const int cdx = (int16_t)(v & 0xFFFF), cdy = (int16_t)(v >> 16);
    have = have && cdx >= box_lo_x && cdx <= box_hi_x && cdy >= box_lo_y && cdy <= box_hi_y;
    uint32_t s = 0;
    if (have) {
        const uint8_t *a = cur + (size_t)(y0 + row) * plane_w + x0;
        const uint8_t *b = ref + (size_t)(y0 + cdy + row) * plane_w + x0 + cdx;
#pragma unroll
        for (int x = 0; x < 16; x++)
            s += (uint32_t)abs((int)a[x] - (int)b[x]);
    }
#pragma unroll
    for (int o = 8; o > 0; o >>= 1)   /* the 16 rows of one candidate: one half-warp */
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if (ci == 1 && row == 0)
        sad0 = s;
    const unsigned long long kc = block_min<FINAL_T>(have && row == 0 ? cand_key(s, cdx, cdy) : ~0ull, red);

    /* the window centre +-range, inside the box (the centre is in it) */
    const int cx = key_dx(kc), cy = key_dy(kc);
    const int lo_x = max(box_lo_x, cx - range), hi_x = min(box_hi_x, cx + range);
    const int lo_y = max(box_lo_y, cy - range), hi_y = min(box_hi_y, cy + range);
    const int nx = hi_x - lo_x + 1, ny = hi_y - lo_y + 1, ww = nx + 15;
    for (int i = t; i < ww * (ny + 15); i += FINAL_T) {
        const int wy = i / ww, wx = i - wy * ww;
        win[i] = ref[(size_t)(y0 + lo_y + wy) * plane_w + x0 + lo_x + wx];
    }
    __syncthreads();
    unsigned long long mine = kc;   /* the centre: the answer unless beaten */
    for (int i = t; i < nx * ny; i += FINAL_T) {
        const int iy = i / nx, ix = i - iy * nx;
        uint32_t sad = 0;
        for (int r = 0; r < 16; r++) {
            const int o = (iy + r) * ww + ix;
#pragma unroll
            for (int w = 0; w < 4; w++)
                sad = sad4_acc(blk[4 * r + w], word_at((const uint32_t *)win, o + 4 * w), sad);
        }
        const unsigned long long k = cand_key(sad, lo_x + ix, lo_y + iy);
        mine = k < mine ? k : mine;
    }
    const unsigned long long k = block_min<FINAL_T>(mine, red);
    if (t == 0) {
        out[3 * mb] = ((uint32_t)key_dx(k) & 0xFFFF) | ((uint32_t)key_dy(k) << 16);
        out[3 * mb + 1] = (uint32_t)(k >> 40);
        out[3 * mb + 2] = sad0;
    }
}

cudaError_t gpu_cuda_decimate(const uint8_t *src, int sw, uint8_t *dst, int sh, cudaStream_t stream)
{
    const int dw = sw / 2, dh = sh / 2;
    dim3 block(32, 8), grid((dw + 31) / 32, (dh + 7) / 8);
    decimate_kernel<<<grid, block, 0, stream>>>(src, sw, dst, dw, dh);
    return cudaGetLastError();
}

cudaError_t gpu_cuda_hier_search(const uint8_t *cur_quarter, const uint8_t *ref_quarter,
                                 const uint8_t *cur_half, const uint8_t *ref_half,
                                 const uint8_t *cur, const uint8_t *ref, int plane_w, int plane_h,
                                 int mb_w, int mb_h, int range, int reach, uint32_t *coarse,
                                 const uint32_t *prev, int has_prev, uint32_t *out,
                                 cudaStream_t stream)
{
    const int nmb = mb_w * mb_h;
    hier_coarse_kernel<<<nmb, COARSE_T, 0, stream>>>(cur_quarter, ref_quarter, cur_half, ref_half,
                                                     plane_w / 4, plane_h / 4, mb_w, reach, coarse);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return e;
    hier_final_kernel<<<nmb, FINAL_T, 0, stream>>>(cur, ref, plane_w, plane_h, mb_w, mb_h, range,
                                                   reach, coarse, prev, has_prev, out);
    return cudaGetLastError();
}
