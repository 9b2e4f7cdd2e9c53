#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# test-fleet.sh - host tests of the fleet: three cached daemons behind
# nutcracker (twemproxy) on loopback, and a near cache in front of them.
#
# usage: scripts/test-fleet.sh
#
# Builds cached and loadgen (make -C), starts everything on free random
# loopback ports with its files in a temporary folder, prints one TAP line
# per assertion (image/guest/tap.sh) and ends with "N passed, N failed,
# N skipped"; exit status 1 on any failure.  Every process started here is stopped on exit.  About 40 s.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/lib.sh"
. "$ROOT/scripts/fleet/common.sh"

CACHED=$ROOT/cached/cached
LOADGEN=$ROOT/loadgen/loadgen
MC=$MCCLIENT
RETRY_MS=1500   # server_retry_timeout: an ejected node is tried again after it

if ! make -C "$ROOT/cached" cached tests/mcclient >/dev/null ||
	! make -C "$ROOT/loadgen" loadgen >/dev/null; then
	result build 1 "make -C cached or loadgen failed"
	check_totals
	exit 1
fi
for tool in nutcracker python3; do
	command -v "$tool" >/dev/null || {
		result "$tool" 1 "$tool is missing (make deps)"
		check_totals
		exit 1
	}
done

TMP=$(mktemp -d /tmp/fleet-test.XXXXXX)
PIDS=""

cleanup() {
	local p
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	for p in $PIDS; do wait "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# json FILE EXPR: a value of loadgen's --json summary (python expression on j)
json() {
	python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# lg NAME ARGS...: loadgen through the proxy, summary in $TMP/NAME.json,
# interval lines in $TMP/NAME.lines; returns loadgen's status.
lg() {
	local name=$1
	shift
	"$LOADGEN" --server "127.0.0.1:$PROXY" -t 1 -c 4 --keys 3000 --gen size=100 \
		--verify -q --json "$TMP/$name.json" "$@" >"$TMP/$name.lines" 2>"$TMP/$name.err"
}

mapfile -t PORTS < <(fleet_free_ports 6)
NODE=("${PORTS[0]}" "${PORTS[1]}" "${PORTS[2]}")
PROXY=${PORTS[3]} SPORT=${PORTS[4]} NEAR=${PORTS[5]}
declare -A NODE_PID

start_node() {	# start_node INDEX (0-based)
	"$CACHED" -p "${NODE[$1]}" -l 127.0.0.1 -m 16 -t 1 -u root \
		>"$TMP/node$(($1 + 1)).log" 2>&1 &
	NODE_PID[$1]=$!
	PIDS="$PIDS $!"
	fleet_wait 127.0.0.1 "${NODE[$1]}" 5
}

for i in 0 1 2; do
	rc=0
	start_node "$i" || rc=$?
	result "node$((i + 1))-starts" "$rc"
	[ "$rc" = 0 ] || cat "$TMP/node$((i + 1)).log"
done
fleet_conf "$TMP/fleet.yml" "127.0.0.1:$PROXY" 1000 "$RETRY_MS" 1 \
	"127.0.0.1:${NODE[0]}:node1" "127.0.0.1:${NODE[1]}:node2" "127.0.0.1:${NODE[2]}:node3"
rc=0
NUT=$(fleet_nutcracker "$TMP/fleet.yml" "$SPORT" "$TMP") || rc=1
[ -z "$NUT" ] || PIDS="$PIDS $NUT"
# nutcracker answers no "version" (see docs/fleet.md); wait for its port.
for _ in $(seq 50); do
	(exec 3<>"/dev/tcp/127.0.0.1/$PROXY") 2>/dev/null && break
	sleep 0.1
done
(exec 3<>"/dev/tcp/127.0.0.1/$PROXY") 2>/dev/null || rc=1
result proxy-starts "$rc" "nutcracker did not start: $(tail -n 3 "$TMP/nutcracker.log" 2>/dev/null)"

# 1. Three nodes: verified traffic through the proxy, keys on every node.
rc=0
lg spread --warmup --duration 3 || rc=$?
errs=$(json "$TMP/spread.json" 'j["errors"] + j["verify_errors"] + j["conn_errors"]' 2>/dev/null || echo x)
hits=$(json "$TMP/spread.json" 'j["hits"]' 2>/dev/null || echo 0)
[ "$rc" = 0 ] && [ "$errs" = 0 ] && [ "$hits" -gt 0 ] 2>/dev/null
result verify-through-proxy $? "loadgen status $rc, errors $errs, hits $hits"

rc=0 why=""
for i in 0 1 2; do
	h=$(fleet_stat 127.0.0.1 "${NODE[$i]}" get_hits || echo 0)
	items=$(fleet_stat 127.0.0.1 "${NODE[$i]}" curr_items || echo 0)
	why="$why node$((i + 1)): $items items, $h hits;"
	# ketama with 160 points per node: each of 3 holds far more than 10%
	{ [ "$h" -gt 0 ] && [ "$items" -gt 300 ]; } || rc=1
done
result keys-on-every-node "$rc" "$why"
echo "  #$why"

# 2. Kill node2: the proxy goes on, ejects it; node2's keys become misses.
kill "${NODE_PID[1]}"
wait "${NODE_PID[1]}" 2>/dev/null
rc=0
lg killed --duration 5 --interval 1 || rc=$?
verr=$(json "$TMP/killed.json" 'j["verify_errors"]' 2>/dev/null || echo x)
ops=$(json "$TMP/killed.json" 'j["ops"]' 2>/dev/null || echo 0)
errs=$(json "$TMP/killed.json" 'j["errors"]' 2>/dev/null || echo 0)
# loadgen exits 3 when requests failed: the ones in flight to node2 did.
{ [ "$rc" = 0 ] || { [ "$rc" = 3 ] && [ "$errs" -gt 0 ]; }; } &&
	[ "$verr" = 0 ] && [ "$ops" -gt 1000 ] && [ $((errs * 100)) -lt "$ops" ]
result node-down-traffic-goes-on $? "loadgen status $rc, ops $ops, errors $errs, verify_errors $verr"

# every second of the run served verified hits, none empty
bad=$(python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    s = json.loads(line)
    if s["hits"] == 0 or s["verify_errors"]:
        n += 1
print(n)' "$TMP/killed.lines" 2>/dev/null || echo x)
[ "$bad" = 0 ]
result node-down-every-second-serves $? "$bad intervals without hits"
echo "  # node down: $ops ops, $errs errors (requests caught by a retry), $(json "$TMP/killed.json" 'j["misses"]') misses, 0 wrong bytes"

# the proxy's statistics are aggregated every 500 ms: poll up to 5 s
for _ in $(seq 10); do
	ejects=$(fleet_proxy_field "$SPORT" fleet.server_ejects 2>/dev/null || echo 0)
	ejected_at=$(fleet_proxy_field "$SPORT" fleet.node2.server_ejected_at 2>/dev/null || echo 0)
	[ "$ejects" -gt 0 ] && [ "$ejected_at" -gt 0 ] && break
	sleep 0.5
done
[ "$ejects" -gt 0 ] && [ "$ejected_at" -gt 0 ]
result proxy-ejects-node $? "server_ejects $ejects, node2 server_ejected_at $ejected_at"

# 3. Restart node2 (empty): after the retry timeout it rejoins and serves.
start_node 1
result node-restarts $? "node2 did not answer after the restart"
sleep $((RETRY_MS / 1000 + 1))
rc=0
lg rejoin --warmup --duration 3 || rc=$?
errs=$(json "$TMP/rejoin.json" 'j["errors"] + j["verify_errors"] + j["conn_errors"]' 2>/dev/null || echo x)
[ "$rc" = 0 ] && [ "$errs" = 0 ]
result rejoined-no-errors $? "loadgen status $rc, errors $errs"
h=$(fleet_stat 127.0.0.1 "${NODE[1]}" get_hits || echo 0)
items=$(fleet_stat 127.0.0.1 "${NODE[1]}" curr_items || echo 0)
[ "$h" -gt 0 ] && [ "$items" -gt 300 ]
result rejoined-node-serves $? "node2 after restart: $items items, $h hits"

# 4. A near cache in front of the pool: small (2 MiB), reading through and
#    writing through the proxy.
"$CACHED" -p "$NEAR" -l 127.0.0.1 -m 2 -t 1 -u root --origin "memcache:127.0.0.1:$PROXY" \
	>"$TMP/near.log" 2>&1 &
PIDS="$PIDS $!"
fleet_wait 127.0.0.1 "$NEAR" 5
result near-starts $? "$(tail -n 3 "$TMP/near.log")"

G=size=1000
"$MC" -p "$NEAR" -k near: -g "$G" fill 500 >"$TMP/near-fill.out" 2>&1
result near-set-stored $? "$(cat "$TMP/near-fill.out")"
"$MC" -p "$PROXY" -k near: -g "$G" -s verify 500 >"$TMP/near-fleet.out" 2>&1
result near-set-readable-from-fleet $? "$(cat "$TMP/near-fleet.out")"

# set, gets, cas through the near cache: the cas goes through the proxy
# with the fleet's cas of the value just written (learnt by the "gets"
# pipelined after the write), so every round wins on the first try.
python3 - "$NEAR" "$PROXY" >"$TMP/near-cas.out" 2>&1 <<'PY'
import socket, sys
def conn(port):
    s = socket.create_connection(("127.0.0.1", int(port)), timeout=5)
    return s, s.makefile("rb")
near, nf = conn(sys.argv[1])
prox, pf = conn(sys.argv[2])
near.sendall(b"set nearcas 0 0 1\r\n0\r\n")
bad = [] if nf.readline() == b"STORED\r\n" else ["set"]
for i in range(1, 11):
    near.sendall(b"gets nearcas\r\n")
    head = nf.readline().split()
    nf.readline(); nf.readline()
    val = b"%d" % i
    near.sendall(b"cas nearcas 0 0 %d %s\r\n%s\r\n" % (len(val), head[4], val))
    out = nf.readline()
    if out != b"STORED\r\n":
        bad.append("round %d: %r" % (i, out))
prox.sendall(b"get nearcas\r\n")
got = pf.readline() + pf.readline()
if got != b"VALUE nearcas 0 2\r\n10\r\n":
    bad.append("fleet holds %r" % got)
print("set, then 10 rounds of gets and cas: %s" % (bad or "all STORED, fleet has the last"))
sys.exit(1 if bad else 0)
PY
result near-set-gets-cas $? "$(cat "$TMP/near-cas.out")"

# flush_all drops everything the near cache holds (the proxy would refuse
# it; it is sent to the near cache itself): every key must come back from
# the fleet, byte for byte.
f0=$(fleet_stat 127.0.0.1 "$NEAR" origin_fetches || echo 0)
(exec 3<>"/dev/tcp/127.0.0.1/$NEAR" && printf 'flush_all\r\n' >&3 && read -r _ <&3)
"$MC" -p "$NEAR" -k near: -g "$G" -s verify 500 >"$TMP/near-flush.out" 2>&1
rc=$?
f1=$(fleet_stat 127.0.0.1 "$NEAR" origin_fetches || echo 0)
[ "$rc" = 0 ] && [ $((f1 - f0)) -ge 500 ]
result near-dropped-refetched $? "$(cat "$TMP/near-flush.out"), origin_fetches $f0 -> $f1"

# 8 MB through a 2 MiB near cache: most keys are evicted locally and must
# be read back from the fleet, by single-key gets and by gets of 32 keys
# (whose later keys evict the earlier ones while they are fetched).
"$MC" -p "$NEAR" -k big: -g "$G" fill 8000 >"$TMP/big-fill.out" 2>&1
"$MC" -p "$PROXY" -k big: -g "$G" -s verify 8000 >"$TMP/big-fleet.out" 2>&1
result near-fill-in-fleet $? "$(cat "$TMP/big-fill.out" "$TMP/big-fleet.out")"
ev=$(fleet_stat 127.0.0.1 "$NEAR" evictions || echo 0)
f0=$(fleet_stat 127.0.0.1 "$NEAR" origin_fetches || echo 0)
rc=0
"$LOADGEN" --server "127.0.0.1:$NEAR" -t 1 -c 2 --keys 8000 --key-prefix big: --gen "$G" \
	--get-ratio 1 --verify --ops 8000 -q --json "$TMP/big.json" >/dev/null 2>"$TMP/big.err" || rc=$?
f1=$(fleet_stat 127.0.0.1 "$NEAR" origin_fetches || echo 0)
miss=$(json "$TMP/big.json" 'j["misses"] + j["errors"] + j["verify_errors"]' 2>/dev/null || echo x)
[ "$rc" = 0 ] && [ "$miss" = 0 ] && [ "$ev" -gt 0 ] && [ "$f1" -gt "$f0" ]
result near-evicted-refetched $? "loadgen status $rc, misses+errors $miss, evictions $ev, origin_fetches $f0 -> $f1"
echo "  # near cache: $ev evictions, $((f1 - f0)) values refetched from the fleet, 0 lost"
rc=0
"$LOADGEN" --server "127.0.0.1:$NEAR" -t 1 -c 2 --keys 8000 --key-prefix big: --gen "$G" \
	--get-ratio 1 --multiget 32 --verify --ops 500 -q --json "$TMP/multi.json" >/dev/null 2>"$TMP/multi.err" || rc=$?
miss=$(json "$TMP/multi.json" 'j["misses"] + j["errors"] + j["verify_errors"]' 2>/dev/null || echo x)
hits=$(json "$TMP/multi.json" 'j["hits"]' 2>/dev/null || echo 0)
[ "$rc" = 0 ] && [ "$miss" = 0 ] && [ "$hits" -gt 0 ]
result near-multiget-refetched $? "loadgen status $rc, $hits hits, misses+errors $miss ($(head -c 300 "$TMP/multi.err"))"

check_totals
