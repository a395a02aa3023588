#!/usr/bin/env bash
# The in-loop quality checker and rate control on the device machine
# (16 cores + GPU) on the solar clip, from binaries staged in devrun/:
# per-frame logs for --q 5, --bitrate 20M, --target-mad at two values and
# --target-psnr 40; and the checker's cost in fps, CPU and GPU.
#   tools/device/quality.sh [DIR]     (logs go to $OUT)
set -u
D=${1:-devrun}
O=${OUT:-/tmp}
export LD_LIBRARY_PATH="$PWD/$D/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
E="$D/bin/mpegenc"
PNG="$D/solar/solar_%d.png"
run() { # name args...: encode with a log, print the summary (and -vv trials in $O/name.trials)
    local name=$1; shift
    echo "== $name: $*"
    local t0; t0=$(date +%s.%N)
    "$E" -vv -i "$PNG" -o "$O/$name.m2v" --log "$O/$name.csv" --report "$O/$name.html" "$@" 2>"$O/$name.err"
    echo "($(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }') s)"
    grep ' trial ' "$O/$name.err" > "$O/$name.trials"
    grep -v ' trial \|^mpegenc: frame \|^frame \|exceeds Main@High' "$O/$name.err"
}
col_mean() { awk -F, -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next } { s += $k; n++ } END { printf "%.3f", s / n }' "$1"; }

run q5 --q 5 --iqa all
mad5=$(col_mean "$O/q5.csv" mad)
run bitrate20M --bitrate 20M --iqa all
run mad_q5level --target-mad "$mad5" --iqa all
run mad_double --target-mad "$(awk -v m="$mad5" 'BEGIN { printf "%.3f", 2 * m }')" --iqa all
run psnr40 --target-psnr 40 --iqa all

# fewer bits than constant q? the largest --q whose worst frame is no worse
# than the target run's worst frame, and its bits
cq_compare() { # run name
    local worst q best=""
    worst=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "mad") k = i; next } $k > m { m = $k } END { print m }' "$O/$1.csv")
    for q in 1 2 3 4 5 6 7 8 9 10 12 14 16; do
        [ -f "$O/cq$q.csv" ] || "$E" --quiet -i "$PNG" -o "$O/cq$q.m2v" --log "$O/cq$q.csv" --q $q --iqa mad || return
        w=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "mad") k = i; next } $k > m { m = $k } END { print m }' "$O/cq$q.csv")
        awk -v w="$w" -v t="$worst" 'BEGIN { exit !(w <= t) }' && best=$q
    done
    bits() { awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "bits") k = i; next } { s += $k } END { print s }' "$1"; }
    within=$(awk -F, -v t="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "mad") k = i; next }
        { n++; if ($k >= 0.9 * t && $k <= 1.1 * t) w++; if ($k > 1.25 * t) bad++ } END { printf "%d of %d within 10 %%, %d more than 25 %% worse", w, n, bad }' "$O/$1.csv")
    echo "$1 (target $2): $within; worst MAD $worst, $(bits "$O/$1.csv") bits; constant q meeting that worst frame: q ${best:-none} $( [ -n "$best" ] && echo "with $(bits "$O/cq$best.csv") bits")"
}
cq_compare mad_q5level "$mad5"
cq_compare mad_double "$(awk -v m="$mad5" 'BEGIN { printf "%.3f", 2 * m }')"

[ "${COST:-1}" = 0 ] && { rm -f "$O"/*.m2v; exit 0; }
echo "== checker cost (--q 5, best of 3 wall seconds, 10 frames)"
best() {
    local b=""
    for _ in 1 2 3; do
        local t0 t1
        t0=$(date +%s.%N); "$E" --quiet -i "$PNG" -o "$O/c.m2v" --q 5 "$@" || return; t1=$(date +%s.%N)
        b=$(awk -v a="$b" -v s="$t0" -v e="$t1" 'BEGIN { d = e - s; print (a == "" || d < a) ? d : a }')
    done
    awk -v b="$b" 'BEGIN { printf "%.3f s  %.2f fps", b, 10 / b }'
}
for cfg in "--iqa psnr" "--iqa psnr,ssim" "--iqa all --iqa-backend cuda" "--iqa mad --iqa-backend cuda" \
           "--iqa bliinds --iqa-backend cuda" "--iqa all --iqa-backend cpu"; do
    # shellcheck disable=SC2086
    printf "  %-36s %s\n" "$cfg" "$(best $cfg)"
done
echo "== stage table with --iqa all (cuda)"
"$E" --stats -i "$PNG" -o "$O/c.m2v" --q 5 --iqa all 2>&1 | tail -12
rm -f "$O"/*.m2v
