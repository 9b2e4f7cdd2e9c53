#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# experiment-shell.sh - the job of 'make run' (scripts/run.sh): start cached
# in volatile mode on all addresses of the guest, so that the host reaches it
# through QEMU's port forward, then leave the user at the guest's shell.
#
# Settings come from run.env in the job folder (written by scripts/run.sh):
# CACHE_MB, IDLE_S, ORIGIN, MODE, HOST_PORT.
JOB=${JOB:-$(pwd)}
CACHE_MB=256 IDLE_S=10 ORIGIN="size=4000,cost=2000,seed=7" MODE=volatile HOST_PORT=?
[ -f "$JOB/run.env" ] && . "$JOB/run.env"

if ! command -v cached >/dev/null; then
	echo "experiment-shell: cached is not in this image (rebuild it: make image)"
	exit 1
fi
cached -u root -p 11211 -l 0.0.0.0 -m "$CACHE_MB" -t 2 --mode "$MODE" \
	--idle "$IDLE_S" --origin "gen:$ORIGIN" --verify >/tmp/cached.log 2>&1 &
echo $! >/run/cached.pid
sleep 1
# 'stats' for the shell: the root file system is read-only, so the helper
# lives in /tmp and the login shell finds it through /root/.profile (a
# tmpfs over the read-only /root).
mkdir -p /tmp/bin
cat >/tmp/bin/stats <<'EOS'
#!/bin/sh
# stats [PATTERN]: the daemon's stats, optionally only the lines matching PATTERN
printf 'stats\r\nquit\r\n' | nc 127.0.0.1 11211 | tr -d '\r' | grep -E "${1:-.}"
EOS
chmod +x /tmp/bin/stats
mount -t tmpfs -o size=1m,mode=700 tmpfs /root 2>/dev/null
echo 'export PATH=$PATH:/tmp/bin' >/root/.profile
cat <<EOM

  cached: --mode $MODE -m $CACHE_MB --idle $IDLE_S --origin gen:$ORIGIN
  guest port 11211, reachable from the host at 127.0.0.1:$HOST_PORT
  volatile ranges in this kernel: $(grep -q '^Volatile:' /proc/meminfo && echo yes || echo NO)

  try:  stats 'bytes|volatile|purged|rebuild|hits|misses'
        grep -E 'MemAvailable|Shmem|Volatile' /proc/meminfo
        grep -E 'volatile_purged|oom_kill' /proc/vmstat
        stress-ng --vm 2 --vm-bytes 300M --vm-keep --no-madvise --timeout 30s
  (stats is /tmp/bin/stats; the daemon logs to /tmp/cached.log)
EOM
