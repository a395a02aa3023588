#!/usr/bin/env bash
# End-to-end: a perceptual target never keeps a plainly wrong picture.  MAD
# compares contrast, not level, and BLIINDS-II never sees the source, so in
# a fade or a cut "copy the reference" or "drop the residual" can score as
# meeting the target while the picture is frozen or blank.  On a fade out,
# a fade in and a black-to-white cut on a P picture, at --target-mad 10 and
# 20 (and --target-bliinds 80 on the fade in), ffmpeg's decode must stay
# close to the source in every frame: PSNR-Y (ffmpeg's psnr filter) at
# least $FLOOR dB for the MAD targets, and the mean luma of every frame
# within the guard's tolerance (2 levels per row, so per frame) plus
# rounding; and on the fades the per-frame log must say that the mean-level
# guard acted (guard_mean, CSV and JSON Lines alike).
. "$(dirname "$0")/lib.bash"

[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }
have ffmpeg || { skip all "ffmpeg not installed"; exit 0; }
have python3 || { skip all "python3 not installed"; exit 0; }

FLOOR=30
MEAN_TOL=2.1
SIZE=176x144

ffmpeg -nostdin -v error -f lavfi -i "testsrc2=size=$SIZE:rate=25,fade=out:st=0.4:d=0.4" -frames:v 24 \
    -pix_fmt yuv420p "$TMP/fade_out.y4m"
ffmpeg -nostdin -v error -f lavfi -i "testsrc2=size=$SIZE:rate=25,fade=in:st=0.2:d=0.4" -frames:v 24 \
    -pix_fmt yuv420p "$TMP/fade_in.y4m"
# black for 5 pictures, then white: the cut falls on a P picture of the first GOP
ffmpeg -nostdin -v error -f lavfi -i "color=black:size=$SIZE:rate=25:d=0.2" \
    -f lavfi -i "color=white:size=$SIZE:rate=25:d=0.76" \
    -filter_complex "[0][1]concat=n=2:v=1" -pix_fmt yuv420p "$TMP/cut.y4m"

# min per-frame PSNR-Y of ffmpeg's decode of $1 against the source $2
min_psnr_y() {
    ffmpeg -nostdin -v error -i "$1" -i "$2" -lavfi \
        "[0:v]setpts=N/25/TB,format=yuv420p[a];[1:v]setpts=N/25/TB,format=yuv420p[b];[a][b]psnr=stats_file=$TMP/ps.txt" \
        -f null - &&
        sed -n 's/.*psnr_y:\([0-9.inf]*\).*/\1/p' "$TMP/ps.txt" | sed 's/inf/999/' | sort -g | head -n 1
}

# largest per-frame |mean Y of ffmpeg's decode of $1 - mean Y of source $2|
max_mean_diff() {
    ffmpeg -nostdin -v error -i "$1" -f rawvideo -pix_fmt yuv420p "$TMP/dec.yuv" -y &&
        python3 - "$TMP/dec.yuv" "$2" $SIZE <<'PY'
import sys
dec, src, size = sys.argv[1], sys.argv[2], sys.argv[3]
w, h = map(int, size.split("x"))
fsz = w * h * 3 // 2
d = open(dec, "rb").read()
s = open(src, "rb").read()
s = s[s.index(b"\n") + 1:]          # stream header
worst, n = 0.0, 0
while s.startswith(b"FRAME"):
    s = s[s.index(b"\n") + 1:]
    ys, yd = s[:w * h], d[n * fsz:n * fsz + w * h]
    if len(yd) != w * h:
        sys.exit("decode has fewer frames than the source")
    worst = max(worst, abs(sum(ys) - sum(yd)) / (w * h))
    s, n = s[fsz:], n + 1
print("%.3f" % worst)
PY
}

# guard_acted LOG: the pictures whose guard_mean is above 0, from a CSV or JSONL log
guard_acted() {
    python3 - "$1" <<'PY'
import csv, json, sys
p = sys.argv[1]
if p.endswith(".csv"):
    rows = list(csv.DictReader(open(p)))
else:
    rows = [json.loads(l) for l in open(p)][1:]   # the first line is the header
if not rows or "guard_mean" not in rows[0]:
    sys.exit("no guard_mean in the log")
print(sum(1 for r in rows if int(r["guard_mean"]) > 0))
PY
}

# run NAME CLIP LOG_EXT MIN_PSNR ARGS...
run() {
    local name=$1 clip=$2 ext=$3 floor=$4 out log p m g
    shift 4
    out="$TMP/$name.m2v"
    log="$TMP/$name.$ext"
    # --scenecut 0: the guard is what is under test; a detected cut would
    # make the picture an I and leave the guard nothing to do
    if ! "$MPEGENC" --quiet --scenecut 0 -i "$clip" -o "$out" --log "$log" "$@" 2>"$TMP/err"; then
        fail "$name" "encode failed: $(cat "$TMP/err")"
        return
    fi
    if [ "$floor" != - ]; then
        p=$(min_psnr_y "$out" "$clip")
        check "${name}_min_psnr_y" "lowest frame PSNR-Y '$p' dB, floor $floor" ge "${p:-0}" "$floor"
    fi
    m=$(max_mean_diff "$out" "$clip")
    check "${name}_mean_luma" "a frame's mean luma is '$m' off the source's (tolerance $MEAN_TOL)" \
        ge "$MEAN_TOL" "${m:-999}"
    # on the cut the search now stops before the steps the guard turns
    # down: white after black codes in the same bits at every coarser
    # quantiser, and a MAD search ends at the second such coding
    # (ratecontrol.c, saturated); the fades still need the guard
    case $name in cut_*) return ;; esac
    g=$(guard_acted "$log" 2>&1)
    check "${name}_log_names_guard" "guard_mean > 0 in '$g' pictures of $log" gt "${g:-0}" 0
}

for x in 10 20; do
    run fade_out_mad$x "$TMP/fade_out.y4m" csv $FLOOR --target-mad $x
    run fade_in_mad$x "$TMP/fade_in.y4m" csv $FLOOR --target-mad $x
    run cut_mad$x "$TMP/cut.y4m" jsonl $FLOOR --target-mad $x
done
# BLIINDS-II never copies, but it may drop the inter residual: a stale
# level is what the guard must stop (a lax target may still code coarsely)
run fade_in_bliinds80 "$TMP/fade_in.y4m" jsonl - --target-bliinds 80
