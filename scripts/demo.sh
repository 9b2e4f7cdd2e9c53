#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# demo.sh - the pressure experiment of one scenario: every mode, N runs
# each, one QEMU guest per run and mode, then the report.
#
# usage: scripts/demo.sh [--scenario FILE] [--runs N] [--out DIR] [--resume]
#                        [--kernel PATH] [--image PATH] [--report-only] [--plan]
#   --scenario FILE  the scenario (default scripts/scenarios/default.conf)
#   --runs N         runs per mode (default: the scenario's RUNS, else 3)
#   --out DIR        where the report goes (default build/report); the
#                    guests' run folders are kept in DIR/runs/
#   --resume         keep the guests of DIR/runs/ that finished, run the rest
#   --kernel PATH    kernel (default build/bzImage)
#   --image PATH     guest image (default build/rootfs.img)
#   --report-only    do not boot anything: rebuild the report from DIR/runs/
#   --plan           print the guests it would boot and their estimated
#                    time, boot nothing
#
# Modes come from scripts/scenarios/modes.tab and are interleaved (run 1:
# every mode, run 2: ...) so that drift of the host over time hits every
# mode alike.  A guest that fails or hangs is reported and left out; the
# others still make the report.  A mode whose daemon mode the daemon lacks
# is reported unavailable after its first guest and not booted again; a
# scenario the guest kernel cannot run (container without a memory cgroup)
# is reported skipped after its first guest.  A sweep scenario
# (SWEEP_STRESS_MB and SWEEP_IDLE_S) runs one cell per pair, each in
# DIR/runs/CELL/.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '6,18p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 64; }

scenario=$ROOT/scripts/scenarios/default.conf
runs="" out=$BUILD/report kernel=$BUILD/bzImage image=$BUILD/rootfs.img
report_only=0 resume=0 plan=0
while [ $# -gt 0 ]; do
	case $1 in
	--scenario) scenario=$2; shift ;;
	--runs) runs=$2; shift ;;
	--out) out=$2; shift ;;
	--kernel) kernel=$2; shift ;;
	--image) image=$2; shift ;;
	--report-only) report_only=1 ;;
	--resume) resume=1 ;;
	--plan) plan=1 ;;
	-h | --help) usage ;;
	*) echo "demo.sh: unknown option '$1'" >&2; usage ;;
	esac
	shift
done
[ -f "$scenario" ] || die "no scenario file $scenario"
MODES_TAB=$ROOT/scripts/scenarios/modes.tab
# shellcheck disable=SC1090
. "$scenario"
runs=${runs:-${RUNS:-3}}
case $runs in '' | *[!0-9]* | 0) die "--runs wants a positive number, not '$runs'" ;; esac
for m in $MODES; do
	awk -v m="$m" '$1 == m && !/^#/ {f = 1} END {exit !f}' "$MODES_TAB" ||
		die "scenario $NAME: mode '$m' is not in ${MODES_TAB#"$ROOT"/}"
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
R=$out/runs

# The cells: one for a plain scenario; stress x idle for a sweep, where the
# modes of SWEEP_IDLE_MODES run in every cell and the other modes (whose
# behaviour the idle time does not change) only at the first idle time.
cells=() cell_modes=()
if [ -n "${SWEEP_STRESS_MB:-}" ]; then
	first_idle=${SWEEP_IDLE_S%% *}
	for mb in $SWEEP_STRESS_MB; do
		for idle in $SWEEP_IDLE_S; do
			ms=""
			for m in $MODES; do
				if [ "$idle" = "$first_idle" ] || [[ " ${SWEEP_IDLE_MODES:-} " == *" $m "* ]]; then
					ms+="$m "
				fi
			done
			cells+=("s$mb-i$idle")
			cell_modes+=("${ms% }")
		done
	done
else
	cells=(.)
	cell_modes=("$MODES")
fi

# guest_seconds: the estimated wall time of one guest of this scenario
# under TCG on an idle 2-core host: boot, the fill (about 5,000 sets/s),
# the phases, a few seconds of wind-down per stressor step.
guest_seconds() {
	local steps=${PRESSURE_STEPS:-$STRESS_MB:$PRESSURE_S} st total=0
	for st in $steps; do total=$((total + ${st#*:} + 3)); done
	echo $((10 + KEYS / 5000 + WARMUP_S + STEADY_S + total + RECOVERY_S))
}
n=0
for i in "${!cells[@]}"; do n=$((n + $(wc -w <<<"${cell_modes[$i]}") * runs)); done
per=$(guest_seconds)
if [ "$plan" = 1 ]; then
	echo "scenario $NAME: ${#cells[@]} cell(s), $runs run(s), $n guests of about $per s: about $((n * per / 60)) min"
	for i in "${!cells[@]}"; do
		echo "  cell ${cells[$i]}: ${cell_modes[$i]}"
	done
	exit 0
fi

# host_load: the host's 1-minute load and its CPU busy and total jiffies,
# for the record of each guest.
host_load() {
	local l
	read -r l _ </proc/loadavg
	awk -v l="$l" '$1 == "cpu" {printf "%s %d %d\n", l, $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8}' /proc/stat
}

# run_guest CELLDIR MODE RUN: boot one guest, follow its progress lines.
run_guest() {
	local cdir=$1 mode=$2 run=$3 dir qpid rc seen lines job budget l0 l1
	dir=$cdir/$mode-$run
	rm -rf "$dir"
	mkdir -p "$dir"
	printf 'MODE=%s\nRUN=%s\n' "$mode" "$run" >"$dir/mode.env"
	# The watchdog: the phases, the fill, boot; three times that, because
	# a busy host can slow a TCG guest down that much.
	budget=$((3 * (per + 30) + 120))
	rc=0
	l0=$(host_load)
	"$ROOT/scripts/qemu-run.sh" --quiet --kernel "$kernel" --image "$image" \
		--mem "$MEM_MB" --cpus "$CPUS" --timeout "$budget" --swap "${SWAP_MB:-0}" \
		--script "$ROOT/image/guest/experiment.sh" \
		--file "$cdir/scenario.conf" --file "$MODES_TAB" --file "$dir/mode.env" \
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
	l1=$(host_load)
	{
		# shellcheck disable=SC2086 # two lines of three numbers
		set -- $l0 $l1
		echo "host_load1_start=$1"
		echo "host_load1_end=$4"
		echo "host_cpu_busy_pct=$(awk -v b="$(($5 - $2))" -v t="$(($6 - $3))" 'BEGIN {printf "%.0f", (t > 0 ? 100 * b / t : 0)}')"
	} >"$dir/host-load.env"
	job=$(cat "$dir/guest/out/exit-status" 2>/dev/null || echo none)
	if [ -f "$dir/guest/out/unavailable" ]; then
		cp "$dir/guest/out/unavailable" "$cdir/unavailable-$mode"
		say "  mode $mode is unavailable: $(cat "$dir/guest/out/unavailable")"
	elif [ -f "$dir/guest/out/skipped" ]; then
		cp "$dir/guest/out/skipped" "$cdir/skipped"
		say "  scenario skipped: $(cat "$dir/guest/out/skipped")"
	elif [ "$rc" -ne 0 ] && [ "$job" = 0 ]; then
		# The job ran; the runner flags the kernel's log.  OOM reports
		# carry a call trace: the report tells them apart from real
		# warnings.
		say "  the kernel logged $(grep -c . "$dir/guest/warnings.txt" 2>/dev/null || echo 0) warning line(s), $(grep -ac 'invoked oom-killer' "$dir/guest/console.log" || true) OOM report(s)"
	elif [ "$rc" -ne 0 ]; then
		failed=$((failed + 1))
		say "  guest failed (status $rc): $(tail -n 3 "$dir/runner.log" | tr '\n' ' ')"
	fi
	[ "$job" != none ] || return 0
	echo finished >"$dir/done"
}

if [ "$resume" = 1 ] && [ -f "$R/complete" ]; then
	say "scenario $NAME: every guest ran in an earlier run (${R#"$ROOT"/}/complete); the report only"
	report_only=1
fi
if [ "$report_only" = 0 ]; then
	[ -f "$kernel" ] || die "no kernel at $kernel (run: make kernel)"
	[ -f "$image" ] || die "no image at $image (run: make image)"
	command -v gnuplot >/dev/null || die "gnuplot is missing (run: make deps)"
	if [ "$resume" = 1 ] && [ -f "$R/bzImage" ] && [ -f "$R/rootfs.img" ] && [ -f "$R/host.env" ]; then
		say "resuming in ${R#"$ROOT"/}: the guests that finished are kept, with the kernel and image they ran"
		[ "$(sha256sum <"$kernel")" = "$(sha256sum <"$R/bzImage")" ] ||
			say "  note: $kernel changed since; the resumed runs keep the saved kernel"
	else
		rm -rf "$R"
		mkdir -p "$R"
		cp "$scenario" "$R/scenario.conf"
		# Every guest boots the same kernel and image, even if build/ is
		# rebuilt while the experiment runs: they are copied first.
		cp "$kernel" "$R/bzImage"
		[ -f "$kernel.config" ] && cp "$kernel.config" "$R/bzImage.config"
		cp --sparse=always "$image" "$R/rootfs.img"
		{
			echo "kernel_path=${kernel#"$ROOT"/}"
			echo "image_path=${image#"$ROOT"/}"
			echo "kernel_sha256=$(sha256sum "$R/bzImage" | cut -c1-16)"
			if [ -f "$kernel.config" ]; then
				echo "kernel_config_sha256=$(sha256sum "$kernel.config" | cut -c1-16)"
			fi
			echo "series_hash=$(series_hash 2>/dev/null || echo none)"
			echo "series_patches=$(series_patches 2>/dev/null | wc -l)"
			echo "image_sha256=$(sha256sum "$R/rootfs.img" | cut -c1-16)"
			echo "host_cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
			echo "host_cpus=$(nproc)"
			echo "host_kernel=$(uname -r)"
			echo "host_load_start=$(cut -d' ' -f1-3 /proc/loadavg)"
			echo "qemu_version=$(qemu-system-x86_64 --version | head -n 1)"
			echo "accel=$(cat "$BUILD/.accel" 2>/dev/null || echo tcg)"
			echo "commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
			echo "dirty=$(git -C "$ROOT" status --porcelain -- kernel cached loadgen image scripts 2>/dev/null | grep -c . || true)"
			"$ROOT/scripts/report-sources.sh" --env
			echo "runs=$runs"
			echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
		} >"$R/host.env"
	fi
	kernel=$R/bzImage image=$R/rootfs.img
	for i in "${!cells[@]}"; do
		c=$R/${cells[$i]}
		mkdir -p "$c"
		if [ "${cells[$i]}" != . ] && [ ! -f "$c/scenario.conf" ]; then
			mb=${cells[$i]#s} mb=${mb%%-*} idle=${cells[$i]##*-i}
			{
				cat "$scenario"
				echo
				echo "# cell of the sweep"
				echo "NAME=$NAME/${cells[$i]}"
				echo "SWEEP_OF=$NAME"
				echo "STRESS_MB=$mb"
				echo "PRESSURE_STEPS=$mb:$PRESSURE_S"
				echo "IDLE_S=$idle"
				echo "MODES=\"${cell_modes[$i]}\""
			} >"$c/scenario.conf"
			cp "$R/host.env" "$c/host.env"
		fi
	done

	say "scenario $NAME: $DESCRIPTION"
	say "$runs run(s) x modes ($MODES)$([ "${#cells[@]}" -gt 1 ] && echo " x ${#cells[@]} cells"): $n guests of ${MEM_MB} MiB, about $per s each, about $((n * per / 60)) min"
	g=0 failed=0 kept=0
	for run in $(seq 1 "$runs"); do
		for i in "${!cells[@]}"; do
			c=$R/${cells[$i]}
			for mode in ${cell_modes[$i]}; do
				g=$((g + 1))
				if [ -f "$c/skipped" ]; then
					continue
				fi
				if [ -f "$c/unavailable-$mode" ]; then
					continue
				fi
				if [ -f "$c/$mode-$run/done" ]; then
					kept=$((kept + 1))
					continue
				fi
				say "guest $g/$n: run $run, $([ "${cells[$i]}" = . ] || echo "cell ${cells[$i]}, ")mode $mode"
				run_guest "$c" "$mode" "$run"
			done
		done
	done
	[ "$kept" -eq 0 ] || say "$kept guest(s) kept from the earlier, interrupted run"
	[ "$failed" -eq 0 ] || say "$failed guest(s) failed; they are left out of the report"
	echo complete >"$R/complete"
	rm -f "$R/rootfs.img"
fi

say "writing the report"
# Debian's python3 (stdlib only), whatever else is first on PATH.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
"$PY" "$ROOT/scripts/report.py" --runs-dir "$R" --out "$out" ||
	die "the report generator failed"
cat "$out/summary.txt"
say "report: ${out#"$ROOT"/}/index.html (and report.md, summary.json)"
