#!/usr/bin/env python3
"""report.py - the pressure experiment's report, from the guests' run folders.

usage: scripts/report.py --runs-dir DIR --out DIR

DIR (the runs folder of scripts/demo.sh) holds scenario.conf, host.env and
one folder per run and mode, MODE-RUN/, with the runner's folder guest/
(qemu-cmd, exit-status, out/ as written by image/guest/experiment.sh).

Writes into --out: summary.json (per mode, each metric's mean and stddev
over the runs), details.json (per run, and more metrics), samples.csv and
load.csv (every run's one-second samples on one time axis: seconds since the
measured load started), the plots (*.svg, gnuplot), report.md and a
self-contained index.html (the SVGs inlined), and summary.txt (the table
that scripts/demo.sh prints).  Python standard library and gnuplot only.
"""
import argparse
import csv
import html
import json
import math
import os
import re
import shutil
import subprocess
import sys

from reportlib import (gq, html_table, inline_svg, md_inline, md_table, num, read_env,
                       read_kv, read_stats, read_text, text_table)

MODE_ORDER = ["pinned", "psi", "volatile", "oracle"]
# Paths in the report are shown relative to the clone.
ROOT_PREFIX = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + "/"
MODE_TEXT = {
    "pinned": "pinned: today's tmpfs cache, nothing is given back",
    "psi": "psi: the daemon drops data itself when PSI reports memory stalls",
    "volatile": "volatile: idle data marked volatile, the kernel purges it under pressure",
    "oracle": "oracle: pinned, sized beforehand to the memory left during pressure",
}
MODE_COLOR = {"pinned": "#d62728", "psi": "#ff7f0e", "volatile": "#1f77b4", "oracle": "#2ca02c"}
KEYS = ["hit_rate", "p50_us", "p99_us", "max_us", "verify_errors", "oom_kills",
        "stress_bogo_ops", "purged_ranges", "rebuilds"]
# Extra per-run metrics, in details.json and the report's second table.
EXTRA = ["hit_rate_pressure", "hit_rate_recovery", "p99_pressure_us", "errors",
         "purged_pages", "purged_objects", "psi_events", "psi_dropped_bytes",
         "origin_fetches", "psi_some_ms", "psi_full_ms", "daemon_survived",
         "daemon_oom_killed", "min_mem_available_kb", "daemon_verify_errors"]
# Metrics whose change against pinned means something.
CHANGE = set(KEYS) | {"hit_rate_pressure", "hit_rate_recovery", "p99_pressure_us", "errors", "origin_fetches"}

def mean_sd(values):
    vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not vals:
        return {"mean": None, "stddev": None}
    m = sum(vals) / len(vals)
    sd = math.sqrt(sum((v - m) ** 2 for v in vals) / (len(vals) - 1)) if len(vals) > 1 else 0.0
    return {"mean": m, "stddev": sd}


class Run:
    """One guest: one mode, one run."""

    def __init__(self, folder):
        self.folder = folder
        self.name = os.path.basename(folder)
        self.mode, _, run = self.name.rpartition("-")
        self.run = int(run) if run.isdigit() else 0
        self.guest = os.path.join(folder, "guest")
        self.out = os.path.join(self.guest, "out")
        # The job's own status: the runner's is 1 when the kernel logged a
        # call trace, which every OOM report has.
        self.status = read_text(os.path.join(self.guest, "out", "exit-status"), "missing").strip()
        self.runner_status = read_text(os.path.join(self.guest, "exit-status"), "missing").strip()
        console = read_text(os.path.join(self.guest, "console.log"))
        warnings = read_text(os.path.join(self.guest, "warnings.txt")).splitlines()
        traces = sum(1 for w in warnings if "Call Trace:" in w)
        ooms = console.count("invoked oom-killer")
        # Kernel warnings that are not the call traces of OOM reports.
        self.kernel_warnings = [w for w in warnings if "Call Trace:" not in w]
        if traces > ooms:
            self.kernel_warnings.append("%d call trace(s) beyond the %d OOM report(s)" % (traces, ooms))
        self.info = read_env(os.path.join(self.out, "info.env"))
        self.ok = self.status == "0" and os.path.exists(os.path.join(self.out, "samples.csv")) \
            and os.path.exists(os.path.join(self.out, "load.json"))
        self.problem = "" if self.ok else "guest status %s" % self.status
        # The guest's clock: a TSC calibrated at the wrong rate (a starved
        # TCG guest) makes every time, sleep and rate of the run wrong.
        m = re.findall(r"tsc: Detected ([0-9.]+) MHz", console)
        cs = re.findall(r"Switched to clocksource (\S+)", console)
        self.guest_tsc_mhz = float(m[-1]) if m else None
        self.clocksource = cs[-1] if cs else "?"
        host_khz = re.search(r"tsc_early_khz=(\d+)", read_text(os.path.join(self.guest, "qemu-cmd")))
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
                r = {k: num(v) if v != "" else None for k, v in row.items()}
                r["t"] = float(row["t"]) - self.t0
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
        self.stress = read_text(os.path.join(self.out, "stress.txt"))
        self.stress_yaml = read_text(os.path.join(self.out, "stress.yaml"))
        self.oom_lines = read_text(os.path.join(self.out, "oom.txt")).splitlines()
        self.qemu_cmd = read_text(os.path.join(self.guest, "qemu-cmd")).strip()
        self.metrics = self.compute()

    def phase_time(self, name):
        for t, p in self.phases:
            if p == name:
                return t
        return None

    def daemon_counter(self, key, t_from=None, t_to=None):
        """A daemon counter's increase between two times (samples)."""
        rows = [r for r in self.samples if r.get("daemon_up") == 1 and r.get(key) is not None]
        if t_from is not None:
            rows = [r for r in rows if r["t"] >= t_from]
        if t_to is not None:
            rows = [r for r in rows if r["t"] <= t_to]
        if len(rows) < 2:
            return 0
        return rows[-1][key] - rows[0][key]

    def compute(self):
        m = {}
        ld = self.load
        gets = ld.get("gets", 0)
        survived = bool(self.stats1)
        # The cache's own hits: gets answered from memory, not rebuilt from
        # the origin.  The daemon counts an origin fill as a hit, so take the
        # origin fetches away.
        s0, s1 = self.stats0, self.stats1
        if survived and s0:
            hits = (s1["get_hits"] - s0["get_hits"]) - (s1.get("origin_fetches", 0) - s0.get("origin_fetches", 0))
            # The daemon's own count of gets over the same interval.
            gets = (s1.get("cmd_get", 0) - s0.get("cmd_get", 0)) or gets
        else:
            hits = self.daemon_counter("get_hits", 0) - self.daemon_counter("origin_fetches", 0)
        if not survived:
            # A dead daemon answers nothing: count every get that was due.
            cfg = ld.get("config", {})
            due = float(cfg.get("rate", 0) or 0) * float(ld.get("duration_s", 0) or 0) * float(cfg.get("get_ratio", 0.9) or 0.9)
            gets = max(gets, due)
        m["hit_rate"] = hits / gets if gets else None
        for k in ("p50_us", "p99_us", "max_us", "verify_errors", "errors"):
            m[k] = ld.get(k)
        m["oom_kills"] = self.vm1.get("oom_kill", self.samples[-1].get("oom_kill", 0)) - self.vm0.get("oom_kill", 0)
        bogo = [int(x) for x in re.findall(r"bogo-ops:\s*(\d+)", self.stress_yaml)]
        if not bogo:
            bogo = [int(x) for x in re.findall(r"\]\s+vm\s+(\d+)\s", self.stress)]
        m["stress_bogo_ops"] = sum(bogo) if bogo else 0
        m["daemon_oom_killed"] = sum(1 for x in self.oom_lines if re.search(r"Killed process \d+ \(cached\)", x))
        last = self.samples[-1]
        m["purged_ranges"] = self.vm1.get("volatile_purged_ranges", last.get("purged_ranges") or 0) - self.vm0.get("volatile_purged_ranges", 0)
        m["purged_pages"] = self.vm1.get("volatile_purged_pages", last.get("purged_pages") or 0) - self.vm0.get("volatile_purged_pages", 0)
        for k in ("rebuilds", "purged_objects", "psi_events", "psi_dropped_bytes", "origin_fetches"):
            if survived and s0:
                m[k] = s1.get(k, 0) - s0.get(k, 0)
            else:
                m[k] = self.daemon_counter(k, 0)
        m["daemon_verify_errors"] = s1.get("verify_errors", 0) if survived else None
        m["daemon_survived"] = 1 if survived else 0
        tp, tr, te = self.phase_time("pressure"), self.phase_time("recovery"), self.phase_time("end")

        def phase_hit_rate(a, b):
            if a is None or b is None:
                return None
            g = self.daemon_counter("cmd_get", a, b)
            h = self.daemon_counter("get_hits", a, b) - self.daemon_counter("origin_fetches", a, b)
            # Gets the load generator sent in that window (the daemon may be dead).
            rows = [r for r in self.samples if a <= r["t"] <= b]
            alive = bool(rows) and all(r.get("daemon_up") == 1 for r in rows)
            # The daemon's own count while it lived; the load generator's
            # (intervals only roughly aligned with samples) if it died.
            lg = sum(i.get("gets", 0) for i in self.intervals if a <= i["t"] <= b + 0.5)
            den = g if alive and g > 0 else max(g, lg)
            return h / den if den else None
        m["hit_rate_pressure"] = phase_hit_rate(tp, tr)
        m["hit_rate_recovery"] = phase_hit_rate(tr, te)
        pr = [i["p99_us"] for i in self.intervals if tp is not None and tr is not None and tp <= i["t"] <= tr + 1]
        m["p99_pressure_us"] = max(pr) if pr else None
        psi = [r for r in self.samples if r["t"] >= 0]
        m["psi_some_ms"] = (psi[-1]["psi_some_us"] - psi[0]["psi_some_us"]) / 1000 if len(psi) > 1 else 0
        m["psi_full_ms"] = (psi[-1]["psi_full_us"] - psi[0]["psi_full_us"]) / 1000 if len(psi) > 1 else 0
        m["min_mem_available_kb"] = min(r["mem_available_kb"] for r in self.samples)
        return m

    def histogram(self):
        return self.load.get("histogram", {}).get("buckets", [])


def fmt(v, key):
    if v is None:
        return "n/a"
    if key.startswith("hit_rate"):
        return "%.1f%%" % (100 * v)
    if key.endswith("_us"):
        return "%.1f ms" % (v / 1000) if v >= 1000 else "%.0f us" % v
    if isinstance(v, float) and v != int(v):
        return "%.1f" % v
    return "{:,}".format(int(v))


def fmt_ms(v, key):
    return fmt(v, key)


def change(a, b, key):
    """Change of a against b (pinned) as text."""
    if a is None or b is None:
        return ""
    if key.startswith("hit_rate"):
        return "%+.1f pt" % (100 * (a - b))
    if b == 0:
        return "" if a == 0 else "+%s" % fmt(a, key)
    return "%+.0f%%" % (100.0 * (a - b) / b)


class Report:
    def __init__(self, runs_dir, out):
        self.runs_dir = runs_dir
        self.out = out
        self.scenario = read_env(os.path.join(runs_dir, "scenario.conf"))
        self.host = read_env(os.path.join(runs_dir, "host.env"))
        self.runs = []
        for name in sorted(os.listdir(runs_dir)):
            p = os.path.join(runs_dir, name)
            if os.path.isdir(p) and os.path.isdir(os.path.join(p, "guest")):
                self.runs.append(Run(p))
        modes = self.scenario.get("MODES", " ".join(MODE_ORDER)).split()
        self.modes = [m for m in MODE_ORDER if m in modes] + [m for m in modes if m not in MODE_ORDER]
        self.good = [r for r in self.runs if r.ok]
        self.by_mode = {m: sorted([r for r in self.good if r.mode == m], key=lambda r: r.run) for m in self.modes}
        self.summary = {}
        self.extra = {}
        for m in self.modes:
            rs = self.by_mode[m]
            self.summary[m] = {k: mean_sd([r.metrics.get(k) for r in rs]) for k in KEYS}
            self.extra[m] = {k: mean_sd([r.metrics.get(k) for r in rs]) for k in EXTRA}
            self.extra[m]["runs"] = len(rs)

    # ---- data files --------------------------------------------------
    def write_csv(self):
        with open(os.path.join(self.out, "samples.csv"), "w", newline="") as f:
            w = None
            for r in self.good:
                prev = None
                for s in r.samples:
                    row = {"mode": r.mode, "run": r.run}
                    row.update(s)
                    row["t"] = "%.2f" % s["t"]
                    hr = ""
                    if prev and s.get("daemon_up") == 1 and prev.get("daemon_up") == 1 and s.get("cmd_get") is not None and prev.get("cmd_get") is not None:
                        g = s["cmd_get"] - prev["cmd_get"]
                        h = (s["get_hits"] - prev["get_hits"]) - (s["origin_fetches"] - prev["origin_fetches"])
                        if g > 0:
                            hr = "%.4f" % (h / g)
                    row["hit_rate"] = hr
                    if w is None:
                        w = csv.DictWriter(f, fieldnames=list(row.keys()))
                        w.writeheader()
                    w.writerow(row)
                    prev = s
        fields = ["mode", "run", "t", "ops", "gets", "sets", "hits", "misses", "errors",
                  "verify_errors", "conn_errors", "p50_us", "p90_us", "p99_us", "p999_us", "max_us"]
        with open(os.path.join(self.out, "load.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(fields)
            for r in self.good:
                for i in r.intervals:
                    w.writerow([r.mode, r.run] + [i.get(k, "") for k in fields[2:]])

    def write_json(self):
        with open(os.path.join(self.out, "summary.json"), "w") as f:
            json.dump(self.summary, f, indent=2, sort_keys=False)
            f.write("\n")
        details = {
            "scenario": self.scenario,
            "host": self.host,
            "modes": {m: dict(self.extra[m]) for m in self.modes},
            "runs": [{"mode": r.mode, "run": r.run, "ok": r.ok, "problem": r.problem,
                      "metrics": getattr(r, "metrics", None), "info": r.info,
                      "kernel_warnings": r.kernel_warnings} for r in self.runs],
        }
        with open(os.path.join(self.out, "details.json"), "w") as f:
            json.dump(details, f, indent=2)
            f.write("\n")

    # ---- plots -------------------------------------------------------
    def series(self, mode, fn, source="samples"):
        """fn(row, previous row, run) over each of the mode's runs: one list
        of (t, value) per run."""
        out = []
        for r in self.by_mode[mode]:
            rows = r.samples if source == "samples" else r.intervals
            prev = None
            pts = []
            for s in rows:
                v = fn(s, prev, r)
                prev = s
                if v is not None:
                    pts.append(("%.2f" % s["t"], v))
            out.append(pts)
        return out

    def phase_marks(self):
        marks = {}
        for r in self.good:
            for t, p in r.phases:
                if p in ("steady", "pressure", "recovery", "end"):
                    marks.setdefault(p, []).append(t)
        return {p: sum(v) / len(v) for p, v in marks.items()}

    def gnuplot(self, name, title, ylabel, data, logy=False, xlabel="seconds since the measured load started", extra="",
                style="lines lw 1.2"):
        """One SVG with one line per mode; data: {mode: [(x, y)]}."""
        ddir = os.path.join(self.out, "plot-data")
        os.makedirs(ddir, exist_ok=True)
        plots = []
        for m in self.modes:
            runs = [pts for pts in (data.get(m) or []) if pts]
            if not runs:
                continue
            # One line per run, the mode's colour; a blank line separates runs.
            fn = os.path.join(ddir, "%s-%s.dat" % (name, m))
            with open(fn, "w") as f:
                for pts in runs:
                    for x, y in pts:
                        f.write("%s %s\n" % (x, y))
                    f.write("\n")
            plots.append("'%s' using 1:2 with %s lc rgb '%s' title '%s'" % (fn, style, MODE_COLOR.get(m, "#000000"), gq(m)))
        if not plots:
            return None
        svg = os.path.join(self.out, name + ".svg")
        marks = ""
        if xlabel.startswith("seconds"):
            for p, t in self.phase_marks().items():
                marks += "set arrow from %.1f, graph 0 to %.1f, graph 1 nohead dt 2 lc rgb '#888888'\n" % (t, t)
                marks += "set label '%s' at %.1f, graph 0.97 left offset 0.3,0 font ',9' tc rgb '#666666'\n" % (p, t)
        script = """set terminal svg size 760,360 dynamic noenhanced font 'sans,11' background '#ffffff'
set output '%s'
set title '%s'
set xlabel '%s'
set ylabel '%s'
set grid lc rgb '#dddddd'
set key outside below horizontal
%s
%s
%s
plot %s
""" % (svg, gq(title), gq(xlabel), gq(ylabel), "set logscale y" if logy else "", marks, extra, ", \\\n  ".join(plots))
        with open(os.path.join(ddir, name + ".gp"), "w") as f:
            f.write(script)
        # A series that stays at 0 (no purges in a mode without them) makes
        # gnuplot warn about an empty range; that is not news.
        res = subprocess.run(["gnuplot", os.path.join(ddir, name + ".gp")], stderr=subprocess.PIPE, text=True)
        for line in res.stderr.splitlines():
            if "empty y range" not in line and line.strip():
                print("gnuplot: " + line, file=sys.stderr)
        if res.returncode != 0:
            raise RuntimeError("gnuplot failed on %s" % name)
        return name + ".svg"

    def plots(self):
        out = []

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
            if p is None or s.get("daemon_up") != 1 or p.get("daemon_up") != 1 or s.get("cmd_get") is None or p.get("cmd_get") is None:
                return None
            g = s["cmd_get"] - p["cmd_get"]
            h = (s["get_hits"] - p["get_hits"]) - (s["origin_fetches"] - p["origin_fetches"])
            return 100.0 * h / g if g > 0 else None

        specs = [
            ("mem_available", "MemAvailable (/proc/meminfo)", "MiB", col("mem_available_kb", 1 / 1024), False, "samples"),
            ("shmem", "Shmem (/proc/meminfo): the cache's memfd and other tmpfs", "MiB", col("shmem_kb", 1 / 1024), False, "samples"),
            ("volatile", "Volatile (/proc/meminfo): memory marked volatile", "MiB", col("volatile_kb", 1 / 1024), False, "samples"),
            ("purged", "volatile_purged_pages (/proc/vmstat) since the load started", "MiB", since_start("purged_pages", 4 / 1024), False, "samples"),
            ("hit_rate", "the cache's hit rate per second (gets not rebuilt from the origin)", "%", hit, False, "samples"),
            ("rebuilds", "origin fetches per second (misses and purged objects rebuilt)", "per s", rate("origin_fetches"), False, "samples"),
            ("p99", "loadgen p99 latency per second (open loop, from the intended send time)", "ms", lambda s, p, r: s["p99_us"] / 1000 if s.get("ops") else None, True, "intervals"),
            ("p50", "loadgen p50 latency per second", "ms", lambda s, p, r: s["p50_us"] / 1000 if s.get("ops") else None, True, "intervals"),
            ("max", "loadgen max latency per second", "ms", lambda s, p, r: s["max_us"] / 1000 if s.get("ops") else None, True, "intervals"),
            ("ops", "loadgen requests completed per second", "ops/s", lambda s, p, r: s.get("ops"), False, "intervals"),
            ("errors", "loadgen errors per second (refused, dropped, server errors)", "per s", lambda s, p, r: s.get("errors", 0) + s.get("conn_errors", 0), False, "intervals"),
            ("psi_some", "PSI memory 'some': stall time per second (/proc/pressure/memory)", "ms/s", rate("psi_some_us", 1 / 1000), False, "samples"),
            ("psi_full", "PSI memory 'full': stall time per second", "ms/s", rate("psi_full_us", 1 / 1000), False, "samples"),
            ("oom", "oom_kill (/proc/vmstat) since the load started", "kills", since_start("oom_kill"), False, "samples"),
            ("stress_rss", "stress-ng resident memory (all its processes)", "MiB", col("stress_rss_kb", 1 / 1024), False, "samples"),
        ]
        for name, title, ylabel, fn, logy, src in specs:
            data = {m: self.series(m, fn, src) for m in self.modes}
            svg = self.gnuplot(name, title, ylabel, data, logy)
            if svg:
                out.append((svg, title))
        # Latency CDFs from the merged histograms of each mode's runs.
        cdf, tail = {}, {}
        for m in self.modes:
            merged = {}
            for r in self.by_mode[m]:
                for v, n in r.histogram():
                    merged[v] = merged.get(v, 0) + n
            total = sum(merged.values())
            if not total:
                continue
            acc = 0
            pts, tpts = [], []
            last = 0
            keys = sorted(merged)
            for i, v in enumerate(keys):
                acc += merged[v]
                x = max(v, 1) / 1e6
                # Thinned to a point per 2% of latency: the plot stays small.
                if x < last * 1.02 and i != len(keys) - 1:
                    continue
                last = x
                pts.append((x, acc / total))
                if acc < total:
                    tpts.append((x, 1 - acc / total))
            cdf[m], tail[m] = [pts], [tpts]
        svg = self.gnuplot("latency_cdf", "latency CDF, steady + pressure + recovery, all runs", "fraction of requests",
                           cdf, False, "latency (ms, log scale)", "set logscale x\nset yrange [0:1]\nset key inside right bottom", "lines lw 2")
        if svg:
            out.append((svg, "latency CDF per mode"))
        svg = self.gnuplot("latency_tail", "latency tail: fraction of requests slower than x", "fraction slower (log)",
                           tail, True, "latency (ms, log scale)", "set logscale x\nset format y '%g'\nset key inside right top", "lines lw 2")
        if svg:
            out.append((svg, "latency tail per mode"))
        return out

    # ---- text --------------------------------------------------------
    def get(self, mode, key, extra=False):
        d = (self.extra if extra else self.summary).get(mode, {}).get(key, {})
        return d.get("mean") if isinstance(d, dict) else None

    def verdict(self):
        lines = []
        v = "volatile"
        s = self.scenario
        left_out = [r for r in self.runs if not r.ok]
        if left_out:
            lines.append("Left out of every figure below: %s." % "; ".join("%s (%s)" % (r.name, r.problem) for r in left_out))
        if v not in self.by_mode or not self.by_mode[v]:
            return ["The volatile mode has no successful run: no verdict."]
        vol_kernel = [r.info.get("has_volatile") == "1" for r in self.by_mode[v]]
        if not all(vol_kernel):
            lines.append("**Warning: the guest kernel has no volatile ranges (no `Volatile:` line in /proc/meminfo); "
                         "the daemon fell back to pinned in the volatile mode, so this run says nothing about the patch.**")
        ooms = {m: self.get(m, "oom_kills") for m in self.modes}
        hr = {m: self.get(m, "hit_rate") for m in self.modes}
        hrp = {m: self.get(m, "hit_rate_pressure", True) for m in self.modes}
        p99 = {m: self.get(m, "p99_us") for m in self.modes}
        bogo = {m: self.get(m, "stress_bogo_ops") for m in self.modes}
        ver = {m: self.get(m, "verify_errors") for m in self.modes}
        surv = {m: self.get(m, "daemon_survived", True) for m in self.modes}
        n = {m: len(self.by_mode[m]) for m in self.modes}
        killed = [m for m in self.modes if ooms[m]]
        clean = [m for m in self.modes if ooms[m] == 0]
        counts = sorted(set(n.values()))
        runs_text = ("%d run(s) per mode" % counts[0]) if len(counts) == 1 else \
            "runs per mode: " + ", ".join("%s %d" % (m, n[m]) for m in self.modes)
        lines.append("A %s MiB guest without swap ran a %s MiB cache under %s requests/s of Zipf load while stress-ng asked for %s MiB "
                     "(%s)." % (s.get("MEM_MB"), s.get("CACHE_MB"), s.get("RATE"), s.get("STRESS_MB"), runs_text))
        if killed:
            lines.append("**OOM kills** (mean per run): " + ", ".join("%s %s" % (m, fmt(ooms[m], "n")) for m in killed) +
                         "; none in " + (", ".join(clean) if clean else "no mode") + ".")
        else:
            lines.append("No mode had an OOM kill.")
        dead = [m for m in self.modes if surv[m] is not None and surv[m] < 1]
        if dead:
            lines.append("The daemon itself did not survive every run in: %s." % ", ".join(dead))
        lines.append("**Cache hit rate** over steady + pressure + recovery (gets answered from memory, not rebuilt): " +
                     ", ".join("%s %s" % (m, fmt(hr[m], "hit_rate")) for m in self.modes) +
                     "; during the pressure phase alone: " + ", ".join("%s %s" % (m, fmt(hrp[m], "hit_rate")) for m in self.modes) + ".")
        lines.append("**p99 latency** (open loop, whole measured run): " + ", ".join("%s %s" % (m, fmt(p99[m], "p99_us")) for m in self.modes) + ".")
        lines.append("**stress-ng bogo ops** (the work the competing job got done): " + ", ".join("%s %s" % (m, fmt(bogo[m], "n")) for m in self.modes) + ".")
        lines.append("**Purges**: the kernel purged %s ranges (%s MiB) per run in the volatile mode; the daemon rebuilt %s objects from the origin."
                     % (fmt(self.get(v, "purged_ranges"), "n"), fmt((self.get(v, "purged_pages", True) or 0) * 4 / 1024, "n"), fmt(self.get(v, "rebuilds"), "n")))
        if "psi" in self.modes and self.by_mode.get("psi"):
            ev = self.get("psi", "psi_events", True)
            lines.append("The psi mode's daemon reacted to %s PSI event(s) per run, dropping %s MiB of its data itself%s."
                         % (fmt(ev, "n"), fmt((self.get("psi", "psi_dropped_bytes", True) or 0) / 1048576, "n"),
                            " (it never reacted: in this run the psi mode behaved as pinned)" if not ev else ""))
        warned = ["%s-%d" % (r.mode, r.run) for r in self.good if r.kernel_warnings]
        if warned:
            lines.append("**The kernel printed warnings** (other than OOM reports) in: %s; see the counters table." % ", ".join(warned))
        bad = [m for m in self.modes if ver[m]]
        lines.append("Verify errors (wrong bytes served): " + ("none in any mode." if not bad else ", ".join("%s %s" % (m, fmt(ver[m], "n")) for m in bad) + "."))
        # Where the volatile mode loses.
        loses = []
        for m in self.modes:
            if m == v:
                continue
            if hr[m] is not None and hr[v] is not None and hr[m] > hr[v] + 0.005:
                loses.append("its hit rate is lower than %s's (%s vs %s)" % (m, fmt(hr[v], "hit_rate"), fmt(hr[m], "hit_rate")))
            p50m, p50v = self.get(m, "p50_us"), self.get(v, "p50_us")
            if p50m is not None and p50v is not None and p50m < p50v * 0.9:
                loses.append("its p50 is higher than %s's (%s vs %s)" % (m, fmt(p50v, "p50_us"), fmt(p50m, "p50_us")))
            hrr = self.get(m, "hit_rate_recovery", True), self.get(v, "hit_rate_recovery", True)
            if None not in hrr and hrr[0] > hrr[1] + 0.005:
                loses.append("after the pressure its hit rate is lower than %s's (recovery %s vs %s)" % (m, fmt(hrr[1], "hit_rate"), fmt(hrr[0], "hit_rate")))
            if p99[m] is not None and p99[v] is not None and p99[m] < p99[v] * 0.9:
                loses.append("its p99 is higher than %s's (%s vs %s)" % (m, fmt(p99[v], "p99_us"), fmt(p99[m], "p99_us")))
            if bogo[m] is not None and bogo[v] is not None and bogo[m] > bogo[v] * 1.1:
                loses.append("stress-ng did more work beside %s (%s vs %s bogo ops)" % (m, fmt(bogo[m], "n"), fmt(bogo[v], "n")))
        if loses:
            lines.append("**Where volatile loses**: " + "; ".join(loses) + ".")
        else:
            lines.append("Volatile was not clearly worse than another mode on hit rate, p99 or stress-ng work in this run.")
        return lines

    def table_rows(self, keys, extra=False):
        rows = []
        for m in self.modes:
            cells = [m]
            for k in keys:
                d = (self.extra if extra else self.summary)[m].get(k, {})
                mu, sd = d.get("mean"), d.get("stddev")
                cell = fmt(mu, k)
                if mu is not None and sd:
                    cell += " ± " + fmt(sd, k)
                pin = (self.extra if extra else self.summary).get("pinned", {}).get(k, {}).get("mean")
                if m != "pinned" and "pinned" in self.modes and k in CHANGE:
                    ch = change(mu, pin, k)
                    if ch:
                        cell += " (%s)" % ch
                cells.append(cell)
            rows.append(cells)
        return rows

    def counters(self):
        """The kernel's own counters per run: proof of purges and kills."""
        rows = []
        for r in sorted(self.good, key=lambda r: (self.modes.index(r.mode) if r.mode in self.modes else 9, r.run)):
            vol_peak = max((s.get("volatile_kb") or 0) for s in r.samples)
            rows.append([r.mode, str(r.run), r.info.get("has_volatile", "?"),
                         "%d" % (vol_peak / 1024), fmt(r.metrics["purged_ranges"], "n"),
                         fmt(r.metrics["purged_pages"], "n"), fmt(r.metrics["oom_kills"], "n"),
                         fmt(r.metrics["psi_some_ms"], "n"), fmt(r.metrics["min_mem_available_kb"] / 1024, "n"),
                         "yes" if r.metrics["daemon_survived"] else "no",
                         str(len(r.kernel_warnings)),
                         "%.0f" % r.load.get("ops_per_s", 0),
                         "%s %s" % (r.clocksource, ("%.0f MHz" % r.guest_tsc_mhz) if r.guest_tsc_mhz else ""),
                         "; ".join(sorted(set(re.sub(r".*Killed process \d+ \(([^)]*)\).*", r"\1", x) for x in r.oom_lines if "Killed process" in x))) or "-"])
        return rows

    def environment(self):
        h, s = self.host, self.scenario
        first = min(self.good, key=lambda r: (r.run, self.modes.index(r.mode) if r.mode in self.modes else 9)) if self.good else None
        info = first.info if first else {}
        qcmd = first.qemu_cmd.replace(ROOT_PREFIX, "") if first else ""
        accel = h.get("accel", "tcg")
        return [
            ("guest kernel", "%s (%s)" % (info.get("kernel", "?"), info.get("kernel_build", "?"))),
            ("kernel image", "%s, sha256 %s" % (h.get("kernel_path", "?"), h.get("kernel_sha256", "?"))),
            ("kernel config hash", h.get("kernel_config_sha256", "?")),
            ("patch series hash", "%s (%s patches in kernel/patches/)" % (h.get("series_hash", "?"), h.get("series_patches", "?"))),
            ("volatile ranges in the guest kernel", "yes" if info.get("has_volatile") == "1" else "NO"),
            ("guest RAM / CPUs", "%s MiB asked (MemTotal %s kB), %s vCPU(s) asked, %s seen by the guest, no swap (SwapTotal %s kB)" % (
                s.get("MEM_MB"), info.get("mem_total_kb"), s.get("CPUS"), info.get("cpus"), info.get("swap_kb"))),
            ("acceleration", "%s%s" % (accel.upper(), " (the guest ran under TCG: every figure is 5-10x slower than native)" if accel == "tcg" else "")),
            ("QEMU", h.get("qemu_version", "?")),
            ("QEMU command line (first guest)", qcmd),
            ("host CPU", "%s, %s CPUs, host kernel %s" % (h.get("host_cpu", "?"), h.get("host_cpus", "?"), h.get("host_kernel", "?"))),
            ("daemon", info.get("cached_version", "?")),
            ("stress-ng", info.get("stress_ng_version", "?")),
            ("PSI in the guest", info.get("psi_memory", "?")),
            ("source commit / date", "%s / %s" % (h.get("commit", "?"), h.get("date", "?"))),
        ]

    def method(self):
        s = self.scenario
        oracle = [r.info.get("cache_mb") for r in self.by_mode.get("oracle", [])]
        return [
            "Scenario `%s`: %s." % (s.get("NAME"), s.get("DESCRIPTION", "")),
            "Each run boots a fresh guest (%s MiB, %s vCPU, no swap) on the same kernel and image; the modes are interleaved "
            "(run 1: %s; run 2: ...)." % (s.get("MEM_MB"), s.get("CPUS"), ", ".join(self.modes)),
            "cached `-m %s -t %s --idle %s --origin gen:%s --verify`, `--mode` pinned, psi (%s) or volatile; "
            "a miss or a purged object is rebuilt by the origin at a cost of %s us."
            % (s.get("CACHE_MB"), s.get("DAEMON_THREADS"), s.get("IDLE_S"), s.get("ORIGIN"), s.get("PSI_ARGS") or "the daemon's default PSI thresholds",
               re.sub(r".*cost=(\d+).*", r"\1", s.get("ORIGIN", "cost=?"))),
            "oracle: pinned, with `-m` = MemAvailable before the daemon starts - %s MiB (stress-ng) - %s MiB (margin for the index, "
            "loadgen and the sampler), measured in each guest: %s MiB." % (s.get("STRESS_MB"), s.get("ORACLE_MARGIN_MB"), ", ".join(str(x) for x in oracle) or "n/a"),
            "loadgen: %s keys, %s, open loop at %s requests/s (90%% get, 10%% set), %s connection(s), `--verify` (every byte of every hit checked)."
            % (s.get("KEYS"), s.get("DIST"), s.get("RATE"), s.get("LOAD_CONNS")),
            "Phases: warm-up (every key set once, then %s s of load), steady %s s, pressure %s s (`nice -n 19 stress-ng --vm %s --vm-bytes %sM "
            "--vm-keep --no-madvise --vm-method %s`), recovery %s s. Samples every second (1-2 s under TCG)."
            % (s.get("WARMUP_S"), s.get("STEADY_S"), s.get("PRESSURE_S"), s.get("STRESS_WORKERS"), s.get("STRESS_MB"), s.get("STRESS_METHOD"), s.get("RECOVERY_S")),
            "hit_rate = (daemon get_hits - origin_fetches) / gets sent, over steady + pressure + recovery (the daemon counts a get "
            "answered by an origin rebuild as a hit; here it is a miss). Latencies are loadgen's, from the intended send time "
            "(no coordinated omission). oom_kills is the guest's /proc/vmstat oom_kill over the run; purged_ranges its "
            "volatile_purged_ranges; rebuilds the daemon's count of purged objects rebuilt.",
        ]

    def write_text(self, plots):
        heads = ["mode"] + KEYS
        xheads = ["mode"] + EXTRA
        cheads = ["mode", "run", "volatile kernel", "peak Volatile MiB", "purged ranges", "purged pages", "oom_kill",
                  "PSI some ms", "min MemAvailable MiB", "daemon survived", "kernel warnings", "requests/s done", "guest clock", "OOM victims"]
        failed = [r for r in self.runs if not r.ok]
        verdict = self.verdict()
        # summary.txt: what demo.sh prints.
        with open(os.path.join(self.out, "summary.txt"), "w") as f:
            f.write(text_table(["mode", "hit_rate", "p50_us", "p99_us", "max_us", "verify_errors", "oom_kills", "stress_bogo_ops", "purged_ranges", "rebuilds"],
                               [[r[0]] + [c.split(" (")[0] for c in r[1:]] for r in self.table_rows(KEYS)]) + "\n")
            if failed:
                f.write("failed guests (left out): %s\n" % ", ".join("%s (%s)" % (r.name, r.problem) for r in failed))
        md = ["# Volatile ranges under memory pressure: experiment report", ""]
        md += ["## Verdict", ""] + [l + "\n" for l in verdict]
        md += ["## Summary (mean ± sd over runs; change against pinned)", "", md_table(heads, self.table_rows(KEYS)), ""]
        md += ["More metrics:", "", md_table(xheads, self.table_rows(EXTRA, True)), ""]
        if failed:
            md += ["Guests that failed and are left out: " + ", ".join("%s (%s)" % (r.name, r.problem) for r in failed), ""]
        md += ["## The kernel's counters, per run", "", md_table(cheads, self.counters()), ""]
        md += ["## Time series (one line per run, coloured by mode; dashed lines: mean phase starts)", ""]
        for svg, title in plots:
            md += ["![%s](%s)" % (title, svg), ""]
        md += ["## Method", ""] + ["- " + l for l in self.method()] + [""]
        md += ["## Environment", "", md_table(["", ""], [[a, b] for a, b in self.environment()]), ""]
        md += ["## Files", "", "summary.json (per mode, mean and stddev), details.json (per run), samples.csv (every run's samples), "
               "load.csv (loadgen's interval lines), *.svg (plots); the guests' own output is under runs/.", ""]
        with open(os.path.join(self.out, "report.md"), "w") as f:
            f.write("\n".join(md))
        # index.html: the same, self-contained.
        h = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>Volatile ranges under memory pressure</title>",
             "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
             "table{border-collapse:collapse;margin:1em 0;font-size:90%}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}"
             "td:first-child,th:first-child{text-align:left}.verdict{background:#f4f8ff;border-left:4px solid #1f77b4;padding:0.5em 1em}"
             ".plots{display:flex;flex-wrap:wrap}.plots div{margin:4px}code{background:#f3f3f3}.env td{text-align:left}</style></head><body>",
             "<h1>Volatile ranges under memory pressure</h1>", "<div class='verdict'><h2>Verdict</h2>"]
        h += ["<p>%s</p>" % md_inline(l) for l in verdict]
        h += ["</div>", "<h2>Summary <small>(mean ± sd over runs; change against pinned)</small></h2>", html_table(heads, self.table_rows(KEYS))]
        h += ["<p>More metrics:</p>", html_table(xheads, self.table_rows(EXTRA, True))]
        if failed:
            h += ["<p>Guests that failed and are left out: %s</p>" % html.escape(", ".join("%s (%s)" % (r.name, r.problem) for r in failed))]
        h += ["<h2>The kernel's counters, per run</h2>", html_table(cheads, self.counters())]
        h += ["<h2>Time series <small>(one line per run, coloured by mode; dashed lines: mean phase starts)</small></h2>", "<div class='plots'>"]
        for svg, title in plots:
            h += ["<div>%s</div>" % inline_svg(os.path.join(self.out, svg))]
        h += ["</div>", "<h2>Method</h2><ul>"] + ["<li>%s</li>" % md_inline(l) for l in self.method()] + ["</ul>"]
        h += ["<h2>Environment</h2>", "<table class='env'>"] + [
            "<tr><td>%s</td><td><code>%s</code></td></tr>" % (html.escape(a), html.escape(b)) for a, b in self.environment()] + ["</table>"]
        h += ["<p>Files: summary.json, details.json, samples.csv, load.csv, the SVG plots; the guests' output is under runs/.</p></body></html>"]
        with open(os.path.join(self.out, "index.html"), "w") as f:
            f.write("\n".join(h))

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs-dir", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rep = Report(a.runs_dir, a.out)
    if not rep.good:
        print("report.py: no successful run in %s" % a.runs_dir, file=sys.stderr)
        for r in rep.runs:
            print("  %s: %s" % (r.name, r.problem), file=sys.stderr)
        return 1
    if not shutil.which("gnuplot"):
        print("report.py: gnuplot is missing", file=sys.stderr)
        return 1
    rep.write_csv()
    rep.write_json()
    plots = rep.plots()
    rep.write_text(plots)
    return 0


if __name__ == "__main__":
    sys.exit(main())
