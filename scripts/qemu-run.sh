#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# qemu-run.sh - the one QEMU runner: boot a kernel with the appliance image,
# run a job inside the guest, bring its results and exit status back.
#
# usage: scripts/qemu-run.sh [options] (--script FILE | -- COMMAND...)
#   --kernel PATH      kernel image (default build/bzImage)
#   --image PATH       root file system (default build/rootfs.img)
#   --mem MIB          guest RAM (default 512)
#   --cpus N           guest CPUs (default 2)
#   --nodes N          NUMA nodes, 1 or 2 (default 2): the RAM is split in
#                      halves, the CPUs too (with one CPU, node 1 has memory
#                      only)
#   --timeout SECONDS  watchdog: a guest still running then is killed and the
#                      run reported "hung" (default 600)
#   --name NAME        run directory build/runs/NAME-TIMESTAMP (default "run")
#   --run-dir DIR      use DIR as the run directory instead
#   --script FILE      the job: a shell script run in the guest as /run/job/run
#   --file PATH        copy PATH into the guest's job folder (repeatable)
#   --swap MIB         give the guest a swap disk of MIB (/dev/vdd, $SWAPDEV)
#   --hostfwd H:G      forward host TCP port H (loopback) to guest port G
#   --append ARGS      extra kernel command-line arguments
#   --icount           count instructions: the guest's clock advances 1 ns per
#                      guest instruction (TCG in one thread, one CPU; not
#                      with KVM)
#   --profile          as --icount, and count how often each guest kernel
#                      instruction ran, into RUNDIR/profile.txt (a QEMU TCG
#                      plugin, scripts/insn-profile.c; see scripts/profile.py)
#   --interactive      console on this terminal, a shell after the job
#   --quiet            print nothing but errors (default: progress, then the job's output)
#
# Inside the guest the job runs in /run/job with $OUT, a folder whose files
# come back to RUNDIR/out/.  Every run keeps RUNDIR/: kconfig, qemu-cmd,
# console.log, exit-status, warnings.txt, out/.
#
# Exit status: the job's status; 1 if the job passed but the kernel printed a
# warning (BUG, WARNING, KASAN, lockdep, UBSAN, kmemleak, panic); 124 when the
# guest hung; 125 when the guest ended without reporting a status.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '5,31p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 64; }

kernel=$BUILD/bzImage image=$BUILD/rootfs.img mem=512 cpus=2 cpus_set=0 nodes=2 timeout=600
name=run rundir="" script="" swap=0 hostfwd="" append="" interactive=0 quiet=0 icount=0 profile=0
files=()
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernel=$2; shift ;;
	--image) image=$2; shift ;;
	--mem) mem=$2; shift ;;
	--cpus) cpus=$2 cpus_set=1; shift ;;
	--nodes) nodes=$2; shift ;;
	--timeout) timeout=$2; shift ;;
	--name) name=$2; shift ;;
	--run-dir) rundir=$2; shift ;;
	--script) script=$2; shift ;;
	--file) files+=("$2"); shift ;;
	--swap) swap=$2; shift ;;
	--hostfwd) hostfwd=$2; shift ;;
	--append) append=$2; shift ;;
	--icount) icount=1 ;;
	--profile) icount=1 profile=1 ;;
	--interactive) interactive=1 ;;
	--quiet) quiet=1 ;;
	-h | --help) usage ;;
	--) shift; break ;;
	*) echo "qemu-run.sh: unknown option '$1'" >&2; usage ;;
	esac
	shift
done
[ -n "$script" ] || [ $# -gt 0 ] || [ "$interactive" = 1 ] || usage
for n in "$mem" "$cpus" "$timeout" "$swap" "$nodes"; do
	case $n in '' | *[!0-9]*) echo "qemu-run.sh: '$n' is not a number" >&2; exit 64 ;; esac
done
case $nodes in 1 | 2) ;; *) echo "qemu-run.sh: --nodes is 1 or 2, not $nodes" >&2; exit 64 ;; esac
# Under -icount the 6.1 guest hangs bringing up a second CPU ("x86:
# Booting SMP configuration"), so instructions are counted on one.
if [ "$icount" = 1 ]; then
	[ "$cpus_set" = 0 ] || [ "$cpus" = 1 ] ||
		die "--icount and --profile run the guest on one CPU, not $cpus"
	cpus=1
fi
[ -f "$kernel" ] || die "no kernel at $kernel (run: make kernel)"
[ -f "$image" ] || die "no image at $image (run: make image)"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 is missing (run: make deps)"

if [ -z "$rundir" ]; then
	rundir=$BUILD/runs/$name-$(date +%Y%m%d-%H%M%S)-$$
fi
mkdir -p "$rundir/job" "$rundir/out"
rundir=$(cd "$rundir" && pwd)

# The job: a tar archive on a raw disk, read by the guest's init.
if [ -n "$script" ]; then
	cp "$script" "$rundir/job/run"
elif [ $# -gt 0 ]; then
	printf '#!/bin/sh\n%s\n' "$(printf '%q ' "$@")" >"$rundir/job/run"
fi
for f in "${files[@]}"; do cp -r "$f" "$rundir/job/"; done
tar -cf "$rundir/job.tar" -C "$rundir/job" .
truncate -s 256M "$rundir/results.img"
[ -f "$kernel.config" ] && cp "$kernel.config" "$rundir/kconfig"

# accel: TCG unless a quick probe shows that KVM really runs a guest here
# (/dev/kvm can exist while guests hang); the probe's answer is kept.
accel() {
	local probe=$BUILD/.accel
	if [ -n "${QEMU_ACCEL:-}" ]; then
		echo "$QEMU_ACCEL"
		return
	fi
	if [ ! -f "$probe" ]; then
		echo tcg >"$probe"
		if [ -w /dev/kvm ] && timeout 15 qemu-system-x86_64 -enable-kvm \
			-nodefaults -display none -no-reboot -m 128 -kernel "$kernel" \
			-append "console=ttyS0 panic=-1 root=/dev/nonexistent" \
			-serial file:"$BUILD/.accel.log" >/dev/null 2>&1 &&
			grep -q 'Kernel panic' "$BUILD/.accel.log"; then
			echo kvm >"$probe"
		fi
	fi
	cat "$probe"
}
acc=$(accel)
# la57=off: 4-level paging, as on most machines.  With -cpu max the guest
# ran 5-level paging, and the debug kernel on one CPU then reported a KASAN
# wild-memory-access in rcu_is_watching() from an early boot interrupt.
[ "$acc" = kvm ] && accel_args=(-enable-kvm -cpu host) || accel_args=(-accel tcg,thread=multi -cpu max,la57=off)
# --icount: QEMU counts the instructions it executes and makes them the
# guest's time, one nanosecond each (-icount shift=0; sleep=off: an idle
# guest does not wait for the host's clock).  Its TSC then ticks once per
# instruction, and the guest is told the TSC runs at 1 GHz, so every time
# it measures, in nanoseconds, is a count of instructions: a figure free of
# the host's load and of how fast TCG runs each kind of instruction.
if [ "$icount" = 1 ]; then
	[ "$acc" != kvm ] || die "--icount needs TCG, and this host runs guests under KVM"
	accel_args=(-accel tcg,thread=single -icount shift=0,sleep=off -cpu max,la57=off)
fi
# --profile: every kernel instruction the guest runs bumps a counter of its
# own address; the plugin writes the counts out when QEMU exits.
if [ "$profile" = 1 ]; then
	plugin=$BUILD/insn-profile.so
	if [ ! -f "$plugin" ] || [ "$ROOT/scripts/insn-profile.c" -nt "$plugin" ]; then
		gcc -std=gnu11 -O2 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden \
			-o "$plugin.$$" "$ROOT/scripts/insn-profile.c" ||
			die "cannot build the profiling plugin scripts/insn-profile.c"
		mv "$plugin.$$" "$plugin"
	fi
	accel_args+=(-plugin "$plugin,out=$rundir/profile.txt")
fi

mode=job
[ "$interactive" = 1 ] && mode=shell
# no_timer_check: under TCG on a busy host the IO-APIC timer check can fail
# and panic the boot ("IO-APIC + timer doesn't work!").
#
# acpi=noirq: the guest takes its CPUs from ACPI, but PCI interrupts from
# the MP table as before.  QEMU's _PRT method loops over 128 entries in
# AML; on the debug kernel under TCG each evaluation ran into ACPICA's 30 s
# loop timeout (AE_AML_LOOP_TIMEOUT, "no GSI") and stalled RCU.
#
# The guest's clock.  Under TCG the guest reads the host's TSC, but a guest
# starved by a busy host can calibrate it at a fraction of its rate (seen:
# 108 MHz for 2.6 GHz), and then its clock, its sleeps and every rate in it
# run many times too fast.  The host's rate is handed over instead of
# measured, and tsc=reliable keeps the clocksource watchdog from switching
# to the HPET, whose every read is a trip into QEMU.
clock=""
if [ "$icount" = 1 ]; then
	clock="tsc_early_khz=1000000 tsc=reliable "
elif [ "$acc" != kvm ]; then
	khz=$(host_tsc_khz || true)
	[ -z "$khz" ] || clock="tsc_early_khz=$khz tsc=reliable "
fi
cmdline="console=ttyS0 root=/dev/vda ro rootfstype=ext4 init=/sbin/init panic=-1 no_timer_check acpi=noirq ${clock}appliance.mode=$mode $append"
# NUMA: two nodes, as on a two-socket host, so that reclaim, shrinkers and
# the memory cgroups' counters run per node as they do there.  QEMU 7.2
# takes a node's memory only from a backend object (-numa node,mem= is
# refused for current machine types).
# Each CPU is a socket of its own: QEMU otherwise puts all of them in one
# socket, whose shared cache then spans both nodes, and the guest warns
# ("llc-sibling CPU #0 is not on the same node", topology_sane()).
smp=$cpus
numa_args=()
if [ "$nodes" = 2 ]; then
	smp="$cpus,sockets=$cpus,cores=1,threads=1"
	half=$((mem / 2)) cpu_half=$(((cpus + 1) / 2))
	numa_args=(-object "memory-backend-ram,id=ram0,size=${half}M"
		-object "memory-backend-ram,id=ram1,size=$((mem - half))M"
		-numa "node,nodeid=0,memdev=ram0,cpus=0-$((cpu_half - 1))")
	if [ "$cpus" -gt 1 ]; then
		numa_args+=(-numa "node,nodeid=1,memdev=ram1,cpus=$cpu_half-$((cpus - 1))")
	else
		numa_args+=(-numa "node,nodeid=1,memdev=ram1")
	fi
fi
qemu=(qemu-system-x86_64 "${accel_args[@]}" -smp "$smp" -m "$mem" "${numa_args[@]}"
	-nodefaults -display none -no-reboot
	-kernel "$kernel" -append "$cmdline"
	-drive "file=$image,format=raw,if=virtio,readonly=on"
	-drive "file=$rundir/job.tar,format=raw,if=virtio,readonly=on"
	-drive "file=$rundir/results.img,format=raw,if=virtio")
if [ "$swap" -gt 0 ]; then
	truncate -s "${swap}M" "$rundir/swap.img"
	qemu+=(-drive "file=$rundir/swap.img,format=raw,if=virtio")
fi
if [ -n "$hostfwd" ]; then
	qemu+=(-nic "user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:${hostfwd%%:*}-:${hostfwd#*:}")
else
	qemu+=(-nic none)
fi

console=$rundir/console.log
if [ "$interactive" = 1 ]; then
	qemu+=(-serial mon:stdio)
	printf '%q ' "${qemu[@]}" >"$rundir/qemu-cmd"
	echo >>"$rundir/qemu-cmd"
	"${qemu[@]}" | tee "$console"
	exit 0
fi
qemu+=(-monitor none -serial "file:$console")
printf '%q ' "${qemu[@]}" >"$rundir/qemu-cmd"
echo >>"$rundir/qemu-cmd"

how=$acc
[ "$icount" = 0 ] || how="tcg -icount"
[ "$quiet" = 1 ] || say "booting $(basename "$kernel") ($how, ${mem} MiB, $cpus CPUs, $nodes NUMA nodes, watchdog ${timeout}s): ${rundir#"$ROOT"/}"
# A boot that never reaches init is booted once more.  Under TCG on a busy
# host a guest CPU can stop getting its timer interrupt in early boot: the
# debug kernel then printed RCU stall reports ("rcu_sched kthread timer
# wakeup didn't happen ... Possible timer handling issue on cpu=0") from
# 46 s on and never got past probing its disks, until the watchdog killed
# it 40 minutes later.  A kernel that hangs its boot every time still
# fails: the second boot has no retry.  The first console is kept.
boot_limit=${QEMU_BOOT_LIMIT:-300}
for attempt in 1 2; do
	: >"$console"
	rc=0
	timeout -k 5 "$timeout" "${qemu[@]}" >"$rundir/qemu.log" 2>&1 &
	qpid=$!
	booted=0
	for ((i = 0; i < boot_limit; i++)); do
		if grep -aq 'Freeing unused kernel' "$console"; then
			booted=1
			break
		fi
		kill -0 "$qpid" 2>/dev/null || break
		sleep 1
	done
	if [ "$booted" = 0 ] && [ "$attempt" = 1 ] && kill -0 "$qpid" 2>/dev/null; then
		kill "$qpid" 2>/dev/null || true
		wait "$qpid" 2>/dev/null || true
		cp "$console" "$rundir/console-boot-hang.log"
		echo "qemu-run: the guest did not reach init in ${boot_limit}s; booting it once more (first console: $rundir/console-boot-hang.log)" >&2
		continue
	fi
	wait "$qpid" || rc=$?
	break
done

# Kernel lines carry a printk timestamp; user-space output on the console
# does not, so it cannot fake or hide a kernel warning.
grep -aE '^\[ *[0-9]+\.[0-9]+\] .*(BUG:|WARNING:|UBSAN:|kernel BUG at|Kernel panic|Oops|general protection fault|possible (circular|recursive) locking|INFO: (trying to register|possible irq lock|inconsistent lock|task .* blocked)|suspected memory leak|unreferenced object|Call Trace:)' \
	"$console" >"$rundir/warnings.txt" || true

if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	echo hung >"$rundir/exit-status"
	echo "qemu-run: guest hung: no exit after ${timeout}s; last console lines:" >&2
	tail -n 20 "$console" | sed 's/^/  | /' >&2
	echo "  log: $console" >&2
	exit 124
fi
if [ "$rc" -ne 0 ]; then
	echo "qemu-run: qemu failed (status $rc); see $rundir/qemu.log" >&2
	sed 's/^/  | /' "$rundir/qemu.log" | tail -n 5 >&2
fi

tar -xf "$rundir/results.img" -C "$rundir/out" 2>/dev/null || true
status=$(cat "$rundir/out/exit-status" 2>/dev/null ||
	sed -n 's/^GUEST-EXIT: \([0-9]*\).*/\1/p' "$console" | tail -n 1)
if [ -z "$status" ]; then
	echo 125 >"$rundir/exit-status"
	echo "qemu-run: the guest ended without an exit status; last console lines:" >&2
	tail -n 20 "$console" | sed 's/^/  | /' >&2
	echo "  log: $console" >&2
	exit 125
fi
echo "$status" >"$rundir/exit-status"
if [ "$quiet" = 0 ] && [ -f "$rundir/out/job.log" ]; then
	cat "$rundir/out/job.log"
	say "guest job exited with status $status (run: ${rundir#"$ROOT"/})"
fi
if [ -s "$rundir/warnings.txt" ]; then
	echo "qemu-run: the kernel printed warnings ($rundir/warnings.txt):" >&2
	head -n 10 "$rundir/warnings.txt" | sed 's/^/  | /' >&2
	[ "$status" -ne 0 ] || status=1
fi
rm -f "$rundir/results.img" "$rundir/swap.img"
exit "$status"
