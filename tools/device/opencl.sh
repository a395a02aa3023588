#!/usr/bin/env bash
# Runs the OpenCL front end on the device machine from binaries built here
# (the machine has no libpng or OpenCL ICD setup of its own): stage with
#   make mpegenc build/tests/test_gpu_frontend build/bench/frontend
#   devrun/{bin,lib,solar}: those three binaries; libpng16, libz, libOpenCL
#   (ocl-icd) from this machine; a few solar frames
# and carry devrun. Results go to stdout and $OUT.
set -u
D=${1:-devrun}
export LD_LIBRARY_PATH="$PWD/$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi -L
# register NVIDIA's OpenCL driver with the ICD loader if the image does not
lib=$(ls /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 2>/dev/null | head -1)
[ -n "$lib" ] || lib=$(find /usr /opt -name 'libnvidia-opencl.so*' 2>/dev/null | head -1)
echo "NVIDIA OpenCL driver: ${lib:-not found}; vendors dir: $(ls /etc/OpenCL/vendors 2>/dev/null | tr '\n' ' ')"
if [ -n "$lib" ]; then mkdir -p /tmp/icd; echo "$lib" > /tmp/icd/nvidia.icd; export OCL_ICD_VENDORS=/tmp/icd; fi
"$D/bin/mpegenc" --list-backends
echo "== differential tests (incl. solar R=16 and R=64)"
SOLAR_DIR="$D/solar" MPE_TEST_SOLAR_R64=1 "$D/bin/test_gpu_frontend"
echo "== streams: opencl vs cpu, 4 solar frames 2048x2048"
for b in cpu opencl; do
    for f in m2v m1v; do
        "$D/bin/mpegenc" --backend $b -i "$D/solar/solar_%d.png" -o "${OUT:-/tmp}/$b.$f" --q 5 --gop 3 || echo "encode $b $f failed"
    done
done
for f in m2v m1v; do
    cmp "${OUT:-/tmp}/cpu.$f" "${OUT:-/tmp}/opencl.$f" && echo "STREAMS $f: opencl == cpu (byte-identical, $(stat -c %s "${OUT:-/tmp}/cpu.$f") bytes)"
done
echo "== kernel benchmark"
"$D/bin/frontend" --backend opencl --dir "$D/solar" --runs 20
