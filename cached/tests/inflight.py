#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Replies in flight never carry a wrong byte.  Values of 2 KiB and more
go out straight from the memfd (zero copy), so a command that rewrites a
value in place (incr, decr and ma write a shorter number over the old one,
padded with spaces) must not write into a value that a queued reply still
points at.  memcached writes in place only when nobody else holds the item
and otherwise stores a new one; cached must do the same.

Each round sets a numeric value of 2,046 to 500,000 bytes (leading zeros
or trailing spaces, both of which memcached's incr accepts), then a reader
whose receive buffer is 4 KiB pipelines 20 gets of it, so that nearly all
of the replies wait in the server; then another connection changes the
value with incr, decr or ma and learns each new value and its cas with
gets.  The reader then reads everything: each reply must carry exactly
the value of the cas it names.  The same rounds run against Debian's
memcached first, as a check of the test itself.

usage: inflight.py [ROUNDS]   (default 8)
"""
import random
import socket
import sys

import util

check = util.Checks("inflight")
SIZES = [2046, 3000, 70000, 500000]
GETS = 20


class Conn:
    def __init__(self, port, rcvbuf=None):
        self.s = socket.socket()
        if rcvbuf:
            # before connect, so that the window is set from it
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.s.settimeout(20)
        self.s.connect(("127.0.0.1", port))
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def _fill(self):
        d = self.s.recv(4096)
        if not d:
            raise EOFError("connection closed")
        self.buf += d

    def line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line

    def read(self, n):
        while len(self.buf) < n:
            self._fill()
        d, self.buf = self.buf[:n], self.buf[n:]
        return d

    def gets_reply(self):
        """(cas, value) of one gets reply, or (None, header) when it is
        not a single value."""
        hdr = self.line()
        p = hdr.split()
        if len(p) != 5 or p[0] != b"VALUE":
            return None, hdr
        data = self.read(int(p[3]) + 2)
        end = self.line()
        if data[-2:] != b"\r\n" or end != b"END":
            return None, hdr + b" (bad framing)"
        return int(p[4]), data[:-2]

    def close(self):
        self.s.close()


def numeric(r, size):
    """A number of size bytes that memcached's incr accepts."""
    n = str(r.randrange(1, 10 ** 6)).encode()
    if r.random() < 0.5:
        return b"0" * (size - len(n)) + n
    return n + b" " * (size - len(n))


def mutate(r, w, key):
    """One change of the value through w; returns the number it answered."""
    d = r.randrange(0, 1000)
    kind = r.choice(["incr", "decr", "ma", "ma-decr"])
    if kind in ("incr", "decr"):
        w.send(b"%s %s %d\r\n" % (kind.encode(), key, d))
        return w.line()
    w.send(b"ma %s D%d v%s\r\n" % (key, d, b" MD" if kind == "ma-decr" else b""))
    head = w.line()
    return w.line() if head.startswith(b"VA ") else head


def round_(port, r, rnd_no, name):
    key = b"num%d" % rnd_no
    size = SIZES[rnd_no % len(SIZES)]
    w = Conn(port)
    value = numeric(r, size)
    w.send(b"set %s 0 0 %d\r\n%s\r\ngets %s\r\n" % (key, size, value, key))
    check(w.line() == b"STORED", "%s round %d: set" % (name, rnd_no))
    cas, v = w.gets_reply()
    known = {cas: v}
    reader = Conn(port, rcvbuf=4096)
    reader.send(b"gets %s\r\n" % key * GETS)
    # the first header is here: the server has taken the gets in and
    # queued their replies, most of which it cannot send yet
    first = reader.line()
    for _ in range(r.randrange(1, 4)):
        got = mutate(r, w, key)
        w.send(b"gets %s\r\n" % key)
        cas, v = w.gets_reply()
        # the number it answered, padded with spaces when written in place
        check(cas is not None and got.isdigit() and v.rstrip(b" ") == got,
              "%s round %d: the value after a change: %r, answered %r" % (name, rnd_no, v[:40], got))
        if cas is not None:
            known[cas] = v
    reader.buf = first + b"\r\n" + reader.buf
    bad = []
    for i in range(GETS):
        cas, v = reader.gets_reply()
        want = known.get(cas)
        if want != v:
            bad.append((i, cas, v[:30] if v else v, len(v or b""),
                        (want[:30], len(want)) if want else None))
    check(not bad, "%s round %d (%d bytes): replies whose bytes are not the value of "
          "their cas (reply, cas, bytes, length, value of that cas): %r"
          % (name, rnd_no, size, bad[:3]))
    reader.close()
    w.close()


def run(port, name, rounds):
    r = random.Random(7)
    for i in range(rounds):
        round_(port, r, i, name)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    mc, mport = util.start_memcached()
    try:
        run(mport, "memcached", rounds)
    finally:
        util.stop(mc)
    cd, cport = util.start_cached("--mode", "pinned")
    try:
        run(cport, "cached", rounds)
        check(cd.poll() is None, "cached alive")
    finally:
        util.stop(cd)
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
