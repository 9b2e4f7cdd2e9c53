#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# report-sources.sh - what an experiment report depends on, as hashes, and
# whether a report is stale.
#
# usage: scripts/report-sources.sh --env [--at COMMIT]
#        scripts/report-sources.sh --check FILE
#   --env          print src_GROUP=HASH lines for the clone's files (or,
#                  with --at, for COMMIT's), and src_commit=
#   --check FILE   FILE holds such lines (a report's sources.env, or the
#                  host.env of a run): print one line, "report sources: up
#                  to date" or "WARNING: ... is stale: GROUP, GROUP changed
#                  since COMMIT (by the latest three commits that changed
#                  them)"; exit 0 either way (a warning, not a failure)
#
# The groups are what an experiment's figures depend on: the kernel series
# (kernel/), the daemon (cached/), the load generator (loadgen/), the
# scenarios and modes (scripts/scenarios/), and the harness that runs them
# (the guest job, its sampler and scripts/demo.sh).  The daemon's and the
# load generator's tests (cached/tests/, loadgen/tests/) are left out: no
# experiment runs them, so a new test does not make a report stale.  A
# group's hash is the sha256 of its files' git blob ids and paths, so the
# clone's files and a commit's hash alike when their contents are equal.
# Without git every hash is "unknown" and nothing is called stale.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '6,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 64; }

GROUPS_LIST="kernel cached loadgen scenarios harness"
paths_of() {
	case $1 in
	kernel) echo kernel ;;
	cached) echo cached ;;
	loadgen) echo loadgen ;;
	scenarios) echo scripts/scenarios ;;
	harness) echo image/guest/experiment.sh image/guest/sampler.sh scripts/demo.sh ;;
	esac
}
# Lines "BLOB PATH" of files in no group's figures: the tests.
NOT_FIGURES=' (cached|loadgen)/tests/'

# The licence line at a file's top (the first line, or the second after a
# #! line) is left out of its hash: it changes no figure, and the hashes
# that reports published before the files had one recorded stay valid.
SPDX_LINE='^(#|//|/\*) SPDX-License-Identifier: GPL-2\.0-only( \*/)?$'
SPDX_MARK='SPDX-License-Identifier: GPL-2.0-only'

# without_spdx: stdin without that line, byte for byte otherwise.
without_spdx() {
	sed -E -e "1{/^#!/{n;\@$SPDX_LINE@d}}" -e "1{\@$SPDX_LINE@d}"
}

# group_hash GROUP [COMMIT]: the group's hash in the clone or at COMMIT.
group_hash() {
	local g=$1 at=${2:-} blob f marked
	# the group's files that have the licence line somewhere
	# shellcheck disable=SC2046 # paths without spaces
	marked=$(git -C "$ROOT" grep -l -F "$SPDX_MARK" ${at:+"$at"} -- $(paths_of "$g") |
		sed "s|^${at:+$at:}||") || true
	# shellcheck disable=SC2046 # paths without spaces
	if [ -n "$at" ]; then
		git -C "$ROOT" ls-tree -r "$at" -- $(paths_of "$g") | awk -F'\t' '{split($1, a, " "); print a[3], $2}'
	else
		git -C "$ROOT" ls-files -- $(paths_of "$g") | while IFS= read -r f; do
			[ -f "$ROOT/$f" ] && echo "$(git -C "$ROOT" hash-object -- "$f") $f"
		done
	fi | { grep -Ev "$NOT_FIGURES" || true; } | while read -r blob f; do
		if grep -qxF -- "$f" <<<"$marked"; then
			blob=$(if [ -n "$at" ]; then
				git -C "$ROOT" cat-file blob "$blob"
			else
				cat "$ROOT/$f"
			fi | without_spdx | git -C "$ROOT" hash-object --stdin)
		fi
		echo "$blob $f"
	done | sha256sum | cut -c1-16
}

print_env() {
	local at=${1:-} g
	if ! git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
		echo "src_commit=unknown"
		for g in $GROUPS_LIST; do echo "src_$g=unknown"; done
		return
	fi
	echo "src_commit=$(git -C "$ROOT" rev-parse --short "${at:-HEAD}")"
	for g in $GROUPS_LIST; do echo "src_$g=$(group_hash "$g" "$at")"; done
}

check_stale() {
	local file=$1 g want have changed="" paths="" commit log
	[ -f "$file" ] || { echo "WARNING: no record of the sources of the report ($file)"; return; }
	commit=$(sed -n 's/^src_commit=//p' "$file")
	if [ -z "$commit" ]; then
		echo "WARNING: the report ${file%/*} does not record its sources; it may be stale"
		return
	fi
	git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1 || {
		echo "report sources: not a git clone, staleness of ${file%/*} unknown"
		return
	}
	for g in $GROUPS_LIST; do
		want=$(sed -n "s/^src_$g=//p" "$file")
		have=$(group_hash "$g")
		[ "$want" = "$have" ] && continue
		changed+="${changed:+, }$g"
		paths+=" $(paths_of "$g")"
	done
	if [ -n "$changed" ]; then
		# the commits that changed them, so that a reader can judge
		# shellcheck disable=SC2086 # paths without spaces
		log=$(git -C "$ROOT" log --max-count=3 --format='%h %s' "$commit..HEAD" -- $paths \
			':!cached/tests' ':!loadgen/tests' 2>/dev/null |
			paste -sd ';' | sed 's/;/; /g') || log=""
		echo "WARNING: the published report ${file%/*} is stale: $changed changed since commit $commit${log:+ (by $log)} (regenerate it with 'make experiment')"
	else
		echo "report sources: ${file%/*} is up to date with the clone (generated at $commit)"
	fi
}

mode="" at="" file=""
while [ $# -gt 0 ]; do
	case $1 in
	--env) mode="env" ;;
	--at) at=$2; shift ;;
	--check) mode=check file=$2; shift ;;
	-h | --help) usage ;;
	*) echo "report-sources.sh: unknown option '$1'" >&2; usage ;;
	esac
	shift
done
case $mode in
env) print_env "$at" ;;
check) check_stale "$file" ;;
*) usage ;;
esac
