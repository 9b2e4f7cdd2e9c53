#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# test-series.sh - the form of the patch series in kernel/patches/, as a
# reviewer would check it before reading: scripts/checkpatch.pl --strict
# of the kernel tree reports nothing on any patch; every patch is numbered
# [PATCH k/N] and signed off; the cover letter has a real subject and lists
# every patch; build/linux holds exactly this series on top of base; the
# patch adding the user-visible ABI is the last that changes kernel code.  And
# the series' selftests, as the image holds them, skip every test with a
# clear message on a kernel without the series: this host's own kernel,
# which they only ask for advice on a memfd of their own.
#
# usage: scripts/test-series.sh      (after scripts/kernel-tree.sh and
#                                      scripts/image-build.sh)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 64; }
TREE=$BUILD/linux
PATCHES=$ROOT/kernel/patches
[ -x "$TREE/scripts/checkpatch.pl" ] || die "no kernel tree: run 'make kernel-tree' first"

mapfile -t patches < <(ls "$PATCHES"/[0-9][0-9][0-9][0-9]-*.patch | grep -v /0000-cover-letter.patch)
n=${#patches[@]}
cover=$PATCHES/0000-cover-letter.patch

# checkpatch runs scripts/spdxcheck.py, which needs Debian's python3-ply
# and python3-git: put /usr/bin first, ahead of any other python3.
checkpatch_clean() {
	local out
	out=$(cd "$TREE" && PATH=/usr/bin:/bin:$PATH scripts/checkpatch.pl --strict --terse "$1" 2>&1) || {
		printf '%s\n' "$out"
		return 1
	}
	# --terse prints one line per finding; a clean patch prints only the
	# total line, "total: 0 errors, 0 warnings, 0 checks, ...".
	if printf '%s\n' "$out" | grep -vE "^$|total: 0 errors, 0 warnings, 0 checks"; then
		return 1
	fi
}

# subject FILE: a patch's subject after [PATCH k/N], unfolded.
subject() {
	awk '/^Subject: /{ s = $0; while ((getline l) > 0 && l ~ /^[ \t]/) s = s l
		sub(/^Subject: \[PATCH [0-9]+\/[0-9]+\] /, "", s); print s; exit }' "$1"
}

numbered() { # PATCH K: the subject says [PATCH K/N]
	grep -qE "^Subject: \[PATCH $2/$n\] [^*]" "$1"
}

signed_off() { grep -qE '^Signed-off-by: .+ <.+@.+>$' "$1"; }

cover_subject() { # a subject of its own, not git's placeholder
	grep -qE "^Subject: \[PATCH 0/$n\] [a-z]" "$cover" && ! grep -q 'SUBJECT HERE' "$cover"
}

cover_lists_all() { # the shortlog names every patch
	local p subject
	for p in "${patches[@]}"; do
		subject=$(subject "$p")
		grep -qF "${subject:0:40}" "$cover" || { echo "not in the cover letter: $subject"; return 1; }
	done
}

tree_is_series() { # build/linux holds these patches, in order, on base
	local got want
	[ "$(git -C "$TREE" rev-list --count base..volatile)" = "$n" ] || return 1
	got=$(git -C "$TREE" log --reverse --format=%s base..volatile)
	want=$(for p in "${patches[@]}"; do subject "$p"; done)
	[ "$got" = "$want" ] || { diff <(echo "$want") <(echo "$got"); return 1; }
}

# files PATCH: the files a patch changes, one per line.
files() { sed -n 's|^diff --git a/\([^ ]*\) b/.*|\1|p' "$1"; }

# The user-visible ABI comes last, after the machinery that makes it safe:
# one patch changes include/uapi/, and no later patch changes kernel code
# (anything but Documentation/, tools/testing/ and MAINTAINERS).  So every
# kernel a bisection builds either lacks the advice or purges safely.
abi_last() {
	local p k=0 abi=0 nabi=0 last_code=0
	for p in "${patches[@]}"; do
		k=$((k + 1))
		if files "$p" | grep -q '^include/uapi/'; then
			abi=$k nabi=$((nabi + 1))
		fi
		if files "$p" | grep -qvE '^(Documentation/|tools/testing/|MAINTAINERS$)'; then
			last_code=$k
		fi
	done
	[ "$nabi" = 1 ] || { echo "$nabi patches change include/uapi/ (want 1)"; return 1; }
	[ "$abi" = "$last_code" ] ||
		{ echo "patch $abi adds the ABI, but patch $last_code changes kernel code after it"; return 1; }
}

check "series has patches" test "$n" -gt 0
check "the ABI comes last, after the machinery" abi_last
check "cover letter has its own subject" cover_subject
check "cover letter lists every patch" cover_lists_all
check "build/linux holds the series" tree_is_series
k=0
for p in "${patches[@]}"; do
	k=$((k + 1))
	name=$(basename "$p" .patch)
	check "$name is numbered $k/$n" numbered "$p" "$k"
	check "$name is signed off" signed_off "$p"
	check "$name passes checkpatch --strict" checkpatch_clean "$p"
done

# The selftests on this host's kernel, which lacks the series: the probe
# below says so first, as the tests themselves would not prove anything on
# a kernel that has it.  ulimit bounds what a test could allocate if a
# check failed to skip.
host_lacks_series() {
	python3 - <<'PY'
import errno, os, sys
fd = os.memfd_create("probe")
os.ftruncate(fd, 4096)
try:
    os.posix_fadvise(fd, 0, 0, 10)    # POSIX_FADV_ISVOLATILE
except OSError as e:
    sys.exit(0 if e.errno == errno.EINVAL else 1)
print("this kernel has volatile ranges: the skip checks need one without")
sys.exit(1)
PY
}

# The static programs scripts/image-build.sh built from build/linux and
# staged for the guest.
SELFTESTS=$BUILD/rootfs.d/usr/libexec/volatile

# volatile_ranges: a kselftest harness program; every test reports
# "ok N # SKIP kernel lacks volatile ranges (...)", none passes or fails,
# and the program exits 0 (kselftest: all skipped is not a failure).
ranges_all_skip() {
	local out rc=0 plan skipped
	out=$(ulimit -v 1048576 && timeout 120 "$SELFTESTS/volatile_ranges" 2>&1) || rc=$?
	plan=$(printf '%s\n' "$out" | sed -nE 's/^1\.\.([0-9]+)$/\1/p')
	skipped=$(printf '%s\n' "$out" | grep -cE '^ok [0-9]+ .*# SKIP kernel lacks volatile ranges \(advice 10 on a memfd: -EINVAL\)$' || true)
	if [ "$rc" -eq 0 ] && [ -n "$plan" ] && [ "$plan" -gt 50 ] && [ "$skipped" -eq "$plan" ] &&
		printf '%s\n' "$out" | grep -qE "^# Totals: pass:0 fail:0 xfail:0 xpass:0 skip:$plan error:0$"; then
		return 0
	fi
	printf '%s\n' "$out" | tail -n 5
	echo "exit $rc, plan ${plan:-none}, $skipped skipped with the message"
	return 1
}

# volatile_stress, volatile_bench: one line saying why, and kselftest's
# skip status, 4.
program_skips() {
	local out rc=0
	out=$(ulimit -v 1048576 && timeout 60 "$SELFTESTS/$1" 2>&1) || rc=$?
	if [ "$rc" -eq 4 ] &&
		printf '%s\n' "$out" | grep -qE "^$1: SKIP: kernel lacks volatile ranges \(.*-22\)$"; then
		return 0
	fi
	printf '%s\n' "$out" | tail -n 3
	echo "exit $rc"
	return 1
}

check "this host's kernel lacks the series" host_lacks_series
for t in volatile_ranges volatile_stress volatile_bench; do
	check "$t is in the image" test -x "$SELFTESTS/$t"
done
check "volatile_ranges skips every test on a kernel without the series" ranges_all_skip
check "volatile_stress skips on a kernel without the series" program_skips volatile_stress
check "volatile_bench skips on a kernel without the series" program_skips volatile_bench

check_totals
