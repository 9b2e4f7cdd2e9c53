#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""report.py - the pressure experiment's report, from the guests' run folders.

usage: scripts/report.py --runs-dir DIR [--runs-dir DIR ...] --out DIR

Each --runs-dir (the runs folder of scripts/demo.sh) holds scenario.conf,
host.env and one folder per run and mode, MODE-RUN/, with the runner's
folder guest/ (qemu-cmd, exit-status, out/ as written by
image/guest/experiment.sh) and host-load.env; a sweep's runs folder holds
one such folder per cell instead.  Several --runs-dir make one report of
several scenarios (make experiment).

Writes into --out:
  summary.json   per scenario and mode, every figure's mean, stddev and 95%
                 confidence interval (Student's t) over the runs, the hit
                 rate by phase, unavailable modes, skipped scenarios; the
                 top-level "modes" is the default scenario's (or the only
                 scenario's)
  details.json   per run, every metric
  samples.csv, load.csv   every run's samples and loadgen intervals on one
                 time axis (seconds since the measured load started)
  timeline-S, tradeoff-S, latency-S (and sweep-S) as .png and .svg per
                 scenario S; their data under plot-data/
  report.md, index.html (self-contained), summary.txt (what demo.sh prints)
Python standard library and gnuplot only.
"""
import argparse
import csv
import glob
import html
import json
import os
import re
import shutil
import subprocess
import sys

from reportlib import (OKABE_ITO, fmt_value, gq, html_table, inline_svg, md_inline, md_table,
                       mean_ci, num, read_env, read_kv, read_stats, read_text, text_table)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT_PREFIX = os.path.dirname(HERE) + "/"
MODES_TAB = os.path.join(HERE, "scenarios", "modes.tab")
MODE_COLOR = {"pinned": OKABE_ITO["vermillion"], "psi": OKABE_ITO["orange"], "volatile": OKABE_ITO["blue"],
              "madvfree": OKABE_ITO["purple"], "nopressure": OKABE_ITO["green"], "rightsized": OKABE_ITO["sky"],
              "psi-gentle": OKABE_ITO["yellow"], "psi-eager": OKABE_ITO["black"]}
# Phases of the measured load and the bucket each counts in.
PHASE_BUCKET = {"steady": "before", "pressure": "pressure", "relief": "after", "recovery": "after"}
BUCKETS = ["before", "pressure", "after"]
# Per-run figures: summary.json gives each one's mean and ci95 per mode.
METRICS = ["hit_rate", "p50_us", "p99_us", "max_us", "verify_errors", "oom_kills", "stress_bogo_ops",
           "purged_ranges", "purged_pages", "rebuilds", "errors", "unfinished", "misses_purged", "hits_rebuilt", "p99_pressure_us",
           "psi_some_ms", "psi_full_ms", "swap_out_pages", "min_mem_available_kb", "daemon_survived",
           "psi_events", "psi_dropped_bytes", "origin_fetches", "cache_mb", "host_load1", "host_cpu_busy_pct"]
UNIT = {"hit_rate": "%", "p50_us": "us", "p99_us": "us", "max_us": "us", "p99_pressure_us": "us"}


def read_modes_tab(path=MODES_TAB):
    """modes.tab as an ordered list of (mode, daemon, size, stressor, text)."""
    out = []
    for line in read_text(path).splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        p = line.split(None, 5)
        if len(p) == 6:
            out.append((p[0], p[1], p[2], p[3], p[5]))
    return out


MODE_TABLE = read_modes_tab()
MODE_ORDER = [m[0] for m in MODE_TABLE]
MODE_TEXT = {m[0]: m[4] for m in MODE_TABLE}


def number(s):
    """s as an int or float, else None."""
    v = num(s)
    return v if isinstance(v, (int, float)) else None


def fmt(v, key=""):
    """A metric's value in the report's one number format."""
    if v is None:
        return "n/a"
    if key.startswith("hit_rate"):
        return fmt_value(100 * v, "%")
    return fmt_value(v, UNIT.get(key, "us" if key.endswith("_us") else ""))


def fmt_ci(d, key):
    """mean [lo, hi] of a mean_ci dict, or the mean alone for one run."""
    if not d or d.get("mean") is None:
        return "n/a"
    s = fmt(d["mean"], key)
    if d.get("ci95"):
        lo, hi = d["ci95"]
        if key.startswith("hit_rate"):
            s += " [%.1f, %.1f]" % (100 * lo, 100 * hi)
        else:
            s += " [%s, %s]" % (fmt(max(lo, 0), key), fmt(hi, key))
    return s


class Run:
    """One guest: one mode, one run."""

    def __init__(self, folder):
        self.folder = folder
        self.name = os.path.basename(folder)
        self.mode, _, run = self.name.rpartition("-")
        self.run = int(run) if run.isdigit() else 0
        self.guest = os.path.join(folder, "guest")
        self.out = os.path.join(self.guest, "out")
        self.status = read_text(os.path.join(self.out, "exit-status"), "missing").strip()
        self.unavailable = read_text(os.path.join(self.out, "unavailable")).strip()
        self.skipped = read_text(os.path.join(self.out, "skipped")).strip()
        self.host_load = read_env(os.path.join(folder, "host-load.env"))
        console = read_text(os.path.join(self.guest, "console.log"))
        warnings = read_text(os.path.join(self.guest, "warnings.txt")).splitlines()
        traces = sum(1 for w in warnings if "Call Trace:" in w)
        ooms = console.count("invoked oom-killer")
        # Kernel warnings that are not the call traces of OOM reports.
        self.kernel_warnings = [w for w in warnings if "Call Trace:" not in w]
        if traces > ooms:
            self.kernel_warnings.append("%d call trace(s) beyond the %d OOM report(s)" % (traces, ooms))
        self.info = read_env(os.path.join(self.out, "info.env"))
        self.qemu_cmd = read_text(os.path.join(self.guest, "qemu-cmd")).strip()
        self.ok = not self.unavailable and not self.skipped and self.status == "0" \
            and os.path.exists(os.path.join(self.out, "samples.csv")) and os.path.exists(os.path.join(self.out, "load.json"))
        self.problem = "" if self.ok else "guest status %s" % self.status
        # The guest's clock: a TSC calibrated at the wrong rate (a starved
        # TCG guest) makes every time, sleep and rate of the run wrong.
        m = re.findall(r"tsc: Detected ([0-9.]+) MHz", console)
        cs = re.findall(r"Switched to clocksource (\S+)", console)
        self.guest_tsc_mhz = float(m[-1]) if m else None
        self.clocksource = cs[-1] if cs else "?"
        host_khz = re.search(r"tsc_early_khz=(\d+)", self.qemu_cmd)
        host_mhz = int(host_khz.group(1)) / 1000 if host_khz else None
        if self.ok and host_mhz and self.guest_tsc_mhz and self.clocksource.startswith("tsc") \
                and abs(self.guest_tsc_mhz / host_mhz - 1) > 0.05:
            self.ok = False
            self.problem = "guest clock wrong: TSC taken as %.0f MHz, host %.0f MHz" % (self.guest_tsc_mhz, host_mhz)
        if not self.ok:
            return
        self.t0 = float(read_text(os.path.join(self.out, "load-start.txt"), "0").strip() or 0)
        self.phases = []
        for line in read_text(os.path.join(self.out, "phases.txt")).splitlines():
            p = line.split()
            if len(p) == 2:
                self.phases.append((float(p[0]) - self.t0, p[1]))
        self.samples = []
        with open(os.path.join(self.out, "samples.csv")) as f:
            for row in csv.DictReader(f):
                r = {k: num(v) if v not in ("", None) else None for k, v in row.items()}
                r["t"] = float(row["t"]) - self.t0
                r["phase"] = row["phase"]
                self.samples.append(r)
        self.intervals = []
        for line in read_text(os.path.join(self.out, "load.jsonl")).splitlines():
            if line.startswith("{"):
                try:
                    self.intervals.append(json.loads(line))
                except ValueError:
                    pass
        with open(os.path.join(self.out, "load.json")) as f:
            self.load = json.load(f)
        self.stats0 = read_stats(os.path.join(self.out, "stats-start.txt"))
        self.stats1 = read_stats(os.path.join(self.out, "stats-end.txt"))
        self.vm0 = read_kv(os.path.join(self.out, "vmstat-start.txt"))
        self.vm1 = read_kv(os.path.join(self.out, "vmstat-end.txt"))
        self.stress = "".join(read_text(p) for p in sorted(glob.glob(os.path.join(self.out, "stress*.txt"))))
        self.stress_yaml = "".join(read_text(p) for p in sorted(glob.glob(os.path.join(self.out, "stress*.yaml"))))
        self.oom_lines = read_text(os.path.join(self.out, "oom.txt")).splitlines()
        self.metrics = self.compute()

    def vm_delta(self, key, col):
        last = self.samples[-1]
        return self.vm1.get(key, last.get(col) or 0) - self.vm0.get(key, 0)

    def due_gets(self):
        """The gets loadgen sent, and those it still held unsent when it
        was stopped (its unfinished get and mg requests)."""
        cmds = self.load.get("commands") or {}
        return self.load.get("gets", 0) + sum((cmds.get(c) or {}).get("unfinished", 0) for c in ("get", "mg"))

    def phase_hits(self):
        """Gets and cache hits per phase bucket, from the differences of
        consecutive samples, each counted in the phase of the later one.
        When the daemon was down, the gets that were due count as misses:
        those loadgen sent, or at least the run's rate of due gets (sent
        and unsent) over the stretch."""
        acc = {b: [0, 0] for b in BUCKETS}
        due_rate = self.due_gets() / self.load["duration_s"] if self.load.get("duration_s") else 0
        prev = None
        for s in self.samples:
            b = PHASE_BUCKET.get(s["phase"])
            if prev is not None and b:
                if s.get("daemon_up") == 1 and prev.get("daemon_up") == 1 and s.get("cmd_get") is not None \
                        and prev.get("cmd_get") is not None:
                    g = s["cmd_get"] - prev["cmd_get"]
                    h = (s["get_hits"] - prev["get_hits"]) - (s["origin_fetches"] - prev["origin_fetches"])
                else:
                    g = sum(i.get("gets", 0) for i in self.intervals if prev["t"] < i["t"] <= s["t"])
                    if s["t"] > 0:
                        g = max(g, round(due_rate * (s["t"] - max(prev["t"], 0))))
                    h = 0
                acc[b][0] += g
                acc[b][1] += h
            prev = s
        return acc

    def compute(self):
        m = {}
        ld = self.load
        gets = ld.get("gets", 0)
        survived = bool(self.stats1)
        s0, s1 = self.stats0, self.stats1
        acc = self.phase_hits()
        # The cache's own hits: gets answered from memory, not rebuilt from
        # the origin (the daemon counts an origin fill as a hit).
        if survived and s0:
            hits = (s1["get_hits"] - s0["get_hits"]) - (s1.get("origin_fetches", 0) - s0.get("origin_fetches", 0))
            gets = (s1.get("cmd_get", 0) - s0.get("cmd_get", 0)) or gets
        else:
            # A dead daemon answers nothing: the gets that were due count,
            # with those loadgen still held unsent when it was stopped (a
            # daemon that died before the measured load left only those).
            hits = sum(a[1] for a in acc.values())
            gets = max(self.due_gets(), sum(a[0] for a in acc.values()))
        m["hit_rate"] = hits / gets if gets else None
        for b in BUCKETS:
            m["hit_rate_" + b] = acc[b][1] / acc[b][0] if acc[b][0] else None
        for k in ("p50_us", "p99_us", "max_us", "verify_errors", "errors", "unfinished", "misses_purged", "hits_rebuilt"):
            m[k] = ld.get(k)
        m["oom_kills"] = self.vm_delta("oom_kill", "oom_kill")
        bogo = [int(x) for x in re.findall(r"bogo-ops:\s*(\d+)", self.stress_yaml)]
        if not bogo:
            bogo = [int(x) for x in re.findall(r"\]\s+vm\s+(\d+)\s", self.stress)]
        m["stress_bogo_ops"] = sum(bogo) if bogo else 0
        m["daemon_oom_killed"] = sum(1 for x in self.oom_lines if re.search(r"Killed process \d+ \(cached\)", x))
        m["purged_ranges"] = self.vm_delta("volatile_purged_ranges", "purged_ranges")
        if survived and s0 and s1.get("mode") == "madvfree":
            # MADV_FREE has no counter of its own: the segments the daemon
            # found freed (a page's cookie read 0) stand for purged ranges
            m["purged_ranges"] = s1.get("purged_ranges", 0) - s0.get("purged_ranges", 0)
        m["purged_pages"] = self.vm_delta("volatile_purged_pages", "purged_pages")
        m["swap_out_pages"] = self.vm_delta("pswpout", "pswpout")
        for k in ("rebuilds", "purged_objects", "psi_events", "psi_dropped_bytes", "origin_fetches"):
            if survived and s0:
                m[k] = s1.get(k, 0) - s0.get(k, 0)
            else:
                rows = [r for r in self.samples if r.get("daemon_up") == 1 and r.get(k) is not None and r["t"] >= 0]
                m[k] = rows[-1][k] - rows[0][k] if len(rows) > 1 else 0
        m["daemon_verify_errors"] = s1.get("verify_errors", 0) if survived else None
        m["daemon_survived"] = 1 if survived else 0
        tp = [t for t, p in self.phases if p == "pressure"]
        te = [t for t, p in self.phases if p == "recovery"]
        pr = [i["p99_us"] for i in self.intervals if tp and te and tp[0] <= i["t"] <= te[0] + 1 and i.get("ops")]
        m["p99_pressure_us"] = max(pr) if pr else None
        psi = [r for r in self.samples if r["t"] >= 0]
        m["psi_some_ms"] = (psi[-1]["psi_some_us"] - psi[0]["psi_some_us"]) / 1000 if len(psi) > 1 else 0
        m["psi_full_ms"] = (psi[-1]["psi_full_us"] - psi[0]["psi_full_us"]) / 1000 if len(psi) > 1 else 0
        m["min_mem_available_kb"] = min(r["mem_available_kb"] for r in self.samples)
        m["cache_mb"] = number(self.info.get("cache_mb"))
        m["host_load1"] = number(self.host_load.get("host_load1_end"))
        m["host_cpu_busy_pct"] = number(self.host_load.get("host_cpu_busy_pct"))
        return m

    def histogram(self):
        return self.load.get("histogram", {}).get("buckets", [])


class Scenario:
    """One scenario (or one cell of a sweep): its runs, per mode."""

    def __init__(self, runs_dir):
        self.dir = runs_dir
        self.conf = read_env(os.path.join(runs_dir, "scenario.conf"))
        self.host = read_env(os.path.join(runs_dir, "host.env"))
        self.name = self.conf.get("NAME", os.path.basename(runs_dir))
        self.sweep_of = self.conf.get("SWEEP_OF")
        self.slug = re.sub(r"[^A-Za-z0-9_.-]", "-", self.name)
        self.runs = []
        for name in sorted(os.listdir(runs_dir)):
            p = os.path.join(runs_dir, name)
            if os.path.isdir(os.path.join(p, "guest")):
                self.runs.append(Run(p))
        listed = self.conf.get("MODES", " ".join(MODE_ORDER)).split()
        self.modes = [m for m in MODE_ORDER if m in listed] + [m for m in listed if m not in MODE_ORDER]
        self.skipped = read_text(os.path.join(runs_dir, "skipped")).strip() or \
            next((r.skipped for r in self.runs if r.skipped), "")
        self.unavailable = {}
        for r in self.runs:
            if r.unavailable:
                self.unavailable[r.mode] = r.unavailable
        for p in glob.glob(os.path.join(runs_dir, "unavailable-*")):
            self.unavailable.setdefault(os.path.basename(p)[len("unavailable-"):], read_text(p).strip())
        self.good = [r for r in self.runs if r.ok]
        self.failed = [r for r in self.runs if not r.ok and not r.unavailable and not r.skipped]
        self.by_mode = {m: sorted([r for r in self.good if r.mode == m], key=lambda r: r.run) for m in self.modes}
        self.stats = {}
        for m in self.modes:
            rs = self.by_mode[m]
            d = {"runs": len(rs)}
            for k in METRICS:
                d[k] = mean_ci([r.metrics.get(k) for r in rs])
            d["hit_rate_by_phase"] = {b: mean_ci([r.metrics.get("hit_rate_" + b) for r in rs]) for b in BUCKETS}
            self.stats[m] = d

    def get(self, mode, key, bucket=None):
        d = self.stats.get(mode, {})
        d = d.get("hit_rate_by_phase", {}).get(bucket) if bucket else d.get(key)
        return d.get("mean") if isinstance(d, dict) else None

    def ci(self, mode, key, bucket=None):
        d = self.stats.get(mode, {})
        d = d.get("hit_rate_by_phase", {}).get(bucket) if bucket else d.get(key)
        return d.get("ci95") if isinstance(d, dict) else None

    def measured(self):
        """The modes with at least one good run."""
        return [m for m in self.modes if self.by_mode.get(m)]

    def summary_json(self):
        out = {"description": self.conf.get("DESCRIPTION", ""), "skipped": self.skipped or None,
               "params": {k: self.conf.get(k) for k in ("MEM_MB", "CACHE_MB", "STRESS_MB", "IDLE_S", "RATE",
                                                        "PRESSURE_STEPS", "SWAP_MB", "CONTAINER",
                                                        "DAEMON_MEM_MAX_MB") if self.conf.get(k)},
               "failed_runs": ["%s-%d: %s" % (r.mode, r.run, r.problem) for r in self.failed],
               "modes": {}}
        if self.sweep_of:
            out["sweep_of"] = self.sweep_of
        for m in self.modes:
            if m in self.unavailable and not self.by_mode.get(m):
                out["modes"][m] = {"runs": 0, "unavailable": self.unavailable[m]}
            elif self.by_mode.get(m):
                out["modes"][m] = self.stats[m]
        return out


# ---- figures -----------------------------------------------------------

# The gnuplot files are published with the report (plot-data/): they state
# their licence as every source file of the project does.
GP_SPDX = "# SPDX-License-Identifier: GPL-2.0-only\n"


class Plotter:
    def __init__(self, out):
        self.out = out
        self.ddir = os.path.join(out, "plot-data")
        os.makedirs(self.ddir, exist_ok=True)

    def data(self, name, rows):
        """Write rows (lists) as a whitespace data file; a None row is a
        blank line (a break between series).  Returns its path."""
        p = os.path.join(self.ddir, name)
        with open(p, "w") as f:
            for r in rows:
                f.write("\n" if r is None else " ".join(str(x) for x in r) + "\n")
        return p

    def render(self, name, body, w, h):
        """Run the gnuplot commands body into NAME.svg and NAME.png."""
        gp = os.path.join(self.ddir, name + ".gp")
        bp = os.path.join(self.ddir, name + ".body.gp")
        with open(bp, "w") as f:
            f.write(GP_SPDX + "reset\n" + body + "\n")
        svg, png = os.path.join(self.out, name + ".svg"), os.path.join(self.out, name + ".png")
        with open(gp, "w") as f:
            f.write(GP_SPDX + "set terminal svg size %d,%d dynamic noenhanced font 'sans,11' background '#ffffff'\n"
                    "set output '%s'\nload '%s'\nunset output\n"
                    "set terminal pngcairo size %d,%d noenhanced font 'sans,10' background '#ffffff'\n"
                    "set output '%s'\nload '%s'\nunset output\n" % (w, h, gq(svg), gq(bp), w, h, gq(png), gq(bp)))
        res = subprocess.run(["gnuplot", gp], stderr=subprocess.PIPE, text=True)
        for line in res.stderr.splitlines():
            # A series that stays at 0 makes gnuplot warn about an empty
            # range; that is not news.
            if "empty" not in line and "range" not in line and line.strip():
                print("gnuplot (%s): %s" % (name, line), file=sys.stderr)
        if res.returncode != 0 or not os.path.exists(svg) or not os.path.exists(png):
            raise RuntimeError("gnuplot failed on %s" % name)
        return name


def mean_series(runs, fn, source):
    """fn(row, previous row, run) over each run, averaged across runs in 1 s
    bins of the common time axis: [(t, mean)]."""
    bins = {}
    for r in runs:
        rows = r.samples if source == "samples" else r.intervals
        prev = None
        for s in rows:
            v = fn(s, prev, r)
            prev = s
            if v is not None:
                bins.setdefault(round(s["t"]), []).append(v)
    return [(t, sum(v) / len(v)) for t, v in sorted(bins.items())]


def pressure_spans(sc):
    """The stretches of time with a stressor step running, averaged over the
    runs by their order: [(start, end)]."""
    per_run = []
    for r in sc.good:
        spans, start = [], None
        for t, p in r.phases:
            if p == "pressure" and start is None:
                start = t
            elif p != "pressure" and start is not None:
                spans.append((start, t))
                start = None
        per_run.append(spans)
    if not per_run:
        return []
    k = min(len(s) for s in per_run)
    return [(sum(s[i][0] for s in per_run) / len(per_run), sum(s[i][1] for s in per_run) / len(per_run)) for i in range(k)]


def timeline(pl, sc):
    """One aligned multi-panel figure on one time axis, pressure shaded."""

    def col(key, scale=1.0):
        return lambda s, p, r: (s[key] * scale) if s.get(key) is not None else None

    def rate(key, scale=1.0):
        def f(s, p, r):
            if p is None or s.get(key) is None or p.get(key) is None:
                return None
            dt = s["t"] - p["t"]
            return (s[key] - p[key]) * scale / dt if dt > 0 else None
        return f

    def since_start(key, scale=1.0):
        def f(s, p, r):
            if s.get(key) is None:
                return None
            base = next((x[key] for x in r.samples if x["t"] >= 0 and x.get(key) is not None), s[key])
            return (s[key] - base) * scale
        return f

    def hit(s, p, r):
        if p is None or s.get("daemon_up") != 1 or p.get("daemon_up") != 1 or s.get("cmd_get") is None \
                or p.get("cmd_get") is None:
            return None
        g = s["cmd_get"] - p["cmd_get"]
        h = (s["get_hits"] - p["get_hits"]) - (s["origin_fetches"] - p["origin_fetches"])
        return 100.0 * h / g if g > 0 else None

    panels = [
        ("MemAvailable (MiB)", col("mem_available_kb", 1 / 1024), "samples", False),
        ("Volatile (MiB)", col("volatile_kb", 1 / 1024), "samples", False),
        ("purged since start (MiB)", since_start("purged_pages", 4 / 1024), "samples", False),
        ("hit rate (%)", hit, "samples", False),
        ("p99 latency (ms)", lambda s, p, r: s["p99_us"] / 1000 if s.get("ops") else None, "intervals", True),
        ("PSI some (ms stalled per s)", rate("psi_some_us", 1 / 1000), "samples", False),
        ("OOM kills since start", since_start("oom_kill"), "samples", False),
        ("stress-ng resident (MiB)", col("stress_rss_kb", 1 / 1024), "samples", False),
    ]
    modes = sc.measured()
    n = len(panels)
    spans = pressure_spans(sc)
    lo = min((r.samples[0]["t"] for r in sc.good), default=0)
    hi = max((r.samples[-1]["t"] for r in sc.good), default=1)
    body = ["set multiplot layout %d,1 margins screen 0.11, 0.97, 0.075, 0.965 spacing screen 0, 0.006 "
            "title '%s: the modes on one time axis (mean of the runs; grey: a stressor runs)'" % (n, gq(sc.name)),
            "set xrange [%.0f:%.0f]" % (lo, hi), "set grid lc rgb '#dddddd'", "set key off", "set format x ''",
            "set ytics font ',9'", "set ylabel font ',10'"]
    for a, b in spans:
        body.append("set object rect from %.1f, graph 0 to %.1f, graph 1 fc rgb '#e6e6e6' fs solid noborder behind" % (a, b))
    for i, (label, fn, src, logy) in enumerate(panels):
        plots = []
        for m in modes:
            pts = mean_series(sc.by_mode[m], fn, src)
            if not pts:
                continue
            p = pl.data("timeline-%s-%d-%s.dat" % (sc.slug, i, m), [list(x) for x in pts])
            plots.append("'%s' using 1:2 with lines lw 1.6 lc rgb '%s' title '%s'" % (gq(p), MODE_COLOR.get(m, "#000000"), gq(m)))
        body.append("set ylabel '%s'" % gq(label))
        body.append("set logscale y" if logy else "unset logscale y")
        if i == n - 1:
            body += ["set format x '%g'", "set xlabel 'seconds since the measured load started (warm-up negative)'",
                     "set key at screen 0.54, screen 0.012 center bottom horizontal"]
        body.append("plot " + (", ".join(plots) if plots else "0 notitle lc rgb '#ffffff'"))
    body.append("unset multiplot")
    return pl.render("timeline-" + sc.slug, "\n".join(body), 900, 170 * n + 80)


def tradeoff(pl, sc):
    """Hit rate against the stressor's work and against p99, one point per
    mode with its 95% interval.  Its data file is what test-demo.sh checks
    against summary.json."""
    rows = []
    for m in sc.measured():
        def trio(k, scale=1.0):
            mu, ci = sc.get(m, k), sc.ci(m, k)
            lo, hi = (ci if ci else (mu, mu))
            return [mu * scale, lo * scale, hi * scale]
        # A mode with a figure missing (no get was answered or due) has
        # no point to plot; its row in the table says n/a.
        if any(sc.get(m, k) is None for k in ("hit_rate", "stress_bogo_ops", "p99_us")):
            continue
        rows.append([m] + trio("hit_rate", 100) + trio("stress_bogo_ops") + trio("p99_us", 1 / 1000))
    if not rows:
        return None
    p = pl.data("tradeoff-%s.dat" % sc.slug, [["#mode", "hit_pct", "hit_lo", "hit_hi", "bogo", "bogo_lo", "bogo_hi",
                                              "p99_ms", "p99_lo", "p99_hi"]] + rows)
    plots_a, plots_b = [], []
    for i, r in enumerate(rows):
        c = MODE_COLOR.get(r[0], "#000000")
        plots_a.append("'%s' every ::%d::%d using 5:2:6:7:3:4 with xyerrorbars pt 7 ps 1.3 lc rgb '%s' title '%s'"
                       % (gq(p), i, i, c, gq(r[0])))
        plots_b.append("'%s' every ::%d::%d using 8:2:9:10:3:4 with xyerrorbars pt 7 ps 1.3 lc rgb '%s' notitle"
                       % (gq(p), i, i, c))
    # Each point also carries its mode's name: the colours are not the only key.
    plots_a.append("'%s' using 5:2:1 with labels offset char 0.8,0.8 left font ',9' notitle" % gq(p))
    plots_b.append("'%s' using 8:2:1 with labels offset char 0.8,0.8 left font ',9' notitle" % gq(p))
    body = ["set multiplot layout 1,2 margins screen 0.08, 0.98, 0.24, 0.9 spacing screen 0.09 "
            "title '%s: what each mode costs whom (mean and 95%% interval over the runs)'" % gq(sc.name),
            "set grid lc rgb '#dddddd'", "set ylabel 'cache hit rate (%)'", "set offsets graph 0.08, graph 0.2, graph 0.08, graph 0.05",
            "set key at screen 0.53, screen 0.02 center bottom horizontal",
            "set xlabel 'stress-ng work (bogo ops per run)'", "set format x '%g'",
            "plot " + ", ".join(plots_a),
            "set xlabel 'p99 latency of the cache (ms, log scale)'", "set logscale x", "unset key",
            "plot " + ", ".join(plots_b), "unset multiplot"]
    return pl.render("tradeoff-" + sc.slug, "\n".join(body), 1000, 460)


def latency(pl, sc):
    """Latency CDF and tail per mode, from the merged histograms of its runs."""
    plots_c, plots_t = [], []
    for m in sc.measured():
        merged = {}
        # loadgen's histogram says its unit; the axis is in ms.
        scale = {"ns": 1e6, "us": 1e3, "ms": 1.0}.get(
            next((r.load.get("histogram", {}).get("unit") for r in sc.by_mode[m]), "ns"), 1e6)
        for r in sc.by_mode[m]:
            for v, n in r.histogram():
                merged[v] = merged.get(v, 0) + n
        total = sum(merged.values())
        if not total:
            continue
        acc, last, pts = 0, 0, []
        keys = sorted(merged)
        for i, v in enumerate(keys):
            acc += merged[v]
            x = max(v, 1) / scale
            # Thinned to a point per 2% of latency: the plot stays small.
            if x < last * 1.02 and i != len(keys) - 1:
                continue
            last = x
            pts.append([x, acc / total, max(1 - acc / total, 1e-6)])
        p = pl.data("latency-%s-%s.dat" % (sc.slug, m), pts)
        c = MODE_COLOR.get(m, "#000000")
        plots_c.append("'%s' using 1:2 with lines lw 2 lc rgb '%s' title '%s'" % (gq(p), c, gq(m)))
        plots_t.append("'%s' using 1:3 with lines lw 2 lc rgb '%s' notitle" % (gq(p), c))
    if not plots_c:
        return None
    body = ["set multiplot layout 1,2 title '%s: latency from the intended send time, all runs merged'" % gq(sc.name),
            "set grid lc rgb '#dddddd'", "set logscale x", "set xlabel 'latency (ms, log scale)'",
            "set ylabel 'fraction of requests at most x'", "set yrange [0:1]", "set key inside right bottom",
            "plot " + ", ".join(plots_c),
            "set ylabel 'fraction of requests slower than x (log)'", "set logscale y", "set yrange [1e-6:1]",
            "set format y '%g'", "unset key", "plot " + ", ".join(plots_t), "unset multiplot"]
    return pl.render("latency-" + sc.slug, "\n".join(body), 1000, 420)


def sweep_plot(pl, name, cells):
    """A sweep: hit rate against the pressure size, one line per mode and idle
    time, each point with its 95% interval."""
    lines = {}
    for sc in cells:
        mb, idle = num(sc.conf.get("STRESS_MB")), sc.conf.get("IDLE_S")
        for m in sc.measured():
            mu, ci = sc.get(m, "hit_rate"), sc.ci(m, "hit_rate")
            if mu is None:
                continue
            lo, hi = ci if ci else (mu, mu)
            key = (m, idle if m in (sc.conf.get("SWEEP_IDLE_MODES") or "").split() else None)
            lines.setdefault(key, []).append([mb, 100 * mu, 100 * lo, 100 * hi])
    if not lines:
        return None
    slug = re.sub(r"[^A-Za-z0-9_.-]", "-", name)
    plots = []
    dts = [1, 2, 3, 4, 5]
    for i, ((m, idle), pts) in enumerate(sorted(lines.items(), key=lambda x: (MODE_ORDER.index(x[0][0]) if x[0][0] in MODE_ORDER else 99, str(x[0][1])))):
        p = pl.data("sweep-%s-%d.dat" % (slug, i), sorted(pts))
        title = m + ("" if idle is None else ", idle %s s" % idle)
        plots.append("'%s' using 1:2:3:4 with yerrorlines lw 1.6 dt %d pt 7 lc rgb '%s' title '%s'"
                     % (gq(p), dts[i % len(dts)], MODE_COLOR.get(m, "#000000"), gq(title)))
    body = ["set title '%s: hit rate against the pressure (mean and 95%% interval)'" % gq(name), "set grid lc rgb '#dddddd'",
            "set xlabel 'stress-ng memory (MiB)'", "set ylabel 'cache hit rate (%)'", "set key outside right",
            "set offsets graph 0.05, graph 0.05, 0, 0", "plot " + ", ".join(plots)]
    return pl.render("sweep-" + slug, "\n".join(body), 900, 420)


# ---- the report ----------------------------------------------------------

def sources_check(host):
    """The staleness line of a report made from runs whose host.env records
    the sources (scripts/report-sources.sh)."""
    if not host.get("src_commit"):
        return "WARNING: these runs do not record the hashes of their sources; the report may be stale"
    tool = os.path.join(HERE, "report-sources.sh")
    tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), "report-sources-%d.env" % os.getpid())
    with open(tmp, "w") as f:
        for k, v in host.items():
            if k.startswith("src_"):
                f.write("%s=%s\n" % (k, v))
    try:
        res = subprocess.run([tool, "--check", tmp], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = res.stdout.strip().splitlines()[-1] if res.stdout.strip() else ""
    finally:
        os.unlink(tmp)
    if line.startswith("WARNING"):
        return line.replace("the published report %s" % os.path.dirname(tmp), "this report").replace(
            os.path.dirname(tmp), "this report")
    return ""


def loses(sc, phases=True):
    """Where the volatile mode loses in a scenario, as sentences; the
    comparisons are of means, and say when the 95% intervals overlap."""
    v = "volatile"
    if not sc.by_mode.get(v):
        return []
    out = []

    def sep(m, k, bucket=None):
        a, b = sc.ci(v, k, bucket), sc.ci(m, k, bucket)
        if not a or not b:
            return " (one run: no interval)"
        return "" if (a[1] < b[0] or b[1] < a[0]) else " (the 95% intervals overlap)"
    for m in sc.measured():
        # The ceiling bounds every mode by construction: it is stated apart.
        if m in (v, "nopressure"):
            continue
        for b in [None] + (BUCKETS if phases else []):
            hv, hm = sc.get(v, "hit_rate", b), sc.get(m, "hit_rate", b)
            if hv is not None and hm is not None and hm > hv + 0.005:
                out.append("hit rate%s below %s's (%s vs %s)%s" % ("" if b is None else " " + b + " the pressure" if b != "pressure" else " during the pressure",
                                                                 m, fmt(hv, "hit_rate"), fmt(hm, "hit_rate"), sep(m, "hit_rate", b)))
        pv, pm = sc.get(v, "p99_us"), sc.get(m, "p99_us")
        if pv is not None and pm is not None and pm < pv * 0.9:
            out.append("p99 above %s's (%s vs %s)%s" % (m, fmt(pv, "p99_us"), fmt(pm, "p99_us"), sep(m, "p99_us")))
        bv, bm = sc.get(v, "stress_bogo_ops"), sc.get(m, "stress_bogo_ops")
        if m != "nopressure" and bv is not None and bm is not None and bm > bv * 1.1:
            out.append("stress-ng did more work beside %s (%s vs %s bogo ops)%s" % (m, fmt(bm), fmt(bv), sep(m, "stress_bogo_ops")))
    return out


def runs_text(sc):
    """"N run(s) per mode", or the count of each mode when they differ."""
    n = {m: sc.stats[m]["runs"] for m in sc.measured()}
    if len(set(n.values())) == 1:
        return "%d run(s) per mode" % next(iter(n.values()))
    return "runs per mode: " + ", ".join("%s %d" % (m, k) for m, k in n.items())


class Report:
    def __init__(self, scenarios, out):
        self.out = out
        self.all = scenarios
        self.main = [s for s in scenarios if not s.sweep_of]
        self.sweeps = {}
        for s in scenarios:
            if s.sweep_of:
                self.sweeps.setdefault(s.sweep_of, []).append(s)
        # The scenario of the top-level "modes" and of the verdict's lead:
        # default, else the first one with runs.
        self.default = next((s for s in scenarios if s.name == "default"), None) or \
            next((s for s in self.main if s.good), None) or (self.main or scenarios)[0]
        self.host = self.default.host
        # The runs' sources: one commit, or one per group of scenarios run
        # at different commits (a scenario run again after a fix); each
        # group is checked against the clone on its own.
        groups = {}
        for s in scenarios:
            if s.host.get("src_commit") and (s.good or s.skipped):
                key = tuple(sorted((k, v) for k, v in s.host.items() if k.startswith("src_")))
                groups.setdefault(key, (s.host, []))[1].append(s.name)
        self.source_groups = list(groups.values())
        if len(self.source_groups) > 1:
            self.stale = " ".join("The runs of %s (commit %s): %s" % (", ".join(names), host["src_commit"], w)
                                  for host, names in self.source_groups for w in [sources_check(host)] if w)
        else:
            self.stale = sources_check(self.host)

    def write_data(self):
        with open(os.path.join(self.out, "samples.csv"), "w", newline="") as f:
            w = None
            for sc in self.all:
                for r in sc.good:
                    for s in r.samples:
                        row = {"scenario": sc.name, "mode": r.mode, "run": r.run}
                        row.update(s)
                        row["t"] = "%.2f" % s["t"]
                        if w is None:
                            w = csv.DictWriter(f, fieldnames=list(row.keys()), extrasaction="ignore")
                            w.writeheader()
                        w.writerow(row)
        fields = ["scenario", "mode", "run", "t", "ops", "gets", "sets", "hits", "misses", "errors",
                  "verify_errors", "conn_errors", "unfinished", "misses_purged", "hits_rebuilt",
                  "p50_us", "p90_us", "p99_us", "p999_us", "max_us"]
        with open(os.path.join(self.out, "load.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(fields)
            for sc in self.all:
                for r in sc.good:
                    for i in r.intervals:
                        w.writerow([sc.name, r.mode, r.run] + [i.get(k, "") for k in fields[3:]])
        summary = {"commit": self.host.get("commit"), "date": self.host.get("date"),
                   "sources": {k[4:]: v for k, v in self.host.items() if k.startswith("src_")},
                   "stale": self.stale or None,
                   # the commit of each scenario's runs (several when some ran again later)
                   "runs_commits": {name: g.get("commit") for g, names in self.source_groups
                                    for name in names},
                   "scenarios": {sc.name: sc.summary_json() for sc in self.all},
                   "modes": self.default.summary_json()["modes"]}
        with open(os.path.join(self.out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
            f.write("\n")
        details = {"host": self.host, "scenarios": {}}
        for sc in self.all:
            details["scenarios"][sc.name] = {
                "scenario": sc.conf,
                "runs": [{"mode": r.mode, "run": r.run, "ok": r.ok, "problem": r.problem,
                          "unavailable": r.unavailable or None, "skipped": r.skipped or None,
                          "metrics": getattr(r, "metrics", None), "info": r.info, "host_load": r.host_load,
                          "kernel_warnings": r.kernel_warnings} for r in sc.runs]}
        with open(os.path.join(self.out, "details.json"), "w") as f:
            json.dump(details, f, indent=1)
            f.write("\n")

    def figures(self):
        pl = Plotter(self.out)
        figs = {}
        for sc in self.main:
            if not sc.good:
                continue
            figs[sc.name] = [x for x in (timeline(pl, sc), tradeoff(pl, sc), latency(pl, sc)) if x]
        for name, cells in self.sweeps.items():
            if any(c.good for c in cells):
                figs[name] = [x for x in [sweep_plot(pl, name, cells)] + [tradeoff(pl, c) for c in cells if c.good] if x]
        return figs

    # ---- text ----
    def table(self, sc):
        heads = ["mode", "runs", "hit rate [95% CI]", "before", "during pressure", "after", "p99", "OOM kills",
                 "stress-ng bogo ops", "purged ranges", "swapped out pages", "verify errors"]
        rows = []
        for m in sc.modes:
            if not sc.by_mode.get(m):
                why = "unavailable" if m in sc.unavailable else "skipped" if sc.skipped else "no successful run"
                rows.append([m, "0", why] + [""] * (len(heads) - 3))
                continue
            d = sc.stats[m]
            rows.append([m, str(d["runs"]), fmt_ci(d["hit_rate"], "hit_rate")] +
                        [fmt(d["hit_rate_by_phase"][b]["mean"], "hit_rate") for b in BUCKETS] +
                        [fmt_ci(d["p99_us"], "p99_us"), fmt_ci(d["oom_kills"], ""), fmt_ci(d["stress_bogo_ops"], ""),
                         fmt(d["purged_ranges"]["mean"]), fmt(d["swap_out_pages"]["mean"]), fmt(d["verify_errors"]["mean"])])
        return heads, rows

    def sweep_table(self, cells):
        idles = []
        for c in cells:
            if c.conf.get("IDLE_S") not in idles:
                idles.append(c.conf.get("IDLE_S"))
        stresses = sorted({num(c.conf.get("STRESS_MB")) for c in cells})
        idle_modes = (cells[0].conf.get("SWEEP_IDLE_MODES") or "").split()
        modes = [m for m in MODE_ORDER if any(m in c.modes for c in cells)]
        heads = ["stress-ng MiB"]
        cols = []
        for m in modes:
            if m in idle_modes:
                cols += [(m, i) for i in idles]
                heads += ["%s, idle %s s" % (m, i) for i in idles]
            else:
                cols.append((m, None))
                heads.append(m)
        rows = []
        for mb in stresses:
            row = [str(mb)]
            for m, idle in cols:
                c = next((c for c in cells if num(c.conf.get("STRESS_MB")) == mb and
                          (idle is None or c.conf.get("IDLE_S") == idle) and c.by_mode.get(m)), None)
                row.append(fmt_ci(c.stats[m]["hit_rate"], "hit_rate") + (" (%s OOM)" % fmt(c.get(m, "oom_kills")) if c.get(m, "oom_kills") else "")
                           if c else "n/a")
            rows.append(row)
        return heads, rows

    def verdict(self):
        sc = self.default
        lines = []
        v = "volatile"
        if not sc.by_mode.get(v):
            return ["The volatile mode has no successful run in scenario %s: no verdict." % sc.name]
        if not all(r.info.get("has_volatile") == "1" for r in sc.by_mode[v]):
            lines.append("**Warning: the guest kernel has no volatile ranges; the daemon fell back to pinned in the volatile "
                         "mode, so this report says nothing about the series.**")
        ms = sc.measured()
        hr = {m: sc.get(m, "hit_rate") for m in ms}
        oom = {m: sc.get(m, "oom_kills") for m in ms}
        bogo = {m: sc.get(m, "stress_bogo_ops") for m in ms}
        p99 = {m: sc.get(m, "p99_us") for m in ms}
        lines.append("In scenario `%s` (%s), with %s, the volatile cache kept a hit rate of %s (%s during the pressure), "
                     "had %s OOM kill(s) per run and let stress-ng do %s bogo ops, at a p99 of %s." % (
                         sc.name, sc.conf.get("DESCRIPTION", ""), runs_text(sc),
                         fmt(hr[v], "hit_rate"), fmt(sc.get(v, "hit_rate", "pressure"), "hit_rate"), fmt(oom[v]), fmt(bogo[v]),
                         fmt(p99[v], "p99_us")))
        def died(o, m):
            # runs whose daemon was gone at the end (an OOM kill)
            n = [r for r in o.by_mode.get(m, []) if not r.metrics["daemon_survived"]]
            return " (its daemon killed in %d of %d runs)" % (len(n), len(o.by_mode[m])) if n else ""
        others = [m for m in ms if m != v]
        if others:
            lines.append("Against it: " + "; ".join(
                "%s %s hit rate (%s during pressure), %s OOM kills, %s bogo ops, p99 %s%s" % (
                    m, fmt(hr[m], "hit_rate"), fmt(sc.get(m, "hit_rate", "pressure"), "hit_rate"), fmt(oom[m]),
                    fmt(bogo[m]), fmt(p99[m], "p99_us"), died(sc, m)) for m in others) + ".")
        if "nopressure" in hr and hr["nopressure"] is not None:
            lines.append("The ceiling (the same cache without a stressor) is %s; volatile keeps %s of it." % (
                fmt(hr["nopressure"], "hit_rate"), fmt_value(100 * hr[v] / hr["nopressure"], "%") if hr["nopressure"] and hr[v] is not None else "n/a"))
        for o in self.main:
            if o is sc or o.skipped or not o.by_mode.get(v):
                continue
            lines.append("In `%s` (%s): " % (o.name, runs_text(o)) + "; ".join(
                "%s %s hit rate, %s OOM kills, %s bogo ops, p99 %s%s%s" % (
                    m, fmt(o.get(m, "hit_rate"), "hit_rate"), fmt(o.get(m, "oom_kills")), fmt(o.get(m, "stress_bogo_ops")),
                    fmt(o.get(m, "p99_us"), "p99_us"),
                    ", %s pages swapped out" % fmt(o.get(m, "swap_out_pages")) if o.conf.get("SWAP_MB") else "",
                    died(o, m))
                for m in o.measured()) + ".")
        for name, cells in self.sweeps.items():
            pts = [(c.get(v, "hit_rate"), c) for c in cells if c.get(v, "hit_rate") is not None]
            if pts:
                lo, hi = min(pts, key=lambda x: x[0]), max(pts, key=lambda x: x[0])
                lines.append("In the sweep `%s`, volatile's hit rate ran from %s (stress-ng %s MiB, idle %s s) to %s "
                             "(stress-ng %s MiB, idle %s s); its OOM kills per run: at most %s." % (
                                 name, fmt(lo[0], "hit_rate"), lo[1].conf.get("STRESS_MB"), lo[1].conf.get("IDLE_S"),
                                 fmt(hi[0], "hit_rate"), hi[1].conf.get("STRESS_MB"), hi[1].conf.get("IDLE_S"),
                                 fmt(max(c.get(v, "oom_kills") or 0 for _, c in pts))))
        unavailable = sorted({m for s in self.all for m in s.unavailable})
        if unavailable:
            lines.append("Not measured: " + "; ".join("%s (%s)" % (m, next(s.unavailable[m] for s in self.all if m in s.unavailable))
                                                      for m in unavailable) + ".")
        for s in self.all:
            if s.skipped and not s.sweep_of:
                lines.append("Scenario `%s` was **skipped**, not passed: %s." % (s.name, s.skipped))
        bad = [(s.name, m) for s in self.all for m in s.measured() if s.get(m, "verify_errors")]
        lines.append("Verify errors (wrong bytes served): " + ("none in any mode of any scenario." if not bad else
                     ", ".join("%s/%s" % x for x in bad) + "."))
        lost = []
        for s in self.main:
            x = loses(s, phases=False)
            if x:
                lost.append("in `%s`: %s" % (s.name, "; ".join(x)))
        lines.append("**Where volatile loses**: " + ("; ".join(lost) + "." if lost else
                     "nowhere by more than 0.5 points of hit rate, 10% of p99 or 10% of stress-ng's work in these runs."))
        return lines

    def counters(self, sc):
        rows = []
        for r in sorted(sc.good, key=lambda r: (sc.modes.index(r.mode) if r.mode in sc.modes else 99, r.run)):
            vol_peak = max((s.get("volatile_kb") or 0) for s in r.samples)
            rows.append([r.mode, str(r.run), r.info.get("has_volatile", "?"), fmt(vol_peak / 1024),
                         fmt(r.metrics["purged_ranges"]), fmt(r.metrics["purged_pages"]), fmt(r.metrics["oom_kills"]),
                         fmt(r.metrics["swap_out_pages"]), fmt(r.metrics["psi_some_ms"]),
                         fmt(r.metrics["min_mem_available_kb"] / 1024), "yes" if r.metrics["daemon_survived"] else "no",
                         str(len(r.kernel_warnings)), fmt(r.load.get("ops_per_s", 0)),
                         "%s %s" % (r.clocksource, ("%.0f MHz" % r.guest_tsc_mhz) if r.guest_tsc_mhz else ""),
                         "%s / %s%%" % (r.host_load.get("host_load1_end", "?"), r.host_load.get("host_cpu_busy_pct", "?")),
                         "; ".join(sorted(set(re.sub(r".*Killed process \d+ \(([^)]*)\).*", r"\1", x)
                                              for x in r.oom_lines if "Killed process" in x))) or "-"])
        return ["mode", "run", "volatile kernel", "peak Volatile MiB", "purged ranges", "purged pages", "oom_kill",
                "pswpout", "PSI some ms", "min MemAvailable MiB", "daemon survived", "kernel warnings",
                "requests/s done", "guest clock", "host load / busy", "OOM victims"], rows

    def method(self, sc):
        s = sc.conf
        first = sc.good[0] if sc.good else None
        info = first.info if first else {}
        steps = s.get("PRESSURE_STEPS") or "%s:%s" % (s.get("STRESS_MB"), s.get("PRESSURE_S"))
        right = sorted({r.info.get("cache_mb") for r in sc.by_mode.get("rightsized", [])})
        out = [
            "Each run boots a fresh guest (%s MiB, %s vCPU, swap %s MiB%s) on the same kernel and image; the modes are "
            "interleaved (run 1: %s; run 2: ...)." % (s.get("MEM_MB"), s.get("CPUS"), s.get("SWAP_MB", "0"),
                                                     ", daemon and stressor in their own memory cgroups, memory.max %s MiB on the daemon's"
                                                     % s.get("DAEMON_MEM_MAX_MB") if s.get("CONTAINER") == "1" else "",
                                                     ", ".join(sc.modes)),
            "cached `-m %s -t %s --idle %s --origin gen:%s --verify`; psi mode adds `%s`; a miss or a purged object is "
            "rebuilt by the origin." % (s.get("CACHE_MB"), s.get("DAEMON_THREADS"), s.get("IDLE_S"), s.get("ORIGIN"),
                                        s.get("PSI_ARGS") or "nothing (the daemon's default PSI thresholds)"),
            "loadgen: %s keys, %s, open loop at %s requests/s, %s connection(s), `--verify`; warm-up seed %s, measured "
            "seed %s (distinct: the measured load does not replay the warm-up); scrambled Zipf: %s; warm-up order: %s." % (
                s.get("KEYS"), s.get("DIST"), s.get("RATE"), s.get("LOAD_CONNS"), info.get("warmup_seed", "?"),
                info.get("measure_seed", "?"), "`%s`" % info["load_scramble_args"] if info.get("load_scramble_args") else
                "no (this loadgen has no such option: keys are ranked in order)",
                "`%s`" % info["load_order_args"] if info.get("load_order_args") else "in key order (this loadgen cannot shuffle it)"),
            "Arrivals: %s; gets as %s." % (info.get("load_arrivals", "constant"),
                                         "meta gets (`--meta`: loadgen counts purged misses and rebuilt hits from the daemon's P flag)"
                                         if info.get("load_meta_args") else "plain gets (the daemon answers no meta get)"),
            "Phases: warm-up (every key set once, then %s s of load), before the pressure %s s, the pressure's steps "
            "(MiB:seconds of `stress-ng --vm %s --vm-keep --no-madvise --vm-method %s` at nice 19, 0 a pause) `%s`, after it %s s."
            % (s.get("WARMUP_S"), s.get("STEADY_S"), s.get("STRESS_WORKERS"), s.get("STRESS_METHOD"), steps, s.get("RECOVERY_S")),
        ]
        if right:
            out.append("rightsized: pinned with `-m` = MemAvailable before the daemon starts - the largest step - %s MiB "
                       "margin, measured in each guest: %s MiB." % (s.get("RIGHTSIZED_MARGIN_MB") or s.get("ORACLE_MARGIN_MB"),
                                                                    ", ".join(x for x in right if x)))
        out += ["hit rate = (daemon get_hits - origin_fetches) / gets, over the measured load and per phase: before "
                "(steady), during the pressure (a stressor step runs), after (pauses between steps and recovery). "
                "Latencies are loadgen's, from the intended send time. Each figure is the mean over the runs with its "
                "95% confidence interval (Student's t, n - 1 degrees of freedom)."]
        return out

    def environment(self):
        h = self.host
        first = next((r for s in self.all for r in s.good), None)
        info = first.info if first else {}
        qcmd = first.qemu_cmd.replace(ROOT_PREFIX, "") if first else ""
        loads = [r.metrics.get("host_load1") for s in self.all for r in s.good if r.metrics.get("host_load1") is not None]
        busy = [r.metrics.get("host_cpu_busy_pct") for s in self.all for r in s.good if r.metrics.get("host_cpu_busy_pct") is not None]
        return [
            ("source commit", "%s%s, %s" % (h.get("commit", "?"), " (with %s uncommitted change(s))" % h["dirty"]
                                           if h.get("dirty") not in (None, "", "0") else "", h.get("date", "?"))
             if len(self.source_groups) < 2 else
             "; ".join("%s for %s (%s)" % (g.get("commit", "?"), ", ".join(names), g.get("date", "?"))
                       for g, names in self.source_groups)),
            ("source hashes", "; ".join(
                ("%s: " % g.get("commit", "?") if len(self.source_groups) > 1 else "") +
                ", ".join("%s %s" % (k[4:], v) for k, v in g.items() if k.startswith("src_") and k != "src_commit")
                for g in ([x[0] for x in self.source_groups] or [h]))),
            ("guest kernel", "%s (%s)" % (info.get("kernel", "?"), info.get("kernel_build", "?"))),
            ("kernel image / config", "sha256 %s / config sha256 %s" % (h.get("kernel_sha256", "?"), h.get("kernel_config_sha256", "?"))),
            ("patch series", "hash %s, %s patches" % (h.get("series_hash", "?"), h.get("series_patches", "?"))),
            ("volatile ranges in the guest kernel", "yes" if info.get("has_volatile") == "1" else "NO"),
            ("acceleration", h.get("accel", "tcg").upper() + (" (every figure is 5-10x slower than native)" if h.get("accel", "tcg") == "tcg" else "")),
            ("QEMU", h.get("qemu_version", "?")),
            ("QEMU command line (first guest)", qcmd),
            ("host CPU", "%s, %s CPUs, host kernel %s" % (h.get("host_cpu", "?"), h.get("host_cpus", "?"), h.get("host_kernel", "?"))),
            ("host load during the runs", "1-min load %s to %s, CPU busy %s%% to %s%% (per guest: counters table)" % (
                fmt(min(loads)) if loads else "?", fmt(max(loads)) if loads else "?",
                fmt(min(busy)) if busy else "?", fmt(max(busy)) if busy else "?")),
            ("daemon / loadgen / stress-ng", "%s / %s / %s" % (
                info.get("cached_version", "?"),
                # loadgen has no version of its own: its source hash is above
                "loadgen of the source commit" if info.get("loadgen_version", "?").startswith("Usage")
                else info.get("loadgen_version", "?"),
                info.get("stress_ng_version", "?"))),
        ]

    def write_text(self, figs):
        verdict = self.verdict()
        txt = []
        for sc in self.main + [c for cs in self.sweeps.values() for c in cs]:
            heads, rows = self.table(sc)
            txt.append("scenario %s%s" % (sc.name, ": SKIPPED, " + sc.skipped if sc.skipped else ""))
            txt.append(text_table(heads, rows))
            txt += ["mode %s is unavailable: %s" % (m, why) for m, why in sorted(sc.unavailable.items())]
            if sc.failed:
                txt.append("failed guests (left out): " + ", ".join("%s (%s)" % (r.name, r.problem) for r in sc.failed))
        if self.stale:
            txt.insert(0, self.stale)
        with open(os.path.join(self.out, "summary.txt"), "w") as f:
            f.write("\n".join(txt) + "\n")
        md, h = [], []
        title = "Volatile ranges under memory pressure: experiment report"
        md += ["# " + title, ""]
        h += ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>%s</title>" % html.escape(title),
              "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
              "table{border-collapse:collapse;margin:1em 0;font-size:90%}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}"
              "td:first-child,th:first-child{text-align:left}.verdict{background:#f4f8ff;border-left:4px solid #0072B2;padding:0.5em 1em}"
              ".stale{background:#fff3e0;border-left:4px solid #D55E00;padding:0.5em 1em}"
              "code{background:#f3f3f3}.env td{text-align:left}svg{max-width:100%;height:auto}</style></head><body>",
              "<h1>%s</h1>" % html.escape(title)]
        if self.stale:
            md += ["> **%s**" % self.stale, ""]
            h += ["<p class='stale'><b>%s</b></p>" % html.escape(self.stale)]
        if len(self.source_groups) > 1:
            md += ["Generated from runs at commits %s." % "; ".join(
                "`%s` (%s, %s)" % (g.get("commit", "?"), ", ".join(names), g.get("date", "?"))
                for g, names in self.source_groups), ""]
        else:
            md += ["Generated from commit `%s` on %s." % (self.host.get("commit", "?"), self.host.get("date", "?")), ""]
        md += ["## Verdict", ""] + [l + "\n" for l in verdict]
        h += ["<div class='verdict'><h2>Verdict</h2>"] + ["<p>%s</p>" % md_inline(l) for l in verdict] + ["</div>"]
        for sc in self.main:
            md += ["## Scenario `%s`" % sc.name, "", sc.conf.get("DESCRIPTION", ""), ""]
            h += ["<h2>Scenario <code>%s</code></h2><p>%s</p>" % (html.escape(sc.name), html.escape(sc.conf.get("DESCRIPTION", "")))]
            if sc.skipped:
                md += ["**Skipped, not passed**: %s." % sc.skipped, ""]
                h += ["<p><b>Skipped, not passed</b>: %s.</p>" % html.escape(sc.skipped)]
                continue
            heads, rows = self.table(sc)
            md += [md_table(heads, rows), ""]
            h += [html_table(heads, rows)]
            for m, why in sorted(sc.unavailable.items()):
                line = "Mode `%s` is unavailable: %s." % (m, why)
                md += [line, ""]
                h += ["<p>%s</p>" % md_inline(line)]
            lost = loses(sc)
            line = "Where volatile loses here: " + ("; ".join(lost) + "." if lost else "nowhere by the margins of the verdict.")
            md += [line, ""]
            h += ["<p>%s</p>" % md_inline(line)]
            if sc.failed:
                line = "Guests that failed and are left out: " + ", ".join("%s (%s)" % (r.name, r.problem) for r in sc.failed)
                md += [line, ""]
                h += ["<p>%s</p>" % html.escape(line)]
            for fg in figs.get(sc.name, []):
                md += ["![%s](%s.png) ([SVG](%s.svg))" % (fg, fg, fg), ""]
                h += ["<div>%s</div>" % inline_svg(os.path.join(self.out, fg + ".svg"))]
            ch, cr = self.counters(sc)
            md += ["The kernel's counters, per run:", "", md_table(ch, cr), ""]
            h += ["<p>The kernel's counters, per run:</p>", html_table(ch, cr)]
            md += ["Method:", ""] + ["- " + l for l in self.method(sc)] + [""]
            h += ["<p>Method:</p><ul>"] + ["<li>%s</li>" % md_inline(l) for l in self.method(sc)] + ["</ul>"]
        for name, cells in self.sweeps.items():
            desc = cells[0].conf.get("DESCRIPTION", "")
            md += ["## Scenario `%s` (a sweep: pressure size x idle time)" % name, "", desc, ""]
            h += ["<h2>Scenario <code>%s</code> (a sweep: pressure size x idle time)</h2><p>%s</p>" % (html.escape(name), html.escape(desc))]
            heads, rows = self.sweep_table(cells)
            md += ["Hit rate [95% CI] per cell:", "", md_table(heads, rows), ""]
            h += ["<p>Hit rate [95% CI] per cell:</p>", html_table(heads, rows)]
            for fg in figs.get(name, []):
                md += ["![%s](%s.png) ([SVG](%s.svg))" % (fg, fg, fg), ""]
                h += ["<div>%s</div>" % inline_svg(os.path.join(self.out, fg + ".svg"))]
            for c in cells:
                heads, rows = self.table(c)
                md += ["Cell `%s`:" % c.name, "", md_table(heads, rows), ""]
                h += ["<p>Cell <code>%s</code>:</p>" % html.escape(c.name), html_table(heads, rows)]
        env = self.environment()
        md += ["## Environment", "", md_table(["", ""], [[a, b] for a, b in env]), ""]
        h += ["<h2>Environment</h2>", "<table class='env'>"] + [
            "<tr><td>%s</td><td><code>%s</code></td></tr>" % (html.escape(a), html.escape(b)) for a, b in env] + ["</table>"]
        files = ("Files: summary.json (per scenario and mode: mean, stddev and 95% interval of every figure), details.json "
                 "(per run), samples.csv and load.csv (every run's samples), the figures as PNG and SVG and their data "
                 "under plot-data/; the guests' own output is under the runs folders.")
        md += ["## Files", "", files, ""]
        h += ["<p>%s</p></body></html>" % html.escape(files)]
        with open(os.path.join(self.out, "report.md"), "w") as f:
            f.write("\n".join(md))
        with open(os.path.join(self.out, "index.html"), "w") as f:
            f.write("\n".join(h))


def find_scenarios(runs_dir):
    """The scenario folders under a runs folder: itself, or its cells."""
    out = []
    if glob.glob(os.path.join(runs_dir, "*", "guest")) or os.path.exists(os.path.join(runs_dir, "skipped")):
        out.append(Scenario(runs_dir))
    for c in sorted(glob.glob(os.path.join(runs_dir, "*", "scenario.conf"))):
        out.append(Scenario(os.path.dirname(c)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs-dir", action="append", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    scenarios = []
    for d in a.runs_dir:
        scenarios += find_scenarios(d)
    if not scenarios:
        print("report.py: no scenario in %s" % ", ".join(a.runs_dir), file=sys.stderr)
        return 1
    if not any(s.good for s in scenarios) and not any(s.skipped for s in scenarios):
        print("report.py: no successful run", file=sys.stderr)
        for s in scenarios:
            for r in s.runs:
                print("  %s/%s: %s" % (s.name, r.name, r.problem), file=sys.stderr)
        return 1
    if not shutil.which("gnuplot"):
        print("report.py: gnuplot is missing", file=sys.stderr)
        return 1
    rep = Report(scenarios, a.out)
    rep.write_data()
    figs = rep.figures()
    rep.write_text(figs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
