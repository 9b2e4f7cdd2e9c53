# SPDX-License-Identifier: GPL-2.0-only
# cached.sh - sourced by run.sh: loadgen against the cached daemon.
# The daemon rebuilds missing values from its gen origin, so a run without
# warm-up already hits; every hit must match the formula byte for byte.

GEN="size=100-2000,seed=5"
if ! make -s -C ../cached > "$TMP/cached-build" 2>&1 || [ ! -x ../cached/cached ]; then
	result cached_verify_zero_errors 1 "make -C ../cached failed: $(tail -3 "$TMP/cached-build" | tr '\n' ' ')"
else
	CD_OK=0
	for _ in 1 2 3; do
		CD_PORT=$(free_port)
		../cached/cached -u root -l 127.0.0.1 -p "$CD_PORT" --origin "gen:$GEN" --verify \
			> "$TMP/cached.log" 2>&1 &
		CD_PID=$!
		PIDS="$PIDS $CD_PID"
		if wait_port "$CD_PORT" && kill -0 "$CD_PID" 2>/dev/null; then
			CD_OK=1
			break
		fi
		kill "$CD_PID" 2>/dev/null
	done
	if [ "$CD_OK" = 0 ]; then
		result cached_verify_zero_errors 1 "cached did not start: $(tail -3 "$TMP/cached.log" | tr '\n' ' ')"
	else
		$LG -s 127.0.0.1:$CD_PORT -t 2 -c 4 -d 2 -k 20000 -m 4 --verify --gen "$GEN" \
			--dist zipf:0.99 --json "$TMP/cd.json" > "$TMP/out" 2> "$TMP/err"
		st=$?
		rc=0
		[ "$st" = 0 ] || rc=1
		[ "$(jget "$TMP/cd.json" verify_errors)" = 0 ] || rc=1
		[ "$(jget "$TMP/cd.json" errors)" = 0 ] || rc=1
		[ "$(jget "$TMP/cd.json" hits)" -gt 1000 ] 2>/dev/null || rc=1
		result cached_verify_zero_errors $rc "exit $st; $(tail -2 "$TMP/err" | tr '\n' ' ')"

		# the same daemon read with another seed: every hit is a mismatch
		$LG -s 127.0.0.1:$CD_PORT -c 2 -d 1 -k 20000 --get-ratio 1 --verify \
			--gen "size=100-2000,seed=6" --json "$TMP/cw.json" > "$TMP/out" 2> "$TMP/err"
		st=$?
		rc=0
		[ "$st" = 1 ] || rc=1
		grep -q 'verify: key key:' "$TMP/err" || rc=1
		result cached_mismatch_detected $rc "exit $st"
		stop "$CD_PID"
	fi
fi
