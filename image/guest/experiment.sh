#!/bin/sh
# experiment.sh - guest job of the pressure experiment: one mode, one run.
#
# The host (scripts/demo.sh) puts into the job folder the scenario (a file
# of VAR=value lines, see scripts/scenarios/default.conf) as scenario.conf
# and mode.env (MODE=pinned|psi|volatile|oracle, RUN=N).  Everything this
# job writes goes to $OUT and comes back to the host:
#
#   samples.csv     one row a second: /proc/meminfo, /proc/vmstat,
#                   /proc/pressure/memory, the daemon's stats, stress-ng's
#                   memory and process count, the phase
#   phases.txt      "UPTIME PHASE" at each phase change
#   warmup.jsonl    loadgen interval lines of the warm-up phase
#   load.jsonl      loadgen interval lines of steady, pressure, recovery
#   load.json       loadgen's summary of steady + pressure + recovery, with
#                   its latency histogram
#   stress.txt, stress.yaml   stress-ng's output and metrics
#   stats-start.txt, stats-end.txt   the daemon's stats before and after
#   info.env        the environment: kernel, versions, sizes, oracle size
#   vmstat-*.txt, meminfo-*.txt   the kernel's counters before and after
#   cached.log, dmesg.txt
#
# Exit status: 0 when the run went through its phases (whatever the cache
# and the kernel did: OOM kills and misses are results, not failures);
# 1 when the experiment itself could not run.
OUT=${OUT:-/tmp/out}
JOB=${JOB:-$(pwd)}
mkdir -p "$OUT"
. "$JOB/scenario.conf"
. "$JOB/mode.env"
PORT=11211
SRV=127.0.0.1:$PORT

up() { cut -d' ' -f1 /proc/uptime; }
log() { echo "[$(up)] $MODE/$RUN: $*"; }
phase() {
	echo "$1" >/tmp/phase
	echo "$(up) $1" >>"$OUT/phases.txt"
	log "phase $1"
}
fail() {
	log "ERROR: $*"
	exit 1
}
stats() {
	printf 'stats\r\nquit\r\n' | timeout 3 nc 127.0.0.1 $PORT 2>/dev/null | tr -d '\r'
}

for b in cached loadgen stress-ng; do
	command -v $b >/dev/null || fail "$b is not in the image"
done

# The environment, for the report.
mem_avail_kb=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
mem_total_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
has_volatile=0
grep -q '^Volatile:' /proc/meminfo && has_volatile=1

# The oracle: a pinned cache of exactly the memory left while stress-ng
# runs, measured here: MemAvailable before the daemon starts, minus what
# stress-ng takes, minus a margin for the index, the load generator and
# the sampler.
cache_mb=$CACHE_MB
daemon_mode=$MODE
if [ "$MODE" = oracle ]; then
	cache_mb=$((mem_avail_kb / 1024 - STRESS_MB - ORACLE_MARGIN_MB))
	[ "$cache_mb" -ge 8 ] || cache_mb=8
	daemon_mode=pinned
fi
{
	echo "mode=$MODE"
	echo "run=$RUN"
	echo "scenario=$NAME"
	echo "kernel=$(uname -r)"
	echo "kernel_build=$(uname -v)"
	echo "mem_total_kb=$mem_total_kb"
	echo "mem_available_start_kb=$mem_avail_kb"
	echo "cpus=$(nproc)"
	echo "cpu_model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
	echo "has_volatile=$has_volatile"
	echo "cache_mb=$cache_mb"
	echo "daemon_mode=$daemon_mode"
	echo "cached_version=$(cached -V 2>&1 | head -n 1)"
	echo "stress_ng_version=$(stress-ng --version 2>&1 | head -n 1)"
	echo "psi_memory=$(head -n 1 /proc/pressure/memory 2>&1)"
	echo "swap_kb=$(awk '/^SwapTotal:/ {print $2}' /proc/meminfo)"
} >"$OUT/info.env"
log "kernel $(uname -r), MemTotal ${mem_total_kb} kB, MemAvailable ${mem_avail_kb} kB, volatile ranges: $has_volatile, cache ${cache_mb} MiB ($daemon_mode)"

# The daemon.
# shellcheck disable=SC2086 # PSI_ARGS is a list of options
cached -u root -p $PORT -l 127.0.0.1 -m "$cache_mb" -t "$DAEMON_THREADS" \
	--mode "$daemon_mode" --idle "$IDLE_S" --origin "gen:$ORIGIN" --verify -v \
	$([ "$MODE" = psi ] && echo "$PSI_ARGS") >"$OUT/cached.log" 2>&1 &
cached_pid=$!
echo "$cached_pid" >/tmp/cached.pid
i=0
until stats | grep -q '^STAT pid'; do
	i=$((i + 1))
	[ $i -lt 50 ] || fail "cached did not start: $(cat "$OUT/cached.log")"
	sleep 0.2
done

# The sampler: one CSV row a second until /tmp/stop-sampler appears.
echo warmup >/tmp/phase
cat /proc/vmstat >"$OUT/vmstat-start.txt"
cat /proc/meminfo >"$OUT/meminfo-start.txt"
echo "t,phase,mem_available_kb,mem_free_kb,shmem_kb,volatile_kb,purged_ranges,purged_pages,oom_kill,psi_some_us,psi_full_us,daemon_up,cmd_get,get_hits,get_misses,origin_fetches,rebuilds,purged_objects,purge_misses,volatile_bytes,volatile_ranges,curr_items,bytes,evictions,psi_events,psi_dropped_bytes,stress_procs,stress_rss_kb" >"$OUT/samples.csv"
sample() {
	t=$(up)
	ph=$(cat /tmp/phase)
	stats >/tmp/stats.txt
	{
		sed 's/^/M /' /proc/meminfo
		sed 's/^/V /' /proc/vmstat
		sed 's/^/P /' /proc/pressure/memory 2>/dev/null
		sed 's/^/S /' /tmp/stats.txt
		grep -h -E '^(Name|VmRSS):' /proc/[0-9]*/status 2>/dev/null | sed 's/^/X /'
	} | awk -v t="$t" -v ph="$ph" '
	$1 == "M" { sub(":", "", $2); m[$2] = $3 }
	$1 == "V" { v[$2] = $3 }
	$1 == "P" { for (i = 3; i <= NF; i++) if ($i ~ /^total=/) { sub("total=", "", $i); p[$2] = $i } }
	$1 == "S" && $2 == "STAT" { s[$3] = $4; up = 1 }
	$1 == "X" && $2 == "Name:" { isst = ($3 ~ /^stress-ng/); if (isst) np++ }
	$1 == "X" && $2 == "VmRSS:" && isst { rss += $3 }
	function z(x) { return x == "" ? 0 : x }
	END {
		printf "%s,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d", t, ph, z(m["MemAvailable"]), z(m["MemFree"]), z(m["Shmem"]), z(m["Volatile"]), z(v["volatile_purged_ranges"]), z(v["volatile_purged_pages"]), z(v["oom_kill"]), z(p["some"]), z(p["full"]), up + 0
		n = split("cmd_get get_hits get_misses origin_fetches rebuilds purged_objects purge_misses volatile_bytes volatile_ranges curr_items bytes evictions psi_events psi_dropped_bytes", k, " ")
		for (i = 1; i <= n; i++) printf ",%s", (up ? z(s[k[i]]) : "")
		printf ",%d,%d\n", np, rss
	}' >>"$OUT/samples.csv"
}
(
	while [ ! -f /tmp/stop-sampler ]; do
		sample
		sleep 1
	done
	sample
) &
sampler_pid=$!

LG="loadgen --server $SRV --keys $KEYS --dist $DIST --gen $ORIGIN --verify --rate $RATE --threads $LOAD_THREADS --conns $LOAD_CONNS --interval 1 --quiet"

# Warm-up: set every key once (the cache fills; the Zipf tail is idle data),
# then the load for WARMUP_S, so that idle data has time to go volatile.
phase warmup
t0=$(up)
# shellcheck disable=SC2086
$LG --warmup --duration "$WARMUP_S" --json "$OUT/warmup.json" >"$OUT/warmup.jsonl" 2>"$OUT/warmup.err"
stats >"$OUT/stats-start.txt"
log "warm-up done in $(awk -v a="$t0" -v b="$(up)" 'BEGIN {printf "%.0f", b - a}') s: $(awk '$2 == "curr_items" || $2 == "bytes" {printf "%s %s ", $2, $3}' "$OUT/stats-start.txt")"

# The measured load: steady, pressure, recovery, in one loadgen run, stopped
# with SIGINT (it then writes its summary) RECOVERY_S after stress-ng ended,
# however long stress-ng took to wind down.
phase steady
# shellcheck disable=SC2086
$LG --duration 3600 --json "$OUT/load.json" >"$OUT/load.jsonl" 2>"$OUT/load.err" &
lg_pid=$!
echo "$(up)" >"$OUT/load-start.txt"
sleep "$STEADY_S"

phase pressure
# --vm-bytes is the total over the workers (stress-ng divides it).  nice 19:
# the pressure is on memory; the workers should not also starve the daemon
# and the load generator of CPU (the guest may have a single CPU).
# (busybox has renice, not nice: the shell renices itself, then execs.)
sh -c 'renice -n 19 -p $$ >/dev/null; exec "$@"' stress-ng \
	stress-ng --vm "$STRESS_WORKERS" --vm-bytes "${STRESS_MB}M" \
	--vm-keep --no-madvise --vm-method "$STRESS_METHOD" --timeout "${PRESSURE_S}s" \
	--metrics-brief --yaml "$OUT/stress.yaml" >"$OUT/stress.txt" 2>&1 &
stress_pid=$!
sleep "$PRESSURE_S"
# stress-ng stops at its timeout; under pressure it may take a little longer.
i=0
while kill -0 $stress_pid 2>/dev/null && [ $i -lt 30 ]; do
	sleep 1
	i=$((i + 1))
done
if kill -0 $stress_pid 2>/dev/null; then
	log "stress-ng still running ${i}s after its timeout; stopping it"
	kill $stress_pid 2>/dev/null
fi
wait $stress_pid
echo "$?" >"$OUT/stress-status"

phase recovery
sleep "$RECOVERY_S"
kill -INT $lg_pid
wait $lg_pid
echo "$?" >"$OUT/load-status"
phase end
touch /tmp/stop-sampler
wait $sampler_pid

stats >"$OUT/stats-end.txt"
cat /proc/vmstat >"$OUT/vmstat-end.txt"
cat /proc/meminfo >"$OUT/meminfo-end.txt"
if kill -0 "$cached_pid" 2>/dev/null; then
	echo 1 >"$OUT/daemon-alive"
	kill "$cached_pid"
	wait "$cached_pid" 2>/dev/null
else
	echo 0 >"$OUT/daemon-alive"
	log "the daemon is gone"
fi
dmesg | grep -E 'Out of memory|Killed process|oom-kill' >"$OUT/oom.txt"
log "done: oom_kill $(awk '$1 == "oom_kill" {print $2}' "$OUT/vmstat-end.txt"), purged ranges $(awk '$1 == "volatile_purged_ranges" {print $2}' "$OUT/vmstat-end.txt"), loadgen status $(cat "$OUT/load-status")"
exit 0
