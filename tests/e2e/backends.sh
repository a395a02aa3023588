#!/usr/bin/env bash
# slow: ~13 s on 2 cores; every backend against cpu (test_gpu_frontend covers the kernels)
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

# Where no GPU device node exists (gpu_has_device_node), --backend auto must
# not load an OpenCL platform only to decline its CPU device: PoCL brings
# LLVM, whose handlers catch SIGSEGV, SIGFPE, SIGILL, SIGBUS (and SIGUSR1,
# which mpegenc itself now catches to remove its temporaries).  Checked on a
# running encode (the backend is open once a picture is logged): none of
# those four is caught or ignored.
auto_signals() {
    local fifo=$TMP/auto-fifo.y4m log=$TMP/auto.csv pid status caught bad="" n
    mkfifo "$fifo"
    "$MPEGENC" --quiet --backend auto --gop 1 --log "$log" -i "$fifo" -o "$TMP/auto.m2v" 2>"$TMP/auto.err" &
    pid=$!
    exec 3>"$fifo"
    { head -n 1 "$TMP/odd.y4m"; tail -c +$(( $(head -n 1 "$TMP/odd.y4m" | wc -c) + 1 )) "$TMP/odd.y4m" |
        head -c $(( 2 * (6 + 330 * 250 + 2 * 165 * 125) )); } >&3
    for n in $(seq 200); do
        [ -s "$log" ] && [ "$(grep -c . "$log")" -ge 2 ] && break
        sleep 0.05
    done
    status=$(cat /proc/$pid/status 2>/dev/null)
    exec 3>&-
    wait $pid
    caught=$(( 0x$(printf '%s\n' "$status" | sed -n 's/^SigCgt:\t//p') | 0x$(printf '%s\n' "$status" | sed -n 's/^SigIgn:\t//p') ))
    for s in SEGV FPE ILL BUS; do
        n=$(kill -l $s)
        (( caught >> (n - 1) & 1 )) && bad="$bad SIG$s"
    done
    if [ -z "$status" ]; then
        fail auto-no-opencl-without-gpu "the encoder was gone before it could be inspected: $(cat "$TMP/auto.err")"
    else
        check auto-no-opencl-without-gpu "caught or ignored:$bad" [ -z "$bad" ]
    fi
}
if ! printf '%s\n' $backends | grep -qx opencl; then
    skip auto-no-opencl-without-gpu "OpenCL not compiled in"
elif grep -qa -e __asan_init -e __tsan_init -e __msan_init "$MPEGENC"; then
    skip auto-no-opencl-without-gpu "a sanitizer's own handlers catch SIGSEGV, SIGFPE and SIGBUS"
elif ls /dev/dri/renderD* /dev/dri/card* /dev/kfd /dev/nvidia[0-9]* /dev/dxg >/dev/null 2>&1; then
    skip auto-no-opencl-without-gpu "this machine has a GPU device node: auto may load OpenCL"
elif ! "$MPEGENC" --list-backends | grep -q '^opencl *available'; then
    skip auto-no-opencl-without-gpu "no OpenCL platform here to load"
else
    auto_signals
fi

# --backend auto and the run's length: a run known to be short (one frame:
# a file's length, or --frames 1) ends sooner on the cpu than a GPU opens,
# so auto opens the cpu backend at once, probing no GPU (CUDA's driver
# alone took 0.1-0.2 s on the H100 machine); a pipe's length is unknown and
# auto goes on as before.  The streams are the cpu backend's.
make_y4m "$TMP/one.y4m" 330x250 1 mandelbrot
"$MPEGENC" --quiet -y --backend cpu -i "$TMP/one.y4m" -o "$TMP/one-cpu.m2v" 2>/dev/null
for how in "file" "frames1"; do
    src=$TMP/one.y4m; extra=""
    [ $how = frames1 ] && { src=$TMP/odd.y4m; extra="--frames 1"; }
    err=$("$MPEGENC" -v -y --backend auto $extra -i "$src" -o "$TMP/one-$how.m2v" 2>&1 >/dev/null)
    if ! printf '%s\n' "$err" | grep -q "no GPU opened" || printf '%s\n' "$err" | grep -q "unavailable"; then
        fail "auto-1-frame-$how-no-gpu" "$(printf '%s\n' "$err" | grep 'front end' | head -5)"
    else
        check "auto-1-frame-$how-no-gpu-same-stream" "streams differ" cmp -s "$TMP/one-cpu.m2v" "$TMP/one-$how.m2v"
    fi
done
err=$(cat "$TMP/one.y4m" | "$MPEGENC" -v -y --backend auto -i - -o "$TMP/one-pipe.m2v" 2>&1 >/dev/null)
check auto-unknown-length-keeps-gpu "$(printf '%s\n' "$err" | grep 'front end' | head -3)" \
    sh -c '! printf "%s\n" "$1" | grep -q "no GPU opened"' _ "$err"

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
