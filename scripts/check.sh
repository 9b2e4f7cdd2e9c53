#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# check.sh - every test the project has, host suites first, then guest suites
# on the patched kernel and on the debug kernel, in QEMU.
#
# usage: scripts/check.sh [SUITE...]     (default: all; 'make check' runs all)
#
# Each suite's output goes to build/check/NAME.log; the suite's own
# "N passed, N failed" line (or KUnit's totals) is read from it.  A suite
# that ends without such a line, exits non-zero, hangs, or makes the kernel
# print a warning counts as failed.  The last line is the sum:
# "N passed, N failed"; the exit status is non-zero on any failure.  A
# failed suite's line is followed by its failed tests (TAP "not ok" lines,
# which every test script prints through image/guest/tap.sh) and its end.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CHECK=$BUILD/check
mkdir -p "$CHECK"
only=" $* "
want() { [ "$only" = "  " ] || [[ $only == *" $1 "* ]]; }
# Each suite's figures go to one line of $RESULTS, which the lanes of guest
# suites running side by side append to; the totals are summed from it.
RESULTS=$CHECK/results
: >"$RESULTS"

# count NAME PASS FAIL STATUS: record a suite's figures and print its line.
count() {
	local name=$1 pass=$2 fail=$3 status=$4
	if [ "$status" -ne 0 ] && [ "$fail" -eq 0 ]; then
		fail=1
	fi
	echo "$name $pass $fail" >>"$RESULTS"
	if [ "$fail" -eq 0 ]; then
		say "$name: $pass passed, $fail failed"
	else
		say "$name: $pass passed, $fail failed  FAILED (log: ${CHECK#"$ROOT"/}/$name.log)"
		# which tests failed (tap.sh's lines, and KUnit's), then the end
		grep -aE '^ *not ok [0-9]+' "$CHECK/$name.log" | head -n 20 | sed "s/^ */  | $name: /" || true
		echo "  | $name: ..."
		tail -n 12 "$CHECK/$name.log" | sed "s/^/  | $name: /"
	fi
}

# totals: print the closing line from $RESULTS; false on any failure.
totals() {
	local failed pass fail
	failed=$(awk '$3 > 0 { printf " %s", $1 }' "$RESULTS")
	pass=$(awk '{ n += $2 } END { print n + 0 }' "$RESULTS")
	fail=$(awk '{ n += $3 } END { print n + 0 }' "$RESULTS")
	[ -z "$failed" ] || say "failed suites:$failed"
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
}

# summary LOG: the last "N passed, N failed" of a log, as "PASS FAIL", or "".
summary() {
	grep -aoE '([0-9]+) passed, ([0-9]+) failed' "$1" | tail -n 1 |
		sed -E 's/([0-9]+) passed, ([0-9]+) failed/\1 \2/'
}

# tap_summary LOG: "PASS FAIL" from TAP lines ("ok N", "not ok N"); tests
# announced by the plan ("1..N") that never reported count as failed.
tap_summary() {
	local pass fail plan
	pass=$(grep -acE '^ok [0-9]+' "$1" 2>/dev/null || true)
	fail=$(grep -acE '^not ok [0-9]+' "$1" 2>/dev/null || true)
	plan=$(sed -nE 's/^1\.\.([0-9]+).*/\1/p' "$1" 2>/dev/null | tail -n 1)
	pass=${pass:-0} fail=${fail:-0}
	if [ -n "$plan" ] && [ $((pass + fail)) -lt "$plan" ]; then
		fail=$((plan - pass))
	fi
	[ $((pass + fail)) -gt 0 ] || fail=1
	echo "$pass $fail"
}

# host_suite NAME CMD...: a suite that prints its own summary line.
host_suite() {
	local name=$1 log=$CHECK/$1.log rc=0 s
	shift
	want "$name" || return 0
	say "$name: running"
	"$@" >"$log" 2>&1 || rc=$?
	s=$(summary "$log")
	[ -n "$s" ] || s="0 1"
	# shellcheck disable=SC2086
	count "$name" $s "$rc"
}

# guest_suite NAME KERNEL SCRIPT [RUNNER-ARGS...]: a job in the guest.  The
# job prints "RESULT: N passed, N failed"; the run directory is kept.
guest_suite() {
	local name=$1 kernel=$2 script=$3 log=$CHECK/$1.log rc=0 s
	shift 3
	want "$name" || return 0
	say "$name: running in the guest ($(basename "$kernel"))"
	rm -rf "$CHECK/$name.run"
	"$ROOT/scripts/qemu-run.sh" --quiet --kernel "$kernel" --run-dir "$CHECK/$name.run" \
		--script "$script" "$@" >"$log" 2>&1 || rc=$?
	cat "$CHECK/$name.run/out/job.log" >>"$log" 2>/dev/null || true
	s=$(summary "$CHECK/$name.run/out/job.log" 2>/dev/null || true)
	[ -n "$s" ] || s=$(tap_summary "$CHECK/$name.run/out/job.log")
	# shellcheck disable=SC2086
	count "$name" $s "$rc"
}

# kunit_suite NAME RUNDIR: the KUnit results the kernel printed at boot.
kunit_suite() {
	local name=$1 console=$2/console.log log=$CHECK/$1.log pass fail
	want "$name" || return 0
	if [ ! -f "$console" ]; then
		echo "no console log at $console" >"$log"
		count "$name" 0 1 1
		return
	fi
	sed -E 's/^\[ *[0-9]+\.[0-9]+\] //' "$console" |
		grep -aE '^ *(# Subtest:|(not )?ok [0-9]+ |# Totals:)' >"$log" || true
	pass=$(sed -nE 's/.*# Totals: pass:([0-9]+) fail:([0-9]+).*/\1/p' "$log" | paste -sd+ | bc)
	fail=$(sed -nE 's/.*# Totals: pass:([0-9]+) fail:([0-9]+).*/\2/p' "$log" | paste -sd+ | bc)
	pass=${pass:-0} fail=${fail:-0}
	if ! grep -q 'Subtest: shmem-volatile' "$log"; then
		echo "the shmem-volatile KUnit suite did not run" >>"$log"
		fail=$((fail + 1))
	fi
	count "$name" "$pass" "$fail" 0
}

# build STEP CMD...: a build the guest suites need; its failure ends the check.
build() {
	local name=$1
	shift
	"$@" || build_failed "$name"
}

build_failed() {
	count "$1" 0 1 1
	totals || true
	exit 1
}

say "host suites"
# -j2: the binaries build two at a time; the tests still run as their
# scripts order them.
host_suite cached make -j2 -C "$ROOT/cached" check
host_suite loadgen make -j2 -C "$ROOT/loadgen" check
host_suite fleet "$ROOT/scripts/test-fleet.sh"
host_suite docs "$ROOT/scripts/check-docs.py"
host_suite docs-checker "$ROOT/scripts/test-check-docs.sh"

# lane_job NAME: one job of the guest lanes: a suite, and the KUnit results
# read from its run directory.
lane_job() {
	case $1 in
	debug-kernel-tests)
		# The debug kernel's selftests took 853 s to 1,500 s beside
		# another guest on a 2-core host, past the 720 s the release
		# kernel gets (74 s there).
		guest_suite debug-kernel-tests "$BUILD/bzImage-debug" "$ROOT/image/guest/kernel-tests.sh" \
			--swap 256 --timeout 2400 --append "appliance.lru_gen=n appliance.test_timeout=1500"
		kunit_suite debug-kunit "$CHECK/debug-kernel-tests.run" ;;
	debug-cached-guest)
		# The KUnit suite, whose seeds are fixed, runs at the boot of
		# debug-kernel-tests; here it would only add 20 s to a boot of
		# 85 s (kunit.filter_glob matching no suite skips it).
		guest_suite debug-cached-guest "$BUILD/bzImage-debug" "$ROOT/image/guest/cached-volatile.sh" \
			--timeout 1500 --append kunit.filter_glob=none ;;
	demo)
		# The experiment of 'make demo', short: one run per mode, small sizes.
		host_suite demo "$ROOT/scripts/test-demo.sh" ;;
	debug-kernel-stress)
		guest_suite debug-kernel-stress "$BUILD/bzImage-debug" "$ROOT/image/guest/kernel-stress.sh" \
			--timeout 900 --append kunit.filter_glob=none ;;
	cached-guest)
		guest_suite cached-guest "$BUILD/bzImage" "$ROOT/image/guest/cached-volatile.sh" \
			--timeout 900 ;;
	runner)
		host_suite runner "$ROOT/scripts/test-runner.sh" ;;
	kernel-stress)
		# The stress job on the release kernel too: it runs several times
		# as many operations there as on the debug kernel in its 60 s.
		guest_suite kernel-stress "$BUILD/bzImage" "$ROOT/image/guest/kernel-stress.sh" \
			--timeout 600 ;;
	kernel-tests)
		# The release kernel's selftests run with MGLRU on, the debug
		# kernel's with it off: both reclaims in one make check, at no
		# extra cost.
		guest_suite kernel-tests "$BUILD/bzImage" "$ROOT/image/guest/kernel-tests.sh" \
			--swap 256 --timeout 900 --append appliance.lru_gen=y
		kunit_suite kunit "$CHECK/kernel-tests.run" ;;
	cached-memcg)
		# The daemon in a memory cgroup: a hog in its cgroup purges its
		# ranges without an OOM kill, a neighbour's reclaim purges none.
		guest_suite cached-memcg "$BUILD/bzImage" "$ROOT/image/guest/cached-memcg.sh" \
			--timeout 600 ;;
	series)
		host_suite series "$ROOT/scripts/test-series.sh" ;;
	esac
}

# The lanes' jobs, longest first (minutes beside another guest on a 2-core
# host: 15 to 27, 10 to 13, 7, 4, 2, 1.5, 1, 1, 1, 0.5): two lanes take
# the next job from this queue whenever they are free, so the long debug
# selftests run beside all the rest, however long they take this time.
LANE_JOBS="debug-kernel-tests debug-cached-guest demo debug-kernel-stress cached-guest runner
	kernel-stress kernel-tests cached-memcg series"

# next_job: the head of the queue, taken off it; empty when it is empty.
next_job() {
	# shellcheck disable=SC2016 # $1 is the inner shell's
	flock "$CHECK/lanes.lock" sh -c 'head -n 1 "$1"; sed -i 1d "$1"' sh "$CHECK/lanes.queue"
}

lane() {
	local job
	while job=$(next_job) && [ -n "$job" ]; do
		lane_job "$job"
	done
}

GUEST_SUITES="series runner kernel-tests kunit kernel-stress cached-guest demo debug-kernel-tests debug-kunit
	debug-kernel-stress debug-cached-guest cached-memcg series-steps"
guest_wanted=0
for g in $GUEST_SUITES; do want "$g" && guest_wanted=1; done
if [ "$guest_wanted" = 1 ]; then
	say "builds"
	build kernel-tree "$ROOT/scripts/kernel-tree.sh"
	# The two kernels build at once, into their own folders: a build the
	# compiler cache mostly answers uses 1.6 of the 2 cores, and its links
	# one (3 min 17 s for both, against 4 min 15 s one after the other).
	"$ROOT/scripts/kernel-build.sh" debug &
	debug_build=$!
	if ! "$ROOT/scripts/kernel-build.sh" normal; then
		kill "$debug_build" 2>/dev/null || true
		wait "$debug_build" 2>/dev/null || true
		build_failed kernel
	fi
	build kernel-debug wait "$debug_build"
	build image "$ROOT/scripts/image-build.sh"
	# Every patch of the series builds, without a compiler warning, and
	# boots with its KUnit suite passing: 'make kernel-steps', or this
	# suite named on the command line.  Not in the default run: on a
	# machine whose compiler cache has not seen the series' steps, the
	# nine builds alone take about an hour of both cores.  Builds take
	# both cores, so it runs before the lanes, not beside them.
	if [[ $only == *" series-steps "* ]]; then
		host_suite series-steps "$ROOT/scripts/test-steps.sh"
	fi

	# Two lanes side by side: each guest is mostly one busy TCG thread,
	# so on two cores this about halves the wall time.
	say "guest suites on build/bzImage and build/bzImage-debug, two lanes"
	# shellcheck disable=SC2086
	printf '%s\n' $LANE_JOBS >"$CHECK/lanes.queue"
	lane &
	lane1=$!
	lane &
	lane2=$!
	wait "$lane1" || true
	wait "$lane2" || true
fi

totals
