# SPDX-License-Identifier: GPL-2.0-only
reset
set multiplot layout 8,1 margins screen 0.11, 0.97, 0.075, 0.965 spacing screen 0, 0.006 title 'default: the modes on one time axis (mean of the runs; grey: a stressor runs)'
set xrange [-26:63]
set grid lc rgb '#dddddd'
set key off
set format x ''
set ytics font ',9'
set ylabel font ',10'
set object rect from 10.0, graph 0 to 37.0, graph 1 fc rgb '#e6e6e6' fs solid noborder behind
set ylabel 'MemAvailable (MiB)'
unset logscale y
plot '/work/exp/build/report/plot-data/timeline-default-0-pinned.dat' using 1:2 with lines lw 1.6 lc rgb '#D55E00' title 'pinned', '/work/exp/build/report/plot-data/timeline-default-0-psi.dat' using 1:2 with lines lw 1.6 lc rgb '#E69F00' title 'psi', '/work/exp/build/report/plot-data/timeline-default-0-volatile.dat' using 1:2 with lines lw 1.6 lc rgb '#0072B2' title 'volatile', '/work/exp/build/report/plot-data/timeline-default-0-madvfree.dat' using 1:2 with lines lw 1.6 lc rgb '#CC79A7' title 'madvfree', '/work/exp/build/report/plot-data/timeline-default-0-nopressure.dat' using 1:2 with lines lw 1.6 lc rgb '#009E73' title 'nopressure', '/work/exp/build/report/plot-data/timeline-default-0-rightsized.dat' using 1:2 with lines lw 1.6 lc rgb '#56B4E9' title 'rightsized'
set ylabel 'Volatile (MiB)'
unset logscale y
plot '/work/exp/build/report/plot-data/timeline-default-1-pinned.dat' using 1:2 with lines lw 1.6 lc rgb '#D55E00' title 'pinned', '/work/exp/build/report/plot-data/timeline-default-1-psi.dat' using 1:2 with lines lw 1.6 lc rgb '#E69F00' title 'psi', '/work/exp/build/report/plot-data/timeline-default-1-volatile.dat' using 1:2 with lines lw 1.6 lc rgb '#0072B2' title 'volatile', '/work/exp/build/report/plot-data/timeline-default-1-madvfree.dat' using 1:2 with lines lw 1.6 lc rgb '#CC79A7' title 'madvfree', '/work/exp/build/report/plot-data/timeline-default-1-nopressure.dat' using 1:2 with lines lw 1.6 lc rgb '#009E73' title 'nopressure', '/work/exp/build/report/plot-data/timeline-default-1-rightsized.dat' using 1:2 with lines lw 1.6 lc rgb '#56B4E9' title 'rightsized'
set ylabel 'purged since start (MiB)'
unset logscale y
plot '/work/exp/build/report/plot-data/timeline-default-2-pinned.dat' using 1:2 with lines lw 1.6 lc rgb '#D55E00' title 'pinned', '/work/exp/build/report/plot-data/timeline-default-2-psi.dat' using 1:2 with lines lw 1.6 lc rgb '#E69F00' title 'psi', '/work/exp/build/report/plot-data/timeline-default-2-volatile.dat' using 1:2 with lines lw 1.6 lc rgb '#0072B2' title 'volatile', '/work/exp/build/report/plot-data/timeline-default-2-madvfree.dat' using 1:2 with lines lw 1.6 lc rgb '#CC79A7' title 'madvfree', '/work/exp/build/report/plot-data/timeline-default-2-nopressure.dat' using 1:2 with lines lw 1.6 lc rgb '#009E73' title 'nopressure', '/work/exp/build/report/plot-data/timeline-default-2-rightsized.dat' using 1:2 with lines lw 1.6 lc rgb '#56B4E9' title 'rightsized'
set ylabel 'hit rate (%)'
unset logscale y
plot '/work/exp/build/report/plot-data/timeline-default-3-pinned.dat' using 1:2 with lines lw 1.6 lc rgb '#D55E00' title 'pinned', '/work/exp/build/report/plot-data/timeline-default-3-psi.dat' using 1:2 with lines lw 1.6 lc rgb '#E69F00' title 'psi', '/work/exp/build/report/plot-data/timeline-default-3-volatile.dat' using 1:2 with lines lw 1.6 lc rgb '#0072B2' title 'volatile', '/work/exp/build/report/plot-data/timeline-default-3-madvfree.dat' using 1:2 with lines lw 1.6 lc rgb '#CC79A7' title 'madvfree', '/work/exp/build/report/plot-data/timeline-default-3-nopressure.dat' using 1:2 with lines lw 1.6 lc rgb '#009E73' title 'nopressure', '/work/exp/build/report/plot-data/timeline-default-3-rightsized.dat' using 1:2 with lines lw 1.6 lc rgb '#56B4E9' title 'rightsized'
set ylabel 'p99 latency (ms)'
set logscale y
plot '/work/exp/build/report/plot-data/timeline-default-4-pinned.dat' using 1:2 with lines lw 1.6 lc rgb '#D55E00' title 'pinned', '/work/exp/build/report/plot-data/timeline-default-4-psi.dat' using 1:2 with lines lw 1.6 lc rgb '#E69F00' title 'psi', '/work/exp/build/report/plot-data/timeline-default-4-volatile.dat' using 1:2 with lines lw 1.6 lc rgb '#0072B2' title 'volatile', '/work/exp/build/report/plot-data/timeline-default-4-madvfree.dat' using 1:2 with lines lw 1.6 lc rgb '#CC79A7' title 'madvfree', '/work/exp/build/report/plot-data/timeline-default-4-nopressure.dat' using 1:2 with lines lw 1.6 lc rgb '#009E73' title 'nopressure', '/work/exp/build/report/plot-data/timeline-default-4-rightsized.dat' using 1:2 with lines lw 1.6 lc rgb '#56B4E9' title 'rightsized'
set ylabel 'PSI some (ms stalled per s)'
unset logscale y
plot '/work/exp/build/report/plot-data/timeline-default-5-pinned.dat' using 1:2 with lines lw 1.6 lc rgb '#D55E00' title 'pinned', '/work/exp/build/report/plot-data/timeline-default-5-psi.dat' using 1:2 with lines lw 1.6 lc rgb '#E69F00' title 'psi', '/work/exp/build/report/plot-data/timeline-default-5-volatile.dat' using 1:2 with lines lw 1.6 lc rgb '#0072B2' title 'volatile', '/work/exp/build/report/plot-data/timeline-default-5-madvfree.dat' using 1:2 with lines lw 1.6 lc rgb '#CC79A7' title 'madvfree', '/work/exp/build/report/plot-data/timeline-default-5-nopressure.dat' using 1:2 with lines lw 1.6 lc rgb '#009E73' title 'nopressure', '/work/exp/build/report/plot-data/timeline-default-5-rightsized.dat' using 1:2 with lines lw 1.6 lc rgb '#56B4E9' title 'rightsized'
set ylabel 'OOM kills since start'
unset logscale y
plot '/work/exp/build/report/plot-data/timeline-default-6-pinned.dat' using 1:2 with lines lw 1.6 lc rgb '#D55E00' title 'pinned', '/work/exp/build/report/plot-data/timeline-default-6-psi.dat' using 1:2 with lines lw 1.6 lc rgb '#E69F00' title 'psi', '/work/exp/build/report/plot-data/timeline-default-6-volatile.dat' using 1:2 with lines lw 1.6 lc rgb '#0072B2' title 'volatile', '/work/exp/build/report/plot-data/timeline-default-6-madvfree.dat' using 1:2 with lines lw 1.6 lc rgb '#CC79A7' title 'madvfree', '/work/exp/build/report/plot-data/timeline-default-6-nopressure.dat' using 1:2 with lines lw 1.6 lc rgb '#009E73' title 'nopressure', '/work/exp/build/report/plot-data/timeline-default-6-rightsized.dat' using 1:2 with lines lw 1.6 lc rgb '#56B4E9' title 'rightsized'
set ylabel 'stress-ng resident (MiB)'
unset logscale y
set format x '%g'
set xlabel 'seconds since the measured load started (warm-up negative)'
set key at screen 0.54, screen 0.012 center bottom horizontal
plot '/work/exp/build/report/plot-data/timeline-default-7-pinned.dat' using 1:2 with lines lw 1.6 lc rgb '#D55E00' title 'pinned', '/work/exp/build/report/plot-data/timeline-default-7-psi.dat' using 1:2 with lines lw 1.6 lc rgb '#E69F00' title 'psi', '/work/exp/build/report/plot-data/timeline-default-7-volatile.dat' using 1:2 with lines lw 1.6 lc rgb '#0072B2' title 'volatile', '/work/exp/build/report/plot-data/timeline-default-7-madvfree.dat' using 1:2 with lines lw 1.6 lc rgb '#CC79A7' title 'madvfree', '/work/exp/build/report/plot-data/timeline-default-7-nopressure.dat' using 1:2 with lines lw 1.6 lc rgb '#009E73' title 'nopressure', '/work/exp/build/report/plot-data/timeline-default-7-rightsized.dat' using 1:2 with lines lw 1.6 lc rgb '#56B4E9' title 'rightsized'
unset multiplot
