#!/usr/bin/env bash
# demo.sh - the pressure experiment: every mode of a scenario, N runs each,
# one QEMU guest per run and mode, then the report.
#
# usage: scripts/demo.sh [--scenario FILE] [--runs N] [--out DIR]
#                        [--kernel PATH] [--image PATH] [--report-only]
#   --scenario FILE  the scenario (default scripts/scenarios/default.conf)
#   --runs N         runs per mode (default: the scenario's RUNS, else 3)
#   --out DIR        where the report goes (default build/report); the
#                    guests' run folders are kept in DIR/runs/
#   --kernel PATH    kernel (default build/bzImage)
#   --image PATH     guest image (default build/rootfs.img)
#   --report-only    do not boot anything: rebuild the report from DIR/runs/
#
# Modes are interleaved (run 1: pinned, psi, volatile, oracle; run 2: ...)
# so that drift of the host over time hits every mode alike.  A guest that
# fails or hangs is reported and left out; the others still make the report.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '4,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 64; }

scenario=$ROOT/scripts/scenarios/default.conf
runs="" out=$BUILD/report kernel=$BUILD/bzImage image=$BUILD/rootfs.img report_only=0
while [ $# -gt 0 ]; do
	case $1 in
	--scenario) scenario=$2; shift ;;
	--runs) runs=$2; shift ;;
	--out) out=$2; shift ;;
	--kernel) kernel=$2; shift ;;
	--image) image=$2; shift ;;
	--report-only) report_only=1 ;;
	-h | --help) usage ;;
	*) echo "demo.sh: unknown option '$1'" >&2; usage ;;
	esac
	shift
done
[ -f "$scenario" ] || die "no scenario file $scenario"
# shellcheck disable=SC1090
. "$scenario"
runs=${runs:-${RUNS:-3}}
case $runs in '' | *[!0-9]* | 0) die "--runs wants a positive number, not '$runs'" ;; esac
MODES=${MODES:-pinned psi volatile oracle}
mkdir -p "$out"
out=$(cd "$out" && pwd)

if [ "$report_only" = 0 ]; then
	[ -f "$kernel" ] || die "no kernel at $kernel (run: make kernel)"
	[ -f "$image" ] || die "no image at $image (run: make image)"
	command -v gnuplot >/dev/null || die "gnuplot is missing (run: make deps)"
	rm -rf "$out/runs"
	mkdir -p "$out/runs"
	cp "$scenario" "$out/runs/scenario.conf"
	# Every guest boots the same kernel and image, even if build/ is rebuilt
	# while the experiment runs: they are copied first.
	cp "$kernel" "$out/runs/bzImage"
	[ -f "$kernel.config" ] && cp "$kernel.config" "$out/runs/bzImage.config"
	cp --sparse=always "$image" "$out/runs/rootfs.img"
	kernel_src=$kernel image_src=$image
	kernel=$out/runs/bzImage image=$out/runs/rootfs.img
	{
		echo "kernel_path=${kernel_src#"$ROOT"/}"
		echo "image_path=${image_src#"$ROOT"/}"
		echo "kernel_sha256=$(sha256sum "$kernel" | cut -c1-16)"
		if [ -f "$kernel.config" ]; then
			echo "kernel_config_sha256=$(sha256sum "$kernel.config" | cut -c1-16)"
		fi
		echo "series_hash=$(series_hash 2>/dev/null || echo none)"
		echo "series_patches=$(series_patches 2>/dev/null | wc -l)"
		echo "image_sha256=$(sha256sum "$image" | cut -c1-16)"
		echo "host_cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
		echo "host_cpus=$(nproc)"
		echo "host_kernel=$(uname -r)"
		echo "qemu_version=$(qemu-system-x86_64 --version | head -n 1)"
		echo "accel=$(cat "$BUILD/.accel" 2>/dev/null || echo tcg)"
		echo "commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
		echo "runs=$runs"
		echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	} >"$out/runs/host.env"

	# The watchdog: the phases, stress-ng's wind-down (up to 30 s), a fill
	# at a few hundred sets a second, boot; three times that, because a busy
	# host can slow a TCG guest down that much.
	budget=$((3 * (WARMUP_S + STEADY_S + PRESSURE_S + RECOVERY_S + 30 + KEYS / 500 + 30) + 120))
	n=$(($(wc -w <<<"$MODES") * runs))
	say "scenario $NAME: $DESCRIPTION"
	say "$runs run(s) x modes ($MODES): $n guests of ${MEM_MB} MiB, about $((WARMUP_S + STEADY_S + PRESSURE_S + RECOVERY_S + 30)) s each"
	i=0 failed=0
	for run in $(seq 1 "$runs"); do
		for mode in $MODES; do
			i=$((i + 1))
			dir=$out/runs/$mode-$run
			mkdir -p "$dir"
			printf 'MODE=%s\nRUN=%s\n' "$mode" "$run" >"$dir/mode.env"
			say "guest $i/$n: run $run, mode $mode"
			rc=0
			"$ROOT/scripts/qemu-run.sh" --quiet --kernel "$kernel" --image "$image" \
				--mem "$MEM_MB" --cpus "$CPUS" --timeout "$budget" \
				--script "$ROOT/image/guest/experiment.sh" \
				--file "$out/runs/scenario.conf" --file "$dir/mode.env" \
				--run-dir "$dir/guest" >"$dir/runner.log" 2>&1 &
			qpid=$!
			# Follow the guest's phase lines on the console while it runs.
			seen=0
			while kill -0 "$qpid" 2>/dev/null; do
				sleep 2
				if [ -f "$dir/guest/console.log" ]; then
					lines=$(grep -a -c "$mode/$run: " "$dir/guest/console.log" || true)
					if [ "$lines" -gt "$seen" ]; then
						grep -a "$mode/$run: " "$dir/guest/console.log" |
							sed -n "$((seen + 1)),${lines}p" | sed 's/^\[[0-9.]*\] /  /' |
							while IFS= read -r l; do say "$l"; done
						seen=$lines
					fi
				fi
			done
			wait "$qpid" || rc=$?
			job=$(cat "$dir/guest/out/exit-status" 2>/dev/null || echo none)
			if [ "$rc" -ne 0 ] && [ "$job" = 0 ]; then
				# The job ran; the runner flags the kernel's log.  OOM
				# reports carry a call trace: the report tells them apart
				# from real warnings.
				say "  the kernel logged $(grep -c . "$dir/guest/warnings.txt" 2>/dev/null || echo 0) warning line(s), $(grep -ac 'invoked oom-killer' "$dir/guest/console.log" || true) OOM report(s)"
			elif [ "$rc" -ne 0 ]; then
				failed=$((failed + 1))
				say "  guest failed (status $rc): $(tail -n 3 "$dir/runner.log" | tr '\n' ' ')"
			fi
		done
	done
	[ "$failed" -eq 0 ] || say "$failed guest(s) failed; they are left out of the report"
	rm -f "$out/runs/rootfs.img"
fi

say "writing the report"
# Debian's python3 (stdlib only), whatever else is first on PATH.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
"$PY" "$ROOT/scripts/report.py" --runs-dir "$out/runs" --out "$out" ||
	die "the report generator failed"
cat "$out/summary.txt"
say "report: ${out#"$ROOT"/}/index.html (and report.md, summary.json)"
