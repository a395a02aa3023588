# Sourced by tools/device/mpi.sh and multigpu.sh (D: the staged folder, E:
# its mpegenc): the libraries, Open MPI (the machine's, else the one
# `mpi.sh --stage` copied into $D/mpi), the mpirun command line as MPIRUN,
# an ffmpeg as FF (empty if none), and pingpong_clip.
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
if ! command -v mpirun >/dev/null && [ -x "$D/mpi/usr/bin/mpirun" ]; then
    export OPAL_PREFIX="$PWD/$D/mpi/usr"
    export PATH="$OPAL_PREFIX/bin:$PATH"
    export LD_LIBRARY_PATH="$PWD/$D/mpi/lib:$OPAL_PREFIX/lib/x86_64-linux-gnu/openmpi/lib:$LD_LIBRARY_PATH"
fi
command -v mpirun >/dev/null || { echo "no mpirun: stage one with tools/device/mpi.sh --stage $D"; exit 1; }
# one node, shared memory; no binding, so --threads spreads over the cores
MPIRUN=(mpirun --oversubscribe --allow-run-as-root --bind-to none --mca btl self,vader
        -x LD_LIBRARY_PATH -x PATH ${OPAL_PREFIX:+-x OPAL_PREFIX})
FF=$(command -v ffmpeg || echo "$D/bin/ffmpeg-static")
[ -x "$FF" ] || FF=

# pingpong_clip Y4M FRAMES: solar frames 0-3 as 0,1,2,3,3,2,1,0 over and
# over, FRAMES of them, as Y4M (kept if already there); without ffmpeg,
# mpegenc's --q 1 reconstruction (the same size, nearly the same pictures)
pingpong_clip() {
    local y4m=$1 frames=$2 pp n=0
    [ -s "$y4m" ] && return 0
    pp="$(dirname "$y4m")/pp"
    mkdir -p "$pp"
    for _ in $(seq $(((frames + 7) / 8))); do
        for f in 0 1 2 3 3 2 1 0; do ln -sf "$PWD/$D/solar/solar_$f.png" "$pp/f_$n.png"; n=$((n + 1)); done
    done
    if [ -n "$FF" ]; then
        "$FF" -v error -y -i "$pp/f_%d.png" -frames:v "$frames" -pix_fmt yuv420p -f yuv4mpegpipe "$y4m"
    else
        "$E" --quiet -y --q 1 --frames "$frames" -i "$pp/f_%d.png" -o "${y4m%.y4m}.q1.m2v" --recon "$y4m"
    fi || { echo "could not make the clip"; exit 1; }
    rm -rf "$pp"
}
