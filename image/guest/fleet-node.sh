#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# fleet-node.sh - the guest job of one fleet node (scripts/fleet.sh).
#
# Runs cached on 0.0.0.0:11211 (the host reaches it through its forwarded
# port), then waits for the host's orders in the key "fleet:ctl" of that
# same cache: "go" starts the near cache, "pressure" starts stress-ng
# beside the daemon (only on the node whose parameters allow it), "calm"
# stops stress-ng, "stop" ends the job.  With NEAR_ORIGIN set
# it also runs a near cache on 127.0.0.1:11212 whose origin is the fleet's
# proxy (cached --origin memcache:NEAR_ORIGIN) and drives it with loadgen
# over the fleet's own keys: what the near cache lacks or lost comes from
# the fleet, and its sets go through to the fleet.
#
# Parameters: node.env in the job folder (shell assignments):
#   NODE           the node's name (node1 ...)
#   CACHE_MB       cached -m;  THREADS  cached -t;  IDLE  cached --idle
#   GEN            the gen origin's options (the same as loadgen's --gen)
#   PRESSURE       1: this node runs stress-ng when told "pressure"
#   STRESS         stress-ng's arguments;  STRESS_SECONDS  its --timeout,
#                  a bound: the host's "calm" normally ends it
#   NEAR_ORIGIN    HOST:PORT of the proxy as seen from the guest, or empty
#   NEAR_MB, NEAR_RATE, NEAR_KEYS, NEAR_IDLE   the near cache's size, load
#                  and --idle
#   MAX_SECONDS    the job ends by itself after this long
#
# Results in $OUT: samples.csv (sampler.sh, one row every 2 s: the
# kernel's memory figures, PSI and cached's counters), events.txt, cached.log,
# stress.log, stats-end.txt, meminfo-end.txt, near-stats-end.txt,
# near-loadgen.json.
cd "$(dirname "$0")" || exit 1
NODE=node CACHE_MB=128 THREADS=1 IDLE=5 GEN=size=1000 PRESSURE=0
STRESS="--vm 2 --vm-bytes 170M --vm-keep --no-madvise --vm-method write64" STRESS_SECONDS=40
NEAR_ORIGIN="" NEAR_MB=32 NEAR_RATE=200 NEAR_KEYS=20000 NEAR_IDLE=5 MAX_SECONDS=1200
# shellcheck disable=SC1091
[ -f node.env ] && . ./node.env
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"

uptime_s() { cut -d' ' -f1 /proc/uptime; }
event() { echo "$(uptime_s) $*" | tee -a "$OUT/events.txt"; }
meminfo() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }

# mc_get KEY [PORT]: the value of KEY from the local cached, or nothing.
mc_get() {
	printf 'get %s\r\nquit\r\n' "$1" | timeout 3 nc 127.0.0.1 "${2:-11211}" 2>/dev/null |
		tr -d '\r' | awk 'NR == 2 && prev ~ /^VALUE / { print; exit } { prev = $0 }'
}

event "$NODE: $(uname -r), $(meminfo MemTotal) kB RAM, $(nproc) CPUs"
if grep -q '^Volatile:' /proc/meminfo; then
	event "Volatile: in /proc/meminfo"
else
	event "no Volatile: line in /proc/meminfo (kernel without the series)"
fi

cached -p 11211 -l 0.0.0.0 -m "$CACHE_MB" -t "$THREADS" -u root --mode volatile \
	--idle "$IDLE" --origin "gen:$GEN" --verify >"$OUT/cached.log" 2>&1 &
CACHED_PID=$!
sleep 1
kill -0 "$CACHED_PID" 2>/dev/null || { event "cached did not start"; cat "$OUT/cached.log"; exit 1; }
mode=$(printf 'stats settings\r\nquit\r\n' | timeout 3 nc 127.0.0.1 11211 | tr -d '\r' |
	awk '$2 == "mode_effective" { print $3 }')
event "cached listening on 0.0.0.0:11211 (-m $CACHE_MB, --idle $IDLE, gen:$GEN), mode ${mode:-unknown}"

NEAR_PID="" NEAR_LG_PID=""
start_near() {
	cached -p 11212 -l 127.0.0.1 -m "$NEAR_MB" -t 1 -u root --mode volatile --idle "$NEAR_IDLE" \
		--origin "memcache:$NEAR_ORIGIN" --verify >"$OUT/near-cached.log" 2>&1 &
	NEAR_PID=$!
	sleep 1
	loadgen -s 127.0.0.1:11212 --keys "$NEAR_KEYS" --gen "$GEN" \
		--dist zipf:0.99 --seed 2 --rate "$NEAR_RATE" -c 2 --verify --duration "$MAX_SECONDS" \
		--interval 5 --json "$OUT/near-loadgen.json" >"$OUT/near-loadgen.lines" \
		2>"$OUT/near-loadgen.err" &
	NEAR_LG_PID=$!
	event "near cache on 127.0.0.1:11212 (-m $NEAR_MB, --idle $NEAR_IDLE, origin memcache:$NEAR_ORIGIN), loadgen at $NEAR_RATE ops/s over $NEAR_KEYS keys"
}

STRESS_PID="" stressing=0 state=wait
start=$(date +%s)
rm -f /tmp/stop-sampler
sh /usr/share/appliance/sampler.sh -i 2 "$OUT/samples.csv" &
SAMPLER_PID=$!
while :; do
	ctl=$(mc_get fleet:ctl)
	case $ctl in
	go | pressure | calm | stop) ;;
	*) ctl=$state ;;
	esac
	if [ "$ctl" != "$state" ]; then
		event "order: $ctl"
		case $ctl in
		go)
			[ -n "$NEAR_ORIGIN" ] && [ -z "$NEAR_PID" ] && start_near
			;;
		pressure)
			[ -n "$NEAR_ORIGIN" ] && [ -z "$NEAR_PID" ] && start_near
			if [ "$PRESSURE" = 1 ] && [ -z "$STRESS_PID" ]; then
				# nice 19 (busybox has renice, not nice): the daemon keeps
				# its CPU share, the pressure is on memory.
				# shellcheck disable=SC2016,SC2086 # STRESS is a list of arguments
				sh -c 'renice -n 19 -p $$ >/dev/null; exec "$@"' stress-ng \
					stress-ng $STRESS --timeout "${STRESS_SECONDS}s" --metrics-brief \
					>"$OUT/stress.log" 2>&1 &
				STRESS_PID=$!
				stressing=1
				event "stress-ng $STRESS --timeout ${STRESS_SECONDS}s started"
			fi
			;;
		calm)
			# the host's clock ends the pressure: a TCG guest's clock
			# can lag behind it on a busy host
			# (stress-ng ends its workers on SIGTERM)
			[ "$stressing" = 1 ] && kill "$STRESS_PID" 2>/dev/null
			;;
		esac
		state=$ctl
	fi
	if [ -n "$STRESS_PID" ] && [ "$stressing" = 1 ] && ! kill -0 "$STRESS_PID" 2>/dev/null; then
		wait "$STRESS_PID"
		event "stress-ng ended (status $?)"
		stressing=0
	fi
	[ "$state" = stop ] && break
	[ $(($(date +%s) - start)) -lt "$MAX_SECONDS" ] || { event "MAX_SECONDS reached"; break; }
	kill -0 "$CACHED_PID" 2>/dev/null || { event "cached exited"; break; }
	sleep 2
done
touch /tmp/stop-sampler
wait "$SAMPLER_PID"

[ -n "$STRESS_PID" ] && kill "$STRESS_PID" 2>/dev/null
if [ -n "$NEAR_LG_PID" ]; then
	kill -INT "$NEAR_LG_PID" 2>/dev/null
	wait "$NEAR_LG_PID"
	event "near loadgen exited with status $?"
	printf 'stats\r\nquit\r\n' | timeout 3 nc 127.0.0.1 11212 | tr -d '\r' >"$OUT/near-stats-end.txt"
fi
printf 'stats\r\nquit\r\n' | timeout 3 nc 127.0.0.1 11211 | tr -d '\r' >"$OUT/stats-end.txt"
cp /proc/meminfo "$OUT/meminfo-end.txt"
cp /proc/vmstat "$OUT/vmstat-end.txt" 2>/dev/null
[ -n "$NEAR_PID" ] && kill "$NEAR_PID"
kill "$CACHED_PID"
wait "$CACHED_PID"
event "cached exited with status $?"
if dmesg | grep -qi 'out of memory'; then
	event "the OOM killer ran"
	dmesg | grep -i -A2 'out of memory' >"$OUT/oom.txt"
fi
exit 0
