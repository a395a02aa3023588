#!/usr/bin/env bash
# Issue 23: mpegenc-mpi with one GPU per rank on a machine of several GPUs,
# from binaries staged in DIR as for tools/device/mpi.sh (bin/mpegenc,
# bin/mpegenc-mpi, lib/, solar/solar_0..3.png, mpi/ from `mpi.sh --stage`,
# bin/ffmpeg-static).
#   tools/device/multigpu.sh [DIR]
# For G = 1 .. the GPUs seen (powers of two): `mpirun -np G` with
# --backend cuda (local rank -> device), --threads cores/G, against the
# single process on one GPU with every core: fps, speed-up, efficiency per
# added GPU (fps_G / (G fps_1)), every stream cmp'd against the single
# process.  Modes: --q 5, --iqa all (MAD and BLIINDS-II on the rank's GPU),
# --target-mad 9.  Then a longer clip (LONG frames, default 2000: the
# 400-frame clip five times) in --q mode.
# FRAMES (400), LONG (2000), Q (5) may be set.
set -u
D=${1:-devrun}
O=${OUT:-/tmp}
T=/tmp/mg
FRAMES=${FRAMES:-400}
LONG=${LONG:-2000}
Q=${Q:-5}
E="$D/bin/mpegenc"
M="$D/bin/mpegenc-mpi"
. "$(dirname "$0")/mpi_env.sh"
CORES=$(nproc)
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)

echo "== machine"
echo "cores $CORES, $(lscpu | sed -n 's/^Model name: *//p')"
nvidia-smi -L
git log -1 --oneline 2>/dev/null
[ "$NGPU" -ge 1 ] || { echo "no GPU"; exit 1; }

mkdir -p "$T"
Y4M="$T/clip.y4m"
pingpong_clip "$Y4M" "$FRAMES"
echo "clip: $FRAMES frames, $(($(stat -c %s "$Y4M") / 1000000)) MB"

# wall seconds of one run
wall() {
    local s e
    s=$(date +%s.%N); "$@" >/dev/null 2>"$T/err" || { echo fail; tail -n 3 "$T/err" >&2; return; }
    e=$(date +%s.%N)
    awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f", e - s }'
}
same() { cmp -s "$1" "$2" && echo identical || echo DIFFERS; }

# one table: MODE NAME, FRAMES, the clip, then the options
table() {
    local name=$1 frames=$2 clip=$3; shift 3
    local t1="" t0 g t
    echo "== $name ($frames frames)"
    t0=$(wall "$E" --backend cuda --device 0 --threads "$CORES" -y -i "$clip" -o "$T/ref.m2v" "$@")
    echo "single process, 1 GPU, --threads $CORES: $t0 s, $(awk -v t="$t0" -v n="$frames" 'BEGIN { printf "%.1f", n / t }') fps"
    printf '| GPUs (ranks) | threads each | s | fps | speed-up | efficiency per GPU | vs single process | stream |\n'
    printf '|---|---|---|---|---|---|---|---|\n'
    g=1
    while [ "$g" -le "$NGPU" ]; do
        t=$(wall "${MPIRUN[@]}" -np "$g" "$M" --backend cuda --threads $((CORES / g)) -y -i "$clip" \
                 -o "$T/g$g.m2v" "$@")
        if [ "$t" = fail ]; then printf '| %d | %d | failed |||||\n' "$g" $((CORES / g)); g=$((g * 2)); continue; fi
        [ -z "$t1" ] && t1=$t
        awk -v g="$g" -v c=$((CORES / g)) -v t="$t" -v t1="$t1" -v n="$frames" \
            -v r="$t0" -v s="$(same "$T/ref.m2v" "$T/g$g.m2v")" 'BEGIN {
            printf "| %d | %d | %.2f | %.1f | %.2fx | %.2f | %.2fx | %s |\n", g, c, t, n / t, t1 / t, t1 / t / g, r / t, s }'
        g=$((g * 2))
    done
}

table "--q $Q" "$FRAMES" "$Y4M" --q "$Q"
table "--q $Q --iqa all (MAD, BLIINDS-II on the rank's GPU)" "$FRAMES" "$Y4M" --q "$Q" --iqa all \
    --iqa-backend cuda
table "--target-mad 9" "$FRAMES" "$Y4M" --target-mad 9 --iqa-backend cuda

# the long clip: the 400 frames again and again (frames only, one header)
if [ "$LONG" -gt "$FRAMES" ]; then
    L="$T/long.y4m"
    hl=$(head -n 1 "$Y4M" | wc -c)
    { head -n 1 "$Y4M"; for _ in $(seq $((LONG / FRAMES))); do tail -c +$((hl + 1)) "$Y4M"; done; } > "$L"
    table "--q $Q, long clip" $(((LONG / FRAMES) * FRAMES)) "$L" --q "$Q"
    rm -f "$L"
fi
echo "== --stats of $NGPU GPU ranks"
"${MPIRUN[@]}" -np "$NGPU" "$M" --backend cuda --threads $((CORES / NGPU)) -y -i "$Y4M" -o "$T/s.m2v" --q "$Q" \
    --stats 2>&1 | tail -n 12
nvidia-smi --query-gpu=index,pci.bus_id,utilization.gpu --format=csv,noheader
rm -rf "$T"
