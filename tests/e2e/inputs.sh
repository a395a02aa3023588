#!/usr/bin/env bash
# End-to-end: a Y4M input whose complete frames are followed by bytes that
# are not a frame (stray bytes, a cut last frame, a broken FRAME marker).
# The complete frames are encoded into a finished stream, byte for byte the
# stream of a clean clip of those frames, ffmpeg decodes it without a
# warning, stderr has one warning line naming the input and what is left
# over, and the exit status is 1: the input was damaged.  The same from a
# file and from stdin, with and without the reader thread.  A Y4M whose
# first frame is already broken has nothing to keep: an error, no output.
. "$(dirname "$0")/lib.bash"

[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }
if ! have ffmpeg || ! have ffprobe; then skip all "ffmpeg not installed (make test installs it)"; exit 0; fi

OUT="$TMP/out"
mkdir -p "$OUT"
make_y4m "$TMP/five.y4m" 176x144 5 || { fail input "ffmpeg could not make the test clip"; exit 1; }
hdr=$(head -n 1 "$TMP/five.y4m" | wc -c)
fb=$(( 6 + 176 * 144 * 3 / 2 ))   # "FRAME\n" + the planes
[ "$(stat -c %s "$TMP/five.y4m")" = $(( hdr + 5 * fb )) ] || { fail input "unexpected clip layout"; exit 1; }

# first N: the header and the first N frames
first() { head -c $(( hdr + $1 * fb )) "$TMP/five.y4m"; }

first 5 > "$TMP/stray.y4m"; printf 'abcde' >> "$TMP/stray.y4m"
head -c $(( hdr + 4 * fb + fb / 2 )) "$TMP/five.y4m" > "$TMP/half.y4m"
{ first 3; printf 'FRAMX\n'; tail -c $(( 2 * fb - 6 )) "$TMP/five.y4m"; } > "$TMP/marker.y4m"

# reference streams: clean clips of the frames that must survive
for n in 3 4 5; do
    first $n > "$TMP/clean$n.y4m"
    "$MPEGENC" --quiet -i "$TMP/clean$n.y4m" -o "$TMP/ref$n.m2v" ||
        { fail reference "clean $n-frame encode failed"; exit 1; }
done

# damaged NAME CASE FRAMES PATTERN MODE: encode $TMP/CASE.y4m (MODE: file,
# stdin, stdin-sync = stdin without the reader thread), expect the stream of
# the first FRAMES frames, status 1 and one warning line matching PATTERN
damaged() {
    local name=$1 case=$2 n=$3 pat=$4 mode=$5 out err rc lines msg
    out="$OUT/$name.m2v"
    case $mode in
        file) err=$("$MPEGENC" --quiet -i "$TMP/$case.y4m" -o "$out" 2>&1); rc=$? ;;
        stdin) err=$(cat "$TMP/$case.y4m" | "$MPEGENC" --quiet -i - -o "$out" 2>&1); rc=$? ;;
        stdin-sync) err=$("$MPEGENC" --quiet --read-threads 0 -i - -o "$out" 2>&1 < "$TMP/$case.y4m"); rc=$? ;;
    esac
    lines=$(printf '%s\n' "$err" | grep -c .)
    if [ "$rc" != 1 ]; then
        fail "$name" "exit status $rc, expected 1; stderr: $err"
    elif [ "$lines" != 1 ] || ! printf '%s' "$err" | grep -qE -- "^mpegenc: warning: (.*/)?$pat"; then
        fail "$name" "expected one warning line matching /$pat/, got: $err"
    elif [ ! -s "$out" ]; then
        fail "$name" "no stream kept; stderr: $err"
    elif ! cmp -s "$out" "$TMP/ref$n.m2v"; then
        fail "$name" "stream differs from the clean $n-frame clip's: $(cmp "$out" "$TMP/ref$n.m2v" 2>&1)"
    elif ! msg=$(ffmpeg_clean_decode "$out"); then
        fail "$name" "$msg"
    elif [ "$(probe "$out" | awk '{ print $3 }')" != "$n" ]; then
        fail "$name" "ffprobe counts $(probe "$out"), expected $n frames"
    else
        pass "$name"
    fi
}

# files are regular: the count of bytes left over is exact
damaged stray5-file stray 5 "stray\.y4m: the last 5 bytes .*not a complete frame" file
damaged half-frame-file half 4 "half\.y4m: the last $(( fb / 2 )) bytes .*truncated frame 4" file
damaged bad-marker-file marker 3 "marker\.y4m: the last $(( 2 * fb )) bytes .*bad frame marker before frame 3 .*FRAMX" file
# a pipe: exact where the end has come, else where the damage starts
for mode in stdin stdin-sync; do
    damaged "stray5-$mode" stray 5 "<stdin>: the last 5 bytes .*not a complete frame" $mode
    damaged "half-frame-$mode" half 4 "<stdin>: the last $(( fb / 2 )) bytes .*truncated frame 4" $mode
    damaged "bad-marker-$mode" marker 3 "<stdin>: the (last $(( 2 * fb )) bytes|bytes from byte $(( hdr + 3 * fb )) on) .*bad frame marker before frame 3" $mode
done

# nothing complete to keep: an error as before, no output
head -c $(( hdr + fb / 2 )) "$TMP/five.y4m" > "$TMP/cut0.y4m"
rm -rf "$OUT"; mkdir -p "$OUT"
err=$("$MPEGENC" -i "$TMP/cut0.y4m" -o "$OUT/a.m2v" 2>&1 >/dev/null); rc=$?
error_verdict first-frame-cut 1 "cut0\.y4m: truncated frame 0" "$rc" "$err" "$(ls -A "$OUT")"
exit 0
