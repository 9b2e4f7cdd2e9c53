#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# fleet.sh - several appliance guests behind twemproxy (nutcracker) on the
# host, driven through the proxy, with memory pressure in one guest midway.
#
# usage: scripts/fleet.sh [--nodes N] [--mem MIB] [--duration S] [--out DIR]
#                         [--pressure-node I] [--rate OPS] [--keys N]
#                         [--no-near] [--kernel PATH] [--image PATH]
#   --nodes N          guests in the pool (default 3)
#   --mem MIB          RAM of each guest (default 320)
#   --duration S       measured run through the proxy (default 150); stress-ng
#                      runs in one guest during its middle third
#   --out DIR          the report section (default build/report/fleet)
#   --pressure-node I  the guest under pressure, 1..N (default 1)
#   --rate OPS         open-loop rate through the proxy (default 300)
#   --keys N           key space (default 60000, values of 4000 bytes)
#   --no-near          no near cache in the guest under pressure
#   --kernel, --image  default build/bzImage, build/rootfs.img
#
# Each guest runs image/guest/fleet-node.sh (cached, volatile mode, gen
# origin) with its port 11211 forwarded to a free loopback port.  The
# guest under pressure also runs a near cache (cached --origin
# memcache:10.0.2.2:PROXY, the host's loopback as seen from the guest)
# driven by loadgen inside the guest.  Writes DIR/fleet.md, fleet.html,
# summary.json, *.svg, and keeps the guests' run folders in DIR/runs/.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$ROOT/scripts/fleet/common.sh"

usage() { sed -n '5,18p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 64; }

nodes=3 mem=320 duration=150 out=$BUILD/report/fleet pnode=1 rate=300 keys=60000
near=1 kernel=$BUILD/bzImage image=$BUILD/rootfs.img
while [ $# -gt 0 ]; do
	case $1 in
	--nodes) nodes=$2; shift ;;
	--mem) mem=$2; shift ;;
	--duration) duration=$2; shift ;;
	--out) out=$2; shift ;;
	--pressure-node) pnode=$2; shift ;;
	--rate) rate=$2; shift ;;
	--keys) keys=$2; shift ;;
	--no-near) near=0 ;;
	--kernel) kernel=$2; shift ;;
	--image) image=$2; shift ;;
	-h | --help) usage ;;
	*) echo "fleet.sh: unknown option '$1'" >&2; usage ;;
	esac
	shift
done
for n in "$nodes" "$mem" "$duration" "$pnode" "$rate" "$keys"; do
	case $n in '' | *[!0-9]*) echo "fleet.sh: '$n' is not a number" >&2; exit 64 ;; esac
done
if [ "$nodes" -lt 1 ] || [ "$pnode" -lt 1 ] || [ "$pnode" -gt "$nodes" ]; then
	echo "fleet.sh: --pressure-node must be 1..$nodes" >&2
	exit 64
fi
[ "$duration" -ge 30 ] || { echo "fleet.sh: --duration must be at least 30" >&2; exit 64; }
[ -f "$kernel" ] || die "no kernel at $kernel (run: make kernel)"
[ -f "$image" ] || die "no image at $image (run: make image)"
command -v nutcracker >/dev/null || die "nutcracker is missing (run: make deps)"

GEN=size=4000,cost=2000,seed=7   # the origin of every node and loadgen's values
CACHE_MB=$((mem * 2 / 5))        # cached -m in each guest
# The near cache reads the fleet's first (and hottest) NEAR_KEYS keys, few
# enough that it asks for many of them again: a value its kernel purged is
# then seen to come back from the fleet.  cached marks a whole segment
# (1 MiB) volatile only when none of its objects was read for --idle
# seconds; at 100 ops/s over a few thousand keys that takes a short idle.
NEAR_MB=48 NEAR_RATE=100 NEAR_KEYS=$((keys < 20000 ? keys : 20000)) NEAR_IDLE=1
STRESS_MB=$((mem * 17 / 32))      # 170 MiB in a 320 MiB guest
STRESS="--vm 2 --vm-bytes ${STRESS_MB}M --vm-keep --no-madvise --vm-method write64"
P_START=$((duration / 3)) P_LEN=$((duration / 3))
TIMEOUT_MS=2000 RETRY_MS=5000 FAILURES=3

mkdir -p "$BUILD/logs"
LOG=$BUILD/logs/fleet-build.log
make -C "$ROOT/cached" cached tests/mcclient >"$LOG" 2>&1 || die "cannot build cached" "$LOG"
make -C "$ROOT/loadgen" loadgen >>"$LOG" 2>&1 || die "cannot build loadgen" "$LOG"

mkdir -p "$out"
# only what an earlier run of this script wrote there
rm -rf "$out/runs" "$out"/{fleet.md,fleet.html,summary.json,summary.txt,nodes.txt,nutcracker.yml} \
	"$out"/*.svg "$out"/*.gp "$out"/*.dat
mkdir -p "$out/runs"
out=$(cd "$out" && pwd)
RUNS=$out/runs
mapfile -t PORTS < <(fleet_free_ports $((nodes + 2)))
PROXY=${PORTS[$nodes]} SPORT=${PORTS[$((nodes + 1))]}

PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		# a guest: qemu-run.sh's child is timeout(1), which runs QEMU in
		# its own process group and passes the signal on
		pkill -TERM -P "$p" 2>/dev/null || true
		kill "$p" 2>/dev/null || true
	done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "fleet: $nodes guests of $mem MiB (cached -m $CACHE_MB), proxy on 127.0.0.1:$PROXY, node$pnode under pressure"
# boot_node I: start guest I in the background; its runner's pid in GUEST_PIDS.
GUEST_PIDS=()
boot_node() {
	local i=$1 port=${PORTS[$(($1 - 1))]} try=${2:-1} dir=$RUNS/node$1
	[ "$try" = 1 ] || { rm -rf "$dir.try$try"; mv "$dir" "$dir.try$((try - 1))"; }
	"$ROOT/scripts/qemu-run.sh" --quiet --kernel "$kernel" --image "$image" \
		--mem "$mem" --cpus 1 --timeout $((duration + 1200)) --hostfwd "$port:11211" \
		--run-dir "$dir" --script "$ROOT/image/guest/fleet-node.sh" \
		--file "$RUNS/env$i/node.env" >"$RUNS/node$i.log" 2>&1 &
	GUEST_PIDS[i - 1]=$!
	PIDS+=($!)
}

for i in $(seq 1 "$nodes"); do
	port=${PORTS[$((i - 1))]}
	mkdir -p "$RUNS/env$i"
	{
		echo "NODE=node$i"
		echo "CACHE_MB=$CACHE_MB"
		echo "THREADS=1"
		echo "IDLE=5"
		echo "GEN=$GEN"
		echo "PRESSURE=$([ "$i" = "$pnode" ] && echo 1 || echo 0)"
		echo "STRESS=\"$STRESS\""
		echo "STRESS_SECONDS=$((P_LEN * 3))"
		if [ "$i" = "$pnode" ] && [ "$near" = 1 ]; then
			echo "NEAR_ORIGIN=10.0.2.2:$PROXY"
		fi
		echo "NEAR_MB=$NEAR_MB NEAR_RATE=$NEAR_RATE NEAR_KEYS=$NEAR_KEYS NEAR_IDLE=$NEAR_IDLE"
		echo "MAX_SECONDS=$((duration + 900))"
	} >"$RUNS/env$i/node.env"
	boot_node "$i"
	echo "node$i 127.0.0.1:$port" >>"$out/nodes.txt"
done

# Wait for every node's "version"; a guest that ended before answering (a
# boot failure) is booted again, twice at most.
for i in $(seq 1 "$nodes"); do
	port=${PORTS[$((i - 1))]} try=1 end=$((SECONDS + 600))
	until fleet_ping 127.0.0.1 "$port"; do
		if ! kill -0 "${GUEST_PIDS[$((i - 1))]}" 2>/dev/null; then
			[ "$try" -lt 3 ] || die "node$i did not boot ($try tries)" "$RUNS/node$i/console.log"
			say "node$i ended before answering ($(grep -m1 -ao 'Kernel panic.*' "$RUNS/node$i/console.log" || echo "see its console.log")); booting it again"
			try=$((try + 1))
			boot_node "$i" "$try"
		fi
		[ $SECONDS -lt "$end" ] || die "node$i does not answer on 127.0.0.1:$port" "$RUNS/node$i/console.log"
		sleep 1
	done
	say "node$i answers on 127.0.0.1:$port"
done

servers=()
for i in $(seq 1 "$nodes"); do servers+=("127.0.0.1:${PORTS[$((i - 1))]}:node$i"); done
fleet_conf "$out/nutcracker.yml" "127.0.0.1:$PROXY" "$TIMEOUT_MS" "$RETRY_MS" "$FAILURES" "${servers[@]}"
NUT=$(fleet_nutcracker "$out/nutcracker.yml" "$SPORT" "$RUNS") || die "nutcracker refused its configuration" "$RUNS/nutcracker-test.log"
PIDS+=("$NUT")
for _ in $(seq 50); do
	(exec 3<>"/dev/tcp/127.0.0.1/$PROXY") 2>/dev/null && break
	sleep 0.1
done
say "nutcracker on 127.0.0.1:$PROXY (stats 127.0.0.1:$SPORT)"

order() {	# order WORD NODE...: the guests' orders, through their own cache
	local i
	for i in "${@:2}"; do
		fleet_set 127.0.0.1 "${PORTS[$((i - 1))]}" fleet:ctl "$1" ||
			say "warning: node$i did not store the order '$1'"
	done
}
# shellcheck disable=SC2046 # numbers
order go $(seq 1 "$nodes")

# sample T: every node's stats and the proxy's, at time T (seconds of the
# measured run; negative during the warm-up).  Plain appends, no parsing
# here: the loop must stay cheap on a busy host.  Per node: "t T" and the
# "STAT name value" lines; the proxy: one line "T JSON".
sample() {
	local t=$1 i
	for i in $(seq 1 "$nodes"); do
		{ echo "t $t"; "$MCCLIENT" -H 127.0.0.1 -p "${PORTS[$((i - 1))]}" stats 2>/dev/null; } \
			>>"$RUNS/node$i-samples.txt" || true
	done
	# shellcheck disable=SC2016 # expanded by the inner bash
	{ printf '%s ' "$t"; timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" && tr -d "\n" <&3' "$SPORT"; echo; } \
		>>"$RUNS/proxy-samples.txt" 2>/dev/null || true
	# the host's load: the guests share its CPUs with everything else
	echo "$t $(cut -d' ' -f1 /proc/loadavg)" >>"$RUNS/host-load.txt"
}

say "warm-up: every one of $keys keys set once through the proxy, then ${duration}s at $rate ops/s (Zipf 0.99)"
"$ROOT/loadgen/loadgen" --server "127.0.0.1:$PROXY" -t 1 -c 8 --keys "$keys" --gen "$GEN" \
	--dist zipf:0.99 --rate "$rate" --warmup --verify --duration "$duration" --interval 1 \
	--json "$RUNS/loadgen.json" >"$RUNS/loadgen.lines" 2>"$RUNS/loadgen.err" &
LG=$!
PIDS+=("$LG")
t0=$SECONDS warm_t=0 pressure_sent=0 last_sample=-99 last_say=0
while kill -0 "$LG" 2>/dev/null; do
	n=$(grep -c '^{' "$RUNS/loadgen.lines" || true)
	if [ "$n" -eq 0 ]; then
		warm_t=$((SECONDS - t0))
		t=$((-1 - warm_t))   # warm-up samples: negative times
	else
		t=$n
	fi
	if [ "$pressure_sent" = 0 ] && [ "$n" -ge "$P_START" ]; then
		# every guest notes the moment; only node$pnode runs stress-ng
		order pressure "$pnode"
		for i in $(seq 1 "$nodes"); do [ "$i" = "$pnode" ] || order pressure "$i"; done
		echo "$n pressure" >>"$RUNS/events.txt"
		say "t=${n}s: stress-ng started in node$pnode"
		pressure_sent=1
	fi
	if [ "$pressure_sent" = 1 ] && [ "$n" -ge $((P_START + P_LEN)) ]; then
		# every guest notes the moment; node$pnode stops stress-ng
		for i in $(seq 1 "$nodes"); do order calm "$i"; done
		echo "$n calm" >>"$RUNS/events.txt"
		say "t=${n}s: stress-ng in node$pnode stopped"
		pressure_sent=2
	fi
	if [ $((SECONDS - last_sample)) -ge 2 ]; then
		sample "$t"
		last_sample=$SECONDS
	fi
	if [ $((SECONDS - last_say)) -ge 30 ] && [ "$n" -gt 0 ]; then
		tail -n 1 "$RUNS/loadgen.lines" | python3 -c '
import json, sys
s = json.loads(sys.stdin.read())
print("[%s] t=%.0fs %.0f ops/s, hits %d misses %d, errors %d, verify_errors %d, p99 %.1f ms" % (
    sys.argv[1], s["t"], s["ops_per_s"], s["hits"], s["misses"], s["errors"],
    s["verify_errors"], s["p99_us"] / 1000))' "$(elapsed)" || true
		last_say=$SECONDS
	fi
	sleep 1
done
lg_rc=0
wait "$LG" || lg_rc=$?
sample "$(grep -c '^{' "$RUNS/loadgen.lines" || true)"
say "loadgen through the proxy exited with status $lg_rc"
grep -h 'warmup:' "$RUNS/loadgen.err" | sed 's/^/  /' || true

echo "$(grep -c '^{' "$RUNS/loadgen.lines" || true) stop" >>"$RUNS/events.txt"
# shellcheck disable=SC2046 # numbers
order stop $(seq 1 "$nodes")
for i in $(seq 1 "$nodes"); do
	rc=0
	wait "${GUEST_PIDS[$((i - 1))]}" || rc=$?
	if [ "$rc" -ne 0 ] && [ -s "$RUNS/node$i/warnings.txt" ]; then
		# the runner fails a run whose kernel printed a warning; an OOM
		# kill under stress-ng is one, and the report counts it
		say "node$i: guest job exited with status $rc (kernel messages: $(grep -c 'Killed process' "$RUNS/node$i/out/dmesg.txt" 2>/dev/null || echo 0) OOM kills, see runs/node$i/warnings.txt)"
	else
		say "node$i: guest job exited with status $rc"
	fi
done
kill "$NUT" 2>/dev/null || true

cat >"$RUNS/fleet.env" <<ENV
NODES=$nodes
MEM_MB=$mem
CACHE_MB=$CACHE_MB
DURATION=$duration
PRESSURE_NODE=$pnode
PRESSURE_START=$P_START
PRESSURE_SECONDS=$P_LEN
RATE=$rate
KEYS=$keys
GEN=$GEN
STRESS="$STRESS"
NEAR=$near
NEAR_MB=$NEAR_MB
NEAR_RATE=$NEAR_RATE
NEAR_KEYS=$NEAR_KEYS
NEAR_IDLE=$NEAR_IDLE
TIMEOUT_MS=$TIMEOUT_MS
RETRY_MS=$RETRY_MS
FAILURES=$FAILURES
LOADGEN_STATUS=$lg_rc
WARMUP_SECONDS=$warm_t
KERNEL=$(basename "$kernel")
HOST_CPUS=$(nproc)
ENV
python3 "$ROOT/scripts/fleet/report.py" --dir "$out" || die "the fleet report failed"
say "report: ${out#"$ROOT"/}/fleet.html, fleet.md, summary.json"
[ "$lg_rc" -eq 0 ]
