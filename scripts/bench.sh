#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# bench.sh - the project's benchmarks, each printing its own table:
#   kernel   the cost of a VOLATILE+NONVOLATILE pair at 1, 1,000 and 100,000
#            ranges next to a null fadvise, in the guest (volatile_bench at
#            random offsets, then on one page: image/guest/volatile-bench.sh)
#   kernel-icount  the same in instructions, with the parts of a pair
#            (volatile_bench -p), in a guest whose clock counts one
#            nanosecond per instruction (qemu-run.sh --icount): figures
#            free of host load and of TCG's uneven speeds
#   kernel-profile  where those instructions go: guest kernel instructions
#            per call, by function, for a pair, a null fadvise and the
#            parts of a pair at 100,000 ranges (qemu-run.sh --profile, two
#            runs of each kind of call, scripts/profile.py)
#   cached   cached against Debian's memcached on the host (make -C cached bench)
#   cached-guest  cached --mode volatile against --mode pinned in the guest,
#            on the patched kernel, everything hot (image/guest/cached-bench.sh)
#   loadgen  loadgen against memcaslap on the host (make -C loadgen bench)
#
# usage: scripts/bench.sh [kernel|kernel-icount|kernel-profile|cached|cached-guest|loadgen]...
#        (default: all)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

parts=${*:-kernel kernel-icount kernel-profile cached cached-guest loadgen}
for part in $parts; do
	case $part in
	kernel)
		say "kernel: volatile_bench in the guest"
		"$ROOT/scripts/qemu-run.sh" --name bench --timeout 900 \
			--script "$ROOT/image/guest/volatile-bench.sh"
		;;
	kernel-icount)
		say "kernel-icount: volatile_bench counting instructions (every ns below is one guest instruction)"
		# Caches and TLBs do not count here, so pairs at random offsets
		# cost what pairs on one page do: one run is enough.
		"$ROOT/scripts/qemu-run.sh" --name bench-icount --icount --cpus 1 \
			--timeout 900 -- /usr/libexec/volatile/volatile_bench -p
		;;
	kernel-profile)
		say "kernel-profile: guest kernel instructions per call, by function, at 100,000 ranges"
		# Each kind of call runs LESS and MORE times in two boots; the
		# difference divided by MORE - LESS is one call.
		less=20000 more=60000 cols=()
		dir=$BUILD/runs/profile-$(date +%Y%m%d-%H%M%S)-$$
		for op in pair null fail query unmark; do
			for n in $less $more; do
				say "  $op x $n"
				"$ROOT/scripts/qemu-run.sh" --profile --cpus 1 --quiet \
					--run-dir "$dir/$op-$n" --timeout 600 -- \
					/usr/libexec/volatile/volatile_bench -n "$n" -o "$op"
			done
			cols+=("$op=$dir/$op-$less/profile.txt,$dir/$op-$more/profile.txt")
		done
		echo "instructions per call in the guest kernel (user space not counted);"
		echo "fail: two calls that return -EINVAL at once; query: ISVOLATILE;"
		echo "unmark: NONVOLATILE of a page that is not volatile"
		"$ROOT/scripts/profile.py" --calls $((more - less)) "${cols[@]}"
		;;
	cached-guest)
		say "cached-guest: volatile against pinned mode on the patched kernel, in the guest"
		"$ROOT/scripts/qemu-run.sh" --name bench-cached --timeout 1800 \
			--script "$ROOT/image/guest/cached-bench.sh"
		;;
	cached | loadgen)
		say "$part: make -C $part bench"
		make -s -C "$ROOT/$part" bench
		;;
	*) echo "usage: $0 [kernel|kernel-icount|kernel-profile|cached|cached-guest|loadgen]..." >&2; exit 64 ;;
	esac
done
