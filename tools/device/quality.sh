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
run() { # name args...: encode with a log, print the summary
    local name=$1; shift
    echo "== $name: $*"
    "$E" -i "$PNG" -o "$O/$name.m2v" --log "$O/$name.csv" "$@" 2>&1 | grep -v '^mpegenc: warning\|exceeds Main@High'
}
col_mean() { awk -F, -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next } { s += $k; n++ } END { printf "%.3f", s / n }' "$1"; }

run q5 --q 5 --iqa all
mad5=$(col_mean "$O/q5.csv" mad)
run bitrate20M --bitrate 20M --iqa all
run mad_q5level --target-mad "$mad5" --iqa all
run mad_double --target-mad "$(awk -v m="$mad5" 'BEGIN { printf "%.3f", 2 * m }')" --iqa all
run psnr40 --target-psnr 40 --iqa all

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
