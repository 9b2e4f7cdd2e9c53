# SPDX-License-Identifier: GPL-2.0-only
# lib.sh - helpers shared by the scripts: paths, progress lines, failures.
# Sourced, not run.  Every script that sources it has set -euo pipefail.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
# shellcheck source=../kernel/VERSION
. "$ROOT/kernel/VERSION"
export CCACHE_DIR=${CCACHE_DIR:-/var/cache/volatile-appliance/ccache}
# Paths under the clone are hashed relative to it, so a fresh clone in
# another folder hits the cache that an earlier clone filled.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT} CCACHE_NOHASHDIR=1
JOBS=${JOBS:-$(nproc)}
_T0=${_T0:-$(date +%s)}
export _T0

# elapsed: seconds since the top-level command started, as "1m05s".
elapsed() {
	local s=$(($(date +%s) - _T0))
	printf '%dm%02ds' $((s / 60)) $((s % 60))
}

# say MESSAGE: one progress line with the elapsed time.
say() {
	printf '[%s] %s\n' "$(elapsed)" "$*"
}

# die MESSAGE [LOG]: one-line reason, the log's path and its tail, exit 1.
die() {
	printf '[%s] ERROR: %s\n' "$(elapsed)" "$1" >&2
	if [ -n "${2:-}" ] && [ -f "$2" ]; then
		printf '  log: %s\n' "$2" >&2
		tail -n 15 "$2" | sed 's/^/  | /' >&2
	fi
	exit 1
}

# run_logged LOG CMD...: run CMD with output to LOG, printing a line a minute
# so that long steps show they are alive.  Returns CMD's status.
run_logged() {
	local log=$1 pid rc tick=0
	shift
	"$@" >"$log" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		tick=$((tick + 1))
		if [ $((tick % 60)) -eq 0 ]; then
			say "  ... still running ($(wc -l <"$log") log lines)"
		fi
	done
	rc=0
	wait "$pid" || rc=$?
	return "$rc"
}

# kernel_make TREE OBJ: the make command line of a kernel build of TREE
# into OBJ, compilers under ccache, as the array KMAKE.
kernel_make() {
	KMAKE=(make -C "$1" O="$2" CC="ccache gcc" HOSTCC="ccache gcc" -j"$JOBS")
}

# kernel_configure FRAGMENT: tinyconfig plus FRAGMENT into the .config of
# the build that kernel_make set up; the tree's Kconfig fills in the rest.
kernel_configure() {
	local tree=${KMAKE[2]} obj=${KMAKE[3]#O=}
	"${KMAKE[@]}" tinyconfig &&
		"$tree/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$1" &&
		"${KMAKE[@]}" olddefconfig
}

# series_patches: the patches of kernel/patches/ in order, cover letter left out.
series_patches() {
	find "$ROOT/kernel/patches" -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' \
		! -name '0000-*' | sort
}

# series_hash: a short hash of the series and its cover letter text.
series_hash() {
	# shellcheck disable=SC2046 # paths without spaces
	cat "$ROOT/kernel/cover-letter.txt" $(series_patches) | sha256sum | cut -c1-16
}

# host_tsc_khz: the host's TSC rate in kHz, from the kernel log, else from
# /proc/cpuinfo; empty if unknown.
host_tsc_khz() {
	local mhz
	mhz=$(dmesg 2>/dev/null | sed -n 's/.*tsc: Refined TSC clocksource calibration: \([0-9.]*\) MHz.*/\1/p' | tail -n 1)
	[ -n "$mhz" ] || mhz=$(dmesg 2>/dev/null | sed -n 's/.*tsc: Detected \([0-9.]*\) MHz.*/\1/p' | tail -n 1)
	[ -n "$mhz" ] || mhz=$(awk -F': ' '/^cpu MHz/ {print $2; exit}' /proc/cpuinfo)
	[ -n "$mhz" ] && awk -v m="$mhz" 'BEGIN {printf "%d", m * 1000}'
}

# The pass/fail helpers (ok, not_ok, skip, result, check, check_totals):
# the one file that the guest jobs use too.
# shellcheck source=../image/guest/tap.sh
. "$ROOT/image/guest/tap.sh"
