#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# guest-job.sh - host check of the guest job image/guest/cached-volatile.sh:
# syntax (busybox sh when installed, else dash), then a run against the
# host build.  The host kernel has no volatile ranges, so exactly the
# kernel-dependent tests must fail.
cd "$(dirname "$0")/.." || exit 1
job=../image/guest/cached-volatile.sh
if command -v busybox >/dev/null 2>&1; then
	busybox sh -n "$job" || exit 1
fi
sh -n "$job" || exit 1
log=$(mktemp)
trap 'rm -f "$log" "$log.reuse" "$log.reuse.psi"' EXIT
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
port2=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
out=$(APPLIANCE=../image/guest HOST_CHECK=1 CACHED=./cached MCCLIENT=tests/mcclient PORT=$port PORT2=$port2 KEYS=3000 IDLE=1 IDLE2=2 \
	LOG=$log LOG2=$log.reuse sh "$job")
echo "$out"
fails=$(echo "$out" | grep '^not ok' | sed 's/^not ok [0-9]* - //' | sort | tr '\n' '|')
expect="Volatile: in /proc/meminfo grows when the cache idles|and then as a plain miss|daemon runs in volatile mode (mode=pinned: cached: this kernel has no volatile ranges on memfd (POSIX_FADV_VOLATILE); running in pinned mode)|mg reports a key lost to a purge as EN P|one of 8 clients wins the rebuild (W), 7 wait (Z), all see P|purges and rebuilds are counted in stats|stats count volatile bytes|"
if [ "$fails" != "$expect" ]; then
	echo "unexpected failures: $fails"
	exit 1
fi
echo "$out" | grep -q '^1\.\.30$' || exit 1
[ "$(echo "$out" | grep -c '^ok\|^not ok')" -eq 30 ]
