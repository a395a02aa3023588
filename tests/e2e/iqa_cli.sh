#!/usr/bin/env bash
# End-to-end: the mpegenc-iqa command.  Scores and features of the test
# images against the numbers the original BLIINDS-II code produced
# (tests/data/bliinds/reference.csv, and ../shared's full set when present),
# the same score through every input path (RGB, 16-bit, Y4M frame N, stdin),
# and the error contract: one line on stderr, exit 1 for bad input, 2 for bad
# usage, nothing on stdout.
. "$(dirname "$0")/lib.bash"

IQA="${MPEGENC_IQA:-$ROOT/mpegenc-iqa}"
DATA="$ROOT/tests/data/bliinds"
SHARED="${MPE_SHARED_DIR:-$ROOT/../shared}/reference/bliinds"

[ -x "$IQA" ] || { fail build "$IQA not built"; exit 1; }

# reference.csv column of a name, for file $2 of csv $1
ref_field() {
    awk -F, -v f="$2" -v col="$3" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $1 == f { print $(c[col]) }' "$1"
}

# features_match CSV FILE "F1,...,F24": 1e-5 relative or 1e-6 absolute each
features_match() {
    awk -F, -v f="$2" -v got="$3" 'NR == 1 { next } $1 == f {
        n = split(got, g, ",")
        if (n != 24) { print "got " n " features"; exit 1 }
        for (i = 1; i <= 24; i++) {
            r = $(i + 3); e = g[i] - r; if (e < 0) e = -e; a = r < 0 ? -r : r
            if (e > 1e-5 * a && e > 1e-6) { print "feature " i ": " g[i] " vs " r; exit 1 }
        }
        found = 1 }
        END { if (!found) { print f " not in " FILENAME; exit 1 } }' "$1"
}

# score_is NAME WANT ARGS...: stdout is exactly "score=WANT"
score_is() {
    local name=$1 want=$2 out; shift 2
    out=$("$IQA" "$@" 2>&1)
    if [ "$out" = "score=$want" ]; then pass "$name"; else fail "$name" "got '$out', expected score=$want"; fi
}

# --- scores of the reference images --------------------------------------
for img in "$DATA"/*.png; do
    f=$(basename "$img")
    want=$(ref_field "$DATA/reference.csv" "$f" score)
    [ -n "$want" ] || continue
    score_is "score-$f" "$want" bliinds "$img"
done

out=$("$IQA" bliinds --features "$DATA/ref_256x384.png")
line_count=$(printf '%s\n' "$out" | wc -l)
feat=${out#*features=}
if [ "$line_count" -ne 1 ] || [ "${out%% *}" != "score=$(ref_field "$DATA/reference.csv" ref_256x384.png score)" ]; then
    fail features-line "not one 'score=S features=...' line: $out"
elif [ "$(printf '%s' "$feat" | tr ',' '\n' | grep -c .)" -ne 24 ]; then
    fail features-count "expected 24 features: $feat"
elif ! why=$(features_match "$DATA/reference.csv" ref_256x384.png "$feat"); then
    fail features-values "$why"
else
    pass features
fi

if [ -f "$SHARED/reference.csv" ]; then
    bad=
    for img in "$SHARED"/images/*.png; do
        f=$(basename "$img")
        want=$(ref_field "$SHARED/reference.csv" "$f" score)
        out=$("$IQA" --features bliinds "$img" 2>&1)
        [ "${out%% *}" = "score=$want" ] || bad="$bad $f: ${out%% *} (want $want);"
        why=$(features_match "$SHARED/reference.csv" "$f" "${out#*features=}") || bad="$bad $f: $why;"
    done
    if [ -z "$bad" ]; then pass shared-set; else fail shared-set "$bad"; fi
else
    skip shared-set "$SHARED absent (set MPE_SHARED_DIR)"
fi

# --- other input paths give the same plane -------------------------------
REF="$DATA/ref_256x384.png"
WANT=$(ref_field "$DATA/reference.csv" ref_256x384.png score)
GRAY=$("$IQA" --features bliinds "$REF")

# same_as_gray NAME ARGS...: the full --features line equals the gray PNG's
same_as_gray() {
    local name=$1 out; shift
    out=$("$IQA" --features "$@" 2>&1)
    if [ "$out" = "$GRAY" ]; then pass "$name"; else fail "$name" "'${out:0:80}...' differs from the gray PNG's"; fi
}

if have ffmpeg; then
    # R = G = B: rgb2gray's weights sum to 1, so luma = gray exactly; 16-bit
    # samples v * 257 scale back to v.  (RGBA64 is made from gray16: ffmpeg
    # widens 8-bit gray to RGBA64 as v * 256, which is not the same image.)
    ffmpeg -v error -y -i "$REF" -pix_fmt rgb24 "$TMP/rgb.png"
    same_as_gray rgb-png bliinds "$TMP/rgb.png"
    ffmpeg -v error -y -i "$REF" -pix_fmt gray16be "$TMP/gray16.png"
    same_as_gray gray16-png bliinds "$TMP/gray16.png"
    ffmpeg -v error -y -i "$TMP/gray16.png" -pix_fmt rgba64be "$TMP/rgba16.png"
    same_as_gray rgba16-png bliinds "$TMP/rgba16.png"

    # a two-frame Y4M built by hand (ffmpeg's own conversion would rescale
    # gray to studio range): frame 0 flat, frame 1 the image
    ffmpeg -v error -y -i "$REF" -f rawvideo -pix_fmt gray "$TMP/y.raw"
    {
        printf 'YUV4MPEG2 W384 H256 F25:1 Ip A1:1 C420jpeg\n'
        printf 'FRAME\n'; head -c $((384 * 256)) /dev/zero | tr '\0' '\200'
        head -c $((192 * 128 * 2)) /dev/zero | tr '\0' '\200'
        printf 'FRAME\n'; cat "$TMP/y.raw"
        head -c $((192 * 128 * 2)) /dev/zero | tr '\0' '\200'
    } > "$TMP/two.y4m"
    same_as_gray y4m-frame1 --frame 1 bliinds "$TMP/two.y4m"
    out=$("$IQA" bliinds "$TMP/two.y4m" 2>"$TMP/flat.err")
    if [ -n "$out" ] && [ "$out" != "score=$WANT" ] && grep -q "two\.y4m: the image is flat" "$TMP/flat.err"; then
        pass y4m-frame0
    else
        fail y4m-frame0 "frame 0 (flat) scored '$out', stderr: $(cat "$TMP/flat.err")"
    fi
    same_as_gray y4m-stdin bliinds --frame=1 - < "$TMP/two.y4m"
else
    skip input-paths "ffmpeg not installed (make test installs it)"
fi

# --- errors --------------------------------------------------------------
# expect NAME STATUS PATTERN ARGS...: exit status, one stderr line matching
# PATTERN, nothing on stdout
expect() {
    local name=$1 want=$2 pat=$3 out err rc; shift 3
    out=$("$IQA" "$@" 2>"$TMP/err"); rc=$?
    err=$(cat "$TMP/err")
    if [ "$rc" != "$want" ]; then
        fail "$name" "exit status $rc, expected $want; stderr: $err"
    elif ! printf '%s' "$err" | grep -qE -- "$pat"; then
        fail "$name" "stderr '$err' does not match /$pat/"
    elif [ "$(printf '%s\n' "$err" | grep -c .)" -ne 1 ]; then
        fail "$name" "expected one line on stderr: $err"
    elif [ -n "$out" ]; then
        fail "$name" "wrote to stdout: $out"
    else
        pass "$name"
    fi
}

expect missing-file 1 "^mpegenc-iqa: $TMP/nope\.png: .*No such file" bliinds "$TMP/nope.png"
echo hello > "$TMP/text.png"
expect not-a-png 1 "text\.png: not a PNG" bliinds "$TMP/text.png"
head -c 3000 "$REF" > "$TMP/cut.png"
expect truncated-png 1 "cut\.png: corrupt PNG" bliinds "$TMP/cut.png"
expect png-frame 1 "ref_256x384\.png: .*one frame" --frame 2 bliinds "$REF"
if have ffmpeg; then
    ffmpeg -v error -y -i "$REF" -vf crop=3:7 "$TMP/tiny.png"
    expect too-small 1 "tiny\.png: image size 3x7 is outside" bliinds "$TMP/tiny.png"
    ffmpeg -v error -y -i "$REF" -vf crop=4:4 "$TMP/four.png"
    out=$("$IQA" bliinds "$TMP/four.png" 2>/dev/null)
    case $out in score=*) pass smallest ;; *) fail smallest "4x4: '$out'" ;; esac
    expect y4m-no-frame 1 "two\.y4m: has 2 frames, no frame 5" --frame 5 bliinds "$TMP/two.y4m"
fi

expect no-metric 2 "no metric" --features
expect unknown-metric 2 "unknown metric 'psnr'" psnr "$REF"
expect bad-option 2 "unknown option '--bogus'" --bogus bliinds "$REF"
expect missing-arg 2 "bliinds takes IMAGE" bliinds
expect extra-arg 2 "bliinds takes IMAGE" bliinds "$REF" "$REF"
expect bad-impl 2 "--impl 'gpu'" --impl gpu bliinds "$REF"
expect bad-frame 2 "--frame '-1'" --frame -1 bliinds "$REF"
expect no-value 2 "needs a value" bliinds "$REF" --threads

out=$("$IQA" --help); rc=$?
if [ $rc -eq 0 ] && printf '%s' "$out" | grep -q 'usage: mpegenc-iqa'; then pass help; else fail help "rc $rc"; fi
out=$("$IQA" --version); rc=$?
if [ $rc -eq 0 ] && printf '%s' "$out" | grep -qE '^mpegenc-iqa [0-9]'; then pass version; else fail version "'$out'"; fi

# --- mad ----------------------------------------------------------------
out=$("$IQA" mad "$REF" "$REF")
if [ "$out" = "mad=0 d_detect=0 d_appear=0" ]; then pass mad-identical; else fail mad-identical "'$out'"; fi
expect mad-size 1 "jpeg_q10\.png: size 512x512 differs" mad "$REF" "$DATA/jpeg_q10.png"

# --- where a metric's number means nothing: the score, and one warning ---
# warns NAME PATTERN ARGS...: exit 0, one score line on stdout, and one line
# on stderr, "mpegenc-iqa: warning: FILE: ..." matching PATTERN
warns() {
    local name=$1 pat=$2 out err rc; shift 2
    out=$("$IQA" "$@" 2>"$TMP/err"); rc=$?
    err=$(cat "$TMP/err")
    if [ "$rc" != 0 ]; then
        fail "$name" "exit status $rc, expected 0; stderr: $err"
    elif ! printf '%s' "$out" | grep -qE '^(score|mad)='; then
        fail "$name" "no score on stdout: '$out'"
    elif [ "$(printf '%s\n' "$err" | grep -c .)" -ne 1 ] ||
         ! printf '%s' "$err" | grep -qE -- "^mpegenc-iqa: warning: $pat"; then
        fail "$name" "expected one warning line matching /$pat/, got: '$err'"
    else
        pass "$name"
    fi
}
# quiet NAME ARGS...: exit 0 and nothing on stderr
quiet() {
    local name=$1 err rc; shift
    err=$("$IQA" "$@" 2>&1 >/dev/null); rc=$?
    check "$name" "exit status $rc, stderr: $err" [ "$rc" = 0 -a -z "$err" ]
}
if have ffmpeg; then
    for c in black white; do
        ffmpeg -nostdin -v error -y -f lavfi -i color=$c:size=64x64 -frames:v 1 -pix_fmt gray "$TMP/$c.png"
    done
    ffmpeg -nostdin -v error -y -i "$REF" -vf crop=7:7:100:100 "$TMP/seven.png"
    ffmpeg -nostdin -v error -y -i "$REF" -vf crop=64:64:100:100 "$TMP/crop.png"
    # a brightness offset without clipping: b = a + 30
    ffmpeg -nostdin -v error -y -i "$REF" -vf "format=gray,lut=c0=val/2+40" "$TMP/a.png"
    ffmpeg -nostdin -v error -y -i "$TMP/a.png" -vf "format=gray,lut=c0=val+30" "$TMP/b.png"
    warns bliinds-flat-black "$TMP/black\.png: the image is flat .*every sample is 0" bliinds "$TMP/black.png"
    warns bliinds-flat-white "$TMP/white\.png: the image is flat .*every sample is 255" bliinds "$TMP/white.png"
    warns bliinds-7x7 "$TMP/seven\.png: 7x7 is too small for BLIINDS-II" bliinds "$TMP/seven.png"
    # a synthetic pattern: features the LIVE-trained model never saw
    ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=64x64 -frames:v 1 -pix_fmt gray "$TMP/synthetic.png"
    warns bliinds-out-of-model "$TMP/synthetic\.png: the features lie outside what BLIINDS-II's model was trained on" \
        bliinds "$TMP/synthetic.png"
    quiet bliinds-natural-quiet bliinds "$REF"
    warns mad-black-white "$TMP/white\.png: MAD is 0 although the images differ .*uniform offset of \+255" \
        mad "$TMP/black.png" "$TMP/white.png"
    warns mad-dark-reference "$TMP/crop\.png: MAD is 0 although the images differ .*reference is dark" \
        mad "$TMP/black.png" "$TMP/crop.png"
    warns mad-offset "$TMP/b\.png: MAD is 0 although the images differ .*uniform offset of \+30" \
        mad "$TMP/a.png" "$TMP/b.png"
    quiet mad-identical-quiet mad "$REF" "$REF"
    quiet mad-distorted-quiet mad "$REF" "$TMP/a.png"
else
    skip undefined-scores "ffmpeg not installed"
fi
exit 0
