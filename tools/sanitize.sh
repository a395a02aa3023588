#!/usr/bin/env bash
# sanitize.sh ci SANITIZE FUZZ_SECONDS — what `make ci` (and so .ci/run) runs:
#   1. the plain suite              make test
#   2. the sanitized suite          make test SANITIZE=$SANITIZE (own build
#                                   directory, MPE_TEST_SMALL=1: small inputs)
#   3. every fuzz target            make fuzz FUZZ_SECONDS=$FUZZ_SECONDS
# Every stage runs even if an earlier one failed, so one CI log shows all
# of it.  The PASS/FAIL/SKIP lines of all stages are tallied into one last
# line, "N passed, N failed, N skipped"; a stage that fails without a FAIL
# line of its own (a build error) counts as one failure.  Exit status 0
# only if nothing failed.
set -u
cd "$(dirname "$0")/.."
[ "${1:-}" = ci ] || { echo "usage: $0 ci SANITIZE FUZZ_SECONDS" >&2; exit 2; }
san=${2:-address,undefined}
secs=${3:-20}
make=${MAKE:-make}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
passed=0 failed=0 skipped=0

stage() {
    local name=$1; shift
    local t0=$SECONDS rc
    echo "=== ci: $name: $*"
    "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    local p f s
    p=$(grep -c '^PASS ' "$log"); f=$(grep -c '^FAIL ' "$log"); s=$(grep -c '^SKIP ' "$log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL ci/$name: exited with status $rc without reporting a failure"
        f=1
    fi
    echo "=== ci: $name: $p passed, $f failed, $s skipped in $((SECONDS - t0)) s"
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
}

stage plain $make test
stage sanitized $make test SANITIZE="$san"
stage fuzz $make fuzz FUZZ_SECONDS="$secs"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
