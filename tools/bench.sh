#!/usr/bin/env bash
# make bench: speed and quality of mpegenc on the 10-frame 2048x2048 solar
# clip, against ffmpeg's mpeg2video on the same frames in the same run.
#
#  1. speed at --q 5 from the PNG frames (decoding included for both), best
#     of $RUNS runs, wall clock of the whole process: mpegenc --backend cpu at
#     --threads 1 and at all cores, every GPU backend that can run here at all
#     cores, ffmpeg -c:v mpeg2video -q:v 5 at -threads 2 (the target) and at
#     all cores;
#  2. the --stats stage table of each mpegenc configuration (ms per frame:
#     read, front end, download, code, ...), and the encode-only rate
#     1000 / (ms per frame inside mpe_encode_frame), PNG decoding excluded;
#  3. size and PSNR-Y of both encoders at q 2, 5, 10 (needs ffmpeg).
# Environment: SOLAR_DIR (default ../shared/solar), MPEGENC (./mpegenc),
# RUNS (3), THREADS (all online cores), QUALITY=0 skips part 3.
set -eu
cd "$(dirname "$0")/.."
SOLAR_DIR=${SOLAR_DIR:-../shared/solar}
MPEGENC=${MPEGENC:-./mpegenc}
RUNS=${RUNS:-3}
NCORES=$(nproc)
THREADS=${THREADS:-$NCORES}
QUALITY=${QUALITY:-1}
if [ ! -f "$SOLAR_DIR/solar_0.png" ]; then
    echo "SKIPPED: no solar clip in $SOLAR_DIR (set SOLAR_DIR)"; exit 0
fi
if [ -f "$SOLAR_DIR/SHA256SUMS" ] && command -v sha256sum >/dev/null; then
    (cd "$SOLAR_DIR" && sha256sum --quiet -c SHA256SUMS) || { echo "solar clip checksum mismatch"; exit 1; }
fi
have_ffmpeg=0; command -v ffmpeg >/dev/null && have_ffmpeg=1
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
N=$(ls "$SOLAR_DIR"/solar_*.png | wc -l)
PNG="$SOLAR_DIR/solar_%d.png"

now() { date +%s.%N; }
# best RUNS wall seconds of a command
best_time() {
    local best="" t0 t1 dt
    for _ in $(seq "$RUNS"); do
        t0=$(now); "$@" >/dev/null 2>&1 || { echo "FAILED: $*" >&2; return 1; }; t1=$(now)
        dt=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
        best=$(awk -v a="$best" -v b="$dt" 'BEGIN { print (a == "" || b < a) ? b : a }')
    done
    echo "$best"
}
fps() { awk -v n="$N" -v s="$1" 'BEGIN { printf "%.2f", n / s }'; }
speed_row() { # label seconds
    printf "  %-46s %7s fps %8.3f s\n" "$1" "$(fps "$2")" "$2"
}

cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')
echo "solar clip: $N frames 2048x2048 from PNG, $NCORES cores ($cpu), $(uname -m)"
echo "mpegenc $("$MPEGENC" --version | awk '{ print $2 }'); backends: $("$MPEGENC" --list-backends | awk '$2 ~ /^available/ { printf "%s ", $1 }')"
[ $have_ffmpeg = 1 ] && echo "$(ffmpeg -version | head -1 | cut -d' ' -f1-3)"

# configurations: "label|args"
configs=("cpu --threads 1|--backend cpu --threads 1")
[ "$THREADS" != 1 ] && configs+=("cpu --threads $THREADS|--backend cpu --threads $THREADS")
for b in $("$MPEGENC" --list-backends | awk '$2 ~ /^available/ && $0 !~ /not a GPU/ { print $1 }' | grep -v '^cpu$'); do
    configs+=("$b --threads $THREADS|--backend $b --threads $THREADS")
done

echo
echo "== speed at q 5, PNG in (decode included), best of $RUNS, whole process"
for c in "${configs[@]}"; do
    label=${c%%|*}; args=${c#*|}
    # shellcheck disable=SC2086
    s=$(best_time "$MPEGENC" --quiet $args -i "$PNG" -o "$T/m.m2v" --q 5)
    speed_row "mpegenc $label" "$s"
done
if [ $have_ffmpeg = 1 ]; then
    for th in 2 "$THREADS"; do
        s=$(best_time ffmpeg -v error -y -i "$PNG" -c:v mpeg2video -q:v 5 -threads "$th" -f mpeg2video "$T/f.m2v")
        speed_row "ffmpeg mpeg2video -q:v 5 -threads $th" "$s"
        [ "$THREADS" = 2 ] && break
    done
    s=$(best_time ffmpeg -v error -y -i "$PNG" -f null -)
    speed_row "(ffmpeg PNG decode alone, for scale)" "$s"
fi

echo
echo "== stages at q 5 (mpegenc --stats, ms per frame; encode-only = 1000 / encode)"
for c in "${configs[@]}"; do
    label=${c%%|*}; args=${c#*|}
    echo "-- $label"
    # shellcheck disable=SC2086
    "$MPEGENC" --stats $args -i "$PNG" -o "$T/m.m2v" --q 5 2>&1 | sed 's/^mpegenc: /  /' | tee "$T/stats"
    enc=$(awk '$1 == "encode" { print $2 }' "$T/stats")
    awk -v e="$enc" 'BEGIN { if (e > 0) printf "  encode-only: %.1f fps (PNG decode excluded)\n", 1000 / e }'
done

if [ $have_ffmpeg = 1 ] && [ "$QUALITY" = 1 ]; then
    ffmpeg -v error -i "$PNG" -pix_fmt yuv420p -f yuv4mpegpipe "$T/src.y4m"
    psnr() {
        ffmpeg -hide_banner -nostats -i "$1" -i "$T/src.y4m" \
          -lavfi "[0:v]setpts=N/25/TB[a];[1:v]setpts=N/25/TB[b];[a][b]psnr" -f null - 2>&1 |
          sed -n 's/.*PSNR y:\([0-9.inf]*\).*/\1/p' | tail -n 1
    }
    row() { # name q file
        local bytes
        bytes=$(stat -c %s "$3")
        printf "  %-34s %3s %10s %9s %8s\n" "$1" "$2" "$bytes" \
            "$(awk -v b="$bytes" -v n="$N" 'BEGIN { printf "%.0f", b * 8 * 25 / n / 1000 }')" "$(psnr "$3")"
    }
    echo
    echo "== quality (PSNR-Y against the same 4:2:0 source), kbit/s at 25 fps"
    printf "  %-34s %3s %10s %9s %8s\n" encoder q bytes kbit/s PSNR-Y
    for q in 2 5 10; do
        "$MPEGENC" --quiet --threads "$THREADS" -i "$T/src.y4m" -o "$T/m$q.m2v" --q $q
        row "mpegenc (y4m in)" $q "$T/m$q.m2v"
        "$MPEGENC" --quiet --threads "$THREADS" -i "$PNG" -o "$T/p$q.m2v" --q $q
        row "mpegenc (png in, own RGB->YCbCr)" $q "$T/p$q.m2v"
        ffmpeg -v error -y -i "$T/src.y4m" -c:v mpeg2video -q:v $q -g 12 -bf 0 -f mpeg2video "$T/f$q.m2v"
        row "ffmpeg mpeg2video -bf 0" $q "$T/f$q.m2v"
    done
fi
