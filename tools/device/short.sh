#!/usr/bin/env bash
# Issue 20's short-run goal on the device machine: a 1-frame run within
# 50 ms of the cpu backend's, and the long clip's fps unchanged.  From
# binaries built here and staged in DIR (bin/mpegenc-base: the reference
# build, bin/mpegenc-new: the build under test, optionally
# bin/mpegenc-trace: a build that prints "TRACE <ms> <what>" under
# MPE_TRACE=1; lib/, solar/, bin/ffmpeg-static as for startup.sh):
#  1. where a 1-frame run's time goes (the trace build, if staged)
#  2. 1-frame 2048² runs, whole process, median of $ROUNDS, each binary's
#     cpu, auto, cuda, and auto from a pipe (length unknown) in turn, round
#     after round (alternated); the new build's -v lines of each
#  3. with CROSSOVER=1: N-frame runs, cpu vs cuda (base) and auto (new): the
#     crossover that --backend auto's length rule stands for (gpu/frontend.c)
#  4. the 400-frame ping-pong clip, base vs new default, alternated (the
#     order swapped every other round), best and median of $LONG_ROUNDS
#  5. the streams: every 1-frame output and the long ones cmp'd
#  6. bin/test_gpu_frontend, if staged
#   tools/device/short.sh [DIR]
set -u
D=${1:-.devrun-short}
O=${OUT:-/tmp}
ROUNDS=${ROUNDS:-7}
LONG_ROUNDS=${LONG_ROUNDS:-3}
# env.sh beside this script, or the repository's where a copy of it runs
# from the staged folder
E=$(dirname "${BASH_SOURCE[0]}")/env.sh
[ -f "$E" ] || E=tools/device/env.sh
. "$E"
B="$D/bin/mpegenc-base"
N="$D/bin/mpegenc-new"
T="$D/bin/mpegenc-trace"
FF=$(command -v ffmpeg || echo "$D/bin/ffmpeg-static")
W=/tmp/short; mkdir -p $W

echo "== machine: cores $(nproc), $(nvidia-smi -L 2>/dev/null | head -1)"
"$FF" -v error -y -i "$D/solar/solar_%d.png" -pix_fmt yuv420p -f yuv4mpegpipe $W/s10.y4m || exit 1
python3 - $W <<'EOF' || exit 1
import sys
w = sys.argv[1]
d = open(w + '/s10.y4m', 'rb').read()
h = d.index(b'\n') + 1
fs = 2048 * 2048 * 3 // 2 + 6
frames = [d[h + i * fs:h + (i + 1) * fs] for i in range(10)]
open(w + '/s1.y4m', 'wb').write(d[:h] + frames[0])
order = (list(range(10)) + list(range(9, -1, -1))) * 20
open(w + '/s400.y4m', 'wb').write(d[:h] + b''.join(frames[i] for i in order))
EOF

# wall BIN ARGS...: seconds of one whole run (stdout, stderr dropped)
wall() {
    local t0 t1
    t0=$(date +%s%N)
    "$@" >/dev/null 2>&1 || echo "FAILED: $*" >&2
    t1=$(date +%s%N)
    awk -v a=$t0 -v b=$t1 'BEGIN { printf "%.4f\n", (b - a) / 1e9 }'
}
stat_of() { sort -n | awk '{ v[NR] = $1 } END { printf "median %.4f  best %.4f  (n %d)", v[int((NR + 1) / 2)], v[1], NR }'; }

if [ -x "$T" ]; then
    echo "== 1. trace of 1-frame runs (ms from main; the last line runs after the CUDA runtime's exit teardown)"
    for be in cuda auto; do
        for r in 1 2; do
            t0=$(date +%s%N)
            MPE_TRACE=1 "$T" -y --quiet --backend $be -i $W/s1.y4m -o $W/trace.m2v 2>$W/trace.err
            t1=$(date +%s%N)
            echo "-- $be, run $r: whole process $(( (t1 - t0) / 1000000 )) ms"
            awk '/^TRACE/ { if (!s) s = $2; printf "%8.1f  %s\n", $2 - s, substr($0, index($0, $3)) }' $W/trace.err
        done
    done
fi

echo "== 2. 1 frame 2048², whole process (s), $ROUNDS rounds alternated"
: > $W/one.txt
for r in $(seq "$ROUNDS"); do
    for b in base new; do
        bin=$B; [ $b = new ] && bin=$N
        for be in cpu auto cuda; do
            echo "$b $be $(wall "$bin" -y --quiet --backend $be -i $W/s1.y4m -o $W/one_${b}_$be.m2v)" >> $W/one.txt
        done
        echo "$b pipe $(wall sh -c "cat $W/s1.y4m | $bin -y --quiet -i - -o $W/one_${b}_pipe.m2v")" >> $W/one.txt
    done
done
for b in base new; do
    for be in cpu auto cuda pipe; do
        echo "$b $be: $(awk -v b=$b -v e=$be '$1 == b && $2 == e { print $3 }' $W/one.txt | stat_of)"
    done
done
for be in auto cuda; do
    echo "-- new, $be, -v:"
    "$N" -y -v --backend $be -i $W/s1.y4m -o $W/v.m2v 2>&1 | grep -E "front end: (--backend|using|backend|')|, backend"
done
echo "-- new, pipe, -v:"
cat $W/s1.y4m | "$N" -y -v -i - -o $W/v.m2v 2>&1 | grep -E "front end: (--backend|using|backend|')|, backend"

[ "${CROSSOVER:-0}" = 1 ] && echo "== 3. N frames (--frames), whole process (s), best of 2: base cpu, base cuda, new auto"
[ "${CROSSOVER:-0}" = 1 ] && for n in 8 16 32 64 128; do
    line="N=$n"
    for c in "$B cpu" "$B cuda" "$N auto"; do
        set -- $c
        t=$( { wall $1 -y --quiet --backend $2 --frames $n -i $W/s400.y4m -o $W/n.m2v
               wall $1 -y --quiet --backend $2 --frames $n -i $W/s400.y4m -o $W/n.m2v; } | sort -n | head -1)
        line="$line  $(basename $1 | sed 's/mpegenc-//') $2 $t"
    done
    echo "$line"
done

echo "== 4. 400 frames, default settings, whole process, $LONG_ROUNDS rounds alternated (fps)"
: > $W/long.txt
for r in $(seq "$LONG_ROUNDS"); do
    order="base new"; [ $((r % 2)) = 0 ] && order="new base"
    for b in $order; do
        bin=$B; [ $b = new ] && bin=$N
        echo "$b $(wall "$bin" -y --quiet -i $W/s400.y4m -o $W/long_$b.m2v)" >> $W/long.txt
    done
done
for b in base new; do
    awk -v b=$b '$1 == b { print 400 / $2 }' $W/long.txt | sort -rn |
        awk -v b=$b '{ v[NR] = $1 } END { printf "%s: best %.1f fps  median %.1f fps\n", b, v[1], v[int((NR + 1) / 2)] }'
done
"$N" -y -v -i $W/s400.y4m -o $W/v400.m2v 2>&1 | grep -E "front end: (--backend|using|'cuda')"

echo "== 5. streams"
for f in $W/one_*.m2v; do
    cmp -s $W/one_base_cpu.m2v "$f" && echo "$(basename "$f") == base cpu" || echo "$(basename "$f"): DIFFERS"
done
cmp -s $W/long_base.m2v $W/long_new.m2v && echo "400 frames: new == base" || echo "400 frames: DIFFERS"
if [ -x "$D/bin/test_gpu_frontend" ]; then
    echo "== 6. test_gpu_frontend (the CUDA and OpenCL cases on this GPU)"
    timeout 240 "$D/bin/test_gpu_frontend" 2>&1 | grep -E "^(PASS|FAIL|SKIP)|not exercised|^ " | head -40
fi
cp $W/one.txt $W/long.txt "$O"/ 2>/dev/null
exit 0
