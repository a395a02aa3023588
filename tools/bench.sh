#!/usr/bin/env bash
# make bench: speed and quality of mpegenc against ffmpeg's mpeg2video (and
# mjpegtools' mpeg2enc when installed) on the 10-frame 2048x2048 solar clip,
# every encoder in the same run.  docs/BENCH.md explains every column.
#
#   tools/bench.sh [options]        (make bench BENCH_ARGS="options")
#     --clip DIR|FILE.y4m|PATTERN  another clip: a directory of PNGs (name
#                              order), a printf pattern (f_%d.png) or a Y4M
#                              (default: ../shared/solar, checked against
#                              its SHA256SUMS first)
#     --frames N               first N frames only (default: all)
#     --long N                 the long-clip mode: the clip's PNG frames
#                              ping-ponged (0..9, 9..0, 0..9 ...) into N
#                              frames; q 5 only, no bitrate run, and for
#                              mpegenc also q 5 with --iqa all,
#                              --target-mad 9 and --target-bliinds 30; ffmpeg and ffmpeg -bf 2;
#                              best-of-runs ratios to ffmpeg first
#                              (options given explicitly still win)
#     --runs N                 timed runs per configuration, median reported
#                              (default 3)
#     --warmup N               untimed runs before them (default 1)
#     --q "LIST"               quantiser sweep (default "2 5 10")
#     --bitrate R              target-bitrate run, R as 8M or 8000k, or none
#                              (default 8M)
#     --backends "LIST"        mpegenc backends (default: every available one)
#     --encoders "LIST"        of mpegenc ffmpeg ffmpeg-rd mpeg2enc (default:
#                              those installed)
#     --inputs "LIST"          png and/or y4m (default: both)
#     --threads N              --threads of mpegenc, -threads of ffmpeg,
#                              -M of mpeg2enc (default: each one's own)
#     --iqa-frames N           MAD and BLIINDS-II on N frames of each q-5
#                              stream (default 2; 0: none)
#     --stats-iqa LIST         --iqa LIST for the --stats run, e.g. all: times
#                              the in-loop metrics (default: mpegenc's, psnr)
#     --no-quality             no PSNR, MAD, BLIINDS-II or BD-rate
#     --plot                   also write rd.svg and fps.svg
#     --out DIR                CSV and SVG directory (default bench/results)
# Environment, as before: SOLAR_DIR, MPEGENC, RUNS, THREADS, QUALITY=0; and
# MPEGENC_IQA (default: mpegenc-iqa beside MPEGENC), BENCH_COMMIT (the commit
# to print where the tree has no .git).
#
# Every repetition runs every configuration once, in turn, so that drift in
# the machine's speed hits all encoders alike; the first --warmup
# repetitions are not timed.  Timings are of the whole process (PNG decoding
# included for the PNG input).  Quality is measured once per distinct stream
# (the streams are deterministic, and identical streams share the numbers):
# ffmpeg decodes it and its psnr filter compares it with one Y4M that ffmpeg
# made from the PNGs, the same reference for every encoder.
set -eu
set -o pipefail
cd "$(dirname "$0")/.."

SOLAR_DIR=${SOLAR_DIR:-../shared/solar}
MPEGENC=${MPEGENC:-./mpegenc}
IQA_BIN=${MPEGENC_IQA:-$(dirname "$MPEGENC")/mpegenc-iqa}
RUNS=${RUNS:-3}
THREADS=${THREADS:-}
QUALITY=${QUALITY:-1}
WARMUP=1 QS="2 5 10" BITRATE=8M BACKENDS="" ENCODERS="" INPUTS="png y4m"
IQA_FRAMES=2 PLOT=0 STATS_IQA="" QUIET=--quiet OUTDIR=bench/results CLIP="" FRAMES=0 LONG=0
set_opts=" "

die() { echo "bench: $*" >&2; exit 2; }
need_arg() { [ $# -ge 2 ] || die "$1 needs a value"; }
while [ $# -gt 0 ]; do
    set_opts="$set_opts$1 "
    case $1 in
    --clip) need_arg "$@"; CLIP=$2; shift ;;
    --frames) need_arg "$@"; FRAMES=$2; shift ;;
    --long) need_arg "$@"; LONG=$2; shift ;;
    --runs) need_arg "$@"; RUNS=$2; shift ;;
    --warmup) need_arg "$@"; WARMUP=$2; shift ;;
    --q) need_arg "$@"; QS=$2; shift ;;
    --bitrate) need_arg "$@"; BITRATE=$2; shift ;;
    --backends) need_arg "$@"; BACKENDS=$2; shift ;;
    --encoders) need_arg "$@"; ENCODERS=$2; shift ;;
    --inputs) need_arg "$@"; INPUTS=$2; shift ;;
    --threads) need_arg "$@"; THREADS=$2; shift ;;
    --iqa-frames) need_arg "$@"; IQA_FRAMES=$2; shift ;;
    --stats-iqa) need_arg "$@"; STATS_IQA=$2; shift ;;
    --no-quality) QUALITY=0 ;;
    --plot) PLOT=1 ;;
    --out) need_arg "$@"; OUTDIR=$2; shift ;;
    -h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
    esac
    shift
done
isnum() { case $1 in ''|*[!0-9]*) return 1 ;; esac; }
for v in "$FRAMES" "$RUNS" "$WARMUP" "$IQA_FRAMES" "$LONG"; do isnum "$v" || die "not a count: $v"; done
# the long-clip mode's defaults, where the option was not given
given() { [[ $set_opts == *" $1 "* ]]; }
if [ "$LONG" -gt 0 ]; then
    [ "$FRAMES" = 0 ] || die "--long and --frames do not go together"
    given --q || QS=5
    given --bitrate || BITRATE=none
    given --iqa-frames || IQA_FRAMES=0
    given --encoders || ENCODERS="mpegenc ffmpeg ffmpeg-rd"
fi
[ "$RUNS" -ge 1 ] || die "--runs must be at least 1"
[ -z "$THREADS" ] || isnum "$THREADS" || die "not a thread count: $THREADS"
for q in $QS; do isnum "$q" && [ "$q" -ge 1 ] && [ "$q" -le 31 ] || die "not a quantiser 1..31: $q"; done
case $BITRATE in none|[0-9]*[kKmM]|[0-9]*) ;; *) die "bad --bitrate $BITRATE" ;; esac
[ -x "$MPEGENC" ] || die "$MPEGENC not built (make mpegenc)"

have() { command -v "$1" >/dev/null 2>&1; }
have_ffmpeg=0; have ffmpeg && have_ffmpeg=1
have_py=0; have python3 && have_py=1
have_gtime=0; /usr/bin/time -f %M -o /dev/null true >/dev/null 2>&1 && have_gtime=1
have_iqa=0; [ -x "$IQA_BIN" ] && have_iqa=1
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
mkdir -p "$T/png" "$T/s" "$T/log" "$T/bin"
# run copies: a rebuild of the checkout during the bench must not change or
# remove the binaries under measurement
cp "$MPEGENC" "$T/bin/mpegenc" && MPEGENC=$T/bin/mpegenc
if [ $have_iqa = 1 ]; then cp "$IQA_BIN" "$T/bin/mpegenc-iqa" && IQA_BIN=$T/bin/mpegenc-iqa; fi

# --- the clip: PNG frames as $T/png/f_%06d.png links, and/or $T/src.y4m -------
pingpong() { # --long: files on stdin, linked 0..n-1, n-1..0, 0.. until LONG frames
    local -a f=() seq=()
    local i=0 k
    mapfile -t f
    [ ${#f[@]} -gt 0 ] || return 0
    for k in "${!f[@]}"; do seq+=("$k"); done
    for ((k = ${#f[@]} - 1; k >= 0; k--)); do seq+=("$k"); done
    while [ "$i" -lt "$LONG" ]; do
        k=${seq[$((i % ${#seq[@]}))]}
        ln -s "$(cd "$(dirname "${f[$k]}")" && pwd)/$(basename "${f[$k]}")" "$(printf '%s/png/f_%06d.png' "$T" "$i")"
        i=$((i + 1))
    done
}
src_png=0
link_pngs() { # files in frame order on stdin
    local i=0 f
    if [ "$LONG" -gt 0 ]; then pingpong; return; fi
    while IFS= read -r f; do
        [ "$FRAMES" -gt 0 ] && [ "$i" -ge "$FRAMES" ] && break
        ln -s "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")" "$(printf '%s/png/f_%06d.png' "$T" "$i")"
        i=$((i + 1))
    done
}
if [ -z "$CLIP" ]; then
    if [ ! -f "$SOLAR_DIR/solar_0.png" ]; then
        echo "SKIPPED: no solar clip in $SOLAR_DIR (set SOLAR_DIR, or --clip)"; exit 0
    fi
    if [ -f "$SOLAR_DIR/SHA256SUMS" ]; then
        have sha256sum || die "sha256sum missing: cannot check $SOLAR_DIR"
        (cd "$SOLAR_DIR" && sha256sum --quiet -c SHA256SUMS) || die "solar clip does not match $SOLAR_DIR/SHA256SUMS"
        clip_desc="solar clip ($SOLAR_DIR, SHA256SUMS checked)"
    else
        clip_desc="solar clip ($SOLAR_DIR, no SHA256SUMS to check)"
    fi
    i=0; while [ -f "$SOLAR_DIR/solar_$i.png" ]; do echo "$SOLAR_DIR/solar_$i.png"; i=$((i + 1)); done | link_pngs
    src_png=1
elif [ -d "$CLIP" ]; then
    printf '%s\n' "${CLIP%/}"/*.[pP][nN][gG] | LC_ALL=C sort | link_pngs
    src_png=1; clip_desc="$CLIP"
elif [[ $CLIP == *%* ]]; then
    i=0; while f=$(printf "$CLIP" "$i") && [ -f "$f" ]; do echo "$f"; i=$((i + 1)); done | link_pngs
    src_png=1; clip_desc="$CLIP"
elif [[ $CLIP == *.y4m ]] && [ -f "$CLIP" ]; then
    [ "$LONG" = 0 ] || die "--long needs PNG frames (a directory or a pattern), not a Y4M"
    clip_desc="$CLIP"
else
    die "--clip $CLIP: not a directory, PNG pattern or .y4m file"
fi
PNG="$T/png/f_%06d.png"
[ "$LONG" = 0 ] || clip_desc="$clip_desc, ping-ponged into $LONG frames"
if [ $src_png = 1 ]; then
    [ -e "$T/png/f_000000.png" ] || die "no PNG frames in $clip_desc"
    N=$(ls "$T/png" | wc -l)
    # width and height from the PNG's IHDR chunk (bytes 16..23, big-endian)
    read -r W H < <(od -An -tu1 -j16 -N8 "$T/png/f_000000.png" |
        awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4, $5 * 16777216 + $6 * 65536 + $7 * 256 + $8 }')
    RATE=25
    if [ $have_ffmpeg = 1 ]; then
        ffmpeg -nostdin -v error -framerate 25 -i "$PNG" -pix_fmt yuv420p -f yuv4mpegpipe "$T/src.y4m" ||
            die "ffmpeg could not convert $clip_desc to Y4M"
    fi
else
    if [ "$FRAMES" -gt 0 ] && [ $have_ffmpeg = 1 ]; then
        ffmpeg -nostdin -v error -i "$CLIP" -frames:v "$FRAMES" -f yuv4mpegpipe "$T/src.y4m" ||
            die "ffmpeg could not cut $CLIP"
    else
        [ "$FRAMES" -gt 0 ] && echo "note: no ffmpeg to cut the Y4M: all its frames are used"
        ln -s "$(cd "$(dirname "$CLIP")" && pwd)/$(basename "$CLIP")" "$T/src.y4m"
    fi
    read -r W H RATE < <(head -c 200 "$T/src.y4m" | head -n 1 | tr ' ' '\n' | awk '
        /^W/ { w = substr($0, 2) } /^H/ { h = substr($0, 2) }
        /^F/ { split(substr($0, 2), f, ":"); r = f[1] / f[2] } END { print w, h, (r > 0 ? r : 25) }')
    N=$("$MPEGENC" -y -i "$T/src.y4m" -o - --q 31 2>&1 >/dev/null | sed -n 's/^mpegenc: \([0-9]*\) frames.*/\1/p')
    [ -n "$N" ] || die "mpegenc cannot read $CLIP"
fi

# inputs that exist here
inputs=""
for in in $INPUTS; do
    case $in in
    png) [ $src_png = 1 ] && inputs="$inputs png" ;;
    y4m) [ -e "$T/src.y4m" ] && inputs="$inputs y4m" ;;
    *) die "unknown input $in (png, y4m)" ;;
    esac
done
[ -n "$inputs" ] || die "no input left: PNG frames need ffmpeg for the y4m input, a Y4M clip has no png input"
[ -e "$T/src.y4m" ] || QUALITY=0

# --- configurations --------------------------------------------------------
avail_backends=$("$MPEGENC" --list-backends | awk '$2 ~ /^available/ { print $1 }')
# a GPU backend running on the CPU (OpenCL on PoCL: "not a GPU") makes the
# same stream as cpu, far slower: by default it is timed at the middle q
# only, from the Y4M
cpu_only_gpu=""
if [ -z "$BACKENDS" ]; then
    BACKENDS=$(printf '%s\n' $avail_backends | awk '$1 == "cpu" { print; next } { rest = rest " " $1 } END { print rest }')
    cpu_only_gpu=$("$MPEGENC" --list-backends | awk '$2 ~ /^available/ && /not a GPU/ && $1 != "cpu" { print $1 }')
fi
[ -n "$ENCODERS" ] || ENCODERS="mpegenc ffmpeg ffmpeg-rd mpeg2enc"
configs=""
notes=()
for e in $ENCODERS; do
    case $e in
    mpegenc)
        for b in $BACKENDS; do
            if printf '%s\n' $avail_backends | grep -qx "$b"; then configs="$configs mpegenc-$b"
            else notes+=("mpegenc --backend $b skipped: $("$MPEGENC" --list-backends | awk -v b="$b" '$1 == b { $1 = ""; print }')"); fi
        done ;;
    ffmpeg|ffmpeg-rd)
        if [ $have_ffmpeg = 1 ]; then configs="$configs $e"; else notes+=("$e skipped: ffmpeg not installed"); fi ;;
    mpeg2enc)
        if ! have mpeg2enc; then notes+=("mpeg2enc skipped: not installed (mjpegtools)")
        elif [ ! -e "$T/src.y4m" ]; then notes+=("mpeg2enc skipped: it reads Y4M only, and there is no ffmpeg to make one")
        else configs="$configs mpeg2enc"; fi ;;
    *) die "unknown encoder $e" ;;
    esac
done
have_bitrate=0
# the whole help first: grep -q would stop reading early, and under pipefail
# the help's SIGPIPE (it is longer than one pipe write) would read as "no"
help_text=$("$MPEGENC" --help)
printf '%s\n' "$help_text" | grep -q -- --bitrate && have_bitrate=1
settings=""
for q in $QS; do settings="$settings q$q"; done
read -r -a qs_arr <<<"$QS"
QMID=${qs_arr[$((${#qs_arr[@]} / 2))]}
for b in $cpu_only_gpu; do
    notes+=("mpegenc --backend $b runs on the CPU here (not a GPU): timed at q $QMID from the Y4M only (--backends \"$b\" for all settings)")
done
# the long-clip mode's in-loop metric runs (mpegenc only)
[ "$LONG" = 0 ] || settings="$settings iqa tmad tbl"
if [ "$BITRATE" != none ]; then
    settings="$settings br$BITRATE"
    [ $have_bitrate = 1 ] || notes+=("bitrate run skipped: this mpegenc has no --bitrate")
fi

label_of() {
    case $1 in
    mpegenc-*) echo "mpegenc ${1#mpegenc-}" ;;
    ffmpeg) echo "ffmpeg mpeg2video" ;;
    ffmpeg-rd) echo "ffmpeg mpeg2video -bf 2 -mbd rd -trellis 1" ;;
    mpeg2enc) echo "mpeg2enc" ;;
    esac
}

# build_cmd CONFIG INPUT SETTING OUT: the command in CMD, its stdin in CMD_IN;
# returns 1 when that combination is not run
build_cmd() {
    local cfg=$1 in=$2 set=$3 out=$4 src
    if [ "$in" = png ]; then src=$PNG; else src=$T/src.y4m; fi
    CMD_IN=/dev/null
    case $cfg in
    mpegenc-*)
        if printf '%s\n' $cpu_only_gpu | grep -qx "${cfg#mpegenc-}"; then
            [ "$set" = "q$QMID" ] || return 1
            [ "$in" = y4m ] || [[ " $inputs " != *" y4m "* ]] || return 1
        fi
        CMD=("$MPEGENC" -y ${QUIET:+"$QUIET"} --backend "${cfg#mpegenc-}" ${THREADS:+--threads "$THREADS"} -i "$src" -o "$out")
        case $set in
        q*) CMD+=(--q "${set#q}") ;;
        br*) [ $have_bitrate = 1 ] || return 1; CMD+=(--bitrate "${set#br}") ;;
        iqa) CMD+=(--q "$QMID" --iqa all) ;;
        tmad) CMD+=(--target-mad 9) ;;
        tbl) CMD+=(--target-bliinds 30) ;;
        esac ;;
    ffmpeg|ffmpeg-rd)
        CMD=(ffmpeg -nostdin -v error -y)
        [ "$in" = png ] && CMD+=(-framerate 25)
        case $set in iqa|tmad|tbl) return 1 ;; esac
        CMD+=(-i "$src" ${THREADS:+-threads "$THREADS"} -c:v mpeg2video -pix_fmt yuv420p)
        [ "$cfg" = ffmpeg-rd ] && CMD+=(-bf 2 -mbd rd -trellis 1)
        case $set in
        q*) CMD+=(-q:v "${set#q}") ;;
        br*) CMD+=(-b:v "${set#br}") ;;
        esac
        CMD+=(-f mpeg2video "$out") ;;
    mpeg2enc)
        # it reads Y4M on stdin only; feeding it PNGs would time ffmpeg too
        [ "$in" = y4m ] || return 1
        case $set in iqa|tmad|tbl) return 1 ;; esac
        CMD_IN=$T/src.y4m
        # -f 3 generic MPEG-2 needs a bitrate: with -q it is only a ceiling,
        # set far above any q's rate; 2048x2048 is beyond its level checks
        CMD=(mpeg2enc -v 0 -f 3 -a 1 --no-constraints -V 4000 ${THREADS:+-M "$THREADS"} -o "$out")
        case $set in
        q*) CMD+=(-q "${set#q}" -b 100000) ;;
        br*) return 1 ;; # the q sweep is enough to place it; saves a minute
        esac ;;
    esac
}

# timed PREFIX: runs CMD; $PREFIX.time gets "wall user sys" and $PREFIX.rss
# the peak resident KiB (GNU time; empty without it)
timed() {
    local pre=$1 rc=0 TIMEFORMAT='%R %U %S'
    : >"$pre.rss"
    if [ $have_gtime = 1 ]; then
        { time /usr/bin/time -f %M -o "$pre.rss" "${CMD[@]}" <"$CMD_IN" >"$pre.out" 2>"$pre.err"; } 2>"$pre.time" || rc=$?
    else
        { time "${CMD[@]}" <"$CMD_IN" >"$pre.out" 2>"$pre.err"; } 2>"$pre.time" || rc=$?
    fi
    return $rc
}

# --- header ----------------------------------------------------------------
NCORES=$(nproc)
cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')
gpu=$(nvidia-smi -L 2>/dev/null | head -n 1 | sed 's/ (UUID.*//') || true
# BENCH_COMMIT names the commit where the tree is a copy without .git
commit=${BENCH_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
[ -z "${BENCH_COMMIT:-}" ] && [ "$commit" != unknown ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && commit="$commit+dirty"
header=(
    "date $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit, $NCORES cores (${cpu:-unknown CPU})${gpu:+, $gpu}, $(uname -m)"
    "clip: $clip_desc, $N frames ${W}x${H}; inputs:$inputs; kbit/s at $RATE fps"
    "mpegenc $("$MPEGENC" --version | awk '{ print $2 }'), backends run: $(printf '%s ' $configs | tr ' ' '\n' | sed -n 's/^mpegenc-//p' | tr '\n' ' ')"
    "$([ $have_ffmpeg = 1 ] && ffmpeg -version | head -n 1 | cut -d' ' -f1-3 || echo 'ffmpeg: not installed')$(if have mpeg2enc; then echo ", mpeg2enc (mjpegtools)"; fi)"
    "median of $RUNS timed runs after $WARMUP warm-up, configurations interleaved in every repetition${THREADS:+; threads $THREADS}"
)
printf '%s\n' "${header[@]}"
for n in "${notes[@]+"${notes[@]}"}"; do echo "$n"; done
[ $have_gtime = 1 ] || echo "note: no GNU time (package time): peak RSS not measured"

# --- timed runs ------------------------------------------------------------
jobs=()
for in in $inputs; do
    for set in $settings; do
        for cfg in $configs; do
            build_cmd "$cfg" "$in" "$set" /dev/null && jobs+=("$cfg $in $set")
        done
    done
done
[ ${#jobs[@]} -gt 0 ] || die "nothing to run"
echo "${#jobs[@]} configurations x $((WARMUP + RUNS)) runs"
echo "config,input,setting,rep,wall_s,user_s,sys_s,rss_kib,bytes" >"$T/runs.csv"
declare -A failed=()
t_start=$(date +%s)
for rep in $(seq $((1 - WARMUP)) "$RUNS"); do
    for job in "${jobs[@]}"; do
        read -r cfg in set <<<"$job"
        [ -z "${failed[$job]:-}" ] || continue
        out="$T/s/$cfg.$in.$set.m2v"
        build_cmd "$cfg" "$in" "$set" "$out"
        if ! timed "$T/log/run"; then
            failed[$job]=1
            notes+=("FAILED: $job: $(tail -n 1 "$T/log/run.err")")
            echo "FAILED: ${CMD[*]}: $(tail -n 3 "$T/log/run.err")" >&2
            continue
        fi
        [ "$rep" -ge 1 ] || continue
        read -r wall user sys <"$T/log/run.time"
        echo "$cfg,$in,$set,$rep,$wall,$user,$sys,$(tail -n 1 "$T/log/run.rss"),$(stat -c %s "$out")" >>"$T/runs.csv"
    done
    if [ "$rep" -ge 1 ]; then echo "  run $rep of $RUNS done, $(($(date +%s) - t_start)) s"
    else echo "  warm-up done, $(($(date +%s) - t_start)) s"; fi
done
echo "timed runs: $(($(date +%s) - t_start)) s"

# --- stages (--stats) of each mpegenc configuration at the middle q, one
# extra untimed run each (--stats reads clocks between stages) ----------------
echo "config,input,setting,stage,ms_per_frame" >"$T/stages.csv"
for job in "${jobs[@]}"; do
    read -r cfg in set <<<"$job"
    [[ $cfg == mpegenc-* ]] && [ "$set" = "q$QMID" ] && [ -z "${failed[$job]:-}" ] || continue
    QUIET="" build_cmd "$cfg" "$in" "$set" "$T/s/stats.m2v"
    "${CMD[@]}" --stats ${STATS_IQA:+--iqa "$STATS_IQA"} 2>"$T/log/stats" >/dev/null || { notes+=("--stats run failed: $job"); continue; }
    # "  front end     16.01 busy  (...)": the name, then ms per frame
    awk -v pre="$cfg,$in,$set" '/stages, ms per frame/ { on = 1; next }
        on && /^  [a-z]/ { s = $0; sub(/^ +/, "", s); name = s; sub(/ +[0-9].*$/, "", name)
            v = substr(s, length(name) + 1); sub(/^ +/, "", v); sub(/ .*$/, "", v)
            if (v ~ /^[0-9.]+$/) print pre "," name "," v }' "$T/log/stats" >>"$T/stages.csv"
done

# --- thread scaling: each mpegenc backend (not one that only emulates a GPU
# on the CPU) at --threads 1 and all cores, q QMID, the Y4M when there is one
# (no PNG decoding in the way): median wall time of RUNS, and the code stage
# (slices + headers) and encode time from one --stats run -------------------
echo "config,input,threads,wall_s,fps,code_ms,encode_ms" >"$T/threads.csv"
if [ -z "$THREADS" ] && [ "$LONG" = 0 ]; then
    sc_in=png; [[ " $inputs " == *" y4m "* ]] && sc_in=y4m
    sc_threads="1"; [ "$NCORES" -gt 1 ] && sc_threads="1 $NCORES"
    for cfg in $configs; do
        [[ $cfg == mpegenc-* ]] || continue
        printf '%s\n' $cpu_only_gpu | grep -qx "${cfg#mpegenc-}" && continue
        [ -z "${failed[$cfg $sc_in q$QMID]:-}" ] || continue
        for th in $sc_threads; do
            THREADS=$th build_cmd "$cfg" "$sc_in" "q$QMID" "$T/s/threads.m2v" || continue
            walls=""
            for _ in $(seq "$RUNS"); do
                timed "$T/log/th" || { walls=""; break; }
                walls="$walls $(cut -d' ' -f1 "$T/log/th.time")"
            done
            [ -n "$walls" ] || { notes+=("threads $th run failed: $cfg"); continue; }
            QUIET="" THREADS=$th build_cmd "$cfg" "$sc_in" "q$QMID" "$T/s/threads.m2v"
            "${CMD[@]}" --stats 2>"$T/log/thstats" >/dev/null || true
            code=$(awk '$1 == "code" { print $2 }' "$T/log/thstats")
            enc=$(awk '$1 == "encode" { print $2 }' "$T/log/thstats")
            echo "$walls" | tr ' ' '\n' | grep . | sort -g | awk -v pre="$cfg,$sc_in,$th" -v n="$N" -v c="$code" -v e="$enc" \
                '{ a[++k] = $1 } END { m = k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
                   printf "%s,%.3f,%.2f,%s,%s\n", pre, m, n / m, c, e }' >>"$T/threads.csv"
        done
    done
fi

# --- quality of every distinct stream ---------------------------------------
psnr_y() { # STREAM: mean PSNR-Y against src.y4m, frames paired by index (DESIGN.md §6)
    ffmpeg -nostdin -hide_banner -nostats -i "$1" -i "$T/src.y4m" \
        -lavfi "[0:v]setpts=N/25/TB,format=yuv420p[a];[1:v]setpts=N/25/TB,format=yuv420p[b];[a][b]psnr" \
        -f null - 2>&1 | sed -n 's/.*PSNR y:\([0-9.inf]*\).*/\1/p' | tail -n 1
}
iqa_list=""
if [ "$IQA_FRAMES" -gt 0 ] && [ $have_iqa = 1 ] && [ "$QUALITY" = 1 ]; then
    k=$IQA_FRAMES; [ "$k" -le "$N" ] || k=$N
    for i in $(seq 0 $((k - 1))); do iqa_list="$iqa_list $((i * N / k))"; done
fi
echo "config,input,setting,psnr_y,mad,bliinds,sha" >"$T/quality.csv"
declare -A qcache=()
if [ "$QUALITY" = 1 ]; then
    t_q=$(date +%s)
    for job in "${jobs[@]}"; do
        read -r cfg in set <<<"$job"
        [ -z "${failed[$job]:-}" ] || continue
        f="$T/s/$cfg.$in.$set.m2v"
        sha=$(sha256sum "$f" | cut -c1-16)
        want_iqa=0; [ -n "$iqa_list" ] && [ "$set" = "q$QMID" ] && want_iqa=1
        key="$sha.$want_iqa"
        if [ -z "${qcache[$key]:-}" ]; then
            p=$(psnr_y "$f"); mad="" bl=""
            if [ $want_iqa = 1 ]; then
                ffmpeg -nostdin -v error -y -i "$f" -f yuv4mpegpipe "$T/dec.y4m"
                ms="" bs=""
                for fr in $iqa_list; do
                    ms="$ms $("$IQA_BIN" mad --frame "$fr" "$T/src.y4m" "$T/dec.y4m" | sed -n 's/^mad=\([^ ]*\).*/\1/p')"
                    bs="$bs $("$IQA_BIN" bliinds --frame "$fr" "$T/dec.y4m" | sed -n 's/^score=\([^ ]*\).*/\1/p')"
                done
                mean() { echo "$@" | awk '{ for (i = 1; i <= NF; i++) s += $i; if (NF) printf "%.3f", s / NF }'; }
                mad=$(mean $ms); bl=$(mean $bs)
            fi
            qcache[$key]="$p,$mad,$bl"
        fi
        echo "$cfg,$in,$set,${qcache[$key]},$sha" >>"$T/quality.csv"
    done
    echo "quality: $(($(date +%s) - t_q)) s${iqa_list:+ (MAD and BLIINDS-II on frames$iqa_list of each q $QMID stream)}"
fi

# --- summary: medians, joined with quality ----------------------------------
summary_header="config,label,input,mode,setting,runs,frames,wall_s,fps,cpu_s,rss_mib,bytes,kbps,bytes_vary,psnr_y,mad,bliinds,iqa_frames"
{
    echo "$summary_header"
    # rows grouped by input, then encoder, then setting
    for job in $(for in in $inputs; do for cfg in $configs; do for set in $settings; do
                     echo "$cfg/$in/$set"; done; done; done); do
        IFS=/ read -r cfg in set <<<"$job"
        job="$cfg $in $set"
        printf '%s\n' "${jobs[@]}" | grep -qxF "$job" || continue
        [ -z "${failed[$job]:-}" ] || continue
        case $set in
        q*) mode=q; setting=${set#q} ;;
        br*) mode=bitrate; setting=${set#br} ;;
        iqa) mode=q-iqa-all; setting=$QMID ;;
        tmad) mode=target-mad; setting=9 ;;
        tbl) mode=target-bliinds; setting=30 ;;
        esac
        qual=$(awk -F, -v c="$cfg" -v i="$in" -v s="$set" '$1 == c && $2 == i && $3 == s { print $4 "," $5 "," $6 }' "$T/quality.csv")
        [ -n "$qual" ] || qual=",,"
        iqf=""; [ -n "$(echo "$qual" | cut -d, -f2)" ] && iqf=$(echo $iqa_list | tr ' ' ' ')
        awk -F, -v c="$cfg" -v i="$in" -v s="$set" -v n="$N" -v rate="$RATE" \
            -v pre="$cfg,$(label_of "$cfg"),$in,$mode,$setting" -v post="$qual,$iqf" '
            function median(a, k,   i, j, t) {
                for (i = 2; i <= k; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
                return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
            }
            $1 == c && $2 == i && $3 == s { k++; w[k] = $5; u[k] = $6 + $7; if ($8 != "") { m++; r[m] = $8 }
                if (k > 1 && $9 != b) vary = 1; b = $9 }
            END {
                if (!k) exit
                wm = median(w, k)
                printf "%s,%d,%d,%.3f,%.2f,%.3f,%s,%d,%.0f,%d,%s\n", pre, k, n, wm, n / wm, median(u, k),
                    m ? sprintf("%.0f", median(r, m) / 1024) : "", b, b * 8 * rate / n / 1000, vary, post
            }' "$T/runs.csv"
    done
} >"$T/summary.csv"

# --- output ------------------------------------------------------------------
mkdir -p "$OUTDIR"
cp "$T/runs.csv" "$T/summary.csv" "$T/stages.csv" "$T/threads.csv" "$OUTDIR/"
[ "$QUALITY" = 1 ] && cp "$T/quality.csv" "$OUTDIR/"
{
    echo
    echo "### Speed and quality"
    echo
    echo "| encoder | input | setting | fps / ffmpeg's | wall s | fps | CPU s | peak RSS MiB | bytes | kbit/s | PSNR-Y dB | MAD | BLIINDS-II |"
    echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    # the ratio: to ffmpeg mpeg2video's fps from the same input at the same
    # setting (the in-loop metric rows: at q QMID)
    awk -F, -v qmid="$QMID" 'NR == FNR { if (FNR > 1 && $1 == "ffmpeg") ff[$3, $4, $5] = $9; next }
        FNR > 1 {
        set = ($4 == "q" ? "q " $5 : $4 == "bitrate" ? $5 " target" : $4 == "q-iqa-all" ? "q " $5 " --iqa all" : $4 == "target-bliinds" ? "--target-bliinds " $5 : "--target-mad " $5)
        ref = ($4 == "q" || $4 == "bitrate") ? ff[$3, $4, $5] : ff[$3, "q", qmid]
        printf "| %s | %s | %s | %s | %.3f | %.2f | %.3f | %s | %s%s | %s | %s | %s | %s |\n",
            $2, $3, set, (ref > 0 ? sprintf("%.2fx", $9 / ref) : "n/a"), $8, $9, $10, ($11 == "" ? "n/a" : $11), $12,
            ($14 == 1 ? " (varies)" : ""), $13,
            ($15 == "" ? "n/a" : ($15 == "inf" ? $15 : sprintf("%.2f", $15))), ($16 == "" ? "" : $16), ($17 == "" ? "" : $17) }' \
        "$T/summary.csv" "$T/summary.csv"
    if [ "$QUALITY" = 1 ] && [ $have_ffmpeg = 1 ] && [ ${#qs_arr[@]} -ge 2 ]; then
        echo
        echo "### BD-rate (PSNR-Y vs kbit/s over the q sweep)"
        echo
        if [ $have_py = 1 ]; then
            python3 tools/bdrate.py table "$T/summary.csv" --ref ffmpeg --csv "$OUTDIR/bdrate.csv"
        else
            echo "BD-rate skipped: no python3"
        fi
    fi
    if [ "$(wc -l <"$T/stages.csv")" -gt 1 ]; then
        echo
        echo "### mpegenc stages at q $QMID (--stats, ms per frame)"
        echo
        awk -F, 'NR > 1 { k = $1 SUBSEP $2; if (!(k in seen)) { seen[k] = 1; rows[++nr] = k; lab[k] = $1 " | " $2; sub(/^mpegenc-/, "mpegenc ", lab[k]) }
                if (!($4 in col)) { col[$4] = ++nc; name[nc] = $4 }; v[k, $4] = $5 }
            END {
                printf "| config | input |"; for (c = 1; c <= nc; c++) printf " %s |", name[c]; print ""
                printf "|---|---|"; for (c = 1; c <= nc; c++) printf "---:|"; print ""
                for (r = 1; r <= nr; r++) { k = rows[r]; printf "| %s |", lab[k]
                    for (c = 1; c <= nc; c++) printf " %s |", ((k, name[c]) in v ? v[k, name[c]] : ""); print "" }
            }' "$T/stages.csv"
    fi
    if [ "$(wc -l <"$T/threads.csv")" -gt 1 ]; then
        echo
        echo "### mpegenc threads at q $QMID (wall: median of $RUNS; code and encode: --stats, ms per frame)"
        echo
        echo "| config | input | threads | wall s | fps | code ms | encode ms | code speed-up |"
        echo "|---|---|---:|---:|---:|---:|---:|---:|"
        awk -F, 'NR > 1 { sub(/^mpegenc-/, "mpegenc ", $1); if ($3 == 1) one[$1] = $6
            printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7,
                ($1 in one && $6 > 0 ? sprintf("%.2fx", one[$1] / $6) : "") }' "$T/threads.csv"
    fi
    if [ ${#notes[@]} -gt 0 ]; then
        echo
        for n in "${notes[@]}"; do echo "- $n"; done
    fi
} | tee "$T/tables.md"
{ printf '%s  \n' "${header[@]}"; cat "$T/tables.md"; } >"$OUTDIR/table.md"
if [ $PLOT = 1 ]; then
    if [ $have_py = 1 ]; then python3 tools/bdrate.py plot "$T/summary.csv" "$OUTDIR"
    else echo "--plot skipped: no python3"; fi
fi
echo
echo "CSV and table in $OUTDIR/; bench total $(($(date +%s) - t_start)) s after setup"
