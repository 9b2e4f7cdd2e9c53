#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Connections at the edges, against Debian's memcached where the behaviour
is memcached's: a client that half-closes after a pipeline gets every
answer, as does one that ends it with quit.  Run one part with its name as
the argument (limits.py halfclose)."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
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


def inputlimit():
    """--input-limit: a connection holding more input than this without a
    complete command gets memcached's error for a request it cannot hold
    and is closed (input_limit_closes); a multi-get line within it is
    answered, as memcached answers any: a line of 2.25 MB sent in pieces,
    by default, gets memcached's reply.  It used to close the connection
    once it held 1 MiB of the line."""
    keys = b" ".join(b"k%07d" % i for i in range(250000))   # 2.25 MB
    for name, starter in (("memcached", util.start_memcached), ("cached", util.start_cached)):
        proc, port = starter()
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"set k0000001 0 0 2\r\nhi\r\n")
        data = b"get " + keys + b"\r\nget k0000001\r\n"
        for i in range(0, len(data), 32768):   # the line arrives in pieces
            try:
                s.sendall(data[i:i + 32768])
            except OSError:
                break
            time.sleep(0.002)
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        got = read_all(s, 5)
        s.close()
        hit = b"VALUE k0000001 0 2\r\nhi\r\nEND\r\n"
        check(got == b"STORED\r\n" + hit + hit, "%s: a multi-get line of 2.25 MB: %r" % (name, got[:80]))
        util.stop(proc)
    proc, port = util.start_cached("--input-limit", "2m")
    check(util.stats(port, "settings").get("input_limit") == str(2 << 20),
          "stats settings input_limit: %r" % util.stats(port, "settings").get("input_limit"))
    keys = b" ".join(b"k%07d" % i for i in range(150000))   # 1.35 MB
    got = util.command(port, b"set k0000001 0 0 2\r\nhi\r\nget " + keys + b"\r\nversion\r\n", timeout=5)
    check(got.startswith(b"STORED\r\nVALUE k0000001 0 2\r\nhi\r\nEND\r\nVERSION "),
          "a multi-get line of 1.35 MB within the limit is answered: %r" % got[:80])
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"set k 0 0 1\r\nx\r\n")
    keys = b" ".join(b"k%07d" % i for i in range(250000))   # 2.25 MB, no end
    try:
        s.sendall(b"get " + keys)
    except OSError:
        pass
    got = read_all(s, 5)
    s.close()
    check(got == b"STORED\r\nSERVER_ERROR out of memory reading request\r\n",
          "a 2.25 MB multi-get line past --input-limit 2m: %r" % got[:120])
    st = util.stats(port)
    check(st.get("input_limit_closes") == "1", "input_limit_closes: %r" % st.get("input_limit_closes"))
    check(util.command(port, b"get k\r\n") == b"VALUE k 0 1\r\nx\r\nEND\r\n", "others served")
    util.stop(proc)


def unixpath():
    """-s PATH replaces a socket left there, never anything else: with a
    regular file at PATH the server refuses to start and the file stays,
    as with memcached.  The daemon used to unlink whatever was there."""
    d = tempfile.mkdtemp()
    try:
        for name, argv in (("memcached", ["memcached", "-u", "root", "-U", "0"]),
                           ("cached", [util.CACHED, "-u", "root"])):
            path = os.path.join(d, "sock")
            with open(path, "w") as f:
                f.write("precious")
            p = subprocess.Popen(argv + ["-s", path], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE)
            try:
                rc = p.wait(5)
            except subprocess.TimeoutExpired:
                rc = None
                util.stop(p)
            kept = open(path).read() if os.path.isfile(path) else None
            check(rc not in (None, 0) and kept == "precious",
                  "%s -s over a regular file: exit %s, the file %r" % (name, rc, kept))
            os.unlink(path) if os.path.lexists(path) else None
            # a socket left behind is replaced
            old = socket.socket(socket.AF_UNIX)
            old.bind(path)
            old.close()
            p = subprocess.Popen(argv + ["-s", path], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            ok = False
            for _ in range(250):
                try:
                    c = socket.socket(socket.AF_UNIX)
                    c.connect(path)
                    c.sendall(b"version\r\n")
                    ok = c.recv(100).startswith(b"VERSION")
                    c.close()
                    break
                except OSError:
                    time.sleep(0.02)
            check(ok, "%s -s over a stale socket serves" % name)
            util.stop(p)
            if os.path.lexists(path):
                os.unlink(path)
    finally:
        shutil.rmtree(d)


def dirsymlink():
    """dir: origin: no symlink is followed on the way to a file, not even a
    directory's inside the root (it could point out of it).  The daemon
    used to refuse a symlink only as the last component, so a symlinked
    directory led out of the root."""
    d = tempfile.mkdtemp()
    try:
        root, out = os.path.join(d, "root"), os.path.join(d, "out")
        os.makedirs(os.path.join(root, "sub"))
        os.mkdir(out)
        with open(os.path.join(root, "sub", "f.txt"), "w") as f:
            f.write("file-body")
        with open(os.path.join(out, "secret"), "w") as f:
            f.write("secret")
        os.symlink(out, os.path.join(root, "ln"))
        os.symlink("sub", os.path.join(root, "inner"))
        os.symlink("sub/f.txt", os.path.join(root, "lf"))
        for threads in ("4", "0"):
            proc, port = util.start_cached("--origin", "dir:" + root, "--fetch-threads", threads)
            got = util.command(port, b"get sub/f.txt\r\n")
            check(got == b"VALUE sub/f.txt 0 9\r\nfile-body\r\nEND\r\n",
                  "dir origin serves a file in a directory: %r" % got)
            for k in (b"ln/secret", b"inner/f.txt", b"lf"):
                got = util.command(port, b"get " + k + b"\r\n")
                check(got == b"END\r\n", "--fetch-threads %s: dir origin refuses %r: %r" % (threads, k, got))
            util.stop(proc)
    finally:
        shutil.rmtree(d)


def curritems():
    """curr_items counts the items a get could return, as memcached's:
    not the keys whose bytes were lost (lost_items).  psi mode gives back
    the coldest part of a full cache (through a meminfo file of the
    test's); then curr_items must be the number of keys a get finds, before
    and after the gets.  It used to count the lost keys too."""
    mcclient = os.path.join(util.HERE, "mcclient")
    d = tempfile.mkdtemp()
    meminfo = os.path.join(d, "meminfo")
    util.fake_meminfo(meminfo, 900)
    os.environ["CACHED_MEMINFO"] = meminfo
    try:
        proc, port = util.start_cached("--mode", "psi", "-m", "64", "--psi-low", "100m",
                                       "--psi-high", "200m", "--psi-step", "4",
                                       "--psi-interval", "50")
        del os.environ["CACHED_MEMINFO"]
        n = 4000
        check(util.stats(port)["mode"] == "psi", "psi mode: %s" % util.stats(port)["mode"])
        r = subprocess.run([mcclient, "-p", str(port), "-g", "size=16000,seed=3", "fill", str(n)],
                           capture_output=True, timeout=120)
        check(r.returncode == 0, "fill: %r" % r.stdout)
        util.fake_meminfo(meminfo, 50)
        st = util.wait_stats(port, lambda s: int(s["lost_items"]) > 0 and int(s["psi_advised_bytes"]) >= 8 << 20)
        util.fake_meminfo(meminfo, 150)   # inside the band: nothing moves
        time.sleep(0.2)
        st = util.stats(port)
        lost, curr = int(st["lost_items"]), int(st["curr_items"])
        r = subprocess.run([mcclient, "-p", str(port), "-g", "size=16000,seed=3", "-s", "verify", str(n)],
                           capture_output=True, timeout=120)
        out = r.stdout.decode()
        miss = int(out.split("miss=")[1].split()[0]) if "miss=" in out else -1
        check("bad=0" in out and lost > 0 and miss == lost,
              "the lost keys miss: %d lost, %s" % (lost, out.strip()))
        check(curr == n - miss, "curr_items %d with %d lost: a get finds %d" % (curr, lost, n - miss))
        st = util.stats(port)
        check(int(st["curr_items"]) == n - miss and st["lost_items"] == "0",
              "after the gets: curr_items %s, lost_items %s" % (st["curr_items"], st["lost_items"]))
        util.stop(proc)
    finally:
        os.environ.pop("CACHED_MEMINFO", None)
        shutil.rmtree(d)


def idletimeout():
    """memcached's idle_timeout (-o idle_timeout=N; cached --idle-timeout N):
    a connection waiting for a command more than N seconds is closed and
    counted in idle_kicks; one that sends a command every half second is
    not, nor one whose replies wait for it to read."""
    for name, starter, opt in (("memcached", util.start_memcached, ["-o", "idle_timeout=2"]),
                               ("cached", util.start_cached, ["--idle-timeout", "2"])):
        proc, port = starter(*opt)
        ss = util.stats(port, "settings")
        check(ss.get("idle_timeout") == "2", "%s: stats settings idle_timeout %r" % (name, ss.get("idle_timeout")))
        big = b"b" * 500000
        util.command(port, b"set big 0 0 %d\r\n%s\r\n" % (len(big), big))
        time.sleep(0.5)   # the probes' connections are gone
        kicks0 = int(util.stats(port).get("idle_kicks", "-1"))
        idle = socket.create_connection(("127.0.0.1", port))
        busy = socket.create_connection(("127.0.0.1", port))
        hog = socket.socket()
        hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        hog.connect(("127.0.0.1", port))
        hog.setblocking(False)
        try:
            for _ in range(10):
                hog.send(b"get big big big big\r\n")
        except BlockingIOError:
            pass
        idle.sendall(b"version\r\n")
        idle.recv(100)
        t0 = time.time()
        busy_ok = True
        idle.setblocking(False)
        closed_at = None
        while time.time() - t0 < 5.5:
            busy.sendall(b"version\r\n")
            busy.settimeout(2)
            busy_ok = busy_ok and busy.recv(100).startswith(b"VERSION")
            if closed_at is None:
                try:
                    if idle.recv(100) == b"":
                        closed_at = time.time() - t0
                except BlockingIOError:
                    pass
            time.sleep(0.5)
        check(closed_at is not None and closed_at >= 2.0,
              "%s: the idle connection closed after %s s" % (name, closed_at))
        check(busy_ok, "%s: a connection with a command every 0.5 s is served throughout" % name)
        st = util.stats(port)
        check(int(st.get("idle_kicks", "-1")) - kicks0 == 1,
              "%s: idle_kicks %s -> %s (the hog, whose replies wait, is no idle connection)"
              % (name, kicks0, st.get("idle_kicks")))
        for s in (idle, busy, hog):
            s.close()
        util.stop(proc)
    proc, port = util.start_cached()
    check("idle_kicks" not in util.stats(port) and util.stats(port, "settings").get("idle_timeout") == "0",
          "cached without --idle-timeout: idle_timeout 0, no idle_kicks, as memcached")
    util.stop(proc)


def rss_kb(pid, field):
    for line in open("/proc/%d/status" % pid):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return -1


def slowreader():
    """A client that asks for values of 4 KB spread over every segment and
    never reads must not make the cache refuse or drop other clients' sets
    (issue #41).  With -m 16, 5,000 values of 4,000 bytes are set (more than
    fit), then a connection whose receive buffer is 4 KiB pipelines 8 gets
    of every tenth key (about 1.5 MB each, past the 4 MB the kernel's send
    buffer takes) and stops reading; a second connection then sets 3,000
    new keys of the same size: all must be STORED and nearly all still
    there after, as memcached, which evicts the rest and keeps only the
    items the reader holds.  The memfd (RssShmem) must stay within -m.
    Then the reader reads: 8 answers, every value with its own bytes (keys
    evicted before their get was parsed miss).  Each zero-copy reply used
    to pin its whole segment: with the segments of a full cache pinned,
    eviction forgot items without freeing one, and every set failed with
    SERVER_ERROR out of memory.

    Then the same with large objects of 300,000 bytes (their own slots,
    sent from the memfd): 60 set, 4 gets of every third, 40 new keys set.
    The slots a reply points at leave the budget when their key is
    evicted (reply_held_bytes), so RssShmem may pass -m by those."""
    slow_reader_run(5000, 4000, 10, 8, 3000)
    slow_reader_run(60, 300000, 3, 4, 40)


def slow_reader_run(n, size, every, rounds, fresh):

    def value(prefix, i):
        return (b"%s%07d;" % (prefix, i) * (size // 9 + 1))[:size]

    kept = {}
    print("values of %d bytes" % size)
    for name, starter in (("memcached", util.start_memcached), ("cached", util.start_cached)):
        proc, port = starter("-m", "16")
        w = socket.create_connection(("127.0.0.1", port))
        w.settimeout(20)

        def set_many(prefix, count):
            replies = []
            for lo in range(0, count, 100):
                hi = min(count, lo + 100)
                w.sendall(b"".join(b"set %s%d 0 0 %d\r\n%s\r\n" % (prefix, i, size, value(prefix, i))
                                   for i in range(lo, hi)))
                buf = b""
                while buf.count(b"\r\n") < hi - lo:
                    d = w.recv(65536)
                    if not d:
                        break
                    buf += d
                replies += buf.split(b"\r\n")[:-1]
            return replies

        first = set_many(b"a", n)
        check(first.count(b"STORED") == n, "%s: the first %d sets: %d STORED"
              % (name, n, first.count(b"STORED")))
        wanted = list(range(0, n, every))
        reader = socket.socket()
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        reader.connect(("127.0.0.1", port))
        reader.sendall((b"get " + b" ".join(b"a%d" % i for i in wanted) + b"\r\n") * rounds)
        # the replies are built and queued, mostly unsent; and the new keys
        # come a second later, so that the keys read are older to the LRU
        time.sleep(1.1)
        second = set_many(b"b", fresh)
        stored = second.count(b"STORED")
        shmem = rss_kb(proc.pid, "RssShmem")
        hits = 0
        for lo in range(0, fresh, 100):
            got = util.command(port, b"get " + b" ".join(b"b%d" % i for i in range(lo, lo + 100)) + b"\r\n",
                               timeout=10)
            hits += got.count(b"VALUE ")
        kept[name] = hits
        print("%s: %d of %d sets STORED beside the non-reader (others: %r), %d of them kept, "
              "RssShmem %d kB, VmRSS %d kB"
              % (name, stored, fresh, sorted(set(r for r in second if r != b"STORED"))[:3], hits,
                 shmem, rss_kb(proc.pid, "VmRSS")))
        check(stored == fresh, "%s: %d of %d sets beside a non-reading client STORED"
              % (name, stored, fresh))
        if name == "cached":
            held = int(util.stats(port).get("reply_held_bytes", "0"))
            print("cached: reply_held_bytes %d" % held)
            check(shmem <= (17 << 10) + held // 1024,
                  "cached: the memfd within -m 16 and reply_held_bytes %d: RssShmem %d kB" % (held, shmem))
            check(hits >= kept["memcached"] * 9 // 10,
                  "cached kept %d of the %d new keys, memcached %d" % (hits, fresh, kept["memcached"]))
        got = util.recv_until(reader, 20, lambda got: got.endswith(b"END\r\n") and got.count(b"END\r\n") >= rounds)
        # every answer: values of the keys asked for, in order, each its own bytes
        answers, bad, values = got.split(b"END\r\n")[:-1], [], 0
        for a in answers:
            pos, k = 0, 0
            while pos < len(a):
                hdr, _, rest = a[pos:].partition(b"\r\n")
                p = hdr.split()
                if len(p) != 4 or p[0] != b"VALUE" or not p[1].startswith(b"a"):
                    bad.append(hdr[:40])
                    break
                i = int(p[1][1:])
                while k < len(wanted) and wanted[k] != i:
                    k += 1
                data = rest[:int(p[3]) + 2]
                if k == len(wanted) or data != value(b"a", i) + b"\r\n":
                    bad.append((p[1], data[:20]))
                values += 1
                pos += len(hdr) + 2 + int(p[3]) + 2
        check(len(answers) == rounds and not bad and values >= len(wanted) // 2,
              "%s: the non-reader read %d answers of %d, %d values, wrong: %r"
              % (name, len(answers), rounds, values, bad[:3]))
        check(proc.poll() is None, "%s alive" % name)
        reader.close()
        w.close()
        util.stop(proc)


PARTS = {
    "halfclose": halfclose,
    "yields": yields,
    "inputlimit": inputlimit,
    "unixpath": unixpath,
    "dirsymlink": dirsymlink,
    "curritems": curritems,
    "idletimeout": idletimeout,
    "slowreader": slowreader,
}


def main():
    names = sys.argv[1:] or list(PARTS)
    for name in names:
        PARTS[name]()
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
