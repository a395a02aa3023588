/* bliinds_cuda.cu — BLIINDS-II in CUDA: the features and score of
 * bliinds_cpu.c (../shared/reference/bliinds/SPEC.md; section numbers below
 * are its), with only the 8-bit image going up and the 24 features coming
 * back.
 *
 * Per score(), on one stream:
 *   upload      the 8-bit image, staged through pinned memory (iqa_cuda.h:
 *               in pieces whose DMA overlaps the host's copy of the next,
 *               or copied by the caller's pool's threads)
 *   blocks L1   one thread per 5x5 block: pixels staged in shared memory,
 *               the separable DCT, the seven block parameters, written as
 *               maps (no rearranged image in global memory)
 *   downsample  3x3 Gaussian over zero padding at odd rows and columns, in
 *               double, into the scale-2 image; blocks L2; again for L3
 *   pooling     per (scale, parameter) job, 12 jobs side by side: the k-th
 *               largest value by MSB-first radix selection on the values'
 *               order-preserving 64-bit keys (11-bit digits, 6 passes of a
 *               histogram kernel and a bin-picking kernel, jobs leaving as
 *               soon as their bin is settled), then one pass of fixed-order
 *               sums: all values, and those at or above the threshold
 *   features    24 doubles down; bliinds_predict on the host
 *
 * Same numbers as the C code: every operation whose rounding the C code
 * fixes is done here in the same order in double precision, with
 * __dmul_rn/__dadd_rn where nvcc would otherwise contract a multiply and an
 * add into an FMA (which rounds once instead of twice); divisions and square
 * roots are IEEE (correctly rounded) in both.  The DCT matrix and the
 * Gaussian taps come from the same expressions on the host, the gamma table
 * from bliinds_gamma_table_init itself.  So the maps should match C's bit
 * for bit (an ulp of difference in a libm cos between compilers would show
 * as ~1e-16 relative, and on blocks whose AC is pure round-off as the SPEC
 * §10 amount); the pooled sums differ from C's only in summation order.
 *
 * Determinism: no floating-point atomics; histogram counts are integer
 * atomics (exact in any order); every double sum is a fixed tree over a
 * fixed launch shape.  Same input, same bits, every run.
 *
 * What bounds each kernel (H200, estimates for 2048x2048 / 512x512 — to be
 * confirmed by the benchmark):
 *   blocks      FP64 issue: ~1,300 DP instructions per block (the two DCT
 *               passes without FMA ~450, 21 IEEE divisions, 4 square
 *               roots); 466k blocks at L1 -> ~40 us; at 512x512 one wave of
 *               132 CUDA blocks, latency-bound, ~5-10 us per scale.
 *               128 registers (ptxas, sm_90; 8 bytes spilled), 25 KB of
 *               shared memory: 2 CUDA blocks = 16 warps per SM
 *   downsample  memory/latency, a few us
 *   hist/pick   L2 bandwidth for the first passes (8 bytes per map entry,
 *               maps just written, L2-resident), then launch latency as
 *               jobs settle: ~12 launches x 2-4 us
 *   sum/finish  one more read of the maps; the finish kernel is 12 threads
 *   upload      PCIe (4 MB at 2048x2048) and the host's copy into pinned
 *               memory, overlapped chunk by chunk; likely the largest stage
 *               at 2048x2048
 *
 * The runtime is linked statically: without a driver or device the probe
 * says why and bliinds_impl_find("auto") moves on to bliinds_cpu. */
extern "C" {
#include "common/cuda.h"
#include "common/timer.h"
#include "iqa/bliinds.h"
#include "iqa/bliinds_cuda_internal.h"
#include "iqa/bliinds_internal.h"
}
#include "iqa/iqa_cuda.h"

#include <cuda_runtime.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NSCALES 3
#define NPOOLED 4                  /* zeta, gamma, subband, orientvar */
#define NJOBS (NSCALES * NPOOLED)  /* job q = scale * 4 + map: features 2q, 2q + 1 */
#define MAX_DIM (1 << 20)
#define PI 3.14159265358979323846

/* Everything up to BliindsContext has internal linkage: kernels are C++
 * functions, and other .cu files of the library may use the same names. */
namespace {

/* ---- exact double arithmetic ------------------------------------------ */

/* Explicitly rounded operations: never fused into an FMA, so each rounds
 * where the C code's does. */
__device__ __forceinline__ double rn_add(double a, double b)
{
    return __dadd_rn(a, b);
}

__device__ __forceinline__ double rn_sub(double a, double b)
{
    return __dsub_rn(a, b);
}

__device__ __forceinline__ double rn_mul(double a, double b)
{
    return __dmul_rn(a, b);
}

__device__ __forceinline__ double rn_div(double a, double b)
{
    return __ddiv_rn(a, b);
}

/* ---- per-block parameters (§4, §5) ------------------------------------ */

/* A CUDA block handles BT_X x BT_Y DCT blocks; their pixels (5x5 windows at
 * stride 3, so 3*BT + 2 per side) sit in shared memory.  Reads of a row of
 * the tile by a warp are 3 doubles apart: conflict-free. */
#define BT_X 32
#define BT_Y 8
#define BT_THREADS (BT_X * BT_Y)
#define TILE_W (3 * BT_X + 2)
#define TILE_H (3 * BT_Y + 2)

/* The gamma table (80 KB) does not fit in constant memory (64 KB); its
 * every 16th entry (5 KB) goes into each CUDA block's shared memory for the
 * first 10 steps of the search, the last 4 read one 128-byte line of the
 * full table in global memory (L1-resident). */
#define GAMMA_STRIDE 16
#define GAMMA_COARSE ((BLIINDS_GAMMA_TABLE_SIZE + GAMMA_STRIDE - 1) / GAMMA_STRIDE)

typedef struct DctMatrix {
    double c[5][5];   /* C[k][n] = a(k) cos(pi (2n+1) k / 10), as bliinds_cpu.c */
} DctMatrix;

typedef struct MapOut {
    double *m[BLIINDS_NMAPS];
} MapOut;

/* Mean (divide by N) and sample variance (divide by N - 1, about the mean,
 * two passes) of x or of |x|: bliinds_cpu.c's lanes_stats for one block. */
template <int N, bool MAG>
__device__ __forceinline__ void mean_var(const double (&x)[N], double &mean, double &var)
{
    double s = 0.0;
#pragma unroll
    for (int i = 0; i < N; i++)
        s = rn_add(s, MAG ? fabs(x[i]) : x[i]);
    mean = rn_div(s, (double)N);
    double v = 0.0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        const double e = rn_sub(MAG ? fabs(x[i]) : x[i], mean);
        v = rn_add(v, rn_mul(e, e));
    }
    var = rn_div(v, (double)(N - 1));
}

/* std / (mean + 1e-7) of the magnitudes (§5.1, §5.4) */
template <int N>
__device__ __forceinline__ double zeta_of(const double (&x)[N])
{
    double mean, var;
    mean_var<N, true>(x, mean, var);
    return rn_div(__dsqrt_rn(var), rn_add(mean, 1e-7));
}

/* §5.2: n = #{k : r_k >= rho} (the table decreases strictly, so this is the
 * n of bliinds_cpu.c's search whatever the way it is found), gamma =
 * g_{n-1}, or 11 for n = 0 (including a NaN rho) and n = 9971. */
__device__ __forceinline__ double gamma_lookup(const double *s_coarse,
                                               const double *__restrict__ ratio, double rho)
{
    int c = 0;   /* leading coarse entries >= rho */
#pragma unroll
    for (int step = 512; step >= 1; step >>= 1)
        if (c + step <= GAMMA_COARSE && s_coarse[c + step - 1] >= rho)
            c += step;
    int n = 0;
    if (c > 0) {
        /* ratio[base] >= rho; ratio[base + 16] < rho or past the end */
        const int base = (c - 1) * GAMMA_STRIDE;
        int f = 0;
#pragma unroll
        for (int step = GAMMA_STRIDE / 2; step >= 1; step >>= 1) {
            const int k = base + f + step;
            if (k < BLIINDS_GAMMA_TABLE_SIZE && __ldg(ratio + k) >= rho)
                f += step;
        }
        n = base + 1 + f;
    }
    return n >= 1 && n < BLIINDS_GAMMA_TABLE_SIZE ? rn_add(0.03, rn_mul((double)(n - 1), 0.001))
                                                  : BLIINDS_GAMMA_NONE;
}

/* One thread per 5x5 block (i, j) of a scale image (width x height, rows
 * packed): block = image rows 3i-1 .. 3i+3, columns 3j-1 .. 3j+3, zero
 * outside (§3).  DCT as bliinds_cpu.c: the vertical 5-point transform of
 * each of the block's columns, then the horizontal one, each a left-to-right
 * sum of products.  Writes the seven maps at i * cols + j. */
template <typename Pix>
__global__ void __launch_bounds__(BT_THREADS, 2)
    blocks_kernel(const Pix *__restrict__ img, int width, int height, int rows, int cols,
                  const double *__restrict__ ratio, const double *__restrict__ coarse,
                  DctMatrix dct, MapOut out)
{
    __shared__ double tile[TILE_H][TILE_W];
    __shared__ double s_coarse[GAMMA_COARSE];
    const int tid = threadIdx.y * BT_X + threadIdx.x;
    const int bi0 = blockIdx.y * BT_Y, bj0 = blockIdx.x * BT_X;
    const int y0 = 3 * bi0 - 1, x0 = 3 * bj0 - 1;

    for (int k = tid; k < TILE_H * TILE_W; k += BT_THREADS) {
        const int ty = k / TILE_W, tx = k - ty * TILE_W;
        const int y = y0 + ty, x = x0 + tx;
        tile[ty][tx] = y >= 0 && y < height && x >= 0 && x < width
                           ? (double)img[(size_t)y * width + x]
                           : 0.0;
    }
    for (int k = tid; k < GAMMA_COARSE; k += BT_THREADS)
        s_coarse[k] = coarse[k];
    __syncthreads();

    const int i = bi0 + threadIdx.y, j = bj0 + threadIdx.x;
    if (i >= rows || j >= cols)
        return;
    const int py = 3 * threadIdx.y, px = 3 * threadIdx.x;

    double d[25];   /* d[u*5 + v]; d[0] (DC) is never used */
#pragma unroll
    for (int u = 0; u < 5; u++) {
        double col[5];
#pragma unroll
        for (int n = 0; n < 5; n++) {
            double s = rn_mul(dct.c[u][0], tile[py][px + n]);
#pragma unroll
            for (int r = 1; r < 5; r++)
                s = rn_add(s, rn_mul(dct.c[u][r], tile[py + r][px + n]));
            col[n] = s;
        }
#pragma unroll
        for (int v = 0; v < 5; v++) {
            double s = rn_mul(col[0], dct.c[v][0]);
#pragma unroll
            for (int n = 1; n < 5; n++)
                s = rn_add(s, rn_mul(col[n], dct.c[v][n]));
            d[u * 5 + v] = s;
        }
    }

    /* the coefficient lists of bliinds_cpu.c, in its order (its sums run
     * in this order) */
    const double ac[24] = { d[1],  d[2],  d[3],  d[4],  d[5],  d[6],  d[7],  d[8],
                            d[9],  d[10], d[11], d[12], d[13], d[14], d[15], d[16],
                            d[17], d[18], d[19], d[20], d[21], d[22], d[23], d[24] };
    const double band1[5] = { d[1], d[2], d[5], d[6], d[10] };
    const double band2[13] = { d[3],  d[4],  d[7],  d[8],  d[9],  d[11], d[12],
                               d[13], d[15], d[16], d[17], d[20], d[21] };
    const double band3[6] = { d[14], d[18], d[19], d[22], d[23], d[24] };
    const double ori1[8] = { d[1], d[2], d[3], d[4], d[7], d[8], d[9], d[14] };
    const double ori2[8] = { d[6], d[12], d[13], d[17], d[18], d[19], d[23], d[24] };
    const double ori3[8] = { d[5], d[10], d[15], d[20], d[11], d[16], d[21], d[22] };
    double mean, var;

    /* §5.1 */
    const double zeta = zeta_of(ac);

    /* §5.2: epsilon on the squared mean absolute deviation */
    mean_var<24, false>(ac, mean, var);
    double dev = 0.0;
#pragma unroll
    for (int k = 0; k < 24; k++)
        dev = rn_add(dev, fabs(rn_sub(ac[k], mean)));
    const double mad = rn_div(dev, 24.0);
    const double rho = rn_div(var, rn_add(rn_mul(mad, mad), 1e-7));
    const double gamma = gamma_lookup(s_coarse, ratio, rho);

    /* §5.3, with the original's E_3 + E_1 denominator for R2 */
    double e1, e2, e3;
    mean_var<5, false>(band1, mean, e1);
    mean_var<13, false>(band2, mean, e2);
    mean_var<6, false>(band3, mean, e3);
    const double e12 = rn_div(rn_add(e1, e2), 2.0);
    const double r3 = rn_div(fabs(rn_sub(e3, e12)), rn_add(rn_add(e3, e12), 1e-8));
    const double r2 = rn_div(fabs(rn_sub(e2, e1)), rn_add(rn_add(e3, e1), 1e-8));
    const double subband = rn_div(rn_add(r2, r3), 2.0);

    /* §5.4 */
    const double z0 = zeta_of(ori1), z1 = zeta_of(ori2), z2 = zeta_of(ori3);
    const double m = rn_div(rn_add(rn_add(z0, z1), z2), 3.0);
    const double a0 = rn_sub(z0, m), a1 = rn_sub(z1, m), a2 = rn_sub(z2, m);
    const double ov = rn_div(rn_add(rn_add(rn_mul(a0, a0), rn_mul(a1, a1)), rn_mul(a2, a2)), 2.0);

    const size_t at = (size_t)i * cols + j;
    out.m[BLIINDS_MAP_ZETA][at] = zeta;
    out.m[BLIINDS_MAP_GAMMA][at] = gamma;
    out.m[BLIINDS_MAP_SUBBAND][at] = subband;
    out.m[BLIINDS_MAP_ORIENTVAR][at] = ov;
    out.m[BLIINDS_MAP_ORI1][at] = z0;
    out.m[BLIINDS_MAP_ORI2][at] = z1;
    out.m[BLIINDS_MAP_ORI3][at] = z2;
}

/* ---- scales (§7) ------------------------------------------------------- */

#define DS_X 32
#define DS_Y 8

template <typename Pix>
__device__ __forceinline__ double pixel(const Pix *__restrict__ src, int w, int h, int y, int x)
{
    return y < h && x < w ? (double)src[(size_t)y * w + x] : 0.0;
}

/* dst (w/2 x h/2) = the 3x3 Gaussian of src at its odd rows and columns,
 * zero outside src: bliinds_cpu.c's downsample_row, same operation order
 * (horizontal taps t, c, t per row, then the rows with t, c, t). */
template <typename Pix>
__global__ void __launch_bounds__(DS_X *DS_Y)
    downsample_kernel(const Pix *__restrict__ src, int sw, int sh, double *__restrict__ dst,
                      int dw, int dh, double t, double c)
{
    const int x = blockIdx.x * DS_X + threadIdx.x, y = blockIdx.y * DS_Y + threadIdx.y;
    if (x >= dw || y >= dh)
        return;
    double h[3];
#pragma unroll
    for (int r = 0; r < 3; r++) {
        const int sy = 2 * y + r;   /* rows 2y .. 2y+2 around the kept row 2y+1 */
        h[r] = rn_add(rn_add(rn_mul(t, pixel(src, sw, sh, sy, 2 * x)),
                         rn_mul(c, pixel(src, sw, sh, sy, 2 * x + 1))),
                    rn_mul(t, pixel(src, sw, sh, sy, 2 * x + 2)));
    }
    dst[(size_t)y * dw + x] = rn_add(rn_add(rn_mul(t, h[0]), rn_mul(c, h[1])), rn_mul(t, h[2]));
}

/* ---- pooling (§6) ------------------------------------------------------ */

/* Job q: the mean of the n values of a map and the mean of its k largest
 * (k smallest for gamma: the k largest of sign * x with sign = -1, as
 * bliinds_pool_top does; negation is exact). */
typedef struct PoolJob {
    const double *x;
    unsigned n, k;
    double sign;
} PoolJob;

/* Radix selection state of a job.  The k-th largest key has the high bits
 * `hi` (the `known` bits the passes so far settled); k_rem of the k largest
 * lie among the keys with those high bits, the others above them.  Once
 * done, the k largest are the keys >= lo minus (count - k) copies of the
 * value at lo: lo = hi when a whole bin belongs to the k largest (then
 * count = k), or the exact k-th largest key after the last pass (ties). */
typedef struct PoolState {
    unsigned long long hi, lo;
    unsigned k_rem;
    int done;
} PoolState;

typedef struct PoolPartial {
    double sum, sum_ge;           /* all values; those with key >= lo */
    unsigned long long count_ge;
} PoolPartial;

#define POOL_THREADS 256
#define POOL_PER_THREAD 16
#define POOL_CHUNK (POOL_THREADS * POOL_PER_THREAD)   /* map entries per CUDA block */
#define RADIX_BITS 11
#define RADIX_BINS (1 << RADIX_BITS)
#define RADIX_PASSES ((64 + RADIX_BITS - 1) / RADIX_BITS)   /* 6: 5 x 11 bits + 9 */
#define PICK_PER_THREAD (RADIX_BINS / POOL_THREADS)

/* Unsigned keys in the order of the doubles (-0 just below +0). */
__device__ __forceinline__ unsigned long long order_key(double v)
{
    const unsigned long long b = (unsigned long long)__double_as_longlong(v);
    return b >> 63 ? ~b : b | 0x8000000000000000ull;
}

__device__ __forceinline__ double key_value(unsigned long long key)
{
    const unsigned long long b = key >> 63 ? key & 0x7fffffffffffffffull : ~key;
    return __longlong_as_double((long long)b);
}

__global__ void pool_init_kernel(const PoolJob *__restrict__ jobs, PoolState *__restrict__ st)
{
    const int q = threadIdx.x;
    if (q < NJOBS) {
        st[q].hi = 0;
        st[q].lo = 0;
        st[q].k_rem = jobs[q].k;
        st[q].done = 0;
    }
}

/* Pass over the next `bits` bits below the `known` ones: counts, per bin,
 * the keys whose high bits are the job's hi.  Grid: (chunks, jobs).
 * Shared-memory counts with warp-aggregated atomics (the first pass puts
 * most values of a map into a few exponent bins), then one global atomic
 * per non-empty bin. */
__global__ void __launch_bounds__(POOL_THREADS)
    pool_hist_kernel(const PoolJob *__restrict__ jobs, const PoolState *__restrict__ st,
                     unsigned *__restrict__ hist, int known, int bits)
{
    __shared__ unsigned h[RADIX_BINS];
    const int q = blockIdx.y;
    const PoolJob job = jobs[q];
    const size_t start = (size_t)blockIdx.x * POOL_CHUNK;
    if (st[q].done || start >= job.n)
        return;
    const int nbins = 1 << bits, shift = 64 - known - bits;
    const unsigned long long mask = known ? ~0ull << (64 - known) : 0ull, hi = st[q].hi;
    const int lane = threadIdx.x & 31;

    for (int b = threadIdx.x; b < nbins; b += POOL_THREADS)
        h[b] = 0;
    __syncthreads();
    for (int r = 0; r < POOL_PER_THREAD; r++) {
        const size_t i = start + (size_t)r * POOL_THREADS + threadIdx.x;
        int bin = -1;
        if (i < job.n) {
            const unsigned long long key = order_key(job.sign * job.x[i]);
            if ((key & mask) == hi)
                bin = (int)((key >> shift) & (unsigned long long)(nbins - 1));
        }
        const unsigned peers = __match_any_sync(0xffffffffu, bin);
        if (bin >= 0 && lane == __ffs(peers) - 1)
            atomicAdd(&h[bin], (unsigned)__popc(peers));
    }
    __syncthreads();
    unsigned *g = hist + (size_t)q * RADIX_BINS;
    for (int b = threadIdx.x; b < nbins; b += POOL_THREADS)
        if (h[b])
            atomicAdd(&g[b], h[b]);
}

/* One CUDA block per job: walks the pass's bins from the top to the one
 * holding the k_rem-th largest key, narrows the state to it, and clears the
 * histogram for the next pass.  Thread t owns bins top - 8t .. top - 8t - 7
 * (thread 0 the highest), so an exclusive prefix sum over threads gives the
 * count above each thread's bins. */
__global__ void __launch_bounds__(POOL_THREADS)
    pool_pick_kernel(PoolState *__restrict__ st, unsigned *__restrict__ hist, int known, int bits)
{
    __shared__ unsigned warp_total[POOL_THREADS / 32];
    __shared__ int found;
    const int q = blockIdx.x;
    if (st[q].done)
        return;
    const unsigned k_rem = st[q].k_rem;
    const unsigned long long hi = st[q].hi;
    const int nbins = 1 << bits, shift = 64 - known - bits;
    const int top = nbins - 1 - PICK_PER_THREAD * (int)threadIdx.x;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned *g = hist + (size_t)q * RADIX_BINS;
    unsigned cnt[PICK_PER_THREAD], local = 0;

#pragma unroll
    for (int e = 0; e < PICK_PER_THREAD; e++) {
        const int b = top - e;
        cnt[e] = b >= 0 ? g[b] : 0;
        if (b >= 0)
            g[b] = 0;
        local += cnt[e];
    }
    unsigned incl = local;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const unsigned v = __shfl_up_sync(0xffffffffu, incl, off);
        if (lane >= off)
            incl += v;
    }
    if (lane == 31)
        warp_total[warp] = incl;
    if (threadIdx.x == 0)
        found = 0;
    __syncthreads();
    unsigned above = incl - local;
    for (int w = 0; w < warp; w++)
        above += warp_total[w];

    if (above < k_rem && k_rem <= above + local) {   /* exactly one thread */
        unsigned acc = above, sel_cnt = 0;
        int sel = -1;
#pragma unroll
        for (int e = 0; e < PICK_PER_THREAD; e++)
            if (sel < 0) {
                if (acc + cnt[e] >= k_rem) {
                    sel = e;
                    sel_cnt = cnt[e];
                } else {
                    acc += cnt[e];
                }
            }
        const unsigned rem = k_rem - acc;
        const unsigned long long nhi = hi | ((unsigned long long)(top - sel) << shift);
        st[q].hi = nhi;
        st[q].k_rem = rem;
        if (sel_cnt == rem || shift == 0) {
            st[q].lo = nhi;
            st[q].done = 1;
        }
        found = 1;
    }
    __syncthreads();
    if (threadIdx.x == 0 && !found) {   /* counts inconsistent with k: cannot happen */
        st[q].lo = hi;
        st[q].done = 1;
    }
}

__device__ __forceinline__ double warp_sum(double v)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

__device__ __forceinline__ unsigned long long warp_sum_u(unsigned long long v)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

/* Per chunk of a job: the sum of sign * x, and the sum and count of those
 * whose key is >= the job's lo.  A fixed tree: each thread's 16 values in
 * order, the warp by shuffles, the 8 warps in order. */
__global__ void __launch_bounds__(POOL_THREADS)
    pool_sum_kernel(const PoolJob *__restrict__ jobs, const PoolState *__restrict__ st,
                    PoolPartial *__restrict__ part, int chunks)
{
    __shared__ double ws[POOL_THREADS / 32], wg[POOL_THREADS / 32];
    __shared__ unsigned long long wc[POOL_THREADS / 32];
    const int q = blockIdx.y;
    const PoolJob job = jobs[q];
    const size_t start = (size_t)blockIdx.x * POOL_CHUNK;
    if (start >= job.n)
        return;
    const unsigned long long lo = st[q].lo;
    double s = 0.0, sg = 0.0;
    unsigned long long c = 0;
    for (int r = 0; r < POOL_PER_THREAD; r++) {
        const size_t i = start + (size_t)r * POOL_THREADS + threadIdx.x;
        if (i < job.n) {
            const double u = job.sign * job.x[i];
            s += u;
            if (order_key(u) >= lo) {
                sg += u;
                c++;
            }
        }
    }
    s = warp_sum(s);
    sg = warp_sum(sg);
    c = warp_sum_u(c);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        ws[warp] = s;
        wg[warp] = sg;
        wc[warp] = c;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        PoolPartial p = { 0.0, 0.0, 0 };
        for (int w = 0; w < POOL_THREADS / 32; w++) {
            p.sum += ws[w];
            p.sum_ge += wg[w];
            p.count_ge += wc[w];
        }
        part[(size_t)q * chunks + blockIdx.x] = p;
    }
}

/* Warp q: job q's chunk partials, lane l taking chunks l, l + 32, ... in
 * order, then the lanes by a fixed shuffle tree; lane 0 writes the job's
 * two features.  (One thread walking ~114 chunks of dependent loads took
 * 24 us at 2048x2048.) */
__global__ void __launch_bounds__(NJOBS * 32)
    pool_finish_kernel(const PoolJob *__restrict__ jobs, const PoolState *__restrict__ st,
                       const PoolPartial *__restrict__ part, int chunks,
                       double *__restrict__ features)
{
    const int q = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const PoolJob job = jobs[q];
    const int nch = (int)((job.n + POOL_CHUNK - 1) / POOL_CHUNK);
    double s = 0.0, sg = 0.0;
    unsigned long long c = 0;
    for (int i = lane; i < nch; i += 32) {
        const PoolPartial p = part[(size_t)q * chunks + i];
        s += p.sum;
        sg += p.sum_ge;
        c += p.count_ge;
    }
    s = warp_sum(s);
    sg = warp_sum(sg);
    c = warp_sum_u(c);
    if (lane != 0)
        return;
    /* ties at the threshold: drop the copies beyond the k-th */
    if (c > job.k)
        sg -= (double)(c - job.k) * key_value(st[q].lo);
    features[2 * q] = job.sign * (s / (double)job.n);
    features[2 * q + 1] = job.sign * (sg / (double)job.k);
}

/* ---- host side ---------------------------------------------------------- */

#define CU_TRY(call, what) MPE_CUDA_TRY("bliinds_cuda", call, what)

/* CU_TRY for functions with a cleanup path: sets ret and jumps to fail. */
#define CU_GOTO(call, what)                                                                   \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            ret = mpe_cuda_error(err, "bliinds_cuda", e_, what);                              \
            goto fail;                                                                        \
        }                                                                                     \
    } while (0)

/* Stage boundaries recorded on the stream each score(). */
enum {
    EV_START,
    EV_UPLOADED,
    EV_BLOCKS1,
    EV_DOWN2,
    EV_BLOCKS2,
    EV_DOWN3,
    EV_BLOCKS3,
    EV_POOLED,
    NEVENTS
};



typedef struct CudaScale {
    int width, height;
    int rows, cols;   /* blocks */
    size_t blocks;
    double *d_map[BLIINDS_NMAPS];
    /* bliinds_cuda_maps() downloads (lazily allocated) */
    double *h_image, *h_maps;
} CudaScale;

}  // namespace

struct BliindsContext {
    int dev;
    CudaScale scale[NSCALES];
    int chunks;            /* pool chunks of the largest map (scale 1) */
    cudaStream_t stream;
    cudaEvent_t ev[NEVENTS];
    uint8_t *d_img8;       /* scale 1 */
    double *d_img[NSCALES];   /* scales 2 and 3 ([0] unused) */
    double *d_maps;        /* every map of every scale, one allocation */
    double *d_ratio, *d_coarse;
    PoolJob *d_jobs;
    PoolState *d_state;
    unsigned *d_hist;      /* NJOBS x RADIX_BINS, zero between passes */
    PoolPartial *d_part;   /* NJOBS x chunks */
    double *d_features;
    double *h_features;    /* pinned */
    DctMatrix dct;
    double taps[2];        /* 1-D Gaussian, sigma 0.5: outer, centre */
    char *dump_dir;
    int scored;            /* the device holds the results of the last call */
    int in_flight;         /* a call queued work and failed before waiting for it */
    int pending;           /* a score was submitted and not collected */
    IqaUpload up;          /* the upload's staging */
    MpePool *pool;         /* BliindsOptions.pool: the staging copy runs on it */
    double predict_ms;
};

static int cuda_probe(char *why, size_t why_size)
{
    int dev;
    return mpe_cuda_pick(-1, MPE_CUDA_MIN_COMPUTE, &dev, why, why_size);
}

static void cuda_close(BliindsContext *ctx)
{
    if (!ctx)
        return;
    cudaSetDevice(ctx->dev);
    if (ctx->stream)
        cudaStreamSynchronize(ctx->stream);
    for (int i = 0; i < NEVENTS; i++)
        if (ctx->ev[i])
            cudaEventDestroy(ctx->ev[i]);
    cudaFree(ctx->d_img8);
    for (int s = 0; s < NSCALES; s++) {
        cudaFree(ctx->d_img[s]);
        free(ctx->scale[s].h_image);
        free(ctx->scale[s].h_maps);
    }
    cudaFree(ctx->d_maps);
    cudaFree(ctx->d_ratio);
    cudaFree(ctx->d_coarse);
    cudaFree(ctx->d_jobs);
    cudaFree(ctx->d_state);
    cudaFree(ctx->d_hist);
    cudaFree(ctx->d_part);
    cudaFree(ctx->d_features);
    iqa_upload_close(&ctx->up);
    cudaFreeHost(ctx->h_features);
    if (ctx->stream)
        cudaStreamDestroy(ctx->stream);
    free(ctx->dump_dir);
    free(ctx);
}

/* The constant tables, exactly as bliinds_cpu.c makes them; the gamma
 * table and its coarse index go to the device. */
static int init_tables(BliindsContext *ctx, MpeError *err)
{
    double *ratio = (double *)malloc(BLIINDS_GAMMA_TABLE_SIZE * sizeof(double));
    double coarse[GAMMA_COARSE];
    int ret = 0;

    if (!ratio)
        return mpe_error(err, -ENOMEM, "bliinds_cuda: out of memory");
    for (int k = 0; k < 5; k++)
        for (int n = 0; n < 5; n++)
            ctx->dct.c[k][n] = sqrt((k ? 2.0 : 1.0) / 5.0) * cos(PI * (2 * n + 1) * k / 10.0);
    double e = exp(-2.0);
    ctx->taps[0] = e / (1.0 + 2.0 * e);
    ctx->taps[1] = 1.0 / (1.0 + 2.0 * e);
    bliinds_gamma_table_init(ratio);
    for (int j = 0; j < GAMMA_COARSE; j++)
        coarse[j] = ratio[j * GAMMA_STRIDE];
    CU_GOTO(cudaMemcpy(ctx->d_ratio, ratio, BLIINDS_GAMMA_TABLE_SIZE * sizeof(double),
                       cudaMemcpyHostToDevice),
            "cudaMemcpy(gamma table)");
    CU_GOTO(cudaMemcpy(ctx->d_coarse, coarse, sizeof(coarse), cudaMemcpyHostToDevice),
            "cudaMemcpy(gamma index)");
fail:
    free(ratio);
    return ret;
}

static int cuda_open(BliindsContext **out, int width, int height, const BliindsOptions *opt,
                     MpeError *err)
{
    BliindsContext *ctx = NULL;
    PoolJob jobs[NJOBS];
    size_t total_blocks = 0;
    char why[256];
    int ret;

    *out = NULL;
    if (width < BLIINDS_MIN_SIZE || height < BLIINDS_MIN_SIZE || width > MAX_DIM ||
        height > MAX_DIM)
        return mpe_error(err, -EINVAL, "image size %dx%d is outside %dx%d .. %dx%d", width,
                         height, BLIINDS_MIN_SIZE, BLIINDS_MIN_SIZE, MAX_DIM, MAX_DIM);
    if (opt && opt->threads < 0)
        return mpe_error(err, -EINVAL, "thread count %d is negative", opt->threads);
    /* the pooling counts blocks in 32 bits */
    if ((size_t)((height + 2) / 3) * (size_t)((width + 2) / 3) > (size_t)INT_MAX)
        return mpe_error(err, -EINVAL, "image size %dx%d: too many blocks for bliinds_cuda",
                         width, height);
    if (!(ctx = (BliindsContext *)calloc(1, sizeof(*ctx))))
        return mpe_error(err, -ENOMEM, "bliinds_cuda: out of memory");
    if ((ret = mpe_cuda_pick(opt ? opt->device : -1, MPE_CUDA_MIN_COMPUTE, &ctx->dev, why,
                             sizeof(why))) < 0) {
        ret = mpe_error(err, ret, "bliinds_cuda: %s", why);
        goto fail;
    }
    if ((ret = mpe_cuda_use_device(ctx->dev, "bliinds_cuda", err)) < 0)
        goto fail;
    if (opt && opt->dump_dir && !(ctx->dump_dir = strdup(opt->dump_dir))) {
        ret = mpe_error(err, -ENOMEM, "bliinds_cuda: out of memory");
        goto fail;
    }
    for (int s = 0; s < NSCALES; s++) {
        CudaScale *sc = &ctx->scale[s];
        sc->width = width >> s;
        sc->height = height >> s;
        sc->rows = (sc->height + 2) / 3;
        sc->cols = (sc->width + 2) / 3;
        sc->blocks = (size_t)sc->rows * sc->cols;
        total_blocks += sc->blocks;
    }
    ctx->chunks = (int)((ctx->scale[0].blocks + POOL_CHUNK - 1) / POOL_CHUNK);

    CU_GOTO(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking), "cudaStreamCreate");
    for (int i = 0; i < NEVENTS; i++)
        CU_GOTO(cudaEventCreate(&ctx->ev[i]), "cudaEventCreate");
    CU_GOTO(cudaMalloc((void **)&ctx->d_img8, (size_t)width * height), "cudaMalloc(image)");
    for (int s = 1; s < NSCALES; s++)
        CU_GOTO(cudaMalloc((void **)&ctx->d_img[s],
                           (size_t)ctx->scale[s].width * ctx->scale[s].height * sizeof(double)),
                "cudaMalloc(scale image)");
    CU_GOTO(cudaMalloc((void **)&ctx->d_maps, total_blocks * BLIINDS_NMAPS * sizeof(double)),
            "cudaMalloc(maps)");
    {
        double *p = ctx->d_maps;
        for (int s = 0; s < NSCALES; s++)
            for (int m = 0; m < BLIINDS_NMAPS; m++, p += ctx->scale[s].blocks)
                ctx->scale[s].d_map[m] = p;
    }
    CU_GOTO(cudaMalloc((void **)&ctx->d_ratio, BLIINDS_GAMMA_TABLE_SIZE * sizeof(double)),
            "cudaMalloc(gamma table)");
    CU_GOTO(cudaMalloc((void **)&ctx->d_coarse, GAMMA_COARSE * sizeof(double)),
            "cudaMalloc(gamma index)");
    CU_GOTO(cudaMalloc((void **)&ctx->d_jobs, sizeof(jobs)), "cudaMalloc(pool jobs)");
    CU_GOTO(cudaMalloc((void **)&ctx->d_state, NJOBS * sizeof(PoolState)), "cudaMalloc(pool state)");
    CU_GOTO(cudaMalloc((void **)&ctx->d_hist, NJOBS * RADIX_BINS * sizeof(unsigned)),
            "cudaMalloc(histograms)");
    CU_GOTO(cudaMalloc((void **)&ctx->d_part, (size_t)NJOBS * ctx->chunks * sizeof(PoolPartial)),
            "cudaMalloc(partial sums)");
    CU_GOTO(cudaMalloc((void **)&ctx->d_features, BLIINDS_NFEATURES * sizeof(double)),
            "cudaMalloc(features)");
    if ((ret = iqa_upload_open(&ctx->up, (size_t)width * height, "bliinds_cuda", err)) < 0)
        goto fail;
    ctx->pool = opt ? opt->pool : NULL;
    CU_GOTO(cudaHostAlloc((void **)&ctx->h_features, BLIINDS_NFEATURES * sizeof(double),
                          cudaHostAllocDefault),
            "cudaHostAlloc(features)");
    CU_GOTO(cudaMemset(ctx->d_hist, 0, NJOBS * RADIX_BINS * sizeof(unsigned)),
            "cudaMemset(histograms)");

    for (int q = 0; q < NJOBS; q++) {
        const CudaScale *sc = &ctx->scale[q / NPOOLED];
        const int m = q % NPOOLED;   /* the map enum's first four are the pooled ones */
        jobs[q].x = sc->d_map[m];
        jobs[q].n = (unsigned)sc->blocks;
        jobs[q].k = (unsigned)bliinds_pool_count(sc->blocks);
        jobs[q].sign = m == BLIINDS_MAP_GAMMA ? -1.0 : 1.0;
    }
    CU_GOTO(cudaMemcpy(ctx->d_jobs, jobs, sizeof(jobs), cudaMemcpyHostToDevice),
            "cudaMemcpy(pool jobs)");
    if ((ret = init_tables(ctx, err)) < 0)
        goto fail;
    *out = ctx;
    return 0;
fail:
    cuda_close(ctx);
    return ret;
}

static int launch_blocks(BliindsContext *ctx, int s, MpeError *err)
{
    const CudaScale *sc = &ctx->scale[s];
    MapOut out;
    dim3 block(BT_X, BT_Y), grid((sc->cols + BT_X - 1) / BT_X, (sc->rows + BT_Y - 1) / BT_Y);
    for (int m = 0; m < BLIINDS_NMAPS; m++)
        out.m[m] = sc->d_map[m];
    if (s == 0)
        blocks_kernel<uint8_t><<<grid, block, 0, ctx->stream>>>(
            ctx->d_img8, sc->width, sc->height, sc->rows, sc->cols, ctx->d_ratio, ctx->d_coarse,
            ctx->dct, out);
    else
        blocks_kernel<double><<<grid, block, 0, ctx->stream>>>(
            ctx->d_img[s], sc->width, sc->height, sc->rows, sc->cols, ctx->d_ratio, ctx->d_coarse,
            ctx->dct, out);
    CU_TRY(cudaGetLastError(), "blocks kernel launch");
    return 0;
}

/* scale s - 1 -> scale s */
static int launch_downsample(BliindsContext *ctx, int s, MpeError *err)
{
    const CudaScale *src = &ctx->scale[s - 1], *dst = &ctx->scale[s];
    dim3 block(DS_X, DS_Y), grid((dst->width + DS_X - 1) / DS_X, (dst->height + DS_Y - 1) / DS_Y);
    if (s == 1)
        downsample_kernel<uint8_t><<<grid, block, 0, ctx->stream>>>(
            ctx->d_img8, src->width, src->height, ctx->d_img[s], dst->width, dst->height,
            ctx->taps[0], ctx->taps[1]);
    else
        downsample_kernel<double><<<grid, block, 0, ctx->stream>>>(
            ctx->d_img[s - 1], src->width, src->height, ctx->d_img[s], dst->width, dst->height,
            ctx->taps[0], ctx->taps[1]);
    CU_TRY(cudaGetLastError(), "downsample kernel launch");
    return 0;
}

static int launch_pool(BliindsContext *ctx, MpeError *err)
{
    /* the pick kernels leave the histograms zero; this is for a call that
     * failed half-way */
    CU_TRY(cudaMemsetAsync(ctx->d_hist, 0, NJOBS * RADIX_BINS * sizeof(unsigned), ctx->stream),
           "cudaMemsetAsync(histograms)");
    pool_init_kernel<<<1, 32, 0, ctx->stream>>>(ctx->d_jobs, ctx->d_state);
    CU_TRY(cudaGetLastError(), "pool init kernel launch");
    for (int pass = 0, known = 0; pass < RADIX_PASSES; pass++) {
        const int bits = MPE_MIN(RADIX_BITS, 64 - known);
        pool_hist_kernel<<<dim3(ctx->chunks, NJOBS), POOL_THREADS, 0, ctx->stream>>>(
            ctx->d_jobs, ctx->d_state, ctx->d_hist, known, bits);
        CU_TRY(cudaGetLastError(), "pool histogram kernel launch");
        pool_pick_kernel<<<NJOBS, POOL_THREADS, 0, ctx->stream>>>(ctx->d_state, ctx->d_hist,
                                                                   known, bits);
        CU_TRY(cudaGetLastError(), "pool pick kernel launch");
        known += bits;
    }
    pool_sum_kernel<<<dim3(ctx->chunks, NJOBS), POOL_THREADS, 0, ctx->stream>>>(
        ctx->d_jobs, ctx->d_state, ctx->d_part, ctx->chunks);
    CU_TRY(cudaGetLastError(), "pool sum kernel launch");
    pool_finish_kernel<<<1, NJOBS * 32, 0, ctx->stream>>>(ctx->d_jobs, ctx->d_state, ctx->d_part,
                                                  ctx->chunks, ctx->d_features);
    CU_TRY(cudaGetLastError(), "pool finish kernel launch");
    return 0;
}

/* The host image to d_img8 (iqa_upload: staged through pinned memory, on
 * the caller's pool when there is one). */
static int upload(BliindsContext *ctx, const uint8_t *img, ptrdiff_t stride, MpeError *err)
{
    const int w = ctx->scale[0].width, h = ctx->scale[0].height;
    CU_TRY(cudaEventRecord(ctx->ev[EV_START], ctx->stream), "cudaEventRecord");
    int ret = iqa_upload(&ctx->up, ctx->pool, ctx->d_img8, img, stride, w, h, ctx->stream,
                         "bliinds_cuda", err);
    if (ret < 0)
        return ret;
    CU_TRY(cudaEventRecord(ctx->ev[EV_UPLOADED], ctx->stream), "cudaEventRecord");
    return 0;
}

/* The same files as bliinds_cpu's dump (BliindsOptions.dump_dir). */
static int dump_maps(BliindsContext *ctx, MpeError *err)
{
    for (int s = 0; s < NSCALES; s++) {
        BliindsMaps m;
        int ret = bliinds_cuda_maps(ctx, s, &m, err);
        if (ret == 0)
            ret = bliinds_dump_scale(ctx->dump_dir, s, &m, err);
        if (ret < 0)
            return ret;
    }
    return 0;
}

/* A score, queued. */
static int submit_device(BliindsContext *ctx, const uint8_t *img, ptrdiff_t stride,
                         MpeError *err)
{
    int ret;
    if (!ctx || !img)
        return mpe_error(err, -EINVAL, "bliinds_cuda: NULL argument");
    const int w = ctx->scale[0].width;
    if (stride < w && -stride < w)
        return mpe_error(err, -EINVAL, "stride %td is smaller than the width %d", stride, w);
    if (ctx->pending)
        return mpe_error(err, -EBUSY, "bliinds_cuda: a score is pending (collect it first)");
    CU_TRY(cudaSetDevice(ctx->dev), "cudaSetDevice");
    /* the staging buffer may still feed a failed call's upload */
    if (ctx->in_flight)
        CU_TRY(cudaStreamSynchronize(ctx->stream), "cudaStreamSynchronize");
    ctx->scored = 0;
    ctx->in_flight = 1;

    if ((ret = upload(ctx, img, stride, err)) < 0 || (ret = launch_blocks(ctx, 0, err)) < 0)
        return ret;
    CU_TRY(cudaEventRecord(ctx->ev[EV_BLOCKS1], ctx->stream), "cudaEventRecord");
    for (int s = 1; s < NSCALES; s++) {
        if ((ret = launch_downsample(ctx, s, err)) < 0)
            return ret;
        CU_TRY(cudaEventRecord(ctx->ev[s == 1 ? EV_DOWN2 : EV_DOWN3], ctx->stream),
               "cudaEventRecord");
        if ((ret = launch_blocks(ctx, s, err)) < 0)
            return ret;
        CU_TRY(cudaEventRecord(ctx->ev[s == 1 ? EV_BLOCKS2 : EV_BLOCKS3], ctx->stream),
               "cudaEventRecord");
    }
    if ((ret = launch_pool(ctx, err)) < 0)
        return ret;
    CU_TRY(cudaEventRecord(ctx->ev[EV_POOLED], ctx->stream), "cudaEventRecord");
    CU_TRY(cudaMemcpyAsync(ctx->h_features, ctx->d_features, BLIINDS_NFEATURES * sizeof(double),
                           cudaMemcpyDeviceToHost, ctx->stream),
           "cudaMemcpyAsync(features)");
    ctx->pending = 1;
    return 0;
}

/* Queues a score; img may be reused as soon as this returns. */
static int cuda_score_submit(BliindsContext *ctx, const uint8_t *img, ptrdiff_t stride,
                             MpeError *err)
{
    int ret = submit_device(ctx, img, stride, err);
    if (ctx) {
        /* also after a failure: img goes back to the caller either way */
        int r = iqa_upload_release(&ctx->up, "bliinds_cuda", ret < 0 ? NULL : err);
        ret = ret < 0 ? ret : r;
    }
    return ret;
}

/* Waits for the submitted score, then the model on the host. */
static int cuda_score_collect(BliindsContext *ctx, BliindsScore *out, MpeError *err)
{
    if (!ctx || !out)
        return mpe_error(err, -EINVAL, "bliinds_cuda: NULL argument");
    if (!ctx->pending)
        return mpe_error(err, -EINVAL, "bliinds_cuda: no score was submitted");
    CU_TRY(cudaSetDevice(ctx->dev), "cudaSetDevice");
    ctx->pending = 0;
    CU_TRY(cudaStreamSynchronize(ctx->stream), "BLIINDS-II on the device");
    ctx->in_flight = 0;
    ctx->scored = 1;

    double t0 = mpe_time_ms();
    memcpy(out->features, ctx->h_features, sizeof(out->features));
    out->score = bliinds_predict(out->features);
    ctx->predict_ms = mpe_time_ms() - t0;
    return ctx->dump_dir ? dump_maps(ctx, err) : 0;
}

static int cuda_score(BliindsContext *ctx, const uint8_t *img, ptrdiff_t stride,
                      BliindsScore *out, MpeError *err)
{
    if (!out)
        return mpe_error(err, -EINVAL, "bliinds_cuda: NULL argument");
    int ret = cuda_score_submit(ctx, img, stride, err);
    return ret < 0 ? ret : cuda_score_collect(ctx, out, err);
}

extern "C" const BliindsImpl bliinds_cuda = {
    "bliinds_cuda",    cuda_probe,        cuda_open, cuda_close, cuda_score,
    cuda_score_submit, cuda_score_collect,
};

extern "C" int bliinds_cuda_maps(BliindsContext *ctx, int scale, BliindsMaps *maps, MpeError *err)
{
    if (!ctx || !maps || scale < 0 || scale >= NSCALES)
        return mpe_error(err, -EINVAL, "bliinds_cuda_maps: bad argument");
    if (!ctx->scored)
        return mpe_error(err, -EINVAL, "bliinds_cuda_maps: nothing scored yet");
    CudaScale *sc = &ctx->scale[scale];
    const size_t npix = (size_t)sc->width * sc->height;
    CU_TRY(cudaSetDevice(ctx->dev), "cudaSetDevice");
    if (!sc->h_image && !(sc->h_image = (double *)malloc(npix * sizeof(double))))
        return mpe_error(err, -ENOMEM, "bliinds_cuda: out of memory");
    if (!sc->h_maps && !(sc->h_maps = (double *)malloc(sc->blocks * BLIINDS_NMAPS * sizeof(double))))
        return mpe_error(err, -ENOMEM, "bliinds_cuda: out of memory");
    if (scale == 0) {
        /* the 8-bit image, widened in place from the back */
        uint8_t *bytes = (uint8_t *)sc->h_image;
        CU_TRY(cudaMemcpy(bytes, ctx->d_img8, npix, cudaMemcpyDeviceToHost), "cudaMemcpy(image)");
        for (size_t i = npix; i-- > 0;)
            sc->h_image[i] = bytes[i];
    } else {
        CU_TRY(cudaMemcpy(sc->h_image, ctx->d_img[scale], npix * sizeof(double),
                          cudaMemcpyDeviceToHost),
               "cudaMemcpy(scale image)");
    }
    /* the maps of a scale are contiguous, in enum order */
    CU_TRY(cudaMemcpy(sc->h_maps, sc->d_map[0], sc->blocks * BLIINDS_NMAPS * sizeof(double),
                      cudaMemcpyDeviceToHost),
           "cudaMemcpy(maps)");
    maps->width = sc->width;
    maps->height = sc->height;
    maps->image = sc->h_image;
    maps->image_stride = sc->width;
    maps->rows = sc->rows;
    maps->cols = sc->cols;
    for (int m = 0; m < BLIINDS_NMAPS; m++)
        maps->map[m] = sc->h_maps + (size_t)m * sc->blocks;
    return 0;
}

static double elapsed_ms(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0.0f;
    return cudaEventElapsedTime(&ms, a, b) == cudaSuccess ? ms : 0.0;
}

extern "C" void bliinds_cuda_stage_times(const BliindsContext *ctx, BliindsStageTimes *t)
{
    memset(t, 0, sizeof(*t));
    if (!ctx || !ctx->scored || cudaSetDevice(ctx->dev) != cudaSuccess)
        return;
    const cudaEvent_t *ev = ctx->ev;
    t->load_ms = elapsed_ms(ev[EV_START], ev[EV_UPLOADED]);
    t->blocks_ms[0] = elapsed_ms(ev[EV_UPLOADED], ev[EV_BLOCKS1]);
    t->downsample_ms[0] = elapsed_ms(ev[EV_BLOCKS1], ev[EV_DOWN2]);
    t->blocks_ms[1] = elapsed_ms(ev[EV_DOWN2], ev[EV_BLOCKS2]);
    t->downsample_ms[1] = elapsed_ms(ev[EV_BLOCKS2], ev[EV_DOWN3]);
    t->blocks_ms[2] = elapsed_ms(ev[EV_DOWN3], ev[EV_BLOCKS3]);
    t->pool_ms = elapsed_ms(ev[EV_BLOCKS3], ev[EV_POOLED]);
    t->predict_ms = ctx->predict_ms;
}
