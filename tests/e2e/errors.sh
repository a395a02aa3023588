#!/usr/bin/env bash
# End-to-end: bad input and bad options give one clear line on stderr naming
# the problem, the documented exit status, and leave no output behind.
. "$(dirname "$0")/lib.bash"

[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }
if ! have ffmpeg; then skip all "ffmpeg not installed (make test installs it)"; exit 0; fi

OUT="$TMP/out"
mkdir -p "$OUT"

# expect NAME STATUS PATTERN ARGS...: exit status, a one-line message matching
# PATTERN, no new file in $OUT (neither the output nor a temporary)
expect() {
    local name=$1 want=$2 pat=$3; shift 3
    rm -rf "$OUT"; mkdir -p "$OUT"
    local err rc
    err=$("$MPEGENC" "$@" 2>&1 >/dev/null); rc=$?
    error_verdict "$name" "$want" "$pat" "$rc" "$err" "$(ls -A "$OUT")"
}

S="$ROOT/samples/solar"
mkdir -p "$TMP/seq"
cp "$S/solar_0.png" "$S/solar_1.png" "$S/solar_2.png" "$TMP/seq/"

# inputs
expect missing-y4m 1 "nope\.y4m: .*(No such file|cannot|not found)" -i "$TMP/nope.y4m" -o "$OUT/a.m2v"
expect missing-pattern 1 "none_%d\.png.*(no frame|No such file|not found)" -i "$TMP/none_%d.png" -o "$OUT/a.m2v"
mkdir -p "$TMP/empty"
expect empty-directory 1 "empty.*(no .*png|no frame)" -i "$TMP/empty" -o "$OUT/a.m2v"

mkdir -p "$TMP/corrupt"
cp "$S/solar_0.png" "$TMP/corrupt/f_0.png"
head -c 3000 "$S/solar_1.png" > "$TMP/corrupt/f_1.png"
expect corrupt-png 1 "f_1\.png: .*(corrupt|truncated|error)" -i "$TMP/corrupt/f_%d.png" -o "$OUT/a.m2v"

mkdir -p "$TMP/text"
echo "hello" > "$TMP/text/f_0.png"
expect not-a-png 1 "f_0\.png: .*not a PNG" -i "$TMP/text/f_%d.png" -o "$OUT/a.m2v"

mkdir -p "$TMP/sizes"
cp "$S/solar_0.png" "$TMP/sizes/f_0.png"
ffmpeg -v error -i "$S/solar_1.png" -vf scale=160:160 "$TMP/sizes/f_1.png"
expect size-change 1 "f_1\.png: .*160x160.*320x320" -i "$TMP/sizes/f_%d.png" -o "$OUT/a.m2v"

ffmpeg -v error -f lavfi -i testsrc2=size=64x64 -frames:v 2 -pix_fmt yuv444p -strict -1 -f yuv4mpegpipe "$TMP/c444.y4m"
expect y4m-colourspace 1 "c444\.y4m: .*colou?rspace.*444" -i "$TMP/c444.y4m" -o "$OUT/a.m2v"

make_y4m "$TMP/full.y4m" 64x64 3
# cut in its first frame: nothing to keep (a cut later frame keeps the ones
# before it: inputs.sh)
head -c $(( $(head -n 1 "$TMP/full.y4m" | wc -c) + 106 )) "$TMP/full.y4m" > "$TMP/trunc.y4m"
expect y4m-truncated 1 "trunc\.y4m: .*truncated frame 0" -i "$TMP/trunc.y4m" -o "$OUT/a.m2v"

head -n 1 "$TMP/full.y4m" > "$TMP/noframes.y4m"
expect zero-frames 1 "noframes\.y4m: no frames" -i "$TMP/noframes.y4m" -o "$OUT/a.m2v"

printf 'YUV4MPEG2 W8 H8 F25:1 C420jpeg\nFRAME\n' > "$TMP/tiny.y4m"
head -c 96 /dev/zero >> "$TMP/tiny.y4m"
expect too-small 1 "tiny\.y4m: .*8x8" -i "$TMP/tiny.y4m" -o "$OUT/a.m2v"

# options (usage errors exit 2)
expect q-zero 2 "--q: '0'" -i "$TMP/full.y4m" -o "$OUT/a.m2v" --q 0
expect q-too-big 2 "--q: '32'" -i "$TMP/full.y4m" -o "$OUT/a.m2v" --q 32
expect q-not-number 2 "--q: 'abc'" -i "$TMP/full.y4m" -o "$OUT/a.m2v" --q abc
expect gop-zero 2 "--gop: '0'" -i "$TMP/full.y4m" -o "$OUT/a.m2v" --gop 0
expect search-too-big 2 "--search: '65'" -i "$TMP/full.y4m" -o "$OUT/a.m2v" --search 65
expect bad-fps 2 "--fps: 'fast'" -i "$TMP/full.y4m" -o "$OUT/a.m2v" --fps fast
expect bad-format 2 "--format: 'mpeg4'" -i "$TMP/full.y4m" -o "$OUT/a.m2v" --format mpeg4
expect unknown-option 2 "unknown option '--frobnicate'" -i "$TMP/full.y4m" -o "$OUT/a.m2v" --frobnicate 1
expect missing-value 2 "'--q' needs a value" -i "$TMP/full.y4m" -o "$OUT/a.m2v" --q
expect no-output 2 "no output" -i "$TMP/full.y4m"
expect bad-backend 1 "backend 'warp'" -i "$TMP/full.y4m" -o "$OUT/a.m2v" --backend warp
expect unwritable-output 1 "no/such/dir/a\.m2v: cannot create" -i "$TMP/full.y4m" -o "$TMP/no/such/dir/a.m2v"

# a failed run leaves an existing output file untouched
rm -rf "$OUT"; mkdir -p "$OUT"
echo old > "$OUT/keep.m2v"
"$MPEGENC" -i "$TMP/trunc.y4m" -o "$OUT/keep.m2v" 2>/dev/null
check failed-run-keeps-old-output "keep.m2v changed or temporaries left: $(ls -A "$OUT")" \
    [ "$(cat "$OUT/keep.m2v")" = old -a "$(ls -A "$OUT")" = keep.m2v ]

# a corrupt frame in the middle of a sequence: same, after frames were coded
mkdir -p "$TMP/mid"
cp "$S/solar_0.png" "$TMP/mid/f_0.png"; cp "$S/solar_1.png" "$TMP/mid/f_1.png"
head -c 5000 "$S/solar_2.png" > "$TMP/mid/f_2.png"
expect corrupt-mid-sequence 1 "f_2\.png" -i "$TMP/mid/f_%d.png" -o "$OUT/a.m2v" --recon "$OUT/r.y4m"
# the same with frames decoded ahead on threads and slices coded on several:
# the error still names the frame, comes when its turn comes, nothing is left
for rt in 0 1 4; do
    expect corrupt-mid-sequence-read-threads-$rt 1 "f_2\.png: " -i "$TMP/mid/f_%d.png" \
        -o "$OUT/a.m2v" --recon "$OUT/r.y4m" --read-threads $rt --threads 3
done
expect bad-threads 2 "threads.*auto or an integer in 1\.\.256" -i "$TMP/mid/f_%d.png" -o "$OUT/a.m2v" --threads 0
expect bad-read-threads 2 "read-threads.*0\.\.64" -i "$TMP/mid/f_%d.png" -o "$OUT/a.m2v" --read-threads x
expect bad-dsp 2 "dsp.*auto, c" -i "$TMP/mid/f_%d.png" -o "$OUT/a.m2v" --dsp sse9

# help, version, backends
help=$("$MPEGENC" --help); rc=$?
missing=""
for o in format q gop search fps start backend threads read-threads dsp stats recon input output list-backends version; do
    printf '%s' "$help" | grep -q -- "--$o" || missing="$missing $o"
done
check help-lists-options "rc $rc, missing:$missing" [ $rc = 0 -a -z "$missing" ]
check help-shows-defaults "no '(default: 12)' for --gop" sh -c "printf '%s' \"\$1\" | grep -q -- '--gop N.*default: 12'" _ "$help"
v=$("$MPEGENC" --version)
check version "got '$v'" sh -c "printf '%s' \"\$1\" | grep -qE '^mpegenc [0-9]+\.[0-9]+'" _ "$v"
b=$("$MPEGENC" --list-backends)
check list-backends "got '$b'" sh -c "printf '%s' \"\$1\" | grep -qE '^cpu +available'" _ "$b"
exit 0
