#!/usr/bin/env bash
# test-runner.sh - tests of scripts/qemu-run.sh itself, on build/bzImage:
# exit status and result files come back, a hung guest is killed and
# reported, a kernel warning fails a run whose job passed, user-space
# text that looks like a warning does not, and --icount makes the guest's
# clock count instructions.
#
# usage: scripts/test-runner.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 64; }
RUN=$ROOT/scripts/qemu-run.sh
T=$BUILD/check/runner-tests
rm -rf "$T"
mkdir -p "$T"

# runner NAME ARGS...: run qemu-run.sh, keep its status in $T/NAME.rc.
runner() {
	local name=$1 rc=0
	shift
	"$RUN" --quiet --run-dir "$T/$name" "$@" >"$T/$name.out" 2>&1 || rc=$?
	echo "$rc" >"$T/$name.rc"
}
rc_is() { [ "$(cat "$T/$1.rc")" = "$2" ]; }

runner status --timeout 120 -- sh -c 'echo hello >"$OUT/hello.txt"; exit 3'
check "the guest's exit status comes back" rc_is status 3
check "result files come back" grep -qx hello "$T/status/out/hello.txt"
for f in kconfig qemu-cmd console.log exit-status warnings.txt; do
	check "the run keeps $f" test -f "$T/status/$f"
done
check "the run is under TCG or probed KVM" grep -qE -- '-accel tcg|-enable-kvm' "$T/status/qemu-cmd"

runner hang --timeout 20 -- sleep 600
check "a hung guest is killed and reported" rc_is hang 124
check "the hang report says 'hung'" grep -q 'hung' "$T/hang.out"

runner warning --timeout 120 -- sh -c 'echo "WARNING: CPU: 0 PID: 1 at runner-self-test" >/dev/kmsg'
check "a kernel warning fails a passing job" rc_is warning 1
check "the warning is listed" grep -q 'runner-self-test' "$T/warning/warnings.txt"

runner userspace --timeout 120 -- echo "BUG: this is only user-space text"
check "user-space text is not a kernel warning" rc_is userspace 0

# --icount: the guest's time is its instruction count, so a guest that
# sleeps skips ahead (sleep=off) and a 30 s sleep ends well inside a 20 s
# watchdog; and the guest is told its TSC runs at 1 GHz, one tick per
# instruction.
runner icount --icount --cpus 1 --timeout 20 -- sh -c \
	'sleep 30; dmesg | grep "tsc: Detected" >"$OUT/tsc.txt"'
check "--icount: a 30 s sleep in the guest ends inside a 20 s watchdog" rc_is icount 0
check "--icount runs QEMU with -icount shift=0" grep -q -- '-icount shift=0' "$T/icount/qemu-cmd"
check "--icount: the guest's TSC is 1 GHz" grep -q 'Detected 1000.000 MHz TSC' "$T/icount/out/tsc.txt"

runner nokernel --kernel "$T/no-such-kernel" -- true
check "a missing kernel is a clear error" grep -q 'no kernel at' "$T/nokernel.out"
check "a missing kernel fails" test "$(cat "$T/nokernel.rc")" != 0

check_totals
