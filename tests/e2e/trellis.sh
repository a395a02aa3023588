#!/usr/bin/env bash
# End-to-end: trellis quantisation (--trellis 1, dsp/trellis.h) writes
# standard streams: ffmpeg -xerror and libmpeg2 decode them cleanly, the
# encoder's reconstruction is what ffmpeg decodes (>= 50 dB), the bytes do
# not depend on the thread count, and at the same quantiser the trellis
# spends fewer bits than the plain quantiser for about the same PSNR (its
# whole point).  Noise (many escapes and long blocks) and MPEG-1
# (oddification, 20/28-bit escapes) are covered, at a fine and a coarse q.
. "$(dirname "$0")/lib.bash"

[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }
if ! have ffmpeg || ! have mpeg2dec; then skip all "ffmpeg/mpeg2dec not installed (make test installs them)"; exit 0; fi

make_y4m "$TMP/clip.y4m" 176x144 12
ffmpeg -v error -y -f lavfi -i "testsrc2=size=176x144:rate=25" -vf "noise=alls=20:allf=t,format=yuv420p" \
    -frames:v 12 -f yuv4mpegpipe "$TMP/noise.y4m"

for fmt in mpeg2 mpeg1; do
    ext=$([ $fmt = mpeg1 ] && echo m1v || echo m2v)
    for clip in clip noise; do
        for q in 2 12; do
            n="$fmt-$clip-q$q"
            s="$TMP/$n.$ext"
            if ! "$MPEGENC" --quiet --format $fmt --q $q --trellis 1 --threads 1 -i "$TMP/$clip.y4m" \
                    -o "$s" --recon "$TMP/$n.rec.y4m" 2>"$TMP/err"; then
                fail "$n-encode" "$(cat "$TMP/err")"; continue
            fi
            why=$(ffmpeg_clean_decode "$s") && pass "$n-ffmpeg-xerror-clean" || fail "$n-ffmpeg-xerror-clean" "$why"
            pics=$(mpeg2dec_pictures "$s")
            check "$n-libmpeg2-12-pictures" "libmpeg2 saw $pics" [ "$pics" = 12 ]
            ffmpeg -v error -y -i "$s" -fps_mode passthrough -f yuv4mpegpipe "$TMP/$n.dec.y4m"
            p=$(psnr_y "$TMP/$n.rec.y4m" "$TMP/$n.dec.y4m")
            check "$n-recon-is-decode" "recon vs ffmpeg decode PSNR-Y $p < 50" ge "$p" 50
            "$MPEGENC" --quiet --format $fmt --q $q --trellis 1 --threads 3 -i "$TMP/$clip.y4m" \
                -o "$TMP/$n.t3.$ext" 2>/dev/null
            check "$n-threads-1-3-identical" "streams differ" cmp -s "$s" "$TMP/$n.t3.$ext"
            if [ $q = 2 ]; then
                "$MPEGENC" --quiet --format $fmt --q $q --trellis 0 --threads 1 -i "$TMP/$clip.y4m" \
                    -o "$TMP/$n.plain.$ext" 2>/dev/null
                bt=$(stat -c %s "$s"); bp=$(stat -c %s "$TMP/$n.plain.$ext")
                pt=$(psnr_y "$TMP/$n.dec.y4m" "$TMP/$clip.y4m")
                ffmpeg -v error -y -i "$TMP/$n.plain.$ext" -fps_mode passthrough -f yuv4mpegpipe "$TMP/$n.plain.y4m"
                pp=$(psnr_y "$TMP/$n.plain.y4m" "$TMP/$clip.y4m")
                # fewer bits, and no more than 0.5 dB lower PSNR-Y
                check "$n-fewer-bits-than-plain" "trellis $bt bytes $pt dB, plain $bp bytes $pp dB" \
                    awk -v bt="$bt" -v bp="$bp" -v pt="$pt" -v pp="$pp" 'BEGIN { exit !(bt < bp && pt > pp - 0.5) }'
            fi
        done
    done
done
exit 0
