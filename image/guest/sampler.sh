#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# sampler.sh - the one in-guest sampler: the kernel's memory figures and
# the daemon's counters, one CSV row per interval, on the guest's clock.
#
# usage: sampler.sh [-p PORT] [-i SECONDS] [-c CGROUP] [-f PHASEFILE]
#                   [-s STOPFILE] OUT.csv
#
# Writes the header, then a row every SECONDS (default 1) until STOPFILE
# (default /tmp/stop-sampler) exists, then one last row, and exits.  Run it
# in the background; the job creates STOPFILE and waits for it.  Every
# guest job that samples uses this file (image/guest/experiment.sh,
# fleet-node.sh); scripts/report.py and scripts/fleet/report.py read its
# columns by name:
#
#   t                  guest uptime, seconds
#   phase              first word of PHASEFILE (default: none, "-")
#   mem_available_kb, mem_free_kb, shmem_kb, volatile_kb    /proc/meminfo
#   purged_ranges, purged_pages    volatile_purged_* of /proc/vmstat
#   oom_kill                       /proc/vmstat
#   psi_some_us, psi_full_us       memory PSI totals (/proc/pressure/memory)
#   daemon_up          1 when cached on 127.0.0.1:PORT (default 11211)
#                      answered "stats"; its columns are empty otherwise
#   cmd_get ... psi_dropped_bytes  the daemon's stats of those names
#   stress_procs, stress_rss_kb    stress-ng processes and their RSS
#   swap_used_kb, pswpout, pswpin  swap
#   cg_daemon_kb       memory.current of CGROUP (empty without -c)
#   psi_some_avg10     memory PSI "some avg10", percent
#   cached_purged_ranges           the daemon's purged_ranges
#
# Only busybox applets: sh, awk, sed, grep, cat, nc, timeout, sleep.
port=11211 interval=1 cgroup="" phasefile="" stopfile=/tmp/stop-sampler
usage() {
	echo "usage: $0 [-p PORT] [-i SECONDS] [-c CGROUP] [-f PHASEFILE] [-s STOPFILE] OUT.csv" >&2
	exit 64
}
while getopts p:i:c:f:s: opt; do
	case $opt in
	p) port=$OPTARG ;;
	i) interval=$OPTARG ;;
	c) cgroup=$OPTARG ;;
	f) phasefile=$OPTARG ;;
	s) stopfile=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || usage
out=$1
stats=$(mktemp /tmp/sampler-stats.XXXXXX) || exit 1
trap 'rm -f "$stats"' EXIT

DAEMON_STATS="cmd_get get_hits get_misses origin_fetches rebuilds purged_objects purge_misses volatile_bytes volatile_ranges curr_items bytes evictions psi_events psi_dropped_bytes"
echo "t,phase,mem_available_kb,mem_free_kb,shmem_kb,volatile_kb,purged_ranges,purged_pages,oom_kill,psi_some_us,psi_full_us,daemon_up,$(echo "$DAEMON_STATS" | tr ' ' ','),stress_procs,stress_rss_kb,swap_used_kb,pswpout,pswpin,cg_daemon_kb,psi_some_avg10,cached_purged_ranges" >"$out"

sample() {
	t=$(cut -d' ' -f1 /proc/uptime)
	ph=-
	[ -z "$phasefile" ] || ph=$(cat "$phasefile" 2>/dev/null || echo -)
	printf 'stats\r\nquit\r\n' | timeout 3 nc 127.0.0.1 "$port" 2>/dev/null | tr -d '\r' >"$stats"
	{
		sed 's/^/M /' /proc/meminfo
		sed 's/^/V /' /proc/vmstat
		sed 's/^/P /' /proc/pressure/memory 2>/dev/null
		sed 's/^/S /' "$stats"
		grep -h -E '^(Name|VmRSS):' /proc/[0-9]*/status 2>/dev/null | sed 's/^/X /'
		[ -z "$cgroup" ] || echo "C $(cat "$cgroup/memory.current" 2>/dev/null)"
	} | awk -v t="$t" -v ph="$ph" -v keys="$DAEMON_STATS" '
	$1 == "M" { sub(":", "", $2); m[$2] = $3 }
	$1 == "V" { v[$2] = $3 }
	$1 == "P" { for (i = 3; i <= NF; i++) {
			if ($i ~ /^total=/) { sub("total=", "", $i); p[$2] = $i }
			if ($i ~ /^avg10=/) { sub("avg10=", "", $i); a[$2] = $i } } }
	$1 == "S" && $2 == "STAT" { s[$3] = $4; up = 1 }
	$1 == "X" && $2 == "Name:" { isst = ($3 ~ /^stress-ng/); if (isst) np++ }
	$1 == "X" && $2 == "VmRSS:" && isst { rss += $3 }
	$1 == "C" { cg = int($2 / 1024) }
	function z(x) { return x == "" ? 0 : x }
	END {
		printf "%s,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d", t, ph, z(m["MemAvailable"]), z(m["MemFree"]), z(m["Shmem"]), z(m["Volatile"]), z(v["volatile_purged_ranges"]), z(v["volatile_purged_pages"]), z(v["oom_kill"]), z(p["some"]), z(p["full"]), up + 0
		n = split(keys, k, " ")
		for (i = 1; i <= n; i++) printf ",%s", (up ? z(s[k[i]]) : "")
		printf ",%d,%d,%d,%d,%d,%s,%s,%s\n", np, rss, z(m["SwapTotal"]) - z(m["SwapFree"]), z(v["pswpout"]), z(v["pswpin"]), cg, z(a["some"]), (up ? z(s["purged_ranges"]) : "")
	}' >>"$out"
}

while [ ! -f "$stopfile" ]; do
	sample
	sleep "$interval"
done
sample
