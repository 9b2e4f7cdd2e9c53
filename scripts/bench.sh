#!/usr/bin/env bash
# bench.sh - the project's benchmarks, each printing its own table:
#   kernel   the cost of a VOLATILE+NONVOLATILE pair at 1, 1,000 and 100,000
#            ranges next to a null fadvise, in the guest (volatile_bench)
#   cached   cached against Debian's memcached on the host (make -C cached bench)
#   loadgen  loadgen against memcaslap on the host (make -C loadgen bench)
#
# usage: scripts/bench.sh [kernel|cached|loadgen]...   (default: all)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

parts=${*:-kernel cached loadgen}
for part in $parts; do
	case $part in
	kernel)
		say "kernel: volatile_bench in the guest"
		"$ROOT/scripts/qemu-run.sh" --name bench --timeout 900 \
			-- /usr/libexec/volatile/volatile_bench
		;;
	cached | loadgen)
		say "$part: make -C $part bench"
		make -s -C "$ROOT/$part" bench
		;;
	*) echo "usage: $0 [kernel|cached|loadgen]..." >&2; exit 64 ;;
	esac
done
