#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# kernel-tree.sh - make build/linux: Debian's linux-source as a git repository
# with one commit per patch of kernel/patches/, on branch "volatile".
#
# usage: scripts/kernel-tree.sh
#
# The pristine tree is tagged "base".  The series is applied as commits
# without a work tree and then checked out in build/linux, so that files the
# series does not change keep their timestamps and a rebuild after editing one
# patch recompiles only what that patch touches.  The applied series is
# remembered by its hash; an unchanged series is not applied again.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 64; }

TARBALL=/usr/src/linux-source-$KERNEL_VERSION.tar.xz
TREE=$BUILD/linux
PATCHES=$ROOT/kernel/patches
LOG=$BUILD/logs/kernel-tree.log
mkdir -p "$BUILD/logs"

[ -f "$TARBALL" ] || die "missing $TARBALL (run: make deps)"

git_k() { git -C "$TREE" -c user.name=build -c user.email=build@localhost "$@"; }

# The pristine tree is also kept as a bare repository outside the clone,
# keyed by the tarball's size and time, so that a fresh clone on a machine
# that built before clones it (hard links, seconds) instead of extracting
# and committing 75,000 files again.
BASE_CACHE=$(dirname "$CCACHE_DIR")/linux-$KERNEL_VERSION-$(stat -c %s-%Y "$TARBALL").git

if [ ! -d "$TREE/.git" ]; then
	rm -rf "$TREE.tmp"
	if [ -d "$BASE_CACHE" ]; then
		say "cloning the pristine tree from $BASE_CACHE"
		{ git clone -q --no-checkout "$BASE_CACHE" "$TREE.tmp" &&
			git -C "$TREE.tmp" checkout -q -B volatile base; } >"$LOG" 2>&1 ||
			die "cannot clone $BASE_CACHE" "$LOG"
	else
		say "extracting $(basename "$TARBALL")"
		mkdir -p "$TREE.tmp"
		tar -xJf "$TARBALL" -C "$TREE.tmp" --strip-components=1 ||
			die "cannot extract $TARBALL"
		say "making the base commit"
		(
			cd "$TREE.tmp"
			git init -q -b volatile
			# Debian's top-level .gitignore ignores everything at
			# the top level, hence -f.
			git add -A -f
			git -c user.name=build -c user.email=build@localhost \
				commit -q -m "Linux $KERNEL_VERSION (Debian linux-source-$KERNEL_VERSION)"
			git tag base
		) >"$LOG" 2>&1 || die "cannot make the base commit" "$LOG"
		mkdir -p "$(dirname "$BASE_CACHE")"
		rm -rf "$BASE_CACHE.tmp"
		{ git init -q --bare "$BASE_CACHE.tmp" &&
			git -C "$TREE.tmp" push -q "$BASE_CACHE.tmp" \
				refs/tags/base:refs/tags/base; } >>"$LOG" 2>&1 &&
			mv "$BASE_CACHE.tmp" "$BASE_CACHE" || rm -rf "$BASE_CACHE.tmp"
	fi
	mv "$TREE.tmp" "$TREE"
fi

series=$(series_patches)
hash=$(series_hash)
stamp=$TREE/.git/series-hash
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ]; then
	say "kernel tree up to date ($(echo "$series" | grep -c . || true) patches)"
	exit 0
fi

if [ -n "$(git_k status --porcelain --untracked-files=no)" ]; then
	die "build/linux has uncommitted changes: commit them and run 'make kernel-export', or discard them"
fi

# Apply the series to a private index, not a work tree: commit by commit,
# like 'git am', and only then check out the result, which rewrites just
# the files that differ.
idx=$TREE/.git/series-index
mail=$(mktemp -d)
trap 'rm -rf "$mail"' EXIT
head=$(git_k rev-parse base)
GIT_INDEX_FILE=$idx git_k read-tree base
n=0
for p in $series; do
	git_k mailinfo "$mail/msg" "$mail/patch" <"$p" >"$mail/info" ||
		die "not a patch mail: kernel/patches/$(basename "$p")"
	if ! GIT_INDEX_FILE=$idx git_k apply --cached "$mail/patch" >"$LOG" 2>&1; then
		die "patch does not apply: kernel/patches/$(basename "$p")" "$LOG"
	fi
	field() { sed -n "s/^$1: //p" "$mail/info" | head -n 1; }
	{ field Subject; echo; cat "$mail/msg"; } >"$mail/message"
	tree=$(GIT_INDEX_FILE=$idx git_k write-tree)
	head=$(GIT_AUTHOR_NAME=$(field Author) GIT_AUTHOR_EMAIL=$(field Email) \
		GIT_AUTHOR_DATE=$(field Date) \
		git_k commit-tree "$tree" -p "$head" -F "$mail/message")
	n=$((n + 1))
done
rm -f "$idx"
git_k checkout -q -f -B volatile "$head"
if [ -f "$ROOT/kernel/cover-letter.txt" ]; then
	git_k config branch.volatile.description "$(cat "$ROOT/kernel/cover-letter.txt")"
fi
echo "$hash" >"$stamp"
say "applied $n patches to build/linux"
