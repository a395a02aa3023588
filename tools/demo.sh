#!/bin/sh
# make demo: the job mpegenc is for, on the solar clip: a perceptual quality
# target (MAD) aimed at with the fewest bits, every measure
# logged per frame, an HTML report, a program stream any player opens.
# The 2048x2048 clip (../shared/solar) when a CUDA GPU is there to score it
# in real time, else the 320x320 sample in samples/solar.
set -e
cd "$(dirname "$0")/.."
mkdir -p out
if [ -d ../shared/solar ] && ./mpegenc --list-backends | grep -q '^cuda *available'; then
    in=../shared/solar backend=cuda what="the 2048x2048 solar clip (../shared/solar), on the GPU"
else
    in=samples/solar backend=auto what="the 320x320 solar sample (samples/solar)"
fi
cmd="./mpegenc -y -i $in -o out/solar.mpg --target-mad 8 --iqa all --backend $backend --log out/solar.csv --report out/solar.html"
echo "Encoding $what with a MAD quality target:"
echo "  $cmd"
echo
$cmd
cat <<MSG

What it did: each picture was coded at the coarsest quantisers it found whose
MAD (the perceptual full-reference metric, lower is better) stays at or below
8 - the "target MAD" line above says on how many pictures that held - and
every picture was scored with PSNR, SSIM, MAD and BLIINDS-II on the way.

Where to look:
  out/solar.html   the report: bits, quantiser and every measure per frame
  out/solar.csv    the same per frame, one row a picture (or --log x.json: libvmaf's JSON)
  out/solar.mpg    the MPEG-2 program stream:  ffplay -loop 0 out/solar.mpg   or   mpv --loop out/solar.mpg
Next: ./mpegenc --help, or README.md (rate control, targets, logs).
MSG
