#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Operator commands and flags: cache_memlimit shrinks the store and gives
the memory back, and grows it again up to -m, or past it up to
--memory-max; -R changes which pipelined
replies a bad get takes back exactly as memcached's -R does; -I raises the
item size limit as memcached's does; stats settings shows all three;
stats items and stats slabs report memcached's classes;
lru_crawler metadump lists every live item once, in memcached's format."""
import os
import re
import socket
import sys
import time

import util

check = util.Checks("admin")


def rss_shmem_kb(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("RssShmem:"):
            return int(line.split()[1])
    return 0


def fill(port, prefix, n, size):
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile("rb")
    val = b"v" * size
    batch = 200
    for i in range(0, n, batch):
        s.sendall(b"".join(b"set %s%d 0 0 %d noreply\r\n%s\r\n" % (prefix, j, size, val)
                           for j in range(i, min(n, i + batch))) + b"mn\r\n")
        check(f.readline() == b"MN\r\n", "fill answers")
    s.close()


def memlimit():
    proc, port = util.start_cached("--mode", "pinned", "-m", "64")
    fill(port, b"a", 12000, 4000)
    st = util.stats(port)
    before = int(st["store_bytes"])
    rss_before = rss_shmem_kb(proc.pid)
    check(before > 40 << 20, "filled: store_bytes %d" % before)
    r = util.command(port, b"cache_memlimit 8\r\n")
    check(r == b"OK\r\n", "shrink to 8m: %r" % r)
    st = util.stats(port)
    after = int(st["store_bytes"]) + int(st["index_bytes"])
    check(after <= 8 << 20, "the store fits in 8m: %d" % after)
    check(int(st["evictions"]) > 0, "shrinking evicts: %s" % st["evictions"])
    check(int(st["limit_maxbytes"]) == 8 << 20, "limit_maxbytes follows: %s" % st["limit_maxbytes"])
    rss_after = rss_shmem_kb(proc.pid)
    check(rss_after < rss_before / 3 and rss_after < 16 << 10,
          "memory given back: RssShmem %d kB -> %d kB" % (rss_before, rss_after))
    sset = util.command(port, b"stats settings\r\n")
    check(b"STAT maxbytes 8388608\r\n" in sset, "stats settings maxbytes 8m")
    # survivors are intact, new sets fit in the smaller budget
    fill(port, b"b", 4000, 4000)
    st = util.stats(port)
    check(int(st["store_bytes"]) + int(st["index_bytes"]) <= 8 << 20, "stays within 8m")
    r = util.command(port, b"cache_memlimit 64\r\n")
    check(r == b"OK\r\n", "grow back to 64m: %r" % r)
    fill(port, b"c", 12000, 4000)
    st = util.stats(port)
    check(int(st["store_bytes"]) > 40 << 20, "grown again: %s" % st["store_bytes"])
    # without --memory-max the ceiling is the machine's memory, as stats
    # settings says: past -m is fine, past physical memory is not
    phys = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    sset = util.command(port, b"stats settings\r\n")
    check(b"STAT memory_max %d\r\n" % phys in sset,
          "stats settings memory_max is physical memory (%d)" % phys)
    r = util.command(port, b"cache_memlimit 65\r\n")
    check(r == b"OK\r\n", "growth past -m without --memory-max: %r" % r)
    r = util.command(port, b"cache_memlimit %d\r\n" % ((phys >> 20) + 64))
    check(r == b"MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust\r\n",
          "no growth past physical memory: %r" % r)
    r = util.command(port, b"cache_memlimit 64\r\n")
    check(r == b"OK\r\n", "back to 64m: %r" % r)
    r = util.command(port, b"cache_memlimit 7\r\ncache_memlimit x\r\ncache_memlimit 9 noreply\r\nmn\r\n")
    check(r == b"MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\nERROR\r\nMN\r\n",
          "memcached's errors: %r" % r)
    check(proc.poll() is None, "alive")
    util.stop(proc)


def memlimit_grow():
    """--memory-max: cache_memlimit grows the cache past -m, up to it."""
    proc, port = util.start_cached("--mode", "pinned", "-m", "8", "--memory-max", "48")
    sset = util.command(port, b"stats settings\r\n")
    check(b"STAT memory_max 50331648\r\n" in sset, "stats settings memory_max 48m")
    fill(port, b"g", 6000, 4000)
    st = util.stats(port)
    check(int(st["store_bytes"]) + int(st["index_bytes"]) <= 8 << 20, "within -m 8 first")
    ev0 = int(st["evictions"])
    check(ev0 > 0, "-m 8 evicts a 24 MB fill: %d" % ev0)
    r = util.command(port, b"cache_memlimit 40\r\n")
    check(r == b"OK\r\n", "grow past -m to 40m: %r" % r)
    fill(port, b"h", 8000, 4000)
    st = util.stats(port)
    check(int(st["store_bytes"]) > 30 << 20, "grown past -m: store_bytes %s" % st["store_bytes"])
    check(int(st["store_bytes"]) + int(st["index_bytes"]) <= 40 << 20, "within 40m")
    check(int(st["evictions"]) == ev0, "no eviction while it fits: %s" % st["evictions"])
    big = b"L" * 900000
    r = util.command(port, b"set large 0 0 %d\r\n%s\r\nget large\r\n" % (len(big), big))
    check(r == b"STORED\r\nVALUE large 0 %d\r\n%s\r\nEND\r\n" % (len(big), big),
          "a large object in the grown store")
    r = util.command(port, b"cache_memlimit 48\r\ncache_memlimit 49\r\n")
    check(r == b"OK\r\nMEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust\r\n",
          "up to --memory-max, not past it: %r" % r)
    check(proc.poll() is None, "alive")
    util.stop(proc)


def memlimit_grow_default():
    """Without --memory-max, -m 3 grows to 16m and shrinks back (dyn-maxbytes.t)."""
    proc, port = util.start_cached("--mode", "pinned", "-m", "3")
    fill(port, b"d", 40, 66560)
    st = util.stats(port)
    ev0 = int(st["evictions"])
    check(ev0 > 0, "-m 3 evicts 40 values of 65 KB: %d" % ev0)
    r = util.command(port, b"cache_memlimit 16\r\n")
    check(r == b"OK\r\n", "grow from 3m to 16m: %r" % r)
    sset = util.command(port, b"stats settings\r\n")
    check(b"STAT maxbytes 16777216\r\n" in sset, "stats settings maxbytes 16m")
    fill(port, b"e", 150, 66560)
    st = util.stats(port)
    grown = int(st["store_bytes"])
    check(grown > 8 << 20, "holds more than 8 MB: %d" % grown)
    check(grown + int(st["index_bytes"]) <= 16 << 20, "within 16m: %d" % grown)
    check(int(st["evictions"]) == ev0, "no eviction while it fits: %s" % st["evictions"])
    r = util.command(port, b"cache_memlimit 8\r\n")
    check(r == b"OK\r\n", "shrink to 8m: %r" % r)
    st = util.stats(port)
    check(int(st["store_bytes"]) + int(st["index_bytes"]) <= 8 << 20,
          "given back down to 8m: %s" % st["store_bytes"])
    check(proc.poll() is None, "alive")
    util.stop(proc)


def reqs_per_event():
    mc, mport = util.start_memcached("-R", "3")
    cd, cport = util.start_cached("--mode", "pinned", "-R", "3")
    try:
        for n in (1, 2, 3, 4, 5, 7, 8, 12):
            sess = b"delete zz\r\n" * n + b"get " + b"k" * 251 + b"\r\n"
            a, b = util.command(mport, sess), util.command(cport, sess)
            check(a == b, "-R 3, %d deletes then a bad get: memcached %r cached %r" % (n, a, b))
        st = util.command(cport, b"stats settings\r\n")
        check(b"STAT reqs_per_event 3\r\n" in st, "stats settings reqs_per_event")
        check(int(util.stats(cport)["conn_yields"]) >= 8, "conn_yields counts the yields")
    finally:
        util.stop(mc)
        util.stop(cd)


def item_size_max():
    mc, mport = util.start_memcached("-I", "2m")
    cd, cport = util.start_cached("--mode", "pinned", "-I", "2m")
    try:
        for n in (1500000, 2097000, 2100000):
            sess = b"set big 0 0 %d\r\n%s\r\nmg big s\r\n" % (n, b"x" * n)
            a, b = util.command(mport, sess), util.command(cport, sess)
            check(a == b, "-I 2m, %d bytes: memcached %r cached %r" % (n, a[:80], b[:80]))
        st = util.command(cport, b"stats settings\r\n")
        check(b"STAT item_size_max 2097152\r\n" in st, "stats settings item_size_max")
    finally:
        util.stop(mc)
        util.stop(cd)


LINE = re.compile(rb"^key=(\S+) exp=(-?\d+) la=(\d+) cas=(\d+) fetch=(yes|no) cls=(\d+) size=(\d+)$")


def dump(port, which=b"all"):
    out = util.command(port, b"lru_crawler metadump " + which + b"\r\n", timeout=5)
    check(out.endswith(b"END\r\n"), "metadump ends with END")
    rows = {}
    for line in out[:-5].split(b"\n"):
        if not line:
            continue
        m = LINE.match(line)
        check(m is not None, "metadump line format: %r" % line)
        if m:
            check(m.group(1) not in rows, "listed once: %r" % m.group(1))
            rows[m.group(1)] = (m.group(2), m.group(4), m.group(5), m.group(6), m.group(7))
    return rows


def metadump():
    mc, mport = util.start_memcached()
    cd, cport = util.start_cached("--mode", "pinned")
    try:
        keys = [b"k%d" % i for i in range(1500)] + [b"odd%/:?&=+~._-" + bytes([c]) for c in range(33, 127)]
        sess = b"".join(b"set %s %d %d %d noreply\r\n%s\r\n" % (k, i % 3, 1000 if i % 2 else 0, i % 700, b"v" * (i % 700))
                        for i, k in enumerate(keys))
        sess += b"delete k5 noreply\r\nset gone 0 -1 1 noreply\r\nx\r\nget k7 k8\r\n"
        for port in (mport, cport):
            util.command(port, sess)
        a, b = dump(mport), dump(cport)
        check(len(b) == len(keys) - 1, "every live key once: %d of %d" % (len(b), len(keys) - 1))
        # exp= is absolute: memcached derives it from a clock that ticks
        # apart from cached's, so it may differ by a second
        def close(x, y):
            return x is not None and y is not None and x[1:] == y[1:] and \
                abs(int(x[0]) - int(y[0])) <= 1
        bad = [k for k in set(a) | set(b) if not close(a.get(k), b.get(k))]
        check(not bad, "the same items, cas, fetched, classes and sizes as memcached (%d differ: %r)" %
              (len(bad), [(k, a.get(k), b.get(k)) for k in bad[:3]]))
        one = dump(cport, b"1,2")
        check(one == {k: v for k, v in b.items() if v[3] in (b"1", b"2")}, "a class list selects classes")
        check(util.command(cport, b"lru_crawler metadump 64\r\n") == b"BADCLASS invalid class id\r\n", "bad class")
    finally:
        util.stop(mc)
        util.stop(cd)


def stats_sub(port, sub):
    out = util.command(port, b"stats " + sub + b"\r\n").decode()
    return dict(l.split(" ", 2)[1:] for l in out.splitlines() if l.startswith("STAT "))


def classes():
    """stats items and stats slabs give every class memcached gives, with
    the same counts and sizes, for values up to memcached's 512 KiB chunk
    (larger ones memcached splits over several classes)."""
    mc, mport = util.start_memcached()
    cd, cport = util.start_cached("--mode", "pinned")
    try:
        sizes = list(range(0, 3000, 7)) + list(range(3000, 520000, 9973))
        sess = b"".join(b"set k%d %d 0 %d noreply\r\n%s\r\n" % (n, n % 2, n, b"v" * n) for n in sizes)
        sess += b"set gone 0 1 1 noreply\r\nx\r\n"
        for port in (mport, cport):
            util.command(port, sess)
        time.sleep(2.1)
        for port in (mport, cport):
            util.command(port, b"set gone 0 0 2 noreply\r\nyy\r\n")
        # reclaimed: cached counts the dead item a store replaced; memcached
        # the dead item it finds at the tail of the class's LRU, if any
        check(stats_sub(cport, b"items").get("items:1:reclaimed") == "1", "reclaimed counted")
        for sub, names in ((b"items", ("number", "mem_requested")),
                           (b"slabs", ("chunk_size", "chunks_per_page", "total_pages",
                                       "total_chunks", "used_chunks", "free_chunks"))):
            a, b = stats_sub(mport, sub), stats_sub(cport, sub)
            bad = [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b))
                   if k.split(":")[-1] in names and a.get(k) != b.get(k)]
            check(not bad, "stats %s per class as memcached: %r" % (sub.decode(), bad[:5]))
            check(len([k for k in b if k.endswith(":" + names[0])]) > 20, "many classes")
    finally:
        util.stop(mc)
        util.stop(cd)


def main():
    classes()
    memlimit()
    memlimit_grow()
    memlimit_grow_default()
    reqs_per_event()
    item_size_max()
    metadump()
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
