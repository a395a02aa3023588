#!/usr/bin/env bash
# Runs the GPU front ends (cuda, opencl) on the device machine from binaries
# built here (the machine has no libpng or OpenCL ICD setup of its own).
# Stage with
#   make mpegenc build/tests/test_gpu_frontend build/bench/frontend
#   devrun/{bin,lib,solar,obj}: those three binaries; libpng16, libz,
#   libOpenCL (ocl-icd) from this machine; the solar frames; optionally
#   build/obj/gpu/frontend_cuda.cu.o (its SASS is dumped to $OUT)
# and carry devrun.  Results go to stdout and $OUT.
#   tools/device/frontend.sh [DIR] [BACKEND...]     (default: cuda opencl)
set -u
D=${1:-devrun}
shift || true
BACKENDS=${*:-cuda opencl}
O=${OUT:-/tmp}
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
nvidia-smi -L
"$D/bin/mpegenc" --list-backends
if [ -f "$D/obj/frontend_cuda.cu.o" ] && command -v cuobjdump >/dev/null; then
    cuobjdump --dump-sass "$D/obj/frontend_cuda.cu.o" > "$O/sass.txt" 2>&1
    echo "SASS of frontend_cuda: $O/sass.txt ($(wc -l < "$O/sass.txt") lines)"
fi
echo "== differential tests (incl. solar R=16 and R=64)"
SOLAR_DIR="$D/solar" MPE_TEST_SOLAR_R64=1 "$D/bin/test_gpu_frontend"
echo "== streams vs cpu, 4 solar frames 2048x2048"
frames=$(mktemp -d); for i in 0 1 2 3; do ln -s "$PWD/$D/solar/solar_$i.png" "$frames/f_$i.png"; done
for b in cpu $BACKENDS; do
    for f in m2v m1v; do
        "$D/bin/mpegenc" --backend $b -i "$frames/f_%d.png" -o "$O/$b.$f" --q 5 --gop 3 || echo "encode $b $f failed"
    done
done
for b in $BACKENDS; do
    for f in m2v m1v; do
        cmp "$O/cpu.$f" "$O/$b.$f" && echo "STREAMS $f: $b == cpu (byte-identical, $(stat -c %s "$O/cpu.$f") bytes)"
    done
done
rm -f "$O"/*.m1v "$O"/*.m2v
echo "== kernel benchmark"
for b in $BACKENDS; do
    "$D/bin/frontend" --backend $b --dir "$D/solar" --runs 20
done
