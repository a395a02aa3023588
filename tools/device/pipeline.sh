#!/usr/bin/env bash
# The whole encoder on the device machine (16 cores + GPU), from binaries
# built here and staged in devrun/ (see frontend.sh): make bench with every
# backend, the back end's thread scaling, and cuda-vs-cpu stream identity on
# the full solar clip.   tools/device/pipeline.sh [DIR]
set -u
D=${1:-devrun}
O=${OUT:-/tmp}
export LD_LIBRARY_PATH="$PWD/$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
lib=$(ls /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 2>/dev/null | head -1)
if [ -n "$lib" ]; then mkdir -p /tmp/icd; echo "$lib" > /tmp/icd/nvidia.icd; export OCL_ICD_VENDORS=/tmp/icd; fi
E="$D/bin/mpegenc"
PNG="$D/solar/solar_%d.png"
echo "== make bench (THREADS=$(nproc), QUALITY=0)"
THREADS=$(nproc) QUALITY=0 SOLAR_DIR="$D/solar" MPEGENC="$E" bash tools/bench.sh
echo "== back-end scaling: --backend cuda, --q 5, PNG readers 16 (code = slices + headers, ms/frame)"
for t in 1 2 4 8 16; do
    "$E" --stats --backend cuda --threads $t --read-threads 16 -i "$PNG" -o "$O/t$t.m2v" --q 5 2>&1 |
        awk -v t=$t '/^mpegenc: [0-9]+ frames/ { fps = $0 } / code / { code = $2 } / encode / { enc = $2 }
                     END { printf "threads %2d: code %7.2f ms/frame, encode %7.2f ms/frame (%.0f fps encode-only)\n", t, code, enc, 1000 / enc }'
done
for t in 2 4 8 16; do cmp -s "$O/t1.m2v" "$O/t$t.m2v" && echo "threads $t: stream identical to threads 1" || echo "threads $t: STREAM DIFFERS"; done
"$E" --backend cpu --threads 16 -i "$PNG" -o "$O/cpu.m2v" --q 5 --quiet
cmp "$O/cpu.m2v" "$O/t16.m2v" && echo "cuda --threads 16 == cpu --threads 16 on the full solar clip ($(stat -c %s "$O/cpu.m2v") bytes)"
echo "== stage table, --backend cuda --threads 16"
"$E" --stats --backend cuda --threads 16 --read-threads 16 -i "$PNG" -o "$O/x.m2v" --q 5
rm -f "$O"/*.m2v
