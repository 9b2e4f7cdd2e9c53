# SPDX-License-Identifier: GPL-2.0-only
reset
set multiplot layout 1,2 margins screen 0.08, 0.98, 0.24, 0.9 spacing screen 0.09 title 'sweep/s220-i1: what each mode costs whom (mean and 95% interval over the runs)'
set grid lc rgb '#dddddd'
set ylabel 'cache hit rate (%)'
set offsets graph 0.08, graph 0.2, graph 0.08, graph 0.05
set key at screen 0.53, screen 0.02 center bottom horizontal
set xlabel 'stress-ng work (bogo ops per run)'
set format x '%g'
plot '/work/exp/build/report/plot-data/tradeoff-sweep-s220-i1.dat' every ::0::0 using 5:2:6:7:3:4 with xyerrorbars pt 7 ps 1.3 lc rgb '#D55E00' title 'pinned', '/work/exp/build/report/plot-data/tradeoff-sweep-s220-i1.dat' every ::1::1 using 5:2:6:7:3:4 with xyerrorbars pt 7 ps 1.3 lc rgb '#0072B2' title 'volatile', '/work/exp/build/report/plot-data/tradeoff-sweep-s220-i1.dat' using 5:2:1 with labels offset char 0.8,0.8 left font ',9' notitle
set xlabel 'p99 latency of the cache (ms, log scale)'
set logscale x
unset key
plot '/work/exp/build/report/plot-data/tradeoff-sweep-s220-i1.dat' every ::0::0 using 8:2:9:10:3:4 with xyerrorbars pt 7 ps 1.3 lc rgb '#D55E00' notitle, '/work/exp/build/report/plot-data/tradeoff-sweep-s220-i1.dat' every ::1::1 using 8:2:9:10:3:4 with xyerrorbars pt 7 ps 1.3 lc rgb '#0072B2' notitle, '/work/exp/build/report/plot-data/tradeoff-sweep-s220-i1.dat' using 8:2:1 with labels offset char 0.8,0.8 left font ',9' notitle
unset multiplot
