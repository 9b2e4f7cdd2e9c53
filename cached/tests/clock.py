#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""A step of the wall clock does not move the daemon's clock: items with a
relative expiry stay, and `stats time` keeps counting from where it was,
as in memcached (a monotonic clock).  The wall clock of the daemon alone
is stepped a day ahead through tests/clockstep.so (LD_PRELOAD)."""
import os
import subprocess
import sys
import tempfile
import time

import util

check = util.Checks("clock")
SHIM = os.path.join(util.HERE, "clockstep.so")


def main():
    with tempfile.TemporaryDirectory() as d:
        step = os.path.join(d, "step")
        with open(step, "w") as f:
            f.write("0\n")
        port = util.free_port()
        env = dict(os.environ, CLOCKSTEP_FILE=step,
                   LD_PRELOAD=(os.environ.get("LD_PRELOAD", "") + " " + SHIM).strip())
        argv = [util.CACHED, "-u", "root", "-p", str(port), "-t", "2", "--idle", "3600"]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        util.wait_port(port, proc)
        out = util.command(port, b"set a 0 100 1\r\nx\r\nset b 0 0 1\r\ny\r\n")
        check(out == b"STORED\r\nSTORED\r\n", "set: %r" % out)
        t0 = int(util.stats(port)["time"])
        with open(step, "w") as f:
            f.write("%d\n" % 86400)
        time.sleep(2.5)
        t1 = int(util.stats(port)["time"])
        check(0 <= t1 - t0 <= 10, "time did not jump with the wall clock: %d -> %d" % (t0, t1))
        out = util.command(port, b"get a b\r\n")
        check(out == b"VALUE a 0 1\r\nx\r\nVALUE b 0 1\r\ny\r\nEND\r\n",
              "a 100 s expiry survives a one-day wall-clock step: %r" % out)
        util.stop(proc)
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
