#!/usr/bin/env bash
# The whole encoder on the device machine (16 cores + GPU), from binaries
# built here and staged in devrun/ (bin/, lib/, solar/): the back end's
# thread scaling from a Y4M (no PNG decoding in the way), encode-only fps,
# stream identity across threads and backends, the stage table, and make
# bench (tools/bench.sh) with every backend.
#   tools/device/pipeline.sh [DIR]        (CSVs and SVGs go to $OUT/bench)
# BENCH=0 skips make bench; BENCH_ARGS adds options to it.
set -u
D=${1:-devrun}
O=${OUT:-/tmp}
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
E="$D/bin/mpegenc"
PNG="$D/solar/solar_%d.png"
Y4M=/tmp/solar.y4m

echo "== machine"
echo "cores $(nproc), $(lscpu | sed -n 's/^Model name: *//p')"
nvidia-smi -L 2>/dev/null
for t in ffmpeg ffprobe mpeg2enc python3; do printf '%s: %s\n' "$t" "$(command -v $t || echo missing)"; done
"$E" --list-backends

# the clip as Y4M, once; ffmpeg if present, else mpegenc's own q-1
# reconstruction (the same size and nearly the same pictures: for timing)
if command -v ffmpeg >/dev/null; then
    ffmpeg -v error -y -i "$PNG" -pix_fmt yuv420p -f yuv4mpegpipe "$Y4M"
else
    "$E" --quiet --q 1 -i "$PNG" -o /tmp/q1.m2v --recon "$Y4M"
fi

# stat3 FIELD ARGS...: best of 3 of a --stats field (ms per frame)
stat3() {
    local f=$1 best="" v; shift
    for _ in 1 2 3; do
        v=$("$E" --stats "$@" 2>&1 | awk -v f="$f" '$1 == f { print $2 }')
        best=$(awk -v a="$best" -v b="$v" 'BEGIN { print (a == "" || b < a) ? b : a }')
    done
    echo "$best"
}
echo "== back-end scaling: --backend cuda, --q 5, Y4M in; code stage (slices + headers), best of 3"
printf '| threads | code ms/frame | speed-up | per thread | encode ms/frame | encode-only fps |\n|---|---|---|---|---|---|\n'
c1=""
for t in 1 2 4 6 8 12 16; do
    c=$(stat3 code --backend cuda --threads $t -i "$Y4M" -o "$O/t$t.m2v" --q 5)
    enc=$(stat3 encode --backend cuda --threads $t -i "$Y4M" -o "$O/t$t.m2v" --q 5)
    [ -z "$c1" ] && c1=$c
    awk -v t=$t -v c="$c" -v c1="$c1" -v e="$enc" 'BEGIN {
        printf "| %d | %.2f | %.2fx | %.2fx | %.2f | %.0f |\n", t, c, c1 / c, c1 / c / t, e, 1000 / e }'
done
for t in 2 4 6 8 12 16; do
    cmp -s "$O/t1.m2v" "$O/t$t.m2v" && echo "threads $t: stream identical to threads 1" || echo "threads $t: STREAM DIFFERS"
done
for b in cpu opencl; do
    "$E" --backend $b --threads 16 -i "$Y4M" -o "$O/$b.m2v" --q 5 --quiet &&
        { cmp -s "$O/$b.m2v" "$O/t16.m2v" && echo "$b == cuda on the full solar clip ($(stat -c %s "$O/$b.m2v") bytes)" || echo "$b: STREAM DIFFERS from cuda"; }
done
echo "== encode-only from PNG (--backend cuda, 16 readers): stage table"
"$E" --stats --backend cuda --read-threads 16 -i "$PNG" -o "$O/x.m2v" --q 5
echo "== stage table, Y4M in"
"$E" --stats --backend cuda -i "$Y4M" -o "$O/x.m2v" --q 5
rm -f "$O"/*.m2v

if [ "${BENCH:-1}" != 0 ]; then
    echo "== make bench"
    # shellcheck disable=SC2086
    SOLAR_DIR="$D/solar" MPEGENC="$E" MPEGENC_IQA="$D/bin/mpegenc-iqa" \
        bash tools/bench.sh --plot --out "$O/bench" ${BENCH_ARGS:-}
fi
