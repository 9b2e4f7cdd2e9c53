# SPDX-License-Identifier: GPL-2.0-only
reset
set title 'sweep: hit rate against the pressure (mean and 95% interval)'
set grid lc rgb '#dddddd'
set xlabel 'stress-ng memory (MiB)'
set ylabel 'cache hit rate (%)'
set key outside right
set offsets graph 0.05, graph 0.05, 0, 0
plot '/work/exp/build/report/plot-data/sweep-sweep-0.dat' using 1:2:3:4 with yerrorlines lw 1.6 dt 1 pt 7 lc rgb '#D55E00' title 'pinned', '/work/exp/build/report/plot-data/sweep-sweep-1.dat' using 1:2:3:4 with yerrorlines lw 1.6 dt 2 pt 7 lc rgb '#0072B2' title 'volatile, idle 1 s', '/work/exp/build/report/plot-data/sweep-sweep-2.dat' using 1:2:3:4 with yerrorlines lw 1.6 dt 3 pt 7 lc rgb '#0072B2' title 'volatile, idle 3 s', '/work/exp/build/report/plot-data/sweep-sweep-3.dat' using 1:2:3:4 with yerrorlines lw 1.6 dt 4 pt 7 lc rgb '#0072B2' title 'volatile, idle 8 s'
