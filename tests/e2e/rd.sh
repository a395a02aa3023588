#!/usr/bin/env bash
# End-to-end: make rd's harness (tools/rd.py) on a tiny set: one 96x64
# testsrc2 clip of 6 frames, 3 quantiser points, mpegenc and ffmpeg -bf 0,
# with y262 named as absent.  It exits 0; the BD-rate code passes its known
# cases; the per-clip and average tables have one row per configuration and
# a column per axis; ffmpeg -bf 0 against itself is 0 on every axis; y262 is
# SKIPPED with a reason; points.csv has a row per stream with rate falling
# and PSNR-Y falling as q rises, and CPU seconds that are numbers; a bad
# option is a usage error (status 2, one line).
. "$(dirname "$0")/lib.bash"

[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }
if ! have ffmpeg; then skip all "ffmpeg not installed (make test installs it)"; exit 0; fi
if ! have python3; then skip all "python3 not installed"; exit 0; fi

python3 "$ROOT/tools/bdrate.py" selftest | sed -E "s#^(PASS|FAIL) #\1 $E2E_NAME/#"

# the quantiser search on a model clip, PSNR-Y = 52 - 4.5 log2 q: 47 dB lies
# between q 2 and 3, 38 dB between 8 and 10, so q 2 .. 10 over four points of
# the candidate list; a clip always above the window gets the 4 coarsest q
got=$(cd "$ROOT/tools" && python3 -B -c '
import math, rd
n = [0]
def probe(q):
    n[0] += 1
    return 52 - 4.5 * math.log2(q)
a = rd.choose_qs(rd.QSCALE, 4, (38, 47), probe)
b = rd.choose_qs(rd.QSCALE, 4, (38, 47), lambda q: 60 - 0.1 * q)
print(a, b, n[0] <= 10)')
check choose-qs "got $got" test "$got" = "[2, 4, 7, 10] [20, 24, 28, 31] True"

RES="$TMP/res"
RD_Y262=none python3 "$ROOT/tools/rd.py" --size 96x64 --frames 6 --clips testsrc2 --points 3 \
    --configs mpegenc,y262 --out "$RES" >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -ne 0 ]; then
    fail run "exit status $rc: $(tail -n 5 "$TMP/err") $(grep FAILED "$TMP/out")"; exit 0
fi
pass run

# rows of the table under a "## TITLE" heading, header and rule left out
rows() { awk -v t="$1" 'index($0, "## " t) == 1 { on = 1; next } /^## / { on = 0 } on && /^\| / && !/^\| config/ && !/^\|---/' "$TMP/out"; }
clip=$(rows testsrc2)
avg=$(rows Average)
check clip-rows "per-clip rows: $clip" test "$(printf '%s\n' "$clip" | awk -F'|' '{ print $2 }' | tr -d ' ' | tr '\n' ,)" = "ffmpeg-bf0,mpegenc,"
check avg-rows "average rows: $avg" test "$(printf '%s\n' "$avg" | wc -l)" -eq 2
# | config | PSNR-Y | SSIM | MAD | CPU | wall | kbit/s |: 8 fields with awk -F'|' on
# the per-clip table, 7 on the average (no kbit/s range)
check clip-columns "per-clip columns: $clip" test "$(printf '%s\n' "$clip" | awk -F'|' '{ print NF }' | sort -u)" = 9
check avg-columns "average columns: $avg" test "$(printf '%s\n' "$avg" | awk -F'|' '{ print NF }' | sort -u)" = 8
self=$(printf '%s\n' "$clip" "$avg" | awk -F'|' '$2 ~ /ffmpeg-bf0/ { print $3 $4 $5 }' | tr '\n' ' ' | tr -s ' ')
check self-zero "ffmpeg-bf0 vs itself: $self" test "$self" = " +0.0 % +0.0 % +0.0 % +0.0 % +0.0 % +0.0 % "
mine=$(printf '%s\n' "$clip" | awk -F'|' '$2 ~ /mpegenc/ { print $3 $4 $5 }')
check mpegenc-bd "mpegenc BD-rates not numbers: $mine" bash -c '[[ $1 =~ ^(\ *[-+][0-9]+\.[0-9]\ %\ *){3}$ ]]' _ "$mine"
check y262-skipped "no SKIPPED line for y262" grep -q '^y262 SKIPPED: RD_Y262=none is not an executable' "$TMP/out"
check goal-lines "no goal section" grep -q '^- BD-rate PSNR-Y <= -15 % vs ffmpeg-bf0 on every clip: ' "$TMP/out"

P="$RES/points.csv"
check points-header "header: $(head -n 1 "$P")" test "$(head -n 1 "$P")" = \
    "clip,config,q,frames,bytes,kbps,psnr_y,ssim_y,ssim_db,mad,mad_frames,wall_s,user_s,sys_s"
check points-rows "$(($(wc -l <"$P") - 1)) points, expected 6" test "$(($(wc -l <"$P") - 1))" -eq 6
bad=$(awk -F, 'NR > 1 && !($5 ~ /^[0-9]+$/ && $7 ~ /^[0-9.]+$/ && $10 ~ /^[0-9.]+$/ && $13 ~ /^[0-9.e-]+$/)' "$P")
check points-numbers "rows with missing numbers: $bad" test -z "$bad"
bad=$(awk -F, 'NR > 1 { if ($2 == c && !($3 > q && $5 < b && $7 < p)) print; c = $2; q = $3; b = $5; p = $7 }' "$P")
check points-monotonic "rate or PSNR-Y not falling as q rises: $bad" test -z "$bad"
check files "bdrate.csv or table.md missing" test -s "$RES/bdrate.csv" -a -s "$RES/table.md"

err=$(python3 "$ROOT/tools/rd.py" --clips nosuch 2>&1 >/dev/null); rc=$?
check usage-error "status $rc, stderr: $err" test "$rc" -eq 2 -a "$(printf '%s\n' "$err" | wc -l)" -eq 1
