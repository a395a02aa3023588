/* mad_cuda.cu — MAD in CUDA (../shared/reference/mad/SPEC.md; paper: Larson
 * & Chandler 2010), the same computation as mad_cpu.c, in double precision
 * except the 20 log-Gabor subbands between their spectrum product and their
 * |EO| samples: those are float by default (MAD_CUDA_SUB_FLOAT,
 * mad_cuda_internal.h).  The subband stages move 16 bytes per pixel and
 * subband in double and were three quarters of the time (H100, 2048^2:
 * 3.6 of 4.4 ms); float halves their bytes, and moves the scores by
 * <= 5e-5 relative (SPEC §7; measured 1e-5 on the 26 reference pairs, the
 * issue allows 2e-4).  MAD_CUDA_SUB_DOUBLE keeps everything double and
 * agrees with C to ~1e-12 map by map (the stage tests use it).
 *
 * Per context (one size), built in open on the device: the CSF (Hermitian-
 * symmetrised on the r2c half spectrum, times 1/(w*h)), the log-Gabor bank
 * as 5 radial x 4 angular factors, the lightness table, cuFFT plans (2-D
 * D2Z and Z2D for the real pictures; C2C (Z2Z) inverse batched over
 * `batch` subbands) and every buffer.  cuFFT is loaded with dlopen, so the binary
 * starts without it; probe() says why when it is missing.  Device memory:
 * about 140 bytes per pixel plus 16 per pixel and batched subband (and
 * cuFFT's workspace, up to as much again): the batch is all 20 subbands
 * while that buffer stays within 1.5 GiB (2048x2048: 20, ~3.3 GB in all).
 *
 * set_reference() (one stream; it only queues the work, a later score's
 * collect waits for it):
 *   upload ref -> pixel sum -> prep: L = LUT[ref], G = ref - mean
 *   second stream: D2Z(L) . CSF -> Z2D -> R -> block mean16 and sd8 of R ->
 *     modified std
 *   D2Z(G); per batch of subbands: half spectrum x radial x angular ->
 *     batched Z2Z -> |EO| -> std/skew/kurt per block, kept on the device
 * score():
 *   upload dst -> pixel sum -> prep: dL = LUT[dst] - LUT[ref], G = dst - mean
 *   on a second stream, beside the appearance side below (forked after
 *   prep, joined before the final sums; its kernels are small and would
 *   otherwise run one after another on an idle GPU):
 *     D2Z(dL) . CSF -> Z2D -> E = D - R directly (the filter is linear; the
 *     difference is formed before the transform, so identical pictures give
 *     E = 0 exactly) -> block std of E -> visibility per block;
 *     16x16 local MSE (exact integer box sums) x visibility -> kept-region
 *     sum of squares, per CUDA block
 *   D2Z(G); per batch: filter product -> Z2Z -> |EO| -> block moments ->
 *     |differences| to the reference's, one map per subband.  Float
 *     subbands at sizes whose sides factor into 2, 3 and 5 (2048^2 among
 *     them) take mad_cuda_fft.cuh's transforms instead: per row and
 *     subband, the product in the load and a 1-D inverse DFT
 *     (mfft_rows_kernel); per 4-column strip and subband, the 1-D inverse
 *     DFT down the columns, |EO| and the 4x4 cell moments
 *     (mfft_cols_kernel); the block moments from the cells
 *     (stats_kernel<ST_APPEAR_CELLS>).  A bin is written once and read
 *     once; cuFFT's batched C2C wrote and read every bin twice behind the
 *     product kernel's write, and the statistics read the bins with a
 *     1.3x halo.
 *   eta per block (fixed order over subbands) -> kept-region sum of squares
 *   two fixed-order reductions -> 2 doubles back -> combination on the host
 *   (score_submit queues all this and returns; score_collect waits)
 *
 * Block statistics (the paper's bottleneck kernel: per-thread 256-element
 * arrays spilled to global memory): a CUDA block covers 32 x 16 grid blocks.
 * It computes the moments of the 35 x 19 4x4 "cells" under them (four
 * threads per cell, one column each, combined by warp shuffles, so a warp's
 * loads are 512 contiguous bytes), keeps them in shared memory, merges them
 * with the exact pairwise central-moment update of mad_stats.c (Chan/Pébay)
 * into 4-cell-wide row aggregates and then into the 16x16 blocks.  Each
 * pixel is read 1.3x (the 3-cell halo), no raw power sums are differenced.
 *
 * Determinism: no floating-point atomics (the pixel sum is an integer
 * atomic, exact in any order); every double sum is a fixed tree over a fixed
 * launch shape; cuFFT plans are fixed per context.  The reference and the
 * distorted picture go through the same kernels and plans, so a picture
 * scored against itself gives exactly 0.
 *
 * What bounds each kernel, measured with ncu on an H100 (3.35 TB/s) at
 * 2048^2, float subbands (double in brackets; docs/PERF.md has the rest):
 *   upload        PCIe: 0.085 ms for 4 MB from page-locked memory (the
 *                 encoder's checker registers its buffers, iqa_upload then
 *                 sends them by DMA directly); from pageable memory the
 *                 host's copy into pinned staging comes first (5-8 GB/s on
 *                 that machine's one thread, so 0.4-0.7 ms; split over the
 *                 caller's pool when MadOptions.pool is set)
 *   sum, prep     memory: 1 + 18 bytes per pixel, 10 + 27 us
 *   D2Z, Z2D      memory, 2 kernels per transform, ~75 us each
 *   subband mul   memory: 8 (16) bytes written per pixel and subband, 1.0
 *                 (1.7) GB in all: 360 (603) us, 2.8 TB/s
 *   batched C2C   memory: 2 read+write passes over 0.67 (1.34) GB:
 *                 638 + 448 (1324 + 887) us
 *   appear stats  0.9 (1.7) GB read, with the FP64 moments: 567 (705) us
 *   detect stats, local MSE, eta, reductions: 20-50 us each
 */
extern "C" {
#include "iqa/mad.h"
#include "iqa/mad_cuda_internal.h"
#include "iqa/mad_internal.h"
#include "iqa/mad_math.h"
#include "common/cuda.h"
#include "common/timer.h"
}
#include "iqa/iqa_cuda.h"
#include "iqa/mad_cuda_cb.cuh"
#include "iqa/mad_cuda_fft.cuh"

#include <cuda_runtime.h>
#include <cufft.h> /* types and constants only: the functions come from dlopen */
#include <cufftXt.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAD_PI 3.14159265358979323846

#define TPB 256                       /* threads of the 1-D kernels */
#define SUB_BUDGET ((size_t)3 << 29)  /* 1.5 GiB of subband buffer picks the batch */
#define MAX_MARKS 128


/* ---- small device helpers ------------------------------------------------ */

typedef MadMom Mom;
#define mom_merge mad_mom_merge

/* Sum over the 256 threads of a block in a fixed tree; the result is valid
 * in thread 0.  sh: 8 doubles of shared memory. */
__device__ double block_sum(double v, double *sh)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    if (lane == 0)
        sh[warp] = v;
    __syncthreads();
    v = 0.0;
    if (warp == 0) {
        v = lane < TPB / 32 ? sh[lane] : 0.0;
#pragma unroll
        for (int off = 16; off > 0; off >>= 1)
            v += __shfl_down_sync(0xffffffffu, v, off);
    }
    return v;
}

/* The original's symmetric padding (edge sample repeated), then clamped so
 * rows of a tile that only feed pixels outside the picture stay in range. */
__device__ __forceinline__ int mirror_clamp(int i, int n)
{
    i = i < 0 ? -i - 1 : i >= n ? 2 * n - 1 - i : i;
    return min(max(i, 0), n - 1);
}

/* SPEC §3.4 on one block, as mad_cpu.c's visibility(). */
__device__ __forceinline__ double visibility(double mu_ref, double sd_ref, double sd_err)
{
    const double g_thresh = 0.5, ci_thrsh = -5.0, cd_thrsh = -5.0;
    double ci_ref = log(sd_ref / mu_ref);
    double ci_dst = mu_ref < g_thresh ? -INFINITY : log(sd_err / mu_ref);
    if (ci_ref > ci_thrsh && ci_dst > ci_ref)
        return ci_dst - ci_ref;
    if (ci_ref <= ci_thrsh && ci_dst > cd_thrsh)
        return ci_dst - cd_thrsh;
    return 0.0;
}

/* ---- filters, built once per size (open) --------------------------------- */


/* Compute-bound, once per open: one thread per half-spectrum bin. */
__global__ void csf_half_kernel(double *__restrict__ hs, int w, int h, int hc, double scale)
{
    const int l = blockIdx.x * blockDim.x + threadIdx.x, k = blockIdx.y;
    if (l >= hc)
        return;
    int r1 = (k + h / 2) % h, r2 = ((h - k) % h + h / 2) % h;
    int c1 = (l + w / 2) % w, c2 = ((w - l) % w + w / 2) % w;
    double a = mad_csf_at(r1, c1, w, h), b = mad_csf_at(r2, c2, w, h);
    hs[(size_t)k * hc + l] = 0.5 * (a + b) * scale;
}

/* Constants of the log-Gabor bank, computed on the host by the expressions
 * of mad_filters.c so that they are the same doubles. */
struct LgParams {
    double lrfo[MAD_NSCALE]; /* ln of each scale's centre radius */
    double denom;            /* -2 ln(0.55)^2 */
    double ca[MAD_NORIENT], sa[MAD_NORIENT];
    double den;              /* 2 theta_sigma^2 */
};

/* Compute-bound, once per open: one thread per DFT bin, all 9 factors. */
__global__ void loggabor_kernel(double *__restrict__ rad, double *__restrict__ ang, LgParams p,
                                int w, int h)
{
    const int l = blockIdx.x * blockDim.x + threadIdx.x, k = blockIdx.y;
    if (l >= w)
        return;
    const size_t npix = (size_t)w * h, i = (size_t)k * w + l;
    int gr = (k - h / 2 + h) % h, gc = (l - w / 2 + w) % w;
    double x = ((double)gc - w / 2.0) / (w / 2.0);
    double y = ((double)gr - h / 2.0) / (h / 2.0);
    int fudge = gr == (h % 2 ? (h + 1) / 2 : h / 2) && gc == (w % 2 ? (w + 1) / 2 : w / 2);
    double lr = fudge ? 0.0 : log(sqrt(x * x + y * y));
    for (int s = 0; s < MAD_NSCALE; s++) {
        double d = lr - p.lrfo[s];
        rad[s * npix + i] = fudge ? 0.0 : exp(d * d / p.denom);
    }
    double theta = atan2(-y, x);
    double st = sin(theta), ct = cos(theta);
    for (int o = 0; o < MAD_NORIENT; o++) {
        double ds = st * p.ca[o] - ct * p.sa[o];
        double dc = ct * p.ca[o] + st * p.sa[o];
        double dtheta = fabs(atan2(ds, dc));
        ang[o * npix + i] = exp(-dtheta * dtheta / p.den);
    }
}

/* Once per open: the log-Gabor factors in float for float subbands (half
 * the bytes the product kernel reads). */
__global__ void to_float_kernel(float *__restrict__ out, const double *__restrict__ in, size_t n)
{
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = (float)in[i];
}

/* ---- per picture ----------------------------------------------------------- */

/* Memory-bound (1 byte per pixel): the picture's pixel sum, for the
 * mean-free gray image.  Integer atomics: exact in any order. */
__global__ void sum_u8_kernel(const uint8_t *__restrict__ pic, size_t n,
                              unsigned long long *__restrict__ sum)
{
    const size_t nw = n / 4;
    const uint32_t *w4 = (const uint32_t *)pic; /* cudaMalloc'd: aligned */
    unsigned long long acc = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < nw;
         i += (size_t)gridDim.x * blockDim.x)
        acc += __vsadu4(__ldg(w4 + i), 0u);
    if (blockIdx.x == 0 && threadIdx.x < n % 4)
        acc += pic[4 * nw + threadIdx.x];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        acc += __shfl_down_sync(0xffffffffu, acc, off);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(sum, acc);
}

/* Memory-bound (2 bytes in, 16 out per pixel).  gray = pic - mean with
 * mad_cpu's rounded integer mean (every log-Gabor filter is 0 at DC, so
 * the constant changes no subband; taking it off keeps a flat picture's
 * spectrum exactly 0).  light = LUT[pic] for the reference,
 * LUT[pic] - LUT[ref] for a distorted picture. */
__global__ void prep_kernel(const uint8_t *__restrict__ pic, const uint8_t *__restrict__ ref,
                            const double *__restrict__ lut_g,
                            const unsigned long long *__restrict__ sum, size_t n,
                            double *__restrict__ gray, double *__restrict__ light, int is_ref)
{
    __shared__ double lut[256];
    lut[threadIdx.x] = lut_g[threadIdx.x]; /* TPB == 256 */
    __syncthreads();
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const double mean = (double)((*sum + n / 2) / n);
    const int v = pic[i];
    gray[i] = v - mean;
    light[i] = is_ref ? lut[v] : lut[v] - lut[ref[i]];
}

/* Memory-bound: the CSF product on the r2c half spectrum. */
__global__ void csf_mul_kernel(double2 *__restrict__ half, const double *__restrict__ csf,
                               size_t n)
{
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    double f = csf[i];
    double2 v = half[i];
    half[i] = make_double2(v.x * f, v.y * f);
}

/* A subband bin in the buffer's precision (float2: rounded once, here). */
__device__ __forceinline__ void store_complex(double2 *p, double re, double im)
{
    *p = make_double2(re, im);
}

__device__ __forceinline__ void store_complex(float2 *p, double re, double im)
{
    *p = make_float2((float)re, (float)im);
}

/* |z| in double whatever the buffer's precision. */
__device__ __forceinline__ double magnitude(double2 z)
{
    return sqrt(z.x * z.x + z.y * z.y);
}

__device__ __forceinline__ double magnitude(float2 z)
{
    /* in float: the sample carries the float transform's error (~1e-7 of
     * the subband's RMS) already, and the FP64 square root was a third of
     * the statistics kernel's time */
    return (double)sqrtf(z.x * z.x + z.y * z.y);
}

/* A magnitude the transform's store callback wrote (mad_cuda_cb.cuh). */
__device__ __forceinline__ double magnitude(float m)
{
    return (double)m;
}

/* Bin (k, l) of the whole h x w spectrum from the r2c half: the log-Gabor
 * filters are one-sided, so they need the bins r2c leaves out, F(k, l) =
 * conj(F(-k, -l)). */
__device__ __forceinline__ double2 spectrum_bin(const double2 *__restrict__ half, int k, int l,
                                                int w, int h, int hc)
{
    if (l < hc)
        return __ldg(half + (size_t)k * hc + l);
    double2 f = __ldg(half + (size_t)((h - k) % h) * hc + (w - l));
    f.y = -f.y;
    return f;
}

/* Memory-bound (writes 16 or 8 bytes per bin and subband): spectrum x radial x
 * angular for subbands sub0 .. sub0+nsub-1, into nsub full h x w spectra
 * (spectrum_bin: the whole spectrum from the half). */
template <typename C, typename F>
__global__ void subband_mul_kernel(const double2 *__restrict__ half, const F *__restrict__ rad,
                                   const F *__restrict__ ang, C *__restrict__ out,
                                   int sub0, int nsub, int w, int h, int hc)
{
    const int l = blockIdx.x * blockDim.x + threadIdx.x, k = blockIdx.y;
    if (l >= w)
        return;
    const size_t npix = (size_t)w * h, i = (size_t)k * w + l;
    const double2 f = spectrum_bin(half, k, l, w, h, hc);
    double a[MAD_NORIENT];
#pragma unroll
    for (int o = 0; o < MAD_NORIENT; o++)
        a[o] = (double)__ldg(ang + o * npix + i);
    for (int j = 0; j < nsub; j++) {
        const int sub = sub0 + j, s = sub / MAD_NORIENT, o = sub % MAD_NORIENT;
        double ao = a[0];
#pragma unroll
        for (int q = 1; q < MAD_NORIENT; q++)
            ao = o == q ? a[q] : ao;
        const double g = (double)__ldg(rad + s * npix + i) * ao;
        store_complex(out + j * npix + i, f.x * g, f.y * g);
    }
}

/* ---- the subbands' own transforms (mad_cuda_fft.cuh) ------------------------ */

/* The moments of a 4x4 cell whose four columns are four adjacent lanes of
 * a warp (v: this lane's column, rows 0..3; the whole warp must call it).
 * Butterflies: the four lanes end with bitwise equal sums.  The statistics
 * kernel and the columns' transform make their cells with this, so that
 * either gives the same moments from the same bins. */
__device__ __forceinline__ Mom cell_moments(const double v[4])
{
    double sum = ((v[0] + v[1]) + v[2]) + v[3];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const double m = sum * (1.0 / 16.0);
    double s2 = 0.0, s3 = 0.0, s4 = 0.0;
#pragma unroll
    for (int y = 0; y < 4; y++) {
        double d = v[y] - m, dd = d * d;
        s2 += dd;
        s3 += dd * d;
        s4 += dd * dd;
    }
    s2 += __shfl_xor_sync(0xffffffffu, s2, 1);
    s2 += __shfl_xor_sync(0xffffffffu, s2, 2);
    s3 += __shfl_xor_sync(0xffffffffu, s3, 1);
    s3 += __shfl_xor_sync(0xffffffffu, s3, 2);
    s4 += __shfl_xor_sync(0xffffffffu, s4, 1);
    s4 += __shfl_xor_sync(0xffffffffu, s4, 2);
    return Mom{ m, s2, s3, s4 };
}

/* The moments of one 4x4 cell, as the statistics kernel's first step makes
 * them (two 16-byte halves: one 32-byte sector per cell). */
struct __align__(32) CellMom {
    double2 a; /* mean, s2 */
    double2 b; /* s3, s4 */
};

/* Memory-bound (writes 8 bytes per bin and subband): subband sub0 +
 * blockIdx.x of picture row k = blockIdx.y, its spectrum row x radial x
 * angular filter (the same doubles rounded once to float as
 * subband_mul_kernel's) and then its inverse 1-D DFT along the row, to
 * plane blockIdx.x of out (h x w each).  Thread t owns stage 0's item t
 * (blockDim.x = w / R0).  One block per row and subband, the subbands of a
 * row launched next to each other: the row's spectrum and filters come
 * from L2 after the first (a loop over the subbands in one block kept
 * them in registers, but ptxas spilled the transform's). */
/* At most 256 threads and 32 registers, eight blocks per SM (H100,
 * 2048^2: 512 threads at 59 registers, four blocks, took 0.99 ms; six
 * blocks at 40 registers 0.80; eight 0.78, with a few bytes spilled) */
#ifndef MFFT_ROWS_MAXT
#define MFFT_ROWS_MAXT 256
#define MFFT_ROWS_MINB 8
#endif

template <int R0, bool ODD>
__global__ void __launch_bounds__(MFFT_ROWS_MAXT, MFFT_ROWS_MINB) mfft_rows_kernel(const double2 *__restrict__ half,
                                                        const float *__restrict__ rad,
                                                        const float *__restrict__ ang,
                                                        float2 *__restrict__ out, int sub0, int w,
                                                        int h, int hc, MfftPlan p)
{
    extern __shared__ float2 mfft_buf[];
    const int z = blockIdx.x, k = blockIdx.y, t = threadIdx.x, m = w / R0;
    const int sub = sub0 + z, s = sub / MAD_NORIENT, o = sub % MAD_NORIENT;
    const size_t npix = (size_t)w * h, row = (size_t)k * w;
    float2 v[R0];
#pragma unroll
    for (int r = 0; r < R0; r++) {
        const int l = t + r * m;
        const double2 f = spectrum_bin(half, k, l, w, h, hc);
        const double g = (double)__ldg(rad + s * npix + row + l) *
                         (double)__ldg(ang + o * npix + row + l);
        v[r] = make_float2((float)(f.x * g), (float)(f.y * g));
    }
    mfft_dft<R0>(v, p.tw, w);
#pragma unroll
    for (int q = 0; q < R0; q++)
        mfft_buf[mfft_at_run<1, R0>(0, t * R0, q)] = v[q];
    __syncthreads();
    mfft_stages<1, 1, ODD>(mfft_buf, p, 1, m);
    /* the last stage's store straight to global memory made ptxas spill */
    float2 *dst = out + (size_t)z * npix + row;
    if ((m & 7) == 0) {
        const int pm = m + (m >> 3);
        for (int i = t, a = mfft_at<1>(0, t); i < w; i += m, a += pm)
            dst[i] = mfft_buf[a];
    } else {
        for (int i = t; i < w; i += m)
            dst[i] = mfft_buf[mfft_at<1>(0, i)];
    }
}

#ifndef MFFT_COLS_IPT
#define MFFT_COLS_IPT 2
#endif

/* Memory-bound (reads 8 bytes per bin and subband, writes 2): the inverse
 * 1-D DFT down picture columns 4 cj .. 4 cj + 3 (cj = blockIdx.x) of the
 * row pass's subband blockIdx.y, then |EO| and the moments of every 4x4
 * cell of that strip, exactly as stats_kernel's first step makes them, to
 * cells (nsub x ncc x ncr, cell (ci, cj) at cj * ncr + ci).  Stage 0's
 * 4 h / R0 items are MFFT_COLS_IPT per thread (tfft threads); blockDim.x
 * is tfft rounded up to whole warps for the cells' shuffles.  Two items a
 * thread: blocks of 512 threads at <= 64 registers, two per SM, so that
 * one block's loads overlap the other's transform (one block of 1024
 * threads per SM left the memory idle while it computed). */
template <int R0, bool ODD>
__global__ void __launch_bounds__(1024 / MFFT_COLS_IPT, MFFT_COLS_IPT)
    mfft_cols_kernel(const float2 *__restrict__ in, CellMom *__restrict__ cells, int w, int h,
                     int ncr, int ncc, double scale, MfftPlan p)
{
    extern __shared__ float2 mfft_buf[];
    const int cj = blockIdx.x, z = blockIdx.y, t = threadIdx.x, m = h / R0;
    const int tfft = 4 * m / MFFT_COLS_IPT;
    const float2 *src = in + (size_t)z * w * h + 4 * cj;
    if (t < tfft) {
        float2 v[MFFT_COLS_IPT][R0];
#pragma unroll
        for (int it = 0; it < MFFT_COLS_IPT; it++) {
            const int J = t + it * tfft, c = J & 3, j = J >> 2;
#pragma unroll
            for (int r = 0; r < R0; r++)
                v[it][r] = __ldg(src + (size_t)(j + r * m) * w + c);
        }
#pragma unroll
        for (int it = 0; it < MFFT_COLS_IPT; it++) {
            const int J = t + it * tfft, c = J & 3, j = J >> 2;
            mfft_dft<R0>(v[it], p.tw, h);
#pragma unroll
            for (int q = 0; q < R0; q++)
                mfft_buf[mfft_at_run<4, R0>(c, j * R0, q)] = v[it][q];
        }
    }
    __syncthreads();
    mfft_stages<4, MFFT_COLS_IPT, ODD>(mfft_buf, p, 1, tfft);

    const int q = t & 3; /* this thread's column of the cell */
    CellMom *dst = cells + ((size_t)z * ncc + cj) * ncr;
    for (int base = 0; base < ncr; base += (int)blockDim.x / 4) {
        const int ci = base + (t >> 2);
        const bool ok = ci < ncr;
        double v[4] = { 0.0, 0.0, 0.0, 0.0 };
        if (ok) {
#pragma unroll
            for (int y = 0; y < 4; y++)
                v[y] = magnitude(mfft_buf[mfft_at_run<4, 4>(q, 4 * ci, y)]) * scale;
        }
        const Mom mo = cell_moments(v);
        if (q == 0 && ok) {
            CellMom cm;
            cm.a = make_double2(mo.m, mo.s2);
            cm.b = make_double2(mo.s3, mo.s4);
            dst[ci] = cm;
        }
    }
}

/* ---- block statistics ------------------------------------------------------ */

#define ST_TX 32             /* grid blocks per CUDA block, across */
#define ST_TY 16             /* and down */
#define ST_CC (ST_TX + 3)    /* 4x4 cells under them, across */
#define ST_CR (ST_TY + 3)    /* and down */
#define ST_NCELL (ST_CR * ST_CC)
#define ST_NQUAD (ST_CR * ST_TX)

enum { ST_APPEAR, ST_APPEAR_CELLS, ST_DETECT_REF, ST_DETECT_DST };

struct StatsArgs {
    const void *sub;     /* ST_APPEAR: nsub complex subbands, double2 or float2, or their
                          * float magnitudes (blockIdx.z picks one); ST_APPEAR_CELLS:
                          * their cell moments (CellMom, mfft_cols_kernel's layout) */
    const double *img;   /* ST_DETECT_*: R or E */
    int w, h, nbr, nbc;
    size_t npix, nblk;
    double scale;        /* |EO| = |IFFT| * scale (the inverse's 1/(w*h)) */
    int sub0, is_ref;
    double *st_ref;      /* ST_APPEAR, reference: MAD_NSUB x 3 x nblk */
    double *terms;       /* ST_APPEAR, distorted: MAD_NSUB x nblk */
    double *mu_ref;      /* ST_DETECT_REF outputs */
    double *sd8;
    const double *mu_in; /* ST_DETECT_DST inputs and outputs */
    const double *sdref_in;
    double *sd_err, *msk;
};

/* See the file comment.  Memory-bound for ST_APPEAR (1.3 x 16 bytes per
 * pixel, FP64 about half busy), latency-bound for the single-image detect
 * modes.  Shared: 21 KB of cell moments + 19 KB of row aggregates.  The
 * appearance statistics of the reference and of a distorted picture come
 * from this one instantiation (is_ref is a runtime flag), so their
 * arithmetic is the same instruction for instruction. */
template <int MODE, typename C = double2>
__global__ void __launch_bounds__(TPB) stats_kernel(StatsArgs a)
{
    __shared__ double cm[4][ST_NCELL];
    __shared__ double qm[4][ST_NQUAD];

    const int ncr = a.nbr + 3, ncc = a.nbc + 3;
    const int ci0 = blockIdx.y * ST_TY, cj0 = blockIdx.x * ST_TX;
    const int q = threadIdx.x & 3; /* this thread's column of the cell */
    const C *sub = MODE == ST_APPEAR ? (const C *)a.sub + blockIdx.z * a.npix : NULL;

    if (MODE == ST_APPEAR_CELLS) {
        /* 1: the cell moments mfft_cols_kernel made, down each cell column */
        const CellMom *cells = (const CellMom *)a.sub + (size_t)blockIdx.z * ncc * ncr;
        for (int i = threadIdx.x; i < ST_NCELL; i += TPB) {
            const int c = i / ST_CR, r = i - c * ST_CR;
            const int ci = ci0 + r, cj = cj0 + c, cell = r * ST_CC + c;
            CellMom v;
            v.a = make_double2(0.0, 0.0);
            v.b = v.a;
            if (ci < ncr && cj < ncc)
                v = cells[(size_t)cj * ncr + ci];
            cm[0][cell] = v.a.x;
            cm[1][cell] = v.a.y;
            cm[2][cell] = v.b.x;
            cm[3][cell] = v.b.y;
        }
    }
    /* 1: cell moments; every thread runs every round so that the shuffles
     * always have their whole warp */
    for (int base = 0; MODE != ST_APPEAR_CELLS && base < ST_NCELL; base += TPB / 4) {
        const int cell = base + (threadIdx.x >> 2);
        const int r = cell / ST_CC, c = cell - r * ST_CC;
        const int ci = ci0 + r, cj = cj0 + c;
        const bool ok = cell < ST_NCELL && ci < ncr && cj < ncc;
        double v[4] = { 0.0, 0.0, 0.0, 0.0 };
        if (ok) {
            const size_t p0 = (size_t)(4 * ci) * a.w + 4 * cj + q;
#pragma unroll
            for (int y = 0; y < 4; y++) {
                if (MODE == ST_APPEAR) {
                    v[y] = magnitude(__ldg(sub + p0 + (size_t)y * a.w)) * a.scale;
                } else {
                    v[y] = __ldg(a.img + p0 + (size_t)y * a.w);
                }
            }
        }
        const Mom mo = cell_moments(v);
        if (q == 0 && cell < ST_NCELL) {
            cm[0][cell] = ok ? mo.m : 0.0;
            cm[1][cell] = ok ? mo.s2 : 0.0;
            cm[2][cell] = ok ? mo.s3 : 0.0;
            cm[3][cell] = ok ? mo.s4 : 0.0;
        }
    }
    __syncthreads();

    /* 2: 16-wide row aggregates: (cells c, c+1) + (cells c+2, c+3) */
    for (int i = threadIdx.x; i < ST_NQUAD; i += TPB) {
        const int r = i / ST_TX, c = i - r * ST_TX;
        const int j = r * ST_CC + c;
        Mom c0 = { cm[0][j], cm[1][j], cm[2][j], cm[3][j] };
        Mom c1 = { cm[0][j + 1], cm[1][j + 1], cm[2][j + 1], cm[3][j + 1] };
        Mom c2 = { cm[0][j + 2], cm[1][j + 2], cm[2][j + 2], cm[3][j + 2] };
        Mom c3 = { cm[0][j + 3], cm[1][j + 3], cm[2][j + 3], cm[3][j + 3] };
        Mom qd = mom_merge(mom_merge(c0, c1, 16.0), mom_merge(c2, c3, 16.0), 32.0);
        qm[0][i] = qd.m;
        qm[1][i] = qd.s2;
        qm[2][i] = qd.s3;
        qm[3][i] = qd.s4;
    }
    __syncthreads();

    /* 3: the 16x16 blocks, 4 row aggregates each */
    for (int i = threadIdx.x; i < ST_TY * ST_TX; i += TPB) {
        const int r = i / ST_TX, c = i - r * ST_TX;
        const int by = ci0 + r, bx = cj0 + c;
        if (by >= a.nbr || bx >= a.nbc)
            continue;
        Mom q4[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const int j = (r + k) * ST_TX + c;
            q4[k] = Mom{ qm[0][j], qm[1][j], qm[2][j], qm[3][j] };
        }
        const Mom b = mom_merge(mom_merge(q4[0], q4[1], 64.0), mom_merge(q4[2], q4[3], 64.0), 128.0);
        const size_t o = (size_t)by * a.nbc + bx;
        if (MODE == ST_APPEAR || MODE == ST_APPEAR_CELLS) {
            const int sub = a.sub0 + blockIdx.z;
            const double sigma = sqrt(b.s2 / 256.0);
            const double sd = sqrt(b.s2 / 255.0);
            double skew = 0.0, kurt = 0.0;
            if (sigma != 0.0) {
                skew = (b.s3 / 256.0) / (sigma * sigma * sigma);
                kurt = (b.s4 / 256.0) / (sigma * sigma * sigma * sigma);
            }
            if (a.is_ref) {
                double *st = a.st_ref + (size_t)sub * 3 * a.nblk;
                st[o] = sd;
                st[a.nblk + o] = skew;
                st[2 * a.nblk + o] = kurt;
            } else {
                const double *sr = a.st_ref + (size_t)sub * 3 * a.nblk;
                a.terms[(size_t)sub * a.nblk + o] = fabs(sr[o] - sd) +
                                                    2.0 * fabs(sr[a.nblk + o] - skew) +
                                                    fabs(sr[2 * a.nblk + o] - kurt);
            }
        } else if (MODE == ST_DETECT_REF) {
            /* 8x8 block at the same origin: cells (r..r+1, c..c+1) */
            const int j = r * ST_CC + c;
            Mom c0 = { cm[0][j], cm[1][j], cm[2][j], cm[3][j] };
            Mom c1 = { cm[0][j + 1], cm[1][j + 1], cm[2][j + 1], cm[3][j + 1] };
            Mom c2 = { cm[0][j + ST_CC], cm[1][j + ST_CC], cm[2][j + ST_CC], cm[3][j + ST_CC] };
            Mom c3 = { cm[0][j + ST_CC + 1], cm[1][j + ST_CC + 1], cm[2][j + ST_CC + 1],
                       cm[3][j + ST_CC + 1] };
            const Mom b8 = mom_merge(mom_merge(c0, c1, 16.0), mom_merge(c2, c3, 16.0), 32.0);
            a.mu_ref[o] = b.m;
            a.sd8[o] = sqrt(b8.s2 / 63.0);
        } else {
            const double sd_err = sqrt(b.s2 / 255.0);
            a.sd_err[o] = sd_err;
            a.msk[o] = visibility(a.mu_in[o], a.sdref_in[o], sd_err);
        }
    }
}

/* SPEC §3.3 modified std (mad_stats.c's mad_modified_std); tiny. */
__global__ void modified_std_kernel(double *__restrict__ sd_ref, const double *__restrict__ sd8,
                                    int w, int h, int nbr, int nbc)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nbr * nbc)
        return;
    const int by = i / nbc, bx = i - by * nbc;
    const int down = 4 * by + 5 < h - 15, right = 4 * bx + 5 < w - 15;
    const double *p = sd8 + i;
    double v = p[0];
    if (down && p[nbc] < v)
        v = p[nbc];
    if (right && p[1] < v)
        v = p[1];
    if (down && right && p[nbc + 1] < v)
        v = p[nbc + 1];
    sd_ref[i] = v;
}

/* ---- local MSE and the collapse --------------------------------------------- */

#define LM_T 32                 /* output tile: 32 x 32 pixels */
#define LM_S (LM_T + 15)        /* squared differences under it, with the window */

/* lmse(p, q) * 256 = sum of (ref - dst)^2 over rows p-7..p+8, cols q-7..q+8
 * (SPEC §3.5), exact in integers, for every pixel (the map is kept for
 * dumps), and the kept region's sum of (msk * lmse)^2 per CUDA block.
 * Memory/latency-bound: 2 bytes in and 4 out per pixel, 47^2 + 47x32
 * shared-memory integer sums per 32x32 tile. */
__global__ void __launch_bounds__(TPB) lmse_kernel(const uint8_t *__restrict__ ref,
                                                   const uint8_t *__restrict__ pic,
                                                   const double *__restrict__ msk, int w, int h,
                                                   int nbc, int32_t *__restrict__ lmse,
                                                   double *__restrict__ part)
{
    __shared__ int sq[LM_S][LM_S + 1];
    __shared__ int hs[LM_S][LM_T];
    __shared__ double red[TPB / 32];
    const int x0 = blockIdx.x * LM_T, y0 = blockIdx.y * LM_T;
    const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5; /* 32 x 8 */

    for (int i = threadIdx.x; i < LM_S * LM_S; i += TPB) {
        const int r = i / LM_S, c = i - r * LM_S;
        const size_t p = (size_t)mirror_clamp(y0 - 7 + r, h) * w + mirror_clamp(x0 - 7 + c, w);
        const int d = (int)ref[p] - (int)pic[p];
        sq[r][c] = d * d;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < LM_S * LM_T; i += TPB) {
        const int r = i / LM_T, c = i - r * LM_T;
        int s = 0;
#pragma unroll
        for (int k = 0; k < 16; k++)
            s += sq[r][c + k];
        hs[r][c] = s;
    }
    __syncthreads();
    double acc = 0.0;
    for (int rr = ty; rr < LM_T; rr += TPB / 32) {
        int s = 0;
#pragma unroll
        for (int k = 0; k < 16; k++)
            s += hs[rr + k][tx];
        const int y = y0 + rr, x = x0 + tx;
        if (y < h && x < w) {
            lmse[(size_t)y * w + x] = s;
            if (y >= MAD_CROP_LO && y <= h - 1 - MAD_CROP_HI && x >= MAD_CROP_LO &&
                x <= w - 1 - MAD_CROP_HI) {
                double v = msk[(size_t)(y / MAD_STEP) * nbc + x / MAD_STEP];
                v *= s / 256.0;
                acc += v * v;
            }
        }
    }
    acc = block_sum(acc, red);
    if (threadIdx.x == 0)
        part[blockIdx.y * gridDim.x + blockIdx.x] = acc;
}

/* eta per block, subbands in the original's order (scale outer, orientation
 * inner), and the kept region's sum of eta^2 (each block's value covers the
 * kept part of its 4x4 tile) per CUDA block.  Memory-bound: 160 bytes per
 * grid block. */
__global__ void __launch_bounds__(TPB) eta_kernel(const double *__restrict__ terms, int w, int h,
                                                  int nbr, int nbc, double *__restrict__ eta,
                                                  double *__restrict__ part)
{
    __shared__ double red[TPB / 32];
    const size_t nblk = (size_t)nbr * nbc;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    double acc = 0.0;
    if (i < (int)nblk) {
        const double wt[MAD_NSCALE] = { 0.5 / 13.25, 0.75 / 13.25, 1.0 / 13.25, 5.0 / 13.25,
                                        6.0 / 13.25 };
        double e = 0.0;
        for (int sub = 0; sub < MAD_NSUB; sub++)
            e += wt[sub / MAD_NORIENT] * terms[(size_t)sub * nblk + i];
        eta[i] = e;
        const int by = i / nbc, bx = i - by * nbc;
        const int ny = min(4 * by + 3, h - 1 - MAD_CROP_HI) - max(4 * by, MAD_CROP_LO) + 1;
        const int nx = min(4 * bx + 3, w - 1 - MAD_CROP_HI) - max(4 * bx, MAD_CROP_LO) + 1;
        if (ny > 0 && nx > 0)
            acc = e * e * (double)(ny * nx);
    }
    acc = block_sum(acc, red);
    if (threadIdx.x == 0)
        part[blockIdx.x] = acc;
}

/* One CUDA block: the two partial-sum arrays in a fixed order. */
__global__ void __launch_bounds__(TPB) final_kernel(const double *__restrict__ pd, int nd,
                                                    const double *__restrict__ pa, int na,
                                                    double *__restrict__ out)
{
    __shared__ double red[TPB / 32];
    double s = 0.0;
    for (int i = threadIdx.x; i < nd; i += TPB)
        s += pd[i];
    s = block_sum(s, red);
    if (threadIdx.x == 0)
        out[0] = s;
    __syncthreads();
    s = 0.0;
    for (int i = threadIdx.x; i < na; i += TPB)
        s += pa[i];
    s = block_sum(s, red);
    if (threadIdx.x == 0)
        out[1] = s;
}

/* ---- host side: cuFFT through dlopen ----------------------------------------- */

typedef cufftResult (*PfnPlan2d)(cufftHandle *, int, int, cufftType);
typedef cufftResult (*PfnPlanMany)(cufftHandle *, int, int *, int *, int, int, int *, int, int,
                                   cufftType, int);
typedef cufftResult (*PfnSetStream)(cufftHandle, cudaStream_t);
typedef cufftResult (*PfnExecD2Z)(cufftHandle, cufftDoubleReal *, cufftDoubleComplex *);
typedef cufftResult (*PfnExecZ2D)(cufftHandle, cufftDoubleComplex *, cufftDoubleReal *);
typedef cufftResult (*PfnExecZ2Z)(cufftHandle, cufftDoubleComplex *, cufftDoubleComplex *, int);
typedef cufftResult (*PfnExecC2C)(cufftHandle, cufftComplex *, cufftComplex *, int);
typedef cufftResult (*PfnDestroy)(cufftHandle);
typedef cufftResult (*PfnGetVersion)(int *);
typedef cufftResult (*PfnCreate)(cufftHandle *);
typedef cufftResult (*PfnMakePlanMany)(cufftHandle, int, int *, int *, int, int, int *, int, int,
                                       cufftType, int, size_t *);
typedef cufftResult (*PfnSetJitCallback)(cufftHandle, const char *, const void *, size_t,
                                         cufftXtCallbackType, void **);

typedef struct CufftApi {
    void *lib;
    PfnPlan2d plan2d;
    PfnPlanMany plan_many;
    PfnSetStream set_stream;
    PfnExecD2Z exec_d2z;
    PfnExecZ2D exec_z2d;
    PfnExecZ2Z exec_z2z;
    PfnExecC2C exec_c2c;
    PfnDestroy destroy;
    PfnGetVersion get_version;
    /* for the LTO callbacks; NULL where this cuFFT lacks them */
    PfnCreate create;
    PfnMakePlanMany make_plan_many;
    PfnSetJitCallback set_jit_callback;
} CufftApi;

template <typename T> static int fft_sym(T *fn, void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    *fn = reinterpret_cast<T>(p);
    return p ? 0 : -1;
}

/* Loads cuFFT and resolves what we use; on failure why says what went
 * wrong.  RTLD_NODELETE: dlclose only drops our reference, the library and
 * the CUDA modules it registered stay, so a later open does not re-run its
 * initialisation. */
static int fft_load(CufftApi *api, char *why, size_t why_size)
{
    static const char *const names[] = { "libcufft.so.12", "libcufft.so",
                                         "/usr/local/cuda/lib64/libcufft.so.12" };
    char first[256] = "";
    memset(api, 0, sizeof(*api));
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !api->lib; i++) {
        api->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (!api->lib && !first[0]) {
            const char *e = dlerror();
            snprintf(first, sizeof(first), "%s", e ? e : names[i]);
        }
    }
    if (!api->lib) {
        snprintf(why, why_size, "cannot load cuFFT (%s)", first);
        return -ENOENT;
    }
    if (fft_sym(&api->plan2d, api->lib, "cufftPlan2d") < 0 ||
        fft_sym(&api->plan_many, api->lib, "cufftPlanMany") < 0 ||
        fft_sym(&api->set_stream, api->lib, "cufftSetStream") < 0 ||
        fft_sym(&api->exec_d2z, api->lib, "cufftExecD2Z") < 0 ||
        fft_sym(&api->exec_z2d, api->lib, "cufftExecZ2D") < 0 ||
        fft_sym(&api->exec_z2z, api->lib, "cufftExecZ2Z") < 0 ||
        fft_sym(&api->exec_c2c, api->lib, "cufftExecC2C") < 0 ||
        fft_sym(&api->destroy, api->lib, "cufftDestroy") < 0 ||
        fft_sym(&api->get_version, api->lib, "cufftGetVersion") < 0) {
        snprintf(why, why_size, "cuFFT library lacks a function we need");
        dlclose(api->lib);
        api->lib = NULL;
        return -ENOENT;
    }
    if (fft_sym(&api->create, api->lib, "cufftCreate") < 0 ||
        fft_sym(&api->make_plan_many, api->lib, "cufftMakePlanMany") < 0 ||
        fft_sym(&api->set_jit_callback, api->lib, "cufftXtSetJITCallback") < 0)
        api->set_jit_callback = NULL;
    return 0;
}

static const char *fft_result_name(cufftResult r)
{
    switch (r) {
    case CUFFT_SUCCESS: return "CUFFT_SUCCESS";
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
    case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
    case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
    case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
    case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
    case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
    default: return "unknown cuFFT error";
    }
}

static int fft_check(cufftResult r, const char *what, MpeError *err)
{
    if (r == CUFFT_SUCCESS)
        return 0;
    return mpe_error(err, r == CUFFT_ALLOC_FAILED ? -ENOMEM : -EIO,
                     "mad_cuda: cuFFT: %s failed: %s (%d)", what, fft_result_name(r), (int)r);
}

static int cu_check(cudaError_t e, const char *what, MpeError *err)
{
    return e == cudaSuccess ? 0 : mpe_cuda_error(err, "mad_cuda", e, what);
}

#define CU_TRY(call, what) MPE_CUDA_TRY("mad_cuda", call, what)

#define FFT_TRY(call, what)                                                                   \
    do {                                                                                      \
        int r_ = fft_check((call), what, err);                                                \
        if (r_ < 0)                                                                           \
            return r_;                                                                        \
    } while (0)

/* ---- the context --------------------------------------------------------------- */

struct MadContext {
    int dev;
    int w, h, hc, nbr, nbc;
    size_t npix, nhalf, nblk;
    int batch;                   /* subbands per batched inverse transform */
    int sub_double;              /* subbands in double (MAD_CUDA_SUB_DOUBLE), else float */
    int want_callbacks;          /* float subbands: MAD_CUDA_CB_* asked for */
    int callbacks;               /* MAD_CUDA_CB_* plan_sub has (mad_cuda_cb.cuh) */
    int no_own_fft;              /* MAD_CUDA_SUB_FLOAT_CUFFT: cuFFT whatever the size */
    int own_fft;                 /* float subbands through mfft_rows/cols_kernel, no plan_sub */
    MfftPlan fft_w, fft_h;       /* their transforms along rows (w) and columns (h) */
    int rows_threads, cols_threads;
    size_t rows_smem, cols_smem;
    char cb_why[96];             /* why not, when they were wanted */
    char *dump_dir;

    CufftApi fft;
    cufftHandle plan_r2c, plan_c2r, plan_sub, plan_rest; /* rest: MAD_NSUB % batch */
    cufftHandle plan_r2c_l;      /* the lightness's D2Z, on `side` (plans share no workspace) */
    int have_r2c, have_c2r, have_sub, have_rest, have_r2c_l;
    cudaStream_t stream;
    /* the detection side (CSF filter, its block statistics, local MSE)
     * runs on `side` beside the appearance side: forked after prep, joined
     * back into `stream` before anything reads its results or reuses its
     * inputs, so `stream` alone orders calls as before */
    cudaStream_t side;
    cudaEvent_t fork, join;
    /* a distorted picture's upload, on a stream of its own so that it does
     * not queue behind the reference's work on `stream` (which waits for
     * it through up[1].left): the caller gets its picture back at once.
     * d_pic is free by then: the previous score was collected, and
     * `stream` (side joined) has finished with it */
    cudaStream_t copy;

    IqaUpload up[2];             /* staging: [0] the reference, [1] a distorted picture */
    MpePool *pool;               /* MadOptions.pool: the staging copies run on it */
    double *h_out;               /* pinned: the two sums */
    int pending;                 /* a score was submitted and not collected */
    uint8_t *d_pic, *d_ref;
    unsigned long long *d_sum;
    double *d_lut, *d_csf, *d_rad, *d_ang;
    float *d_rad_f, *d_ang_f;    /* the same in float, for float subbands (else NULL) */
    double *d_gray, *d_light;
    double2 *d_half_g, *d_half_l;
    double *d_rimg, *d_eimg;
    void *d_sub;                 /* batch x npix, double2 or float2 */
    float *d_mag;                /* with callbacks: MAD_NSUB x npix |EO| (unscaled) */
    float2 *d_tw;                /* own_fft: twiddles of fft_w, then of fft_h */
    CellMom *d_cells;            /* own_fft: batch x ncc x ncr cell moments */
    MadCbInfo *d_cbinfo;         /* with callbacks: what they read */
    double *d_mu_ref, *d_sd8, *d_sd_ref, *d_sd_err, *d_msk, *d_eta;
    double *d_st_ref, *d_terms;
    int32_t *d_lmse;
    double *d_part_det, *d_part_app, *d_out;
    int n_part_det, n_part_app;
    int have_ref, have_score;
    double last_sum[2];
    double submit_ms;            /* host clock at the last score_submit */

    /* timing */
    int timing, nmarks;
    cudaEvent_t ev[MAX_MARKS];
    int ev_stage[MAX_MARKS];
    MadCudaTimes t_ref, t_score;

    /* mad_cuda_maps() downloads */
    void *h_maps;
};

/* A stage boundary: what follows this event is `stage` (-1: the end). */
static int mark(MadContext *ctx, int stage, MpeError *err)
{
    if (!ctx->timing || ctx->nmarks >= MAX_MARKS)
        return 0;
    ctx->ev_stage[ctx->nmarks] = stage;
    CU_TRY(cudaEventRecord(ctx->ev[ctx->nmarks], ctx->stream), "cudaEventRecord");
    ctx->nmarks++;
    return 0;
}

#define MARK(stage)                                                                           \
    do {                                                                                      \
        int r_ = mark(ctx, (stage), err);                                                     \
        if (r_ < 0)                                                                           \
            return r_;                                                                        \
    } while (0)

static void collect_times(MadContext *ctx, MadCudaTimes *t, double wall)
{
    memset(t, 0, sizeof(*t));
    t->wall_ms = wall;
    for (int i = 0; i + 1 < ctx->nmarks; i++) {
        float ms = 0.0f;
        if (cudaEventElapsedTime(&ms, ctx->ev[i], ctx->ev[i + 1]) != cudaSuccess)
            continue;
        if (ctx->ev_stage[i] >= 0)
            t->ms[ctx->ev_stage[i]] += ms;
        t->gpu_ms += ms;
    }
    ctx->nmarks = 0;
}

static int cuda_probe(char *why, size_t why_size)
{
    char buf[256], dev_why[160];
    CufftApi api;
    int dev, ret, version = 0;
    if ((ret = mpe_cuda_pick(-1, MPE_CUDA_MIN_COMPUTE, &dev, buf, sizeof(buf))) == 0) {
        snprintf(dev_why, sizeof(dev_why), "%.150s", buf);
        if ((ret = fft_load(&api, buf, sizeof(buf))) == 0) {
            api.get_version(&version);
            dlclose(api.lib);
            snprintf(buf, sizeof(buf), "%.150s, cuFFT %d", dev_why, version);
        }
    }
    if (why && why_size)
        snprintf(why, why_size, "%s", buf);
    return ret;
}

static void cuda_close(MadContext *ctx)
{
    if (!ctx)
        return;
    cudaSetDevice(ctx->dev);
    if (ctx->stream)
        cudaStreamSynchronize(ctx->stream);
    if (ctx->fft.lib) {
        if (ctx->have_r2c)
            ctx->fft.destroy(ctx->plan_r2c);
        if (ctx->have_c2r)
            ctx->fft.destroy(ctx->plan_c2r);
        if (ctx->have_r2c_l)
            ctx->fft.destroy(ctx->plan_r2c_l);
        if (ctx->have_sub)
            ctx->fft.destroy(ctx->plan_sub);
        if (ctx->have_rest)
            ctx->fft.destroy(ctx->plan_rest);
        dlclose(ctx->fft.lib);
    }
    void *dev_bufs[] = { ctx->d_pic,    ctx->d_ref,    ctx->d_sum,    ctx->d_lut,
                         ctx->d_csf,    ctx->d_rad,    ctx->d_ang,    ctx->d_gray,
                         ctx->d_light,  ctx->d_half_g, ctx->d_half_l, ctx->d_rimg,
                         ctx->d_eimg,   ctx->d_sub,    ctx->d_mu_ref, ctx->d_sd8,
                         ctx->d_sd_ref, ctx->d_sd_err, ctx->d_msk,    ctx->d_eta,
                         ctx->d_st_ref, ctx->d_terms,  ctx->d_lmse,   ctx->d_part_det,
                         ctx->d_part_app, ctx->d_out,    ctx->d_rad_f,  ctx->d_ang_f,
                         ctx->d_mag,      ctx->d_cbinfo, ctx->d_tw,     ctx->d_cells };
    for (size_t i = 0; i < sizeof(dev_bufs) / sizeof(dev_bufs[0]); i++)
        if (dev_bufs[i])
            cudaFree(dev_bufs[i]);
    for (int k = 0; k < 2; k++)
        iqa_upload_close(&ctx->up[k]);
    if (ctx->h_out)
        cudaFreeHost(ctx->h_out);
    for (int i = 0; i < MAX_MARKS; i++)
        if (ctx->ev[i])
            cudaEventDestroy(ctx->ev[i]);
    if (ctx->stream)
        cudaStreamDestroy(ctx->stream);
    if (ctx->side) {
        cudaStreamSynchronize(ctx->side);
        cudaStreamDestroy(ctx->side);
    }
    if (ctx->copy) {
        cudaStreamSynchronize(ctx->copy);
        cudaStreamDestroy(ctx->copy);
    }
    if (ctx->fork)
        cudaEventDestroy(ctx->fork);
    if (ctx->join)
        cudaEventDestroy(ctx->join);
    free(ctx->h_maps);
    free(ctx->dump_dir);
    free(ctx);
}

/* Bytes of one subband bin in the context's precision. */
static size_t sub_bytes(const MadContext *ctx)
{
    return ctx->sub_double ? sizeof(double2) : sizeof(float2);
}

static int dev_alloc(void *p, size_t size, int w, int h, MpeError *err)
{
    cudaError_t e = cudaMalloc((void **)p, size);
    if (e == cudaSuccess)
        return 0;
    return mpe_error(err, e == cudaErrorMemoryAllocation ? -ENOMEM : -EIO,
                     "mad_cuda: CUDA: cudaMalloc of %zu bytes for %dx%d failed: %s", size, w, h,
                     cudaGetErrorString(e));
}

/* the LTO-IR of mad_cuda_cb.cuh (build/gen/mad_cuda_cb.c) */
extern "C" const unsigned char mad_cuda_cb_fatbin[];
extern "C" const size_t mad_cuda_cb_fatbin_size;

/* plan_sub as one batch of all 20 float subbands with the load and store
 * callbacks, its buffers and their MadCbInfo.  Nonzero (and nothing kept)
 * where this cuFFT or its JIT linker cannot: open() then takes the plain
 * plan and the product kernel, which give the same bins. */
static int callback_plan(MadContext *ctx, int *n)
{
    const CufftApi *f = &ctx->fft;
    cufftHandle plan;
    size_t work = 0;
    cufftResult r = CUFFT_SUCCESS;
    const char *step = "cudaMalloc";
    if (!f->set_jit_callback || ctx->batch != MAD_NSUB) {
        snprintf(ctx->cb_why, sizeof(ctx->cb_why), "%s",
                 f->set_jit_callback ? "subbands in several batches" : "no cufftXtSetJITCallback");
        return -1;
    }
    MadCbInfo info = { (const double2 *)ctx->d_half_g, ctx->d_rad_f, ctx->d_ang_f, NULL,
                       (unsigned long long)ctx->npix, ctx->w, ctx->h, ctx->hc, MAD_NORIENT };
    if (cudaMalloc((void **)&ctx->d_mag, (size_t)MAD_NSUB * ctx->npix * sizeof(float)) !=
            cudaSuccess ||
        cudaMalloc((void **)&ctx->d_cbinfo, sizeof(MadCbInfo)) != cudaSuccess)
        goto fail;
    info.mag = ctx->d_mag;
    step = "cudaMemcpy";
    if (cudaMemcpy(ctx->d_cbinfo, &info, sizeof(info), cudaMemcpyHostToDevice) != cudaSuccess)
        goto fail;
    step = "cufftCreate";
    if ((r = f->create(&plan)) != CUFFT_SUCCESS)
        goto fail;
    {
        void *caller = ctx->d_cbinfo;
        if ((ctx->want_callbacks == MAD_CUDA_CB_LOAD_STORE &&
             (r = f->set_jit_callback(plan, "mad_cuda_cb_load", mad_cuda_cb_fatbin,
                                      mad_cuda_cb_fatbin_size, CUFFT_CB_LD_COMPLEX, &caller)) !=
                 CUFFT_SUCCESS) ||
            (r = f->set_jit_callback(plan, "mad_cuda_cb_store", mad_cuda_cb_fatbin,
                                     mad_cuda_cb_fatbin_size, CUFFT_CB_ST_COMPLEX, &caller)) !=
                CUFFT_SUCCESS) {
            step = "cufftXtSetJITCallback";
            f->destroy(plan);
            goto fail;
        }
        if ((r = f->make_plan_many(plan, 2, n, NULL, 1, (int)ctx->npix, NULL, 1, (int)ctx->npix,
                                   CUFFT_C2C, MAD_NSUB, &work)) != CUFFT_SUCCESS) {
            step = "cufftMakePlanMany";
            f->destroy(plan);
            goto fail;
        }
    }
    ctx->plan_sub = plan;
    return 0;
fail:
    snprintf(ctx->cb_why, sizeof(ctx->cb_why), "%s: %s", step, fft_result_name(r));
    (void)cudaGetLastError();
    cudaFree(ctx->d_mag);
    cudaFree(ctx->d_cbinfo);
    ctx->d_mag = NULL;
    ctx->d_cbinfo = NULL;
    return -1;
}

/* The instances of the two kernels, by first radix and odd radices (the
 * plans' largest radix comes first: 5 and 3 lead only odd plans). */
#define MFFT_INSTANCES(X)                                                                     \
    X(8, false) X(8, true) X(5, true) X(4, false) X(4, true) X(3, true) X(2, false) X(2, true)

static const void *mfft_kernel(int rows, int r0, int odd)
{
#define MFFT_PICK(R, O)                                                                       \
    if (r0 == R && odd == (int)O)                                                              \
        return rows ? (const void *)mfft_rows_kernel<R, O> : (const void *)mfft_cols_kernel<R, O>;
    MFFT_INSTANCES(MFFT_PICK)
#undef MFFT_PICK
    return NULL;
}

/* Float subbands through mad_cuda_fft.cuh where the size allows it (see
 * mad_cuda_internal.h): its plans, twiddles and cell buffer, own_fft set.
 * Other sizes keep own_fft 0 and return 0. */
static int own_fft_setup(MadContext *ctx, MpeError *err)
{
    MfftPlan *pw = &ctx->fft_w, *ph = &ctx->fft_h;
    const int w = ctx->w, h = ctx->h;
    pw->n = w;
    ph->n = h;
    pw->nstage = mfft_radices(w, pw->radix);
    ph->nstage = mfft_radices(h, ph->radix);
    if (pw->nstage < 2 || ph->nstage < 2)
        return 0;
    pw->packed = mfft_pack(pw->radix, pw->nstage);
    ph->packed = mfft_pack(ph->radix, ph->nstage);
    ctx->rows_threads = w / pw->radix[0];
    ctx->cols_threads = (4 * (h / ph->radix[0]) / MFFT_COLS_IPT + 31) / 32 * 32;
    if (ctx->rows_threads > MFFT_ROWS_MAXT || ctx->cols_threads > 1024 / MFFT_COLS_IPT)
        return 0;
    int optin = 0;
    CU_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, ctx->dev),
           "cudaDeviceGetAttribute");
    ctx->rows_smem = mfft_smem_elems(1, w) * sizeof(float2);
    ctx->cols_smem = mfft_smem_elems(4, h) * sizeof(float2);
    if (ctx->rows_smem > (size_t)optin || ctx->cols_smem > (size_t)optin)
        return 0;
    CU_TRY(cudaFuncSetAttribute(mfft_kernel(1, pw->radix[0], mfft_odd(pw)),
                                cudaFuncAttributeMaxDynamicSharedMemorySize, (int)ctx->rows_smem),
           "cudaFuncSetAttribute");
    CU_TRY(cudaFuncSetAttribute(mfft_kernel(0, ph->radix[0], mfft_odd(ph)),
                                cudaFuncAttributeMaxDynamicSharedMemorySize, (int)ctx->cols_smem),
           "cudaFuncSetAttribute");
    int ret;
    const size_t ntw = (size_t)w + h;
    float2 *tw = (float2 *)malloc(ntw * sizeof(float2));
    if (!tw)
        return mpe_error(err, -ENOMEM, "mad: out of memory");
    for (int k = 0; k < w; k++)
        tw[k] = make_float2((float)cos(2.0 * MAD_PI * k / w), (float)sin(2.0 * MAD_PI * k / w));
    for (int k = 0; k < h; k++)
        tw[w + k] = make_float2((float)cos(2.0 * MAD_PI * k / h), (float)sin(2.0 * MAD_PI * k / h));
    if ((ret = dev_alloc(&ctx->d_tw, ntw * sizeof(float2), w, h, err)) == 0)
        ret = cu_check(cudaMemcpy(ctx->d_tw, tw, ntw * sizeof(float2), cudaMemcpyHostToDevice),
                       "cudaMemcpy(twiddles)", err);
    free(tw);
    if (ret < 0)
        return ret;
    const size_t ncells = (size_t)(ctx->nbr + 3) * (ctx->nbc + 3);
    if ((ret = dev_alloc(&ctx->d_cells, (size_t)ctx->batch * ncells * sizeof(CellMom), w, h,
                         err)) < 0)
        return ret;
    pw->tw = ctx->d_tw;
    ph->tw = ctx->d_tw + w;
    ctx->own_fft = 1;
    return 0;
}

/* Filters, lightness table and plans: everything that depends only on the
 * size. */
static int build_size(MadContext *ctx, MpeError *err)
{
    const int w = ctx->w, h = ctx->h, hc = ctx->hc;
    double lut[256];
    mad_lightness_lut(lut);
    /* on the context's stream (it does not wait for the legacy default
     * stream); lut stays alive until the synchronisation at the end */
    CU_TRY(cudaMemcpyAsync(ctx->d_lut, lut, sizeof(lut), cudaMemcpyHostToDevice, ctx->stream),
           "cudaMemcpyAsync(lut)");

    csf_half_kernel<<<dim3((hc + TPB - 1) / TPB, h), TPB, 0, ctx->stream>>>(
        ctx->d_csf, w, h, hc, 1.0 / (double)ctx->npix);
    CU_TRY(cudaGetLastError(), "CSF kernel launch");

    /* the expressions of mad_loggabor_radial / _angular, on the host */
    LgParams p;
    const double min_wavelength = 3.0, mult = 3.0, sigma_on_f = 0.55, d_theta_on_sigma = 1.5;
    for (int s = 0; s < MAD_NSCALE; s++) {
        double wavelength = min_wavelength * pow(mult, s);
        double fo = 1.0 / wavelength;
        p.lrfo[s] = log(fo / 0.5);
    }
    p.denom = -2.0 * log(sigma_on_f) * log(sigma_on_f);
    double theta_sigma = MAD_PI / MAD_NORIENT / d_theta_on_sigma;
    for (int o = 0; o < MAD_NORIENT; o++) {
        double angl = o * MAD_PI / MAD_NORIENT;
        p.ca[o] = cos(angl);
        p.sa[o] = sin(angl);
    }
    p.den = 2.0 * theta_sigma * theta_sigma;
    loggabor_kernel<<<dim3((w + TPB - 1) / TPB, h), TPB, 0, ctx->stream>>>(ctx->d_rad, ctx->d_ang,
                                                                           p, w, h);
    CU_TRY(cudaGetLastError(), "log-Gabor kernel launch");
    if (!ctx->sub_double) {
        const size_t nr = MAD_NSCALE * ctx->npix, na = MAD_NORIENT * ctx->npix;
        to_float_kernel<<<(unsigned)((nr + TPB - 1) / TPB), TPB, 0, ctx->stream>>>(ctx->d_rad_f,
                                                                                   ctx->d_rad, nr);
        to_float_kernel<<<(unsigned)((na + TPB - 1) / TPB), TPB, 0, ctx->stream>>>(ctx->d_ang_f,
                                                                                   ctx->d_ang, na);
        CU_TRY(cudaGetLastError(), "filter conversion kernel launch");
    }

    int n[2] = { h, w };
    FFT_TRY(ctx->fft.plan2d(&ctx->plan_r2c, h, w, CUFFT_D2Z), "plan (D2Z)");
    ctx->have_r2c = 1;
    FFT_TRY(ctx->fft.plan2d(&ctx->plan_c2r, h, w, CUFFT_Z2D), "plan (Z2D)");
    ctx->have_c2r = 1;
    FFT_TRY(ctx->fft.plan2d(&ctx->plan_r2c_l, h, w, CUFFT_D2Z), "plan (D2Z, lightness)");
    ctx->have_r2c_l = 1;
    const cufftType sub_type = ctx->sub_double ? CUFFT_Z2Z : CUFFT_C2C;
    int ret;
    if (!ctx->sub_double && !ctx->want_callbacks && !ctx->no_own_fft &&
        (ret = own_fft_setup(ctx, err)) < 0)
        return ret;
    if (ctx->own_fft) {
        ; /* no subband plan */
    } else if (ctx->want_callbacks && callback_plan(ctx, n) == 0) {
        ctx->callbacks = ctx->want_callbacks;
    } else {
        FFT_TRY(ctx->fft.plan_many(&ctx->plan_sub, 2, n, NULL, 1, (int)ctx->npix, NULL, 1,
                                   (int)ctx->npix, sub_type, ctx->batch),
                "plan (batched Z2Z)");
    }
    ctx->have_sub = !ctx->own_fft;
    if (!ctx->own_fft && MAD_NSUB % ctx->batch) {
        FFT_TRY(ctx->fft.plan_many(&ctx->plan_rest, 2, n, NULL, 1, (int)ctx->npix, NULL, 1,
                                   (int)ctx->npix, sub_type, MAD_NSUB % ctx->batch),
                "plan (batched Z2Z, remainder)");
        ctx->have_rest = 1;
    }
    cufftHandle plans[3] = { ctx->plan_r2c, ctx->plan_sub, ctx->plan_rest };
    for (int i = 0; i < 1 + ctx->have_sub + ctx->have_rest; i++)
        FFT_TRY(ctx->fft.set_stream(plans[i], ctx->stream), "cufftSetStream");
    FFT_TRY(ctx->fft.set_stream(ctx->plan_r2c_l, ctx->side), "cufftSetStream (side)");
    FFT_TRY(ctx->fft.set_stream(ctx->plan_c2r, ctx->side), "cufftSetStream (side)");
    CU_TRY(cudaStreamSynchronize(ctx->stream), "building the filters");
    return 0;
}

static int open_impl(MadContext **pctx, int width, int height, const MadOptions *opt, int batch,
                     int precision, MpeError *err)
{
    MadContext *ctx = NULL;
    char why[256];
    int ret;

    if ((ret = mad_check_open(pctx, width, height, opt, err)) < 0)
        return ret;
    if (batch < 0 || batch > MAD_NSUB)
        return mpe_error(err, -EINVAL, "mad_cuda: subband batch %d is not in 0..%d", batch,
                         MAD_NSUB);
    if (precision < MAD_CUDA_SUB_FLOAT || precision > MAD_CUDA_SUB_FLOAT_CUFFT)
        return mpe_error(err, -EINVAL, "mad_cuda: subband precision %d is not in %d..%d",
                         precision, MAD_CUDA_SUB_FLOAT, MAD_CUDA_SUB_FLOAT_CUFFT);

    ctx = (MadContext *)calloc(1, sizeof(*ctx));
    if (!ctx)
        return mpe_error(err, -ENOMEM, "mad: out of memory");
    ctx->w = width;
    ctx->h = height;
    ctx->hc = width / 2 + 1;
    ctx->nbr = mad_grid_rows(height);
    ctx->nbc = mad_grid_cols(width);
    ctx->npix = (size_t)width * height;
    ctx->nhalf = (size_t)height * ctx->hc;
    ctx->nblk = (size_t)ctx->nbr * ctx->nbc;
    ctx->sub_double = precision == MAD_CUDA_SUB_DOUBLE;
    ctx->no_own_fft = precision == MAD_CUDA_SUB_FLOAT_CUFFT;
    ctx->want_callbacks = precision == MAD_CUDA_SUB_FLOAT_STORE_CB  ? MAD_CUDA_CB_STORE
                          : precision == MAD_CUDA_SUB_FLOAT_LOAD_CB ? MAD_CUDA_CB_LOAD_STORE
                                                                    : MAD_CUDA_CB_NONE;
    ctx->pool = opt ? opt->pool : NULL;
    if (!batch) {
        size_t fit = SUB_BUDGET / (ctx->npix * sub_bytes(ctx));
        batch = fit >= MAD_NSUB ? MAD_NSUB : fit < 1 ? 1 : (int)fit;
    }
    ctx->batch = batch;
    if (opt && opt->dump_dir && !(ctx->dump_dir = strdup(opt->dump_dir))) {
        ret = mpe_error(err, -ENOMEM, "mad: out of memory");
        goto fail;
    }

    if ((ret = mpe_cuda_pick(opt ? opt->device : -1, MPE_CUDA_MIN_COMPUTE, &ctx->dev, why,
                             sizeof(why))) < 0) {
        ret = mpe_error(err, ret, "mad_cuda: %s", why);
        goto fail;
    }
    if ((ret = fft_load(&ctx->fft, why, sizeof(why))) < 0) {
        ret = mpe_error(err, ret, "mad_cuda: %s", why);
        goto fail;
    }
    if ((ret = mpe_cuda_use_device(ctx->dev, "mad_cuda", err)) < 0 ||
        (ret = cu_check(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking),
                        "cudaStreamCreate", err)) < 0 ||
        (ret = cu_check(cudaStreamCreateWithFlags(&ctx->side, cudaStreamNonBlocking),
                        "cudaStreamCreate", err)) < 0 ||
        (ret = cu_check(cudaStreamCreateWithFlags(&ctx->copy, cudaStreamNonBlocking),
                        "cudaStreamCreate", err)) < 0 ||
        (ret = cu_check(cudaEventCreateWithFlags(&ctx->fork, cudaEventDisableTiming),
                        "cudaEventCreate", err)) < 0 ||
        (ret = cu_check(cudaEventCreateWithFlags(&ctx->join, cudaEventDisableTiming),
                        "cudaEventCreate", err)) < 0)
        goto fail;
    for (int i = 0; i < MAX_MARKS; i++)
        if ((ret = cu_check(cudaEventCreate(&ctx->ev[i]), "cudaEventCreate", err)) < 0)
            goto fail;

    {
        const size_t n = ctx->npix, nh = ctx->nhalf, nb = ctx->nblk;
        ctx->n_part_det = ((width + LM_T - 1) / LM_T) * ((height + LM_T - 1) / LM_T);
        ctx->n_part_app = (int)((nb + TPB - 1) / TPB);
        struct {
            void *p;
            size_t size;
        } bufs[] = {
            { &ctx->d_pic, n },
            { &ctx->d_ref, n },
            { &ctx->d_sum, sizeof(unsigned long long) },
            { &ctx->d_lut, 256 * sizeof(double) },
            { &ctx->d_csf, nh * sizeof(double) },
            { &ctx->d_rad, MAD_NSCALE * n * sizeof(double) },
            { &ctx->d_ang, MAD_NORIENT * n * sizeof(double) },
            { &ctx->d_gray, n * sizeof(double) },
            { &ctx->d_light, n * sizeof(double) },
            { &ctx->d_half_g, nh * sizeof(double2) },
            { &ctx->d_half_l, nh * sizeof(double2) },
            { &ctx->d_rimg, n * sizeof(double) },
            { &ctx->d_eimg, n * sizeof(double) },
            { &ctx->d_sub, (size_t)ctx->batch * n * sub_bytes(ctx) },
            { &ctx->d_mu_ref, nb * sizeof(double) },
            { &ctx->d_sd8, nb * sizeof(double) },
            { &ctx->d_sd_ref, nb * sizeof(double) },
            { &ctx->d_sd_err, nb * sizeof(double) },
            { &ctx->d_msk, nb * sizeof(double) },
            { &ctx->d_eta, nb * sizeof(double) },
            { &ctx->d_st_ref, (size_t)MAD_NSUB * 3 * nb * sizeof(double) },
            { &ctx->d_terms, (size_t)MAD_NSUB * nb * sizeof(double) },
            { &ctx->d_lmse, n * sizeof(int32_t) },
            { &ctx->d_part_det, (size_t)ctx->n_part_det * sizeof(double) },
            { &ctx->d_part_app, (size_t)ctx->n_part_app * sizeof(double) },
            { &ctx->d_out, 2 * sizeof(double) },
        };
        for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
            if ((ret = dev_alloc(bufs[i].p, bufs[i].size, width, height, err)) < 0)
                goto fail;
        if (!ctx->sub_double &&
            ((ret = dev_alloc(&ctx->d_rad_f, MAD_NSCALE * n * sizeof(float), width, height, err)) <
                 0 ||
             (ret = dev_alloc(&ctx->d_ang_f, MAD_NORIENT * n * sizeof(float), width, height, err)) <
                 0))
            goto fail;
        for (int k = 0; k < 2; k++)
            if ((ret = iqa_upload_open(&ctx->up[k], n, "mad_cuda", err)) < 0)
                goto fail;
        if (
            (ret = cu_check(cudaHostAlloc((void **)&ctx->h_out, 2 * sizeof(double),
                                          cudaHostAllocDefault),
                            "cudaHostAlloc", err)) < 0)
            goto fail;
    }
    if ((ret = build_size(ctx, err)) < 0)
        goto fail;
    *pctx = ctx;
    return 0;
fail:
    cuda_close(ctx);
    return ret;
}

static int cuda_open(MadContext **pctx, int width, int height, const MadOptions *opt,
                     MpeError *err)
{
    return open_impl(pctx, width, height, opt, 0, MAD_CUDA_SUB_FLOAT, err);
}

/* Host picture -> dst on the device, through staging buffer `which`: the
 * reference and a distorted picture have their own, so either can be
 * queued behind work still running on the other. */
static int upload(MadContext *ctx, int which, uint8_t *dst, const uint8_t *pic, ptrdiff_t stride,
                  MpeError *err)
{
    if (which == 0)
        return iqa_upload(&ctx->up[0], ctx->pool, dst, pic, stride, ctx->w, ctx->h, ctx->stream,
                          "mad_cuda", err);
    int ret = iqa_upload(&ctx->up[1], ctx->pool, dst, pic, stride, ctx->w, ctx->h, ctx->copy,
                         "mad_cuda", err);
    if (ret == 0)
        CU_TRY(cudaStreamWaitEvent(ctx->stream, ctx->up[1].left, 0), "cudaStreamWaitEvent(upload)");
    return ret;
}

/* Pixel sum, gray and lightness (or lightness difference) of the picture
 * in pic (d_ref for the reference). */
static int prep(MadContext *ctx, const uint8_t *pic, int is_ref, MpeError *err)
{
    const size_t n = ctx->npix;
    CU_TRY(cudaMemsetAsync(ctx->d_sum, 0, sizeof(unsigned long long), ctx->stream),
           "cudaMemsetAsync");
    const int sum_blocks = (int)MPE_MIN((n / 4 + TPB - 1) / TPB + 1, (size_t)1024);
    sum_u8_kernel<<<sum_blocks, TPB, 0, ctx->stream>>>(pic, n, ctx->d_sum);
    CU_TRY(cudaGetLastError(), "sum kernel launch");
    prep_kernel<<<(unsigned)((n + TPB - 1) / TPB), TPB, 0, ctx->stream>>>(
        pic, ctx->d_ref, ctx->d_lut, ctx->d_sum, n, ctx->d_gray, ctx->d_light, is_ref);
    CU_TRY(cudaGetLastError(), "prep kernel launch");
    return 0;
}

/* d_light -> CSF -> out (R or E), on the side stream. */
static int csf_filter(MadContext *ctx, double *out, MpeError *err)
{
    FFT_TRY(ctx->fft.exec_d2z(ctx->plan_r2c_l, ctx->d_light, (cufftDoubleComplex *)ctx->d_half_l),
            "exec D2Z (lightness)");
    csf_mul_kernel<<<(unsigned)((ctx->nhalf + TPB - 1) / TPB), TPB, 0, ctx->side>>>(
        ctx->d_half_l, ctx->d_csf, ctx->nhalf);
    CU_TRY(cudaGetLastError(), "CSF product kernel launch");
    FFT_TRY(ctx->fft.exec_z2d(ctx->plan_c2r, (cufftDoubleComplex *)ctx->d_half_l, out),
            "exec Z2D (CSF)");
    return 0;
}

static StatsArgs stats_args(const MadContext *ctx)
{
    StatsArgs a;
    memset(&a, 0, sizeof(a));
    a.w = ctx->w;
    a.h = ctx->h;
    a.nbr = ctx->nbr;
    a.nbc = ctx->nbc;
    a.npix = ctx->npix;
    a.nblk = ctx->nblk;
    a.scale = 1.0 / (double)ctx->npix;
    return a;
}

static dim3 stats_grid(const MadContext *ctx, int nz)
{
    return dim3((ctx->nbc + ST_TX - 1) / ST_TX, (ctx->nbr + ST_TY - 1) / ST_TY, nz);
}

/* The detection side of the picture prep() just made (the reference's R,
 * block means and modified std; a distorted picture's E, visibility and
 * local MSE), queued on the side stream behind prep; `join` is recorded
 * after it. */
static int detection(MadContext *ctx, int is_ref, MpeError *err)
{
    int ret;
    CU_TRY(cudaEventRecord(ctx->fork, ctx->stream), "cudaEventRecord(fork)");
    CU_TRY(cudaStreamWaitEvent(ctx->side, ctx->fork, 0), "cudaStreamWaitEvent(fork)");
    if ((ret = csf_filter(ctx, is_ref ? ctx->d_rimg : ctx->d_eimg, err)) < 0)
        return ret;
    StatsArgs a = stats_args(ctx);
    if (is_ref) {
        a.img = ctx->d_rimg;
        a.mu_ref = ctx->d_mu_ref;
        a.sd8 = ctx->d_sd8;
        stats_kernel<ST_DETECT_REF><<<stats_grid(ctx, 1), TPB, 0, ctx->side>>>(a);
        CU_TRY(cudaGetLastError(), "detection statistics kernel launch");
        modified_std_kernel<<<(unsigned)((ctx->nblk + TPB - 1) / TPB), TPB, 0, ctx->side>>>(
            ctx->d_sd_ref, ctx->d_sd8, ctx->w, ctx->h, ctx->nbr, ctx->nbc);
        CU_TRY(cudaGetLastError(), "modified std kernel launch");
    } else {
        a.img = ctx->d_eimg;
        a.mu_in = ctx->d_mu_ref;
        a.sdref_in = ctx->d_sd_ref;
        a.sd_err = ctx->d_sd_err;
        a.msk = ctx->d_msk;
        stats_kernel<ST_DETECT_DST><<<stats_grid(ctx, 1), TPB, 0, ctx->side>>>(a);
        CU_TRY(cudaGetLastError(), "detection statistics kernel launch");
        lmse_kernel<<<dim3((ctx->w + LM_T - 1) / LM_T, (ctx->h + LM_T - 1) / LM_T), TPB, 0,
                      ctx->side>>>(ctx->d_ref, ctx->d_pic, ctx->d_msk, ctx->w, ctx->h, ctx->nbc,
                                   ctx->d_lmse, ctx->d_part_det);
        CU_TRY(cudaGetLastError(), "local MSE kernel launch");
    }
    CU_TRY(cudaEventRecord(ctx->join, ctx->side), "cudaEventRecord(join)");
    return 0;
}

/* The main stream waits for the detection side. */
static int join_detection(MadContext *ctx, MpeError *err)
{
    CU_TRY(cudaStreamWaitEvent(ctx->stream, ctx->join, 0), "cudaStreamWaitEvent(join)");
    return 0;
}

/* own_fft's subbands sub0 .. sub0+nsub-1: row transforms with the product
 * (stage "filter"), then (own_fft_cols) column transforms with the cell
 * moments ("fft"), each by its first radix. */
static void own_fft_rows(MadContext *ctx, int sub0, int nsub)
{
    const dim3 grid(nsub, ctx->h), block(ctx->rows_threads);
    const size_t sm = ctx->rows_smem;
    const double2 *half = ctx->d_half_g;
    float2 *out = (float2 *)ctx->d_sub;
    const float *rad = ctx->d_rad_f, *ang = ctx->d_ang_f;
    const int w = ctx->w, h = ctx->h, hc = ctx->hc, r0 = ctx->fft_w.radix[0];
    const int odd = mfft_odd(&ctx->fft_w);
    cudaStream_t st = ctx->stream;
#define MFFT_LAUNCH(R, O)                                                                     \
    if (r0 == R && odd == (int)O)                                                              \
        mfft_rows_kernel<R, O><<<grid, block, sm, st>>>(half, rad, ang, out, sub0, w, h, hc,    \
                                                        ctx->fft_w);
    MFFT_INSTANCES(MFFT_LAUNCH)
#undef MFFT_LAUNCH
}

static void own_fft_cols(MadContext *ctx, int nsub)
{
    const dim3 grid(ctx->nbc + 3, nsub), block(ctx->cols_threads);
    const size_t sm = ctx->cols_smem;
    const float2 *in = (const float2 *)ctx->d_sub;
    CellMom *cells = ctx->d_cells;
    const int w = ctx->w, h = ctx->h, ncr = ctx->nbr + 3, ncc = ctx->nbc + 3;
    const int r0 = ctx->fft_h.radix[0], odd = mfft_odd(&ctx->fft_h);
    const double scale = 1.0 / (double)ctx->npix;
    cudaStream_t st = ctx->stream;
#define MFFT_LAUNCH(R, O)                                                                     \
    if (r0 == R && odd == (int)O)                                                              \
        mfft_cols_kernel<R, O><<<grid, block, sm, st>>>(in, cells, w, h, ncr, ncc, scale,       \
                                                        ctx->fft_h);
    MFFT_INSTANCES(MFFT_LAUNCH)
#undef MFFT_LAUNCH
}

/* The 20 subbands of d_gray: their block statistics (reference) or their
 * terms against the reference's (distorted). */
static int appearance(MadContext *ctx, int is_ref, MpeError *err)
{
    const int w = ctx->w, h = ctx->h;
    MARK(MAD_CUDA_FFT);
    FFT_TRY(ctx->fft.exec_d2z(ctx->plan_r2c, ctx->d_gray, (cufftDoubleComplex *)ctx->d_half_g),
            "exec D2Z (gray)");
    for (int sub0 = 0; ctx->own_fft && sub0 < MAD_NSUB; sub0 += ctx->batch) {
        const int nsub = MPE_MIN(ctx->batch, MAD_NSUB - sub0);
        MARK(MAD_CUDA_FILTER);
        own_fft_rows(ctx, sub0, nsub);
        CU_TRY(cudaGetLastError(), "subband row transform kernel launch");
        MARK(MAD_CUDA_FFT);
        own_fft_cols(ctx, nsub);
        CU_TRY(cudaGetLastError(), "subband column transform kernel launch");
        MARK(MAD_CUDA_STATS);
        StatsArgs a = stats_args(ctx);
        a.sub = ctx->d_cells;
        a.sub0 = sub0;
        a.is_ref = is_ref;
        a.st_ref = ctx->d_st_ref;
        a.terms = ctx->d_terms;
        stats_kernel<ST_APPEAR_CELLS><<<stats_grid(ctx, nsub), TPB, 0, ctx->stream>>>(a);
        CU_TRY(cudaGetLastError(), "appearance statistics kernel launch");
    }
    for (int sub0 = 0; !ctx->own_fft && sub0 < MAD_NSUB; sub0 += ctx->batch) {
        const int nsub = MPE_MIN(ctx->batch, MAD_NSUB - sub0);
        MARK(MAD_CUDA_FILTER);
        const dim3 mul_grid((w + TPB - 1) / TPB, h);
        if (ctx->callbacks == MAD_CUDA_CB_LOAD_STORE)
            ; /* the transform's load callback makes the product */
        else if (ctx->sub_double)
            subband_mul_kernel<<<mul_grid, TPB, 0, ctx->stream>>>(
                ctx->d_half_g, ctx->d_rad, ctx->d_ang, (double2 *)ctx->d_sub, sub0, nsub, w, h,
                ctx->hc);
        else
            subband_mul_kernel<<<mul_grid, TPB, 0, ctx->stream>>>(
                ctx->d_half_g, ctx->d_rad_f, ctx->d_ang_f, (float2 *)ctx->d_sub, sub0, nsub, w, h,
                ctx->hc);
        CU_TRY(cudaGetLastError(), "subband product kernel launch");
        MARK(MAD_CUDA_FFT);
        cufftHandle plan = nsub == ctx->batch ? ctx->plan_sub : ctx->plan_rest;
        if (ctx->sub_double)
            FFT_TRY(ctx->fft.exec_z2z(plan, (cufftDoubleComplex *)ctx->d_sub,
                                      (cufftDoubleComplex *)ctx->d_sub, CUFFT_INVERSE),
                    "exec Z2Z (subbands)");
        else
            FFT_TRY(ctx->fft.exec_c2c(plan, (cufftComplex *)ctx->d_sub, (cufftComplex *)ctx->d_sub,
                                      CUFFT_INVERSE),
                    "exec C2C (subbands)");
        MARK(MAD_CUDA_STATS);
        StatsArgs a = stats_args(ctx);
        a.sub = ctx->callbacks ? (const void *)ctx->d_mag : ctx->d_sub;
        a.sub0 = sub0;
        a.is_ref = is_ref;
        a.st_ref = ctx->d_st_ref;
        a.terms = ctx->d_terms;
        if (ctx->callbacks)
            stats_kernel<ST_APPEAR, float><<<stats_grid(ctx, nsub), TPB, 0, ctx->stream>>>(a);
        else if (ctx->sub_double)
            stats_kernel<ST_APPEAR, double2><<<stats_grid(ctx, nsub), TPB, 0, ctx->stream>>>(a);
        else
            stats_kernel<ST_APPEAR, float2><<<stats_grid(ctx, nsub), TPB, 0, ctx->stream>>>(a);
        CU_TRY(cudaGetLastError(), "appearance statistics kernel launch");
    }
    return 0;
}

/* The reference's work, queued. */
static int reference_device(MadContext *ctx, const uint8_t *ref, ptrdiff_t stride, MpeError *err)
{
    int ret = mad_check_picture(ctx != NULL, ctx ? ctx->w : 0, ref, stride, "reference", err);
    if (ret < 0)
        return ret;
    const double t0 = mpe_time_ms();
    CU_TRY(cudaSetDevice(ctx->dev), "cudaSetDevice");
    ctx->have_ref = 0;
    ctx->have_score = 0;
    ctx->nmarks = 0;
    MARK(MAD_CUDA_UPLOAD);
    if ((ret = upload(ctx, 0, ctx->d_ref, ref, stride, err)) < 0)
        return ret;
    MARK(MAD_CUDA_PREP);
    if ((ret = prep(ctx, ctx->d_ref, 1, err)) < 0 || (ret = detection(ctx, 1, err)) < 0 ||
        (ret = appearance(ctx, 1, err)) < 0 || (ret = join_detection(ctx, err)) < 0)
        return ret;
    MARK(-1);
    ctx->have_ref = 1;
    if (ctx->timing) {
        CU_TRY(cudaStreamSynchronize(ctx->stream), "set_reference");
        collect_times(ctx, &ctx->t_ref, mpe_time_ms() - t0);
    }
    return 0;
}

/* Queues the reference's work and returns once ref may be reused: the
 * stream orders it after a score still pending (which is then collected
 * against the old reference) and before any later one.  Synchronous only
 * with timing on, to read the events. */
static int cuda_set_reference(MadContext *ctx, const uint8_t *ref, ptrdiff_t stride,
                              MpeError *err)
{
    int ret = reference_device(ctx, ref, stride, err);
    if (ctx) {
        /* a failure may leave the side stream unjoined: let it finish
         * before a later call reuses its buffers */
        if (ret < 0)
            (void)cudaStreamSynchronize(ctx->side);
        /* also after a failure: ref goes back to the caller either way */
        int r = iqa_upload_release(&ctx->up[0], "mad_cuda", ret < 0 ? NULL : err);
        ret = ret < 0 ? ret : r;
    }
    return ret;
}

/* Everything of a score() up to the two sums in ctx->h_out. */
static int score_device(MadContext *ctx, const uint8_t *dst, ptrdiff_t stride, MpeError *err)
{
    int ret;
    ctx->nmarks = 0;
    MARK(MAD_CUDA_UPLOAD);
    if ((ret = upload(ctx, 1, ctx->d_pic, dst, stride, err)) < 0)
        return ret;
    MARK(MAD_CUDA_PREP);
    if ((ret = prep(ctx, ctx->d_pic, 0, err)) < 0 || (ret = detection(ctx, 0, err)) < 0 ||
        (ret = appearance(ctx, 0, err)) < 0)
        return ret;

    MARK(MAD_CUDA_COLLAPSE);
    eta_kernel<<<ctx->n_part_app, TPB, 0, ctx->stream>>>(ctx->d_terms, ctx->w, ctx->h, ctx->nbr,
                                                          ctx->nbc, ctx->d_eta, ctx->d_part_app);
    CU_TRY(cudaGetLastError(), "eta kernel launch");
    if ((ret = join_detection(ctx, err)) < 0)
        return ret;
    final_kernel<<<1, TPB, 0, ctx->stream>>>(ctx->d_part_det, ctx->n_part_det, ctx->d_part_app,
                                             ctx->n_part_app, ctx->d_out);
    CU_TRY(cudaGetLastError(), "final reduction kernel launch");
    CU_TRY(cudaMemcpyAsync(ctx->h_out, ctx->d_out, 2 * sizeof(double), cudaMemcpyDeviceToHost,
                           ctx->stream),
           "cudaMemcpyAsync(sums)");
    MARK(-1);
    return 0;
}

/* The same four maps as mad_cpu's dump. */
static int dump_maps(MadContext *ctx, MpeError *err)
{
    MadCudaMaps m;
    int ret = mad_cuda_maps(ctx, &m, err);
    if (ret < 0)
        return ret;
    return mad_dump_maps(ctx->dump_dir, ctx->w, ctx->h, ctx->nbr, ctx->nbc, m.msk, m.lmse_sum, m.eta, err);
}

/* Queues a score of dst against the current reference; the picture may be
 * reused as soon as this returns.  One score at a time per context. */
static int cuda_score_submit(MadContext *ctx, const uint8_t *dst, ptrdiff_t stride, MpeError *err)
{
    const MadScore unused = { 0.0, 0.0, 0.0 }; /* score() checked its own output */
    int ret = mad_check_score(ctx != NULL, ctx ? ctx->w : 0, ctx && ctx->have_ref, dst, stride,
                              &unused, err);
    if (ret < 0)
        return ret;
    if (ctx->pending)
        return mpe_error(err, -EBUSY, "mad_cuda: a score is pending (collect it first)");
    ctx->submit_ms = mpe_time_ms();
    CU_TRY(cudaSetDevice(ctx->dev), "cudaSetDevice");
    ctx->have_score = 0;
    ret = score_device(ctx, dst, stride, err);
    if (ret < 0) /* as in cuda_set_reference */
        (void)cudaStreamSynchronize(ctx->side);
    /* also after a failure: dst goes back to the caller either way */
    const int r = iqa_upload_release(&ctx->up[1], "mad_cuda", ret < 0 ? NULL : err);
    if ((ret = ret < 0 ? ret : r) < 0)
        return ret;
    ctx->pending = 1;
    return 0;
}

/* Waits for the submitted score and returns it. */
static int cuda_score_collect(MadContext *ctx, MadScore *out, MpeError *err)
{
    if (!ctx || !out)
        return mpe_error(err, -EINVAL, "mad_cuda: NULL context or output");
    if (!ctx->pending)
        return mpe_error(err, -EINVAL, "mad_cuda: no score was submitted");
    CU_TRY(cudaSetDevice(ctx->dev), "cudaSetDevice");
    ctx->pending = 0;
    CU_TRY(cudaStreamSynchronize(ctx->stream), "score");
    ctx->have_score = 1;
    ctx->last_sum[0] = ctx->h_out[0];
    ctx->last_sum[1] = ctx->h_out[1];
    const double count = (double)(ctx->h - MAD_CROP_LO - MAD_CROP_HI) *
                         (double)(ctx->w - MAD_CROP_LO - MAD_CROP_HI);
    mad_combine(out, 200.0 * sqrt(ctx->last_sum[0] / count), sqrt(ctx->last_sum[1] / count));
    if (ctx->timing)
        collect_times(ctx, &ctx->t_score, mpe_time_ms() - ctx->submit_ms);
    return ctx->dump_dir ? dump_maps(ctx, err) : 0;
}

static int cuda_score(MadContext *ctx, const uint8_t *dst, ptrdiff_t stride, MadScore *out,
                      MpeError *err)
{
    int ret = mad_check_score(ctx != NULL, ctx ? ctx->w : 0, ctx && ctx->have_ref, dst, stride,
                              out, err);
    if (ret == 0)
        ret = cuda_score_submit(ctx, dst, stride, err);
    return ret < 0 ? ret : cuda_score_collect(ctx, out, err);
}

/* ---- internal interface (mad_cuda_internal.h) ------------------------------------ */

extern "C" int mad_cuda_open_batch(MadContext **ctx, int width, int height, const MadOptions *opt,
                                   int batch, MpeError *err)
{
    return open_impl(ctx, width, height, opt, batch, MAD_CUDA_SUB_FLOAT, err);
}

extern "C" int mad_cuda_open_ex(MadContext **ctx, int width, int height, const MadOptions *opt,
                                int batch, int precision, MpeError *err)
{
    return open_impl(ctx, width, height, opt, batch, precision, err);
}

extern "C" int mad_cuda_callbacks(const MadContext *ctx, const char **why)
{
    if (why)
        *why = ctx->callbacks ? "" : ctx->want_callbacks ? ctx->cb_why : "not asked for";
    return ctx->callbacks;
}

extern "C" int mad_cuda_own_fft(const MadContext *ctx)
{
    return ctx->own_fft;
}

extern "C" void mad_cuda_set_timing(MadContext *ctx, int on)
{
    ctx->timing = on != 0;
    ctx->nmarks = 0;
}

extern "C" void mad_cuda_times(const MadContext *ctx, MadCudaTimes *set_reference,
                               MadCudaTimes *score)
{
    if (set_reference)
        *set_reference = ctx->t_ref;
    if (score)
        *score = ctx->t_score;
}

static int download(void *dst, const void *src, size_t size, MpeError *err)
{
    return cu_check(cudaMemcpy(dst, src, size, cudaMemcpyDeviceToHost), "cudaMemcpy(maps)", err);
}

extern "C" int mad_cuda_maps(MadContext *ctx, MadCudaMaps *m, MpeError *err)
{
    if (!ctx || !m)
        return mpe_error(err, -EINVAL, "mad_cuda_maps: no context or output");
    const size_t n = ctx->npix, nh = ctx->nhalf, nb = ctx->nblk;
    /* doubles: filters 9n + csf nh + r, e 2n + grids 6nb + st_ref 60nb +
     * terms 20nb; then the int32 lmse map */
    const size_t nd = 11 * n + nh + 86 * nb;
    CU_TRY(cudaSetDevice(ctx->dev), "cudaSetDevice");
    CU_TRY(cudaStreamSynchronize(ctx->stream), "pending work");
    if (!ctx->h_maps && !(ctx->h_maps = malloc(nd * sizeof(double) + n * sizeof(int32_t))))
        return mpe_error(err, -ENOMEM, "mad_cuda_maps: out of memory");
    double *p = (double *)ctx->h_maps;
    int ret;
    memset(m, 0, sizeof(*m));
    m->w = ctx->w;
    m->h = ctx->h;
    m->nbr = ctx->nbr;
    m->nbc = ctx->nbc;
    m->batch = ctx->batch;
    m->precision = ctx->sub_double ? MAD_CUDA_SUB_DOUBLE : MAD_CUDA_SUB_FLOAT;

    double *rad = p, *ang = rad + MAD_NSCALE * n, *csf = ang + MAD_NORIENT * n;
    double *r_img = csf + nh, *mu = r_img + n, *sdr = mu + nb, *st = sdr + nb;
    double *e_img = st + (size_t)MAD_NSUB * 3 * nb, *sde = e_img + n, *msk = sde + nb;
    double *terms = msk + nb, *eta = terms + (size_t)MAD_NSUB * nb;
    int32_t *lmse = (int32_t *)(eta + nb);
    if ((ret = download(rad, ctx->d_rad, MAD_NSCALE * n * sizeof(double), err)) < 0 ||
        (ret = download(ang, ctx->d_ang, MAD_NORIENT * n * sizeof(double), err)) < 0 ||
        (ret = download(csf, ctx->d_csf, nh * sizeof(double), err)) < 0)
        return ret;
    m->lg_radial = rad;
    m->lg_angular = ang;
    m->csf_half = csf;
    if (ctx->have_ref) {
        if ((ret = download(r_img, ctx->d_rimg, n * sizeof(double), err)) < 0 ||
            (ret = download(mu, ctx->d_mu_ref, nb * sizeof(double), err)) < 0 ||
            (ret = download(sdr, ctx->d_sd_ref, nb * sizeof(double), err)) < 0 ||
            (ret = download(st, ctx->d_st_ref, (size_t)MAD_NSUB * 3 * nb * sizeof(double), err)) <
                0)
            return ret;
        m->r_img = r_img;
        m->mu_ref = mu;
        m->sd_ref = sdr;
        m->st_ref = st;
    }
    if (ctx->have_score) {
        if ((ret = download(e_img, ctx->d_eimg, n * sizeof(double), err)) < 0 ||
            (ret = download(sde, ctx->d_sd_err, nb * sizeof(double), err)) < 0 ||
            (ret = download(msk, ctx->d_msk, nb * sizeof(double), err)) < 0 ||
            (ret = download(terms, ctx->d_terms, (size_t)MAD_NSUB * nb * sizeof(double), err)) <
                0 ||
            (ret = download(eta, ctx->d_eta, nb * sizeof(double), err)) < 0 ||
            (ret = download(lmse, ctx->d_lmse, n * sizeof(int32_t), err)) < 0)
            return ret;
        m->e_img = e_img;
        m->sd_err = sde;
        m->msk = msk;
        m->terms = terms;
        m->eta = eta;
        m->lmse_sum = lmse;
        m->sum_detect = ctx->last_sum[0];
        m->sum_appear = ctx->last_sum[1];
    }
    return 0;
}

extern "C" const MadImpl mad_cuda = {
    "mad_cuda",         cuda_probe, cuda_open,         cuda_close, cuda_set_reference, cuda_score,
    cuda_score_submit, cuda_score_collect,
};
