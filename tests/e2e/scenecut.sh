#!/usr/bin/env bash
# End-to-end: scene cuts (--scenecut) start a closed GOP; --gop is the most
# pictures a GOP holds.
#  - a clip with a hard cut at frame 8 (testsrc2, then mandelbrot) has I
#    pictures exactly at 0 and 8 (--gop 12; B frames before the cut closed
#    off with a P), from Y4M and from PNG (RGB) input alike; --scenecut 0 puts
#    them at 0 and 12 only;
#  - clips without cuts (mandelbrot's zoom, testsrc2) have I pictures only
#    every --gop frames;
#  - ffmpeg -xerror and libmpeg2 decode every picture; --recon is what ffmpeg
#    decodes (>= 50 dB);
#  - a quality target under a --bitrate cap keeps to the cap on a clip cut
#    every 5 frames (a GOP a cut ends early left the next one the budget of
#    the pictures it lost: 850 kbit/s for a 400k cap before that was fixed);
#  - byte-identical for --threads 1 and 2, the cpu and opencl backends (where
#    OpenCL runs), and mpegenc-mpi -np 2 (where it was built).
. "$(dirname "$0")/lib.bash"

if ! have ffmpeg || ! have ffprobe || ! have mpeg2dec || ! have python3; then
    skip all "ffmpeg/ffprobe/mpeg2dec not installed (make test installs them)"
    exit 0
fi
[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }

make_y4m "$TMP/a.y4m" 176x144 8
make_y4m "$TMP/b.y4m" 176x144 12 mandelbrot
ffmpeg -v error -i "$TMP/a.y4m" -i "$TMP/b.y4m" -filter_complex "[0:v][1:v]concat=n=2:v=1" \
    -pix_fmt yuv420p -f yuv4mpegpipe "$TMP/cut.y4m"
mkdir -p "$TMP/png"
ffmpeg -v error -i "$TMP/cut.y4m" "$TMP/png/f_%03d.png"
make_y4m "$TMP/zoom.y4m" 176x144 26 mandelbrot
make_y4m "$TMP/ts.y4m" 176x144 26
make_y4m "$TMP/b30.y4m" 176x144 30 mandelbrot
# 60 frames, a cut every 5: testsrc2 and mandelbrot by turns
python3 - "$TMP/ts.y4m" "$TMP/b30.y4m" "$TMP/many.y4m" <<'EOF'
import sys
def frames(path):
    d = open(path, 'rb').read().split(b'FRAME\n')
    return d[0], d[1:]
head, a = frames(sys.argv[1])
_, b = frames(sys.argv[2])
with open(sys.argv[3], 'wb') as f:
    f.write(head)
    for i in range(60):
        f.write(b'FRAME\n' + (a if (i // 5) % 2 == 0 else b)[(i // 10) * 5 % 25 + i % 5])
EOF

# I pictures' display indices, comma-separated (ffprobe gives display order)
i_frames() {
    ffprobe -v error -select_streams v -show_entries frame=pict_type -of csv=p=0 "$1" |
        grep -oE '^[IPB]' | awk '$1 == "I" { printf "%s%d", n++ ? "," : "", NR - 1 }'
}

# gops NAME INPUT FRAMES WANT ARGS...: encode, then the I pictures must be
# WANT and both decoders must give every picture, --recon ffmpeg's decode
gops() {
    local name=$1 in=$2 n=$3 want=$4 s="$TMP/$1.m2v" got
    shift 4
    if ! "$MPEGENC" --quiet -i "$in" -o "$s" --recon "$TMP/$name.rec.y4m" "$@" 2>"$TMP/$name.err"; then
        fail "$name" "mpegenc failed: $(cat "$TMP/$name.err")"
        return
    fi
    got=$(i_frames "$s")
    check "$name/i-pictures" "I pictures at $got, expected $want" [ "$got" = "$want" ]
    check_decodes "$name" "$s" "$n" "$TMP/$name.rec.y4m"
}

gops cut-b1 "$TMP/cut.y4m" 20 0,8 --gop 12 --bframes 1
gops cut-b2 "$TMP/cut.y4m" 20 0,8 --gop 12 --bframes 2
gops cut-p "$TMP/cut.y4m" 20 0,8 --gop 12 --bframes 0 --format mpeg1
gops cut-png "$TMP/png/f_%03d.png" 20 0,8 --gop 12 --bframes 2 --start 1
gops cut-off "$TMP/cut.y4m" 20 0,12 --gop 12 --bframes 2 --scenecut 0
gops zoom "$TMP/zoom.y4m" 26 0,8,16,24 --gop 8
gops testsrc2 "$TMP/ts.y4m" 26 0,12,24 --gop 12 --bframes 2

if "$MPEGENC" --quiet -i "$TMP/many.y4m" -o "$TMP/capped.m2v" --target-psnr 50 --bitrate 400k \
        --chunk-gops 0 2>"$TMP/capped.err"; then
    got=$(python3 -c "import os; print(round(os.path.getsize('$TMP/capped.m2v') * 8 * 25 / 60 / 1000, 1))")
    check capped-cuts "$got kbit/s for a 400 kbit/s cap" ge 420 "$got"
    got=$(i_frames "$TMP/capped.m2v")
    check capped-cuts-i-pictures "I pictures at $got" [ "$got" = 0,5,10,15,20,25,30,35,40,45,50,55 ]
else
    fail capped-cuts "mpegenc failed: $(cat "$TMP/capped.err")"
fi

# same NAME ARGS...: the stream of the cut clip with ARGS is cut-b2's
same() {
    local name=$1 out="$TMP/$1.same.m2v"
    shift
    if ! "$MPEGENC" --quiet -i "$TMP/cut.y4m" -o "$out" --gop 12 --bframes 2 "$@" 2>"$TMP/$name.err"; then
        fail "$name" "mpegenc failed: $(cat "$TMP/$name.err")"
    elif cmp -s "$out" "$TMP/cut-b2.m2v"; then
        pass "$name"
    else
        fail "$name" "stream differs from cut-b2's"
    fi
}
same threads1 --threads 1 --backend cpu
same threads2 --threads 2 --backend cpu
if "$MPEGENC" --quiet -i "$TMP/a.y4m" -o "$TMP/ocl-probe.m2v" --backend opencl 2>/dev/null; then
    same opencl --backend opencl
else
    skip opencl "no OpenCL device"
fi

MPI_BIN="${MPEGENC_MPI-$ROOT/mpegenc-mpi}"
if [ -x "$MPI_BIN" ] && have mpirun; then
    # chunks of 6: a GOP phase that restarts at the cut and at every chunk
    "$MPEGENC" --quiet --threads 1 -i "$TMP/cut.y4m" -o "$TMP/chunked.m2v" --gop 6 --chunk-gops 2
    if ! err=$(timeout 120 mpirun --oversubscribe --allow-run-as-root -np 2 "$MPI_BIN" --threads 1 \
            --quiet -i "$TMP/cut.y4m" -o "$TMP/mpi.m2v" --gop 6 --chunk-gops 2 2>&1); then
        fail mpi-np2 "mpegenc-mpi failed: $err"
    elif cmp -s "$TMP/mpi.m2v" "$TMP/chunked.m2v"; then
        pass mpi-np2
    else
        fail mpi-np2 "stream differs from mpegenc's"
    fi
    got=$(i_frames "$TMP/mpi.m2v")
    check mpi-i-pictures "I pictures at $got, expected 0,6,8,12,18" [ "$got" = 0,6,8,12,18 ]
else
    skip mpi-np2 "mpegenc-mpi not built or mpirun missing"
fi
