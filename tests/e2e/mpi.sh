#!/usr/bin/env bash
# End-to-end: mpegenc-mpi (one clip over MPI ranks, one stream) against the
# single-process mpegenc.  With -np 1, 2 and 3 the stream must be mpegenc's
# byte for byte in constant-quantiser, PSNR-target and bit-rate modes; it
# decodes cleanly in ffmpeg and libmpeg2 with every frame; the bit-rate
# stream passes the VBV model; the chunk plan does not depend on the rank
# count; the merged --log is mpegenc's in frame order; PNG patterns and Y4M
# and stdin work; a frame that cannot be read in one rank's chunk, and a rank killed
# mid-run, end the job with an error and no output file.  SKIP lines when
# mpegenc-mpi was not built (no mpicc) or mpirun is missing.
. "$(dirname "$0")/lib.bash"

# make exports MPEGENC_MPI, empty where it built none (no mpicc, sanitized builds)
MPI_BIN="${MPEGENC_MPI-$ROOT/mpegenc-mpi}"
if [ ! -x "$MPI_BIN" ] || ! have mpirun; then
    skip all "mpegenc-mpi not built or mpirun missing (install openmpi-bin libopenmpi-dev: make test does)"
    exit 0
fi
if ! have ffmpeg || ! have python3; then
    skip all "ffmpeg/python3 not installed"
    exit 0
fi
[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }
# ranks share the 2 cores of CI: one thread each
run_mpi() { local np=$1; shift; timeout 120 mpirun --oversubscribe --allow-run-as-root -np "$np" "$MPI_BIN" --threads 1 "$@"; }

# 50 frames = chunks of 24, 24 and 2 (default --chunk-gops 2, --gop 12)
make_y4m "$TMP/clip.y4m" 176x144 50
mkdir -p "$TMP/png"
ffmpeg -v error -f lavfi -i "testsrc2=size=176x144:rate=25" -frames:v 30 "$TMP/png/f_%03d.png"

# same NAME INPUT NP ARGS...: mpegenc-mpi -np NP writes mpegenc's stream
same() {
    local name=$1 in=$2 np=$3; shift 3
    local ref="$TMP/ref_$name.m2v" out="$TMP/mpi_${name}_$np.m2v" err
    [ -f "$ref" ] || "$MPEGENC" --quiet --threads 1 -i "$in" -o "$ref" "$@" || { fail "${name}_np$np" "mpegenc failed"; return; }
    if ! err=$(run_mpi "$np" --quiet -i "$in" -o "$out" "$@" 2>&1); then
        fail "${name}_np$np" "mpegenc-mpi failed: $err"
    elif cmp -s "$ref" "$out"; then
        pass "${name}_np$np"
    else
        fail "${name}_np$np" "stream differs from mpegenc's ($(stat -c %s "$out") vs $(stat -c %s "$ref") bytes)"
    fi
}

for np in 1 2 3; do
    same q_y4m "$TMP/clip.y4m" $np --q 4
    same psnr_y4m "$TMP/clip.y4m" $np --target-psnr 36
done
# --bitrate: mpegenc codes one chunk unless told (--chunk-gops auto), mpegenc-mpi 2
same bitrate_y4m "$TMP/clip.y4m" 3 --bitrate 300k --chunk-gops 2
# 29.97 fps, 7 pictures: a chunk brings no whole number of bytes (46713.3 bits), so chunks start on
# fractions of a byte (ratecontrol.c: chunk_contract_start); MPEG-1 too
same bitrate_2997_mpeg1 "$TMP/clip.y4m" 3 --bitrate 200k --fps 30000/1001 --format mpeg1 --gop 7 --chunk-gops 1
same bitrate_vbr "$TMP/clip.y4m" 2 --bitrate 300k --maxrate 600k --chunk-gops 2
same q_y4m_seek "$TMP/clip.y4m" 2 --q 4 --seek 5 --frames 30
same q_mpeg1_gop5 "$TMP/clip.y4m" 2 --q 6 --format mpeg1 --gop 5 --chunk-gops 1
same q_png "$TMP/png/f_%03d.png" 2 --q 5 --start 1 --gop 6 --chunk-gops 1
same q_png_seek "$TMP/png/f_%03d.png" 3 --q 5 --start 1 --seek 3 --frames 20 --gop 6 --chunk-gops 1
# ranks of 2 threads: each codes its pictures on a thread of their own
# beside its front end (MpeParam.pipeline), chunk after chunk
same q_y4m_pipelined "$TMP/clip.y4m" 2 --q 4 --threads 2
same bitrate_pipelined "$TMP/clip.y4m" 2 --bitrate 300k --chunk-gops 1 --threads 2

# stdin: rank 0 reads each chunk and sends its frames (and codes only when alone)
for np in 1 3; do
    out="$TMP/stdin$np.m2v"
    if ! err=$(run_mpi $np --quiet -i - -o "$out" --q 4 < "$TMP/clip.y4m" 2>&1); then
        fail "q_stdin_np$np" "mpegenc-mpi failed: $err"
    else
        check "q_stdin_np$np" "stream differs from mpegenc's" cmp -s "$TMP/ref_q_y4m.m2v" "$out"
    fi
done

# stdout: rank 0 writes the chunks in order into the pipe
if run_mpi 3 --quiet -i "$TMP/clip.y4m" -o - --q 4 2>"$TMP/stdout.err" | cmp -s - "$TMP/ref_q_y4m.m2v"; then
    pass q_stdout_np3
else
    fail q_stdout_np3 "stdout differs from mpegenc's stream: $(cat "$TMP/stdout.err")"
fi

out="$TMP/mpi_q_y4m_3.m2v"
if [ -f "$out" ]; then
    if d=$(ffmpeg_clean_decode "$out" </dev/null); then pass ffmpeg_clean; else fail ffmpeg_clean "$d"; fi
    n=$(probe "$out" | awk '{ print $3 }')
    check ffmpeg_frames "ffprobe counts $n frames, not 50" [ "$n" = 50 ]
    if have mpeg2dec; then
        n=$(mpeg2dec_pictures "$out")
        check mpeg2dec_pictures "libmpeg2 parses $n pictures, not 50" [ "$n" = 50 ]
    else
        skip mpeg2dec_pictures "mpeg2dec not installed"
    fi
    # one sequence_end_code, at the end
    n=$(od -An -v -tx1 "$out" | tr -d ' \n' | grep -o '000001b7' | wc -l)
    check one_end_code "$n sequence_end_codes" [ "$n" = 1 ]
fi
for out in "$TMP/mpi_bitrate_y4m_3.m2v" "$TMP/mpi_bitrate_2997_mpeg1_3.m2v" "$TMP/mpi_bitrate_vbr_2.m2v"; do
    [ -f "$out" ] || continue
    v=$(python3 "$ROOT/tests/e2e/vbv_check.py" "$out" 2>&1)
    name=$(basename "$out" .m2v)
    check "${name#mpi_}_vbv" "$v" [ "${v%%:*}" = ok ]
done

# the plan: the same chunks whatever the rank count
plans=""
for np in 1 2 3; do
    plans="$plans|$(run_mpi $np --stats -i "$TMP/clip.y4m" -o "$TMP/plan$np.m2v" 2>&1 | grep -o '[0-9]* chunks of up to [0-9]* pictures')"
done
check plan_independent_of_ranks "plans by -np 1/2/3: $plans" \
    [ "$plans" = "|3 chunks of up to 24 pictures|3 chunks of up to 24 pictures|3 chunks of up to 24 pictures" ]

# --log: the ranks' records merged in frame order, mpegenc's values (all but the times)
"$MPEGENC" --quiet --threads 1 -i "$TMP/clip.y4m" -o "$TMP/log_ref.m2v" --log "$TMP/ref.csv"
run_mpi 3 --quiet -i "$TMP/clip.y4m" -o "$TMP/log_mpi.m2v" --log "$TMP/mpi.csv" --report "$TMP/mpi.html"
if cmp -s <(cut -d, -f1-20 "$TMP/ref.csv") <(cut -d, -f1-20 "$TMP/mpi.csv") && [ "$(wc -l < "$TMP/mpi.csv")" = 51 ]; then
    pass log_merged
else
    fail log_merged "$(diff <(cut -d, -f1-20 "$TMP/ref.csv") <(cut -d, -f1-20 "$TMP/mpi.csv") | head -3)"
fi
check report_written "no report" [ -s "$TMP/mpi.html" ]

# a frame no rank can read, in the second chunk (frame 14 of chunks of 6)
mkdir -p "$TMP/bad"
cp "$TMP"/png/*.png "$TMP/bad/"
head -c 100 "$TMP/png/f_015.png" > "$TMP/bad/f_015.png"
mkdir -p "$TMP/out"
err=$(run_mpi 3 -i "$TMP/bad/f_%03d.png" --start 1 --gop 6 --chunk-gops 1 -o "$TMP/out/bad.m2v" 2>&1)
rc=$?
mine=$(printf '%s\n' "$err" | grep '^mpegenc')
error_verdict failed_rank 1 "f_015.png" "$rc" "$mine" "$(ls "$TMP/out")"

# a rank killed mid-run: mpirun ends the job, rank 0 takes the temporary away
# (MAD on every picture: ~10 s of work, killed after ~1 s)
make_y4m "$TMP/long.y4m" 352x288 120
mkdir -p "$TMP/kill"
run_mpi 2 --quiet -i "$TMP/long.y4m" -o "$TMP/kill/k.m2v" --chunk-gops 1 --iqa mad > "$TMP/kill.log" 2>&1 &
job=$!
victim=""
for _ in $(seq 100); do
    for p in $(pgrep -P "$job" 2>/dev/null) $(pgrep -P "$(pgrep -P "$job" | head -n 1)" 2>/dev/null); do
        for q in $p $(pgrep -P "$p" 2>/dev/null); do
            if tr '\0' '\n' < "/proc/$q/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then victim=$q; fi
        done
    done
    [ -n "$victim" ] && [ -n "$(ls -A "$TMP/kill")" ] && break
    sleep 0.1
done
if [ -z "$victim" ]; then
    wait $job
    skip killed_rank "could not find rank 1's process"
else
    sleep 0.3
    kill -KILL "$victim"
    wait $job
    rc=$?
    if [ $rc = 0 ]; then
        fail killed_rank "the job exited 0 after rank 1 was killed"
    elif [ -n "$(ls -A "$TMP/kill")" ]; then
        fail killed_rank "left $(ls -A "$TMP/kill")"
    else
        pass killed_rank
    fi
fi
