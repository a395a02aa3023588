#!/usr/bin/env bash
# slow: ~12 s on 2 cores; a matrix of VBV encodes judged by vbv_check.py
# End-to-end: the VBV of rate-controlled streams, judged by the independent
# model in vbv_check.py (13818-2 Annex C, 11172-2 Annex C) and by ffmpeg.
# A matrix of content (testsrc2, flat grey, noise, a cut) x constant rate
# (20k .. 8M) x MPEG-1/MPEG-2: every stream the encoder finishes (exit 0)
# must pass the VBV check and decode cleanly; a rate the content cannot be
# coded at must end with exit 1, one line saying so, and no output.  Rates
# from 300k up must always succeed.  Then a quality target under a
# --bitrate cap, and the rate/buffer limits of MPEG-1's bit_rate field and
# of the MPEG-2 levels.
. "$(dirname "$0")/lib.bash"

if ! have ffmpeg || ! have ffprobe || ! have python3; then
    skip all "ffmpeg/ffprobe/python3 not installed"
    exit 0
fi
[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }
VBV_CHECK="$ROOT/tests/e2e/vbv_check.py"

# 25 frames: the second GOP's I picture (12) and the third's (24) are where
# a buffer the P pictures have not refilled shows
N=25
make_y4m "$TMP/testsrc2.y4m" 352x288 $N
ffmpeg -v error -y -f lavfi -i "color=c=gray:size=352x288:rate=25" -frames:v $N -pix_fmt yuv420p \
    -f yuv4mpegpipe "$TMP/flat.y4m"
ffmpeg -v error -y -f lavfi -i "nullsrc=size=352x288:rate=25,geq=lum='random(1)*255':cb=128:cr=128" \
    -frames:v $N -pix_fmt yuv420p -f yuv4mpegpipe "$TMP/noise.y4m"
# a cut in the middle of the first GOP: a P picture with nothing to predict from
ffmpeg -v error -y -f lavfi -i "testsrc2=size=352x288:rate=25" -f lavfi -i "mandelbrot=size=352x288:rate=25" \
    -filter_complex "[0]trim=end_frame=7[a];[1]trim=end_frame=$((N - 7)),setpts=PTS-STARTPTS[b];[a][b]concat" \
    -frames:v $N -pix_fmt yuv420p -f yuv4mpegpipe "$TMP/cut.y4m"

n_out=0
note() { [ -z "${VERBOSE:-}" ] || echo "     $*" >&2; }   # VERBOSE=1: the numbers
# vbv_case NAME CLIP EXT MUST_SUCCEED ARGS...: the stream is $TMP/out$n_out.EXT
vbv_case() {
    local name=$1 clip=$2 ext=$3 must=$4; shift 4
    local out="$TMP/out$((n_out += 1)).$ext" rc err v d
    err=$("$MPEGENC" --quiet -i "$clip" -o "$out" "$@" 2>&1)
    rc=$?
    if [ $rc = 0 ]; then
        v=$(python3 "$VBV_CHECK" "$out" 2>&1)
        check "${name}_vbv" "$v" [ "${v%%:*}" = ok ]
        if d=$(ffmpeg_clean_decode "$out" </dev/null); then pass "${name}_ffmpeg_clean"; else fail "${name}_ffmpeg_clean" "$d"; fi
        note "$name: $v"
    elif [ "$must" = 1 ]; then
        fail "${name}_vbv" "exit $rc: $err"
    else
        error_verdict "${name}_too_low" 1 "rate is too low for this content" $rc "$err" \
            "$(ls "$out" 2>/dev/null)"
        note "$name: $err"
    fi
}

for content in testsrc2 flat noise cut; do
    for rate in 20k 50k 300k 1M 8M; do
        for ext in m1v m2v; do
            # noise: an I picture is 105 kbit (MPEG-2) or 192 kbit (MPEG-1) at
            # the coarsest quantiser, more than 300k's 0.73 s of vbv_delay holds
            must=1
            case $content,$rate in *,20k | *,50k | noise,300k) must=0 ;; esac
            vbv_case "${content}_${rate}_$ext" "$TMP/$content.y4m" $ext $must --bitrate $rate
        done
    done
done

# --- a quality target under a cap: the first two GOPs (24 pictures) stay
# within the cap (a GOP's share carries over; the 25th picture starts a GOP)
gops_rate() { # STREAM PICTURES -> bit/s over the first PICTURES pictures at 25 fps
    python3 - "$1" "$2" "$ROOT/tests/e2e" <<'PY'
import sys
sys.path.insert(0, sys.argv[3])
import vbv_check
data = open(sys.argv[1], "rb").read()
seq, pics = vbv_check.parse(data)
n = int(sys.argv[2])
print("%.0f" % ((pics[n][0] - pics[0][0]) * 8 * 25.0 / n))
PY
}
for ext in m1v m2v; do
    vbv_case "psnr_target_cap_300k_$ext" "$TMP/testsrc2.y4m" $ext 1 --target-psnr 35 --bitrate 300k
    out="$TMP/out$n_out.$ext"
    r=$(gops_rate "$out" 24)
    check "psnr_target_cap_300k_${ext}_rate" "$r bit/s over two GOPs under a 300k cap" \
        awk -v r="$r" 'BEGIN { exit !(r > 0 && r <= 300000) }'
    note "psnr_target_cap_300k_$ext: $r bit/s over the first 24 pictures"
done

# --- MPEG-1 bit_rate: 0x3FFFF means variable rate, and the field rounds up
"$MPEGENC" --quiet -i "$TMP/testsrc2.y4m" -o "$TMP/fast.m1v" --bitrate 104857k >/dev/null 2>"$TMP/err"
error_verdict mpeg1_bitrate_marker_refused 1 "MPEG-1 cannot signal a bit rate" $? "$(cat "$TMP/err")" \
    "$(ls "$TMP/fast.m1v" 2>/dev/null)"

# --- MPEG-2 --vbv-size above Main@Main's 1835 kbit: the next level that holds
# it (Main@High-1440, level 6) and the buffer as asked; above Main@High, refused
vbv_case vbv_size_1900_m2v "$TMP/testsrc2.y4m" m2v 1 --bitrate 1M --vbv-size 1900
level=$(ffprobe -v error -select_streams v:0 -show_entries stream=level -of default=nw=1:nk=1 \
    "$TMP/out$n_out.m2v" </dev/null | head -n 1)
size=$(python3 "$VBV_CHECK" "$TMP/out$n_out.m2v" | sed -n 's/.*vbv \([0-9]*\) bits.*/\1/p')
check vbv_size_1900_level "level $level (want 6, High-1440), vbv $size bits (want 1884160)" \
    [ "$level" = 6 -a "$size" = 1884160 ]
"$MPEGENC" --quiet -i "$TMP/testsrc2.y4m" -o "$TMP/huge.m2v" --bitrate 1M --vbv-size 12000 >/dev/null 2>"$TMP/err"
error_verdict vbv_size_above_main_high_refused 1 "more than MPEG-2 Main@High allows" $? "$(cat "$TMP/err")" \
    "$(ls "$TMP/huge.m2v" 2>/dev/null)"
