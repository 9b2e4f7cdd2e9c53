# SPDX-License-Identifier: GPL-2.0-only
reset
set multiplot layout 8,1 margins screen 0.11, 0.97, 0.075, 0.965 spacing screen 0, 0.006 title 'cycles: the modes on one time axis (mean of the runs; grey: a stressor runs)'
set xrange [-23:76]
set grid lc rgb '#dddddd'
set key off
set format x ''
set ytics font ',9'
set ylabel font ',10'
set object rect from 8.0, graph 0 to 28.9, graph 1 fc rgb '#e6e6e6' fs solid noborder behind
set object rect from 35.0, graph 0 to 42.0, graph 1 fc rgb '#e6e6e6' fs solid noborder behind
set object rect from 48.1, graph 0 to 55.3, graph 1 fc rgb '#e6e6e6' fs solid noborder behind
set ylabel 'MemAvailable (MiB)'
unset logscale y
plot '/work/exp/build/report/plot-data/timeline-cycles-0-pinned.dat' using 1:2 with lines lw 1.6 lc rgb '#D55E00' title 'pinned', '/work/exp/build/report/plot-data/timeline-cycles-0-psi.dat' using 1:2 with lines lw 1.6 lc rgb '#E69F00' title 'psi', '/work/exp/build/report/plot-data/timeline-cycles-0-volatile.dat' using 1:2 with lines lw 1.6 lc rgb '#0072B2' title 'volatile', '/work/exp/build/report/plot-data/timeline-cycles-0-madvfree.dat' using 1:2 with lines lw 1.6 lc rgb '#CC79A7' title 'madvfree'
set ylabel 'Volatile (MiB)'
unset logscale y
plot '/work/exp/build/report/plot-data/timeline-cycles-1-pinned.dat' using 1:2 with lines lw 1.6 lc rgb '#D55E00' title 'pinned', '/work/exp/build/report/plot-data/timeline-cycles-1-psi.dat' using 1:2 with lines lw 1.6 lc rgb '#E69F00' title 'psi', '/work/exp/build/report/plot-data/timeline-cycles-1-volatile.dat' using 1:2 with lines lw 1.6 lc rgb '#0072B2' title 'volatile', '/work/exp/build/report/plot-data/timeline-cycles-1-madvfree.dat' using 1:2 with lines lw 1.6 lc rgb '#CC79A7' title 'madvfree'
set ylabel 'purged since start (MiB)'
unset logscale y
plot '/work/exp/build/report/plot-data/timeline-cycles-2-pinned.dat' using 1:2 with lines lw 1.6 lc rgb '#D55E00' title 'pinned', '/work/exp/build/report/plot-data/timeline-cycles-2-psi.dat' using 1:2 with lines lw 1.6 lc rgb '#E69F00' title 'psi', '/work/exp/build/report/plot-data/timeline-cycles-2-volatile.dat' using 1:2 with lines lw 1.6 lc rgb '#0072B2' title 'volatile', '/work/exp/build/report/plot-data/timeline-cycles-2-madvfree.dat' using 1:2 with lines lw 1.6 lc rgb '#CC79A7' title 'madvfree'
set ylabel 'hit rate (%)'
unset logscale y
plot '/work/exp/build/report/plot-data/timeline-cycles-3-pinned.dat' using 1:2 with lines lw 1.6 lc rgb '#D55E00' title 'pinned', '/work/exp/build/report/plot-data/timeline-cycles-3-psi.dat' using 1:2 with lines lw 1.6 lc rgb '#E69F00' title 'psi', '/work/exp/build/report/plot-data/timeline-cycles-3-volatile.dat' using 1:2 with lines lw 1.6 lc rgb '#0072B2' title 'volatile', '/work/exp/build/report/plot-data/timeline-cycles-3-madvfree.dat' using 1:2 with lines lw 1.6 lc rgb '#CC79A7' title 'madvfree'
set ylabel 'p99 latency (ms)'
set logscale y
plot '/work/exp/build/report/plot-data/timeline-cycles-4-pinned.dat' using 1:2 with lines lw 1.6 lc rgb '#D55E00' title 'pinned', '/work/exp/build/report/plot-data/timeline-cycles-4-psi.dat' using 1:2 with lines lw 1.6 lc rgb '#E69F00' title 'psi', '/work/exp/build/report/plot-data/timeline-cycles-4-volatile.dat' using 1:2 with lines lw 1.6 lc rgb '#0072B2' title 'volatile', '/work/exp/build/report/plot-data/timeline-cycles-4-madvfree.dat' using 1:2 with lines lw 1.6 lc rgb '#CC79A7' title 'madvfree'
set ylabel 'PSI some (ms stalled per s)'
unset logscale y
plot '/work/exp/build/report/plot-data/timeline-cycles-5-pinned.dat' using 1:2 with lines lw 1.6 lc rgb '#D55E00' title 'pinned', '/work/exp/build/report/plot-data/timeline-cycles-5-psi.dat' using 1:2 with lines lw 1.6 lc rgb '#E69F00' title 'psi', '/work/exp/build/report/plot-data/timeline-cycles-5-volatile.dat' using 1:2 with lines lw 1.6 lc rgb '#0072B2' title 'volatile', '/work/exp/build/report/plot-data/timeline-cycles-5-madvfree.dat' using 1:2 with lines lw 1.6 lc rgb '#CC79A7' title 'madvfree'
set ylabel 'OOM kills since start'
unset logscale y
plot '/work/exp/build/report/plot-data/timeline-cycles-6-pinned.dat' using 1:2 with lines lw 1.6 lc rgb '#D55E00' title 'pinned', '/work/exp/build/report/plot-data/timeline-cycles-6-psi.dat' using 1:2 with lines lw 1.6 lc rgb '#E69F00' title 'psi', '/work/exp/build/report/plot-data/timeline-cycles-6-volatile.dat' using 1:2 with lines lw 1.6 lc rgb '#0072B2' title 'volatile', '/work/exp/build/report/plot-data/timeline-cycles-6-madvfree.dat' using 1:2 with lines lw 1.6 lc rgb '#CC79A7' title 'madvfree'
set ylabel 'stress-ng resident (MiB)'
unset logscale y
set format x '%g'
set xlabel 'seconds since the measured load started (warm-up negative)'
set key at screen 0.54, screen 0.012 center bottom horizontal
plot '/work/exp/build/report/plot-data/timeline-cycles-7-pinned.dat' using 1:2 with lines lw 1.6 lc rgb '#D55E00' title 'pinned', '/work/exp/build/report/plot-data/timeline-cycles-7-psi.dat' using 1:2 with lines lw 1.6 lc rgb '#E69F00' title 'psi', '/work/exp/build/report/plot-data/timeline-cycles-7-volatile.dat' using 1:2 with lines lw 1.6 lc rgb '#0072B2' title 'volatile', '/work/exp/build/report/plot-data/timeline-cycles-7-madvfree.dat' using 1:2 with lines lw 1.6 lc rgb '#CC79A7' title 'madvfree'
unset multiplot
