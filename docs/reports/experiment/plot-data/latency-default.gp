# SPDX-License-Identifier: GPL-2.0-only
set terminal svg size 1000,420 dynamic noenhanced font 'sans,11' background '#ffffff'
set output '/work/exp/build/report/latency-default.svg'
load '/work/exp/build/report/plot-data/latency-default.body.gp'
unset output
set terminal pngcairo size 1000,420 noenhanced font 'sans,10' background '#ffffff'
set output '/work/exp/build/report/latency-default.png'
load '/work/exp/build/report/plot-data/latency-default.body.gp'
unset output
