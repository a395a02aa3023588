#!/usr/bin/env bash
# End-to-end: .mpg / .mpeg outputs are program streams (MPEG-1: system
# streams) that ffprobe times right and ffmpeg and libmpeg2 play: the
# format, codec, frame count and duration ffprobe reports, a clean ffmpeg
# decode identical frame by frame to the elementary stream's, libmpeg2's
# demuxer (-s) parsing every picture, and the timing syntax checked by
# ps_check.py (SCR never after a picture's decoding time, PTS one frame
# period apart, the end code).  Other extensions are refused.
. "$(dirname "$0")/lib.bash"

[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }
if ! have ffmpeg || ! have ffprobe || ! have mpeg2dec || ! have python3; then
    skip all "ffmpeg/ffprobe/mpeg2dec/python3 not installed (make test installs them)"; exit 0
fi
CHECKER="$(dirname "$0")/ps_check.py"

# rate_clip OUT RATE FRAMES: testsrc2 at that rate
rate_clip() {
    ffmpeg -v error -y -f lavfi -i "testsrc2=size=176x144:rate=$2" -frames:v "$3" \
        -pix_fmt yuv420p -f yuv4mpegpipe "$1"
}

# case NAME EXT FORMAT RATE FRAMES [ARGS...]
ps_case() {
    local name=$1 ext=$2 fmt=$3 rate=$4 frames=$5; shift 5
    local src=$TMP/$name.y4m out=$TMP/$name.$ext es=$TMP/$name.es got want
    rate_clip "$src" "$rate" "$frames"
    if ! "$MPEGENC" --quiet --format "$fmt" -i "$src" -o "$out" "$@" 2>"$TMP/err" ||
       ! "$MPEGENC" --quiet --format "$fmt" -i "$src" -o "$es" --container es "$@" 2>>"$TMP/err"; then
        fail "$name/encode" "$(cat "$TMP/err")"; return
    fi
    got=$(ffprobe -v error -count_frames -show_entries format=format_name,duration:stream=codec_name,nb_read_frames \
        -of default=nw=1 "$out" | tr '\n' ' ')
    want_codec=$([ "$fmt" = mpeg1 ] && echo mpeg1video || echo mpeg2video)
    dur=$(printf '%s' "$got" | sed -n 's/.*duration=\([0-9.]*\).*/\1/p')
    want=$(awk -v n="$frames" -v r="$rate" 'BEGIN { split(r, a, "/"); if (a[2] == "") a[2] = 1; printf "%.6f", n * a[2] / a[1] }')
    check "$name/ffprobe" "ffprobe: $got (want format mpeg, $want_codec, $frames frames, ${want} s)" \
        sh -c "printf '%s' \"\$1\" | grep -q 'format_name=mpeg ' && printf '%s' \"\$1\" | grep -q 'codec_name=$want_codec' &&
               printf '%s' \"\$1\" | grep -q 'nb_read_frames=$frames ' &&
               awk -v a='$dur' -v b='$want' 'BEGIN { d = a - b; exit !(a != \"\" && d < 0.0015 && d > -0.0015) }'" _ "$got"
    msg=$(ffmpeg_clean_decode "$out")
    check "$name/ffmpeg-clean" "$msg" [ -z "$msg" ]
    ffmpeg -v error -i "$out" -f framemd5 "$TMP/$name.ps.md5" && ffmpeg -v error -i "$es" -f framemd5 "$TMP/$name.es.md5"
    check "$name/same-pictures-as-es" "decoded frames differ from the elementary stream's" \
        sh -c "[ \"\$(grep -v '^#' '$TMP/$name.ps.md5' | awk -F, '{print \$NF}')\" = \"\$(grep -v '^#' '$TMP/$name.es.md5' | awk -F, '{print \$NF}')\" ] &&
               [ \$(grep -vc '^#' '$TMP/$name.ps.md5') = $frames ]"
    n=$(mpeg2dec -s -v -o null "$out" 2>&1 | grep -c PICTURE)
    check "$name/libmpeg2" "libmpeg2 parsed $n pictures, expected $frames" [ "$n" = "$frames" ]
    res=$(python3 "$CHECKER" "$out")
    check "$name/timing" "$res" sh -c "printf '%s' \"\$1\" | grep -q '^ok .*pictures=$frames end=yes'" _ "$res"
}

ps_case mpeg2-25 mpg mpeg2 25 30
ps_case mpeg2-2997 mpeg mpeg2 30000/1001 30
ps_case mpeg1-25 mpg mpeg1 25 30
ps_case mpeg1-23976 mpg mpeg1 24000/1001 30
ps_case mpeg2-cbr mpg mpeg2 25 30 --bitrate 400k
# pictures far larger than a pack
ps_case mpeg2-q1 mpg mpeg2 25 6 --q 1

# a program stream to stdout when asked
n=$("$MPEGENC" --quiet -i "$TMP/mpeg2-25.y4m" -o - --container ps 2>/dev/null |
    ffprobe -v error -count_frames -show_entries stream=nb_read_frames:format=format_name -of default=nw=1 - | tr '\n' ' ')
check stdout-ps "ffprobe: $n" sh -c "printf '%s' '$n' | grep -q 'nb_read_frames=30 format_name=mpeg '"

# extensions it cannot write are refused, nothing written
mkdir -p "$TMP/refuse"
for ext in mp4 ts mkv; do
    err=$("$MPEGENC" --quiet -i "$TMP/mpeg2-25.y4m" -o "$TMP/refuse/a.$ext" 2>&1); rc=$?
    error_verdict "refuse-$ext" 2 "a\\.$ext: cannot write '\\.$ext' files" "$rc" "$err" "$(ls -A "$TMP/refuse")"
done
err=$("$MPEGENC" --quiet -i "$TMP/mpeg2-25.y4m" -o "$TMP/refuse/a.m2v" --container zip 2>&1); rc=$?
error_verdict refuse-container 2 "--container 'zip'" "$rc" "$err" "$(ls -A "$TMP/refuse")"
exit 0
