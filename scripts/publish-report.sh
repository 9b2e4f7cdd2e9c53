#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# publish-report.sh - copy an experiment's report into docs/reports/ with
# the record of its sources, so that 'make check' can tell when it goes
# stale.
#
# usage: scripts/publish-report.sh [--from DIR] [--to DIR] [--allow-stale]
#   --from DIR      the report (default build/report, what 'make experiment'
#                   writes)
#   --to DIR        where it goes (default docs/reports/experiment)
#   --allow-stale   publish a report whose header warns that runs are stale
#                   (some scenarios run at an older commit); the warning
#                   stays in it, and in make check's line
#
# sources.env records the commit summary.json names (the default
# scenario's runs) and the hashes of its sources
# (scripts/report-sources.sh --env --at COMMIT).  Copied: report.md,
# summary.json, summary.txt, details.json, samples.csv, load.csv, the
# figures (PNG and SVG) and their data (plot-data/); not index.html
# (report.md and the SVGs hold the same) nor the runs.  The folder is
# replaced as a whole.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '7,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 64; }

from=$BUILD/report to=$ROOT/docs/reports/experiment allow_stale=0
while [ $# -gt 0 ]; do
	case $1 in
	--from) from=$2; shift ;;
	--to) to=$2; shift ;;
	--allow-stale) allow_stale=1 ;;
	-h | --help) usage ;;
	*) echo "publish-report.sh: unknown argument '$1'" >&2; usage ;;
	esac
	shift
done

[ -f "$from/summary.json" ] && [ -f "$from/report.md" ] ||
	die "no report in $from (run 'make experiment' first)"
commit=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("commit") or "")' "$from/summary.json")
[ -n "$commit" ] && [ "$commit" != unknown ] ||
	die "$from/summary.json names no commit: its runs do not record their sources"
git -C "$ROOT" cat-file -e "$commit^{commit}" 2>/dev/null ||
	die "the report's commit $commit is not in this clone"
if grep -q '^> \*\*.*WARNING' "$from/report.md"; then
	grep -h 'WARNING' "$from/report.md" >&2
	[ "$allow_stale" = 1 ] ||
		die "the report warns that runs do not match the sources; run them again (or --allow-stale)"
fi

rm -rf "$to"
mkdir -p "$to/plot-data"
for f in report.md summary.json summary.txt details.json samples.csv load.csv; do
	if [ -f "$from/$f" ]; then cp "$from/$f" "$to/"; fi
done
cp "$from"/*.png "$from"/*.svg "$to/"
cp "$from"/plot-data/* "$to/plot-data/" 2>/dev/null || true
{
	echo "# The sources of this published report: the commit its runs were made"
	echo "# from and the hashes of what its figures depend on"
	echo "# (scripts/report-sources.sh --env --at $commit).  'make check' compares"
	echo "# them with the clone and warns when they differ."
	"$ROOT/scripts/report-sources.sh" --env --at "$commit"
} >"$to/sources.env"
say "published the report of $commit in ${to#"$ROOT"/} ($(du -sh "$to" | cut -f1))"
"$ROOT/scripts/report-sources.sh" --check "$to/sources.env"
