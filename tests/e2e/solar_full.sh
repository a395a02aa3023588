#!/usr/bin/env bash
# End-to-end on the full 2048x2048 solar clip, when it is present
# (../shared/solar beside the checkout, or SOLAR_DIR); SKIPPED otherwise.
. "$(dirname "$0")/lib.bash"

SOLAR_DIR=${SOLAR_DIR:-$ROOT/../shared/solar}
if [ ! -f "$SOLAR_DIR/solar_0.png" ]; then
    skip all "no solar clip at $SOLAR_DIR (set SOLAR_DIR to run the 2048x2048 tests)"
    exit 0
fi
if ! have ffmpeg || ! have ffprobe || ! have mpeg2dec; then
    skip all "ffmpeg/ffprobe/mpeg2dec not installed (make test installs them)"
    exit 0
fi
if [ -f "$SOLAR_DIR/SHA256SUMS" ]; then
    if (cd "$SOLAR_DIR" && sha256sum --quiet -c SHA256SUMS >/dev/null 2>&1); then pass checksums; else
        fail checksums "solar frames do not match SHA256SUMS"; exit 0; fi
fi
n=$(ls "$SOLAR_DIR"/solar_*.png | wc -l)
for fmt in m1v m2v; do
    codec=$([ $fmt = m1v ] && echo mpeg1video || echo mpeg2video)
    "$MPEGENC" -y --quiet -i "$SOLAR_DIR/solar_%d.png" -o "$TMP/s.$fmt" --recon "$TMP/r.y4m" --q 5
    if out=$(ffmpeg_clean_decode "$TMP/s.$fmt"); then pass "$fmt/ffmpeg-clean"; else fail "$fmt/ffmpeg-clean" "$out"; fi
    got=$(probe "$TMP/s.$fmt")
    check "$fmt/ffprobe" "got '$got'" [ "$got" = "$codec 2048x2048 $n" ]
    got=$(mpeg2dec_pictures "$TMP/s.$fmt")
    check "$fmt/mpeg2dec" "libmpeg2 parsed $got pictures of $n" [ "$got" = "$n" ]
    p=$(psnr_y "$TMP/s.$fmt" "$TMP/r.y4m")
    check "$fmt/drift" "decode vs recon PSNR-Y '$p'" ge "${p:-0}" 50
done
exit 0
