#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Random differential protocol test: seeded random sessions of pipelined
commands, well-formed and malformed, go to Debian's memcached and to cached
on fresh connections; the replies must match byte for byte, cas uniques
included (the version string and an incr/decr result's padding masked, see
unpad()).

A session is sent in one piece and fits in memcached's 16 KiB read buffer:
what memcached replies to a longer one depends on how the input happens to
arrive, as it sends its queued replies, and applies its 2048-byte line
limit, per buffer it reads.  Large values are covered by difftest.py.
Expiry times under two seconds and delayed flushes are left out for the
same reason, and because memcached's delayed flush_all brings back what an
earlier flush_all hid, a bug cached does not copy.

With --chunked, each session is sent in random pieces of 1 to 5,000 bytes,
some after a pause, to both servers (see chunked_session()).

usage: diffrandom.py [--chunked] [FIRST_SEED [SESSIONS]]   (default 1 400)
"""
import base64
import random
import re
import subprocess
import sys

import util
from difftest import norm

KEYS = [b"a", b"b", b"c", b"num", b"k" * 250, b"k" * 251, b"x\x01y", b"\xff"]
NUMS = [b"0", b"-1", b"5", b"18446744073709551615", b"18446744073709551616",
        b"abc", b"1x", b"4294967295", b"4294967296", b"2147483648",
        b"-2147483649", b"", b"0x10", b"1e3", b"99999999999999999999999"]
SMALL = [0, 2, 3, 10, 100]


def tok(r):
    return r.choice(KEYS) if r.random() < 0.6 else r.choice(NUMS)


def num(r):
    return r.choice(NUMS) if r.random() < 0.3 else str(r.choice(SMALL)).encode()


def key(r):
    return r.choice(KEYS[:4]) if r.random() < 0.85 else r.choice(KEYS)


def data(r, n):
    return bytes(r.choice(b"0123456789ab") for _ in range(n))


def storage(r, c, nr, extra):
    n = r.choice([0, 1, 2, 3, 5, 20])
    flags = num(r) if r.random() < 0.2 else b"0"
    exp = r.choice([b"0", b"0", b"100", b"-1", b"abc"])
    lenf = str(n).encode() if r.random() < 0.9 else r.choice(NUMS)
    args = [c, key(r), flags, exp, lenf]
    if c == b"cas":
        args.append(r.choice([b"1", b"2", b"0", b"abc", b"18446744073709551615"]))
    if r.random() < 0.05:
        args = args[:r.randrange(1, len(args))]
    line = b" ".join(args + nr + extra) + b"\r\n"
    body = data(r, n)
    if r.random() < 0.1:
        body = data(r, n + r.choice([-1, 1, 2]) if n else 1)
    end = b"\r\n" if r.random() < 0.93 else r.choice([b"\n", b"xx", b"\r"])
    return line + body + end


B64 = {k: base64.b64encode(k) for k in KEYS}
META_FLAGS = {
    "mg": [b"v", b"k", b"s", b"f", b"t", b"c", b"h", b"l", b"q", b"u", b"O1", b"Oabc",
           b"O" + b"o" * 33, b"T", b"N", b"R", b"E5", b"z", b"C1", b"P", b"L"],
    "ms": [b"T", b"F", b"C", b"I", b"q", b"k", b"c", b"O7", b"O" + b"o" * 33, b"MS", b"ME",
           b"MA", b"MP", b"MR", b"MX", b"MSS", b"M", b"v", b"z"],
    "md": [b"q", b"I", b"T", b"C", b"k", b"O9", b"O" + b"o" * 33, b"v", b"z"],
    "ma": [b"N", b"J", b"D", b"MI", b"MD", b"M+", b"M-", b"MX", b"C", b"T", b"q", b"v",
           b"t", b"c", b"k", b"O2", b"O" + b"o" * 33, b"z"],
}
NUM_FLAGS = b"TNRFCJD"


def meta_flag(r, f):
    """A flag; the ones that take a number get one, sometimes a bad one.
    No negative TTL: memcached's relative clock would show in t."""
    if f[:1] in NUM_FLAGS and len(f) == 1:
        if f == b"C" and r.random() < 0.6:
            return b"C" + str(r.randrange(1, 12)).encode()
        v = r.choice([b"0", b"0", b"30", b"100", b"5"]) if r.random() < 0.9 else \
            r.choice([b"", b"x", b"-1", b"1x", b"99999999999999999999"])
        if f in b"TNR" and v == b"-1":
            v = b"x"
        return f + v
    return f


def meta(r, c):
    """A meta command: a key (sometimes base64 with b), random flags in
    random order, at times repeated, too many or malformed."""
    k = key(r)
    flags = []
    if r.random() < 0.15:
        k = B64.get(k, k) if r.random() < 0.8 else r.choice([b"!!!", b"Zm9", b"Zg=="])
        flags.append(b"b")
    for _ in range(r.choice([0, 1, 2, 3, 4, 6, 20])):
        flags.append(meta_flag(r, r.choice(META_FLAGS.get(c, [b"v"]))))
    r.shuffle(flags)
    args = [c.encode(), k]
    if c == "ms":
        n = r.choice([0, 1, 2, 3, 5])
        lenf = str(n).encode() if r.random() < 0.93 else r.choice(NUMS)
        args.append(lenf)
        if r.random() < 0.05:
            args = args[:r.randrange(1, 3)]
        body = data(r, n) if r.random() < 0.93 else data(r, n + 1)
        return b" ".join(args + flags) + b"\r\n" + body + b"\r\n"
    if r.random() < 0.03:
        args = args[:1]
    return b" ".join(args + flags) + b"\r\n"


def command(r):
    c = r.choice(["set", "add", "replace", "append", "prepend", "cas", "get", "gets",
                  "gat", "gats", "delete", "touch", "incr", "decr", "flush_all",
                  "verbosity", "version", "junk", "stats_reset", "mn", "quit",
                  "longline", "space", "lf", "get_many",
                  "mg", "mg", "mg", "ms", "ms", "ms", "md", "ma", "ma", "me"])
    if c in ("mg", "ms", "md", "ma", "me"):
        return meta(r, c)
    nr = [b"noreply"] if r.random() < 0.15 else []
    extra = [tok(r)] if r.random() < 0.07 else []
    if c in ("set", "add", "replace", "append", "prepend", "cas"):
        return storage(r, c.encode(), nr, extra)
    if c in ("get", "gets"):
        return b" ".join([c.encode()] + [key(r) for _ in range(r.randrange(0, 4))]) + b"\r\n"
    if c in ("gat", "gats"):
        return b" ".join([c.encode(), num(r)] + [key(r) for _ in range(r.randrange(0, 3))]) + b"\r\n"
    if c == "delete":
        return b" ".join([b"delete", key(r)] + ([num(r)] if r.random() < 0.1 else []) + nr + extra) + b"\r\n"
    if c == "touch":
        return b" ".join([b"touch", key(r), num(r)] + nr + extra) + b"\r\n"
    if c in ("incr", "decr"):
        return b" ".join([c.encode(), key(r), num(r)] + nr + extra) + b"\r\n"
    if c == "flush_all":
        arg = [r.choice([b"0", b"abc", b"-1"])] if r.random() < 0.3 else []
        extra = [t for t in extra if not re.match(rb"[-+0-9]", t)]
        return b" ".join([b"flush_all"] + arg + nr + extra) + b"\r\n"
    if c == "verbosity":
        arg = [r.choice([b"0", b"x", b"-1"])] if r.random() < 0.8 else []
        return b" ".join([b"verbosity"] + arg + nr + extra) + b"\r\n"
    if c == "version":
        return b"version\r\n"
    if c == "stats_reset":
        return b"stats reset\r\n"
    if c == "mn":
        return b"mn\r\n"
    if c == "quit":
        return b"quit\r\n" if r.random() < 0.2 else b"mn\r\n"
    if c == "longline":
        return b"x" * r.choice([2040, 2047, 2048, 2049, 2100, 5000]) + \
            (b"\r\n" if r.random() < 0.5 else b"")
    if c == "space":
        return b" " * r.randrange(1, 4) + r.choice(
            [b"get a", b"version", b"set a 0 0 1\r\nx", b"incr  num  2", b"delete\ta"]) + b"\r\n"
    if c == "lf":
        return r.choice([b"get a\n", b"version\n", b"set a 0 0 1\nx\r\n", b"set a 0 0 1\r\nx\n",
                         b"\n", b"\r\r\n"])
    if c == "get_many":
        return b"get " + b" ".join(key(r) for _ in range(r.randrange(20, 200))) + b"\r\n"
    return b" ".join(tok(r) for _ in range(r.randrange(1, 4))) + b"\r\n"


def chunked_session(seed):
    """For input sent in pieces: what memcached replies then depends on how
    the pieces fall wherever its read buffer decides (a bad key in a get
    takes back replies, a line over 2048 bytes may be refused), so neither
    is drawn; nor is quit, as what the client reads before the reset of a
    server that closes with input unread is timing too.  A trailer
    completes any value block left open, as memcached would drop the
    replies queued before one at the end."""
    r = random.Random(seed)
    sess = b"flush_all noreply\r\n"
    for _ in range(r.randrange(1, 120)):
        while True:
            c = command(r)
            words = c.lstrip(b" ").split(b" ")
            if len(c) < 2000 and words[0] != b"quit\r\n" and not (
                    b"k" * 251 in c and words[0] in (b"get", b"gets", b"gat", b"gats")):
                break
        sess += c
    return sess + b"\r\n" * 16 + b"mn\r\n"


def session(seed):
    r = random.Random(seed)
    sess = b"flush_all noreply\r\n"
    for _ in range(r.randrange(1, 120)):
        c = command(r)
        if len(sess) + len(c) > 16000:
            break
        sess += c
    return sess


VERSION = re.compile(rb"VERSION [^\r]*\r\n")
PADDED = re.compile(rb"^(VALUE \S+ \d+ )\d+( \S+)?\r\n(\d+) +\r$", re.M)


def unpad(b):
    """memcached writes a shorter incr/decr result in place, padded with
    spaces, only when no other thread holds the item at that moment, else
    it stores it unpadded: whether a value is padded is timing."""
    return PADDED.sub(lambda m: m.group(1) + b"%d" % len(m.group(3)) +
                      (m.group(2) or b"") + b"\r\n" + m.group(3) + b"\r", b)


# times in seconds a meta reply shows: t (TTL left), l (since last access),
# me's exp= and la=.  The two servers' clocks tick apart, so these may
# differ by one.
TIMES = re.compile(rb"(?<= t)\d+|(?<= l)\d+|(?<=exp=)-?\d+|(?<=la=)\d+")


def same(a, b):
    """Equal, but for a meta time that differs by one second."""
    if a == b:
        return True
    if TIMES.split(a) != TIMES.split(b):
        return False
    return all(abs(int(x) - int(y)) <= 1 for x, y in zip(TIMES.findall(a), TIMES.findall(b)))


def reply(port, sess, pieces_seed):
    pieces = random.Random(pieces_seed) if pieces_seed is not None else None
    out = util.command(port, sess, pieces=pieces)
    return unpad(VERSION.sub(b"VERSION\r\n", norm(out)))


def start(argv, port):
    # stderr is not read: verbosity must not fill a pipe
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    util.wait_port(port, proc)
    return proc


def main():
    args = sys.argv[1:]
    chunked = "--chunked" in args
    args = [a for a in args if a != "--chunked"]
    first = int(args[0]) if args else 1
    count = int(args[1]) if len(args) > 1 else 400
    util.start = start
    mc, mport = util.start_memcached()
    cd, cport = util.start_cached("--mode", "pinned")
    bad = 0
    try:
        for seed in range(first, first + count):
            sess = chunked_session(seed) if chunked else session(seed)
            a, b = (reply(port, sess, seed if chunked else None)
                    for port in (mport, cport))
            if not same(a, b):
                bad += 1
                i = 0
                while i < min(len(a), len(b)) and a[i] == b[i]:
                    i += 1
                print("  seed %d (%d bytes): replies differ at byte %d" % (seed, len(sess), i))
                print("    memcached: %r" % a[max(0, i - 120):i + 120])
                print("    cached:    %r" % b[max(0, i - 120):i + 120])
        alive = cd.poll() is None
        if not alive:
            bad += 1
            print("  cached exited")
    finally:
        util.stop(mc)
        util.stop(cd)
    print("%d random%s sessions (seeds %d-%d), %d differences" %
          (count, " chunked" if chunked else "", first, first + count - 1, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
