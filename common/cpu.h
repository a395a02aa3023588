/* cpu.h — run-time CPU feature detection for the DSP tables.
 *
 * Faster variants are compiled with a function-level target attribute
 * (no build flags change) and installed only when the CPU running the
 * program has the instructions. */
#ifndef MPE_CPU_H
#define MPE_CPU_H

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define MPE_ARCH_X86 1
#endif

enum {
    MPE_CPU_SSE2 = 1 << 0,
    MPE_CPU_AVX2 = 1 << 1,
};

/* The features of this CPU, as MPE_CPU_* bits. */
static inline unsigned mpe_cpu_flags(void)
{
    unsigned f = 0;
#ifdef MPE_ARCH_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse2"))
        f |= MPE_CPU_SSE2;
    if (__builtin_cpu_supports("avx2"))
        f |= MPE_CPU_AVX2;
#endif
    return f;
}

#endif
