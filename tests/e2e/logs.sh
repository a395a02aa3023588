#!/usr/bin/env bash
# End-to-end: logs in the shapes people already parse (issue 21 item 6).
# - --log FILE.json is libvmaf's JSON document: frames (frameNum, metrics
#   by name) in display order, pooled min/max/mean/harmonic_mean, read back
#   by Python's json module and checked against the CSV log of the same run;
# - the end-of-run lines in x264's shape: PSNR Mean Y/U/V, Avg, Global
#   (checked against ffmpeg's psnr "average" on the decoded stream), kb/s;
#   SSIM Mean Y with its dB figure (against ffmpeg's ssim); MAD and
#   BLIINDS-II mean and worst frame (against the CSV log).
. "$(dirname "$0")/lib.bash"

[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }
if ! have ffmpeg || ! have python3; then
    skip all "ffmpeg or python3 not installed (make test installs them)"; exit 0
fi

make_y4m "$TMP/clip.y4m" 96x64 12
args=(--quiet -i "$TMP/clip.y4m" --q 6 --gop 6 --iqa all)
"$MPEGENC" "${args[@]}" -o "$TMP/a.m2v" --log "$TMP/a.csv" 2>/dev/null &&
    "$MPEGENC" "${args[@]}" -o "$TMP/b.m2v" --log "$TMP/a.json" 2>/dev/null ||
    { fail encode "mpegenc failed"; exit 0; }
res=$(python3 - "$TMP/a.json" "$TMP/a.csv" <<'PY'
import csv, json, math, sys
d = json.load(open(sys.argv[1]))
rows = list(csv.DictReader(open(sys.argv[2])))
bad = []
if list(d) != ["version", "fps", "frames", "pooled_metrics", "aggregate_metrics"]:
    bad.append("top-level keys %s" % list(d))
if [f["frameNum"] for f in d["frames"]] != list(range(len(rows))):
    bad.append("frameNum not 0..%d in order" % (len(rows) - 1))
names = ["psnr_y_db", "psnr_cb_db", "psnr_cr_db", "ssim_y", "mad", "mad_detect", "mad_appear", "bliinds"]
for f, r in zip(d["frames"], rows):
    if sorted(f["metrics"]) != sorted(names):
        bad.append("frame %d metrics %s" % (f["frameNum"], sorted(f["metrics"])))
        break
    for n in names:
        if abs(f["metrics"][n] - float(r[n])) > 1e-6 * max(1, abs(float(r[n]))):
            bad.append("frame %d %s %s vs csv %s" % (f["frameNum"], n, f["metrics"][n], r[n]))
for n in names:
    v = [float(r[n]) for r in rows]
    p = d["pooled_metrics"].get(n, {})
    want = {"min": min(v), "max": max(v), "mean": sum(v) / len(v),
            "harmonic_mean": len(v) / sum(1 / (x + 1) for x in v) - 1}
    for k, w in want.items():
        if k not in p or abs(p[k] - w) > 2e-6 * max(1, abs(w)):
            bad.append("pooled %s %s = %s, want %.6f" % (n, k, p.get(k), w))
print("ok" if not bad else "; ".join(bad[:4]))
PY
)
check json-libvmaf-shape "$res" [ "$res" = ok ]

# Records of the logged measures (scored on quality lanes, several pictures
# in flight) come out complete, in display order, each with its own
# picture's values: rows 0..N-1 with SSIM and MAD on every one, the last
# included, and each SSIM equal to ffmpeg's of the reconstruction (--recon,
# written as pictures come out) against its source.
# An odd frame count ends on B frames that the flush turns into a P.
for bf in 2 0; do
    "$MPEGENC" --quiet -i "$TMP/clip.y4m" --frames 11 --q 6 --gop 6 --bframes $bf --iqa ssim,mad \
        --threads 2 -o "$TMP/lane$bf.m2v" --log "$TMP/lane$bf.csv" --recon "$TMP/lane$bf.y4m" 2>"$TMP/err" ||
        { fail "lanes-bframes-$bf" "mpegenc failed: $(cat "$TMP/err")"; continue; }
    ffmpeg -hide_banner -nostats -v error -i "$TMP/lane$bf.y4m" -i "$TMP/clip.y4m" \
        -lavfi "[0:v]settb=1/25,setpts=N[a];[1:v]settb=1/25,setpts=N[b];[a][b]ssim=shortest=1:stats_file=$TMP/lane$bf.ssim" \
        -f null - 2>>"$TMP/err"
    res=$(python3 - "$TMP/lane$bf.csv" "$TMP/lane$bf.ssim" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ff = [float(l.split("Y:")[1].split()[0]) for l in open(sys.argv[2]) if "Y:" in l]
bad = []
if [int(r["frame"]) for r in rows] != list(range(11)):
    bad.append("frames %s, want 0..10 in order" % [r["frame"] for r in rows])
for r, y in zip(rows, ff):
    if r["ssim_y"] == "" or r["mad"] == "" or abs(float(r["ssim_y"]) - y) > 1.5e-6:
        bad.append("frame %s ssim_y '%s' mad '%s', ffmpeg's %.6f" % (r["frame"], r["ssim_y"], r["mad"], y))
if len(ff) != 11:
    bad.append("ffmpeg compared %d pictures" % len(ff))
print("ok" if not bad else "; ".join(bad[:3]))
PY
)
    check "lanes-records-bframes-$bf" "$res" [ "$res" = ok ]
done

# the peer-shaped summary lines (stderr of a run without --quiet)
"$MPEGENC" -i "$TMP/clip.y4m" --q 6 --gop 6 --iqa all -o "$TMP/c.m2v" 2>"$TMP/err" >/dev/null
cmp -s "$TMP/a.m2v" "$TMP/c.m2v" || fail same-stream "the log format changed the stream"
psnr_line=$(grep '^mpegenc: PSNR Mean Y:' "$TMP/err")
ssim_line=$(grep '^mpegenc: SSIM Mean Y:' "$TMP/err")
mad_line=$(grep '^mpegenc: MAD Mean:' "$TMP/err")
bl_line=$(grep '^mpegenc: BLIINDS-II Mean:' "$TMP/err")
check peer-lines-present "stderr: $(cat "$TMP/err")" sh -c "[ -n '$psnr_line' ] && [ -n '$ssim_line' ] && [ -n '$mad_line' ] && [ -n '$bl_line' ]"
ff=$(ffmpeg -hide_banner -nostats -i "$TMP/c.m2v" -i "$TMP/clip.y4m" \
    -lavfi "[0:v]settb=1/25,setpts=N[a];[1:v]settb=1/25,setpts=N[b];[a][b]psnr" -f null - 2>&1 |
    sed -n 's/.*PSNR y:.* average:\([0-9.]*\).*/\1/p')
ffs=$(ffmpeg -hide_banner -nostats -i "$TMP/c.m2v" -i "$TMP/clip.y4m" \
    -lavfi "[0:v]settb=1/25,setpts=N[a];[1:v]settb=1/25,setpts=N[b];[a][b]ssim" -f null - 2>&1 |
    sed -n 's/.*SSIM Y:\([0-9.]*\).*/\1/p')
res=$(python3 - "$TMP/a.csv" "$psnr_line" "$ssim_line" "$mad_line" "$bl_line" "$ff" "$ffs" <<'PY'
import csv, re, sys
rows = list(csv.DictReader(open(sys.argv[1])))
psnr, ssim, mad, bl, ff, ffs = sys.argv[2:8]
bad = []
m = re.match(r"mpegenc: PSNR Mean Y:([\d.]+) U:([\d.]+) V:([\d.]+) Avg:([\d.]+) Global:([\d.]+) kb/s:([\d.]+)$", psnr)
if not m:
    bad.append("PSNR line shape: %r" % psnr)
else:
    y, u, v, avg, glob, kbs = map(float, m.groups())
    for got, col in ((y, "psnr_y_db"), (u, "psnr_cb_db"), (v, "psnr_cr_db")):
        want = sum(float(r[col]) for r in rows) / len(rows)
        if abs(got - want) > 0.0006:
            bad.append("%s mean %.3f, log says %.4f" % (col, got, want))
    if abs(glob - float(ff)) > 0.02:
        bad.append("Global %.3f vs ffmpeg's average %s" % (glob, ff))
    want_kbs = sum(int(r["bits"]) for r in rows) / len(rows) * 25 / 1000
    if abs(kbs - want_kbs) > 0.01:
        bad.append("kb/s %.2f vs %.2f" % (kbs, want_kbs))
m = re.match(r"mpegenc: SSIM Mean Y:([\d.]+) \(([\d.]+)db\)$", ssim)
if not m or abs(float(m.group(1)) - float(ffs)) > 0.0005:
    bad.append("SSIM line %r vs ffmpeg %s" % (ssim, ffs))
for line, col, lab in ((mad, "mad", "MAD"), (bl, "bliinds", "BLIINDS-II")):
    m = re.match(r"mpegenc: %s Mean:([\d.]+) Worst:([\d.]+) \(frame (\d+)\)$" % lab, line)
    vals = [float(r[col]) for r in rows]
    if not m:
        bad.append("%s line shape %r" % (lab, line))
        continue
    mean, worst, fr = float(m.group(1)), float(m.group(2)), int(m.group(3))
    if abs(mean - sum(vals) / len(vals)) > 0.001 or abs(worst - max(vals)) > 0.001 or vals[fr] != max(vals):
        bad.append("%s mean %.3f worst %.3f frame %d; log: %.3f %.3f" % (lab, mean, worst, fr, sum(vals) / len(vals), max(vals)))
print("ok" if not bad else "; ".join(bad))
PY
)
check peer-lines-values "$res" [ "$res" = ok ]

# only PSNR measured: the PSNR line alone
"$MPEGENC" -i "$TMP/clip.y4m" --q 6 -o "$TMP/d.m2v" 2>"$TMP/err2" >/dev/null
n=$(grep -c '^mpegenc: \(SSIM\|MAD\|BLIINDS\)' "$TMP/err2")
check peer-lines-only-measured "$(cat "$TMP/err2")" sh -c "[ $n = 0 ] && grep -q '^mpegenc: PSNR Mean Y:' '$TMP/err2'"

# --iqa-backend names where MAD and BLIINDS-II run: PSNR and SSIM, which
# have no CUDA version, still run (on the cpu) with --iqa-backend cuda
err=$("$MPEGENC" --quiet -i "$TMP/clip.y4m" --q 6 -o "$TMP/f.m2v" --iqa psnr,ssim --iqa-backend cuda \
      --log "$TMP/f.csv" 2>&1); rc=$?
check iqa-backend-cuda-psnr-ssim "rc $rc: $err" sh -c "[ $rc = 0 ] && head -1 '$TMP/f.csv' | grep -q ssim_y"

err=$("$MPEGENC" -i "$TMP/clip.y4m" -o "$TMP/e.m2v" --log "$TMP/e.txt" 2>&1); rc=$?
error_verdict bad-log-extension 2 "e\.txt: the log is CSV, JSON Lines or libvmaf-style JSON" "$rc" "$err" "$(ls "$TMP" | grep '^e\.' || true)"
exit 0
