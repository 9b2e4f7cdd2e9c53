# SPDX-License-Identifier: GPL-2.0-only
set terminal svg size 900,1440 dynamic noenhanced font 'sans,11' background '#ffffff'
set output '/work/exp/build/report/timeline-cycles.svg'
load '/work/exp/build/report/plot-data/timeline-cycles.body.gp'
unset output
set terminal pngcairo size 900,1440 noenhanced font 'sans,10' background '#ffffff'
set output '/work/exp/build/report/timeline-cycles.png'
load '/work/exp/build/report/plot-data/timeline-cycles.body.gp'
unset output
