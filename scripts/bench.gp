# Draws results/bench-latest.png from results/bench-latest.dat (written by scripts/bench-report):
# one line per row, MiB/s of A B C AD BD NR NT (NaN where a setup did not run).
set terminal pngcairo size 1300,650 noenhanced
set output 'results/bench-latest.png'
set title 'rdmablk (A, AD) vs NBD over TCP (B, BD), local nbdkit (C), kernel NVMe-oF RDMA (NR) and TCP (NT): MiB/s, log scale'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set datafile missing 'NaN'
set logscale y
set ylabel 'MiB/s'
set xtics rotate by -20
set key top left
plot 'results/bench-latest.dat' using 2:xtic(1) title 'A rdmablk (fio nbd)', \
     '' using 5 title 'AD rdmablk (nbd.ko)', \
     '' using 3 title 'B nbd over TCP (fio nbd)', \
     '' using 6 title 'BD nbd over TCP (nbd.ko)', \
     '' using 7 title 'NR kernel NVMe-oF RDMA', \
     '' using 8 title 'NT kernel NVMe/TCP', \
     '' using 4 title 'C local nbdkit file'
