#!/usr/bin/env bash
# End-to-end: make bench's script (tools/bench.sh) in its reduced mode, on a
# 2-frame 256x256 PNG clip from ffmpeg's testsrc2 with one timed run: it
# exits 0, prints the tables, and writes CSVs with the right columns, numeric
# values and one row per configuration (every available backend, both ffmpeg
# settings, mpeg2enc when installed; q 2, 5, 10, and the bitrate run but for
# mpeg2enc); the numbers it reports for a stream match an encode and a PSNR
# done here independently; the BD-rate code passes its known cases; --plot
# writes SVG.
. "$(dirname "$0")/lib.bash"

[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }
if ! have ffmpeg; then skip all "ffmpeg not installed (make test installs it)"; exit 0; fi
if ! have python3; then skip all "python3 not installed (BD-rate and plots need it)"; exit 0; fi

# BD-rate on known curves (identical, rates x 0.9 and x 1.25, analytic shifts)
python3 "$ROOT/tools/bdrate.py" selftest | sed -E "s#^(PASS|FAIL) #\1 $E2E_NAME/#"

mkdir -p "$TMP/clip"
ffmpeg -v error -f lavfi -i testsrc2=size=256x256:rate=25 -frames:v 2 "$TMP/clip/frame_%02d.png"
RES="$TMP/results"
if ! bash "$ROOT/tools/bench.sh" --clip "$TMP/clip" --runs 1 --warmup 0 --iqa-frames 1 --plot \
        --out "$RES" >"$TMP/out" 2>"$TMP/err"; then
    fail run "exit status $?: $(tail -n 5 "$TMP/err")"; exit 0
fi
pass run

# expected rows: configurations x inputs x settings; a GPU backend that runs
# on the CPU here (OpenCL on PoCL, "not a GPU") is timed at q 5 from the Y4M only
backends=$("$MPEGENC" --list-backends | awk '$2 ~ /^available/ { print $1 }')
on_cpu=$("$MPEGENC" --list-backends | awk '$2 ~ /^available/ && /not a GPU/ && $1 != "cpu" { print $1 }')
settings="q,2 q,5 q,10 bitrate,8M"
expect=""
for in in png y4m; do
    for s in $settings; do
        for b in $backends; do
            [ "$s" = bitrate,8M ] && ! "$MPEGENC" --help | grep -c -- --bitrate >/dev/null && continue
            printf '%s\n' $on_cpu | grep -qx "$b" && [ "$s,$in" != q,5,y4m ] && continue
            expect="$expect mpegenc-$b,$in,$s"
        done
        expect="$expect ffmpeg,$in,$s ffmpeg-rd,$in,$s"
        have mpeg2enc && [ $in = y4m ] && [ $s != bitrate,8M ] && expect="$expect mpeg2enc,$in,$s"
    done
done
nexp=$(echo $expect | wc -w)

S="$RES/summary.csv"
cols="config,label,input,mode,setting,runs,frames,wall_s,fps,cpu_s,rss_mib,bytes,kbps,bytes_vary,psnr_y,mad,bliinds,iqa_frames"
check summary-columns "header is not $cols: $(head -n 1 "$S")" test "$(head -n 1 "$S")" = "$cols"
got=$(awk -F, 'NR > 1 { print $1 "," $3 "," $4 "," $5 }' "$S" | sort)
want=$(printf '%s\n' $expect | sort)
check summary-rows "expected $nexp rows ($(echo $want)), got: $(echo $got)" test "$got" = "$want"
# every row: 18 fields, counts and measures numeric and positive, 1 run of
# 2 frames, kbit/s = bytes * 8 * 25 / 2 / 1000, fps = frames / wall
bad=$(awk -F, 'NR > 1 {
    num = "^[0-9]+([.][0-9]+)?$"
    if (NF != 18) { print $1 " " $3 " " $5 ": " NF " fields"; next }
    if ($6 != 1 || $7 != 2) print $1 " " $3 " " $5 ": runs " $6 " frames " $7
    for (i = 8; i <= 13; i++) if ($i !~ num && !(i == 11 && $i == "")) print $1 " " $3 " " $5 ": column " i " not numeric: " $i
    if ($12 <= 0 || $8 <= 0) print $1 " " $3 " " $5 ": zero bytes or time"
    k = $12 * 8 * 25 / 2 / 1000; if (k - $13 > 0.5 || $13 - k > 0.5) print $1 " " $3 " " $5 ": kbit/s " $13 " for " $12 " bytes"
    f = 2 / $8; if (f / $9 > 1.01 || $9 / f > 1.01) print $1 " " $3 " " $5 ": fps " $9 " for wall " $8
    if ($15 !~ num || $15 < 20 || $15 > 99) print $1 " " $3 " " $5 ": PSNR-Y " $15
    if ($4 == "q" && $5 == 5 && ($16 !~ /^[0-9.]+$/ || $17 !~ /^[0-9.]+$/ || $18 != "0")) print $1 " " $3 ": MAD/BLIINDS " $16 "/" $17 " frames " $18
    }' "$S")
check summary-values "$bad" test -z "$bad"

# numbers against an encode and a PSNR made here: ffmpeg and mpegenc cpu at q 5
ffmpeg -v error -framerate 25 -i "$TMP/clip/frame_%02d.png" -pix_fmt yuv420p -f yuv4mpegpipe "$TMP/src.y4m"
ffmpeg -v error -i "$TMP/src.y4m" -c:v mpeg2video -pix_fmt yuv420p -q:v 5 -f mpeg2video "$TMP/f5.m2v"
"$MPEGENC" --quiet --backend cpu -i "$TMP/src.y4m" -o "$TMP/m5.m2v" --q 5
for pair in "ffmpeg $TMP/f5.m2v" "mpegenc-cpu $TMP/m5.m2v"; do
    read -r cfg f <<<"$pair"
    row=$(awk -F, -v c="$cfg" '$1 == c && $3 == "y4m" && $4 == "q" && $5 == 5 { print $12, $15 }' "$S")
    read -r bytes psnr <<<"$row"
    mine=$(psnr_y "$f" "$TMP/src.y4m")
    if [ "$bytes" = "$(stat -c %s "$f")" ] && awk -v a="$psnr" -v b="$mine" 'BEGIN { exit !(a - b < 1e-4 && b - a < 1e-4) }'; then
        pass "same-as-direct-$cfg"
    else
        fail "same-as-direct-$cfg" "bench: $bytes bytes PSNR $psnr; direct: $(stat -c %s "$f") bytes PSNR $mine"
    fi
done
# lower q, more bits and higher PSNR, for every configuration with both
bad=$(awk -F, 'NR > 1 && $4 == "q" { k = $1 " " $3; b[k, $5] = $12; p[k, $5] = $15; keys[k] = 1 }
    END { for (k in keys) if (((k, 2) in b) && ((k, 10) in b) && !(b[k, 2] > b[k, 10] && p[k, 2] > p[k, 10])) print k ": q2 " b[k, 2] "/" p[k, 2] " q10 " b[k, 10] "/" p[k, 10] }' "$S")
check q-monotone "$bad" test -z "$bad"

# runs.csv: one timed run per configuration
R="$RES/runs.csv"
check runs-csv "$(wc -l <"$R") lines for $nexp configurations" test "$(awk -F, 'NR > 1 && $4 == 1' "$R" | wc -l)" -eq "$nexp"

# BD-rate: one row per configuration and input, ffmpeg's own 0, the rest numeric
B="$RES/bdrate.csv"
# a curve: a configuration and input with 2 or more q points
ncurves=$(awk -F, 'NR > 1 && $4 == "q" { n[$1 "," $3]++ } END { for (k in n) if (n[k] >= 2) print k }' "$S" | wc -l)
bad=$(awk -F, 'NR > 1 { n++; if ($5 !~ /^-?[0-9]+[.][0-9]+$/) print $1 " " $3 ": " $5
        if ($1 == "ffmpeg" && ($5 + 0 > 1e-6 || $5 + 0 < -1e-6)) print "ffmpeg against itself: " $5 }
    END { if (n != want) print n " rows, expected " want }' want="$ncurves" "$B")
check bdrate-csv "$bad" test -z "$bad"
check bdrate-table "no BD-rate table on stdout" grep -q '^### BD-rate' "$TMP/out"

# Markdown: the speed table has a row per configuration, the stage table a
# row per mpegenc configuration and input
rows=$(awk '/^### Speed/ { on = 1; next } /^###/ { on = 0 } on && /^\| / && !/^\| encoder/' "$TMP/out" | wc -l)
check table-rows "$rows table rows for $nexp configurations" test "$rows" -eq "$nexp"
srows=$(awk '/^### mpegenc stages/ { on = 1; next } /^###/ { on = 0 } on && /^\| mpegenc/' "$TMP/out" | wc -l)
nstage=$(printf '%s\n' $expect | awk -F, '$1 ~ /^mpegenc-/ && $3 == "q" && $4 == 5' | wc -l)
check stage-rows "$srows stage rows for $nstage mpegenc configurations at q 5" test "$srows" -eq "$nstage"
bad=$(awk -F, 'NR > 1 && $4 == "encode" && $5 !~ /^[0-9.]+$/' "$RES/stages.csv")
check stages-csv "encode stage not numeric: $bad" test -z "$bad" -a "$(grep -c ',encode,' "$RES/stages.csv")" -eq "$srows"

# threads: every backend that is not emulated on the CPU, at 1 and all cores
# (one row when this machine has one core), numbers where numbers belong
nth=$(printf '%s\n' $backends | while read -r b; do printf '%s\n' $on_cpu | grep -qx "$b" || echo "$b"; done | wc -l)
[ "$(nproc)" -gt 1 ] && nth=$((nth * 2))
trows=$(awk '/^### mpegenc threads/ { on = 1; next } /^###/ { on = 0 } on && /^\| mpegenc/' "$TMP/out" | wc -l)
check thread-rows "$trows thread rows, expected $nth" test "$trows" -eq "$nth"
bad=$(awk -F, 'NR > 1 && !($3 ~ /^[0-9]+$/ && $4 ~ /^[0-9.]+$/ && $6 ~ /^[0-9.]+$/ && $7 ~ /^[0-9.]+$/)' "$RES/threads.csv")
check threads-csv "rows with missing numbers: $bad" test -z "$bad" -a "$(($(wc -l <"$RES/threads.csv") - 1))" -eq "$nth"
one=$(awk -F, 'NR > 1 && $3 == 1 { print $1 }' "$RES/threads.csv" | sort | tr '\n' ' ')
all=$(awk -F, -v n="$(nproc)" 'NR > 1 && $3 == n { print $1 }' "$RES/threads.csv" | sort | tr '\n' ' ')
check threads-one-and-all "--threads 1: $one; --threads $(nproc): $all" test "$one" = "$all" -o "$(nproc)" -eq 1

# plots: well-formed SVG with one polyline per curve
for f in rd fps; do
    check "svg-$f" "$RES/$f.svg not well-formed SVG" python3 -c '
import sys, xml.etree.ElementTree as E
r = E.parse(sys.argv[1]).getroot()
sys.exit(0 if r.tag.endswith("svg") else 1)' "$RES/$f.svg"
done
check svg-rd-curves "expected $ncurves curves" test "$(grep -c '<polyline' "$RES/rd.svg")" -eq "$ncurves"

# --long: the 2 frames ping-ponged (0 1 1 0 0 1 ...) into 10; q 5 only, and
# mpegenc's in-loop metric and quality-target rows; the ratio to ffmpeg in the speed table
RL="$TMP/long"
if bash "$ROOT/tools/bench.sh" --clip "$TMP/clip" --long 10 --runs 1 --warmup 0 --backends cpu \
        --encoders "mpegenc ffmpeg" --out "$RL" >"$TMP/outl" 2>"$TMP/errl"; then
    got=$(awk -F, 'NR > 1 { print $1 "," $3 "," $4 "," $5 "," $7 }' "$RL/summary.csv" | sort | tr '\n' ' ')
    want=$(for in in png y4m; do for r in "mpegenc-cpu,$in,q,5" "mpegenc-cpu,$in,q-iqa-all,5" \
               "mpegenc-cpu,$in,target-mad,9" "mpegenc-cpu,$in,target-bliinds,30" "ffmpeg,$in,q,5"; do echo "$r,10"; done; done | sort | tr '\n' ' ')
    check long-rows "got $got, want $want" test "$got" = "$want"
    # ffmpeg against itself 1.00x; mpegenc's q 5 ratio = its fps / ffmpeg's
    bad=$(awk -F'|' '/^### Speed/ { on = 1; next } /^###/ { on = 0 } on && /^\| / && !/^\| encoder/ { gsub(/ /, "", $5); gsub(/ /, "", $7)
            if ($2 == " ffmpeg mpeg2video " && $5 != "1.00x") print "ffmpeg " $3 ": " $5
            if ($5 !~ /^[0-9]+[.][0-9][0-9]x$/) print $2 $3 $4 ": ratio " $5 }' "$RL/table.md")
    check long-ratios "$bad" test -z "$bad"
    want=$(awk -F, '$3 == "y4m" && $4 == "q" { f[$1] = $9 } END { printf "%.2fx", f["mpegenc-cpu"] / f["ffmpeg"] }' "$RL/summary.csv")
    got=$(awk -F'|' '/^### Speed/ { on = 1; next } /^###/ { on = 0 }
            on && $2 == " mpegenc cpu " && $3 == " y4m " && $4 == " q 5 " { gsub(/ /, "", $5); print $5 }' "$RL/table.md")
    check long-ratio-value "table $got, summary.csv $want" test "$got" = "$want"
    check long-clip-note "the header does not say ping-ponged" grep -q 'ping-ponged into 10 frames' "$RL/table.md"
else
    fail long-run "exit status: $(tail -n 3 "$TMP/errl")"
fi
check long-with-frames "--long with --frames accepted" \
    sh -c '! bash "$1" --clip "$2" --long 10 --frames 3 --out "$3" >/dev/null 2>&1' sh "$ROOT/tools/bench.sh" "$TMP/clip" "$TMP/x"
