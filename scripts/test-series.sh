#!/usr/bin/env bash
# test-series.sh - the form of the patch series in kernel/patches/, as a
# reviewer would check it before reading: scripts/checkpatch.pl --strict
# of the kernel tree reports nothing on any patch; every patch is numbered
# [PATCH k/N] and signed off; the cover letter has a real subject and lists
# every patch; build/linux holds exactly this series on top of base.
#
# usage: scripts/test-series.sh      (after scripts/kernel-tree.sh)
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

check "series has patches" test "$n" -gt 0
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

check_totals
