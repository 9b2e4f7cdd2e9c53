#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# test-check-docs.sh - tests of scripts/check-docs.py on small git
# repositories of its own: a good one passes, and a copy of it with one
# thing broken fails, naming it: a path, a linked file or a glob removed,
# a commit that does not exist, a make target removed from the top
# Makefile or from a component's, a source file without its SPDX line (or
# with it too low); --add-spdx mends that file.  The good repository also
# holds what must not count: hex figures and hashes that are not commits,
# a package list with 'make' in it, a ratio of two programs written as a
# path, a build output git ignores, a path of the Linux tree.
#
# usage: scripts/test-check-docs.sh
# One TAP line per assertion (image/guest/tap.sh), then "N passed,
# N failed, N skipped"; exit status 1 on any failure.  A few seconds.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/lib.sh"

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 64; }
CHECK=$ROOT/scripts/check-docs.py
TMP=$(mktemp -d /tmp/check-docs-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export GIT_AUTHOR_NAME=test GIT_AUTHOR_EMAIL=test@example.org
export GIT_COMMITTER_NAME=test GIT_COMMITTER_EMAIL=test@example.org

# good DIR: a repository that passes every check.
good() {
	local d=$1 c1
	mkdir -p "$d/scripts" "$d/cached" "$d/docs/img" "$d/image/guest"
	git -C "$d" init -q
	printf '/build/\n/cached/build-asan/\n' >"$d/.gitignore"
	cat >"$d/Makefile" <<'EOF'
# SPDX-License-Identifier: GPL-2.0-only
.PHONY: demo check \
	publish
demo:
	@scripts/demo.sh
check publish:
	@true
EOF
	cat >"$d/cached/Makefile" <<'EOF'
# SPDX-License-Identifier: GPL-2.0-only
bench: cached
	@true
cached: main.c
	cc -o $@ $<
EOF
	printf '// SPDX-License-Identifier: GPL-2.0-only\nint main(void) { return 0; }\n' >"$d/cached/main.c"
	printf '/* SPDX-License-Identifier: GPL-2.0 OR MIT */\n#define X 1\n' >"$d/cached/x.h"
	printf '#!/bin/sh\n# SPDX-License-Identifier: GPL-2.0-only\necho demo\n' >"$d/scripts/demo.sh"
	printf '#!/usr/bin/env python3\n# SPDX-License-Identifier: GPL-2.0-only\nprint(1)\n' >"$d/scripts/tool.py"
	printf '# SPDX-License-Identifier: GPL-2.0-only\nset -e\n' >"$d/image/guest/tap.sh"
	printf '#!/bin/sh\n# SPDX-License-Identifier: GPL-2.0-only\nexec /bin/sh\n' >"$d/image/init"
	printf 'not source: no licence line needed\n' >"$d/docs/img/notes.txt"
	chmod +x "$d/scripts/demo.sh" "$d/scripts/tool.py" "$d/image/init"
	git -C "$d" add -A
	git -C "$d" commit -q -m first
	c1=$(git -C "$d" rev-parse --short=7 HEAD)
	cat >"$d/README.md" <<EOF
# Demo

    apt-get update && apt-get install -y make git
    make demo     # the demo
    nice -n 10 make check

\`make publish\` after \`make demo\`; see [the guide](docs/guide.md) and
\`scripts/demo.sh\`.  Published at commit \`$c1\`.
EOF
	cat >"$d/docs/guide.md" <<EOF
# Guide

The first run was at $c1 (commit $c1), and
[the tool](../scripts/tool.py) wrote it; scripts/*.sh are the commands.
The guest runs image/init and image/guest/tap.sh.

Not commits: a sha256 94cabc6119c94c73, 0x7fabc12 and 1e10000 keys; the
ratio loadgen/cached and **loadgen/memcaslap**; \`gcc make libevent-dev\`
are packages.  Build outputs such as cached/build-asan/ are ignored, and
the tree's own \`scripts/checkpatch.pl\` is Linux's.  \`make -C DIR check\`
is a pattern.
EOF
	cat >"$d/docs/cached.md" <<'EOF'
# cached

    make -C cached bench
    cd cached && make bench

`make bench` runs here; `make -C cached cached` builds it.
EOF
	git -C "$d" add -A
	git -C "$d" commit -q -m docs
}

# run DIR: the checker on DIR; its output in $out, its status in $rc.
run() {
	rc=0
	out=$(python3 "$CHECK" --root "$1" 2>&1) || rc=$?
}

# fails NAME DIR PATTERN: the checker fails on DIR with a "not ok" line
# matching PATTERN.
fails() {
	local name=$1 d=$2 pat=$3
	run "$d"
	if [ "$rc" -ne 0 ] && grep -qE "^not ok [0-9]+ - .*$pat" <<<"$out" &&
		tail -n 1 <<<"$out" | grep -qE '^[0-9]+ passed, [1-9][0-9]* failed'; then
		ok "$name"
	else
		not_ok "$name  # status $rc, no failure matching '$pat': $(grep -E '^not ok|passed' <<<"$out" | head -n 5 | tr '\n' ' ')"
	fi
}

# variant NAME: a fresh copy of the good repository in $v.
variant() {
	v=$TMP/$1
	cp -a "$TMP/good" "$v"
}

good "$TMP/good"
run "$TMP/good"
if [ "$rc" -eq 0 ] && tail -n 1 <<<"$out" | grep -qE '^[1-9][0-9]* passed, 0 failed'; then
	ok "a good repository passes ($(tail -n 1 <<<"$out"))"
else
	not_ok "a good repository passes  # status $rc: $(grep -E '^not ok|passed' <<<"$out" | head -n 8 | tr '\n' ' ')"
fi
verbose=$(python3 "$CHECK" --root "$TMP/good" -v 2>&1)
for want in "\(b\) README\.md:[0-9]+: commit [0-9a-f]{7}$" "\(b\) docs/guide\.md:3: commit [0-9a-f]{7}$" \
	"\(c\) README\.md:[0-9]+: make demo$" "\(c\) README\.md:[0-9]+: make check$" \
	"\(c\) docs/cached\.md:[0-9]+: make -C cached bench$" "\(c\) docs/cached\.md:[0-9]+: make bench$" \
	"\(c\) docs/cached\.md:[0-9]+: make -C cached cached$" \
	"\(d\) docs/guide\.md:[0-9]+: scripts/tool\.py$" "\(d\) docs/guide\.md:[0-9]+: scripts/\*\.sh$" \
	"\(d\) README\.md:[0-9]+: docs/guide\.md$" "\(a\) cached/x\.h$" "\(a\) image/init$"; do
	if grep -qE "^ok [0-9]+ - $want" <<<"$verbose"; then
		ok "checked: $want"
	else
		not_ok "checked: $want  # not among the passes"
	fi
done
run "$TMP/good"
if grep -qE '94cabc6|7fabc12|1e10000|memcaslap|loadgen/cached|libevent|build-asan|checkpatch|DIR' <<<"$out"; then
	not_ok "no false alarm  # $(grep -E '^not ok' <<<"$out" | head -n 3 | tr '\n' ' ')"
else
	ok "no false alarm on hashes, figures, pairs of programs, packages, build outputs, Linux paths, patterns"
fi

variant path
git -C "$v" rm -q scripts/tool.py
git -C "$v" commit -q -m "remove the tool"
fails "a linked file removed fails" "$v" "\(d\) docs/guide\.md:[0-9]+: scripts/tool\.py"

variant named
git -C "$v" mv image/guest/tap.sh image/guest/tap2.sh
fails "a named path moved fails" "$v" "\(d\) docs/guide\.md:5: image/guest/tap\.sh"

variant glob
rm "$v/scripts/demo.sh"
fails "a glob matching nothing fails" "$v" "\(d\) docs/guide\.md:[0-9]+: scripts/\*\.sh"

variant commit
printf '\nFixed in commit 1234abc.\n' >>"$v/docs/guide.md"
fails "a commit that does not exist fails" "$v" "\(b\) docs/guide\.md:[0-9]+: commit 1234abc"

variant bare
printf '\nMeasured at deadbe7 on two cores.\n' >>"$v/README.md"
fails "a hash in passing that is no commit fails" "$v" "\(b\) README\.md:[0-9]+: commit deadbe7"

variant target
sed -i 's/^check publish:/check:/; s/publish$/ /' "$v/Makefile"
fails "a target removed from the Makefile fails" "$v" "\(c\) README\.md:[0-9]+: make publish"

variant component
sed -i 's/^bench: cached/benchmark: cached/' "$v/cached/Makefile"
fails "a target removed from a component's Makefile fails" "$v" "\(c\) docs/cached\.md:[0-9]+: make -C cached bench"

variant nomakefile
git -C "$v" rm -q cached/Makefile
fails "make -C of a folder without a Makefile fails" "$v" "\(c\) docs/cached\.md:[0-9]+: make -C cached"

variant spdx
printf '#!/bin/sh\necho new\n' >"$v/scripts/new.sh"
chmod +x "$v/scripts/new.sh"
fails "a new script without an SPDX line fails" "$v" "\(a\) scripts/new\.sh"
added=$(python3 "$CHECK" --root "$v" --add-spdx "$v/scripts")
result "--add-spdx names the file it mended" "$([ "$added" = scripts/new.sh ]; echo $?)" "printed: $added"
result "--add-spdx puts the line after the #! line" \
	"$([ "$(sed -n 2p "$v/scripts/new.sh")" = "# SPDX-License-Identifier: GPL-2.0-only" ] &&
		[ "$(sed -n 1p "$v/scripts/new.sh")" = "#!/bin/sh" ] && [ -x "$v/scripts/new.sh" ]; echo $?)"
run "$v"
result "after --add-spdx the repository passes" "$rc" "$(grep -E '^not ok' <<<"$out" | head -n 3 | tr '\n' ' ')"

variant spdxc
printf 'int f(void);\n' >"$v/cached/y.h"
printf 'int f(void) { return 1; }\n' >"$v/cached/y.c"
python3 "$CHECK" --root "$v" --add-spdx "$v/cached" >/dev/null
result "--add-spdx writes C's comment syntax" \
	"$([ "$(head -n 1 "$v/cached/y.h")" = "/* SPDX-License-Identifier: GPL-2.0-only */" ] &&
		[ "$(head -n 1 "$v/cached/y.c")" = "// SPDX-License-Identifier: GPL-2.0-only" ]; echo $?)"

variant low
sed -i '2d' "$v/scripts/tool.py"
sed -i '3i # SPDX-License-Identifier: GPL-2.0-only' "$v/scripts/tool.py"
fails "an SPDX line below the top fails" "$v" "\(a\) scripts/tool\.py"

variant licence
sed -i 's/GPL-2.0-only/Proprietary/' "$v/scripts/demo.sh"
fails "a licence not the project's fails" "$v" "\(a\) scripts/demo\.sh"

check_totals
