#!/bin/sh
# The price policy re-converging after one node of papers/bertin2008's platform slows down
# to a quarter of its speed 300 s into the run (docs/results/price.md, "A node slows down
# during the run"): SimGrid, set beside the proportional-fair optimum (Ipopt) of the
# platform before and after the change, efficiency per 30 s window; fcfs for reference.
# Usage: docs/results/price/reconverge/run.sh [BUILD_DIR]   (from the repository root)
set -eu
B=${1:-build}
D=docs/results/price/reconverge
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
/usr/bin/python3 "$D/slowdown.py" examples/bertin2008.toml "$D/platforms" --at 300 A B C D
"$B/bin/treefarm" predict examples/bertin2008.toml --objective proportional --json > "$D/platforms/before-predict.json"
for n in A B C D; do
  "$B/bin/treefarm" predict "$D/platforms/after-$n.toml" --objective proportional --json > "$D/platforms/after-$n-predict.json"
  for p in price fcfs; do
    out="$D/sim-$n-$p.json"
    "$B/bin/treefarm" simulate "$D/platforms/slow-$n.toml" --policy $p --out "$T/$n-$p" --quiet > "$T/log" 2>&1
    /usr/bin/python3 "$D/reconverge.py" "$T/$n-$p/results.json" --event 300 --before "$D/platforms/before-predict.json" \
      --after "$D/platforms/after-$n-predict.json" --window 30 --json > "$out"
    /usr/bin/python3 -c "
import json; r = json.load(open('$out'))
f = lambda v: 'never' if v is None else '%.0f s' % v
print('$n slows, $p: efficiency %.3f before, %.3f after; re-converged within 5%%: %s, 3%%: %s' % (
    r['mean_efficiency_before'], r['mean_efficiency_after'], f(r['reconverged_95_s']), f(r['reconverged_97_s'])))"
  done
done
# Plot: efficiency per window, each node's slow-down under price, and C's under fcfs.
for r in A-price B-price C-price D-price C-fcfs; do
  /usr/bin/python3 -c "
import json
for w in json.load(open('$D/sim-$r.json'))['windows']:
    print(w['start_s'] + 15, '' if w['efficiency'] is None else w['efficiency'])" > "$T/$r.dat"
done
gnuplot <<GP
set terminal pngcairo size 1000,500 font ',10'
set output '$D/reconverge.png'
set title 'price on bertin2008, a node slows to a quarter at 300 s: efficiency per 30 s window (geometric mean of rho_k/rho_k*)'
set xlabel 'seconds'; set ylabel 'efficiency'; set yrange [0.5:1.05]; set key bottom right
set arrow from 300, graph 0 to 300, graph 1 nohead dt 2
plot '$T/A-price.dat' w lp t 'A slows (price)', '$T/B-price.dat' w lp t 'B slows', '$T/C-price.dat' w lp t 'C slows', \
     '$T/D-price.dat' w lp t 'D slows', '$T/C-fcfs.dat' w lp t 'C slows (fcfs)', 0.95 dt 3 t '95%'
GP
