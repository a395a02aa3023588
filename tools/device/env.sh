# Sourced by the tools/device scripts (D: the staged folder): its libraries
# and CUDA's on the library path, and NVIDIA's OpenCL driver as the only ICD
# where the machine has one (its own ICD files may be missing or name
# drivers that are not there).
export LD_LIBRARY_PATH="$PWD/$D/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
lib=$(ls /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 2>/dev/null | head -1)
[ -n "$lib" ] || lib=$(find /usr /opt -name 'libnvidia-opencl.so*' 2>/dev/null | head -1)
if [ -n "$lib" ]; then mkdir -p /tmp/icd; echo "$lib" > /tmp/icd/nvidia.icd; export OCL_ICD_VENDORS=/tmp/icd; fi
