#!/bin/sh
# Simulated recovery after w1's quota drops to a quarter (docs/results/migration.md).
# Usage: docs/results/migration/run.sh [BUILD_DIR]   (from the repository root)
set -eu
B=${1:-build}
D=docs/results/migration
"$B/bin/treefarm" predict "$D/after.toml" --json > "$D/after-predict.json"
OPT=$(/usr/bin/python3 -c "import json;print(json.load(open('$D/after-predict.json'))['fair_throughput'])")
echo "LP optimum after the event: $OPT tasks/s"
for m in off pull push; do
  "$B/bin/treefarm" simulate examples/migration-quota.toml --migration $m --out "$D/sim-$m" --quiet
  /usr/bin/python3 "$D/recovery.py" "$D/sim-$m/results.json" --event 60 --optimum "$OPT" --window 10
done
