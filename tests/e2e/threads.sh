#!/usr/bin/env bash
# End-to-end: the threaded pipeline writes the same bytes whatever the
# number of slice threads, reader threads or primitives (DESIGN.md invariant
# 2), and the same as the other front-end backends; --stats reports every
# stage.  The pre-threading encoder cannot be run in CI, so thread counts are
# compared with each other (1 thread is the old serial order exactly: one
# thread codes the slices in row order into one writer after another) and
# with --dsp c (the C references throughout).
. "$(dirname "$0")/lib.bash"

[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }
if ! have ffmpeg; then skip all "ffmpeg not installed (make test installs it)"; exit 0; fi

make_y4m "$TMP/odd.y4m" 330x250 9 mandelbrot
make_y4m "$TMP/small.y4m" 64x48 7
# taller than 175 macroblock rows: the MPEG-1 picture's last slice spans rows
# 174.. (slice start codes stop at 0xAF), MPEG-2 uses the position extension
make_y4m "$TMP/tall.y4m" 48x2864 3
SOLAR="$ROOT/samples/solar/solar_%d.png"

# same NAME ARGS...: encode with --threads 1, 2, 7 (and read threads 0, 1, 3),
# and with the C references; every stream and reconstruction identical
same() {
    local name=$1; shift
    local base="$TMP/$name.t1" ok=1 detail="" t
    if ! "$MPEGENC" -y --quiet --threads 1 --read-threads 0 "$@" -o "$base.m2v" --recon "$base.y4m" 2>"$TMP/err"; then
        fail "$name" "encode failed: $(cat "$TMP/err")"; return
    fi
    for t in "2 1" "7 3" "3 0 --dsp c" "16 2"; do
        local th rt extra out
        read -r th rt extra <<<"$t"
        out="$TMP/$name.t$th"
        if ! "$MPEGENC" -y --quiet --threads $th --read-threads $rt $extra "$@" -o "$out.m2v" --recon "$out.y4m" 2>"$TMP/err"; then
            ok=0; detail="$detail; threads $th failed: $(cat "$TMP/err")"; continue
        fi
        cmp -s "$base.m2v" "$out.m2v" || { ok=0; detail="$detail; stream differs at --threads $th $extra: $(cmp "$base.m2v" "$out.m2v" 2>&1)"; }
        cmp -s "$base.y4m" "$out.y4m" || { ok=0; detail="$detail; recon differs at --threads $th $extra"; }
    done
    if [ $ok = 1 ]; then pass "$name-identical-threads-1-2-7-16-and-c"; else fail "$name-identical" "${detail#; }"; fi
}

same odd-mpeg2-R16 --backend cpu -i "$TMP/odd.y4m" --format mpeg2 --q 3 --gop 4
same odd-mpeg1-R64 --backend cpu -i "$TMP/odd.y4m" --format mpeg1 --q 10 --search 64
same small-mpeg2-q1 --backend cpu -i "$TMP/small.y4m" --format mpeg2 --q 1 --gop 3
same solar-png-mpeg2 --backend cpu -i "$SOLAR" --format mpeg2 --q 5
same solar-png-mpeg1-q2 --backend cpu -i "$SOLAR" --format mpeg1 --q 2 --gop 3
same tall-mpeg1 --backend cpu -i "$TMP/tall.y4m" --format mpeg1 --q 6
same tall-mpeg2 --backend cpu -i "$TMP/tall.y4m" --format mpeg2 --q 6
same intra-only --backend cpu -i "$TMP/odd.y4m" --format mpeg2 --q 31 --gop 1

# MpeParam.pipeline: without --recon the pictures are coded on a thread of
# their own while the next frames go through the front end; the stream and
# every logged value (the per-frame log less its timing columns) are those
# of the lock-step coding that --recon keeps, at 2, 3 and 16 threads
pipelined() {
    local name=$1; shift
    local base="$TMP/pipe-$name" ok=1 detail="" th
    if ! "$MPEGENC" -y --quiet --threads 3 "$@" -o "$base.m2v" --recon "$base.y4m" --log "$base.csv" 2>"$TMP/err"; then
        fail "pipeline-$name" "lock-step encode failed: $(cat "$TMP/err")"; return
    fi
    cut -d, -f1-22 "$base.csv" > "$base.cols"
    for th in 2 3 16; do
        local out="$TMP/pipe-$name.p$th"
        if ! "$MPEGENC" -y --quiet --threads $th "$@" -o "$out.m2v" --log "$out.csv" 2>"$TMP/err"; then
            ok=0; detail="$detail; threads $th failed: $(cat "$TMP/err")"; continue
        fi
        cmp -s "$base.m2v" "$out.m2v" || { ok=0; detail="$detail; stream differs at --threads $th: $(cmp "$base.m2v" "$out.m2v" 2>&1)"; }
        cut -d, -f1-22 "$out.csv" | cmp -s - "$base.cols" || { ok=0; detail="$detail; log differs at --threads $th"; }
    done
    if [ $ok = 1 ]; then pass "pipeline-$name-same-stream-and-log"; else fail "pipeline-$name" "${detail#; }"; fi
}

make_y4m "$TMP/pan.y4m" 352x288 40 mandelbrot
pipelined bframes-iqa --backend cpu -i "$TMP/pan.y4m" --q 5 --iqa ssim
pipelined bframes4-gop7 --backend cpu -i "$TMP/pan.y4m" --q 4 --bframes 4 --gop 7 --ip-ratio 1
pipelined bitrate --backend cpu -i "$TMP/pan.y4m" --bitrate 1500k
pipelined target-psnr --backend cpu -i "$TMP/pan.y4m" --target-psnr 38 --frames 16
pipelined intra-only --backend cpu -i "$TMP/odd.y4m" --q 8 --gop 1
pipelined opencl --backend opencl -i "$TMP/pan.y4m" --q 6 --frames 20

# the threaded streams still decode cleanly
"$MPEGENC" -y --quiet --threads 7 -i "$TMP/odd.y4m" -o "$TMP/d.m2v" --q 3
if out=$(ffmpeg_clean_decode "$TMP/d.m2v"); then pass "threads-7-ffmpeg-clean"; else fail "threads-7-ffmpeg-clean" "$out"; fi

# from stdin, read ahead on its reader thread
if "$MPEGENC" -y --quiet --threads 3 -i - -o "$TMP/stdin.m2v" --q 3 --gop 4 --backend cpu < "$TMP/odd.y4m" 2>"$TMP/err" &&
   cmp -s "$TMP/stdin.m2v" "$TMP/odd-mpeg2-R16.t1.m2v"; then
    pass "stdin-read-ahead-identical"
else
    fail "stdin-read-ahead-identical" "$(cat "$TMP/err") $(cmp "$TMP/stdin.m2v" "$TMP/odd-mpeg2-R16.t1.m2v" 2>&1)"
fi

# every other backend that runs here, at several thread counts, against cpu
for b in $("$MPEGENC" --list-backends | awk '$2 ~ /^available/ { print $1 }' | grep -v '^cpu$'); do
    for th in 1 7; do
        if "$MPEGENC" -y --quiet --backend "$b" --threads $th -i "$SOLAR" -o "$TMP/$b.m2v" --q 5 2>"$TMP/err" &&
           cmp -s "$TMP/$b.m2v" "$TMP/solar-png-mpeg2.t1.m2v"; then
            pass "$b-threads-$th-identical-to-cpu"
        else
            fail "$b-threads-$th-identical-to-cpu" "$(cat "$TMP/err") $(cmp "$TMP/$b.m2v" "$TMP/solar-png-mpeg2.t1.m2v" 2>&1)"
        fi
    done
done

# one pool for the run (common/threads.h): with --threads 2 the slices, the
# cpu front end, MAD, BLIINDS-II and PNG decoding share 2 threads, the main
# one included; beside them only the front-end task, the two quality lanes
# (encoder.c QA_LANES_CPU: pictures scored while later ones are coded;
# their C metrics run on the pool) and the PNG reader thread (the
# pipeline's stage_task, which copies a frame beside the front end's other
# work, opens only from 4 threads: STAGE_TASK_THREADS).  Threads alive are sampled from /proc while it runs
# (a sample can miss a peak, never invent one); components that each sized
# a pool to --threads had 9 alive here.
if [ -d /proc/self/task ]; then
    "$MPEGENC" -y --quiet --threads 2 --read-threads 2 --backend cpu --iqa all -i "$SOLAR" \
        -o "$TMP/pool.m2v" 2>"$TMP/err" &
    pid=$! peak=0
    while kill -0 $pid 2>/dev/null; do
        n=$(ls /proc/$pid/task 2>/dev/null | wc -l)
        [ "$n" -gt "$peak" ] && peak=$n
    done
    if ! wait $pid; then
        fail one-pool-threads "encode failed: $(cat "$TMP/err")"
    else
        check one-pool-threads "$peak threads alive, expected at most 2 + 4" [ "$peak" -le 6 ]
    fi
else
    skip one-pool-threads "no /proc/PID/task here"
fi

# --stats: every stage in the summary; with -v a line of times per frame
err=$("$MPEGENC" -y --stats --threads 2 --backend cpu -i "$SOLAR" -o "$TMP/s.m2v" 2>&1 >/dev/null); rc=$?
missing=""
for stage in read "front end" download code quality write encode wall "for the coder" "slice threads 2"; do
    printf '%s' "$err" | grep -q "$stage" || missing="$missing '$stage'"
done
check stats-summary "rc $rc, missing:$missing in: $err" [ $rc = 0 -a -z "$missing" ]
# lock-step (--recon): how much of the front end the coding hid
err=$("$MPEGENC" -y --stats --threads 2 --backend cpu -i "$SOLAR" -o "$TMP/s.m2v" --recon "$TMP/s.y4m" 2>&1 >/dev/null)
printf '%s' "$err" | grep -q "hidden"
check stats-summary-lock-step "no 'hidden' in: $err" [ $? = 0 ]
n=$("$MPEGENC" -y -v --stats --backend cpu -i "$SOLAR" -o "$TMP/s.m2v" 2>&1 >/dev/null | grep -c "ms: read .* code ")
check stats-per-frame "$n per-frame time lines, expected 8" [ "$n" = 8 ]
n=$("$MPEGENC" -y --backend cpu -i "$SOLAR" -o "$TMP/s.m2v" 2>&1 >/dev/null | grep -c "stages")
check no-stats-without-flag "stage table printed without --stats" [ "$n" = 0 ]
exit 0
