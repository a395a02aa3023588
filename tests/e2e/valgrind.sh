#!/usr/bin/env bash
# End-to-end under valgrind (memcheck): one small encode and the error
# paths the CLI takes most often (input missing, input not a Y4M, output not
# writable, the front end failing mid-run) with --backend cpu.  Each must
# exit with its own status (0 or 1, never valgrind's 99), with no memory
# error and no leak (definite, indirect or possible) on exit.
# SKIP without valgrind (Debian package valgrind) or when the binary is
# built with a sanitizer (ASan and valgrind cannot share a process).
. "$(dirname "$0")/lib.bash"

[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }
if ! have valgrind; then skip all "valgrind not installed (apt-get install valgrind)"; exit 0; fi
if grep -qa -e __asan_init -e __tsan_init -e __msan_init "$MPEGENC"; then
    skip all "$MPEGENC is built with a sanitizer; valgrind runs on the plain build"
    exit 0
fi
if ! have ffmpeg; then skip all "ffmpeg not installed (make test installs it)"; exit 0; fi

VG_STATUS=99
OUT="$TMP/out"
make_y4m "$TMP/in.y4m" 48x32 3 || { fail input "ffmpeg could not make the test clip"; exit 1; }
printf 'YUV4MPEG2 W48 H32 F25:1 C420jpeg\nFRAME\nshort' > "$TMP/truncated.y4m"

# vg NAME WANT_STATUS ARGS...: mpegenc under memcheck
vg() {
    local name=$1 want=$2; shift 2
    rm -rf "$OUT"; mkdir -p "$OUT"
    valgrind -q --leak-check=full --show-leak-kinds=definite,indirect,possible \
        --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=$VG_STATUS \
        --log-file="$TMP/vg.log" "$MPEGENC" -y --backend cpu "$@" >/dev/null 2>"$TMP/err"
    local rc=$?
    if [ "$rc" -eq "$VG_STATUS" ] || [ -s "$TMP/vg.log" ]; then
        fail "$name" "memcheck: $(head -c 1500 "$TMP/vg.log")"
    elif [ "$rc" -ne "$want" ]; then
        fail "$name" "exit status $rc, expected $want: $(cat "$TMP/err")"
    else
        pass "$name"
    fi
}

vg encode 0 --threads 2 -i "$TMP/in.y4m" -o "$OUT/a.m2v"
check encode-stream "no stream written" test -s "$OUT/a.m2v"
vg missing-input 1 -i "$TMP/nope.y4m" -o "$OUT/a.m2v"
vg truncated-input 1 -i "$TMP/truncated.y4m" -o "$OUT/a.m2v"
vg unwritable-output 1 -i "$TMP/in.y4m" -o "$TMP/no-such-dir/a.m2v"
MPE_GPU_FAIL=cpu:search@1 vg frontend-lost-midrun 1 -i "$TMP/in.y4m" -o "$OUT/a.m2v"
check frontend-lost-no-output "files left: $(ls -A "$OUT")" test -z "$(ls -A "$OUT")"
