# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# common.sh - helpers shared by scripts/fleet.sh and scripts/test-fleet.sh:
# free loopback ports, the nutcracker configuration, the proxy's and the
# nodes' statistics.  Sourced, not run; needs bash, python3 and cached's
# tests/mcclient (built by 'make -C cached').

FLEET_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FLEET_ROOT=$(cd "$FLEET_DIR/../.." && pwd)
MCCLIENT=${MCCLIENT:-$FLEET_ROOT/cached/tests/mcclient}

# fleet_free_ports N: N distinct free TCP ports on 127.0.0.1, one a line.
# The sockets are held together while the kernel picks, so no port repeats.
fleet_free_ports() {
	python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
for s in socks:
    print(s.getsockname()[1])
PY
}

# fleet_conf OUT LISTEN TIMEOUT_MS RETRY_MS FAILURE_LIMIT SERVER...
# Writes the nutcracker pool "fleet" to OUT.  SERVER is HOST:PORT:NAME;
# every server has weight 1.  The name (not the address) is what ketama
# hashes, so a node keeps its keys when it moves to another address.
fleet_conf() {
	local out=$1 listen=$2 timeout=$3 retry=$4 failures=$5 s
	shift 5
	sed -e "s/@LISTEN@/$listen/" -e "s/@TIMEOUT@/$timeout/" \
		-e "s/@RETRY@/$retry/" -e "s/@FAILURES@/$failures/" \
		"$FLEET_DIR/nutcracker.yml.in" >"$out"
	for s in "$@"; do
		# HOST:PORT:NAME -> "   - HOST:PORT:1 NAME"
		printf '   - %s:1 %s\n' "${s%:*}" "${s##*:}" >>"$out"
	done
}

# fleet_nutcracker CONF STATSPORT DIR: start nutcracker in the background,
# its pid file and log in DIR; stats aggregated every 500 ms.  Prints the pid.
fleet_nutcracker() {
	local conf=$1 sport=$2 dir=$3
	nutcracker -t -c "$conf" >"$dir/nutcracker-test.log" 2>&1 || {
		cat "$dir/nutcracker-test.log" >&2
		return 1
	}
	nutcracker -c "$conf" -s "$sport" -a 127.0.0.1 -i 500 -p "$dir/nutcracker.pid" \
		-o "$dir/nutcracker.log" -v 5 </dev/null >"$dir/nutcracker.out" 2>&1 &
	echo $!
}

# fleet_proxy_stats STATSPORT: nutcracker's statistics as one JSON document.
fleet_proxy_stats() {
	python3 - "$1" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
sys.stdout.write(data.decode())
PY
}

# fleet_proxy_field STATSPORT PATH: one value of the proxy's statistics,
# PATH like "fleet.server_ejects" or "fleet.node2.server_ejected_at".
fleet_proxy_field() {
	fleet_proxy_stats "$1" | python3 -c '
import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v = v[k]
print(v)' "$2"
}

# fleet_stat HOST PORT NAME: one "stats" value of a node (not through the
# proxy: twemproxy does not forward "stats").
fleet_stat() {
	"$MCCLIENT" -H "$1" -p "$2" stat "$3"
}

# fleet_stats HOST PORT: every "stats" value of a node as "NAME VALUE" lines.
fleet_stats() {
	"$MCCLIENT" -H "$1" -p "$2" stats | sed -n 's/^STAT //p'
}

# fleet_ping HOST PORT: true when a memcached-protocol server answers
# "version" within 2 s.
fleet_ping() {
	# shellcheck disable=SC2016 # expanded by the inner bash
	timeout 2 bash -c '
		exec 3<>"/dev/tcp/$0/$1" || exit 1
		printf "version\r\n" >&3
		read -r line <&3 && [[ $line == VERSION* ]]' "$1" "$2" 2>/dev/null
}

# fleet_wait HOST PORT SECONDS: poll fleet_ping until it answers.
fleet_wait() {
	local end=$((SECONDS + $3))
	while [ $SECONDS -lt "$end" ]; do
		fleet_ping "$1" "$2" && return 0
		sleep 0.2
	done
	return 1
}

# fleet_set HOST PORT KEY VALUE: store a short value directly on one node
# (the fleet's orders to its guests travel this way); true on STORED.
fleet_set() {
	# shellcheck disable=SC2016 # expanded by the inner bash
	timeout 3 bash -c '
		exec 3<>"/dev/tcp/$0/$1" || exit 1
		printf "set %s 0 0 %d\r\n%s\r\n" "$2" "${#3}" "$3" >&3
		read -r line <&3 && [[ $line == STORED* ]]' "$1" "$2" "$3" "$4" 2>/dev/null
}
