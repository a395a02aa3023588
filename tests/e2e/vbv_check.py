#!/usr/bin/env python3
"""VBV check of an MPEG-1/2 video elementary stream (ISO/IEC 13818-2 Annex C,
11172-2 Annex C), written independently of the encoder: it reads only the
stream.

Each picture's bits run from the first header byte in front of it
(sequence/GOP header, else its picture start code) to the first byte of the
next picture's headers; the sequence end code goes with the last picture.
Constant rate (vbv_delay != 0xFFFF): the buffer fills at bit_rate from the
first byte; picture n is removed at t_n = tau_n + vbv_delay_n / 90000, where
tau_n is when the last byte of its picture start code arrived; the decoding
times must advance by one frame period, and just before each removal the
buffer must hold the whole picture (no underflow) and no more than
vbv_buffer_size (no overflow).  Variable rate (vbv_delay 0xFFFF): the buffer
fills at bit_rate until full, the first picture is removed when it is full,
then one every frame period; no underflow.

usage: vbv_check.py STREAM FPS  -> prints a summary, exit 1 on a violation
"""
import sys


def parse(data):
    starts = []
    i = data.find(b"\x00\x00\x01")
    while i >= 0 and i + 3 < len(data):
        starts.append((i, data[i + 3]))
        i = data.find(b"\x00\x00\x01", i + 3)
    seq = None
    pics = []          # (header_begin_byte, picture_start_byte, vbv_delay)
    pending = None     # first header byte in front of the next picture
    for pos, code in starts:
        if code == 0xB3:
            b = data[pos + 4:pos + 12]
            rate = (b[4] << 10) | (b[5] << 2) | (b[6] >> 6)
            vbv = ((b[6] & 0x1F) << 5) | (b[7] >> 3)
            seq = {"bit_rate": rate, "vbv": vbv, "ext": False}
            if pending is None:
                pending = pos
        elif code == 0xB5 and seq is not None and not seq["ext"] and (data[pos + 4] >> 4) == 1:
            # sequence_extension: id 4, profile_and_level 8, progressive 1,
            # chroma_format 2, size extensions 2 + 2, bit_rate_extension 12,
            # marker 1, vbv_buffer_size_extension 8
            b = data[pos + 4:pos + 9]
            rate_ext = ((b[2] & 0x1F) << 7) | (b[3] >> 1)
            vbv_ext = b[4]
            seq["bit_rate"] |= rate_ext << 18
            seq["vbv"] |= vbv_ext << 10
            seq["ext"] = True
        elif code == 0xB8:
            if pending is None:
                pending = pos
        elif code == 0x00:
            b = data[pos + 4:pos + 8]
            delay = ((b[1] & 0x07) << 13) | (b[2] << 5) | (b[3] >> 3)
            pics.append((pending if pending is not None else pos, pos, delay))
            pending = None
    return seq, pics


def main():
    path, fps = sys.argv[1], float(sys.argv[2])
    data = open(path, "rb").read()
    seq, pics = parse(data)
    if seq is None or not pics:
        print("no sequence header or no pictures")
        return 1
    rate = seq["bit_rate"] * 400.0
    size = seq["vbv"] * 16384.0
    n = len(pics)
    bounds = [p[0] for p in pics] + [len(data)]
    bits = [(bounds[k + 1] - bounds[k]) * 8 for k in range(n)]
    vbr = pics[0][2] == 0xFFFF
    worst_low, worst_high = float("inf"), -float("inf")
    if not vbr:
        if any(p[2] == 0xFFFF for p in pics):
            print("mixed constant and variable vbv_delay")
            return 1
        t = []
        for k, (begin, pstart, delay) in enumerate(pics):
            tau = (pstart + 4) * 8 / rate      # last byte of the picture start code in
            t.append(tau + delay / 90000.0)
        for k in range(1, n):
            dt = t[k] - t[k - 1]
            if abs(dt - 1.0 / fps) > 2.5 / 90000.0:
                print("picture %d decoded %.6f s after the one before, not 1/%g s" % (k, dt, fps))
                return 1
        removed = 0
        for k in range(n):
            arrived = min(rate * t[k], len(data) * 8.0)
            full = arrived - removed         # bits in the buffer just before removal k
            if full > size + 8:
                print("picture %d: overflow: %.0f bits in a %.0f-bit buffer" % (k, full, size))
                return 1
            if full + 8 < bits[k] and rate * t[k] < len(data) * 8.0:
                print("picture %d: underflow: %.0f bits in the buffer, picture has %d" % (k, full, bits[k]))
                return 1
            if rate * t[k] < len(data) * 8.0:   # not yet the end of the stream
                worst_low = min(worst_low, full - bits[k])
            worst_high = max(worst_high, full)
            removed += bits[k]
    else:
        full = size
        for k in range(n):
            if full + 8 < bits[k]:
                print("picture %d: underflow: %.0f bits in the buffer, picture has %d" % (k, full, bits[k]))
                return 1
            worst_low = min(worst_low, full - bits[k])
            full = min(size, full - bits[k] + rate / fps)
            worst_high = max(worst_high, full)
    print("ok: %s, %d pictures, bit_rate %.0f, vbv %.0f bits, lowest after removal %.0f, highest %.0f, "
          "mean %.0f bit/s" % ("variable" if vbr else "constant", n, rate, size, worst_low, worst_high,
                               sum(bits) * fps / n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
