#!/usr/bin/env bash
# bench.sh - the project's benchmarks, each printing its own table:
#   kernel   the cost of a VOLATILE+NONVOLATILE pair at 1, 1,000 and 100,000
#            ranges next to a null fadvise, in the guest (volatile_bench at
#            random offsets, then on one page: image/guest/volatile-bench.sh)
#   kernel-icount  the same in instructions, with the parts of a pair
#            (volatile_bench -p), in a guest whose clock counts one
#            nanosecond per instruction (qemu-run.sh --icount): figures
#            free of host load and of TCG's uneven speeds
#   cached   cached against Debian's memcached on the host (make -C cached bench)
#   cached-guest  cached --mode volatile against --mode pinned in the guest,
#            on the patched kernel, everything hot (image/guest/cached-bench.sh)
#   loadgen  loadgen against memcaslap on the host (make -C loadgen bench)
#
# usage: scripts/bench.sh [kernel|kernel-icount|cached|cached-guest|loadgen]...
#        (default: all)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

parts=${*:-kernel kernel-icount cached cached-guest loadgen}
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
	cached-guest)
		say "cached-guest: volatile against pinned mode on the patched kernel, in the guest"
		"$ROOT/scripts/qemu-run.sh" --name bench-cached --timeout 1800 \
			--script "$ROOT/image/guest/cached-bench.sh"
		;;
	cached | loadgen)
		say "$part: make -C $part bench"
		make -s -C "$ROOT/$part" bench
		;;
	*) echo "usage: $0 [kernel|kernel-icount|cached|cached-guest|loadgen]..." >&2; exit 64 ;;
	esac
done
