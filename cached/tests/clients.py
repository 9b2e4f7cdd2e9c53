#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Real clients against cached: python3-pymemcache and libmemcached-tools
(memccp, memccat, memcrm, memcflush, memcstat, memcslap/memcaslap)."""
import os
import shutil
import subprocess
import sys
import tempfile

import util

check = util.Checks("clients")


def pymemcache_tests(port):
    from pymemcache.client.base import Client
    c = Client(("127.0.0.1", port), timeout=5, connect_timeout=5)
    check(c.set("k1", b"v1") is True, "set")
    check(c.get("k1") == b"v1", "get")
    check(c.add("k1", b"x", noreply=False) is False, "add existing")
    check(c.add("k2", b"x", noreply=False) is True, "add new")
    check(c.replace("nope", b"x", noreply=False) is False, "replace missing")
    check(c.append("k1", b"+", noreply=False) is True, "append")
    check(c.prepend("k1", b"-", noreply=False) is True, "prepend")
    check(c.get("k1") == b"-v1+", "append/prepend value")
    val, cas = c.gets("k1")
    check(c.cas("k1", b"new", cas, noreply=False) is True, "cas ok")
    check(c.cas("k1", b"newer", cas, noreply=False) is False, "cas stale")
    check(c.get("k1") == b"new", "cas value")
    c.set("n", b"10")
    check(c.incr("n", 5) == 15, "incr")
    check(c.decr("n", 20) == 0, "decr floor")
    check(c.incr("missing", 1) is None, "incr missing")
    many = {"m%d" % i: ("value%d" % i).encode() * 10 for i in range(500)}
    check(c.set_many(many, noreply=False) == [], "set_many")
    got = c.get_many(list(many))
    check(got == many, "get_many of 500 keys")
    check(c.touch("k1", 100, noreply=False) is True, "touch")
    check(c.touch("nope", 100, noreply=False) is False, "touch missing")
    check(c.delete("k1", noreply=False) is True, "delete")
    check(c.delete("k1", noreply=False) is False, "delete missing")
    big = os.urandom(900 * 1024)
    check(c.set("big", big, noreply=False) is True, "set 900 KiB")
    check(c.get("big") == big, "get 900 KiB")
    try:
        c.set("huge", b"x" * (2 << 20), noreply=False)
        check(False, "too large must fail")
    except Exception as e:
        check("too large" in str(e), "too large error: %s" % e)
    check(c.get("k2") == b"x", "connection lives after too large")
    st = c.stats()
    check(st.get(b"curr_items", 0) > 0 and b"volatile_bytes" in st, "stats")
    check(c.version().startswith(b"1.6"), "version")
    c.flush_all(noreply=False)
    check(c.get("k2") is None, "flush_all")
    c.close()


def libmemcached_tests(port):
    srv = "--servers=127.0.0.1:%d" % port
    d = tempfile.mkdtemp()
    names = []
    for i in range(20):
        p = os.path.join(d, "file%d.txt" % i)
        with open(p, "wb") as f:
            f.write(os.urandom(1000 + i * 500))
        names.append(p)
    r = subprocess.run(["memccp", srv] + names, capture_output=True, timeout=30)
    check(r.returncode == 0, "memccp rc=%d %s" % (r.returncode, r.stderr[:200]))
    for p in names:
        r = subprocess.run(["memccat", srv, os.path.basename(p)], capture_output=True, timeout=30)
        check(r.returncode == 0 and r.stdout in (open(p, "rb").read(), open(p, "rb").read() + b"\n"), "memccat %s" % os.path.basename(p))
    r = subprocess.run(["memcrm", srv, "file0.txt"], capture_output=True, timeout=30)
    check(r.returncode == 0, "memcrm")
    r = subprocess.run(["memccat", srv, "file0.txt"], capture_output=True, timeout=30)
    check(r.returncode != 0, "memccat after memcrm fails")
    r = subprocess.run(["memcstat", srv], capture_output=True, timeout=30)
    check(r.returncode == 0 and b"curr_items" in r.stdout, "memcstat")
    r = subprocess.run(["memcdump", srv], capture_output=True, timeout=30)
    dumped = sorted(r.stdout.decode(errors="replace").split())
    want = sorted(os.path.basename(p) for p in names[1:])
    check(r.returncode == 0 and dumped == want,
          "memcdump lists every key (rc=%d, %d keys)" % (r.returncode, len(dumped)))
    r = subprocess.run(["memcexist", srv, "file1.txt"], capture_output=True, timeout=30)
    check(r.returncode == 0, "memcexist on a stored key")
    r = subprocess.run(["memcexist", srv, "file0.txt"], capture_output=True, timeout=30)
    check(r.returncode != 0, "memcexist on a removed key fails")
    r = subprocess.run(["memctouch", srv, "--expire=1000", "file2.txt"], capture_output=True, timeout=30)
    check(r.returncode == 0, "memctouch on a stored key")
    r = subprocess.run(["memctouch", srv, "--expire=1000", "file0.txt"], capture_output=True, timeout=30)
    check(r.returncode != 0, "memctouch on a removed key fails")
    r = subprocess.run(["memcping", srv], capture_output=True, timeout=30)
    check(r.returncode == 0, "memcping")
    r = subprocess.run(["memcflush", srv], capture_output=True, timeout=30)
    check(r.returncode == 0, "memcflush")
    r = subprocess.run(["memccat", srv, "file1.txt"], capture_output=True, timeout=30)
    check(r.returncode != 0, "flushed")
    slap = shutil.which("memcslap") or shutil.which("memcaslap")
    if slap and os.path.basename(slap) == "memcaslap":
        r = subprocess.run([slap, "-s", "127.0.0.1:%d" % port, "-t", "2s", "-c", "8", "-T", "2"],
                           capture_output=True, timeout=60)
        check(r.returncode == 0 and b"TPS" in r.stdout, "memcaslap run rc=%d" % r.returncode)
    elif slap:
        r = subprocess.run([slap, srv, "--concurrency=4", "--execute-number=2000"],
                           capture_output=True, timeout=60)
        check(r.returncode == 0, "memcslap rc=%d %s" % (r.returncode, r.stderr[:200]))
    r = subprocess.run(["memccapable", "-h", "127.0.0.1", "-p", str(port), "-a", "-q"],
                       capture_output=True, timeout=60)
    out = r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")
    check(r.returncode == 0, "memccapable ascii: %s" % out[-600:])
    shutil.rmtree(d)


def main():
    proc, port = util.start_cached("-m", "64")
    try:
        pymemcache_tests(port)
        libmemcached_tests(port)
        check(proc.poll() is None, "daemon alive")
    finally:
        util.stop(proc)
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
