#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""The daemon under ThreadSanitizer (build-tsan/cached, `make tsan`): four
workers and the main thread, with many client connections mixing gets,
gats, sets, deletes, touches, incr, multi-gets and meta commands, one connection
scraping stats, stats items, stats slabs, stats cachedump and metadump in a
loop, and the main thread's own work at random moments: the clock tick
(idle segments marked and taken back in madvfree mode), cache_memlimit
changes, flush_all, and in psi mode drops of the coldest data driven by a
meminfo file of the test's (CACHED_MEMINFO) that swings below and above the
band; and once with a slow gen origin (2 ms a fetch), so that misses and
rebuilds wait in the fetch pool (fetch.c) while ticks mark idle data.  Passes when every run ends with no ThreadSanitizer report and no
verify error, and the clients got their replies.

usage: tsan.py [SECONDS_PER_RUN]   (default 12)"""
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time

import util

check = util.Checks("tsan")
TSAN_BIN = os.environ.get("CACHED_TSAN_BIN", os.path.join(util.HERE, "..", "build-tsan", "cached"))


def client(port, seed, stop, counts):
    rnd = random.Random(seed)
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(20)
    f = s.makefile("rb")
    done = 0
    try:
        while not stop.is_set():
            batch = []
            for _ in range(rnd.randrange(1, 20)):
                k = b"k%d" % rnd.randrange(3000)
                c = rnd.random()
                if c < 0.28:
                    batch.append(b"get " + k + b"\r\n")
                elif c < 0.35:
                    # gat, gats: under the shared lock, as gets are
                    batch.append(b"%s %d %s\r\n" % (rnd.choice([b"gat", b"gats"]),
                                                     rnd.choice([0, 3, 100]), k))
                elif c < 0.6:
                    n = rnd.choice([10, 300, 4000, 60000])
                    batch.append(b"set %s 0 %d %d noreply\r\n%s\r\n" % (k, rnd.choice([0, 0, 2]), n, os.urandom(n)))
                elif c < 0.65:
                    batch.append(b"delete " + k + b" noreply\r\n")
                elif c < 0.7:
                    batch.append(b"touch %s 5 noreply\r\n" % k)
                elif c < 0.75:
                    batch.append(b"incr n%d 1 noreply\r\n" % rnd.randrange(50))
                elif c < 0.8:
                    batch.append(b"set n%d 0 0 1 noreply\r\n1\r\n" % rnd.randrange(50))
                elif c < 0.87:
                    batch.append(b"get " + b" ".join(b"k%d" % rnd.randrange(3000) for _ in range(10)) + b"\r\n")
                elif c < 0.93:
                    batch.append(b"mg " + k + b" v c t s N30\r\n")
                elif c < 0.97:
                    batch.append(b"ms %s 5 T0 q\r\nhello\r\n" % k)
                else:
                    batch.append(b"md " + k + b" q\r\n")
            batch.append(b"mn\r\n")
            s.sendall(b"".join(batch))
            while True:
                line = f.readline()
                if not line:
                    raise ConnectionError("closed")
                if line == b"MN\r\n":
                    break
                if line.startswith(b"VALUE ") or line.startswith(b"VA "):
                    n = int(line.split()[3] if line.startswith(b"VALUE ") else line.split()[1])
                    f.read(n + 2)
            done += 1
    except (OSError, ValueError, ConnectionError) as e:
        counts.append("client %d: %s" % (seed, e))
        return
    finally:
        s.close()
    counts.append(done)


def scraper(port, stop, counts):
    cmds = [b"stats\r\n", b"stats items\r\n", b"stats slabs\r\n", b"stats settings\r\n",
            b"stats cachedump 1 100\r\n", b"stats cachedump 5 0\r\n", b"lru_crawler metadump all\r\n"]
    n = 0
    while not stop.is_set():
        for c in cmds:
            try:
                util.command(port, c, timeout=10)
            except OSError as e:
                counts.append("scraper: %s" % e)
                return
            n += 1
    counts.append(n)


def operator(port, meminfo, stop, seed):
    rnd = random.Random(seed)
    while not stop.is_set():
        c = rnd.random()
        if meminfo and c < 0.5:
            free = rnd.choice([20, 50, 150, 500, 900])
            with open(meminfo + ".new", "w") as f:
                f.write("MemTotal: 1048576 kB\nMemAvailable: %d kB\n" % (free * 1024))
            os.rename(meminfo + ".new", meminfo)
        elif c < 0.8:
            util.command(port, b"cache_memlimit %d\r\n" % rnd.choice([32, 48, 64]))
        elif c < 0.85:
            util.command(port, b"flush_all\r\n")
        time.sleep(rnd.uniform(0.05, 0.3))


def run(name, args, seconds, meminfo=None):
    port = util.free_port()
    env = dict(os.environ)
    env["TSAN_OPTIONS"] = "halt_on_error=0 exitcode=66 report_signal_unsafe=0 history_size=4"
    if meminfo:
        env["CACHED_MEMINFO"] = meminfo
    proc = subprocess.Popen([TSAN_BIN, "-u", "root", "-p", str(port), "-t", "4", "-m", "64"] + args,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    util.wait_port(port, proc, timeout=30)
    stop = threading.Event()
    counts = []
    threads = [threading.Thread(target=client, args=(port, i, stop, counts)) for i in range(8)]
    threads.append(threading.Thread(target=scraper, args=(port, stop, counts)))
    threads.append(threading.Thread(target=operator, args=(port, meminfo, stop, 99)))
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(60)
    st = util.stats(port)
    rc = util.stop(proc)
    err = proc.stderr.read().decode(errors="replace")
    if os.environ.get("TSAN_LOG"):
        open(os.environ["TSAN_LOG"] + "." + name, "w").write(err)
    reports = err.count("WARNING: ThreadSanitizer")
    first = err[err.find("WARNING: ThreadSanitizer"):][:3000] if reports else ""
    check(reports == 0, "%s: %d ThreadSanitizer reports; the first:\n%s" % (name, reports, first))
    bad = [c for c in counts if not isinstance(c, int)]
    batches = sum(c for c in counts if isinstance(c, int))
    check(not bad and batches > 50, "%s: clients got their replies (%d batches) %r" % (name, batches, bad[:3]))
    check(st.get("verify_errors") == "0", "%s: no verify errors (%s)" % (name, st.get("verify_errors")))
    check(rc == 0, "%s: the daemon stops cleanly (status %s)" % (name, rc))
    if "--fetch-threads" in args:
        check(int(st.get("origin_fetches", 0)) > 100 and int(st.get("fetch_coalesced", 0)) > 0,
              "%s: the fetch pool ran (%s fetches, %s coalesced)" % (
                  name, st.get("origin_fetches"), st.get("fetch_coalesced")))
    print("%s: %d batches, %s gets, %s sets, psi drops %s, marks %s, fetches %s (%s coalesced, "
          "%s rebuilds), exit %s" % (
              name, batches, st.get("cmd_get"), st.get("cmd_set"), st.get("psi_drops"),
              st.get("volatile_marks"), st.get("origin_fetches"), st.get("fetch_coalesced"),
              st.get("rebuilds"), rc))


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 12
    tmp = tempfile.mkdtemp()
    meminfo = os.path.join(tmp, "meminfo")
    with open(meminfo, "w") as f:
        f.write("MemTotal: 1048576 kB\nMemAvailable: 900000 kB\n")
    run("psi", ["--mode", "psi", "--psi-low", "100m", "--psi-high", "200m", "--psi-step", "30",
                "--psi-interval", "20", "--verify", "--origin", "gen:size=100-5000,seed=9"], seconds, meminfo)
    run("madvfree", ["--mode", "madvfree", "--idle", "1", "--verify"], seconds)
    # a slow origin: misses and rebuilds of lost keys wait in the fetch
    # pool, many clients miss the same keys at once (single-flight), ticks
    # mark idle data that the fetch threads' fills race with
    run("fetch", ["--mode", "madvfree", "--idle", "1", "--verify", "--fetch-threads", "3",
                  "--origin", "gen:size=100-5000,seed=9,cost=2000"], seconds)
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
