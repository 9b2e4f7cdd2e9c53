#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""--origin memcache:HOST:PORT against Debian's memcached as the upstream:
misses read through, sets write through before STORED, deletes forwarded;
a slow upstream does not block other clients of the same worker thread;
concurrent misses reach the upstream together (no Nagle delay);
a key whose bytes psi mode dropped comes back with the upstream's flags;
an unreachable upstream gives clean errors and the daemon lives."""
import os
import random
import socket
import sys
import tempfile
import threading
import time

import util

check = util.Checks("upstream")


def slow_upstream(delay):
    """A fake upstream that answers every get after `delay` seconds."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)

    def serve(conn):
        f = conn.makefile("rb")
        while True:
            line = f.readline()
            if not line:
                return
            if line.startswith(b"get ") or line.startswith(b"gets "):
                time.sleep(delay)
                key = line.split()[1]
                conn.sendall(b"VALUE " + key + b" 0 4 1\r\nslow\r\nEND\r\n")
            elif line.startswith(b"set "):
                f.read(int(line.split()[4]) + 2)
                conn.sendall(b"STORED\r\n")

    def loop():
        while True:
            c, _ = srv.accept()
            threading.Thread(target=serve, args=(c,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()
    return srv.getsockname()[1]


def timed_upstream(delay):
    """A fake upstream that notes when each request line arrives and
    answers each get `delay` seconds after it arrived, in order (a reader
    and a writer thread, so requests keep being read while replies wait).
    Returns (port, arrivals: list of (time, key))."""
    import queue
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    arrivals = []

    def serve(conn):
        f = conn.makefile("rb")
        q = queue.Queue()

        def writer():
            while True:
                t, key = q.get()
                if key is None:
                    return
                time.sleep(max(0.0, t + delay - time.time()))
                conn.sendall(b"VALUE " + key + b" 0 1 1\r\nv\r\nEND\r\n")
        threading.Thread(target=writer, daemon=True).start()
        while True:
            line = f.readline()
            if not line:
                q.put((0, None))
                return
            if line.startswith(b"get ") or line.startswith(b"gets "):
                key = line.split()[1]
                now = time.time()
                arrivals.append((now, key))
                q.put((now, key))

    def loop():
        while True:
            c, _ = srv.accept()
            threading.Thread(target=serve, args=(c,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()
    return srv.getsockname()[1], arrivals


def pipelined_fetches():
    """Misses of several clients close together reach the upstream together: the
    worker's upstream link must not hold a request back until the
    previous one is acknowledged (Nagle's algorithm, off with TCP_NODELAY
    as on the client side).  With it on, the second request of a burst
    waits for its first reply (the origin answers within its delayed-ACK
    time, 30 ms here, so its ACK rides on the reply), and every miss behind
    a miss pays an extra round trip."""
    uport, arrivals = timed_upstream(0.03)
    cd, cport = util.start_cached("-t", "1", "--origin", "memcache:127.0.0.1:%d" % uport)
    try:
        # many one-at-a-time round trips first: the link leaves its first
        # quick-ACK phase, as it has after a while of serving
        for i in range(40):
            util.command(cport, b"get warm%d\r\n" % i, timeout=5)
        lates, missing = [], 0
        for burst in range(3):
            socks = [socket.create_connection(("127.0.0.1", cport)) for _ in range(8)]
            del arrivals[:]
            sent = {}
            for i, s in enumerate(socks):     # 3 ms apart, while the first waits
                key = b"b%d.%d" % (burst, i)
                sent[key] = time.time()
                s.sendall(b"get " + key + b"\r\n")
                time.sleep(0.003)
            for s in socks:     # each answered (or given up after 5 s)
                s.settimeout(5)
                with s, s.makefile("rb") as f:
                    while f.readline() not in (b"END\r\n", b""):
                        pass
            got = dict((k, t) for t, k in arrivals)
            missing += sum(1 for k in sent if k not in got)
            # the first of a burst is never held back: the others tell
            lates += [got[k] - t for k, t in sent.items() if k in got and not k.endswith(b".0")]
        check(missing == 0, "every miss of 3 bursts reached the upstream (%d did not)" % missing)
        lates.sort()
        med = lates[len(lates) // 2] if lates else float("inf")
        check(med < 0.01, "misses 3 ms apart behind a waiting one reach the upstream %.1f ms "
              "after they were sent at the median, %.1f ms at most (median < 10 ms; Nagle: "
              "held until the first reply)" % (med * 1e3, (lates[-1] if lates else 0) * 1e3))
    finally:
        util.stop(cd)


def rebuilt_flags():
    """A key whose bytes were lost is read through again, and must come
    back with the flags the upstream holds for the bytes it serves, not
    the flags the cache had for its old bytes.  2,000 values of 16 KB are
    set through the cache (flags 5), then changed directly on the upstream
    (other bytes, flags 9); psi mode drops the cold part of the cache
    (through a meminfo file of the test's, as tests/psi.py).  Each get
    then answers the cache's old copy (flags 5, old bytes) or, for a
    dropped key, the upstream's (flags 9, new bytes), never a mix."""
    name = "rebuilt flags"
    if not os.path.exists("/proc/pressure/memory") or os.getuid() != 0:
        check(False, name + ": needs root and /proc/pressure/memory on the host")
        return
    n, size = 2000, 16000
    tmp = tempfile.mkdtemp()
    meminfo = os.path.join(tmp, "meminfo")
    util.fake_meminfo(meminfo, 900)
    up, uport = util.start_memcached("-m", "128")
    os.environ["CACHED_MEMINFO"] = meminfo
    try:
        cd, cport = util.start_cached("--mode", "psi", "-m", "32", "--psi-low", "100m",
                                      "--psi-high", "200m", "--psi-step", "4",
                                      "--psi-interval", "50",
                                      "--origin", "memcache:127.0.0.1:%d" % uport)
    finally:
        del os.environ["CACHED_MEMINFO"]
    try:
        old = [(b"old%d." % i) * (size // 8) for i in range(n)]
        new = [(b"new%d." % i) * (size // 8) for i in range(n)]
        out = util.command(cport, b"".join(b"set f:%d 5 0 %d\r\n%s\r\n" % (i, len(v), v)
                                           for i, v in enumerate(old)), timeout=20)
        check(out == b"STORED\r\n" * n, name + ": set through the cache: %r" % out[-60:])
        out = util.command(uport, b"".join(b"set f:%d 9 0 %d\r\n%s\r\n" % (i, len(v), v)
                                           for i, v in enumerate(new)), timeout=20)
        check(out == b"STORED\r\n" * n, name + ": changed on the upstream")
        # two steps of 4 MB reach the cap of 20% of -m 32
        util.fake_meminfo(meminfo, 50)
        util.wait_stats(cport, lambda s: int(s["psi_drops"]) >= 2, 10.0, 0.02)
        util.fake_meminfo(meminfo, 900)
        st = util.wait_stats(cport, lambda s: int(s["psi_advised_bytes"]) == 0, 10.0, 0.02)
        lost = int(st["lost_items"])
        check(lost > 50, name + ": keys lost to the drops: %d" % lost)
        # pipelined on one connection, sent from a thread while the
        # replies (32 MB) are read
        s = socket.create_connection(("127.0.0.1", cport))
        s.settimeout(20)
        f = s.makefile("rb")
        sender = threading.Thread(target=s.sendall, args=(
            b"".join(b"get f:%d\r\n" % i for i in range(n)),))
        sender.start()
        kinds = {"old": 0, "new": 0}
        bad = []
        for i in range(n):
            hdr = f.readline()
            p = hdr.split()
            if len(p) != 4 or p[0] != b"VALUE":
                bad.append((i, hdr))
                break
            data = f.read(int(p[3]) + 2)[:-2]
            if f.readline() != b"END\r\n":
                bad.append((i, hdr, b"no END"))
                break
            if (p[2], data) == (b"5", old[i]):
                kinds["old"] += 1
            elif (p[2], data) == (b"9", new[i]):
                kinds["new"] += 1
            else:
                bad.append((i, hdr, data[:12]))
        sender.join()
        s.close()
        check(not bad, name + ": replies that are neither the cached value nor the "
              "upstream's, with its flags: %d, e.g. %r" % (len(bad), bad[:3]))
        st = util.stats(cport)
        check(not bad and kinds["new"] == int(st["rebuilds"]) and kinds["new"] >= lost,
              name + ": the %d lost keys read through (%d upstream values, rebuilds %s)"
              % (lost, kinds["new"], st["rebuilds"]))
    finally:
        util.stop(cd)
        util.stop(up)
        os.unlink(meminfo)
        os.rmdir(tmp)


def ok(cond, what):
    check(cond, what)
    return cond


def gets_cas(port, key):
    """The cas unique a gets of key returns through port, or None."""
    out = util.command(port, b"gets " + key + b"\r\n")
    head = out.split(b"\r\n")[0].split()
    return int(head[4]) if len(head) == 5 and head[0] == b"VALUE" else None


def value(port, key):
    return util.command(port, b"get " + key + b"\r\n")


def cas_race(uport, aport, bport):
    """Both caches gets the key, both cas it (random order, text cas and
    ms C): exactly one wins, and the upstream and both caches agree."""
    rng = random.Random(26)
    for i in range(40):
        key = b"race%d" % i
        check(util.command(uport, b"set " + key + b" 0 0 4\r\nseed\r\n") == b"STORED\r\n", "seed " + key.decode())
        ports = [aport, bport]
        rng.shuffle(ports)
        cas = [gets_cas(p, key) for p in ports]
        if not ok(None not in cas, "%s: both caches read it %r" % (key, cas)):
            return
        res = []
        for n, (p, c) in enumerate(zip(ports, cas)):
            val = b"val%d" % n
            if rng.random() < 0.5:
                out = util.command(p, b"cas %s 0 0 %d %d\r\n%s\r\n" % (key, len(val), c, val))
                res.append(out == b"STORED\r\n")
                check(out in (b"STORED\r\n", b"EXISTS\r\n"), "%s: cas answer %r" % (key, out))
            else:
                out = util.command(p, b"ms %s %d C%d\r\n%s\r\n" % (key, len(val), c, val))
                res.append(out == b"HD\r\n")
                check(out in (b"HD\r\n", b"EX\r\n"), "%s: ms C answer %r" % (key, out))
        if not ok(res.count(True) == 1, "%s: exactly one cas wins %r" % (key, res)):
            return
        want = b"VALUE %s 0 4\r\nval%d\r\nEND\r\n" % (key, res.index(True))
        got = [value(p, key) for p in (uport, aport, bport)]
        if not ok(got == [want] * 3, "%s: upstream and caches agree %r" % (key, got)):
            return


def cas_direct_change(uport, cport):
    """A change made on the upstream between a gets and a cas fails the
    cas; a vanished key is NOT_FOUND; an unknown upstream cas is EXISTS."""
    check(util.command(uport, b"set d1 0 0 3\r\none\r\n") == b"STORED\r\n", "seed d1")
    c = gets_cas(cport, b"d1")
    check(util.command(uport, b"set d1 0 0 3\r\ntwo\r\n") == b"STORED\r\n", "d1 changed upstream")
    out = util.command(cport, b"cas d1 0 0 5 %d\r\nthree\r\n" % c)
    check(out == b"EXISTS\r\n", "cas after an upstream change: EXISTS (%r)" % out)
    check(value(uport, b"d1") == b"VALUE d1 0 3\r\ntwo\r\nEND\r\n", "upstream keeps its change")
    check(value(cport, b"d1") == b"VALUE d1 0 3\r\ntwo\r\nEND\r\n", "cache dropped its copy and refetched")
    c = gets_cas(cport, b"d1")
    out = util.command(cport, b"cas d1 0 0 5 %d\r\nthree\r\n" % c)
    check(out == b"STORED\r\n", "cas after the refetch: STORED (%r)" % out)
    check(value(uport, b"d1") == b"VALUE d1 0 5\r\nthree\r\nEND\r\n", "upstream has the cas")
    # the same through ms C
    check(util.command(uport, b"set d2 0 0 3\r\none\r\n") == b"STORED\r\n", "seed d2")
    c = gets_cas(cport, b"d2")
    check(util.command(uport, b"append d2 0 0 1\r\n!\r\n") == b"STORED\r\n", "d2 changed upstream")
    out = util.command(cport, b"ms d2 1 C%d Oab\r\nx\r\n" % c)
    check(out == b"EX Oab\r\n", "ms C after an upstream change: EX (%r)" % out)
    check(value(cport, b"d2") == b"VALUE d2 0 4\r\none!\r\nEND\r\n", "ms C: cache refetched")
    # the key vanished upstream: NOT_FOUND, and the local copy goes too
    check(util.command(uport, b"set d3 0 0 3\r\none\r\n") == b"STORED\r\n", "seed d3")
    c = gets_cas(cport, b"d3")
    check(util.command(uport, b"delete d3\r\n") == b"DELETED\r\n", "d3 deleted upstream")
    out = util.command(cport, b"cas d3 0 0 1 %d\r\nx\r\n" % c)
    check(out == b"NOT_FOUND\r\n", "cas of a key gone upstream: NOT_FOUND (%r)" % out)
    check(value(cport, b"d3") == b"END\r\n" and value(uport, b"d3") == b"END\r\n", "d3 gone everywhere")
    # written through, then changed upstream: the cas learnt after the
    # write is stale, the cas fails, and a refetch makes it succeed
    check(util.command(cport, b"set d4 0 0 3\r\none\r\n") == b"STORED\r\n", "set d4 through")
    c = gets_cas(cport, b"d4")
    check(util.command(uport, b"set d4 0 0 3\r\nups\r\n") == b"STORED\r\n", "d4 changed upstream")
    out = util.command(cport, b"cas d4 0 0 3 %d\r\ntwo\r\n" % c)
    check(out == b"EXISTS\r\n", "cas of a written-through value changed upstream: EXISTS (%r)" % out)
    check(value(uport, b"d4") == b"VALUE d4 0 3\r\nups\r\nEND\r\n", "upstream keeps its change")
    c = gets_cas(cport, b"d4")
    out = util.command(cport, b"cas d4 0 0 3 %d\r\ntwo\r\n" % c)
    check(out == b"STORED\r\n", "cas after the refetch: STORED (%r)" % out)
    check(value(uport, b"d4") == b"VALUE d4 0 3\r\ntwo\r\nEND\r\n", "upstream has it")


def mg_cas(port, key):
    """The cas unique an mg ... c of key returns through port, or None."""
    head = util.command(port, b"mg " + key + b" c v\r\n").split(b"\r\n")[0].split()
    return int(head[2][1:]) if len(head) == 3 and head[0] == b"VA" else None


def cas_after_write(uport, cport):
    """A write through the cache is followed by the origin's cas of it, so
    set, gets, cas (and ms, mg c, ms C, and every other write) answers
    STORED on the first try and the upstream holds the new value."""
    check(util.command(cport, b"set w 5 0 3\r\none\r\n") == b"STORED\r\n", "set w")
    c = gets_cas(cport, b"w")
    out = util.command(cport, b"cas w 5 0 3 %d\r\ntwo\r\n" % c)
    check(out == b"STORED\r\n", "set, gets, cas: STORED (%r)" % out)
    check(value(uport, b"w") == b"VALUE w 5 3\r\ntwo\r\nEND\r\n", "upstream has the cas")
    check(util.command(cport, b"ms mw 3 F9\r\none\r\n") == b"HD\r\n", "ms mw")
    c = mg_cas(cport, b"mw")
    out = util.command(cport, b"ms mw 3 F9 C%d\r\ntwo\r\n" % (c or 0))
    check(out == b"HD\r\n", "ms, mg c, ms C: HD (%r)" % out)
    check(value(uport, b"mw") == b"VALUE mw 9 3\r\ntwo\r\nEND\r\n", "upstream has the ms C")
    # a cas loop: every round's gets and cas succeed on the first try
    check(util.command(cport, b"set loop 0 0 1\r\n0\r\n") == b"STORED\r\n", "set loop")
    wins = 0
    for i in range(1, 21):
        c = gets_cas(cport, b"loop")
        val = b"%d" % i
        out = util.command(cport, b"cas loop 0 0 %d %d\r\n%s\r\n" % (len(val), c, val))
        wins += out == b"STORED\r\n"
    check(wins == 20, "cas loop: %d of 20 rounds won on the first try" % wins)
    check(value(uport, b"loop") == b"VALUE loop 0 2\r\n20\r\nEND\r\n", "upstream has the last round")
    # every kind of write, text and meta, then a cas: STORED on the first try
    rng = random.Random(2626)
    writes = [b"set %s 1 0 2\r\nab\r\n", b"add %s 1 0 2\r\nab\r\n", b"replace %s 2 0 2\r\ncd\r\n",
              b"append %s 0 0 1\r\n+\r\n", b"prepend %s 0 0 1\r\n-\r\n", b"ms %s 2 F3\r\nef\r\n",
              b"ms %s 1 MA\r\n!\r\n", b"ms %s 2 ME F4\r\ngh\r\n"]
    for i in range(40):
        key = b"kw%d" % (i % 8)
        w = rng.choice(writes)
        util.command(cport, w.replace(b"%s", key))
        c = gets_cas(cport, key)
        if c is None:
            continue
        val = b"v%d" % i
        if rng.random() < 0.5:
            out = util.command(cport, b"cas %s 7 0 %d %d\r\n%s\r\n" % (key, len(val), c, val))
            check(out == b"STORED\r\n", "%r then cas: STORED (%r)" % (w.split()[0], out))
        else:
            out = util.command(cport, b"ms %s %d F7 C%d\r\n%s\r\n" % (key, len(val), c, val))
            check(out == b"HD\r\n", "%r then ms C: HD (%r)" % (w.split()[0], out))
        want = b"VALUE %s 7 %d\r\n%s\r\nEND\r\n" % (key, len(val), val)
        check(value(uport, key) == want and value(cport, key) == want, "%s: upstream and cache agree" % key.decode())
    # a write on the other cache after this one's: this one's cas still fails
    check(util.command(cport, b"set w2 0 0 1\r\na\r\n") == b"STORED\r\n", "set w2")
    c = gets_cas(cport, b"w2")
    check(util.command(uport, b"set w2 0 0 1\r\nb\r\n") == b"STORED\r\n", "w2 changed upstream")
    out = util.command(cport, b"cas w2 0 0 1 %d\r\nc\r\n" % c)
    check(out == b"EXISTS\r\n", "cas after another write: EXISTS (%r)" % out)
    check(value(cport, b"w2") == b"VALUE w2 0 1\r\nb\r\nEND\r\n", "w2 refetched")


def main():
    up, uport = util.start_memcached()
    cd, cport = util.start_cached("--origin", "memcache:127.0.0.1:%d" % uport)
    try:
        check(util.command(uport, b"set up1 7 0 5\r\nhello\r\n") == b"STORED\r\n", "seed upstream")
        check(util.command(cport, b"get up1\r\n") == b"VALUE up1 7 5\r\nhello\r\nEND\r\n", "read-through")
        check(util.command(cport, b"get nothere up1\r\n") == b"VALUE up1 7 5\r\nhello\r\nEND\r\n", "miss + hit")
        check(util.stats(cport)["origin_fetches"] == "1", "one fetch, then cached")
        check(util.command(cport, b"set w1 3 0 2\r\nhi\r\n") == b"STORED\r\n", "write-through set")
        check(util.command(uport, b"get w1\r\n") == b"VALUE w1 3 2\r\nhi\r\nEND\r\n", "upstream has the set")
        check(util.command(cport, b"append w1 0 0 1\r\n!\r\nget w1\r\n") == b"STORED\r\nVALUE w1 3 3\r\nhi!\r\nEND\r\n", "append")
        check(util.command(uport, b"get w1\r\n") == b"VALUE w1 3 3\r\nhi!\r\nEND\r\n", "upstream has the append")
        check(util.command(cport, b"set n1 0 0 1 noreply\r\nx\r\nget n1\r\n") == b"VALUE n1 0 1\r\nx\r\nEND\r\n", "noreply set")
        check(util.command(cport, b"delete w1\r\n") == b"DELETED\r\n", "delete")
        time.sleep(0.1)
        check(util.command(uport, b"get w1\r\n") == b"END\r\n", "delete forwarded")
        # a delete reaches the origin also for a key the cache does not hold
        check(util.command(uport, b"set only_up 0 0 1\r\nu\r\n") == b"STORED\r\n", "seed only_up")
        check(util.command(cport, b"delete only_up\r\n") == b"NOT_FOUND\r\n", "delete of a key not cached")
        time.sleep(0.1)
        check(util.command(uport, b"get only_up\r\n") == b"END\r\n", "delete forwarded for a key not cached")
        # add keeps its meaning upstream: the origin's key wins, nothing kept locally
        check(util.command(uport, b"set a1 5 0 3\r\nold\r\n") == b"STORED\r\n", "seed a1")
        check(util.command(cport, b"add a1 0 0 3\r\nnew\r\n") == b"NOT_STORED\r\n", "add of a key the origin has: NOT_STORED")
        check(util.command(uport, b"get a1\r\n") == b"VALUE a1 5 3\r\nold\r\nEND\r\n", "origin keeps its value")
        check(util.command(cport, b"get a1\r\n") == b"VALUE a1 5 3\r\nold\r\nEND\r\n", "add rolled back locally; read-through")
        # replace keeps its meaning upstream; a refused write is rolled back
        check(util.command(cport, b"set r1 0 0 1\r\nx\r\n") == b"STORED\r\n", "set r1")
        check(util.command(uport, b"delete r1\r\n") == b"DELETED\r\n", "r1 gone from the origin")
        check(util.command(cport, b"replace r1 0 0 1\r\ny\r\n") == b"NOT_STORED\r\n", "replace of a key the origin lacks: NOT_STORED")
        check(util.command(uport, b"get r1\r\n") == b"END\r\n", "origin did not get it")
        check(util.command(cport, b"get r1\r\n") == b"END\r\n", "replace rolled back locally")
        # ms modes keep their meaning upstream too; a refusal is NS with the return flags
        check(util.command(uport, b"set ma1 5 0 3\r\nold\r\n") == b"STORED\r\n", "seed ma1")
        check(util.command(cport, b"ms ma1 3 ME Oq1 k\r\nnew\r\n") == b"NS Oq1 kma1\r\n", "ms ME of a key the origin has: NS")
        check(util.command(uport, b"get ma1\r\n") == b"VALUE ma1 5 3\r\nold\r\nEND\r\n", "origin keeps its value (ms ME)")
        check(util.command(cport, b"ms mr1 1 MR\r\ny\r\n") == b"NS\r\n", "ms MR of a key nobody has: NS")
        check(util.command(cport, b"ms ms1 2 Oq2\r\nhi\r\n") == b"HD Oq2\r\n", "ms through the origin: HD")
        check(util.command(uport, b"get ms1\r\n") == b"VALUE ms1 0 2\r\nhi\r\nEND\r\n", "upstream has the ms")
        many = b"".join(b"set m%d 0 0 3\r\nabc\r\n" % i for i in range(200))
        check(util.command(cport, many) == b"STORED\r\n" * 200, "200 pipelined write-through sets")
        check(util.command(cport, b"gets up1\r\n").startswith(b"VALUE up1 7 5 "), "gets")
    finally:
        util.stop(cd)
        util.stop(up)

    # cas keeps its meaning upstream: two caches in front of one memcached
    up, uport = util.start_memcached()
    ca, aport = util.start_cached("--origin", "memcache:127.0.0.1:%d" % uport)
    cb, bport = util.start_cached("--origin", "memcache:127.0.0.1:%d" % uport)
    try:
        cas_race(uport, aport, bport)
        cas_direct_change(uport, aport)
        cas_after_write(uport, bport)
    finally:
        util.stop(ca)
        util.stop(cb)
        util.stop(up)

    # a slow upstream blocks only the client waiting on it
    sport = slow_upstream(1.0)
    cd, cport = util.start_cached("-t", "1", "--origin", "memcache:127.0.0.1:%d" % sport)
    try:
        check(util.command(cport, b"set local 0 0 2\r\nok\r\n") == b"STORED\r\n", "set via fake upstream")
        res = {}

        def slow_get():
            t = time.time()
            res["slow"] = util.command(cport, b"get far\r\n", timeout=5)
            res["slow_t"] = time.time() - t
        th = threading.Thread(target=slow_get)
        th.start()
        time.sleep(0.2)
        t = time.time()
        fast = util.command(cport, b"version\r\n")
        fast_t = time.time() - t
        th.join()
        check(fast.startswith(b"VERSION") and fast_t < 0.5, "other client served during a slow fetch (%.2fs)" % fast_t)
        check(res["slow"] == b"VALUE far 0 4\r\nslow\r\nEND\r\n" and res["slow_t"] >= 0.9, "slow fetch answered %r" % res)
    finally:
        util.stop(cd)

    pipelined_fetches()
    rebuilt_flags()

    # unreachable upstream: misses are misses, sets report the failure.
    # The port is held by a socket that is bound but does not listen, so
    # connections to it are refused and the daemon, which picks its own
    # port after it, cannot get the same one and be its own upstream.
    hold = socket.socket()
    hold.bind(("127.0.0.1", 0))
    cd, cport = util.start_cached("--origin", "memcache:127.0.0.1:%d" % hold.getsockname()[1])
    try:
        check(cport != hold.getsockname()[1], "the daemon's port is not the upstream's")
        check(util.command(cport, b"get x\r\n") == b"END\r\n", "unreachable upstream: miss")
        out = util.command(cport, b"set x 0 0 1\r\nx\r\n")
        check(out == b"SERVER_ERROR origin write failed\r\n", "unreachable upstream: set error %r" % out)
        check(int(util.stats(cport)["origin_errors"]) >= 2, "origin_errors counted")
        check(cd.poll() is None, "daemon lives")
    finally:
        util.stop(cd)
        hold.close()
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
