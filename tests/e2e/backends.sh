#!/usr/bin/env bash
# End-to-end: every front-end backend that can run here gives streams
# byte-identical to the cpu backend's (DESIGN.md invariant 2), from RGB (PNG)
# and from YUV (Y4M) input, MPEG-1 and MPEG-2, several search ranges.
. "$(dirname "$0")/lib.bash"

[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }
if ! have ffmpeg; then skip all "ffmpeg not installed (make test installs it)"; exit 0; fi

make_y4m "$TMP/odd.y4m" 330x250 9 mandelbrot
SOLAR="$ROOT/samples/solar/solar_%d.png"
backends=$("$MPEGENC" --list-backends | awk '{ print $1 }' | grep -v '^cpu$')
[ -n "$backends" ] || { skip all "no GPU backend compiled in"; exit 0; }

for b in $backends; do
    line=$("$MPEGENC" --list-backends | grep "^$b ")
    if ! printf '%s' "$line" | grep -q ' available'; then
        skip "$b" "${line#"$b"}"
        continue
    fi
    for case in "odd.y4m m2v 16" "odd.y4m m1v 64" "solar m2v 16" "solar m1v 7"; do
        set -- $case
        src=$TMP/$1; [ "$1" = solar ] && src=$SOLAR
        "$MPEGENC" --quiet -y --backend cpu -i "$src" -o "$TMP/cpu.$2" --search $3 --gop 4 2>"$TMP/err" &&
        "$MPEGENC" --quiet -y --backend "$b" -i "$src" -o "$TMP/$b.$2" --search $3 --gop 4 2>>"$TMP/err"
        if [ $? -ne 0 ]; then
            fail "$b/$1-$2-R$3" "encode failed: $(cat "$TMP/err")"
        elif cmp -s "$TMP/cpu.$2" "$TMP/$b.$2"; then
            pass "$b/$1-$2-R$3-identical-to-cpu"
        else
            fail "$b/$1-$2-R$3-identical-to-cpu" "streams differ: $(cmp "$TMP/cpu.$2" "$TMP/$b.$2")"
        fi
    done
    # a forced backend with a device index that does not exist is a clear error
    err=$("$MPEGENC" --backend "$b" --device 63 -i "$TMP/odd.y4m" -o "$TMP/x.m2v" 2>&1 >/dev/null); rc=$?
    check "$b/bad-device" "rc $rc: $err" sh -c "[ $rc = 1 ] && printf '%s' \"\$1\" | grep -q 'device 63' && [ ! -e '$TMP/x.m2v' ]" _ "$err"
done
exit 0
