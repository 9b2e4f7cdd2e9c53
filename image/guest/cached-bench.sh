#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# cached-bench.sh - in the guest, on the kernel with volatile ranges:
# cached --mode volatile against --mode pinned with everything hot, the
# same load tool, threads and memory, interleaved over rounds.  On a kernel
# without the series volatile mode falls back to pinned, so this is the
# only place where the two modes really differ.
#
# Environment: ROUNDS (5), SECS (5 seconds per round), SIZES ("100 4096"),
# KEYS (10000), MEM (128 MiB), IDLE (5 seconds, cached's default).
# Prints one line per round and a table of medians; writes bench.txt to $OUT.
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-5}
SIZES=${SIZES:-100 4096}
KEYS=${KEYS:-10000}
MEM=${MEM:-128}
IDLE=${IDLE:-5}
PORT=11411
OUT=${OUT:-/tmp}
RES=/tmp/cached-bench.res
: >"$RES"

mstat() { mcclient -p "$PORT" stat "$1" 2>/dev/null || echo 0; }
jget() { sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" "$1"; }

run_one() { # run_one MODE SIZE ROUND
	cached -u root -l 127.0.0.1 -p "$PORT" -t 2 -m "$MEM" --idle "$IDLE" \
		--mode "$1" >/tmp/cached-bench.log 2>&1 &
	pid=$!
	i=0
	while [ $i -lt 50 ] && ! mcclient -p "$PORT" stats >/dev/null 2>&1; do
		sleep 0.1
		i=$((i + 1))
	done
	mode=$(mstat mode)
	loadgen -s "127.0.0.1:$PORT" -t 1 -c 8 -k "$KEYS" -g "size=$2" \
		--ratio 9:1 -w -q -d "$SECS" -j /tmp/cached-bench.json
	rc=$?
	vb=$(mstat volatile_bytes)
	kill -TERM "$pid"
	wait "$pid"
	ops=$(jget /tmp/cached-bench.json ops_per_s)
	p50=$(jget /tmp/cached-bench.json p50_us)
	p99=$(jget /tmp/cached-bench.json p99_us)
	echo "$2 $3 $1 ${ops:-0} ${p50:-0} ${p99:-0} $vb $mode $rc" >>"$RES"
	printf '  %5sB round %d  %-8s %9.0f ops/s  p50 %7.1f us  p99 %8.1f us  volatile_bytes %s (mode %s)\n' \
		"$2" "$3" "$1" "${ops:-0}" "${p50:-0}" "${p99:-0}" "$vb" "$mode"
}

echo "cached --mode volatile vs --mode pinned in the guest ($(nproc) CPUs," \
	"$(uname -r)): -t 2 -m $MEM, $KEYS keys, 90% get / 10% set," \
	"loadgen -t 1 -c 8, ${SECS}s x $ROUNDS rounds"
for size in $SIZES; do
	r=1
	while [ $r -le "$ROUNDS" ]; do
		# alternate which mode goes first
		if [ $((r % 2)) -eq 1 ]; then
			run_one pinned "$size" $r
			run_one volatile "$size" $r
		else
			run_one volatile "$size" $r
			run_one pinned "$size" $r
		fi
		r=$((r + 1))
	done
done

awk '
function median(a, n,    i, j, t) {
	for (i = 1; i <= n; i++)
		for (j = i + 1; j <= n; j++)
			if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
	k = $1 SUBSEP $3
	n[k]++; ops[k, n[k]] = $4; p50[k, n[k]] = $5; p99[k, n[k]] = $6
	if ($7 > vb[k]) vb[k] = $7
	eff[k] = $8
	if ($9 != 0) bad++
	if (!($1 in sizes)) { sizes[$1] = 1; order[++nsizes] = $1 }
	pair[$1, $2, $3] = $4
	rounds[$1] = $2 > rounds[$1] ? $2 : rounds[$1]
}
END {
	printf "%-6s %-9s %-9s %10s %9s %9s %15s\n", "value", "mode", "runs as", "ops/s", "p50 us", "p99 us", "volatile bytes"
	for (o = 1; o <= nsizes; o++) {
		s = order[o]
		for (m = 0; m < 2; m++) {
			mode = m ? "volatile" : "pinned"
			k = s SUBSEP mode
			c = n[k]
			for (i = 1; i <= c; i++) { a[i] = ops[k, i]; b[i] = p50[k, i]; d[i] = p99[k, i] }
			mo[mode] = median(a, c)
			printf "%-6s %-9s %-9s %10.0f %9.1f %9.1f %15d\n", s "B", mode, eff[k], mo[mode], median(b, c), median(d, c), vb[k]
		}
		c = 0
		for (r = 1; r <= rounds[s]; r++)
			if (pair[s, r, "pinned"] > 0)
				ratio[++c] = pair[s, r, "volatile"] / pair[s, r, "pinned"]
		printf "%-6s volatile/pinned %.3fx (median of %d per-round ratios)\n", s "B", median(ratio, c), c
	}
	if (bad) printf "%d load runs failed\n", bad
}' "$RES" | tee "$OUT/bench.txt"
