# lib.bash — helpers for the end-to-end test scripts (sourced, not run).
# Each check prints one PASS/FAIL/SKIP line that tests/run.sh tallies.
set -u
E2E_NAME=$(basename "$0" .sh)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MPEGENC="${MPEGENC:-$ROOT/mpegenc}"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

pass() { echo "PASS $E2E_NAME/$1"; }
fail() { echo "FAIL $E2E_NAME/$1: $2"; }
skip() { echo "SKIP $E2E_NAME/$1: $2"; }
# check NAME DETAIL COMMAND...: PASS if the command succeeds
check() {
    local name=$1 detail=$2; shift 2
    if "$@"; then pass "$name"; else fail "$name" "$detail"; fi
}

have() { command -v "$1" >/dev/null 2>&1; }

# ffmpeg never reads the terminal: without -nostdin it takes whatever sits on
# the test's stdin as interactive commands ("Enter command: ...") and prints
# them, which fails the clean-decode checks at random
ffmpeg() { command ffmpeg -nostdin "$@"; }

# error_verdict NAME WANT_STATUS PATTERN STATUS STDERR LEFT: PASS if the
# run ended with WANT_STATUS and one stderr line matching PATTERN, and left
# no file behind (LEFT: what the output directory still holds)
error_verdict() {
    local name=$1 want=$2 pat=$3 rc=$4 err=$5 left=$6 lines
    lines=$(printf '%s\n' "$err" | grep -c .)
    if [ "$rc" != "$want" ]; then
        fail "$name" "exit status $rc, expected $want; stderr: $err"
    elif ! printf '%s' "$err" | grep -qE -- "$pat"; then
        fail "$name" "stderr '$err' does not match /$pat/"
    elif [ "$lines" -ne 1 ]; then
        fail "$name" "expected one line on stderr, got $lines: $err"
    elif [ -n "$left" ]; then
        fail "$name" "left files behind: $left"
    else
        pass "$name"
    fi
}

# make_y4m OUT SIZE FRAMES [SOURCE]: a synthetic clip from ffmpeg's lavfi
make_y4m() {
    ffmpeg -v error -y -f lavfi -i "${4:-testsrc2}=size=$2:rate=25" -frames:v "$3" \
        -pix_fmt yuv420p -f yuv4mpegpipe "$1"
}

# PSNR-Y of clip A against clip B, frames paired by index (DESIGN.md §6:
# reset timestamps, or the psnr filter pairs the wrong frames; a 1/25 time
# base with pts = N pairs them exactly, where setpts=N/25/TB in the input's
# own time base could round two frames onto one timestamp).
psnr_y() {
    ffmpeg -hide_banner -nostats -i "$1" -i "$2" \
        -lavfi "[0:v]settb=1/25,setpts=N,format=yuv420p[a];[1:v]settb=1/25,setpts=N,format=yuv420p[b];[a][b]psnr" \
        -f null - 2>&1 | sed -n 's/.*PSNR y:\([0-9.inf]*\).*/\1/p' | tail -n 1
}

# frames ffprobe counts in a stream, and its codec and size: "codec WxH N"
probe() {
    ffprobe -v error -count_frames -select_streams v:0 \
        -show_entries stream=codec_name,width,height,nb_read_frames -of csv=p=0 "$1" |
        head -n 1 | awk -F, '{ print $1, $2 "x" $3, $4 }'
}

# pictures libmpeg2 parses (DESIGN.md §6)
mpeg2dec_pictures() {
    mpeg2dec -v -o null "$1" 2>&1 | grep -c PICTURE
}

# ffmpeg decodes strictly: exit status 0 and not a single warning.  One line
# is not about the stream: the raw-video demuxer has no timestamps and says
# "Estimating duration from bitrate" for every MPEG-1 elementary stream,
# ffmpeg's own included (checked with ffmpeg 5.1 -c:v mpeg1video), so it is
# dropped; everything else from demuxer, parser or decoder fails the test.
ffmpeg_clean_decode() {
    local log
    log=$(ffmpeg -hide_banner -nostats -v warning -xerror -i "$1" -f null - 2>&1) || {
        echo "ffmpeg failed: $log"; return 1; }
    log=$(printf '%s\n' "$log" | grep -v '^\[mpegvideo @ [0-9a-fx]*\] Estimating duration from bitrate, this may be inaccurate$')
    [ -z "$log" ] || { echo "ffmpeg warned: $log"; return 1; }
}

# check_decodes NAME STREAM PICTURES RECON: ffmpeg decodes STREAM strictly,
# libmpeg2 parses PICTURES pictures of it, and the encoder's --recon RECON
# equals ffmpeg's decode (>= 50 dB; decoded with -fps_mode passthrough, as
# ffmpeg repeats a frame of an MPEG-1 stream with B pictures otherwise)
check_decodes() {
    local name=$1 s=$2 n=$3 rec=$4 got d
    if d=$(ffmpeg_clean_decode "$s"); then pass "$name/ffmpeg-clean"; else fail "$name/ffmpeg-clean" "$d"; fi
    got=$(mpeg2dec_pictures "$s")
    check "$name/libmpeg2-pictures" "libmpeg2 parsed $got pictures, expected $n" [ "$got" = "$n" ]
    ffmpeg -v error -y -i "$s" -fps_mode passthrough -f yuv4mpegpipe "$s.dec.y4m"
    got=$(psnr_y "$rec" "$s.dec.y4m")
    check "$name/recon-is-decode" "--recon vs ffmpeg's decode: $got dB" ge "$got" 50
}

# ge A B: A >= B for decimal numbers ("inf" counts as large)
ge() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "inf") exit 0; exit !(a + 0 >= b + 0) }'; }
gt() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "inf") exit 0; exit !(a + 0 > b + 0) }'; }
