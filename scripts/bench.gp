# Draws results/bench-latest.png from results/bench-latest.dat (written by scripts/bench-run).
set terminal pngcairo size 1100,600 noenhanced
set output 'results/bench-latest.png'
set title 'rdmablk (A) vs NBD over TCP (B) vs local nbdkit (C): throughput in MiB/s, log scale'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set ylabel 'MiB/s'
set xtics rotate by -20
set key top left
plot 'results/bench-latest.dat' using 2:xtic(1) title 'A rdmablk', \
     '' using 3 title 'B nbd over TCP', \
     '' using 4 title 'C local nbdkit file'
