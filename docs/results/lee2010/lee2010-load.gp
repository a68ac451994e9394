set terminal pngcairo size 900,560
set output 'docs/results/lee2010/lee2010-load.png'
set key outside right
set grid
set xlabel 'offered load'
set ylabel 'average wait time (min)'
set title 'lee2010 slide 21: wait time against load (ratio 0.5)'
plot 'docs/results/lee2010/lee2010-load.dat' using 1:2 with linespoints title 'Vanilla', 'docs/results/lee2010/lee2010-load.dat' using 1:3 with linespoints title 'L', 'docs/results/lee2010/lee2010-load.dat' using 1:4 with linespoints title 'LI-PUSH', 'docs/results/lee2010/lee2010-load.dat' using 1:5 with linespoints title 'LI-PULL', 'docs/results/lee2010/lee2010-load.dat' using 1:6 with linespoints title 'LIQ-PUSH', 'docs/results/lee2010/lee2010-load.dat' using 1:7 with linespoints title 'LIQ-PULL', 'docs/results/lee2010/lee2010-load.dat' using 1:8 with linespoints title 'CENT'
