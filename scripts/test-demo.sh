#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# test-demo.sh - the short pressure experiment, as a test: one run of every
# mode of scripts/scenarios/check.conf (small sizes, about five minutes
# under TCG), into build/check/demo-report, then checks on the report: its
# files, summary.json's schema (per scenario and mode, every figure with
# mean and ci95, the hit rate by phase), the figures as PNG and SVG and
# their data against summary.json, what each mode must show (purges, no
# OOM kill in volatile, no stressor in nopressure, a smaller rightsized
# cache, the psi trigger, no verify error, modes the daemon lacks reported
# unavailable), distinct seeds and the host's load per run; then the
# small container scenario (check-container.conf, into
# build/check/container-report): it runs, its pinned daemon is killed in
# its cgroup without the run hanging, volatile lives there; then the
# report's machinery without a guest: the 95% intervals against known
# values, a skipped scenario reported as skipped, and the staleness
# warning of scripts/report-sources.sh in the report's header.
#
# usage: scripts/test-demo.sh [--out DIR] [--no-run] [demo.sh options...]
#   --out DIR   report folder (default build/check/demo-report)
#   --no-run    check an existing report without running the experiment
#
# Prints one TAP line per check, as image/guest/tap.sh does, and ends with
# "N passed, N failed, 0 skipped";
# the exit status is non-zero when a check failed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

out=$BUILD/check/demo-report run=1 args=()
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$2; shift ;;
	--no-run) run=0 ;;
	*) args+=("$1") ;;
	esac
	shift
done

rc=0 crc=0
cout=$(dirname "$out")/container-report
if [ "$run" = 1 ]; then
	mkdir -p "$(dirname "$out")"
	"$ROOT/scripts/demo.sh" --scenario "$ROOT/scripts/scenarios/check.conf" --runs 1 \
		--out "$out" "${args[@]}" || rc=$?
	# The container scenario, small: a pinned cache larger than its
	# cgroup is killed there, and the run must still end in time.
	"$ROOT/scripts/demo.sh" --scenario "$ROOT/scripts/scenarios/check-container.conf" --runs 1 \
		--out "$cout" "${args[@]}" || crc=$?
fi

PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
"$PY" - "$out" "$rc" "$ROOT" "$cout" "$crc" <<'EOF'
import csv, glob, json, os, re, shutil, subprocess, sys, tempfile

out, rc, root, cout, crc = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
sys.path.insert(0, os.path.join(root, "scripts"))
import reportlib  # noqa: E402

runs_dir = os.path.join(out, "runs")
conf = reportlib.read_env(os.path.join(runs_dir, "scenario.conf"))
scen = conf.get("NAME", "check")
modes = conf.get("MODES", "").split()
# The modes every daemon has; the others may be reported unavailable.
core = ["pinned", "psi", "volatile", "madvfree", "nopressure", "rightsized"]
figure_keys = ["hit_rate", "p99_us", "oom_kills", "verify_errors", "purged_ranges", "stress_bogo_ops"]
passed = failed = 0


def check(name, ok, why=""):
    """One TAP line, as image/guest/tap.sh prints them."""
    global passed, failed
    n = passed + failed + 1
    if ok:
        passed += 1
        print("ok %d - %s" % (n, name))
    else:
        failed += 1
        print("not ok %d - %s%s" % (n, name, "  # " + " ".join(str(why).split()) if why else ""))


def close(a, b, tol):
    return a is not None and b is not None and abs(a - b) <= tol


check("demo.sh exit status", rc == 0, "status %d" % rc)
for f in ["index.html", "report.md", "summary.json", "summary.txt", "samples.csv", "load.csv", "details.json"]:
    p = os.path.join(out, f)
    check("file %s" % f, os.path.isfile(p) and os.path.getsize(p) > 0, "missing or empty")
for fig in ["timeline", "tradeoff", "latency"]:
    base = os.path.join(out, "%s-%s" % (fig, scen))
    try:
        png = open(base + ".png", "rb").read(8)
        svg = open(base + ".svg").read()
        check("figure %s as PNG and SVG" % fig, png == b"\x89PNG\r\n\x1a\n" and "<svg" in svg and "</svg>" in svg)
    except OSError as e:
        check("figure %s as PNG and SVG" % fig, False, str(e))
try:
    html = open(os.path.join(out, "index.html")).read()
    check("index.html self-contained", "<svg" in html and "http://" not in html.replace("http://www.w3.org", "")
          and "https://" not in html and "<img" not in html, "external reference or no inline plot")
    md = open(os.path.join(out, "report.md")).read()
    check("report opens with the verdict", md.find("## Verdict") != -1 and md.find("## Verdict") < md.find("## Scenario"))
    check("report says where volatile loses", "Where volatile loses" in md)
    check("report lists the environment", all(x in md for x in ("## Environment", "QEMU command line", "host CPU",
                                                                "host load", "kernel image / config", "source commit")))
except OSError as e:
    check("index.html and report.md", False, str(e))

s = {}
try:
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    check("summary.json parses", isinstance(s, dict))
except Exception as e:  # noqa: BLE001 - any failure to parse is the finding
    check("summary.json parses", False, str(e))
sm = s.get("scenarios", {}).get(scen, {}).get("modes", {})
check("summary.json has commit, sources, scenarios", bool(s.get("commit")) and "kernel" in s.get("sources", {}) and scen in s.get("scenarios", {}))
check("summary.json top-level modes are the scenario's", s.get("modes") == sm and bool(sm))


def fig_ok(d):
    return isinstance(d, dict) and "mean" in d and "ci95" in d and d["mean"] is not None and \
        (d["ci95"] is None or (len(d["ci95"]) == 2 and d["ci95"][0] <= d["mean"] <= d["ci95"][1]))


for m in modes:
    d = sm.get(m)
    if m not in core and isinstance(d, dict) and d.get("unavailable"):
        check("%s reported unavailable with its reason" % m, d.get("runs") == 0 and len(d["unavailable"]) > 5, str(d))
        continue
    ok = isinstance(d, dict) and d.get("runs", 0) >= 1
    missing = [k for k in figure_keys if not ok or not fig_ok(d.get(k))]
    missing += ["hit_rate_by_phase." + b for b in ("before", "pressure", "after")
                if not ok or not fig_ok(d.get("hit_rate_by_phase", {}).get(b))]
    check("summary.json %s: every figure with mean and ci95, by phase" % m, ok and not missing,
          "missing: %s" % ", ".join(missing or ["mode"]))


def val(m, k, phase=None):
    d = sm.get(m, {})
    d = d.get("hit_rate_by_phase", {}).get(phase) if phase else d.get(k)
    return d.get("mean") if isinstance(d, dict) else None


v = val("volatile", "purged_ranges")
check("volatile mode had purges", v is not None and v > 0, "purged_ranges %s" % v)
v = val("volatile", "oom_kills")
check("volatile mode had no OOM kill", v == 0, "oom_kills %s" % v)
for m in sm:
    if sm[m].get("runs"):
        v = val(m, "verify_errors")
        check("%s verify_errors is 0" % m, v == 0, "verify_errors %s" % v)
b, o = val("nopressure", "stress_bogo_ops"), val("nopressure", "oom_kills")
check("nopressure ran no stressor", b == 0 and o == 0, "bogo ops %s, oom kills %s" % (b, o))
cm = val("rightsized", "cache_mb")
check("rightsized cache is smaller than the scenario's", cm is not None and 8 <= cm < float(conf.get("CACHE_MB", 0)), "cache_mb %s" % cm)
# The ceiling bounds the mode that gives memory away (same requests: same seed).
nv, vv = val("nopressure", None, "pressure"), val("volatile", None, "pressure")
check("nopressure bounds volatile during the pressure", nv is not None and vv is not None and vv <= nv + 0.02,
      "volatile %s, nopressure %s" % (vv, nv))

# The figures agree with summary.json: the trade-off plot's data points.
try:
    rows = [l.split() for l in open(os.path.join(out, "plot-data", "tradeoff-%s.dat" % scen)) if not l.startswith("#") and l.strip()]
    bad = []
    for r in rows:
        m = r[0]
        hr, bogo, p99 = float(r[1]), float(r[4]), float(r[7])
        if not (close(hr, 100 * val(m, "hit_rate"), 1e-6) and close(bogo, val(m, "stress_bogo_ops"), 1e-6)
                and close(p99, val(m, "p99_us") / 1000, 1e-6)):
            bad.append(m)
    measured = [m for m in sm if sm[m].get("runs")]
    check("trade-off figure agrees with summary.json", sorted(r[0] for r in rows) == sorted(measured) and not bad,
          "disagree: %s; plotted %s, measured %s" % (bad, [r[0] for r in rows], measured))
except (OSError, ValueError, IndexError, TypeError) as e:
    check("trade-off figure agrees with summary.json", False, str(e))
# The report's table shows summary.json's figures: each measured mode's row
# carries its hit rate, before/during/after and OOM kills as formatted there.
try:
    md = open(os.path.join(out, "report.md")).read()
    bad = []
    for m in [m for m in sm if sm[m].get("runs")]:
        row = next((l for l in md.splitlines() if l.startswith("| %s | " % m)), "")
        cells = [c.strip() for c in row.strip("|").split("|")]
        want = ["%.1f%%" % (100 * val(m, "hit_rate"))] + ["%.1f%%" % (100 * val(m, None, b)) for b in ("before", "pressure", "after")]
        got = [cells[2].split(" [")[0]] + cells[3:6] if len(cells) > 6 else []
        if got != want:
            bad.append("%s: %s != %s" % (m, got, want))
    check("report table agrees with summary.json", not bad, "; ".join(bad))
except (OSError, TypeError, ValueError) as e:
    check("report table agrees with summary.json", False, str(e))
# The timeline's hit-rate panel (mean over runs of 1 s bins) stays within
# the per-phase figures' range, and its MemAvailable data exists per mode.
try:
    tl = glob.glob(os.path.join(out, "plot-data", "timeline-%s-3-*.dat" % scen))
    check("timeline has a hit-rate series per measured mode", len(tl) == len([m for m in sm if sm[m].get("runs")]), "%d files" % len(tl))
except OSError as e:
    check("timeline has a hit-rate series per measured mode", False, str(e))

try:
    with open(os.path.join(out, "samples.csv")) as f:
        rows = list(csv.DictReader(f))
    check("samples.csv parses", len(rows) > 10 and {"scenario", "mode", "t", "phase", "mem_available_kb"} <= set(rows[0]), "%d rows" % len(rows))
    phases = {r["phase"] for r in rows}
    check("samples cover before, pressure, a pause and after", {"steady", "pressure", "relief", "recovery"} <= phases, str(sorted(phases)))
    ps = [r for r in rows if r["mode"] == "psi"]
    ev = max([int(r["psi_events"] or 0) for r in ps] or [0])
    dropped = max([int(r["psi_dropped_bytes"] or 0) for r in ps] or [0])
    check("psi mode reacted to memory pressure", ev > 0 and dropped > 0, "%d PSI events, %d bytes dropped" % (ev, dropped))
    mf = [r for r in rows if r["mode"] == "madvfree"]
    given = max([int(r["volatile_bytes"] or 0) for r in mf] or [0])
    check("madvfree mode gave idle data up with MADV_FREE", given > 0, "%d bytes at most" % given)
except Exception as e:  # noqa: BLE001
    check("samples.csv parses", False, str(e))

try:
    det = json.load(open(os.path.join(out, "details.json")))
    runs = [r for r in det["scenarios"][scen]["runs"] if r["ok"]]
    seeds = [(r["info"].get("warmup_seed"), r["info"].get("measure_seed")) for r in runs]
    check("warm-up and measurement have distinct seeds", runs and all(a and b and a != b for a, b in seeds), str(seeds))
    loads = [r["metrics"].get("host_load1") for r in runs] + [r["metrics"].get("host_cpu_busy_pct") for r in runs]
    check("host load recorded per run", runs and all(isinstance(x, (int, float)) for x in loads), str(loads))
except Exception as e:  # noqa: BLE001
    check("details.json per run", False, str(e))

# ---- the machinery, without a guest ----
ci = reportlib.mean_ci([1, 2, 3, 4, 5])
# t(0.975, 4) = 2.776: 3 +- 2.776 * 1.5811 / sqrt(5) = 3 +- 1.9630.
check("ci95 of 1..5 is 3 +- 1.963", close(ci["ci95"][0], 1.0370, 1e-3) and close(ci["ci95"][1], 4.9630, 1e-3), str(ci))
ci = reportlib.mean_ci([10.0, 10.0, 10.0])
check("ci95 of equal values is a point", ci["ci95"] == [10.0, 10.0], str(ci))
ci = reportlib.mean_ci([7, None, "x"])
check("ci95 of one value is None", ci["mean"] == 7 and ci["ci95"] is None and ci["n"] == 1, str(ci))
check("t quantiles", close(reportlib.t975(1), 12.706, 1e-3) and close(reportlib.t975(29), 2.045, 1e-3)
      and close(reportlib.t975(10000), 1.960, 1e-3))

tmp = tempfile.mkdtemp(prefix="test-demo-")
try:
    # A report of the real runs with the daemon's hash changed (as if cached
    # had changed since), plus a skipped container scenario.
    fake = os.path.join(tmp, "runs")
    os.makedirs(fake)
    for p in os.listdir(runs_dir):
        if p != "host.env":
            os.symlink(os.path.join(os.path.abspath(runs_dir), p), os.path.join(fake, p))
    with open(os.path.join(runs_dir, "host.env")) as f, open(os.path.join(fake, "host.env"), "w") as g:
        for line in f:
            g.write("src_cached=0000000000000000\n" if line.startswith("src_cached=") else line)
    skip = os.path.join(tmp, "container")
    os.makedirs(skip)
    open(os.path.join(skip, "scenario.conf"), "w").write("NAME=container\nMODES=\"pinned volatile\"\n")
    open(os.path.join(skip, "skipped"), "w").write("the guest kernel has no cgroup v2 memory controller (CONFIG_MEMCG)\n")
    # the container scenario run again later, at another commit
    with open(os.path.join(fake, "host.env")) as f, open(os.path.join(skip, "host.env"), "w") as g:
        for line in f:
            g.write("src_commit=feedbee\n" if line.startswith("src_commit=") else
                    "commit=feedbee\n" if line.startswith("commit=") else line)
    rep = os.path.join(tmp, "report")
    res = subprocess.run([sys.executable, os.path.join(root, "scripts", "report.py"), "--runs-dir", fake,
                          "--runs-dir", skip, "--out", rep], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    check("report.py on two scenarios", res.returncode == 0, res.stdout[-500:])
    md = open(os.path.join(rep, "report.md")).read() if res.returncode == 0 else ""
    js = json.load(open(os.path.join(rep, "summary.json"))) if res.returncode == 0 else {}
    head = md[:md.find("## Verdict")]
    check("a stale report says so in its header, naming what changed", "stale" in head and "cached" in head, head[:300])
    check("summary.json records the staleness", "cached" in (js.get("stale") or ""), str(js.get("stale")))
    env_row = next((l for l in md.splitlines() if l.startswith("| source commit")), "")
    check("runs of two commits: the header and the environment name each commit with its scenarios",
          "The runs of" in head and "feedbee" in env_row and "(container" not in env_row.split("feedbee")[0]
          and "for container" in env_row, env_row + " / " + head[:300])
    sk = js.get("scenarios", {}).get("container", {})
    check("a skipped scenario is reported skipped, never passed", "memory controller" in (sk.get("skipped") or "")
          and not sk.get("modes") and "skipped, not passed" in md.lower(), str(sk)[:300])
    r = subprocess.run([os.path.join(root, "scripts", "report-sources.sh"), "--check", os.path.join(fake, "host.env")],
                       stdout=subprocess.PIPE, text=True)
    check("report-sources.sh warns, naming the group", r.returncode == 0 and r.stdout.startswith("WARNING") and "cached" in r.stdout
          and "kernel" not in r.stdout.split("stale:")[1].split("changed")[0], r.stdout)
    env = os.path.join(tmp, "now.env")
    with open(env, "w") as f:
        subprocess.run([os.path.join(root, "scripts", "report-sources.sh"), "--env"], stdout=f, check=True)
    r = subprocess.run([os.path.join(root, "scripts", "report-sources.sh"), "--check", env], stdout=subprocess.PIPE, text=True)
    check("report-sources.sh: the clone's own hashes are up to date", "up to date" in r.stdout, r.stdout)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

# The container scenario (check-container.conf): it ran (not skipped), each
# guest's job ended by itself (not by the watchdog), the daemon's cgroup had
# its memory.max and reached it; the pinned daemon, larger than its cgroup,
# was killed there and its run counted every due get as a miss; volatile
# mode lived in the same cgroup, its idle data purged inside it.
check("container: demo.sh exit status", crc == 0, "status %d" % crc)
cruns = os.path.join(cout, "runs")
skipped = glob.glob(os.path.join(cruns, "**", "skipped"), recursive=True)
check("container: the scenario ran, not skipped", os.path.isdir(cruns) and not skipped,
      " ".join(open(p).read() for p in skipped) or "no runs")
cs = {}
try:
    with open(os.path.join(cout, "summary.json")) as f:
        cs = json.load(f).get("scenarios", {}).get("check-container", {}).get("modes", {})
except (OSError, ValueError) as e:
    check("container: summary.json", False, str(e))
for m in ("pinned", "volatile"):
    g = os.path.join(cruns, "%s-1" % m, "guest", "out")
    status = reportlib.read_text(os.path.join(g, "exit-status")).strip()
    check("container %s: the guest's job ended by itself" % m, status == "0", "exit-status %r (none: the watchdog)" % status)
    info = reportlib.read_env(os.path.join(g, "info.env"))
    ev = reportlib.read_kv(os.path.join(g, "cgroup-daemon-events.txt"))
    check("container %s: the daemon's cgroup had memory.max 96 MiB and reached it" % m,
          info.get("cgroup_daemon_max_mb") == "96" and ev.get("max", 0) > 0, "info %s, events %s" % (info.get("cgroup_daemon_max_mb"), ev))
    alive = reportlib.read_text(os.path.join(g, "daemon-alive")).strip()
    d = cs.get(m, {})
    hr = (d.get("hit_rate") or {}).get("mean")
    if m == "pinned":
        check("container pinned: killed by its cgroup's OOM killer, every due get a miss",
              ev.get("oom_kill", 0) >= 1 and alive == "0" and hr == 0, "events %s, alive %r, hit rate %s" % (ev, alive, hr))
    else:
        pr = (d.get("purged_ranges") or {}).get("mean")
        ve = (d.get("verify_errors") or {}).get("mean")
        check("container volatile: lives in its cgroup, purged inside it, no wrong byte",
              ev.get("oom_kill", 1) == 0 and alive == "1" and (pr or 0) > 0 and ve == 0 and (hr or 0) > 0.5,
              "events %s, alive %r, purged ranges %s, verify errors %s, hit rate %s" % (ev, alive, pr, ve, hr))

# The matrix as planned: the sweep is a 3 x 3 grid, and the estimates of
# make experiment and make demo fit their budgets (2.5 h, 30 min).
try:
    sc = os.path.join(root, "scripts", "scenarios")
    plan = subprocess.run([os.path.join(root, "scripts", "demo.sh"), "--plan", "--scenario", os.path.join(sc, "sweep.conf")],
                          stdout=subprocess.PIPE, text=True, check=True).stdout
    cells = [l for l in plan.splitlines() if l.startswith("  cell ")]
    check("sweep is a grid of 3 x 3 cells, volatile in each", len(cells) == 9 and all("volatile" in c for c in cells)
          and sum("pinned" in c for c in cells) == 3, plan)
    plan = subprocess.run([os.path.join(root, "scripts", "experiment.sh"), "--plan"], stdout=subprocess.PIPE, text=True, check=True).stdout
    total = int(plan.strip().splitlines()[-1].split("about ")[1].split()[0])
    names = [l.split()[1].rstrip(":") for l in plan.splitlines() if l.startswith("scenario ")]
    check("make experiment plans every scenario within 150 min", total <= 150 and
          names == ["default", "container", "swap", "sweep", "cycles"], plan)
    # A finished scenario resumed boots nothing: it only rewrites the report.
    before = sorted(os.listdir(runs_dir))
    res = subprocess.run([os.path.join(root, "scripts", "demo.sh"), "--resume", "--scenario", os.path.join(sc, "check.conf"),
                          "--out", out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    check("a finished scenario resumed boots no guest", res.returncode == 0 and "the report only" in res.stdout
          and not re.search(r"guest \d+/\d+:", res.stdout) and sorted(os.listdir(runs_dir)) == before, res.stdout[-400:])
    plan = subprocess.run([os.path.join(root, "scripts", "demo.sh"), "--plan", "--runs", "3"], stdout=subprocess.PIPE, text=True, check=True).stdout
    mins = int(plan.split(": about ")[-1].split()[0])
    check("make demo plans every mode within 27 min of guests", mins <= 27 and all(m in plan for m in core + ["madvfree"]), plan)
except (subprocess.CalledProcessError, ValueError, IndexError) as e:
    check("the matrix's plan", False, str(e))

print("%d passed, %d failed, 0 skipped" % (passed, failed))
sys.exit(1 if failed else 0)
EOF
