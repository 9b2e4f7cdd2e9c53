#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Run memcached 1.6.18's own protocol tests (its t/*.t, from Debian's
# source package) against cached.  memcached's test library starts
# "$builddir/timedrun 600 $builddir/memcached-debug ARGS" and talks to it;
# this script makes a build directory whose memcached-debug runs cached
# with the same arguments translated (see translate below), copies the
# test files in unchanged and runs each one with perl.
#
# The tests are not part of this repository: they are fetched once with
# "apt-get source --download-only memcached" through a private apt
# configuration (nothing under /etc changes) and kept in $MEMCACHED_SRC_CACHE.
#
# usage: memcached-t.sh [-l] [TEST.t...]   (default: the files in PASSING)
#        -l   list every t/*.t with its result, including the known failures
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../../image/guest/tap.sh
. "$here/../../image/guest/tap.sh"
cached_bin=${CACHED_BIN:-$here/../cached}
cached_bin=$(cd "$(dirname "$cached_bin")" && pwd)/$(basename "$cached_bin")
version=1.6.18
cache=${MEMCACHED_SRC_CACHE:-/var/cache/volatile-appliance/memcached-src}
src=$cache/memcached-$version

# Text-protocol tests that do not depend on memcached's internals, and
# pass.  Why every other file is left out: docs/cached.md.
PASSING="binary-get.t binary-sasl.t bogus-commands.t cas.t chunked-items.t daemonize.t evictions.t
flags.t getandtouch.t getset.t idle-timeout.t incrdecr.t issue_104.t issue_108.t
issue_14.t issue_152.t issue_163.t issue_192.t issue_29.t issue_3.t issue_41.t
issue_42.t issue_61.t issue_68.t issue_70.t item_size_max.t
malicious-commands.t maxconns.t metaget.t multiversioning.t noreply.t
quit.t shutdown.t stats-detail.t strtol-testing.t touch.t unixsocket.t"

fetch() {
	[ -d "$src/t" ] && return 0
	local tmp
	tmp=$(mktemp -d)
	mkdir -p "$tmp/parts" "$tmp/lists/partial" "$tmp/cache/archives/partial"
	cat >"$tmp/parts/src.sources" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
	local opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$tmp/parts"
		-o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache"
		-o APT::Sandbox::User=root)
	apt-get "${opts[@]}" -q update >&2
	(cd "$tmp" && apt-get "${opts[@]}" -q source --download-only memcached >&2)
	mkdir -p "$cache"
	tar -xJf "$tmp/memcached_$version.orig.tar.xz" -C "$cache" "memcached-$version/t"
	rm -rf "$tmp"
	[ -d "$src/t" ] || { echo "memcached-t: no t/ in the source package" >&2; exit 1; }
}

list=false
if [ "${1:-}" = -l ]; then
	list=true
	shift
fi
fetch
work=$(mktemp -d)
trap 'reap; rm -rf "$work"' EXIT
cp -r "$src/t" "$work/t"

# memcached's arguments go to cached unchanged (cached takes memcached's
# flags and -o options, or refuses them), but for one: the test library
# gives every TCP server a UDP port (-U N) unless the file names one, and
# cached, which has no UDP, refuses that; -U 0 stays.
cat >"$work/memcached-debug" <<EOF
#!/bin/bash
args=()
while [ \$# -gt 0 ]; do
	case "\$1" in
	-U) [ "\$2" = 0 ] && args+=(-U 0); shift 2 ;;
	*) args+=("\$1"); shift ;;
	esac
done
exec "$cached_bin" "\${args[@]}"
EOF
# timedrun: the outer timeout bounds each test; the server's pid is noted
# so that a server a killed test leaves behind is stopped
cat >"$work/timedrun" <<'EOF'
#!/bin/sh
shift
echo $$ >>"$(dirname "$0")/pids"
exec "$@"
EOF
chmod +x "$work/memcached-debug" "$work/timedrun"

if [ $# -gt 0 ]; then
	files="$*"
elif $list; then
	files=$(cd "$work/t" && ls ./*.t | sed 's|^\./||')
else
	files=$PASSING
fi
# stop a server that a killed test left behind
reap() {
	[ -f "$work/pids" ] || return 0
	while read -r p; do
		if [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$cached_bin" ]; then
			kill "$p"
		fi
	done <"$work/pids"
	rm -f "$work/pids"
}

for f in $files; do
	log=$work/log
	if (cd "$work" && timeout "${T_TIMEOUT:-120}" perl "t/$f") >"$log" 2>&1; then
		why=$(grep -m1 '^1\.\.0 # SKIP' "$log" || true)
		if [ -z "$why" ]; then
			ok "$f"
		elif $list; then
			skip "$f" "${why#1..0 # SKIP}"
		else
			# a file that skips itself is not a pass
			not_ok "$f  # it skipped itself:${why#1..0 # SKIP}"
		fi
	else
		not_ok "$f"
		# (a file that dies before its first check prints none of these)
		$list || { grep -E '^not ok|^#' "$log" || true; } | head -20 | sed 's/^/    /'
	fi
	reap
done
check_totals
