/* mad_cuda_fft.cuh — mad_cuda's own inverse transforms of the 20 float
 * subbands (mad_cuda.cu's rows and columns kernels): mixed-radix Stockham
 * FFTs (radices 8, 5, 4, 3, 2) in shared memory, one picture row or four
 * picture columns per CUDA block, so that the subband product is made in
 * the first pass's load and the block statistics' 4x4 cell moments in the
 * second pass's store.  cuFFT's batched C2C read and wrote every bin twice
 * behind a product kernel that wrote them once (1.6 ms of 2.24 at 2048^2
 * on an H100); here a bin is written once and read once.
 *
 * Stage s of a transform of length n, radix R, Ns = product of the earlier
 * radices (Stockham autosort, natural order in and out): item j in
 * [0, n/R) reads x[j + r n/R] (r < R), multiplies each by
 * exp(+2 pi i r (j mod Ns) / (Ns R)), takes their R-point inverse DFT and
 * writes output q to y[(j / Ns) Ns R + j mod Ns + q Ns].  Inverse
 * (exponent +i), unnormalised: cuFFT's CUFFT_INVERSE.  Twiddles come from
 * a table of exp(+2 pi i k / n) made in double on the host and rounded
 * once to float.
 *
 * A block runs T = ncol * n / R0 threads (R0 the largest radix, stage 0):
 * then every stage gives a thread at most ceil(R0 / R) items, so the
 * values a thread holds between a stage's reads and its writes are a
 * register array of compile-time size, and one buffer serves every stage
 * (reads, barrier, writes, barrier). */
#ifndef MPE_MAD_CUDA_FFT_CUH
#define MPE_MAD_CUDA_FFT_CUH

#include <cuda_runtime.h>

#define MFFT_MAX_STAGES 16

/* The transform of one length: its radices, largest first, also packed 4
 * bits each (stage s at bits 4s..4s+3) for the kernels, which would copy
 * an array parameter indexed at run time into local memory. */
struct MfftPlan {
    int n, nstage;
    int radix[MFFT_MAX_STAGES];
    unsigned long long packed;
    const float2 *tw; /* device: n twiddles exp(+2 pi i k / n) */
};

/* Radices of n, largest first (8s, 5s, at most one 4, 3s, at most one
 * 2); 0 where n has a prime factor above 5 or is below 2. */
static inline int mfft_radices(int n, int *radix)
{
    static const int order[] = { 8, 5, 4, 3, 2 };
    int k = 0, m = n;
    if (n < 2)
        return 0;
    for (int i = 0; i < 5; i++)
        while (m % order[i] == 0) {
            if (k >= MFFT_MAX_STAGES)
                return 0;
            radix[k++] = order[i];
            m /= order[i];
        }
    return m == 1 ? k : 0;
}

static inline unsigned long long mfft_pack(const int *radix, int nstage)
{
    unsigned long long p = 0;
    for (int s = 0; s < nstage; s++)
        p |= (unsigned long long)radix[s] << (4 * s);
    return p;
}

/* Shared-memory index of element i of column c: columns interleaved (a
 * warp's four lanes of one row read 32 contiguous bytes), one float2 of
 * padding every 8 rows against the bank conflicts of the early stages'
 * strided writes. */
template <int NCOL> __device__ __forceinline__ int mfft_at(int c, int i)
{
    return c + NCOL * (i + (i >> 3));
}

/* Where element i0 + q (q < R) of column c goes, i0 a multiple of R:
 * linear in q for the power-of-two radices (i0 + q never crosses a
 * multiple of 8 there). */
template <int NCOL, int R> __device__ __forceinline__ int mfft_at_run(int c, int i0, int q)
{
    return (R & (R - 1)) == 0 ? mfft_at<NCOL>(c, i0) + NCOL * q : mfft_at<NCOL>(c, i0 + q);
}

/* Elements of the padded buffer of ncol columns of length n. */
static inline size_t mfft_smem_elems(int ncol, int n)
{
    return (size_t)ncol * (size_t)(n + (n >> 3) + 1);
}

__device__ __forceinline__ float2 mfft_mul(float2 a, float2 b)
{
    return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

__device__ __forceinline__ float2 mfft_add(float2 a, float2 b)
{
    return make_float2(a.x + b.x, a.y + b.y);
}

__device__ __forceinline__ float2 mfft_sub(float2 a, float2 b)
{
    return make_float2(a.x - b.x, a.y - b.y);
}

/* i z */
__device__ __forceinline__ float2 mfft_i(float2 z)
{
    return make_float2(-z.y, z.x);
}

/* R-point inverse DFT of v in place: v[q] = sum_r v[r] exp(+2 pi i r q / R).
 * tw, n: the transform's table, for the odd radices' roots. */
template <int R> __device__ __forceinline__ void mfft_dft(float2 *v, const float2 *tw, int n);

template <> __device__ __forceinline__ void mfft_dft<2>(float2 *v, const float2 *, int)
{
    const float2 a = v[0], b = v[1];
    v[0] = mfft_add(a, b);
    v[1] = mfft_sub(a, b);
}

template <> __device__ __forceinline__ void mfft_dft<4>(float2 *v, const float2 *, int)
{
    const float2 s02 = mfft_add(v[0], v[2]), d02 = mfft_sub(v[0], v[2]);
    const float2 s13 = mfft_add(v[1], v[3]), d13 = mfft_i(mfft_sub(v[1], v[3]));
    v[0] = mfft_add(s02, s13);
    v[2] = mfft_sub(s02, s13);
    v[1] = mfft_add(d02, d13);
    v[3] = mfft_sub(d02, d13);
}

template <> __device__ __forceinline__ void mfft_dft<8>(float2 *v, const float2 *, int)
{
    float2 e[4] = { v[0], v[2], v[4], v[6] }, o[4] = { v[1], v[3], v[5], v[7] };
    mfft_dft<4>(e, NULL, 0);
    mfft_dft<4>(o, NULL, 0);
    const float c = 0.70710678118654752f; /* the float nearest 1/sqrt(2) */
    const float2 w1 = make_float2(c * (o[1].x - o[1].y), c * (o[1].x + o[1].y));
    const float2 w2 = mfft_i(o[2]);
    const float2 w3 = make_float2(-c * (o[3].x + o[3].y), c * (o[3].x - o[3].y));
    v[0] = mfft_add(e[0], o[0]);
    v[4] = mfft_sub(e[0], o[0]);
    v[1] = mfft_add(e[1], w1);
    v[5] = mfft_sub(e[1], w1);
    v[2] = mfft_add(e[2], w2);
    v[6] = mfft_sub(e[2], w2);
    v[3] = mfft_add(e[3], w3);
    v[7] = mfft_sub(e[3], w3);
}

/* The odd radices directly, their roots from the table. */
template <int R> __device__ __forceinline__ void mfft_dft_odd(float2 *v, const float2 *tw, int n)
{
    float2 w[R], y[R];
    w[0] = make_float2(1.0f, 0.0f);
#pragma unroll
    for (int m = 1; m < R; m++)
        w[m] = __ldg(tw + m * (n / R));
#pragma unroll
    for (int q = 0; q < R; q++) {
        float2 acc = v[0];
#pragma unroll
        for (int r = 1; r < R; r++)
            acc = mfft_add(acc, mfft_mul(v[r], w[(r * q) % R]));
        y[q] = acc;
    }
#pragma unroll
    for (int q = 0; q < R; q++)
        v[q] = y[q];
}

template <> __device__ __forceinline__ void mfft_dft<3>(float2 *v, const float2 *tw, int n)
{
    mfft_dft_odd<3>(v, tw, n);
}

template <> __device__ __forceinline__ void mfft_dft<5>(float2 *v, const float2 *tw, int n)
{
    mfft_dft_odd<5>(v, tw, n);
}

/* j / Ns and j % Ns: shifts where Ns is a power of two (every stage of a
 * power-of-two length; the division was most of a stage's instructions). */
struct MfftDiv {
    int ns, shift, pow2;
};

__device__ __forceinline__ MfftDiv mfft_div(int ns)
{
    MfftDiv d;
    d.ns = ns;
    d.pow2 = (ns & (ns - 1)) == 0;
    d.shift = __ffs(ns) - 1;
    return d;
}

__device__ __forceinline__ void mfft_divmod(int j, const MfftDiv &d, int *q, int *r)
{
    if (d.pow2) {
        *q = j >> d.shift;
        *r = j & (d.ns - 1);
    } else {
        *q = j / d.ns;
        *r = j - *q * d.ns;
    }
}

/* f(it, c, j, j / Ns, j % Ns) for this thread's items J = t + it tfft
 * (it < MAXIT, J < items) of a stage: column c, index j in it. */
template <int NCOL, int MAXIT, typename F>
__device__ __forceinline__ void mfft_items(int items, int tfft, const MfftDiv &dv, F f)
{
    const int t = threadIdx.x;
#pragma unroll
    for (int it = 0; it < MAXIT; it++) {
        const int J = t + it * tfft;
        if (t < tfft && J < items) {
            int jq, k;
            mfft_divmod(J / NCOL, dv, &jq, &k);
            f(it, J % NCOL, J / NCOL, jq, k);
        }
    }
}

/* One stage (radix R, Ns) over NCOL columns of length n in buf, item J of
 * the stage being column J % NCOL, index J / NCOL.  Threads t < tfft take
 * items t, t + tfft, ... (at most IPT ceil(8 / R) of them: tfft = NCOL n /
 * (IPT R0), R0 <= 8 the plan's largest radix); every thread of the block
 * must call it. */
template <int R, int NCOL, int IPT, bool LIN>
__device__ __forceinline__ void mfft_stage(float2 *buf, int n, int Ns, const float2 *__restrict__ tw,
                                           int tfft)
{
    constexpr int MAXIT = IPT * ((8 + R - 1) / R);
    const int items = NCOL * (n / R), stride = n / R, step = n / (Ns * R);
    const MfftDiv dv = mfft_div(Ns);
    /* LIN (a power-of-two length, stages after the first: the stride and
     * Ns are multiples of 8): element i + r stride sits at mfft_at(i) + r *
     * (its padded stride), and the padding's shift leaves the address
     * arithmetic (a third of a stage's instructions) */
    const bool lin_r = LIN, lin_w = LIN;
    const int pstride = NCOL * (stride + (stride >> 3)), pns = NCOL * (Ns + (Ns >> 3));
    float2 v[MAXIT][R];
    mfft_items<NCOL, MAXIT>(items, tfft, dv, [&](int it, int c, int j, int, int k) {
        const int a0 = mfft_at<NCOL>(c, j), kk = k * step;
        if (lin_r) {
#pragma unroll
            for (int r = 0; r < R; r++)
                v[it][r] = buf[a0 + r * pstride];
        } else {
#pragma unroll
            for (int r = 0; r < R; r++)
                v[it][r] = buf[mfft_at<NCOL>(c, j + r * stride)];
        }
        if (k > 0) {
#pragma unroll
            for (int r = 1; r < R; r++)
                v[it][r] = mfft_mul(v[it][r], __ldg(tw + r * kk));
        }
        mfft_dft<R>(v[it], tw, n);
    });
    __syncthreads();
    mfft_items<NCOL, MAXIT>(items, tfft, dv, [&](int it, int c, int, int jq, int k) {
        const int d = jq * Ns * R + k;
        if (lin_w) {
            const int b0 = mfft_at<NCOL>(c, d);
#pragma unroll
            for (int q = 0; q < R; q++)
                buf[b0 + q * pns] = v[it][q];
        } else {
#pragma unroll
            for (int q = 0; q < R; q++)
                buf[mfft_at<NCOL>(c, d + q * Ns)] = v[it][q];
        }
    });
    __syncthreads();
}

/* Stages s .. of p of radix R; s and Ns move on. */
template <int R, int NCOL, int IPT, bool LIN>
__device__ __forceinline__ void mfft_run(float2 *buf, const MfftPlan &p, int &s, int &Ns, int tfft)
{
    while (s < p.nstage && (int)((p.packed >> (4 * s)) & 15) == R) {
        mfft_stage<R, NCOL, IPT, LIN>(buf, p.n, Ns, p.tw, tfft);
        Ns *= R;
        s++;
    }
}

/* Stages first .. nstage-1 of p, in buf; ODD: p may have radices 5 and 3
 * (their code, compiled in, made ptxas spill the power-of-two stages of
 * the columns' kernel too).  The radices come sorted (8s, 5s, at most one
 * 4, 3s, at most one 2), so each radix is a loop of its own: one loop
 * around a switch on the radix made ptxas spill as well. */
template <int NCOL, int IPT, bool ODD>
__device__ __forceinline__ void mfft_stages(float2 *buf, const MfftPlan &p, int first, int tfft)
{
    int Ns = 1, s = first;
    for (int i = 0; i < first; i++)
        Ns *= (int)((p.packed >> (4 * i)) & 15);
    /* first > 0: a power-of-two plan (!ODD) of length >= 16 has a stride
     * n / R >= 8 and Ns >= 8 in every later stage */
    mfft_run<8, NCOL, IPT, !ODD>(buf, p, s, Ns, tfft);
    if (ODD)
        mfft_run<5, NCOL, IPT, false>(buf, p, s, Ns, tfft);
    mfft_run<4, NCOL, IPT, !ODD>(buf, p, s, Ns, tfft);
    if (ODD)
        mfft_run<3, NCOL, IPT, false>(buf, p, s, Ns, tfft);
    mfft_run<2, NCOL, IPT, !ODD>(buf, p, s, Ns, tfft);
}

/* Whether the plan has a radix 5 or 3. */
static inline int mfft_odd(const MfftPlan *p)
{
    for (int s = 0; s < p->nstage; s++)
        if (p->radix[s] == 5 || p->radix[s] == 3)
            return 1;
    return 0;
}

#endif
