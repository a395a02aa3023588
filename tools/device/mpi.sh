#!/usr/bin/env bash
# mpegenc-mpi scaling on the device machine (16 cores + GPU), from binaries
# built here and staged in devrun/ (bin/mpegenc, bin/mpegenc-mpi, lib/ as
# for pipeline.sh, solar/ with solar_0..3.png only, bin/ffmpeg-static or an
# ffmpeg on PATH, else mpegenc's --q 1 reconstruction makes the Y4M), e.g.
#   make mpegenc mpegenc-mpi && mkdir -p devrun/bin devrun/solar &&
#   cp mpegenc mpegenc-mpi ../shared/bin/ffmpeg-static devrun/bin/ &&
#   cp ../shared/solar/solar_[0-3].png devrun/solar/ && tools/device/mpi.sh --stage
# (about 50 MB with the staged Open MPI: within run's 64 MiB carry), then on
# the device: tools/device/mpi.sh devrun
#   tools/device/mpi.sh [DIR]           run (DIR: devrun)
#   tools/device/mpi.sh --stage [DIR]   here, before: copy Open MPI's runtime
#                                       (mpirun, orted, plugins, the libraries
#                                       they load) into DIR/mpi, for a device
#                                       machine without Open MPI (~25 MB)
# The clip: 400 frames of 2048x2048, solar frames 0-3 ping-ponged
# 0,1,2,3,3,2,1,0 fifty times, as Y4M (docs/PERF.md's issue-20 clip).  Then:
#   - the single process: mpegenc --threads 16, cpu and cuda (the reference
#     streams and fps);
#   - N = 1, 2, 4, 8, 16 cpu ranks of one thread each: fps, speed-up over
#     N = 1, efficiency per rank (fps_N / (N * fps_1)), --stats' busy share;
#   - N = 1, 2, 4, 8, 16 cpu ranks sharing the 16 cores (--threads 16/N):
#     fps against the single process;
#   - N = 1, 2, 4 ranks on the GPU(s) (--backend cuda, local rank -> device
#     modulo the devices), --threads 16/N;
#   - every stream cmp'd against the single-process stream of its mode.
# Q (default 5), CHUNK (--chunk-gops, default 2: 17 chunks), FRAMES (400)
# and RANKS ("1 2 4 8 16") may be set.
set -u
if [ "${1:-}" = --stage ]; then
    D=${2:-devrun}/mpi
    mkdir -p "$D/usr/bin" "$D/usr/lib/x86_64-linux-gnu" "$D/usr/share" "$D/lib"
    cp -L /usr/bin/orterun "$D/usr/bin/mpirun"
    cp -L /usr/bin/orted "$D/usr/bin/orted"
    cp -rL /usr/lib/x86_64-linux-gnu/openmpi "$D/usr/lib/x86_64-linux-gnu/"
    rm -rf "$D/usr/lib/x86_64-linux-gnu/openmpi/include"
    cp -rL /usr/share/openmpi "$D/usr/share/"
    # every library mpirun, orted and the plugins load (mpegenc-mpi's own come
    # from devrun/lib as mpegenc's do), but the C and C++ runtimes and OpenCL
    for f in "$D"/usr/bin/* "$D"/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so; do
        ldd "$f" 2>/dev/null | awk '$3 ~ /^\// { print $3 }'
    done | sort -u |
        grep -vE '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libstdc\+\+|libgcc_s|libOpenCL)\.so' |
        while read -r lib; do cp -L "$lib" "$D/lib/"; done
    du -sh "$D"
    exit 0
fi
D=${1:-devrun}
O=${OUT:-/tmp}
Q=${Q:-5}
CHUNK=${CHUNK:-2}
FRAMES=${FRAMES:-400}
RANKS=${RANKS:-1 2 4 8 16}
E="$D/bin/mpegenc"
M="$D/bin/mpegenc-mpi"
. "$(dirname "$0")/mpi_env.sh"

echo "== machine"
echo "cores $(nproc), $(lscpu | sed -n 's/^Model name: *//p')"
nvidia-smi -L 2>/dev/null
mpirun --version 2>&1 | head -n 1
git log -1 --oneline 2>/dev/null

# the clip (2.5 GB at 400 frames) stays out of $OUT, whose files come back
Y4M="${TMPDIR:-/tmp}/mpi_pingpong.y4m"
pingpong_clip "$Y4M" "$FRAMES"
echo "clip: $Y4M, $(($(stat -c %s "$Y4M") / 1000000)) MB"

# wall SECONDS of a command, best of 2
wall2() {
    local best="" t s e
    for _ in 1 2; do
        s=$(date +%s.%N); "$@" >/dev/null 2>&1 || { echo fail; return; }; e=$(date +%s.%N)
        t=$(awk -v s="$s" -v e="$e" 'BEGIN { print e - s }')
        best=$(awk -v a="$best" -v b="$t" 'BEGIN { print (a == "" || b < a) ? b : a }')
    done
    echo "$best"
}
fps() { awk -v t="$1" -v n="$FRAMES" 'BEGIN { if (t == "fail") print "-"; else printf "%.1f", n / t }'; }
same() { cmp -s "$1" "$2" && echo identical || echo "DIFFERS"; }
COMMON=(--q "$Q" --chunk-gops "$CHUNK" -y -i "$Y4M")

echo "== single process (reference streams)"
for b in cpu cuda; do
    t=$(wall2 "$E" --backend $b --threads 16 "${COMMON[@]}" -o "$O/ref_$b.m2v" --quiet)
    echo "mpegenc --backend $b --threads 16: $t s, $(fps "$t") fps"
done
same "$O/ref_cpu.m2v" "$O/ref_cuda.m2v" | sed 's/^/cpu vs cuda stream: /'

echo "== cpu ranks, one thread each (whole process wall with mpirun start-up, best of 2)"
printf '| ranks | s | fps | speed-up | efficiency per rank | busy share | stream |\n|---|---|---|---|---|---|---|\n'
f1=""
for np in $RANKS; do
    t=$(wall2 "${MPIRUN[@]}" -np $np "$M" --backend cpu --threads 1 "${COMMON[@]}" -o "$O/r$np.m2v" --quiet)
    busy=$("${MPIRUN[@]}" -np $np "$M" --backend cpu --threads 1 "${COMMON[@]}" -o "$O/r$np.m2v" --stats 2>&1 |
           sed -n 's/.*efficiency \([0-9.]*%\).*/\1/p')
    [ -z "$f1" ] && f1=$(fps "$t")
    awk -v n="$FRAMES" -v np=$np -v t="$t" -v f1="$f1" -v b="$busy" -v s="$(same "$O/ref_cpu.m2v" "$O/r$np.m2v")" 'BEGIN {
        f = n / t; printf "| %d | %.2f | %.1f | %.2fx | %.0f %% | %s | %s |\n", np, t, f, f / f1, 100 * f / (np * f1), b, s }'
done

echo "== cpu ranks sharing the 16 cores (--threads 16/N)"
printf '| ranks | threads each | s | fps | vs single process | stream |\n|---|---|---|---|---|---|\n'
tref=$(wall2 "$E" --backend cpu --threads 16 "${COMMON[@]}" -o "$O/ref_cpu2.m2v" --quiet)
for np in $RANKS; do
    t=$(wall2 "${MPIRUN[@]}" -np $np "$M" --backend cpu --threads $((16 / np)) "${COMMON[@]}" -o "$O/s$np.m2v" --quiet)
    awk -v n="$FRAMES" -v np=$np -v t="$t" -v r="$tref" -v s="$(same "$O/ref_cpu.m2v" "$O/s$np.m2v")" 'BEGIN {
        printf "| %d | %d | %.2f | %.1f | %.2fx | %s |\n", np, 16 / np, t, n / t, r / t, s }'
done

echo "== GPU ranks (--backend cuda; local rank -> device modulo $(nvidia-smi -L 2>/dev/null | wc -l) GPU(s))"
printf '| ranks | threads each | s | fps | vs single process cuda | stream |\n|---|---|---|---|---|---|\n'
tref=$(wall2 "$E" --backend cuda --threads 16 "${COMMON[@]}" -o "$O/ref_cuda2.m2v" --quiet)
for np in $RANKS; do
    t=$(wall2 "${MPIRUN[@]}" -np $np "$M" --backend cuda --threads $((16 / np)) "${COMMON[@]}" -o "$O/g$np.m2v" --quiet)
    awk -v n="$FRAMES" -v np=$np -v t="$t" -v r="$tref" -v s="$(same "$O/ref_cuda.m2v" "$O/g$np.m2v")" 'BEGIN {
        if (t == "fail") { printf "| %d | %d | failed | | | |\n", np, 16 / np; exit }
        printf "| %d | %d | %.2f | %.1f | %.2fx | %s |\n", np, 16 / np, t, n / t, r / t, s }'
done
echo "== --stats of 16 cpu ranks"
"${MPIRUN[@]}" -np 16 "$M" --backend cpu --threads 1 "${COMMON[@]}" -o "$O/r16.m2v" --stats 2>&1 | tail -n 20
rm -rf "$O"/*.m2v
