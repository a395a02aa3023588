#!/usr/bin/env python3
"""BD-rate and plots for tools/bench.sh (python3 standard library only).

  bdrate.py selftest
  bdrate.py table SUMMARY.csv [--ref CONFIG] [--csv OUT.csv]
  bdrate.py plot SUMMARY.csv DIR

BD-rate (Bjontegaard, VCEG-M33): fit log10(kbit/s) as a polynomial of PSNR-Y
for each curve, integrate both fits over the PSNR interval the two curves
share, and turn the mean log-rate difference into a percentage:
    BD = 10^(mean(log10 R_test - log10 R_ref)) - 1.
Negative means fewer bits than the reference for the same PSNR.  The fit is
the cubic of VCEG-M33 when a curve has 4 or more points; the bench's default
q sweep gives 3, and a cubic through 3 points is not determined, so a curve of
n < 4 points gets the polynomial of degree n - 1 through its points.

SUMMARY.csv is bench.sh's summary.csv (header row; the columns used are
config, label, input, mode, setting, kbps, psnr_y, fps).
"""
import csv
import math
import sys


def solve(a, b):
    """Gaussian elimination with partial pivoting; a is n x n, b length n."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        if abs(m[p][c]) < 1e-300:
            raise ValueError("singular system")
        m[c], m[p] = m[p], m[c]
        for r in range(c + 1, n):
            f = m[r][c] / m[c][c]
            for k in range(c, n + 1):
                m[r][k] -= f * m[c][k]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        s = m[r][n] - sum(m[r][k] * x[k] for k in range(r + 1, n))
        x[r] = s / m[r][r]
    return x


def polyfit(xs, ys, deg):
    """Least-squares coefficients c[0] + c[1] x + ... + c[deg] x^deg."""
    n = deg + 1
    ata = [[sum(x ** (i + j) for x in xs) for j in range(n)] for i in range(n)]
    aty = [sum(y * x ** i for x, y in zip(xs, ys)) for i in range(n)]
    return solve(ata, aty)


def polyint(c, lo, hi):
    return sum(ci * (hi ** (i + 1) - lo ** (i + 1)) / (i + 1) for i, ci in enumerate(c))


def clean(points):
    """(kbit/s, PSNR) pairs usable for a fit: positive rate, finite PSNR,
    one point per PSNR value."""
    seen = {}
    for r, p in points:
        if r > 0 and math.isfinite(p):
            seen[p] = r
    return sorted((r, p) for p, r in seen.items())


def bd_rate(ref, test):
    """BD-rate in percent of curve test against curve ref, each a list of
    (kbit/s, PSNR-Y dB); None when there is no shared PSNR interval."""
    ref, test = clean(ref), clean(test)
    if len(ref) < 2 or len(test) < 2:
        return None
    lo = max(min(p for _, p in ref), min(p for _, p in test))
    hi = min(max(p for _, p in ref), max(p for _, p in test))
    if hi - lo <= 1e-9:
        return None
    # fit in x = (PSNR - mid) / half: keeps the normal equations well
    # conditioned (PSNR^6 near 1e10 otherwise); the mean over [lo, hi] is
    # the same in either variable
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    diff = 0.0
    for sign, curve in ((-1, ref), (1, test)):
        xs = [(p - mid) / half for _, p in curve]
        ys = [math.log10(r) for r, _ in curve]
        c = polyfit(xs, ys, min(3, len(curve) - 1))
        diff += sign * polyint(c, -1.0, 1.0) / 2.0
    return (10.0 ** diff - 1.0) * 100.0


def selftest():
    """Known cases with answers from algebra, not from this code."""
    failures = 0

    def check(name, got, want, tol=1e-6):
        nonlocal failures
        ok = got is not None and want is not None and abs(got - want) <= tol
        ok = ok or (got is None and want is None)
        print("%s bdrate/%s: got %s, expected %s" % ("PASS" if ok else "FAIL", name, got, want))
        failures += not ok

    ref4 = [(686.76, 40.28), (309.58, 37.18), (157.11, 34.24), (85.95, 31.42)]
    ref3 = ref4[:3]
    check("identical-4", bd_rate(ref4, ref4), 0.0)
    check("identical-3", bd_rate(ref3, ref3), 0.0)
    # every rate times 0.9: log-rate differs by log10(0.9) everywhere
    check("rate-x0.9", bd_rate(ref4, [(r * 0.9, p) for r, p in ref4]), -10.0)
    check("rate-x1.25-3pt", bd_rate(ref3, [(r * 1.25, p) for r, p in ref3]), 25.0)
    # log10 R = a + b P sampled at different PSNRs; test = ref shifted by d dB
    # (R_t(P) = R_r(P - d)), so log10 R_t - log10 R_r = -b d everywhere
    a, b, d = -1.5, 0.11, 0.7
    lin_r = [(10 ** (a + b * p), p) for p in (30.0, 33.5, 36.0, 41.0)]
    lin_t = [(10 ** (a + b * (p - d)), p) for p in (31.2, 34.0, 38.3, 42.5)]
    check("linear-shift", bd_rate(lin_r, lin_t), (10 ** (-b * d) - 1) * 100)
    # cubic reference, test = reference + e (P - P0): both exact cubics, the
    # mean difference over [lo, hi] is e ((lo + hi) / 2 - P0)
    cub = lambda p: 0.5 + 0.03 * (p - 35) + 0.002 * (p - 35) ** 2 + 0.0004 * (p - 35) ** 3
    e, p0 = 0.02, 34.0
    cub_r = [(10 ** cub(p), p) for p in (30.0, 34.0, 37.0, 40.0)]
    cub_t = [(10 ** (cub(p) + e * (p - p0)), p) for p in (32.0, 35.0, 39.0, 43.0)]
    lo, hi = 32.0, 40.0
    check("cubic-tilt", bd_rate(cub_r, cub_t), (10 ** (e * ((lo + hi) / 2 - p0)) - 1) * 100)
    # a quality axis where lower is better (MAD for tools/rd.py): rates
    # falling as the score rises; every rate x 0.8 is still -20 %
    mad = [(686.76, 2.1), (309.58, 5.0), (157.11, 9.7), (85.95, 16.0)]
    check("decreasing-axis", bd_rate(mad, [(r * 0.8, m) for r, m in mad]), -20.0)
    # disjoint PSNR ranges: no BD-rate
    check("disjoint", bd_rate(ref4, [(r, p + 20) for r, p in ref4]), None)
    return 1 if failures else 0


def read_summary(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(s):
    try:
        v = float(s)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) or v == math.inf else None


def curves(rows):
    """(config, input) -> (label, [(kbps, psnr)]) from the q sweep rows."""
    out = {}
    for r in rows:
        if r.get("mode") != "q":
            continue
        rate, psnr = num(r.get("kbps")), num(r.get("psnr_y"))
        key = (r["config"], r["input"])
        out.setdefault(key, (r["label"], []))
        if rate is not None and psnr is not None:
            out[key][1].append((rate, psnr))
    return out


def table(path, ref_config, csv_out):
    cs = curves(read_summary(path))
    refs = {inp: pts for (cfg, inp), (_, pts) in cs.items() if cfg == ref_config}
    print("| encoder | input | BD-rate vs %s (same input) | PSNR-Y range dB | points |" %
          (ref_config))
    print("|---|---|---:|---|---:|")
    rows = []
    for (cfg, inp), (label, pts) in cs.items():
        if len(clean(pts)) < 2:
            continue  # a single q (a backend timed at one setting): no curve
        ref = refs.get(inp)
        bd = bd_rate(ref, pts) if ref else None
        rng = ""
        if ref and bd is not None:
            lo = max(min(p for _, p in clean(ref)), min(p for _, p in clean(pts)))
            hi = min(max(p for _, p in clean(ref)), max(p for _, p in clean(pts)))
            rng = "%.2f-%.2f" % (lo, hi)
        bds = "%+.2f %%" % bd if bd is not None else "n/a"
        print("| %s | %s | %s | %s | %d |" % (label, inp, bds, rng, len(clean(pts))))
        rows.append([cfg, label, inp, ref_config, "" if bd is None else "%.4f" % bd, rng,
                     len(clean(pts))])
    if csv_out:
        with open(csv_out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["config", "label", "input", "ref", "bd_rate_pct", "psnr_range_db", "points"])
            w.writerows(rows)
    return 0


COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
           "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def ticks(lo, hi, n=5):
    span = hi - lo if hi > lo else 1.0
    step = 10 ** math.floor(math.log10(span / n))
    for m in (1, 2, 5, 10):
        if span / (step * m) <= n:
            step *= m
            break
    t = math.ceil(lo / step) * step
    out = []
    while t <= hi + 1e-9:
        out.append(t)
        t += step
    return out


def svg_rd(cs, path):
    series = [(label + " (" + inp + ")", sorted(clean(pts)))
              for (_, inp), (label, pts) in cs.items() if len(clean(pts)) >= 2]
    if not series:
        return False
    # rates span more than a decade across encoders and q: log axis
    xs = [math.log10(r) for _, s in series for r, _ in s]
    ys = [p for _, s in series for _, p in s]
    x0, x1 = min(xs) - 0.05, max(xs) + 0.05
    y0, y1 = math.floor(min(ys)) - 0.5, math.ceil(max(ys)) + 0.5
    W, H, L, R, T, B = 900, 560, 70, 330, 30, 50
    px = lambda r: L + (math.log10(r) - x0) / (x1 - x0) * (W - L - R)
    py = lambda y: H - B - (y - y0) / (y1 - y0) * (H - T - B)
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">' % (W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="18" font-size="14">PSNR-Y vs rate (q sweep)</text>' % L]
    xt = [m * 10 ** e for e in range(math.floor(x0), math.ceil(x1) + 1) for m in (1, 2, 5)
          if x0 <= math.log10(m * 10 ** e) <= x1]
    for t in xt:
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (px(t), T, px(t), H - B))
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%g</text>' % (px(t), H - B + 16, t))
    for t in ticks(y0, y1):
        o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (L, py(t), W - R, py(t)))
        o.append('<text x="%d" y="%.1f" text-anchor="end">%g</text>' % (L - 6, py(t) + 4, t))
    o.append('<text x="%d" y="%d" text-anchor="middle">kbit/s (log scale)</text>' % ((L + W - R) // 2, H - 10))
    o.append('<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">PSNR-Y (dB)</text>' % ((T + H - B) // 2, (T + H - B) // 2))
    for i, (name, s) in enumerate(series):
        col = COLOURS[i % len(COLOURS)]
        dash = ' stroke-dasharray="5,3"' if name.endswith("(png)") else ""
        o.append('<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>' %
                 (col, dash, " ".join("%.1f,%.1f" % (px(r), py(p)) for r, p in s)))
        for r, p in s:
            o.append('<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>' % (px(r), py(p), col))
        ly = T + 10 + 18 * i
        o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>' % (W - R + 15, ly, W - R + 40, ly, col, dash))
        o.append('<text x="%d" y="%d">%s</text>' % (W - R + 46, ly + 4, esc(name)))
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")
    return True


def svg_fps(rows, path):
    """Horizontal bars: fps of every configuration at the middle q."""
    qs = sorted({r["setting"] for r in rows if r.get("mode") == "q"}, key=lambda s: float(s))
    if not qs:
        return False
    q = qs[len(qs) // 2]
    bars = [(r["label"] + " (" + r["input"] + ")", num(r["fps"])) for r in rows
            if r.get("mode") == "q" and r["setting"] == q and num(r.get("fps"))]
    if not bars:
        return False
    W, L, R, T, bh = 900, 330, 80, 40, 24
    H = T + bh * len(bars) + 40
    vmax = max(v for _, v in bars) * 1.05
    px = lambda v: L + v / vmax * (W - L - R)
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">' % (W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="10" y="20" font-size="14">frames per second at q %s (whole process, median)</text>' % q]
    for t in ticks(0, vmax):
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (px(t), T, px(t), H - 30))
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%g</text>' % (px(t), H - 14, t))
    for i, (name, v) in enumerate(bars):
        y = T + bh * i
        col = COLOURS[0] if name.startswith("mpegenc") else COLOURS[7]
        o.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>' % (L, y + 3, px(v) - L, bh - 6, col))
        o.append('<text x="%d" y="%d" text-anchor="end">%s</text>' % (L - 6, y + bh // 2 + 4, esc(name)))
        o.append('<text x="%.1f" y="%d">%.1f</text>' % (px(v) + 4, y + bh // 2 + 4, v))
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")
    return True


def plot(path, outdir):
    rows = read_summary(path)
    for name, ok in (("rd.svg", svg_rd(curves(rows), outdir + "/rd.svg")),
                     ("fps.svg", svg_fps(rows, outdir + "/fps.svg"))):
        print("%s/%s%s" % (outdir, name, "" if ok else ": nothing to plot"))
    return 0


def main(argv):
    if len(argv) >= 1 and argv[0] == "selftest":
        return selftest()
    if len(argv) >= 2 and argv[0] == "table":
        ref, out, rest = "ffmpeg", None, argv[2:]
        while rest:
            if rest[0] == "--ref" and len(rest) > 1:
                ref, rest = rest[1], rest[2:]
            elif rest[0] == "--csv" and len(rest) > 1:
                out, rest = rest[1], rest[2:]
            else:
                break
        if not rest:
            return table(argv[1], ref, out)
    if len(argv) == 3 and argv[0] == "plot":
        return plot(argv[1], argv[2])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
