#!/usr/bin/env bash
# Start-up and steady state on the device machine (issue 20), from binaries
# built here and staged in devrun/ (bin/, lib/, solar/), like pipeline.sh:
#  1. 1-frame runs, whole process, best of 5: cpu, cuda, opencl (the GPU
#     backends open on a thread while the cpu front end takes the first
#     frames; -v says how long the open took and how many frames it covered)
#  2. page faults per frame: 10 and 40 frames of the ping-pong clip (the
#     difference / 30 is the steady state's faults per frame)
#  3. 40-frame runs, wall, best of 3, and the streams of every backend cmp'd
#  4. PNG in: --read-threads auto (as many as --threads) against 4, cuda
#   tools/device/startup.sh [DIR]     BASE=DIR2 also times DIR2/bin/mpegenc;
#   GPUS="cuda" leaves opencl out (default "cuda opencl")
set -u
D=${1:-devrun}
O=${OUT:-/tmp}
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
E="$D/bin/mpegenc"
GPUS=${GPUS:-cuda opencl}
BINS="$E"
[ -n "${BASE:-}" ] && BINS="$BINS ${BASE}/bin/mpegenc"
PNG="$D/solar/solar_%d.png"
FF=$(command -v ffmpeg || echo "$D/bin/ffmpeg-static")

echo "== machine"
echo "cores $(nproc), $(lscpu | sed -n 's/^Model name: *//p')"
nvidia-smi -L 2>/dev/null
git log -1 --oneline 2>/dev/null
"$E" --list-backends

# the clips: 1 frame, and 40 frames ping-ponged 0..9, 9..0 twice
"$FF" -v error -y -i "$PNG" -pix_fmt yuv420p -f yuv4mpegpipe /tmp/s10.y4m || exit 1
python3 - <<'EOF' || exit 1
d = open('/tmp/s10.y4m', 'rb').read()
h = d.index(b'\n') + 1
fs = 2048 * 2048 * 3 // 2 + 6
frames = [d[h + i * fs:h + (i + 1) * fs] for i in range(10)]
open('/tmp/s1.y4m', 'wb').write(d[:h] + frames[0])
order = (list(range(10)) + list(range(9, -1, -1))) * 2
open('/tmp/s40.y4m', 'wb').write(d[:h] + b''.join(frames[i] for i in order))
EOF

# best BIN N ARGS...: the best wall seconds of N whole runs
best() {
    local b=$1 n=$2 t best=""; shift 2
    for _ in $(seq "$n"); do
        t=$( { /usr/bin/time -f %e "$b" -y --quiet "$@" 2>&1 >/dev/null; } | tail -1)
        best=$(awk -v a="$best" -v b="$t" 'BEGIN { print (a == "" || b < a) ? b : a }')
    done
    echo "$best"
}
# faults BIN ARGS...: minor page faults of one run
faults() {
    local b=$1; shift
    python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt)' "$b" -y --quiet "$@"
}

for b in $BINS; do
    echo "== $b: 1 frame, whole process, best of 5 (s)"
    for be in cpu $GPUS; do
        echo "$be $(best "$b" 5 --backend $be -i /tmp/s1.y4m -o "$O/one_$be.m2v")"
    done
    for be in $GPUS; do
        "$b" -y -v --backend $be -i /tmp/s40.y4m -o "$O/v_$be.m2v" 2>&1 | grep "front end: '" || true
    done
    echo "== $b: minor page faults, cpu and cuda, --threads 16 and 1"
    for be in cpu ${GPUS%% *}; do
        for t in 16 1; do
            f10=$(faults "$b" --backend $be --threads $t --frames 10 -i /tmp/s40.y4m -o "$O/f.m2v")
            f40=$(faults "$b" --backend $be --threads $t -i /tmp/s40.y4m -o "$O/f.m2v")
            awk -v be=$be -v t=$t -v a="$f10" -v b="$f40" 'BEGIN {
                printf "%s --threads %d: %d faults (10 frames), %d (40): %.1f per frame after frame 10\n", be, t, a, b, (b - a) / 30 }'
        done
    done
    echo "== $b: 40 frames, best of 3 (s), and the streams"
    for be in cpu $GPUS; do
        echo "$be $(best "$b" 3 --backend $be -i /tmp/s40.y4m -o "$O/s40_$be.m2v")"
    done
    for be in $GPUS; do
        cmp -s "$O/s40_cpu.m2v" "$O/s40_$be.m2v" && echo "$be == cpu" || echo "$be: STREAM DIFFERS from cpu"
    done
    g=${GPUS%% *}
    cmp -s "$O/one_cpu.m2v" "$O/one_$g.m2v" && echo "1 frame: $g == cpu" || echo "1 frame: $g STREAM DIFFERS"
    echo "== $b: PNG in (10 frames), $g, best of 3 (s): read threads auto vs 4"
    echo "auto $(best "$b" 3 --backend $g -i "$PNG" -o "$O/p.m2v")"
    echo "4    $(best "$b" 3 --backend $g --read-threads 4 -i "$PNG" -o "$O/p.m2v")"
    "$b" --stats --backend $g -i "$PNG" -o "$O/p.m2v" -y 2>&1 | grep -E 'reader threads|read |wall'
done
rm -f "$O"/*.m2v
