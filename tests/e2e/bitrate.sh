#!/usr/bin/env bash
# End-to-end: --bitrate against constant quantiser (issue 19).  A 48-frame
# CIF clip (4 GOPs: testsrc2, cut at frame 17 to mandelbrot's zoom, whose
# cost keeps rising) is coded at --q 6 and 10, then at --bitrate the rate
# that gave, MPEG-2 and MPEG-1: the rate comes within 10 % of the target;
# the PSNR-Y of ffmpeg's decode is at most 0.3 dB below --q's (about +5 %
# BD-rate at this slope; the per-picture bit budget before lost 0.8 to 0.9
# dB); no picture's quantiser is more than 1.6x the last one of its type
# (that budget coded the cut at 50 after pictures at 8); the stream passes
# vbv_check.py and decodes cleanly.  Both without B pictures (the rate
# control alone), and both at the default --bframes (one B picture: the
# rate control's B-picture model, B pictures --pb-ratio coarser than P;
# before it, --bitrate took no B pictures by default: the B-picture count
# fails there).
. "$(dirname "$0")/lib.bash"

if ! have ffmpeg || ! have python3; then skip all "ffmpeg/python3 not installed"; exit 0; fi
[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }

ffmpeg -v error -y -f lavfi -i "testsrc2=size=352x288:rate=25" -f lavfi -i "mandelbrot=size=352x288:rate=25" \
    -filter_complex "[0]trim=end_frame=17[a];[1]trim=end_frame=31,setpts=PTS-STARTPTS[b];[a][b]concat" \
    -frames:v 48 -pix_fmt yuv420p -f yuv4mpegpipe "$TMP/clip.y4m"
for case in m2v:6:0 m2v:10:0 m1v:6:0 m1v:10:0 m2v:6:auto m2v:10:auto m1v:6:auto m1v:10:auto; do
    IFS=: read -r ext q bf <<<"$case"
    b=$([ "$bf" = 0 ] && echo "" || echo _bauto)
    "$MPEGENC" --quiet --gop 12 --bframes $bf --q $q -i "$TMP/clip.y4m" -o "$TMP/q.$ext" -y || { fail "${ext}_q$q$b" "--q $q failed"; continue; }
    kbps=$(( $(stat -c %s "$TMP/q.$ext") * 8 * 25 / 48 / 1000 ))
    if ! "$MPEGENC" --quiet --gop 12 --bframes $bf --bitrate "${kbps}k" --log "$TMP/r_$ext.csv" -i "$TMP/clip.y4m" \
        -o "$TMP/r.$ext" -y 2>"$TMP/err"; then
        fail "${ext}_q${q}${b}_bitrate" "--bitrate ${kbps}k failed: $(cat "$TMP/err")"
        continue
    fi
    name=${ext}_q${q}$b
    if [ "$bf" = auto ]; then
        nb=$(awk -F, 'NR > 1 && $2 == "B"' "$TMP/r_$ext.csv" | wc -l)
        check "${name}_b_pictures" "$nb B pictures of 48" [ "$nb" -ge 16 ]
    fi
    got=$(( $(stat -c %s "$TMP/r.$ext") * 8 * 25 / 48 / 1000 ))
    check "${name}_rate" "$got kbit/s for a target of $kbps" \
        awk -v g="$got" -v t="$kbps" 'BEGIN { exit !(g >= 0.9 * t && g <= 1.1 * t) }'
    pq=$(psnr_y "$TMP/q.$ext" "$TMP/clip.y4m")
    pr=$(psnr_y "$TMP/r.$ext" "$TMP/clip.y4m")
    check "${name}_psnr_vs_q" "--bitrate ${kbps}k: PSNR-Y $pr dB, --q $q at that rate: $pq dB" \
        awk -v a="$pr" -v b="$pq" 'BEGIN { exit !(a != "" && b != "" && a >= b - 0.3) }'
    # CSV columns: frame, type, qscale, qscale_mean, ...
    swing=$(awk -F, 'NR > 1 { if (last[$2] > 0) { r = $4 / last[$2]; if (r > worst) { worst = r; at = $1 } }
                              last[$2] = $4 } END { printf "%.2f (picture %d)", worst, at }' "$TMP/r_$ext.csv")
    check "${name}_no_swing" "a quantiser $swing x the last of its type" \
        awk -v s="$swing" 'BEGIN { exit !(s + 0 <= 1.6) }'
    v=$(python3 "$ROOT/tests/e2e/vbv_check.py" "$TMP/r.$ext" 2>&1)
    check "${name}_vbv" "$v" [ "${v%%:*}" = ok ]
    if d=$(ffmpeg_clean_decode "$TMP/r.$ext" </dev/null); then pass "${name}_ffmpeg_clean"; else fail "${name}_ffmpeg_clean" "$d"; fi
done
