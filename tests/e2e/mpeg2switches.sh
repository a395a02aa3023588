#!/usr/bin/env bash
# End-to-end: MPEG-2's own coding switches (--intra-vlc, --scan,
# --dc-precision, --qscale-type, --cqm), one at a time and together:
#  - the defaults: --cqm ramp (loaded in the sequence header; the standard's
#    matrices under --target-mad), under --q the first I picture's table
#    from a sample of its levels (B.15 on testsrc2, B.14 on a smooth
#    gradient; B.14 under a target), zigzag,
#    8-bit DC, linear under --q and non-linear under a target;
#  - the stream signals what was asked (picture coding extension's
#    intra_dc_precision, q_scale_type, intra_vlc_format, alternate_scan; the
#    sequence header's load_*_quantiser_matrix and the matrices themselves);
#  - ffmpeg -xerror and libmpeg2 decode every picture; --recon is what ffmpeg
#    decodes (>= 50 dB), so quantiser, trellis and dequantiser agree with the
#    decoder on the table, scan, DC precision and matrices;
#  - byte-identical for --threads 1 and 2, and the cpu and opencl backends
#    (where OpenCL runs);
#  - a bad --cqm file (too few or too many values, 0, 256, an intra DC entry
#    other than 8, an unknown matrix name, a word where a number belongs, no
#    such file) and MPEG-2-only switches with --format mpeg1: one line on
#    stderr naming the problem (file and line for a file), exit status 2, no
#    output.
. "$(dirname "$0")/lib.bash"

[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }
if ! have ffmpeg || ! have mpeg2dec || ! have python3; then
    skip all "ffmpeg/mpeg2dec/python3 not installed (make test installs them)"; exit 0
fi

make_y4m "$TMP/clip.y4m" 176x144 8

# A tilted intra and non-intra matrix in x264's cqm format (raster order).
python3 - "$TMP/tilt.cqm" <<'EOF'
import sys
intra = [8] + [16 + (i // 8 + i % 8) * 4 // 7 for i in range(1, 64)]
inter = [16 + (i // 8 + i % 8) // 2 for i in range(64)]
with open(sys.argv[1], "w") as f:
    f.write("# a test matrix\nINTRA8X8_LUMA =\n")
    for r in range(8):
        f.write(", ".join(map(str, intra[r * 8:r * 8 + 8])) + ",\n")
    f.write("INTER8X8_LUMA = " + " ".join(map(str, inter)) + "\n")
EOF

# What the first sequence header and picture coding extension of a stream
# signal: "dc=BITS qst=N ivlc=N alt=N intra=MATRIX|- inter=MATRIX|-"
# (matrices in zigzag order as sent, comma-separated).
signalled() {
    python3 - "$1" <<'EOF'
import sys
d = open(sys.argv[1], "rb").read()
class Bits:
    def __init__(self, b, pos): self.b, self.pos = b, pos * 8
    def get(self, n):
        v = 0
        for _ in range(n):
            v = v << 1 | (self.b[self.pos >> 3] >> (7 - (self.pos & 7))) & 1
            self.pos += 1
        return v
s = Bits(d, d.index(b"\x00\x00\x01\xb3") + 4)
s.get(12 + 12 + 4 + 4 + 18 + 1 + 10 + 1)
mats = []
for _ in range(2):
    mats.append(",".join(str(s.get(8)) for _ in range(64)) if s.get(1) else "-")
i = d.index(b"\x00\x00\x01\x00")
while True:
    i = d.index(b"\x00\x00\x01\xb5", i + 4)
    if d[i + 4] >> 4 == 8:
        break
p = Bits(d, i + 4)
p.get(4 + 16)
dc = p.get(2); p.get(2 + 1 + 1 + 1)
qst, ivlc, alt = p.get(1), p.get(1), p.get(1)
print("dc=%d qst=%d ivlc=%d alt=%d intra=%s inter=%s" % (8 + dc, qst, ivlc, alt, mats[0], mats[1]))
EOF
}

zigzag="0 1 8 16 9 2 3 10 17 24 32 25 18 11 4 5 12 19 26 33 40 48 41 34 27 20 13 6 7 14 21 28 35 42 49 56 57 50 43 36 29 22 15 23 30 37 44 51 58 59 52 45 38 31 39 46 53 60 61 54 47 55 62 63"
# the tilted matrices in zigzag order, as the header must carry them
tilt_intra=$(python3 -c "
z = '$zigzag'.split(); m = [8] + [16 + (i // 8 + i % 8) * 4 // 7 for i in range(1, 64)]
print(','.join(str(m[int(k)]) for k in z))")
tilt_inter=$(python3 -c "
z = '$zigzag'.split(); m = [16 + (i // 8 + i % 8) // 2 for i in range(64)]
print(','.join(str(m[int(k)]) for k in z))")
flat_intra="8$(printf ',16%.0s' $(seq 63))"
# --cqm ramp: 16 + round(8 (u + v) / 14), intra DC entry 8
ramp_intra=$(python3 -c "
z = '$zigzag'.split(); m = [8] + [16 + round((i // 8 + i % 8) * 8 / 14) for i in range(1, 64)]
print(','.join(str(m[int(k)]) for k in z))")

# [CLIP=Y4M] stream NAME WANT-SIGNALLED ARGS...: encode (clip.y4m unless
# CLIP names another), check what the stream signals, both decoders, recon ==
# decode, threads and backends
stream() {
    local name=$1 want=$2 s="$TMP/$1.m2v" got clip=${CLIP:-$TMP/clip.y4m}
    shift 2
    if ! "$MPEGENC" --quiet --threads 1 --backend cpu -i "$clip" -o "$s" \
            --recon "$TMP/$name.rec.y4m" "$@" 2>"$TMP/$name.err"; then
        fail "$name" "mpegenc failed: $(cat "$TMP/$name.err")"
        return
    fi
    got=$(signalled "$s")
    check "$name/signalled" "stream signals '$got', expected '$want'" [ "$got" = "$want" ]
    check_decodes "$name" "$s" 8 "$TMP/$name.rec.y4m"
    "$MPEGENC" --quiet --threads 2 --backend cpu -i "$clip" -o "$TMP/$name.t2.m2v" "$@" 2>/dev/null
    check "$name/threads-1-2-identical" "streams differ" cmp -s "$s" "$TMP/$name.t2.m2v"
    if [ "$OPENCL" = 1 ]; then
        "$MPEGENC" --quiet --threads 1 --backend opencl -i "$clip" -o "$TMP/$name.ocl.m2v" "$@" 2>/dev/null
        check "$name/opencl-identical" "streams differ" cmp -s "$s" "$TMP/$name.ocl.m2v"
    fi
}

OPENCL=0
"$MPEGENC" --quiet -i "$TMP/clip.y4m" -o "$TMP/ocl-probe.m2v" --backend opencl 2>/dev/null && OPENCL=1
[ "$OPENCL" = 1 ] || skip opencl "no OpenCL device"

# --intra-vlc auto's first I picture under --q: the table a sample of its
# plain levels codes in fewer bits: B.15 for testsrc2's detail, B.14 (its
# shorter end_of_block) for a smooth gradient; under a target, B.14
stream default "dc=8 qst=0 ivlc=1 alt=0 intra=$ramp_intra inter=-"
stream default-target "dc=8 qst=1 ivlc=0 alt=0 intra=$ramp_intra inter=-" --target-psnr 40
stream default-target-mad "dc=8 qst=1 ivlc=0 alt=0 intra=- inter=-" --target-mad 30
ffmpeg -v error -y -f lavfi -i "nullsrc=s=176x144:r=25,geq=lum='(X+Y)/2':cb=128:cr=128,format=yuv420p" \
    -frames:v 8 -f yuv4mpegpipe "$TMP/gradient.y4m"
CLIP="$TMP/gradient.y4m" stream default-smooth "dc=8 qst=0 ivlc=0 alt=0 intra=$ramp_intra inter=-"
stream cqm-ramp "dc=8 qst=0 ivlc=0 alt=0 intra=$ramp_intra inter=-" --cqm ramp --intra-vlc 0
stream intra-vlc-1 "dc=8 qst=0 ivlc=1 alt=0 intra=- inter=-" --intra-vlc 1 --cqm mpeg --dc-precision 8
stream intra-vlc-0 "dc=8 qst=0 ivlc=0 alt=0 intra=- inter=-" --intra-vlc 0 --cqm mpeg --dc-precision 8
stream scan-alternate "dc=8 qst=0 ivlc=0 alt=1 intra=- inter=-" --scan alternate --intra-vlc 0 \
    --cqm mpeg --dc-precision 8
stream dc-9 "dc=9 qst=0 ivlc=0 alt=0 intra=- inter=-" --dc-precision 9 --intra-vlc 0 --cqm mpeg
stream dc-10 "dc=10 qst=0 ivlc=0 alt=0 intra=- inter=-" --dc-precision 10 --intra-vlc 0 --cqm mpeg
stream nonlinear-q13 "dc=8 qst=1 ivlc=0 alt=0 intra=- inter=-" --qscale-type nonlinear --q 13 \
    --intra-vlc 0 --cqm mpeg --dc-precision 8
stream cqm-flat "dc=8 qst=0 ivlc=0 alt=0 intra=$flat_intra inter=-" --cqm flat --intra-vlc 0 \
    --dc-precision 8
stream cqm-file "dc=8 qst=0 ivlc=0 alt=0 intra=$tilt_intra inter=$tilt_inter" --cqm "$TMP/tilt.cqm" \
    --intra-vlc 0 --dc-precision 8
stream all "dc=10 qst=1 ivlc=1 alt=1 intra=$tilt_intra inter=$tilt_inter" --cqm "$TMP/tilt.cqm" \
    --intra-vlc 1 --scan alternate --dc-precision 10 --qscale-type nonlinear --q 2
stream all-target "dc=10 qst=1 ivlc=1 alt=1 intra=$flat_intra inter=-" --cqm flat --intra-vlc 1 \
    --scan alternate --dc-precision 10 --target-psnr 40

# MPEG-1 loads matrices too
if "$MPEGENC" --quiet --format mpeg1 -i "$TMP/clip.y4m" -o "$TMP/m1.m1v" --recon "$TMP/m1.rec.y4m" \
        --cqm "$TMP/tilt.cqm" 2>"$TMP/m1.err"; then
    if d=$(ffmpeg_clean_decode "$TMP/m1.m1v"); then pass mpeg1-cqm/ffmpeg-clean; else fail mpeg1-cqm/ffmpeg-clean "$d"; fi
    ffmpeg -v error -y -i "$TMP/m1.m1v" -fps_mode passthrough -f yuv4mpegpipe "$TMP/m1.dec.y4m"
    got=$(psnr_y "$TMP/m1.rec.y4m" "$TMP/m1.dec.y4m")
    check mpeg1-cqm/recon-is-decode "--recon vs ffmpeg's decode: $got dB" ge "$got" 50
else
    fail mpeg1-cqm "mpegenc failed: $(cat "$TMP/m1.err")"
fi

# bad NAME PATTERN ARGS...: exit 2, one stderr line matching PATTERN, no output
bad() {
    local name=$1 pat=$2 rc=0 err
    shift 2
    mkdir -p "$TMP/out-$name"
    err=$("$MPEGENC" --quiet -i "$TMP/clip.y4m" -o "$TMP/out-$name/x.m2v" "$@" 2>&1 >/dev/null) || rc=$?
    error_verdict "$name" 2 "$pat" "$rc" "$err" "$(ls -A "$TMP/out-$name")"
}
cqm() { printf "$2" > "$TMP/$1.cqm"; }
cqm short 'INTRA8X8_LUMA =\n8 16 16\n'
cqm long "INTER8X8_LUMA =\n$(printf '16 %.0s' $(seq 65))\n"
cqm zero "INTER8X8_LUMA =\n0 $(printf '16 %.0s' $(seq 63))\n"
cqm big "# comment\nINTER8X8_LUMA =\n$(printf '16 %.0s' $(seq 63)) 256\n"
cqm dc "INTRA8X8_LUMA =\n16 $(printf '16 %.0s' $(seq 63))\n"
cqm name 'INTRA8X8_LUMAX =\n8\n'
cqm word "INTER8X8_LUMA =\n16 16 sixteen\n"
cqm empty '# nothing\n'
bad cqm-too-few "^mpegenc: --cqm .*short\.cqm:1: INTRA8X8_LUMA has 3 values, not 64$" --cqm "$TMP/short.cqm"
bad cqm-too-many "^mpegenc: --cqm .*long\.cqm:2: INTER8X8_LUMA has more than 64 values$" --cqm "$TMP/long.cqm"
bad cqm-zero "^mpegenc: --cqm .*zero\.cqm:2: '0' is not a matrix value 1\.\.255$" --cqm "$TMP/zero.cqm"
bad cqm-256 "^mpegenc: --cqm .*big\.cqm:3: '256' is not a matrix value 1\.\.255$" --cqm "$TMP/big.cqm"
bad cqm-intra-dc "^mpegenc: --cqm .*dc\.cqm:2: the intra matrix's first \(DC\) value is 16; MPEG requires 8$" \
    --cqm "$TMP/dc.cqm"
bad cqm-unknown-name "^mpegenc: --cqm .*name\.cqm:1: 'INTRA8X8_LUMAX' is neither a matrix name" \
    --cqm "$TMP/name.cqm"
bad cqm-word "^mpegenc: --cqm .*word\.cqm:2: 'sixteen' is neither a matrix name \(INTRA8X8_LUMA, INTER8X8_LUMA\) nor a value 1\.\.255$" --cqm "$TMP/word.cqm"
bad cqm-no-matrix "^mpegenc: --cqm .*empty\.cqm: no INTRA8X8_LUMA or INTER8X8_LUMA matrix$" --cqm "$TMP/empty.cqm"
bad cqm-missing-file "^mpegenc: --cqm .*nosuch\.cqm: No such file" --cqm "$TMP/nosuch.cqm"
bad scan-bad-word "^mpegenc: --scan: 'diagonal' is not one of auto, zigzag, alternate$" --scan diagonal
bad dc-precision-11 "^mpegenc: --dc-precision: '11' is not auto or an integer in 8\.\.10$" --dc-precision 11
bad mpeg1-intra-vlc "MPEG-2 only" --format mpeg1 --intra-vlc 1
exit 0
