/* mad_cuda_cb.cuh — cuFFT callbacks of mad_cuda's batched inverse subband
 * transform (float subbands, all 20 in one batch), compiled apart to LTO-IR
 * (the Makefile's mad_cuda_cb rule, -DMAD_CUDA_CB_LTO) that cuFFT links
 * into its own kernels when the plan is made (cufftXtSetJITCallback):
 *   load   the subband's bin = spectrum x radial x angular filter, the
 *          same doubles rounded once to float as subband_mul_kernel: the
 *          product is made where the transform reads it, never stored
 *          (that kernel wrote, and the transform read back, 8 bytes per
 *          pixel and subband)
 *   store  |EO| / (w*h) in float's magnitude only, 4 bytes instead of the
 *          8-byte complex the statistics then read back
 * Opt-in (MAD_CUDA_SUB_FLOAT_STORE_CB, _LOAD_CB in mad_cuda_internal.h):
 * with cuFFT 12.0 on an H100 either makes the transform slower than the
 * bytes it saves.  C++ functions (not extern "C"): cuFFT finds them by the
 * name given and their C++ signature (with extern "C" names it made no
 * plan).  mad_cuda.cu includes this for MadCbInfo alone. */
#ifndef MPE_MAD_CUDA_CB_CUH
#define MPE_MAD_CUDA_CB_CUH

#include <cufft.h>
#include <stddef.h>

/* In device memory; cuFFT hands its address to every call. */
typedef struct MadCbInfo {
    const double2 *half;   /* h x hc: r2c half spectrum of the gray image */
    const float *rad;      /* MAD_NSCALE planes of h x w */
    const float *ang;      /* MAD_NORIENT planes of h x w */
    float *mag;            /* 20 planes of h x w: |inverse| (unscaled) */
    unsigned long long npix;
    int w, h, hc, norient;
} MadCbInfo;

#ifdef MAD_CUDA_CB_LTO

__device__ cufftComplex mad_cuda_cb_load(void *in, unsigned long long offset, void *info,
                                         void *shared)
{
    const MadCbInfo *p = (const MadCbInfo *)info;
    const unsigned long long npix = p->npix;
    const int sub = (int)(offset / npix);
    const unsigned long long i = offset - (unsigned long long)sub * npix;
    const int k = (int)(i / (unsigned)p->w), l = (int)(i - (unsigned long long)k * p->w);
    double2 f;
    (void)in;
    (void)shared;
    /* bins r2c leaves out: F(k, l) = conj(F(-k, -l)) */
    if (l < p->hc) {
        f = __ldg(p->half + (size_t)k * p->hc + l);
    } else {
        f = __ldg(p->half + (size_t)((p->h - k) % p->h) * p->hc + (p->w - l));
        f.y = -f.y;
    }
    const int s = sub / p->norient, o = sub - s * p->norient;
    const double g = (double)__ldg(p->rad + s * npix + i) * (double)__ldg(p->ang + o * npix + i);
    return make_float2((float)(f.x * g), (float)(f.y * g));
}

__device__ void mad_cuda_cb_store(void *out, unsigned long long offset, cufftComplex z,
                                  void *info, void *shared)
{
    (void)out;
    (void)shared;
    /* explicit rounding: the same value whatever the linker contracts */
    ((const MadCbInfo *)info)->mag[offset] = __fsqrt_rn(__fmaf_rn(z.x, z.x, __fmul_rn(z.y, z.y)));
}

#endif

#endif
