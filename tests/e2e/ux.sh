#!/usr/bin/env bash
# End-to-end: part of a sequence (--seek N, --frames N) and the progress line.
#
# --seek/--frames on every input kind (Y4M file, Y4M with parameters on its
# FRAME lines, stdin pipe with and without the reader thread, PNG pattern,
# directory): the stream is byte for byte the stream of a clip holding
# exactly those frames, made without mpegenc (ffmpeg's select filter for Y4M,
# copies of the PNG files); seeking to or past the end is one line naming the
# input and the seek, status 1, no output; negative or non-numeric values
# are usage errors (status 2).
#
# Progress: with --progress and stderr in a file, every update is a line of
# its own in the documented format (percent, frames/total, fps, kbit/s, q,
# the metric of a quality target, eta; no percent/eta on a pipe), the last
# one says 100% and is followed by the summary on its own line; none by
# default when stderr is not a terminal, none with --quiet or --no-progress;
# on a terminal (script(1) gives one) it is on by default, refreshed in
# place with '\r', and ends with a newline before the summary; -v turns the
# default off.  The stream is the same with and without it.
. "$(dirname "$0")/lib.bash"

[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }
if ! have ffmpeg; then skip all "ffmpeg not installed (make test installs it)"; exit 0; fi

N=12
OUT="$TMP/out"
mkdir -p "$OUT" "$TMP/png" "$TMP/refs"
make_y4m "$TMP/clip.y4m" 176x144 $N || { fail input "ffmpeg could not make the test clip"; exit 1; }
ffmpeg -v error -i "$TMP/clip.y4m" -start_number 1 "$TMP/png/f_%03d.png" ||
    { fail input "ffmpeg could not write the PNG frames"; exit 1; }

# the same frames with parameters on every FRAME line, of varying length
python3 - "$TMP/clip.y4m" "$TMP/tags.y4m" <<'EOF' || { fail input "could not write the tagged Y4M"; exit 1; }
import sys
d = open(sys.argv[1], 'rb').read()
p = d.index(b'\n') + 1
out, fb, k = [d[:p]], 176 * 144 * 3 // 2, 0
while p < len(d):
    assert d[p:p + 6] == b'FRAME\n'
    out.append(b'FRAME Ip XTAG=' + b'x' * (k * 7 % 50) + b'\n' + d[p + 6:p + 6 + fb])
    p, k = p + 6 + fb, k + 1
open(sys.argv[2], 'wb').write(b''.join(out))
EOF

# ref NAME FIRST COUNT: reference streams of frames FIRST..FIRST+COUNT-1
# (0-based): REF_y4m from ffmpeg's selection of them, REF_png from a
# directory holding copies of those PNG files
ref() {
    local name=$1 a=$2 n=$3 i
    ffmpeg -v error -i "$TMP/clip.y4m" -vf "select='between(n\,$a\,$((a + n - 1)))',setpts=N/25/TB" \
        -pix_fmt yuv420p -f yuv4mpegpipe "$TMP/refs/$name.y4m" &&
        "$MPEGENC" --quiet -i "$TMP/refs/$name.y4m" -o "$TMP/refs/${name}_y4m.m2v" ||
        { fail "ref-$name" "reference Y4M encode failed"; exit 1; }
    mkdir -p "$TMP/refs/$name.png"
    for ((i = a + 1; i <= a + n; i++)); do cp "$TMP/png/$(printf 'f_%03d.png' $i)" "$TMP/refs/$name.png/"; done
    "$MPEGENC" --quiet -i "$TMP/refs/$name.png" -o "$TMP/refs/${name}_png.m2v" ||
        { fail "ref-$name" "reference PNG encode failed"; exit 1; }
    [ "$(probe "$TMP/refs/${name}_y4m.m2v" | awk '{ print $3 }')" = "$n" ] ||
        { fail "ref-$name" "reference stream does not hold $n frames"; exit 1; }
}
ref frames4 0 4
ref seek9 9 3
ref seek5frames3 5 3

# part NAME REF KIND OPTIONS...: encode the clip given as KIND (y4m, tags,
# stdin, stdin-sync, pattern, dir) with OPTIONS; the stream must be REF's
part() {
    local name=$1 ref=$2 kind=$3 out="$OUT/$1.m2v" err rc; shift 3
    case $kind in
        y4m) err=$("$MPEGENC" --quiet -i "$TMP/clip.y4m" -o "$out" "$@" 2>&1); rc=$? ;;
        tags) err=$("$MPEGENC" --quiet -i "$TMP/tags.y4m" -o "$out" "$@" 2>&1); rc=$? ;;
        stdin) err=$(cat "$TMP/clip.y4m" | "$MPEGENC" --quiet -i - -o "$out" "$@" 2>&1); rc=$? ;;
        stdin-sync) err=$(cat "$TMP/clip.y4m" | "$MPEGENC" --quiet --read-threads 0 -i - -o "$out" "$@" 2>&1); rc=$? ;;
        pattern) err=$("$MPEGENC" --quiet -i "$TMP/png/f_%03d.png" --start 1 -o "$out" "$@" 2>&1); rc=$? ;;
        dir) err=$("$MPEGENC" --quiet -i "$TMP/png" -o "$out" "$@" 2>&1); rc=$? ;;
    esac
    local want="$TMP/refs/${ref}_y4m.m2v"
    case $kind in pattern | dir) want="$TMP/refs/${ref}_png.m2v" ;; esac
    if [ "$rc" != 0 ] || [ -n "$err" ]; then
        fail "$name" "exit status $rc, stderr: $err"
    elif ! cmp -s "$out" "$want"; then
        fail "$name" "stream differs from the reference of those frames: $(cmp "$out" "$want" 2>&1)"
    else
        pass "$name"
    fi
}

for kind in y4m tags stdin stdin-sync pattern dir; do
    part "frames4-$kind" frames4 $kind --frames 4
    part "seek9-$kind" seek9 $kind --seek 9
    part "seek5-frames3-$kind" seek5frames3 $kind --seek 5 --frames 3
done
# --frames beyond the end encodes what there is; 0 is all
part frames-beyond-y4m seek9 y4m --seek 9 --frames 100
part frames0-dir seek9 dir --seek 9 --frames 0

# expect NAME STATUS PATTERN ARGS...: status, one stderr line matching
# PATTERN, nothing left in $OUT (neither the output nor a temporary)
expect() {
    local name=$1 want=$2 pat=$3 err rc; shift 3
    rm -rf "$OUT"; mkdir -p "$OUT"
    err=$("$MPEGENC" "$@" 2>&1 >/dev/null); rc=$?
    error_verdict "$name" "$want" "$pat" "$rc" "$err" "$(ls -A "$OUT")"
}
expect_stdin() {
    local name=$1 want=$2 pat=$3 err rc; shift 3
    rm -rf "$OUT"; mkdir -p "$OUT"
    err=$(cat "$TMP/clip.y4m" | "$MPEGENC" "$@" 2>&1 >/dev/null); rc=$?
    error_verdict "$name" "$want" "$pat" "$rc" "$err" "$(ls -A "$OUT")"
}
past="no frames after --seek"
expect seek-end-y4m 1 "clip\.y4m: $past $N \(the input has $N frames\)" -i "$TMP/clip.y4m" -o "$OUT/a.m2v" --seek $N
expect seek-past-y4m 1 "clip\.y4m: $past 50 \(the input has $N frames\)" -i "$TMP/clip.y4m" -o "$OUT/a.m2v" --seek 50
expect seek-past-tags 1 "tags\.y4m: $past 50 \(the input has $N frames\)" -i "$TMP/tags.y4m" -o "$OUT/a.m2v" --seek 50
expect_stdin seek-past-stdin 1 "<stdin>: $past 50 \(the input has $N frames\)" -i - -o "$OUT/a.m2v" --seek 50
expect_stdin seek-end-stdin 1 "<stdin>: $past $N \(the input has $N frames\)" -i - -o "$OUT/a.m2v" --seek $N
expect seek-past-pattern 1 "f_%03d\.png: $past $N \(the input has $N frames\)" -i "$TMP/png/f_%03d.png" --start 1 -o "$OUT/a.m2v" --seek $N
expect seek-past-dir 1 "png: $past 99 \(the input has $N frames\)" -i "$TMP/png" -o "$OUT/a.m2v" --seek 99
# a frame --seek passes over is still the input's: -y does not replace it
cp -r "$TMP/png" "$TMP/png2"
expect seek-keeps-dir-input 2 "f_002\.png: is the input .*f_002\.png" -y -i "$TMP/png2" --seek 5 -o "$TMP/png2/f_002.png" --container es
expect seek-keeps-pattern-input 2 "f_002\.png: is the input .*f_002\.png" -y -i "$TMP/png2/f_%03d.png" --start 1 --seek 5 -o "$TMP/png2/f_002.png" --container es
check seek-input-intact "an input PNG was replaced" cmp -s "$TMP/png/f_002.png" "$TMP/png2/f_002.png"
expect seek-negative 2 "--seek: '-1' is not an integer" -i "$TMP/clip.y4m" -o "$OUT/a.m2v" --seek -1
expect frames-negative 2 "--frames: '-2' is not an integer" -i "$TMP/clip.y4m" -o "$OUT/a.m2v" --frames -2
expect seek-not-a-number 2 "--seek: 'abc' is not an integer" -i "$TMP/clip.y4m" -o "$OUT/a.m2v" --seek abc
expect frames-missing-value 2 "option '--frames' needs a value" -i "$TMP/clip.y4m" -o "$OUT/a.m2v" --frames

# ------------------------------------------------------------- progress
mkdir -p "$OUT"
"$MPEGENC" --quiet -i "$TMP/clip.y4m" -o "$TMP/quiet.m2v" || { fail progress "plain encode failed"; exit 1; }
num='[0-9]+\.[0-9]+'
known="^\[ *$num%\] [0-9]+/$N frames, $num fps, $num kbit/s, q $num, eta [0-9]+:[0-9]{2}:[0-9]{2}\$"
unknown="^[0-9]+ frames, $num fps, $num kbit/s, q $num\$"
summary="^mpegenc: $N frames, "

# progress_file NAME LINE_RE LAST_RE SUMMARY_RE CMD...: CMD's stderr (a file)
# starts with progress lines matching LINE_RE, the last matching LAST_RE,
# and goes on with the summary (SUMMARY_RE; a target adds its block) and no
# progress line after it; every line ends with '\n', no '\r' anywhere
progress_file() {
    local name=$1 re=$2 last=$3 sum=$4 log="$TMP/$1.err" first; shift 4
    "$@" 2>"$log"
    first=$(grep -nvE -- "$re" "$log" | head -n 1 | cut -d: -f1)
    if grep -q $'\r' "$log"; then
        fail "$name" "a '\\r' in a file: $(od -c "$log" | head -n 3)"
    elif [ -z "$first" ] || [ "$first" -lt 2 ]; then
        fail "$name" "expected progress lines before the summary, got: $(cat "$log")"
    elif ! sed -n "${first}p" "$log" | grep -qE -- "$sum"; then
        fail "$name" "a line is neither progress nor the summary: $(sed -n "${first}p" "$log")"
    elif ! sed -n "$((first - 1))p" "$log" | grep -qE -- "$last"; then
        fail "$name" "the line before the summary is not the final progress line: $(cat "$log")"
    elif tail -n +"$first" "$log" | grep -qE -- "$re"; then
        fail "$name" "a progress line after the summary: $(cat "$log")"
    elif [ -n "$(tail -c 1 "$log")" ]; then
        fail "$name" "stderr does not end with a newline: $(cat "$log")"
    else
        pass "$name"
    fi
}
progress_file progress-y4m "$known" "^\[100\.0%\] $N/$N frames, " "$summary" \
    "$MPEGENC" --progress -i "$TMP/clip.y4m" -o "$OUT/p1.m2v"
check progress-same-stream "the stream changed with --progress" cmp -s "$OUT/p1.m2v" "$TMP/quiet.m2v"
progress_file progress-pattern-seek "^\[ *$num%\] [0-9]+/4 frames, " "^\[100\.0%\] 4/4 frames, " "^mpegenc: 4 frames, " \
    "$MPEGENC" --progress -i "$TMP/png/f_%03d.png" --start 1 --seek 8 -o "$OUT/p2.m2v"
progress_file progress-stdin "$unknown" "^$N frames, " "$summary" \
    sh -c "cat '$TMP/clip.y4m' | '$MPEGENC' --progress -i - -o '$OUT/p3.m2v'"
progress_file progress-stdin-frames "^\[ *$num%\] [0-9]+/5 frames, " "^\[100\.0%\] 5/5 frames, " "^mpegenc: 5 frames, " \
    sh -c "cat '$TMP/clip.y4m' | '$MPEGENC' --progress --frames 5 -i - -o '$OUT/p4.m2v'"
progress_file progress-target "^\[ *$num%\] [0-9]+/$N frames, $num fps, $num kbit/s, q $num, PSNR-Y $num dB, eta " \
    "^\[100\.0%\] " "$summary" "$MPEGENC" --progress --target-psnr 36 -i "$TMP/clip.y4m" -o "$OUT/p5.m2v"

# none_printed NAME CMD...: stderr is only the summary (its first line and
# the peer-shaped lines, all "mpegenc: ..."), or empty: no progress line
none_printed() {
    local name=$1 err; shift
    err=$("$@" 2>&1 >/dev/null)
    if [ -z "$err" ] || { ! printf '%s\n' "$err" | grep -qv '^mpegenc: ' && printf '%s' "$err" | grep -qE "$summary"; }; then
        pass "$name"
    else
        fail "$name" "expected no progress line, got: $err"
    fi
}
none_printed no-progress-without-tty "$MPEGENC" -i "$TMP/clip.y4m" -o "$OUT/n1.m2v"
none_printed no-progress-flag "$MPEGENC" --progress --no-progress -i "$TMP/clip.y4m" -o "$OUT/n2.m2v"
err=$("$MPEGENC" --quiet -i "$TMP/clip.y4m" -o "$OUT/n3.m2v" 2>&1)
check quiet-prints-nothing "stderr: $err" test -z "$err"

# on a terminal: script(1) runs the encoder on a pseudo-terminal (which
# turns each '\n' into "\r\n")
if have script && script -qc true /dev/null >/dev/null 2>&1; then
    tty_run() { script -qec "$1" /dev/null </dev/null | od -An -c | tr -s ' \n' ' '; }
    t=$(tty_run "'$MPEGENC' -i '$TMP/clip.y4m' -o '$OUT/t1.m2v'")
    if ! printf '%s' "$t" | grep -qE '\\r \[ 1 0 0 \. 0 % \] ' ||
       ! printf '%s' "$t" | grep -qE '\\r \[ +[0-9]'; then
        fail tty-progress-default "no progress line refreshed with '\\r' on a terminal: $t"
    elif ! printf '%s' "$t" | grep -qE '(\\r )?\\n m p e g e n c : '; then
        fail tty-progress-default "the summary does not start on a new line: $t"
    else
        pass tty-progress-default
    fi
    check tty-same-stream "the stream changed on a terminal" cmp -s "$OUT/t1.m2v" "$TMP/quiet.m2v"
    t=$(tty_run "'$MPEGENC' --no-progress -i '$TMP/clip.y4m' -o '$OUT/t2.m2v'")
    check tty-no-progress "progress printed with --no-progress: $t" eval '! printf "%s" "$t" | grep -q "% \]"'
    t=$(tty_run "'$MPEGENC' --quiet -i '$TMP/clip.y4m' -o '$OUT/t3.m2v'")
    check tty-quiet "output with --quiet: $t" test -z "$(printf '%s' "$t" | tr -d ' ')"
    t=$(tty_run "'$MPEGENC' -v -i '$TMP/clip.y4m' -o '$OUT/t4.m2v'")
    check tty-verbose-no-progress "progress line with -v: $t" eval '! printf "%s" "$t" | grep -q "% \]"'
else
    skip tty "script(1) cannot make a pseudo-terminal here"
fi
