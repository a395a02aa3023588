/* cuda.cu — see cuda.h. */
extern "C" {
#include "common/cuda.h"
}

#include <cuda_runtime.h>
#include <errno.h>
#include <stdio.h>

int mpe_cuda_pick(int index, int min_compute, int *dev, char *why, size_t why_size)
{
    cudaDeviceProp prop;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);

    if (e != cudaSuccess) {
        snprintf(why, why_size, "no usable CUDA driver or device (%s)", cudaGetErrorString(e));
        cudaGetLastError();   /* clear the error so later calls do not report it */
        return -ENODEV;
    }
    if (n == 0) {
        snprintf(why, why_size, "no CUDA device");
        return -ENODEV;
    }
    if (index < -1 || index >= n) {
        snprintf(why, why_size, "--device %d: only %d CUDA device%s (0..%d)", index, n,
                 n == 1 ? "" : "s", n - 1);
        return -ENODEV;
    }
    *dev = index < 0 ? 0 : index;
    if ((e = cudaGetDeviceProperties(&prop, *dev)) != cudaSuccess) {
        snprintf(why, why_size, "cannot query CUDA device %d (%s)", *dev, cudaGetErrorString(e));
        cudaGetLastError();
        return -ENODEV;
    }
    if (prop.major * 10 + prop.minor < min_compute) {
        snprintf(why, why_size, "CUDA device %d (%.100s) has compute capability %d.%d, need %d.%d",
                 *dev, prop.name, prop.major, prop.minor, min_compute / 10, min_compute % 10);
        return -ENODEV;
    }
    snprintf(why, why_size, "device %d: %.100s (compute %d.%d, %d SMs)", *dev, prop.name,
             prop.major, prop.minor, prop.multiProcessorCount);
    return 0;
}

int mpe_cuda_use_device(int dev, const char *who, MpeError *err)
{
    cudaError_t e = cudaSetDevice(dev);
    if (e != cudaSuccess)
        return mpe_cuda_error(err, who, e, "cudaSetDevice");
    /* the flags of a primary context that is already active are replaced:
     * no failure to report; a driver that refuses keeps its default */
    if (cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) != cudaSuccess)
        cudaGetLastError();
    return 0;
}

int mpe_cuda_error(MpeError *err, const char *who, int cuda_error, const char *what)
{
    cudaError_t e = (cudaError_t)cuda_error;
    return mpe_error(err, e == cudaErrorMemoryAllocation ? -ENOMEM : -EIO,
                     "%s%sCUDA: %s failed: %s (%s)", who ? who : "", who ? ": " : "", what,
                     cudaGetErrorString(e), cudaGetErrorName(e));
}
