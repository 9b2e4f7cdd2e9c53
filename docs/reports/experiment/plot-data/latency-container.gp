set terminal svg size 1000,420 dynamic noenhanced font 'sans,11' background '#ffffff'
set output 'build/report/latency-container.svg'
load 'build/report/plot-data/latency-container.body.gp'
unset output
set terminal pngcairo size 1000,420 noenhanced font 'sans,10' background '#ffffff'
set output 'build/report/latency-container.png'
load 'build/report/plot-data/latency-container.body.gp'
unset output
