#!/usr/bin/env python3
"""VBV check of an MPEG-1/2 video elementary stream (ISO/IEC 13818-2 Annex C,
11172-2 Annex C), written independently of the encoder: it reads only the
stream.

Each picture's bits run from the first header byte in front of it
(sequence/GOP header, else its picture start code) to the first byte of the
next picture's headers (so zero stuffing after a picture is removed with
it); the sequence end code goes with the last picture.

Constant rate (vbv_delay != 0xFFFF): the buffer fills at bit_rate from the
first byte.  Pictures are decoded one frame period apart (I and P pictures
only, progressive frames), so picture n is removed at t_n = t_0 + n / fps,
where t_0 = tau_0 + vbv_delay_0 / 90000 and tau_n is when the last byte of
picture n's start code arrived (13818-2 C.3, 11172-2 C.1.5).  Every
vbv_delay_n must then say t_n - tau_n to within its rounding to the 90 kHz
clock (one tick is allowed); the buffer is checked at the exact t_n, not at
each picture's rounded vbv_delay: rounding moves a removal by up to half a
tick, which at 8 Mbit/s is 44 bits of fullness and would make a stream that
is full to the bit look as if it overflowed (and a drift of a tick or two
per picture would go unseen if only consecutive differences were checked).
Just before each removal the buffer must hold the whole picture (no
underflow) and no more than vbv_buffer_size (no overflow).

Variable rate (vbv_delay 0xFFFF): the buffer fills at bit_rate until full,
the first picture is removed when it is full (or the stream has all
arrived), then one every frame period; no underflow.

FPS defaults to the sequence header's frame rate (with MPEG-2's
frame_rate_extension); give it to override.

usage: vbv_check.py STREAM [FPS]  -> prints a summary, exit 1 on a violation
"""
import sys

FRAME_RATES = {1: 24000 / 1001, 2: 24, 3: 25, 4: 30000 / 1001, 5: 30, 6: 50, 7: 60000 / 1001, 8: 60}


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
            seq = {"bit_rate": rate, "vbv": vbv, "ext": False, "fps": FRAME_RATES.get(b[3] & 0x0F, 0)}
            if pending is None:
                pending = pos
        elif code == 0xB5 and seq is not None and not seq["ext"] and (data[pos + 4] >> 4) == 1:
            # sequence_extension: id 4, profile_and_level 8, progressive 1,
            # chroma_format 2, size extensions 2 + 2, bit_rate_extension 12,
            # marker 1, vbv_buffer_size_extension 8, low_delay 1,
            # frame_rate_extension_n 2, frame_rate_extension_d 5
            b = data[pos + 4:pos + 10]
            rate_ext = ((b[2] & 0x1F) << 7) | (b[3] >> 1)
            vbv_ext = b[4]
            seq["bit_rate"] |= rate_ext << 18
            seq["vbv"] |= vbv_ext << 10
            seq["fps"] *= (((b[5] >> 5) & 3) + 1) / ((b[5] & 0x1F) + 1)
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
    path = sys.argv[1]
    data = open(path, "rb").read()
    seq, pics = parse(data)
    if seq is None or not pics:
        print("no sequence header or no pictures")
        return 1
    fps = float(sys.argv[2]) if len(sys.argv) > 2 else seq["fps"]
    if not fps > 0:
        print("no frame rate: the sequence header's frame_rate_code is reserved")
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
        t0 = (pics[0][1] + 4) * 8 / rate + pics[0][2] / 90000.0
        t = [t0 + k / fps for k in range(n)]
        for k, (begin, pstart, delay) in enumerate(pics):
            tau = (pstart + 4) * 8 / rate      # last byte of the picture start code in
            want = (t[k] - tau) * 90000.0
            if abs(delay - want) > 1.0:
                print("picture %d: vbv_delay %d, but one frame period after the picture before "
                      "is %.1f" % (k, delay, want))
                return 1
        removed = 0
        for k in range(n):
            arrived = min(rate * t[k], len(data) * 8.0)
            full = arrived - removed         # bits in the buffer just before removal k
            if full > size + 1:      # one bit for floating-point rounding
                print("picture %d: overflow: %.0f bits in a %.0f-bit buffer" % (k, full, size))
                return 1
            if full + 1 < bits[k] and rate * t[k] < len(data) * 8.0:
                print("picture %d: underflow: %.0f bits in the buffer, picture has %d" % (k, full, bits[k]))
                return 1
            if rate * t[k] < len(data) * 8.0:   # not yet the end of the stream
                worst_low = min(worst_low, full - bits[k])
            worst_high = max(worst_high, full)
            removed += bits[k]
    else:
        full = size
        for k in range(n):
            if full + 1 < bits[k]:
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
