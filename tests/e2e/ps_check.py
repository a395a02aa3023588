#!/usr/bin/env python3
"""ps_check.py FILE: walks an MPEG-1 system stream or MPEG-2 program stream
of one video stream (0xE0) and checks its timing syntax:
- the file is a sequence of packs (pack header, optional system header,
  PES packets, padding) and nothing else, then the program end code
  0x000001B9 (end=yes; ffmpeg's own muxer ends at a pack without it: end=no);
- every marker bit is 1, SCR never decreases, and every packet's data
  arrives before it is decoded: SCR of its pack <= its DTS (or PTS);
- PTS step between consecutive pictures (sorted by PTS) is the frame period.
Prints 'ok packs=N pictures=N first_pts=T period=P[..Q]' or 'error: ...'
and exits 1 on the first problem."""
import sys


def ts(b, prefix):
    """33-bit time stamp of the 5-byte form; checks the prefix and markers."""
    if b[0] >> 4 != prefix:
        raise ValueError("time stamp prefix %x, expected %x" % (b[0] >> 4, prefix))
    if not (b[0] & 1 and b[2] & 1 and b[4] & 1):
        raise ValueError("time stamp marker bit 0")
    return ((b[0] >> 1) & 7) << 30 | b[1] << 22 | (b[2] >> 1) << 15 | b[3] << 7 | b[4] >> 1


def main(path):
    d = open(path, 'rb').read()
    pos, packs, scr, last_scr, stamps, mpeg2, end = 0, 0, None, -1, [], None, "no"
    while pos < len(d):
        if d[pos:pos + 3] != b'\0\0\1':
            raise ValueError("no start code at byte %d" % pos)
        code = d[pos + 3]
        if code == 0xB9:
            if pos + 4 != len(d):
                raise ValueError("%d bytes after the end code" % (len(d) - pos - 4))
            end = "yes"
            break
        if code == 0xBA:
            packs += 1
            b = d[pos + 4:pos + 14]
            if b[0] >> 6 == 1:        # 13818-1
                mpeg2 = True
                if not (b[0] & 4 and b[2] & 4 and b[4] & 4 and b[5] & 1 and b[8] & 3 == 3):
                    raise ValueError("pack header marker bit 0 at byte %d" % pos)
                scr = ((b[0] >> 3) & 7) << 30 | (b[0] & 3) << 28 | b[1] << 20 | \
                      (b[2] >> 3) << 15 | (b[2] & 3) << 13 | b[3] << 5 | b[4] >> 3
                mux = b[6] << 14 | b[7] << 6 | b[8] >> 2
                pos += 14 + (b[9] & 7)
            else:                      # 11172-1
                mpeg2 = False
                scr = ts(b[:5], 2)
                mux = (b[5] & 0x7F) << 15 | b[6] << 7 | b[7] >> 1
                pos += 12
            if mux == 0:
                raise ValueError("mux rate 0")
            if scr < last_scr:
                raise ValueError("SCR goes back: %d after %d" % (scr, last_scr))
            last_scr = scr
            continue
        length = d[pos + 4] << 8 | d[pos + 5]
        body = d[pos + 6:pos + 6 + length]
        if len(body) != length:
            raise ValueError("packet at byte %d runs past the end" % pos)
        if code == 0xE0:
            if scr is None:
                raise ValueError("packet before any pack header")
            pts = dts = None
            if mpeg2:
                flags = body[1] >> 6
                if body[0] >> 6 != 2:
                    raise ValueError("PES header does not start with '10'")
                if flags & 2:
                    pts = ts(body[3:8], 3 if flags == 3 else 2)
                if flags == 3:
                    dts = ts(body[8:13], 1)
            else:
                i = 0
                while body[i] == 0xFF:
                    i += 1
                if body[i] >> 6 == 1:
                    i += 2
                if body[i] >> 4 == 2:
                    pts = ts(body[i:i + 5], 2)
                elif body[i] >> 4 == 3:
                    pts, dts = ts(body[i:i + 5], 3), ts(body[i + 5:i + 10], 1)
                elif body[i] != 0x0F:
                    raise ValueError("bad packet header byte %02x" % body[i])
            if pts is not None:
                dec = dts if dts is not None else pts
                if scr > dec:
                    raise ValueError("data arrives after its decoding time: SCR %d > DTS %d" % (scr, dec))
                stamps.append(pts)
        elif code not in (0xBB, 0xBE):   # system header, padding stream
            raise ValueError("unexpected start code %02x at byte %d" % (code, pos))
        pos += 6 + length
    stamps.sort()
    steps = sorted(set(b - a for a, b in zip(stamps, stamps[1:])))
    if not stamps:
        raise ValueError("no time stamps")
    if steps and steps[-1] - steps[0] > 1:
        raise ValueError("PTS steps vary: %s" % steps[:5])
    print("ok packs=%d pictures=%d end=%s first_pts=%d period=%s" % (
        packs, len(stamps), end, stamps[0], "..".join(str(s) for s in (steps[:1] + steps[1:][-1:])) or "-"))


try:
    main(sys.argv[1])
except (ValueError, IndexError) as e:
    print("error: %s" % e)
    sys.exit(1)
