# SPDX-License-Identifier: GPL-2.0-only
set terminal svg size 1000,460 dynamic noenhanced font 'sans,11' background '#ffffff'
set output '/work/exp/build/report/tradeoff-default.svg'
load '/work/exp/build/report/plot-data/tradeoff-default.body.gp'
unset output
set terminal pngcairo size 1000,460 noenhanced font 'sans,10' background '#ffffff'
set output '/work/exp/build/report/tradeoff-default.png'
load '/work/exp/build/report/plot-data/tradeoff-default.body.gp'
unset output
