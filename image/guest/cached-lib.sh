# SPDX-License-Identifier: GPL-2.0-only
# cached-lib.sh - what the guest jobs that test cached share: the
# pass/fail helpers of tap.sh (ok, not_ok, skip, check, check_totals) and
# talking to the daemon under test (mc, mstat, alive, wait_up, verify_all).
# Sourced, not run; the job sets MCCLIENT, PORT, GEN, KEYS, LOG and PID.
# In the guest it is /usr/share/appliance/cached-lib.sh; elsewhere
# APPLIANCE names its folder (cached/tests/guest-job.sh runs a job on the
# host).

# shellcheck source-path=SCRIPTDIR source=tap.sh
. "${APPLIANCE:-/usr/share/appliance}/tap.sh"
mc() { "$MCCLIENT" -p "$PORT" -g "$GEN" "$@"; }
mstat() { "$MCCLIENT" -p "$PORT" stat "$1" 2>/dev/null || echo 0; }
alive() { kill -0 "$PID" 2>/dev/null; }
wait_up() { # wait_up [PORT]: until a daemon answers stats there (5 s at most)
	i=0
	while [ $i -lt 50 ] && ! "$MCCLIENT" -p "${1:-$PORT}" stats >/dev/null 2>&1; do
		sleep 0.1
		i=$((i + 1))
	done
}
verify_all() { # verify_all LABEL: every key correct, none missing
	out=$(mc -s verify "$KEYS" 2>>"$LOG")
	rc=$?
	echo "# $1: $out"
	[ $rc -eq 0 ] && [ "$out" = "keys=$KEYS ok=$KEYS bad=0 miss=0" ]
}
