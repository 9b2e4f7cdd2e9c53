#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""The psi mode's band policy on the host, driven through a meminfo file of
the test's own (CACHED_MEMINFO): free memory below the band gives back a
step a poll, coldest data first and lost (a miss without an origin), up to
--psi-max percent of the cache and no more; inside the band nothing moves;
above it the budget comes back a step a poll and the cache fills again.
Bad psi options are refused with a clear line.  Needs /proc/pressure/memory
(the mode arms a PSI trigger beside its poll) and root for the trigger."""
import os
import subprocess
import sys
import tempfile
import time

import util

MCCLIENT = os.path.join(util.HERE, "mcclient")
check = util.Checks("psi")
MB = 1 << 20


def mc(port, *args):
    r = subprocess.run([MCCLIENT, "-p", str(port)] + list(args), capture_output=True, timeout=120)
    return r.returncode, r.stdout.decode().strip()


def main():
    if not os.path.exists("/proc/pressure/memory") or os.getuid() != 0:
        print("psi: needs root and /proc/pressure/memory on the host")
        return 1
    tmp = tempfile.mkdtemp()
    meminfo = os.path.join(tmp, "meminfo")
    util.fake_meminfo(meminfo, 900)
    os.environ["CACHED_MEMINFO"] = meminfo
    # band 100-200 MB, 2% of it (2 MB) a poll, at most 20% of 64 MB (12.8 MB):
    # 7 steps
    proc, port = util.start_cached("--mode", "psi", "-m", "64", "--psi-low", "100m",
                                   "--psi-high", "200m", "--psi-step", "2",
                                   "--psi-interval", "50", "--verify")
    cap = (64 * MB) // 100 * 20
    step = (100 * MB) // 100 * 2
    steps = -(-cap // step)
    st = util.stats(port)
    check(st["mode"] == "psi", "psi mode armed: %s" % st["mode"])
    ss = util.stats(port, "settings")
    check(ss.get("psi_policy") == "band" and ss.get("psi_low") == str(100 * MB)
          and ss.get("psi_high") == str(200 * MB) and ss.get("psi_step_pct") == "2"
          and ss.get("psi_max_pct") == "20" and ss.get("psi_interval_ms") == "50",
          "stats settings show the band: %r" % {k: v for k, v in ss.items() if k.startswith("psi")})
    rc, out = mc(port, "-g", "size=16000,seed=3", "fill", "4000")
    check(rc == 0, "fill: " + out)
    before = util.stats(port)
    check(int(before["psi_advised_bytes"]) == 0 and int(before["psi_polls"]) > 0,
          "plenty free: polls, nothing given back (%s polls)" % before["psi_polls"])
    used0 = int(before["store_bytes"])
    check(used0 > 56 * MB, "cache full before pressure: %d MB" % (used0 // MB))

    # below the band: a step a poll, up to the cap and no further
    util.fake_meminfo(meminfo, 50)
    seen = set()
    st = util.wait_stats(port, lambda s: seen.add(int(s["psi_advised_bytes"])) or
                         int(s["psi_advised_bytes"]) == cap)
    check(int(st["psi_advised_bytes"]) == cap, "gives back up to the cap: %s" % st["psi_advised_bytes"])
    check(all(v % step == 0 or v == cap for v in seen),
          "a step a poll: %r" % sorted(v // MB for v in seen))
    check(int(st["psi_drops"]) == steps, "in %d steps: %s" % (steps, st["psi_drops"]))
    time.sleep(0.3)
    st = util.stats(port)
    check(int(st["psi_advised_bytes"]) == cap, "and no more: %s" % st["psi_advised_bytes"])
    check(int(st["store_bytes"]) + int(st["index_bytes"]) <= 64 * MB - cap,
          "store within the lowered budget: %d MB" % ((int(st["store_bytes"]) + int(st["index_bytes"])) // MB))
    check(int(st["psi_dropped_bytes"]) >= 8 * MB, "cold data dropped: %s" % st["psi_dropped_bytes"])
    rc, out = mc(port, "-g", "size=16000,seed=3", "-s", "verify", "4000")
    miss = int(out.split("miss=")[1]) if "miss=" in out else -1
    check("bad=0" in out and miss * 16000 >= 8 * MB, "dropped keys miss, the rest exact: " + out)
    # a fill under pressure stays within the budget
    rc, out = mc(port, "-g", "size=16000,seed=4", "-k", "more:", "fill", "2000")
    st = util.stats(port)
    check(int(st["store_bytes"]) + int(st["index_bytes"]) <= 64 * MB - cap,
          "writes under pressure stay within the budget")

    # inside the band: nothing moves
    util.fake_meminfo(meminfo, 150)
    polls = int(util.stats(port)["psi_polls"])
    time.sleep(0.3)
    st = util.stats(port)
    check(int(st["psi_polls"]) > polls and int(st["psi_advised_bytes"]) == cap,
          "inside the band nothing moves: %s" % st["psi_advised_bytes"])

    # above the band: taken back a step a poll, and the cache grows again
    util.fake_meminfo(meminfo, 500)
    st = util.wait_stats(port, lambda s: int(s["psi_advised_bytes"]) == 0)
    check(int(st["psi_advised_bytes"]) == 0 and int(st["psi_reclaims"]) == steps,
          "takes it all back in steps: %s, %s steps" % (st["psi_advised_bytes"], st["psi_reclaims"]))
    rc, out = mc(port, "-g", "size=16000,seed=5", "-k", "again:", "fill", "4000")
    st = util.stats(port)
    check(int(st["store_bytes"]) > 64 * MB - cap, "the cache fills past the old budget: %d MB"
          % (int(st["store_bytes"]) // MB))
    check(st["verify_errors"] == "0", "no verify errors")
    check(util.stop(proc) == 0, "stops cleanly")

    # bad options: a clear line and exit status 64
    for args, word in ((["--psi-policy", "fast"], "--psi-policy"), (["--psi-low", "10"], "--psi-low"),
                       (["--psi-step", "0"], "--psi-step"), (["--psi-max", "101"], "--psi-max"),
                       (["--psi-interval", "5"], "--psi-interval")):
        r = subprocess.run([util.CACHED, "-u", "root", "--mode", "psi"] + args,
                           capture_output=True, timeout=10)
        err = r.stderr.decode()
        check(r.returncode != 0 and word in err, "%s refused: %d %r" % (" ".join(args), r.returncode, err))
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
