/* cpu.h — which optimised primitives may run: the CPU's features, ANDed
 * with a mask (dav1d's habit, src/cpu.h).
 *
 * Every DSP table (dsp/dsp.h MpeDsp, dsp/sad.h MpeSadDsp, input's
 * MpePngDsp, gpu's GpuCpuKernels) has one init taking such a flags word: it
 * fills the C versions first, then overwrites entries with the variants
 * whose MPE_CPU_* bits are all set in it.  So flags 0 is C everywhere
 * (`--dsp c`), and a test can run every table under every subset of the
 * machine's flags against the C references (tests/unit/test_checkasm.c).
 * Every variant gives output identical to its C reference, so the mask
 * never changes a stream, only speed.
 *
 * SIMD variants are compiled with a function-level target attribute (no
 * build flags change) and installed only when the CPU running the program
 * has the instructions. */
#ifndef MPE_CPU_H
#define MPE_CPU_H

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define MPE_ARCH_X86 1
#endif

enum {
    /* Portable-C speed-ups of the block DSP (butterfly DCT, reciprocal
     * quantiser, table-driven block VLC): no special instructions, so every
     * CPU has it, but it is a bit of its own so that mask 0 runs the plain
     * C references, written as the standards define them. */
    MPE_CPU_FAST_C = 1 << 0,
    MPE_CPU_SSE2 = 1 << 1,
    MPE_CPU_AVX2 = 1 << 2,
    /* AVX-512 F, BW and VL (Skylake-SP, Ice Lake, Zen 4 on): the variants
     * mostly run on 256-bit vectors, for the instructions (vdbpsadbw,
     * masks) rather than the width */
    MPE_CPU_AVX512 = 1 << 3,
    MPE_CPU_ALL = MPE_CPU_FAST_C | MPE_CPU_SSE2 | MPE_CPU_AVX2 | MPE_CPU_AVX512,
};

/* The features of this CPU, as MPE_CPU_* bits (AND it with a mask before
 * giving it to a table's init). */
static inline unsigned mpe_cpu_flags(void)
{
    unsigned f = MPE_CPU_FAST_C;
#ifdef MPE_ARCH_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse2"))
        f |= MPE_CPU_SSE2;
    if (__builtin_cpu_supports("avx2"))
        f |= MPE_CPU_AVX2;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl"))
        f |= MPE_CPU_AVX512;
#endif
    return f;
}

#endif
