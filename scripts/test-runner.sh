#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# test-runner.sh - tests of scripts/qemu-run.sh itself, on build/bzImage:
# exit status and result files come back, a hung guest is killed and
# reported, a kernel warning fails a run whose job passed, user-space
# text that looks like a warning does not, the guest has two NUMA nodes
# (one with --nodes 1), --icount makes the guest's clock count
# instructions, and --profile counts them by kernel function.  And
# image/guest/tap.sh, the pass/fail helper of every test script, behaves
# the same under bash, dash and busybox sh.
#
# usage: scripts/test-runner.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 64; }
RUN=$ROOT/scripts/qemu-run.sh
T=$BUILD/check/runner-tests
rm -rf "$T"
mkdir -p "$T"

# runner NAME ARGS...: run qemu-run.sh, keep its status in $T/NAME.rc.
runner() {
	local name=$1 rc=0
	shift
	"$RUN" --quiet --run-dir "$T/$name" "$@" >"$T/$name.out" 2>&1 || rc=$?
	echo "$rc" >"$T/$name.rc"
}
rc_is() { [ "$(cat "$T/$1.rc")" = "$2" ]; }

runner status --timeout 120 -- sh -c 'echo hello >"$OUT/hello.txt"; exit 3'
check "the guest's exit status comes back" rc_is status 3
check "result files come back" grep -qx hello "$T/status/out/hello.txt"
for f in kconfig qemu-cmd console.log exit-status warnings.txt; do
	check "the run keeps $f" test -f "$T/status/$f"
done
check "the run is under TCG or probed KVM" grep -qE -- '-accel tcg|-enable-kvm' "$T/status/qemu-cmd"

# Two NUMA nodes by default, each with half of the RAM and one of the two
# CPUs; --nodes 1 gives one.
runner numa --timeout 120 -- sh -c 'cd /sys/devices/system/node &&
	for n in node*; do echo "$n $(cat $n/cpulist) $(sed -n "s/.*MemTotal: *\([0-9]*\).*/\1/p" $n/meminfo)"; done >"$OUT/nodes.txt"'
two_nodes() {
	[ "$(wc -l <"$T/numa/out/nodes.txt")" = 2 ] &&
		awk '$1 == "node0" && $2 == "0" { a = $3 } $1 == "node1" && $2 == "1" { b = $3 }
			END { exit !(a > 150000 && b > 150000) }' "$T/numa/out/nodes.txt"
}
check "the guest has two NUMA nodes, a CPU and over 150 MB each" two_nodes
runner numa1 --nodes 1 --timeout 120 -- sh -c 'ls -d /sys/devices/system/node/node* >"$OUT/nodes.txt"'
check "--nodes 1: the guest has one NUMA node" test "$(cat "$T/numa1/out/nodes.txt" 2>/dev/null)" = /sys/devices/system/node/node0

runner hang --timeout 20 -- sleep 600
check "a hung guest is killed and reported" rc_is hang 124
check "the hang report says 'hung'" grep -q 'hung' "$T/hang.out"

runner warning --timeout 120 -- sh -c 'echo "WARNING: CPU: 0 PID: 1 at runner-self-test" >/dev/kmsg'
check "a kernel warning fails a passing job" rc_is warning 1
check "the warning is listed" grep -q 'runner-self-test' "$T/warning/warnings.txt"

runner userspace --timeout 120 -- echo "BUG: this is only user-space text"
check "user-space text is not a kernel warning" rc_is userspace 0

# --icount: the guest's time is its instruction count, so a guest that
# sleeps skips ahead (sleep=off): a 300 s sleep ends inside a 150 s
# watchdog, and the guest's own clock says the 300 s went by.  The run
# takes about 20 s on an idle host; the margins are magnitudes, so a
# host busy with other guests still passes, and a guest whose clock did
# not skip is killed at 150 s.  And the guest is told its TSC runs at
# 1 GHz, one tick per instruction.
runner icount --icount --cpus 1 --timeout 150 -- sh -c \
	'sleep 300; cut -d" " -f1 /proc/uptime >"$OUT/uptime.txt"; dmesg | grep "tsc: Detected" >"$OUT/tsc.txt"'
slept() { rc_is icount 0 && awk '{ exit !($1 >= 300) }' "$T/icount/out/uptime.txt"; }
check "--icount: a 300 s sleep in the guest ends inside a 150 s watchdog" slept
check "--icount runs QEMU with -icount shift=0" grep -q -- '-icount shift=0' "$T/icount/qemu-cmd"
check "--icount: the guest's TSC is 1 GHz" grep -q 'Detected 1000.000 MHz TSC' "$T/icount/out/tsc.txt"
runner icount-smp --icount --cpus 2 -- true
refused() { ! rc_is icount-smp 0 && grep -q 'run the guest on one CPU, not 2' "$T/icount-smp.out"; }
check "--icount refuses a second CPU, on which the guest would hang" refused

# --profile: two runs that differ only in how many ISVOLATILE calls they
# make; scripts/profile.py turns the difference into instructions per call.
# A query goes through fadvise and shmem_fadvise() to
# shmem_volatile_query(), never to
# generic_fadvise(), and costs a few hundred instructions.  The two runs
# differ by 200,000 calls: what the two boots do differently (timer ticks,
# deferred work) moves the whole kernel's count by up to about 10 million
# instructions, which over 4,000 calls made the total per call swing by
# thousands and over 200,000 moves it by about 50.
for n in 2000 202000; do
	runner "profile-$n" --profile --timeout 120 -- \
		/usr/libexec/volatile/volatile_bench -n "$n" -m 1000 -o query
done
both_ran() { rc_is profile-2000 0 && rc_is profile-202000 0; }
check "--profile: the profiled runs pass" both_ran
check "--profile runs QEMU with the plugin" grep -q -- '-plugin .*insn-profile.so' "$T/profile-2000/qemu-cmd"
check "--profile counts kernel addresses" grep -qE '^ffffffff[0-9a-f]{8} [1-9][0-9]*$' "$T/profile-2000/profile.txt"
"$ROOT/scripts/profile.py" --calls 200000 --min 0 \
	"query=$T/profile-2000/profile.txt,$T/profile-202000/profile.txt" >"$T/profile.out" 2>&1 || true
# Instructions per call in the functions whose names match the regex $1
# (summed, since the compiler may inline one into another).
per_call() { awk -v f="^($1)\$" '$1 ~ f { n++; v += $2 } END { if (n) print v }' "$T/profile.out"; }
in_range() { local v; v=$(per_call "$1"); [ -n "$v" ] && awk -v v="$v" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'; }
# The lookup descends about 10 levels of a 1,000-range tree, inlined into
# shmem_volatile_query() or not (vr_first, vr_first.isra.0).
check "profile.py: a query runs 60-200 instructions in shmem_volatile_query and its lookup" \
	in_range 'shmem_volatile_query|vr_first.*' 60 200
check "profile.py: a query runs its own code in shmem_volatile_query" in_range shmem_volatile_query 10 200
not_reached() {
	grep -q '^total ' "$T/profile.out" &&
		! awk -v f="$1" '$1 == f && $2 >= 0.5 { hit = 1 } END { exit !hit }' "$T/profile.out"
}
bad_column() {
	! "$ROOT/scripts/profile.py" --calls 1 bogus >"$T/profile-bad.out" 2>&1 &&
		grep -q "'bogus' is not NAME=BASE,MORE" "$T/profile-bad.out"
}
check "profile.py: a query never reaches generic_fadvise" not_reached generic_fadvise
check "profile.py: a query costs 150-1000 kernel instructions" in_range total 150 1000
check "profile.py: a malformed column is a clear error" bad_column

runner nokernel --kernel "$T/no-such-kernel" -- true
check "a missing kernel is a clear error" grep -q 'no kernel at' "$T/nokernel.out"
check "a missing kernel fails" test "$(cat "$T/nokernel.rc")" != 0

# tap.sh, the pass/fail helper of every test script, host and guest: the
# same numbered TAP lines, counts and exit status under each shell that
# runs tests (bash on the host, dash for loadgen's and cached's, busybox
# ash in the guest), and check goes on under set -e when its command fails.
printf '%s\n' "ok 1 - a b" "not ok 2 - c" "ok 3 - d # SKIP no swap" "ok 4 - e" \
	"not ok 5 - f  # why" "not ok 6 - g" "ok 7 - h" "3 passed, 3 failed, 1 skipped" "status 1" >"$T/tap.want"
tap_same() {
	# shellcheck disable=SC2016 # expanded by the shell under test
	$1 -c 'set -e; . "$0"; ok a b; not_ok c; skip d "no swap"; result e 0; result f 1 why
		check g false; check h true; st=0; check_totals || st=$?; echo "status $st"' \
		"$ROOT/image/guest/tap.sh" >"$T/tap.out" 2>&1
	diff "$T/tap.want" "$T/tap.out"
}
for sh in bash dash "busybox sh"; do
	check "tap.sh: the same lines and status under $sh" tap_same "$sh"
done

check_totals
