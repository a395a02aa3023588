#!/usr/bin/env bash
# Runs every unit-test program and every end-to-end script, tallies their
# PASS/FAIL/SKIP lines, and ends with "N passed, N failed, N skipped".
# A program that exits non-zero without printing a FAIL line (a crash) counts
# as one failure, so nothing can fail silently.
#
# tests/run.sh --fast (make test-unit): the same but for the end-to-end
# scripts that mark themselves slow with "# slow: why" as their second line;
# they are named in one SKIP line each, so the tally shows what was left out.
set -u
fast=0
case "${1:-}" in
    "") ;;
    --fast) fast=1 ;;
    *) echo "usage: tests/run.sh [--fast]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
passed=0 failed=0 skipped=0

run_one() {
    local name=$1; shift
    "$@" >"$log" 2>&1
    local rc=$?
    cat "$log"
    local p f s
    p=$(grep -c '^PASS ' "$log"); f=$(grep -c '^FAIL ' "$log"); s=$(grep -c '^SKIP ' "$log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $name: exited with status $rc without reporting a failure"
        f=1
    fi
    if [ $((p + f + s)) -eq 0 ]; then
        echo "FAIL $name: ran no test case"
        f=1
    fi
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
}

for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    run_one "$(basename "$t")" "$t"
done
for t in tests/e2e/*.sh; do
    [ -f "$t" ] || continue
    if [ $fast = 1 ] && sed -n 2p "$t" | grep -q '^# slow:'; then
        echo "SKIP $(basename "$t" .sh): $(sed -n 2p "$t" | sed 's/^# //') (make test runs it)"
        skipped=$((skipped + 1))
        continue
    fi
    run_one "$(basename "$t" .sh)" bash "$t"
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
