// isa_rates.cu — issue rate of the instructions a SAD kernel can be built
// from, in thread-instructions per SM clock, measured with clock64() on a
// full grid.  Explains what bounds gpu/frontend_cuda.cu's search (PERF.md).
//   nvcc -O3 -arch=sm_90 -o isa_rates tools/device/isa_rates.cu && ./isa_rates
#include <cstdio>
#include <cuda_fp16.h>

#define CHAINS 8
#define ITERS 4096

template <int OP>
__device__ __forceinline__ unsigned step(unsigned acc, unsigned a, unsigned b)
{
    unsigned d;
    if (OP == 0) {        // VABSDIFF4 with accumulate: 4 |a-b| summed
        asm volatile("vabsdiff4.u32.u32.u32.add %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(acc));
    } else if (OP == 1) { // IDP.4A
        d = __dp4a(a, b, acc);
    } else if (OP == 2) { // HADD2 with |x|: acc += |a - b| on two fp16 lanes is two of these
        __half2 x = *reinterpret_cast<__half2 *>(&acc), y = *reinterpret_cast<__half2 *>(&a);
        x = __hadd2(x, __habs2(y));
        d = *reinterpret_cast<unsigned *>(&x);
    } else if (OP == 3) { // IADD3
        d = acc + a + b;
    } else {              // byte-wise min
        d = __vminu4(acc, a) ;
    }
    return d;
}

template <int OP>
__global__ void rate_kernel(unsigned seed, unsigned *out, long long *cycles)
{
    unsigned acc[CHAINS];
    unsigned a = seed ^ threadIdx.x, b = seed * 7 + blockIdx.x;
#pragma unroll
    for (int c = 0; c < CHAINS; c++)
        acc[c] = a + c;
    __syncthreads();
    long long t0 = clock64();
    for (int i = 0; i < ITERS; i++) {
#pragma unroll
        for (int c = 0; c < CHAINS; c++)
            acc[c] = step<OP>(acc[c], a + c, b);
    }
    __syncthreads();
    long long t1 = clock64();
    unsigned s = 0;
#pragma unroll
    for (int c = 0; c < CHAINS; c++)
        s ^= acc[c];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
    if (threadIdx.x == 0)
        cycles[blockIdx.x] = t1 - t0;
}

template <int OP>
static void measure(const char *name, int sms)
{
    const int threads = 1024, blocks = sms * 2;
    unsigned *out;
    long long *cyc, h[4096];
    cudaMalloc(&out, sizeof(unsigned) * threads * blocks);
    cudaMalloc(&cyc, sizeof(long long) * blocks);
    rate_kernel<OP><<<blocks, threads>>>(1, out, cyc);
    rate_kernel<OP><<<blocks, threads>>>(2, out, cyc);
    cudaMemcpy(h, cyc, sizeof(long long) * blocks, cudaMemcpyDeviceToHost);
    long long mx = 0;
    for (int i = 0; i < blocks; i++)
        mx = h[i] > mx ? h[i] : mx;
    // two blocks share each SM: per SM, 2 * threads * ITERS * CHAINS ops
    double per_clk = 2.0 * threads * ITERS * CHAINS / (double)mx;
    printf("%-28s %6.1f thread-instr/clk/SM  (%s)\n", name, per_clk, cudaGetErrorString(cudaGetLastError()));
    cudaFree(out);
    cudaFree(cyc);
}

int main()
{
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    measure<0>("VABSDIFF4.U8.ACC", sms);
    measure<1>("IDP.4A", sms);
    measure<2>("HADD2 (|x| operand)", sms);
    measure<3>("IADD3", sms);
    measure<4>("byte min (__vminu4)", sms);
    return 0;
}
