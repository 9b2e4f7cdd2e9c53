#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Connections at the edges, against Debian's memcached where the behaviour
is memcached's: a client that half-closes after a pipeline gets every
answer, as does one that ends it with quit.  Run one part with its name as
the argument (limits.py halfclose)."""
import os
import signal
import socket
import sys
import threading
import time

import util

check = util.Checks("limits")


def read_all(s, timeout=10.0):
    """Everything the server sends until it closes (or timeout passes)."""
    s.settimeout(timeout)
    got = []
    try:
        while True:
            d = s.recv(1 << 20)
            if not d:
                break
            got.append(d)
    except (socket.timeout, ConnectionResetError):
        pass
    return b"".join(got)


def fill(port, n, size, prefix=b"pk"):
    val = b"p" * size
    for lo in range(0, n, 200):
        util.command(port, b"".join(b"set %s%d 0 0 %d noreply\r\n%s\r\n" % (prefix, i, size, val)
                                    for i in range(lo, min(n, lo + 200))) + b"mn\r\n", timeout=10)


def halfclose():
    """2,000 gets of 16 KB values, then shutdown(SHUT_WR) (or quit): every
    request read before the end is answered, then the connection closes.
    The daemon used to close after one round of replies past its output
    bound (about 150 answers)."""
    n, size = 2000, 16000
    want = sum(len(b"VALUE pk%d 0 %d\r\n" % (i, size)) + size + 7 for i in range(n))
    for name, starter in (("memcached", util.start_memcached), ("cached", util.start_cached)):
        proc, port = starter("-m", "64")
        fill(port, n, size)
        for end in ("shutdown", "quit"):
            s = socket.create_connection(("127.0.0.1", port))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
            req = b"".join(b"get pk%d\r\n" % i for i in range(n))
            if end == "quit":
                req += b"quit\r\n"
            # the server may answer while the requests still go out
            sender = threading.Thread(target=lambda: (s.sendall(req), end == "shutdown" and
                                                      s.shutdown(socket.SHUT_WR)))
            sender.start()
            got = read_all(s)
            sender.join()
            s.close()
            check(len(got) == want and got.count(b"VALUE ") == n,
                  "%s: 2,000 gets of 16 KB then %s: %d answers, %d of %d bytes"
                  % (name, end, got.count(b"VALUE "), len(got), want))
        util.stop(proc)


def stopped(proc):
    """SIGSTOP, and wait until every thread of proc is stopped."""
    proc.send_signal(signal.SIGSTOP)
    end = time.time() + 5
    while time.time() < end:
        states = []
        for t in os.listdir("/proc/%d/task" % proc.pid):
            try:
                states.append(open("/proc/%d/task/%s/stat" % (proc.pid, t)).read().rsplit(")", 1)[1].split()[0])
            except OSError:
                pass
        if states and all(st in "tT" for st in states):
            return
        time.sleep(0.001)
    raise RuntimeError("pid %d did not stop" % proc.pid)


def yields():
    """-R: a connection with a pipeline in its buffer runs -R commands (one
    more the first time), then lets the worker's other connections run.
    With -t 1 -R 1, the daemon stopped (SIGSTOP) while one connection sends
    800 incr of a counter and another a get of it, both ready when it goes
    on: the get must see the counter after at most 2 incr, in every round.
    The daemon used to run the whole pipeline first (the get saw 800).
    memcached, the same."""
    n = 800
    for name, starter in (("memcached", util.start_memcached), ("cached", util.start_cached)):
        proc, port = starter("-t", "1", "-R", "1")
        seen, yields0 = [], int(util.stats(port)["conn_yields"])
        for rnd in range(5):
            a = socket.create_connection(("127.0.0.1", port))
            b = socket.create_connection(("127.0.0.1", port))
            for s in (a, b):   # both connections set up in the daemon first
                s.sendall(b"version\r\n")
                s.recv(100)
            a.sendall(b"set ctr 0 0 1\r\n0\r\n")
            check(a.recv(100) == b"STORED\r\n", "%s: counter set" % name)
            stopped(proc)
            a.sendall(b"incr ctr 1 noreply\r\n" * n)
            b.sendall(b"get ctr\r\n")
            proc.send_signal(signal.SIGCONT)
            b.settimeout(5)
            got = b""
            while not got.endswith(b"END\r\n"):
                d = b.recv(100)
                if not d:
                    break
                got += d
            try:
                seen.append(int(got.split(b"\r\n")[1]))
            except (IndexError, ValueError):
                seen.append(-1)
            a.sendall(b"get ctr\r\n")
            a.settimeout(5)
            got = b""
            while not got.endswith(b"END\r\n"):
                d = a.recv(100)
                if not d:
                    break
                got += d
            check(got == b"VALUE ctr 0 %d\r\n%d\r\nEND\r\n" % (len(str(n)), n),
                  "%s: all %d incr ran: %r" % (name, n, got))
            a.close()
            b.close()
        check(all(0 <= v <= 2 for v in seen),
              "%s -R 1: the get ran after at most 2 of the %d incr of a pipeline ready with it: %r"
              % (name, n, seen))
        yields = int(util.stats(port)["conn_yields"]) - yields0
        check(yields >= 5 * (n // 2 - 1), "%s: conn_yields counts them: %d" % (name, yields))
        util.stop(proc)


PARTS = {
    "halfclose": halfclose,
    "yields": yields,
}


def main():
    names = sys.argv[1:] or list(PARTS)
    for name in names:
        PARTS[name]()
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
