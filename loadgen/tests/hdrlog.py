#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""hdrlog.py - check loadgen's --hdr-log output against its JSON.

Decodes HdrHistogram's interval log (format 1.3) from the format's own
definition, not from loadgen's code: base64, the compressed V2 cookie
0x1c849314 and length, a zlib stream, the V2 header (cookie 0x1c849313,
payload length, normalizing offset, significant digits, lowest and highest
trackable values, conversion ratio, all big-endian), then ZigZag LEB128
counts where a negative number is a run of zeros.  A counter index maps to
its lowest value as in HdrHistogram with 2048 sub-buckets and unit 1.

usage: hdrlog.py ONE.hlog ONE.json INTERVALS.hlog INTERVALS.jsonl
  ONE: a run without --interval (one line per histogram) and its --json
  INTERVALS: a run with --interval and its interval lines
"""
import base64
import json
import struct
import sys
import zlib


def decode(text):
    raw = base64.b64decode(text)
    cookie, n = struct.unpack(">II", raw[:8])
    assert cookie == 0x1C849314, hex(cookie)
    body = zlib.decompress(raw[8:8 + n])
    cookie, plen, norm, digits, lowest, highest, ratio = struct.unpack(">IIIIqqd", body[:40])
    assert cookie == 0x1C849313 and norm == 0 and digits == 3 and lowest == 1, (hex(cookie), digits)
    assert highest == 3600 * 10**9 and ratio == 1.0 and len(body) == 40 + plen
    counts, p = [], 40
    while p < len(body):
        v, shift = 0, 0
        while True:
            b = body[p]
            p += 1
            if shift == 56:
                v |= b << 56
                break
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        v = (v >> 1) ^ -(v & 1)
        counts.extend([0] * -v if v < 0 else [v])
    buckets = {}
    for i, c in enumerate(counts):
        if c:
            b, s = (i >> 10) - 1, (i & 1023) + 1024
            if b < 0:
                b, s = 0, s - 1024
            buckets[s << b] = c
    return buckets


def read_log(path):
    lines = open(path).read().splitlines()
    assert lines[0] == "#[Histogram log format version 1.3]", lines[0]
    assert lines[1].startswith("#[StartTime: ") and lines[2].startswith("#[BaseTime: ")
    assert lines[3] == '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"'
    out = []
    for l in lines[4:]:
        f = l.split(",")
        tag = None
        if f[0].startswith("Tag="):
            tag = f.pop(0)[4:]
        out.append((tag, float(f[0]), float(f[1]), float(f[2]), decode(f[3])))
    return out


def main():
    one = read_log(sys.argv[1])
    d = json.load(open(sys.argv[2]))
    want = {None: d["histogram"]}
    want.update({k: v["histogram"] for k, v in d["commands"].items()})
    assert sorted(str(t) for t, *_ in one) == sorted(str(k) for k in want), [t for t, *_ in one]
    for tag, start, length, mx, buckets in one:
        h = want[tag]
        assert buckets == {v: n for v, n in h["buckets"]}, tag
        assert abs(mx - h["max"] / 1e6) < 0.001, (tag, mx, h["max"])
        assert start == 0 and abs(length - d["duration_s"]) < 0.01, (start, length)

    ivl = [l for l in read_log(sys.argv[3]) if l[0] is None]
    lines = [json.loads(l) for l in open(sys.argv[4])]
    assert len(ivl) == len(lines) >= 3, (len(ivl), len(lines))
    end = 0
    for (_, start, length, mx, buckets), l in zip(ivl, lines):
        assert sum(buckets.values()) == l["ops"] + l["errors"] + l["unfinished"], (buckets, l)
        assert abs(start - end) < 0.002 and abs(start + length - l["t"]) < 0.002, (start, length, l["t"])
        assert abs(mx - l["max_us"] / 1000) < 0.001
        end = start + length
    print("hdrlog: %d + %d histograms decoded" % (len(one), len(ivl)))


if __name__ == "__main__":
    main()
