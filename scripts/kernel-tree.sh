#!/usr/bin/env bash
# kernel-tree.sh - make build/linux: Debian's linux-source as a git repository
# with one commit per patch of kernel/patches/, on branch "volatile".
#
# usage: scripts/kernel-tree.sh
#
# The pristine tree is tagged "base".  The series is applied in a second work
# tree (build/linux-am) and then checked out in build/linux, so that files the
# series does not change keep their timestamps and a rebuild after editing one
# patch recompiles only what that patch touches.  The applied series is
# remembered by its hash; an unchanged series is not applied again.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 64; }

TARBALL=/usr/src/linux-source-$KERNEL_VERSION.tar.xz
TREE=$BUILD/linux
AM=$BUILD/linux-am
PATCHES=$ROOT/kernel/patches
LOG=$BUILD/logs/kernel-tree.log
mkdir -p "$BUILD/logs"

[ -f "$TARBALL" ] || die "missing $TARBALL (run: make deps)"

git_k() { git -C "$TREE" -c user.name=build -c user.email=build@localhost "$@"; }

if [ ! -d "$TREE/.git" ]; then
	say "extracting $(basename "$TARBALL")"
	rm -rf "$TREE.tmp"
	mkdir -p "$TREE.tmp"
	tar -xJf "$TARBALL" -C "$TREE.tmp" --strip-components=1 ||
		die "cannot extract $TARBALL"
	say "making the base commit"
	(
		cd "$TREE.tmp"
		git init -q -b volatile
		# Debian's top-level .gitignore ignores everything at the top
		# level, hence -f.
		git add -A -f
		git -c user.name=build -c user.email=build@localhost \
			commit -q -m "Linux $KERNEL_VERSION (Debian linux-source-$KERNEL_VERSION)"
		git tag base
	) >"$LOG" 2>&1 || die "cannot make the base commit" "$LOG"
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

if [ ! -d "$AM" ]; then
	git_k worktree add -q --detach "$AM" base >"$LOG" 2>&1 ||
		die "cannot make the work tree $AM" "$LOG"
fi
git -C "$AM" am --abort >/dev/null 2>&1 || true
git -C "$AM" checkout -q -f --detach base
n=0
for p in $series; do
	if ! git -C "$AM" -c user.name=build -c user.email=build@localhost \
		am -q --keep-cr "$p" >"$LOG" 2>&1; then
		git -C "$AM" am --abort >/dev/null 2>&1 || true
		die "patch does not apply: kernel/patches/$(basename "$p")" "$LOG"
	fi
	n=$((n + 1))
done
head=$(git -C "$AM" rev-parse HEAD)
git_k checkout -q -f -B volatile "$head"
if [ -f "$ROOT/kernel/cover-letter.txt" ]; then
	git_k config branch.volatile.description "$(cat "$ROOT/kernel/cover-letter.txt")"
fi
echo "$hash" >"$stamp"
say "applied $n patches to build/linux"
