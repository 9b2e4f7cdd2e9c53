# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
# tap.sh - the one pass/fail helper of every test script: the host's
# (scripts/lib.sh sources it, and loadgen's and cached's test scripts do)
# and the guest jobs' (in the guest it is /usr/share/appliance/tap.sh;
# elsewhere APPLIANCE names its folder, image/guest/).  Sourced, not run;
# POSIX sh and 'local', for bash, dash and busybox ash alike.
#
# It prints TAP lines, numbered:
#   ok N - NAME
#   not ok N - NAME  # WHY
#   ok N - NAME # SKIP WHY
# and check_totals ends with "N passed, N failed, N skipped", the line
# scripts/check.sh reads.  A skip is neither a pass nor a failure.
#
#   ok NAME...                  a pass
#   not_ok NAME...              a failure
#   skip NAME [WHY]             a test that cannot run here
#   result NAME STATUS [WHY]    a pass when STATUS is 0, else a failure
#   check NAME CMD...           run CMD as one assertion; returns 0 either
#                               way, so that a set -e script goes on
#   check_totals                the closing line; false when anything failed
#
# The counts are tap_n, tap_pass, tap_fail and tap_skip.

tap_n=0 tap_pass=0 tap_fail=0 tap_skip=0

ok() {
	tap_n=$((tap_n + 1)) tap_pass=$((tap_pass + 1))
	echo "ok $tap_n - $*"
}

not_ok() {
	tap_n=$((tap_n + 1)) tap_fail=$((tap_fail + 1))
	echo "not ok $tap_n - $*"
}

skip() {
	tap_n=$((tap_n + 1)) tap_skip=$((tap_skip + 1))
	echo "ok $tap_n - $1 # SKIP${2:+ $2}"
}

result() {
	if [ "$2" = 0 ]; then
		ok "$1"
	else
		not_ok "$1${3:+  # $3}"
	fi
}

# shellcheck disable=SC3043 # dash, busybox ash and bash all have local
check() {
	local tap_name=$1
	shift
	if "$@"; then ok "$tap_name"; else not_ok "$tap_name"; fi
}

check_totals() {
	echo "$tap_pass passed, $tap_fail failed, $tap_skip skipped"
	[ "$tap_fail" -eq 0 ]
}
