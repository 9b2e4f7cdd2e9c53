#!/usr/bin/python3
"""make bench: cached against Debian's memcached 1.6 with the same load
tool, threads (-t 2), memory (-m 256) and mix (90% get, 10% set; 100-byte
and 4 KiB values), interleaved rounds in one run, medians reported side by
side; then index memory per object next to memcached's per-item overhead.

Load tool: the project's loadgen (../loadgen/loadgen) when it is built,
else memcaslap from libmemcached-tools (throughput only)."""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import util

ROOT = os.path.abspath(os.path.join(util.HERE, "..", ".."))
LOADGEN = os.environ.get("LOADGEN", os.path.join(ROOT, "loadgen", "loadgen"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "3"))
KEYS = 10000

SERVERS = [
    ("memcached 1.6", lambda: util.start_memcached("-m", "256")),
    ("cached pinned", lambda: util.start_cached("-m", "256", "--mode", "pinned")),
    ("cached volatile", lambda: util.start_cached("-m", "256", "--mode", "volatile")),
]
SIZES = [int(x) for x in os.environ.get("BENCH_SIZES", "100,4096").split(",")]


def proc_cpu(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def run_loadgen(proc, port, size):
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    base = [LOADGEN, "-s", "127.0.0.1:%d" % port, "-t", "2", "-c", "8", "-k", str(KEYS),
            "--gen", "size=%d" % size, "--get-ratio", "0.9", "-q"]
    subprocess.run(base + ["--warmup", "-n", "1"], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=120)
    c0 = proc_cpu(proc.pid)
    subprocess.run(base + ["-d", str(SECONDS), "-j", path],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    c1 = proc_cpu(proc.pid)
    d = json.load(open(path))
    os.unlink(path)
    return d["ops_per_s"], d["p50_us"], d["p99_us"], (c1 - c0) * 1e6 / max(d["ops"], 1)


def run_memcaslap(proc, port, size):
    cfg = tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False)
    cfg.write("key\n16 16 1\nvalue\n%d %d 1\ncmd\n0 0.1\n1 0.9\n" % (size, size))
    cfg.close()
    r = subprocess.run(["memcaslap", "-s", "127.0.0.1:%d" % port, "-T", "2", "-c", "16",
                        "-t", "%ds" % int(SECONDS), "-F", cfg.name, "-x", str(KEYS)],
                       capture_output=True, text=True, timeout=120)
    os.unlink(cfg.name)
    m = re.findall(r"TPS:\s*(\d+)", r.stdout)
    return (float(m[-1]) if m else 0.0), float("nan"), float("nan"), float("nan")


def overheads():
    """Bytes per object beyond the value, for each server, after a fill."""
    rows = []
    n, size = 50000, 100
    payload = b"".join(b"set key:%d 0 0 %d\r\n%s\r\n" % (i, size, b"v" * size) for i in range(n))
    for name, start in SERVERS[:2]:
        proc, port = start()
        try:
            util.command(port, payload, timeout=30)
            st = util.stats(port)
            items = int(st["curr_items"])
            if name.startswith("memcached"):
                slabs = util.command(port, b"stats slabs\r\n").decode()
                chunk = max(int(x) for x in re.findall(r"STAT \d+:chunk_size (\d+)", slabs))
                hdr = int(st["bytes"]) / items - size
                rows.append((name, "item header+key+CRLF %.1f B; slab chunk %d B per %d-byte value (%.1f B overhead)"
                             % (hdr, chunk, size, chunk - size)))
            else:
                idx = int(st["index_bytes"]) / items
                seg = (int(st["store_bytes"]) - int(st["bytes"])) / items
                rows.append((name, "index %.1f B per object (item struct + key + bucket); "
                             "segment CRLF/alignment/partial-segment %.1f B" % (idx, seg)))
        finally:
            util.stop(proc)
    return rows, n, size


def main():
    have_loadgen = os.access(LOADGEN, os.X_OK)
    if not have_loadgen and not shutil.which("memcaslap"):
        print("bench: neither loadgen nor memcaslap found")
        return 1
    tool = "loadgen -t 2 -c 8 (closed loop)" if have_loadgen else "memcaslap -T 2 -c 16"
    runner = run_loadgen if have_loadgen else run_memcaslap
    results = {}
    for r in range(ROUNDS):
        for size in SIZES:
            # alternate the order so neither server always runs first
            for name, start in (SERVERS if r % 2 == 0 else SERVERS[::-1]):
                proc, port = start()
                try:
                    results.setdefault((name, size), []).append(runner(proc, port, size))
                    mode = util.stats(port).get("mode", "-")
                finally:
                    util.stop(proc)
                results.setdefault(("mode", name), mode)
    print("ratio = median over rounds of ops/s divided by memcached's in the same round")
    print("cached vs memcached: -t 2, -m 256, %d keys, 90%% get / 10%% set, %s, %gs x %d rounds (median)"
          % (KEYS, tool, SECONDS, ROUNDS))
    print("load average before the run: %s" % open("/proc/loadavg").read().split()[0])
    print("%-16s %-6s %12s %8s %9s %9s %11s  %s" % ("server", "value", "ops/s", "ratio", "p50 us", "p99 us",
                                                 "cpu us/op", "mode"))
    for size in SIZES:
        base = statistics.median(x[0] for x in results[("memcached 1.6", size)])
        pinned = statistics.median(x[0] for x in results[("cached pinned", size)])
        for name, _ in SERVERS:
            xs = results[(name, size)]
            ops = statistics.median(x[0] for x in xs)
            p50 = statistics.median(x[1] for x in xs)
            p99 = statistics.median(x[2] for x in xs)
            cpu = statistics.median(x[3] for x in xs)
            # ratio: median over rounds of this server / memcached in the
            # same round, which shares the background load best
            ratio = statistics.median(a[0] / b[0] for a, b in zip(xs, results[("memcached 1.6", size)]))
            print("%-16s %-6s %12.0f %7.2fx %9.1f %9.1f %11.2f  %s" % (
                name, "%dB" % size if size < 1024 else "%dKiB" % (size // 1024), ops, ratio, p50, p99,
                cpu, results[("mode", name)]))
        vol = statistics.median(a[0] / b[0] for a, b in zip(results[("cached volatile", size)],
                                                             results[("cached pinned", size)]))
        print("%-16s %-6s volatile/pinned %.2fx (median of per-round ratios)" % ("", "", vol))
    rows, n, size = overheads()
    print("memory per object (%d objects of %d bytes):" % (n, size))
    for name, text in rows:
        print("  %-14s %s" % (name, text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
