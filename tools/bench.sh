#!/usr/bin/env bash
# make bench: encode the 2048x2048 solar clip with mpegenc and with ffmpeg's
# mpeg2video at the same quantiser, on this machine in this run, and print
# speed, size and PSNR-Y of each decode against the same YUV source.
set -eu
cd "$(dirname "$0")/.."
SOLAR_DIR=${SOLAR_DIR:-../shared/solar}
if [ ! -f "$SOLAR_DIR/solar_0.png" ]; then
    echo "SKIPPED: no solar clip in $SOLAR_DIR (set SOLAR_DIR)"; exit 0
fi
if [ -f "$SOLAR_DIR/SHA256SUMS" ]; then
    (cd "$SOLAR_DIR" && sha256sum --quiet -c SHA256SUMS) || { echo "solar clip checksum mismatch"; exit 1; }
fi
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
N=$(ls "$SOLAR_DIR"/solar_*.png | wc -l)
ffmpeg -v error -i "$SOLAR_DIR/solar_%d.png" -pix_fmt yuv420p -f yuv4mpegpipe "$T/src.y4m"

now() { date +%s.%N; }
psnr() {
    ffmpeg -hide_banner -nostats -i "$1" -i "$T/src.y4m" \
      -lavfi "[0:v]setpts=N/25/TB[a];[1:v]setpts=N/25/TB[b];[a][b]psnr" -f null - 2>&1 |
      sed -n 's/.*PSNR y:\([0-9.inf]*\).*/\1/p' | tail -n 1
}
row() { # name q file seconds
    local bytes kbps
    bytes=$(stat -c %s "$3")
    kbps=$(awk -v b="$bytes" -v n="$N" 'BEGIN { printf "%.0f", b * 8 * 25 / n / 1000 }')
    printf "%-34s %3s %10s %9s %8s %8.2f\n" "$1" "$2" "$bytes" "$kbps" "$(psnr "$3")" \
        "$(awk -v n="$N" -v s="$4" 'BEGIN { print n / s }')"
}
echo "solar clip: $N frames 2048x2048, $(nproc) cores, $(uname -m)"
printf "%-34s %3s %10s %9s %8s %8s\n" encoder q bytes kbit/s PSNR-Y fps
for q in 2 5 10; do
    t0=$(now); ./mpegenc --quiet -i "$T/src.y4m" -o "$T/m$q.m2v" --q $q; t1=$(now)
    row "mpegenc (y4m in)" $q "$T/m$q.m2v" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
    t0=$(now); ./mpegenc --quiet -i "$SOLAR_DIR/solar_%d.png" -o "$T/p$q.m2v" --q $q; t1=$(now)
    echo "$(printf '%-34s' 'mpegenc (png in, own RGB->YCbCr)') $q  $(stat -c %s "$T/p$q.m2v") bytes, $(awk -v n="$N" -v s="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" 'BEGIN { printf "%.2f", n / s }') fps"
    t0=$(now); ffmpeg -v error -y -i "$T/src.y4m" -c:v mpeg2video -q:v $q -g 12 -bf 0 -f mpeg2video "$T/f$q.m2v"; t1=$(now)
    row "ffmpeg mpeg2video -bf 0" $q "$T/f$q.m2v" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
    t0=$(now); ffmpeg -v error -y -i "$T/src.y4m" -c:v mpeg2video -q:v $q -g 12 -bf 0 -threads 1 -f mpeg2video "$T/g$q.m2v"; t1=$(now)
    row "ffmpeg mpeg2video -bf 0 -threads 1" $q "$T/g$q.m2v" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
done
