#!/usr/bin/env bash
# End-to-end: front-end failures, provoked through the MPE_GPU_FAIL test
# hook (gpu/frontend.h), for every backend that can run here.
#   forced backend (--backend B): probe, kernel build, device out-of-memory
#     and a device lost at submit / search / download of frame 2 each end
#     with exit status 1, one line on stderr naming the backend and the
#     problem, and no output file (neither the stream nor a temporary);
#   --backend auto: a failure at probe, build or alloc of a GPU backend is a
#     logged fallback to the next one before the first frame, and the stream
#     is byte for byte the cpu backend's; a failure mid-run is an error, never
#     a switch of backend inside the stream; the last backend (cpu) failing
#     leaves auto with a clear error.
# OpenCL runs on PoCL here (SKIP when no OpenCL device); CUDA needs a GPU.
. "$(dirname "$0")/lib.bash"

[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }
if ! have ffmpeg; then skip all "ffmpeg not installed (make test installs it)"; exit 0; fi

OUT="$TMP/out"
IN="$TMP/in.y4m"
REF="$TMP/ref.m2v"
make_y4m "$IN" 64x48 5 || { fail input "ffmpeg could not make the test clip"; exit 1; }
if ! "$MPEGENC" --quiet --backend cpu -i "$IN" -o "$REF" 2>"$TMP/ref.err"; then
    fail reference "cpu encode failed: $(cat "$TMP/ref.err")"
    exit 1
fi

# run NAME SPEC ARGS...: encode $IN into $OUT/a.m2v with MPE_GPU_FAIL=SPEC;
# sets rc, err (stderr), left (files in $OUT afterwards)
run() {
    local spec=$1; shift
    rm -rf "$OUT"; mkdir -p "$OUT"
    err=$(MPE_GPU_FAIL="$spec" "$MPEGENC" "$@" -i "$IN" -o "$OUT/a.m2v" 2>&1 >/dev/null); rc=$?
    left=$(ls -A "$OUT")
}

# expect_error NAME SPEC PATTERN ARGS...: status 1, one line matching PATTERN,
# nothing left in $OUT
expect_error() {
    local name=$1 spec=$2 pat=$3; shift 3
    run "$spec" "$@"
    error_verdict "$name" 1 "$pat" "$rc" "$err" "$left"
}

# expect_fallback NAME SPEC PATTERN: --backend auto -v succeeds, logs a line
# matching PATTERN (the fallback and its reason), ends on another backend
# than the failed one, and writes the cpu backend's stream exactly
expect_fallback() {
    local name=$1 spec=$2 pat=$3 failed=${2%%:*}
    run "$spec" --backend auto -v
    if [ "$rc" -ne 0 ]; then
        fail "$name" "exit status $rc, expected 0; stderr: $err"
    elif ! printf '%s' "$err" | grep -qE -- "$pat"; then
        fail "$name" "no fallback logged matching /$pat/; stderr: $err"
    elif printf '%s' "$err" | grep -qE "front end: using backend '$failed'"; then
        fail "$name" "still used backend '$failed'"
    elif ! cmp -s "$OUT/a.m2v" "$REF"; then
        fail "$name" "stream differs from the cpu backend's"
    elif [ "$left" != "a.m2v" ]; then
        fail "$name" "files left besides the stream: $left"
    else
        pass "$name"
    fi
}

# forced backend: every provokable failure is a clean error naming it
forced_checks() {
    local b=$1
    expect_error "$b-probe" "$b:probe" "backend '$b' cannot run here: $b: device probe failed" --backend "$b"
    expect_error "$b-build" "$b:build" "backend '$b'.*$b: kernel build failed|^mpegenc: $b: kernel build failed" --backend "$b"
    expect_error "$b-alloc" "$b:alloc" "backend '$b'.*$b: out of device memory|^mpegenc: $b: out of device memory" --backend "$b"
    for w in submit search download; do
        expect_error "$b-$w-lost" "$b:$w@2" "$b: device lost during $w of frame 2" --backend "$b"
    done
    # the hook's frame count is real: a failure past the last frame never fires
    run "$b:submit@99" --backend "$b"
    check "$b-no-fail-past-end" "status $rc, stderr $err" \
        eval '[ "$rc" -eq 0 ] && cmp -s "$OUT/a.m2v" "$REF"'
}

# auto: a GPU backend failing before the first frame falls back to the next
auto_checks() {
    local b=$1
    expect_fallback "$b-auto-probe" "$b:probe" "backend '$b' unavailable \\($b: device probe failed"
    expect_fallback "$b-auto-build" "$b:build" "warning: front end: backend '$b' failed to open \\(.*kernel build failed.*\\); falling back"
    expect_fallback "$b-auto-alloc" "$b:alloc" "warning: front end: backend '$b' failed to open \\(.*out of device memory.*\\); falling back"
    # ... but not once frames are under way: an error, and no file
    expect_error "$b-auto-lost-midrun" "$b:search@1" "$b: device lost during search of frame 1" --backend auto
}

forced_checks cpu
# cpu is the last resort: auto has nothing to fall back to
expect_error cpu-auto-build-no-fallback "cpu:build" "no usable front-end backend.*cpu.*kernel build failed" --backend auto
expect_error unknown-backend "" "unknown backend 'nope'" --backend nope

backends=$("$MPEGENC" --list-backends 2>/dev/null)
for b in opencl cuda; do
    if printf '%s\n' "$backends" | grep -qE "^$b +available"; then
        forced_checks "$b"
        auto_checks "$b"
    else
        why=$(printf '%s\n' "$backends" | sed -n "s/^$b *//p")
        skip "$b" "backend not usable here (${why:-not built})"
    fi
done
