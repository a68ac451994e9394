set terminal pngcairo size 900,560
set output 'docs/results/lee2010/lee2010-ratio.png'
set key outside right
set grid
set xlabel 'job constraint ratio'
set ylabel 'average wait time (min)'
set title 'lee2010 slide 23: wait time against constraint ratio (load 1.5)'
plot 'docs/results/lee2010/lee2010-ratio.dat' using 1:2 with linespoints title 'Vanilla', 'docs/results/lee2010/lee2010-ratio.dat' using 1:3 with linespoints title 'L', 'docs/results/lee2010/lee2010-ratio.dat' using 1:4 with linespoints title 'LI-PUSH', 'docs/results/lee2010/lee2010-ratio.dat' using 1:5 with linespoints title 'LI-PULL', 'docs/results/lee2010/lee2010-ratio.dat' using 1:6 with linespoints title 'LIQ-PUSH', 'docs/results/lee2010/lee2010-ratio.dat' using 1:7 with linespoints title 'LIQ-PULL', 'docs/results/lee2010/lee2010-ratio.dat' using 1:8 with linespoints title 'CENT'
