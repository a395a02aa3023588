/* mad_math.h — the arithmetic mad_cpu and mad_cuda share, written once and
 * compiled for the host (C) and the device (CUDA): the union of two sample
 * moments and the contrast sensitivity function.  On the device the same
 * source uses the device's libm (1-2 ulp from glibc's; the CSF's flat top
 * makes its one threshold harmless). */
#ifndef MPE_IQA_MAD_MATH_H
#define MPE_IQA_MAD_MATH_H

#include <math.h>

#ifdef __CUDACC__
#define MAD_HD static __host__ __device__ __forceinline__
#else
#define MAD_HD static inline
#endif

/* Moments of n samples: mean and central sums of d^2, d^3, d^4. */
typedef struct MadMom {
    double m, s2, s3, s4;
} MadMom;

/* Union of two sets of n samples each. */
MAD_HD MadMom mad_mom_merge(MadMom a, MadMom b, double n)
{
    MadMom o;
    double d = b.m - a.m, d2 = d * d;
    o.m = (a.m + b.m) * 0.5;
    o.s2 = a.s2 + b.s2 + d2 * n * 0.5;
    o.s3 = a.s3 + b.s3 + 1.5 * d * (b.s2 - a.s2);
    o.s4 = a.s4 + b.s4 + d2 * d2 * n * 0.125 + 1.5 * d2 * (a.s2 + b.s2) + 2.0 * d * (b.s3 - a.s3);
    return o;
}

/* The CSF at bin (r, c) of an h x w spectrum, centred (SPEC §3.2). */
MAD_HD double mad_csf_at(int r, int c, int w, int h)
{
    const double nfreq = 32.0; /* cycles/degree at Nyquist: the code's only viewing parameter */
    const double ww = 0.7;     /* oblique-effect weight */
    double u = (double)r - (h - 1) / 2.0;
    double v = (double)c - (w - 1) / 2.0;
    /* both axes are scaled by the column count, even for M != N (SPEC §3.2) */
    double zr = u / w * 2.0 * nfreq, zi = v / w * 2.0 * nfreq;
    double f = hypot(zr, zi);
    double theta = atan2(zi, zr);
    double s = (1.0 - ww) / 2.0 * cos(4.0 * theta) + (1.0 + ww) / 2.0;
    double fp = f / s;
    if (fp < 7.8909) /* flat below the peak: the CSF acts as a low-pass */
        return 0.9809;
    return 2.6 * (0.0192 + 0.114 * fp) * exp(-pow(0.114 * fp, 1.1));
}

#endif
