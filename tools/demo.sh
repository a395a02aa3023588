#!/bin/sh
# make demo: encode the sample clip and say where the result is.
set -e
cd "$(dirname "$0")/.."
mkdir -p out
./mpegenc -y -i samples/solar/solar_%d.png -o out/solar.m2v --recon out/solar_recon.y4m --q 4
./mpegenc -y -i samples/solar/solar_%d.png -o out/solar.m1v --q 4
cat <<MSG

Encoded samples/solar (8 frames, 320x320) into
  out/solar.m2v         MPEG-2 video elementary stream
  out/solar.m1v         MPEG-1 video elementary stream
  out/solar_recon.y4m   the encoder's own reconstruction of the MPEG-2 stream
Play them with:   ffplay -loop 0 out/solar.m2v    or    mpv --loop out/solar.m2v
Inspect with:     ffprobe -show_streams out/solar.m2v
MSG
