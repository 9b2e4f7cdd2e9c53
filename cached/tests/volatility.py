#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Modes on the host: without the kernel series the daemon logs one clear
line and runs pinned; --mode pinned logs nothing of the kind; --mode psi
arms a PSI trigger (or falls back with a clear line); --mode madvfree
gives idle data up with MADV_FREE and reads it back exact; idle data with
--verify and the gen origin reads back byte-exact via mcclient; small and
large objects, eviction under -m with every survivor correct."""
import os
import subprocess
import sys
import time

import util

MCCLIENT = os.path.join(util.HERE, "mcclient")
check = util.Checks("volatility")


def has_volatile_kernel():
    # the host kernel may one day carry the series; then mode is volatile
    return "volatile" in open("/proc/meminfo").read().lower()


def mc(port, *args):
    r = subprocess.run([MCCLIENT, "-p", str(port)] + list(args), capture_output=True, timeout=120)
    return r.returncode, r.stdout.decode().strip()


def main():
    proc, port = util.start_cached("--idle", "1", "--origin", "gen:size=50-20000,seed=5", "--verify", "-m", "32")
    time.sleep(0.3)
    st = util.stats(port)
    if not has_volatile_kernel():
        check(st["mode"] == "pinned", "falls back to pinned: %s" % st["mode"])
    rc, out = mc(port, "-g", "size=50-20000,seed=5", "fill", "3000")
    check(rc == 0, "fill: " + out)
    time.sleep(2.5)
    rc, out = mc(port, "-g", "size=50-20000,seed=5", "-s", "verify", "3000")
    check(rc == 0 and out == "keys=3000 ok=3000 bad=0 miss=0", "verify after idle: " + out)
    # more data than -m: evictions, survivors correct, misses rebuilt by gen
    rc, out = mc(port, "-g", "size=50-20000,seed=5", "-k", "more:", "fill", "6000")
    check(rc == 0, "fill over -m: " + out)
    st = util.stats(port)
    check(int(st["evictions"]) > 0, "evictions counted: %s" % st["evictions"])
    check(int(st["store_bytes"]) + int(st["index_bytes"]) <= 32 << 20, "within -m")
    rc, out = mc(port, "-g", "size=50-20000,seed=5", "-k", "more:", "-s", "verify", "6000")
    check(rc == 0 and "bad=0 miss=0" in out, "verify over -m: " + out)
    check(util.stats(port)["verify_errors"] == "0", "no verify errors")
    util.stop(proc)
    err = proc.stderr.read().decode()
    if not has_volatile_kernel():
        lines = [l for l in err.splitlines() if "volatile" in l]
        check(len(lines) == 1 and "pinned" in lines[0], "one clear fallback line: %r" % err)

    proc, port = util.start_cached("--mode", "pinned")
    util.stop(proc)
    err = proc.stderr.read().decode()
    check("volatile" not in err, "pinned mode is quiet: %r" % err)

    proc, port = util.start_cached("--mode", "psi", "--psi-stall", "50000", "--psi-window", "1000000")
    st = util.stats(port)
    util.stop(proc)
    err = proc.stderr.read().decode()
    if os.path.exists("/proc/pressure/memory") and st["mode"] == "psi":
        check(True, "psi armed")
    else:
        check(st["mode"] == "pinned" and "PSI" in err, "psi fallback is clear: %r" % err)
    # resident memory stays within -m plus the documented overhead (6 MiB:
    # libraries, threads, malloc, a few connection buffers); not under ASan
    if "asan" not in util.CACHED:
        import random
        proc, port = util.start_cached("-m", "16", "--mode", "pinned")
        rnd = random.Random(1)
        peak = 0
        for _ in range(6):
            cmds = []
            for i in range(3000):
                n = rnd.choice([20000, 300000]) if rnd.random() < 0.05 else rnd.choice([100, 1000, 4000])
                k = rnd.randrange(20000)
                if rnd.random() < 0.3:
                    cmds.append(b"delete k%d noreply\r\n" % k)
                else:
                    cmds.append(b"set k%d 0 0 %d noreply\r\n%s\r\n" % (k, n, b"x" * n))
            util.command(port, b"".join(cmds) + b"version\r\n", timeout=10)
            time.sleep(1.2)
            for line in open("/proc/%d/status" % proc.pid):
                if line.startswith("VmRSS"):
                    peak = max(peak, int(line.split()[1]))
        util.stop(proc)
        check(peak <= (16 + 6) * 1024, "-m 16 pinned: resident %d kB within -m + 6 MiB" % peak)
    # the trigger is armed before -u drops privileges
    if os.getuid() == 0 and os.path.exists("/proc/pressure/memory") and st["mode"] == "psi":
        port = util.free_port()
        proc = util.start([util.CACHED, "-u", "nobody", "-p", str(port), "-t", "2",
                           "--mode", "psi"], port)
        st2 = util.stats(port)
        util.stop(proc)
        err = proc.stderr.read().decode()
        check(st2["mode"] == "psi", "-u nobody --mode psi runs in psi mode: %s %r" % (st2["mode"], err))
    # madvfree: idle segments given up with MADV_FREE, read back exact
    # (nothing presses this host, so nothing is freed; the fuzzer's -M
    # frees pages at random moments)
    proc, port = util.start_cached("--mode", "madvfree", "--idle", "1", "--verify", "-m", "32")
    rc, out = mc(port, "-g", "size=50-20000,seed=6", "-k", "mf:", "fill", "1500")
    check(rc == 0, "madvfree fill: " + out)
    time.sleep(2.5)
    st = util.stats(port)
    check(st["mode"] == "madvfree" and int(st["volatile_marks"]) > 0 and int(st["volatile_bytes"]) > 0,
          "madvfree marks idle data: %s, %s marks, %s bytes" % (st["mode"], st["volatile_marks"], st["volatile_bytes"]))
    rc, out = mc(port, "-g", "size=50-20000,seed=6", "-k", "mf:", "-s", "verify", "1500")
    check(rc == 0 and out == "keys=1500 ok=1500 bad=0 miss=0", "madvfree reads back exact: " + out)
    st = util.stats(port)
    check(int(st["volatile_unmarks"]) > 0 and st["verify_errors"] == "0" and st["purged_ranges"] == "0",
          "madvfree takes segments back: %s unmarks" % st["volatile_unmarks"])
    util.stop(proc)
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
