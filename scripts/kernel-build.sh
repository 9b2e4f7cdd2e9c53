#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# kernel-build.sh - configure and build the appliance kernel from build/linux.
#
# usage: scripts/kernel-build.sh [normal|debug]
#
# normal: tinyconfig + kernel/configs/{base,volatile}.config -> build/bzImage
# debug:  the same + kernel/configs/debug.config            -> build/bzImage-debug
# Each flavour has its own output folder (build/kbuild-FLAVOUR), so both stay
# warm; the compiler runs under ccache with its cache outside the clone.
# The configuration is redone only when a fragment changed, and every option
# a fragment asks for is checked in the result: an option that Kconfig
# dropped fails the build instead of silently vanishing.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

flavour=${1:-normal}
case $flavour in
normal) frags="base volatile"; out=$BUILD/bzImage ;;
debug) frags="base volatile debug"; out=$BUILD/bzImage-debug ;;
*) echo "usage: $0 [normal|debug]" >&2; exit 64 ;;
esac

TREE=$BUILD/linux
OBJ=$BUILD/kbuild-$flavour
LOG=$BUILD/logs/kernel-$flavour.log
mkdir -p "$OBJ" "$BUILD/logs" "$CCACHE_DIR"
command -v ccache >/dev/null || die "ccache is missing (run: make deps)"

frag=$OBJ/fragment.config
for f in $frags; do
	cat "$ROOT/kernel/configs/$f.config"
done >"$frag.new"
kernel_make "$TREE" "$OBJ"

if ! cmp -s "$frag.new" "$frag" || [ ! -f "$OBJ/.config" ]; then
	say "configuring the $flavour kernel (tinyconfig + $frags)"
	kernel_configure "$frag.new" >"$LOG" 2>&1 || die "kernel configuration failed" "$LOG"
	missing=""
	while IFS= read -r line; do
		case $line in
		CONFIG_*=n) sym=${line%%=*}
			grep -q "^$sym=" "$OBJ/.config" && missing="$missing $sym" ;;
		CONFIG_*=*) grep -qxF "$line" "$OBJ/.config" || missing="$missing ${line%%=*}" ;;
		esac
	done <"$frag.new"
	[ -z "$missing" ] || die "kernel config dropped:$missing (a dependency is missing, or the series is not applied)" "$LOG"
	mv "$frag.new" "$frag"
else
	rm -f "$frag.new"
fi

say "building the $flavour kernel (log: ${LOG#"$ROOT"/})"
run_logged "$LOG" "${KMAKE[@]}" bzImage || die "kernel build failed" "$LOG"
cp "$OBJ/arch/x86/boot/bzImage" "$out.tmp"
mv "$out.tmp" "$out"
cp "$OBJ/.config" "$out.config"
say "built ${out#"$ROOT"/} ($(du -k "$out" | cut -f1) KiB)"
