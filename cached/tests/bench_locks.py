#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Lock contention of cached under a get/set mix: cached -t 4 -m 256,
10,000 keys of 100 bytes (warmed), loadgen -t 2 -c 8 closed loop for
BENCH_LOCK_SECONDS (5) per round, BENCH_LOCK_ROUNDS rounds (4).  Per round
the daemon's stats before and after give waits per second: for
cache_lock shared and exclusive, the time they took, and the waits for
an index stripe and for the store's mutex.  Prints the medians over
rounds with the ops/s.

With CACHED_OLD_BIN set, that daemon runs too, alternating with this one
(which goes first alternates by round), so that two builds compare in one
run; stats a build lacks read 0.

usage: bench_locks.py [GETS:SETS]   (default 1:1)"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import util

LOADGEN = os.path.join(util.HERE, "..", "..", "loadgen", "loadgen")
SECONDS = float(os.environ.get("BENCH_LOCK_SECONDS", "5"))
ROUNDS = int(os.environ.get("BENCH_LOCK_ROUNDS", "4"))
FIELDS = ["cache_lock_rd_waits", "cache_lock_wr_waits", "cache_lock_wait_us",
          "stripe_lock_waits", "store_lock_waits"]


def one_round(binary, ratio, jpath):
    port = util.free_port()
    proc = util.start([binary, "-u", "root", "-p", str(port), "-t", "4", "-m", "256"], port)
    try:
        base = ["-s", "127.0.0.1:%d" % port, "-t", "2", "-c", "8", "-k", "10000", "-q"]
        subprocess.run([LOADGEN] + base + ["-w", "-d", "1"], check=True)
        before = util.stats(port)
        subprocess.run([LOADGEN] + base + ["--ratio", ratio, "-d", str(SECONDS), "-j", jpath],
                       check=True)
        after = util.stats(port)
        with open(jpath) as f:
            ops = json.load(f)["ops_per_s"]
    finally:
        proc.terminate()
        proc.wait()
    per_s = [(int(after.get(k, 0)) - int(before.get(k, 0))) / SECONDS for k in FIELDS]
    return [ops] + per_s


def main():
    ratio = sys.argv[1] if len(sys.argv) > 1 else "1:1"
    if not os.access(LOADGEN, os.X_OK):
        sys.exit("bench_locks: build the load generator first (make -C loadgen)")
    builds = [("this build", util.CACHED)]
    if os.environ.get("CACHED_OLD_BIN"):
        builds.append(("CACHED_OLD_BIN", os.environ["CACHED_OLD_BIN"]))
    rows = {name: [] for name, _ in builds}
    jpath = os.path.join(tempfile.mkdtemp(), "run.json")
    for r in range(ROUNDS):
        order = builds if r % 2 == 0 else builds[::-1]
        for name, binary in order:
            print("bench_locks: round %d/%d, %s" % (r + 1, ROUNDS, name), file=sys.stderr)
            rows[name].append(one_round(binary, ratio, jpath))
    print("cached -t 4 -m 256, 10000 keys of 100 B, loadgen -t 2 -c 8 --ratio %s, "
          "%d rounds of %gs, medians; waits per second" % (ratio, ROUNDS, SECONDS))
    print("%-16s %9s %10s %10s %11s %12s %11s" % (
        "build", "ops/s", "rd waits", "wr waits", "wait us", "stripe waits", "store waits"))
    for name, _ in builds:
        med = [statistics.median(row[i] for row in rows[name]) for i in range(6)]
        print("%-16s %9.0f %10.0f %10.0f %11.0f %12.0f %11.0f" % tuple([name] + med))


if __name__ == "__main__":
    main()
