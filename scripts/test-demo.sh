#!/usr/bin/env bash
# test-demo.sh - the short pressure experiment, as a test: one run per mode
# of scripts/scenarios/check.conf (small sizes, about five minutes under TCG),
# into build/check/demo-report, then checks on the report.
#
# usage: scripts/test-demo.sh [--out DIR] [--no-run] [demo.sh options...]
#   --out DIR   report folder (default build/check/demo-report)
#   --no-run    check an existing report without running the experiment
#
# Prints PASS name / FAIL name per check and ends with "N passed, N failed";
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

rc=0
if [ "$run" = 1 ]; then
	mkdir -p "$(dirname "$out")"
	"$ROOT/scripts/demo.sh" --scenario "$ROOT/scripts/scenarios/check.conf" --runs 1 \
		--out "$out" "${args[@]}" || rc=$?
fi

PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
"$PY" - "$out" "$rc" <<'EOF'
import csv, glob, json, os, sys

out, rc = sys.argv[1], int(sys.argv[2])
modes = ["pinned", "psi", "volatile", "oracle"]
keys = ["hit_rate", "p50_us", "p99_us", "max_us", "verify_errors", "oom_kills",
        "stress_bogo_ops", "purged_ranges", "rebuilds"]
passed = failed = 0


def check(name, ok, why=""):
    global passed, failed
    if ok:
        passed += 1
        print("PASS %s" % name)
    else:
        failed += 1
        print("FAIL %s%s" % (name, ": " + why if why else ""))


check("demo.sh exit status", rc == 0, "status %d" % rc)
for f in ["index.html", "report.md", "summary.json", "samples.csv", "load.csv"]:
    p = os.path.join(out, f)
    check("file %s" % f, os.path.isfile(p) and os.path.getsize(p) > 0, "missing or empty")
svgs = glob.glob(os.path.join(out, "*.svg"))
check("plots (svg)", len(svgs) > 0 and all("<svg" in open(s).read() for s in svgs), "%d svg files" % len(svgs))
try:
    html = open(os.path.join(out, "index.html")).read()
    check("index.html self-contained", "<svg" in html and "http://" not in html.replace("http://www.w3.org", "")
          and "https://" not in html and "<img" not in html, "external reference or no inline plot")
except OSError as e:
    check("index.html self-contained", False, str(e))
try:
    with open(os.path.join(out, "samples.csv")) as f:
        rows = list(csv.DictReader(f))
    check("samples.csv parses", len(rows) > 10 and {"mode", "t", "mem_available_kb"} <= set(rows[0]), "%d rows" % len(rows))
    check("samples.csv has every mode", {r["mode"] for r in rows} >= set(modes), str(sorted({r["mode"] for r in rows})))
    # The guest stalls on memory in every mode without purges; the psi
    # mode's trigger must have fired and made the daemon drop data.
    ev = max([int(r["psi_events"] or 0) for r in rows if r["mode"] == "psi"] or [0])
    some = [int(r["psi_some_us"] or 0) for r in rows if r["mode"] == "psi"] or [0]
    stall = max(some) - min(some)
    dropped = max([int(r["psi_dropped_bytes"] or 0) for r in rows if r["mode"] == "psi"] or [0])
    check("psi mode reacted to memory pressure", ev > 0 and dropped > 0,
          "%d PSI events, %d bytes dropped, %.1f s of stall" % (ev, dropped, stall / 1e6))
except Exception as e:  # noqa: BLE001 - any failure to parse is the finding
    check("samples.csv parses", False, str(e))
s = {}
try:
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    check("summary.json parses", isinstance(s, dict))
except Exception as e:  # noqa: BLE001
    check("summary.json parses", False, str(e))


def val(mode, key):
    d = s.get(mode, {}).get(key)
    return d.get("mean") if isinstance(d, dict) else None


for m in modes:
    missing = [k for k in keys if not (isinstance(s.get(m, {}).get(k), dict)
                                       and {"mean", "stddev"} <= set(s[m][k])
                                       and s[m][k]["mean"] is not None)]
    check("summary.json %s has every key" % m, m in s and not missing, "missing: %s" % ", ".join(missing or ["mode"]))
v = val("volatile", "purged_ranges")
check("volatile mode had purges", v is not None and v > 0, "purged_ranges %s" % v)
v = val("volatile", "oom_kills")
check("volatile mode had no OOM kill", v == 0, "oom_kills %s" % v)
for m in modes:
    v = val(m, "verify_errors")
    check("%s verify_errors is 0" % m, v == 0, "verify_errors %s" % v)
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
EOF
