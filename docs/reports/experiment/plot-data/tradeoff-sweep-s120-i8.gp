# SPDX-License-Identifier: GPL-2.0-only
set terminal svg size 1000,460 dynamic noenhanced font 'sans,11' background '#ffffff'
set output '/work/exp/build/report/tradeoff-sweep-s120-i8.svg'
load '/work/exp/build/report/plot-data/tradeoff-sweep-s120-i8.body.gp'
unset output
set terminal pngcairo size 1000,460 noenhanced font 'sans,10' background '#ffffff'
set output '/work/exp/build/report/tradeoff-sweep-s120-i8.png'
load '/work/exp/build/report/plot-data/tradeoff-sweep-s120-i8.body.gp'
unset output
