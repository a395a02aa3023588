#!/usr/bin/env bash
# End-to-end: adaptive quantisation (--aq-strength, issue 19 step 4).  On a
# 176x144 testsrc2 clip (flat and busy areas side by side), 14 frames, GOP
# 6: constant q with and without the trellis, MPEG-1 and MPEG-2, a PSNR
# target and a bit rate, each with --aq-strength 1: ffmpeg decodes the
# stream strictly and libmpeg2 finds every picture; the encoder's
# reconstruction matches ffmpeg's decode (>= 50 dB); the stream and the
# reconstruction are the same with --threads 1 and 2; the stream is not the
# one --aq-strength 0 writes (macroblocks change quantiser); a PSNR target
# is still met on every frame; a bit-rate stream passes vbv_check.py.
# --aq-mode mad (MAD's contrast masking) the same way at constant q, MPEG-1
# and MPEG-2, and its stream is not variance's; an unknown mode is refused.
# B pictures change quantiser by macroblock too (ffmpeg -debug qp).
. "$(dirname "$0")/lib.bash"

if ! have ffmpeg || ! have python3; then skip all "ffmpeg/python3 not installed"; exit 0; fi
[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }

N=14
make_y4m "$TMP/clip.y4m" 176x144 $N
aq_case() { # NAME EXT ARGS...
    local name=$1 ext=$2 out="$TMP/$1" d p n rc=0; shift 2
    "$MPEGENC" -y --quiet --gop 6 --threads 1 --aq-strength 1 --log "$out.csv" "$@" \
        -i "$TMP/clip.y4m" -o "$out.$ext" --recon "$out.y4m" 2>"$TMP/err" || rc=$?
    if [ $rc != 0 ]; then
        fail "$name" "exit $rc: $(cat "$TMP/err")"; return
    fi
    if d=$(ffmpeg_clean_decode "$out.$ext" </dev/null); then pass "${name}_ffmpeg_clean"; else fail "${name}_ffmpeg_clean" "$d"; fi
    if have mpeg2dec; then
        n=$(mpeg2dec_pictures "$out.$ext")
        check "${name}_libmpeg2" "libmpeg2 found $n pictures of $N" [ "$n" = $N ]
    fi
    # passthrough: a raw MPEG-1 stream has no timestamps, and ffmpeg's frame
    # rate conversion would pair the wrong pictures
    ffmpeg -v error -y -i "$out.$ext" -fps_mode passthrough -f yuv4mpegpipe "$out.dec.y4m" </dev/null
    p=$(psnr_y "$out.dec.y4m" "$out.y4m")
    check "${name}_recon_is_decode" "recon vs ffmpeg's decode: $p dB" ge "$p" 50
    "$MPEGENC" -y --quiet --gop 6 --threads 2 --aq-strength 1 "$@" -i "$TMP/clip.y4m" \
        -o "$out.t2.$ext" --recon "$out.t2.y4m" 2>/dev/null
    check "${name}_threads" "--threads 2 wrote another stream or reconstruction" \
        bash -c 'cmp -s "$1" "$2" && cmp -s "$3" "$4"' _ "$out.$ext" "$out.t2.$ext" "$out.y4m" "$out.t2.y4m"
    "$MPEGENC" -y --quiet --gop 6 --threads 1 --aq-strength 0 "$@" -i "$TMP/clip.y4m" \
        -o "$out.noaq.$ext" 2>/dev/null
    check "${name}_adapts" "--aq-strength 1 wrote the stream of --aq-strength 0" \
        bash -c '! cmp -s "$1" "$2"' _ "$out.$ext" "$out.noaq.$ext"
}

aq_case q6_mpeg2 m2v --q 6
aq_case q6_notrellis m2v --q 6 --trellis 0
aq_case q4_mpeg1 m1v --q 4
aq_case psnr38 m2v --target-psnr 38
# CSV: frame,type,qscale,qscale_mean,bits,psnr_y_db,...
low=$(awk -F, 'NR > 1 && $6 < 38 - 1e-6 { printf "%s:%s ", $1, $6 }' "$TMP/psnr38.csv")
check psnr38_every_frame "frames below 38 dB: $low" [ -z "$low" ]
aq_case cbr300k m2v --bitrate 300k
v=$(python3 "$ROOT/tests/e2e/vbv_check.py" "$TMP/cbr300k.m2v" 2>&1)
check cbr300k_vbv "$v" [ "${v%%:*}" = ok ]

# B pictures adapt too: ffmpeg's decoder (-debug qp) reports the
# quantiser of every macroblock, and some B picture of each stream holds
# more than one (before, B pictures kept the slice's)
b_quant_varies() {   # STREAM: how many B pictures hold more than one quantiser
    ffmpeg -hide_banner -nostats -debug qp -i "$1" -f null - 2>&1 </dev/null |
        sed 's/^\[[^]]*\] *//' | awk '
            /New frame, type:/ { if (b && n > 1) c++; b = ($NF == "B"); delete seen; n = 0; next }
            b && /^[0-9]+$/ { for (i = 1; i < length($0); i += 2) { q = substr($0, i, 2); if (!(q in seen)) { seen[q] = 1; n++ } } }
            END { if (b && n > 1) c++; print c + 0 }'
}
for name in q6_mpeg2 q4_mpeg1; do   # constant q: one quantiser per picture without AQ
    ext=m2v; [ $name = q4_mpeg1 ] && ext=m1v
    nb=$(b_quant_varies "$TMP/$name.$ext")
    check ${name}_b_pictures_adapt "$nb B pictures with more than one macroblock quantiser" [ "$nb" -ge 1 ]
done

aq_case mad_q6 m2v --aq-mode mad --q 6
aq_case mad_q4_mpeg1 m1v --aq-mode mad --q 4
check mad_not_variance "--aq-mode mad wrote --aq-mode variance's stream" \
    bash -c '! cmp -s "$1" "$2"' _ "$TMP/mad_q6.m2v" "$TMP/q6_mpeg2.m2v"
err=$("$MPEGENC" --quiet --aq-mode psycho -i "$TMP/clip.y4m" -o "$TMP/mode.m2v" 2>&1); rc=$?
check bad_mode_refused "status $rc: $err" [ $rc = 2 -a ! -e "$TMP/mode.m2v" ]

err=$("$MPEGENC" --quiet --aq-strength -0.5 -i "$TMP/clip.y4m" -o "$TMP/neg.m2v" 2>&1); rc=$?
check negative_refused "status $rc: $err" [ $rc = 2 -a ! -e "$TMP/neg.m2v" ]
