#!/usr/bin/env bash
# fuzz.sh DIR SECONDS — runs every libFuzzer binary DIR/fuzz_<name> (built by
# `make fuzz`) for SECONDS on a scratch copy of tests/fuzz/corpus/<name>/
# plus tests/fuzz/regress/<name>/ (read only), so nothing is ever written
# into the repository.  Prints one line per target,
#   PASS fuzz/<name>: N execs, 0 crashes
#   FAIL fuzz/<name>: ...
# and exits non-zero if any target crashed, leaked, timed out or ran out of
# memory.  The inputs that did it are kept in $FUZZ_CRASH_DIR/<name>/
# (default build/fuzz/crashes): copy them into tests/fuzz/regress/<name>/
# once fixed, and every make test replays them.
# FUZZ_KEEP_CORPUS=DIR keeps each target's grown corpus in DIR/<name>/ (for
# long local runs; never point it into the repository from CI).
# FUZZ_ONLY=name runs just that target.
set -u
cd "$(dirname "$0")/.."
dir=${1:?usage: fuzz.sh DIR SECONDS}
secs=${2:?usage: fuzz.sh DIR SECONDS}
crash_dir=${FUZZ_CRASH_DIR:-build/fuzz/crashes}
failed=0 ran=0

for bin in "$dir"/fuzz_*; do
    [ -x "$bin" ] || continue
    name=${bin##*/fuzz_}
    [ -n "${FUZZ_ONLY:-}" ] && [ "$FUZZ_ONLY" != "$name" ] && continue
    ran=$((ran + 1))
    work=$(mktemp -d)
    mkdir -p "$work/corpus" "$work/artifacts"
    if [ -d "tests/fuzz/corpus/$name" ]; then
        cp -R "tests/fuzz/corpus/$name/." "$work/corpus/"
    else
        echo "FAIL fuzz/$name: no seed corpus tests/fuzz/corpus/$name/"
        failed=$((failed + 1))
        rm -rf "$work"
        continue
    fi
    extra=()
    [ -d "tests/fuzz/regress/$name" ] && extra+=("tests/fuzz/regress/$name")
    # -timeout: one input taking 10 s is a hang; -rss_limit_mb: a cap well
    # below the machine, so a runaway allocation is reported, not swapped
    "$bin" -max_total_time="$secs" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$work/artifacts/" "$work/corpus" "${extra[@]}" >"$work/log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n 1)
    found=$(find "$work/artifacts" -type f | wc -l)
    if [ "$rc" -eq 0 ] && [ "$found" -eq 0 ] && [ -n "$execs" ]; then
        echo "PASS fuzz/$name: ${execs} execs, 0 crashes (${secs} s)"
    else
        mkdir -p "$crash_dir/$name"
        cp "$work"/artifacts/* "$crash_dir/$name/" 2>/dev/null
        echo "FAIL fuzz/$name: exit status $rc, ${found} crash input(s) kept in $crash_dir/$name/, ${execs:-?} execs"
        grep -E 'ERROR|SUMMARY|fuzz_[a-z]*:|runtime error|Assertion' "$work/log" | head -n 20 | sed 's/^/    /'
        failed=$((failed + 1))
    fi
    if [ -n "${FUZZ_KEEP_CORPUS:-}" ]; then
        mkdir -p "$FUZZ_KEEP_CORPUS/$name"
        cp -R "$work/corpus/." "$FUZZ_KEEP_CORPUS/$name/"
    fi
    rm -rf "$work"
done
if [ "$ran" -eq 0 ]; then
    echo "FAIL fuzz: no fuzz target in $dir"
    exit 1
fi
[ "$failed" -eq 0 ]
