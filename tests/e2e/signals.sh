#!/usr/bin/env bash
# End-to-end: the Ctrl-C contract (issue 10) and the output file's mode.
# - first SIGINT: the picture in hand is finished, the stream is valid and
#   ends with a sequence end code, the log has a record per coded picture,
#   exit status 130;
# - second SIGINT: the run ends at once, no output and no temporary left.
# The encoder reads Y4M from a pipe that this test feeds frame by frame, so
# the signal arrives at a known point, not after a guessed sleep.
. "$(dirname "$0")/lib.bash"

[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }
if ! have ffmpeg || ! have python3; then
    skip all "ffmpeg or python3 not installed (make test installs them)"; exit 0
fi

make_y4m "$TMP/src.y4m" 176x144 40

# feed.py SRC MODE OUT LOG: runs mpegenc on stdin, feeds frames, signals it.
# Prints "rc=N frames_fed=N" on success of the orchestration itself.
cat > "$TMP/feed.py" <<'EOF'
import glob, signal, subprocess, sys, threading, time
src, mode, out, log, enc = sys.argv[1:6]
data = open(src, 'rb').read()
hdr_end = data.index(b'\n') + 1
frames = data[hdr_end:].split(b'FRAME\n')[1:]
assert len(frames) >= 20, len(frames)
p = subprocess.Popen([enc, '--q', '6', '--gop', '6', '--log', log, '--quiet', '-i', '-', '-o', out],
                     stdin=subprocess.PIPE, stderr=subprocess.PIPE)
fed = 0
def feed(n, close=False):
    # a writer thread: the pipe holds little, and the encoder may stop
    # reading (and close the pipe) at any point
    def run():
        global fed
        try:
            if fed == 0:
                p.stdin.write(data[:hdr_end])
            for _ in range(n):
                p.stdin.write(b'FRAME\n' + frames[fed]); fed += 1
                p.stdin.flush()
            if close:
                p.stdin.close()
        except (BrokenPipeError, ValueError):
            pass
    t = threading.Thread(target=run); t.start(); return t
def records():
    # the log is written under a temporary name until the run ends
    names = glob.glob(glob.escape(log) + '.tmp-*') or [log]
    try:
        with open(names[0]) as f:
            return max(0, sum(1 for _ in f) - 1)   # less the header
    except FileNotFoundError:
        return 0
def wait_records(pred, limit=60):
    t0 = time.time()
    while not pred(records()) and time.time() - t0 < limit:
        time.sleep(0.02)
feed(12).join()
if mode == 'once':
    # signalled while pictures are still being coded
    wait_records(lambda n: n >= 4)
    p.send_signal(signal.SIGINT)
    feed(3, close=True)
else:
    # every fed picture coded but the one held back: the encoder now waits
    # for input, so the first Ctrl-C cannot end the run before the second
    wait_records(lambda n: n >= 11)
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
err = p.stderr.read().decode()
rc = p.wait()
print(f'rc={rc} fed={fed}')
sys.stderr.write(err)
EOF

OUT="$TMP/out"
mkdir -p "$OUT"

# --- first Ctrl-C: finish and close the stream ------------------------------
res=$(python3 "$TMP/feed.py" "$TMP/src.y4m" once "$OUT/a.m2v" "$OUT/a.csv" "$MPEGENC" 2>"$TMP/err1")
rc=${res#rc=}; rc=${rc%% *}
check once-exit-130 "status $rc; stderr: $(cat "$TMP/err1")" [ "$rc" = 130 ]
check once-says-interrupted "stderr: $(cat "$TMP/err1")" grep -q "interrupted: .*a.m2v holds the [0-9]* frames" "$TMP/err1"
coded=$(sed -n 's/.*holds the \([0-9]*\) frames.*/\1/p' "$TMP/err1")
if [ -s "$OUT/a.m2v" ]; then
    pass once-stream-kept
    tail_hex=$(tail -c 4 "$OUT/a.m2v" | od -An -tx1 | tr -d ' \n')
    check once-sequence-end-code "stream ends with $tail_hex" [ "$tail_hex" = 000001b7 ]
    n=$(probe "$OUT/a.m2v" | awk '{ print $3 }')
    check once-decodes-all "ffprobe counts $n frames, encoder says $coded" [ "$n" = "$coded" ]
    msg=$(ffmpeg_clean_decode "$OUT/a.m2v")
    check once-clean-decode "$msg" [ -z "$msg" ]
    check once-stopped-early "coded ${coded:-?} of the 15 fed" [ "${coded:-0}" -ge 4 -a "${coded:-99}" -le 15 ]
    recs=$(python3 -c 'import csv,sys; print(len(list(csv.DictReader(open(sys.argv[1])))))' "$OUT/a.csv" 2>&1)
    check once-log-complete "log has $recs records, stream $coded pictures" [ "$recs" = "$coded" ]
else
    fail once-stream-kept "no $OUT/a.m2v; stderr: $(cat "$TMP/err1")"
fi
left=$(ls -A "$OUT" | grep -v '^a\.m2v$\|^a\.csv$')
check once-no-temporary "left: $left" [ -z "$left" ]

# --- second Ctrl-C: abort, remove the temporary -----------------------------
rm -rf "$OUT"; mkdir -p "$OUT"
res=$(python3 "$TMP/feed.py" "$TMP/src.y4m" twice "$OUT/b.m2v" "$OUT/b.csv" "$MPEGENC" 2>"$TMP/err2")
rc=${res#rc=}; rc=${rc%% *}
# killed by SIGINT: Python reports -2
check twice-killed-by-sigint "status $rc; stderr: $(cat "$TMP/err2")" [ "$rc" = -2 ]
# the log too: a run killed outright leaves every older file as it was
left=$(ls -A "$OUT")
check twice-no-output "left: $left" [ -z "$left" ]

# --- a finished stream has the mode fopen would give it (umask honoured) ----
make_y4m "$TMP/small.y4m" 64x64 2
for mask in 022 077 002; do
    rm -f "$OUT/m.m2v"
    (umask $mask && "$MPEGENC" --quiet -i "$TMP/small.y4m" -o "$OUT/m.m2v")
    mode=$(stat -c %a "$OUT/m.m2v" 2>/dev/null)
    want=$(printf '%o' $(( 0666 & ~0$mask )))
    check "mode-umask-$mask" "mode $mode, expected $want" [ "$mode" = "$want" ]
done
exit 0
