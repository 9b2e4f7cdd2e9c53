#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""report.py - the fleet section of the report, from one scripts/fleet.sh run.

usage: scripts/fleet/report.py --dir DIR

DIR is fleet.sh's --out folder: DIR/runs/ holds fleet.env, loadgen.json and
loadgen.lines (loadgen through the proxy), nodeI-samples.jsonl and
proxy-samples.jsonl (the host's samples of every node's and the proxy's
statistics), events.txt, and one runner folder per guest (nodeI/out/ as
written by image/guest/fleet-node.sh).

Writes into DIR: summary.json, fleet.md, fleet.html (the plots inlined),
latency.svg, nodes.svg, purges.svg, guest.svg, and summary.txt (the
table fleet.sh prints).  Python standard library and gnuplot only.
"""
import argparse
import csv
import html
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from reportlib import (html_table, md_table, median, pct, read_env, read_jsonl,  # noqa: E402
                       read_stats, text_table, to_float)

def read_node_samples(path):
    """fleet.sh's node samples: "t T" then "STAT name value" lines, per sample."""
    rows = []
    if os.path.exists(path):
        for line in open(path, errors="replace"):
            p = line.split()
            if len(p) == 2 and p[0] == "t":
                rows.append({"t": float(p[1])})
            elif len(p) == 3 and p[0] == "STAT" and rows:
                try:
                    rows[-1][p[1]] = float(p[2])
                except ValueError:
                    rows[-1][p[1]] = p[2]
    return [r for r in rows if len(r) > 1]


def read_proxy_samples(path):
    """fleet.sh's proxy samples: "T JSON" lines."""
    rows = []
    if os.path.exists(path):
        for line in open(path, errors="replace"):
            t, _, js = line.partition(" ")
            try:
                d = json.loads(js)
                d["t"] = float(t)
                rows.append(d)
            except ValueError:
                pass
    return rows

def fmt(v, nd=1, unit=""):
    if v is None:
        return "-"
    if isinstance(v, float) and not v.is_integer() or nd and isinstance(v, float) and abs(v) < 1000:
        return f"{v:.{nd}f}{unit}"
    return f"{int(v)}{unit}"


class Fleet:
    def __init__(self, d):
        self.dir = d
        self.runs = os.path.join(d, "runs")
        self.env = read_env(os.path.join(self.runs, "fleet.env"))
        self.nodes = int(self.env.get("NODES", "3"))
        self.pnode = int(self.env.get("PRESSURE_NODE", "1"))
        self.p0 = float(self.env.get("PRESSURE_START", "0"))
        self.p1 = self.p0 + float(self.env.get("PRESSURE_SECONDS", "0"))
        self.lg = {}
        p = os.path.join(self.runs, "loadgen.json")
        if os.path.exists(p):
            self.lg = json.load(open(p))
            self.lg.pop("histogram", None)
        self.lines = read_jsonl(os.path.join(self.runs, "loadgen.lines"))
        self.samples = {i: read_node_samples(os.path.join(self.runs, f"node{i}-samples.txt"))
                        for i in self.nodes_list()}
        self.proxy = read_proxy_samples(os.path.join(self.runs, "proxy-samples.txt"))
        self.load = []
        p = os.path.join(self.runs, "host-load.txt")
        if os.path.exists(p):
            for line in open(p):
                try:
                    t, l1 = line.split()
                    self.load.append((float(t), float(l1)))
                except ValueError:
                    pass
        # the moments the orders were sent, as the host logged them
        ev = os.path.join(self.runs, "events.txt")
        if os.path.exists(ev):
            for line in open(ev):
                w = line.split()
                if len(w) == 2 and w[1] == "pressure":
                    self.p0 = float(w[0])
                elif len(w) == 2 and w[1] == "calm":
                    self.p1 = float(w[0])
        # The pressure phase: from the order to the end of stress-ng as the
        # guest saw it (stress-ng's --timeout runs on the guest's clock).
        self.p0_order = self.p0
        w = self.stress_window()
        if w:
            self.p1 = max(w[1], self.p0)

    def nodes_list(self):
        return list(range(1, self.nodes + 1))

    def phase(self, t):
        if t <= self.p0:
            return "before"
        if t <= self.p1:
            return "pressure"
        return "after"

    # ---- fleet-wide figures through the proxy ---------------------------
    def fleet_figures(self):
        lg = self.lg
        f = {
            "ops": lg.get("ops"), "ops_per_s": lg.get("ops_per_s"),
            "gets": lg.get("gets"), "hits": lg.get("hits"), "misses": lg.get("misses"),
            "hit_rate_pct": pct(lg.get("hits", 0), lg.get("hits", 0) + lg.get("misses", 0)),
            "errors": lg.get("errors"), "verify_errors": lg.get("verify_errors"),
            "conn_errors": lg.get("conn_errors"),
            "p50_ms": lg.get("p50_us", 0) / 1000, "p99_ms": lg.get("p99_us", 0) / 1000,
            "p999_ms": lg.get("p999_us", 0) / 1000, "max_ms": lg.get("max_us", 0) / 1000,
        }
        phases = {}
        for name in ("before", "pressure", "after"):
            sel = [s for s in self.lines if self.phase(s["t"]) == name]
            hits = sum(s["hits"] for s in sel)
            misses = sum(s["misses"] for s in sel)
            phases[name] = {
                "seconds": len(sel),
                "ops": sum(s["ops"] for s in sel),
                "hit_rate_pct": pct(hits, hits + misses),
                "errors": sum(s["errors"] for s in sel),
                "verify_errors": sum(s["verify_errors"] for s in sel),
                "p99_ms_median": (median([s["p99_us"] for s in sel]) or 0) / 1000 if sel else None,
                "p99_ms_worst": max(s["p99_us"] for s in sel) / 1000 if sel else None,
                "p50_ms_median": (median([s["p50_us"] for s in sel]) or 0) / 1000 if sel else None,
                "host_load_median": median([l for t, l in self.load
                                            if t >= 0 and self.phase(t) == name]),
            }
        f["phases"] = phases
        return f

    # ---- per node: deltas of the host's samples over the measured run ----
    def node_figures(self, i):
        rows = self.samples[i]
        meas = [r for r in rows if isinstance(r.get("t"), float) and r["t"] >= 0]
        first = meas[0] if meas else (rows[0] if rows else {})
        last = rows[-1] if rows else {}

        def d(k):
            return last.get(k, 0) - first.get(k, 0) if isinstance(last.get(k, 0), float) else None

        def at_phase(k, name):
            sel = [r for r in meas if self.phase(r["t"]) == name]
            prev = [r for r in meas if r["t"] <= (self.p0 if name != "before" else 0)]
            if name == "after":
                prev = [r for r in meas if r["t"] <= self.p1]
            start = prev[-1] if prev else first
            return sel[-1].get(k, 0) - start.get(k, 0) if sel else None

        cmd_get = d("cmd_get")
        fetches = d("origin_fetches")
        out = read_stats(os.path.join(self.runs, f"node{i}", "out", "stats-end.txt"), to_float)
        fig = {
            "node": f"node{i}",
            "pressure": i == self.pnode,
            "items_end": last.get("curr_items"),
            "mb_end": (last.get("bytes") or 0) / 1e6,
            "gets": cmd_get,
            "sets": d("cmd_set"),
            "memory_hit_rate_pct": (100.0 - pct(fetches, cmd_get)) if cmd_get else None,
            "origin_fetches": fetches,
            "purged_ranges": d("purged_ranges"),
            "purged_objects": d("purged_objects"),
            "rebuilds": d("rebuilds"),
            "evictions": d("evictions"),
            "verify_errors": last.get("verify_errors"),
            "volatile_mb_end": (last.get("volatile_bytes") or 0) / 1e6,
            "mode": out.get("mode", "-"),
        }
        for name in ("before", "pressure", "after"):
            g = at_phase("cmd_get", name)
            o = at_phase("origin_fetches", name)
            fig[f"memory_hit_rate_{name}_pct"] = (100.0 - pct(o, g)) if g else None
        # the proxy's view: requests sent to the node, errors, ejections
        pf = [p for p in self.proxy if p.get("t", -1) >= 0]
        if pf:
            a = pf[0].get("fleet", {}).get(f"node{i}", {})
            b = self.proxy[-1].get("fleet", {}).get(f"node{i}", {})
            fig["proxy_requests"] = b.get("requests", 0) - a.get("requests", 0)
            fig["proxy_timeouts"] = b.get("server_timedout", 0) - a.get("server_timedout", 0)
            fig["proxy_errors"] = b.get("server_err", 0) - a.get("server_err", 0)
            fig["ejected"] = bool(b.get("server_ejected_at", 0))
        # the guest's own samples
        gs = self.guest_samples(i)
        if gs:
            fig["min_mem_available_mb"] = min(r[1] for r in gs) / 1024
            fig["max_volatile_mb"] = max(r[2] for r in gs) / 1024
            fig["max_psi_some_avg10"] = max(r[3] for r in gs)
        dm = os.path.join(self.runs, f"node{i}", "out", "dmesg.txt")
        fig["oom_kills"] = (open(dm, errors="replace").read().count("Killed process")
                            if os.path.exists(dm) else None)
        return fig

    def guest_events(self, i):
        p = os.path.join(self.runs, f"node{i}", "out", "events.txt")
        return open(p, errors="replace").read().splitlines() if os.path.exists(p) else []

    def guest_clock(self, i):
        """A function from guest uptime to the host's time axis, or None.
        The orders (pressure, calm, stop) are anchors known on both clocks;
        between them the mapping is linear, outside them it continues the
        nearest segment.  A TCG guest's clock lags on a busy host, and by a
        varying amount, so one offset is not enough."""
        host = {}
        ev = os.path.join(self.runs, "events.txt")
        if os.path.exists(ev):
            for line in open(ev):
                w = line.split()
                if len(w) == 2:
                    host[w[1]] = float(w[0])
        anchors = []
        for e in self.guest_events(i):
            w = e.split()
            if len(w) == 3 and w[1] == "order:" and w[2] in host and w[2] != "go":
                anchors.append((float(w[0]), host[w[2]]))
        anchors.sort()
        if not anchors:
            return None
        if len(anchors) == 1:
            return lambda u: anchors[0][1] + (u - anchors[0][0])

        def clock(u):
            k = 0
            while k < len(anchors) - 2 and u > anchors[k + 1][0]:
                k += 1
            (u0, h0), (u1, h1) = anchors[k], anchors[k + 1]
            return h0 + (u - u0) * ((h1 - h0) / (u1 - u0) if u1 > u0 else 1.0)
        return clock

    def stress_window(self):
        """(start, end) of stress-ng in the pressured guest on the host's
        time axis, from the guest's events; None when unknown."""
        clock = self.guest_clock(self.pnode)
        start = end = None
        for e in self.guest_events(self.pnode):
            w = e.split()
            if "stress-ng" in e and e.endswith("started"):
                start = float(w[0])
            elif "stress-ng ended" in e:
                end = float(w[0])
        if clock and start is not None and end is not None:
            return clock(start), clock(end)
        return None

    def guest_samples(self, i):
        """[(t, mem_available_kb, volatile_kb, psi_some_avg10, purged_ranges,
        rebuilds, bytes, stress)] from the node's samples.csv (written by
        image/guest/sampler.sh), t on the host's time axis (guest_clock)."""
        p = os.path.join(self.runs, f"node{i}", "out", "samples.csv")
        clock = self.guest_clock(i)
        if not os.path.exists(p) or not clock:
            return []
        cols = ("mem_available_kb", "volatile_kb", "psi_some_avg10",
                "cached_purged_ranges", "rebuilds", "bytes")
        rows = []
        with open(p, newline="") as f:
            for r in csv.DictReader(f):
                try:
                    v = [clock(float(r["t"]))] + [float(r[c] or 0) for c in cols]
                    v.append(1.0 if float(r["stress_procs"] or 0) > 0 else 0.0)
                except (KeyError, TypeError, ValueError):
                    continue
                rows.append(v)
        return rows

    def near_figures(self):
        out = os.path.join(self.runs, f"node{self.pnode}", "out")
        p = os.path.join(out, "near-loadgen.json")
        if not os.path.exists(p):
            return None
        j = json.load(open(p))
        st = read_stats(os.path.join(out, "near-stats-end.txt"), to_float)
        return {
            "node": f"node{self.pnode}",
            "ops": j.get("ops"), "hits": j.get("hits"), "misses": j.get("misses"),
            "hit_rate_pct": pct(j.get("hits", 0), j.get("hits", 0) + j.get("misses", 0)),
            "errors": j.get("errors"), "verify_errors": j.get("verify_errors"),
            "p50_ms": j.get("p50_us", 0) / 1000, "p99_ms": j.get("p99_us", 0) / 1000,
            "cache_gets": st.get("cmd_get"),
            "fetched_from_fleet": st.get("origin_fetches"),
            "refetched_after_purge": st.get("rebuilds"),
            "purged_ranges": st.get("purged_ranges"), "purged_objects": st.get("purged_objects"),
            "evictions": st.get("evictions"), "origin_errors": st.get("origin_errors"),
            "daemon_verify_errors": st.get("verify_errors"),
        }

    # ---- plots --------------------------------------------------------------
    def plots(self):
        if not shutil.which("gnuplot"):
            return []
        made = []
        d = self.dir
        shade = (f"set object 1 rect from {self.p0},graph 0 to {self.p1},graph 1 "
                 "fillcolor rgb '#f4d9d9' fillstyle solid 0.5 noborder behind\n")
        head = ("set terminal svg size 760,320 dynamic font 'sans,11' background '#ffffff'\n"
                "set grid\nset key outside right top\nset xlabel 'seconds of the measured run'\n")
        # 1. latency through the proxy
        with open(os.path.join(d, "latency.dat"), "w") as f:
            for s in self.lines:
                f.write(f"{s['t']} {s['p50_us'] / 1000} {s['p99_us'] / 1000} {s['ops_per_s']}\n")
        with open(os.path.join(d, "load.dat"), "w") as f:
            for t, l in self.load:
                if t >= 0:
                    f.write(f"{t} {l}\n")
        # 2. per node, per sample: share of gets served from memory
        with open(os.path.join(d, "nodes.dat"), "w") as f:
            for i in self.nodes_list():
                rows = [r for r in self.samples[i] if isinstance(r.get("t"), float) and r["t"] >= 0]
                for a, b in zip(rows, rows[1:]):
                    g = b.get("cmd_get", 0) - a.get("cmd_get", 0)
                    o = b.get("origin_fetches", 0) - a.get("origin_fetches", 0)
                    if g > 0:
                        f.write(f"{b['t']} {100.0 - 100.0 * o / g} {b.get('purged_ranges', 0)} "
                                f"{b.get('rebuilds', 0)}\n")
                f.write("\n\n")
        # 3. the guest under pressure: memory
        gs = self.guest_samples(self.pnode)
        with open(os.path.join(d, "guest.dat"), "w") as f:
            for r in gs:
                f.write(f"{r[0]} {r[1] / 1024} {r[2] / 1024} {r[6] / 1e6} {r[3]}\n")
        nl = self.nodes_list()
        scripts = {
            "latency.svg": head + shade +
            "set ylabel 'ms'\nset logscale y\n"
            "set title 'Latency through the proxy, per second (shaded: stress-ng in node%d)'\n" % self.pnode +
            ("set y2label 'host load (1-min average)'\nset y2tics\nset ytics nomirror\n"
             if self.load else "") +
            "plot 'latency.dat' using 1:3 with lines lw 2 title 'p99', "
            "'' using 1:2 with lines title 'p50'" +
            (", 'load.dat' using 1:2 axes x1y2 with lines dt 2 lc rgb '#555555' "
             "title 'host load'" if self.load else "") + "\n",
            "nodes.svg": head + shade +
            "set ylabel 'percent of gets'\nset yrange [0:105]\n"
            "set title 'Gets served from memory (not rebuilt from the origin), per node'\n"
            "plot " + ", ".join(f"'nodes.dat' index {k} using 1:2 with lines lw 2 title 'node{i}'"
                                for k, i in enumerate(nl)) + "\n",
            "purges.svg": head + shade +
            "set ylabel 'count'\n"
            "set title 'Purged ranges and rebuilds, per node (cumulative)'\n"
            "plot " + ", ".join(
                f"'nodes.dat' index {k} using 1:3 with lines lw 2 title 'node{i} purged ranges', "
                f"'' index {k} using 1:4 with lines dt 2 title 'node{i} rebuilds'"
                for k, i in enumerate(nl)) + "\n",
        }
        if gs:
            scripts["guest.svg"] = (
                head + shade + "set ylabel 'MiB'\n"
                f"set title 'node{self.pnode} (under pressure): memory'\n"
                "plot 'guest.dat' using 1:2 with lines lw 2 title 'MemAvailable', "
                "'' using 1:4 with lines lw 2 title 'cached bytes', "
                "'' using 1:3 with lines title 'Volatile (meminfo)'\n")
        for name, text in scripts.items():
            gp = os.path.join(d, name.replace(".svg", ".gp"))
            with open(gp, "w") as f:
                f.write(f"set output '{name}'\n" + text)
            r = subprocess.run(["gnuplot", os.path.basename(gp)], cwd=d,
                               capture_output=True, text=True)
            if r.returncode == 0 and os.path.exists(os.path.join(d, name)):
                made.append(name)
            else:
                sys.stderr.write(f"report.py: gnuplot failed for {name}: {r.stderr[-300:]}\n")
        return made


def table(heads, rows):
    return heads, rows

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    fl = Fleet(a.dir)
    env = fl.env
    ff = fl.fleet_figures()
    nodes = [fl.node_figures(i) for i in fl.nodes_list()]
    near = fl.near_figures()
    plots = fl.plots()
    summary = {"config": env, "fleet": ff, "nodes": nodes, "near_cache": near,
               "plots": plots}
    json.dump(summary, open(os.path.join(a.dir, "summary.json"), "w"), indent=1)

    t_fleet = (["figure", "whole run", "before", f"node{fl.pnode} under pressure", "after"], [])
    ph = ff["phases"]
    for label, key, nd in [("seconds", "seconds", 0), ("ops", "ops", 0),
                           ("hit rate %", "hit_rate_pct", 2),
                           ("p50 ms (median of 1-s)", "p50_ms_median", 1),
                           ("p99 ms (median of 1-s)", "p99_ms_median", 1),
                           ("worst 1-s p99 ms", "p99_ms_worst", 1),
                           ("errors", "errors", 0), ("verify errors", "verify_errors", 0),
                           ("host load (1-min avg, median)", "host_load_median", 1)]:
        whole = {"seconds": len(fl.lines), "ops": ff["ops"], "hit_rate_pct": ff["hit_rate_pct"],
                 "p50_ms_median": ff["p50_ms"], "p99_ms_median": ff["p99_ms"],
                 "p99_ms_worst": ff["max_ms"], "errors": ff["errors"],
                 "verify_errors": ff["verify_errors"],
                 "host_load_median": median([l for t, l in fl.load if t >= 0])}[key]
        t_fleet[1].append([label, fmt(whole, nd)] + [fmt(ph[p][key], nd) for p in
                                                      ("before", "pressure", "after")])
    t_fleet[1][3][1] = fmt(ff["p50_ms"], 1) + " (whole-run p50)"
    t_fleet[1][4][1] = fmt(ff["p99_ms"], 1) + " (whole-run p99)"
    t_fleet[1][5][1] = fmt(ff["max_ms"], 1) + " (max)"

    nh = ["node", "requests (proxy)", "gets", "from memory %", "before", "pressure", "after",
          "purged ranges", "purged objects", "rebuilds", "evictions", "MB end",
          "min MemAvailable MiB", "OOM kills", "proxy timeouts", "ejected", "verify errors"]
    nr = []
    for n in nodes:
        nr.append([n["node"] + (" *" if n["pressure"] else ""), fmt(n.get("proxy_requests"), 0),
                   fmt(n["gets"], 0), fmt(n["memory_hit_rate_pct"], 2),
                   fmt(n["memory_hit_rate_before_pct"], 2), fmt(n["memory_hit_rate_pressure_pct"], 2),
                   fmt(n["memory_hit_rate_after_pct"], 2),
                   fmt(n["purged_ranges"], 0), fmt(n["purged_objects"], 0), fmt(n["rebuilds"], 0),
                   fmt(n["evictions"], 0), fmt(n["mb_end"], 1),
                   fmt(n.get("min_mem_available_mb"), 0), fmt(n.get("oom_kills"), 0),
                   fmt(n.get("proxy_timeouts"), 0), "yes" if n.get("ejected") else "no",
                   fmt(n["verify_errors"], 0)])
    tot = lambda k: sum((n.get(k) or 0) for n in nodes)
    g = tot("gets")
    nr.append(["fleet", fmt(tot("proxy_requests"), 0), fmt(g, 0),
               fmt(100.0 - pct(tot("origin_fetches"), g), 2) if g else "-", "", "", "",
               fmt(tot("purged_ranges"), 0), fmt(tot("purged_objects"), 0),
               fmt(tot("rebuilds"), 0), fmt(tot("evictions"), 0), fmt(tot("mb_end"), 1), "",
               fmt(tot("oom_kills"), 0), fmt(tot("proxy_timeouts"), 0), "",
               fmt(tot("verify_errors"), 0)])
    nt = (nh, nr)

    near_t = None
    if near:
        near_t = (["near cache (in " + near["node"] + ")", "value"], [
            ["loadgen ops / hits / misses", f"{fmt(near['ops'], 0)} / {fmt(near['hits'], 0)} / {fmt(near['misses'], 0)}"],
            ["hit rate %", fmt(near["hit_rate_pct"], 2)],
            ["errors / verify errors", f"{fmt(near['errors'], 0)} / {fmt(near['verify_errors'], 0)}"],
            ["p50 / p99 ms", f"{fmt(near['p50_ms'], 1)} / {fmt(near['p99_ms'], 1)}"],
            ["values fetched from the fleet", fmt(near["fetched_from_fleet"], 0)],
            ["of which refetched after a purge", fmt(near["refetched_after_purge"], 0)],
            ["purged ranges / objects", f"{fmt(near['purged_ranges'], 0)} / {fmt(near['purged_objects'], 0)}"],
            ["evictions", fmt(near["evictions"], 0)],
            ["origin errors", fmt(near["origin_errors"], 0)],
        ])

    setup = (f"{env.get('NODES')} guests of {env.get('MEM_MB')} MiB ({env.get('KERNEL')}, one CPU each, "
             f"TCG, on a host of {env.get('HOST_CPUS', '?')} CPUs shared with other work), cached -m {env.get('CACHE_MB')} in volatile mode with the gen origin "
             f"({env.get('GEN')}), behind nutcracker (ketama, auto_eject_hosts, timeout "
             f"{env.get('TIMEOUT_MS')} ms, retry {env.get('RETRY_MS')} ms, failure limit "
             f"{env.get('FAILURES')}) on the host.  loadgen through the proxy: {env.get('KEYS')} "
             f"keys, Zipf 0.99, {env.get('RATE')} ops/s open loop, 9:1 gets:sets, --verify, "
             f"{env.get('DURATION')} s after a warm-up that set every key once "
             f"({env.get('WARMUP_SECONDS')} s).  stress-ng in node{fl.pnode} from "
             f"t={fl.p0:.0f} s to t={fl.p1:.0f} s of the measured run: "
             f"{env.get('STRESS')}.")
    if near:
        setup += (f"  node{fl.pnode} also runs a near cache (-m {env.get('NEAR_MB')}, --idle "
                  f"{env.get('NEAR_IDLE', '5')}, --origin "
                  f"memcache: at the proxy) driven inside the guest at {env.get('NEAR_RATE')} "
                  f"ops/s over the fleet's first {env.get('NEAR_KEYS')} keys (Zipf 0.99, its own seed).")
    notes = ("\"from memory %\": gets a node answered without asking its origin "
             "(1 - origin_fetches / cmd_get); the rest were misses or purged values "
             "rebuilt from the gen origin, so every get through the proxy is a hit for the "
             "client.  Before / pressure / after split the measured run at the stress-ng "
             "window.  * marks the node under pressure.")

    md = ["## Fleet: %d appliances behind twemproxy" % fl.nodes, "", setup, "",
          md_table(*t_fleet), "", md_table(*nt), "", notes, ""]
    if near_t:
        md += [md_table(*near_t), ""]
    for p in plots:
        md += [f"![{p}]({p})", ""]
    open(os.path.join(a.dir, "fleet.md"), "w").write("\n".join(md))

    css = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
           "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
           "padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
           "th{background:#f0f0f0}")
    body = [f"<h2>Fleet: {fl.nodes} appliances behind twemproxy</h2>",
            f"<p>{html.escape(setup)}</p>", html_table(*t_fleet), html_table(*nt),
            f"<p>{html.escape(notes)}</p>"]
    if near_t:
        body.append(html_table(*near_t))
    for p in plots:
        svg = open(os.path.join(a.dir, p), errors="replace").read()
        svg = svg[svg.find("<svg"):]
        body.append(f"<div>{svg}</div>")
    open(os.path.join(a.dir, "fleet.html"), "w").write(
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Fleet</title>"
        f"<style>{css}</style></head><body>" + "\n".join(body) + "</body></html>\n")

    txt = [text_table(*t_fleet), "", text_table(*nt)]
    if near_t:
        txt += ["", text_table(*near_t)]
    open(os.path.join(a.dir, "summary.txt"), "w").write("\n".join(txt) + "\n")
    print("\n".join(txt))


if __name__ == "__main__":
    main()
