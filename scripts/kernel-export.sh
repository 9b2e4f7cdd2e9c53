#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# kernel-export.sh - write the commits of build/linux (branch "volatile", on
# top of tag "base") back to kernel/patches/ as a git format-patch series.
#
# usage: scripts/kernel-export.sh
#
# The cover letter is made from kernel/cover-letter.txt (first line: subject;
# the rest: body), with git's shortlog and diffstat appended.  Commit ids are
# zeroed so that an unchanged series exports to unchanged files.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 64; }
TREE=$BUILD/linux
[ -d "$TREE/.git" ] || die "no kernel tree: run 'make kernel-tree' first"
[ -z "$(git -C "$TREE" status --porcelain --untracked-files=no)" ] ||
	die "build/linux has uncommitted changes: commit them first"
n=$(git -C "$TREE" rev-list --count base..HEAD)
[ "$n" -gt 0 ] || die "build/linux has no commits on top of base"

git -C "$TREE" config branch.volatile.description "$(cat "$ROOT/kernel/cover-letter.txt")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$TREE" format-patch -q --zero-commit --abbrev=9 --base=base --cover-letter \
	--cover-from-description=subject --thread=shallow --no-signature \
	-o "$tmp" base..HEAD
# Message-Ids and the cover letter's date carry the time of the export:
# use the tip's commit time.
read -r t d < <(git -C "$TREE" log -1 --format='%ct %cD' HEAD)
sed -i -E "/^(Message-Id|In-Reply-To|References): /s/\.[0-9]+\.git\./.$t.git./" "$tmp"/*.patch
sed -i "1,/^\$/s/^Date: .*/Date: $d/" "$tmp"/0000-cover-letter.patch
rm -f "$ROOT"/kernel/patches/*.patch
cp "$tmp"/*.patch "$ROOT/kernel/patches/"
series_hash >"$TREE/.git/series-hash"
say "wrote $n patches and the cover letter to kernel/patches/"
