#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# deps.sh - install the Debian packages the project needs, only those missing.
#
# usage: scripts/deps.sh
#
# Idempotent: a machine that has everything runs no apt-get at all.  Needs
# root for apt-get (the project's machines run as root).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 64; }

PACKAGES=(
	# kernel build
	"linux-source-$KERNEL_VERSION" gcc make bc flex bison libelf-dev libssl-dev
	cpio ccache kmod rsync git perl python3
	# checkpatch.pl (its spdxcheck.py)
	python3-ply python3-git
	# guest
	qemu-system-x86 busybox-static stress-ng e2fsprogs
	# user space: daemon, load generator, their tests and fuzzers
	pkg-config libevent-dev clang libclang-rt-14-dev
	memcached libmemcached-tools python3-pymemcache nutcracker
	# memcached's own t/*.t, from its Debian source package (tar -J)
	xz-utils
	# reports
	gnuplot-nox
)

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
[ "$(id -u)" -eq 0 ] || die "missing packages (${missing[*]}) and not root: run 'make deps' as root"
mkdir -p "$BUILD/logs"
LOG=$BUILD/logs/deps.log
say "installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
run_logged "$LOG" apt-get update || die "apt-get update failed" "$LOG"
run_logged "$LOG" apt-get install -y --no-install-recommends "${missing[@]}" ||
	die "apt-get install failed" "$LOG"
say "packages installed"
