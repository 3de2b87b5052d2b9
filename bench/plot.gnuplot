# The latency plot of bench/README.md ("Leasekeeper against Redis and
# etcd"): p50 and p99 of each workload's latency for each system, in ms on a
# log scale. bench/run-anchors runs it as
#   gnuplot -e "datafile='bench/anchors/results/latency.dat'; outfile='bench/anchors/latency.png'" bench/plot.gnuplot
# latency.dat (written by bench/anchors/report.py): a header row, then one
# row per workload; column 1 the workload, then p50 and p99 of each system.

if (!exists("datafile")) datafile = 'bench/anchors/results/latency.dat'
if (!exists("outfile")) outfile = 'bench/anchors/latency.png'

set terminal pngcairo size 1400,640 font "sans,10" noenhanced
set output outfile
set datafile missing "?"
stats datafile using 2 nooutput
series = (STATS_columns - 1) / 2

set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y 10
set format y "%g"
set ylabel "ms (log scale)"
set grid ytics
set key outside bottom center horizontal
set xtics scale 0
set yrange [0.01:*]

set multiplot layout 1,2 title "leasekeeper, Redis and etcd locks on one machine: latency (median of runs)"
set title "p50"
plot for [i=1:series] datafile using (column(2*i)):xtic(1) title columnhead(2*i)
set title "p99"
plot for [i=1:series] datafile using (column(2*i+1)):xtic(1) title columnhead(2*i+1)
unset multiplot
