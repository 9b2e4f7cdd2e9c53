#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# kernel-stress.sh - guest job: volatile_stress for a fixed time, with forced
# purges, tmpfs mounts and unmounts, and a memory-pressure child.  Run
# time: the first argument, else
# $STRESS_SECONDS, else 60 s.  Prints the counts, one TAP line per check
# (tap.sh, the helper of every test script) and, at the end, "N passed,
# N failed, N skipped".  Exit 0 only when the kernel has
# volatile ranges, no data was corrupted and nothing failed unexpectedly.
BIN=${VOLATILE_BIN:-/usr/libexec/volatile}
OUT=${OUT:-/tmp}
SECONDS_TO_RUN=${1:-${STRESS_SECONDS:-60}}
# shellcheck source-path=SCRIPTDIR source=tap.sh
. "${APPLIANCE:-/usr/share/appliance}/tap.sh"

finish() {
	check_totals && [ "$tap_pass" -gt 0 ]
	exit $?
}

echo "kernel: $(uname -r), $(grep MemAvailable /proc/meminfo | tr -s ' '), stress for ${SECONDS_TO_RUN} s"
for b in volatile_stress volatile_bench; do
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

# With a swap device (qemu-run.sh --swap), reclaim also meets volatile
# pages on their way to swap.
if [ -n "${SWAPDEV:-}" ] && mkswap "$SWAPDEV" >/dev/null 2>&1 && swapon "$SWAPDEV"; then
	echo "swap on $SWAPDEV"
fi
grep -E '^(volatile_purged|oom_kill|pswpout)' /proc/vmstat >"$OUT/vmstat-before.txt"
{
	timeout $((SECONDS_TO_RUN + 300)) "$BIN/volatile_stress" -t "$SECONDS_TO_RUN" 2>&1
	echo $? >"$OUT/volatile_stress.rc"
} | tee "$OUT/stress.txt" | sed 's/^/volatile_stress| /'
rc=$(cat "$OUT/volatile_stress.rc" 2>/dev/null || echo 125)
grep -E '^(volatile_purged|oom_kill|pswpout)' /proc/vmstat >"$OUT/vmstat-after.txt"
echo "vmstat before/after:"
paste "$OUT/vmstat-before.txt" "$OUT/vmstat-after.txt"
grep -E '^Volatile' /proc/meminfo

value() { sed -n "s/^$1=//p" "$OUT/stress.txt" | tail -n 1; }
corruption=$(value corruption)
errors=$(value errors)
ops=$(value ops)
purges=$(value purges_seen)
ooms=$(value oom_kills)
echo "stress: operations=${ops:-?} purges_seen=${purges:-?} corruption=${corruption:-?} errors=${errors:-?} oom_kills=${ooms:-?}"

if [ "$corruption" = 0 ]; then
	ok "volatile_stress: no data corruption"
else
	not_ok "volatile_stress: corruption=${corruption:-unknown}"
fi
if [ "$errors" = 0 ]; then
	ok "volatile_stress: no unexpected errors"
else
	not_ok "volatile_stress: errors=${errors:-unknown}"
fi
if [ -n "$ops" ] && [ "$ops" -gt 0 ] && [ -n "$purges" ] && [ "$purges" -gt 0 ]; then
	ok "volatile_stress: $ops operations, $purges purges seen"
else
	not_ok "volatile_stress: no operations or no purge seen (ops=${ops:-?}, purges=${purges:-?})"
fi
# The unmounter: tmpfs mounted, a file of it marked and paged out, and
# unmounted (lazily every other round) while purges run.
umounts=$(value umount_rounds)
if [ -n "$umounts" ] && [ "$umounts" -gt 0 ]; then
	ok "volatile_stress: $umounts mount, mark, page-out and umount rounds"
else
	not_ok "volatile_stress: no umount round (umount_rounds=${umounts:-?})"
fi
if [ "$ooms" = 0 ]; then
	ok "volatile_stress: no OOM kill"
else
	not_ok "volatile_stress: oom_kills=${ooms:-unknown}"
fi
[ "$rc" -eq 0 ] || not_ok "volatile_stress: exit status $rc"
finish
