#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# image-build.sh - the guest's root file system as an ext4 disk image.
#
# usage: scripts/image-build.sh [OUTPUT]     (default build/rootfs.img)
#
# Contents: busybox-static, stress-ng and the shared libraries it needs, the
# project's daemon and load generator (their 'make install'), the kernel
# selftests of the series (built static from build/linux), image/init as
# /sbin/init and image/guest/ as /usr/share/appliance.
#
# The files live on a virtio disk, not in an initramfs: an initramfs is
# pinned RAM for the life of the guest, while files read from a disk are
# page cache that reclaim may drop.  The memory-pressure experiments measure
# what the cache and the kernel do with the guest's RAM, so the guest's own
# files must not take a fixed slice of it.  The image is made with
# 'mke2fs -d' (no loop mount, no root-only steps) and booted read-only, so
# several guests can share it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

OUTPUT=$(realpath -m "${1:-$BUILD/rootfs.img}")
[ $# -le 1 ] || { echo "usage: $0 [OUTPUT]" >&2; exit 64; }
STAGE=${OUTPUT%.img}.d
LOG=$BUILD/logs/image.log
mkdir -p "$BUILD/logs"
: >"$LOG"

say "staging the guest root file system"
rm -rf "$STAGE"
mkdir -p "$STAGE"/{bin,sbin,usr/bin,usr/sbin,usr/libexec/volatile,usr/share,etc,proc,sys,dev,tmp,run,root,mnt,var}
ln -s ../run "$STAGE/var/run"
ln -s ../tmp "$STAGE/var/tmp"

# busybox: the static binary and one link per applet.
cp /bin/busybox "$STAGE/bin/busybox"
for applet in $(/bin/busybox --list-full); do
	[ -e "$STAGE/$applet" ] || ln -s /bin/busybox "$STAGE/$applet"
done

# copy_with_libs BINARY DEST: a dynamic binary and the libraries it loads.
copy_with_libs() {
	local bin=$1 dest=$2 lib
	install -D -m 0755 "$bin" "$STAGE$dest"
	for lib in $(ldd "$bin" | grep -o '/[^ ]*' | sort -u); do
		[ -e "$STAGE$lib" ] || install -D -m 0755 "$(readlink -f "$lib")" "$STAGE$lib"
	done
}
command -v stress-ng >/dev/null || die "stress-ng is missing (run: make deps)"
copy_with_libs "$(command -v stress-ng)" /usr/bin/stress-ng

# The project's user-space parts, through their own install targets.
for part in cached loadgen; do
	if [ -f "$ROOT/$part/Makefile" ]; then
		make -C "$ROOT/$part" install DESTDIR="$STAGE.$part" >>"$LOG" 2>&1 ||
			die "cannot build $part for the image" "$LOG"
		for b in "$STAGE.$part"/usr/bin/*; do
			copy_with_libs "$b" "/usr/bin/$(basename "$b")"
		done
		rm -rf "$STAGE.$part"
	fi
done

# The series' selftests, static so that they need nothing from the image.
st=$BUILD/linux/tools/testing/selftests
for src in "$st"/vm/volatile_*.c; do
	[ -f "$src" ] || continue
	gcc -O2 -g -Wall -static -pthread -I "$st" -o \
		"$STAGE/usr/libexec/volatile/$(basename "$src" .c)" "$src" >>"$LOG" 2>&1 ||
		die "cannot build selftest $(basename "$src")" "$LOG"
done

install -m 0755 "$ROOT/image/init" "$STAGE/sbin/init"
cp -r "$ROOT/image/guest" "$STAGE/usr/share/appliance"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$STAGE/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$STAGE/etc/group"
printf 'PS1="appliance# "\nexport PATH=/usr/sbin:/usr/bin:/sbin:/bin\n' >"$STAGE/etc/profile"

kib=$(du -sk "$STAGE" | cut -f1)
size=$(((kib * 5 / 4 + 16384) / 1024))M
rm -f "$OUTPUT.tmp"
mke2fs -q -t ext4 -L appliance -d "$STAGE" -E root_owner=0:0 \
	"$OUTPUT.tmp" "$size" >>"$LOG" 2>&1 || die "mke2fs failed" "$LOG"
mv "$OUTPUT.tmp" "$OUTPUT"
say "built ${OUTPUT#"$ROOT"/} ($size, $((kib / 1024)) MiB of files)"
