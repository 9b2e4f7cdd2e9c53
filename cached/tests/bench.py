#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""make bench: cached against Debian's memcached 1.6 with the same load
tool, threads (-t 2), memory (-m 256) and mix (90% get, 10% set; 100-byte
and 4 KiB values), side by side in one run; then index memory per object
next to memcached's per-item overhead.

For each value size the three servers (memcached, cached --mode pinned,
cached --mode volatile) run at once on their own ports, each warmed with
every key; only one is driven at a time.  Two phases:

  throughput  closed loop (loadgen -t 2 -c 8), BENCH_ROUNDS rounds (40) of
              BENCH_SECONDS (0.5) each per server, the order rotated every round;
              a server's ratio is the median over rounds of its ops/s over
              memcached's in the same round, with a 95% confidence interval
              of that median (sign test on the per-round ratios).
  latency     open loop at one fixed rate for all three, a third of
              memcached's closed-loop throughput (BENCH_RATE overrides):
              p50/p99/p99.9 at the same offered load, medians over
              BENCH_LAT_ROUNDS rounds (12) of BENCH_LAT_SECONDS (1), the
              order rotated; the p99 ratio is the median of the per-round
              ratios to memcached's p99, with its 95% interval.

Then the origin stall (cached alone, -t 1, --origin gen:cost=5000, i.e.
5 ms of CPU per fetch): hits on warmed keys at a fixed open-loop rate
(BENCH_STALL_RATE, 1000/s, loadgen -c 2), their p99 alone and while a
second loadgen (closed loop, -c 8) streams gets of keys never set, each a
fetch; BENCH_STALL_ROUNDS rounds (5) of BENCH_STALL_SECONDS (2), the two
cases alternating, medians over rounds; with the fetch pool (default
--fetch-threads 4) and, once, with --fetch-threads 0 (every fetch in the
worker thread, as before the pool).  BENCH_ONLY=stall runs only this part.
The same with an upstream origin (BENCH_ONLY=upstream, also after the
stall): Debian's memcached behind a proxy that hands every reply back
BENCH_UPSTREAM_MS (5) ms after memcached sent it (the order of the bytes
kept, so pipelined requests stay pipelined), cached -t 1
(BENCH_UPSTREAM_THREADS) --origin memcache:PROXY; memcached holds the
200,000 keys the misses stream over, so each miss is a 5 ms fetch whose
value cached stores.  Three cases: the hits alone, while the misses
stream through cached, and (the control) while the same stream goes to
the origin directly, which shows what the origin's side costs the
machine with cached fetching nothing.  memcached, the proxy and the miss
stream run on the second half of the CPUs, cached and the hit load on
the first, as if the origin and the other clients had machines of their
own (BENCH_UPSTREAM_PIN=0: no pinning).  BENCH_UPSTREAM_ROUNDS rounds
(12) of BENCH_STALL_SECONDS, the order of the cases rotated; the ratio
of the hits' p99 while misses stream to alone, per round, median with
its 95% interval.

Then throughput by worker threads (BENCH_ONLY=threads): memcached and
cached (pinned) at -t 1, -t 2 and -t 4, 100-byte values, loadgen -t 2
-c 8 closed loop, BENCH_THREADS_ROUNDS rounds (8) alternating which server
goes first; the ratio and its 95% interval as above.

Then the scrapes (BENCH_ONLY=scrape): memcached and cached at -t 2 with
BENCH_SCRAPE_ITEMS (1,000,000) small items; gets of 1,000 warmed keys at
BENCH_SCRAPE_RATE (2000/s) open loop, their p99 alone and while another
client loops stats items, stats cachedump 1 0 and stats (tests/scrape.py's
scraper), BENCH_SCRAPE_ROUNDS rounds (12) of BENCH_SCRAPE_SECONDS (2), the
two cases alternating; per server the median of the per-round ratios of
the two p99s, with its 95% interval.

Many short rounds rather than a few long ones: the machine's own drift
(other load, the host of a virtual machine) then hits all three servers
alike, and the interval narrows with the number of rounds.

Load tool: the project's loadgen (../loadgen/loadgen) when it is built,
else memcaslap from libmemcached-tools (throughput only)."""
import json
import math
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
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "40"))
LAT_ROUNDS = int(os.environ.get("BENCH_LAT_ROUNDS", "12"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "0.5"))
LAT_SECONDS = float(os.environ.get("BENCH_LAT_SECONDS", "1"))
RATE = int(os.environ.get("BENCH_RATE", "0"))
KEYS = 10000
STALL_RATE = int(os.environ.get("BENCH_STALL_RATE", "1000"))
STALL_ROUNDS = int(os.environ.get("BENCH_STALL_ROUNDS", "5"))
STALL_SECONDS = float(os.environ.get("BENCH_STALL_SECONDS", "2"))
STALL_COST = 5000
UPSTREAM_MS = float(os.environ.get("BENCH_UPSTREAM_MS", "5"))
UPSTREAM_KEYS = 200000
UPSTREAM_ROUNDS = int(os.environ.get("BENCH_UPSTREAM_ROUNDS", "12"))
UPSTREAM_THREADS = int(os.environ.get("BENCH_UPSTREAM_THREADS", "1"))
ONLY = os.environ.get("BENCH_ONLY", "")
THREADS_ROUNDS = int(os.environ.get("BENCH_THREADS_ROUNDS", "8"))
SCRAPE_ITEMS = int(os.environ.get("BENCH_SCRAPE_ITEMS", "1000000"))
SCRAPE_ROUNDS = int(os.environ.get("BENCH_SCRAPE_ROUNDS", "12"))
SCRAPE_SECONDS = float(os.environ.get("BENCH_SCRAPE_SECONDS", "2"))
SCRAPE_RATE = int(os.environ.get("BENCH_SCRAPE_RATE", "2000"))

SERVERS = [
    ("memcached 1.6", lambda: util.start_memcached("-m", "256")),
    ("cached pinned", lambda: util.start_cached("-m", "256", "--mode", "pinned")),
    ("cached volatile", lambda: util.start_cached("-m", "256", "--mode", "volatile")),
]
BASE = SERVERS[0][0]
SIZES = [int(x) for x in os.environ.get("BENCH_SIZES", "100,4096").split(",")]


def say(msg):
    print("bench: " + msg, file=sys.stderr, flush=True)


def proc_cpu(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def loadgen_argv(port, size):
    return [LOADGEN, "-s", "127.0.0.1:%d" % port, "-t", "2", "-c", "8", "-k", str(KEYS),
            "--gen", "size=%d" % size, "--get-ratio", "0.9", "-q"]


def warm_loadgen(port, size):
    subprocess.run(loadgen_argv(port, size) + ["--warmup", "-n", "1"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)


def run_loadgen(proc, port, size, rate=0):
    """One round: ops/s, p50, p99, p99.9 (us), server CPU us per request."""
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    secs = LAT_SECONDS if rate else SECONDS
    argv = loadgen_argv(port, size) + ["-d", str(secs), "-j", path]
    if rate:
        argv += ["-r", str(rate)]
    c0 = proc_cpu(proc.pid)
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=120)
    c1 = proc_cpu(proc.pid)
    d = json.load(open(path))
    os.unlink(path)
    return (d["ops_per_s"], d["p50_us"], d["p99_us"], d["p999_us"],
            (c1 - c0) * 1e6 / max(d["ops"], 1))


def warm_memcaslap(port, size):
    run_memcaslap(None, port, size)


def run_memcaslap(proc, port, size, rate=0):
    cfg = tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False)
    cfg.write("key\n16 16 1\nvalue\n%d %d 1\ncmd\n0 0.1\n1 0.9\n" % (size, size))
    cfg.close()
    r = subprocess.run(["memcaslap", "-s", "127.0.0.1:%d" % port, "-T", "2", "-c", "16",
                        "-t", "%ds" % max(1, int(SECONDS)), "-F", cfg.name, "-x", str(KEYS)],
                       capture_output=True, text=True, timeout=120)
    os.unlink(cfg.name)
    m = re.findall(r"TPS:\s*(\d+)", r.stdout)
    nan = float("nan")
    return (float(m[-1]) if m else 0.0), nan, nan, nan, nan


def median_ci(xs):
    """Median of xs and a distribution-free interval around it holding the
    true median with >= 95% probability (order statistics, sign test)."""
    xs = sorted(xs)
    n = len(xs)
    k, tail = 0, 0.0
    while k < n // 2:
        p = math.comb(n, k) / 2 ** n
        if 2 * (tail + p) > 0.05:
            break
        tail += p
        k += 1
    if k == 0:
        return statistics.median(xs), float("nan"), float("nan")
    return statistics.median(xs), xs[k - 1], xs[n - k]


def ci_text(lo, hi):
    return "n/a (< 6 rounds)" if math.isnan(lo) else "[%.2f, %.2f]" % (lo, hi)


def rotated(seq, r):
    r %= len(seq)
    return seq[r:] + seq[:r]


def bench_size(size, runner, warm, have_loadgen):
    procs = {}
    try:
        for name, start in SERVERS:
            procs[name] = start()
            warm(procs[name][1], size)
        modes = {name: util.stats(port).get("mode", "-") for name, (_, port) in procs.items()}
        thr = {name: [] for name, _ in SERVERS}
        for r in range(ROUNDS):
            say("%d B: throughput round %d/%d" % (size, r + 1, ROUNDS))
            for name, _ in rotated(SERVERS, r):
                proc, port = procs[name]
                thr[name].append(runner(proc, port, size))
        lat, rate = {}, 0
        if have_loadgen and LAT_ROUNDS > 0:
            rate = RATE or int(round(statistics.median(x[0] for x in thr[BASE]) / 3, -3))
            lat = {name: [] for name, _ in SERVERS}
            for r in range(LAT_ROUNDS):
                say("%d B: latency round %d/%d at %d ops/s" % (size, r + 1, LAT_ROUNDS, rate))
                for name, _ in rotated(SERVERS, r):
                    proc, port = procs[name]
                    lat[name].append(runner(proc, port, size, rate))
    finally:
        for proc, _ in procs.values():
            util.stop(proc)
    return thr, lat, rate, modes


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


def pinned(cpus):
    """A preexec_fn that runs the child on cpus (None: anywhere)."""
    return (lambda: os.sched_setaffinity(0, cpus)) if cpus else None


def pin(pid, cpus):
    """Move every thread of a running process to cpus (None: leave it)."""
    if cpus:
        for tid in os.listdir("/proc/%d/task" % pid):
            os.sched_setaffinity(int(tid), cpus)


def stall_hits(port, seconds, stream, miss_keys=None, stream_port=None, cpus=(None, None)):
    """p99 (us) of hits at STALL_RATE; with stream, while another loadgen
    streams misses (of keys never set, or of miss_keys random keys with the
    prefix "up:", which the upstream holds) at port, or at stream_port (the
    origin itself, for the control).  cpus: where the hit load and the
    stream run.  Returns (p99, hits, misses of the hit load, origin fetches
    made meanwhile)."""
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    base = [LOADGEN, "--get-ratio", "1", "-q"]
    bg = None
    fetches0 = int(util.stats(port)["origin_fetches"])
    if stream:
        # a new key prefix every stream: no round hits what another fetched
        stall_hits.streams += 1
        keys = ["-k", str(miss_keys), "--key-prefix", "up:"] if miss_keys else \
            ["-k", "100000000", "--key-prefix", "miss%d.%d:" % (os.getpid(), stall_hits.streams)]
        bg = subprocess.Popen(base + ["-s", "127.0.0.1:%d" % (stream_port or port),
                                      "-t", "1", "-c", "8"] + keys +
                              ["-d", str(seconds + 1), "-j", path + ".bg"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              preexec_fn=pinned(cpus[1]))
        time.sleep(0.5)     # the stream is under way before the hits start
    subprocess.run(base + ["-s", "127.0.0.1:%d" % port, "-t", "1", "-c", "2", "-k", "1000",
                           "--key-prefix", "hit:", "-r", str(STALL_RATE), "-d", str(seconds),
                           "-j", path],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=600, preexec_fn=pinned(cpus[0]))
    d = json.load(open(path))
    os.unlink(path)
    if bg:
        bg.wait(timeout=600)
        os.unlink(path + ".bg")
    return d["p99_us"], d["hits"], d["misses"], int(util.stats(port)["origin_fetches"]) - fetches0


stall_hits.streams = 0


def warm_hits(port):
    """Set the 1,000 keys the hit load of the origin stall gets."""
    subprocess.run([LOADGEN, "-s", "127.0.0.1:%d" % port, "-k", "1000",
                    "--key-prefix", "hit:", "--warmup", "-n", "1", "-q"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=120)


def stall():
    """The origin stall figures: {fetch_threads: ([alone p99], [stream p99], streamed)}."""
    out = {}
    for threads, rounds in ((4, STALL_ROUNDS), (0, 1)):
        proc, port = util.start_cached("-t", "1", "--fetch-threads", str(threads),
                                       "--origin", "gen:cost=%d" % STALL_COST)
        try:
            warm_hits(port)
            alone, busy, streamed = [], [], 0
            for r in range(rounds):
                say("origin stall, --fetch-threads %d: round %d/%d" % (threads, r + 1, rounds))
                for stream in ((False, True) if r % 2 == 0 else (True, False)):
                    p99, hits, misses, n = stall_hits(port, STALL_SECONDS, stream)
                    if misses:
                        raise RuntimeError("the hit load missed %d times" % misses)
                    (busy if stream else alone).append(p99)
                    streamed += n
            out[threads] = (alone, busy, streamed)
        finally:
            util.stop(proc)
    return out


def delay_proxy(port, target, delay, cpus=None):
    """Serve forever on port (in a child process, on cpus): bytes from a
    client go to target at once; target's bytes go back delay seconds after
    they arrived, in order, so pipelined requests stay pipelined."""
    import asyncio
    if cpus:
        os.sched_setaffinity(0, cpus)

    async def forward(reader, writer, lag):
        loop = asyncio.get_running_loop()
        queue = asyncio.Queue()

        async def send():
            while True:
                t, data = await queue.get()
                if not data:
                    break
                wait = t + lag - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(data)
                await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()     # a half-close goes through as one
        task = asyncio.create_task(send())
        while True:
            data = await reader.read(65536)
            queue.put_nowait((loop.time(), data))
            if not data:
                break
        await task

    async def handle(creader, cwriter):
        ureader, uwriter = await asyncio.open_connection("127.0.0.1", target)
        await asyncio.gather(forward(creader, uwriter, 0), forward(ureader, cwriter, delay),
                             return_exceptions=True)
        uwriter.close()
        cwriter.close()

    async def serve():
        server = await asyncio.start_server(handle, "127.0.0.1", port)
        await server.serve_forever()
    asyncio.run(serve())


def upstream_cpus():
    """(cached and the hit load, the origin and the miss stream): two CPU
    sets, so that the origin and the client streaming misses run as on
    machines of their own and the figure is cached's; (None, None) when
    BENCH_UPSTREAM_PIN=0 or with one CPU."""
    cpus = sorted(os.sched_getaffinity(0))
    if os.environ.get("BENCH_UPSTREAM_PIN", "1") == "0" or len(cpus) < 2:
        return None, None
    half = len(cpus) // 2
    return set(cpus[:half]), set(cpus[half:])


def upstream_stall():
    """The hits' p99 alone, while misses stream through cached (each a
    fetch from an upstream memcached that answers in UPSTREAM_MS), and
    while the same stream goes to the origin directly (the control: what
    the origin's side costs the machine without cached fetching anything):
    (alone, busy, control, fetches, measured round trip of the proxy in ms,
    cpus)."""
    import multiprocessing
    cpus = upstream_cpus()
    mproc, mport = util.start_memcached("-m", "256", "-t", "1")
    pin(mproc.pid, cpus[1])
    pport = util.free_port()
    px = multiprocessing.get_context("fork").Process(
        target=delay_proxy, args=(pport, mport, UPSTREAM_MS / 1000.0, cpus[1]), daemon=True)
    px.start()
    proc = None
    try:
        for _ in range(250):    # the proxy listens
            try:
                util.command(pport, b"version\r\n")
                break
            except OSError:
                time.sleep(0.02)
        say("upstream: %d keys into memcached" % UPSTREAM_KEYS)
        subprocess.run([LOADGEN, "-s", "127.0.0.1:%d" % mport, "-k", str(UPSTREAM_KEYS),
                        "--key-prefix", "up:", "--warmup", "-n", "1", "-q"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=300)
        import socket
        sk = socket.create_connection(("127.0.0.1", pport))
        t = time.monotonic()
        for _ in range(10):
            sk.sendall(b"version\r\n")
            if not sk.recv(100).startswith(b"VERSION"):
                raise RuntimeError("the proxy does not answer")
        rtt = (time.monotonic() - t) / 10 * 1e3
        sk.close()
        proc, port = util.start_cached("-t", str(UPSTREAM_THREADS), "-m", "64",
                                       "--origin", "memcache:127.0.0.1:%d" % pport)
        pin(proc.pid, cpus[0])
        warm_hits(port)
        res = {"alone": [], "busy": [], "control": []}
        streamed = 0
        for r in range(UPSTREAM_ROUNDS):
            say("origin stall, upstream at %g ms: round %d/%d" % (UPSTREAM_MS, r + 1, UPSTREAM_ROUNDS))
            for case in rotated(["alone", "busy", "control"], r):
                p99, hits, misses, n = stall_hits(
                    port, STALL_SECONDS, case != "alone", UPSTREAM_KEYS,
                    pport if case == "control" else None, cpus)
                if misses:
                    raise RuntimeError("the hit load missed %d times" % misses)
                res[case].append(p99)
                if case == "busy":
                    streamed += n
        return res["alone"], res["busy"], res["control"], streamed, rtt, cpus
    finally:
        if proc:
            util.stop(proc)
        px.terminate()
        px.join(10)
        util.stop(mproc)


def cpu_text(cpus):
    return ",".join(str(c) for c in sorted(cpus))


def print_upstream(res):
    alone, busy, control, streamed, rtt, cpus = res
    med, lo, hi = median_ci([b / max(a, 1.0) for a, b in zip(alone, busy)])
    cmed, clo, chi = median_ci([b / max(a, 1.0) for a, b in zip(alone, control)])
    where = ("cached and the hit load on CPU %s, memcached, the proxy and the miss stream on CPU %s "
             "(as on machines of their own)" % (cpu_text(cpus[0]), cpu_text(cpus[1]))
             if cpus[0] else "no CPU pinning")
    print()
    print("origin stall, upstream: cached -t %d -m 64 --origin memcache: Debian's memcached behind "
          "a proxy that answers in %g ms (a version round trip through it: %.1f ms); hits on 1,000 "
          "warmed keys at %d/s open loop (loadgen -c 2), p99 alone, while loadgen -c 8 streams "
          "misses over %d keys memcached holds through cached, and (control) while the same "
          "stream goes to the origin directly; %s; %d rounds of %gs, the order rotated; ratio: "
          "median over rounds of p99 with misses / p99 alone, [95%% CI]" %
          (UPSTREAM_THREADS, UPSTREAM_MS, rtt, STALL_RATE, UPSTREAM_KEYS, where, len(alone),
           STALL_SECONDS))
    print("%16s %24s %8s %17s %9s %24s %17s" % (
        "hit p99 alone, ms", "hit p99 w/ misses, ms", "ratio", "95% CI", "fetches",
        "control: misses direct", "control ratio"))

    def cell(xs):
        return "%.2f [%.2f, %.2f]" % (statistics.median(xs) / 1e3, min(xs) / 1e3, max(xs) / 1e3)
    print("%16s %24s %7.2fx %17s %9d %24s %7.2fx %s" % (
        cell(alone), cell(busy), med, ci_text(lo, hi), streamed, cell(control), cmed,
        ci_text(clo, chi)))


def print_stall(res):
    print()
    print("origin stall: cached -t 1 --origin gen:cost=%d (%d ms of CPU per fetch); hits on "
          "1,000 warmed keys at %d/s open loop (loadgen -c 2), p99 alone and while loadgen -c 8 "
          "streams misses of keys never set; median over rounds of %gs [min, max]" %
          (STALL_COST, STALL_COST // 1000, STALL_RATE, STALL_SECONDS))
    print("%-16s %6s %24s %24s %9s" % ("fetch threads", "rounds", "hit p99 alone, ms",
                                       "hit p99 w/ misses, ms", "fetches"))

    def cell(xs):
        return "%8.1f [%.1f, %.1f]" % (statistics.median(xs) / 1e3, min(xs) / 1e3, max(xs) / 1e3)
    for threads, (alone, busy, streamed) in res.items():
        print("%-16s %6d %24s %24s %9d" % (
            "%d%s" % (threads, " (default)" if threads == 4 else " (inline)"), len(alone),
            cell(alone), cell(busy), streamed))


def threads_bench():
    """Throughput at -t 1, 2, 4: {t: [(memcached ops/s, cached ops/s)]},
    THREADS_ROUNDS rounds alternating which server goes first."""
    out = {}
    for t in (1, 2, 4):
        m, mport = util.start_memcached("-m", "256", "-t", str(t))
        c, cport = util.start_cached("-m", "256", "-t", str(t))
        try:
            for port in (mport, cport):
                warm_loadgen(port, 100)
            rows = []
            for r in range(THREADS_ROUNDS):
                say("-t %d: throughput round %d/%d" % (t, r + 1, THREADS_ROUNDS))
                res = {}
                for name, proc, port in rotated([("m", m, mport), ("c", c, cport)], r):
                    res[name] = run_loadgen(proc, port, 100)[0]
                rows.append((res["m"], res["c"]))
            out[t] = rows
        finally:
            util.stop(m)
            util.stop(c)
    return out


def print_threads(res):
    print()
    print("throughput by worker threads: closed loop (loadgen -t 2 -c 8, 100-byte values, "
          "90%% get), %d rounds of %gs per server, alternating which goes first" %
          (THREADS_ROUNDS, SECONDS))
    print("%-4s %14s %14s %8s %17s" % ("-t", "memcached op/s", "cached op/s", "ratio", "95% CI"))
    for t, rows in res.items():
        med, lo, hi = median_ci([c / m for m, c in rows])
        print("%-4d %14.0f %14.0f %7.2fx %17s" % (
            t, statistics.median(m for m, _ in rows), statistics.median(c for _, c in rows),
            med, ci_text(lo, hi)))


def scrape_bench():
    """The gets' p99 alone and while another client loops stats items and
    stats cachedump over SCRAPE_ITEMS items, for memcached and cached:
    {name: ([alone p99 us], [scraping p99 us], scrape rounds)}."""
    import multiprocessing
    import socket
    import scrape
    out = {}
    for name, start in (("memcached 1.6", lambda: util.start_memcached("-m", "1024", "-t", "2")),
                        ("cached", lambda: util.start_cached("-m", "1024", "-t", "2"))):
        proc, port = start()
        try:
            say("%s: %d items for the scrapes" % (name, SCRAPE_ITEMS))
            for i in range(0, SCRAPE_ITEMS, 100000):
                data = b"".join(b"set k%d 0 0 4 noreply\r\nvvvv\r\n" % j
                                for j in range(i, min(i + 100000, SCRAPE_ITEMS)))
                if util.command(port, data + b"version\r\n", timeout=120)[:8] != b"VERSION ":
                    raise RuntimeError("%s: the fill failed" % name)
            subprocess.run([LOADGEN, "-s", "127.0.0.1:%d" % port, "-k", "1000",
                            "--key-prefix", "hit:", "--warmup", "-n", "1", "-q"],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=120)
            ctx = multiprocessing.get_context("fork")
            scraping, stop, in_round = ctx.Event(), ctx.Event(), ctx.Event()
            rounds = ctx.Value("l", 0)
            sc = socket.create_connection(("127.0.0.1", port))
            sp = ctx.Process(target=scrape.scraper, args=(sc, scraping, rounds, stop, in_round),
                             daemon=True)
            sp.start()
            alone, busy = [], []
            for r in range(SCRAPE_ROUNDS):
                say("%s: scrape round %d/%d" % (name, r + 1, SCRAPE_ROUNDS))
                for on in ((False, True) if r % 2 == 0 else (True, False)):
                    if on:
                        scraping.set()
                        time.sleep(0.3)
                    fd, path = tempfile.mkstemp(suffix=".json")
                    os.close(fd)
                    subprocess.run([LOADGEN, "-s", "127.0.0.1:%d" % port, "--get-ratio", "1",
                                    "-q", "-t", "1", "-c", "2", "-k", "1000", "--key-prefix",
                                    "hit:", "-r", str(SCRAPE_RATE), "-d", str(SCRAPE_SECONDS),
                                    "-j", path], check=True, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, timeout=600)
                    scraping.clear()
                    scrape.wait_idle(in_round)  # no round runs into the next phase
                    d = json.load(open(path))
                    os.unlink(path)
                    if d["misses"]:
                        raise RuntimeError("the hit load missed %d times" % d["misses"])
                    (busy if on else alone).append(d["p99_us"])
            stop.set()
            sp.join(120)
            sc.close()
            out[name] = (alone, busy, rounds.value)
        finally:
            util.stop(proc)
    return out


def print_scrape(res):
    print()
    print("scrapes: -t 2, %d items of 4 bytes; gets of 1,000 warmed keys at %d/s open loop "
          "(loadgen -c 2), p99 alone and while another client loops stats items, "
          "stats cachedump 1 0 and stats (0.1 s apart); %d rounds of %gs each, "
          "alternating; ratio: median over rounds of p99 scraping / p99 alone, [95%% CI]" %
          (SCRAPE_ITEMS, SCRAPE_RATE, SCRAPE_ROUNDS, SCRAPE_SECONDS))
    print("%-14s %16s %18s %8s %17s %8s" % ("server", "p99 alone, ms", "p99 scraping, ms",
                                             "ratio", "95% CI", "scrapes"))
    for name, (alone, busy, n) in res.items():
        med, lo, hi = median_ci([b / max(a, 1.0) for a, b in zip(alone, busy)])
        print("%-14s %16.2f %18.2f %7.2fx %17s %8d" % (
            name, statistics.median(alone) / 1e3, statistics.median(busy) / 1e3, med,
            ci_text(lo, hi), n))


def label(size):
    return "%dB" % size if size < 1024 else "%dKiB" % (size // 1024)


def main():
    have_loadgen = os.access(LOADGEN, os.X_OK)
    if not have_loadgen and not shutil.which("memcaslap"):
        print("bench: neither loadgen nor memcaslap found")
        return 1
    if ROUNDS < 1 or SECONDS <= 0 or LAT_ROUNDS < 0 or LAT_SECONDS <= 0:
        print("bench: BENCH_ROUNDS must be >= 1, BENCH_LAT_ROUNDS >= 0, "
              "BENCH_SECONDS and BENCH_LAT_SECONDS > 0")
        return 1
    if ONLY in ("threads", "scrape"):
        if not have_loadgen:
            print("bench: the %s figures need loadgen" % ONLY)
            return 1
        print("load average before the run: %s" % open("/proc/loadavg").read().split()[0])
        if ONLY == "threads":
            print_threads(threads_bench())
        else:
            print_scrape(scrape_bench())
        return 0
    if ONLY in ("stall", "upstream"):
        if not have_loadgen:
            print("bench: the origin stall needs loadgen")
            return 1
        print("load average before the run: %s" % open("/proc/loadavg").read().split()[0])
        if ONLY == "stall":
            print_stall(stall())
        print_upstream(upstream_stall())
        return 0
    tool = "loadgen -t 2 -c 8" if have_loadgen else "memcaslap -T 2 -c 16"
    runner = run_loadgen if have_loadgen else run_memcaslap
    warm = warm_loadgen if have_loadgen else warm_memcaslap
    load = open("/proc/loadavg").read().split()[0]
    results = {size: bench_size(size, runner, warm, have_loadgen) for size in SIZES}

    print("cached vs memcached: -t 2, -m 256, %d keys, 90%% get / 10%% set, %s" % (KEYS, tool))
    print("load average before the run: %s" % load)
    print()
    print("throughput: closed loop, %d rounds of %gs per server, order rotated each round" %
          (ROUNDS, SECONDS))
    print("ratio: median over rounds of ops/s / memcached's ops/s in the same round, "
          "[95% confidence interval]")
    print("%-16s %-6s %10s %7s %17s %9s %9s %10s  %s" % (
        "server", "value", "ops/s", "ratio", "95% CI", "p50 us", "p99 us", "cpu us/op", "mode"))
    for size in SIZES:
        thr, _, _, modes = results[size]
        for name, _ in SERVERS:
            xs = thr[name]
            med, lo, hi = median_ci([a[0] / b[0] for a, b in zip(xs, thr[BASE])])
            print("%-16s %-6s %10.0f %6.2fx %17s %9.1f %9.1f %10.2f  %s" % (
                name, label(size), statistics.median(x[0] for x in xs), med,
                ci_text(lo, hi), statistics.median(x[1] for x in xs),
                statistics.median(x[2] for x in xs), statistics.median(x[4] for x in xs),
                modes[name]))
        med, lo, hi = median_ci([a[0] / b[0] for a, b in zip(thr["cached volatile"],
                                                             thr["cached pinned"])])
        print("%-16s %-6s volatile/pinned %.2fx %s" % ("", "", med, ci_text(lo, hi)))
    if any(results[s][1] for s in SIZES):
        print()
        print("latency: open loop, the same offered rate for every server (a third of "
              "memcached's closed-loop ops/s), %d rounds of %gs, medians" %
              (LAT_ROUNDS, LAT_SECONDS))
        print("p99 ratio: median over rounds of p99 / memcached's p99 in the same round, "
              "[95% confidence interval]")
        print("%-16s %-6s %9s %9s %9s %9s %10s %9s %17s" % (
            "server", "value", "rate", "ops/s", "p50 us", "p99 us", "p99.9 us",
            "p99 ratio", "95% CI"))
        for size in SIZES:
            _, lat, rate, _ = results[size]
            for name, _ in SERVERS:
                xs = lat[name]
                med, lo, hi = median_ci([a[2] / max(b[2], 1e-3) for a, b in zip(xs, lat[BASE])])
                print("%-16s %-6s %9d %9.0f %9.1f %9.1f %10.1f %8.2fx %17s" % (
                    name, label(size), rate, statistics.median(x[0] for x in xs),
                    statistics.median(x[1] for x in xs),
                    statistics.median(x[2] for x in xs),
                    statistics.median(x[3] for x in xs), med, ci_text(lo, hi)))
    if have_loadgen and STALL_ROUNDS > 0:
        print_stall(stall())
    if have_loadgen and UPSTREAM_ROUNDS > 0:
        print_upstream(upstream_stall())
    if have_loadgen and THREADS_ROUNDS > 0:
        print_threads(threads_bench())
    if have_loadgen and SCRAPE_ROUNDS > 0:
        print_scrape(scrape_bench())
    rows, n, size = overheads()
    print()
    print("memory per object (%d objects of %d bytes):" % (n, size))
    for name, text in rows:
        print("  %-14s %s" % (name, text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
