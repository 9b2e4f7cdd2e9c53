# SPDX-License-Identifier: GPL-2.0-only
set terminal svg size 900,420 dynamic noenhanced font 'sans,11' background '#ffffff'
set output '/work/exp/build/report/sweep-sweep.svg'
load '/work/exp/build/report/plot-data/sweep-sweep.body.gp'
unset output
set terminal pngcairo size 900,420 noenhanced font 'sans,10' background '#ffffff'
set output '/work/exp/build/report/sweep-sweep.png'
load '/work/exp/build/report/plot-data/sweep-sweep.body.gp'
unset output
