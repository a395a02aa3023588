#!/usr/bin/env python3
"""make rd: rate-distortion of mpegenc against its peers, clip by clip.

  tools/rd.py [options]                (make rd RD_ARGS="options")
    --set small|full   clip set (--full; default: $RD_SET, else small): small is
                       352x288, 24 frames; full is 704x576, 36 frames
    --size WxH         frame size instead of the set's
    --frames N         frames per clip instead of the set's
    --clips LIST       comma-separated clip names (default: all of the set;
                       --list shows them)
    --configs LIST     comma-separated configuration names (default: all;
                       the reference, ffmpeg-bf0, is always run)
    --points N         quantiser points per curve (default 4)
    --window LO:HI     PSNR-Y range in dB the points should span (default
                       38:47); each curve's quantisers are searched for it
    --mad-every N      MAD on every Nth decoded frame (default 3; 0: no MAD
                       axis)
    --gop N            GOP length of every encoder (default 12; y262's
                       -nump/-numb are set from it)
    --out DIR          results directory (default bench/results/rd-DATE)
    --list             print the clips and configurations, and exit
Environment: MPEGENC, MPEGENC_IQA (default: beside MPEGENC), RD_SET,
RD_FFMPEG (the encoding ffmpeg; default: ffmpeg on PATH, else
../shared/bin/ffmpeg-static), RD_Y262, RD_X262 (default: ../shared/bin/NAME,
else NAME on PATH), RD_SOLAR (a 2048x2048 PNG to pan over; default
../shared/solar/solar_0.png, else samples/solar/solar_0.png upscaled).

Every stream is decoded by the ffmpeg on PATH and compared with the Y4M
source, frames paired by index: PSNR-Y (psnr filter), SSIM-Y in dB
(-10 log10(1 - SSIM), ssim filter), MAD (mpegenc-iqa mad, mean over the
sampled frames; lower is better).  BD-rates are against ffmpeg-bf0 on the
same clip (tools/bdrate.py's Bjontegaard), CPU s/frame is user + sys of the
encoder process over frames, averaged over the sweep.  Exit status: 0 done
(peers that are absent are SKIPPED), 1 a run failed, 2 usage error or no
ffmpeg.  docs/BENCH.md ("make rd") explains the clips and columns.
"""
import csv
import datetime
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no tools/__pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bdrate import bd_rate  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(ROOT, "..", "shared")
REF = "ffmpeg-bf0"

# Quantisers a curve's points are chosen from (each encoder's own scale),
# finer steps where PSNR moves fastest.
QSCALE = [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 31]
X264_QP = [1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 18, 20, 23, 26, 30, 35, 40, 45, 51]

class RateTarget(int):
    """A point's --bitrate in kbit/s."""


class RateOf(str):
    """The points of a rate-controlled configuration: --bitrate at the rates
    of the named configuration's points on the same clip."""


# The configurations, one line each: name, encoder kind, extra arguments,
# quantiser scale.  A new mpegenc tool is one more line here.
CONFIGS = [
    ("ffmpeg-bf0", "ffmpeg", ["-bf", "0"], QSCALE),
    ("ffmpeg-rd", "ffmpeg", ["-bf", "2", "-trellis", "1", "-mbd", "rd"], QSCALE),
    ("ffmpeg-bf2", "ffmpeg", ["-bf", "2"], QSCALE),
    ("mpegenc", "mpegenc", [], QSCALE),
    ("mpegenc-notrellis", "mpegenc", ["--trellis", "0"], QSCALE),
    ("mpegenc-s32", "mpegenc", ["--search", "32"], QSCALE),
    ("mpegenc-full", "mpegenc", ["--me", "full"], QSCALE),
    ("mpegenc-reach0", "mpegenc", ["--merange-adapt", "0"], QSCALE),
    ("mpegenc-b0", "mpegenc", ["--bframes", "0"], QSCALE),
    ("mpegenc-b2", "mpegenc", ["--bframes", "2"], QSCALE),
    ("mpegenc-b3", "mpegenc", ["--bframes", "3"], QSCALE),
    ("mpegenc-b4", "mpegenc", ["--bframes", "4"], QSCALE),
    # fixed runs of B pictures (--b-adapt 0): 1 was the default before b-adapt
    ("mpegenc-fixed-b1", "mpegenc", ["--b-adapt", "0", "--bframes", "1"], QSCALE),
    ("mpegenc-fixed-b3", "mpegenc", ["--b-adapt", "0", "--bframes", "3"], QSCALE),
    ("mpegenc-b2-pb1", "mpegenc", ["--bframes", "2", "--pb-ratio", "1"], QSCALE),
    ("mpegenc-b2-pb1.6", "mpegenc", ["--bframes", "2", "--pb-ratio", "1.6"], QSCALE),
    ("mpegenc-ip1.2", "mpegenc", ["--ip-ratio", "1.2"], QSCALE),
    ("mpegenc-ip1.4", "mpegenc", ["--ip-ratio", "1.4"], QSCALE),
    ("mpegenc-ip1.7", "mpegenc", ["--ip-ratio", "1.7"], QSCALE),
    ("mpegenc-full-b0", "mpegenc", ["--me", "full", "--bframes", "0"], QSCALE),
    ("mpegenc-full-b2", "mpegenc", ["--me", "full", "--bframes", "2"], QSCALE),
    ("mpegenc-aq", "mpegenc", ["--aq-strength", "1"], QSCALE),
    ("mpegenc-aq05", "mpegenc", ["--aq-strength", "0.5"], QSCALE),
    ("mpegenc-madaq025", "mpegenc", ["--aq-mode", "mad", "--aq-strength", "0.25"], QSCALE),
    ("mpegenc-madaq05", "mpegenc", ["--aq-mode", "mad", "--aq-strength", "0.5"], QSCALE),
    ("mpegenc-madaq1", "mpegenc", ["--aq-mode", "mad", "--aq-strength", "1"], QSCALE),
    # MPEG-2's own switches (issue 19 item 6), one at a time
    ("mpegenc-ivlc0", "mpegenc", ["--intra-vlc", "0"], QSCALE),
    ("mpegenc-ivlc1", "mpegenc", ["--intra-vlc", "1"], QSCALE),
    ("mpegenc-ivlcauto", "mpegenc", ["--intra-vlc", "auto"], QSCALE),
    ("mpegenc-alt", "mpegenc", ["--scan", "alternate"], QSCALE),
    ("mpegenc-dc8", "mpegenc", ["--dc-precision", "8"], QSCALE),
    ("mpegenc-dc9", "mpegenc", ["--dc-precision", "9"], QSCALE),
    ("mpegenc-dc10", "mpegenc", ["--dc-precision", "10"], QSCALE),
    ("mpegenc-nonlin", "mpegenc", ["--qscale-type", "nonlinear"], QSCALE),
    ("mpegenc-cqm-mpeg", "mpegenc", ["--cqm", "mpeg"], QSCALE),
    ("mpegenc-cqm-flat", "mpegenc", ["--cqm", "flat"], QSCALE),
    ("mpegenc-cqm-ramp", "mpegenc", ["--cqm", "ramp"], QSCALE),
    # rate control: --bitrate at the rate each point of the named
    # configuration reached (its "q" is the rate in kbit/s); the defaults
    # on both sides, and without B pictures on both sides
    ("mpegenc-bitrate", "mpegenc", [], RateOf("mpegenc")),
    ("mpegenc-bitrate-b0", "mpegenc", ["--bframes", "0"], RateOf("mpegenc-b0")),
    ("y262", "y262", [], QSCALE),
    ("y262-noaq", "y262", ["-noaq"], QSCALE),
    ("x262", "x262", [], X264_QP),
]

SETS = {"small": (352, 288, 24), "full": (704, 576, 36)}


def die(msg, status=2):
    sys.stderr.write("rd: %s\n" % msg)
    sys.exit(status)


def which(*cands):
    for c in cands:
        if not c:
            continue
        if os.sep in c:
            if os.path.isfile(c) and os.access(c, os.X_OK):
                return os.path.abspath(c)
        else:
            p = shutil.which(c)
            if p:
                return p
    return None


def run(argv, **kw):
    return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, **kw)


def ffmpeg_gen(out, inputs, vf, frames):
    r = run(["ffmpeg", "-nostdin", "-v", "error", "-y"] + inputs +
            (["-vf", vf] if vf else []) +
            ["-frames:v", str(frames), "-pix_fmt", "yuv420p", "-f", "yuv4mpegpipe", out])
    if r.returncode != 0:
        raise RuntimeError("ffmpeg could not make %s: %s" % (out, r.stderr.strip()[-300:]))


def y4m_frames(path):
    """(header line, [frame payloads]) of a 4:2:0 Y4M."""
    with open(path, "rb") as f:
        data = f.read()
    nl = data.index(b"\n")
    head = data[:nl + 1]
    w = int(re.search(rb" W(\d+)", head).group(1))
    h = int(re.search(rb" H(\d+)", head).group(1))
    size = w * h * 3 // 2
    frames, pos = [], nl + 1
    while pos < len(data):
        fnl = data.index(b"\n", pos)
        frames.append(data[fnl + 1:fnl + 1 + size])
        pos = fnl + 1 + size
    return head, frames


def pan_expr(start, v, size, full):
    """Crop offset along one axis: from start, v px per frame, bouncing off
    the frame's edges (a long clip never runs out of image)."""
    span = full - size
    return "%d-abs(%d-mod(%d+%d*n\\,%d))" % (span, span, start, v, 2 * span)


def make_clips(names, w, h, n, tmp, solar):
    """name -> (path or None, description or skip reason)."""
    lav = lambda src: ["-f", "lavfi", "-i", "%s=size=%dx%d:rate=25" % (src, w, h)]
    still = ["-loop", "1", "-framerate", "25", "-i", solar] if solar else None

    def pan(v, extra=""):
        vx, vy = v, v // 2
        # (300, 600): on the disk, real texture, at every size of the sets
        return "crop=%d:%d:x='%s':y='%s'%s" % (w, h, pan_expr(300, vx, w, 2048),
                                                pan_expr(600, vy, h, 2048), extra)

    recipes = {
        "testsrc2": (lambda p: ffmpeg_gen(p, lav("testsrc2"), None, n), "lavfi testsrc2 (synthetic)", False),
        "mandelbrot": (lambda p: ffmpeg_gen(p, lav("mandelbrot"), None, n), "lavfi mandelbrot (zooming texture)", False),
        "noise": (lambda p: ffmpeg_gen(p, still, pan(8, ",noise=alls=20:allf=t"), n),
                  "solar pan 8 px/frame + noise=alls=20:allf=t", True),
        "cut": (None, "testsrc2 for %d frames, then a solar pan 8 px/frame: a scene cut off the GOP grid" % (n * 5 // 12), True),
    }
    for v in (0, 8, 25, 60):
        recipes["pan%d" % v] = ((lambda v: lambda p: ffmpeg_gen(p, still, pan(v), n))(v),
                                "solar window moving %d px right, %d px down per frame" % (v, v // 2), True)
    out = {}
    for name in names:
        fn, desc, needs_solar = recipes[name]
        if needs_solar and not solar:
            out[name] = (None, "SKIPPED: no solar frame (RD_SOLAR, ../shared/solar, samples/solar)")
            continue
        path = os.path.join(tmp, name + ".y4m")
        if name == "cut":
            a, b = os.path.join(tmp, "cut-a.y4m"), os.path.join(tmp, "cut-b.y4m")
            ffmpeg_gen(a, lav("testsrc2"), None, n)
            ffmpeg_gen(b, still, pan(8), n)
            head, fa = y4m_frames(a)
            _, fb = y4m_frames(b)
            k = n * 5 // 12
            with open(path, "wb") as f:
                f.write(head)
                for fr in fa[:k] + fb[:n - k]:
                    f.write(b"FRAME\n" + fr)
        else:
            fn(path)
        out[name] = (path, desc)
    return out


def clip_names():
    return ["testsrc2", "mandelbrot", "pan0", "pan8", "pan25", "pan60", "noise", "cut"]


def encode_argv(kind, bins, args, q, src, yuv, w, h, gop, out):
    if kind == "mpegenc":
        rate = ["--bitrate", "%dk" % q] if isinstance(q, RateTarget) else ["--q", str(q)]
        return [bins["mpegenc"], "-y", "--quiet", "--gop", str(gop)] + rate + args + ["-i", src, "-o", out]
    if kind == "ffmpeg":
        return [bins["ffmpeg"], "-nostdin", "-v", "error", "-y", "-i", src, "-c:v", "mpeg2video",
                "-g", str(gop), "-flags", "+cgop", "-sc_threshold", "1000000000", "-qmin", "1", "-q:v", str(q)] + args + ["-f", "mpeg2video", out]
    if kind == "y262":
        # y262's GOP is (numb + 1) x (nump + 1) pictures; numb 2 -> nump 3 for 12
        nump = max(0, gop // 3 - 1)
        return [bins["y262"], "-in", yuv, "-size", str(w), str(h), "-out", out, "-rcmode", "0",
                "-quant", str(q), "-numb", "2", "-nump", str(nump), "-closedgop", "-profile", "main",
                "-level", "high", "-vbvrate", "80000", "-vbv", "9781", "-threads", "1", "1"] + args
    if kind == "x262":
        return [bins["x262"], "--mpeg2", "--keyint", str(gop), "--qp", str(q), "--quiet"] + args + ["-o", out, src]
    raise ValueError(kind)


def timed(argv):
    """Runs argv; (returncode, stderr, wall, user, sys) with the child's CPU
    seconds from getrusage (microseconds, where GNU time rounds to 10 ms)."""
    r0, t = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    r = run(argv)
    wall, r1 = time.monotonic() - t, resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.returncode, r.stderr, wall, r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime


def metrics(stream, src, dec, iqa, mad_every, n):
    """(psnr_y, ssim_y, ssim_db, mad or None, mad frames); raises on a bad decode."""
    r = run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", stream, "-f", "yuv4mpegpipe", dec])
    if r.returncode != 0:
        raise RuntimeError("ffmpeg cannot decode %s: %s" % (stream, r.stderr.strip()[-200:]))
    pair = ("[0:v]settb=1/25,setpts=N,format=yuv420p,split[a1][a2];"
            "[1:v]settb=1/25,setpts=N,format=yuv420p,split[b1][b2];[a1][b1]psnr;[a2][b2]ssim")
    r = run(["ffmpeg", "-nostdin", "-hide_banner", "-nostats", "-i", dec, "-i", src,
             "-lavfi", pair, "-f", "null", "-"])
    ps = re.findall(r"PSNR y:([0-9.]+|inf)", r.stderr)
    ss = re.findall(r"SSIM Y:([0-9.]+) \(([0-9.]+|inf)\)", r.stderr)
    frames = re.findall(r"frame=\s*(\d+)", r.stderr)
    if r.returncode != 0 or not ps or not ss:
        raise RuntimeError("psnr/ssim failed on %s: %s" % (stream, r.stderr.strip()[-200:]))
    _, got = y4m_frames(dec)
    if len(got) != n:
        raise RuntimeError("%s decodes to %d frames, the source has %d" % (stream, len(got), n))
    mad, used = None, 0
    if mad_every > 0 and iqa:
        vals = []
        for k in range(mad_every // 2, n, mad_every):
            r = run([iqa, "--threads", "1", "--frame", str(k), "mad", src, dec])
            m = re.search(r"mad=([0-9.eE+-]+)", r.stdout)
            if r.returncode != 0 or not m:
                raise RuntimeError("mpegenc-iqa mad failed on frame %d of %s: %s" % (k, stream, r.stderr.strip()))
            vals.append(float(m.group(1)))
        mad, used = sum(vals) / len(vals), len(vals)
    del frames
    return float(ps[-1]), float(ss[-1][0]), float(ss[-1][1]), mad, used


def sig(v):
    return "" if v is None else "%.3g" % v


def probe_psnr(argv, out, src):
    """PSNR-Y of one encode, for choosing the quantisers."""
    if os.path.exists(out):
        os.remove(out)
    r = run(argv)
    if r.returncode != 0 or not os.path.exists(out):
        raise RuntimeError("%s exited %d: %s" % (os.path.basename(argv[0]), r.returncode, r.stderr.strip()[-300:]))
    r = run(["ffmpeg", "-nostdin", "-hide_banner", "-nostats", "-i", out, "-i", src, "-lavfi",
             "[0:v]settb=1/25,setpts=N,format=yuv420p[a];[1:v]settb=1/25,setpts=N,format=yuv420p[b];[a][b]psnr",
             "-f", "null", "-"])
    ps = re.findall(r"PSNR y:([0-9.]+|inf)", r.stderr)
    if r.returncode != 0 or not ps:
        raise RuntimeError("psnr failed: %s" % r.stderr.strip()[-200:])
    return float(ps[-1])


def choose_qs(cands, points, window, probe):
    """points quantisers from cands (ascending, PSNR falling as q rises)
    spanning window = (lo, hi) dB: from the coarsest q still at or above hi
    to the finest q at or below lo, evenly spread in cands' index; the
    ends of cands where the clip never reaches the window.  Binary searches:
    about 2 log2(len(cands)) probe encodes."""
    cache = {}

    def ps(i):
        if i not in cache:
            cache[i] = probe(cands[i])
        return cache[i]

    def first(pred):  # first index whose PSNR satisfies pred (monotone), else len
        a, b = 0, len(cands)
        while a < b:
            m = (a + b) // 2
            if pred(ps(m)):
                b = m
            else:
                a = m + 1
        return a
    lo, hi = window
    top = max(0, first(lambda p: p < hi) - 1)
    bot = min(len(cands) - 1, first(lambda p: p <= lo))
    while bot - top + 1 < points:
        if bot < len(cands) - 1:
            bot += 1
        elif top > 0:
            top -= 1
        else:
            break
    idx = sorted({top + round(k * (bot - top) / (points - 1)) for k in range(points)})
    return [cands[i] for i in idx]


def pct(v):
    return "n/a" if v is None else "%+.1f %%" % v


def main(argv):
    opts = {"set": os.environ.get("RD_SET") or "small", "size": None, "frames": None, "clips": None,
            "configs": None, "points": 4, "window": "38:47", "mad_every": 3, "gop": 12, "out": None, "list": False}
    i = 0
    while i < len(argv):
        a = argv[i]
        key = a[2:].replace("-", "_")
        if a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        if a == "--list":
            opts["list"] = True
        elif a == "--full":
            opts["set"] = "full"
        elif a.startswith("--") and key in opts:
            if i + 1 >= len(argv):
                die("%s needs a value" % a)
            opts[key] = argv[i + 1]
            i += 1
        else:
            die("unknown option %s (see --help)" % a)
        i += 1
    if opts["set"] not in SETS:
        die("--set must be small or full, not %s" % opts["set"])
    w, h, n = SETS[opts["set"]]
    try:
        if opts["size"]:
            w, h = (int(x) for x in opts["size"].lower().split("x"))
        if opts["frames"]:
            n = int(opts["frames"])
        points, mad_every, gop = int(opts["points"]), int(opts["mad_every"]), int(opts["gop"])
        window = tuple(float(x) for x in opts["window"].split(":"))
        if len(window) != 2 or window[0] >= window[1]:
            raise ValueError
    except ValueError:
        die("bad number in --size, --frames, --points, --window, --mad-every or --gop")
    if w < 16 or h < 16 or w % 2 or h % 2 or w > 1920 or h > 1152 or n < 1 or gop < 3 or points < 0 or mad_every < 0:
        die("need even WxH from 16x16 to 1920x1152 (y262's limit), frames >= 1, gop >= 3")
    if points < 2 or points > 8:
        die("--points must be 2 to 8: a BD-rate needs a curve")
    names = clip_names()
    if opts["clips"]:
        names = opts["clips"].split(",")
        bad = [c for c in names if c not in clip_names()]
        if bad:
            die("unknown clip %s (clips: %s)" % (",".join(bad), ",".join(clip_names())))
    configs = CONFIGS
    if opts["configs"]:
        want = opts["configs"].split(",")
        bad = [c for c in want if c not in [x[0] for x in CONFIGS]]
        if bad:
            die("unknown configuration %s (configurations: %s)" % (",".join(bad), ",".join(x[0] for x in CONFIGS)))
        # a rate-controlled configuration takes its rates from its source
        want += [c[3] for c in CONFIGS if c[0] in want and isinstance(c[3], RateOf)]
        configs = [c for c in CONFIGS if c[0] == REF or c[0] in want]
    if opts["list"]:
        print("clips (%s set, %dx%d, %d frames): %s" % (opts["set"], w, h, n, " ".join(clip_names())))
        for name, kind, args, qs in CONFIGS:
            print("%-12s %s %s  %s" % (name, kind, " ".join(args), ("--bitrate at the rates of %s" % qs)
                                         if isinstance(qs, RateOf) else "q from " + " ".join(map(str, qs))))
        return 0

    if not which("ffmpeg"):
        die("ffmpeg is needed to make the clips and decode the streams (Debian package ffmpeg)")
    mpegenc = which(os.environ.get("MPEGENC"), os.path.join(ROOT, "mpegenc"))
    iqa = which(os.environ.get("MPEGENC_IQA"),
                os.path.join(os.path.dirname(mpegenc), "mpegenc-iqa") if mpegenc else None)
    # a peer named in the environment is that file or nothing (RD_Y262=none
    # runs without y262); otherwise ../shared/bin, then PATH
    peer = lambda env, *cands: which(os.environ[env]) if os.environ.get(env) else which(*cands)
    bins = {
        "mpegenc": mpegenc,
        "ffmpeg": peer("RD_FFMPEG", "ffmpeg", os.path.join(SHARED, "bin", "ffmpeg-static")),
        "y262": peer("RD_Y262", os.path.join(SHARED, "bin", "y262"), "y262"),
        "x262": peer("RD_X262", os.path.join(SHARED, "bin", "x262"), "x262"),
    }
    missing = {"mpegenc": "mpegenc not built (make mpegenc) or MPEGENC wrong",
               "ffmpeg": "no ffmpeg (RD_FFMPEG, PATH, ../shared/bin/ffmpeg-static)",
               "y262": "no y262 (RD_Y262, ../shared/bin/y262, PATH; github rwillenbacher/y262)",
               "x262": "no x262 (RD_X262, ../shared/bin/x262, PATH; github kierank/x262)"}
    for k, env in (("ffmpeg", "RD_FFMPEG"), ("y262", "RD_Y262"), ("x262", "RD_X262")):
        if os.environ.get(env) and not bins[k]:
            missing[k] = "%s=%s is not an executable" % (env, os.environ[env])
    if mad_every > 0 and not iqa:
        print("MAD axis SKIPPED: no mpegenc-iqa beside %s (make mpegenc-iqa)" % mpegenc)
        mad_every = 0
    # a picture, not a program: readable is enough (the shared frames are 0444)
    solar = next((os.path.abspath(c) for c in (os.environ.get("RD_SOLAR"),
                                               os.path.join(SHARED, "solar", "solar_0.png"))
                  if c and os.path.isfile(c) and os.access(c, os.R_OK)), None)
    tmp = tempfile.mkdtemp(prefix="rd.")
    try:
        if not solar and os.path.exists(os.path.join(ROOT, "samples", "solar", "solar_0.png")):
            solar = os.path.join(tmp, "solar2048.png")
            r = run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i",
                     os.path.join(ROOT, "samples", "solar", "solar_0.png"),
                     "-vf", "scale=2048:2048:flags=lanczos", solar])
            if r.returncode != 0:
                solar = None
        opts["window"] = window
        return bench(opts, w, h, n, gop, points, mad_every, names, configs, bins, missing, iqa, solar, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bench(opts, w, h, n, gop, points, mad_every, names, configs, bins, missing, iqa, solar, tmp):
    t0 = time.time()
    try:
        commit = run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]).stdout.strip() or "unknown"
        if run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"]).stdout.strip():
            commit += "+dirty"
    except OSError:
        commit = "unknown"
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.*)", f.read())
            cpu = m.group(1).strip() if m else cpu
    except OSError:
        pass
    stamp = datetime.datetime.utcnow()
    out = opts["out"] or os.path.join(ROOT, "bench", "results", "rd-" + stamp.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(out, exist_ok=True)
    head = ["date %s, commit %s, %d cores (%s)" % (stamp.strftime("%Y-%m-%d %H:%M UTC"), commit, os.cpu_count() or 0, cpu),
            "set %s: %dx%d, %d frames, GOP %d (closed), %d points per curve chosen for PSNR-Y %g-%g dB, "
            "BD-rates vs %s; MAD %s" %
            (opts["set"], w, h, n, gop, points, opts["window"][0], opts["window"][1], REF,
             ("on one frame in %d" % mad_every) if mad_every else "not measured (--mad-every 0)"),
            "pans over %s" % ("samples/solar/solar_0.png upscaled to 2048x2048"
                              if solar and os.path.basename(solar) == "solar2048.png" else solar or "(no solar frame)")]
    notes = []
    runnable = []
    for c in configs:
        if bins[c[1]]:
            runnable.append(c)
        else:
            notes.append("%s SKIPPED: %s" % (c[0], missing[c[1]]))
    if not any(c[0] == REF for c in runnable):
        die("the reference %s cannot run: %s" % (REF, missing["ffmpeg"]))
    for line in head + notes:
        print(line)
    sys.stdout.flush()

    clips = make_clips(names, w, h, n, tmp, solar)
    pts_rows, bd_rows = [], []
    md = ["# make rd", ""] + ["- " + l for l in head + notes] + [""]
    failed = 0
    results = {}  # clip -> config -> list of point dicts
    for clip in names:
        path, desc = clips[clip]
        if path is None:
            print("\n## %s: %s" % (clip, desc))
            md += ["## %s" % clip, "", desc, ""]
            continue
        yuv = None
        if any(c[1] == "y262" for c in runnable):
            yuv = os.path.join(tmp, clip + ".yuv")
            with open(yuv, "wb") as f:
                for fr in y4m_frames(path)[1]:
                    f.write(fr)
        results[clip] = {}
        probe_out = os.path.join(tmp, "probe.m2v")
        for name, kind, args, qs in runnable:
            probe = lambda q: probe_psnr(encode_argv(kind, bins, args, q, path, yuv, w, h, gop, probe_out),
                                         probe_out, path)
            try:
                if isinstance(qs, RateOf):
                    if not results[clip].get(qs):
                        raise RuntimeError("no %s points to take the rates of (--configs %s,%s)" % (qs, qs, name))
                    qs = [RateTarget(round(p["kbps"])) for p in results[clip][qs]]
                else:
                    qs = choose_qs(qs, points, opts["window"], probe)
            except RuntimeError as e:
                print("FAILED %s %s: %s" % (clip, name, e))
                failed += 1
                results[clip][name] = []
                continue
            curve = []
            for q in qs:
                s = os.path.join(tmp, "s.m2v")
                if os.path.exists(s):
                    os.remove(s)
                argv = encode_argv(kind, bins, args, q, path, yuv, w, h, gop, s)
                rc, err, wall, user, sys_ = timed(argv)
                try:
                    if rc != 0 or not os.path.exists(s):
                        raise RuntimeError("%s exited %d: %s" % (name, rc, err.strip()[-300:]))
                    size = os.path.getsize(s)
                    psnr, ssim, ssim_db, mad, madn = metrics(s, path, os.path.join(tmp, "dec.y4m"), iqa, mad_every, n)
                except RuntimeError as e:
                    print("FAILED %s %s q %s: %s" % (clip, name, q, e))
                    failed += 1
                    continue
                p = {"clip": clip, "config": name, "q": q, "frames": n, "bytes": size,
                     "kbps": size * 8 * 25 / n / 1000, "psnr_y": psnr, "ssim_y": ssim, "ssim_db": ssim_db,
                     "mad": mad, "mad_frames": madn, "wall_s": wall, "user_s": user, "sys_s": sys_}
                curve.append(p)
                pts_rows.append(p)
            results[clip][name] = curve
        tab = clip_table(clip, desc, results[clip], runnable, mad_every, bd_rows)
        print()
        print("\n".join(tab))
        sys.stdout.flush()
        md += tab + [""]

    avg = average_table(results, runnable, mad_every, bd_rows)
    for key, label in axes(mad_every):
        avg += [""] + matrix_table(results, runnable, key, label)
    avg += rate_control_table(results, runnable, mad_every, bd_rows)
    goal = goal_lines(results, mad_every)
    elapsed = time.time() - t0
    tail = ["", "run time %d min %02d s; results in %s" % (elapsed // 60, elapsed % 60, out)]
    print()
    print("\n".join(avg + [""] + goal + tail))
    md += avg + [""] + goal + tail
    with open(os.path.join(out, "points.csv"), "w", newline="") as f:
        cols = ["clip", "config", "q", "frames", "bytes", "kbps", "psnr_y", "ssim_y", "ssim_db", "mad",
                "mad_frames", "wall_s", "user_s", "sys_s"]
        wr = csv.DictWriter(f, cols, lineterminator="\n")
        wr.writeheader()
        for p in pts_rows:
            wr.writerow({k: ("" if p[k] is None else (round(p[k], 6) if isinstance(p[k], float) else p[k])) for k in cols})
    with open(os.path.join(out, "bdrate.csv"), "w", newline="") as f:
        wr = csv.writer(f, lineterminator="\n")
        wr.writerow(["clip", "config", "ref", "axis", "bd_rate_pct", "points"])
        wr.writerows(bd_rows)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    return 1 if failed else 0


AXES = [("psnr_y", "PSNR-Y"), ("ssim_db", "SSIM"), ("mad", "MAD")]


def curve_of(points, axis):
    # MAD 0 is saturation (nothing visible), not a quality level a rate maps to
    return [(p["kbps"], p[axis]) for p in points if p[axis] is not None and not (axis == "mad" and p[axis] <= 0)]


def bd(results, name, ref, axis):
    a, b = results.get(ref), results.get(name)
    if not a or not b:
        return None
    return bd_rate(curve_of(a, axis), curve_of(b, axis))


def per_frame(points, key):
    vals = [(p["user_s"] + p["sys_s"]) / p["frames"] if key == "cpu" else p["wall_s"] / p["frames"] for p in points]
    return sum(vals) / len(vals) if vals else None


def axes(mad_every):
    return AXES if mad_every else AXES[:2]


def clip_table(clip, desc, res, runnable, mad_every, bd_rows):
    ax = axes(mad_every)
    out = ["## %s: %s" % (clip, desc), "",
           "| config | " + " | ".join("BD %s" % l for _, l in ax) + " | CPU s/frame | wall s/frame | q: PSNR-Y dB, kbit/s |",
           "|---|" + "---:|" * (len(ax) + 3)]
    for name, *_ in runnable:
        pts = res.get(name, [])
        cells = []
        for key, label in ax:
            v = bd(res, name, REF, key)
            cells.append(pct(v))
            bd_rows.append([clip, name, REF, label, "" if v is None else "%.4f" % v, len(pts)])
        cpu, wall = per_frame(pts, "cpu"), per_frame(pts, "wall")
        kr = ("%s-%s: %.1f-%.1f, %.0f-%.0f" % (pts[0]["q"], pts[-1]["q"], pts[-1]["psnr_y"], pts[0]["psnr_y"],
                                               pts[-1]["kbps"], pts[0]["kbps"]) if pts else "failed")
        out.append("| %s | %s | %s | %s | %s |" % (name, " | ".join(cells),
                   sig(cpu), sig(wall), kr))
    return out


def average_table(results, runnable, mad_every, bd_rows):
    ax = axes(mad_every)
    clips = list(results)
    out = ["## Average over %d clips (%s)" % (len(clips), ", ".join(clips)), "",
           "| config | " + " | ".join("BD %s" % l for _, l in ax) + " | CPU s/frame | wall s/frame |",
           "|---|" + "---:|" * (len(ax) + 2)]
    for name, *_ in runnable:
        cells = []
        for key, label in ax:
            vs = [bd(results[c], name, REF, key) for c in clips]
            ok = [v for v in vs if v is not None]
            # a clip where the axis saturates (MAD on the noise clip is 0
            # at every rate) has no BD-rate: the mean of the others, counted
            v = sum(ok) / len(ok) if ok else None
            cells.append(pct(v) + ("" if len(ok) == len(vs) or not ok else " (%d of %d clips)" % (len(ok), len(vs))))
            bd_rows.append(["average", name, REF, label, "" if v is None else "%.4f" % v, len(ok)])
        cpus = [per_frame(results[c].get(name, []), "cpu") for c in clips]
        walls = [per_frame(results[c].get(name, []), "wall") for c in clips]
        cpus, walls = [v for v in cpus if v is not None], [v for v in walls if v is not None]
        out.append("| %s | %s | %s | %s |" % (name, " | ".join(cells),
                   sig(sum(cpus) / len(cpus) if cpus else None), sig(sum(walls) / len(walls) if walls else None)))
    return out


def matrix_table(results, runnable, key, label):
    """One axis, every clip side by side: the README's view."""
    clips = list(results)
    out = ["## BD-rate %s (%%) vs %s by clip" % (label, REF), "",
           "| config | " + " | ".join(clips) + " | mean |", "|---|" + "---:|" * (len(clips) + 1)]
    for name, *_ in runnable:
        vs = [bd(results[c], name, REF, key) for c in clips]
        ok = [v for v in vs if v is not None]
        mean = sum(ok) / len(ok) if ok else None
        out.append("| %s | %s | %s%s |" % (name, " | ".join(pct(v).replace(" %", "") for v in vs),
                                           pct(mean).replace(" %", ""),
                                           "" if len(ok) == len(vs) or not ok else " (%d clips)" % len(ok)))
    return out


def rate_control_table(results, runnable, mad_every, bd_rows):
    """Each rate-controlled configuration against the constant-quantiser
    one whose rates it took (issue 19: --bitrate within 3 % of --q)."""
    out = []
    for name, _, _, src in runnable:
        if not isinstance(src, RateOf):
            continue
        clips = [c for c in results if results[c].get(name) and results[c].get(src)]
        out += ["", "## BD-rate of %s vs %s (%%), by clip" % (name, src), "",
                "| axis | " + " | ".join(clips) + " | mean |", "|---|" + "---:|" * (len(clips) + 1)]
        for key, label in axes(mad_every):
            vs = [bd(results[c], name, src, key) for c in clips]
            ok = [v for v in vs if v is not None]
            mean = sum(ok) / len(ok) if ok else None
            for c, v in zip(clips, vs):
                bd_rows.append([c, name, src, label, "" if v is None else "%.4f" % v, len(results[c][name])])
            bd_rows.append(["average", name, src, label, "" if mean is None else "%.4f" % mean, len(ok)])
            out.append("| %s | %s | %s |" % (label, " | ".join(pct(v).replace(" %", "") for v in vs),
                                             pct(mean).replace(" %", "")))
    return out


def goal_lines(results, mad_every):
    """Issue 19's goal for the default mpegenc: <= -15 % vs ffmpeg -bf 0 on
    every clip (PSNR-Y), and ahead of y262 (with and without AQ) on average
    on every axis: the mean over clips of mpegenc's BD-rate against y262."""
    me = "mpegenc"
    clips = [c for c in results if results[c].get(me)]
    if not clips:
        return ["goal: no mpegenc curves"]
    out = ["## Goal (issue 19) for %s" % me, ""]
    miss = []
    for c in clips:
        v = bd(results[c], me, REF, "psnr_y")
        if v is None or v > -15.0:
            miss.append("%s %s" % (c, pct(v)))
    out.append("- BD-rate PSNR-Y <= -15 %% vs %s on every clip: %s" %
               (REF, "MET" if not miss else "MISSED on %d of %d (%s)" % (len(miss), len(clips), ", ".join(miss))))
    for peer in ("y262", "y262-noaq"):
        if not all(results[c].get(peer) for c in clips):
            out.append("- ahead of %s: SKIPPED (no %s curves on every clip)" % (peer, peer))
            continue
        for key, label in axes(mad_every):
            vs = [v for v in (bd(results[c], me, peer, key) for c in clips) if v is not None]
            if not vs:
                out.append("- ahead of %s on %s: n/a (no curves with a shared quality range)" % (peer, label))
                continue
            m = sum(vs) / len(vs)
            out.append("- ahead of %s on average, %s: %s (mean BD-rate of %s vs %s %s%s)" %
                       (peer, label, "MET" if m < 0 else "MISSED", me, peer, pct(m),
                        "" if len(vs) == len(clips) else ", over the %d clips where it is defined" % len(vs)))
    return out


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # | head: stop quietly
    sys.exit(main(sys.argv[1:]))
