#!/usr/bin/python3
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


def command(r):
    c = r.choice(["set", "add", "replace", "append", "prepend", "cas", "get", "gets",
                  "gat", "gats", "delete", "touch", "incr", "decr", "flush_all",
                  "verbosity", "version", "junk", "stats_reset", "mn", "quit",
                  "longline", "space", "lf", "get_many"])
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
            if a != b:
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
