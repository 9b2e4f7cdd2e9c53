#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# kernel-tests.sh - guest job: the volatile ranges selftests, then the
# benchmark.  Prints one TAP line per test (tap.sh, the helper of every
# test script) and, at the end, "N passed, N failed, N skipped".  Exit 0
# only when the kernel has volatile ranges and nothing failed.
#
# A kernel without volatile ranges makes the selftests skip; here that is a
# failure.  With $SWAPDEV set (qemu-run.sh --swap) the swap test runs too.
# Benchmark timings are printed with their verdict; only errors fail.
#
# The kernel command line's appliance.lru_gen=y|n switches the
# multi-generational LRU (/sys/kernel/mm/lru_gen/enabled) before the tests,
# so one kernel runs them with either reclaim; make check runs the release
# kernel with it on and the debug kernel with it off.  Without it the
# kernel's default stays.  The setting in force is printed either way.
BIN=${VOLATILE_BIN:-/usr/libexec/volatile}
OUT=${OUT:-/tmp}
# A kernel that hangs a test must still leave a result: seconds for the
# whole selftest run (each test also has its own limit in the harness).
# The kernel command line's appliance.test_timeout=N sets it for a slow
# kernel (the debug kernel under TCG, beside another guest, took over 720).
LIMIT=${VOLATILE_TEST_TIMEOUT:-720}
# shellcheck source-path=SCRIPTDIR source=tap.sh
. "${APPLIANCE:-/usr/share/appliance}/tap.sh"

finish() {
	check_totals && [ "$tap_pass" -gt 0 ]
	exit $?
}

echo "kernel: $(uname -r), $(grep MemAvailable /proc/meminfo | tr -s ' '), swap device: ${SWAPDEV:-none}"
lru_gen=""
for arg in $(cat /proc/cmdline); do
	case $arg in
	appliance.lru_gen=*) lru_gen=${arg#appliance.lru_gen=} ;;
	appliance.test_timeout=*) [ -n "${VOLATILE_TEST_TIMEOUT:-}" ] || LIMIT=${arg#appliance.test_timeout=} ;;
	esac
done
echo "kernel-tests: the selftest run may take up to $LIMIT s"
LRU_GEN=/sys/kernel/mm/lru_gen/enabled
if [ -n "$lru_gen" ]; then
	if echo "$lru_gen" >"$LRU_GEN" 2>/dev/null; then
		ok "MGLRU switched with appliance.lru_gen=$lru_gen"
	else
		not_ok "cannot write '$lru_gen' to $LRU_GEN (CONFIG_LRU_GEN?)"
	fi
fi
if [ -r "$LRU_GEN" ]; then
	case $(cat "$LRU_GEN") in
	0x0000) echo "kernel: MGLRU off ($LRU_GEN: $(cat "$LRU_GEN")): the classic active/inactive LRU" ;;
	*) echo "kernel: MGLRU on ($LRU_GEN: $(cat "$LRU_GEN"))" ;;
	esac
else
	echo "kernel: no MGLRU ($LRU_GEN is missing): the classic active/inactive LRU"
fi
echo "kernel: $(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l) NUMA node(s), cgroup v2: $(cat /sys/fs/cgroup/cgroup.controllers 2>/dev/null || echo none)"
bench_args=""
if dmesg | grep -q 'KernelAddressSanitizer initialized'; then
	# Its figures mean nothing under KASAN: it runs to touch the paths,
	# once, up to 10,000 ranges (100,000 took 110 s of the 123 s).
	echo "kernel: a debug kernel (KASAN): the benchmark runs once, briefly, up to 10000 ranges"
	bench_args="-r 1 -t 20 -m 10000"
fi
for b in volatile_ranges volatile_bench; do
	if [ ! -x "$BIN/$b" ]; then
		not_ok "$b is not in the image ($BIN)"
		finish
	fi
done

"$BIN/volatile_bench" --probe
case $? in
0) ok "kernel has volatile ranges" ;;
4)
	not_ok "kernel lacks volatile ranges"
	finish
	;;
*)
	not_ok "volatile ranges probe failed"
	finish
	;;
esac

# The selftests.  Their TAP output is kept in $OUT and shown with a prefix.
t0=$(date +%s)
{
	timeout "$LIMIT" "$BIN/volatile_ranges" 2>&1
	echo $? >"$OUT/volatile_ranges.rc"
} | tee "$OUT/volatile_ranges.tap" | awk -v times="$OUT/volatile_ranges.times" '
# Each test'"'"'s time, from its "RUN" line to its TAP line, by the guest'"'"'s
# clock: into volatile_ranges.times, the slowest shown at the end.
function now(   l) { getline l <"/proc/uptime"; close("/proc/uptime"); split(l, f, " "); return f[1] }
/^#  RUN / { name = $3; start = now() }
/^(not )?ok [0-9]+/ && name != "" { printf "%7.1f %s\n", now() - start, name >>times; name = "" }
{ print "volatile_ranges| " $0; fflush() }
'
rc=$(cat "$OUT/volatile_ranges.rc" 2>/dev/null || echo 125)
echo "volatile_ranges: exit status $rc after $(($(date +%s) - t0)) s"
echo "volatile_ranges: the slowest tests (s):"
sort -rn "$OUT/volatile_ranges.times" 2>/dev/null | head -n 8 | sed 's/^/  /'
# One line per test: the harness names a test on its "RUN" line and reports
# it on a TAP line ("ok N name", "not ok N name", "ok N # SKIP reason").
awk '
/^#  RUN / { name = $3; next }
/^not ok [0-9]+/ { print "F " name; n++; next }
/^ok [0-9]+ # SKIP/ { sub(/^ok [0-9]+ # SKIP */, ""); print "S " name " (" $0 ")"; n++; next }
/^ok [0-9]+/ { print "P " name; n++; next }
/^1\.\.[0-9]+/ { plan = substr($0, 4) + 0 }
END { if (plan == 0 || n < plan) print "F volatile_ranges: " (plan - n) " of " plan " tests never reported" }
' "$OUT/volatile_ranges.tap" >"$OUT/volatile_ranges.results"
seen=0
while read -r kind rest; do
	seen=$((seen + 1))
	case $kind in
	P) ok "volatile_ranges: $rest" ;;
	F) not_ok "volatile_ranges: $rest" ;;
	S)
		case $rest in
		*"lacks volatile ranges"*) not_ok "volatile_ranges: $rest" ;;
		*) skip "volatile_ranges: $rest" ;;
		esac
		;;
	esac
done <"$OUT/volatile_ranges.results"
if [ "$seen" -eq 0 ] || { [ "$rc" -ne 0 ] && ! grep -q '^F ' "$OUT/volatile_ranges.results"; }; then
	not_ok "volatile_ranges: exit status $rc"
fi
if grep -q '^S pressure.purge_order_oldest_first' "$OUT/volatile_ranges.results"; then
	not_ok "volatile_ranges: the purge order test did not run (it needs CONFIG_SHRINKER_DEBUG)"
fi
if [ -n "${SWAPDEV:-}" ] && grep -q '^S swap.purged_not_swapped' "$OUT/volatile_ranges.results"; then
	not_ok "volatile_ranges: the swap test did not run although $SWAPDEV is there"
fi

# The benchmark: a table and a verdict; timing does not fail the job.  On
# a debug kernel (KASAN) its figures mean nothing, so one short repetition
# only shows that it runs.
t0=$(date +%s)
{
	# shellcheck disable=SC2086
	timeout 300 "$BIN/volatile_bench" $bench_args 2>&1
	echo $? >"$OUT/volatile_bench.rc"
} | tee "$OUT/bench.txt" | sed 's/^/volatile_bench| /'
rc=$(cat "$OUT/volatile_bench.rc" 2>/dev/null || echo 125)
echo "volatile_bench: exit status $rc after $(($(date +%s) - t0)) s"
if [ "$rc" -eq 0 ]; then
	ok "volatile_bench ($(sed -n 's/^targets at .*: //p' "$OUT/bench.txt") targets)"
else
	not_ok "volatile_bench: exit status $rc"
fi
finish
