#!/bin/sh
# Simulated recovery after w1's quota drops to a quarter (docs/results/migration.md).
# Usage: docs/results/migration/run.sh [BUILD_DIR]   (from the repository root)
# MODES (default "off pull push"): each MIGRATION or MIGRATION:BALANCE, e.g. "pull:mll".
set -eu
B=${1:-build}
D=docs/results/migration
"$B/bin/treefarm" predict "$D/after.toml" --json > "$D/after-predict.json"
OPT=$(/usr/bin/python3 -c "import json;print(json.load(open('$D/after-predict.json'))['fair_throughput'])")
echo "LP optimum after the event: $OPT tasks/s"
for mode in ${MODES:-off pull push}; do
  m=${mode%%:*}
  b=off
  case $mode in *:*) b=${mode#*:} ;; esac
  n=$m; [ "$b" = off ] || n=$m-$b
  "$B/bin/treefarm" simulate examples/migration-quota.toml --migration $m --balance $b --out "$D/sim-$n" --quiet
  echo "== $mode"
  /usr/bin/python3 "$D/recovery.py" "$D/sim-$n/results.json" --event 60 --optimum "$OPT" --window 10
done
