#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Run every host test; one TAP line each (image/guest/tap.sh, the helper of
# every test script), with the last 40 lines of a failed test's output,
# then "N passed, N failed, N skipped".  Exit status 1 when anything failed.
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=../../image/guest/tap.sh
. ../image/guest/tap.sh
PY=/usr/bin/python3
log=$(mktemp)
trap 'rm -f "$log" "$log".*' EXIT
run() {
	name=$1
	shift
	t0=$(date +%s)
	if "$@" >"$log" 2>&1; then
		ok "$name ($(($(date +%s) - t0)) s)"
	else
		not_ok "$name ($(($(date +%s) - t0)) s)"
		tail -n 40 "$log" | sed 's/^/    /'
	fi
}
# start_bg NAME CMD...: run a test beside the next ones (the pairs below:
# one of them mostly waits, or each is one busy thread of a 2-core host);
# finish_bg NAME waits for it and prints its line.
start_bg() {
	name=$1
	shift
	(
		t0=$(date +%s)
		"$@" >"$log.$name" 2>&1
		echo "$? $(($(date +%s) - t0))" >"$log.$name.rc"
	) &
	eval "bg_pid_$(echo "$name" | tr -c 'a-z0-9\n' _)=\$!"
}
finish_bg() {
	name=$1
	eval "wait \"\$bg_pid_$(echo "$name" | tr -c 'a-z0-9\n' _)\""
	read -r rc secs <"$log.$name.rc" || rc=1
	if [ "$rc" = 0 ]; then
		ok "$name ($secs s)"
	else
		not_ok "$name ($secs s)"
		tail -n 40 "$log.$name" | sed 's/^/    /'
	fi
	rm -f "$log.$name" "$log.$name.rc"
}
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

run layers $PY tests/layers.py
run unit tests/unit
run unit-asan build-asan/unit
start_bg fuzz-store-asan build-asan/fuzz_store -s 100001 -n 60 -o 4000
run fuzz-store tests/fuzz_store -s 1 -n 150 -o 4000
finish_bg fuzz-store-asan
start_bg fuzz-store-madvfree-asan build-asan/fuzz_store -M -s 200001 -n 40 -o 4000
run fuzz-store-madvfree tests/fuzz_store -M -s 1 -n 100 -o 4000
finish_bg fuzz-store-madvfree-asan
# The tests from here to the fuzzer mostly wait on sockets, timers and
# sleeps (fetch.py: 49 s of CPU in 88 s), so the slowest of them run two
# at a time: memcached's own t/ files against the ASan daemon (expiry,
# timeouts) from here to the fetch tests, and the ASan run of limits and
# of fetch beside the plain one.  Every test takes its own free ports and
# temporary files.  The latency checks that a busy host could fail
# (scrape's p99 ratio) run alone.
start_bg memcached-t-asan env CACHED_BIN=build-asan/cached bash tests/memcached-t.sh
run difftest $PY tests/difftest.py
run difftest-asan env CACHED_BIN=build-asan/cached $PY tests/difftest.py
run diffrandom $PY tests/diffrandom.py
run diffrandom-asan env CACHED_BIN=build-asan/cached $PY tests/diffrandom.py
run diffchunked $PY tests/diffrandom.py --chunked 1 300
run diffchunked-asan env CACHED_BIN=build-asan/cached $PY tests/diffrandom.py --chunked 1 300
run inflight $PY tests/inflight.py
run inflight-asan env CACHED_BIN=build-asan/cached $PY tests/inflight.py
run clients $PY tests/clients.py
run clients-asan env CACHED_BIN=build-asan/cached $PY tests/clients.py
run robustness $PY tests/robust.py
run robustness-asan env CACHED_BIN=build-asan/cached RSS_LIMIT_KB=900000 $PY tests/robust.py
start_bg limits-asan env CACHED_BIN=build-asan/cached $PY tests/limits.py
run limits $PY tests/limits.py
finish_bg limits-asan
run compat $PY tests/compat.py
run compat-asan env CACHED_BIN=build-asan/cached $PY tests/compat.py
run upstream-origin $PY tests/upstream.py
run upstream-origin-asan env CACHED_BIN=build-asan/cached $PY tests/upstream.py
start_bg fetch-pool-asan env CACHED_BIN=build-asan/cached $PY tests/fetch.py
run fetch-pool $PY tests/fetch.py
finish_bg fetch-pool-asan
finish_bg memcached-t-asan
run scrape $PY tests/scrape.py
run scrape-asan env CACHED_BIN=build-asan/cached SCRAPE_ITEMS=200000 $PY tests/scrape.py
run admin $PY tests/admin.py
run admin-asan env CACHED_BIN=build-asan/cached $PY tests/admin.py
run volatility-host $PY tests/volatility.py
run volatility-host-asan env CACHED_BIN=build-asan/cached $PY tests/volatility.py
run psi-band $PY tests/psi.py
run psi-band-asan env CACHED_BIN=build-asan/cached $PY tests/psi.py
run clock-step $PY tests/clock.py
run tsan $PY tests/tsan.py ${TSAN_SECONDS:-12}
run guest-script sh tests/guest-job.sh
mkdir -p build-fuzz/corpus
run fuzz-${FUZZ_SECONDS:-20}s build-fuzz/fuzz_proto -max_total_time="${FUZZ_SECONDS:-20}" \
	-max_len=65536 -timeout=10 -print_final_stats=1 build-fuzz/corpus tests/fuzz-corpus
rm -f "$log"
check_totals
