#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# experiment.sh - guest job of the pressure experiment: one mode, one run.
#
# The host (scripts/demo.sh) puts into the job folder the scenario (a file
# of VAR=value lines, see scripts/scenarios/default.conf) as scenario.conf,
# the table of modes (scripts/scenarios/modes.tab) and mode.env (MODE=one
# of the table's modes, RUN=N).  Everything this job writes goes to $OUT
# and comes back to the host:
#
#   samples.csv     one row a second: /proc/meminfo, /proc/vmstat,
#                   /proc/pressure/memory, the daemon's stats, stress-ng's
#                   memory and process count, swap, the cgroup, the phase
#   phases.txt      "UPTIME PHASE" at each phase change
#   steps.txt       "UPTIME MB" at each step of the pressure (0: none)
#   warmup.jsonl    loadgen interval lines of the warm-up phase
#   load.jsonl      loadgen interval lines of steady, pressure, recovery
#   load.json       loadgen's summary of steady + pressure + recovery, with
#                   its latency histogram
#   stress-N.txt, stress-N.yaml   stress-ng's output and metrics per step
#   stats-start.txt, stats-end.txt   the daemon's stats before and after
#   info.env        the environment: kernel, versions, sizes, seeds, the
#                   loadgen options used
#   vmstat-*.txt, meminfo-*.txt   the kernel's counters before and after
#   cgroup-*.txt    memory.events and memory.stat of the cgroups (container)
#   unavailable     (only) why this mode cannot run on this daemon
#   skipped         (only) why this scenario cannot run on this kernel
#   cached.log, dmesg.txt
#
# Exit status: 0 when the run went through its phases (whatever the cache
# and the kernel did: OOM kills and misses are results, not failures), and
# when it wrote 'unavailable' or 'skipped'; 1 when the experiment itself
# could not run.
OUT=${OUT:-/tmp/out}
JOB=${JOB:-$(pwd)}
mkdir -p "$OUT"
. "$JOB/scenario.conf"
. "$JOB/mode.env"
PORT=11211
SRV=127.0.0.1:$PORT
CG=/sys/fs/cgroup

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
# not_run FILE WHY: this mode or scenario cannot run here: say so and stop.
not_run() {
	echo "$2" >"$OUT/$1"
	log "$1: $2"
	exit 0
}
stats() {
	printf 'stats\r\nquit\r\n' | timeout 3 nc 127.0.0.1 $PORT 2>/dev/null | tr -d '\r'
}

for b in cached loadgen stress-ng; do
	command -v $b >/dev/null || fail "$b is not in the image"
done

# The mode, from the table: daemon mode, size rule, stressor, extra args.
[ -f "$JOB/modes.tab" ] || fail "no modes.tab in the job"
# shellcheck disable=SC2046 # four words
set -- $(awk -v m="$MODE" '$1 == m && !/^#/ {print $2, $3, $4, $5; exit}' "$JOB/modes.tab")
[ $# -eq 4 ] || fail "mode '$MODE' is not in modes.tab"
daemon_mode=$1 size_rule=$2 stressor=$3 args_var=$4
daemon_args=""
[ "$args_var" = - ] || eval "daemon_args=\${$args_var:-}"
# A daemon without this mode (madvfree before the daemon has it): the mode
# is unavailable, not failed.
cached --help 2>&1 | grep -q -- "$daemon_mode" ||
	not_run unavailable "cached has no --mode $daemon_mode ($(cached -V 2>&1 | head -n 1))"

# The pressure as steps "MB:SECONDS ..."; MB 0 is a pause.  The default
# scenario has one step: STRESS_MB for PRESSURE_S.
STEPS=${PRESSURE_STEPS:-$STRESS_MB:$PRESSURE_S}
max_stress_mb=0
for st in $STEPS; do
	[ "${st%%:*}" -le "$max_stress_mb" ] || max_stress_mb=${st%%:*}
done

# Distinct seeds for the warm-up and the measured load (the measured load
# must not replay the warm-up's requests); the same for every mode of a run,
# so that the modes of one run see the same requests.
SEED_BASE=${SEED_BASE:-1000}
warmup_seed=$((SEED_BASE + 2 * RUN))
measure_seed=$((SEED_BASE + 2 * RUN + 1))

# loadgen's options when this loadgen has them, else the older behaviour,
# said in info.env: scrambled Zipf (--scramble: ranks spread over the key
# space, so hot keys are not neighbours in the cache's segments), a random
# warm-up order (--warmup-order random: the fill does not insert the
# hottest keys first), and the arrivals (LOAD_ARRIVALS, constant unless a
# scenario asks for poisson).  A scenario may set LOAD_SCRAMBLE_ARGS and
# LOAD_ORDER_ARGS itself; empty turns them off.
lg_help=$(loadgen --help 2>&1)
has_opt() { echo "$lg_help" | grep -q -- "$1"; }
if [ -z "${LOAD_SCRAMBLE_ARGS+set}" ]; then
	LOAD_SCRAMBLE_ARGS=""
	has_opt --scramble && LOAD_SCRAMBLE_ARGS=--scramble
fi
if [ -z "${LOAD_ORDER_ARGS+set}" ]; then
	LOAD_ORDER_ARGS=""
	has_opt --warmup-order && LOAD_ORDER_ARGS="--warmup-order random"
fi
LOAD_ARRIVALS_ARGS=""
if [ -n "${LOAD_ARRIVALS:-}" ]; then
	has_opt --arrivals || fail "the scenario wants --arrivals $LOAD_ARRIVALS; this loadgen has no --arrivals"
	LOAD_ARRIVALS_ARGS="--arrivals $LOAD_ARRIVALS"
fi

# The environment, for the report.
mem_avail_kb=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
mem_total_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
has_volatile=0
grep -q '^Volatile:' /proc/meminfo && has_volatile=1

# Swap: the runner's swap disk, when the scenario asks for one.
swap_kb=0
if [ "${SWAP_MB:-0}" -gt 0 ]; then
	if [ -z "${SWAPDEV:-}" ] || [ ! -b "$SWAPDEV" ]; then
		fail "the scenario wants swap but the guest has no swap disk"
	fi
	mkswap "$SWAPDEV" >/dev/null 2>&1 || fail "mkswap $SWAPDEV failed"
	swapon "$SWAPDEV" || fail "swapon $SWAPDEV failed"
	swap_kb=$(awk '/^SwapTotal:/ {print $2}' /proc/meminfo)
fi

# Container: the daemon and the stressor each in a cgroup v2 memory cgroup,
# memory.max on the daemon's.  A kernel without the memory controller
# cannot run the scenario: it is skipped, and the report says so.
cg_daemon="" cg_stress="" cg_max_mb=""
if [ "${CONTAINER:-0}" = 1 ]; then
	# the appliance's init mounts cgroup2 there already; mount it only if not
	mkdir -p $CG 2>/dev/null
	[ -f $CG/cgroup.controllers ] || mount -t cgroup2 none $CG 2>/dev/null ||
		not_run skipped "the guest kernel has no cgroup v2 (mount -t cgroup2 failed)"
	grep -qw memory $CG/cgroup.controllers ||
		not_run skipped "the guest kernel has no cgroup v2 memory controller (CONFIG_MEMCG)"
	echo +memory >$CG/cgroup.subtree_control || fail "cannot enable the memory controller"
	cg_daemon=$CG/daemon cg_stress=$CG/stress
	mkdir -p $cg_daemon $cg_stress
	cg_max_mb=$DAEMON_MEM_MAX_MB
	echo $((cg_max_mb * 1048576)) >$cg_daemon/memory.max || fail "cannot set memory.max"
fi

# rightsized: a pinned cache of exactly the memory left while the largest
# step of the stressor runs, measured here: MemAvailable before the daemon
# starts (or the daemon cgroup's memory.max), minus that step, minus a
# margin for the index, the load generator and the sampler.
cache_mb=$CACHE_MB
margin=${RIGHTSIZED_MARGIN_MB:-${ORACLE_MARGIN_MB:-40}}
if [ "$size_rule" = rightsized ]; then
	if [ -n "$cg_max_mb" ]; then
		cache_mb=$((cg_max_mb - margin))
	else
		cache_mb=$((mem_avail_kb / 1024 - max_stress_mb - margin))
	fi
	[ "$cache_mb" -ge 8 ] || cache_mb=8
	[ "$cache_mb" -le "$CACHE_MB" ] || cache_mb=$CACHE_MB
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
	echo "daemon_args=$daemon_args"
	echo "stressor=$stressor"
	echo "pressure_steps=$STEPS"
	echo "warmup_seed=$warmup_seed"
	echo "measure_seed=$measure_seed"
	echo "load_scramble_args=$LOAD_SCRAMBLE_ARGS"
	echo "load_order_args=$LOAD_ORDER_ARGS"
	echo "load_arrivals=${LOAD_ARRIVALS:-constant}"
	echo "cgroup_daemon_max_mb=$cg_max_mb"
	echo "cached_version=$(cached -V 2>&1 | head -n 1)"
	echo "loadgen_version=$(echo "$lg_help" | head -n 1)"
	echo "stress_ng_version=$(stress-ng --version 2>&1 | head -n 1)"
	echo "psi_memory=$(head -n 1 /proc/pressure/memory 2>&1)"
	echo "swap_kb=$swap_kb"
} >"$OUT/info.env"
log "kernel $(uname -r), MemTotal ${mem_total_kb} kB, MemAvailable ${mem_avail_kb} kB, volatile ranges: $has_volatile, swap ${swap_kb} kB, cache ${cache_mb} MiB ($daemon_mode)"

# The daemon, in its cgroup when there is one.
# shellcheck disable=SC2086 # daemon_args is a list of options
sh -c '[ -z "$1" ] || echo $$ >"$1/cgroup.procs"; shift; exec "$@"' cached "$cg_daemon" \
	cached -u root -p $PORT -l 127.0.0.1 -m "$cache_mb" -t "$DAEMON_THREADS" \
	--mode "$daemon_mode" --idle "$IDLE_S" --origin "gen:$ORIGIN" --verify -v \
	$daemon_args >"$OUT/cached.log" 2>&1 &
cached_pid=$!
echo "$cached_pid" >/tmp/cached.pid
i=0
until stats | grep -q '^STAT pid'; do
	i=$((i + 1))
	[ $i -lt 50 ] || fail "cached did not start: $(cat "$OUT/cached.log")"
	sleep 0.2
done

# The sampler (sampler.sh): one CSV row a second until /tmp/stop-sampler
# appears.
echo warmup >/tmp/phase
cat /proc/vmstat >"$OUT/vmstat-start.txt"
cat /proc/meminfo >"$OUT/meminfo-start.txt"
sampler_cg=""
[ -z "$cg_daemon" ] || sampler_cg="-c $cg_daemon"
# shellcheck disable=SC2086 # $sampler_cg is empty or "-c DIR"
sh /usr/share/appliance/sampler.sh -p $PORT -i 1 -f /tmp/phase $sampler_cg "$OUT/samples.csv" &
sampler_pid=$!

# Meta gets (loadgen --meta) when the daemon answers them: loadgen then
# counts the misses that were purges and the hits that were rebuilt after
# one, from the daemon's P flag.  Off (plain gets) on a daemon without mg.
LOAD_META_ARGS=""
if has_opt --meta && printf 'mg key:0 v\r\nquit\r\n' | timeout 3 nc 127.0.0.1 $PORT 2>/dev/null |
	head -n 1 | grep -q -E '^(VA|EN|HD)'; then
	LOAD_META_ARGS=--meta
fi
echo "load_meta_args=$LOAD_META_ARGS" >>"$OUT/info.env"
LG="loadgen --server $SRV --keys $KEYS --dist $DIST $LOAD_SCRAMBLE_ARGS $LOAD_META_ARGS $LOAD_ARRIVALS_ARGS --gen $ORIGIN --verify --rate $RATE --threads $LOAD_THREADS --conns $LOAD_CONNS --interval 1 --quiet"

# Warm-up: set every key once (the cache fills; the Zipf tail is idle data),
# then the load for WARMUP_S, so that idle data has time to go volatile.
# Its own seed: the measured load does not replay it.
# The daemon may die on the way (a pinned cache larger than its cgroup's
# memory.max is killed by the cgroup's OOM killer): loadgen would retry its
# connections for ever, so the warm-up is watched and stopped then.  The
# run goes on: the measured gets of a dead daemon are its misses.
phase warmup
t0=$(up)
# shellcheck disable=SC2086
$LG --seed "$warmup_seed" --warmup $LOAD_ORDER_ARGS --duration "$WARMUP_S" --json "$OUT/warmup.json" \
	>"$OUT/warmup.jsonl" 2>"$OUT/warmup.err" &
wl_pid=$!
daemon_died=""
while kill -0 $wl_pid 2>/dev/null; do
	if ! kill -0 "$cached_pid" 2>/dev/null; then
		daemon_died=warmup
		log "the daemon died during the warm-up; stopping the warm-up's loadgen"
		kill -INT $wl_pid 2>/dev/null
		break
	fi
	sleep 0.5
done
wl_status=0
wait $wl_pid || wl_status=$?
# Status 3 is requests that failed (error replies, resets): the warm-up
# goes on, and its summary counts them.
[ "$wl_status" = 0 ] || [ "$wl_status" = 3 ] || [ -n "$daemon_died" ] ||
	fail "the warm-up's loadgen failed (status $wl_status): $(tail -n 3 "$OUT/warmup.err")"
echo "daemon_died=$daemon_died" >>"$OUT/info.env"
stats >"$OUT/stats-start.txt"
log "warm-up done in $(awk -v a="$t0" -v b="$(up)" 'BEGIN {printf "%.0f", b - a}') s: $(awk '$2 == "curr_items" || $2 == "bytes" {printf "%s %s ", $2, $3}' "$OUT/stats-start.txt")"

# The measured load: steady, the pressure's steps, recovery, in one loadgen
# run, stopped with SIGINT (it then writes its summary) RECOVERY_S after the
# last stressor ended, however long it took to wind down.
# Without a daemon, loadgen must keep trying (--connect-timeout 0) until
# it is stopped, so that it still writes its summary and the due gets.
LG_CONNECT_ARGS=""
[ -z "$daemon_died" ] || ! has_opt --connect-timeout || LG_CONNECT_ARGS="--connect-timeout 0"
phase steady
# shellcheck disable=SC2086
$LG --seed "$measure_seed" $LG_CONNECT_ARGS --duration 36000 --json "$OUT/load.json" >"$OUT/load.jsonl" 2>"$OUT/load.err" &
lg_pid=$!
echo "$(up)" >"$OUT/load-start.txt"
sleep "$STEADY_S"

# stress_step N MB SECONDS: one step of the pressure.  --vm-bytes is the
# total over the workers (stress-ng divides it).  nice 19: the pressure is
# on memory; the workers should not also starve the daemon and the load
# generator of CPU.  (busybox has renice, not nice: the shell renices
# itself, joins the stressor's cgroup if there is one, then execs.)  In a
# mode without a stressor the step passes with nothing running.
stress_step() {
	echo "$(up) $2" >>"$OUT/steps.txt"
	if [ "$stressor" != yes ] || [ "$2" -eq 0 ]; then
		sleep "$3"
		return
	fi
	sh -c '[ -z "$1" ] || echo $$ >"$1/cgroup.procs"; shift; renice -n 19 -p $$ >/dev/null; exec "$@"' \
		stress-ng "$cg_stress" stress-ng --vm "$STRESS_WORKERS" --vm-bytes "${2}M" \
		--vm-keep --no-madvise --vm-method "$STRESS_METHOD" --timeout "${3}s" \
		--metrics-brief --yaml "$OUT/stress-$1.yaml" >"$OUT/stress-$1.txt" 2>&1 &
	stress_pid=$!
	sleep "$3"
	# stress-ng stops at its timeout; under pressure it may take longer.
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
	echo "$1 $?" >>"$OUT/stress-status"
}
n=0
for st in $STEPS; do
	n=$((n + 1))
	mb=${st%%:*} secs=${st#*:}
	if [ "$mb" -gt 0 ]; then phase pressure; else phase relief; fi
	log "step $n: stressor ${mb} MiB for ${secs} s$([ "$stressor" = yes ] || echo ' (this mode runs no stressor)')"
	stress_step "$n" "$mb" "$secs"
done
echo "$(up) 0" >>"$OUT/steps.txt"

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
for g in $cg_daemon $cg_stress; do
	cat "$g/memory.events" >"$OUT/cgroup-$(basename "$g")-events.txt" 2>/dev/null
	cat "$g/memory.stat" >"$OUT/cgroup-$(basename "$g")-stat.txt" 2>/dev/null
done
if kill -0 "$cached_pid" 2>/dev/null; then
	echo 1 >"$OUT/daemon-alive"
	kill "$cached_pid"
	wait "$cached_pid" 2>/dev/null
else
	echo 0 >"$OUT/daemon-alive"
	log "the daemon is gone"
fi
dmesg | grep -E 'Out of memory|Killed process|oom-kill' >"$OUT/oom.txt"
log "done: oom_kill $(awk '$1 == "oom_kill" {print $2}' "$OUT/vmstat-end.txt"), purged ranges $(awk '$1 == "volatile_purged_ranges" {print $2}' "$OUT/vmstat-end.txt"), pswpout $(awk '$1 == "pswpout" {print $2}' "$OUT/vmstat-end.txt"), loadgen status $(cat "$OUT/load-status")"
exit 0
