#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# experiment.sh - the whole experiment: every scenario of the matrix, each
# with scripts/demo.sh, then one report of them all in build/report/.
#
# usage: scripts/experiment.sh [--fresh] [--plan] [SCENARIO...]
#   SCENARIO   names under scripts/scenarios/ (default: the matrix,
#              $EXPERIMENT_SCENARIOS or "default container swap sweep cycles")
#   --fresh    start every scenario again (default: resume, keeping the
#              guests that finished in build/experiment/SCENARIO/runs/)
#   --plan     print the guests and the estimated time of each scenario
#
# 'make experiment' runs the matrix; 'make experiment SCENARIO=swap' one
# scenario.  An interrupted experiment resumes where it stopped: a scenario
# that completed is not run again, and a scenario cut short keeps its
# finished guests.  The report covers every scenario that has runs in
# build/experiment/, whether run now or earlier.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '6,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 64; }

fresh=0 plan=0 list=()
while [ $# -gt 0 ]; do
	case $1 in
	--fresh) fresh=1 ;;
	--plan) plan=1 ;;
	-h | --help) usage ;;
	-*) echo "experiment.sh: unknown option '$1'" >&2; usage ;;
	*) list+=("$1") ;;
	esac
	shift
done
[ "${#list[@]}" -gt 0 ] || read -r -a list <<<"${EXPERIMENT_SCENARIOS:-default container swap sweep cycles}"
for s in "${list[@]}"; do
	[ -f "$ROOT/scripts/scenarios/$s.conf" ] || die "no scenario $s (scripts/scenarios/$s.conf)"
done

EXP=$BUILD/experiment
if [ "$plan" = 1 ]; then
	total=0
	for s in "${list[@]}"; do
		line=$("$ROOT/scripts/demo.sh" --scenario "$ROOT/scripts/scenarios/$s.conf" --plan | sed -n 1p)
		echo "$line"
		total=$((total + $(sed -n 's/.*about \([0-9]*\) min$/\1/p' <<<"$line")))
	done
	echo "total: about $total min of guests on an idle 2-core host"
	exit 0
fi

i=0
for s in "${list[@]}"; do
	i=$((i + 1))
	say "experiment: scenario $i/${#list[@]}: $s"
	args=(--scenario "$ROOT/scripts/scenarios/$s.conf" --out "$EXP/$s")
	[ "$fresh" = 1 ] || args+=(--resume)
	"$ROOT/scripts/demo.sh" "${args[@]}" || die "scenario $s failed"
done

dirs=()
for d in "$EXP"/*/runs; do
	[ -f "$d/scenario.conf" ] && dirs+=(--runs-dir "$d")
done
say "experiment: the report of $((${#dirs[@]} / 2)) scenario(s)"
mkdir -p "$BUILD/report"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
"$PY" "$ROOT/scripts/report.py" "${dirs[@]}" --out "$BUILD/report" || die "the report generator failed"
cat "$BUILD/report/summary.txt"
say "report: ${BUILD#"$ROOT"/}/report/index.html (and report.md, summary.json)"
