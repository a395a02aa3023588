#!/usr/bin/env bash
# End-to-end: our MPEG-1 and MPEG-2 streams decoded by ffmpeg and libmpeg2.
. "$(dirname "$0")/lib.bash"

if ! have ffmpeg || ! have ffprobe || ! have mpeg2dec; then
    skip all "ffmpeg/ffprobe/mpeg2dec not installed (make test installs them)"
    exit 0
fi
[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }

make_y4m "$TMP/testsrc2.y4m" 352x288 15
make_y4m "$TMP/odd.y4m" 330x250 13 mandelbrot
make_y4m "$TMP/tall.y4m" 48x2864 3
SOLAR="$ROOT/samples/solar/solar_%d.png"

# verify_stream NAME STREAM RECON CODEC SIZE FRAMES
verify_stream() {
    local name=$1 s=$2 recon=$3 codec=$4 size=$5 n=$6 out got p
    if out=$(ffmpeg_clean_decode "$s"); then pass "$name/ffmpeg-clean"; else fail "$name/ffmpeg-clean" "$out"; fi
    got=$(probe "$s")
    if [ "$got" = "$codec $size $n" ]; then pass "$name/ffprobe"; else
        fail "$name/ffprobe" "ffprobe says '$got', expected '$codec $size $n'"; fi
    got=$(mpeg2dec_pictures "$s")
    if [ "$got" = "$n" ]; then pass "$name/mpeg2dec"; else
        fail "$name/mpeg2dec" "libmpeg2 parsed $got pictures, expected $n"; fi
    p=$(psnr_y "$s" "$recon")
    if [ -n "$p" ] && ge "$p" 50; then pass "$name/drift"; else
        fail "$name/drift" "ffmpeg decode vs --recon PSNR-Y '$p' dB < 50"; fi
}

for fmt in mpeg1 mpeg2; do
    ext=$([ $fmt = mpeg1 ] && echo m1v || echo m2v)
    codec=$([ $fmt = mpeg1 ] && echo mpeg1video || echo mpeg2video)
    # 15 frames with --gop 12: two GOPs, I and P pictures, sequence header repeated
    "$MPEGENC" -y --quiet -i "$TMP/testsrc2.y4m" -o "$TMP/t.$ext" --recon "$TMP/t_rec.y4m" --q 4 --gop 12
    verify_stream "$fmt/testsrc2" "$TMP/t.$ext" "$TMP/t_rec.y4m" $codec 352x288 15
    "$MPEGENC" -y --quiet -i "$TMP/odd.y4m" -o "$TMP/o.$ext" --recon "$TMP/o_rec.y4m" --q 3 --gop 5 --search 24
    verify_stream "$fmt/odd-330x250" "$TMP/o.$ext" "$TMP/o_rec.y4m" $codec 330x250 13
    "$MPEGENC" -y --quiet -i "$SOLAR" -o "$TMP/s.$ext" --recon "$TMP/s_rec.y4m" --q 5
    verify_stream "$fmt/solar-png" "$TMP/s.$ext" "$TMP/s_rec.y4m" $codec 320x320 8
    # taller than 2800 lines: MPEG-2 slice_vertical_position_extension,
    # MPEG-1 slices past start code 0xAF
    "$MPEGENC" -y --quiet -i "$TMP/tall.y4m" -o "$TMP/tall.$ext" --recon "$TMP/tall_rec.y4m" --q 8 \
        2>/dev/null   # MPEG-1 warns about libmpeg2 (conformance.sh checks that)
    verify_stream "$fmt/tall-48x2864" "$TMP/tall.$ext" "$TMP/tall_rec.y4m" $codec 48x2864 3
    # widest search: f_code 5, vectors up to +-64.5
    "$MPEGENC" -y --quiet -i "$TMP/testsrc2.y4m" -o "$TMP/w.$ext" --recon "$TMP/w_rec.y4m" --q 6 --search 64
    verify_stream "$fmt/search64" "$TMP/w.$ext" "$TMP/w_rec.y4m" $codec 352x288 15
done

# Quality falls as q rises, and --q 2 is near-transparent on testsrc2.
prev=""
ok=1 detail=""
for q in 2 5 10 20; do
    "$MPEGENC" -y --quiet -i "$TMP/testsrc2.y4m" -o "$TMP/q$q.m2v" --q $q
    p=$(psnr_y "$TMP/q$q.m2v" "$TMP/testsrc2.y4m")
    detail="$detail q$q=$p"
    [ -n "$p" ] || ok=0
    if [ -n "$prev" ] && ! gt "$prev" "$p"; then ok=0; fi
    [ $q = 2 ] && ! ge "$p" 40 && ok=0
    prev=$p
done
if [ $ok = 1 ]; then pass "quality/psnr-falls-with-q"; else fail "quality/psnr-falls-with-q" "PSNR-Y:$detail (need strictly falling, q2 >= 40)"; fi
echo "     PSNR-Y vs input:$detail"

# Bits fall as q rises.
s2=$(stat -c %s "$TMP/q2.m2v"); s20=$(stat -c %s "$TMP/q20.m2v")
check quality/bits-fall-with-q "q2 $s2 bytes, q20 $s20 bytes" [ "$s2" -gt "$s20" ]

# Determinism: same input and parameters, byte-identical stream.
for fmt in m1v m2v; do
    "$MPEGENC" -y --quiet -i "$TMP/odd.y4m" -o "$TMP/d1.$fmt" --q 3
    "$MPEGENC" -y --quiet -i "$TMP/odd.y4m" -o "$TMP/d2.$fmt" --q 3
    check "determinism/$fmt" "two runs differ" cmp -s "$TMP/d1.$fmt" "$TMP/d2.$fmt"
done

# Y4M on stdin, stream to stdout.
ffmpeg -v error -f lavfi -i testsrc2=size=176x144:rate=25 -frames:v 6 -pix_fmt yuv420p \
    -f yuv4mpegpipe - | "$MPEGENC" -y --quiet -i - -o - > "$TMP/pipe.m2v"
got=$(probe "$TMP/pipe.m2v")
check pipe/stdin-stdout "ffprobe says '$got'" [ "$got" = "mpeg2video 176x144 6" ]

# The Y4M header's frame rate reaches the stream; --fps overrides it.
ffmpeg -v error -f lavfi -i testsrc2=size=64x64:rate=30000/1001 -frames:v 3 -pix_fmt yuv420p \
    -f yuv4mpegpipe "$TMP/ntsc.y4m"
"$MPEGENC" -y --quiet -i "$TMP/ntsc.y4m" -o "$TMP/ntsc.m2v"
r=$(ffprobe -v error -show_entries stream=r_frame_rate -of default=nw=1:nk=1 "$TMP/ntsc.m2v")
check rate/from-y4m "r_frame_rate $r" [ "$r" = "30000/1001" ]
"$MPEGENC" -y --quiet -i "$TMP/ntsc.y4m" -o "$TMP/r50.m1v" --fps 50
r=$(ffprobe -v error -show_entries stream=r_frame_rate -of default=nw=1:nk=1 "$TMP/r50.m1v")
check rate/option "r_frame_rate $r" [ "$r" = "50/1" ]
exit 0
