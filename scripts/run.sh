#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# run.sh - the appliance by hand ('make run'): boot the guest with a shell on
# this terminal, cached started in volatile mode, its port forwarded to a
# host port that is printed.  Drive it from the host (loadgen, memcaslap,
# pymemcache) while running stress-ng in the guest shell.  'reboot -f' in the
# guest (or Ctrl-A X) ends it.  See docs/walkthrough.md.
#
# usage: scripts/run.sh [--port HOSTPORT] [--mem MIB] [--cpus N]
#                       [--cache MB] [--idle S] [--mode MODE] [--origin GEN]
#   --port   host TCP port on 127.0.0.1 (default 11311, or PORT)
#   --mem    guest RAM in MiB (default 512)
#   --cache  cached -m (default 256); --idle: seconds before data goes
#            volatile (default 10); --mode volatile|pinned|psi (volatile);
#   --origin the gen origin's options (default size=4000,cost=2000,seed=7)
#   --image  guest image (default build/rootfs.img); --kernel: the kernel
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '9,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 64; }
port=${PORT:-11311} mem=512 cpus=2 cache=256 idle=10 mode=volatile
origin="size=4000,cost=2000,seed=7" image=$BUILD/rootfs.img kernel=$BUILD/bzImage
while [ $# -gt 0 ]; do
	case $1 in
	--port) port=$2; shift ;;
	--mem) mem=$2; shift ;;
	--cpus) cpus=$2; shift ;;
	--cache) cache=$2; shift ;;
	--idle) idle=$2; shift ;;
	--mode) mode=$2; shift ;;
	--origin) origin=$2; shift ;;
	--image) image=$2; shift ;;
	--kernel) kernel=$2; shift ;;
	-h | --help) usage ;;
	*) echo "run.sh: unknown option '$1'" >&2; usage ;;
	esac
	shift
done
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
	die "host port $port is in use; choose another with --port"
fi
dir=$BUILD/runs/appliance-$(date +%Y%m%d-%H%M%S)-$$
mkdir -p "$dir"
printf 'CACHE_MB=%s\nIDLE_S=%s\nORIGIN="%s"\nMODE=%s\nHOST_PORT=%s\n' \
	"$cache" "$idle" "$origin" "$mode" "$port" >"$dir/run.env"
say "booting the appliance (${mem} MiB, $cpus CPUs); cached ($mode) will be at 127.0.0.1:$port"
say "from another terminal, for example:"
echo "    loadgen/loadgen --server 127.0.0.1:$port --rate 300 --keys 60000 --dist zipf:0.99 \\"
echo "        --gen $origin --verify --warmup --interval 1 --duration 300"
say "in the guest: stress-ng, stats, /proc/meminfo; 'reboot -f' ends it (Ctrl-A X kills QEMU)"
exec "$ROOT/scripts/qemu-run.sh" --kernel "$kernel" --image "$image" --interactive --mem "$mem" --cpus "$cpus" \
	--hostfwd "$port:11211" --run-dir "$dir/guest" \
	--script "$ROOT/image/guest/experiment-shell.sh" --file "$dir/run.env"
