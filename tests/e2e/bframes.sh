#!/usr/bin/env bash
# End-to-end: B pictures (--bframes).
#  - syntax: the stream holds B pictures, anchors coded before the B
#    pictures they follow in display order, temporal_reference = display
#    index in the GOP, every GOP closed (closed_gop 1, broken_link 0) and
#    ending on an I or P picture, low_delay 0;
#  - both decoders: ffmpeg (-xerror, no warning) and libmpeg2 decode every
#    picture, and in the right ORDER: decoded frame k is closest (PSNR-Y) to
#    source frame k of all source frames, and within 30 dB of it;
#  - --recon is written in display order and is what ffmpeg decodes
#    (>= 50 dB on every frame);
#  - MPEG-1 and MPEG-2, odd sizes, GOP lengths and clips that end in the
#    middle of a group (the last frame becomes a P), a scene cut, GOPs of 1
#    and 2, clips of 1..3 frames;
#  - byte-identical streams for --threads 1 and 2 and for the cpu and
#    opencl backends (where OpenCL runs), and --me hier;
#  - rate control: --bitrate (VBV model of vbv_check.py) and --target-psnr
#    (every picture, B ones included, meets it); the program stream decodes;
#  - --b-adapt 1 (the default): a still clip gets runs of 3 B pictures, a
#    pan too fast for a prediction over 2 frames (80 px per frame, the
#    search reaches 127) almost none, and both streams pass the checks above
#    and are the same on cpu and opencl; --b-adapt 0 keeps the fixed pattern;
#  - --pb-ratio in full only where the prediction pays: the still clip's B
#    pictures take round(1.3 q), those of grain that changes every frame
#    (nothing to predict) the P pictures' q; --ip-ratio auto: the still
#    clip's first I picture q / 2 (its last, with nothing after it, q), the
#    grain's q.
. "$(dirname "$0")/lib.bash"

if ! have ffmpeg || ! have mpeg2dec || ! have python3; then
    skip all "ffmpeg/mpeg2dec/python3 not installed (make test installs them)"
    exit 0
fi
[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }

# judge NAME SOURCE STREAM RECON W H N: the checks above on one stream
# (python: syntax from the stream's start codes, frame order from both
# decoders' output).
judge() {
    local name=$1 src=$2 s=$3 rec=$4 w=$5 h=$6 n=$7 d
    # a one-picture stream is too short for ffmpeg's probe to be sure of
    # the format (a warning with or without B pictures)
    if [ "$n" -gt 1 ]; then
        if d=$(ffmpeg_clean_decode "$s" </dev/null); then pass "$name/ffmpeg-clean"; else fail "$name/ffmpeg-clean" "$d"; fi
    fi
    # passthrough: the raw MPEG-1 demuxer's guessed timestamps would make
    # ffmpeg repeat a frame (it does for I/P-only streams too)
    ffmpeg -v error -i "$s" -fps_mode passthrough -f rawvideo -pix_fmt yuv420p "$TMP/$name.ff.yuv" </dev/null
    mpeg2dec -c -o pgmpipe "$s" >"$TMP/$name.l2.pgm" 2>/dev/null
    d=$(python3 - "$src" "$s" "$rec" "$TMP/$name.ff.yuv" "$TMP/$name.l2.pgm" "$w" "$h" "$n" <<'EOF'
import math, sys
src_p, s_p, rec_p, ff_p, l2_p = sys.argv[1:6]
w, h, n = int(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8])
fsz = w * h + 2 * ((w + 1) // 2) * ((h + 1) // 2)

def y4m(path):
    d = open(path, 'rb').read()
    i = d.index(b'\n') + 1
    out = []
    while i < len(d):
        j = d.index(b'\n', i) + 1
        out.append(d[j:j + fsz])
        i = j + fsz
    return out

def lumas_pgm(path):
    d = open(path, 'rb').read()
    out, i = [], 0
    while i < len(d):
        parts, j = [], i
        while len(parts) < 4:   # P5 W H 255, whitespace separated
            while d[j:j + 1].isspace():
                j += 1
            k = j
            while not d[k:k + 1].isspace():
                k += 1
            parts.append(d[j:k])
            j = k
        j += 1
        pw, ph = int(parts[1]), int(parts[2])
        img = d[j:j + pw * ph]
        out.append(b''.join(img[r * pw:r * pw + w] for r in range(h)))
        i = j + pw * ph
    return out

def psnr(a, b):
    se = sum((x - y) ** 2 for x, y in zip(a, b))
    return 99.0 if se == 0 else 10 * math.log10(255.0 ** 2 * len(a) / se)

bad = []
# syntax, from the start codes (coding order)
d = open(s_p, 'rb').read()
pics, gops, low_delay = [], [], None
i = d.find(b'\x00\x00\x01')
while i >= 0:
    code = d[i + 3]
    if code == 0x00:
        pics.append(((d[i + 4] << 2) | (d[i + 5] >> 6), (d[i + 5] >> 3) & 7, len(gops)))
    elif code == 0xB8:
        gops.append(((d[i + 7] >> 6) & 1, (d[i + 7] >> 5) & 1))
    elif code == 0xB5 and d[i + 4] >> 4 == 1:
        low_delay = d[i + 9] >> 7
    i = d.find(b'\x00\x00\x01', i + 3)
types = ''.join(' IPB'[t] for _, t, _ in pics)
if len(pics) != n:
    bad.append('%d pictures in the stream, expected %d' % (len(pics), n))
if any(g != (1, 0) for g in gops):
    bad.append('closed_gop/broken_link %s' % gops)
if 'B' in types and low_delay not in (None, 0):
    bad.append('low_delay 1 with B pictures')
# display order from temporal_reference: per GOP, a permutation of 0..len-1,
# each B after the anchor that follows it in display order, each GOP's last
# picture in display order an anchor
for g in range(len(gops)):
    tr = [(t, ty) for t, ty, gi in pics if gi == g + 1]
    if sorted(t for t, _ in tr) != list(range(len(tr))):
        bad.append('GOP %d temporal_reference %s' % (g, [t for t, _ in tr]))
        continue
    last_anchor = -1
    for t, ty in tr:
        if ty == 3 and t > last_anchor:
            bad.append('GOP %d: B picture %d coded before its backward anchor' % (g, t))
        if ty != 3:
            last_anchor = t
    if dict(tr)[len(tr) - 1] == 3:
        bad.append('GOP %d ends on a B picture' % g)
src, rec = y4m(src_p), y4m(rec_p)
ff = open(ff_p, 'rb').read()
ff = [ff[k:k + fsz] for k in range(0, len(ff), fsz)]
l2 = lumas_pgm(l2_p)
for label, dec in (('ffmpeg', [f[:w * h] for f in ff]), ('libmpeg2', l2)):
    if len(dec) != n:
        bad.append('%s decoded %d frames, expected %d' % (label, len(dec), n))
        continue
    for k in range(n):
        own = psnr(dec[k], src[k][:w * h])
        # a neighbour the decoded frame could be mistaken for: one whose
        # source differs from frame k's clearly more than the coding does
        p = [(psnr(dec[k], src[j][:w * h]), j) for j in range(max(0, k - 5), min(n, k + 6))
             if j != k and psnr(src[j][:w * h], src[k][:w * h]) < own - 3]
        if own < 30 or (p and own <= max(p)[0]):
            bad.append('%s frame %d: %.2f dB against its source, %.2f against frame %d' %
                       ((label, k, own) + (max(p) if p else (0, -1))))
            break
if len(rec) != n:
    bad.append('--recon has %d frames, expected %d' % (len(rec), n))
elif len(ff) == n:
    worst = min((psnr(rec[k], ff[k]), k) for k in range(n))
    if worst[0] < 50:
        bad.append('--recon vs ffmpeg %.2f dB on frame %d' % worst)
print('; '.join(bad) if bad else 'ok %s' % types)
EOF
)
    check "$name/syntax-order-recon" "$d" [ "${d%% *}" = ok ]
    [ -z "${VERBOSE:-}" ] || echo "     $name: $d" >&2
}

# encode NAME CLIP W H N ARGS...: encode and judge
encode() {
    local name=$1 clip=$2 w=$3 h=$4 n=$5; shift 5
    local ext=m2v
    case " $* " in *" --format mpeg1 "*) ext=m1v ;; esac
    if ! "$MPEGENC" --quiet -i "$clip" -o "$TMP/$name.$ext" --recon "$TMP/$name.rec.y4m" "$@" \
        2>"$TMP/$name.err"; then
        fail "$name/encode" "$(cat "$TMP/$name.err")"
        return
    fi
    judge "$name" "$clip" "$TMP/$name.$ext" "$TMP/$name.rec.y4m" "$w" "$h" "$n"
}

# the picture types of a --log CSV, in display order
types() {
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "type") t = i; next } { printf "%s", $t }' "$1"
}

make_y4m "$TMP/ts.y4m" 176x144 17
make_y4m "$TMP/odd.y4m" 200x120 11 mandelbrot
# a cut in the middle of a group: testsrc2, then mandelbrot
ffmpeg -v error -y -f lavfi -i "testsrc2=size=176x144:rate=25" -f lavfi -i "mandelbrot=size=176x144:rate=25" \
    -filter_complex "[0]trim=end_frame=5[a];[1]trim=end_frame=8,setpts=PTS-STARTPTS[b];[a][b]concat" \
    -frames:v 13 -pix_fmt yuv420p -f yuv4mpegpipe "$TMP/cut.y4m"

for fmt in mpeg1 mpeg2; do
    # GOP 7: I B B P B B P, the next GOP's last group ends early; 17 frames
    # end in the middle of the third GOP's first group
    encode "$fmt-gop7" "$TMP/ts.y4m" 176 144 17 --format $fmt --bframes 2 --gop 7 --b-adapt 0 \
        --log "$TMP/$fmt-gop7.csv"
    t=$(types "$TMP/$fmt-gop7.csv")
    check "$fmt-gop7/fixed-pattern" "types $t" [ "$t" = IBBPBBPIBBPBBPIBP ]
    encode "$fmt-odd-b3" "$TMP/odd.y4m" 200 120 11 --format $fmt --bframes 3 --gop 12
done
encode cut "$TMP/cut.y4m" 176 144 13 --bframes 2 --gop 12
encode gop1 "$TMP/ts.y4m" 176 144 17 --bframes 2 --gop 1
encode gop2-b4 "$TMP/ts.y4m" 176 144 17 --bframes 4 --gop 2
encode b4-q2 "$TMP/ts.y4m" 176 144 17 --bframes 4 --gop 15 --q 2
for n in 1 2 3; do
    encode "frames$n" "$TMP/ts.y4m" 176 144 $n --bframes 2 --frames $n
done
encode hier "$TMP/ts.y4m" 176 144 17 --bframes 2 --me hier --gop 9

# one stream for every thread count and backend
"$MPEGENC" --quiet -i "$TMP/ts.y4m" -o "$TMP/t1.m2v" --bframes 2 --threads 1
"$MPEGENC" --quiet -i "$TMP/ts.y4m" -o "$TMP/t2.m2v" --bframes 2 --threads 2
check threads-1-vs-2 "streams differ" cmp -s "$TMP/t1.m2v" "$TMP/t2.m2v"
if "$MPEGENC" --list-backends 2>/dev/null | grep -q '^opencl *available'; then
    for t in 1 2; do
        "$MPEGENC" --quiet -i "$TMP/ts.y4m" -o "$TMP/o$t.m2v" --bframes 2 --threads $t --backend opencl 2>/dev/null
        check "cpu-vs-opencl-threads$t" "streams differ" cmp -s "$TMP/t1.m2v" "$TMP/o$t.m2v"
    done
else
    skip cpu-vs-opencl "no OpenCL platform here"
fi

# rate control with B pictures
"$MPEGENC" --quiet -i "$TMP/ts.y4m" -o "$TMP/vbv.m2v" --bframes 2 --bitrate 300k
v=$(python3 "$ROOT/tests/e2e/vbv_check.py" "$TMP/vbv.m2v" 2>&1)
check bitrate-vbv "$v" [ "${v%%:*}" = ok ]
"$MPEGENC" --quiet -i "$TMP/ts.y4m" -o "$TMP/tp.m2v" --bframes 2 --target-psnr 40 --log "$TMP/tp.csv"
v=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "psnr_y_db") c = i; if ($i == "type") t = i } next }
             { n++; b += $t == "B"; if ($c < 40) bad = bad " " $1 }
             END { print (bad == "" && b > 0 ? "ok" : "bad") " " n " frames, " b " B, below 40 dB:" bad }' "$TMP/tp.csv")
check target-psnr-every-picture "$v" [ "${v%% *}" = ok ]
"$MPEGENC" --quiet -i "$TMP/ts.y4m" -o "$TMP/ps.mpg" --bframes 2
n=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of default=nw=1:nk=1 "$TMP/ps.mpg")
if d=$(ffmpeg_clean_decode "$TMP/ps.mpg" </dev/null) && [ "$n" = 17 ]; then
    pass program-stream
else
    fail program-stream "$n frames; $d"
fi

# --b-adapt 1: a still texture and the same texture panning 80 px per frame
ffmpeg -v error -y -f lavfi -i "nullsrc=s=1344x288,geq=lum='random(1)*255':cb=128:cr=128,gblur=sigma=1.5" \
    -frames:v 1 "$TMP/tex.png"
for v in 0 80; do
    ffmpeg -v error -y -loop 1 -i "$TMP/tex.png" -vf "crop=352:288:x='$v*n':y=0,format=yuv420p" \
        -frames:v 13 -f yuv4mpegpipe "$TMP/pan$v.y4m"
    encode "adapt-pan$v" "$TMP/pan$v.y4m" 352 288 13 --log "$TMP/pan$v.csv"
    if "$MPEGENC" --list-backends 2>/dev/null | grep -q '^opencl *available'; then
        "$MPEGENC" --quiet -i "$TMP/pan$v.y4m" -o "$TMP/pan$v.ocl.m2v" --backend opencl 2>/dev/null
        check "adapt-pan$v/cpu-vs-opencl" "streams differ" cmp -s "$TMP/adapt-pan$v.m2v" "$TMP/pan$v.ocl.m2v"
    fi
done
still=$(types "$TMP/pan0.csv") fast=$(types "$TMP/pan80.csv")
nb() { local s=${1//[^B]/}; echo ${#s}; }
check adapt-still-more-b "still $still, pan $fast" \
    test "$(nb "$still")" -ge 8 -a "$(nb "$fast")" -le 2 -a "${still#*BBB}" != "$still"

# --pb-ratio 1.3 at --q 4: 5 where the references predict the B picture,
# 4 where they predict nothing of it (fresh grain on a flat field)
ffmpeg -v error -y -f lavfi -i "color=c=gray:s=176x144:r=25" -vf "noise=alls=20:allf=t,format=yuv420p" \
    -frames:v 9 -f yuv4mpegpipe "$TMP/grain.y4m"
encode grain "$TMP/grain.y4m" 176 144 9 --q 4 --scenecut 0 --log "$TMP/grain.csv"
bq() { awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "type") t = i; if ($i == "qscale") q = i } next }
                $t == "B" { printf "%s ", $q }' "$1"; }
still_q=$(bq "$TMP/pan0.csv") grain_q=$(bq "$TMP/grain.csv")
check pb-ratio-where-predicted "B quantisers: still $still_q, grain $grain_q" \
    test -n "$grain_q" -a -z "${still_q//5 /}" -a -z "${grain_q//4 /}"
# --ip-ratio auto at --q 4: 2 for a still's first I picture (the second, the
# clip's last frame, has no picture after it to carry into: 4), 4 where
# nothing carries
iq() { awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "type") t = i; if ($i == "qscale") q = i } next }
                $t == "I" { printf "%s ", $q }' "$1"; }
still_q=$(iq "$TMP/pan0.csv") grain_q=$(iq "$TMP/grain.csv")
check ip-ratio-auto "I quantisers: still $still_q, grain $grain_q" \
    test "$still_q" = "2 4 " -a -n "$grain_q" -a -z "${grain_q//4 /}"
