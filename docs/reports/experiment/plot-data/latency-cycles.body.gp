# SPDX-License-Identifier: GPL-2.0-only
reset
set multiplot layout 1,2 title 'cycles: latency from the intended send time, all runs merged'
set grid lc rgb '#dddddd'
set logscale x
set xlabel 'latency (ms, log scale)'
set ylabel 'fraction of requests at most x'
set yrange [0:1]
set key inside right bottom
plot '/work/exp/build/report/plot-data/latency-cycles-pinned.dat' using 1:2 with lines lw 2 lc rgb '#D55E00' title 'pinned', '/work/exp/build/report/plot-data/latency-cycles-psi.dat' using 1:2 with lines lw 2 lc rgb '#E69F00' title 'psi', '/work/exp/build/report/plot-data/latency-cycles-volatile.dat' using 1:2 with lines lw 2 lc rgb '#0072B2' title 'volatile', '/work/exp/build/report/plot-data/latency-cycles-madvfree.dat' using 1:2 with lines lw 2 lc rgb '#CC79A7' title 'madvfree'
set ylabel 'fraction of requests slower than x (log)'
set logscale y
set yrange [1e-6:1]
set format y '%g'
unset key
plot '/work/exp/build/report/plot-data/latency-cycles-pinned.dat' using 1:3 with lines lw 2 lc rgb '#D55E00' notitle, '/work/exp/build/report/plot-data/latency-cycles-psi.dat' using 1:3 with lines lw 2 lc rgb '#E69F00' notitle, '/work/exp/build/report/plot-data/latency-cycles-volatile.dat' using 1:3 with lines lw 2 lc rgb '#0072B2' notitle, '/work/exp/build/report/plot-data/latency-cycles-madvfree.dat' using 1:3 with lines lw 2 lc rgb '#CC79A7' notitle
unset multiplot
