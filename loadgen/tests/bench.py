#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""bench.py - loadgen against memcaslap (libmemcached-tools), same server,
same run, same mix, same concurrency.

memcached -t 2 listens on a free loopback port.  Both tools use 2 threads
and 64 connections in all (32 per thread), one request in flight per
connection (closed loop, no pipelining: memcaslap sends a connection's
next request only after the reply to the last), 90% gets / 10% sets,
100-byte values and 26-byte keys over a populated key space (loadgen
--warmup fills it first; memcaslap's own gets miss nothing, it prints
get_misses: 0).  memcaslap pins its thread i to CPU i
(sched_setaffinity, visible with strace); loadgen runs with --pin, which
does the same, so both tools have the same thread placement.  loadgen
also runs with --sched-batch, so that its threads, woken by a reply,
seldom preempt the memcached thread that is running: memcaslap's
threads, which spend more CPU per request, seldom win such a preemption
anyway (memcached's involuntary context switches per request: 0.05-0.09
with memcaslap, 0.19 with loadgen without --sched-batch, 0.06-0.13 with
it).  memcaslap
checks no values by default and neither does loadgen here (no --verify).

Each round runs both tools back to back, 1 s apart, so a round's ratio
compares runs seconds apart; the machine's background load drifts too much
for lone runs to compare.  The tool that runs first in a round tends to do
better, so which goes first alternates and the number of rounds is even.
The result line gives the median of the per-round ratios
loadgen/memcaslap with a distribution-free 95% confidence interval (order
statistics of the binomial; the exact coverage is printed), and the
geometric mean with a t interval on the logarithms.  The table shows each
tool's median ops/s and median CPU time per 1000 requests (getrusage of
the child: user + system).

memcached's own counters (cmd_get + cmd_set) are read before and after
each run, and the range of their ratio to each tool's own count of
requests is printed: both tools' figures rest on requests the server
really served (loadgen's runs leave up to one request per connection
unanswered at the end, which it does not count as done).

Two more measurements follow.  Head-to-head: both tools run at the same
time against the same memcached, so both see the same background load;
memcached is then the bottleneck and should serve both about equally, and
the CPU each tool spent per 1000 requests is compared under identical
conditions.  Headroom: loadgen alone with --pipeline 8 shows how far it
can go beyond the request rate of the comparison.

BENCH_ROUNDS (10; at least 5, rounded up to an even number),
BENCH_SECONDS (3), BENCH_HEAD_ROUNDS (3), BENCH_CONNS (32 per thread) and
LOADGEN (the binary) change the defaults.
"""
import json
import math
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LOADGEN = os.environ.get("LOADGEN", os.path.join(HERE, "..", "loadgen"))
SECONDS = int(os.environ.get("BENCH_SECONDS", "3"))
ROUNDS = max(5, int(os.environ.get("BENCH_ROUNDS", "10")))
ROUNDS += ROUNDS % 2    # even, so that each tool goes first equally often
HEAD_ROUNDS = int(os.environ.get("BENCH_HEAD_ROUNDS", "3"))
CONNS = int(os.environ.get("BENCH_CONNS", "32"))   # per thread
THREADS = 2
KEYS = 100000
PREFIX = "bench-key-0123456789:"      # keys of 22-26 bytes
KEYLEN = 26                            # memcaslap needs more than 16


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port):
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


# t quantiles 0.975 for 1..30 degrees of freedom
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
        2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def median_ci(xs):
    """Median of xs with a distribution-free confidence interval of at
    least 95%: the k-th smallest and k-th largest value, k the largest with
    P(Binomial(n, 1/2) < k) <= 0.025.  Returns (median, lo, hi, coverage)."""
    xs = sorted(xs)
    n = len(xs)
    cdf = 0.0
    k = 0
    while True:
        nxt = cdf + math.comb(n, k) / 2.0 ** n     # P(X <= k)
        if nxt > 0.025:
            break
        cdf = nxt
        k += 1
    if k == 0:      # too few values for 95%: the range
        return statistics.median(xs), xs[0], xs[-1], 1 - 2 / 2.0 ** n
    return statistics.median(xs), xs[k - 1], xs[n - k], 1 - 2 * cdf


def gmean_ci(xs):
    """Geometric mean of xs with a 95% t interval on the logarithms."""
    logs = [math.log(x) for x in xs]
    m = statistics.mean(logs)
    if len(logs) < 2:
        return math.exp(m), math.exp(m), math.exp(m)
    half = T975[min(len(logs) - 1, 30) - 1] * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(m), math.exp(m - half), math.exp(m + half)


def server_ops(port):
    """memcached's own count of requests served: cmd_get + cmd_set."""
    s = socket.create_connection(("127.0.0.1", port), 5)
    s.sendall(b"stats\r\n")
    buf = b""
    while not buf.endswith(b"END\r\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    s.close()
    st = {}
    for line in buf.decode().split("\r\n"):
        f = line.split()
        if len(f) == 3 and f[0] == "STAT":
            st[f[1]] = f[2]
    return int(st["cmd_get"]) + int(st["cmd_set"])


def run_child(argv):
    """Run argv; return (stdout, cpu seconds of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(argv, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if p.returncode not in (0,):
        sys.stderr.write("%s exited %d: %s\n" % (argv[0], p.returncode, p.stderr[-400:]))
    return p.stdout + p.stderr, cpu


def main():
    tmp = tempfile.mkdtemp(prefix="loadgen-bench.")
    cfgfile = os.path.join(tmp, "memcaslap.cfg")
    with open(cfgfile, "w") as f:
        f.write("key\n%d %d 1\nvalue\n100 100 1\ncmd\n0 0.1\n1 0.9\n" % (KEYLEN, KEYLEN))
    mc = None
    for _ in range(5):
        port = free_port()
        mc = subprocess.Popen(["memcached", "-u", "root", "-l", "127.0.0.1", "-p", str(port),
                               "-U", "0", "-t", "2", "-m", "1024", "-c", "4096"])
        if wait_port(port) and mc.poll() is None:
            break
        mc.kill()
        mc.wait()
    server = "127.0.0.1:%d" % port
    res = {"loadgen": [], "memcaslap": []}
    head = {"loadgen": [], "memcaslap": []}
    served = {"loadgen": [], "memcaslap": []}   # (memcached's count, the tool's)
    ratios = []
    try:
        subprocess.run([LOADGEN, "-s", server, "-k", str(KEYS), "--key-prefix", PREFIX,
                        "--warmup", "-n", "1", "-q"], check=False)
        def run_loadgen():
            jf = os.path.join(tmp, "lg.json")
            before = server_ops(port)
            out, cpu = run_child([LOADGEN, "--pin", "--sched-batch", "-s", server, "-t", str(THREADS), "-c", str(CONNS),
                                  "-d", str(SECONDS), "-k", str(KEYS), "--key-prefix", PREFIX,
                                  "--get-ratio", "0.9", "--gen", "size=100", "-q",
                                  "--json", jf])
            j = json.load(open(jf))
            served["loadgen"].append((server_ops(port) - before, j["ops"]))
            res["loadgen"].append((j["ops_per_s"], cpu * 1e6 / max(j["ops"], 1)))

        def run_memcaslap():
            before = server_ops(port)
            out, cpu = run_child(["memcaslap", "-s", server, "-T", str(THREADS),
                                  "-c", str(THREADS * CONNS), "-t", "%ds" % SECONDS,
                                  "-F", cfgfile])
            m = re.search(r"Run time: ([\d.]+)s Ops: (\d+) TPS: (\d+)", out)
            if not m:
                raise RuntimeError("cannot read memcaslap output:\n" + out[-1000:])
            ops = int(m.group(2))
            served["memcaslap"].append((server_ops(port) - before, ops))
            res["memcaslap"].append((float(m.group(3)), cpu * 1e6 / max(ops, 1)))

        for r in range(ROUNDS):
            first, second = (run_loadgen, run_memcaslap) if r % 2 == 0 else \
                (run_memcaslap, run_loadgen)
            time.sleep(1)
            first()
            time.sleep(1)
            second()
            ratios.append(res["loadgen"][-1][0] / res["memcaslap"][-1][0])
            print("round %d: loadgen %.0f ops/s, memcaslap %.0f ops/s, ratio %.3f"
                  % (r + 1, res["loadgen"][-1][0], res["memcaslap"][-1][0], ratios[-1]),
                  file=sys.stderr, flush=True)
        for r in range(HEAD_ROUNDS):
            time.sleep(1)
            jf = os.path.join(tmp, "h2h.json")
            lg = subprocess.Popen([LOADGEN, "--pin", "--sched-batch", "-s", server, "-t", str(THREADS), "-c", str(CONNS),
                                   "-d", str(SECONDS), "-k", str(KEYS), "--key-prefix", PREFIX,
                                   "--get-ratio", "0.9", "--gen", "size=100", "-q",
                                   "--json", jf])
            ms = subprocess.Popen(["memcaslap", "-s", server, "-T", str(THREADS),
                                   "-c", str(THREADS * CONNS), "-t", "%ds" % SECONDS,
                                   "-F", cfgfile], stdout=subprocess.PIPE, text=True)
            out = ms.stdout.read()
            cpu = {}
            for _ in range(2):
                pid, _st, ru = os.wait4(-1, 0)
                cpu[pid] = ru.ru_utime + ru.ru_stime
            j = json.load(open(jf))
            m = re.search(r"Ops: (\d+) TPS: (\d+)", out)
            head["loadgen"].append((j["ops_per_s"], cpu[lg.pid] * 1e6 / max(j["ops"], 1)))
            head["memcaslap"].append((float(m.group(2)),
                                      cpu[ms.pid] * 1e6 / max(int(m.group(1)), 1)))
            print("head-to-head %d: loadgen %.0f ops/s, memcaslap %.0f ops/s"
                  % (r + 1, head["loadgen"][-1][0], head["memcaslap"][-1][0]),
                  file=sys.stderr, flush=True)
        time.sleep(1)
        jf = os.path.join(tmp, "pipe.json")
        out, cpu = run_child([LOADGEN, "--pin", "--sched-batch", "-s", server, "-t", str(THREADS), "-c", str(CONNS),
                              "-p", "8", "-d", str(SECONDS), "-k", str(KEYS),
                              "--key-prefix", PREFIX, "--get-ratio", "0.9",
                              "--gen", "size=100", "-q", "--json", jf])
        j = json.load(open(jf))
        piped = (j["ops_per_s"], cpu * 1e6 / max(j["ops"], 1))
    finally:
        mc.kill()
        mc.wait()
    lg = statistics.median(x[0] for x in res["loadgen"])
    ms = statistics.median(x[0] for x in res["memcaslap"])
    lgc = statistics.median(x[1] for x in res["loadgen"])
    msc = statistics.median(x[1] for x in res["memcaslap"])
    print("benchmark: memcached 1.6.18 -t 2 on loopback, 2 load threads x %d conns,"
          " (both 1 request in flight per connection, threads pinned as memcaslap pins them;"
          " loadgen --sched-batch),"
          " 90%% get / 10%% set, 100-byte values, %d keys, %d alternating rounds of %d s"
          " (medians); load average %s"
          % (CONNS, KEYS, ROUNDS, SECONDS, " ".join("%.1f" % x for x in os.getloadavg())))
    print("%-10s %12s %22s" % ("tool", "ops/s", "CPU ms/1000 requests"))
    print("%-10s %12.0f %22.3f" % ("loadgen", lg, lgc))
    print("%-10s %12.0f %22.3f" % ("memcaslap", ms, msc))
    med, lo, hi, cover = median_ci(ratios)
    gm, glo, ghi = gmean_ci(ratios)
    print("ratio loadgen/memcaslap: median %.3f, 95%% CI %.3f-%.3f (order statistics,"
          " coverage %.1f%%) over %d alternating rounds; geometric mean %.3f,"
          " 95%% CI %.3f-%.3f; range %.3f-%.3f"
          % (med, lo, hi, 100 * cover, len(ratios), gm, glo, ghi, min(ratios), max(ratios)))
    # Each tool's own count of requests against memcached's: a tool that
    # counted requests it never made, or missed some, would show here.
    print("requests counted by memcached / by the tool, per run: loadgen %s,"
          " memcaslap %s" % tuple(
              "%.4f-%.4f" % (min(a / max(b, 1) for a, b in served[t]),
                             max(a / max(b, 1) for a, b in served[t]))
              for t in ("loadgen", "memcaslap")))
    if head["loadgen"]:
        hl = statistics.median(x[0] for x in head["loadgen"])
        hm = statistics.median(x[0] for x in head["memcaslap"])
        print("head-to-head (both at once, %d rounds, medians): loadgen %.0f ops/s at %.3f"
              " CPU ms/1000, memcaslap %.0f ops/s at %.3f CPU ms/1000, ratio %.3f"
              % (len(head["loadgen"]), hl,
                 statistics.median(x[1] for x in head["loadgen"]), hm,
                 statistics.median(x[1] for x in head["memcaslap"]), hl / hm if hm else 0))
    print("headroom: loadgen --pipeline 8 alone: %.0f ops/s at %.3f CPU ms/1000"
          % piped)
    return 0


if __name__ == "__main__":
    sys.exit(main())
