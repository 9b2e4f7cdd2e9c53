#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# cached-volatile.sh - guest test of cached on the kernel with volatile ranges.
#
# Runs as root in the QEMU guest (busybox applets, /usr/bin/cached,
# /usr/bin/mcclient, maybe /usr/bin/stress-ng; ~512 MiB RAM, no swap):
#   fill the cache from the gen origin, let it idle, see Volatile: in
#   /proc/meminfo grow; force a purge with drop_caches and read every key
#   back with --verify: every value correct, purges and rebuilds counted;
#   run stress-ng beside it: no OOM kill, the daemon lives, values correct.
# A second daemon (-m 16, no --verify, no origin, so a wrong byte would
# reach the client) has its slots reused while the kernel held them
# volatile: large objects deleted and overwritten while volatile, small
# segments emptied (warm, volatile) and reused, the slot table wrapped by
# new objects; then the same purge and pressure: every byte of every
# reply is checked, and a purged key may only be a miss.
# Last, the meta protocol's purge flag (meta_purge_flag).
# Prints TAP; exits 0 only if every test is ok.
#
# Environment: CACHED, MCCLIENT, PORT, KEYS, IDLE, HOST_CHECK=1 (run on a
# host without the kernel series: skips drop_caches and stress-ng).

CACHED=${CACHED:-/usr/bin/cached}
MCCLIENT=${MCCLIENT:-/usr/bin/mcclient}
PORT=${PORT:-11311}
PORT2=${PORT2:-$((PORT + 1))}
KEYS=${KEYS:-20000}
IDLE=${IDLE:-3}
GEN=${GEN:-size=1000-8000,seed=11}
MEM=${MEM:-160}
LOG=${LOG:-/tmp/cached-volatile.log}
LOG2=${LOG2:-$LOG.reuse}
# the second daemon's idle time: long enough that the reused slots stay
# hot (unmarked) through the reuse, the purge and the reads that follow
IDLE2=${IDLE2:-15}
GENL=size=200000-400000,seed=21     # large objects: one range each
GENL2=size=200000-400000,seed=22    # their overwrites
GENS=size=500-3000,seed=23          # small objects: segments
GENS2=size=500-3000,seed=24
GENF=size=262200-270000,seed=25     # large fillers: move the slot cursor on

# ok, not_ok, skip, check, check_totals, mc, mstat, alive, wait_up, verify_all
# shellcheck source-path=SCRIPTDIR source=cached-lib.sh
. "${APPLIANCE:-/usr/share/appliance}/cached-lib.sh"

meminfo_volatile() { # kB of Volatile: in /proc/meminfo, 0 when absent
	v=$(awk '/^Volatile:/ { print $2 }' /proc/meminfo 2>/dev/null)
	echo "${v:-0}"
}
vmstat_purged() { # ranges purged by the kernel so far (0 when not counted)
	v=$(awk '/^volatile_purged_ranges / { print $2 }' /proc/vmstat 2>/dev/null)
	echo "${v:-0}"
}
oom_kills() { dmesg 2>/dev/null | grep -c -i -e "killed process" -e "oom-kill" ; }
# Purge with drop_caches, in the background with a deadline: a hung
# drop_caches must not hang the whole test, and its kernel stack tells why.
# No sync first: in an earlier run of this test a sync before it blocked
# for minutes, while drop_caches alone returns in about a second.
drop_caches() {
	(echo 3 >/proc/sys/vm/drop_caches) &
	dpid=$!
	i=0
	while [ $i -lt 120 ] && kill -0 "$dpid" 2>/dev/null; do
		sleep 1
		i=$((i + 1))
	done
	if kill -0 "$dpid" 2>/dev/null; then
		echo "# drop_caches still running after ${i}s; its kernel stack:"
		sed 's/^/#   /' "/proc/$dpid/stack" 2>/dev/null
		grep -i volatile /proc/meminfo /proc/vmstat 2>/dev/null | sed 's/^/#   /'
		kill -9 "$dpid" 2>/dev/null
	else
		echo "# drop_caches took ${i}s"
	fi
}
alive2() { kill -0 "$PID2" 2>/dev/null; }
m2() { # m2 GEN PREFIX ARGS...: the second daemon
	g=$1
	k=$2
	shift 2
	"$MCCLIENT" -p "$PORT2" -g "$g" -k "$k" "$@"
}
m2stat() { "$MCCLIENT" -p "$PORT2" stat "$1" 2>/dev/null || echo 0; }
reuse_verify() { # reuse_verify LABEL: every byte right; misses allowed
	r=0
	for spec in "$GENL2 LO: 10" "$GENL LN: 24" "$GENS2 WN: 1000"; do
		set -- $spec
		out=$(m2 "$1" "$2" verify "$3" 2>>"$LOG2") || r=1
		echo "# $LABEL $2 $out"
		case $out in *" bad=0 "*) ;; *) r=1 ;; esac
	done
	return $r
}

# The meta protocol's purge flag, end to end (4 tests): a daemon without
# an origin idles, the kernel purges it (drop_caches), and mg reports the
# lost key as "EN P", once; then 8 clients ask for another lost key at
# once with N (vivify): exactly one wins the rebuild (W) and 7 wait (Z),
# all told P, and once the winner stores the value it is served plain.
meta_purge_flag() {
	mport=$PORT2   # the second daemon has exited by then
	mm() { "$MCCLIENT" -p "$mport" "$@"; }
	"$CACHED" -u root -l 127.0.0.1 -p "$mport" -m 64 -t 2 --idle "$IDLE" \
		>>"$LOG" 2>&1 &
	mpid=$!
	wait_up "$mport"
	out=$("$MCCLIENT" -p "$mport" -g "$GEN" -k meta: fill 2000 2>>"$LOG")
	echo "# meta: fill: $out; purged_ranges before: $(mm stat purged_ranges)"
	sleep $((IDLE + 3))
	[ -n "$HOST_CHECK" ] || drop_caches
	r1=$(mm meta "mg meta:1 s")
	r2=$(mm meta "mg meta:1 s")
	echo "# meta: mg of a purged key: '$r1', then '$r2'; purged_ranges=$(mm stat purged_ranges) purge_misses=$(mm stat purge_misses)"
	check "mg reports a key lost to a purge as EN P" [ "$r1" = "EN P" ]
	check "and then as a plain miss" [ "$r2" = "EN" ]
	tmp=/tmp/meta-purge.$$
	i=0
	pids=
	while [ $i -lt 8 ]; do
		mm meta "mg meta:2 N30 s" >"$tmp.$i" 2>&1 &
		pids="$pids $!"
		i=$((i + 1))
	done
	for p in $pids; do
		wait "$p"
	done
	wins=$(cat "$tmp".* | grep -c ' W P$')
	waits=$(cat "$tmp".* | grep -c ' Z P$')
	echo "# meta: 8 clients on one lost key: $(cat "$tmp".* | tr '\n' '|')"
	rm -f "$tmp".*
	one_rebuilds() { [ "$wins" -eq 1 ] && [ "$waits" -eq 7 ]; }
	check "one of 8 clients wins the rebuild (W), 7 wait (Z), all see P" one_rebuilds
	mm meta "ms meta:2 7 T0" rebuilt >/dev/null
	r3=$(mm meta "mg meta:2 v" | tr '\n' '|')
	check "the rebuilt value is served without P" [ "$r3" = "VA 7|rebuilt|" ]
	kill -TERM "$mpid"
	wait "$mpid"
}

echo "1..30"

oom_before=$(oom_kills)
"$CACHED" -u root -l 127.0.0.1 -p "$PORT" -m "$MEM" -t 2 --idle "$IDLE" \
	--origin "gen:$GEN" --verify -v >"$LOG" 2>&1 &
PID=$!
wait_up "$PORT"
check "daemon started" alive

mode=$(mstat mode)
if [ "$mode" = volatile ]; then ok "daemon runs in volatile mode"; else
	not_ok "daemon runs in volatile mode (mode=$mode: $(head -n 1 "$LOG"))"; fi

out=$(mc fill "$KEYS" 2>>"$LOG")
echo "# fill: $out"
check "fill $KEYS keys from the gen formula" [ "$out" = "keys=$KEYS stored=$KEYS" ]

check "every value reads back before idling" verify_all "hot read"

vol0=$(meminfo_volatile)
sleep $((IDLE + 3))
vol1=$(meminfo_volatile)
vb=$(mstat volatile_bytes)
echo "# Volatile: before=${vol0} kB after=${vol1} kB; volatile_bytes=$vb"
grep -i volatile /proc/meminfo /proc/vmstat 2>/dev/null | sed 's/^/#   /'
check "Volatile: in /proc/meminfo grows when the cache idles" [ "$vol1" -gt "$vol0" ]
check "stats count volatile bytes" [ "$vb" -gt 0 ]

# Slot reuse while volatile, on the second daemon.
"$CACHED" -u root -l 127.0.0.1 -p "$PORT2" -m 16 -t 2 --idle "$IDLE2" -v >"$LOG2" 2>&1 &
PID2=$!
wait_up "$PORT2"
check "second daemon started (-m 16, no --verify, no origin)" alive2
filled() { # filled OUT N
	[ "$1" = "keys=$2 stored=$2" ]
}
# fillers first, so that the objects deleted while volatile (the fillers
# among them) lie across the slot table and new objects wrap onto them
o0=$(m2 "$GENF" F: fill 24 2>>"$LOG2")
o1=$(m2 "$GENL" LD: fill 10 2>>"$LOG2")
o2=$(m2 "$GENL" LO: fill 10 2>>"$LOG2")
o3=$(m2 "$GENS" W: fill 1000 2>>"$LOG2")
echo "# reuse fill: $o0; $o1; $o2; $o3"
allfilled() { filled "$o0" 24 && filled "$o1" 10 && filled "$o2" 10 && filled "$o3" 1000; }
check "large and small objects stored" allfilled
sleep $((IDLE2 + 3))
vb2=$(m2stat volatile_bytes)
echo "# second daemon: volatile_bytes=$vb2 volatile_ranges=$(m2stat volatile_ranges)"
if [ -n "$HOST_CHECK" ]; then
	skip "second daemon's data went volatile (host check)"
else
	check "second daemon's data went volatile" [ "$vb2" -gt 0 ]
fi
o0=$(m2 "$GENF" F: delete 24 2>>"$LOG2")
o1=$(m2 "$GENL" LD: delete 10 2>>"$LOG2")
o2=$(m2 "$GENL2" LO: fill 10 2>>"$LOG2")
o3=$(m2 "$GENS" W: delete 1000 2>>"$LOG2")
echo "# while volatile: $o0; $o1; overwrite $o2; $o3"
changed() { case $o0 in "keys=24 deleted="*) ;; *) return 1 ;; esac &&
	[ "$o1" = "keys=10 deleted=10 not_found=0" ] && filled "$o2" 10 &&
	[ "$o3" = "keys=1000 deleted=1000 not_found=0" ]; }
check "volatile large objects deleted and overwritten, small segments emptied" changed
o1=$(m2 "$GENL" LN: fill 24 2>>"$LOG2")
o2=$(m2 "$GENS2" WN: fill 1000 2>>"$LOG2")
echo "# reuse: $o1; $o2; quarantined_segments=$(m2stat quarantined_segments) evictions=$(m2stat evictions)"
refilled() { filled "$o1" 24 && filled "$o2" 1000; }
check "freed and warm slots reused by new objects" refilled
LABEL="reused, hot:"
check "every byte right in the reused slots" reuse_verify
# a purge now, while the new objects are hot: a range left volatile on a
# reused slot would be taken with their bytes
if [ -n "$HOST_CHECK" ]; then
	skip "purge while the reused slots are hot (host check)"
else
	drop_caches
	LABEL="reused, purged while hot:"
	check "every byte right after a purge while the reused slots are hot" reuse_verify
fi

if [ -n "$HOST_CHECK" ]; then
	skip "drop_caches purge (host check)"
else
	pur0=$(vmstat_purged)
	drop_caches
	sleep 1
	vol2=$(meminfo_volatile)
	pur1=$(vmstat_purged)
	echo "# Volatile: after drop_caches=${vol2} kB; volatile_purged_ranges ${pur0} -> ${pur1}"
	purged() { [ "$vol2" -lt "$vol1" ] || [ "$pur1" -gt "$pur0" ]; }
	check "drop_caches purged volatile data" purged
fi

check "every value correct after the purge (rebuilt from origin)" verify_all "after purge"
LABEL="reused, after the purge:"
check "reused slots: every byte right after the purge (misses allowed)" reuse_verify
pr=$(mstat purged_ranges)
po=$(mstat purged_objects)
rb=$(mstat rebuilds)
ve=$(mstat verify_errors)
echo "# purged_ranges=$pr purged_objects=$po rebuilds=$rb rebuild_usec=$(mstat rebuild_usec) verify_errors=$ve"
counted() { [ "$pr" -gt 0 ] && [ "$po" -gt 0 ] && [ "$rb" -gt 0 ]; }
check "purges and rebuilds are counted in stats" counted

# memory pressure beside the daemon
sleep $((IDLE + 2))   # let the data go volatile again
if [ -n "$HOST_CHECK" ] || ! command -v stress-ng >/dev/null 2>&1; then
	skip "stress-ng pressure (stress-ng not available or host check)"
	skip "reused slots under pressure (stress-ng not available or host check)"
	STRESS=
else
	stress-ng --vm 2 --vm-bytes 70% --vm-keep --timeout 20s >/dev/null 2>&1 &
	STRESS=$!
	sleep 8
	check "values correct while under memory pressure" verify_all "under pressure"
	LABEL="reused, under pressure:"
	check "reused slots: every byte right under pressure" reuse_verify
	wait "$STRESS"
fi
check "daemon lives" alive
echo "# after pressure: purged_ranges=$(mstat purged_ranges) rebuilds=$(mstat rebuilds) evictions=$(mstat evictions) Volatile=$(meminfo_volatile) kB"
check "every value correct after pressure" verify_all "after pressure"
LABEL="reused, after pressure:"
check "reused slots: every byte right after pressure" reuse_verify
check "second daemon lives" alive2
# PSI mode arms its trigger before -u drops privileges
PORT3=$((PORT2 + 1))
"$CACHED" -u nobody -l 127.0.0.1 -p "$PORT3" -m 16 -t 1 --mode psi >"$LOG2.psi" 2>&1 &
PID3=$!
wait_up "$PORT3"
psimode=$("$MCCLIENT" -p "$PORT3" stat mode 2>/dev/null)
kill -TERM "$PID3" 2>/dev/null
wait "$PID3"
if [ -n "$HOST_CHECK" ]; then
	skip "-u nobody --mode psi runs in psi mode (host check)"
else
	check "-u nobody --mode psi runs in psi mode ($psimode: $(head -n 1 "$LOG2.psi"))" [ "$psimode" = psi ]
fi
echo "# second daemon: purged_ranges=$(m2stat purged_ranges) purged_objects=$(m2stat purged_objects) volatile_unmark_failures=$(m2stat volatile_unmark_failures) quarantined_segments=$(m2stat quarantined_segments)"
oom_after=$(oom_kills)
check "no OOM kill" [ "$oom_after" -le "$oom_before" ]
check "no checksum mismatch was ever seen" [ "$(mstat verify_errors)" = 0 ]

kill -TERM "$PID2"
wait "$PID2" || echo "# second daemon exit status $?"
kill -TERM "$PID"
wait "$PID"
rc=$?
[ "$rc" -eq 0 ] || echo "# daemon exit status $rc"
echo "# daemon log:"
sed 's/^/#   /' "$LOG" | tail -n 20

meta_purge_flag
check_totals
