#!/usr/bin/env bash
# End-to-end: outputs never destroy what their names point at (issue 17,
# items 1, 2, 7 and 8a/8b).
# - a device, FIFO or descriptor is written in place, never replaced; a
#   symbolic link is followed and stays a link;
# - no output may be an input (also through a hard link or a PNG of the
#   input pattern) or another output; an existing file is replaced only
#   with -y, never with -n;
# - every output path is checked before the encode; a failed or killed run
#   (SIGPIPE, SIGALRM, SIGXFSZ) leaves no temporary and older files intact;
# - a Ctrl-C while waiting on stdin ends with 130; option conflicts exit 2.
. "$(dirname "$0")/lib.bash"

[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }
if ! have ffmpeg || ! have python3; then
    skip all "ffmpeg or python3 not installed (make test installs them)"; exit 0
fi

make_y4m "$TMP/clip.y4m" 96x64 6
CLIP=$TMP/clip.y4m
make_y4m "$TMP/long.y4m" 352x288 30
cp "$CLIP" "$TMP/clip.orig"
W=$TMP/w
DEV=$TMP/dev
mkdir -p "$W" "$DEV"
enc() { "$MPEGENC" --quiet -i "$CLIP" --q 8 "$@"; }

# temporaries_in DIR: any *.tmp-* name left in DIR
temporaries_in() { ls -A "$1" | grep '\.tmp-' || true; }

# refuse NAME STATUS PATTERN ARGS...: one line matching PATTERN, the status,
# the input unchanged and no temporary left in $W
refuse() {
    local name=$1 want=$2 pat=$3 err rc; shift 3
    err=$("$MPEGENC" --quiet "$@" 2>&1 >/dev/null); rc=$?
    error_verdict "$name" "$want" "$pat" "$rc" "$err" "$(temporaries_in "$W")"
}

# --- 1. devices, FIFOs, links, descriptors: written in place ----------------
# Root could replace the real /dev/null, /dev/full or /dev/stdout if the
# encoder regressed (the bug this checks did exactly that), so as root the
# devices are private copies made with mknod and /dev/stdout a private link
# to /proc/self/fd/1; other users cannot harm the real ones and use them.
if [ "$(id -u)" = 0 ]; then
    if mknod "$W/null" c 1 3 && mknod "$DEV/full" c 1 7 2>/dev/null; then :; else
        skip devices "mknod failed"; exit 0
    fi
    NULLDEV=$W/null FULLDEV=$DEV/full
    ln -s /proc/self/fd/1 "$DEV/stdout"
    STDOUT=$DEV/stdout
else
    NULLDEV=/dev/null FULLDEV=/dev/full STDOUT=/dev/stdout
fi
enc -o "$NULLDEV" --recon "$NULLDEV"; rc=$?
kind=$(stat -c %F "$NULLDEV")
check null-device-stays-device "status $rc, now a $kind" [ "$rc" = 0 -a "$kind" = "character special file" ]
[ "$NULLDEV" = "$W/null" ] && rm -f "$W/null"

mkfifo "$W/fifo"
# (the reader gives up after a while: an encoder that replaced the FIFO
# never opens it)
timeout 20 cat "$W/fifo" > "$TMP/from_fifo" & reader=$!
enc -o "$W/fifo"; rc=$?
[ -p "$W/fifo" ] || kill $reader 2>/dev/null
wait $reader
enc -o "$TMP/ref.m2v"
kind=$(stat -c %F "$W/fifo")
check fifo-reader-gets-stream "status $rc, $kind, reader got $(stat -c %s "$TMP/from_fifo") bytes" \
    sh -c "[ $rc = 0 ] && [ '$kind' = fifo ] && cmp -s '$TMP/from_fifo' '$TMP/ref.m2v'"
rm -f "$W/fifo"

echo old > "$W/target.m2v"
chmod 640 "$W/target.m2v"
ln -s target.m2v "$W/link.m2v"
enc -y -o "$W/link.m2v"; rc=$?
check symlink-followed "status $rc; link is a $(stat -c %F "$W/link.m2v"), target $(stat -c %s "$W/target.m2v") bytes" \
    sh -c "[ $rc = 0 ] && [ -L '$W/link.m2v' ] && cmp -s '$W/target.m2v' '$TMP/ref.m2v'"
check replaced-keeps-mode "mode $(stat -c %a "$W/target.m2v")" [ "$(stat -c %a "$W/target.m2v")" = 640 ]
ln -s new_target.m2v "$W/dangling.m2v"
enc -o "$W/dangling.m2v"; rc=$?
check dangling-symlink-creates-target "status $rc" \
    sh -c "[ $rc = 0 ] && [ -L '$W/dangling.m2v' ] && cmp -s '$W/new_target.m2v' '$TMP/ref.m2v'"
rm -f "$W"/*.m2v

enc -o "$STDOUT" > "$TMP/via_stdout.m2v"; rc=$?
check dev-stdout-to-file "status $rc" sh -c "[ $rc = 0 ] && cmp -s '$TMP/via_stdout.m2v' '$TMP/ref.m2v'"
n=$(enc -o "$STDOUT" | wc -c)
check dev-stdout-to-pipe "$n bytes through the pipe" [ "$n" = "$(stat -c %s "$TMP/ref.m2v")" ]

# --- 2. an output is never an input nor another output -----------------------
refuse output-is-input 2 "clip\.y4m: is the input .*clip\.y4m" -i "$CLIP" -o "$CLIP" -y
refuse recon-is-input 2 "clip\.y4m: is the input" -i "$CLIP" -o "$W/a.m2v" --recon "$CLIP" -y
ln "$CLIP" "$W/hard.m2v"
refuse hard-link-to-input 2 "hard\.m2v: is the input .*clip\.y4m" -i "$CLIP" -o "$W/hard.m2v" -y
rm -f "$W/hard.m2v"
check input-intact "the input changed" cmp -s "$CLIP" "$TMP/clip.orig"
mkdir -p "$TMP/seq"
for k in 0 1 2; do ffmpeg -v error -y -f lavfi -i "testsrc2=size=64x48" -frames:v 1 "$TMP/seq/f_$k.png"; done
cp "$TMP/seq/f_1.png" "$TMP/f_1.orig"
refuse png-pattern-member 2 "f_1\.png: is the input .*f_1\.png" -i "$TMP/seq/f_%d.png" -o "$TMP/seq/f_1.png" -y
check png-intact "f_1.png changed" cmp -s "$TMP/seq/f_1.png" "$TMP/f_1.orig"
refuse png-directory-member 2 "f_2\.png: is the input" -i "$TMP/seq" -o "$TMP/seq/f_2.png" -y
cp "$CLIP" "$TMP/s.y4m"
refuse stdin-is-output 2 "s\.y4m: is the input <stdin>" -i - -o "$TMP/s.y4m" -y < "$TMP/s.y4m"
check stdin-input-intact "s.y4m changed" cmp -s "$TMP/s.y4m" "$TMP/clip.orig"
refuse recon-is-output 2 "x\.m2v: both -o and --recon" -i "$CLIP" -o "$W/x.m2v" --recon "$W/x.m2v"
refuse log-is-output 2 "x\.csv: both -o and --log" -i "$CLIP" -o "$W/x.csv" --log "$W/x.csv"
ln -s r.csv "$W/r.html"   # a new report and a new log, one file through a link
refuse report-is-log 2 "r\.html: both --log and --report" -i "$CLIP" -o "$W/a.m2v" --log "$W/r.csv" --report "$W/r.html"
rm -f "$W/r.html"
left=$(ls -A "$W")
check no-output-after-refusals "left: $left" [ -z "$left" ]

# an existing file: refused without -y, kept with -n, replaced with -y
echo old > "$W/e.m2v"
refuse exists-refused 1 "e\.m2v: already exists; use -y" -i "$CLIP" -o "$W/e.m2v"
refuse exists-n 1 "e\.m2v: already exists; not overwritten \(-n\)" -i "$CLIP" -o "$W/e.m2v" -n
check exists-kept "e.m2v changed" [ "$(cat "$W/e.m2v")" = old ]
refuse y-and-n 2 "-y .* and -n .* contradict" -i "$CLIP" -o "$W/e.m2v" -y -n
enc -o "$W/e.m2v" -y; rc=$?
check exists-y-replaces "status $rc" sh -c "[ $rc = 0 ] && cmp -s '$W/e.m2v' '$TMP/ref.m2v'"
rm -f "$W/e.m2v"

# --- 7. every path checked first; failures leave nothing behind ---------------
mkdir "$W/dir"
refuse output-is-directory 2 "dir: is a directory" -i "$CLIP" -o "$W/dir"
rmdir "$W/dir"
echo old > "$W/keep.m2v"
refuse report-unwritable-first 1 "nonexistent/r\.html: cannot create" -i "$CLIP" -o "$W/keep.m2v" -y \
    --report "$TMP/nonexistent/r.html"
check report-unwritable-stream-kept "keep.m2v was replaced" [ "$(cat "$W/keep.m2v")" = old ]
printf 'frame,old\n' > "$W/old.csv"
printf 'YUV4MPEG2 W96 H64 F25:1\nFRAME\nxx' > "$TMP/bad.y4m"
"$MPEGENC" --quiet -i "$TMP/bad.y4m" -o "$W/keep.m2v" --log "$W/old.csv" -y 2>/dev/null; rc=$?
check failed-run-keeps-log "status $rc, log now: $(head -c 60 "$W/old.csv")" \
    sh -c "[ $rc = 1 ] && [ \"\$(cat '$W/old.csv')\" = 'frame,old' ]"
check failed-run-no-temporary "left: $(temporaries_in "$W")" [ -z "$(temporaries_in "$W")" ]

# --recon that cannot be written (8a): one message naming it, no stream
err=$(enc -o "$W/full.m2v" --recon "$FULLDEV" 2>&1); rc=$?
error_verdict recon-write-error 1 "full: write error" "$rc" "$err" "$(ls -A "$W" | grep full || true)"

# SIGPIPE: the reader of stdout goes away; the recon's temporary must go too
# (a stream well past the pipe's buffer, so the write really fails)
err=$({ "$MPEGENC" --quiet -i "$TMP/long.y4m" --q 1 -o - --recon "$W/r.y4m" | head -c 100 >/dev/null; } 2>&1)
check sigpipe-no-temporary "left: $(ls -A "$W" | grep r.y4m)" [ -z "$(ls -A "$W" | grep r.y4m)" ]
check sigpipe-says-why "stderr: $err" sh -c "printf '%s' \"\$1\" | grep -q '<stdout>: write error: Broken pipe'" _ "$err"

# SIGXFSZ: over the file size limit, a message instead of a silent death
err=$( (ulimit -f 4; enc -o "$W/big.m2v" --q 1) 2>&1); rc=$?
error_verdict file-size-limit 1 "big\.m2v: write error: File too large" "$rc" "$err" "$(ls -A "$W" | grep big || true)"

# signal_run SIG CLOSE ARGS...: mpegenc reads $CLIP's header and two frames
# from a pipe, then waits for more; it gets SIG there, then (CLOSE=1) EOF.
# Prints the exit status (negative: killed by that signal).
hdr=$(head -1 "$CLIP" | wc -c)
fs=$((6 + 96 * 64 * 3 / 2))
signal_run() {
    python3 - "$MPEGENC" "$CLIP" $((hdr + 2 * fs)) "$@" <<'EOF'
import signal, subprocess, sys, time
enc, src, n, sig, close = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
p = subprocess.Popen([enc, '--quiet', '-i', '-'] + sys.argv[6:], stdin=subprocess.PIPE,
                     stderr=subprocess.DEVNULL)
p.stdin.write(open(src, 'rb').read()[:n]); p.stdin.flush()
time.sleep(1.0)                 # the encoder now waits for a third frame
p.send_signal(getattr(signal, sig))
time.sleep(0.3)
if close == '1':
    p.stdin.close()             # EOF: no frame came after the signal
try:
    print(p.wait(timeout=30))
except subprocess.TimeoutExpired:
    p.kill(); print('hung')
EOF
}

# SIGALRM (and its like): ends the run as SIGTERM does, old files untouched
echo old > "$W/alrm.m2v"
rc=$(signal_run SIGALRM 0 -y -o "$W/alrm.m2v" --recon "$W/alrm.y4m" --log "$W/alrm.csv")
check sigalrm-leaves-old "status $rc, alrm.m2v: $(head -c 8 "$W/alrm.m2v" | od -An -c)" \
    sh -c "[ '$rc' = -14 ] && [ \"\$(cat '$W/alrm.m2v')\" = old ] && [ ! -e '$W/alrm.y4m' ] && [ ! -e '$W/alrm.csv' ]"
check sigalrm-no-temporary "left: $(temporaries_in "$W")" [ -z "$(temporaries_in "$W")" ]
rm -f "$W/alrm.m2v"

# Ctrl-C while the encoder waits on stdin, and no frame after it: the run
# still reports the interruption (130) and keeps the two frames
rc=$(signal_run SIGINT 1 -o "$W/stdin.m2v")
check ctrl-c-on-stdin-130 "status $rc" [ "$rc" = 130 ]
n=$(probe "$W/stdin.m2v" | awk '{ print $3 }')
check ctrl-c-on-stdin-stream "ffprobe counts ${n:-no} frames" [ "$n" = 2 ]

# --- 8b. option conflicts are usage errors (2) -------------------------------
refuse conflict-maxrate 2 "--maxrate needs --bitrate" -i "$CLIP" -o "$W/c.m2v" --maxrate 1M
refuse conflict-two-targets 2 "choose one quality target" -i "$CLIP" -o "$W/c.m2v" --target-psnr 40 --target-mad 10
refuse conflict-vbv 2 "--vbv-size needs --bitrate" -i "$CLIP" -o "$W/c.m2v" --vbv-size 500
check conflicts-checked-before-input "" sh -c "! '$MPEGENC' -i '$TMP/missing.y4m' -o '$W/c.m2v' --maxrate 1M 2>&1 | grep -q missing"
exit 0
