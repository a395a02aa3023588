#!/usr/bin/env bash
# End-to-end: --report FILE.html.  An encode with PSNR and SSIM measured
# writes one self-contained page whose charts hold one marker per coded
# picture (counted against ffprobe's count of the stream), whose PSNR-Y
# tooltips are the reconstruction's PSNR as ffmpeg measures it, and which
# headless Chromium renders into a screenshot of the requested size that is
# not blank.  A failed encode leaves no report behind.
. "$(dirname "$0")/lib.bash"

[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }
if ! have ffmpeg; then skip all "ffmpeg not installed (make test installs it)"; exit 0; fi

FRAMES=14
make_y4m "$TMP/in.y4m" 176x144 $FRAMES
# an output name with markup characters: the page must show it escaped
OUTNAME='o&k<1>.m2v'
REPORT="$TMP/r.html"

if ! "$MPEGENC" --quiet -i "$TMP/in.y4m" -o "$TMP/$OUTNAME" --q 5 --iqa psnr,ssim \
        --recon "$TMP/recon.y4m" --report "$REPORT" 2>"$TMP/err"; then
    fail encode "mpegenc failed: $(cat "$TMP/err")"; exit 0
fi
if [ -s "$REPORT" ]; then pass written; else fail written "no $REPORT"; exit 0; fi
left=$(cd "$TMP" && ls -A | grep -- '\.tmp-')
if [ -z "$left" ]; then pass no-temporaries; else fail no-temporaries "left behind: $left"; fi

# --- content ------------------------------------------------------------
coded=$(probe "$TMP/$OUTNAME" | awk '{ print $3 }')
if [ "$coded" = "$FRAMES" ]; then pass frames-coded; else fail frames-coded "ffprobe counts '$coded' pictures, expected $FRAMES"; fi

# markers per chart (one marker per line: "<circle ... data-frame=...")
# and the frame numbers of the PSNR chart's markers, in order
counts=$(awk '/ data-chart="/ { c = $0; sub(/.* data-chart="/, "", c); sub(/".*/, "", c) }
              /<circle[^>]* data-frame="/ { n[c]++ }
              END { for (k in n) print k, n[k] }' "$REPORT" | sort | tr '\n' ' ')
want="bits $coded psnr $coded qscale $coded ssim $coded "
if [ "$counts" = "$want" ]; then pass markers; else fail markers "got '$counts', expected '$want'"; fi
frames=$(awk '/ data-chart="psnr"/ { on = 1 } /<\/svg>/ { on = 0 }
              on && /<circle[^>]* data-frame="/ { f = $0; sub(/.* data-frame="/, "", f); sub(/".*/, "", f); printf "%s ", f }' "$REPORT")
if [ "$frames" = "$(seq -s ' ' 0 $((coded - 1))) " ]; then pass frame-numbers; else fail frame-numbers "'$frames'"; fi

if grep -qi 'nan\|inf' "$REPORT"; then fail no-nan "$(grep -oi '.\{20\}\(nan\|inf\).\{20\}' "$REPORT" | head -n 2)"; else pass no-nan; fi
if grep -q '<script\|<link\|src=\|url(\|https:' "$REPORT"; then fail self-contained "refers to something outside"; else pass self-contained; fi
if grep -qF 'o&amp;k&lt;1&gt;.m2v' "$REPORT" && ! grep -qF "$OUTNAME" "$REPORT"; then
    pass escaped-name
else
    fail escaped-name "'$OUTNAME' is not shown escaped"
fi

# PSNR-Y tooltips ("#N T: Y 41.2345, Cb ..., Cr ... dB") against ffmpeg's
# per-frame PSNR of the reconstruction (stats print 2 decimals)
ffmpeg -hide_banner -nostats -i "$TMP/in.y4m" -i "$TMP/recon.y4m" \
    -lavfi "[0:v]setpts=N/25/TB[a];[1:v]setpts=N/25/TB[b];[a][b]psnr=stats_file=$TMP/psnr.txt" \
    -f null - >/dev/null 2>&1
ours=$(awk '/ data-chart="psnr"/ { on = 1 } /<\/svg>/ { on = 0 }
            on && /<circle[^>]* data-frame="/ { v = $0; sub(/.*<title>#[0-9]* [IP]: Y /, "", v); sub(/,.*/, "", v); print v }' "$REPORT")
theirs=$(sed -n 's/.*psnr_y:\([0-9.inf]*\).*/\1/p' "$TMP/psnr.txt")
why=$(paste -d' ' <(printf '%s\n' "$ours") <(printf '%s\n' "$theirs") | awk -v n="$coded" '
    { k++; d = $1 - $2; if (d < 0) d = -d; if ($2 == "" || d > 0.006) { print "frame " k - 1 ": " $1 " vs ffmpeg " $2; bad = 1; exit } }
    END { if (!bad && k != n) print k " values for " n " frames" }')
if [ -z "$why" ] && [ -n "$theirs" ]; then pass psnr-values; else fail psnr-values "${why:-ffmpeg gave no per-frame PSNR}"; fi

if have python3; then
    if why=$(python3 - "$REPORT" 2>&1 <<'EOF'
import sys, html.parser, xml.etree.ElementTree as ET
src = open(sys.argv[1], encoding="utf-8").read()
html.parser.HTMLParser().feed(src)
ET.fromstring(src)
EOF
    ); then pass parses; else fail parses "$why"; fi
else
    skip parses "python3 not installed"
fi

# --- rendering -----------------------------------------------------------
if ! have chromium; then
    skip render "chromium not installed (Debian package chromium)"
else
    W=1200 H=3000
    t0=$(date +%s.%N)
    timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --user-data-dir="$TMP/chromium" --screenshot="$TMP/shot.png" --window-size=$W,$H \
        "file://$REPORT" >"$TMP/chromium.log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    echo "     chromium screenshot: $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s"
    if [ $rc -ne 0 ] || [ ! -s "$TMP/shot.png" ]; then
        fail render "chromium exited with $rc: $(tail -n 3 "$TMP/chromium.log")"
    else
        size=$(ffprobe -v error -select_streams v:0 -show_entries stream=codec_name,width,height \
            -of csv=p=0 "$TMP/shot.png")
        if [ "$size" = "png,$W,$H" ]; then pass screenshot-size; else fail screenshot-size "got '$size', expected png,$W,$H"; fi
        # not blank: dark text on a white page, and colour (the chart lines)
        stats=$(ffmpeg -hide_banner -nostats -i "$TMP/shot.png" \
            -vf "signalstats,metadata=print:file=-" -f null - 2>/dev/null |
            sed -n 's/^lavfi\.signalstats\.\(YMIN\|YMAX\|UMIN\|UMAX\|VMIN\|VMAX\)=\([0-9]*\).*/\1=\2/p' | tr '\n' ' ')
        if printf '%s' "$stats" | awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); s[kv[1]] = kv[2] } }
                END { exit !(s["YMAX"] - s["YMIN"] > 100 && (s["UMAX"] - s["UMIN"] > 20 || s["VMAX"] - s["VMIN"] > 20)) }'; then
            pass screenshot-content
        else
            fail screenshot-content "looks blank or grey: $stats"
        fi
    fi
fi

# --- a failed encode writes no report ------------------------------------
mkdir -p "$TMP/fail"
"$MPEGENC" --quiet -i "$TMP/nope.y4m" -o "$TMP/fail/x.m2v" --report "$TMP/fail/x.html" 2>/dev/null
if [ -z "$(ls -A "$TMP/fail")" ]; then pass failed-encode; else fail failed-encode "left: $(ls -A "$TMP/fail")"; fi
