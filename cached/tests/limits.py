#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Connections at the edges, against Debian's memcached where the behaviour
is memcached's: a client that half-closes after a pipeline gets every
answer, as does one that ends it with quit.  Run one part with its name as
the argument (limits.py halfclose)."""
import socket
import sys
import threading

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


PARTS = {
    "halfclose": halfclose,
}


def main():
    names = sys.argv[1:] or list(PARTS)
    for name in names:
        PARTS[name]()
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
