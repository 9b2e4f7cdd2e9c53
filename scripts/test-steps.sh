#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# test-steps.sh - every patch of the series builds and boots on its own, as
# a bisecting reviewer needs.  For each step k (base + patches 1..k):
#
#   build    the normal kernel (tinyconfig + kernel/configs/{base,volatile})
#            builds, and the compiler prints no warning;
#   boot     it boots the guest image and runs a job with no kernel warning
#            (BUG, WARNING, KASAN, lockdep, panic: scripts/qemu-run.sh);
#   kunit    the shmem-volatile KUnit suite runs at boot and fails nothing.
#
# The steps are checked out in their own clone (build/linux-steps) and
# built in their own object folder (build/kbuild-steps), one after the
# other, so each step rebuilds only what its patch changed; ccache keeps
# repeated runs short.  Options that a step does not have yet (the KUnit
# suite before patch 1) are left out of its configuration.
#
# usage: scripts/test-steps.sh      (after scripts/kernel-tree.sh and
#                                    scripts/image-build.sh)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 64; }
TREE=$BUILD/linux
STEPS=$BUILD/linux-steps
OBJ=$BUILD/kbuild-steps
LOGS=$BUILD/logs/steps
[ -d "$TREE/.git" ] || die "no kernel tree: run 'make kernel-tree' first"
[ -f "$BUILD/rootfs.img" ] || die "no guest image: run 'make image' first"
command -v ccache >/dev/null || die "ccache is missing (run: make deps)"
mkdir -p "$OBJ" "$LOGS" "$CCACHE_DIR"

mapfile -t commits < <(git -C "$TREE" rev-list --reverse base..volatile)
n=${#commits[@]}
[ "$n" -gt 0 ] || die "build/linux has no commits on 'volatile' after 'base'"

# The clone follows build/linux, which kernel-tree.sh may rebuild from
# scratch: fetch its commits every time.
if [ ! -d "$STEPS/.git" ]; then
	say "cloning build/linux into ${STEPS#"$ROOT"/}"
	git clone -q --no-checkout "$TREE" "$STEPS"
fi
git -C "$STEPS" fetch -q --force "$TREE" "+refs/heads/volatile:refs/remotes/tree/volatile"

frag=$OBJ/fragment.config
cat "$ROOT/kernel/configs/base.config" "$ROOT/kernel/configs/volatile.config" >"$frag"
kernel_make "$STEPS" "$OBJ"

# build_step K: configure and build step K; false, with the log, on failure.
build_step() {
	local log=$LOGS/build-$1.log
	kernel_configure "$frag" >"$LOGS/config-$1.log" 2>&1 ||
		{ tail -n 15 "$LOGS/config-$1.log"; return 1; }
	run_logged "$log" "${KMAKE[@]}" bzImage || { tail -n 15 "$log"; return 1; }
	cp "$OBJ/arch/x86/boot/bzImage" "$OBJ/bzImage-step$1"
}

# no_warnings K: the compiler printed no warning in step K's build.
no_warnings() {
	! grep -E 'warning:' "$LOGS/build-$1.log"
}

# boots K: step K's kernel boots and runs a job with no kernel warning.
boots() {
	rm -rf "$LOGS/run-$1"
	"$ROOT/scripts/qemu-run.sh" --quiet --kernel "$OBJ/bzImage-step$1" \
		--run-dir "$LOGS/run-$1" --timeout 300 -- true
}

# kunit_passes K: the shmem-volatile suite ran in step K's boot, no case failed.
kunit_passes() {
	local console=$LOGS/run-$1/console.log totals
	grep -aq '# Subtest: shmem-volatile' "$console" || {
		echo "the shmem-volatile KUnit suite did not run"
		return 1
	}
	totals=$(grep -aoE '# Totals: pass:[0-9]+ fail:[0-9]+' "$console" | tail -n 1)
	echo "  step $1 KUnit: ${totals#\# Totals: }"
	[[ $totals =~ pass:([0-9]+)\ fail:0$ ]] && [ "${BASH_REMATCH[1]}" -gt 0 ]
}

for k in $(seq 1 "$n"); do
	c=${commits[$((k - 1))]}
	say "step $k/$n: $(git -C "$TREE" log -1 --format=%s "$c")"
	git -C "$STEPS" -c advice.detachedHead=false checkout -q --force "$c"
	rc=0
	build_step "$k" || rc=$?
	result "step$k-build" "$rc"
	if [ "$rc" = 0 ]; then
		check "step$k-no-compiler-warning" no_warnings "$k"
		check "step$k-boot" boots "$k"
		check "step$k-kunit" kunit_passes "$k"
	else
		for t in no-compiler-warning boot kunit; do
			result "step$k-$t" 1 "step $k did not build"
		done
	fi
done
check_totals
