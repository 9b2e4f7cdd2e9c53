#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# cached-memcg.sh - guest test of cached inside a memory cgroup.
#
# Runs as root in the QEMU guest (busybox applets, /usr/bin/cached,
# /usr/bin/mcclient; ~512 MiB RAM, no swap, cgroup v2 at /sys/fs/cgroup):
# cached runs in cgroup "cache" (memory.max $LIMIT MiB) and fills its cache
# from the gen origin; once it idles, its data is volatile and counted in
# the cgroup's memory.stat.  First a neighbour: cgroup "other" holds a tmpfs
# file and is asked to reclaim through memory.reclaim, which must purge
# none of the cache's ranges.  Then a hog in the cache's own cgroup writes
# $HOG MiB of tmpfs (which reclaim cannot free without swap): reclaim in
# the cgroup purges the daemon's volatile ranges instead of killing, so the
# hog completes, memory.events counts no OOM kill, the daemon lives and
# every value reads back right, rebuilt from the origin where purged.
# Prints TAP; exits 0 only if every test is ok.
#
# Environment: CACHED, MCCLIENT, PORT, KEYS, LIMIT, HOG.

CACHED=${CACHED:-/usr/bin/cached}
MCCLIENT=${MCCLIENT:-/usr/bin/mcclient}
PORT=${PORT:-11321}
KEYS=${KEYS:-8000}
IDLE=${IDLE:-3}
GEN=${GEN:-size=1000-8000,seed=31}
LIMIT=${LIMIT:-96}
HOG=${HOG:-72}
LOG=${LOG:-/tmp/cached-memcg.log}
CG=/sys/fs/cgroup
A=$CG/cache
B=$CG/other

# ok, not_ok, skip, check, check_totals, mc, mstat, alive, wait_up, verify_all
# shellcheck source-path=SCRIPTDIR source=cached-lib.sh
. "${APPLIANCE:-/usr/share/appliance}/cached-lib.sh"

cgval() { # cgval CGROUP FILE KEY: the value of KEY in CGROUP/FILE, 0 if absent
	v=$(awk -v k="$3" '$1 == k { print $2 }' "$1/$2" 2>/dev/null)
	echo "${v:-0}"
}
# in_cgroup CGROUP CMD...: run CMD as a process of CGROUP
in_cgroup() {
	c=$1
	shift
	sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$c" "$@"
}
show() { # the cgroup's figures, as comments
	echo "# $1: memory.current=$(cat "$2/memory.current") volatile=$(cgval "$2" memory.stat volatile) shmem=$(cgval "$2" memory.stat shmem) oom_kill=$(cgval "$2" memory.events oom_kill) purged_ranges=$(mstat purged_ranges)"
}

echo "1..11"

if ! grep -qw memory "$CG/cgroup.controllers" 2>/dev/null; then
	echo "Bail out! no memory controller in $CG"
	exit 1
fi
echo +memory >"$CG/cgroup.subtree_control"
mkdir -p "$A" "$B"
echo "${LIMIT}M" >"$A/memory.max"
echo 0 >"$A/memory.swap.max" 2>/dev/null
echo 0 >"$B/memory.swap.max" 2>/dev/null

in_cgroup "$A" "$CACHED" -u root -l 127.0.0.1 -p "$PORT" -m 64 -t 2 \
	--idle "$IDLE" --origin "gen:$GEN" --verify -v >"$LOG" 2>&1 &
PID=$!
wait_up
check "daemon started in a cgroup with memory.max ${LIMIT}M" alive
out=$(mc fill "$KEYS" 2>>"$LOG")
echo "# fill: $out"
check "fill $KEYS keys from the gen formula" [ "$out" = "keys=$KEYS stored=$KEYS" ]
sleep $((IDLE + 3))
show "idle" "$A"
vol0=$(cgval "$A" memory.stat volatile)
check "memory.stat of the daemon's cgroup counts its volatile data" [ "$vol0" -gt $((16 << 20)) ]

# A neighbour reclaims: none of the cache's ranges goes.
pr0=$(mstat purged_ranges)
in_cgroup "$B" sh -c 'head -c 16777216 /dev/zero >/tmp/other.fill'
echo 48M >"$B/memory.reclaim" 2>/dev/null
echo 48M >"$B/memory.reclaim" 2>/dev/null
show "after the neighbour's memory.reclaim" "$A"
check "reclaim in a sibling cgroup leaves the cache's volatile data" \
	[ "$(cgval "$A" memory.stat volatile)" -eq "$vol0" ]
check "and every value reads back, none purged" verify_all "after the neighbour"
check "the daemon saw no purge" [ "$(mstat purged_ranges)" -eq "$pr0" ]
rm -f /tmp/other.fill
sleep $((IDLE + 2))   # idle again after the reads

# A hog in the daemon's own cgroup.
in_cgroup "$A" sh -c "head -c $((HOG << 20)) /dev/zero >/tmp/hog" 2>>"$LOG"
hog=$?
show "after the ${HOG} MiB hog" "$A"
check "the ${HOG} MiB hog in the cgroup completes" [ "$hog" -eq 0 ]
check "memory.events: no OOM kill in the cgroup" [ "$(cgval "$A" memory.events oom_kill)" -eq 0 ]
check "its volatile data was purged" [ "$(cgval "$A" memory.stat volatile)" -lt "$vol0" ]
rm -f /tmp/hog
check "every value correct after the purge (rebuilt from origin)" verify_all "after the hog"
echo "# purged_ranges=$(mstat purged_ranges) purged_objects=$(mstat purged_objects) rebuilds=$(mstat rebuilds) verify_errors=$(mstat verify_errors)"
check "daemon lives" alive

kill -TERM "$PID" 2>/dev/null
wait "$PID" 2>/dev/null
check_totals
